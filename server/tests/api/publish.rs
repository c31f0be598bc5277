//! Publishing: containers built with core's builder and signed with keys the
//! test registers, refused for every reason with its own problem type.

use std::io::Read;

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created},
    signing::SecretKey,
};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem, seed};

backend_tests!(
    a_tool_is_published_and_recorded,
    identical_bytes_are_a_retry_and_other_bytes_conflict,
    badly_signed_containers_are_refused,
    revoked_keys_refuse_new_uploads_and_mark_old_versions,
    look_alike_names_and_non_owners_are_refused,
    tool_dependencies_must_exist,
    uploads_past_the_limit_are_refused,
    lying_framing_cannot_pass_the_limit,
    thirty_concurrent_publishes_give_one_version,
    a_blob_without_a_commit_is_invisible_and_swept,
    invalid_containers_and_tokens_are_refused,
);

/// An account with a token of every scope and a registered signing key.
pub struct Publisher {
    pub token: String,
    pub key: SecretKey,
}

pub async fn publisher(app: &TestApp, username: &str) -> Publisher {
    let token = app
        .account_with_token(username, &["publish", "yank", "keys", "owners"])
        .await;
    let key = app.register_key(&token).await;
    Publisher { token, key }
}

pub fn tool_yaml(name: &str, version: &str, deps: &[(&str, &str)]) -> String {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ndescription: The {name} tool fetches things.\n\
         kind: builtin\ninput_schema:\n  type: object\n"
    );
    if !deps.is_empty() {
        yaml.push_str("dependencies:\n");
        for (dep, req) in deps {
            yaml.push_str(&format!("  {dep}: \"{req}\"\n"));
        }
    }
    yaml
}

/// Builds a signed container from `files`; `created` varies the bytes.
pub fn build(
    key: &SecretKey,
    kind: Kind,
    name: &str,
    version: &str,
    files: &[(&str, &[u8])],
    created: i64,
) -> Vec<u8> {
    let mut tree = SourceTree::new();
    for (path, bytes) in files {
        tree.insert(MemberPath::new(*path).unwrap(), bytes.to_vec());
    }
    container::build(&BuildInput {
        tree: &tree,
        kind,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse(version).unwrap(),
        created: Created::from_unix_seconds(created).unwrap(),
        signing_key: key,
        prompt_key: None,
    })
    .unwrap()
}

pub fn tool(key: &SecretKey, name: &str, version: &str, deps: &[(&str, &str)]) -> Vec<u8> {
    tool_at(key, name, version, deps, 1_738_146_600)
}

pub fn tool_at(
    key: &SecretKey,
    name: &str,
    version: &str,
    deps: &[(&str, &str)],
    created: i64,
) -> Vec<u8> {
    let yaml = tool_yaml(name, version, deps);
    build(
        key,
        Kind::Tool,
        name,
        version,
        &[("tool.yaml", yaml.as_bytes())],
        created,
    )
}

pub fn agent_yaml(name: &str, version: &str, tools: &[(&str, &str)]) -> String {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ntitle: Deep Research Helper\n\
         description: Researches markets and papers.\ncategory: Research\n\
         models:\n  claude-sonnet-4:\n    provider: anthropic\n"
    );
    if !tools.is_empty() {
        yaml.push_str("tools:\n");
        for (tool, req) in tools {
            yaml.push_str(&format!("  - name: {tool}\n    version: \"{req}\"\n"));
        }
    }
    yaml
}

/// A valid PromptLang prompt.yaml.
pub const PROMPT_YAML: &str =
    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Research carefully.\n";

/// An agent container holding agent.yaml, prompt.yaml and an agent.lock:
/// `lock`'s pins (none when `None`) with files, subagents and models as
/// `agentlang lock` writes them. A lock-less or broken one is built with
/// [`agent_with`].
pub fn agent(key: &SecretKey, yaml: &str, lock: Option<&str>) -> Vec<u8> {
    locked_agent(key, yaml, &[("prompt.yaml", PROMPT_YAML.as_bytes())], lock)
}

