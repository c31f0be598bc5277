//! The event format: the spec's example in all three shapes, every schema
//! problem reported with its event and field, the checks across events,
//! limits, and the replay timeline.

mod agent_support;

use agent_support::load_fixture;
use agentlang_core::{
    diagnostics::MAX_DIAGNOSTICS,
    events::{
        self, EventBody, EventLog, Limits,
        timeline::{Item, Timeline},
    },
    package::validate_agent_tree,
};

/// The spec's Event Schema example, verbatim.
const SPEC_EXAMPLE: &str = r#"events:
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

fn parse(text: &str) -> Result<EventLog, Vec<String>> {
    events::parse(text.as_bytes(), &Limits::default())
        .map_err(|d| d.iter().map(ToString::to_string).collect())
}

fn problems(text: &str) -> Vec<String> {
    let log = parse(text).unwrap_or_else(|e| panic!("does not parse: {e:?}"));
    events::check(&log, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_spec_example_reads_the_same_in_all_three_shapes() {
    let yaml = parse(SPEC_EXAMPLE).unwrap();
    assert_eq!(yaml.events.len(), 5);
    assert!(events::check(&yaml, None).is_empty());

    let lines = [
        r#"{"type":"agent.think","timestamp":"2025-01-29T10:00:00Z","agent_id":"researcher","content":"I should search for recent papers..."}"#,
        r#"{"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"researcher","tool":"web_search","input":{"query":"transformer architectures 2025"},"call_id":"abc123"}"#,
        r#"{"type":"tool.result","timestamp":"2025-01-29T10:00:03Z","call_id":"abc123","output":{"results":["..."]},"duration_ms":2000}"#,
        r#"{"type":"agent.delegate","timestamp":"2025-01-29T10:00:05Z","from":"orchestrator","to":"academic-researcher","task":"Analyze these findings"}"#,
        r#"{"type":"agent.message","timestamp":"2025-01-29T10:00:10Z","agent_id":"researcher","role":"assistant","content":"Based on my analysis..."}"#,
    ];
    let jsonl = parse(&format!("{}\n\n", lines.join("\n"))).unwrap();
    let array = parse(&format!("[{}]", lines.join(","))).unwrap();
    assert_eq!(jsonl, array);
    assert_eq!(jsonl, yaml);
    assert!(matches!(
        &yaml.events[2].body,
        EventBody::ToolResult {
            duration_ms: Some(2000),
            error: None,
            ..
        }
    ));
}

#[test]
fn every_schema_problem_is_reported_with_its_event_and_field() {
    let lines = [
        r#"{"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"a","tool":"t"}"#,
        r#"{"type":"tool.result","timestamp":"2025-01-29T10:00:02Z","call_id":"c","duration_ms":"slow","output":1}"#,
        r#"{"type":"agent.think","timestamp":"2025-01-29T10:00:03Z","agent_id":"a","content":"x","mood":"calm","x-mood":"fine"}"#,
        r#"{"type":"agent.sleep","timestamp":"2025-01-29T10:00:04Z"}"#,
        r#"{"type":"agent.message","timestamp":"yesterday","agent_id":"a","role":"assistant","content":"x"}"#,
        r#"{"type":"tool.result","timestamp":"2025-01-29T10:00:05Z","call_id":"c","error":{"code":7}}"#,
        r#"{"type":"tool.result","timestamp":"2025-01-29T10:00:05Z","call_id":"c"}"#,
        r#"{"type":"context.compact","timestamp":"2025-01-29T10:00:06Z","strategy":"summarize","tokens_before":10,"tokens_after":20}"#,
    ];
    let errs = parse(&lines.join("\n")).unwrap_err();
    let at = |prefix: &str| errs.iter().filter(|e| e.starts_with(prefix)).count();
    assert_eq!(
        at("events[0]: \"call_id\" is a required property"),
        1,
        "{errs:#?}"
    );
    assert_eq!(
        at("events[1].duration_ms: \"slow\" is not of type \"integer\""),
        1,
        "{errs:#?}"
    );
    assert_eq!(
        at("events[2]: Additional properties are not allowed ('mood' was unexpected)"),
        1,
        "{errs:#?}"
    );
    assert_eq!(at("events[3].type: "), 1, "{errs:#?}");
    assert_eq!(at("events[4].timestamp: "), 1, "{errs:#?}");
    assert_eq!(at("events[5].error"), 1, "{errs:#?}");
    assert_eq!(
        at("events[6]: a tool.result needs `output` or `error`"),
        1,
        "{errs:#?}"
    );
    assert_eq!(
        at("events[7].tokens_after: 20 is more than tokens_before (10)"),
        1,
        "{errs:#?}"
    );
    assert!(!errs.iter().any(|e| e.contains("x-mood")), "{errs:#?}");
}

#[test]
fn results_answer_earlier_calls_once_and_ids_are_unique() {
    let got = problems(
        r#"[
        {"type":"tool.result","timestamp":"2025-01-29T10:00:00Z","call_id":"early","output":1},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"a","tool":"t","call_id":"c1"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:02Z","agent_id":"b","tool":"t","call_id":"c1"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:03Z","call_id":"c1","output":1},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:04Z","call_id":"c1","error":"again"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:05Z","agent_id":"a","tool":"t","call_id":"c2"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:06Z","call_id":"c2","agent_id":"b","output":1},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:07Z","call_id":"early","output":1}
    ]"#,
    );
    assert_eq!(
        got,
        [
            "events[0].call_id: \"early\" answers no earlier tool.call",
            "events[2].call_id: \"c1\" is already the id of events[1]",
            "events[4].call_id: the tool.call \"c1\" (events[1]) was already answered",
            "events[6].agent_id: \"b\" answers a call that \"a\" made (events[5])",
            "events[7].call_id: \"early\" answers no earlier tool.call",
        ]
    );
}

