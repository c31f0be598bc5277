//! Liveness, readiness and metrics.

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
#[utoipa::path(tag = "operations", responses((status = 200, body = Health, description = "Alive")))]
#[get("/healthz")]
pub async fn get_healthz() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok" })
}

/// Readiness: the database and the blob store both answer, each within two
/// seconds. The problem's detail names the backend that does not.
#[utoipa::path(
    tag = "operations",
    responses(
        (status = 200, body = Health, description = "Both backends answer"),
        (status = 503, description = "A backend is unreachable: `detail` names which (the database, blob storage, or both)", body = crate::error::Problem, content_type = "application/problem+json",
         headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
#[get("/readyz")]
pub async fn get_readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    app::health::readiness(&state).await.check()?;
    Ok(HttpResponse::Ok().json(Health { status: "ready" }))
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(
    tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain"))
)]
#[get("/metrics")]
pub async fn get_metrics(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let text = state.registry.metrics_text().map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text))
}
