//! MoltSpeak capabilities: the spec's category table, the [`Capability`]
//! names it allows, and `org-signed` attestations.
//!
//! An attestation's signature is Ed25519 over the RFC 8785 (JCS) form of
//! `{capability, org, agent, key, expires}`, where `agent` and `key` are the
//! attested agent's `from.agent` and `from.key`: binding the key stops an
//! attestation from being replayed by another agent of the same name.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde_json::{Map, Value, json};

use super::{ErrorCode, MoltError, PublicKey, decode_prefixed};
use crate::protocol::canonical;

/// The spec's capability categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Core,
    Task,
    Stream,
    Tool,
    Memory,
    Human,
    Code,
}

impl Category {
    pub const ALL: [Category; 7] = [
        Self::Core,
        Self::Task,
        Self::Stream,
        Self::Tool,
        Self::Memory,
        Self::Human,
        Self::Code,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Task => "task",
            Self::Stream => "stream",
            Self::Tool => "tool",
            Self::Memory => "memory",
            Self::Human => "human",
            Self::Code => "code",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The capabilities of the category, as the spec's table lists them.
    pub fn capabilities(self) -> &'static [&'static str] {
        match self {
            Self::Core => &["query", "respond", "error"],
            Self::Task => &["task.create", "task.status", "task.cancel"],
            Self::Stream => &["stream.start", "stream.chunk", "stream.end"],
            Self::Tool => &["tool.invoke", "tool.list"],
            Self::Memory => &["memory.store", "memory.retrieve"],
            Self::Human => &["human.consent", "human.notify"],
            Self::Code => &["code.execute", "code.sandbox"],
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A capability name from the spec's table (`query`, `task.create`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Capability {
    name: &'static str,
    category: Category,
}

impl Capability {
    /// `E_CAPABILITY` (at `field`) for a name outside the table.
    pub fn parse(s: &str, field: &str) -> Result<Self, MoltError> {
        Category::ALL
            .into_iter()
            .find_map(|category| {
                category
                    .capabilities()
                    .iter()
                    .find(|c| **c == s)
                    .map(|name| Self { name, category })
            })
            .ok_or_else(|| {
                MoltError::new(
                    ErrorCode::Capability,
                    format!(
                        "{s:?} is not a MoltSpeak 0.1 capability (categories: {})",
                        Category::ALL.map(Category::as_str).join(", ")
                    ),
                    Some(field),
                )
            })
    }

    pub fn as_str(self) -> &'static str {
        self.name
    }

    pub fn category(self) -> Category {
        self.category
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Checks every name of a message's `cap` against the table (`cap[i]`).
pub fn parse_cap(cap: &[String]) -> Result<Vec<Capability>, MoltError> {
    cap.iter()
        .enumerate()
        .map(|(i, name)| Capability::parse(name, &format!("cap[{i}]")))
        .collect()
}

/// Attestations and names one hello may list.
pub const MAX_HELLO_CAPABILITIES: usize = 64;
/// Bytes of an `org` name.
pub const MAX_ORG_BYTES: usize = 128;

/// What an attestation binds, and the bytes its signature covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttestationClaim {
    pub capability: Capability,
    pub org: String,
    pub agent: String,
    pub key: PublicKey,
    /// Unix ms.
    pub expires: u64,
}

impl AttestationClaim {
    /// JCS of `{capability, org, agent, key, expires}`.
    pub fn signing_bytes(&self) -> Vec<u8> {
        let value = json!({
            "capability": self.capability.as_str(),
            "org": self.org,
            "agent": self.agent,
            "key": self.key.to_string(),
            "expires": self.expires,
        });
        // Strings and a u64 only: canonicalization cannot fail but for an
        // integer past 2^53, which no expiry in ms reaches before year 287396.
        canonical::to_jcs_bytes(&value).unwrap_or_default()
    }

    /// The `{capability, attestation}` item a hello lists, signed by `org`'s key.
    pub fn sign(&self, org_key: &SigningKey) -> Attestation {
        Attestation {
            capability: self.capability,
            org: self.org.clone(),
            signature: org_key.sign(&self.signing_bytes()),
            expires: self.expires,
        }
    }
}

/// `{capability, attestation: {type: "org-signed", org, signature, expires}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    pub capability: Capability,
    pub org: String,
    pub signature: Signature,
    pub expires: u64,
}

impl Attestation {
    pub fn to_value(&self) -> Value {
        json!({
            "capability": self.capability.as_str(),
            "attestation": {
                "type": "org-signed",
                "org": self.org,
                "signature": format!("ed25519:{}", STANDARD.encode(self.signature.to_bytes())),
                "expires": self.expires,
            }
        })
    }

