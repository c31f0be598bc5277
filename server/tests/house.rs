//! The shape of the house, checked on every test run.
//!
//! Crate boundaries hold the big arrows (`core ← store ← app ←
//! agentlang-registry`, `web ← agentlang-registry`): a crate cannot name
//! what it does not depend on. Inside a crate the compiler allows anything,
//! so these tests hold the rest:
//! - no import circle spans more than one file, in any of the registry's
//!   crates or the CLI;
//! - the API (`routes`) and the catalog (`catalog`) never import each other:
//!   they share a rule only through `app`;
//! - the HTTP crate names neither the store nor SQL.
//!
//! Imports are read from the source as tokens (comments and doc text drop
//! out; paths inside macros and attributes stay in): every `crate::` path
//! (use trees expanded), every `super::` chain and every `self::` path, each
//! resolved to the file that defines what it names, through the `pub use`
//! re-exports of the files on the way (`crate::Registry` is
//! `registry.rs`'s, not `lib.rs`'s).

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
    str::FromStr,
};

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A module path inside one crate: `[]` is the crate root.
type ModPath = Vec<String>;

/// One crate's files, by module path, and what each re-exports.
struct Crate {
    root: PathBuf,
    /// Module path to file (relative to `root`).
    files: BTreeMap<ModPath, String>,
    /// For each file, `pub use` names to the full path they re-export.
    reexports: BTreeMap<String, BTreeMap<String, ModPath>>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("server/ sits in the workspace")
        .to_path_buf()
}

fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("read a source folder").path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under the root");
            out.push(relative.to_string_lossy().into_owned());
        }
    }
}

/// `lib.rs`/`main.rs` → `[]`; `x.rs` and `x/mod.rs` → `[x]`; `x/y.rs` →
/// `[x, y]`.
fn module_path(file: &str) -> ModPath {
    let parts: Vec<&str> = file.trim_end_matches(".rs").split('/').collect();
    match parts.as_slice() {
        ["lib" | "main"] => Vec::new(),
        [dirs @ .., "mod"] => dirs.iter().map(|s| (*s).to_owned()).collect(),
        all => all.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn tokens_of(root: &Path, file: &str) -> Vec<TokenTree> {
    let text = fs::read_to_string(root.join(file)).expect("read a source file");
    TokenStream::from_str(&text)
        .expect("source files tokenize")
        .into_iter()
        .collect()
}

fn is_sep(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':'
    )
}

fn ident_at(tokens: &[TokenTree], at: usize) -> Option<String> {
    match tokens.get(at) {
        Some(TokenTree::Ident(id)) => Some(id.to_string()),
        _ => None,
    }
}

/// The paths of a use tree starting at `at` (after a leading `::`), each
/// appended to `prefix`: `a::b`, `a::{b, c::d}`, `a::*`, `a as b`.
fn use_tree(tokens: &[TokenTree], at: usize, prefix: &ModPath, out: &mut Vec<ModPath>) {
    match tokens.get(at) {
        Some(TokenTree::Ident(id)) => {
            let mut path = prefix.clone();
            path.push(id.to_string());
            if is_sep(tokens, at + 1) {
                use_tree(tokens, at + 3, &path, out);
            } else {
                out.push(path);
            }
        }
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
            let items: Vec<TokenTree> = group.stream().into_iter().collect();
            let mut start = 0;
            for i in 0..=items.len() {
                let end = i == items.len()
                    || matches!(&items[i], TokenTree::Punct(p) if p.as_char() == ',');
                if end {
                    if start < i {
                        let item = &items[start..i];
                        if matches!(item.first(), Some(TokenTree::Ident(id)) if id == "self") {
                            out.push(prefix.clone());
                        } else {
                            use_tree(item, 0, prefix, out);
                        }
                    }
                    start = i + 1;
                }
            }
        }
        // `*`, or the end of the path.
        _ => out.push(prefix.clone()),
    }
}

