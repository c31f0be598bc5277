//! agent.yaml's named rules at publish: a hand-built, signed container
//! breaking them is refused with the rule's own problem type (the first
//! broken in `Rule::ALL`'s order), every problem listed with its file, path
//! and rule, exactly as `validate` reports them for the same files. A
//! plaintext prompt's variables are judged too (the registry cannot read
//! an encrypted one).

use std::collections::BTreeSet;

use agentlang_core::{
    Kind, MemberPath, SourceTree,
    package::{Members, validate_package},
};
use reqwest::StatusCode;

use crate::{
    publish::{locked_agent, publish, published, publisher},
    support::{Backend, TestApp, backend_tests, problem, rule_errors},
};

backend_tests!(
    an_agent_breaking_mode_context_and_prompt_rules_is_refused_with_each_rule,
    a_dynamic_subagent_over_its_parents_budget_is_refused_in_its_own_file,
);

/// What `validate` says of the same files: (file, path, rule).
fn validated(files: &[(&str, &[u8])]) -> BTreeSet<(String, String, String)> {
    let mut tree = SourceTree::new();
    for (path, bytes) in files {
        tree.insert(MemberPath::new(*path).unwrap(), bytes.to_vec());
    }
    validate_package(Kind::Agent, &Members::from_tree(&tree))
        .unwrap_err()
        .iter()
        .map(|d| {
            (
                d.file.clone().unwrap_or_default(),
                d.path.clone(),
                d.rule.map(|r| r.slug().to_owned()).unwrap_or_default(),
            )
        })
        .collect()
}

const BROKEN_AGENT: &str = "name: watcher\nversion: 1.0.0\ndescription: Listens and watches.\n\
permissions:\n  required: [camera, microphone]\n  microphone:\n    mode: scheduled\n    schedule: \"0 * * * *\"\n  \
camera:\n    mode: scheduled\n    schedule: \"0 * * * *\"\ncontext:\n  inject: [tiem, location]\n";

const BROKEN_PROMPT: &str = "version: 2\nrole: system\nsections:\n  - name: task\n    content: Report what you see near {{locaton}}.\n";

async fn an_agent_breaking_mode_context_and_prompt_rules_is_refused_with_each_rule(
    backend: Backend,
) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bytes = locked_agent(
        &alice.key,
        BROKEN_AGENT,
        &[("prompt.yaml", BROKEN_PROMPT.as_bytes())],
        None,
    );
    let res = publish(&app, &alice.token, bytes).await;
    // permission-mode comes first in the rules' order.
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "permission-mode").await;
    let found = rule_errors(&body);
    let want: BTreeSet<(String, String, String)> = [
        (
            "agent.yaml",
            "permissions.microphone.mode",
            "permission-mode",
        ),
        (
            "agent.yaml",
            "permissions.camera.mode",
            "background-required",
        ),
        ("agent.yaml", "context.inject[0]", "context-unknown"),
        ("agent.yaml", "context.inject[1]", "context-permission"),
    ]
    .into_iter()
    .map(|(f, p, r)| (f.to_owned(), p.to_owned(), r.to_owned()))
    .collect();
    assert_eq!(found, want, "{body}");
    // As validate says of the same files.
    assert_eq!(
        found,
        validated(&[
            ("agent.yaml", BROKEN_AGENT.as_bytes()),
            ("prompt.yaml", BROKEN_PROMPT.as_bytes()),
        ])
    );
    let messages: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        messages.contains(&"\"tiem\" is not a known value; did you mean \"time\"?"),
        "{body}"
    );

    // The prompt's variables are judged against a valid agent.yaml's
    // context.inject (a broken one says nothing reliable of it).
    let fixed = "name: watcher\nversion: 1.0.0\ndescription: Listens and watches.\n\
permissions:\n  optional: [location]\ncontext:\n  inject: [time, location]\n";
    let bytes = locked_agent(
        &alice.key,
        fixed,
        &[("prompt.yaml", BROKEN_PROMPT.as_bytes())],
        None,
    );
    let res = publish(&app, &alice.token, bytes).await;
    let body = problem(res, StatusCode::UNPROCESSABLE_ENTITY, "template-variable").await;
    let want: BTreeSet<(String, String, String)> = [(
        "prompt.yaml".to_owned(),
        "sections[0].content".to_owned(),
        "template-variable".to_owned(),
    )]
    .into();
    assert_eq!(rule_errors(&body), want, "{body}");
    assert_eq!(
        body["errors"][0]["message"],
        "{{locaton}} is neither injected context nor a declared variable; did you mean \"location\"?"
    );
}

const LEAD: &str = "name: lead\nversion: 1.0.0\ndescription: Splits the work.\n\
tools:\n  - name: delegate\n    config:\n      mode: dynamic\n      discovery: directory\n\
constraints:\n  budget:\n    max_cost_usd: 1.00\n";

const PROMPT: &str =
    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Split the work.\n";

async fn a_dynamic_subagent_over_its_parents_budget_is_refused_in_its_own_file(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let spender: &[u8] = b"name: spender\ndescription: Spends freely on research.\n\
constraints:\n  budget:\n    max_cost_usd: 1.50\n";
    let frugal: &[u8] = b"name: frugal\ndescription: Spends carefully on research.\n\
constraints:\n  budget:\n    max_cost_usd: 1.00\n";
    let files: &[(&str, &[u8])] = &[
        ("prompt.yaml", PROMPT.as_bytes()),
        ("specialists/spender.yaml", spender),
        ("specialists/frugal.yaml", frugal),
    ];
    let bytes = locked_agent(&alice.key, LEAD, files, None);
    let res = publish(&app, &alice.token, bytes).await;
    let body = problem(
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "budget-exceeds-parent",
    )
    .await;
    let want: BTreeSet<(String, String, String)> = [(
        "specialists/spender.yaml".to_owned(),
        "constraints.budget.max_cost_usd".to_owned(),
        "budget-exceeds-parent".to_owned(),
    )]
    .into();
    assert_eq!(rule_errors(&body), want, "{body}");

    // Within the parent's budget, the same package publishes.
    let thrifty: &[u8] = b"name: spender\ndescription: Spends freely on research.\n\
constraints:\n  budget:\n    max_cost_usd: 0.90\n";
    let files: &[(&str, &[u8])] = &[
        ("prompt.yaml", PROMPT.as_bytes()),
        ("specialists/spender.yaml", thrifty),
        ("specialists/frugal.yaml", frugal),
    ];
    published(
        &app,
        &alice.token,
        locked_agent(&alice.key, LEAD, files, None),
    )
    .await;
}
