//! The registry's storage: metadata in SQLite or PostgreSQL, containers in
//! object storage, and the typed rows the two hold.
//!
//! [`Db`] is an enum over the two pools. Queries are written once, with `$1`
//! placeholders (SQLite accepts them too) and portable SQL, and run on
//! whichever pool is live through `with_pool!`, which expands the same body
//! for each backend so each is type-checked against its own driver; the few
//! places where the dialects truly differ are in [`dialect`]. The schemas in
//! `migrations/{sqlite,postgres}` agree on every table and column (a test
//! compares them); timestamps are integer Unix seconds in both.
//!
//! This crate knows nothing of HTTP and holds no rule: it answers what is
//! stored, typed (names, versions, digests and key ids are `agentlang-core`
//! newtypes read through their constructors), and writes what it is told,
//! each change in one transaction.

pub mod accounts;
pub mod advisories;
pub mod audit;
pub mod blobs;
pub mod catalog;
pub mod changes;
mod db;
mod dialect;
pub mod files;
pub mod grants;
pub mod index;
mod inline;
pub mod interfaces;
pub mod keys;
pub mod mcp;
pub mod models;
pub mod names;
pub mod owners;
pub mod packages;
mod per_runtime;
pub mod protocols;
pub mod publishing_policy;
pub mod records;
pub mod search;
pub mod secrets;
pub mod skills;
pub mod statuses;
pub mod stored_answers;
pub mod time;
pub mod tlog;
pub mod tokens;
// Second factor (TOTP).
pub mod two_factor;
// Trusted publishing (OpenID Connect).
pub mod trusted_publishing;
// Staged releases.
pub mod staging;

pub use blobs::{Blobs, S3Settings, StorageUrl};
pub(crate) use db::{BeginWrite, ID_CHUNK, WriteTx, select_in, with_pool};
pub use db::{
    DatabaseUrl, Db, DbError, Kept, PgPools, PoolStats, is_unique_violation, is_unreachable,
    last_local_write, note_local_write,
};
pub use inline::Inline;
/// What every query answers on failure.
pub use sqlx::Error;
/// A JSON column's value.
pub use sqlx::types::Json;
pub use time::now;
