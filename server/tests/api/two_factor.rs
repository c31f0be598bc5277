//! A second factor (docs/two-factor.md), on every backend, with codes made
//! by pyotp (an implementation nobody here wrote; `.ci/run` installs it
//! and sets AGENTLANG_TEST_TOTP_PYTHON): enrolment and its confirmation,
//! tokens minted only with a code, a code accepted once, recovery codes
//! each once, the step-up on owners, statuses and the publishing policy,
//! enrolment required by a package's policy, and publishes refused from a
//! token minted without a code.

use std::{path::PathBuf, time::Duration};

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{publish, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem, seed::PASSWORD},
};

backend_tests!(two_factor_guards_tokens_owners_statuses_and_publishes,);

const OTP: &str = "AgentLang-OTP";

/// The Python with pyotp that `.ci/run` installs; `None` (the test is
/// skipped) without it, which fails under `CI=true`.
fn totp_python() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_TOTP_PYTHON").map(PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_TOTP_PYTHON is not set (.ci/run installs it)"
        );
        eprintln!("skipped: set AGENTLANG_TEST_TOTP_PYTHON to a Python with pyotp==2.12.1");
    }
    found
}

/// pyotp's codes for the previous, the current and the next time-step,
/// taken early in a step: each is then accepted for the next 15 seconds
/// at least (one step of skew either way), in this order only (a code of
/// an earlier step than one accepted is refused).
async fn codes(python: &PathBuf, secret: &str) -> [String; 3] {
    let into_step = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 30;
    if into_step > 15 {
        tokio::time::sleep(Duration::from_secs(31 - into_step)).await;
    }
    let out = tokio::process::Command::new(python)
        .arg("-c")
        .arg(
            "import pyotp, sys, time\n\
             totp = pyotp.TOTP(sys.argv[1])\n\
             step = int(time.time()) // 30\n\
             print(' '.join(totp.at((step + d) * 30) for d in (-1, 0, 1)))",
        )
        .arg(secret)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let codes: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    codes.try_into().expect("three codes")
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    otp: Option<&str>,
    body: &Value,
) -> Response {
    let mut req = app.request(method, path).bearer_auth(token).json(body);
    if let Some(code) = otp {
        req = req.header(OTP, code);
    }
    req.send().await.unwrap()
}

async fn mint(app: &TestApp, otp: Option<&str>) -> Response {
    let mut body = json!({"username": "alice", "password": PASSWORD, "name": "2fa",
                          "scopes": ["publish", "owners", "yank"]});
    if let Some(code) = otp {
        body["otp"] = json!(code);
    }
    app.post_json("/api/v1/tokens", &body).await
}

