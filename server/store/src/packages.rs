//! Packages, their owners and versions: what publish writes and what every
//! read endpoint serves.

use agentlang_core::{Kind, PackageName, Version, tlog::LogEntry};
use agentlang_core::{crypt::PromptKeyId, grants::PromptMode, signing::KeyId};
use serde_json::Value;
use sqlx::types::Json;

use super::{
    BeginWrite, Db,
    inline::InlineRow,
    is_unique_violation, now,
    stored_answers::{DOWNLOADS_LOCK, PackageRef},
    tlog::AppendLog,
    with_pool,
};
use agentlang_core::digest::Sha256Digest;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PackageRecord {
    pub id: i64,
    pub kind: Kind,
    /// The spelling it was first published under.
    pub name: PackageName,
    pub normalized_name: String,
    pub description: String,
    pub keywords: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl InlineRow for PackageRecord {
    const WIDTH: usize = 8;

    fn columns() -> Vec<&'static str> {
        vec![
            "id",
            "kind",
            "name",
            "normalized_name",
            "description",
            "keywords",
            "created_at",
            "updated_at",
        ]
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(at)?,
            kind: row.get(at + 1)?,
            name: row.get(at + 2)?,
            normalized_name: row.get(at + 3)?,
            description: row.get(at + 4)?,
            keywords: row.get(at + 5)?,
            created_at: row.get(at + 6)?,
            updated_at: row.get(at + 7)?,
        })
    }
}

/// What a publish's transaction reads before it writes: whether the
/// signer's key is still the publisher's and unrevoked, and the package
/// (when it exists) with whether the publisher owns it and whether the
/// version number is taken. One row per publish of a round, package or
/// not, by its index `i` in the round.
#[derive(Debug, Clone, sqlx::FromRow)]
struct PublishTarget {
    i: i64,
    key_usable: bool,
    package_id: Option<i64>,
    package_name: Option<String>,
    is_owner: bool,
    version_exists: bool,
}

/// What a publish checks before it stores a blob, read at once: the
/// package, whether the publisher owns it, and what this version number
/// already holds.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PublishPrecheck {
    #[sqlx(flatten)]
    pub package: PackageRecord,
    pub is_owner: bool,
    /// The container of the version with this precedence, if one was ever
    /// published (deleted ones included: a number is never reused).
    pub existing_sha256: Option<Sha256Digest>,
    pub existing_deleted_at: Option<i64>,
}

/// One stored version, as the read endpoints serve it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRecord {
    pub id: i64,
    pub package_id: i64,
    pub version: Version,
    pub sha256: Sha256Digest,
    pub size: i64,
    pub signer_key_id: Option<KeyId>,
    pub manifest: Json<Value>,
    pub spec: Json<Value>,
    pub lockfile: Option<Json<Value>>,
    pub yanked: bool,
    pub yank_reason: Option<String>,
    pub published_by: i64,
    pub published_at: i64,
    pub deleted_at: Option<i64>,
    pub downloads: i64,
    /// What pages show from the container (`service::packages::
    /// ContainerExtras`); `None` until computed for versions published
    /// before it was stored.
    pub extras: Option<Json<Value>>,
    /// The index of the publish's log entry (`None` until the start-up
    /// backfill logs a version published before the log).
    pub log_index: Option<i64>,
    /// An agent's prompt mode; `None` for tools and protocols.
    pub prompt_mode: Option<PromptMode>,
    /// The id of the key that sealed the prompt, when the manifest
    /// records it.
    pub prompt_key_id: Option<PromptKeyId>,
    /// Published through trusted publishing (`publisher_identity` is set).
    pub trusted: bool,
    /// Of its provenance envelope, when it has one.
    pub provenance_sha256: Option<Sha256Digest>,
}

/// A dependency edge of a version: `name` at `requirement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencyEdge {
    pub kind: Kind,
    pub name: PackageName,
    pub requirement: semver::VersionReq,
}

/// A yank (`yanked`, with an optional reason) or unyank, with the log
/// entry that records it.
#[derive(Debug)]
pub struct YankChange<'a> {
    pub yanked: bool,
    pub reason: Option<&'a str>,
    pub log_entry: &'a LogEntry,
}

/// Everything publish has checked and stores about one version. Owned, so
/// a publish can hand it to the commit queue (`service::publish_queue`)
/// and have it back with the outcome.
#[derive(Debug, Clone)]
pub struct NewVersion {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
    /// SHA-256 of the container, which is already in blob storage.
    pub sha256: Sha256Digest,
    pub size: u64,
    /// A registered, unrevoked key of the publisher.
    pub signer_key_id: Option<KeyId>,
    pub manifest: Value,
    /// The parsed agent.yaml / tool.yaml.
    pub spec: Value,
    pub lockfile: Option<Value>,
    /// The deterministic quality report (agents).
    pub quality_report: Option<Value>,
    /// What pages show from the container beyond the definition.
    pub extras: Option<Value>,
    /// The highest risk of an agent's effective capabilities (`Critical`).
    pub max_risk: Option<&'static str>,
    /// An agent's prompt mode (`Manifest::prompt_mode`); `None` otherwise.
    pub prompt_mode: Option<PromptMode>,
    /// The key that sealed the prompt (`Manifest::prompt_key_id`).
    pub prompt_key_id: Option<PromptKeyId>,
    pub dependencies: Vec<DependencyEdge>,
    /// Shown in the catalog and indexed for search.
    pub description: String,
    pub keywords: Vec<String>,
    pub publisher: i64,
    /// The publish's transparency-log entry, appended in its transaction.
    pub log_entry: LogEntry,
    /// Trusted publishing: the OIDC identity that published it, as JSON;
    /// `None` for an ordinary token.
    pub publisher_identity: Option<String>,
    /// Its verified provenance (docs/provenance.md).
    pub provenance: Option<NewProvenance>,
}

