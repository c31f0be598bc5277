//! The spec's host capability matrix as data: a host profile lists the
//! capabilities a host grants and in which permission modes. The built-in
//! profiles (`profiles/*.yaml`, compiled in) are read with the same parser
//! as the host files users add, so both follow one format:
//!
//! ```yaml
//! name: my-kiosk
//! description: A kiosk with a camera and no network.
//! asks_user: false          # true: the host prompts before granting
//! grants:
//!   camera: [user_triggered, on_demand]
//!   storage: all            # every mode
//! ```
//!
//! [`check`] answers, for every capability an agent (and its subagents and
//! locked tools) asks for: granted, downgraded (`on_demand` asked,
//! `user_triggered` granted), degraded (an optional one refused) or refused
//! (a required one: the agent must not start).

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    sync::OnceLock,
};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{
    PackageName, Version,
    agent::{AgentSpec, PermissionMode},
    capability::Capability,
    package::AgentPackage,
    tool::ToolSpec,
    yaml::{YamlError, YamlLimits},
};

/// The profiles shipped with AgentLang, in the order they are listed.
const BUILTIN: [(&str, &str); 6] = [
    (
        "claude-desktop",
        include_str!("profiles/claude-desktop.yaml"),
    ),
    ("replit-agent", include_str!("profiles/replit-agent.yaml")),
    ("desktop-app", include_str!("profiles/desktop-app.yaml")),
    ("mobile-app", include_str!("profiles/mobile-app.yaml")),
    (
        "browser-extension",
        include_str!("profiles/browser-extension.yaml"),
    ),
    ("local", include_str!("profiles/local.yaml")),
];

/// Host profile files are small; a tighter bound than agent.yaml's.
const HOST_FILE_LIMITS: YamlLimits = YamlLimits {
    max_bytes: 64 * 1024,
    max_depth: 8,
    max_aliases: 0,
    max_nodes: 2_000,
};

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("host file: {0}")]
    Yaml(#[from] YamlError),
    #[error(
        "{0:?} is not a host name (lowercase letters, digits and '-', starting with a letter, at most 64)"
    )]
    BadName(String),
    #[error("host {0} grants no capabilities in no modes; list at least one mode or `all`")]
    EmptyModes(String),
}

/// A host's name: lowercase ASCII letters, digits and `-`, starting with a
/// letter, at most 64 characters (`claude-desktop`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostName(String);

impl HostName {
    pub fn new(name: impl Into<String>) -> Result<Self, HostError> {
        let name = name.into();
        let ok = name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(Self(name))
        } else {
            Err(HostError::BadName(name))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for HostName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for HostName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The modes a host grants one capability in: a list, or `all`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modes(BTreeSet<PermissionMode>);

const ALL_MODES: [PermissionMode; 4] = PermissionMode::ALL;

impl Modes {
    pub fn contains(&self, mode: PermissionMode) -> bool {
        self.0.contains(&mode)
    }

    pub fn iter(&self) -> impl Iterator<Item = PermissionMode> + '_ {
        self.0.iter().copied()
    }
}

impl Serialize for Modes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for Modes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<PermissionMode>),
        }
        match Raw::deserialize(d)? {
            Raw::Word(w) if w == "all" => Ok(Self(ALL_MODES.into_iter().collect())),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "{w:?} is neither `all` nor a list of permission modes"
            ))),
            Raw::List(list) => Ok(Self(list.into_iter().collect())),
        }
    }
}

/// What one host grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    pub name: HostName,
    pub description: String,
    /// The host asks the user (an operating system's permission prompt)
    /// before it grants a capability.
    #[serde(default)]
    pub asks_user: bool,
    /// Capabilities the host grants, with the modes it grants them in.
    /// Anything absent is not granted.
    pub grants: BTreeMap<Capability, Modes>,
}

