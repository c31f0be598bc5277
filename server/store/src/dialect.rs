//! Where SQLite and PostgreSQL truly differ, and nowhere else: full-text
//! search, JSON aggregation, JSON iteration. Every other statement is
//! written once, in SQL both accept: `$n` placeholders, `CAST($1 AS TEXT)
//! IS NULL` for an optional parameter, `document->>'key'` for a member of
//! a JSON column (TEXT in SQLite, JSONB in PostgreSQL).

use agentlang_core::Kind;

use crate::Db;

/// Which SQL a statement is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Db {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite { .. } => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }
}

// ------------------------------------------------------------ full-text search

/// How a query's terms match: each a whole word, and the last also as a
/// prefix, since it may be a word still being typed (Algolia's
/// `prefixLast`). A prefix costs in proportion to the catalog: FTS5 merges
/// the postings of every word it begins into one list before it can rank,
/// where a whole word's postings are read only as far as the other terms
/// need; a prefix on every term made each search's cost grow with the
/// catalog.
fn whole_then_prefix(terms: &[String]) -> impl Iterator<Item = (&str, bool)> {
    let last = terms.len().saturating_sub(1);
    terms
        .iter()
        .enumerate()
        .map(move |(i, t)| (t.as_str(), i == last))
}

/// SQLite: FTS5 syntax, the terms as [`whole_then_prefix`] says, in the
/// text columns (not `kind`), and with `kind` the package's kind.
/// `"term"`: a quoted string is never an FTS5 operator.
pub(crate) fn fts5_query(terms: &[String], kind: Option<Kind>) -> String {
    let words = whole_then_prefix(terms)
        .map(|(t, prefix)| format!("\"{t}\"{}", if prefix { "*" } else { "" }))
        .collect::<Vec<_>>()
        .join(" ");
    let mut query = format!("{{name description keywords}} : ({words})");
    if let Some(kind) = kind {
        query.push_str(&format!(" AND kind : \"{}\"", kind.as_str()));
    }
    query
}

/// PostgreSQL: tsquery syntax, the terms as [`whole_then_prefix`] says,
/// all required.
pub(crate) fn tsquery(terms: &[String]) -> String {
    whole_then_prefix(terms)
        .map(|(t, prefix)| format!("{t}{}", if prefix { ":*" } else { "" }))
        .collect::<Vec<_>>()
        .join(" & ")
}

/// A package with a live (not deleted) version; uses the partial index
/// `versions_index_entries`. A
/// macro, so queries stay `&'static str`.
macro_rules! has_live_version {
    () => {
        "EXISTS (SELECT 1 FROM versions v WHERE v.package_id = p.id AND v.deleted_at IS NULL)"
    };
}
pub(crate) use has_live_version;

/// Most matches ranked by what each row's own postings say, not by `bm25`.
macro_rules! few_matches {
    () => {
        100
    };
}

