//! A2A (Agent2Agent, v1.0) Agent Cards of published agents, signed by the
//! registry.
//!
//! An agent declares an A2A interface in agent.yaml: its `protocols:` entry
//! `name: a2a` carries `endpoint: {url, binding}` ([`Endpoint`]). From a
//! published version (its agent.yaml and agent.lock as stored, the
//! descriptions of its skills, its publisher and where it was published)
//! [`build_card`] makes the card in the shape of `specification/a2a.proto`
//! (`AgentCard`, as ProtoJSON: lowerCamelCase names), and [`sign`] adds a
//! JWS per the A2A specification §8.4: the payload is the RFC 8785 form of
//! the card without `signatures` and without default values
//! ([`signing_payload`]), the protected header `{alg: EdDSA, typ: JOSE,
//! kid, jku}`, the signature Ed25519 over `protected '.' base64url(payload)`
//! (a detached payload: only `protected` and `signature` are in the card).
//! [`Jwks`] is the key set `jku` names; [`verify`] checks a card against it.
//!
//! The card is built with no default values at all (no empty string, list
//! or object, no `false` of a field without presence), so the bytes a
//! client canonicalizes after reading it (a ProtoJSON reader drops
//! defaults) are exactly the bytes signed; nothing in it is unknown to the
//! proto, since a reader drops unknown fields too.
//!
//! Pure: no clock, no IO; the caller hands over what the registry knows.

use std::collections::BTreeMap;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::agent::a2a_endpoint::{
    Binding, Endpoint, EndpointUrl, MAX_URL_LEN, PROTOCOL, UrlError,
};
use crate::{
    agent::model::DELEGATE_TOOL,
    digest::Sha256Digest,
    names::Version,
    protocol::canonical::{self, CanonicalError},
    signing::KeyId,
};

/// The `uri` of the extension that says where the agent was published.
pub const PUBLICATION_EXTENSION: &str = "urn:agentlang:a2a:publication:v1";
/// The JWS algorithm of every card signature.
pub const ALG: &str = "EdDSA";
/// The JWS `typ` §8.4.2 asks for.
pub const TYP: &str = "JOSE";
/// Media types a published agent takes and answers: AgentLang agents
/// converse in text.
pub const TEXT_MODES: [&str; 1] = ["text/plain"];
/// Most signatures [`verify`] tries on one card.
pub const MAX_SIGNATURES: usize = 16;

// --- The card, as a2a.proto's messages in ProtoJSON -------------------------

/// `AgentCard`. Optional fields are left out when unset, and every list
/// the builder fills is non-empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
}

/// `AgentInterface` (no `tenant`: the registry knows of none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    pub protocol_version: String,
}

/// `AgentProvider`: the account that published the version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

/// `AgentCapabilities`: only the extensions. Whether the agent streams or
/// pushes notifications is its runtime's business, which the registry
/// does not know, so those fields are left unset rather than guessed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
}

/// `AgentExtension`. `required` has no presence in the proto, so `false`
/// is its default and left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentExtension {
    pub uri: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub params: Option<Map<String, Value>>,
}

/// `AgentSkill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// `AgentCardSignature`: a JWS with a detached payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentCardSignature {
    pub protected: String,
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub header: Option<Map<String, Value>>,
}

// --- Building --------------------------------------------------------------

/// Why a published version has no Agent Card. The text completes
/// "the agent ... has no A2A Agent Card: it ...".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoInterface {
    #[error("declares no a2a protocol in agent.yaml")]
    NoProtocol,
    #[error(
        "declares the a2a protocol without an endpoint (protocols: [{{name: a2a, endpoint: {{url, binding}}}}])"
    )]
    NoEndpoint,
    #[error("declares an a2a endpoint that is not valid: {0}")]
    InvalidEndpoint(String),
    #[error(
        "declares an a2a endpoint, but its agent.lock pins no a2a version (run `agentlang lock` and publish a new version)"
    )]
    NotLocked,
}

/// Where and how a version was published: the card's publication
/// extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// The container's SHA-256.
    pub container_sha256: Sha256Digest,
    /// The index of the publish's transparency-log entry (`None` until a
    /// version published before the log is logged).
    pub log_index: Option<u64>,
    /// The key that signed the container.
    pub signer: Option<KeyId>,
}