impl HostProfile {
    /// Parses a host file (bounded YAML, unknown keys refused).
    pub fn parse(bytes: &[u8]) -> Result<Self, HostError> {
        let profile: Self = crate::yaml::from_slice(bytes, &HOST_FILE_LIMITS)?;
        if profile.grants.values().any(|m| m.0.is_empty()) {
            return Err(HostError::EmptyModes(profile.name.0));
        }
        Ok(profile)
    }

    /// The built-in profiles: `claude-desktop`, `replit-agent`,
    /// `desktop-app`, `mobile-app`, `browser-extension` and `local`.
    pub fn builtin() -> &'static [HostProfile] {
        static PROFILES: OnceLock<Vec<HostProfile>> = OnceLock::new();
        PROFILES.get_or_init(|| {
            BUILTIN
                .iter()
                .map(|(name, text)| {
                    let profile = Self::parse(text.as_bytes())
                        .unwrap_or_else(|e| panic!("built-in host profile {name}: {e}"));
                    assert_eq!(profile.name.as_str(), *name, "built-in host file name");
                    profile
                })
                .collect()
        })
    }

    pub fn find_builtin(name: &str) -> Option<&'static HostProfile> {
        Self::builtin().iter().find(|h| h.name.as_str() == name)
    }

    pub fn builtin_names() -> Vec<&'static str> {
        Self::builtin().iter().map(|h| h.name.as_str()).collect()
    }
}

/// Who asks for a capability: the agent or a subagent (in `permissions`),
/// a locked tool (its tool.yaml's `permissions`), or something the agent
/// declares that cannot work without it (implied).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Requester {
    Agent(PackageName),
    Subagent(PackageName),
    /// A locked tool, with the version whose tool.yaml asks.
    Tool(ToolAt),
    /// A `bash_tools` entry: runs a shell command.
    BashTool(String),
    /// An `http_tools` entry: calls its endpoint (and an OAuth token's
    /// provider, for `<provider>_token: true`).
    HttpTool(String),
    /// An `mcp_servers` entry: a local command that speaks to the network.
    McpServer(String),
    /// A `context.inject` entry the host fills from a sensor.
    Context(String),
}

impl Requester {
    /// Whether this asks in `permissions` (an agent's own declaration).
    pub fn declares(&self) -> bool {
        matches!(self, Requester::Agent(_) | Requester::Subagent(_))
    }
}

impl fmt::Display for Requester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requester::Agent(n) => write!(f, "agent {n}"),
            Requester::Subagent(n) => write!(f, "subagent {n}"),
            Requester::Tool(n) => write!(f, "tool {n}"),
            Requester::BashTool(n) => write!(f, "bash tool {n}"),
            Requester::HttpTool(n) => write!(f, "http tool {n}"),
            Requester::McpServer(n) => write!(f, "MCP server {n}"),
            Requester::Context(n) => write!(f, "injected context {n}"),
        }
    }
}

/// A tool at one version, written `web_fetch@1.0.3`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ToolAt {
    pub name: PackageName,
    pub version: Version,
}

impl fmt::Display for ToolAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.version)
    }
}

impl Serialize for ToolAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ToolAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let (name, version) = s
            .split_once('@')
            .ok_or_else(|| serde::de::Error::custom(format!("{s:?} is not name@version")))?;
        Ok(Self {
            name: PackageName::new(name).map_err(serde::de::Error::custom)?,
            version: Version::parse(version).map_err(serde::de::Error::custom)?,
        })
    }
}

/// What one locked tool's tool.yaml asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCapabilities {
    pub tool: ToolAt,
    pub capabilities: Vec<Capability>,
    /// How the pinned version was published, when the registry said.
    pub evidence: Option<crate::provenance::Evidence>,
}

impl ToolCapabilities {
    pub fn of(spec: &ToolSpec) -> Self {
        Self {
            tool: ToolAt {
                name: spec.name().clone(),
                version: spec.version().clone(),
            },
            capabilities: spec.permissions().to_vec(),
            evidence: None,
        }
    }
}