/// An agent container holding agent.yaml, `files` and an agent.lock with
/// `lock`'s pins completed as `agentlang lock` completes them
/// (`seed::complete_lock`).
pub fn locked_agent(
    key: &SecretKey,
    yaml: &str,
    files: &[(&str, &[u8])],
    lock: Option<&str>,
) -> Vec<u8> {
    let mut tree = SourceTree::new();
    tree.insert(
        MemberPath::new("agent.yaml").unwrap(),
        yaml.as_bytes().to_vec(),
    );
    for (path, bytes) in files {
        tree.insert(MemberPath::new(*path).unwrap(), bytes.to_vec());
    }
    let base = lock.map_or_else(seed::empty_lock, |text| {
        agentlang_core::lockfile::Lockfile::from_slice(text.as_bytes()).unwrap()
    });
    let lock = seed::complete_lock(&tree, base).to_yaml().unwrap();
    let mut all: Vec<(&str, &[u8])> = files.to_vec();
    all.push(("agent.lock", lock.as_bytes()));
    agent_with(key, yaml, &all)
}

/// An agent container holding agent.yaml and `files`.
pub fn agent_with(key: &SecretKey, yaml: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let doc: Value = yaml_serde::from_str(yaml).unwrap();
    let (name, version) = (
        doc["name"].as_str().unwrap().to_owned(),
        doc["version"].as_str().unwrap().to_owned(),
    );
    let mut all: Vec<(&str, &[u8])> = vec![("agent.yaml", yaml.as_bytes())];
    all.extend_from_slice(files);
    build(key, Kind::Agent, &name, &version, &all, 1_738_146_600)
}

pub async fn publish(app: &TestApp, token: &str, bytes: Vec<u8>) -> Response {
    app.request(reqwest::Method::POST, "/api/v1/publish")
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(bytes)
        .send()
        .await
        .unwrap()
}

/// Publishes and expects 201; returns the version record.
pub async fn published(app: &TestApp, token: &str, bytes: Vec<u8>) -> Value {
    let res = publish(app, token, bytes).await;
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    res.json().await.unwrap()
}

/// Rewrites a container's members: `edit` sees each (path, bytes) and may
/// change the bytes or drop the member (return `None`).
pub fn repack(container: &[u8], mut edit: impl FnMut(&str, Vec<u8>) -> Option<Vec<u8>>) -> Vec<u8> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(container));
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if let Some(bytes) = edit(&path, bytes) {
            let mut header = tar::Header::new_ustar();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            header.set_entry_type(tar::EntryType::Regular);
            builder
                .append_data(&mut header, &path, bytes.as_slice())
                .unwrap();
        }
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// How many blobs the store holds that some version refers to, and how
/// many that none does.
pub async fn blob_counts(app: &TestApp) -> (usize, usize) {
    let report = app::sweep::sweep_unreferenced(
        &app.store().db,
        &app.store().blobs,
        std::time::Duration::from_secs(1 << 40),
    )
    .await
    .unwrap();
    assert!(report.deleted.is_empty());
    (report.referenced, report.young)
}

async fn a_tool_is_published_and_recorded(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bytes = tool(&alice.key, "web_fetch", "1.0.3", &[]);
    let digest = agentlang_core::digest::Sha256Digest::of(&bytes);
    let res = publish(&app, &alice.token, bytes.clone()).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(
        res.headers()["location"].to_str().unwrap(),
        "/api/v1/tools/web_fetch/1.0.3"
    );
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["kind"], "tool");
    assert_eq!(body["name"], "web_fetch");
    assert_eq!(body["version"], "1.0.3");
    assert_eq!(body["sha256"], digest.to_hex());
    assert_eq!(body["hash"], digest.to_prefixed());
    assert_eq!(body["size"], bytes.len());
    assert_eq!(body["publisher"], "alice");
    assert_eq!(body["yanked"], false);
    assert_eq!(
        body["signer"]["key_id"],
        alice.key.public_key().key_id().as_str()
    );
    assert_eq!(body["signer"]["revoked_at"], Value::Null);
    assert_eq!(body["spec"]["kind"], "builtin");
    assert_eq!(body["manifest"]["name"], "web_fetch");
    // The blob is in storage under its digest, and counted in metrics.
    assert_eq!(
        app.store().blobs.get(&digest).await.unwrap().as_deref(),
        Some(bytes.as_slice())
    );
    assert_eq!(app.state().metrics().publishes.get(), 1);
    // The first publisher owns the package.
    let owners: Value = app
        .get("/api/v1/tools/web_fetch/owners")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(owners["owners"][0]["username"], "alice");
}

