//! What an agent version can do, computed once for every interface that
//! shows it (the API's version record, the catalog, `inspect`, `diff`,
//! `lock --update`): its effective capabilities, each with where it comes
//! from, and every declaration that reaches outside the agent (MCP
//! servers, bash tools, HTTP tools, locked tools, the crew, injected
//! context, the sandbox) with the render tools its UI generates.
//!
//! Effective capabilities are the declared `permissions` of the agent and
//! its subagents, what their declarations imply ([`host::implied`]), and
//! the `permissions` of every locked tool (the lock lists transitive tools
//! too). The risk the catalog and search show is the highest of them.

mod diff;
mod statements;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

pub use diff::{ChangeClass, ChangeKind, TrustChange, TrustDiff, diff};
pub use statements::Statement;

use crate::{
    agent::{
        AgentSpec, Capability, CapabilityCategory, HttpAuth, HttpMethod, Os, PermissionMode,
        RiskLevel,
        ui::{RenderTool, render_tools},
    },
    host::{self, Request, Requester, ToolAt, ToolCapabilities},
    package::AgentPackage,
};

/// One capability the agent can use, whoever asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EffectiveCapability {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "shell"))]
    pub capability: Capability,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "system"))]
    pub category: CapabilityCategory,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "high"))]
    pub risk: RiskLevel,
    /// Required by anyone that asks for it.
    pub required: bool,
    /// The mode the agent asks for, when it names one.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "on_demand"))]
    pub mode: Option<PermissionMode>,
    /// Who asks: the agent or a subagent (`permissions`), a locked tool
    /// (`web_fetch@1.0.3`), or a declaration that implies it.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<RequesterSchema>))]
    pub sources: Vec<Requester>,
    /// No `permissions` list asks for it: a host grants it unasked.
    pub undeclared: bool,
}

impl EffectiveCapability {
    fn of(r: Request) -> Self {
        Self {
            capability: r.capability,
            category: r.capability.category(),
            risk: r.capability.risk(),
            required: r.required,
            mode: r.mode,
            undeclared: r.undeclared(),
            sources: r.requested_by,
        }
    }

    /// `required`, `optional, on_demand`.
    pub fn need(&self) -> String {
        let need = if self.required {
            "required"
        } else {
            "optional"
        };
        match self.mode {
            Some(mode) => format!("{need}, {}", mode.as_str()),
            None => need.to_owned(),
        }
    }

    /// Back to what [`host::check`] reads.
    pub fn request(&self) -> Request {
        Request {
            capability: self.capability,
            required: self.required,
            mode: self.mode,
            requested_by: self.sources.clone(),
        }
    }
}

/// Who asks for a capability.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[schema(as = Requester)]
#[allow(dead_code)]
pub struct RequesterSchema {
    /// `agent`, `subagent` or `tool` ask in `permissions` or a tool.yaml;
    /// the others are declarations that imply the capability.
    kind: RequesterKind,
    /// As declared: `stripe-ops`, `web_fetch@1.0.3`, `convert_video`,
    /// `Stripe`, `location`.
    #[schema(example = "web_fetch@1.0.3")]
    name: String,
}

#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum RequesterKind {
    Agent,
    Subagent,
    Tool,
    BashTool,
    HttpTool,
    McpServer,
    Context,
}

/// An `mcp_servers` entry: a command run on the user's machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpServerFacts {
    pub name: String,
    /// The subagent that declares it; absent for the agent itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_by: Option<String>,
    pub command: String,
    pub args: Vec<String>,
    /// The names of the environment variables it is given; never values.
    pub env: Vec<String>,
    /// The tools the agent may call on it; `null`: all of them.
    pub tools: Option<Vec<String>>,
}

impl McpServerFacts {
    /// `npx -y @stripe/mcp --tools=all`.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One dependency of a bash tool and how it is installed, per system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BashDependencyFacts {
    pub name: String,
    pub check: Option<String>,
    /// `darwin`, `linux` or `windows` to the install command.
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, String>))]
    pub install: BTreeMap<Os, String>,
}

/// A `bash_tools` entry: a shell command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BashToolFacts {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_by: Option<String>,
    pub command: String,
    pub dependencies: Vec<BashDependencyFacts>,
}

