//! Whether an agent.lock tells the truth, judged by one function, [`check`]:
//! about the package it is in (every agent carries one; `files` hashes
//! exactly the members `agentlang lock` hashes; `agents` pins every
//! co-located subagent; `models` names every declared model and nothing
//! else) and, when the registry's facts are given, about the registry it
//! was resolved from (every requirement pinned and satisfied, transitively;
//! every pin published with its hash; no pin unrelated to a requirement;
//! yanked pins only where allowed; the same of skill packages). Without
//! the registry's facts (`validate`, `build`, `run DIR` before its tools
//! are fetched) the agent's own requirements are still judged: each must
//! be pinned and satisfied.
//!
//! `agentlang validate`, `build`, `install`, `verify DIR`, `run` and the
//! registry's publish all call [`check`], the registry with the database's
//! facts, install with the index it downloaded, `verify` with the
//! installed tools, so a lock one accepts is a lock the others accept.
//! What the lock's own sections must hold is [`local_sections`], which
//! `agentlang lock` writes. Every problem has a [`ProblemKind`]; the
//! registry answers each kind with its own problem type
//! ([`ProblemKind::slug`]), and the CLI prints the same slug.
//!
//! An encrypted prompt: the lock hashes `prompt.yaml` in plaintext (what the
//! publisher wrote), while the container holds `prompt.yaml.enc`. Without
//! the prompt key nobody but the publisher can check that hash, so a
//! `files` entry whose member is present only encrypted is accepted as
//! unverifiable. The ciphertext itself is covered by the signed manifest.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use semver::VersionReq;
use serde::Serialize;

use crate::{
    PackageName, SourceTree, Version,
    container::Manifest,
    crypt::ENCRYPTED_SUFFIX,
    digest::Sha256Digest,
    lockfile::{LockedAgent, Lockfile},
    package::{AgentPackage, LOCK_FILE},
    tree::MemberPath,
};

/// What is wrong with a lock, in the order the registry reports them: the
/// first kind found is the answer's problem type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The agent carries no agent.lock (every agent must).
    Missing,
    /// A `files` hash does not match the member it names, names no member,
    /// or a member `agentlang lock` hashes has no entry.
    Files,
    /// The `agents` section does not pin the co-located subagents by hash.
    Agents,
    /// The `models` section names a model the agent does not declare.
    Models,
    /// A model the agent or a subagent declares is not in `models`.
    ModelsUnlocked,
    /// A pin names a tool or version the registry does not hold, or with
    /// another hash.
    NotInRegistry,
    /// A requirement (of the agent, a subagent or a pinned tool) has no pin.
    Unpinned,
    /// A pin does not satisfy the requirement it answers.
    Unsatisfied,
    /// The lock records a provider for an interface that does not provide
    /// it at its pinned version ([`crate::interfaces`]).
    InterfaceUnprovided,
    /// A pin no requirement leads to.
    Unrelated,
    /// A yanked version pinned where that is not allowed.
    Yanked,
}

impl ProblemKind {
    /// The registry's problem type for this kind (`/problems/<slug>`),
    /// which the CLI prints after the problem too.
    pub fn slug(self) -> &'static str {
        match self {
            Self::Missing => "lock-missing",
            Self::Files => "lock-files-mismatch",
            Self::Agents => "lock-agents-mismatch",
            Self::Models => "lock-models-undeclared",
            Self::ModelsUnlocked => "lock-models-missing",
            Self::NotInRegistry => "lock-mismatch",
            Self::Unpinned => "lock-unpinned",
            Self::Unsatisfied => "lock-unsatisfied",
            Self::InterfaceUnprovided => crate::rules::Rule::InterfaceUnprovided.slug(),
            Self::Unrelated => "lock-unrelated",
            Self::Yanked => "lock-yanked",
        }
    }
}

/// One problem: its kind, the lock field it concerns (`tools.web_search`,
/// `files.agent.yaml`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockProblem {
    pub kind: ProblemKind,
    pub field: String,
    pub message: String,
}

impl LockProblem {
    fn new(kind: ProblemKind, field: String, message: String) -> Self {
        Self {
            kind,
            field,
            message,
        }
    }
}

impl std::fmt::Display for LockProblem {
    /// `field: message [slug]`, as the CLI prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} [{}]", self.field, self.message, self.kind.slug())
    }
}

/// The problems of the first kind present (see [`ProblemKind`]'s order),
/// or `None` when there are none.
pub fn first_kind(problems: &[LockProblem]) -> Option<(ProblemKind, Vec<&LockProblem>)> {
    let kind = problems.iter().map(|p| p.kind).min()?;
    Some((kind, problems.iter().filter(|p| p.kind == kind).collect()))
}

