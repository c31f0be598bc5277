//! `lock DIR [--update]`: resolve the package's tools and models over HTTP
//! into DIR/agent.lock; hash subagents and the agent's own files locally.

use std::{io::IsTerminal, path::Path, process::ExitCode};

use agentlang_core::{
    Kind,
    package::LOCK_FILE,
    trust::{self, AgentTrust, TrustDiff},
};
use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::{
    env::Env,
    install::PinnedTools,
    lock::{self, Planned, Relocked},
    lockdiff::LockChange,
    package_check, package_dir, source,
};

pub fn run(env: &Env, dir: &Path, update: bool, accept_risk: bool) -> Result<ExitCode> {
    let tree = source::read_dir(dir)?;
    let shown = dir.display().to_string();
    if package_dir::detect_kind(&tree, &shown)? != Kind::Agent {
        bail!("{shown} is a tool; only agents have an agent.lock");
    }
    let pkg = package_check::validated(env, &tree, &shown)?;
    let (members, _) = package_dir::agent_members(&tree, &pkg);
    let existing = lock::read_existing(&tree)?;
    let planned = lock::plan(env, &members, &pkg, existing.as_ref(), update)?;
    // An update may move tools to versions that ask for more: the agent
    // gains powers nobody reviewed. Shown, and written only when accepted.
    let trust_diff = match &existing {
        Some(old) if update && !planned.unchanged => {
            let mut tools = PinnedTools::new(env)?;
            let before = AgentTrust::of(&pkg, &tools.capabilities(Some(old)));
            let after = AgentTrust::of(&pkg, &tools.capabilities(Some(&planned.lock)));
            // Fail closed: a new pin whose tool.yaml cannot be read may ask
            // for anything.
            let unknown = tools.unreadable_in(&planned.lock);
            if !unknown.is_empty() && !accept_risk {
                let names: Vec<String> = unknown.iter().map(ToString::to_string).collect();
                bail!(
                    "cannot check what {} ask(s) for, so {} was not written; retry, or run again with --accept-risk",
                    names.join(", "),
                    dir.join(LOCK_FILE).display()
                );
            }
            Some(trust::diff(&before, &after))
        }
        _ => None,
    };
    let shown = match trust_diff.as_ref().filter(|d| d.raises_risk()) {
        Some(d) => accept(env, dir, &planned, d, accept_risk)?,
        None => false,
    };
    let outcome = planned.write(dir)?;
    report(env, dir, &outcome, trust_diff.as_ref(), shown);
    crate::statuses::warn_lock(env, &outcome.lock);
    crate::advisories::warn_lock(env, &outcome.lock);
    Ok(ExitCode::SUCCESS)
}

/// Goes on with a lock whose tools raise the agent's risk only with
/// `--accept-risk` or a "yes" typed at a terminal; otherwise the diff is
/// shown and nothing is written. True when the changes were shown already.
fn accept(env: &Env, dir: &Path, planned: &Planned, d: &TrustDiff, accepted: bool) -> Result<bool> {
    if accepted {
        return Ok(false);
    }
    let path = dir.join(LOCK_FILE);
    let refused = || {
        anyhow::anyhow!(
            "the updated lock raises the agent's risk, so {} was not written; review the changes and run again with --accept-risk to write it",
            path.display()
        )
    };
    if env.out.json {
        env.out.emit(
            &json!({
                "path": path,
                "written": false,
                "changes": planned.changes,
                "trust_diff": d,
            }),
            String::new,
        );
        return Err(refused());
    }
    for line in lockdiff_lines(&planned.changes)
        .into_iter()
        .chain(crate::trust::render_diff(&env.out, d))
    {
        eprintln!("{line}");
    }
    if !(env.out.interactive && std::io::stdin().is_terminal()) {
        return Err(refused());
    }
    eprint!("Write {} anyway? Type yes to accept: ", path.display());
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("reading the answer")?;
    if answer.trim().eq_ignore_ascii_case("yes") {
        Ok(true)
    } else {
        Err(refused())
    }
}

fn lockdiff_lines(changes: &[LockChange]) -> Vec<String> {
    changes.iter().map(LockChange::describe).collect()
}

/// The changes (unless `shown` on stderr already) and what was written.
fn report(env: &Env, dir: &Path, r: &Relocked, trust_diff: Option<&TrustDiff>, shown: bool) {
    let path = dir.join(LOCK_FILE);
    env.out.emit(
        &json!({
            "path": path,
            "written": r.written,
            "changes": r.changes,
            "trust_diff": trust_diff,
            "lock": r.lock,
        }),
        || {
            let mut lines = Vec::new();
            if !shown {
                lines.extend(lockdiff_lines(&r.changes));
                if let Some(d) = trust_diff.filter(|d| !d.is_empty()) {
                    lines.extend(crate::trust::render_diff(&env.out, d));
                }
            }
            lines.push(if r.written {
                format!(
                    "{} wrote {} ({} tools, {} subagents, {} models, {} protocols)",
                    env.out.green("✓"),
                    path.display(),
                    r.lock.tools.len(),
                    r.lock.agents.len(),
                    r.lock.models.len(),
                    r.lock.protocols.len()
                )
            } else {
                format!("{} {} is up to date", env.out.green("✓"), path.display())
            });
            lines.join("\n")
        },
    );
}
