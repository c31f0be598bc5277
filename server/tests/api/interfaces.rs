//! Abstract tools over real HTTP: tools that declare `provides:`, an
//! agent requiring the interface by name, the deterministic pick recorded
//! in the lock, the agent published with that lock, the catalog's pages
//! on both sides, and every refusal with its problem type.

use agentlang_core::{Kind, lockfile::Lockfile};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{PROMPT_YAML, build, locked_agent, publish, published, publisher, tool_yaml},
    support::{Backend, TestApp, backend_tests},
};

backend_tests!(
    an_interface_is_resolved_locked_published_and_shown,
    interface_rules_are_refused_with_their_problems,
    a_quarantined_provider_is_never_picked,
);

fn providing_tool(
    key: &agentlang_core::signing::SecretKey,
    name: &str,
    version: &str,
    provides: &str,
) -> Vec<u8> {
    let yaml = format!("{}provides: [{provides}]\n", tool_yaml(name, version, &[]));
    build(
        key,
        Kind::Tool,
        name,
        version,
        &[("tool.yaml", yaml.as_bytes())],
        1_738_146_600,
    )
}

const AGENT: &str = "name: keeper\nversion: 1.0.0\ndescription: Keeps notes between sessions.\n\
                     models:\n  claude-sonnet-4:\n    provider: anthropic\n\
                     tools:\n  - name: storage # Abstract storage interface\n";

async fn resolve(app: &TestApp, request: &Value) -> reqwest::Response {
    app.request(Method::POST, "/api/v1/resolve")
        .header("accept", "application/json")
        .json(request)
        .send()
        .await
        .unwrap()
}