/// What bare names stand for in a file: each `use`d name (its last
/// segment) to its full path, and the file's child modules to theirs.
#[derive(Default)]
struct Scope {
    names: BTreeMap<String, ModPath>,
}

/// The paths a file's `use` declarations bring in, by their last segment.
fn use_aliases(tokens: &[TokenTree], module: &ModPath, children: &BTreeSet<String>) -> Scope {
    let mut scope = Scope::default();
    for child in children {
        let mut path = module.clone();
        path.push(child.clone());
        scope.names.insert(child.clone(), path);
    }
    for i in 0..tokens.len() {
        if !matches!(&tokens[i], TokenTree::Ident(id) if id == "use") {
            continue;
        }
        let mut paths = Vec::new();
        match ident_at(tokens, i + 1).as_deref() {
            Some("crate") if is_sep(tokens, i + 2) => {
                use_tree(tokens, i + 4, &Vec::new(), &mut paths);
            }
            Some(root @ ("self" | "super")) if is_sep(tokens, i + 2) => {
                let mut base = module.clone();
                if root == "super" {
                    base.pop();
                }
                use_tree(tokens, i + 4, &base, &mut paths);
            }
            Some(child) if children.contains(child) => {
                use_tree(tokens, i + 1, module, &mut paths);
            }
            _ => {}
        }
        for path in paths {
            if let Some(name) = path.last().filter(|n| *n != "*") {
                scope.names.insert(name.clone(), path);
            }
        }
    }
    scope
}

/// Every path a token stream names that leaves its file: `crate::…`,
/// `super::…` (resolved against `module`, one level deeper inside each
/// inline `mod x { … }`), `self::…`, and a bare `name::…` whose `name` is a
/// child module or a name the file `use`s.
fn paths_named(tokens: &[TokenTree], module: &ModPath, scope: &Scope, out: &mut Vec<ModPath>) {
    let mut i = 0;
    while i < tokens.len() {
        let after_sep = i >= 2 && is_sep(tokens, i - 2);
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == '$' => {
                // `$crate::…` in a macro: the crate of the macro's user.
                i += 2;
                continue;
            }
            TokenTree::Ident(id) if id == "crate" && is_sep(tokens, i + 1) => {
                use_tree(tokens, i + 3, &Vec::new(), out);
            }
            TokenTree::Ident(id) if (id == "super" || id == "self") && is_sep(tokens, i + 1) => {
                let mut base = module.clone();
                let mut j = i;
                if id == "super" {
                    base.pop();
                    while matches!(ident_at(tokens, j + 3).as_deref(), Some("super"))
                        && is_sep(tokens, j + 4)
                    {
                        base.pop();
                        j += 3;
                    }
                }
                use_tree(tokens, j + 3, &base, out);
                i = j + 3;
                continue;
            }
            TokenTree::Ident(id) if id == "mod" => {
                if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(body))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                    && body.delimiter() == Delimiter::Brace
                {
                    let mut inner = module.clone();
                    inner.push(name.to_string());
                    let body: Vec<TokenTree> = body.stream().into_iter().collect();
                    paths_named(&body, &inner, scope, out);
                    i += 3;
                    continue;
                }
            }
            TokenTree::Ident(id) if !after_sep && is_sep(tokens, i + 1) => {
                if let Some(path) = scope.names.get(&id.to_string()) {
                    use_tree(tokens, i + 3, path, out);
                }
            }
            TokenTree::Group(group) => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                paths_named(&inner, module, scope, out);
            }
            _ => {}
        }
        i += 1;
    }
}

