//! One validation for a directory and a container: `validate_package` sees
//! both through `Members`, so a package says the same of itself before and
//! after it is packed; and the hand-off built from a real package matches
//! its JSON Schema.

mod agent_support;

use agent_support::load_fixture;
use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created, Limits},
    crypt::PromptKey,
    handoff::{self, HandoffInput, SCHEMA},
    host::{self, HostProfile},
    lockcheck::{self, MemberHashes},
    package::{Members, Package, validate_package},
    prompt::{Format, parse_prompt},
    signing::SecretKey,
};

fn pack(tree: &SourceTree, name: &str, prompt_key: Option<&PromptKey>) -> container::Container {
    let key = SecretKey::generate().unwrap();
    let bytes = container::build(&BuildInput {
        tree,
        kind: Kind::Agent,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse("1.0.0").unwrap(),
        created: Created::from_unix_seconds(1_738_146_600).unwrap(),
        signing_key: &key,
        prompt_key,
    })
    .unwrap();
    container::read(bytes.as_slice(), &Limits::default()).unwrap()
}

fn with(tree: &SourceTree, files: &[(&str, &str)]) -> SourceTree {
    let mut tree = tree.clone();
    for (path, text) in files {
        tree.insert(MemberPath::new(*path).unwrap(), text.as_bytes().to_vec());
    }
    tree
}

#[test]
fn a_container_validates_exactly_as_its_directory() {
    let fixture = load_fixture("research-assistant");
    // Valid, with the subagents in a folder: both forms pass, equally.
    let packed = pack(&fixture, "research-assistant", None);
    let from_dir = validate_package(Kind::Agent, &Members::from_tree(&fixture)).unwrap();
    let from_container = validate_package(Kind::Agent, &Members::from_container(&packed)).unwrap();
    assert_eq!(from_dir, from_container);

    // Broken in a subfolder subagent, a skill and ux.yaml: the same problems.
    let broken = with(
        &fixture,
        &[
            (
                "specialists/market-analyst.yaml",
                "name: market-analyst\ndescription: x\nversion: notsemver\ncolour: blue\n",
            ),
            ("skills/test-helper/SKILL.md", "no frontmatter\n"),
            ("ux.yaml", "tools:\n  nobody_declares_me: {}\n"),
        ],
    );
    let packed = pack(&broken, "research-assistant", None);
    let from_dir = validate_package(Kind::Agent, &Members::from_tree(&broken)).unwrap_err();
    let from_container =
        validate_package(Kind::Agent, &Members::from_container(&packed)).unwrap_err();
    assert_eq!(from_dir, from_container);
    let files: Vec<&str> = from_dir.iter().filter_map(|d| d.file.as_deref()).collect();
    for file in [
        "specialists/market-analyst.yaml",
        "skills/test-helper/SKILL.md",
        "ux.yaml",
    ] {
        assert!(files.contains(&file), "{file} not reported: {from_dir}");
    }

    // Encrypted, the prompt is present but unreadable: still valid.
    let key = PromptKey::generate().unwrap();
    let sealed = pack(&fixture, "research-assistant", Some(&key));
    assert!(sealed.member("prompt.yaml").is_none());
    assert!(matches!(
        validate_package(Kind::Agent, &Members::from_container(&sealed)),
        Ok(Package::Agent(_))
    ));
}

#[test]
fn a_handoff_of_the_research_assistant_matches_its_schema() {
    let fixture = load_fixture("research-assistant");
    let Ok(Package::Agent(pkg)) = validate_package(Kind::Agent, &Members::from_tree(&fixture))
    else {
        panic!("the fixture validates");
    };
    // The fixture carries no lock yet.
    let problems = lockcheck::check(&pkg, &MemberHashes::from_tree(&fixture), None);
    assert_eq!(problems.len(), 1);
    assert_eq!(
        problems[0].kind,
        agentlang_core::lockcheck::ProblemKind::Missing
    );
    let prompt = parse_prompt(fixture.get("prompt.yaml").unwrap()).unwrap();
    let host = HostProfile::find_builtin("mobile-app").unwrap();
    let report = host::check(host, &host::requests(&pkg, &[]));
    let env = |name: &str| Some(format!("value-of-{name}"));
    let doc = handoff::build(&HandoffInput {
        package: &pkg,
        agent_hash: None,
        prompt: &prompt,
        format: Format::Xml,
        user_prompt: "Research X",
        tools: &[],
        skills: &[],
        host: &report,
        install_dir: "/tmp/ra",
        env: &env,
    })
    .unwrap();
    let json = serde_json::to_value(&doc).unwrap();
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        json["mcp_servers"]["Stripe"]["env"]["STRIPE_SECRET_KEY"],
        "value-of-STRIPE_SECRET_KEY"
    );
    assert!(
        json["prompt"]["system"]
            .as_str()
            .unwrap()
            .starts_with("<mindset>")
    );
    let filesystem = json["host"]["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["capability"] == "filesystem")
        .unwrap();
    assert_eq!(filesystem["outcome"], "degraded");
    // Something the schema forbids is caught by it.
    let mut wrong = json.clone();
    wrong["constraints"]["limits"]["max_delegation_depth"] = serde_json::json!("three");
    assert!(!validator.is_valid(&wrong));
    // Round trip: a Rust runtime can read the document back.
    let back: handoff::Handoff = serde_json::from_value(json).unwrap();
    assert_eq!(back, doc);
}
