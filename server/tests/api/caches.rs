//! A change drops from the in-process caches only what it changed: the
//! journal the generation's triggers write says what each generation
//! changed, and a yank of one package leaves every other package's index
//! document, records, pages and resolutions cached (counted at `/metrics`),
//! while the changed package's answers show the change at once.

use std::collections::HashMap;

use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::changes::Change;

use crate::{
    publish::{Publisher, agent, agent_yaml, published, publisher, tool},
    support::{Backend, TestApp, backend_tests},
};

backend_tests!(
    each_generation_journals_what_it_changed,
    a_yank_leaves_other_packages_answers_cached,
    a_resolution_goes_when_a_tool_its_solve_rejected_changes,
    a_tool_page_shows_new_dependents_and_outlives_other_changes,
);

/// Every cache lookup counted so far: (cache, result) to count.
async fn lookups(app: &TestApp) -> HashMap<(String, String), u64> {
    let text = app.get("/metrics").await.text().await.unwrap();
    let label = |line: &str, name: &str| {
        let start = line.find(&format!("{name}=\""))? + name.len() + 2;
        let len = line[start..].find('"')?;
        Some(line[start..start + len].to_owned())
    };
    text.lines()
        .filter(|line| line.starts_with("agentlang_registry_cache_lookups_total{"))
        .map(|line| {
            let count = line.rsplit(' ').next().unwrap().parse().unwrap();
            let key = (
                label(line, "cache").unwrap(),
                label(line, "result").unwrap(),
            );
            (key, count)
        })
        .collect()
}

