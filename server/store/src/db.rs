//! [`Db`]: one pool over SQLite or PostgreSQL, migrations, and the write
//! transaction every change runs in.

use std::{path::PathBuf, str::FromStr, sync::Arc, time::Duration};

use sqlx::{
    ConnectOptions as _, PgPool, SqlitePool,
    postgres::{PgConnectOptions, PgPoolOptions},
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

use crate::{inline::Inline, per_runtime::PerRuntime};

/// Runs `$body` with `$pool` bound to the live pool, whichever backend it is.
/// `planned` is for the public reads whose PostgreSQL plans do not depend
/// on their parameters: there, the pool whose connections plan each
/// prepared statement once ([`PgPools::planned`]); on either backend,
/// `$pool` is then a connection kept between those reads ([`Kept`]), a
/// `&mut` to reborrow (`&mut *pool`) for a second statement.
macro_rules! with_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        $crate::db::with_pool!(@on current, $db, $pool => $body)
    };
    (planned $db:expr, $pool:ident => $body:expr) => {
        $crate::db::with_pool!(@on planned, $db, $pool => $body)
    };
    (@on $which:ident, $db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite { pool, kept, .. } => {
                $crate::db::with_pool!(@sqlite $which, pool, kept, $pool => $body)
            }
            $crate::db::Db::Postgres(pools) => {
                $crate::db::with_pool!(@postgres $which, pools, $pool => $body)
            }
        }
    };
    // One backend's executor for `$body`: the pool itself, or for the
    // public reads a connection kept between them ([`Kept`]).
    (@sqlite current, $pool:ident, $kept:ident, $executor:ident => $body:expr) => {{
        let _ = $kept;
        let $executor = $pool;
        $body
    }};
    (@sqlite planned, $pool:ident, $kept:ident, $executor:ident => $body:expr) => {
        $crate::db::with_pool!(@kept $kept, $pool, $executor => $body)
    };
    (@postgres current, $pools:ident, $executor:ident => $body:expr) => {{
        let $executor = $pools.current();
        $body
    }};
    (@postgres planned, $pools:ident, $executor:ident => $body:expr) => {{
        let (pool, kept) = $pools.planned_kept();
        $crate::db::with_pool!(@kept kept, pool, $executor => $body)
    }};
    (@kept $kept:expr, $pool:expr, $executor:ident => $body:expr) => {{
        let kept = $kept;
        let mut connection = kept.take($pool).await?;
        let $executor = &mut *connection;
        let result = $body;
        if result.is_ok() {
            kept.keep(connection);
        }
        result
    }};
}
pub(crate) use with_pool;

/// How much of a SQLite file is read through a memory map: all of it.
/// SQLite holds it to its compile-time maximum, which `.cargo/config.toml`
/// sets to this (`SQLITE_MAX_MMAP_SIZE`; 2 GiB in a default build, past
/// which pages would be read as before).
const SQLITE_MMAP_BYTES: u64 = 1 << 40;

/// Ids per query: far below either backend's bind limit.
pub(crate) const ID_CHUNK: usize = 500;

