//! `POST /clowl` and `GET /api/v1/agents/{name}/{version}/caps` over HTTP:
//! each answer threads to its request, and each error path has its E-code;
//! `auth`, `ctx`, `mid` and `status` against the real registry; and an
//! independent standard-library Python client (clowl_client.py) walking
//! the same exchanges.

use std::{num::NonZeroU32, path::Path, time::Duration};

use agentlang_core::digest::Sha256Digest;
use agentlang_core::{Kind, PackageName, Version};
use reqwest::StatusCode;
use serde_json::{Value, json};
use store::packages::{DependencyEdge, NewVersion};

use crate::conformance::run;
use crate::support::{Backend, TestApp, backend_tests, problem, proxy::Flow, seed::test_log_entry};

backend_tests!(
    tasks_are_answered_with_done_threaded_to_the_request,
    capabilities_inf_and_caps_are_answered,
    malformed_messages_get_e001,
    unknown_tasks_get_e005,
    bad_task_data_and_unknown_packages_get_e008,
    other_versions_get_e014,
    rate_limited_messages_get_e004_with_retry,
    bodies_over_the_limit_get_413,
    published_agents_have_caps,
    mids_must_be_uuid_v7,
    auth_must_be_a_live_token_of_this_registry,
    yank_changes_state_only_for_an_owner_token_in_a_req,
    ctx_refs_are_dereferenced_and_their_hash_checked,
    inline_context_is_counted_in_metrics,
    an_independent_python_client_walks_every_exchange,
);

/// Publishes a version through the storage API with `spec` and `deps`.
pub async fn publish(
    app: &TestApp,
    kind: Kind,
    name: &str,
    version: &str,
    description: &str,
    spec: Value,
    deps: &[(&str, &str)],
) {
    if app
        .store()
        .db
        .find_account(&agentlang_core::Username::parse("publisher").unwrap())
        .await
        .unwrap()
        .is_none()
    {
        assert_eq!(
            app.create_account("publisher", "password-123")
                .await
                .status(),
            StatusCode::CREATED
        );
    }
    let publisher = app.account_id("publisher").await;
    let name = PackageName::new(name).unwrap();
    let version = Version::parse(version).unwrap();
    let bytes = format!("container of {kind} {name}@{version}");
    let dependencies: Vec<DependencyEdge> = deps
        .iter()
        .map(|(dep, req)| DependencyEdge {
            kind: Kind::Tool,
            name: PackageName::new(*dep).unwrap(),
            requirement: req.parse().unwrap(),
        })
        .collect();
    app.store()
        .db
        .publish_version(&NewVersion {
            publisher_identity: None,
            provenance: None,
            kind,
            name: name.clone(),
            version: version.clone(),
            sha256: Sha256Digest::of(bytes.as_bytes()),
            size: bytes.len() as u64,
            signer_key_id: None,
            manifest: json!({"format": "agentlang.container/1", "kind": kind.as_str(), "name": name, "version": version}),
            spec: spec.clone(),
            lockfile: None,
            quality_report: None,
            extras: None,
            max_risk: None,
            prompt_mode: None,
            prompt_key_id: None,
            dependencies: dependencies.clone(),
            description: description.to_owned(),
            keywords: vec!["search".to_owned()],
            publisher,
            log_entry: test_log_entry(),
        })
        .await
        .unwrap();
}

/// Two tools (one depending on the other) and an agent using them.
pub async fn seed_catalog(app: &TestApp) {
    for version in ["1.2.0", "1.3.0"] {
        publish(
            app,
            Kind::Tool,
            "web_search",
            version,
            "Search the web",
            json!({"name": "web_search", "version": version}),
            &[("web_fetch", "^1")],
        )
        .await;
    }
    publish(
        app,
        Kind::Tool,
        "web_fetch",
        "1.0.0",
        "Fetch a page",
        json!({"name": "web_fetch", "version": "1.0.0"}),
        &[],
    )
    .await;
    publish(
        app,
        Kind::Agent,
        "research-assistant",
        "1.0.0",
        "Researches topics",
        json!({
            "name": "research-assistant",
            "version": "1.0.0",
            "tools": [{"name": "web_search", "version": "^1.2.0"}, {"name": "web_fetch"}],
            "protocols": [{"name": "a2a", "version": "^1.0.0"}],
        }),
        &[("web_search", "^1.2.0"), ("web_fetch", "*")],
    )
    .await;
}

