//! View models: plain data the registry service fills from its database and
//! hands to the page structs in [`crate::pages`]. They hold validated names and
//! versions, never raw request text, and carry the small presentation helpers
//! (links, labels) the templates call.

use std::fmt;

use agentlang_core::{Kind, PackageName, Version};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use time::{OffsetDateTime, format_description::well_known::Rfc3339, macros::format_description};

use crate::risk::{Capability, CategoryView, RiskLevel};

/// Characters left alone in a URL path segment: unreserved ones (RFC 3986).
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes one path segment (publisher names, key ids, token ids),
/// so no stored string can add a `/` or `?` to a link.
pub fn path_segment(segment: &str) -> String {
    utf8_percent_encode(segment, PATH_SEGMENT).to_string()
}

/// A point in time, shown as a date (`2025-01-29`) inside a `<time>` element
/// whose `datetime` carries the full RFC 3339 instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub OffsetDateTime);

impl Timestamp {
    pub fn iso(&self) -> String {
        self.0.format(&Rfc3339).unwrap_or_else(|_| self.to_string())
    }
}

impl From<OffsetDateTime> for Timestamp {
    fn from(at: OffsetDateTime) -> Self {
        Self(at)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let date = self
            .0
            .format(format_description!("[year]-[month]-[day]"))
            .map_err(|_| fmt::Error)?;
        f.write_str(&date)
    }
}

/// Human-readable byte count (`812 B`, `2.0 KiB`, `1.0 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Keeps publisher-supplied URLs to `http`/`https`, so a `javascript:` link
/// never reaches an `href`.
pub fn web_url(url: &str) -> Option<&str> {
    let lower = url.trim_start().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")).then_some(url)
}

/// What every page's header needs: who is signed in (for the nav and the
/// sign-out form) and the text to keep in the search box.
#[derive(Debug, Clone, Default)]
pub struct Chrome {
    pub user: Option<SessionUser>,
    pub search_query: String,
}

#[derive(Debug, Clone)]
pub struct SessionUser {
    pub username: String,
    /// The session's CSRF token, for the header's sign-out form.
    pub csrf_token: String,
}

/// A package named in a list or link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRef {
    pub kind: Kind,
    pub name: PackageName,
}

impl PackageRef {
    pub fn href(&self) -> String {
        format!("/{}/{}", self.kind.plural(), self.name)
    }
}

/// One version of a package named in a list or link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRef {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
}

impl VersionRef {
    pub fn href(&self) -> String {
        format!("/{}/{}/{}", self.kind.plural(), self.name, self.version)
    }
}

/// A package in the home page lists, search results and publisher pages.
#[derive(Debug, Clone)]
pub struct PackageSummary {
    pub kind: Kind,
    pub name: PackageName,
    /// The newest version.
    pub version: Version,
    pub title: Option<String>,
    /// Plain text (not markdown), one or two sentences.
    pub summary: String,
    pub category: Option<String>,
    pub downloads: u64,
    pub published_at: Timestamp,
    /// The highest risk of what the newest version can do (agents).
    pub risk: Option<RiskLevel>,
}

impl PackageSummary {
    pub fn href(&self) -> String {
        format!("/{}/{}", self.kind.plural(), self.name)
    }

    pub fn display_title(&self) -> &str {
        self.title.as_deref().unwrap_or(self.name.as_str())
    }
}

/// Registry-wide counts for the home page.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegistryStats {
    pub agents: u64,
    pub tools: u64,
    pub versions: u64,
    pub publishers: u64,
}

/// A key/value line in a details list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

