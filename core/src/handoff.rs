//! The runtime hand-off: the one JSON document `agentlang run` gives a
//! runtime (on standard input, and in the file `AGENTLANG_HANDOFF` names).
//! It holds everything the spec's "Runtime Requirements" ask a runtime to
//! know, already verified: the agent spec and its subagents and skills, the
//! user's prompt, the compiled system prompt, the locked tools with their
//! schemas and kinds, MCP servers with their environment resolved, what the
//! host granted and in which modes, and the constraints with the spec's
//! defaults filled in.
//!
//! The document is versioned by its `format` member
//! ([`HANDOFF_FORMAT`]); its JSON Schema is [`SCHEMA`]
//! (`core/schemas/handoff-v1.schema.json`). A new member that old runtimes
//! can ignore keeps the format; anything else changes it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::{
    agent::{AgentSpec, Constraints, Placeholder, placeholders},
    host::HostReport,
    lockfile::{LockedModel, Lockfile},
    package::AgentPackage,
    prompt::{Format, Prompt},
    tool::ToolSpec,
};

/// The `format` of the documents this version writes.
pub const HANDOFF_FORMAT: &str = "agentlang.handoff/1";

/// The JSON Schema (2020-12) of the hand-off.
pub const SCHEMA: &str = include_str!("../schemas/handoff-v1.schema.json");

/// The spec's default for `constraints.limits.max_delegation_depth`.
pub const DEFAULT_MAX_DELEGATION_DEPTH: u64 = 3;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffError {
    #[error(
        "MCP server {server:?} needs the environment variable {variable} (its env {key} is {template:?}); set it and run again"
    )]
    MissingEnv {
        server: String,
        key: String,
        template: String,
        variable: String,
    },
    #[error("MCP server {server:?}: env {key}: {message}")]
    BadTemplate {
        server: String,
        key: String,
        message: String,
    },
}

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    /// Always [`HANDOFF_FORMAT`] for this version.
    pub format: String,
    pub agent: HandoffAgent,
    pub prompt: HandoffPrompt,
    /// The locked registry tools, by name.
    pub tools: Vec<HandoffTool>,
    /// MCP servers with `{{.env.NAME}}` resolved from the environment.
    pub mcp_servers: BTreeMap<String, HandoffMcpServer>,
    /// The typed `render_*` tools the agent's UI components generate, in
    /// the MCP tool shape: the runtime offers them to the model and hands
    /// their calls to its renderer.
    #[serde(default)]
    pub render_tools: Vec<crate::agent::ui::RenderTool>,
    /// The host's answer for every capability asked for.
    pub host: HostReport,
    pub constraints: EffectiveConstraints,
    /// Models the agent declares, with what the lock recorded about each.
    pub models: BTreeMap<String, HandoffModel>,
    /// Where the verified agent and tools are on disk.
    pub install_dir: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffAgent {
    pub name: String,
    pub version: String,
    /// SHA-256 of the agent's container, `sha256:<hex>`; absent when run
    /// from a source directory.
    pub hash: Option<String>,
    /// agent.yaml, validated, as JSON.
    pub spec: Json,
    /// Co-located subagents by name, each validated, as JSON.
    pub subagents: BTreeMap<String, Json>,
    /// Skills by name.
    pub skills: BTreeMap<String, HandoffSkill>,
    /// ux.yaml, when present.
    pub ux: Option<Json>,
}