async fn two_factor_guards_tokens_owners_statuses_and_publishes(backend: Backend) {
    let Some(python) = totp_python() else {
        return;
    };
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
    published(&app, &bob.token, tool(&bob.key, "http_fetch", "1.0.0", &[])).await;
    let account = app.token("alice", &["tokens"]).await;
    let status = |token: String| {
        let app = &app;
        async move {
            let res = send(
                app,
                Method::GET,
                "/api/v1/account/2fa",
                &token,
                None,
                &json!({}),
            )
            .await;
            assert_eq!(res.status(), StatusCode::OK);
            res.json::<Value>().await.unwrap()
        }
    };
    assert_eq!(
        status(account.clone()).await,
        json!({"enrolled": false, "pending": false, "recovery_codes_left": 0})
    );
    // Without a second factor, nothing asks for a code.
    assert_eq!(mint(&app, None).await.status(), StatusCode::CREATED);

    // Enrolment needs the password again (any token of the account).
    let enrol = "/api/v1/account/2fa";
    problem(
        send(
            &app,
            Method::POST,
            enrol,
            &account,
            None,
            &json!({"password": "wrong-password"}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "invalid-credentials",
    )
    .await;
    let res = send(
        &app,
        Method::POST,
        enrol,
        &account,
        None,
        &json!({"password": PASSWORD}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let enrolment: Value = res.json().await.unwrap();
    let secret = enrolment["secret"].as_str().unwrap().to_owned();
    let uri = enrolment["otpauth_uri"].as_str().unwrap();
    assert!(uri.starts_with("otpauth://totp/AgentLang:alice?"), "{uri}");
    assert!(uri.contains(&format!("secret={secret}")), "{uri}");
    assert_eq!(status(account.clone()).await["pending"], true);
    // Pending: tokens are still minted without a code.
    assert_eq!(mint(&app, None).await.status(), StatusCode::CREATED);

    let [previous, current, next] = codes(&python, &secret).await;
    let confirm = "/api/v1/account/2fa/confirm";
    let wrong = if current == "000000" {
        "111111"
    } else {
        "000000"
    };
    problem(
        send(
            &app,
            Method::POST,
            confirm,
            &account,
            None,
            &json!({"code": wrong}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-invalid",
    )
    .await;
    let res = send(
        &app,
        Method::POST,
        confirm,
        &account,
        None,
        &json!({"code": previous}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let recovery: Vec<String> =
        serde_json::from_value(res.json::<Value>().await.unwrap()["recovery_codes"].clone())
            .unwrap();
    assert_eq!(recovery.len(), 10);
    assert_eq!(
        status(account.clone()).await,
        json!({"enrolled": true, "pending": false, "recovery_codes_left": 10})
    );
    // Enrolled: enrolling again is refused.
    problem(
        send(
            &app,
            Method::POST,
            enrol,
            &account,
            None,
            &json!({"password": PASSWORD}),
        )
        .await,
        StatusCode::CONFLICT,
        "conflict",
    )
    .await;

    // A token is minted only with a code, and each code works once.
    problem(
        mint(&app, None).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    problem(
        mint(&app, Some(&previous)).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-invalid",
    )
    .await;
    let res = mint(&app, Some(&current)).await;
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    let strong: Value = res.json().await.unwrap();
    let strong = strong["token"].as_str().unwrap().to_owned();
    problem(
        mint(&app, Some(&current)).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-invalid",
    )
    .await;

    // Owners: the step-up asks for a code; a recovery code works once.
    let owners = "/api/v1/tools/web_fetch/owners";
    let invite = json!({"usernames": ["bob"]});
    problem(
        send(&app, Method::PUT, owners, &alice.token, None, &invite).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    let res = send(
        &app,
        Method::PUT,
        owners,
        &alice.token,
        Some(&recovery[0]),
        &invite,
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );
    problem(
        send(
            &app,
            Method::PUT,
            owners,
            &alice.token,
            Some(&recovery[0]),
            &invite,
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-invalid",
    )
    .await;

    // Statuses: the same rule.
    let deprecate = json!({"status": "deprecated", "reason": "superseded"});
    let path = "/api/v1/tools/web_fetch/status";
    problem(
        send(&app, Method::PUT, path, &alice.token, None, &deprecate).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    // A recovery code typed without its dashes, in capitals, is the same.
    let typed = recovery[1].replace('-', "").to_uppercase();
    let res = send(
        &app,
        Method::PUT,
        path,
        &alice.token,
        Some(&typed),
        &deprecate,
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );

    // Trusted publishers: who may publish is asked for the code before
    // anything else about the request is looked at.
    let trust = json!({"issuer": "https://token.actions.githubusercontent.com",
                       "repository": "alice/web_fetch", "workflow": "release.yml"});
    let publishers = "/api/v1/tools/web_fetch/trusted-publishers";
    problem(
        send(&app, Method::POST, publishers, &alice.token, None, &trust).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    problem(
        send(
            &app,
            Method::DELETE,
            &format!("{publishers}/1"),
            &alice.token,
            None,
            &json!({}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;

    // A staged version: approving or rejecting it is asked for the code.
    let res = app
        .request(Method::POST, "/api/v1/publish?stage=true")
        .bearer_auth(&alice.token)
        .header("content-type", "application/octet-stream")
        .body(tool(&alice.key, "web_fetch", "1.0.5", &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let staged: Value = res.json().await.unwrap();
    let staged = format!("/api/v1/staged/{}", staged["id"].as_str().unwrap());
    problem(
        send(
            &app,
            Method::POST,
            &format!("{staged}/approve"),
            &alice.token,
            None,
            &json!({}),
        )
        .await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    let res = send(
        &app,
        Method::POST,
        &format!("{staged}/reject"),
        &alice.token,
        Some(&recovery[3]),
        &json!({"reason": "not this one"}),
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );

    // The publishing policy: turning two-factor on asks for the code.
    let policy = "/api/v1/tools/web_fetch/publishing";
    let on = json!({"two_factor_required": true});
    problem(
        send(&app, Method::PATCH, policy, &alice.token, None, &on).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    let res = send(&app, Method::PATCH, policy, &alice.token, Some(&next), &on).await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap()
    );

    // Publishing now needs a token minted with a code.
    problem(
        publish(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", "1.1.0", &[]),
        )
        .await,
        StatusCode::FORBIDDEN,
        "two-factor-required",
    )
    .await;
    published(&app, &strong, tool(&alice.key, "web_fetch", "1.1.0", &[])).await;

    // An owner without a second factor cannot switch the requirement on.
    problem(
        send(
            &app,
            Method::PATCH,
            "/api/v1/tools/http_fetch/publishing",
            &bob.token,
            None,
            &on,
        )
        .await,
        StatusCode::FORBIDDEN,
        "two-factor-enrolment-required",
    )
    .await;

    // Disabling needs a code too; then nothing asks for one.
    problem(
        send(&app, Method::DELETE, enrol, &account, None, &json!({})).await,
        StatusCode::UNAUTHORIZED,
        "two-factor-code-required",
    )
    .await;
    let res = send(
        &app,
        Method::DELETE,
        enrol,
        &account,
        Some(&recovery[2]),
        &json!({}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        status(account.clone()).await,
        json!({"enrolled": false, "pending": false, "recovery_codes_left": 0})
    );
    assert_eq!(mint(&app, None).await.status(), StatusCode::CREATED);
}

backend_tests!(catalog_sign_in_asks_for_the_code_as_a_second_step,);

/// A `name="..." value="..."` field of a page.
fn field(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    Some(html[start..][..html[start..].find('"')?].to_owned())
}

async fn catalog_sign_in_asks_for_the_code_as_a_second_step(backend: Backend) {
    use crate::catalog::{cookie_pair, csrf_field, no_redirects, set_cookie};
    use reqwest::header;

    let Some(python) = totp_python() else {
        return;
    };
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let account = app.account_with_token("alice", &["tokens"]).await;
    let res = send(
        &app,
        Method::POST,
        "/api/v1/account/2fa",
        &account,
        None,
        &json!({"password": PASSWORD}),
    )
    .await;
    let secret = res.json::<Value>().await.unwrap()["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let [previous, current, _] = codes(&python, &secret).await;
    let res = send(
        &app,
        Method::POST,
        "/api/v1/account/2fa/confirm",
        &account,
        None,
        &json!({"code": previous}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);

    // The password step answers the code form, with no session.
    let client = no_redirects();
    let url = format!("{}/login", app.url);
    let res = client.get(&url).send().await.unwrap();
    let cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let token = csrf_field(&res.text().await.unwrap());
    let res = client
        .post(&url)
        .header(header::COOKIE, &cookie)
        .form(&[
            ("username", "alice"),
            ("password", PASSWORD),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(set_cookie(&res, "agentlang_session").is_none());
    let cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let html = res.text().await.unwrap();
    assert!(html.contains("name=\"otp\""), "{html}");
    assert!(
        !html.contains(PASSWORD),
        "the password is not kept in the page"
    );
    let pending = field(&html, "pending").expect("the pending sign-in");
    let token = csrf_field(&html);

    // A wrong code, and a forged pending sign-in, sign nobody in.
    let wrong = if current == "000000" {
        "111111"
    } else {
        "000000"
    };
    let res = client
        .post(&url)
        .header(header::COOKIE, &cookie)
        .form(&[
            ("username", "alice"),
            ("pending", &pending),
            ("otp", wrong),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(set_cookie(&res, "agentlang_session").is_none());
    let cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let html = res.text().await.unwrap();
    let token = csrf_field(&html);
    let forged = pending.replacen(|c: char| c.is_ascii_digit(), "9", 1);
    let res = client
        .post(&url)
        .header(header::COOKIE, &cookie)
        .form(&[
            ("username", "alice"),
            ("pending", &forged),
            ("otp", &current),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let token = csrf_field(&res.text().await.unwrap());

    // The right code finishes the sign-in.
    let res = client
        .post(&url)
        .header(header::COOKIE, &cookie)
        .form(&[
            ("username", "alice"),
            ("pending", &pending),
            ("otp", &current),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(set_cookie(&res, "agentlang_session").is_some());
}

backend_tests!(the_account_page_enrols_and_confirms_a_second_factor,);

async fn the_account_page_enrols_and_confirms_a_second_factor(backend: Backend) {
    use crate::catalog::{csrf_field, no_redirects, sign_in};
    use reqwest::header;

    let Some(python) = totp_python() else {
        return;
    };
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", PASSWORD).await;
    let session = sign_in(&app, "alice", PASSWORD).await.unwrap();
    let client = no_redirects();
    let url = |p: &str| format!("{}{p}", app.url);
    let post = |path: &'static str, fields: Vec<(&'static str, String)>| {
        let client = client.clone();
        let session = session.clone();
        let target = url(path);
        async move {
            client
                .post(target)
                .header(header::COOKIE, session)
                .form(&fields)
                .send()
                .await
                .unwrap()
        }
    };
    let account = client
        .get(url("/account"))
        .header(header::COOKIE, &session)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = csrf_field(&account);
    assert!(
        account.contains("action=\"/account/2fa\""),
        "the enable form"
    );

    let res = post(
        "/account/2fa",
        vec![
            ("csrf_token", csrf.clone()),
            ("password", PASSWORD.to_owned()),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.unwrap();
    let marker = "<code id=\"two-factor-secret\">";
    let start = html.find(marker).expect("the secret is shown") + marker.len();
    let secret = html[start..][..html[start..].find('<').unwrap()].to_owned();
    let [previous, _, _] = codes(&python, &secret).await;
    let res = post(
        "/account/2fa/confirm",
        vec![("csrf_token", csrf.clone()), ("otp", previous)],
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.unwrap();
    assert_eq!(html.matches("<li><code>").count(), 10, "ten recovery codes");
    assert!(html.contains("action=\"/account/2fa/disable\""));

    // Now a token from the page needs a code too.
    let res = post(
        "/account/tokens",
        vec![
            ("csrf_token", csrf.clone()),
            ("name", "ci".to_owned()),
            ("scopes", "publish".to_owned()),
        ],
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
}
