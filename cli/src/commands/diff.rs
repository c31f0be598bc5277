//! `diff A B`: what an agent version can do that another could not, and
//! what it no longer can. Each side is a `.agent` file (its picture
//! computed here, with what its pinned tools ask for) or `NAME@VERSION` of
//! an agent in the registry (the `trust` member of its version record, as
//! the registry computed it). The comparison is core's `trust::diff`.

use std::{path::Path, process::ExitCode};

use agentlang_core::{
    Kind,
    trust::{self as core_trust, AgentTrust},
};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{container_file, env::Env, install::PinnedTools, spec, trust};

/// With `exit_code`, the exit status says whether the risk rises (1) or
/// not (0), for a CI step that should stop on an update asking for more.
pub fn run(env: &Env, from: &str, to: &str, exit_code: bool) -> Result<ExitCode> {
    let mut tools = PinnedTools::new(env)?;
    let old = side(env, from, &mut tools)?;
    let new = side(env, to, &mut tools)?;
    let d = core_trust::diff(&old, &new);
    let mut summary = serde_json::to_value(&d).context("serializing the trust diff")?;
    summary["from"] = json!(from);
    summary["to"] = json!(to);
    summary["raises_risk"] = json!(d.raises_risk());
    env.out
        .emit(&summary, || trust::render_diff(&env.out, &d).join("\n"));
    Ok(if exit_code && d.raises_risk() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One side's trust picture: a file when the argument names one (or looks
/// like one), else `NAME@VERSION` in the registry.
fn side(env: &Env, arg: &str, tools: &mut PinnedTools<'_>) -> Result<AgentTrust> {
    let path = Path::new(arg);
    if path.is_dir() {
        bail!("{arg} is a folder; diff compares .agent files or NAME@VERSION from the registry");
    }
    if path.exists() || arg.ends_with(".agent") {
        let c = container_file::read(path)?;
        let pkg = trust::container_package(&c, arg)?;
        let caps = tools.capabilities(pkg.lock.as_ref());
        return Ok(trust::container_trust(&c, &pkg, &caps));
    }
    let (name, version) = spec::parse_exact(arg).with_context(|| {
        format!("{arg:?} is neither a .agent file nor NAME@VERSION of an agent")
    })?;
    let client = env.anonymous()?;
    // diff compares agents; a name that is some other kind's is said so.
    let kind = crate::index::which_kind(&client, &name, None).unwrap_or(Kind::Agent);
    if kind != Kind::Agent {
        bail!("{name} is a {kind}, and diff compares agents (their trust pictures)");
    }
    let record: Value = client
        .send_json(client.get(&format!("/api/v1/agents/{name}/{version}")))
        .with_context(|| format!("looking up agent {name}@{version}"))?;
    match record.get("trust") {
        None | Some(Value::Null) => bail!(
            "the registry's record of agent {name}@{version} carries no trust picture; compare the container instead (`agentlang pull {name}@={version}`, then diff the file)"
        ),
        Some(t) => serde_json::from_value(t.clone()).with_context(|| {
            format!("the registry's trust picture of agent {name}@{version} is not readable")
        }),
    }
}
