//! Tool version resolution: requirements (plus an optional existing lock) in,
//! one version per tool out, or an explanation of why none exists.
//!
//! Semantics (DESIGN.md, "Resolution semantics"):
//! - requirements follow Cargo's rules through `semver::VersionReq` (a bare
//!   `1.2.0` means `^1.2.0`; no requirement means the newest release);
//! - newest version first, one version per (normalized) name;
//! - yanked versions are never chosen, unless the given lock pins exactly that
//!   version;
//! - prereleases only when a requirement names one (`VersionReq::matches`);
//! - a pinned version is kept while it satisfies every requirement on it;
//! - tool dependencies are followed transitively.
//!
//! The solver is pubgrub. Its version sets are explicit sets of published
//! versions (see [`candidates`]), which keeps `VersionReq::matches` the only
//! judge of what a requirement accepts. Failures are explained with
//! pubgrub's derivation tree, worded with the requirements as written.

mod candidates;
mod provider;
mod report;

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use pubgrub::PubGrubError;
use semver::VersionReq;
use serde::Serialize;

use crate::{
    digest::Sha256Digest,
    lockfile::LockedTool,
    names::{PackageName, Version},
};

/// Where the resolver learns which versions exist.
///
/// Synchronous on purpose: pubgrub calls back into its provider from a tight
/// loop that cannot await. The server answers from its database (prefetching
/// or caching index rows, and running the resolver on a blocking thread); the
/// CLI answers from the index endpoint, fetching each package once.
pub trait PackageSource {
    /// Every published version of `name`, yanked ones included, or `Ok(None)`
    /// when no package has that name. Names arrive as the agent or a tool
    /// spelled them; a source looks them up by [`PackageName::normalized`].
    /// Called at most once per package and resolution. Shared, so a source
    /// that caches its lists hands them out without copying them.
    fn versions(&self, name: &PackageName) -> Result<Option<Arc<Vec<VersionEntry>>>, SourceError>;
}

impl<T: PackageSource + ?Sized> PackageSource for &T {
    fn versions(&self, name: &PackageName) -> Result<Option<Arc<Vec<VersionEntry>>>, SourceError> {
        (**self).versions(name)
    }
}

/// One published version, as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry {
    pub version: Version,
    pub yanked: bool,
    /// Of the container.
    pub hash: Sha256Digest,
    pub dependencies: BTreeMap<PackageName, VersionReq>,
    /// Unix seconds: what [`Request::exclude_newer`] compares.
    pub published_at: i64,
    /// The transparency-log entry of its publish, carried into the lock.
    pub log_index: Option<u64>,
}

impl VersionEntry {
    /// Whether a resolution with `exclude_newer` may choose it, age alone.
    pub fn old_enough(&self, exclude_newer: Option<i64>) -> bool {
        exclude_newer.is_none_or(|cutoff| self.published_at <= cutoff)
    }
}

/// A failure of the [`PackageSource`] (database, network).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(Box<dyn std::error::Error + Send + Sync>);

impl SourceError {
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(error.into())
    }

    /// Whether the source failed with an `E`: lets a caller tell its own
    /// failures (a deliberate stop, say) from the others.
    pub fn is<E: std::error::Error + 'static>(&self) -> bool {
        self.0.is::<E>()
    }
}

/// What to resolve. Hashable, so a caller can memoize resolutions of one
/// index state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Request {
    /// The agent's tool requirements; `None` means the newest release.
    pub requirements: BTreeMap<PackageName, Option<VersionReq>>,
    /// Versions from an existing lock, kept while they still satisfy every
    /// requirement on them (and allowed even when yanked).
    pub pins: BTreeMap<PackageName, Version>,
    /// Unix seconds: versions published later are not chosen (pnpm's
    /// `minimumReleaseAge`, uv's `exclude-newer`), except a pinned one,
    /// which was chosen before. The versions this holds back are named in
    /// [`Resolution::held_back`].
    pub exclude_newer: Option<i64>,
}

/// Stops a resolution from another thread or at a deadline. Clones share
/// the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Cancel {
    /// Never cancelled unless [`Cancel::cancel`] is called.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancelled at `deadline` too.
    pub fn with_deadline(deadline: Instant) -> Self {
        Self {
            flag: Arc::default(),
            deadline: Some(deadline),
        }
    }

    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// One resolved tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTool {
    pub version: Version,
    pub hash: Sha256Digest,
    /// The agent's requirement as written (`*` when it named no version);
    /// `None` for tools only other tools depend on.
    pub requirement: Option<VersionReq>,
    /// What this version requires of other tools.
    pub dependencies: BTreeMap<PackageName, VersionReq>,
    pub log_index: Option<u64>,
}

