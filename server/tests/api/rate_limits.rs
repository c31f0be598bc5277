use std::num::NonZeroU32;

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem, seed::PASSWORD};

backend_tests!(
    credential_endpoints_answer_429_with_retry_after,
    anonymous_reads_are_limited_per_address,
    limits_can_be_turned_off,
    failed_sign_ins_from_elsewhere_never_lock_the_holder_out,
    a_password_spray_from_many_addresses_leaves_room_for_others,
    an_accounts_tokens_share_one_budget,
    revoked_tokens_buy_nothing,
);

/// The test client stands for many: the registry believes the
/// `X-Forwarded-For` its (loopback) proxy sends.
fn behind_a_proxy(r: &mut app::settings::RateLimitSettings) {
    r.trusted_proxies = vec![app::settings::parse_network("127.0.0.1").unwrap()];
}

/// `POST path` with `body`, as a client at `address`.
async fn post_from(app: &TestApp, address: &str, path: &str, body: &Value) -> Response {
    app.request(Method::POST, path)
        .header("x-forwarded-for", address)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// `GET path` with `token`, as a client at `address`.
async fn get_from(app: &TestApp, address: &str, path: &str, token: &str) -> Response {
    app.request(Method::GET, path)
        .header("x-forwarded-for", address)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

fn sign_in(username: &str, password: &str) -> Value {
    json!({"username": username, "password": password, "name": "t", "scopes": []})
}

/// Production's budgets: ten password checks a minute per address and
/// username. Ten wrong passwords from one address spend that address's
/// tries at the name, not the holder's.
async fn failed_sign_ins_from_elsewhere_never_lock_the_holder_out(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .default_rate_limits(behind_a_proxy)
        .build()
        .await
    else {
        return;
    };
    app.create_account("alice", PASSWORD).await;
    let attacker = "198.51.100.7";
    for _ in 0..10 {
        let res = post_from(
            &app,
            attacker,
            "/api/v1/tokens",
            &sign_in("alice", "wrong-guess"),
        )
        .await;
        problem(res, StatusCode::UNAUTHORIZED, "invalid-credentials").await;
    }
    let res = post_from(
        &app,
        attacker,
        "/api/v1/tokens",
        &sign_in("alice", PASSWORD),
    )
    .await;
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;

    // Alice, from her own address: signs in and changes her password.
    let home = "203.0.113.5";
    let res = post_from(&app, home, "/api/v1/tokens", &sign_in("alice", PASSWORD)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let change =
        json!({"username": "alice", "password": PASSWORD, "new_password": "new-password-456"});
    let res = post_from(&app, home, "/api/v1/account/password", &change).await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );
}

/// Wrong passwords for made-up names from many addresses at once, as fast
/// as they are answered, while alice signs in again and again: each
/// address has a small share of the password threads' queue, so hers
/// waits its turn instead of finding the queue full.
async fn a_password_spray_from_many_addresses_leaves_room_for_others(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(behind_a_proxy)
        .build()
        .await
    else {
        return;
    };
    app.create_account("alice", PASSWORD).await;
    let spray = futures_util::future::join_all((0..64).flat_map(|i| {
        let app = &app;
        (0..3).map(move |_| async move {
            let address = format!("198.51.100.{}", i + 1);
            let body = sign_in(&format!("victim-{i}"), "wrong-guess");
            post_from(app, &address, "/api/v1/tokens", &body)
                .await
                .status()
        })
    }));
    let innocent = async {
        let mut statuses = Vec::new();
        for _ in 0..5 {
            let res = post_from(
                &app,
                "203.0.113.5",
                "/api/v1/tokens",
                &sign_in("alice", PASSWORD),
            )
            .await;
            statuses.push(res.status());
        }
        statuses
    };
    let (sprayed, innocent) = tokio::join!(spray, innocent);
    assert_eq!(innocent, [StatusCode::CREATED; 5], "alice's sign-ins");
    // The spray was checked (not refused wholesale): wrong, or over its
    // address's share.
    assert!(
        sprayed
            .iter()
            .all(|s| [StatusCode::UNAUTHORIZED, StatusCode::TOO_MANY_REQUESTS].contains(s)),
        "{sprayed:?}"
    );
    assert!(sprayed.contains(&StatusCode::UNAUTHORIZED));
}

/// Tokens are free to mint; requests are not: every token of an account
/// spends the account's one budget.
async fn an_accounts_tokens_share_one_budget(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.authenticated_per_minute = NonZeroU32::new(4).unwrap())
        .build()
        .await
    else {
        return;
    };
    let first = app.account_with_token("alice", &[]).await;
    let second = app.token("alice", &[]).await;
    let bobs = app.account_with_token("bob", &[]).await;
    let get = |token: &str| {
        app.request(Method::GET, "/api/v1/account")
            .bearer_auth(token.to_owned())
            .send()
    };
    for _ in 0..4 {
        assert_eq!(get(&first).await.unwrap().status(), StatusCode::OK);
    }
    for token in [&first, &second] {
        let res = get(token).await.unwrap();
        assert!(res.headers().contains_key("retry-after"));
        problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    }
    // Another account's budget is its own.
    assert_eq!(get(&bobs).await.unwrap().status(), StatusCode::OK);
}

/// A revoked token is worth what no token is: its requests spend their
/// address's anonymous budget (and are refused where a caller is needed),
/// never an account's.
async fn revoked_tokens_buy_nothing(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| {
            behind_a_proxy(r);
            r.anonymous_reads_per_minute = NonZeroU32::new(3).unwrap();
        })
        .build()
        .await
    else {
        return;
    };
    let created = app.account_with_token_record("alice", &["tokens"]).await;
    let live = created["token"].as_str().unwrap().to_owned();
    let revoked = app.token("alice", &[]).await;
    let list: Value = app
        .request(Method::GET, "/api/v1/tokens")
        .bearer_auth(&live)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let revoked_id = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .find(|id| *id != created["id"].as_str().unwrap())
        .unwrap()
        .to_owned();
    let res = app
        .request(Method::DELETE, &format!("/api/v1/tokens/{revoked_id}"))
        .bearer_auth(&live)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);

    let address = "198.51.100.9";
    let body = problem(
        get_from(&app, address, "/api/v1/account", &revoked).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("revoked"),
        "{body}"
    );
    for _ in 0..2 {
        assert_eq!(
            get_from(&app, address, "/api/v1/models", &revoked)
                .await
                .status(),
            StatusCode::OK
        );
    }
    // The address's three are spent, with or without the revoked token...
    let res = get_from(&app, address, "/api/v1/models", &revoked).await;
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    let res = app
        .request(Method::GET, "/api/v1/models")
        .header("x-forwarded-for", address)
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // ...while the live token, from the same address, spends its account's.
    assert_eq!(
        get_from(&app, address, "/api/v1/models", &live)
            .await
            .status(),
        StatusCode::OK
    );
}

