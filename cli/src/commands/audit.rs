//! `audit [DIR] [--severity LEVEL]`: the advisories affecting what DIR's
//! agent.lock pins, one line per advisory per pin; exit 1 when any is at or
//! above the level (docs/advisories.md).

use std::{io::Read, path::Path, process::ExitCode};

use agentlang_core::{advisories::Severity, lockfile::Lockfile};
use anyhow::{Context, Result};

use crate::{advisories, env::Env};

/// The largest agent.lock read, as the registry's audit takes.
const MAX_LOCK_BYTES: u64 = 256 * 1024;

pub fn run(env: &Env, dir: &Path, severity: Severity) -> Result<ExitCode> {
    let path = dir.join("agent.lock");
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_LOCK_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > MAX_LOCK_BYTES {
        anyhow::bail!("{} is larger than {MAX_LOCK_BYTES} bytes", path.display());
    }
    let lock =
        Lockfile::from_slice(&bytes).with_context(|| format!("reading {}", path.display()))?;
    let client = env.anonymous()?;
    let audit = advisories::audit(env, &client, &lock)?;
    let failing = audit
        .findings
        .iter()
        .filter(|f| f.severity >= severity)
        .count();
    env.out.emit(&audit, || {
        let mut lines: Vec<String> = audit.findings.iter().map(|f| f.line()).collect();
        lines.push(match (audit.findings.len(), failing) {
            (0, _) => format!(
                "{} no advisory affects what {} pins",
                env.out.green("✓"),
                path.display()
            ),
            (n, 0) => format!("{n} advisories affect pins, none at or above {severity}"),
            (n, f) => format!("{n} advisories affect pins; {f} at or above {severity}"),
        });
        lines.join("\n")
    });
    Ok(if failing > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
