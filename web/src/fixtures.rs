//! Example view models built from the spec's research-assistant example, with
//! every section present. Used by this crate's tests, and available to the
//! server's tests and to page previews.

use agentlang_core::{Kind, PackageName, Version};
use serde_json::json;
use time::macros::datetime;

use crate::model::*;

fn name(s: &str) -> PackageName {
    PackageName::new(s).expect("fixture names are valid")
}

fn version(s: &str) -> Version {
    Version::parse(s).expect("fixture versions are valid")
}

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue::new(key, value)
}

pub fn jan(day: u8) -> Timestamp {
    Timestamp(
        datetime!(2025-01-01 10:30:00 UTC)
            .replace_day(day)
            .expect("fixture days are valid"),
    )
}

/// A signed-in session, as the header sees it.
pub fn signed_in_chrome() -> Chrome {
    Chrome {
        user: Some(SessionUser {
            username: "acme".to_owned(),
            csrf_token: "csrf-session-token".to_owned(),
        }),
        search_query: String::new(),
    }
}

pub const KEY_ID: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
pub const REVOKED_KEY_ID: &str = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752";
pub const SHA256: &str = "e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80912";

/// research-assistant 1.0.0 from the spec, every section filled.
pub fn research_assistant() -> AgentVersionView {
    AgentVersionView {
        name: name("research-assistant"),
        version: version("1.0.0"),
        title: "Research Assistant".to_owned(),
        subtitle: Some("McKinsey-grade research".to_owned()),
        description_markdown:
            "Deep research across academic papers, market reports, and web sources.\n\
            Synthesizes findings into actionable reports.\n\n\
            ## Sources\n\n- arXiv\n- [Semantic Scholar](https://www.semanticscholar.org)\n"
                .to_owned(),
        developer: Some("acme".to_owned()),
        category: Some("Business".to_owned()),
        tools: vec![
            ToolPin {
                name: name("web_search"),
                requirement: Some("^1.2.0".to_owned()),
                locked: Some(version("1.2.0")),
                provider: None,
            },
            ToolPin {
                name: name("web_fetch"),
                requirement: None,
                locked: Some(version("1.0.0")),
                provider: None,
            },
            ToolPin {
                name: name("artifacts"),
                requirement: None,
                locked: Some(version("2.1.0")),
                provider: None,
            },
            ToolPin {
                name: name("sqlite"),
                requirement: None,
                locked: Some(version("1.4.2")),
                provider: None,
            },
            ToolPin {
                name: name("delegate"),
                requirement: None,
                locked: Some(version("0.3.0")),
                provider: None,
            },
        ],
        models: vec![ModelView {
            name: "claude-sonnet-4".to_owned(),
            provider: Some("anthropic".to_owned()),
            options: vec![kv("temperature", "0.7"), kv("max_tokens", "8192")],
        }],
        permissions: vec![
            PermissionView {
                capability: "network".to_owned(),
                required: true,
                mode: None,
                reason: Some("Search and fetch web sources".to_owned()),
                details: vec![],
            },
            PermissionView {
                capability: "storage".to_owned(),
                required: true,
                mode: None,
                reason: Some("Keep citations between sessions".to_owned()),
                details: vec![],
            },
            PermissionView {
                capability: "microphone".to_owned(),
                required: false,
                mode: Some("on_demand".to_owned()),
                reason: Some("Voice commands and meeting transcription".to_owned()),
                details: vec![],
            },
            PermissionView {
                capability: "background".to_owned(),
                required: false,
                mode: Some("scheduled".to_owned()),
                reason: Some("Hourly inbox check".to_owned()),
                details: vec![kv("schedule", "0 * * * *"), kv("max_runtime", "60")],
            },
            PermissionView {
                capability: "oauth".to_owned(),
                required: false,
                mode: Some("user_triggered".to_owned()),
                reason: Some("Read papers behind your library login".to_owned()),
                details: vec![],
            },
        ],
        constraints: ConstraintsView {
            budget: BudgetView {
                max_cost_usd: Some(2.0),
                tolerance: Some(0.2),
                input_1m_price: Some(3.0),
                output_1m_price: Some(15.0),
            },
            limits: LimitsView {
                max_turns: Some(50),
                max_delegation_depth: Some(3),
                timeout_seconds: Some(300),
            },
            sandbox: SandboxView {
                disk_quota_bytes: Some(1_073_741_824),
                max_exec_time_seconds: Some(60),
                allowed_paths: vec!["./output".to_owned(), "./data".to_owned()],
                allowed_urls: vec![
                    "https://api.example.com".to_owned(),
                    "https://*.googleapis.com".to_owned(),
                ],
            },
        },
        protocols: vec![
            ProtocolView {
                name: "a2a".to_owned(),
                requirement: Some("^1.0.0".to_owned()),
            },
            ProtocolView {
                name: "mcp".to_owned(),
                requirement: Some("^2024.11".to_owned()),
            },
        ],
        skills: vec![SkillView {
            name: "test-helper".to_owned(),
            description: Some("Skill for testing capabilities".to_owned()),
            allowed_tools: vec!["sqlite".to_owned(), "delegate".to_owned()],
        }],
        ui_components: vec![
            UiComponentView {
                name: "email_card".to_owned(),
                render_tool: "render_email_card".to_owned(),
                props: vec!["messageId".to_owned(), "threadId".to_owned()],
                sync_actions: vec![
                    SyncActionView {
                        name: "archive".to_owned(),
                        tool: "gmail_modify_labels".to_owned(),
                    },
                    SyncActionView {
                        name: "star".to_owned(),
                        tool: "gmail_modify_labels".to_owned(),
                    },
                ],
                agent_actions: vec!["reply".to_owned(), "summarize".to_owned()],
            },
            UiComponentView {
                name: "metric_card".to_owned(),
                render_tool: "render_metric_card".to_owned(),
                props: vec![],
                sync_actions: vec![],
                agent_actions: vec![],
            },
        ],
        subagents: vec![
            SubagentView {
                name: "academic-researcher".to_owned(),
                description: Some(
                    "Specialist in research papers, academic publications, and scholarly work."
                        .to_owned(),
                ),
                locked_version: Some(version("1.0.0")),
                hash: Some(format!("sha256:{SHA256}")),
            },
            SubagentView {
                name: "market-analyst".to_owned(),
                description: None,
                locked_version: None,
                hash: None,
            },
        ],
        ux: UxView {
            suggestions: vec![
                "Help me catch up on emails".to_owned(),
                "What's my MRR this month?".to_owned(),
            ],
            integrations: vec![
                IntegrationView {
                    name: "Gmail".to_owned(),
                    website: Some("https://gmail.com".to_owned()),
                },
                IntegrationView {
                    name: "Stripe".to_owned(),
                    website: Some("javascript:alert(1)".to_owned()),
                },
            ],
        },
    }
}

