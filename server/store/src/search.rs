//! Full-text search over packages: SQLite's FTS5 table `packages_fts`, or
//! PostgreSQL's generated `search_document` tsvector with its GIN index.
//! Both index the name (weighted most), keywords and description without
//! stemming, and match every query term as a whole word, the last also as
//! a prefix (`dialect::fts5_query`).

use agentlang_core::Kind;

use crate::{
    Db,
    dialect::{
        Dialect, SEARCH_COUNT, SEARCH_LIVE_IDS, SEARCH_PAGE, fts5_query, has_live_version, tsquery,
    },
    inline, with_pool,
};

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

/// Matches counted for a search's `total` at most: the pages reach this far.
pub const MAX_COUNTED: i64 = 1000;

/// How many match in all, when a page says it without a count: one that
/// is not full, and not empty past the first (where the matches may have
/// ended on an earlier page). Most searches of a large catalog are
/// answered in a page, so most run one statement, not two.
fn page_tells_total(page: &[i64], limit: i64, offset: i64) -> Option<i64> {
    let len = i64::try_from(page.len()).ok()?;
    (len < limit && (len > 0 || offset == 0)).then(|| (offset + len).min(MAX_COUNTED))
}

impl Db {
    /// Ids of the packages with a live version matching every term of
    /// `query` (whole, the last also as a prefix), best first, at most `limit`: search ranks ids
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
        let sql = SEARCH_LIVE_IDS.of(self.dialect());
        let text = match self.dialect() {
            Dialect::Sqlite => fts5_query(&terms, None),
            Dialect::Postgres => tsquery(&terms),
        };
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(sql)
                .bind(&text)
                .bind(kind)
                .bind(limit)
                .fetch_all(pool)
                .await
        })
    }

    /// One page of the packages matching every term of `query` (whole, the
    /// last also as a prefix), best first (ties by id, so pages never overlap), with how
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
            Db::Sqlite { pool, kept, .. } => {
                let fts_query = fts5_query(&terms, kind);
                let inline = self.inline(|connection| {
                    let scalars = |sql, params: &[&dyn rusqlite::ToSql]| {
                        inline::query(connection, sql, params, |row| row.get::<_, i64>(0))
                    };
                    let page = scalars(SEARCH_PAGE.sqlite, &[&fts_query, &limit, &offset])?;
                    let total = match page_tells_total(&page, limit, offset) {
                        Some(total) => total,
                        None => scalars(SEARCH_COUNT.sqlite, &[&fts_query, &MAX_COUNTED])?
                            .first()
                            .copied()
                            .unwrap_or(0),
                    };
                    Ok((page, total))
                });
                if let Some(found) = inline {
                    return found;
                }
                with_pool!(@sqlite planned, pool, kept, connection => {
                    let page = sqlx::query_scalar::<_, i64>(SEARCH_PAGE.sqlite)
                        .bind(&fts_query)
                        .bind(limit)
                        .bind(offset)
                        .fetch_all(&mut *connection)
                        .await?;
                    let total = match page_tells_total(&page, limit, offset) {
                        Some(total) => total,
                        None => {
                            sqlx::query_scalar::<_, i64>(SEARCH_COUNT.sqlite)
                                .bind(&fts_query)
                                .bind(MAX_COUNTED)
                                .fetch_one(&mut *connection)
                                .await?
                        }
                    };
                    Ok((page, total))
                })
            }
            Db::Postgres(pools) => with_pool!(@postgres planned, pools, connection => {
                let kind = kind.map(Kind::as_str);
                let ts_query = tsquery(&terms);
                let page = sqlx::query_scalar::<_, i64>(SEARCH_PAGE.postgres)
                    .bind(&ts_query)
                    .bind(kind)
                    .bind(limit)
                    .bind(offset)
                    .fetch_all(&mut *connection)
                    .await?;
                let total = match page_tells_total(&page, limit, offset) {
                    Some(total) => total,
                    None => {
                        sqlx::query_scalar::<_, i64>(SEARCH_COUNT.postgres)
                            .bind(&ts_query)
                            .bind(kind)
                            .bind(MAX_COUNTED)
                            .fetch_one(&mut *connection)
                            .await?
                    }
                };
                Ok((page, total))
            }),
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
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(concat!(
                "SELECT p.id FROM packages p WHERE (CAST($1 AS TEXT) IS NULL OR p.kind = $1)
                   AND ",
                has_live_version!(),
                "
                 ORDER BY p.normalized_name, p.kind LIMIT $2"
            ))
            .bind(kind)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_short_of_its_limit_is_the_last() {
        assert_eq!(page_tells_total(&[1, 2], 20, 0), Some(2));
        assert_eq!(page_tells_total(&[], 20, 0), Some(0));
        assert_eq!(page_tells_total(&[7], 20, 40), Some(41));
        // Full, or empty past the first page: only a count can tell.
        assert_eq!(page_tells_total(&[1, 2], 2, 0), None);
        assert_eq!(page_tells_total(&[], 20, 40), None);
        // A page asked for none (`limit` 0) tells nothing.
        assert_eq!(page_tells_total(&[], 0, 0), None);
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
