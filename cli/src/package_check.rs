//! A package directory validated before a command works on it: every
//! problem printed above the one failure line the command ends with, and
//! the capabilities an agent needs but does not request, warned about.
//! Shared by `validate`, `build`, `lock`, `check`, `quality` and `run`.
//! An agent's lock is judged here too, offline, by
//! `core::lockcheck::check` over what the container will carry, the
//! function the registry's publish calls with its own facts.

use agentlang_core::{
    Diagnostics, Kind, SourceTree, host,
    lockcheck::{self, LockProblem, MemberHashes, ProblemKind},
    package::{AgentPackage, LOCK_FILE, Members, Package, validate_package},
};
use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::{env::Env, package_dir};

/// The directory's agent.lock judged without the registry
/// (`lockcheck::check`) against the members the container will carry.
/// Split in two: what `build` refuses (`errors`), and the hashes of the
/// package's own content, which `build` recomputes itself (`rehashed`).
/// A directory without a lock has neither: `build` makes one.
#[derive(Debug, Default)]
pub struct LockJudgment {
    pub errors: Vec<LockProblem>,
    pub rehashed: Vec<LockProblem>,
}

pub fn judge_lock(tree: &SourceTree, pkg: &AgentPackage) -> LockJudgment {
    if pkg.lock.is_none() {
        return LockJudgment::default();
    }
    let (members, _) = package_dir::agent_members(tree, pkg);
    let (rehashed, errors) = lockcheck::check(pkg, &MemberHashes::from_tree(&members), None)
        .into_iter()
        .partition(|p| matches!(p.kind, ProblemKind::Files | ProblemKind::Agents));
    LockJudgment { errors, rehashed }
}

/// Lock problems as validation problems: in agent.lock, at the lock's
/// field, the registry's problem type after the message.
pub fn lock_diagnostics(problems: &[LockProblem]) -> Diagnostics {
    let mut d = Diagnostics::new();
    for p in problems {
        d.push(
            p.field.clone(),
            format!("{} [{}]", p.message, p.kind.slug()),
        );
    }
    d.in_file(LOCK_FILE)
}

/// Prints `problems` as `validated_package` prints its own (or the JSON
/// document with `--json`) and fails with one line, which names what
/// changed since the lock was made (`changed`, `lockdiff::staleness`'s
/// pins) when it knows.
pub fn refuse_lock(
    env: &Env,
    problems: &[LockProblem],
    shown: &str,
    changed: &[String],
) -> Result<()> {
    let diags = lock_diagnostics(problems);
    if env.out.json {
        env.out
            .emit(&json!({ "valid": false, "problems": diags }), String::new);
    } else {
        for p in diags.lines() {
            eprintln!("  {} {p}", env.out.red("✗"));
        }
    }
    if changed.is_empty() {
        bail!(
            "{} problem(s) in {shown}/agent.lock; run `agentlang lock {shown}`",
            diags.len()
        )
    }
    bail!(
        "{shown}/agent.lock is out of date ({}): {} problem(s); run `agentlang lock {shown}` to see what the change gives the agent",
        changed.join("; "),
        diags.len()
    )
}

/// The hashes `build` will recompute, one warning line each.
pub fn warn_rehashed(env: &Env, rehashed: &[LockProblem]) {
    if env.out.json {
        return;
    }
    for p in rehashed {
        eprintln!(
            "{} agent.lock: {p} (`agentlang build` updates this hash)",
            env.out.yellow("warning:")
        );
    }
}

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
