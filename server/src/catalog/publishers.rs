//! `/publishers/{name}`: an account's packages and signing keys.

use actix_web::{HttpResponse, web};
use agentlang_web::{
    model::{KeySummary, PublisherView},
    pages::PublisherPage,
};

use super::{CatalogError, html, search::summaries, session::MaybeSession, views::timestamp};
use crate::{common::names::Username, db::keys::SigningKeyRecord, state::AppState};

/// Packages a publisher page lists at most: the page's cost is bounded
/// whatever one account owns.
const MAX_PACKAGES_SHOWN: i64 = 500;

pub fn key_summary(key: SigningKeyRecord) -> KeySummary {
    KeySummary {
        key_id: key.key_id,
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
    let account = state
        .db
        .find_account(&username)
        .await?
        .ok_or(CatalogError::NotFound)?;
    let packages = state
        .db
        .owned_package_listings(account.id, MAX_PACKAGES_SHOWN)
        .await?;
    let keys = state.db.account_signing_keys(account.id).await?;
    html(&PublisherPage {
        chrome: session.chrome(),
        publisher: PublisherView {
            name: account.username,
            joined_at: timestamp(account.created_at),
        },
        packages: summaries(&state, packages).await?,
        keys: keys.into_iter().map(key_summary).collect(),
    })
}
