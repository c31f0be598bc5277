//! Search: full-text over names, titles, keywords and descriptions (the
//! database ranks), then each hit summarized by its newest usable version,
//! filtered by category, and paginated.

use std::collections::HashMap;

use agentlang_core::Kind;
use serde::Serialize;
use utoipa::ToSchema;

use crate::{
    db::{
        Db,
        index::{VersionFacts, VersionHead},
        packages::PackageRecord,
        search::query_terms,
    },
    error::{ApiError, FieldError},
    service::cache::{self, Rendered, RenderedKey},
    state::AppState,
};

/// Most ranked matches considered for one query; pages reach into them.
pub const MAX_CANDIDATES: i64 = crate::db::search::MAX_COUNTED;
pub const DEFAULT_PER_PAGE: u32 = 20;
pub const MAX_PER_PAGE: u32 = 100;

/// A checked search request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchQuery {
    /// Free text, taken literally: only its words reach the search syntax.
    /// Empty lists every package (by name).
    pub q: String,
    pub kind: Option<Kind>,
    /// Compared case-insensitively with agent.yaml's `category`.
    pub category: Option<String>,
    /// 1-based.
    pub page: u32,
    pub per_page: u32,
}

impl SearchQuery {
    /// Checks raw parameters, listing every invalid one.
    pub fn parse(
        q: Option<&str>,
        kind: Option<&str>,
        category: Option<&str>,
        page: Option<u32>,
        per_page: Option<u32>,
    ) -> Result<Self, ApiError> {
        let mut errors = Vec::new();
        let kind = match kind.filter(|k| !k.is_empty()) {
            None => None,
            Some(k) => match k.parse::<Kind>() {
                Ok(kind) => Some(kind),
                Err(_) => {
                    errors.push(FieldError::new("kind", "must be agent, tool or protocol"));
                    None
                }
            },
        };
        let page = page.unwrap_or(1);
        if page == 0 {
            errors.push(FieldError::new("page", "must be at least 1"));
        }
        let per_page = per_page.unwrap_or(DEFAULT_PER_PAGE);
        if !(1..=MAX_PER_PAGE).contains(&per_page) {
            errors.push(FieldError::new(
                "per_page",
                format!("must be between 1 and {MAX_PER_PAGE}"),
            ));
        }
        if !errors.is_empty() {
            return Err(ApiError::Validation(errors));
        }
        Ok(Self {
            q: q.unwrap_or_default().to_owned(),
            kind,
            category: category
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            page,
            per_page,
        })
    }
}

/// One package found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SearchResult {
    #[schema(value_type = String, example = "agent")]
    pub kind: Kind,
    pub name: String,
    /// The newest version that is not yanked (a release when there is one).
    pub version: Option<String>,
    pub title: Option<String>,
    pub description: String,
    pub category: Option<String>,
    /// Downloads of every version.
    pub downloads: i64,
    /// The highest risk of what the shown agent version can do (its
    /// effective capabilities: declared, implied and its locked tools').
    /// `null` for tools, protocols and agents that need no capability.
    #[schema(value_type = Option<String>, example = "critical")]
    pub risk: Option<agentlang_core::capability::RiskLevel>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SearchPage {
    pub results: Vec<SearchResult>,
    /// Matches across every page.
    pub total: u64,
    pub page: u32,
    pub per_page: u32,
}

/// The version a search result shows: the newest usable release, else the
/// newest usable prerelease (`None` when every live version is yanked).
/// Also the version whose title and category describe the package: the
/// shown one, or the newest of any when none is usable. `None` when the
/// package has no live version (nothing to show or download).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chosen {
    shown: Option<String>,
    /// Row id of the version whose facts are shown.
    facts_from: i64,
    downloads: i64,
}

fn choose(versions: &[VersionHead]) -> Option<Chosen> {
    let parsed: Vec<(semver::Version, &VersionHead)> = versions
        .iter()
        .filter_map(|v| Some((semver::Version::parse(&v.version).ok()?, v)))
        .collect();
    let newest_any = parsed.iter().max_by(|a, b| a.0.cmp(&b.0))?;
    let usable = |release: bool| {
        parsed
            .iter()
            .filter(|(v, h)| !h.yanked && v.pre.is_empty() == release)
            .max_by(|a, b| a.0.cmp(&b.0))
    };
    let shown = usable(true).or_else(|| usable(false));
    Some(Chosen {
        shown: shown.map(|(v, _)| v.to_string()),
        facts_from: shown.unwrap_or(newest_any).1.id,
        downloads: versions.iter().map(|v| v.downloads).sum(),
    })
}