/// `SELECT ... WHERE <column> IN (ids)`, chunked, in either dialect: one
/// query per 500 ids, whatever the number of rows it stands for. Each SQL
/// text ends with `IN (`. PostgreSQL gets `= ANY($1)` with the ids as one
/// array instead: one statement text whatever their number, not one per
/// list length (planning cost more than running a batch of the index's
/// rows). `planned` runs it as `with_pool!`'s `planned` does: on a kept
/// connection, which on PostgreSQL plans it once.
macro_rules! select_in {
    ($db:expr, $row:ty, $sqlite:expr, $postgres:expr, $ids:expr) => {
        $crate::db::select_in!(@on current away, $db, $row, $sqlite, $postgres, $ids)
    };
    // On PostgreSQL's planned-once pool, as `with_pool!`'s `planned`, and
    // short lists on SQLite's calling thread.
    (planned $db:expr, $row:ty, $sqlite:expr, $postgres:expr, $ids:expr) => {
        $crate::db::select_in!(@on planned here, $db, $row, $sqlite, $postgres, $ids)
    };
    // As `planned`, but never on the calling thread: for a read whose
    // calling-thread form is another statement.
    (pooled $db:expr, $row:ty, $sqlite:expr, $postgres:expr, $ids:expr) => {
        $crate::db::select_in!(@on planned away, $db, $row, $sqlite, $postgres, $ids)
    };
    (@on $which:ident $place:ident, $db:expr, $row:ty, $sqlite:expr, $postgres:expr, $ids:expr) => {{
        let mut out: Vec<$row> = Vec::new();
        for chunk in $ids.chunks($crate::db::ID_CHUNK) {
            let rows: Result<Vec<$row>, sqlx::Error> = match $db {
                $crate::db::Db::Sqlite { pool, kept, inline } => {
                    match $crate::db::select_in!(@inline $place, inline, $row, $sqlite, chunk) {
                        Some(rows) => rows,
                        None => $crate::db::with_pool!(@sqlite $which, pool, kept, executor => {
                            let mut query = sqlx::QueryBuilder::<sqlx::Sqlite>::new($sqlite);
                            let mut ids = query.separated(", ");
                            for id in chunk {
                                ids.push_bind(id);
                            }
                            query.push(")");
                            query.build_query_as::<$row>().fetch_all(executor).await
                        }),
                    }
                }
                $crate::db::Db::Postgres(pools) => {
                    $crate::db::with_pool!(@postgres $which, pools, executor => {
                        let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                            $crate::db::any_of($postgres),
                        );
                        query.push_bind(chunk);
                        query.push(")");
                        query.build_query_as::<$row>().fetch_all(executor).await
                    })
                }
            };
            out.extend(rows?);
        }
        Ok(out)
    }};
    // The public reads' short lists on SQLite's calling thread ([`Inline`]).
    (@inline away, $inline:ident, $row:ty, $sqlite:expr, $chunk:ident) => {{
        let _ = $inline;
        None::<Result<Vec<$row>, sqlx::Error>>
    }};
    (@inline here, $inline:ident, $row:ty, $sqlite:expr, $chunk:ident) => {
        match $inline {
            Some(inline) if $chunk.len() <= $crate::inline::INLINE_IDS => {
                inline.read(|connection| $crate::inline::select_in::<$row, _>(connection, $sqlite, $chunk))
            }
            _ => None,
        }
    };
}

/// `... IN (` as `... = ANY(`, for [`select_in!`] on PostgreSQL.
pub(crate) fn any_of(in_list_sql: &str) -> String {
    let head = in_list_sql
        .trim_end()
        .strip_suffix("IN (")
        .expect("select_in! SQL ends with `IN (`");
    format!("{head}= ANY(")
}

pub(crate) use select_in;

/// Where metadata lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A `sqlite:` URL as configured.
    Sqlite(String),
    /// A SQLite file by path: the default, so a data folder whose path has
    /// spaces or `?` needs no URL escaping.
    SqlitePath(PathBuf),
    Postgres(String),
}

impl DatabaseUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite(url.to_owned()))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres(url.to_owned()))
        } else {
            Err(format!(
                "{url:?} is not a database URL (expected sqlite://... or postgres://...)"
            ))
        }
    }
}

/// Migrations renumbered so that one number means one change in both
/// folders: `(old version, new version, description)`. The file is the
/// same (so is its checksum); a database migrated before keeps its history
/// under the new number.
const RENUMBERED_SQLITE: &[(i64, i64, &str)] = &[
    // SQLite's 0024 was the search index's change, PostgreSQL's 0024 the
    // deferred publish bump.
    (24, 28, "search ranks in the index"),
];

