//! The deterministic prompt-quality rules, one agent per rule group, each
//! finding checked for its rule, severity, file and path; a clean agent has
//! none; and the model reviewer's request and response handling.

mod agent_support;

use std::collections::BTreeMap;

use agent_support::load_fixture;
use agentlang_core::{
    MemberPath, SourceTree,
    package::{AgentPackage, validate_agent_tree},
    prompt::{Format, parse_prompt},
    quality::{
        self, Finding, ModelFacts, PromptText, QualityInput, QualityReport, Severity, Source,
        review, rules,
    },
};

fn tree(files: &[(&str, &str)]) -> SourceTree {
    files
        .iter()
        .map(|(p, b)| (MemberPath::new(*p).unwrap(), b.as_bytes().to_vec()))
        .collect()
}

fn package(t: &SourceTree) -> AgentPackage {
    validate_agent_tree(t).unwrap_or_else(|d| panic!("fixture does not validate:\n{d}"))
}

fn run(t: &SourceTree, models: Option<&BTreeMap<String, ModelFacts>>) -> QualityReport {
    let pkg = package(t);
    let prompt = parse_prompt(t.get("prompt.yaml").unwrap()).unwrap();
    quality::check(&QualityInput {
        package: &pkg,
        prompt: PromptText::Plain(&prompt),
        models,
    })
}

/// `rule file:path` of every finding.
fn keys(report: &QualityReport) -> Vec<String> {
    report
        .findings
        .iter()
        .map(|f| format!("{} {}:{}", f.rule, f.file.as_deref().unwrap_or(""), f.path))
        .collect()
}

fn find<'r>(report: &'r QualityReport, rule: &str) -> Vec<&'r Finding> {
    report.findings.iter().filter(|f| f.rule == rule).collect()
}

const CLEAN_AGENT: &str = "name: helper\nversion: 1.0.0\ndescription: Helps.\nmodels:\n  small-model:\n    provider: acme\ntools:\n  - name: web_search\n  - name: notes\n";
const CLEAN_PROMPT: &str = "version: 2\nrole: system\nsections:\n  - name: role\n    content: You answer questions about the weather in plain words.\n  - name: tools\n    content: |\n      web_search - look things up when you are not sure\n      notes - keep what the user asked you to remember\n";

fn models(window: u64) -> BTreeMap<String, ModelFacts> {
    [(
        "small-model".to_owned(),
        ModelFacts {
            context_window: window,
            input_1m_price: Some(3.0),
            output_1m_price: Some(15.0),
        },
    )]
    .into()
}

#[test]
fn a_clean_agent_has_no_findings() {
    let t = tree(&[("agent.yaml", CLEAN_AGENT), ("prompt.yaml", CLEAN_PROMPT)]);
    let report = run(&t, Some(&models(200_000)));
    assert_eq!(keys(&report), Vec::<String>::new());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.summary(), "no findings");
    assert!(report.passes(true));
    // The estimate: the compiled markdown's characters / 4, rounded up.
    let compiled = parse_prompt(CLEAN_PROMPT.as_bytes())
        .unwrap()
        .compile(Format::Markdown);
    assert_eq!(
        report.prompt_tokens,
        Some((compiled.chars().count() as u64).div_ceil(4))
    );
}

