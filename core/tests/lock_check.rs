//! One judgment of a package and its lock (`lockcheck::check`): what
//! `agentlang lock` writes (`local_sections`) passes, every way a lock can
//! differ from it fails with its own kind at its field, and a container
//! is judged exactly as the directory it was packed from.

mod agent_support;

use std::collections::BTreeSet;

use agent_support::load_fixture;
use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created, Limits},
    crypt::PromptKey,
    digest::Sha256Digest,
    lockcheck::{self, MemberHashes, ProblemKind, PublishedTools, RegistryFacts, YankPolicy},
    lockfile::{LockedModel, LockedTool, Lockfile, ModelId, ResolvedAt},
    package::{AgentPackage, Members, Package, validate_package},
    signing::SecretKey,
};

fn validated(tree: &SourceTree) -> AgentPackage {
    match validate_package(Kind::Agent, &Members::from_tree(tree)) {
        Ok(Package::Agent(pkg)) => *pkg,
        other => panic!("not a valid agent: {other:?}"),
    }
}

fn model() -> LockedModel {
    LockedModel {
        context_window: 200_000,
        supports_tools: true,
        input_1m_price: None,
        output_1m_price: None,
    }
}

/// The lock `agentlang lock` would write for `tree` (tools pinned at
/// made-up hashes: the local judgment does not read them).
fn honest_lock(tree: &SourceTree) -> Lockfile {
    let pkg = validated(tree);
    let local = lockcheck::local_sections(tree, &pkg);
    let mut lock = Lockfile::new(ResolvedAt::from_unix(1_738_146_600).unwrap(), None);
    lock.files = local.files;
    lock.agents = local.agents;
    for m in local.models {
        lock.models.insert(ModelId::new(m).unwrap(), model());
    }
    for (name, req) in pkg.tool_requirements() {
        let version = ["1.0.0", "1.2.0", "2.0.0", "0.1.0"]
            .into_iter()
            .map(|v| Version::parse(v).unwrap())
            .find(|v| req.as_ref().is_none_or(|r| r.matches(v.semver())))
            .unwrap();
        lock.tools.insert(
            name.clone(),
            LockedTool {
                version,
                hash: Sha256Digest::of(name.as_str().as_bytes()),
                requirement: None,
                dependencies: BTreeSet::new(),
                log_index: None,
            },
        );
    }
    lock
}

fn with_lock(tree: &SourceTree, lock: &Lockfile) -> SourceTree {
    let mut tree = tree.clone();
    tree.insert(
        MemberPath::new("agent.lock").unwrap(),
        lock.to_yaml().unwrap().into_bytes(),
    );
    tree
}

/// (kind, field) of every problem the offline judgment finds in `tree`.
fn judged(tree: &SourceTree) -> Vec<(ProblemKind, String)> {
    let pkg = validated(tree);
    let mut found: Vec<_> = lockcheck::check(&pkg, &MemberHashes::from_tree(tree), None)
        .into_iter()
        .map(|p| (p.kind, p.field))
        .collect();
    found.sort();
    found
}

fn pack(tree: &SourceTree, prompt_key: Option<&PromptKey>) -> container::Container {
    let bytes = container::build(&BuildInput {
        tree,
        kind: Kind::Agent,
        name: &PackageName::new("research-assistant").unwrap(),
        version: &Version::parse("1.0.0").unwrap(),
        created: Created::from_unix_seconds(1_738_146_600).unwrap(),
        signing_key: &SecretKey::generate().unwrap(),
        prompt_key,
    })
    .unwrap();
    container::read(bytes.as_slice(), &Limits::default()).unwrap()
}

fn judged_packed(c: &container::Container) -> Vec<(ProblemKind, String)> {
    let Ok(Package::Agent(pkg)) = validate_package(Kind::Agent, &Members::from_container(c)) else {
        panic!("the container validates");
    };
    let mut found: Vec<_> =
        lockcheck::check(&pkg, &MemberHashes::from_manifest(c.manifest()), None)
            .into_iter()
            .map(|p| (p.kind, p.field))
            .collect();
    found.sort();
    found
}

fn one(kind: ProblemKind, field: &str) -> Vec<(ProblemKind, String)> {
    vec![(kind, field.to_owned())]
}