/// What [`build_card`] reads: a published version as the registry stores
/// it.
#[derive(Debug, Clone, Copy)]
pub struct CardFacts<'a> {
    /// The package name as first published.
    pub name: &'a str,
    pub version: &'a Version,
    /// agent.yaml, as the registry stores it (the typed spec as JSON).
    pub spec: &'a Value,
    /// agent.lock, as the registry stores it.
    pub lock: Option<&'a Value>,
    /// Skill name to its SKILL.md description.
    pub skill_descriptions: &'a BTreeMap<String, String>,
    pub provider: Option<&'a AgentProvider>,
    /// The agent's page in the registry's catalog.
    pub documentation_url: Option<&'a str>,
    pub publication: &'a Publication,
}

/// The A2A interface a stored agent.yaml and agent.lock declare: the
/// endpoint, with the protocol version the lock pins as `MAJOR.MINOR`
/// (the form `AgentInterface.protocol_version` takes).
pub fn interface(spec: &Value, lock: Option<&Value>) -> Result<AgentInterface, NoInterface> {
    let entry = spec
        .get("protocols")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(PROTOCOL))
        .ok_or(NoInterface::NoProtocol)?;
    let endpoint = entry.get("endpoint").ok_or(NoInterface::NoEndpoint)?;
    let endpoint =
        Endpoint::deserialize(endpoint).map_err(|e| NoInterface::InvalidEndpoint(e.to_string()))?;
    let locked = lock
        .and_then(|l| l.get("protocols"))
        .and_then(|p| p.get(PROTOCOL))
        .and_then(|p| p.get("version"))
        .and_then(Value::as_str)
        .and_then(|v| Version::parse(v).ok())
        .ok_or(NoInterface::NotLocked)?;
    let semver = locked.semver();
    Ok(AgentInterface {
        url: endpoint.url.as_str().to_owned(),
        protocol_binding: endpoint.binding.as_str().to_owned(),
        protocol_version: format!("{}.{}", semver.major, semver.minor),
    })
}

/// The unsigned card of a published agent version.
pub fn build_card(facts: &CardFacts<'_>) -> Result<AgentCard, NoInterface> {
    let interface = interface(facts.spec, facts.lock)?;
    let spec = facts.spec;
    let title = text_at(spec, "title").unwrap_or(facts.name);
    let description = text_at(spec, "description").unwrap_or(title);
    let mut skills = agent_skills(facts);
    if skills.is_empty() {
        // A2A requires at least one skill: the agent itself.
        skills.push(AgentSkill {
            id: format!("agent:{}", facts.name),
            name: title.to_owned(),
            description: description.to_owned(),
            tags: vec!["agent".to_owned()],
        });
    }
    Ok(AgentCard {
        name: title.to_owned(),
        description: description.to_owned(),
        supported_interfaces: vec![interface],
        provider: facts.provider.cloned(),
        version: facts.version.to_string(),
        documentation_url: facts.documentation_url.map(str::to_owned),
        capabilities: AgentCapabilities {
            extensions: vec![publication_extension(facts.publication)],
        },
        default_input_modes: TEXT_MODES.map(str::to_owned).to_vec(),
        default_output_modes: TEXT_MODES.map(str::to_owned).to_vec(),
        skills,
        signatures: Vec::new(),
    })
}

fn publication_extension(publication: &Publication) -> AgentExtension {
    let mut params = Map::new();
    params.insert(
        "containerSha256".to_owned(),
        Value::String(publication.container_sha256.to_hex()),
    );
    if let Some(index) = publication.log_index {
        params.insert("logIndex".to_owned(), Value::from(index));
    }
    if let Some(signer) = &publication.signer {
        params.insert("keyId".to_owned(), Value::String(signer.to_string()));
    }
    AgentExtension {
        uri: PUBLICATION_EXTENSION.to_owned(),
        description: "Where the agent was published: its container's SHA-256, the index of \
                      the publish in the registry's transparency log, the key that signed \
                      the container."
            .to_owned(),
        required: false,
        params: Some(params),
    }
}