/// A co-located skill (`skills/<name>/SKILL.md` in the agent), or a
/// published skill package the lock pins: then `version`, `hash`,
/// `requirement` and `path` say which one and where its folder is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffSkill {
    pub description: String,
    /// Tools the skill restricts the agent to; empty means no restriction.
    pub allowed_tools: Vec<String>,
    /// The SKILL.md body (markdown).
    pub body: String,
    /// The locked version of a published skill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `sha256:<hex>` of a published skill's `.skill` container, as locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The agent's requirement for a published skill, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// The unpacked folder of a published skill (absolute): SKILL.md with
    /// its scripts and resources, as any Agent Skills client reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffPrompt {
    /// What the user asked (`--prompt`).
    pub user: String,
    /// prompt.yaml compiled for the runtime.
    pub system: String,
    /// `markdown` or `xml`.
    pub format: Format,
    /// The role prompt.yaml declares (`user` or `system`).
    pub role: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffTool {
    pub name: String,
    pub version: String,
    /// `sha256:<hex>` of the `.tool` container, as locked.
    pub hash: String,
    /// builtin, mcp, http or bash.
    pub kind: String,
    pub description: String,
    pub input_schema: Json,
    pub output_schema: Option<Json>,
    /// Capabilities the tool requires.
    pub permissions: Vec<String>,
    /// Names of the locked tools this one depends on.
    pub dependencies: Vec<String>,
    /// The agent's requirement, when the agent (not just another tool)
    /// asked for it.
    pub requirement: Option<String>,
    /// The agent's `config` for this tool, as written.
    pub config: Option<Json>,
    /// Where the tool's container is on disk (an absolute path).
    pub path: String,
    /// How the runtime reaches it, as tool.yaml binds it: a `kind: mcp`
    /// tool's `mcp` (server.json's `packages`/`remotes`), a `kind: http`
    /// tool's `http`, a `kind: bash` tool's `bash`. Absent when tool.yaml
    /// gives none (the runtime then knows the tool by its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<Json>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffMcpServer {
    pub command: String,
    pub args: Vec<String>,
    /// Values with every `{{.env.NAME}}` replaced.
    pub env: BTreeMap<String, String>,
    /// The whitelist of the server's tools; `null` exposes all.
    pub tools: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffModel {
    pub provider: String,
    pub options: serde_json::Map<String, Json>,
    /// What the lock recorded (context window, tool support, prices).
    pub locked: Option<LockedModel>,
}

/// The constraints a runtime enforces, with the spec's defaults: `null`
/// means unlimited (or none), except `max_delegation_depth`, whose default
/// is 3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectiveConstraints {
    pub budget: EffectiveBudget,
    pub limits: EffectiveLimits,
    pub sandbox: EffectiveSandbox,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectiveBudget {
    pub max_cost_usd: Option<f64>,
    pub tolerance: Option<f64>,
    pub input_1m_price: Option<f64>,
    pub output_1m_price: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveLimits {
    /// `null` (or 0 in agent.yaml): unlimited.
    pub max_turns: Option<u64>,
    pub max_delegation_depth: u64,
    /// Seconds per execution; `null`: none.
    pub timeout: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveSandbox {
    /// Bytes; `null`: unlimited.
    pub disk_quota: Option<u64>,
    /// Seconds per tool call; `null`: unlimited.
    pub max_exec_time: Option<u64>,
    /// Empty: no restriction declared.
    pub allowed_paths: Vec<String>,
    pub allowed_urls: Vec<String>,
}

impl EffectiveConstraints {
    /// The agent's constraints with the spec's defaults for what it leaves
    /// out.
    pub fn of(constraints: Option<&Constraints>) -> Self {
        let budget = constraints.and_then(|c| c.budget.as_ref());
        let limits = constraints.and_then(|c| c.limits.as_ref());
        let sandbox = constraints.and_then(|c| c.sandbox.as_ref());
        Self {
            budget: EffectiveBudget {
                max_cost_usd: budget.and_then(|b| b.max_cost_usd),
                tolerance: budget.and_then(|b| b.tolerance),
                input_1m_price: budget.and_then(|b| b.input_1m_price),
                output_1m_price: budget.and_then(|b| b.output_1m_price),
            },
            limits: EffectiveLimits {
                // The spec: `max_turns: 0` means unlimited, as does absence.
                max_turns: limits.and_then(|l| l.max_turns).filter(|t| *t > 0),
                max_delegation_depth: limits
                    .and_then(|l| l.max_delegation_depth)
                    .unwrap_or(DEFAULT_MAX_DELEGATION_DEPTH),
                timeout: limits.and_then(|l| l.timeout),
            },
            sandbox: EffectiveSandbox {
                disk_quota: sandbox.and_then(|s| s.disk_quota),
                max_exec_time: sandbox.and_then(|s| s.max_exec_time),
                allowed_paths: sandbox.map(|s| s.allowed_paths.clone()).unwrap_or_default(),
                allowed_urls: sandbox.map(|s| s.allowed_urls.clone()).unwrap_or_default(),
            },
        }
    }
}

/// One locked tool as the hand-off needs it: its lock entry, its validated
/// tool.yaml and where its container is.
#[derive(Debug, Clone, Copy)]
pub struct InstalledTool<'a> {
    pub name: &'a crate::PackageName,
    pub locked: &'a crate::lockfile::LockedTool,
    pub spec: &'a ToolSpec,
    /// Where its container is (absolute).
    pub path: &'a str,
}

/// One locked skill package as the hand-off needs it: its lock entry, its
/// validated SKILL.md and where its folder is.
#[derive(Debug, Clone, Copy)]
pub struct InstalledSkill<'a> {
    pub name: &'a crate::PackageName,
    pub locked: &'a crate::lockfile::LockedSkill,
    pub doc: &'a crate::agentskills::SkillDoc,
    /// Where its unpacked folder is (absolute).
    pub path: &'a str,
}

/// What [`build`] needs.
#[derive(Clone, Copy)]
pub struct HandoffInput<'a> {
    pub package: &'a AgentPackage,
    /// `sha256:<hex>` of the agent's container, when run from one.
    pub agent_hash: Option<&'a str>,
    pub prompt: &'a Prompt,
    pub format: Format,
    pub user_prompt: &'a str,
    pub tools: &'a [InstalledTool<'a>],
    /// The skill packages the lock pins.
    pub skills: &'a [InstalledSkill<'a>],
    pub host: &'a HostReport,
    pub install_dir: &'a str,
    /// The environment, for `{{.env.NAME}}` (core reads no environment).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl std::fmt::Debug for HandoffInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandoffInput")
            .field("agent", &self.package.agent.name)
            .field("install_dir", &self.install_dir)
            .finish_non_exhaustive()
    }
}

