//! MoltSpeak over HTTP: signed answers (checked with Python's `cryptography`
//! over a JCS encoder written in Python, independent of our code), key
//! checks against the registry's signing keys, and one test per error code.

use std::{io::Write, num::NonZeroU32, process::Command};

use agentlang_core::{
    Kind,
    protocol::moltspeak::{Classification, EncryptionSecret, MessageBuilder, Op, Party},
    signing::PublicKey,
};
use base64::Engine;
use ed25519_dalek::SigningKey;
use reqwest::StatusCode;
use serde_json::{Value, json};
use store::Db;

use crate::{
    clowl::{publish, seed_catalog},
    support::{Backend, TestApp, backend_tests, problem, seed::test_log_entry},
};

backend_tests!(
    hello_gets_a_hello_ack_signed_with_the_published_key,
    queries_get_signed_responds_with_registry_data,
    signed_queries_from_registered_keys_are_answered,
    unparsable_messages_get_e_parse,
    other_versions_get_e_version,
    missing_fields_get_e_missing_field,
    bad_signatures_get_e_signature,
    unregistered_keys_get_e_auth_failed,
    pii_without_consent_gets_e_consent,
    rate_limited_messages_get_e_rate_limit_with_a_delay,
    batches_are_answered_in_order,
    bodies_over_the_limits_get_413,
);

/// Checks every message's `sig` against `key` (`ed25519:<base64>`) with
/// Python: its own RFC 8785 encoder over the message without `sig`, then
/// `Ed25519PublicKey.verify`. A copy of each message with one payload value
/// changed must fail, so the check cannot pass vacuously.
const VERIFY_PY: &str = r#"
import base64, json, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

def jcs(v):
    if v is None: return "null"
    if v is True: return "true"
    if v is False: return "false"
    if isinstance(v, int): return str(v)
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 2**53: return str(int(v))
        raise ValueError("this encoder writes integers only: %r" % v)
    if isinstance(v, str): return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list): return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(v[k]) for k in keys) + "}"
    raise TypeError(type(v))

def b64(s, prefix):
    assert s.startswith(prefix), s
    return base64.b64decode(s[len(prefix):])

doc = json.load(sys.stdin)
key = Ed25519PublicKey.from_public_bytes(b64(doc["key"], "ed25519:"))
for m in doc["messages"]:
    sig = b64(m.pop("sig"), "ed25519:")
    key.verify(sig, jcs(m).encode("utf-8"))
    m["p"]["tampered"] = True
    try:
        key.verify(sig, jcs(m).encode("utf-8"))
    except InvalidSignature:
        pass
    else:
        sys.exit("a tampered message verified")
print("verified", len(doc["messages"]))
"#;

fn verify_with_python(key: &str, messages: &[Value]) {
    let mut child = Command::new("python3")
        .args(["-c", VERIFY_PY])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (CI installs it with cryptography)");
    let input = serde_json::to_vec(&json!({"key": key, "messages": messages})).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python verification failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("verified {}", messages.len())
    );
}

async fn well_known_key(app: &TestApp) -> String {
    let res = app.get("/.well-known/moltspeak.json").await;
    assert_eq!(res.status(), StatusCode::OK);
    let doc: Value = res.json().await.unwrap();
    assert_eq!(doc["agent"], "agentlang-registry");
    assert_eq!(doc["org"], "agentlang");
    // Attested by the registry's own key (moltspeak_operations checks the signatures).
    assert_eq!(doc["capabilities"][0]["capability"], "query");
    assert_eq!(doc["capabilities"][0]["attestation"]["org"], "agentlang");
    assert_eq!(
        doc["endpoints"]["message"],
        format!("{}/moltspeak/v0.1/message", app.url)
    );
    doc["key"].as_str().unwrap().to_owned()
}

