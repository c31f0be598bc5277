//! One askama template struct per page. Each renders a complete HTML document
//! through `templates/base.html`; the server sets the status code.
//!
//! Paths the pages link to and post to (the server routes them):
//! `GET /`, `/search`, `/agents/{name}[/{version}]`,
//! `/agents/{name}/diff?from=&to=`, `/tools/{name}[/{version}]`,
//! `/skills/{name}[/{version}]`,
//! `/publishers/{name}`, `/keys/{key_id}`, `/login`, `/account`, `/docs`,
//! `/advisories[/{id}]` (pages in [`crate::advisory`]),
//! `/static/{style.css,copy.js}` (see [`crate::assets`]);
//! `POST /login`, `/logout`, `/account/tokens`, `/account/tokens/{id}/revoke`,
//! `/account/keys`, `/account/keys/{key_id}/revoke`,
//! `/account/{agents|tools}/{name}/owners` (field `username`),
//! `/account/{agents|tools}/{name}/owners/remove` (field `username`),
//! `/{agents|tools|skills}/{name}/{version}/yank` (field `reason`) and
//! `/unyank`.
//! Every POST form carries a hidden `csrf_token`.

use agentlang_core::{
    Kind, PackageName, Version,
    events::timeline::{Item, Row, Timeline, seconds},
    quality::{Finding, QualityReport, Severity},
};
use askama::Template;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::{
    diff::{AgentDiff, diff_agents},
    highlight::highlight_terms,
    markdown::render_markdown,
    model::*,
    // The templates call `label()` and `css_class()` on risk levels.
    risk::{RiskBadge, RiskLevel},
    schema::{SchemaRow, schema_rows},
};

/// Characters left alone in a query-string value.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn query_value(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// Cuts text to at most `max` characters at a word boundary, for meta
/// descriptions.
fn clip(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}…")
}

/// The first paragraph of markdown as plain text, for meta descriptions.
fn plain_summary(markdown: &str) -> String {
    let first = markdown.split("\n\n").next().unwrap_or_default();
    let plain: String = first
        .chars()
        .filter(|c| !matches!(c, '#' | '*' | '_' | '`' | '[' | ']' | '<' | '>'))
        .collect();
    clip(&plain, 155)
}

fn newest_unyanked(versions: &[VersionSummary]) -> Option<&Version> {
    versions
        .iter()
        .filter(|v| v.yanked.is_none() && !v.version.is_prerelease())
        .map(|v| &v.version)
        .max()
        .or_else(|| versions.iter().map(|v| &v.version).max())
}

// ---------------------------------------------------------------- home

#[derive(Template)]
#[template(path = "home.html")]
pub struct HomePage {
    pub chrome: Chrome,
    pub stats: RegistryStats,
    pub recently_published: Vec<PackageSummary>,
    pub most_downloaded: Vec<PackageSummary>,
}

// ---------------------------------------------------------------- search

/// A numbered link in the pagination bar; `None` stands for a gap (…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLink {
    pub number: Option<u64>,
    pub href: String,
    pub current: bool,
}

#[derive(Template)]
#[template(path = "search.html")]
pub struct SearchPage {
    pub chrome: Chrome,
    pub query: String,
    pub kind: Option<Kind>,
    pub category: Option<String>,
    /// Categories offered in the filter (e.g. the ones in use).
    pub categories: Vec<String>,
    pub results: Vec<PackageSummary>,
    /// Matches over all pages.
    pub total: u64,
    /// 1-based.
    pub page: u64,
    pub per_page: u64,
}

impl SearchPage {
    pub fn total_pages(&self) -> u64 {
        self.total.div_ceil(self.per_page.max(1)).max(1)
    }

    pub fn has_filters(&self) -> bool {
        self.kind.is_some() || self.category.is_some()
    }

    pub fn kind_is(&self, kind: &str) -> bool {
        self.kind.map(Kind::as_str) == Some(kind)
    }

    pub fn category_is(&self, category: &str) -> bool {
        self.category.as_deref() == Some(category)
    }

    fn href(&self, kind: Option<Kind>, category: Option<&str>, page: u64) -> String {
        let mut params = vec![format!("q={}", query_value(&self.query))];
        if let Some(kind) = kind {
            params.push(format!("kind={kind}"));
        }
        if let Some(category) = category {
            params.push(format!("category={}", query_value(category)));
        }
        if page > 1 {
            params.push(format!("page={page}"));
        }
        format!("/search?{}", params.join("&"))
    }

    pub fn page_href(&self, page: u64) -> String {
        self.href(self.kind, self.category.as_deref(), page)
    }

    pub fn without_filters_href(&self) -> String {
        self.href(None, None, 1)
    }

    pub fn prev_href(&self) -> Option<String> {
        (self.page > 1).then(|| self.page_href(self.page - 1))
    }

    pub fn next_href(&self) -> Option<String> {
        (self.page < self.total_pages()).then(|| self.page_href(self.page + 1))
    }