#[test]
fn the_spec_prompt_names_a_tool_the_agent_never_declares() {
    // The spec's own research assistant: its workflow says "Check
    // user_memory", a tool agent.yaml does not declare.
    let report = run(&load_fixture("research-assistant"), None);
    let undeclared = find(&report, rules::UNDECLARED_TOOL);
    assert_eq!(undeclared.len(), 1, "{:#?}", report.findings);
    assert_eq!(undeclared[0].file.as_deref(), Some("prompt.yaml"));
    assert_eq!(undeclared[0].path, "sections[3].content");
    assert!(undeclared[0].message.contains("\"user_memory\""));
    assert_eq!(undeclared[0].severity, Severity::Warning);
    // Declared and never mentioned: the delegate tool, the MCP whitelist,
    // the HTTP and bash tools; the four tools the prompt lists are not.
    let unused: Vec<&str> = find(&report, rules::UNUSED_TOOL)
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert!(unused.contains(&"tools[4].name"), "{unused:?}");
    assert!(
        unused.contains(&"http_tools.twitter_post_tweet"),
        "{unused:?}"
    );
    assert!(unused.contains(&"bash_tools.convert_video"), "{unused:?}");
    assert!(
        !unused.iter().any(|p| [
            "tools[0].name",
            "tools[1].name",
            "tools[2].name",
            "tools[3].name"
        ]
        .contains(p)),
        "{unused:?}"
    );
    // background and notifications are high risk without a reason; camera
    // and microphone have one.
    let reasons: Vec<&str> = find(&report, rules::PERMISSION_WITHOUT_REASON)
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "permissions.optional[1]",
            "permissions.optional[3]",
            "permissions.required[3]",
            "permissions.required[4]"
        ]
    );
    // Without a catalog, the model-size rules say they were skipped.
    assert!(
        report
            .skipped
            .iter()
            .any(|s| s.rule == rules::PROMPT_EXCEEDS_CONTEXT),
        "{:?}",
        report.skipped
    );
    assert!(report.passes(false));
    assert!(!report.passes(true));
}

#[test]
fn sections_that_are_empty_repeated_or_nearly_repeated_are_flagged() {
    let prompt = "version: 2\nrole: system\nsections:\n  - name: role\n    content: You answer questions about the weather, using web_search and notes when it helps the user.\n  - name: todo\n    content: TODO\n  - name: again\n    content: |\n      You answer questions about   the weather, using web_search and notes when it helps the user.\n  - name: almost\n    content: You answer questions about the weather, using web_search and notes when it helps the user a lot.\n  - name: short\n    content: Be kind.\n";
    let report = run(
        &tree(&[("agent.yaml", CLEAN_AGENT), ("prompt.yaml", prompt)]),
        None,
    );
    assert_eq!(
        keys(&report),
        [
            "empty-section prompt.yaml:sections[1].content",
            "duplicate-section prompt.yaml:sections[2].content",
            "near-duplicate-section prompt.yaml:sections[3].content",
            "empty-section prompt.yaml:sections[4].content",
        ]
    );
    let near = &find(&report, rules::NEAR_DUPLICATE_SECTION)[0];
    assert!(
        near.message.contains("\"role\" (sections[0])"),
        "{}",
        near.message
    );
}

#[test]
fn a_prompt_asking_for_capabilities_the_agent_does_not_request() {
    let agent = "name: helper\nversion: 1.0.0\ndescription: Helps.\ntools:\n  - name: notes\npermissions:\n  optional: [camera]\n  camera:\n    reason: To look at receipts the user shows.\n";
    let prompt = "version: 2\nrole: system\nsections:\n  - name: role\n    content: Keep notes. Take a photo with the camera when asked, and use the user's location to find shops.\n  - name: later\n    content: Check the inbox every hour and notify the user about anything new in notes.\n";
    let report = run(
        &tree(&[("agent.yaml", agent), ("prompt.yaml", prompt)]),
        None,
    );
    let caps: Vec<String> = find(&report, rules::CAPABILITY_NOT_REQUESTED)
        .iter()
        .map(|f| format!("{} {}", f.path, f.message))
        .collect();
    assert_eq!(caps.len(), 3, "{caps:#?}");
    assert!(
        caps[0].starts_with("sections[0].content")
            && caps[0].contains("the location capability (High risk)")
    );
    assert!(caps[1].starts_with("sections[1].content") && caps[1].contains("notifications"));
    assert!(caps[2].starts_with("sections[1].content") && caps[2].contains("background"));
    // camera is requested (with a reason): not flagged.
    assert!(!caps.iter().any(|c| c.contains("camera capability")));
    assert!(find(&report, rules::PERMISSION_WITHOUT_REASON).is_empty());
}

