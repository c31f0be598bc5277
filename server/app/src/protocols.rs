//! Protocols as the registry knows them: the admin-kept catalog (`mcp`,
//! `a2a`, ...) and published `protocol` packages (agents name them
//! `custom/<name>`), seen through one shape, [`ProtocolInfo`]. The API,
//! publish and the catalog's pages all read them here.

use std::collections::BTreeMap;

use agentlang_core::{
    Kind, PackageName, Version,
    agent::AgentSpec,
    digest::Sha256Digest,
    lockfile::Lockfile,
    protocols::{
        self, KnownProtocol, ProtocolEntry, ProtocolName, ProtocolReport, ProtocolSource,
        ProtocolStatus, ProtocolVersion,
    },
};
use serde::{Deserialize, Serialize};

use crate::{FieldError, Registry, ServiceError, error::LockProblemKind, tokens::Authenticated};
use store::{Db, protocols::ProtocolRecord, time::rfc3339};

/// Most protocols one agent may declare: each costs a lookup at publish.
pub const MAX_DECLARED_PROTOCOLS: usize = 64;

/// One version of a protocol and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProtocolVersionInfo {
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "2.0.0"))]
    pub version: Version,
    /// `stable`, `deprecated` or `removed`.
    #[cfg_attr(feature = "openapi", schema(example = "deprecated"))]
    pub status: String,
    /// The version to migrate to (deprecated, and optionally removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub successor: Option<Version>,
    /// What to do (deprecated, and optionally removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Hex SHA-256 of the `.protocol` container (published protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub sha256: Option<Sha256Digest>,
}

/// A protocol with every version it has had, oldest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProtocolInfo {
    #[cfg_attr(feature = "openapi", schema(example = "a2a"))]
    pub name: String,
    /// `catalog` (kept by the registry's admins) or `package` (a published
    /// protocol package, which agents name `custom/<name>`).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "catalog"))]
    pub source: ProtocolSource,
    pub description: String,
    pub versions: Vec<ProtocolVersionInfo>,
    /// RFC 3339: when the catalog entry, or the package, last changed.
    pub updated_at: String,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProtocolList {
    pub protocols: Vec<ProtocolInfo>,
}

fn version_info(p: &ProtocolVersion, sha256: Option<Sha256Digest>) -> ProtocolVersionInfo {
    let (successor, message) = match &p.status {
        ProtocolStatus::Stable => (None, None),
        ProtocolStatus::Deprecated { successor, message } => {
            (Some(successor.clone()), Some(message.clone()))
        }
        ProtocolStatus::Removed { successor, message } => (successor.clone(), message.clone()),
    };
    ProtocolVersionInfo {
        version: p.version.clone(),
        status: p.status.label().to_owned(),
        successor,
        message,
        sha256,
    }
}

fn entry_of(record: &ProtocolRecord) -> Result<ProtocolEntry, ServiceError> {
    let versions: Vec<ProtocolVersion> =
        serde_json::from_value(record.versions.0.clone()).map_err(ServiceError::internal)?;
    ProtocolEntry::new(record.description.clone(), versions).map_err(|errors| {
        ServiceError::internal(anyhow::anyhow!(
            "stored protocol {} is invalid: {errors:?}",
            record.name
        ))
    })
}

fn catalog_info(record: &ProtocolRecord) -> Result<ProtocolInfo, ServiceError> {
    let entry = entry_of(record)?;
    Ok(ProtocolInfo {
        name: record.name.clone(),
        source: ProtocolSource::Catalog,
        description: entry.description().to_owned(),
        versions: entry
            .versions()
            .iter()
            .map(|p| version_info(p, None))
            .collect(),
        updated_at: rfc3339(record.updated_at),
    })
}

/// A published protocol package as a catalog entry, with the container
/// hash of each version.
async fn package_info(
    db: &Db,
    name: &PackageName,
) -> Result<Option<(ProtocolInfo, KnownProtocol)>, ServiceError> {
    let Some(package) = db.find_package(Kind::Protocol, name).await? else {
        return Ok(None);
    };
    let versions = db.list_versions(package.id).await?;
    let mut releases = Vec::with_capacity(versions.len());
    let mut hashes = BTreeMap::new();
    for v in &versions {
        hashes.insert(v.version.clone(), v.sha256);
        let yanked = v.yanked.then(|| v.yank_reason.clone().unwrap_or_default());
        releases.push((v.version.clone(), yanked));
    }
    let Some(entry) = protocols::entry_from_releases(package.description.clone(), &releases) else {
        return Ok(None);
    };
    let info = ProtocolInfo {
        name: package.name.to_string(),
        source: ProtocolSource::Package,
        description: entry.description().to_owned(),
        versions: entry
            .versions()
            .iter()
            .map(|p| version_info(p, hashes.get(&p.version).copied()))
            .collect(),
        updated_at: rfc3339(package.updated_at),
    };
    Ok(Some((
        info,
        KnownProtocol {
            entry,
            source: ProtocolSource::Package,
            hashes,
        },
    )))
}

