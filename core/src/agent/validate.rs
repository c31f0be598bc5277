//! Rules that relate one section of an agent.yaml to another: every tool an
//! action calls is declared, tool names are declared once, a static crew's
//! dependencies exist and form no cycle, custom protocols are defined, and
//! the delegate tool stays within the delegation limit.

use std::collections::{BTreeMap, HashMap};

use super::model::{AgentSpec, StaticCrew, ToolConfig, UiComponent};
use crate::diagnostics::{Diagnostics, index, join};

pub(super) fn cross_check(spec: &AgentSpec, diags: &mut Diagnostics) {
    unique_tool_names(spec, diags);
    action_tools(spec, diags);
    if let Some(crew) = &spec.delegate {
        crew_graph(crew, diags);
    }
    custom_protocols(spec, diags);
    delegation_depth(spec, diags);
}

/// A tool name must mean one thing: two declarations of it (say a registry
/// tool and an HTTP tool) would leave the runtime guessing.
fn unique_tool_names(spec: &AgentSpec, diags: &mut Diagnostics) {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut declare = |name: &str, path: String, diags: &mut Diagnostics| {
        if let Some(first) = seen.get(name) {
            diags.push(
                path,
                format!("tool {name:?} is already declared at {first}"),
            );
        } else {
            seen.insert(name.to_owned(), path);
        }
    };
    // Duplicates within `tools:` are reported while reading it.
    let mut registry = std::collections::HashSet::new();
    for (i, t) in spec.tools.iter().enumerate() {
        if registry.insert(t.name.as_str()) {
            declare(t.name.as_str(), join(&index("tools", i), "name"), diags);
        }
    }
    for (server, s) in &spec.mcp_servers {
        let tp = join(&join("mcp_servers", server), "tools");
        for (i, t) in s.tools.iter().flatten().enumerate() {
            declare(t, index(&tp, i), diags);
        }
    }
    for name in spec.http_tools.keys() {
        declare(name, join("http_tools", name), diags);
    }
    for name in spec.bash_tools.keys() {
        declare(name, join("bash_tools", name), diags);
    }
}

fn check_sync_tools(spec: &AgentSpec, actions: &UiComponent, path: &str, diags: &mut Diagnostics) {
    for (name, action) in &actions.sync_actions {
        if !spec.can_call(&action.tool) {
            diags.push(
                join(&join(&join(path, "sync_actions"), name), "tool"),
                format!(
                    "{:?} is not declared by this agent (tools, mcp_servers whitelists, http_tools or bash_tools) nor a system:// built-in",
                    action.tool
                ),
            );
        }
    }
}

fn action_tools(spec: &AgentSpec, diags: &mut Diagnostics) {
    for (name, component) in &spec.ui_components {
        check_sync_tools(spec, component, &join("ui_components", name), diags);
    }
    for (name, tool) in &spec.http_tools {
        let Some(ui) = &tool.ui_component else {
            continue;
        };
        let base = join(&join("http_tools", name), "ui_component");
        for (status, render) in [
            ("running", &ui.running),
            ("completed", &ui.completed),
            ("failed", &ui.failed),
        ] {
            if let Some(actions) = render.as_ref().and_then(|r| r.actions.as_ref()) {
                check_sync_tools(spec, actions, &join(&join(&base, status), "actions"), diags);
            }
        }
    }
}

fn crew_graph(crew: &StaticCrew, diags: &mut Diagnostics) {
    let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, member) in crew.agents.iter().enumerate() {
        if let Some(first) = ids.insert(member.id(), i) {
            diags.push(
                join(&index("delegate.agents", i), "path"),
                format!(
                    "{:?} is already in the crew at delegate.agents[{first}]",
                    member.id()
                ),
            );
            ids.insert(member.id(), first);
        }
    }
    for (i, member) in crew.agents.iter().enumerate() {
        let dp = join(&index("delegate.agents", i), "depends_on");
        for (j, dep) in member.depends_on.iter().enumerate() {
            if !ids.contains_key(dep.as_str()) {
                let known: Vec<&str> = ids.keys().copied().collect();
                diags.push(
                    index(&dp, j),
                    format!(
                        "{dep:?} is not a crew member (members: {})",
                        known.join(", ")
                    ),
                );
            }
        }
    }
    for cycle in cycles(crew) {
        diags.push(
            "delegate.agents",
            format!("depends_on forms a cycle: {}", cycle.join(" -> ")),
        );
    }
}

/// Every dependency cycle, each once, as `a -> b -> a`.
fn cycles(crew: &StaticCrew) -> Vec<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let edges: BTreeMap<&str, Vec<&str>> = crew
        .agents
        .iter()
        .map(|m| (m.id(), m.depends_on.iter().map(String::as_str).collect()))
        .collect();
    let mut marks: BTreeMap<&str, Mark> = edges.keys().map(|k| (*k, Mark::New)).collect();
    let mut found = Vec::new();

    fn visit<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        stack: &mut Vec<&'a str>,
        found: &mut Vec<Vec<String>>,
    ) {
        marks.insert(node, Mark::Active);
        stack.push(node);
        for next in edges.get(node).into_iter().flatten() {
            match marks.get(next) {
                Some(Mark::New) => visit(next, edges, marks, stack, found),
                Some(Mark::Active) => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[start..].iter().map(|s| (*s).to_owned()).collect();
                    cycle.push((*next).to_owned());
                    found.push(cycle);
                }
                // Done, or not a member (reported separately).
                _ => {}
            }
        }
        stack.pop();
        marks.insert(node, Mark::Done);
    }

    // Crew order, so the message follows the file.
    for member in &crew.agents {
        if marks.get(member.id()) == Some(&Mark::New) {
            visit(member.id(), &edges, &mut marks, &mut Vec::new(), &mut found);
        }
    }
    found
}

fn custom_protocols(spec: &AgentSpec, diags: &mut Diagnostics) {
    let defined = spec
        .extensions
        .get("x-protocols")
        .and_then(serde_json::Value::as_object);
    for (i, p) in spec.protocols.iter().enumerate() {
        let Some(custom) = p.custom_name() else {
            continue;
        };
        if !defined.is_some_and(|d| d.contains_key(custom)) {
            diags.push(
                join(&index("protocols", i), "name"),
                format!("custom protocol {custom:?} is not defined under x-protocols"),
            );
        }
    }
}

fn delegation_depth(spec: &AgentSpec, diags: &mut Diagnostics) {
    let limit = spec
        .constraints
        .as_ref()
        .and_then(|c| c.limits.as_ref())
        .and_then(|l| l.max_delegation_depth);
    let Some(limit) = limit else { return };
    for (i, t) in spec.tools.iter().enumerate() {
        if let Some(ToolConfig::Delegate(cfg)) = &t.config
            && let Some(depth) = cfg.max_depth
            && depth > limit
        {
            diags.push(
                join(&join(&index("tools", i), "config"), "max_depth"),
                format!("{depth} exceeds constraints.limits.max_delegation_depth ({limit})"),
            );
        }
    }
}
