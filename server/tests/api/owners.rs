use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, problem, seed::seed_version};

backend_tests!(
    owners_are_invited_accept_and_leave,
    only_owners_with_the_scope_change_owners,
    unknown_packages_kinds_and_accounts,
    a_removed_owners_invitations_are_void,
    answering_an_invitation_honours_the_tokens_packages,
);

async fn change(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    users: &[&str],
) -> reqwest::Response {
    app.request(method, path)
        .bearer_auth(token)
        .json(&json!({"usernames": users}))
        .send()
        .await
        .unwrap()
}

fn usernames(body: &Value) -> Vec<&str> {
    body["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["username"].as_str().unwrap())
        .collect()
}

async fn send(app: &TestApp, method: Method, path: &str, token: &str) -> reqwest::Response {
    app.request(method, path)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

fn roles(body: &Value) -> Vec<(String, String)> {
    body["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["username"].as_str().unwrap().to_owned(),
                o["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn owners_are_invited_accept_and_leave(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    let bob = app.account_with_token("bob", &["owners"]).await;
    let carol = app.account_with_token("carol", &["owners"]).await;
    seed_version(&app, Kind::Tool, "web-search", "1.0.0", "alice")
        .await
        .unwrap();
    let path = "/api/v1/tools/web-search/owners";

    // Any spelling of the name reaches the package.
    let body: Value = app
        .get("/api/v1/tools/Web_Search/owners")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(usernames(&body), ["alice"]);

    // The package's page, rendered once for visitors without a session and
    // served from memory, shows an owner change at once (it bumps the
    // registry generation the page was rendered at).
    let page = app.get("/tools/web-search").await.text().await.unwrap();
    assert!(page.contains("/publishers/alice") && !page.contains("/publishers/carol"));

    // An invitation is not ownership: nothing is attributed to bob until
    // he accepts.
    let res = change(&app, Method::PUT, path, &alice, &["Bob", "carol"]).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(usernames(&body), ["alice"]);
    assert_eq!(body["invitations"].as_array().unwrap().len(), 2);
    let mine: Value = send(&app, Method::GET, "/api/v1/invitations", &bob)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(mine["invitations"][0]["name"], "web-search");
    assert_eq!(mine["invitations"][0]["invited_by"], "alice");

    for token in [&bob, &carol] {
        let res = send(
            &app,
            Method::PUT,
            "/api/v1/invitations/tools/web-search",
            token,
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK);
    }
    let page = app.get("/tools/web-search").await.text().await.unwrap();
    assert!(page.contains("/publishers/carol"), "{page}");
    let body: Value = app.get(path).await.json().await.unwrap();
    assert_eq!(
        roles(&body),
        [
            ("alice".to_owned(), "founder".to_owned()),
            ("bob".to_owned(), "owner".to_owned()),
            ("carol".to_owned(), "owner".to_owned()),
        ]
    );
    assert_eq!(body["invitations"], json!([]));
    // An answered invitation is gone.
    problem(
        send(
            &app,
            Method::PUT,
            "/api/v1/invitations/tools/web-search",
            &bob,
        )
        .await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;

    // A later owner cannot remove an earlier one; an earlier one can.
    problem(
        change(&app, Method::DELETE, path, &bob, &["alice"]).await,
        StatusCode::FORBIDDEN,
        "senior-owner",
    )
    .await;
    let res = change(&app, Method::DELETE, path, &bob, &["carol"]).await;
    assert_eq!(res.status(), StatusCode::OK);
    // Anyone may leave; the last owner may not.
    let res = change(&app, Method::DELETE, path, &bob, &["bob"]).await;
    assert_eq!(usernames(&res.json::<Value>().await.unwrap()), ["alice"]);
    problem(
        change(&app, Method::DELETE, path, &alice, &["alice"]).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;

    // Declining drops the invitation.
    change(&app, Method::PUT, path, &alice, &["carol"]).await;
    let res = send(
        &app,
        Method::DELETE,
        "/api/v1/invitations/tools/web-search",
        &carol,
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let body: Value = app.get(path).await.json().await.unwrap();
    assert_eq!(body["invitations"], json!([]));
    assert_eq!(usernames(&body), ["alice"]);

    // Each step is in the accounts' activity lists.
    let audit: Value = send(&app, Method::GET, "/api/v1/account/audit", &bob)
        .await
        .json()
        .await
        .unwrap();
    let actions: Vec<&str> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"invited"), "{actions:?}");
    assert!(actions.contains(&"owner_added"), "{actions:?}");
    assert!(actions.contains(&"owner_removed"), "{actions:?}");
}

async fn only_owners_with_the_scope_change_owners(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["root"]).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    let mallory = app.account_with_token("mallory", &["owners"]).await;
    let root = app.account_with_token("root", &["owners"]).await;
    seed_version(&app, Kind::Tool, "calc", "0.1.0", "alice")
        .await
        .unwrap();
    let path = "/api/v1/tools/calc/owners";

    // Not an owner: cannot invite (herself or anyone), cannot remove.
    for (method, users) in [(Method::PUT, ["mallory"]), (Method::DELETE, ["alice"])] {
        problem(
            change(&app, method, path, &mallory, &users).await,
            StatusCode::FORBIDDEN,
            "not-owner",
        )
        .await;
    }
    // An owner's token without the scope.
    let no_scope = app.token("alice", &["publish"]).await;
    problem(
        change(&app, Method::PUT, path, &no_scope, &["mallory"]).await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    // A token restricted to other packages.
    let res = app
        .post_json(
            "/api/v1/tokens",
            &json!({"username": "alice", "password": "password-123", "name": "narrow",
                    "scopes": ["owners"], "packages": ["other-*"]}),
        )
        .await;
    let narrow = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    problem(
        change(&app, Method::PUT, path, &narrow, &["mallory"]).await,
        StatusCode::FORBIDDEN,
        "token-not-for-package",
    )
    .await;

    // An admin removes any owner, never the last; but only with a token
    // carrying the `admin` scope: an admin's token for owner work is a
    // member's, and cannot touch another's package.
    change(&app, Method::PUT, path, &alice, &["mallory"]).await;
    send(
        &app,
        Method::PUT,
        "/api/v1/invitations/tools/calc",
        &mallory,
    )
    .await;
    let body = problem(
        change(&app, Method::DELETE, path, &root, &["alice"]).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("`admin` scope"),
        "{body}"
    );
    let list: Value = app.get(path).await.json().await.unwrap();
    assert_eq!(usernames(&list), ["alice", "mallory"], "the founder stays");
    let root = app.token("root", &["owners", "admin"]).await;
    let res = change(&app, Method::DELETE, path, &root, &["alice"]).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(usernames(&res.json::<Value>().await.unwrap()), ["mallory"]);
    problem(
        change(&app, Method::DELETE, path, &root, &["mallory"]).await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;
}

async fn unknown_packages_kinds_and_accounts(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    seed_version(&app, Kind::Tool, "calc", "0.1.0", "alice")
        .await
        .unwrap();

    problem(
        app.get("/api/v1/tools/nope/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.get("/api/v1/widgets/calc/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    problem(
        app.get("/api/v1/tools/bad.name/owners").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;

    let body = problem(
        change(
            &app,
            Method::PUT,
            "/api/v1/tools/calc/owners",
            &alice,
            &["ghost", "alice", "phantom"],
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
    assert_eq!(fields, ["usernames[0]", "usernames[2]"]);

    app.create_account("carol", "password-123").await;
    problem(
        change(
            &app,
            Method::DELETE,
            "/api/v1/tools/calc/owners",
            &alice,
            &["carol"],
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
}

/// An invitation speaks for its sender only while they own the package:
/// a co-owner who invited another account of theirs, then was removed,
/// does not get back in through it.
async fn a_removed_owners_invitations_are_void(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    let mallory = app.account_with_token("mallory", &["owners"]).await;
    let sock = app.account_with_token("sock", &["owners"]).await;
    let bob = app.account_with_token("bob", &["owners"]).await;
    let published = seed_version(&app, Kind::Tool, "calc", "0.1.0", "alice")
        .await
        .unwrap();
    let path = "/api/v1/tools/calc/owners";
    let accept = "/api/v1/invitations/tools/calc";

    change(&app, Method::PUT, path, &alice, &["mallory"]).await;
    assert_eq!(
        send(&app, Method::PUT, accept, &mallory).await.status(),
        StatusCode::OK
    );
    let res = change(&app, Method::PUT, path, &mallory, &["sock"]).await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = change(&app, Method::DELETE, path, &alice, &["mallory"]).await;
    let list: Value = res.json().await.unwrap();
    assert_eq!(usernames(&list), ["alice"]);
    assert_eq!(list["invitations"], json!([]), "withdrawn with her: {list}");

    problem(
        send(&app, Method::PUT, accept, &sock).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let inbox: Value = send(&app, Method::GET, "/api/v1/invitations", &sock)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(inbox["invitations"], json!([]), "{inbox}");

    // However it came about, an invitation whose sender owns nothing here
    // is not accepted (written behind the API's back: the API cannot make
    // one).
    let db = &app.store().db;
    let bobs = app.account_id("bob").await;
    let mallorys = app.account_id("mallory").await;
    let expires = store::now() + 3600;
    assert!(
        db.invite_owner(published.package_id, bobs, mallorys, expires)
            .await
            .unwrap()
    );
    problem(
        send(&app, Method::PUT, accept, &bob).await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let list: Value = app.get(path).await.json().await.unwrap();
    assert_eq!(usernames(&list), ["alice"]);
}

/// A token restricted to some packages answers invitations to those only.
async fn answering_an_invitation_honours_the_tokens_packages(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["owners"]).await;
    app.create_account("bob", "password-123").await;
    seed_version(&app, Kind::Tool, "calc", "0.1.0", "alice")
        .await
        .unwrap();
    let narrow = app
        .post_json(
            "/api/v1/tokens",
            &json!({"username": "bob", "password": "password-123", "name": "narrow",
                    "scopes": ["owners"], "packages": ["other-*"]}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    change(
        &app,
        Method::PUT,
        "/api/v1/tools/calc/owners",
        &alice,
        &["bob"],
    )
    .await;
    let invitation = "/api/v1/invitations/tools/calc";
    for method in [Method::PUT, Method::DELETE] {
        problem(
            send(&app, method, invitation, &narrow).await,
            StatusCode::FORBIDDEN,
            "token-not-for-package",
        )
        .await;
    }
    let list: Value = app
        .get("/api/v1/tools/calc/owners")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(usernames(&list), ["alice"]);
    assert_eq!(list["invitations"][0]["username"], "bob", "still pending");

    let wide = app.token("bob", &["owners"]).await;
    let res = send(&app, Method::PUT, invitation, &wide).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        usernames(&res.json::<Value>().await.unwrap()),
        ["alice", "bob"]
    );
}
