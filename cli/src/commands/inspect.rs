//! `inspect FILE`: what a container holds, and `verify FILE`: whether it is
//! intact and signed by the key it names, and (an agent) whether its lock
//! holds against it (`core::lockcheck::check`, offline).

use std::{path::Path, process::ExitCode};

use agentlang_core::{
    Kind,
    agent::{Capability, parse_agent},
    container::{Container, ENCRYPTED_PROMPT_PATH, PROMPT_PATH},
    lockcheck::{self, MemberHashes},
    package::{Members, Package, validate_package},
    prompt::{Format, parse_prompt},
    trust::AgentTrust,
    yaml::{YamlLimits, from_slice},
};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::{container_file, env::Env, install::PinnedTools, keyfiles, output::Output, trust};

/// One requested capability, as inspect shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionLine {
    pub capability: String,
    pub risk: String,
    pub required: bool,
}

/// Capabilities an agent.yaml asks for, required first, with their risk.
pub fn permission_lines(agent_yaml: &[u8]) -> Vec<PermissionLine> {
    let Ok(spec) = parse_agent(agent_yaml) else {
        return Vec::new();
    };
    let Some(perms) = spec.permissions else {
        return Vec::new();
    };
    let line = |c: &Capability, required| PermissionLine {
        capability: c.as_str().to_owned(),
        risk: c.risk().to_string(),
        required,
    };
    perms
        .required
        .iter()
        .map(|c| line(c, true))
        .chain(perms.optional.iter().map(|c| line(c, false)))
        .collect()
}

/// Capabilities a tool.yaml requires (all of them required), with their risk.
pub fn tool_permission_lines(tool_yaml: &[u8]) -> Vec<PermissionLine> {
    let Ok(spec) = agentlang_core::tool::parse_tool(tool_yaml) else {
        return Vec::new();
    };
    spec.permissions()
        .iter()
        .map(|c| PermissionLine {
            capability: c.as_str().to_owned(),
            risk: c.risk().to_string(),
            required: true,
        })
        .collect()
}

pub fn inspect(env: &Env, file: &Path, prompt_key: Option<&Path>) -> Result<ExitCode> {
    if file.is_dir() {
        return inspect_dir(env, file, prompt_key);
    }
    let c = container_file::read(file)?;
    let m = c.manifest();
    let permissions = match m.kind() {
        Kind::Agent => c
            .member("agent.yaml")
            .map(permission_lines)
            .unwrap_or_default(),
        Kind::Tool => c
            .member("tool.yaml")
            .map(tool_permission_lines)
            .unwrap_or_default(),
        // A protocol definition asks for no capabilities; a skill's
        // `allowed-tools` are the agent's to grant, not the skill's.
        Kind::Protocol | Kind::Skill => Vec::new(),
    };
    let lock: Option<Value> = c
        .member("agent.lock")
        .map(|b| from_slice::<Value>(b, &YamlLimits::default()))
        .transpose()
        .context("agent.lock in the container is not readable YAML")?;
    let trust = match m.kind() {
        Kind::Agent => agent_trust(env, &c, &file.display().to_string())?,
        Kind::Tool | Kind::Protocol | Kind::Skill => None,
    };
    let prompt = match prompt_key {
        Some(path) => Some(compile(&decrypted_prompt(
            &c,
            &keyfiles::read_prompt_key(path)?,
        )?)),
        None => c.member(PROMPT_PATH).map(compile),
    };
    let summary = json!({
        "file": file,
        "kind": m.kind(),
        "name": m.name(),
        "version": m.version(),
        "created": m.created(),
        "signer": m.signer(),
        "sha256": c.sha256().to_hex(),
        "size": c.size(),
        "members": m.files(),
        "lock": lock,
        "permissions": permissions,
        "trust": trust,
        "prompt": prompt,
        "prompt_encrypted": m.file(ENCRYPTED_PROMPT_PATH).is_some(),
        "prompt_mode": m.prompt_mode(),
        "prompt_key_id": m.prompt_key_id(),
    });
    env.out
        .emit(&summary, || render_inspect(&env.out, &summary));
    Ok(ExitCode::SUCCESS)
}