/// What a declaration implies without saying so: `(capability, required,
/// who)` for each of an agent spec's bash tools (`shell`), HTTP tools
/// (`network`; `oauth` for a token), MCP servers (`shell` and `network`)
/// and injected context that comes from a capability (`location`, per
/// [`crate::agent::context::INJECT`]).
pub fn implied(spec: &AgentSpec) -> Vec<(Capability, bool, Requester)> {
    let mut out = Vec::new();
    for name in spec.bash_tools.keys() {
        out.push((Capability::Shell, true, Requester::BashTool(name.clone())));
    }
    for (name, tool) in &spec.http_tools {
        out.push((Capability::Network, true, Requester::HttpTool(name.clone())));
        if tool.oauth_tokens.values().any(|&wanted| wanted) {
            out.push((Capability::Oauth, true, Requester::HttpTool(name.clone())));
        }
    }
    for name in spec.mcp_servers.keys() {
        out.push((Capability::Shell, true, Requester::McpServer(name.clone())));
        out.push((
            Capability::Network,
            true,
            Requester::McpServer(name.clone()),
        ));
    }
    let injected = spec.context.iter().flat_map(|c| &c.inject);
    for entry in injected {
        if let Some(cap) = crate::agent::context::injected(entry).and_then(|i| i.needs) {
            // "If permitted": the agent runs without it.
            out.push((cap, false, Requester::Context(entry.clone())));
        }
    }
    out
}

/// One capability as the whole package asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub capability: Capability,
    /// Required by anyone that asks for it.
    pub required: bool,
    /// The mode asked for (the agent's setting wins over a subagent's).
    pub mode: Option<PermissionMode>,
    pub requested_by: Vec<Requester>,
}

impl Request {
    /// Needed by a tool or implied by a declaration, but requested in no
    /// agent's `permissions`: a host grants it all the same, unasked.
    pub fn undeclared(&self) -> bool {
        !self.requested_by.iter().any(Requester::declares)
    }
}

/// Every capability the agent, its subagents and the given tools ask for,
/// merged per capability, in the capability table's order. A tool's
/// `permissions` are required: a tool cannot run without them.
pub fn requests(pkg: &AgentPackage, tools: &[&ToolSpec]) -> Vec<Request> {
    let tools: Vec<ToolCapabilities> = tools.iter().map(|t| ToolCapabilities::of(t)).collect();
    with_tools(agent_requests(pkg), &tools)
}

/// What the agent and its subagents ask for: their `permissions`, then
/// what their declarations imply ([`implied`]).
pub fn agent_requests(pkg: &AgentPackage) -> Vec<Request> {
    let mut merged = Merged::default();
    let agents =
        std::iter::once((&pkg.agent, true)).chain(pkg.subagents.values().map(|s| (s, false)));
    for (spec, top) in agents {
        let who = |s: &AgentSpec| {
            if top {
                Requester::Agent(s.name.clone())
            } else {
                Requester::Subagent(s.name.clone())
            }
        };
        let Some(perms) = &spec.permissions else {
            continue;
        };
        let mode_of = |c: Capability| perms.config.get(&c).and_then(|cfg| cfg.mode);
        for c in &perms.required {
            merged.add(*c, true, mode_of(*c), who(spec));
        }
        for c in &perms.optional {
            merged.add(*c, false, mode_of(*c), who(spec));
        }
    }
    // After every declaration, so a declared mode is the one kept.
    for spec in agents_of(pkg) {
        for (c, required, who) in implied(spec) {
            merged.add(c, required, None, who);
        }
    }
    merged.0.into_values().collect()
}

fn agents_of(pkg: &AgentPackage) -> impl Iterator<Item = &AgentSpec> {
    std::iter::once(&pkg.agent).chain(pkg.subagents.values())
}

