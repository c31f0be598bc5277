//! Statuses of packages and versions (PEP 792; docs/statuses.md):
//! `active`, `deprecated` (a reason, optionally a successor to use
//! instead), `archived` (a package takes no new versions) and
//! `quarantined` (no uploads, no downloads, no resolution; only admins set
//! and lift it). Each change is one log entry, written with it.

use std::collections::{BTreeMap, HashMap, HashSet};

use agentlang_core::{Kind, PackageName, Version, lockfile::LockedTool};
use serde::{Deserialize, Serialize};

use crate::{
    FieldError, Registry, ServiceError,
    accounts::Actor,
    packages::{LogRef, PackageRecord, find_package, find_version},
    rate_limits::{Bucket, account_budget},
    time::rfc3339,
    tlog,
    tokens::Authenticated,
};
use store::{
    names::Scope,
    statuses::{PACKAGE_ROW, StatusChange, StatusRow},
};

/// Longest reason kept, in characters (as a yank's).
pub const MAX_STATUS_REASON_CHARS: usize = 500;

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

/// What `PUT /api/v1/{kind}/{name}[/{version}]/status` takes, as sent.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StatusRequest {
    /// `active`, `deprecated`, `archived` (packages only) or `quarantined`
    /// (admins only).
    #[cfg_attr(feature = "openapi", schema(example = "deprecated"))]
    pub status: String,
    /// Why; at most 500 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = "superseded by http-fetch"))]
    pub reason: Option<String>,
    /// With `deprecated` only: a package of the same kind to use instead.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = "http-fetch"))]
    pub successor: Option<String>,
}

/// A checked [`StatusRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct NewStatus {
    status: Status,
    reason: Option<String>,
    successor: Option<PackageName>,
}

impl StatusRequest {
    /// Every problem at once, each named by its field.
    fn check(&self, of_version: bool) -> Result<NewStatus, ServiceError> {
        let mut errors = Vec::new();
        let status = Status::parse(self.status.trim());
        match status {
            None => errors.push(FieldError::new(
                "status",
                format!(
                    "must be one of {}",
                    Status::ALL.map(Status::as_str).join(", ")
                ),
            )),
            Some(Status::Archived) if of_version => errors.push(FieldError::new(
                "status",
                "archived applies to a package (it takes no new versions), not to one version",
            )),
            Some(_) => {}
        }
        let reason = self
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        if reason.is_some_and(|r| r.chars().count() > MAX_STATUS_REASON_CHARS) {
            errors.push(FieldError::new(
                "reason",
                format!("must be at most {MAX_STATUS_REASON_CHARS} characters"),
            ));
        }
        let successor = match self.successor.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => match PackageName::new(text) {
                Ok(name) => Some(name),
                Err(e) => {
                    errors.push(FieldError::new("successor", e.to_string()));
                    None
                }
            },
        };
        if successor.is_some() && status.is_some_and(|s| s != Status::Deprecated) {
            errors.push(FieldError::new(
                "successor",
                "only a deprecation names a successor",
            ));
        }
        match status {
            Some(status) if errors.is_empty() => Ok(NewStatus {
                status,
                reason: reason.map(str::to_owned),
                successor,
            }),
            _ => Err(ServiceError::Validation(errors)),
        }
    }
}

/// What a status change answers: the status now in force.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusAnswer {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "tool"))]
    pub kind: Kind,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: PackageName,
    /// The version, for a version's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub version: Option<Version>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successor: Option<String>,
    /// The entry that recorded this status; absent when the status was
    /// never set and `active` was asked (nothing to record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogRef>,
}

/// Sets a package's (`version` `None`) or a version's status. Owners, with
/// a token carrying the `yank` scope for the package; admins (a token with
/// the `admin` scope) for any package. Only admins set `quarantined` or
/// change a quarantined status. Asking for the status, reason and
/// successor in force writes nothing and answers the entry that recorded
/// them.
pub async fn set_status(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    version: Option<&Version>,
    request: &StatusRequest,
) -> Result<StatusAnswer, ServiceError> {
    let actor = auth.actor();
    if !actor.is_admin {
        auth.require(Scope::Yank)?;
        auth.require_package(name)?;
    }
    let package = find_package(registry, kind, name).await?;
    set_status_as(registry, actor, &package, version, request).await
}