/// One member's digest, and whether the member is an encrypted envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemberDigest {
    hash: Sha256Digest,
    encrypted: bool,
}

/// The SHA-256 of every member of a package: computed from the members a
/// directory packs, or read from a verified container's manifest.
#[derive(Debug, Clone, Default)]
pub struct MemberHashes(BTreeMap<MemberPath, MemberDigest>);

impl MemberHashes {
    /// `tree` must be what the container carries (the CLI's
    /// `package_dir::agent_members`), not a whole directory: `files` must
    /// cover every member and nothing else.
    pub fn from_tree(tree: &SourceTree) -> Self {
        Self(
            tree.iter()
                .map(|(p, b)| {
                    let digest = MemberDigest {
                        hash: Sha256Digest::of(b),
                        encrypted: false,
                    };
                    (p.clone(), digest)
                })
                .collect(),
        )
    }

    /// The manifest's hashes, which the container reader has checked
    /// against the bytes.
    pub fn from_manifest(manifest: &Manifest) -> Self {
        Self(
            manifest
                .files()
                .iter()
                .map(|f| {
                    let digest = MemberDigest {
                        hash: f.sha256,
                        encrypted: f.encrypted,
                    };
                    (f.path.clone(), digest)
                })
                .collect(),
        )
    }

    pub fn get(&self, path: &str) -> Option<Sha256Digest> {
        self.0.get(path).map(|d| d.hash)
    }

    /// True when `path` is present only as its encrypted `path.enc`.
    fn only_encrypted(&self, path: &str) -> bool {
        !self.0.contains_key(path)
            && self
                .0
                .get(format!("{path}{ENCRYPTED_SUFFIX}").as_str())
                .is_some_and(|d| d.encrypted)
    }

    /// The paths `files` must name: every member but agent.lock and the
    /// subagents' files (which `agents` pins), an encrypted member under
    /// its plaintext name (what `agentlang lock` hashed).
    fn lockable<'a>(&'a self, pkg: &'a AgentPackage) -> impl Iterator<Item = String> + 'a {
        self.0.iter().filter_map(|(path, digest)| {
            if path.as_str() == LOCK_FILE || pkg.subagents.contains_key(path) {
                return None;
            }
            let plain = digest
                .encrypted
                .then(|| path.as_str().strip_suffix(ENCRYPTED_SUFFIX))
                .flatten();
            Some(plain.unwrap_or(path.as_str()).to_owned())
        })
    }
}

fn show_req(req: Option<&VersionReq>) -> String {
    req.map_or_else(|| "*".to_owned(), ToString::to_string)
}

/// What the package itself says its lock holds, as `agentlang lock`
/// writes it: `files` (every member of `members`, what the container will
/// carry, but agent.lock and the subagents' files), `agents` (each
/// co-located subagent's version and file hash) and the models the
/// `models` section must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSections {
    pub files: BTreeMap<MemberPath, Sha256Digest>,
    pub agents: BTreeMap<PackageName, LockedAgent>,
    /// Every model the agent and its subagents declare.
    pub models: BTreeSet<String>,
}

/// See [`LocalSections`].
pub fn local_sections(members: &SourceTree, pkg: &AgentPackage) -> LocalSections {
    let files = members
        .iter()
        .filter(|(p, _)| p.as_str() != LOCK_FILE && !pkg.subagents.contains_key(*p))
        .map(|(p, b)| (p.clone(), Sha256Digest::of(b)))
        .collect();
    let parent_version = pkg.agent.version.clone();
    let agents = pkg
        .subagents
        .iter()
        .filter_map(|(path, spec)| {
            // A subagent is versioned with its parent unless it says
            // otherwise.
            let version = spec.version.clone().or_else(|| parent_version.clone())?;
            let hash = Sha256Digest::of(members.get(path.as_str()).unwrap_or_default());
            Some((spec.name.clone(), LockedAgent { version, hash }))
        })
        .collect();
    LocalSections {
        files,
        agents,
        models: declared_models(pkg)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    }
}

fn declared_models(pkg: &AgentPackage) -> BTreeSet<&str> {
    std::iter::once(&pkg.agent)
        .chain(pkg.subagents.values())
        .flat_map(|a| a.model_names())
        .collect()
}

/// The registry's facts a lock is judged against: the live versions of
/// each pinned tool and skill package, and what a yanked pin means.
#[derive(Debug, Clone, Copy)]
pub struct RegistryFacts<'a> {
    pub tools: &'a PublishedTools,
    pub skills: &'a PublishedTools,
    pub yanks: YankPolicy<'a>,
}