/// A non-blank string at `key`.
fn text_at<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// The entries of a mapping at `key`, in stored order.
fn entries<'v>(spec: &'v Value, key: &str) -> impl Iterator<Item = (&'v String, &'v Value)> {
    spec.get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

fn skill(id: String, name: &str, description: String, tags: &[&str]) -> AgentSkill {
    AgentSkill {
        id,
        name: name.to_owned(),
        description,
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
    }
}

/// One skill per skill, registry tool, MCP server, HTTP tool and bash
/// tool, in that order; ids prefixed by what they are, so a skill and a
/// tool of one name stay two.
fn agent_skills(facts: &CardFacts<'_>) -> Vec<AgentSkill> {
    let spec = facts.spec;
    let mut out = Vec::new();

    let mut listed = std::collections::BTreeSet::new();
    let declared = spec
        .get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().or_else(|| s.get("name").and_then(Value::as_str)))
        .filter(|name| !name.trim().is_empty());
    let bundled = facts.skill_descriptions.keys().map(String::as_str);
    for name in declared.chain(bundled) {
        if !listed.insert(name) {
            continue;
        }
        let description = facts
            .skill_descriptions
            .get(name)
            .filter(|d| !d.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| format!("The {name} skill."));
        out.push(skill(
            format!("skill:{name}"),
            name,
            description,
            &["skill"],
        ));
    }

    let locked = |tool: &str| {
        facts
            .lock
            .and_then(|l| l.get("tools"))
            .and_then(|t| t.get(tool))
            .and_then(|t| t.get("version"))
            .and_then(Value::as_str)
    };
    for decl in spec
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = text_at(decl, "name") else {
            continue;
        };
        // The runtime's orchestration builtin, not a tool of the agent's.
        if name == DELEGATE_TOOL {
            continue;
        }
        let description = match locked(name) {
            Some(version) => format!("Calls the registry tool {name} {version}."),
            None => format!("Calls the registry tool {name}."),
        };
        out.push(skill(
            format!("tool:{name}"),
            name,
            description,
            &["tool", "registry"],
        ));
    }

    for (server, def) in entries(spec, "mcp_servers") {
        let tools: Vec<&str> = def
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let description = if tools.is_empty() {
            format!("The tools of the MCP server {server}.")
        } else {
            format!("The MCP server {server}'s tools: {}.", tools.join(", "))
        };
        out.push(skill(
            format!("mcp:{server}"),
            server,
            description,
            &["tool", "mcp"],
        ));
    }

    for (name, def) in entries(spec, "http_tools") {
        let description = text_at(def, "description").map_or_else(
            || {
                format!(
                    "Calls {} {}.",
                    def.get("method").and_then(Value::as_str).unwrap_or("HTTP"),
                    def.get("endpoint").and_then(Value::as_str).unwrap_or(name)
                )
            },
            str::to_owned,
        );
        out.push(skill(
            format!("http:{name}"),
            name,
            description,
            &["tool", "http"],
        ));
    }

    for (name, def) in entries(spec, "bash_tools") {
        let description = text_at(def, "description")
            .map_or_else(|| format!("Runs the shell tool {name}."), str::to_owned);
        out.push(skill(
            format!("bash:{name}"),
            name,
            description,
            &["tool", "bash"],
        ));
    }
    out
}

// --- Signing and verifying -------------------------------------------------

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("the card has no canonical form: {0}")]
    Canonical(#[from] CanonicalError),
    #[error("the card cannot be serialized: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The JWS protected header of a card signature, in the order it is
/// written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedHeader {
    pub alg: String,
    pub typ: String,
    pub kid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jku: Option<String>,
}

/// The bytes a card's signatures cover (§8.4.1): the card without
/// `signatures`, every empty string, list and object left out (ProtoJSON
/// omits them, so a reader's card has none), in RFC 8785 form.
pub fn signing_payload(card: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut unsigned = card.clone();
    if let Value::Object(map) = &mut unsigned {
        map.remove("signatures");
    }
    let cleaned = drop_empty(unsigned).unwrap_or_else(|| Value::Object(Map::new()));
    canonical::to_jcs_bytes(&cleaned)
}

