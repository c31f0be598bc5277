//! The MCP Registry API (`/v0.1`, the MCP registry's `2025-12-01`
//! document): tools of `kind: mcp` listed as MCP servers, paged, filtered
//! and looked up as the document says, its errors in its shape; and the
//! document itself run against the registry by Schemathesis, a client
//! nobody here wrote (`schemathesis_finds_the_mcp_api_as_its_document_says`).

use std::{collections::BTreeMap, path::Path, process::Stdio, time::Duration};

use agentlang_core::{Kind, PackageName, Version, digest::Sha256Digest};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::packages::NewVersion;

use crate::{
    publish::{build, publish, published, publisher},
    support::{Backend, TestApp, backend_tests},
};

backend_tests!(
    servers_are_listed_by_name_in_pages_that_visit_each_once,
    lists_filter_by_search_time_and_version,
    one_server_its_versions_and_their_lifecycle,
    writes_answer_501_and_every_error_is_an_error_object,
    an_invalid_mcp_section_is_refused_at_publish_with_its_path,
    a_page_holds_at_most_100,
    a_page_costs_the_same_statements_whatever_the_catalog,
);

const NAMESPACE: &str = "com.example.registry";

async fn app(backend: Backend) -> Option<TestApp> {
    TestApp::builder(backend)
        .env("AGENTLANG_REGISTRY_MCP_NAMESPACE", NAMESPACE)
        .rate_limits_off()
        .build()
        .await
}

/// tool.yaml of an MCP server: a package, a remote, or neither.
fn mcp_tool_yaml(name: &str, version: &str, description: &str) -> String {
    format!(
        r#"name: {name}
version: {version}
description: {description}
kind: mcp
input_schema:
  type: object
mcp:
  packages:
    - registryType: npm
      identifier: "@acme/{name}"
      version: "{version}"
      runtimeHint: npx
      transport:
        type: stdio
      environmentVariables:
        - name: API_KEY
          isSecret: true
  remotes:
    - type: streamable-http
      url: https://{name}.acme.example/mcp
"#
    )
}

pub(crate) fn mcp_tool(
    key: &agentlang_core::signing::SecretKey,
    name: &str,
    version: &str,
) -> Vec<u8> {
    let yaml = mcp_tool_yaml(name, version, &format!("The {name} MCP server."));
    build(
        key,
        Kind::Tool,
        name,
        version,
        &[("tool.yaml", yaml.as_bytes())],
        1_738_146_600,
    )
}

/// A tool of another kind: never an MCP server.
fn http_tool(key: &agentlang_core::signing::SecretKey, name: &str, version: &str) -> Vec<u8> {
    let yaml = format!(
        "name: {name}\nversion: {version}\ndescription: Not MCP.\nkind: http\ninput_schema:\n  type: object\n"
    );
    build(
        key,
        Kind::Tool,
        name,
        version,
        &[("tool.yaml", yaml.as_bytes())],
        1_738_146_600,
    )
}

async fn get(app: &TestApp, path: &str) -> (StatusCode, Value) {
    let res = app.get(path).await;
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = res.text().await.unwrap();
    assert!(
        content_type.starts_with("application/json"),
        "{path}: {status} {content_type}: {text}"
    );
    (status, serde_json::from_str(&text).unwrap())
}