/// A version [`Request::exclude_newer`] kept from being chosen.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeldBack {
    pub name: PackageName,
    pub version: Version,
    /// Unix seconds.
    pub published_at: i64,
}

/// A successful resolution: one version per tool, keyed by the name as the
/// agent (or, for transitive tools, the first dependent) spelled it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    pub tools: BTreeMap<PackageName, ResolvedTool>,
    /// Unyanked versions of the tools the solver looked at that were too
    /// young for [`Request::exclude_newer`], by name then version.
    pub held_back: Vec<HeldBack>,
}

impl Resolution {
    /// The `tools:` section of an `agent.lock`.
    pub fn into_lock_tools(self) -> BTreeMap<PackageName, LockedTool> {
        // Dependencies are listed by the name their tool is locked under, so
        // a reader can follow them inside the lockfile. Most are spelled as
        // locked; the normalized index is built only for one that is not.
        let mut by_normalized: Option<BTreeMap<String, &PackageName>> = None;
        let dependencies: Vec<BTreeSet<PackageName>> = self
            .tools
            .values()
            .map(|tool| {
                tool.dependencies
                    .keys()
                    .map(|dep| {
                        if self.tools.contains_key(dep) {
                            return dep.clone();
                        }
                        by_normalized
                            .get_or_insert_with(|| {
                                self.tools.keys().map(|n| (n.normalized(), n)).collect()
                            })
                            .get(&dep.normalized())
                            .map_or_else(|| dep.clone(), |&name| name.clone())
                    })
                    .collect()
            })
            .collect();
        self.tools
            .into_iter()
            .zip(dependencies)
            .map(|((name, tool), dependencies)| {
                let locked = LockedTool {
                    version: tool.version,
                    hash: tool.hash,
                    requirement: tool.requirement,
                    dependencies,
                    log_index: tool.log_index,
                };
                (name, locked)
            })
            .collect()
    }
}

/// Who stated a requirement in a [`Conflict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequiredBy {
    pub name: PackageName,
    /// The versions of `name` that state it.
    pub versions: Vec<Version>,
}

/// One fact behind an unsatisfiable resolution, for the HTTP layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Conflict {
    /// `required_by` (the agent itself when `None`) requires `package` at
    /// `requirement`, which the versions in `satisfied_by` meet.
    Requirement {
        required_by: Option<RequiredBy>,
        package: PackageName,
        requirement: String,
        satisfied_by: Vec<Version>,
    },
    /// No usable version of `package` meets `requirement` (as written, or
    /// the list of versions the solver had left).
    NoVersion {
        package: PackageName,
        requirement: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The explanation keeps one sentence per line; the message puts them on
    /// one line.
    #[error("the tool requirements cannot be met: {}", explanation.replace('\n', " "))]
    Unsatisfiable {
        explanation: String,
        conflicts: Vec<Conflict>,
    },
    /// A requirement names a tool the source does not know. This stops the
    /// resolution even when another version of the dependent would avoid it:
    /// the registry refuses such publishes, so it means a broken index.
    #[error("no tool named {name} exists (required by {required_by})")]
    UnknownPackage {
        name: PackageName,
        required_by: String,
    },
    #[error("the index lists version {version} of {name} twice")]
    DuplicateVersion { name: PackageName, version: Version },
    #[error("looking up {name} failed: {source}")]
    Source {
        name: PackageName,
        #[source]
        source: SourceError,
    },
    #[error("resolution was cancelled")]
    Cancelled,
    /// The solver went back on its choices [`MAX_BACKTRACKS`] times
    /// without an answer: requirements built to make it search (a
    /// pigeonhole of versions, say) end here, after milliseconds, rather
    /// than at the clock, whose time other requests could use.
    #[error(
        "the tool requirements are too intricate to resolve (the solver went back on its choices {MAX_BACKTRACKS} times); \
         pin or narrow some of them"
    )]
    TooComplex,
}

