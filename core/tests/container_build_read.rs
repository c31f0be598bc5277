//! Build → read → verify → decrypt, determinism, and the builder's refusals.

mod container_support;

use agentlang_core::{
    Kind,
    container::{self, BuildInput, ContainerError, Limits},
    crypt::{self, Aad, CryptError, PromptKey},
    signing::{SecretKey, SigningError},
};
use container_support::*;
use sha2::{Digest, Sha256};

/// SHA-256 of `sample_container()`. If this changes, the container format
/// changed: old containers would no longer rebuild bit for bit. Update it
/// only together with a format decision.
const GOLDEN_SHA256: &str = "7601ab125c0eb8ef5dfe0e12427ce4bab8ef8a9c5812eecb67b309cef3f39671";

#[test]
fn building_twice_gives_identical_bytes() {
    assert_eq!(sample_container(), sample_container());
}

#[test]
fn golden_container_hash() {
    let bytes = sample_container();
    assert_eq!(hex::encode(Sha256::digest(&bytes)), GOLDEN_SHA256);
}

#[test]
fn gzip_and_tar_headers_are_fixed() {
    let bytes = sample_container();
    assert_eq!(&bytes[..3], &[0x1f, 0x8b, 8], "gzip, deflate");
    assert_eq!(
        bytes[3], 0,
        "no flags: no file name, comment or extra field"
    );
    assert_eq!(&bytes[4..8], &[0, 0, 0, 0], "mtime 0");
    assert_eq!(bytes[9], 255, "OS byte: unknown");

    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut paths = Vec::new();
    for entry in archive.entries().unwrap() {
        let entry = entry.unwrap();
        let header = entry.header();
        assert_eq!(header.entry_type(), tar::EntryType::Regular);
        assert_eq!(header.mode().unwrap(), 0o644);
        assert_eq!(header.uid().unwrap(), 0);
        assert_eq!(header.gid().unwrap(), 0);
        assert_eq!(header.mtime().unwrap(), 0);
        assert_eq!(header.username().unwrap(), Some(""));
        assert_eq!(header.groupname().unwrap(), Some(""));
        assert!(header.as_ustar().is_some(), "POSIX ustar header");
        paths.push(entry.path().unwrap().to_string_lossy().into_owned());
    }
    assert_eq!(
        paths,
        [
            // First, so a reader checks who signed before the payload comes.
            "manifest.json",
            "signature.sig",
            "academic-researcher.yaml",
            "agent.lock",
            "agent.yaml",
            "context/templates/report.md",
            "prompt.yaml.enc",
            "skills/search/SKILL.md",
            "ux.yaml",
        ]
    );
}

#[test]
fn round_trip_build_read_verify_decrypt() {
    let bytes = sample_container();
    let c = container::read(bytes.as_slice(), &Limits::default()).unwrap();

    assert_eq!(c.size(), bytes.len() as u64);
    assert_eq!(c.sha256().to_hex(), hex::encode(Sha256::digest(&bytes)));
    let m = c.manifest();
    assert_eq!(m.kind(), Kind::Agent);
    assert_eq!(m.name(), &name());
    assert_eq!(m.version(), &version());
    assert_eq!(m.created(), created());
    assert_eq!(m.signer(), &fixed_key().public_key().key_id());
    let listed: Vec<_> = m.files().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        listed,
        [
            "academic-researcher.yaml",
            "agent.lock",
            "agent.yaml",
            "context/templates/report.md",
            "prompt.yaml.enc",
            "skills/search/SKILL.md",
            "ux.yaml",
        ]
    );
    let enc = m.file("prompt.yaml.enc").unwrap();
    assert!(enc.encrypted);
    assert!(!m.file("agent.yaml").unwrap().encrypted);
    assert_eq!(c.manifest_bytes(), m.to_bytes().as_slice());

    // Kept in memory: metadata; hashed only: context files.
    assert_eq!(c.member("agent.yaml"), Some(AGENT_YAML.as_bytes()));
    assert!(c.member("skills/search/SKILL.md").is_some());
    assert!(c.member("ux.yaml").is_some());
    assert!(c.member("academic-researcher.yaml").is_some());
    assert!(c.member("context/templates/report.md").is_none());
    assert!(c.member("prompt.yaml").is_none());

    c.verify_signature(&fixed_key().public_key()).unwrap();

    let aad = Aad::new(Kind::Agent, &name(), &version(), &path("prompt.yaml"));
    let envelope = c.member("prompt.yaml.enc").unwrap();
    assert_eq!(enc.size, envelope.len() as u64);
    let plain = crypt::open(&fixed_prompt_key(), &aad, envelope).unwrap();
    assert_eq!(plain.as_slice(), PROMPT_YAML.as_bytes());

    // The same through the container, which takes the AAD from the manifest.
    let plain = c
        .open_encrypted("prompt.yaml.enc", &fixed_prompt_key())
        .unwrap();
    assert_eq!(plain.as_slice(), PROMPT_YAML.as_bytes());
    assert_eq!(
        c.open_encrypted("prompt.yaml.enc", &PromptKey::from_bytes([1; 32]))
            .unwrap_err(),
        ContainerError::Decrypt {
            path: "prompt.yaml.enc".into(),
            source: CryptError::Decrypt,
        }
    );
    assert_eq!(
        c.open_encrypted("agent.yaml", &fixed_prompt_key())
            .unwrap_err(),
        ContainerError::NotEncrypted("agent.yaml".into())
    );
}

