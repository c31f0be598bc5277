//! Install directories: an agent and every tool its lock pins, each
//! container exactly as the registry served it, with a manifest of what was
//! installed.
//!
//! ```text
//! DIR/
//!   agentlang-install.json          what was installed, from where, signed by whom
//!   agent/NAME@VERSION.agent
//!   context/...                     the agent's bundled resources, unpacked from it
//!   tools/NAME@VERSION.tool ...
//!   skills/NAME@VERSION.skill ...   each skill package the lock pins,
//!   skills/NAME/SKILL.md ...        and its folder, unpacked from it
//! ```
//!
//! [`install`] checks everything before anything is written: each
//! container's hash against the lock and the registry's index, its
//! structure, the whole package's validation, its signature against the
//! signer's registered key, and that the key was not revoked before the
//! version was published; the lock against the package and the index
//! (`core::lockcheck::check`, the judgment the registry ran at publish). It builds the
//! directory under a temporary name beside DIR and renames it into place, so
//! a failure leaves nothing behind and a reader sees the old install or the
//! new one. [`verify_dir`] runs every check again offline, with the public
//! keys recorded in the manifest.

use std::{
    collections::{BTreeMap, HashMap},
    fs,
    io::{BufReader, Read, Write},
    path::{Path, PathBuf},
};

use agentlang_core::{
    Kind, MemberPath, PackageName, Version,
    agentskills::SkillDoc,
    container::{self, Container, Limits},
    digest::Sha256Digest,
    host::{HostProfile, HostReport, ToolAt, ToolCapabilities},
    lockcheck::{
        self, LockProblem, MemberHashes, ProblemKind, PublishedTool, PublishedTools, RegistryFacts,
        YankPolicy,
    },
    lockfile::Lockfile,
    package::{AgentPackage, Members, Package, validate_package},
    signing::{KeyId, PublicKey},
    tool::ToolSpec,
};
use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::{
    client::Client,
    download,
    env::Env,
    index::{Index, pick_released},
    spec::PackageReq,
    tlog::LogRef,
};

pub const MANIFEST_FILE: &str = "agentlang-install.json";
pub const FORMAT: &str = "agentlang.install/1";
const AGENT_DIR: &str = "agent";
const TOOLS_DIR: &str = "tools";
/// Skill containers an agent's lock pins, beside their unpacked folders.
const SKILLS_DIR: &str = "skills";
/// The agent's bundled resources (its container's `context/` members),
/// unpacked at the same path.
const CONTEXT_DIR: &str = "context";
/// An install manifest lists at most the lock's tools plus the agent.
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// What `agentlang-install.json` records about one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Version,
    /// Relative to the install directory.
    pub file: MemberPath,
    /// Hex SHA-256 of the container.
    pub sha256: Sha256Digest,
    pub size: u64,
    pub signer: Signer,
    /// RFC 3339, as the registry recorded it.
    pub published_at: String,
    pub yanked: bool,
    /// The index of the version's publish in the registry's transparency
    /// log; its receipt (c2sp.org/tlog-proof@v1) is `<file>.tlog-proof`.
    /// Absent from installs made before receipts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
    /// How the registry says it was published (trusted publisher or token,
    /// provenance or none); absent from registries and installs before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<agentlang_core::provenance::Evidence>,
}

/// The signer's key as the registry answered it at install time, so the
/// install can be verified offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signer {
    pub key_id: KeyId,
    pub public_key_pem: String,
    /// RFC 3339; `null` while the key is in force.
    pub revoked_at: Option<String>,
}

/// `agentlang-install.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallManifest {
    pub format: String,
    pub registry: String,
    /// What was asked for: `NAME@REQ`.
    pub requested: String,
    /// RFC 3339.
    pub installed_at: String,
    pub agent: Artifact,
    pub tools: Vec<Artifact>,
    /// Absent from installs of agents that pin no skill package (and from
    /// those made before skills were packages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<Artifact>,
}

impl InstallManifest {
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST_FILE);
        let file = fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut text = String::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_string(&mut text)
            .with_context(|| format!("reading {}", path.display()))?;
        if text.len() as u64 > MAX_MANIFEST_BYTES {
            bail!(
                "{} is larger than {MAX_MANIFEST_BYTES} bytes",
                path.display()
            );
        }
        let manifest: Self = serde_json::from_str(&text)
            .with_context(|| format!("{} is not an install manifest", path.display()))?;
        if manifest.format != FORMAT {
            bail!(
                "{} has format {:?}; this agentlang reads {FORMAT:?}",
                path.display(),
                manifest.format
            );
        }
        Ok(manifest)
    }
}

/// One verified tool of an install.
#[derive(Debug)]
pub struct LoadedTool {
    pub artifact: Artifact,
    pub spec: ToolSpec,
}

/// One verified skill package of an install, and its unpacked folder.
#[derive(Debug)]
pub struct LoadedSkill {
    pub artifact: Artifact,
    pub doc: SkillDoc,
    /// The unpacked folder, relative to the install directory (or the
    /// folder it was fetched into): `skills/NAME`.
    pub folder: MemberPath,
}

/// An install directory whose every check passed.
#[derive(Debug)]
pub struct LoadedInstall {
    pub dir: PathBuf,
    pub manifest: InstallManifest,
    pub agent: Container,
    pub package: AgentPackage,
    pub tools: Vec<LoadedTool>,
    pub skills: Vec<LoadedSkill>,
}

impl LoadedInstall {
    pub fn tool_specs(&self) -> Vec<&ToolSpec> {
        self.tools.iter().map(|t| &t.spec).collect()
    }

    /// What the installed agent can do, with its installed tools.
    pub fn trust(&self) -> agentlang_core::trust::AgentTrust {
        let tools: Vec<ToolCapabilities> = self
            .tools
            .iter()
            .map(|t| ToolCapabilities::of(&t.spec))
            .collect();
        agentlang_core::trust::AgentTrust::of(&self.package, &tools)
            .signed_by(Some(self.agent.manifest().signer().to_string()))
    }
}

