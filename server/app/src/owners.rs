//! Package owners: the one place that decides who may change them.
//!
//! - An owner invites; the invited account becomes an owner only when it
//!   accepts (so no package is attributed to an account without consent).
//! - An owner may leave, but never as the last one.
//! - An owner removes only owners who joined after them; an admin removes
//!   anyone (never the last). A token acts as an admin only with the
//!   `admin` scope ([`Authenticated::actor`]).
//! - A removed owner's invitations are void: they go with the ownership,
//!   and an invitation is accepted only while its sender owns the package.
//! - A token changes owners, and answers invitations, only with the
//!   `owners` scope and for packages its patterns admit
//!   ([`package_for_token`]).

use std::collections::BTreeMap;

use agentlang_core::{Kind, PackageName, tlog::LogOp};

use crate::{
    FieldError, Registry, ServiceError,
    accounts::Actor,
    audit, tlog,
    tokens::{Authenticated, Scope},
};
use agentlang_core::Username;
use store::{
    owners::{OwnerError, Remover},
    packages::PackageRecord,
};

pub use store::owners::{InvitationRecord, OwnerRecord};

/// Accounts one request may invite or remove.
pub const MAX_OWNER_CHANGES: usize = 32;
/// Invitations one listing shows (an account's inbox, a package's pending
/// ones): anyone who owns a package can invite anyone, so the inbox is
/// bounded by the reader, not by the senders.
pub const MAX_INVITATIONS_LISTED: i64 = 100;
/// How long an invitation waits for its answer.
pub const INVITATION_LIFETIME_SECS: i64 = 30 * 24 * 3600;

/// The package `kind`/`name` names; 404 when there is none (or the name
/// cannot be one).
pub async fn find_package(
    registry: &Registry,
    kind: Kind,
    name: &str,
) -> Result<PackageRecord, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("{kind} {name:?}"));
    let name = PackageName::new(name).map_err(|_| not_found())?;
    registry
        .db
        .find_package(kind, &name)
        .await?
        .ok_or_else(not_found)
}

/// The package `kind`/`name` whose owners a token may change, or whose
/// invitation it may answer: 403 unless the token carries the `owners`
/// scope and its patterns admit the name (checked before the package is
/// looked up); 404 when there is no such package.
pub async fn package_for_token(
    registry: &Registry,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageRecord, ServiceError> {
    auth.require(Scope::Owners)?;
    auth.require_package(name)?;
    find_package(registry, kind, name.as_str()).await
}

/// An owner's standing on a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerRole {
    /// Published the package first (and is still an owner).
    Founder,
    Owner,
}

impl OwnerRole {
    pub fn of(owner: &OwnerRecord) -> Self {
        if owner.ordinal == 1 {
            Self::Founder
        } else {
            Self::Owner
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Founder => "founder",
            Self::Owner => "owner",
        }
    }
}

/// Whether the account owns the package (pages show owner controls).
pub async fn is_owner(
    registry: &Registry,
    account_id: i64,
    package_id: i64,
) -> Result<bool, ServiceError> {
    Ok(registry.db.is_owner(package_id, account_id).await?)
}

/// 403 `not-owner` unless the account owns the package.
pub async fn require_owner(
    registry: &Registry,
    account_id: i64,
    package: &PackageRecord,
) -> Result<(), ServiceError> {
    if is_owner(registry, account_id, package.id).await? {
        Ok(())
    } else {
        Err(ServiceError::NotOwner(format!(
            "you are not an owner of {}",
            package.name
        )))
    }
}

/// A package's owners (in the order they joined) and pending invitations.
#[derive(Debug, Clone)]
pub struct Owners {
    pub owners: Vec<OwnerRecord>,
    pub invitations: Vec<InvitationRecord>,
}

pub async fn list_owners(
    registry: &Registry,
    package: &PackageRecord,
) -> Result<Owners, ServiceError> {
    Ok(Owners {
        owners: current_owners(registry, package.id).await?,
        invitations: registry
            .db
            .invitations_of(package.id, MAX_INVITATIONS_LISTED)
            .await?,
    })
}

