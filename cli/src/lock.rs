//! An agent's agent.lock: resolved over HTTP (the registry picks tools and
//! describes models), its subagents and the agent's own files hashed
//! locally, and written. The `lock` command and `build` both make one.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::Path,
};

use agentlang_core::{
    MemberPath, SourceTree,
    lockfile::{LockedProtocol, Lockfile, resolved_at_now_or_source_date_epoch},
    package::{AgentPackage, LOCK_FILE},
    protocols::{self, ProtocolName},
    schema_compat,
};
use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use serde_json::json;

use crate::{
    catalogs,
    client::{ApiError, Bound},
    container_file,
    env::Env,
    lockdiff::{self, LocalLock, LockChange},
    release_age,
};

pub fn read_existing(tree: &SourceTree) -> Result<Option<Lockfile>> {
    tree.get(LOCK_FILE)
        .map(Lockfile::from_slice)
        .transpose()
        .context("the existing agent.lock cannot be read; fix it or delete it and run `agentlang lock` again")
}

/// What a `lock` run did.
#[derive(Debug)]
pub struct Relocked {
    pub lock: Lockfile,
    pub changes: Vec<LockChange>,
    /// False when the lock on disk already said the same (it is left
    /// untouched then, `resolved_at` included).
    pub written: bool,
}

/// A resolved lock, not yet written.
#[derive(Debug)]
pub struct Planned {
    /// The existing lock itself when nothing changed.
    pub lock: Lockfile,
    pub changes: Vec<LockChange>,
    pub unchanged: bool,
}

impl Planned {
    /// Writes DIR/agent.lock when anything changed.
    pub fn write(mut self, dir: &Path) -> Result<Relocked> {
        if !self.unchanged {
            let epoch = std::env::var("SOURCE_DATE_EPOCH").ok();
            self.lock.resolved_at = resolved_at_now_or_source_date_epoch(epoch.as_deref())?;
            let text = self.lock.to_yaml()?;
            container_file::write_atomic(&dir.join(LOCK_FILE), text.as_bytes())?;
        }
        Ok(Relocked {
            lock: self.lock,
            changes: self.changes,
            written: !self.unchanged,
        })
    }
}

/// Resolves and fills the locally computed sections.
pub fn plan(
    env: &Env,
    members: &SourceTree,
    pkg: &AgentPackage,
    existing: Option<&Lockfile>,
    update: bool,
) -> Result<Planned> {
    let local = LocalLock::of(members, pkg);
    let keep = if update { None } else { existing };
    let mut lock = resolve(env, &local, pkg, keep)?;
    check_schemas(env, pkg, &lock)?;
    lock.protocols = lock_protocols(env, pkg, keep)?;
    lock.registry = Some(env.ctx.registry.clone());
    lock.agents = local.agents;
    lock.files = local.files;
    let changes = lockdiff::diff(existing, &lock);
    let unchanged = existing.is_some_and(|old| {
        let mut same_time = lock.clone();
        same_time.resolved_at = old.resolved_at;
        &same_time == old
    });
    if unchanged && let Some(old) = existing {
        lock = old.clone();
    }
    Ok(Planned {
        lock,
        changes,
        unchanged,
    })
}

/// Resolves, fills the locally computed sections, and writes DIR/agent.lock
/// when anything changed.
pub fn relock(
    env: &Env,
    dir: &Path,
    members: &SourceTree,
    pkg: &AgentPackage,
    existing: Option<&Lockfile>,
    update: bool,
) -> Result<Relocked> {
    plan(env, members, pkg, existing, update)?.write(dir)
}

