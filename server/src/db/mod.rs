//! The storage API: one set of functions over SQLite and PostgreSQL.
//!
//! [`Db`] is an enum over the two pools. Queries are written once, with `$1`
//! placeholders (SQLite accepts them too) and portable SQL, and run on
//! whichever pool is live through [`with_pool!`], which expands the same body
//! for each backend so each is type-checked against its own driver. The
//! schemas in `migrations/{sqlite,postgres}` agree on every table and column;
//! timestamps are integer Unix seconds in both.

pub mod accounts;
pub mod audit;
pub mod catalog;
pub mod index;
pub mod keys;
pub mod models;
pub mod owners;
pub mod packages;
pub mod protocols;
pub mod search;
pub mod secrets;
pub mod tlog;
pub mod tokens;

use std::{str::FromStr, time::Duration};

use sqlx::{
    PgPool, SqlitePool,
    postgres::{PgConnectOptions, PgPoolOptions},
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
};

use crate::config::DatabaseUrl;

/// Runs `$body` with `$pool` bound to the live pool, whichever backend it is.
macro_rules! with_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite($pool) => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

/// Ids per query: far below either backend's bind limit.
pub(crate) const ID_CHUNK: usize = 500;

/// `SELECT ... WHERE <column> IN (ids)`, chunked, in either dialect: one
/// query per 500 ids, whatever the number of rows it stands for.
macro_rules! select_in {
    ($db:expr, $row:ty, $sqlite:expr, $postgres:expr, $ids:expr) => {{
        let mut out: Vec<$row> = Vec::new();
        for chunk in $ids.chunks($crate::db::ID_CHUNK) {
            match $db {
                $crate::db::Db::Sqlite(pool) => {
                    let mut query = sqlx::QueryBuilder::<sqlx::Sqlite>::new($sqlite);
                    let mut ids = query.separated(", ");
                    for id in chunk {
                        ids.push_bind(id);
                    }
                    query.push(")");
                    out.extend(query.build_query_as::<$row>().fetch_all(pool).await?);
                }
                $crate::db::Db::Postgres(pool) => {
                    let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new($postgres);
                    let mut ids = query.separated(", ");
                    for id in chunk {
                        ids.push_bind(id);
                    }
                    query.push(")");
                    out.extend(query.build_query_as::<$row>().fetch_all(pool).await?);
                }
            }
        }
        Ok(out)
    }};
}

pub(crate) use select_in;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot open the database: {0}")]
    Connect(#[source] sqlx::Error),
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
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Db {
    /// Opens (creating a SQLite file and its folder if needed) and migrates.
    /// A request waits at most `timeout` for a connection (then the error is
    /// `PoolTimedOut`, answered 503), so an unreachable database fails
    /// requests quickly instead of holding them.
    pub async fn connect(url: &DatabaseUrl, timeout: Duration) -> Result<Self, DbError> {
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
            DatabaseUrl::Postgres(url) => Self::open_postgres(url, timeout).await?,
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
            .busy_timeout(Duration::from_secs(10));
        if let Some(parent) = options.get_filename().parent()
            && !parent.as_os_str().is_empty()
        {
            crate::common::files::create_private_dir(parent).map_err(|source| {
                DbError::CreateDir {
                    path: parent.display().to_string(),
                    source,
                }
            })?;
        }
        // The file holds password hashes and sessions: 0600 from its first
        // byte (SQLite gives its -wal and -shm files the same mode).
        let file = options.get_filename().to_string_lossy();
        if file != ":memory:" && !file.starts_with("file:") {
            crate::common::files::touch_private_file(options.get_filename()).map_err(|source| {
                DbError::CreateDir {
                    path: options.get_filename().display().to_string(),
                    source,
                }
            })?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(timeout)
            .connect_with(options)
            .await
            .map_err(DbError::Connect)?;
        Ok(Db::Sqlite(pool))
    }

    async fn open_postgres(url: &str, timeout: Duration) -> Result<Self, DbError> {
        let options = PgConnectOptions::from_str(url).map_err(DbError::Connect)?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(timeout)
            .connect_with(options)
            .await
            .map_err(DbError::Connect)?;
        Ok(Db::Postgres(pool))
    }

    /// Applies the pending migrations of this backend's dialect.
    pub async fn migrate(&self) -> Result<(), DbError> {
        match self {
            Db::Sqlite(pool) => sqlx::migrate!("../migrations/sqlite").run(pool).await?,
            Db::Postgres(pool) => sqlx::migrate!("../migrations/postgres").run(pool).await?,
        }
        Ok(())
    }

    /// For readiness: one round trip.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => sqlx::query("SELECT 1").execute(pool).await.map(drop))
    }

    /// `"sqlite"` or `"postgres"`, for logs.
    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await);
    }
}

/// Starts a transaction that will write. SQLite's default deferred
/// transaction fails with "database is locked" when a reader later tries to
/// write while another writer committed; `BEGIN IMMEDIATE` takes the write
/// lock up front and waits for it under the busy timeout instead.
pub(crate) trait BeginWrite {
    type Database: sqlx::Database;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, Self::Database>>;
}

impl BeginWrite for SqlitePool {
    type Database = sqlx::Sqlite;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

impl BeginWrite for PgPool {
    type Database = sqlx::Postgres;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        self.begin().await
    }
}

pub use crate::common::{normalize, now};

/// Whether `err` is a UNIQUE or PRIMARY KEY violation, in either dialect.
pub fn is_unique_violation(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .is_some_and(|e| e.is_unique_violation())
}
