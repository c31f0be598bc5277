//! The AgentLang spec's own examples, verbatim: every key, value and
//! comment as the spec writes it (indentation restored where the spec's
//! text lost it). Each must validate, or, where the project is stricter
//! than the spec (docs/agent-yaml.md, "Stricter than the spec"), fail with
//! exactly the rule that list names.
//!
//! A fragment (a `tools:` list, a `permissions:` block) is embedded in the
//! smallest agent that holds it: [`HEAD`] (name, version, description),
//! plus whatever the fragment refers to (a tool an action calls, a
//! component a tool renders), said next to each test. The package's prompt
//! is the spec's own prompt.yaml.

use agentlang_core::{
    Diagnostics, MemberPath, SourceTree,
    events::{self, Limits},
    package::{AgentPackage, validate_agent_tree},
};

/// What every embedded fragment is given: the top-level agent's required
/// fields.
const HEAD: &str =
    "name: spec-example\nversion: 1.0.0\ndescription: An example from the AgentLang spec.\n";

/// Prompt Format (PromptLang).
const PROMPT: &str = r#"# prompt.yaml
version: 2
role: user
sections:
  - name: mindset
    content: |
      You are genuinely trying to discover something that doesn't exist yet.
      When you derive something, ask: "Have I seen this before?"
      If yes, that's a signal to try something else.
  - name: who_you_are
    content: |
      You're the person who checks their own work obsessively.
      Not because you're told to - because you genuinely want to know.
  - name: your_tools
    content: |
      web_search - Find current information across the web
      web_fetch - Read detailed content from specific URLs
      artifacts - Save reports and findings for the user
      sqlite - Query and store structured research data
  - name: workflow
    content: |
      1. Check user_memory for existing context
      2. Search multiple sources (academic, news, industry)
      3. Cross-reference findings
      4. Store citations in sqlite
      5. Synthesize into artifacts
"#;

/// Agent Definition. The spec's text shows the `tools:` list twice, the
/// second time with `delegate` added; one mapping cannot hold a key twice
/// (YAML), so the complete, second list is the one kept here.
const AGENT_DEFINITION: &str = r#"name: research-assistant
version: 1.0.0
title: Research Assistant
subtitle: McKinsey-grade research
description: |
  Deep research across academic papers, market reports, and web sources.
  Synthesizes findings into actionable reports.
developer: acme
category: Business
models:
  claude-sonnet-4:
    provider: anthropic
    options:
      temperature: 0.7
      max_tokens: 8192
tools:
  - name: web_search
    version: ^1.2.0
  - name: web_fetch
  - name: artifacts
  - name: sqlite
    config:
      tables:
        citations:
          columns:
            id: { type: integer, primary_key: true }
            url: { type: text, required: true }
            title: { type: text }
            relevance: { type: real }
  - name: delegate
    config:
      max_depth: 3
# Co-located subagents (discovered automatically)
# ./specialists/academic-researcher.yaml
# ./specialists/market-analyst.yaml
"#;

/// Tool Declaration.
const TOOL_DECLARATION: &str = r#"tools:
  - name: web_search
    version: ^1.2.0        # Semver constraint
  - name: web_fetch
    version: ~1.0.0        # Patch updates only
  - name: artifacts        # Latest compatible
  - name: storage          # Abstract storage interface
    config:
      schema:              # Tool-specific config
        tables:
          records:
            columns:
              id: { type: integer, primary_key: true }
              data: { type: text, required: true }
"#;

/// Tool Schemas (MCP Extension).
const TOOL_SCHEMAS: &str = r#"# Tool definition with input + output schemas
tools:
  - name: web_search
    version: ^1.2.0
    input_schema:           # Standard MCP
      type: object
      properties:
        query:
          type: string
          description: "Search query"
        max_results:
          type: integer
          default: 10
      required: [query]
    output_schema:          # AgentLang extension
      type: object
      properties:
        results:
          type: array
          items:
            type: object
            properties:
              title: { type: string }
              url: { type: string }
              snippet: { type: string }
        total_count:
          type: integer