/// One check of `verify DIR` (and of `verify FILE`).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: String,
    pub ok: bool,
    pub detail: String,
}

impl Check {
    fn pass(check: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            check: check.into(),
            ok: true,
            detail: detail.into(),
        }
    }

    fn fail(check: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            check: check.into(),
            ok: false,
            detail: detail.into(),
        }
    }
}

fn parse_time(text: &str) -> Result<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339)
        .with_context(|| format!("{text:?} is not an RFC 3339 time"))
}

/// A signer key revoked before the version was published means the version
/// should never have been accepted; revoked after, it stays valid (keys are
/// revoked when retired or lost, not to unpublish what they signed).
fn check_revocation(label: &str, revoked_at: Option<&str>, published_at: &str) -> Result<()> {
    let Some(revoked_at) = revoked_at else {
        return Ok(());
    };
    if parse_time(revoked_at)? < parse_time(published_at)? {
        bail!(
            "{label} was published at {published_at}, after its signing key was revoked at {revoked_at}"
        );
    }
    Ok(())
}

/// The checks of one installed container against its manifest record,
/// offline: hash, structure, identity, signature with the recorded key,
/// revocation, and the package's validation.
fn verify_artifact(dir: &Path, a: &Artifact) -> Result<(Container, Package)> {
    let expected_dir = match a.kind {
        Kind::Agent => AGENT_DIR,
        Kind::Tool => TOOLS_DIR,
        Kind::Skill => SKILLS_DIR,
        // An install holds an agent and its tools; protocols are checked
        // by name and version, never installed.
        Kind::Protocol => bail!("an install holds no protocol packages"),
    };
    if !a.file.as_str().starts_with(&format!("{expected_dir}/")) {
        bail!(
            "the manifest puts it at {}, outside {expected_dir}/",
            a.file
        );
    }
    let path = dir.join(a.file.as_str());
    let file = fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let container = container::read(BufReader::new(file), &Limits::default())
        .with_context(|| format!("{} is not a valid container", path.display()))?;
    if container.sha256() != a.sha256 {
        bail!(
            "{} has sha256 {}, but {} was installed as {}",
            path.display(),
            container.sha256().hex(),
            a.name,
            a.sha256.hex()
        );
    }
    let m = container.manifest();
    if m.kind() != a.kind || m.name() != &a.name || m.version() != &a.version {
        bail!(
            "{} holds {} {}@{}, not {} {}@{}",
            path.display(),
            m.kind(),
            m.name(),
            m.version(),
            a.kind,
            a.name,
            a.version
        );
    }
    let key = PublicKey::from_spki_pem(&a.signer.public_key_pem)
        .context("the recorded signer key is not an Ed25519 public key")?;
    if key.key_id() != a.signer.key_id {
        bail!("the recorded signer key is not key {}", a.signer.key_id);
    }
    container
        .verify_signature(&key)
        .with_context(|| format!("{}@{} does not verify", a.name, a.version))?;
    check_revocation(
        &format!("{}@{}", a.name, a.version),
        a.signer.revoked_at.as_deref(),
        &a.published_at,
    )?;
    let package = validate_package(a.kind, &Members::from_container(&container)).map_err(|d| {
        anyhow!(
            "{}@{} is not a valid {}: {}",
            a.name,
            a.version,
            a.kind,
            d.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )
    })?;
    Ok((container, package))
}