/// The agent's inline tool schemas against the locked versions' published
/// ones, and its routes through them (`core::schema_compat`, what publish
/// runs): each pinned tool's tool.yaml is read from its version record.
/// Every problem is printed, with its path and rule, before the lock stops.
/// (Records are read one per pinned tool: a lock pins at most
/// `lockfile::MAX_LOCKED_TOOLS`.)
fn check_schemas(env: &Env, pkg: &AgentPackage, lock: &Lockfile) -> Result<()> {
    if lock.tools.is_empty() {
        return Ok(());
    }
    let client = env.anonymous()?;
    let mut published = schema_compat::Published::new();
    for (name, pin) in &lock.tools {
        // A record that cannot be read leaves that tool's schemas unknown
        // here; publish reads them from its own store and judges again.
        let record: Option<serde_json::Value> = client
            .send_json(client.get(&format!("/api/v1/tools/{name}/{}", pin.version)))
            .ok();
        if let Some(record) = record {
            published.insert_spec(name.as_str(), &pin.version.to_string(), &record["spec"]);
        }
    }
    let problems = schema_compat::check_package(&pkg.agent, &pkg.subagents, &published);
    if problems.is_empty() {
        return Ok(());
    }
    if !env.out.json {
        for line in problems.lines() {
            eprintln!("{} {line}", env.out.red("error:"));
        }
    }
    bail!(
        "{} problem(s) with the locked tools' schemas: {}",
        problems.len(),
        problems.lines().collect::<Vec<_>>().join("; ")
    )
}

/// The protocol versions the agent speaks: inline definitions as written,
/// the rest chosen from the registry's catalog (or its protocol packages),
/// keeping what the existing lock holds while it still fits. Errors stop
/// the lock; deprecations are printed as warnings naming the successor.
fn lock_protocols(
    env: &Env,
    pkg: &AgentPackage,
    keep: Option<&Lockfile>,
) -> Result<BTreeMap<ProtocolName, LockedProtocol>> {
    let spec = &pkg.agent;
    if spec.protocols.is_empty() {
        return Ok(BTreeMap::new());
    }
    let pins = keep
        .map(|l| {
            l.protocols
                .iter()
                .map(|(n, p)| (n.to_string(), p.version.clone()))
                .collect()
        })
        .unwrap_or_default();
    let report = if catalogs::all_inline(spec) {
        protocols::check_agent(spec, &|_| None, &pins)
    } else {
        catalogs::check_protocols(&env.anonymous()?, spec, &pins)?
    };
    catalogs::require_valid(&report, &env.out)?;
    Ok(report
        .choices
        .into_iter()
        .map(|c| {
            (
                c.name,
                LockedProtocol {
                    version: c.version,
                    requirement: c.requirement,
                    source: c.source,
                    hash: c.hash,
                },
            )
        })
        .collect())
}

/// `POST /api/v1/resolve`: the registry picks tool versions (transitively)
/// and skill versions, and describes the models; an unsatisfiable set comes back as a 422 whose
/// `detail` explains the clash and whose `conflicts` member marks it as one.
fn resolve(
    env: &Env,
    local: &LocalLock,
    pkg: &AgentPackage,
    keep: Option<&Lockfile>,
) -> Result<Lockfile> {
    let tools: BTreeMap<String, String> = local
        .tools
        .iter()
        .map(|(name, req)| {
            (
                name.to_string(),
                req.as_ref().map_or("*".to_owned(), ToString::to_string),
            )
        })
        .collect();
    let models: BTreeSet<&str> = std::iter::once(&pkg.agent)
        .chain(pkg.subagents.values())
        .flat_map(|a| a.model_names())
        .collect();
    let skills: BTreeMap<String, String> = local
        .skills
        .iter()
        .map(|(name, req)| (name.to_string(), req.to_string()))
        .collect();
    if tools.is_empty() && models.is_empty() && skills.is_empty() {
        // Nothing the registry knows about: the lock is only hashes, made
        // here, so such an agent builds offline.
        return Ok(Lockfile::new(
            resolved_at_now_or_source_date_epoch(None)?,
            None,
        ));
    }
    let mut body = json!({ "tools": tools, "models": models });
    // Sent only when there are some, so an agent without skill packages
    // still locks against a registry that predates them.
    if !skills.is_empty() {
        body["skills"] = json!(skills);
    }
    if let Some(lock) = keep {
        body["lock"] = serde_json::to_value(lock).context("serializing the existing lock")?;
    }
    if let Some(cutoff) = env.release_cutoff() {
        body["exclude_newer"] = json!(release_age::rfc3339(cutoff)?);
    }
    let client = env.anonymous()?;
    // JSON is asked for; YAML (the registry's default) is read too.
    let request = client
        .post("/api/v1/resolve")
        .header(reqwest::header::ACCEPT, "application/json")
        .json(&body);
    let resp = client
        .send(request)
        .map_err(|e| match e.downcast_ref::<ApiError>() {
            Some(api) if api.status == StatusCode::UNPROCESSABLE_ENTITY && api.is_conflict => {
                let explanation = api.detail.clone().unwrap_or_default();
                if !env.out.json {
                    eprintln!(
                        "{}",
                        env.out.red("the tool requirements cannot all be met:")
                    );
                    for line in explanation.lines() {
                        eprintln!("  {line}");
                    }
                }
                anyhow::anyhow!("no set of tool versions satisfies the requirements: {explanation}")
            }
            _ => e,
        })?;
    if let Some(age) = env.min_release_age {
        let (listed, count) = release_age::held_back(resp.headers());
        if let Some(note) = release_age::held_back_note(age, &listed, count) {
            crate::output::note(&note);
        }
    }
    let is_yaml = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("yaml"));
    let bytes = resp
        .bytes(Bound::RESOLUTION)
        .context("reading the registry's resolution")?;
    parse_resolution(&bytes, is_yaml).with_context(|| {
        format!(
            "the registry at {} answered /api/v1/resolve with something that is not a lock",
            env.ctx.registry
        )
    })
}

