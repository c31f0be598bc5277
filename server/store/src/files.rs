//! Files and folders the registry creates for itself: private to its user
//! (0700 folders, 0600 files), whatever the umask.

use std::{
    fs::{DirBuilder, OpenOptions},
    io,
    os::unix::fs::{DirBuilderExt, OpenOptionsExt},
    path::Path,
};

/// Creates `path` and its missing parents with mode 0700 (existing folders
/// are left as they are: an operator may have chosen otherwise).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// Creates an empty file with mode 0600 unless it exists, so a program that
/// opens it next (SQLite) keeps that mode, and so do its side files.
pub fn touch_private_file(path: &Path) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn created_files_and_folders_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_private_dir(&dir).unwrap();
        let file = dir.join("f");
        touch_private_file(&file).unwrap();
        touch_private_file(&file).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&file), 0o600);
    }
}
