//! The registry's catalogs as the CLI reads them: models (for the quality
//! rules) and protocols (for `lock` and `validate`).

use std::collections::BTreeMap;

use agentlang_core::{
    Version,
    agent::AgentSpec,
    digest::Sha256Digest,
    lockfile::Lockfile,
    protocols::{
        self, KnownProtocol, ProtocolEntry, ProtocolName, ProtocolReport, ProtocolSource,
        ProtocolStatus, ProtocolVersion,
    },
    quality::ModelFacts,
};
use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use serde::Deserialize;

use crate::client::{ApiError, Client};

/// `GET /api/v1/models` as the CLI needs it.
#[derive(Debug, Deserialize)]
struct ModelList {
    models: Vec<ModelRecord>,
}

#[derive(Debug, Deserialize)]
struct ModelRecord {
    name: String,
    context_window: u64,
    #[serde(default)]
    input_price_per_mtok: Option<f64>,
    #[serde(default)]
    output_price_per_mtok: Option<f64>,
}

/// The registry's models catalog.
pub fn fetch_models(client: &Client) -> Result<BTreeMap<String, ModelFacts>> {
    let list: ModelList = client.send_json(client.get("/api/v1/models"))?;
    Ok(list
        .models
        .into_iter()
        .map(|m| {
            (
                m.name,
                ModelFacts {
                    context_window: m.context_window,
                    input_1m_price: m.input_price_per_mtok,
                    output_1m_price: m.output_price_per_mtok,
                },
            )
        })
        .collect())
}

/// The models an agent.lock describes (the registry's catalog at lock time).
pub fn models_from_lock(lock: &Lockfile) -> BTreeMap<String, ModelFacts> {
    lock.models
        .iter()
        .map(|(name, m)| {
            (
                name.to_string(),
                ModelFacts {
                    context_window: m.context_window,
                    input_1m_price: m.input_1m_price.map(|p| p.get()),
                    output_1m_price: m.output_1m_price.map(|p| p.get()),
                },
            )
        })
        .collect()
}

/// `GET /api/v1/protocols/{name}`.
#[derive(Debug, Deserialize)]
struct ProtocolInfo {
    source: ProtocolSource,
    #[serde(default)]
    description: String,
    versions: Vec<VersionInfo>,
}

#[derive(Debug, Deserialize)]
struct VersionInfo {
    version: Version,
    #[serde(flatten)]
    status: ProtocolStatus,
    #[serde(default)]
    sha256: Option<String>,
}

/// One protocol from the registry: the catalog's entry for a plain name,
/// the published package's versions for `custom/<name>`. `None` when the
/// registry has neither.
pub fn fetch_protocol(client: &Client, name: &ProtocolName) -> Result<Option<KnownProtocol>> {
    let bare = name
        .custom_package()
        .map_or_else(|| name.as_str().to_owned(), |p| p.to_string());
    let answer = client.send_json::<ProtocolInfo>(client.get(&format!("/api/v1/protocols/{bare}")));
    let info = match answer {
        Ok(info) => info,
        Err(e)
            if e.downcast_ref::<ApiError>()
                .is_some_and(|a| a.status == StatusCode::NOT_FOUND) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e.context(format!("asking the registry about protocol {name}"))),
    };
    // `custom/x` must be a published package, never a catalog entry that
    // happens to share the name (and the other way round).
    let wanted = if name.is_custom() {
        ProtocolSource::Package
    } else {
        ProtocolSource::Catalog
    };
    if info.source != wanted {
        return Ok(None);
    }
    let mut hashes = BTreeMap::new();
    let mut versions = Vec::with_capacity(info.versions.len());
    for v in info.versions {
        if let Some(hex) = v.sha256 {
            let hash = Sha256Digest::parse_hex(&hex)
                .with_context(|| format!("the registry's hash of {name} {}", v.version))?;
            hashes.insert(v.version.clone(), hash);
        }
        versions.push(ProtocolVersion {
            version: v.version,
            status: v.status,
        });
    }
    let entry = ProtocolEntry::new(info.description, versions).map_err(|errors| {
        anyhow::anyhow!(
            "the registry's entry for {name} is not valid: {}",
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )
    })?;
    Ok(Some(KnownProtocol {
        entry,
        source: info.source,
        hashes,
    }))
}

/// Checks `spec`'s protocols against the registry: inline definitions
/// need no request, everything else one request per protocol.
pub fn check_protocols(
    client: &Client,
    spec: &AgentSpec,
    pins: &BTreeMap<String, Version>,
) -> Result<ProtocolReport> {
    let inline = protocols::inline_protocols(spec).unwrap_or_default();
    let mut known: BTreeMap<String, KnownProtocol> = BTreeMap::new();
    for decl in &spec.protocols {
        let Ok(name) = ProtocolName::new(decl.name.as_str()) else {
            continue;
        };
        if name
            .custom_package()
            .is_some_and(|p| inline.contains_key(&p))
        {
            continue;
        }
        if let Some(k) = fetch_protocol(client, &name)? {
            known.insert(name.to_string(), k);
        }
    }
    Ok(protocols::check_agent(
        spec,
        &|n: &ProtocolName| known.get(n.as_str()).cloned(),
        pins,
    ))
}

/// Whether every protocol is defined inline, so no registry is needed.
pub fn all_inline(spec: &AgentSpec) -> bool {
    let inline = protocols::inline_protocols(spec).unwrap_or_default();
    spec.protocols.iter().all(|d| {
        d.custom_name()
            .and_then(|n| agentlang_core::PackageName::new(n).ok())
            .is_some_and(|n| inline.contains_key(&n))
    })
}

/// Fails with every protocol error listed; prints deprecation warnings.
pub fn require_valid(report: &ProtocolReport, out: &crate::output::Output) -> Result<()> {
    if !out.json {
        for w in &report.warnings {
            eprintln!("{} agent.yaml: {w}", out.yellow("warning:"));
        }
    }
    if report.errors.is_empty() {
        return Ok(());
    }
    if !out.json {
        for e in report.errors.iter() {
            eprintln!("  {} agent.yaml: {e}", out.red("✗"));
        }
    }
    bail!(
        "{} protocol problem(s): {}",
        report.errors.len(),
        report
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    )
}
