//! The resolver applies Cargo's requirement rules (the `semver` crate's
//! `VersionReq::matches`), newest first, with yanks and lock pins.

mod resolve_support;

use agentlang_core::{
    PackageName,
    digest::Sha256Digest,
    resolve::{Cancel, PackageSource, ResolveError, SourceError, VersionEntry, resolve},
};
use resolve_support::*;

/// (requirement, published versions, expected choice; `None` = unsatisfiable)
const TABLE: &[(Option<&str>, &[&str], Option<&str>)] = &[
    // A bare version is a caret requirement.
    (
        Some("1.2.0"),
        &["1.1.0", "1.2.0", "1.2.9", "1.9.0", "2.0.0"],
        Some("1.9.0"),
    ),
    (
        Some("^1.2.0"),
        &["1.1.0", "1.2.0", "1.2.9", "1.9.0", "2.0.0"],
        Some("1.9.0"),
    ),
    (Some("1.2.0"), &["1.1.0", "2.0.0"], None),
    // Caret below 1.0: the leftmost non-zero component is fixed.
    (
        Some("^0.2.3"),
        &["0.2.2", "0.2.3", "0.2.9", "0.3.0"],
        Some("0.2.9"),
    ),
    (Some("^0.2.3"), &["0.2.2", "0.3.0"], None),
    (Some("^0.0.3"), &["0.0.3", "0.0.4", "0.1.0"], Some("0.0.3")),
    (Some("^0.0.3"), &["0.0.4"], None),
    // Tilde: patch updates only (minor too when only the major is given).
    (
        Some("~1.2.3"),
        &["1.2.2", "1.2.3", "1.2.7", "1.3.0"],
        Some("1.2.7"),
    ),
    (Some("~1.2"), &["1.2.0", "1.2.5", "1.3.0"], Some("1.2.5")),
    (Some("~1"), &["1.0.0", "1.7.0", "2.0.0"], Some("1.7.0")),
    // Wildcards.
    (
        Some("1.*"),
        &["0.9.0", "1.0.0", "1.5.0", "2.0.0"],
        Some("1.5.0"),
    ),
    (Some("1.2.*"), &["1.2.0", "1.2.8", "1.3.0"], Some("1.2.8")),
    (Some("*"), &["0.1.0", "3.0.0"], Some("3.0.0")),
    // Comparators and ranges.
    (
        Some(">=1.2, <1.5"),
        &["1.1.0", "1.2.0", "1.4.9", "1.5.0"],
        Some("1.4.9"),
    ),
    (Some(">=1.2, <1.5"), &["1.1.0", "1.5.0"], None),
    (Some(">1.0.0"), &["1.0.0"], None),
    (Some("<=1.0.0"), &["0.5.0", "1.0.0", "1.0.1"], Some("1.0.0")),
    // Exact.
    (Some("=1.2.3"), &["1.2.2", "1.2.3", "1.2.4"], Some("1.2.3")),
    (Some("=1.2.3"), &["1.2.4"], None),
    // Prereleases only when a requirement names one, on the same x.y.z.
    (Some("^1.2.0"), &["1.2.0", "1.3.0-beta"], Some("1.2.0")),
    (Some("^1.2.0"), &["1.3.0-beta"], None),
    (
        Some(">=1.3.0-beta"),
        &["1.3.0-beta.2", "1.4.0-alpha"],
        Some("1.3.0-beta.2"),
    ),
    (
        Some(">=1.3.0-beta"),
        &["1.3.0-beta.2", "1.3.0", "1.4.0-alpha"],
        Some("1.3.0"),
    ),
    (Some(">=1.3.0-beta"), &["1.4.0-alpha"], None),
    (
        Some("^1.2.0-rc.1"),
        &["1.2.0-rc.1", "1.2.0-rc.2", "1.3.0-alpha"],
        Some("1.2.0-rc.2"),
    ),
    (
        Some("=2.0.0-rc.1"),
        &["2.0.0-rc.1", "2.0.0"],
        Some("2.0.0-rc.1"),
    ),
    // No requirement: the newest release, never a prerelease.
    (None, &["1.0.0", "2.0.0-rc.1"], Some("1.0.0")),
    (None, &["2.0.0-rc.1"], None),
];

