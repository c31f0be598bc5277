//! Neutral helpers below every layer: names and scopes, time,
//! secrets, private files, conditional requests.
//! They depend on nothing in this crate but each other, so `db`,
//! `service`, `routes` and `catalog` may all use them.

pub mod conditional;
pub mod files;
pub mod names;
pub mod secrets;
pub mod time;

pub use names::normalize;
pub use time::{now, rfc3339};
