//! The AgentLang registry service: an actix-web shell over `agentlang-core`
//! with metadata in SQLite or PostgreSQL and blobs in object storage.
//!
//! [`startup::Application::build`] turns a [`config::Config`] into a bound
//! server; `main.rs` only reads the configuration and runs it.

pub mod auth;
pub mod blobs;
pub mod catalog;
pub mod common;
pub mod config;
pub mod db;
pub mod deadlines;
pub mod error;
pub mod head;
pub mod identity;
#[cfg(test)]
mod layers;
pub mod metrics;
pub mod openapi;
pub mod rate_limit;
pub mod request_id;
pub mod routes;
pub mod service;
pub mod startup;
pub mod state;
