//! `validate DIR`: every problem with its file and path; exit 1 on any.
//! The directory is validated whole by `core::package::validate_package`,
//! the function `build` and the registry's publish call too (an agent:
//! agent.yaml, prompt.yaml, subagents, skills, ux.yaml; a tool its tool.yaml,
//! a protocol its protocol.yaml).
//!
//! An agent's agent.lock, when it has one, is judged offline by
//! `core::lockcheck::check` (the function publish, install and verify
//! call) over what the container will carry: what `build` would refuse is
//! a problem in agent.lock at the lock's field, with the registry's
//! problem type; a stale hash of the package's own files, which `build`
//! recomputes, a warning. Without a lock there is a note: `build` makes
//! one.
//!
//! An agent's protocols are also checked against the registry's catalog
//! when it answers (deprecations are warnings naming the successor;
//! unsatisfiable and removed versions are problems); without a registry
//! that check is skipped with a note, so validation still works offline.

use std::{path::Path, process::ExitCode};

use agentlang_core::{
    Diagnostics, constraints,
    package::{Members, Package, validate_package},
};
use anyhow::Result;
use serde_json::{Value, json};

use crate::{catalogs, env::Env, package_check, package_dir, source};

pub fn run(env: &Env, dir: &Path) -> Result<ExitCode> {
    let tree = source::read_dir(dir)?;
    let shown = dir.display().to_string();
    let kind = package_dir::detect_kind(&tree, &shown)?;
    let outcome = validate_package(kind, &Members::from_tree(&tree)).and_then(|package| {
        Ok(match package {
            Package::Agent(pkg) => {
                // The lock, judged offline by the function publish calls
                // (what `build` would refuse is an error; the hashes it
                // recomputes itself, a warning), with the protocols: every
                // problem at once.
                let lock = package_check::judge_lock(&tree, &pkg);
                let protocols = match (
                    check_protocols_online(env, &pkg),
                    lock.errors.is_empty(),
                ) {
                    (Ok(protocols), true) => protocols,
                    (Ok(_), false) => return Err(package_check::lock_diagnostics(&lock.errors)),
                    (Err(mut d), _) => {
                        d.extend(package_check::lock_diagnostics(&lock.errors));
                        return Err(d);
                    }
                };
                package_check::warn_rehashed(env, &lock.rehashed);
                if pkg.lock.is_none() && !env.out.json {
                    crate::output::note(
                        "note: no agent.lock yet; `agentlang build` (or `agentlang lock`) makes one, and the registry refuses an agent without it",
                    );
                }
                let undeclared = package_check::warn_undeclared_capabilities(env, &pkg);
                let limits = constraints::effective(&pkg.agent);
                let constraint_rows: Vec<Value> = limits
                    .rows()
                    .into_iter()
                    .map(|(name, value, default)| json!({"name": name, "value": value, "default": default}))
                    .collect();
                let summary = json!({
                    "valid": true,
                    "kind": "agent",
                    "name": pkg.agent.name,
                    "version": pkg.agent.version,
                    "files": tree.len(),
                    "subagents": pkg.subagents.len(),
                    "skills": pkg.skills.len(),
                    "tools": pkg.tool_requirements().len(),
                    "constraints": constraint_rows,
                    "protocols": protocols,
                    "undeclared_capabilities": undeclared,
                    "lock": {
                        "present": pkg.lock.is_some(),
                        "rehashed": lock.rehashed.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    },
                });
                let shown_limits: Vec<String> = limits
                    .rows()
                    .into_iter()
                    .map(|(name, value, default)| {
                        format!("{name} {value}{}", if default { " (default)" } else { "" })
                    })
                    .collect();
                let line = format!(
                    "{shown} is valid: agent {}, {} files, {} subagents, {} skills, {} registry tools\n  constraints: {}",
                    pkg.agent.name,
                    tree.len(),
                    pkg.subagents.len(),
                    pkg.skills.len(),
                    pkg.tool_requirements().len(),
                    shown_limits.join(", ")
                );
                (summary, line)
            }
            Package::Protocol(protocol) => {
                let spec = &protocol.protocol;
                let summary = json!({
                    "valid": true,
                    "kind": "protocol",
                    "name": spec.name,
                    "version": spec.version,
                    "agents_name_it": spec.protocol_name(),
                    "files": tree.len(),
                });
                let line = format!(
                    "{shown} is valid: protocol {}@{} ({} over {}, agents declare it as {})",
                    spec.name,
                    spec.version,
                    spec.schema.message_format,
                    spec.schema.transport,
                    spec.protocol_name()
                );
                (summary, line)
            }
            Package::Skill(skill) => {
                let doc = &skill.skill;
                // skills-ref reads the folder's name too: it must be the
                // skill's.
                let folder = std::fs::canonicalize(dir)
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
                if folder.as_deref() != Some(doc.name.as_str()) {
                    let mut d = Diagnostics::new();
                    d.push(
                        "name",
                        format!(
                            "the folder is {:?}, but the Agent Skills specification wants it named as the skill, {:?}",
                            folder.unwrap_or_default(),
                            doc.name.as_str()
                        ),
                    );
                    return Err(d.in_file(agentlang_core::skill::SKILL_FILE));
                }
                let summary = json!({
                    "valid": true,
                    "kind": "skill",
                    "name": doc.name,
                    "version": doc.version,
                    "files": tree.len(),
                });
                let line = format!(
                    "{shown} is valid: skill {}@{}, {} files",
                    doc.name,
                    doc.version,
                    tree.len()
                );
                (summary, line)
            }
            Package::Tool(tool) => {
                let spec = &tool.tool;
                let deps = spec.dependency_requirements().len();
                let summary = json!({
                    "valid": true,
                    "kind": "tool",
                    "name": spec.name(),
                    "version": spec.version(),
                    "files": tree.len(),
                    "dependencies": deps,
                });
                let line = format!(
                    "{shown} is valid: tool {}@{}, {deps} tool dependencies",
                    spec.name(),
                    spec.version()
                );
                (summary, line)
            }
        })
    });
    report(env, &shown, outcome)
}

