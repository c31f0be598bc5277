//! `/keys/{key_id}`: a signing key, its holder and what it signed.

use actix_web::{HttpResponse, web};
use agentlang_core::signing::KeyId;
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
    let found = app::catalog::signed_by(&state, &key_id, MAX_SIGNED_SHOWN)
        .await?
        .ok_or(CatalogError::NotFound)?;
    html(&KeyPage {
        chrome: session.chrome(),
        key: key_summary(&found.key),
        owner: found.holder.map(|u| u.to_string()).unwrap_or_default(),
        signed: found
            .signed
            .into_iter()
            .map(|row| VersionRef {
                kind: row.kind,
                name: row.name,
                version: row.version,
            })
            .collect(),
    })
}