#[test]
fn declarations_that_imply_capabilities_nobody_requests_are_flagged() {
    let agent = r#"name: ops
version: 1.0.0
description: Runs things.
bash_tools:
  convert_video:
    command: ffmpeg
mcp_servers:
  stripe:
    command: npx
    args: ["-y", "@stripe/mcp", "--tools=all"]
http_tools:
  post_tweet:
    endpoint: /api/v1/twitter/tweets
    method: POST
    twitter_token: true
context:
  inject: [time]
permissions:
  required: [network]
"#;
    let report = run(
        &tree(&[("agent.yaml", agent), ("prompt.yaml", CLEAN_PROMPT)]),
        None,
    );
    let found: Vec<String> = find(&report, rules::UNDECLARED_CAPABILITY)
        .iter()
        .map(|f| format!("{}:{} {}", f.file.as_deref().unwrap(), f.path, f.message))
        .collect();
    // network is requested: the MCP server's and the HTTP tool's need of it
    // is covered. The rest are not, each named once with every source.
    // (Injected location without its capability does not validate:
    // context-permission.)
    assert_eq!(
        found,
        [
            "agent.yaml:bash_tools.convert_video bash tool convert_video, MCP server stripe needs the shell capability (High risk), which no agent requests",
            "agent.yaml:http_tools.post_tweet http tool post_tweet needs the oauth capability (Critical risk), which no agent requests",
        ],
        "{found:#?}"
    );
    assert!(
        find(&report, rules::UNDECLARED_CAPABILITY)
            .iter()
            .all(|f| f.severity == Severity::Warning)
    );
}

#[test]
fn prompt_size_is_checked_against_the_models_and_the_window() {
    let agent = "name: helper\nversion: 1.0.0\ndescription: Helps.\nmodels:\n  small-model:\n    provider: acme\n  big-model:\n    provider: acme\ntools:\n  - name: notes\ncontext:\n  window:\n    max_tokens: 1000\n  compaction:\n    trigger: 0.5\n";
    let long = "Use notes. ".repeat(240); // about 2,640 characters, 660+ tokens
    let prompt =
        format!("version: 2\nrole: system\nsections:\n  - name: role\n    content: {long}\n");
    let t = tree(&[("agent.yaml", agent), ("prompt.yaml", &prompt)]);
    let mut catalog = models(600);
    catalog.insert(
        "big-model".into(),
        ModelFacts {
            context_window: 1_000_000,
            input_1m_price: None,
            output_1m_price: None,
        },
    );
    let report = run(&t, Some(&catalog));
    let tokens = report.prompt_tokens.unwrap();
    assert!((600..1000).contains(&tokens), "{tokens}");
    assert_eq!(
        keys(&report),
        [
            "prompt-exceeds-context prompt.yaml:",
            "window-exceeds-model agent.yaml:context.window.max_tokens",
            "prompt-triggers-compaction prompt.yaml:",
        ]
    );
    assert!(
        find(&report, rules::PROMPT_EXCEEDS_CONTEXT)[0]
            .message
            .contains("small-model's context window of 600")
    );
    assert!(!report.passes(false));

    // A roomier model: more than half of it is still a warning.
    let report = run(&t, Some(&models(1_200)));
    assert_eq!(find(&report, rules::PROMPT_FILLS_CONTEXT).len(), 1);
    assert!(find(&report, rules::PROMPT_EXCEEDS_CONTEXT).is_empty());
}

