//! Security advisories in the OSV format (docs/advisories.md): publish,
//! update or withdraw one (`POST`, the OSV document as the body), read
//! them one at a time, in pages or all at once (osv.dev's `all.zip`), and
//! audit an agent.lock against them. The rules are [`app::advisories`]'.

use actix_web::{HttpRequest, HttpResponse, get, http::header, post, web};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

use crate::{auth::Caller, error::ApiError, state::AppState};
use app::{ServiceError, advisories};

/// What a publish, update or withdrawal wrote.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdvisoryWritten {
    /// The advisory's id (assigned by the registry when posted without one).
    #[schema(example = "x_AGENTLANG-2026-0001")]
    pub id: String,
    /// The document's `modified`.
    pub modified: String,
    /// The document's `withdrawn`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<String>,
    /// Hex SHA-256 of the document as `GET /api/v1/advisories/{id}` serves
    /// it (the log entry carries the same).
    pub sha256: String,
    /// The transparency-log entry of this change.
    pub log: LogRef,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LogRef {
    pub index: i64,
}

/// A page of advisories, or an audit's answer: OSV documents as served.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdvisoryList {
    /// OSV documents, in id order.
    #[schema(value_type = Vec<Object>)]
    pub advisories: Vec<Box<RawValue>>,
    /// The `after` of the next page, when there may be one (listing only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only advisories naming this package, `<kind>/<name>`.
    #[param(example = "tool/web_fetch")]
    pub package: Option<String>,
    /// The id after which the page starts (the previous page's `next`).
    pub after: Option<String>,
    /// Advisories per page: 1 to 50, 20 when absent.
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct AdvisoryPath {
    /// The advisory's id.
    #[param(example = "x_AGENTLANG-2026-0001")]
    pub id: String,
}

fn documents(rows: Vec<advisories::StoredAdvisory>) -> Result<Vec<Box<RawValue>>, ApiError> {
    rows.into_iter()
        .map(|row| {
            RawValue::from_string(row.document)
                .map_err(|e| ApiError::from(ServiceError::internal(e)))
        })
        .collect()
}

fn json_bytes(value: &impl Serialize) -> Result<Bytes, ApiError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| ServiceError::internal(e).into())
}

/// Publishes an OSV advisory, or updates or withdraws the stored one of
/// its id (a newer `modified`; `withdrawn` withdraws). Admins (token scope
/// `admin`) for any package; owners (token scope `yank`) for advisories
/// naming only packages they own.
#[utoipa::path(
    tag = "advisories",
    request_body(content = Object, content_type = "application/json", description = "One OSV advisory (at most 64 KiB): `id` absent or `x_AGENTLANG-NEW` to have the registry assign one; each `affected[].database_specific.package` names a package as `<kind>/<name>`; `database_specific.severity` is its level"),
    security(("bearer" = ["yank"]), ("bearer" = ["admin"])),
    responses(
        (status = 201, description = "Published", body = AdvisoryWritten,
         headers(("Location" = String, description = "The advisory's URL"))),
        (status = 200, description = "The stored advisory of this id, updated or withdrawn", body = AdvisoryWritten),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not-owner` of a package the advisory names (or names now), or the token lacks the scope or the package", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "`conflict`: the stored advisory's `modified` is as new or newer", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload-too-large`", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "`validation-failed`: not valid OSV, or against the registry's rules, each problem at its path (`affected[0].ranges[0].events[1]`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many changes", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/advisories")]
pub async fn publish_advisory(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Caller,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = super::read_body(&req, payload, advisories::MAX_DOCUMENT_BYTES).await?;
    let written = advisories::publish_advisory(&state, &auth, &body).await?;
    let answer = AdvisoryWritten {
        id: written.id.to_string(),
        modified: written.modified,
        withdrawn: written.withdrawn,
        sha256: written.sha256.to_hex(),
        log: LogRef {
            index: written.log_index,
        },
    };
    Ok(if written.created {
        HttpResponse::Created()
            .insert_header((
                header::LOCATION,
                format!("/api/v1/advisories/{}", answer.id),
            ))
            .json(answer)
    } else {
        HttpResponse::Ok().json(answer)
    })
}

/// Advisories in id order, withdrawn ones included (they say so), in
/// pages; of one package when asked.
#[utoipa::path(
    tag = "advisories",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of OSV documents", body = AdvisoryList,
         headers(("ETag" = String, description = "Strong: the quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy is current"),
        (status = 422, description = "`validation-failed`: a `package`, `after` or `limit` that cannot be", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/advisories")]
pub async fn list_advisories(
    req: HttpRequest,
    state: web::Data<AppState>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    let page = advisories::list_advisories(
        &state,
        query.package.as_deref(),
        query.after.as_deref(),
        query.limit,
    )
    .await?;
    let body = json_bytes(&AdvisoryList {
        advisories: documents(page.advisories)?,
        next: page.next,
    })?;
    let etag = super::etag_of(&body);
    Ok(super::json_with_etag(&req, body, &etag))
}

/// Every advisory, withdrawn ones included, as a zip archive of
/// `<id>.json` OSV documents (osv.dev's `all.zip` shape, which OSV
/// mirrors and osv-scanner's offline database read).
#[utoipa::path(
    tag = "advisories",
    responses(
        (status = 200, description = "A zip archive of `<id>.json` files", content_type = "application/zip", body = Vec<u8>,
         headers(("ETag" = String, description = "Strong: the quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy is current"),
    )
)]
#[get("/api/v1/advisories/all.zip")]
pub async fn export_advisories(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let zip = advisories::export_zip(&state).await?;
    let etag = super::etag_of(&zip);
    let current = super::if_none_match(&req, &etag);
    let mut response = if current {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, "public, no-cache"));
    if current {
        return Ok(response.finish());
    }
    Ok(response
        .content_type("application/zip")
        .insert_header((
            header::CONTENT_DISPOSITION,
            "attachment; filename=\"all.zip\"",
        ))
        .body(zip))
}

/// One advisory: the OSV document exactly as stored (its SHA-256 is the
/// one its log entry names).
#[utoipa::path(
    tag = "advisories",
    params(AdvisoryPath),
    responses(
        (status = 200, description = "The OSV document", body = Object,
         headers(("ETag" = String, description = "Strong: the quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy is current"),
        (status = 404, description = "No such advisory", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/advisories/{id}")]
pub async fn get_advisory(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<AdvisoryPath>,
) -> Result<HttpResponse, ApiError> {
    let row = advisories::get_advisory(&state, &path.id).await?;
    let etag = format!("\"{}\"", row.sha256.to_hex());
    Ok(super::json_with_etag(
        &req,
        Bytes::from(row.document),
        &etag,
    ))
}

/// Audits an agent.lock (the file's text as the body): the advisories, not
/// withdrawn, that affect any version it pins (tools, skills, protocol
/// packages), each once.
#[utoipa::path(
    tag = "advisories",
    request_body(content = String, content_type = "application/yaml", description = "An agent.lock file (at most 256 KiB)"),
    responses(
        (status = 200, description = "The advisories affecting its pins", body = AdvisoryList),
        (status = 413, description = "`payload-too-large`", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "`validation-failed`: not an agent.lock", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many requests", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/audit")]
pub async fn audit_lock(
    req: HttpRequest,
    state: web::Data<AppState>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = super::read_body(&req, payload, advisories::MAX_AUDIT_BYTES).await?;
    let rows = advisories::audit(&state, &body).await?;
    Ok(HttpResponse::Ok().json(AdvisoryList {
        advisories: documents(rows)?,
        next: None,
    }))
}