/// A package's owners, in the order they joined.
pub async fn current_owners(
    registry: &Registry,
    package_id: i64,
) -> Result<Vec<OwnerRecord>, ServiceError> {
    Ok(registry.db.list_owners(package_id).await?)
}

/// A package an account owns, with its owners and pending invitees.
#[derive(Debug, Clone)]
pub struct OwnedPackage {
    pub kind: Kind,
    pub name: PackageName,
    pub owners: Vec<OwnerRecord>,
    pub invited: Vec<Username>,
}

/// The packages an account owns (at most `limit`), each with its owners
/// and pending invitees: three queries however many packages.
pub async fn owned_packages(
    registry: &Registry,
    account_id: i64,
    limit: i64,
) -> Result<Vec<OwnedPackage>, ServiceError> {
    let listings = registry
        .db
        .owned_package_listings(account_id, limit)
        .await?;
    let ids: Vec<i64> = listings.iter().map(|l| l.id).collect();
    let mut owners: BTreeMap<i64, Vec<OwnerRecord>> = BTreeMap::new();
    for (package_id, owner) in registry.db.owners_of(&ids).await? {
        owners.entry(package_id).or_default().push(owner);
    }
    let mut invited: BTreeMap<i64, Vec<Username>> = BTreeMap::new();
    for (package_id, username) in registry.db.invitees_of(&ids).await? {
        invited.entry(package_id).or_default().push(username);
    }
    Ok(listings
        .into_iter()
        .map(|listing| OwnedPackage {
            kind: listing.kind,
            name: listing.name,
            owners: owners.remove(&listing.id).unwrap_or_default(),
            invited: invited.remove(&listing.id).unwrap_or_default(),
        })
        .collect())
}

/// Resolves usernames to accounts, listing every unknown one as a field
/// error; duplicates (in any spelling) collapse.
async fn resolve_accounts(
    registry: &Registry,
    usernames: &[String],
) -> Result<Vec<(i64, Username)>, ServiceError> {
    if usernames.is_empty() {
        return Err(ServiceError::Validation(vec![FieldError::new(
            "usernames",
            "must name at least one account",
        )]));
    }
    crate::resolve::check_count("usernames", usernames.len(), MAX_OWNER_CHANGES)?;
    let mut found = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, raw) in usernames.iter().enumerate() {
        let account = match Username::parse(raw.trim()) {
            Ok(username) => registry.db.find_account(&username).await?,
            Err(_) => None,
        };
        match account {
            Some(account) => {
                found.insert(account.id, account.username);
            }
            None => errors.push(FieldError::new(
                format!("usernames[{i}]"),
                format!("no account is named {raw:?}"),
            )),
        }
    }
    if errors.is_empty() {
        Ok(found.into_iter().collect())
    } else {
        Err(ServiceError::Validation(errors))
    }
}

/// Second factor: the step-up rule for an act of `actor` on `package`,
/// under the package's publishing policy (docs/two-factor.md).
pub async fn step_up_for(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    otp: Option<&str>,
) -> Result<(), ServiceError> {
    // Read from the store: `publishing_policy` builds on this module.
    let policy = registry
        .db
        .publishing_policy(package.id)
        .await?
        .unwrap_or_default();
    crate::two_factor::step_up(registry, actor.account_id, Some(&policy), otp).await
}

/// Invites accounts to own the package (owners only). Inviting an owner
/// is not an error; inviting again renews the invitation. Returns the
/// usernames invited now.
pub async fn invite_owners(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    usernames: &[String],
    otp: Option<&str>,
) -> Result<Vec<Username>, ServiceError> {
    require_owner(registry, actor.account_id, package).await?;
    step_up_for(registry, actor, package, otp).await?;
    let mut invited = Vec::new();
    let expires_at = store::now() + INVITATION_LIFETIME_SECS;
    for (account_id, username) in resolve_accounts(registry, usernames).await? {
        if registry
            .db
            .invite_owner(package.id, account_id, actor.account_id, expires_at)
            .await?
        {
            let what = format!("{} {}", package.kind, package.name);
            audit::record(
                registry,
                actor.account_id,
                "owner_invited",
                &format!("{username} to {what}"),
            )
            .await;
            audit::record(
                registry,
                account_id,
                "invited",
                &format!("to {what} by {}", actor.username),
            )
            .await;
            tracing::info!(package = %package.name, %username, by = %actor.username, "owner invited");
            invited.push(username);
        }
    }
    Ok(invited)
}