#[test]
fn an_encrypted_prompt_is_estimated_from_its_size_and_text_rules_are_skipped() {
    let t = tree(&[("agent.yaml", CLEAN_AGENT), ("prompt.yaml", CLEAN_PROMPT)]);
    let pkg = package(&t);
    let report = quality::check(&QualityInput {
        package: &pkg,
        prompt: PromptText::Encrypted {
            plaintext_bytes: 4_000,
        },
        models: Some(&models(1_500)),
    });
    assert_eq!(report.prompt_tokens, Some(1_000));
    assert_eq!(keys(&report), ["prompt-fills-context prompt.yaml:"]);
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.rule.as_str()).collect();
    assert!(
        skipped.contains(&rules::UNDECLARED_TOOL)
            && skipped.contains(&rules::NEAR_DUPLICATE_SECTION)
    );
}

#[test]
fn delegation_subagents_and_prices_follow_the_spec_and_the_catalog() {
    let agent = "name: lead\nversion: 1.0.0\ndescription: Leads.\nmodels:\n  small-model:\n    provider: acme\ntools:\n  - name: delegate\n    config:\n      mode: dynamic\n      discovery: directory\n      max_depth: 3\nconstraints:\n  budget:\n    max_cost_usd: 2\n    input_1m_price: 2.5\n    output_1m_price: 15\n";
    let sub = "name: helper\ndescription: Helps.\n";
    let prompt = "version: 2\nrole: system\nsections:\n  - name: role\n    content: You delegate every question to the right specialist and report back.\n";
    let report = run(
        &tree(&[
            ("agent.yaml", agent),
            ("helper.yaml", sub),
            ("prompt.yaml", prompt),
        ]),
        Some(&models(200_000)),
    );
    assert_eq!(
        keys(&report),
        [
            "budget-price-mismatch agent.yaml:constraints.budget.input_1m_price",
            "subagent-without-description helper.yaml:description",
        ]
    );
    let price = &find(&report, rules::BUDGET_PRICE_MISMATCH)[0];
    assert!(
        price.message.contains("small-model $3.00"),
        "{}",
        price.message
    );
}

#[test]
fn a_delegation_depth_past_the_default_fails_validation_and_the_review() {
    // No declared limit: the spec's default of 3 applies.
    let agent = "name: lead\nversion: 1.0.0\ndescription: Leads.\ntools:\n  - name: delegate\n    config:\n      max_depth: 4\n";
    let t = tree(&[("agent.yaml", agent), ("prompt.yaml", CLEAN_PROMPT)]);
    let err = validate_agent_tree(&t).unwrap_err();
    assert!(
        err.to_string().contains(
            "agent.yaml: tools[0].config.max_depth: 4 exceeds constraints.limits.max_delegation_depth (3) (the default"
        ),
        "{err}"
    );
}

#[test]
fn a_static_crew_over_budget_fails_validation_naming_the_agents() {
    let agent = "name: lead\nversion: 1.0.0\ndescription: Leads.\nconstraints:\n  budget:\n    max_cost_usd: 2.00\ndelegate:\n  mode: static\n  process: sequential\n  agents:\n    - path: ./researcher.yaml\n      budget: 1.50\n    - path: ./writer.yaml\n";
    let writer = "name: writer\ndescription: Writes it up.\nconstraints:\n  budget:\n    max_cost_usd: 0.75\n";
    let researcher = "name: researcher\ndescription: Finds sources.\n";
    let t = tree(&[
        ("agent.yaml", agent),
        ("prompt.yaml", CLEAN_PROMPT),
        ("researcher.yaml", researcher),
        ("writer.yaml", writer),
    ]);
    let err = validate_agent_tree(&t).unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent.yaml: delegate.agents: the crew's budgets add up to $2.25, more than this agent's constraints.budget.max_cost_usd of $2.00: researcher $1.50 (delegate.agents[0].budget), writer $0.75 (./writer.yaml constraints.budget.max_cost_usd) [budget-exceeds-parent]"
    );
}

// ------------------------------------------------------------ model review