/// Hits and misses of `cache` between two counts.
fn counted(
    before: &HashMap<(String, String), u64>,
    after: &HashMap<(String, String), u64>,
    cache: &str,
) -> (u64, u64) {
    let of = |counts: &HashMap<(String, String), u64>, result: &str| {
        counts
            .get(&(cache.to_owned(), result.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    (
        of(after, "hit") - of(before, "hit"),
        of(after, "miss") - of(before, "miss"),
    )
}

async fn ok_json(app: &TestApp, path: &str) -> Value {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.json().await.unwrap()
}

async fn ok_text(app: &TestApp, path: &str) -> String {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.text().await.unwrap()
}

async fn resolved(app: &TestApp, tools: Value) -> Value {
    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("accept", "application/json")
        .json(&json!({ "tools": tools }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

/// Yanks (`yank`) or unyanks a tool version as its owner.
async fn set_yanked(app: &TestApp, owner: &Publisher, name: &str, version: &str, yank: bool) {
    let action = if yank { "yank" } else { "unyank" };
    let res = app
        .request(
            Method::POST,
            &format!("/api/v1/tools/{name}/{version}/{action}"),
        )
        .bearer_auth(&owner.token)
        .json(&json!({"reason": "broken"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{action} {name}@{version}");
}

fn sorted(mut changes: Vec<Change>) -> Vec<Change> {
    changes.sort_by_key(|c| format!("{c:?}"));
    changes
}

/// The rows each kind of change writes: a yank names its package; a
/// publish its package and the tools it depends on; a models write
/// everything.
async fn each_generation_journals_what_it_changed(backend: Backend) {
    let Some(app) = TestApp::builder(backend).admins(&["admin"]).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version) in [("alpha", "1.0.0"), ("beta", "1.0.0")] {
        published(&app, &alice.token, tool(&alice.key, name, version, &[])).await;
    }
    let db = &app.store().db;
    let generation = || async { db.registry_generation().await.unwrap() };

    let before = generation().await;
    set_yanked(&app, &alice, "alpha", "1.0.0", true).await;
    let yanked = generation().await;
    assert_eq!(
        db.changes_between(before, yanked).await.unwrap(),
        [Change::Package(Kind::Tool, "alpha".to_owned())]
    );

    published(
        &app,
        &alice.token,
        tool(&alice.key, "Gamma-Tool", "1.0.0", &[("Beta", "^1")]),
    )
    .await;
    let gamma = generation().await;
    assert_eq!(
        sorted(db.changes_between(yanked, gamma).await.unwrap()),
        [
            Change::Dependents(Kind::Tool, "beta".to_owned()),
            Change::Package(Kind::Tool, "gamma_tool".to_owned()),
        ]
    );

    let admin = app.account_with_token("admin", &["admin"]).await;
    let res = app
        .request(Method::PUT, "/api/v1/models/local-llm")
        .bearer_auth(&admin)
        .json(&json!({"context_window": 32000, "supports_tools": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let models = generation().await;
    assert_eq!(
        db.changes_between(gamma, models).await.unwrap(),
        [Change::Everything]
    );
    // Nothing changed since: nothing to drop.
    assert!(db.changes_between(models, models).await.unwrap().is_empty());
}

/// After a yank of alpha, beta's index document, records and resolution
/// are answered from memory, and alpha's are computed again and show the
/// yank.
async fn a_yank_leaves_other_packages_answers_cached(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version) in [("alpha", "1.0.0"), ("alpha", "1.1.0"), ("beta", "1.0.0")] {
        published(&app, &alice.token, tool(&alice.key, name, version, &[])).await;
    }
    let beta_paths = [
        "/api/v1/index/tools/beta",
        "/api/v1/tools/beta/1.0.0",
        "/api/v1/tools/beta",
    ];
    for path in beta_paths
        .iter()
        .chain(&["/api/v1/index/tools/alpha", "/api/v1/tools/alpha/1.1.0"])
    {
        ok_json(&app, path).await;
    }
    assert_eq!(
        resolved(&app, json!({"alpha": "^1"})).await["tools"]["alpha"]["version"],
        "1.1.0"
    );
    resolved(&app, json!({"beta": "^1"})).await;

    set_yanked(&app, &alice, "alpha", "1.1.0", true).await;

    let before = lookups(&app).await;
    for path in beta_paths {
        ok_json(&app, path).await;
    }
    resolved(&app, json!({"beta": "^1"})).await;
    let after = lookups(&app).await;
    for cache in [
        "index_documents",
        "version_records",
        "package_records",
        "resolutions",
    ] {
        assert_eq!(counted(&before, &after, cache), (1, 0), "{cache}");
    }

    // alpha's answers are computed again, and show the yank.
    let index = ok_json(&app, "/api/v1/index/tools/alpha").await;
    let yanked: Vec<bool> = index["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["yanked"].as_bool().unwrap())
        .collect();
    assert_eq!(yanked, [false, true], "{index}");
    let record = ok_json(&app, "/api/v1/tools/alpha/1.1.0").await;
    assert_eq!(record["yanked"], true);
    assert_eq!(
        resolved(&app, json!({"alpha": "^1"})).await["tools"]["alpha"]["version"],
        "1.0.0"
    );
    let last = lookups(&app).await;
    for cache in ["index_documents", "version_records", "resolutions"] {
        assert_eq!(counted(&after, &last, cache), (0, 1), "{cache}");
    }
}

/// A resolution depends on every tool its solve looked up, not only those
/// in the answer: gamma 2.0.0 needs delta ^2, whose one version is yanked,
/// so gamma resolves to 1.0.0 without delta; unyanking delta must drop
/// that resolution.
async fn a_resolution_goes_when_a_tool_its_solve_rejected_changes(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version, deps) in [
        ("delta", "2.0.0", &[][..]),
        ("gamma", "1.0.0", &[][..]),
        ("gamma", "2.0.0", &[("delta", "^2")][..]),
    ] {
        published(&app, &alice.token, tool(&alice.key, name, version, deps)).await;
    }
    set_yanked(&app, &alice, "delta", "2.0.0", true).await;
    let lock = resolved(&app, json!({"gamma": null})).await;
    assert_eq!(lock["tools"]["gamma"]["version"], "1.0.0", "{lock}");
    assert!(lock["tools"].get("delta").is_none(), "{lock}");

    set_yanked(&app, &alice, "delta", "2.0.0", false).await;
    let lock = resolved(&app, json!({"gamma": null})).await;
    assert_eq!(lock["tools"]["gamma"]["version"], "2.0.0", "{lock}");
    assert_eq!(lock["tools"]["delta"]["version"], "2.0.0", "{lock}");
}

/// A tool's page lists what depends on it: a publish that depends on the
/// tool (by a dependency or an agent's lock) shows on it at once, while a
/// yank of another package leaves it cached.
async fn a_tool_page_shows_new_dependents_and_outlives_other_changes(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version) in [("alpha", "1.0.0"), ("beta", "1.0.0")] {
        published(&app, &alice.token, tool(&alice.key, name, version, &[])).await;
    }
    let page = ok_text(&app, "/tools/beta").await;
    assert!(!page.contains("epsilon") && !page.contains("helper"));

    set_yanked(&app, &alice, "alpha", "1.0.0", true).await;
    let before = lookups(&app).await;
    ok_text(&app, "/tools/beta").await;
    let after = lookups(&app).await;
    assert_eq!(counted(&before, &after, "package_pages"), (1, 0));

    published(
        &app,
        &alice.token,
        tool(&alice.key, "epsilon", "1.0.0", &[("beta", "^1")]),
    )
    .await;
    assert!(ok_text(&app, "/tools/beta").await.contains("epsilon"));

    // An agent pinning beta in its lock (as `agentlang lock` writes it).
    let yaml = agent_yaml("helper", "1.0.0", &[("beta", "^1")]);
    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("content-type", "application/yaml")
        .body(yaml.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let lock = res.text().await.unwrap();
    published(&app, &alice.token, agent(&alice.key, &yaml, Some(&lock))).await;
    assert!(ok_text(&app, "/tools/beta").await.contains("helper"));
}
