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
    let home = app::catalog::home(&state, HOME_LIST_LEN).await?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    html(&HomePage {
        chrome: session.chrome(),
        stats: RegistryStats {
            agents: count(home.counts.agents),
            tools: count(home.counts.tools),
            versions: count(home.counts.versions),
            publishers: count(home.counts.publishers),
        },
        recently_published: summaries(home.recently_published),
        most_downloaded: summaries(home.most_downloaded),
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
        registry_url: state.public_url().to_owned(),
        pages: super::docs::page_list(),
        guide: super::docs::guide().to_owned(),
    })
}
