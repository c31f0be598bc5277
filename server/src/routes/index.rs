//! The index: every live version of one package with its hash, yanked flag
//! and dependency edges, for client-side resolution. Cacheable: a strong
//! `ETag` over the body, and `If-None-Match` answers 304.

use actix_web::{HttpRequest, HttpResponse, get, web};

use crate::{error::ApiError, routes::owners::PackagePath, state::AppState};
use app::packages::{self, PackageIndexView};

/// One package's index.
#[utoipa::path(
    tag = "index",
    params(PackagePath),
    responses(
        (status = 200, body = PackageIndexView, description = "Every live version, oldest first",
         headers(("ETag" = String, description = "Strong: the quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy is current"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/index/{kind}/{name}")]
pub async fn get_index(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let index = packages::index_answer(&state, kind, &name).await?;
    Ok(super::json_with_etag(&req, index.body, &index.etag))
}