    /// The claim this attestation makes about `agent` holding `key`.
    pub fn claim(&self, agent: &str, key: &PublicKey) -> AttestationClaim {
        AttestationClaim {
            capability: self.capability,
            org: self.org.clone(),
            agent: agent.to_owned(),
            key: *key,
            expires: self.expires,
        }
    }

    /// `E_CAPABILITY` (at `field`) unless unexpired at `now_ms` and signed
    /// by `org_key` for `agent` and `key`.
    pub fn verify(
        &self,
        agent: &str,
        key: &PublicKey,
        org_key: &VerifyingKey,
        now_ms: u64,
        field: &str,
    ) -> Result<(), MoltError> {
        if now_ms >= self.expires {
            return Err(MoltError::new(
                ErrorCode::Capability,
                format!(
                    "the attestation of {} by {:?} expired at {} (now {now_ms})",
                    self.capability, self.org, self.expires
                ),
                Some(&format!("{field}.attestation.expires")),
            ));
        }
        self.verify_signature(agent, key, org_key, field)
    }

    /// The signature check alone (no clock).
    pub fn verify_signature(
        &self,
        agent: &str,
        key: &PublicKey,
        org_key: &VerifyingKey,
        field: &str,
    ) -> Result<(), MoltError> {
        org_key
            .verify_strict(&self.claim(agent, key).signing_bytes(), &self.signature)
            .map_err(|_| {
                MoltError::new(
                    ErrorCode::Capability,
                    format!(
                        "the attestation of {} is not signed by a key of {:?} for this agent and key",
                        self.capability, self.org
                    ),
                    Some(&format!("{field}.attestation.signature")),
                )
            })
    }
}

/// One item of a hello's `p.capabilities`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloCapability {
    /// A bare name: self-declared, proves nothing. The spec's own hello
    /// example lists category names (`task`, `stream`), so those are allowed.
    Declared(String),
    Attested(Attestation),
}

/// Parses a hello's `p.capabilities` (absent: none). Names outside the
/// table are `E_CAPABILITY`; malformed items `E_SCHEMA`/`E_INVALID_PARAM`,
/// each with its path (`p.capabilities[2].attestation.org`).
pub fn parse_hello_capabilities(value: Option<&Value>) -> Result<Vec<HelloCapability>, MoltError> {
    const FIELD: &str = "p.capabilities";
    let items = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(MoltError::schema(FIELD, "must be an array")),
    };
    if items.len() > MAX_HELLO_CAPABILITIES {
        return Err(MoltError::invalid(
            FIELD,
            format!("at most {MAX_HELLO_CAPABILITIES} capabilities"),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_hello_item(item, &format!("{FIELD}[{i}]")))
        .collect()
}

fn parse_hello_item(item: &Value, field: &str) -> Result<HelloCapability, MoltError> {
    match item {
        Value::String(name) => {
            if Category::parse(name).is_none() {
                Capability::parse(name, field)?;
            }
            Ok(HelloCapability::Declared(name.clone()))
        }
        Value::Object(map) => parse_attestation(map, field).map(HelloCapability::Attested),
        _ => Err(MoltError::schema(
            field,
            "must be a capability name or {capability, attestation}",
        )),
    }
}

fn member<'a>(map: &'a Map<String, Value>, key: &str, field: &str) -> Result<&'a Value, MoltError> {
    map.get(key)
        .ok_or_else(|| MoltError::missing(&format!("{field}.{key}")))
}

fn string<'a>(map: &'a Map<String, Value>, key: &str, field: &str) -> Result<&'a str, MoltError> {
    member(map, key, field)?
        .as_str()
        .ok_or_else(|| MoltError::schema(&format!("{field}.{key}"), "must be a string"))
}