    /// First, last, and two either side of the current page, with gaps.
    pub fn page_links(&self) -> Vec<PageLink> {
        let last = self.total_pages();
        let mut links = Vec::new();
        let mut previous = 0;
        for n in 1..=last {
            let near = n.abs_diff(self.page) <= 2;
            if n == 1 || n == last || near {
                if n > previous + 1 {
                    links.push(PageLink {
                        number: None,
                        href: String::new(),
                        current: false,
                    });
                }
                links.push(PageLink {
                    number: Some(n),
                    href: self.page_href(n),
                    current: n == self.page,
                });
                previous = n;
            }
        }
        links
    }

    /// `text` escaped, with the query's terms in `<mark>`.
    pub fn highlight(&self, text: &str) -> String {
        highlight_terms(text, &self.query)
    }

    pub fn first_shown(&self) -> u64 {
        (self.page - 1) * self.per_page + 1
    }

    pub fn last_shown(&self) -> u64 {
        self.first_shown() + self.results.len() as u64 - 1
    }
}

// ---------------------------------------------------------------- agent

/// `/agents/{name}` (newest version) and `/agents/{name}/{version}`.
#[derive(Template)]
#[template(path = "agent.html")]
pub struct AgentPage {
    pub chrome: Chrome,
    pub agent: AgentVersionView,
    /// Per known host, whether this version can run there.
    pub hosts: Vec<HostFitView>,
    /// Every version of the agent, newest first.
    pub versions: Vec<VersionSummary>,
    pub artifact: ArtifactView,
    pub owners: Vec<OwnerView>,
    /// Downloads over all versions.
    pub total_downloads: u64,
    pub owner_controls: Option<OwnerControls>,
    /// Capabilities needed beyond `permissions`, riskiest first.
    pub undeclared: Vec<UndeclaredView>,
    /// What the agent reaches outside itself with, in plain language,
    /// riskiest first (`core::trust`).
    pub statements: Vec<agentlang_core::trust::Statement>,
    /// The deterministic prompt review stored at publish; `None` for
    /// versions published before reports existed.
    pub quality: Option<QualityReport>,
    /// The declared protocols against today's catalog.
    pub protocol_notices: Vec<ProtocolNotice>,
    /// The A2A interface, when the version declares one the registry
    /// serves a signed card of.
    pub a2a_card: Option<A2aCardView>,
    /// The version's prompt mode; `None` when it is not recorded.
    pub prompt: Option<PromptView>,
    /// Who holds grants of the agent's prompt key: for its owners only.
    pub grants: Option<Vec<GrantRowView>>,
    /// Advisories (not withdrawn) affecting this version.
    pub advisories: Vec<crate::advisory::AdvisoryNotice>,
}

impl AgentPage {
    /// The notice about one declared protocol, if any.
    pub fn protocol_notice(&self, name: &str) -> Option<&ProtocolNotice> {
        self.protocol_notices.iter().find(|n| n.name == name)
    }

    pub fn finding_location(&self, f: &Finding) -> String {
        finding_location(f)
    }

