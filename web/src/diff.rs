//! What changed between two versions of an agent, computed over view models
//! (so it compares what the pages show, not raw YAML).

use agentlang_core::{PackageName, Version};

use crate::{
    model::{AgentVersionView, KeyValue, ModelView, PermissionView, ToolPin},
    risk::{CategoryView, RiskLevel},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
    Upgraded,
    Downgraded,
}

impl ChangeKind {
    pub fn label(self) -> &'static str {
        match self {
            ChangeKind::Added => "Added",
            ChangeKind::Removed => "Removed",
            ChangeKind::Changed => "Changed",
            ChangeKind::Upgraded => "Upgraded",
            ChangeKind::Downgraded => "Downgraded",
        }
    }

    pub fn css_class(self) -> &'static str {
        match self {
            ChangeKind::Added => "change change-added",
            ChangeKind::Removed => "change change-removed",
            ChangeKind::Changed => "change change-changed",
            ChangeKind::Upgraded => "change change-upgraded",
            ChangeKind::Downgraded => "change change-downgraded",
        }
    }
}

/// A tool added, removed, or pinned to another version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolChange {
    pub name: PackageName,
    pub kind: ChangeKind,
    pub from: Option<String>,
    pub to: Option<String>,
}

impl ToolChange {
    pub fn href(&self) -> String {
        format!("/tools/{}", self.name)
    }
}

/// A capability added, removed, or requested differently (required flag or
/// mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionChange {
    pub capability: String,
    pub category: CategoryView,
    pub risk: RiskLevel,
    pub kind: ChangeKind,
    pub from: Option<String>,
    pub to: Option<String>,
    /// An added capability riskier than anything the old version requested.
    pub raises_risk: bool,
}

/// A named value that appeared, disappeared or changed (constraints, models,
/// protocols).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    pub subject: String,
    pub kind: ChangeKind,
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDiff {
    pub name: PackageName,
    pub from_version: Version,
    pub to_version: Version,
    pub risk_before: Option<RiskLevel>,
    pub risk_after: Option<RiskLevel>,
    pub tools: Vec<ToolChange>,
    pub permissions: Vec<PermissionChange>,
    pub constraints: Vec<FieldChange>,
    pub models: Vec<FieldChange>,
    pub protocols: Vec<FieldChange>,
}

impl AgentDiff {
    /// The newer version asks for a riskier capability than the older did.
    pub fn risk_rose(&self) -> bool {
        self.risk_after > self.risk_before
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.permissions.is_empty()
            && self.constraints.is_empty()
            && self.models.is_empty()
            && self.protocols.is_empty()
    }
}

/// Compares two versions of one agent. Items are matched by name (tools by
/// normalized name); changes list the newer version's order first, then what
/// was removed.
pub fn diff_agents(from: &AgentVersionView, to: &AgentVersionView) -> AgentDiff {
    let risk_before = from.max_risk();
    AgentDiff {
        name: to.name.clone(),
        from_version: from.version.clone(),
        to_version: to.version.clone(),
        risk_before,
        risk_after: to.max_risk(),
        tools: diff_tools(&from.tools, &to.tools),
        permissions: diff_permissions(&from.permissions, &to.permissions, risk_before),
        constraints: diff_named(
            &from.constraints.entries(),
            &to.constraints.entries(),
            |kv| kv.key.clone(),
            |kv| kv.value.clone(),
        ),
        models: diff_named(&from.models, &to.models, |m| m.name.clone(), model_summary),
        protocols: diff_named(
            &from.protocols,
            &to.protocols,
            |p| p.name.clone(),
            |p| {
                p.requirement
                    .clone()
                    .unwrap_or_else(|| "any version".to_owned())
            },
        ),
    }
}

fn pin_label(pin: &ToolPin) -> String {
    match (&pin.locked, &pin.requirement) {
        (Some(locked), Some(req)) => format!("{locked} ({req})"),
        (Some(locked), None) => locked.to_string(),
        (None, Some(req)) => req.clone(),
        (None, None) => "any version".to_owned(),
    }
}

fn diff_tools(from: &[ToolPin], to: &[ToolPin]) -> Vec<ToolChange> {
    let find = |pins: &[ToolPin], name: &PackageName| -> Option<usize> {
        pins.iter()
            .position(|p| p.name.normalized() == name.normalized())
    };
    let mut changes = Vec::new();
    for new in to {
        let Some(old) = find(from, &new.name).map(|i| &from[i]) else {
            changes.push(ToolChange {
                name: new.name.clone(),
                kind: ChangeKind::Added,
                from: None,
                to: Some(pin_label(new)),
            });
            continue;
        };
        let kind = match (&old.locked, &new.locked) {
            (Some(a), Some(b)) if b > a => Some(ChangeKind::Upgraded),
            (Some(a), Some(b)) if b < a => Some(ChangeKind::Downgraded),
            _ if old.locked != new.locked || old.requirement != new.requirement => {
                Some(ChangeKind::Changed)
            }
            _ => None,
        };
        if let Some(kind) = kind {
            changes.push(ToolChange {
                name: new.name.clone(),
                kind,
                from: Some(pin_label(old)),
                to: Some(pin_label(new)),
            });
        }
    }
    for old in from {
        if find(to, &old.name).is_none() {
            changes.push(ToolChange {
                name: old.name.clone(),
                kind: ChangeKind::Removed,
                from: Some(pin_label(old)),
                to: None,
            });
        }
    }
    changes
}

