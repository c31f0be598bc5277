//! What the route modules share: a request body read whole within a
//! limit, and JSON answered with its `ETag`.

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use app::ServiceError;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use crate::error::ApiError;

/// A request body read whole, refused with 413 past `limit` bytes: at once
/// when `Content-Length` says so, else as soon as the bytes do (chunked
/// bodies). Any content type is read; callers check it.
pub async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ServiceError::PayloadTooLarge { limit }.into());
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::from_payload(&e))?;
        if body.len() + chunk.len() > limit {
            return Err(ServiceError::PayloadTooLarge { limit }.into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// A JSON body read whole within `limit` ([`read_body`]): 400
/// `malformed-request` when it is not the object `T` describes.
pub async fn read_json<T: serde::de::DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
) -> Result<T, ApiError> {
    let raw = read_body(req, payload, limit).await?;
    serde_json::from_slice(&raw).map_err(|e| ServiceError::Malformed(e.to_string()).into())
}

pub use crate::conditional::{etag_of, if_none_match};

/// A JSON answer that may change (a record with its download count), with
/// its `ETag` and `Cache-Control: no-cache`: a client or cache revalidates
/// every time and gets 304 without the body while it is current.
pub fn json_with_etag(req: &HttpRequest, body: Bytes, etag: &str) -> HttpResponse {
    let mut response = if if_none_match(req, etag) {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, "public, no-cache"));
    if if_none_match(req, etag) {
        return response.finish();
    }
    response.content_type("application/json").body(body)
}