/// `value` without empty strings, lists and objects, at any depth; `None`
/// when nothing is left of it.
fn drop_empty(value: Value) -> Option<Value> {
    match value {
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.into_iter().filter_map(drop_empty).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| drop_empty(v).map(|v| (k, v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    }
}

/// The card with one signature by `key` appended (any earlier ones kept).
/// `kid` names the key in the key set at `jku`.
pub fn sign(
    mut card: AgentCard,
    key: &SigningKey,
    kid: &str,
    jku: Option<&str>,
) -> Result<AgentCard, SignError> {
    let payload = signing_payload(&serde_json::to_value(&card)?)?;
    let header = ProtectedHeader {
        alg: ALG.to_owned(),
        typ: TYP.to_owned(),
        kid: kid.to_owned(),
        jku: jku.map(str::to_owned),
    };
    let protected = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header)?);
    let input = signing_input(&protected, &payload);
    let signature = key.sign(input.as_bytes());
    card.signatures.push(AgentCardSignature {
        protected,
        signature: URL_SAFE_NO_PAD.encode(signature.to_bytes()),
        header: None,
    });
    Ok(card)
}

/// `ASCII(BASE64URL(protected header) '.' BASE64URL(payload))`.
fn signing_input(protected: &str, payload: &[u8]) -> String {
    format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload))
}

/// The bytes a card is served as: its RFC 8785 form, so one card is
/// always the same bytes (and the same `ETag`).
pub fn to_bytes(card: &AgentCard) -> Result<Vec<u8>, SignError> {
    Ok(canonical::to_jcs_bytes(&serde_json::to_value(card)?)?)
}

/// A JSON Web Key Set (RFC 7517) of Ed25519 keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

/// An Ed25519 public key as a JWK (RFC 8037): `kty` `OKP`, `crv`
/// `Ed25519`, `x` the raw key in base64url.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Jwk {
    pub kty: String,
    pub crv: String,
    pub x: String,
    pub kid: String,
    pub alg: String,
    #[serde(rename = "use")]
    pub use_: String,
}

impl Jwk {
    /// The signing key `key`, known as `kid`.
    pub fn ed25519(key: &VerifyingKey, kid: &str) -> Self {
        Self {
            kty: "OKP".to_owned(),
            crv: "Ed25519".to_owned(),
            x: URL_SAFE_NO_PAD.encode(key.as_bytes()),
            kid: kid.to_owned(),
            alg: ALG.to_owned(),
            use_: "sig".to_owned(),
        }
    }

