//! Publish accepts exactly what `validate` accepts, and an agent's lock
//! must tell the truth about the package and the registry: each kind of
//! failure answers with its own problem type, naming the tool or file.
//! Containers here are built by hand (core's builder, signed with the
//! test's key), never by the CLI, and each refusal is compared with what
//! `core::lockcheck::check`, the function the CLI calls, says of the same
//! package.

use std::collections::BTreeSet;

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created},
    crypt::PromptKey,
    digest::Sha256Digest,
    lockcheck::{self, MemberHashes, PublishedTool, PublishedTools, RegistryFacts, YankPolicy},
    lockfile::{LockedAgent, LockedModel, LockedSkill, LockedTool, Lockfile, ModelId, ResolvedAt},
    package::{Members, Package, validate_package},
};
use reqwest::{Method, StatusCode};
use semver::VersionReq;
use serde_json::{Value, json};

use crate::{
    publish::{PROMPT_YAML, agent, agent_with, agent_yaml, publish, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem, seed},
};

backend_tests!(
    a_broken_package_lists_every_problem_with_its_file,
    an_agent_that_requires_tools_must_carry_a_covering_lock,
    yanked_pins_need_the_previous_versions_lock,
    lock_files_subagents_and_models_must_match_the_package,
    a_resigned_container_breaking_each_rule_is_refused_as_the_cli_judges_it,
);

fn name(n: &str) -> PackageName {
    PackageName::new(n).unwrap()
}

/// A lock pinning `tools` at (version, hash).
fn lock_of(tools: &[(&str, &str, &str)]) -> Lockfile {
    let mut lock = Lockfile::new(ResolvedAt::from_unix(1_738_146_600).unwrap(), None);
    for (n, v, hash) in tools {
        lock.tools.insert(
            name(n),
            LockedTool {
                version: Version::parse(v).unwrap(),
                hash: Sha256Digest::parse_prefixed(hash).unwrap(),
                requirement: None,
                dependencies: BTreeSet::new(),
                log_index: None,
            },
        );
    }
    lock
}

fn yaml(lock: &Lockfile) -> String {
    lock.to_yaml().unwrap()
}

/// The problem's field errors as (field, message).
fn fields(body: &Value) -> Vec<(String, String)> {
    body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn refused(app: &TestApp, token: &str, bytes: Vec<u8>, slug: &str) -> Value {
    problem(
        publish(app, token, bytes).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        slug,
    )
    .await
}

async fn a_broken_package_lists_every_problem_with_its_file(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // The package the issue was filed with, plus a broken subagent in a
    // folder (which the registry used not to read at all).
    let agent_yaml = agent_yaml("helper", "1.0.0", &[]);
    let files: Vec<(&str, &[u8])> = vec![
        ("agent.yaml", agent_yaml.as_bytes()),
        ("prompt.yaml", PROMPT_YAML.as_bytes()),
        (
            "specialist.yaml",
            b"name: specialist\ndescription: Digs.\nversion: notsemver\nfavourite_colour: blue\n",
        ),
        (
            "skills/helper/SKILL.md",
            b"# Helper\n\nNo frontmatter at all.\n",
        ),
        ("specialists/deep.yaml", b"name: deep\n"),
    ];
    let bytes = agent_with(&alice.key, &agent_yaml, &files[1..]);
    let body = refused(&app, &alice.token, bytes, "validation-failed").await;

    // Exactly what the core function says of the same files as a directory.
    let mut tree = SourceTree::new();
    for (path, content) in &files {
        tree.insert(MemberPath::new(*path).unwrap(), content.to_vec());
    }
    let expected: BTreeSet<(String, String, String)> =
        validate_package(Kind::Agent, &Members::from_tree(&tree))
            .unwrap_err()
            .iter()
            .map(|d| {
                (
                    d.file.clone().unwrap_or_default(),
                    d.path.clone(),
                    d.message.clone(),
                )
            })
            .collect();
    let answered: BTreeSet<(String, String, String)> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["file"].as_str().unwrap().to_owned(),
                e["path"].as_str().unwrap().to_owned(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(answered, expected, "{body}");
    let files: BTreeSet<&str> = expected.iter().map(|(f, _, _)| f.as_str()).collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "skills/helper/SKILL.md",
            "specialist.yaml",
            "specialists/deep.yaml"
        ]),
        "{body}"
    );
    assert!(
        expected
            .iter()
            .any(|(f, p, _)| f == "specialist.yaml" && p == "version"),
        "{expected:?}"
    );
    assert!(
        expected.iter().any(|(f, p, m)| f == "specialist.yaml"
            && (p.contains("favourite_colour") || m.contains("favourite_colour"))),
        "{expected:?}"
    );
    // Nothing was stored.
    assert_eq!(
        app.get("/api/v1/agents/helper").await.status(),
        StatusCode::NOT_FOUND
    );

    // A tool whose readme is not in the container is refused the same way.
    let tool_yaml = "name: fetcher\nversion: 1.0.0\ndescription: Fetches.\nkind: builtin\nreadme: docs/USAGE.md\ninput_schema:\n  type: object\n";
    let bytes = crate::publish::build(
        &alice.key,
        Kind::Tool,
        "fetcher",
        "1.0.0",
        &[("tool.yaml", tool_yaml.as_bytes())],
        1_738_146_600,
    );
    let body = refused(&app, &alice.token, bytes, "validation-failed").await;
    assert_eq!(body["errors"][0]["file"], "tool.yaml");
    assert_eq!(body["errors"][0]["path"], "readme");
}

