//! The registry's web catalog, as pure rendering.
//!
//! The registry service fetches data, fills the view models in [`model`],
//! wraps them in a page struct from [`pages`] and calls `render()` (askama's
//! [`askama::Template`]). Static assets are compiled in ([`assets`]), so the
//! binary needs no files at run time. This crate does no IO.
//!
//! Pages are complete without JavaScript; the one script only adds copy
//! buttons. No page loads anything from another origin, and no page has
//! inline script or style, so the server can send a strict
//! `Content-Security-Policy: default-src 'self'`.

pub mod advisory;
pub mod assets;
pub mod diff;
pub mod fixtures;
pub mod highlight;
pub mod markdown;
pub mod model;
pub mod pages;
pub mod risk;
pub mod schema;

pub use askama::Template;
pub use diff::{AgentDiff, diff_agents};
pub use highlight::{escape_html, highlight_terms};
pub use markdown::{render_docs, render_guide, render_markdown};
pub use risk::{CapabilityCategory, CategoryView, RiskBadge, RiskLevel};
pub use schema::{SchemaRow, schema_rows};