/// The account's pending invitations.
pub async fn invitations_for(
    registry: &Registry,
    account_id: i64,
) -> Result<Vec<InvitationRecord>, ServiceError> {
    Ok(registry
        .db
        .invitations_for(account_id, MAX_INVITATIONS_LISTED)
        .await?)
}

/// An invited account's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The account becomes the package's newest owner.
    Accept,
    /// The invitation is gone.
    Decline,
}

/// Answers the account's invitation; 404 when it has no (unexpired) one,
/// or its sender no longer owns the package.
pub async fn answer_invitation(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    answer: Answer,
) -> Result<(), ServiceError> {
    let (found, action, detail) = match answer {
        Answer::Accept => (
            registry
                .db
                .accept_invitation(
                    package.id,
                    actor.account_id,
                    &tlog::owner_entry(
                        LogOp::OwnerAdd,
                        package.kind,
                        &package.name,
                        actor.username.as_str(),
                    ),
                )
                .await?,
            "owner_added",
            " (accepted)",
        ),
        Answer::Decline => (
            registry
                .db
                .delete_invitation(package.id, actor.account_id)
                .await?,
            "invitation_declined",
            "",
        ),
    };
    if !found {
        return Err(ServiceError::NotFound(format!(
            "an invitation to own {} {}",
            package.kind, package.name
        )));
    }
    if answer == Answer::Accept {
        registry.tlog.appended();
    }
    let package_name = format!("{} {}", package.kind, package.name);
    audit::record(
        registry,
        actor.account_id,
        action,
        &format!("{package_name}{detail}"),
    )
    .await;
    tracing::info!(package = %package_name, account = %actor.username, ?answer, "invitation answered");
    Ok(())
}

/// Removes owners: an owner may leave and remove owners who joined after
/// them; an admin may remove anyone. Never the last owner (409). Their
/// pending invitations to the package are withdrawn with them.
pub async fn remove_owners(
    registry: &Registry,
    actor: Actor<'_>,
    package: &PackageRecord,
    usernames: &[String],
    otp: Option<&str>,
) -> Result<(), ServiceError> {
    let is_owner = registry.db.is_owner(package.id, actor.account_id).await?;
    let remover = match (is_owner, actor.is_admin) {
        (true, _) => Remover::Owner(actor.account_id),
        (false, true) => Remover::Admin,
        (false, false) => {
            return Err(ServiceError::NotOwner(format!(
                "you are not an owner of {} (an admin removes others' owners only with a \
                 token carrying the `admin` scope)",
                package.name
            )));
        }
    };
    step_up_for(registry, actor, package, otp).await?;
    let accounts = resolve_accounts(registry, usernames).await?;
    let entries: Vec<_> = accounts
        .iter()
        .map(|(_, username)| {
            tlog::owner_entry(
                LogOp::OwnerRemove,
                package.kind,
                &package.name,
                username.as_str(),
            )
        })
        .collect();
    registry
        .db
        .remove_owners(package.id, remover, &accounts, &entries)
        .await
        .map_err(|e| match e {
            OwnerError::NotAnOwner(username) => ServiceError::Validation(vec![FieldError::new(
                "usernames",
                format!("{username} is not an owner"),
            )]),
            OwnerError::LastOwner => {
                ServiceError::Conflict("a package must keep at least one owner".to_owned())
            }
            OwnerError::Senior(username) => ServiceError::SeniorOwner(format!(
                "{username} has been an owner of {} longer than you; only an earlier owner or an admin may remove them",
                package.name
            )),
            OwnerError::Db(e) => e.into(),
        })?;
    registry.tlog.appended();
    let what = format!("{} {}", package.kind, package.name);
    for (account_id, username) in &accounts {
        audit::record(
            registry,
            *account_id,
            "owner_removed",
            &format!("from {what} by {}", actor.username),
        )
        .await;
        tracing::info!(package = %package.name, owner = %username, by = %actor.username, "owner removed");
    }
    Ok(())
}