    /// `risk` CSS class for the quality summary.
    pub fn quality_class(&self) -> &'static str {
        match &self.quality {
            Some(q) if q.count(Severity::Error) > 0 => "notice notice-error",
            Some(q) if q.count(Severity::Warning) > 0 => "notice notice-warning",
            _ => "notice",
        }
    }

    pub fn meta_description(&self) -> String {
        let summary = plain_summary(&self.agent.description_markdown);
        let lead = match &self.agent.subtitle {
            Some(subtitle) => format!("{subtitle}. {summary}"),
            None => summary,
        };
        clip(
            &format!("{} {}: {lead}", self.agent.title, self.agent.version),
            155,
        )
    }

    pub fn description_html(&self) -> String {
        render_markdown(&self.agent.description_markdown)
    }

    pub fn current_yank(&self) -> Option<&Yank> {
        self.versions
            .iter()
            .find(|v| v.version == self.agent.version)
            .and_then(|v| v.yanked.as_ref())
    }

    /// The shown version's status, when not active.
    pub fn current_status(&self) -> Option<&StatusNotice> {
        self.versions
            .iter()
            .find(|v| v.version == self.agent.version)
            .and_then(|v| v.status.as_ref())
    }

    pub fn newest_version(&self) -> Option<&Version> {
        newest_unyanked(&self.versions)
    }

    pub fn is_newest(&self) -> bool {
        self.newest_version()
            .is_none_or(|v| *v == self.agent.version)
    }

    /// The version published just before this one, to compare against.
    pub fn previous_version(&self) -> Option<&Version> {
        self.versions
            .iter()
            .map(|v| &v.version)
            .filter(|v| **v < self.agent.version)
            .max()
    }

    pub fn diff_href(&self, from: &Version) -> String {
        format!(
            "/agents/{}/diff?from={from}&to={}",
            self.agent.name, self.agent.version
        )
    }

    pub fn version_href(&self, version: &Version) -> String {
        format!("/agents/{}/{version}", self.agent.name)
    }

    pub fn yank_action(&self, version: &Version) -> String {
        format!("/agents/{}/{version}/yank", self.agent.name)
    }

    pub fn unyank_action(&self, version: &Version) -> String {
        format!("/agents/{}/{version}/unyank", self.agent.name)
    }

    /// What most visitors want first: the agent with every tool its lock
    /// pins, verified, in a folder `agentlang run` takes. `@=`: the version
    /// the page shows, not the newest that is compatible with it.
    pub fn install_command(&self) -> String {
        format!(
            "agentlang install {}@={}",
            self.agent.name, self.agent.version
        )
    }

    pub fn pull_command(&self) -> String {
        format!("agentlang pull {}@={}", self.agent.name, self.agent.version)
    }

    /// How this agent appears in a parent's `agent.lock`.
    pub fn lock_snippet(&self) -> String {
        format!(
            "agents:\n  {}:\n    version: {}\n    hash: sha256:{}",
            self.agent.name, self.agent.version, self.artifact.sha256
        )
    }

    /// E.g. `1 Critical, 2 High, 1 Medium, 1 Low`: highest first, levels
    /// with no capability left out.
    /// Every capability's risk: requested ones and undeclared ones.
    fn risks(&self) -> impl Iterator<Item = RiskLevel> + '_ {
        let requested = self.agent.permissions.iter().map(PermissionView::risk);
        requested.chain(self.undeclared.iter().map(UndeclaredView::risk))
    }

    /// The highest risk of what the agent can do: its permissions and what
    /// it needs without requesting.
    pub fn max_risk(&self) -> Option<RiskLevel> {
        self.risks().max()
    }

    pub fn risk_breakdown(&self) -> String {
        [
            RiskLevel::Critical,
            RiskLevel::High,
            RiskLevel::Medium,
            RiskLevel::Low,
        ]
        .into_iter()
        .filter_map(|level| {
            let count = self.risks().filter(|r| *r == level).count();
            (count > 0).then(|| format!("{count} {}", level.label()))
        })
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// Required, then optional capabilities, each riskiest first; groups
    /// with nothing in them are left out.
    pub fn permission_groups(&self) -> Vec<PermissionGroup<'_>> {
        let group = |id, heading, required: bool| {
            let mut permissions: Vec<&PermissionView> = self
                .agent
                .permissions
                .iter()
                .filter(|p| p.required == required)
                .collect();
            permissions.sort_by_key(|p| std::cmp::Reverse(p.risk()));
            PermissionGroup {
                id,
                heading,
                permissions,
            }
        };
        [
            group("required-permissions", "Required", true),
            group("optional-permissions", "Optional", false),
        ]
        .into_iter()
        .filter(|g| !g.permissions.is_empty())
        .collect()
    }

    pub fn is_current(&self, version: &Version) -> bool {
        *version == self.agent.version
    }
}

/// Required or optional capabilities, as one table on the agent page.
#[derive(Debug)]
pub struct PermissionGroup<'a> {
    pub id: &'static str,
    pub heading: &'static str,
    pub permissions: Vec<&'a PermissionView>,
}

// ---------------------------------------------------------------- tool

/// `/tools/{name}` (newest version) and `/tools/{name}/{version}`.
#[derive(Template)]
#[template(path = "tool.html")]
pub struct ToolPage {
    pub chrome: Chrome,
    pub tool: ToolVersionView,
    pub versions: Vec<VersionSummary>,
    pub artifact: ArtifactView,
    pub owners: Vec<OwnerView>,
    pub total_downloads: u64,
    pub used_by: ReverseDependencies,
    pub owner_controls: Option<OwnerControls>,
    /// A `kind: mcp` tool's MCP Registry entry.
    pub mcp: Option<McpEntryView>,
    /// A `kind: http` or `kind: bash` tool's binding.
    pub binding: Option<BindingView>,
    /// Advisories (not withdrawn) affecting this version.
    pub advisories: Vec<crate::advisory::AdvisoryNotice>,
}

impl ToolPage {
    pub fn meta_description(&self) -> String {
        clip(
            &format!(
                "{} {}: {}",
                self.tool.name,
                self.tool.version,
                plain_summary(&self.tool.description_markdown)
            ),
            155,
        )
    }

    /// The highest risk of what the tool requires, for the banner the
    /// agent page has too: every agent that locks it asks for as much.
    pub fn max_risk(&self) -> Option<RiskLevel> {
        self.tool.capabilities.iter().map(|c| c.risk()).max()
    }

    /// E.g. `1 High, 1 Low`: highest first, empty levels left out.
    pub fn risk_breakdown(&self) -> String {
        [
            RiskLevel::Critical,
            RiskLevel::High,
            RiskLevel::Medium,
            RiskLevel::Low,
        ]
        .into_iter()
        .filter_map(|level| {
            let count = self
                .tool
                .capabilities
                .iter()
                .filter(|c| c.risk() == level)
                .count();
            (count > 0).then(|| format!("{count} {}", level.label()))
        })
        .collect::<Vec<_>>()
        .join(", ")
    }

    pub fn description_html(&self) -> String {
        render_markdown(&self.tool.description_markdown)
    }

