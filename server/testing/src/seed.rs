//! Seeding: accounts, tokens and signing keys over HTTP (either form of
//! registry); containers; versions and the catalog of real signed
//! containers built from `core/tests/fixtures/`, stored the way publish
//! stores them (the blob first, then the rows) straight into an in-process
//! registry's storage.

use std::{collections::BTreeSet, path::Path};

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created, Limits},
    lockcheck,
    lockfile::{LockedModel, LockedTool, Lockfile, ModelId, ResolvedAt},
    package::{LOCK_FILE, Members, Package, validate_package},
    signing::SecretKey,
    tlog::LogOp,
};
use agentlang_core::{Username, digest::Sha256Digest};
use app::{packages::ContainerExtras, tlog};
use bytes::Bytes;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use store::{
    accounts::AccountRecord,
    packages::{DependencyEdge, NewVersion, PublishError, PublishedVersion},
};

use crate::app::{Store, TestApp, User};

/// Every seeded account's password.
pub const PASSWORD: &str = "password-123";
/// The catalog's publisher and agent.
pub const PUBLISHER: &str = "alice";
pub const AGENT: &str = "research-assistant";

/// The proof of possession a key registration for `username` on the
/// registry at `public_url` needs: the base64 signature of
/// `agentlang-key-registration:<origin>:<username>:<key id>`.
pub fn key_proof(key: &SecretKey, public_url: &str, username: &str) -> String {
    use base64::Engine;
    let message = app::keys::registration_message(
        &app::keys::origin_of(public_url),
        username,
        &key.public_key().key_id(),
    );
    base64::engine::general_purpose::STANDARD.encode(key.sign(message.as_bytes()))
}

impl TestApp {
    /// `POST /api/v1/accounts`; a name the builder listed in `admins` is
    /// then granted admin rights, as its operator would.
    pub async fn create_account(&self, username: &str, password: &str) -> Response {
        let res = self
            .post_json(
                "/api/v1/accounts",
                &json!({"username": username, "password": password}),
            )
            .await;
        if res.status() == StatusCode::CREATED && self.is_configured_admin(username) {
            self.grant_admin(username).await;
        }
        res
    }

    /// Creates the account and a token with `scopes`; returns the token.
    pub async fn account_with_token(&self, username: &str, scopes: &[&str]) -> String {
        let created = self.account_with_token_record(username, scopes).await;
        created["token"].as_str().unwrap().to_owned()
    }

    /// Creates the account and a token with `scopes`; returns the whole
    /// answer that created the token (id, token, scopes...).
    pub async fn account_with_token_record(&self, username: &str, scopes: &[&str]) -> Value {
        let res = self.create_account(username, PASSWORD).await;
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
        self.token_record(username, scopes).await
    }

    /// A new token with `scopes` for an existing account.
    pub async fn token(&self, username: &str, scopes: &[&str]) -> String {
        let created = self.token_record(username, scopes).await;
        created["token"].as_str().unwrap().to_owned()
    }

    async fn token_record(&self, username: &str, scopes: &[&str]) -> Value {
        let res = self
            .post_json(
                "/api/v1/tokens",
                &json!({"username": username, "password": PASSWORD, "name": "test", "scopes": scopes}),
            )
            .await;
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
        res.json().await.unwrap()
    }

    /// The body of `POST /api/v1/keys` for `key`, with its proof of
    /// possession for the account `token` belongs to.
    pub async fn key_registration(&self, token: &str, key: &SecretKey) -> Value {
        let account: Value = self
            .request(reqwest::Method::GET, "/api/v1/account")
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let username = account["username"].as_str().expect("the token's account");
        json!({
            "public_key_pem": key.public_key().to_spki_pem(),
            "proof": key_proof(key, &self.public_url(), username),
        })
    }