/// Moves the rows of renumbered migrations to their new numbers, before
/// the migrator compares what was applied with what it has.
async fn renumber_sqlite_migrations(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    let has_history: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')",
    )
    .fetch_one(pool)
    .await?;
    if !has_history {
        return Ok(());
    }
    for (old, new, description) in RENUMBERED_SQLITE {
        sqlx::query(
            "UPDATE _sqlx_migrations SET version = $1 WHERE version = $2 AND description = $3",
        )
        .bind(new)
        .bind(old)
        .bind(description)
        .execute(pool)
        .await?;
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The cause is the source, not in the message, so a chain prints it
    /// once.
    #[error("cannot open the database")]
    Connect(#[source] sqlx::Error),
    /// What was tried, named: `postgres://host:port/db`, never the
    /// password.
    #[error("cannot connect to PostgreSQL at {at}")]
    PgConnect {
        at: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot create {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// A pool over one of the two supported databases. Cheap to clone.
#[derive(Debug, Clone)]
pub enum Db {
    Sqlite {
        pool: SqlitePool,
        /// The public reads' connections ([`Kept`]).
        kept: Arc<Kept<sqlx::Sqlite>>,
        /// The public reads on the calling thread, for a database in a
        /// file ([`Inline`]); they go to `kept` when it cannot take them.
        inline: Option<Arc<Inline>>,
    },
    Postgres(Arc<PgPools>),
}

/// SQLite's connections, each a thread of its own.
const SQLITE_CONNECTIONS: u32 = 8;

/// The pooled PostgreSQL connections one replica may open in all, split
/// evenly between the runtimes that query (`Db::connect`'s `runtimes`), at
/// least 2 each; each runtime also keeps one for generation reads
/// (`index::GenerationConnection`). One pool of 16 was shared before.
const PG_CONNECTIONS: u32 = 32;

/// The same for the planned-once pools ([`PgPools::planned`]), which only
/// the public reads use: as many, since those reads are most of the
/// traffic (with half as many, version records ran at nine tenths the
/// rate).
const PG_PLANNED_CONNECTIONS: u32 = 32;

/// What a planned-once connection runs first. PostgreSQL's default
/// (`auto`) plans a prepared statement anew on every run while a plan for
/// its values looks cheaper than the generic one, as it kept doing for a
/// search's `tsquery`, an index entry and the id lists: on a
/// 2,000,000-version catalog that planning cost PostgreSQL about as much
/// as running the statements (`deploy/bench/RESULTS.md`, Decisions). A
/// statement, not a startup `options` parameter, which PgBouncer refuses
/// unless told to ignore it.
const PLANNED_ONCE: &str = "SET plan_cache_mode = force_generic_plan";

/// Connections of one pool that the public reads keep checked out between
/// them, so a read costs its statement's round trip alone. Given back,
/// sqlx's pool pings a connection before it is idle again (the task
/// `PoolConnection`'s drop spawns): a second round trip to PostgreSQL, a
/// second hand-off to a SQLite connection's thread, for every read. A read
/// that fails, or is dropped unfinished, gives its connection back to the
/// pool as before, whose ping then finds out whether it is still usable.
///
/// Reads take turns in arrival order (a fair semaphore, one permit per
/// connection kept): a read that found a kept connection free never
/// overtakes one already waiting.
#[derive(Debug)]
pub struct Kept<DB: sqlx::Database> {
    /// Each with when it was taken from the pool.
    connections: std::sync::Mutex<Vec<(std::time::Instant, sqlx::pool::PoolConnection<DB>)>>,
    turns: tokio::sync::Semaphore,
}

/// How long a connection is kept before the pool sees it again: its idle
/// and lifetime limits then apply as they would.
const KEPT_FOR: Duration = Duration::from_secs(60);

impl<DB: sqlx::Database> Kept<DB> {
    /// At most `most` connections, in use or kept.
    pub(crate) fn new(most: usize) -> Self {
        Self {
            connections: std::sync::Mutex::new(Vec::new()),
            turns: tokio::sync::Semaphore::new(most),
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, Vec<(std::time::Instant, sqlx::pool::PoolConnection<DB>)>> {
        self.connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A kept connection, or one from `pool`, once it is this read's turn:
    /// within the pool's acquire timeout, as `pool.acquire()` would.
    pub(crate) async fn take<'a>(
        &'a self,
        pool: &sqlx::Pool<DB>,
    ) -> sqlx::Result<KeptConnection<'a, DB>> {
        // One deadline for the turn and, when none is kept, the pool's
        // connection.
        let deadline = tokio::time::Instant::now() + pool.options().get_acquire_timeout();
        let turn = tokio::time::timeout_at(deadline, self.turns.acquire())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let kept = self.lock().pop();
        let (since, connection) = match kept {
            Some(kept) => kept,
            None => (
                std::time::Instant::now(),
                tokio::time::timeout_at(deadline, pool.acquire())
                    .await
                    .map_err(|_| sqlx::Error::PoolTimedOut)??,
            ),
        };
        Ok(KeptConnection {
            since,
            connection,
            _turn: turn,
        })
    }

    /// Keeps `connection` for the next read, unless it has been kept long
    /// enough or the pool is closing: then it goes back to the pool.
    pub(crate) fn keep(&self, connection: KeptConnection<'_, DB>) {
        let KeptConnection {
            since,
            connection,
            _turn,
        } = connection;
        if since.elapsed() < KEPT_FOR && !self.turns.is_closed() {
            // Before the turn is passed on, so the next read finds it.
            self.lock().push((since, connection));
        }
    }

    /// How many are kept now.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Gives every kept connection back to its pool, and every one in use
    /// when its read is done: before the pool closes, which waits for all
    /// of them.
    pub(crate) fn release(&self) {
        self.turns.close();
        self.give_back();
    }

    /// Gives the connections kept now back to their pool.
    pub fn give_back(&self) {
        let kept = std::mem::take(&mut *self.lock());
        drop(kept);
    }
}

/// A connection taken through [`Kept`], with its read's turn.
pub(crate) struct KeptConnection<'a, DB: sqlx::Database> {
    since: std::time::Instant,
    connection: sqlx::pool::PoolConnection<DB>,
    _turn: tokio::sync::SemaphorePermit<'a>,
}

impl<DB: sqlx::Database> std::ops::Deref for KeptConnection<'_, DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &Self::Target {
        &self.connection
    }
}

impl<DB: sqlx::Database> std::ops::DerefMut for KeptConnection<'_, DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.connection
    }
}

