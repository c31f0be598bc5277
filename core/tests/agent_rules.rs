//! One broken variant of a fixture per rule: each must fail with the
//! diagnostic's file, path and a fragment of its message.

mod agent_support;

use agent_support::{load_fixture, messages};
use agentlang_core::{package::validate_agent_tree, rules::Rule};

struct Case {
    fixture: &'static str,
    /// The file to mutate, and the mutation: `old` must occur exactly once.
    file: &'static str,
    old: &'static str,
    new: &'static str,
    /// Where the diagnostic must be reported, and part of what it says.
    want_file: &'static str,
    want_path: &'static str,
    want_message: &'static str,
    /// The named rule the diagnostic must carry, when it breaks one.
    want_rule: Option<Rule>,
}

const RA: &str = "research-assistant";
const AY: &str = "agent.yaml";

const fn case(
    file: &'static str,
    old: &'static str,
    new: &'static str,
    want_path: &'static str,
    want_message: &'static str,
) -> Case {
    Case {
        fixture: RA,
        file,
        old,
        new,
        want_file: file,
        want_path,
        want_message,
        want_rule: None,
    }
}

const CASES: &[Case] = &[
    // metadata
    case(
        AY,
        "name: research-assistant",
        "name: research assistant",
        "name",
        "is not a valid name",
    ),
    case(
        AY,
        "version: 1.0.0\ntitle",
        "version: 1.0\ntitle",
        "version",
        "\"1.0\" is not a strict SemVer version",
    ),
    case(
        AY,
        "version: 1.0.0\ntitle",
        "version: [1]\ntitle",
        "version",
        "expected a string, found a list",
    ),
    case(
        AY,
        "version: 1.0.0\ntitle",
        "version: v1.0.0\ntitle",
        "version",
        "\"v1.0.0\" is not a strict SemVer version",
    ),
    case(
        AY,
        "description: |\n  Deep",
        "desciption: |\n  Deep",
        "desciption",
        "unknown key; did you mean \"description\"?",
    ),
    case(
        AY,
        "category: Business",
        "category: Business\nflavour: spicy",
        "flavour",
        "unknown key; expected one of: name, version",
    ),
    case(
        AY,
        "category: Business",
        "category: [Business]",
        "category",
        "expected a string, found a list",
    ),
    // models
    case(
        AY,
        "provider: anthropic",
        "providr: anthropic",
        "models.claude-sonnet-4",
        "missing required key \"provider\"",
    ),
    case(
        AY,
        "provider: anthropic",
        "providr: anthropic",
        "models.claude-sonnet-4.providr",
        "did you mean \"provider\"",
    ),
    // tools
    case(
        AY,
        "version: ^1.2.0\n    input_schema",
        "version: ^1.x.0\n    input_schema",
        "tools[0].version",
        "\"^1.x.0\" is not a valid version requirement",
    ),
    case(
        AY,
        "  - name: artifacts\n",
        "  - name: artifacts\n  - name: Web-Search\n",
        "tools[3].name",
        "tool \"Web-Search\" is already declared (as \"web_search\")",
    ),
    case(
        AY,
        "  - name: delegate\n",
        "  - name: delegate\n    version: ^1.0.0\n",
        "tools[4].version",
        "delegate is a runtime builtin",
    ),
    case(
        AY,
        "mode: dynamic",
        "mode: auto",
        "tools[4].config.mode",
        "\"auto\" is not one of: dynamic | static",
    ),
    case(
        AY,
        "discovery: directory",
        "discovery: registry",
        "tools[4].config.discovery",
        "is not one of: directory",
    ),
    case(
        AY,
        "max_depth: 3",
        "max_depth: 5",
        "tools[4].config.max_depth",
        "5 exceeds constraints.limits.max_delegation_depth (3)",
    ),
    case(
        AY,
        "max_depth: 3",
        "max_depth: 0",
        "tools[4].config.max_depth",
        "must be at least 1",
    ),
    case(
        AY,
        "  - name: sqlite\n    config:\n",
        "  - name: sqlite\n    config: tables\n    x:\n",
        "tools[3].config",
        "expected a mapping, found a string",
    ),
    // mcp servers
    case(
        AY,
        "STRIPE_SECRET_KEY: \"{{.env.STRIPE_SECRET_KEY}}\"",
        "STRIPE_SECRET_KEY: \"{{env.STRIPE_SECRET_KEY}}\"",
        "mcp_servers.Stripe.env.STRIPE_SECRET_KEY",
        "is not an environment placeholder",
    ),
    case(
        AY,
        "STRIPE_SECRET_KEY: \"{{.env.STRIPE_SECRET_KEY}}\"",
        "STRIPE_SECRET_KEY: \"{{.env.STRIPE_SECRET_KEY\"",
        "mcp_servers.Stripe.env.STRIPE_SECRET_KEY",
        "is never closed",
    ),
    case(
        AY,
        "STRIPE_SECRET_KEY: \"{{.env.STRIPE_SECRET_KEY}}\"",
        "STRIPE-KEY: \"{{.env.STRIPE_SECRET_KEY}}\"",
        "mcp_servers.Stripe.env.STRIPE-KEY",
        "not a valid environment variable name",
    ),
    case(
        AY,
        "    command: npx\n    args: [\"-y\", \"@stripe",
        "    args: [\"-y\", \"@stripe",
        "mcp_servers.Stripe",
        "missing required key \"command\"",
    ),
    case(
        AY,
        "      - list_invoices",
        "      - list invoices",
        "mcp_servers.Stripe.tools[2]",
        "not a valid identifier",
    ),
    // http tools
    case(
        AY,
        "method: POST\n    auth: bearer",
        "method: SEND\n    auth: bearer",
        "http_tools.twitter_post_tweet.method",
        "\"SEND\" is not one of: GET | POST",
    ),
    case(
        AY,
        "auth: bearer\n    twitter_token",
        "auth: cookie\n    twitter_token",
        "http_tools.twitter_post_tweet.auth",
        "not one of: none | bearer",
    ),
    case(
        AY,
        "twitter_token: true",
        "twitter_token: yes please",
        "http_tools.twitter_post_tweet.twitter_token",
        "expected true or false",
    ),
    case(
        AY,
        "type: string\n        description: \"Tweet",
        "type: text\n        description: \"Tweet",
        "http_tools.twitter_post_tweet.params.text.type",
        "\"text\" is not one of: string | integer",
    ),
    case(
        AY,
        "        required: false",
        "        required: no thanks",
        "http_tools.twitter_post_tweet.params.reply_to.required",
        "expected true or false",
    ),
    case(
        AY,
        "\"text\": \"{{text}}\"",
        "\"text\": \"{{message}}\"",
        "http_tools.twitter_post_tweet.body_template",
        "{{message}} is not one of this tool's params",
    ),
    case(
        AY,
        "\"{{reply_to}}\"{{end}}",
        "\"{{reply_to}}\"",
        "http_tools.twitter_post_tweet.body_template",
        "is never closed with \"{{end}}\"",
    ),
    case(
        AY,
        "endpoint: /api/v1/proxy",
        "url: /api/v1/proxy",
        "http_tools.generate_headshot",
        "missing required key \"endpoint\"",
    ),
    case(
        AY,
        "      failed:\n",
        "      errored:\n",
        "http_tools.generate_headshot.ui_component.errored",
        "unknown key; expected one of: running, completed, failed",
    ),
    case(
        AY,
        "tool: system://download_file",
        "tool: download_file",
        "http_tools.generate_headshot.ui_component.completed.actions.sync_actions.download.tool",
        "\"download_file\" is not declared by this agent",
    ),
    case(
        AY,
        "images: \"{{json.messages[0].images}}\"",
        "images: \"{{json.messages[first].images}}\"",
        "http_tools.generate_headshot.ui_component.completed.props.images",
        "is not a valid placeholder expression",
    ),
    // bash tools
    case(
        AY,
        "    command: ffmpeg\n",
        "    cmd: ffmpeg\n",
        "bash_tools.convert_video",
        "missing required key \"command\"",
    ),
    case(
        AY,
        "darwin: \"brew",
        "macos: \"brew",
        "bash_tools.convert_video.dependencies[0].install.macos",
        "\"macos\" is not one of: darwin | linux | windows",
    ),
    case(
        AY,
        "running: \"Converting video\"",
        "started: \"Converting video\"",
        "bash_tools.convert_video.labels.started",
        "unknown key",
    ),
    case(
        AY,
        "  convert_video:\n",
        "  web_fetch:\n",
        "bash_tools.web_fetch",
        "tool \"web_fetch\" is already declared at tools[1].name",
    ),
    // permissions
    case(
        AY,
        "    - screen_capture\n",
        "    - screen_captur\n",
        "permissions.optional[1]",
        "\"screen_captur\" is not a known capability; did you mean \"screen_capture\"?",
    ),
    case(
        AY,
        "    - location\n  microphone",
        "    - location\n    - network\n  microphone",
        "permissions.optional[4]",
        "network is already listed under required",
    ),
    case(
        AY,
        "    - location\n  microphone",
        "    - location\n    - location\n  microphone",
        "permissions.optional[4]",
        "\"location\" appears more than once",
    ),
    case(
        AY,
        "    - microphone\n",
        "",
        "permissions.microphone",
        "microphone is configured but not listed under required or optional",
    ),
    case(
        AY,
        "mode: on_demand\n    reason: \"Voice",
        "mode: always\n    reason: \"Voice",
        "permissions.microphone.mode",
        "\"always\" is not one of: user_triggered | on_demand | continuous | scheduled",
    ),
    case(
        AY,
        "    schedule: \"0 * * * *\"\n",
        "    schedule: \"every hour\"\n",
        "permissions.camera.schedule",
        "\"every hour\" is not a valid cron expression",
    ),
    case(
        AY,
        "    schedule: \"0 * * * *\"\n",
        "",
        "permissions.camera.mode",
        "mode scheduled needs a schedule or wake_triggers",
    ),
    case(
        AY,
        "mode: on_demand\n    reason: \"Voice",
        "mode: on_demand\n    schedule: \"0 9 * * *\"\n    reason: \"Voice",
        "permissions.microphone",
        "schedule and wake_triggers need mode: scheduled",
    ),
    case(
        AY,
        "- schedule: \"0 * * * *\"\n    max_runtime",
        "- schedule: \"0 25 * * *\"\n    max_runtime",
        "permissions.background.wake_triggers[0].schedule",
        "not a valid cron expression",
    ),
    case(
        AY,
        "max_runtime: 60",
        "max_runtime: 0",
        "permissions.background.max_runtime",
        "must be at least 1",
    ),
    case(
        AY,
        "camera:\n    mode: scheduled",
        "camera:\n    mode: scheduled\n    reasn: x",
        "permissions.camera.reasn",
        "did you mean \"reason\"",
    ),
    // context
    case(
        AY,
        "strategy: sliding",
        "strategy: rolling",
        "context.window.strategy",
        "\"rolling\" is not one of: sliding | summarize | truncate",
    ),
    case(
        AY,
        "max_tokens: 100000",
        "max_tokens: -5",
        "context.window.max_tokens",
        "must not be negative",
    ),
    case(
        AY,
        "strategy: summarize\n    trigger",
        "strategy: compress\n    trigger",
        "context.compaction.strategy",
        "not one of: summarize | drop_oldest | checkpoint",
    ),
    case(
        AY,
        "trigger: 0.8",
        "trigger: 1.5",
        "context.compaction.trigger",
        "1.5 is out of range: must be in (0, 1]",
    ),
    case(
        AY,
        "trigger: 0.8",
        "trigger: 0",
        "context.compaction.trigger",
        "must be in (0, 1]",
    ),
    case(
        AY,
        "  inject:\n",
        "  injection:\n",
        "context.injection",
        "did you mean \"inject\"",
    ),
    // protocols
    // A custom protocol missing from x-protocols may be a published
    // protocol package: lock and publish check it against the registry.
    case(
        AY,
        "  - name: custom/acme-sync\n    version: ^1.0.0",
        "  - name: custom/acme-sync\n    version: ^2.0.0",
        "protocols[2].version",
        "^2.0.0 does not match the inline definition of acme-sync (x-protocols.acme-sync.version is 1.0.0)",
    ),
    case(
        AY,
        "transport: websocket",
        "transport: carrier-pigeon",
        "x-protocols.acme-sync.schema.transport",
        "\"carrier-pigeon\" is not one of: http | websocket",
    ),
    case(
        AY,
        "      auth: bearer\n",
        "      auth: bearer\n      messages: {type: 12}\n",
        "x-protocols.acme-sync.schema.messages.type",
        "not a valid JSON Schema",
    ),
    case(
        AY,
        "version: ^2024.11",
        "version: ^2024.x.11",
        "protocols[1].version",
        "is not a valid version requirement",
    ),
    // an A2A endpoint: a2a only, https (or loopback http), a known binding
    case(
        AY,
        "version: ^2024.11\n",
        "version: ^2024.11\n    endpoint: {url: https://agents.example.com/mcp, binding: JSONRPC}\n",
        "protocols[1].endpoint",
        "only the a2a protocol takes an endpoint, not mcp",
    ),
    case(
        AY,
        "  - name: a2a\n    version: ^1.0.0\n",
        "  - name: a2a\n    version: ^1.0.0\n    endpoint: {url: http://agents.example.com/a2a, binding: JSONRPC}\n",
        "protocols[0].endpoint.url",
        "must start with https://",
    ),
    case(
        AY,
        "  - name: a2a\n    version: ^1.0.0\n",
        "  - name: a2a\n    version: ^1.0.0\n    endpoint: {url: \"https://me:secret@agents.example.com/a2a\", binding: GRPC}\n",
        "protocols[0].endpoint.url",
        "carries a user name or password",
    ),
    case(
        AY,
        "  - name: a2a\n    version: ^1.0.0\n",
        "  - name: a2a\n    version: ^1.0.0\n    endpoint: {url: https://agents.example.com/a2a, binding: jsonrpc}\n",
        "protocols[0].endpoint.binding",
        "\"jsonrpc\" is not one of: JSONRPC | GRPC | HTTP+JSON",
    ),
    case(
        AY,
        "  - name: a2a\n    version: ^1.0.0\n",
        "  - name: a2a\n    version: ^1.0.0\n    endpoint: {binding: HTTP+JSON, transport: sse}\n",
        "protocols[0].endpoint",
        "missing required key \"url\"",
    ),
    case(
        AY,
        "  - name: a2a\n    version: ^1.0.0\n",
        "  - name: a2a\n    version: ^1.0.0\n    endpoint: {url: https://agents.example.com/a2a, binding: GRPC, transport: sse}\n",
        "protocols[0].endpoint.transport",
        "unknown key",
    ),
    case(
        AY,
        "name: mcp\n",
        "name: acme/mcp\n",
        "protocols[1].name",
        "is not a protocol name like a2a or custom/<name>",
    ),
    // constraints
    case(
        AY,
        "tolerance: 0.20",
        "tolerance: 1.5",
        "constraints.budget.tolerance",
        "1.5 is out of range: must be in [0, 1]",
    ),
    case(
        AY,
        "max_cost_usd: 2.00",
        "max_cost_usd: -1",
        "constraints.budget.max_cost_usd",
        "must not be negative",
    ),
    case(
        AY,
        "output_1m_price: 15.00",
        "output_1m_price: lots",
        "constraints.budget.output_1m_price",
        "expected a number, found a string",
    ),
    case(
        AY,
        "max_turns: 50",
        "max_turns: fifty",
        "constraints.limits.max_turns",
        "expected a whole number, found a string",
    ),
    case(
        AY,
        "- \"./data\"",
        "- \"../data\"",
        "constraints.sandbox.allowed_paths[1]",
        "climbs out of the workspace",
    ),
    case(
        AY,
        "- \"./output\"",
        "- \"/etc\"",
        "constraints.sandbox.allowed_paths[0]",
        "is absolute",
    ),
    case(
        AY,
        "- \"https://*.googleapis.com\"",
        "- \"https://api.*.com\"",
        "constraints.sandbox.allowed_urls[1]",
        "wildcard outside the leading host label",
    ),
    case(
        AY,
        "- \"https://api.example.com\"",
        "- \"api.example.com\"",
        "constraints.sandbox.allowed_urls[0]",
        "is not a URL pattern",
    ),
    case(
        AY,
        "disk_quota: 1073741824",
        "disk_quota: 1GB",
        "constraints.sandbox.disk_quota",
        "expected a whole number",
    ),
    // ui components
    case(
        AY,
        "archive:\n        tool: gmail_modify_labels",
        "archive:\n        tool: gmail_delete",
        "ui_components.email_card.sync_actions.archive.tool",
        "\"gmail_delete\" is not declared by this agent",
    ),
    case(
        AY,
        "message_id: \"{{messageId}}\"\n          remove_labels",
        "message_id: \"{{messageId}\"\n          remove_labels",
        "ui_components.email_card.sync_actions.archive.params.message_id",
        "is never closed",
    ),
    case(
        AY,
        "star:\n        tool: gmail_modify_labels\n",
        "star:\n",
        "ui_components.email_card.sync_actions.star",
        "missing required key \"tool\"",
    ),
    case(
        AY,
        "  metric_card: {}",
        "  metric card: {}",
        "ui_components.metric card",
        "not a valid identifier",
    ),
    case(
        AY,
        "  video_player: {}",
        "  video_player: {sync: {}}",
        "ui_components.video_player.sync",
        "did you mean \"sync_actions\"",
    ),
    // skills
    case(
        AY,
        "  - name: test-helper",
        "  - name: test-helpers",
        "skills[0].name",
        "skill \"test-helpers\" has no skills/test-helpers/SKILL.md",
    ),
    case(
        AY,
        "  - name: test-helper",
        "  - name: test-helper\n  - name: test-helper",
        "skills[1].name",
        "\"test-helper\" appears more than once",
    ),
    case(
        AY,
        "  - name: test-helper",
        "  - name: test-helper\n    version: ^1",
        "skills[0].version",
        "is both the published skill test-helper ^1 and the co-located skills/test-helper/SKILL.md",
    ),
    case(
        AY,
        "  - name: test-helper",
        "  - name: test-helper\n  - name: pdf-tools\n    version: latest",
        "skills[1].version",
        "\"latest\" is not a valid version requirement",
    ),
    case(
        "skills/test-helper/SKILL.md",
        "  - delegate",
        "  - shell_exec",
        "allowed-tools[1]",
        "\"shell_exec\" is not a tool agent.yaml declares",
    ),
    case(
        "skills/test-helper/SKILL.md",
        "name: test-helper",
        "name: helper",
        "name",
        "skill name \"helper\" does not match its directory skills/test-helper",
    ),
    case(
        "skills/test-helper/SKILL.md",
        "description: Skill",
        "summary: Skill",
        "",
        "missing required key \"description\"",
    ),
    case(
        "skills/test-helper/SKILL.md",
        "---\n# Test",
        "# Test",
        "",
        "never closed by a \"---\" line",
    ),
    // subagents
    case(
        "specialists/academic-researcher.yaml",
        "name: academic-researcher",
        "name: academic-researcher\nversion: one",
        "version",
        "\"one\" is not a strict SemVer version",
    ),
    case(
        "specialists/market-analyst.yaml",
        "name: market-analyst",
        "name: Academic_Researcher",
        "name",
        "agent name \"Academic_Researcher\" is already used by specialists/academic-researcher.yaml",
    ),
    case(
        "specialists/market-analyst.yaml",
        "description: |\n",
        "summary: |\n",
        "",
        "missing required key \"description\"",
    ),
    case(
        "specialists/market-analyst.yaml",
        "version: ^1.2.0",
        "version: latest",
        "tools[0].version",
        "\"latest\" is not a valid version requirement",
    ),
    // ux.yaml
    case(
        "ux.yaml",
        "  gmail_list_messages:",
        "  gmail_search:",
        "tools.gmail_search",
        "\"gmail_search\" is not a tool agent.yaml declares",
    ),
    case(
        "ux.yaml",
        "  playwright-web:",
        "  browser:",
        "mcp_tools.browser",
        "\"browser\" is not an MCP server agent.yaml declares",
    ),
    case(
        "ux.yaml",
        "    web_navigate:",
        "    web_click:",
        "mcp_tools.playwright-web.web_click",
        "not in the tools whitelist of MCP server \"playwright-web\"",
    ),
    case(
        "ux.yaml",
        "website: https://stripe.com",
        "website: stripe",
        "integrations[1].website",
        "is not a URL pattern",
    ),
    case(
        "ux.yaml",
        "      running: \"Loading inbox\"",
        "      runnin: \"Loading inbox\"",
        "tools.gmail_list_messages.labels.runnin",
        "did you mean \"running\"",
    ),
    // prompt.yaml: malformed YAML, then each PromptLang rule.
    case(
        "prompt.yaml",
        "version: 2\n",
        "version: [2\n",
        "",
        "at line 2 column 5",
    ),
    case(
        "prompt.yaml",
        "version: 2\n",
        "version: 1\n",
        "version",
        "must be the number 2, found 1",
    ),
    case(
        "prompt.yaml",
        "role: user",
        "role: narrator",
        "role",
        "unknown role \"narrator\"",
    ),
    case(
        "prompt.yaml",
        "sections:",
        "sectons:",
        "sectons",
        "did you mean `sections`?",
    ),
    case(
        "prompt.yaml",
        "  - name: who_you_are",
        "  - name: mindset",
        "sections[1].name",
        "duplicate section name \"mindset\" (first used at sections[0].name)",
    ),
    case(
        "prompt.yaml",
        "  - name: workflow\n    content:",
        "  - name: workflow\n    contnt:",
        "sections[3].contnt",
        "did you mean `content`?",
    ),
    case(
        "prompt.yaml",
        "  - name: your_tools",
        "  - name: xml_tools",
        "sections[2].name",
        "must not start with `xml`",
    ),
];

