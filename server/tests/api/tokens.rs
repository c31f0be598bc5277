use app::tokens::{AUDIENCE, Claims, TokenKeys};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem};

backend_tests!(
    a_token_lists_itself_and_is_recorded,
    wrong_credentials_are_refused,
    invalid_token_requests_list_every_field,
    revoked_tokens_are_refused,
    expired_forged_and_foreign_tokens_are_refused,
    tokens_cannot_revoke_other_accounts_tokens,
);

async fn list(app: &TestApp, token: &str) -> reqwest::Response {
    app.request(Method::GET, "/api/v1/tokens")
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

async fn a_token_lists_itself_and_is_recorded(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let res = app
        .post_json(
            "/api/v1/tokens",
            &json!({"username": "alice", "password": "password-123", "name": "laptop",
                    "scopes": ["yank", "publish", "tokens", "yank"], "expires_in_days": 7,
                    "packages": ["acme-*"]}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(
        created["scopes"],
        json!(["publish", "yank", "tokens"]),
        "deduplicated, in scope order"
    );
    assert_eq!(created["packages"], json!(["acme-*"]));
    let token = created["token"].as_str().unwrap();

    // The claims are what the brief fixes: iss, aud, sub, exp, jti; and
    // the secret, which is not stored.
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["iss"], app.url);
    assert_eq!(claims["aud"], AUDIENCE);
    assert_eq!(claims["jti"], created["id"]);
    assert_eq!(claims["sec"].as_str().unwrap().len(), 64);
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        7 * 86_400
    );

    let res = list(&app, token).await;
    assert_eq!(res.status(), StatusCode::OK);
    let listed: Value = res.json().await.unwrap();
    let tokens = listed["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 1);
    assert_eq!(tokens[0]["id"], created["id"]);
    assert_eq!(tokens[0]["name"], "laptop");
    assert_eq!(tokens[0]["revoked_at"], Value::Null);
    assert!(tokens[0]["last_used_at"].is_string(), "use is recorded");
    assert!(
        tokens[0].get("token").is_none(),
        "the secret is never listed"
    );
    let listed_text = listed.to_string();
    assert!(!listed_text.contains(claims["sec"].as_str().unwrap()));
}

async fn wrong_credentials_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    // Longer than any password may be: simply wrong.
    let long = "p".repeat(5_000);
    for (username, password) in [
        ("alice", "wrong-password"),
        ("nobody", "password-123"),
        ("alice", long.as_str()),
    ] {
        problem(
            app.post_json(
                "/api/v1/tokens",
                &json!({"username": username, "password": password, "name": "t", "scopes": []}),
            )
            .await,
            StatusCode::UNAUTHORIZED,
            "invalid-credentials",
        )
        .await;
    }
}

async fn invalid_token_requests_list_every_field(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let body = problem(
        app.post_json(
            "/api/v1/tokens",
            &json!({"username": "alice", "password": "x", "name": "",
                    "scopes": ["publish", "root"], "expires_in_days": 0,
                    "packages": ["ok", "bad/name"]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let fields: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["name", "scopes[1]", "expires_in_days", "packages[1]"]
    );
}

async fn revoked_tokens_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let token = app.account_with_token("alice", &["tokens"]).await;
    let listed: Value = list(&app, &token).await.json().await.unwrap();
    let id = listed["tokens"][0]["id"].as_str().unwrap().to_owned();

    let res = app
        .request(Method::DELETE, &format!("/api/v1/tokens/{id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);

    let res = list(&app, &token).await;
    assert_eq!(
        res.headers()["www-authenticate"].to_str().unwrap(),
        "Bearer realm=\"agentlang-registry\", error=\"invalid_token\", error_description=\"the token has been revoked\""
    );
    let body = problem(res, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert!(body["detail"].as_str().unwrap().contains("revoked"));
}

fn sign(claims: &Value, secret: &[u8], alg: Algorithm) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, &EncodingKey::from_secret(secret)).unwrap()
}

async fn expired_forged_and_foreign_tokens_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let token = app.account_with_token("alice", &["owners", "tokens"]).await;
    let listed: Value = list(&app, &token).await.json().await.unwrap();
    let jti = listed["tokens"][0]["id"].as_str().unwrap().to_owned();
    let sub = app.account_id("alice").await.to_string();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let claims = |iss: &str, aud: &str, exp: i64| json!({"sub": sub, "iss": iss, "aud": aud, "iat": now - 10, "exp": exp, "jti": jti, "sec": "0".repeat(64)});
    let secret = app.jwt_secret().as_bytes();

    // The signing key and a real token id do not make a token: its secret
    // is not in the database to be read, and without it the registry
    // refuses.
    let forged = sign(
        &claims(&app.url, AUDIENCE, now + 600),
        secret,
        Algorithm::HS256,
    );
    let body = problem(
        list(&app, &forged).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("unknown"),
        "{body}"
    );
    assert_eq!(list(&app, &token).await.status(), StatusCode::OK);

    let expired = TokenKeys::new(secret, &app.url)
        .issue(sub.parse().unwrap(), &jti, "s", now - 7200, now - 3600)
        .unwrap();
    let cases = [
        ("expired", expired),
        (
            "wrong key",
            sign(
                &claims(&app.url, AUDIENCE, now + 600),
                b"another-secret-another-secret-12",
                Algorithm::HS256,
            ),
        ),
        (
            "wrong audience",
            sign(
                &claims(&app.url, "someone-else", now + 600),
                secret,
                Algorithm::HS256,
            ),
        ),
        (
            "wrong issuer",
            sign(
                &claims("http://evil.example", AUDIENCE, now + 600),
                secret,
                Algorithm::HS256,
            ),
        ),
        (
            "other HMAC",
            sign(
                &claims(&app.url, AUDIENCE, now + 600),
                secret,
                Algorithm::HS512,
            ),
        ),
        ("alg none", {
            let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
            let body = URL_SAFE_NO_PAD
                .encode(serde_json::to_vec(&claims(&app.url, AUDIENCE, now + 600)).unwrap());
            format!("{header}.{body}.")
        }),
        ("garbage", "not-a-token".to_owned()),
    ];
    for (case, bad) in cases {
        let res = list(&app, &bad).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{case}");
        assert!(
            res.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer "),
            "{case}"
        );
    }

    let res = app.get("/api/v1/tokens").await;
    let body = problem(res, StatusCode::UNAUTHORIZED, "unauthenticated").await;
    assert!(body["detail"].as_str().unwrap().contains("no bearer token"));

    // Decoding our own issued token gives back typed claims.
    let claims: Claims = TokenKeys::new(secret, &app.url).verify(&token).unwrap();
    assert_eq!(claims.sub, sub);
}

async fn tokens_cannot_revoke_other_accounts_tokens(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["tokens"]).await;
    let bob = app.account_with_token("bob", &["tokens"]).await;
    let listed: Value = list(&app, &alice).await.json().await.unwrap();
    let alice_token_id = listed["tokens"][0]["id"].as_str().unwrap().to_owned();
    let res = app
        .request(Method::DELETE, &format!("/api/v1/tokens/{alice_token_id}"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::NOT_FOUND, "not-found").await;
    assert_eq!(list(&app, &alice).await.status(), StatusCode::OK);

    // Managing tokens needs the `tokens` scope: a publish token can neither
    // list nor revoke its account's tokens.
    let publish_only = app.token("alice", &["publish"]).await;
    problem(
        list(&app, &publish_only).await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    let res = app
        .request(Method::DELETE, &format!("/api/v1/tokens/{alice_token_id}"))
        .bearer_auth(&publish_only)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::FORBIDDEN, "missing-scope").await;
    assert_eq!(list(&app, &alice).await.status(), StatusCode::OK);

    // ...but any token may give itself up (what `agentlang logout` does).
    let listed: Value = list(&app, &alice).await.json().await.unwrap();
    let own_id = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .find(|id| *id != alice_token_id)
        .unwrap()
        .to_owned();
    let res = app
        .request(Method::DELETE, &format!("/api/v1/tokens/{own_id}"))
        .bearer_auth(&publish_only)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        list(&app, &publish_only).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(list(&app, &alice).await.status(), StatusCode::OK);
}
