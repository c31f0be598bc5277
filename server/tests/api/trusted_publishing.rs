//! Trusted publishing (docs/trusted-publishing.md), against an OpenID
//! Connect issuer nobody here wrote the cryptography of: `oidc_issuer.py`
//! (joserfc) generates RSA and EC keys per run, serves discovery and JWKS
//! over HTTP and signs the ID tokens the test asks for. On every backend:
//! owners trust an identity; its ID token buys a publish token for exactly
//! the trusted package; every refusal has its own problem type; a replay,
//! a rotated key and the trusted-only policy behave; removing the trust
//! revokes the tokens it minted.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{
    publish::{agent, agent_yaml, publish, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    a_trusted_identity_publishes_its_package_and_nothing_else,
    a_rotated_key_is_fetched_at_most_once_a_minute,
);

const AUDIENCE: &str = "registry.test";
const TRUSTED: &str = "/api/v1/tools/calc/trusted-publishers";
const EXCHANGE: &str = "/api/v1/trusted-publishing/tokens";

/// The Python with joserfc that `.ci/run` installs
/// (`AGENTLANG_TEST_OIDC_PYTHON`); `None` (the test is skipped) without
/// it, which fails under `CI=true`.
fn issuer_python() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_OIDC_PYTHON").map(PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_OIDC_PYTHON is not set (.ci/run installs it)"
        );
        eprintln!("skipped: set AGENTLANG_TEST_OIDC_PYTHON to a Python with joserfc");
    }
    found
}

/// A running issuer.
struct Issuer {
    _child: tokio::process::Child,
    url: String,
    http: reqwest::Client,
}

