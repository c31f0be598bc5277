//! What an agent can do, as the registry shows it: the version record's
//! `trust`, the risk in search results, the agent page's plain-language
//! sections, the tool page's capabilities, the diff page's trust changes,
//! and the start-up backfill that computes trust for versions stored
//! without it.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, TestApp, backend_tests, seed};

backend_tests!(
    version_records_carry_what_the_agent_can_do,
    search_results_show_the_effective_risk,
    pages_show_commands_undeclared_capabilities_and_trust_changes,
    the_backfill_computes_trust_for_versions_stored_without_it,
);

async fn seeded(backend: Backend) -> Option<TestApp> {
    let app = TestApp::builder(backend).build().await?;
    seed::seed_catalog(&app).await;
    seed::seed_stripe_ops(&app).await;
    Some(app)
}

async fn json_of(app: &TestApp, path: &str) -> Value {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    res.json().await.unwrap()
}

/// The record's `trust`, its signer (a fresh key per run) replaced and
/// its objects' keys sorted (PostgreSQL's JSONB keeps its own order of a
/// props schema's keys).
async fn trust_of(app: &TestApp, path: &str) -> Value {
    fn sorted(v: Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let mut trust = json_of(app, path).await["trust"].take();
    assert!(trust["signer"].is_string(), "{trust}");
    trust["signer"] = json!("[key id]");
    sorted(trust)
}

async fn version_records_carry_what_the_agent_can_do(backend: Backend) {
    let Some(app) = seeded(backend).await else {
        return;
    };
    let stripe = trust_of(&app, "/api/v1/agents/stripe-ops/1.0.0").await;
    insta::assert_json_snapshot!("trust_stripe_ops", stripe);
    let research = trust_of(&app, "/api/v1/agents/research-assistant/1.0.0").await;
    insta::assert_json_snapshot!("trust_research_assistant", research);

    // Never an environment value, only names.
    assert!(!stripe.to_string().contains("{{.env"), "{stripe}");
    // Tools carry no trust; package listings leave it out.
    let tool = json_of(&app, "/api/v1/tools/web_fetch/1.0.3").await;
    assert!(tool.get("trust").is_none(), "{tool}");
    let package = json_of(&app, "/api/v1/agents/stripe-ops").await;
    assert!(package["versions"][0].get("trust").is_none());
}

async fn search_results_show_the_effective_risk(backend: Backend) {
    let Some(app) = seeded(backend).await else {
        return;
    };
    let page = json_of(&app, "/api/v1/search?q=stripe").await;
    let result = &page["results"][0];
    assert_eq!(result["name"], "stripe-ops");
    // It declares only network (Low); its OAuth token makes it Critical.
    assert_eq!(result["risk"], "critical", "{page}");
    let page = json_of(&app, "/api/v1/search?q=web_fetch&kind=tool").await;
    assert_eq!(page["results"][0]["risk"], Value::Null, "{page}");

    let res = app.get("/search?q=stripe").await;
    let html = res.text().await.unwrap();
    assert!(
        html.contains(r#"<span class="risk risk-critical" title="Highest risk of what it can do">Critical risk</span>"#),
        "{html}"
    );
}

async fn pages_show_commands_undeclared_capabilities_and_trust_changes(backend: Backend) {
    let Some(app) = seeded(backend).await else {
        return;
    };
    let html = app.get("/agents/stripe-ops").await.text().await.unwrap();
    for expected in [
        r#"<li><span class="risk risk-critical">Critical</span> <strong>HTTP tool post_report</strong>: Sends POST requests to <code>https://api.twitter.com/2/tweets</code> with your twitter OAuth token</li>"#,
        r#"<strong>MCP server Stripe</strong>: Runs <code>npx -y @stripe/mcp --tools=all</code> on your machine with STRIPE_SECRET_KEY</li>"#,
        r#"<strong>bash tool export_csv</strong>: May install csvkit with <code>pip install csvkit</code> on Linux</li>"#,
        r#"<strong>sandbox</strong>: May read and write files under <code>./reports</code></li>"#,
        r#"<strong>sandbox</strong>: May call <code>https://api.stripe.com</code></li>"#,
        r#"<th scope="row"><code>shell</code> <span class="badge">undeclared</span></th>"#,
        "<td>bash tool export_csv, MCP server Stripe</td>",
        r#"<th scope="row"><code>oauth</code> <span class="badge">undeclared</span></th>"#,
        "<strong>Highest permission risk: Critical</strong>",
        r#"the agent calls <code class="render-tool">render_revenue_card</code> with <code>month</code>, <code>total</code>"#,
        r#"<code class="render-tool">render_status_banner</code> <span class="muted">(no props declared)</span>"#,
        "<li><code>explain</code> asks the agent</li>",
    ] {
        assert!(html.contains(expected), "missing {expected:?}");
    }
    // The MCP server's statement comes after the Critical one.
    let critical = html.find("HTTP tool post_report").unwrap();
    let mcp = html.find("MCP server Stripe</strong>").unwrap();
    assert!(critical < mcp);

    let html = app
        .get("/tools/web_fetch/1.0.3")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(r#"<li><code>network</code> <span class="small-text">(Network)</span> <span class="risk risk-low">Low</span></li>"#),
        "{html}"
    );

    // 1.1.0 adds the Critical wallet: a change that raises risk, though the
    // highest risk was Critical already (its OAuth token).
    let html = app
        .get("/agents/research-assistant/diff?from=1.0.0&to=1.1.0")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("<strong>1 change gives 1.1.0 powers 1.0.0 did not have.</strong>"),
        "{html}"
    );
    assert!(
        html.contains(r#"<td>+ capability <strong class="badge badge-risk-up">Risk rises</strong></td><th scope="row"><code>wallet</code></th><td><span class="risk risk-critical">Critical</span></td>"#),
        "{html}"
    );
    assert!(!html.contains(r#"id="risk-rises""#), "{html}");
}

async fn the_backfill_computes_trust_for_versions_stored_without_it(backend: Backend) {
    let Some(app) = seeded(backend).await else {
        return;
    };
    let before = json_of(&app, "/api/v1/agents/stripe-ops/1.0.0").await["trust"].take();
    let pending = app.store().db.versions_without_extras(10).await.unwrap();
    assert!(pending.is_empty(), "seeded versions all have extras");
    // As migration 0021 leaves agent versions: extras forgotten.
    forget_extras(&app).await;
    let gone = json_of(&app, "/api/v1/agents/stripe-ops/1.0.0").await;
    assert!(gone.get("trust").is_none(), "{gone}");

    app::packages::backfill_extras(app.state().registry.clone()).await;
    let after = json_of(&app, "/api/v1/agents/stripe-ops/1.0.0").await["trust"].take();
    assert_eq!(after, before);
    let page = json_of(&app, "/api/v1/search?q=stripe").await;
    assert_eq!(page["results"][0]["risk"], "critical");
}

/// What migration 0021 does to every agent version.
async fn forget_extras(app: &TestApp) {
    use store::Db;
    const SQL: &str = "UPDATE versions SET extras = NULL, max_risk = NULL
         WHERE package_id IN (SELECT id FROM packages WHERE kind = 'agent')";
    match &app.store().db {
        Db::Sqlite { pool, .. } => sqlx::query(SQL).execute(pool).await.map(drop),
        Db::Postgres(pools) => sqlx::query(SQL).execute(pools.current()).await.map(drop),
    }
    .unwrap();
}
