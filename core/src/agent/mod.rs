//! agent.yaml in code: the typed model ([`AgentSpec`]), the capability table
//! ([`Capability`], [`CapabilityCategory`], [`RiskLevel`]) and validation
//! that reports every problem at once, each with its path.
//!
//! Reading goes YAML bytes -> bounded generic value ([`crate::yaml`]) ->
//! typed model built by a path-aware walker, so unknown keys, wrong types and
//! out-of-range values all surface together instead of one per run. Unknown
//! keys are errors (with a "did you mean" when one is close), except `x-`
//! keys, which are kept as extensions.
//!
//! Required fields: a top-level agent needs `name`, `version` (strict
//! SemVer) and `description`; a subagent needs `name` and `description`
//! (everything else, tools included, is optional for both).

// An agent.yaml `a2a` protocol entry's `endpoint`: here, below the card
// module that reads it, so the two never import each other.
pub mod a2a_endpoint;
pub mod context;
pub(crate) mod model;
mod parse;
mod patterns;
mod permissions;
pub(crate) mod reader;
pub(crate) mod template;
pub mod ui;
mod validate;

pub use model::*;
pub use parse::AgentRole;
pub(crate) use parse::{
    bash_tool as read_bash_tool, http_tool as read_http_tool, labels as read_labels,
};
pub use patterns::{PatternError, check_path_pattern, check_url_pattern};
pub use reader::{MAX_DESCRIPTION_CHARS, MAX_KEY_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS};
// Re-exported so agent call sites keep one import path; the table itself is
// shared with tool.yaml and the catalog.
pub use crate::capability::{Capability, CapabilityCategory, RiskLevel, UnknownCapability};
pub use permissions::{CronSchedule, PermissionError, PermissionMode};
pub use template::{Placeholder, TemplateError, placeholders, variable_roots};

use crate::diagnostics::Diagnostics;
use crate::yaml::{YamlLimits, parse_value};

/// Reads and validates a top-level agent.yaml: every single-file rule.
pub fn parse_agent(bytes: &[u8]) -> Result<AgentSpec, Diagnostics> {
    parse_with_role(bytes, AgentRole::TopLevel)
}

/// Reads and validates a co-located subagent file.
pub fn parse_subagent(bytes: &[u8]) -> Result<AgentSpec, Diagnostics> {
    parse_with_role(bytes, AgentRole::Subagent)
}

pub fn parse_with_role(bytes: &[u8], role: AgentRole) -> Result<AgentSpec, Diagnostics> {
    let doc = parse_value(bytes, &YamlLimits::default())?;
    let mut r = reader::Reader::new();
    let spec = parse::read_agent(&mut r, &doc, role);
    let mut diags = r.finish();
    if let Some(spec) = &spec {
        validate::cross_check(spec, &mut diags);
    }
    match spec {
        Some(spec) if diags.is_empty() => Ok(spec),
        _ => Err(diags),
    }
}
