//! `check DIR|FILE --host NAME`: what a host grants of what an agent (its
//! subagents, and the tools of an install) asks for. Exit 1, with one line
//! naming each refused capability and the host, when a required capability
//! is refused.

use std::{path::Path, process::ExitCode};

use agentlang_core::{
    Kind, host,
    package::{AgentPackage, Members, Package, validate_package},
    tool::ToolSpec,
};
use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::{container_file, env::Env, hosts, install, package_check, package_dir, source};

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
            package: package_check::validated(env, &tree, &shown)?,
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
        Ok(Package::Tool(_) | Package::Protocol(_) | Package::Skill(_)) => {
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
            text.push_str(&hosts::render_report(&env.out, &report));
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
