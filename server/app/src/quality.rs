//! The deterministic prompt-quality report of an agent version
//! (`core::quality`), computed once at publish and stored with the
//! version, so the catalog shows it without reading the container again.
//!
//! The registry never holds a prompt key: for an encrypted prompt only its
//! size is known (the envelope less its fixed overhead), so the size rules
//! run and the rules that read the text are listed as skipped. The package
//! is the one publish validated (`core::package::validate_package`), its
//! subagents and skills included wherever they are in the container.

use std::collections::BTreeMap;

use agentlang_core::{
    Kind, PackageName, Version,
    container::{Container, ENCRYPTED_PROMPT_PATH, PROMPT_PATH},
    crypt::MIN_ENVELOPE_LEN,
    package::AgentPackage,
    prompt::parse_prompt,
    quality::{self, ModelFacts, PromptText, QualityInput, QualityReport},
};

use crate::{Registry, ServiceError};
use store::Db;

/// The registry's models catalog as the rules read it.
pub async fn model_facts(db: &Db) -> Result<BTreeMap<String, ModelFacts>, ServiceError> {
    Ok(db
        .list_models()
        .await?
        .into_iter()
        .map(|m| {
            (
                m.name,
                ModelFacts {
                    context_window: u64::try_from(m.context_window).unwrap_or(0),
                    input_1m_price: m.input_price_per_mtok,
                    output_1m_price: m.output_price_per_mtok,
                },
            )
        })
        .collect())
}

/// What the report reads: the package publish validated (agent,
/// subagents, skills) and the prompt, as text when it ships in plaintext,
/// else the encrypted envelope's length.
#[derive(Debug)]
pub struct QualitySource {
    package: AgentPackage,
    prompt: Option<Vec<u8>>,
    encrypted_prompt_bytes: Option<u64>,
}

impl QualitySource {
    pub fn of(container: &Container, package: &AgentPackage) -> Self {
        let encrypted_prompt_bytes = container
            .manifest()
            .file(ENCRYPTED_PROMPT_PATH)
            .map(|f| f.size.saturating_sub(MIN_ENVELOPE_LEN as u64));
        Self {
            package: package.clone(),
            prompt: container.member(PROMPT_PATH).map(<[u8]>::to_vec),
            encrypted_prompt_bytes,
        }
    }

    /// Runs the rules; CPU work, so callers run it off the async workers.
    /// The report is capped (`core::quality::MAX_FINDINGS`, texts clipped),
    /// so what publish stores with the version is bounded.
    pub fn report(&self, models: &BTreeMap<String, ModelFacts>) -> QualityReport {
        let prompt = self.prompt.as_deref().and_then(|b| parse_prompt(b).ok());
        let text = match (&prompt, self.encrypted_prompt_bytes) {
            (Some(p), _) => PromptText::Plain(p),
            (None, Some(bytes)) => PromptText::Encrypted {
                plaintext_bytes: bytes,
            },
            (None, None) => PromptText::Missing,
        };
        quality::check(&QualityInput {
            package: &self.package,
            prompt: text,
            models: Some(models),
        })
    }
}

/// A version's stored report; `None` for versions without one. Capped as
/// it is read (`QualityReport::capped`): reports stored before the cap
/// could hold any number of findings, and the pages and the API show
/// what this answers.
pub async fn stored_report(
    registry: &Registry,
    version_id: i64,
) -> Result<Option<QualityReport>, ServiceError> {
    match registry.db.quality_report(version_id).await? {
        Some(json) => serde_json::from_value::<QualityReport>(json)
            .map(|report| Some(report.capped()))
            .map_err(ServiceError::internal),
        None => Ok(None),
    }
}

/// The stored report of a published version: not found for an unknown
/// version, or one published before reports were.
pub async fn report_of(
    registry: &Registry,
    kind: Kind,
    name: &PackageName,
    version: &Version,
) -> Result<QualityReport, ServiceError> {
    let package = crate::packages::find_package(registry, kind, name).await?;
    let record = crate::packages::find_version(registry, &package, version).await?;
    stored_report(registry, record.id).await?.ok_or_else(|| {
        ServiceError::NotFound(format!("a quality report of {kind} {name} {version}"))
    })
}