impl KeyValue {
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// One published version in a version list.
#[derive(Debug, Clone)]
pub struct VersionSummary {
    pub version: Version,
    pub published_at: Timestamp,
    pub yanked: Option<Yank>,
    /// Its status when not active: its own, else its package's.
    pub status: Option<StatusNotice>,
}

#[derive(Debug, Clone)]
pub struct Yank {
    pub reason: Option<String>,
}

/// A package's or version's status when not active (the registry's
/// docs/statuses.md): the banner says what it means and what to use.
#[derive(Debug, Clone)]
pub struct StatusNotice {
    /// `deprecated`, `archived` or `quarantined`.
    pub status: String,
    pub reason: Option<String>,
    /// A deprecation's successor.
    pub successor: Option<SuccessorLink>,
}

/// The package to use instead of a deprecated one, and its page.
#[derive(Debug, Clone)]
pub struct SuccessorLink {
    pub name: String,
    pub href: String,
}

/// The stored artifact of one version: what was signed, by which key.
#[derive(Debug, Clone)]
pub struct ArtifactView {
    /// Lowercase hex SHA-256 of the container.
    pub sha256: String,
    pub size_bytes: u64,
    /// Downloads of this version.
    pub downloads: u64,
    pub published_at: Timestamp,
    pub signer: SignerView,
    /// The transparency-log entry that recorded the publish.
    pub log_index: Option<u64>,
    /// Its provenance's account of the build, when it has provenance.
    pub built_by: Option<BuiltBy>,
}

/// "Built by <repository> <workflow> at <commit>", from the version's
/// verified provenance (docs/provenance.md).
#[derive(Debug, Clone)]
pub struct BuiltBy {
    pub repository: Option<String>,
    pub workflow: Option<String>,
    pub commit: Option<String>,
    /// The provenance document (`/api/v1/{kind}/{name}/{version}/provenance`).
    pub href: String,
}

impl ArtifactView {
    pub fn size_label(&self) -> String {
        human_bytes(self.size_bytes)
    }

    /// The log page around the publish's entry.
    pub fn log_href(&self) -> Option<String> {
        self.log_index.map(|i| format!("/log?at={i}#entry-{i}"))
    }
}

/// The key that signed a version. The registry verified the signature at
/// publish time; the key may have been revoked since.
#[derive(Debug, Clone)]
pub struct SignerView {
    /// Lowercase hex SHA-256 of the raw public key.
    pub key_id: String,
    pub key_owner: String,
    pub key_revoked_at: Option<Timestamp>,
}

impl SignerView {
    pub fn href(&self) -> String {
        format!("/keys/{}", path_segment(&self.key_id))
    }

    pub fn owner_href(&self) -> String {
        publisher_href(&self.key_owner)
    }
}

pub fn publisher_href(name: &str) -> String {
    format!("/publishers/{}", path_segment(name))
}

/// A package owner as pages show them: a link and their role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerView {
    pub username: String,
    /// `founder` (published the package first) or `owner`.
    pub role: &'static str,
}

impl OwnerView {
    pub fn href(&self) -> String {
        publisher_href(&self.username)
    }
}

/// Present on version pages when the signed-in user owns the package: shows
/// the yank and unyank forms.
#[derive(Debug, Clone)]
pub struct OwnerControls {
    pub csrf_token: String,
}

/// An agent version's prompt mode, and an open one's prompt.
#[derive(Debug, Clone)]
pub struct PromptView {
    /// `prompt.yaml.enc`: only those holding the key can run it.
    pub sealed: bool,
    /// An open version's prompt.yaml, when stored at publish.
    pub text: Option<String>,
}

/// A live grant of the agent's prompt key, shown to its owners only.
#[derive(Debug, Clone)]
pub struct GrantRowView {
    pub grantee: String,
    pub key_id: String,
    /// The version range; `None`: every version the key seals.
    pub versions: Option<String>,
    pub granted_by: Option<String>,
    pub granted_at: String,
}

/// A tool an agent uses: its `agent.yaml` requirement and the version its
/// `agent.lock` pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPin {
    pub name: PackageName,
    pub requirement: Option<String>,
    pub locked: Option<Version>,
    /// When `name` is an interface: the tool the lock picked to provide
    /// it (`locked` is that tool's version).
    pub provider: Option<PackageName>,
}

impl ToolPin {
    pub fn href(&self) -> String {
        let tool = self.provider.as_ref().unwrap_or(&self.name);
        match &self.locked {
            Some(version) => format!("/tools/{tool}/{version}"),
            None => format!("/tools/{tool}"),
        }
    }

    /// The interface's page, when `name` is an interface.
    pub fn interface_href(&self) -> Option<String> {
        self.provider
            .as_ref()
            .map(|_| format!("/interfaces/{}", self.name))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelView {
    pub name: String,
    pub provider: Option<String>,
    /// Options as `key = value` lines (values as compact JSON).
    pub options: Vec<KeyValue>,
}

/// One capability from `permissions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionView {
    pub capability: String,
    pub required: bool,
    /// `user_triggered`, `on_demand`, `continuous` or `scheduled`.
    pub mode: Option<String>,
    pub reason: Option<String>,
    /// Further capability config (schedule, channels, max_runtime…).
    pub details: Vec<KeyValue>,
}

impl PermissionView {
    pub fn category(&self) -> CategoryView {
        CategoryView::of(&self.capability)
    }

