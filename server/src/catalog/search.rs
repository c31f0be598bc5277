//! `/search?q=&kind=&category=&page=`: the API's search
//! (`app::search::search_packages`) with kind and category filters, or
//! browsing every package when the query is empty.

use actix_web::{HttpResponse, web};
use agentlang_core::Kind;
use agentlang_web::{
    model::{Chrome, PackageSummary},
    pages::SearchPage,
};
use app::search::{self, SearchQuery, SearchResult};
use serde::Deserialize;

use super::{
    CatalogError, html,
    session::MaybeSession,
    views::{summary_text, timestamp},
};
use crate::state::AppState;

pub const PER_PAGE: u32 = 20;
/// Pages past this are refused as not found, so no one asks SQL for a huge
/// OFFSET.
const MAX_PAGE: u32 = 1000;

#[derive(Debug, Deserialize)]
pub struct SearchForm {
    #[serde(default)]
    q: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    page: String,
}

/// List entries for search results, lists and pages: each package as its
/// representative version describes it.
pub(super) fn summaries(results: Vec<SearchResult>) -> Vec<PackageSummary> {
    results
        .into_iter()
        .map(|r| PackageSummary {
            kind: r.kind,
            name: r.name,
            version: r.version.unwrap_or(r.described),
            title: r.title,
            summary: summary_text(&r.description),
            category: r.category,
            downloads: u64::try_from(r.downloads).unwrap_or(0),
            published_at: timestamp(r.last_published_at),
            risk: r.risk,
        })
        .collect()
}

/// `GET /search`.
pub async fn search(
    state: web::Data<AppState>,
    session: MaybeSession,
    form: web::Query<SearchForm>,
) -> Result<HttpResponse, CatalogError> {
    let SearchForm {
        q,
        kind,
        category,
        page,
    } = form.into_inner();
    let q = q.trim().to_owned();
    // Unknown filter values are dropped rather than refused: the page still
    // answers, and the filter form shows what applied.
    let kind: Option<Kind> = kind.parse().ok();
    let category = Some(category.trim().to_owned()).filter(|c| !c.is_empty());
    let page: u32 = match page.as_str() {
        "" => 1,
        raw => raw
            .parse()
            .ok()
            .filter(|p| (1..=MAX_PAGE).contains(p))
            .ok_or(CatalogError::NotFound)?,
    };
    let found = search::search_packages(
        &state,
        &SearchQuery {
            q: q.clone(),
            kind,
            category: category.clone(),
            page,
            per_page: PER_PAGE,
        },
    )
    .await?;
    if found.results.is_empty() && page > 1 {
        return Err(CatalogError::NotFound);
    }
    let mut chrome: Chrome = session.chrome();
    chrome.search_query = q.clone();
    html(&SearchPage {
        chrome,
        query: q,
        kind,
        category,
        categories: search::categories(&state).await?,
        results: summaries(found.results),
        total: found.total,
        page: u64::from(page),
        per_page: u64::from(PER_PAGE),
    })
}
