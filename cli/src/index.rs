//! A package's published versions as the registry's index lists them, and
//! the pick of one for a requirement: what `pull` and `install` share.

use std::collections::BTreeMap;

use agentlang_core::{Kind, PackageName, Version, digest::Sha256Digest};
use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use semver::VersionReq;
use serde::Deserialize;

use crate::client::{ApiError, Client};

/// The kind of package `name` is when the command line did not say: the
/// one kind the registry holds a package of that name in. Names are
/// unique per kind, not across kinds, so two matches are the user's to
/// settle with `--kind`.
pub fn which_kind(client: &Client, name: &PackageName, given: Option<Kind>) -> Result<Kind> {
    if let Some(kind) = given {
        return Ok(kind);
    }
    let mut found = Vec::new();
    for kind in Kind::ALL {
        let path = format!("/api/v1/index/{}/{name}", kind.plural());
        match client.send(client.get(&path)) {
            Ok(_) => found.push(kind),
            Err(e)
                if e.downcast_ref::<ApiError>()
                    .is_some_and(|api| api.status == StatusCode::NOT_FOUND) => {}
            Err(e) => return Err(e),
        }
    }
    let spell = |kinds: &[Kind], joiner: &str| {
        kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(joiner)
    };
    match found.as_slice() {
        [kind] => Ok(*kind),
        [] => bail!(
            "the registry has no package named {name} (of any kind: {})",
            spell(&Kind::ALL, ", ")
        ),
        several => bail!(
            "{name} names packages of more than one kind ({}); say which with {}",
            spell(several, ", "),
            several
                .iter()
                .map(|k| format!("--kind {}", k.as_str()))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// `GET /api/v1/index/{kind}/{name}`.
#[derive(Debug, Deserialize)]
pub struct Index {
    pub versions: Vec<IndexEntry>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IndexEntry {
    pub version: Version,
    /// Of the container: `sha256:<hex>` or bare hex.
    #[serde(alias = "sha256")]
    pub hash: String,
    #[serde(default)]
    pub yanked: bool,
    /// Tool name to requirement, as the index lists them.
    #[serde(default)]
    pub dependencies: BTreeMap<String, String>,
    /// RFC 3339; absent from registries that predate it.
    #[serde(default)]
    pub published_at: Option<String>,
}

impl IndexEntry {
    /// The tool dependencies, parsed; a malformed entry is the registry's
    /// error, reported as such.
    pub fn dependencies(&self) -> Result<BTreeMap<PackageName, VersionReq>> {
        self.dependencies
            .iter()
            .map(|(name, req)| {
                let bad = || {
                    format!(
                        "the index lists a malformed dependency {name} {req:?} for {}",
                        self.version
                    )
                };
                Ok((
                    PackageName::new(name.as_str()).with_context(bad)?,
                    VersionReq::parse(req).with_context(bad)?,
                ))
            })
            .collect()
    }

    pub fn digest(&self) -> Result<Sha256Digest> {
        let hex = self.hash.strip_prefix("sha256:").unwrap_or(&self.hash);
        Sha256Digest::parse_hex(hex)
            .with_context(|| format!("the index lists a malformed hash for {}", self.version))
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PickError {
    #[error("{name} has no published versions")]
    NoVersions { name: String },
    #[error("no version of {name} matches {req} (published: {published})")]
    NoMatch {
        name: String,
        req: String,
        published: String,
    },
    #[error(
        "every version of {name} matching {req} is yanked ({yanked}); ask for one exactly, e.g. {name}@={first}"
    )]
    AllYanked {
        name: String,
        req: String,
        yanked: String,
        first: String,
    },
    #[error(
        "every unyanked version of {name} matching {req} was published less than {age} ago ({young}); wait, or lower --min-release-age"
    )]
    AllTooYoung {
        name: String,
        req: String,
        age: String,
        young: String,
    },
}

/// [`pick_version`] among the versions published before `cutoff` (Unix
/// seconds; `None` for all), with the unyanked matching versions it held
/// back as too young, newest first.
pub fn pick_released<'a>(
    name: &str,
    entries: &'a [IndexEntry],
    req: Option<&VersionReq>,
    age: Option<crate::release_age::MinReleaseAge>,
) -> Result<(&'a IndexEntry, Vec<&'a IndexEntry>), PickError> {
    let Some(cutoff) = age.and_then(crate::release_age::MinReleaseAge::cutoff) else {
        return pick_version(name, entries, req).map(|e| (e, Vec::new()));
    };
    let young = |e: &IndexEntry| crate::release_age::too_young(e.published_at.as_deref(), cutoff);
    let old: Vec<IndexEntry> = entries.iter().filter(|e| !young(e)).cloned().collect();
    let matches = |e: &IndexEntry| {
        req.cloned()
            .unwrap_or(VersionReq::STAR)
            .matches(e.version.semver())
    };
    let mut held: Vec<&IndexEntry> = entries
        .iter()
        .filter(|e| young(e) && !e.yanked && matches(e))
        .collect();
    held.sort_by(|a, b| b.version.semver().cmp(a.version.semver()));
    let picked = match pick_version(name, &old, req) {
        Ok(picked) => picked.version.clone(),
        Err(PickError::NoMatch { .. } | PickError::NoVersions { .. }) if !held.is_empty() => {
            return Err(PickError::AllTooYoung {
                name: name.to_owned(),
                req: req.map_or("*".to_owned(), ToString::to_string),
                age: age.map(|a| a.to_string()).unwrap_or_default(),
                young: held
                    .iter()
                    .map(|e| e.version.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        Err(e) => return Err(e),
    };
    let entry = entries
        .iter()
        .find(|e| e.version == picked)
        .expect("picked from a copy of these entries");
    Ok((entry, held))
}

/// The newest version matching `req` that is not yanked. No requirement
/// means the newest release (prereleases only when a requirement names
/// one, as Cargo does). A yanked version is still taken when asked for
/// exactly (`=1.2.0`): yanking hides from new resolutions, not downloads.
pub fn pick_version<'a>(
    name: &str,
    entries: &'a [IndexEntry],
    req: Option<&VersionReq>,
) -> Result<&'a IndexEntry, PickError> {
    if entries.is_empty() {
        return Err(PickError::NoVersions {
            name: name.to_owned(),
        });
    }
    let req = req.cloned().unwrap_or(VersionReq::STAR);
    let mut matching: Vec<&IndexEntry> = entries
        .iter()
        .filter(|e| req.matches(e.version.semver()))
        .collect();
    matching.sort_by(|a, b| b.version.semver().cmp(a.version.semver()));
    if let Some(best) = matching.iter().find(|e| !e.yanked) {
        return Ok(best);
    }
    let exact = req.comparators.len() == 1 && req.comparators[0].op == semver::Op::Exact;
    match matching.first() {
        Some(only) if exact => Ok(only),
        Some(_) => Err(PickError::AllYanked {
            name: name.to_owned(),
            req: req.to_string(),
            yanked: matching
                .iter()
                .map(|e| e.version.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            first: matching[0].version.to_string(),
        }),
        None => Err(PickError::NoMatch {
            name: name.to_owned(),
            req: req.to_string(),
            published: entries
                .iter()
                .map(|e| e.version.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: &str, yanked: bool) -> IndexEntry {
        IndexEntry {
            version: Version::parse(v).unwrap(),
            hash: format!("sha256:{}", "0".repeat(64)),
            yanked,
            dependencies: BTreeMap::new(),
            published_at: None,
        }
    }

    fn req(r: &str) -> VersionReq {
        VersionReq::parse(r).unwrap()
    }

    /// `v`, published `hours_ago` hours ago.
    fn aged(v: &str, yanked: bool, hours_ago: i64) -> IndexEntry {
        let at = time::OffsetDateTime::now_utc() - time::Duration::hours(hours_ago);
        IndexEntry {
            published_at: Some(
                at.format(&time::format_description::well_known::Rfc3339)
                    .unwrap(),
            ),
            ..entry(v, yanked)
        }
    }

    #[test]
    fn a_minimum_release_age_passes_over_young_versions_and_names_them() {
        let e = [
            aged("1.0.0", false, 100),
            aged("1.1.0", false, 30),
            aged("1.2.0", true, 2),
            aged("1.3.0", false, 1),
            aged("2.0.0", false, 1),
        ];
        let age = |a: &str| Some(a.parse().unwrap());
        let (picked, held) = pick_released("x", &e, Some(&req("^1")), age("2d")).unwrap();
        assert_eq!(picked.version.to_string(), "1.0.0");
        // Yanked and non-matching versions are not "held back".
        let held: Vec<String> = held.iter().map(|e| e.version.to_string()).collect();
        assert_eq!(held, ["1.3.0", "1.1.0"]);
        let (picked, held) = pick_released("x", &e, Some(&req("^1")), age("12h")).unwrap();
        assert_eq!(picked.version.to_string(), "1.1.0");
        assert_eq!(held.len(), 1);
        // Zero, or no age, is no cutoff.
        let (picked, held) = pick_released("x", &e, None, age("0")).unwrap();
        assert_eq!(
            (picked.version.to_string(), held.len()),
            ("2.0.0".to_owned(), 0)
        );
        assert_eq!(
            pick_released("x", &e, Some(&req("^2")), age("1d")).unwrap_err(),
            PickError::AllTooYoung {
                name: "x".into(),
                req: "^2".into(),
                age: "1day".into(),
                young: "2.0.0".into(),
            }
        );
    }

    #[test]
    fn newest_release_when_no_requirement() {
        let e = [
            entry("1.0.0", false),
            entry("1.3.0", false),
            entry("2.0.0-beta.1", false),
            entry("1.2.0", false),
        ];
        assert_eq!(
            pick_version("x", &e, None).unwrap().version.to_string(),
            "1.3.0"
        );
    }

    #[test]
    fn requirement_and_yank_are_honoured() {
        let e = [
            entry("1.2.0", false),
            entry("1.4.0", true),
            entry("2.0.0", false),
        ];
        assert_eq!(
            pick_version("x", &e, Some(&req("^1.2")))
                .unwrap()
                .version
                .to_string(),
            "1.2.0"
        );
        assert_eq!(
            pick_version("x", &e, Some(&req(">=1")))
                .unwrap()
                .version
                .to_string(),
            "2.0.0"
        );
    }

    #[test]
    fn prerelease_only_when_named() {
        let e = [entry("1.0.0", false), entry("2.0.0-beta.1", false)];
        assert_eq!(
            pick_version("x", &e, Some(&req(">=1")))
                .unwrap()
                .version
                .to_string(),
            "1.0.0"
        );
        assert_eq!(
            pick_version("x", &e, Some(&req(">=2.0.0-beta.0")))
                .unwrap()
                .version
                .to_string(),
            "2.0.0-beta.1"
        );
    }

    #[test]
    fn exact_request_reaches_a_yanked_version_but_a_range_does_not() {
        let e = [entry("1.0.0", true), entry("1.1.0", true)];
        assert_eq!(
            pick_version("x", &e, Some(&req("=1.0.0")))
                .unwrap()
                .version
                .to_string(),
            "1.0.0"
        );
        assert_eq!(
            pick_version("x", &e, Some(&req("^1"))).unwrap_err(),
            PickError::AllYanked {
                name: "x".into(),
                req: "^1".into(),
                yanked: "1.1.0, 1.0.0".into(),
                first: "1.1.0".into()
            }
        );
    }

    #[test]
    fn nothing_matches_or_nothing_published() {
        let e = [entry("1.0.0", false)];
        assert_eq!(
            pick_version("x", &e, Some(&req("^2"))).unwrap_err(),
            PickError::NoMatch {
                name: "x".into(),
                req: "^2".into(),
                published: "1.0.0".into()
            }
        );
        assert_eq!(
            pick_version("x", &[], None).unwrap_err(),
            PickError::NoVersions { name: "x".into() }
        );
    }

    #[test]
    fn index_hash_accepts_both_spellings() {
        let mut e = entry("1.0.0", false);
        assert_eq!(e.digest().unwrap().to_hex(), "0".repeat(64));
        e.hash = "f".repeat(64);
        assert_eq!(e.digest().unwrap().to_hex(), "f".repeat(64));
        e.hash = "sha256:nothex".into();
        assert!(e.digest().is_err());
    }
}
