//! Rules that relate one section of an agent.yaml to another: every tool an
//! action calls is declared, tool names are declared once, a static crew's
//! dependencies exist and form no cycle, inline custom protocols are well
//! formed and match their requirement, the delegate tool stays within
//! the delegation limit (the spec's default of 3 when none is declared),
//! each capability is asked for in a mode it allows, scheduled work has
//! background to wake it, and `context` speaks its vocabulary.

use std::collections::{BTreeMap, HashMap};

use super::context::{INJECT_NAMES, PRESERVE, injected};
use super::model::{AgentSpec, StaticCrew, ToolConfig, UiComponent};
use super::permissions::PermissionMode;
use super::template::placeholders;
use super::ui::{BUILTIN_COMPONENTS, prop_names, render_tool_name};
use crate::capability::Capability;
use crate::diagnostics::{Diagnostics, index, join};
use crate::keys::suggest;
use crate::rules::Rule;

pub(super) fn cross_check(spec: &AgentSpec, diags: &mut Diagnostics) {
    unique_tool_names(spec, diags);
    action_tools(spec, diags);
    ui_contract(spec, diags);
    if let Some(crew) = &spec.delegate {
        crew_graph(crew, diags);
    }
    crate::protocols::check_inline(spec, diags);
    // Routes between the schemas the file itself declares; lock and
    // publish judge again with the locked tools' published schemas.
    diags.extend(crate::schema_compat::check(
        spec,
        &crate::schema_compat::Published::new(),
    ));
    delegation_depth(spec, diags);
    permission_modes(spec, diags);
    context_vocabulary(spec, diags);
}

