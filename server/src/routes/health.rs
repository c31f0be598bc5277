//! Liveness and readiness.

use actix_web::{HttpResponse, get, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{error::ApiError, state::AppState};

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `ready`.
    pub status: &'static str,
}

/// Liveness: the process answers HTTP.
#[utoipa::path(tag = "operations", responses((status = 200, body = Health)))]
#[get("/healthz")]
pub async fn get_healthz() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok" })
}

/// Readiness: the database and the blob store both answer.
#[utoipa::path(
    tag = "operations",
    responses(
        (status = 200, body = Health),
        (status = 503, description = "A backend is unreachable", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/readyz")]
pub async fn get_readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if let Err(e) = state.db.ping().await {
        tracing::warn!(error = %e, "readiness: database unreachable");
        return Err(ApiError::Unavailable(
            "the database is unreachable".to_owned(),
        ));
    }
    if let Err(e) = state.blobs.check().await {
        tracing::warn!(error = %e, "readiness: blob storage unreachable");
        return Err(ApiError::Unavailable(
            "blob storage is unreachable".to_owned(),
        ));
    }
    Ok(HttpResponse::Ok().json(Health { status: "ready" }))
}