/// research-assistant 1.1.0: a newer web_search, a wallet capability, a
/// bigger budget and a2a v2.
pub fn research_assistant_1_1() -> AgentVersionView {
    let mut agent = research_assistant();
    agent.version = version("1.1.0");
    agent.tools[0].locked = Some(version("1.3.0"));
    agent.tools.retain(|t| t.name.as_str() != "delegate");
    agent.tools.push(ToolPin {
        name: name("pdf_reader"),
        requirement: Some("^0.4".to_owned()),
        locked: Some(version("0.4.2")),
        provider: None,
    });
    agent.permissions.push(PermissionView {
        capability: "wallet".to_owned(),
        required: false,
        mode: Some("user_triggered".to_owned()),
        reason: Some("Pay for paywalled reports".to_owned()),
        details: vec![],
    });
    agent.constraints.budget.max_cost_usd = Some(5.0);
    agent.protocols[0].requirement = Some("^2.0.0".to_owned());
    agent
}

pub fn versions() -> Vec<VersionSummary> {
    vec![
        VersionSummary {
            version: version("1.1.0"),
            published_at: jan(20),
            yanked: None,
            status: None,
        },
        VersionSummary {
            version: version("1.0.1"),
            published_at: jan(12),
            yanked: Some(Yank {
                reason: Some("Leaked a test API key in context/".to_owned()),
            }),
            status: None,
        },
        VersionSummary {
            version: version("1.0.0"),
            published_at: jan(5),
            yanked: None,
            status: None,
        },
    ]
}

pub fn artifact() -> ArtifactView {
    ArtifactView {
        sha256: SHA256.to_owned(),
        size_bytes: 48_213,
        downloads: 1_204,
        published_at: jan(5),
        signer: SignerView {
            key_id: REVOKED_KEY_ID.to_owned(),
            key_owner: "acme".to_owned(),
            key_revoked_at: Some(jan(25)),
        },
        log_index: Some(1_207),
        built_by: Some(BuiltBy {
            repository: Some("acme/support-agent".to_owned()),
            workflow: Some(".github/workflows/release.yml".to_owned()),
            commit: Some("4f2b9c1e".to_owned()),
            href: "/api/v1/agents/support-agent/1.4.2/provenance".to_owned(),
        }),
    }
}