fn to_json<T: Serialize>(value: &T) -> Json {
    // The models serialize plain data only; they cannot fail.
    serde_json::to_value(value).unwrap_or(Json::Null)
}

/// Replaces every `{{.env.NAME}}` in `template`.
fn resolve_env(
    server: &str,
    key: &str,
    template: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, HandoffError> {
    let bad = |message: String| HandoffError::BadTemplate {
        server: server.to_owned(),
        key: key.to_owned(),
        message,
    };
    // Syntax first (agent validation already checked it; this is the
    // runtime's own guard).
    let found = placeholders(template).map_err(|e| bad(e.to_string()))?;
    if let Some(p) = found.iter().find(|p| !matches!(p, Placeholder::Env(_))) {
        return Err(bad(format!("{p:?} is not an environment placeholder")));
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| bad("unclosed placeholder".to_owned()))?;
        let inner = after[..end].trim();
        let variable = inner.strip_prefix(".env.").unwrap_or(inner);
        let value = env(variable).ok_or_else(|| HandoffError::MissingEnv {
            server: server.to_owned(),
            key: key.to_owned(),
            template: template.to_owned(),
            variable: variable.to_owned(),
        })?;
        out.push_str(&value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Builds the hand-off. Fails only on an MCP environment variable that is
/// not set.
pub fn build(input: &HandoffInput<'_>) -> Result<Handoff, HandoffError> {
    let pkg = input.package;
    let agent: &AgentSpec = &pkg.agent;
    let lock: Option<&Lockfile> = pkg.lock.as_ref();

    let mut mcp_servers = BTreeMap::new();
    for (name, server) in &agent.mcp_servers {
        let mut env = BTreeMap::new();
        for (key, template) in &server.env {
            env.insert(key.clone(), resolve_env(name, key, template, input.env)?);
        }
        mcp_servers.insert(
            name.clone(),
            HandoffMcpServer {
                command: server.command.clone(),
                args: server.args.clone(),
                env,
                tools: server.tools.clone(),
            },
        );
    }

    // An interface's requirement and `config` go to the provider the lock
    // records for it.
    let requirements = match lock {
        Some(lock) => crate::interfaces::requirements_through(lock, &pkg.tool_requirements()),
        None => pkg.tool_requirements(),
    };
    let provider_of = |decl: &crate::PackageName| -> crate::PackageName {
        lock.and_then(|l| {
            l.interfaces
                .iter()
                .find(|(i, _)| i.normalized() == decl.normalized())
        })
        .map_or_else(|| decl.clone(), |(_, p)| p.clone())
    };
    let tools = input
        .tools
        .iter()
        .map(|t| {
            let config = agent
                .tools
                .iter()
                .find(|d| provider_of(&d.name).normalized() == t.name.normalized())
                .and_then(|d| d.config.as_ref())
                .map(to_json);
            let binding = match (t.spec.mcp(), t.spec.http(), t.spec.bash()) {
                (Some(mcp), _, _) => Some(serde_json::json!({ "mcp": mcp })),
                (_, Some(http), _) => Some(serde_json::json!({ "http": http })),
                (_, _, Some(bash)) => Some(serde_json::json!({ "bash": bash })),
                _ => None,
            };
            HandoffTool {
                binding,
                name: t.name.to_string(),
                version: t.locked.version.to_string(),
                hash: t.locked.hash.to_prefixed(),
                kind: t.spec.kind().to_string(),
                description: t.spec.description().to_owned(),
                input_schema: t.spec.input_schema().clone(),
                output_schema: t.spec.output_schema().cloned(),
                permissions: t
                    .spec
                    .permissions()
                    .iter()
                    .map(|c| c.as_str().to_owned())
                    .collect(),
                dependencies: t
                    .locked
                    .dependencies
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                requirement: requirements
                    .iter()
                    .find(|(n, _)| n.normalized() == t.name.normalized())
                    .map(|(_, r)| {
                        r.as_ref()
                            .map_or_else(|| "*".to_owned(), ToString::to_string)
                    }),
                config,
                path: t.path.to_owned(),
            }
        })
        .collect();

    let mut models = BTreeMap::new();
    for spec in std::iter::once(agent).chain(pkg.subagents.values()) {
        for (id, model) in &spec.models {
            models.entry(id.clone()).or_insert_with(|| HandoffModel {
                provider: model.provider.clone(),
                options: model.options.clone(),
                locked: lock.and_then(|l| {
                    l.models
                        .iter()
                        .find(|(m, _)| m.as_str() == id)
                        .map(|(_, m)| m.clone())
                }),
            });
        }
    }

    Ok(Handoff {
        format: HANDOFF_FORMAT.to_owned(),
        agent: HandoffAgent {
            name: agent.name.to_string(),
            version: agent
                .version
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            hash: input.agent_hash.map(str::to_owned),
            spec: to_json(agent),
            subagents: pkg
                .subagents
                .values()
                .map(|s| (s.name.to_string(), to_json(s)))
                .collect(),
            skills: pkg
                .skills
                .iter()
                .map(|(name, s)| {
                    (
                        name.to_string(),
                        HandoffSkill {
                            description: s.description.clone(),
                            allowed_tools: s.allowed_tools.clone(),
                            body: s.body.clone(),
                            version: None,
                            hash: None,
                            requirement: None,
                            path: None,
                        },
                    )
                })
                .chain(input.skills.iter().map(|s| {
                    (
                        s.name.to_string(),
                        HandoffSkill {
                            description: s.doc.description.clone(),
                            // The specification's one space-separated string.
                            allowed_tools: s
                                .doc
                                .allowed_tools
                                .as_deref()
                                .unwrap_or_default()
                                .split_whitespace()
                                .map(str::to_owned)
                                .collect(),
                            body: s.doc.body.clone(),
                            version: Some(s.locked.version.to_string()),
                            hash: Some(s.locked.hash.to_prefixed()),
                            requirement: Some(s.locked.requirement.to_string()),
                            path: Some(s.path.to_owned()),
                        },
                    )
                }))
                .collect(),
            ux: pkg.ux.as_ref().map(to_json),
        },
        prompt: HandoffPrompt {
            user: input.user_prompt.to_owned(),
            system: input.prompt.compile(input.format),
            format: input.format,
            role: input.prompt.role().as_str().to_owned(),
        },
        tools,
        mcp_servers,
        render_tools: crate::agent::ui::render_tools(agent),
        host: input.host.clone(),
        constraints: EffectiveConstraints::of(agent.constraints.as_ref()),
        models,
        install_dir: input.install_dir.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_placeholders_are_resolved_or_named_when_missing() {
        let env = |k: &str| (k == "TOKEN").then(|| "s3cr3t".to_owned());
        assert_eq!(
            resolve_env("Stripe", "KEY", "Bearer {{.env.TOKEN}}!", &env).unwrap(),
            "Bearer s3cr3t!"
        );
        assert_eq!(resolve_env("S", "K", "plain", &env).unwrap(), "plain");
        let err = resolve_env("Stripe", "KEY", "{{.env.MISSING}}", &env).unwrap_err();
        assert!(
            matches!(&err, HandoffError::MissingEnv { variable, .. } if variable == "MISSING"),
            "{err}"
        );
        assert!(resolve_env("S", "K", "{{value}}", &env).is_err());
    }

    #[test]
    fn constraints_default_as_the_spec_says() {
        let c = EffectiveConstraints::of(None);
        assert_eq!(c.limits.max_delegation_depth, 3);
        assert_eq!(c.limits.max_turns, None);
        assert_eq!(c.limits.timeout, None);
        assert_eq!(c.budget.max_cost_usd, None);
        assert_eq!(c.sandbox.disk_quota, None);
        assert!(c.sandbox.allowed_paths.is_empty());
    }

    #[test]
    fn the_schema_is_a_valid_json_schema() {
        let schema: Json = serde_json::from_str(SCHEMA).unwrap();
        jsonschema::meta::validate(&schema).unwrap();
        assert_eq!(schema["properties"]["format"]["const"], HANDOFF_FORMAT);
    }
}
