//! Interop with the real `openssl` binary, both ways: its keys work with our
//! code, and it accepts our signatures on a real container's manifest.
//! Outside CI a missing openssl skips these tests with a message; with
//! `CI=true` it fails them.

mod container_support;

use std::{
    fs,
    path::Path,
    process::{Command, Output},
};

use agentlang_core::{
    Kind,
    container::{self, BuildInput, Limits},
    signing::{PublicKey, SecretKey},
};
use container_support::*;

fn openssl_available() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "openssl is required in CI"
        );
        eprintln!("skipping: openssl is not installed");
    }
    found
}

fn openssl(args: &[&str], dir: &Path) -> Output {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn check(output: &Output) {
    assert!(
        output.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn openssl_key_signs_with_our_code() {
    if !openssl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check(&openssl(
        &["genpkey", "-algorithm", "ed25519", "-out", "key.pem"],
        dir.path(),
    ));
    check(&openssl(
        &["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
        dir.path(),
    ));
    let key = SecretKey::from_pkcs8_pem(&fs::read_to_string(dir.path().join("key.pem")).unwrap())
        .unwrap();
    let public =
        PublicKey::from_spki_pem(&fs::read_to_string(dir.path().join("pub.pem")).unwrap()).unwrap();
    assert_eq!(key.public_key(), public);
    // And we write private keys in exactly openssl's form.
    assert_eq!(
        key.to_pkcs8_pem().as_str(),
        fs::read_to_string(dir.path().join("key.pem")).unwrap()
    );
    // Our SPKI encoding is byte for byte what openssl writes.
    assert_eq!(
        public.to_spki_pem(),
        fs::read_to_string(dir.path().join("pub.pem")).unwrap()
    );

    let signature = key.sign(b"message");
    public.verify(b"message", &signature).unwrap();
    assert!(public.verify(b"massage", &signature).is_err());
}

#[test]
fn openssl_reads_our_keys() {
    if !openssl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = SecretKey::generate().unwrap();
    fs::write(dir.path().join("ours.pem"), key.to_pkcs8_pem().as_bytes()).unwrap();
    let out = openssl(&["pkey", "-in", "ours.pem", "-pubout"], dir.path());
    check(&out);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        key.public_key().to_spki_pem()
    );
}

#[test]
fn openssl_verifies_our_container_signature() {
    if !openssl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    check(&openssl(
        &["genpkey", "-algorithm", "ed25519", "-out", "key.pem"],
        dir.path(),
    ));
    check(&openssl(
        &["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
        dir.path(),
    ));
    let key = SecretKey::from_pkcs8_pem(&fs::read_to_string(dir.path().join("key.pem")).unwrap())
        .unwrap();
    let bytes = container::build(&BuildInput {
        tree: &sample_tree(),
        kind: Kind::Agent,
        name: &name(),
        version: &version(),
        created: created(),
        signing_key: &key,
        prompt_key: Some(&fixed_prompt_key()),
    })
    .unwrap();
    let c = container::read(bytes.as_slice(), &Limits::default()).unwrap();
    fs::write(dir.path().join("manifest.json"), c.manifest_bytes()).unwrap();
    fs::write(dir.path().join("signature.sig"), c.signature()).unwrap();

    let verify = [
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        "pub.pem",
        "-rawin",
        "-in",
        "manifest.json",
        "-sigfile",
        "signature.sig",
    ];
    let out = openssl(&verify, dir.path());
    check(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signature Verified Successfully"));

    // And openssl refuses a manifest changed by one byte.
    let mut tampered = c.manifest_bytes().to_vec();
    tampered[10] ^= 1;
    fs::write(dir.path().join("manifest.json"), tampered).unwrap();
    assert!(!openssl(&verify, dir.path()).status.success());
}