async fn identical_bytes_are_a_retry_and_other_bytes_conflict(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bytes = tool(&alice.key, "web_fetch", "1.0.0", &[]);
    let first = published(&app, &alice.token, bytes.clone()).await;
    let res = publish(&app, &alice.token, bytes).await;
    assert_eq!(res.status(), StatusCode::OK);
    let again: Value = res.json().await.unwrap();
    assert_eq!(again["sha256"], first["sha256"]);

    let other = tool_at(&alice.key, "web_fetch", "1.0.0", &[], 1_800_000_000);
    let body = problem(
        publish(&app, &alice.token, other).await,
        StatusCode::CONFLICT,
        "version-exists",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("1.0.0"), "{body}");
    // Build metadata does not make another version.
    let plus = tool(&alice.key, "web_fetch", "1.0.0+build.7", &[]);
    problem(
        publish(&app, &alice.token, plus).await,
        StatusCode::CONFLICT,
        "version-exists",
    )
    .await;
    assert_eq!(blob_counts(&app).await, (1, 0));
}

async fn badly_signed_containers_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    let good = tool(&alice.key, "web_fetch", "1.0.0", &[]);

    // Unsigned: no signature.sig at all.
    let unsigned = repack(&good, |path, bytes| {
        (path != "signature.sig").then_some(bytes)
    });
    let body = problem(
        publish(&app, &alice.token, unsigned).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "container-invalid",
    )
    .await;
    assert_eq!(body["detail"], "signature.sig is missing");

    // Tampered: the manifest changed after signing.
    let tampered = repack(&good, |path, bytes| {
        Some(if path == "manifest.json" {
            String::from_utf8(bytes)
                .unwrap()
                .replace("2025-01-29T10:30:00Z", "2025-01-29T10:30:01Z")
                .into_bytes()
        } else {
            bytes
        })
    });
    let body = problem(
        publish(&app, &alice.token, tampered).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "signature-invalid",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("does not verify"),
        "{body}"
    );

    // Wrong key: the manifest names alice's key, bob's key signed it.
    let mut manifest = Vec::new();
    repack(&good, |path, bytes| {
        if path == "manifest.json" {
            manifest = bytes.clone();
        }
        Some(bytes)
    });
    let forged = bob.key.sign(&manifest);
    let wrong_key = repack(&good, |path, bytes| {
        Some(if path == "signature.sig" {
            forged.to_vec()
        } else {
            bytes
        })
    });
    problem(
        publish(&app, &alice.token, wrong_key).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "signature-invalid",
    )
    .await;

    // A key nobody registered.
    let stranger = SecretKey::generate().unwrap();
    let body = problem(
        publish(
            &app,
            &alice.token,
            tool(&stranger, "web_fetch", "1.0.0", &[]),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown-key",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("not registered"),
        "{body}"
    );

    // Another account's key.
    let body = problem(
        publish(
            &app,
            &alice.token,
            tool(&bob.key, "web_fetch", "1.0.0", &[]),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown-key",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("your account"),
        "{body}"
    );

    // Nothing was published or stored by any of these.
    assert_eq!(
        app.get("/api/v1/tools/web_fetch").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(blob_counts(&app).await, (0, 0));
}

async fn revoked_keys_refuse_new_uploads_and_mark_old_versions(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    // Read (and so rendered and kept) before the revocation.
    let version: Value = app
        .get("/api/v1/tools/web_fetch/1.0.0")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(version["signer"]["revoked_at"], Value::Null);
    let key_id = alice.key.public_key().key_id();
    let res = app
        .request(reqwest::Method::DELETE, &format!("/api/v1/keys/{key_id}"))
        .bearer_auth(&alice.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    let body = problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.0.1", &[]),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "key-revoked",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("revoked"),
        "{body}"
    );

    // The old version stays, shown as signed by a since-revoked key.
    let version: Value = app
        .get("/api/v1/tools/web_fetch/1.0.0")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(version["signer"]["key_id"], key_id.as_str());
    assert!(version["signer"]["revoked_at"].is_string(), "{version}");
}

async fn look_alike_names_and_non_owners_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web-fetch", "1.0.0", &[]),
    )
    .await;

    let body = problem(
        publish(&app, &bob.token, tool(&bob.key, "Web_Fetch", "2.0.0", &[])).await,
        StatusCode::CONFLICT,
        "name-taken",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("web-fetch"),
        "{body}"
    );
    // Even the owner cannot publish under another spelling.
    let body = problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "2.0.0", &[]),
        )
        .await,
        StatusCode::CONFLICT,
        "name-taken",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("web-fetch"),
        "{body}"
    );

    problem(
        publish(&app, &bob.token, tool(&bob.key, "web-fetch", "2.0.0", &[])).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;

    // A token restricted to other packages, or without the scope.
    let res = app
        .post_json(
            "/api/v1/tokens",
            &json!({"username": "alice", "password": "password-123", "name": "narrow",
                    "scopes": ["publish"], "packages": ["other-*"]}),
        )
        .await;
    let narrow = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    problem(
        publish(&app, &narrow, tool(&alice.key, "web-fetch", "2.0.0", &[])).await,
        StatusCode::FORBIDDEN,
        "token-not-for-package",
    )
    .await;
    let read_only = app.token("alice", &["yank"]).await;
    problem(
        publish(
            &app,
            &read_only,
            tool(&alice.key, "web-fetch", "2.0.0", &[]),
        )
        .await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    // Owners added later may publish, once they accept the invitation.
    let res = app
        .request(reqwest::Method::PUT, "/api/v1/tools/web-fetch/owners")
        .bearer_auth(&alice.token)
        .json(&json!({"usernames": ["bob"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    problem(
        publish(&app, &bob.token, tool(&bob.key, "web-fetch", "2.0.0", &[])).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let res = app
        .request(reqwest::Method::PUT, "/api/v1/invitations/tools/web-fetch")
        .bearer_auth(&bob.token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );
    published(&app, &bob.token, tool(&bob.key, "web-fetch", "2.0.0", &[])).await;
}

async fn tool_dependencies_must_exist(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let body = problem(
        publish(
            &app,
            &alice.token,
            tool(
                &alice.key,
                "web_search",
                "1.2.0",
                &[("web_fetch", "^1.0.0")],
            ),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        body["errors"][0]["field"], "dependencies.web_fetch",
        "{body}"
    );

    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    let body = published(
        &app,
        &alice.token,
        tool(
            &alice.key,
            "web_search",
            "1.2.0",
            &[("web-fetch", "^1.0.0")],
        ),
    )
    .await;
    assert_eq!(body["dependencies"], json!({"web-fetch": "^1.0.0"}));
}

async fn uploads_past_the_limit_are_refused(backend: Backend) {
    const LIMIT: usize = 64 * 1024;
    let Some(app) = TestApp::builder(backend)
        .max_upload_bytes(LIMIT)
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // With Content-Length: refused before the body is read.
    let body = problem(
        publish(&app, &alice.token, vec![0u8; LIMIT + 1]).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains(&LIMIT.to_string())
    );

    // Without Content-Length (chunked): refused once the stream passes the
    // limit, however much more it would send.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..40).map(|_| Ok(vec![1u8; 4096])).collect();
    let res = app
        .request(reqwest::Method::POST, "/api/v1/publish")
        .bearer_auth(&alice.token)
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;

    // A chunked body whose first chunk looks like a small upload (and a
    // header that says so) is still counted byte by byte.
    let lying: Vec<Result<Vec<u8>, std::io::Error>> = std::iter::once(Ok(vec![2u8; 10]))
        .chain((0..100).map(|_| Ok(vec![3u8; 8192])))
        .collect();
    let res = app
        .request(reqwest::Method::POST, "/api/v1/publish")
        .bearer_auth(&alice.token)
        .header("x-expected-size", "10")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            lying,
        )))
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;

    // Nothing is left in the spool folder.
    let spool = app.state().config.data_dir.join("uploads");
    assert_eq!(std::fs::read_dir(spool).unwrap().count(), 0);

    // Under the limit, a small container still publishes.
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
}

async fn thirty_concurrent_publishes_give_one_version(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .workers(4)
        // All thirty race; the per-account, per-address and per-process
        // bounds are tested on their own.
        .limits(|l| {
            l.max_concurrent_uploads = 40;
            l.max_concurrent_uploads_per_account = 30;
            l.max_concurrent_uploads_per_address = 30;
        })
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let mut tasks = Vec::new();
    for i in 0..30 {
        // Different `created`, so different bytes: only one can win.
        let bytes = tool_at(&alice.key, "web_fetch", "1.0.0", &[], 1_738_146_600 + i);
        let request = app
            .request(reqwest::Method::POST, "/api/v1/publish")
            .bearer_auth(&alice.token)
            .body(bytes);
        tasks.push(actix_web::rt::spawn(async move {
            request.send().await.unwrap().status()
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    let conflicts = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((created, conflicts), (1, 29), "{statuses:?}");
    let package: Value = app
        .get("/api/v1/tools/web_fetch")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(package["versions"].as_array().unwrap().len(), 1);
    assert_eq!(blob_counts(&app).await, (1, 0));
}

async fn a_blob_without_a_commit_is_invisible_and_swept(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .config(|c| c.sweep_grace = std::time::Duration::from_secs(1))
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let kept = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    // A publish that crashed after writing its blob: the blob is there, no
    // row refers to it.
    let orphan = tool(&alice.key, "web_fetch", "1.0.1", &[]);
    let digest = app
        .store()
        .blobs
        .put(bytes::Bytes::from(orphan.clone()))
        .await
        .unwrap();
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.0.1").await.status(),
        StatusCode::NOT_FOUND
    );
    let index: Value = app
        .get("/api/v1/index/tools/web_fetch")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(index["versions"].as_array().unwrap().len(), 1);

    // Young: kept. Past the grace period: swept; the published one stays.
    // "Young" is checked with a long grace: blob ages are whole seconds, so
    // the configured 1 s would depend on where a second boundary falls.
    assert_eq!(blob_counts(&app).await, (1, 1));
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let report = app::sweep::sweep_once(app.state()).await.unwrap();
    assert_eq!(report.deleted, vec![digest]);
    assert!(!app.store().blobs.exists(&digest).await.unwrap());
    let kept_digest =
        agentlang_core::digest::Sha256Digest::parse_hex(kept["sha256"].as_str().unwrap()).unwrap();
    assert!(app.store().blobs.exists(&kept_digest).await.unwrap());

    // The crashed version can still be published properly afterwards.
    published(&app, &alice.token, orphan).await;
}

async fn invalid_containers_and_tokens_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let body = problem(
        publish(&app, &alice.token, b"not a container".to_vec()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "container-invalid",
    )
    .await;
    assert_eq!(body["detail"], "not a gzip file");

    // Refused from its first bytes, a body larger than what is drained after
    // an oversized one still gets its answer, and leaves no blob behind.
    let mut large = b"not a container".to_vec();
    large.resize(12 << 20, 7);
    let body = problem(
        publish(&app, &alice.token, large).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "container-invalid",
    )
    .await;
    assert_eq!(body["detail"], "not a gzip file");
    assert_eq!(blob_counts(&app).await, (0, 0));

    // A tool.yaml that the format rejects: every problem listed.
    let broken = build(
        &alice.key,
        Kind::Tool,
        "broken",
        "1.0.0",
        &[(
            "tool.yaml",
            b"name: broken\nversion: 1.0.0\ndescription: x\nkind: teleport\ninput_schema: 3\n",
        )],
        0,
    );
    let body = problem(
        publish(&app, &alice.token, broken).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let fields: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"tool.yaml:kind"), "{body}");
    assert!(fields.contains(&"tool.yaml:input_schema"), "{body}");

    let res = app
        .request(reqwest::Method::POST, "/api/v1/publish")
        .body(tool(&alice.key, "web_fetch", "1.0.0", &[]))
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNAUTHORIZED, "unauthenticated").await;
}

/// Peak resident memory of a process, from `/proc`.
/// Incompressible filler, so the container is as large as its payload.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The real binary's peak RSS while it takes a small and then a large
/// upload: spooling to disk and multipart uploads keep it from growing with
/// the upload size.
#[actix_web::test]
async fn publish_memory_does_not_grow_with_upload_size() {
    const SMALL: usize = 2 << 20;
    const LARGE: usize = 48 << 20;
    let app = TestApp::builder(Backend::Sqlite)
        .process()
        .max_upload_bytes(64 << 20)
        .user_with_key("alice", &["publish", "keys"])
        .build()
        .await
        .unwrap();
    let (url, alice) = (&app.url, app.user("alice"));
    let (token, key) = (&alice.token, alice.key());
    // Building the large container takes longer than the server keeps an
    // idle connection: never reuse one.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();

    let mut peaks = Vec::new();
    for (version, size) in [("1.0.0", SMALL), ("1.0.1", LARGE)] {
        let yaml = agent_yaml("bulky", version, &[]);
        let filler = noise(size, size as u64 | 1);
        let bytes = locked_agent(
            key,
            &yaml,
            &[
                ("prompt.yaml", PROMPT_YAML.as_bytes()),
                ("context/filler.bin", &filler),
            ],
            None,
        );
        drop(filler);
        let res = client
            .post(format!("{url}/api/v1/publish"))
            .bearer_auth(token)
            .body(bytes)
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{}",
            res.text().await.unwrap()
        );
        peaks.push(app.peak_rss_kib());
    }
    let growth_kib = peaks[1].saturating_sub(peaks[0]);
    eprintln!(
        "peak RSS after a {} MiB upload: {} KiB; after a {} MiB upload: {} KiB (+{growth_kib} KiB)",
        SMALL >> 20,
        peaks[0],
        LARGE >> 20,
        peaks[1]
    );
    // 46 MiB more upload; bounded buffers (5 MiB parts, two in flight) must
    // keep the growth well under that.
    assert!(
        growth_kib < 24 * 1024,
        "peak RSS grew by {growth_kib} KiB: {peaks:?}"
    );
}

/// Sends raw bytes and returns the status code of the first response (0
/// when the server closed the connection without one).
async fn raw_status(app: &TestApp, head: &str, body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = app.url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    // The server may stop reading early; a failed write is part of the test.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut response),
    )
    .await;
    String::from_utf8_lossy(&response)
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

async fn lying_framing_cannot_pass_the_limit(backend: Backend) {
    const LIMIT: usize = 64 * 1024;
    let Some(app) = TestApp::builder(backend)
        .max_upload_bytes(LIMIT)
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let head = |framing: &str| {
        format!(
            "POST /api/v1/publish HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer {}\r\n\
             {framing}Connection: close\r\n\r\n",
            alice.token
        )
    };
    // One chunk that declares (and carries) more than the limit.
    let mut chunked = format!("{:x}\r\n", LIMIT * 2).into_bytes();
    chunked.extend(vec![7u8; LIMIT * 2]);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(
        raw_status(&app, &head("Transfer-Encoding: chunked\r\n"), &chunked).await,
        413
    );
    // A small Content-Length next to chunked framing: refused as ambiguous
    // (request smuggling) or counted as it streams; never accepted.
    let status = raw_status(
        &app,
        &head("Content-Length: 10\r\nTransfer-Encoding: chunked\r\n"),
        &chunked,
    )
    .await;
    assert!(matches!(status, 400 | 413), "{status}");
    // A small Content-Length followed by more bytes: only the declared 10
    // are the body (not a container), the rest is not a request.
    let status = raw_status(&app, &head("Content-Length: 10\r\n"), &vec![7u8; LIMIT * 2]).await;
    assert_eq!(status, 422);
    assert_eq!(blob_counts(&app).await, (0, 0));
}