/// How often the solver may decide a package again after a backtrack.
/// Deciding each package once costs little whatever their number; what
/// grows fast is each backtrack's cost, with the incompatibilities learned
/// so far (`deploy/bench/RESULTS.md` has the figures). Real requirements
/// backtrack rarely.
pub const MAX_BACKTRACKS: u64 = 1_000;

/// Resolves `request` against `source`.
pub fn resolve<S: PackageSource + ?Sized>(
    source: &S,
    request: &Request,
    cancel: &Cancel,
) -> Result<Resolution, ResolveError> {
    let provider = provider::Provider::new(source, request, cancel);
    match pubgrub::resolve(&provider, Pkg::Root, provider::root_version()) {
        Ok(selected) => provider.resolution(selected.into_iter().collect()),
        Err(PubGrubError::NoSolution(mut tree)) => {
            // The explanation is part of the answer, so it runs inside the
            // deadline too.
            if cancel.is_cancelled() {
                return Err(ResolveError::Cancelled);
            }
            // pubgrub's collapse clones shared subtrees (`Arc::make_mut`),
            // which is exponential on a derivation DAG with much sharing;
            // such trees are explained uncollapsed.
            if report::unfolded_size(&tree) <= report::MAX_COLLAPSED_NODES {
                tree.collapse_no_versions();
            }
            let (explanation, conflicts) = report::explain(&tree, &provider);
            if cancel.is_cancelled() {
                return Err(ResolveError::Cancelled);
            }
            Err(ResolveError::Unsatisfiable {
                explanation,
                conflicts,
            })
        }
        Err(PubGrubError::ErrorRetrievingDependencies { source, .. })
        | Err(PubGrubError::ErrorChoosingVersion { source, .. })
        | Err(PubGrubError::ErrorInShouldCancel(source)) => Err(source),
    }
}

/// The version of a skill to lock: skills depend on nothing, so each is
/// picked alone, by the rules tools follow: the pinned version while it is
/// published and satisfies `requirement` (even when yanked since), else
/// the newest unyanked version that does (a prerelease only when the
/// requirement names one), published no later than `exclude_newer` when
/// given. `None` when no version will do.
pub fn pick_skill<'a>(
    requirement: &VersionReq,
    pin: Option<&Version>,
    versions: &'a [VersionEntry],
    exclude_newer: Option<i64>,
) -> Option<&'a VersionEntry> {
    let fits = |e: &&VersionEntry| requirement.matches(e.version.semver());
    if let Some(pin) = pin
        && let Some(pinned) = versions.iter().filter(fits).find(|e| &e.version == pin)
    {
        return Some(pinned);
    }
    versions
        .iter()
        .filter(|e| !e.yanked && e.old_enough(exclude_newer))
        .filter(fits)
        .max_by(|a, b| a.version.cmp(&b.version))
}

/// The name pubgrub knows a package by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Pkg {
    /// The agent being resolved.
    Root,
    /// A tool, by its normalized name, so look-alike spellings are one
    /// package with one version.
    Tool(String),
}

impl fmt::Display for Pkg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pkg::Root => f.write_str("the agent"),
            Pkg::Tool(name) => f.write_str(name),
        }
    }
}

/// A [`PackageSource`] held in memory: for callers that fetched the index
/// up front (the CLI's cache, tests, benchmarks).
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    packages: BTreeMap<String, Arc<Vec<VersionEntry>>>,
}

impl MemorySource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a package with no versions yet (so it is known, not missing).
    pub fn add_package(&mut self, name: &PackageName) {
        self.packages.entry(name.normalized()).or_default();
    }

    pub fn add_version(&mut self, name: &PackageName, entry: VersionEntry) {
        Arc::make_mut(self.packages.entry(name.normalized()).or_default()).push(entry);
    }
}

impl PackageSource for MemorySource {
    fn versions(&self, name: &PackageName) -> Result<Option<Arc<Vec<VersionEntry>>>, SourceError> {
        Ok(self.packages.get(&name.normalized()).map(Arc::clone))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: &str, yanked: bool) -> VersionEntry {
        VersionEntry {
            version: Version::parse(v).unwrap(),
            yanked,
            hash: Sha256Digest::of(v.as_bytes()),
            dependencies: BTreeMap::new(),
            published_at: 0,
            log_index: None,
        }
    }

