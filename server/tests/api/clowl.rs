//! `POST /clowl` and `GET /api/v1/agents/{name}/{version}/caps` over HTTP:
//! each answer threads to its request, and each error path has its E-code.

use std::num::NonZeroU32;

use agentlang_core::digest::Sha256Digest;
use agentlang_core::{Kind, PackageName, Version};
use reqwest::StatusCode;
use serde_json::{Value, json};
use store::packages::{DependencyEdge, NewVersion};

use crate::support::{Backend, TestApp, backend_tests, problem, seed::test_log_entry};

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

fn request(p: &str, mid: &str, t: &str, d: Value) -> Value {
    let mut message = json!({
        "clowl": "0.2",
        "mid": mid,
        "ts": 1_709_078_400,
        "tid": format!("trace-{mid}"),
        "p": p,
        "from": "radar",
        "to": "agentlang-registry",
        "cid": format!("conv-{mid}"),
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
    assert_eq!(done["body"]["d"]["status"], "ok");
    assert_eq!(done["body"]["d"]["registry"], app.url.as_str());
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
        json!(["search", "read", "resolve", "capabilities", "status"])
    );

    // An agent announcing itself hears the registry's own CAPS back.
    let announce = json!({
        "clowl": "0.2", "mid": "caps-001", "ts": 1_709_078_400, "p": "CAPS", "from": "radar",
        "to": "*", "cid": "system",
        "body": {"t": "capabilities", "d": {"supports": ["search:web"], "clowl": "0.2"}},
    });
    let answer = post(&app, &announce).await;
    assert_eq!(answer["p"], "CAPS");
    assert_eq!(answer["pid"], "caps-001");
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
    assert_eq!(answer["pid"], "bad1");
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
    assert_eq!(answer["pid"], "v1");

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
