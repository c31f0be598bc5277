//! `/keys/{key_id}`: a signing key, its holder and what it signed.

use actix_web::{HttpResponse, web};
use agentlang_core::{PackageName, Version, signing::KeyId};
use agentlang_web::{model::VersionRef, pages::KeyPage};

use super::{CatalogError, html, publishers::key_summary, session::MaybeSession};
use crate::state::AppState;

/// Most signed versions listed.
const MAX_SIGNED_SHOWN: i64 = 100;

/// `GET /keys/{key_id}`.
pub async fn key(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let key_id = KeyId::new(path.into_inner()).map_err(|_| CatalogError::NotFound)?;
    let key = state
        .db
        .find_signing_key(&key_id)
        .await?
        .ok_or(CatalogError::NotFound)?;
    let owner = state
        .db
        .account_username(key.account_id)
        .await?
        .unwrap_or_default();
    let signed = state
        .db
        .versions_signed_by(&key.key_id, MAX_SIGNED_SHOWN)
        .await?
        .into_iter()
        .filter_map(|row| {
            Some(VersionRef {
                kind: row.kind.parse().ok()?,
                name: PackageName::new(row.name.as_str()).ok()?,
                version: Version::parse(&row.version).ok()?,
            })
        })
        .collect();
    html(&KeyPage {
        chrome: session.chrome(),
        key: key_summary(key),
        owner,
        signed,
    })
}
