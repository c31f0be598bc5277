//! Setting a package's or a version's status (docs/statuses.md): who may
//! set which, the checks of a request, and the one write that stores it
//! with its log entry. What a status shows and refuses is
//! [`crate::statuses`]'.

use agentlang_core::{Kind, PackageName, Version};
use serde::{Deserialize, Serialize};

use crate::{
    FieldError, Registry, ServiceError,
    accounts::Actor,
    packages::{PackageRecord, find_package, find_version},
    rate_limits::{Bucket, account_budget},
    statuses::{Status, of_package},
    tlog::{self, LogRef},
    tokens::Authenticated,
};
use store::{names::Scope, statuses::StatusChange};

/// Longest reason kept, in characters (as a yank's).
pub const MAX_STATUS_REASON_CHARS: usize = 500;

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
    otp: Option<&str>,
) -> Result<StatusAnswer, ServiceError> {
    let actor = auth.actor();
    if !actor.is_admin {
        auth.require(Scope::Yank)?;
        auth.require_package(name)?;
    }
    let package = find_package(registry, kind, name).await?;
    set_status_as(registry, actor, &package, version, request, otp).await
}

/// [`set_status`]'s rule once the caller is known: for the API and the
/// catalog alike.
pub async fn set_status_as(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    version: Option<&Version>,
    request: &StatusRequest,
    otp: Option<&str>,
) -> Result<StatusAnswer, ServiceError> {
    if !actor.is_admin {
        crate::owners::require_owner(registry, actor.account_id, package).await?;
    }
    crate::owners::step_up_for(registry, actor, package, otp).await?;
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