#[test]
fn time_may_not_go_backwards_for_one_agent() {
    let got = problems(
        r#"[
        {"type":"agent.think","timestamp":"2025-01-29T10:00:05Z","agent_id":"a","content":"x"},
        {"type":"agent.think","timestamp":"2025-01-29T10:00:01Z","agent_id":"b","content":"other agents have their own clocks"},
        {"type":"tool.call","timestamp":"2025-01-29T11:00:05+01:00","agent_id":"a","tool":"t","call_id":"c"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:04Z","call_id":"c","output":1},
        {"type":"agent.delegate","timestamp":"2025-01-29T10:00:03Z","from":"a","to":"b","task":"go"}
    ]"#,
    );
    assert_eq!(
        got,
        [
            "events[3].timestamp: 2025-01-29T10:00:04Z is earlier than a's previous event (events[2], 2025-01-29T11:00:05+01:00): time goes backwards",
            "events[4].timestamp: 2025-01-29T10:00:03Z is earlier than a's previous event (events[2], 2025-01-29T11:00:05+01:00): time goes backwards",
        ]
    );
}

#[test]
fn with_the_agent_tools_are_declared_and_delegations_reach_known_agents() {
    let pkg = validate_agent_tree(&load_fixture("research-assistant")).unwrap();
    let spec = parse(SPEC_EXAMPLE).unwrap();
    assert!(events::check(&spec, Some(&pkg)).is_empty());

    let log = parse(
        r#"[
        {"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"academic-researcher","tool":"web_fetch","call_id":"1"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:02Z","agent_id":"market-analyst","tool":"web_fetch","call_id":"2"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:03Z","agent_id":"research-assistant","tool":"system://download_file","call_id":"3"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:04Z","agent_id":"someone","tool":"user_memory","call_id":"4"},
        {"type":"agent.delegate","timestamp":"2025-01-29T10:00:05Z","from":"research-assistant","to":"market_analyst","task":"size it"},
        {"type":"agent.delegate","timestamp":"2025-01-29T10:00:06Z","from":"research-assistant","to":"poet","task":"rhyme"}
    ]"#,
    )
    .unwrap();
    let got: Vec<String> = events::check(&log, Some(&pkg))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(
        got[0],
        "events[0].tool: \"web_fetch\" is not a tool academic-researcher declares"
    );
    assert_eq!(
        got[1],
        "events[3].tool: \"user_memory\" is not a tool someone declares"
    );
    assert!(
        got[2].starts_with(
            "events[5].to: \"poet\" is not an agent of the package (agents: academic_researcher,"
        ),
        "{}",
        got[2]
    );
}

#[test]
fn limits_bound_bytes_and_events() {
    let line =
        r#"{"type":"agent.think","timestamp":"2025-01-29T10:00:00Z","agent_id":"a","content":"x"}"#;
    let text = [line; 11].join("\n");
    let tight = Limits {
        max_bytes: 1 << 20,
        max_events: 10,
    };
    let err = events::parse(text.as_bytes(), &tight).unwrap_err();
    assert!(err.to_string().contains("at most 10 are accepted"), "{err}");
    let array = format!("[{}]", [line; 11].join(","));
    assert!(events::parse(array.as_bytes(), &tight).is_err());
    let small = Limits {
        max_bytes: 100,
        max_events: 10,
    };
    let err = events::parse(text.as_bytes(), &small).unwrap_err();
    assert!(
        err.to_string().contains("at most 100 are accepted"),
        "{err}"
    );
    assert!(events::parse(b"\xff\xfe", &Limits::default()).is_err());
    assert!(events::parse(b"just words", &Limits::default()).is_err());
}

