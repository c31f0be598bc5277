//! Execution constraints as they apply: the spec's defaults filled in
//! ([`effective`]) and the budget rules between an agent and its children:
//! across a static crew ([`check_crew_budgets`]) and for each specialist
//! dynamic delegation may pick ([`check_dynamic_budgets`]).
//!
//! The spec's table of defaults: `max_delegation_depth` is 3; everything
//! else (`max_cost_usd`, `max_turns`, `timeout`, `disk_quota`,
//! `max_exec_time`) is unlimited. `max_turns: 0` means unlimited too.
//!
//! Child budgets: when an agent delegates, it allocates part of its own
//! budget to the child, and unused budget returns to the parent. A static
//! crew is known up front, so the allocations can be checked statically:
//! each member's allocation is its crew entry's `budget` when set, else its
//! own `constraints.budget.max_cost_usd`. Their sum may not exceed the
//! parent's `max_cost_usd` (the hard cap; `tolerance` is a run-time grace,
//! not more money to hand out). Sums are taken in micro-dollars, so `0.1 +
//! 0.2` is exactly `0.3`.
//!
//! Dynamic delegation picks its specialists at run time, from every
//! co-located subagent, so no sum is known; but a child spends from its
//! parent's budget, so no subagent's own `max_cost_usd` may exceed the
//! parent's. Both are [`Rule::BudgetExceedsParent`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    agent::model::AgentSpec,
    diagnostics::{Diagnostics, index, join},
    rules::Rule,
    tree::MemberPath,
};

/// The spec's default for `constraints.limits.max_delegation_depth`.
pub const DEFAULT_MAX_DELEGATION_DEPTH: u64 = 3;

/// Every constraint with its default applied. `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Effective {
    pub max_cost_usd: Option<f64>,
    pub max_turns: Option<u64>,
    pub max_delegation_depth: u64,
    /// True when `max_delegation_depth` is the spec's default, not declared.
    pub max_delegation_depth_is_default: bool,
    /// Seconds per execution.
    pub timeout: Option<u64>,
    /// Bytes per agent.
    pub disk_quota: Option<u64>,
    /// Seconds per tool call.
    pub max_exec_time: Option<u64>,
}

/// The constraints `spec` runs under, defaults included.
pub fn effective(spec: &AgentSpec) -> Effective {
    let c = spec.constraints.as_ref();
    let budget = c.and_then(|c| c.budget.as_ref());
    let limits = c.and_then(|c| c.limits.as_ref());
    let sandbox = c.and_then(|c| c.sandbox.as_ref());
    let declared_depth = limits.and_then(|l| l.max_delegation_depth);
    Effective {
        max_cost_usd: budget.and_then(|b| b.max_cost_usd),
        max_turns: limits.and_then(|l| l.max_turns).filter(|n| *n > 0),
        max_delegation_depth: declared_depth.unwrap_or(DEFAULT_MAX_DELEGATION_DEPTH),
        max_delegation_depth_is_default: declared_depth.is_none(),
        timeout: limits.and_then(|l| l.timeout),
        disk_quota: sandbox.and_then(|s| s.disk_quota),
        max_exec_time: sandbox.and_then(|s| s.max_exec_time),
    }
}

impl Effective {
    /// `(name, value, is_default)` rows in the spec's table order, for the
    /// CLI and the catalog.
    pub fn rows(&self) -> Vec<(&'static str, String, bool)> {
        let unlimited = |v: Option<String>| v.unwrap_or_else(|| "unlimited".to_owned());
        vec![
            (
                "max_cost_usd",
                unlimited(self.max_cost_usd.map(|v| format!("${v:.2}"))),
                self.max_cost_usd.is_none(),
            ),
            (
                "max_turns",
                unlimited(self.max_turns.map(|v| v.to_string())),
                self.max_turns.is_none(),
            ),
            (
                "max_delegation_depth",
                self.max_delegation_depth.to_string(),
                self.max_delegation_depth_is_default,
            ),
            (
                "timeout",
                self.timeout
                    .map_or_else(|| "none".to_owned(), |v| format!("{v} s")),
                self.timeout.is_none(),
            ),
            (
                "disk_quota",
                unlimited(self.disk_quota.map(|v| format!("{v} bytes"))),
                self.disk_quota.is_none(),
            ),
            (
                "max_exec_time",
                unlimited(self.max_exec_time.map(|v| format!("{v} s"))),
                self.max_exec_time.is_none(),
            ),
        ]
    }
}

