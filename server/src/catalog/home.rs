//! The home page and `/docs`.

use actix_web::{HttpResponse, web};
use agentlang_web::{
    model::RegistryStats,
    pages::{DocsPage, HomePage},
};

use super::{CatalogError, html, search::summaries, session::MaybeSession};
use crate::state::AppState;

/// Entries in each home page list.
const HOME_LIST_LEN: i64 = 6;

/// `GET /`: search box, counts, recently published, most downloaded.
pub async fn home(
    state: web::Data<AppState>,
    session: MaybeSession,
) -> Result<HttpResponse, CatalogError> {
    let counts = state.db.catalog_counts().await?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let recent = state.db.recently_published(HOME_LIST_LEN).await?;
    let popular = state.db.most_downloaded(HOME_LIST_LEN).await?;
    html(&HomePage {
        chrome: session.chrome(),
        stats: RegistryStats {
            agents: count(counts.agents),
            tools: count(counts.tools),
            versions: count(counts.versions),
            publishers: count(counts.publishers),
        },
        recently_published: summaries(&state, recent).await?,
        most_downloaded: summaries(&state, popular).await?,
    })
}

/// `GET /docs`: publishing, installing and verifying, with this registry's
/// URL in the commands.
pub async fn docs(
    state: web::Data<AppState>,
    session: MaybeSession,
) -> Result<HttpResponse, CatalogError> {
    html(&DocsPage {
        chrome: session.chrome(),
        registry_url: state.public_url.clone(),
        pages: super::docs::page_list(),
    })
}
