//! `/advisories` and `/advisories/{id}`: security advisories as pages
//! (docs/advisories.md), and the notices a version page shows of those
//! affecting it. The documents are read with `core::advisories`, the same
//! reading the API and the audit use.

use actix_web::{HttpResponse, web};
use agentlang_core::{
    Kind, PackageName, Version,
    advisories::{Advisory, Event},
};
use agentlang_web::advisory::{
    AdvisoriesPage, AdvisoryNotice, AdvisoryPackageLink, AdvisoryPage, AdvisoryRowView,
    AffectedView, ReferenceView,
};
use app::advisories::StoredAdvisory;
use serde::Deserialize;
use serde_json::Value;

use super::{CatalogError, html, session::MaybeSession};
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    /// The last id of the previous page.
    after: Option<String>,
}

/// `GET /advisories[?after=ID]`: a page of advisories, as the API pages
/// them (id order, [`app::advisories::DEFAULT_PAGE`] a page).
pub async fn list_advisories(
    state: web::Data<AppState>,
    session: MaybeSession,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, CatalogError> {
    let after = query.after.as_deref().filter(|a| !a.is_empty());
    let page = app::advisories::list_advisories(&state.registry, None, after, None)
        .await
        .map_err(|e| match e {
            // A mistyped `after` is a page that does not exist.
            app::ServiceError::Validation(_) => CatalogError::NotFound,
            other => other.into(),
        })?;
    html(&AdvisoriesPage {
        chrome: session.chrome(),
        advisories: page.advisories.iter().map(row_view).collect(),
        next: page.next,
        later: after.is_some(),
    })
}

/// `GET /advisories/{id}`.
pub async fn show_advisory(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let row = app::advisories::get_advisory(&state.registry, &path).await?;
    let advisory = read(&row)?;
    let document: Value = serde_json::from_str(&row.document).map_err(CatalogError::internal)?;
    let text = |key: &str| document[key].as_str().map(str::to_owned);
    html(&AdvisoryPage {
        chrome: session.chrome(),
        id: row.id.as_str().to_owned(),
        aliases: strings(&document["aliases"]),
        summary: advisory.summary.clone(),
        details: text("details"),
        severity: advisory.severity.as_str().to_owned(),
        published: text("published"),
        modified: row.modified.clone(),
        withdrawn: row.withdrawn.clone(),
        affected: advisory
            .affected
            .iter()
            .map(|a| AffectedView {
                package: package_link(a.kind, &a.name),
                ranges: a.ranges.iter().map(|r| range_words(r)).collect(),
                versions: a.versions.iter().map(ToString::to_string).collect(),
            })
            .collect(),
        references: document["references"]
            .as_array()
            .map(|refs| refs.iter().filter_map(reference).collect())
            .unwrap_or_default(),
        log_index: u64::try_from(row.log_index).ok(),
    })
}

/// The notices of a version page: the advisories affecting `kind` `name`
/// at `version`, by the one app function that decides it.
pub(super) async fn notices(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Vec<AdvisoryNotice>, CatalogError> {
    Ok(
        app::advisories::affecting_version(&state.registry, kind, name, version)
            .await?
            .into_iter()
            .map(|a| AdvisoryNotice {
                id: a.id.as_str().to_owned(),
                severity: a.severity.as_str().to_owned(),
                summary: a.summary,
            })
            .collect(),
    )
}

/// A stored advisory read back; one that no longer reads is a bug.
fn read(row: &StoredAdvisory) -> Result<Advisory, CatalogError> {
    Advisory::parse(row.document.as_bytes()).map_err(|problems| {
        CatalogError::internal(anyhow::anyhow!(
            "stored advisory {} no longer reads: {} problems",
            row.id,
            problems.len()
        ))
    })
}

fn row_view(row: &StoredAdvisory) -> AdvisoryRowView {
    let advisory = Advisory::parse(row.document.as_bytes()).ok();
    AdvisoryRowView {
        id: row.id.as_str().to_owned(),
        summary: advisory.as_ref().and_then(|a| a.summary.clone()),
        severity: row.severity.clone(),
        packages: advisory
            .map(|a| {
                let mut seen = Vec::new();
                for affected in &a.affected {
                    let link = package_link(affected.kind, &affected.name);
                    if !seen
                        .iter()
                        .any(|s: &AdvisoryPackageLink| s.href == link.href)
                    {
                        seen.push(link);
                    }
                }
                seen
            })
            .unwrap_or_default(),
        withdrawn: row.withdrawn.clone(),
        modified: row.modified.clone(),
    }
}

fn package_link(kind: Kind, name: &PackageName) -> AdvisoryPackageLink {
    AdvisoryPackageLink {
        label: format!("{kind} {name}"),
        // Package names are validated: safe as a path segment.
        href: format!("/{}/{name}", kind.plural()),
    }
}

/// A range's events in words: "from 1.1.0, fixed in 2.0.0".
fn range_words(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| match e {
            Event::Introduced(None) => "from the first version".to_owned(),
            Event::Introduced(Some(v)) => format!("from {v}"),
            Event::Fixed(v) => format!("fixed in {v}"),
            Event::LastAffected(v) => format!("up to {v} (last affected)"),
            Event::Limit(v) => format!("not at or after {v}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A reference, linked only when its URL is `http(s)`.
fn reference(value: &Value) -> Option<ReferenceView> {
    let url = value["url"].as_str()?.to_owned();
    let href = (url.starts_with("https://") || url.starts_with("http://")).then(|| url.clone());
    Some(ReferenceView {
        kind: value["type"].as_str().unwrap_or("WEB").to_owned(),
        url,
        href,
    })
}
