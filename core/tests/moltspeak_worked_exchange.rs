//! The worked exchange in docs/moltspeak.md was written by a client nobody
//! here wrote (`docs/examples/moltspeak_exchange.py`: PyNaCl's libsodium,
//! `cryptography`, `rfc8785`). This checks every byte of it with the core's
//! own code, both ways: what the document shows opens and verifies here, and
//! what this crate builds from the same keys, ids, times and nonces is the
//! document's text exactly. So the document is true, and a client that
//! follows it talks to the registry.

use agentlang_core::protocol::moltspeak::{
    EncryptedEnvelope, EncryptionKey, EncryptionSecret, Envelope, Message, Party, PublicKey,
    SharedBox, Transmission, crypto, handshake,
};
use base64::{Engine, engine::general_purpose::STANDARD};
use ed25519_dalek::SigningKey;
use serde_json::Value;

/// The fenced blocks between the document's worked-exchange markers, in
/// order, each as (language, text).
fn blocks() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/moltspeak.md"))
        .expect("docs/moltspeak.md");
    let region = doc
        .split_once("<!-- worked-exchange:start -->")
        .and_then(|(_, rest)| rest.split_once("<!-- worked-exchange:end -->"))
        .expect("the worked-exchange markers")
        .0;
    let mut out = Vec::new();
    let mut lines = region.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```").filter(|l| !l.is_empty()) {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.push((lang.to_owned(), body.join("\n")));
        }
    }
    out
}

fn json(blocks: &[(String, String)], i: usize) -> Value {
    assert_eq!(blocks[i].0, "json", "block {i}");
    serde_json::from_str(&blocks[i].1).expect("a JSON block")
}

fn text(blocks: &[(String, String)], i: usize) -> &str {
    assert_eq!(blocks[i].0, "text", "block {i}");
    &blocks[i].1
}

fn bytes<const N: usize>(value: &Value) -> [u8; N] {
    let s = value.as_str().expect("a string");
    STANDARD
        .decode(s.strip_prefix("base64:").expect("base64: prefix"))
        .expect("base64")
        .try_into()
        .expect("length")
}

fn message(value: Value) -> Message {
    Message::from_value(value).expect("a valid message")
}

fn encrypted(value: Value) -> EncryptedEnvelope {
    match Transmission::from_value(value).expect("an envelope") {
        Transmission::Envelope(Envelope::Encrypted(e)) => e,
        other => panic!("not an encrypted envelope: {other:?}"),
    }
}

#[test]
fn the_documented_exchange_verifies_opens_and_rebuilds_byte_for_byte() {
    let b = blocks();
    assert_eq!(
        b.len(),
        11,
        "keys, 2 signing inputs, 4 handshake messages, 2 plaintexts, 2 envelopes"
    );
    let keys = json(&b, 0);
    let client = SigningKey::from_bytes(&bytes(&keys["client_ed25519_seed"]));
    let client_x = EncryptionSecret::from_bytes(bytes(&keys["client_x25519_secret"]));
    let registry = SigningKey::from_bytes(&bytes(&keys["registry_ed25519_seed"]));
    let registry_x = EncryptionSecret::from_ed25519(&registry);
    assert_eq!(
        registry_x.to_bytes(),
        bytes::<32>(&keys["registry_x25519_secret"]),
        "the registry's X25519 secret is libsodium's conversion of its Ed25519 key"
    );
    let registry_key = PublicKey::from(registry.verifying_key());

    // 1. hello: verifies, its JCS is the documented signing input, and our
    // client builder makes the same message from the same parts.
    let hello = message(json(&b, 2));
    assert_eq!(
        String::from_utf8(hello.signing_bytes().unwrap()).unwrap(),
        text(&b, 1)
    );
    let verified = handshake::check_hello(&hello).expect("a valid hello");
    assert_eq!(verified.key, PublicKey::from(client.verifying_key()));
    assert_eq!(verified.enc_key, client_x.public_key());
    let party: Party = hello.from().cloned().unwrap();
    let caps = hello.payload()["capabilities"].as_array().unwrap().clone();
    let rebuilt = handshake::hello(hello.id(), hello.ts().unwrap(), &party, caps, &client).unwrap();
    assert_eq!(rebuilt.to_value(), hello.to_value(), "our hello builder");

    // 2. hello_ack, signed by the registry, answering the hello.
    let ack = handshake::check_hello_ack(&message(json(&b, 3)), hello.id(), Some(&registry_key))
        .expect("a valid hello_ack");
    assert_eq!(ack.enc_key, registry_x.public_key());

    // 3. verify: the challenge echoed, rebuilt byte for byte.
    let verify = message(json(&b, 5));
    assert_eq!(
        String::from_utf8(verify.signing_bytes().unwrap()).unwrap(),
        text(&b, 4)
    );
    let request = handshake::check_verify(&verify, verify.ts().unwrap()).expect("a valid verify");
    assert_eq!(request.challenge, ack.challenge);
    let rebuilt = handshake::verify(
        verify.id(),
        verify.ts().unwrap(),
        &party,
        &ack.challenge,
        &request.nonce,
        &client,
    )
    .unwrap();
    assert_eq!(rebuilt.to_value(), verify.to_value(), "our verify builder");

    // 4. verify_response: our nonce, signed by the registry.
    let grant = handshake::check_verify_response(
        &message(json(&b, 6)),
        verify.id(),
        &registry_key,
        &request.nonce,
    )
    .expect("a valid verify_response");

    // 5. The encrypted query opens with the registry's secret to exactly the
    // documented plaintext, and sealing that plaintext here with the same
    // nonce gives libsodium's ciphertext.
    let query = encrypted(json(&b, 8));
    assert_eq!(query.session.as_deref(), Some(grant.id.as_str()));
    assert_eq!(
        EncryptionKey::from_bytes(query.sender_public),
        client_x.public_key()
    );
    let at_registry = SharedBox::new(&registry_x, &client_x.public_key());
    let plaintext = at_registry
        .decrypt(&query.nonce, &query.ciphertext)
        .expect("opens");
    assert_eq!(std::str::from_utf8(&plaintext).unwrap(), text(&b, 7));
    let inner = crypto::open(&at_registry, &query).expect("a message inside");
    inner
        .verify(&client.verifying_key())
        .expect("signed by the session's key");
    assert_eq!(
        at_registry.encrypt(&query.nonce, &plaintext),
        query.ciphertext
    );

    // 6. The answer opens with the client's secret.
    let answer = encrypted(json(&b, 9));
    assert_eq!(
        EncryptionKey::from_bytes(answer.sender_public),
        registry_x.public_key()
    );
    let at_client = SharedBox::new(&client_x, &registry_x.public_key());
    let plaintext = at_client
        .decrypt(&answer.nonce, &answer.ciphertext)
        .expect("opens");
    assert_eq!(std::str::from_utf8(&plaintext).unwrap(), text(&b, 10));
    let inner = crypto::open(&at_client, &answer).expect("a message inside");
    inner
        .verify(&registry.verifying_key())
        .expect("signed by the registry");
    assert_eq!(
        inner.re(),
        Some(message(serde_json::from_str(text(&b, 7)).unwrap()).id())
    );
}