#[test]
fn what_lock_writes_passes_and_every_difference_fails_at_its_field() {
    let fixture = load_fixture("research-assistant");
    let truth = honest_lock(&fixture);
    assert!(truth.files.contains_key("prompt.yaml"));
    assert!(!truth.files.contains_key("specialists/market-analyst.yaml"));
    assert_eq!(judged(&with_lock(&fixture, &truth)), []);

    // Every agent carries a lock, tools or not.
    assert_eq!(judged(&fixture), one(ProblemKind::Missing, "agent.lock"));

    // `files: {}`: every member is uncovered.
    let mut lock = truth.clone();
    lock.files.clear();
    let found = judged(&with_lock(&fixture, &lock));
    assert_eq!(found.len(), truth.files.len(), "{found:?}");
    assert!(found.iter().all(|(k, _)| *k == ProblemKind::Files));
    assert!(found.contains(&(ProblemKind::Files, "files.agent.yaml".to_owned())));

    // One member not covered; one entry for no member; a subagent's file
    // under files (agents pins it); a hash that differs.
    let mut lock = truth.clone();
    lock.files.remove("ux.yaml");
    assert_eq!(
        judged(&with_lock(&fixture, &lock)),
        one(ProblemKind::Files, "files.ux.yaml")
    );
    let mut lock = truth.clone();
    lock.files.insert(
        MemberPath::new("notes.md").unwrap(),
        Sha256Digest::of(b"notes"),
    );
    let sub = MemberPath::new("specialists/market-analyst.yaml").unwrap();
    lock.files.insert(
        sub.clone(),
        Sha256Digest::of(fixture.get(sub.as_str()).unwrap()),
    );
    lock.files.insert(
        MemberPath::new("prompt.yaml").unwrap(),
        Sha256Digest::of(b"old prompt"),
    );
    assert_eq!(
        judged(&with_lock(&fixture, &lock)),
        [
            (ProblemKind::Files, "files.notes.md".to_owned()),
            (ProblemKind::Files, "files.prompt.yaml".to_owned()),
            (
                ProblemKind::Files,
                "files.specialists/market-analyst.yaml".to_owned()
            ),
        ]
    );

    // models: {} for an agent that declares claude-sonnet-4; a model no
    // agent declares.
    let mut lock = truth.clone();
    lock.models.clear();
    assert_eq!(
        judged(&with_lock(&fixture, &lock)),
        one(ProblemKind::ModelsUnlocked, "models.claude-sonnet-4")
    );
    let mut lock = truth.clone();
    lock.models.insert(ModelId::new("gpt-9").unwrap(), model());
    assert_eq!(
        judged(&with_lock(&fixture, &lock)),
        one(ProblemKind::Models, "models.gpt-9")
    );

    // A subagent unpinned; a direct tool requirement unpinned (offline).
    let mut lock = truth.clone();
    lock.agents
        .remove(&PackageName::new("market-analyst").unwrap());
    assert_eq!(
        judged(&with_lock(&fixture, &lock)),
        one(ProblemKind::Agents, "agents.market-analyst")
    );
    let mut lock = truth;
    lock.tools.remove(&PackageName::new("web_search").unwrap());
    assert_eq!(
        judged(&with_lock(&fixture, &lock)),
        one(ProblemKind::Unpinned, "tools.web_search")
    );
}

#[test]
fn a_container_is_judged_as_its_directory() {
    let fixture = load_fixture("research-assistant");
    let truth = honest_lock(&fixture);
    let mut broken = truth.clone();
    broken.models.clear();
    broken.files.remove("ux.yaml");
    for lock in [&truth, &broken] {
        let tree = with_lock(&fixture, lock);
        assert_eq!(judged_packed(&pack(&tree, None)), judged(&tree));
    }
    // Sealed: prompt.yaml.enc stands for prompt.yaml, whose plaintext hash
    // cannot be checked, but whose entry must be there.
    let key = PromptKey::generate().unwrap();
    let sealed = pack(&with_lock(&fixture, &truth), Some(&key));
    assert!(sealed.member("prompt.yaml").is_none());
    assert_eq!(judged_packed(&sealed), []);
    let mut lock = truth;
    lock.files.remove("prompt.yaml");
    let sealed = pack(&with_lock(&fixture, &lock), Some(&key));
    assert_eq!(
        judged_packed(&sealed),
        one(ProblemKind::Files, "files.prompt.yaml")
    );
}

#[test]
fn with_the_registry_requirements_are_judged_transitively() {
    let fixture = load_fixture("research-assistant");
    let truth = honest_lock(&fixture);
    let pkg = validated(&with_lock(&fixture, &truth));
    let hashes = MemberHashes::from_tree(&with_lock(&fixture, &truth));
    // A registry that holds none of the pins: each is named.
    let empty = PublishedTools::new();
    let facts = RegistryFacts {
        tools: &empty,
        skills: &empty,
        yanks: YankPolicy::Honour,
    };
    let problems = lockcheck::check(&pkg, &hashes, Some(&facts));
    assert!(!problems.is_empty());
    assert!(
        problems
            .iter()
            .all(|p| p.kind == ProblemKind::NotInRegistry && p.field.starts_with("tools.")),
        "{problems:?}"
    );
    // The CLI prints the registry's problem type after the message.
    assert!(problems[0].to_string().ends_with("[lock-mismatch]"));
}