/// SQLite's rank of a match of query `$1` in `packages_fts` (its columns
/// qualified by `$t`), lower first: the name weighs 10, keywords 5, the
/// description 1, the kind nothing. FTS5's `bm25` first reads every posting
/// of each term to weigh it by rarity: for `weather tool61496` the 9,600
/// postings of `weather` at 100,000 tools, to rank one match (a p99 of
/// 0.6 ms against 0.07, the catalog's size in every search that matches).
/// Up to [`few_matches`] matches (a query with a rare term; the count stops
/// there), each is ranked by its marked occurrences instead (`highlight`
/// reads only that row), with the same weights and no rarity. More matches
/// than that are ranked by `bm25`, which then costs what ranking them does:
/// marking each of 9,600 rows took 3.5 times as long.
macro_rules! sqlite_rank {
    ($t:literal) => {
        concat!(
            "CASE WHEN (SELECT COUNT(*) FROM (SELECT 1 FROM packages_fts
                         WHERE packages_fts MATCH $1 LIMIT ",
            few_matches!(),
            " + 1)) <= ",
            few_matches!(),
            " THEN -(10 * (length(highlight(packages_fts, 0, char(1), '')) - length(",
            $t,
            "name))
                    + 5 * (length(highlight(packages_fts, 2, char(1), '')) - length(",
            $t,
            "keywords))
                    + length(highlight(packages_fts, 1, char(1), '')) - length(",
            $t,
            "description))
                 ELSE bm25(packages_fts, 10.0, 1.0, 5.0, 0.0) END"
        )
    };
}

/// Ids of the packages with a live version matching the query (`$1`, the
/// dialect's query text), of kind `$2` (or any), best first, at most `$3`.
pub(crate) const SEARCH_LIVE_IDS: Texts = Texts {
    sqlite: concat!(
        "SELECT p.id FROM packages_fts f JOIN packages p ON p.id = f.rowid
         WHERE packages_fts MATCH $1 AND (CAST($2 AS TEXT) IS NULL OR p.kind = $2)
           AND ",
        has_live_version!(),
        "
         ORDER BY ",
        sqlite_rank!("f."),
        ", p.normalized_name
         LIMIT $3"
    ),
    postgres: concat!(
        "SELECT p.id FROM packages p
         WHERE p.search_document @@ to_tsquery('simple', $1)
           AND (CAST($2 AS TEXT) IS NULL OR p.kind = $2)
           AND ",
        has_live_version!(),
        "
         ORDER BY ts_rank(p.search_document, to_tsquery('simple', $1)) DESC,
                  p.normalized_name
         LIMIT $3"
    ),
};

/// One ranked page of matches, ties by id so pages never overlap, from the
/// index alone (SQLite's FTS5 table holds the kind, so its query carries
/// it: `$1` the query, `$2` the limit, `$3` the offset; PostgreSQL's GIN
/// index finds the rows whose stored `tsvector` is ranked: `$1` the query,
/// `$2` the kind or NULL, `$3` the limit, `$4` the offset).
pub(crate) const SEARCH_PAGE: Texts = Texts {
    sqlite: concat!(
        "SELECT rowid FROM packages_fts WHERE packages_fts MATCH $1
         ORDER BY ",
        sqlite_rank!(""),
        ", rowid
         LIMIT $2 OFFSET $3"
    ),
    postgres: "SELECT p.id FROM packages p
               WHERE p.search_document @@ to_tsquery('simple', $1)
                 AND (CAST($2 AS TEXT) IS NULL OR p.kind = $2)
               ORDER BY ts_rank(p.search_document, to_tsquery('simple', $1)) DESC, p.id
               LIMIT $3 OFFSET $4",
};

/// How many packages match, counted up to a bound: SQLite `$1` the query,
/// `$2` the bound; PostgreSQL `$1` the query, `$2` the kind or NULL, `$3`
/// the bound.
pub(crate) const SEARCH_COUNT: Texts = Texts {
    sqlite: "SELECT COUNT(*) FROM (SELECT 1 FROM packages_fts
             WHERE packages_fts MATCH $1 LIMIT $2)",
    postgres: "SELECT COUNT(*) FROM (SELECT 1 FROM packages p
               WHERE p.search_document @@ to_tsquery('simple', $1)
                 AND (CAST($2 AS TEXT) IS NULL OR p.kind = $2) LIMIT $3) AS matches",
};

// ------------------------------------------------------------ JSON aggregation

/// An index read's package columns, as `PackageRecord` reads them.
const INDEX_PACKAGE: &str = "p.id, p.kind, p.name, p.normalized_name, p.description, p.keywords,
     p.created_at, p.updated_at";

/// An index read's statuses of package `p` on SQLite: the JSON array of the
/// version ids quarantined (0: the whole package), and whether it has any
/// status row.
const SQLITE_INDEX_STATUSES: &str = "(SELECT json_group_array(s.version_id) FROM statuses s
      WHERE s.package_id = p.id AND s.status = 'quarantined') AS quarantined,
     EXISTS (SELECT 1 FROM statuses s WHERE s.package_id = p.id) AS has_statuses";

