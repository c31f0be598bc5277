//! Render time of the catalog's agent page, for the scale-out benchmark.
//!
//! Starts a registry with the tests' harness (in-process on port 0, SQLite +
//! files in a temporary folder, no rate limits),
//! seeds it with the research-assistant fixture (two versions, two tools,
//! real signed containers), then measures:
//! - build + render: `catalog::packages::agent_page` (database reads, the
//!   container extras from the in-process cache) and askama rendering;
//! - render only: the askama template of a built page;
//! - HTTP: sequential `GET /agents/research-assistant` over loopback.
//!
//! Run: `cargo run --release -p agentlang-registry-testing --example bench_catalog [iterations]`

use std::time::{Duration, Instant};

use agentlang_registry::catalog::{packages::agent_page, session::MaybeSession};
use agentlang_registry_testing::{Backend, TestApp, seed};
use agentlang_web::Template;

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let n = samples.len();
    let mean = samples.iter().sum::<Duration>() / n as u32;
    let pct = |p: f64| samples[((n as f64 * p) as usize).min(n - 1)];
    println!(
        "{what:<16} n={n:<6} mean={:>8.1} µs  p50={:>8.1} µs  p99={:>8.1} µs  ({:.0}/s sequential)",
        mean.as_secs_f64() * 1e6,
        pct(0.50).as_secs_f64() * 1e6,
        pct(0.99).as_secs_f64() * 1e6,
        1.0 / mean.as_secs_f64(),
    );
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let iterations: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(2000);
    let app = TestApp::builder(Backend::Sqlite)
        .rate_limits_off()
        .build()
        .await
        .expect("SQLite is always there");
    let (url, state, client) = (&app.url, app.state(), &app.client);
    seed::seed_catalog(&app).await;
    let anonymous = MaybeSession(None);

    // Warm up: the container extras are read once and cached.
    let page = agent_page(state, &anonymous, seed::AGENT, None).await?;
    let bytes = page.render()?.len();
    println!("agent page: {bytes} bytes of HTML");

    let mut built = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let page = agent_page(state, &anonymous, seed::AGENT, None).await?;
        let html = page.render()?;
        built.push(start.elapsed());
        std::hint::black_box(html);
    }
    report("build + render", built);

    let mut rendered = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let html = page.render()?;
        rendered.push(start.elapsed());
        std::hint::black_box(html);
    }
    report("render only", rendered);

    let mut http = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let res = client
            .get(format!("{url}/agents/{}", seed::AGENT))
            .send()
            .await?;
        anyhow::ensure!(res.status().is_success(), "status {}", res.status());
        std::hint::black_box(res.bytes().await?);
        http.push(start.elapsed());
    }
    report("HTTP GET", http);
    Ok(())
}
