use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{agent, agent_yaml, published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    search_ranks_filters_and_paginates,
    search_input_is_taken_literally,
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
