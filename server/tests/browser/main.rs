//! The web catalog in a real browser: headless Chromium driven over
//! WebDriver (`chromedriver`, started here on a free port) against a
//! registry started with the harness's `TestApp` builder (`agentlang-registry-testing`) and seeded
//! with real signed containers.
//!
//! Without `chromium` and `chromedriver` the tests print a skip line and
//! pass, except under `CI=true`, where they fail. On a failure the page is
//! saved as a screenshot under `target/browser-artifacts/`.

use agentlang_registry_testing as support;

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use support::{Backend, TestApp, seed};
use thirtyfour::prelude::*;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
const PHONE_WIDTH: u32 = 360;

fn artifacts_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser-artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}

/// Whether the browser is here; `false` means skip (never under CI).
fn browser_available() -> bool {
    let present =
        std::path::Path::new(CHROMEDRIVER).exists() && std::path::Path::new(CHROMIUM).exists();
    if !present {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)"
        );
        eprintln!(
            "skipped: browser tests need {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
        );
    }
    present
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Self {
        let port = free_port();
        let log = std::fs::File::create(artifacts_dir().join("chromedriver.log")).unwrap();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start chromedriver");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn browser(driver: &Driver, profile: &std::path::Path) -> WebDriver {
    let mut caps = DesiredCapabilities::chrome();
    caps.set_binary(CHROMIUM).unwrap();
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ] {
        caps.add_arg(arg).unwrap();
    }
    caps.add_arg(&format!("--user-data-dir={}", profile.display()))
        .unwrap();
    WebDriver::new(format!("http://127.0.0.1:{}", driver.port), caps)
        .await
        .expect("a Chromium session")
}

type Check = Result<(), String>;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Check {
    if ok { Ok(()) } else { Err(what()) }
}

fn wd<T>(r: WebDriverResult<T>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

/// The text of the first element matching `css`, waiting for it to appear:
/// a click that submits a form returns before the next page has loaded.
async fn text_of(driver: &WebDriver, css: &str) -> Result<String, String> {
    let element = driver
        .query(By::Css(css))
        .wait(Duration::from_secs(20), Duration::from_millis(100))
        .first()
        .await;
    wd(wd(element)?.text().await)
}

/// Saves a screenshot named after the failed check, then fails the test.
async fn finish<T>(driver: &WebDriver, name: &str, result: Result<T, String>) -> T {
    match result {
        Ok(value) => value,
        Err(message) => {
            let shot = artifacts_dir().join(format!("{name}.png"));
            let saved = driver.screenshot(&shot).await.is_ok();
            let url = driver
                .current_url()
                .await
                .map(|u| u.to_string())
                .unwrap_or_default();
            panic!(
                "{name} failed at {url}: {message}{}",
                if saved {
                    format!(" (screenshot: {})", shot.display())
                } else {
                    String::new()
                }
            );
        }
    }
}

/// The page's width fits the viewport: no horizontal scrolling.
async fn no_horizontal_overflow(driver: &WebDriver) -> Check {
    let widths = wd(driver
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            Vec::new(),
        )
        .await)?;
    let [scroll, inner]: [u64; 2] = wd(widths.convert())?;
    ensure(scroll <= inner, || {
        format!("horizontal overflow: scrollWidth {scroll} > innerWidth {inner}")
    })
}

