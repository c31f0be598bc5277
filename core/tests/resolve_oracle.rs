//! The resolver against a brute-force oracle on small random registries:
//! same verdict, and every answer it gives satisfies every rule.

mod resolve_support;

use std::collections::BTreeMap;

use agentlang_core::digest::Sha256Digest;
use agentlang_core::resolve::{MemorySource, Request, ResolveError, VersionEntry};
use proptest::prelude::*;
use resolve_support::*;
use semver::VersionReq;

const VERSIONS: &[&str] = &[
    "0.1.0",
    "0.1.5",
    "1.0.0",
    "1.1.0",
    "1.2.0-beta.1",
    "1.2.0",
    "2.0.0-alpha",
    "2.0.0",
];
const REQUIREMENTS: &[&str] = &[
    "^0.1",
    "^1",
    "^1.1",
    ">=1.0.0, <2.0.0",
    "~1.2.0-beta.1",
    ">=1.2.0-beta.1",
    "*",
    "=2.0.0",
    "^2.0.0-alpha",
    "<1.0.0",
    "1.2.0",
    "~1.0",
];

#[derive(Debug, Clone)]
struct Published {
    version: semver::Version,
    yanked: bool,
    deps: Vec<(usize, VersionReq)>,
}

#[derive(Debug, Clone)]
struct Case {
    packages: Vec<Vec<Published>>,
    root: Vec<(usize, Option<VersionReq>)>,
    pins: Vec<(usize, semver::Version)>,
}

fn pkg_name(i: usize) -> String {
    format!("p{i}")
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=5).prop_flat_map(|n| {
        let published = (
            0..VERSIONS.len(),
            prop::bool::weighted(0.2),
            prop::collection::vec((0..n, 0..REQUIREMENTS.len()), 0..=2),
        );
        let package = prop::collection::vec(published, 1..=5);
        (
            prop::collection::vec(package, n),
            prop::collection::vec(
                (0..n, prop::option::weighted(0.8, 0..REQUIREMENTS.len())),
                1..=3,
            ),
            prop::collection::vec((0..n, 0..VERSIONS.len()), 0..=2),
        )
            .prop_map(|(packages, root, pins)| {
                let packages = packages
                    .into_iter()
                    .enumerate()
                    .map(|(me, versions)| {
                        let mut seen = Vec::new();
                        versions
                            .into_iter()
                            .filter(|(v, _, _)| {
                                let fresh = !seen.contains(v);
                                seen.push(*v);
                                fresh
                            })
                            .map(|(v, yanked, deps)| Published {
                                version: semver::Version::parse(VERSIONS[v]).unwrap(),
                                yanked,
                                // One requirement per dependency name, as
                                // in tool.yaml (a map).
                                deps: deps
                                    .into_iter()
                                    .filter(|(d, _)| *d != me)
                                    .collect::<BTreeMap<usize, usize>>()
                                    .into_iter()
                                    .map(|(d, r)| (d, VersionReq::parse(REQUIREMENTS[r]).unwrap()))
                                    .collect(),
                            })
                            .collect()
                    })
                    .collect();
                Case {
                    packages,
                    root: root
                        .into_iter()
                        .map(|(p, r)| (p, r.map(|r| VersionReq::parse(REQUIREMENTS[r]).unwrap())))
                        .collect(),
                    pins: pins
                        .into_iter()
                        .map(|(p, v)| (p, semver::Version::parse(VERSIONS[v]).unwrap()))
                        .collect(),
                }
            })
    })
}

impl Case {
    fn source(&self) -> MemorySource {
        let mut source = MemorySource::new();
        for (i, versions) in self.packages.iter().enumerate() {
            for p in versions {
                source.add_version(
                    &name(&pkg_name(i)),
                    VersionEntry {
                        version: p.version.clone().into(),
                        yanked: p.yanked,
                        hash: Sha256Digest::of(p.version.to_string().as_bytes()),
                        dependencies: p
                            .deps
                            .iter()
                            .map(|(d, r)| (name(&pkg_name(*d)), r.clone()))
                            .collect(),
                        published_at: 0,
                        log_index: None,
                    },
                );
            }
        }
        source
    }