    /// `POST /api/v1/keys` for `key` with its proof, as `token`'s account.
    pub async fn post_key(&self, token: &str, key: &SecretKey) -> reqwest::Response {
        let body = self.key_registration(token, key).await;
        self.request(reqwest::Method::POST, "/api/v1/keys")
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Registers a new signing key with `token` (scope `keys`).
    pub async fn register_key(&self, token: &str) -> SecretKey {
        let key = SecretKey::generate().unwrap();
        let res = self.post_key(token, &key).await;
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
        key
    }

    /// The stored account, if `username` names one (in-process).
    pub async fn account_record(&self, username: &str) -> Option<AccountRecord> {
        self.store()
            .db
            .find_account(&Username::parse(username).unwrap())
            .await
            .unwrap()
    }

    pub async fn account_id(&self, username: &str) -> i64 {
        self.account_record(username)
            .await
            .expect("account exists")
            .id
    }
}

/// A publish entry for versions tests record straight through the storage
/// API, where what the entry says does not matter.
pub fn test_log_entry() -> agentlang_core::tlog::LogEntry {
    agentlang_core::tlog::LogEntry::new(LogOp::Publish, "2026-01-01T00:00:00Z")
}

/// Records a version straight through the storage API, as publish will
/// (in-process).
pub async fn seed_version(
    app: &TestApp,
    kind: Kind,
    name: &str,
    version: &str,
    publisher: &str,
) -> Result<PublishedVersion, PublishError> {
    let name = PackageName::new(name).unwrap();
    let version = Version::parse(version).unwrap();
    let bytes = format!("container of {name}@{version}");
    let sha256 = Sha256Digest::of(bytes.as_bytes());
    let publisher = app.account_id(publisher).await;
    let manifest = json!({"format": "agentlang.container/1", "name": name, "version": version});
    let spec = json!({"name": name, "version": version, "description": "seeded"});
    let log_entry = tlog::publish_entry(kind, &name, &version, &sha256.to_hex(), None, "seed");
    app.store()
        .db
        .publish_version(&NewVersion {
            publisher_identity: None,
            provenance: None,
            kind,
            name: name.clone(),
            version: version.clone(),
            sha256,
            size: bytes.len() as u64,
            signer_key_id: None,
            manifest: manifest.clone(),
            spec: spec.clone(),
            lockfile: None,
            quality_report: None,
            extras: None,
            max_risk: None,
            prompt_mode: None,
            prompt_key_id: None,
            dependencies: Vec::new(),
            description: "seeded".to_owned(),
            keywords: Vec::new(),
            publisher,
            log_entry: log_entry.clone(),
        })
        .await
}

/// A signed tool container: tool.yaml, a README, the given dependencies
/// and an optional incompressible payload, so its size is what we ask.
pub fn tool_container(
    key: &SecretKey,
    name: &str,
    version: &str,
    dependencies: &[(&str, &str)],
    readme: &str,
    payload_bytes: usize,
) -> Vec<u8> {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ndescription: test tool {name}\nkind: http\ninput_schema: {{type: object}}\n"
    );
    if !dependencies.is_empty() {
        yaml.push_str("dependencies:\n");
        for (dep, req) in dependencies {
            yaml.push_str(&format!("  {dep}: \"{req}\"\n"));
        }
    }
    let mut tree = SourceTree::new();
    tree.insert(MemberPath::new("tool.yaml").unwrap(), yaml.into_bytes());
    tree.insert(
        MemberPath::new("README.md").unwrap(),
        readme.as_bytes().to_vec(),
    );
    if payload_bytes > 0 {
        // splitmix64: deterministic and incompressible.
        let mut state = 0x1234_5678_u64;
        let mut payload = Vec::with_capacity(payload_bytes + 8);
        while payload.len() < payload_bytes {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            payload.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        payload.truncate(payload_bytes);
        tree.insert(MemberPath::new("assets/payload.bin").unwrap(), payload);
    }
    container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Tool,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse(version).unwrap(),
        created: Created::from_unix_seconds(1_767_225_600).unwrap(),
        signing_key: key,
        prompt_key: None,
    })
    .unwrap()
}

/// What the seed published.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub key_id: String,
    pub agent_sha256: String,
    pub web_search_sha256: String,
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../core/tests/fixtures")
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

/// `lock` (its pins) completed from the package `tree` (the container's
/// members) as `agentlang lock` completes it: `files` and `agents` hashed
/// (`core::lockcheck::local_sections`, what publish judges them by) and
/// every declared model locked, with catalog facts made up (publish checks
/// only the names). A tree that does not validate keeps the lock as given:
/// its test is about something else.
pub fn complete_lock(tree: &SourceTree, mut lock: Lockfile) -> Lockfile {
    let mut tree = tree.clone();
    tree.remove(LOCK_FILE);
    let Ok(Package::Agent(pkg)) = validate_package(Kind::Agent, &Members::from_tree(&tree)) else {
        return lock;
    };
    let local = lockcheck::local_sections(&tree, &pkg);
    lock.files = local.files;
    lock.agents = local.agents;
    for model in local.models {
        lock.models
            .entry(ModelId::new(model).expect("a declared model is a model id"))
            .or_insert(LockedModel {
                context_window: 200_000,
                supports_tools: true,
                input_1m_price: None,
                output_1m_price: None,
            });
    }
    lock
}

