//! The typed agent.yaml. Every value here passed validation; the model
//! serializes back into the shape it was read from (field names, optional
//! fields left out), so the registry can store and serve it as JSON and a
//! serialized model parses again into an equal one.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use semver::VersionReq;
use serde::Serialize;

use super::permissions::{CronSchedule, PermissionMode};
pub use super::reader::Extensions;
use crate::capability::{Capability, RiskLevel};
use crate::names::{PackageName, Version};
use crate::tree::MemberPath;

/// Free-form data (tool config, schemas, params), stored as JSON.
pub type Json = serde_json::Value;

/// The name of the tool that delegates to subagents: an orchestration
/// builtin of every runtime, never resolved from the registry.
pub const DELEGATE_TOOL: &str = "delegate";

/// One agent.yaml (top-level agent or co-located subagent).
///
/// A top-level agent (read by [`super::parse_agent`]) always has `version`
/// and `description`; a subagent (read by [`super::parse_subagent`]) needs
/// only `name` and `description`, because it is versioned and hashed as part
/// of its parent package.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentSpec {
    pub name: PackageName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub developer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, ModelSpec>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDecl>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub mcp_servers: IndexMap<String, McpServer>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub http_tools: IndexMap<String, HttpTool>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub bash_tools: IndexMap<String, BashTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextSpec>,
    /// The static crew (top-level `delegate:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegate: Option<StaticCrew>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<ProtocolDecl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Constraints>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub ui_components: IndexMap<String, UiComponent>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillRef>,
    /// `x-` keys, e.g. `x-protocols`.
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    pub provider: String,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub options: serde_json::Map<String, Json>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// An entry of `tools:`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDecl {
    pub name: PackageName,
    /// Cargo-style requirement; absent means the newest release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionReq>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<ToolConfig>,
    /// MCP input schema (JSON Schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Json>,
    /// AgentLang's output schema extension (JSON Schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Json>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl ToolDecl {
    /// True for the orchestration builtin, which is not a registry package.
    pub fn is_delegate(&self) -> bool {
        self.name.as_str() == DELEGATE_TOOL
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolConfig {
    /// The `delegate` tool's config: dynamic orchestration.
    Delegate(DelegateToolConfig),
    /// Any other tool's config, passed through to the tool.
    Other(Json),
}

/// `tools: [{name: delegate, config: {...}}]`: the LLM picks specialists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelegateToolConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<DelegateMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery: Option<Discovery>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u64>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DelegateMode {
    Dynamic,
    Static,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Discovery {
    /// Co-located `*.yaml` files are the specialists.
    Directory,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpServer {
    pub command: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Values may hold `{{.env.NAME}}` placeholders.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// Whitelist of the server's tools; `None` exposes all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum HttpMethod {
    #[serde(rename = "GET")]
    Get,
    #[serde(rename = "POST")]
    Post,
    #[serde(rename = "PUT")]
    Put,
    #[serde(rename = "PATCH")]
    Patch,
    #[serde(rename = "DELETE")]
    Delete,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpAuth {
    None,
    Bearer,
    Basic,
    ApiKey,
}

impl HttpAuth {
    /// As agent.yaml spells it: `api_key`.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpAuth::None => "none",
            HttpAuth::Bearer => "bearer",
            HttpAuth::Basic => "basic",
            HttpAuth::ApiKey => "api_key",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpTool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub endpoint: String,
    pub method: HttpMethod,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuth>,
    /// `<provider>_token: true` keys (the spec's `twitter_token`): an OAuth
    /// token for that provider the host must supply. Keyed as written.
    #[serde(flatten)]
    pub oauth_tokens: BTreeMap<String, bool>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub params: IndexMap<String, HttpParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_template: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ui_component: Option<ToolUi>,
    /// What the endpoint answers (JSON Schema): the source of the
    /// `{{json...}}` routes into its UI states.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Json>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpParam {
    #[serde(rename = "type")]
    pub ty: ParamType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Json>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// What an HTTP tool renders per execution status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolUi {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<UiRender>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<UiRender>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<UiRender>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl ToolUi {
    /// The declared states with their status name, in lifecycle order.
    pub fn states(&self) -> impl Iterator<Item = (&'static str, &UiRender)> {
        [
            ("running", &self.running),
            ("completed", &self.completed),
            ("failed", &self.failed),
        ]
        .into_iter()
        .filter_map(|(status, render)| Some((status, render.as_ref()?)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiRender {
    pub component: String,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub props: serde_json::Map<String, Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<UiActions>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BashTool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<BashDependency>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// Status texts a host shows while a tool runs (agent.yaml and ux.yaml).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Labels {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BashDependency {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub install: BTreeMap<Os, String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Os {
    Darwin,
    Linux,
    Windows,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Permissions {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<Capability>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optional: Vec<Capability>,
    /// Per-capability settings, keyed by the capability.
    #[serde(flatten)]
    pub config: BTreeMap<Capability, CapabilityConfig>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl Permissions {
    /// Every requested capability, required first.
    pub fn requested(&self) -> impl Iterator<Item = Capability> + '_ {
        self.required.iter().chain(&self.optional).copied()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapabilityConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<PermissionMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<CronSchedule>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wake_triggers: Vec<WakeTrigger>,
    /// Seconds per wake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_runtime: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WakeTrigger {
    pub schedule: CronSchedule,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<ContextWindow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inject: Vec<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextWindow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<WindowStrategy>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowStrategy {
    Sliding,
    Summarize,
    Truncate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compaction {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<CompactionStrategy>,
    /// Fraction of the window at which to compact, in (0, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preserve: Vec<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStrategy {
    Summarize,
    DropOldest,
    Checkpoint,
}

/// Top-level `delegate:`: a fixed crew.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StaticCrew {
    pub mode: DelegateMode,
    pub process: CrewProcess,
    pub agents: Vec<CrewMember>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CrewProcess {
    Sequential,
    Parallel,
    Hierarchical,
}

impl CrewProcess {
    pub fn as_str(self) -> &'static str {
        match self {
            CrewProcess::Sequential => "sequential",
            CrewProcess::Parallel => "parallel",
            CrewProcess::Hierarchical => "hierarchical",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrewMember {
    /// As written (`./researcher.yaml`).
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// US dollars of the parent's budget allocated to this member (the
    /// spec's child budget allocation); unused budget returns to the parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl CrewMember {
    /// The member's file inside the package (`researcher.yaml`).
    pub fn member_path(&self) -> Option<MemberPath> {
        MemberPath::new(self.path.strip_prefix("./").unwrap_or(&self.path)).ok()
    }

    /// The name `depends_on` refers to it by: the file stem
    /// (`./researcher.yaml` is `researcher`).
    pub fn id(&self) -> &str {
        let file = self.path.rsplit('/').next().unwrap_or(&self.path);
        file.strip_suffix(".yaml")
            .or_else(|| file.strip_suffix(".yml"))
            .unwrap_or(file)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolDecl {
    /// `a2a`, `mcp`, or a namespaced `custom/<name>`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionReq>,
    /// Where the agent answers A2A (`a2a` only): the registry serves a
    /// signed Agent Card for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<super::a2a_endpoint::Endpoint>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl ProtocolDecl {
    /// `Some("acme-sync")` for `custom/acme-sync`.
    pub fn custom_name(&self) -> Option<&str> {
        self.name.strip_prefix("custom/")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Constraints {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Allowed overage as a fraction, in [0, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_1m_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_1m_price: Option<f64>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    /// 0 means unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delegation_depth: Option<u64>,
    /// Seconds per execution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sandbox {
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_quota: Option<u64>,
    /// Seconds per tool call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_exec_time: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_paths: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_urls: Vec<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiComponent {
    /// The JSON Schema of the component's props (an object schema): the
    /// input schema of its generated `render_<name>` tool. Only components
    /// under `ui_components` have one; a tool UI's actions never do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub props: Option<Json>,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub sync_actions: IndexMap<String, SyncAction>,
    /// Read from the map form or the list form (`[regenerate]`); stored as
    /// the map form.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub agent_actions: IndexMap<String, AgentAction>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// Actions of a rendered tool UI: the same two paths as a component.
pub type UiActions = UiComponent;

/// Runs a tool directly, no LLM round-trip.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncAction {
    /// A declared tool, or a host built-in `system://...`.
    pub tool: String,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Json>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// Sends the action to the LLM.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentAction {
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, Json>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// A `skills:` entry: without `version`, the co-located
/// `skills/<name>/SKILL.md`; with one, the published skill package of that
/// name, resolved and locked like a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillRef {
    pub name: PackageName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionReq>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

impl AgentSpec {
    /// Published skills this agent needs, by name, with their requirement:
    /// the `skills:` entries that carry a `version`.
    pub fn skill_requirements(&self) -> BTreeMap<PackageName, VersionReq> {
        self.skills
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.version.clone()?)))
            .collect()
    }

    /// Registry tools this agent needs, by name, with their requirement
    /// (`None`: the newest release). Every `tools:` entry is a registry tool
    /// except `delegate`, the orchestration builtin.
    pub fn tool_requirements(&self) -> BTreeMap<PackageName, Option<VersionReq>> {
        self.tools
            .iter()
            .filter(|t| !t.is_delegate())
            .map(|t| (t.name.clone(), t.version.clone()))
            .collect()
    }

    /// The model names under `models:`, in document order.
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }

    /// Every tool name the agent can call: `tools:`, MCP whitelists,
    /// `http_tools` and `bash_tools`.
    pub fn declared_tools(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .map(|t| t.name.as_str())
            .chain(
                self.mcp_servers
                    .values()
                    .flat_map(|s| s.tools.iter().flatten().map(String::as_str)),
            )
            .chain(self.http_tools.keys().map(String::as_str))
            .chain(self.bash_tools.keys().map(String::as_str))
    }

    /// True when some MCP server exposes all its tools (no whitelist), so a
    /// tool name not declared elsewhere may still exist at runtime.
    pub fn has_open_mcp_server(&self) -> bool {
        self.mcp_servers.values().any(|s| s.tools.is_none())
    }

    /// Whether `tool` can be called by this agent: declared, a host
    /// built-in (`system://...`), or possibly served by an MCP server without
    /// a whitelist.
    pub fn can_call(&self, tool: &str) -> bool {
        tool.starts_with("system://")
            || self.declared_tools().any(|t| t == tool)
            || self.has_open_mcp_server()
    }

    /// The highest risk among requested capabilities.
    pub fn max_risk(&self) -> Option<RiskLevel> {
        self.permissions
            .as_ref()
            .and_then(|p| p.requested().map(Capability::risk).max())
    }
}