/// The `pub use` re-exports of a file: each name to the path it stands for.
fn reexports(tokens: &[TokenTree], module: &ModPath) -> BTreeMap<String, ModPath> {
    let mut found = BTreeMap::new();
    for i in 0..tokens.len() {
        let is_pub_use = matches!(&tokens[i], TokenTree::Ident(id) if id == "pub")
            && matches!(ident_at(tokens, i + 1).as_deref(), Some("use"));
        if !is_pub_use {
            continue;
        }
        let mut paths = Vec::new();
        let first = ident_at(tokens, i + 2);
        match first.as_deref() {
            Some("crate") => use_tree(tokens, i + 5, &Vec::new(), &mut paths),
            Some("self") => use_tree(tokens, i + 5, module, &mut paths),
            Some("super") => {
                let mut base = module.clone();
                base.pop();
                use_tree(tokens, i + 5, &base, &mut paths);
            }
            // A child module's item (`pub use query::SearchQuery`).
            Some(_) => {
                let mut end = i + 2;
                while end < tokens.len()
                    && !matches!(&tokens[end], TokenTree::Punct(p) if p.as_char() == ';')
                {
                    end += 1;
                }
                use_tree(&tokens[..end], i + 2, module, &mut paths);
            }
            None => {}
        }
        for path in paths {
            if let Some(name) = path.last() {
                found.insert(name.clone(), path);
            }
        }
    }
    found
}

impl Crate {
    fn read(root: PathBuf) -> Self {
        let mut names = Vec::new();
        rust_files(&root, &root, &mut names);
        names.sort();
        let mut files = BTreeMap::new();
        let mut reexported = BTreeMap::new();
        for file in names {
            let module = module_path(&file);
            let tokens = tokens_of(&root, &file);
            reexported.insert(file.clone(), reexports(&tokens, &module));
            // `main.rs` is a crate of its own beside `lib.rs`.
            if file != "main.rs" {
                files.insert(module, file);
            }
        }
        Self {
            root,
            files,
            reexports: reexported,
        }
    }

    /// The file that defines what `path` names: the deepest module on the
    /// path that is a file, followed through that file's re-exports.
    fn resolve(&self, path: &ModPath, hops: usize) -> Option<&String> {
        let (depth, file) = (0..=path.len())
            .rev()
            .find_map(|n| self.files.get(&path[..n]).map(|f| (n, f)))?;
        if hops < 8
            && let Some(name) = path.get(depth)
            && let Some(target) = self.reexports.get(file).and_then(|r| r.get(name))
            && target != path
        {
            let mut next = target.clone();
            next.extend(path[depth + 1..].iter().cloned());
            return self.resolve(&next, hops + 1).or(Some(file));
        }
        Some(file)
    }

    /// File to the files it imports.
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut edges = BTreeMap::new();
        for (module, file) in &self.files {
            let tokens = tokens_of(&self.root, file);
            let children: BTreeSet<String> = self
                .files
                .keys()
                .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
                .filter_map(|m| m.last().cloned())
                .collect();
            let scope = use_aliases(&tokens, module, &children);
            let mut paths = Vec::new();
            paths_named(&tokens, module, &scope, &mut paths);
            let targets: BTreeSet<String> = paths
                .iter()
                .filter_map(|p| self.resolve(p, 0))
                .filter(|target| *target != file)
                .cloned()
                .collect();
            edges.insert(file.clone(), targets);
        }
        edges
    }
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.edges.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.edges.contains_key(next) {
                    continue;
                }
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

/// Each circle of a crate, with the arrows that close it.
fn circles_of(source_root: &str) -> Vec<String> {
    let krate = Crate::read(workspace().join(source_root));
    let edges = krate.edges();
    circles(&edges)
        .into_iter()
        .map(|files| {
            let arrows: Vec<String> = files
                .iter()
                .flat_map(|from| {
                    edges[from]
                        .iter()
                        .filter(|to| files.contains(to))
                        .map(move |to| format!("    {from} -> {to}"))
                })
                .collect();
            format!(
                "{source_root}: {} files in a circle:\n{}",
                files.len(),
                arrows.join("\n")
            )
        })
        .collect()
}