/// Database connections, open and idle, and the most the pools may open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub open: u64,
    pub idle: u64,
    pub max: u64,
}

/// PostgreSQL pools, one per tokio runtime that queries, each opening its
/// connections on its own runtime (see [`per_runtime`] for why).
#[derive(Debug)]
pub struct PgPools {
    options: PgPoolOptions,
    connect: PgConnectOptions,
    pools: PerRuntime<PgPool>,
    planned_options: PgPoolOptions,
    planned: PerRuntime<(PgPool, Kept<sqlx::Postgres>)>,
}

impl PgPools {
    /// The pool of the runtime this is called on, made on its first use;
    /// its connections open as queries need them.
    pub fn current(&self) -> &PgPool {
        self.pools
            .get_or_init(|| self.options.clone().connect_lazy_with(self.connect.clone()))
    }

    /// The runtime's pool whose connections plan each prepared statement
    /// once, on its first run ([`PLANNED_ONCE`]), for the public reads
    /// (`with_pool!`'s `planned`): lookups by key, id lists and full-text
    /// matches, whose best plan is the same whatever their values. Every
    /// other statement keeps PostgreSQL's choice, since a generic plan can
    /// be far worse for skewed values (one account's rows of a large
    /// table, say).
    pub fn planned(&self) -> &PgPool {
        &self.planned_kept().0
    }

    /// The connections the public reads keep from this runtime's
    /// [`Self::planned`] pool.
    pub fn kept(&self) -> &Kept<sqlx::Postgres> {
        &self.planned_kept().1
    }

    /// [`Self::planned`] with the connections the reads keep from it
    /// ([`Kept`]): all of them may be, as nothing else uses it.
    pub(crate) fn planned_kept(&self) -> &(PgPool, Kept<sqlx::Postgres>) {
        self.planned.get_or_init(|| {
            let options = self.planned_options.clone();
            let most = options.get_max_connections() as usize;
            let pool = options
                .after_connect(|connection, _| {
                    Box::pin(async move {
                        sqlx::Executor::execute(connection, PLANNED_ONCE)
                            .await
                            .map(drop)
                    })
                })
                .connect_lazy_with(self.connect.clone());
            (pool, Kept::new(most))
        })
    }

    fn all(&self) -> impl Iterator<Item = &PgPool> {
        self.pools
            .all()
            .chain(self.planned.all().map(|(pool, _)| pool))
    }
}

impl Db {
    /// Opens (creating a SQLite file and its folder if needed) and migrates.
    /// A request waits at most `timeout` for a connection (then the error is
    /// `PoolTimedOut`, answered 503), so an unreachable database fails
    /// requests quickly instead of holding them. `runtimes` is how many
    /// tokio runtimes will query (a server's workers, its main thread and
    /// its publish queue): PostgreSQL's connections are split between them.
    pub async fn connect(
        url: &DatabaseUrl,
        timeout: Duration,
        runtimes: usize,
    ) -> Result<Self, DbError> {
        let db = match url {
            DatabaseUrl::SqlitePath(path) => {
                Self::open_sqlite(SqliteConnectOptions::new().filename(path), timeout).await?
            }
            DatabaseUrl::Sqlite(url) => {
                Self::open_sqlite(
                    SqliteConnectOptions::from_str(url).map_err(DbError::Connect)?,
                    timeout,
                )
                .await?
            }
            DatabaseUrl::Postgres(url) => Self::open_postgres(url, timeout, runtimes).await?,
        };
        db.migrate().await?;
        Ok(db)
    }

