//! Bounds on what untrusted documents may hold, over real HTTP: versions
//! bounded where they are read, problem lists, quality reports and replay
//! pages capped with "and N more", and schema regexes counted before they
//! are compiled.

use agentlang_core::{Kind, diagnostics::MAX_DIAGNOSTICS, quality::MAX_FINDINGS};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::{
    publish::{build, locked_agent, publish, published, publisher, repack},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    versions_are_bounded_in_containers_and_paths,
    a_package_with_many_problems_gets_a_capped_list,
    a_tool_with_too_many_regexes_is_refused_naming_the_schema,
    a_flood_of_findings_is_stored_and_shown_capped,
    a_replay_of_many_bad_lines_answers_a_capped_list,
);

fn tool_yaml(version: &str, extra: &str) -> String {
    format!(
        "name: bounded\nversion: {version}\ndescription: Bounded things.\nkind: builtin\ninput_schema:\n  type: object\n{extra}"
    )
}

fn tool_container(key: &agentlang_core::signing::SecretKey, version: &str, extra: &str) -> Vec<u8> {
    let yaml = tool_yaml(version, extra);
    build(
        key,
        Kind::Tool,
        "bounded",
        version,
        &[("tool.yaml", yaml.as_bytes())],
        1_738_146_600,
    )
}

fn errors(body: &Value) -> Vec<(String, String)> {
    body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn versions_are_bounded_in_containers_and_paths(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // 64 bytes of build metadata: accepted, and served under its path.
    let at = format!("1.0.0+{}", "b".repeat(64));
    published(&app, &alice.token, tool_container(&alice.key, &at, "")).await;
    let res = app.get(&format!("/api/v1/tools/bounded/{at}")).await;
    assert_eq!(res.status(), StatusCode::OK);

    // The review's publish: a manifest naming 70,000 bytes of build
    // metadata is refused as it is read, with what is wrong and not the
    // 70,000 bytes.
    let short = "1.0.1+b";
    let long = format!("1.0.1+{}", "b".repeat(70_000));
    let bytes = repack(&tool_container(&alice.key, short, ""), |path, bytes| {
        Some(if path == "manifest.json" {
            String::from_utf8(bytes)
                .unwrap()
                .replace(short, &long)
                .into_bytes()
        } else {
            bytes
        })
    });
    let body = problem(
        publish(&app, &alice.token, bytes).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "container-invalid",
    )
    .await;
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("build metadata is 70000 bytes long; at most 64 are allowed"),
        "{detail}"
    );
    assert!(detail.len() < 400, "{detail}");

    // One byte past the bound in a URL path names no version.
    let over = format!("1.0.0+{}", "b".repeat(65));
    problem(
        app.get(&format!("/api/v1/tools/bounded/{over}")).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn a_package_with_many_problems_gets_a_capped_list(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let permissions: String = (0..300)
        .map(|i| format!("  - not-a-capability-{i}\n"))
        .collect();
    let bytes = tool_container(&alice.key, "1.0.0", &format!("permissions:\n{permissions}"));
    let body = problem(
        publish(&app, &alice.token, bytes).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let errors = errors(&body);
    assert_eq!(errors.len(), MAX_DIAGNOSTICS + 1, "{body}");
    assert_eq!(errors[0].0, "tool.yaml:permissions[0]");
    assert_eq!(
        errors[MAX_DIAGNOSTICS],
        (String::new(), "and 200 more problems".to_owned())
    );
}

async fn a_tool_with_too_many_regexes_is_refused_naming_the_schema(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // The review's tool: 20,000 `patternProperties` regexes.
    let patterns: String = (0..20_000)
        .map(|i| format!("    \"^k{i}_[a-z]+$\": {{type: string}}\n"))
        .collect();
    let yaml = format!(
        "name: bounded\nversion: 1.0.0\ndescription: Bounded things.\nkind: builtin\ninput_schema:\n  type: object\n  patternProperties:\n{patterns}"
    );
    let bytes = build(
        &alice.key,
        Kind::Tool,
        "bounded",
        "1.0.0",
        &[("tool.yaml", yaml.as_bytes())],
        1_738_146_600,
    );
    let body = problem(
        publish(&app, &alice.token, bytes).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        errors(&body),
        [(
            "tool.yaml:input_schema".to_owned(),
            "holds 20000 regexes (`pattern` and `patternProperties`), and the document may hold at most 100 in all its schemas (100 left)".to_owned()
        )]
    );

    // A regex too long, named where it is.
    let long = format!(
        "  properties:\n    q: {{type: string, pattern: \"{}\"}}\n",
        "a".repeat(1_001)
    );
    let body = problem(
        publish(
            &app,
            &alice.token,
            tool_container(&alice.key, "1.0.0", &long),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(
        errors(&body),
        [(
            "tool.yaml:input_schema.properties.q.pattern".to_owned(),
            "this regex is 1001 bytes long; at most 1000 are allowed".to_owned()
        )]
    );
}

async fn a_flood_of_findings_is_stored_and_shown_capped(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let yaml = "name: flood\nversion: 1.0.0\ndescription: Floods.\nmodels:\n  claude-sonnet-4:\n    provider: anthropic\n";
    let words: Vec<String> = (0..3_000).map(|i| format!("name_{i}")).collect();
    let prompt = format!(
        "version: 2\nrole: system\nsections:\n  - name: role\n    content: {}\n",
        words.join(" ")
    );
    let bytes = locked_agent(
        &alice.key,
        yaml,
        &[("prompt.yaml", prompt.as_bytes())],
        None,
    );
    published(&app, &alice.token, bytes).await;
    let report: Value = app
        .get("/api/v1/agents/flood/1.0.0/quality")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        report["findings"].as_array().unwrap().len(),
        MAX_FINDINGS,
        "{report}"
    );
    assert_eq!(report["omitted"]["warnings"], 3_000 - MAX_FINDINGS);

    let page = app.get("/agents/flood/1.0.0").await.text().await.unwrap();
    assert!(page.contains("3000 warnings"), "{page}");
    assert!(
        page.contains(&format!(
            r#"id="quality-more">and {} more findings, not listed here."#,
            3_000 - MAX_FINDINGS
        )),
        "{page}"
    );
    assert_eq!(page.matches(r#"<li class="finding "#).count(), MAX_FINDINGS);
}

const BOUNDARY: &str = "----agentlang-bounds-boundary";

async fn a_replay_of_many_bad_lines_answers_a_capped_list(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    // Within the upload's 1 MiB and 5,000 events: 4,000 bad lines.
    let lines = "{not json\n".repeat(4_000);
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"events\"; filename=\"bad.jsonl\"\r\nContent-Type: application/x-ndjson\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(lines.as_bytes());
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    let res = app
        .request(Method::POST, "/replay")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = res.text().await.unwrap();
    assert_eq!(
        html.matches("<li><code>").count(),
        MAX_DIAGNOSTICS + 1,
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<li><code>and {} more problems</code></li>",
            4_000 - MAX_DIAGNOSTICS
        )),
        "{html}"
    );
}