/// The lock against the package and the installed tools: the judgment the
/// registry ran at publish (`core::lockcheck::check`), with the installed
/// tools and skills standing in for the registry, plus: every pin
/// installed, nothing installed that is not pinned.
fn check_install_lock(
    pkg: &AgentPackage,
    agent: &Container,
    tools: &[LoadedTool],
    skills: &[LoadedSkill],
) -> Result<()> {
    let mut installed = PublishedTools::new();
    for t in tools {
        installed.insert(
            &t.artifact.name,
            vec![PublishedTool {
                version: t.artifact.version.clone(),
                hash: t.artifact.sha256,
                yanked: false,
                dependencies: t.spec.dependency_requirements(),
            }],
        );
    }
    let mut installed_skills = PublishedTools::new();
    for s in skills {
        installed_skills.insert(
            &s.artifact.name,
            vec![PublishedTool {
                version: s.artifact.version.clone(),
                hash: s.artifact.sha256,
                yanked: false,
                dependencies: BTreeMap::new(),
            }],
        );
    }
    let facts = RegistryFacts {
        tools: &installed,
        skills: &installed_skills,
        yanks: YankPolicy::Honour,
    };
    // Whether each pin is the installed one is said below, in install's
    // words, rather than as "not published".
    let mut problems: Vec<String> = lockcheck::check(
        pkg,
        &MemberHashes::from_manifest(agent.manifest()),
        Some(&facts),
    )
    .into_iter()
    .filter(|p| p.kind != ProblemKind::NotInRegistry)
    .map(|p| p.to_string())
    .collect();
    let Some(lock) = pkg.lock.as_ref() else {
        bail!("{}", problems.join("; "));
    };
    for (name, pin) in &lock.tools {
        let pinned = pin.hash;
        match tools
            .iter()
            .find(|t| t.artifact.name.normalized() == name.normalized())
        {
            None => problems.push(format!(
                "tools.{name}: {name}@{} is pinned but not installed",
                pin.version
            )),
            Some(t) if t.artifact.version != pin.version || t.artifact.sha256 != pinned => {
                problems.push(format!(
                    "tools.{name}: pinned at {}@{} ({}), but {}@{} ({}) is installed",
                    name,
                    pin.version,
                    pin.hash.to_prefixed(),
                    t.artifact.name,
                    t.artifact.version,
                    t.artifact.sha256.hex()
                ));
            }
            Some(_) => {}
        }
    }
    for t in tools {
        if !lock
            .tools
            .keys()
            .any(|n| n.normalized() == t.artifact.name.normalized())
        {
            problems.push(format!(
                "tools.{}: {}@{} is installed but agent.lock does not pin it",
                t.artifact.name, t.artifact.name, t.artifact.version
            ));
        }
    }
    for (name, pin) in &lock.skills {
        let installed = skills
            .iter()
            .find(|s| s.artifact.name.normalized() == name.normalized());
        if !installed
            .is_some_and(|s| s.artifact.version == pin.version && s.artifact.sha256 == pin.hash)
        {
            problems.push(format!(
                "skills.{name}: {name}@{} ({}) is pinned but not installed",
                pin.version,
                pin.hash.to_prefixed()
            ));
        }
    }
    for s in skills {
        if !lock
            .skills
            .keys()
            .any(|n| n.normalized() == s.artifact.name.normalized())
        {
            problems.push(format!(
                "skills.{}: {}@{} is installed but agent.lock does not pin it",
                s.artifact.name, s.artifact.name, s.artifact.version
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}", problems.join("; "))
    }
}

/// Files under agent/, tools/ and skills/ the manifest does not list, and
/// entries at the top that do not belong: something was added by hand.
/// (Inside a skill's unpacked folder and the agent's context/,
/// [`verify_unpacked`] looks; `context` belongs only when the agent has
/// context members.)
fn unlisted_files(dir: &Path, manifest: &InstallManifest, context: bool) -> Result<Vec<String>> {
    let folders: Vec<String> = manifest
        .skills
        .iter()
        .map(|a| format!("{SKILLS_DIR}/{}", a.name))
        .collect();
    let artifacts = || {
        std::iter::once(&manifest.agent)
            .chain(&manifest.tools)
            .chain(&manifest.skills)
    };
    // Each logged artifact's receipt is beside it.
    let receipts: Vec<String> = artifacts()
        .filter(|a| a.log_index.is_some())
        .map(|a| format!("{}.tlog-proof", a.file))
        .collect();
    let listed: Vec<&str> = artifacts()
        .map(|a| a.file.as_str())
        .chain(folders.iter().map(String::as_str))
        .chain(receipts.iter().map(String::as_str))
        .collect();
    let mut extra = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        match name.as_str() {
            MANIFEST_FILE => {}
            CONTEXT_DIR if context && entry.file_type()?.is_dir() => {}
            AGENT_DIR | TOOLS_DIR | SKILLS_DIR if entry.file_type()?.is_dir() => {
                for inner in fs::read_dir(entry.path())? {
                    let inner = inner?;
                    let rel = format!("{name}/{}", inner.file_name().to_string_lossy());
                    if !listed.contains(&rel.as_str()) {
                        extra.push(rel);
                    }
                }
            }
            _ => extra.push(name),
        }
    }
    extra.sort();
    Ok(extra)
}

/// Every check of an install directory, offline. The install is returned
/// only when all of them pass.
pub fn verify_dir(dir: &Path) -> (Vec<Check>, Option<LoadedInstall>) {
    let mut checks = Vec::new();
    let manifest = match InstallManifest::read(dir) {
        Ok(m) => {
            checks.push(Check::pass(
                "install manifest",
                format!(
                    "{}@{} with {} tools and {} skills from {}",
                    m.agent.name,
                    m.agent.version,
                    m.tools.len(),
                    m.skills.len(),
                    m.registry
                ),
            ));
            m
        }
        Err(e) => {
            checks.push(Check::fail("install manifest", format!("{e:#}")));
            return (checks, None);
        }
    };

    let label = |a: &Artifact| format!("{} {}@{}", a.kind, a.name, a.version);
    let agent = match verify_artifact(dir, &manifest.agent) {
        Ok((container, Package::Agent(pkg))) => {
            match verify_context(dir, container.manifest()) {
                Ok(detail) => checks.push(Check::pass(
                    label(&manifest.agent),
                    format!(
                        "sha256 {} · signed by {}{detail}",
                        manifest.agent.sha256.hex(),
                        manifest.agent.signer.key_id
                    ),
                )),
                Err(e) => checks.push(Check::fail(label(&manifest.agent), format!("{e:#}"))),
            }
            Some((container, *pkg))
        }
        Ok(_) => {
            checks.push(Check::fail(label(&manifest.agent), "not an agent"));
            None
        }
        Err(e) => {
            checks.push(Check::fail(label(&manifest.agent), format!("{e:#}")));
            None
        }
    };
    let mut tools = Vec::new();
    let mut tools_ok = true;
    for a in &manifest.tools {
        match verify_artifact(dir, a) {
            Ok((_, Package::Tool(tool))) => {
                checks.push(Check::pass(
                    label(a),
                    format!("sha256 {} · signed by {}", a.sha256.hex(), a.signer.key_id),
                ));
                tools.push(LoadedTool {
                    artifact: a.clone(),
                    spec: tool.tool,
                });
            }
            Ok(_) => {
                tools_ok = false;
                checks.push(Check::fail(label(a), "not a tool"));
            }
            Err(e) => {
                tools_ok = false;
                checks.push(Check::fail(label(a), format!("{e:#}")));
            }
        }
    }
    let mut skills = Vec::new();
    for a in &manifest.skills {
        match verify_artifact(dir, a).and_then(|(container, package)| {
            let Package::Skill(skill) = package else {
                bail!("not a skill");
            };
            let folder = skill_folder(&a.name)?;
            verify_unpacked(
                &dir.join(folder.as_str()),
                container.manifest(),
                "",
                "skill package",
            )?;
            Ok(LoadedSkill {
                artifact: a.clone(),
                doc: skill.skill,
                folder,
            })
        }) {
            Ok(skill) => {
                checks.push(Check::pass(
                    label(a),
                    format!(
                        "sha256 {} · signed by {} · {} unpacked as published",
                        a.sha256.hex(),
                        a.signer.key_id,
                        skill.folder
                    ),
                ));
                skills.push(skill);
            }
            Err(e) => {
                tools_ok = false;
                checks.push(Check::fail(label(a), format!("{e:#}")));
            }
        }
    }
    let context = agent
        .as_ref()
        .is_some_and(|(c, _)| has_context(c.manifest()));
    match unlisted_files(dir, &manifest, context) {
        Ok(extra) if extra.is_empty() => checks.push(Check::pass(
            "no unlisted files",
            "every file is in the manifest",
        )),
        Ok(extra) => checks.push(Check::fail(
            "no unlisted files",
            format!("not installed by agentlang: {}", extra.join(", ")),
        )),
        Err(e) => checks.push(Check::fail("no unlisted files", format!("{e:#}"))),
    }
    let Some((agent, package)) = agent else {
        return (checks, None);
    };
    if !tools_ok {
        return (checks, None);
    }
    match check_install_lock(&package, &agent, &tools, &skills) {
        // Reached only with a lock: a lock-less agent fails the check.
        Ok(()) => checks.push(Check::pass(
            "lock",
            format!(
                "agent.lock hashes the agent's files and pins exactly the {} installed tools and {} installed skills",
                tools.len(),
                skills.len()
            ),
        )),
        Err(e) => checks.push(Check::fail("lock", format!("{e:#}"))),
    }
    if checks.iter().all(|c| c.ok) {
        let loaded = LoadedInstall {
            dir: dir.to_path_buf(),
            manifest,
            agent,
            package,
            tools,
            skills,
        };
        (checks, Some(loaded))
    } else {
        (checks, None)
    }
}

/// The receipts of an install's artifacts, checked offline
/// (`tlog::check_receipt`) with the log key given or pinned for the
/// install's registry and the witnesses `opts` asks for: one check per
/// artifact, naming its log index. An artifact installed before receipts
/// (no log index recorded) is said, not failed.
pub fn verify_receipts(
    dir: &Path,
    manifest: &InstallManifest,
    opts: &crate::tlog::LogOptions,
) -> Vec<Check> {
    let keys = crate::tlog::offline_log_key(&manifest.registry, opts)
        .and_then(|key| Ok((key, crate::tlog::witness_keys(opts)?)));
    let (key, witnesses) = match keys {
        Ok(keys) => keys,
        Err(e) => return vec![Check::fail("receipts", format!("{e:#}"))],
    };
    std::iter::once(&manifest.agent)
        .chain(&manifest.tools)
        .chain(&manifest.skills)
        .map(|a| {
            let label = format!("receipt of {} {}@{}", a.kind, a.name, a.version);
            let Some(index) = a.log_index else {
                return Check::pass(label, "installed before receipts: none to check");
            };
            match crate::tlog::check_receipt(
                &crate::tlog::receipt_path(&dir.join(a.file.as_str())),
                &key,
                &witnesses,
                opts.required_witnesses,
                (a.kind, &a.name, &a.version),
                &a.sha256,
                index,
            ) {
                Ok(detail) => Check::pass(label, detail),
                Err(e) => Check::fail(label, format!("log entry {index}: {e:#}")),
            }
        })
        .collect()
}

/// Loads an install directory, failing with every failed check on one line.
pub fn load_verified(dir: &Path) -> Result<LoadedInstall> {
    let (checks, loaded) = verify_dir(dir);
    loaded.ok_or_else(|| {
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.check, crate::client::one_line(&c.detail)))
            .collect();
        anyhow!(
            "{} fails verification: {}",
            dir.display(),
            failed.join("; ")
        )
    })
}

