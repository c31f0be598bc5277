//! The AgentLang registry service's HTTP side: an actix-web shell over the
//! rules of `agentlang-registry-app`. Routes, the web catalog, middleware,
//! problem+json errors and the OpenAPI document live here; no rule and no
//! SQL does.
//!
//! [`startup::Application::build`] turns a [`config::Config`] into a bound
//! server; `main.rs` only reads the configuration and runs it.

pub mod admission;
pub mod auth;
pub mod catalog;
pub mod conditional;
pub mod config;
pub mod cors;
pub mod deadlines;
pub mod error;
pub mod head;
pub mod metrics;
pub mod openapi;
pub mod rate_limit;
pub mod request_id;
pub mod routes;
pub mod startup;
pub mod state;
