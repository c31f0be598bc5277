//! OSV advisories (docs/advisories.md): who may publish, update and
//! withdraw one, what a refused document is told (each problem at its
//! path), what is served (one, pages, `all.zip`), the log entry of every
//! change naming the SHA-256 of the bytes served, and the audit of an
//! agent.lock. Served documents are checked against the vendored OSV
//! schema with `check-jsonschema` when `.ci/run` installed it.

use std::path::{Path, PathBuf};

use agentlang_core::{Kind, digest::Sha256Digest};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, expect_status, problem, seed::seed_version};

backend_tests!(
    owners_publish_for_their_packages_and_admins_for_any,
    updates_need_a_newer_modified_and_withdrawals_are_served,
    invalid_advisories_are_refused_at_their_paths,
    advisories_are_listed_served_and_exported,
    an_audit_answers_the_affected_pins_only,
);

const HEX: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An advisory naming `packages` (`tool/web-fetch`), every version from
/// `introduced` until `fixed`.
fn advisory(id: Option<&str>, modified: &str, packages: &[&str], severity: &str) -> Value {
    let affected: Vec<Value> = packages
        .iter()
        .map(|p| {
            json!({
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "2.0.0"}]}],
                "database_specific": {"package": p},
            })
        })
        .collect();
    let mut doc = json!({
        "modified": modified,
        "published": "2026-01-01T00:00:00Z",
        "summary": "Fetches follow redirects to file:// URLs",
        "details": "A redirect could make the tool read local files.",
        "affected": affected,
        "references": [{"type": "ADVISORY", "url": "https://example.com/advisory"}],
        "database_specific": {"severity": severity},
    });
    if let Some(id) = id {
        doc["id"] = json!(id);
    }
    doc
}

