//! Signed A2A Agent Cards: what a card says and where each field comes
//! from, its signature against the registry's key set (checked here with
//! core's verifier and by the A2A Python SDK, which nobody here wrote),
//! caching, the newest version's card, and the 404s that say why.

use std::{path::Path, time::Duration};

use agentlang_core::{a2a, protocol::canonical};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use reqwest::{Method, StatusCode, header};
use serde_json::{Value, json};

use crate::{
    conformance::run,
    publish::{PROMPT_YAML, locked_agent, publish, published, publisher},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    a_card_says_what_the_version_declares_and_verifies_with_the_key_set,
    the_newest_card_is_the_newest_version_not_yanked,
    versions_without_an_interface_answer_why,
    bad_endpoints_are_refused_at_publish_with_their_paths,
    the_a2a_sdk_verifies_the_cards_and_refuses_changed_ones,
);

/// The SKILL.md of the agent's one skill.
const SKILL_MD: &str = "---\nname: summarize\ndescription: Summarizes long documents.\n---\n\n# Summarize\n\nRead, then condense.\n";

/// agent.yaml of `name` at `version`, with `protocols` (indented list
/// entries) when given.
fn agent_yaml(name: &str, version: &str, protocols: Option<&str>) -> String {
    let mut yaml = format!(
        "name: {name}\nversion: {version}\ntitle: Trip Planner\n\
         description: Plans trips end to end.\n\
         models:\n  claude-sonnet-4:\n    provider: anthropic\n\
         mcp_servers:\n  github:\n    command: npx\n    tools: [list_issues]\n\
         http_tools:\n  weather:\n    description: Today's forecast for a city\n\
         \x20   endpoint: https://api.example.com/weather\n    method: GET\n\
         skills:\n  - name: summarize\n"
    );
    if let Some(protocols) = protocols {
        yaml.push_str("protocols:\n");
        yaml.push_str(protocols);
    }
    yaml
}

/// The a2a entry with an endpoint at `url`.
fn a2a_entry(url: &str) -> String {
    format!(
        "  - name: a2a\n    version: ^2.0.0\n    endpoint:\n      url: {url}\n      binding: JSONRPC\n"
    )
}

/// agent.lock pinning a2a as the registry's seeded catalog chooses it.
const LOCK: &str = "version: \"1\"\nresolved_at: \"2025-01-29T10:30:00Z\"\nprotocols:\n  a2a:\n    version: 2.0.0\n    requirement: ^2.0.0\n    source: catalog\n";

/// An agent container: agent.yaml, prompt, skill and, when given, a lock.
fn agent(key: &agentlang_core::signing::SecretKey, yaml: &str, lock: Option<&str>) -> Vec<u8> {
    let files: Vec<(&str, &[u8])> = vec![
        ("prompt.yaml", PROMPT_YAML.as_bytes()),
        ("skills/summarize/SKILL.md", SKILL_MD.as_bytes()),
    ];
    locked_agent(key, yaml, &files, lock)
}

async fn get_json(app: &TestApp, path: &str) -> (reqwest::header::HeaderMap, Value) {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    let headers = res.headers().clone();
    (headers, res.json().await.unwrap())
}

