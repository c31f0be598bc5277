//! `run DIR|NAME[@REQ] --prompt TEXT`: a verified agent, checked against the
//! host, handed to a runtime.
//!
//! 1. The agent: an install directory (verified offline), a package
//!    directory (validated; its locked tools and skills fetched and verified
//!    into a temporary folder), or NAME[@REQ], installed first (`install`'s
//!    checks).
//! 2. The host check: a refused required capability stops here.
//! 3. The prompt: decrypted (with `--prompt-key`, or the key `build` made
//!    beside your signing key) and compiled to markdown or XML.
//! 4. The hand-off (`core::handoff`, format `agentlang.handoff/1`) goes to
//!    the runtime on standard input and in the file `AGENTLANG_HANDOFF`
//!    names; the runtime's exit code is run's. Without a runtime, the
//!    hand-off is printed.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
};

use agentlang_core::{
    Kind,
    container::{Container, ENCRYPTED_PROMPT_PATH, PROMPT_PATH},
    handoff::{self, HandoffInput, InstalledSkill, InstalledTool},
    host,
    lockcheck::{self, MemberHashes},
    package::{AgentPackage, PROMPT_FILE},
    prompt::{Format, Prompt, parse_prompt},
};
use anyhow::{Context, Result, bail};

use crate::{
    args::{PromptFormat, RunArgs},
    config,
    env::Env,
    grants, hosts,
    install::{self, InstallRequest, LoadedSkill, LoadedTool},
    package_check, package_dir, source,
    spec::PackageReq,
};

/// What the runtime is given to run, wherever it came from.
struct Prepared {
    package: AgentPackage,
    agent_hash: Option<String>,
    prompt: Prompt,
    tools: Vec<LoadedTool>,
    /// Skill packages, each unpacked under `tools_base`.
    skills: Vec<LoadedSkill>,
    /// The install directory, or the package directory.
    dir: PathBuf,
    /// Where the tools' `tools/NAME@VERSION.tool` files (and the skills'
    /// `skills/NAME/` folders) are.
    tools_base: PathBuf,
    /// Holds a package directory's fetched tools until the runtime is done.
    _scratch: Option<tempfile::TempDir>,
}

