//! Agents' A2A Agent Cards, signed by the registry: the card of a
//! published agent version, of the newest one not yanked, and the key set
//! the signatures verify with.
//!
//! A card is made from what the version's row already holds (agent.yaml and
//! agent.lock as stored, the skills' descriptions in its extras, the
//! container's digest, signer and log index) and the publisher's username,
//! so no blob is read; `core::a2a` builds and signs it on a blocking
//! thread. The signed bytes are kept at the registry generation like
//! records (`cache::RenderedKey::AgentCard`): only a change to that agent
//! renders (and signs) them again.

use std::collections::BTreeMap;

use agentlang_core::{
    Kind, PackageName, Version,
    a2a::{self, AgentProvider, CardFacts, Jwks, Publication},
};
use bytes::Bytes;

use crate::{
    Registry, ServiceError,
    cache::{Rendered, RenderedKey},
    packages::{self, ContainerExtras, PackageRecord, VersionRecord},
    search,
};

/// Where the registry serves the key set its cards name in `jku`.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// `GET /agents/{name}/{version}/agent-card.json`: the signed card of a
/// version (yanked ones too: a yank changes nothing the card says).
pub async fn version_card(
    registry: &Registry,
    name: &PackageName,
    version: &Version,
) -> Result<Rendered, ServiceError> {
    let key = RenderedKey::AgentCard(name.normalized(), Some(version.clone()));
    registry
        .rendered(key, || async {
            let package = packages::find_package(registry, Kind::Agent, name).await?;
            let record = packages::find_version(registry, &package, version).await?;
            render(registry, &package, record).await
        })
        .await
}

/// `GET /agents/{name}/.well-known/agent-card.json`: the signed card of
/// the newest version not yanked (a release before a prerelease, as the
/// agent's page and `agentlang install` choose).
pub async fn latest_card(
    registry: &Registry,
    name: &PackageName,
) -> Result<Rendered, ServiceError> {
    let key = RenderedKey::AgentCard(name.normalized(), None);
    registry
        .rendered(key, || async {
            let package = packages::find_package(registry, Kind::Agent, name).await?;
            let heads = registry.db.version_heads(&[package.id]).await?;
            let newest = search::representative(&heads)
                .and_then(|r| r.shown)
                .ok_or_else(|| {
                    ServiceError::NotFound(format!(
                        "a version of agent {} that is not yanked",
                        package.name
                    ))
                })?;
            let record = packages::find_version(registry, &package, &newest).await?;
            render(registry, &package, record).await
        })
        .await
}

/// The key set the cards' signatures verify with (`jku`).
pub fn jwks(registry: &Registry) -> Jwks {
    Jwks {
        keys: vec![registry.identity.jwk()],
    }
}

/// The URL of [`jwks`], as cards name it.
pub fn jwks_url(registry: &Registry) -> String {
    format!("{}{JWKS_PATH}", registry.public_url())
}

/// The card's path under the registry's URL.
pub fn card_path(name: &PackageName, version: &Version) -> String {
    format!("/agents/{name}/{version}/agent-card.json")
}

async fn render(
    registry: &Registry,
    package: &PackageRecord,
    record: VersionRecord,
) -> Result<Rendered, ServiceError> {
    let publisher = registry
        .db
        .usernames_by_ids(&[record.published_by])
        .await?
        .into_iter()
        .next()
        .map(|(_, username)| username);
    let base = registry.public_url().to_owned();
    let jku = jwks_url(registry);
    let name = package.name.clone();
    let identity = std::sync::Arc::clone(&registry.identity);
    // Building walks the whole stored spec and signing hashes it: work for
    // a blocking thread, not an HTTP worker.
    let bytes = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, ServiceError> {
        let extras = ContainerExtras::from_stored(record.extras.as_ref().map(|e| &e.0));
        let skill_descriptions: BTreeMap<String, String> = extras
            .skills
            .into_iter()
            .map(|(skill, (description, _))| (skill, description))
            .collect();
        let provider = publisher.map(|username| AgentProvider {
            url: format!("{base}/publishers/{username}"),
            organization: username.to_string(),
        });
        let documentation_url = format!("{base}/agents/{name}/{}", record.version);
        let publication = Publication {
            container_sha256: record.sha256,
            log_index: record.log_index.and_then(|i| u64::try_from(i).ok()),
            signer: record.signer_key_id.clone(),
        };
        let card = a2a::build_card(&CardFacts {
            name: name.as_str(),
            version: &record.version,
            spec: &record.spec.0,
            lock: record.lockfile.as_ref().map(|l| &l.0),
            skill_descriptions: &skill_descriptions,
            provider: provider.as_ref(),
            documentation_url: Some(&documentation_url),
            publication: &publication,
        })
        .map_err(|why| {
            ServiceError::NoA2aInterface(format!(
                "agent {name} {} has no A2A Agent Card: it {why}",
                record.version
            ))
        })?;
        let signed = identity
            .sign_agent_card(card, &jku)
            .map_err(ServiceError::internal)?;
        a2a::to_bytes(&signed).map_err(ServiceError::internal)
    })
    .await
    .map_err(ServiceError::internal)??;
    Ok(Rendered::new(Bytes::from(bytes)))
}
