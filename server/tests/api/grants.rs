//! Prompt recipients and prompt-key grants (docs/prompt-grants.md), over
//! HTTP: recipients registered only with their proof, sealed agents'
//! keys granted by owners, fetched by grantees for the versions their
//! grants cover and by nobody else, every grant logged with a commitment
//! in place of the grantee.

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Username, Version,
    container::{self, BuildInput, Created},
    crypt::{PromptKey, PromptKeyId},
    grants::{self, Identity, Recipient},
    signing::SecretKey,
};
use app::grants::{ProofKey, proof_text};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use store::Db;

use crate::{
    publish::{PROMPT_YAML, agent_yaml, published, tool},
    support::{Backend, TestApp, backend_tests, problem, seed},
};

backend_tests!(
    recipients_register_only_with_their_proof,
    owners_grant_sealed_agents_and_only_grantees_fetch_the_key,
    open_agents_have_no_key_to_grant,
    key_ids_and_ranges_select_the_versions_a_grant_covers,
);

const ALL_SCOPES: &[&str] = &["publish", "yank", "keys", "owners", "grants"];

/// An account with a token of every scope and a signing key.
async fn account(app: &TestApp, username: &str) -> crate::publish::Publisher {
    let token = app.account_with_token(username, ALL_SCOPES).await;
    let key = app.register_key(&token).await;
    crate::publish::Publisher { token, key }
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Response {
    let mut req = app.request(method, path).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap()
}

async fn json_of(res: Response, status: StatusCode) -> Value {
    let got = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// Asks for a challenge to `identity`'s recipient and opens it: the proof.
async fn proof_for(app: &TestApp, token: &str, identity: &Identity) -> String {
    let res = send(
        app,
        Method::POST,
        "/api/v1/account/prompt-recipients/challenge",
        token,
        Some(json!({ "recipient": identity.recipient().to_string() })),
    )
    .await;
    let challenge = json_of(res, StatusCode::OK).await;
    let armored = challenge["challenge"].as_str().unwrap();
    assert!(armored.starts_with("-----BEGIN AGE ENCRYPTED FILE-----"));
    let plain = grants::unwrap(identity, armored.as_bytes()).unwrap();
    String::from_utf8(plain.to_vec()).unwrap()
}

async fn register_recipient(app: &TestApp, token: &str, identity: &Identity) -> Response {
    let proof = proof_for(app, token, identity).await;
    send(
        app,
        Method::POST,
        "/api/v1/account/prompt-recipients",
        token,
        Some(json!({ "recipient": identity.recipient().to_string(), "proof": proof })),
    )
    .await
}

/// A fresh identity registered to the account.
async fn registered_identity(app: &TestApp, token: &str) -> Identity {
    let identity = Identity::generate();
    let res = register_recipient(app, token, &identity).await;
    json_of(res, StatusCode::CREATED).await;
    identity
}

/// An agent container, sealed with `prompt_key` or open without one.
fn agent_container(
    key: &SecretKey,
    name: &str,
    version: &str,
    prompt_key: Option<&PromptKey>,
) -> Vec<u8> {
    let yaml = agent_yaml(name, version, &[]);
    let mut tree = SourceTree::new();
    tree.insert(MemberPath::new("agent.yaml").unwrap(), yaml.into_bytes());
    tree.insert(
        MemberPath::new("prompt.yaml").unwrap(),
        PROMPT_YAML.as_bytes().to_vec(),
    );
    // Locked as `agentlang lock` would: the lock hashes the plaintext.
    let tree = seed::with_complete_lock(&tree, seed::empty_lock());
    container::build(&BuildInput {
        tree: &tree,
        kind: Kind::Agent,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse(version).unwrap(),
        created: Created::from_unix_seconds(1_738_146_600).unwrap(),
        signing_key: key,
        prompt_key,
    })
    .unwrap()
}

/// What an owner does to grant: reads the grantee's recipients, wraps the
/// key file to all of them, and sends it.
async fn grant(
    app: &TestApp,
    token: &str,
    agent: &str,
    grantee: &str,
    key: &PromptKey,
    versions: Option<&str>,
) -> Response {
    let res = send(
        app,
        Method::GET,
        &format!("/api/v1/accounts/{grantee}/prompt-recipients"),
        token,
        None,
    )
    .await;
    let listed = json_of(res, StatusCode::OK).await;
    let recipients: Vec<Recipient> = listed["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| Recipient::parse(r["recipient"].as_str().unwrap()).unwrap())
        .collect();
    let wrapped = if recipients.is_empty() {
        grants::wrap(&[Identity::generate().recipient()], b"nothing\n").unwrap()
    } else {
        grants::wrap(&recipients, key.to_key_file().as_bytes()).unwrap()
    };
    send(
        app,
        Method::PUT,
        &format!("/api/v1/agents/{agent}/grants/{grantee}"),
        token,
        Some(json!({ "key_id": key.id().as_str(), "versions": versions, "wrapped": wrapped })),
    )
    .await
}

async fn fetch_key(app: &TestApp, token: &str, agent: &str, version: &str) -> Response {
    send(
        app,
        Method::GET,
        &format!("/api/v1/agents/{agent}/{version}/prompt-key"),
        token,
        None,
    )
    .await
}

/// Fetches the caller's key for a version and opens it.
async fn fetched_key(
    app: &TestApp,
    token: &str,
    identity: &Identity,
    agent: &str,
    version: &str,
) -> String {
    let res = fetch_key(app, token, agent, version).await;
    let status = res.status();
    let content_type = res.headers().get("content-type").cloned();
    let body = res.bytes().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(content_type.unwrap(), "application/octet-stream");
    String::from_utf8(grants::unwrap(identity, &body).unwrap().to_vec()).unwrap()
}

async fn execute(db: &Db, sql: &'static str) {
    match db {
        Db::Sqlite { pool, .. } => sqlx::query(sql).execute(pool).await.map(drop),
        Db::Postgres(pools) => sqlx::query(sql).execute(pools.current()).await.map(drop),
    }
    .unwrap();
}

async fn recipients_register_only_with_their_proof(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let bob = app.account_with_token("bob", &["grants"]).await;
    let carol = app.account_with_token("carol", &["grants"]).await;
    let identity = Identity::generate();
    let recipient = identity.recipient().to_string();
    let body = |proof: &str| json!({ "recipient": recipient, "proof": proof });
    let path = "/api/v1/account/prompt-recipients";

    // A proof made for bob works for bob only, and only for this recipient.
    let proof = proof_for(&app, &bob, &identity).await;
    assert!(proof.starts_with("agentlang-recipient-proof:"), "{proof}");
    assert!(proof.contains(":bob:"), "{proof}");
    let res = send(&app, Method::POST, path, &carol, Some(body(&proof))).await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "proof-invalid").await;
    let other = Identity::generate().recipient().to_string();
    let res = send(
        &app,
        Method::POST,
        path,
        &bob,
        Some(json!({ "recipient": other, "proof": proof })),
    )
    .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "proof-invalid").await;
    // Tampered with: a later expiry, or another MAC.
    let (head, mac) = proof.rsplit_once(':').unwrap();
    let (start, expires) = head.rsplit_once(':').unwrap();
    let later = format!("{start}:{}:{mac}", expires.parse::<i64>().unwrap() + 3600);
    let res = send(&app, Method::POST, path, &bob, Some(body(&later))).await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "proof-invalid").await;
    let flipped = format!("{head}:{}", "0".repeat(mac.len()));
    let res = send(&app, Method::POST, path, &bob, Some(body(&flipped))).await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "proof-invalid").await;
    // Expired: made with the registry's own key, an hour ago.
    let key = ProofKey::derive(app.jwt_secret().as_bytes());
    let origin = app::keys::origin_of(&app.public_url());
    let bob_name = Username::parse("bob").unwrap();
    let expired = proof_text(
        &key,
        &origin,
        &bob_name,
        &identity.recipient(),
        store::now() - 3600,
    );
    let res = send(&app, Method::POST, path, &bob, Some(body(&expired))).await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "proof-invalid").await;
    // (The same key, in time, is the registry's: the derivation matches.)
    let fresh = proof_text(
        &key,
        &origin,
        &bob_name,
        &identity.recipient(),
        store::now() + 60,
    );
    let res = send(&app, Method::POST, path, &bob, Some(body(&fresh))).await;
    let registered = json_of(res, StatusCode::CREATED).await;
    assert_eq!(registered["recipient"], recipient);
    // Again: not an error.
    let res = send(&app, Method::POST, path, &bob, Some(body(&proof))).await;
    json_of(res, StatusCode::OK).await;
    // Not a recipient at all.
    let res = send(
        &app,
        Method::POST,
        path,
        &bob,
        Some(json!({ "recipient": "age1nope", "proof": proof })),
    )
    .await;
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;

    // Listed to bob, and to anyone with the scope who asks for bob's.
    let res = send(&app, Method::GET, path, &bob, None).await;
    let mine = json_of(res, StatusCode::OK).await;
    assert_eq!(mine["recipients"].as_array().unwrap().len(), 1);
    let res = send(
        &app,
        Method::GET,
        "/api/v1/accounts/BOB/prompt-recipients",
        &carol,
        None,
    )
    .await;
    let theirs = json_of(res, StatusCode::OK).await;
    assert_eq!(theirs["username"], "bob");
    assert_eq!(theirs["recipients"][0]["recipient"], recipient);
    let res = send(
        &app,
        Method::GET,
        "/api/v1/accounts/nobody/prompt-recipients",
        &carol,
        None,
    )
    .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;

    // At most 8.
    for _ in 1..grants::MAX_RECIPIENTS_PER_ACCOUNT {
        registered_identity(&app, &bob).await;
    }
    let res = register_recipient(&app, &bob, &Identity::generate()).await;
    problem(res, StatusCode::CONFLICT, "too-many-recipients").await;
    // Removed, one makes room.
    let res = send(
        &app,
        Method::DELETE,
        &format!("{path}/{recipient}"),
        &bob,
        None,
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let res = send(
        &app,
        Method::DELETE,
        &format!("{path}/{recipient}"),
        &bob,
        None,
    )
    .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    registered_identity(&app, &bob).await;

    // The scope is needed, for reading too.
    let publisher_token = app.account_with_token("dave", &["publish"]).await;
    let res = send(&app, Method::GET, path, &publisher_token, None).await;
    problem(res, StatusCode::FORBIDDEN, "missing-scope").await;
    let res = app.request(Method::GET, path).send().await.unwrap();
    problem(res, StatusCode::UNAUTHORIZED, "unauthenticated").await;

    // The account's audit list says what happened.
    let res = send(&app, Method::GET, "/api/v1/account/audit", &bob, None).await;
    let audit = json_of(res, StatusCode::OK).await.to_string();
    assert!(audit.contains("prompt_recipient_registered"), "{audit}");
    assert!(audit.contains("prompt_recipient_removed"), "{audit}");
}

