//! What resolution and the index endpoint read: every live version of a
//! package (or of a batch of packages) with its hash, yanked flag and
//! dependency edges, in one query (a row per package; on SQLite's calling
//! thread, two in one read transaction, the versions a row each); and the
//! registry-wide generation that tells caches whether they are stale.

use std::collections::{BTreeMap, HashMap};

use agentlang_core::{Kind, PackageName, Username, Version, digest::Sha256Digest};

use super::{
    Db,
    dialect::{Dialect, INDEX_VERSIONS, package_index_heads, package_index_rows},
    inline::{self, InlineRow},
    packages::PackageRecord,
    per_runtime::PerRuntime,
    select_in, with_pool,
};

/// One live version as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexVersion {
    pub version_id: i64,
    pub version: Version,
    pub sha256: Sha256Digest,
    pub yanked: bool,
    /// Tool dependencies: name as written, requirement as written.
    pub dependencies: BTreeMap<String, String>,
    /// Unix seconds.
    pub published_at: i64,
    /// The transparency-log entry of its publish; `None` only until the
    /// start-up backfill logs versions published before the log.
    pub log_index: Option<i64>,
    /// Quarantined, itself or with its package (docs/statuses.md): listed,
    /// never resolved.
    pub quarantined: bool,
    /// Published through trusted publishing.
    pub trusted: bool,
    /// Has a verified provenance statement.
    pub provenance: bool,
}

/// A package with its live versions in SemVer order, oldest first.
#[derive(Debug, Clone)]
pub struct PackageIndex {
    pub package: PackageRecord,
    pub versions: Vec<IndexVersion>,
    /// Whether the package or any of its versions has a status row
    /// (docs/statuses.md): only then need they be read.
    pub has_statuses: bool,
}

const READ_GENERATION: &str = "SELECT generation FROM registry_generation WHERE id = 1";

/// The connections [`Db::registry_generation_on`] keeps: one per runtime,
/// as the pools are (`per_runtime`).
#[derive(Debug, Default)]
pub struct GenerationConnection(PerRuntime<tokio::sync::Mutex<Option<OwnConnection>>>);

#[derive(Debug)]
enum OwnConnection {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

/// A package as an index read finds it, its versions aside.
#[derive(sqlx::FromRow)]
struct IndexHead {
    #[sqlx(flatten)]
    package: PackageRecord,
    /// A JSON array of the ids of the quarantined versions, 0 for the
    /// whole package: one read per package, not one per version.
    quarantined: String,
    has_statuses: bool,
}

impl InlineRow for IndexHead {
    const WIDTH: usize = PackageRecord::WIDTH + 2;

    fn columns() -> Vec<&'static str> {
        [
            PackageRecord::columns(),
            vec!["quarantined", "has_statuses"],
        ]
        .concat()
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        let after = at + PackageRecord::WIDTH;
        Ok(Self {
            package: PackageRecord::from_inline(row, at)?,
            quarantined: row.get(after)?,
            has_statuses: row.get(after + 1)?,
        })
    }
}

impl IndexHead {
    /// The package's index, `listed` its live versions in any order.
    fn index(self, listed: Vec<ListedVersion>) -> Result<PackageIndex, sqlx::Error> {
        let quarantined: Vec<i64> = serde_json::from_str(&self.quarantined).map_err(|e| {
            sqlx::Error::Decode(format!("the index of {}: {e}", self.package.name).into())
        })?;
        let mut versions: Vec<IndexVersion> = listed
            .into_iter()
            .map(|v| IndexVersion {
                version_id: v.id,
                version: v.version,
                sha256: v.sha256,
                yanked: v.yanked.0,
                dependencies: v.dependencies,
                published_at: v.published_at,
                log_index: v.log_index,
                quarantined: quarantined.iter().any(|&id| id == 0 || id == v.id),
                trusted: v.trusted.0,
                provenance: v.provenance.0,
            })
            .collect();
        // SQL cannot order prerelease identifiers; semver can.
        versions.sort_by(|a, b| a.version.cmp(&b.version));
        Ok(PackageIndex {
            package: self.package,
            versions,
            has_statuses: self.has_statuses,
        })
    }
}