async fn post(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.request(reqwest::Method::POST, "/api/v1/advisories")
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn post_ok(app: &TestApp, token: &str, body: &Value, status: StatusCode) -> Value {
    expect_status(post(app, token, body).await, status)
        .await
        .json()
        .await
        .unwrap()
}

/// The problem's `(field, message)`s.
fn fields(problem: &Value) -> Vec<(String, String)> {
    problem["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    (
                        e["field"].as_str().unwrap_or_default().to_owned(),
                        e["message"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn owners_publish_for_their_packages_and_admins_for_any(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["root"]).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["yank"]).await;
    app.account_with_token("bob", &["yank"]).await;
    let root = app.account_with_token("root", &["admin"]).await;
    let alice_publish = app.token("alice", &["publish"]).await;
    seed_version(&app, Kind::Tool, "web-fetch", "1.0.0", "alice")
        .await
        .unwrap();
    seed_version(&app, Kind::Tool, "shell", "1.0.0", "bob")
        .await
        .unwrap();

    // Alice, an owner, publishes for her package: the registry assigns the
    // id, and the log entry names the SHA-256 of the bytes served.
    let res = post(
        &app,
        &alice,
        &advisory(None, "2026-02-01T00:00:00Z", &["tool/web_fetch"], "high"),
    )
    .await;
    let res = expect_status(res, StatusCode::CREATED).await;
    let location = res.headers()[header::LOCATION].to_str().unwrap().to_owned();
    let written: Value = res.json().await.unwrap();
    let id = written["id"].as_str().unwrap().to_owned();
    assert!(
        id.starts_with("x_AGENTLANG-") && id.ends_with("-0001"),
        "{written}"
    );
    assert_eq!(location, format!("/api/v1/advisories/{id}"));
    let served = expect_status(app.get(&location).await, StatusCode::OK).await;
    assert_eq!(served.headers()[header::CONTENT_TYPE], "application/json");
    let etag = served.headers()[header::ETAG].to_str().unwrap().to_owned();
    let bytes = served.bytes().await.unwrap();
    let sha256 = Sha256Digest::of(&bytes).to_hex();
    assert_eq!(written["sha256"], sha256.as_str());
    assert_eq!(etag, format!("\"{sha256}\""));
    let document: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(document["id"], id.as_str());
    assert_eq!(document["schema_version"], "1.7.5");
    let entries = app.log_entries().await;
    let index = usize::try_from(written["log"]["index"].as_i64().unwrap()).unwrap();
    let entry = &entries[index];
    assert_eq!(entry["op"], "advisory", "{entry}");
    assert_eq!(entry["advisory"], id.as_str());
    assert_eq!(entry["modified"], "2026-02-01T00:00:00Z");
    assert_eq!(entry["sha256"], sha256.as_str());
    assert_eq!(entry["account"], "alice");

    // Not for a package she does not own, alone or beside her own.
    for packages in [&["tool/shell"][..], &["tool/web-fetch", "tool/shell"]] {
        let res = post(
            &app,
            &alice,
            &advisory(None, "2026-02-01T00:00:00Z", packages, "low"),
        )
        .await;
        problem(res, StatusCode::FORBIDDEN, "not-owner").await;
    }
    // Not with a token for other work.
    let res = post(
        &app,
        &alice_publish,
        &advisory(None, "2026-02-01T00:00:00Z", &["tool/web-fetch"], "low"),
    )
    .await;
    problem(res, StatusCode::FORBIDDEN, "missing-scope").await;
    // Nor anonymously.
    let res = app
        .post_json(
            "/api/v1/advisories",
            &advisory(None, "2026-02-01T00:00:00Z", &["tool/web-fetch"], "low"),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // An admin, for any package: the next number of the series.
    let written = post_ok(
        &app,
        &root,
        &advisory(
            None,
            "2026-02-01T00:00:00Z",
            &["tool/shell", "tool/web-fetch"],
            "critical",
        ),
        StatusCode::CREATED,
    )
    .await;
    assert!(
        written["id"].as_str().unwrap().ends_with("-0002"),
        "{written}"
    );

    // A package nobody published is named at its path.
    let res = post(
        &app,
        &root,
        &advisory(
            None,
            "2026-02-01T00:00:00Z",
            &["tool/web-fetch", "skill/nothing"],
            "low",
        ),
    )
    .await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(
        fields(&body)[0].0,
        "affected[1].database_specific.package",
        "{body}"
    );

    // The registry's series is its own: a number it did not assign is
    // refused, the placeholder asks for one.
    let res = post(
        &app,
        &alice,
        &advisory(
            Some("x_AGENTLANG-2026-9999"),
            "2026-02-01T00:00:00Z",
            &["tool/web-fetch"],
            "low",
        ),
    )
    .await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    assert_eq!(fields(&body)[0].0, "id");
    let written = post_ok(
        &app,
        &alice,
        &advisory(
            Some("x_AGENTLANG-NEW"),
            "2026-02-01T00:00:00Z",
            &["tool/web-fetch"],
            "low",
        ),
        StatusCode::CREATED,
    )
    .await;
    assert!(
        written["id"].as_str().unwrap().ends_with("-0003"),
        "{written}"
    );
}

async fn updates_need_a_newer_modified_and_withdrawals_are_served(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["yank"]).await;
    let bob = app.account_with_token("bob", &["yank"]).await;
    seed_version(&app, Kind::Tool, "web-fetch", "1.0.0", "alice")
        .await
        .unwrap();
    seed_version(&app, Kind::Tool, "shell", "1.0.0", "bob")
        .await
        .unwrap();
    let id = "x_ACME-17";
    let first = advisory(
        Some(id),
        "2026-02-01T00:00:00Z",
        &["tool/web-fetch"],
        "moderate",
    );
    let written = post_ok(&app, &alice, &first, StatusCode::CREATED).await;
    assert_eq!(written["id"], id);

    // The same `modified`, or an older one, is not an update.
    for modified in ["2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z"] {
        let mut again = first.clone();
        again["summary"] = json!("changed");
        again["modified"] = json!(modified);
        problem(
            post(&app, &alice, &again).await,
            StatusCode::CONFLICT,
            "conflict",
        )
        .await;
    }
    // Bob owns none of what the stored advisory names: he cannot take its
    // id over for his own package.
    let takeover = advisory(Some(id), "2026-03-01T00:00:00Z", &["tool/shell"], "low");
    problem(
        post(&app, &bob, &takeover).await,
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;

    // A newer one replaces it: 200, a new log entry.
    let mut newer = first.clone();
    newer["modified"] = json!("2026-02-02T00:00:00.5Z");
    newer["summary"] = json!("Fetches follow redirects to file:// and data: URLs");
    let updated = post_ok(&app, &alice, &newer, StatusCode::OK).await;
    assert!(updated["log"]["index"].as_i64() > written["log"]["index"].as_i64());
    let served: Value = app
        .get(&format!("/api/v1/advisories/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(served["summary"], newer["summary"]);

    // Withdrawn: still served, saying so; no longer in audits.
    let mut withdrawn = newer.clone();
    withdrawn["modified"] = json!("2026-02-03T00:00:00Z");
    withdrawn["withdrawn"] = json!("2026-02-03T00:00:00Z");
    let answer = post_ok(&app, &alice, &withdrawn, StatusCode::OK).await;
    assert_eq!(answer["withdrawn"], "2026-02-03T00:00:00Z");
    let served: Value = app
        .get(&format!("/api/v1/advisories/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(served["withdrawn"], "2026-02-03T00:00:00Z");
    let audit = audit(&app, &lock(&[("web-fetch", "1.0.0")], &[])).await;
    assert_eq!(audit["advisories"], json!([]), "{audit}");
    let entries = app.log_entries().await;
    let advisory_entries: Vec<&Value> = entries.iter().filter(|e| e["op"] == "advisory").collect();
    assert_eq!(advisory_entries.len(), 3);
    assert_eq!(advisory_entries[2]["modified"], "2026-02-03T00:00:00Z");
}

async fn invalid_advisories_are_refused_at_their_paths(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["yank"]).await;
    seed_version(&app, Kind::Tool, "web-fetch", "1.0.0", "alice")
        .await
        .unwrap();
    let base = advisory(None, "2026-02-01T00:00:00Z", &["tool/web-fetch"], "high");
    let cases: Vec<(Value, &str)> = vec![
        // Not SemVer.
        (
            json!([{"introduced": "0"}, {"fixed": "1.0"}]),
            "affected[0].ranges[0].events[1].fixed",
        ),
        // A misspelt event: the schema's oneOf, told as one problem.
        (
            json!([{"introduced": "0"}, {"fixd": "1.0.0"}]),
            "affected[0].ranges[0].events[1]",
        ),
        // No introduced event.
        (json!([{"fixed": "1.0.0"}]), "affected[0].ranges[0].events"),
    ];
    for (events, path) in cases {
        let mut doc = base.clone();
        doc["affected"][0]["ranges"][0]["events"] = events;
        let body = problem(
            post(&app, &alice, &doc).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert!(
            fields(&body).iter().any(|(f, _)| f == path),
            "{path}: {body}"
        );
    }
    let mut git = base.clone();
    git["affected"][0]["ranges"][0]["type"] = json!("ECOSYSTEM");
    let mut package = base.clone();
    package["affected"][0]["package"] = json!({"ecosystem": "AgentLang", "name": "tool/web-fetch"});
    let mut unrated = base.clone();
    unrated["database_specific"] = json!({});
    let mut local_time = base.clone();
    local_time["modified"] = json!("2026-02-01T00:00:00+02:00");
    let mut cve = base.clone();
    cve["id"] = json!("CVE-2026-1234");
    let mut too_many = base.clone();
    too_many["affected"] = json!(vec![base["affected"][0].clone(); 65]);
    for (doc, path) in [
        (git, "affected[0].ranges[0].type"),
        (package, "affected[0].package"),
        (unrated, "database_specific.severity"),
        (local_time, "modified"),
        (cve, "id"),
        (too_many, "affected"),
    ] {
        let body = problem(
            post(&app, &alice, &doc).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
        assert!(
            fields(&body).iter().any(|(f, _)| f == path),
            "{path}: {body}"
        );
    }
    // Past 64 KiB: 413 before anything is read.
    let mut large = base.clone();
    large["details"] = json!("x".repeat(70 * 1024));
    problem(
        post(&app, &alice, &large).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    // Nothing was written.
    let list: Value = app.get("/api/v1/advisories").await.json().await.unwrap();
    assert_eq!(list["advisories"], json!([]));
}

async fn advisories_are_listed_served_and_exported(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["yank"]).await;
    for name in ["web-fetch", "pdf-reader"] {
        seed_version(&app, Kind::Tool, name, "1.0.0", "alice")
            .await
            .unwrap();
    }
    let mut ids = Vec::new();
    for (i, package) in ["tool/web-fetch", "tool/pdf-reader", "tool/web-fetch"]
        .into_iter()
        .enumerate()
    {
        let doc = advisory(
            Some(&format!("x_ACME-{i}")),
            "2026-02-01T00:00:00Z",
            &[package],
            "low",
        );
        post_ok(&app, &alice, &doc, StatusCode::CREATED).await;
        ids.push(format!("x_ACME-{i}"));
    }

    // Pages in id order, each naming the next.
    let first: Value = app
        .get("/api/v1/advisories?limit=2")
        .await
        .json()
        .await
        .unwrap();
    let listed = |page: &Value| -> Vec<String> {
        page["advisories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(listed(&first), ids[..2]);
    let next = first["next"].as_str().unwrap();
    let second: Value = app
        .get(&format!("/api/v1/advisories?limit=2&after={next}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed(&second), ids[2..]);
    assert!(second.get("next").is_none(), "{second}");
    // By package, in any spelling of its name.
    let res = app.get("/api/v1/advisories?package=tool/Web_Fetch").await;
    let etag = res.headers()[header::ETAG].to_str().unwrap().to_owned();
    let by_package: Value = res.json().await.unwrap();
    assert_eq!(listed(&by_package), ["x_ACME-0", "x_ACME-2"]);
    let res = app
        .request(
            reqwest::Method::GET,
            "/api/v1/advisories?package=tool/Web_Fetch",
        )
        .header(header::IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    for bad in ["package=web-fetch", "limit=0", "limit=51", "after=GHSA-1"] {
        problem(
            app.get(&format!("/api/v1/advisories?{bad}")).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation-failed",
        )
        .await;
    }
    problem(
        app.get("/api/v1/advisories/x_NOPE-1").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;

    // The export: a zip of `<id>.json` files, the documents as served.
    let res = expect_status(app.get("/api/v1/advisories/all.zip").await, StatusCode::OK).await;
    assert_eq!(res.headers()[header::CONTENT_TYPE], "application/zip");
    let etag = res.headers()[header::ETAG].to_str().unwrap().to_owned();
    let zip = res.bytes().await.unwrap();
    assert!(zip.starts_with(b"PK\x03\x04"));
    let mut served = Vec::new();
    for id in &ids {
        assert!(
            zip.windows(id.len() + 5)
                .any(|w| w == format!("{id}.json").as_bytes()),
            "{id}.json is in the archive"
        );
        let bytes = app
            .get(&format!("/api/v1/advisories/{id}"))
            .await
            .bytes()
            .await
            .unwrap();
        served.push((id.clone(), bytes.to_vec()));
    }
    let res = app
        .request(reqwest::Method::GET, "/api/v1/advisories/all.zip")
        .header(header::IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    check_with_the_osv_schema(&served);
}

/// An agent.lock pinning `tools` and `skills` (name, version).
fn lock(tools: &[(&str, &str)], skills: &[(&str, &str)]) -> String {
    let mut text = "version: \"1\"\nresolved_at: 2026-01-01T00:00:00Z\ntools:\n".to_owned();
    if tools.is_empty() {
        text = text.replace("tools:\n", "tools: {}\n");
    }
    for (name, version) in tools {
        text.push_str(&format!(
            "  {name}:\n    version: {version}\n    hash: sha256:{HEX}\n"
        ));
    }
    if !skills.is_empty() {
        text.push_str("skills:\n");
        for (name, version) in skills {
            text.push_str(&format!(
                "  {name}:\n    version: {version}\n    hash: sha256:{HEX}\n    requirement: ^{version}\n"
            ));
        }
    }
    text
}

async fn audit(app: &TestApp, lock: &str) -> Value {
    let res = app
        .request(reqwest::Method::POST, "/api/v1/audit")
        .header(header::CONTENT_TYPE, "application/yaml")
        .body(lock.to_owned())
        .send()
        .await
        .unwrap();
    expect_status(res, StatusCode::OK)
        .await
        .json()
        .await
        .unwrap()
}

fn audit_ids(answer: &Value) -> Vec<&str> {
    answer["advisories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect()
}

async fn an_audit_answers_the_affected_pins_only(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = app.account_with_token("alice", &["yank"]).await;
    for version in ["1.0.0", "1.1.0", "2.0.0-rc.1", "2.0.0"] {
        seed_version(&app, Kind::Tool, "web-fetch", version, "alice")
            .await
            .unwrap();
    }
    seed_version(&app, Kind::Skill, "pdf-tools", "0.1.0", "alice")
        .await
        .unwrap();
    seed_version(&app, Kind::Tool, "other", "1.5.0", "alice")
        .await
        .unwrap();
    // From 1.1.0 until 2.0.0: 2.0.0's pre-releases come before it.
    let mut ranged = advisory(
        Some("x_ACME-RANGE"),
        "2026-02-01T00:00:00Z",
        &["tool/web-fetch"],
        "high",
    );
    ranged["affected"][0]["ranges"][0]["events"] =
        json!([{"introduced": "1.1.0"}, {"fixed": "2.0.0"}]);
    post_ok(&app, &alice, &ranged, StatusCode::CREATED).await;
    // One listed version of a skill, and a last_affected range of another
    // tool (which the locks below pin in its unaffected version only).
    let mut skill = advisory(
        Some("x_ACME-SKILL"),
        "2026-02-01T00:00:00Z",
        &["skill/pdf-tools"],
        "low",
    );
    skill["affected"][0] =
        json!({"versions": ["0.1.0"], "database_specific": {"package": "skill/pdf-tools"}});
    post_ok(&app, &alice, &skill, StatusCode::CREATED).await;
    let mut other = advisory(
        Some("x_ACME-OTHER"),
        "2026-02-01T00:00:00Z",
        &["tool/other"],
        "critical",
    );
    other["affected"][0]["ranges"][0]["events"] =
        json!([{"introduced": "0"}, {"last_affected": "1.4.0"}]);
    post_ok(&app, &alice, &other, StatusCode::CREATED).await;

    for (version, affected) in [
        ("1.0.0", false),
        ("1.1.0", true),
        ("2.0.0-rc.1", true),
        ("2.0.0", false),
    ] {
        let answer = audit(
            &app,
            &lock(&[("web-fetch", version), ("other", "1.5.0")], &[]),
        )
        .await;
        let expected: &[&str] = if affected { &["x_ACME-RANGE"] } else { &[] };
        assert_eq!(
            audit_ids(&answer),
            expected,
            "web-fetch@{version}: {answer}"
        );
    }
    // A skill's pin, in another spelling of the tool's name too; each
    // advisory once, in id order, as served.
    let answer = audit(
        &app,
        &lock(
            &[("Web_Fetch", "1.1.0"), ("other", "1.4.0")],
            &[("pdf-tools", "0.1.0")],
        ),
    )
    .await;
    assert_eq!(
        audit_ids(&answer),
        ["x_ACME-OTHER", "x_ACME-RANGE", "x_ACME-SKILL"]
    );
    let served: Value = app
        .get("/api/v1/advisories/x_ACME-RANGE")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["advisories"][1], served);

    // Not a lock: 422; too large: 413.
    let res = app
        .request(reqwest::Method::POST, "/api/v1/audit")
        .body("tools: [")
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::UNPROCESSABLE_ENTITY, "validation-failed").await;
    let res = app
        .request(reqwest::Method::POST, "/api/v1/audit")
        .body(" ".repeat(300 * 1024))
        .send()
        .await
        .unwrap();
    problem(res, StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large").await;
}

/// `check-jsonschema` as `.ci/run` installs it
/// (`AGENTLANG_TEST_CHECK_JSONSCHEMA`); `None` (the check is skipped) without
/// it, which fails under `CI=true`.
fn check_jsonschema() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_CHECK_JSONSCHEMA").map(PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_CHECK_JSONSCHEMA is not set (.ci/run installs it)"
        );
        eprintln!(
            "skipped: set AGENTLANG_TEST_CHECK_JSONSCHEMA to a check-jsonschema to validate served advisories"
        );
    }
    found
}

/// Every served document, as served, against the vendored OSV schema,
/// validated by the schema's own tooling (formats included).
fn check_with_the_osv_schema(served: &[(String, Vec<u8>)]) {
    let Some(tool) = check_jsonschema() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = served
        .iter()
        .map(|(id, bytes)| {
            let path = dir.path().join(format!("{id}.json"));
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/schemas/osv-schema.json");
    let output = std::process::Command::new(tool)
        .arg("--schemafile")
        .arg(&schema)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "check-jsonschema refused a served advisory:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
