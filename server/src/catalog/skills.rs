//! Skill package pages: `/skills/{name}` (the version that represents the
//! package) and `/skills/{name}/{version}`, built as tool pages are, from
//! the same read model. The SKILL.md body comes from the version's stored
//! extras (kept at publish), so no page reads a container.

use actix_web::{HttpRequest, HttpResponse, web};
use agentlang_core::{Kind, PackageName, Version};
use agentlang_web::{model::*, pages::SkillPage};
use serde_json::Value;

use super::{
    CatalogError,
    packages::{
        artifact, extras, owner_controls, page_key, parse_version, shared_page, version_page,
    },
    session::MaybeSession,
};
use crate::state::AppState;

/// The frontmatter as stored at publish (the version's spec is the
/// SKILL.md frontmatter as `agentskills::SkillDoc` serializes it), with
/// the body from its extras.
fn skill_view(
    name: &PackageName,
    version: &Version,
    spec: &Value,
    body: Option<String>,
) -> SkillVersionView {
    let text = |key: &str| spec.get(key).and_then(Value::as_str).map(str::to_owned);
    SkillVersionView {
        name: name.clone(),
        version: version.clone(),
        description: text("description").unwrap_or_default(),
        license: text("license"),
        compatibility: text("compatibility"),
        allowed_tools: text("allowed-tools")
            .map(|tools| tools.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default(),
        metadata: spec
            .get("metadata")
            .and_then(Value::as_object)
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default(),
        body_markdown: body,
    }
}

async fn skill_page(
    state: &AppState,
    session: &MaybeSession,
    name: &str,
    version: Option<&Version>,
) -> Result<SkillPage, CatalogError> {
    let (found, loaded) = version_page(state, session, Kind::Skill, name, version).await?;
    let v = found.version();
    let (entry, listed) = app::skills::catalog_entry(&found.page, v);
    let advisories =
        super::advisories::notices(state, Kind::Skill, &loaded.name, &v.version).await?;
    Ok(SkillPage {
        advisories,
        chrome: session.chrome(),
        skill: skill_view(&loaded.name, &v.version, &v.spec.0, extras(v).readme),
        versions: loaded.summaries(),
        artifact: artifact(&found),
        owners: loaded.owners(),
        total_downloads: loaded.total_downloads(),
        owner_controls: owner_controls(&found, session.0.as_ref()),
        index_entry: SkillIndexEntryView {
            url: entry.url,
            digest: entry.digest,
            listed,
        },
    })
}

/// `GET /skills/{name}`.
pub async fn skill_latest(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let key = page_key(Kind::Skill, &path, None)?;
    shared_page(&req, &state, &session, key, async || {
        skill_page(&state, &session, &path, None).await
    })
    .await
}

/// `GET /skills/{name}/{version}`.
pub async fn skill_version(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, CatalogError> {
    let (name, version) = path.into_inner();
    let version = parse_version(&version)?;
    let key = page_key(Kind::Skill, &name, Some(&version))?;
    shared_page(&req, &state, &session, key, async || {
        skill_page(&state, &session, &name, Some(&version)).await
    })
    .await
}
