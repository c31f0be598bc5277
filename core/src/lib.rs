//! The AgentLang formats in code.
//!
//! This crate does no network or database IO: callers hand it bytes or
//! readers and get typed, validated values back. The registry service and the
//! CLI are thin shells around it.

pub mod a2a;
pub mod advisories;
pub mod agent;
pub mod agentskills;
pub mod capability;
pub mod constraints;
pub mod container;
pub mod crypt;
pub mod diagnostics;
pub mod digest;
pub mod events;
pub mod grants;
pub mod handoff;
pub mod host;
pub mod interfaces;
pub mod json_schema;
pub mod keys;
pub mod lockcheck;
pub mod lockfile;
pub mod mcp;
pub mod names;
pub mod package;
pub mod prompt;
pub mod protocol;
pub mod protocols;
pub mod provenance;
pub mod quality;
pub mod resolve;
pub mod rules;
pub mod schema_compat;
pub mod signing;
pub mod skill;
#[cfg(any(feature = "sqlx", feature = "rusqlite"))]
mod sql;
pub mod tlog;
pub mod tool;
pub mod tree;
pub mod trust;
pub mod ux;
pub mod yaml;

pub use diagnostics::{Diagnostic, Diagnostics};
pub use names::{Kind, NameError, PackageName, Username, Version};
pub use tree::{MemberPath, SourceTree};
