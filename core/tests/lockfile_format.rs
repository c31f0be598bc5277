//! agent.lock read/write: the written shape, determinism and strictness.

use std::collections::{BTreeMap, BTreeSet};

use agentlang_core::{
    MemberPath, PackageName, Version,
    digest::Sha256Digest,
    lockfile::{
        LockedAgent, LockedModel, LockedTool, Lockfile, LockfileError, ModelId, Price, ResolvedAt,
    },
    yaml::{YamlError, YamlLimits},
};

fn name(s: &str) -> PackageName {
    PackageName::new(s).unwrap()
}

fn sample() -> Lockfile {
    let mut lock = Lockfile::new(
        ResolvedAt::parse("2025-01-29T10:30:00Z").unwrap(),
        Some("http://127.0.0.1:8080".into()),
    );
    lock.tools.insert(
        name("web_search"),
        LockedTool {
            version: Version::parse("1.2.0").unwrap(),
            hash: Sha256Digest::of(b"web_search@1.2.0.tool"),
            requirement: Some(semver::VersionReq::parse("1.2.0").unwrap()),
            dependencies: BTreeSet::from([name("web_fetch")]),
            log_index: None,
        },
    );
    lock.tools.insert(
        name("web_fetch"),
        LockedTool {
            version: Version::parse("1.0.0").unwrap(),
            hash: Sha256Digest::of(b"web_fetch@1.0.0.tool"),
            requirement: None,
            dependencies: BTreeSet::new(),
            log_index: None,
        },
    );
    lock.agents.insert(
        name("academic-researcher"),
        LockedAgent {
            version: Version::parse("1.0.0").unwrap(),
            hash: Sha256Digest::of(b"academic-researcher.yaml"),
        },
    );
    lock.models.insert(
        ModelId::new("claude-sonnet-4").unwrap(),
        LockedModel {
            context_window: 200_000,
            supports_tools: true,
            input_1m_price: Some(Price::new(3.0).unwrap()),
            output_1m_price: Some(Price::new(15.0).unwrap()),
        },
    );
    lock.files = BTreeMap::from([
        (
            MemberPath::new("prompt.yaml").unwrap(),
            Sha256Digest::of(b"prompt"),
        ),
        (
            MemberPath::new("agent.yaml").unwrap(),
            Sha256Digest::of(b"agent"),
        ),
    ]);
    lock
}

#[test]
fn written_lockfile_has_the_design_shape() {
    insta::assert_snapshot!(sample().to_yaml().unwrap());
}

#[test]
fn writing_is_deterministic_and_round_trips() {
    let a = sample().to_yaml().unwrap();
    let b = sample().to_yaml().unwrap();
    assert_eq!(a, b);
    let parsed = Lockfile::from_slice(a.as_bytes()).unwrap();
    assert_eq!(parsed, sample());
    assert_eq!(parsed.to_yaml().unwrap(), a);
}

#[test]
fn reads_the_spec_example_shape() {
    let h = "sha256:".to_owned() + &"ab".repeat(32);
    let text = format!(
        "version: \"1\"\nresolved_at: \"2025-01-29T10:30:00Z\"\ntools:\n  web_search:\n    version: 1.2.0\n    hash: {h}\n  web_fetch:\n    version: 1.0.0\n    hash: {h}\nagents:\n  academic-researcher:\n    version: 1.0.0\n    hash: {h}\nmodels:\n  claude-sonnet-4:\n    context_window: 200000\n    supports_tools: true\nfiles:\n  agent.yaml: {h}\n  prompt.yaml: {h}\n"
    );
    let lock = Lockfile::from_slice(text.as_bytes()).unwrap();
    assert_eq!(lock.registry, None);
    assert_eq!(lock.tools.len(), 2);
    assert_eq!(
        lock.tool_pins().get(&name("web_search")),
        Some(&Version::parse("1.2.0").unwrap())
    );
    assert_eq!(lock.files.len(), 2);
}

fn syntax_error(text: &str) -> String {
    match Lockfile::from_slice(text.as_bytes()) {
        Err(LockfileError::Yaml(YamlError::Syntax(msg))) => msg,
        other => panic!("expected a syntax error for {text:?}, got {other:?}"),
    }
}

#[test]
fn strict_parsing_names_what_is_wrong() {
    let h = "sha256:".to_owned() + &"ab".repeat(32);
    let head = "version: \"1\"\nresolved_at: \"2025-01-29T10:30:00Z\"\n";

    let msg = syntax_error(&format!("{head}extra: 1\n"));
    assert!(msg.contains("unknown field `extra`"), "{msg}");

    let msg = syntax_error(&format!(
        "{head}tools:\n  t:\n    version: 1.0.0\n    hash: {h}\n    pinned: true\n"
    ));
    assert!(msg.contains("unknown field `pinned`"), "{msg}");

    let msg = syntax_error(&format!(
        "{head}tools:\n  t:\n    version: 1.0.0\n    hash: sha256:ABC\n"
    ));
    assert!(msg.contains("sha256:<64 lowercase hex digits>"), "{msg}");

    let msg = syntax_error(&format!(
        "{head}tools:\n  t:\n    version: \"1.0\"\n    hash: {h}\n"
    ));
    assert!(msg.contains("not a valid SemVer"), "{msg}");

    let msg = syntax_error(&format!(
        "{head}tools:\n  1bad:\n    version: 1.0.0\n    hash: {h}\n"
    ));
    assert!(msg.contains("must start with an ASCII letter"), "{msg}");

    let msg = syntax_error(&format!("{head}files:\n  ../etc/passwd: {h}\n"));
    assert!(msg.contains("climbs out"), "{msg}");

    let msg = syntax_error("version: \"2\"\nresolved_at: \"2025-01-29T10:30:00Z\"\n");
    assert!(msg.contains("unknown variant `2`"), "{msg}");

    let msg = syntax_error("version: \"1\"\nresolved_at: \"2025-01-29T11:30:00+01:00\"\n");
    assert!(msg.contains("RFC 3339 UTC"), "{msg}");

    let msg = syntax_error("version: \"1\"\n");
    assert!(msg.contains("missing field `resolved_at`"), "{msg}");

    let msg = syntax_error(&format!(
        "{head}models:\n  m:\n    context_window: 1\n    supports_tools: true\n    input_1m_price: -2.0\n"
    ));
    assert!(msg.contains("not a price"), "{msg}");
}

#[test]
fn parsing_is_bounded() {
    let limits = YamlLimits {
        max_bytes: 64,
        ..YamlLimits::default()
    };
    let text = sample().to_yaml().unwrap();
    assert!(matches!(
        Lockfile::from_slice_with_limits(text.as_bytes(), &limits),
        Err(LockfileError::Yaml(YamlError::TooLarge { limit: 64, .. }))
    ));
}
