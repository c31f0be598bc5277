//! `status NAME[@VERSION] STATUS`: a package's or a version's status
//! (docs/statuses.md), set through `PUT .../status`.

use std::process::ExitCode;

use agentlang_core::PackageName;
use anyhow::Result;
use serde_json::{Value, json};

use crate::{
    args::{KindArg, StatusArg},
    env::Env,
};

pub fn run(
    env: &Env,
    spec: &str,
    status: StatusArg,
    kind: Option<KindArg>,
    reason: Option<&str>,
    successor: Option<&str>,
) -> Result<ExitCode> {
    // `NAME` is the package; `NAME@VERSION` one version.
    let (name, version) = if spec.contains('@') {
        let (name, version) = crate::spec::parse_exact(spec)?;
        (name, Some(version))
    } else {
        (
            PackageName::new(spec).map_err(|e| anyhow::anyhow!("{spec:?}: {e}"))?,
            None,
        )
    };
    let client = env.authenticated()?;
    let kind = crate::index::which_kind(&client, &name, kind.map(KindArg::kind))?;
    let path = match &version {
        Some(v) => format!("/api/v1/{}/{name}/{v}/status", kind.plural()),
        None => format!("/api/v1/{}/{name}/status", kind.plural()),
    };
    let body = json!({
        "status": status.as_str(),
        "reason": reason,
        "successor": successor,
    });
    let answer: Value =
        crate::two_factor::send_json(env, &client, || client.put(&path).json(&body))?;
    env.out.emit(&answer, || {
        let what = match &version {
            Some(v) => format!("{kind} {name}@{v}"),
            None => format!("{kind} {name}"),
        };
        let mut line = format!("{} {what} is {}", env.out.green("✓"), status.as_str());
        if let Some(reason) = answer.get("reason").and_then(Value::as_str) {
            line.push_str(&format!(": {}", crate::client::one_line(reason)));
        }
        if let Some(successor) = answer.get("successor").and_then(Value::as_str) {
            line.push_str(&format!(" (use {successor} instead)"));
        }
        if let Some(index) = answer.pointer("/log/index").and_then(Value::as_i64) {
            line.push_str(&format!(" [log entry {index}]"));
        }
        line
    });
    Ok(ExitCode::SUCCESS)
}
