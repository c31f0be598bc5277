//! A package directory validated before a command works on it: every
//! problem printed above the one failure line the command ends with, and
//! the capabilities an agent needs but does not request, warned about.
//! Shared by `validate`, `build`, `lock`, `check`, `quality` and `run`.

use agentlang_core::{
    Kind, SourceTree, host,
    package::{AgentPackage, Members, Package, validate_package},
};
use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::env::Env;

/// The agent package, or every problem printed and a one-line failure.
pub fn validated(env: &Env, tree: &SourceTree, shown: &str) -> Result<AgentPackage> {
    match validated_package(env, Kind::Agent, tree, shown)? {
        Package::Agent(pkg) => Ok(*pkg),
        Package::Tool(_) => bail!("{shown} is a tool, not an agent"),
        Package::Protocol(_) => bail!("{shown} is a protocol, not an agent"),
        Package::Skill(_) => bail!("{shown} is a skill, not an agent"),
    }
}

/// Validates with `core::package::validate_package`, the function
/// `validate` and the registry's publish call. On failure every problem is
/// listed (on stderr, or as `{"valid": false, "problems": [...]}` on stdout
/// with `--json`) above the one `error:` line the command ends with.
pub fn validated_package(env: &Env, kind: Kind, tree: &SourceTree, shown: &str) -> Result<Package> {
    validate_package(kind, &Members::from_tree(tree)).or_else(|problems| {
        if env.out.json {
            env.out.emit(
                &json!({ "valid": false, "problems": problems }),
                String::new,
            );
        } else {
            for p in problems.lines() {
                eprintln!("  {} {p}", env.out.red("✗"));
            }
        }
        bail!(
            "{} problem(s) in {shown}; `agentlang validate {shown}` lists them",
            problems.len()
        )
    })
}

/// Capabilities the agent's bash tools, HTTP tools, MCP servers or injected
/// context need that no `permissions` list: a warning each on stderr (the
/// package is still valid), and the JSON summary's list.
pub fn warn_undeclared_capabilities(env: &Env, pkg: &AgentPackage) -> Vec<Value> {
    let mut out = Vec::new();
    for request in host::agent_requests(pkg).iter().filter(|r| r.undeclared()) {
        let sources: Vec<String> = request
            .requested_by
            .iter()
            .map(ToString::to_string)
            .collect();
        if !env.out.json {
            eprintln!(
                "{} {} is needed by {} but not requested in permissions",
                env.out.yellow("warning:"),
                request.capability,
                sources.join(", ")
            );
        }
        out.push(json!({
            "capability": request.capability.as_str(),
            "risk": request.capability.risk().as_str(),
            "required": request.required,
            "sources": sources,
        }));
    }
    out
}
