//! `/static/{file}`: the stylesheet and script compiled into the binary.
//!
//! The templates link fixed paths (`/static/style.css`), so the files are not
//! fingerprinted; they carry a strong `ETag` (SHA-256 of the body) and may be
//! cached for a day, then revalidated with `If-None-Match` (304).

use std::{collections::HashMap, sync::OnceLock};

use actix_web::{
    HttpRequest, HttpResponse,
    http::header::{self, HeaderValue},
    web,
};
use agentlang_web::assets;
use sha2::{Digest, Sha256};

use super::CatalogError;

/// A day fresh, then a week served stale while revalidating.
pub const ASSET_CACHE_CONTROL: &str = "public, max-age=86400, stale-while-revalidate=604800";

/// Each asset's quoted ETag, computed once.
fn etag(path: &'static str, body: &'static str) -> &'static str {
    static ETAGS: OnceLock<HashMap<&'static str, String>> = OnceLock::new();
    ETAGS
        .get_or_init(|| {
            assets::ALL
                .iter()
                .map(|a| {
                    (
                        a.path,
                        format!("\"{}\"", hex::encode(Sha256::digest(a.body))),
                    )
                })
                .collect()
        })
        .get(path)
        .map_or(body, String::as_str)
}

/// Whether an `If-None-Match` list names `tag` (or is `*`).
fn matches(if_none_match: &str, tag: &str) -> bool {
    if_none_match
        .split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == tag || t == "*")
}

pub async fn static_file(
    req: HttpRequest,
    file: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let asset = assets::lookup(&format!("/static/{file}")).ok_or(CatalogError::NotFound)?;
    let tag = etag(asset.path, asset.body);
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| matches(v, tag));
    let mut response = if fresh {
        HttpResponse::NotModified().finish()
    } else {
        HttpResponse::Ok()
            .content_type(asset.content_type)
            .body(asset.body)
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(ASSET_CACHE_CONTROL),
    );
    headers.insert(
        header::ETAG,
        HeaderValue::from_str(tag).map_err(CatalogError::internal)?,
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_lists_are_read() {
        assert!(matches("\"abc\"", "\"abc\""));
        assert!(matches("\"x\", W/\"abc\"", "\"abc\""));
        assert!(matches("*", "\"abc\""));
        assert!(!matches("\"abd\"", "\"abc\""));
    }

    #[test]
    fn every_asset_has_a_sha256_etag() {
        for asset in assets::ALL {
            let tag = etag(asset.path, asset.body);
            assert_eq!(tag.len(), 66, "{}", asset.path);
        }
    }
}
