//! What the web catalog's pages read that no API route does: the home
//! page's counts and lists, a publisher's packages and keys, a key's
//! signatures, a tool's dependents. Each page's read model is one function
//! here; packages in every list are summarized as search summarizes them
//! ([`search::summaries`]), by the same representative version.

use agentlang_core::{Kind, PackageName, Username, Version, signing::KeyId};
use store::{
    accounts::AccountRecord,
    index::VersionHead,
    owners::OwnerRecord,
    packages::{PackageRecord, VersionRecord},
};

pub use store::catalog::{CatalogCounts, DependentRow, SignedVersionRow};

use crate::{Registry, ServiceError, keys::SigningKeyRecord, search, search::SearchResult};

/// The home page: registry-wide counts, the packages published most
/// recently and the most downloaded.
#[derive(Debug, Clone)]
pub struct Home {
    pub counts: CatalogCounts,
    pub recently_published: Vec<SearchResult>,
    pub most_downloaded: Vec<SearchResult>,
}

/// The home page's read model, with `list_len` packages in each list.
pub async fn home(registry: &Registry, list_len: i64) -> Result<Home, ServiceError> {
    let db = &registry.db;
    let counts = db.catalog_counts().await?;
    let recent = ids(db.recently_published(list_len).await?);
    let popular = ids(db.most_downloaded(list_len).await?);
    Ok(Home {
        counts,
        recently_published: search::summaries(db, &recent).await?,
        most_downloaded: search::summaries(db, &popular).await?,
    })
}

fn ids(listings: Vec<store::catalog::PackageListing>) -> Vec<i64> {
    listings.into_iter().map(|l| l.id).collect()
}

/// A publisher: the account, the packages it owns (at most a page's
/// worth, by name) and its signing keys.
#[derive(Debug, Clone)]
pub struct Publisher {
    pub account: AccountRecord,
    pub packages: Vec<SearchResult>,
    pub keys: Vec<SigningKeyRecord>,
}

/// The publisher page's read model; `None` for an unknown account, and
/// for one that has published nothing (no package, no key): such an
/// account is answered like a name nobody holds, so the page does not say
/// which usernames exist.
pub async fn publisher(
    registry: &Registry,
    username: &Username,
    max_packages: i64,
) -> Result<Option<Publisher>, ServiceError> {
    let db = &registry.db;
    let Some(account) = db.find_account(username).await? else {
        return Ok(None);
    };
    let owned = ids(db.owned_package_listings(account.id, max_packages).await?);
    let keys = db.account_signing_keys(account.id).await?;
    if owned.is_empty() && keys.is_empty() {
        return Ok(None);
    }
    Ok(Some(Publisher {
        packages: search::summaries(db, &owned).await?,
        keys,
        account,
    }))
}

/// A signing key, who holds it and what it signed (newest first).
#[derive(Debug, Clone)]
pub struct SignedBy {
    pub key: SigningKeyRecord,
    pub holder: Option<Username>,
    pub signed: Vec<SignedVersionRow>,
}

/// The key page's read model; `None` for an unknown key.
pub async fn signed_by(
    registry: &Registry,
    key_id: &KeyId,
    max_signed: i64,
) -> Result<Option<SignedBy>, ServiceError> {
    let db = &registry.db;
    let Some(key) = db.find_signing_key(key_id).await? else {
        return Ok(None);
    };
    Ok(Some(SignedBy {
        holder: db.account_username(key.account_id).await?,
        signed: db.versions_signed_by(&key.key_id, max_signed).await?,
        key,
    }))
}

/// The package versions that depend on a tool, newest first: through a
/// dependency row or an `agent.lock` pin.
pub async fn dependents(
    registry: &Registry,
    tool: &PackageName,
) -> Result<Vec<DependentRow>, ServiceError> {
    Ok(registry.db.tool_dependents(&tool.normalized()).await?)
}

/// A package's page: the package, every live version (newest first) and
/// its owners.
#[derive(Debug, Clone)]
pub struct PackagePage {
    pub package: PackageRecord,
    pub versions: Vec<VersionRecord>,
    pub owners: Vec<OwnerRecord>,
    /// The package's and its versions' statuses (docs/statuses.md).
    pub statuses: crate::statuses::PackageStatuses,
}

/// The package page's read model (any spelling of the name); `None` when
/// there is no such package or it has no live version.
pub async fn package_page(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
) -> Result<Option<PackagePage>, ServiceError> {
    let db = &registry.db;
    let Some(package) = db.find_package(kind, name).await? else {
        return Ok(None);
    };
    let versions = db.list_versions(package.id).await?;
    if versions.is_empty() {
        return Ok(None);
    }
    Ok(Some(PackagePage {
        owners: db.list_owners(package.id).await?,
        statuses: crate::statuses::of_package(registry, package.id).await?,
        package,
        versions,
    }))
}

