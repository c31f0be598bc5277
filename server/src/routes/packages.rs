//! Packages and versions: records, downloads, yank and unyank.

use actix_web::{
    HttpRequest, HttpResponse, get,
    http::header::{self, HeaderValue},
    post, web,
};
use agentlang_core::{Kind, PackageName, Version};
use futures_util::TryStreamExt;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::{auth::Caller, error::ApiError, routes::owners::PackagePath, state::AppState};
use app::ServiceError;
use app::packages::{self, BlobBody, PackageView, VersionView};

/// Containers never change: a year, immutable.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `/{kind}/{name}/{version}` as it appears in a URL.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct VersionPath {
    /// `agents`, `tools`, `protocols` or `skills`.
    #[param(value_type = super::owners::KindSegment)]
    pub kind: String,
    /// The package name (any spelling: case and `-`/`_` are folded).
    pub name: String,
    /// A SemVer version.
    pub version: String,
}

impl VersionPath {
    /// What cannot name a version is a 404, like a version that does not
    /// exist.
    pub fn parse(&self) -> Result<(Kind, PackageName, Version), ApiError> {
        let (kind, name) = PackagePath {
            kind: self.kind.clone(),
            name: self.name.clone(),
        }
        .parse()?;
        let version = Version::parse(&self.version)
            .map_err(|_| ServiceError::NotFound(format!("{kind} {name} {:?}", self.version)))?;
        Ok((kind, name, version))
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct YankRequest {
    /// Why; shown with the version.
    #[serde(default)]
    #[schema(example = "leaks the API key in logs")]
    pub reason: Option<String>,
}

/// A package with its versions, newest first.
#[utoipa::path(
    tag = "packages",
    params(
        // `/api/v1/protocols/{name}` is the protocol's catalog view
        // (`get_protocol`), so this route documents only the other kinds.
        ("kind" = RecordKindSegment, Path, description = "`agents`, `tools` or `skills`; a protocol package's record is `GET /api/v1/protocols/{name}`"),
        ("name" = String, Path, description = "The package name (any spelling: case and `-`/`_` are folded)"),
    ),
    responses(
        (status = 200, body = PackageView, description = "The package with its live versions, newest first",
         headers(("ETag" = String, description = "The quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
        (status = 404, description = "No such package", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind:agents|tools|skills}/{name}")]
pub async fn get_package(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<PackagePath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name) = path.parse()?;
    let record = packages::package_record(&state, kind, &name).await?;
    Ok(super::json_with_etag(&req, record.body, &record.etag))
}

/// One version: manifest, parsed spec, dependencies, signer (and whether
/// its key has since been revoked), digest, size, yanked flag, publisher,
/// dates and downloads.
#[utoipa::path(
    tag = "packages",
    params(VersionPath),
    responses(
        (status = 200, body = VersionView, description = "The version",
         headers(("ETag" = String, description = "The quoted SHA-256 of the body"))),
        (status = 304, description = "The client's copy (`If-None-Match`) is current"),
        (status = 404, description = "No such package or version", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/{kind:agents|tools|protocols|skills}/{name}/{version:[0-9][^/]*}")]
pub async fn get_version(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<VersionPath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let record = packages::version_record(&state, kind, &name, &version).await?;
    Ok(super::json_with_etag(&req, record.body, &record.etag))
}

/// The kinds whose package record is `/api/v1/{kind}/{name}`.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum RecordKindSegment {
    Agents,
    Tools,
    Skills,
}

/// A download's query: why the client fetches (see [`download_version`]).
#[derive(Debug, Deserialize)]
pub struct DownloadQuery {
    pub purpose: Option<String>,
}

/// A container's bytes as the document names them (a gzip tar, uploaded
/// and downloaded as raw bytes).
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[expect(dead_code, reason = "a schema for the document, never built")]
pub struct ContainerBytes(Vec<u8>);

/// The container, streamed from object storage. Yanked versions stay
/// downloadable. `ETag` is the quoted SHA-256; `If-None-Match` answers 304
/// (not counted as a download). One `Range` of bytes answers 206 with
/// `Content-Range` (an interrupted download resumes), `If-Range` with the
/// `ETag` keeps it, any other `If-Range` or several ranges answer 200 with
/// all of it, and a range past the end answers 416. Counts reach the
/// records within seconds; a range that starts past byte 0 is a resumption,
/// not a download. Nor is a fetch with `?purpose=inspect`: a client that
/// only looks inside (the CLI's `inspect`, `diff` and `lock --update`
/// reading what pinned tools ask for) says so, and download counts stay
/// what people installed. With S3 storage and `DOWNLOAD_REDIRECT_SECS` set, a
/// `GET` is answered 307 to a presigned URL of the bucket (where a CDN can
/// sit), so the bytes never pass through the registry.
#[utoipa::path(
    tag = "packages",
    params(
        VersionPath,
        ("Range" = Option<String>, Header, description = "One byte range, such as `bytes=0-1023`, `bytes=1024-` or `bytes=-512`"),
        ("If-Range" = Option<String>, Header, description = "The `ETag` the client holds part of; another one answers all of the container"),
        ("If-None-Match" = Option<String>, Header, description = "The `ETag` the client holds all of: 304"),
        ("purpose" = Option<String>, Query, description = "`inspect`: the client only looks inside the container (a trust picture), so the fetch is not counted as a download; any other value counts as usual"),
    ),
    responses(
        (status = 200, description = "The container (gzip tar)", content_type = "application/gzip", body = ContainerBytes,
         headers(
            ("ETag" = String, description = "`\"<sha256 hex>\"`"),
            ("Cache-Control" = String, description = "`public, max-age=31536000, immutable`"),
            ("Content-Disposition" = String, description = "`attachment; filename=\"name@version.agent\"`"),
            ("Accept-Ranges" = String, description = "`bytes`"),
         )),
        (status = 206, description = "The bytes of the one range asked for", content_type = "application/gzip", body = ContainerBytes,
         headers(
            ("Content-Range" = String, description = "`bytes <first>-<last>/<size>`"),
            ("ETag" = String, description = "`\"<sha256 hex>\"`"),
            ("Accept-Ranges" = String, description = "`bytes`"),
         )),
        (status = 304, description = "The client's copy is current"),
        (status = 307, description = "With S3 storage and `DOWNLOAD_REDIRECT_SECS` set: the container is fetched from a presigned URL",
         headers(
            ("Location", description = "A presigned URL of the container, valid for the configured time"),
            ("ETag" = String, description = "`\"<sha256 hex>\"`"),
         )),
        (status = 404, description = "No such package or version", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 410, description = "The version or its package is quarantined (`quarantined`): it cannot be downloaded until an admin lifts the quarantine", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 416, description = "The range is past the end (`range-not-satisfiable`)", body = crate::error::Problem, content_type = "application/problem+json",
         headers(("Content-Range" = String, description = "`bytes */<size>`"))),
    )
)]
#[get("/api/v1/{kind:agents|tools|protocols|skills}/{name}/{version}/download")]
pub async fn download_version(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<VersionPath>,
    query: web::Query<DownloadQuery>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let inspecting = query.purpose.as_deref() == Some("inspect");
    let download = packages::find_download(&state, kind, &name, &version).await?;
    let etag = download.etag.as_str();
    if super::if_none_match(&req, etag) {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .insert_header((header::CACHE_CONTROL, IMMUTABLE))
            .finish());
    }
    let range = requested_range(&req, etag, download.size)?;
    let resumed = range.as_ref().is_some_and(|bytes| bytes.start > 0);
    if !crate::head::asked_head(&req)
        && let Some(url) =
            packages::download_redirect(&state, &download, resumed || inspecting).await?
    {
        return Ok(HttpResponse::TemporaryRedirect()
            .insert_header((header::LOCATION, url))
            .insert_header((header::ETAG, etag))
            // The URL expires: no cache may keep the redirect.
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish());
    }
    let mut response = match &range {
        Some(bytes) => {
            let mut partial = HttpResponse::PartialContent();
            partial.insert_header((
                header::CONTENT_RANGE,
                format!("bytes {}-{}/{}", bytes.start, bytes.end - 1, download.size),
            ));
            partial
        }
        None => HttpResponse::Ok(),
    };
    response
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, IMMUTABLE))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            HeaderValue::from_str(&download.disposition).map_err(ApiError::internal)?,
        ))
        .content_type("application/gzip");
    let len = range
        .as_ref()
        .map_or(download.size, |bytes| bytes.end - bytes.start);
    if crate::head::asked_head(&req) {
        // The same headers (the length as published), no stream opened, no
        // download counted.
        return Ok(response.body(crate::head::HeadBody(len)));
    }
    let body = packages::open_download(&state, &download, range, inspecting).await?;
    Ok(match body {
        BlobBody::Bytes(bytes) => response.body(bytes),
        BlobBody::Stream(stream) => response.no_chunking(len).streaming(stream.map_err(|e| {
            // Headers are sent by now: the client sees a short body.
            tracing::error!(error = %e, "a download stream failed");
            std::io::Error::other(e)
        })),
    })
}