/// A fresh UUIDv7, as the registry requires of every `mid`.
fn v7() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A message with a fresh UUIDv7 `mid`; `label` names its trace and
/// conversation.
fn request(p: &str, label: &str, t: &str, d: Value) -> Value {
    let mut message = json!({
        "clowl": "0.2",
        "mid": v7(),
        "ts": 1_709_078_400,
        "tid": format!("trace-{label}"),
        "p": p,
        "from": "radar",
        "to": "agentlang-registry",
        "cid": format!("conv-{label}"),
        "body": {"t": t},
    });
    message["body"]["d"] = d;
    message
}

/// Posts raw bytes; every CLowl answer is HTTP 200 with JSON.
async fn post_raw(app: &TestApp, body: impl Into<reqwest::Body>) -> Value {
    let res = app
        .request(reqwest::Method::POST, "/clowl")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

async fn post(app: &TestApp, message: &Value) -> Value {
    post_raw(app, serde_json::to_vec(message).unwrap()).await
}

/// Checks the answer threads to `req` and has a fresh UUIDv7 `mid` and a
/// current `ts`; returns it.
fn threaded(answer: Value, req: &Value, p: &str) -> Value {
    assert_eq!(answer["clowl"], "0.2", "{answer}");
    assert_eq!(answer["p"], p, "{answer}");
    assert_eq!(answer["pid"], req["mid"], "{answer}");
    assert_eq!(answer["cid"], req["cid"], "{answer}");
    assert_eq!(answer["tid"], req["tid"], "{answer}");
    assert_eq!(answer["to"], req["from"], "{answer}");
    assert_eq!(answer["from"], "agentlang-registry");
    let mid = uuid::Uuid::parse_str(answer["mid"].as_str().unwrap()).unwrap();
    assert_eq!(mid.get_version_num(), 7, "{answer}");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let ts = answer["ts"].as_i64().unwrap();
    assert!((now - 5..=now + 5).contains(&ts), "{ts} vs {now}");
    answer
}

fn error_code(answer: &Value) -> (&str, &str, bool) {
    assert_eq!(answer["p"], "ERR", "{answer}");
    assert_eq!(answer["body"]["t"], "error", "{answer}");
    let d = &answer["body"]["d"];
    (
        d["code"].as_str().unwrap(),
        d["msg"].as_str().unwrap(),
        d["retry"].as_bool().unwrap(),
    )
}

async fn tasks_are_answered_with_done_threaded_to_the_request(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;

    let req = request(
        "REQ",
        "m1",
        "search",
        json!({"q": "search", "kind": "tool"}),
    );
    let done = threaded(post(&app, &req).await, &req, "DONE");
    assert_eq!(done["body"]["t"], "search");
    let results = done["body"]["d"]["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"web_search") && names.contains(&"web_fetch"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"research-assistant"),
        "kind filter: {names:?}"
    );
    let web_search = results.iter().find(|r| r["name"] == "web_search").unwrap();
    assert_eq!(web_search["version"], "1.3.0");

    let req = request(
        "REQ",
        "m2",
        "read",
        json!({"kind": "tool", "name": "Web-Search"}),
    );
    let done = threaded(post(&app, &req).await, &req, "DONE");
    let versions: Vec<&str> = done["body"]["d"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.3.0", "1.2.0"]);

    let req = request(
        "QRY",
        "m3",
        "read",
        json!({"kind": "tool", "name": "web_search", "version": "1.2.0"}),
    );
    let done = threaded(post(&app, &req).await, &req, "DONE");
    let d = &done["body"]["d"];
    assert_eq!(d["version"], "1.2.0");
    assert_eq!(
        d["sha256"],
        Sha256Digest::of(b"container of tool web_search@1.2.0").to_hex()
    );
    assert_eq!(d["dependencies"], json!({"web_fetch": "^1"}));

    let req = request(
        "REQ",
        "m4",
        "resolve",
        json!({"tools": [{"name": "web_search", "version": "^1.2"}], "models": ["gpt-4o"]}),
    );
    let done = threaded(post(&app, &req).await, &req, "DONE");
    let lock = &done["body"]["d"]["lock"];
    assert_eq!(lock["tools"]["web_search"]["version"], "1.3.0", "{done}");
    assert_eq!(lock["tools"]["web_fetch"]["version"], "1.0.0", "{done}");
    assert_eq!(lock["models"]["gpt-4o"]["context_window"], 128_000);
    let yaml = done["body"]["d"]["lockfile"].as_str().unwrap();
    assert!(yaml.contains("web_search:"), "{yaml}");
    assert!(yaml.contains(&format!("registry: {}", app.url)), "{yaml}");

    // An existing lock keeps its pin while it still fits.
    let req = request(
        "REQ",
        "m5",
        "resolve",
        json!({"tools": {"web_search": "^1.2"}, "lock": yaml.replace("1.3.0", "1.2.0")}),
    );
    let done = threaded(post(&app, &req).await, &req, "DONE");
    assert_eq!(
        done["body"]["d"]["lock"]["tools"]["web_search"]["version"],
        "1.2.0"
    );

    let req = request("QRY", "m6", "status", json!({}));
    let done = threaded(post(&app, &req).await, &req, "DONE");
    let d = &done["body"]["d"];
    assert_eq!(d["status"], "ok", "{d}");
    assert_eq!(
        (&d["database"], &d["storage"], &d["log"]),
        (&json!("ok"), &json!("ok"), &json!("ok")),
        "{d}"
    );
    assert!(d["log_size"].as_u64().is_some(), "{d}");
    assert_eq!(d["registry"], app.url.as_str());
}

async fn capabilities_inf_and_caps_are_answered(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let req = request("REQ", "c1", "capabilities", json!({}));
    let caps = threaded(post(&app, &req).await, &req, "CAPS");
    assert_eq!(caps["body"]["t"], "capabilities");
    assert_eq!(caps["body"]["d"]["clowl"], "0.2");
    assert_eq!(
        caps["body"]["d"]["supports"],
        json!([
            "search",
            "read",
            "resolve",
            "capabilities",
            "status",
            "yank",
            "unyank"
        ])
    );

    // An agent announcing itself hears the registry's own CAPS back.
    let announce = json!({
        "clowl": "0.2", "mid": v7(), "ts": 1_709_078_400, "p": "CAPS", "from": "radar",
        "to": "*", "cid": "system",
        "body": {"t": "capabilities", "d": {"supports": ["search:web"], "clowl": "0.2"}},
    });
    let answer = post(&app, &announce).await;
    assert_eq!(answer["p"], "CAPS");
    assert_eq!(answer["pid"], announce["mid"]);
    assert_eq!(answer["to"], "radar");

    let req = request("INF", "i1", "notify", json!({"note": "hello"}));
    let ack = threaded(post(&app, &req).await, &req, "ACK");
    assert_eq!(ack["body"], json!({"t": "notify", "d": {}}));
}

async fn malformed_messages_get_e001(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let answer = post_raw(&app, "{not json").await;
    let (code, msg, retry) = error_code(&answer);
    assert_eq!(code, "E001");
    assert!(msg.contains("not valid JSON"), "{msg}");
    assert!(retry);
    // Nobody to thread to: broadcast, in a conversation of its own.
    assert_eq!(answer["to"], "*");
    assert!(answer.get("pid").is_none(), "{answer}");

    let mut req = request("REQ", "bad1", "search", json!({"q": "x"}));
    req.as_object_mut().unwrap().remove("from");
    let answer = post(&app, &req).await;
    let (code, msg, _) = error_code(&answer);
    assert_eq!(code, "E001");
    assert_eq!(msg, "from: required field is missing");
    assert_eq!(answer["pid"], req["mid"]);
    assert_eq!(answer["cid"], "conv-bad1");
}

async fn unknown_tasks_get_e005(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let req = request("REQ", "u1", "deploy", json!({}));
    let answer = threaded(post(&app, &req).await, &req, "ERR");
    let (code, msg, retry) = error_code(&answer);
    assert_eq!(code, "E005");
    assert!(msg.starts_with("body.t: unknown task \"deploy\""), "{msg}");
    assert!(!retry);

    let req = request("DONE", "u2", "search", json!({}));
    let answer = threaded(post(&app, &req).await, &req, "ERR");
    assert_eq!(error_code(&answer).0, "E005");
}

async fn bad_task_data_and_unknown_packages_get_e008(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let cases = [
        (json!({}), "search", "body.d.q: required field is missing"),
        (
            json!({"q": "x", "page": "two"}),
            "search",
            "body.d.page: must be an integer",
        ),
        (
            json!({"kind": "tool", "name": "nope"}),
            "read",
            "tool nope not found",
        ),
        (
            json!({"kind": "tool", "name": "web_search", "version": "9.9.9"}),
            "read",
            "tool web_search 9.9.9 not found",
        ),
        (
            json!({"tools": {"web_search": "^7"}}),
            "resolve",
            "the tool requirements cannot be met",
        ),
        (
            json!({"tools": {"missing_tool": "^1"}}),
            "resolve",
            "body.d.tools.missing_tool: no tool named missing_tool",
        ),
    ];
    for (i, (d, task, expected)) in cases.into_iter().enumerate() {
        let req = request("REQ", &format!("e{i}"), task, d);
        let answer = threaded(post(&app, &req).await, &req, "ERR");
        let (code, msg, retry) = error_code(&answer);
        assert_eq!(code, "E008", "{answer}");
        assert!(
            msg.starts_with(expected),
            "{msg:?} should start with {expected:?}"
        );
        assert!(retry);
    }
}

async fn other_versions_get_e014(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let mut req = request("REQ", "v1", "search", json!({"q": "x"}));
    req["clowl"] = json!("0.3");
    let answer = post(&app, &req).await;
    let (code, msg, retry) = error_code(&answer);
    assert_eq!(code, "E014");
    assert!(msg.contains("\"0.3\" is not supported"), "{msg}");
    assert!(!retry);
    assert_eq!(answer["pid"], req["mid"]);

    // CLowl 0.1's compact form.
    let old = json!({"cl": "0.1", "mid": "v2", "p": "REQ", "from": "a", "to": "b", "cid": "c",
                     "body": {"t": "search", "d": {}}, "ctx": "x"});
    assert_eq!(error_code(&post(&app, &old).await).0, "E014");
}

async fn rate_limited_messages_get_e004_with_retry(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.agent_messages_per_minute = NonZeroU32::new(2).unwrap())
        .build()
        .await
    else {
        return;
    };
    for i in 0..2 {
        let req = request("REQ", &format!("ok{i}"), "capabilities", json!({}));
        assert_eq!(post(&app, &req).await["p"], "CAPS");
    }
    let req = request("REQ", "limited", "capabilities", json!({}));
    let answer = threaded(post(&app, &req).await, &req, "ERR");
    let (code, msg, retry) = error_code(&answer);
    assert_eq!(code, "E004");
    assert!(msg.starts_with("rate limited; retry in "), "{msg}");
    assert!(retry);
}

async fn bodies_over_the_limit_get_413(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let res = app
        .request(reqwest::Method::POST, "/clowl")
        .body(vec![b' '; (1 << 20) + 1])
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
}

async fn published_agents_have_caps(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let res = app
        .get("/api/v1/agents/research-assistant/1.0.0/caps")
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let caps: Value = res.json().await.unwrap();
    assert_eq!(caps["p"], "CAPS");
    assert_eq!(caps["to"], "*");
    assert_eq!(caps["cid"], "system");
    assert_eq!(caps["from"], "research-assistant");
    assert_eq!(
        caps["body"],
        json!({"t": "capabilities", "d": {
            "supports": ["protocol:a2a", "tool:web_fetch", "tool:web_search"],
            "clowl": "0.2",
        }})
    );
    for missing in [
        "/api/v1/agents/research-assistant/2.0.0/caps",
        "/api/v1/agents/nobody/1.0.0/caps",
        "/api/v1/agents/web_search/1.2.0/caps",
        "/api/v1/agents/research-assistant/not-semver/caps",
    ] {
        problem(app.get(missing).await, StatusCode::NOT_FOUND, "not-found").await;
    }
}

/// The container text `publish` stores the digest of.
fn container_digest(kind: &str, name: &str, version: &str) -> String {
    Sha256Digest::of(format!("container of {kind} {name}@{version}").as_bytes()).to_prefixed()
}

async fn mids_must_be_uuid_v7(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    for mid in [
        "m004".to_owned(),
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::now_v7().simple().to_string(),
    ] {
        let mut req = request("REQ", "mid", "capabilities", json!({}));
        req["mid"] = json!(mid);
        let answer = threaded(post(&app, &req).await, &req, "ERR");
        let (code, msg, retry) = error_code(&answer);
        assert_eq!(code, "E001", "{mid}: {answer}");
        assert!(msg.starts_with("mid: must be a UUIDv7"), "{msg}");
        assert!(retry);
    }
    // The spec's own CAPS example (`caps-001`) is refused here too.
    let announce = json!({
        "clowl": "0.2", "mid": "caps-001", "ts": 1_709_078_400, "p": "CAPS", "from": "radar",
        "to": "*", "cid": "system",
        "body": {"t": "capabilities", "d": {"supports": [], "clowl": "0.2"}},
    });
    assert_eq!(error_code(&post(&app, &announce).await).0, "E001");
}

async fn auth_must_be_a_live_token_of_this_registry(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let token = app.account_with_token("alice", &["tokens"]).await;

    // Read tasks need no token, and a live one is accepted.
    let mut req = request("REQ", "a0", "search", json!({"q": "search"}));
    threaded(post(&app, &req).await, &req, "DONE");
    req["mid"] = json!(v7());
    req["auth"] = json!(token);
    threaded(post(&app, &req).await, &req, "DONE");

    // Garbage, another registry's token and a revoked one: E002, never DONE,
    // whatever the performative or task.
    let foreign = app::tokens::TokenKeys::new(&[9u8; 32], "http://elsewhere")
        .issue(1, "jti", "secret", 1, i64::MAX / 2)
        .unwrap();
    let listed: Value = app
        .request(reqwest::Method::GET, "/api/v1/tokens")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = listed["tokens"][0]["id"].as_str().unwrap().to_owned();
    let res = app
        .request(reqwest::Method::DELETE, &format!("/api/v1/tokens/{id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    for (bad, why) in [
        (
            "garbage-token".to_owned(),
            "not a valid token of this registry",
        ),
        (foreign, "not a valid token of this registry"),
        (token, "the token has been revoked"),
    ] {
        for (p, t) in [("REQ", "search"), ("QRY", "status"), ("INF", "notify")] {
            let mut req = request(p, "bad-auth", t, json!({"q": "search"}));
            req["auth"] = json!(bad);
            let answer = threaded(post(&app, &req).await, &req, "ERR");
            let (code, msg, retry) = error_code(&answer);
            assert_eq!(code, "E002", "{answer}");
            assert!(msg.starts_with("auth: "), "{msg}");
            assert!(msg.contains(why), "{msg} should say {why}");
            assert!(!retry);
        }
    }
}

async fn yank_changes_state_only_for_an_owner_token_in_a_req(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let owner = app.token("publisher", &["yank"]).await;
    let unscoped = app.token("publisher", &["publish"]).await;
    let stranger = app.account_with_token("mallory", &["yank"]).await;
    let target =
        json!({"kind": "tool", "name": "web_search", "version": "1.2.0", "reason": "CVE-2026-1"});
    let yanked = || async {
        let v: Value = app
            .get("/api/v1/tools/web_search/1.2.0")
            .await
            .json()
            .await
            .unwrap();
        v["yanked"].as_bool().unwrap()
    };

    let refusals = [
        (None, "yank changes state"),
        (Some(&unscoped), "lacks the \"yank\" scope"),
        (Some(&stranger), "owner"),
    ];
    for (auth, why) in refusals {
        let mut req = request("REQ", "yank", "yank", target.clone());
        if let Some(auth) = auth {
            req["auth"] = json!(auth);
        }
        let answer = threaded(post(&app, &req).await, &req, "ERR");
        let (code, msg, retry) = error_code(&answer);
        assert_eq!(code, "E002", "{answer}");
        assert!(msg.contains(why), "{msg} should say {why}");
        assert!(!retry);
        assert!(!yanked().await);
    }
    // A query never acts, even with the right token.
    let mut req = request("QRY", "yank", "yank", target.clone());
    req["auth"] = json!(owner);
    let answer = threaded(post(&app, &req).await, &req, "ERR");
    assert_eq!(error_code(&answer).0, "E005", "{answer}");
    assert!(!yanked().await);

    // Task data is checked with field paths.
    let mut req = request(
        "REQ",
        "yank",
        "yank",
        json!({"kind": "tool", "name": "web_search"}),
    );
    req["auth"] = json!(owner);
    let answer = threaded(post(&app, &req).await, &req, "ERR");
    assert_eq!(
        error_code(&answer),
        ("E008", "body.d.version: required field is missing", true)
    );
    let mut req = request(
        "REQ",
        "yank",
        "yank",
        json!({"kind": "tool", "name": "web_search", "version": "1.2.0", "reason": "x".repeat(501)}),
    );
    req["auth"] = json!(owner);
    let answer = post(&app, &req).await;
    let (code, msg, _) = error_code(&answer);
    assert_eq!(code, "E008");
    assert!(msg.starts_with("body.d.reason: "), "{msg}");

    let mut req = request("REQ", "yank", "yank", target.clone());
    req["auth"] = json!(owner);
    let done = threaded(post(&app, &req).await, &req, "DONE");
    assert_eq!(done["body"]["t"], "yank");
    assert_eq!(done["body"]["d"]["yanked"], true, "{done}");
    assert_eq!(done["body"]["d"]["yank_reason"], "CVE-2026-1", "{done}");
    assert!(
        done["body"]["d"]["log"]["index"].as_i64().is_some(),
        "{done}"
    );
    assert!(yanked().await);

    let mut req = request(
        "REQ",
        "unyank",
        "unyank",
        json!({"kind": "tool", "name": "web_search", "version": "1.2.0"}),
    );
    req["auth"] = json!(owner);
    let done = threaded(post(&app, &req).await, &req, "DONE");
    assert_eq!(done["body"]["d"]["yanked"], false, "{done}");
    assert!(!yanked().await);
}

async fn ctx_refs_are_dereferenced_and_their_hash_checked(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let blob = app
        .store()
        .blobs
        .put(bytes::Bytes::from_static(b"shared notes"))
        .await
        .unwrap();
    let v120 = container_digest("tool", "web_search", "1.2.0");
    let v130 = container_digest("tool", "web_search", "1.3.0");
    let wrong = Sha256Digest::of(b"altered").to_prefixed();
    let own_url = format!("{}/api/v1/tools/web_search/1.2.0", app.public_url());
    let blob_ref = blob.to_prefixed();
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        // A version: its container's digest, in either ref form.
        (
            "v-ok",
            json!({"ref": "agentlang:tool/web_search@1.2.0", "inline": null, "hash": v120}),
            None,
        ),
        (
            "v-url",
            json!({"ref": own_url, "inline": null, "hash": v120}),
            None,
        ),
        (
            "v-nohash",
            json!({"ref": "agentlang:tool/web_search@1.2.0"}),
            None,
        ),
        (
            "v-bad",
            json!({"ref": "agentlang:tool/web_search@1.2.0", "inline": "fallback", "hash": v130}),
            Some("E016"),
        ),
        // A package: its newest unyanked version's container.
        (
            "p-ok",
            json!({"ref": "agentlang:tool/web_search", "hash": v130}),
            None,
        ),
        (
            "p-old",
            json!({"ref": "agentlang:tool/web_search", "hash": v120}),
            Some("E016"),
        ),
        // A blob by digest.
        ("b-ok", json!({"ref": blob_ref, "hash": blob_ref}), None),
        (
            "b-bad",
            json!({"ref": blob_ref, "hash": wrong}),
            Some("E016"),
        ),
        // Unreachable: not ours, not held, or a name that cannot be one.
        (
            "u-file",
            json!({"ref": "research/mcp-vs-a2a.md", "inline": null, "hash": null}),
            Some("E003"),
        ),
        (
            "u-made-up",
            json!({"ref": "agentlang:tool/web_search@9.9.9", "inline": null, "hash": wrong}),
            Some("E003"),
        ),
        (
            "u-blob",
            json!({"ref": wrong, "inline": null}),
            Some("E003"),
        ),
        (
            "u-foreign",
            json!({"ref": "https://elsewhere.example/api/v1/tools/web_search"}),
            Some("E003"),
        ),
        (
            "u-inline",
            json!({"ref": "https://elsewhere.example/x", "inline": "the gist", "hash": wrong}),
            None,
        ),
    ];
    for (label, ctx, expected) in cases {
        let mut req = request("QRY", label, "capabilities", json!({}));
        req["ctx"] = ctx;
        let answer = post(&app, &req).await;
        match expected {
            None => {
                threaded(answer, &req, "CAPS");
            }
            Some(code) => {
                let answer = threaded(answer, &req, "ERR");
                let (got, msg, retry) = error_code(&answer);
                assert_eq!(got, code, "{label}: {answer}");
                let field = if code == "E016" {
                    "ctx.hash: "
                } else {
                    "ctx: "
                };
                assert!(msg.starts_with(field), "{label}: {msg}");
                assert_eq!(retry, code == "E003", "{label}");
            }
        }
    }
}

/// The count of `clowl_inline_context_total{why}` in `/metrics`.
async fn inline_count(app: &TestApp, why: &str) -> u64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    let series = format!("agentlang_registry_clowl_inline_context_total{{why=\"{why}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .map_or(0, |n| n.trim().parse().unwrap())
}

async fn inline_context_is_counted_in_metrics(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let before = (
        inline_count(&app, "no_ref").await,
        inline_count(&app, "unreachable_ref").await,
    );
    let secret = "inline text that must stay out of the log";
    for (label, ctx) in [
        ("i1", json!({"ref": null, "inline": secret, "hash": null})),
        ("i2", json!({"ref": "research/a.md", "inline": secret})),
        ("i3", json!({"ref": "research/b.md", "inline": secret})),
    ] {
        let mut req = request("REQ", label, "capabilities", json!({}));
        req["ctx"] = ctx;
        threaded(post(&app, &req).await, &req, "CAPS");
    }
    // A reachable ref uses no inline text: not counted.
    let mut req = request("REQ", "i4", "capabilities", json!({}));
    req["ctx"] = json!({"ref": "agentlang:tool/nothing-here", "inline": null});
    assert_eq!(error_code(&post(&app, &req).await).0, "E003");
    assert_eq!(inline_count(&app, "no_ref").await, before.0 + 1);
    assert_eq!(inline_count(&app, "unreachable_ref").await, before.1 + 2);
}

/// A registry process on PostgreSQL + S3 behind proxies: `status` says
/// what `/readyz` says, and the inline path is logged without its text.
/// Multi-threaded: the proxies relay while the process starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_what_readyz_sees() {
    let Some(app) = TestApp::builder(Backend::PostgresS3)
        .process()
        .behind_proxies()
        .limits(|l| {
            l.database_timeout = Duration::from_secs(2);
            l.storage_timeout = Duration::from_secs(3);
        })
        .build()
        .await
    else {
        return;
    };
    let (db, s3) = app.proxies();
    let status = |label: &'static str| {
        let app = &app;
        async move {
            let req = request("QRY", label, "status", json!({}));
            threaded(post(app, &req).await, &req, "DONE")["body"]["d"].clone()
        }
    };
    let d = status("up").await;
    assert_eq!(
        (&d["status"], &d["database"], &d["storage"]),
        (&json!("ok"), &json!("ok"), &json!("ok")),
        "{d}"
    );

    s3.set(Flow::Cut);
    let d = status("s3-down").await;
    assert_eq!(
        (&d["status"], &d["database"], &d["storage"]),
        (&json!("degraded"), &json!("ok"), &json!("unreachable")),
        "{d}"
    );
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    s3.set(Flow::Open);

    db.set(Flow::Cut);
    let d = status("db-down").await;
    assert_eq!(
        (&d["status"], &d["database"], &d["storage"]),
        (&json!("degraded"), &json!("unreachable"), &json!("ok")),
        "{d}"
    );
    db.set(Flow::Open);

    let secret = "inline words that stay private";
    let mut req = request("REQ", "logged", "capabilities", json!({}));
    req["ctx"] = json!({"ref": "research/a.md", "inline": secret});
    threaded(post(&app, &req).await, &req, "CAPS");
    let mid = req["mid"].as_str().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !app.log().contains("context taken from ctx.inline") {
        assert!(std::time::Instant::now() < deadline, "{}", app.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = app.log();
    let line = log
        .lines()
        .find(|l| l.contains("context taken from ctx.inline"))
        .unwrap();
    assert!(line.contains(mid), "{line}");
    assert!(line.contains("unreachable_ref"), "{line}");
    assert!(!log.contains(secret), "{log}");
}

async fn an_independent_python_client_walks_every_exchange(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let owner = app.token("publisher", &["yank"]).await;
    let reader = app.account_with_token("reader", &["tokens"]).await;
    let python = std::env::var_os("AGENTLANG_TEST_PYTHON").unwrap_or_else(|| "python3".into());
    let (ok, output) = run(
        tokio::process::Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/clowl_client.py"))
            .arg(app.public_url())
            .arg(&owner)
            .arg(&reader)
            .arg("container of tool web_search@1.2.0")
            .arg("container of tool web_search@1.3.0")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(120),
    )
    .await;
    assert!(ok, "the Python CLowl client failed:\n{output}");
    assert!(output.contains("all exchanges passed"), "{output}");
    assert!(
        output.lines().filter(|l| l.starts_with("ok: ")).count() >= 15,
        "{output}"
    );
}
