//! An agent version's trust picture (`core::trust`): computed once, at
//! publish or by the start-up backfill, and stored in the version's extras,
//! so the API's version record, the catalog's pages and search read it
//! without touching a blob or another package. Locked tools are immutable
//! once published, so what they ask for cannot change afterwards.

use std::collections::HashMap;

use agentlang_core::{
    Version,
    capability::Capability,
    host::{ToolAt, ToolCapabilities},
    lockfile::Lockfile,
    package::AgentPackage,
    trust::AgentTrust,
};

use store::Db;

/// What each tool pinned in `lock` asks for, from the tools' stored
/// tool.yaml, in one query per chunk of names. A pin the registry no
/// longer has asks for nothing it could show.
pub async fn locked_tool_capabilities(
    db: &Db,
    lock: &Lockfile,
) -> Result<Vec<ToolCapabilities>, store::Error> {
    let names: Vec<String> = lock.tools.keys().map(|n| n.normalized()).collect();
    let rows = db.tool_permissions(&names).await?;
    // Every live version of every pinned tool comes back: index them once.
    let by_pin: HashMap<(&str, Version), Option<&str>> = rows
        .iter()
        .map(|r| {
            (
                (r.normalized_name.as_str(), r.version.clone()),
                r.permissions.as_deref(),
            )
        })
        .collect();
    Ok(lock
        .tools
        .iter()
        .zip(&names)
        .map(|((name, locked), normalized)| {
            let capabilities: Vec<Capability> = by_pin
                .get(&(normalized.as_str(), locked.version.clone()))
                .copied()
                .flatten()
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_default();
            ToolCapabilities {
                tool: ToolAt {
                    name: name.clone(),
                    version: locked.version.clone(),
                },
                capabilities,
                evidence: None,
            }
        })
        .collect())
}

/// The whole picture of a validated agent package signed by `signer`.
pub async fn agent_trust(
    db: &Db,
    pkg: &AgentPackage,
    signer: &str,
) -> Result<AgentTrust, store::Error> {
    let tools = match &pkg.lock {
        Some(lock) => locked_tool_capabilities(db, lock).await?,
        None => Vec::new(),
    };
    Ok(AgentTrust::of(pkg, &tools).signed_by(Some(signer.to_owned())))
}