/// `GET /api/v1/{kind}/{name}/{version}` as install needs it.
#[derive(Debug, Deserialize)]
struct VersionRecord {
    sha256: String,
    /// Bytes of the container: the download stops past them.
    size: u64,
    signer: Option<SignerRecord>,
    published_at: String,
    yanked: bool,
    #[serde(default)]
    log: Option<LogRef>,
    #[serde(default)]
    evidence: Option<agentlang_core::provenance::Evidence>,
}

#[derive(Debug, Deserialize)]
struct SignerRecord {
    key_id: String,
}

/// Talks to the registry for one install, asking for each key once.
struct Fetcher<'a> {
    env: &'a Env,
    client: Client,
    keys: HashMap<String, (PublicKey, Option<String>)>,
}

impl Fetcher<'_> {
    fn index(&self, kind: Kind, name: &PackageName) -> Result<Index> {
        self.client
            .send_json(
                self.client
                    .get(&format!("/api/v1/index/{}/{name}", kind.plural())),
            )
            .with_context(|| format!("looking up {kind} {name}"))
    }

    /// Downloads, checks the hash as the bytes arrive, reads the container
    /// back, checks who it says it is, its signature against the signer's
    /// registered key, and the key's revocation time against the version's
    /// publication.
    fn fetch(
        &mut self,
        kind: Kind,
        name: &PackageName,
        version: &Version,
        expected: Sha256Digest,
        into: &Path,
        rel: &MemberPath,
    ) -> Result<(Artifact, Container)> {
        let label = format!("{kind} {name}@{version}");
        let record: VersionRecord = self
            .client
            .send_json(
                self.client
                    .get(&format!("/api/v1/{}/{name}/{version}", kind.plural())),
            )
            .with_context(|| format!("looking up {label}"))?;
        if record.sha256 != expected.to_hex() {
            bail!(
                "the registry's record of {label} has sha256 {}, but the lock and index say {}",
                record.sha256,
                expected.hex()
            );
        }
        let path = into.join(rel.as_str());
        let dir = path.parent().unwrap_or(into);
        // A temporary file until every check passes: a failure leaves
        // nothing in `into`, which outlives one tool for `PinnedTools`.
        let downloaded = download::download(
            &self.client,
            &self.env.out,
            (kind, name, version),
            record.size,
            dir,
        )?;
        let size = downloaded.size;
        let actual = downloaded.sha256;
        if actual != expected {
            bail!(
                "the download of {label} has sha256 {}, but the lock and the registry's index say {}: {}",
                actual.hex(),
                expected.hex(),
                download::MISMATCH_ADVICE
            );
        }
        let container = container::read(
            BufReader::new(downloaded.file.reopen()?),
            &Limits::default(),
        )
        .with_context(|| format!("the registry's {label} is not a valid container"))?;
        let m = container.manifest();
        if m.kind() != kind || m.name() != name || m.version() != version {
            bail!(
                "the registry sent {} {}@{} when asked for {label}",
                m.kind(),
                m.name(),
                m.version()
            );
        }
        let key_id = m.signer().clone();
        if record.signer.as_ref().map(|s| s.key_id.as_str()) != Some(key_id.as_str()) {
            bail!("the registry does not record {key_id} as the signer of {label}");
        }
        let (key, revoked_at) = match self.keys.get(key_id.as_str()) {
            Some(k) => k.clone(),
            None => {
                let k = self.client.public_key(&key_id)?;
                let entry = (k.key, k.revoked_at);
                self.keys.insert(key_id.as_str().to_owned(), entry.clone());
                entry
            }
        };
        container
            .verify_signature(&key)
            .with_context(|| format!("{label} does not verify"))?;
        check_revocation(&label, revoked_at.as_deref(), &record.published_at)?;
        let (log_index, receipt) = crate::tlog::check_version_receipt(
            &self.client,
            &self.env.log,
            &self.env.out,
            (kind, name, version),
            &actual,
            record.log.map(|l| l.index),
        )?;
        let receipt_path = crate::tlog::receipt_path(&path);
        fs::write(&receipt_path, receipt)
            .with_context(|| format!("writing {}", receipt_path.display()))?;
        crate::container_file::persist(downloaded.file, &path)?;
        let artifact = Artifact {
            kind,
            name: name.clone(),
            version: version.clone(),
            file: rel.clone(),
            sha256: actual,
            size,
            signer: Signer {
                key_id,
                public_key_pem: key.to_spki_pem(),
                revoked_at,
            },
            published_at: record.published_at,
            yanked: record.yanked,
            log_index: Some(log_index),
            evidence: record.evidence,
        };
        Ok((artifact, container))
    }
}

