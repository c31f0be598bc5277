//! Search: full-text over names, titles, keywords and descriptions (the
//! database ranks), then each hit summarized by its [`representative`]
//! version, filtered by category, and paginated. The API and the catalog
//! call the same [`search_packages`].

use std::collections::HashMap;

use agentlang_core::{Kind, PackageName, Version};
use serde::Serialize;
use store::{
    Db,
    index::{VersionFacts, VersionHead},
    packages::PackageRecord,
    search::query_terms,
};

pub mod query;

pub use query::{DEFAULT_PER_PAGE, MAX_CANDIDATES, MAX_PER_PAGE, SearchQuery};

use crate::{
    Registry, ServiceError,
    cache::{Rendered, RenderedKey},
};

// As searches, lists and the catalog show it.
/// One package found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchResult {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "agent"))]
    pub kind: Kind,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    /// The newest version that is not yanked (a release when there is one).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub version: Option<Version>,
    pub title: Option<String>,
    pub description: String,
    pub category: Option<String>,
    /// Downloads of every version.
    pub downloads: i64,
    /// The highest risk of what the shown agent version can do (its
    /// effective capabilities: declared, implied and its locked tools').
    /// `null` for tools, protocols and agents that need no capability.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "critical"))]
    pub risk: Option<agentlang_core::capability::RiskLevel>,
    /// The version whose title, category and risk these are: the shown one,
    /// or the newest of any when every version is yanked.
    #[serde(skip)]
    pub described: Version,
    /// When the newest live version was published (Unix seconds).
    #[serde(skip)]
    pub last_published_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchPage {
    pub results: Vec<SearchResult>,
    /// Matches across every page.
    pub total: u64,
    pub page: u32,
    pub per_page: u32,
}

/// Which version represents a package wherever one version stands for it
/// (search results, lists, the catalog's summaries): the newest usable
/// release, else the newest usable prerelease (`shown`; `None` when every
/// live version is yanked). Its title, category and risk describe the
/// package; with none usable, the newest of any does (`described`). `None`
/// when the package has no live version (nothing to show or download).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Representative {
    pub shown: Option<Version>,
    pub described: Version,
    /// Row id of the described version.
    facts_from: i64,
    /// Downloads of every live version.
    pub downloads: i64,
    /// When the newest live version was published.
    pub last_published_at: i64,
}

/// The one rule: see [`Representative`].
pub fn representative(versions: &[VersionHead]) -> Option<Representative> {
    let newest_any = versions.iter().max_by(|a, b| a.version.cmp(&b.version))?;
    let usable = |release: bool| {
        versions
            .iter()
            .filter(|h| !h.yanked && h.version.is_prerelease() != release)
            .max_by(|a, b| a.version.cmp(&b.version))
    };
    let shown = usable(true).or_else(|| usable(false));
    let described = shown.unwrap_or(newest_any);
    Some(Representative {
        shown: shown.map(|h| h.version.clone()),
        described: described.version.clone(),
        facts_from: described.id,
        downloads: versions.iter().map(|v| v.downloads).sum(),
        last_published_at: versions.iter().map(|v| v.published_at).max().unwrap_or(0),
    })
}

/// `GET /api/v1/search` as sent: one search per query and registry
/// generation, kept while its download counts are current
/// (`cache`). A page of results is a few KiB, so the cache holds
/// thousands of queries.
pub async fn search_answer(
    registry: &Registry,
    query: &SearchQuery,
) -> Result<Rendered, ServiceError> {
    let key = RenderedKey::Search(query.clone());
    registry
        .rendered(key, || async {
            Rendered::json(&search_packages(registry, query).await?)
        })
        .await
}

/// Searches, filters by category and paginates: the API's search and the
/// catalog's alike. Specs (title, category) are read only for the page
/// shown, or, with a category filter, for one version per candidate: the
/// expensive part of a search is bounded by what it shows, not by how
/// many versions its matches have.
pub async fn search_packages(
    registry: &Registry,
    query: &SearchQuery,
) -> Result<SearchPage, ServiceError> {
    let db = &registry.db;
    let skip = (query.page as usize - 1).saturating_mul(query.per_page as usize);
    let per_page = query.per_page as usize;
    let ranked_page = query.category.is_none() && !query_terms(&query.q).is_empty();
    // Without a category, a query's page is ranked by the database alone
    // (`search_page`): nothing but the page is read.
    let (shown_ids, total, wanted) = if ranked_page {
        let (page, total) = if skip < MAX_CANDIDATES as usize {
            db.search_page(
                &query.q,
                query.kind,
                i64::from(query.per_page),
                i64::try_from(skip).unwrap_or(i64::MAX),
            )
            .await?
        } else {
            (
                Vec::new(),
                db.search_page(&query.q, query.kind, 0, 0).await?.1,
            )
        };
        (page, Some(u64::try_from(total).unwrap_or(0)), None)
    } else {
        ranked_candidates(db, query, skip, per_page).await?
    };
    let matches = summaries(db, &shown_ids).await?;
    let (results, total) = match (total, wanted) {
        (Some(total), _) => (matches, total),
        (None, wanted) => {
            let all: Vec<SearchResult> = matches
                .into_iter()
                .filter(|r| {
                    wanted.as_ref().is_none_or(|wanted| {
                        r.category.as_deref().map(str::to_lowercase).as_ref() == Some(wanted)
                    })
                })
                .collect();
            let total = all.len() as u64;
            (all.into_iter().skip(skip).take(per_page).collect(), total)
        }
    };
    Ok(SearchPage {
        results,
        total,
        page: query.page,
        per_page: query.per_page,
    })
}

