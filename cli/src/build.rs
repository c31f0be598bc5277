//! Building a package directory into a signed container file: validated,
//! locked (agents), the prompt encrypted, signed, read back and written as
//! `NAME@VERSION.agent` or `.tool`. `build DIR` and `publish DIR` both
//! build with it.

use std::path::{Path, PathBuf};

use agentlang_core::{
    Kind, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created, Limits, PROMPT_PATH},
    crypt::PromptKey,
    lockcheck::{self, MemberHashes},
    package::{AgentPackage, Package},
};
use anyhow::{Context, Result, bail};
use serde_json::json;
use time::OffsetDateTime;

use crate::{
    args::BuildKeys, container_file, env::Env, keyfiles, lock, lockdiff, package_check,
    package_dir, source,
};

/// A finished build: where it went and what to tell the user (`publish DIR`
/// folds this into its own report, so `--json` stays one document).
#[derive(Debug)]
pub struct Built {
    pub path: PathBuf,
    pub summary: serde_json::Value,
    pub human: String,
}

/// What goes into the container once the package is checked.
struct Checked {
    kind: Kind,
    name: PackageName,
    version: Version,
    members: SourceTree,
    left_out: Vec<String>,
}

/// Builds `dir` into a container file; `publish DIR` uses it too.
pub fn build_dir(env: &Env, dir: &Path, keys: &BuildKeys, output: Option<&Path>) -> Result<Built> {
    let tree = source::read_dir(dir)?;
    let shown = dir.display().to_string();
    // Local checks first (the files, then the key), so a mistake costs no
    // lock round trip.
    let (mut checked, agent) = match package_dir::detect_kind(&tree, &shown)? {
        Kind::Agent => check_agent(env, &tree, &shown)?,
        Kind::Tool => (check_tool(env, &tree, &shown)?, None),
        Kind::Protocol => (check_protocol(env, &tree, &shown)?, None),
        Kind::Skill => (check_skill(env, dir, &tree, &shown)?, None),
    };
    let key_path = match &keys.key {
        Some(p) => p.clone(),
        None => keyfiles::default_signing_key_path()?,
    };
    let signing_key = keyfiles::read_secret_key(&key_path)?;
    if let Some(pkg) = &agent {
        lock::ensure_lock(env, dir, &mut checked.members, pkg)?;
        // What is packed must pass the judgment publish makes of it
        // (`lockcheck::check`, the registry's part aside): a build never
        // produces a container the registry refuses for its lock.
        let packed = AgentPackage {
            lock: lock::read_existing(&checked.members)?,
            ..pkg.clone()
        };
        let problems = lockcheck::check(&packed, &MemberHashes::from_tree(&checked.members), None);
        if !problems.is_empty() {
            package_check::refuse_lock(env, &problems, &shown, &[])?;
        }
    }

    let prompt = if checked.members.contains(PROMPT_PATH) && !keys.open {
        Some(prompt_key(keys, &key_path, &checked.name)?)
    } else {
        None
    };
    let created = created_at()?;
    let bytes = container::build(&BuildInput {
        tree: &checked.members,
        kind: checked.kind,
        name: &checked.name,
        version: &checked.version,
        created,
        signing_key: &signing_key,
        prompt_key: prompt.as_ref().map(|(k, _, _)| k),
    })
    .with_context(|| format!("building {shown}"))?;

    // Read back what was written, as any consumer will: a build that does
    // not pass its own reader must never reach a registry.
    let container = container::read(bytes.as_slice(), &Limits::default())
        .context("the built container does not read back")?;
    container
        .verify_signature(&signing_key.public_key())
        .context("the built container does not verify")?;

    let path = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| container_file::default_file_name(container.manifest()));
    container_file::write_atomic(&path, &bytes)?;

    let m = container.manifest();
    let summary = json!({
            "path": path,
            "kind": m.kind(),
            "name": m.name(),
            "version": m.version(),
            "created": m.created(),
            "signer": m.signer(),
            "sha256": container.sha256().to_hex(),
            "size": container.size(),
            "members": m.files().len(),
            "left_out": checked.left_out,
            "prompt": m.prompt_mode(),
            "prompt_key_id": m.prompt_key_id(),
            "prompt_key": prompt.as_ref().map(|(_, p, _)| p),
            "prompt_key_created": prompt.as_ref().is_some_and(|(_, _, c)| *c),
    });
    let human = {
        let mut lines = vec![format!(
            "{} built {} ({} members, {} bytes, signed by {})",
            env.out.green("✓"),
            env.out.bold(&path.display().to_string()),
            m.files().len(),
            container.size(),
            m.signer()
        )];
        match &prompt {
            Some((_, p, created)) => {
                lines.push(if *created {
                    format!(
                        "  sealed: prompt encrypted with a new key, saved to {} — keep it: without it nobody can read the prompt",
                        p.display()
                    )
                } else {
                    format!("  sealed: prompt encrypted with {}", p.display())
                });
                lines.push(format!(
                    "  only you can run it until you grant it: agentlang grant {} --to USERNAME (or build with --open)",
                    m.name()
                ));
            }
            None if m.file(PROMPT_PATH).is_some() => lines.push(env.out.yellow(
                "  open: prompt.yaml is in plaintext; anyone who downloads it can read and run it",
            )),
            None => {}
        }
        if !checked.left_out.is_empty() {
            lines.push(format!("  not packed: {}", checked.left_out.join(", ")));
        }
        lines.join("\n")
    };
    Ok(Built {
        path,
        summary,
        human,
    })
}