fn permission_label(p: &PermissionView) -> String {
    let need = if p.required { "required" } else { "optional" };
    match &p.mode {
        Some(mode) => format!("{need}, {mode}"),
        None => need.to_owned(),
    }
}

fn diff_permissions(
    from: &[PermissionView],
    to: &[PermissionView],
    risk_before: Option<RiskLevel>,
) -> Vec<PermissionChange> {
    let change = |p: &PermissionView, kind, from, to| PermissionChange {
        capability: p.capability.clone(),
        category: p.category(),
        risk: p.risk(),
        kind,
        from,
        to,
        raises_risk: kind == ChangeKind::Added
            && risk_before.is_none_or(|before| p.risk() > before),
    };
    let mut changes = Vec::new();
    for new in to {
        match from.iter().find(|old| old.capability == new.capability) {
            None => changes.push(change(
                new,
                ChangeKind::Added,
                None,
                Some(permission_label(new)),
            )),
            Some(old) if permission_label(old) != permission_label(new) => changes.push(change(
                new,
                ChangeKind::Changed,
                Some(permission_label(old)),
                Some(permission_label(new)),
            )),
            Some(_) => {}
        }
    }
    for old in from {
        if !to.iter().any(|new| new.capability == old.capability) {
            changes.push(change(
                old,
                ChangeKind::Removed,
                Some(permission_label(old)),
                None,
            ));
        }
    }
    changes
}

fn model_summary(model: &ModelView) -> String {
    let mut parts: Vec<String> = model
        .provider
        .iter()
        .map(|p| format!("provider {p}"))
        .collect();
    parts.extend(
        model
            .options
            .iter()
            .map(|KeyValue { key, value }| format!("{key} = {value}")),
    );
    if parts.is_empty() {
        "declared".to_owned()
    } else {
        parts.join(", ")
    }
}