    async fn open_sqlite(
        options: SqliteConnectOptions,
        timeout: Duration,
    ) -> Result<Self, DbError> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL makes NORMAL durable against application crashes; only an
            // OS crash can lose the last transactions.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // Reads through a memory map of the file: no copy into each
            // connection's own page cache, no read syscall per page. A
            // large catalog's random reads were mostly that copying; the
            // mapped pages are the kernel's file cache, shared by every
            // connection and reclaimable (server/README.md, "Memory").
            .pragma("mmap_size", SQLITE_MMAP_BYTES.to_string());
        if let Some(parent) = options.get_filename().parent()
            && !parent.as_os_str().is_empty()
        {
            crate::files::create_private_dir(parent).map_err(|source| DbError::CreateDir {
                path: parent.display().to_string(),
                source,
            })?;
        }
        // The file holds password hashes and sessions: 0600 from its first
        // byte (SQLite gives its -wal and -shm files the same mode).
        let file = options.get_filename().to_string_lossy();
        let in_a_file = file != ":memory:" && !file.starts_with("file:");
        // Read-only connections of its own need the file's name.
        let inline_path = in_a_file.then(|| options.get_filename().to_owned());
        if in_a_file {
            crate::files::touch_private_file(options.get_filename()).map_err(|source| {
                DbError::CreateDir {
                    path: options.get_filename().display().to_string(),
                    source,
                }
            })?;
        }
        let pool = SqlitePoolOptions::new()
            // A SQLite connection is a file handle: nothing to test.
            .test_before_acquire(false)
            .max_connections(SQLITE_CONNECTIONS)
            .acquire_timeout(timeout)
            .connect_with(options)
            .await
            .map_err(DbError::Connect)?;
        Ok(Db::Sqlite {
            pool,
            // At most half the pool, so writes and the other reads always
            // find connections.
            kept: Arc::new(Kept::new(SQLITE_CONNECTIONS as usize / 2)),
            inline: inline_path.map(|path| Arc::new(Inline::new(path, SQLITE_MMAP_BYTES))),
        })
    }

    async fn open_postgres(url: &str, timeout: Duration, runtimes: usize) -> Result<Self, DbError> {
        let connect = PgConnectOptions::from_str(url).map_err(DbError::Connect)?;
        let per_runtime = |connections: u32| {
            u32::try_from(runtimes.max(1))
                .map_or(0, |runtimes| connections / runtimes)
                .max(2)
        };
        let options = PgPoolOptions::new()
            // Not a ping before every query (a round trip each): a broken
            // connection fails its query, which answers 503, and the pool
            // drops it and connects anew.
            .test_before_acquire(false)
            .acquire_timeout(timeout);
        let pools = PgPools {
            planned_options: options
                .clone()
                .max_connections(per_runtime(PG_PLANNED_CONNECTIONS)),
            options: options.max_connections(per_runtime(PG_CONNECTIONS)),
            connect,
            pools: PerRuntime::new(),
            planned: PerRuntime::new(),
        };
        // One connection now, so a wrong URL fails at start-up, and with
        // its own cause (refused, unknown host, authentication): a pool
        // would only say it timed out.
        let at = format!(
            "{}:{}/{}",
            pools.connect.get_host(),
            pools.connect.get_port(),
            pools.connect.get_database().unwrap_or("postgres")
        );
        let pg_error = |source| DbError::PgConnect {
            at: at.clone(),
            source,
        };
        let first = tokio::time::timeout(timeout, pools.connect.connect())
            .await
            .map_err(|_| pg_error(sqlx::Error::PoolTimedOut))?
            .map_err(pg_error)?;
        drop(first);
        pools.current().acquire().await.map_err(pg_error)?;
        Ok(Db::Postgres(Arc::new(pools)))
    }

    /// Applies the pending migrations of this backend's dialect.
    pub async fn migrate(&self) -> Result<(), DbError> {
        match self {
            Db::Sqlite { pool, .. } => {
                renumber_sqlite_migrations(pool)
                    .await
                    .map_err(DbError::Connect)?;
                sqlx::migrate!("migrations/sqlite").run(pool).await?;
            }
            Db::Postgres(pools) => {
                sqlx::migrate!("migrations/postgres")
                    .run(pools.current())
                    .await?;
            }
        }
        Ok(())
    }

    /// Runs a public read on SQLite's calling thread ([`Inline`]): `None`
    /// on PostgreSQL, for a database not in a file, or when the read must
    /// go through the pool after all.
    pub(crate) fn inline<T>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, sqlx::Error>> {
        match self {
            Db::Sqlite {
                inline: Some(inline),
                ..
            } => inline.read(read),
            _ => None,
        }
    }

    /// For readiness: one round trip.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => sqlx::query("SELECT 1").execute(pool).await.map(drop))
    }

    /// The connections the pools hold now, summed over PostgreSQL's
    /// per-runtime pools: for `/metrics`.
    pub fn pool_stats(&self) -> PoolStats {
        // A kept connection waits for the next read: idle, though the pool
        // counts it in use.
        fn of<DB: sqlx::Database>(pool: &sqlx::Pool<DB>, kept: usize) -> PoolStats {
            PoolStats {
                open: u64::from(pool.size()),
                idle: (pool.num_idle() + kept) as u64,
                max: u64::from(pool.options().get_max_connections()),
            }
        }
        match self {
            Db::Sqlite { pool, kept, .. } => of(pool, kept.len()),
            Db::Postgres(pools) => pools
                .pools
                .all()
                .map(|pool| of(pool, 0))
                .chain(pools.planned.all().map(|(pool, kept)| of(pool, kept.len())))
                .fold(PoolStats::default(), |sum, one| PoolStats {
                    open: sum.open + one.open,
                    idle: sum.idle + one.idle,
                    max: sum.max + one.max,
                }),
        }
    }

    /// `"sqlite"` or `"postgres"`, for logs.
    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite { .. } => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Refreshes the query planners' statistics: PostgreSQL's `ANALYZE`,
    /// SQLite's `PRAGMA optimize`. For bulk loads (a restore, a seeded
    /// catalog) that outrun autovacuum: planned from the statistics of a
    /// table a hundredth its size, a batch publish's existence checks scan
    /// `versions` whole. On SQLite it also merges the search index's
    /// segments into one, as FTS5's `optimize` does: a bulk load leaves
    /// many, and every search reads each (at 100,000 packages, searches ran
    /// at two thirds the rate before the merge).
    pub async fn refresh_statistics(&self) -> sqlx::Result<()> {
        match self {
            Db::Sqlite { pool, .. } => {
                sqlx::query("INSERT INTO packages_fts (packages_fts) VALUES ('optimize')")
                    .execute(pool)
                    .await?;
                sqlx::query("PRAGMA optimize").execute(pool).await.map(drop)
            }
            Db::Postgres(pools) => sqlx::query("ANALYZE")
                .execute(pools.current())
                .await
                .map(drop),
        }
    }

    pub async fn close(&self) {
        match self {
            Db::Sqlite { pool, kept, inline } => {
                if let Some(inline) = inline {
                    inline.close();
                }
                kept.release();
                pool.close().await;
            }
            Db::Postgres(pools) => {
                for (_, kept) in pools.planned.all() {
                    kept.release();
                }
                for pool in pools.all() {
                    pool.close().await;
                }
            }
        }
    }
}

