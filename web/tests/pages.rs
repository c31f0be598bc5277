//! Every page rendered from the research-assistant fixtures, checked for the
//! content that matters and for the structure every page must have.

use agentlang_core::{Kind, PackageName, Version};
use agentlang_web::{
    Template,
    fixtures::{self, KEY_ID, REVOKED_KEY_ID, SHA256},
    model::*,
    pages::*,
};
use regex::Regex;

fn chrome() -> Chrome {
    fixtures::signed_in_chrome()
}

/// Owners in the order they joined: the first is the founder.
fn owners(names: &[&str]) -> Vec<OwnerView> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| OwnerView {
            username: (*name).to_owned(),
            role: if i == 0 { "founder" } else { "owner" },
        })
        .collect()
}

fn agent_page(owner: bool) -> AgentPage {
    AgentPage {
        chrome: chrome(),
        agent: fixtures::research_assistant(),
        hosts: vec![
            HostFitView {
                host: "claude-desktop".to_owned(),
                description: "Claude Desktop.".to_owned(),
                runnable: false,
                refused: vec!["camera".to_owned(), "background".to_owned()],
                degraded: vec!["microphone".to_owned()],
                downgraded: Vec::new(),
            },
            HostFitView {
                host: "desktop-app".to_owned(),
                description: "A desktop application.".to_owned(),
                runnable: true,
                refused: Vec::new(),
                degraded: Vec::new(),
                downgraded: vec!["notifications: on_demand → user_triggered".to_owned()],
            },
        ],
        versions: fixtures::versions(),
        artifact: fixtures::artifact(),
        owners: owners(&["acme", "dana"]),
        total_downloads: 5_310,
        owner_controls: owner.then(|| OwnerControls {
            csrf_token: "csrf-session-token".to_owned(),
        }),
        undeclared: Vec::new(),
        statements: fixtures::statements(),
        quality: Some(quality_report()),
        protocol_notices: vec![ProtocolNotice {
            name: "a2a".to_owned(),
            version: Some("1.0.0".to_owned()),
            message: Some(
                "a2a 1.0.0 is deprecated, migrate to 2.0.0: a2a v1 is deprecated; migrate to v2"
                    .to_owned(),
            ),
            is_error: false,
        }],
        a2a_card: Some(A2aCardView {
            endpoint: "https://agents.acme.example/research/a2a".to_owned(),
            binding: "JSONRPC".to_owned(),
            protocol_version: "1.0".to_owned(),
            card_href: "/agents/research-assistant/1.0.0/agent-card.json".to_owned(),
        }),
        advisories: Vec::new(),
        prompt: Some(PromptView {
            sealed: true,
            text: None,
        }),
        grants: owner.then(|| {
            vec![GrantRowView {
                grantee: "bob".to_owned(),
                key_id: "0123456789abcdef".to_owned(),
                versions: Some("^1".to_owned()),
                granted_by: Some("acme".to_owned()),
                granted_at: "2025-01-29".to_owned(),
            }]
        }),
    }
}

fn quality_report() -> agentlang_core::quality::QualityReport {
    use agentlang_core::quality::{Finding, QualityReport, Severity, Skipped, Source};
    QualityReport {
        findings: vec![Finding {
            rule: "undeclared-tool".to_owned(),
            severity: Severity::Warning,
            file: Some("prompt.yaml".to_owned()),
            path: "sections[3].content".to_owned(),
            message: "the prompt names \"user_memory\", which no agent of the package declares"
                .to_owned(),
            hint: Some("declare user_memory under tools:, or remove it from the prompt".to_owned()),
            source: Source::Rules,
        }],
        skipped: vec![Skipped {
            rule: "unused-tool".to_owned(),
            reason: "the prompt is encrypted; only its size is known".to_owned(),
        }],
        prompt_tokens: Some(212),
        model_review: None,
        omitted: Default::default(),
    }
}