/// `requests` plus the capabilities of tools, each required.
pub fn with_tools(requests: Vec<Request>, tools: &[ToolCapabilities]) -> Vec<Request> {
    let mut merged = Merged(requests.into_iter().map(|r| (r.capability, r)).collect());
    for t in tools {
        for c in &t.capabilities {
            merged.add(*c, true, None, Requester::Tool(t.tool.clone()));
        }
    }
    merged.0.into_values().collect()
}

#[derive(Default)]
struct Merged(BTreeMap<Capability, Request>);

impl Merged {
    fn add(&mut self, c: Capability, required: bool, mode: Option<PermissionMode>, who: Requester) {
        let slot = self.0.entry(c).or_insert_with(|| Request {
            capability: c,
            required: false,
            mode: None,
            requested_by: Vec::new(),
        });
        slot.required |= required;
        // The agent's setting comes first and wins over a subagent's.
        slot.mode = slot.mode.or(mode);
        if !slot.requested_by.contains(&who) {
            slot.requested_by.push(who);
        }
    }
}

/// How the host answers one capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Granted in the mode asked for (or, when none was asked, in the modes
    /// the host grants).
    Granted,
    /// Granted in a weaker mode than asked (`on_demand` → `user_triggered`).
    Downgraded,
    /// An optional capability the host does not grant: the agent runs
    /// without it.
    Degraded,
    /// A required capability the host does not grant: the agent must not
    /// start.
    Refused,
}

/// The answer for one capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilityDecision {
    pub capability: Capability,
    pub required: bool,
    pub outcome: Outcome,
    pub requested_mode: Option<PermissionMode>,
    /// The mode granted; `None` when none was asked for (the host's modes
    /// are in `host_modes`) or when nothing was granted.
    pub granted_mode: Option<PermissionMode>,
    /// Every mode the host grants this capability in.
    pub host_modes: Vec<PermissionMode>,
    pub requested_by: Vec<Requester>,
    /// Why, in words: for anything but a plain grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A host's answer for a whole package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostReport {
    pub host: HostName,
    pub asks_user: bool,
    pub capabilities: Vec<CapabilityDecision>,
}

impl HostReport {
    /// True when no required capability is refused.
    pub fn runnable(&self) -> bool {
        self.refused().next().is_none()
    }

    pub fn refused(&self) -> impl Iterator<Item = &CapabilityDecision> {
        self.capabilities
            .iter()
            .filter(|d| d.outcome == Outcome::Refused)
    }

    /// One line naming every refused capability and the host, for errors.
    pub fn refusal_summary(&self) -> Option<String> {
        let refused: Vec<String> = self
            .refused()
            .map(|d| {
                let who: Vec<String> = d.requested_by.iter().map(ToString::to_string).collect();
                format!(
                    "{} (required by {}): {}",
                    d.capability,
                    who.join(", "),
                    d.reason.as_deref().unwrap_or("not granted")
                )
            })
            .collect();
        (!refused.is_empty()).then(|| {
            format!(
                "host {} cannot run this agent: {}",
                self.host,
                refused.join("; ")
            )
        })
    }
}

/// The weaker modes a host may grant instead of `mode`, strongest first
/// (the spec: "Host can grant user_triggered when on_demand requested").
/// A schedule has no weaker form: a job that should run hourly does not
/// become one the user starts.
fn downgrades(mode: PermissionMode) -> &'static [PermissionMode] {
    match mode {
        PermissionMode::Continuous => &[PermissionMode::OnDemand, PermissionMode::UserTriggered],
        PermissionMode::OnDemand => &[PermissionMode::UserTriggered],
        PermissionMode::UserTriggered | PermissionMode::Scheduled => &[],
    }
}

/// Whether `host` can wake an agent on a schedule: it grants background in
/// scheduled mode. Every capability asked for in scheduled mode needs it,
/// whatever the host grants that capability in.
fn wakes(host: &HostProfile) -> bool {
    host.grants
        .get(&Capability::Background)
        .is_some_and(|m| m.contains(PermissionMode::Scheduled))
}

