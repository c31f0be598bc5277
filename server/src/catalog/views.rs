//! Stored version data to the web crate's view models.
//!
//! A version row holds the parsed `agent.yaml` / `tool.yaml` as JSON in the
//! shape it was written (the core's models serialize back to it) and the
//! `agent.lock` as JSON. Skills, co-located subagents, `ux.yaml` and a
//! tool's README live only in the container: publish stores what pages show
//! of them with the version ([`ContainerExtras`]), so no page reads a blob.
//!
//! The readers here are lenient: the data passed validation at publish, and
//! a field of an unexpected shape is left out rather than failing the page.

use agentlang_core::{
    PackageName, Version,
    host::{self, HostProfile, Outcome, Request},
};
use agentlang_web::model::*;
use serde_json::{Map, Value};
use time::OffsetDateTime;

use app::{
    owners::{OwnerRecord, OwnerRole},
    packages::ContainerExtras,
};

pub fn timestamp(unix_seconds: i64) -> Timestamp {
    Timestamp(
        OffsetDateTime::from_unix_timestamp(unix_seconds).unwrap_or(OffsetDateTime::UNIX_EPOCH),
    )
}

pub fn owner_view(owner: &OwnerRecord) -> OwnerView {
    OwnerView {
        username: owner.username.to_string(),
        role: OwnerRole::of(owner).as_str(),
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn string_at(v: &Value, key: &str) -> Option<String> {
    str_at(v, key).map(str::to_owned)
}

fn strings_at(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn object_at<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// A scalar as a short label: strings bare, anything else as compact JSON.
fn label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `agent.lock` entry of `name` under `section` (`tools`, `agents`),
/// matching names the way the registry does (case and `-`/`_` folded).
fn lock_entry<'a>(lock: Option<&'a Value>, section: &str, name: &str) -> Option<&'a Value> {
    let wanted = agentlang_core::names::normalize(name);
    object_at(lock?, section)?
        .iter()
        .find(|(k, _)| agentlang_core::names::normalize(k) == wanted)
        .map(|(_, v)| v)
}

fn version_at(v: Option<&Value>) -> Option<Version> {
    v.and_then(|e| str_at(e, "version"))
        .and_then(|s| Version::parse(s).ok())
}

/// Per built-in host, whether an agent that asks for `requests` (its own,
/// its subagents' and its locked tools') can run there: `core::host::check`,
/// the check `agentlang check --host` makes.
pub fn host_fits(requests: &[Request]) -> Vec<HostFitView> {
    HostProfile::builtin()
        .iter()
        .map(|profile| {
            let report = host::check(profile, requests);
            let named = |outcome: Outcome| -> Vec<String> {
                report
                    .capabilities
                    .iter()
                    .filter(|d| d.outcome == outcome)
                    .map(|d| d.capability.as_str().to_owned())
                    .collect()
            };
            let mode = |m: Option<agentlang_core::agent::PermissionMode>| {
                m.map(|m| m.as_str().to_owned()).unwrap_or_default()
            };
            HostFitView {
                host: profile.name.to_string(),
                description: profile.description.clone(),
                runnable: report.runnable(),
                refused: named(Outcome::Refused),
                degraded: named(Outcome::Degraded),
                downgraded: report
                    .capabilities
                    .iter()
                    .filter(|d| d.outcome == Outcome::Downgraded)
                    .map(|d| {
                        format!(
                            "{}: {} → {}",
                            d.capability,
                            mode(d.requested_mode),
                            mode(d.granted_mode)
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The capabilities among `requests` that no agent's `permissions` list,
/// riskiest first, each with what needs it.
pub fn undeclared(requests: &[Request]) -> Vec<UndeclaredView> {
    let mut out: Vec<UndeclaredView> = requests
        .iter()
        .filter(|r| r.undeclared())
        .map(|r| UndeclaredView {
            capability: r.capability.as_str().to_owned(),
            required: r.required,
            sources: r.requested_by.iter().map(ToString::to_string).collect(),
        })
        .collect();
    out.sort_by_key(|u| std::cmp::Reverse(u.risk()));
    out
}

/// The agent page's view of one version.
pub fn agent_view(
    name: &PackageName,
    version: &Version,
    spec: &Value,
    lock: Option<&Value>,
    extras: &ContainerExtras,
) -> AgentVersionView {
    let mut tools: Vec<ToolPin> = Vec::new();
    for decl in spec
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(tool) = str_at(decl, "name").and_then(|n| PackageName::new(n).ok()) else {
            continue;
        };
        // `delegate` is the runtime's orchestration builtin, not a package.
        if tool.as_str() == agentlang_core::agent::DELEGATE_TOOL {
            continue;
        }
        // An interface: the lock records its provider, pinned in `tools`.
        let provider = lock_entry(lock, "interfaces", tool.as_str())
            .and_then(Value::as_str)
            .and_then(|p| PackageName::new(p).ok());
        let pinned_as = provider.as_ref().unwrap_or(&tool).as_str().to_owned();
        tools.push(ToolPin {
            locked: version_at(lock_entry(lock, "tools", &pinned_as)),
            requirement: string_at(decl, "version"),
            name: tool,
            provider,
        });
    }
    // Tools pinned only because another tool needs them.
    if let Some(pins) = lock.and_then(|l| object_at(l, "tools")) {
        for (pinned, entry) in pins {
            let Ok(tool) = PackageName::new(pinned.as_str()) else {
                continue;
            };
            if tools
                .iter()
                .any(|t| t.provider.as_ref().unwrap_or(&t.name).normalized() == tool.normalized())
            {
                continue;
            }
            tools.push(ToolPin {
                name: tool,
                requirement: None,
                locked: version_at(Some(entry)),
                provider: None,
            });
        }
    }

    let models = object_at(spec, "models")
        .into_iter()
        .flatten()
        .map(|(model, m)| ModelView {
            name: model.clone(),
            provider: string_at(m, "provider"),
            options: object_at(m, "options")
                .into_iter()
                .flatten()
                .map(|(k, v)| KeyValue::new(k.clone(), v.to_string()))
                .collect(),
        })
        .collect();

    let permissions = spec
        .get("permissions")
        .map(permission_views)
        .unwrap_or_default();

    let c = spec.get("constraints").cloned().unwrap_or(Value::Null);
    let budget = c.get("budget").cloned().unwrap_or(Value::Null);
    let limits = c.get("limits").cloned().unwrap_or(Value::Null);
    let sandbox = c.get("sandbox").cloned().unwrap_or(Value::Null);
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let u = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let constraints = ConstraintsView {
        budget: BudgetView {
            max_cost_usd: f(&budget, "max_cost_usd"),
            tolerance: f(&budget, "tolerance"),
            input_1m_price: f(&budget, "input_1m_price"),
            output_1m_price: f(&budget, "output_1m_price"),
        },
        limits: LimitsView {
            max_turns: u(&limits, "max_turns"),
            max_delegation_depth: u(&limits, "max_delegation_depth"),
            timeout_seconds: u(&limits, "timeout"),
        },
        sandbox: SandboxView {
            disk_quota_bytes: u(&sandbox, "disk_quota"),
            max_exec_time_seconds: u(&sandbox, "max_exec_time"),
            allowed_paths: strings_at(&sandbox, "allowed_paths"),
            allowed_urls: strings_at(&sandbox, "allowed_urls"),
        },
    };

    let protocols = spec
        .get("protocols")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some(ProtocolView {
                name: string_at(p, "name")?,
                requirement: string_at(p, "version"),
            })
        })
        .collect();

    let mut skill_names: Vec<String> = spec
        .get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| string_at(s, "name"))
        .collect();
    for shipped in extras.skills.keys() {
        if !skill_names.contains(shipped) {
            skill_names.push(shipped.clone());
        }
    }
    let skills = skill_names
        .into_iter()
        .map(|skill| {
            let shipped = extras.skills.get(&skill);
            SkillView {
                description: shipped.map(|(d, _)| d.clone()),
                allowed_tools: shipped.map(|(_, t)| t.clone()).unwrap_or_default(),
                name: skill,
            }
        })
        .collect();

    let ui_components = object_at(spec, "ui_components")
        .into_iter()
        .flatten()
        .map(|(component, ui)| UiComponentView {
            name: component.clone(),
            render_tool: agentlang_core::agent::ui::render_tool_name(component),
            props: ui
                .get("props")
                .and_then(|p| object_at(p, "properties"))
                .into_iter()
                .flatten()
                .map(|(prop, _)| prop.clone())
                .collect(),
            sync_actions: object_at(ui, "sync_actions")
                .into_iter()
                .flatten()
                .map(|(action, a)| SyncActionView {
                    name: action.clone(),
                    tool: string_at(a, "tool").unwrap_or_default(),
                })
                .collect(),
            agent_actions: match ui.get("agent_actions") {
                Some(Value::Object(actions)) => actions.keys().cloned().collect(),
                Some(Value::Array(actions)) => actions.iter().map(label).collect(),
                _ => Vec::new(),
            },
        })
        .collect();

    let mut subagents: Vec<SubagentView> = extras
        .subagents
        .iter()
        .map(|(sub, description)| {
            let locked = lock_entry(lock, "agents", sub);
            SubagentView {
                name: sub.clone(),
                description: description.clone(),
                locked_version: version_at(locked),
                hash: locked.and_then(|e| string_at(e, "hash")),
            }
        })
        .collect();
    for (locked_name, entry) in lock
        .and_then(|l| object_at(l, "agents"))
        .into_iter()
        .flatten()
    {
        let folded = agentlang_core::names::normalize(locked_name);
        if subagents
            .iter()
            .all(|s| agentlang_core::names::normalize(&s.name) != folded)
        {
            subagents.push(SubagentView {
                name: locked_name.clone(),
                description: None,
                locked_version: version_at(Some(entry)),
                hash: string_at(entry, "hash"),
            });
        }
    }

    AgentVersionView {
        name: name.clone(),
        version: version.clone(),
        title: string_at(spec, "title").unwrap_or_else(|| name.to_string()),
        subtitle: string_at(spec, "subtitle"),
        description_markdown: string_at(spec, "description").unwrap_or_default(),
        developer: string_at(spec, "developer"),
        category: string_at(spec, "category"),
        tools,
        models,
        permissions,
        constraints,
        protocols,
        skills,
        ui_components,
        subagents,
        ux: UxView {
            suggestions: extras.suggestions.clone(),
            integrations: extras
                .integrations
                .iter()
                .map(|(n, w)| IntegrationView {
                    name: n.clone(),
                    website: w.clone(),
                })
                .collect(),
        },
    }
}

/// `permissions:`: required then optional capabilities, each with its
/// per-capability settings.
fn permission_views(permissions: &Value) -> Vec<PermissionView> {
    let required = strings_at(permissions, "required");
    let optional = strings_at(permissions, "optional");
    let settings = |capability: &str| permissions.get(capability).and_then(Value::as_object);
    required
        .iter()
        .map(|c| (c, true))
        .chain(optional.iter().map(|c| (c, false)))
        .map(|(capability, is_required)| {
            let config = settings(capability);
            let mut details = Vec::new();
            for (key, value) in config.into_iter().flatten() {
                match key.as_str() {
                    "mode" | "reason" => {}
                    "wake_triggers" => {
                        let schedules: Vec<String> = value
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|t| string_at(t, "schedule"))
                            .collect();
                        details.push(KeyValue::new("wake on", schedules.join(", ")));
                    }
                    "channels" => details.push(KeyValue::new(
                        "channels",
                        value
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(label)
                            .collect::<Vec<_>>()
                            .join(", "),
                    )),
                    _ => details.push(KeyValue::new(key.clone(), label(value))),
                }
            }
            PermissionView {
                capability: capability.clone(),
                required: is_required,
                mode: config.and_then(|c| c.get("mode")).map(label),
                reason: config.and_then(|c| c.get("reason")).map(label),
                details,
            }
        })
        .collect()
}

/// The tool page's view of one version.
/// A `kind: http` or `kind: bash` tool's binding from its stored spec, as
/// the YAML a publisher wrote it in.
pub fn tool_binding(spec: &Value) -> Option<BindingView> {
    let (key, yaml) = agentlang_core::tool::binding_yaml(spec)?;
    Some(BindingView {
        key: key.to_owned(),
        heading: if key == "http" {
            "HTTP endpoint"
        } else {
            "Command"
        }
        .to_owned(),
        yaml,
    })
}

pub fn tool_view(
    name: &PackageName,
    version: &Version,
    spec: &Value,
    extras: &ContainerExtras,
) -> ToolVersionView {
    let description = string_at(spec, "description").unwrap_or_default();
    let description_markdown = match &extras.readme {
        Some(readme) if !readme.trim().is_empty() => format!("{description}\n\n{readme}"),
        _ => description,
    };
    ToolVersionView {
        name: name.clone(),
        version: version.clone(),
        description_markdown,
        input_schema: spec.get("input_schema").cloned(),
        output_schema: spec.get("output_schema").cloned(),
        capabilities: {
            let mut capabilities: Vec<agentlang_core::capability::Capability> = spec
                .get("permissions")
                .and_then(|p| serde_json::from_value(p.clone()).ok())
                .unwrap_or_default();
            capabilities.sort_by_key(|c| std::cmp::Reverse(c.risk()));
            capabilities
        },
        provides: spec
            .get("provides")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| PackageName::new(i.as_str()?).ok())
            .collect(),
        dependencies: object_at(spec, "dependencies")
            .into_iter()
            .flatten()
            .filter_map(|(dep, req)| {
                Some(ToolDependencyView {
                    name: PackageName::new(dep.as_str()).ok()?,
                    requirement: label(req),
                })
            })
            .collect(),
    }
}

/// The first sentence or two of a description, as plain text.
pub fn summary_text(description: &str) -> String {
    let first = description.split("\n\n").next().unwrap_or_default();
    let plain = first.split_whitespace().collect::<Vec<_>>().join(" ");
    if plain.chars().count() <= 200 {
        return plain;
    }
    let cut: String = plain.chars().take(200).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn name(s: &str) -> PackageName {
        PackageName::new(s).unwrap()
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn agent_spec_json_fills_the_view() {
        let spec = json!({
            "name": "helper", "version": "1.0.0", "description": "Helps.\n\nMore.",
            "tools": [{"name": "web_search", "version": "^1.2.0"}, {"name": "delegate"}],
            "permissions": {
                "required": ["network"], "optional": ["microphone", "background"],
                "microphone": {"mode": "on_demand", "reason": "Voice"},
                "background": {"mode": "scheduled", "wake_triggers": [{"schedule": "0 * * * *"}], "max_runtime": 60}
            },
            "constraints": {"budget": {"max_cost_usd": 2.0}, "limits": {"timeout": 300}},
            "protocols": [{"name": "a2a", "version": "^1.0.0"}],
            "skills": [{"name": "test-helper"}],
            "ui_components": {"card": {"sync_actions": {"star": {"tool": "gmail"}}, "agent_actions": {"reply": {}}}}
        });
        let lock = json!({"tools": {"web-search": {"version": "1.2.3", "hash": "sha256:00"},
                                    "web_fetch": {"version": "1.0.0", "hash": "sha256:11"}},
                          "agents": {"expert": {"version": "1.0.0", "hash": "sha256:22"}}});
        let mut extras = ContainerExtras::default();
        extras.skills.insert(
            "test-helper".into(),
            ("Tests".into(), vec!["sqlite".into()]),
        );
        extras
            .subagents
            .push(("expert".into(), Some("Knows".into())));
        let view = agent_view(&name("helper"), &v("1.0.0"), &spec, Some(&lock), &extras);
        assert_eq!(view.title, "helper");
        let tools: Vec<String> = view
            .tools
            .iter()
            .map(|t| {
                format!(
                    "{} {:?} {:?}",
                    t.name,
                    t.requirement,
                    t.locked.as_ref().map(ToString::to_string)
                )
            })
            .collect();
        assert_eq!(
            tools,
            [
                "web_search Some(\"^1.2.0\") Some(\"1.2.3\")",
                "web_fetch None Some(\"1.0.0\")"
            ]
        );
        assert_eq!(view.permissions.len(), 3);
        assert!(view.permissions[0].required);
        assert_eq!(view.permissions[1].mode.as_deref(), Some("on_demand"));
        assert_eq!(view.permissions[1].reason.as_deref(), Some("Voice"));
        assert_eq!(
            view.permissions[2].details,
            [
                KeyValue::new("wake on", "0 * * * *"),
                KeyValue::new("max_runtime", "60")
            ]
        );
        assert_eq!(view.constraints.budget.max_cost_usd, Some(2.0));
        assert_eq!(view.constraints.limits.timeout_seconds, Some(300));
        assert_eq!(view.protocols[0].requirement.as_deref(), Some("^1.0.0"));
        assert_eq!(view.skills[0].allowed_tools, ["sqlite"]);
        assert_eq!(view.ui_components[0].sync_actions[0].tool, "gmail");
        assert_eq!(view.ui_components[0].agent_actions, ["reply"]);
        assert_eq!(view.subagents[0].description.as_deref(), Some("Knows"));
        assert_eq!(view.subagents[0].hash.as_deref(), Some("sha256:22"));
    }

    #[test]
    fn summaries_are_one_paragraph_of_plain_text() {
        assert_eq!(summary_text("One\ntwo.\n\nThree."), "One two.");
        assert!(summary_text(&"word ".repeat(100)).ends_with('…'));
    }
}