async fn an_agent_that_requires_tools_must_carry_a_covering_lock(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let fetch = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    let search = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_search", "1.2.0", &[("web_fetch", "^1.0")]),
    )
    .await;
    let stray = published(&app, &alice.token, tool(&alice.key, "stray", "1.0.0", &[])).await;
    let hash = |v: &Value| v["hash"].as_str().unwrap().to_owned();
    let (fetch, search, stray) = (hash(&fetch), hash(&search), hash(&stray));
    let yaml_req = |req: &str| agent_yaml("helper", "1.0.0", &[("web_search", req)]);
    let needs = yaml_req("^1.0.0");
    let lock = |tools: &[(&str, &str, &str)]| yaml(&lock_of(tools));

    // No lock at all.
    let body = refused(
        &app,
        &alice.token,
        agent_with(
            &alice.key,
            &needs,
            &[("prompt.yaml", PROMPT_YAML.as_bytes())],
        ),
        "lock-missing",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "agent.lock");
    assert!(fields(&body)[0].1.contains("web_search"), "{body}");

    // A lock that pins nothing.
    let body = refused(
        &app,
        &alice.token,
        agent(&alice.key, &needs, Some(&lock(&[]))),
        "lock-unpinned",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "tools.web_search");

    // web_search pinned, but not what it depends on.
    let body = refused(
        &app,
        &alice.token,
        agent(
            &alice.key,
            &needs,
            Some(&lock(&[("web_search", "1.2.0", &search)])),
        ),
        "lock-unpinned",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "tools.web_fetch", "{body}");
    assert!(
        fields(&body)[0]
            .1
            .contains("web_search 1.2.0 depends on web_fetch"),
        "{body}"
    );

    let complete = [
        ("web_search", "1.2.0", search.as_str()),
        ("web_fetch", "1.0.3", fetch.as_str()),
    ];
    // A pin that does not satisfy the agent's requirement.
    let body = refused(
        &app,
        &alice.token,
        agent(&alice.key, &yaml_req("^1.3"), Some(&lock(&complete))),
        "lock-unsatisfied",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "tools.web_search");

    // A pin nothing asks for.
    let mut with_stray = complete.to_vec();
    with_stray.push(("stray", "1.0.0", stray.as_str()));
    let body = refused(
        &app,
        &alice.token,
        agent(&alice.key, &needs, Some(&lock(&with_stray))),
        "lock-unrelated",
    )
    .await;
    assert_eq!(
        fields(&body),
        [(
            "tools.stray".to_owned(),
            "stray 1.0.0 is pinned, but neither the agent nor any pinned tool requires it"
                .to_owned()
        )]
    );

    // Pins the registry does not hold: a wrong hash, an unknown tool.
    let zero = format!("sha256:{}", "0".repeat(64));
    let body = refused(
        &app,
        &alice.token,
        agent(
            &alice.key,
            &needs,
            Some(&lock(&[
                ("web_search", "1.2.0", &search),
                ("web_fetch", "1.0.3", &zero),
            ])),
        ),
        "lock-mismatch",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "tools.web_fetch");
    assert!(fields(&body)[0].1.contains(&fetch), "{body}");
    let body = refused(
        &app,
        &alice.token,
        agent(
            &alice.key,
            &agent_yaml("helper", "1.0.0", &[("ghost", "*")]),
            Some(&lock(&[("ghost", "1.0.0", &zero)])),
        ),
        "lock-mismatch",
    )
    .await;
    assert_eq!(
        fields(&body)[0].1,
        "no tool named ghost is published on this registry"
    );

    // The truth is stored with the version, and nothing refused was.
    let body = published(
        &app,
        &alice.token,
        agent(&alice.key, &needs, Some(&lock(&complete))),
    )
    .await;
    assert_eq!(body["lockfile"]["tools"]["web_fetch"]["version"], "1.0.3");
    assert_eq!(body["dependencies"], json!({"web_search": "^1.0.0"}));
    let versions: Value = app.get("/api/v1/agents/helper").await.json().await.unwrap();
    assert_eq!(versions["versions"].as_array().unwrap().len(), 1);
}

