//! Integration tests: the registry over real HTTP, on every backend,
//! started with the harness's `TestApp` builder (`agentlang-registry-testing`).

use agentlang_registry_testing as support;

mod accounts;
mod admission;
mod advisories;
mod advisory_pages;
mod agent_cards;
mod agent_rules;
mod binary;
mod bounds;
mod caches;
mod catalog;
mod clowl;
mod conformance;
mod cors;
mod errors;
mod grants;
mod index;
mod interfaces;
mod keys;
mod mcp;
mod models;
mod moltspeak;
mod moltspeak_interop;
mod moltspeak_operations;
mod moltspeak_sessions;
mod operations;
mod owners;
mod packages;
mod protocols;
mod publish;
mod publish_lock;
mod publishing_policy;
mod rate_limits;
mod replay;
mod resolve;
mod schema_rules;
mod search;
mod skills;
mod statuses;
mod storage;
mod tlog;
mod tokens;
// Trusted publishing (OpenID Connect).
mod trust;
mod trusted_publishing;
// Second factor (TOTP).
mod two_factor;
// Staged releases.
mod staging;
// Provenance.
mod provenance;
mod witness;