    pub fn input_rows(&self) -> Vec<SchemaRow> {
        self.tool
            .input_schema
            .as_ref()
            .map(schema_rows)
            .unwrap_or_default()
    }

    pub fn output_rows(&self) -> Vec<SchemaRow> {
        self.tool
            .output_schema
            .as_ref()
            .map(schema_rows)
            .unwrap_or_default()
    }

    pub fn current_yank(&self) -> Option<&Yank> {
        self.versions
            .iter()
            .find(|v| v.version == self.tool.version)
            .and_then(|v| v.yanked.as_ref())
    }

    /// The shown version's status, when not active.
    pub fn current_status(&self) -> Option<&StatusNotice> {
        self.versions
            .iter()
            .find(|v| v.version == self.tool.version)
            .and_then(|v| v.status.as_ref())
    }

    pub fn newest_version(&self) -> Option<&Version> {
        newest_unyanked(&self.versions)
    }

    pub fn is_newest(&self) -> bool {
        self.newest_version()
            .is_none_or(|v| *v == self.tool.version)
    }

    pub fn version_href(&self, version: &Version) -> String {
        format!("/tools/{}/{version}", self.tool.name)
    }

    pub fn is_current(&self, version: &Version) -> bool {
        *version == self.tool.version
    }

    pub fn yank_action(&self, version: &Version) -> String {
        format!("/tools/{}/{version}/yank", self.tool.name)
    }

    pub fn unyank_action(&self, version: &Version) -> String {
        format!("/tools/{}/{version}/unyank", self.tool.name)
    }

    pub fn pull_command(&self) -> String {
        format!(
            "agentlang pull {}@={} --kind tool",
            self.tool.name, self.tool.version
        )
    }

    /// The `agent.yaml` lines that require this tool.
    pub fn requirement_snippet(&self) -> String {
        format!(
            "tools:\n  - name: {}\n    version: ^{}",
            self.tool.name, self.tool.version
        )
    }

    /// How this tool appears in an `agent.lock`.
    pub fn lock_snippet(&self) -> String {
        format!(
            "tools:\n  {}:\n    version: {}\n    hash: sha256:{}",
            self.tool.name, self.tool.version, self.artifact.sha256
        )
    }
}

// ---------------------------------------------------------------- skill

/// `/skills/{name}[/{version}]`: a skill package version, its SKILL.md
/// rendered, how to pull it and depend on it, and its discovery entry.
#[derive(Template)]
#[template(path = "skill.html")]
pub struct SkillPage {
    pub chrome: Chrome,
    pub skill: SkillVersionView,
    pub versions: Vec<VersionSummary>,
    pub artifact: ArtifactView,
    pub owners: Vec<OwnerView>,
    pub total_downloads: u64,
    pub owner_controls: Option<OwnerControls>,
    pub index_entry: SkillIndexEntryView,
    /// Advisories (not withdrawn) affecting this version.
    pub advisories: Vec<crate::advisory::AdvisoryNotice>,
}

impl SkillPage {
    pub fn meta_description(&self) -> String {
        clip(
            &format!(
                "{} {}: {}",
                self.skill.name, self.skill.version, self.skill.description
            ),
            155,
        )
    }

    /// The SKILL.md body, if it has one: publisher content, so sanitized.
    pub fn body_html(&self) -> Option<String> {
        self.skill
            .body_markdown
            .as_deref()
            .filter(|body| !body.trim().is_empty())
            .map(render_markdown)
    }

    pub fn current_yank(&self) -> Option<&Yank> {
        self.versions
            .iter()
            .find(|v| v.version == self.skill.version)
            .and_then(|v| v.yanked.as_ref())
    }

    /// The shown version's status, when not active.
    pub fn current_status(&self) -> Option<&StatusNotice> {
        self.versions
            .iter()
            .find(|v| v.version == self.skill.version)
            .and_then(|v| v.status.as_ref())
    }

    pub fn newest_version(&self) -> Option<&Version> {
        newest_unyanked(&self.versions)
    }

    pub fn is_newest(&self) -> bool {
        self.newest_version()
            .is_none_or(|v| *v == self.skill.version)
    }

    pub fn version_href(&self, version: &Version) -> String {
        format!("/skills/{}/{version}", self.skill.name)
    }

    pub fn is_current(&self, version: &Version) -> bool {
        *version == self.skill.version
    }

    pub fn yank_action(&self, version: &Version) -> String {
        format!("/skills/{}/{version}/yank", self.skill.name)
    }

    pub fn unyank_action(&self, version: &Version) -> String {
        format!("/skills/{}/{version}/unyank", self.skill.name)
    }

    pub fn pull_command(&self) -> String {
        format!(
            "agentlang pull {}@={} --kind skill",
            self.skill.name, self.skill.version
        )
    }

    /// The `agent.yaml` lines that depend on this skill: `^MAJOR.MINOR` of
    /// a release, the whole version of a prerelease (a requirement picks a
    /// prerelease only when it names one).
    pub fn requirement_snippet(&self) -> String {
        let v = self.skill.version.semver();
        let requirement = if v.pre.is_empty() {
            format!("{}.{}", v.major, v.minor)
        } else {
            v.to_string()
        };
        format!(
            "skills:\n  - name: {}\n    version: ^{requirement}",
            self.skill.name
        )
    }
}

