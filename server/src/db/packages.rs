//! Packages, their owners and versions: what publish writes and what every
//! read endpoint serves.

use agentlang_core::{Kind, PackageName, Version, tlog::LogEntry};
use serde_json::Value;
use sqlx::types::Json;

use super::{BeginWrite, Db, is_unique_violation, now, tlog::AppendLog, with_pool};
use agentlang_core::container::Sha256Digest;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PackageRecord {
    pub id: i64,
    pub kind: String,
    /// The spelling it was first published under.
    pub name: String,
    pub normalized_name: String,
    pub description: String,
    pub keywords: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a publish's transaction reads before it writes: whether the
/// signer's key is still the publisher's and unrevoked, and the package
/// (when it exists) with whether the publisher owns it and whether the
/// version number is taken. One row, package or not.
#[derive(Debug, Clone, sqlx::FromRow)]
struct PublishTarget {
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
    pub existing_sha256: Option<String>,
    pub existing_deleted_at: Option<i64>,
}

/// One stored version, as the read endpoints serve it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRecord {
    pub id: i64,
    pub package_id: i64,
    pub version: String,
    pub sha256: String,
    pub size: i64,
    pub signer_key_id: Option<String>,
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
    pub signer_key_id: Option<String>,
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
    pub dependencies: Vec<DependencyEdge>,
    /// Shown in the catalog and indexed for search.
    pub description: String,
    pub keywords: Vec<String>,
    pub publisher: i64,
    /// The publish's transparency-log entry, appended in its transaction.
    pub log_entry: LogEntry,
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
    #[error("the container is signed by key {key_id}, which has been revoked")]
    KeyRevoked { key_id: String },
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// How one attempt at a publish transaction ended.
#[derive(Debug)]
enum Attempt {
    /// Refused before this publish wrote anything: the transaction it ran
    /// in is still good for the rest of a batch.
    Refused(PublishError),
    /// Failed after writing, or the database failed: the transaction must
    /// be rolled back.
    Failed(PublishError),
    /// A concurrent publish created the package between our read and our
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
fn precedence(version: &Version) -> (i64, i64, i64, String) {
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

/// One publish's statements inside the write transaction `$tx` (either
/// backend's `WriteTx`), as a future of `Result<PublishedVersion, Attempt>`.
/// Every refusal is read before the first write, so a refused publish
/// leaves a batch's transaction as it found it. Few statements: in SQLite
/// each is a hand-over to the connection's thread, made while every other
/// writer waits.
macro_rules! publish_in {
    ($tx:ident, $new:expr) => {
        async {
            let new: &NewVersion = $new;
            let tx = &mut $tx;
            let now = now();
            let kind = new.kind;
            let (major, minor, patch, pre) = precedence(&new.version);
            // The key is read again here: it may have been revoked since the
            // upload's checks, and a revocation must stop every later commit.
            let target = sqlx::query_as::<_, PublishTarget>(
                "SELECT ($8 IS NULL OR EXISTS (SELECT 1 FROM signing_keys k
                                               WHERE k.key_id = $8 AND k.account_id = $3
                                                 AND k.revoked_at IS NULL)) AS key_usable,
                        p.id AS package_id, p.name AS package_name,
                        EXISTS (SELECT 1 FROM package_owners o
                                WHERE o.package_id = p.id AND o.account_id = $3) AS is_owner,
                        EXISTS (SELECT 1 FROM versions v
                                WHERE v.package_id = p.id AND v.major = $4 AND v.minor = $5
                                  AND v.patch = $6 AND v.prerelease = $7) AS version_exists
                 FROM (SELECT 1 AS one) AS this
                 LEFT JOIN packages p ON p.kind = $1 AND p.normalized_name = $2",
            )
            .bind(kind.as_str())
            .bind(new.name.normalized())
            .bind(new.publisher)
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(&pre)
            .bind(new.signer_key_id.as_deref())
            .fetch_one(&mut **tx)
            .await?;
            if !target.key_usable {
                return Err(Attempt::Refused(PublishError::KeyRevoked {
                    key_id: new.signer_key_id.clone().unwrap_or_default(),
                }));
            }
            let existing = target.package_id.zip(target.package_name);
            if let Some((_, existing_name)) = &existing {
                let refusal = match (target.is_owner, existing_name == new.name.as_str()) {
                    (true, true) if target.version_exists => Some(PublishError::VersionExists {
                        kind,
                        name: new.name.to_string(),
                        version: new.version.to_string(),
                    }),
                    (true, true) => None,
                    (true, false) => Some(PublishError::SpelledDifferently {
                        kind,
                        requested: new.name.to_string(),
                        existing: existing_name.clone(),
                    }),
                    (false, true) => Some(PublishError::NotOwner {
                        kind,
                        name: existing_name.clone(),
                    }),
                    (false, false) => Some(PublishError::NameTaken {
                        kind,
                        requested: new.name.to_string(),
                        existing: existing_name.clone(),
                    }),
                };
                if let Some(refusal) = refusal {
                    return Err(Attempt::Refused(refusal));
                }
            }
            // The log's append lock (PostgreSQL) is the first lock a publish
            // takes, so publishes and other logged changes queue in one order.
            let log_index = tx.append_log(&new.log_entry).await?;
            let keywords = new.keywords.join(" ");
            let (package_id, new_package) = match existing {
                Some((package_id, _)) => {
                    // Catalog text follows the newest release, not a prerelease.
                    if !new.version.is_prerelease() {
                        sqlx::query(
                            "UPDATE packages SET description = $1, keywords = $2, updated_at = $3
                             WHERE id = $4",
                        )
                        .bind(&new.description)
                        .bind(&keywords)
                        .bind(now)
                        .bind(package_id)
                        .execute(&mut **tx)
                        .await?;
                    }
                    (package_id, false)
                }
                None => {
                    let id: i64 = sqlx::query_scalar(
                        "INSERT INTO packages (kind, name, normalized_name, description, keywords,
                                               created_at, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id",
                    )
                    .bind(kind.as_str())
                    .bind(new.name.as_str())
                    .bind(new.name.normalized())
                    .bind(&new.description)
                    .bind(&keywords)
                    .bind(now)
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(|e| {
                        // Another publish created the package since our
                        // SELECT: start over and judge against its row.
                        if is_unique_violation(&e) {
                            Attempt::LostPackageRace
                        } else {
                            e.into()
                        }
                    })?;
                    sqlx::query(
                        "INSERT INTO package_owners (package_id, account_id, added_at, added_by, ordinal)
                         VALUES ($1, $2, $3, $2, 1)",
                    )
                    .bind(id)
                    .bind(new.publisher)
                    .bind(now)
                    .execute(&mut **tx)
                    .await?;
                    (id, true)
                }
            };
            let inserted = sqlx::query_scalar::<_, i64>(
                "INSERT INTO versions (package_id, version, major, minor, patch, prerelease,
                                       sha256, size, signer_key_id, manifest, spec, lockfile,
                                       published_by, published_at, quality_report, extras,
                                       max_risk, log_index)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                         $16, $17, $18)
                 RETURNING id",
            )
            .bind(package_id)
            .bind(new.version.to_string())
            .bind(major)
            .bind(minor)
            .bind(patch)
            .bind(&pre)
            .bind(new.sha256.to_string())
            .bind(i64::try_from(new.size).unwrap_or(i64::MAX))
            .bind(new.signer_key_id.as_deref())
            .bind(Json(&new.manifest))
            .bind(Json(&new.spec))
            .bind(new.lockfile.as_ref().map(Json))
            .bind(new.publisher)
            .bind(now)
            .bind(new.quality_report.as_ref().map(Json))
            .bind(new.extras.as_ref().map(Json))
            .bind(new.max_risk)
            .bind(log_index)
            .fetch_one(&mut **tx)
            .await;
            let version_id = match inserted {
                Ok(id) => id,
                // Published by another process since our SELECT.
                Err(e) if is_unique_violation(&e) => {
                    return Err(Attempt::Failed(PublishError::VersionExists {
                        kind,
                        name: new.name.to_string(),
                        version: new.version.to_string(),
                    }));
                }
                Err(e) => return Err(e.into()),
            };
            if !new.dependencies.is_empty() {
                // One statement for every edge (validation bounds their number).
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO dependencies (version_id, kind, name, normalized_name, requirement) ",
                );
                insert.push_values(&new.dependencies, |mut row, dep| {
                    row.push_bind(version_id)
                        .push_bind(dep.kind.as_str())
                        .push_bind(dep.name.as_str())
                        .push_bind(dep.name.normalized())
                        .push_bind(dep.requirement.to_string());
                });
                insert.build().execute(&mut **tx).await?;
            }
            Ok(PublishedVersion {
                package_id,
                version_id,
                published_at: now,
                new_package,
                log_index,
            })
        }
        .await
    };
}

