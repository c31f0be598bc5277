//! Package specs on the command line: `NAME`, `NAME@REQ` (pull) and
//! `NAME@VERSION` (yank).

use agentlang_core::{NameError, PackageName, Version};
use semver::VersionReq;

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{spec:?}: {source}")]
    Name { spec: String, source: NameError },
    #[error("{spec:?}: {req:?} is not a version requirement ({source})")]
    Requirement {
        spec: String,
        req: String,
        source: semver::Error,
    },
    #[error("{0:?} must be NAME@VERSION")]
    MissingVersion(String),
    #[error("{spec:?}: {source}")]
    Version { spec: String, source: NameError },
}

/// `NAME` or `NAME@REQ`; no requirement means the newest release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageReq {
    pub name: PackageName,
    pub req: Option<VersionReq>,
}

impl PackageReq {
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let (name, req) = match spec.split_once('@') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        let name = PackageName::new(name).map_err(|source| SpecError::Name {
            spec: spec.to_owned(),
            source,
        })?;
        let req = req
            .map(|r| {
                VersionReq::parse(r).map_err(|source| SpecError::Requirement {
                    spec: spec.to_owned(),
                    req: r.to_owned(),
                    source,
                })
            })
            .transpose()?;
        Ok(Self { name, req })
    }
}

/// `NAME@VERSION`, exact.
pub fn parse_exact(spec: &str) -> Result<(PackageName, Version), SpecError> {
    let (name, version) = spec
        .split_once('@')
        .ok_or_else(|| SpecError::MissingVersion(spec.to_owned()))?;
    let name = PackageName::new(name).map_err(|source| SpecError::Name {
        spec: spec.to_owned(),
        source,
    })?;
    let version = Version::parse(version).map_err(|source| SpecError::Version {
        spec: spec.to_owned(),
        source,
    })?;
    Ok((name, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_name_has_no_requirement() {
        let r = PackageReq::parse("web_search").unwrap();
        assert_eq!(r.name.as_str(), "web_search");
        assert_eq!(r.req, None);
    }

    #[test]
    fn requirement_follows_cargo_rules() {
        let r = PackageReq::parse("research-assistant@1.2").unwrap();
        let req = r.req.unwrap();
        assert!(req.matches(&semver::Version::new(1, 9, 0)));
        assert!(!req.matches(&semver::Version::new(2, 0, 0)));
        let r = PackageReq::parse("x@>=1.0, <1.5").unwrap();
        assert!(!r.req.unwrap().matches(&semver::Version::new(1, 5, 0)));
    }

    #[test]
    fn bad_name_and_bad_requirement_are_told_apart() {
        assert!(matches!(
            PackageReq::parse("9lives@1"),
            Err(SpecError::Name { .. })
        ));
        assert!(matches!(
            PackageReq::parse("@1"),
            Err(SpecError::Name { .. })
        ));
        let err = PackageReq::parse("web_search@banana").unwrap_err();
        assert!(
            matches!(err, SpecError::Requirement { ref req, .. } if req == "banana"),
            "{err}"
        );
    }

    #[test]
    fn exact_spec_needs_a_full_version() {
        let (n, v) = parse_exact("web_search@1.2.0").unwrap();
        assert_eq!(
            (n.as_str(), v.to_string().as_str()),
            ("web_search", "1.2.0")
        );
        assert!(matches!(
            parse_exact("web_search"),
            Err(SpecError::MissingVersion(_))
        ));
        assert!(matches!(
            parse_exact("web_search@^1"),
            Err(SpecError::Version { .. })
        ));
        assert!(matches!(
            parse_exact("web search@1.0.0"),
            Err(SpecError::Name { .. })
        ));
    }
}
