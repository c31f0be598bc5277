//! `check DIR|FILE --host NAME`: what a host grants of what an agent (its
//! subagents, and the tools of an install) asks for. Exit 1, with one line
//! naming each refused capability and the host, when a required capability
//! is refused.

use std::{path::Path, process::ExitCode};

use agentlang_core::{
    Kind,
    host::{self, HostReport, Outcome},
    package::{AgentPackage, Members, Package, validate_package},
    tool::ToolSpec,
};
use anyhow::{Context, Result, bail};
use serde_json::json;

use super::{Env, lock};
use crate::{container_file, hosts, install, output::Output, package_dir, source};

/// The agent to check and the tools known with it.
struct Subject {
    package: AgentPackage,
    tools: Vec<ToolSpec>,
    /// What was not checked, said out loud.
    note: Option<String>,
}

fn load(env: &Env, path: &Path) -> Result<Subject> {
    let shown = path.display().to_string();
    if path.is_dir() && path.join(install::MANIFEST_FILE).exists() {
        let loaded = install::load_verified(path)?;
        let tools = loaded.tools.iter().map(|t| t.spec.clone()).collect();
        return Ok(Subject {
            package: loaded.package,
            tools,
            note: None,
        });
    }
    let not_installed = Some(
        "tools are not installed here, so their permissions are not checked; check an install directory to include them"
            .to_owned(),
    );
    if path.is_dir() {
        let tree = source::read_dir(path)?;
        if package_dir::detect_kind(&tree, &shown)? != Kind::Agent {
            bail!("{shown} is a tool; hosts run agents");
        }
        return Ok(Subject {
            package: lock::validated(env, &tree, &shown)?,
            tools: Vec::new(),
            note: not_installed,
        });
    }
    let container = container_file::read(path)?;
    if container.manifest().kind() != Kind::Agent {
        bail!(
            "{shown} is a {}; hosts run agents",
            container.manifest().kind()
        );
    }
    match validate_package(Kind::Agent, &Members::from_container(&container)) {
        Ok(Package::Agent(pkg)) => Ok(Subject {
            package: *pkg,
            tools: Vec::new(),
            note: not_installed,
        }),
        Ok(Package::Tool(_) | Package::Protocol(_)) => {
            bail!("{shown} is not an agent; hosts run agents")
        }
        Err(d) => Err(d).with_context(|| format!("{shown} is not a valid agent")),
    }
}

pub fn run(env: &Env, path: &Path, host_arg: &str) -> Result<ExitCode> {
    let host = hosts::resolve(host_arg)?;
    let subject = load(env, path)?;
    let tools: Vec<&ToolSpec> = subject.tools.iter().collect();
    let report = host::check(&host, &host::requests(&subject.package, &tools));
    env.out.emit(
        &json!({
            "agent": subject.package.agent.name,
            "version": subject.package.agent.version,
            "runnable": report.runnable(),
            "report": report,
            "note": subject.note,
        }),
        || {
            let mut text = format!(
                "agent {} on host {} ({})\n",
                subject.package.agent.name, host.name, host.description
            );
            text.push_str(&render_report(&env.out, &report));
            if let Some(note) = &subject.note {
                text.push_str(&format!("\n  note: {note}"));
            }
            text
        },
    );
    match report.refusal_summary() {
        Some(refusal) => bail!("{refusal}"),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// One line per capability: ✓ granted, ↓ downgraded, ~ degraded, ✗ refused.
pub fn render_report(out: &Output, report: &HostReport) -> String {
    if report.capabilities.is_empty() {
        return format!("  {} the agent asks for no capabilities", out.green("✓"));
    }
    let mut lines = Vec::new();
    for d in &report.capabilities {
        let need = if d.required { "required" } else { "optional" };
        let (mark, what) = match d.outcome {
            Outcome::Granted => (
                out.green("✓"),
                match d.granted_mode {
                    Some(m) => format!("granted ({})", mode(m)),
                    None => "granted".to_owned(),
                },
            ),
            Outcome::Downgraded => (
                out.yellow("↓"),
                format!(
                    "downgraded: {} → {}",
                    d.requested_mode.map(mode).unwrap_or_default(),
                    d.granted_mode.map(mode).unwrap_or_default()
                ),
            ),
            Outcome::Degraded => (
                out.yellow("~"),
                format!("degraded: {}", d.reason.as_deref().unwrap_or("not granted")),
            ),
            Outcome::Refused => (
                out.red("✗"),
                format!("refused: {}", d.reason.as_deref().unwrap_or("not granted")),
            ),
        };
        lines.push(format!(
            "  {mark} {:<15} {need:<9} {what}",
            d.capability.as_str()
        ));
    }
    if report.asks_user {
        lines.push(format!(
            "  (host {} asks the user before it grants each capability)",
            report.host
        ));
    }
    lines.join("\n")
}

fn mode(m: agentlang_core::agent::PermissionMode) -> &'static str {
    use agentlang_core::agent::PermissionMode::*;
    match m {
        UserTriggered => "user_triggered",
        OnDemand => "on_demand",
        Continuous => "continuous",
        Scheduled => "scheduled",
    }
}
