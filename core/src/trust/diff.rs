//! Every change between two versions that touches trust, for the catalog's
//! diff page, `agentlang diff` and `lock --update`. A change "raises risk"
//! when it gives the newer version a power the older did not have: a new
//! or stronger capability, a new or changed command, a new endpoint or
//! OAuth token, a new tool, a wider sandbox, another signer.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{AgentTrust, EffectiveCapability};
use crate::agent::{PermissionMode, RiskLevel};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeClass {
    Capability,
    McpServer,
    BashTool,
    HttpTool,
    Tool,
    Sandbox,
    Context,
    Signer,
    /// A tool's new pin was published with weaker evidence than the old
    /// (trusted publisher to token, provenance to none).
    Evidence,
}

impl ChangeClass {
    pub fn label(self) -> &'static str {
        match self {
            ChangeClass::Capability => "capability",
            ChangeClass::McpServer => "MCP server",
            ChangeClass::BashTool => "bash tool",
            ChangeClass::HttpTool => "HTTP tool",
            ChangeClass::Tool => "tool",
            ChangeClass::Sandbox => "sandbox",
            ChangeClass::Context => "context",
            ChangeClass::Signer => "signer",
            ChangeClass::Evidence => "publisher evidence",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

impl ChangeKind {
    pub fn sign(self) -> char {
        match self {
            ChangeKind::Added => '+',
            ChangeKind::Removed => '-',
            ChangeKind::Changed => '~',
        }
    }
}

/// One change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustChange {
    pub class: ChangeClass,
    pub kind: ChangeKind,
    /// What changed: `camera`, `Stripe`, `allowed_paths`.
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The risk of what the change is about.
    pub risk: RiskLevel,
    /// The newer version can do something the older could not.
    pub raises_risk: bool,
}

impl TrustChange {
    /// `+ capability camera (High): required, scheduled`.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} {} {} ({})",
            self.kind.sign(),
            self.class.label(),
            self.subject,
            self.risk
        );
        match (&self.from, &self.to) {
            (Some(a), Some(b)) => line.push_str(&format!(": {a} -> {b}")),
            (None, Some(b)) => line.push_str(&format!(": {b}")),
            (Some(a), None) => line.push_str(&format!(": was {a}")),
            (None, None) => {}
        }
        if self.raises_risk {
            line.push_str("  [raises risk]");
        }
        line
    }
}

/// What changed from one version to the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustDiff {
    pub risk_before: Option<RiskLevel>,
    pub risk_after: Option<RiskLevel>,
    /// The highest risk rose.
    pub risk_rose: bool,
    /// Changes that raise risk first, then by class.
    pub changes: Vec<TrustChange>,
}