impl Issuer {
    async fn start(python: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/oidc_issuer.py");
        let mut child = tokio::process::Command::new(python)
            .arg(script)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the issuer starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the issuer says its port")
            .unwrap()
            .expect("the issuer exited before saying its port");
        let port = line.strip_prefix("PORT ").expect("PORT <n>").to_owned();
        Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        }
    }

    async fn mint_with(&self, alg: &str, key: &str, claims: &Value) -> String {
        self.http
            .post(format!("{}/mint", self.url))
            .json(&json!({"alg": alg, "key": key, "claims": claims}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    async fn mint(&self, claims: &Value) -> String {
        self.mint_with("RS256", "current", claims).await
    }

    async fn rotate(&self) {
        self.http
            .post(format!("{}/rotate", self.url))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
    }

    async fn jwks_fetches(&self) -> u64 {
        let stats: Value = self
            .http
            .get(format!("{}/stats", self.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        stats["jwks_fetches"].as_u64().unwrap()
    }

    /// GitHub Actions' claims for a run of `workflow` in `repository`.
    fn github(&self, repository: &str, workflow: &str, jti: &str) -> Value {
        let now = chrono_now();
        json!({
            "iss": self.url, "aud": AUDIENCE, "iat": now, "nbf": now - 5, "exp": now + 300,
            "jti": jti, "sub": format!("repo:{repository}:ref:refs/heads/main"),
            "repository": repository,
            "workflow_ref": format!("{repository}/.github/workflows/{workflow}@refs/heads/main"),
            "ref": "refs/heads/main", "sha": "0123456789abcdef0123456789abcdef01234567",
            "run_id": "4242",
        })
    }
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn app_with(backend: Backend, issuer: &Issuer) -> Option<TestApp> {
    let url = issuer.url.clone();
    TestApp::builder(backend)
        .config(move |c| {
            c.oidc_issuers = vec![url];
            c.oidc_audience = Some(AUDIENCE.to_owned());
        })
        .build()
        .await
}

async fn send(app: &TestApp, method: Method, path: &str, token: &str, body: &Value) -> Response {
    app.request(method, path)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn exchange(app: &TestApp, jwt: &str) -> Response {
    app.post_json(EXCHANGE, &json!({"jwt": jwt})).await
}

async fn exchanged(app: &TestApp, jwt: &str) -> Value {
    let res = exchange(app, jwt).await;
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "{}",
        res.text().await.unwrap()
    );
    res.json().await.unwrap()
}

async fn a_trusted_identity_publishes_its_package_and_nothing_else(backend: Backend) {
    let Some(python) = issuer_python() else {
        return;
    };
    let issuer = Issuer::start(&python).await;
    let Some(app) = app_with(backend, &issuer).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    published(&app, &alice.token, tool(&alice.key, "other", "1.0.0", &[])).await;

    // Only an owner trusts an identity, and only of a configured issuer.
    let github =
        json!({"issuer": issuer.url, "repository": "acme/calc", "workflow": "release.yml"});
    problem(
        send(&app, Method::POST, TRUSTED, &bob.token, &github).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let elsewhere = json!({"issuer": "https://issuer.example", "repository": "acme/calc", "workflow": "release.yml"});
    problem(
        send(&app, Method::POST, TRUSTED, &alice.token, &elsewhere).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let res = send(&app, Method::POST, TRUSTED, &alice.token, &github).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let trusted: Value = res.json().await.unwrap();
    let gitlab = json!({"issuer": issuer.url, "repository": "group/calc",
                        "workflow": ".gitlab-ci.yml", "environment": "production"});
    let res = send(&app, Method::POST, TRUSTED, &alice.token, &gitlab).await;
    assert_eq!(res.status(), StatusCode::CREATED);

    // The run's ID token buys a publish token for calc alone.
    let minted = exchanged(
        &app,
        &issuer
            .mint(&issuer.github("acme/calc", "release.yml", "j1"))
            .await,
    )
    .await;
    assert_eq!(minted["packages"], json!(["tool/calc"]));
    let token = minted["token"].as_str().unwrap().to_owned();
    // Signed with the key of the account that added the trust (alice's).
    let calc = tool(&alice.key, "calc", "1.1.0", &[]);
    let sha256 = agentlang_core::digest::Sha256Digest::of(&calc).to_hex();
    let record = published(&app, &token, calc).await;
    // Provenance made by the registry from the identity it checked, signed
    // with the key its JWKS names, shown as the strongest evidence.
    assert_eq!(
        record["evidence"],
        json!({"publisher": "trusted", "provenance": true})
    );
    let served = app
        .get("/api/v1/tools/calc/1.1.0/provenance")
        .await
        .bytes()
        .await
        .unwrap()
        .to_vec();
    let jwks: Value = app
        .get("/.well-known/jwks.json")
        .await
        .json()
        .await
        .unwrap();
    let x = jwks["keys"][0]["x"].as_str().unwrap();
    let raw: [u8; 32] =
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, x)
            .unwrap()
            .try_into()
            .unwrap();
    let public = agentlang_core::signing::PublicKey::from_raw(&raw).unwrap();
    let verified = agentlang_core::provenance::verify(
        &served,
        &[public],
        &agentlang_core::digest::Sha256Digest::parse_hex(&sha256).unwrap(),
    )
    .unwrap();
    let summary = agentlang_core::provenance::summary(&verified.statement);
    assert_eq!(summary.repository.as_deref(), Some("acme/calc"));
    assert_eq!(summary.workflow.as_deref(), Some("release.yml"));
    assert_eq!(
        summary.commit.as_deref(),
        Some("0123456789abcdef0123456789abcdef01234567")
    );
    if let Some(python) = crate::provenance::dsse_python() {
        crate::provenance::dsse_verified(&python, &served, &raw, &sha256);
    }
    problem(
        publish(&app, &token, tool(&alice.key, "other", "1.1.0", &[])).await,
        StatusCode::FORBIDDEN,
        "token-not-for-package",
    )
    .await;
    // A token names packages, not kinds: a package of another kind named
    // alike does not trust the identity, and a trusted token creates none.
    let calc_agent = agent(&alice.key, &agent_yaml("calc", "1.0.0", &[]), None);
    problem(
        publish(&app, &token, calc_agent).await,
        StatusCode::FORBIDDEN,
        "token-not-for-package",
    )
    .await;
    // A publish token, nothing more.
    problem(
        send(&app, Method::POST, TRUSTED, &token, &github).await,
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;

    // Each refusal says what it is.
    let jwt = issuer
        .mint(&issuer.github("acme/calc", "release.yml", "j1"))
        .await;
    problem(
        exchange(&app, &jwt).await,
        StatusCode::UNAUTHORIZED,
        "oidc-replayed",
    )
    .await;
    let mut claims = issuer.github("acme/calc", "release.yml", "j2");
    claims["aud"] = json!("another.registry");
    problem(
        exchange(&app, &issuer.mint(&claims).await).await,
        StatusCode::UNAUTHORIZED,
        "oidc-wrong-audience",
    )
    .await;
    let mut claims = issuer.github("acme/calc", "release.yml", "j3");
    claims["exp"] = json!(chrono_now() - 600);
    claims["iat"] = json!(chrono_now() - 900);
    claims["nbf"] = json!(chrono_now() - 900);
    problem(
        exchange(&app, &issuer.mint(&claims).await).await,
        StatusCode::UNAUTHORIZED,
        "oidc-expired",
    )
    .await;
    let mut claims = issuer.github("acme/calc", "release.yml", "j4");
    claims["iss"] = json!("https://token.actions.githubusercontent.com");
    problem(
        exchange(&app, &issuer.mint(&claims).await).await,
        StatusCode::UNAUTHORIZED,
        "oidc-unknown-issuer",
    )
    .await;
    let claims = issuer.github("acme/calc", "release.yml", "j5");
    for (alg, key) in [
        ("RS256", "stranger"),
        ("ES256", "stranger"),
        ("HS256", "current"),
        ("none", "current"),
    ] {
        problem(
            exchange(&app, &issuer.mint_with(alg, key, &claims).await).await,
            StatusCode::UNAUTHORIZED,
            "oidc-bad-signature",
        )
        .await;
    }
    let body = problem(
        exchange(
            &app,
            &issuer
                .mint(&issuer.github("acme/calc", "deploy.yml", "j6"))
                .await,
        )
        .await,
        StatusCode::FORBIDDEN,
        "oidc-no-trusted-publisher",
    )
    .await;
    // It says which claims were seen, never which packages exist.
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("deploy.yml"), "{detail}");
    assert!(!detail.contains("tool"), "{detail}");
    problem(
        exchange(&app, "not.a.jwt").await,
        StatusCode::BAD_REQUEST,
        "oidc-malformed",
    )
    .await;
    let mut claims = issuer.github("acme/calc", "release.yml", "j7");
    claims.as_object_mut().unwrap().remove("workflow_ref");
    problem(
        exchange(&app, &issuer.mint(&claims).await).await,
        StatusCode::BAD_REQUEST,
        "oidc-malformed",
    )
    .await;

    // ES256 verifies as well as RS256.
    let jwt = issuer
        .mint_with(
            "ES256",
            "current",
            &issuer.github("acme/calc", "release.yml", "j8"),
        )
        .await;
    exchanged(&app, &jwt).await;

    // GitLab's shape, with the environment the trust requires.
    let now = chrono_now();
    let mut gitlab_claims = json!({
        "iss": issuer.url, "aud": AUDIENCE, "iat": now, "exp": now + 300, "jti": "g1",
        "sub": "project_path:group/calc:ref_type:branch:ref:main",
        "project_path": "group/calc",
        "ci_config_ref_uri": "gitlab.com/group/calc//.gitlab-ci.yml@refs/heads/main",
        "environment": "staging", "ref": "main", "sha": "abc", "pipeline_id": "77",
    });
    problem(
        exchange(&app, &issuer.mint(&gitlab_claims).await).await,
        StatusCode::FORBIDDEN,
        "oidc-no-trusted-publisher",
    )
    .await;
    gitlab_claims["jti"] = json!("g2");
    gitlab_claims["environment"] = json!("production");
    let minted_gitlab = exchanged(&app, &issuer.mint(&gitlab_claims).await).await;
    assert_eq!(minted_gitlab["packages"], json!(["tool/calc"]));

    // The trusted-only policy refuses an ordinary token, not a trusted one.
    let res = send(
        &app,
        Method::PATCH,
        "/api/v1/tools/calc/publishing",
        &alice.token,
        &json!({"trusted_publishing_only": true}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    problem(
        publish(&app, &alice.token, tool(&alice.key, "calc", "1.2.0", &[])).await,
        StatusCode::FORBIDDEN,
        "trusted-publishing-required",
    )
    .await;
    published(&app, &token, tool(&alice.key, "calc", "1.2.0", &[])).await;

    // Owners see the trust and the tokens it minted, newest first.
    problem(
        send(&app, Method::GET, TRUSTED, &bob.token, &json!({})).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let res = app
        .request(Method::GET, TRUSTED)
        .bearer_auth(&alice.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let listing: Value = res.json().await.unwrap();
    assert_eq!(listing["publishers"].as_array().unwrap().len(), 2);
    let tokens = listing["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 3, "{listing}");
    assert_eq!(tokens[0]["identity"]["repository"], "group/calc");
    let first = tokens.last().unwrap();
    assert_eq!(first["trusted_publisher_id"], trusted["id"]);
    assert_eq!(first["identity"]["workflow"], "release.yml");
    assert_eq!(first["identity"]["jti"], "j1");
    assert_eq!(first["identity"]["run_id"], "4242");
    assert!(first["revoked_at"].is_null());

    // Removing the trust revokes its live tokens and mints no more.
    let id = trusted["id"].as_i64().unwrap();
    let res = send(
        &app,
        Method::DELETE,
        &format!("{TRUSTED}/{id}"),
        &alice.token,
        &json!({}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    problem(
        publish(&app, &token, tool(&alice.key, "calc", "1.3.0", &[])).await,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
    )
    .await;
    problem(
        exchange(
            &app,
            &issuer
                .mint(&issuer.github("acme/calc", "release.yml", "j9"))
                .await,
        )
        .await,
        StatusCode::FORBIDDEN,
        "oidc-no-trusted-publisher",
    )
    .await;
    problem(
        send(
            &app,
            Method::DELETE,
            &format!("{TRUSTED}/{id}"),
            &alice.token,
            &json!({}),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    // An id no trusted publisher can have, a number or not, is not one.
    for id in ["9223372036854775808", "first"] {
        problem(
            send(
                &app,
                Method::DELETE,
                &format!("{TRUSTED}/{id}"),
                &alice.token,
                &json!({}),
            )
            .await,
            StatusCode::NOT_FOUND,
            "not-found",
        )
        .await;
    }
}

async fn a_rotated_key_is_fetched_at_most_once_a_minute(backend: Backend) {
    let Some(python) = issuer_python() else {
        return;
    };
    let issuer = Issuer::start(&python).await;
    let Some(app) = app_with(backend, &issuer).await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    let github =
        json!({"issuer": issuer.url, "repository": "acme/calc", "workflow": "release.yml"});
    let res = send(&app, Method::POST, TRUSTED, &alice.token, &github).await;
    assert_eq!(res.status(), StatusCode::CREATED);

    exchanged(
        &app,
        &issuer
            .mint(&issuer.github("acme/calc", "release.yml", "r1"))
            .await,
    )
    .await;
    assert_eq!(issuer.jwks_fetches().await, 1);
    // Cached: no fetch for a known key.
    exchanged(
        &app,
        &issuer
            .mint(&issuer.github("acme/calc", "release.yml", "r2"))
            .await,
    )
    .await;
    assert_eq!(issuer.jwks_fetches().await, 1);

    // A new kid within the minute of the last fetch (or a flood of forged
    // ones) costs no fetch: refused.
    issuer.rotate().await;
    for jti in ["r3", "r4", "r5"] {
        problem(
            exchange(
                &app,
                &issuer
                    .mint(&issuer.github("acme/calc", "release.yml", jti))
                    .await,
            )
            .await,
            StatusCode::UNAUTHORIZED,
            "oidc-bad-signature",
        )
        .await;
    }
    assert_eq!(issuer.jwks_fetches().await, 1);
    // Past the minute, the unknown kid fetches the keys again, once.
    tokio::time::sleep(Duration::from_secs(61)).await;
    exchanged(
        &app,
        &issuer
            .mint(&issuer.github("acme/calc", "release.yml", "r6"))
            .await,
    )
    .await;
    exchanged(
        &app,
        &issuer
            .mint(&issuer.github("acme/calc", "release.yml", "r7"))
            .await,
    )
    .await;
    assert_eq!(issuer.jwks_fetches().await, 2);
}
