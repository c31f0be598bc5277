//! Abstract tools: a tool declares the interfaces it implements
//! (tool.yaml `provides: [storage]`), an agent requires one by naming it in
//! `tools:` where it would name a tool (`- name: storage`), and the
//! resolver picks one provider, which the lock records (`interfaces:
//! {storage: sqlite-store}`) and pins in `tools:` like any tool.
//!
//! Interface names and tool names are one namespace kept disjoint by the
//! registry (a tool may not be named like a provided interface, nor
//! provide an interface named like a tool), so a `tools:` entry means the
//! same thing for as long as the registry stands: that is what lets the
//! spec's `- name: storage` stay as written. This module holds the pure
//! parts: the pick ([`pick_provider`]) and what a lock's `interfaces`
//! section must hold ([`check`]), which [`crate::lockcheck`] calls.

use std::collections::{BTreeMap, BTreeSet};

use semver::VersionReq;

use crate::{
    lockfile::Lockfile,
    names::{PackageName, Version},
};

/// One published version of a tool that provides the interface asked
/// about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub tool: PackageName,
    pub version: Version,
    pub yanked: bool,
}

/// The provider chosen for one interface, at the version to lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub tool: PackageName,
    pub version: Version,
}

/// The provider of an interface, deterministically (docs/resolution.md,
/// Interfaces): `offers` are the versions that provide it, of every tool.
///
/// 1. The lock's choice (`locked`: the provider and its pinned version),
///    while that version still provides the interface and satisfies
///    `requirement` (even when yanked since, as pins are kept);
/// 2. else the lock's provider at its newest unyanked version that
///    provides the interface and satisfies `requirement`;
/// 3. else, of the tools with such a version, the first by normalized
///    name, at its newest such version.
///
/// `None` when no unyanked providing version satisfies `requirement`
/// (absent: any release, prereleases excluded). Linear in `offers`.
pub fn pick_provider(
    requirement: Option<&VersionReq>,
    locked: Option<(&PackageName, &Version)>,
    offers: &[Offer],
) -> Option<Pick> {
    let star = VersionReq::STAR;
    let req = requirement.unwrap_or(&star);
    let fits = |o: &&Offer| req.matches(o.version.semver());
    if let Some((tool, version)) = locked
        && let Some(kept) = offers
            .iter()
            .filter(fits)
            .find(|o| o.tool.normalized() == tool.normalized() && &o.version == version)
    {
        return Some(Pick {
            tool: kept.tool.clone(),
            version: kept.version.clone(),
        });
    }
    // Newest usable version per provider, by normalized name.
    let mut newest: BTreeMap<String, &Offer> = BTreeMap::new();
    for offer in offers.iter().filter(|o| !o.yanked).filter(fits) {
        newest
            .entry(offer.tool.normalized())
            .and_modify(|best| {
                if offer.version.semver() > best.version.semver() {
                    *best = offer;
                }
            })
            .or_insert(offer);
    }
    let chosen = locked
        .and_then(|(tool, _)| newest.get(&tool.normalized()))
        .or_else(|| newest.values().next())?;
    Some(Pick {
        tool: chosen.tool.clone(),
        version: chosen.version.clone(),
    })
}

/// The agent's tool requirements with each interface the lock records
/// replaced by its provider, so the provider's pin answers it (the same
/// requirement, on the provider). Two requirements landing on one tool
/// are joined (both must hold).
pub fn requirements_through(
    lock: &Lockfile,
    requirements: &BTreeMap<PackageName, Option<VersionReq>>,
) -> BTreeMap<PackageName, Option<VersionReq>> {
    if lock.interfaces.is_empty() {
        return requirements.clone();
    }
    let providers: BTreeMap<String, &PackageName> = lock
        .interfaces
        .iter()
        .map(|(interface, tool)| (interface.normalized(), tool))
        .collect();
    let mut out: BTreeMap<PackageName, Option<VersionReq>> = BTreeMap::new();
    for (name, req) in requirements {
        let name = providers
            .get(&name.normalized())
            .map_or(name, |tool| *tool)
            .clone();
        match out.entry(name) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(req.clone());
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                let joined = match (slot.get_mut().take(), req.clone()) {
                    (Some(mut a), Some(b)) => {
                        a.comparators.extend(b.comparators);
                        Some(a)
                    }
                    (a, b) => a.or(b),
                };
                *slot.get_mut() = joined;
            }
        }
    }
    out
}

