use agentlang_core::signing::SecretKey;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem, seed::key_proof};

backend_tests!(
    keys_are_registered_listed_shown_and_revoked,
    bad_weak_and_duplicate_keys_are_refused,
);

async fn keys_are_registered_listed_shown_and_revoked(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let token = app.account_with_token("alice", &["keys"]).await;
    let key = SecretKey::generate().unwrap();
    let pem = key.public_key().to_spki_pem();
    let key_id = key.public_key().key_id().to_string();

    let res = app.post_key(&token, &key).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["key_id"], key_id);
    assert_eq!(created["public_key_pem"], pem);
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));

    let list: Value = app
        .request(Method::GET, "/api/v1/keys")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["keys"].as_array().unwrap().len(), 1);
    assert_eq!(list["keys"][0]["key_id"], key_id);
    assert_eq!(list["keys"][0]["revoked_at"], Value::Null);

    // Public, no token needed.
    let shown: Value = app
        .get(&format!("/api/v1/keys/{key_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["owner"], "alice");
    assert_eq!(shown["public_key_pem"], pem);

    // Only its owner revokes it.
    let bob = app.account_with_token("bob", &["keys"]).await;
    let res = app
        .request(Method::DELETE, &format!("/api/v1/keys/{key_id}"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    let res = app
        .request(Method::DELETE, &format!("/api/v1/keys/{key_id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let revoked: Value = res.json().await.unwrap();
    let revoked_at = revoked["revoked_at"].as_str().unwrap().to_owned();
    let shown: Value = app
        .get(&format!("/api/v1/keys/{key_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["revoked_at"], revoked_at);
    problem(
        app.get(&format!("/api/v1/keys/{}", "0".repeat(64))).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

async fn bad_weak_and_duplicate_keys_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let token = app.account_with_token("alice", &["keys"]).await;
    let post = |pem: String, proof: String, token: String| {
        app.request(Method::POST, "/api/v1/keys")
            .bearer_auth(token)
            .json(&json!({"public_key_pem": pem, "proof": proof}))
            .send()
    };
    // The identity point: a small-order (weak) Ed25519 key, as SPKI PEM.
    let weak = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n-----END PUBLIC KEY-----\n";
    let body = problem(
        post(weak.to_owned(), "AAAA".into(), token.clone())
            .await
            .unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "public_key_pem");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("weak"),
        "{body}"
    );

    let body = problem(
        post("not a key".to_owned(), "AAAA".into(), token.clone())
            .await
            .unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "public_key_pem");

    // Proof of possession: someone who only saw the public key cannot make
    // one, and a proof made for another account, or for another registry
    // (which could replay what it was sent), does not transfer; nor does
    // one of the text from before proofs named the registry.
    let here = app.url.as_str();
    let key = SecretKey::generate().unwrap();
    let pem = key.public_key().to_spki_pem();
    let stranger = SecretKey::generate().unwrap();
    let without_origin = {
        use base64::Engine;
        let text = format!(
            "agentlang-key-registration:alice:{}",
            key.public_key().key_id()
        );
        base64::engine::general_purpose::STANDARD.encode(key.sign(text.as_bytes()))
    };
    for bad in [
        String::new(),
        "not base64!".to_owned(),
        key_proof(&stranger, here, "alice"),
        key_proof(&key, here, "bob"),
        key_proof(&key, "https://another-registry.example", "alice"),
        without_origin,
    ] {
        let body = problem(
            post(pem.clone(), bad, token.clone()).await.unwrap(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert_eq!(body["errors"][0]["field"], "proof", "{body}");
        assert!(
            body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("agentlang-key-registration:{here}:alice:")),
            "{body}"
        );
    }
    assert_eq!(
        app.get(&format!("/api/v1/keys/{}", key.public_key().key_id()))
            .await
            .status(),
        StatusCode::NOT_FOUND,
        "nothing was registered"
    );

    assert_eq!(
        post(pem.clone(), key_proof(&key, here, "alice"), token.clone())
            .await
            .unwrap()
            .status(),
        StatusCode::CREATED
    );
    problem(
        post(pem.clone(), key_proof(&key, here, "alice"), token.clone())
            .await
            .unwrap(),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
    // Registered to someone else is a conflict too, even with a valid proof.
    let bob = app.account_with_token("bob", &["keys"]).await;
    problem(
        post(pem.clone(), key_proof(&key, here, "bob"), bob)
            .await
            .unwrap(),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;

    // The scope is required.
    let no_scope = app.token("alice", &["publish"]).await;
    let other = SecretKey::generate().unwrap();
    problem(
        post(
            other.public_key().to_spki_pem(),
            key_proof(&other, here, "alice"),
            no_scope,
        )
        .await
        .unwrap(),
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
}