#[test]
fn problems_are_capped_per_log_with_a_count_of_the_rest() {
    // The review's file: bad line after bad line.
    let text = "{not json\n".repeat(10_000);
    let err = events::parse(text.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.len(), 10_000);
    assert_eq!(err.iter().count(), MAX_DIAGNOSTICS);
    let lines: Vec<String> = err.lines().collect();
    assert_eq!(lines.len(), MAX_DIAGNOSTICS + 1);
    assert!(
        lines[0].starts_with("events[0]: not a JSON object (line 1): "),
        "{}",
        lines[0]
    );
    assert!(
        lines[99].starts_with("events[99]: not a JSON object (line 100)"),
        "{}",
        lines[99]
    );
    assert_eq!(lines[MAX_DIAGNOSTICS], "and 9900 more problems");

    // JSON that breaks the schema, as an array and as lines: the same cap.
    let bad = r#"{"type":"agent.think","timestamp":"2025-01-29T10:00:00Z"}"#;
    let array = format!("[{}]", [bad; 500].join(","));
    let err = events::parse(array.as_bytes(), &Limits::default()).unwrap_err();
    assert!(err.len() >= 500, "{}", err.len());
    assert_eq!(err.iter().count(), MAX_DIAGNOSTICS);
    assert!(err.more().is_some());
    let err = events::parse([bad; 500].join("\n").as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.iter().count(), MAX_DIAGNOSTICS);

    // Bad lines count as events, so the event limit bounds the work, and
    // its message comes first whatever the cap dropped.
    let tight = Limits {
        max_bytes: 1 << 20,
        max_events: 500,
    };
    let err = events::parse("{x\n".repeat(5_000).as_bytes(), &tight).unwrap_err();
    assert_eq!(
        err.iter().next().unwrap().to_string(),
        "events: the log holds more than 500 events; at most 500 are accepted"
    );
    assert_eq!(err.len(), 501);
    let array = format!("[{}]", ["1"; 600].join(","));
    let err = events::parse(array.as_bytes(), &tight).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("events: the log holds more than 500 events"),
        "{err}"
    );

    // Cross-event problems are capped too, and the timeline says so.
    let orphan = |i: usize| {
        format!(
            r#"{{"type":"tool.result","timestamp":"2025-01-29T10:00:00Z","call_id":"c{i}","output":1}}"#
        )
    };
    let text: Vec<String> = (0..150).map(orphan).collect();
    let log = parse(&text.join("\n")).unwrap();
    let found = events::check(&log, None);
    assert_eq!(found.len(), 150);
    let timeline = Timeline::new(&log, &found);
    assert_eq!(timeline.more_problems, 50);
    let rendered = timeline.render_text();
    assert!(
        rendered.ends_with("and 50 more problems not shown\n"),
        "{rendered}"
    );
}

