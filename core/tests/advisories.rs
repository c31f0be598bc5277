//! OSV advisories: what `Advisory::parse` refuses (each problem at its
//! path), which versions a range affects (OSV's SEMVER evaluation, with
//! SemVer precedence), and the ids the registry assigns.

use agentlang_core::{
    Kind, PackageName, Version,
    advisories::{Advisory, AdvisoryId, MAX_DOCUMENT_BYTES, Severity},
};
use serde_json::{Value, json};

fn doc(events: &Value) -> Value {
    json!({
        "id": "x_TEST-1",
        "modified": "2026-02-01T00:00:00Z",
        "affected": [{
            "ranges": [{"type": "SEMVER", "events": events}],
            "database_specific": {"package": "tool/web_fetch"},
        }],
        "database_specific": {"severity": "MODERATE"},
    })
}

fn parse(value: &Value) -> Result<Advisory, Vec<(String, String)>> {
    Advisory::parse(&serde_json::to_vec(value).unwrap())
        .map_err(|problems| problems.into_iter().map(|p| (p.path, p.message)).collect())
}

fn affected(advisory: &Advisory, version: &str) -> bool {
    advisory.affects(
        Kind::Tool,
        &PackageName::new("Web-Fetch").unwrap(),
        &Version::parse(version).unwrap(),
    )
}

#[test]
fn a_range_affects_from_introduced_until_fixed_in_precedence_order() {
    let a = parse(&doc(&json!([{"fixed": "2.0.0"}, {"introduced": "1.1.0"}]))).unwrap();
    assert_eq!(a.severity, Severity::Moderate);
    for (version, expected) in [
        ("1.0.9", false),
        ("1.1.0-beta.1", false),
        ("1.1.0", true),
        ("1.9.9", true),
        ("2.0.0-rc.1", true),
        ("2.0.0", false),
        ("2.0.0+build.5", false),
        ("3.0.0", false),
    ] {
        assert_eq!(affected(&a, version), expected, "{version}");
    }
    // Another kind, or another package, is never affected.
    assert!(!a.affects(
        Kind::Skill,
        &PackageName::new("web_fetch").unwrap(),
        &Version::parse("1.5.0").unwrap()
    ));
    assert!(!a.affects(
        Kind::Tool,
        &PackageName::new("web_fetcher").unwrap(),
        &Version::parse("1.5.0").unwrap()
    ));
}

#[test]
fn zero_last_affected_limit_reintroduction_and_listed_versions() {
    let a = parse(&doc(
        &json!([{"introduced": "0"}, {"last_affected": "1.4.0"}]),
    ))
    .unwrap();
    assert!(affected(&a, "0.0.1") && affected(&a, "1.4.0"));
    assert!(!affected(&a, "1.4.1") && !affected(&a, "1.5.0-alpha"));

    // Fixed, then introduced again, then fixed.
    let a = parse(&doc(&json!([
        {"introduced": "1.0.0"}, {"fixed": "1.2.0"},
        {"introduced": "2.0.0"}, {"fixed": "2.1.0"}
    ])))
    .unwrap();
    let hits: Vec<&str> = [
        "0.9.0", "1.0.0", "1.1.5", "1.2.0", "1.9.0", "2.0.0", "2.0.5", "2.1.0",
    ]
    .into_iter()
    .filter(|v| affected(&a, v))
    .collect();
    assert_eq!(hits, ["1.0.0", "1.1.5", "2.0.0", "2.0.5"]);

    let a = parse(&doc(&json!([{"introduced": "0"}, {"limit": "3.0.0"}]))).unwrap();
    assert!(affected(&a, "2.9.9") && !affected(&a, "3.0.0"));

    let mut listed = doc(&json!([{"introduced": "5.0.0"}]));
    listed["affected"][0]["versions"] = json!(["0.3.0"]);
    let a = parse(&listed).unwrap();
    assert!(affected(&a, "0.3.0") && !affected(&a, "0.3.1") && affected(&a, "5.1.0"));

    // Withdrawn: affects nothing.
    let mut withdrawn = doc(&json!([{"introduced": "0"}]));
    withdrawn["withdrawn"] = json!("2026-03-01T00:00:00Z");
    assert!(!affected(&parse(&withdrawn).unwrap(), "1.0.0"));
}

