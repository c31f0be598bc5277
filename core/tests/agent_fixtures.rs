//! The spec's own examples, assembled into complete agent directories, pass
//! validation with zero diagnostics, and their models say what the files say.

mod agent_support;

use agent_support::{load_fixture, messages};
use agentlang_core::agent::{
    AgentSpec, Capability, CrewProcess, DelegateMode, RiskLevel, ToolConfig, parse_agent,
    parse_subagent,
};
use agentlang_core::package::validate_agent_tree;
use semver::VersionReq;

#[test]
fn research_assistant_validates_with_zero_diagnostics() {
    let tree = load_fixture("research-assistant");
    let pkg = validate_agent_tree(&tree).unwrap_or_else(|d| panic!("{}", messages(&d)));

    let subagents: Vec<&str> = pkg.subagents.keys().map(|p| p.as_str()).collect();
    assert_eq!(
        subagents,
        [
            "specialists/academic-researcher.yaml",
            "specialists/market-analyst.yaml"
        ]
    );
    let skills: Vec<&str> = pkg.skills.keys().map(|n| n.as_str()).collect();
    assert_eq!(skills, ["test-helper"]);
    let skill = pkg.skills.values().next().unwrap();
    assert!(skill.body.starts_with("# Test Helper Skill"));
    let ux = pkg.ux.as_ref().expect("ux.yaml is modelled");
    assert_eq!(ux.integrations.len(), 2);

    let agent = &pkg.agent;
    assert_eq!(agent.name.as_str(), "research-assistant");
    assert_eq!(
        agent.version.as_ref().map(ToString::to_string).as_deref(),
        Some("1.0.0")
    );
    assert_eq!(agent.model_names().collect::<Vec<_>>(), ["claude-sonnet-4"]);
    assert_eq!(agent.models["claude-sonnet-4"].options["max_tokens"], 8192);
}

#[test]
fn tool_requirements_are_registry_tools_without_delegate() {
    let tree = load_fixture("research-assistant");
    let agent = parse_agent(tree.get("agent.yaml").unwrap()).unwrap();
    let reqs: Vec<(String, Option<String>)> = agent
        .tool_requirements()
        .into_iter()
        .map(|(n, r)| (n.to_string(), r.map(|r| r.to_string())))
        .collect();
    assert_eq!(
        reqs,
        [
            ("artifacts".to_owned(), None),
            ("sqlite".to_owned(), None),
            ("web_fetch".to_owned(), Some("~1.0.0".to_owned())),
            ("web_search".to_owned(), Some("^1.2.0".to_owned())),
        ]
    );
    let Some(ToolConfig::Delegate(cfg)) = &agent.tools[4].config else {
        panic!(
            "the delegate tool's config is typed: {:?}",
            agent.tools[4].config
        );
    };
    assert_eq!(cfg.mode, Some(DelegateMode::Dynamic));
    assert_eq!(cfg.max_depth, Some(3));
    assert_eq!(
        agent.tools[0].version,
        Some(VersionReq::parse("^1.2.0").unwrap())
    );
}

#[test]
fn permissions_expose_capabilities_and_risk() {
    let tree = load_fixture("research-assistant");
    let agent = parse_agent(tree.get("agent.yaml").unwrap()).unwrap();
    let perms = agent.permissions.as_ref().unwrap();
    assert_eq!(perms.required[2], Capability::Camera);
    assert_eq!(
        perms.config[&Capability::Camera]
            .schedule
            .as_ref()
            .unwrap()
            .as_str(),
        "0 * * * *"
    );
    assert_eq!(perms.config[&Capability::Background].max_runtime, Some(60));
    assert_eq!(agent.max_risk(), Some(RiskLevel::High));
}

#[test]
fn agent_actions_list_form_and_extensions_are_kept() {
    let tree = load_fixture("research-assistant");
    let agent = parse_agent(tree.get("agent.yaml").unwrap()).unwrap();
    let ui = agent.http_tools["generate_headshot"]
        .ui_component
        .as_ref()
        .unwrap();
    let actions = ui.completed.as_ref().unwrap().actions.as_ref().unwrap();
    assert_eq!(
        actions.agent_actions.keys().collect::<Vec<_>>(),
        ["regenerate"]
    );
    assert_eq!(
        agent.extensions["x-protocols"]["acme-sync"]["schema"]["transport"],
        "websocket"
    );
    assert!(agent.http_tools["twitter_post_tweet"].oauth_tokens["twitter_token"]);
}