"#;

/// MCP Servers.
const MCP_SERVERS: &str = r#"mcp_servers:
  Stripe:
    command: npx
    args: ["-y", "@stripe/mcp", "--tools=all"]
    env:
      STRIPE_SECRET_KEY: "{{.env.STRIPE_SECRET_KEY}}"
    tools:  # Whitelist (optional)
      - list_subscriptions
      - list_customers
      - list_invoices
"#;

/// HTTP Tools (OAuth APIs).
const HTTP_TOOLS: &str = r#"http_tools:
  twitter_post_tweet:
    description: "Post a tweet to Twitter/X"
    endpoint: "/api/v1/twitter/tweets"
    method: POST
    auth: bearer
    twitter_token: true  # Requires OAuth
    params:
      text:
        type: string
        description: "Tweet text (max 280 chars)"
        required: true
      reply_to:
        type: string
        required: false
    body_template: '{
      "text": "{{text}}"
      {{if reply_to}}, "reply_to": "{{reply_to}}"{{end}}
      }'
"#;

/// Bash Tools (Scoped Commands).
const BASH_TOOLS: &str = r#"bash_tools:
  convert_video:
    description: "Convert video to different format"
    command: ffmpeg
    help_command: "ffmpeg -h"
    labels:
      running: "Converting video"
      finished: "Conversion complete"
    dependencies:
      - name: ffmpeg
        check: "ffmpeg -version"
        install:
          darwin: "brew install ffmpeg"
          linux: "apt-get install ffmpeg"
"#;

/// Permissions: Capability Declaration. `background` is scheduled with a
/// reason and no schedule: it wakes when the host chooses.
const CAPABILITY_DECLARATION: &str = r#"permissions:
  required:
    - network          # Internet access
    - storage          # Persist data between sessions
  optional:
    - microphone       # Audio input
    - camera           # Video input
    - screen_capture   # Screenshot/recording
    - filesystem       # Read/write local files
    - notifications    # System notifications
    - background       # Run when user isn't active
    - location         # GPS/IP location

  # Capability-specific config
  microphone:
    mode: on_demand    # user_triggered | on_demand | continuous
    reason: "Voice commands and meeting transcription"

  camera:
    mode: on_demand
    reason: "Security monitoring when requested"

  background:
    mode: scheduled    # scheduled | continuous
    reason: "Hourly inbox check"
"#;

/// Autonomous Operations.
const AUTONOMOUS_OPERATIONS: &str = r#"# User asks: "Check my camera every hour while I'm away
# and send me a photo of what things look like"

permissions:
  required:
    - camera
    - background
    - notifications

  camera:
    mode: scheduled
    reason: "Periodic security snapshots"
    schedule: "0 * * * *"      # Cron: every hour

  background:
    mode: scheduled
    wake_triggers:
      - schedule: "0 * * * *"  # Matches camera schedule
    max_runtime: 60            # Seconds per wake

  notifications:
    mode: on_demand
    channels:
      - push    # Mobile push
      - email   # Fallback
"#;

/// Context Management.
const CONTEXT: &str = r#"context:
  # Sliding window for conversation history
  window:
    max_tokens: 100000
    strategy: sliding        # sliding | summarize | truncate

  # Compaction when context fills up
  compaction:
    strategy: summarize      # summarize | drop_oldest | checkpoint
    trigger: 0.8             # Compact at 80% capacity
    preserve:
      - tool_results         # Never drop tool outputs
      - user_messages        # Keep recent user turns

  # Injected context (available as template vars)
  inject:
    - time                   # Current timestamp
    - location               # User location (if permitted)
    - user_profile           # From runtime user store
"#;

/// Dynamic Orchestration: the orchestrator.
const DYNAMIC_ORCHESTRATOR: &str = r#"# Orchestrator (agent.yaml)
tools:
  - name: delegate
    config:
      mode: dynamic          # LLM picks specialists
      discovery: directory   # Find co-located *.yaml files
      max_depth: 3
