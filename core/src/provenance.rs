//! Provenance: an in-toto Statement v1 inside a DSSE envelope (issue 49, H4).
//!
//! No IO: the registry and the CLI hand in the envelope bytes, the
//! container's SHA-256 and the keys they trust; this module bounds, parses
//! and verifies.

use base64::Engine;
use serde::Deserialize;

use crate::digest::Sha256Digest;
use crate::signing::PublicKey;

/// Largest envelope accepted: a statement with a few subjects fits easily,
/// and the bound keeps a publish request's side part small.
pub const MAX_ENVELOPE_BYTES: usize = 64 * 1024;
/// Most signatures looked at: more would only multiply verification work.
pub const MAX_SIGNATURES: usize = 4;
/// The only payload type accepted.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The statement type accepted.
pub const STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvenanceError {
    #[error("envelope is {0} bytes; at most {MAX_ENVELOPE_BYTES} are accepted")]
    TooBig(usize),
    #[error("not a DSSE envelope: {0}")]
    Envelope(String),
    #[error("envelope has {0} signatures; 1 to {MAX_SIGNATURES} are accepted")]
    SignatureCount(usize),
    #[error("payload type is {0:?}, not {IN_TOTO_PAYLOAD_TYPE:?}")]
    PayloadType(String),
    #[error("no signature verifies with the given keys")]
    NoValidSignature,
    #[error("not an in-toto Statement v1: {0}")]
    Statement(String),
    #[error("no subject names the container's sha256 {0}")]
    SubjectMismatch(String),
}

#[derive(Debug, Clone, Deserialize)]
struct RawEnvelope {
    #[serde(rename = "payloadType")]
    payload_type: String,
    payload: String,
    signatures: Vec<RawSignature>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawSignature {
    // keyid is only a hint in DSSE; every given key is tried instead.
    sig: String,
}

/// The DSSE pre-authentication encoding: what a DSSE signature signs.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A verified envelope: which key signed, and the statement it carries.
#[derive(Debug, Clone)]
pub struct Verified {
    /// Index into the keys given to [`verify`] of the key that verified.
    pub key_index: usize,
    pub statement: serde_json::Value,
}

fn b64(text: &str) -> Result<Vec<u8>, ProvenanceError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text))
        .map_err(|e| ProvenanceError::Envelope(format!("bad base64: {e}")))
}

/// Bounds, parses and verifies `envelope` against `keys`, and requires its
/// statement to name `container` among its subjects.
pub fn verify(
    envelope: &[u8],
    keys: &[PublicKey],
    container: &Sha256Digest,
) -> Result<Verified, ProvenanceError> {
    if envelope.len() > MAX_ENVELOPE_BYTES {
        return Err(ProvenanceError::TooBig(envelope.len()));
    }
    let raw: RawEnvelope =
        serde_json::from_slice(envelope).map_err(|e| ProvenanceError::Envelope(e.to_string()))?;
    if raw.signatures.is_empty() || raw.signatures.len() > MAX_SIGNATURES {
        return Err(ProvenanceError::SignatureCount(raw.signatures.len()));
    }
    if raw.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(ProvenanceError::PayloadType(raw.payload_type));
    }
    let body = b64(&raw.payload)?;
    let message = pae(&raw.payload_type, &body);
    let mut key_index = None;
    'sigs: for signature in &raw.signatures {
        let Ok(sig) = b64(&signature.sig) else {
            continue;
        };
        for (i, key) in keys.iter().enumerate() {
            if key.verify(&message, &sig).is_ok() {
                key_index = Some(i);
                break 'sigs;
            }
        }
    }
    let key_index = key_index.ok_or(ProvenanceError::NoValidSignature)?;
    let statement: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| ProvenanceError::Statement(e.to_string()))?;
    if statement.get("_type").and_then(|t| t.as_str()) != Some(STATEMENT_V1) {
        return Err(ProvenanceError::Statement(
            "_type is not Statement v1".into(),
        ));
    }
    let want = container.to_hex();
    let named = statement
        .get("subject")
        .and_then(|s| s.as_array())
        .is_some_and(|subjects| {
            subjects.iter().any(|s| {
                s.pointer("/digest/sha256").and_then(|d| d.as_str()) == Some(want.as_str())
            })
        });
    if !named {
        return Err(ProvenanceError::SubjectMismatch(want));
    }
    Ok(Verified {
        key_index,
        statement,
    })
}

/// What a reader is shown of a SLSA v1 GitHub Actions predicate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Summary {
    pub repository: Option<String>,
    pub workflow: Option<String>,
    pub git_ref: Option<String>,
    pub commit: Option<String>,
    pub builder: Option<String>,
}