/// A version's verified provenance, stored in its publish's transaction.
#[derive(Debug, Clone)]
pub struct NewProvenance {
    /// The DSSE envelope exactly as it will be served.
    pub envelope: String,
    /// Of `envelope`'s bytes; the publish's log entry names it.
    pub sha256: Sha256Digest,
    /// `core::provenance::Summary` as JSON.
    pub summary: String,
    pub source: ProvenanceSource,
}

/// Who signed a version's provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProvenanceSource {
    /// A registered key of the publisher.
    Publisher,
    /// The registry, from a trusted-publishing run it checked.
    Registry,
}

impl ProvenanceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ProvenanceSource::Publisher => "publisher",
            ProvenanceSource::Registry => "registry",
        }
    }
}

/// A stored provenance, as `GET …/{version}/provenance` serves it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredProvenance {
    pub envelope: String,
    pub summary: String,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedVersion {
    pub package_id: i64,
    pub version_id: i64,
    pub published_at: i64,
    /// Whether this publish created the package.
    pub new_package: bool,
    /// The index of the publish's log entry.
    pub log_index: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("the name {requested} is taken by the {kind} {existing}")]
    NameTaken {
        kind: Kind,
        requested: String,
        existing: String,
    },
    #[error("this {kind} is published as {existing}, not {requested}")]
    SpelledDifferently {
        kind: Kind,
        requested: String,
        existing: String,
    },
    #[error("you are not an owner of the {kind} {name}")]
    NotOwner { kind: Kind, name: String },
    #[error("{kind} {name} {version} already exists (or existed): versions are never reused")]
    VersionExists {
        kind: Kind,
        name: String,
        version: String,
    },
    /// Revoked (or removed) after the upload's checks read it.
    #[error(
        "the container is signed by key {}, which has been revoked",
        key_id.as_ref().map_or("(none)", KeyId::as_str)
    )]
    KeyRevoked { key_id: Option<KeyId> },
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// Staged releases: the staged version being approved was approved or
    /// rejected meanwhile.
    #[error("the staged version was decided meanwhile")]
    StagedDecided,
}

/// A version's tool dependencies as its index entry and record show them,
/// `{name as written: requirement}`: stored beside the version (migration
/// 0049), so that reading them is no descent into `dependencies`.
fn tool_dependencies(edges: &[DependencyEdge]) -> String {
    let object: serde_json::Map<String, Value> = edges
        .iter()
        .filter(|edge| edge.kind == Kind::Tool)
        .map(|edge| {
            (
                edge.name.as_str().to_owned(),
                edge.requirement.to_string().into(),
            )
        })
        .collect();
    Value::Object(object).to_string()
}

/// How one attempt at a publish transaction failed: it must be rolled back.
#[derive(Debug)]
enum Attempt {
    /// Failed after writing, or the database failed.
    Failed(PublishError),
    /// A concurrent publish created a package between our read and our
    /// insert (PostgreSQL; SQLite's write lock serializes publishes).
    LostPackageRace,
}

impl From<sqlx::Error> for Attempt {
    fn from(e: sqlx::Error) -> Self {
        Attempt::Failed(PublishError::Db(e))
    }
}

/// The precedence columns of a version: build metadata is not part of them,
/// so `1.0.0+a` and `1.0.0+b` are one version.
pub(crate) fn precedence(version: &Version) -> (i64, i64, i64, String) {
    let v = version.semver();
    // SemVer components above i64::MAX cannot be stored; clamp so ordering
    // holds for every realistic version and the UNIQUE check still applies.
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    (
        clamp(v.major),
        clamp(v.minor),
        clamp(v.patch),
        v.pre.as_str().to_owned(),
    )
}

/// Why `new` may not be published, given what its transaction read.
fn refusal(new: &NewVersion, target: &PublishTarget) -> Option<PublishError> {
    let kind = new.kind;
    if !target.key_usable {
        return Some(PublishError::KeyRevoked {
            key_id: new.signer_key_id.clone(),
        });
    }
    let existing = target.package_name.as_deref()?;
    // Trusted publishing: a version carrying a publisher identity was
    // authorized by the package's trust configuration, not by ownership.
    let may_publish = target.is_owner || new.publisher_identity.is_some();
    match (may_publish, existing == new.name.as_str()) {
        (true, true) if target.version_exists => Some(PublishError::VersionExists {
            kind,
            name: new.name.to_string(),
            version: new.version.to_string(),
        }),
        (true, true) => None,
        (true, false) => Some(PublishError::SpelledDifferently {
            kind,
            requested: new.name.to_string(),
            existing: existing.to_owned(),
        }),
        (false, true) => Some(PublishError::NotOwner {
            kind,
            name: existing.to_owned(),
        }),
        (false, false) => Some(PublishError::NameTaken {
            kind,
            requested: new.name.to_string(),
            existing: existing.to_owned(),
        }),
    }
}