/// A folder: an install directory's agent container is inspected (the
/// folder says which); a package folder's agent is validated and its trust
/// picture shown, as it would be once built; anything else is refused
/// with what to pass instead.
fn inspect_dir(env: &Env, dir: &Path, prompt_key: Option<&Path>) -> Result<ExitCode> {
    let shown = dir.display().to_string();
    if dir.join(crate::install::MANIFEST_FILE).exists() {
        let manifest = crate::install::InstallManifest::read(dir)?;
        let file = dir.join(manifest.agent.file.as_str());
        if !env.out.json {
            crate::output::note(&format!(
                "{shown} is an install directory: inspecting its agent, {}",
                file.display()
            ));
        }
        return inspect(env, &file, prompt_key);
    }
    let tree = crate::source::read_dir(dir)?;
    let kind = crate::package_dir::detect_kind(&tree, &shown).with_context(|| {
        format!(
            "{shown} is neither an install directory (no {}) nor a package folder; inspect takes a .agent, .tool, .protocol or .skill file, an install directory or an agent's package folder",
            crate::install::MANIFEST_FILE
        )
    })?;
    if kind != Kind::Agent {
        bail!(
            "{shown} is a {kind} package folder; inspect shows a folder's trust picture only for agents: build it (`agentlang build {shown}`) and inspect the .{} file, or check it with `agentlang validate {shown}`",
            kind.extension()
        );
    }
    if prompt_key.is_some() {
        bail!(
            "--prompt-key opens a built container's sealed prompt; {shown} is a package folder whose prompt.yaml is in plaintext"
        );
    }
    let pkg = crate::package_check::validated(env, &tree, &shown)?;
    let tools = PinnedTools::new(env)?.capabilities(pkg.lock.as_ref());
    let t = AgentTrust::of(&pkg, &tools);
    let version = pkg
        .agent
        .version
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let summary = json!({
        "dir": dir,
        "kind": Kind::Agent,
        "name": pkg.agent.name,
        "version": version,
        "built": false,
        "trust": t,
    });
    env.out.emit(&summary, || {
        let mut lines = vec![
            format!(
                "agent {}@{} (package folder {shown}: valid, not built; `agentlang build {shown}` adds the signer, members and hashes)",
                env.out.bold(pkg.agent.name.as_str()),
                version
            ),
        ];
        lines.extend(trust::render_trust(&env.out, &t));
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

/// What the agent in `c` can do, with what its pinned tools ask for; an
/// agent that does not validate gets a warning and no picture, so the
/// rest of it can still be inspected.
fn agent_trust(env: &Env, c: &Container, shown: &str) -> Result<Option<AgentTrust>> {
    let pkg = match trust::container_package(c, shown) {
        Ok(pkg) => pkg,
        Err(e) => {
            eprintln!(
                "{} {}; what it can do is not shown",
                env.out.yellow("warning:"),
                crate::client::one_line(&format!("{e:#}"))
            );
            return Ok(None);
        }
    };
    let tools = PinnedTools::new(env)?.capabilities(pkg.lock.as_ref());
    Ok(Some(trust::container_trust(c, &pkg, &tools)))
}

/// Decrypts `prompt.yaml.enc`.
fn decrypted_prompt(
    c: &Container,
    key: &agentlang_core::crypt::PromptKey,
) -> Result<zeroize::Zeroizing<Vec<u8>>> {
    if c.manifest().file(ENCRYPTED_PROMPT_PATH).is_none() {
        bail!("this container has no encrypted prompt");
    }
    c.open_encrypted(ENCRYPTED_PROMPT_PATH, key)
        .context("the prompt key does not open this container's prompt")
}

/// The prompt as the model sees it (PromptLang compiled to Markdown); the
/// YAML as written if it does not compile, so inspect still shows it.
fn compile(prompt_yaml: &[u8]) -> String {
    match parse_prompt(prompt_yaml) {
        Ok(p) => p.compile(Format::Markdown),
        Err(_) => String::from_utf8_lossy(prompt_yaml).into_owned(),
    }
}

/// The human form of `inspect`'s summary.
pub fn render_inspect(out: &Output, s: &Value) -> String {
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut lines = vec![
        format!(
            "{} {}@{}",
            str_of(&s["kind"]),
            out.bold(&str_of(&s["name"])),
            str_of(&s["version"])
        ),
        format!("  created  {}", str_of(&s["created"])),
        format!("  signer   {}", str_of(&s["signer"])),
        format!("  sha256   {}", str_of(&s["sha256"])),
        format!("  size     {} bytes", s["size"]),
        "members:".to_owned(),
    ];
    for f in s["members"].as_array().into_iter().flatten() {
        let enc = if f["encrypted"].as_bool() == Some(true) {
            "  (encrypted)"
        } else {
            ""
        };
        lines.push(format!(
            "  {:>8}  {}{enc}",
            f["size"].as_u64().unwrap_or_default(),
            str_of(&f["path"])
        ));
    }
    if let Some(lock) = s["lock"].as_object() {
        let mut locked = Vec::new();
        for (section, label) in [
            ("tools", "tool"),
            ("agents", "subagent"),
            ("models", "model"),
        ] {
            for (name, entry) in lock
                .get(section)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let version = entry["version"]
                    .as_str()
                    .map(|v| format!("@{v}"))
                    .unwrap_or_default();
                locked.push(format!("  {label:<8}  {name}{version}"));
            }
        }
        if !locked.is_empty() {
            lines.push("lock:".to_owned());
            lines.extend(locked);
        }
    }
    let perms = s["permissions"].as_array().cloned().unwrap_or_default();
    if let Some(t) = trust::from_summary(&s["trust"]) {
        // The effective capabilities, with who asks, stand for the
        // permissions list.
        lines.extend(trust::render_trust(out, &t));
    } else if !perms.is_empty() {
        lines.push("permissions:".to_owned());
        for p in &perms {
            let risk = str_of(&p["risk"]);
            let painted = match risk.as_str() {
                "Critical" | "High" => out.red(&risk),
                "Medium" => out.yellow(&risk),
                _ => risk.clone(),
            };
            let optional = if p["required"].as_bool() == Some(true) {
                ""
            } else {
                " (optional)"
            };
            lines.push(format!(
                "  {:<15} {painted}{optional}",
                str_of(&p["capability"])
            ));
        }
    }
    match s["prompt"].as_str() {
        Some(prompt) => {
            lines.push("prompt:".to_owned());
            lines.extend(prompt.lines().map(|l| format!("  {l}")));
        }
        None if s["prompt_encrypted"].as_bool() == Some(true) => {
            lines.push(format!(
                "prompt:   sealed{} (pass --prompt-key to read it; its owners grant it with `agentlang grant`)",
                s["prompt_key_id"]
                    .as_str()
                    .map(|id| format!(" with key {id}"))
                    .unwrap_or_default()
            ));
        }
        None => {}
    }
    lines.join("\n")
}

/// One check `verify` makes.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    ok: bool,
    detail: String,
}

/// Proves the file is the version the registry's log recorded.
fn logged(env: &Env, c: &Container, file: &Path) -> Result<u64> {
    let m = c.manifest();
    let client = env.anonymous()?;
    let record: crate::tlog::LoggedRecord = client
        .send_json(client.get(&format!(
            "/api/v1/{}/{}/{}",
            m.kind().plural(),
            m.name(),
            m.version()
        )))
        .with_context(|| format!("looking up {} {}@{}", m.kind(), m.name(), m.version()))?;
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let sha256 = agentlang_core::digest::Sha256Digest::of(&bytes);
    crate::tlog::check_version(
        &client,
        &env.log,
        &env.out,
        (m.kind(), m.name(), m.version()),
        &sha256,
        record.log.map(|l| l.index),
    )
}

pub fn verify(env: &Env, file: &Path, pubkey: Option<&Path>) -> Result<ExitCode> {
    let mut checks = Vec::new();
    let container = match container_file::read(file) {
        Ok(c) => {
            checks.push(Check {
                check: "structure and hashes",
                ok: true,
                detail: format!("{} members match manifest.json", c.manifest().files().len()),
            });
            Some(c)
        }
        Err(e) => {
            checks.push(Check {
                check: "structure and hashes",
                ok: false,
                detail: format!("{e:#}"),
            });
            None
        }
    };
    if let Some(c) = &container {
        let signer = c.manifest().signer();
        let key = match pubkey {
            Some(path) => {
                keyfiles::read_public_key(path).map(|k| (k, format!("key from {}", path.display())))
            }
            None => env
                .anonymous()
                .and_then(|client| client.public_key(signer))
                .map(|rk| {
                    let note = match rk.revoked_at {
                        Some(at) => format!("registry key, revoked at {at}"),
                        None => "registry key".to_owned(),
                    };
                    (rk.key, note)
                }),
        };
        checks.push(match key {
            Ok((key, source)) => match c.verify_signature(&key) {
                Ok(()) => Check {
                    check: "signature",
                    ok: true,
                    detail: format!("signed by {signer} ({source})"),
                },
                Err(e) => Check {
                    check: "signature",
                    ok: false,
                    detail: e.to_string(),
                },
            },
            Err(e) => Check {
                check: "signature",
                ok: false,
                detail: format!("{e:#}"),
            },
        });
        // Asking the registry for the key, ask its log too: the bytes must
        // be the version the log recorded. Offline (--pubkey) checks the
        // file alone.
        if pubkey.is_none() {
            checks.push(match logged(env, c, file) {
                Ok(index) => Check {
                    check: "transparency log",
                    ok: true,
                    detail: format!("recorded as published at entry {index}, proved against a checkpoint that extends the one seen before"),
                },
                Err(e) => Check {
                    check: "transparency log",
                    ok: false,
                    detail: format!("{e:#}"),
                },
            });
        }
    }
    if let Some(c) = container
        .as_ref()
        .filter(|c| c.manifest().kind() == Kind::Agent)
    {
        checks.push(lock_check(c));
    }
    let valid = checks.iter().all(|c| c.ok);
    let summary = json!({
        "file": file,
        "valid": valid,
        "name": container.as_ref().map(|c| c.manifest().name().to_string()),
        "version": container.as_ref().map(|c| c.manifest().version().to_string()),
        "checks": checks,
    });
    env.out.emit(&summary, || {
        checks
            .iter()
            .map(|c| {
                let mark = if c.ok {
                    env.out.green("✓")
                } else {
                    env.out.red("✗")
                };
                format!("{mark} {}: {}", c.check, crate::client::one_line(&c.detail))
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    if valid {
        Ok(ExitCode::SUCCESS)
    } else {
        let failed: Vec<&str> = checks.iter().filter(|c| !c.ok).map(|c| c.check).collect();
        bail!(
            "{} failed verification: {}",
            file.display(),
            failed.join(", ")
        )
    }
}

/// An agent container's lock judged as publish judges it, the registry's
/// part aside (`install` asks the registry): every agent carries one that
/// hashes its members and locks its models, subagents and requirements.
fn lock_check(c: &Container) -> Check {
    let (ok, detail) = match validate_package(Kind::Agent, &Members::from_container(c)) {
        Ok(Package::Agent(pkg)) => {
            let problems = lockcheck::check(&pkg, &MemberHashes::from_manifest(c.manifest()), None);
            if problems.is_empty() {
                (
                    true,
                    "agent.lock hashes every member and locks every model, subagent and requirement"
                        .to_owned(),
                )
            } else {
                let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
                (false, problems.join("; "))
            }
        }
        Ok(_) => (false, "the container is not an agent".to_owned()),
        Err(d) => (
            false,
            format!(
                "the package does not validate: {}",
                d.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ),
    };
    Check {
        check: "lock",
        ok,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/tests/fixtures/agents/research-assistant/agent.yaml"
    );

    #[test]
    fn permissions_come_with_their_risk_required_first() {
        let lines = permission_lines(&std::fs::read(FIXTURE).unwrap());
        let shown: Vec<(&str, &str, bool)> = lines
            .iter()
            .map(|l| (l.capability.as_str(), l.risk.as_str(), l.required))
            .collect();
        assert_eq!(shown[0], ("network", "Low", true));
        assert!(shown.contains(&("camera", "High", true)));
        assert!(shown.contains(&("location", "High", false)));
        assert_eq!(shown.iter().filter(|l| l.2).count(), 5);
        assert_eq!(shown.len(), 9);
    }

    #[test]
    fn tool_permissions_carry_the_same_risks() {
        let yaml = b"name: shell_exec\nversion: 1.0.0\ndescription: Runs commands.\nkind: builtin\ninput_schema:\n  type: object\npermissions: [network, shell]\n";
        let lines = tool_permission_lines(yaml);
        let shown: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| (l.capability.as_str(), l.risk.as_str()))
            .collect();
        assert_eq!(shown, [("network", "Low"), ("shell", "High")]);
        assert!(lines.iter().all(|l| l.required));
    }

    #[test]
    fn permissions_of_an_unreadable_agent_are_empty() {
        assert!(permission_lines(b"name: [").is_empty());
    }

    #[test]
    fn inspect_renders_for_a_terminal_without_colour() {
        let out = Output {
            json: false,
            color: false,
            interactive: false,
            quiet: false,
        };
        let summary = json!({
            "kind": "agent",
            "name": "research-assistant",
            "version": "1.0.0",
            "created": "2023-11-14T22:13:20Z",
            "signer": "ab".repeat(32),
            "sha256": "cd".repeat(32),
            "size": 4242,
            "members": [
                {"path": "agent.lock", "size": 700, "sha256": "00"},
                {"path": "agent.yaml", "size": 5120, "sha256": "00"},
                {"path": "prompt.yaml.enc", "size": 2048, "sha256": "00", "encrypted": true},
            ],
            "lock": {
                "tools": {"web_search": {"version": "1.2.0"}},
                "agents": {"market-analyst": {"version": "1.0.0"}},
                "models": {"claude-sonnet-4": {"context_window": 200000}},
            },
            "permissions": [
                {"capability": "network", "risk": "Low", "required": true},
                {"capability": "camera", "risk": "High", "required": false},
            ],
            "prompt": null,
            "prompt_encrypted": true,
        });
        insta::assert_snapshot!(render_inspect(&out, &summary));
    }
}
