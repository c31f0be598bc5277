//! Unsatisfiable requests are explained in the words the requirements were
//! written in, and listed in structured form for the HTTP layer.

mod resolve_support;

use agentlang_core::resolve::{Conflict, ResolveError};
use resolve_support::*;

fn unsatisfiable(
    source: &agentlang_core::resolve::MemorySource,
    request: &agentlang_core::resolve::Request,
) -> (String, Vec<Conflict>) {
    match run(source, request) {
        Err(ResolveError::Unsatisfiable {
            explanation,
            conflicts,
        }) => (explanation, conflicts),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn two_tools_needing_different_majors_of_a_third() {
    let source = registry(&[
        ("web_search", "1.2.0", false, &[("http_core", "^1.4")]),
        (
            "summarizer",
            "2.0.0",
            false,
            &[("http_core", ">=2.0.0, <3")],
        ),
        ("http_core", "1.4.2", false, &[]),
        ("http_core", "2.1.0", false, &[]),
    ]);
    let (explanation, conflicts) = unsatisfiable(
        &source,
        &request(
            &[("web_search", Some("1.2.0")), ("summarizer", Some("^2"))],
            &[],
        ),
    );
    // Requirements appear as written, never as version intervals.
    assert!(
        explanation.contains("web_search 1.2.0 requires http_core ^1.4"),
        "{explanation}"
    );
    assert!(
        explanation.contains("summarizer 2.0.0 requires http_core >=2.0.0, <3"),
        "{explanation}"
    );
    assert!(explanation.contains("the agent requires"), "{explanation}");
    insta::assert_snapshot!(explanation);
    insta::assert_json_snapshot!(conflicts);
}

#[test]
fn a_requirement_no_version_meets() {
    let source = registry(&[
        ("t", "1.0.0", false, &[]),
        ("t", "2.0.0", false, &[]),
        ("t", "3.0.0", true, &[]),
        ("t", "3.1.0-beta.1", false, &[]),
    ]);
    let (explanation, conflicts) = unsatisfiable(&source, &request(&[("t", Some("^3.0"))], &[]));
    assert_eq!(
        explanation,
        "the agent requires t ^3.0, which no usable version matches (available: 3.1.0-beta.1, 2.0.0, 1.0.0)"
    );
    assert_eq!(
        serde_json::to_value(&conflicts).unwrap(),
        serde_json::json!([{
            "kind": "requirement",
            "required_by": null,
            "package": "t",
            "requirement": "^3.0",
            "satisfied_by": []
        }])
    );
}

#[test]
fn a_conflict_found_deep_in_the_graph() {
    // The agent wants a and d; every a needs b, every b needs c ^1, and d
    // needs c ^2: the chain is explained step by step.
    let source = registry(&[
        ("a", "1.0.0", false, &[("b", "^1")]),
        ("a", "1.1.0", false, &[("b", "^1")]),
        ("b", "1.0.0", false, &[("c", "^1")]),
        ("b", "1.1.0", false, &[("c", "^1")]),
        ("c", "1.0.0", false, &[]),
        ("c", "2.0.0", false, &[]),
        ("d", "1.0.0", false, &[("c", "^2")]),
    ]);
    let (explanation, conflicts) =
        unsatisfiable(&source, &request(&[("a", None), ("d", Some("1"))], &[]));
    for needle in [
        "every version of a requires b ^1",
        "every version of b requires c ^1",
        "d 1.0.0 requires c ^2",
    ] {
        assert!(
            explanation.contains(needle),
            "{needle:?} missing from:\n{explanation}"
        );
    }
    insta::assert_snapshot!(explanation);
    let packages: Vec<String> = conflicts
        .iter()
        .map(|c| match c {
            Conflict::Requirement { package, .. } | Conflict::NoVersion { package, .. } => {
                package.to_string()
            }
        })
        .collect();
    for p in ["a", "b", "c", "d"] {
        assert!(packages.iter().any(|x| x == p), "{p} not in {packages:?}");
    }
}

#[test]
fn the_error_message_carries_the_explanation() {
    let source = releases("t", &["1.0.0"]);
    let err = run(&source, &request(&[("t", Some("^2"))], &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the tool requirements cannot be met: the agent requires t ^2, which no usable version matches (available: 1.0.0)"
    );

    // Several sentences still make one line.
    let source = registry(&[
        ("a", "1.0.0", false, &[("c", "^1")]),
        ("b", "1.0.0", false, &[("c", "^2")]),
        ("c", "1.0.0", false, &[]),
        ("c", "2.0.0", false, &[]),
    ]);
    let err = run(&source, &request(&[("a", None), ("b", None)], &[])).unwrap_err();
    let message = err.to_string();
    assert!(!message.contains('\n'), "{message}");
    assert!(message.contains("a 1.0.0 requires c ^1"), "{message}");
}