"#;

/// Dynamic Orchestration: a discovered specialist.
const ACADEMIC_RESEARCHER: &str = r#"# Subagent definition (academic-researcher.yaml)
name: academic-researcher
description: |
  Specialist in research papers, academic publications,
  and scholarly work.
# ^ Description used for capability-based routing
tools:
  - name: web_search
  - name: artifacts
"#;

/// Static Orchestration.
const STATIC_CREW: &str = r#"# Static crew (agent.yaml)
delegate:
  mode: static
  process: sequential    # sequential | parallel | hierarchical
  agents:
    - path: ./researcher.yaml
      task: "Research the topic thoroughly"
    - path: ./writer.yaml
      task: "Write a report based on research"
      depends_on: [researcher]   # Waits for researcher to complete
"#;

/// Protocol Declaration.
const PROTOCOLS: &str = r#"protocols:
  - name: a2a            # Agent-to-agent messaging
    version: ^1.0.0
  - name: mcp            # Tool interface
    version: ^2024.11
"#;

/// Versioning and Deprecation.
const PROTOCOL_VERSIONING: &str = r#"protocols:
  - name: a2a
    version: ^2.0.0      # Stable
    # When v1 deprecated:
    # - Runtime warns: "a2a v1 deprecated, migrate to v2"
    # - Conversion layer translates v1 <-> v2
    # - Eventually v1 removed, old agents fail validation
"#;

/// Custom Protocols.
const CUSTOM_PROTOCOLS: &str = r#"protocols:
  - name: custom/acme-sync    # Namespaced custom protocol
    version: ^1.0.0

# Custom protocol definition (published separately or inline)
x-protocols:
  acme-sync:
    version: 1.0.0
    schema:
      message_format: json
      transport: websocket
      auth: bearer
"#;

/// Execution Constraints: Budget.
const BUDGET: &str = r#"constraints:
  budget:
    max_cost_usd: 2.00        # Hard cap in dollars
    tolerance: 0.20           # Allow 20% overage before cutoff
    input_1m_price: 3.00      # $/1M input tokens (model-specific)
    output_1m_price: 15.00    # $/1M output tokens

# When budget runs low, runtime injects a warning
# into the agent's context so it can wrap up gracefully
"#;

/// Execution Limits.
const LIMITS: &str = r#"constraints:
  limits:
    max_turns: 50               # Conversation turn cap (0 = unlimited)
    max_delegation_depth: 3     # How deep agent chains can go
    timeout: 300                # Max execution time in seconds

  sandbox:
    disk_quota: 1073741824      # 1GB max disk usage
    max_exec_time: 60           # Max seconds per tool invocation
    allowed_paths:              # Filesystem restrictions
      - "./output"
      - "./data"
    allowed_urls:               # Network restrictions
      - "https://api.example.com"
      - "https://*.googleapis.com"
"#;

/// Generative UI: Dual-Path Action Routing.
const UI_COMPONENTS: &str = r#"ui_components:
  email_card:
    # Sync actions: execute immediately, no LLM involved
    sync_actions:
      archive:
        tool: gmail_modify_labels
        params:
          message_id: "{{messageId}}"
          remove_labels: "INBOX"
      star:
        tool: gmail_modify_labels
        params:
          message_id: "{{messageId}}"
          add_labels: "STARRED"

    # Agent actions: route to LLM for reasoning
    agent_actions:
      reply:
        params:
          messageId: "{{messageId}}"
          threadId: "{{threadId}}"
      summarize:
        params:
          threadId: "{{threadId}}"

  video_player: {}
  metric_card: {}
"#;

/// Tool UI Rendering.
const TOOL_UI: &str = r#"http_tools:
  generate_headshot:
    endpoint: /api/v1/proxy
    method: POST
    params:
      input_image: { type: string, required: true }
    ui_component:
      completed:
        component: headshot_gallery
        props:
          images: "{{json.messages[0].images}}"
          cost: "{{json.usage.cost_usd}}"
        actions:
          sync_actions:
            download:
              tool: system://download_file
              params: { url: "{{selectedImage}}" }
          agent_actions:
            - regenerate
      failed:
        component: error_card
        props:
          message: "{{error}}"