async fn post_raw(app: &TestApp, path: &str, body: impl Into<reqwest::Body>) -> Value {
    let res = app
        .request(reqwest::Method::POST, path)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

async fn send(app: &TestApp, message: &Value) -> Value {
    post_raw(
        app,
        "/moltspeak/v0.1/message",
        serde_json::to_vec(message).unwrap(),
    )
    .await
}

fn query(id: &str, intent: &str, params: Value) -> Value {
    let mut message = json!({
        "v": "0.1",
        "id": id,
        "ts": 1_703_280_000_000_u64,
        "op": "query",
        "from": {"agent": "assistant-alpha", "org": "acme-corp"},
        "to": {"agent": "agentlang-registry", "org": "agentlang"},
        "p": {"domain": "registry", "intent": intent},
        "cls": "pub",
    });
    message["p"]["params"] = params;
    message
}

/// Checks an `error` answer to `re` and returns its payload.
fn error_payload<'a>(answer: &'a Value, re: &str, code: &str, category: &str) -> &'a Value {
    assert_eq!(answer["op"], "error", "{answer}");
    assert_eq!(answer["re"], re, "{answer}");
    let p = &answer["p"];
    assert_eq!(p["code"], code, "{answer}");
    assert_eq!(p["category"], category, "{answer}");
    assert!(p["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(p["recoverable"].is_boolean(), "{answer}");
    assert!(p["suggestion"]["action"].is_string(), "{answer}");
    assert!(answer["sig"].as_str().unwrap().starts_with("ed25519:"));
    p
}

/// A signing key of `owner`, registered with the registry; `register: false`
/// leaves it unknown.
async fn client_key(app: &TestApp, seed: u8, register: bool) -> SigningKey {
    let key = SigningKey::from_bytes(&[seed; 32]);
    if register {
        app.create_account("signer", "password-123").await;
        let public = PublicKey::from_raw(&key.verifying_key().to_bytes()).unwrap();
        let account = app.account_id("signer").await;
        app.store()
            .db
            .insert_signing_key(
                &public.key_id(),
                account,
                &public.to_spki_pem(),
                &test_log_entry(),
            )
            .await
            .unwrap();
    }
    key
}

fn signed_query(key: &SigningKey, id: &str, q: &str) -> Value {
    let mut from = Party::new("assistant-alpha", Some("acme-corp"));
    from.key = Some(key.verifying_key().into());
    let params = json!({"domain": "registry", "intent": "search", "params": {"q": q}});
    MessageBuilder::new(
        id,
        Op::Query,
        Classification::Public,
        params.as_object().cloned().unwrap(),
    )
    .from(&from)
    .ts(1_703_280_000_000)
    .build()
    .unwrap()
    .sign(key)
    .unwrap()
    .to_value()
}

/// A `hello` signed by a fresh key, announcing it and an X25519 key: the
/// handshake needs proof of possession, not a registered key.
fn signed_hello(id: &str, p: Value) -> Value {
    let key = SigningKey::from_bytes(&[42; 32]);
    let enc = EncryptionSecret::from_bytes([43; 32]);
    let mut from = Party::new("claude-assistant-a1b2", Some("anthropic"));
    from.key = Some(key.verifying_key().into());
    from.enc_key = Some(enc.public_key());
    MessageBuilder::new(
        id,
        Op::Hello,
        Classification::Public,
        match p {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        },
    )
    .from(&from)
    .ts(1_703_280_000_000)
    .build()
    .unwrap()
    .sign(&key)
    .unwrap()
    .to_value()
}

async fn hello_gets_a_hello_ack_signed_with_the_published_key(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let key = well_known_key(&app).await;
    let hello = signed_hello(
        "hello-1",
        json!({"protocol_versions": ["0.1"], "capabilities": ["query"]}),
    );
    let ack = send(&app, &hello).await;
    assert_eq!(ack["op"], "hello_ack", "{ack}");
    assert_eq!(ack["re"], "hello-1");
    assert_eq!(ack["from"]["agent"], "agentlang-registry");
    assert_eq!(ack["from"]["key"], key.as_str());
    assert_eq!(
        ack["to"],
        json!({"agent": "claude-assistant-a1b2", "org": "anthropic"})
    );
    assert_eq!(ack["p"]["protocol_versions"], json!(["0.1"]));
    assert_eq!(ack["p"]["capabilities"][0]["capability"], "query");
    assert_eq!(
        ack["p"]["domains"],
        json!({"registry": ["search", "resolve", "info"]})
    );
    assert_eq!(
        ack["p"]["supported_cls"],
        json!(["pub", "int", "conf", "pii", "sec"])
    );
    let challenge = ack["p"]["challenge"].as_str().unwrap();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(challenge.strip_prefix("base64:").unwrap())
            .unwrap()
            .len(),
        32
    );
    let doc: Value = app
        .get("/.well-known/moltspeak.json")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(ack["from"]["enc_key"], doc["enc_key"]);
    let id = uuid::Uuid::parse_str(ack["id"].as_str().unwrap()).unwrap();
    assert_eq!(id.get_version_num(), 7);
    verify_with_python(&key, &[ack]);
}

