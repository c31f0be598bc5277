//! Security advisories (docs/advisories.md): who may publish, update and
//! withdraw one, how ids are assigned, what is served, and the audit of an
//! agent.lock against them. Documents are OSV, checked by
//! `core::advisories`; every change is one log entry (`advisory`) written
//! with it.

use std::{collections::BTreeMap, io::Write};

use agentlang_core::{
    Kind, PackageName, Version,
    advisories::{Advisory, AdvisoryId, ID_PREFIX, Problem, parse_package},
    digest::Sha256Digest,
    lockfile::Lockfile,
    protocols::ProtocolSource,
    yaml::YamlLimits,
};
use store::{
    advisories::{AdvisoryRow, AdvisoryWriteError, NewAdvisory},
    names::Scope,
};

use crate::{
    FieldError, Registry, ServiceError,
    rate_limits::{Bucket, account_budget},
    tlog,
    tokens::Authenticated,
};

pub use agentlang_core::advisories::{MAX_DOCUMENT_BYTES, Severity};
pub use store::advisories::AdvisoryRow as StoredAdvisory;

/// Advisories per page of the listing, by default and at most.
pub const DEFAULT_PAGE: u32 = 20;
pub const MAX_PAGE: u32 = 50;

/// Largest agent.lock an audit reads, in bytes.
pub const MAX_AUDIT_BYTES: usize = 256 * 1024;

/// Times a publish retries when another took the id it was assigning.
const ID_ATTEMPTS: usize = 5;

/// What a publish, update or withdrawal wrote.
#[derive(Debug, Clone)]
pub struct Published {
    pub id: AdvisoryId,
    pub modified: String,
    pub withdrawn: Option<String>,
    /// Of the document as served.
    pub sha256: Sha256Digest,
    pub log_index: i64,
    /// New (not an update of a stored id).
    pub created: bool,
}

fn validation(problems: Vec<Problem>) -> ServiceError {
    ServiceError::Validation(
        problems
            .into_iter()
            .map(|p| FieldError::new(p.path, p.message))
            .collect(),
    )
}

/// Publishes an OSV advisory (`body`: the document's bytes), or updates or
/// withdraws the stored one of its id. Admins (a token with the `admin`
/// scope) may name any package; anyone else needs a token with the `yank`
/// scope for every package the advisory names, old and new, and must own
/// each. An update needs a newer `modified`. The change and its log entry
/// are one write.
pub async fn publish_advisory(
    registry: &Registry,
    auth: &Authenticated,
    body: &[u8],
) -> Result<Published, ServiceError> {
    if body.len() > MAX_DOCUMENT_BYTES {
        return Err(ServiceError::PayloadTooLarge {
            limit: MAX_DOCUMENT_BYTES,
        });
    }
    let actor = auth.actor();
    if !actor.is_admin {
        auth.require(Scope::Yank)?;
    }
    let owned = body.to_vec();
    let advisory = tokio::task::spawn_blocking(move || Advisory::parse(&owned))
        .await
        .map_err(ServiceError::internal)?
        .map_err(validation)?;
    authorize(registry, auth, &advisory, "").await?;
    // Each change is a permanent log entry: budgeted per account, with yanks.
    registry
        .rate_limits
        .check(Bucket::YankPerAccount, &account_budget(actor.account_id))?;
    let published = match advisory.id.clone() {
        None => insert_assigned(registry, auth, advisory).await?,
        Some(id) => match registry.db.find_advisory(&id).await? {
            None if id.is_registry_series() => {
                return Err(ServiceError::Validation(vec![FieldError::new(
                    "id",
                    format!(
                        "no advisory {id}: ids of the {ID_PREFIX} series are the registry's to \
                         assign (leave `id` out to get one)"
                    ),
                )]));
            }
            None => insert(registry, auth, &advisory, &id)
                .await?
                .ok_or_else(|| {
                    ServiceError::Conflict(format!("advisory {id} was just published"))
                })?,
            Some(stored) => update(registry, auth, advisory, &id, &stored).await?,
        },
    };
    registry.tlog.appended();
    tracing::info!(advisory = %published.id, account = %auth.username, log_index = published.log_index, created = published.created, withdrawn = published.withdrawn.is_some(), "advisory written");
    Ok(published)
}