/// A transaction that will write: for SQLite, begun with `BEGIN IMMEDIATE`
/// once this process's earlier writers are done. SQLite has one writer at a
/// time; left to itself, a writer that finds the lock taken sleeps in its
/// busy handler (1, 2, 5, 10 ms...) even when the holder is done in a tenth
/// of that, so a burst of publishes would spend its time asleep. Queued on
/// an async lock instead, the next writer starts the moment the last one
/// commits. `BEGIN IMMEDIATE` itself takes the write lock up front (a
/// deferred transaction that later tries to write fails with "database is
/// locked") and still waits under the busy timeout for writers outside
/// this queue (other processes, single-statement writes).
pub(crate) trait BeginWrite {
    type Database: sqlx::Database;
    async fn begin_write(&self) -> sqlx::Result<WriteTx<Self::Database>>;
}

/// A write transaction, and for SQLite this process's turn to write, held
/// until it commits or is dropped (rolled back). Derefs to the connection,
/// like sqlx's `Transaction`: `&mut *tx` is an executor.
pub(crate) struct WriteTx<DB: sqlx::Database> {
    tx: sqlx::Transaction<'static, DB>,
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
    /// Whether this transaction holds the log's append lock (PostgreSQL).
    pub(crate) log_locked: bool,
}

impl<DB: sqlx::Database> WriteTx<DB> {
    pub(crate) async fn commit(self) -> sqlx::Result<()> {
        self.tx.commit().await?;
        note_local_write();
        Ok(())
    }
}

/// When this process last committed a write, as nanoseconds since
/// [`WRITES_SINCE`]: reads of the registry generation that started before
/// it are not trusted for this process's later requests
/// (`service::resolve::GenerationReads`).
static LAST_WRITE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static WRITES_SINCE: std::sync::LazyLock<std::time::Instant> =
    std::sync::LazyLock::new(std::time::Instant::now);