// ---------------------------------------------------------------- protocol

/// One version of a protocol and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolVersionRow {
    pub version: Version,
    /// `stable`, `deprecated` or `removed`.
    pub status: String,
    pub successor: Option<Version>,
    pub message: Option<String>,
}

/// The definition a protocol package carries (`protocol.yaml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolDefinitionView {
    pub version: Version,
    pub message_format: String,
    pub transport: String,
    pub auth: String,
}

/// `/protocols/{name}`: a catalog protocol (`a2a`, `mcp`) or a published
/// custom protocol, with every version's status.
#[derive(Template)]
#[template(path = "protocol.html")]
pub struct ProtocolPage {
    pub chrome: Chrome,
    pub name: String,
    /// True for a published `protocol` package (agents name it
    /// `custom/<name>`), false for a catalog entry.
    pub is_package: bool,
    pub description: String,
    /// Oldest first.
    pub versions: Vec<ProtocolVersionRow>,
    /// The newest version's definition (packages only).
    pub definition: Option<ProtocolDefinitionView>,
    pub owners: Vec<OwnerView>,
}

impl ProtocolPage {
    /// How an agent declares it.
    pub fn declared_as(&self) -> String {
        if self.is_package {
            format!("custom/{}", self.name)
        } else {
            self.name.clone()
        }
    }

    pub fn requirement_snippet(&self) -> String {
        let newest = self
            .versions
            .iter()
            .rev()
            .find(|v| v.status == "stable")
            .map(|v| format!("\n    version: ^{}", v.version))
            .unwrap_or_default();
        format!("protocols:\n  - name: {}{newest}", self.declared_as())
    }

    pub fn status_class(&self, row: &ProtocolVersionRow) -> &'static str {
        match row.status.as_str() {
            "deprecated" => "status status-deprecated",
            "removed" => "status status-removed",
            _ => "status status-stable",
        }
    }
}

// ---------------------------------------------------------------- replay

/// What the replay form accepts, for its hint text.
#[derive(Debug, Clone, Copy)]
pub struct ReplayLimits {
    pub max_bytes: usize,
    pub max_events: usize,
}

/// `/replay`: an events file uploaded and laid out as a timeline, one lane
/// per agent. Rendered on the server; the layout is CSS classes only.
#[derive(Template)]
#[template(path = "replay.html")]
pub struct ReplayPage {
    pub chrome: Chrome,
    pub limits: ReplayLimits,
    /// The uploaded file's name, as the browser sent it.
    pub file_name: Option<String>,
    /// Problems that keep the log from being replayed (parse and schema).
    pub errors: Vec<String>,
    pub timeline: Option<Timeline>,
}

impl ReplayPage {
    pub fn limit_label(&self) -> String {
        format!(
            "{} and {} events",
            human_bytes(self.limits.max_bytes as u64),
            self.limits.max_events
        )
    }

    pub fn lane_count(&self) -> usize {
        self.timeline.as_ref().map_or(0, |t| t.lanes.len())
    }

    pub fn rows(&self) -> &[Row] {
        self.timeline.as_ref().map_or(&[], |t| t.rows.as_slice())
    }

    /// Takes the lane by value or reference, as templates hand them over.
    pub fn lane_name(&self, lane: impl std::borrow::Borrow<usize>) -> &str {
        self.timeline
            .as_ref()
            .and_then(|t| t.lanes.get(*lane.borrow()))
            .map_or("", |l| l.agent.as_str())
    }

    pub fn offset(&self, row: &Row) -> String {
        seconds(row.offset_ms)
    }

    /// One cell per lane for a row: what each lane shows at this moment.
    pub fn cells(&self, row: &Row) -> Vec<Cell> {
        let lanes = self.lane_count();
        let (lo, hi, arrow_right) = match &row.item {
            Item::Delegate {
                from_lane, to_lane, ..
            } => (
                (*from_lane).min(*to_lane),
                (*from_lane).max(*to_lane),
                to_lane >= from_lane,
            ),
            _ => (row.lane, row.lane, true),
        };
        (0..lanes)
            .map(|lane| {
                let part = if let Item::Delegate {
                    from_lane, to_lane, ..
                } = &row.item
                {
                    if lane == *from_lane {
                        CellPart::ArrowFrom
                    } else if lane == *to_lane {
                        CellPart::ArrowTo
                    } else if lane > lo && lane < hi {
                        CellPart::ArrowThrough
                    } else {
                        CellPart::Empty
                    }
                } else if lane == row.lane {
                    CellPart::Event
                } else {
                    CellPart::Empty
                };
                let direction = if arrow_right { "right" } else { "left" };
                Cell {
                    class: match part {
                        CellPart::Event => "lane-cell event-cell".to_owned(),
                        CellPart::ArrowFrom => {
                            format!("lane-cell arrow arrow-from arrow-{direction}")
                        }
                        CellPart::ArrowThrough => {
                            format!("lane-cell arrow arrow-through arrow-{direction}")
                        }
                        CellPart::ArrowTo => {
                            format!("lane-cell arrow arrow-to arrow-{direction} event-cell")
                        }
                        CellPart::Empty => "lane-cell empty-cell".to_owned(),
                    },
                    // The event's text sits in its own lane; a delegation's
                    // in the receiving lane, where the arrow ends.
                    shows_event: matches!(part, CellPart::Event | CellPart::ArrowTo),
                }
            })
            .collect()
    }

