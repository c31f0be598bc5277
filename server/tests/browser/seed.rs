//! Real signed containers built from `core/tests/fixtures/` and stored the
//! way publish stores them: the blob first, then the rows
//! (`db::publish_version`) with the parsed spec, lock and manifest as JSON.
//!
//! Shared by the browser tests and the API-level catalog tests
//! (`#[path]`-included there).

#![allow(dead_code)]

use std::{collections::BTreeSet, path::Path};

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created, Limits},
    lockfile::{LockedAgent, LockedTool, Lockfile, ResolvedAt, Sha256Hash},
    signing::SecretKey,
};
use agentlang_registry::{
    db::packages::{DependencyEdge, NewVersion},
    service::packages::ContainerExtras,
    state::AppState,
};
use bytes::Bytes;
use serde_json::{Value, json};

pub const PUBLISHER: &str = "alice";
pub const PASSWORD: &str = "password-123";
pub const AGENT: &str = "research-assistant";

/// What the seed published.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub key_id: String,
    pub agent_sha256: String,
    pub web_search_sha256: String,
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures")
}

fn read_tree(dir: &Path) -> SourceTree {
    fn walk(root: &Path, dir: &Path, tree: &mut SourceTree) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("fixture dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, tree);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                tree.insert(MemberPath::new(rel).unwrap(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut tree = SourceTree::new();
    walk(dir, dir, &mut tree);
    tree
}

fn build(tree: &SourceTree, kind: Kind, name: &str, version: &str, key: &SecretKey) -> Vec<u8> {
    container::build(&BuildInput {
        tree,
        kind,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse(version).unwrap(),
        created: Created::parse("2026-01-29T10:30:00Z").unwrap(),
        signing_key: key,
        prompt_key: None,
    })
    .expect("fixture containers build")
}

fn tool_tree(file: &str, version: &str, readme: &str) -> SourceTree {
    let yaml = std::fs::read_to_string(fixtures().join("tools").join(file)).unwrap();
    // The fixtures' versions are fixed; the seed picks its own.
    let yaml = yaml
        .lines()
        .map(|l| {
            if l.starts_with("version:") {
                format!("version: {version}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let yaml = if yaml.contains("readme:") {
        yaml
    } else {
        format!("{yaml}\nreadme: README.md\n")
    };
    [
        (MemberPath::new("tool.yaml").unwrap(), yaml.into_bytes()),
        (
            MemberPath::new("README.md").unwrap(),
            readme.as_bytes().to_vec(),
        ),
    ]
    .into_iter()
    .collect()
}

/// Stores a container as publish does: blob, then one transaction of rows.
pub async fn store(state: &AppState, kind: Kind, bytes: Vec<u8>, publisher: i64) -> String {
    let read = container::read(&bytes[..], &Limits::default()).expect("container reads");
    let manifest: Value = serde_json::from_slice(read.manifest_bytes()).unwrap();
    let name = read.manifest().name().clone();
    let version = read.manifest().version().clone();
    let signer = read.manifest().signer().to_string();
    let (spec, lock, deps, description) = match kind {
        Kind::Agent => {
            let spec = agentlang_core::agent::parse_agent(read.member("agent.yaml").unwrap())
                .expect("agent.yaml parses");
            let lock = read.member("agent.lock").map(|b| {
                serde_json::to_value(Lockfile::from_slice(b).expect("lock parses")).unwrap()
            });
            let deps = spec
                .tool_requirements()
                .into_iter()
                .map(|(name, req)| DependencyEdge {
                    kind: Kind::Tool,
                    name,
                    requirement: req.unwrap_or(semver::VersionReq::STAR),
                })
                .collect::<Vec<_>>();
            let description = spec.description.clone().unwrap_or_default();
            (
                serde_json::to_value(&spec).unwrap(),
                lock,
                deps,
                description,
            )
        }
        _ => {
            let spec = agentlang_core::tool::parse_tool(read.member("tool.yaml").unwrap())
                .expect("tool.yaml parses");
            let deps = spec
                .dependency_requirements()
                .into_iter()
                .map(|(name, requirement)| DependencyEdge {
                    kind: Kind::Tool,
                    name,
                    requirement,
                })
                .collect::<Vec<_>>();
            let description = spec.description().to_owned();
            (
                serde_json::to_value(&spec).unwrap(),
                None,
                deps,
                description,
            )
        }
    };
    // As publish does: what the validated agent asks hosts for, too.
    let mut extras = ContainerExtras::of(kind, &read);
    if kind == Kind::Agent {
        let members = agentlang_core::package::Members::from_container(&read);
        let pkg =
            agentlang_core::package::validate_agent(&members).expect("the seed agent validates");
        extras = extras.with_host_requests(&pkg);
    }
    let extras = extras.to_stored();
    let size = bytes.len() as u64;
    let digest = state
        .blobs
        .put(Bytes::from(bytes))
        .await
        .expect("blob stored");
    state
        .db
        .publish_version(&NewVersion {
            kind,
            name: &name,
            version: &version,
            sha256: &digest,
            size,
            signer_key_id: Some(&signer),
            manifest: &manifest,
            spec: &spec,
            lockfile: lock.as_ref(),
            quality_report: None,
            extras: Some(&extras),
            dependencies: &deps,
            description: &description,
            keywords: &[],
            publisher,
        })
        .await
        .expect("version stored");
    digest.to_string()
}

/// The research assistant's tree at `version`, with an `agent.lock` pinning
/// the seeded tools; `extra_optional` adds capabilities to `optional:`.
fn agent_tree(
    version: &str,
    pins: &[(&str, &str, &[u8], &str)],
    extra_optional: &[&str],
) -> SourceTree {
    let mut tree = read_tree(&fixtures().join("agents").join(AGENT));
    let yaml = String::from_utf8(tree.get("agent.yaml").unwrap().to_vec()).unwrap();
    let mut out = Vec::new();
    for line in yaml.lines() {
        if line.starts_with("version:") {
            out.push(format!("version: {version}"));
            continue;
        }
        out.push(line.to_owned());
        if line == "  optional:" {
            for capability in extra_optional {
                out.push(format!("    - {capability}"));
            }
        }
    }
    tree.insert(
        MemberPath::new("agent.yaml").unwrap(),
        (out.join("\n") + "\n").into_bytes(),
    );
    let mut lock = Lockfile::new(ResolvedAt::from_unix(1_769_682_600).unwrap(), None);
    for (tool, locked, bytes, requirement) in pins {
        lock.tools.insert(
            PackageName::new(*tool).unwrap(),
            LockedTool {
                version: Version::parse(locked).unwrap(),
                hash: Sha256Hash::digest(bytes),
                requirement: Some(requirement.parse().unwrap()),
                dependencies: BTreeSet::new(),
            },
        );
    }
    // Co-located subagents are locked by their file's hash, as the CLI does.
    let subagents: Vec<(String, Vec<u8>)> = tree
        .iter()
        .filter_map(|(path, bytes)| {
            let file = path.as_str().strip_prefix("specialists/")?;
            Some((file.trim_end_matches(".yaml").to_owned(), bytes.to_vec()))
        })
        .collect();
    for (name, bytes) in subagents {
        lock.agents.insert(
            PackageName::new(name).unwrap(),
            LockedAgent {
                version: Version::parse("1.0.0").unwrap(),
                hash: Sha256Hash::digest(&bytes),
            },
        );
    }
    tree.insert(
        MemberPath::new("agent.lock").unwrap(),
        lock.to_yaml().unwrap().into_bytes(),
    );
    tree
}

/// Creates the publisher (over HTTP) and its key, and publishes web_fetch
/// 1.0.3, web_search 1.2.0 and the research assistant 1.0.0 and 1.1.0 (which
/// adds the Critical `wallet` capability).
pub async fn seed_catalog(state: &AppState, base_url: &str, client: &reqwest::Client) -> Seeded {
    let res = client
        .post(format!("{base_url}/api/v1/accounts"))
        .json(&json!({"username": PUBLISHER, "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201, "{}", res.text().await.unwrap());
    let username = agentlang_registry::common::names::Username::parse(PUBLISHER).unwrap();
    let publisher = state.db.find_account(&username).await.unwrap().unwrap().id;
    let key = SecretKey::generate().unwrap();
    let public = key.public_key();
    let key_id = public.key_id();
    state
        .db
        .insert_signing_key(&key_id, publisher, &public.to_spki_pem())
        .await
        .unwrap();

    let web_fetch = build(
        &tool_tree(
            "web_fetch.tool.yaml",
            "1.0.3",
            "# web_fetch\n\nFetches one URL.\n",
        ),
        Kind::Tool,
        "web_fetch",
        "1.0.3",
        &key,
    );
    let web_search = build(
        &tool_tree(
            "web_search.tool.yaml",
            "1.2.0",
            "# web_search\n\nSearch the web. Returns **ranked** results.\n",
        ),
        Kind::Tool,
        "web_search",
        "1.2.0",
        &key,
    );
    let pins: [(&str, &str, &[u8], &str); 2] = [
        ("web_search", "1.2.0", &web_search, "^1.2.0"),
        ("web_fetch", "1.0.3", &web_fetch, "~1.0.0"),
    ];
    let agent_1_0 = build(
        &agent_tree("1.0.0", &pins, &[]),
        Kind::Agent,
        AGENT,
        "1.0.0",
        &key,
    );
    let agent_1_1 = build(
        &agent_tree("1.1.0", &pins, &["wallet"]),
        Kind::Agent,
        AGENT,
        "1.1.0",
        &key,
    );
    store(state, Kind::Tool, web_fetch, publisher).await;
    let web_search_sha256 = store(state, Kind::Tool, web_search, publisher).await;
    let agent_sha256 = store(state, Kind::Agent, agent_1_0, publisher).await;
    store(state, Kind::Agent, agent_1_1, publisher).await;
    Seeded {
        key_id: key_id.to_string(),
        agent_sha256,
        web_search_sha256,
    }
}