    pub fn risk(&self) -> RiskLevel {
        self.category().risk()
    }
}

/// A capability the agent needs without requesting it in `permissions`:
/// implied by a bash tool, HTTP tool, MCP server or injected context, or
/// required by a locked tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndeclaredView {
    pub capability: String,
    pub required: bool,
    /// Where the need comes from: "bash tool convert_video", "tool web_fetch".
    pub sources: Vec<String>,
}

impl UndeclaredView {
    pub fn category(&self) -> CategoryView {
        CategoryView::of(&self.capability)
    }

    pub fn risk(&self) -> RiskLevel {
        self.category().risk()
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BudgetView {
    pub max_cost_usd: Option<f64>,
    /// Fraction allowed over the cap before cutoff (0.2 = 20 %).
    pub tolerance: Option<f64>,
    pub input_1m_price: Option<f64>,
    pub output_1m_price: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitsView {
    /// 0 means unlimited, as in the spec.
    pub max_turns: Option<u64>,
    pub max_delegation_depth: Option<u64>,
    pub timeout_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxView {
    pub disk_quota_bytes: Option<u64>,
    pub max_exec_time_seconds: Option<u64>,
    pub allowed_paths: Vec<String>,
    pub allowed_urls: Vec<String>,
}

/// The agent's `constraints` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConstraintsView {
    pub budget: BudgetView,
    pub limits: LimitsView,
    pub sandbox: SandboxView,
}

impl ConstraintsView {
    /// Every declared constraint as a labelled value, in a fixed order; the
    /// page lists these and the diff compares them.
    pub fn entries(&self) -> Vec<KeyValue> {
        let mut entries = Vec::new();
        let b = &self.budget;
        let money = |v: f64| format!("${v:.2}");
        // The spec's defaults are shown too, marked: a reader should not
        // have to know that an absent cap means unlimited.
        entries.push(KeyValue::new(
            "Budget cap",
            b.max_cost_usd
                .map_or_else(|| "unlimited (default)".to_owned(), money),
        ));
        if let Some(v) = b.tolerance {
            entries.push(KeyValue::new(
                "Budget tolerance",
                format!("{:.0}%", v * 100.0),
            ));
        }
        if let Some(v) = b.input_1m_price {
            entries.push(KeyValue::new(
                "Input price",
                format!("{} per 1M tokens", money(v)),
            ));
        }
        if let Some(v) = b.output_1m_price {
            entries.push(KeyValue::new(
                "Output price",
                format!("{} per 1M tokens", money(v)),
            ));
        }
        let l = &self.limits;
        let default = |label: &str| format!("{label} (default)");
        match l.max_turns {
            Some(0) => entries.push(KeyValue::new("Max turns", "unlimited")),
            Some(v) => entries.push(KeyValue::new("Max turns", v.to_string())),
            None => entries.push(KeyValue::new("Max turns", default("unlimited"))),
        }
        entries.push(KeyValue::new(
            "Max delegation depth",
            l.max_delegation_depth.map_or_else(
                || default(&agentlang_core::constraints::DEFAULT_MAX_DELEGATION_DEPTH.to_string()),
                |v| v.to_string(),
            ),
        ));
        entries.push(KeyValue::new(
            "Timeout",
            l.timeout_seconds
                .map_or_else(|| default("none"), |v| format!("{v} s")),
        ));
        let s = &self.sandbox;
        entries.push(KeyValue::new(
            "Disk quota",
            s.disk_quota_bytes
                .map_or_else(|| default("unlimited"), human_bytes),
        ));
        entries.push(KeyValue::new(
            "Max time per tool call",
            s.max_exec_time_seconds
                .map_or_else(|| default("unlimited"), |v| format!("{v} s")),
        ));
        if !s.allowed_paths.is_empty() {
            entries.push(KeyValue::new("Allowed paths", s.allowed_paths.join(", ")));
        }
        if !s.allowed_urls.is_empty() {
            entries.push(KeyValue::new("Allowed URLs", s.allowed_urls.join(", ")));
        }
        entries
    }

    /// True when nothing is declared: only the spec's defaults apply.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolView {
    pub name: String,
    pub requirement: Option<String>,
}

/// An agent version's A2A interface, whose signed Agent Card the registry
/// serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aCardView {
    /// Where A2A clients reach the agent.
    pub endpoint: String,
    /// `JSONRPC`, `GRPC` or `HTTP+JSON`.
    pub binding: String,
    /// The A2A version it speaks, `MAJOR.MINOR`.
    pub protocol_version: String,
    /// The card's path in the registry.
    pub card_href: String,
}

/// What the registry's protocol catalog says today about a protocol an
/// agent declares: the version chosen (the lock's, while it still fits),
/// and a deprecation naming the successor, or why nothing fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolNotice {
    pub name: String,
    pub version: Option<String>,
    pub message: Option<String>,
    /// Removed or unsatisfiable: the agent fails validation now.
    pub is_error: bool,
}

impl ProtocolNotice {
    pub fn css_class(&self) -> &'static str {
        match (&self.message, self.is_error) {
            (_, true) => "notice notice-error",
            (Some(_), false) => "notice notice-warning",
            (None, false) => "notice",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillView {
    pub name: String,
    pub description: Option<String>,
    pub allowed_tools: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncActionView {
    pub name: String,
    pub tool: String,
}

/// A generative-UI component and how its actions route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiComponentView {
    pub name: String,
    /// The typed tool the agent calls to show it: `render_<name>`.
    pub render_tool: String,
    /// The property names of its props schema; empty when it declares none.
    pub props: Vec<String>,
    /// Run a tool directly, no LLM round trip.
    pub sync_actions: Vec<SyncActionView>,
    /// Routed to the LLM.
    pub agent_actions: Vec<String>,
}

/// Whether an agent version can start on one known host (the spec's host
/// capability matrix, `agentlang check --host`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFitView {
    pub host: String,
    pub description: String,
    /// No required capability is refused.
    pub runnable: bool,
    /// Required capabilities the host refuses: the agent will not start.
    pub refused: Vec<String>,
    /// Optional capabilities the host refuses: the agent runs without them.
    pub degraded: Vec<String>,
    /// Granted in a weaker mode, as `notifications: on_demand → user_triggered`.
    pub downgraded: Vec<String>,
}

/// A co-located subagent shipped inside the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentView {
    pub name: String,
    pub description: Option<String>,
    pub locked_version: Option<Version>,
    /// `sha256:<hex>` from the lockfile.
    pub hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrationView {
    pub name: String,
    pub website: Option<String>,
}

impl IntegrationView {
    pub fn safe_website(&self) -> Option<&str> {
        self.website.as_deref().and_then(web_url)
    }
}

/// `ux.yaml` hints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UxView {
    pub suggestions: Vec<String>,
    pub integrations: Vec<IntegrationView>,
}

/// What one agent version declares, as read from its `agent.yaml`,
/// `agent.lock`, skills and `ux.yaml`. The agent page shows it and
/// [`crate::diff::diff_agents`] compares two of them.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentVersionView {
    pub name: PackageName,
    pub version: Version,
    pub title: String,
    pub subtitle: Option<String>,
    pub description_markdown: String,
    pub developer: Option<String>,
    pub category: Option<String>,
    pub tools: Vec<ToolPin>,
    pub models: Vec<ModelView>,
    pub permissions: Vec<PermissionView>,
    pub constraints: ConstraintsView,
    pub protocols: Vec<ProtocolView>,
    pub skills: Vec<SkillView>,
    pub ui_components: Vec<UiComponentView>,
    pub subagents: Vec<SubagentView>,
    pub ux: UxView,
}

