//! The deterministic prompt-quality report stored with each agent version
//! (computed at publish; see `service::quality`).

use actix_web::{HttpResponse, get, web};

use app::quality;

use crate::{error::ApiError, routes::packages::VersionPath, state::AppState};

/// One agent version's quality report: findings with rule, severity, file,
/// path, message and hint; the rules skipped (an encrypted prompt's text is
/// never seen by the registry) and the prompt's estimated size.
#[utoipa::path(
    tag = "packages",
    params(VersionPath),
    responses(
        (status = 200, description = "The report", body = Object),
        (status = 404, description = "No such agent version, or it has no report (published before reports existed)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind}/{name}/{version}/quality")]
pub async fn get_quality_report(
    state: web::Data<AppState>,
    path: web::Path<VersionPath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let report = quality::report_of(&state, kind, &name, &version).await?;
    Ok(HttpResponse::Ok().json(report))
}
