//! The transparency log's storage: entries appended inside the writes they
//! record ([`AppendLog`]), and the sequencer's transaction that integrates
//! them into stored hashes and a signed checkpoint ([`SequencerTx`]).
//!
//! Order: an append takes the log's lock (PostgreSQL: a transaction-scoped
//! advisory lock; SQLite: `BEGIN IMMEDIATE` already holds the one write
//! lock) as the last step before its commit, so indexes are dense, each is
//! used once, and an entry becomes visible only after every smaller one,
//! however many replicas share the database.

use agentlang_core::tlog::LogEntry;
use agentlang_core::{Kind, PackageName, Version, digest::Sha256Digest, signing::KeyId};
use sqlx::{Postgres, Sqlite, Transaction};

use super::{BeginWrite, Db, WriteTx, now, with_pool};
use crate::db::select_in;

/// `pg_advisory_xact_lock` keys: one for appends, one for the sequencer
/// (integrating does not block appends).
const APPEND_LOCK: i64 = 0x6167_6c6f_6701;
const SEQUENCER_LOCK: i64 = 0x6167_6c6f_6702;

/// The latest checkpoint the sequencer stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CheckpointRow {
    pub size: i64,
    pub root: Vec<u8>,
    pub note: String,
}

/// A version whose publish has no log entry yet (published before the log).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UnloggedVersion {
    pub id: i64,
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
    pub sha256: Sha256Digest,
    pub signer_key_id: Option<KeyId>,
    pub publisher: Option<String>,
    pub published_at: i64,
    pub yanked: bool,
    pub yank_reason: Option<String>,
}

/// Appends one entry inside a write transaction; returns its index.
///
/// On PostgreSQL the entry's index comes from the log's append lock, held
/// to the commit. Every logged transaction takes that lock before it locks
/// any row ([`AppendLog::lock_log`], or its first append), so two logged
/// transactions never hold each other's locks: a batch of publishes holds
/// it while it writes several packages' rows.
pub(crate) trait AppendLog {
    async fn lock_log(&mut self) -> sqlx::Result<()>;
    async fn append_log(&mut self, entry: &LogEntry) -> sqlx::Result<i64>;
    /// Appends `entries` in order, at consecutive indexes; returns the
    /// first. Two statements whatever their number (a batch of publishes).
    async fn append_logs(&mut self, entries: &[&LogEntry]) -> sqlx::Result<i64>;
}

const NEXT_INDEX: &str = "SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries";

/// Rows per INSERT of [`AppendLog::append_logs`]: 3 binds each.
const APPEND_ROWS: usize = 1_000;

/// [`AppendLog::append_logs`] for either backend, once the append lock is
/// held.
macro_rules! append_logs {
    ($tx:expr, $entries:expr) => {{
        let encoded = $entries
            .iter()
            .map(|e| encoded(e))
            .collect::<sqlx::Result<Vec<_>>>()?;
        let first: i64 = sqlx::query_scalar(NEXT_INDEX).fetch_one(&mut **$tx).await?;
        let created_at = now();
        let mut idx = first;
        for chunk in encoded.chunks(APPEND_ROWS) {
            let mut insert =
                sqlx::QueryBuilder::new("INSERT INTO log_entries (idx, entry, created_at) ");
            insert.push_values(chunk, |mut row, entry| {
                row.push_bind(idx).push_bind(entry).push_bind(created_at);
                idx += 1;
            });
            insert.build().execute(&mut **$tx).await?;
        }
        Ok(first)
    }};
}

/// An entry's bytes, or the refusal of one too long for a bundle to serve,
/// before anything of it is written.
fn encoded(entry: &LogEntry) -> sqlx::Result<Vec<u8>> {
    entry
        .to_bytes()
        .map_err(|e| sqlx::Error::Encode(Box::new(e)))
}

const APPEND: &str = "INSERT INTO log_entries (idx, entry, created_at)
     SELECT COALESCE(MAX(idx) + 1, 0), $1, $2 FROM log_entries
     RETURNING idx";

impl AppendLog for WriteTx<Sqlite> {
    /// `BEGIN IMMEDIATE` holds the database's one write lock already.
    async fn lock_log(&mut self) -> sqlx::Result<()> {
        Ok(())
    }

    async fn append_log(&mut self, entry: &LogEntry) -> sqlx::Result<i64> {
        sqlx::query_scalar(APPEND)
            .bind(encoded(entry)?)
            .bind(now())
            .fetch_one(&mut **self)
            .await
    }

    async fn append_logs(&mut self, entries: &[&LogEntry]) -> sqlx::Result<i64> {
        append_logs!(self, entries)
    }
}