/// The model serializes (as the registry stores it) back into a document
/// that parses into an equal model: nothing is lost, `x-` keys included.
#[test]
fn model_round_trips_through_json() {
    let tree = load_fixture("research-assistant");
    let agent = parse_agent(tree.get("agent.yaml").unwrap()).unwrap();
    let json = serde_json::to_value(&agent).unwrap();
    assert!(json.get("x-protocols").is_some());
    assert_eq!(json["constraints"]["budget"]["x-billing-owner"], "finance");
    let yaml = yaml_serde::to_string(&json).unwrap();
    let again: AgentSpec =
        parse_agent(yaml.as_bytes()).unwrap_or_else(|d| panic!("{}\n---\n{yaml}", messages(&d)));
    assert_eq!(again, agent);
}

#[test]
fn static_crew_validates_with_zero_diagnostics() {
    let tree = load_fixture("static-crew");
    let pkg = validate_agent_tree(&tree).unwrap_or_else(|d| panic!("{}", messages(&d)));
    let crew = pkg.agent.delegate.as_ref().unwrap();
    assert_eq!(crew.process, CrewProcess::Sequential);
    let ids: Vec<&str> = crew.agents.iter().map(|m| m.id()).collect();
    assert_eq!(ids, ["researcher", "writer"]);
    assert_eq!(crew.agents[1].depends_on, ["researcher"]);
    assert_eq!(pkg.subagents.len(), 2);
}

#[test]
fn subagents_need_only_name_and_description() {
    let minimal = "name: helper\ndescription: Helps.\n";
    let sub = parse_subagent(minimal.as_bytes()).unwrap();
    assert_eq!(sub.version, None);
    let top = parse_agent(minimal.as_bytes()).unwrap_err();
    assert_eq!(messages(&top), "missing required key \"version\"");
    let nameless = parse_subagent(b"description: Helps.\n").unwrap_err();
    assert_eq!(messages(&nameless), "missing required key \"name\"");
}

#[test]
fn package_tool_requirements_merge_agent_and_subagents() {
    let mut tree = load_fixture("research-assistant");
    let analyst = String::from_utf8(
        tree.get("specialists/market-analyst.yaml")
            .unwrap()
            .to_vec(),
    )
    .unwrap()
    .replace(
        "  - name: web_fetch\n",
        "  - name: web_fetch\n    version: <1.0.5\n",
    );
    tree.insert(
        agentlang_core::MemberPath::new("specialists/market-analyst.yaml").unwrap(),
        analyst.into_bytes(),
    );
    let pkg = validate_agent_tree(&tree).unwrap_or_else(|d| panic!("{}", messages(&d)));
    let reqs: Vec<(String, Option<String>)> = pkg
        .tool_requirements()
        .into_iter()
        .map(|(n, r)| (n.to_string(), r.map(|r| r.to_string())))
        .collect();
    assert_eq!(
        reqs,
        [
            ("artifacts".to_owned(), None),
            ("sqlite".to_owned(), None),
            ("web_fetch".to_owned(), Some("~1.0.0, <1.0.5".to_owned())),
            ("web_search".to_owned(), Some("^1.2.0".to_owned())),
        ]
    );
}

#[test]
fn yaml_under_context_and_skills_is_not_a_subagent() {
    let mut tree = load_fixture("static-crew");
    for path in ["context/templates/report.yaml", "skills/notes.yaml"] {
        tree.insert(
            agentlang_core::MemberPath::new(path).unwrap(),
            b"not: an agent\n".to_vec(),
        );
    }
    let pkg = validate_agent_tree(&tree).unwrap_or_else(|d| panic!("{}", messages(&d)));
    let subagents: Vec<&str> = pkg.subagents.keys().map(|p| p.as_str()).collect();
    assert_eq!(subagents, ["researcher.yaml", "writer.yaml"]);
}
