//! Index entries stored as sent (migration 0050): the body of
//! `GET /api/v1/index/{kind}/{name}` and its ETag, rendered once per
//! change of the package (`app::index_documents`), so that a first read of
//! any package is one row, not two statements, a rendering and a hash.
//!
//! A document is never stale: the journal trigger that records a change of
//! the package deletes its document in the same transaction, and
//! [`Db::store_index_documents`] stores a rendering only when no change of
//! its package was journalled after the generation it was rendered at,
//! checked under the write lock.

use agentlang_core::{Kind, PackageName};

use super::{
    Db,
    changes::MAX_SPAN,
    db::BeginWrite,
    inline::{self, InlineRow},
    with_pool,
};

/// A stored index entry: the body as sent and its strong ETag.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct IndexDocument {
    pub body: String,
    pub etag: String,
}

impl InlineRow for IndexDocument {
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
pub struct NewIndexDocument {
    pub kind: Kind,
    pub normalized_name: String,
    pub body: String,
    pub etag: String,
}

/// A package without a stored document.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UndocumentedPackage {
    pub id: i64,
    pub kind: Kind,
    pub name: PackageName,
}

const READ_DOCUMENT: &str = "SELECT body, etag FROM index_documents
     WHERE kind = $1 AND normalized_name = $2";

/// Whether the journal holds every generation after `$1` (none pruned, at
/// most [`MAX_SPAN`] of them, as `changes_between` requires): only then can
/// [`STORE_DOCUMENT`] tell that a package did not change since.
const JOURNAL_HOLDS_SINCE: &str = "SELECT g.generation >= $1 AND g.generation - $1 <= $2
            AND (SELECT COUNT(DISTINCT c.generation) FROM registry_changes c
                 WHERE c.generation > $1) = g.generation - $1
     FROM registry_generation g WHERE g.id = 1";

/// Inserts a rendering made at generation `$3` unless a journal row after
/// it changed the package or everything. Run under the write lock, after
/// [`JOURNAL_HOLDS_SINCE`], so no change commits between the check and the
/// insert; a change after it deletes the row.
const STORE_DOCUMENT: &str =
    "INSERT INTO index_documents (kind, normalized_name, generation, etag, body)
     SELECT $1, $2, $3, $4, $5
     WHERE NOT EXISTS (
           SELECT 1 FROM registry_changes c
           WHERE c.generation > $3
             AND ((c.scope = 'package' AND c.kind = $1 AND c.normalized_name = $2)
                  OR c.scope NOT IN ('package', 'dependents', 'listings')
                  OR (c.scope = 'package' AND (c.kind IS NULL OR c.normalized_name IS NULL))))
     ON CONFLICT (kind, normalized_name) DO NOTHING";

/// The check and the inserts on a write transaction of either backend,
/// then its commit: rows stored.
macro_rules! store_documents {
    ($tx:ident, $rendered_at:expr, $documents:expr) => {{
        let whole: bool = sqlx::query_scalar(JOURNAL_HOLDS_SINCE)
            .bind($rendered_at)
            .bind(MAX_SPAN)
            .fetch_one(&mut *$tx)
            .await?;
        let mut stored = 0;
        if whole {
            for document in $documents {
                stored += sqlx::query(STORE_DOCUMENT)
                    .bind(document.kind.as_str())
                    .bind(document.normalized_name.as_str())
                    .bind($rendered_at)
                    .bind(document.etag.as_str())
                    .bind(document.body.as_str())
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
    /// The stored index entry of `kind`/`normalized` (a normalized name),
    /// or `None` (no such package, or not rendered since its last change).
    pub async fn index_document(
        &self,
        kind: Kind,
        normalized: &str,
    ) -> Result<Option<IndexDocument>, sqlx::Error> {
        let inline = self.inline(|connection| {
            inline::query_rows::<IndexDocument>(
                connection,
                READ_DOCUMENT,
                &[&kind.as_str(), &normalized],
            )
        });
        if let Some(found) = inline {
            return found.map(|rows| rows.into_iter().next());
        }
        with_pool!(planned self, pool => {
            sqlx::query_as::<_, IndexDocument>(READ_DOCUMENT)
                .bind(kind.as_str())
                .bind(normalized)
                .fetch_optional(pool)
                .await
        })
    }

    /// Up to `limit` packages after id `after`, in id order, that have no
    /// stored document.
    pub async fn undocumented_packages(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<UndocumentedPackage>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, UndocumentedPackage>(
                "SELECT p.id, p.kind, p.name FROM packages p
                 WHERE p.id > $1
                   AND NOT EXISTS (SELECT 1 FROM index_documents d
                                   WHERE d.kind = p.kind AND d.normalized_name = p.normalized_name)
                 ORDER BY p.id LIMIT $2",
            )
            .bind(after)
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// Stores renderings made at generation `rendered_at`, in one write
    /// transaction: each only if its package has not changed since (see
    /// [`JOURNAL_HOLDS_SINCE`], [`STORE_DOCUMENT`]). Returns how many were
    /// stored.
    pub async fn store_index_documents(
        &self,
        rendered_at: i64,
        documents: &[NewIndexDocument],
    ) -> Result<u64, sqlx::Error> {
        if documents.is_empty() {
            return Ok(0);
        }
        // One order for every writer, so two replicas storing the same
        // packages wait on each other's keys in turn, never in a circle.
        let mut documents: Vec<&NewIndexDocument> = documents.iter().collect();
        documents.sort_by(|a, b| {
            (a.kind.as_str(), &a.normalized_name).cmp(&(b.kind.as_str(), &b.normalized_name))
        });
        let stored = match self {
            // `BEGIN IMMEDIATE`: the check and the inserts under the write
            // lock.
            Db::Sqlite { pool, .. } => {
                let mut tx = pool.begin_write().await?;
                store_documents!(tx, rendered_at, documents)
            }
            Db::Postgres(pools) => {
                let mut tx = pools.current().begin_write().await?;
                // A writer bumps the generation at its commit (deferred,
                // 0026): waiting on the row lets it commit first, so the
                // next statements see its journal rows; a writer after
                // waits for this commit, and its trigger deletes what is
                // stored here.
                sqlx::query("SELECT generation FROM registry_generation WHERE id = 1 FOR SHARE")
                    .execute(&mut *tx)
                    .await?;
                store_documents!(tx, rendered_at, documents)
            }
        };
        Ok(stored)
    }
}
