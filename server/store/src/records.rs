//! What a version record and a package record show, each read in one
//! statement: at 2,000,000 versions almost every read is a package's first,
//! and its cost was the number of statements it ran (each a hand-off to a
//! database worker and back), not the work in them.

use agentlang_core::{
    Kind, PackageName, Username, Version, crypt::PromptKeyId, grants::PromptMode, signing::KeyId,
};

use super::{
    Db,
    dialect::{PACKAGE_VERSION_DETAILS, VERSION_DETAIL},
    inline::{self, InlineRow},
    packages::{PackageRecord, precedence},
    with_pool,
};
use agentlang_core::digest::Sha256Digest;

/// One live version as its record shows it: the row with its signer's key
/// (when registered), its publisher's username and its tool dependencies.
/// The JSON documents are the stored text, to be passed through unparsed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionDetail {
    #[sqlx(rename = "version_id")]
    pub id: i64,
    pub version: Version,
    pub sha256: Sha256Digest,
    pub size: i64,
    /// The signer's key, when it is registered.
    pub signer_key_id: Option<KeyId>,
    /// When that key was revoked (Unix seconds).
    pub signer_revoked_at: Option<i64>,
    /// JSON text: the container's manifest.json.
    pub manifest: String,
    /// JSON text: the parsed agent.yaml or tool.yaml.
    pub spec: String,
    /// JSON text: the parsed agent.lock, agents only.
    pub lockfile: Option<String>,
    pub yanked: bool,
    pub yank_reason: Option<String>,
    /// Username of the account that published it.
    pub publisher: Option<Username>,
    pub published_at: i64,
    pub downloads: i64,
    pub log_index: Option<i64>,
    pub prompt_mode: Option<PromptMode>,
    pub prompt_key_id: Option<PromptKeyId>,
    /// Published through trusted publishing.
    pub trusted: bool,
    /// Has a verified provenance envelope.
    pub provenance: bool,
    /// Whether the package or any of its versions has a status row
    /// (docs/statuses.md): only then are they read.
    pub has_statuses: bool,
    /// JSON text: tool name to requirement.
    pub dependencies: String,
    /// JSON text: what pages show from the container; read for one
    /// version's own record only.
    pub extras: Option<String>,
}

impl InlineRow for VersionDetail {
    const WIDTH: usize = 22;

    fn columns() -> Vec<&'static str> {
        vec![
            "version_id",
            "version",
            "sha256",
            "size",
            "signer_key_id",
            "signer_revoked_at",
            "manifest",
            "spec",
            "lockfile",
            "yanked",
            "yank_reason",
            "publisher",
            "published_at",
            "downloads",
            "log_index",
            "prompt_mode",
            "prompt_key_id",
            "trusted",
            "provenance",
            "has_statuses",
            "dependencies",
            "extras",
        ]
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(at)?,
            version: row.get(at + 1)?,
            sha256: row.get(at + 2)?,
            size: row.get(at + 3)?,
            signer_key_id: row.get(at + 4)?,
            signer_revoked_at: row.get(at + 5)?,
            manifest: row.get(at + 6)?,
            spec: row.get(at + 7)?,
            lockfile: row.get(at + 8)?,
            yanked: row.get(at + 9)?,
            yank_reason: row.get(at + 10)?,
            publisher: row.get(at + 11)?,
            published_at: row.get(at + 12)?,
            downloads: row.get(at + 13)?,
            log_index: row.get(at + 14)?,
            prompt_mode: row.get(at + 15)?,
            prompt_key_id: row.get(at + 16)?,
            trusted: row.get(at + 17)?,
            provenance: row.get(at + 18)?,
            has_statuses: row.get(at + 19)?,
            dependencies: row.get(at + 20)?,
            extras: row.get(at + 21)?,
        })
    }
}

/// A live version with its package.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PackageVersionDetail {
    #[sqlx(flatten)]
    pub package: PackageRecord,
    #[sqlx(flatten)]
    pub version: VersionDetail,
}

impl InlineRow for PackageVersionDetail {
    const WIDTH: usize = PackageRecord::WIDTH + VersionDetail::WIDTH;

    fn columns() -> Vec<&'static str> {
        [PackageRecord::columns(), VersionDetail::columns()].concat()
    }

    fn from_inline(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            package: PackageRecord::from_inline(row, at)?,
            version: VersionDetail::from_inline(row, at + PackageRecord::WIDTH)?,
        })
    }
}

impl Db {
    /// The live version of `name` (any spelling) in `kind` with `version`'s
    /// precedence, with its package: `None` when either does not exist.
    pub async fn version_detail(
        &self,
        kind: Kind,
        name: &PackageName,
        version: &Version,
    ) -> Result<Option<PackageVersionDetail>, sqlx::Error> {
        let (major, minor, patch, pre) = precedence(version);
        let sql = VERSION_DETAIL;
        let inline = self.inline(|connection| {
            let params: [&dyn rusqlite::ToSql; 6] = [
                &kind.as_str(),
                &name.normalized(),
                &major,
                &minor,
                &patch,
                &pre,
            ];
            inline::query_rows::<PackageVersionDetail>(connection, sql, &params)
        });
        if let Some(found) = inline {
            return found.map(|rows| rows.into_iter().next());
        }
        with_pool!(planned self, pool => {
            sqlx::query_as::<_, PackageVersionDetail>(sql)
                .bind(kind.as_str())
                .bind(name.normalized())
                .bind(major)
                .bind(minor)
                .bind(patch)
                .bind(pre)
                .fetch_optional(pool)
                .await
        })
    }

    /// The package's live versions, newest first by SemVer precedence.
    pub async fn version_details(
        &self,
        package_id: i64,
    ) -> Result<Vec<VersionDetail>, sqlx::Error> {
        let sql = PACKAGE_VERSION_DETAILS;
        let inline = self.inline(|connection| {
            inline::query_rows::<VersionDetail>(connection, sql, &[&package_id])
        });
        let mut versions: Vec<VersionDetail> = match inline {
            Some(found) => found?,
            None => with_pool!(planned self, pool => {
                sqlx::query_as::<_, VersionDetail>(sql)
                    .bind(package_id)
                    .fetch_all(pool)
                    .await
            })?,
        };
        // SQL cannot order prerelease identifiers (`rc.10` after `rc.9`).
        versions.sort_by(|a, b| b.version.cmp(&a.version));
        Ok(versions)
    }
}
