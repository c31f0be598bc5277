//! agent.yaml bytes through the bounded YAML reader. Switch to the agent
//! parser once it lands; the limits must hold for any input either way.
#![no_main]

use agentlang_core::yaml::{YamlLimits, parse_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Tight limits make the fuzzer reach the limit paths quickly.
    let limits = YamlLimits {
        max_bytes: 64 * 1024,
        max_depth: 16,
        max_aliases: 8,
        max_nodes: 1_000,
    };
    let _ = parse_value(data, &limits);
    let _ = parse_value(data, &YamlLimits::default());
});
