//! The index: every live version of one package with its hash, yanked flag
//! and dependency edges, for client-side resolution. Cacheable: a strong
//! `ETag` over the body, and `If-None-Match` answers 304.

use actix_web::{HttpRequest, HttpResponse, get, web, web::Bytes};

use crate::{
    error::ApiError,
    routes::owners::PackagePath,
    service::packages::{self, PackageIndexView},
    state::AppState,
};

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
    // The document changes only with the registry generation (a publish,
    // yank or deletion), so it is rendered once per generation.
    let cache = &state.index_cache;
    let generation = cache.current_generation(&state.db).await?;
    let normalized = name.normalized();
    let (body, etag) = match cache.index_body(generation, kind, &normalized) {
        Some(cached) => cached,
        None => {
            let index = packages::get_index(&state, kind, &name).await?;
            let body = Bytes::from(serde_json::to_vec(&index).map_err(ApiError::internal)?);
            let etag = super::etag_of(&body);
            cache.put_index_body(generation, kind, normalized, body.clone(), etag.clone());
            (body, etag)
        }
    };
    Ok(super::json_with_etag(&req, body, &etag))
}
