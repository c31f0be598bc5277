//! Answers stored as sent (migrations 0050, 0051): the body of a package's
//! index entry (`GET /api/v1/index/{kind}/{name}`) and of its record
//! (`GET /api/v1/{kind}/{name}`), with its ETag, rendered once per change
//! of the package (`app::stored_answers`), so that a first read of any
//! package is one row, not several statements, a rendering and a hash.
//!
//! An answer is never stale:
//! - the journal trigger that records a change of the package deletes its
//!   answers in the same transaction, and [`Db::store_answers`] stores a
//!   rendering only when no change of its package was journalled after the
//!   generation it was rendered at;
//! - a record also shows download counts, which the journal does not
//!   track: the flush that adds downloads deletes the package's record in
//!   its transaction, and a record is stored only while the package's
//!   total is still the one it shows.
//!
//! Both checks run under the write lock, which a flush also takes.

use agentlang_core::{Kind, PackageName};

use super::{
    Db,
    changes::MAX_SPAN,
    db::BeginWrite,
    inline::{self, InlineRow},
    with_pool,
};

/// Which answer of a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Answer {
    /// `GET /api/v1/index/{kind}/{name}`.
    Index,
    /// `GET /api/v1/{kind}/{name}`: shows download counts.
    Package,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Index => "index",
            Answer::Package => "package",
        }
    }
}

/// A stored answer: the body as sent and its strong ETag.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredAnswer {
    pub body: String,
    pub etag: String,
}

impl InlineRow for StoredAnswer {
    const WIDTH: usize = 2;

    fn columns() -> Vec<&'static str> {
        vec!["body", "etag"]
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            body: row.get(at)?,
            etag: row.get(at + 1)?,
        })
    }
}

/// A rendering to store for `kind`/`normalized_name`.
#[derive(Debug, Clone)]
pub struct NewStoredAnswer {
    pub kind: Kind,
    pub normalized_name: String,
    pub answer: Answer,
    /// What the rendering shows as the package's downloads (its live
    /// versions' total); 0 for an index entry, which shows none.
    pub downloads: i64,
    pub body: String,
    pub etag: String,
}

/// A package, by id, kind and name as first published.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PackageRef {
    pub id: i64,
    pub kind: Kind,
    pub name: PackageName,
}

const READ_ANSWER: &str = "SELECT body, etag FROM stored_answers
     WHERE kind = $1 AND normalized_name = $2 AND answer = $3";

/// Whether the journal holds every generation after `$1` (none pruned, at
/// most [`MAX_SPAN`] of them, as `changes_between` requires): only then can
/// [`STORE_ANSWER`] tell that a package did not change since.
const JOURNAL_HOLDS_SINCE: &str = "SELECT g.generation >= $1 AND g.generation - $1 <= $2
            AND (SELECT COUNT(DISTINCT c.generation) FROM registry_changes c
                 WHERE c.generation > $1) = g.generation - $1
     FROM registry_generation g WHERE g.id = 1";

/// Inserts a rendering made at generation `$4` unless a journal row after
/// it changed the package or everything, or (a record) the package's live
/// versions were downloaded since (their total is not `$5`: each count
/// only grows). Run under the write lock, after [`JOURNAL_HOLDS_SINCE`],
/// so no change commits between the check and the insert; a change after
/// it deletes the row.
const STORE_ANSWER: &str = "INSERT INTO stored_answers
         (kind, normalized_name, answer, generation, downloads, etag, body)
     SELECT $1, $2, $3, $4, $5, $6, $7
     WHERE NOT EXISTS (
           SELECT 1 FROM registry_changes c
           WHERE c.generation > $4
             AND ((c.scope = 'package' AND c.kind = $1 AND c.normalized_name = $2)
                  OR c.scope NOT IN ('package', 'dependents', 'listings')
                  OR (c.scope = 'package' AND (c.kind IS NULL OR c.normalized_name IS NULL))))
       AND ($3 = 'index'
            OR $5 = (SELECT CAST(COALESCE(SUM(v.downloads), 0) AS BIGINT)
                     FROM packages p JOIN versions v ON v.package_id = p.id
                     WHERE p.kind = $1 AND p.normalized_name = $2 AND v.deleted_at IS NULL))
     ON CONFLICT (kind, normalized_name, answer) DO NOTHING";

