//! Shared by the agent_* tests: fixture loading and diagnostics display.
#![allow(dead_code)]

use std::path::Path;

use agentlang_core::{Diagnostics, MemberPath, SourceTree};

pub fn fixture_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents")
        .join(name)
}

/// Reads a fixture directory into a tree, paths relative to it.
pub fn load_fixture(name: &str) -> SourceTree {
    let root = fixture_dir(name);
    let mut tree = SourceTree::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&root).unwrap().to_str().unwrap();
                tree.insert(MemberPath::new(rel).unwrap(), std::fs::read(&path).unwrap());
            }
        }
    }
    tree
}

/// One diagnostic per line, as the CLI prints them.
pub fn messages(d: &Diagnostics) -> String {
    d.to_string()
}