#[test]
fn the_timeline_has_lanes_pairs_calls_and_marks_errors() {
    let log = parse(
        r#"[
        {"type":"agent.delegate","timestamp":"2025-01-29T10:00:00Z","from":"orchestrator","to":"researcher","task":"Find papers"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"researcher","tool":"web_search","input":{"query":"q"},"call_id":"a"},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:01.500Z","agent_id":"researcher","tool":"web_fetch","call_id":"b"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:03Z","call_id":"a","output":{"n":3},"duration_ms":2000},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:04Z","call_id":"b","error":{"message":"404 Not Found","code":404}},
        {"type":"context.compact","timestamp":"2025-01-29T10:00:05Z","agent_id":"researcher","strategy":"summarize","tokens_before":90000,"tokens_after":12000},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:06Z","call_id":"ghost","output":1},
        {"type":"agent.message","timestamp":"2025-01-29T10:00:07Z","agent_id":"orchestrator","role":"assistant","content":"Done."}
    ]"#,
    )
    .unwrap();
    let problems = events::check(&log, None);
    let t = Timeline::new(&log, &problems);
    let lanes: Vec<&str> = t.lanes.iter().map(|l| l.agent.as_str()).collect();
    assert_eq!(lanes, ["orchestrator", "researcher", "(unknown)"]);
    // Results fold into their calls: 8 events, 6 rows.
    assert_eq!(t.rows.len(), 6);
    assert!(matches!(
        &t.rows[0].item,
        Item::Delegate {
            from_lane: 0,
            to_lane: 1,
            ..
        }
    ));
    let Item::ToolCall {
        outcome: Some(ok), ..
    } = &t.rows[1].item
    else {
        panic!("{:?}", t.rows[1]);
    };
    assert_eq!(
        (ok.duration_ms, ok.error.as_deref(), ok.result_index),
        (Some(2000), None, 3)
    );
    let Item::ToolCall {
        outcome: Some(failed),
        ..
    } = &t.rows[2].item
    else {
        panic!("{:?}", t.rows[2]);
    };
    // No duration_ms: the time between call and result.
    assert_eq!(
        (failed.duration_ms, failed.error.as_deref()),
        (Some(2500), Some("404 Not Found"))
    );
    assert!(t.rows[2].is_error() && !t.rows[1].is_error());
    assert!(matches!(
        t.rows[3].item,
        Item::Compact {
            tokens_before: 90000,
            tokens_after: 12000,
            ..
        }
    ));
    assert!(matches!(t.rows[4].item, Item::OrphanResult { .. }) && t.rows[4].is_error());
    assert_eq!(t.rows[4].problems.len(), 1);
    assert_eq!(t.rows[5].offset_ms, 7000);
    assert_eq!(t.error_count, 2);

    let text = t.render_text();
    let want = [
        "8 events, 3 agents: orchestrator | researcher | (unknown)",
        "    +0.000s  orchestrator  delegate → researcher: Find papers",
        "    +1.000s  researcher    tool     web_search({\"query\":\"q\"}) → ok in 2000 ms: {\"n\":3}",
        "!   +1.500s  researcher    tool     web_fetch() → error in 2500 ms: 404 Not Found",
        "    +5.000s  researcher    compact  summarize: 90000 → 12000 tokens",
        "!   +6.000s  (unknown)     result   for unknown call ghost: 1",
        "             problem: events[6].call_id: \"ghost\" answers no earlier tool.call",
        "    +7.000s  orchestrator  message  assistant: Done.",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), want, "{text}");
}

#[test]
fn lanes_are_bounded() {
    let events: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"type":"agent.think","timestamp":"2025-01-29T10:00:{i:02}Z","agent_id":"agent{i}","content":"x"}}"#))
        .collect();
    let log = parse(&events.join("\n")).unwrap();
    let t = Timeline::new(&log, &events::check(&log, None));
    assert_eq!(t.lanes.len(), events::timeline::MAX_LANES);
    assert_eq!(t.overflow_agents, 8);
    assert_eq!(t.lanes.last().unwrap().agent, "agent11 and 8 more");
    assert!(t.rows.iter().all(|r| r.lane < events::timeline::MAX_LANES));
}

/// The fenced blocks of `docs/events.md` in `lang`, in order.
fn doc_blocks(lang: &str) -> Vec<String> {
    let page = include_str!("../../docs/events.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        match &mut current {
            Some(block) if line == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None if line == format!("```{lang}") => current = Some(String::new()),
            None => {}
        }
    }
    blocks
}

/// docs/events.md's example log is valid, and its bad one gets exactly the
/// problems the page shows, at the lines it names.
#[test]
fn the_docs_example_logs_say_what_the_validator_says() {
    let logs = doc_blocks("jsonl");
    assert_eq!(logs.len(), 2, "{logs:?}");
    let log = parse(&logs[0]).unwrap_or_else(|e| panic!("the docs' example: {e:?}"));
    assert_eq!(log.events.len(), 8);
    assert!(events::check(&log, None).is_empty());

    let bad = logs[1].as_bytes();
    let problems = events::parse(bad, &Limits::default()).unwrap_err();
    let lines = events::line_numbers(bad).expect("JSON lines");
    assert_eq!(lines, [1, 2, 3]);
    let shown: Vec<String> = events::on_lines(&problems, &lines)
        .iter()
        .map(|p| format!("error: session.jsonl: {p}"))
        .chain([format!("{} problem(s) in session.jsonl", problems.len())])
        .collect();
    let page = doc_blocks("text");
    assert_eq!(shown.join("\n") + "\n", page[0]);
}