/// Refuses a non-admin who does not own every package `advisory` names
/// (`what`: "" for the posted one, else which one).
async fn authorize(
    registry: &Registry,
    auth: &Authenticated,
    advisory: &Advisory,
    what: &str,
) -> Result<(), ServiceError> {
    let admin = auth.actor().is_admin;
    for (i, affected) in advisory.affected.iter().enumerate() {
        let package = match registry
            .db
            .find_package(affected.kind, &affected.name)
            .await?
        {
            Some(package) => package,
            None => {
                return Err(ServiceError::Validation(vec![FieldError::new(
                    format!("affected[{i}].database_specific.package"),
                    format!(
                        "{what}no {} {} is published here",
                        affected.kind, affected.name
                    ),
                )]));
            }
        };
        if !admin {
            auth.require_package(&affected.name)?;
            crate::owners::require_owner(registry, auth.account_id, &package).await?;
        }
    }
    Ok(())
}

/// An advisory ready to write under its id: the document exactly as it
/// will be served, its digest, the log entry naming it and the packages it
/// names. A first write and a replacement store the same things.
struct Prepared {
    advisory: Advisory,
    id: AdvisoryId,
    document: String,
    sha256: Sha256Digest,
    packages: Vec<(Kind, String)>,
    entry: agentlang_core::tlog::LogEntry,
}

impl Prepared {
    fn new(
        advisory: Advisory,
        id: &AdvisoryId,
        auth: &Authenticated,
    ) -> Result<Self, ServiceError> {
        let advisory = advisory.with_id(id.clone());
        let document = String::from_utf8(advisory.to_bytes()).map_err(ServiceError::internal)?;
        let sha256 = Sha256Digest::of(document.as_bytes());
        let entry = tlog::advisory_entry(
            id.as_str(),
            advisory.modified_text(),
            &sha256.to_hex(),
            auth.username.as_str(),
        );
        tlog::check_servable(&entry)?;
        let packages = advisory.packages().into_iter().collect();
        Ok(Self {
            advisory,
            id: id.clone(),
            document,
            sha256,
            packages,
            entry,
        })
    }

    fn row(&self, account_id: i64) -> NewAdvisory<'_> {
        NewAdvisory {
            id: &self.id,
            modified: self.advisory.modified_text(),
            withdrawn: self.advisory.withdrawn.as_deref(),
            severity: self.advisory.severity.as_str(),
            document: &self.document,
            sha256: &self.sha256,
            packages: &self.packages,
            account_id,
            log_entry: &self.entry,
        }
    }

    fn published(self, log_index: i64, created: bool) -> Published {
        Published {
            modified: self.advisory.modified_text().to_owned(),
            withdrawn: self.advisory.withdrawn,
            id: self.id,
            sha256: self.sha256,
            log_index,
            created,
        }
    }
}

/// Writes a new advisory under `id`; `None` when the id is taken.
async fn insert(
    registry: &Registry,
    auth: &Authenticated,
    advisory: &Advisory,
    id: &AdvisoryId,
) -> Result<Option<Published>, ServiceError> {
    let prepared = Prepared::new(advisory.clone(), id, auth)?;
    match registry
        .db
        .insert_advisory(&prepared.row(auth.account_id))
        .await
    {
        Ok(log_index) => Ok(Some(prepared.published(log_index, true))),
        Err(AdvisoryWriteError::Exists) => Ok(None),
        Err(AdvisoryWriteError::Raced) => Ok(None),
        Err(AdvisoryWriteError::Db(e)) => Err(e.into()),
    }
}

/// Assigns the next id of this year's series and writes the advisory under
/// it, trying the next number when another publish took it meanwhile.
async fn insert_assigned(
    registry: &Registry,
    auth: &Authenticated,
    advisory: Advisory,
) -> Result<Published, ServiceError> {
    let year = time::OffsetDateTime::from_unix_timestamp(store::now())
        .map_err(ServiceError::internal)?
        .year();
    for _ in 0..ID_ATTEMPTS {
        let last = registry
            .db
            .last_advisory_id_with_prefix(&format!("{ID_PREFIX}{year}-"))
            .await?;
        let next = last.and_then(|id| id.assigned_number(year)).unwrap_or(0) + 1;
        let id = AdvisoryId::assigned(year, next);
        if let Some(published) = insert(registry, auth, &advisory, &id).await? {
            return Ok(published);
        }
    }
    Err(ServiceError::Conflict(
        "other advisories took every id tried; retry".to_owned(),
    ))
}

