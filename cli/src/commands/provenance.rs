//! `provenance NAME@VERSION`: a version's provenance (docs/provenance.md),
//! checked here: the envelope's signature with the key it names (the
//! publisher's registered key, or the registry's own from its JWKS), and
//! its subject against the version's SHA-256 the registry records.

use std::process::ExitCode;

use agentlang_core::{
    digest::Sha256Digest,
    provenance::{self, Summary},
    signing::{KeyId, PublicKey},
};
use anyhow::{Context, Result, bail};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{args::KindArg, client::Client, env::Env};

#[derive(Deserialize)]
struct Record {
    sha256: String,
}

#[derive(Deserialize)]
struct Envelope {
    signatures: Vec<Signature>,
}

#[derive(Deserialize)]
struct Signature {
    #[serde(default)]
    keyid: Option<String>,
}

#[derive(Deserialize)]
struct Jwks {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    kid: Option<String>,
    crv: Option<String>,
    x: Option<String>,
}

/// The key `keyid` names: the registry's own (its JWKS) or a registered
/// key, each checked to be the key the id names.
fn key_named(client: &Client, keyid: &str) -> Result<(PublicKey, &'static str)> {
    let id = KeyId::new(keyid).with_context(|| format!("the provenance names key {keyid:?}"))?;
    let jwks: Jwks = client.send_json(client.get("/.well-known/jwks.json"))?;
    if let Some(jwk) = jwks
        .keys
        .iter()
        .find(|k| k.kid.as_deref() == Some(keyid) && k.crv.as_deref() == Some("Ed25519"))
    {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(jwk.x.as_deref().unwrap_or_default())
            .context("the registry's JWKS key is not base64url")?;
        let raw: [u8; 32] = raw
            .try_into()
            .map_err(|_| anyhow::anyhow!("the registry's JWKS key is not 32 bytes"))?;
        let key = PublicKey::from_raw(&raw)?;
        if key.key_id() != id {
            bail!("the registry's JWKS names key {keyid} for another key");
        }
        return Ok((key, "registry"));
    }
    Ok((client.public_key(&id)?.key, "publisher"))
}

pub fn run(env: &Env, spec: &str, kind: Option<KindArg>) -> Result<ExitCode> {
    let (name, version) = crate::spec::parse_exact(spec)?;
    let client = env.anonymous()?;
    let kind = crate::index::which_kind(&client, &name, kind.map(KindArg::kind))?;
    let base = format!("/api/v1/{}/{name}/{version}", kind.plural());
    let record: Record = client.send_json(client.get(&base))?;
    let sha256 = Sha256Digest::parse_hex(&record.sha256)
        .with_context(|| format!("the registry's SHA-256 of {name}@{version}"))?;
    let bytes = client
        .send(client.get(&format!("{base}/provenance")))
        .with_context(|| format!("fetching the provenance of {kind} {name}@{version}"))?
        .bytes(crate::client::Bound::JSON)?;
    let envelope: Envelope =
        serde_json::from_slice(&bytes).context("the provenance is not a DSSE envelope")?;
    let mut checked = None;
    for keyid in envelope
        .signatures
        .iter()
        .filter_map(|s| s.keyid.as_deref())
        .filter(|k| !k.is_empty())
        .take(provenance::MAX_SIGNATURES)
    {
        let (key, source) = key_named(&client, keyid)?;
        if let Ok(verified) = provenance::verify(&bytes, &[key], &sha256) {
            checked = Some((keyid.to_owned(), source, verified.statement));
            break;
        }
    }
    let Some((keyid, source, statement)) = checked else {
        bail!(
            "the provenance of {kind} {name}@{version} does not verify: no signature it names checks out against its key and the container's SHA-256 {}",
            sha256.to_hex()
        );
    };
    let summary: Summary = provenance::summary(&statement);
    env.out.emit(
        &json!({
            "kind": kind,
            "name": name,
            "version": version,
            "sha256": sha256.to_hex(),
            "verified": true,
            "signed_by": {"key_id": keyid, "source": source},
            "summary": summary,
            "statement": statement,
        }),
        || {
            let mut lines = vec![format!(
                "{} {kind} {name}@{version}: provenance verified, signed by {} key {keyid}",
                env.out.green("✓"),
                if source == "registry" {
                    "the registry's"
                } else {
                    "the publisher's"
                }
            )];
            let field = |label: &str, value: &Option<String>| {
                value.as_ref().map(|v| format!("  {label}: {v}"))
            };
            lines.extend(
                [
                    field("repository", &summary.repository),
                    field("workflow", &summary.workflow),
                    field("ref", &summary.git_ref),
                    field("commit", &summary.commit),
                    field("builder", &summary.builder),
                ]
                .into_iter()
                .flatten(),
            );
            if let Some(t) = statement.get("predicateType").and_then(Value::as_str) {
                lines.push(format!("  predicate: {t}"));
            }
            lines.join("\n")
        },
    );
    Ok(ExitCode::SUCCESS)
}