impl TrustDiff {
    /// Any change gives the newer version more power.
    pub fn raises_risk(&self) -> bool {
        self.risk_rose || self.changes.iter().any(|c| c.raises_risk)
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// How much a mode lets an agent act on its own.
fn autonomy(mode: Option<PermissionMode>) -> u8 {
    match mode {
        None | Some(PermissionMode::UserTriggered) => 0,
        Some(PermissionMode::OnDemand) => 1,
        Some(PermissionMode::Scheduled) => 2,
        Some(PermissionMode::Continuous) => 3,
    }
}

fn need(c: &EffectiveCapability) -> String {
    let who: Vec<String> = c.sources.iter().map(ToString::to_string).collect();
    format!("{}, by {}", c.need(), who.join(", "))
}

/// Matches items of two lists by key and reports added, removed and
/// changed ones (compared by `show`).
fn by_key<T, K: Ord>(
    from: &[T],
    to: &[T],
    key: impl Fn(&T) -> K,
    mut each: impl FnMut(Option<&T>, Option<&T>),
) {
    for new in to {
        each(from.iter().find(|old| key(old) == key(new)), Some(new));
    }
    for old in from {
        if !to.iter().any(|new| key(new) == key(old)) {
            each(Some(old), None);
        }
    }
}

/// Every trust change from `old` to `new`.
pub fn diff(old: &AgentTrust, new: &AgentTrust) -> TrustDiff {
    let mut changes = Vec::new();
    let mut push = |class, kind, subject: String, from, to, risk, raises_risk| {
        changes.push(TrustChange {
            class,
            kind,
            subject,
            from,
            to,
            risk,
            raises_risk,
        });
    };

    by_key(
        &old.capabilities,
        &new.capabilities,
        |c| c.capability,
        |a, b| match (a, b) {
            (None, Some(b)) => push(
                ChangeClass::Capability,
                ChangeKind::Added,
                b.capability.to_string(),
                None,
                Some(need(b)),
                b.risk,
                true,
            ),
            (Some(a), None) => push(
                ChangeClass::Capability,
                ChangeKind::Removed,
                a.capability.to_string(),
                Some(need(a)),
                None,
                a.risk,
                false,
            ),
            (Some(a), Some(b)) if need(a) != need(b) => {
                let raised = (b.required && !a.required) || autonomy(b.mode) > autonomy(a.mode);
                push(
                    ChangeClass::Capability,
                    ChangeKind::Changed,
                    b.capability.to_string(),
                    Some(need(a)),
                    Some(need(b)),
                    b.risk,
                    raised,
                );
            }
            _ => {}
        },
    );

    let shell = crate::agent::Capability::Shell.risk();
    by_key(
        &old.mcp_servers,
        &new.mcp_servers,
        |s| (s.declared_by.clone(), s.name.clone()),
        |a, b| {
            let show = |s: &super::McpServerFacts| {
                let env = if s.env.is_empty() {
                    String::new()
                } else {
                    format!(" with {}", s.env.join(", "))
                };
                format!("{}{env}", s.command_line())
            };
            let subject = a.or(b).map(|s| s.name.clone()).unwrap_or_default();
            match (a, b) {
                (None, Some(b)) => push(
                    ChangeClass::McpServer,
                    ChangeKind::Added,
                    subject,
                    None,
                    Some(show(b)),
                    shell,
                    true,
                ),
                (Some(a), None) => push(
                    ChangeClass::McpServer,
                    ChangeKind::Removed,
                    subject,
                    Some(show(a)),
                    None,
                    shell,
                    false,
                ),
                (Some(a), Some(b)) if a != b => {
                    // A command or argument changed, an environment variable
                    // or a tool added: new power. Only narrowing is not.
                    let narrowed = a.command == b.command
                        && a.args == b.args
                        && b.env.iter().all(|e| a.env.contains(e))
                        && match (&a.tools, &b.tools) {
                            (_, Some(nt)) => a
                                .tools
                                .as_ref()
                                .is_none_or(|ot| nt.iter().all(|t| ot.contains(t))),
                            (None, None) => true,
                            (Some(_), None) => false,
                        };
                    push(
                        ChangeClass::McpServer,
                        ChangeKind::Changed,
                        subject,
                        Some(show(a)),
                        Some(show(b)),
                        shell,
                        !narrowed,
                    );
                }
                _ => {}
            }
        },
    );

    by_key(
        &old.bash_tools,
        &new.bash_tools,
        |t| (t.declared_by.clone(), t.name.clone()),
        |a, b| {
            let show = |t: &super::BashToolFacts| {
                let installs: BTreeSet<&str> = t
                    .dependencies
                    .iter()
                    .flat_map(|d| d.install.values().map(String::as_str))
                    .collect();
                if installs.is_empty() {
                    t.command.clone()
                } else {
                    format!(
                        "{} (installs: {})",
                        t.command,
                        installs.into_iter().collect::<Vec<_>>().join("; ")
                    )
                }
            };
            let subject = a.or(b).map(|t| t.name.clone()).unwrap_or_default();
            match (a, b) {
                (None, Some(b)) => push(
                    ChangeClass::BashTool,
                    ChangeKind::Added,
                    subject,
                    None,
                    Some(show(b)),
                    shell,
                    true,
                ),
                (Some(a), None) => push(
                    ChangeClass::BashTool,
                    ChangeKind::Removed,
                    subject,
                    Some(show(a)),
                    None,
                    shell,
                    false,
                ),
                (Some(a), Some(b)) if show(a) != show(b) => push(
                    ChangeClass::BashTool,
                    ChangeKind::Changed,
                    subject,
                    Some(show(a)),
                    Some(show(b)),
                    shell,
                    true,
                ),
                _ => {}
            }
        },
    );

    by_key(
        &old.http_tools,
        &new.http_tools,
        |t| (t.declared_by.clone(), t.name.clone()),
        |a, b| {
            let show = |t: &super::HttpToolFacts| {
                let method = t.method.as_str();
                let oauth = if t.oauth.is_empty() {
                    String::new()
                } else {
                    format!(" with OAuth ({})", t.oauth.join(", "))
                };
                let auth = t
                    .auth
                    .map(|a| format!(", auth {}", a.as_str()))
                    .unwrap_or_default();
                format!("{method} {}{auth}{oauth}", t.endpoint)
            };
            let risk = |t: &super::HttpToolFacts| {
                if t.oauth.is_empty() {
                    crate::agent::Capability::Network.risk()
                } else {
                    crate::agent::Capability::Oauth.risk()
                }
            };
            let subject = a.or(b).map(|t| t.name.clone()).unwrap_or_default();
            match (a, b) {
                (None, Some(b)) => push(
                    ChangeClass::HttpTool,
                    ChangeKind::Added,
                    subject,
                    None,
                    Some(show(b)),
                    risk(b),
                    true,
                ),
                (Some(a), None) => push(
                    ChangeClass::HttpTool,
                    ChangeKind::Removed,
                    subject,
                    Some(show(a)),
                    None,
                    risk(a),
                    false,
                ),
                (Some(a), Some(b)) if show(a) != show(b) => {
                    let new_oauth = b.oauth.iter().any(|p| !a.oauth.contains(p));
                    let moved =
                        a.endpoint != b.endpoint || a.method != b.method || a.auth != b.auth;
                    push(
                        ChangeClass::HttpTool,
                        ChangeKind::Changed,
                        subject,
                        Some(show(a)),
                        Some(show(b)),
                        risk(b),
                        new_oauth || moved,
                    )
                }
                _ => {}
            }
        },
    );

    by_key(
        &old.tools,
        &new.tools,
        |t| t.tool.name.normalized(),
        |a, b| {
            let risk = |t: &super::LockedToolFacts| {
                t.capabilities
                    .iter()
                    .map(|c| c.risk())
                    .max()
                    .unwrap_or(RiskLevel::Low)
            };
            let subject = a.or(b).map(|t| t.tool.name.to_string()).unwrap_or_default();
            match (a, b) {
                (None, Some(b)) => push(
                    ChangeClass::Tool,
                    ChangeKind::Added,
                    subject,
                    None,
                    Some(b.tool.version.to_string()),
                    risk(b),
                    true,
                ),
                (Some(a), None) => push(
                    ChangeClass::Tool,
                    ChangeKind::Removed,
                    subject,
                    Some(a.tool.version.to_string()),
                    None,
                    risk(a),
                    false,
                ),
                (Some(a), Some(b)) if a.tool.version != b.tool.version => {
                    let more = b.capabilities.iter().any(|c| !a.capabilities.contains(c));
                    if let (Some(was), Some(now)) = (a.evidence, b.evidence)
                        && now.weaker_than(&was)
                    {
                        push(
                            ChangeClass::Evidence,
                            ChangeKind::Changed,
                            format!("{}@{}", subject, b.tool.version),
                            Some(was.describe()),
                            Some(now.describe()),
                            risk(b),
                            true,
                        );
                    }
                    push(
                        ChangeClass::Tool,
                        ChangeKind::Changed,
                        subject,
                        Some(a.tool.version.to_string()),
                        Some(b.tool.version.to_string()),
                        risk(b),
                        more,
                    )
                }
                _ => {}
            }
        },
    );

    // Sandbox lists: an entry added widens; the list emptied lifts the
    // limit altogether.
    let lists = [
        (
            "allowed_paths",
            &old.constraints.allowed_paths,
            &new.constraints.allowed_paths,
            crate::agent::Capability::Filesystem.risk(),
        ),
        (
            "allowed_urls",
            &old.constraints.allowed_urls,
            &new.constraints.allowed_urls,
            crate::agent::Capability::Network.risk(),
        ),
    ];
    for (name, a, b, risk) in lists {
        if a == b {
            continue;
        }
        let lifted = !a.is_empty() && b.is_empty();
        let added: Vec<&String> = b.iter().filter(|x| !a.contains(x)).collect();
        let show = |l: &Vec<String>| {
            if l.is_empty() {
                "no limit declared".to_owned()
            } else {
                l.join(", ")
            }
        };
        push(
            ChangeClass::Sandbox,
            ChangeKind::Changed,
            name.to_owned(),
            Some(show(a)),
            Some(show(b)),
            risk,
            lifted || (!a.is_empty() && !added.is_empty()),
        );
    }

    for entry in new.context.iter().filter(|e| !old.context.contains(e)) {
        let risk = if entry == "location" {
            crate::agent::Capability::Location.risk()
        } else {
            RiskLevel::Low
        };
        push(
            ChangeClass::Context,
            ChangeKind::Added,
            entry.clone(),
            None,
            Some("injected".to_owned()),
            risk,
            true,
        );
    }
    for entry in old.context.iter().filter(|e| !new.context.contains(e)) {
        push(
            ChangeClass::Context,
            ChangeKind::Removed,
            entry.clone(),
            Some("injected".to_owned()),
            None,
            RiskLevel::Low,
            false,
        );
    }

    if old.signer != new.signer {
        let show = |s: &Option<String>| s.clone().unwrap_or_else(|| "unsigned".to_owned());
        push(
            ChangeClass::Signer,
            ChangeKind::Changed,
            "key".to_owned(),
            Some(show(&old.signer)),
            Some(show(&new.signer)),
            RiskLevel::Critical,
            true,
        );
    }

    // Stable: within each group, the order above.
    changes.sort_by_key(|c| !c.raises_risk);
    TrustDiff {
        risk_before: old.max_risk,
        risk_after: new.max_risk,
        risk_rose: new.max_risk > old.max_risk,
        changes,
    }
}