/// A package with its live versions as the database aggregated them.
#[derive(sqlx::FromRow)]
struct IndexRow {
    #[sqlx(flatten)]
    head: IndexHead,
    /// A JSON array of [`ListedVersion`]s.
    versions: String,
}

/// A row of [`INDEX_VERSIONS`]: one live version of package `package_id`.
struct IndexVersionRow {
    package_id: i64,
    version: ListedVersion,
}

impl InlineRow for IndexVersionRow {
    const WIDTH: usize = 10;

    fn columns() -> Vec<&'static str> {
        vec![
            "package_id",
            "id",
            "version",
            "sha256",
            "yanked",
            "tool_dependencies",
            "published_at",
            "log_index",
            "trusted",
            "provenance",
        ]
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        let dependencies: &str = row.get_ref(at + 5)?.as_str()?;
        let dependencies = serde_json::from_str(dependencies).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                at + 5,
                rusqlite::types::Type::Text,
                Box::new(e),
            )
        })?;
        Ok(Self {
            package_id: row.get(at)?,
            version: ListedVersion {
                id: row.get(at + 1)?,
                version: row.get(at + 2)?,
                sha256: row.get(at + 3)?,
                yanked: Flag(row.get(at + 4)?),
                dependencies,
                published_at: row.get(at + 6)?,
                log_index: row.get(at + 7)?,
                trusted: Flag(row.get(at + 8)?),
                provenance: Flag(row.get(at + 9)?),
            },
        })
    }
}

/// [`Db::package_indexes`] on SQLite's calling thread, in one read
/// transaction: the packages, then their versions as rows.
fn inline_indexes(
    connection: &rusqlite::Connection,
    kind: Kind,
    normalized: &[String],
) -> rusqlite::Result<Vec<(IndexHead, Vec<ListedVersion>)>> {
    inline::snapshot(connection, || {
        let heads: Vec<IndexHead> =
            inline::select_in(connection, &package_index_heads(kind), normalized)?;
        let ids: Vec<i64> = heads.iter().map(|head| head.package.id).collect();
        let mut listed: Vec<Vec<ListedVersion>> = heads.iter().map(|_| Vec::new()).collect();
        if !ids.is_empty() {
            let at: HashMap<i64, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
            for row in inline::select_in::<IndexVersionRow, _>(connection, INDEX_VERSIONS, &ids)? {
                if let Some(&i) = at.get(&row.package_id) {
                    listed[i].push(row.version);
                }
            }
        }
        Ok(heads.into_iter().zip(listed).collect())
    })
}

/// One version in [`IndexRow::versions`], a JSON array in this field order
/// (`dialect::package_index_rows` writes it; serde reads a struct from an
/// array by position).
#[derive(serde::Deserialize)]
struct ListedVersion {
    id: i64,
    version: Version,
    sha256: Sha256Digest,
    yanked: Flag,
    /// Tool dependencies: name to requirement.
    dependencies: BTreeMap<String, String>,
    published_at: i64,
    log_index: Option<i64>,
    trusted: Flag,
    provenance: Flag,
}

/// A boolean as either database writes it into JSON: SQLite as 0 or 1.
/// Read by a visitor that takes both: an untagged enum would build an
/// error for every `0` it first tried as a boolean, four per version of
/// every index read.
struct Flag(bool);

impl<'de> serde::Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BoolOrInt;
        impl serde::de::Visitor<'_> for BoolOrInt {
            type Value = Flag;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a boolean, or 0 or 1")
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Flag, E> {
                Ok(Flag(b))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Flag, E> {
                Ok(Flag(n != 0))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Flag, E> {
                Ok(Flag(n != 0))
            }
        }
        deserializer.deserialize_any(BoolOrInt)
    }
}

