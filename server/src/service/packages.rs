//! Reading packages and versions, the index, yanking: the records every
//! interface (HTTP API, catalog, agent protocols) shows.

use std::collections::{BTreeMap, HashMap};

use agentlang_core::{Kind, PackageName, Version};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::{
    auth::{Authenticated, Scope},
    blobs::Sha256Digest,
    db::packages::{PackageRecord, VersionRecord},
    error::ApiError,
    routes::rfc3339,
    state::AppState,
};

/// Who signed a version, and whether that key has since been revoked
/// (versions signed before a revocation stay valid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Signer {
    pub key_id: String,
    /// RFC 3339; `null` while the key is in force.
    pub revoked_at: Option<String>,
}

/// One published version.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionView {
    #[schema(value_type = String, example = "tool")]
    pub kind: Kind,
    /// The package's name as first published.
    pub name: String,
    pub version: String,
    /// Hex SHA-256 of the container.
    pub sha256: String,
    /// The same digest as the index and lockfiles spell it: `sha256:<hex>`.
    pub hash: String,
    /// Bytes of the container.
    pub size: i64,
    /// The container's manifest.json.
    #[schema(value_type = Object)]
    pub manifest: Value,
    /// The parsed agent.yaml or tool.yaml.
    #[schema(value_type = Object)]
    pub spec: Value,
    /// The agent's agent.lock, parsed; agents only.
    #[schema(value_type = Option<Object>)]
    pub lockfile: Option<Value>,
    /// Tool name to requirement.
    pub dependencies: BTreeMap<String, String>,
    pub signer: Option<Signer>,
    pub yanked: bool,
    pub yank_reason: Option<String>,
    /// Username of the account that published it.
    pub publisher: Option<String>,
    /// RFC 3339.
    pub published_at: String,
    pub downloads: i64,
}

/// A package with its versions, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PackageView {
    #[schema(value_type = String, example = "tool")]
    pub kind: Kind,
    pub name: String,
    pub description: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Downloads of every version.
    pub downloads: i64,
    pub versions: Vec<VersionView>,
}

/// One version in the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct IndexEntry {
    pub version: String,
    /// `sha256:<hex>` of the container.
    pub hash: String,
    pub yanked: bool,
    /// Tool name to requirement.
    pub dependencies: BTreeMap<String, String>,
}

/// Every live version of a package, oldest first, for client-side
/// resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct PackageIndexView {
    pub name: String,
    #[schema(value_type = String, example = "tool")]
    pub kind: Kind,
    pub versions: Vec<IndexEntry>,
}

pub async fn find_package(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageRecord, ApiError> {
    state
        .db
        .find_package(kind, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{kind} {name}")))
}

/// A live version of a package, or 404.
pub async fn find_version(
    state: &AppState,
    package: &PackageRecord,
    version: &Version,
) -> Result<VersionRecord, ApiError> {
    state
        .db
        .find_version(package.id, version)
        .await?
        .filter(|v| v.deleted_at.is_none())
        .ok_or_else(|| ApiError::NotFound(format!("{} {} {version}", package.kind, package.name)))
}

/// Looks signers and publishers up once per request, however many versions
/// share them.
#[derive(Default)]
struct Lookups {
    signers: HashMap<String, Option<Signer>>,
    publishers: HashMap<i64, Option<String>>,
}

impl Lookups {
    async fn signer(&mut self, state: &AppState, key_id: &str) -> Result<Option<Signer>, ApiError> {
        if let Some(found) = self.signers.get(key_id) {
            return Ok(found.clone());
        }
        let signer = state.db.find_signing_key(key_id).await?.map(|k| Signer {
            key_id: k.key_id,
            revoked_at: k.revoked_at.map(rfc3339),
        });
        self.signers.insert(key_id.to_owned(), signer.clone());
        Ok(signer)
    }

    async fn publisher(&mut self, state: &AppState, id: i64) -> Result<Option<String>, ApiError> {
        if let Some(found) = self.publishers.get(&id) {
            return Ok(found.clone());
        }
        let name = state.db.username_of(id).await?;
        self.publishers.insert(id, name.clone());
        Ok(name)
    }

    async fn view(
        &mut self,
        state: &AppState,
        kind: Kind,
        package: &PackageRecord,
        record: VersionRecord,
        dependencies: BTreeMap<String, String>,
    ) -> Result<VersionView, ApiError> {
        let signer = match &record.signer_key_id {
            Some(key_id) => self.signer(state, key_id).await?,
            None => None,
        };
        Ok(VersionView {
            kind,
            name: package.name.clone(),
            hash: format!("sha256:{}", record.sha256),
            sha256: record.sha256,
            version: record.version,
            size: record.size,
            manifest: record.manifest.0,
            spec: record.spec.0,
            lockfile: record.lockfile.map(|l| l.0),
            dependencies,
            signer,
            yanked: record.yanked,
            yank_reason: record.yank_reason,
            publisher: self.publisher(state, record.published_by).await?,
            published_at: rfc3339(record.published_at),
            downloads: record.downloads,
        })
    }
}

fn kind_of(package: &PackageRecord) -> Result<Kind, ApiError> {
    package
        .kind
        .parse()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("packages.kind: {e}")))
}