/// [`set_status`]'s rule once the caller is known: for the API and the
/// catalog alike.
pub async fn set_status_as(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    version: Option<&Version>,
    request: &StatusRequest,
) -> Result<StatusAnswer, ServiceError> {
    if !actor.is_admin {
        crate::owners::require_owner(registry, actor.account_id, package).await?;
    }
    let new = request.check(version.is_some())?;
    let record = match version {
        Some(v) => Some(find_version(registry, package, v).await?),
        None => None,
    };
    let version_id = record.as_ref().map(|r| r.id);
    let current = of_package(registry, package.id).await?;
    let now = match version_id {
        Some(id) => current.version(id),
        None => current.package.clone(),
    };
    let quarantine_involved = new.status == Status::Quarantined
        || now
            .as_ref()
            .is_some_and(|s| s.status == Status::Quarantined);
    if quarantine_involved && !actor.is_admin {
        return Err(ServiceError::AdminRequired);
    }
    // The successor as first published (any spelling finds it).
    let successor = match &new.successor {
        None => None,
        Some(wanted) => {
            if wanted.normalized() == package.normalized_name {
                return Err(ServiceError::Validation(vec![FieldError::new(
                    "successor",
                    "a package cannot succeed itself",
                )]));
            }
            let Some(found) = registry.db.find_package(package.kind, wanted).await? else {
                return Err(ServiceError::Validation(vec![FieldError::new(
                    "successor",
                    format!("no {} named {wanted} is published here", package.kind),
                )]));
            };
            Some(found.name.to_string())
        }
    };
    let unchanged = match &now {
        Some(s) => s.status == new.status && s.reason == new.reason && s.successor == successor,
        None => new.status == Status::Active,
    };
    // A change is a permanent log entry and moves every replica's caches:
    // budgeted like yanks, per package or version and per account.
    if !unchanged {
        let target = match version {
            Some(v) => format!(
                "status:{}:{}@{v}",
                package.kind.as_str(),
                package.normalized_name
            ),
            None => format!(
                "status:{}:{}",
                package.kind.as_str(),
                package.normalized_name
            ),
        };
        registry
            .rate_limits
            .check(Bucket::YankPerVersion, &target)?;
        registry
            .rate_limits
            .check(Bucket::YankPerAccount, &account_budget(actor.account_id))?;
    }
    let entry = tlog::status_entry(
        package.kind,
        &package.name,
        version,
        new.status.as_str(),
        new.reason.as_deref(),
        successor.as_deref(),
        actor.username.as_str(),
    );
    tlog::check_servable(&entry)?;
    let change = StatusChange {
        package_id: package.id,
        version_id,
        status: new.status.as_str(),
        reason: new.reason.as_deref(),
        successor: successor.as_deref(),
        log_entry: &entry,
    };
    let log_index = registry.db.set_status(&change).await?;
    if !unchanged {
        registry.tlog.appended();
        // Observe the new generation at once, so this replica's cached
        // download targets and index entries go now, not at the next
        // periodic read.
        registry
            .index_cache
            .current_generation(&registry.db)
            .await?;
        tracing::info!(kind = %package.kind, package = %package.name, version = ?version.map(ToString::to_string), status = %new.status, account = %actor.username, ?log_index, "status changed");
    }
    Ok(StatusAnswer {
        kind: package.kind,
        name: package.name.clone(),
        version: record.map(|r| r.version),
        status: new.status,
        reason: new.reason,
        successor,
        log: log_index.map(|index| LogRef { index }),
    })
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
            // A quarantined package: every version of it.
            (_, None) | (None, Some(_)) => true,
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
