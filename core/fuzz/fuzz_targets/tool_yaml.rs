//! tool.yaml: parsing never panics, and a spec that parses survives the
//! JSON round trip the registry's storage puts it through.
#![no_main]

use agentlang_core::tool::{ToolSpec, parse_tool};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(tool) = parse_tool(data) else {
        return;
    };
    let json = serde_json::to_vec(&tool).expect("a ToolSpec serializes");
    let back: ToolSpec = serde_json::from_slice(&json).expect("stored JSON re-validates");
    assert_eq!(back, tool);
});