async fn yanked_pins_need_the_previous_versions_lock(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let sqlite = published(&app, &alice.token, tool(&alice.key, "sqlite", "1.0.0", &[])).await;
    let lock = yaml(&lock_of(&[(
        "sqlite",
        "1.0.0",
        sqlite["hash"].as_str().unwrap(),
    )]));
    let helper = |v: &str| agent_yaml("helper", v, &[("sqlite", "^1")]);
    published(
        &app,
        &alice.token,
        agent(&alice.key, &helper("1.0.0"), Some(&lock)),
    )
    .await;
    let res = app
        .request(Method::POST, "/api/v1/tools/sqlite/1.0.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({"reason": "corrupts tables"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // The previous version pinned it: the next one may keep it.
    published(
        &app,
        &alice.token,
        agent(&alice.key, &helper("1.1.0"), Some(&lock)),
    )
    .await;
    // A new agent may not start depending on a yanked version.
    let body = refused(
        &app,
        &alice.token,
        agent(
            &alice.key,
            &agent_yaml("fresh", "1.0.0", &[("sqlite", "^1")]),
            Some(&lock),
        ),
        "lock-yanked",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "tools.sqlite");
    // Nor may a version below one that never pinned it: 1.0.5's previous
    // version is 1.0.0, which did pin it, so that one passes...
    published(
        &app,
        &alice.token,
        agent(&alice.key, &helper("1.0.5"), Some(&lock)),
    )
    .await;
    // ...while an agent whose previous lock pinned another version is refused.
    let other = published(&app, &alice.token, tool(&alice.key, "sqlite", "1.1.0", &[])).await;
    let newer = yaml(&lock_of(&[(
        "sqlite",
        "1.1.0",
        other["hash"].as_str().unwrap(),
    )]));
    published(
        &app,
        &alice.token,
        agent(&alice.key, &helper("2.0.0"), Some(&newer)),
    )
    .await;
    refused(
        &app,
        &alice.token,
        agent(&alice.key, &helper("2.1.0"), Some(&lock)),
        "lock-yanked",
    )
    .await;
}

async fn lock_files_subagents_and_models_must_match_the_package(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let agent_yaml = agent_yaml("helper", "1.0.0", &[]);
    let analyst = b"name: analyst\ndescription: Reads markets.\n".as_slice();
    let truth = || {
        let mut lock = lock_of(&[]);
        lock.files.insert(
            MemberPath::new("agent.yaml").unwrap(),
            Sha256Digest::of(agent_yaml.as_bytes()),
        );
        lock.files.insert(
            MemberPath::new("prompt.yaml").unwrap(),
            Sha256Digest::of(PROMPT_YAML.as_bytes()),
        );
        lock.agents.insert(
            name("analyst"),
            LockedAgent {
                version: Version::parse("1.0.0").unwrap(),
                hash: Sha256Digest::of(analyst),
            },
        );
        lock.models.insert(
            ModelId::new("claude-sonnet-4").unwrap(),
            LockedModel {
                context_window: 200_000,
                supports_tools: true,
                input_1m_price: None,
                output_1m_price: None,
            },
        );
        lock
    };
    let with_lock = |lock: &Lockfile| {
        let text = yaml(lock);
        agent_with(
            &alice.key,
            &agent_yaml,
            &[
                ("prompt.yaml", PROMPT_YAML.as_bytes()),
                ("specialists/analyst.yaml", analyst),
                ("agent.lock", text.as_bytes()),
            ],
        )
    };

    let mut lock = truth();
    lock.files.insert(
        MemberPath::new("agent.yaml").unwrap(),
        Sha256Digest::of(b"something else"),
    );
    lock.files.insert(
        MemberPath::new("notes.md").unwrap(),
        Sha256Digest::of(b"notes"),
    );
    let body = refused(&app, &alice.token, with_lock(&lock), "lock-files-mismatch").await;
    let named: Vec<String> = fields(&body).into_iter().map(|f| f.0).collect();
    assert_eq!(named, ["files.agent.yaml", "files.notes.md"], "{body}");

    let mut lock = truth();
    lock.agents.get_mut(&name("analyst")).unwrap().hash = Sha256Digest::of(b"old");
    lock.agents.insert(
        name("ghostwriter"),
        LockedAgent {
            version: Version::parse("1.0.0").unwrap(),
            hash: Sha256Digest::of(b"x"),
        },
    );
    let body = refused(&app, &alice.token, with_lock(&lock), "lock-agents-mismatch").await;
    let named: Vec<String> = fields(&body).into_iter().map(|f| f.0).collect();
    assert_eq!(named, ["agents.analyst", "agents.ghostwriter"], "{body}");

    let mut lock = truth();
    lock.agents.clear();
    let body = refused(&app, &alice.token, with_lock(&lock), "lock-agents-mismatch").await;
    assert!(fields(&body)[0].1.contains("is not pinned"), "{body}");

    let mut lock = truth();
    lock.models.insert(
        ModelId::new("gpt-9").unwrap(),
        LockedModel {
            context_window: 1,
            supports_tools: false,
            input_1m_price: None,
            output_1m_price: None,
        },
    );
    let body = refused(
        &app,
        &alice.token,
        with_lock(&lock),
        "lock-models-undeclared",
    )
    .await;
    assert_eq!(fields(&body)[0].0, "models.gpt-9");

    // With the prompt encrypted, its plaintext hash cannot be checked: the
    // lock's entry for prompt.yaml is accepted as it stands.
    let lock_text = yaml(&truth());
    let mut tree = SourceTree::new();
    for (path, bytes) in [
        ("agent.yaml", agent_yaml.as_bytes()),
        ("prompt.yaml", PROMPT_YAML.as_bytes()),
        ("specialists/analyst.yaml", analyst),
        ("agent.lock", lock_text.as_bytes()),
    ] {
        tree.insert(MemberPath::new(path).unwrap(), bytes.to_vec());
    }
    let prompt_key = PromptKey::generate().unwrap();
    let encrypted = container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Agent,
        name: &name("helper"),
        version: &Version::parse("1.0.0").unwrap(),
        created: Created::from_unix_seconds(1_738_146_600).unwrap(),
        signing_key: &alice.key,
        prompt_key: Some(&prompt_key),
    })
    .unwrap();
    let body = published(&app, &alice.token, encrypted).await;
    assert_eq!(body["lockfile"]["agents"]["analyst"]["version"], "1.0.0");
}