async fn owners_grant_sealed_agents_and_only_grantees_fetch_the_key(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = account(&app, "alice").await;
    let bob = account(&app, "bob").await;
    let carol = account(&app, "carol").await;
    let dave = app.account_with_token("dave", &["grants"]).await;
    let key = PromptKey::generate().unwrap();
    published(
        &app,
        &alice.token,
        agent_container(&alice.key, "trip-planner", "1.0.0", Some(&key)),
    )
    .await;
    let bob_id = registered_identity(&app, &bob.token).await;
    let bob_second = registered_identity(&app, &bob.token).await;
    let carol_id = registered_identity(&app, &carol.token).await;

    // Granted by the owner: 201, with what checks the log entry.
    let res = grant(&app, &alice.token, "trip-planner", "bob", &key, None).await;
    let granted = json_of(res, StatusCode::CREATED).await;
    assert_eq!(granted["agent"], "trip-planner");
    assert_eq!(granted["grantee"], "bob");
    assert_eq!(granted["key_id"], key.id().as_str());
    assert_eq!(granted["versions"], Value::Null);
    assert_eq!(granted["granted_by"], "alice");
    let salt_hex = granted["salt"].as_str().unwrap().to_owned();
    let log_index = granted["log"]["index"].as_i64().unwrap();

    // Bob fetches it and opens it with either identity: the key file.
    let opened = fetched_key(&app, &bob.token, &bob_id, "trip-planner", "1.0.0").await;
    assert_eq!(opened, *key.to_key_file());
    let opened = fetched_key(&app, &bob.token, &bob_second, "Trip_Planner", "1.0.0").await;
    assert_eq!(opened, *key.to_key_file());
    let _ = carol_id;

    // Carol holds no grant: 404 naming the owners and the command. Nor
    // can she list the agent's grants, or grant it herself.
    let res = fetch_key(&app, &carol.token, "trip-planner", "1.0.0").await;
    let body = problem(res, StatusCode::NOT_FOUND, "no-grant").await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("alice"), "{detail}");
    assert!(
        detail.contains("agentlang grant trip-planner --to carol"),
        "{detail}"
    );
    assert!(!detail.contains("bob"), "{detail}");
    for token in [&carol.token, &bob.token] {
        let res = send(
            &app,
            Method::GET,
            "/api/v1/agents/trip-planner/grants",
            token,
            None,
        )
        .await;
        problem(res, StatusCode::FORBIDDEN, "not-owner").await;
    }
    let res = grant(&app, &carol.token, "trip-planner", "carol", &key, None).await;
    problem(res, StatusCode::FORBIDDEN, "not-owner").await;
    let res = fetch_key(&app, &bob.token, "trip-planner", "9.9.9").await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = fetch_key(&app, &bob.token, "no-such-agent", "1.0.0").await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;

    // The owner lists the agent's grants; bob lists his.
    let res = send(
        &app,
        Method::GET,
        "/api/v1/agents/trip-planner/grants",
        &alice.token,
        None,
    )
    .await;
    let listed = json_of(res, StatusCode::OK).await;
    assert_eq!(listed["grants"].as_array().unwrap().len(), 1);
    assert_eq!(listed["grants"][0]["grantee"], "bob");
    assert_eq!(listed["grants"][0]["salt"], salt_hex.as_str());
    assert!(listed["grants"][0].get("wrapped").is_none());
    let res = send(
        &app,
        Method::GET,
        "/api/v1/account/grants",
        &bob.token,
        None,
    )
    .await;
    let held = json_of(res, StatusCode::OK).await;
    assert_eq!(held["grants"].as_array().unwrap().len(), 1);
    assert_eq!(held["grants"][0]["agent"], "trip-planner");
    let res = send(
        &app,
        Method::GET,
        "/api/v1/account/grants",
        &carol.token,
        None,
    )
    .await;
    assert_eq!(json_of(res, StatusCode::OK).await["grants"], json!([]));

    // The log holds the commitment, recomputable with the salt, and never
    // the grantee's name.
    let mut salt = [0u8; 32];
    hex::decode_to_slice(&salt_hex, &mut salt).unwrap();
    let commitment = grants::commitment(&salt, &Username::parse("bob").unwrap(), &key.id(), None);
    let entries = app.log_entries().await;
    let entry = &entries[usize::try_from(log_index).unwrap()];
    assert_eq!(entry["op"], "grant_add", "{entry}");
    assert_eq!(entry["kind"], "agent");
    assert_eq!(entry["name"], "trip-planner");
    assert_eq!(entry["account"], "alice");
    assert_eq!(entry["grant"], commitment.to_hex());
    assert_eq!(granted["commitment"], commitment.to_hex());

    // Granted again: the grant replaced (200), the old one's revocation
    // logged too.
    let res = grant(&app, &alice.token, "trip-planner", "bob", &key, Some("^1")).await;
    let replaced = json_of(res, StatusCode::OK).await;
    assert_eq!(replaced["versions"], "^1");
    assert_ne!(replaced["salt"], salt_hex.as_str());
    let entries = app.log_entries().await;
    let ops: Vec<&str> = entries.iter().filter_map(|e| e["op"].as_str()).collect();
    assert_eq!(ops.iter().filter(|op| **op == "grant_add").count(), 2);
    assert_eq!(ops.iter().filter(|op| **op == "grant_revoke").count(), 1);
    let revoked_old = entries.iter().find(|e| e["op"] == "grant_revoke").unwrap();
    assert_eq!(revoked_old["grant"], commitment.to_hex());
    assert_eq!(
        fetched_key(&app, &bob.token, &bob_id, "trip-planner", "1.0.0").await,
        *key.to_key_file()
    );

    // Refused: to an account without recipients, to nobody, with a bad
    // key id, range or wrapped key, or without the scope.
    let res = grant(&app, &alice.token, "trip-planner", "dave", &key, None).await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "no-recipients").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("agentlang keygen --prompt"),
        "{body}"
    );
    let _ = dave;
    let bad = |key_id: &str, versions: Value, wrapped: &str| json!({ "key_id": key_id, "versions": versions, "wrapped": wrapped });
    let wrapped = grants::wrap(&[bob_id.recipient()], key.to_key_file().as_bytes()).unwrap();
    let res = send(
        &app,
        Method::PUT,
        "/api/v1/agents/trip-planner/grants/nobody",
        &alice.token,
        Some(bad(key.id().as_str(), Value::Null, &wrapped)),
    )
    .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = send(
        &app,
        Method::PUT,
        "/api/v1/agents/trip-planner/grants/bob",
        &alice.token,
        Some(bad("XYZ", json!("not a range"), "hello")),
    )
    .await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    let fields: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["key_id", "versions", "wrapped"], "{body}");
    let narrow = app.account_with_token("erin", &["publish", "owners"]).await;
    let res = send(
        &app,
        Method::GET,
        "/api/v1/agents/trip-planner/1.0.0/prompt-key",
        &narrow,
        None,
    )
    .await;
    problem(res, StatusCode::FORBIDDEN, "missing-scope").await;

    // The agent page shows who holds grants to its owners only, on a page
    // rendered for their session and never stored by a shared cache.
    let page = |cookie: Option<String>| {
        let mut req = app.request(Method::GET, "/agents/trip-planner");
        if let Some(cookie) = cookie {
            req = req.header("cookie", cookie);
        }
        async move { req.send().await.unwrap() }
    };
    let password = agentlang_registry_testing::seed::PASSWORD;
    let alice_cookie = crate::catalog::sign_in(&app, "alice", password)
        .await
        .unwrap();
    let res = page(Some(alice_cookie)).await;
    assert_eq!(res.headers()["cache-control"], "private, no-store");
    let html = res.text().await.unwrap();
    assert!(html.contains("id=\"grants-heading\""), "{html}");
    assert!(html.contains(">bob</a>"), "{html}");
    let carol_cookie = crate::catalog::sign_in(&app, "carol", password)
        .await
        .unwrap();
    for cookie in [None, Some(carol_cookie)] {
        let html = page(cookie).await.text().await.unwrap();
        assert!(html.contains("Prompt: sealed"), "{html}");
        assert!(!html.contains("grants-heading"), "{html}");
        assert!(!html.contains(">bob</a>"), "{html}");
    }

    // Revoked: bob can fetch no more; revoking again finds nothing.
    let res = send(
        &app,
        Method::DELETE,
        "/api/v1/agents/trip-planner/grants/bob",
        &alice.token,
        None,
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let res = fetch_key(&app, &bob.token, "trip-planner", "1.0.0").await;
    problem(res, StatusCode::NOT_FOUND, "no-grant").await;
    let res = send(
        &app,
        Method::DELETE,
        "/api/v1/agents/trip-planner/grants/bob",
        &alice.token,
        None,
    )
    .await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = send(
        &app,
        Method::GET,
        "/api/v1/account/grants",
        &bob.token,
        None,
    )
    .await;
    assert_eq!(json_of(res, StatusCode::OK).await["grants"], json!([]));

    // Every grant entry names the agent and the owner, never bob.
    let entries = app.log_entries().await;
    let grant_entries: Vec<&Value> = entries
        .iter()
        .filter(|e| matches!(e["op"].as_str(), Some("grant_add" | "grant_revoke")))
        .collect();
    assert_eq!(grant_entries.len(), 4);
    for entry in grant_entries {
        assert_eq!(entry["account"], "alice", "{entry}");
        assert!(!entry.to_string().contains("bob"), "{entry}");
        assert_eq!(entry["grant"].as_str().unwrap().len(), 64);
    }

    // Audit lists: the owner's and the grantee's.
    let res = send(
        &app,
        Method::GET,
        "/api/v1/account/audit",
        &alice.token,
        None,
    )
    .await;
    let audit = json_of(res, StatusCode::OK).await.to_string();
    assert!(
        audit.contains("grant_added") && audit.contains("grant_revoked"),
        "{audit}"
    );
    let res = send(&app, Method::GET, "/api/v1/account/audit", &bob.token, None).await;
    let audit = json_of(res, StatusCode::OK).await.to_string();
    assert!(
        audit.contains("granted") && audit.contains("grant_withdrawn"),
        "{audit}"
    );
}