impl Db {
    /// The generation counter (migration 0002): bumped in the same
    /// transaction as every publish, yank, unyank, deletion and model write.
    pub async fn registry_generation(&self) -> Result<i64, sqlx::Error> {
        if let Some(read) = self.inline_generation() {
            return read;
        }
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(READ_GENERATION)
                .fetch_one(pool)
                .await
        })
    }

    /// The generation read on the calling thread (SQLite in a file), as
    /// the public reads are (`inline`): `None` when it must go to a
    /// connection.
    fn inline_generation(&self) -> Option<Result<i64, sqlx::Error>> {
        self.inline(|connection| {
            let read = inline::query(connection, READ_GENERATION, &[], |row| row.get(0))?;
            read.into_iter()
                .next()
                .ok_or(rusqlite::Error::QueryReturnedNoRows)
        })
    }

    /// [`Db::registry_generation`] on a connection of its own: under load
    /// the generation is read thousands of times a second, one read at a
    /// time, and a pooled connection costs each read an acquire and, on its
    /// release, a ping (sqlx tests every released connection): a second
    /// round trip. A connection that fails is dropped; the next read opens
    /// another.
    pub async fn registry_generation_on(
        &self,
        own: &GenerationConnection,
    ) -> Result<i64, sqlx::Error> {
        if let Some(read) = self.inline_generation() {
            return read;
        }
        let mut slot = own.0.get_or_init(Default::default).lock().await;
        let conn = match slot.take() {
            Some(conn) => conn,
            None => match self {
                Db::Sqlite { pool, .. } => OwnConnection::Sqlite(pool.acquire().await?.detach()),
                Db::Postgres(pools) => {
                    OwnConnection::Postgres(pools.current().acquire().await?.detach())
                }
            },
        };
        let (read, conn) = match conn {
            OwnConnection::Sqlite(mut conn) => (
                sqlx::query_scalar::<_, i64>(READ_GENERATION)
                    .fetch_one(&mut conn)
                    .await,
                OwnConnection::Sqlite(conn),
            ),
            OwnConnection::Postgres(mut conn) => (
                sqlx::query_scalar::<_, i64>(READ_GENERATION)
                    .fetch_one(&mut conn)
                    .await,
                OwnConnection::Postgres(conn),
            ),
        };
        // Kept only while it works.
        if read.is_ok() {
            *slot = Some(conn);
        }
        read
    }

    /// The index of one package (any spelling of its name), or `None`.
    pub async fn package_index(
        &self,
        kind: Kind,
        name: &PackageName,
    ) -> Result<Option<PackageIndex>, sqlx::Error> {
        Ok(self
            .package_indexes(kind, std::slice::from_ref(name))
            .await?
            .pop())
    }

    /// The indexes of the packages of `kind` among `names` (any spelling;
    /// those that do not exist are left out), in one query per 500 names:
    /// a resolution reads one level of its dependency graph at a time.
    /// Through a connection each package is one row, its live versions and
    /// their tool dependencies aggregated into JSON by the database: as a
    /// row per version and edge, a cold resolve's reads spent most of their
    /// time handing rows over. On SQLite's calling thread, where a row
    /// costs no hand-off, versions are read as rows.
    pub async fn package_indexes(
        &self,
        kind: Kind,
        names: &[PackageName],
    ) -> Result<Vec<PackageIndex>, sqlx::Error> {
        let normalized: Vec<String> = names.iter().map(PackageName::normalized).collect();
        if normalized.len() <= inline::INLINE_IDS
            && let Some(read) =
                self.inline(|connection| inline_indexes(connection, kind, &normalized))
        {
            return read?
                .into_iter()
                .map(|(head, listed)| head.index(listed))
                .collect();
        }
        let sqlite = package_index_rows(Dialect::Sqlite, kind);
        let postgres = package_index_rows(Dialect::Postgres, kind);
        let rows = self
            .select_index_rows(&sqlite, &postgres, &normalized)
            .await?;
        rows.into_iter()
            .map(|row| {
                let listed: Vec<ListedVersion> =
                    serde_json::from_str(&row.versions).map_err(|e| {
                        sqlx::Error::Decode(
                            format!("the index of {}: {e}", row.head.package.name).into(),
                        )
                    })?;
                row.head.index(listed)
            })
            .collect()
    }

    /// Never on SQLite's calling thread: there [`inline_indexes`] reads
    /// the same as rows.
    async fn select_index_rows(
        &self,
        sqlite: &str,
        postgres: &str,
        normalized: &[String],
    ) -> Result<Vec<IndexRow>, sqlx::Error> {
        select_in!(pooled self, IndexRow, sqlite, postgres, normalized)
    }

    /// `(id, username)` of the given accounts, unordered.
    pub async fn usernames_by_ids(&self, ids: &[i64]) -> Result<Vec<(i64, Username)>, sqlx::Error> {
        const SELECT: &str = "SELECT id, username FROM accounts WHERE id IN (";
        select_in!(self, (i64, Username), SELECT, SELECT, ids)
    }
}