fn diff_named<T>(
    from: &[T],
    to: &[T],
    name: impl Fn(&T) -> String,
    value: impl Fn(&T) -> String,
) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    for new in to {
        let subject = name(new);
        match from.iter().find(|old| name(old) == subject) {
            None => changes.push(FieldChange {
                subject,
                kind: ChangeKind::Added,
                from: None,
                to: Some(value(new)),
            }),
            Some(old) if value(old) != value(new) => changes.push(FieldChange {
                subject,
                kind: ChangeKind::Changed,
                from: Some(value(old)),
                to: Some(value(new)),
            }),
            Some(_) => {}
        }
    }
    for old in from {
        let subject = name(old);
        if !to.iter().any(|new| name(new) == subject) {
            changes.push(FieldChange {
                subject,
                kind: ChangeKind::Removed,
                from: Some(value(old)),
                to: None,
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn pin(name: &str, req: Option<&str>, locked: Option<&str>) -> ToolPin {
        ToolPin {
            name: PackageName::new(name).unwrap(),
            requirement: req.map(str::to_owned),
            locked: locked.map(|v| Version::parse(v).unwrap()),
            provider: None,
        }
    }

    fn permission(capability: &str, required: bool, mode: Option<&str>) -> PermissionView {
        PermissionView {
            capability: capability.to_owned(),
            required,
            mode: mode.map(str::to_owned),
            reason: None,
            details: vec![],
        }
    }

    #[test]
    fn identical_versions_have_no_changes() {
        let agent = fixtures::research_assistant();
        let diff = diff_agents(&agent, &agent);
        assert!(diff.is_empty(), "{diff:?}");
        assert!(!diff.risk_rose());
    }

    #[test]
    fn tools_added_removed_upgraded_downgraded_and_changed() {
        let mut old = fixtures::research_assistant();
        let mut new = old.clone();
        old.tools = vec![
            pin("web_search", Some("^1.2.0"), Some("1.2.0")),
            pin("web_fetch", None, Some("1.0.3")),
            pin("artifacts", None, Some("2.0.0")),
            pin("sqlite", Some("^1"), Some("1.4.0")),
            pin("legacy_tool", None, Some("0.9.0")),
        ];
        new.version = Version::parse("1.1.0").unwrap();
        new.tools = vec![
            pin("Web-Search", Some("^1.2.0"), Some("1.3.1")),
            pin("web_fetch", None, Some("1.0.1")),
            pin("artifacts", None, Some("2.0.0")),
            pin("sqlite", Some("^1.4"), Some("1.4.0")),
            pin("delegate", None, Some("0.3.0")),
        ];
        let diff = diff_agents(&old, &new);
        let got: Vec<(String, ChangeKind, Option<String>, Option<String>)> = diff
            .tools
            .iter()
            .map(|c| (c.name.to_string(), c.kind, c.from.clone(), c.to.clone()))
            .collect();
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            got,
            [
                (
                    "Web-Search".into(),
                    ChangeKind::Upgraded,
                    s("1.2.0 (^1.2.0)"),
                    s("1.3.1 (^1.2.0)")
                ),
                (
                    "web_fetch".into(),
                    ChangeKind::Downgraded,
                    s("1.0.3"),
                    s("1.0.1")
                ),
                (
                    "sqlite".into(),
                    ChangeKind::Changed,
                    s("1.4.0 (^1)"),
                    s("1.4.0 (^1.4)")
                ),
                ("delegate".into(), ChangeKind::Added, None, s("0.3.0")),
                ("legacy_tool".into(), ChangeKind::Removed, s("0.9.0"), None),
            ]
        );
        assert_eq!(diff.from_version.to_string(), "1.0.0");
        assert_eq!(diff.to_version.to_string(), "1.1.0");
    }

    #[test]
    fn permissions_flag_rising_risk() {
        let mut old = fixtures::research_assistant();
        let mut new = old.clone();
        old.permissions = vec![
            permission("network", true, None),
            permission("storage", true, None),
            permission("microphone", false, Some("on_demand")),
        ];
        new.permissions = vec![
            permission("network", true, None),
            permission("microphone", true, Some("continuous")),
            permission("websocket", false, None),
            permission("wallet", false, None),
        ];
        let diff = diff_agents(&old, &new);
        let got: Vec<(&str, ChangeKind, RiskLevel, bool)> = diff
            .permissions
            .iter()
            .map(|c| (c.capability.as_str(), c.kind, c.risk, c.raises_risk))
            .collect();
        assert_eq!(
            got,
            [
                ("microphone", ChangeKind::Changed, RiskLevel::High, false),
                ("websocket", ChangeKind::Added, RiskLevel::Low, false),
                ("wallet", ChangeKind::Added, RiskLevel::Critical, true),
                ("storage", ChangeKind::Removed, RiskLevel::Medium, false),
            ]
        );
        assert_eq!(
            diff.permissions[0].from.as_deref(),
            Some("optional, on_demand")
        );
        assert_eq!(
            diff.permissions[0].to.as_deref(),
            Some("required, continuous")
        );
        assert_eq!(diff.risk_before, Some(RiskLevel::High));
        assert_eq!(diff.risk_after, Some(RiskLevel::Critical));
        assert!(diff.risk_rose());
    }

    #[test]
    fn first_permission_ever_raises_risk_and_removal_lowers_it() {
        let mut old = fixtures::research_assistant();
        old.permissions.clear();
        let mut new = old.clone();
        new.permissions = vec![permission("network", true, None)];
        let diff = diff_agents(&old, &new);
        assert!(diff.permissions[0].raises_risk);
        assert!(diff.risk_rose());

        let back = diff_agents(&new, &old);
        assert_eq!(back.permissions[0].kind, ChangeKind::Removed);
        assert!(!back.permissions[0].raises_risk);
        assert!(!back.risk_rose());
    }

    #[test]
    fn constraints_models_and_protocols() {
        let old = fixtures::research_assistant();
        let mut new = old.clone();
        new.constraints.budget.max_cost_usd = Some(5.0);
        new.constraints.limits.timeout_seconds = None;
        new.constraints
            .sandbox
            .allowed_urls
            .push("https://arxiv.org".to_owned());
        new.models[0].options[0].value = "0.2".to_owned();
        new.models.push(ModelView {
            name: "claude-haiku-4".to_owned(),
            provider: Some("anthropic".to_owned()),
            options: vec![],
        });
        new.protocols[0].requirement = Some("^2.0.0".to_owned());
        new.protocols.remove(1);
        let diff = diff_agents(&old, &new);

        let line = |c: &FieldChange| {
            format!(
                "{} {}: {} -> {}",
                c.kind.label(),
                c.subject,
                c.from.as_deref().unwrap_or("-"),
                c.to.as_deref().unwrap_or("-")
            )
        };
        assert_eq!(
            diff.constraints.iter().map(line).collect::<Vec<_>>(),
            [
                "Changed Budget cap: $2.00 -> $5.00",
                // Dropping a limit falls back to the spec's default.
                "Changed Timeout: 300 s -> none (default)",
                "Changed Allowed URLs: https://api.example.com, https://*.googleapis.com -> https://api.example.com, https://*.googleapis.com, https://arxiv.org",
            ]
        );
        assert_eq!(
            diff.models.iter().map(line).collect::<Vec<_>>(),
            [
                "Changed claude-sonnet-4: provider anthropic, temperature = 0.7, max_tokens = 8192 -> provider anthropic, temperature = 0.2, max_tokens = 8192",
                "Added claude-haiku-4: - -> provider anthropic",
            ]
        );
        assert_eq!(
            diff.protocols.iter().map(line).collect::<Vec<_>>(),
            [
                "Changed a2a: ^1.0.0 -> ^2.0.0",
                "Removed mcp: ^2024.11 -> -"
            ]
        );
    }
}