#[test]
fn an_envelope_moved_into_another_package_does_not_open() {
    // Same key, same prompt, but sealed for another package name: the
    // manifest lists it correctly, so only the AAD can catch the move.
    let foreign = crypt::seal(
        &fixed_prompt_key(),
        &Aad::new(
            Kind::Agent,
            &agentlang_core::PackageName::new("other-agent").unwrap(),
            &version(),
            &path("prompt.yaml"),
        ),
        PROMPT_YAML.as_bytes(),
    )
    .unwrap();
    let bytes = signed_container(
        Kind::Agent,
        &[
            ("agent.yaml", AGENT_YAML.as_bytes()),
            ("prompt.yaml.enc", &foreign),
        ],
    );
    let c = container::read(bytes.as_slice(), &Limits::default()).unwrap();
    assert_eq!(
        c.open_encrypted("prompt.yaml.enc", &fixed_prompt_key())
            .unwrap_err(),
        ContainerError::Decrypt {
            path: "prompt.yaml.enc".into(),
            source: CryptError::Decrypt,
        }
    );
}

#[test]
fn containers_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<container::Container>();
    send_sync::<ContainerError>();
}

#[test]
fn system_tar_lists_our_container() {
    // GNU tar (or bsdtar) reading our bytes shows the format is standard
    // POSIX, PAX long paths included.
    let Ok(probe) = std::process::Command::new("tar").arg("--version").output() else {
        eprintln!("skipping: no tar binary");
        return;
    };
    assert!(probe.status.success());
    let mut tree = sample_tree();
    let long = format!("context/{}/{}.md", "d".repeat(120), "f".repeat(110));
    tree.insert(path(&long), b"deep".to_vec());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.agent");
    std::fs::write(&file, build_tree(&tree, Some(&fixed_prompt_key()))).unwrap();
    let out = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8(out.stdout).unwrap();
    assert!(listing.lines().any(|l| l == long), "{listing}");
    assert!(listing.lines().any(|l| l == "prompt.yaml.enc"));
    assert_eq!(listing.lines().count(), 10);
}

#[test]
fn unencrypted_build_keeps_the_prompt_in_plaintext() {
    let bytes = build_tree(&sample_tree(), None);
    let c = container::read(bytes.as_slice(), &Limits::default()).unwrap();
    assert_eq!(c.member("prompt.yaml"), Some(PROMPT_YAML.as_bytes()));
    assert!(c.manifest().file("prompt.yaml.enc").is_none());
    assert!(c.manifest().files().iter().all(|f| !f.encrypted));
    c.verify_signature(&fixed_key().public_key()).unwrap();
}

#[test]
fn long_paths_round_trip_through_pax() {
    let mut tree = sample_tree();
    let long = format!("context/{}/{}.md", "d".repeat(120), "f".repeat(110));
    tree.insert(path(&long), b"deep".to_vec());
    let bytes = build_tree(&tree, None);
    let c = container::read(bytes.as_slice(), &Limits::default()).unwrap();
    let entry = c.manifest().file(&long).unwrap();
    assert_eq!(entry.size, 4);
    assert_eq!(entry.sha256.to_hex(), hex::encode(Sha256::digest(b"deep")));
}

