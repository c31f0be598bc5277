//! Explaining an unsatisfiable resolution: pubgrub's derivation tree worded
//! the way Cargo words it, with requirements as they were written (`^1.2.0`)
//! rather than as the sets of versions the solver works with, plus the same
//! facts in structured form for the HTTP layer.

use pubgrub::{
    DefaultStringReporter, DerivationTree, Derived, External, Map, ReportFormatter, Reporter, Term,
};

use super::{
    Conflict, PackageSource, Pkg, RequiredBy,
    candidates::CandidateSet,
    provider::{PackageInfo, Provider},
};
use crate::names::{PackageName, Version};

type Tree = DerivationTree<Pkg, CandidateSet, String>;
type Ext = External<Pkg, CandidateSet, String>;
type Terms = Map<Pkg, Term<CandidateSet>>;

/// At most this many versions are listed in one phrase of an explanation.
const MAX_LISTED: usize = 5;

pub(super) fn explain<S: PackageSource + ?Sized>(
    tree: &Tree,
    provider: &Provider<'_, S>,
) -> (String, Vec<Conflict>) {
    let words = Words { provider };
    let explanation = DefaultStringReporter::report_with_formatter(tree, &words);
    let mut conflicts = Vec::new();
    words.collect(tree, &mut conflicts);
    (explanation, conflicts)
}

struct Words<'p, 'a, S: ?Sized> {
    provider: &'p Provider<'a, S>,
}

impl<S: PackageSource + ?Sized> Words<'_, '_, S> {
    fn info(&self, pkg: &Pkg) -> Option<std::rc::Rc<PackageInfo>> {
        self.provider.info(pkg)
    }

    fn name(&self, pkg: &Pkg) -> String {
        match (pkg, self.info(pkg)) {
            (Pkg::Tool(_), Some(info)) => info.display.to_string(),
            _ => pkg.to_string(),
        }
    }

    fn display_name(&self, pkg: &Pkg) -> Option<PackageName> {
        match pkg {
            Pkg::Root => None,
            Pkg::Tool(key) => self
                .info(pkg)
                .map(|i| i.display.clone())
                .or_else(|| PackageName::new(key.clone()).ok()),
        }
    }

    /// The usable versions of `pkg` in `set`, newest first.
    fn concrete(&self, pkg: &Pkg, set: &CandidateSet) -> Vec<semver::Version> {
        match self.info(pkg) {
            Some(info) => info
                .candidates
                .iter()
                .filter(|c| pubgrub::VersionSet::contains(set, &c.version))
                .map(|c| c.version.clone())
                .collect(),
            None => set.as_finite().map(<[_]>::to_vec).unwrap_or_default(),
        }
    }

    fn list(versions: &[semver::Version]) -> String {
        let mut shown: Vec<String> = versions
            .iter()
            .take(MAX_LISTED)
            .map(ToString::to_string)
            .collect();
        if versions.len() > MAX_LISTED {
            shown.push(format!("and {} more", versions.len() - MAX_LISTED));
        }
        shown.join(", ")
    }

    /// `pkg` restricted to `set`, as the subject of a sentence.
    fn subject(&self, pkg: &Pkg, set: &CandidateSet) -> String {
        if *pkg == Pkg::Root {
            return pkg.to_string();
        }
        let name = self.name(pkg);
        let versions = self.concrete(pkg, set);
        let all = self.info(pkg).map_or(0, |i| i.candidates.len());
        match versions.as_slice() {
            [] => format!("{name} (no usable version)"),
            [only] => format!("{name} {only}"),
            _ if versions.len() == all => format!("every version of {name}"),
            _ => format!("{name} {}", Self::list(&versions)),
        }
    }

    /// Whether [`Words::subject`] names several versions, for the verb.
    fn plural(&self, pkg: &Pkg, set: &CandidateSet) -> bool {
        let count = self.concrete(pkg, set).len();
        *pkg != Pkg::Root && count > 1 && count < self.info(pkg).map_or(0, |i| i.candidates.len())
    }

    /// The requirement `from` states on `to` whose candidates are `set`, as
    /// written; else the versions it leaves.
    fn requirement(&self, from: Option<&Pkg>, to: &Pkg, set: &CandidateSet) -> String {
        let texts = self.provider.texts.borrow();
        let written = texts
            .by_edge
            .iter()
            .filter(|((f, t), _)| t == to && from.is_none_or(|from| f == from))
            .flat_map(|(_, entries)| entries)
            .filter(|(s, _)| s == set)
            .map(|(_, text)| text.clone())
            .min();
        if let Some(text) = written {
            return text;
        }
        let versions = self.concrete(to, set);
        if versions.is_empty() {
            "(no usable version)".to_owned()
        } else {
            Self::list(&versions)
        }
    }

    fn available(&self, pkg: &Pkg) -> String {
        let versions: Vec<semver::Version> = self
            .info(pkg)
            .map(|i| i.candidates.iter().map(|c| c.version.clone()).collect())
            .unwrap_or_default();
        if versions.is_empty() {
            format!("{} has no usable version", self.name(pkg))
        } else {
            format!("available: {}", Self::list(&versions))
        }
    }

    fn requires(
        &self,
        from: &Pkg,
        from_set: &CandidateSet,
        to: &Pkg,
        to_set: &CandidateSet,
    ) -> String {
        let subject = self.subject(from, from_set);
        let verb = if self.plural(from, from_set) {
            "require"
        } else {
            "requires"
        };
        let req = self.requirement(Some(from), to, to_set);
        let to_name = self.name(to);
        // No requirement was written: say so rather than print `*`.
        let req = if req == "*" {
            "(any version)".to_owned()
        } else {
            req
        };
        if self.concrete(to, to_set).is_empty() {
            format!(
                "{subject} {verb} {to_name} {req}, which no usable version matches ({})",
                self.available(to)
            )
        } else {
            format!("{subject} {verb} {to_name} {req}")
        }
    }