/// The display summary of a statement's predicate; fields absent from other
/// predicate shapes are simply None.
pub fn summary(statement: &serde_json::Value) -> Summary {
    let text = |p: &str| {
        statement
            .pointer(p)
            .and_then(|v| v.as_str())
            .map(String::from)
    };
    let workflow = "/predicate/buildDefinition/externalParameters/workflow";
    Summary {
        repository: text(&format!("{workflow}/repository")),
        workflow: text(&format!("{workflow}/path")),
        git_ref: text(&format!("{workflow}/ref")),
        commit: statement
            .pointer("/predicate/buildDefinition/resolvedDependencies")
            .and_then(|d| d.as_array())
            .and_then(|deps| {
                deps.iter()
                    .find_map(|d| d.pointer("/digest/gitCommit").and_then(|c| c.as_str()))
            })
            .map(String::from),
        builder: text("/predicate/runDetails/builder/id"),
    }
}

/// How a version came to the registry, as index entries and version
/// records show it, so a client can refuse a version whose evidence is
/// weaker than its predecessor's (`agentlang lock --update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Evidence {
    /// `trusted`: published through trusted publishing (docs/
    /// trusted-publishing.md); `token`: with an ordinary API token.
    pub publisher: PublisherEvidence,
    /// A verified provenance statement is stored and served.
    pub provenance: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PublisherEvidence {
    Trusted,
    Token,
}

impl Evidence {
    /// A version published through trusted publishing (`trusted`) or with
    /// a token, with provenance or without.
    pub fn of(trusted: bool, provenance: bool) -> Self {
        Self {
            publisher: if trusted {
                PublisherEvidence::Trusted
            } else {
                PublisherEvidence::Token
            },
            provenance,
        }
    }

    /// True when `self` lacks something `before` had: a trusted publisher,
    /// or provenance.
    pub fn weaker_than(&self, before: &Evidence) -> bool {
        (before.publisher == PublisherEvidence::Trusted
            && self.publisher == PublisherEvidence::Token)
            || (before.provenance && !self.provenance)
    }

    /// `trusted publisher, provenance` / `token, no provenance`.
    pub fn describe(&self) -> String {
        let publisher = match self.publisher {
            PublisherEvidence::Trusted => "trusted publisher",
            PublisherEvidence::Token => "token",
        };
        let provenance = if self.provenance {
            "provenance"
        } else {
            "no provenance"
        };
        format!("{publisher}, {provenance}")
    }
}

/// A DSSE envelope of `statement`, its PAE signed by `sign` (Ed25519), the
/// signature named `keyid`: what the registry serves for a version built in
/// a trusted-publishing run.
pub fn seal(
    statement: &serde_json::Value,
    sign: impl FnOnce(&[u8]) -> [u8; 64],
    keyid: &str,
) -> Vec<u8> {
    let body = serde_json::to_vec(statement).unwrap_or_default();
    let sig = sign(&pae(IN_TOTO_PAYLOAD_TYPE, &body));
    let e = base64::engine::general_purpose::STANDARD;
    serde_json::to_vec(&serde_json::json!({
        "payloadType": IN_TOTO_PAYLOAD_TYPE,
        "payload": e.encode(&body),
        "signatures": [{"keyid": keyid, "sig": e.encode(sig)}],
    }))
    .unwrap_or_default()
}

/// What a trusted-publishing run proved to the registry, for the statement
/// the registry makes of it.
#[derive(Debug, Clone)]
pub struct TrustedRun<'a> {
    pub issuer: &'a str,
    /// `owner/repo` (GitHub) or `group/project` (GitLab).
    pub repository: &'a str,
    /// The workflow file (GitHub) or CI config path (GitLab).
    pub workflow: &'a str,
    pub git_ref: Option<&'a str>,
    pub commit: Option<&'a str>,
    pub run_id: Option<&'a str>,
    pub environment: Option<&'a str>,
}

/// The SLSA v1 predicate type.
pub const SLSA_V1: &str = "https://slsa.dev/provenance/v1";

