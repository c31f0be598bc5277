//! The Agent Skills discovery index (`/.well-known/agent-skills/index.json`,
//! schema 0.2.0): every skill package's newest release as an `archive`
//! entry whose `url` is the version's container download. A container is a
//! gzip tar whose root is the skill folder (with the registry's
//! `manifest.json` and `signature.sig` beside `SKILL.md`), so the entry's
//! `digest` is the container's SHA-256, the very bytes the `url` serves.

use agentlang_core::{Kind, PackageName, Version, digest::Sha256Digest};
use serde::Serialize;
use store::packages::VersionRecord;

use crate::{
    Registry, ServiceError,
    cache::{Rendered, RenderedKey},
    catalog::PackagePage,
};

/// The discovery schema the index follows.
pub const DISCOVERY_SCHEMA: &str = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

/// Most skills one index lists (by name): the answer is built in one query
/// and kept at the registry generation, so it stays small and cheap.
pub const MAX_INDEXED_SKILLS: i64 = 1_000;

/// `GET /.well-known/agent-skills/index.json`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillsIndex {
    #[serde(rename = "$schema")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            rename = "$schema",
            example = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
        )
    )]
    pub schema: &'static str,
    pub skills: Vec<SkillEntry>,
}

/// One skill: its newest release that is neither yanked nor a prerelease.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillEntry {
    #[cfg_attr(feature = "openapi", schema(example = "pdf-tools"))]
    pub name: String,
    /// Always `archive`: a `.tar.gz` whose root is the skill folder.
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(rename = "type", example = "archive"))]
    pub kind: &'static str,
    pub description: String,
    /// The version's container download, a path on this registry.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "/api/v1/skills/pdf-tools/1.2.0/download")
    )]
    pub url: String,
    /// `sha256:` and the hex SHA-256 of what `url` serves.
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        )
    )]
    pub digest: String,
    /// The release the entry is (an AgentLang addition; clients ignore
    /// fields they do not know).
    #[cfg_attr(feature = "openapi", schema(example = "1.2.0"))]
    pub version: String,
}

/// The index as sent, kept until a skill is published, yanked or deleted.
pub async fn skills_index(registry: &Registry) -> Result<Rendered, ServiceError> {
    registry
        .rendered(RenderedKey::SkillsIndex, || async {
            Rendered::json(&list_skills(registry).await?)
        })
        .await
}

/// Every skill's newest release, by name, at most [`MAX_INDEXED_SKILLS`].
pub async fn list_skills(registry: &Registry) -> Result<SkillsIndex, ServiceError> {
    let releases = registry
        .db
        .newest_skill_releases(MAX_INDEXED_SKILLS)
        .await?;
    let skills = releases
        .into_iter()
        .map(|r| entry(&r.name, &r.version, &r.sha256, r.description))
        .collect();
    Ok(SkillsIndex {
        schema: DISCOVERY_SCHEMA,
        skills,
    })
}

/// The index's entry for one version, the one place its `url` and
/// `digest` are spelled.
fn entry(
    name: &PackageName,
    version: &Version,
    sha256: &Sha256Digest,
    description: String,
) -> SkillEntry {
    SkillEntry {
        url: format!(
            "/api/v1/{}/{}/{version}/download",
            Kind::Skill.plural(),
            name.as_str(),
        ),
        digest: sha256.to_prefixed(),
        name: name.as_str().to_owned(),
        kind: "archive",
        description,
        version: version.to_string(),
    }
}

/// What a skill version's page says of the discovery index: the entry the
/// index has, or would have, for `shown`, and whether it lists `shown` now.
/// It lists a skill's newest release that is neither yanked nor a
/// prerelease, as [`list_skills`] reads it from the database.
pub fn catalog_entry(page: &PackagePage, shown: &VersionRecord) -> (SkillEntry, bool) {
    let indexed = page
        .versions
        .iter()
        .filter(|v| !v.yanked && !v.version.is_prerelease())
        .map(|v| &v.version)
        .max();
    let description = shown
        .spec
        .0
        .get("description")
        .and_then(|d| d.as_str())
        .unwrap_or_default()
        .to_owned();
    (
        entry(
            &page.package.name,
            &shown.version,
            &shown.sha256,
            description,
        ),
        indexed == Some(&shown.version),
    )
}