/// The one judgment of a package and its lock (see the module docs).
/// `hashes` are the package's members (a container's manifest, or what a
/// directory packs); `registry` absent judges what needs no registry: the
/// lock's own sections and the agent's direct requirements.
pub fn check(
    pkg: &AgentPackage,
    hashes: &MemberHashes,
    registry: Option<&RegistryFacts<'_>>,
) -> Vec<LockProblem> {
    let Some(lock) = &pkg.lock else {
        let needs: Vec<String> = pkg
            .tool_requirements()
            .keys()
            .chain(pkg.skill_requirements().keys())
            .map(ToString::to_string)
            .collect();
        let needs = if needs.is_empty() {
            String::new()
        } else {
            format!(
                " and pin the registry packages it requires ({})",
                needs.join(", ")
            )
        };
        return vec![LockProblem::new(
            ProblemKind::Missing,
            LOCK_FILE.to_owned(),
            format!(
                "the agent carries no agent.lock, which every agent must, to hash its files, lock its models{needs}; run `agentlang lock` (or `agentlang build`, which locks)"
            ),
        )];
    };
    let mut problems = check_local(pkg, lock, hashes);
    // An interface the agent requires is answered by the provider the lock
    // records (crate::interfaces).
    let tool_requirements = crate::interfaces::requirements_through(lock, &pkg.tool_requirements());
    problems.extend(interface_problems(pkg, lock, registry));
    match registry {
        Some(facts) => {
            problems.extend(check_tools(
                &tool_requirements,
                lock,
                facts.tools,
                facts.yanks,
            ));
            problems.extend(check_skills(
                &pkg.skill_requirements(),
                lock,
                facts.skills,
                facts.yanks,
            ));
        }
        None => problems.extend(check_direct(pkg, &tool_requirements, lock)),
    }
    problems
}

fn interface_problems(
    pkg: &AgentPackage,
    lock: &Lockfile,
    registry: Option<&RegistryFacts<'_>>,
) -> Vec<LockProblem> {
    use crate::interfaces::Issue;
    let provided = registry.map(|f| &f.tools.1);
    crate::interfaces::check(&pkg.tool_requirements(), lock, provided)
        .into_iter()
        .map(|(issue, field, message)| {
            let kind = match issue {
                Issue::Unrelated => ProblemKind::Unrelated,
                Issue::Unpinned => ProblemKind::Unpinned,
                Issue::Unprovided => ProblemKind::InterfaceUnprovided,
            };
            LockProblem::new(kind, field, message)
        })
        .collect()
}

/// The lock against the package's own members: `files` hashes exactly the
/// members `agentlang lock` hashes; `agents` pins every co-located
/// subagent (by name, with its version and the hash of its file) and
/// nothing else; `models` names every model the agent or a subagent
/// declares, and nothing else.
fn check_local(pkg: &AgentPackage, lock: &Lockfile, hashes: &MemberHashes) -> Vec<LockProblem> {
    let mut problems = Vec::new();
    for (path, locked) in &lock.files {
        let field = format!("files.{path}");
        match hashes.get(path.as_str()) {
            Some(_) if path.as_str() == LOCK_FILE || pkg.subagents.contains_key(path) => {
                problems.push(LockProblem::new(
                    ProblemKind::Files,
                    field,
                    format!(
                        "{path} is locked under files, but {} (`agentlang lock` leaves it out)",
                        if path.as_str() == LOCK_FILE {
                            "the lock cannot hash itself"
                        } else {
                            "it is a subagent, which agents pins"
                        }
                    ),
                ));
            }
            Some(actual) if actual == *locked => {}
            Some(actual) => problems.push(LockProblem::new(
                ProblemKind::Files,
                field,
                format!(
                    "{path} is locked at {}, but the file hashes to {}",
                    locked.to_prefixed(),
                    actual.to_prefixed()
                ),
            )),
            // The plaintext of an encrypted member is the publisher's
            // secret: its hash cannot be checked here (module docs).
            None if hashes.only_encrypted(path.as_str()) => {}
            None => problems.push(LockProblem::new(
                ProblemKind::Files,
                field,
                format!("{path} is locked, but the package holds no such file"),
            )),
        }
    }
    for path in hashes.lockable(pkg) {
        if !lock.files.keys().any(|p| p.as_str() == path) {
            problems.push(LockProblem::new(
                ProblemKind::Files,
                format!("files.{path}"),
                format!("{path} is a member of the package, but agent.lock does not hash it"),
            ));
        }
    }

    let parent_version = pkg.agent.version.as_ref();
    let mut subagents: BTreeMap<String, (&MemberPath, &crate::agent::AgentSpec)> = BTreeMap::new();
    for (path, spec) in &pkg.subagents {
        subagents.insert(spec.name.normalized(), (path, spec));
    }
    let locked_agents: BTreeMap<String, (&PackageName, &crate::lockfile::LockedAgent)> = lock
        .agents
        .iter()
        .map(|(name, a)| (name.normalized(), (name, a)))
        .collect();
    for (key, (path, spec)) in &subagents {
        let field = format!("agents.{}", spec.name);
        let Some((_, locked)) = locked_agents.get(key) else {
            problems.push(LockProblem::new(
                ProblemKind::Agents,
                field,
                format!("subagent {} ({path}) is not pinned", spec.name),
            ));
            continue;
        };
        // A subagent is versioned with its parent unless it says otherwise.
        if let Some(version) = spec.version.as_ref().or(parent_version)
            && *version != locked.version
        {
            problems.push(LockProblem::new(
                ProblemKind::Agents,
                field.clone(),
                format!(
                    "subagent {} is pinned at version {}, but {path} is version {version}",
                    spec.name, locked.version
                ),
            ));
        }
        match hashes.get(path.as_str()) {
            Some(actual) if actual == locked.hash => {}
            Some(actual) => problems.push(LockProblem::new(
                ProblemKind::Agents,
                field,
                format!(
                    "subagent {} is pinned at {}, but {path} hashes to {}",
                    spec.name,
                    locked.hash.to_prefixed(),
                    actual.to_prefixed()
                ),
            )),
            None => problems.push(LockProblem::new(
                ProblemKind::Agents,
                field,
                format!("subagent {}'s file {path} is not in the package", spec.name),
            )),
        }
    }
    for (key, (name, _)) in &locked_agents {
        if !subagents.contains_key(key) {
            problems.push(LockProblem::new(
                ProblemKind::Agents,
                format!("agents.{name}"),
                format!("{name} is pinned, but the package has no subagent of that name"),
            ));
        }
    }

    let declared = declared_models(pkg);
    for model in lock.models.keys() {
        if !declared.contains(model.as_str()) {
            problems.push(LockProblem::new(
                ProblemKind::Models,
                format!("models.{model}"),
                format!("{model} is locked, but no agent in the package declares it"),
            ));
        }
    }
    for model in declared {
        if !lock.models.keys().any(|m| m.as_str() == model) {
            problems.push(LockProblem::new(
                ProblemKind::ModelsUnlocked,
                format!("models.{model}"),
                format!(
                    "{model} is declared, but agent.lock does not lock it; run `agentlang lock`"
                ),
            ));
        }
    }
    problems
}