/// Checks every request against `host`.
pub fn check(host: &HostProfile, requests: &[Request]) -> HostReport {
    let capabilities = requests
        .iter()
        .map(|r| {
            let modes = host.grants.get(&r.capability);
            let host_modes: Vec<PermissionMode> =
                modes.map(|m| m.iter().collect()).unwrap_or_default();
            let refusal = |reason: String| {
                let outcome = if r.required {
                    Outcome::Refused
                } else {
                    Outcome::Degraded
                };
                (outcome, None, Some(reason))
            };
            let (outcome, granted_mode, reason) = match (modes, r.mode) {
                (None, _) => refusal(format!("{} does not grant {}", host.name, r.capability)),
                // Granting the capability is not enough: no one wakes the
                // agent to use it, so it would silently never run.
                (Some(m), Some(PermissionMode::Scheduled))
                    if m.contains(PermissionMode::Scheduled)
                        && r.capability != Capability::Background
                        && !wakes(host) =>
                {
                    refusal(format!(
                        "{} cannot wake an agent (it grants no scheduled background), so {} cannot run on a schedule",
                        host.name, r.capability
                    ))
                }
                (Some(_), None) => (Outcome::Granted, None, None),
                (Some(m), Some(asked)) if m.contains(asked) => {
                    (Outcome::Granted, Some(asked), None)
                }
                (Some(m), Some(asked)) => {
                    match downgrades(asked).iter().find(|d| m.contains(**d)) {
                        Some(weaker) => (
                            Outcome::Downgraded,
                            Some(*weaker),
                            Some(format!(
                                "{} grants {} as {}, not {}",
                                host.name,
                                r.capability,
                                weaker.as_str(),
                                asked.as_str()
                            )),
                        ),
                        None => refusal(format!(
                            "{} grants {} only as {}, not {}",
                            host.name,
                            r.capability,
                            host_modes
                                .iter()
                                .map(|m| m.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                            asked.as_str()
                        )),
                    }
                }
            };
            CapabilityDecision {
                capability: r.capability,
                required: r.required,
                outcome,
                requested_mode: r.mode,
                granted_mode,
                host_modes,
                requested_by: r.requested_by.clone(),
                reason,
            }
        })
        .collect();
    HostReport {
        host: host.name.clone(),
        asks_user: host.asks_user,
        capabilities,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(c: &str, required: bool, mode: Option<PermissionMode>) -> Request {
        Request {
            capability: c.parse().unwrap(),
            required,
            mode,
            requested_by: vec![Requester::Agent(PackageName::new("a").unwrap())],
        }
    }

    #[test]
    fn the_builtin_profiles_are_the_specs_hosts() {
        assert_eq!(
            HostProfile::builtin_names(),
            [
                "claude-desktop",
                "replit-agent",
                "desktop-app",
                "mobile-app",
                "browser-extension",
                "local"
            ]
        );
        let local = HostProfile::find_builtin("local").unwrap();
        assert_eq!(local.grants.len(), Capability::ALL.len());
        assert!(local.grants.values().all(|m| m.0.len() == 4));
        let desktop = HostProfile::find_builtin("desktop-app").unwrap();
        assert_eq!(desktop.grants, local.grants);
        let claude = HostProfile::find_builtin("claude-desktop").unwrap();
        assert!(!claude.grants.contains_key(&Capability::Background));
        assert!(
            claude
                .grants
                .values()
                .all(|m| m.0.len() == 1 && m.contains(PermissionMode::UserTriggered))
        );
        let replit = HostProfile::find_builtin("replit-agent").unwrap();
        assert!(replit.grants.contains_key(&Capability::Filesystem));
        assert!(
            Capability::ALL
                .iter()
                .filter(|c| c.category() == crate::capability::CapabilityCategory::Sensors)
                .all(|c| !replit.grants.contains_key(c))
        );
        assert!(HostProfile::find_builtin("mobile-app").unwrap().asks_user);
    }

    #[test]
    fn granted_downgraded_degraded_refused() {
        let claude = HostProfile::find_builtin("claude-desktop").unwrap();
        let report = check(
            claude,
            &[
                request("network", true, None),
                request("storage", true, Some(PermissionMode::OnDemand)),
                request("camera", false, Some(PermissionMode::OnDemand)),
                request("background", true, Some(PermissionMode::Scheduled)),
                request("filesystem", true, Some(PermissionMode::Scheduled)),
            ],
        );
        let outcomes: Vec<(&str, Outcome, Option<PermissionMode>)> = report
            .capabilities
            .iter()
            .map(|d| (d.capability.as_str(), d.outcome, d.granted_mode))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("network", Outcome::Granted, None),
                (
                    "storage",
                    Outcome::Downgraded,
                    Some(PermissionMode::UserTriggered)
                ),
                ("camera", Outcome::Degraded, None),
                ("background", Outcome::Refused, None),
                ("filesystem", Outcome::Refused, None),
            ]
        );
        assert!(!report.runnable());
        let summary = report.refusal_summary().unwrap();
        assert!(
            summary.starts_with("host claude-desktop cannot run this agent"),
            "{summary}"
        );
        assert!(
            summary.contains("background (required by agent a)"),
            "{summary}"
        );
        assert!(
            summary.contains("only as user_triggered, not scheduled"),
            "{summary}"
        );
        let local = HostProfile::find_builtin("local").unwrap();
        assert!(
            check(
                local,
                &[request("background", true, Some(PermissionMode::Scheduled))]
            )
            .runnable()
        );
    }

    #[test]
    fn scheduled_work_needs_a_host_that_wakes() {
        // The host grants camera in scheduled mode but no background: the
        // schedule would never fire.
        let no_wake = HostProfile::parse(
            b"name: kiosk\ndescription: A kiosk.\ngrants:\n  camera: all\n  background: [continuous]\n",
        )
        .unwrap();
        let report = check(
            &no_wake,
            &[
                request("camera", true, Some(PermissionMode::Scheduled)),
                request("microphone", false, Some(PermissionMode::Continuous)),
            ],
        );
        assert!(!report.runnable());
        assert_eq!(report.capabilities[0].outcome, Outcome::Refused);
        assert_eq!(
            report.capabilities[0].reason.as_deref(),
            Some(
                "kiosk cannot wake an agent (it grants no scheduled background), so camera cannot run on a schedule"
            )
        );
        // An optional one degrades instead.
        let optional = check(
            &no_wake,
            &[request("camera", false, Some(PermissionMode::Scheduled))],
        );
        assert_eq!(optional.capabilities[0].outcome, Outcome::Degraded);
        assert!(optional.runnable());
        // The mobile app wakes on a schedule: camera on a schedule runs.
        let mobile = HostProfile::find_builtin("mobile-app").unwrap();
        let report = check(
            mobile,
            &[
                request("camera", true, Some(PermissionMode::Scheduled)),
                request("background", true, Some(PermissionMode::Scheduled)),
            ],
        );
        assert!(report.runnable(), "{report:?}");
    }

    #[test]
    fn host_files_are_strict() {
        let ok = HostProfile::parse(
            b"name: kiosk\ndescription: A kiosk.\ngrants:\n  camera: [user_triggered]\n  storage: all\n",
        )
        .unwrap();
        assert_eq!(ok.grants.len(), 2);
        assert!(!ok.asks_user);
        for bad in [
            "name: Kiosk\ndescription: x\ngrants: {}\n",
            "name: kiosk\ndescription: x\ngrants:\n  telepathy: all\n",
            "name: kiosk\ndescription: x\ngrants:\n  camera: [sometimes]\n",
            "name: kiosk\ndescription: x\ngrants:\n  camera: most\n",
            "name: kiosk\ndescription: x\ngrants:\n  camera: []\n",
            "name: kiosk\ndescription: x\ngrant: {}\n",
        ] {
            assert!(HostProfile::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