async fn credential_endpoints_answer_429_with_retry_after(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.credentials_per_minute = NonZeroU32::new(2).unwrap())
        .build()
        .await
    else {
        return;
    };
    assert_eq!(
        app.create_account("alice", "password-123").await.status(),
        StatusCode::CREATED
    );
    let request =
        json!({"username": "alice", "password": "password-123", "name": "t", "scopes": []});
    assert_eq!(
        app.post_json("/api/v1/tokens", &request).await.status(),
        StatusCode::CREATED
    );
    let res = app.post_json("/api/v1/tokens", &request).await;
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&retry_after), "{retry_after}");
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
}

async fn anonymous_reads_are_limited_per_address(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| r.anonymous_reads_per_minute = NonZeroU32::new(5).unwrap())
        .build()
        .await
    else {
        return;
    };
    // Two anonymous requests: the account and its token.
    let token = app.account_with_token("alice", &[]).await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/v1/models").await.status(), StatusCode::OK);
    }
    let res = app.get("/api/v1/models").await;
    assert!(res.headers().contains_key("retry-after"));
    problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    // A token that verifies spends its own budget; the catalog's pages and
    // any header that is not a valid token spend the address's.
    let with = |auth: &str| {
        app.request(Method::GET, "/api/v1/models")
            .header("authorization", auth.to_owned())
            .send()
    };
    assert_eq!(
        with(&format!("Bearer {token}")).await.unwrap().status(),
        StatusCode::OK
    );
    for garbage in ["Bearer garbage", "Basic YTpi", "Bearer "] {
        let res = with(garbage).await.unwrap();
        problem(res, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    }
    assert_eq!(
        app.get("/search?q=x").await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    // Operational endpoints are never counted.
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
}

async fn limits_can_be_turned_off(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .rate_limits(|r| {
            r.enabled = false;
            r.anonymous_reads_per_minute = NonZeroU32::new(1).unwrap();
        })
        .build()
        .await
    else {
        return;
    };
    for _ in 0..5 {
        assert_eq!(app.get("/api/v1/models").await.status(), StatusCode::OK);
    }
}