/// The agent's protocols against the registry's catalog: problems are
/// diagnostics on agent.yaml, deprecations warnings on stderr. A registry
/// that does not answer skips the check (with a note).
fn check_protocols_online(
    env: &Env,
    pkg: &agentlang_core::package::AgentPackage,
) -> Result<Value, Diagnostics> {
    let spec = &pkg.agent;
    if spec.protocols.is_empty() {
        return Ok(json!({"checked": true, "warnings": []}));
    }
    let report = if catalogs::all_inline(spec) {
        agentlang_core::protocols::check_agent(spec, &|_| None, &Default::default())
    } else {
        let checked = env
            .anonymous()
            .and_then(|client| catalogs::check_protocols(&client, spec, &Default::default()));
        match checked {
            Ok(report) => report,
            Err(e) => {
                let reason = crate::client::one_line(&format!("{e:#}"));
                if !env.out.json {
                    crate::output::note(&format!(
                        "note: protocols not checked against a catalog ({reason})"
                    ));
                }
                return Ok(json!({"checked": false, "reason": reason}));
            }
        }
    };
    if !report.errors.is_empty() {
        return Err(report.errors.in_file(agentlang_core::package::AGENT_FILE));
    }
    let warnings: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    if !env.out.json {
        for w in &warnings {
            eprintln!("{} agent.yaml: {w}", env.out.yellow("warning:"));
        }
    }
    Ok(json!({"checked": true, "warnings": warnings}))
}

fn report(
    env: &Env,
    shown: &str,
    outcome: Result<(Value, String), Diagnostics>,
) -> Result<ExitCode> {
    match outcome {
        Ok((summary, line)) => {
            env.out
                .emit(&summary, || format!("{} {line}", env.out.green("✓")));
            Ok(ExitCode::SUCCESS)
        }
        Err(problems) => {
            if env.out.json {
                env.out.emit(
                    &json!({ "valid": false, "problems": problems }),
                    String::new,
                );
            } else {
                for p in problems.lines() {
                    eprintln!("{} {p}", env.out.red("error:"));
                }
                eprintln!("{} problem(s) in {shown}", problems.len());
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
