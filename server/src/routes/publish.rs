//! `POST /api/v1/publish`: the body is a container, spooled to a temporary
//! file under a hard size limit and handed to the publish service; or a
//! `multipart/form-data` form of the container and its provenance
//! (docs/provenance.md).

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, http::header, post, web};
use futures_util::{StreamExt, TryStreamExt};

use crate::{auth::Caller, error::ApiError, rate_limit::Client, state::AppState};
use app::ServiceError;
use app::{
    packages::VersionView,
    publish::{self, PublishOutcome, Upload},
};

/// Staged releases: `?stage=true` stores the version staged.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PublishQuery {
    /// `true`: store the version staged, for an owner to approve
    /// (docs/staged-releases.md); answered 202 with the staged record.
    pub stage: Option<bool>,
}

/// After refusing an oversized body, read and discard at most this much
/// more, so an ordinary client sees the 413 instead of a reset connection;
/// past it the connection is closed.
const DRAIN_AFTER_REFUSAL: usize = 8 * 1024 * 1024;

async fn drain(payload: &mut web::Payload) {
    drain_up_to(payload, DRAIN_AFTER_REFUSAL).await;
}

async fn drain_up_to(payload: &mut web::Payload, most: usize) {
    let mut drained = 0;
    while drained < most {
        match payload.next().await {
            Some(Ok(chunk)) => drained += chunk.len(),
            _ => return,
        }
    }
}

fn declared_length(req: &HttpRequest) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Hands the body to `upload`, refusing it as early as possible; a refused
/// body is drained (up to a point) so the client reads the answer.
async fn receive(
    req: &HttpRequest,
    payload: &mut web::Payload,
    upload: &mut Upload,
    limit: u64,
) -> Result<(), ApiError> {
    if declared_length(req).is_some_and(|n| n > limit) {
        drain(payload).await;
        return Err(upload.too_large().into());
    }
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::from_payload(&e))?;
        if let Err(e) = upload.write(chunk).await {
            match e {
                ServiceError::PayloadTooLarge { .. } => drain(payload).await,
                // A container refused before its end: the rest of a body
                // within the limit is read (not stored), so the client
                // sees the reason rather than a reset connection.
                _ => drain_up_to(payload, usize::try_from(limit).unwrap_or(usize::MAX)).await,
            }
            return Err(e.into());
        }
    }
    Ok(())
}

/// The publish form: what `multipart/form-data` carries.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Documents the form; the handler reads it as a stream.
pub struct PublishForm {
    /// The container bytes.
    #[schema(value_type = String, format = Binary)]
    container: Vec<u8>,
    /// A DSSE envelope (JSON, at most 64 KiB) of an in-toto Statement v1
    /// whose subject is the container's SHA-256, signed by a registered key
    /// of the publisher (docs/provenance.md).
    #[schema(value_type = Option<String>, format = Binary)]
    provenance: Option<Vec<u8>>,
}

/// Parts a publish form may have: the container and the provenance.
const MAX_FORM_PARTS: usize = 2;

fn is_form(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

/// Reads a publish form: the `container` part streams into `upload` as a
/// plain body would, the `provenance` part is read whole within its bound.
async fn receive_form(
    req: &HttpRequest,
    payload: web::Payload,
    publishing: &mut publish::Publishing,
) -> Result<(), ApiError> {
    let limit = publishing.limit;
    let overhead = (app::provenance::MAX_ENVELOPE_BYTES + 16 * 1024) as u64;
    let mut payload = payload;
    if declared_length(req).is_some_and(|n| n > limit + overhead) {
        drain(&mut payload).await;
        return Err(publishing.upload.too_large().into());
    }
    let malformed = |e: actix_multipart::MultipartError| {
        ApiError::BadRequest(format!("cannot read the publish form: {e}"))
    };
    let mut form = Multipart::new(req.headers(), payload);
    let (mut parts, mut container) = (0, false);
    while let Some(mut part) = form.try_next().await.map_err(malformed)? {
        parts += 1;
        if parts > MAX_FORM_PARTS {
            return Err(ApiError::BadRequest(format!(
                "the publish form has more than {MAX_FORM_PARTS} parts"
            )));
        }
        match part.name() {
            Some("container") if !container => {
                container = true;
                while let Some(chunk) = part.try_next().await.map_err(malformed)? {
                    publishing.upload.write(chunk).await?;
                }
            }
            Some("provenance") if publishing.provenance.is_none() => {
                let mut envelope = Vec::new();
                while let Some(chunk) = part.try_next().await.map_err(malformed)? {
                    if envelope.len() + chunk.len() > app::provenance::MAX_ENVELOPE_BYTES {
                        return Err(ServiceError::ProvenanceInvalid(format!(
                            "the provenance part is larger than {} bytes",
                            app::provenance::MAX_ENVELOPE_BYTES
                        ))
                        .into());
                    }
                    envelope.extend_from_slice(&chunk);
                }
                publishing.provenance = Some(envelope);
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unexpected part {:?} in the publish form: it takes one `container` and at most one `provenance`",
                    other.unwrap_or("")
                )));
            }
        }
    }
    if !container {
        return Err(ApiError::BadRequest(
            "the publish form has no `container` part".to_owned(),
        ));
    }
    Ok(())
}