"#;

/// Skills: the skill file, at `skills/test-helper/SKILL.md` (the spec's
/// caption, `# agents/my-agent/skills/test-helper/SKILL.md`, names the file
/// and is not part of it: frontmatter opens a SKILL.md).
const SKILL_MD: &str = r#"---
name: test-helper
description: Skill for testing capabilities
allowed-tools:
  - sqlite
  - delegate
---

# Test Helper Skill

When testing a tool:
1. Call with minimal valid input
2. Validate response structure
3. Test edge cases
4. Document results
"#;

/// Skills: the agent's reference.
const SKILLS: &str = r#"# agent.yaml
skills:
  - name: test-helper    # Restricts to: sqlite, delegate only
"#;

/// UX Hints.
const UX: &str = r#"integrations:
  - name: Gmail
    website: https://gmail.com
  - name: Stripe
    website: https://stripe.com

suggestions:
  - "Help me catch up on emails"
  - "What's my MRR this month?"

tools:
  gmail_list_messages:
    labels:
      running: "Loading inbox"
      finished: "Loaded inbox"
    suggestions:
      - "Show my unread emails"

mcp_tools:
  playwright-web:
    web_navigate:
      labels:
        running: "Navigating"
        finished: "Navigation complete"
"#;

/// Events: Event Schema.
const EVENTS: &str = r#"events:
  - type: agent.think
    timestamp: 2025-01-29T10:00:00Z
    agent_id: researcher
    content: "I should search for recent papers..."

  - type: tool.call
    timestamp: 2025-01-29T10:00:01Z
    agent_id: researcher
    tool: web_search
    input: { query: "transformer architectures 2025" }
    call_id: abc123

  - type: tool.result
    timestamp: 2025-01-29T10:00:03Z
    call_id: abc123
    output: { results: [...] }
    duration_ms: 2000

  - type: agent.delegate
    timestamp: 2025-01-29T10:00:05Z
    from: orchestrator
    to: academic-researcher
    task: "Analyze these findings"

  - type: agent.message
    timestamp: 2025-01-29T10:00:10Z
    agent_id: researcher
    role: assistant
    content: "Based on my analysis..."
"#;

fn tree(files: &[(&str, &str)]) -> SourceTree {
    files
        .iter()
        .map(|(p, b)| (MemberPath::new(*p).unwrap(), b.as_bytes().to_vec()))
        .collect()
}

/// `fragment` under [`HEAD`], with the spec's prompt and `more` files.
fn embedded(fragment: &str, more: &[(&str, &str)]) -> Result<AgentPackage, Diagnostics> {
    let agent = format!("{HEAD}{fragment}");
    let mut files = vec![("agent.yaml", agent.as_str()), ("prompt.yaml", PROMPT)];
    files.extend_from_slice(more);
    validate_agent_tree(&tree(&files))
}

#[track_caller]
fn validates(fragment: &str, more: &[(&str, &str)]) -> AgentPackage {
    embedded(fragment, more).unwrap_or_else(|d| panic!("the spec's example fails:\n{d}"))
}

#[test]
fn the_agent_definition_and_its_prompt() {
    let pkg = validate_agent_tree(&tree(&[
        ("agent.yaml", AGENT_DEFINITION),
        ("prompt.yaml", PROMPT),
    ]))
    .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(pkg.agent.name.as_str(), "research-assistant");
    assert_eq!(pkg.agent.tools.len(), 5);
}

#[test]
fn tool_declarations_and_schemas() {
    validates(TOOL_DECLARATION, &[]);
    validates(TOOL_SCHEMAS, &[]);
}

#[test]
fn mcp_http_and_bash_tools() {
    validates(MCP_SERVERS, &[]);
    validates(HTTP_TOOLS, &[]);
    validates(BASH_TOOLS, &[]);
}