/// The resolution as YAML (`application/yaml`) or JSON, bare or wrapped in
/// `{"lock": ...}`.
pub fn parse_resolution(bytes: &[u8], is_yaml: bool) -> Result<Lockfile> {
    if is_yaml {
        return Ok(Lockfile::from_slice(bytes)?);
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
    if let Some(inner) = value.get_mut("lock").filter(|v| v.is_object()) {
        value = inner.take();
    }
    Ok(serde_json::from_value(value)?)
}

/// For `build`: the lock the container will carry. Made when there is
/// none; checked against the files and requirements when there is one.
pub fn ensure_lock(
    env: &Env,
    dir: &Path,
    members: &mut SourceTree,
    pkg: &AgentPackage,
) -> Result<()> {
    let shown = dir.display();
    match read_existing(members)? {
        Some(lock) => {
            let local = LocalLock::of(members, pkg);
            let stale = lockdiff::staleness(&lock, &local);
            if !stale.pins.is_empty() {
                bail!(
                    "{shown}/agent.lock is out of date ({}): what it pins from the registry must change, so run `agentlang lock {shown}` to see what the change gives the agent",
                    stale.pins.join("; ")
                );
            }
            if !stale.hashes.is_empty() {
                // Only the package's own content changed (an edit, a
                // version bump): its hashes are recomputed, and every pin
                // stays as it was, `resolved_at` included.
                let rehashed = Lockfile {
                    files: local.files,
                    agents: local.agents,
                    ..lock
                };
                let text = rehashed.to_yaml()?;
                container_file::write_atomic(&dir.join(LOCK_FILE), text.as_bytes())?;
                members.insert(
                    MemberPath::new(LOCK_FILE).context("agent.lock is a member path")?,
                    text.into_bytes(),
                );
                if !env.out.json {
                    eprintln!(
                        "{} updated the hashes in {shown}/agent.lock ({}); nothing it pins changed",
                        env.out.green("✓"),
                        stale.hashes.join("; ")
                    );
                }
            }
        }
        None => {
            let r = relock(env, dir, members, pkg, None, false)?;
            if !env.out.json {
                eprintln!(
                    "{} locked {} tools into {shown}/agent.lock",
                    env.out.green("✓"),
                    r.lock.tools.len()
                );
            }
            let text = fs::read(dir.join(LOCK_FILE))
                .with_context(|| format!("reading {shown}/agent.lock"))?;
            members.insert(
                MemberPath::new(LOCK_FILE).context("agent.lock is a member path")?,
                text,
            );
        }
    }
    Ok(())
}
