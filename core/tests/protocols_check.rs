//! An agent's `protocols:` against a catalog: the spec's research
//! assistant (a2a ^1 deprecated, mcp ^2024.11, an inline custom protocol),
//! published custom protocols, and what the lock records.

mod agent_support;

use std::collections::BTreeMap;

use agent_support::load_fixture;
use agentlang_core::{
    MemberPath, SourceTree, Version,
    agent::parse_agent,
    digest::Sha256Digest,
    lockfile::{LockedProtocol, Lockfile, ResolvedAt},
    package::validate_agent_tree,
    protocols::{
        KnownProtocol, ProtocolEntry, ProtocolName, ProtocolSource, ProtocolStatus,
        ProtocolVersion, check_agent,
    },
};

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

fn stable(s: &str) -> ProtocolVersion {
    ProtocolVersion {
        version: v(s),
        status: ProtocolStatus::Stable,
    }
}

fn catalog() -> BTreeMap<String, KnownProtocol> {
    let known = |entry| KnownProtocol {
        entry,
        source: ProtocolSource::Catalog,
        hashes: BTreeMap::new(),
    };
    let a2a = ProtocolEntry::new(
        "Agent-to-agent".into(),
        vec![
            ProtocolVersion {
                version: v("1.0.0"),
                status: ProtocolStatus::Deprecated {
                    successor: v("2.0.0"),
                    message: "a2a v1 deprecated, migrate to v2".into(),
                },
            },
            stable("2.0.0"),
        ],
    )
    .unwrap();
    let mcp = ProtocolEntry::new(
        "Model Context Protocol".into(),
        vec![stable("2024.11.5"), stable("2025.6.18")],
    )
    .unwrap();
    let hash = Sha256Digest::of(b"acme-stream 1.1.0");
    let stream = KnownProtocol {
        entry: ProtocolEntry::new(String::new(), vec![stable("1.0.0"), stable("1.1.0")]).unwrap(),
        source: ProtocolSource::Package,
        hashes: [(v("1.1.0"), hash)].into(),
    };
    [
        ("a2a".to_owned(), known(a2a)),
        ("mcp".to_owned(), known(mcp)),
        ("custom/acme-stream".to_owned(), stream),
    ]
    .into()
}

#[test]
fn the_spec_agent_gets_a_deprecation_warning_naming_the_successor() {
    let pkg = validate_agent_tree(&load_fixture("research-assistant")).unwrap();
    let cat = catalog();
    let report = check_agent(
        &pkg.agent,
        &|n: &ProtocolName| cat.get(n.as_str()).cloned(),
        &BTreeMap::new(),
    );
    assert!(report.errors.is_empty(), "{}", report.errors);
    let warnings: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "protocols[0].version: a2a 1.0.0 is deprecated, migrate to 2.0.0: a2a v1 deprecated, migrate to v2"
        ]
    );
    let chosen: Vec<String> = report
        .choices
        .iter()
        .map(|c| format!("{} {} {:?}", c.name, c.version, c.source))
        .collect();
    assert_eq!(
        chosen,
        [
            "a2a 1.0.0 Catalog",
            "mcp 2024.11.5 Catalog",
            "custom/acme-sync 1.0.0 Inline",
        ]
    );
}

#[test]
fn unknown_unsatisfiable_and_published_protocols() {
    let agent = parse_agent(
        b"name: a\nversion: 1.0.0\ndescription: d\nprotocols:\n  - name: a2a\n    version: ^3\n  - name: smtp\n  - name: custom/acme-stream\n    version: ^1.0\n  - name: custom/nobody\n",
    )
    .unwrap();
    let cat = catalog();
    let report = check_agent(
        &agent,
        &|n: &ProtocolName| cat.get(n.as_str()).cloned(),
        &BTreeMap::new(),
    );
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "protocols[0].version: no version of a2a satisfies ^3 (versions: 1.0.0 deprecated, 2.0.0 stable)",
            "protocols[1].name: smtp is not a protocol this registry knows",
            "protocols[3].name: custom protocol custom/nobody is neither defined under x-protocols nor published as a protocol package",
        ]
    );
    let stream = &report.choices[0];
    assert_eq!(stream.version, v("1.1.0"));
    assert_eq!(stream.source, ProtocolSource::Package);
    assert_eq!(stream.hash, Some(Sha256Digest::of(b"acme-stream 1.1.0")));
}

#[test]
fn a_lock_keeps_its_pins_and_records_protocols_only_when_there_are_some() {
    let agent =
        parse_agent(b"name: a\nversion: 1.0.0\ndescription: d\nprotocols:\n  - name: mcp\n")
            .unwrap();
    let cat = catalog();
    let pins = [("mcp".to_owned(), v("2024.11.5"))].into();
    let report = check_agent(
        &agent,
        &|n: &ProtocolName| cat.get(n.as_str()).cloned(),
        &pins,
    );
    assert_eq!(report.choices[0].version, v("2024.11.5"));
    let fresh = check_agent(
        &agent,
        &|n: &ProtocolName| cat.get(n.as_str()).cloned(),
        &BTreeMap::new(),
    );
    assert_eq!(fresh.choices[0].version, v("2025.6.18"));

    let mut lock = Lockfile::new(ResolvedAt::from_unix(0).unwrap(), None);
    let empty = lock.to_yaml().unwrap();
    assert!(!empty.contains("protocols"), "{empty}");
    lock.protocols.insert(
        ProtocolName::new("mcp").unwrap(),
        LockedProtocol {
            version: v("2024.11.5"),
            requirement: None,
            source: ProtocolSource::Catalog,
            hash: None,
        },
    );
    let text = lock.to_yaml().unwrap();
    assert!(
        text.contains("protocols:\n  mcp:\n    version: 2024.11.5\n    source: catalog\n"),
        "{text}"
    );
    assert_eq!(Lockfile::from_slice(text.as_bytes()).unwrap(), lock);
    let bad = text.replace("source: catalog", "source: rumour");
    assert!(Lockfile::from_slice(bad.as_bytes()).is_err());
}

#[test]
fn a_protocol_package_builds_and_reads_as_its_own_kind() {
    use agentlang_core::{
        Kind, PackageName,
        container::{self, BuildInput, Created, Limits},
        signing::SecretKey,
    };
    let mut tree = SourceTree::new();
    tree.insert(
        MemberPath::new("protocol.yaml").unwrap(),
        b"name: acme-stream\nversion: 1.1.0\ndescription: Streams\nschema:\n  message_format: json\n  transport: sse\n  auth: bearer\n"
            .to_vec(),
    );
    let key = SecretKey::generate().unwrap();
    let bytes = container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Protocol,
        name: &PackageName::new("acme-stream").unwrap(),
        version: &v("1.1.0"),
        created: Created::from_unix_seconds(0).unwrap(),
        signing_key: &key,
        prompt_key: None,
    })
    .unwrap();
    let read = container::read(bytes.as_slice(), &Limits::default()).unwrap();
    assert_eq!(read.manifest().kind(), Kind::Protocol);
    let spec =
        agentlang_core::protocols::parse_protocol(read.member("protocol.yaml").unwrap()).unwrap();
    assert_eq!(spec.protocol_name(), "custom/acme-stream");
    // A protocol.yaml inside an agent container is a kind mismatch.
    let err = container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Agent,
        name: &PackageName::new("acme-stream").unwrap(),
        version: &v("1.1.0"),
        created: Created::from_unix_seconds(0).unwrap(),
        signing_key: &key,
        prompt_key: None,
    })
    .unwrap_err();
    assert!(err.to_string().contains("protocol.yaml"), "{err}");
}
