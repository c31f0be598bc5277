//! The pubgrub `DependencyProvider` over a [`PackageSource`]: fetches each
//! package once, filters out what may not be chosen, and remembers how every
//! requirement was written so failures can be explained in those words.

use std::{
    cell::{Cell, RefCell},
    cmp::Reverse,
    collections::{BTreeMap, HashMap, HashSet, hash_map::Entry},
    rc::Rc,
    sync::Arc,
};

use pubgrub::{
    Dependencies, DependencyConstraints, DependencyProvider, PackageResolutionStatistics,
    VersionSet,
};
use semver::VersionReq;

use super::{
    Cancel, MAX_BACKTRACKS, PackageSource, Pkg, Request, Resolution, ResolveError, ResolvedTool,
    VersionEntry, candidates::CandidateSet,
};
use crate::names::PackageName;

/// The agent's own "version": pubgrub needs one for its root package.
pub(super) fn root_version() -> semver::Version {
    semver::Version::new(0, 0, 0)
}

pub(super) struct Candidate {
    pub(super) version: semver::Version,
    /// Its entry in [`PackageInfo::entries`].
    entry: usize,
}

/// What the resolver may choose from for one package.
pub(super) struct PackageInfo {
    /// The spelling shown to people: the first one that reached us.
    pub(super) display: PackageName,
    /// The source's list, shared rather than copied: hashes and
    /// dependencies are read from it.
    entries: Arc<Vec<VersionEntry>>,
    /// Unyanked versions old enough for the request's `exclude_newer`, plus
    /// the pinned one even if yanked; newest first.
    pub(super) candidates: Vec<Candidate>,
    /// The lock's version, when it is among the candidates.
    pub(super) pinned: Option<semver::Version>,
    /// How many packages were loaded before this one: the decision order.
    pub(super) order: usize,
}

impl PackageInfo {
    /// The entry of the candidate `version`.
    fn candidate(&self, version: &semver::Version) -> Option<&VersionEntry> {
        self.candidates
            .iter()
            .find(|c| &c.version == version)
            .map(|c| &self.entries[c.entry])
    }

    /// The candidates a requirement accepts, by `VersionReq::matches` alone.
    fn matching(&self, req: &VersionReq) -> CandidateSet {
        // Oldest first, as `only` keeps them: its sort then finds them in
        // order (newest first was its worst case).
        CandidateSet::only(
            self.candidates
                .iter()
                .rev()
                .filter(|c| req.matches(&c.version))
                .map(|c| c.version.clone())
                .collect(),
        )
    }
}

/// Requirements as written, by (dependent, dependency), with the set each one
/// stands for. The explanation looks sets up here to print `^1.2.0` rather
/// than a list of versions.
#[derive(Default)]
pub(super) struct RequirementTexts {
    pub(super) by_edge: HashMap<(Pkg, Pkg), Vec<(CandidateSet, Written)>>,
}

/// One requirement as written, or several joined with "and" (one package
/// required under two spellings). Kept parsed and spelled out only when a
/// failure is explained: most resolutions succeed, and writing every edge's
/// requirement as text was a measurable share of a successful solve's work
/// (`deploy/bench/RESULTS.md`, Decisions).
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Written(Vec<VersionReq>);

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, req) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" and ")?;
            }
            write!(f, "{req}")?;
        }
        Ok(())
    }
}

impl RequirementTexts {
    fn record(&mut self, from: &Pkg, to: &Pkg, set: CandidateSet, written: Written) {
        let entries = self.by_edge.entry((from.clone(), to.clone())).or_default();
        if !entries.iter().any(|(s, w)| *s == set && *w == written) {
            entries.push((set, written));
        }
    }
}

pub(super) struct Provider<'a, S: ?Sized> {
    source: &'a S,
    cancel: &'a Cancel,
    /// Root requirements grouped by normalized name, in the request's order.
    root: Vec<RootRequirement>,
    /// Where each normalized name is in `root`.
    root_index: HashMap<String, usize>,
    pins: HashMap<String, semver::Version>,
    exclude_newer: Option<i64>,
    pub(super) packages: RefCell<HashMap<String, Rc<PackageInfo>>>,
    pub(super) texts: RefCell<RequirementTexts>,
    /// Packages decided so far, and how often one was decided again
    /// after a backtrack, against [`MAX_BACKTRACKS`].
    decided: RefCell<HashSet<Pkg>>,
    backtracks: Cell<u64>,
}

/// The agent's requirements on one package, under the first spelling the
/// request used for it.
struct RootRequirement {
    name: PackageName,
    reqs: Vec<Option<VersionReq>>,
}