    /// The public key, when this is an Ed25519 key.
    pub fn verifying_key(&self) -> Option<VerifyingKey> {
        if self.kty != "OKP" || self.crv != "Ed25519" {
            return None;
        }
        let raw: [u8; 32] = URL_SAFE_NO_PAD.decode(&self.x).ok()?.try_into().ok()?;
        VerifyingKey::from_bytes(&raw).ok()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the card has no signatures")]
    Unsigned,
    #[error("the card has more than {MAX_SIGNATURES} signatures")]
    TooManySignatures,
    #[error("the card has no canonical form: {0}")]
    Canonical(String),
    #[error("no signature verifies with a key of the key set")]
    NoValidSignature,
}

/// Checks `card` (as read, JSON) against `keys`: at least one signature
/// must be an EdDSA JWS, by a key of the set named by its `kid`, over the
/// card's [`signing_payload`]. Answers the `kid` that verified.
pub fn verify(card: &Value, keys: &Jwks) -> Result<String, VerifyError> {
    let signatures: Vec<AgentCardSignature> = card
        .get("signatures")
        .cloned()
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default();
    if signatures.is_empty() {
        return Err(VerifyError::Unsigned);
    }
    if signatures.len() > MAX_SIGNATURES {
        return Err(VerifyError::TooManySignatures);
    }
    let payload = signing_payload(card).map_err(|e| VerifyError::Canonical(e.to_string()))?;
    for signature in &signatures {
        let header: Option<ProtectedHeader> = URL_SAFE_NO_PAD
            .decode(&signature.protected)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let Some(header) = header.filter(|h| h.alg == ALG) else {
            continue;
        };
        let Some(key) = keys
            .keys
            .iter()
            .find(|k| k.kid == header.kid)
            .and_then(Jwk::verifying_key)
        else {
            continue;
        };
        let Some(sig) = URL_SAFE_NO_PAD
            .decode(&signature.signature)
            .ok()
            .and_then(|b| Signature::from_slice(&b).ok())
        else {
            continue;
        };
        let input = signing_input(&signature.protected, &payload);
        if key.verify_strict(input.as_bytes(), &sig).is_ok() {
            return Ok(header.kid);
        }
    }
    Err(VerifyError::NoValidSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7; 32])
    }

    fn spec() -> Value {
        json!({
            "name": "researcher",
            "version": "1.2.0",
            "title": "Deep Researcher",
            "description": "Researches markets — and papers.",
            "tools": [{"name": "web-search", "version": "^1"}, {"name": "delegate"}],
            "mcp_servers": {"github": {"command": "npx", "tools": ["list_issues", "get_issue"]}},
            "http_tools": {"weather": {"endpoint": "https://api.example.com/w", "method": "GET"}},
            "bash_tools": {"rg": {"command": "rg", "description": "Searches files."}},
            "skills": [{"name": "summarize"}],
            "protocols": [
                {"name": "mcp"},
                {"name": "a2a", "version": "^1.0", "endpoint": {"url": "https://agents.example.com/a2a/v1", "binding": "JSONRPC"}}
            ]
        })
    }

    fn lock() -> Value {
        json!({
            "tools": {"web-search": {"version": "1.4.2"}},
            "protocols": {"a2a": {"version": "1.0.0", "source": "catalog"}}
        })
    }

    fn card_of(spec: &Value, lock: Option<&Value>) -> Result<AgentCard, NoInterface> {
        let descriptions = BTreeMap::from([("summarize".to_owned(), "Summarizes.".to_owned())]);
        build_card(&CardFacts {
            name: "researcher",
            version: &Version::parse("1.2.0").unwrap(),
            spec,
            lock,
            skill_descriptions: &descriptions,
            provider: Some(&AgentProvider {
                url: "https://reg.example/publishers/alice".to_owned(),
                organization: "alice".to_owned(),
            }),
            documentation_url: Some("https://reg.example/agents/researcher/1.2.0"),
            publication: &Publication {
                container_sha256: Sha256Digest::of(b"container"),
                log_index: Some(41),
                signer: Some(KeyId::of_raw_public_key(&[1; 32])),
            },
        })
    }

    #[test]
    fn the_card_says_what_the_version_declares() {
        let card = card_of(&spec(), Some(&lock())).unwrap();
        let json = serde_json::to_value(&card).unwrap();
        assert_eq!(json["name"], "Deep Researcher");
        assert_eq!(json["version"], "1.2.0");
        assert_eq!(
            json["supportedInterfaces"],
            json!([{"url": "https://agents.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
        );
        assert_eq!(json["provider"]["organization"], "alice");
        let ids: Vec<&str> = card.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "skill:summarize",
                "tool:web-search",
                "mcp:github",
                "http:weather",
                "bash:rg"
            ]
        );
        assert_eq!(card.skills[0].description, "Summarizes.");
        assert_eq!(
            card.skills[1].description,
            "Calls the registry tool web-search 1.4.2."
        );
        assert_eq!(
            card.skills[3].description,
            "Calls GET https://api.example.com/w."
        );
        let params = &json["capabilities"]["extensions"][0]["params"];
        assert_eq!(params["logIndex"], 41);
        assert_eq!(
            params["containerSha256"],
            Sha256Digest::of(b"container").to_hex()
        );
        assert!(
            json["capabilities"]["extensions"][0]
                .get("required")
                .is_none()
        );
        // Nothing a ProtoJSON reader would drop: served bytes are signed bytes.
        assert_eq!(drop_empty(json.clone()), Some(json));
    }

    #[test]
    fn an_agent_without_skills_or_tools_is_its_own_skill() {
        let mut spec = spec();
        for key in ["tools", "mcp_servers", "http_tools", "bash_tools", "skills"] {
            spec.as_object_mut().unwrap().remove(key);
        }
        let descriptions = BTreeMap::new();
        let lock = lock();
        let card = build_card(&CardFacts {
            name: "researcher",
            version: &Version::parse("1.2.0").unwrap(),
            spec: &spec,
            lock: Some(&lock),
            skill_descriptions: &descriptions,
            provider: None,
            documentation_url: None,
            publication: &Publication {
                container_sha256: Sha256Digest::of(b"c"),
                log_index: None,
                signer: None,
            },
        })
        .unwrap();
        assert_eq!(card.skills.len(), 1);
        assert_eq!(card.skills[0].id, "agent:researcher");
        assert_eq!(
            card.skills[0].description,
            "Researches markets — and papers."
        );
        let json = serde_json::to_value(&card).unwrap();
        assert!(json.get("provider").is_none());
        assert_eq!(
            json["capabilities"]["extensions"][0]["params"],
            json!({"containerSha256": Sha256Digest::of(b"c").to_hex()})
        );
    }

    #[test]
    fn a_version_without_an_interface_says_why() {
        let mut no_a2a = spec();
        no_a2a["protocols"] = json!([{"name": "mcp"}]);
        assert_eq!(
            card_of(&no_a2a, Some(&lock())),
            Err(NoInterface::NoProtocol)
        );
        let mut bare = spec();
        bare["protocols"] = json!([{"name": "a2a"}]);
        assert_eq!(card_of(&bare, Some(&lock())), Err(NoInterface::NoEndpoint));
        let mut bad = spec();
        bad["protocols"][1]["endpoint"]["binding"] = json!("SOAP");
        assert!(matches!(
            card_of(&bad, Some(&lock())),
            Err(NoInterface::InvalidEndpoint(m)) if m.contains("SOAP")
        ));
        assert_eq!(card_of(&spec(), None), Err(NoInterface::NotLocked));
        assert_eq!(
            card_of(
                &spec(),
                Some(&json!({"protocols": {"mcp": {"version": "1.0.0"}}}))
            ),
            Err(NoInterface::NotLocked)
        );
    }

    #[test]
    fn a_signed_card_verifies_and_a_changed_one_does_not() {
        let card = card_of(&spec(), Some(&lock())).unwrap();
        let kid = "registry-key";
        let signed = sign(
            card,
            &key(),
            kid,
            Some("https://reg.example/.well-known/jwks.json"),
        )
        .unwrap();
        let jwks = Jwks {
            keys: vec![Jwk::ed25519(&key().verifying_key(), kid)],
        };
        let served: Value = serde_json::from_slice(&to_bytes(&signed).unwrap()).unwrap();
        assert_eq!(verify(&served, &jwks).unwrap(), kid);

        let protected: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(&signed.signatures[0].protected)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            protected,
            json!({"alg": "EdDSA", "typ": "JOSE", "kid": kid, "jku": "https://reg.example/.well-known/jwks.json"})
        );

        let mut tampered = served.clone();
        tampered["supportedInterfaces"][0]["url"] = json!("https://evil.example/a2a");
        assert_eq!(verify(&tampered, &jwks), Err(VerifyError::NoValidSignature));
        let other = Jwks {
            keys: vec![Jwk::ed25519(
                &SigningKey::from_bytes(&[8; 32]).verifying_key(),
                kid,
            )],
        };
        assert_eq!(verify(&served, &other), Err(VerifyError::NoValidSignature));
        let mut unsigned = served;
        unsigned.as_object_mut().unwrap().remove("signatures");
        assert_eq!(verify(&unsigned, &jwks), Err(VerifyError::Unsigned));
    }

    #[test]
    fn the_payload_follows_the_specifications_example() {
        // §8.4.1's example: defaults dropped, keys sorted, no whitespace.
        let card = json!({
            "name": "Example Agent",
            "description": "",
            "capabilities": {"streaming": false, "pushNotifications": false, "extensions": []},
            "skills": [],
            "signatures": [{"protected": "x", "signature": "y"}]
        });
        // The specification keeps the required `description` and `skills`
        // when empty; readers (a2a-sdk) drop them, and cards built here
        // never have them empty, so the two never disagree on one.
        assert_eq!(
            String::from_utf8(signing_payload(&card).unwrap()).unwrap(),
            r#"{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}"#
        );
    }

    #[test]
    fn jwks_round_trip_the_key() {
        let jwk = Jwk::ed25519(&key().verifying_key(), "k");
        let json = serde_json::to_value(&jwk).unwrap();
        assert_eq!(json["use"], "sig");
        assert_eq!(json["kty"], "OKP");
        assert_eq!(jwk.verifying_key(), Some(key().verifying_key()));
        let wrong = Jwk {
            crv: "X25519".to_owned(),
            ..jwk
        };
        assert_eq!(wrong.verifying_key(), None);
    }
}
