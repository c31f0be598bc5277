//! `/search?q=&kind=&category=&page=`: full-text search (the API's storage,
//! `db::search_packages`) with kind and category filters, or browsing
//! every package when the query is empty.

use actix_web::{HttpResponse, web};
use agentlang_core::{Kind, PackageName};
use agentlang_web::{
    model::{Chrome, PackageSummary},
    pages::SearchPage,
};
use serde::Deserialize;

use super::{
    CatalogError, html,
    session::MaybeSession,
    views::{newest, summary_text, timestamp},
};
use std::collections::HashMap;

use crate::{
    db::catalog::{PackageListing, VersionBrief},
    state::AppState,
};

pub const PER_PAGE: u64 = 20;
/// Matches considered for a query; the category filter and the total work
/// within them.
const MAX_MATCHES: i64 = 500;
/// Pages past this are refused as not found, so no one asks SQL for a huge
/// OFFSET.
const MAX_PAGE: u64 = 1000;

#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    page: String,
}

/// List entries for packages: the newest version's title, category and
/// version from the version rows, in the order given. Two queries at most
/// for any number of listings (one per 500).
pub(super) async fn summaries(
    state: &AppState,
    listings: Vec<PackageListing>,
) -> Result<Vec<PackageSummary>, CatalogError> {
    let ids: Vec<i64> = listings.iter().map(|l| l.id).collect();
    let mut briefs: HashMap<i64, Vec<VersionBrief>> = HashMap::new();
    for brief in state.db.version_briefs_for(&ids).await? {
        briefs.entry(brief.package_id).or_default().push(brief);
    }
    let mut out = Vec::with_capacity(listings.len());
    for listing in listings {
        let Some((brief, version)) = briefs.get(&listing.id).and_then(|b| newest(b)) else {
            continue;
        };
        let (Ok(kind), Ok(name)) = (
            listing.kind.parse::<Kind>(),
            PackageName::new(listing.name.as_str()),
        ) else {
            continue;
        };
        out.push(PackageSummary {
            kind,
            name,
            version,
            title: brief.title.clone(),
            summary: summary_text(&listing.description),
            category: brief.category.clone(),
            downloads: u64::try_from(listing.downloads).unwrap_or(0),
            published_at: timestamp(listing.last_published_at),
            risk: brief.max_risk.as_deref().and_then(|r| r.parse().ok()),
        });
    }
    Ok(out)
}

/// The listings of `ids`, in that order, in one query (per 500).
async fn listings_of(state: &AppState, ids: &[i64]) -> Result<Vec<PackageListing>, CatalogError> {
    let mut found: HashMap<i64, PackageListing> = state
        .db
        .package_listings_by_ids(ids)
        .await?
        .into_iter()
        .map(|l| (l.id, l))
        .collect();
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// `GET /search`.
pub async fn search(
    state: web::Data<AppState>,
    session: MaybeSession,
    query: web::Query<SearchQuery>,
) -> Result<HttpResponse, CatalogError> {
    let SearchQuery {
        q,
        kind,
        category,
        page,
    } = query.into_inner();
    let q = q.trim().to_owned();
    // Unknown filter values are dropped rather than refused: the page still
    // answers, and the filter form shows what applied.
    let kind: Option<Kind> = kind.parse().ok();
    let category = Some(category.trim().to_owned()).filter(|c| !c.is_empty());
    let page: u64 = match page.as_str() {
        "" => 1,
        raw => raw
            .parse()
            .ok()
            .filter(|p| (1..=MAX_PAGE).contains(p))
            .ok_or(CatalogError::NotFound)?,
    };
    let offset = (page - 1) * PER_PAGE;

    let (results, total) = match &category {
        None if q.is_empty() => {
            let total = state.db.count_packages(kind.map(Kind::as_str)).await?;
            let listings = state
                .db
                .browse_packages(kind.map(Kind::as_str), PER_PAGE as i64, offset as i64)
                .await?;
            (
                summaries(&state, listings).await?,
                u64::try_from(total).unwrap_or(0),
            )
        }
        None => {
            // Ranked ids count the matches; only the page shown is read.
            let ids = state
                .db
                .search_live_package_ids(&q, kind, MAX_MATCHES)
                .await?;
            let total = ids.len() as u64;
            let shown: Vec<i64> = ids
                .into_iter()
                .skip(offset as usize)
                .take(PER_PAGE as usize)
                .collect();
            (
                summaries(&state, listings_of(&state, &shown).await?).await?,
                total,
            )
        }
        // The category lives in each version's spec: filter every match on
        // its newest version's, then page.
        Some(wanted) => {
            let listings = if q.is_empty() {
                state
                    .db
                    .browse_packages(kind.map(Kind::as_str), MAX_MATCHES, 0)
                    .await?
            } else {
                let ids = state
                    .db
                    .search_live_package_ids(&q, kind, MAX_MATCHES)
                    .await?;
                listings_of(&state, &ids).await?
            };
            let matching: Vec<PackageSummary> = summaries(&state, listings)
                .await?
                .into_iter()
                .filter(|s| s.category.as_deref() == Some(wanted.as_str()))
                .collect();
            let total = matching.len() as u64;
            let shown = matching
                .into_iter()
                .skip(offset as usize)
                .take(PER_PAGE as usize)
                .collect();
            (shown, total)
        }
    };
    if results.is_empty() && page > 1 {
        return Err(CatalogError::NotFound);
    }
    let mut chrome: Chrome = session.chrome();
    chrome.search_query = q.clone();
    html(&SearchPage {
        chrome,
        query: q,
        kind,
        category,
        categories: categories_in_use(&state).await?,
        results,
        total,
        page,
        per_page: PER_PAGE,
    })
}

/// The categories the filter offers, read once per registry generation:
/// finding them reads every live version's spec.
async fn categories_in_use(state: &AppState) -> Result<Vec<String>, CatalogError> {
    let generation = state.index_cache.current_generation(&state.db).await?;
    if let Some(categories) = state.index_cache.categories(generation) {
        return Ok(categories);
    }
    let categories = state.db.categories_in_use().await?;
    state
        .index_cache
        .put_categories(generation, categories.clone());
    Ok(categories)
}
