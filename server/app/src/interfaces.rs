//! Abstract tools (docs/resolution.md, Interfaces): a tool's tool.yaml
//! declares `provides: [storage]`; an agent requires `storage` by naming
//! it in `tools:`; resolution picks a provider with
//! `core::interfaces::pick_provider` and the lock records it.
//!
//! Interface names and tool names are one namespace, kept disjoint here
//! the way protocol names and package names are: a tool may not be
//! published under a name some tool provides as an interface, nor
//! provide an interface named like a published tool. So a `tools:` entry
//! means a tool or an interface for good, and resolving it is
//! deterministic over time.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use agentlang_core::{
    Kind, PackageName, Version,
    interfaces::{Offer, Pick, pick_provider},
    lockcheck::PublishedTools,
    lockfile::Lockfile,
    rules::Rule,
};
use semver::VersionReq;
use store::interfaces::ProvidingVersion;

use crate::{FieldError, Registry, ServiceError};

/// A tool about to be published: its name is no interface another tool
/// provides, and none of its `provides` names a published tool.
pub async fn check_tool_names(
    registry: &Registry,
    name: &PackageName,
    provides: &BTreeSet<PackageName>,
) -> Result<(), ServiceError> {
    let providing = registry.db.providing_versions().await?;
    if let Some(other) = providing
        .iter()
        .find(|v| v.name.normalized() != name.normalized() && v.provides(name))
    {
        return Err(ServiceError::NameTaken(format!(
            "{name} is an interface {} provides; tool names and interface names are kept apart, so publish this tool under another name",
            other.name
        )));
    }
    for interface in provides {
        if registry
            .db
            .find_package(Kind::Tool, interface)
            .await?
            .is_some()
        {
            return Err(ServiceError::NameTaken(format!(
                "provides names {interface}, which is a published tool; tool names and interface names are kept apart, so name the interface otherwise"
            )));
        }
    }
    Ok(())
}

/// Records in `tools` what each provider the lock's `interfaces` names
/// provides at its pinned version, so the lock check can refuse a
/// provider that does not provide its interface there.
pub async fn add_provided(
    registry: &Registry,
    lock: &Lockfile,
    tools: &mut PublishedTools,
) -> Result<(), ServiceError> {
    if lock.interfaces.is_empty() {
        return Ok(());
    }
    let providing = registry.db.providing_versions().await?;
    // Maps, not scans: the lock is the publisher's.
    let pins: BTreeMap<String, (&PackageName, &Version)> = lock
        .tools
        .iter()
        .map(|(n, t)| (n.normalized(), (n, &t.version)))
        .collect();
    let provided: BTreeMap<(String, &Version), &Vec<PackageName>> = providing
        .iter()
        .map(|v| ((v.name.normalized(), &v.version), &v.provides.0))
        .collect();
    for provider in lock.interfaces.values() {
        let key = provider.normalized();
        let Some(&(name, version)) = pins.get(&key) else {
            continue;
        };
        // A version missing from the list provides nothing.
        let provides = provided
            .get(&(key, version))
            .map(|p| p.as_slice())
            .unwrap_or_default();
        tools.insert_provides(name, version, provides);
    }
    Ok(())
}

/// The interfaces among an agent's requirements and the provider picked
/// for each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picks {
    /// Interface as the agent spelled it, to its provider.
    pub interfaces: BTreeMap<PackageName, Pick>,
}

/// Picks a provider for every requirement that names an interface (the
/// providing versions read once per `generation`, kept in the index
/// cache); the other requirements are tools.
/// `previous` is the lock being updated, whose choices are kept while they
/// fit. An interface no unyanked version of any provider satisfies breaks
/// `interface-unprovided`, one field error per such interface.
pub async fn pick(
    registry: &Registry,
    generation: i64,
    requirements: &BTreeMap<PackageName, Option<VersionReq>>,
    previous: Option<&Lockfile>,
    exclude_newer: Option<i64>,
) -> Result<Picks, ServiceError> {
    if requirements.is_empty() {
        return Ok(Picks::default());
    }
    let providing = providing_at(registry, generation).await?;
    pick_from(&providing, requirements, previous, exclude_newer)
}

/// Every live tool version that provides an interface at `generation`,
/// read once per generation that changed a tool (the index cache keeps
/// it), since every resolve naming a tool and every interface page need it.
async fn providing_at(
    registry: &Registry,
    generation: i64,
) -> Result<Arc<Vec<ProvidingVersion>>, ServiceError> {
    if let Some(providing) = registry.index_cache.providing(generation) {
        return Ok(providing);
    }
    let providing = Arc::new(registry.db.providing_versions().await?);
    registry
        .index_cache
        .put_providing(generation, Arc::clone(&providing));
    Ok(providing)
}