#[test]
fn the_review_request_carries_the_rubric_the_spec_and_the_prompt() {
    let t = tree(&[("agent.yaml", CLEAN_AGENT), ("prompt.yaml", CLEAN_PROMPT)]);
    let pkg = package(&t);
    let prompt = parse_prompt(CLEAN_PROMPT.as_bytes()).unwrap();
    let body = review::request_body("m-1", &pkg, &prompt.compile(Format::Markdown));
    assert_eq!(body["model"], "m-1");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], review::RUBRIC);
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("## tools\nweb_search - look things up"),
        "{user}"
    );
    assert!(user.contains("\"web_search\""), "{user}");
}

#[test]
fn review_answers_become_marked_warnings_and_bad_answers_are_refused() {
    let prompt = parse_prompt(CLEAN_PROMPT.as_bytes()).unwrap();
    let content = "```json\n{\"findings\": [{\"severity\": \"error\", \"section\": \"tools\", \"message\": \"Says nothing about failed searches.\", \"hint\": \"Say what to do when web_search fails.\"}, {\"severity\": \"warning\", \"section\": \"nowhere\", \"message\": \"Vague.\"}, {\"message\": \"  \"}]}\n```";
    let body =
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]});
    let findings = review::parse_response(body.to_string().as_bytes(), &prompt).unwrap();
    assert_eq!(findings.len(), 2);
    assert_eq!(findings[0].source, Source::Model);
    assert_eq!(findings[0].rule, rules::MODEL_REVIEW);
    assert_eq!(findings[0].severity, Severity::Warning, "capped");
    assert_eq!(findings[0].path, "sections[1]");
    assert_eq!(
        findings[0].hint.as_deref(),
        Some("Say what to do when web_search fails.")
    );
    assert_eq!(findings[1].path, "");

    for (bad, want) in [
        ("not json".to_owned(), "not chat-completions JSON"),
        (
            serde_json::json!({"choices": []}).to_string(),
            "no choices[0].message.content",
        ),
        (
            serde_json::json!({"choices": [{"message": {"content": "I think it is fine."}}]})
                .to_string(),
            "not the JSON the rubric asks for",
        ),
        (
            serde_json::json!({"choices": [{"message": {"content": "{\"ok\": true}"}}]})
                .to_string(),
            "no `findings` list",
        ),
    ] {
        let err = review::parse_response(bad.as_bytes(), &prompt).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
    }
}

#[test]
fn reports_round_trip_through_json() {
    let report = run(&load_fixture("research-assistant"), None);
    let json = serde_json::to_string(&report).unwrap();
    let back: QualityReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
    assert!(
        report.summary().ends_with("warnings"),
        "{}",
        report.summary()
    );
}

#[test]
fn findings_are_capped_per_report_with_a_count_of_the_rest() {
    // The review's prompt: a flood of snake_case words, each an undeclared
    // tool; plus one error the cap must keep (a prompt larger than the
    // model's window comes after the flood in the rules' order).
    let words: Vec<String> = (0..5_000).map(|i| format!("name_{i}")).collect();
    let prompt = format!(
        "version: 2\nrole: system\nsections:\n  - name: role\n    content: {}\n",
        words.join(" ")
    );
    let t = tree(&[("agent.yaml", CLEAN_AGENT), ("prompt.yaml", &prompt)]);
    let report = run(&t, Some(&models(1_000)));
    assert_eq!(report.findings.len(), quality::MAX_FINDINGS);
    assert_eq!(report.findings[0].rule, rules::PROMPT_EXCEEDS_CONTEXT);
    assert_eq!(report.count(Severity::Error), 1);
    // Every undeclared word, and the two declared tools the prompt no
    // longer mentions.
    assert_eq!(report.count(Severity::Warning), 5_002);
    assert_eq!(report.omitted.warnings, 5_002 - (quality::MAX_FINDINGS - 1));
    assert_eq!(report.more().as_deref(), Some("and 4903 more findings"));
    assert_eq!(report.summary(), "1 error, 5002 warnings");
    assert!(!report.passes(false));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["omitted"],
        serde_json::json!({"errors": 0, "warnings": 4903})
    );
    // Stored and read back, it is the same report.
    let back: QualityReport = serde_json::from_value(json).unwrap();
    assert_eq!(back.capped(), report);

    // At the cap exactly, nothing is omitted.
    let at: Vec<String> = (0..quality::MAX_FINDINGS - 2)
        .map(|i| format!("name_{i}"))
        .collect();
    let prompt = format!(
        "version: 2\nrole: system\nsections:\n  - name: role\n    content: {}\n",
        at.join(" ")
    );
    let t = tree(&[("agent.yaml", CLEAN_AGENT), ("prompt.yaml", &prompt)]);
    let report = run(&t, Some(&models(200_000)));
    assert_eq!(report.findings.len(), quality::MAX_FINDINGS);
    assert!(report.omitted.is_empty());
    assert_eq!(report.more(), None);
    assert!(
        !serde_json::to_value(&report)
            .unwrap()
            .as_object()
            .unwrap()
            .contains_key("omitted")
    );
}

