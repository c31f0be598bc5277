//! An agent.yaml with an A2A endpoint, read as publish reads it, stored as
//! the registry stores it (the typed spec as JSON), made into a card,
//! signed and verified.

use std::collections::BTreeMap;

use agentlang_core::{
    Version,
    a2a::{self, AgentProvider, Binding, CardFacts, Jwk, Jwks, Publication},
    agent::parse_agent,
    digest::Sha256Digest,
};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

const AGENT_YAML: &str = "\
name: travel-planner
version: 2.1.0
title: Travel Planner
description: Plans trips.
protocols:
  - name: a2a
    version: ^1.0.0
    endpoint:
      url: https://travel.example.com/a2a/v1
      binding: HTTP+JSON
      x-region: eu
  - name: mcp
";

#[test]
fn a_declared_endpoint_is_kept_and_becomes_a_signed_card() {
    let spec = parse_agent(AGENT_YAML.as_bytes()).unwrap();
    let endpoint = spec.protocols[0].endpoint.as_ref().unwrap();
    assert_eq!(endpoint.binding, Binding::HttpJson);
    assert_eq!(endpoint.url.as_str(), "https://travel.example.com/a2a/v1");
    assert!(spec.protocols[1].endpoint.is_none());

    // What the registry stores, and what it serves back as the spec.
    let stored = serde_json::to_value(&spec).unwrap();
    assert_eq!(
        stored["protocols"][0]["endpoint"],
        json!({"url": "https://travel.example.com/a2a/v1", "binding": "HTTP+JSON", "x-region": "eu"})
    );
    // Stored specs parse again into an equal one.
    let again = parse_agent(&serde_json::to_vec(&stored).unwrap()).unwrap();
    assert_eq!(again, spec);

    let lock = json!({"protocols": {"a2a": {"version": "1.0.0", "source": "catalog"}}});
    let key = SigningKey::from_bytes(&[3; 32]);
    let card = a2a::build_card(&CardFacts {
        name: "travel-planner",
        version: &Version::parse("2.1.0").unwrap(),
        spec: &stored,
        lock: Some(&lock),
        skill_descriptions: &BTreeMap::new(),
        provider: Some(&AgentProvider {
            url: "https://registry.example/publishers/ana".to_owned(),
            organization: "ana".to_owned(),
        }),
        documentation_url: Some("https://registry.example/agents/travel-planner/2.1.0"),
        publication: &Publication {
            container_sha256: Sha256Digest::of(b"travel-planner-2.1.0"),
            log_index: Some(7),
            signer: None,
        },
    })
    .unwrap();
    let signed = a2a::sign(
        card,
        &key,
        "k1",
        Some("https://registry.example/.well-known/jwks.json"),
    )
    .unwrap();
    let served: Value = serde_json::from_slice(&a2a::to_bytes(&signed).unwrap()).unwrap();
    assert_eq!(
        served["supportedInterfaces"],
        json!([{"url": "https://travel.example.com/a2a/v1", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}])
    );
    // No x- key of agent.yaml reaches the card: a reader would drop it.
    assert!(
        !String::from_utf8(a2a::to_bytes(&signed).unwrap())
            .unwrap()
            .contains("x-region")
    );
    let jwks = Jwks {
        keys: vec![Jwk::ed25519(&key.verifying_key(), "k1")],
    };
    assert_eq!(a2a::verify(&served, &jwks).unwrap(), "k1");
}

/// The fenced block of `page` whose info string is `info`.
fn block<'a>(page: &'a str, info: &str) -> &'a str {
    let start = page
        .find(&format!("```{info}\n"))
        .unwrap_or_else(|| panic!("no ```{info} block"))
        + info.len()
        + 4;
    let len = page[start..].find("```").unwrap();
    &page[start..start + len]
}

#[test]
fn the_docs_worked_example_is_what_the_registry_serves() {
    let page = include_str!("../../docs/a2a.md");
    let spec = parse_agent(block(page, "yaml example=a2a file=agent.yaml").as_bytes()).unwrap();
    let stored = serde_json::to_value(&spec).unwrap();
    let lock = json!({
        "tools": {"flight-search": {"version": "1.4.2"}},
        "protocols": {"a2a": {"version": "1.0.0", "source": "catalog"}}
    });
    // The example key: 32 bytes of 0x2a.
    let key = SigningKey::from_bytes(&[0x2a; 32]);
    let kid = agentlang_core::signing::KeyId::of_raw_public_key(key.verifying_key().as_bytes());
    let card = a2a::build_card(&CardFacts {
        name: "travel-planner",
        version: &Version::parse("2.1.0").unwrap(),
        spec: &stored,
        lock: Some(&lock),
        skill_descriptions: &BTreeMap::new(),
        provider: Some(&AgentProvider {
            url: "https://registry.example.com/publishers/ana".to_owned(),
            organization: "ana".to_owned(),
        }),
        documentation_url: Some("https://registry.example.com/agents/travel-planner/2.1.0"),
        publication: &Publication {
            container_sha256: Sha256Digest::parse_hex(
                "65ec64789a979df8b5570126f9cbfb075da0e356a5248de588d0b7c52f121a7e",
            )
            .unwrap(),
            log_index: Some(1042),
            signer: Some(
                agentlang_core::signing::KeyId::new(
                    "8c0cc17a04942cc4f8e0fe0b302606d3108860c126428ba2ceeb5f9ed41c2b05",
                )
                .unwrap(),
            ),
        },
    })
    .unwrap();
    let signed = a2a::sign(
        card,
        &key,
        kid.as_str(),
        Some("https://registry.example.com/.well-known/jwks.json"),
    )
    .unwrap();
    let served: Value = serde_json::from_slice(&a2a::to_bytes(&signed).unwrap()).unwrap();
    let documented: Value = serde_json::from_str(block(page, "json a2a=card")).unwrap();
    assert_eq!(served, documented);
    let jwks = Jwks {
        keys: vec![Jwk::ed25519(&key.verifying_key(), kid.as_str())],
    };
    let documented_jwks: Jwks = serde_json::from_str(block(page, "json a2a=jwks")).unwrap();
    assert_eq!(jwks, documented_jwks);
    assert_eq!(
        String::from_utf8(a2a::signing_payload(&served).unwrap()).unwrap(),
        block(page, "text").trim_end()
    );
    a2a::verify(&documented, &documented_jwks).unwrap();
}
