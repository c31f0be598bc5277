//! `validate DIR`: every problem with its file and path; exit 1 on any.
//! An agent directory is validated as a whole (agent.yaml, prompt.yaml,
//! subagents, skills, ux.yaml); a tool directory is its tool.yaml.

use std::{path::Path, process::ExitCode};

use agentlang_core::{Diagnostics, Kind, package::validate_agent_tree, tool::parse_tool};
use anyhow::Result;
use serde_json::{Value, json};

use super::Env;
use crate::{package_dir, source};

pub fn run(env: &Env, dir: &Path) -> Result<ExitCode> {
    let tree = source::read_dir(dir)?;
    let shown = dir.display().to_string();
    let outcome = match package_dir::detect_kind(&tree, &shown)? {
        Kind::Agent => validate_agent_tree(&tree).map(|pkg| {
            let summary = json!({
                "valid": true,
                "kind": "agent",
                "name": pkg.agent.name,
                "version": pkg.agent.version,
                "files": tree.len(),
                "subagents": pkg.subagents.len(),
                "skills": pkg.skills.len(),
                "tools": pkg.tool_requirements().len(),
            });
            let line = format!(
                "{shown} is valid: agent {}, {} files, {} subagents, {} skills, {} registry tools",
                pkg.agent.name,
                tree.len(),
                pkg.subagents.len(),
                pkg.skills.len(),
                pkg.tool_requirements().len()
            );
            (summary, line)
        }),
        Kind::Tool => {
            let bytes = tree.get(package_dir::TOOL_FILE).unwrap_or_default();
            parse_tool(bytes)
                .map_err(|d| d.in_file(package_dir::TOOL_FILE))
                .and_then(|spec| match spec.readme() {
                    Some(readme) if !tree.contains(readme.as_str()) => {
                        let mut d = Diagnostics::new();
                        d.push("readme", format!("{readme} is not a file in the package"));
                        Err(d.in_file(package_dir::TOOL_FILE))
                    }
                    _ => Ok(spec),
                })
                .map(|spec| {
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
                })
        }
    };
    report(env, &shown, outcome)
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
                for p in problems.iter() {
                    eprintln!("{} {p}", env.out.red("error:"));
                }
                eprintln!("{} problem(s) in {shown}", problems.len());
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