/// Replaces the stored advisory `stored` of `id` with a newer one.
async fn update(
    registry: &Registry,
    auth: &Authenticated,
    advisory: Advisory,
    id: &AdvisoryId,
    stored: &AdvisoryRow,
) -> Result<Published, ServiceError> {
    let previous = Advisory::parse(stored.document.as_bytes()).map_err(|p| {
        ServiceError::internal(anyhow::anyhow!(
            "stored advisory {id} no longer reads: {}",
            p.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })?;
    authorize(
        registry,
        auth,
        &previous,
        "the stored advisory names a package: ",
    )
    .await?;
    if advisory.modified <= previous.modified {
        return Err(ServiceError::Conflict(format!(
            "advisory {id} is stored with modified {}: an update needs a newer `modified`",
            stored.modified
        )));
    }
    let prepared = Prepared::new(advisory, id, auth)?;
    match registry
        .db
        .replace_advisory(&prepared.row(auth.account_id), &stored.sha256)
        .await
    {
        Ok(log_index) => Ok(prepared.published(log_index, false)),
        Err(AdvisoryWriteError::Raced | AdvisoryWriteError::Exists) => Err(ServiceError::Conflict(
            format!("advisory {id} changed while this update was written; retry"),
        )),
        Err(AdvisoryWriteError::Db(e)) => Err(e.into()),
    }
}

/// One advisory as stored (withdrawn ones too); 404 for an id that is not
/// one.
pub async fn get_advisory(registry: &Registry, id: &str) -> Result<AdvisoryRow, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("advisory {id}"));
    let id = AdvisoryId::parse(id).map_err(|_| not_found())?;
    registry.db.find_advisory(&id).await?.ok_or_else(not_found)
}

/// A page of the listing: advisories in id order.
#[derive(Debug, Clone)]
pub struct Page {
    pub advisories: Vec<AdvisoryRow>,
    /// The `after` of the next page, when there may be one.
    pub next: Option<String>,
}

/// Advisories in id order after `after`, `limit` of them (default
/// [`DEFAULT_PAGE`], at most [`MAX_PAGE`]), of one package
/// (`tool/web_fetch`) when asked.
pub async fn list_advisories(
    registry: &Registry,
    package: Option<&str>,
    after: Option<&str>,
    limit: Option<u32>,
) -> Result<Page, ServiceError> {
    let mut problems = Vec::new();
    let package = match package.map(parse_package) {
        Some(Ok((kind, name))) => Some((kind, name.normalized())),
        Some(Err(e)) => {
            problems.push(FieldError::new("package", e));
            None
        }
        None => None,
    };
    let after = match after.filter(|a| !a.is_empty()).map(AdvisoryId::parse) {
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => {
            problems.push(FieldError::new("after", e));
            None
        }
        None => None,
    };
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        problems.push(FieldError::new(
            "limit",
            format!("must be between 1 and {MAX_PAGE}"),
        ));
    }
    if !problems.is_empty() {
        return Err(ServiceError::Validation(problems));
    }
    let rows = registry
        .db
        .list_advisories(
            package.as_ref().map(|(k, n)| (*k, n.as_str())),
            after.as_ref(),
            i64::from(limit),
        )
        .await?;
    let next = (rows.len() == limit as usize)
        .then(|| rows.last().map(|r| r.id.as_str().to_owned()))
        .flatten();
    Ok(Page {
        advisories: rows,
        next,
    })
}

/// Every advisory (withdrawn ones too, as OSV mirrors keep them) as a zip
/// archive of `<id>.json` files, the documents as served: the shape of
/// osv.dev's `all.zip`, which osv-scanner's offline mode and OSV mirrors
/// read. Built page by page off the async workers.
pub async fn export_zip(registry: &Registry) -> Result<Vec<u8>, ServiceError> {
    const PAGE: i64 = 500;
    let mut rows = Vec::new();
    let mut after: Option<AdvisoryId> = None;
    loop {
        let page = registry
            .db
            .list_advisories(None, after.as_ref(), PAGE)
            .await?;
        let full = page.len() as i64 == PAGE;
        after = page.last().map(|r| r.id.clone());
        rows.extend(page.into_iter().map(|r| (r.id, r.document)));
        if !full {
            break;
        }
    }
    tokio::task::spawn_blocking(move || zip_documents(&rows))
        .await
        .map_err(ServiceError::internal)?
        .map_err(ServiceError::internal)
}

fn zip_documents(rows: &[(AdvisoryId, String)]) -> zip::result::ZipResult<Vec<u8>> {
    let mut archive = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    // A fixed time for every member, so one set of advisories is always
    // the same bytes (and the same ETag).
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    for (id, document) in rows {
        archive.start_file(format!("{id}.json"), options)?;
        archive.write_all(document.as_bytes())?;
    }
    Ok(archive.finish()?.into_inner())
}