/// The catalog's entries, by name.
pub async fn list_protocols(registry: &Registry) -> Result<ProtocolList, ServiceError> {
    let db = &registry.db;
    let protocols = db
        .list_protocols()
        .await?
        .iter()
        .map(catalog_info)
        .collect::<Result<_, _>>()?;
    Ok(ProtocolList { protocols })
}

/// A catalog entry, else a published protocol package of that name.
pub async fn get_protocol(registry: &Registry, name: &str) -> Result<ProtocolInfo, ServiceError> {
    let db = &registry.db;
    let not_found = || ServiceError::NotFound(format!("protocol {name:?}"));
    if let Some(record) = db.find_protocol(name).await? {
        return catalog_info(&record);
    }
    let package = PackageName::new(name).map_err(|_| not_found())?;
    package_info(db, &package)
        .await?
        .map(|(info, _)| info)
        .ok_or_else(not_found)
}

/// A version entry of a PUT body as the catalog's type; every problem with
/// its field.
fn version_from_info(
    i: usize,
    info: ProtocolVersionInfo,
) -> Result<ProtocolVersion, Vec<FieldError>> {
    let field = |key: &str| format!("versions[{i}].{key}");
    let mut errors = Vec::new();
    if info.sha256.is_some() {
        errors.push(FieldError::new(
            field("sha256"),
            "only published protocol packages have container hashes",
        ));
    }
    let status = match info.status.as_str() {
        "stable" => {
            if info.successor.is_some() || info.message.is_some() {
                errors.push(FieldError::new(
                    field("status"),
                    "a stable version has no successor or message",
                ));
            }
            Some(ProtocolStatus::Stable)
        }
        "deprecated" => match (info.successor, info.message) {
            (Some(successor), Some(message)) => {
                Some(ProtocolStatus::Deprecated { successor, message })
            }
            (successor, message) => {
                if successor.is_none() {
                    errors.push(FieldError::new(
                        field("successor"),
                        "a deprecated version names its successor",
                    ));
                }
                if message.is_none() {
                    errors.push(FieldError::new(
                        field("message"),
                        "a deprecated version says what to do",
                    ));
                }
                None
            }
        },
        "removed" => Some(ProtocolStatus::Removed {
            successor: info.successor,
            message: info.message,
        }),
        other => {
            errors.push(FieldError::new(
                field("status"),
                format!("{other:?} is not one of stable, deprecated, removed"),
            ));
            None
        }
    };
    match status {
        Some(status) if errors.is_empty() => Ok(ProtocolVersion {
            version: info.version,
            status,
        }),
        _ => Err(errors),
    }
}

/// Creates or replaces a catalog entry. A name a protocol package already
/// holds is refused: `custom/<name>` and the catalog must never disagree
/// about what a name means.
pub async fn put_protocol(
    registry: &Registry,
    auth: &Authenticated,
    name: &str,
    description: String,
    infos: Vec<ProtocolVersionInfo>,
) -> Result<(ProtocolInfo, bool), ServiceError> {
    auth.require_admin()?;
    let mut errors = Vec::new();
    if infos.len() > protocols::MAX_VERSIONS {
        errors.push(FieldError::new(
            "versions",
            format!("at most {} versions per protocol", protocols::MAX_VERSIONS),
        ));
    }
    let package = PackageName::new(name)
        .map_err(|e| errors.push(FieldError::new("name", e.to_string())))
        .ok();
    let mut versions = Vec::with_capacity(infos.len());
    for (i, info) in infos.into_iter().take(protocols::MAX_VERSIONS).enumerate() {
        match version_from_info(i, info) {
            Ok(v) => versions.push(v),
            Err(e) => errors.extend(e),
        }
    }
    let Some(package) = package.filter(|_| errors.is_empty()) else {
        return Err(ServiceError::Validation(errors));
    };
    if registry
        .db
        .find_package(Kind::Protocol, &package)
        .await?
        .is_some()
    {
        return Err(ServiceError::NameTaken(format!(
            "{name} is a published protocol package; catalog names and package names are kept apart"
        )));
    }
    let entry = ProtocolEntry::new(description, versions).map_err(|errors| {
        ServiceError::Validation(
            errors
                .iter()
                .map(|e| FieldError::new("versions", e.to_string()))
                .collect(),
        )
    })?;
    let json = serde_json::to_value(entry.versions()).map_err(ServiceError::internal)?;
    let (record, created) = registry
        .db
        .upsert_protocol(package.as_str(), entry.description(), &json)
        .await?;
    tracing::info!(protocol = %package, by = %auth.username, created, "protocol written");
    Ok((catalog_info(&record)?, created))
}

/// What the registry knows of one protocol name, for selection.
pub async fn known_protocol(
    db: &Db,
    name: &ProtocolName,
) -> Result<Option<KnownProtocol>, ServiceError> {
    if let Some(package) = name.custom_package() {
        return Ok(package_info(db, &package).await?.map(|(_, known)| known));
    }
    match db.find_protocol(name.as_str()).await? {
        Some(record) => Ok(Some(KnownProtocol {
            entry: entry_of(&record)?,
            source: ProtocolSource::Catalog,
            hashes: BTreeMap::new(),
        })),
        None => Ok(None),
    }
}