/// Records that a write just committed (every `WriteTx` does; a
/// single-statement write that changes what reads show calls it).
pub fn note_local_write() {
    let nanos = u64::try_from(WRITES_SINCE.elapsed().as_nanos()).unwrap_or(u64::MAX);
    LAST_WRITE.fetch_max(nanos, std::sync::atomic::Ordering::AcqRel);
}

/// When this process last committed a write (its start, if none yet).
pub fn last_local_write() -> std::time::Instant {
    *WRITES_SINCE
        + std::time::Duration::from_nanos(LAST_WRITE.load(std::sync::atomic::Ordering::Acquire))
}

impl<DB: sqlx::Database> std::ops::Deref for WriteTx<DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl<DB: sqlx::Database> std::ops::DerefMut for WriteTx<DB> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

/// The write queue of a SQLite database file, shared by every pool of this
/// process on that file.
fn sqlite_write_queue(pool: &SqlitePool) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    use std::{
        collections::HashMap,
        path::PathBuf,
        sync::{Arc, LazyLock, Mutex},
    };
    static QUEUES: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Mutex::default);
    let file = pool.connect_options().get_filename().to_owned();
    Arc::clone(
        QUEUES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(file)
            .or_default(),
    )
}

impl BeginWrite for SqlitePool {
    type Database = sqlx::Sqlite;
    async fn begin_write(&self) -> sqlx::Result<WriteTx<sqlx::Sqlite>> {
        let turn = sqlite_write_queue(self).lock_owned().await;
        Ok(WriteTx {
            tx: self.begin_with("BEGIN IMMEDIATE").await?,
            _turn: Some(turn),
            log_locked: false,
        })
    }
}

impl BeginWrite for PgPool {
    type Database = sqlx::Postgres;
    async fn begin_write(&self) -> sqlx::Result<WriteTx<sqlx::Postgres>> {
        Ok(WriteTx {
            tx: self.begin().await?,
            _turn: None,
            log_locked: false,
        })
    }
}

/// Whether `err` is a UNIQUE or PRIMARY KEY violation, in either dialect.
pub fn is_unique_violation(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .is_some_and(|e| e.is_unique_violation())
}