    fn collect(&self, tree: &Tree, out: &mut Vec<Conflict>) {
        let conflict = match tree {
            DerivationTree::Derived(derived) => {
                self.collect(&derived.cause1, out);
                self.collect(&derived.cause2, out);
                return;
            }
            DerivationTree::External(External::FromDependencyOf(from, from_set, to, to_set)) => {
                let Some(package) = self.display_name(to) else {
                    return;
                };
                Conflict::Requirement {
                    required_by: self.display_name(from).map(|name| RequiredBy {
                        name,
                        versions: versions(self.concrete(from, from_set)),
                    }),
                    package,
                    requirement: self.requirement(Some(from), to, to_set),
                    satisfied_by: versions(self.concrete(to, to_set)),
                }
            }
            DerivationTree::External(External::NoVersions(pkg, set)) => {
                let Some(package) = self.display_name(pkg) else {
                    return;
                };
                Conflict::NoVersion {
                    package,
                    requirement: self.requirement(None, pkg, set),
                }
            }
            DerivationTree::External(External::NotRoot(..) | External::Custom(..)) => return,
        };
        if !out.contains(&conflict) {
            out.push(conflict);
        }
    }
}

fn versions(vs: Vec<semver::Version>) -> Vec<Version> {
    vs.into_iter().map(Version::from).collect()
}

impl<S: PackageSource + ?Sized> ReportFormatter<Pkg, CandidateSet, String> for Words<'_, '_, S> {
    type Output = String;

    fn format_external(&self, external: &Ext) -> String {
        match external {
            External::NotRoot(pkg, version) => format!("{pkg} {version} is what is being resolved"),
            External::NoVersions(pkg, set) => format!(
                "no usable version of {} matches {} ({})",
                self.name(pkg),
                self.requirement(None, pkg, set),
                self.available(pkg)
            ),
            External::FromDependencyOf(from, from_set, to, to_set) => {
                self.requires(from, from_set, to, to_set)
            }
            External::Custom(pkg, set, reason) => {
                format!("{} cannot be used: {reason}", self.subject(pkg, set))
            }
        }
    }

    fn format_terms(&self, terms: &Terms) -> String {
        let terms: Vec<_> = terms.iter().collect();
        match terms.as_slice() {
            [] => "no set of versions satisfies every requirement".to_owned(),
            [(Pkg::Root, Term::Positive(_))] => {
                "the agent's tool requirements cannot be met".to_owned()
            }
            [(pkg, Term::Positive(set))] => format!("{} cannot be used", self.subject(pkg, set)),
            [(pkg, Term::Negative(set))] => format!(
                "{} {} is required",
                self.name(pkg),
                self.requirement(None, pkg, set)
            ),
            [(p1, Term::Positive(r1)), (p2, Term::Negative(r2))]
            | [(p2, Term::Negative(r2)), (p1, Term::Positive(r1))] => self.requires(p1, r1, p2, r2),
            many => {
                let parts: Vec<String> = many
                    .iter()
                    .map(|(pkg, term)| match term {
                        Term::Positive(set) => self.subject(pkg, set),
                        Term::Negative(set) => format!(
                            "not {} {}",
                            self.name(pkg),
                            self.requirement(None, pkg, set)
                        ),
                    })
                    .collect();
                match parts.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} and {last} cannot be used together", rest.join(", "))
                    }
                    _ => format!("{} cannot be used", parts.concat()),
                }
            }
        }
    }

    fn explain_both_external(
        &self,
        external1: &Ext,
        external2: &Ext,
        current_terms: &Terms,
    ) -> String {
        format!(
            "Because {} and {}, {}.",
            self.format_external(external1),
            self.format_external(external2),
            self.format_terms(current_terms)
        )
    }

    fn explain_both_ref(
        &self,
        ref_id1: usize,
        derived1: &Derived<Pkg, CandidateSet, String>,
        ref_id2: usize,
        derived2: &Derived<Pkg, CandidateSet, String>,
        current_terms: &Terms,
    ) -> String {
        format!(
            "Because {} ({ref_id1}) and {} ({ref_id2}), {}.",
            self.format_terms(&derived1.terms),
            self.format_terms(&derived2.terms),
            self.format_terms(current_terms)
        )
    }

    fn explain_ref_and_external(
        &self,
        ref_id: usize,
        derived: &Derived<Pkg, CandidateSet, String>,
        external: &Ext,
        current_terms: &Terms,
    ) -> String {
        format!(
            "Because {} ({ref_id}) and {}, {}.",
            self.format_terms(&derived.terms),
            self.format_external(external),
            self.format_terms(current_terms)
        )
    }

    fn and_explain_external(&self, external: &Ext, current_terms: &Terms) -> String {
        format!(
            "And because {}, {}.",
            self.format_external(external),
            self.format_terms(current_terms)
        )
    }

    fn and_explain_ref(
        &self,
        ref_id: usize,
        derived: &Derived<Pkg, CandidateSet, String>,
        current_terms: &Terms,
    ) -> String {
        format!(
            "And because {} ({ref_id}), {}.",
            self.format_terms(&derived.terms),
            self.format_terms(current_terms)
        )
    }

    fn and_explain_prior_and_external(
        &self,
        prior_external: &Ext,
        external: &Ext,
        current_terms: &Terms,
    ) -> String {
        format!(
            "And because {} and {}, {}.",
            self.format_external(prior_external),
            self.format_external(external),
            self.format_terms(current_terms)
        )
    }
}