/// Checks an agent's protocols against what the registry knows now;
/// `lock` supplies the pins to keep.
pub async fn check_agent_protocols(
    db: &Db,
    spec: &AgentSpec,
    lock: Option<&Lockfile>,
) -> Result<ProtocolReport, ServiceError> {
    if spec.protocols.len() > MAX_DECLARED_PROTOCOLS {
        return Err(ServiceError::Validation(vec![FieldError::new(
            "agent.yaml:protocols",
            format!(
                "declares {} protocols; at most {MAX_DECLARED_PROTOCOLS} are accepted",
                spec.protocols.len()
            ),
        )]));
    }
    let mut known: BTreeMap<String, KnownProtocol> = BTreeMap::new();
    for decl in &spec.protocols {
        if let Ok(name) = ProtocolName::new(decl.name.as_str())
            && let Some(k) = known_protocol(db, &name).await?
        {
            known.insert(name.to_string(), k);
        }
    }
    let pins: BTreeMap<String, Version> = lock
        .map(|l| {
            l.protocols
                .iter()
                .map(|(n, p)| (n.to_string(), p.version.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(protocols::check_agent(
        spec,
        &|n: &ProtocolName| known.get(n.as_str()).cloned(),
        &pins,
    ))
}

/// Publish's rule: protocol errors refuse the version (422), and a lock
/// must record what the registry would choose (its pins are kept while
/// they fit, so a lock that disagrees names a version that no longer fits).
pub fn require_publishable(
    report: &ProtocolReport,
    lock: Option<&Lockfile>,
) -> Result<(), ServiceError> {
    if !report.errors.is_empty() {
        return Err(ServiceError::Validation(
            report
                .errors
                .iter()
                .map(|d| FieldError::new(format!("agent.yaml:{}", d.path), d.message.clone()))
                .collect(),
        ));
    }
    let Some(lock) = lock else { return Ok(()) };
    let mut errors = Vec::new();
    for choice in &report.choices {
        let field = format!("protocols.{}", choice.name);
        match lock.protocols.get(&choice.name) {
            // Locks made before protocols were locked carry none.
            None if lock.protocols.is_empty() => {}
            None => errors.push(FieldError::new(field, "is declared but not locked")),
            Some(locked) if locked.version != choice.version => errors.push(FieldError::new(
                field,
                format!(
                    "the lock has {}, but this registry chooses {} for {}",
                    locked.version,
                    choice.version,
                    choice
                        .requirement
                        .as_ref()
                        .map_or("any version".to_owned(), ToString::to_string)
                ),
            )),
            Some(locked) if choice.hash.is_some() && locked.hash != choice.hash => {
                errors.push(FieldError::new(
                    field,
                    format!(
                        "{} is pinned at another hash than this registry holds",
                        choice.version
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ServiceError::Lock(LockProblemKind::NotInRegistry, errors))
    }
}

/// What today's catalog says about one declared protocol of a published
/// agent (see [`agent_protocol_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolStatusNote {
    pub name: String,
    pub version: Option<Version>,
    /// A deprecation naming the successor, or why nothing fits now.
    pub message: Option<String>,
    pub is_error: bool,
}

/// A published agent's protocols checked against the catalog as it is
/// now (a version may have been deprecated or removed since the publish),
/// keeping the versions its lock pins. `spec` and `lock` are the stored
/// JSON documents.
pub async fn agent_protocol_status(
    registry: &Registry,
    spec: &serde_json::Value,
    lock: Option<&serde_json::Value>,
) -> Result<Vec<ProtocolStatusNote>, ServiceError> {
    if spec
        .get("protocols")
        .and_then(serde_json::Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        return Ok(Vec::new());
    }
    // The stored spec is the serialized model, which reads back as YAML.
    let bytes = serde_json::to_vec(spec).map_err(ServiceError::internal)?;
    let Ok(agent) = agentlang_core::agent::parse_agent(&bytes) else {
        return Ok(Vec::new());
    };
    let lock: Option<Lockfile> = lock.and_then(|l| serde_json::from_value(l.clone()).ok());
    let report = check_agent_protocols(&registry.db, &agent, lock.as_ref()).await?;
    let index_of = |path: &str| {
        path.strip_prefix("protocols[")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(i, _)| i.parse::<usize>().ok())
    };
    let mut notes: Vec<ProtocolStatusNote> = agent
        .protocols
        .iter()
        .map(|decl| {
            let choice = report.choices.iter().find(|c| c.name.as_str() == decl.name);
            ProtocolStatusNote {
                name: decl.name.clone(),
                version: choice.map(|c| c.version.clone()),
                message: None,
                is_error: false,
            }
        })
        .collect();
    for w in &report.warnings {
        if let Some(note) = index_of(&w.path).and_then(|i| notes.get_mut(i)) {
            note.message = Some(w.message.clone());
        }
    }
    for e in report.errors.iter() {
        if let Some(note) = index_of(&e.path).and_then(|i| notes.get_mut(i)) {
            note.message = Some(e.message.clone());
            note.is_error = true;
        }
    }
    Ok(notes)
}
