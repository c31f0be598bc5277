//! The trust picture (`core::trust`) as the CLI gets and shows it: an agent
//! container's picture, given what its pinned tools ask for, and the text
//! `inspect`, `diff`, `install` and `lock --update` print. Callers fetch the
//! tools with `install::PinnedTools`; this module does not, because
//! `install` prints its diffs. Words and layout only: what an agent can do,
//! how risky it is and what raises risk are core's.

use agentlang_core::{
    Kind,
    agent::RiskLevel,
    container::Container,
    host::ToolCapabilities,
    package::{AgentPackage, Members, Package, validate_package},
    trust::{AgentTrust, EffectiveCapability, TrustDiff},
};
use anyhow::{Result, bail};
use serde_json::Value;

use crate::output::Output;

/// The agent package a container holds, validated as publish validates it.
pub fn container_package(c: &Container, shown: &str) -> Result<AgentPackage> {
    if c.manifest().kind() != Kind::Agent {
        bail!("{shown} is a {}, not an agent", c.manifest().kind());
    }
    match validate_package(Kind::Agent, &Members::from_container(c)) {
        Ok(Package::Agent(pkg)) => Ok(*pkg),
        Ok(Package::Tool(_) | Package::Protocol(_) | Package::Skill(_)) => {
            bail!("{shown} is not an agent")
        }
        Err(d) => bail!(
            "{shown} is not a valid agent: {}",
            d.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// What the agent in `c` can do, `tools` being what its pinned tools ask
/// for, signed by the container's signer.
pub fn container_trust(
    c: &Container,
    pkg: &AgentPackage,
    tools: &[ToolCapabilities],
) -> AgentTrust {
    AgentTrust::of(pkg, tools).signed_by(Some(c.manifest().signer().to_string()))
}

/// A risk level padded to one column, red when high, yellow when medium.
fn risk_cell(out: &Output, risk: Option<RiskLevel>) -> String {
    let text = format!("{:<8}", risk.map_or("none", RiskLevel::as_str));
    match risk {
        Some(RiskLevel::Critical | RiskLevel::High) => out.red(&text),
        Some(RiskLevel::Medium) => out.yellow(&text),
        _ => text,
    }
}

fn sources(c: &EffectiveCapability) -> String {
    c.sources
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `inspect`'s sections for an agent: the highest risk, what it can do
/// (core's statements, riskiest first), what it needs but does not
/// request, every effective capability with who asks for it, and the
/// render tools its UI components generate.
pub fn render_trust(out: &Output, t: &AgentTrust) -> Vec<String> {
    let mut lines = vec![format!(
        "risk:     {}",
        risk_cell(out, t.max_risk).trim_end()
    )];
    lines.push("what it can do:".to_owned());
    let statements = t.statements();
    if statements.is_empty() {
        lines.push("  nothing outside the conversation".to_owned());
    }
    for s in &statements {
        lines.push(format!("  {}  {s}", risk_cell(out, Some(s.risk))));
    }
    let undeclared: Vec<&EffectiveCapability> = t.undeclared().collect();
    if !undeclared.is_empty() {
        lines.push("undeclared (needed, but in no permissions list):".to_owned());
        for c in undeclared {
            lines.push(format!(
                "  {:<15} {}  needed by {}",
                c.capability.as_str(),
                risk_cell(out, Some(c.risk)),
                sources(c)
            ));
        }
    }
    lines.push("capabilities:".to_owned());
    if t.capabilities.is_empty() {
        lines.push("  none".to_owned());
    }
    for c in &t.capabilities {
        lines.push(format!(
            "  {:<15} {}  {:<20}  {}",
            c.capability.as_str(),
            risk_cell(out, Some(c.risk)),
            c.need(),
            sources(c)
        ));
    }
    if !t.render_tools.is_empty() {
        lines.push("render tools:".to_owned());
        for r in &t.render_tools {
            let props: Vec<&str> = r.input_schema["properties"]
                .as_object()
                .into_iter()
                .flat_map(|p| p.keys().map(String::as_str))
                .collect();
            lines.push(format!("  {}({})", r.name, props.join(", ")));
            lines.push(format!("      {}", r.description));
        }
    }
    lines
}

/// The first line of a trust diff: where the highest risk goes, and how
/// many changes give the newer side a power the older did not have.
pub fn diff_headline(d: &TrustDiff) -> String {
    if d.is_empty() {
        return "No trust changes".to_owned();
    }
    let level = |r: Option<RiskLevel>| r.map_or("none", RiskLevel::as_str);
    let (before, after) = (level(d.risk_before), level(d.risk_after));
    let mut line = if d.risk_rose {
        format!("Risk rises from {before} to {after}")
    } else if d.risk_after < d.risk_before {
        format!("Risk falls from {before} to {after}")
    } else {
        format!("Risk stays {after}")
    };
    let raising = d.changes.iter().filter(|c| c.raises_risk).count();
    match raising {
        0 => {}
        1 => line.push_str("; 1 change raises risk"),
        n => line.push_str(&format!("; {n} changes raise risk")),
    }
    line
}

/// The headline, then one line per change (those that raise risk first,
/// as core orders them).
pub fn render_diff(out: &Output, d: &TrustDiff) -> Vec<String> {
    let headline = diff_headline(d);
    let mut lines = vec![if d.raises_risk() {
        out.red(&headline)
    } else {
        headline
    }];
    for c in &d.changes {
        let line = format!("  {}", c.describe());
        lines.push(if c.raises_risk { out.red(&line) } else { line });
    }
    lines
}

/// The `trust` member of a summary read back, for rendering; `None` when
/// absent (tools, protocols, an agent that does not validate).
pub fn from_summary(v: &Value) -> Option<AgentTrust> {
    if v.is_null() {
        return None;
    }
    serde_json::from_value(v.clone()).ok()
}

#[cfg(test)]
mod tests {
    use agentlang_core::trust::{ChangeClass, ChangeKind, TrustChange};

    use super::*;

    fn change(raises_risk: bool) -> TrustChange {
        TrustChange {
            class: ChangeClass::Context,
            kind: ChangeKind::Added,
            subject: "time".to_owned(),
            from: None,
            to: Some("injected".to_owned()),
            risk: RiskLevel::Low,
            raises_risk,
        }
    }

    fn diff(before: Option<RiskLevel>, after: Option<RiskLevel>, changes: &[bool]) -> TrustDiff {
        TrustDiff {
            risk_before: before,
            risk_after: after,
            risk_rose: after > before,
            changes: changes.iter().map(|r| change(*r)).collect(),
        }
    }

    #[test]
    fn the_headline_says_where_the_risk_goes() {
        use RiskLevel::*;
        let cases = [
            (diff(Some(High), Some(High), &[]), "No trust changes"),
            (
                diff(Some(High), Some(Critical), &[true]),
                "Risk rises from High to Critical; 1 change raises risk",
            ),
            (
                diff(None, Some(Low), &[true, true, false]),
                "Risk rises from none to Low; 2 changes raise risk",
            ),
            (
                diff(Some(High), Some(High), &[true]),
                "Risk stays High; 1 change raises risk",
            ),
            (diff(Some(High), Some(High), &[false]), "Risk stays High"),
            (
                diff(Some(Critical), Some(Medium), &[false]),
                "Risk falls from Critical to Medium",
            ),
        ];
        for (d, want) in cases {
            assert_eq!(diff_headline(&d), want);
        }
    }
}
