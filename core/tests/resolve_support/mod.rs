//! Shared helpers for the resolver tests: registries written as tables.

#![allow(dead_code)]

use std::collections::BTreeMap;

use agentlang_core::{
    PackageName, Version,
    digest::Sha256Digest,
    resolve::{Cancel, MemorySource, Request, Resolution, ResolveError, VersionEntry, resolve},
};
use semver::VersionReq;

pub fn name(s: &str) -> PackageName {
    PackageName::new(s).unwrap()
}

pub fn version(s: &str) -> Version {
    Version::parse(s).unwrap()
}

pub fn req(s: &str) -> VersionReq {
    VersionReq::parse(s).unwrap()
}

/// One row: package, version, yanked, dependencies (name, requirement).
pub type Row<'a> = (&'a str, &'a str, bool, &'a [(&'a str, &'a str)]);

pub fn registry(rows: &[Row<'_>]) -> MemorySource {
    let mut source = MemorySource::new();
    for (pkg, v, yanked, deps) in rows {
        source.add_version(
            &name(pkg),
            VersionEntry {
                version: version(v),
                yanked: *yanked,
                hash: Sha256Digest::of(format!("{pkg}@{v}").as_bytes()),
                dependencies: deps.iter().map(|(d, r)| (name(d), req(r))).collect(),
                published_at: 0,
                log_index: None,
            },
        );
    }
    source
}

/// Versions of one package, none yanked, no dependencies.
pub fn releases(pkg: &str, versions: &[&str]) -> MemorySource {
    let rows: Vec<Row<'_>> = versions.iter().map(|v| (pkg, *v, false, &[][..])).collect();
    registry(&rows)
}

pub fn request(reqs: &[(&str, Option<&str>)], pins: &[(&str, &str)]) -> Request {
    Request {
        requirements: reqs.iter().map(|(n, r)| (name(n), r.map(req))).collect(),
        pins: pins.iter().map(|(n, v)| (name(n), version(v))).collect(),
        exclude_newer: None,
    }
}

pub fn run(source: &MemorySource, request: &Request) -> Result<Resolution, ResolveError> {
    resolve(source, request, &Cancel::new())
}

/// The chosen versions as text, for compact assertions.
pub fn chosen(resolution: &Resolution) -> BTreeMap<String, String> {
    resolution
        .tools
        .iter()
        .map(|(n, t)| (n.to_string(), t.version.to_string()))
        .collect()
}