/// An in-toto Statement v1 with a SLSA v1 predicate naming the container
/// `name` by `sha256`, built from a trusted run's checked claims. Its
/// fields sit where [`summary`] reads them.
pub fn trusted_run_statement(
    name: &str,
    sha256: &Sha256Digest,
    run: &TrustedRun<'_>,
    registry: &str,
) -> serde_json::Value {
    let mut dependencies = Vec::new();
    if let Some(commit) = run.commit {
        dependencies.push(serde_json::json!({
            "uri": format!("git+{}", run.repository),
            "digest": {"gitCommit": commit},
        }));
    }
    serde_json::json!({
        "_type": STATEMENT_V1,
        "subject": [{"name": name, "digest": {"sha256": sha256.to_hex()}}],
        "predicateType": SLSA_V1,
        "predicate": {
            "buildDefinition": {
                "buildType": "https://agentlang.dev/trusted-publishing/v1",
                "externalParameters": {"workflow": {
                    "repository": run.repository,
                    "path": run.workflow,
                    "ref": run.git_ref,
                }},
                "internalParameters": {
                    "issuer": run.issuer,
                    "environment": run.environment,
                },
                "resolvedDependencies": dependencies,
            },
            "runDetails": {
                "builder": {"id": run.issuer},
                "metadata": {"invocationId": run.run_id},
                "byproducts": [],
                "attestedBy": registry,
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::SecretKey;

    fn envelope(key: &SecretKey, digest: &str) -> Vec<u8> {
        let statement = serde_json::json!({
            "_type": STATEMENT_V1,
            "subject": [{"name": "c", "digest": {"sha256": digest}}],
            "predicateType": SLSA_V1,
            "predicate": {},
        });
        seal(&statement, |m| key.sign(m), "")
    }

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn verifies_subject_and_key() {
        let key = SecretKey::generate().unwrap();
        let other = SecretKey::generate().unwrap();
        let digest = Sha256Digest::of(b"container");
        let env = envelope(&key, &digest.to_hex());
        assert!(verify(&env, &[key.public_key()], &digest).is_ok());
        assert_eq!(
            verify(&env, &[other.public_key()], &digest).unwrap_err(),
            ProvenanceError::NoValidSignature
        );
        let wrong = Sha256Digest::of(b"other");
        assert!(matches!(
            verify(&env, &[key.public_key()], &wrong),
            Err(ProvenanceError::SubjectMismatch(_))
        ));
        let big = vec![b' '; MAX_ENVELOPE_BYTES + 1];
        assert!(matches!(
            verify(&big, &[key.public_key()], &digest),
            Err(ProvenanceError::TooBig(_))
        ));
    }

    #[test]
    fn summary_reads_a_github_actions_slsa_predicate() {
        let statement = serde_json::json!({
            "_type": STATEMENT_V1,
            "predicate": {
                "buildDefinition": {
                    "externalParameters": {"workflow": {
                        "repository": "https://github.com/acme/calc",
                        "path": ".github/workflows/release.yml",
                        "ref": "refs/tags/v1.2.0",
                    }},
                    "resolvedDependencies": [
                        {"uri": "git+https://github.com/acme/calc@refs/tags/v1.2.0",
                         "digest": {"gitCommit": "4f2b"}},
                    ],
                },
                "runDetails": {"builder": {"id": "https://github.com/actions/runner"}},
            },
        });
        assert_eq!(
            summary(&statement),
            Summary {
                repository: Some("https://github.com/acme/calc".into()),
                workflow: Some(".github/workflows/release.yml".into()),
                git_ref: Some("refs/tags/v1.2.0".into()),
                commit: Some("4f2b".into()),
                builder: Some("https://github.com/actions/runner".into()),
            }
        );
        // Another predicate shape: nothing to show, nothing invented.
        let other = serde_json::json!({"predicate": {"builder": "make"}});
        assert_eq!(
            summary(&other),
            Summary {
                repository: None,
                workflow: None,
                git_ref: None,
                commit: None,
                builder: None
            }
        );
    }

    #[test]
    fn evidence_is_weaker_when_it_loses_a_trusted_publisher_or_provenance() {
        let e = Evidence::of;
        assert!(e(false, true).weaker_than(&e(true, true)));
        assert!(e(true, false).weaker_than(&e(true, true)));
        assert!(!e(true, true).weaker_than(&e(false, false)));
        assert!(!e(false, false).weaker_than(&e(false, false)));
        assert_eq!(
            e(true, false).describe(),
            "trusted publisher, no provenance"
        );
    }

    #[test]
    fn a_sealed_trusted_run_statement_verifies_and_summarises() {
        let key = SecretKey::generate().unwrap();
        let digest = Sha256Digest::of(b"container");
        let run = TrustedRun {
            issuer: "https://token.actions.githubusercontent.com",
            repository: "acme/calc",
            workflow: "release.yml",
            git_ref: Some("refs/tags/v1.0.0"),
            commit: Some("4f2b"),
            run_id: Some("42"),
            environment: None,
        };
        let statement = trusted_run_statement("tool/calc@1.0.0", &digest, &run, "reg");
        let envelope = seal(&statement, |m| key.sign(m), "k");
        let verified = verify(&envelope, &[key.public_key()], &digest).unwrap();
        let s = summary(&verified.statement);
        assert_eq!(s.repository.as_deref(), Some("acme/calc"));
        assert_eq!(s.workflow.as_deref(), Some("release.yml"));
        assert_eq!(s.commit.as_deref(), Some("4f2b"));
    }
}
