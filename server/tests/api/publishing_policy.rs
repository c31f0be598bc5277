//! A package's publishing policy (docs/publishing-policy.md), on every
//! backend: anyone reads it, only its owners change it, and each switch
//! sent is kept while the others stay.

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(owners_change_the_policy_and_anyone_reads_it,);

const POLICY: &str = "/api/v1/tools/web_fetch/publishing";

async fn patch(app: &TestApp, token: &str, path: &str, body: &Value) -> Response {
    app.request(Method::PATCH, path)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn policy(app: &TestApp) -> Value {
    let res = app.get(POLICY).await;
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

async fn owners_change_the_policy_and_anyone_reads_it(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;

    // Every package starts with every switch off, and anyone may read it.
    assert_eq!(
        policy(&app).await,
        json!({"kind": "tool", "name": "web_fetch", "trusted_publishing_only": false,
               "two_factor_required": false, "staging_required": false})
    );
    problem(
        app.get("/api/v1/tools/nope/publishing").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;

    // Only an owner, with the `owners` scope, changes it.
    let on = json!({"staging_required": true});
    problem(
        patch(&app, &bob.token, POLICY, &on).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let no_scope = app.token("alice", &["publish"]).await;
    problem(
        patch(&app, &no_scope, POLICY, &on).await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    let res = app
        .request(Method::PATCH, POLICY)
        .json(&on)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert_eq!(policy(&app).await["staging_required"], false);

    // Each switch sent is set; the others are kept.
    let res = patch(&app, &alice.token, POLICY, &on).await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = patch(
        &app,
        &alice.token,
        POLICY,
        &json!({"trusted_publishing_only": true}),
    )
    .await;
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer["staging_required"], true, "{answer}");
    assert_eq!(answer["trusted_publishing_only"], true, "{answer}");
    assert_eq!(answer["two_factor_required"], false, "{answer}");
    assert_eq!(policy(&app).await, answer);
    // Any spelling of the name is the package.
    let res = patch(
        &app,
        &alice.token,
        "/api/v1/tools/Web-Fetch/publishing",
        &json!({"staging_required": false}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(policy(&app).await["staging_required"], false);

    // Unknown fields and wrong types are refused; nothing changes.
    for bad in [json!({"staging": true}), json!({"staging_required": "yes"})] {
        problem(
            patch(&app, &alice.token, POLICY, &bad).await,
            StatusCode::BAD_REQUEST,
            "malformed-request",
        )
        .await;
    }
    let mut expected = answer;
    expected["staging_required"] = json!(false);
    assert_eq!(policy(&app).await, expected);
}