#[test]
fn signature_checks() {
    let bytes = sample_container();
    let c = container::read(bytes.as_slice(), &Limits::default()).unwrap();

    let stranger = SecretKey::generate().unwrap().public_key();
    assert_eq!(
        c.verify_signature(&stranger),
        Err(ContainerError::SignerMismatch {
            manifest: fixed_key().public_key().key_id(),
            key: stranger.key_id(),
        })
    );

    // A manifest edited after signing (and its listing still consistent)
    // reads fine but does not verify.
    let members = members_of(&bytes);
    let mut tar = RawTar::new();
    for (p, b) in &members {
        if p == "manifest.json" {
            let edited = String::from_utf8(b.clone())
                .unwrap()
                .replace("2025-01-29T10:30:00Z", "2025-01-29T10:30:01Z");
            tar.file(p, edited.as_bytes());
        } else {
            tar.file(p, b);
        }
    }
    let edited = container::read(gzip(&tar.finish()).as_slice(), &Limits::default()).unwrap();
    assert_eq!(
        edited.verify_signature(&fixed_key().public_key()),
        Err(ContainerError::Signature(SigningError::BadSignature))
    );
}

fn build_with(tree: &agentlang_core::SourceTree) -> Result<Vec<u8>, ContainerError> {
    let key = fixed_key();
    container::build(&BuildInput {
        tree,
        kind: Kind::Agent,
        name: &name(),
        version: &version(),
        created: created(),
        signing_key: &key,
        prompt_key: Some(&fixed_prompt_key()),
    })
}

#[test]
fn builder_refusals() {
    let mut tree = sample_tree();
    tree.insert(path("manifest.json"), b"{}".to_vec());
    assert_eq!(
        build_with(&tree),
        Err(ContainerError::ReservedPath("manifest.json".into()))
    );

    let mut tree = sample_tree();
    tree.insert(path("prompt.yaml.enc"), b"old".to_vec());
    assert_eq!(
        build_with(&tree),
        Err(ContainerError::DuplicateMember("prompt.yaml.enc".into()))
    );

    let mut tree = sample_tree();
    tree.insert(path("Agent.lock"), b"x".to_vec());
    assert_eq!(
        build_with(&tree),
        Err(ContainerError::CaseCollision {
            path: "agent.lock".into(),
            other: "Agent.lock".into(),
        })
    );

    let mut tree = sample_tree();
    tree.remove("agent.yaml");
    assert_eq!(
        build_with(&tree),
        Err(ContainerError::MissingDefinition {
            kind: Kind::Agent,
            file: "agent.yaml",
        })
    );

    let mut tree = sample_tree();
    tree.insert(
        path("agent.yaml"),
        b"name: other\nversion: 1.0.0\n".to_vec(),
    );
    assert_eq!(
        build_with(&tree),
        Err(ContainerError::NameMismatch {
            file: "agent.yaml",
            manifest: "demo-agent".into(),
            definition: "other".into(),
        })
    );
}

#[test]
fn created_from_source_date_epoch() {
    // What the CLI does with SOURCE_DATE_EPOCH=1738146600.
    let created = container::Created::from_unix_seconds(1_738_146_600).unwrap();
    assert_eq!(created, container_support::created());
}

#[test]
fn unpack_hands_over_every_member_checked_against_the_manifest() {
    let bytes = sample_container();
    let read = container::read(bytes.as_slice(), &Limits::default()).unwrap();
    let mut got = Vec::new();
    container::unpack(bytes.as_slice(), read.manifest(), |path, r| {
        let mut data = Vec::new();
        r.read_to_end(&mut data)?;
        got.push((path.to_string(), data));
        Ok(())
    })
    .unwrap();
    let expected: Vec<(String, Vec<u8>)> = members_of(&bytes)
        .into_iter()
        .filter(|(p, _)| p != "manifest.json" && p != "signature.sig")
        .collect();
    assert_eq!(got, expected);

    // Another container's bytes against this manifest: refused.
    let mut other = sample_tree();
    other.insert(path("extra.txt"), b"more".to_vec());
    let other = build_tree(&other, None);
    let err = container::unpack(other.as_slice(), read.manifest(), |_, _| Ok(())).unwrap_err();
    assert!(
        matches!(
            err,
            ContainerError::UnlistedMember(_) | ContainerError::HashMismatch(_)
        ),
        "{err}"
    );
}