/// `a, b or c`.
fn either(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Each capability in a mode the spec allows it ([`Capability::modes`]);
/// scheduled work with `background` at least as required as the work, so
/// a host that cannot wake the agent refuses it (or runs it degraded)
/// instead of never running it. `continuous` needs no background: the spec
/// defines it as "always active while agent runs", and a run is attended.
fn permission_modes(spec: &AgentSpec, diags: &mut Diagnostics) {
    let Some(perms) = &spec.permissions else {
        return;
    };
    let background_required = perms.required.contains(&Capability::Background);
    let background_declared =
        background_required || perms.optional.contains(&Capability::Background);
    for (cap, cfg) in &perms.config {
        let Some(mode) = cfg.mode else { continue };
        let path = join(&join("permissions", cap.as_str()), "mode");
        if !cap.modes().contains(&mode) {
            let allowed: Vec<&str> = cap.modes().iter().map(|m| m.as_str()).collect();
            diags.push_rule(
                Rule::PermissionMode,
                path,
                format!("{cap} may be asked for {}, not {mode}", either(&allowed)),
            );
            continue;
        }
        if mode != PermissionMode::Scheduled || *cap == Capability::Background {
            continue;
        }
        let required = perms.required.contains(cap);
        // Configured but not listed is reported while reading.
        let optional = perms.optional.contains(cap);
        if required && !background_required {
            diags.push_rule(
                Rule::BackgroundRequired,
                path,
                format!(
                    "{cap} runs on a schedule, which needs the host to wake the agent: list background under permissions.required{}",
                    if background_declared { " (not optional)" } else { "" }
                ),
            );
        } else if optional && !background_declared {
            diags.push_rule(
                Rule::BackgroundRequired,
                path,
                format!(
                    "{cap} runs on a schedule, which needs the host to wake the agent: list background under permissions (required, or optional as {cap} is)"
                ),
            );
        }
    }
}

/// `context.compaction.preserve` and `context.inject` name only what the
/// vocabulary knows ([`super::context`]), and an injected value that comes
/// from a capability has it declared.
fn context_vocabulary(spec: &AgentSpec, diags: &mut Diagnostics) {
    let Some(ctx) = &spec.context else { return };
    let unknown = |value: &str, known: &[&str]| match suggest(value, known) {
        Some(s) => format!("{value:?} is not a known value; did you mean {s:?}?"),
        None => format!("{value:?} is not a known value; expected {}", either(known)),
    };
    if let Some(c) = &ctx.compaction {
        for (i, value) in c.preserve.iter().enumerate() {
            if !PRESERVE.contains(&value.as_str()) {
                diags.push_rule(
                    Rule::ContextUnknown,
                    index("context.compaction.preserve", i),
                    unknown(value, PRESERVE),
                );
            }
        }
    }
    let declared = |c: Capability| {
        spec.permissions
            .as_ref()
            .is_some_and(|p| p.requested().any(|r| r == c))
    };
    for (i, value) in ctx.inject.iter().enumerate() {
        let path = index("context.inject", i);
        match injected(value) {
            None => diags.push_rule(Rule::ContextUnknown, path, unknown(value, INJECT_NAMES)),
            Some(entry) => {
                if let Some(cap) = entry.needs
                    && !declared(cap)
                {
                    diags.push_rule(
                        Rule::ContextPermission,
                        path,
                        format!(
                            "injecting {value} needs the {cap} capability: list it under permissions.required or optional"
                        ),
                    );
                }
            }
        }
    }
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
    // Generated render tools share the namespace.
    for name in spec.ui_components.keys() {
        declare(&render_tool_name(name), join("ui_components", name), diags);
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
        for (status, render) in ui.states() {
            if let Some(actions) = &render.actions {
                check_sync_tools(spec, actions, &join(&join(&base, status), "actions"), diags);
            }
        }
    }
}

/// The generative-UI contract: actions refer only to props their
/// component declares, and a tool's UI states name a declared or built-in
/// component.
fn ui_contract(spec: &AgentSpec, diags: &mut Diagnostics) {
    for (name, component) in &spec.ui_components {
        let Some(props) = prop_names(component) else {
            continue;
        };
        let base = join("ui_components", name);
        let actions = component
            .sync_actions
            .iter()
            .map(|(a, s)| (join(&join(&base, "sync_actions"), a), &s.params))
            .chain(
                component
                    .agent_actions
                    .iter()
                    .map(|(a, s)| (join(&join(&base, "agent_actions"), a), &s.params)),
            );
        for (path, params) in actions {
            for (key, value) in params {
                for root in placeholder_roots(value) {
                    if !props.contains(&root.as_str()) {
                        diags.push(
                            join(&join(&path, "params"), key),
                            format!(
                                "{{{{{root}}}}} is not a prop of {name} (its props: {})",
                                if props.is_empty() {
                                    "none".to_owned()
                                } else {
                                    props.join(", ")
                                }
                            ),
                        );
                    }
                }
            }
        }
    }
    for (name, tool) in &spec.http_tools {
        let Some(ui) = &tool.ui_component else {
            continue;
        };
        let base = join(&join("http_tools", name), "ui_component");
        for (status, render) in ui.states() {
            let c = render.component.as_str();
            if !spec.ui_components.contains_key(c) && !BUILTIN_COMPONENTS.contains(&c) {
                diags.push(
                    join(&join(&base, status), "component"),
                    format!(
                        "{c:?} is neither declared under ui_components nor a built-in component ({})",
                        BUILTIN_COMPONENTS.join(", ")
                    ),
                );
            }
        }
    }
}

/// The first names the `{{...}}` value placeholders in `value` refer to.
fn placeholder_roots(value: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => {
                // Syntax errors are reported where params are read.
                for p in placeholders(s).unwrap_or_default() {
                    if let Some(root) = p.root() {
                        out.push(root.to_owned());
                    }
                }
            }
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    out
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
                // A few names say what is meant; all of them, once per
                // unknown dependency, would grow with the square of the crew.
                let mut known: Vec<&str> = ids.keys().copied().take(MAX_LISTED).collect();
                if ids.len() > MAX_LISTED {
                    known.push("…");
                }
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

/// Crew members named in one message at most.
const MAX_LISTED: usize = 10;

/// Cycles reported at most: one is enough to fix, and a crew of thousands
/// could otherwise hold as many.
const MAX_CYCLES: usize = 10;

/// Dependency cycles, each once, as `a -> b -> a`, at most [`MAX_CYCLES`].
/// An iterative depth-first search: a chain as long as the crew cannot
/// overflow the stack, and each member is visited once.
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

    // Crew order, so the message follows the file.
    for member in &crew.agents {
        if marks.get(member.id()) != Some(&Mark::New) {
            continue;
        }
        // The path from the root, each node with how many of its edges
        // have been followed.
        let mut stack: Vec<(&str, usize)> = vec![(member.id(), 0)];
        marks.insert(member.id(), Mark::Active);
        while let Some((node, followed)) = stack.last().copied() {
            let next = edges.get(node).and_then(|e| e.get(followed)).copied();
            let Some(next) = next else {
                stack.pop();
                marks.insert(node, Mark::Done);
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match marks.get(next) {
                Some(Mark::New) => {
                    marks.insert(next, Mark::Active);
                    stack.push((next, 0));
                }
                Some(Mark::Active) if found.len() < MAX_CYCLES => {
                    let start = stack.iter().position(|(n, _)| *n == next).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[start..]
                        .iter()
                        .map(|(n, _)| (*n).to_owned())
                        .collect();
                    cycle.push(next.to_owned());
                    found.push(cycle);
                }
                // Done, past the cap, or not a member (reported separately).
                _ => {}
            }
        }
    }
    found
}

/// A custom protocol may also be published as a `protocol` package, so one
/// missing from `x-protocols` is checked against the registry (by `lock`
/// and `publish`), not here.
fn delegation_depth(spec: &AgentSpec, diags: &mut Diagnostics) {
    let limits = crate::constraints::effective(spec);
    let limit = limits.max_delegation_depth;
    let origin = if limits.max_delegation_depth_is_default {
        " (the default; set constraints.limits.max_delegation_depth to allow more)"
    } else {
        ""
    };
    for (i, t) in spec.tools.iter().enumerate() {
        if let Some(ToolConfig::Delegate(cfg)) = &t.config
            && let Some(depth) = cfg.max_depth
            && depth > limit
        {
            diags.push(
                join(&join(&index("tools", i), "config"), "max_depth"),
                format!(
                    "{depth} exceeds constraints.limits.max_delegation_depth ({limit}){origin}"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{
        Extensions,
        model::{CrewMember, CrewProcess, DelegateMode},
    };

    fn crew(members: impl IntoIterator<Item = (String, Vec<String>)>) -> StaticCrew {
        StaticCrew {
            mode: DelegateMode::Static,
            process: CrewProcess::Sequential,
            agents: members
                .into_iter()
                .map(|(name, depends_on)| CrewMember {
                    path: format!("./{name}.yaml"),
                    task: None,
                    depends_on,
                    budget: None,
                    extensions: Extensions::new(),
                })
                .collect(),
            extensions: Extensions::new(),
        }
    }

    #[test]
    fn a_crew_as_long_as_a_file_allows_is_searched_without_recursion() {
        // 50,000 members in one chain closing into a cycle: a recursive
        // search would overflow a test thread's stack.
        let n = 50_000;
        let chain = crew((0..n).map(|i| (format!("a{i}"), vec![format!("a{}", (i + 1) % n)])));
        let found = cycles(&chain);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), n + 1);
        assert_eq!(found[0].first(), found[0].last());
    }

    #[test]
    fn reported_cycles_are_capped() {
        // Every member depends on itself: as many cycles as members.
        let selfish = crew((0..1_000).map(|i| (format!("s{i}"), vec![format!("s{i}")])));
        assert_eq!(cycles(&selfish).len(), MAX_CYCLES);
    }
}