/// The record of one version of a known package.
pub async fn version_view(
    state: &AppState,
    package: &PackageRecord,
    record: VersionRecord,
) -> Result<VersionView, ApiError> {
    let dependencies = state
        .db
        .list_dependencies(record.id)
        .await?
        .into_iter()
        .filter(|d| d.kind == Kind::Tool)
        .map(|d| (d.name.to_string(), d.requirement.to_string()))
        .collect();
    Lookups::default()
        .view(state, kind_of(package)?, package, record, dependencies)
        .await
}

/// `GET /api/v1/{kind}/{name}/{version}`.
pub async fn get_version(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<VersionView, ApiError> {
    let package = find_package(state, kind, name).await?;
    let record = find_version(state, &package, version).await?;
    version_view(state, &package, record).await
}

/// `GET /api/v1/{kind}/{name}`: the package and its live versions, newest
/// first.
pub async fn get_package(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageView, ApiError> {
    let package = find_package(state, kind, name).await?;
    let records = state.db.list_versions(package.id).await?;
    // One query for every version's dependency edges.
    let mut edges: HashMap<i64, BTreeMap<String, String>> = state
        .db
        .package_index(kind, name)
        .await?
        .map(|index| {
            index
                .versions
                .into_iter()
                .map(|v| (v.version_id, v.dependencies))
                .collect()
        })
        .unwrap_or_default();
    let mut lookups = Lookups::default();
    let mut versions = Vec::with_capacity(records.len());
    for record in records {
        let deps = edges.remove(&record.id).unwrap_or_default();
        versions.push(lookups.view(state, kind, &package, record, deps).await?);
    }
    Ok(PackageView {
        kind,
        downloads: versions.iter().map(|v| v.downloads).sum(),
        name: package.name,
        description: package.description,
        created_at: rfc3339(package.created_at),
        updated_at: rfc3339(package.updated_at),
        versions,
    })
}

/// `GET /api/v1/index/{kind}/{name}`.
pub async fn get_index(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
) -> Result<PackageIndexView, ApiError> {
    let index = state
        .db
        .package_index(kind, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{kind} {name}")))?;
    Ok(PackageIndexView {
        name: index.package.name,
        kind,
        versions: index
            .versions
            .into_iter()
            .map(|v| IndexEntry {
                version: v.version,
                hash: format!("sha256:{}", v.sha256),
                yanked: v.yanked,
                dependencies: v.dependencies,
            })
            .collect(),
    })
}

/// Yanks (`Some(reason)`, which may be empty) or unyanks (`None`) a version:
/// owners only, with a token carrying the `yank` scope for the package.
pub async fn set_yanked(
    state: &AppState,
    auth: &Authenticated,
    kind: Kind,
    name: &PackageName,
    version: &Version,
    yank: Option<&str>,
) -> Result<VersionView, ApiError> {
    auth.require(Scope::Yank)?;
    auth.require_package(name)?;
    let package = find_package(state, kind, name).await?;
    if !state.db.is_owner(package.id, auth.account_id).await? {
        return Err(ApiError::NotOwner(format!(
            "you are not an owner of the {kind} {}",
            package.name
        )));
    }
    let reason = yank.map(str::trim).filter(|r| !r.is_empty());
    if !state
        .db
        .set_yanked(package.id, version, yank.is_some(), reason)
        .await?
    {
        return Err(ApiError::NotFound(format!(
            "{kind} {} {version}",
            package.name
        )));
    }
    tracing::info!(%kind, package = %package.name, %version, yanked = yank.is_some(), by = %auth.username, "yank changed");
    let record = find_version(state, &package, version).await?;
    version_view(state, &package, record).await
}

/// What a download serves: where the blob is and what to call it.
#[derive(Debug, Clone)]
pub struct Download {
    pub version_id: i64,
    pub digest: Sha256Digest,
    /// `name@version.agent` or `.tool`.
    pub file_name: String,
}

/// Finds the container of a version (yanked ones too: existing lockfiles
/// still fetch them).
pub async fn find_download(
    state: &AppState,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Download, ApiError> {
    let package = find_package(state, kind, name).await?;
    let record = find_version(state, &package, version).await?;
    let digest = record
        .sha256
        .parse()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("versions.sha256: {e}")))?;
    Ok(Download {
        version_id: record.id,
        digest,
        file_name: format!("{}@{}.{}", package.name, record.version, kind.extension()),
    })
}