impl Db {
    /// The package with any spelling of `name` in `kind`.
    pub async fn find_package(
        &self,
        kind: Kind,
        name: &PackageName,
    ) -> Result<Option<PackageRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, PackageRecord>(
                "SELECT id, kind, name, normalized_name, description, keywords, created_at,
                        updated_at
                 FROM packages WHERE kind = $1 AND normalized_name = $2",
            )
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
        match self.try_publish_version(new).await {
            Ok(published) => Ok(published),
            Err(Attempt::Refused(e) | Attempt::Failed(e)) => Err(e),
            // Once is enough: the package row now exists and is stable.
            Err(Attempt::LostPackageRace) => match self.try_publish_version(new).await {
                Ok(published) => Ok(published),
                Err(Attempt::Refused(e) | Attempt::Failed(e)) => Err(e),
                Err(Attempt::LostPackageRace) => Err(PublishError::NameTaken {
                    kind: new.kind,
                    requested: new.name.to_string(),
                    existing: new.name.to_string(),
                }),
            },
        }
    }

    /// Publishes a batch in one transaction: one commit (one WAL flush on
    /// PostgreSQL, one turn of SQLite's write lock) and one hold of the
    /// log's append lock for all of them. A publish refused before it
    /// wrote anything is answered alone and the rest go on; a race with
    /// another process or a database error rolls the batch back, and each
    /// publish is then tried in a transaction of its own, so one bad
    /// publish never costs another its answer. Results are in batch order.
    pub async fn publish_versions(
        &self,
        batch: &[&NewVersion],
    ) -> Vec<Result<PublishedVersion, PublishError>> {
        if let [one] = batch {
            return vec![self.publish_version(one).await];
        }
        let together = with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await.ok()?;
            let mut results = Vec::with_capacity(batch.len());
            for new in batch {
                match publish_in!(tx, new) {
                    Ok(published) => results.push(Ok(published)),
                    Err(Attempt::Refused(refusal)) => results.push(Err(refusal)),
                    Err(Attempt::Failed(_) | Attempt::LostPackageRace) => return None,
                }
            }
            tx.commit().await.ok()?;
            Some(results)
        }
        .await);
        match together {
            Some(results) => results,
            None => {
                let mut results = Vec::with_capacity(batch.len());
                for new in batch {
                    results.push(self.publish_version(new).await);
                }
                results
            }
        }
    }

    async fn try_publish_version(&self, new: &NewVersion) -> Result<PublishedVersion, Attempt> {
        with_pool!(self, pool => async {
            let mut tx = pool.begin_write().await?;
            let published = publish_in!(tx, new)?;
            tx.commit().await?;
            Ok(published)
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
                        downloads, extras, log_index
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

    /// The package's live versions, newest first by SemVer precedence.
    pub async fn list_versions(&self, package_id: i64) -> Result<Vec<VersionRecord>, sqlx::Error> {
        let mut versions: Vec<VersionRecord> = with_pool!(self, pool => {
            sqlx::query_as::<_, VersionRecord>(
                "SELECT id, package_id, version, sha256, size, signer_key_id, manifest, spec,
                        lockfile, yanked, yank_reason, published_by, published_at, deleted_at,
                        downloads, extras, log_index
                 FROM versions WHERE package_id = $1 AND deleted_at IS NULL",
            )
            .bind(package_id)
            .fetch_all(pool)
            .await
        })?;
        // SQL cannot order prerelease identifiers (`rc.10` after `rc.9`);
        // semver can.
        versions.sort_by(|a, b| {
            let parse = |v: &str| semver::Version::parse(v).ok();
            parse(&b.version).cmp(&parse(&a.version))
        });
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
    /// transaction: the in-process counter's periodic flush.
    pub async fn record_downloads(
        &self,
        counts: &[(i64, i64)],
        day: &str,
    ) -> Result<(), sqlx::Error> {
        if counts.is_empty() {
            return Ok(());
        }
        with_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            for &(version_id, count) in counts {
                sqlx::query("UPDATE versions SET downloads = downloads + $1 WHERE id = $2")
                    .bind(count)
                    .bind(version_id)
                    .execute(&mut *tx)
                    .await?;
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
            tx.commit().await
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
        let rows: Vec<String> = with_pool!(self, pool => {
            sqlx::query_scalar(
                "SELECT DISTINCT sha256 FROM versions WHERE deleted_at IS NULL ORDER BY sha256",
            )
            .fetch_all(pool)
            .await
        })?;
        rows.iter()
            .map(|hex| {
                hex.parse::<Sha256Digest>().map_err(|e| {
                    sqlx::Error::Decode(format!("versions.sha256 {hex:?}: {e}").into())
                })
            })
            .collect()
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