/// One hand-built container breaking one rule of the lock.
struct Case {
    what: &'static str,
    /// The package's members, agent.lock aside.
    files: Vec<(&'static str, Vec<u8>)>,
    /// The lock it carries (none: no agent.lock at all).
    lock: Option<Lockfile>,
    slug: &'static str,
    fields: &'static [&'static str],
}

fn tree_of(files: &[(&str, Vec<u8>)]) -> SourceTree {
    files
        .iter()
        .map(|(p, b)| (MemberPath::new(*p).unwrap(), b.clone()))
        .collect()
}

/// What `core::lockcheck::check` answers for the package (as a directory
/// packs it), with the registry's facts as install reads them from the
/// index: the first kind's slug and its fields.
fn judged_by_core(tree: &SourceTree, facts: Option<&RegistryFacts<'_>>) -> (String, Vec<String>) {
    let Ok(Package::Agent(pkg)) = validate_package(Kind::Agent, &Members::from_tree(tree)) else {
        panic!("the case's package validates");
    };
    let problems = lockcheck::check(&pkg, &MemberHashes::from_tree(tree), facts);
    let (kind, of_kind) = lockcheck::first_kind(&problems).expect("core finds a problem");
    let mut fields: Vec<String> = of_kind.iter().map(|p| p.field.clone()).collect();
    fields.sort();
    (kind.slug().to_owned(), fields)
}