async fn ok(app: &TestApp, path: &str) -> Value {
    let (status, body) = get(app, path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

/// `(name, version)` of each entry of a list.
fn entries(list: &Value) -> Vec<(String, String)> {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["server"]["name"].as_str().unwrap().to_owned(),
                s["server"]["version"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn official(entry: &Value) -> &Value {
    &entry["_meta"]["io.modelcontextprotocol.registry/official"]
}

fn encoded(tool: &str) -> String {
    format!("{NAMESPACE}%2F{tool}")
}

/// Every page from the first, `limit` at a time, calling `between` after
/// each page; every entry seen, in order.
async fn walk(
    app: &TestApp,
    query: &str,
    mut between: impl AsyncFnMut(usize),
) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 100, "the walk does not end");
        let path = match &cursor {
            None => format!("/v0.1/servers?{query}"),
            Some(c) => format!("/v0.1/servers?{query}&cursor={c}"),
        };
        let body = ok(app, &path).await;
        let got = entries(&body);
        assert_eq!(body["metadata"]["count"], got.len(), "{body}");
        seen.extend(got);
        between(page).await;
        match body["metadata"]["nextCursor"].as_str() {
            Some(next) => {
                assert!(!next.is_empty());
                cursor = Some(next.to_owned());
            }
            None => break,
        }
    }
    seen
}

async fn servers_are_listed_by_name_in_pages_that_visit_each_once(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version) in [
        ("weather", "1.0.0"),
        ("Files-Server", "0.3.0"),
        ("weather", "1.1.0"),
        ("calendar", "2.0.0"),
        ("maps", "1.0.0"),
        ("zoo", "0.1.0"),
        ("calendar", "2.1.0-rc.1"),
    ] {
        published(&app, &alice.token, mcp_tool(&alice.key, name, version)).await;
    }
    // Not MCP servers: a tool of another kind, and an agent.
    published(
        &app,
        &alice.token,
        http_tool(&alice.key, "web_fetch", "1.0.0"),
    )
    .await;

    let all = ok(&app, "/v0.1/servers").await;
    let name = |tool: &str| format!("{NAMESPACE}/{tool}");
    let v = |s: &str| s.to_owned();
    // By normalized name, then publish order; every version an entry.
    assert_eq!(
        entries(&all),
        vec![
            (name("calendar"), v("2.0.0")),
            (name("calendar"), v("2.1.0-rc.1")),
            (name("Files-Server"), v("0.3.0")),
            (name("maps"), v("1.0.0")),
            (name("weather"), v("1.0.0")),
            (name("weather"), v("1.1.0")),
            (name("zoo"), v("0.1.0")),
        ]
    );
    assert_eq!(all["metadata"]["count"], 7);
    assert!(all["metadata"].get("nextCursor").is_none(), "{all}");
    let first = &all["servers"][4];
    assert_eq!(first["server"]["description"], "The weather MCP server.");
    assert_eq!(
        first["server"]["packages"][0]["identifier"],
        "@acme/weather"
    );
    assert_eq!(
        first["server"]["remotes"][0],
        json!({"type": "streamable-http", "url": "https://weather.acme.example/mcp"})
    );
    // The latest is the newest release, not a prerelease.
    let latest: Vec<bool> = all["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| official(s)["isLatest"].as_bool().unwrap())
        .collect();
    assert_eq!(latest, [true, false, true, true, false, true, true]);

    // Pages of 2, with a server and a version published between pages:
    // every entry there at the start is met exactly once, and nothing
    // twice, whatever lands before or after the cursor meanwhile.
    let before = entries(&all);
    let mut extra = vec![("aardvark", "1.0.0"), ("maps", "1.1.0"), ("yak", "1.0.0")].into_iter();
    let (app_ref, alice_ref) = (&app, &alice);
    let seen = walk(&app, "limit=2", async |_| {
        if let Some((tool, version)) = extra.next() {
            published(
                app_ref,
                &alice_ref.token,
                mcp_tool(&alice_ref.key, tool, version),
            )
            .await;
        }
    })
    .await;
    let mut counts: BTreeMap<&(String, String), usize> = BTreeMap::new();
    for entry in &seen {
        *counts.entry(entry).or_default() += 1;
    }
    assert!(counts.values().all(|n| *n == 1), "{seen:?}");
    for entry in &before {
        assert!(
            counts.contains_key(entry),
            "{entry:?} was never listed: {seen:?}"
        );
    }
    // Names only grow past the cursor: yak (after it) is met, aardvark
    // (before it) is not.
    assert!(seen.contains(&(name("yak"), v("1.0.0"))), "{seen:?}");
    assert!(!seen.contains(&(name("aardvark"), v("1.0.0"))), "{seen:?}");

    // version=latest: each server once, in pages too.
    let latest = walk(&app, "version=latest&limit=3", async |_| {}).await;
    assert_eq!(
        latest,
        vec![
            (name("aardvark"), v("1.0.0")),
            (name("calendar"), v("2.0.0")),
            (name("Files-Server"), v("0.3.0")),
            (name("maps"), v("1.1.0")),
            (name("weather"), v("1.1.0")),
            (name("yak"), v("1.0.0")),
            (name("zoo"), v("0.1.0")),
        ]
    );
}

async fn lists_filter_by_search_time_and_version(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (tool, version) in [
        ("weather", "1.0.0"),
        ("web-search", "1.0.0"),
        ("weather", "2.0.0"),
    ] {
        published(&app, &alice.token, mcp_tool(&alice.key, tool, version)).await;
    }
    let names = |body: &Value| -> Vec<String> {
        entries(body)
            .into_iter()
            .map(|(n, v)| format!("{n}@{v}"))
            .collect()
    };
    let search = |q: &str| format!("/v0.1/servers?search={q}");
    assert_eq!(
        names(&ok(&app, &search("eath")).await),
        [
            "com.example.registry/weather@1.0.0",
            "com.example.registry/weather@2.0.0"
        ]
    );
    // Any case; `-` and `_` alike; across the slash; the namespace alone
    // matches everything; another namespace nothing.
    assert_eq!(names(&ok(&app, &search("WEB_S")).await).len(), 1);
    assert_eq!(names(&ok(&app, &search("registry%2Fwe")).await).len(), 3);
    assert_eq!(names(&ok(&app, &search("example.reg")).await).len(), 3);
    assert_eq!(
        names(&ok(&app, &search("org.other%2Fweather")).await).len(),
        0
    );
    assert_eq!(names(&ok(&app, &search("%25")).await).len(), 0);

    assert_eq!(
        names(&ok(&app, "/v0.1/servers?version=2.0.0").await),
        ["com.example.registry/weather@2.0.0"]
    );
    assert_eq!(
        names(&ok(&app, "/v0.1/servers?version=latest").await),
        [
            "com.example.registry/weather@2.0.0",
            "com.example.registry/web-search@1.0.0"
        ]
    );
    assert_eq!(
        names(&ok(&app, "/v0.1/servers?version=%5E1").await).len(),
        0
    );

    // updated_since: a yank updates a version.
    let future = "2999-01-01T00:00:00Z";
    assert_eq!(
        names(&ok(&app, &format!("/v0.1/servers?updated_since={future}")).await).len(),
        0
    );
    let all = ok(
        &app,
        "/v0.1/servers?updated_since=2000-01-01T00:00:00%2B02:00",
    )
    .await;
    assert_eq!(names(&all).len(), 3);
    let published_at = official(&all["servers"][0])["publishedAt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        official(&all["servers"][0])["updatedAt"].as_str().unwrap(),
        published_at
    );
    // A yank a second later (timestamps are whole seconds).
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let since = app::time::rfc3339(app::time::now());
    let res = app
        .request(Method::POST, "/api/v1/tools/weather/1.0.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({"reason": "CVE-2099-1: upgrade to 2.0.0"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let changed = ok(&app, &format!("/v0.1/servers?updated_since={since}")).await;
    assert_eq!(names(&changed), ["com.example.registry/weather@1.0.0"]);
    let yanked = &official(&changed["servers"][0]);
    assert_eq!(yanked["status"], "deprecated");
    assert_eq!(yanked["statusMessage"], "CVE-2099-1: upgrade to 2.0.0");
    assert!(yanked["updatedAt"].as_str().unwrap() > published_at.as_str());
    assert_eq!(yanked["statusChangedAt"], yanked["updatedAt"]);
}

async fn one_server_its_versions_and_their_lifecycle(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let first = published(&app, &alice.token, mcp_tool(&alice.key, "weather", "1.0.0")).await;
    published(
        &app,
        &alice.token,
        mcp_tool(&alice.key, "weather", "1.1.0+build.5"),
    )
    .await;
    published(&app, &alice.token, mcp_tool(&alice.key, "weather", "0.9.0")).await;
    published(
        &app,
        &alice.token,
        http_tool(&alice.key, "web_fetch", "1.0.0"),
    )
    .await;

    // The name's slash arrives encoded, as the document says.
    let versions = ok(
        &app,
        &format!("/v0.1/servers/{}/versions", encoded("weather")),
    )
    .await;
    assert_eq!(
        entries(&versions)
            .into_iter()
            .map(|(_, v)| v)
            .collect::<Vec<_>>(),
        ["0.9.0", "1.1.0+build.5", "1.0.0"],
        "newest publication first"
    );
    assert_eq!(versions["metadata"]["count"], 3);
    // Any spelling of the tool's name, any case of the namespace.
    ok(
        &app,
        "/v0.1/servers/COM.example.registry%2FWeather/versions",
    )
    .await;

    let one = ok(
        &app,
        &format!("/v0.1/servers/{}/versions/1.0.0", encoded("weather")),
    )
    .await;
    assert_eq!(one["server"]["name"], "com.example.registry/weather");
    assert_eq!(one["server"]["version"], "1.0.0");
    assert_eq!(official(&one)["status"], "active");
    assert_eq!(official(&one)["isLatest"], false);
    assert!(official(&one).get("statusChangedAt").is_none());
    let publication = &one["_meta"]["dev.agentlang.registry/publication"];
    assert_eq!(publication["containerSha256"], first["sha256"]);
    assert_eq!(publication["keyId"], first["signer"]["key_id"]);
    assert_eq!(publication["logIndex"], first["log"]["index"]);

    // Build metadata, `+` encoded as %2B; `latest`.
    let build = ok(
        &app,
        &format!(
            "/v0.1/servers/{}/versions/1.1.0%2Bbuild.5",
            encoded("weather")
        ),
    )
    .await;
    assert_eq!(build["server"]["version"], "1.1.0+build.5");
    assert_eq!(official(&build)["isLatest"], true);
    let latest = ok(
        &app,
        &format!("/v0.1/servers/{}/versions/latest", encoded("weather")),
    )
    .await;
    assert_eq!(latest, build);

    // Yanked: deprecated, and the latest moves.
    let res = app
        .request(Method::POST, "/api/v1/tools/weather/1.1.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let yanked = ok(
        &app,
        &format!("/v0.1/servers/{}/versions/1.1.0", encoded("weather")),
    )
    .await;
    assert_eq!(official(&yanked)["status"], "deprecated");
    assert!(official(&yanked).get("statusMessage").is_none(), "{yanked}");
    assert!(official(&yanked)["statusChangedAt"].is_string());
    assert_eq!(official(&yanked)["isLatest"], false);
    let latest = ok(
        &app,
        &format!("/v0.1/servers/{}/versions/latest", encoded("weather")),
    )
    .await;
    assert_eq!(latest["server"]["version"], "1.0.0");

    // Deleted by the registry: gone unless asked for.
    app.store()
        .db
        .delete_version(
            published_package_id(&app, "weather").await,
            &Version::parse("0.9.0").unwrap(),
        )
        .await
        .unwrap();
    let path = format!("/v0.1/servers/{}/versions/0.9.0", encoded("weather"));
    let (status, body) = get(&app, &path).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["error"].is_string(), "{body}");
    let deleted = ok(&app, &format!("{path}?include_deleted=true")).await;
    assert_eq!(official(&deleted)["status"], "deleted");
    assert_eq!(official(&deleted)["isLatest"], false);
    let listed = ok(&app, "/v0.1/servers").await;
    assert_eq!(entries(&listed).len(), 2);
    let listed = ok(&app, "/v0.1/servers?include_deleted=true").await;
    assert_eq!(entries(&listed).len(), 3);

    // Not servers here: another namespace, another kind, no such tool or
    // version, a name without its namespace, a slash not encoded.
    for path in [
        "/v0.1/servers/org.other%2Fweather/versions".to_owned(),
        format!("/v0.1/servers/{}/versions", encoded("web_fetch")),
        format!("/v0.1/servers/{}/versions", encoded("nothing")),
        format!("/v0.1/servers/{}/versions/9.9.9", encoded("weather")),
        format!("/v0.1/servers/{}/versions/not-semver", encoded("weather")),
        "/v0.1/servers/weather/versions/latest".to_owned(),
        format!("/v0.1/servers/{NAMESPACE}/weather/versions"),
    ] {
        let (status, body) = get(&app, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{path}: {body}"
        );
        assert_eq!(body.as_object().unwrap().len(), 1, "{path}: {body}");
    }

    // The catalog's tool page shows the entry and its URL.
    let page = app.get("/tools/weather").await.text().await.unwrap();
    assert!(
        page.contains(r#"<h2 id="mcp-heading">MCP server</h2>"#),
        "{page}"
    );
    assert!(
        page.contains("/v0.1/servers/com.example.registry%2Fweather/versions/1.0.0"),
        "{page}"
    );
    let page = app.get("/tools/web_fetch").await.text().await.unwrap();
    assert!(!page.contains("mcp-heading"));
}

async fn published_package_id(app: &TestApp, tool: &str) -> i64 {
    app.store()
        .db
        .find_package(Kind::Tool, &PackageName::new(tool).unwrap())
        .await
        .unwrap()
        .unwrap()
        .id
}

async fn writes_answer_501_and_every_error_is_an_error_object(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, mcp_tool(&alice.key, "weather", "1.0.0")).await;
    let version = format!("/v0.1/servers/{}/versions/1.0.0", encoded("weather"));
    for (method, path) in [
        (Method::POST, "/v0.1/publish".to_owned()),
        (Method::PUT, version.clone()),
        (Method::DELETE, version.clone()),
        (Method::PATCH, format!("{version}/status")),
        (
            Method::PATCH,
            format!("/v0.1/servers/{}/status", encoded("weather")),
        ),
    ] {
        let res = app
            .request(method.clone(), &path)
            .bearer_auth(&alice.token)
            .json(&json!({"status": "deprecated"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_IMPLEMENTED, "{method} {path}");
        let body: Value = res.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("kind mcp"),
            "{body}"
        );
    }
    // Nothing changed.
    ok(&app, &version).await;

    // What the routes refuse, and what no route answers, in the same shape.
    let cases: [(Method, &str, StatusCode); 6] = [
        (
            Method::GET,
            "/v0.1/servers?cursor=not-ours",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v0.1/servers?limit=ten",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v0.1/servers?updated_since=yesterday",
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v0.1/servers?include_deleted=maybe",
            StatusCode::BAD_REQUEST,
        ),
        (Method::GET, "/v0.1/nothing-here", StatusCode::NOT_FOUND),
        (
            Method::POST,
            "/v0.1/servers",
            StatusCode::METHOD_NOT_ALLOWED,
        ),
    ];
    for (method, path, expected) in cases {
        let res = app.request(method.clone(), path).send().await.unwrap();
        assert_eq!(res.status(), expected, "{method} {path}");
        if expected == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(res.headers()["allow"], "GET, HEAD");
        }
        assert_eq!(
            res.headers()["content-type"].to_str().unwrap(),
            "application/json",
            "{method} {path}"
        );
        let body: Value = res.json().await.unwrap();
        assert!(body["error"].is_string(), "{method} {path}: {body}");
        assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    }
}

async fn an_invalid_mcp_section_is_refused_at_publish_with_its_path(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let refused = |yaml: String| {
        let bytes = build(
            &alice.key,
            Kind::Tool,
            "weather",
            "1.0.0",
            &[("tool.yaml", yaml.as_bytes())],
            1_738_146_600,
        );
        let app = &app;
        let token = alice.token.clone();
        async move {
            let res = publish(app, &token, bytes).await;
            assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
            let body: Value = res.json().await.unwrap();
            body["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{}: {}",
                        e["field"].as_str().unwrap(),
                        e["message"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let good = mcp_tool_yaml("weather", "1.0.0", "Forecasts.");
    let problems = refused(good.replace("type: stdio", "type: http")).await;
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("tool.yaml:mcp.packages[0].transport.type: unknown transport")),
        "{problems:?}"
    );
    let problems = refused(good.replace("https://weather.acme.example/mcp", "ftp://x")).await;
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("tool.yaml:mcp.remotes[0].url:")),
        "{problems:?}"
    );
    let problems = refused(good.replace("kind: mcp", "kind: http")).await;
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("tool.yaml:mcp: only a tool of `kind: mcp`")),
        "{problems:?}"
    );
    // Fixed, it publishes.
    published(
        &app,
        &alice.token,
        build(
            &alice.key,
            Kind::Tool,
            "weather",
            "1.0.0",
            &[("tool.yaml", good.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;
}

/// 101 MCP versions, stored as publish stores them (through the storage
/// API, for speed): a `limit` past 100 is served as 100.
async fn a_page_holds_at_most_100(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let publisher_id = app.account_id("alice").await;
    for i in 0..101 {
        let name = PackageName::new(format!("server{i:03}")).unwrap();
        let version = Version::parse("1.0.0").unwrap();
        let sha256 = Sha256Digest::of(name.as_str().as_bytes());
        let spec = json!({
            "name": name, "version": version, "description": "Seeded.", "kind": "mcp",
            "input_schema": {"type": "object"},
            "mcp": {"remotes": [{"type": "sse", "url": format!("https://{name}.example/sse")}]},
        });
        app.store()
            .db
            .publish_version(&NewVersion {
                publisher_identity: None,
                provenance: None,
                kind: Kind::Tool,
                name: name.clone(),
                version: version.clone(),
                sha256,
                size: 1,
                signer_key_id: Some(alice.key.public_key().key_id()),
                manifest: json!({}),
                spec,
                lockfile: None,
                quality_report: None,
                extras: None,
                max_risk: None,
                prompt_mode: None,
                prompt_key_id: None,
                dependencies: Vec::new(),
                description: "Seeded.".to_owned(),
                keywords: Vec::new(),
                publisher: publisher_id,
                log_entry: app::tlog::publish_entry(
                    Kind::Tool,
                    &name,
                    &version,
                    &sha256.to_hex(),
                    None,
                    "alice",
                ),
            })
            .await
            .unwrap();
    }
    let page = ok(&app, "/v0.1/servers?limit=1000").await;
    assert_eq!(page["metadata"]["count"], 100);
    assert_eq!(entries(&page).len(), 100);
    let rest = page["metadata"]["nextCursor"].as_str().unwrap();
    let last = ok(&app, &format!("/v0.1/servers?limit=1000&cursor={rest}")).await;
    assert_eq!(
        entries(&last),
        [(format!("{NAMESPACE}/server100"), "1.0.0".to_owned())]
    );
    assert!(last["metadata"].get("nextCursor").is_none());
    // The default page is 30.
    assert_eq!(ok(&app, "/v0.1/servers").await["metadata"]["count"], 30);
    assert_eq!(
        ok(&app, "/v0.1/servers?limit=0").await["metadata"]["count"],
        1
    );
}

// ------------------------------------------------------------ Schemathesis

/// The executable: `$AGENTLANG_TEST_SCHEMATHESIS`, else `schemathesis` on
/// `PATH`; `None` (skipped) without it, which fails under `CI=true`.
fn schemathesis() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_SCHEMATHESIS")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join("schemathesis"))
                .find(|path| path.is_file())
        });
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but schemathesis is not installed: set AGENTLANG_TEST_SCHEMATHESIS (.ci/run installs it)"
        );
        eprintln!("skipped: schemathesis is not installed (set AGENTLANG_TEST_SCHEMATHESIS)");
    }
    found
}