    pub fn row_class(&self, row: &Row) -> &'static str {
        if row.is_error() {
            "event-row is-error"
        } else {
            "event-row"
        }
    }

    /// The CSS class of an event's kind.
    pub fn kind_class(&self, row: &Row) -> &'static str {
        match row.item {
            Item::Think { .. } => "kind-think",
            Item::Message { .. } => "kind-message",
            Item::ToolCall { .. } => "kind-tool-call",
            Item::OrphanResult { .. } => "kind-tool-result",
            Item::Delegate { .. } => "kind-delegate",
            Item::Compact { .. } => "kind-compaction",
        }
    }

    pub fn kind_label(&self, row: &Row) -> &'static str {
        match row.item {
            Item::Think { .. } => "think",
            Item::Message { .. } => "message",
            Item::ToolCall { .. } => "tool call",
            Item::OrphanResult { .. } => "tool result",
            Item::Delegate { .. } => "delegate",
            Item::Compact { .. } => "compaction",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellPart {
    Event,
    ArrowFrom,
    ArrowThrough,
    ArrowTo,
    Empty,
}

/// One lane's cell in a timeline row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub class: String,
    pub shows_event: bool,
}

/// Where a finding is: `file: path`.
fn finding_location(f: &Finding) -> String {
    match (&f.file, f.path.is_empty()) {
        (Some(file), false) => format!("{file}: {}", f.path),
        (Some(file), true) => file.clone(),
        (None, false) => f.path.clone(),
        (None, true) => String::new(),
    }
}

// ---------------------------------------------------------------- diff

/// `/agents/{name}/diff?from=1.0.0&to=1.1.0`.
#[derive(Template)]
#[template(path = "diff.html")]
pub struct AgentDiffPage {
    pub chrome: Chrome,
    pub diff: AgentDiff,
    /// Every change that touches trust (`core::trust::diff`), when both
    /// versions' trust pictures are stored.
    pub trust: Option<agentlang_core::trust::TrustDiff>,
    /// Every version of the agent, for the from/to pickers.
    pub versions: Vec<Version>,
}

impl AgentDiffPage {
    pub fn new(
        chrome: Chrome,
        from: &AgentVersionView,
        to: &AgentVersionView,
        trust: Option<agentlang_core::trust::TrustDiff>,
        versions: Vec<Version>,
    ) -> Self {
        Self {
            chrome,
            diff: diff_agents(from, to),
            trust,
            versions,
        }
    }

    /// How many changes give the newer version more power.
    pub fn risk_raising(&self) -> usize {
        self.trust
            .as_ref()
            .map_or(0, |t| t.changes.iter().filter(|c| c.raises_risk).count())
    }

    pub fn name(&self) -> &PackageName {
        &self.diff.name
    }

    pub fn action(&self) -> String {
        format!("/agents/{}/diff", self.diff.name)
    }

    pub fn agent_href(&self, version: &Version) -> String {
        format!("/agents/{}/{version}", self.diff.name)
    }

    pub fn is_from(&self, version: &Version) -> bool {
        *version == self.diff.from_version
    }

    pub fn is_to(&self, version: &Version) -> bool {
        *version == self.diff.to_version
    }
}

// ---------------------------------------------------------------- publisher, key

#[derive(Template)]
#[template(path = "publisher.html")]
pub struct PublisherPage {
    pub chrome: Chrome,
    pub publisher: PublisherView,
    pub packages: Vec<PackageSummary>,
    pub keys: Vec<KeySummary>,
}

#[derive(Template)]
#[template(path = "key.html")]
pub struct KeyPage {
    pub chrome: Chrome,
    pub key: KeySummary,
    pub owner: String,
    /// Versions signed with this key, newest first.
    pub signed: Vec<VersionRef>,
}

impl KeyPage {
    pub fn owner_href(&self) -> String {
        publisher_href(&self.owner)
    }
}

// ---------------------------------------------------------------- docs

/// `/docs`: how to publish, install and verify, and the format pages.
#[derive(Template)]
#[template(path = "docs.html")]
pub struct DocsPage {
    pub chrome: Chrome,
    /// The registry's public URL, for the copyable commands.
    pub registry_url: String,
    /// (slug, title) of each format page, `/docs/<slug>`.
    pub pages: Vec<(String, String)>,
    /// The README's walkthrough as HTML (`render_guide`): trusted, compiled
    /// in.
    pub guide: String,
}

/// `/docs/<slug>`: one page of the repository's `docs/`.
#[derive(Template)]
#[template(path = "doc.html")]
pub struct DocPage {
    pub chrome: Chrome,
    pub title: String,
    /// Rendered by [`crate::render_docs`] from the registry's own files.
    pub html: String,
}

