//! The registry's operations, free of HTTP: the API handlers, the web
//! catalog and the agent-protocol endpoints all call these. They take the
//! shared [`AppState`](crate::state::AppState) and answer
//! [`ApiError`](crate::error::ApiError)s, whose `slug()` names the reason.

pub mod accounts;
pub mod audit;
pub mod cache;
pub mod credentials;
pub mod keys;
pub mod owners;
pub mod packages;
pub mod protocols;
pub mod publish;
pub mod publish_queue;
pub mod quality;
pub mod resolve;
pub mod search;
pub mod sessions;
pub mod solvers;
pub mod sweep;
pub mod tlog;
pub mod tokens;
pub mod trust;