/// An `http_tools` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HttpToolFacts {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_by: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "POST"))]
    pub method: HttpMethod,
    pub endpoint: String,
    /// `none`, `bearer`, `basic` or `api_key`; absent when not stated.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "bearer"))]
    pub auth: Option<HttpAuth>,
    /// Providers whose OAuth token it needs (`twitter` for
    /// `twitter_token: true`).
    pub oauth: Vec<String>,
}

/// A locked tool and what its tool.yaml asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LockedToolFacts {
    /// `web_fetch@1.0.3`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "web_fetch@1.0.3"))]
    pub tool: ToolAt,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub capabilities: Vec<Capability>,
    /// How the pinned version was published, when known: `lock --update`
    /// refuses weaker evidence than the previous pin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::provenance::Evidence>,
}

/// A subagent of the package, with what it asks for itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubagentFacts {
    pub name: String,
    /// Its file in the package.
    pub path: String,
    pub description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub capabilities: Vec<Capability>,
}

/// One member of the static crew.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CrewMemberFacts {
    pub path: String,
    pub task: Option<String>,
    pub depends_on: Vec<String>,
}

/// The static crew: `sequential`, `parallel` or `hierarchical`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CrewFacts {
    pub process: String,
    pub members: Vec<CrewMemberFacts>,
}

/// The limits the agent sets itself (`constraints`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConstraintFacts {
    pub max_cost_usd: Option<f64>,
    pub max_turns: Option<u64>,
    pub max_delegation_depth: Option<u64>,
    /// Seconds per execution.
    pub timeout: Option<u64>,
    /// Bytes.
    pub disk_quota: Option<u64>,
    /// Seconds per tool call.
    pub max_exec_time: Option<u64>,
    /// Files outside these are off limits; empty: no such limit declared.
    pub allowed_paths: Vec<String>,
    /// URLs outside these are off limits; empty: no such limit declared.
    pub allowed_urls: Vec<String>,
}

/// One action of a component and where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActionFacts {
    pub name: String,
    /// The tool a sync action runs directly; absent: it asks the agent.
    pub tool: Option<String>,
}

/// A UI component, its props schema and its actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ComponentFacts {
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub props: Option<Json>,
    pub actions: Vec<ActionFacts>,
}

/// Everything a consumer trusts when installing one agent version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentTrust {
    /// The highest risk among the effective capabilities.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "critical"))]
    pub max_risk: Option<RiskLevel>,
    /// In the capability table's order.
    pub capabilities: Vec<EffectiveCapability>,
    pub mcp_servers: Vec<McpServerFacts>,
    pub bash_tools: Vec<BashToolFacts>,
    pub http_tools: Vec<HttpToolFacts>,
    pub tools: Vec<LockedToolFacts>,
    pub subagents: Vec<SubagentFacts>,
    pub crew: Option<CrewFacts>,
    /// What the host injects into the context (`time`, `location`, ...).
    pub context: Vec<String>,
    pub constraints: ConstraintFacts,
    pub ui_components: Vec<ComponentFacts>,
    /// The typed `render_*` tools the UI components generate.
    pub render_tools: Vec<RenderTool>,
    /// The key id that signed the container, when known.
    pub signer: Option<String>,
}

