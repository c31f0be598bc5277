//! Agent Skills discovery: `/.well-known/agent-skills/index.json` lists
//! every skill package's newest release; each entry's `url` is the
//! release's container download under `/api/v1/skills/...`, where skill
//! packages live like any package.

use actix_web::{HttpRequest, HttpResponse, get, web};

use crate::{error::ApiError, state::AppState};
use app::skills::{self, SkillsIndex};

/// The Agent Skills discovery index (schema 0.2.0).
///
/// Every skill package's newest release that is neither yanked nor a
/// prerelease, by name, at most 1,000: an `archive` entry whose `url` is
/// the version's container (a `.tar.gz` whose root is the skill folder)
/// and whose `digest` is `sha256:` and the SHA-256 of exactly those bytes.
#[utoipa::path(
    tag = "skills",
    responses(
        (status = 200, body = SkillsIndex, description = "Every skill's newest release",
         headers(("ETag" = String, description = "The quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
    )
)]
#[get("/.well-known/agent-skills/index.json")]
pub async fn get_skills_index(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let index = skills::skills_index(&state).await?;
    Ok(super::json_with_etag(&req, index.body, &index.etag))
}
