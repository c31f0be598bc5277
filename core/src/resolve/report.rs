//! Explaining an unsatisfiable resolution: pubgrub's derivation tree worded
//! the way Cargo words it, with requirements as they were written (`^1.2.0`)
//! rather than as the sets of versions the solver works with, plus the same
//! facts in structured form for the HTTP layer.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use pubgrub::{
    DefaultStringReporter, DerivationTree, Derived, External, Map, ReportFormatter, Reporter, Term,
};

use super::{
    Conflict, PackageSource, Pkg, RequiredBy,
    candidates::CandidateSet,
    provider::{PackageInfo, Provider, Written},
};
use crate::names::{PackageName, Version};

type Tree = DerivationTree<Pkg, CandidateSet, String>;
type Ext = External<Pkg, CandidateSet, String>;
type Terms = Map<Pkg, Term<CandidateSet>>;

/// At most this many versions are listed in one phrase of an explanation.
const MAX_LISTED: usize = 5;

/// Derivation trees whose unfolded size (every shared subtree counted each
/// time it is reached) exceeds this are not collapsed (see
/// `Provider::solve`).
pub(super) const MAX_COLLAPSED_NODES: u64 = 10_000;

/// Conflicts reported at most; an explanation past this many facts is not
/// made clearer by more.
const MAX_CONFLICTS: usize = 64;

/// The longest explanation sent, in bytes; a longer one is cut at a line.
const MAX_EXPLANATION_BYTES: usize = 16 * 1024;

/// How many nodes `tree` has with every shared subtree counted each time it
/// is reached, saturating past [`MAX_COLLAPSED_NODES`]. Memoised by node, so
/// linear in the DAG however much it shares.
pub(super) fn unfolded_size(tree: &Tree) -> u64 {
    fn size(tree: &Tree, memo: &mut HashMap<*const Tree, u64>) -> u64 {
        let DerivationTree::Derived(derived) = tree else {
            return 1;
        };
        let mut total = 1u64;
        for cause in [&derived.cause1, &derived.cause2] {
            let key = Arc::as_ptr(cause);
            let n = match memo.get(&key) {
                Some(n) => *n,
                None => {
                    let n = size(cause, memo);
                    memo.insert(key, n);
                    n
                }
            };
            total = total.saturating_add(n).min(MAX_COLLAPSED_NODES + 1);
        }
        total
    }
    size(tree, &mut HashMap::new())
}

pub(super) fn explain<S: PackageSource + ?Sized>(
    tree: &Tree,
    provider: &Provider<'_, S>,
) -> (String, Vec<Conflict>) {
    let words = Words {
        provider,
        by_dependency: by_dependency(provider),
    };
    let mut explanation = DefaultStringReporter::report_with_formatter(tree, &words);
    if explanation.len() > MAX_EXPLANATION_BYTES {
        let limit = explanation.floor_char_boundary(MAX_EXPLANATION_BYTES);
        let cut = explanation[..limit].rfind('\n').unwrap_or(limit);
        explanation.truncate(cut);
        explanation.push_str("\n(explanation truncated)");
    }
    let mut conflicts = Vec::new();
    words.collect(tree, &mut HashSet::new(), &mut conflicts);
    (explanation, conflicts)
}

/// Every requirement text stated on a package, whoever states it: the
/// lookups of requirements without a dependent, indexed once.
fn by_dependency<S: PackageSource + ?Sized>(
    provider: &Provider<'_, S>,
) -> HashMap<Pkg, Vec<(CandidateSet, Written)>> {
    let mut index: HashMap<Pkg, Vec<(CandidateSet, Written)>> = HashMap::new();
    for ((_, to), entries) in &provider.texts.borrow().by_edge {
        index
            .entry(to.clone())
            .or_default()
            .extend(entries.iter().cloned());
    }
    index
}

struct Words<'p, 'a, S: ?Sized> {
    provider: &'p Provider<'a, S>,
    by_dependency: HashMap<Pkg, Vec<(CandidateSet, Written)>>,
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
        let entries = match from {
            Some(from) => texts.by_edge.get(&(from.clone(), to.clone())),
            None => self.by_dependency.get(to),
        };
        let written = entries
            .into_iter()
            .flatten()
            .filter(|(s, _)| s == set)
            .map(|(_, written)| written.to_string())
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

    /// The facts at the leaves of `tree`, each once. A shared subtree is
    /// walked once (`seen` holds its id), so the walk is linear in the DAG.
    fn collect(&self, tree: &Tree, seen: &mut HashSet<usize>, out: &mut Vec<Conflict>) {
        if out.len() >= MAX_CONFLICTS {
            return;
        }
        let conflict = match tree {
            DerivationTree::Derived(derived) => {
                if let Some(id) = derived.shared_id
                    && !seen.insert(id)
                {
                    return;
                }
                self.collect(&derived.cause1, seen, out);
                self.collect(&derived.cause2, seen, out);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{Cancel, MemorySource, Request};

    /// A chain of `depth` derived incompatibilities, each caused twice by
    /// the one below it: 2^depth paths through `depth` nodes.
    fn shared_chain(depth: usize) -> Tree {
        let pkg = |n: usize| Pkg::Tool(format!("t{n}"));
        let set = || CandidateSet::only(vec![semver::Version::new(1, 0, 0)]);
        let mut node = Arc::new(DerivationTree::External(External::FromDependencyOf(
            Pkg::Root,
            set(),
            pkg(0),
            set(),
        )));
        for i in 0..depth {
            let mut terms = Map::default();
            terms.insert(pkg(i), Term::Positive(set()));
            node = Arc::new(DerivationTree::Derived(Derived {
                terms,
                shared_id: Some(i),
                cause1: Arc::clone(&node),
                cause2: Arc::clone(&node),
            }));
        }
        Arc::unwrap_or_clone(node)
    }

    #[test]
    fn shared_subtrees_are_walked_once() {
        // 2^60 paths: anything but a memoised walk would never finish.
        let tree = shared_chain(60);
        assert_eq!(unfolded_size(&tree), MAX_COLLAPSED_NODES + 1);
        assert_eq!(unfolded_size(&shared_chain(3)), 15);
        let source = MemorySource::new();
        let cancel = Cancel::new();
        let provider = Provider::new(&source, &Request::default(), &cancel);
        let (explanation, conflicts) = explain(&tree, &provider);
        assert!(!explanation.is_empty());
        assert!(explanation.len() <= MAX_EXPLANATION_BYTES + 32);
        // The one leaf fact, found once.
        assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    }
}