impl AgentTrust {
    /// Computes the whole picture of `pkg`, given what each locked tool
    /// asks for (tools the lock names but `tools` lacks count as asking
    /// for nothing).
    pub fn of(pkg: &AgentPackage, tools: &[ToolCapabilities]) -> Self {
        let requests = host::with_tools(host::agent_requests(pkg), tools);
        let capabilities: Vec<EffectiveCapability> =
            requests.into_iter().map(EffectiveCapability::of).collect();
        let mut trust = Self {
            max_risk: capabilities.iter().map(|c| c.risk).max(),
            capabilities,
            ..Self::default()
        };
        let agents = std::iter::once((None, &pkg.agent))
            .chain(pkg.subagents.values().map(|s| (Some(s.name.as_str()), s)));
        for (declared_by, spec) in agents {
            trust.add_declarations(declared_by, spec);
        }
        trust.tools = tools
            .iter()
            .map(|t| LockedToolFacts {
                tool: t.tool.clone(),
                capabilities: t.capabilities.clone(),
                evidence: t.evidence,
            })
            .collect();
        trust.subagents = pkg
            .subagents
            .iter()
            .map(|(path, s)| SubagentFacts {
                name: s.name.to_string(),
                path: path.to_string(),
                description: s.description.clone(),
                capabilities: s.permissions.iter().flat_map(|p| p.requested()).collect(),
            })
            .collect();
        let spec = &pkg.agent;
        trust.crew = spec.delegate.as_ref().map(|crew| CrewFacts {
            process: crew.process.as_str().to_owned(),
            members: crew
                .agents
                .iter()
                .map(|m| CrewMemberFacts {
                    path: m.path.clone(),
                    task: m.task.clone(),
                    depends_on: m.depends_on.clone(),
                })
                .collect(),
        });
        trust.context = spec
            .context
            .iter()
            .flat_map(|c| c.inject.iter().cloned())
            .collect();
        if let Some(c) = &spec.constraints {
            let sandbox = c.sandbox.as_ref();
            trust.constraints = ConstraintFacts {
                max_cost_usd: c.budget.as_ref().and_then(|b| b.max_cost_usd),
                max_turns: c.limits.as_ref().and_then(|l| l.max_turns),
                max_delegation_depth: c.limits.as_ref().and_then(|l| l.max_delegation_depth),
                timeout: c.limits.as_ref().and_then(|l| l.timeout),
                disk_quota: sandbox.and_then(|s| s.disk_quota),
                max_exec_time: sandbox.and_then(|s| s.max_exec_time),
                allowed_paths: sandbox.map(|s| s.allowed_paths.clone()).unwrap_or_default(),
                allowed_urls: sandbox.map(|s| s.allowed_urls.clone()).unwrap_or_default(),
            };
        }
        trust.ui_components = spec
            .ui_components
            .iter()
            .map(|(name, c)| ComponentFacts {
                name: name.clone(),
                props: c.props.clone(),
                actions: c
                    .sync_actions
                    .iter()
                    .map(|(a, s)| ActionFacts {
                        name: a.clone(),
                        tool: Some(s.tool.clone()),
                    })
                    .chain(c.agent_actions.keys().map(|a| ActionFacts {
                        name: a.clone(),
                        tool: None,
                    }))
                    .collect(),
            })
            .collect();
        trust.render_tools = render_tools(spec);
        trust
    }

    /// The same, naming the key that signed the container.
    pub fn signed_by(mut self, key_id: Option<String>) -> Self {
        self.signer = key_id;
        self
    }

    fn add_declarations(&mut self, declared_by: Option<&str>, spec: &AgentSpec) {
        for (name, s) in &spec.mcp_servers {
            self.mcp_servers.push(McpServerFacts {
                name: name.clone(),
                declared_by: declared_by.map(str::to_owned),
                command: s.command.clone(),
                args: s.args.clone(),
                env: s.env.keys().cloned().collect(),
                tools: s.tools.clone(),
            });
        }
        for (name, t) in &spec.bash_tools {
            self.bash_tools.push(BashToolFacts {
                name: name.clone(),
                declared_by: declared_by.map(str::to_owned),
                command: t.command.clone(),
                dependencies: t
                    .dependencies
                    .iter()
                    .map(|d| BashDependencyFacts {
                        name: d.name.clone(),
                        check: d.check.clone(),
                        install: d.install.clone(),
                    })
                    .collect(),
            });
        }
        for (name, t) in &spec.http_tools {
            self.http_tools.push(HttpToolFacts {
                name: name.clone(),
                declared_by: declared_by.map(str::to_owned),
                method: t.method,
                endpoint: t.endpoint.clone(),
                auth: t.auth,
                oauth: t
                    .oauth_tokens
                    .iter()
                    .filter(|(_, wanted)| **wanted)
                    .map(|(key, _)| key.strip_suffix("_token").unwrap_or(key).to_owned())
                    .collect(),
            });
        }
    }

    /// What [`host::check`] reads.
    pub fn requests(&self) -> Vec<Request> {
        self.capabilities
            .iter()
            .map(EffectiveCapability::request)
            .collect()
    }

    /// Capabilities no `permissions` list asks for.
    pub fn undeclared(&self) -> impl Iterator<Item = &EffectiveCapability> {
        self.capabilities.iter().filter(|c| c.undeclared)
    }
}
