//! `/protocols/{name}[/{version}]`: a protocol of the registry's catalog
//! or a published custom protocol, with every version's status.

use actix_web::{HttpResponse, web};
use agentlang_core::{Kind, Version, protocols::ProtocolSource};
use agentlang_web::pages::{ProtocolDefinitionView, ProtocolPage, ProtocolVersionRow};
use serde_json::Value;

use super::{CatalogError, html, packages::load, session::MaybeSession, views::owner_view};
use app::{ServiceError, protocols};

use crate::state::AppState;

fn definition(version: Version, spec: &Value) -> Option<ProtocolDefinitionView> {
    let schema = spec.get("schema")?;
    let text = |k: &str| schema.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(ProtocolDefinitionView {
        version,
        message_format: text("message_format")?,
        transport: text("transport")?,
        auth: text("auth")?,
    })
}

async fn page(
    state: &AppState,
    session: &MaybeSession,
    name: &str,
    version: Option<&Version>,
) -> Result<ProtocolPage, CatalogError> {
    let info = match protocols::get_protocol(state, name).await {
        Ok(info) => info,
        Err(ServiceError::NotFound(_)) => return Err(CatalogError::NotFound),
        Err(e) => return Err(CatalogError::internal(e)),
    };
    let is_package = info.source == ProtocolSource::Package;
    if version.is_some() && !is_package {
        // Catalog protocols have no per-version pages.
        return Err(CatalogError::NotFound);
    }
    let (definition, owners) = if is_package {
        let loaded = load(state, Kind::Protocol, name).await?;
        let v = loaded.pick(version)?;
        let owners = loaded.page.owners.iter().map(owner_view).collect();
        (definition(v.version.clone(), &v.spec.0), owners)
    } else {
        (None, Vec::new())
    };
    Ok(ProtocolPage {
        chrome: session.chrome(),
        name: info.name,
        is_package,
        description: info.description,
        versions: info
            .versions
            .into_iter()
            .map(|v| ProtocolVersionRow {
                version: v.version,
                status: v.status,
                successor: v.successor,
                message: v.message,
            })
            .collect(),
        definition,
        owners,
    })
}

/// `GET /protocols/{name}`.
pub async fn protocol(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    html(&page(&state, &session, &path, None).await?)
}

/// `GET /protocols/{name}/{version}`: a published protocol's version.
pub async fn protocol_version(
    state: web::Data<AppState>,
    session: MaybeSession,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, CatalogError> {
    let (name, version) = path.into_inner();
    let version = Version::parse(&version).map_err(|_| CatalogError::NotFound)?;
    html(&page(&state, &session, &name, Some(&version)).await?)
}