/// One live version, as search ranks it: no spec is read.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct VersionHead {
    pub package_id: i64,
    /// The version row's id, for [`Db::version_facts`].
    pub id: i64,
    pub version: Version,
    pub yanked: bool,
    pub downloads: i64,
    pub published_at: i64,
}

impl InlineRow for VersionHead {
    const WIDTH: usize = 6;

    fn columns() -> Vec<&'static str> {
        vec![
            "package_id",
            "id",
            "version",
            "yanked",
            "downloads",
            "published_at",
        ]
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            package_id: row.get(at)?,
            id: row.get(at + 1)?,
            version: row.get(at + 2)?,
            yanked: row.get(at + 3)?,
            downloads: row.get(at + 4)?,
            published_at: row.get(at + 5)?,
        })
    }
}

/// agent.yaml's `title` and `category` of one version; tools have neither.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct VersionFacts {
    pub id: i64,
    pub title: Option<String>,
    pub category: Option<String>,
    /// The highest risk of an agent version's effective capabilities.
    pub max_risk: Option<String>,
}

impl InlineRow for VersionFacts {
    const WIDTH: usize = 4;

    fn columns() -> Vec<&'static str> {
        vec!["id", "max_risk", "title", "category"]
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(at)?,
            max_risk: row.get(at + 1)?,
            title: row.get(at + 2)?,
            category: row.get(at + 3)?,
        })
    }
}

/// One version's stored definition (tool.yaml or agent.yaml as JSON).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionSpec {
    pub id: i64,
    /// The package's name as first published.
    pub name: PackageName,
    pub version: Version,
    pub spec: sqlx::types::Json<serde_json::Value>,
}

impl Db {
    /// The stored definitions of the given versions, unordered: what
    /// publish holds an agent's inline schemas to, for the tool versions
    /// its lock pins.
    pub async fn version_specs(
        &self,
        version_ids: &[i64],
    ) -> Result<Vec<VersionSpec>, sqlx::Error> {
        const SELECT: &str = "SELECT v.id, p.name, v.version, v.spec
             FROM versions v JOIN packages p ON p.id = v.package_id WHERE v.id IN (";
        select_in!(self, VersionSpec, SELECT, SELECT, version_ids)
    }

    /// The records of the given packages, unordered.
    pub async fn packages_by_ids(&self, ids: &[i64]) -> Result<Vec<PackageRecord>, sqlx::Error> {
        const SELECT: &str = "SELECT id, kind, name, normalized_name, description, keywords,
                    created_at, updated_at
             FROM packages WHERE id IN (";
        select_in!(planned self, PackageRecord, SELECT, SELECT, ids)
    }

    /// Every live version of the given packages, unordered.
    pub async fn version_heads(
        &self,
        package_ids: &[i64],
    ) -> Result<Vec<VersionHead>, sqlx::Error> {
        select_in!(planned self, VersionHead, VERSION_HEADS, VERSION_HEADS, package_ids)
    }

    /// Title and category of the given versions: reading specs is the
    /// expensive part of search, so it is done for the versions shown.
    pub async fn version_facts(
        &self,
        version_ids: &[i64],
    ) -> Result<Vec<VersionFacts>, sqlx::Error> {
        const SELECT: &str = "SELECT id, max_risk, spec->>'title' AS title,
                    spec->>'category' AS category
             FROM versions WHERE id IN (";
        select_in!(planned self, VersionFacts, SELECT, SELECT, version_ids)
    }
}

/// Every live version of the packages listed after it (`IN (`), unordered:
/// from `versions_index_entries` alone (migration 0046 on SQLite, 0047 on
/// PostgreSQL).
const VERSION_HEADS: &str = "SELECT package_id, id, version, yanked, downloads, published_at
     FROM versions WHERE deleted_at IS NULL AND package_id IN (";

impl Db {
    /// Whether any version (deleted ones included) or pending staged
    /// version names this container.
    pub async fn blob_is_referenced(
        &self,
        sha256: &agentlang_core::digest::Sha256Digest,
    ) -> Result<bool, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>(
                "SELECT (SELECT COUNT(*) FROM versions WHERE sha256 = $1)
                      + (SELECT COUNT(*) FROM staged_versions
                         WHERE sha256 = $1 AND state = 'pending')",
            )
                .bind(sha256)
                .fetch_one(pool)
                .await
                .map(|n| n > 0)
        })
    }
}

/// One live version of a tool with the capabilities its tool.yaml requires
/// (the JSON array, as stored).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ToolPermissions {
    pub normalized_name: String,
    pub version: Version,
    pub permissions: Option<String>,
}