/// Parses `{capability, attestation: {type, org, signature, expires}}` at `field`.
pub fn parse_attestation(map: &Map<String, Value>, field: &str) -> Result<Attestation, MoltError> {
    if let Some(extra) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "capability" | "attestation"))
    {
        return Err(MoltError::schema(
            &format!("{field}.{extra}"),
            "unknown member",
        ));
    }
    let capability = Capability::parse(
        string(map, "capability", field)?,
        &format!("{field}.capability"),
    )?;
    let at = format!("{field}.attestation");
    let attestation = member(map, "attestation", field)?
        .as_object()
        .ok_or_else(|| MoltError::schema(&at, "must be an object"))?;
    if let Some(extra) = attestation
        .keys()
        .find(|k| !matches!(k.as_str(), "type" | "org" | "signature" | "expires"))
    {
        return Err(MoltError::schema(
            &format!("{at}.{extra}"),
            "unknown member",
        ));
    }
    let kind = string(attestation, "type", &at)?;
    if kind != "org-signed" {
        return Err(MoltError::new(
            ErrorCode::Capability,
            format!("attestation type {kind:?} is not supported; use \"org-signed\""),
            Some(&format!("{at}.type")),
        ));
    }
    let org = string(attestation, "org", &at)?;
    if org.is_empty() || org.len() > MAX_ORG_BYTES {
        return Err(MoltError::invalid(
            &format!("{at}.org"),
            format!("must be 1 to {MAX_ORG_BYTES} bytes"),
        ));
    }
    let signature = decode_prefixed::<64>(string(attestation, "signature", &at)?, "ed25519:")
        .map_err(|m| MoltError::invalid(&format!("{at}.signature"), m))?;
    let expires = member(attestation, "expires", &at)?
        .as_u64()
        .ok_or_else(|| {
            MoltError::schema(
                &format!("{at}.expires"),
                "must be a non-negative integer (Unix ms)",
            )
        })?;
    Ok(Attestation {
        capability,
        org: org.to_owned(),
        signature: Signature::from_bytes(&signature),
        expires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_spec_s() {
        assert_eq!(
            Capability::parse("task.create", "cap[0]")
                .unwrap()
                .category(),
            Category::Task
        );
        let e = Capability::parse("task.explode", "cap[1]").unwrap_err();
        assert_eq!(e.code, ErrorCode::Capability);
        assert_eq!(e.field.as_deref(), Some("cap[1]"));
        assert!(parse_cap(&["query".into(), "tool".into()]).is_err());
    }

    #[test]
    fn attestations_round_trip_and_bind_agent_key_and_expiry() {
        let org = SigningKey::from_bytes(&[1; 32]);
        let agent_key: PublicKey = SigningKey::from_bytes(&[2; 32]).verifying_key().into();
        let claim = AttestationClaim {
            capability: Capability::parse("code.execute", "x").unwrap(),
            org: "acme".into(),
            agent: "coder".into(),
            key: agent_key,
            expires: 2_000,
        };
        let item = claim.sign(&org).to_value();
        let parsed = match &parse_hello_capabilities(Some(&json!([item, "task"]))).unwrap()[0] {
            HelloCapability::Attested(a) => a.clone(),
            other => panic!("{other:?}"),
        };
        let org_pub = org.verifying_key();
        parsed
            .verify("coder", &agent_key, &org_pub, 1_000, "p.capabilities[0]")
            .unwrap();
        let other: PublicKey = SigningKey::from_bytes(&[3; 32]).verifying_key().into();
        let e = parsed
            .verify("coder", &other, &org_pub, 1_000, "p.capabilities[0]")
            .unwrap_err();
        assert_eq!(
            e.field.as_deref(),
            Some("p.capabilities[0].attestation.signature")
        );
        let e = parsed
            .verify("coder", &agent_key, &org_pub, 2_000, "p.capabilities[0]")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Capability);
        assert_eq!(
            e.field.as_deref(),
            Some("p.capabilities[0].attestation.expires")
        );
    }

    #[test]
    fn malformed_items_name_their_path() {
        let e = parse_hello_capabilities(Some(&json!(["query", {"capability": "tool.list",
            "attestation": {"type": "org-signed", "org": "acme", "signature": "ed25519:AAAA", "expires": 1}}])))
        .unwrap_err();
        assert_eq!(
            e.field.as_deref(),
            Some("p.capabilities[1].attestation.signature")
        );
        let e = parse_hello_capabilities(Some(&json!(["warp.drive"]))).unwrap_err();
        assert_eq!(e.code, ErrorCode::Capability);
        assert_eq!(e.field.as_deref(), Some("p.capabilities[0]"));
    }
}