impl<'a, S: PackageSource + ?Sized> Provider<'a, S> {
    pub(super) fn new(source: &'a S, request: &Request, cancel: &'a Cancel) -> Self {
        // Grouped through a map: the request is untrusted, so no scan per
        // requirement.
        let mut root: Vec<RootRequirement> = Vec::new();
        let mut root_index: HashMap<String, usize> = HashMap::new();
        for (name, req) in &request.requirements {
            match root_index.entry(name.normalized()) {
                Entry::Occupied(slot) => root[*slot.get()].reqs.push(req.clone()),
                Entry::Vacant(slot) => {
                    slot.insert(root.len());
                    root.push(RootRequirement {
                        name: name.clone(),
                        reqs: vec![req.clone()],
                    });
                }
            }
        }
        let pins = request
            .pins
            .iter()
            .map(|(name, version)| (name.normalized(), version.semver().clone()))
            .collect();
        Self {
            source,
            cancel,
            root,
            root_index,
            pins,
            exclude_newer: request.exclude_newer,
            packages: RefCell::default(),
            texts: RefCell::default(),
            decided: RefCell::default(),
            backtracks: Cell::new(0),
        }
    }

    pub(super) fn resolution(
        &self,
        selected: BTreeMap<Pkg, semver::Version>,
    ) -> Result<Resolution, ResolveError> {
        let packages = self.packages.borrow();
        let mut tools = BTreeMap::new();
        for (pkg, version) in selected {
            let Pkg::Tool(key) = pkg else { continue };
            // Both lookups hold: pubgrub only selects versions this provider
            // offered, from packages it loaded.
            let Some(info) = packages.get(&key) else {
                continue;
            };
            let Some(candidate) = info.candidate(&version) else {
                continue;
            };
            let requirement = self
                .root_index
                .get(&key)
                .map(|&i| combined_requirement(&self.root[i].reqs));
            tools.insert(
                info.display.clone(),
                ResolvedTool {
                    version: version.into(),
                    hash: candidate.hash,
                    requirement,
                    dependencies: candidate.dependencies.clone(),
                    log_index: candidate.log_index,
                },
            );
        }
        let mut held_back = Vec::new();
        if self.exclude_newer.is_some() {
            for info in packages.values() {
                held_back.extend(
                    info.entries
                        .iter()
                        .filter(|e| !e.yanked && !e.old_enough(self.exclude_newer))
                        .filter(|e| info.pinned.as_ref() != Some(e.version.semver()))
                        .map(|e| super::HeldBack {
                            name: info.display.clone(),
                            version: e.version.clone(),
                            published_at: e.published_at,
                        }),
                );
            }
            held_back.sort_by(|a, b| {
                (a.name.normalized(), &a.version).cmp(&(b.name.normalized(), &b.version))
            });
        }
        Ok(Resolution { tools, held_back })
    }

    /// The package's candidates, fetched from the source on first use.
    fn load(
        &self,
        name: &PackageName,
        required_by: impl FnOnce() -> String,
    ) -> Result<Rc<PackageInfo>, ResolveError> {
        let key = name.normalized();
        if let Some(info) = self.packages.borrow().get(&key) {
            return Ok(Rc::clone(info));
        }
        let entries = self
            .source
            .versions(name)
            .map_err(|source| ResolveError::Source {
                name: name.clone(),
                source,
            })?
            .ok_or_else(|| ResolveError::UnknownPackage {
                name: name.clone(),
                required_by: required_by(),
            })?;
        // Sorted and compared with the next, rather than hashed: a set of
        // semver versions made hashing a large share of a server's resolve
        // (`deploy/bench/RESULTS.md`, Decisions).
        // Sources list versions oldest first, which this sort finds in
        // order in one pass.
        let mut versions: Vec<(usize, &VersionEntry)> = entries.iter().enumerate().collect();
        versions.sort_unstable_by(|a, b| a.1.version.semver().cmp(b.1.version.semver()));
        if let Some(pair) = versions
            .windows(2)
            .find(|pair| pair[0].1.version.semver() == pair[1].1.version.semver())
        {
            return Err(ResolveError::DuplicateVersion {
                name: name.clone(),
                version: pair[1].1.version.clone(),
            });
        }
        let pin = self.pins.get(&key);
        // Newest first, read off the sorted list backwards: sorted again
        // instead, oldest-first input was the small sort's worst case, an
        // eighth of every solve.
        let candidates: Vec<Candidate> = versions
            .iter()
            .rev()
            .filter(|(_, entry)| {
                pin == Some(entry.version.semver())
                    || (!entry.yanked && entry.old_enough(self.exclude_newer))
            })
            .map(|&(index, entry)| Candidate {
                version: entry.version.semver().clone(),
                entry: index,
            })
            .collect();
        let pinned = pin
            .filter(|p| candidates.iter().any(|c| &c.version == *p))
            .cloned();
        let order = self.packages.borrow().len();
        let info = Rc::new(PackageInfo {
            order,
            display: name.clone(),
            entries,
            candidates,
            pinned,
        });
        self.packages.borrow_mut().insert(key, Rc::clone(&info));
        Ok(info)
    }

    pub(super) fn info(&self, pkg: &Pkg) -> Option<Rc<PackageInfo>> {
        match pkg {
            Pkg::Root => None,
            Pkg::Tool(key) => self.packages.borrow().get(key).cloned(),
        }
    }

