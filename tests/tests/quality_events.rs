//! `agentlang quality`, `build --quality` and `events validate/replay`, run
//! as a user would. The model reviewer is a small local HTTP server that
//! speaks the chat-completions API (the mock from this crate): what the CLI
//! sends it is checked, and its answers (good, failing, nonsense) are
//! merged or reported.

use std::fs;

use agentlang_e2e::{
    User, copy_dir,
    mock::{MockRegistry, Reply},
    workspace_root,
};
use serde_json::{Value, json};

fn dead_registry() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn research_assistant(user: &User) {
    copy_dir(
        &workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &user.path("ra"),
    );
}

fn chat_answer(content: &Value) -> Reply {
    Reply::json(
        200,
        &json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content.to_string()}}]
        }),
    )
}

#[test]
fn quality_reports_rule_findings_and_denies_warnings_on_request() {
    let user = User::new(&dead_registry());
    research_assistant(&user);
    // Warnings alone pass...
    let run = user.run(&["quality", "ra"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(
            "warning[undeclared-tool]: prompt.yaml: sections[3].content: the prompt names \"user_memory\""
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("  hint: declare user_memory under tools:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("model review: skipped (AGENTLANG_REVIEW_URL is not set)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.starts_with("✓ quality of ra: "),
        "{}",
        run.stdout
    );
    // ...unless warnings are denied.
    let run = user.run(&["--json", "quality", "ra", "--deny", "warnings"]);
    assert_eq!(run.code, Some(1));
    let report = run.json();
    assert_eq!(report["passed"], false);
    assert_eq!(report["report"]["model_review"]["status"], "skipped");
    let rules: Vec<&str> = report["report"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"undeclared-tool") && rules.contains(&"unused-tool"),
        "{rules:?}"
    );

    // build --quality --deny warnings stops before anything is written.
    user.ok(&["keygen"]);
    let err = user.fails(&["build", "ra", "--quality", "--deny", "warnings"]);
    assert!(err.contains("the quality review of ra failed"), "{err}");
    assert!(err.contains("nothing was built"), "{err}");
    assert!(!user.path("research-assistant@1.0.0.agent").exists());
    assert!(!user.path("ra/agent.lock").exists());
}

#[test]
fn the_model_reviewer_is_asked_over_chat_completions_and_its_findings_are_marked() {
    let user = User::new(&dead_registry());
    research_assistant(&user);
    let reviewer = MockRegistry::start();
    reviewer.route(
        "POST",
        "/v1/chat/completions",
        chat_answer(&json!({"findings": [
            {"severity": "error", "section": "workflow", "message": "Never says what to do when a source is paywalled.", "hint": "Add a step for paywalled sources."}
        ]})),
    );
    let base = format!("{}/v1", reviewer.url);
    let env = [
        ("AGENTLANG_REVIEW_URL", base.as_str()),
        ("AGENTLANG_REVIEW_KEY", "sk-test-123"),
        ("AGENTLANG_REVIEW_MODEL", "review-model-1"),
    ];
    let run = user.run_with(&["--json", "quality", "ra"], &env, "");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let out = run.json();
    assert_eq!(
        out["report"]["model_review"],
        json!({"status": "done", "model": "review-model-1", "findings": 1})
    );
    let model: Vec<&Value> = out["report"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["source"] == "model")
        .collect();
    assert_eq!(model.len(), 1, "{out}");
    assert_eq!(model[0]["rule"], "model-review");
    assert_eq!(
        model[0]["severity"], "warning",
        "a model never fails a build alone"
    );
    assert_eq!(model[0]["path"], "sections[3]");

    // What the reviewer got: the bearer key, the model, the rubric, the
    // compiled prompt and the spec summary.
    let seen = reviewer.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-test-123");
    let request: Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(request["model"], "review-model-1");
    assert_eq!(request["messages"][0]["role"], "system");
    assert!(
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You review the system prompt of an AI agent")
    );
    let user_message = request["messages"][1]["content"].as_str().unwrap();
    assert!(
        user_message.contains("## workflow\n1. Check user_memory"),
        "{user_message}"
    );
    assert!(user_message.contains("\"web_search\""), "{user_message}");

    // A reviewer that fails is reported, and fails --deny warnings.
    reviewer.route(
        "POST",
        "/v1/chat/completions",
        Reply::problem(503, "Overloaded", "try later"),
    );
    let run = user.run_with(&["quality", "ra", "--deny", "warnings"], &env, "");
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("warning[model-review-failed] (model): the model review failed: the reviewer answered 503"),
        "{}",
        run.stderr
    );
    // An answer that is not the rubric's JSON is a failure too.
    reviewer.route(
        "POST",
        "/v1/chat/completions",
        chat_answer(&json!("Looks great to me!")),
    );
    let out = user.run_with(&["--json", "quality", "ra"], &env, "").json();
    assert_eq!(out["report"]["model_review"]["status"], "failed");
    assert!(
        out["report"]["model_review"]["reason"]
            .as_str()
            .unwrap()
            .contains("no `findings` list"),
        "{out}"
    );
}

const SPEC_EVENTS: &str = r#"events:
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
    output: { results: [] }
    duration_ms: 2000
  - type: agent.delegate
    timestamp: 2025-01-29T10:00:05Z
    from: orchestrator
    to: academic-researcher
    task: "Analyze these findings"
"#;

#[test]
fn events_validate_and_replay_work_offline() {
    let user = User::new(&dead_registry());
    research_assistant(&user);
    fs::write(user.path("session.yaml"), SPEC_EVENTS).unwrap();
    let run = user.ok(&["events", "validate", "session.yaml", "--agent", "ra"]);
    assert!(
        run.stdout
            .contains("session.yaml is valid: 4 events, 2 agents, every tool declared"),
        "{}",
        run.stdout
    );

    let bad = SPEC_EVENTS
        .replace("tool: web_search", "tool: user_memory")
        .replace("to: academic-researcher", "to: poet");
    fs::write(user.path("bad.yaml"), bad).unwrap();
    let run = user.run(&["--json", "events", "validate", "bad.yaml", "--agent", "ra"]);
    assert_eq!(run.code, Some(1));
    let fields: Vec<String> = run.json()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fields, ["events[1].tool", "events[3].to"]);

    // Every stage in one run: a schema error in one event does not hide
    // the orphan result and the undeclared tool in the others.
    let staged = SPEC_EVENTS
        .replace(
            "    content: \"I should search",
            "    contents: \"I should search",
        )
        .replace("tool: web_search", "tool: user_memory")
        .replace(
            "    call_id: abc123\n    output",
            "    call_id: nobody\n    output",
        );
    fs::write(user.path("staged.yaml"), staged).unwrap();
    let run = user.run(&["events", "validate", "staged.yaml", "--agent", "ra"]);
    assert_eq!(run.code, Some(1));
    for expected in [
        "staged.yaml: events[0]",
        "staged.yaml: events[2].call_id: \"nobody\" answers no earlier tool.call",
        "staged.yaml: events[1].tool: \"user_memory\" is not a tool researcher declares",
    ] {
        assert!(
            run.stderr.contains(expected),
            "missing {expected:?} in {}",
            run.stderr
        );
    }

    let run = user.ok(&["events", "replay", "session.yaml"]);
    let call = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("+1.000s"))
        .unwrap_or_default();
    assert!(
        call.contains(" researcher ")
            && call.contains(
                "tool     web_search({\"query\":\"transformer architectures 2025\"}) → ok in 2000 ms"
            ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .starts_with("4 events, 3 agents: researcher | orchestrator | academic-researcher"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("delegate → academic-researcher"),
        "{}",
        run.stdout
    );

    let schema = user.ok(&["events", "schema"]);
    let schema: Value = serde_json::from_str(&schema.stdout).unwrap();
    assert_eq!(schema["title"], "AgentLang event");
}
