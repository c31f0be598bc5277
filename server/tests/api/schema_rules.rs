//! Tool schemas at publish: an inline schema that is no JSON Schema is
//! refused as `schema-invalid` at the offending keyword; one contradicting
//! the locked tool's published schema as `schema-contradicts-locked`, and
//! a route into the locked tool's published input that does not fit as
//! `route-incompatible`, each with its file, path and rule; one that
//! narrows is published. Containers are built by hand and signed with the
//! test's key, each carrying the complete lock `agentlang lock` writes.

use std::collections::BTreeSet;

use agentlang_core::{
    Kind, PackageName, Version,
    digest::Sha256Digest,
    lockfile::{LockedTool, Lockfile},
};
use reqwest::StatusCode;

use crate::{
    publish::{PROMPT_YAML, build, locked_agent, publish, published, publisher},
    support::{Backend, TestApp, backend_tests, problem, rule_errors, seed},
};

backend_tests!(inline_schemas_are_valid_and_never_contradict_the_locked_tool,);

const TOOL: &str = "name: web_search\nversion: 1.2.0\ndescription: Searches the web.\nkind: builtin\n\
                    input_schema:\n  type: object\n  properties:\n    query: {type: string}\n    \
                    max_results: {type: integer, maximum: 50}\n  required: [query]\n  additionalProperties: false\n\
                    output_schema:\n  type: object\n  properties:\n    total_count: {type: integer}\n";

fn agent_yaml(tool_entry: &str) -> String {
    format!(
        "name: searcher\nversion: 1.0.0\ndescription: Searches.\ntools:\n  - name: web_search\n    version: ^1.2.0\n{tool_entry}"
    )
}

fn lock_pinning(hash: &str) -> String {
    let mut lock = seed::empty_lock();
    lock.tools.insert(
        PackageName::new("web_search").unwrap(),
        LockedTool {
            version: Version::parse("1.2.0").unwrap(),
            hash: Sha256Digest::parse_prefixed(hash).unwrap(),
            requirement: None,
            dependencies: BTreeSet::new(),
            log_index: None,
        },
    );
    Lockfile::to_yaml(&lock).unwrap()
}

async fn inline_schemas_are_valid_and_never_contradict_the_locked_tool(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let tool = published(
        &app,
        &alice.token,
        build(
            &alice.key,
            Kind::Tool,
            "web_search",
            "1.2.0",
            &[("tool.yaml", TOOL.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;
    let lock = lock_pinning(tool["hash"].as_str().unwrap());
    let prompt: &[(&str, &[u8])] = &[("prompt.yaml", PROMPT_YAML.as_bytes())];
    let container = |entry: &str| locked_agent(&alice.key, &agent_yaml(entry), prompt, Some(&lock));
    let refused = |bytes: Vec<u8>, slug: &'static str| {
        let app = &app;
        let token = alice.token.clone();
        async move {
            problem(
                publish(app, &token, bytes).await,
                StatusCode::UNPROCESSABLE_ENTITY,
                slug,
            )
            .await
        }
    };

    // The example: not a JSON Schema, at the offending keywords.
    let body = refused(
        container("    input_schema: {type: 42, properties: nope}\n"),
        "schema-invalid",
    )
    .await;
    let got = rule_errors(&body);
    for path in [
        "tools[0].input_schema.type",
        "tools[0].input_schema.properties",
    ] {
        assert!(
            got.contains(&("agent.yaml".into(), path.into(), "schema-invalid".into())),
            "{body}"
        );
    }

    // A contradiction of the published input and output schemas.
    let body = refused(
        container(
            "    input_schema: {type: object, properties: {query: {type: integer}, lang: {type: string}}}\n    \
             output_schema: {type: object, properties: {total_count: {type: string}}}\n",
        ),
        "schema-contradicts-locked",
    )
    .await;
    let rule = "schema-contradicts-locked".to_owned();
    assert_eq!(
        rule_errors(&body),
        BTreeSet::from([
            (
                "agent.yaml".into(),
                "tools[0].input_schema.properties.query.type".into(),
                rule.clone()
            ),
            (
                "agent.yaml".into(),
                "tools[0].input_schema.properties.lang".into(),
                rule.clone()
            ),
            (
                "agent.yaml".into(),
                "tools[0].output_schema.properties.total_count.type".into(),
                rule
            ),
        ]),
        "{body}"
    );
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("the published input_schema of web_search 1.2.0 says type string"),
        "{body}"
    );

    // A route into the published input that does not fit.
    let routed = "ui_components:\n  box:\n    props: {type: object, properties: {on: {type: boolean}}}\n    \
                  sync_actions:\n      go:\n        tool: web_search\n        params: {query: \"{{on}}\"}\n";
    let body = refused(container(routed), "route-incompatible").await;
    assert_eq!(
        rule_errors(&body),
        BTreeSet::from([(
            "agent.yaml".into(),
            "ui_components.box.sync_actions.go.params.query".into(),
            "route-incompatible".into()
        )]),
        "{body}"
    );

    // Narrowing is publishing.
    published(
        &app,
        &alice.token,
        container("    input_schema: {type: object, properties: {max_results: {type: integer, maximum: 10}}}\n"),
    )
    .await;
}
