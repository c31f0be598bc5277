//! A package's files in memory, keyed by validated relative paths. The CLI
//! reads a directory into a [`SourceTree`]; validation, packing and
//! unpacking all speak this type, so no path reaches a file system or an
//! archive without passing [`MemberPath::new`].

use std::{collections::BTreeMap, fmt};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest member path accepted, in bytes. POSIX ustar with PAX headers has
/// no real limit; this bounds what a hostile archive can make us allocate.
pub const MAX_PATH_LEN: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path {0:?} is absolute")]
    Absolute(String),
    #[error("path {0:?} climbs out of the package with '..'")]
    ParentDir(String),
    #[error("path {0:?} has an empty or '.' component")]
    EmptyComponent(String),
    #[error("path {0:?} holds a backslash, NUL or control character")]
    BadChar(String),
    #[error("path is {0} bytes long; at most {MAX_PATH_LEN} are allowed")]
    TooLong(usize),
}

/// A relative, `/`-separated, normalized path inside a package: no leading
/// `/`, no `.` or `..` components, no empty components, no backslashes or
/// control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberPath(String);

impl MemberPath {
    pub fn new(path: impl Into<String>) -> Result<Self, PathError> {
        let path = path.into();
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.len() > MAX_PATH_LEN {
            return Err(PathError::TooLong(path.len()));
        }
        if path.starts_with('/') {
            return Err(PathError::Absolute(path));
        }
        if path.chars().any(|c| c == '\\' || c.is_control()) {
            return Err(PathError::BadChar(path));
        }
        for component in path.split('/') {
            match component {
                ".." => return Err(PathError::ParentDir(path)),
                "" | "." => return Err(PathError::EmptyComponent(path)),
                _ => {}
            }
        }
        Ok(Self(path))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last component: `skills/x/SKILL.md` gives `SKILL.md`.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// True for a file directly in the package root.
    pub fn is_top_level(&self) -> bool {
        !self.0.contains('/')
    }
}

impl fmt::Display for MemberPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for MemberPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for MemberPath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Serialize for MemberPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MemberPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A package's files, sorted by path (the order containers are written in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceTree(BTreeMap<MemberPath, Vec<u8>>);

impl SourceTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a file.
    pub fn insert(&mut self, path: MemberPath, bytes: Vec<u8>) -> Option<Vec<u8>> {
        self.0.insert(path, bytes)
    }

    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.0.get(path).map(Vec::as_slice)
    }

    pub fn remove(&mut self, path: &str) -> Option<Vec<u8>> {
        self.0.remove(path)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.0.contains_key(path)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&MemberPath, &[u8])> {
        self.0.iter().map(|(p, b)| (p, b.as_slice()))
    }

    pub fn paths(&self) -> impl Iterator<Item = &MemberPath> {
        self.0.keys()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Total bytes of all files.
    pub fn total_size(&self) -> u64 {
        self.0.values().map(|b| b.len() as u64).sum()
    }
}

impl FromIterator<(MemberPath, Vec<u8>)> for SourceTree {
    fn from_iter<I: IntoIterator<Item = (MemberPath, Vec<u8>)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl IntoIterator for SourceTree {
    type Item = (MemberPath, Vec<u8>);
    type IntoIter = std::collections::btree_map::IntoIter<MemberPath, Vec<u8>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_paths_stay_inside_the_package() {
        for ok in [
            "agent.yaml",
            "skills/x/SKILL.md",
            "context/templates/a b.md",
            "..hidden",
        ] {
            assert!(MemberPath::new(ok).is_ok(), "{ok}");
        }
        assert!(matches!(MemberPath::new(""), Err(PathError::Empty)));
        assert!(matches!(
            MemberPath::new("/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            MemberPath::new("a/../../b"),
            Err(PathError::ParentDir(_))
        ));
        assert!(matches!(
            MemberPath::new(".."),
            Err(PathError::ParentDir(_))
        ));
        assert!(matches!(
            MemberPath::new("a//b"),
            Err(PathError::EmptyComponent(_))
        ));
        assert!(matches!(
            MemberPath::new("./a"),
            Err(PathError::EmptyComponent(_))
        ));
        assert!(matches!(
            MemberPath::new("a/"),
            Err(PathError::EmptyComponent(_))
        ));
        assert!(matches!(
            MemberPath::new("a\\b"),
            Err(PathError::BadChar(_))
        ));
        assert!(matches!(
            MemberPath::new("a\0b"),
            Err(PathError::BadChar(_))
        ));
        assert!(matches!(
            MemberPath::new("a".repeat(256)),
            Err(PathError::TooLong(256))
        ));
    }

    #[test]
    fn tree_is_sorted_by_path() {
        let tree: SourceTree = ["manifest.json", "agent.yaml", "context/a"]
            .into_iter()
            .map(|p| (MemberPath::new(p).unwrap(), Vec::new()))
            .collect();
        let order: Vec<_> = tree.paths().map(MemberPath::as_str).collect();
        assert_eq!(order, ["agent.yaml", "context/a", "manifest.json"]);
    }
}