/// Problems in one line each, `field: message [slug]`, joined.
fn describe(problems: &[LockProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Warns (on stderr, `-q` too) when a lock pins `name@version` and the
/// index says it is younger than the minimum release age: install keeps
/// the pin, since the lock is the publisher's, but says so.
fn warn_young_pin(
    env: &Env,
    kind: agentlang_core::Kind,
    name: &agentlang_core::PackageName,
    entry: &crate::index::IndexEntry,
) {
    let (Some(age), Some(cutoff)) = (env.min_release_age, env.release_cutoff()) else {
        return;
    };
    if crate::release_age::too_young(entry.published_at.as_deref(), cutoff) {
        eprintln!(
            "{} the lock pins {kind} {name}@{}, published {} (less than {age} ago); installed as pinned",
            env.out.yellow("warning:"),
            entry.version,
            entry.published_at.as_deref().unwrap_or("recently"),
        );
    }
}

/// The lock judged as publish judged it (`core::lockcheck::check`), with
/// the registry's index standing in for its database: every live version
/// of each pinned tool and skill package. A pinned yanked version is
/// honoured (yanking hides a version from new locks only).
fn judge_lock(
    fetcher: &Fetcher<'_>,
    label: &str,
    package: &AgentPackage,
    hashes: &MemberHashes,
) -> Result<()> {
    let mut tools = PublishedTools::new();
    let mut skills = PublishedTools::new();
    if let Some(lock) = &package.lock {
        for (name, pin) in &lock.tools {
            let mut versions = Vec::new();
            for e in &fetcher.index(Kind::Tool, name)?.versions {
                if e.version == pin.version {
                    warn_young_pin(fetcher.env, Kind::Tool, name, e);
                }
                versions.push(PublishedTool {
                    version: e.version.clone(),
                    hash: e.digest()?,
                    yanked: e.yanked,
                    dependencies: e.dependencies()?,
                });
            }
            tools.insert(name, versions);
        }
        for (name, pin) in &lock.skills {
            let mut versions = Vec::new();
            for e in &fetcher.index(Kind::Skill, name)?.versions {
                if e.version == pin.version {
                    warn_young_pin(fetcher.env, Kind::Skill, name, e);
                }
                versions.push(PublishedTool {
                    version: e.version.clone(),
                    hash: e.digest()?,
                    yanked: e.yanked,
                    dependencies: BTreeMap::new(),
                });
            }
            skills.insert(name, versions);
        }
    }
    let facts = RegistryFacts {
        tools: &tools,
        skills: &skills,
        yanks: YankPolicy::Honour,
    };
    let problems = lockcheck::check(package, hashes, Some(&facts));
    if !problems.is_empty() {
        bail!(
            "{label}'s agent.lock does not hold against the package and the registry: {}",
            describe(&problems)
        );
    }
    Ok(())
}

/// Every tool the package's lock pins (judged already by [`judge_lock`]),
/// downloaded into `into/tools/` and verified.
fn locked_tools(
    fetcher: &mut Fetcher<'_>,
    package: &AgentPackage,
    into: &Path,
) -> Result<Vec<LoadedTool>> {
    let mut tools = Vec::new();
    for (name, pin) in package.lock.iter().flat_map(|l| &l.tools) {
        tools.push(fetch_tool(fetcher, name, &pin.version, pin.hash, into)?);
    }
    Ok(tools)
}

/// One pinned tool, downloaded into `into/tools/`, verified (hash, signer,
/// revocation) and validated.
fn fetch_tool(
    fetcher: &mut Fetcher<'_>,
    name: &PackageName,
    version: &Version,
    expected: Sha256Digest,
    into: &Path,
) -> Result<LoadedTool> {
    let rel = MemberPath::new(format!("{TOOLS_DIR}/{name}@{version}.tool"))
        .context("a tool's file name")?;
    let (artifact, container) = fetcher.fetch(Kind::Tool, name, version, expected, into, &rel)?;
    let spec = match validate_package(Kind::Tool, &Members::from_container(&container)) {
        Ok(Package::Tool(t)) => t.tool,
        Ok(Package::Agent(_) | Package::Protocol(_) | Package::Skill(_)) => {
            bail!("{name} is not a tool")
        }
        Err(d) => bail!(
            "{name}@{version} is not a valid tool: {}",
            d.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    Ok(LoadedTool { artifact, spec })
}

/// `skills/NAME`: where a skill package's folder is unpacked.
fn skill_folder(name: &PackageName) -> Result<MemberPath> {
    MemberPath::new(format!("{SKILLS_DIR}/{name}")).context("a skill's folder name")
}

/// Writes every member of the verified container at `container` (its
/// manifest is `manifest`) whose path starts with `prefix` into the new
/// folder `into`, without the prefix, each checked against the manifest as
/// it is written (`container::unpack`; the other members are checked and
/// skipped).
fn unpack_members(
    container: &Path,
    manifest: &container::Manifest,
    prefix: &str,
    into: &Path,
) -> Result<()> {
    fs::create_dir(into).with_context(|| format!("creating {}", into.display()))?;
    let file =
        fs::File::open(container).with_context(|| format!("opening {}", container.display()))?;
    container::unpack(BufReader::new(file), manifest, |path, bytes| {
        let Some(rel) = path.as_str().strip_prefix(prefix) else {
            return Ok(());
        };
        let target = into.join(rel);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut out = fs::File::create_new(&target)?;
        std::io::copy(bytes, &mut out)?;
        out.sync_all()
    })
    .with_context(|| format!("unpacking {} into {}", container.display(), into.display()))
}

/// The `context/` prefix of an agent container's bundled resources.
fn context_prefix() -> String {
    format!("{CONTEXT_DIR}/")
}

fn has_context(manifest: &container::Manifest) -> bool {
    let prefix = context_prefix();
    manifest
        .files()
        .iter()
        .any(|f| f.path.as_str().starts_with(&prefix))
}

/// The agent's `context/` members, unpacked into `into/context/` (the
/// install's staging folder): resources the agent bundles are where a
/// runtime looks for them, checked like everything else.
fn unpack_context(container: &Path, manifest: &container::Manifest, into: &Path) -> Result<()> {
    if !has_context(manifest) {
        return Ok(());
    }
    unpack_members(
        container,
        manifest,
        &context_prefix(),
        &into.join(CONTEXT_DIR),
    )
}

/// `DIR/context/` holds exactly the agent's `context/` members (and is
/// absent when it has none). Returns a note for the check's detail.
fn verify_context(dir: &Path, manifest: &container::Manifest) -> Result<String> {
    let folder = dir.join(CONTEXT_DIR);
    if !has_context(manifest) {
        // A stray context/ is named by the unlisted-files check.
        return Ok(String::new());
    }
    verify_unpacked(&folder, manifest, &context_prefix(), "agent package")?;
    Ok(format!(" · {CONTEXT_DIR}/ unpacked as published"))
}

/// An unpacked folder holds exactly the container's members under
/// `prefix` (without it; the manifest and signature aside), byte for byte:
/// regular files and folders only, nothing added, nothing missing, nothing
/// changed.
fn verify_unpacked(
    folder: &Path,
    manifest: &container::Manifest,
    prefix: &str,
    what: &str,
) -> Result<()> {
    let mut found = std::collections::BTreeSet::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in fs::read_dir(&at).with_context(|| format!("reading {}", at.display()))? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(folder)
                .ok()
                .and_then(|r| r.to_str())
                .map(|r| format!("{prefix}{}", r.replace(std::path::MAIN_SEPARATOR, "/")))
                .with_context(|| format!("{} has a name that is not UTF-8", path.display()))?;
            let listed = manifest
                .file(&rel)
                .filter(|_| kind.is_file())
                .with_context(|| format!("{} is not a file of the {what}", path.display()))?;
            if entry.metadata()?.len() != listed.size
                || Sha256Digest::of(&fs::read(&path)?) != listed.sha256
            {
                bail!("{} differs from the {what}'s", path.display());
            }
            found.insert(rel);
        }
    }
    if let Some(missing) = manifest
        .files()
        .iter()
        .find(|f| f.path.as_str().starts_with(prefix) && !found.contains(f.path.as_str()))
    {
        bail!("{} is missing {}", folder.display(), missing.path);
    }
    Ok(())
}

/// Every skill package the package's lock pins (judged already by
/// [`judge_lock`]), downloaded into `into/skills/`, verified as a tool is
/// (hash against the lock, signature, revocation, the log), and unpacked
/// beside its container into `into/skills/NAME/`.
fn locked_skills(
    fetcher: &mut Fetcher<'_>,
    package: &AgentPackage,
    into: &Path,
) -> Result<Vec<LoadedSkill>> {
    let Some(lock) = package.lock.as_ref() else {
        return Ok(Vec::new());
    };
    let mut skills = Vec::new();
    for (name, pin) in &lock.skills {
        let version = &pin.version;
        let rel = MemberPath::new(format!("{SKILLS_DIR}/{name}@{version}.skill"))
            .context("a skill's file name")?;
        let (artifact, container) =
            fetcher.fetch(Kind::Skill, name, version, pin.hash, into, &rel)?;
        let doc = match validate_package(Kind::Skill, &Members::from_container(&container)) {
            Ok(Package::Skill(s)) => s.skill,
            Ok(_) => bail!("{name} is not a skill"),
            Err(d) => bail!(
                "{name}@{version} is not a valid skill: {}",
                d.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        let folder = skill_folder(name)?;
        unpack_members(
            &into.join(rel.as_str()),
            container.manifest(),
            "",
            &into.join(folder.as_str()),
        )?;
        skills.push(LoadedSkill {
            artifact,
            doc,
            folder,
        });
    }
    Ok(skills)
}

/// For `run DIR` on a package directory: its lock judged against the
/// package (`hashes`: what the directory packs) and the registry, then the
/// locked tools and skills, verified (skills unpacked), into `into`, which
/// the caller keeps while the runtime runs.
pub fn fetch_locked(
    env: &Env,
    package: &AgentPackage,
    hashes: &MemberHashes,
    label: &str,
    into: &Path,
) -> Result<(Vec<LoadedTool>, Vec<LoadedSkill>)> {
    let mut fetcher = Fetcher {
        env,
        client: env.anonymous()?,
        keys: HashMap::new(),
    };
    judge_lock(&fetcher, label, package, hashes)?;
    let tools = locked_tools(&mut fetcher, package, into)?;
    let skills = locked_skills(&mut fetcher, package, into)?;
    Ok((tools, skills))
}

/// What the tools a lock pins ask for, for `inspect`, `diff` and
/// `lock --update`: each pinned version fetched and verified as install
/// fetches it (hash against the pin, signature, revocation), into a
/// temporary folder removed when this is dropped, and each read once.
pub struct PinnedTools<'a> {
    fetcher: Fetcher<'a>,
    dir: tempfile::TempDir,
    known: BTreeMap<ToolAt, ToolCapabilities>,
    /// Pins that could not be read: what they ask for is unknown.
    unreadable: std::collections::BTreeSet<ToolAt>,
}

impl<'a> PinnedTools<'a> {
    pub fn new(env: &'a Env) -> Result<Self> {
        Ok(Self {
            fetcher: Fetcher {
                env,
                // Fetched to read what they ask for, not to be used.
                client: env.anonymous()?.inspecting(),
                keys: HashMap::new(),
            },
            dir: tempfile::tempdir().context("creating a temporary folder for tools")?,
            known: BTreeMap::new(),
            unreadable: std::collections::BTreeSet::new(),
        })
    }

    /// The pins of `lock` whose tools could not be read (after
    /// [`Self::capabilities`]): a check that must not pass on a guess
    /// refuses them.
    pub fn unreadable_in(&self, lock: &Lockfile) -> Vec<ToolAt> {
        self.unreadable
            .iter()
            .filter(|at| {
                lock.tools
                    .get(&at.name)
                    .is_some_and(|p| p.version == at.version)
            })
            .cloned()
            .collect()
    }

    /// One entry per pin of `lock`. A tool that cannot be had is said on
    /// stderr in one line and counted as asking for nothing, so the rest
    /// of the picture is still shown.
    pub fn capabilities(&mut self, lock: Option<&Lockfile>) -> Vec<ToolCapabilities> {
        let Some(lock) = lock else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, pin) in &lock.tools {
            let at = ToolAt {
                name: name.clone(),
                version: pin.version.clone(),
            };
            if let Some(known) = self.known.get(&at) {
                out.push(known.clone());
                continue;
            }
            let expected = pin.hash;
            let caps = match fetch_tool(
                &mut self.fetcher,
                name,
                &pin.version,
                expected,
                self.dir.path(),
            ) {
                // Named as the lock names it, as the registry's picture is.
                Ok(tool) => ToolCapabilities {
                    tool: at.clone(),
                    evidence: tool.artifact.evidence,
                    ..ToolCapabilities::of(&tool.spec)
                },
                Err(e) => {
                    self.unreadable.insert(at.clone());
                    eprintln!(
                        "{} tool {at} could not be read ({}); counted as asking for no capabilities",
                        self.fetcher.env.out.yellow("warning:"),
                        crate::client::one_line(&format!("{e:#}"))
                    );
                    ToolCapabilities {
                        tool: at.clone(),
                        capabilities: Vec::new(),
                        evidence: None,
                    }
                }
            };
            self.known.insert(at, caps.clone());
            out.push(caps);
        }
        out
    }
}

/// What `install` was asked to do.
#[derive(Debug)]
pub struct InstallRequest<'a> {
    pub wanted: &'a PackageReq,
    pub dir: &'a Path,
    pub frozen: bool,
    /// Replace the installed version even when the new one can do more.
    pub accept_risk: bool,
    pub host: Option<&'a HostProfile>,
    /// The prompt key of a sealed agent, instead of a grant's.
    pub prompt_key: Option<&'a Path>,
}

/// How an install ended.
#[derive(Debug)]
pub struct Installed {
    pub install: LoadedInstall,
    /// False when DIR already held exactly this install (a no-op).
    pub changed: bool,
    /// The agent version DIR held before, when it was replaced.
    pub replaced: Option<Version>,
    /// What changed in what the agent can do, when a version was replaced.
    pub trust_diff: Option<agentlang_core::trust::TrustDiff>,
    pub host: Option<HostReport>,
}

fn host_check(host: Option<&HostProfile>, install: &LoadedInstall) -> Result<Option<HostReport>> {
    let Some(host) = host else {
        return Ok(None);
    };
    let requests = agentlang_core::host::requests(&install.package, &install.tool_specs());
    let report = agentlang_core::host::check(host, &requests);
    if let Some(refusal) = report.refusal_summary() {
        bail!("{refusal}");
    }
    Ok(Some(report))
}

/// The nearest folder of `path` (itself or an ancestor) that exists.
fn existing_ancestor(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    loop {
        if p.is_dir() {
            return p;
        }
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent.to_path_buf(),
            _ => return PathBuf::from("."),
        }
    }
}