impl Db {
    /// The required capabilities of every live version of the given tools
    /// (normalized names), in one query per [`super::ID_CHUNK`] names: what the
    /// catalog needs to say on which hosts an agent can run.
    pub async fn tool_permissions(
        &self,
        normalized_names: &[String],
    ) -> Result<Vec<ToolPermissions>, sqlx::Error> {
        const FROM: &str = " FROM versions v JOIN packages p ON p.id = v.package_id
             WHERE p.kind = 'tool' AND v.deleted_at IS NULL AND p.normalized_name IN (";
        let mut out = Vec::new();
        for chunk in normalized_names.chunks(super::ID_CHUNK) {
            match self {
                Db::Sqlite { pool, .. } => {
                    let mut query = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                        "SELECT p.normalized_name, v.version,
                                json_extract(v.spec, '$.permissions') AS permissions",
                    );
                    query.push(FROM);
                    let mut names = query.separated(", ");
                    for name in chunk {
                        names.push_bind(name.as_str());
                    }
                    query.push(")");
                    out.extend(
                        query
                            .build_query_as::<ToolPermissions>()
                            .fetch_all(pool)
                            .await?,
                    );
                }
                Db::Postgres(pools) => {
                    let pool = pools.current();
                    let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                        "SELECT p.normalized_name, v.version, v.spec->>'permissions' AS permissions",
                    );
                    query.push(FROM);
                    let mut names = query.separated(", ");
                    for name in chunk {
                        names.push_bind(name.as_str());
                    }
                    query.push(")");
                    out.extend(
                        query
                            .build_query_as::<ToolPermissions>()
                            .fetch_all(pool)
                            .await?,
                    );
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Dialect, Flag, INDEX_VERSIONS, Kind, VERSION_HEADS, package_index_heads, package_index_rows,
    };
    use crate::{DatabaseUrl, Db};
    use agentlang_core::PackageName;

    /// A freshly migrated SQLite database in a file, so its public reads
    /// run on the calling thread.
    async fn file_db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::SqlitePath(dir.path().join("registry.db"));
        let db = Db::connect(&url, std::time::Duration::from_secs(10), 1)
            .await
            .unwrap();
        (dir, db)
    }

    /// SQLite's plan of `statement` (EXPLAIN QUERY PLAN's details, a line
    /// each) on a freshly migrated database.
    async fn sqlite_plan(statement: &str) -> String {
        let (_dir, db) = file_db().await;
        let Db::Sqlite { pool, .. } = &db else {
            unreachable!("a SQLite database")
        };
        let explain = format!("EXPLAIN QUERY PLAN {statement}");
        // Rows of (id, parent, unused, detail).
        let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(explain))
            .fetch_all(pool)
            .await
            .unwrap();
        db.close().await;
        let plan: Vec<String> = plan.into_iter().map(|row| row.3).collect();
        plan.join("\n")
    }