impl AppendLog for WriteTx<Postgres> {
    async fn lock_log(&mut self) -> sqlx::Result<()> {
        if !self.log_locked {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(APPEND_LOCK)
                .execute(&mut **self)
                .await?;
            self.log_locked = true;
        }
        Ok(())
    }

    async fn append_log(&mut self, entry: &LogEntry) -> sqlx::Result<i64> {
        let bytes = encoded(entry)?;
        self.lock_log().await?;
        sqlx::query_scalar(APPEND)
            .bind(bytes)
            .bind(now())
            .fetch_one(&mut **self)
            .await
    }

    async fn append_logs(&mut self, entries: &[&LogEntry]) -> sqlx::Result<i64> {
        self.lock_log().await?;
        append_logs!(self, entries)
    }
}

enum Tx {
    Sqlite(WriteTx<Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

macro_rules! with_tx {
    ($tx:expr, $c:ident => $body:expr) => {
        match $tx {
            Tx::Sqlite($c) => $body,
            Tx::Postgres($c) => $body,
        }
    };
    ($tx:expr, mut $c:ident => $body:expr) => {
        match $tx {
            Tx::Sqlite(mut $c) => $body,
            Tx::Postgres(mut $c) => $body,
        }
    };
}

/// The sequencer's transaction: holds the sequencer lock until committed
/// or dropped (rolled back).
pub struct SequencerTx(Tx);

impl SequencerTx {
    /// Up to `limit` entries from index `from` on, in order.
    pub async fn entries_from(&mut self, from: i64, limit: i64) -> sqlx::Result<Vec<Vec<u8>>> {
        with_tx!(&mut self.0, tx => {
            sqlx::query_scalar(
                "SELECT entry FROM log_entries WHERE idx >= $1 ORDER BY idx LIMIT $2",
            )
            .bind(from)
            .bind(limit)
            .fetch_all(&mut **tx)
            .await
        })
    }

    /// The latest checkpoint, as this transaction sees it.
    pub async fn latest_checkpoint(&mut self) -> sqlx::Result<Option<CheckpointRow>> {
        with_tx!(&mut self.0, tx => {
            sqlx::query_as(LATEST_CHECKPOINT).fetch_optional(&mut **tx).await
        })
    }

    /// Stores the hashes integration added (from stored-hash index `from`)
    /// and the checkpoint that covers them, then commits.
    pub async fn store_and_commit(
        self,
        from: u64,
        hashes: &[[u8; 32]],
        checkpoint: &CheckpointRow,
    ) -> sqlx::Result<()> {
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        with_tx!(self.0, mut tx => {
            for (chunk_at, chunk) in hashes.chunks(super::ID_CHUNK).enumerate() {
                let base = from + (chunk_at * super::ID_CHUNK) as i64;
                let mut query = sqlx::QueryBuilder::new("INSERT INTO log_hashes (idx, hash) ");
                query.push_values(chunk.iter().enumerate(), |mut row, (i, hash)| {
                    row.push_bind(base + i as i64).push_bind(hash.to_vec());
                });
                query.build().execute(&mut *tx).await?;
            }
            sqlx::query(
                "INSERT INTO log_checkpoints (size, root, note, created_at)
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(checkpoint.size)
            .bind(&checkpoint.root)
            .bind(&checkpoint.note)
            .bind(now())
            .execute(&mut *tx)
            .await?;
            tx.commit().await
        })
    }
}

const LATEST_CHECKPOINT: &str =
    "SELECT size, root, note FROM log_checkpoints ORDER BY size DESC LIMIT 1";

impl Db {
    /// Starts the sequencer's transaction, waiting for any other
    /// sequencer (another replica's) to finish.
    pub async fn begin_sequencing(&self) -> sqlx::Result<SequencerTx> {
        Ok(SequencerTx(match self {
            Db::Sqlite { pool, .. } => Tx::Sqlite(pool.begin_write().await?),
            Db::Postgres(pools) => {
                let pool = pools.current();
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(SEQUENCER_LOCK)
                    .execute(&mut *tx)
                    .await?;
                Tx::Postgres(tx)
            }
        }))
    }

    /// The number of entries appended (the next index).
    pub async fn log_entry_count(&self) -> sqlx::Result<i64> {
        with_pool!(self, pool => {
            sqlx::query_scalar("SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries")
                .fetch_one(pool)
                .await
        })
    }

    pub async fn latest_checkpoint(&self) -> sqlx::Result<Option<CheckpointRow>> {
        with_pool!(self, pool => {
            sqlx::query_as(LATEST_CHECKPOINT).fetch_optional(pool).await
        })
    }

    /// Stored hashes `from..to`, in order.
    pub async fn log_hashes(&self, from: i64, to: i64) -> sqlx::Result<Vec<Vec<u8>>> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT hash FROM log_hashes WHERE idx >= $1 AND idx < $2 ORDER BY idx",
            )
            .bind(from)
            .bind(to)
            .fetch_all(pool)
            .await
        })
    }

    /// The stored hashes at `indexes` (any order, at most a tile's or a
    /// proof's worth), as `(index, hash)`; an index not stored is absent.
    pub async fn log_hashes_at(&self, indexes: &[i64]) -> sqlx::Result<Vec<(i64, Vec<u8>)>> {
        const SQL: &str = "SELECT idx, hash FROM log_hashes WHERE idx IN (";
        select_in!(self, (i64, Vec<u8>), SQL, SQL, indexes)
    }

    /// Entries `from..to`, in order.
    pub async fn log_entries(&self, from: i64, to: i64) -> sqlx::Result<Vec<(i64, Vec<u8>)>> {
        with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT idx, entry FROM log_entries WHERE idx >= $1 AND idx < $2 ORDER BY idx",
            )
            .bind(from)
            .bind(to)
            .fetch_all(pool)
            .await
        })
    }

    /// The signature lines witnesses added to the checkpoint of `size`.
    pub async fn log_cosignatures(&self, size: i64) -> sqlx::Result<Vec<String>> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT line FROM log_cosignatures WHERE size = $1 ORDER BY witness",
            )
            .bind(size)
            .fetch_all(pool)
            .await
        })
    }

    /// Keeps a witness's cosignature of the checkpoint of `size`, replacing
    /// the witness's earlier one.
    pub async fn put_log_cosignature(
        &self,
        size: i64,
        witness: &str,
        line: &str,
    ) -> sqlx::Result<()> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO log_cosignatures (size, witness, line, created_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (size, witness) DO UPDATE SET line = excluded.line,
                     created_at = excluded.created_at",
            )
            .bind(size)
            .bind(witness)
            .bind(line)
            .bind(now())
            .execute(pool)
            .await
            .map(drop)
        })
    }

    /// The size of the latest checkpoint `witness` cosigned that is kept:
    /// where its next `add-checkpoint` starts.
    pub async fn witness_cosigned_size(&self, witness: &str) -> sqlx::Result<Option<i64>> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, Option<i64>>(
                "SELECT MAX(size) FROM log_cosignatures WHERE witness = $1",
            )
            .bind(witness)
            .fetch_one(pool)
            .await
        })
    }

    /// Drops `witness`'s cosignatures of checkpoints older than `size`:
    /// only the newest checkpoint is served, so only its are kept.
    pub async fn prune_log_cosignatures(&self, witness: &str, size: i64) -> sqlx::Result<()> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM log_cosignatures WHERE witness = $1 AND size < $2")
                .bind(witness)
                .bind(size)
                .execute(pool)
                .await
                .map(drop)
        })
    }

    /// Appends `genesis` as entry 0 when the log is empty; a no-op
    /// otherwise (another replica may have written it first).
    pub async fn append_genesis(&self, genesis: &LogEntry) -> sqlx::Result<()> {
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            let idx = tx.append_log(genesis).await?;
            if idx == 0 {
                tx.commit().await?;
            }
            Ok(())
        })
    }

    /// Up to `limit` versions without a publish entry, oldest first.
    pub async fn unlogged_versions(&self, limit: i64) -> sqlx::Result<Vec<UnloggedVersion>> {
        with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT v.id, p.kind, p.name, v.version, v.sha256, v.signer_key_id,
                        a.username AS publisher, v.published_at, v.yanked, v.yank_reason
                 FROM versions v
                 JOIN packages p ON p.id = v.package_id
                 LEFT JOIN accounts a ON a.id = v.published_by
                 WHERE v.log_index IS NULL
                 ORDER BY v.published_at, v.id
                 LIMIT $1",
            )
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    /// Logs versions published before the log: each gets its publish entry
    /// (and a yank entry when yanked), in one transaction per batch. A
    /// version another replica logged meanwhile is skipped.
    pub async fn log_versions(
        &self,
        versions: &[(i64, LogEntry, Option<LogEntry>)],
    ) -> sqlx::Result<()> {
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            tx.lock_log().await?;
            for (id, publish, yank) in versions {
                // Claims the row: a replica doing the same waited for the
                // log's lock, and then finds it claimed.
                let claimed = sqlx::query(
                    "UPDATE versions SET log_index = -1 WHERE id = $1 AND log_index IS NULL",
                )
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if claimed == 0 {
                    continue;
                }
                let publish_idx = tx.append_log(publish).await?;
                let yank_idx = match yank {
                    Some(yank) => Some(tx.append_log(yank).await?),
                    None => None,
                };
                sqlx::query("UPDATE versions SET log_index = $1, yank_log_index = $2 WHERE id = $3")
                    .bind(publish_idx)
                    .bind(yank_idx)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await
        })
    }
}
