//! `GET /api/v1/{kind}/{name}/{version}/provenance`: a version's provenance
//! (docs/provenance.md), the DSSE envelope exactly as stored.

use actix_web::{HttpRequest, HttpResponse, get, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{error::ApiError, routes::packages::VersionPath, state::AppState};

/// A DSSE envelope (github.com/secure-systems-lab/dsse).
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)] // Documents what is served as stored.
pub struct DsseEnvelope {
    /// `application/vnd.in-toto+json`.
    #[serde(rename = "payloadType")]
    #[schema(example = "application/vnd.in-toto+json")]
    payload_type: String,
    /// Base64 of an in-toto Statement v1 whose subject is the container's
    /// SHA-256.
    payload: String,
    /// One to four signatures over the DSSE pre-authentication encoding.
    signatures: Vec<DsseSignature>,
}

#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct DsseSignature {
    /// The signing key's id: a registered key of the publisher
    /// (`GET /api/v1/keys/{key_id}`) or the registry's
    /// (`/.well-known/jwks.json`).
    keyid: Option<String>,
    /// Base64 of the Ed25519 signature.
    sig: String,
}

/// The version's provenance: an in-toto Statement v1 in a DSSE envelope,
/// whose subject is the container's SHA-256, signed by a registered key of
/// the publisher or, for a version published through trusted publishing
/// without one, by the registry from the identity it checked. Its SHA-256
/// is the `provenance` of the version's publish entry in the transparency
/// log. 404 for a version without provenance.
#[utoipa::path(
    tag = "packages",
    params(VersionPath),
    responses(
        (status = 200, body = DsseEnvelope, description = "The DSSE envelope as stored",
         headers(("ETag" = String, description = "The quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
        (status = 404, description = "No such package or version, or the version has no provenance", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind:agents|tools|protocols|skills}/{name}/{version:[0-9][^/]*}/provenance")]
pub async fn get_provenance(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<VersionPath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let record = app::provenance::get_provenance(&state, kind, &name, &version).await?;
    let etag = super::etag_of(record.envelope.as_bytes());
    Ok(super::json_with_etag(
        &req,
        record.envelope.into_bytes().into(),
        &etag,
    ))
}