// ---------------------------------------------------------------- log

/// One entry of the transparency log, as the log page lists it.
#[derive(Debug, Clone)]
pub struct LogEntryRow {
    pub index: u64,
    /// RFC 3339.
    pub time: String,
    pub op: String,
    /// What it is about: `tool web_fetch@1.0.3`, `key 3f2a…`, the origin.
    pub subject: String,
    /// The catalog page of the version or key it concerns.
    pub href: Option<String>,
    pub account: Option<String>,
    pub reason: Option<String>,
    pub sha256: Option<String>,
}

/// `/log`: the latest checkpoint and a window of entries.
#[derive(Template)]
#[template(path = "log.html")]
pub struct LogPage {
    pub chrome: Chrome,
    pub origin: String,
    /// Entries in the tree the checkpoint signs.
    pub size: u64,
    /// Hex.
    pub root: String,
    /// The checkpoint note, signatures included.
    pub note: String,
    /// The log's verifier key.
    pub key: String,
    /// Names of the witnesses that cosigned the checkpoint.
    pub witnesses: Vec<String>,
    /// Newest first.
    pub entries: Vec<LogEntryRow>,
    /// The entry asked for (`?at=`), highlighted.
    pub at: Option<u64>,
    /// `?at=` of the next newer and older windows.
    pub newer: Option<u64>,
    pub older: Option<u64>,
}

impl LogPage {
    pub fn is_at(&self, index: &u64) -> bool {
        self.at == Some(*index)
    }
}

// ---------------------------------------------------------------- problems

/// One problem type the API answers with, as its page describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemView {
    pub slug: String,
    pub status: u16,
    pub title: String,
    /// Markdown: what it means and what to do.
    pub advice: String,
}

impl ProblemView {
    pub fn href(&self) -> String {
        format!("/problems/{}", self.slug)
    }

    pub fn advice_html(&self) -> String {
        render_markdown(&self.advice)
    }
}

/// `/problems/` (every problem type) and `/problems/{slug}` (one, with the
/// others listed): the pages problem documents' `type` URIs point at.
#[derive(Template)]
#[template(path = "problems.html")]
pub struct ProblemsPage {
    pub chrome: Chrome,
    pub registry_url: String,
    /// The problem the page is about; `None` on the index.
    pub problem: Option<ProblemView>,
    pub problems: Vec<ProblemView>,
}

impl ProblemsPage {
    /// The `type` URI of a problem on this registry.
    pub fn type_uri(&self, p: &ProblemView) -> String {
        format!(
            "{}/problems/{}",
            self.registry_url.trim_end_matches('/'),
            p.slug
        )
    }
}

// ---------------------------------------------------------------- errors

#[derive(Template)]
#[template(path = "not_found.html")]
pub struct NotFoundPage {
    pub chrome: Chrome,
}

/// Any other failure. It shows a fixed message chosen by status code and
/// has no free-text field, so internal error text cannot reach the page.
#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub chrome: Chrome,
    status: u16,
    /// An opaque id the server also logs, so a report can be matched up.
    request_id: Option<String>,
}

impl ErrorPage {
    pub fn new(chrome: Chrome, status: u16, request_id: Option<String>) -> Self {
        Self {
            chrome,
            status,
            request_id,
        }
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn heading(&self) -> &'static str {
        match self.status {
            400 | 422 => "That request could not be understood",
            401 => "Please sign in",
            403 => "You do not have access to this",
            404 | 410 => "Page not found",
            405 => "That action is not allowed here",
            409 => "That conflicts with what is already there",
            413 => "That upload is too large",
            429 => "Too many requests",
            500..=599 => "Something went wrong on our side",
            _ => "Something went wrong",
        }
    }

    pub fn advice(&self) -> &'static str {
        match self.status {
            401 => "Your session may have expired. Sign in and try again.",
            403 => "If you think you should have access, ask an owner of the package.",
            429 => "Wait a minute, then try again.",
            500..=599 => "The error has been logged. Try again in a moment.",
            _ => "Go back and check what you entered, or start again from the home page.",
        }
    }
}

// ---------------------------------------------------------------- signed in

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginError {
    InvalidCredentials,
    TooManyAttempts,
    SessionExpired,
    /// Second factor: the code is wrong, expired or used.
    CodeInvalid,
}

impl LoginError {
    pub fn message(self) -> &'static str {
        match self {
            LoginError::InvalidCredentials => "The username or password is not right.",
            LoginError::TooManyAttempts => "Too many attempts. Wait a few minutes and try again.",
            LoginError::SessionExpired => "The form expired. Please sign in again.",
            LoginError::CodeInvalid => {
                "The code is not right, or was used already. Wait for the next one."
            }
        }
    }
}

#[derive(Template)]
#[template(path = "login.html")]
pub struct LoginPage {
    pub chrome: Chrome,
    pub csrf_token: String,
    /// Kept after a failed attempt; the password never is.
    pub username: String,
    pub error: Option<LoginError>,
    /// Second factor: the signed pending sign-in when the password was
    /// right and the account asks for a code (the page then asks for it).
    pub pending: Option<String>,
}

