//! Reads a package directory into a `SourceTree`, the in-memory form core
//! validates and packs. What is left out is deliberate: dotfiles and dot
//! folders (`.git`, editor state) and built containers (`*.agent`, `*.tool`).
//! Symlinks are refused: a container holds regular files only, and following
//! a link could pull in files from outside the package.

use std::{fs, path::Path};

use agentlang_core::{MemberPath, SourceTree};
use anyhow::{Context, Result, bail};

/// Bounds that keep a mistaken `build /` from reading the whole disk.
const MAX_FILES: usize = 10_000;
const MAX_TOTAL_BYTES: u64 = 512 * 1024 * 1024;

pub fn read_dir(root: &Path) -> Result<SourceTree> {
    let meta = fs::metadata(root).with_context(|| format!("reading {}", root.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", root.display());
    }
    let mut tree = SourceTree::new();
    let mut total = 0u64;
    walk(root, "", &mut tree, &mut total)?;
    Ok(tree)
}

fn walk(dir: &Path, prefix: &str, tree: &mut SourceTree, total: &mut u64) -> Result<()> {
    let mut entries = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let name = name
            .to_str()
            .with_context(|| format!("{} has a name that is not UTF-8", entry.path().display()))?;
        if name.starts_with('.') || name.ends_with(".agent") || name.ends_with(".tool") {
            continue;
        }
        let rel = if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}/{name}")
        };
        let file_type = entry.file_type()?;
        if file_type.is_symlink() {
            bail!(
                "{} is a symbolic link; packages hold regular files only",
                entry.path().display()
            );
        } else if file_type.is_dir() {
            walk(&entry.path(), &rel, tree, total)?;
        } else if file_type.is_file() {
            let path =
                MemberPath::new(rel).with_context(|| format!("{}", entry.path().display()))?;
            let bytes = fs::read(entry.path())
                .with_context(|| format!("reading {}", entry.path().display()))?;
            *total += bytes.len() as u64;
            if tree.len() >= MAX_FILES || *total > MAX_TOTAL_BYTES {
                bail!(
                    "{} holds more than {MAX_FILES} files or {} MiB; is it the right folder?",
                    dir.display(),
                    MAX_TOTAL_BYTES / 1024 / 1024
                );
            }
            tree.insert(path, bytes);
        } else {
            bail!("{} is not a regular file", entry.path().display());
        }
    }
    Ok(())
}