impl PackagePage {
    /// `version`, or, without one, the version that represents the package
    /// ([`search::representative`]); `None` for a version it does not have.
    pub fn pick(&self, version: Option<&Version>) -> Option<&VersionRecord> {
        let wanted = match version {
            Some(version) => version.clone(),
            None => {
                let heads: Vec<VersionHead> = self
                    .versions
                    .iter()
                    .map(|v| VersionHead {
                        package_id: v.package_id,
                        id: v.id,
                        version: v.version.clone(),
                        yanked: v.yanked,
                        downloads: v.downloads,
                        published_at: v.published_at,
                    })
                    .collect();
                let chosen = search::representative(&heads)?;
                chosen.shown.unwrap_or(chosen.described)
            }
        };
        self.versions.iter().find(|v| v.version == wanted)
    }

    /// Downloads of every live version.
    pub fn downloads(&self) -> i64 {
        self.versions.iter().map(|v| v.downloads).sum()
    }
}

/// Who signed a version: the key, and who holds it.
pub async fn signer(
    registry: &Registry,
    key_id: &KeyId,
) -> Result<Option<(SigningKeyRecord, Option<Username>)>, ServiceError> {
    let db = &registry.db;
    let Some(key) = db.find_signing_key(key_id).await? else {
        return Ok(None);
    };
    let holder = db.account_username(key.account_id).await?;
    Ok(Some((key, holder)))
}

/// A package version's page: the package with its versions and owners,
/// the version shown, who signed it, and what each kind of page adds (an
/// agent's stored quality report and its protocols as the catalog stands
/// now; the package versions that use a tool).
#[derive(Debug, Clone)]
pub struct VersionPage {
    pub page: PackagePage,
    /// Index into `page.versions` of the version shown.
    shown: usize,
    pub signer: Option<(SigningKeyRecord, Option<Username>)>,
    pub quality: Option<agentlang_core::quality::QualityReport>,
    pub protocol_notes: Vec<crate::protocols::ProtocolStatusNote>,
    pub dependents: Vec<DependentRow>,
    /// Whether the viewer (a signed-in account) owns the package.
    pub viewer_owns: bool,
    /// What its provenance says of the build (docs/provenance.md).
    pub provenance: Option<agentlang_core::provenance::Summary>,
}

impl VersionPage {
    /// The version the page shows.
    pub fn version(&self) -> &VersionRecord {
        &self.page.versions[self.shown]
    }
}

/// The read model of the page of `version` of a package (without one, the
/// version that represents it), as `viewer` sees it; `None` for a package
/// or version there is no page of.
pub async fn version_page(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: Option<&Version>,
    viewer: Option<i64>,
) -> Result<Option<VersionPage>, ServiceError> {
    let Some(page) = package_page(registry, kind, name).await? else {
        return Ok(None);
    };
    let Some(shown) = page
        .pick(version)
        .and_then(|v| page.versions.iter().position(|r| r.id == v.id))
    else {
        return Ok(None);
    };
    let record = &page.versions[shown];
    let signer = match &record.signer_key_id {
        Some(key_id) => signer(registry, key_id).await?,
        None => None,
    };
    let (quality, protocol_notes) = if kind == Kind::Agent {
        (
            crate::quality::stored_report(registry, record.id).await?,
            crate::protocols::agent_protocol_status(
                registry,
                &record.spec.0,
                record.lockfile.as_ref().map(|l| &l.0),
            )
            .await?,
        )
    } else {
        (None, Vec::new())
    };
    let dependents = if kind == Kind::Tool {
        dependents(registry, &page.package.name).await?
    } else {
        Vec::new()
    };
    let viewer_owns = match viewer {
        Some(account_id) => registry.db.is_owner(page.package.id, account_id).await?,
        None => false,
    };
    // Read only for a version that has one.
    let provenance = match record.provenance_sha256 {
        Some(_) => crate::provenance::of_version(registry, record.id)
            .await?
            .map(|p| p.summary),
        None => None,
    };
    Ok(Some(VersionPage {
        provenance,
        page,
        shown,
        signer,
        quality,
        protocol_notes,
        dependents,
        viewer_owns,
    }))
}

/// A signed-in account's own page: its live tokens, keys, the packages it
/// owns (with their owners and invitees), the invitations it has, and its
/// activity.
#[derive(Debug, Clone)]
pub struct AccountPage {
    pub tokens: Vec<crate::tokens::TokenRecord>,
    pub keys: Vec<SigningKeyRecord>,
    pub packages: Vec<crate::owners::OwnedPackage>,
    pub invitations: Vec<store::owners::InvitationRecord>,
    pub audit: Vec<store::audit::AuditRecord>,
}

/// The account page's read model, with at most `max_owned` packages.
pub async fn account_page(
    registry: &Registry,
    account_id: i64,
    max_owned: i64,
) -> Result<AccountPage, ServiceError> {
    let now = store::now();
    Ok(AccountPage {
        tokens: crate::tokens::list_tokens(registry, account_id)
            .await?
            .into_iter()
            .filter(|t| t.revoked_at.is_none() && t.expires_at > now)
            .collect(),
        keys: crate::keys::list_keys(registry, account_id).await?,
        packages: crate::owners::owned_packages(registry, account_id, max_owned).await?,
        invitations: crate::owners::invitations_for(registry, account_id).await?,
        audit: crate::audit::list(registry, account_id).await?,
    })
}
