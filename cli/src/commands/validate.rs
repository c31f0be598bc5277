//! `validate DIR`: every problem with its file and path; exit 1 on any.

use std::{path::Path, process::ExitCode};

use agentlang_core::package::validate_agent_tree;
use anyhow::{Result, bail};
use serde_json::json;

use super::Env;
use crate::source;

pub fn run(env: &Env, dir: &Path) -> Result<ExitCode> {
    let tree = source::read_dir(dir)?;
    if !tree.contains("agent.yaml") {
        bail!("{} has no agent.yaml", dir.display());
    }
    match validate_agent_tree(&tree) {
        Ok(pkg) => {
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
            env.out.emit(&summary, || {
                format!(
                    "{} {} is valid: {} files, {} subagents, {} skills, {} registry tools",
                    env.out.green("✓"),
                    dir.display(),
                    tree.len(),
                    pkg.subagents.len(),
                    pkg.skills.len(),
                    pkg.tool_requirements().len()
                )
            });
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
                eprintln!("{} problem(s) in {}", problems.len(), dir.display());
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