async fn open_agents_have_no_key_to_grant(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = account(&app, "alice").await;
    let bob = account(&app, "bob").await;
    registered_identity(&app, &bob.token).await;
    let key = PromptKey::generate().unwrap();

    // The version record says which mode, and the sealed one's key id.
    let open = published(
        &app,
        &alice.token,
        agent_container(&alice.key, "open-helper", "1.0.0", None),
    )
    .await;
    assert_eq!(open["prompt"], "open");
    assert!(open.get("prompt_key_id").is_none(), "{open}");
    let sealed = published(
        &app,
        &alice.token,
        agent_container(&alice.key, "sealed-helper", "1.0.0", Some(&key)),
    )
    .await;
    assert_eq!(sealed["prompt"], "sealed");
    assert_eq!(sealed["prompt_key_id"], key.id().as_str());
    for (path, mode) in [
        ("/api/v1/agents/open-helper/1.0.0", "open"),
        ("/api/v1/agents/sealed-helper/1.0.0", "sealed"),
    ] {
        let record = json_of(app.get(path).await, StatusCode::OK).await;
        assert_eq!(record["prompt"], mode, "{record}");
    }
    let tool_record = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    assert!(tool_record.get("prompt").is_none(), "{tool_record}");
    let package = json_of(
        app.get("/api/v1/agents/sealed-helper").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(package["versions"][0]["prompt"], "sealed");

    // An open agent has no key to grant or fetch.
    let res = grant(&app, &alice.token, "open-helper", "bob", &key, None).await;
    problem(res, StatusCode::CONFLICT, "agent-open").await;
    let res = fetch_key(&app, &bob.token, "open-helper", "1.0.0").await;
    problem(res, StatusCode::CONFLICT, "agent-open").await;
    // A tool is no agent.
    let res = grant(&app, &alice.token, "web_fetch", "bob", &key, None).await;
    problem(res, StatusCode::NOT_FOUND, "not-found").await;

    // The agent page says which, and shows an open agent's prompt.
    let page = app.get("/agents/open-helper").await.text().await.unwrap();
    assert!(
        page.contains("anyone who downloads it can read and run it"),
        "{page}"
    );
    assert!(
        page.contains("Research carefully."),
        "the open prompt is shown"
    );
    let page = app.get("/agents/sealed-helper").await.text().await.unwrap();
    assert!(
        page.contains("only its owners and the accounts they grant it to can run it"),
        "{page}"
    );
}

async fn key_ids_and_ranges_select_the_versions_a_grant_covers(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = account(&app, "alice").await;
    let bob = account(&app, "bob").await;
    let bob_id = registered_identity(&app, &bob.token).await;
    let (k1, k2) = (
        PromptKey::generate().unwrap(),
        PromptKey::generate().unwrap(),
    );
    for (version, key) in [
        ("0.9.0", &k1),
        ("1.0.0", &k1),
        ("1.1.0", &k1),
        ("2.0.0", &k2),
    ] {
        published(
            &app,
            &alice.token,
            agent_container(&alice.key, "ranged", version, Some(key)),
        )
        .await;
    }
    // 0.9.0 as a container built before key ids were recorded holds it.
    execute(
        &app.store().db,
        "UPDATE versions SET prompt_key_id = NULL WHERE version = '0.9.0'",
    )
    .await;
    let fetch_ok = async |version: &str, key: &PromptKey| {
        assert_eq!(
            fetched_key(&app, &bob.token, &bob_id, "ranged", version).await,
            *key.to_key_file(),
            "{version}"
        );
    };
    let no_grant = async |version: &str| {
        let res = fetch_key(&app, &bob.token, "ranged", version).await;
        problem(res, StatusCode::NOT_FOUND, "no-grant").await;
    };

    // K1 without a range: the versions K1 sealed and recorded.
    let res = grant(&app, &alice.token, "ranged", "bob", &k1, None).await;
    json_of(res, StatusCode::CREATED).await;
    fetch_ok("1.0.0", &k1).await;
    fetch_ok("1.1.0", &k1).await;
    no_grant("0.9.0").await;
    no_grant("2.0.0").await;

    // K1 limited to a range: those of them in it, and a keyless version
    // in it too.
    let res = grant(
        &app,
        &alice.token,
        "ranged",
        "bob",
        &k1,
        Some(">=0.9, <1.1"),
    )
    .await;
    json_of(res, StatusCode::OK).await;
    fetch_ok("0.9.0", &k1).await;
    fetch_ok("1.0.0", &k1).await;
    no_grant("1.1.0").await;
    no_grant("2.0.0").await;

    // K2 for ^1 covers none of its versions; without a range, 2.0.0.
    let res = grant(&app, &alice.token, "ranged", "bob", &k2, Some("^1")).await;
    json_of(res, StatusCode::CREATED).await;
    no_grant("2.0.0").await;
    let res = grant(&app, &alice.token, "ranged", "bob", &k2, None).await;
    json_of(res, StatusCode::OK).await;
    fetch_ok("2.0.0", &k2).await;
    fetch_ok("1.0.0", &k1).await;

    // Two live grants (one per key); the owner's listing shows both, and
    // revoking takes both.
    let res = send(
        &app,
        Method::GET,
        "/api/v1/agents/ranged/grants",
        &alice.token,
        None,
    )
    .await;
    let listed = json_of(res, StatusCode::OK).await;
    let mut key_ids: Vec<&str> = listed["grants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key_id"].as_str().unwrap())
        .collect();
    key_ids.sort_unstable();
    let mut expected = [k1.id(), k2.id()];
    expected.sort();
    assert_eq!(
        key_ids,
        expected.iter().map(PromptKeyId::as_str).collect::<Vec<_>>()
    );
    let res = send(
        &app,
        Method::DELETE,
        "/api/v1/agents/ranged/grants/bob",
        &alice.token,
        None,
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    no_grant("1.0.0").await;
    no_grant("2.0.0").await;
}
