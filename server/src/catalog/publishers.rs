//! `/publishers/{name}`: an account's packages and signing keys.

use actix_web::{HttpResponse, web};
use agentlang_web::{
    model::{KeySummary, PublisherView},
    pages::PublisherPage,
};

use super::{CatalogError, html, search::summaries, session::MaybeSession, views::timestamp};
use crate::state::AppState;
use agentlang_core::Username;
use app::keys::SigningKeyRecord;

/// Packages a publisher page lists at most: the page's cost is bounded
/// whatever one account owns.
const MAX_PACKAGES_SHOWN: i64 = 500;

pub fn key_summary(key: &SigningKeyRecord) -> KeySummary {
    KeySummary {
        key_id: key.key_id.to_string(),
        created_at: timestamp(key.created_at),
        revoked_at: key.revoked_at.map(timestamp),
    }
}

/// `GET /publishers/{name}` (any spelling of the username).
pub async fn publisher(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let username = Username::parse(&path).map_err(|_| CatalogError::NotFound)?;
    let found = app::catalog::publisher(&state, &username, MAX_PACKAGES_SHOWN)
        .await?
        .ok_or(CatalogError::NotFound)?;
    html(&PublisherPage {
        chrome: session.chrome(),
        publisher: PublisherView {
            name: found.account.username.to_string(),
            joined_at: timestamp(found.account.created_at),
        },
        packages: summaries(found.packages),
        keys: found.keys.iter().map(key_summary).collect(),
    })
}