/// A batch split into rounds, as indexes into it: the n-th publish of a
/// package goes in round n, so a round holds at most one publish per
/// package and a later round sees what an earlier one wrote.
fn rounds(batch: &[&NewVersion]) -> Vec<Vec<usize>> {
    let mut seen: std::collections::HashMap<(Kind, String), usize> =
        std::collections::HashMap::with_capacity(batch.len());
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, new) in batch.iter().enumerate() {
        let n = seen.entry((new.kind, new.name.normalized())).or_insert(0);
        if rounds.len() <= *n {
            rounds.push(Vec::new());
        }
        rounds[*n].push(i);
        *n += 1;
    }
    rounds
}

/// Dependency edges per INSERT (5 binds each): far below either backend's
/// bind limit.
const EDGE_ROWS: usize = 1_000;

/// One round of publishes (at most one per package) inside the write
/// transaction `$tx` (either backend's `WriteTx`), as a future of
/// `Result<Vec<Result<PublishedVersion, PublishError>>, Attempt>`, in the
/// round's order. Refusals are read before anything is written, so a
/// refused publish leaves the transaction as it found it; `Attempt` means
/// the transaction must roll back. A handful of statements whatever the
/// round's size (one read, the log's two, one per table written): in
/// SQLite each is a hand-over to the connection's thread and on
/// PostgreSQL a round trip, made while every other writer waits.
macro_rules! publish_round {
    ($tx:ident, $round:expr) => {
        async {
            let round: &[&NewVersion] = $round;
            let tx = &mut $tx;
            let now = now();
            // What each publish finds, in one query. The key is read again
            // here: it may have been revoked since the upload's checks, and
            // a revocation must stop every later commit. CAST gives the
            // VALUES columns their types in both dialects.
            let mut select = sqlx::QueryBuilder::new(
                "WITH wanted (i, kind, normalized_name, publisher, major, minor, patch,
                              prerelease, key_id) AS (VALUES ",
            );
            for (i, new) in round.iter().enumerate() {
                let (major, minor, patch, pre) = precedence(&new.version);
                if i > 0 {
                    select.push(", ");
                }
                select
                    .push("(CAST(")
                    .push_bind(i64::try_from(i).unwrap_or(i64::MAX))
                    .push(" AS BIGINT), CAST(")
                    .push_bind(new.kind.as_str())
                    .push(" AS TEXT), CAST(")
                    .push_bind(new.name.normalized())
                    .push(" AS TEXT), CAST(")
                    .push_bind(new.publisher)
                    .push(" AS BIGINT), CAST(")
                    .push_bind(major)
                    .push(" AS BIGINT), CAST(")
                    .push_bind(minor)
                    .push(" AS BIGINT), CAST(")
                    .push_bind(patch)
                    .push(" AS BIGINT), CAST(")
                    .push_bind(pre)
                    .push(" AS TEXT), CAST(")
                    .push_bind(new.signer_key_id.as_ref().map(KeyId::as_str))
                    .push(" AS TEXT))");
            }
            select.push(
                ")
                 SELECT w.i AS i,
                        (w.key_id IS NULL OR EXISTS (
                            SELECT 1 FROM signing_keys k
                            WHERE k.key_id = w.key_id AND k.account_id = w.publisher
                              AND k.revoked_at IS NULL)) AS key_usable,
                        p.id AS package_id, p.name AS package_name,
                        EXISTS (SELECT 1 FROM package_owners o
                                WHERE o.package_id = p.id AND o.account_id = w.publisher)
                            AS is_owner,
                        EXISTS (SELECT 1 FROM versions v
                                WHERE v.package_id = p.id AND v.major = w.major
                                  AND v.minor = w.minor AND v.patch = w.patch
                                  AND v.prerelease = w.prerelease) AS version_exists
                 FROM wanted w
                 LEFT JOIN packages p ON p.kind = w.kind AND p.normalized_name = w.normalized_name",
            );
            let mut targets: Vec<Option<PublishTarget>> = round.iter().map(|_| None).collect();
            for target in select
                .build_query_as::<PublishTarget>()
                .fetch_all(&mut **tx)
                .await?
            {
                let i = usize::try_from(target.i).unwrap_or(usize::MAX);
                if let Some(slot) = targets.get_mut(i) {
                    *slot = Some(target);
                }
            }
            let mut results: Vec<Option<Result<PublishedVersion, PublishError>>> =
                round.iter().map(|_| None).collect();
            // (index in the round, its existing package's id)
            let mut accepted: Vec<(usize, Option<i64>)> = Vec::with_capacity(round.len());
            for (i, new) in round.iter().enumerate() {
                let Some(target) = &targets[i] else {
                    return Err(Attempt::Failed(PublishError::Db(sqlx::Error::RowNotFound)));
                };
                match refusal(new, target) {
                    Some(refused) => results[i] = Some(Err(refused)),
                    None => accepted.push((i, target.package_id)),
                }
            }
            if !accepted.is_empty() {
                // The log's append lock (PostgreSQL) is the first lock a
                // publish takes, so publishes and other logged changes queue
                // in one order.
                let entries: Vec<&LogEntry> =
                    accepted.iter().map(|&(i, _)| &round[i].log_entry).collect();
                let first_log_index = tx.append_logs(&entries).await?;
                // Catalog text follows the newest release, not a prerelease.
                let updated: Vec<(i64, &NewVersion)> = accepted
                    .iter()
                    .filter_map(|&(i, id)| Some((id?, round[i])))
                    .filter(|(_, new)| !new.version.is_prerelease())
                    .collect();
                if !updated.is_empty() {
                    let mut update = sqlx::QueryBuilder::new(
                        "WITH changed (id, description, keywords) AS (VALUES ",
                    );
                    for (n, (id, new)) in updated.iter().enumerate() {
                        if n > 0 {
                            update.push(", ");
                        }
                        update
                            .push("(CAST(")
                            .push_bind(*id)
                            .push(" AS BIGINT), CAST(")
                            .push_bind(new.description.as_str())
                            .push(" AS TEXT), CAST(")
                            .push_bind(new.keywords.join(" "))
                            .push(" AS TEXT))");
                    }
                    update
                        .push(
                            ") UPDATE packages SET description = changed.description,
                                                   keywords = changed.keywords, updated_at = ",
                        )
                        .push_bind(now)
                        .push(" FROM changed WHERE packages.id = changed.id");
                    update.build().execute(&mut **tx).await?;
                }
                // New packages, each with its publisher as first owner.
                let created: Vec<&NewVersion> = accepted
                    .iter()
                    .filter(|(_, id)| id.is_none())
                    .map(|&(i, _)| round[i])
                    .collect();
                let mut created_ids: std::collections::HashMap<(String, String), i64> =
                    std::collections::HashMap::with_capacity(created.len());
                if !created.is_empty() {
                    let mut insert = sqlx::QueryBuilder::new(
                        "INSERT INTO packages (kind, name, normalized_name, description, keywords,
                                               created_at, updated_at) ",
                    );
                    insert.push_values(&created, |mut row, new| {
                        row.push_bind(new.kind.as_str())
                            .push_bind(new.name.as_str())
                            .push_bind(new.name.normalized())
                            .push_bind(new.description.as_str())
                            .push_bind(new.keywords.join(" "))
                            .push_bind(now)
                            .push_bind(now);
                    });
                    insert.push(" RETURNING id, kind, normalized_name");
                    let rows: Vec<(i64, String, String)> = insert
                        .build_query_as()
                        .fetch_all(&mut **tx)
                        .await
                        .map_err(|e| {
                            // Another publish created a package since our
                            // SELECT: start over and judge against its row.
                            if is_unique_violation(&e) {
                                Attempt::LostPackageRace
                            } else {
                                e.into()
                            }
                        })?;
                    for (id, kind, normalized) in rows {
                        created_ids.insert((kind, normalized), id);
                    }
                    let mut owners = sqlx::QueryBuilder::new(
                        "INSERT INTO package_owners (package_id, account_id, added_at, added_by,
                                                     ordinal) ",
                    );
                    let mut missing = false;
                    owners.push_values(&created, |mut row, new| {
                        let key = (new.kind.as_str().to_owned(), new.name.normalized());
                        let id = created_ids.get(&key).copied();
                        missing |= id.is_none();
                        row.push_bind(id.unwrap_or_default())
                            .push_bind(new.publisher)
                            .push_bind(now)
                            .push_bind(new.publisher)
                            .push_bind(1_i64);
                    });
                    if missing {
                        return Err(Attempt::Failed(PublishError::Db(sqlx::Error::RowNotFound)));
                    }
                    owners.build().execute(&mut **tx).await?;
                }
                // (package id, whether this publish created it) per accepted.
                let packages: Vec<(i64, bool)> = accepted
                    .iter()
                    .map(|&(i, existing)| match existing {
                        Some(id) => (id, false),
                        None => {
                            let new = round[i];
                            let key = (new.kind.as_str().to_owned(), new.name.normalized());
                            (created_ids.get(&key).copied().unwrap_or_default(), true)
                        }
                    })
                    .collect();
                let mut versions = sqlx::QueryBuilder::new(
                    "INSERT INTO versions (package_id, version, major, minor, patch, prerelease,
                                           sha256, size, signer_key_id, manifest, spec, lockfile,
                                           published_by, published_at, quality_report, extras,
                                           max_risk, log_index, prompt_mode, prompt_key_id,
                                           publisher_identity, provenance_sha256,
                                           tool_dependencies) ",
                );
                let mut log_index = first_log_index;
                versions.push_values(
                    accepted.iter().zip(&packages),
                    |mut row, (&(i, _), &(package_id, _))| {
                        let new = round[i];
                        let (major, minor, patch, pre) = precedence(&new.version);
                        row.push_bind(package_id)
                            .push_bind(new.version.to_string())
                            .push_bind(major)
                            .push_bind(minor)
                            .push_bind(patch)
                            .push_bind(pre)
                            .push_bind(new.sha256)
                            .push_bind(i64::try_from(new.size).unwrap_or(i64::MAX))
                            .push_bind(new.signer_key_id.as_ref().map(KeyId::as_str))
                            .push_bind(Json(&new.manifest))
                            .push_bind(Json(&new.spec))
                            .push_bind(new.lockfile.as_ref().map(Json))
                            .push_bind(new.publisher)
                            .push_bind(now)
                            .push_bind(new.quality_report.as_ref().map(Json))
                            .push_bind(new.extras.as_ref().map(Json))
                            .push_bind(new.max_risk)
                            .push_bind(log_index)
                            .push_bind(new.prompt_mode)
                            .push_bind(new.prompt_key_id.clone())
                            .push_bind(new.publisher_identity.clone())
                            .push_bind(new.provenance.as_ref().map(|p| p.sha256))
                            .push_bind(tool_dependencies(&new.dependencies));
                        log_index += 1;
                    },
                );
                versions.push(" RETURNING id, package_id");
                let inserted: Vec<(i64, i64)> = match versions
                    .build_query_as()
                    .fetch_all(&mut **tx)
                    .await
                {
                    Ok(rows) => rows,
                    // Published by another process since our SELECT.
                    Err(e) if is_unique_violation(&e) => {
                        let new = round[accepted[0].0];
                        return Err(Attempt::Failed(if accepted.len() == 1 {
                            PublishError::VersionExists {
                                kind: new.kind,
                                name: new.name.to_string(),
                                version: new.version.to_string(),
                            }
                        } else {
                            PublishError::Db(e)
                        }));
                    }
                    Err(e) => return Err(e.into()),
                };
                let version_ids: std::collections::HashMap<i64, i64> = inserted
                    .into_iter()
                    .map(|(id, package_id)| (package_id, id))
                    .collect();
                // Every edge of the round, a few statements at most
                // (validation bounds their number per version).
                let edges: Vec<(i64, &DependencyEdge)> = accepted
                    .iter()
                    .zip(&packages)
                    .flat_map(|(&(i, _), (package_id, _))| {
                        let version_id = version_ids.get(package_id).copied().unwrap_or_default();
                        round[i].dependencies.iter().map(move |dep| (version_id, dep))
                    })
                    .collect();
                for chunk in edges.chunks(EDGE_ROWS) {
                    let mut insert = sqlx::QueryBuilder::new(
                        "INSERT INTO dependencies (version_id, kind, name, normalized_name,
                                                   requirement) ",
                    );
                    insert.push_values(chunk, |mut row, (version_id, dep)| {
                        row.push_bind(*version_id)
                            .push_bind(dep.kind.as_str())
                            .push_bind(dep.name.as_str())
                            .push_bind(dep.name.normalized())
                            .push_bind(dep.requirement.to_string());
                    });
                    insert.build().execute(&mut **tx).await?;
                }
                // Provenance: at most one envelope (64 KiB) per version.
                for (&(i, _), &(package_id, _)) in accepted.iter().zip(&packages) {
                    let Some(provenance) = &round[i].provenance else {
                        continue;
                    };
                    let Some(&version_id) = version_ids.get(&package_id) else {
                        return Err(Attempt::Failed(PublishError::Db(sqlx::Error::RowNotFound)));
                    };
                    sqlx::query(
                        "INSERT INTO version_provenance (version_id, envelope, summary, source)
                         VALUES ($1, $2, $3, $4)",
                    )
                    .bind(version_id)
                    .bind(&provenance.envelope)
                    .bind(&provenance.summary)
                    .bind(provenance.source.as_str())
                    .execute(&mut **tx)
                    .await?;
                }
                // Staged releases: an approval (its entry names the stage
                // entry) marks its staged row approved, in this
                // transaction; a row decided meanwhile undoes the publish.
                for &(i, _) in &accepted {
                    let entry = &round[i].log_entry;
                    if let (Some(staged), Some(approver)) = (entry.staged, entry.account.as_deref())
                    {
                        let approved = sqlx::query(
                            "UPDATE staged_versions SET state = 'approved', decided_at = $1,
                                    decided_by = (SELECT id FROM accounts WHERE username = $2)
                             WHERE stage_log_index = $3 AND state = 'pending'",
                        )
                        .bind(now)
                        .bind(approver)
                        .bind(i64::try_from(staged).unwrap_or(i64::MAX))
                        .execute(&mut **tx)
                        .await?
                        .rows_affected();
                        if approved != 1 {
                            return Err(Attempt::Failed(PublishError::StagedDecided));
                        }
                    }
                }
                for (n, (&(i, _), &(package_id, new_package))) in
                    accepted.iter().zip(&packages).enumerate()
                {
                    let Some(&version_id) = version_ids.get(&package_id) else {
                        return Err(Attempt::Failed(PublishError::Db(sqlx::Error::RowNotFound)));
                    };
                    results[i] = Some(Ok(PublishedVersion {
                        package_id,
                        version_id,
                        published_at: now,
                        new_package,
                        log_index: first_log_index + i64::try_from(n).unwrap_or(i64::MAX),
                    }));
                }
            }
            results
                .into_iter()
                .map(|r| r.ok_or(Attempt::Failed(PublishError::Db(sqlx::Error::RowNotFound))))
                .collect::<Result<Vec<_>, Attempt>>()
        }
        .await
    };
}

