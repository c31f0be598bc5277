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
    let entries = log.all_entries(&env.out)?;
    for (index, bytes) in entries.iter().enumerate() {
        let entry: Value = serde_json::from_slice(bytes)
            .with_context(|| format!("log entry {index} is not JSON"))?;
        let op = entry["op"].as_str().unwrap_or_default();
        if entry["v"] != 1 || !OPS.contains(&op) || !entry["time"].is_string() {
            bail!("log entry {index} is not a version-1 entry of a known kind: {entry}");
        }
        if op == "genesis" && index != 0 {
            bail!("log entry {index} is a second genesis");
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let c = &log.checkpoint;
    env.out.emit(
        &json!({
            "origin": c.origin,
            "size": c.size,
            "root": hex::encode(c.root),
            "verified": true,
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

/// The entries, oldest first, optionally only those naming a package.
pub fn show(env: &Env, name: Option<&str>) -> Result<ExitCode> {
    let name = name
        .map(|n| PackageName::new(n).with_context(|| format!("{n:?} is not a package name")))
        .transpose()?;
    let client = env.anonymous()?;
    let log = CheckedLog::open(&client, &env.log, &env.out, None)?;
    let entries: Vec<(usize, Value)> = log
        .all_entries(&env.out)?
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            serde_json::from_slice(bytes)
                .map(|e| (i, e))
                .with_context(|| format!("log entry {i} is not JSON"))
        })
        .collect::<Result<_>>()?;
    let shown: Vec<&(usize, Value)> = entries
        .iter()
        .filter(|(_, e)| {
            name.as_ref().is_none_or(|n| {
                e["name"]
                    .as_str()
                    .and_then(|s| PackageName::new(s).ok())
                    .as_ref()
                    == Some(n)
            })
        })
        .collect();
    env.out.emit(
        &shown
            .iter()
            .map(|(i, e)| json!({"index": i, "entry": e}))
            .collect::<Vec<_>>(),
        || {
            shown
                .iter()
                .map(|(i, e)| {
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