/// Whether a database error says the database is out of reach rather than
/// that a query is wrong.
pub fn is_unreachable(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use agentlang_core::{Kind, PackageName};

    use super::{DatabaseUrl, Db};

    async fn sqlite() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::SqlitePath(dir.path().join("kept.db"));
        let db = Db::connect(&url, Duration::from_millis(300), 1)
            .await
            .unwrap();
        (dir, db)
    }

    /// A public read keeps its connection checked out for the next one,
    /// rather than giving it back to the pool (which pings it first): after
    /// three reads one connection is kept, and the pool has opened no more
    /// than before them.
    #[tokio::test]
    async fn a_public_read_keeps_its_connection_for_the_next() {
        let (_dir, db) = sqlite().await;
        let Db::Sqlite { pool, kept, .. } = &db else {
            unreachable!("a SQLite database")
        };
        without_inline_reads(&db);
        let name = PackageName::new("weather").unwrap();
        db.find_package(Kind::Tool, &name).await.unwrap();
        let open = pool.size();
        for _ in 0..3 {
            assert!(db.find_package(Kind::Tool, &name).await.unwrap().is_none());
        }
        assert_eq!(kept.len(), 1);
        assert_eq!(pool.size(), open);
        // A connection given back (the migrations') reaches the idle list
        // through a task of sqlx's own, so under load it may still be on
        // its way: CI once saw 0 here.
        for _ in 0..200 {
            if pool.num_idle() == open as usize - 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(pool.num_idle(), open as usize - 1);
        closes(&db).await;
    }

    /// The public reads go to the kept connections, as they do when the
    /// calling thread's connection cannot take them.
    fn without_inline_reads(db: &Db) {
        if let Db::Sqlite {
            inline: Some(inline),
            ..
        } = db
        {
            inline.close();
        }
    }

    /// On SQLite a public read runs on the calling thread, on a read-only
    /// connection of its own: no pool connection is taken or kept, and the
    /// reads of one runtime share one connection.
    #[tokio::test]
    async fn a_public_read_runs_on_the_calling_thread() {
        let (_dir, db) = sqlite().await;
        let Db::Sqlite {
            pool,
            kept,
            inline: Some(inline),
        } = &db
        else {
            unreachable!("a SQLite database in a file")
        };
        let idle = pool.num_idle();
        let name = PackageName::new("weather").unwrap();
        for _ in 0..3 {
            assert!(db.find_package(Kind::Tool, &name).await.unwrap().is_none());
        }
        assert!(db.packages_by_ids(&[1, 2, 3]).await.unwrap().is_empty());
        assert_eq!(inline.open_readers(), 1);
        assert_eq!(kept.len(), 0);
        assert_eq!(pool.num_idle(), idle);
        // A list longer than the inline reads take goes to the pool.
        let ids: Vec<i64> = (0..=i64::try_from(crate::inline::INLINE_IDS).unwrap()).collect();
        assert!(db.packages_by_ids(&ids).await.unwrap().is_empty());
        assert_eq!(kept.len(), 1);
        closes(&db).await;
        assert_eq!(inline.open_readers(), 0);
    }

    /// A read that runs past its budget is interrupted and left to the
    /// pool; the connection serves the next read.
    #[tokio::test]
    async fn a_read_past_its_budget_gives_way_to_the_pool() {
        let (_dir, db) = sqlite().await;
        let long =
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000000)
                    SELECT count(*) FROM n";
        let counted = db.inline(|connection| {
            crate::inline::query(connection, long, &[], |row| row.get::<_, i64>(0))
        });
        assert!(counted.is_none(), "{counted:?}");
        let short = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100)
                     SELECT count(*) FROM n";
        let counted = db.inline(|connection| {
            crate::inline::query(connection, short, &[], |row| row.get::<_, i64>(0))
        });
        assert_eq!(counted.unwrap().unwrap(), vec![100]);
        closes(&db).await;
    }

    /// A read's snapshot ends whatever the read returns: an open read
    /// transaction would hold back every WAL checkpoint. A read that left
    /// one open all the same costs its runtime the connection; the next
    /// read opens another.
    #[tokio::test]
    async fn no_read_on_the_calling_thread_leaves_a_transaction_open() {
        let (_dir, db) = sqlite().await;
        let Db::Sqlite {
            inline: Some(inline),
            ..
        } = &db
        else {
            unreachable!("a SQLite database in a file")
        };
        let count = |connection: &rusqlite::Connection| {
            crate::inline::snapshot(connection, || {
                crate::inline::query(connection, "SELECT count(*) FROM packages", &[], |row| {
                    row.get::<_, i64>(0)
                })
            })
        };
        let failed = db.inline(|connection| {
            crate::inline::snapshot(connection, || {
                crate::inline::query(connection, "SELECT nothing FROM packages", &[], |row| {
                    row.get::<_, i64>(0)
                })
            })
        });
        assert!(matches!(failed, Some(Err(_))), "{failed:?}");
        // Rolled back, so the connection was kept.
        assert_eq!(inline.open_readers(), 1);
        assert_eq!(db.inline(count).unwrap().unwrap(), vec![0]);
        let left_open =
            db.inline(|connection| crate::inline::query(connection, "BEGIN", &[], |_| Ok(())));
        assert!(left_open.is_none(), "{left_open:?}");
        assert_eq!(inline.open_readers(), 0);
        assert_eq!(db.inline(count).unwrap().unwrap(), vec![0]);
        assert_eq!(inline.open_readers(), 1);
        closes(&db).await;
    }

    /// Closing gives the kept connections back first: the pool's close
    /// waits for every connection, so it would never end otherwise.
    async fn closes(db: &Db) {
        tokio::time::timeout(Duration::from_secs(5), db.close())
            .await
            .expect("the pool closes with connections kept");
    }

    /// A read waits its turn for at most the pool's acquire timeout, then
    /// fails as a pool timeout (answered 503), not forever.
    #[tokio::test]
    async fn a_read_waits_for_a_kept_connection_no_longer_than_the_pool_timeout() {
        let (_dir, db) = sqlite().await;
        let Db::Sqlite { pool, kept, .. } = &db else {
            unreachable!("a SQLite database")
        };
        without_inline_reads(&db);
        let mut held = Vec::new();
        for _ in 0..super::SQLITE_CONNECTIONS / 2 {
            held.push(kept.take(pool).await.unwrap());
        }
        let name = PackageName::new("weather").unwrap();
        let waited = std::time::Instant::now();
        let error = db.find_package(Kind::Tool, &name).await.unwrap_err();
        assert!(matches!(error, sqlx::Error::PoolTimedOut), "{error}");
        assert!(waited.elapsed() >= Duration::from_millis(300));
        // A turn given back is the waiting read's.
        drop(held.pop());
        assert!(db.find_package(Kind::Tool, &name).await.unwrap().is_none());
        drop(held);
        closes(&db).await;
    }
}