pub fn web_search_tool() -> ToolVersionView {
    ToolVersionView {
        provides: vec![name("search")],
        name: name("web_search"),
        version: version("1.2.0"),
        description_markdown:
            "Find current information across the web.\n\n```\nweb_search(query: \"rust\")\n```\n"
                .to_owned(),
        capabilities: vec![
            agentlang_core::capability::Capability::Storage,
            agentlang_core::capability::Capability::Network,
        ],
        input_schema: Some(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query"},
                "max_results": {"type": "integer", "default": 10}
            },
            "required": ["query"]
        })),
        output_schema: Some(json!({
            "type": "object",
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string"},
                            "url": {"type": "string"},
                            "snippet": {"type": "string"}
                        }
                    }
                },
                "total_count": {"type": "integer"}
            }
        })),
        dependencies: vec![ToolDependencyView {
            name: name("web_fetch"),
            requirement: "~1.0.0".to_owned(),
        }],
    }
}

pub fn reverse_dependencies() -> ReverseDependencies {
    ReverseDependencies {
        agent_count: 12,
        tool_count: 1,
        items: vec![
            DependentView {
                package: VersionRef {
                    kind: Kind::Agent,
                    name: name("research-assistant"),
                    version: version("1.1.0"),
                },
                requirement: "^1.2.0".to_owned(),
            },
            DependentView {
                package: VersionRef {
                    kind: Kind::Tool,
                    name: name("deep_search"),
                    version: version("0.2.0"),
                },
                requirement: "^1".to_owned(),
            },
        ],
    }
}

pub fn package_summaries() -> Vec<PackageSummary> {
    vec![
        PackageSummary {
            kind: Kind::Agent,
            name: name("research-assistant"),
            version: version("1.1.0"),
            title: Some("Research Assistant".to_owned()),
            summary: "Deep research across academic papers, market reports, and web sources."
                .to_owned(),
            category: Some("Business".to_owned()),
            downloads: 1_204,
            published_at: jan(20),
            risk: Some(agentlang_core::capability::RiskLevel::Critical),
        },
        PackageSummary {
            kind: Kind::Tool,
            name: name("web_search"),
            version: version("1.2.0"),
            title: None,
            summary: "Find current information across the web.".to_owned(),
            category: None,
            downloads: 98_310,
            published_at: jan(3),
            risk: None,
        },
    ]
}

pub fn keys() -> Vec<KeySummary> {
    vec![
        KeySummary {
            key_id: KEY_ID.to_owned(),
            created_at: jan(2),
            revoked_at: None,
        },
        KeySummary {
            key_id: REVOKED_KEY_ID.to_owned(),
            created_at: jan(1),
            revoked_at: Some(jan(25)),
        },
    ]
}

/// What the research assistant reaches outside itself with, as
/// `core::trust` states it.
pub fn statements() -> Vec<agentlang_core::trust::Statement> {
    use agentlang_core::{capability::RiskLevel, trust::Statement};
    let statement = |risk, subject: &str, before: &str, code: &str, after: &str| Statement {
        risk,
        subject: subject.to_owned(),
        before: before.to_owned(),
        code: Some(code.to_owned()),
        after: after.to_owned(),
    };
    vec![
        statement(
            RiskLevel::Critical,
            "HTTP tool twitter_post_tweet",
            "Sends POST requests to",
            "/api/v1/twitter/tweets",
            "with your twitter OAuth token",
        ),
        statement(
            RiskLevel::High,
            "MCP server Stripe",
            "Runs",
            "npx -y @stripe/mcp --tools=all",
            "on your machine with STRIPE_SECRET_KEY",
        ),
        statement(
            RiskLevel::Medium,
            "sandbox",
            "May read and write files under",
            "./output",
            "",
        ),
    ]
}

/// The trust changes from 1.0.0 to 1.1.0: a new MCP server and OAuth.
pub fn trust_diff() -> agentlang_core::trust::TrustDiff {
    use agentlang_core::{
        capability::RiskLevel,
        trust::{ChangeClass, ChangeKind, TrustChange, TrustDiff},
    };
    TrustDiff {
        risk_before: Some(RiskLevel::High),
        risk_after: Some(RiskLevel::Critical),
        risk_rose: true,
        changes: vec![
            TrustChange {
                class: ChangeClass::Capability,
                kind: ChangeKind::Added,
                subject: "oauth".to_owned(),
                from: None,
                to: Some("required, by http tool twitter_post_tweet".to_owned()),
                risk: RiskLevel::Critical,
                raises_risk: true,
            },
            TrustChange {
                class: ChangeClass::McpServer,
                kind: ChangeKind::Added,
                subject: "Stripe".to_owned(),
                from: None,
                to: Some("npx -y @stripe/mcp --tools=all with STRIPE_SECRET_KEY".to_owned()),
                risk: RiskLevel::High,
                raises_risk: true,
            },
            TrustChange {
                class: ChangeClass::Sandbox,
                kind: ChangeKind::Changed,
                subject: "allowed_paths".to_owned(),
                from: Some("./output, ./data".to_owned()),
                to: Some("./output".to_owned()),
                risk: RiskLevel::Medium,
                raises_risk: false,
            },
        ],
    }
}
