//! `install NAME[@REQ] [--dir DIR] [--frozen] [--host H]`: the agent and
//! every tool its lock pins, verified, into an install directory; and
//! `verify DIR`: every check of install again, offline.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Result, bail};
use serde_json::json;

use crate::{
    env::Env,
    hosts,
    install::{self, InstallRequest},
    spec::PackageReq,
};

pub fn run(
    env: &Env,
    spec: &str,
    dir: Option<PathBuf>,
    frozen: bool,
    accept_risk: bool,
    host: Option<&str>,
    prompt_key: Option<&Path>,
) -> Result<ExitCode> {
    let wanted = PackageReq::parse(spec)?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(wanted.name.as_str()));
    let host = host.map(hosts::resolve).transpose()?;
    let done = install::install(
        env,
        &InstallRequest {
            wanted: &wanted,
            dir: &dir,
            frozen,
            accept_risk,
            host: host.as_ref(),
            prompt_key,
        },
    )?;
    let i = &done.install;
    let m = &i.manifest;
    crate::statuses::warn_install(env, m);
    crate::advisories::warn_install(env, i);
    env.out.emit(
        &json!({
            "dir": dir,
            "changed": done.changed,
            "replaced": done.replaced,
            "trust_diff": done.trust_diff,
            "manifest": m,
            "host": done.host,
        }),
        || {
            let mut lines = vec![if done.changed {
                let replaced = done
                    .replaced
                    .as_ref()
                    .map(|v| format!(" (replacing {v})"))
                    .unwrap_or_default();
                format!(
                    "{} installed {}@{}{replaced} with {} tools into {}",
                    env.out.green("✓"),
                    env.out.bold(m.agent.name.as_str()),
                    m.agent.version,
                    m.tools.len(),
                    dir.display()
                )
            } else {
                format!(
                    "{} {}@{} is already installed in {}",
                    env.out.green("✓"),
                    env.out.bold(m.agent.name.as_str()),
                    m.agent.version,
                    dir.display()
                )
            }];
            for t in &m.tools {
                let yanked = if t.yanked {
                    env.out.yellow(" (yanked)")
                } else {
                    String::new()
                };
                lines.push(format!("  tool {}@{}{yanked}", t.name, t.version));
            }
            if let Some(report) = &done.host {
                lines.push(hosts::render_report(&env.out, report));
            }
            lines.join("\n")
        },
    );
    Ok(ExitCode::SUCCESS)
}

pub fn verify(env: &Env, dir: &Path) -> Result<ExitCode> {
    let (mut checks, loaded) = install::verify_dir(dir);
    // Receipts, offline: with the log key given or pinned.
    if let Ok(manifest) = install::InstallManifest::read(dir) {
        checks.extend(install::verify_receipts(dir, &manifest, &env.log));
    }
    let valid = loaded.is_some() && checks.iter().all(|c| c.ok);
    env.out.emit(
        &json!({
            "dir": dir,
            "valid": valid,
            "name": loaded.as_ref().map(|l| l.manifest.agent.name.to_string()),
            "version": loaded.as_ref().map(|l| l.manifest.agent.version.to_string()),
            "checks": checks,
        }),
        || {
            checks
                .iter()
                .map(|c| {
                    let mark = if c.ok {
                        env.out.green("✓")
                    } else {
                        env.out.red("✗")
                    };
                    format!("{mark} {}: {}", c.check, crate::client::one_line(&c.detail))
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
    );
    if valid {
        Ok(ExitCode::SUCCESS)
    } else {
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.check.as_str())
            .collect();
        bail!(
            "{} failed verification: {}",
            dir.display(),
            failed.join(", ")
        )
    }
}
