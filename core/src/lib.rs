//! The AgentLang formats in code.
//!
//! This crate does no network or database IO: callers hand it bytes or
//! readers and get typed, validated values back. The registry service and the
//! CLI are thin shells around it.

pub mod diagnostics;
pub mod lockfile;
pub mod names;
pub mod resolve;
pub mod tree;
pub mod yaml;

pub use diagnostics::{Diagnostic, Diagnostics};
pub use names::{Kind, NameError, PackageName, Version};
pub use tree::{MemberPath, SourceTree};