fn micro_dollars(usd: f64) -> i128 {
    // Budgets are validated as finite and non-negative.
    (usd * 1_000_000.0).round() as i128
}

fn dollars(micro: i128) -> String {
    format!("${:.2}", micro as f64 / 1_000_000.0)
}

/// A static crew's allocations must fit the parent's budget. Reported on
/// agent.yaml at `delegate.agents`, naming every allocating member.
pub fn check_crew_budgets(
    agent: &AgentSpec,
    subagents: &BTreeMap<MemberPath, AgentSpec>,
) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let Some(crew) = &agent.delegate else {
        return diags;
    };
    let Some(cap) = effective(agent).max_cost_usd else {
        return diags;
    };
    let mut allocations: Vec<(String, i128, String)> = Vec::new();
    for (i, member) in crew.agents.iter().enumerate() {
        let sub = member.member_path().and_then(|p| subagents.get(&p));
        let (amount, from) = match (member.budget, sub) {
            (Some(b), _) => (b, join(&index("delegate.agents", i), "budget")),
            (None, Some(s)) => match effective(s).max_cost_usd {
                Some(b) => (
                    b,
                    format!("{} constraints.budget.max_cost_usd", member.path),
                ),
                None => continue,
            },
            (None, None) => continue,
        };
        let name = sub.map_or_else(|| member.id().to_owned(), |s| s.name.to_string());
        allocations.push((name, micro_dollars(amount), from));
    }
    let total: i128 = allocations.iter().map(|(_, m, _)| m).sum();
    if total > micro_dollars(cap) {
        let parts: Vec<String> = allocations
            .iter()
            .map(|(name, m, from)| format!("{name} {} ({from})", dollars(*m)))
            .collect();
        diags.push_rule(
            Rule::BudgetExceedsParent,
            "delegate.agents",
            format!(
                "the crew's budgets add up to {}, more than this agent's constraints.budget.max_cost_usd of {}: {}",
                dollars(total),
                dollars(micro_dollars(cap)),
                parts.join(", ")
            ),
        );
    }
    diags
}