    /// Every column of an index entry's versions is in
    /// `versions_index_entries`, their tool dependencies too (migration
    /// 0049): a random read of a large catalog touches a few index pages
    /// per package, not a table row or a `dependencies` descent per
    /// version. Both forms of the read: one statement through a
    /// connection, and the versions as rows on the calling thread. A
    /// column added to the entry and not to the index fails here.
    #[tokio::test]
    async fn an_index_entry_reads_indexes_alone() {
        let entry = package_index_rows(Dialect::Sqlite, Kind::Tool);
        let heads = package_index_heads(Kind::Tool);
        for statement in [
            format!("{entry}'weather')"),
            format!("{INDEX_VERSIONS}1, 2)"),
        ] {
            let plan = sqlite_plan(&statement).await;
            assert!(
                plan.contains("USING COVERING INDEX versions_index_entries"),
                "versions_index_entries does not cover the entry:\n{plan}"
            );
            assert!(!plan.contains("dependencies"), "{plan}");
            assert!(!plan.contains("SCAN"), "{plan}");
        }
        let plan = sqlite_plan(&format!("{heads}'weather')")).await;
        assert!(
            !plan.contains("SCAN") && !plan.contains("versions"),
            "{plan}"
        );
    }

    /// The calling thread's index read (the versions as rows) and the
    /// pool's (one statement, the versions as JSON) give the same indexes:
    /// versions in SemVer order, a deleted one left out, flags, tool
    /// dependencies, quarantine of a version and of a whole package. 65
    /// names are past the calling thread's longest list, so that read goes
    /// to the pool.
    #[tokio::test]
    async fn an_index_read_on_the_calling_thread_equals_the_pools() {
        let (_dir, db) = file_db().await;
        let Db::Sqlite { pool, .. } = &db else {
            unreachable!("a SQLite database")
        };
        let digest = "ab".repeat(32);
        for statement in [
            "INSERT INTO accounts (id, username, normalized_username, password_hash, created_at)
             VALUES (1, 'alice', 'alice', 'x', 0)",
            "INSERT INTO packages (id, kind, name, normalized_name, description, created_at,
                                   updated_at)
             VALUES (1, 'tool', 'Weather-Tool', 'weather_tool', 'Forecasts', 5, 6),
                    (2, 'tool', 'units', 'units', '', 7, 8),
                    (3, 'agent', 'weather-tool', 'weather_tool', '', 9, 9)",
            "INSERT INTO versions (id, package_id, version, major, minor, patch, prerelease,
                                   sha256, size, manifest, spec, published_by, published_at,
                                   yanked, log_index, publisher_identity, provenance_sha256,
                                   tool_dependencies, deleted_at)
             VALUES (1, 1, '1.10.0', 1, 10, 0, '', $1, 1, '{}', '{}', 1, 100, 0, 4, NULL, NULL,
                     '{}', NULL),
                    (2, 1, '1.2.0', 1, 2, 0, '', $1, 1, '{}', '{}', 1, 101, 1, NULL, 'ci', $1,
                     '{\"Geo-Coder\":\"^1.2\",\"units\":\">=0.3, <2\"}', NULL),
                    (3, 1, '2.0.0-rc.10', 2, 0, 0, 'rc.10', $1, 1, '{}', '{}', 1, 102, 0, 6,
                     NULL, $1, '{}', NULL),
                    (4, 1, '2.0.0-rc.9', 2, 0, 0, 'rc.9', $1, 1, '{}', '{}', 1, 103, 0, 7,
                     NULL, NULL, '{}', NULL),
                    (5, 1, '3.0.0', 3, 0, 0, '', $1, 1, '{}', '{}', 1, 104, 0, 8, NULL, NULL,
                     '{}', 200),
                    (6, 2, '0.3.0', 0, 3, 0, '', $1, 1, '{}', '{}', 1, 105, 0, 9, NULL, NULL,
                     '{}', NULL),
                    (7, 3, '1.0.0', 1, 0, 0, '', $1, 1, '{}', '{}', 1, 106, 0, 10, NULL, NULL,
                     '{}', NULL)",
            "INSERT INTO statuses (package_id, version_id, status, log_index, changed_at)
             VALUES (1, 4, 'quarantined', 11, 0), (1, 1, 'deprecated', 12, 0),
                    (2, 0, 'quarantined', 13, 0)",
        ] {
            let query = sqlx::query(sqlx::AssertSqlSafe(statement));
            let query = if statement.contains("$1") {
                query.bind(&digest)
            } else {
                query
            };
            query.execute(pool).await.unwrap();
        }
        let name = |n: &str| PackageName::new(n).unwrap();
        let asked = [name("weather-tool"), name("Units"), name("absent")];
        let mut past_the_list = asked.to_vec();
        past_the_list.extend((0..62).map(|i| name(&format!("absent-{i}"))));
        assert_eq!(past_the_list.len(), crate::inline::INLINE_IDS + 1);

        let here = db.package_indexes(Kind::Tool, &asked).await.unwrap();
        let Db::Sqlite {
            inline: Some(inline),
            ..
        } = &db
        else {
            unreachable!("a SQLite database in a file")
        };
        assert_eq!(inline.open_readers(), 1, "not read on the calling thread");
        let pooled = db
            .package_indexes(Kind::Tool, &past_the_list)
            .await
            .unwrap();
        let seen = |indexes: &[super::PackageIndex]| {
            let mut seen: Vec<String> = indexes.iter().map(|i| format!("{i:?}")).collect();
            seen.sort();
            seen
        };
        assert_eq!(seen(&here), seen(&pooled));
        let weather = here
            .iter()
            .find(|index| index.package.id == 1)
            .expect("the tool is indexed");
        let versions: Vec<(String, bool, bool, bool, bool, usize)> = weather
            .versions
            .iter()
            .map(|v| {
                (
                    v.version.to_string(),
                    v.yanked,
                    v.quarantined,
                    v.trusted,
                    v.provenance,
                    v.dependencies.len(),
                )
            })
            .collect();
        assert_eq!(
            versions,
            [
                ("1.2.0".to_owned(), true, false, true, true, 2),
                ("1.10.0".to_owned(), false, false, false, false, 0),
                ("2.0.0-rc.9".to_owned(), false, true, false, false, 0),
                ("2.0.0-rc.10".to_owned(), false, false, false, true, 0),
            ]
        );
        assert!(weather.has_statuses);
        let units = here
            .iter()
            .find(|index| index.package.id == 2)
            .expect("units is indexed");
        assert!(units.versions.iter().all(|v| v.quarantined));
        assert_eq!(here.len(), 2, "the agent of the same name is not a tool");
        db.close().await;
    }

    /// A search result's version heads come from `versions_index_entries`
    /// alone (migration 0046): a page of results reads a few index pages
    /// per package, not 20 table rows. Fails when the heads read a column
    /// the index does not hold.
    #[tokio::test]
    async fn search_heads_read_indexes_alone() {
        let plan = sqlite_plan(&format!("{VERSION_HEADS}1, 2)")).await;
        assert!(
            plan.contains("USING COVERING INDEX versions_index_entries"),
            "versions_index_entries does not cover the heads:\n{plan}"
        );
    }

    /// On SQLite in a file the generation is read on the calling thread,
    /// as the public reads are: the connection of its own is never opened.
    /// It sees a change committed through the pool at once.
    #[tokio::test]
    async fn the_generation_is_read_on_the_calling_thread() {
        let (_dir, db) = file_db().await;
        let own = super::GenerationConnection::default();
        let before = db.registry_generation_on(&own).await.unwrap();
        let Db::Sqlite { pool, .. } = &db else {
            unreachable!("a SQLite database")
        };
        sqlx::query("UPDATE registry_generation SET generation = generation + 1 WHERE id = 1")
            .execute(pool)
            .await
            .unwrap();
        assert_eq!(db.registry_generation_on(&own).await.unwrap(), before + 1);
        assert_eq!(db.registry_generation().await.unwrap(), before + 1);
        let slots: Vec<bool> = own
            .0
            .all()
            .map(|slot| slot.try_lock().unwrap().is_some())
            .collect();
        assert_eq!(slots, Vec::<bool>::new(), "a connection was opened for it");
        db.close().await;
    }

    #[test]
    fn a_flag_reads_either_databases_boolean() {
        let flags: Vec<Flag> = serde_json::from_str("[true, false, 1, 0]").unwrap();
        let read: Vec<bool> = flags.into_iter().map(|f| f.0).collect();
        assert_eq!(read, [true, false, true, false]);
        assert!(serde_json::from_str::<Flag>("\"1\"").is_err());
    }
}