    /// Root requirements on one name are all kept (the request map keeps the
    /// last one per name, so the oracle does the same).
    fn root_requirements(&self) -> BTreeMap<usize, Option<VersionReq>> {
        self.root.iter().cloned().collect()
    }

    fn pins(&self) -> BTreeMap<usize, semver::Version> {
        self.pins.iter().cloned().collect()
    }

    fn request(&self) -> Request {
        Request {
            requirements: self
                .root_requirements()
                .into_iter()
                .map(|(p, r)| (name(&pkg_name(p)), r))
                .collect(),
            pins: self
                .pins()
                .into_iter()
                .map(|(p, v)| (name(&pkg_name(p)), v.into()))
                .collect(),
            exclude_newer: None,
        }
    }

    /// What may be chosen: unyanked versions, and the pinned one even if yanked.
    fn usable(&self, p: usize, v: &semver::Version) -> bool {
        self.packages[p]
            .iter()
            .any(|x| &x.version == v && (!x.yanked || self.pins().get(&p) == Some(v)))
    }

    /// Every rule, checked directly on a complete assignment.
    fn valid(&self, assignment: &[Option<semver::Version>]) -> bool {
        let root_ok = self.root_requirements().iter().all(|(p, req)| {
            let req = req.clone().unwrap_or(VersionReq::STAR);
            assignment[*p].as_ref().is_some_and(|v| req.matches(v))
        });
        root_ok
            && assignment.iter().enumerate().all(|(p, chosen)| {
                let Some(v) = chosen else { return true };
                let Some(published) = self.packages[p].iter().find(|x| &x.version == v) else {
                    return false;
                };
                self.usable(p, v)
                    && published
                        .deps
                        .iter()
                        .all(|(d, req)| assignment[*d].as_ref().is_some_and(|w| req.matches(w)))
            })
    }

    /// Exhaustive search: each package absent or at one usable version.
    fn oracle_satisfiable(&self) -> bool {
        let options: Vec<Vec<Option<semver::Version>>> = (0..self.packages.len())
            .map(|p| {
                std::iter::once(None)
                    .chain(
                        self.packages[p]
                            .iter()
                            .filter(|x| self.usable(p, &x.version))
                            .map(|x| Some(x.version.clone())),
                    )
                    .collect()
            })
            .collect();
        let mut assignment = vec![None; options.len()];
        search(self, &options, 0, &mut assignment)
    }
}

fn search(
    case: &Case,
    options: &[Vec<Option<semver::Version>>],
    at: usize,
    assignment: &mut Vec<Option<semver::Version>>,
) -> bool {
    if at == options.len() {
        return case.valid(assignment);
    }
    for option in &options[at] {
        assignment[at] = option.clone();
        if search(case, options, at + 1, assignment) {
            return true;
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn resolver_agrees_with_brute_force(case in case()) {
        let expected = case.oracle_satisfiable();
        match run(&case.source(), &case.request()) {
            Ok(resolution) => {
                prop_assert!(expected, "resolver found a solution the oracle did not: {resolution:?}");
                let mut assignment = vec![None; case.packages.len()];
                for (tool_name, tool) in &resolution.tools {
                    let index: usize = tool_name.as_str()[1..].parse().unwrap();
                    assignment[index] = Some(tool.version.semver().clone());
                }
                prop_assert!(case.valid(&assignment), "invalid answer {assignment:?}");
            }
            Err(ResolveError::Unsatisfiable { explanation, conflicts }) => {
                prop_assert!(!expected, "resolver gave up on a satisfiable case:\n{explanation}");
                prop_assert!(!explanation.is_empty());
                prop_assert!(!conflicts.is_empty());
            }
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }
}