/// `tree` with an agent.lock holding `lock` completed ([`complete_lock`]).
pub fn with_complete_lock(tree: &SourceTree, lock: Lockfile) -> SourceTree {
    let lock = complete_lock(tree, lock);
    let mut tree = tree.clone();
    tree.insert(
        MemberPath::new(LOCK_FILE).unwrap(),
        lock.to_yaml().expect("a lock serializes").into_bytes(),
    );
    tree
}

/// An empty lock, as of the seed's fixed time.
pub fn empty_lock() -> Lockfile {
    Lockfile::new(ResolvedAt::from_unix(1_769_682_600).unwrap(), None)
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
pub async fn store_container(store: &Store, kind: Kind, bytes: Vec<u8>, publisher: i64) -> String {
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
    // As publish does: what the validated agent can do, too.
    let mut extras = ContainerExtras::of(kind, &read);
    if kind == Kind::Agent {
        let members = agentlang_core::package::Members::from_container(&read);
        let pkg =
            agentlang_core::package::validate_agent(&members).expect("the seed agent validates");
        let trust = app::trust::agent_trust(&store.db, &pkg, &signer)
            .await
            .expect("locked tools read");
        extras = extras.with_trust(trust);
    }
    let max_risk = extras.max_risk();
    let extras = extras.to_stored();
    let size = bytes.len() as u64;
    let digest = store
        .blobs
        .put(Bytes::from(bytes))
        .await
        .expect("blob stored");
    let log_entry = tlog::publish_entry(
        kind,
        &name,
        &version,
        &digest.to_hex(),
        Some(signer.as_str()),
        "seed",
    );
    store
        .db
        .publish_version(&NewVersion {
            publisher_identity: None,
            provenance: None,
            kind,
            name: name.clone(),
            version: version.clone(),
            sha256: digest,
            size,
            signer_key_id: Some(read.manifest().signer().clone()),
            manifest: manifest.clone(),
            spec: spec.clone(),
            lockfile: lock.clone(),
            quality_report: None,
            extras: Some(extras.clone()),
            max_risk,
            prompt_mode: read.manifest().prompt_mode(),
            prompt_key_id: read.manifest().prompt_key_id().cloned(),
            dependencies: deps.clone(),
            description: description.clone(),
            keywords: Vec::new(),
            publisher,
            log_entry: log_entry.clone(),
        })
        .await
        .expect("version stored");
    digest.to_hex()
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
    let mut lock = empty_lock();
    for (tool, locked, bytes, requirement) in pins {
        lock.tools.insert(
            PackageName::new(*tool).unwrap(),
            LockedTool {
                version: Version::parse(locked).unwrap(),
                hash: Sha256Digest::of(bytes),
                requirement: Some(requirement.parse().unwrap()),
                dependencies: BTreeSet::new(),
                log_index: None,
            },
        );
    }
    // Files, subagents and models as the CLI locks them.
    with_complete_lock(&tree, lock)
}

/// Creates the publisher (over HTTP) and its key, and publishes web_fetch
/// 1.0.3, web_search 1.2.0 and the research assistant 1.0.0 and 1.1.0 (which
/// adds the Critical `wallet` capability), straight into the in-process
/// registry's storage.
pub async fn seed_catalog(app: &TestApp) -> Seeded {
    let res = app.create_account(PUBLISHER, PASSWORD).await;
    assert_eq!(res.status().as_u16(), 201, "{}", res.text().await.unwrap());
    let store = app.store();
    let publisher = app.account_id(PUBLISHER).await;
    let key = SecretKey::generate().unwrap();
    let public = key.public_key();
    let key_id = public.key_id();
    store
        .db
        .insert_signing_key(
            &key_id,
            publisher,
            &public.to_spki_pem(),
            &tlog::key_entry(LogOp::KeyAdd, &key_id, PUBLISHER),
        )
        .await
        .unwrap();

    let [web_fetch, web_search, agent_1_0, agent_1_1] = catalog_containers(&key);
    store_container(store, Kind::Tool, web_fetch, publisher).await;
    let web_search_sha256 = store_container(store, Kind::Tool, web_search, publisher).await;
    let agent_sha256 = store_container(store, Kind::Agent, agent_1_0, publisher).await;
    store_container(store, Kind::Agent, agent_1_1, publisher).await;
    Seeded {
        key_id: key_id.to_string(),
        agent_sha256,
        web_search_sha256,
    }
}

/// The catalog's containers signed with `key`, in publishing order:
/// web_fetch 1.0.3, web_search 1.2.0, and the research assistant 1.0.0 and
/// 1.1.0 (which adds the Critical `wallet` capability).
fn catalog_containers(key: &SecretKey) -> [Vec<u8>; 4] {
    let web_fetch = build(
        &tool_tree(
            "web_fetch.tool.yaml",
            "1.0.3",
            "# web_fetch\n\nFetches one URL.\n",
        ),
        Kind::Tool,
        "web_fetch",
        "1.0.3",
        key,
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
        key,
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
        key,
    );
    let agent_1_1 = build(
        &agent_tree("1.1.0", &pins, &["wallet"]),
        Kind::Agent,
        AGENT,
        "1.1.0",
        key,
    );
    [web_fetch, web_search, agent_1_0, agent_1_1]
}

/// Publishes the catalog of [`seed_catalog`] over HTTP as `user` (scopes
/// `publish`, `keys`; see `TestAppBuilder::user_with_key`), signed with its
/// registered key: for a registry running as a process, whose storage a
/// test cannot reach. Publishing checks the agent's lock whole, so the
/// tools its subagents require (`artifacts`, `sqlite`) are published and
/// pinned too.
pub async fn publish_catalog(app: &TestApp, user: &User) {
    let key = user.key();
    let [web_fetch, web_search, ..] = catalog_containers(key);
    let artifacts = tool_container(key, "artifacts", "1.0.0", &[], "# artifacts\n", 0);
    let sqlite = tool_container(key, "sqlite", "1.0.0", &[], "# sqlite\n", 0);
    let pins: [(&str, &str, &[u8], &str); 4] = [
        ("web_search", "1.2.0", &web_search, "^1.2.0"),
        ("web_fetch", "1.0.3", &web_fetch, "~1.0.0"),
        ("artifacts", "1.0.0", &artifacts, "*"),
        ("sqlite", "1.0.0", &sqlite, "*"),
    ];
    let agents = [("1.0.0", &[][..]), ("1.1.0", &["wallet"][..])].map(|(version, extra)| {
        build(
            &agent_tree(version, &pins, extra),
            Kind::Agent,
            AGENT,
            version,
            key,
        )
    });
    for container in [web_fetch, web_search, artifacts, sqlite]
        .into_iter()
        .chain(agents)
    {
        let res = app
            .request(reqwest::Method::POST, "/api/v1/publish")
            .bearer_auth(&user.token)
            .header("content-type", "application/octet-stream")
            .body(container)
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
    }
}

/// Publishes `stripe-ops` 1.0.0 (`core/tests/fixtures/agents/stripe-ops`:
/// an MCP server, a bash tool and an HTTP tool with OAuth, declaring only
/// `network`), its lock pinning the seeded web_fetch 1.0.3, signed with a
/// new key of the catalog's publisher. Call after [`seed_catalog`].
pub async fn seed_stripe_ops(app: &TestApp) {
    let store = app.store();
    let publisher = app.account_id(PUBLISHER).await;
    let key = SecretKey::generate().unwrap();
    let public = key.public_key();
    store
        .db
        .insert_signing_key(
            &public.key_id(),
            publisher,
            &public.to_spki_pem(),
            &tlog::key_entry(LogOp::KeyAdd, &public.key_id(), PUBLISHER),
        )
        .await
        .unwrap();
    let tree = read_tree(&fixtures().join("agents").join("stripe-ops"));
    let mut lock = empty_lock();
    lock.tools.insert(
        PackageName::new("web_fetch").unwrap(),
        LockedTool {
            version: Version::parse("1.0.3").unwrap(),
            hash: Sha256Digest::of(b"web_fetch 1.0.3 as seeded"),
            requirement: Some("^1.0.0".parse().unwrap()),
            dependencies: BTreeSet::new(),
            log_index: None,
        },
    );
    let tree = with_complete_lock(&tree, lock);
    let bytes = build(&tree, Kind::Agent, "stripe-ops", "1.0.0", &key);
    store_container(store, Kind::Agent, bytes, publisher).await;
}
