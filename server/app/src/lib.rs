//! The AgentLang registry's rules: who may do what, and what publishing,
//! resolving, searching, logging and answering agents mean. Every rule is
//! one function here, called alike by the JSON API, the web catalog and the
//! agent-protocol endpoints.
//!
//! This crate knows nothing of HTTP: a rule takes a [`Registry`] and plain
//! values (the caller's [`tokens::Authenticated`] identity, its
//! [`rate_limits::ClientAddr`]) and answers a value or a [`ServiceError`],
//! which the HTTP layer maps to a status and a problem. What is stored, and
//! how, is `agentlang-registry-store`'s; no SQL is written here.

pub mod a2a;
pub mod accounts;
pub mod admission;
pub mod advisories;
pub mod agent_tasks;
pub mod audit;
pub mod cache;
pub mod catalog;
pub mod clowl;
pub mod credentials;
pub mod downloads;
pub mod error;
pub mod grants;
pub mod health;
pub mod identity;
pub mod interfaces;
pub mod kept_keys;
pub mod keys;
pub mod mcp;
pub mod metrics;
pub mod models;
pub mod moltspeak;
pub mod oidc;
pub mod operations;
pub mod owners;
pub mod packages;
pub mod passwords;
pub mod protocols;
pub mod provenance;
pub mod publish;
pub mod publish_queue;
pub mod publishing_policy;
pub mod quality;
pub mod rate_limits;
mod registry;
pub mod resolve;
pub mod search;
pub mod secrets;
pub mod sessions;
pub mod settings;
pub mod skills;
pub mod solvers;
mod startup;
pub mod status_changes;
pub mod statuses;
pub mod stored_answers;
pub mod sweep;
pub mod tlog;
pub mod tokens;
pub mod trust;
// Second factor (TOTP).
pub mod two_factor;
pub mod uploads;
// Trusted publishing (OpenID Connect).
pub mod trusted_publishing;
// Staged releases.
pub mod stage;
pub mod staging;

pub use error::{FieldError, ServiceError};
pub use registry::Registry;
pub use settings::Settings;
/// Unix seconds as stored, and RFC 3339 as shown.
pub use store::time;
