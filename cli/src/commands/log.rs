//! `log verify` and `log show`: the registry's transparency log, audited
//! whole or listed, from entries proved by a checkpoint that verifies and
//! extends the one seen before.

use std::{process::ExitCode, time::Instant};

use agentlang_core::PackageName;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{env::Env, tlog::CheckedLog};

/// The operations an entry may record (`v: 1`).
const OPS: &[&str] = &[
    "genesis",
    "publish",
    "yank",
    "unyank",
    "owner_add",
    "owner_remove",
    "key_add",
    "key_revoke",
];

/// Every entry read, the root recomputed, each entry's shape checked.
pub fn verify(env: &Env) -> Result<ExitCode> {
    let started = Instant::now();
    let client = env.anonymous()?;
    let log = CheckedLog::open(&client, &env.log, &env.out, None)?;
    // Kept until the root is known to hold: a log that does not verify is
    // reported as that, not as its first odd entry.
    let mut problem = None;
    let unavailable = log.for_each_entry(&env.out, |index, bytes| {
        if problem.is_none() {
            problem = bytes.and_then(|b| shape_problem(index, b));
        }
    })?;
    if let Some(problem) = problem {
        bail!("{problem}");
    }
    let seconds = started.elapsed().as_secs_f64();
    let c = &log.checkpoint;
    if unavailable > 0 && !env.out.json {
        eprintln!(
            "{} {unavailable} of the log's entries are too long to be served (the registry serves placeholders): their leaf hashes are in the verified tree, but what they say could not be checked",
            env.out.yellow("warning:")
        );
    }
    env.out.emit(
        &json!({
            "origin": c.origin,
            "size": c.size,
            "root": hex::encode(c.root),
            "verified": true,
            "unavailable": unavailable,
            "seconds": seconds,
        }),
        || {
            format!(
                "{} the log {} holds {} entries, every one in the tree whose root its checkpoint signs, consistent with every checkpoint seen before ({seconds:.2} s)",
                env.out.green("✓"),
                env.out.bold(&c.origin),
                c.size
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// What is wrong with entry `index`'s shape, if anything.
fn shape_problem(index: u64, bytes: &[u8]) -> Option<String> {
    let Ok(entry) = serde_json::from_slice::<Value>(bytes) else {
        return Some(format!("log entry {index} is not JSON"));
    };
    let op = entry["op"].as_str().unwrap_or_default();
    if entry["v"] != 1 || !OPS.contains(&op) || !entry["time"].is_string() {
        return Some(format!(
            "log entry {index} is not a version-1 entry of a known kind: {entry}"
        ));
    }
    if op == "genesis" && index != 0 {
        return Some(format!("log entry {index} is a second genesis"));
    }
    None
}

/// The entries, oldest first, optionally only those naming a package.
pub fn show(env: &Env, name: Option<&str>) -> Result<ExitCode> {
    let name = name
        .map(|n| PackageName::new(n).with_context(|| format!("{n:?} is not a package name")))
        .transpose()?;
    let client = env.anonymous()?;
    let log = CheckedLog::open(&client, &env.log, &env.out, None)?;
    // Only the entries shown are kept; `None` for a placeholder (shown
    // when no name is asked for, since it could name any).
    let mut shown: Vec<(u64, Option<Value>)> = Vec::new();
    let mut problem = None;
    let unavailable = log.for_each_entry(&env.out, |index, bytes| match bytes {
        None if name.is_none() => shown.push((index, None)),
        None => {}
        Some(bytes) => match serde_json::from_slice::<Value>(bytes) {
            Ok(entry) => {
                let named = name.as_ref().is_none_or(|n| {
                    entry["name"]
                        .as_str()
                        .and_then(|s| PackageName::new(s).ok())
                        .as_ref()
                        == Some(n)
                });
                if named {
                    shown.push((index, Some(entry)));
                }
            }
            Err(_) => {
                problem.get_or_insert_with(|| format!("log entry {index} is not JSON"));
            }
        },
    })?;
    if let Some(problem) = problem {
        bail!("{problem}");
    }
    if unavailable > 0 && !env.out.json {
        eprintln!(
            "{} {unavailable} of the log's entries are too long to be served (the registry serves placeholders)",
            env.out.yellow("warning:")
        );
    }
    env.out.emit(
        &shown
            .iter()
            .map(|(i, e)| json!({"index": i, "entry": e}))
            .collect::<Vec<_>>(),
        || {
            shown
                .iter()
                .map(|(i, e)| {
                    let Some(e) = e else {
                        return format!("{i:>7}  (too long to be served)");
                    };
                    let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                    let what = match s("op").as_str() {
                        "genesis" => s("origin"),
                        "key_add" | "key_revoke" => format!("key {}", s("signer")),
                        _ if !s("version").is_empty() => {
                            format!("{} {}@{}", s("kind"), s("name"), s("version"))
                        }
                        _ => format!("{} {}", s("kind"), s("name")),
                    };
                    let by = if s("account").is_empty() {
                        String::new()
                    } else {
                        format!(" by {}", s("account"))
                    };
                    let reason = if s("reason").is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", s("reason"))
                    };
                    format!("{i:>7}  {}  {:<12} {what}{by}{reason}", s("time"), s("op"))
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
    );
    Ok(ExitCode::SUCCESS)
}
