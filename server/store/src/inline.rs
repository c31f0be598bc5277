//! SQLite's public reads on the calling thread.
//!
//! sqlx runs each SQLite connection on a thread of its own: a statement is
//! a message to that thread and an answer back, two thread switches for a
//! read that itself takes a few microseconds. Over a catalog too large for
//! the answer caches (issue 50: 100,000 tools), those switches were most
//! of a first read's cost. Here each runtime (an actix worker is one
//! thread) opens a read-only connection of its own on the same file and
//! runs the public point reads on it, with no hand-off.
//!
//! What keeps it safe on an async worker:
//! - **A budget.** A read may run for at most [`BUDGET`]; past it SQLite
//!   interrupts it and the caller reads through sqlx's pool instead, off
//!   this thread. A package with thousands of versions costs its first
//!   millisecond here, never more.
//! - **No waiting.** The connection never waits on a lock (`busy_timeout`
//!   0): in WAL mode a reader is almost never refused, and when it is, the
//!   read goes to the pool, whose connections wait off this thread.
//! - **No open transaction between reads.** Each statement is reset when
//!   its rows are dropped, so an idle connection holds back no checkpoint.
//! - **One reader per runtime.** A runtime that finds its connection in
//!   use (runtimes past `PerRuntime`'s slots share one) reads through the
//!   pool.

use std::{
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use rusqlite::{Connection, OpenFlags, ToSql};

use crate::per_runtime::PerRuntime;

/// SQLite checks the budget every this many virtual-machine steps (each
/// 25-200 ns here, as the pages it reads are in memory or not).
const STEPS_PER_CHECK: i32 = 1_000;

/// How long a read may hold its thread. Time, not steps: a step's cost
/// varies eightfold. A version record at 100,000 tools takes about 1,050
/// steps, a package record or index entry of 20 versions 850-1,800, each
/// well under a tenth of this.
const BUDGET: Duration = Duration::from_millis(1);

/// Prepared statements kept per connection: the public reads' texts,
/// counting each length of an `IN` list.
const STATEMENTS: usize = 64;

/// The longest `IN` list read here: the public reads' lists are a page of
/// search results or one package; a resolve's levels of hundreds of names
/// go through the pool.
pub(crate) const INLINE_IDS: usize = 64;

/// A row type read on the calling thread from its columns in the order of
/// [`InlineRow::columns`], starting at column `at`: by position, as a
/// lookup by name compares every column's name (a twentieth of a version
/// record's cost). Debug builds (every test) check each statement's
/// column names against `columns`.
pub(crate) trait InlineRow: Sized {
    /// How many columns it reads.
    const WIDTH: usize;
    /// Their names, as the statements spell them.
    fn columns() -> Vec<&'static str>;
    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self>;
}

/// Read-only connections to a SQLite file, one per runtime.
pub struct Inline {
    path: PathBuf,
    mmap_bytes: u64,
    readers: PerRuntime<Mutex<Slot>>,
    closed: AtomicBool,
}

enum Slot {
    Unopened,
    Open(Box<Reader>),
    /// Opening failed; this runtime reads through the pool.
    Failed,
}

struct Reader {
    connection: Connection,
    /// When the current read must end, in nanoseconds after `opened`.
    deadline: Arc<AtomicU64>,
    opened: Instant,
}

impl Inline {
    pub(crate) fn new(path: PathBuf, mmap_bytes: u64) -> Self {
        Self {
            path,
            mmap_bytes,
            readers: PerRuntime::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// Runs `read` on this runtime's connection. `None` when it cannot run
    /// here (the connection is in use or could not be opened, the read ran
    /// past its budget, the database was busy): the caller then reads
    /// through the pool.
    pub(crate) fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, sqlx::Error>> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let slot = self.readers.get_or_init(|| Mutex::new(Slot::Unopened));
        let mut slot = slot.try_lock().ok()?;
        if matches!(*slot, Slot::Unopened) {
            *slot = match self.open() {
                Ok(reader) => Slot::Open(Box::new(reader)),
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        path = %self.path.display(),
                        "cannot open a read-only SQLite connection; public reads go through the pool"
                    );
                    Slot::Failed
                }
            };
        }
        let Slot::Open(reader) = &*slot else {
            return None;
        };
        reader.deadline.store(
            nanos_since(reader.opened) + nanos(BUDGET),
            Ordering::Relaxed,
        );
        let result = read(&reader.connection);
        if !reader.connection.is_autocommit() {
            // A read left a transaction open (its end failed): the
            // connection would hold back every WAL checkpoint. Closed;
            // the next read opens another.
            tracing::warn!(
                "an inline SQLite read left a transaction open; its connection is closed"
            );
            *slot = Slot::Unopened;
            return None;
        }
        match result {
            Ok(value) => Some(Ok(value)),
            Err(e) if gives_way(&e) => None,
            Err(e) => Some(Err(into_sqlx(e))),
        }
    }

    fn open(&self) -> rusqlite::Result<Reader> {
        let connection = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.pragma_update(
            None,
            "mmap_size",
            i64::try_from(self.mmap_bytes).unwrap_or(i64::MAX),
        )?;
        connection.busy_timeout(std::time::Duration::ZERO)?;
        connection.set_prepared_statement_cache_capacity(STATEMENTS);
        let opened = Instant::now();
        let deadline = Arc::new(AtomicU64::new(0));
        let ends = Arc::clone(&deadline);
        connection.progress_handler(
            STEPS_PER_CHECK,
            // `true` interrupts: the budget is spent.
            Some(move || nanos_since(opened) > ends.load(Ordering::Relaxed)),
        )?;
        Ok(Reader {
            connection,
            deadline,
            opened,
        })
    }

    /// Closes every connection; later reads go through the pool.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for slot in self.readers.all() {
            let mut slot = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *slot = Slot::Failed;
        }
    }

    /// How many connections are open, for the tests.
    #[cfg(test)]
    pub(crate) fn open_readers(&self) -> usize {
        self.readers
            .all()
            .filter(|slot| matches!(*slot.lock().unwrap(), Slot::Open(_)))
            .count()
    }
}

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inline")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn nanos_since(start: Instant) -> u64 {
    nanos(start.elapsed())
}

