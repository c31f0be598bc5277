//! The protocol catalog: read by anyone, written by admins. A name the
//! catalog does not hold may be a published protocol package (what agents
//! name `custom/<name>`); `GET /api/v1/protocols/{name}` answers for both,
//! with `source` saying which. A protocol package's records, downloads and
//! yanks live under `/api/v1/protocols/{name}/{version}` like any package.

use actix_web::{HttpResponse, get, put, web};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::{auth::Caller, error::ApiError, state::AppState};
use app::protocols::{self, ProtocolInfo, ProtocolList, ProtocolVersionInfo};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutProtocolRequest {
    #[serde(default)]
    #[schema(example = "Agent-to-Agent Protocol")]
    pub description: String,
    /// Every version, each `stable`, `deprecated` (with `successor` and
    /// `message`) or `removed`; at most 200. Successors must be newer
    /// stable versions of the same protocol.
    pub versions: Vec<ProtocolVersionInfo>,
}

/// Lists the catalog's protocols.
#[utoipa::path(tag = "protocols", responses((status = 200, body = ProtocolList, description = "Every protocol of the catalog and every protocol package")))]
#[get("/api/v1/protocols")]
pub async fn list_protocols(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(protocols::list_protocols(&state).await?))
}

/// One protocol: a catalog entry, or a published protocol package.
#[utoipa::path(
    tag = "protocols",
    params(("name" = String, Path, description = "The protocol's name (`a2a`; `acme-sync` for custom/acme-sync)")),
    responses(
        (status = 200, body = ProtocolInfo, description = "The protocol with its versions and their status"),
        (status = 404, description = "No such protocol", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/protocols/{name}")]
pub async fn get_protocol(
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(protocols::get_protocol(&state, &name).await?))
}

/// Creates or replaces a catalog protocol (admins only).
#[utoipa::path(
    tag = "protocols",
    params(("name" = String, Path, description = "The protocol's name")),
    request_body = PutProtocolRequest,
    security(("bearer" = ["admin"])),
    responses(
        (status = 200, description = "Replaced", body = ProtocolInfo),
        (status = 201, description = "Created", body = ProtocolInfo),
        (status = 400, description = "Malformed JSON", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "A protocol package holds the name", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body larger than 64 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/protocols/{name}")]
pub async fn put_protocol(
    state: web::Data<AppState>,
    auth: Caller,
    name: web::Path<String>,
    body: web::Json<PutProtocolRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let (info, created) =
        protocols::put_protocol(&state, &auth, &name, body.description, body.versions).await?;
    let mut response = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(response.json(info))
}