/// Installs `wanted` into `dir` (see the module documentation).
pub fn install(env: &Env, req: &InstallRequest<'_>) -> Result<Installed> {
    let wanted = req.wanted;
    let dir = req.dir;
    let mut fetcher = Fetcher {
        env,
        client: env.anonymous()?,
        keys: HashMap::new(),
    };
    let index = fetcher.index(Kind::Agent, &wanted.name)?;
    let (entry, held) = pick_released(
        wanted.name.as_str(),
        &index.versions,
        wanted.req.as_ref(),
        env.min_release_age,
    )?;
    if let Some(age) = env.min_release_age {
        let listed: Vec<String> = held
            .iter()
            .map(|e| {
                let at = e.published_at.as_deref().unwrap_or("recently");
                format!("{}@{} (published {at})", wanted.name, e.version)
            })
            .collect();
        if let Some(note) = crate::release_age::held_back_note(age, &listed, listed.len()) {
            crate::output::note(&note);
        }
    }
    let expected = entry.digest()?;
    let version = entry.version.clone();
    let asked = match &wanted.req {
        Some(r) => format!("{}@{r}", wanted.name),
        None => wanted.name.to_string(),
    };

    let existing = dir.join(MANIFEST_FILE).exists();
    let mut replaced = None;
    // What the version being replaced can do, when its install is intact.
    let mut previous = None;
    if existing {
        let current = InstallManifest::read(dir)?;
        let same = current.agent.name.normalized() == wanted.name.normalized()
            && current.agent.version == version
            && current.agent.sha256 == expected;
        if !same && req.frozen {
            bail!(
                "{} holds {}@{}, but the registry now resolves {asked} to {version} ({}); refusing to change it (--frozen)",
                dir.display(),
                current.agent.name,
                current.agent.version,
                expected.hex()
            );
        }
        // A damaged install of the same version is installed again.
        if same && let (_, Some(install)) = verify_dir(dir) {
            let host = host_check(req.host, &install)?;
            return Ok(Installed {
                install,
                changed: false,
                replaced: None,
                trust_diff: None,
                host,
            });
        }
        replaced = Some(current.agent.version);
        previous = verify_dir(dir).1.map(|old| old.trust());
    } else if req.frozen {
        bail!(
            "{} holds no install to keep (--frozen installs only what is already there)",
            dir.display()
        );
    } else if dir.exists()
        && fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} exists and is not an install directory; choose another --dir",
            dir.display()
        );
    }

    // Everything goes into a folder beside DIR, renamed into place at the
    // end; dropping it on any failure removes it.
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    let stage_in = existing_ancestor(parent);
    let staging = tempfile::Builder::new()
        .prefix(".agentlang-install-")
        .tempdir_in(&stage_in)
        .with_context(|| format!("creating a temporary folder in {}", stage_in.display()))?;

    let agent_rel = MemberPath::new(format!("{AGENT_DIR}/{}@{version}.agent", wanted.name))
        .context("the agent's file name")?;
    let (agent_artifact, agent) = fetcher.fetch(
        Kind::Agent,
        &wanted.name,
        &version,
        expected,
        staging.path(),
        &agent_rel,
    )?;
    let package = match validate_package(Kind::Agent, &Members::from_container(&agent)) {
        Ok(Package::Agent(pkg)) => *pkg,
        Ok(Package::Tool(_) | Package::Protocol(_) | Package::Skill(_)) => {
            bail!("{} is not an agent", wanted.name)
        }
        Err(d) => bail!(
            "{}@{version} is not a valid agent: {}",
            wanted.name,
            d.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    let label = format!("{}@{version}", wanted.name);
    judge_lock(
        &fetcher,
        &label,
        &package,
        &MemberHashes::from_manifest(agent.manifest()),
    )?;
    // Its bundled resources, where a runtime finds them.
    unpack_context(
        &staging.path().join(agent_rel.as_str()),
        agent.manifest(),
        staging.path(),
    )?;

    // A sealed prompt is opened now (a grant fetched and kept, or the key
    // given), so an install is one that runs.
    if agent
        .manifest()
        .file(agentlang_core::container::ENCRYPTED_PROMPT_PATH)
        .is_some()
    {
        crate::grants::open_sealed_prompt(env, req.prompt_key, &agent, package.lock.as_ref())?;
    }

    let tools = locked_tools(&mut fetcher, &package, staging.path())?;
    let skills = locked_skills(&mut fetcher, &package, staging.path())?;

    let manifest = InstallManifest {
        format: FORMAT.to_owned(),
        registry: env.ctx.registry.clone(),
        requested: asked,
        installed_at: OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap_or_else(|_| OffsetDateTime::now_utc())
            .format(&Rfc3339)
            .unwrap_or_default(),
        agent: agent_artifact,
        tools: tools.iter().map(|t| t.artifact.clone()).collect(),
        skills: skills.iter().map(|s| s.artifact.clone()).collect(),
    };
    let mut install = LoadedInstall {
        dir: dir.to_path_buf(),
        manifest,
        agent,
        package,
        tools,
        skills,
    };
    // The host decides before anything is put in place.
    let host = host_check(req.host, &install)?;
    // A new version that can do more replaces the old only when accepted.
    let trust_diff = previous.map(|old| agentlang_core::trust::diff(&old, &install.trust()));
    if let Some(d) = trust_diff.as_ref().filter(|d| d.raises_risk())
        && !req.accept_risk
    {
        if !env.out.json {
            for line in crate::trust::render_diff(&env.out, d) {
                eprintln!("{line}");
            }
        }
        bail!(
            "{}@{version} can do more than the installed {}, so {} was left as it was; review the changes and run again with --accept-risk to install it",
            wanted.name,
            replaced
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            dir.display()
        );
    }

    let text =
        serde_json::to_vec_pretty(&install.manifest).context("serializing the install manifest")?;
    let manifest_path = staging.path().join(MANIFEST_FILE);
    let mut file = fs::File::create(&manifest_path)
        .with_context(|| format!("writing {}", manifest_path.display()))?;
    file.write_all(&text)
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", manifest_path.display()))?;
    drop(file);

    put_in_place(staging, dir)?;
    install.dir = dir.to_path_buf();
    Ok(Installed {
        install,
        changed: true,
        replaced,
        trust_diff,
        host,
    })
}

/// Renames the finished staging folder to `dir`. An old install there is
/// first moved aside (and removed after), so readers see the old install or
/// the new one, never a mix.
fn put_in_place(staging: tempfile::TempDir, dir: &Path) -> Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let old = if dir.join(MANIFEST_FILE).exists() {
        let aside = tempfile::Builder::new()
            .prefix(".agentlang-old-")
            .tempdir_in(
                dir.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or_else(|| Path::new(".")),
            )
            .context("making room for the old install")?;
        let target = aside.path().join("install");
        fs::rename(dir, &target)
            .with_context(|| format!("moving the old {} aside", dir.display()))?;
        Some(aside)
    } else {
        if dir.exists() {
            // An empty folder the user made for the install.
            fs::remove_dir(dir)
                .with_context(|| format!("replacing the empty {}", dir.display()))?;
        }
        None
    };
    let staged = staging.keep();
    if let Err(e) = fs::rename(&staged, dir) {
        // Put the old install back, and remove the new one.
        if let Some(aside) = &old {
            let _ = fs::rename(aside.path().join("install"), dir);
        }
        let _ = fs::remove_dir_all(&staged);
        return Err(e).with_context(|| format!("moving the install into {}", dir.display()));
    }
    drop(old);
    Ok(())
}
