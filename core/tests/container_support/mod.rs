//! Fixtures shared by the container, signing and crypt integration tests:
//! a fixed package, fixed keys, and a hand-rolled tar writer for hostile
//! archives that our builder would never produce.

#![allow(dead_code)]

use std::io::Write;

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created, FileEntry, Manifest},
    crypt::PromptKey,
    signing::SecretKey,
};
use flate2::{Compression, write::GzEncoder};

/// A fixed Ed25519 key (made once with `openssl genpkey -algorithm ed25519`),
/// so the golden container hash is stable.
pub const FIXED_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIAp5C98iNyineuGl/tG8ceKj0tuhNN8eDZphbXYERTGY
-----END PRIVATE KEY-----
";

pub const AGENT_YAML: &str = "name: demo-agent\nversion: 1.0.0\ntitle: Demo\n";
pub const PROMPT_YAML: &str =
    "version: 2\nsections:\n  - name: mindset\n    content: Be careful and kind.\n";

pub fn fixed_key() -> SecretKey {
    SecretKey::from_pkcs8_pem(FIXED_KEY_PEM).unwrap()
}

pub fn fixed_prompt_key() -> PromptKey {
    PromptKey::from_bytes([0x42; 32])
}

pub fn name() -> PackageName {
    PackageName::new("demo-agent").unwrap()
}

pub fn version() -> Version {
    Version::parse("1.0.0").unwrap()
}

pub fn created() -> Created {
    Created::parse("2025-01-29T10:30:00Z").unwrap()
}

pub fn path(p: &str) -> MemberPath {
    MemberPath::new(p).unwrap()
}

pub fn sample_tree() -> SourceTree {
    [
        ("agent.yaml", AGENT_YAML),
        ("prompt.yaml", PROMPT_YAML),
        ("agent.lock", "version: \"1\"\n"),
        ("ux.yaml", "suggestions: [\"hi\"]\n"),
        ("academic-researcher.yaml", "name: academic-researcher\n"),
        (
            "skills/search/SKILL.md",
            "---\nname: search\n---\n# Search\n",
        ),
        ("context/templates/report.md", "# Report\n"),
    ]
    .into_iter()
    .map(|(p, b)| (path(p), b.as_bytes().to_vec()))
    .collect()
}

pub fn build_tree(tree: &SourceTree, prompt_key: Option<&PromptKey>) -> Vec<u8> {
    let key = fixed_key();
    container::build(&BuildInput {
        tree,
        kind: Kind::Agent,
        name: &name(),
        version: &version(),
        created: created(),
        signing_key: &key,
        prompt_key,
    })
    .unwrap()
}

/// The sample package built with the fixed keys.
pub fn sample_container() -> Vec<u8> {
    build_tree(&sample_tree(), Some(&fixed_prompt_key()))
}

/// The members of a (trusted, test-made) container, in archive order.
pub fn members_of(container: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(container));
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
            (path, bytes)
        })
        .collect()
}

/// A manifest and signature for `payload`, made without the builder's
/// checks, then packed: for containers whose payload is wrong on purpose.
pub fn signed_container(kind: Kind, payload: &[(&str, &[u8])]) -> Vec<u8> {
    let key = fixed_key();
    let files = payload
        .iter()
        .map(|(p, b)| FileEntry::of(path(p), b, p.ends_with(".enc")))
        .collect();
    let manifest = Manifest::new(
        kind,
        name(),
        version(),
        created(),
        key.public_key().key_id(),
        files,
    )
    .unwrap();
    let manifest_bytes = manifest.to_bytes();
    let signature = key.sign(&manifest_bytes);
    let mut tar = RawTar::new();
    let mut all: Vec<(&str, &[u8])> = payload.to_vec();
    all.push(("manifest.json", &manifest_bytes));
    all.push(("signature.sig", &signature));
    all.sort();
    for (p, b) in all {
        tar.file(p, b);
    }
    gzip(&tar.finish())
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A tar writer that puts down whatever headers it is told to.
pub struct RawTar {
    bytes: Vec<u8>,
}

impl RawTar {
    pub fn new() -> Self {
        Self { bytes: Vec::new() }
    }

    /// The raw bytes of a header block with `name` written verbatim.
    pub fn header(name: &[u8], entry_type: tar::EntryType, size: u64) -> tar::Header {
        let mut header = tar::Header::new_ustar();
        header.as_ustar_mut().unwrap().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(entry_type);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(size);
        header.set_cksum();
        header
    }

    pub fn entry(&mut self, header: &tar::Header, data: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.bytes.extend(std::iter::repeat_n(0u8, pad));
        self
    }

    pub fn file(&mut self, name: &str, data: &[u8]) -> &mut Self {
        let header = Self::header(name.as_bytes(), tar::EntryType::Regular, data.len() as u64);
        self.entry(&header, data)
    }

    pub fn typed(&mut self, name: &str, entry_type: tar::EntryType) -> &mut Self {
        let header = Self::header(name.as_bytes(), entry_type, 0);
        self.entry(&header, &[])
    }

    /// A PAX extended header with the given records.
    pub fn pax(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        let mut data = Vec::new();
        for (key, value) in records {
            // "<len> <key>=<value>\n", where len counts itself.
            let rest = key.len() + value.len() + 3;
            let mut len = rest + 1;
            while len.to_string().len() + rest != len {
                len += 1;
            }
            data.extend_from_slice(format!("{len} {key}=").as_bytes());
            data.extend_from_slice(value);
            data.push(b'\n');
        }
        let header = Self::header(b"PaxHeader", tar::EntryType::XHeader, data.len() as u64);
        self.entry(&header, &data)
    }

    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(bytes);
        self
    }

    /// The archive without its end-of-archive marker.
    pub fn unterminated(&self) -> Vec<u8> {
        self.bytes.clone()
    }

    /// The archive with its two zero blocks.
    pub fn finish(&self) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        bytes.extend_from_slice(&[0; 1024]);
        bytes
    }
}