/// With the `delegate` tool declared, any co-located subagent may be
/// picked, so none may have a `max_cost_usd` above the parent's. Each
/// problem is reported in the subagent's file, at its budget.
pub fn check_dynamic_budgets(
    agent: &AgentSpec,
    subagents: &BTreeMap<MemberPath, AgentSpec>,
) -> Diagnostics {
    let mut diags = Diagnostics::new();
    if !agent.tools.iter().any(|t| t.is_delegate()) {
        return diags;
    }
    let Some(cap) = effective(agent).max_cost_usd else {
        return diags;
    };
    for (path, sub) in subagents {
        let Some(own) = effective(sub).max_cost_usd else {
            continue;
        };
        if micro_dollars(own) > micro_dollars(cap) {
            let mut d = Diagnostics::new();
            d.push_rule(
                Rule::BudgetExceedsParent,
                "constraints.budget.max_cost_usd",
                format!(
                    "{} is above the budget of {}, which may delegate to {} ({} in agent.yaml's constraints.budget.max_cost_usd): a child spends from its parent's budget",
                    dollars(micro_dollars(own)),
                    agent.name,
                    sub.name,
                    dollars(micro_dollars(cap)),
                ),
            );
            diags.extend(d.in_file(path.as_str()));
        }
    }
    diags
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{parse_agent, parse_subagent};

    #[test]
    fn defaults_follow_the_spec_table() {
        let spec = parse_agent(b"name: a\nversion: 1.0.0\ndescription: d\n").unwrap();
        let e = effective(&spec);
        assert_eq!(e.max_delegation_depth, 3);
        assert!(e.max_delegation_depth_is_default);
        assert_eq!(
            (
                e.max_cost_usd,
                e.max_turns,
                e.timeout,
                e.disk_quota,
                e.max_exec_time
            ),
            (None, None, None, None, None)
        );
        let rows: Vec<String> = e
            .rows()
            .into_iter()
            .map(|(k, v, d)| format!("{k}={v}{}", if d { " (default)" } else { "" }))
            .collect();
        assert_eq!(
            rows,
            [
                "max_cost_usd=unlimited (default)",
                "max_turns=unlimited (default)",
                "max_delegation_depth=3 (default)",
                "timeout=none (default)",
                "disk_quota=unlimited (default)",
                "max_exec_time=unlimited (default)",
            ]
        );
        let spec = parse_agent(
            b"name: a\nversion: 1.0.0\ndescription: d\nconstraints:\n  limits:\n    max_turns: 0\n    max_delegation_depth: 5\n",
        )
        .unwrap();
        let e = effective(&spec);
        assert_eq!((e.max_turns, e.max_delegation_depth), (None, 5));
        assert!(!e.max_delegation_depth_is_default);
    }

    #[test]
    fn crew_budgets_over_the_cap_name_every_member() {
        let agent = parse_agent(
            b"name: lead\nversion: 1.0.0\ndescription: d\nconstraints:\n  budget:\n    max_cost_usd: 1.0\ndelegate:\n  mode: static\n  process: sequential\n  agents:\n    - path: ./researcher.yaml\n      budget: 0.7\n    - path: ./writer.yaml\n",
        )
        .unwrap();
        let writer = parse_subagent(
            b"name: writer\ndescription: writes\nconstraints:\n  budget:\n    max_cost_usd: 0.4\n",
        )
        .unwrap();
        let researcher = parse_subagent(b"name: researcher\ndescription: finds\n").unwrap();
        let subs: BTreeMap<MemberPath, AgentSpec> = [
            (MemberPath::new("researcher.yaml").unwrap(), researcher),
            (MemberPath::new("writer.yaml").unwrap(), writer),
        ]
        .into();
        let d = check_crew_budgets(&agent, &subs);
        assert_eq!(
            d.to_string(),
            "delegate.agents: the crew's budgets add up to $1.10, more than this agent's constraints.budget.max_cost_usd of $1.00: researcher $0.70 (delegate.agents[0].budget), writer $0.40 (./writer.yaml constraints.budget.max_cost_usd) [budget-exceeds-parent]"
        );
    }

    #[test]
    fn a_specialist_the_delegate_tool_may_pick_spends_no_more_than_its_parent() {
        let lead = |tools: &str| {
            parse_agent(format!("name: lead\nversion: 1.0.0\ndescription: d\n{tools}constraints:\n  budget:\n    max_cost_usd: 2.00\n").as_bytes()).unwrap()
        };
        let sub = |name: &str, budget: &str| {
            parse_subagent(format!("name: {name}\ndescription: d\nconstraints:\n  budget:\n    max_cost_usd: {budget}\n").as_bytes()).unwrap()
        };
        let subs: BTreeMap<MemberPath, AgentSpec> = [
            (
                MemberPath::new("specialists/big.yaml").unwrap(),
                sub("big", "2.01"),
            ),
            (
                MemberPath::new("specialists/equal.yaml").unwrap(),
                sub("equal", "2.00"),
            ),
        ]
        .into();
        let d = check_dynamic_budgets(&lead("tools:\n  - name: delegate\n"), &subs);
        assert_eq!(
            d.to_string(),
            "specialists/big.yaml: constraints.budget.max_cost_usd: $2.01 is above the budget of lead, which may delegate to big ($2.00 in agent.yaml's constraints.budget.max_cost_usd): a child spends from its parent's budget [budget-exceeds-parent]"
        );
        // Without the delegate tool no one picks them dynamically.
        assert!(check_dynamic_budgets(&lead(""), &subs).is_empty());
    }

    #[test]
    fn exact_sums_fit_and_unlimited_parents_allow_anything() {
        let agent = parse_agent(
            b"name: lead\nversion: 1.0.0\ndescription: d\nconstraints:\n  budget:\n    max_cost_usd: 0.3\ndelegate:\n  mode: static\n  process: parallel\n  agents:\n    - path: ./a.yaml\n      budget: 0.1\n    - path: ./b.yaml\n      budget: 0.2\n",
        )
        .unwrap();
        assert!(check_crew_budgets(&agent, &BTreeMap::new()).is_empty());
        let unlimited = parse_agent(
            b"name: lead\nversion: 1.0.0\ndescription: d\ndelegate:\n  mode: static\n  process: parallel\n  agents:\n    - path: ./a.yaml\n      budget: 100\n",
        )
        .unwrap();
        assert!(check_crew_budgets(&unlimited, &BTreeMap::new()).is_empty());
    }
}