impl AgentVersionView {
    /// The highest risk among the requested capabilities, required or not.
    pub fn max_risk(&self) -> Option<RiskLevel> {
        self.permissions.iter().map(PermissionView::risk).max()
    }

    pub fn required_permissions(&self) -> Vec<&PermissionView> {
        self.permissions.iter().filter(|p| p.required).collect()
    }

    pub fn optional_permissions(&self) -> Vec<&PermissionView> {
        self.permissions.iter().filter(|p| !p.required).collect()
    }
}

/// A `kind: mcp` tool version's entry in the registry's MCP Registry API
/// (`/v0.1/servers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpEntryView {
    /// The server's name there (`com.example.registry/weather`).
    pub server_name: String,
    /// Its server.json as `/v0.1` serves it, pretty-printed.
    pub server_json: String,
    /// This version's `/v0.1/servers/{name}/versions/{version}` URL.
    pub url: String,
}

/// How a runtime reaches a `kind: http` or `kind: bash` tool: its tool.yaml
/// section, as written back out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingView {
    /// `http` or `bash`: the section's key.
    pub key: String,
    /// What it holds, for the heading: `HTTP endpoint`, `Command`.
    pub heading: String,
    /// The section as YAML.
    pub yaml: String,
}

/// A tool's dependency on another tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDependencyView {
    pub name: PackageName,
    pub requirement: String,
}