#[test]
fn a_report_stored_before_the_cap_is_capped_when_read() {
    let finding = |severity, i: usize| Finding {
        rule: rules::UNDECLARED_TOOL.to_owned(),
        severity,
        file: Some("prompt.yaml".to_owned()),
        path: format!("sections[{i}].content"),
        message: "m".repeat(quality::MAX_FINDING_TEXT + 10),
        hint: None,
        source: Source::Rules,
    };
    let mut findings: Vec<Finding> = (0..300).map(|i| finding(Severity::Warning, i)).collect();
    findings.push(finding(Severity::Error, 300));
    let old = QualityReport {
        findings,
        ..QualityReport::default()
    };
    let capped = old.capped();
    assert_eq!(capped.findings.len(), quality::MAX_FINDINGS);
    assert_eq!(capped.findings[0].severity, Severity::Error);
    assert_eq!(capped.findings[1].path, "sections[0].content");
    assert_eq!(capped.omitted.warnings, 201);
    assert_eq!(capped.summary(), "1 error, 300 warnings");
    assert!(
        capped
            .findings
            .iter()
            .all(|f| f.message.chars().count() == quality::MAX_FINDING_TEXT + 1)
    );
}

#[test]
fn template_variables_are_explained() {
    let agent = "name: local-guide\nversion: 1.0.0\ndescription: Suggests places nearby.\npermissions:\n  optional: [location]\n  location:\n    reason: Places near you\ncontext:\n  inject: [time, location]\n";
    let prompt = "version: 2\nrole: system\nvariables: [city_hint, tone]\nsections:\n  - name: role\n    content: It is {{time}}. The user is near {{location.city}} (or {{city_hint}}); suggest places nearby.\n";
    let t = tree(&[("agent.yaml", agent), ("prompt.yaml", prompt)]);
    let report = run(&t, None);
    assert_eq!(
        keys(&report),
        [
            "optional-context-variable prompt.yaml:sections[0].content",
            "unused-variable prompt.yaml:variables[1]",
        ]
    );
    assert_eq!(
        report.findings[0].message,
        "{{location}} is empty on a host that does not grant location, which this agent asks for only optionally"
    );
    // A variable nothing provides does not validate; the review says why
    // too, for a prompt it is handed directly.
    let typo = parse_prompt(
        b"version: 2\nrole: system\nsections:\n  - name: role\n    content: Greet {{user_profil.name}} by name.\n",
    )
    .unwrap();
    let pkg = package(&t);
    let report = quality::check(&QualityInput {
        package: &pkg,
        prompt: PromptText::Plain(&typo),
        models: None,
    });
    let found = find(&report, rules::TEMPLATE_VARIABLE);
    assert_eq!(found.len(), 1, "{:?}", report.findings);
    assert_eq!(found[0].severity, Severity::Error);
    assert_eq!(found[0].path, "sections[0].content");
    assert_eq!(
        found[0].message,
        "{{user_profil}} is neither injected context nor a declared variable; did you mean \"user_profile\"?"
    );
}