async fn queries_get_signed_responds_with_registry_data(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let key = well_known_key(&app).await;

    let search = send(
        &app,
        &query("q-search", "search", json!({"q": "search", "kind": "tool"})),
    )
    .await;
    assert_eq!(search["op"], "respond", "{search}");
    assert_eq!(search["re"], "q-search");
    assert_eq!(search["cls"], "pub");
    assert_eq!(search["p"]["status"], "success");
    assert!(
        search["p"]["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "web_search"),
        "{search}"
    );

    let info = send(
        &app,
        &query(
            "q-info",
            "info",
            json!({"kind": "agent", "name": "research-assistant", "version": "1.0.0"}),
        ),
    )
    .await;
    assert_eq!(info["re"], "q-info");
    assert_eq!(info["p"]["data"]["version"], "1.0.0", "{info}");
    assert_eq!(info["p"]["data"]["spec"]["tools"][0]["name"], "web_search");

    let resolve = send(
        &app,
        &query(
            "q-resolve",
            "resolve",
            json!({"tools": {"web_search": "~1.2"}}),
        ),
    )
    .await;
    assert_eq!(
        resolve["p"]["data"]["lock"]["tools"]["web_search"]["version"], "1.2.0",
        "{resolve}"
    );

    // The same data CLowl returns for the same task.
    let clowl = post_raw(
        &app,
        "/clowl",
        serde_json::to_vec(&json!({
            "clowl": "0.2", "mid": "0195f0a2-7c1e-7a3b-9d2e-2f1c8e4b6a01", "ts": 1, "p": "REQ", "from": "a", "to": "b", "cid": "c",
            "body": {"t": "read", "d": {"kind": "agent", "name": "research-assistant", "version": "1.0.0"}},
        }))
        .unwrap(),
    )
    .await;
    assert_eq!(clowl["body"]["d"], info["p"]["data"]);

    // Publishers' PII is masked on the way out, never sent unconsented.
    publish(
        &app,
        Kind::Agent,
        "mailer",
        "1.0.0",
        "Mails",
        json!({"name": "mailer", "developer": "Jane <jane@example.com>", "tags": ["call +1 415 555 0100"]}),
        &[],
    )
    .await;
    let masked = send(
        &app,
        &query(
            "q-pii",
            "info",
            json!({"kind": "agent", "name": "mailer", "version": "1.0.0"}),
        ),
    )
    .await;
    assert_eq!(masked["op"], "respond", "{masked}");
    assert_eq!(
        masked["p"]["data"]["spec"]["developer"],
        "[redacted: email]"
    );
    assert_eq!(masked["p"]["data"]["spec"]["tags"][0], "[redacted: phone]");
    assert_eq!(masked["p"]["data"]["name"], "mailer");

    let unknown = send(
        &app,
        &query("q-none", "info", json!({"kind": "tool", "name": "nope"})),
    )
    .await;
    let p = error_payload(&unknown, "q-none", "E_INVALID_PARAM", "validation");
    assert_eq!(p["message"], "tool nope not found");

    verify_with_python(&key, &[search, info, masked, unknown]);
}

async fn signed_queries_from_registered_keys_are_answered(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    publish(
        &app,
        Kind::Tool,
        "web_search",
        "1.0.0",
        "Search",
        json!({}),
        &[],
    )
    .await;
    let key = client_key(&app, 7, true).await;
    let answer = send(&app, &signed_query(&key, "signed-1", "search")).await;
    assert_eq!(answer["op"], "respond", "{answer}");
    assert_eq!(answer["re"], "signed-1");
}

async fn unparsable_messages_get_e_parse(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let answer = post_raw(&app, "/moltspeak/v0.1/message", "{\"v\": \"0.1\", ").await;
    let p = error_payload(&answer, "unknown", "E_PARSE", "protocol");
    assert_eq!(p["recoverable"], true);
    verify_with_python(&well_known_key(&app).await, &[answer]);
}

async fn other_versions_get_e_version(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let mut message = query("old-1", "search", json!({"q": "x"}));
    message["v"] = json!("0.2");
    let answer = send(&app, &message).await;
    let p = error_payload(&answer, "old-1", "E_VERSION", "protocol");
    assert_eq!(p["recoverable"], false);
    assert_eq!(p["suggestion"]["supported_versions"], json!(["0.1"]));

    let hello = signed_hello("hello-9", json!({"protocol_versions": ["0.9"]}));
    let answer = send(&app, &hello).await;
    let p = error_payload(&answer, "hello-9", "E_VERSION", "protocol");
    assert_eq!(p["field"], "p.protocol_versions");
}

async fn missing_fields_get_e_missing_field(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let mut message = query("m-1", "search", json!({"q": "x"}));
    message.as_object_mut().unwrap().remove("cls");
    let p = error_payload(
        &send(&app, &message).await,
        "m-1",
        "E_MISSING_FIELD",
        "validation",
    )
    .clone();
    assert_eq!(p["field"], "cls");

    let mut message = query("m-2", "search", json!({"q": "x"}));
    message["p"].as_object_mut().unwrap().remove("domain");
    let answer = send(&app, &message).await;
    let p = error_payload(&answer, "m-2", "E_MISSING_FIELD", "validation");
    assert_eq!(p["field"], "p.domain");
    assert_eq!(p["suggestion"]["action"], "retry");
    // Addressed back to the sender.
    assert_eq!(
        answer["to"],
        json!({"agent": "assistant-alpha", "org": "acme-corp"})
    );

    let answer = send(&app, &query("m-3", "search", json!({"kind": "tool"}))).await;
    let p = error_payload(&answer, "m-3", "E_MISSING_FIELD", "validation");
    assert_eq!(p["field"], "p.params.q");
}

async fn bad_signatures_get_e_signature(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let key = client_key(&app, 9, true).await;
    let mut message = signed_query(&key, "tampered-1", "search");
    message["p"]["params"]["q"] = json!("something else");
    let answer = send(&app, &message).await;
    let p = error_payload(&answer, "tampered-1", "E_SIGNATURE", "auth");
    assert_eq!(p["recoverable"], false);
    assert_eq!(p["field"], "sig");
}

async fn unregistered_keys_get_e_auth_failed(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let key = client_key(&app, 11, false).await;
    let answer = send(&app, &signed_query(&key, "stranger-1", "search")).await;
    let p = error_payload(&answer, "stranger-1", "E_AUTH_FAILED", "auth");
    assert_eq!(p["field"], "from.key");
    assert!(
        p["message"].as_str().unwrap().contains("not registered"),
        "{p}"
    );
    assert_eq!(p["suggestion"]["action"], "register_key");

    // A registered key that has been revoked no longer authenticates.
    let revoked = client_key(&app, 13, true).await;
    let key_id = PublicKey::from_raw(&revoked.verifying_key().to_bytes())
        .unwrap()
        .key_id();
    let revoke = "UPDATE signing_keys SET revoked_at = 1 WHERE key_id = $1";
    match &app.store().db {
        Db::Sqlite { pool, .. } => sqlx::query(revoke)
            .bind(key_id.as_str())
            .execute(pool)
            .await
            .map(drop),
        Db::Postgres(pools) => sqlx::query(revoke)
            .bind(key_id.as_str())
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
    let answer = send(&app, &signed_query(&revoked, "revoked-1", "search")).await;
    let p = error_payload(&answer, "revoked-1", "E_AUTH_FAILED", "auth");
    assert!(p["message"].as_str().unwrap().contains("revoked"), "{p}");

    // Signed, but the key is not named.
    let mut message = signed_query(&key, "stranger-2", "search");
    message["from"].as_object_mut().unwrap().remove("key");
    let answer = send(&app, &message).await;
    error_payload(&answer, "stranger-2", "E_AUTH_FAILED", "auth");
}

async fn pii_without_consent_gets_e_consent(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let message = query("pii-1", "search", json!({"q": "jane@example.com"}));
    let answer = send(&app, &message).await;
    let p = error_payload(&answer, "pii-1", "E_CONSENT", "privacy");
    assert_eq!(p["recoverable"], true);
    assert_eq!(p["suggestion"]["action"], "request_consent");
    assert_eq!(p["suggestion"]["data_types"], json!(["email"]));
    assert_eq!(p["detected_pii"]["types"], json!(["email"]), "{p}");
}

async fn rate_limited_messages_get_e_rate_limit_with_a_delay(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.agent_messages_per_minute = NonZeroU32::new(1).unwrap())
        .build()
        .await
    else {
        return;
    };
    let first = send(&app, &query("r-1", "search", json!({"q": "x"}))).await;
    assert_eq!(first["op"], "respond", "{first}");
    let answer = send(&app, &query("r-2", "search", json!({"q": "x"}))).await;
    let p = error_payload(&answer, "r-2", "E_RATE_LIMIT", "transport");
    assert_eq!(p["recoverable"], true);
    assert_eq!(p["suggestion"]["action"], "retry_after");
    let delay = p["suggestion"]["delay_ms"].as_u64().unwrap();
    assert!((1000..=60_000).contains(&delay), "{delay}");
    assert_eq!(p["context"], json!({"limit": 1, "window": "1m"}));
}

async fn batches_are_answered_in_order(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let key = well_known_key(&app).await;
    let envelope = json!({
        "moltspeak": "0.1",
        "envelope": {"encrypted": false, "compressed": false, "encoding": "utf-8"},
        "message": query("b-3", "search", json!({"q": "x"})),
    });
    let batch = json!([
        signed_hello("b-1", json!({})),
        {"v": "0.1", "id": "b-2", "op": "query", "p": {}},
        envelope,
        query("b-4", "forecast", json!({})),
    ]);
    let answers = post_raw(
        &app,
        "/moltspeak/v0.1/batch",
        serde_json::to_vec(&batch).unwrap(),
    )
    .await;
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[0]["op"], "hello_ack");
    assert_eq!(answers[0]["re"], "b-1");
    error_payload(&answers[1], "b-2", "E_MISSING_FIELD", "validation");
    assert_eq!(answers[2]["op"], "respond");
    assert_eq!(answers[2]["re"], "b-3");
    let p = error_payload(&answers[3], "b-4", "E_INVALID_PARAM", "validation");
    assert_eq!(p["field"], "p.intent");
    verify_with_python(&key, answers);

    let answer = post_raw(&app, "/moltspeak/v0.1/batch", "{\"not\": \"an array\"}").await;
    error_payload(&answer, "unknown", "E_SCHEMA", "validation");
}

async fn bodies_over_the_limits_get_413(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    for (path, limit) in [
        ("/moltspeak/v0.1/message", 1 << 20),
        ("/moltspeak/v0.1/batch", 10 << 20),
    ] {
        let res = app
            .request(reqwest::Method::POST, path)
            .body(vec![b' '; limit + 1])
            .send()
            .await
            .unwrap();
        problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
    }
}