impl ToolDependencyView {
    pub fn href(&self) -> String {
        format!("/tools/{}", self.name)
    }
}

/// What one tool version declares, from its `tool.yaml` and README.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolVersionView {
    pub name: PackageName,
    pub version: Version,
    pub description_markdown: String,
    pub input_schema: Option<serde_json::Value>,
    pub output_schema: Option<serde_json::Value>,
    pub dependencies: Vec<ToolDependencyView>,
    /// What its tool.yaml requires of every host that runs it, riskiest
    /// first: every agent that locks it asks for these too.
    pub capabilities: Vec<Capability>,
    /// The interfaces it provides (`provides:`), each linking to the
    /// interface's page.
    pub provides: Vec<PackageName>,
}

/// What one skill package version says of itself, from its SKILL.md: the
/// frontmatter as the Agent Skills specification names it, and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillVersionView {
    pub name: PackageName,
    pub version: Version,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// `allowed-tools`, split at its spaces as the specification spells it.
    pub allowed_tools: Vec<String>,
    /// Every `metadata` entry (`version` included), by key.
    pub metadata: Vec<(String, String)>,
    /// The markdown after the frontmatter; `None` for a version published
    /// before the registry kept it.
    pub body_markdown: Option<String>,
}

/// A skill version's entry in the Agent Skills discovery index
/// (`/.well-known/agent-skills/index.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillIndexEntryView {
    /// The container download, a path on the registry.
    pub url: String,
    /// `sha256:` and the container's SHA-256.
    pub digest: String,
    /// Whether the index lists this version now (it lists each skill's
    /// newest release that is neither yanked nor a prerelease).
    pub listed: bool,
}

/// A package version that depends on the tool on the page.
#[derive(Debug, Clone)]
pub struct DependentView {
    pub package: VersionRef,
    /// The requirement it declares (`^1.2.0`).
    pub requirement: String,
}

/// Who uses a tool. The counts cover every dependent; `items` may be the
/// first page of them.
#[derive(Debug, Clone, Default)]
pub struct ReverseDependencies {
    pub agent_count: u64,
    pub tool_count: u64,
    pub items: Vec<DependentView>,
}

impl ReverseDependencies {
    pub fn total(&self) -> u64 {
        self.agent_count + self.tool_count
    }

    /// True when `items` is only part of the dependents.
    pub fn is_partial(&self) -> bool {
        (self.items.len() as u64) < self.total()
    }
}

/// A signing key as listed on publisher, key and account pages.
#[derive(Debug, Clone)]
pub struct KeySummary {
    pub key_id: String,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

impl KeySummary {
    pub fn href(&self) -> String {
        format!("/keys/{}", path_segment(&self.key_id))
    }
}

#[derive(Debug, Clone)]
pub struct PublisherView {
    pub name: String,
    pub joined_at: Timestamp,
}

/// An API token as the account page lists it (never its secret).
#[derive(Debug, Clone)]
pub struct ApiTokenView {
    pub id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub last_used_at: Option<Timestamp>,
}

impl ApiTokenView {
    pub fn revoke_action(&self) -> String {
        format!("/account/tokens/{}/revoke", path_segment(&self.id))
    }
}

/// A token just created: its secret is shown this once and never again.
#[derive(Debug, Clone)]
pub struct NewTokenView {
    pub name: String,
    pub secret: String,
}

/// A scope the token form offers as a checkbox.
#[derive(Debug, Clone)]
pub struct ScopeOption {
    pub value: String,
    pub description: String,
}

/// An invitation to own a package, waiting for the signed-in user's answer.
#[derive(Debug, Clone)]
pub struct InvitationView {
    pub package: PackageRef,
    pub invited_by: Option<String>,
    pub expires_at: Timestamp,
}

impl InvitationView {
    pub fn accept_action(&self) -> String {
        format!(
            "/account/invitations/{}/{}/accept",
            self.package.kind.plural(),
            self.package.name
        )
    }

