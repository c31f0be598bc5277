//! Prompt envelopes: tampering, wrong keys and moved ciphertexts fail with a
//! clear error; an independent implementation (Python's `cryptography`)
//! agrees with ours byte for byte.

use std::{fs, path::Path, process::Command};

use agentlang_core::{
    Kind, MemberPath, PackageName, Version,
    crypt::{self, Aad, CryptError, PromptKey},
};

fn aad(kind: Kind, name: &str, version: &str, member: &str) -> Aad {
    Aad::new(
        kind,
        &PackageName::new(name).unwrap(),
        &Version::parse(version).unwrap(),
        &MemberPath::new(member).unwrap(),
    )
}

fn home() -> Aad {
    aad(Kind::Agent, "demo-agent", "1.0.0", "prompt.yaml")
}

const PLAINTEXT: &[u8] = b"sections:\n  - name: secret\n    content: the plan\n";

fn key() -> PromptKey {
    PromptKey::from_bytes([0x42; 32])
}

#[test]
fn wrong_key_fails() {
    let envelope = crypt::seal(&key(), &home(), PLAINTEXT).unwrap();
    let other = PromptKey::from_bytes([0x43; 32]);
    assert_eq!(
        crypt::open(&other, &home(), &envelope).unwrap_err(),
        CryptError::Decrypt
    );
}

#[test]
fn every_flipped_bit_fails() {
    let envelope = crypt::seal(&key(), &home(), PLAINTEXT).unwrap();
    for byte in 0..envelope.len() {
        for bit in 0..8 {
            let mut tampered = envelope.clone();
            tampered[byte] ^= 1 << bit;
            let expected = if byte < crypt::MAGIC.len() {
                CryptError::BadMagic
            } else {
                CryptError::Decrypt
            };
            assert_eq!(
                crypt::open(&key(), &home(), &tampered).unwrap_err(),
                expected,
                "byte {byte} bit {bit}"
            );
        }
    }
}

#[test]
fn moved_ciphertext_fails() {
    let envelope = crypt::seal(&key(), &home(), PLAINTEXT).unwrap();
    for elsewhere in [
        aad(Kind::Tool, "demo-agent", "1.0.0", "prompt.yaml"),
        aad(Kind::Agent, "other-agent", "1.0.0", "prompt.yaml"),
        aad(Kind::Agent, "demo-agent", "1.0.1", "prompt.yaml"),
        aad(Kind::Agent, "demo-agent", "1.0.0", "other.yaml"),
    ] {
        assert_eq!(
            crypt::open(&key(), &elsewhere, &envelope).unwrap_err(),
            CryptError::Decrypt,
            "{}",
            elsewhere.as_str()
        );
    }
}

#[test]
fn truncated_envelopes_fail() {
    let envelope = crypt::seal(&key(), &home(), PLAINTEXT).unwrap();
    assert_eq!(
        crypt::open(&key(), &home(), &envelope[..35]).unwrap_err(),
        CryptError::TooShort(35)
    );
    assert_eq!(
        crypt::open(&key(), &home(), &envelope[..envelope.len() - 1]).unwrap_err(),
        CryptError::Decrypt
    );
    // An empty plaintext is a valid, minimal envelope.
    let empty = crypt::seal(&key(), &home(), b"").unwrap();
    assert_eq!(empty.len(), crypt::MIN_ENVELOPE_LEN);
    assert!(crypt::open(&key(), &home(), &empty).unwrap().is_empty());
}

#[test]
fn envelope_layout() {
    let envelope = crypt::seal(&key(), &home(), PLAINTEXT).unwrap();
    assert_eq!(&envelope[..8], b"AGLENC1\n");
    assert_eq!(envelope.len(), 8 + 12 + PLAINTEXT.len() + 16);
    crypt::check_envelope_shape(&envelope).unwrap();
}

/// Runs the Python implementation, or says why it cannot (skip outside CI).
fn python(args: &[&str]) -> Option<Vec<u8>> {
    let has_cryptography = Command::new("python3")
        .args(["-c", "import cryptography"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cryptography {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3 with the cryptography package is required in CI"
        );
        eprintln!("skipping: python3 with the cryptography package is not available");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/aesgcm_envelope.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out.stdout)
}

#[test]
fn python_cryptography_opens_our_envelope_and_seals_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let key = PromptKey::generate().unwrap();
    let key_file = dir.path().join("prompt.key");
    fs::write(&key_file, key.to_key_file().as_bytes()).unwrap();
    let aad = home();

    let envelope = crypt::seal(&key, &aad, PLAINTEXT).unwrap();
    let envelope_file = dir.path().join("prompt.yaml.enc");
    fs::write(&envelope_file, &envelope).unwrap();
    let Some(opened) = python(&[
        "open",
        key_file.to_str().unwrap(),
        aad.as_str(),
        envelope_file.to_str().unwrap(),
    ]) else {
        return;
    };
    assert_eq!(opened, PLAINTEXT);

    let plain_file = dir.path().join("prompt.yaml");
    fs::write(&plain_file, PLAINTEXT).unwrap();
    let sealed = python(&[
        "seal",
        key_file.to_str().unwrap(),
        aad.as_str(),
        plain_file.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(sealed, envelope, "same inputs, same bytes, either side");
    assert_eq!(
        crypt::open(&key, &aad, &sealed).unwrap().as_slice(),
        PLAINTEXT
    );
}