/// What the registry knows each tool version provides: filled by whoever
/// holds the facts (the registry at publish); a version it holds no
/// record of is not judged here.
#[derive(Debug, Clone, Default)]
pub struct Provided(BTreeMap<(String, Version), BTreeSet<String>>);

impl Provided {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records what `tool` at `version` provides (any spelling).
    pub fn insert<'a>(
        &mut self,
        tool: &PackageName,
        version: &Version,
        interfaces: impl IntoIterator<Item = &'a PackageName>,
    ) {
        self.0.insert(
            (tool.normalized(), version.clone()),
            interfaces
                .into_iter()
                .map(PackageName::normalized)
                .collect(),
        );
    }

    /// Whether `tool` at `version` provides `interface`; `None` when that
    /// version is not recorded.
    pub fn provides(
        &self,
        tool: &PackageName,
        version: &Version,
        interface: &PackageName,
    ) -> Option<bool> {
        self.0
            .get(&(tool.normalized(), version.clone()))
            .map(|set| set.contains(&interface.normalized()))
    }
}

/// Why a lock's `interfaces` entry is wrong; [`crate::lockcheck`] gives
/// each its problem kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issue {
    /// The agent requires no such interface.
    Unrelated,
    /// The recorded provider is not pinned in `tools`.
    Unpinned,
    /// The recorded provider does not provide the interface at its pinned
    /// version.
    Unprovided,
}