#[test]
fn requirements_follow_cargo_semver_rules() {
    for (requirement, published, expected) in TABLE {
        let source = releases("t", published);
        let outcome = run(&source, &request(&[("t", *requirement)], &[]));
        let case = format!("{requirement:?} over {published:?}");
        match (expected, outcome) {
            (Some(want), Ok(resolution)) => {
                assert_eq!(chosen(&resolution)["t"], *want, "{case}");
            }
            (None, Err(ResolveError::Unsatisfiable { explanation, .. })) => {
                assert!(explanation.contains("t "), "{case}: {explanation}");
            }
            (want, got) => panic!("{case}: expected {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn yanked_versions_are_never_chosen_for_a_new_resolution() {
    let source = registry(&[
        ("t", "1.0.0", false, &[]),
        ("t", "1.1.0", true, &[]),
        ("t", "2.0.0", true, &[]),
    ]);
    let got = run(&source, &request(&[("t", Some("^1"))], &[])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.0.0");
    let err = run(&source, &request(&[("t", Some("^2"))], &[])).unwrap_err();
    assert!(matches!(err, ResolveError::Unsatisfiable { .. }), "{err:?}");
}

#[test]
fn a_yanked_version_pinned_by_the_lock_is_kept() {
    let source = registry(&[
        ("t", "1.0.0", false, &[]),
        ("t", "1.1.0", true, &[]),
        ("t", "1.2.0", false, &[]),
    ]);
    let got = run(&source, &request(&[("t", Some("^1"))], &[("t", "1.1.0")])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.1.0");
}

#[test]
fn the_order_a_source_lists_versions_in_does_not_matter() {
    // Sources list oldest first; the resolver must not rely on it.
    let source = registry(&[
        ("t", "1.10.0", false, &[]),
        ("t", "2.0.0-rc.1", false, &[]),
        ("t", "1.2.0", false, &[]),
        ("t", "1.11.0", true, &[]),
        ("t", "1.9.0", false, &[]),
    ]);
    let got = run(&source, &request(&[("t", Some("^1"))], &[])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.10.0");
    assert_eq!(
        got.tools[&PackageName::new("t").unwrap()].hash,
        Sha256Digest::of(b"t@1.10.0")
    );
    let got = run(&source, &request(&[("t", Some("<1.10"))], &[])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.9.0");
    let got = run(&source, &request(&[("t", Some("^1"))], &[("t", "1.11.0")])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.11.0");
}

#[test]
fn a_pinned_version_is_kept_while_it_satisfies() {
    let source = releases("t", &["1.0.0", "1.1.0", "1.2.0"]);
    let got = run(&source, &request(&[("t", Some("^1"))], &[("t", "1.0.0")])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.0.0");
}

#[test]
fn a_pin_that_no_longer_satisfies_is_dropped() {
    let source = registry(&[
        ("t", "1.0.0", false, &[]),
        ("t", "1.5.0", true, &[]),
        ("t", "2.0.0", false, &[]),
        ("t", "2.1.0", false, &[]),
    ]);
    let got = run(&source, &request(&[("t", Some("^2"))], &[("t", "1.0.0")])).unwrap();
    assert_eq!(chosen(&got)["t"], "2.1.0");
    // A yanked pin outside the requirement does not make its version usable.
    let got = run(&source, &request(&[("t", Some("^1"))], &[("t", "1.5.0")])).unwrap();
    assert_eq!(chosen(&got)["t"], "1.5.0");
    let got = run(
        &source,
        &request(&[("t", Some(">=1.0.0, <1.5.0"))], &[("t", "1.5.0")]),
    )
    .unwrap();
    assert_eq!(chosen(&got)["t"], "1.0.0");
}

#[test]
fn transitive_pins_are_kept_until_a_new_requirement_excludes_them() {
    let source = registry(&[
        ("a", "1.0.0", false, &[("b", "^1")]),
        ("a", "2.0.0", false, &[("b", "^1.1")]),
        ("b", "1.0.0", false, &[]),
        ("b", "1.1.0", false, &[]),
        ("b", "1.2.0", false, &[]),
    ]);
    let got = run(
        &source,
        &request(&[("a", Some("^1"))], &[("a", "1.0.0"), ("b", "1.0.0")]),
    )
    .unwrap();
    assert_eq!(
        chosen(&got),
        [("a".into(), "1.0.0".into()), ("b".into(), "1.0.0".into())].into()
    );
    let got = run(
        &source,
        &request(&[("a", Some("^2"))], &[("a", "1.0.0"), ("b", "1.0.0")]),
    )
    .unwrap();
    assert_eq!(
        chosen(&got),
        [("a".into(), "2.0.0".into()), ("b".into(), "1.2.0".into())].into()
    );
}

#[test]
fn dependencies_are_resolved_transitively_into_lock_entries() {
    let source = registry(&[
        ("web_search", "1.2.0", false, &[("web_fetch", "^1.0")]),
        ("web_search", "1.3.0", false, &[("web_fetch", "^2.0")]),
        ("web_fetch", "1.0.0", false, &[("http_core", "~0.3")]),
        ("web_fetch", "1.1.0", false, &[("http_core", "~0.3")]),
        ("http_core", "0.3.1", false, &[]),
        ("http_core", "0.4.0", false, &[]),
        ("unrelated", "1.0.0", false, &[]),
    ]);
    let got = run(&source, &request(&[("web_search", Some("1.2.0"))], &[])).unwrap();
    // 1.3.0 needs web_fetch ^2, which does not exist: the resolver backs off.
    assert_eq!(
        chosen(&got),
        [
            ("http_core".into(), "0.3.1".into()),
            ("web_fetch".into(), "1.1.0".into()),
            ("web_search".into(), "1.2.0".into()),
        ]
        .into()
    );
    let search = &got.tools[&name("web_search")];
    assert_eq!(search.requirement, Some(req("^1.2.0")));
    assert_eq!(search.hash, Sha256Digest::of(b"web_search@1.2.0"));
    assert_eq!(got.tools[&name("web_fetch")].requirement, None);

    let lock = got.into_lock_tools();
    let search = &lock[&name("web_search")];
    assert_eq!(search.requirement, Some(req("^1.2.0")));
    assert_eq!(search.dependencies, [name("web_fetch")].into());
    assert_eq!(
        lock[&name("web_fetch")].dependencies,
        [name("http_core")].into()
    );
    assert!(lock[&name("http_core")].dependencies.is_empty());
}

#[test]
fn look_alike_names_are_one_package_with_one_version() {
    let source = registry(&[
        ("web_search", "1.0.0", false, &[]),
        ("web_search", "2.0.0", false, &[]),
        ("helper", "1.0.0", false, &[("Web-Search", "^1")]),
    ]);
    let got = run(
        &source,
        &request(&[("Web-Search", None), ("helper", None)], &[]),
    )
    .unwrap();
    assert_eq!(
        chosen(&got),
        [
            ("Web-Search".into(), "1.0.0".into()),
            ("helper".into(), "1.0.0".into())
        ]
        .into()
    );
    // The helper's dependency is listed under the name it is locked by.
    let lock = got.into_lock_tools();
    assert_eq!(
        lock[&name("helper")].dependencies,
        [name("Web-Search")].into()
    );
    let err = run(
        &source,
        &request(
            &[("Web-Search", Some("^2")), ("web_search", Some("^1"))],
            &[],
        ),
    )
    .unwrap_err();
    let ResolveError::Unsatisfiable { explanation, .. } = err else {
        panic!("expected a conflict, got {err:?}");
    };
    assert!(
        explanation.contains("Web-Search ^2 and ^1, which no usable version matches"),
        "{explanation}"
    );
}

#[test]
fn unknown_packages_name_who_required_them() {
    let source = registry(&[("a", "1.0.0", false, &[("ghost", "^1")])]);
    match run(&source, &request(&[("missing", None)], &[])) {
        Err(ResolveError::UnknownPackage { name, required_by }) => {
            assert_eq!(name.as_str(), "missing");
            assert_eq!(required_by, "the agent");
        }
        other => panic!("{other:?}"),
    }
    let err = run(&source, &request(&[("a", None)], &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no tool named ghost exists (required by a 1.0.0)"
    );
}

#[test]
fn a_source_listing_a_version_twice_is_refused() {
    let source = releases("t", &["1.0.0", "1.0.0"]);
    let err = run(&source, &request(&[("t", None)], &[])).unwrap_err();
    assert!(
        matches!(&err, ResolveError::DuplicateVersion { name, version }
            if name.as_str() == "t" && version.to_string() == "1.0.0"),
        "{err:?}"
    );
}

struct Failing;

impl PackageSource for Failing {
    fn versions(
        &self,
        _: &PackageName,
    ) -> Result<Option<std::sync::Arc<Vec<VersionEntry>>>, SourceError> {
        Err(SourceError::new("database is down"))
    }
}

#[test]
fn source_failures_are_reported_with_the_package() {
    // Callers may hold their source as a trait object.
    let source: &dyn PackageSource = &Failing;
    let err = resolve(source, &request(&[("t", None)], &[]), &Cancel::new()).unwrap_err();
    assert!(matches!(err, ResolveError::Source { .. }), "{err:?}");
    assert_eq!(err.to_string(), "looking up t failed: database is down");
}

#[test]
fn an_empty_request_resolves_to_nothing() {
    let got = run(&releases("t", &["1.0.0"]), &request(&[], &[])).unwrap();
    assert!(got.tools.is_empty());
}
