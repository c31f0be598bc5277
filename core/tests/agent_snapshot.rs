//! The full diagnostics list for one document with many problems: every
//! problem is reported in one run, each with its path.

use agentlang_core::agent::parse_agent;

#[test]
fn many_problems_are_reported_at_once() {
    let bytes = include_bytes!("fixtures/agents/many-problems.yaml");
    let diags = parse_agent(bytes).expect_err("the document is broken");
    insta::assert_snapshot!(diags.to_string());
}
