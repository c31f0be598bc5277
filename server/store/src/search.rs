//! Full-text search over packages: SQLite's FTS5 table `packages_fts`, or
//! PostgreSQL's generated `search_document` tsvector with its GIN index.
//! Both index the name (weighted most), keywords and description without
//! stemming, and match every query term as a prefix.

use agentlang_core::Kind;

use super::Db;

/// Longest query text considered; the rest is ignored.
const MAX_QUERY_LEN: usize = 256;
/// Most terms considered.
const MAX_TERMS: usize = 16;

/// The query's words: runs of ASCII letters and digits, lowercased. Nothing
/// else reaches the search syntax, so no input can inject FTS5 or tsquery
/// operators.
pub fn query_terms(query: &str) -> Vec<String> {
    let end = query
        .char_indices()
        .nth(MAX_QUERY_LEN)
        .map_or(query.len(), |(i, _)| i);
    query[..end]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .take(MAX_TERMS)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// FTS5 syntax: every term as a prefix, in the text columns (not `kind`),
/// and with `kind` the package's kind. `"term"*`: a quoted string is never
/// an FTS5 operator.
fn fts5_query(terms: &[String], kind: Option<Kind>) -> String {
    let words = terms
        .iter()
        .map(|t| format!("\"{t}\"*"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut query = format!("{{name description keywords}} : ({words})");
    if let Some(kind) = kind {
        query.push_str(&format!(" AND kind : \"{}\"", kind.as_str()));
    }
    query
}

/// Matches counted for a search's `total` at most: the pages reach this far.
pub const MAX_COUNTED: i64 = 1000;

/// tsquery syntax: every term as a prefix, all required.
fn tsquery(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("{t}:*"))
        .collect::<Vec<_>>()
        .join(" & ")
}

/// A package with a live (not deleted) version; uses the partial index
/// `versions_live_package` (on PostgreSQL `versions_index_entries`). A macro, so queries stay `&'static str`.
macro_rules! has_live_version {
    () => {
        "EXISTS (SELECT 1 FROM versions v WHERE v.package_id = p.id AND v.deleted_at IS NULL)"
    };
}

impl Db {
    /// Ids of the packages with a live version matching every term of
    /// `query` (as prefixes), best first, at most `limit`: search ranks ids
    /// and reads whole records only for what it shows.
    pub async fn search_live_package_ids(
        &self,
        query: &str,
        kind: Option<Kind>,
        limit: i64,
    ) -> Result<Vec<i64>, sqlx::Error> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let kind = kind.map(Kind::as_str);
        match self {
            Db::Sqlite(pool) => {
                let fts_query = fts5_query(&terms, None);
                sqlx::query_scalar::<_, i64>(concat!(
                    "SELECT p.id FROM packages_fts f JOIN packages p ON p.id = f.rowid
                     WHERE packages_fts MATCH $1 AND ($2 IS NULL OR p.kind = $2)
                       AND ",
                    has_live_version!(),
                    "
                     ORDER BY bm25(packages_fts, 10.0, 1.0, 5.0, 0.0), p.normalized_name
                     LIMIT $3"
                ))
                .bind(fts_query)
                .bind(kind)
                .bind(limit)
                .fetch_all(pool)
                .await
            }
            Db::Postgres(pools) => {
                let pool = pools.current();
                let ts_query = tsquery(&terms);
                sqlx::query_scalar::<_, i64>(concat!(
                    "SELECT p.id FROM packages p
                     WHERE p.search_document @@ to_tsquery('simple', $1)
                       AND ($2::text IS NULL OR p.kind = $2)
                       AND ",
                    has_live_version!(),
                    "
                     ORDER BY ts_rank(p.search_document, to_tsquery('simple', $1)) DESC,
                              p.normalized_name
                     LIMIT $3"
                ))
                .bind(ts_query)
                .bind(kind)
                .bind(limit)
                .fetch_all(pool)
                .await
            }
        }
    }

    /// One page of the packages matching every term of `query` (as
    /// prefixes), best first (ties by id, so pages never overlap), with how
    /// many match in all, counted up to [`MAX_COUNTED`]. Ranked from the
    /// index alone (SQLite's FTS5 table holds the kind; PostgreSQL's GIN
    /// index finds the rows whose stored `tsvector` is ranked): no join and
    /// no per-row check. A package whose every version was deleted may
    /// still match; the caller, which reads the page's versions, leaves it
    /// out.
    pub async fn search_page(
        &self,
        query: &str,
        kind: Option<Kind>,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<i64>, i64), sqlx::Error> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Ok((Vec::new(), 0));
        }
        match self {
            Db::Sqlite(pool) => {
                let fts_query = fts5_query(&terms, kind);
                let page = sqlx::query_scalar::<_, i64>(
                    "SELECT rowid FROM packages_fts WHERE packages_fts MATCH $1
                     ORDER BY bm25(packages_fts, 10.0, 1.0, 5.0, 0.0), rowid
                     LIMIT $2 OFFSET $3",
                )
                .bind(&fts_query)
                .bind(limit)
                .bind(offset)
                .fetch_all(pool)
                .await?;
                let total = sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM packages_fts
                     WHERE packages_fts MATCH $1 LIMIT $2)",
                )
                .bind(&fts_query)
                .bind(MAX_COUNTED)
                .fetch_one(pool)
                .await?;
                Ok((page, total))
            }
            Db::Postgres(pools) => {
                let pool = pools.current();
                let kind = kind.map(Kind::as_str);
                let ts_query = tsquery(&terms);
                let page = sqlx::query_scalar::<_, i64>(
                    "SELECT p.id FROM packages p
                     WHERE p.search_document @@ to_tsquery('simple', $1)
                       AND ($2::text IS NULL OR p.kind = $2)
                     ORDER BY ts_rank(p.search_document, to_tsquery('simple', $1)) DESC, p.id
                     LIMIT $3 OFFSET $4",
                )
                .bind(&ts_query)
                .bind(kind)
                .bind(limit)
                .bind(offset)
                .fetch_all(pool)
                .await?;
                let total = sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM packages p
                     WHERE p.search_document @@ to_tsquery('simple', $1)
                       AND ($2::text IS NULL OR p.kind = $2) LIMIT $3) AS matches",
                )
                .bind(&ts_query)
                .bind(kind)
                .bind(MAX_COUNTED)
                .fetch_one(pool)
                .await?;
                Ok((page, total))
            }
        }
    }

    /// Ids of every package with a live version, by normalized name, at
    /// most `limit`: what an empty search lists.
    pub async fn live_package_ids(
        &self,
        kind: Option<Kind>,
        limit: i64,
    ) -> Result<Vec<i64>, sqlx::Error> {
        let kind = kind.map(Kind::as_str);
        match self {
            Db::Sqlite(pool) => {
                sqlx::query_scalar::<_, i64>(concat!(
                    "SELECT p.id FROM packages p WHERE ($1 IS NULL OR p.kind = $1)
                       AND ",
                    has_live_version!(),
                    "
                     ORDER BY p.normalized_name, p.kind LIMIT $2"
                ))
                .bind(kind)
                .bind(limit)
                .fetch_all(pool)
                .await
            }
            Db::Postgres(pools) => {
                let pool = pools.current();
                sqlx::query_scalar::<_, i64>(concat!(
                    "SELECT p.id FROM packages p WHERE ($1::text IS NULL OR p.kind = $1)
                       AND ",
                    has_live_version!(),
                    "
                     ORDER BY p.normalized_name, p.kind LIMIT $2"
                ))
                .bind(kind)
                .bind(limit)
                .fetch_all(pool)
                .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_matched_in_the_text_columns_and_kind_in_its_own() {
        let terms = query_terms("Web search");
        assert_eq!(
            fts5_query(&terms, None),
            r#"{name description keywords} : ("web"* "search"*)"#
        );
        assert_eq!(
            fts5_query(&terms, Some(Kind::Tool)),
            r#"{name description keywords} : ("web"* "search"*) AND kind : "tool""#
        );
    }

    #[test]
    fn only_words_reach_the_search_syntax() {
        assert_eq!(query_terms("Web-Search tool"), ["web", "search", "tool"]);
        assert_eq!(
            query_terms("\"a\" OR b* NEAR(c) :* & | !"),
            ["a", "or", "b", "near", "c"]
        );
        assert!(query_terms("  -*- ").is_empty());
        assert_eq!(query_terms(&"x ".repeat(100)).len(), MAX_TERMS);
    }
}
