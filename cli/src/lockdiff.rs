//! What `lock` reports and what `build` checks, as pure functions over
//! lockfiles: the changes between an old and a new lock, and the reasons a
//! lock no longer matches its package.

use std::collections::{BTreeMap, BTreeSet};

use agentlang_core::{
    MemberPath, PackageName, SourceTree,
    digest::Sha256Digest,
    lockfile::{LockedAgent, Lockfile},
    package::AgentPackage,
};
use semver::VersionReq;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Removed,
    Upgraded,
    Downgraded,
    /// Same version, different content hash (a subagent file edited).
    Changed,
}

/// One line of `lock`'s report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockChange {
    /// `tool`, `skill`, `subagent`, `model` or `protocol`.
    pub section: &'static str,
    pub name: String,
    pub change: ChangeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

impl LockChange {
    pub fn describe(&self) -> String {
        let v = |o: &Option<String>| o.as_deref().map(|s| format!(" {s}")).unwrap_or_default();
        match self.change {
            ChangeKind::Added => format!("+ {} {}{}", self.section, self.name, v(&self.to)),
            ChangeKind::Removed => format!("- {} {}{}", self.section, self.name, v(&self.from)),
            ChangeKind::Upgraded | ChangeKind::Downgraded => format!(
                "{} {} {}{} ->{}",
                if self.change == ChangeKind::Upgraded {
                    "↑"
                } else {
                    "↓"
                },
                self.section,
                self.name,
                v(&self.from),
                v(&self.to)
            ),
            ChangeKind::Changed => format!(
                "~ {} {}{} (content changed)",
                self.section,
                self.name,
                v(&self.to)
            ),
        }
    }
}

/// Entries of one lock section, reduced to what a diff compares.
struct Entry {
    version: Option<semver::Version>,
    hash: Option<Sha256Digest>,
}

fn diff_section(
    section: &'static str,
    old: &BTreeMap<String, Entry>,
    new: &BTreeMap<String, Entry>,
    out: &mut Vec<LockChange>,
) {
    let show = |e: &Entry| e.version.as_ref().map(ToString::to_string);
    for (name, n) in new {
        match old.get(name) {
            None => out.push(LockChange {
                section,
                name: name.clone(),
                change: ChangeKind::Added,
                from: None,
                to: show(n),
            }),
            Some(o) => {
                let change = match (&o.version, &n.version) {
                    (Some(a), Some(b)) if b > a => Some(ChangeKind::Upgraded),
                    (Some(a), Some(b)) if b < a => Some(ChangeKind::Downgraded),
                    _ if o.hash != n.hash => Some(ChangeKind::Changed),
                    _ => None,
                };
                if let Some(change) = change {
                    out.push(LockChange {
                        section,
                        name: name.clone(),
                        change,
                        from: show(o),
                        to: show(n),
                    });
                }
            }
        }
    }
    for (name, o) in old {
        if !new.contains_key(name) {
            out.push(LockChange {
                section,
                name: name.clone(),
                change: ChangeKind::Removed,
                from: show(o),
                to: None,
            });
        }
    }
}