impl Db {
    /// Whether `account_id` owns a package with a live version published at
    /// or before `before` (Unix seconds): an established publisher. Read
    /// through the owner index, then each owned package's live versions.
    pub async fn published_before(
        &self,
        account_id: i64,
        before: i64,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM (SELECT 1 FROM package_owners o
                  JOIN versions v ON v.package_id = o.package_id
                  WHERE o.account_id = $1 AND v.published_at <= $2 AND v.deleted_at IS NULL
                  LIMIT 1) AS found",
            )
            .bind(account_id)
            .bind(before)
            .fetch_one(pool)
            .await
        })
        .map(|n| n > 0)
    }

    /// The package with any spelling of `name` in `kind`.
    pub async fn find_package(
        &self,
        kind: Kind,
        name: &PackageName,
    ) -> Result<Option<PackageRecord>, sqlx::Error> {
        const SELECT: &str = "SELECT id, kind, name, normalized_name, description, keywords,
                    created_at, updated_at
             FROM packages WHERE kind = $1 AND normalized_name = $2";
        let inline = self.inline(|connection| {
            let params: [&dyn rusqlite::ToSql; 2] = [&kind.as_str(), &name.normalized()];
            crate::inline::query_rows(connection, SELECT, &params)
        });
        if let Some(found) = inline {
            return found.map(|rows| rows.into_iter().next());
        }
        with_pool!(planned self, pool => {
            sqlx::query_as::<_, PackageRecord>(SELECT)
                .bind(kind.as_str())
                .bind(name.normalized())
                .fetch_optional(pool)
                .await
        })
    }

    /// The package `name` of `kind` with what a publish of `version` by
    /// `account_id` must know of it, in one query; `None` for a new package.
    pub async fn publish_precheck(
        &self,
        kind: Kind,
        name: &PackageName,
        account_id: i64,
        version: &Version,
    ) -> Result<Option<PublishPrecheck>, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        with_pool!(self, pool => {
            sqlx::query_as::<_, PublishPrecheck>(
                "SELECT p.id, p.kind, p.name, p.normalized_name, p.description, p.keywords,
                        p.created_at, p.updated_at,
                        EXISTS (SELECT 1 FROM package_owners o
                                WHERE o.package_id = p.id AND o.account_id = $3) AS is_owner,
                        v.sha256 AS existing_sha256, v.deleted_at AS existing_deleted_at
                 FROM packages p
                 LEFT JOIN versions v ON v.package_id = p.id AND v.major = $4
                      AND v.minor = $5 AND v.patch = $6 AND v.prerelease = $7
                 WHERE p.kind = $1 AND p.normalized_name = $2",
            )
            .bind(kind.as_str())
            .bind(name.normalized())
            .bind(account_id)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(pre)
            .fetch_optional(pool)
            .await
        })
    }

    /// Whether `version` (by precedence, so build metadata aside) was ever
    /// published for the package, deleted versions included.
    pub async fn version_exists(
        &self,
        package_id: i64,
        version: &Version,
    ) -> Result<bool, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM versions
                 WHERE package_id = $1 AND major = $2 AND minor = $3 AND patch = $4
                   AND prerelease = $5",
            )
            .bind(package_id)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(pre)
            .fetch_one(pool)
            .await
            .map(|n| n > 0)
        })
    }

    /// Records a version in one transaction: the package (created with the
    /// publisher as its owner when new), the version row and its dependency
    /// edges. Nothing is visible unless all of it is. The container must
    /// already be in blob storage.
    pub async fn publish_version(
        &self,
        new: &NewVersion,
    ) -> Result<PublishedVersion, PublishError> {
        let alone = |attempt: Result<Vec<_>, Attempt>| match attempt {
            Ok(mut results) => results
                .pop()
                .unwrap_or(Err(PublishError::Db(sqlx::Error::RowNotFound))),
            Err(Attempt::Failed(e)) => Err(e),
            Err(Attempt::LostPackageRace) => Err(PublishError::NameTaken {
                kind: new.kind,
                requested: new.name.to_string(),
                existing: new.name.to_string(),
            }),
        };
        match self.try_publish(&[new]).await {
            // Once more is enough: the package row now exists and is stable.
            Err(Attempt::LostPackageRace) => alone(self.try_publish(&[new]).await),
            attempt => alone(attempt),
        }
    }

    /// Publishes a batch in one transaction: one commit (one WAL flush on
    /// PostgreSQL, one turn of SQLite's write lock), one hold of the log's
    /// append lock and a handful of statements for all of them. A publish
    /// refused before it wrote anything is answered alone and the rest go
    /// on; a race with another process or a database error rolls the batch
    /// back, and each publish is then tried in a transaction of its own, so
    /// one bad publish never costs another its answer. Results are in batch
    /// order.
    pub async fn publish_versions(
        &self,
        batch: &[&NewVersion],
    ) -> Vec<Result<PublishedVersion, PublishError>> {
        if let [one] = batch {
            return vec![self.publish_version(one).await];
        }
        match self.try_publish(batch).await {
            Ok(results) => results,
            Err(_) => {
                let mut results = Vec::with_capacity(batch.len());
                for new in batch {
                    results.push(self.publish_version(new).await);
                }
                results
            }
        }
    }

    /// The batch in one transaction, round by round ([`rounds`]); the
    /// results in batch order, or why the transaction was rolled back.
    async fn try_publish(
        &self,
        batch: &[&NewVersion],
    ) -> Result<Vec<Result<PublishedVersion, PublishError>>, Attempt> {
        with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            let mut results: Vec<Option<Result<PublishedVersion, PublishError>>> =
                batch.iter().map(|_| None).collect();
            for round in rounds(batch) {
                let news: Vec<&NewVersion> = round.iter().map(|&i| batch[i]).collect();
                let outcomes = publish_round!(tx, &news)?;
                for (i, outcome) in round.into_iter().zip(outcomes) {
                    results[i] = Some(outcome);
                }
            }
            tx.commit().await?;
            Ok(results
                .into_iter()
                .map(|r| r.unwrap_or(Err(PublishError::Db(sqlx::Error::RowNotFound))))
                .collect())
        }
        .await)
    }

    /// A version's dependency edges, by kind and normalized name.
    pub async fn list_dependencies(
        &self,
        version_id: i64,
    ) -> Result<Vec<DependencyEdge>, sqlx::Error> {
        let rows: Vec<(String, String, String)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT kind, name, requirement FROM dependencies
                 WHERE version_id = $1 ORDER BY kind, normalized_name",
            )
            .bind(version_id)
            .fetch_all(pool)
            .await
        })?;
        rows.into_iter()
            .map(|(kind, name, requirement)| {
                let bad = |what: &str, e: &dyn std::fmt::Display| {
                    sqlx::Error::Decode(format!("dependencies.{what}: {e}").into())
                };
                Ok(DependencyEdge {
                    kind: kind.parse().map_err(|e| bad("kind", &e))?,
                    name: PackageName::new(name).map_err(|e| bad("name", &e))?,
                    requirement: requirement.parse().map_err(|e| bad("requirement", &e))?,
                })
            })
            .collect()
    }

    /// One version by precedence (build metadata aside), deleted or not.
    pub async fn find_version(
        &self,
        package_id: i64,
        version: &Version,
    ) -> Result<Option<VersionRecord>, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        with_pool!(self, pool => {
            sqlx::query_as::<_, VersionRecord>(
                "SELECT id, package_id, version, sha256, size, signer_key_id, manifest, spec,
                        lockfile, yanked, yank_reason, published_by, published_at, deleted_at,
                        downloads, extras, log_index, prompt_mode, prompt_key_id,
                        publisher_identity IS NOT NULL AS trusted, provenance_sha256
                 FROM versions
                 WHERE package_id = $1 AND major = $2 AND minor = $3 AND patch = $4
                   AND prerelease = $5",
            )
            .bind(package_id)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(pre)
            .fetch_optional(pool)
            .await
        })
    }

    /// A version's stored provenance (docs/provenance.md).
    pub async fn version_provenance(
        &self,
        version_id: i64,
    ) -> Result<Option<StoredProvenance>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, StoredProvenance>(
                "SELECT envelope, summary, source FROM version_provenance WHERE version_id = $1",
            )
            .bind(version_id)
            .fetch_optional(pool)
            .await
        })
    }

    /// The package's live versions, newest first by SemVer precedence.
    pub async fn list_versions(&self, package_id: i64) -> Result<Vec<VersionRecord>, sqlx::Error> {
        let mut versions: Vec<VersionRecord> = with_pool!(self, pool => {
            sqlx::query_as::<_, VersionRecord>(
                "SELECT id, package_id, version, sha256, size, signer_key_id, manifest, spec,
                        lockfile, yanked, yank_reason, published_by, published_at, deleted_at,
                        downloads, extras, log_index, prompt_mode, prompt_key_id,
                        publisher_identity IS NOT NULL AS trusted, provenance_sha256
                 FROM versions WHERE package_id = $1 AND deleted_at IS NULL",
            )
            .bind(package_id)
            .fetch_all(pool)
            .await
        })?;
        // SQL cannot order prerelease identifiers (`rc.10` after `rc.9`);
        // semver can.
        versions.sort_by(|a, b| b.version.cmp(&a.version));
        Ok(versions)
    }

    /// Versions whose extras were never computed (published before they
    /// were stored): `(id, kind, sha256)`, at most `limit`.
    pub async fn versions_without_extras(
        &self,
        limit: i64,
    ) -> Result<Vec<(i64, String, String)>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT v.id, p.kind, v.sha256 FROM versions v
                 JOIN packages p ON p.id = v.package_id
                 WHERE v.extras IS NULL ORDER BY v.id LIMIT $1",
            )
            .bind(limit)
            .fetch_all(pool)
            .await
        })
    }

    pub async fn set_version_extras(
        &self,
        version_id: i64,
        extras: &Value,
        max_risk: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query("UPDATE versions SET extras = $1, max_risk = $2 WHERE id = $3")
                .bind(Json(extras))
                .bind(max_risk)
                .bind(version_id)
                .execute(pool)
                .await
                .map(drop)
        })?;
        super::note_local_write();
        Ok(())
    }

    /// Yanks or unyanks a live version and logs the change, in one
    /// transaction. Returns the index of the entry that records the
    /// version's state (the existing one when nothing changed: the same
    /// yank twice is one change), or `None` when there is no such version.
    pub async fn set_yanked(
        &self,
        package_id: i64,
        version: &Version,
        change: &YankChange<'_>,
    ) -> Result<Option<i64>, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            let current: Option<(i64, bool, Option<String>, Option<i64>)> = sqlx::query_as(
                "SELECT id, yanked, yank_reason, yank_log_index FROM versions
                 WHERE package_id = $1 AND major = $2 AND minor = $3 AND patch = $4
                   AND prerelease = $5 AND deleted_at IS NULL",
            )
            .bind(package_id)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(pre)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((id, yanked, reason, log_index)) = current else {
                return Ok(None);
            };
            let reason_now = if change.yanked { change.reason } else { None };
            if let Some(index) = log_index
                && yanked == change.yanked
                && reason.as_deref() == reason_now
            {
                return Ok(Some(index));
            }
            let index = tx.append_log(change.log_entry).await?;
            sqlx::query(
                "UPDATE versions SET yanked = $1, yank_reason = $2, yank_log_index = $3
                 WHERE id = $4",
            )
            .bind(change.yanked)
            .bind(reason_now)
            .bind(index)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(index))
        })
    }

    /// Adds counted downloads, `(version id, count)`, to each version's
    /// total and to its bucket for `day` (`YYYY-MM-DD`, UTC), all in one
    /// transaction: the in-process counter's periodic flush. Returns the
    /// packages whose stored records it deleted (migration 0051), to be
    /// rendered again.
    pub async fn record_downloads(
        &self,
        counts: &[(i64, i64)],
        day: &str,
    ) -> Result<Vec<PackageRef>, sqlx::Error> {
        if counts.is_empty() {
            return Ok(Vec::new());
        }
        let postgres = matches!(self, Db::Postgres(_));
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            if postgres {
                // Ordered with a store of answers (`stored_answers`).
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(DOWNLOADS_LOCK)
                    .execute(&mut *tx)
                    .await?;
            }
            let mut package_ids = std::collections::BTreeSet::new();
            for &(version_id, count) in counts {
                let package_id: Option<i64> = sqlx::query_scalar(
                    "UPDATE versions SET downloads = downloads + $1 WHERE id = $2
                     RETURNING package_id",
                )
                .bind(count)
                .bind(version_id)
                .fetch_optional(&mut *tx)
                .await?;
                package_ids.extend(package_id);
                sqlx::query(
                    "INSERT INTO download_counts (version_id, day, count) VALUES ($1, $2, $3)
                     ON CONFLICT (version_id, day) DO UPDATE SET count = download_counts.count + $3",
                )
                .bind(version_id)
                .bind(day)
                .bind(count)
                .execute(&mut *tx)
                .await?;
            }
            let mut packages = Vec::with_capacity(package_ids.len());
            for id in package_ids {
                packages.extend(
                    sqlx::query_as::<_, PackageRef>(
                        "SELECT id, kind, name FROM packages WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?,
                );
            }
            tx.commit().await?;
            Ok(packages)
        })
    }

    pub async fn downloads_by_day(
        &self,
        version_id: i64,
    ) -> Result<Vec<(String, i64)>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT day, count FROM download_counts WHERE version_id = $1 ORDER BY day",
            )
            .bind(version_id)
            .fetch_all(pool)
            .await
        })
    }

    /// The SHA-256 of every container a live (not deleted) version refers
    /// to: what the blob sweep must keep.
    pub async fn referenced_blob_digests(&self) -> Result<Vec<Sha256Digest>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar(
                // Staged releases: a pending staged version's container too.
                "SELECT sha256 FROM versions WHERE deleted_at IS NULL
                 UNION SELECT sha256 FROM staged_versions WHERE state = 'pending'
                 ORDER BY sha256",
            )
            .fetch_all(pool)
            .await
        })
    }

    /// Live versions whose text is longer than 64 bytes (longer than any
    /// version today's rules accept), as stored (not parsed: a repair reads them to find the rows today's
    /// rules refuse). The bound is written into the statement, as in the
    /// partial index `versions_long_text` (migration 0043), so both
    /// databases read that index's few rows instead of every version.
    pub async fn long_version_texts(&self) -> Result<Vec<(i64, String)>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, version FROM versions
                 WHERE length(version) > 64 AND deleted_at IS NULL ORDER BY id",
            )
            .fetch_all(pool)
            .await
        })
    }

    /// Marks the versions `ids` deleted, as [`Db::delete_version`] does.
    pub async fn delete_versions_by_id(&self, ids: &[i64]) -> Result<u64, sqlx::Error> {
        let mut deleted = 0;
        for id in ids {
            deleted += with_pool!(self, pool => {
                sqlx::query("UPDATE versions SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL")
                    .bind(now())
                    .bind(*id)
                    .execute(pool)
                    .await
                    .map(|done| done.rows_affected())
            })?;
        }
        if deleted > 0 {
            super::note_local_write();
        }
        Ok(deleted)
    }

    /// Marks a version deleted. Its row stays, so the version can never be
    /// published again; its blob becomes unreferenced for the sweep.
    pub async fn delete_version(
        &self,
        package_id: i64,
        version: &Version,
    ) -> Result<bool, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        let affected = with_pool!(self, pool => {
            sqlx::query(
                "UPDATE versions SET deleted_at = $1
                 WHERE package_id = $2 AND major = $3 AND minor = $4 AND patch = $5
                   AND prerelease = $6 AND deleted_at IS NULL",
            )
            .bind(now())
            .bind(package_id)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(pre)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        })?;
        super::note_local_write();
        Ok(affected > 0)
    }
}