/// Waits for a navigation started by a click to arrive at `path`: a click
/// returns before the browser has followed the form post and its redirect
/// (and password hashing takes a while in a debug build).
async fn wait_for_path(driver: &WebDriver, path: &str) -> Check {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let url = wd(driver.current_url().await)?;
        if url.path() == path {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("at {url} after 30 s, not {path}"));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn sign_in(driver: &WebDriver, base: &str) -> Check {
    wd(driver.goto(format!("{base}/login")).await)?;
    wd(wd(driver.find(By::Id("login-username")).await)?
        .send_keys(seed::PUBLISHER)
        .await)?;
    wd(wd(driver.find(By::Id("login-password")).await)?
        .send_keys(seed::PASSWORD)
        .await)?;
    wd(wd(driver
        .find(By::Css("form.stacked-form button[type=submit]"))
        .await)?
    .click()
    .await)?;
    wait_for_path(driver, "/account")
        .await
        .map_err(|e| format!("signing in: {e}"))
}

async fn search_and_agent_page(driver: &WebDriver, base: &str, seeded: &seed::Seeded) -> Check {
    wd(driver.goto(format!("{base}/")).await)?;
    let search = wd(driver.find(By::Id("home-search")).await)?;
    wd(search.send_keys("research").await)?;
    wd(wd(driver
        .find(By::Css("form.big-search button[type=submit]"))
        .await)?
    .click()
    .await)?;
    let heading = text_of(driver, "#results-heading").await?;
    ensure(heading.starts_with("1 result"), || {
        format!("results heading {heading:?}")
    })?;
    let mark = text_of(driver, ".results mark").await?;
    ensure(mark.eq_ignore_ascii_case("research"), || {
        format!("highlight {mark:?}")
    })?;
    wd(
        wd(driver.find(By::Css(".results .package-item-title a")).await)?
            .click()
            .await,
    )?;

    wait_for_path(driver, "/agents/research-assistant").await?;
    let title = wd(driver.title().await)?;
    ensure(title.contains("Research Assistant 1.1.0"), || {
        format!("title {title:?}")
    })?;
    // Tools with the versions the lock pins, linked to those versions.
    let tool_link = wd(driver
        .find(By::Css("a[href='/tools/web_search/1.2.0']"))
        .await)?;
    ensure(
        wd(tool_link.text().await)?.contains("1.2.0")
            || wd(tool_link.text().await)?.contains("web_search"),
        || "web_search link".into(),
    )?;
    let tools = text_of(driver, "section[aria-labelledby=tools-heading] table").await?;
    ensure(
        tools.contains("web_fetch") && tools.contains("1.0.3"),
        || format!("tools table {tools:?}"),
    )?;
    // Permissions with their risk.
    let required = text_of(driver, "#required-permissions + .table-scroll").await?;
    ensure(
        required.contains("camera") && required.contains("High"),
        || format!("required {required:?}"),
    )?;
    let optional = text_of(driver, "#optional-permissions + .table-scroll").await?;
    ensure(
        optional.contains("wallet") && optional.contains("Critical"),
        || format!("optional {optional:?}"),
    )?;
    // The signer: key id linked to its page, held by the publisher.
    let signer = wd(driver
        .find(By::Css(format!("a[href='/keys/{}']", seeded.key_id)))
        .await)?;
    ensure(
        wd(signer.text().await)?.contains(&seeded.key_id[..12]),
        || "signer link text".into(),
    )?;
    let source = wd(driver.source().await)?;
    ensure(source.contains("/publishers/alice"), || {
        "publisher link".into()
    })?;
    // What it can do, in plain words: the MCP server's command line, and
    // the shell it needs without asking for it.
    let can_do = text_of(driver, "ul.can-do").await?;
    ensure(
        can_do
            .contains("Runs npx -y @stripe/mcp --tools=all on your machine with STRIPE_SECRET_KEY"),
        || format!("what it can do {can_do:?}"),
    )?;
    let undeclared = text_of(driver, "#undeclared-permissions ~ .table-scroll").await?;
    ensure(
        undeclared.contains("shell") && undeclared.contains("MCP server Stripe"),
        || format!("undeclared {undeclared:?}"),
    )?;
    // Skills and subagents come from the container itself.
    ensure(
        source.contains("test-helper") && source.contains("academic-researcher"),
        || "skills/subagents".into(),
    )?;
    Ok(())
}

async fn diff_page(driver: &WebDriver, base: &str) -> Check {
    wd(driver
        .goto(format!(
            "{base}/agents/research-assistant/diff?from=1.0.0&to=1.1.0"
        ))
        .await)?;
    let row = text_of(driver, "tr.raises-risk").await?;
    ensure(row.contains("wallet") && row.contains("Risk rises"), || {
        format!("row {row:?}")
    })?;
    // Both versions were Critical already (an OAuth token): the page says
    // what is new rather than that the maximum rose.
    let summary = text_of(driver, "#risk-raising").await?;
    ensure(summary.contains("1 change gives 1.1.0 powers"), || {
        format!("summary {summary:?}")
    })
}

async fn token_shown_once(driver: &WebDriver, base: &str) -> Result<String, String> {
    sign_in(driver, base).await?;
    wd(wd(driver.find(By::Id("token-name")).await)?
        .send_keys("CI publish")
        .await)?;
    wd(wd(driver.find(By::Id("scope-publish")).await)?
        .click()
        .await)?;
    wd(wd(driver
        .find(By::Css(
            "form[action='/account/tokens'] button[type=submit]",
        ))
        .await)?
    .click()
    .await)?;
    let secret = text_of(driver, "#new-token-secret").await?;
    ensure(secret.split('.').count() == 3, || {
        format!("not a JWT: {secret:?}")
    })?;
    let listed = text_of(driver, "section[aria-labelledby=tokens-heading] table").await?;
    ensure(
        listed.contains("CI publish") && listed.contains("publish"),
        || format!("tokens {listed:?}"),
    )?;
    wd(driver.refresh().await)?;
    let again = wd(driver.find_all(By::Id("new-token-secret")).await)?;
    ensure(again.is_empty(), || {
        "the token is shown again after a reload".into()
    })?;
    let source = wd(driver.source().await)?;
    ensure(!source.contains(&secret), || {
        "the secret is still in the page".into()
    })?;
    Ok(secret)
}

/// An events log with two agents, a delegation, a paired call and a failed
/// one: what the replay page must show.
const REPLAY_LOG: &str = r#"{"type":"agent.delegate","timestamp":"2025-01-29T10:00:00Z","from":"orchestrator","to":"academic-researcher","task":"Find recent papers on transformer architectures"}
{"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"academic-researcher","tool":"web_search","input":{"query":"transformer architectures 2025"},"call_id":"abc123"}
{"type":"tool.result","timestamp":"2025-01-29T10:00:03Z","call_id":"abc123","output":{"results":["a","b"]},"duration_ms":2000}
{"type":"tool.call","timestamp":"2025-01-29T10:00:04Z","agent_id":"academic-researcher","tool":"web_fetch","input":{"url":"https://example.com/a-very-long-path/that/should/wrap/on/a/phone"},"call_id":"def456"}
{"type":"tool.result","timestamp":"2025-01-29T10:00:05Z","call_id":"def456","error":{"message":"404 Not Found","code":404}}
{"type":"context.compact","timestamp":"2025-01-29T10:00:06Z","agent_id":"academic-researcher","strategy":"summarize","tokens_before":90000,"tokens_after":12000}
{"type":"agent.message","timestamp":"2025-01-29T10:00:07Z","agent_id":"orchestrator","role":"assistant","content":"Based on my analysis..."}
"#;

/// Uploads the log through the form, as a visitor does, and checks the
/// timeline: lanes, the arrow, paired results with durations, the error.
async fn replay_upload(driver: &WebDriver, base: &str, file: &std::path::Path) -> Check {
    wd(driver.goto(format!("{base}/replay")).await)?;
    let input = wd(driver.find(By::Id("events-file")).await)?;
    wd(input.send_keys(file.display().to_string()).await)?;
    wd(wd(driver
        .find(By::Css("form.replay-form button[type=submit]"))
        .await)?
    .click()
    .await)?;
    let heading = text_of(driver, "#timeline-heading").await?;
    ensure(
        heading.contains("7 events, 2 agents") && heading.contains("1 with errors"),
        || format!("heading {heading:?}"),
    )?;
    let lanes: Vec<String> = {
        let mut names = Vec::new();
        for th in wd(driver.find_all(By::Css("th.lane-head")).await)? {
            names.push(wd(th.text().await)?);
        }
        names
    };
    ensure(lanes == ["orchestrator", "academic-researcher"], || {
        format!("lanes {lanes:?}")
    })?;
    // The delegation: an arrow leaving lane 1 and ending in lane 2.
    let arrow_ends = wd(driver
        .find_all(By::Css("#event-0 td.arrow-from, #event-0 td.arrow-to"))
        .await)?;
    ensure(arrow_ends.len() == 2, || {
        format!("{} arrow cells", arrow_ends.len())
    })?;
    let call = text_of(driver, "#event-1 .event").await?;
    ensure(
        call.contains("web_search") && call.contains("(2000 ms)"),
        || format!("call {call:?}"),
    )?;
    let failed = text_of(driver, "tr.is-error .tool-result").await?;
    ensure(
        failed.contains("404 Not Found") && failed.contains("(1000 ms)"),
        || format!("failed call {failed:?}"),
    )?;
    let compact = text_of(driver, ".compaction").await?;
    ensure(compact.contains("90000 → 12000 tokens"), || {
        format!("compaction {compact:?}")
    })?;
    // An error row is highlighted: its background is not the page's.
    let highlighted = wd(driver
        .execute(
            "return getComputedStyle(document.querySelector('tr.is-error')).backgroundColor;",
            Vec::new(),
        )
        .await)?;
    let color: String = wd(highlighted.convert())?;
    ensure(
        color != "rgba(0, 0, 0, 0)" && color != "rgb(255, 255, 255)",
        || format!("error row background {color}"),
    )?;
    // A file that is not an events log says why.
    let bad = file.with_file_name("not-events.json");
    std::fs::write(&bad, "[{\"type\":\"tool.call\"}]").map_err(|e| e.to_string())?;
    wd(driver.goto(format!("{base}/replay")).await)?;
    wd(wd(driver.find(By::Id("events-file")).await)?
        .send_keys(bad.display().to_string())
        .await)?;
    wd(wd(driver
        .find(By::Css("form.replay-form button[type=submit]"))
        .await)?
    .click()
    .await)?;
    let errors = text_of(driver, "#replay-errors").await?;
    ensure(errors.contains("events[0]"), || {
        format!("errors {errors:?}")
    })
}

/// At phone width the timeline is one column: each event a block labelled
/// with its agent, the arrow's middle cells hidden, nothing to scroll.
async fn replay_at_phone_width(driver: &WebDriver, base: &str, file: &std::path::Path) -> Check {
    wd(driver.goto(format!("{base}/replay")).await)?;
    wd(wd(driver.find(By::Id("events-file")).await)?
        .send_keys(file.display().to_string())
        .await)?;
    wd(wd(driver
        .find(By::Css("form.replay-form button[type=submit]"))
        .await)?
    .click()
    .await)?;
    text_of(driver, "#timeline-heading").await?;
    wd(driver
        .screenshot(&artifacts_dir().join("phone-replay.png"))
        .await)?;
    no_horizontal_overflow(driver).await?;
    let label = text_of(driver, "#event-1 .event-agent").await?;
    ensure(label == "academic-researcher", || {
        format!("the agent label is {label:?} at phone width")
    })?;
    let displayed = wd(wd(driver.find(By::Css("#event-0 td.arrow-from")).await)?
        .is_displayed()
        .await)?;
    ensure(!displayed, || {
        "the arrow's start cell shows at phone width".into()
    })
}

async fn phone_width(driver: &WebDriver, base: &str, seeded: &seed::Seeded) -> Check {
    wd(driver.set_window_rect(0, 0, PHONE_WIDTH, 800).await)?;
    let inner: u64 = wd(wd(driver
        .execute("return window.innerWidth;", Vec::new())
        .await)?
    .convert())?;
    ensure(inner <= u64::from(PHONE_WIDTH), || {
        format!("the window is {inner} px wide, not {PHONE_WIDTH}")
    })?;
    let pages = [
        "/".to_owned(),
        "/search?q=web".to_owned(),
        "/search?q=nothing-matches-this".to_owned(),
        "/agents/research-assistant".to_owned(),
        "/agents/research-assistant/1.0.0".to_owned(),
        "/agents/research-assistant/diff?from=1.0.0&to=1.1.0".to_owned(),
        "/tools/web_search".to_owned(),
        "/tools/web_fetch".to_owned(),
        "/publishers/alice".to_owned(),
        format!("/keys/{}", seeded.key_id),
        "/docs".to_owned(),
        "/log".to_owned(),
        "/replay".to_owned(),
        "/protocols/a2a".to_owned(),
        "/account".to_owned(),
        "/no/such/page".to_owned(),
    ];
    for (i, page) in pages.iter().enumerate() {
        wd(driver.goto(format!("{base}{page}")).await)?;
        let shot = artifacts_dir().join(format!("phone-{i:02}.png"));
        wd(driver.screenshot(&shot).await)?;
        no_horizontal_overflow(driver)
            .await
            .map_err(|e| format!("{page}: {e}"))?;
    }
    Ok(())
}

#[actix_web::test]
async fn the_catalog_works_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    let registry = TestApp::builder(Backend::Sqlite)
        .workers(2)
        .build()
        .await
        .unwrap();
    let client = &registry.client;
    let seeded = seed::seed_catalog(&registry).await;
    let chromedriver = Driver::start();
    let profile = tempfile::tempdir().unwrap();
    let driver = browser(&chromedriver, profile.path()).await;
    let base = registry.url.clone();

    let result = search_and_agent_page(&driver, &base, &seeded).await;
    finish(&driver, "search-and-agent-page", result).await;
    let result = diff_page(&driver, &base).await;
    finish(&driver, "diff-page", result).await;
    let result = token_shown_once(&driver, &base).await;
    let secret = finish(&driver, "token-shown-once", result).await;
    // The token the page showed works against the API.
    let res = client
        .get(format!("{base}/api/v1/account"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("session.jsonl");
    std::fs::write(&log, REPLAY_LOG).unwrap();
    let result = replay_upload(&driver, &base, &log).await;
    finish(&driver, "replay-upload", result).await;
    let result = phone_width(&driver, &base, &seeded).await;
    finish(&driver, "phone-width", result).await;
    let result = replay_at_phone_width(&driver, &base, &log).await;
    finish(&driver, "replay-phone-width", result).await;

    driver.quit().await.unwrap();
}