async fn a_resigned_container_breaking_each_rule_is_refused_as_the_cli_judges_it(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let fetch = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    let search = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_search", "1.2.0", &[("web_fetch", "^1.0")]),
    )
    .await;
    let skill_md = "---\nname: pdf-tools\ndescription: Extracts text from PDFs.\nlicense: MIT\nmetadata:\n  version: 0.1.0\n---\n# pdf-tools\n";
    let pdf = published(
        &app,
        &alice.token,
        crate::publish::build(
            &alice.key,
            Kind::Skill,
            "pdf-tools",
            "0.1.0",
            &[("SKILL.md", skill_md.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;
    let hash = |v: &Value| Sha256Digest::parse_prefixed(v["hash"].as_str().unwrap()).unwrap();
    let (fetch, search, pdf) = (hash(&fetch), hash(&search), hash(&pdf));

    // The registry's facts, as install reads them from the index.
    let mut tools = PublishedTools::new();
    tools.insert(
        &name("web_fetch"),
        vec![PublishedTool {
            version: Version::parse("1.0.3").unwrap(),
            hash: fetch,
            yanked: false,
            dependencies: Default::default(),
        }],
    );
    tools.insert(
        &name("web_search"),
        vec![PublishedTool {
            version: Version::parse("1.2.0").unwrap(),
            hash: search,
            yanked: false,
            dependencies: [(name("web_fetch"), VersionReq::parse("^1.0").unwrap())].into(),
        }],
    );
    let mut skills = PublishedTools::new();
    skills.insert(
        &name("pdf-tools"),
        vec![PublishedTool {
            version: Version::parse("0.1.0").unwrap(),
            hash: pdf,
            yanked: false,
            dependencies: Default::default(),
        }],
    );
    let facts = RegistryFacts {
        tools: &tools,
        skills: &skills,
        yanks: YankPolicy::RefuseUnlessPinnedBy(None),
    };

    let pin = |lock: &mut Lockfile, tool: &str, version: &str, hash: Sha256Digest| {
        lock.tools.insert(
            name(tool),
            LockedTool {
                version: Version::parse(version).unwrap(),
                hash,
                requirement: None,
                dependencies: BTreeSet::new(),
                log_index: None,
            },
        );
    };
    let plain = |yaml: String| {
        vec![
            ("agent.yaml", yaml.into_bytes()),
            ("prompt.yaml", PROMPT_YAML.as_bytes().to_vec()),
        ]
    };
    // The lock `agentlang lock` would write for `files`, with `edit` applied.
    let honest = |files: &[(&str, Vec<u8>)], edit: &dyn Fn(&mut Lockfile)| {
        let mut lock = seed::complete_lock(&tree_of(files), seed::empty_lock());
        edit(&mut lock);
        Some(lock)
    };
    let alone = agent_yaml("helper", "1.0.0", &[]);
    let needs_search = agent_yaml("helper", "1.0.0", &[("web_search", "^1.2")]);
    let with_skill = format!("{alone}skills:\n  - name: pdf-tools\n    version: ^0.1\n");
    let mut with_context = plain(alone.clone());
    with_context.push(("context/notes.md", b"# Notes\n".to_vec()));
    let mut with_subagent = plain(alone.clone());
    with_subagent.push((
        "specialists/analyst.yaml",
        b"name: analyst\ndescription: Reads markets.\n".to_vec(),
    ));

    let cases = vec![
        Case {
            what: "an agent without registry tools and without a lock",
            files: plain(alone.clone()),
            lock: None,
            slug: "lock-missing",
            fields: &["agent.lock"],
        },
        Case {
            what: "files: {}",
            files: plain(alone.clone()),
            lock: honest(&plain(alone.clone()), &|l| l.files.clear()),
            slug: "lock-files-mismatch",
            fields: &["files.agent.yaml", "files.prompt.yaml"],
        },
        Case {
            what: "a member files does not cover",
            files: with_context.clone(),
            lock: honest(&plain(alone.clone()), &|_| {}),
            slug: "lock-files-mismatch",
            fields: &["files.context/notes.md"],
        },
        Case {
            what: "a files entry for no member",
            files: plain(alone.clone()),
            lock: honest(&with_context, &|_| {}),
            slug: "lock-files-mismatch",
            fields: &["files.context/notes.md"],
        },
        Case {
            what: "models: {} for an agent that declares claude-sonnet-4",
            files: plain(alone.clone()),
            lock: honest(&plain(alone.clone()), &|l| l.models.clear()),
            slug: "lock-models-missing",
            fields: &["models.claude-sonnet-4"],
        },
        Case {
            what: "a model no agent declares",
            files: plain(alone.clone()),
            lock: honest(&plain(alone.clone()), &|l| {
                l.models.insert(
                    ModelId::new("gpt-9").unwrap(),
                    l.models.values().next().unwrap().clone(),
                );
            }),
            slug: "lock-models-undeclared",
            fields: &["models.gpt-9"],
        },
        Case {
            what: "a tool requirement unpinned",
            files: plain(needs_search.clone()),
            lock: honest(&plain(needs_search.clone()), &|_| {}),
            slug: "lock-unpinned",
            fields: &["tools.web_search"],
        },
        Case {
            what: "a pinned tool's requirement unpinned",
            files: plain(needs_search.clone()),
            lock: honest(&plain(needs_search.clone()), &|l| {
                pin(l, "web_search", "1.2.0", search)
            }),
            slug: "lock-unpinned",
            fields: &["tools.web_fetch"],
        },
        Case {
            what: "a subagent unpinned",
            files: with_subagent.clone(),
            lock: honest(&with_subagent, &|l| l.agents.clear()),
            slug: "lock-agents-mismatch",
            fields: &["agents.analyst"],
        },
        Case {
            what: "a skill package unpinned",
            files: plain(with_skill.clone()),
            lock: honest(&plain(with_skill.clone()), &|_| {}),
            slug: "lock-unpinned",
            fields: &["skills.pdf-tools"],
        },
    ];
    for case in cases {
        let mut files = case.files.clone();
        if let Some(lock) = &case.lock {
            files.push(("agent.lock", lock.to_yaml().unwrap().into_bytes()));
        }
        let borrowed: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
        let bytes = crate::publish::build(
            &alice.key,
            Kind::Agent,
            "helper",
            "1.0.0",
            &borrowed,
            1_738_146_600,
        );
        let body = refused(&app, &alice.token, bytes, case.slug).await;
        let mut answered: Vec<String> = fields(&body).into_iter().map(|f| f.0).collect();
        answered.sort();
        assert_eq!(answered, case.fields, "{}: {body}", case.what);

        // The function the CLI calls says the same of the same package.
        let tree = tree_of(&files);
        assert_eq!(
            judged_by_core(&tree, Some(&facts)),
            (case.slug.to_owned(), answered.clone()),
            "{}",
            case.what
        );
        // And so does validate's offline judgment, unless the rule needs
        // the registry's facts (a pinned tool's own requirements).
        if case.fields != ["tools.web_fetch"] {
            assert_eq!(
                judged_by_core(&tree, None),
                (case.slug.to_owned(), answered),
                "{} (offline)",
                case.what
            );
        }
    }
    // Nothing refused was stored; the honest package publishes.
    assert_eq!(
        app.get("/api/v1/agents/helper").await.status(),
        StatusCode::NOT_FOUND
    );
    let files = plain(with_skill.clone());
    let mut lock = seed::complete_lock(&tree_of(&files), seed::empty_lock());
    lock.skills.insert(
        name("pdf-tools"),
        LockedSkill {
            version: Version::parse("0.1.0").unwrap(),
            hash: pdf,
            requirement: VersionReq::parse("^0.1").unwrap(),
            log_index: None,
        },
    );
    let mut files = files;
    files.push(("agent.lock", lock.to_yaml().unwrap().into_bytes()));
    let borrowed: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    published(
        &app,
        &alice.token,
        crate::publish::build(
            &alice.key,
            Kind::Agent,
            "helper",
            "1.0.0",
            &borrowed,
            1_738_146_600,
        ),
    )
    .await;
}