const SC: &str = "static-crew";

const fn crew(
    old: &'static str,
    new: &'static str,
    want_path: &'static str,
    want_message: &'static str,
) -> Case {
    Case {
        fixture: SC,
        file: AY,
        old,
        new,
        want_file: AY,
        want_path,
        want_message,
        want_rule: None,
    }
}

const CREW_CASES: &[Case] = &[
    crew(
        "depends_on: [researcher]",
        "depends_on: [reseacher]",
        "delegate.agents[1].depends_on[0]",
        "\"reseacher\" is not a crew member (members: researcher, writer)",
    ),
    crew(
        "task: \"Research the topic thoroughly\"",
        "task: \"Research the topic thoroughly\"\n      depends_on: [writer]",
        "delegate.agents",
        "depends_on forms a cycle: researcher -> writer -> researcher",
    ),
    crew(
        "depends_on: [researcher]",
        "depends_on: [writer]",
        "delegate.agents",
        "depends_on forms a cycle: writer -> writer",
    ),
    crew(
        "path: ./writer.yaml",
        "path: ./editor.yaml",
        "delegate.agents[1].path",
        "\"./editor.yaml\" is not a file in the package",
    ),
    crew(
        "path: ./writer.yaml",
        "path: ../writer.yaml",
        "delegate.agents[1].path",
        "must be a relative path to a subagent .yaml file",
    ),
    crew(
        "path: ./writer.yaml",
        "path: ./researcher.yaml",
        "delegate.agents[1].path",
        "\"researcher\" is already in the crew at delegate.agents[0]",
    ),
    crew(
        "process: sequential",
        "process: random",
        "delegate.process",
        "\"random\" is not one of: sequential | parallel | hierarchical",
    ),
    crew(
        "mode: static",
        "mode: dynamic",
        "delegate.mode",
        "top-level delegate is a static crew",
    ),
    crew(
        "  mode: static\n  process",
        "  process",
        "delegate",
        "missing required key \"mode\"",
    ),
];

