//! agent.yaml bytes through the full agent parser: the bounded YAML reader,
//! the path-aware walker and the cross-field checks must never panic, and
//! every refusal must name at least one problem.
#![no_main]

use agentlang_core::agent::{parse_agent, parse_subagent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(diags) = parse_agent(data) {
        assert!(!diags.is_empty(), "a refused agent.yaml names a problem");
    }
    if let Err(diags) = parse_subagent(data) {
        assert!(!diags.is_empty(), "a refused subagent names a problem");
    }
});