#[test]
fn lines_are_counted_in_the_file_blank_ones_included() {
    let text = "\n\n{\"type\": \"agent.think\", \"timestamp\": \"2025-01-29T10:00:00Z\", \"agent_id\": \"a\", \"content\": \"x\"}\n\n{\"type\": \"agent.think\", \"timestamp\": \"2025-01-29T10:00:01Z\", \"content\": \"x\"}\nnot json\n";
    let lines = events::line_numbers(text.as_bytes()).unwrap();
    assert_eq!(lines, [3, 5, 6]);
    let problems = events::parse(text.as_bytes(), &Limits::default()).unwrap_err();
    let shown = events::on_lines(&problems, &lines);
    assert_eq!(shown[0], "line 5: \"agent_id\" is a required property");
    assert!(
        shown[1].starts_with("line 6: not a JSON object (line 6)"),
        "{shown:?}"
    );
    assert!(events::line_numbers(b"[{}]").is_none());
}

/// Every problem of every stage in one run: a schema error in one event
/// does not hide an orphan result, a duplicate id or time going backwards
/// in the others, and each keeps its place in the log.
#[test]
fn validate_reports_every_problem_of_every_stage() {
    let log = r#"{"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"a","tool":"t","call_id":"1","extra":1}
{"type":"tool.result","timestamp":"2025-01-29T10:00:02Z","call_id":"1","output":{}}
{"type":"agent.think","timestamp":"2025-01-29T10:00:03Z","agent_id":"a"}
{"type":"tool.result","timestamp":"2025-01-29T10:00:04Z","call_id":"orphan","agent_id":"a","output":{}}
{"type":"agent.message","timestamp":"2025-01-29T09:00:00Z","agent_id":"a","role":"assistant","content":"x"}
"#;
    let (kept, d) = events::validate(
        log.as_bytes(),
        &Limits::default(),
        None,
        events::OutputSchemas::new(),
    );
    assert_eq!(kept.events.len(), 3);
    let got: Vec<String> = d.iter().map(ToString::to_string).collect();
    // Schema problems of events[0] and events[2]; the result answering the
    // broken call is no orphan; the later stage still runs on the rest.
    assert!(got[0].starts_with("events[0]: "), "{got:#?}");
    assert!(got[1].starts_with("events[2]: "), "{got:#?}");
    assert_eq!(
        got[2..],
        [
            "events[3].call_id: \"orphan\" answers no earlier tool.call",
            "events[4].timestamp: 2025-01-29T09:00:00Z is earlier than a's previous event (events[3], 2025-01-29T10:00:04Z): time goes backwards",
        ],
        "{got:#?}"
    );
    // `parse` stays strict.
    assert!(events::parse(log.as_bytes(), &Limits::default()).is_err());
}

/// A result's output is held to its tool's output schema: the package's
/// inline one, else a locked tool's; each problem at the offending value.
#[test]
fn tool_outputs_fit_the_tools_output_schema() {
    let mut tree = load_fixture("research-assistant");
    let yaml = String::from_utf8(tree.get("agent.yaml").unwrap().to_vec()).unwrap();
    let yaml = yaml.replacen(
        "tools:\n",
        "tools:\n  - name: counter\n    output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}\n",
        1,
    );
    tree.insert(
        agentlang_core::MemberPath::new("agent.yaml").unwrap(),
        yaml.into_bytes(),
    );
    let pkg = match validate_agent_tree(&tree) {
        Ok(p) => p,
        // The fixture's lock does not pin the new tool; the rest stands.
        Err(d) => panic!("{d}"),
    };
    let log = r#"[
        {"type":"tool.call","timestamp":"2025-01-29T10:00:01Z","agent_id":"research-assistant","tool":"counter","call_id":"1"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:02Z","call_id":"1","output":{"n":"three"}},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:03Z","agent_id":"research-assistant","tool":"web_search","call_id":"2"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:04Z","call_id":"2","output":{"results":3}},
        {"type":"tool.call","timestamp":"2025-01-29T10:00:05Z","agent_id":"research-assistant","tool":"counter","call_id":"3"},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:06Z","call_id":"3","output":{"n":3}},
        {"type":"tool.result","timestamp":"2025-01-29T10:00:07Z","call_id":"4","error":"boom"}
    ]"#;
    let mut locked = events::OutputSchemas::new();
    locked.add(
        "web_search",
        serde_json::json!({"type": "object", "properties": {"results": {"type": "array"}}}),
    );
    let (_, d) = events::validate(log.as_bytes(), &Limits::default(), Some(&pkg), locked);
    let got: Vec<String> = d.iter().map(ToString::to_string).collect();
    assert_eq!(
        got,
        [
            "events[6].call_id: \"4\" answers no earlier tool.call",
            "events[1].output.n: \"three\" is not of type \"integer\" (counter's output_schema) [tool-output-invalid]",
            "events[3].output.results: 3 is not of type \"array\" (web_search's output_schema) [tool-output-invalid]",
        ]
    );
}