fn run(case: &Case) -> Result<(), String> {
    let mut tree = load_fixture(case.fixture);
    let text = String::from_utf8(tree.get(case.file).unwrap().to_vec()).unwrap();
    let found = text.matches(case.old).count();
    if found != 1 {
        return Err(format!(
            "{:?} occurs {found} times in {}",
            case.old, case.file
        ));
    }
    let mutated = text.replacen(case.old, case.new, 1);
    tree.insert(
        agentlang_core::MemberPath::new(case.file).unwrap(),
        mutated.into_bytes(),
    );
    let diags = match validate_agent_tree(&tree) {
        Ok(_) => return Err("validated, but should have failed".into()),
        Err(d) => d,
    };
    let hit = diags.iter().any(|d| {
        d.file.as_deref() == Some(case.want_file)
            && d.path == case.want_path
            && d.message.contains(case.want_message)
            && case.want_rule.is_none_or(|r| d.rule == Some(r))
    });
    if hit {
        Ok(())
    } else {
        Err(format!(
            "want {}: {}: ...{}... [{:?}]\ngot:\n{}",
            case.want_file,
            case.want_path,
            case.want_message,
            case.want_rule,
            messages(&diags)
        ))
    }
}

fn run_all(cases: &[Case]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            run(c)
                .err()
                .map(|e| format!("[{} -> {}] {e}", c.old, c.new))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// A research-assistant variant breaking a named rule: reported in
/// `want_file` at `want_path`, carrying the rule.
const fn rule_case(
    rule: Rule,
    file: &'static str,
    old: &'static str,
    new: &'static str,
    want_path: &'static str,
    want_message: &'static str,
) -> Case {
    Case {
        fixture: RA,
        file,
        old,
        new,
        want_file: file,
        want_path,
        want_message,
        want_rule: Some(rule),
    }
}

const RULE_CASES: &[Case] = &[
    // permission modes: microphone is never scheduled (the spec lists
    // user_triggered | on_demand | continuous), background never attended
    rule_case(
        Rule::PermissionMode,
        AY,
        "mode: on_demand\n    reason: \"Voice",
        "mode: scheduled\n    schedule: \"0 * * * *\"\n    reason: \"Voice",
        "permissions.microphone.mode",
        "microphone may be asked for user_triggered, on_demand or continuous, not scheduled",
    ),
    rule_case(
        Rule::PermissionMode,
        AY,
        "  background:\n    mode: scheduled\n    wake_triggers:\n      - schedule: \"0 * * * *\"\n",
        "  background:\n    mode: user_triggered\n",
        "permissions.background.mode",
        "background may be asked for continuous or scheduled, not user_triggered",
    ),
    // a required capability on a schedule needs background required
    rule_case(
        Rule::BackgroundRequired,
        AY,
        "    - background\n    - notifications\n  optional:\n",
        "    - notifications\n  optional:\n    - background\n",
        "permissions.camera.mode",
        "camera runs on a schedule, which needs the host to wake the agent: list background under permissions.required (not optional)",
    ),
    // an optional one needs background at least optional
    rule_case(
        Rule::BackgroundRequired,
        AY,
        "    - storage\n    - camera\n    - background\n    - notifications\n  optional:\n",
        "    - storage\n    - notifications\n  optional:\n    - camera\n",
        "permissions.camera.mode",
        "list background under permissions (required, or optional as camera is)",
    ),
    // the context vocabulary, with "did you mean"
    rule_case(
        Rule::ContextUnknown,
        AY,
        "    - time\n    - location\n",
        "    - tiem\n    - location\n",
        "context.inject[0]",
        "\"tiem\" is not a known value; did you mean \"time\"?",
    ),
    rule_case(
        Rule::ContextUnknown,
        AY,
        "      - user_messages",
        "      - user_mesages",
        "context.compaction.preserve[1]",
        "\"user_mesages\" is not a known value; did you mean \"user_messages\"?",
    ),
    rule_case(
        Rule::ContextUnknown,
        AY,
        "    - user_profile",
        "    - weather",
        "context.inject[2]",
        "\"weather\" is not a known value; expected time, location or user_profile",
    ),
    // injected location needs the location capability
    rule_case(
        Rule::ContextPermission,
        AY,
        "    - filesystem\n    - location\n",
        "    - filesystem\n",
        "context.inject[1]",
        "injecting location needs the location capability: list it under permissions.required or optional",
    ),
    // prompt variables come from inject or prompt.yaml's variables
    rule_case(
        Rule::TemplateVariable,
        "prompt.yaml",
        "3. Cross-reference findings",
        "3. Cross-reference findings near {{locaton.city}}",
        "sections[3].content",
        "{{locaton}} is neither injected context nor a declared variable; did you mean \"location\"?",
    ),
    rule_case(
        Rule::TemplateVariable,
        "prompt.yaml",
        "3. Cross-reference findings",
        "3. Cross-reference findings for {{audience}}",
        "sections[3].content",
        "{{audience}} is neither injected context (context.inject) nor a declared variable (prompt.yaml's variables)",
    ),
    // a specialist the delegate tool may pick spends within the parent's
    // $2.00
    rule_case(
        Rule::BudgetExceedsParent,
        "specialists/academic-researcher.yaml",
        "  - name: artifacts\n",
        "  - name: artifacts\nconstraints:\n  budget:\n    max_cost_usd: 2.50\n",
        "constraints.budget.max_cost_usd",
        "$2.50 is above the budget of research-assistant, which may delegate to academic-researcher ($2.00 in agent.yaml's constraints.budget.max_cost_usd)",
    ),
];

#[test]
fn each_named_rule_is_reported_with_its_rule_and_path() {
    run_all(RULE_CASES);
}

#[test]
fn injected_values_and_declared_variables_satisfy_the_prompt() {
    let mut tree = load_fixture(RA);
    let prompt = String::from_utf8(tree.get("prompt.yaml").unwrap().to_vec())
        .unwrap()
        .replacen("role: user\n", "role: user\nvariables: [audience]\n", 1)
        .replacen(
            "3. Cross-reference findings",
            "3. Cross-reference findings for {{audience}} at {{ time }} near {{location.city}}, for {{user_profile.name}}",
            1,
        );
    tree.insert(
        agentlang_core::MemberPath::new("prompt.yaml").unwrap(),
        prompt.into_bytes(),
    );
    validate_agent_tree(&tree).unwrap_or_else(|d| panic!("{}", messages(&d)));
}

#[test]
fn each_broken_research_assistant_fails_where_it_is_broken() {
    run_all(CASES);
}

#[test]
fn each_broken_static_crew_fails_where_it_is_broken() {
    run_all(CREW_CASES);
}

#[test]
fn missing_files_are_reported() {
    let mut tree = load_fixture(RA);
    tree.remove("agent.yaml");
    tree.remove("prompt.yaml");
    let diags = validate_agent_tree(&tree).unwrap_err();
    let text = messages(&diags);
    assert!(
        text.contains("agent.yaml: the package has no agent.yaml"),
        "{text}"
    );
    assert!(
        text.contains("prompt.yaml: the package has no prompt.yaml"),
        "{text}"
    );
}

#[test]
fn a_broken_prompt_is_reported_in_prompt_yaml_at_every_path() {
    let mut tree = load_fixture(RA);
    tree.insert(
        agentlang_core::MemberPath::new("prompt.yaml").unwrap(),
        include_bytes!("fixtures/prompts/broken.prompt.yaml").to_vec(),
    );
    let diags = validate_agent_tree(&tree).unwrap_err();
    // The rest of the package is intact, so every problem is the prompt's.
    let found: Vec<(Option<&str>, &str)> = diags
        .iter()
        .map(|d| (d.file.as_deref(), d.path.as_str()))
        .collect();
    let want: Vec<(Option<&str>, &str)> = [
        "sectons",
        "version",
        "role",
        "sections[1].name",
        "sections[1].content",
        "sections[2].name",
        "sections[3].name",
        "sections[4].contnt",
        "sections[4].content",
        "sections[5]",
    ]
    .into_iter()
    .map(|path| (Some("prompt.yaml"), path))
    .collect();
    assert_eq!(found, want, "{}", messages(&diags));
}

#[test]
fn an_encrypted_prompt_stands_in_for_prompt_yaml() {
    let mut tree = load_fixture(SC);
    let prompt = tree.remove("prompt.yaml").unwrap();
    tree.insert(
        agentlang_core::MemberPath::new("prompt.yaml.enc").unwrap(),
        prompt,
    );
    validate_agent_tree(&tree).unwrap_or_else(|d| panic!("{}", messages(&d)));
}

#[test]
fn dynamic_discovery_without_subagents_is_reported() {
    let mut tree = load_fixture(RA);
    tree.remove("specialists/academic-researcher.yaml");
    tree.remove("specialists/market-analyst.yaml");
    let diags = validate_agent_tree(&tree).unwrap_err();
    assert_eq!(
        messages(&diags),
        "agent.yaml: tools[4].config.discovery: delegate discovers co-located subagents, but the package has none"
    );
}
