//! `/interfaces/{name}`: an abstract tool interface and the tools that
//! provide it (`app::interfaces`).

use actix_web::{HttpResponse, web};
use agentlang_web::pages::{InterfacePage, InterfaceProviderRow};
use app::ServiceError;

use super::{CatalogError, html, session::MaybeSession};
use crate::state::AppState;

/// `GET /interfaces/{name}`.
pub async fn interface(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let info = match app::interfaces::interface(&state.registry, &path).await {
        Ok(info) => info,
        Err(ServiceError::NotFound(_)) => return Err(CatalogError::NotFound),
        Err(e) => return Err(CatalogError::internal(e)),
    };
    html(&InterfacePage {
        chrome: session.chrome(),
        name: info.name,
        providers: info
            .providers
            .into_iter()
            .map(|p| InterfaceProviderRow {
                tool: p.tool,
                newest: p.newest,
            })
            .collect(),
        default_pick: info.default_pick.map(|p| p.tool),
    })
}