/// Packages of `kind` by normalized name, each one row with its live
/// versions and their tool dependencies aggregated into a JSON array of
/// `[id, version, sha256, yanked, {name: requirement}, published_at,
/// log_index, trusted, provenance]`, the JSON array of the version ids
/// quarantined (0: the whole package), and whether it has any status row;
/// ends with `IN (` for `select_in!`. One statement, so a read through a
/// connection's thread is one hand-off whatever the number of versions;
/// on SQLite's calling thread [`package_index_heads`] and
/// [`INDEX_VERSIONS`] read the same as rows. Every column comes from the
/// indexes `versions_index_entries` (migration 0049: with each version's
/// tool dependencies, written at publish) and the statuses': a read of a
/// package nothing else has touched reads no table row and makes no
/// descent per version. `kind` is one of the enum's fixed words, never
/// input.
pub(crate) fn package_index_rows(dialect: Dialect, kind: Kind) -> String {
    let kind = kind.as_str();
    match dialect {
        Dialect::Sqlite => format!(
            "SELECT {INDEX_PACKAGE},
                    (SELECT json_group_array(json_array(v.id, v.version, v.sha256, v.yanked,
                                json(v.tool_dependencies),
                                v.published_at, v.log_index,
                                v.publisher_identity IS NOT NULL,
                                v.provenance_sha256 IS NOT NULL))
                     FROM versions v
                     WHERE v.package_id = p.id AND v.deleted_at IS NULL) AS versions,
                    {SQLITE_INDEX_STATUSES}
             FROM packages p WHERE p.kind = '{kind}' AND p.normalized_name IN ("
        ),
        Dialect::Postgres => format!(
            "SELECT {INDEX_PACKAGE},
                    (SELECT COALESCE(json_agg(json_build_array(v.id, v.version, v.sha256,
                                v.yanked,
                                CAST(v.tool_dependencies AS json),
                                v.published_at, v.log_index,
                                v.publisher_identity IS NOT NULL,
                                v.provenance_sha256 IS NOT NULL)), '[]'::json)::text
                     FROM versions v
                     WHERE v.package_id = p.id AND v.deleted_at IS NULL) AS versions,
                    (SELECT COALESCE(json_agg(s.version_id), '[]'::json)::text FROM statuses s
                     WHERE s.package_id = p.id AND s.status = 'quarantined') AS quarantined,
                    EXISTS (SELECT 1 FROM statuses s WHERE s.package_id = p.id) AS has_statuses
             FROM packages p WHERE p.kind = '{kind}' AND p.normalized_name IN ("
        ),
    }
}

/// [`package_index_rows`] on SQLite without the versions: what the calling
/// thread reads first, before [`INDEX_VERSIONS`].
pub(crate) fn package_index_heads(kind: Kind) -> String {
    format!(
        "SELECT {INDEX_PACKAGE}, {SQLITE_INDEX_STATUSES}
         FROM packages p WHERE p.kind = '{}' AND p.normalized_name IN (",
        kind.as_str()
    )
}

/// The live versions of the packages listed after it (`IN (`), unordered,
/// a row each with the columns of [`package_index_rows`]' array: read on
/// SQLite's calling thread, where a row costs no hand-off and building
/// and parsing JSON would be most of the work. From
/// `versions_index_entries` alone.
pub(crate) const INDEX_VERSIONS: &str = "SELECT package_id, id, version, sha256, yanked,
            tool_dependencies, published_at, log_index,
            publisher_identity IS NOT NULL AS trusted,
            provenance_sha256 IS NOT NULL AS provenance
     FROM versions WHERE deleted_at IS NULL AND package_id IN (";

/// The columns of one live version `v` as its record shows it (`records::
/// VersionDetail`), its signer's key `k` and publisher `a` joined, its tool
/// dependencies as the publish stored them (migration 0049), and its
/// extras by `$extras`. A macro, so the statements built from it stay
/// `&'static str`; both dialects read the same text.
macro_rules! version_detail_columns {
    ($extras:expr) => {
        concat!(
            "v.id AS version_id, v.version, v.sha256, v.size,
             k.key_id AS signer_key_id, k.revoked_at AS signer_revoked_at,
             CAST(v.manifest AS TEXT) AS manifest, CAST(v.spec AS TEXT) AS spec,
             CAST(v.lockfile AS TEXT) AS lockfile, v.yanked, v.yank_reason,
             a.username AS publisher, v.published_at, v.downloads, v.log_index,
             v.prompt_mode, v.prompt_key_id, v.publisher_identity IS NOT NULL AS trusted,
             v.provenance_sha256 IS NOT NULL AS provenance,
             EXISTS (SELECT 1 FROM statuses s WHERE s.package_id = v.package_id)
                 AS has_statuses,
             v.tool_dependencies AS dependencies, ",
            $extras,
            " AS extras"
        )
    };
}

/// The joins of [`version_detail_columns`].
macro_rules! version_detail_joins {
    () => {
        " LEFT JOIN signing_keys k ON k.key_id = v.signer_key_id
          LEFT JOIN accounts a ON a.id = v.published_by "
    };
}

/// One live version with its package, by kind `$1`, normalized name `$2`
/// and precedence `$3`-`$6` (major, minor, patch, prerelease): a version
/// record in one statement.
pub(crate) const VERSION_DETAIL: &str = concat!(
    "SELECT p.id, p.kind, p.name, p.normalized_name, p.description, p.keywords,
            p.created_at, p.updated_at, ",
    version_detail_columns!("CAST(v.extras AS TEXT)"),
    " FROM packages p
      JOIN versions v ON v.package_id = p.id AND v.major = $3 AND v.minor = $4
           AND v.patch = $5 AND v.prerelease = $6 AND v.deleted_at IS NULL",
    version_detail_joins!(),
    "WHERE p.kind = $1 AND p.normalized_name = $2"
);

/// Every live version of package `$1`, unordered, as [`VERSION_DETAIL`]
/// reads one (extras aside: only a version's own record shows them).
pub(crate) const PACKAGE_VERSION_DETAILS: &str = concat!(
    "SELECT ",
    version_detail_columns!("CAST(NULL AS TEXT)"),
    " FROM versions v",
    version_detail_joins!(),
    "WHERE v.package_id = $1 AND v.deleted_at IS NULL"
);

// ------------------------------------------------------------ JSON iteration

/// Live versions whose `agent.lock` pins the tool `$1` (a normalized name;
/// lock keys are folded the way names are before comparing), with the
/// pin's requirement, newest publications first.
pub(crate) const LOCK_PINS_OF_TOOL: Texts = Texts {
    sqlite: "SELECT p.kind, p.name, v.version,
                    json_extract(j.value, '$.requirement') AS requirement
             FROM versions v
             JOIN packages p ON p.id = v.package_id,
                  json_each(v.lockfile, '$.tools') j
             WHERE v.deleted_at IS NULL AND v.lockfile IS NOT NULL
               AND lower(replace(j.key, '-', '_')) = $1
             ORDER BY v.published_at DESC, v.id DESC",
    postgres: "SELECT p.kind, p.name, v.version, j.value->>'requirement' AS requirement
               FROM versions v
               JOIN packages p ON p.id = v.package_id
               CROSS JOIN LATERAL jsonb_each(
                   CASE WHEN jsonb_typeof(v.lockfile->'tools') = 'object'
                        THEN v.lockfile->'tools' ELSE '{}'::jsonb END) AS j(key, value)
               WHERE v.deleted_at IS NULL AND v.lockfile IS NOT NULL
                 AND lower(replace(j.key, '-', '_')) = $1
               ORDER BY v.published_at DESC, v.id DESC",
};

/// One statement in both dialects.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Texts {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

impl Texts {
    pub(crate) fn of(self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Sqlite => self.sqlite,
            Dialect::Postgres => self.postgres,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_matched_in_the_text_columns_and_kind_in_its_own() {
        let terms = vec!["web".to_owned(), "search".to_owned()];
        assert_eq!(
            fts5_query(&terms, None),
            r#"{name description keywords} : ("web" "search"*)"#
        );
        assert_eq!(
            fts5_query(&terms, Some(Kind::Tool)),
            r#"{name description keywords} : ("web" "search"*) AND kind : "tool""#
        );
        assert_eq!(tsquery(&terms), "web & search:*");
        assert_eq!(tsquery(&["web".to_owned()]), "web:*");
    }
}
