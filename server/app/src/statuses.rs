//! Statuses of packages and versions (PEP 792; docs/statuses.md):
//! `active`, `deprecated` (a reason, optionally a successor to use
//! instead), `archived` (a package takes no new versions) and
//! `quarantined` (no uploads, no downloads, no resolution; only admins set
//! and lift it). What each status shows and refuses is here; setting one
//! is [`crate::status_changes`]'s (which, holding the owners' rule, sits
//! above the records and resolution that read statuses).

use std::collections::{BTreeMap, HashMap, HashSet};

use agentlang_core::{PackageName, Version, lockfile::LockedTool};
use serde::{Deserialize, Serialize};

use crate::{Registry, ServiceError, tlog::LogRef};
use store::{
    packages::PackageRecord,
    statuses::{PACKAGE_ROW, StatusRow},
    time::rfc3339,
};

/// A package's or a version's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to say (what no status reads as).
    Active,
    /// Still works; a reason, and perhaps a successor to use instead.
    Deprecated,
    /// A package that takes no new versions; what exists still installs.
    Archived,
    /// Neither uploads, downloads nor resolution; only admins set and lift it.
    Quarantined,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::Active,
        Status::Deprecated,
        Status::Archived,
        Status::Quarantined,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Deprecated => "deprecated",
            Status::Archived => "archived",
            Status::Quarantined => "quarantined",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status as records, the index and pages show it: present only when
/// not `active`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusView {
    pub status: Status,
    /// Why, in the owner's (or admin's) words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A deprecation's successor: a package of the same kind to use
    /// instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successor: Option<String>,
    /// RFC 3339.
    pub changed_at: String,
    /// The log entry that recorded it.
    pub log: LogRef,
    /// `changed_at` in Unix seconds, for views that show it otherwise.
    #[serde(skip)]
    pub changed_unix: i64,
}

impl StatusView {
    fn of(row: &StatusRow) -> Option<Self> {
        // A row whose status a later version wrote and this one cannot
        // read shows as nothing rather than failing the record.
        let status = Status::parse(&row.status)?;
        (status != Status::Active).then(|| Self {
            status,
            reason: row.reason.clone(),
            successor: row.successor.clone(),
            changed_at: rfc3339(row.changed_at),
            log: LogRef {
                index: row.log_index,
            },
            changed_unix: row.changed_at,
        })
    }

    /// One line, as a banner or a warning says it.
    pub fn sentence(&self) -> String {
        let mut s = self.status.as_str().to_owned();
        if let Some(reason) = &self.reason {
            s.push_str(": ");
            s.push_str(reason);
        }
        if let Some(successor) = &self.successor {
            s.push_str(&format!(" (use {successor} instead)"));
        }
        s
    }
}

/// The statuses of one package and its versions, as stored.
#[derive(Debug, Clone, Default)]
pub struct PackageStatuses {
    pub package: Option<StatusView>,
    /// By version id.
    pub versions: HashMap<i64, StatusView>,
}

impl PackageStatuses {
    pub fn version(&self, version_id: i64) -> Option<StatusView> {
        self.versions.get(&version_id).cloned()
    }

    /// What holds for a version: its own status, else its package's.
    pub fn effective(&self, version_id: i64) -> Option<&StatusView> {
        self.versions.get(&version_id).or(self.package.as_ref())
    }

    /// Quarantined itself or through its package.
    pub fn quarantined(&self, version_id: i64) -> Option<&StatusView> {
        [self.package.as_ref(), self.versions.get(&version_id)]
            .into_iter()
            .flatten()
            .find(|s| s.status == Status::Quarantined)
    }
}

/// The statuses of these packages and their versions, in one query.
pub async fn of_packages(
    registry: &Registry,
    package_ids: &[i64],
) -> Result<HashMap<i64, PackageStatuses>, ServiceError> {
    let mut out: HashMap<i64, PackageStatuses> = HashMap::new();
    for row in registry.db.statuses_of_packages(package_ids).await? {
        let Some(view) = StatusView::of(&row) else {
            continue;
        };
        let entry = out.entry(row.package_id).or_default();
        if row.version_id == PACKAGE_ROW {
            entry.package = Some(view);
        } else {
            entry.versions.insert(row.version_id, view);
        }
    }
    Ok(out)
}

