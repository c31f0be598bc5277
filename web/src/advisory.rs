//! The advisory pages (`/advisories`, `/advisories/{id}`) and the notice a
//! version page shows when an advisory affects it (docs/advisories.md).

use askama::Template;

use crate::{markdown::render_markdown, model::Chrome};

/// An advisory affecting the shown version, on its page.
#[derive(Debug, Clone)]
pub struct AdvisoryNotice {
    pub id: String,
    /// `low`, `moderate`, `high` or `critical`.
    pub severity: String,
    pub summary: Option<String>,
}

impl AdvisoryNotice {
    pub fn href(&self) -> String {
        format!("/advisories/{}", self.id)
    }
}

/// A package an advisory names, linked to its page.
#[derive(Debug, Clone)]
pub struct AdvisoryPackageLink {
    /// `tool web_fetch`.
    pub label: String,
    pub href: String,
}

/// One row of `/advisories`.
#[derive(Debug, Clone)]
pub struct AdvisoryRowView {
    pub id: String,
    pub summary: Option<String>,
    pub severity: String,
    pub packages: Vec<AdvisoryPackageLink>,
    pub withdrawn: Option<String>,
    pub modified: String,
}

impl AdvisoryRowView {
    pub fn href(&self) -> String {
        format!("/advisories/{}", self.id)
    }
}

/// `/advisories[?after=ID]`: a page of advisories, withdrawn ones marked.
#[derive(Template)]
#[template(path = "advisories.html")]
pub struct AdvisoriesPage {
    pub chrome: Chrome,
    pub advisories: Vec<AdvisoryRowView>,
    /// `?after=` of the next page.
    pub next: Option<String>,
    /// Whether this is a later page (`?after=` given).
    pub later: bool,
}

/// One `affected` entry: the package, its ranges in words, its listed
/// versions.
#[derive(Debug, Clone)]
pub struct AffectedView {
    pub package: AdvisoryPackageLink,
    /// "from 1.1.0, fixed in 2.0.0", one per range.
    pub ranges: Vec<String>,
    pub versions: Vec<String>,
}

/// A reference; `href` only for an `http(s)` URL.
#[derive(Debug, Clone)]
pub struct ReferenceView {
    pub kind: String,
    pub url: String,
    pub href: Option<String>,
}

/// `/advisories/{id}`.
#[derive(Template)]
#[template(path = "advisory.html")]
pub struct AdvisoryPage {
    pub chrome: Chrome,
    pub id: String,
    pub aliases: Vec<String>,
    pub summary: Option<String>,
    /// Markdown, from whoever published the advisory: rendered sanitized.
    pub details: Option<String>,
    pub severity: String,
    pub published: Option<String>,
    pub modified: String,
    pub withdrawn: Option<String>,
    pub affected: Vec<AffectedView>,
    pub references: Vec<ReferenceView>,
    /// The log entry of its last change.
    pub log_index: Option<u64>,
}

impl AdvisoryPage {
    pub fn details_html(&self) -> Option<String> {
        self.details.as_deref().map(render_markdown)
    }

    pub fn json_href(&self) -> String {
        format!("/api/v1/advisories/{}", self.id)
    }

    pub fn title(&self) -> String {
        match &self.summary {
            Some(summary) => format!("{}: {summary}", self.id),
            None => self.id.clone(),
        }
    }
}