#[test]
fn no_import_circle_spans_files() {
    let found: Vec<String> = [
        "web/src",
        "server/store/src",
        "server/app/src",
        "server/src",
        "server/testing/src",
        "cli/src",
    ]
    .into_iter()
    .flat_map(circles_of)
    .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_api_and_the_catalog_share_rules_only_through_app() {
    let krate = Crate::read(workspace().join("server/src"));
    let edges = krate.edges();
    let mut found = Vec::new();
    for (from, targets) in &edges {
        for to in targets {
            let crossed = (from.starts_with("routes/") && to.starts_with("catalog/"))
                || (from.starts_with("catalog/") && to.starts_with("routes/"));
            if crossed {
                found.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_http_crate_names_neither_the_store_nor_sql() {
    let root = workspace().join("server/src");
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    let mut found = Vec::new();
    for file in files {
        let tokens = tokens_of(&root, &file);
        let mut paths = Vec::new();
        fn roots(tokens: &[TokenTree], out: &mut Vec<String>) {
            for (i, token) in tokens.iter().enumerate() {
                match token {
                    TokenTree::Ident(id) if is_sep(tokens, i + 1) => out.push(id.to_string()),
                    TokenTree::Group(group) => {
                        let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                        roots(&inner, out);
                    }
                    _ => {}
                }
            }
        }
        roots(&tokens, &mut paths);
        for banned in ["store", "sqlx", "object_store"] {
            if paths.iter().any(|p| p == banned) {
                found.push(format!("{file} names `{banned}::`"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scanner_resolves_trees_chains_and_reexports() {
    let source = r#"
        use crate::{db::Db, service::{self, tokens::Claims}};
        fn f() { crate::routes::x(); sqlx::query!(crate::catalog::Y); $crate::not::this(); }
        mod tests { use super::super::state::AppState; use super::*; }
    "#;
    let tokens: Vec<TokenTree> = TokenStream::from_str(source).unwrap().into_iter().collect();
    let mut paths = Vec::new();
    let module = vec!["routes".to_owned(), "x".to_owned()];
    paths_named(&tokens, &module, &Scope::default(), &mut paths);
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "db::Db",
            "service",
            "service::tokens::Claims",
            "routes::x",
            "catalog::Y",
            "routes::state::AppState",
            "routes::x",
        ]
    );
    // A module brought in by `use`, then named bare; a child named bare.
    let source = "use crate::routes; mod tests; fn f() { routes::clowl::g(); tests::h(); }";
    let tokens: Vec<TokenTree> = TokenStream::from_str(source).unwrap().into_iter().collect();
    let children = BTreeSet::from(["tests".to_owned()]);
    let scope = use_aliases(&tokens, &Vec::new(), &children);
    let mut paths = Vec::new();
    paths_named(&tokens, &Vec::new(), &scope, &mut paths);
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["routes", "routes::clowl::g", "tests::h"]);

    let lib = "pub use error::{FieldError, ServiceError}; pub use crate::registry::Registry;";
    let tokens: Vec<TokenTree> = TokenStream::from_str(lib).unwrap().into_iter().collect();
    let found = reexports(&tokens, &Vec::new());
    assert_eq!(found["ServiceError"], ["error", "ServiceError"]);
    assert_eq!(found["Registry"], ["registry", "Registry"]);
    assert_eq!(module_path("routes/mod.rs"), ["routes"]);
    assert_eq!(module_path("catalog/views.rs"), ["catalog", "views"]);
    assert!(module_path("lib.rs").is_empty());
}

#[test]
fn a_circle_is_found_and_a_line_is_not() {
    let edge = |pairs: &[(&str, &str)]| {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            edges
                .entry((*a).to_owned())
                .or_default()
                .insert((*b).to_owned());
            edges.entry((*b).to_owned()).or_default();
        }
        edges
    };
    assert!(circles(&edge(&[("a", "b"), ("b", "c")])).is_empty());
    assert_eq!(
        circles(&edge(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        [["a", "b", "c"]]
    );
}