/// Every candidate of a listing (no query) or of a query filtered by
/// category, whose shown version decides: ids, and the total when known.
async fn ranked_candidates(
    db: &Db,
    query: &SearchQuery,
    skip: usize,
    per_page: usize,
) -> Result<(Vec<i64>, Option<u64>, Option<String>), ServiceError> {
    // Ranked ids of matches with a live version (nothing to show without).
    let ids = if query_terms(&query.q).is_empty() {
        if query.q.trim().is_empty() {
            db.live_package_ids(query.kind, MAX_CANDIDATES).await?
        } else {
            // Only punctuation: nothing can match it literally.
            Vec::new()
        }
    } else {
        db.search_live_package_ids(&query.q, query.kind, MAX_CANDIDATES)
            .await?
    };
    // Without a category filter the page is known now; with one, every
    // match's shown version decides.
    Ok(match query.category.as_deref() {
        None => {
            let total = ids.len() as u64;
            let page: Vec<i64> = ids.into_iter().skip(skip).take(per_page).collect();
            (page, Some(total), None)
        }
        Some(category) => (ids, None, Some(category.to_lowercase())),
    })
}

/// The packages `ids` as results, in that order, each by its
/// [`representative`] version; packages without a live version are left
/// out. Three queries (per 500 ids), whatever the number of versions.
pub(crate) async fn summaries(db: &Db, ids: &[i64]) -> Result<Vec<SearchResult>, ServiceError> {
    let mut records: HashMap<i64, PackageRecord> = db
        .packages_by_ids(ids)
        .await?
        .into_iter()
        .map(|p| (p.id, p))
        .collect();
    let mut heads: HashMap<i64, Vec<VersionHead>> = HashMap::new();
    for head in db.version_heads(ids).await? {
        heads.entry(head.package_id).or_default().push(head);
    }
    let chosen: Vec<(PackageRecord, Representative)> = ids
        .iter()
        .filter_map(|id| {
            let chosen = representative(heads.get(id).map_or(&[][..], Vec::as_slice))?;
            Some((records.remove(id)?, chosen))
        })
        .collect();
    let fact_ids: Vec<i64> = chosen.iter().map(|(_, c)| c.facts_from).collect();
    let mut facts: HashMap<i64, VersionFacts> = db
        .version_facts(&fact_ids)
        .await?
        .into_iter()
        .map(|f| (f.id, f))
        .collect();
    Ok(chosen
        .into_iter()
        .map(|(package, chosen)| {
            let (title, category, risk) = facts
                .remove(&chosen.facts_from)
                .map(|f| (f.title, f.category, f.max_risk))
                .unwrap_or_default();
            SearchResult {
                kind: package.kind,
                name: package.name,
                version: chosen.shown,
                title,
                description: package.description,
                category,
                downloads: chosen.downloads,
                risk: risk.and_then(|r| r.parse().ok()),
                described: chosen.described,
                last_published_at: chosen.last_published_at,
            }
        })
        .collect())
}

/// The categories agent versions name, sorted: the catalog's filter. Read
/// once per registry generation, since finding them reads every live
/// version's spec.
pub async fn categories(registry: &Registry) -> Result<Vec<String>, ServiceError> {
    let generation = registry
        .index_cache
        .current_generation(&registry.db)
        .await?;
    if let Some(categories) = registry.index_cache.categories(generation) {
        return Ok(categories);
    }
    let categories = registry.db.categories_in_use().await?;
    registry
        .index_cache
        .put_categories(generation, categories.clone());
    Ok(categories)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(id: i64, version: &str, yanked: bool, downloads: i64) -> VersionHead {
        VersionHead {
            package_id: 1,
            id,
            version: Version::parse(version).unwrap(),
            yanked,
            downloads,
            published_at: id * 10,
        }
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn results_show_the_newest_usable_release() {
        let versions = [
            head(1, "1.0.0", false, 1),
            head(2, "1.1.0", true, 2),
            head(3, "2.0.0-rc.1", false, 3),
        ];
        let c = representative(&versions).unwrap();
        assert_eq!(c.shown, Some(v("1.0.0")));
        assert_eq!((c.described.clone(), c.facts_from), (v("1.0.0"), 1));
        assert_eq!(c.downloads, 6);
        assert_eq!(c.last_published_at, 30);

        let only_pre = [head(1, "1.0.0", true, 0), head(2, "2.0.0-rc.1", false, 0)];
        let c = representative(&only_pre).unwrap();
        assert_eq!((c.shown, c.facts_from), (Some(v("2.0.0-rc.1")), 2));

        // A usable prerelease beats a newer yanked release.
        let yanked_newer = [head(1, "2.0.0", true, 0), head(2, "1.1.0-rc.1", false, 0)];
        let c = representative(&yanked_newer).unwrap();
        assert_eq!(
            (c.shown, c.described),
            (Some(v("1.1.0-rc.1")), v("1.1.0-rc.1"))
        );

        // Every version yanked: no version shown, the newest one described.
        let all_yanked = [head(1, "1.0.0", true, 0), head(2, "1.2.0", true, 0)];
        let c = representative(&all_yanked).unwrap();
        assert_eq!((c.shown, c.described, c.facts_from), (None, v("1.2.0"), 2));
        assert_eq!(representative(&[]), None);
    }
}
