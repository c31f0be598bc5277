//! `log verify` and `log show`: the registry's transparency log, audited
//! whole or listed, from entries proved by a checkpoint that verifies and
//! extends the one seen before; `log forget`: what this machine trusts
//! about a registry's log, dropped after the registry was reset.

use std::{process::ExitCode, time::Instant};

use agentlang_core::{PackageName, tlog::LogOp};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{
    config,
    env::Env,
    tlog::{self, CheckedLog},
};

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
    // The operations are core's, so a new kind of entry cannot be one
    // this check has not heard of.
    let op = serde_json::from_value::<LogOp>(entry["op"].clone()).ok();
    if entry["v"] != 1 || op.is_none() || !entry["time"].is_string() {
        return Some(format!(
            "log entry {index} is not a version-1 entry of a known kind: {entry}"
        ));
    }
    if op == Some(LogOp::Genesis) && index != 0 {
        return Some(format!("log entry {index} is a second genesis"));
    }
    None
}

/// Forgets the pinned log key and last checkpoint of `registry` (else the
/// configured one), saying what trust was dropped.
pub fn forget(env: &Env, registry: Option<&str>) -> Result<ExitCode> {
    let base = match registry {
        Some(url) => config::normalize_url(url)?,
        None => env.ctx.registry.clone(),
    };
    let base = base.as_str();
    let forgotten = tlog::forget(base)?;
    env.out.emit(
        &json!({
            "registry": base,
            "dir": forgotten.dir,
            "key": forgotten.key,
            "size": forgotten.size,
        }),
        || match (&forgotten.key, forgotten.size) {
            (None, None) => format!("nothing was pinned for {base}'s log"),
            (key, size) => format!(
                "forgot {base}'s log key {} and the checkpoint of {} entries seen last ({}); the next command trusts the key the registry serves then",
                key.as_deref().unwrap_or("(none)"),
                size.map_or_else(|| "no".to_owned(), |s| s.to_string()),
                forgotten.dir.display()
            ),
        },
    );
    Ok(ExitCode::SUCCESS)
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