/// `pg_advisory_xact_lock` key that a download flush and a store of
/// answers both take on PostgreSQL, so a flush commits wholly before or
/// after a store's checks (SQLite's one write lock already orders them).
pub(crate) const DOWNLOADS_LOCK: i64 = 0x6167_6c6f_6703;

/// The check and the inserts on a write transaction of either backend,
/// then its commit: rows stored.
macro_rules! store_answers {
    ($tx:ident, $rendered_at:expr, $answers:expr) => {{
        let whole: bool = sqlx::query_scalar(JOURNAL_HOLDS_SINCE)
            .bind($rendered_at)
            .bind(MAX_SPAN)
            .fetch_one(&mut *$tx)
            .await?;
        let mut stored = 0;
        if whole {
            for answer in $answers {
                stored += sqlx::query(STORE_ANSWER)
                    .bind(answer.kind.as_str())
                    .bind(answer.normalized_name.as_str())
                    .bind(answer.answer.as_str())
                    .bind($rendered_at)
                    .bind(answer.downloads)
                    .bind(answer.etag.as_str())
                    .bind(answer.body.as_str())
                    .execute(&mut *$tx)
                    .await?
                    .rows_affected();
            }
        }
        $tx.commit().await?;
        stored
    }};
}

impl Db {
    /// The stored `answer` of `kind`/`normalized` (a normalized name), or
    /// `None` (no such package, or not rendered since it last changed).
    pub async fn stored_answer(
        &self,
        kind: Kind,
        normalized: &str,
        answer: Answer,
    ) -> Result<Option<StoredAnswer>, sqlx::Error> {
        let inline = self.inline(|connection| {
            inline::query_rows::<StoredAnswer>(
                connection,
                READ_ANSWER,
                &[&kind.as_str(), &normalized, &answer.as_str()],
            )
        });
        if let Some(found) = inline {
            return found.map(|rows| rows.into_iter().next());
        }
        with_pool!(planned self, pool => {
            sqlx::query_as::<_, StoredAnswer>(READ_ANSWER)
                .bind(kind.as_str())
                .bind(normalized)
                .bind(answer.as_str())
                .fetch_optional(pool)
                .await
        })
    }

    /// Up to `limit` packages after id `after`, in id order, that lack a
    /// stored answer of either kind.
    pub async fn packages_without_answers(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<PackageRef>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, PackageRef>(
                "SELECT p.id, p.kind, p.name FROM packages p
                 WHERE p.id > $1
                   AND (SELECT COUNT(*) FROM stored_answers s
                        WHERE s.kind = p.kind AND s.normalized_name = p.normalized_name) < 2
                 ORDER BY p.id LIMIT $2",
            )
            .bind(after)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// Stores renderings made at generation `rendered_at`, in one write
    /// transaction: each only if what it shows has not changed since (see
    /// [`JOURNAL_HOLDS_SINCE`], [`STORE_ANSWER`]). Returns how many were
    /// stored.
    pub async fn store_answers(
        &self,
        rendered_at: i64,
        answers: &[NewStoredAnswer],
    ) -> Result<u64, sqlx::Error> {
        if answers.is_empty() {
            return Ok(0);
        }
        // One order for every writer, so two replicas storing the same
        // packages wait on each other's keys in turn, never in a circle.
        let mut answers: Vec<&NewStoredAnswer> = answers.iter().collect();
        answers.sort_by(|a, b| {
            (a.kind.as_str(), &a.normalized_name, a.answer).cmp(&(
                b.kind.as_str(),
                &b.normalized_name,
                b.answer,
            ))
        });
        let stored = match self {
            // `BEGIN IMMEDIATE`: the checks and the inserts under the
            // write lock.
            Db::Sqlite { pool, .. } => {
                let mut tx = pool.begin_write().await?;
                store_answers!(tx, rendered_at, answers)
            }
            Db::Postgres(pools) => {
                let mut tx = pools.current().begin_write().await?;
                // A writer bumps the generation at its commit (deferred,
                // 0026): waiting on the row lets it commit first, so the
                // next statements see its journal rows; a writer after
                // waits for this commit, and its trigger deletes what is
                // stored here. The same for a download flush, through its
                // lock.
                sqlx::query("SELECT generation FROM registry_generation WHERE id = 1 FOR SHARE")
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(DOWNLOADS_LOCK)
                    .execute(&mut *tx)
                    .await?;
                store_answers!(tx, rendered_at, answers)
            }
        };
        Ok(stored)
    }
}