/// The one byte range a download should answer with, as a half-open range;
/// `None` for all of it: no `Range`, one that cannot be read or names
/// several ranges (answering all of it is always allowed), or an `If-Range`
/// other than the current `ETag` (the client's part is of other bytes).
/// A range that starts past the end is 416.
fn requested_range(
    req: &HttpRequest,
    etag: &str,
    size: u64,
) -> Result<Option<std::ops::Range<u64>>, ApiError> {
    use actix_web::http::header::{Header as _, Range};
    if let Some(if_range) = req.headers().get(header::IF_RANGE)
        && if_range.to_str().ok().map(str::trim) != Some(etag)
    {
        return Ok(None);
    }
    let Ok(Range::Bytes(specs)) = Range::parse(req) else {
        return Ok(None);
    };
    let [spec] = specs.as_slice() else {
        return Ok(None);
    };
    match spec.to_satisfiable_range(size) {
        Some((first, last)) => Ok(Some(first..last + 1)),
        None => Err(ServiceError::RangeNotSatisfiable { size }.into()),
    }
}

/// Yanks a version (owners with token scope `yank`): hidden from new
/// resolutions, still downloadable, still honoured by existing lockfiles.
#[utoipa::path(
    tag = "packages",
    params(VersionPath),
    request_body = YankRequest,
    security(("bearer" = ["yank"])),
    responses(
        (status = 200, description = "The version, yanked", body = VersionView),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an owner (`not-owner`), or the token lacks the scope", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package or version", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/{kind}/{name}/{version}/yank")]
pub async fn yank_version(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<VersionPath>,
    body: web::Json<YankRequest>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let reason = body.into_inner().reason.unwrap_or_default();
    let view = packages::set_yanked(&state, &auth, kind, &name, &version, Some(&reason)).await?;
    Ok(HttpResponse::Ok().json(view))
}

/// Unyanks a version (owners with token scope `yank`).
#[utoipa::path(
    tag = "packages",
    params(VersionPath),
    security(("bearer" = ["yank"])),
    responses(
        (status = 200, description = "The version, no longer yanked", body = VersionView),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an owner (`not-owner`), or the token lacks the scope", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such package or version", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/{kind}/{name}/{version}/unyank")]
pub async fn unyank_version(
    state: web::Data<AppState>,
    auth: Caller,
    path: web::Path<VersionPath>,
) -> Result<HttpResponse, ApiError> {
    let (kind, name, version) = path.parse()?;
    let view = packages::set_yanked(&state, &auth, kind, &name, &version, None).await?;
    Ok(HttpResponse::Ok().json(view))
}