/// Schemathesis runs the MCP registry's own document (vendored, unedited:
/// `mcp/openapi.yaml`) against a registry seeded with MCP servers: its
/// read operations, requests valid by that document (`--mode positive`),
/// every check. So every answer must have a status, content type and body
/// the document gives (a `ServerList`, a `ServerResponse`, `{error}`), or
/// the run fails. The one liberty: a generated `cursor` (a string the
/// document says must be one the API returned) is swapped for one the
/// registry returned (`mcp/schemathesis_hooks.py`), which also sends some
/// requests to the seeded servers' real names.
#[actix_web::test]
async fn schemathesis_finds_the_mcp_api_as_its_document_says() {
    let Some(schemathesis) = schemathesis() else {
        return;
    };
    let app = app(Backend::Sqlite).await.unwrap();
    let alice = publisher(&app, "alice").await;
    for (tool, version) in [
        ("weather", "1.0.0"),
        ("weather", "1.1.0+build.7"),
        ("files", "0.2.0"),
        ("calendar", "3.0.0-rc.1"),
    ] {
        published(&app, &alice.token, mcp_tool(&alice.key, tool, version)).await;
    }
    // A yanked one, a remote-only one and one with a long description.
    let res = app
        .request(Method::POST, "/api/v1/tools/files/0.2.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({"reason": "superseded"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let long = mcp_tool_yaml("maps", "1.0.0", &"Maps and routes. ".repeat(20));
    published(
        &app,
        &alice.token,
        build(
            &alice.key,
            Kind::Tool,
            "maps",
            "1.0.0",
            &[("tool.yaml", long.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;

    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/mcp");
    let report = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(schemathesis)
        .current_dir(report.path())
        .arg("run")
        .arg(here.join("openapi.yaml"))
        .args(["--url", &app.url])
        // The read operations: every GET the document lists (the writes
        // answer 501, which `writes_answer_501_...` checks).
        .args(["--include-method", "GET"])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--mode", "positive"])
        .args(["--checks", "all"])
        .args(["--max-time", "40", "--max-examples", "60"])
        .args(["--workers", "1", "--request-timeout", "20"])
        .env("SCHEMATHESIS_HOOKS", here.join("schemathesis_hooks.py"))
        .env("AGENTLANG_MCP_URL", &app.url)
        .env("AGENTLANG_MCP_NAMESPACE", NAMESPACE)
        .env("NO_COLOR", "1")
        .env("SCHEMATHESIS_TELEMETRY", "false")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start schemathesis");
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("schemathesis ran past 120 s")
        .expect("schemathesis' output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{text}");
    assert!(
        output.status.success(),
        "Schemathesis found failures:\n{text}"
    );
    // It really ran the document's three read operations, in every phase.
    for expected in [
        "Selected: 3/8",
        "Tested: 3",
        "✅ Examples",
        "✅ Coverage",
        "✅ Fuzzing",
    ] {
        assert!(text.contains(expected), "no {expected:?}:\n{text}");
    }
}

/// What a page costs the database: the statements a `GET /v0.1/servers?
/// limit=100` runs, counted in the registry's own log of statements
/// (`sqlx::query` at debug, in the request's span), with 5 MCP servers and
/// with 150 (and other tools besides). The page's own statements are a
/// fixed number whatever the catalog (two; three for `version=latest`):
/// keyset pages, no `OFFSET`, no statement per entry. The registry
/// generation's read that proves a cached answer current comes on top
/// (with, after a change, one read of what changed); served again, a page
/// costs nothing else. (A connection the pool opens on the way runs its
/// set-up `PRAGMA`s; those are not counted.)
async fn a_page_costs_the_same_statements_whatever_the_catalog(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .process()
        .rate_limits_off()
        .env("AGENTLANG_REGISTRY_MCP_NAMESPACE", NAMESPACE)
        .env("AGENTLANG_REGISTRY_LOG", "info,sqlx::query=debug")
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // The statements logged in the span of a request for `target`, the
    // generation's bookkeeping apart.
    let own = |log: &str, target: &str| -> (usize, usize) {
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("sqlx::query") && l.contains(&format!("http.target={target} ")))
            // A connection the pool opens meanwhile sets itself up.
            .filter(|l| !l.contains("summary=\"PRAGMA"))
            .collect();
        let generation = lines
            .iter()
            .filter(|l| l.contains("registry_generation") || l.contains("registry_changes"))
            .count();
        (lines.len() - generation, generation)
    };
    // The log is read from the process's output as it comes: wait for
    // the request's own line (the span closing, with its status), after
    // which it logs nothing more.
    let logged_after = async |start: usize, target: &str| -> String {
        for _ in 0..100 {
            let log = app.log();
            if log[start..].lines().any(|l| {
                !l.contains("sqlx::query")
                    && l.contains(&format!("http.target={target} "))
                    && l.contains("http.status_code=200")
            }) {
                return log[start..].to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no log line for {target}:\n{}", &app.log()[start..]);
    };
    let mut published_count = 0;
    for total in [5, 150] {
        while published_count < total {
            let name = format!("server{published_count:03}");
            published(&app, &alice.token, mcp_tool(&alice.key, &name, "1.0.0")).await;
            if published_count % 5 == 0 {
                let other = format!("other{published_count:03}");
                published(&app, &alice.token, http_tool(&alice.key, &other, "1.0.0")).await;
            }
            published_count += 1;
        }
        // The page, its statuses (docs/statuses.md), and for `latest` the
        // versions that decide it.
        for (query, statements) in [("limit=100", 3), ("limit=100&version=latest", 4)] {
            let target = format!("/v0.1/servers?{query}");
            let start = app.log().len();
            let page = ok(&app, &target).await;
            assert_eq!(page["metadata"]["count"], total.min(100));
            let logged = logged_after(start, &target).await;
            let (ran, generation) = own(&logged, &target);
            assert_eq!(ran, statements, "{total} servers, {query}:\n{logged}");
            assert!(generation <= 2, "{total} servers, {query}: {generation}");
            let start = app.log().len();
            ok(&app, &target).await;
            let logged = logged_after(start, &target).await;
            let (ran, _) = own(&logged, &target);
            assert_eq!(ran, 0, "{total} servers, {query}, served again:\n{logged}");
        }
    }
}
