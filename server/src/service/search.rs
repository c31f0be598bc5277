//! Search: full-text over names, titles, keywords and descriptions (the
//! database ranks), then each hit summarized by its newest usable version,
//! filtered by category, and paginated.

use std::collections::HashMap;

use agentlang_core::Kind;
use serde::Serialize;
use utoipa::ToSchema;

use crate::{
    db::{Db, index::VersionSummary, packages::PackageRecord, search::query_terms},
    error::{ApiError, FieldError},
};

/// Most ranked matches considered for one query; pages reach into them.
pub const MAX_CANDIDATES: i64 = 1000;
pub const DEFAULT_PER_PAGE: u32 = 20;
pub const MAX_PER_PAGE: u32 = 100;

/// A checked search request.
#[derive(Debug, Clone, PartialEq, Eq)]
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
                    errors.push(FieldError::new("kind", "must be agent or tool"));
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
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SearchPage {
    pub results: Vec<SearchResult>,
    /// Matches across every page.
    pub total: u64,
    pub page: u32,
    pub per_page: u32,
}

/// The version a search result shows: the newest non-yanked release, else
/// the newest non-yanked prerelease, else the newest of all (then every
/// version is yanked and `version` is `None`).
fn summarize(package: PackageRecord, versions: &[VersionSummary]) -> Option<SearchResult> {
    let kind: Kind = package.kind.parse().ok()?;
    let parsed: Vec<(semver::Version, &VersionSummary)> = versions
        .iter()
        .filter_map(|v| Some((semver::Version::parse(&v.version).ok()?, v)))
        .collect();
    // No live version: nothing to show or download.
    let newest_any = parsed.iter().max_by(|a, b| a.0.cmp(&b.0))?;
    let usable = |release: bool| {
        parsed
            .iter()
            .filter(|(v, s)| !s.yanked && v.pre.is_empty() == release)
            .max_by(|a, b| a.0.cmp(&b.0))
    };
    let shown = usable(true).or_else(|| usable(false));
    let facts = shown.unwrap_or(newest_any).1;
    Some(SearchResult {
        kind,
        name: package.name,
        version: shown.map(|(v, _)| v.to_string()),
        title: facts.title.clone(),
        description: package.description,
        category: facts.category.clone(),
        downloads: versions.iter().map(|v| v.downloads).sum(),
    })
}

/// Runs a search. Input is literal: operators and quotes of either
/// database's full-text syntax are just characters.
pub async fn search_packages(db: &Db, query: &SearchQuery) -> Result<SearchPage, ApiError> {
    let candidates = if query_terms(&query.q).is_empty() {
        if query.q.trim().is_empty() {
            db.list_packages(query.kind, MAX_CANDIDATES).await?
        } else {
            // Only punctuation: nothing can match it literally.
            Vec::new()
        }
    } else {
        db.search_packages(&query.q, query.kind, MAX_CANDIDATES, 0)
            .await?
    };
    let ids: Vec<i64> = candidates.iter().map(|p| p.id).collect();
    let mut by_package: HashMap<i64, Vec<VersionSummary>> = HashMap::new();
    for summary in db.version_summaries(&ids).await? {
        by_package
            .entry(summary.package_id)
            .or_default()
            .push(summary);
    }
    let wanted = query.category.as_deref().map(str::to_lowercase);
    let matches: Vec<SearchResult> = candidates
        .into_iter()
        .filter_map(|p| {
            let versions = by_package.remove(&p.id).unwrap_or_default();
            summarize(p, &versions)
        })
        .filter(|r| match &wanted {
            None => true,
            Some(c) => r.category.as_deref().map(str::to_lowercase).as_ref() == Some(c),
        })
        .collect();
    let total = matches.len() as u64;
    let skip = (query.page as usize - 1).saturating_mul(query.per_page as usize);
    let results = matches
        .into_iter()
        .skip(skip)
        .take(query.per_page as usize)
        .collect();
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

    fn summary(version: &str, yanked: bool, downloads: i64) -> VersionSummary {
        VersionSummary {
            package_id: 1,
            version: version.to_owned(),
            yanked,
            downloads,
            title: Some(format!("title {version}")),
            category: Some("Research".to_owned()),
        }
    }

    fn package() -> PackageRecord {
        PackageRecord {
            id: 1,
            kind: "agent".to_owned(),
            name: "a".to_owned(),
            normalized_name: "a".to_owned(),
            description: "d".to_owned(),
            keywords: String::new(),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn results_show_the_newest_usable_release() {
        let versions = [
            summary("1.0.0", false, 1),
            summary("1.1.0", true, 2),
            summary("2.0.0-rc.1", false, 3),
        ];
        let r = summarize(package(), &versions).unwrap();
        assert_eq!(r.version.as_deref(), Some("1.0.0"));
        assert_eq!(r.title.as_deref(), Some("title 1.0.0"));
        assert_eq!(r.downloads, 6);

        let only_pre = [summary("1.0.0", true, 0), summary("2.0.0-rc.1", false, 0)];
        let r = summarize(package(), &only_pre).unwrap();
        assert_eq!(r.version.as_deref(), Some("2.0.0-rc.1"));

        let all_yanked = [summary("1.0.0", true, 0)];
        assert_eq!(summarize(package(), &all_yanked).unwrap().version, None);
        assert_eq!(summarize(package(), &[]), None);
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
