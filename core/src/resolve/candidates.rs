//! The version sets pubgrub works with: explicit, finite sets of concrete
//! versions, or the complement of one.
//!
//! Every package has a finite, known list of published versions, so a
//! requirement is turned into exactly the published versions that
//! `semver::VersionReq::matches` accepts. That keeps Cargo's rules (caret,
//! tilde, wildcards, and above all the prerelease rule, which is not an
//! interval) exact, with no lossy translation into ranges. Complements are
//! needed because pubgrub negates terms; a finite set's complement is
//! represented as "everything except these", and the two forms are closed
//! under intersection, union and complement.

use std::fmt;

use pubgrub::VersionSet;
use semver::Version;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum CandidateSet {
    /// Exactly these versions (sorted ascending, no duplicates).
    Only(Vec<Version>),
    /// Every version except these (sorted ascending, no duplicates).
    AllBut(Vec<Version>),
}

impl CandidateSet {
    /// Builds a set from versions in any order.
    pub(crate) fn only(mut versions: Vec<Version>) -> Self {
        versions.sort_unstable();
        versions.dedup();
        Self::Only(versions)
    }

    /// The versions of a finite set, or `None` for a complement.
    pub(crate) fn as_finite(&self) -> Option<&[Version]> {
        match self {
            Self::Only(v) => Some(v),
            Self::AllBut(_) => None,
        }
    }
}

/// Both inputs sorted and deduplicated; so is the output.
fn merge(
    a: &[Version],
    b: &[Version],
    keep_a_only: bool,
    keep_both: bool,
    keep_b_only: bool,
) -> Vec<Version> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                if keep_a_only {
                    out.push(a[i].clone());
                }
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                if keep_b_only {
                    out.push(b[j].clone());
                }
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                if keep_both {
                    out.push(a[i].clone());
                }
                i += 1;
                j += 1;
            }
        }
    }
    if keep_a_only {
        out.extend_from_slice(&a[i..]);
    }
    if keep_b_only {
        out.extend_from_slice(&b[j..]);
    }
    out
}

impl VersionSet for CandidateSet {
    type V = Version;

    fn empty() -> Self {
        Self::Only(Vec::new())
    }

    fn singleton(v: Version) -> Self {
        Self::Only(vec![v])
    }

    fn full() -> Self {
        Self::AllBut(Vec::new())
    }

    fn complement(&self) -> Self {
        match self {
            Self::Only(v) => Self::AllBut(v.clone()),
            Self::AllBut(v) => Self::Only(v.clone()),
        }
    }

    fn intersection(&self, other: &Self) -> Self {
        match (self, other) {
            (Self::Only(a), Self::Only(b)) => Self::Only(merge(a, b, false, true, false)),
            (Self::Only(a), Self::AllBut(b)) | (Self::AllBut(b), Self::Only(a)) => {
                Self::Only(merge(a, b, true, false, false))
            }
            (Self::AllBut(a), Self::AllBut(b)) => Self::AllBut(merge(a, b, true, true, true)),
        }
    }

    fn union(&self, other: &Self) -> Self {
        match (self, other) {
            (Self::Only(a), Self::Only(b)) => Self::Only(merge(a, b, true, true, true)),
            // Everything except what b excludes and a does not bring back.
            (Self::Only(a), Self::AllBut(b)) | (Self::AllBut(b), Self::Only(a)) => {
                Self::AllBut(merge(b, a, true, false, false))
            }
            (Self::AllBut(a), Self::AllBut(b)) => Self::AllBut(merge(a, b, false, true, false)),
        }
    }

    fn contains(&self, v: &Version) -> bool {
        match self {
            Self::Only(vs) => vs.binary_search(v).is_ok(),
            Self::AllBut(vs) => vs.binary_search(v).is_err(),
        }
    }
}

impl fmt::Display for CandidateSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |vs: &[Version]| {
            vs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Self::Only(vs) if vs.is_empty() => f.write_str("(no version)"),
            Self::Only(vs) => write!(f, "{}", list(vs)),
            Self::AllBut(vs) if vs.is_empty() => f.write_str("(any version)"),
            Self::AllBut(vs) => write!(f, "(any version except {})", list(vs)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(n: u64) -> Version {
        Version::new(n, 0, 0)
    }

    fn set() -> impl Strategy<Value = CandidateSet> {
        (any::<bool>(), prop::collection::vec(0u64..6, 0..5)).prop_map(|(finite, ns)| {
            let CandidateSet::Only(vs) = CandidateSet::only(ns.into_iter().map(v).collect()) else {
                unreachable!("only() builds a finite set")
            };
            if finite {
                CandidateSet::Only(vs)
            } else {
                CandidateSet::AllBut(vs)
            }
        })
    }

    proptest! {
        // The set algebra is checked pointwise over a universe that includes
        // versions no set mentions (6, 7), which is where complements differ.
        #[test]
        fn operations_agree_with_membership(a in set(), b in set()) {
            for n in 0..8 {
                let x = v(n);
                prop_assert_eq!(a.intersection(&b).contains(&x), a.contains(&x) && b.contains(&x));
                prop_assert_eq!(a.union(&b).contains(&x), a.contains(&x) || b.contains(&x));
                prop_assert_eq!(a.complement().contains(&x), !a.contains(&x));
            }
            // Canonical forms: equal sets compare equal.
            prop_assert_eq!(a.intersection(&b), b.intersection(&a));
            prop_assert_eq!(&a.complement().complement(), &a);
            prop_assert_eq!(a.union(&b).complement(), a.complement().intersection(&b.complement()));
        }
    }
}