async fn resolved(app: &TestApp, request: &Value) -> Value {
    let res = resolve(app, request).await;
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn problem(res: reqwest::Response, status: StatusCode, slug: &str) -> Value {
    assert_eq!(res.status(), status);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["type"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/problems/{slug}")),
        "{body}"
    );
    body
}

async fn html(app: &TestApp, path: &str) -> String {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.unwrap()
}

async fn an_interface_is_resolved_locked_published_and_shown(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // Published in the opposite order to the pick's: the order is the
    // names', not the registry's.
    published(
        &app,
        &alice.token,
        providing_tool(&alice.key, "sqlite-store", "1.0.0", "storage"),
    )
    .await;
    published(
        &app,
        &alice.token,
        providing_tool(&alice.key, "sqlite-store", "1.1.0", "storage"),
    )
    .await;
    published(
        &app,
        &alice.token,
        providing_tool(&alice.key, "pg-store", "2.0.0", "storage, cache"),
    )
    .await;

    // The first provider by normalized name, pinned like any tool.
    let lock = resolved(&app, &json!({"tools": {"storage": null}})).await;
    assert_eq!(lock["interfaces"], json!({"storage": "pg-store"}), "{lock}");
    assert_eq!(lock["tools"]["pg-store"]["version"], "2.0.0");
    assert_eq!(lock["tools"]["pg-store"]["requirement"], "*");
    assert!(lock["tools"].get("storage").is_none(), "{lock}");
    // The same again: deterministic.
    assert_eq!(
        resolved(&app, &json!({"tools": {"storage": null}})).await["interfaces"],
        lock["interfaces"]
    );
    // A requirement only one provider meets.
    let narrowed = resolved(&app, &json!({"tools": {"storage": "^1"}})).await;
    assert_eq!(narrowed["interfaces"], json!({"storage": "sqlite-store"}));
    assert_eq!(narrowed["tools"]["sqlite-store"]["version"], "1.1.0");
    assert_eq!(narrowed["tools"]["sqlite-store"]["requirement"], "^1");
    // A lock's choice is kept while it fits, at its pinned version.
    let mut kept: Lockfile = serde_json::from_value(narrowed.clone()).unwrap();
    kept.tools
        .get_mut(&agentlang_core::PackageName::new("sqlite-store").unwrap())
        .unwrap()
        .version = agentlang_core::Version::parse("1.0.0").unwrap();
    let relocked = resolved(
        &app,
        &json!({"tools": {"storage": null}, "lock": serde_json::to_value(&kept).unwrap()}),
    )
    .await;
    assert_eq!(
        relocked["interfaces"],
        json!({"storage": "sqlite-store"}),
        "{relocked}"
    );
    assert_eq!(relocked["tools"]["sqlite-store"]["version"], "1.0.0");

    // The agent, published with the lock the registry wrote.
    let yaml_lock: Lockfile = serde_json::from_value(lock.clone()).unwrap();
    let container = locked_agent(
        &alice.key,
        AGENT,
        &[("prompt.yaml", PROMPT_YAML.as_bytes())],
        Some(&yaml_lock.to_yaml().unwrap()),
    );
    published(&app, &alice.token, container).await;

    // Both sides in the catalog.
    let tool_page = html(&app, "/tools/pg-store").await;
    assert!(tool_page.contains("Provides: "), "{tool_page}");
    // The agent depends on the provider, not on a tool named storage.
    assert!(
        tool_page.contains(r#"<a href="/agents/keeper/1.0.0"><code>keeper</code> 1.0.0</a>"#),
        "{tool_page}"
    );
    assert!(
        tool_page.contains(r#"<a href="/interfaces/storage"><code>storage</code></a>"#),
        "{tool_page}"
    );
    assert!(tool_page.contains(r#"<a href="/interfaces/cache"><code>cache</code></a>"#));
    let interface_page = html(&app, "/interfaces/storage").await;
    for provider in ["pg-store", "sqlite-store"] {
        assert!(
            interface_page.contains(&format!(
                r#"<a href="/tools/{provider}"><code>{provider}</code></a>"#
            )),
            "{interface_page}"
        );
    }
    assert!(interface_page.contains(r#"<a href="/tools/sqlite-store/1.1.0">1.1.0</a>"#));
    assert!(
        interface_page.contains(
            r#"Today a new lock picks <a href="/tools/pg-store"><code>pg-store</code></a>"#
        )
    );
    let agent_page = html(&app, "/agents/keeper").await;
    assert!(
        agent_page.contains(
            r#"<a href="/interfaces/storage"><code>storage</code></a> <span class="tag">interface</span> provided by <a href="/tools/pg-store/2.0.0"><code>pg-store</code></a>"#
        ),
        "{agent_page}"
    );
    // No second row for the provider the interface row already shows.
    assert_eq!(agent_page.matches("<code>pg-store</code>").count(), 1);
    assert_eq!(
        app.get("/interfaces/nothing-provides-this").await.status(),
        StatusCode::NOT_FOUND
    );

    // A provider published after the resolves above is seen by the next
    // one: the providers kept at a generation go with it.
    published(
        &app,
        &alice.token,
        providing_tool(&alice.key, "a-store", "0.1.0", "storage"),
    )
    .await;
    assert_eq!(
        resolved(&app, &json!({"tools": {"storage": null}})).await["interfaces"],
        json!({"storage": "a-store"})
    );
}

async fn interface_rules_are_refused_with_their_problems(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        providing_tool(&alice.key, "sqlite-store", "1.0.0", "storage"),
    )
    .await;
    let plain = tool_yaml("plain-tool", "1.0.0", &[]);
    published(
        &app,
        &alice.token,
        build(
            &alice.key,
            Kind::Tool,
            "plain-tool",
            "1.0.0",
            &[("tool.yaml", plain.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;

    // Interface names and tool names are kept apart, both ways.
    let named_like_interface = tool_yaml("Storage", "1.0.0", &[]);
    let res = publish(
        &app,
        &alice.token,
        build(
            &alice.key,
            Kind::Tool,
            "Storage",
            "1.0.0",
            &[("tool.yaml", named_like_interface.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;
    let body = problem(res, StatusCode::CONFLICT, "name-taken").await;
    assert!(
        body["detail"].as_str().unwrap().contains("interface"),
        "{body}"
    );
    let res = publish(
        &app,
        &alice.token,
        providing_tool(&alice.key, "other-store", "1.0.0", "plain_tool"),
    )
    .await;
    problem(res, StatusCode::CONFLICT, "name-taken").await;
    // Another version of a provider may keep providing.
    published(
        &app,
        &alice.token,
        providing_tool(&alice.key, "sqlite-store", "1.1.0", "storage"),
    )
    .await;

    // No version of any provider satisfies the requirement.
    let res = resolve(&app, &json!({"tools": {"storage": "^9"}})).await;
    let body = problem(
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "interface-unprovided",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "tools.storage", "{body}");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("sqlite-store"),
        "{body}"
    );
    // A name that is neither says so.
    let res = resolve(&app, &json!({"tools": {"nothing-here": null}})).await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("interface"),
        "{body}"
    );

    // A lock recording a provider that does not provide the interface.
    let mut lock: Lockfile =
        serde_json::from_value(resolved(&app, &json!({"tools": {"plain-tool": null}})).await)
            .unwrap();
    lock.interfaces.insert(
        agentlang_core::PackageName::new("storage").unwrap(),
        agentlang_core::PackageName::new("plain-tool").unwrap(),
    );
    let container = locked_agent(
        &alice.key,
        AGENT,
        &[("prompt.yaml", PROMPT_YAML.as_bytes())],
        Some(&lock.to_yaml().unwrap()),
    );
    let res = publish(&app, &alice.token, container).await;
    let body = problem(
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "interface-unprovided",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "interfaces.storage", "{body}");
}

async fn a_quarantined_provider_is_never_picked(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["root"]).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version) in [("pg-store", "2.0.0"), ("sqlite-store", "1.0.0")] {
        published(
            &app,
            &alice.token,
            providing_tool(&alice.key, name, version, "storage"),
        )
        .await;
    }
    let lock = resolved(&app, &json!({"tools": {"storage": null}})).await;
    assert_eq!(lock["interfaces"], json!({"storage": "pg-store"}), "{lock}");

    let root = app.account_with_token("root", &["admin"]).await;
    let res = app
        .request(Method::PUT, "/api/v1/tools/pg-store/status")
        .bearer_auth(&root)
        .json(&json!({"status": "quarantined", "reason": "exfiltrates data"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // The next provider, whether asked afresh or with a lock that chose
    // the quarantined one.
    let fresh = resolved(&app, &json!({"tools": {"storage": null}})).await;
    assert_eq!(
        fresh["interfaces"],
        json!({"storage": "sqlite-store"}),
        "{fresh}"
    );
    let relocked = resolved(&app, &json!({"tools": {"storage": null}, "lock": lock})).await;
    assert_eq!(
        relocked["interfaces"],
        json!({"storage": "sqlite-store"}),
        "{relocked}"
    );
    assert!(relocked["tools"].get("pg-store").is_none(), "{relocked}");
}