const REPLAY_LOG: &str = r#"{"type":"agent.delegate","timestamp":"2025-01-29T10:00:00Z","from":"orchestrator","to":"researcher","task":"Find papers"}
{"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"researcher","tool":"web_search","call_id":"a"}
{"type":"tool.result","timestamp":"2025-01-29T10:00:03Z","call_id":"a","error":"timeout"}
{"type":"agent.message","timestamp":"2025-01-29T10:00:04Z","agent_id":"orchestrator","role":"assistant","content":"Done"}
"#;

fn replay_page(with_log: bool) -> ReplayPage {
    use agentlang_core::events::{self, Limits, timeline::Timeline};
    let timeline = with_log.then(|| {
        let log = events::parse(REPLAY_LOG.as_bytes(), &Limits::default()).unwrap();
        Timeline::new(&log, &events::check(&log, None))
    });
    ReplayPage {
        chrome: Chrome::default(),
        limits: ReplayLimits {
            max_bytes: 1024 * 1024,
            max_events: 5000,
        },
        file_name: with_log.then(|| "session.jsonl".to_owned()),
        errors: vec![],
        timeline,
    }
}

fn protocol_page() -> ProtocolPage {
    let v = |s: &str| Version::parse(s).unwrap();
    ProtocolPage {
        chrome: Chrome::default(),
        name: "acme-sync".to_owned(),
        is_package: true,
        description: "Sync state between Acme agents over websockets.".to_owned(),
        versions: vec![
            ProtocolVersionRow {
                version: v("1.0.0"),
                status: "deprecated".to_owned(),
                successor: Some(v("1.1.0")),
                message: Some("this version was yanked: drops messages".to_owned()),
            },
            ProtocolVersionRow {
                version: v("1.1.0"),
                status: "stable".to_owned(),
                successor: None,
                message: None,
            },
        ],
        definition: Some(ProtocolDefinitionView {
            version: v("1.1.0"),
            message_format: "json".to_owned(),
            transport: "websocket".to_owned(),
            auth: "bearer".to_owned(),
        }),
        owners: owners(&["acme"]),
    }
}

fn tool_page() -> ToolPage {
    ToolPage {
        chrome: Chrome::default(),
        tool: fixtures::web_search_tool(),
        versions: fixtures::versions(),
        artifact: fixtures::artifact(),
        owners: owners(&["acme"]),
        total_downloads: 98_310,
        used_by: fixtures::reverse_dependencies(),
        owner_controls: Some(OwnerControls {
            csrf_token: "csrf-session-token".to_owned(),
        }),
        mcp: None,
        binding: Some(BindingView {
            key: "http".to_owned(),
            heading: "HTTP endpoint".to_owned(),
            yaml: "http:\n  endpoint: https://search.example/api\n  method: GET\n".to_owned(),
        }),
        advisories: Vec::new(),
    }
}

fn skill_page() -> SkillPage {
    SkillPage {
        chrome: Chrome::default(),
        skill: SkillVersionView {
            name: PackageName::new("pdf-tools").unwrap(),
            version: Version::parse("1.1.0").unwrap(),
            description:
                "Extract text and tables from PDF files. Use when the user hands you a PDF."
                    .to_owned(),
            license: Some("Apache-2.0".to_owned()),
            compatibility: None,
            allowed_tools: vec!["Bash(python3:*)".to_owned(), "Read".to_owned()],
            metadata: vec![
                ("author".to_owned(), "example-org".to_owned()),
                ("version".to_owned(), "1.1.0".to_owned()),
            ],
            body_markdown: Some(
                "# PDF tools\n\nRun `scripts/extract.py FILE`.\n\n\
                 <script>alert(1)</script>\n\n## Tables\n\nSee the reference.\n"
                    .to_owned(),
            ),
        },
        versions: fixtures::versions(),
        artifact: fixtures::artifact(),
        owners: owners(&["acme", "bob"]),
        total_downloads: 2_310,
        owner_controls: Some(OwnerControls {
            csrf_token: "csrf-session-token".to_owned(),
        }),
        index_entry: SkillIndexEntryView {
            url: "/api/v1/skills/pdf-tools/1.1.0/download".to_owned(),
            digest: format!("sha256:{SHA256}"),
            listed: true,
        },
        advisories: Vec::new(),
    }
}

fn search_page(query: &str, results: bool) -> SearchPage {
    SearchPage {
        chrome: Chrome {
            user: None,
            search_query: query.to_owned(),
        },
        query: query.to_owned(),
        kind: Some(Kind::Agent),
        category: Some("Business".to_owned()),
        categories: vec!["Business".to_owned(), "Developer tools".to_owned()],
        results: if results {
            fixtures::package_summaries()
        } else {
            vec![]
        },
        total: if results { 45 } else { 0 },
        page: if results { 3 } else { 1 },
        per_page: 2,
    }
}

fn diff_page() -> AgentDiffPage {
    // 1.0.0 without its Identity capability, so 1.1.0's wallet raises the risk.
    let mut from = fixtures::research_assistant();
    from.permissions.retain(|p| p.capability != "oauth");
    AgentDiffPage::new(
        chrome(),
        &from,
        &fixtures::research_assistant_1_1(),
        Some(fixtures::trust_diff()),
        fixtures::versions()
            .into_iter()
            .map(|v| v.version)
            .collect(),
    )
}

fn account_page() -> AccountPage {
    AccountPage {
        chrome: chrome(),
        csrf_token: "csrf-session-token".to_owned(),
        username: "acme".to_owned(),
        new_token: Some(NewTokenView {
            name: "CI publish".to_owned(),
            secret: "agl_secret_token_value_0123456789".to_owned(),
        }),
        tokens: vec![
            ApiTokenView {
                id: "tok_1".to_owned(),
                name: "CI publish".to_owned(),
                scopes: vec!["publish".to_owned(), "yank".to_owned()],
                created_at: fixtures::jan(20),
                expires_at: Some(fixtures::jan(30)),
                last_used_at: None,
            },
            ApiTokenView {
                id: "tok_2".to_owned(),
                name: "laptop".to_owned(),
                scopes: vec!["publish".to_owned()],
                created_at: fixtures::jan(2),
                expires_at: None,
                last_used_at: Some(fixtures::jan(19)),
            },
        ],
        scopes: vec![
            ScopeOption {
                value: "publish".to_owned(),
                description: "upload new versions".to_owned(),
            },
            ScopeOption {
                value: "yank".to_owned(),
                description: "yank and unyank versions".to_owned(),
            },
        ],
        keys: fixtures::keys(),
        packages: vec![OwnedPackage {
            package: PackageRef {
                kind: Kind::Agent,
                name: PackageName::new("research-assistant").unwrap(),
            },
            owners: owners(&["acme", "dana"]),
            invited: vec!["erin".to_owned()],
        }],
        key_proof_text: "agentlang-key-registration:acme:<key id>".to_owned(),
        invitations: vec![InvitationView {
            package: PackageRef {
                kind: Kind::Tool,
                name: PackageName::new("web-search").unwrap(),
            },
            invited_by: Some("dana".to_owned()),
            expires_at: fixtures::jan(30),
        }],
        audit: vec![AuditView {
            at: fixtures::jan(20),
            action: "token_created".to_owned(),
            detail: "CI publish".to_owned(),
        }],
        errors: vec!["That key is already registered.".to_owned()],
        two_factor: agentlang_web::pages::TwoFactorView::default(),
    }
}

/// Every page, rendered, with a name for failure messages.
fn problems_page() -> ProblemsPage {
    let view = |slug: &str, status, title: &str| ProblemView {
        slug: slug.to_owned(),
        status,
        title: title.to_owned(),
        advice: format!("What `{slug}` means."),
    };
    ProblemsPage {
        chrome: chrome(),
        registry_url: "https://registry.example/".to_owned(),
        problem: Some(view("not-owner", 403, "Not an owner")),
        problems: vec![view("not-found", 404, "Not found")],
    }
}

fn all_pages() -> Vec<(&'static str, String)> {
    vec![
        (
            "home",
            HomePage {
                chrome: Chrome::default(),
                stats: RegistryStats {
                    agents: 12,
                    tools: 40,
                    versions: 310,
                    publishers: 9,
                },
                recently_published: fixtures::package_summaries(),
                most_downloaded: fixtures::package_summaries(),
            }
            .render()
            .unwrap(),
        ),
        (
            "search",
            search_page("research web", true).render().unwrap(),
        ),
        (
            "search-empty",
            search_page("nothing", false).render().unwrap(),
        ),
        ("agent", agent_page(false).render().unwrap()),
        ("agent-owner", agent_page(true).render().unwrap()),
        ("tool", tool_page().render().unwrap()),
        ("skill", skill_page().render().unwrap()),
        ("problem", problems_page().render().unwrap()),
        ("protocol", protocol_page().render().unwrap()),
        ("replay-form", replay_page(false).render().unwrap()),
        ("replay", replay_page(true).render().unwrap()),
        ("diff", diff_page().render().unwrap()),
        (
            "publisher",
            PublisherPage {
                chrome: chrome(),
                publisher: PublisherView {
                    name: "acme".to_owned(),
                    joined_at: fixtures::jan(1),
                },
                packages: fixtures::package_summaries(),
                keys: fixtures::keys(),
            }
            .render()
            .unwrap(),
        ),
        (
            "key",
            KeyPage {
                chrome: chrome(),
                key: fixtures::keys().remove(1),
                owner: "acme".to_owned(),
                signed: vec![VersionRef {
                    kind: Kind::Agent,
                    name: PackageName::new("research-assistant").unwrap(),
                    version: Version::parse("1.0.0").unwrap(),
                }],
            }
            .render()
            .unwrap(),
        ),
        (
            "docs",
            DocsPage {
                chrome: Chrome::default(),
                registry_url: "https://registry.example.com".to_owned(),
                pages: vec![("agent-yaml".to_owned(), "agent.yaml".to_owned())],
                guide: agentlang_web::render_guide(
                    "# R\n\n## Publish an agent\n\nSee [grants](docs/prompt-grants.md) and \
                     [the schema](core/schemas/handoff-v1.schema.json).\n\n\
                     ```sh\nagentlang publish ./my-agent\n## not a heading\n```\n\n\
                     ## What is here\n\nnot in the guide\n",
                    &["Publish an agent"],
                ),
            }
            .render()
            .unwrap(),
        ),
        ("doc", {
            let (title, html) = agentlang_web::render_docs(
                "# agent.yaml\n\nSee [the lock](lockfile.md).\n\n## Identity\n\n\
                 | key | what |\n|---|---|\n| `name` | required |\n\n\
                 ```yaml\nname: x\n```\n",
            );
            DocPage {
                chrome: Chrome::default(),
                title,
                html,
            }
            .render()
            .unwrap()
        }),
        (
            "not-found",
            NotFoundPage { chrome: chrome() }.render().unwrap(),
        ),
        (
            "error",
            ErrorPage::new(Chrome::default(), 500, Some("req-7f3a".to_owned()))
                .render()
                .unwrap(),
        ),
        (
            "login",
            LoginPage {
                chrome: Chrome::default(),
                csrf_token: "csrf-login-token".to_owned(),
                username: "acme".to_owned(),
                error: Some(LoginError::InvalidCredentials),
                pending: None,
            }
            .render()
            .unwrap(),
        ),
        ("account", account_page().render().unwrap()),
    ]
}

#[test]
fn the_guide_is_the_readmes_named_sections_with_links_as_served() {
    let guide = agentlang_web::render_guide(
        "# R\n\n## Publish an agent\n\nSee [grants](docs/prompt-grants.md) and \
         [the schema](core/schemas/handoff-v1.schema.json).\n\n\
         ```sh\nagentlang publish ./my-agent\n## not a heading\n```\n\n\
         ## What is here\n\nnot in the guide\n",
        &["Publish an agent"],
    );
    assert!(guide.contains(r#"<h2 id="publish-an-agent">"#), "{guide}");
    assert!(
        guide.contains(r#"<a href="/docs/prompt-grants">grants</a>"#),
        "{guide}"
    );
    // A repository file the registry does not serve stays text.
    assert!(guide.contains("and the schema."), "{guide}");
    assert!(guide.contains("## not a heading"), "{guide}");
    assert!(!guide.contains("not in the guide"), "{guide}");
}

#[test]
fn every_page_is_a_complete_document() {
    let title = Regex::new(r"<title>([^<]+)</title>").unwrap();
    let description = Regex::new(r#"<meta name="description" content="([^"]*)">"#).unwrap();
    for (name, html) in all_pages() {
        assert!(
            html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"),
            "{name}"
        );
        assert!(
            html.contains(
                r#"<meta name="viewport" content="width=device-width, initial-scale=1">"#
            ),
            "{name}"
        );
        let title = &title
            .captures(&html)
            .unwrap_or_else(|| panic!("{name}: no title"))[1];
        assert!(
            title.ends_with(" · AgentLang Registry") && title.len() > 25,
            "{name}: {title}"
        );
        let description = &description
            .captures(&html)
            .unwrap_or_else(|| panic!("{name}: no description"))[1];
        assert!(description.trim().len() >= 30, "{name}: {description:?}");
        assert!(
            html.contains(r##"<a class="skip-link" href="#main">"##),
            "{name}"
        );
        assert!(html.contains(r#"<main id="main""#), "{name}");
        assert!(
            html.contains(r#"<form class="header-search" role="search""#),
            "{name}"
        );
        assert_eq!(html.matches("<h1").count(), 1, "{name}: one h1");
    }
}

#[test]
fn headings_never_skip_a_level() {
    let heading = Regex::new(r"<h([1-6])[ >]").unwrap();
    for (name, html) in all_pages() {
        let levels: Vec<u32> = heading
            .captures_iter(&html)
            .map(|c| c[1].parse().unwrap())
            .collect();
        assert_eq!(
            levels.first(),
            Some(&1),
            "{name}: first heading is h1: {levels:?}"
        );
        for pair in levels.windows(2) {
            assert!(
                pair[1] <= pair[0] + 1,
                "{name}: h{} after h{}: {levels:?}",
                pair[1],
                pair[0]
            );
        }
    }
}

#[test]
fn every_post_form_carries_a_csrf_token() {
    let form = Regex::new(r#"(?s)<form method="post"[^>]*>(.*?)</form>"#).unwrap();
    let csrf =
        Regex::new(r#"<input type="hidden" name="csrf_token" value="csrf-[a-z]+-token">"#).unwrap();
    let mut forms = 0;
    for (name, html) in all_pages() {
        assert!(
            !html.contains("method=\"POST\""),
            "{name}: lower-case method only"
        );
        for caps in form.captures_iter(&html) {
            // The replay upload changes nothing and answers only its
            // sender (see server/src/catalog/replay.rs): no session, no token.
            if caps[0].starts_with(r#"<form method="post" action="/replay""#) {
                continue;
            }
            forms += 1;
            assert!(
                csrf.is_match(&caps[1]),
                "{name}: form without csrf_token: {}",
                &caps[0]
            );
        }
        // Every form is either a POST (counted above) or the GET search forms.
        let all_forms = html.matches("<form").count();
        let get_forms = html.matches(r#"method="get""#).count();
        assert_eq!(
            all_forms,
            form.captures_iter(&html).count() + get_forms,
            "{name}"
        );
    }
    assert!(forms >= 15, "only {forms} post forms seen");
}

#[test]
fn every_control_has_a_label() {
    let control = Regex::new(r#"<(input|select|textarea)\b([^>]*)>"#).unwrap();
    let id = Regex::new(r#"\bid="([^"]+)""#).unwrap();
    for (name, html) in all_pages() {
        for caps in control.captures_iter(&html) {
            let attrs = &caps[2];
            if attrs.contains(r#"type="hidden""#) {
                continue;
            }
            let id = &id
                .captures(attrs)
                .unwrap_or_else(|| panic!("{name}: control without id: {}", &caps[0]))[1];
            assert!(
                html.contains(&format!(r#"<label for="{id}""#)),
                "{name}: no label for #{id}"
            );
        }
    }
}

#[test]
fn no_inline_script_or_style_and_no_other_origin() {
    let absolute = Regex::new(r#"(src|href)="(https?:)?//"#).unwrap();
    for (name, html) in all_pages() {
        assert_eq!(html.matches("<script").count(), 1, "{name}");
        assert!(
            html.contains(r#"<script src="/static/copy.js" defer></script>"#),
            "{name}"
        );
        assert!(!html.contains("<style"), "{name}");
        assert!(!html.contains(" style="), "{name}");
        assert!(
            !absolute.find_iter(&html).any(|m| {
                // Publisher links in content are allowed; assets are not.
                let before = &html[..m.start()];
                let tag_start = before.rfind('<').unwrap();
                let tag = &html[tag_start..m.end()];
                tag.starts_with("<link") || tag.starts_with("<script") || tag.starts_with("<img")
            }),
            "{name}"
        );
    }
}

#[test]
fn agent_page_shows_risk_and_every_section() {
    let html = agent_page(false).render().unwrap();
    for expected in [
        // Summary badge: colour class plus the words.
        r#"<p class="risk-summary risk risk-critical"><strong>Highest permission risk: Critical</strong>"#,
        "(1 Critical, 2 High, 1 Medium, 1 Low)",
        // Per-capability risk levels, category and mode.
        r#"<th scope="row"><code>oauth</code></th>
<td>Identity</td>
<td><span class="risk risk-critical">Critical</span></td>
<td><code>user_triggered</code></td>"#,
        r#"<td><span class="risk risk-low">Low</span></td>"#,
        r#"<td><span class="risk risk-medium">Medium</span></td>"#,
        r#"<td><span class="risk risk-high">High</span></td>"#,
        r#"<h3 id="required-permissions">Required</h3>"#,
        // Per known host, whether the agent can start there.
        r#"<h2 id="hosts-heading">Hosts</h2>"#,
        r#"<th scope="row"><code>claude-desktop</code>"#,
        r#"<td><span class="risk risk-high">No</span></td>"#,
        "<li>Refuses required: <code>camera</code>, <code>background</code></li>",
        "<li>Runs without: <code>microphone</code></li>",
        r#"<td><span class="status status-ok">Yes</span></td>"#,
        "<li>Downgrades: <code>notifications: on_demand → user_triggered</code></li>",
        r#"<h3 id="optional-permissions">Optional</h3>"#,
        "Voice commands and meeting transcription",
        "schedule: <code>0 * * * *</code>",
        // Header facts.
        "McKinsey-grade research",
        "By acme",
        "Category: <a href=\"/search?kind=agent&amp;category=Business\">Business</a>",
        "<h3>Sources</h3>",
        // Tools with their locked versions, linked.
        r#"<a href="/tools/web_search/1.2.0"><code>web_search</code></a>"#,
        "<code>^1.2.0</code>",
        // Models, constraints, protocols, skills, ui, subagents, ux.
        "<code>claude-sonnet-4</code> from anthropic",
        "<dt>Budget cap</dt><dd>$2.00</dd>",
        "<dt>Allowed URLs</dt><dd>https://api.example.com, https://*.googleapis.com</dd>",
        "<dt>Disk quota</dt><dd>1.0 GiB</dd>",
        "<code>a2a</code> <code>^1.0.0</code>",
        "Restricts the agent to: <code>sqlite</code>, <code>delegate</code>",
        "<code>archive</code> runs <code>gmail_modify_labels</code>",
        "<code>reply</code> asks the agent",
        "<code>summarize</code> asks the agent",
        "<code>archive</code> runs <code>gmail_modify_labels</code> directly (no model call)",
        r#"the agent calls <code class="render-tool">render_email_card</code> with <code>messageId</code>, <code>threadId</code>"#,
        r#"<code class="render-tool">render_metric_card</code> <span class="muted">(no props declared)</span>"#,
        // What it can do, riskiest first, in plain words.
        r#"<h2 id="can-do-heading">What it can do</h2>"#,
        r#"<li><span class="risk risk-high">High</span> <strong>MCP server Stripe</strong>: Runs <code>npx -y @stripe/mcp --tools=all</code> on your machine with STRIPE_SECRET_KEY</li>"#,
        r#"<strong>sandbox</strong>: May read and write files under <code>./output</code></li>"#,
        "<code>academic-researcher</code> 1.0.0",
        "“Help me catch up on emails”",
        r#"<a href="https://gmail.com" rel="noopener noreferrer nofollow">Gmail</a>"#,
        // Versions with yanked markers and reasons.
        r#"<span class="badge badge-yanked">Yanked</span><span class="yank-reason">Reason: Leaked a test API key in context/</span>"#,
        // Signer, verified and since revoked, linked.
        "Verified at publish, key since revoked",
        &format!(r#"<a class="hash" href="/keys/{REVOKED_KEY_ID}">{REVOKED_KEY_ID}</a>"#),
        &format!(r#"<code class="hash">{SHA256}</code>"#),
        "1204 of this version, 5310 in all",
        r#"<a href="/publishers/acme">acme</a> <span class="muted">(founder)</span>"#,
        r#"<a href="/publishers/dana">dana</a> <span class="muted">(owner)</span>"#,
        // Copyable snippets: install first, then pull.
        r#"<code id="install-command">agentlang install research-assistant@=1.0.0</code>"#,
        r#"data-copy="install-command" hidden>"#,
        r#"<code id="pull-command">agentlang pull research-assistant@=1.0.0</code>"#,
        r#"data-copy="pull-command" hidden>"#,
        "agents:\n  research-assistant:\n    version: 1.0.0\n    hash: sha256:",
        // Not the newest: points at 1.1.0; no earlier version to compare with.
        r#"<a href="/agents/research-assistant/1.1.0">See 1.1.0</a>"#,
    ] {
        assert!(html.contains(expected), "missing {expected:?}");
    }
    assert!(
        html.find("install-command") < html.find("pull-command"),
        "the install box leads with install"
    );
    // The size is shown human-readably.
    assert!(html.contains("47.1 KiB"));
    // The `javascript:` integration website is shown as text, never linked.
    assert!(html.contains("<li>Stripe</li>"));
    assert!(!html.contains("javascript:"));
    // Not an owner: no yank forms.
    assert!(!html.contains("/yank\""));
}

#[test]
fn owners_get_yank_and_unyank_forms() {
    let html = agent_page(true).render().unwrap();
    assert!(html.contains(
        r#"<form method="post" action="/agents/research-assistant/1.0.0/yank" class="yank-form">"#
    ));
    assert!(html.contains(r#"<form method="post" action="/agents/research-assistant/1.0.1/unyank" class="inline-form">"#));
    assert!(html.contains(r#"<label for="yank-reason-1.1.0">Reason for yanking 1.1.0</label>"#));
    assert_eq!(html.matches("/yank\"").count(), 2);
    assert_eq!(html.matches("/unyank\"").count(), 1);
}

#[test]
fn undeclared_capabilities_count_in_the_risk_and_are_listed() {
    let mut page = agent_page(false);
    page.agent.permissions.retain(|p| p.capability != "oauth");
    page.undeclared = vec![UndeclaredView {
        capability: "oauth".to_owned(),
        required: true,
        sources: vec!["http tool post_tweet".to_owned()],
    }];
    let html = page.render().unwrap();
    for expected in [
        "<strong>Highest permission risk: Critical</strong>",
        "(1 Critical, 2 High, 1 Medium, 1 Low)",
        r#"<h3 id="undeclared-permissions">Undeclared</h3>"#,
        r#"<th scope="row"><code>oauth</code> <span class="badge">undeclared</span></th>"#,
        "<td>http tool post_tweet</td>",
    ] {
        assert!(html.contains(expected), "missing {expected:?}");
    }
}

#[test]
fn risk_badge_is_high_without_identity_and_absent_without_permissions() {
    let mut page = agent_page(false);
    page.agent.permissions.retain(|p| p.capability != "oauth");
    page.statements
        .retain(|s| s.risk != agentlang_core::capability::RiskLevel::Critical);
    let html = page.render().unwrap();
    assert!(html.contains("<strong>Highest permission risk: High</strong>"));
    assert!(!html.contains("risk-critical"));

    page.agent.permissions.clear();
    let html = page.render().unwrap();
    assert!(html.contains("<strong>Requests no permissions</strong>"));
    assert!(html.contains("This agent requests no capabilities from its host."));
}

#[test]
fn newest_version_links_to_its_diff() {
    let mut page = agent_page(false);
    page.agent = fixtures::research_assistant_1_1();
    let html = page.render().unwrap();
    assert!(html.contains(r#"<a href="/agents/research-assistant/diff?from=1.0.1&#38;to=1.1.0">Compare with 1.0.1</a>"#), "{html}");
    assert!(!html.contains("This is not the newest version"));
    assert!(
        html.contains(
            r#"<a href="/agents/research-assistant/1.1.0" aria-current="page">1.1.0</a>"#
        )
    );
}

#[test]
fn yanked_version_page_says_so() {
    let mut page = agent_page(false);
    page.agent.version = Version::parse("1.0.1").unwrap();
    let html = page.render().unwrap();
    assert!(html.contains("<strong>Yanked.</strong> This version is hidden from new resolutions; existing lockfiles still get it. Reason: Leaked a test API key in context/"));
}

#[test]
fn tool_page_shows_schemas_dependencies_and_users() {
    let html = tool_page().render().unwrap();
    for expected in [
        "<h1><code>web_search</code> <span class=\"version\">1.2.0</span></h1>",
        r#"<th scope="row" class="depth-0"><code>query</code></th>
<td><code>string</code></td>
<td><strong>Required</strong></td>
<td>Search query</td>"#,
        r#"<th scope="row" class="depth-0"><code>max_results</code></th>
<td><code>integer</code></td>
<td>Optional</td>
<td></td>
<td><code>10</code></td>"#,
        r#"<code>results</code></th>
<td><code>array of object</code></td>"#,
        r#"<th scope="row" class="depth-1"><code>snippet</code><span class="visually-hidden"> in results[]</span></th>"#,
        r#"<a href="/tools/web_fetch"><code>web_fetch</code></a> <code>~1.0.0</code>"#,
        "12 agents and 1 tool depend on <code>web_search</code>; the first 2 are listed.",
        r#"<span class="tag">agent</span> <a href="/agents/research-assistant/1.1.0"><code>research-assistant</code> 1.1.0</a> requires <code>^1.2.0</code>"#,
        r#"<span class="tag">tool</span> <a href="/tools/deep_search/0.2.0">"#,
        "agentlang pull web_search@=1.2.0 --kind tool",
        "tools:\n  - name: web_search\n    version: ^1.2.0",
        r#"<form method="post" action="/tools/web_search/1.0.0/yank" class="yank-form">"#,
        r#"<pre><code>web_search(query: "rust")"#,
        r#"<h2 id="capabilities-heading">Required capabilities</h2>"#,
        r#"<li><code>storage</code> <span class="small-text">(Storage)</span> <span class="risk risk-medium">Medium</span></li>"#,
    ] {
        assert!(html.contains(expected), "missing {expected:?}");
    }
}

#[test]
fn tool_page_has_the_risk_banner_the_agent_page_has() {
    let page = tool_page();
    let levels: Vec<_> = page.tool.capabilities.iter().map(|c| c.risk()).collect();
    let top = levels
        .iter()
        .max()
        .copied()
        .expect("the fixture requires capabilities");
    let html = page.render().unwrap();
    let banner = format!(
        r#"<p class="risk-summary risk risk-{}"><strong>Highest permission risk: {}</strong>"#,
        top.as_str().to_lowercase(),
        top.as_str()
    );
    assert!(html.contains(&banner), "missing {banner:?}");
    assert!(html.contains(r##"<a href="#capabilities-heading">Review capabilities</a>"##));

    let mut bare = tool_page();
    bare.tool.capabilities.clear();
    let html = bare.render().unwrap();
    assert!(html.contains("<strong>Requires no capabilities</strong>"));
}

#[test]
fn an_mcp_tool_page_shows_its_mcp_registry_entry() {
    let mut page = tool_page();
    assert!(!page.render().unwrap().contains("mcp-heading"));
    page.mcp = Some(McpEntryView {
        server_name: "com.example.registry/web_search".to_owned(),
        server_json: "{\n  \"name\": \"com.example.registry/web_search\",\n  \"remotes\": [{\"type\": \"sse\", \"url\": \"https://x.example/sse?a=1&b=<2>\"}]\n}".to_owned(),
        url: "https://registry.example/v0.1/servers/com.example.registry%2Fweb_search/versions/1.2.0".to_owned(),
    });
    let html = page.render().unwrap();
    for expected in [
        r#"<h2 id="mcp-heading">MCP server</h2>"#,
        "the MCP server <code>com.example.registry/web_search</code>",
        r#"<a href="https://registry.example/v0.1/servers/com.example.registry%2Fweb_search/versions/1.2.0">"#,
        // The JSON is escaped, not markup.
        "https://x.example/sse?a=1&#38;b=&#60;2&#62;",
    ] {
        assert!(html.contains(expected), "missing {expected:?} in {html}");
    }
}

#[test]
fn skill_page_renders_its_skill_md_and_how_to_use_it() {
    let html = skill_page().render().unwrap();
    for expected in [
        "<title>pdf-tools 1.1.0 (skill) · AgentLang Registry</title>",
        "<h1><code>pdf-tools</code> <span class=\"version\">1.1.0</span></h1>",
        // The body, its headings nested under the section's h2.
        "<h3>PDF tools</h3>",
        "<p>Run <code>scripts/extract.py FILE</code>.</p>",
        "<h4>Tables</h4>",
        "<dt>License</dt><dd>Apache-2.0</dd>",
        r#"<dt>Compatibility</dt><dd><span class="muted">Not stated</span></dd>"#,
        "<li><code>Bash(python3:*)</code></li><li><code>Read</code></li>",
        "<dt>Metadata <code>author</code></dt><dd>example-org</dd>",
        "agentlang pull pdf-tools@=1.1.0 --kind skill",
        "skills:\n  - name: pdf-tools\n    version: ^1.1",
        r#"<a href="/api/v1/skills/pdf-tools/1.1.0/download"><code>/api/v1/skills/pdf-tools/1.1.0/download</code></a>"#,
        &format!(r#"<code class="hash">sha256:{SHA256}</code>"#),
        &format!(r#"<code class="hash">{SHA256}</code>"#),
        "lists this version, so any Agent Skills client can find it there",
        // Versions, the yanked one marked, and owners' yank controls.
        r#"<a href="/skills/pdf-tools/1.0.1">1.0.1</a>"#,
        r#"<span class="badge badge-yanked">Yanked</span>"#,
        r#"<form method="post" action="/skills/pdf-tools/1.0.0/yank" class="yank-form">"#,
        r#"<form method="post" action="/skills/pdf-tools/1.0.1/unyank" class="inline-form">"#,
        r#"<a href="/publishers/bob">bob</a>"#,
    ] {
        assert!(html.contains(expected), "missing {expected:?} in {html}");
    }
    // Publisher markdown is sanitized: the script is gone, not escaped in.
    assert!(!html.contains("alert(1)"), "{html}");
}

#[test]
fn a_skill_version_outside_the_index_says_so() {
    let mut page = skill_page();
    page.skill.version = Version::parse("2.0.0-rc.1").unwrap();
    page.skill.body_markdown = Some("\n".to_owned());
    page.index_entry.listed = false;
    page.owner_controls = None;
    let html = page.render().unwrap();
    for expected in [
        "so not this version. Its entry there would be:",
        // A prerelease is only picked by a requirement that names one.
        "version: ^2.0.0-rc.1",
        "has no instructions after its frontmatter",
    ] {
        assert!(html.contains(expected), "missing {expected:?} in {html}");
    }
    assert!(!html.contains("yank-form"));
    page.skill.body_markdown = None;
    let html = page.render().unwrap();
    assert!(
        html.contains("published before the registry kept its instructions"),
        "{html}"
    );
}

#[test]
fn tool_without_schemas_or_users_says_so() {
    let mut page = tool_page();
    page.tool.input_schema = None;
    page.tool.output_schema = None;
    page.tool.dependencies.clear();
    page.used_by = ReverseDependencies::default();
    let html = page.render().unwrap();
    assert!(html.contains("This tool declares no input schema."));
    assert!(html.contains("This tool declares no output schema."));
    assert!(html.contains("Depends on no other tools."));
    assert!(html.contains("Nothing published depends on this tool yet."));
}

#[test]
fn search_highlights_escapes_and_paginates() {
    let html = search_page("research <script>alert(1)</script> (web)*", true)
        .render()
        .unwrap();
    assert!(!html.contains("<script>alert"), "query must be escaped");
    assert!(
        html.contains("Results for “research &#60;script&#62;alert(1)&#60;/script&#62; (web)*”")
    );
    assert!(html.contains("Deep <mark>research</mark> across academic papers"));
    assert!(
        html.contains(
            r#"<a href="/agents/research-assistant"><mark>Research</mark> Assistant</a>"#
        )
    );
    // Labelled GET filters keep their state.
    assert!(html.contains(r#"<form class="filters" method="get" action="/search""#));
    assert!(html.contains(r#"<option value="agent" selected>Agents</option>"#));
    assert!(html.contains(r#"<option value="Business" selected>Business</option>"#));
    // 45 results, 2 per page, on page 3 of 23.
    assert!(html.contains("45 results<span class=\"muted\">, showing 5–6</span>"));
    assert!(html.contains(r#"aria-current="page">3</a>"#));
    assert!(html.contains(r#"rel="prev">Previous</a>"#));
    assert!(html.contains(r#"rel="next">Next</a>"#));
    assert!(html.contains(r#"aria-label="Page 23">23</a>"#));
    assert!(html.contains(
        "/search?q=research%20%3Cscript%3Ealert%281%29%3C%2Fscript%3E%20%28web%29%2A&#38;kind=agent&#38;category=Business&#38;page=4"
    ));
}

#[test]
fn empty_search_helps() {
    let html = search_page("nothing", false).render().unwrap();
    assert!(html.contains("No agents or tools match “nothing”"));
    assert!(html.contains(
        r#"<a href="/search?q=nothing">Search again without the kind and category filters</a>"#
    ));
    assert!(html.contains(r#"<a href="/search?kind=agent">all agents</a>"#));
    assert!(html.contains("Learn how to publish"));
    assert!(!html.contains("Pages of results"));
}

#[test]
fn diff_page_flags_rising_risk() {
    let html = diff_page().render().unwrap();
    for expected in [
        "<strong>Risk rises to Critical</strong> (was High)",
        r#"<span class="change change-added">Added</span> <strong class="badge badge-risk-up">Risk rises</strong></td><th scope="row"><code>wallet</code>"#,
        r#"<span class="change change-upgraded">Upgraded</span></td><th scope="row"><a href="/tools/web_search"><code>web_search</code></a></th><td>1.2.0 (^1.2.0)</td><td>1.3.0 (^1.2.0)</td>"#,
        r#"<span class="change change-added">Added</span></td><th scope="row"><a href="/tools/pdf_reader">"#,
        r#"<span class="change change-removed">Removed</span></td><th scope="row"><a href="/tools/delegate">"#,
        r#"<option value="1.0.0" selected>1.0.0</option>"#,
        r#"<option value="1.1.0" selected>1.1.0</option>"#,
        "<th scope=\"row\">Budget cap</th><td>$2.00</td><td>$5.00</td>",
        "<th scope=\"row\">a2a</th><td>^1.0.0</td><td>^2.0.0</td>",
        // Trust changes first, those that raise risk flagged.
        "<strong>2 changes give 1.1.0 powers 1.0.0 did not have.</strong>",
        r#"<td>+ MCP server <strong class="badge badge-risk-up">Risk rises</strong></td><th scope="row"><code>Stripe</code></th><td><span class="risk risk-high">High</span></td><td><span class="muted">none</span></td><td>npx -y @stripe/mcp --tools=all with STRIPE_SECRET_KEY</td>"#,
        r#"<tr><td>~ sandbox</td><th scope="row"><code>allowed_paths</code></th>"#,
    ] {
        assert!(html.contains(expected), "missing {expected:?}");
    }
    assert!(html.contains(r#"<code>wallet</code> <span class="small-text">(Identity)</span>"#));
}

#[test]
fn account_page_shows_the_new_token_once_and_every_form() {
    let html = account_page().render().unwrap();
    assert!(html.contains(r#"<section class="new-token" aria-labelledby="new-token-heading">"#));
    assert!(
        html.contains("<strong>This is the only time the token “CI publish” is shown.</strong>")
    );
    assert!(html.contains(
        r#"<code id="new-token-secret" class="hash">agl_secret_token_value_0123456789</code>"#
    ));
    assert!(html.contains(r#"<form method="post" action="/account/tokens/tok_1/revoke""#));
    assert!(html.contains(r#"<form method="post" action="/account/tokens""#));
    assert!(
        html.contains(
            r#"<input id="scope-publish" type="checkbox" name="scopes" value="publish">"#
        )
    );
    assert!(html.contains(r#"<option value="90" selected>90 days</option>"#));
    assert!(html.contains(r#"<textarea id="key-pem" name="public_key_pem""#));
    assert!(html.contains(&format!(
        r#"<form method="post" action="/account/keys/{KEY_ID}/revoke""#
    )));
    // A revoked key has no revoke button.
    assert!(!html.contains(&format!("/account/keys/{REVOKED_KEY_ID}/revoke")));
    assert!(html.contains(
        r#"<form method="post" action="/account/agents/research-assistant/owners/remove""#
    ));
    assert!(html.contains(r#"<form method="post" action="/account/agents/research-assistant/owners" class="inline-form add-owner">"#));
    assert!(html.contains(r#"<div class="notice notice-error" role="alert"><ul><li>That key is already registered.</li></ul></div>"#));
    // Proof of possession, invitations, password, sessions, activity.
    assert!(html.contains(r#"<input id="key-proof" name="proof" type="text" required"#));
    assert!(html.contains("<code>agentlang-key-registration:acme:&#60;key id&#62;</code>"));
    assert!(html.contains("<li>erin <span class=\"muted\">(invited)</span></li>"));
    assert!(
        html.contains(
            r#"<form method="post" action="/account/invitations/tools/web-search/accept""#
        )
    );
    assert!(
        html.contains(
            r#"<form method="post" action="/account/invitations/tools/web-search/decline""#
        )
    );
    assert!(html.contains(r#"<form method="post" action="/account/password""#));
    assert!(html.contains(r#"<form method="post" action="/account/sessions/end-all""#));
    assert!(html.contains("<th scope=\"row\"><code>token_created</code></th><td>CI publish</td>"));

    let mut later = account_page();
    later.new_token = None;
    let html = later.render().unwrap();
    assert!(!html.contains("agl_secret_token_value"));
    assert!(!html.contains("new-token"));
}

#[test]
fn login_and_error_pages() {
    let (_, login) = all_pages()
        .into_iter()
        .find(|(n, _)| *n == "login")
        .unwrap();
    assert!(login.contains(r#"<div class="notice notice-error" role="alert" id="login-error"><p>The username or password is not right.</p></div>"#));
    assert!(login.contains(r#"autocomplete="current-password""#));
    assert!(login.contains(r#"value="acme" aria-describedby="login-error""#));
    assert!(login.contains(r#"<a href="/login">Sign in</a>"#));

    let (_, error) = all_pages()
        .into_iter()
        .find(|(n, _)| *n == "error")
        .unwrap();
    assert!(error.contains("<h1>Something went wrong on our side</h1>"));
    assert!(error.contains("Error 500 · reference <code>req-7f3a</code>"));
    let not_allowed = ErrorPage::new(Chrome::default(), 403, None)
        .render()
        .unwrap();
    assert!(not_allowed.contains("<h1>You do not have access to this</h1>"));
}

#[test]
fn signed_in_header_has_a_sign_out_form() {
    let html = agent_page(false).render().unwrap();
    assert!(html.contains(r#"<li><a href="/account">acme</a></li>"#));
    assert!(html.contains(r#"<form method="post" action="/logout" class="inline-form"><input type="hidden" name="csrf_token" value="csrf-session-token">"#));
}

#[test]
fn agent_page_links_its_a2a_card_only_when_it_has_one() {
    let html = agent_page(false).render().unwrap();
    assert!(
        html.contains(
            r#"<code>https://agents.acme.example/research/a2a</code> (JSONRPC, A2A 1.0)"#
        ),
        "{html}"
    );
    assert!(
        html.contains(
            r#"<a href="/agents/research-assistant/1.0.0/agent-card.json">Agent Card</a>"#
        ),
        "{html}"
    );
    let mut page = agent_page(false);
    page.a2a_card = None;
    assert!(!page.render().unwrap().contains("agent-card.json"));
}

#[test]
fn agent_page_shows_quality_protocol_notices_and_default_constraints() {
    let html = agent_page(false).render().unwrap();
    assert!(html.contains("<strong>1 warning</strong>"), "{html}");
    assert!(html.contains("<code>undeclared-tool</code>"), "{html}");
    assert!(html.contains("prompt.yaml: sections[3].content"), "{html}");
    assert!(
        html.contains("Not checked: <code>unused-tool</code>"),
        "{html}"
    );
    assert!(
        html.contains("<strong>Deprecated:</strong> a2a 1.0.0 is deprecated, migrate to 2.0.0"),
        "{html}"
    );
    let mut page = agent_page(false);
    page.agent.constraints = ConstraintsView::default();
    page.quality = None;
    let html = page.render().unwrap();
    assert!(
        html.contains("<dt>Max delegation depth</dt><dd>3 (default)</dd>"),
        "{html}"
    );
    assert!(
        html.contains("published before the registry reviewed prompts"),
        "{html}"
    );
}

#[test]
fn replay_page_draws_lanes_arrows_and_errors() {
    let html = replay_page(true).render().unwrap();
    assert!(html.contains("session.jsonl: 4 events, 2 agents"), "{html}");
    assert_eq!(html.matches("class=\"lane-head\"").count(), 2);
    assert!(html.contains("arrow arrow-from arrow-right"), "{html}");
    assert!(
        html.contains("arrow arrow-to arrow-right event-cell"),
        "{html}"
    );
    assert!(html.contains("<strong>Error:</strong> timeout"), "{html}");
    assert_eq!(html.matches("event-row is-error").count(), 1);
    let form = replay_page(false).render().unwrap();
    assert!(form.contains("at most 1.0 MiB and 5000 events"), "{form}");
    assert!(!form.contains("timeline-section"));
}

#[test]
fn protocol_page_lists_versions_with_status_and_how_to_declare() {
    let html = protocol_page().render().unwrap();
    assert!(html.contains("<code>custom/acme-sync</code>"), "{html}");
    assert!(html.contains("status status-deprecated"), "{html}");
    assert!(html.contains("version: ^1.1.0"), "{html}");
    assert!(
        html.contains("href=\"/protocols/acme-sync/1.1.0\""),
        "{html}"
    );
}

#[test]
fn agent_page_snapshot() {
    insta::assert_snapshot!(agent_page(true).render().unwrap());
}

#[test]
fn skill_page_snapshot() {
    insta::assert_snapshot!(skill_page().render().unwrap());
}

#[test]
fn tool_page_shows_how_a_runtime_reaches_it() {
    let html = tool_page().render().unwrap();
    assert!(
        html.contains(r#"<h2 id="binding-heading">HTTP endpoint</h2>"#),
        "{html}"
    );
    assert!(
        html.contains("endpoint: https://search.example/api"),
        "{html}"
    );
    let mut page = tool_page();
    page.binding = None;
    assert!(!page.render().unwrap().contains("binding-heading"));
}