/// Publishes a container (`.agent` or `.tool`).
///
/// The container must pass every check of the format (structure, sizes,
/// hashes), be signed by a registered, unrevoked key of the caller, and be
/// for a package the caller owns (or a new one, which the caller then owns).
/// The token needs the `publish` scope and must admit the package name.
///
/// A version is never overwritten: publishing an existing version answers
/// 409 `version-exists`, except when the bytes are identical to what was
/// published, which answers 200 with the existing record, so a client may
/// safely retry a publish whose response it lost.
///
/// The package is validated whole, by the same function `agentlang
/// validate` and `agentlang build` use (agent.yaml, subagents, prompt.yaml,
/// skills, ux.yaml, crew paths, cross-file references; tool.yaml and the
/// files it names): `validation-failed` lists every problem, each field
/// error with its `file` and `path`.
///
/// Every agent must carry an agent.lock that tells the truth, judged by the
/// function `agentlang validate`, `build`, `install` and `verify` call,
/// each kind of failure with its own problem type and one field error per
/// tool, model or file: `lock-missing` (no lock), `lock-files-mismatch`
/// (`files.<path>` does not hash its member, names no member, or a member
/// other than agent.lock and the subagents has no entry; the plaintext
/// hash of an encrypted prompt cannot be checked and is accepted),
/// `lock-agents-mismatch` (`agents` does not pin the co-located subagents
/// by hash), `lock-models-undeclared` (`models` names a model no agent in
/// the package declares), `lock-models-missing` (a declared model is not
/// in `models`), `lock-mismatch` (a pin this registry
/// does not hold, or with another hash), `lock-unpinned` (a requirement of
/// the agent, a subagent or a pinned tool has no pin), `lock-unsatisfied`
/// (a pin does not satisfy its requirement), `lock-unrelated` (a pin no
/// requirement leads to) and `lock-yanked` (a yanked version the previous
/// version's lock did not pin).
///
/// Other refusals: `container-invalid` (the format error in `detail`),
/// `signature-invalid`, `unknown-key`, `key-revoked`, `not-owner`,
/// `name-taken` (a look-alike of an existing name; `detail` names its
/// spelling), `version-exists`, `validation-failed` (also for unknown tool
/// dependencies) and `payload-too-large`.
///
/// Provenance (docs/provenance.md): sent as `multipart/form-data` with the
/// parts `container` and `provenance` (a DSSE envelope, at most 64 KiB),
/// the envelope must verify with a registered, unrevoked key of the
/// publisher and name the container's SHA-256 (`provenance-invalid`
/// otherwise); it is stored, its SHA-256 logged with the publish, and
/// served at `GET /api/v1/{kind}/{name}/{version}/provenance`. A publish
/// through trusted publishing without one gets one made and signed by the
/// registry from the identity it checked.
#[utoipa::path(
    tag = "publish",
    params(PublishQuery),
    request_body(description = "The container bytes, or a form of the container and its provenance", content(
        (super::packages::ContainerBytes = "application/octet-stream"),
        (PublishForm = "multipart/form-data"),
    )),
    security(("bearer" = ["publish"])),
    responses(
        (status = 201, description = "Published", body = VersionView),
        (status = 200, description = "These exact bytes were already published as this version", body = VersionView),
        (status = 202, description = "Staged (`?stage=true`): stored for an owner to approve; `Location` is the staged record", body = app::staging::StagedView),
        (status = 400, description = "A malformed publish form (`malformed-request`): a part other than `container` and `provenance`, or no `container`", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not-owner`, or the token lacks the scope or the package, or the package requires a second factor and the token was not minted with one (`two-factor-required`), or the package takes only staged versions and this publish is not staged (`staging-required`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "`version-exists`, `name-taken`, or a staged version holds the number (`version-staged`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload-too-large`", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "`container-invalid`, `signature-invalid`, `unknown-key`, `key-revoked`, `validation-failed`, `lock-missing`, `lock-files-mismatch`, `lock-agents-mismatch`, `lock-models-undeclared`, `lock-models-missing`, `lock-mismatch`, `lock-unpinned`, `lock-unsatisfied`, `lock-unrelated`, `lock-yanked` or `provenance-invalid`", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many publishes", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/publish")]
pub async fn publish_version(
    req: HttpRequest,
    state: web::Data<AppState>,
    Client(client): Client,
    auth: Caller,
    query: web::Query<PublishQuery>,
    mut payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    // Refuse what needs no body before reading one.
    let mut publishing = publish::begin_publish(&state, &auth, &client).await?;
    publishing.stage = query.stage.unwrap_or(false);
    let limit = publishing.limit;
    let received = if is_form(&req) {
        receive_form(&req, payload, &mut publishing).await
    } else {
        receive(&req, &mut payload, &mut publishing.upload, limit).await
    };
    if let Err(e) = received {
        // The spool file is gone before the answer is.
        publishing.upload.abandon().await;
        return Err(e);
    }
    let (mut response, view) = match publish::complete_publish(&state, &auth, publishing).await? {
        PublishOutcome::Created(view) => (HttpResponse::Created(), view),
        PublishOutcome::Unchanged(view) => (HttpResponse::Ok(), view),
        PublishOutcome::Staged(staged) => {
            return Ok(HttpResponse::Accepted()
                .insert_header((header::LOCATION, staged.location.clone()))
                .json(staged));
        }
    };
    let location = format!(
        "/api/v1/{}/{}/{}",
        view.kind.plural(),
        view.name,
        view.version
    );
    Ok(response
        .insert_header((header::LOCATION, location))
        .json(view))
}