/// Whether the read should be made through the pool instead.
fn gives_way(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked, OperationInterrupted};
    matches!(
        e.sqlite_error_code(),
        Some(OperationInterrupted | DatabaseBusy | DatabaseLocked)
    )
}

fn into_sqlx(e: rusqlite::Error) -> sqlx::Error {
    match e {
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..) => sqlx::Error::Decode(Box::new(e)),
        rusqlite::Error::InvalidColumnName(name) => sqlx::Error::ColumnNotFound(name),
        e => sqlx::Error::AnyDriverError(Box::new(e)),
    }
}

/// Runs `read`'s statements in one read transaction, so they see one
/// state of the database, and ends it whatever `read` returns: an open
/// transaction would hold back the WAL's checkpoints. Not rusqlite's
/// `Transaction`: it prepares `BEGIN` and `COMMIT` anew each time, and
/// this runs on every index read; these are cached.
pub(crate) fn snapshot<T>(
    connection: &Connection,
    read: impl FnOnce() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    connection.prepare_cached("BEGIN")?.raw_execute()?;
    let result = read();
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = connection
        .prepare_cached(end)
        .and_then(|mut statement| statement.raw_execute());
    let value = result?;
    ended?;
    Ok(value)
}

/// Runs `sql` with `params` bound to `$1`, `$2`, ... (or, in a text without
/// them, to its `?`s in order), as sqlx binds them, and maps each row.
pub(crate) fn query<T>(
    connection: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    mut map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = connection.prepare_cached(sql)?;
    for (i, value) in params.iter().enumerate() {
        let index = statement
            .parameter_index(&format!("${}", i + 1))?
            .unwrap_or(i + 1);
        statement.raw_bind_parameter(index, value)?;
    }
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row)?);
    }
    Ok(out)
}

/// `sql` (ending `IN (`) with one `?` per id, as `select_in!` builds it for
/// sqlx, and each row read as `T`.
pub(crate) fn select_in<T: InlineRow, P: ToSql>(
    connection: &Connection,
    sql: &str,
    ids: &[P],
) -> rusqlite::Result<Vec<T>> {
    let mut text = String::with_capacity(sql.len() + ids.len() * 3 + 1);
    text.push_str(sql);
    for i in 0..ids.len() {
        text.push_str(if i == 0 { "?" } else { ", ?" });
    }
    text.push(')');
    let params: Vec<&dyn ToSql> = ids.iter().map(|id| id as &dyn ToSql).collect();
    query_rows(connection, &text, &params)
}

/// [`query`] with each row read as `T`.
pub(crate) fn query_rows<T: InlineRow>(
    connection: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
) -> rusqlite::Result<Vec<T>> {
    query(connection, sql, params, |row| {
        debug_assert_eq!(
            row.as_ref().column_names(),
            T::columns(),
            "the columns of {sql}"
        );
        T::from_inline(row, 0)
    })
}