fn header_of(headers: &reqwest::header::HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

async fn a_card_says_what_the_version_declares_and_verifies_with_the_key_set(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let yaml = agent_yaml(
        "trip-planner",
        "1.0.0",
        Some(&a2a_entry("https://trips.example.com/a2a/v1")),
    );
    let record = published(&app, &alice.token, agent(&alice.key, &yaml, Some(LOCK))).await;
    let public = app.public_url();

    let path = "/agents/trip-planner/1.0.0/agent-card.json";
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK);
    let headers = res.headers().clone();
    assert_eq!(
        header_of(&headers, header::CONTENT_TYPE),
        "application/json"
    );
    assert_eq!(
        header_of(&headers, header::CACHE_CONTROL),
        "public, max-age=3600"
    );
    let etag = header_of(&headers, header::ETAG).to_owned();
    assert!(etag.starts_with('"') && etag.len() == 66, "{etag}");
    let bytes = res.bytes().await.unwrap();
    let card: Value = serde_json::from_slice(&bytes).unwrap();
    // Served in RFC 8785 form: one card, one byte string.
    assert_eq!(canonical::to_jcs_bytes(&card).unwrap(), bytes.to_vec());

    assert_eq!(card["name"], "Trip Planner");
    assert_eq!(card["description"], "Plans trips end to end.");
    assert_eq!(card["version"], "1.0.0");
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": "https://trips.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "2.0"}])
    );
    assert_eq!(
        card["provider"],
        json!({"organization": "alice", "url": format!("{public}/publishers/alice")})
    );
    assert_eq!(
        card["documentationUrl"],
        format!("{public}/agents/trip-planner/1.0.0")
    );
    assert_eq!(card["defaultInputModes"], json!(["text/plain"]));
    let skills: Vec<(&str, &str)> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap(),
                s["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        skills,
        [
            ("skill:summarize", "Summarizes long documents."),
            ("mcp:github", "The MCP server github's tools: list_issues."),
            ("http:weather", "Today's forecast for a city"),
        ]
    );
    let extension = &card["capabilities"]["extensions"][0];
    assert_eq!(extension["uri"], a2a::PUBLICATION_EXTENSION);
    assert_eq!(
        extension["params"],
        json!({
            "containerSha256": record["sha256"],
            "logIndex": record["log"]["index"],
            "keyId": record["signer"]["key_id"],
        })
    );

    // The signature: the registry's key, named by kid and jku.
    let (jwks_headers, jwks) = get_json(&app, "/.well-known/jwks.json").await;
    assert_eq!(
        header_of(&jwks_headers, header::CACHE_CONTROL),
        "public, max-age=300"
    );
    let (_, identity) = get_json(&app, "/.well-known/moltspeak.json").await;
    assert_eq!(jwks["keys"][0]["kid"], identity["key_id"]);
    assert_eq!(jwks["keys"][0]["kty"], "OKP");
    assert_eq!(jwks["keys"][0]["crv"], "Ed25519");
    let protected: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(card["signatures"][0]["protected"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        protected,
        json!({"alg": "EdDSA", "typ": "JOSE", "kid": identity["key_id"], "jku": format!("{public}/.well-known/jwks.json")})
    );
    let key_set: a2a::Jwks = serde_json::from_value(jwks).unwrap();
    assert_eq!(
        a2a::verify(&card, &key_set).unwrap(),
        identity["key_id"].as_str().unwrap()
    );
    let mut changed = card.clone();
    changed["supportedInterfaces"][0]["url"] = json!("https://attacker.example/a2a");
    assert_eq!(
        a2a::verify(&changed, &key_set),
        Err(a2a::VerifyError::NoValidSignature)
    );

    // Conditional requests, and any spelling of the name.
    let res = app
        .request(Method::GET, path)
        .header(header::IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(header_of(res.headers(), header::ETAG), etag);
    assert!(res.bytes().await.unwrap().is_empty());
    let res = app.get("/agents/Trip_Planner/1.0.0/agent-card.json").await;
    assert_eq!(header_of(res.headers(), header::ETAG), etag);
    let res = app.request(Method::HEAD, path).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(header_of(res.headers(), header::ETAG), etag);

    // The agent's page links the card.
    let page = app.get("/agents/trip-planner").await.text().await.unwrap();
    assert!(
        page.contains(r#"<a href="/agents/trip-planner/1.0.0/agent-card.json">Agent Card</a>"#),
        "{page}"
    );
    assert!(page.contains("<code>https://trips.example.com/a2a/v1</code> (JSONRPC, A2A 2.0)"));
}

async fn the_newest_card_is_the_newest_version_not_yanked(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (version, url) in [
        ("1.0.0", "https://trips.example.com/a2a/v1"),
        ("1.1.0", "https://trips.example.com/a2a/v2"),
        ("1.2.0-beta.1", "https://trips.example.com/a2a/beta"),
    ] {
        let yaml = agent_yaml("trip-planner", version, Some(&a2a_entry(url)));
        published(&app, &alice.token, agent(&alice.key, &yaml, Some(LOCK))).await;
    }
    let latest = "/agents/trip-planner/.well-known/agent-card.json";
    let newest = |card: &Value| {
        (
            card["version"].as_str().unwrap().to_owned(),
            card["supportedInterfaces"][0]["url"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
    };
    // A release before a prerelease.
    let (headers, card) = get_json(&app, latest).await;
    assert_eq!(
        header_of(&headers, header::CACHE_CONTROL),
        "public, max-age=300"
    );
    assert_eq!(
        newest(&card),
        (
            "1.1.0".to_owned(),
            "https://trips.example.com/a2a/v2".to_owned()
        )
    );
    let (_, versioned) = get_json(&app, "/agents/trip-planner/1.1.0/agent-card.json").await;
    assert_eq!(card, versioned);

    let yank = |version: &'static str| {
        app.request(
            Method::POST,
            &format!("/api/v1/agents/trip-planner/{version}/yank"),
        )
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
    };
    assert_eq!(yank("1.1.0").await.unwrap().status(), StatusCode::OK);
    let (_, card) = get_json(&app, latest).await;
    assert_eq!(
        newest(&card),
        (
            "1.0.0".to_owned(),
            "https://trips.example.com/a2a/v1".to_owned()
        )
    );
    // A yanked version keeps its card.
    let (_, yanked) = get_json(&app, "/agents/trip-planner/1.1.0/agent-card.json").await;
    assert_eq!(yanked["version"], "1.1.0");

    // With every release yanked, the prerelease is the newest.
    assert_eq!(yank("1.0.0").await.unwrap().status(), StatusCode::OK);
    let (_, card) = get_json(&app, latest).await;
    assert_eq!(card["version"], "1.2.0-beta.1");
    assert_eq!(yank("1.2.0-beta.1").await.unwrap().status(), StatusCode::OK);
    let body = problem(app.get(latest).await, StatusCode::NOT_FOUND, "not-found").await;
    assert!(
        body["detail"].as_str().unwrap().contains("not yanked"),
        "{body}"
    );
}

async fn versions_without_an_interface_answer_why(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let cases = [
        ("1.0.0", None, None, "declares no a2a protocol"),
        (
            "1.1.0",
            Some("  - name: a2a\n    version: ^2.0.0\n".to_owned()),
            Some(LOCK),
            "without an endpoint",
        ),
        (
            "1.2.0",
            Some(a2a_entry("https://trips.example.com/a2a")),
            None,
            "pins no a2a version",
        ),
    ];
    for (version, protocols, lock, why) in cases {
        let yaml = agent_yaml("plain-agent", version, protocols.as_deref());
        published(&app, &alice.token, agent(&alice.key, &yaml, lock)).await;
        let body = problem(
            app.get(&format!("/agents/plain-agent/{version}/agent-card.json"))
                .await,
            StatusCode::NOT_FOUND,
            "no-a2a-interface",
        )
        .await;
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!(
                "agent plain-agent {version} has no A2A Agent Card: it "
            )) && detail.contains(why),
            "{body}"
        );
    }
    // The newest version decides.
    let body = problem(
        app.get("/agents/plain-agent/.well-known/agent-card.json")
            .await,
        StatusCode::NOT_FOUND,
        "no-a2a-interface",
    )
    .await;
    assert!(body["detail"].as_str().unwrap().contains("1.2.0"), "{body}");
    // No link on the page of a version without a card.
    let page = app.get("/agents/plain-agent").await.text().await.unwrap();
    assert!(!page.contains("agent-card.json"), "{page}");

    // Unknown agents and versions, and what cannot name one.
    for path in [
        "/agents/nobody/1.0.0/agent-card.json",
        "/agents/nobody/.well-known/agent-card.json",
        "/agents/plain-agent/9.9.9/agent-card.json",
        "/agents/plain-agent/1.0/agent-card.json",
        "/agents/-bad-/1.0.0/agent-card.json",
        "/agents/plain-agent/latest/agent-card.json",
    ] {
        problem(app.get(path).await, StatusCode::NOT_FOUND, "not-found").await;
    }
    // A tool is not an agent.
    published(
        &app,
        &alice.token,
        crate::publish::tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    problem(
        app.get("/agents/web_fetch/1.0.0/agent-card.json").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    // Cards are read only.
    let res = app
        .request(Method::POST, "/agents/plain-agent/1.0.0/agent-card.json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(header_of(res.headers(), header::ALLOW), "GET, HEAD");
}

async fn bad_endpoints_are_refused_at_publish_with_their_paths(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let protocols = "  - name: mcp\n    version: ^2024.11\n    endpoint: {url: https://trips.example.com/mcp, binding: JSONRPC}\n\
                     \x20 - name: a2a\n    version: ^2.0.0\n    endpoint: {url: \"http://trips.example.com/a2a\", binding: SOAP}\n";
    let yaml = agent_yaml("bad-endpoint", "1.0.0", Some(protocols));
    let body = problem(
        publish(&app, &alice.token, agent(&alice.key, &yaml, Some(LOCK))).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let errors: Vec<(&str, &str)> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["field"].as_str().unwrap(), e["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        errors.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
        [
            "agent.yaml:protocols[0].endpoint",
            "agent.yaml:protocols[1].endpoint.url",
            "agent.yaml:protocols[1].endpoint.binding",
        ],
        "{body}"
    );
    assert!(
        errors[0]
            .1
            .contains("only the a2a protocol takes an endpoint")
    );
    assert!(errors[1].1.contains("must start with https://"));
    assert!(
        errors[2]
            .1
            .contains("is not one of: JSONRPC | GRPC | HTTP+JSON")
    );
    // Nothing of it was written.
    problem(
        app.get("/api/v1/agents/bad-endpoint").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.get("/agents/bad-endpoint/1.0.0/agent-card.json").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

/// The Python with `a2a-sdk[signing]` and `rfc8785` that `.ci/run`
/// installs (`AGENTLANG_TEST_A2A_PYTHON`); `None` (the test is skipped)
/// without it, which fails under `CI=true`.
fn a2a_python() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_A2A_PYTHON").map(std::path::PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_A2A_PYTHON is not set (.ci/run installs a2a-sdk)"
        );
        eprintln!(
            "skipped: set AGENTLANG_TEST_A2A_PYTHON to a Python with a2a-sdk[signing] and rfc8785"
        );
    }
    found
}

async fn the_a2a_sdk_verifies_the_cards_and_refuses_changed_ones(backend: Backend) {
    let Some(python) = a2a_python() else {
        return;
    };
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // Text a canonical form must get right: non-ASCII, an emoji (a
    // surrogate pair in UTF-16), quotes and a tab.
    let yaml = agent_yaml(
        "trip-planner",
        "2.0.0",
        Some(&a2a_entry("https://trips.example.com/a2a/v1?tenant=eu")),
    )
    .replace(
        "description: Plans trips end to end.",
        "description: \"Plans trips — Zürich, 東京 😀, \\\"quoted\\\" and\\ttabbed.\"",
    );
    published(&app, &alice.token, agent(&alice.key, &yaml, Some(LOCK))).await;

    let (ok, output) = run(
        tokio::process::Command::new(&python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/a2a_card_check.py"))
            .arg(app.public_url())
            .arg("/agents/trip-planner/2.0.0/agent-card.json")
            .arg("/agents/trip-planner/.well-known/agent-card.json")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(120),
    )
    .await;
    assert!(ok, "the A2A SDK refused the card:\n{output}");
    assert_eq!(
        output.matches("verified: Trip Planner 2.0.0").count(),
        2,
        "{output}"
    );
    assert!(
        output.contains(
            "discovered: Trip Planner 2.0.0 at https://trips.example.com/a2a/v1?tenant=eu"
        ),
        "{output}"
    );
}
