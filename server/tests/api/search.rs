use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use agentlang_core::Kind;

use crate::{
    publish::{agent, agent_yaml, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem, seed::seed_version},
};

backend_tests!(
    search_ranks_filters_and_paginates,
    search_input_is_taken_literally,
    the_name_weighs_most_among_few_matches_or_many,
);

async fn search(app: &TestApp, query: &str) -> Value {
    let res = app.get(&format!("/api/v1/search?{query}")).await;
    assert_eq!(res.status(), StatusCode::OK, "{query}");
    res.json().await.unwrap()
}

fn names(page: &Value) -> Vec<&str> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect()
}

async fn search_ranks_filters_and_paginates(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for (name, version) in [
        ("web_fetch", "1.0.0"),
        ("web_fetch", "1.1.0"),
        ("web_search", "1.0.0"),
    ] {
        published(&app, &alice.token, tool(&alice.key, name, version, &[])).await;
    }
    published(
        &app,
        &alice.token,
        agent(&alice.key, &agent_yaml("market-scout", "1.0.0", &[]), None),
    )
    .await;
    // The newest version is yanked: the result shows the one before.
    app.request(Method::POST, "/api/v1/tools/web_fetch/1.1.0/yank")
        .bearer_auth(&alice.token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();

    // Titles are searched: "Deep Research Helper" is the agent's title.
    let page = search(&app, "q=research").await;
    assert_eq!(names(&page), ["market-scout"]);
    let hit = &page["results"][0];
    assert_eq!(hit["kind"], "agent");
    assert_eq!(hit["version"], "1.0.0");
    assert_eq!(hit["title"], "Deep Research Helper");
    assert_eq!(hit["category"], "Research");
    assert_eq!(hit["description"], "Researches markets and papers.");
    assert_eq!(hit["downloads"], 0);

    let page = search(&app, "q=web").await;
    assert_eq!(page["total"], 2);
    let fetch = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "web_fetch")
        .unwrap();
    assert_eq!(fetch["version"], "1.0.0");
    assert_eq!(fetch["title"], Value::Null);
    // A full page cannot tell the total: it is counted.
    assert_eq!(search(&app, "q=web&per_page=1").await["total"], 2);

    // Each term a whole word, the last also as a prefix (a word still
    // being typed): "we" begins "web" only as the last term.
    assert_eq!(search(&app, "q=we").await["total"], 2);
    assert_eq!(names(&search(&app, "q=web+sea").await), ["web_search"]);
    assert_eq!(search(&app, "q=we+search").await["total"], 0);

    // Filters.
    assert_eq!(search(&app, "q=web&kind=agent").await["total"], 0);
    assert_eq!(names(&search(&app, "kind=agent").await), ["market-scout"]);
    assert_eq!(
        names(&search(&app, "category=research").await),
        ["market-scout"]
    );
    assert_eq!(search(&app, "category=Business").await["total"], 0);

    // Pagination over the empty query (every package, by name).
    let first = search(&app, "per_page=2").await;
    assert_eq!(first["total"], 3);
    assert_eq!(names(&first), ["market-scout", "web_fetch"]);
    let second = search(&app, "per_page=2&page=2").await;
    assert_eq!(names(&second), ["web_search"]);
    assert_eq!(
        (second["page"].as_u64(), second["per_page"].as_u64()),
        (Some(2), Some(2))
    );
    assert!(names(&search(&app, "per_page=2&page=3").await).is_empty());

    let body = problem(
        app.get("/api/v1/search?kind=widget&per_page=0").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"].as_array().unwrap().len(), 2, "{body}");
}

async fn search_input_is_taken_literally(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    for q in [
        "\"a\" OR b*",
        "NEAR(",
        "NEAR(web fetch)",
        "-x",
        "'",
        "web:*",
        "web & !fetch",
        "\"",
        "*",
        "((",
        "fetch\u{0}",
    ] {
        let res = app
            .request(Method::GET, "/api/v1/search")
            .query(&[("q", q)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{q:?}");
        let body: Value = res.json().await.unwrap();
        assert!(body["results"].is_array(), "{q:?}: {body}");
    }
    // Operators are words: "fetch OR nothing" needs both words (as
    // prefixes), and "nothing" matches no package.
    let res = app
        .request(Method::GET, "/api/v1/search")
        .query(&[("q", "fetch OR nothing")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap()["total"], 0);
    let res = app
        .request(Method::GET, "/api/v1/search")
        .query(&[("q", "\"fetch\"")])
        .send()
        .await
        .unwrap();
    assert_eq!(names(&res.json::<Value>().await.unwrap()), ["web_fetch"]);
}

/// SQLite ranks up to 100 matches by each row's own occurrences and more
/// by `bm25` (`dialect::sqlite_rank`), PostgreSQL by `ts_rank`: on either
/// side of that count the name weighs most, and equal ranks keep the order
/// of creation.
async fn the_name_weighs_most_among_few_matches_or_many(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.account_with_token("alice", &[]).await;
    // Every seeded package's description is "seeded".
    for n in 0..101 {
        seed_version(&app, Kind::Tool, &format!("filler{n}"), "1.0.0", "alice")
            .await
            .unwrap();
    }
    seed_version(&app, Kind::Tool, "seeded_tool", "1.0.0", "alice")
        .await
        .unwrap();
    seed_version(&app, Kind::Tool, "tool_seeded", "1.0.0", "alice")
        .await
        .unwrap();

    let many = search(&app, "q=seeded&per_page=3").await;
    assert_eq!(many["total"], 103);
    assert_eq!(names(&many), ["seeded_tool", "tool_seeded", "filler0"]);

    let few = search(&app, "q=seeded+tool").await;
    assert_eq!(few["total"], 2);
    assert_eq!(names(&few), ["seeded_tool", "tool_seeded"]);
    // filler1, filler10 to filler19 and filler100: one rank, created in
    // that order.
    let fillers = search(&app, "q=seeded+filler1").await;
    assert_eq!(fillers["total"], 12);
    let mut created: Vec<String> = std::iter::once(1)
        .chain(10..20)
        .chain([100])
        .map(|n| format!("filler{n}"))
        .collect();
    assert_eq!(names(&fillers), created);
    // With a name among them, it comes first.
    seed_version(&app, Kind::Tool, "filler1_seeded", "1.0.0", "alice")
        .await
        .unwrap();
    let fillers = search(&app, "q=seeded+filler1").await;
    created.insert(0, "filler1_seeded".to_owned());
    assert_eq!(names(&fillers), created);
}