/// Without the registry: each tool and skill requirement of the agent and
/// its subagents has a pin that satisfies it (what the registry would
/// check first; the transitive part needs its facts).
fn check_direct(
    pkg: &AgentPackage,
    tool_requirements: &BTreeMap<PackageName, Option<VersionReq>>,
    lock: &Lockfile,
) -> Vec<LockProblem> {
    let mut problems = Vec::new();
    for (name, req) in tool_requirements {
        let pin = lock
            .tools
            .iter()
            .find(|(n, _)| n.normalized() == name.normalized());
        problems.extend(direct_problem(
            "",
            name,
            req.as_ref(),
            pin.map(|(_, p)| &p.version),
        ));
    }
    for (name, req) in &pkg.skill_requirements() {
        let pin = lock
            .skills
            .iter()
            .find(|(n, _)| n.normalized() == name.normalized());
        problems.extend(direct_problem(
            "skill ",
            name,
            Some(req),
            pin.map(|(_, p)| &p.version),
        ));
    }
    problems
}

/// A direct requirement against its pin, in the same words with or
/// without the registry. `what` is `""` for a tool, `"skill "` for a skill.
fn direct_problem(
    what: &str,
    name: &PackageName,
    req: Option<&VersionReq>,
    pinned: Option<&Version>,
) -> Option<LockProblem> {
    let field = format!(
        "{}.{name}",
        if what.is_empty() { "tools" } else { "skills" }
    );
    match pinned {
        None => Some(LockProblem::new(
            ProblemKind::Unpinned,
            field,
            format!(
                "the agent requires {what}{name} {}, which agent.lock does not pin",
                show_req(req)
            ),
        )),
        Some(v) if !req.is_none_or(|r| r.matches(v.semver())) => Some(LockProblem::new(
            ProblemKind::Unsatisfied,
            field,
            format!(
                "{what}{name} is pinned at {v}, which does not satisfy the agent's requirement {}",
                show_req(req)
            ),
        )),
        Some(_) => None,
    }
}

/// One published version of a tool, as the registry (or its index) knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedTool {
    pub version: Version,
    pub hash: Sha256Digest,
    pub yanked: bool,
    /// The tool's own tool requirements.
    pub dependencies: BTreeMap<PackageName, VersionReq>,
}

/// The published versions of the tools a lock pins, by tool name. A name
/// missing here is a tool the registry does not hold.
#[derive(Debug, Clone, Default)]
pub struct PublishedTools(
    BTreeMap<String, Vec<PublishedTool>>,
    crate::interfaces::Provided,
);