/// `GET /api/v1/search` as sent: one search per query and registry
/// generation, kept while its download counts are current
/// (`service::cache`). A page of results is a few KiB, so the cache holds
/// thousands of queries.
pub async fn search_answer(state: &AppState, query: &SearchQuery) -> Result<Rendered, ApiError> {
    let key = RenderedKey::Search(query.clone());
    cache::rendered(state, key, || async {
        Rendered::json(&search_packages(&state.db, query).await?)
    })
    .await
}

/// Searches, filters by category and paginates. Specs (title, category)
/// are read only for the page shown, or, with a category filter, for one
/// version per candidate: the expensive part of a search is bounded by what
/// it shows, not by how many versions its matches have.
pub async fn search_packages(db: &Db, query: &SearchQuery) -> Result<SearchPage, ApiError> {
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
    summarize(db, query, shown_ids, total, wanted, skip, per_page).await
}

/// Every candidate of a listing (no query) or of a query filtered by
/// category, whose shown version decides: ids, and the total when known.
async fn ranked_candidates(
    db: &Db,
    query: &SearchQuery,
    skip: usize,
    per_page: usize,
) -> Result<(Vec<i64>, Option<u64>, Option<String>), ApiError> {
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

/// The results of `shown_ids`, in that order, filtered by the wanted
/// category (then paginated) when there is one.
async fn summarize(
    db: &Db,
    query: &SearchQuery,
    shown_ids: Vec<i64>,
    total: Option<u64>,
    wanted: Option<String>,
    skip: usize,
    per_page: usize,
) -> Result<SearchPage, ApiError> {
    let mut records: HashMap<i64, PackageRecord> = db
        .packages_by_ids(&shown_ids)
        .await?
        .into_iter()
        .map(|p| (p.id, p))
        .collect();
    let mut heads: HashMap<i64, Vec<VersionHead>> = HashMap::new();
    for head in db.version_heads(&shown_ids).await? {
        heads.entry(head.package_id).or_default().push(head);
    }
    let chosen: Vec<(PackageRecord, Chosen)> = shown_ids
        .iter()
        .filter_map(|id| {
            let chosen = choose(heads.get(id).map_or(&[][..], Vec::as_slice))?;
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
    let matches = chosen.into_iter().filter_map(|(package, chosen)| {
        let VersionFacts {
            title,
            category,
            max_risk,
            ..
        } = facts.remove(&chosen.facts_from).unwrap_or(VersionFacts {
            id: chosen.facts_from,
            title: None,
            category: None,
            max_risk: None,
        });
        if let Some(wanted) = &wanted
            && category.as_deref().map(str::to_lowercase).as_ref() != Some(wanted)
        {
            return None;
        }
        Some(SearchResult {
            kind: package.kind.parse().ok()?,
            name: package.name,
            version: chosen.shown,
            title,
            description: package.description,
            category,
            downloads: chosen.downloads,
            risk: max_risk.and_then(|r| r.parse().ok()),
        })
    });
    let (results, total) = match total {
        Some(total) => (matches.collect(), total),
        None => {
            let all: Vec<SearchResult> = matches.collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn head(id: i64, version: &str, yanked: bool, downloads: i64) -> VersionHead {
        VersionHead {
            package_id: 1,
            id,
            version: version.to_owned(),
            yanked,
            downloads,
        }
    }

    #[test]
    fn results_show_the_newest_usable_release() {
        let versions = [
            head(1, "1.0.0", false, 1),
            head(2, "1.1.0", true, 2),
            head(3, "2.0.0-rc.1", false, 3),
        ];
        let c = choose(&versions).unwrap();
        assert_eq!(c.shown.as_deref(), Some("1.0.0"));
        assert_eq!(c.facts_from, 1);
        assert_eq!(c.downloads, 6);

        let only_pre = [head(1, "1.0.0", true, 0), head(2, "2.0.0-rc.1", false, 0)];
        let c = choose(&only_pre).unwrap();
        assert_eq!((c.shown.as_deref(), c.facts_from), (Some("2.0.0-rc.1"), 2));

        // Every version yanked: no version shown, the newest one described.
        let all_yanked = [head(1, "1.0.0", true, 0), head(2, "1.2.0", true, 0)];
        let c = choose(&all_yanked).unwrap();
        assert_eq!((c.shown, c.facts_from), (None, 2));
        assert_eq!(choose(&[]), None);
    }

    #[test]
    fn parameters_are_checked_together() {
        let err = SearchQuery::parse(None, Some("widget"), None, Some(0), Some(500)).unwrap_err();
        let ApiError::Validation(errors) = err else {
            panic!("expected a validation error, got {err:?}");
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["kind", "page", "per_page"]);
        let q = SearchQuery::parse(Some("x"), Some("tools"), Some(" "), None, None).unwrap();
        assert_eq!(q.kind, Some(Kind::Tool));
        assert_eq!(q.category, None);
        assert_eq!((q.page, q.per_page), (1, DEFAULT_PER_PAGE));
    }
}
