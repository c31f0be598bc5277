//! Building a container from a package's files.

use std::collections::BTreeMap;

use super::{
    CaseIndex, ContainerError, ENCRYPTED_PROMPT_PATH, PROMPT_PATH, check_definition,
    manifest::{Created, FileEntry, MANIFEST_PATH, Manifest, SIGNATURE_PATH},
    pack::pack,
};
use crate::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    crypt::{self, Aad, PromptKey},
    signing::SecretKey,
};

/// Everything a build needs. `created` comes from the caller (the CLI
/// passes `SOURCE_DATE_EPOCH` when set), so builds are reproducible.
#[derive(Debug, Clone, Copy)]
pub struct BuildInput<'a> {
    /// The package directory's files, as read by the CLI.
    pub tree: &'a SourceTree,
    pub kind: Kind,
    pub name: &'a PackageName,
    pub version: &'a Version,
    pub created: Created,
    pub signing_key: &'a SecretKey,
    /// `None` builds with `prompt.yaml` in plaintext (the CLI's
    /// `--no-encrypt`).
    pub prompt_key: Option<&'a PromptKey>,
}

/// Encrypts, lists, signs and packs. The result passes [`super::read`] and
/// [`super::Container::verify_signature`] with the signing key's public key.
pub fn build(input: &BuildInput<'_>) -> Result<Vec<u8>, ContainerError> {
    check_definition(input.kind, input.name, input.version, |p| input.tree.get(p))?;

    let mut members: BTreeMap<MemberPath, Vec<u8>> = BTreeMap::new();
    let mut encrypted = Vec::new();
    for (path, bytes) in input.tree.iter() {
        if matches!(path.as_str(), MANIFEST_PATH | SIGNATURE_PATH) {
            return Err(ContainerError::ReservedPath(path.to_string()));
        }
        let (path, bytes) = match input.prompt_key {
            Some(key) if path.as_str() == PROMPT_PATH => {
                let aad = Aad::new(input.kind, input.name, input.version, path);
                let sealed =
                    crypt::seal(key, &aad, bytes).map_err(|source| ContainerError::Encrypt {
                        path: path.to_string(),
                        source,
                    })?;
                let enc = MemberPath::new(ENCRYPTED_PROMPT_PATH)
                    .expect("the encrypted prompt path is a valid member path");
                encrypted.push(enc.clone());
                (enc, sealed)
            }
            _ => (path.clone(), bytes.to_vec()),
        };
        if members.insert(path.clone(), bytes).is_some() {
            // prompt.yaml encrypted onto a prompt.yaml.enc already there.
            return Err(ContainerError::DuplicateMember(path.to_string()));
        }
    }

    let mut case_index = CaseIndex::default();
    for path in members.keys() {
        case_index.insert(path.as_str())?;
    }

    let files = members
        .iter()
        .map(|(path, bytes)| match input.prompt_key {
            Some(key) if encrypted.contains(path) => {
                FileEntry::sealed(path.clone(), bytes, key.id())
            }
            _ => FileEntry::of(path.clone(), bytes, false),
        })
        .collect();
    let manifest = Manifest::new(
        input.kind,
        input.name.clone(),
        input.version.clone(),
        input.created,
        input.signing_key.public_key().key_id(),
        files,
    )?;
    let manifest_bytes = manifest.to_bytes();
    let signature = input.signing_key.sign(&manifest_bytes);

    members.insert(member(MANIFEST_PATH), manifest_bytes);
    members.insert(member(SIGNATURE_PATH), signature.to_vec());
    pack(&members).map_err(|e| ContainerError::Io(e.to_string()))
}

fn member(path: &'static str) -> MemberPath {
    MemberPath::new(path).expect("the metadata member paths are valid member paths")
}