impl PublishedTools {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records what `name` at `version` provides, for the lock's
    /// `interfaces` section; a version not recorded is not judged on it.
    pub fn insert_provides<'a>(
        &mut self,
        name: &PackageName,
        version: &Version,
        interfaces: impl IntoIterator<Item = &'a PackageName>,
    ) {
        self.1.insert(name, version, interfaces);
    }

    /// Records every live version of `name` (any spelling).
    pub fn insert(&mut self, name: &PackageName, versions: Vec<PublishedTool>) {
        self.0.insert(name.normalized(), versions);
    }

    /// The version of `name` with `version`'s precedence (build metadata
    /// aside, as the registry compares versions).
    fn find(&self, name: &PackageName, version: &Version) -> Result<&PublishedTool, bool> {
        let versions = self.0.get(&name.normalized()).ok_or(false)?;
        let wanted = version.semver();
        versions
            .iter()
            .find(|v| {
                let v = v.version.semver();
                (v.major, v.minor, v.patch, &v.pre)
                    == (wanted.major, wanted.minor, wanted.patch, &wanted.pre)
            })
            .ok_or(true)
    }
}

/// What to do with a pinned version that is yanked.
#[derive(Debug, Clone, Copy)]
pub enum YankPolicy<'a> {
    /// Keep it: yanking hides a version from new resolutions, while
    /// existing lockfiles keep working (install).
    Honour,
    /// Refuse it, unless this lock (the previous version's) already pinned
    /// the same version (publish).
    RefuseUnlessPinnedBy(Option<&'a Lockfile>),
}