#[test]
fn the_capability_declaration_with_an_unscheduled_background() {
    let pkg = validates(CAPABILITY_DECLARATION, &[]);
    let perms = pkg.agent.permissions.unwrap();
    assert_eq!(perms.optional.len(), 7);
    assert_eq!(perms.config.len(), 3);
}

#[test]
fn autonomous_operations() {
    validates(AUTONOMOUS_OPERATIONS, &[]);
}

#[test]
fn context_management() {
    // `location` is injected "if permitted": the agent asks for it.
    let with_permission = format!("{CONTEXT}permissions:\n  optional: [location]\n");
    validates(&with_permission, &[]);
}

/// Stricter than the spec (docs/agent-yaml.md): the context example
/// injects location without the agent asking for the capability.
#[test]
fn context_management_alone_needs_the_location_permission() {
    let d = embedded(CONTEXT, &[]).unwrap_err();
    let found: Vec<(&str, &str, Option<&str>)> = d
        .iter()
        .map(|d| {
            (
                d.file.as_deref().unwrap_or(""),
                d.path.as_str(),
                d.rule.map(|r| r.slug()),
            )
        })
        .collect();
    assert_eq!(
        found,
        [(
            "agent.yaml",
            "context.inject[1]",
            Some("context-permission")
        )],
        "{d}"
    );
}

#[test]
fn dynamic_and_static_orchestration() {
    let pkg = validates(
        DYNAMIC_ORCHESTRATOR,
        &[("academic-researcher.yaml", ACADEMIC_RESEARCHER)],
    );
    assert_eq!(pkg.subagents.len(), 1);
    // The crew's members are files of their own, which the spec does not
    // show: the smallest subagents there are.
    validates(
        STATIC_CREW,
        &[
            (
                "researcher.yaml",
                "name: researcher\ndescription: Researches.\n",
            ),
            ("writer.yaml", "name: writer\ndescription: Writes.\n"),
        ],
    );
}

#[test]
fn protocols() {
    validates(PROTOCOLS, &[]);
    validates(PROTOCOL_VERSIONING, &[]);
    validates(CUSTOM_PROTOCOLS, &[]);
}

#[test]
fn execution_constraints() {
    validates(BUDGET, &[]);
    validates(LIMITS, &[]);
}

#[test]
fn generative_ui() {
    // The sync actions call gmail_modify_labels, which the agent must
    // declare; the spec's inbox agent gets it from a Gmail MCP server.
    let gmail =
        "mcp_servers:\n  gmail:\n    command: gmail-mcp\n    tools: [gmail_modify_labels]\n";
    validates(&format!("{gmail}{UI_COMPONENTS}"), &[]);
    // The completed state renders headshot_gallery, which the agent
    // declares (error_card is built in).
    let gallery = "ui_components:\n  headshot_gallery: {}\n";
    validates(&format!("{gallery}{TOOL_UI}"), &[]);
}

#[test]
fn skills() {
    // The skill allows sqlite and delegate, which the agent declares.
    let tools = "tools:\n  - name: sqlite\n  - name: delegate\n";
    let pkg = validates(
        &format!("{tools}{SKILLS}"),
        &[("skills/test-helper/SKILL.md", SKILL_MD)],
    );
    assert_eq!(pkg.skills.len(), 1);
}

#[test]
fn ux_hints() {
    // The hints name gmail_list_messages and the playwright-web MCP
    // server, which the agent declares.
    let tools = "mcp_servers:\n  gmail:\n    command: gmail-mcp\n    tools: [gmail_list_messages]\n  playwright-web:\n    command: npx\n    args: [\"@playwright/mcp\"]\n";
    let pkg = validates(tools, &[("ux.yaml", UX)]);
    assert!(pkg.ux.is_some());
}

#[test]
fn events() {
    let log =
        events::parse(EVENTS.as_bytes(), &Limits::default()).unwrap_or_else(|d| panic!("{d}"));
    let problems = events::check(&log, None);
    assert!(problems.is_empty(), "{problems}");
}