    #[test]
    fn a_skill_is_the_pin_while_it_fits_else_the_newest_unyanked_match() {
        let versions = [
            entry("0.1.0", false),
            entry("0.1.5", true),
            entry("0.1.3", false),
            entry("0.2.0-rc.1", false),
            entry("1.0.0", false),
        ];
        let req = |r: &str| VersionReq::parse(r).unwrap();
        let pick = |r: &str, pin: Option<&str>| {
            let pin = pin.map(|p| Version::parse(p).unwrap());
            pick_skill(&req(r), pin.as_ref(), &versions, None).map(|e| e.version.to_string())
        };
        assert_eq!(pick("^0.1", None).as_deref(), Some("0.1.3"));
        assert_eq!(pick("*", None).as_deref(), Some("1.0.0"));
        assert_eq!(pick("^0.1", Some("0.1.0")).as_deref(), Some("0.1.0"));
        // A yanked pin stays; a pin the requirement left behind does not.
        assert_eq!(pick("^0.1", Some("0.1.5")).as_deref(), Some("0.1.5"));
        assert_eq!(pick("^1", Some("0.1.0")).as_deref(), Some("1.0.0"));
        // Prereleases only when asked for; nothing when nothing fits.
        assert_eq!(pick("^0.2.0-rc", None).as_deref(), Some("0.2.0-rc.1"));
        assert_eq!(pick("^2", None), None);
    }

    #[test]
    fn exclude_newer_holds_back_young_tool_versions_but_keeps_a_young_pin() {
        let tool = PackageName::new("web_fetch").unwrap();
        let mut source = MemorySource::new();
        for (v, day, index) in [("1.0.0", 1, 3), ("1.1.0", 9, 7), ("1.2.0", 10, 8)] {
            source.add_version(
                &tool,
                VersionEntry {
                    published_at: day * 86_400,
                    log_index: Some(index),
                    ..entry(v, false)
                },
            );
        }
        let request = |exclude_newer: Option<i64>, pin: Option<&str>| Request {
            requirements: [(tool.clone(), Some(VersionReq::parse("^1").unwrap()))].into(),
            pins: pin
                .map(|p| (tool.clone(), Version::parse(p).unwrap()))
                .into_iter()
                .collect(),
            exclude_newer,
        };
        let solve = |r: &Request| resolve(&source, r, &Cancel::new()).unwrap();

        let fresh = solve(&request(None, None));
        assert_eq!(fresh.tools[&tool].version.to_string(), "1.2.0");
        assert!(fresh.held_back.is_empty());

        let aged = solve(&request(Some(5 * 86_400), None));
        assert_eq!(aged.tools[&tool].version.to_string(), "1.0.0");
        let held: Vec<String> = aged
            .held_back
            .iter()
            .map(|h| h.version.to_string())
            .collect();
        assert_eq!(held, ["1.1.0", "1.2.0"]);
        assert_eq!(aged.held_back[0].published_at, 9 * 86_400);
        // The publish's log entry reaches the lock.
        let lock = aged.into_lock_tools();
        assert_eq!(lock[&tool].log_index, Some(3));

        let pinned = solve(&request(Some(5 * 86_400), Some("1.1.0")));
        assert_eq!(pinned.tools[&tool].version.to_string(), "1.1.0");
        let held: Vec<String> = pinned
            .held_back
            .iter()
            .map(|h| h.version.to_string())
            .collect();
        assert_eq!(held, ["1.2.0"]);
    }

    #[test]
    fn a_skill_too_young_for_exclude_newer_is_passed_over_unless_pinned() {
        let aged = |v: &str, day: i64| VersionEntry {
            published_at: day * 86_400,
            ..entry(v, false)
        };
        let versions = [aged("0.1.0", 1), aged("0.1.1", 5), aged("0.1.2", 9)];
        let req = VersionReq::parse("^0.1").unwrap();
        let pick = |cutoff: Option<i64>, pin: Option<&str>| {
            let pin = pin.map(|p| Version::parse(p).unwrap());
            pick_skill(&req, pin.as_ref(), &versions, cutoff).map(|e| e.version.to_string())
        };
        assert_eq!(pick(None, None).as_deref(), Some("0.1.2"));
        assert_eq!(pick(Some(6 * 86_400), None).as_deref(), Some("0.1.1"));
        assert_eq!(pick(Some(5 * 86_400), None).as_deref(), Some("0.1.1"));
        assert_eq!(pick(Some(0), None), None);
        assert_eq!(pick(Some(0), Some("0.1.2")).as_deref(), Some("0.1.2"));
    }
}