/// Token lifetimes the create form offers, in days.
pub const TOKEN_EXPIRY_DAYS: [u32; 4] = [7, 30, 90, 365];

#[derive(Template)]
#[template(path = "account.html")]
pub struct AccountPage {
    pub chrome: Chrome,
    pub csrf_token: String,
    pub username: String,
    /// Present only on the response that created it.
    pub new_token: Option<NewTokenView>,
    pub tokens: Vec<ApiTokenView>,
    pub scopes: Vec<ScopeOption>,
    pub keys: Vec<KeySummary>,
    /// The text a key registration's proof signs, with `<key id>` for the
    /// key's id, and the command that makes the proof.
    pub key_proof_text: String,
    pub packages: Vec<OwnedPackage>,
    pub invitations: Vec<InvitationView>,
    /// The latest events of the account, newest first.
    pub audit: Vec<AuditView>,
    /// User-facing messages about the last form (e.g. "That key is already
    /// registered"). Never internal error text.
    pub errors: Vec<String>,
    /// Second factor: its state, and what the last form showed once.
    pub two_factor: TwoFactorView,
}

/// Second factor on the account page.
#[derive(Debug, Clone, Default)]
pub struct TwoFactorView {
    pub enrolled: bool,
    pub recovery_codes_left: i64,
    /// A pending enrolment's secret (base32) and otpauth URI, shown on the
    /// response to the enable form only.
    pub secret: Option<String>,
    pub otpauth_uri: Option<String>,
    /// Shown on the response to the confirm form only.
    pub recovery_codes: Vec<String>,
}

impl AccountPage {
    pub fn expiry_options(&self) -> [u32; 4] {
        TOKEN_EXPIRY_DAYS
    }

    pub fn revoke_key_action(&self, key: &KeySummary) -> String {
        format!("/account/keys/{}/revoke", path_segment(&key.key_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn search(total: u64, page: u64) -> SearchPage {
        SearchPage {
            chrome: Chrome::default(),
            query: "web search & <b>".to_owned(),
            kind: Some(Kind::Tool),
            category: None,
            categories: vec![],
            results: fixtures::package_summaries(),
            total,
            page,
            per_page: 2,
        }
    }

    #[test]
    fn pagination_shows_ends_neighbours_and_gaps() {
        let numbers = |p: &SearchPage| -> Vec<String> {
            p.page_links()
                .iter()
                .map(|l| match (l.number, l.current) {
                    (Some(n), true) => format!("[{n}]"),
                    (Some(n), false) => n.to_string(),
                    (None, _) => "…".to_owned(),
                })
                .collect()
        };
        assert_eq!(
            numbers(&search(40, 10)),
            ["1", "…", "8", "9", "[10]", "11", "12", "…", "20"]
        );
        assert_eq!(numbers(&search(6, 1)), ["[1]", "2", "3"]);
        assert_eq!(numbers(&search(0, 1)), ["[1]"]);
        assert_eq!(search(40, 1).prev_href(), None);
        assert_eq!(search(40, 20).next_href(), None);
        assert_eq!(
            search(40, 2).next_href().as_deref(),
            Some("/search?q=web%20search%20%26%20%3Cb%3E&kind=tool&page=3")
        );
        assert_eq!(
            search(40, 2).without_filters_href(),
            "/search?q=web%20search%20%26%20%3Cb%3E"
        );
    }

    #[test]
    fn clip_cuts_at_a_word() {
        assert_eq!(clip("one two three", 9), "one two…");
        assert_eq!(clip("  short\n text ", 20), "short text");
    }

    #[test]
    fn newest_skips_yanked_and_prereleases() {
        let mut versions = fixtures::versions();
        versions.insert(
            0,
            VersionSummary {
                version: Version::parse("2.0.0-rc.1").unwrap(),
                published_at: fixtures::jan(21),
                yanked: None,
                status: None,
            },
        );
        assert_eq!(
            newest_unyanked(&versions)
                .map(ToString::to_string)
                .as_deref(),
            Some("1.1.0")
        );
        versions[1].yanked = Some(Yank { reason: None });
        assert_eq!(
            newest_unyanked(&versions)
                .map(ToString::to_string)
                .as_deref(),
            Some("1.0.0")
        );
    }
}

// ------------------------------------------------------------ interface

/// `/interfaces/{name}`: an abstract tool interface and the tools that
/// provide it.
#[derive(Template)]
#[template(path = "interface.html")]
pub struct InterfacePage {
    pub chrome: Chrome,
    pub name: PackageName,
    /// By normalized name, the order resolution picks in.
    pub providers: Vec<InterfaceProviderRow>,
    /// What an agent requiring it with no version and no lock gets.
    pub default_pick: Option<PackageName>,
}

/// One tool providing an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceProviderRow {
    pub tool: PackageName,
    /// Its newest unyanked version providing the interface; `None` when
    /// only yanked ones do.
    pub newest: Option<Version>,
}