/// The lock's `tools` against the requirements and the registry: every
/// requirement of the agent and its subagents is pinned and satisfied;
/// every pin is published with its hash; every pinned tool's own
/// dependencies are pinned and satisfied too; no pin is unrelated to a
/// requirement; yanked pins follow `yanks`.
fn check_tools(
    requirements: &BTreeMap<PackageName, Option<VersionReq>>,
    lock: &Lockfile,
    published: &PublishedTools,
    yanks: YankPolicy<'_>,
) -> Vec<LockProblem> {
    let mut problems = Vec::new();
    let pins: BTreeMap<String, (&PackageName, &crate::lockfile::LockedTool)> = lock
        .tools
        .iter()
        .map(|(name, tool)| (name.normalized(), (name, tool)))
        .collect();

    for (name, req) in requirements {
        let pinned = pins.get(&name.normalized()).map(|(_, p)| &p.version);
        problems.extend(direct_problem("", name, req.as_ref(), pinned));
    }

    let previous: BTreeMap<String, &Version> = match yanks {
        YankPolicy::RefuseUnlessPinnedBy(Some(prev)) => prev
            .tools
            .iter()
            .map(|(n, t)| (n.normalized(), &t.version))
            .collect(),
        _ => BTreeMap::new(),
    };
    // Dependency edges of the pins the registry holds, for the transitive
    // checks and for what each pin is reachable from.
    let mut edges: BTreeMap<String, Vec<(PackageName, VersionReq)>> = BTreeMap::new();
    for (key, (name, pin)) in &pins {
        let field = format!("tools.{name}");
        let found = match published.find(name, &pin.version) {
            Ok(found) => found,
            Err(false) => {
                problems.push(LockProblem::new(
                    ProblemKind::NotInRegistry,
                    field,
                    format!("no tool named {name} is published on this registry"),
                ));
                continue;
            }
            Err(true) => {
                problems.push(LockProblem::new(
                    ProblemKind::NotInRegistry,
                    field,
                    format!("{name} {} is not published on this registry", pin.version),
                ));
                continue;
            }
        };
        if found.hash != pin.hash {
            problems.push(LockProblem::new(
                ProblemKind::NotInRegistry,
                field.clone(),
                format!(
                    "{name} {} is pinned at {}, but this registry holds {}",
                    pin.version,
                    pin.hash.to_prefixed(),
                    found.hash.to_prefixed()
                ),
            ));
        }
        if found.yanked {
            let allowed = match yanks {
                YankPolicy::Honour => true,
                YankPolicy::RefuseUnlessPinnedBy(_) => {
                    previous.get(key).is_some_and(|v| **v == pin.version)
                }
            };
            if !allowed {
                problems.push(LockProblem::new(
                    ProblemKind::Yanked,
                    field.clone(),
                    format!(
                        "{name} {} is yanked; only a lock that already pinned it in the previous version may keep it",
                        pin.version
                    ),
                ));
            }
        }
        for (dep, req) in &found.dependencies {
            match pins.get(&dep.normalized()) {
                None => problems.push(LockProblem::new(
                    ProblemKind::Unpinned,
                    format!("tools.{dep}"),
                    format!(
                        "{name} {} depends on {dep} {req}, which agent.lock does not pin",
                        pin.version
                    ),
                )),
                Some((_, dep_pin)) if !req.matches(dep_pin.version.semver()) => {
                    problems.push(LockProblem::new(
                        ProblemKind::Unsatisfied,
                        format!("tools.{dep}"),
                        format!(
                            "{dep} is pinned at {}, which does not satisfy {name} {}'s requirement {req}",
                            dep_pin.version, pin.version
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        edges.insert(
            key.clone(),
            found
                .dependencies
                .iter()
                .map(|(d, r)| (d.clone(), r.clone()))
                .collect(),
        );
    }

    // Reachability from the requirements over the pins' dependency edges.
    let mut reached: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = requirements.keys().map(PackageName::normalized).collect();
    while let Some(key) = queue.pop_front() {
        if !pins.contains_key(&key) || !reached.insert(key.clone()) {
            continue;
        }
        for (dep, _) in edges.get(&key).into_iter().flatten() {
            queue.push_back(dep.normalized());
        }
    }
    // A required pin the registry does not hold has no known edges, so what
    // it leads to cannot be judged (it is reported already).
    let edges_unknown = reached.iter().any(|k| !edges.contains_key(k));
    for (key, (name, pin)) in &pins {
        if !reached.contains(key) && !edges_unknown {
            problems.push(LockProblem::new(
                ProblemKind::Unrelated,
                format!("tools.{name}"),
                format!(
                    "{name} {} is pinned, but neither the agent nor any pinned tool requires it",
                    pin.version
                ),
            ));
        }
    }
    problems
}

/// The lock's `skills` against the agent's skill requirements and the
/// registry: every requirement pinned and satisfied, every pin published
/// with its hash, no pin without a requirement, yanked pins per `yanks`.
/// `published` holds each pinned skill's live versions (skills have no
/// dependencies, so theirs are empty).
fn check_skills(
    requirements: &BTreeMap<PackageName, VersionReq>,
    lock: &Lockfile,
    published: &PublishedTools,
    yanks: YankPolicy<'_>,
) -> Vec<LockProblem> {
    let mut problems = Vec::new();
    let pins: BTreeMap<String, (&PackageName, &crate::lockfile::LockedSkill)> = lock
        .skills
        .iter()
        .map(|(name, skill)| (name.normalized(), (name, skill)))
        .collect();
    let required: BTreeSet<String> = requirements.keys().map(PackageName::normalized).collect();
    for (name, req) in requirements {
        let pinned = pins.get(&name.normalized()).map(|(_, p)| &p.version);
        problems.extend(direct_problem("skill ", name, Some(req), pinned));
    }
    let previous: BTreeMap<String, &Version> = match yanks {
        YankPolicy::RefuseUnlessPinnedBy(Some(prev)) => prev
            .skills
            .iter()
            .map(|(n, s)| (n.normalized(), &s.version))
            .collect(),
        _ => BTreeMap::new(),
    };
    for (key, (name, pin)) in &pins {
        let field = format!("skills.{name}");
        if !required.contains(key) {
            problems.push(LockProblem::new(
                ProblemKind::Unrelated,
                field.clone(),
                format!("skill {name} is pinned, but no skills: entry with a version requires it"),
            ));
        }
        let found = match published.find(name, &pin.version) {
            Ok(found) => found,
            Err(false) => {
                problems.push(LockProblem::new(
                    ProblemKind::NotInRegistry,
                    field,
                    format!("no skill named {name} is published on this registry"),
                ));
                continue;
            }
            Err(true) => {
                problems.push(LockProblem::new(
                    ProblemKind::NotInRegistry,
                    field,
                    format!(
                        "skill {name} {} is not published on this registry",
                        pin.version
                    ),
                ));
                continue;
            }
        };
        if found.hash != pin.hash {
            problems.push(LockProblem::new(
                ProblemKind::NotInRegistry,
                field.clone(),
                format!(
                    "skill {name} {} is pinned at {}, but this registry holds {}",
                    pin.version,
                    pin.hash.to_prefixed(),
                    found.hash.to_prefixed()
                ),
            ));
        }
        let allowed = match yanks {
            YankPolicy::Honour => true,
            YankPolicy::RefuseUnlessPinnedBy(_) => {
                previous.get(key).is_some_and(|v| **v == pin.version)
            }
        };
        if found.yanked && !allowed {
            problems.push(LockProblem::new(
                ProblemKind::Yanked,
                field,
                format!(
                    "skill {name} {} is yanked; only a lock that already pinned it in the previous version may keep it",
                    pin.version
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem_kinds(problems: &[LockProblem]) -> Vec<(ProblemKind, &str)> {
        problems
            .iter()
            .map(|p| (p.kind, p.field.as_str()))
            .collect()
    }

    fn name(s: &str) -> PackageName {
        PackageName::new(s).unwrap()
    }

    /// (name, version, yanked, dependencies).
    type Entry<'a> = (&'a str, &'a str, bool, &'a [(&'a str, &'a str)]);

    fn published(entries: &[Entry<'_>]) -> PublishedTools {
        let mut by_name: BTreeMap<String, (PackageName, Vec<PublishedTool>)> = BTreeMap::new();
        for (n, v, yanked, deps) in entries {
            let slot = by_name
                .entry(name(n).normalized())
                .or_insert_with(|| (name(n), Vec::new()));
            slot.1.push(PublishedTool {
                version: Version::parse(v).unwrap(),
                hash: Sha256Digest::of(format!("{n}@{v}").as_bytes()),
                yanked: *yanked,
                dependencies: deps
                    .iter()
                    .map(|(d, r)| (name(d), VersionReq::parse(r).unwrap()))
                    .collect(),
            });
        }
        let mut out = PublishedTools::new();
        for (_, (n, versions)) in by_name {
            out.insert(&n, versions);
        }
        out
    }

    fn lock(pins: &[(&str, &str)]) -> Lockfile {
        let mut l = Lockfile::new(crate::lockfile::ResolvedAt::from_unix(0).unwrap(), None);
        for (n, v) in pins {
            l.tools.insert(
                name(n),
                crate::lockfile::LockedTool {
                    version: Version::parse(v).unwrap(),
                    hash: Sha256Digest::of(format!("{n}@{v}").as_bytes()),
                    requirement: None,
                    dependencies: BTreeSet::new(),
                    log_index: None,
                },
            );
        }
        l
    }

    fn reqs(r: &[(&str, &str)]) -> BTreeMap<PackageName, Option<VersionReq>> {
        r.iter()
            .map(|(n, r)| (name(n), Some(VersionReq::parse(r).unwrap())))
            .collect()
    }

    #[test]
    fn a_complete_lock_passes() {
        let registry = published(&[
            ("web_search", "1.2.0", false, &[("web_fetch", "^1.0")]),
            ("web_fetch", "1.0.3", false, &[]),
        ]);
        let l = lock(&[("web_search", "1.2.0"), ("web_fetch", "1.0.3")]);
        let problems = check_tools(
            &reqs(&[("web_search", "^1.2")]),
            &l,
            &registry,
            YankPolicy::RefuseUnlessPinnedBy(None),
        );
        assert_eq!(problems, []);
    }

    #[test]
    fn every_way_a_lock_can_lie_about_tools() {
        let registry = published(&[
            ("web_search", "1.2.0", false, &[("web_fetch", "^2.0")]),
            ("web_fetch", "1.0.3", false, &[]),
            ("sqlite", "1.0.0", true, &[]),
            ("stray", "0.1.0", false, &[]),
        ]);
        let mut l = lock(&[
            ("web_search", "1.2.0"),
            ("web_fetch", "1.0.3"),
            ("sqlite", "1.0.0"),
            ("stray", "0.1.0"),
            ("ghost", "1.0.0"),
        ]);
        l.tools.get_mut(&name("web_fetch")).unwrap().hash = Sha256Digest::of(b"other");
        let problems = check_tools(
            &reqs(&[("web_search", "^1.3"), ("sqlite", "*"), ("artifacts", "*")]),
            &l,
            &registry,
            YankPolicy::RefuseUnlessPinnedBy(None),
        );
        let mut kinds = problem_kinds(&problems);
        kinds.sort();
        assert_eq!(
            kinds,
            [
                (ProblemKind::NotInRegistry, "tools.ghost"),
                (ProblemKind::NotInRegistry, "tools.web_fetch"),
                (ProblemKind::Unpinned, "tools.artifacts"),
                (ProblemKind::Unsatisfied, "tools.web_fetch"),
                (ProblemKind::Unsatisfied, "tools.web_search"),
                (ProblemKind::Unrelated, "tools.ghost"),
                (ProblemKind::Unrelated, "tools.stray"),
                (ProblemKind::Yanked, "tools.sqlite"),
            ],
            "{problems:#?}"
        );
        let (first, of_kind) = first_kind(&problems).unwrap();
        assert_eq!(first, ProblemKind::NotInRegistry);
        assert_eq!(of_kind.len(), 2);
    }

    #[test]
    fn a_yanked_pin_stays_when_the_previous_lock_had_it_or_on_install() {
        let registry = published(&[("sqlite", "1.0.0", true, &[])]);
        let l = lock(&[("sqlite", "1.0.0")]);
        let r = reqs(&[("sqlite", "^1")]);
        let previous = lock(&[("sqlite", "1.0.0")]);
        assert_eq!(
            check_tools(
                &r,
                &l,
                &registry,
                YankPolicy::RefuseUnlessPinnedBy(Some(&previous))
            ),
            []
        );
        assert_eq!(check_tools(&r, &l, &registry, YankPolicy::Honour), []);
        let older = lock(&[("sqlite", "0.9.0")]);
        assert_eq!(
            problem_kinds(&check_tools(
                &r,
                &l,
                &registry,
                YankPolicy::RefuseUnlessPinnedBy(Some(&older))
            )),
            [(ProblemKind::Yanked, "tools.sqlite")]
        );
    }

    #[test]
    fn a_missing_transitive_pin_is_unpinned() {
        let registry = published(&[("web_search", "1.2.0", false, &[("web_fetch", "^1.0")])]);
        let l = lock(&[("web_search", "1.2.0")]);
        let problems = check_tools(
            &reqs(&[("web_search", "^1")]),
            &l,
            &registry,
            YankPolicy::Honour,
        );
        assert_eq!(
            problem_kinds(&problems),
            [(ProblemKind::Unpinned, "tools.web_fetch")]
        );
        assert!(
            problems[0]
                .message
                .contains("web_search 1.2.0 depends on web_fetch")
        );
    }

    fn skill_lock(pins: &[(&str, &str, &str)]) -> Lockfile {
        let mut l = Lockfile::new(crate::lockfile::ResolvedAt::from_unix(0).unwrap(), None);
        for (n, v, req) in pins {
            l.skills.insert(
                name(n),
                crate::lockfile::LockedSkill {
                    version: Version::parse(v).unwrap(),
                    hash: Sha256Digest::of(format!("{n}@{v}").as_bytes()),
                    requirement: VersionReq::parse(req).unwrap(),
                    log_index: None,
                },
            );
        }
        l
    }

    #[test]
    fn skill_pins_are_checked_like_tool_pins() {
        let registry = published(&[
            ("pdf-tools", "0.1.0", false, &[]),
            ("pdf-tools", "0.2.0", true, &[]),
            ("csv-tools", "1.0.0", false, &[]),
        ]);
        let wanted: BTreeMap<PackageName, VersionReq> =
            [(name("pdf-tools"), VersionReq::parse("^0.1").unwrap())].into();
        let honest = skill_lock(&[("pdf-tools", "0.1.0", "^0.1")]);
        let strict = YankPolicy::RefuseUnlessPinnedBy(None);
        assert_eq!(check_skills(&wanted, &honest, &registry, strict), []);

        // Unpinned, and a pin nothing requires.
        let other = skill_lock(&[("csv-tools", "1.0.0", "^1")]);
        assert_eq!(
            problem_kinds(&check_skills(&wanted, &other, &registry, strict)),
            [
                (ProblemKind::Unpinned, "skills.pdf-tools"),
                (ProblemKind::Unrelated, "skills.csv-tools"),
            ]
        );
        // A pin outside the requirement, and yanked.
        let yanked = skill_lock(&[("pdf-tools", "0.2.0", "^0.2")]);
        assert_eq!(
            problem_kinds(&check_skills(&wanted, &yanked, &registry, strict)),
            [
                (ProblemKind::Unsatisfied, "skills.pdf-tools"),
                (ProblemKind::Yanked, "skills.pdf-tools"),
            ]
        );
        // Install keeps a yanked pin; the previous version's pin keeps it too.
        let wanted_02: BTreeMap<PackageName, VersionReq> =
            [(name("pdf-tools"), VersionReq::parse("^0.2").unwrap())].into();
        assert_eq!(
            check_skills(&wanted_02, &yanked, &registry, YankPolicy::Honour),
            []
        );
        assert_eq!(
            check_skills(
                &wanted_02,
                &yanked,
                &registry,
                YankPolicy::RefuseUnlessPinnedBy(Some(&yanked))
            ),
            []
        );
        // Another hash, a version never published, a skill never published.
        let mut forged = honest.clone();
        forged.skills.get_mut(&name("pdf-tools")).unwrap().hash = Sha256Digest::of(b"other");
        assert_eq!(
            problem_kinds(&check_skills(&wanted, &forged, &registry, strict)),
            [(ProblemKind::NotInRegistry, "skills.pdf-tools")]
        );
        let unpublished = skill_lock(&[("pdf-tools", "0.1.9", "^0.1")]);
        assert_eq!(
            problem_kinds(&check_skills(&wanted, &unpublished, &registry, strict)),
            [(ProblemKind::NotInRegistry, "skills.pdf-tools")]
        );
        assert_eq!(
            problem_kinds(&check_skills(
                &wanted,
                &honest,
                &PublishedTools::new(),
                strict
            )),
            [(ProblemKind::NotInRegistry, "skills.pdf-tools")]
        );
    }
}