/// Every change from `old` (none: a first lock) to `new`, tools first,
/// then skills, subagents, models and protocols, each by name.
pub fn diff(old: Option<&Lockfile>, new: &Lockfile) -> Vec<LockChange> {
    fn tools(l: Option<&Lockfile>) -> BTreeMap<String, Entry> {
        l.map(|l| {
            l.tools
                .iter()
                .map(|(n, t)| {
                    (
                        n.to_string(),
                        Entry {
                            version: Some(t.version.semver().clone()),
                            hash: Some(t.hash),
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
    }
    fn agents(l: Option<&Lockfile>) -> BTreeMap<String, Entry> {
        l.map(|l| {
            l.agents
                .iter()
                .map(|(n, a)| {
                    (
                        n.to_string(),
                        Entry {
                            version: Some(a.version.semver().clone()),
                            hash: Some(a.hash),
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
    }
    fn models(l: Option<&Lockfile>) -> BTreeMap<String, Entry> {
        l.map(|l| {
            l.models
                .keys()
                .map(|n| {
                    (
                        n.to_string(),
                        Entry {
                            version: None,
                            hash: None,
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
    }
    fn skills(l: Option<&Lockfile>) -> BTreeMap<String, Entry> {
        l.map(|l| {
            l.skills
                .iter()
                .map(|(n, s)| {
                    (
                        n.to_string(),
                        Entry {
                            version: Some(s.version.semver().clone()),
                            hash: Some(s.hash),
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
    }
    fn protocols(l: Option<&Lockfile>) -> BTreeMap<String, Entry> {
        l.map(|l| {
            l.protocols
                .iter()
                .map(|(n, p)| {
                    (
                        n.to_string(),
                        Entry {
                            version: Some(p.version.semver().clone()),
                            hash: p.hash,
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
    }
    let mut out = Vec::new();
    diff_section("tool", &tools(old), &tools(Some(new)), &mut out);
    diff_section("skill", &skills(old), &skills(Some(new)), &mut out);
    diff_section("subagent", &agents(old), &agents(Some(new)), &mut out);
    diff_section("model", &models(old), &models(Some(new)), &mut out);
    diff_section("protocol", &protocols(old), &protocols(Some(new)), &mut out);
    out
}

/// What the package's own files say its lock must hold: computed locally,
/// never by the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalLock {
    /// The agent's own files (every packed member except agent.lock and the
    /// subagent files, which the agents section covers).
    pub files: BTreeMap<MemberPath, Sha256Digest>,
    pub agents: BTreeMap<PackageName, LockedAgent>,
    /// Registry tools and their merged requirements (`None`: newest).
    pub tools: BTreeMap<PackageName, Option<VersionReq>>,
    /// Published skills and their merged requirements.
    pub skills: BTreeMap<PackageName, VersionReq>,
    /// The agent's protocols: requirement, and the version of an inline
    /// definition.
    pub protocols: BTreeMap<String, (Option<VersionReq>, Option<agentlang_core::Version>)>,
    /// Every model the agent and its subagents declare.
    pub models: BTreeSet<String>,
}

impl LocalLock {
    /// `members` is what the container will carry (see
    /// `package_dir::agent_members`).
    pub fn of(members: &SourceTree, pkg: &AgentPackage) -> Self {
        // What the lock's own sections hold is core's, the rule publish
        // and install judge a lock by.
        let local = agentlang_core::lockcheck::local_sections(members, pkg);
        let inline = agentlang_core::protocols::inline_protocols(&pkg.agent).unwrap_or_default();
        let protocols = pkg
            .agent
            .protocols
            .iter()
            .map(|d| {
                let defined = d
                    .custom_name()
                    .and_then(|n| PackageName::new(n).ok())
                    .and_then(|n| inline.get(&n))
                    .map(|def| def.version.clone());
                (d.name.clone(), (d.version.clone(), defined))
            })
            .collect();
        Self {
            files: local.files,
            agents: local.agents,
            tools: pkg.tool_requirements(),
            skills: pkg.skill_requirements(),
            protocols,
            models: local.models,
        }
    }
}

/// No requirement and `*` mean the same: any release.
fn same_requirement(a: Option<&VersionReq>, b: Option<&VersionReq>) -> bool {
    let star = VersionReq::STAR;
    a.unwrap_or(&star) == b.unwrap_or(&star)
}

/// Why a lock no longer tells the truth, in two kinds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Staleness {
    /// Hashes of the package's own content (its files, its subagents):
    /// recomputing them changes nothing the registry supplies, so `build`
    /// does it itself.
    pub hashes: Vec<String>,
    /// What pins something from the registry (tools, skills, models,
    /// protocols):
    /// only `agentlang lock` changes it, showing what the change gives the
    /// agent and asking when it adds risk.
    pub pins: Vec<String>,
}

/// The lock against the package, each reason in its kind.
pub fn staleness(lock: &Lockfile, local: &LocalLock) -> Staleness {
    let mut stale = Staleness::default();
    let reasons = &mut stale.hashes;
    for (path, hash) in &local.files {
        match lock.files.get(path) {
            None => reasons.push(format!("{path} is not in the lock")),
            Some(h) if h != hash => reasons.push(format!("{path} changed")),
            Some(_) => {}
        }
    }
    for path in lock.files.keys() {
        if !local.files.contains_key(path) {
            reasons.push(format!("{path} is locked but gone"));
        }
    }
    for (name, agent) in &local.agents {
        match lock.agents.get(name) {
            None => reasons.push(format!("subagent {name} is not in the lock")),
            Some(a) if a != agent => reasons.push(format!("subagent {name} changed")),
            Some(_) => {}
        }
    }
    for name in lock.agents.keys() {
        if !local.agents.contains_key(name) {
            reasons.push(format!("subagent {name} is locked but gone"));
        }
    }
    let reasons = &mut stale.pins;
    for model in &local.models {
        if !lock.models.keys().any(|m| m.as_str() == model) {
            reasons.push(format!("model {model} is not in the lock"));
        }
    }
    for model in lock.models.keys() {
        if !local.models.contains(model.as_str()) {
            reasons.push(format!("model {model} is locked but no agent declares it"));
        }
    }
    // An interface is answered by the provider the lock records.
    let tools = agentlang_core::interfaces::requirements_through(lock, &local.tools);
    for (name, req) in &tools {
        match lock.tools.get(name) {
            None => reasons.push(format!("tool {name} is not in the lock")),
            Some(t) if !same_requirement(t.requirement.as_ref(), req.as_ref()) => {
                reasons.push(format!(
                    "tool {name}: the requirement is now {}, the lock has {}",
                    req.as_ref().map_or("*".to_owned(), ToString::to_string),
                    t.requirement
                        .as_ref()
                        .map_or("*".to_owned(), ToString::to_string)
                ))
            }
            Some(t) if !req.as_ref().is_none_or(|r| r.matches(t.version.semver())) => {
                reasons.push(format!(
                    "tool {name} {} does not satisfy {}",
                    t.version,
                    req.as_ref().map_or("*".to_owned(), ToString::to_string)
                ))
            }
            Some(_) => {}
        }
    }
    for (name, tool) in &lock.tools {
        // Tools only other tools need carry no requirement; a locked tool
        // with one is a direct dependency that the package dropped.
        if tool.requirement.is_some() && !tools.contains_key(name) {
            reasons.push(format!("tool {name} is locked but no longer required"));
        }
    }
    for (name, req) in &local.skills {
        match lock.skills.get(name) {
            None => reasons.push(format!("skill {name} is not in the lock")),
            Some(s) if s.requirement != *req => reasons.push(format!(
                "skill {name}: the requirement is now {req}, the lock has {}",
                s.requirement
            )),
            Some(s) if !req.matches(s.version.semver()) => {
                reasons.push(format!("skill {name} {} does not satisfy {req}", s.version))
            }
            Some(_) => {}
        }
    }
    for name in lock.skills.keys() {
        if !local.skills.contains_key(name) {
            reasons.push(format!("skill {name} is locked but no longer required"));
        }
    }
    for (name, (req, inline)) in &local.protocols {
        let locked = lock.protocols.iter().find(|(n, _)| n.as_str() == name);
        match locked {
            None => reasons.push(format!("protocol {name} is not in the lock")),
            Some((_, p)) if !same_requirement(p.requirement.as_ref(), req.as_ref()) => {
                reasons.push(format!("protocol {name}: the requirement changed"));
            }
            Some((_, p)) if inline.as_ref().is_some_and(|v| *v != p.version) => {
                reasons.push(format!(
                    "protocol {name}: its x-protocols definition changed"
                ));
            }
            Some(_) => {}
        }
    }
    for name in lock.protocols.keys() {
        if !local.protocols.contains_key(name.as_str()) {
            reasons.push(format!("protocol {name} is locked but no longer declared"));
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use agentlang_core::{
        Version,
        lockfile::{LockedModel, LockedTool, ModelId, ResolvedAt},
    };

    use super::*;

    fn name(n: &str) -> PackageName {
        PackageName::new(n).unwrap()
    }

    fn tool(v: &str, req: Option<&str>) -> LockedTool {
        LockedTool {
            version: Version::parse(v).unwrap(),
            hash: Sha256Digest::of(v.as_bytes()),
            requirement: req.map(|r| VersionReq::parse(r).unwrap()),
            dependencies: BTreeSet::new(),
            log_index: None,
        }
    }

    fn lock(tools: &[(&str, LockedTool)]) -> Lockfile {
        let mut l = Lockfile::new(ResolvedAt::from_unix(0).unwrap(), None);
        for (n, t) in tools {
            l.tools.insert(name(n), t.clone());
        }
        l
    }

    #[test]
    fn first_lock_lists_everything_as_added() {
        let mut new = lock(&[("web_search", tool("1.2.0", Some("^1.2")))]);
        new.models.insert(
            ModelId::new("claude-sonnet-4").unwrap(),
            LockedModel {
                context_window: 200_000,
                supports_tools: true,
                input_1m_price: None,
                output_1m_price: None,
            },
        );
        let d = diff(None, &new);
        let described: Vec<String> = d.iter().map(LockChange::describe).collect();
        assert_eq!(
            described,
            ["+ tool web_search 1.2.0", "+ model claude-sonnet-4"]
        );
    }

    #[test]
    fn up_down_added_removed_and_unchanged() {
        let old = lock(&[
            ("a", tool("1.0.0", Some("^1"))),
            ("b", tool("2.1.0", Some("^2"))),
            ("c", tool("0.3.0", None)),
            ("same", tool("1.0.0", Some("^1"))),
        ]);
        let new = lock(&[
            ("a", tool("1.4.0", Some("^1"))),
            ("b", tool("2.0.1", Some("^2"))),
            ("d", tool("5.0.0", None)),
            ("same", tool("1.0.0", Some("^1"))),
        ]);
        let d = diff(Some(&old), &new);
        let described: Vec<String> = d.iter().map(LockChange::describe).collect();
        assert_eq!(
            described,
            [
                "↑ tool a 1.0.0 -> 1.4.0",
                "↓ tool b 2.1.0 -> 2.0.1",
                "+ tool d 5.0.0",
                "- tool c 0.3.0",
            ]
        );
        assert_eq!(d[0].change, ChangeKind::Upgraded);
        assert_eq!(serde_json::to_value(&d[1]).unwrap()["change"], "downgraded");
    }

    #[test]
    fn a_skill_requirement_is_a_pin_and_its_changes_are_listed() {
        let skill = |v: &str, req: &str| agentlang_core::lockfile::LockedSkill {
            version: Version::parse(v).unwrap(),
            hash: Sha256Digest::of(v.as_bytes()),
            requirement: VersionReq::parse(req).unwrap(),
            log_index: None,
        };
        let mut local = local(&[]);
        local
            .skills
            .insert(name("pdf-tools"), VersionReq::parse("^0.1").unwrap());
        let mut l = lock_for(&local, &[]);
        assert_eq!(
            staleness(&l, &local).pins,
            ["skill pdf-tools is not in the lock"]
        );
        l.skills.insert(name("pdf-tools"), skill("0.1.0", "^0.1"));
        assert_eq!(staleness(&l, &local), Staleness::default());
        local
            .skills
            .insert(name("pdf-tools"), VersionReq::parse("^0.2").unwrap());
        assert_eq!(
            staleness(&l, &local).pins,
            ["skill pdf-tools: the requirement is now ^0.2, the lock has ^0.1"]
        );
        local.skills.clear();
        assert_eq!(
            staleness(&l, &local).pins,
            ["skill pdf-tools is locked but no longer required"]
        );

        let mut new = l.clone();
        new.skills.insert(name("pdf-tools"), skill("0.2.0", "^0.2"));
        new.skills.insert(name("csv-tools"), skill("1.0.0", "^1"));
        let described: Vec<String> = diff(Some(&l), &new)
            .iter()
            .map(LockChange::describe)
            .collect();
        assert_eq!(
            described,
            [
                "+ skill csv-tools 1.0.0",
                "↑ skill pdf-tools 0.1.0 -> 0.2.0"
            ]
        );
    }

    #[test]
    fn same_version_with_new_content_is_a_change() {
        let mut old = lock(&[]);
        old.agents.insert(
            name("writer"),
            LockedAgent {
                version: Version::parse("1.0.0").unwrap(),
                hash: Sha256Digest::of(b"old"),
            },
        );
        let mut new = old.clone();
        new.agents.get_mut(&name("writer")).unwrap().hash = Sha256Digest::of(b"new");
        let d = diff(Some(&old), &new);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].describe(), "~ subagent writer 1.0.0 (content changed)");
    }

    /// Every reason, hashes first.
    fn stale_reasons(lock: &Lockfile, local: &LocalLock) -> Vec<String> {
        let Staleness { mut hashes, pins } = staleness(lock, local);
        hashes.extend(pins);
        hashes
    }

    fn local(tools: &[(&str, Option<&str>)]) -> LocalLock {
        LocalLock {
            files: [(
                MemberPath::new("agent.yaml").unwrap(),
                Sha256Digest::of(b"agent"),
            )]
            .into(),
            agents: BTreeMap::new(),
            tools: tools
                .iter()
                .map(|(n, r)| (name(n), r.map(|r| VersionReq::parse(r).unwrap())))
                .collect(),
            skills: BTreeMap::new(),
            protocols: BTreeMap::new(),
            models: BTreeSet::new(),
        }
    }

    #[test]
    fn edited_files_are_hashes_and_requirements_models_are_pins() {
        let mut local = local(&[("web_search", Some("^1.2"))]);
        local.models.insert("claude-sonnet-4".to_owned());
        let mut l = lock_for(&local, &[("web_search", tool("1.3.0", Some("^1.2")))]);
        l.files.insert(
            MemberPath::new("agent.yaml").unwrap(),
            Sha256Digest::of(b"version 1.0.0"),
        );
        // A version bump: only a hash is stale... and the model, never
        // locked, is a pin the registry must describe.
        assert_eq!(
            staleness(&l, &local),
            Staleness {
                hashes: vec!["agent.yaml changed".to_owned()],
                pins: vec!["model claude-sonnet-4 is not in the lock".to_owned()],
            }
        );
        local.models.clear();
        assert!(staleness(&l, &local).pins.is_empty());
        local.tools.insert(name("web_fetch"), None);
        assert_eq!(
            staleness(&l, &local).pins,
            ["tool web_fetch is not in the lock"]
        );
    }

    #[test]
    fn an_interface_is_answered_by_its_recorded_provider() {
        let local = local(&[("storage", Some("^1"))]);
        let mut l = lock_for(&local, &[("sqlite-store", tool("1.2.0", Some("^1")))]);
        assert_eq!(
            staleness(&l, &local).pins,
            [
                "tool storage is not in the lock",
                "tool sqlite-store is locked but no longer required"
            ]
        );
        l.interfaces.insert(name("storage"), name("sqlite-store"));
        assert!(staleness(&l, &local).pins.is_empty());
    }

    #[test]
    fn protocols_missing_changed_or_dropped_make_a_lock_stale() {
        use agentlang_core::{
            lockfile::LockedProtocol,
            protocols::{ProtocolName, ProtocolSource},
        };
        let mut local = local(&[]);
        let req = |r: &str| Some(VersionReq::parse(r).unwrap());
        local.protocols.insert("a2a".into(), (req("^1.0.0"), None));
        local.protocols.insert(
            "custom/acme-sync".into(),
            (req("^1.0.0"), Some(Version::parse("1.1.0").unwrap())),
        );
        let mut l = lock_for(&local, &[]);
        let locked = |v: &str, r: &str, source| LockedProtocol {
            version: Version::parse(v).unwrap(),
            requirement: req(r),
            source,
            hash: None,
        };
        l.protocols.insert(
            ProtocolName::new("custom/acme-sync").unwrap(),
            locked("1.0.0", "^1.0.0", ProtocolSource::Inline),
        );
        l.protocols.insert(
            ProtocolName::new("mcp").unwrap(),
            locked("2024.11.5", "^2024.11", ProtocolSource::Catalog),
        );
        assert_eq!(
            stale_reasons(&l, &local),
            [
                "protocol a2a is not in the lock",
                "protocol custom/acme-sync: its x-protocols definition changed",
                "protocol mcp is locked but no longer declared",
            ]
        );
        l.protocols.insert(
            ProtocolName::new("a2a").unwrap(),
            locked("1.0.0", "^1.0.0", ProtocolSource::Catalog),
        );
        l.protocols.remove("mcp");
        l.protocols.insert(
            ProtocolName::new("custom/acme-sync").unwrap(),
            locked("1.1.0", "^1.0.0", ProtocolSource::Inline),
        );
        assert!(stale_reasons(&l, &local).is_empty());
        let mut old = l.clone();
        old.protocols.get_mut("a2a").unwrap().version = Version::parse("0.9.0").unwrap();
        let described: Vec<String> = diff(Some(&old), &l)
            .iter()
            .map(LockChange::describe)
            .collect();
        assert_eq!(described, ["↑ protocol a2a 0.9.0 -> 1.0.0"]);
    }

    fn lock_for(local: &LocalLock, tools: &[(&str, LockedTool)]) -> Lockfile {
        let mut l = lock(tools);
        l.files = local.files.clone();
        l.agents = local.agents.clone();
        l
    }

    #[test]
    fn a_matching_lock_has_no_stale_reasons() {
        let local = local(&[("web_search", Some("^1.2")), ("artifacts", None)]);
        let l = lock_for(
            &local,
            &[
                ("web_search", tool("1.3.0", Some("^1.2"))),
                ("artifacts", tool("0.1.0", Some("*"))),
                ("web_fetch", tool("1.0.0", None)),
            ],
        );
        assert_eq!(stale_reasons(&l, &local), Vec::<String>::new());
    }

    #[test]
    fn edited_files_and_changed_requirements_are_named() {
        let local = local(&[("web_search", Some("^2")), ("new_tool", None)]);
        let mut l = lock_for(
            &local,
            &[
                ("web_search", tool("1.3.0", Some("^1.2"))),
                ("dropped", tool("1.0.0", Some("^1"))),
            ],
        );
        l.files.insert(
            MemberPath::new("agent.yaml").unwrap(),
            Sha256Digest::of(b"before"),
        );
        l.files
            .insert(MemberPath::new("ux.yaml").unwrap(), Sha256Digest::of(b"ux"));
        assert_eq!(
            stale_reasons(&l, &local),
            [
                "agent.yaml changed",
                "ux.yaml is locked but gone",
                "tool new_tool is not in the lock",
                "tool web_search: the requirement is now ^2, the lock has ^1.2",
                "tool dropped is locked but no longer required",
            ]
        );
    }

    #[test]
    fn a_locked_version_outside_its_requirement_is_stale() {
        let local = local(&[("web_search", Some("^1.2"))]);
        let l = lock_for(&local, &[("web_search", tool("1.1.0", Some("^1.2")))]);
        assert_eq!(
            stale_reasons(&l, &local),
            ["tool web_search 1.1.0 does not satisfy ^1.2"]
        );
    }
}