fn pick_from(
    providing: &[ProvidingVersion],
    requirements: &BTreeMap<PackageName, Option<VersionReq>>,
    previous: Option<&Lockfile>,
    exclude_newer: Option<i64>,
) -> Result<Picks, ServiceError> {
    // Interface (normalized) to the versions providing it.
    let mut offers: BTreeMap<String, Vec<Offer>> = BTreeMap::new();
    for v in providing {
        for interface in &v.provides.0 {
            offers
                .entry(interface.normalized())
                .or_default()
                .push(Offer {
                    tool: v.name.clone(),
                    version: v.version.clone(),
                    // Too young for the request's cutoff: like a yanked
                    // version, kept only as the lock's pick.
                    yanked: v.yanked || exclude_newer.is_some_and(|t| v.published_at > t),
                });
        }
    }
    // The previous lock's choices, by normalized interface: maps, not
    // scans, since the lock is the client's.
    let pins: BTreeMap<String, (&PackageName, &Version)> = previous
        .into_iter()
        .flat_map(|lock| &lock.tools)
        .map(|(n, t)| (n.normalized(), (n, &t.version)))
        .collect();
    let chosen: BTreeMap<String, (&PackageName, &Version)> = previous
        .into_iter()
        .flat_map(|lock| &lock.interfaces)
        .filter_map(|(i, tool)| Some((i.normalized(), *pins.get(&tool.normalized())?)))
        .collect();
    let mut picks = Picks::default();
    let mut errors = Vec::new();
    for (name, req) in requirements {
        let Some(offered) = offers.get(&name.normalized()) else {
            continue;
        };
        let locked = chosen.get(&name.normalized()).copied();
        match pick_provider(req.as_ref(), locked, offered) {
            Some(pick) => {
                picks.interfaces.insert(name.clone(), pick);
            }
            None => {
                let providers: BTreeSet<&str> = offered.iter().map(|o| o.tool.as_str()).collect();
                errors.push(
                    FieldError::new(
                        format!("tools.{name}"),
                        format!(
                            "{name} is an interface, but no unyanked version of its providers ({}) provides it{}{}",
                            providers.into_iter().collect::<Vec<_>>().join(", "),
                            req.as_ref()
                                .map(|r| format!(" at a version satisfying {r}"))
                                .unwrap_or_default(),
                            if exclude_newer.is_some() {
                                " among those old enough for the minimum release age"
                            } else {
                                ""
                            }
                        ),
                    )
                    .breaking(Some(Rule::InterfaceUnprovided)),
                );
            }
        }
    }
    if errors.is_empty() {
        Ok(picks)
    } else {
        Err(ServiceError::RuleBroken(Rule::InterfaceUnprovided, errors))
    }
}

/// One tool that provides an interface, for its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSummary {
    pub tool: PackageName,
    /// Its newest unyanked version that provides the interface; `None`
    /// when only yanked versions do.
    pub newest: Option<Version>,
}

/// An interface as its catalog page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceInfo {
    pub name: PackageName,
    /// By normalized name: the order the pick goes by.
    pub providers: Vec<ProviderSummary>,
    /// What an agent requiring it with no version and no lock gets.
    pub default_pick: Option<Pick>,
}

/// The interface `name` and every tool that provides it; `NotFound` when
/// no live tool version provides it.
pub async fn interface(registry: &Registry, name: &str) -> Result<InterfaceInfo, ServiceError> {
    let not_found =
        || ServiceError::NotFound(format!("no tool provides an interface named {name}"));
    let name = PackageName::new(name).map_err(|_| not_found())?;
    let generation = registry
        .index_cache
        .current_generation(&registry.db)
        .await?;
    let providing = providing_at(registry, generation).await?;
    let offers: Vec<Offer> = providing
        .iter()
        .filter(|v| v.provides(&name))
        .map(|v| Offer {
            tool: v.name.clone(),
            version: v.version.clone(),
            yanked: v.yanked,
        })
        .collect();
    if offers.is_empty() {
        return Err(not_found());
    }
    let mut providers: BTreeMap<String, ProviderSummary> = BTreeMap::new();
    for offer in &offers {
        let entry = providers
            .entry(offer.tool.normalized())
            .or_insert_with(|| ProviderSummary {
                tool: offer.tool.clone(),
                newest: None,
            });
        if !offer.yanked && entry.newest.as_ref().is_none_or(|n| offer.version > *n) {
            entry.newest = Some(offer.version.clone());
        }
    }
    Ok(InterfaceInfo {
        default_pick: pick_provider(None, None, &offers),
        name,
        providers: providers.into_values().collect(),
    })
}