/// The pins of an agent.lock an audit looks at: tools, skills and
/// protocol packages, by kind and normalized name.
fn pins(lock: &Lockfile) -> BTreeMap<Kind, BTreeMap<String, Vec<(PackageName, Version)>>> {
    let mut pins: BTreeMap<Kind, BTreeMap<String, Vec<(PackageName, Version)>>> = BTreeMap::new();
    let mut add = |kind: Kind, name: &PackageName, version: &Version| {
        pins.entry(kind)
            .or_default()
            .entry(name.normalized())
            .or_default()
            .push((name.clone(), version.clone()));
    };
    for (name, tool) in &lock.tools {
        add(Kind::Tool, name, &tool.version);
    }
    for (name, skill) in &lock.skills {
        add(Kind::Skill, name, &skill.version);
    }
    for (name, protocol) in &lock.protocols {
        if protocol.source == ProtocolSource::Package
            && let Ok(package) = PackageName::new(name.as_str())
        {
            add(Kind::Protocol, &package, &protocol.version);
        }
    }
    pins
}

/// The advisories (not withdrawn) affecting any pin of an agent.lock
/// (`body`: the file's bytes, at most [`MAX_AUDIT_BYTES`], read with the
/// lockfile's own limits), each once, in id order, as served. One query
/// per kind pinned (per 500 names); the work is the pins times the
/// advisories of those packages.
pub async fn audit(registry: &Registry, body: &[u8]) -> Result<Vec<AdvisoryRow>, ServiceError> {
    if body.len() > MAX_AUDIT_BYTES {
        return Err(ServiceError::PayloadTooLarge {
            limit: MAX_AUDIT_BYTES,
        });
    }
    let limits = YamlLimits {
        max_bytes: MAX_AUDIT_BYTES,
        ..YamlLimits::default()
    };
    let lock = Lockfile::from_slice_with_limits(body, &limits).map_err(|e| {
        ServiceError::Validation(vec![FieldError::new("agent.lock", e.to_string())])
    })?;
    let mut found = BTreeMap::new();
    for (kind, by_name) in pins(&lock) {
        let names: Vec<String> = by_name.keys().cloned().collect();
        let rows = registry.db.live_advisories_of(kind, &names).await?;
        for row in rows {
            let Ok(advisory) = Advisory::parse(row.document.as_bytes()) else {
                tracing::error!(advisory = %row.id, "a stored advisory no longer reads; skipped in an audit");
                continue;
            };
            let hit = by_name
                .values()
                .flatten()
                .any(|(name, version)| advisory.affects(kind, name, version));
            if hit {
                found.insert(row.id.clone(), row);
            }
        }
    }
    Ok(found.into_values().collect())
}

/// The severity level stored with an advisory.
pub fn severity(row: &AdvisoryRow) -> Option<Severity> {
    row.severity.parse().ok()
}

/// Notices a version page shows at most: a package's advisories are few,
/// but the page's size is bounded whatever is published.
pub const MAX_VERSION_NOTICES: usize = 20;

/// An advisory affecting one version, as its page announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionAdvisory {
    pub id: AdvisoryId,
    pub severity: Severity,
    pub summary: Option<String>,
}

/// The advisories not withdrawn that affect `kind` `name` at `version`,
/// most severe first, then by id, at most [`MAX_VERSION_NOTICES`]: one
/// query for the package's advisories, each evaluated with
/// `core::advisories` (the audit's evaluation).
pub async fn affecting_version(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<Vec<VersionAdvisory>, ServiceError> {
    let rows = registry
        .db
        .live_advisories_of(kind, &[name.normalized()])
        .await?;
    let mut found: Vec<VersionAdvisory> = rows
        .iter()
        .filter_map(|row| {
            let Ok(advisory) = Advisory::parse(row.document.as_bytes()) else {
                tracing::error!(advisory = %row.id, "a stored advisory no longer reads; skipped on a version page");
                return None;
            };
            advisory
                .affects(kind, name, version)
                .then(|| VersionAdvisory {
                    id: row.id.clone(),
                    severity: advisory.severity,
                    summary: advisory.summary.clone(),
                })
        })
        .collect();
    found.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.id.cmp(&b.id)));
    found.truncate(MAX_VERSION_NOTICES);
    Ok(found)
}