/// The validated agent and what its container will carry (the lock is
/// added by `lock::ensure_lock` once the key is known to be there).
fn check_agent(
    env: &Env,
    tree: &SourceTree,
    shown: &str,
) -> Result<(Checked, Option<AgentPackage>)> {
    let pkg = package_check::validated(env, tree, shown)?;
    // A lock that pins the wrong things stops the build as validate
    // reports it; stale hashes of the package's own files are recomputed
    // by `lock::ensure_lock`.
    let lock = package_check::judge_lock(tree, &pkg);
    if let Some(existing) = pkg.lock.as_ref().filter(|_| !lock.errors.is_empty()) {
        let (members, _) = package_dir::agent_members(tree, &pkg);
        let stale = lockdiff::staleness(existing, &lockdiff::LocalLock::of(&members, &pkg));
        package_check::refuse_lock(env, &lock.errors, shown, &stale.pins)?;
    }
    // As validate does: the build goes on, the author is told.
    package_check::warn_undeclared_capabilities(env, &pkg);
    let (members, left_out) = package_dir::agent_members(tree, &pkg);
    let version = pkg
        .agent
        .version
        .clone()
        .with_context(|| format!("{shown}/agent.yaml has no version"))?;
    let checked = Checked {
        kind: Kind::Agent,
        name: pkg.agent.name.clone(),
        version,
        members,
        left_out: left_out.iter().map(ToString::to_string).collect(),
    };
    Ok((checked, Some(pkg)))
}

fn check_tool(env: &Env, tree: &SourceTree, shown: &str) -> Result<Checked> {
    let Package::Tool(tool) = package_check::validated_package(env, Kind::Tool, tree, shown)?
    else {
        bail!("{shown} is an agent, not a tool");
    };
    let spec = &tool.tool;
    let (members, left_out) = package_dir::tool_members(tree, spec.readme());
    Ok(Checked {
        kind: Kind::Tool,
        name: spec.name().clone(),
        version: spec.version().clone(),
        members,
        left_out: left_out.iter().map(ToString::to_string).collect(),
    })
}

fn check_protocol(env: &Env, tree: &SourceTree, shown: &str) -> Result<Checked> {
    let Package::Protocol(protocol) =
        package_check::validated_package(env, Kind::Protocol, tree, shown)?
    else {
        bail!("{shown} is not a protocol package");
    };
    let spec = protocol.protocol;
    let (members, left_out) = package_dir::protocol_members(tree);
    Ok(Checked {
        kind: Kind::Protocol,
        name: spec.name,
        version: spec.version,
        members,
        left_out: left_out.iter().map(ToString::to_string).collect(),
    })
}

/// A skill is its whole folder: SKILL.md, scripts and resources, bounded
/// like every package by the container's limits. Agent Skills clients
/// require the folder to carry the skill's name, so the build does too.
fn check_skill(env: &Env, dir: &Path, tree: &SourceTree, shown: &str) -> Result<Checked> {
    let Package::Skill(skill) = package_check::validated_package(env, Kind::Skill, tree, shown)?
    else {
        bail!("{shown} is not a skill package");
    };
    let doc = skill.skill;
    let folder = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    if folder.as_deref() != Some(doc.name.as_str()) {
        bail!(
            "{shown}: SKILL.md names the skill {:?}, so its folder must be named {:?} too (the Agent Skills specification)",
            doc.name.as_str(),
            doc.name.as_str()
        );
    }
    Ok(Checked {
        kind: Kind::Skill,
        name: doc.name,
        version: doc.version,
        members: tree.clone(),
        left_out: Vec::new(),
    })
}

/// `--prompt-key F`, else the package's key beside the signing key, made
/// (0600) when it does not exist yet. Returns the key, its path and
/// whether it was just created.
fn prompt_key(
    keys: &BuildKeys,
    signing_key: &Path,
    name: &PackageName,
) -> Result<(PromptKey, PathBuf, bool)> {
    // A --prompt-key file that does not exist yet is made: how a publisher
    // moves to a new key, so that grants revoked since do not open what
    // comes next.
    let path = keys
        .prompt_key
        .clone()
        .unwrap_or_else(|| keyfiles::prompt_key_path(signing_key, name));
    if path.exists() {
        return Ok((keyfiles::read_prompt_key(&path)?, path, false));
    }
    let key = PromptKey::generate()?;
    keyfiles::write_prompt_key(&path, &key)?;
    Ok((key, path, true))
}

/// `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
fn created_at() -> Result<Created> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(raw) => {
            let seconds: i64 = raw
                .trim()
                .parse()
                .with_context(|| format!("SOURCE_DATE_EPOCH={raw:?} is not a number of seconds"))?;
            Created::from_unix_seconds(seconds)
                .with_context(|| format!("SOURCE_DATE_EPOCH={raw:?} is out of range"))
        }
        Err(_) => Ok(Created::from_datetime(OffsetDateTime::now_utc())),
    }
}
