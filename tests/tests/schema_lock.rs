//! `agentlang lock` judges an agent's inline tool schemas against the
//! locked versions' published ones (read from the registry's version
//! records), as publish does: a contradiction stops the lock with every
//! problem at its path and rule; a narrowing locks.

use std::fs;

use agentlang_e2e::{publisher, start_registry, write_tool};

const TOOL: &str = "name: web_search\nversion: 1.2.0\ndescription: Searches the web.\nkind: builtin\n\
                    input_schema:\n  type: object\n  properties:\n    query: {type: string}\n  \
                    additionalProperties: false\noutput_schema:\n  type: object\n  properties:\n    total_count: {type: integer}\n";

const PROMPT: &str = "version: 2\nrole: system\nsections:\n  - name: task\n    content: Search.\n";

#[test]
fn lock_refuses_an_inline_schema_contradicting_the_published_one() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_tool(&alice.path("web_search"), TOOL);
    alice.ok(&["publish", "web_search"]);

    let dir = alice.path("searcher");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();
    let agent = |schema: &str| {
        fs::write(
            dir.join("agent.yaml"),
            format!(
                "name: searcher\nversion: 1.0.0\ndescription: Searches.\n\
                 tools:\n  - name: web_search\n    version: ^1.2.0\n    input_schema: {schema}\n"
            ),
        )
        .unwrap();
    };

    agent("{type: object, properties: {query: {type: integer}, lang: {type: string}}}");
    let run = alice.run(&["lock", "searcher"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    for expected in [
        "agent.yaml: tools[0].input_schema.properties.query.type: type integer contradicts the tool's schema: the published input_schema of web_search 1.2.0 says type string [schema-contradicts-locked]",
        "agent.yaml: tools[0].input_schema.properties.lang: \"lang\" cannot be there",
    ] {
        assert!(
            run.stderr.contains(expected),
            "missing {expected:?} in {}",
            run.stderr
        );
    }
    assert!(!dir.join("agent.lock").exists());

    agent("{type: object, properties: {query: {type: string, maxLength: 80}}}");
    alice.ok(&["lock", "searcher"]);
    alice.ok(&["validate", "searcher"]);

    // Installed, the locked tool's published output schema holds the
    // results `events validate` reads.
    alice.ok(&["publish", "searcher"]);
    alice.ok(&["install", "searcher", "--dir", "consumer"]);
    fs::write(
        alice.path("session.jsonl"),
        "{\"type\":\"tool.call\",\"timestamp\":\"2025-01-29T10:00:01Z\",\"agent_id\":\"searcher\",\"tool\":\"web_search\",\"call_id\":\"c1\"}\n\
         {\"type\":\"tool.result\",\"timestamp\":\"2025-01-29T10:00:02Z\",\"call_id\":\"c1\",\"output\":{\"total_count\":\"many\"}}\n",
    )
    .unwrap();
    let run = alice.run(&["events", "validate", "session.jsonl", "--agent", "consumer"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "line 2, output.total_count: \"many\" is not of type \"integer\" (web_search's output_schema) [tool-output-invalid]"
        ),
        "{}",
        run.stderr
    );
}
