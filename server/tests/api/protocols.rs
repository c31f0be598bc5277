//! The protocol catalog, protocol packages, the protocol checks and quality
//! reports of agent publishes, and the events schema.

use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{PROMPT_YAML, agent_yaml, build, locked_agent, publish, published, publisher},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    the_catalog_is_seeded_and_only_admins_edit_it,
    protocol_packages_are_published_and_seen_as_protocols,
    agent_protocols_are_checked_at_publish,
    agent_versions_keep_their_quality_report,
    the_events_schema_is_served,
);

fn protocol_yaml(name: &str, version: &str) -> String {
    format!(
        "name: {name}\nversion: {version}\ndescription: Streams {name} updates.\nschema:\n  message_format: json\n  transport: sse\n  auth: bearer\n"
    )
}

fn protocol_package(
    key: &agentlang_core::signing::SecretKey,
    name: &str,
    version: &str,
) -> Vec<u8> {
    let yaml = protocol_yaml(name, version);
    build(
        key,
        Kind::Protocol,
        name,
        version,
        &[("protocol.yaml", yaml.as_bytes())],
        1_738_146_600,
    )
}

async fn put_protocol(app: &TestApp, token: &str, name: &str, body: &Value) -> reqwest::Response {
    app.request(Method::PUT, &format!("/api/v1/protocols/{name}"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

fn fields(body: &Value) -> Vec<String> {
    body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect()
}

async fn the_catalog_is_seeded_and_only_admins_edit_it(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["admin"]).build().await else {
        return;
    };
    let list: Value = app.get("/api/v1/protocols").await.json().await.unwrap();
    let names: Vec<&str> = list["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a2a", "mcp"]);
    let a2a: Value = app.get("/api/v1/protocols/a2a").await.json().await.unwrap();
    assert_eq!(a2a["source"], "catalog");
    assert_eq!(
        a2a["versions"][0],
        json!({"version": "1.0.0", "status": "deprecated", "successor": "2.0.0", "message": "a2a v1 is deprecated; migrate to v2"})
    );
    assert_eq!(
        a2a["versions"][1],
        json!({"version": "2.0.0", "status": "stable"})
    );

    let admin = app.account_with_token("admin", &["admin"]).await;
    let user = app.account_with_token("user", &["publish"]).await;
    let entry = json!({"description": "Mail", "versions": [
        {"version": "1.0.0", "status": "removed", "successor": "2.0.0"},
        {"version": "2.0.0", "status": "stable"}
    ]});
    problem(
        put_protocol(&app, &user, "smtp", &entry).await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    let res = put_protocol(&app, &admin, "smtp", &entry).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let smtp: Value = res.json().await.unwrap();
    assert_eq!(smtp["versions"][0]["status"], "removed");
    let res = put_protocol(&app, &admin, "smtp", &entry).await;
    assert_eq!(res.status(), StatusCode::OK);

    let body = problem(
        put_protocol(
            &app,
            &admin,
            "smtp",
            &json!({"versions": [
                {"version": "1.0.0", "status": "deprecated"},
                {"version": "2.0.0", "status": "retired"},
                {"version": "3.0.0", "status": "stable", "message": "hi"}
            ]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        fields(&body),
        [
            "versions[0].successor",
            "versions[0].message",
            "versions[1].status",
            "versions[2].status"
        ]
    );
    let body = problem(
        put_protocol(
            &app,
            &admin,
            "smtp",
            &json!({"versions": [{"version": "1.0.0", "status": "deprecated", "successor": "9.0.0", "message": "move"}]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert!(
        body.to_string()
            .contains("successor 9.0.0 is not a version of this protocol"),
        "{body}"
    );
    problem(
        put_protocol(&app, &admin, "smtp", &json!({"versions": [], "extra": 1})).await,
        StatusCode::BAD_REQUEST,
        "malformed-request",
    )
    .await;
    problem(
        app.get("/api/v1/protocols/nothing-here").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn protocol_packages_are_published_and_seen_as_protocols(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["alice"]).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let admin = app.token("alice", &["admin"]).await;
    let v1 = published(
        &app,
        &alice.token,
        protocol_package(&alice.key, "acme-stream", "1.0.0"),
    )
    .await;
    assert_eq!(v1["kind"], "protocol");
    let v2 = published(
        &app,
        &alice.token,
        protocol_package(&alice.key, "acme-stream", "1.1.0"),
    )
    .await;
    let res = app
        .request(Method::POST, "/api/v1/protocols/acme-stream/1.0.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({"reason": "drops messages"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );

    let info: Value = app
        .get("/api/v1/protocols/acme-stream")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(info["source"], "package");
    assert_eq!(info["versions"][0]["status"], "deprecated");
    assert_eq!(info["versions"][0]["successor"], "1.1.0");
    assert_eq!(
        info["versions"][0]["message"],
        "this version was yanked: drops messages"
    );
    assert_eq!(info["versions"][1]["sha256"], v2["sha256"]);

    // The package's own records, index and search work like any kind's.
    let record: Value = app
        .get("/api/v1/protocols/acme-stream/1.1.0")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(record["spec"]["schema"]["transport"], "sse");
    let index: Value = app
        .get("/api/v1/index/protocols/acme-stream")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(index["versions"].as_array().unwrap().len(), 2);
    let found: Value = app
        .get("/api/v1/search?q=acme&kind=protocol")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(found["total"], 1, "{found}");
    let download = app
        .get("/api/v1/protocols/acme-stream/1.1.0/download")
        .await;
    assert_eq!(download.status(), StatusCode::OK);

    // Catalog names and package names stay apart, both ways.
    problem(
        publish(
            &app,
            &alice.token,
            protocol_package(&alice.key, "a2a", "3.0.0"),
        )
        .await,
        StatusCode::CONFLICT,
        "name-taken",
    )
    .await;
    // alice, a configured admin, edits the catalog.
    problem(
        put_protocol(
            &app,
            &admin,
            "acme-stream",
            &json!({"versions": [{"version": "1.0.0", "status": "stable"}]}),
        )
        .await,
        StatusCode::CONFLICT,
        "name-taken",
    )
    .await;

    let broken = build(
        &alice.key,
        Kind::Protocol,
        "acme-bad",
        "1.0.0",
        &[(
            "protocol.yaml",
            b"name: acme-bad\nversion: 1.0.0\ndescription: x\nschema:\n  message_format: json\n  transport: pigeon\n  auth: bearer\n",
        )],
        1_738_146_600,
    );
    let body = problem(
        publish(&app, &alice.token, broken).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(fields(&body), ["protocol.yaml:schema.transport"]);
}

fn with_protocols(yaml: &str, protocols: &str) -> String {
    format!("{yaml}protocols:\n{protocols}")
}

async fn agent_protocols_are_checked_at_publish(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["alice"]).build().await else {
        return;
    };
    // alice is a configured admin.
    let alice = publisher(&app, "alice").await;
    let admin = app.token("alice", &["admin"]).await;
    published(
        &app,
        &alice.token,
        protocol_package(&alice.key, "acme-stream", "1.1.0"),
    )
    .await;
    let agent = |version: &str, protocols: &str, lock: Option<&str>| {
        let yaml = with_protocols(&agent_yaml("helper", version, &[]), protocols);
        locked_agent(
            &alice.key,
            &yaml,
            &[("prompt.yaml", PROMPT_YAML.as_bytes())],
            lock,
        )
    };

    // A deprecated match publishes (the catalog page shows the warning).
    published(
        &app,
        &alice.token,
        agent(
            "1.0.0",
            "  - name: a2a\n    version: ^1.0.0\n  - name: custom/acme-stream\n",
            None,
        ),
    )
    .await;

    let body = problem(
        publish(
            &app,
            &alice.token,
            agent(
                "1.0.1",
                "  - name: a2a\n    version: ^3\n  - name: custom/nobody\n  - name: mcp\n    version: ^2024.11\n",
                None,
            ),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        fields(&body),
        [
            "agent.yaml:protocols[0].version",
            "agent.yaml:protocols[1].name"
        ],
        "{body}"
    );

    // A lock must name the version the registry chooses.
    let lock = "version: \"1\"\nresolved_at: \"2025-01-29T10:30:00Z\"\nprotocols:\n  mcp:\n    version: 2025.6.18\n    requirement: ^2024.11\n    source: catalog\n";
    let body = problem(
        publish(
            &app,
            &alice.token,
            agent(
                "1.0.2",
                "  - name: mcp\n    version: ^2024.11\n",
                Some(lock),
            ),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "lock-mismatch",
    )
    .await;
    assert_eq!(fields(&body), ["protocols.mcp"], "{body}");
    let good = lock.replace("2025.6.18", "2024.11.5");
    published(
        &app,
        &alice.token,
        agent(
            "1.0.2",
            "  - name: mcp\n    version: ^2024.11\n",
            Some(&good),
        ),
    )
    .await;

    // Removing a2a 1 makes agents that need it fail.
    let res = put_protocol(
        &app,
        &admin,
        "a2a",
        &json!({"versions": [
            {"version": "1.0.0", "status": "removed", "successor": "2.0.0", "message": "gone"},
            {"version": "2.0.0", "status": "stable"}
        ]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body = problem(
        publish(
            &app,
            &alice.token,
            agent("1.0.3", "  - name: a2a\n    version: ^1.0.0\n", None),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert!(
        body.to_string()
            .contains("a2a 1.0.0 has been removed; migrate to 2.0.0 (gone)"),
        "{body}"
    );
}

async fn agent_versions_keep_their_quality_report(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let yaml = "name: helper\nversion: 1.0.0\ndescription: Helps.\nmodels:\n  claude-sonnet-4:\n    provider: anthropic\ntools:\n  - name: delegate\npermissions:\n  optional: [camera]\n";
    let prompt = "version: 2\nrole: system\nsections:\n  - name: role\n    content: Check user_memory first, then delegate the question.\n";
    let bytes = locked_agent(
        &alice.key,
        yaml,
        &[("prompt.yaml", prompt.as_bytes())],
        None,
    );
    published(&app, &alice.token, bytes).await;
    let report: Value = app
        .get("/api/v1/agents/helper/1.0.0/quality")
        .await
        .json()
        .await
        .unwrap();
    let rules: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["rule"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        rules,
        [
            "permission-without-reason permissions.optional[0]",
            "undeclared-tool sections[0].content",
        ],
        "{report}"
    );
    // The registry's catalog gave the prompt a model to be measured against.
    assert!(report["prompt_tokens"].as_u64().unwrap() > 5);
    assert!(report.get("skipped").is_none(), "{report}");

    // The catalog page says how many, and lists them.
    let page = app.get("/agents/helper/1.0.0").await.text().await.unwrap();
    assert!(page.contains("2 warnings"), "{page}");
    assert!(page.contains("undeclared-tool"), "{page}");

    // Tools have no report.
    problem(
        app.get("/api/v1/agents/helper/9.9.9/quality").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn the_events_schema_is_served(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let res = app.get("/api/v1/schemas/events.json").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/schema+json"
    );
    let body = res.text().await.unwrap();
    assert_eq!(body, agentlang_core::events::SCHEMA);
    let schema: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(schema["title"], "AgentLang event");
}