/// [`of_packages`] for one package.
pub async fn of_package(
    registry: &Registry,
    package_id: i64,
) -> Result<PackageStatuses, ServiceError> {
    Ok(of_packages(registry, &[package_id])
        .await?
        .remove(&package_id)
        .unwrap_or_default())
}

/// 410 `quarantined` when the version or its package is quarantined: a
/// download's refusal.
pub async fn refuse_download(
    registry: &Registry,
    package: &PackageRecord,
    version_id: i64,
    version: &Version,
) -> Result<(), ServiceError> {
    let statuses = of_package(registry, package.id).await?;
    match statuses.quarantined(version_id) {
        Some(s) => Err(ServiceError::Quarantined(format!(
            "{} {}@{version} is {}",
            package.kind,
            package.name,
            s.sentence()
        ))),
        None => Ok(()),
    }
}

/// A publish's refusal of a new version of an archived (409
/// `package-archived`) or quarantined (410 `quarantined`) package.
pub async fn refuse_publish(
    registry: &Registry,
    package: &PackageRecord,
) -> Result<(), ServiceError> {
    let statuses = of_package(registry, package.id).await?;
    match &statuses.package {
        Some(s) if s.status == Status::Archived => Err(ServiceError::Archived(format!(
            "{} {} is {}: it takes no new versions (an owner can set it active again)",
            package.kind,
            package.name,
            s.sentence()
        ))),
        Some(s) if s.status == Status::Quarantined => Err(ServiceError::Quarantined(format!(
            "{} {} is {}: it takes no new versions",
            package.kind,
            package.name,
            s.sentence()
        ))),
        _ => Ok(()),
    }
}

/// The quarantined among the tools a resolution picked (410 `quarantined`
/// naming each), or, when `picked` is `None` (the resolution failed),
/// among every tool it looked up, so a failure a quarantine caused says
/// so. One query, on fresh solves only (a cached resolution was checked
/// when it was solved, and a status change drops it).
pub async fn refuse_quarantined_tools(
    registry: &Registry,
    looked_up: &HashSet<String>,
    picked: Option<&BTreeMap<PackageName, LockedTool>>,
) -> Result<(), ServiceError> {
    if looked_up.is_empty() {
        return Ok(());
    }
    let mut names: Vec<String> = looked_up.iter().cloned().collect();
    names.sort();
    let rows = registry.db.quarantined_tools(&names).await?;
    if rows.is_empty() {
        return Ok(());
    }
    let picked: Option<HashMap<String, &Version>> = picked.map(|tools| {
        tools
            .iter()
            .map(|(name, tool)| (name.normalized(), &tool.version))
            .collect()
    });
    let mut found: Vec<String> = rows
        .iter()
        .filter(|row| match (&picked, &row.version) {
            // The resolution failed: every quarantined thing it met may be
            // why. It succeeded: only what it picked counts (quarantined
            // versions are never candidates, so this holds only for what
            // reached it otherwise).
            (None, _) => true,
            (Some(picked), None) => picked.contains_key(&row.normalized_name),
            (Some(picked), Some(version)) => {
                picked.get(&row.normalized_name).copied() == Some(version)
            }
        })
        .map(|row| {
            let what = match &row.version {
                Some(v) => format!("tool {}@{v}", row.normalized_name),
                None => format!("tool {}", row.normalized_name),
            };
            match &row.reason {
                Some(reason) => format!("{what} is quarantined: {reason}"),
                None => format!("{what} is quarantined"),
            }
        })
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    Err(ServiceError::Quarantined(format!(
        "the resolution needs what cannot be installed: {} (require or pin another version or tool)",
        found.join("; ")
    )))
}
