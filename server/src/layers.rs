//! The module graph's rule, checked on every test run: imports point down
//! the layers of [`LAYERS`], never up, and `routes` and `catalog` never
//! import each other (they share services instead). ARCHITECTURE.md states
//! the rule; this test is how it holds.
//!
//! The check reads `server/src` as tokens (comments and doc text drop out;
//! paths inside macros and attributes stay in) and follows every path that
//! leaves its top-level module: `crate::x`, `crate::{x, y}` and a `super::`
//! chain that climbs to the crate root.

use std::{fs, path::Path, str::FromStr};

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// Each top-level module of `server/src` and its layer: a module may use
/// modules of its own layer and of the layers below.
const LAYERS: &[(&str, u8)] = &[
    // Neutral: names, digests, time, settings, request ids, counters.
    ("common", 0),
    ("config", 0),
    ("metrics", 0),
    ("request_id", 0),
    ("head", 0),
    // Storage: the database, the blob store, the registry's own key.
    ("db", 1),
    ("blobs", 1),
    ("identity", 1),
    // Rules: the services, the state they share, their errors and limits.
    ("service", 2),
    ("state", 2),
    ("error", 2),
    ("rate_limit", 2),
    // HTTP: the API, the catalog, and their extractors and middleware.
    ("routes", 3),
    ("catalog", 3),
    ("auth", 3),
    ("deadlines", 3),
    ("openapi", 3),
    // Assembly.
    ("startup", 4),
    ("lib", 4),
    ("main", 4),
    ("layers", 4),
];

/// Pairs on one layer that still must not meet.
const APART: &[(&str, &str)] = &[("routes", "catalog"), ("catalog", "routes")];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|&(_, l)| l)
}

/// The top-level modules a file's tokens name, given how deep the file's
/// module sits (1 for `x.rs` and `x/mod.rs`, 2 for `x/y.rs`).
fn modules_named(tokens: TokenStream, depth: usize, out: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) if id == "crate" && is_path_sep(&tokens, i + 1) => {
                named_after(&tokens, i + 3, out);
            }
            TokenTree::Ident(id) if id == "super" => {
                // Count the chain `super::super::…`.
                let mut ups = 1;
                let mut j = i;
                while is_path_sep(&tokens, j + 1)
                    && matches!(&tokens.get(j + 3), Some(TokenTree::Ident(s)) if s == "super")
                {
                    ups += 1;
                    j += 3;
                }
                if ups == depth && is_path_sep(&tokens, j + 1) {
                    named_after(&tokens, j + 3, out);
                }
                i = j;
            }
            // `mod tests { … }`: one level deeper.
            TokenTree::Ident(id) if id == "mod" => {
                if let (Some(TokenTree::Ident(_)), Some(TokenTree::Group(body))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                    && body.delimiter() == Delimiter::Brace
                {
                    modules_named(body.stream(), depth + 1, out);
                    i += 3;
                    continue;
                }
            }
            TokenTree::Group(group) => modules_named(group.stream(), depth, out),
            _ => {}
        }
        i += 1;
    }
}

fn is_path_sep(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':'
    )
}

/// The module named at `at`: an identifier, or each item of a `{…}` list.
fn named_after(tokens: &[TokenTree], at: usize, out: &mut Vec<String>) {
    match tokens.get(at) {
        Some(TokenTree::Ident(id)) => out.push(id.to_string()),
        Some(TokenTree::Group(list)) if list.delimiter() == Delimiter::Brace => {
            let items: Vec<TokenTree> = list.stream().into_iter().collect();
            let mut first = true;
            for token in items {
                match token {
                    TokenTree::Ident(id) if first => {
                        out.push(id.to_string());
                        first = false;
                    }
                    TokenTree::Punct(p) if p.as_char() == ',' => first = true,
                    _ => first = false,
                }
            }
        }
        _ => {}
    }
}

/// Every `.rs` file under `dir`, as paths relative to `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).expect("read server/src") {
        let path = entry.expect("read server/src").path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under server/src");
            out.push(relative.to_string_lossy().into_owned());
        }
    }
}

/// `(file, its top-level module, its depth)`.
fn module_of(file: &str) -> (String, usize) {
    let parts: Vec<&str> = file.split('/').collect();
    let top = parts[0].trim_end_matches(".rs").to_owned();
    let depth = match parts.last() {
        Some(&"mod.rs") => parts.len() - 1,
        _ => parts.len(),
    };
    (top, depth)
}

/// Every upward or forbidden import in `server/src`, one line each.
fn violations() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let (top, depth) = module_of(&file);
        let Some(own) = layer(&top) else {
            found.push(format!("{file}: module `{top}` has no layer in LAYERS"));
            continue;
        };
        let text = fs::read_to_string(root.join(&file)).expect("read a source file");
        let tokens = TokenStream::from_str(&text).expect("source files tokenize");
        let mut named = Vec::new();
        modules_named(tokens, depth, &mut named);
        named.sort();
        named.dedup();
        for module in named.into_iter().filter(|m| *m != top && *m != "self") {
            match layer(&module) {
                Some(theirs) if theirs > own => found.push(format!(
                    "{file}: `{top}` (layer {own}) uses `{module}` (layer {theirs})"
                )),
                Some(_) if APART.contains(&(top.as_str(), module.as_str())) => {
                    found.push(format!("{file}: `{top}` uses `{module}`; share a service"));
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn imports_point_down_the_layers() {
    let found = violations();
    assert!(found.is_empty(), "upward imports:\n{}", found.join("\n"));
}

#[test]
fn the_scanner_sees_paths_lists_super_chains_and_macros() {
    let source = r#"
        use crate::{db::Db, service::{self, tokens}};
        fn f() { crate::routes::x(); sqlx::query!(crate::catalog::Y); }
        mod tests { use super::super::state::AppState; use super::*; }
    "#;
    let mut named = Vec::new();
    modules_named(TokenStream::from_str(source).unwrap(), 1, &mut named);
    assert_eq!(named, ["db", "service", "routes", "catalog", "state"]);
    // In `x/y.rs`, `super::super::state` is the crate's `state`.
    let mut named = Vec::new();
    let nested = "use super::super::state::AppState; use super::sibling;";
    modules_named(TokenStream::from_str(nested).unwrap(), 2, &mut named);
    assert_eq!(named, ["state"]);
}

#[test]
fn files_map_to_their_module_and_depth() {
    assert_eq!(module_of("routes/mod.rs"), ("routes".to_owned(), 1));
    assert_eq!(module_of("routes/tokens.rs"), ("routes".to_owned(), 2));
    assert_eq!(module_of("state.rs"), ("state".to_owned(), 1));
}
