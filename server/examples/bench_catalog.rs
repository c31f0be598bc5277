//! Render time of the catalog's agent page, for the scale-out benchmark.
//!
//! Spawns a registry on port 0 (SQLite + files in a temporary folder),
//! seeds it with the research-assistant fixture (two versions, two tools,
//! real signed containers), then measures:
//! - build + render: `catalog::packages::agent_page` (database reads, the
//!   container extras from the in-process cache) and askama rendering;
//! - render only: the askama template of a built page;
//! - HTTP: sequential `GET /agents/research-assistant` over loopback.
//!
//! Run: `cargo run --release -p agentlang-registry --example bench_catalog [iterations]`

#[path = "../tests/browser/seed.rs"]
mod seed;

use std::time::{Duration, Instant};

use agentlang_registry::{
    catalog::{packages::agent_page, session::MaybeSession},
    config::{Config, RateLimitSettings, RegistrationMode},
    startup::Application,
};
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
    let dir = tempfile::tempdir()?;
    let limit = std::num::NonZeroU32::new(10_000_000).unwrap();
    let config = Config {
        bind: "127.0.0.1:0".into(),
        data_dir: dir.path().join("data"),
        jwt_secret: Some("bench-secret-bench-secret-bench-secret".into()),
        workers: Some(1),
        rate_limits: RateLimitSettings {
            enabled: false,
            ..RateLimitSettings::all_at(limit)
        },
        registration: RegistrationMode::Open,
        ..Config::default()
    };
    let app = Application::build(config).await?;
    let url = format!("http://{}", app.address());
    let state = app.state();
    let handle = app.handle();
    actix_web::rt::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();
    seed::seed_catalog(&state, &url, &client).await;
    let anonymous = MaybeSession(None);

    // Warm up: the container extras are read once and cached.
    let page = agent_page(&state, &anonymous, seed::AGENT, None).await?;
    let bytes = page.render()?.len();
    println!("agent page: {bytes} bytes of HTML");

    let mut built = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let page = agent_page(&state, &anonymous, seed::AGENT, None).await?;
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
    handle.stop(true).await;
    Ok(())
}
