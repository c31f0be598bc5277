//! The web catalog over plain HTTP, on every backend: pages, HTML errors,
//! sessions, CSRF, and forms. The browser tests (`tests/browser/`) drive the
//! same pages in Chromium.

use reqwest::{Response, StatusCode, header, redirect::Policy};

use crate::support::{Backend, TestApp, backend_tests, seed};

backend_tests!(
    every_page_answers_html_with_its_policy,
    unknown_pages_are_html_and_the_api_keeps_problems,
    search_filters_pages_and_highlights,
    tool_pages_list_who_uses_them,
    sign_in_tokens_and_sign_out_with_csrf,
    owners_yank_from_the_version_page,
    static_assets_revalidate_with_etags,
    session_cookies_are_secure_behind_https,
    plain_http_gets_neither_secure_cookies_nor_hsts,
    the_sign_in_form_answers_unknown_users_as_wrong_passwords,
    agent_pages_say_on_which_hosts_the_agent_runs,
    password_change_and_sign_out_everywhere_end_sessions,
    a_tool_page_shows_how_a_runtime_reaches_it,
);

/// A `kind: bash` tool's `bash:` section, published, is on its page as the
/// YAML it was written in.
async fn a_tool_page_shows_how_a_runtime_reaches_it(backend: Backend) {
    use agentlang_core::Kind;

    use crate::publish::{build, published, publisher};
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let yaml = "name: transcode\nversion: 1.0.0\ndescription: Converts video.\nkind: bash\n\
                input_schema:\n  type: object\npermissions: [shell]\n\
                bash:\n  command: ffmpeg -i {{input}} out.mp4\n";
    let container = build(
        &alice.key,
        Kind::Tool,
        "transcode",
        "1.0.0",
        &[("tool.yaml", yaml.as_bytes())],
        1_738_146_600,
    );
    published(&app, &alice.token, container).await;
    let html = page(app.get("/tools/transcode").await, StatusCode::OK).await;
    assert!(
        html.contains(r#"<h2 id="binding-heading">Command</h2>"#),
        "{html}"
    );
    assert!(
        html.contains("command: ffmpeg -i {{input}} out.mp4"),
        "{html}"
    );
}

/// Paths of every kind: a page, an API answer, a problem, an operational
/// endpoint.
const EVERY_KIND_OF_PATH: [&str; 4] = ["/", "/api/v1/models", "/api/v1/nope", "/healthz"];

pub(crate) fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

async fn seeded(backend: Backend) -> Option<(TestApp, seed::Seeded)> {
    let app = TestApp::builder(backend).build().await?;
    let seeded = seed::seed_catalog(&app).await;
    Some((app, seeded))
}

async fn page(res: Response, status: StatusCode) -> String {
    assert_eq!(res.status(), status, "{}", res.url());
    let content_type = res.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(content_type, "text/html; charset=utf-8", "{}", res.url());
    let csp = res.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    res.text().await.unwrap()
}

/// The value of the first `name="csrf_token"` field in a page.
pub(crate) fn csrf_field(html: &str) -> String {
    let marker = "name=\"csrf_token\" value=\"";
    let start = html.find(marker).expect("a CSRF field") + marker.len();
    html[start..][..html[start..].find('"').unwrap()].to_owned()
}

/// `name=value` of a Set-Cookie header for `name`, with its attributes.
pub(crate) fn set_cookie(res: &Response, name: &str) -> Option<String> {
    res.headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

pub(crate) fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

/// Signs in through the form: the session cookie, or the refusal's status.
pub async fn sign_in(app: &TestApp, username: &str, password: &str) -> Result<String, StatusCode> {
    let client = no_redirects();
    let url = format!("{}/login", app.url);
    let res = client.get(&url).send().await.unwrap();
    let cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let token = csrf_field(&res.text().await.unwrap());
    let res = client
        .post(&url)
        .header(header::COOKIE, cookie)
        .form(&[
            ("username", username),
            ("password", password),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    match res.status() {
        StatusCode::SEE_OTHER => Ok(cookie_pair(&set_cookie(&res, "agentlang_session").unwrap())),
        status => Err(status),
    }
}

async fn every_page_answers_html_with_its_policy(backend: Backend) {
    let Some((app, seeded)) = seeded(backend).await else {
        return;
    };
    let pages = [
        "/".to_owned(),
        "/search?q=research".to_owned(),
        "/search".to_owned(),
        "/agents/research-assistant".to_owned(),
        "/agents/research-assistant/1.0.0".to_owned(),
        "/agents/research-assistant/diff?from=1.0.0&to=1.1.0".to_owned(),
        "/tools/web_search".to_owned(),
        "/tools/web_search/1.2.0".to_owned(),
        "/publishers/alice".to_owned(),
        format!("/keys/{}", seeded.key_id),
        "/docs".to_owned(),
        "/problems/".to_owned(),
        "/problems/not-owner".to_owned(),
        "/login".to_owned(),
    ];
    for path in &pages {
        let html = page(app.get(path).await, StatusCode::OK).await;
        assert!(html.contains("<title>"), "{path}");
        assert!(
            html.contains("<meta name=\"description\" content=\""),
            "{path}"
        );
        assert!(
            !html.contains("content=\"\""),
            "{path}: empty meta description"
        );
    }
    let home = page(app.get("/").await, StatusCode::OK).await;
    assert!(
        home.contains("<div><dt>Agents</dt><dd>1</dd></div>"),
        "{home}"
    );
    assert!(home.contains("<div><dt>Tools</dt><dd>2</dd></div>"));
    assert!(home.contains("<div><dt>Versions</dt><dd>4</dd></div>"));
    assert!(home.contains("href=\"/agents/research-assistant\""));

    let agent = page(app.get("/agents/research-assistant").await, StatusCode::OK).await;
    assert!(agent.contains("Research Assistant 1.1.0"));
    assert!(
        agent.contains("href=\"/tools/web_search/1.2.0\""),
        "lock pins link their versions"
    );
    assert!(agent.contains(&format!("href=\"/keys/{}\"", seeded.key_id)));
    assert!(agent.contains("<code>wallet</code>"));
    assert!(agent.contains("risk risk-critical"));
    // What the agent needs without requesting it, with what needs it.
    for undeclared in [
        r#"<code>shell</code> <span class="badge">undeclared</span>"#,
        "bash tool convert_video, MCP server Stripe",
        "http tool twitter_post_tweet",
    ] {
        assert!(agent.contains(undeclared), "{undeclared} in {agent}");
    }
    assert!(
        agent.contains("Restricts the agent to"),
        "skills from the container"
    );
    assert!(
        agent.contains("academic-researcher"),
        "subagents from the container"
    );
    // The install box leads with `install` (the agent and its locked
    // tools, verified), the bare download second.
    let install = agent
        .find("agentlang install research-assistant@=1.1.0")
        .expect("the install command");
    let pull = agent
        .find("agentlang pull research-assistant@=1.1.0")
        .expect("the pull command");
    assert!(install < pull, "install comes first");
    // Hosts: the fixture needs a camera and scheduled background work.
    assert!(
        agent.contains("<h2 id=\"hosts-heading\">Hosts</h2>"),
        "{agent}"
    );
    let row = |host: &str| {
        let start = agent
            .find(&format!("<th scope=\"row\"><code>{host}</code>"))
            .unwrap_or_else(|| panic!("no row for {host}"));
        let rest = &agent[start..];
        rest[..rest.find("</tr>").unwrap()].to_owned()
    };
    let claude = row("claude-desktop");
    assert!(
        claude.contains(">No</span>") && claude.contains("<code>camera</code>"),
        "{claude}"
    );
    assert!(row("desktop-app").contains(">Yes</span>"));
    assert!(row("local").contains(">Yes</span>"));
    let old = page(
        app.get("/agents/research-assistant/1.0.0").await,
        StatusCode::OK,
    )
    .await;
    assert!(old.contains(&seeded.agent_sha256), "the version's own hash");
    assert!(!old.contains("<code>wallet</code>"));

    let diff = page(
        app.get("/agents/research-assistant/diff?from=1.0.0&to=1.1.0")
            .await,
        StatusCode::OK,
    )
    .await;
    assert!(diff.contains("class=\"raises-risk\""));
    // 1.0.0 was Critical already (an OAuth token): what is new is flagged.
    assert!(diff.contains("1 change gives 1.1.0 powers 1.0.0 did not have"));
}

async fn unknown_pages_are_html_and_the_api_keeps_problems(backend: Backend) {
    let Some((app, _)) = seeded(backend).await else {
        return;
    };
    for path in [
        "/no/such/page",
        "/agents/nobody",
        "/agents/research-assistant/9.9.9",
        "/agents/research-assistant/not-a-version",
        "/agents/bad%20name",
        "/tools/research-assistant",
        "/publishers/nobody",
        "/keys/0000",
        "/static/../Cargo.toml",
        "/search?q=web&page=99",
    ] {
        let html = page(app.get(path).await, StatusCode::NOT_FOUND).await;
        assert!(html.contains("Page not found"), "{path}");
    }
    // Any spelling of a name finds the package.
    page(app.get("/agents/Research_Assistant").await, StatusCode::OK).await;
    let res = app.get("/api/v1/no-such-endpoint").await;
    crate::support::problem(res, StatusCode::NOT_FOUND, "not-found").await;
    // A bad diff request is a 400 page with a reference to the logs.
    let res = app
        .get("/agents/research-assistant/diff?from=one&to=1.1.0")
        .await;
    let html = page(res, StatusCode::BAD_REQUEST).await;
    assert!(html.contains("reference <code>"), "{html}");
}

async fn search_filters_pages_and_highlights(backend: Backend) {
    let Some((app, _)) = seeded(backend).await else {
        return;
    };
    let html = page(app.get("/search?q=web&kind=tool").await, StatusCode::OK).await;
    assert!(html.contains("2 results"), "{html}");
    assert!(html.contains("<mark>web</mark>"));
    let html = page(app.get("/search?q=fetch&kind=agent").await, StatusCode::OK).await;
    assert!(html.contains("No agents or tools match"), "{html}");
    assert!(html.contains("Search again without the kind and category filters"));
    let html = page(
        app.get("/search?q=&category=Business").await,
        StatusCode::OK,
    )
    .await;
    assert!(
        html.contains("1 result<"),
        "{}",
        &html[html.find("<main").unwrap()..]
    );
    assert!(html.contains("href=\"/agents/research-assistant\""));
    let html = page(app.get("/search?kind=tool").await, StatusCode::OK).await;
    assert!(html.contains("2 results"), "{html}");
    // Query syntax is text, never operators.
    let html = page(
        app.get("/search?q=%22a%22+OR+b*+NEAR(").await,
        StatusCode::OK,
    )
    .await;
    assert!(html.contains("No agents or tools match"));
}

async fn tool_pages_list_who_uses_them(backend: Backend) {
    let Some((app, _)) = seeded(backend).await else {
        return;
    };
    let html = page(app.get("/tools/web_fetch").await, StatusCode::OK).await;
    // The agent (dependency row and lock pin, counted once) and web_search.
    assert!(
        html.contains("href=\"/agents/research-assistant/1.1.0\""),
        "{html}"
    );
    assert!(html.contains("href=\"/tools/web_search/1.2.0\""));
    let html = page(app.get("/tools/web_search").await, StatusCode::OK).await;
    assert!(
        html.contains("<strong>ranked</strong>"),
        "the README, rendered"
    );
    assert!(html.contains("href=\"/tools/web_fetch\""), "its dependency");
    assert!(html.contains("query"), "the input schema");
}

async fn sign_in_tokens_and_sign_out_with_csrf(backend: Backend) {
    let Some((app, _)) = seeded(backend).await else {
        return;
    };
    let client = no_redirects();
    let url = |p: &str| format!("{}{p}", app.url);

    // The sign-in form's token must match its cookie.
    let res = client.get(url("/login")).send().await.unwrap();
    let form_cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let form_token = csrf_field(&res.text().await.unwrap());
    let credentials = [("username", "alice"), ("password", seed::PASSWORD)];
    let res = client
        .post(url("/login"))
        .header(header::COOKIE, &form_cookie)
        .form(&credentials)
        .send()
        .await
        .unwrap();
    let html = page(res, StatusCode::FORBIDDEN).await;
    assert!(html.contains("The form expired"));
    let res = client
        .post(url("/login"))
        .header(header::COOKIE, &form_cookie)
        .form(&[
            ("username", "alice"),
            ("password", "wrong-password"),
            ("csrf_token", &form_token),
        ])
        .send()
        .await
        .unwrap();
    let html = page(res, StatusCode::UNAUTHORIZED).await;
    assert!(html.contains("The username or password is not right."));
    assert!(html.contains("value=\"alice\""), "the username is kept");
    let res = client
        .post(url("/login"))
        .header(header::COOKIE, &form_cookie)
        .form(&[
            ("username", "alice"),
            ("password", seed::PASSWORD),
            ("csrf_token", &form_token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[header::LOCATION], "/account");
    let session = set_cookie(&res, "agentlang_session").expect("a session cookie");
    assert!(session.contains("HttpOnly"), "{session}");
    assert!(session.contains("SameSite=Lax"), "{session}");
    assert!(
        !session.contains("Secure"),
        "plain-http registry: {session}"
    );
    let session = cookie_pair(&session);

    let account = |c: &reqwest::Client| {
        c.get(url("/account"))
            .header(header::COOKIE, &session)
            .send()
    };
    let html = page(account(&client).await.unwrap(), StatusCode::OK).await;
    let csrf = csrf_field(&html);

    // A POST without the token, or with another, is refused.
    let form = [
        ("name", "ci"),
        ("scopes", "publish"),
        ("expires_in_days", "30"),
    ];
    for token in ["", "forged"] {
        let res = client
            .post(url("/account/tokens"))
            .header(header::COOKIE, &session)
            .form(&[form[0], form[1], form[2], ("csrf_token", token)])
            .send()
            .await
            .unwrap();
        page(res, StatusCode::FORBIDDEN).await;
    }
    let res = client
        .post(url("/account/tokens"))
        .header(header::COOKIE, &session)
        .form(&[form[0], form[1], form[2], ("csrf_token", &csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = page(account(&client).await.unwrap(), StatusCode::OK).await;
    assert!(html.contains("Copy your new token now"));
    let marker = "id=\"new-token-secret\" class=\"hash\">";
    let start = html.find(marker).unwrap() + marker.len();
    let secret = &html[start..start + html[start..].find('<').unwrap()];
    let res = app
        .client
        .get(url("/api/v1/account"))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "the shown token works");
    let html = page(account(&client).await.unwrap(), StatusCode::OK).await;
    assert!(!html.contains("Copy your new token now"), "shown once");
    assert!(!html.contains(secret));

    // Invalid input re-renders the page with a message.
    let res = client
        .post(url("/account/keys"))
        .header(header::COOKIE, &session)
        .form(&[("public_key_pem", "not a key"), ("csrf_token", &csrf)])
        .send()
        .await
        .unwrap();
    let html = page(res, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(html.contains("public_key_pem:"), "{html}");

    // Sign out needs the token too, then the session is gone.
    let res = client
        .post(url("/logout"))
        .header(header::COOKIE, &session)
        .send()
        .await
        .unwrap();
    page(res, StatusCode::FORBIDDEN).await;
    let res = client
        .post(url("/logout"))
        .header(header::COOKIE, &session)
        .form(&[("csrf_token", &csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let res = account(&client).await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[header::LOCATION], "/login");
}

async fn owners_yank_from_the_version_page(backend: Backend) {
    let Some((app, _)) = seeded(backend).await else {
        return;
    };
    let client = no_redirects();
    let url = |p: &str| format!("{}{p}", app.url);
    app.create_account("bob", seed::PASSWORD).await;
    let alice = sign_in(&app, "alice", seed::PASSWORD).await.unwrap();
    let bob = sign_in(&app, "bob", seed::PASSWORD).await.unwrap();
    let version_page = |session: &str| {
        client
            .get(url("/agents/research-assistant/1.1.0"))
            .header(header::COOKIE, session.to_owned())
            .send()
    };
    let html = page(version_page(&alice).await.unwrap(), StatusCode::OK).await;
    assert!(
        html.contains("/agents/research-assistant/1.1.0/yank"),
        "owners see the form"
    );
    let alice_csrf = csrf_field(&html);
    let html = page(version_page(&bob).await.unwrap(), StatusCode::OK).await;
    assert!(!html.contains("/yank\""), "others do not");
    let bob_csrf = csrf_field(&html);

    let res = client
        .post(url("/agents/research-assistant/1.1.0/yank"))
        .header(header::COOKIE, &bob)
        .form(&[("reason", "mine now"), ("csrf_token", &bob_csrf)])
        .send()
        .await
        .unwrap();
    page(res, StatusCode::FORBIDDEN).await;
    let res = client
        .post(url("/agents/research-assistant/1.1.0/yank"))
        .header(header::COOKIE, &alice)
        .form(&[
            ("reason", "Wallet access by mistake"),
            ("csrf_token", &alice_csrf),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()[header::LOCATION],
        "/agents/research-assistant/1.1.0"
    );
    // The newest unyanked version is now the default, and the reason shows.
    let html = page(app.get("/agents/research-assistant").await, StatusCode::OK).await;
    assert!(html.contains("Research Assistant 1.0.0"), "{html}");
    assert!(html.contains("Wallet access by mistake"));

    // Owners can add owners; the last owner cannot be removed.
    let res = client
        .post(url("/account/agents/research-assistant/owners/remove"))
        .header(header::COOKIE, &alice)
        .form(&[("username", "alice"), ("csrf_token", &alice_csrf)])
        .send()
        .await
        .unwrap();
    let html = page(res, StatusCode::CONFLICT).await;
    assert!(html.contains("at least one owner"), "{html}");
    let res = client
        .post(url("/account/agents/research-assistant/owners"))
        .header(header::COOKIE, &alice)
        .form(&[("username", "bob"), ("csrf_token", &alice_csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    // Invited, bob is not an owner until he accepts on his account page.
    let res = client
        .post(url("/account/invitations/agents/research-assistant/accept"))
        .header(header::COOKIE, &bob)
        .form(&[("csrf_token", &bob_csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let html = page(version_page(&bob).await.unwrap(), StatusCode::OK).await;
    assert!(
        html.contains("/agents/research-assistant/1.1.0/unyank"),
        "bob owns it now"
    );
    // The package page lists owners with their role.
    for owner in [
        r#"<a href="/publishers/alice">alice</a> <span class="muted">(founder)</span>"#,
        r#"<a href="/publishers/bob">bob</a> <span class="muted">(owner)</span>"#,
    ] {
        assert!(html.contains(owner), "{owner} in {html}");
    }
}

async fn static_assets_revalidate_with_etags(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let res = app.get("/static/style.css").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()[header::CONTENT_TYPE],
        "text/css; charset=utf-8"
    );
    let etag = res.headers()[header::ETAG].to_str().unwrap().to_owned();
    assert!(
        res.headers()[header::CACHE_CONTROL]
            .to_str()
            .unwrap()
            .contains("max-age=86400")
    );
    let res = app
        .request(reqwest::Method::GET, "/static/style.css")
        .header(header::IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    let res = app.get("/static/copy.js").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_ne!(res.headers()[header::ETAG].to_str().unwrap(), etag);

    // Rendered pages carry the tag of their bytes too: a revisit of an
    // unchanged page is 304 with the page's headers and no body.
    let (app, _) = seeded(backend).await.unwrap();
    for path in [
        "/",
        "/agents/research-assistant",
        "/tools/web_fetch",
        "/docs",
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let etag = res.headers()[header::ETAG].to_str().unwrap().to_owned();
        let res = app
            .request(reqwest::Method::GET, path)
            .header(header::IF_NONE_MATCH, &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert_eq!(res.headers()[header::ETAG], etag.as_str());
        assert!(res.headers().contains_key(header::CONTENT_SECURITY_POLICY));
        assert!(res.bytes().await.unwrap().is_empty());
    }
    // A client holding another tag gets the page, with the current tag.
    let etag = app.get("/tools/web_search").await.headers()[header::ETAG].clone();
    let res = app
        .request(reqwest::Method::GET, "/tools/web_search")
        .header(header::IF_NONE_MATCH, "\"stale\"")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()[header::ETAG], etag);
}

async fn session_cookies_are_secure_behind_https(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .public_url("https://registry.example")
        .build()
        .await
    else {
        return;
    };
    app.create_account("alice", seed::PASSWORD).await;
    let client = no_redirects();
    let res = client
        .get(format!("{}/login", app.url))
        .send()
        .await
        .unwrap();
    let form_cookie = set_cookie(&res, "agentlang_login_csrf").unwrap();
    assert!(form_cookie.contains("Secure"), "{form_cookie}");
    assert!(form_cookie.contains("SameSite=Strict"), "{form_cookie}");
    let token = csrf_field(&res.text().await.unwrap());
    let res = client
        .post(format!("{}/login", app.url))
        .header(header::COOKIE, cookie_pair(&form_cookie))
        .form(&[
            ("username", "alice"),
            ("password", seed::PASSWORD),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let session = set_cookie(&res, "agentlang_session").unwrap();
    assert!(session.contains("Secure"), "{session}");
    assert!(session.contains("HttpOnly"), "{session}");
    // And every response, whoever answers it, pins https.
    assert_eq!(
        res.headers()[header::STRICT_TRANSPORT_SECURITY],
        "max-age=31536000"
    );
    for path in EVERY_KIND_OF_PATH {
        let res = app.get(path).await;
        assert_eq!(
            res.headers()[header::STRICT_TRANSPORT_SECURITY],
            "max-age=31536000",
            "{path}"
        );
    }
}

/// On a plain-http public URL (localhost, tests) cookies cannot be
/// `Secure` (the browser would drop them) and HSTS would pin nothing.
async fn plain_http_gets_neither_secure_cookies_nor_hsts(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", seed::PASSWORD).await;
    let res = no_redirects()
        .get(format!("{}/login", app.url))
        .send()
        .await
        .unwrap();
    let form_cookie = set_cookie(&res, "agentlang_login_csrf").unwrap();
    assert!(!form_cookie.contains("Secure"), "{form_cookie}");
    let session = sign_in(&app, "alice", seed::PASSWORD).await.unwrap();
    assert!(!session.is_empty());
    for path in EVERY_KIND_OF_PATH {
        let res = app.get(path).await;
        assert!(
            !res.headers()
                .contains_key(header::STRICT_TRANSPORT_SECURITY),
            "{path}"
        );
    }
}

/// The sign-in form's answer to a wrong password, with its form token
/// taken out and the name typed replaced by `NAME` (the form shows it
/// again): its status and page.
async fn refused_sign_in_page(app: &TestApp, username: &str) -> (StatusCode, String) {
    let client = no_redirects();
    let url = format!("{}/login", app.url);
    let res = client.get(&url).send().await.unwrap();
    let cookie = cookie_pair(&set_cookie(&res, "agentlang_login_csrf").unwrap());
    let token = csrf_field(&res.text().await.unwrap());
    let res = client
        .post(&url)
        .header(header::COOKIE, cookie)
        .form(&[
            ("username", username),
            ("password", "wrong-password"),
            ("csrf_token", &token),
        ])
        .send()
        .await
        .unwrap();
    let status = res.status();
    let html = res.text().await.unwrap();
    let fresh = csrf_field(&html);
    (
        status,
        html.replace(&fresh, "TOKEN").replace(username, "NAME"),
    )
}

async fn the_sign_in_form_answers_unknown_users_as_wrong_passwords(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", seed::PASSWORD).await;
    let wrong = refused_sign_in_page(&app, "alice").await;
    assert_eq!(wrong.0, StatusCode::UNAUTHORIZED);
    assert_eq!(refused_sign_in_page(&app, "nobody").await, wrong);
}

/// The hosts table counts what locked tools require, not only the agent.
async fn agent_pages_say_on_which_hosts_the_agent_runs(backend: Backend) {
    use crate::publish::{agent, agent_yaml, build, published, publisher};
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let tool_yaml = "name: shell_exec\nversion: 1.0.0\ndescription: Runs commands.\nkind: bash\ninput_schema:\n  type: object\npermissions: [shell]\n";
    let shell = published(
        &app,
        &alice.token,
        build(
            &alice.key,
            agentlang_core::Kind::Tool,
            "shell_exec",
            "1.0.0",
            &[("tool.yaml", tool_yaml.as_bytes())],
            1_738_146_600,
        ),
    )
    .await;
    let lock = format!(
        "version: \"1\"\nresolved_at: \"2025-01-29T10:30:00Z\"\ntools:\n  shell_exec:\n    version: 1.0.0\n    hash: {}\n",
        shell["hash"].as_str().unwrap()
    );
    published(
        &app,
        &alice.token,
        agent(
            &alice.key,
            &agent_yaml("operator", "1.0.0", &[("shell_exec", "^1")]),
            Some(&lock),
        ),
    )
    .await;
    let html = page(app.get("/agents/operator").await, StatusCode::OK).await;
    let row = |host: &str| {
        let start = html
            .find(&format!("<th scope=\"row\"><code>{host}</code>"))
            .unwrap_or_else(|| panic!("no row for {host}"));
        let rest = &html[start..];
        rest[..rest.find("</tr>").unwrap()].to_owned()
    };
    // The agent asks for nothing itself; its tool needs a shell.
    let claude = row("claude-desktop");
    assert!(
        claude.contains(">No</span>") && claude.contains("Refuses required: <code>shell</code>"),
        "{claude}"
    );
    assert!(row("replit-agent").contains(">Yes</span>"));
    assert!(row("browser-extension").contains(">No</span>"));
    assert!(row("desktop-app").contains(">Yes</span>"));
}

async fn password_change_and_sign_out_everywhere_end_sessions(backend: Backend) {
    const NEW: &str = "a-new-password-456";
    let Some((app, _)) = seeded(backend).await else {
        return;
    };
    let client = no_redirects();
    let url = |p: &str| format!("{}{p}", app.url);
    let here = sign_in(&app, "alice", seed::PASSWORD).await.unwrap();
    let elsewhere = sign_in(&app, "alice", seed::PASSWORD).await.unwrap();
    let token = app.token("alice", &["publish"]).await;
    let account = |session: &str| {
        client
            .get(url("/account"))
            .header(header::COOKIE, session.to_owned())
            .send()
    };
    let signed_out = |res: Response| {
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{}", res.url());
        assert_eq!(res.headers()[header::LOCATION], "/login");
    };
    let csrf = csrf_field(&page(account(&here).await.unwrap(), StatusCode::OK).await);
    let change_password = |current: &'static str| {
        client
            .post(url("/account/password"))
            .header(header::COOKIE, &here)
            .form(&[
                ("password", current),
                ("new_password", NEW),
                ("revoke_tokens", "yes"),
                ("csrf_token", &csrf),
            ])
            .send()
    };

    // The wrong current password changes nothing.
    let html = page(
        change_password("not-the-password").await.unwrap(),
        StatusCode::UNAUTHORIZED,
    )
    .await;
    assert!(html.contains("The current password is wrong."), "{html}");
    page(account(&elsewhere).await.unwrap(), StatusCode::OK).await;

    // The right one: this session stays, every other one ends, and (as
    // asked) every API token is revoked.
    let res = change_password(seed::PASSWORD).await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    page(account(&here).await.unwrap(), StatusCode::OK).await;
    signed_out(account(&elsewhere).await.unwrap());
    let res = app
        .client
        .get(url("/api/v1/account"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "tokens revoked");
    assert_eq!(
        sign_in(&app, "alice", seed::PASSWORD).await,
        Err(StatusCode::UNAUTHORIZED)
    );
    let third = sign_in(&app, "alice", NEW).await.unwrap();

    // The account's activity says what happened, newest first.
    let html = page(account(&here).await.unwrap(), StatusCode::OK).await;
    let activity = &html[html.find("id=\"activity-heading\"").unwrap()..];
    let position = |action: &str| {
        activity
            .find(&format!("<code>{action}</code>"))
            .unwrap_or_else(|| panic!("{action} is listed: {activity}"))
    };
    assert!(position("signed_in") < position("password_changed"));
    assert!(position("password_changed") < position("token_created"));

    // Sign out everywhere: a forged form is refused; the real one ends this
    // session and the other.
    let end_all = |csrf: &str| {
        client
            .post(url("/account/sessions/end-all"))
            .header(header::COOKIE, &here)
            .form(&[("csrf_token", csrf)])
            .send()
    };
    page(end_all("forged").await.unwrap(), StatusCode::FORBIDDEN).await;
    page(account(&third).await.unwrap(), StatusCode::OK).await;
    let res = end_all(&csrf).await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    signed_out(account(&here).await.unwrap());
    signed_out(account(&third).await.unwrap());
}

/// `/docs` lists every format page of the repository's `docs/`; each answers
/// with its title, and every link between them (and into their headings)
/// lands on a page that exists and an id it has.
#[actix_web::test]
async fn docs_pages_are_served_and_link_to_each_other() {
    let app = TestApp::builder(Backend::Sqlite).build().await.unwrap();
    let index = page(app.get("/docs").await, StatusCode::OK).await;
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut files: Vec<String> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".md") && f != "README.md")
        .collect();
    files.sort();
    assert!(files.len() >= 11, "{files:?}");
    for file in &files {
        let slug = file.trim_end_matches(".md");
        assert!(
            index.contains(&format!("href=\"/docs/{slug}\"")),
            "/docs lists {slug}"
        );
        let source = std::fs::read_to_string(docs.join(file)).unwrap();
        // The first line is the title; its code spans render as plain text.
        let title = source
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("# ")
            .replace('`', "");
        let html = page(app.get(&format!("/docs/{slug}")).await, StatusCode::OK).await;
        let escaped = title
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(
            html.contains(&format!("<h1>{escaped}</h1>")),
            "{slug}: {title}"
        );
        for link in hrefs(&html).into_iter().filter(|l| l.starts_with("/docs")) {
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = page(app.get(path).await, StatusCode::OK).await;
            if !fragment.is_empty() {
                assert!(
                    target.contains(&format!("id=\"{fragment}\"")),
                    "{slug} links to {link}, which has no such id"
                );
            }
        }
    }
    page(app.get("/docs/no-such-page").await, StatusCode::NOT_FOUND).await;
    page(
        app.get("/docs/..%2FCargo.toml").await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // The guide is the README's walkthrough: every command of its
    // sections is on the page, the way it is written there.
    let readme = std::fs::read_to_string(docs.join("../README.md")).unwrap();
    let section = |name: &str| {
        let start = readme.find(&format!("## {name}\n")).unwrap();
        let rest = &readme[start + 3..];
        rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
    };
    for name in ["Publish an agent", "Install and run an agent"] {
        for command in section(name)
            .lines()
            .filter(|l| l.starts_with("agentlang "))
        {
            let command = command.split("  ").next().unwrap().trim();
            let escaped = command
                .replace('&', "&amp;")
                .replace('>', "&gt;")
                .replace('<', "&lt;");
            assert!(index.contains(&escaped), "/docs lacks {command:?}");
        }
    }
    assert!(index.contains("agentlang install"), "{index}");
    assert!(!index.contains("~/.agentlang"), "a stale key path");
    // `/docs/`, as `new --help` spells it, lands on the same page.
    let slash = app.get("/docs/").await;
    assert_eq!(slash.url().path(), "/docs");
    page(slash, StatusCode::OK).await;
}

/// Every `href="…"` value in a page.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}