fn compiled_prompt(bytes: &[u8], what: &str) -> Result<Prompt> {
    parse_prompt(bytes).map_err(|d| {
        anyhow::anyhow!(
            "{what} is not a valid prompt: {}",
            d.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// prompt.yaml of a container: in plaintext, or opened
/// (`grants::open_sealed_prompt`: the key given, the publisher's own, or a
/// grant's).
fn container_prompt(
    env: &Env,
    args: &RunArgs,
    c: &Container,
    package: &AgentPackage,
) -> Result<Prompt> {
    let label = format!("{}@{}", c.manifest().name(), c.manifest().version());
    if let Some(plain) = c.member(PROMPT_PATH) {
        return compiled_prompt(plain, &format!("{label}'s prompt.yaml"));
    }
    if c.manifest().file(ENCRYPTED_PROMPT_PATH).is_none() {
        bail!("{label} has no prompt");
    }
    let plain =
        grants::open_sealed_prompt(env, args.prompt_key.as_deref(), c, package.lock.as_ref())?;
    compiled_prompt(&plain, &format!("{label}'s decrypted prompt"))
}

fn from_install(env: &Env, args: &RunArgs, loaded: install::LoadedInstall) -> Result<Prepared> {
    let prompt = container_prompt(env, args, &loaded.agent, &loaded.package)?;
    Ok(Prepared {
        agent_hash: Some(loaded.manifest.agent.sha256.to_prefixed()),
        prompt,
        tools_base: loaded.dir.clone(),
        dir: loaded.dir,
        package: loaded.package,
        tools: loaded.tools,
        skills: loaded.skills,
        _scratch: None,
    })
}

/// A package directory: validated as `build` would, its lock checked
/// against its files, its locked tools fetched and verified.
fn from_source(env: &Env, dir: &Path) -> Result<Prepared> {
    let shown = dir.display().to_string();
    let tree = source::read_dir(dir)?;
    if package_dir::detect_kind(&tree, &shown)? != Kind::Agent {
        bail!("{shown} is a tool; only agents run");
    }
    let package = package_check::validated(env, &tree, &shown)?;
    // The lock judged offline first (`lockcheck::check`, as validate and
    // build judge it), so a stale lock is named before any download.
    let (members, _) = package_dir::agent_members(&tree, &package);
    let hashes = MemberHashes::from_tree(&members);
    let stale = lockcheck::check(&package, &hashes, None);
    if package.lock.is_none() {
        bail!("{shown} has no agent.lock; run `agentlang lock {shown}`");
    }
    if !stale.is_empty() {
        bail!(
            "{shown}/agent.lock does not match the package ({}); run `agentlang lock {shown}`",
            stale
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let scratch = tempfile::Builder::new()
        .prefix("agentlang-run-")
        .tempdir()
        .context("creating a temporary folder for the tools")?;
    let label = format!("{} in {shown}", package.agent.name);
    let (tools, skills) = install::fetch_locked(env, &package, &hashes, &label, scratch.path())?;
    let bytes = tree
        .get(PROMPT_FILE)
        .with_context(|| format!("{shown} has no prompt.yaml"))?;
    let prompt = compiled_prompt(bytes, &format!("{shown}/prompt.yaml"))?;
    Ok(Prepared {
        package,
        agent_hash: None,
        prompt,
        tools,
        skills,
        dir: dir.to_path_buf(),
        tools_base: scratch.path().to_path_buf(),
        _scratch: Some(scratch),
    })
}

fn prepare(env: &Env, args: &RunArgs) -> Result<Prepared> {
    let as_path = Path::new(&args.target);
    if as_path.is_dir() {
        if as_path.join(install::MANIFEST_FILE).exists() {
            return from_install(env, args, install::load_verified(as_path)?);
        }
        return from_source(env, as_path);
    }
    let wanted = PackageReq::parse(&args.target).with_context(|| {
        format!(
            "{:?} is neither a directory nor NAME[@REQUIREMENT]",
            args.target
        )
    })?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(wanted.name.as_str()));
    let done = install::install(
        env,
        &InstallRequest {
            wanted: &wanted,
            dir: &dir,
            frozen: false,
            // `run NAME` runs what it installs: it never accepts new powers
            // silently; `install --accept-risk` does.
            accept_risk: false,
            host: None,
            prompt_key: args.prompt_key.as_deref(),
        },
    )?;
    if done.changed && !env.out.json {
        eprintln!(
            "{} installed {}@{} into {}",
            env.out.green("✓"),
            done.install.manifest.agent.name,
            done.install.manifest.agent.version,
            dir.display()
        );
    }
    from_install(env, args, done.install)
}

fn prompt_format(env: &Env, args: &RunArgs) -> Result<Format> {
    if let Some(f) = args.prompt_format {
        return Ok(match f {
            PromptFormat::Markdown => Format::Markdown,
            PromptFormat::Xml => Format::Xml,
        });
    }
    match &env.ctx.runtime.prompt_format {
        Some(f) => f
            .parse()
            .with_context(|| format!("[runtime] prompt_format = {f:?} in config.toml")),
        None => Ok(Format::Markdown),
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

pub fn run(env: &Env, args: &RunArgs) -> Result<ExitCode> {
    let host = hosts::resolve(&args.host)?;
    let format = prompt_format(env, args)?;
    let prepared = prepare(env, args)?;
    let specs: Vec<_> = prepared.tools.iter().map(|t| &t.spec).collect();
    let report = host::check(&host, &host::requests(&prepared.package, &specs));
    if let Some(refusal) = report.refusal_summary() {
        bail!("{refusal}");
    }

    let base = absolute(&prepared.tools_base);
    let paths: Vec<String> = prepared
        .tools
        .iter()
        .map(|t| base.join(t.artifact.file.as_str()).display().to_string())
        .collect();
    let lock = prepared.package.lock.as_ref();
    let mut installed = Vec::new();
    for (t, path) in prepared.tools.iter().zip(&paths) {
        let Some((name, locked)) = lock.and_then(|l| {
            l.tools
                .iter()
                .find(|(n, _)| n.normalized() == t.artifact.name.normalized())
        }) else {
            bail!("{} is installed but not locked", t.artifact.name);
        };
        installed.push(InstalledTool {
            name,
            locked,
            spec: &t.spec,
            path,
        });
    }
    let skill_paths: Vec<String> = prepared
        .skills
        .iter()
        .map(|s| base.join(s.folder.as_str()).display().to_string())
        .collect();
    let mut skills = Vec::new();
    for (s, path) in prepared.skills.iter().zip(&skill_paths) {
        let Some((name, locked)) = lock.and_then(|l| {
            l.skills
                .iter()
                .find(|(n, _)| n.normalized() == s.artifact.name.normalized())
        }) else {
            bail!("skill {} is installed but not locked", s.artifact.name);
        };
        skills.push(InstalledSkill {
            name,
            locked,
            doc: &s.doc,
            path,
        });
    }
    let install_dir = absolute(&prepared.dir).display().to_string();
    let env_lookup = |name: &str| std::env::var(name).ok();
    let doc = handoff::build(&HandoffInput {
        package: &prepared.package,
        agent_hash: prepared.agent_hash.as_deref(),
        prompt: &prepared.prompt,
        format,
        user_prompt: &args.prompt,
        tools: &installed,
        skills: &skills,
        host: &report,
        install_dir: &install_dir,
        env: &env_lookup,
    })?;
    let json = serde_json::to_vec_pretty(&doc).context("serializing the hand-off")?;

    let runtime = args
        .runtime
        .clone()
        .or_else(|| config::env_nonempty("AGENTLANG_RUNTIME"))
        .or_else(|| env.ctx.runtime.command.clone());
    let Some(runtime) = runtime else {
        let mut stdout = std::io::stdout().lock();
        let printed = stdout
            .write_all(&json)
            .and_then(|()| stdout.write_all(b"\n"))
            .and_then(|()| stdout.flush());
        match printed {
            // `| head` closing the pipe early is the reader's choice.
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(e).context("printing the hand-off");
            }
            _ => {}
        }
        if !env.out.json {
            eprintln!(
                "no runtime configured: this is the hand-off a runtime would get on standard input.\n\
                 Give one with --runtime CMD, AGENTLANG_RUNTIME=CMD, or in {}:\n  [runtime]\n  command = \"CMD\"",
                env.ctx.dir.join("config.toml").display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    hand_over(&runtime, &json)
}

/// Runs the runtime with the hand-off on standard input and in a file
/// (readable by its owner only: it may hold MCP secrets from the
/// environment), and passes its exit code through.
fn hand_over(runtime: &str, json: &[u8]) -> Result<ExitCode> {
    let mut file = tempfile::Builder::new()
        .prefix("agentlang-handoff-")
        .suffix(".json")
        .tempfile()
        .context("creating the hand-off file")?;
    file.write_all(json)
        .and_then(|()| file.flush())
        .context("writing the hand-off file")?;
    let mut child = shell(runtime)
        .env("AGENTLANG_HANDOFF", file.path())
        .stdin(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting the runtime {runtime:?}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A runtime that reads the file instead may close its input early;
        // that is its right, not an error.
        let bytes = json.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for the runtime {runtime:?}"))?;
    drop(file);
    Ok(exit_code(status))
}

#[cfg(unix)]
fn shell(command: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(command);
    c
}

#[cfg(not(unix))]
fn shell(command: &str) -> Command {
    let mut c = Command::new("cmd");
    c.arg("/C").arg(command);
    c
}

/// The runtime's exit code; a runtime killed by a signal exits 128 + the
/// signal, as shells report it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return ExitCode::from(u8::try_from(128 + signal).unwrap_or(1));
        }
    }
    ExitCode::FAILURE
}