#[test]
fn problems_are_reported_at_their_paths_all_at_once() {
    let mut bad =
        doc(&json!([{"introduced": "0"}, {"fixed": "1.0"}, {"fixed": "2.0.0", "limit": "3.0.0"}]));
    bad["affected"][0]["versions"] = json!(["one"]);
    bad["affected"].as_array_mut().unwrap().push(json!({
        "package": {"ecosystem": "AgentLang", "name": "tool/x"},
        "ranges": [{"type": "GIT", "repo": "https://example.com/x.git", "events": [{"introduced": "0"}]}],
    }));
    bad["database_specific"]["severity"] = json!("severe");
    bad["modified"] = json!("yesterday");
    let problems = parse(&bad).unwrap_err();
    let paths: Vec<&str> = problems.iter().map(|(p, _)| p.as_str()).collect();
    for path in [
        "affected[0].ranges[0].events[1].fixed",
        "affected[0].ranges[0].events[2]",
        "affected[0].versions[0]",
        "affected[1].package",
        "affected[1].ranges[0].type",
        "affected[1].database_specific.package",
        "database_specific.severity",
        "modified",
    ] {
        assert!(paths.contains(&path), "{path} in {problems:?}");
    }
}

#[test]
fn ids_sizes_and_the_registry_series() {
    // No id, or the placeholder: the registry assigns one.
    let mut no_id = doc(&json!([{"introduced": "0"}]));
    no_id.as_object_mut().unwrap().remove("id");
    let a = parse(&no_id).unwrap();
    assert!(a.id.is_none());
    let a = a.with_id(AdvisoryId::assigned(2026, 7));
    let served: Value = serde_json::from_slice(&a.to_bytes()).unwrap();
    assert_eq!(served["id"], "x_AGENTLANG-2026-0007");
    assert_eq!(served["schema_version"], "1.7.5");
    // `id` first, the rest in the order posted.
    assert!(
        String::from_utf8(a.to_bytes())
            .unwrap()
            .starts_with("{\"id\":")
    );
    let mut placeholder = no_id.clone();
    placeholder["id"] = json!("x_AGENTLANG-NEW");
    assert!(parse(&placeholder).unwrap().id.is_none());

    assert_eq!(
        AdvisoryId::parse("x_AGENTLANG-2026-0123")
            .unwrap()
            .assigned_number(2026),
        Some(123)
    );
    assert_eq!(
        AdvisoryId::parse("x_AGENTLANG-2026-12345")
            .unwrap()
            .assigned_number(2026),
        Some(12345)
    );
    assert_eq!(
        AdvisoryId::parse("x_AGENTLANG-2025-0001")
            .unwrap()
            .assigned_number(2026),
        None
    );
    for bad in [
        "CVE-2026-1",
        "GHSA-xxxx",
        "x_",
        "x_-1",
        "x_a b",
        "x_AGENTLANG-NEW",
    ] {
        assert!(AdvisoryId::parse(bad).is_err(), "{bad}");
    }

    let mut large = doc(&json!([{"introduced": "0"}]));
    large["details"] = json!("x".repeat(MAX_DOCUMENT_BYTES));
    assert_eq!(parse(&large).unwrap_err()[0].0, "");
    let mut many = doc(&json!([{"introduced": "0"}]));
    many["affected"][0]["ranges"][0]["events"] = json!(vec![json!({"introduced": "0"}); 33]);
    assert_eq!(
        parse(&many).unwrap_err()[0].0,
        "affected[0].ranges[0].events"
    );
}