    pub fn decline_action(&self) -> String {
        format!(
            "/account/invitations/{}/{}/decline",
            self.package.kind.plural(),
            self.package.name
        )
    }
}

/// One line of the account's activity list.
#[derive(Debug, Clone)]
pub struct AuditView {
    pub at: Timestamp,
    pub action: String,
    pub detail: String,
}

/// A package the signed-in user owns, with its co-owners.
#[derive(Debug, Clone)]
pub struct OwnedPackage {
    pub package: PackageRef,
    pub owners: Vec<OwnerView>,
    /// Invited accounts that have not answered yet.
    pub invited: Vec<String>,
}

impl OwnedPackage {
    pub fn owners_action(&self) -> String {
        format!(
            "/account/{}/{}/owners",
            self.package.kind.plural(),
            self.package.name
        )
    }

    pub fn remove_owner_action(&self) -> String {
        format!("{}/remove", self.owners_action())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_cannot_add_structure() {
        assert_eq!(path_segment("a/b?c#d e"), "a%2Fb%3Fc%23d%20e");
        assert_eq!(path_segment("acme-dev_1.x~"), "acme-dev_1.x~");
        assert_eq!(publisher_href("../admin"), "/publishers/..%2Fadmin");
    }

    #[test]
    fn human_bytes_picks_a_unit() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(2048), "2.0 KiB");
        assert_eq!(human_bytes(1_073_741_824), "1.0 GiB");
    }

    #[test]
    fn only_web_urls_pass() {
        assert_eq!(web_url("https://gmail.com"), Some("https://gmail.com"));
        assert_eq!(web_url("HTTP://x.example"), Some("HTTP://x.example"));
        assert_eq!(web_url("javascript:alert(1)"), None);
        assert_eq!(web_url("data:text/html,x"), None);
        assert_eq!(web_url("//evil.example"), None);
    }

    #[test]
    fn timestamps_show_a_date_and_carry_the_instant() {
        let at = Timestamp(time::macros::datetime!(2025-01-29 10:30:00 UTC));
        assert_eq!(at.to_string(), "2025-01-29");
        assert_eq!(at.iso(), "2025-01-29T10:30:00Z");
    }

    #[test]
    fn constraint_entries_follow_the_spec_example() {
        let constraints = ConstraintsView {
            budget: BudgetView {
                max_cost_usd: Some(2.0),
                tolerance: Some(0.2),
                input_1m_price: Some(3.0),
                output_1m_price: Some(15.0),
            },
            limits: LimitsView {
                max_turns: Some(0),
                max_delegation_depth: Some(3),
                timeout_seconds: Some(300),
            },
            sandbox: SandboxView {
                disk_quota_bytes: Some(1_073_741_824),
                max_exec_time_seconds: Some(60),
                allowed_paths: vec!["./output".into(), "./data".into()],
                allowed_urls: vec![],
            },
        };
        let lines: Vec<String> = constraints
            .entries()
            .into_iter()
            .map(|kv| format!("{}: {}", kv.key, kv.value))
            .collect();
        assert_eq!(
            lines,
            [
                "Budget cap: $2.00",
                "Budget tolerance: 20%",
                "Input price: $3.00 per 1M tokens",
                "Output price: $15.00 per 1M tokens",
                "Max turns: unlimited",
                "Max delegation depth: 3",
                "Timeout: 300 s",
                "Disk quota: 1.0 GiB",
                "Max time per tool call: 60 s",
                "Allowed paths: ./output, ./data",
            ]
        );
        assert!(ConstraintsView::default().is_empty());
        let defaults: Vec<String> = ConstraintsView::default()
            .entries()
            .into_iter()
            .map(|kv| format!("{}: {}", kv.key, kv.value))
            .collect();
        assert_eq!(
            defaults,
            [
                "Budget cap: unlimited (default)",
                "Max turns: unlimited (default)",
                "Max delegation depth: 3 (default)",
                "Timeout: none (default)",
                "Disk quota: unlimited (default)",
                "Max time per tool call: unlimited (default)",
            ]
        );
    }
}