/// The lock's `interfaces` section against the agent's requirements and,
/// when given, the registry's record of what each version provides: each
/// entry answers a requirement of the agent, its provider is pinned in
/// `tools`, and provides the interface at that version. Answers
/// `(issue, field, message)`.
pub fn check(
    requirements: &BTreeMap<PackageName, Option<VersionReq>>,
    lock: &Lockfile,
    provided: Option<&Provided>,
) -> Vec<(Issue, String, String)> {
    let required: BTreeSet<String> = requirements.keys().map(PackageName::normalized).collect();
    let pins: BTreeMap<String, &Version> = lock
        .tools
        .iter()
        .map(|(name, tool)| (name.normalized(), &tool.version))
        .collect();
    let mut problems = Vec::new();
    for (interface, tool) in &lock.interfaces {
        let field = format!("interfaces.{interface}");
        if !required.contains(&interface.normalized()) {
            problems.push((
                Issue::Unrelated,
                field.clone(),
                format!(
                    "agent.lock records {tool} as the provider of {interface}, but the agent does not require {interface}"
                ),
            ));
        }
        let Some(version) = pins.get(&tool.normalized()) else {
            problems.push((
                Issue::Unpinned,
                field,
                format!(
                    "agent.lock records {tool} as the provider of {interface}, but does not pin {tool} under tools"
                ),
            ));
            continue;
        };
        if provided.and_then(|p| p.provides(tool, version, interface)) == Some(false) {
            problems.push((
                Issue::Unprovided,
                field,
                format!(
                    "agent.lock records {tool} as the provider of {interface}, but {tool} {version} does not declare provides: [{interface}]"
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{digest::Sha256Digest, lockfile::LockedTool};

    fn name(s: &str) -> PackageName {
        PackageName::new(s).unwrap()
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn offer(tool: &str, version: &str, yanked: bool) -> Offer {
        Offer {
            tool: name(tool),
            version: v(version),
            yanked,
        }
    }

    fn pick(
        req: Option<&str>,
        locked: Option<(&str, &str)>,
        offers: &[Offer],
    ) -> Option<(String, String)> {
        let req = req.map(|r| VersionReq::parse(r).unwrap());
        let locked = locked.map(|(t, ver)| (name(t), v(ver)));
        pick_provider(
            req.as_ref(),
            locked.as_ref().map(|(t, ver)| (t, ver)),
            offers,
        )
        .map(|p| (p.tool.to_string(), p.version.to_string()))
    }

    fn some(tool: &str, version: &str) -> Option<(String, String)> {
        Some((tool.to_owned(), version.to_owned()))
    }

    #[test]
    fn two_providers_the_first_by_normalized_name_whatever_the_order() {
        let offers = [
            offer("sqlite-store", "1.0.0", false),
            offer("sqlite-store", "1.2.0", false),
            offer("Pg_Store", "2.0.0", false),
        ];
        let mut reversed = offers.clone();
        reversed.reverse();
        assert_eq!(pick(None, None, &offers), some("Pg_Store", "2.0.0"));
        assert_eq!(pick(None, None, &reversed), some("Pg_Store", "2.0.0"));
        // A requirement only one provider meets picks that one.
        assert_eq!(
            pick(Some("^1"), None, &offers),
            some("sqlite-store", "1.2.0")
        );
        assert_eq!(pick(Some("^3"), None, &offers), None);
    }

    #[test]
    fn the_locks_choice_is_kept_while_it_fits() {
        let offers = [
            offer("a-store", "1.0.0", false),
            offer("b-store", "1.0.0", true),
            offer("b-store", "1.1.0", false),
        ];
        // The pinned version, even yanked since.
        assert_eq!(
            pick(None, Some(("b-store", "1.0.0")), &offers),
            some("b-store", "1.0.0")
        );
        // A pin no longer providing: the same provider's newest.
        assert_eq!(
            pick(None, Some(("b_store", "0.9.0")), &offers),
            some("b-store", "1.1.0")
        );
        // A provider that no longer provides: the documented order.
        assert_eq!(
            pick(None, Some(("gone", "1.0.0")), &offers),
            some("a-store", "1.0.0")
        );
        // Yanked versions are never picked afresh; prereleases only when
        // asked for.
        let offers = [
            offer("a-store", "1.0.0", true),
            offer("c-store", "2.0.0-rc.1", false),
        ];
        assert_eq!(pick(None, None, &offers), None);
        assert_eq!(
            pick(Some("^2.0.0-rc"), None, &offers),
            some("c-store", "2.0.0-rc.1")
        );
    }

    fn lock(interfaces: &[(&str, &str)], tools: &[(&str, &str)]) -> Lockfile {
        let mut l = Lockfile::new(crate::lockfile::ResolvedAt::from_unix(0).unwrap(), None);
        for (i, t) in interfaces {
            l.interfaces.insert(name(i), name(t));
        }
        for (t, ver) in tools {
            l.tools.insert(
                name(t),
                LockedTool {
                    version: v(ver),
                    hash: Sha256Digest::of(t.as_bytes()),
                    requirement: None,
                    dependencies: BTreeSet::new(),
                    log_index: None,
                },
            );
        }
        l
    }

    #[test]
    fn requirements_reach_the_recorded_provider() {
        let l = lock(&[("storage", "sqlite-store")], &[("sqlite-store", "1.0.0")]);
        let reqs: BTreeMap<PackageName, Option<VersionReq>> = [
            (name("Storage"), Some(VersionReq::parse("^1").unwrap())),
            (
                name("sqlite-store"),
                Some(VersionReq::parse(">=1.0.0").unwrap()),
            ),
            (name("web"), None),
        ]
        .into();
        let through = requirements_through(&l, &reqs);
        assert_eq!(through.len(), 2, "{through:?}");
        let joined = through[&name("sqlite-store")].as_ref().unwrap();
        assert_eq!(joined.comparators.len(), 2);
        assert_eq!(through[&name("web")], None);
    }

    #[test]
    fn a_lock_entry_must_be_required_pinned_and_provided() {
        let reqs: BTreeMap<PackageName, Option<VersionReq>> = [(name("storage"), None)].into();
        let mut provided = Provided::new();
        provided.insert(&name("sqlite-store"), &v("1.0.0"), &[name("storage")]);
        provided.insert(&name("pg-store"), &v("1.0.0"), &[]);
        let good = lock(&[("storage", "sqlite-store")], &[("sqlite-store", "1.0.0")]);
        assert!(check(&reqs, &good, Some(&provided)).is_empty());
        assert!(check(&reqs, &good, None).is_empty());

        let issues = |l: &Lockfile| -> Vec<(Issue, String)> {
            check(&reqs, l, Some(&provided))
                .into_iter()
                .map(|(i, f, _)| (i, f))
                .collect()
        };
        let wrong = lock(&[("storage", "pg-store")], &[("pg-store", "1.0.0")]);
        assert_eq!(
            issues(&wrong),
            [(Issue::Unprovided, "interfaces.storage".to_owned())]
        );
        let unpinned = lock(&[("storage", "sqlite-store"), ("cache", "x")], &[]);
        assert_eq!(
            issues(&unpinned),
            [
                (Issue::Unrelated, "interfaces.cache".to_owned()),
                (Issue::Unpinned, "interfaces.cache".to_owned()),
                (Issue::Unpinned, "interfaces.storage".to_owned()),
            ]
        );
        // A version the facts do not record is not judged.
        let unknown = lock(&[("storage", "pg-store")], &[("pg-store", "2.0.0")]);
        assert!(issues(&unknown).is_empty());
    }
}
