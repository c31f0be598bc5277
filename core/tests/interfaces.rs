//! Abstract tools end to end in core: tool.yaml's `provides`, and the one
//! lock judgment (`lockcheck::check`) with an agent that requires an
//! interface: the recorded provider's pin answers the requirement, and a
//! provider that does not provide the interface at its pinned version is
//! refused (`interface-unprovided`).

use std::collections::BTreeSet;

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    digest::Sha256Digest,
    lockcheck::{
        self, MemberHashes, ProblemKind, PublishedTool, PublishedTools, RegistryFacts, YankPolicy,
    },
    lockfile::{LockedTool, Lockfile, ResolvedAt},
    package::{AgentPackage, Members, Package, validate_package},
    tool::parse_tool,
};

const TOOL: &str = "name: sqlite-store\nversion: 1.0.0\ndescription: Stores rows.\nkind: mcp\n\
                    input_schema:\n  type: object\n";

#[test]
fn provides_is_a_list_of_interface_names() {
    let tool = parse_tool(format!("{TOOL}provides: [storage, Key_Value]\n").as_bytes()).unwrap();
    let provided: Vec<&str> = tool.provides().iter().map(PackageName::as_str).collect();
    assert_eq!(provided, ["Key_Value", "storage"]);
    // Serialized with the spec, which is what the registry stores.
    let json = serde_json::to_value(&tool).unwrap();
    assert_eq!(
        json["provides"],
        serde_json::json!(["Key_Value", "storage"])
    );
    assert!(parse_tool(TOOL.as_bytes()).unwrap().provides().is_empty());

    let broken = format!("{TOOL}provides: [storage, Storage, 'not a name', sqlite_store, 3]\n");
    let diags = parse_tool(broken.as_bytes()).unwrap_err();
    let paths: Vec<&str> = diags.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        ["provides[1]", "provides[2]", "provides[3]", "provides[4]"],
        "{diags:?}"
    );
    let diags = parse_tool(format!("{TOOL}provides: storage\n").as_bytes()).unwrap_err();
    assert_eq!(diags.iter().next().unwrap().path, "provides");
}

fn agent_tree(lock: Option<&Lockfile>) -> SourceTree {
    let mut tree = SourceTree::new();
    tree.insert(
        MemberPath::new("agent.yaml").unwrap(),
        b"name: keeper\nversion: 1.0.0\ndescription: Keeps notes.\n\
          tools:\n  - name: storage # Abstract storage interface\n"
            .to_vec(),
    );
    tree.insert(
        MemberPath::new("prompt.yaml").unwrap(),
        b"version: 2\nrole: system\nsections:\n  - name: task\n    content: Keep notes.\n".to_vec(),
    );
    if let Some(lock) = lock {
        tree.insert(
            MemberPath::new("agent.lock").unwrap(),
            lock.to_yaml().unwrap().into_bytes(),
        );
    }
    tree
}

fn validated(tree: &SourceTree) -> AgentPackage {
    match validate_package(Kind::Agent, &Members::from_tree(tree)) {
        Ok(Package::Agent(pkg)) => *pkg,
        other => panic!("not a valid agent: {other:?}"),
    }
}

fn name(s: &str) -> PackageName {
    PackageName::new(s).unwrap()
}

/// What `agentlang lock` writes for the agent with `provider` picked.
fn lock_with(provider: &str) -> Lockfile {
    let bare = agent_tree(None);
    let pkg = validated(&agent_tree(Some(&Lockfile::new(
        ResolvedAt::from_unix(0).unwrap(),
        None,
    ))));
    let mut lock = Lockfile::new(ResolvedAt::from_unix(1_738_146_600).unwrap(), None);
    lock.files = lockcheck::local_sections(&bare, &pkg).files;
    lock.interfaces.insert(name("storage"), name(provider));
    lock.tools.insert(
        name(provider),
        LockedTool {
            version: Version::parse("1.0.0").unwrap(),
            hash: Sha256Digest::of(provider.as_bytes()),
            requirement: None,
            dependencies: BTreeSet::new(),
            log_index: None,
        },
    );
    lock
}

fn judged(lock: &Lockfile, published: Option<&PublishedTools>) -> Vec<(ProblemKind, String)> {
    let tree = agent_tree(Some(lock));
    let pkg = validated(&tree);
    let facts = published.map(|tools| RegistryFacts {
        tools,
        skills: tools,
        yanks: YankPolicy::Honour,
    });
    lockcheck::check(&pkg, &MemberHashes::from_tree(&tree), facts.as_ref())
        .into_iter()
        .map(|p| (p.kind, p.field))
        .collect()
}

fn registry(provides: &[(&str, &[&str])]) -> PublishedTools {
    let mut tools = PublishedTools::new();
    for (tool, interfaces) in provides {
        let version = Version::parse("1.0.0").unwrap();
        tools.insert(
            &name(tool),
            vec![PublishedTool {
                version: version.clone(),
                hash: Sha256Digest::of(tool.as_bytes()),
                yanked: false,
                dependencies: Default::default(),
            }],
        );
        let interfaces: Vec<PackageName> = interfaces.iter().map(|i| name(i)).collect();
        tools.insert_provides(&name(tool), &version, &interfaces);
    }
    tools
}

#[test]
fn the_recorded_providers_pin_answers_the_interface() {
    let lock = lock_with("sqlite-store");
    assert_eq!(judged(&lock, None), []);
    let published = registry(&[("sqlite-store", &["storage"])]);
    assert_eq!(judged(&lock, Some(&published)), []);

    // Without the record, the interface is a requirement nothing pins.
    let mut unrecorded = lock;
    unrecorded.interfaces.clear();
    let found = judged(&unrecorded, None);
    assert!(
        found.contains(&(ProblemKind::Unpinned, "tools.storage".to_owned())),
        "{found:?}"
    );
}

#[test]
fn a_provider_that_does_not_provide_it_is_refused() {
    let lock = lock_with("pg-store");
    let published = registry(&[("pg-store", &["cache"])]);
    let found = judged(&lock, Some(&published));
    assert_eq!(
        found,
        [(
            ProblemKind::InterfaceUnprovided,
            "interfaces.storage".to_owned()
        )]
    );
    assert_eq!(
        ProblemKind::InterfaceUnprovided.slug(),
        "interface-unprovided"
    );
    // A record the agent does not need is unrelated.
    let mut extra = lock_with("sqlite-store");
    extra.interfaces.insert(name("cache"), name("sqlite-store"));
    let found = judged(
        &extra,
        Some(&registry(&[("sqlite-store", &["storage", "cache"])])),
    );
    assert_eq!(
        found,
        [(ProblemKind::Unrelated, "interfaces.cache".to_owned())]
    );
}