    /// Turns one dependent's requirements into pubgrub constraints; two
    /// spellings of one name are one package, constrained by both.
    fn constraints<'r>(
        &self,
        from: &Pkg,
        requirements: impl Iterator<Item = (&'r PackageName, Option<&'r VersionReq>)>,
        required_by: &dyn Fn() -> String,
    ) -> Result<DependencyConstraints<Pkg, CandidateSet>, ResolveError> {
        let mut merged: BTreeMap<Pkg, CandidateSet> = BTreeMap::new();
        let mut texts = Vec::new();
        for (name, req) in requirements {
            let info = self.load(name, required_by)?;
            let req = req.cloned().unwrap_or(VersionReq::STAR);
            let set = info.matching(&req);
            let to = Pkg::Tool(name.normalized());
            merged
                .entry(to.clone())
                .and_modify(|s| *s = s.intersection(&set))
                .or_insert_with(|| set.clone());
            texts.push((to, set, req));
        }
        let mut recorded = self.texts.borrow_mut();
        // A name required under two spellings is one package constrained by
        // both: its merged set is explained by both texts.
        for (to, set) in &merged {
            let joined: Vec<VersionReq> = texts
                .iter()
                .filter(|(t, _, _)| t == to)
                .map(|(_, _, req)| req.clone())
                .collect();
            if joined.len() > 1 {
                recorded.record(from, to, set.clone(), Written(joined));
            }
        }
        for (to, set, req) in texts {
            recorded.record(from, &to, set, Written(vec![req]));
        }
        Ok(merged.into_iter().collect())
    }
}

/// The root requirement to record in the lock for one (normalized) name.
fn combined_requirement(reqs: &[Option<VersionReq>]) -> VersionReq {
    let comparators: Vec<semver::Comparator> = reqs
        .iter()
        .flatten()
        .flat_map(|r| r.comparators.iter().cloned())
        .collect();
    VersionReq { comparators }
}

impl<S: PackageSource + ?Sized> DependencyProvider for Provider<'_, S> {
    type P = Pkg;
    type V = semver::Version;
    type VS = CandidateSet;
    type M = String;
    type Err = ResolveError;
    /// Packages that already caused conflicts first, then pinned ones (so a
    /// lock is kept where it can be), then in the order they were discovered
    /// (breadth first, as uv does). Discovery order beat "fewest versions
    /// left first" on deep graphs, which that order did not solve within
    /// `examples/bench_resolve.rs`'s deadline (`deploy/bench/RESULTS.md`,
    /// Decisions).
    type Priority = (u32, bool, Reverse<usize>);

    fn prioritize(
        &self,
        package: &Pkg,
        range: &CandidateSet,
        stats: &PackageResolutionStatistics,
    ) -> Self::Priority {
        let Some(info) = self.info(package) else {
            return (u32::MAX, true, Reverse(0));
        };
        // No version left: decide it now, so the conflict surfaces at once.
        if !info.candidates.iter().any(|c| range.contains(&c.version)) {
            return (u32::MAX, true, Reverse(0));
        }
        let pinned = info.pinned.as_ref().is_some_and(|p| range.contains(p));
        (stats.conflict_count(), pinned, Reverse(info.order))
    }

    fn choose_version(
        &self,
        package: &Pkg,
        range: &CandidateSet,
    ) -> Result<Option<semver::Version>, ResolveError> {
        if !self.decided.borrow_mut().insert(package.clone()) {
            self.backtracks.set(self.backtracks.get() + 1);
        }
        let Some(info) = self.info(package) else {
            let root = root_version();
            return Ok(range.contains(&root).then_some(root));
        };
        if let Some(pinned) = info.pinned.as_ref().filter(|p| range.contains(p)) {
            return Ok(Some(pinned.clone()));
        }
        Ok(info
            .candidates
            .iter()
            .find(|c| range.contains(&c.version))
            .map(|c| c.version.clone()))
    }

    fn get_dependencies(
        &self,
        package: &Pkg,
        version: &semver::Version,
    ) -> Result<Dependencies<Pkg, CandidateSet, String>, ResolveError> {
        let constraints = match package {
            Pkg::Root => {
                let requirements = self
                    .root
                    .iter()
                    .flat_map(|root| root.reqs.iter().map(move |r| (&root.name, r.as_ref())));
                self.constraints(package, requirements, &|| "the agent".to_owned())?
            }
            Pkg::Tool(_) => {
                let info = self.info(package);
                let Some(candidate) = info.as_ref().and_then(|i| i.candidate(version)) else {
                    return Ok(Dependencies::Unavailable(format!(
                        "{package} {version} is not in the index"
                    )));
                };
                let display = info.as_ref().map(|i| i.display.clone());
                let required_by = || match &display {
                    Some(name) => format!("{name} {version}"),
                    None => format!("{package} {version}"),
                };
                self.constraints(
                    package,
                    candidate.dependencies.iter().map(|(n, r)| (n, Some(r))),
                    &required_by,
                )?
            }
        };
        Ok(Dependencies::Available(constraints))
    }

    fn should_cancel(&self) -> Result<(), ResolveError> {
        if self.backtracks.get() > MAX_BACKTRACKS {
            Err(ResolveError::TooComplex)
        } else if self.cancel.is_cancelled() {
            Err(ResolveError::Cancelled)
        } else {
            Ok(())
        }
    }
}
