//! A whole package validated from its members: for an agent, agent.yaml,
//! its co-located subagents, skills, ux.yaml, prompt.yaml and agent.lock,
//! together, so cross-file references (crew paths, skill names, skill tool
//! lists, ux tool names) are checked too; for a tool, tool.yaml and the
//! files it names. Every diagnostic carries the file it is in.
//!
//! [`validate_package`] is the one entry point: `agentlang validate`,
//! `agentlang build` and the registry's publish all call it, the CLI with a
//! directory read into a [`SourceTree`], the registry with a verified
//! [`Container`] (whose manifest lists every member and which keeps in
//! memory the members validation reads, see
//! [`crate::container::is_kept_member`]). Both are seen through
//! [`Members`], so the two cannot disagree on what a package is.
//!
//! Subagent discovery: every `*.yaml` / `*.yml` file in the package except
//! the known files at the root (agent.yaml, prompt.yaml, ux.yaml) and
//! anything under `skills/` or `context/` (bundled resources), plus every
//! path a static crew names. This covers both layouts the spec shows:
//! specialists beside agent.yaml and under `specialists/`.

use std::collections::BTreeMap;

use semver::VersionReq;
use serde::Serialize;

use crate::Kind;
use crate::agent::{AgentSpec, DELEGATE_TOOL, Discovery, ToolConfig, parse_agent, parse_subagent};
use crate::agentskills::{SkillDoc, parse_skill_doc};
use crate::container::Container;
use crate::diagnostics::{Diagnostics, index, join};
use crate::lockfile::Lockfile;
use crate::lockfile::{MAX_LOCKED_SKILLS, MAX_LOCKED_TOOLS};
use crate::names::PackageName;
use crate::prompt::parse_prompt;
use crate::protocols::{PROTOCOL_FILE, ProtocolSpec, parse_protocol};
use crate::skill::{SKILL_FILE, Skill, parse_skill};
use crate::tool::{ToolSpec, parse_tool};
use crate::tree::{MemberPath, SourceTree};
use crate::ux::{UxHints, parse_ux};

pub const AGENT_FILE: &str = "agent.yaml";
pub const PROMPT_FILE: &str = "prompt.yaml";
pub const ENCRYPTED_PROMPT_FILE: &str = "prompt.yaml.enc";
pub const UX_FILE: &str = "ux.yaml";
pub const LOCK_FILE: &str = "agent.lock";
pub const TOOL_FILE: &str = "tool.yaml";
const SKILLS_DIR: &str = "skills/";
const CONTEXT_DIR: &str = "context/";

/// A package's members as validation sees them: the path of every member,
/// with the bytes of those it can read. A directory gives all bytes; a
/// container gives the bytes of its kept members and, for the others, only
/// that they exist (the manifest's file list).
#[derive(Debug, Clone, Default)]
pub struct Members<'a> {
    /// By path, so lookups take a `&str`.
    files: BTreeMap<&'a str, (&'a MemberPath, Option<&'a [u8]>)>,
}

impl<'a> Members<'a> {
    /// A package directory read into memory.
    pub fn from_tree(tree: &'a SourceTree) -> Self {
        Self {
            files: tree
                .iter()
                .map(|(p, b)| (p.as_str(), (p, Some(b))))
                .collect(),
        }
    }

    /// A verified container: every member its manifest lists (so
    /// `manifest.json` and `signature.sig` are not members), with the bytes
    /// of the kept ones.
    pub fn from_container(container: &'a Container) -> Self {
        Self {
            files: container
                .manifest()
                .files()
                .iter()
                .map(|f| {
                    let bytes = container.member(f.path.as_str());
                    (f.path.as_str(), (&f.path, bytes))
                })
                .collect(),
        }
    }

    /// The bytes of a member, when it exists and its bytes are at hand.
    pub fn get(&self, path: &str) -> Option<&'a [u8]> {
        self.files.get(path).and_then(|(_, bytes)| *bytes)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    pub fn paths(&self) -> impl Iterator<Item = &'a MemberPath> + '_ {
        self.files.values().map(|(path, _)| *path)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The bytes of a member validation must read. A member that exists but
    /// whose bytes were not kept is a problem of its own (it cannot happen
    /// with the container reader's keep rules, which cover every file
    /// validation reads), never a silent pass.
    fn read(&self, path: &MemberPath, diags: &mut Diagnostics) -> Option<&'a [u8]> {
        let bytes = self.get(path.as_str());
        if bytes.is_none() && self.contains(path.as_str()) {
            let mut d = Diagnostics::new();
            d.push("", "the member's bytes are not available to validation");
            diags.extend(d.in_file(path.as_str()));
        }
        bytes
    }
}

/// A validated package of either kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Package {
    Agent(Box<AgentPackage>),
    Tool(Box<ToolPackage>),
    Protocol(Box<ProtocolPackage>),
    Skill(Box<SkillPackage>),
}

/// A validated skill package: its SKILL.md, held to the Agent Skills
/// specification; the other members (scripts, references, assets) are its
/// resources, bounded like every package's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillPackage {
    pub skill: SkillDoc,
}

/// A validated protocol package: its `protocol.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolPackage {
    pub protocol: ProtocolSpec,
}

/// A validated tool directory or container.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolPackage {
    pub tool: ToolSpec,
}

/// The package's kind by its definition file: agent.yaml, tool.yaml,
/// protocol.yaml or a top-level SKILL.md, exactly one of them. `None` when
/// none or several are there.
pub fn detect_kind(members: &Members<'_>) -> Option<Kind> {
    match (
        members.contains(AGENT_FILE),
        members.contains(TOOL_FILE),
        members.contains(PROTOCOL_FILE),
        members.contains(SKILL_FILE),
    ) {
        (true, false, false, false) => Some(Kind::Agent),
        (false, true, false, false) => Some(Kind::Tool),
        (false, false, true, false) => Some(Kind::Protocol),
        (false, false, false, true) => Some(Kind::Skill),
        _ => None,
    }
}

/// Validates a package of `kind` from its members: every rule of every
/// file, and the references between files. The one function behind
/// `agentlang validate`, `agentlang build` and the registry's publish.
pub fn validate_package(kind: Kind, members: &Members<'_>) -> Result<Package, Diagnostics> {
    match kind {
        Kind::Agent => validate_agent(members).map(|p| Package::Agent(Box::new(p))),
        Kind::Tool => validate_tool(members).map(|p| Package::Tool(Box::new(p))),
        Kind::Protocol => validate_protocol(members).map(|p| Package::Protocol(Box::new(p))),
        Kind::Skill => validate_skill(members).map(|p| Package::Skill(Box::new(p))),
    }
}

/// A skill package's SKILL.md, to the Agent Skills specification
/// ([`crate::agentskills`]).
pub fn validate_skill(members: &Members<'_>) -> Result<SkillPackage, Diagnostics> {
    let mut diags = Diagnostics::new();
    let Some(bytes) = MemberPath::new(SKILL_FILE)
        .ok()
        .and_then(|p| members.read(&p, &mut diags))
    else {
        if diags.is_empty() {
            diags.push("", "the package has no SKILL.md");
        }
        return Err(diags.in_file(SKILL_FILE));
    };
    let skill = parse_skill_doc(bytes).map_err(|d| d.in_file(SKILL_FILE))?;
    Ok(SkillPackage { skill })
}

/// protocol.yaml.
pub fn validate_protocol(members: &Members<'_>) -> Result<ProtocolPackage, Diagnostics> {
    let mut diags = Diagnostics::new();
    let Some(bytes) = MemberPath::new(PROTOCOL_FILE)
        .ok()
        .and_then(|p| members.read(&p, &mut diags))
    else {
        if diags.is_empty() {
            diags.push("", "the package has no protocol.yaml");
        }
        return Err(diags.in_file(PROTOCOL_FILE));
    };
    let protocol = parse_protocol(bytes).map_err(|d| d.in_file(PROTOCOL_FILE))?;
    Ok(ProtocolPackage { protocol })
}

/// tool.yaml, and the README it names must be a member.
pub fn validate_tool(members: &Members<'_>) -> Result<ToolPackage, Diagnostics> {
    let mut diags = Diagnostics::new();
    let Some(bytes) = MemberPath::new(TOOL_FILE)
        .ok()
        .and_then(|p| members.read(&p, &mut diags))
    else {
        if diags.is_empty() {
            diags.push("", "the package has no tool.yaml");
        }
        return Err(diags.in_file(TOOL_FILE));
    };
    let tool = parse_tool(bytes).map_err(|d| d.in_file(TOOL_FILE))?;
    if let Some(readme) = tool.readme().filter(|r| !members.contains(r.as_str())) {
        diags.push("readme", format!("{readme} is not a file in the package"));
        return Err(diags.in_file(TOOL_FILE));
    }
    Ok(ToolPackage { tool })
}

/// A validated agent directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentPackage {
    pub agent: AgentSpec,
    /// Co-located subagents by their file path.
    pub subagents: BTreeMap<MemberPath, AgentSpec>,
    /// Skills by name (the name of their directory under `skills/`).
    pub skills: BTreeMap<PackageName, Skill>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ux: Option<UxHints>,
    /// agent.lock, when the package carries one (parsed only; how it
    /// relates to the files and the registry is [`crate::lockcheck`]'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<Lockfile>,
}

impl AgentPackage {
    /// Registry tools the whole package needs (agent and subagents), each
    /// with the conjunction of every requirement stated for it: `^1.2.0` in
    /// one file and `<1.5.0` in another resolve as `^1.2.0, <1.5.0`. `None`
    /// when no file constrains the version.
    pub fn tool_requirements(&self) -> BTreeMap<PackageName, Option<VersionReq>> {
        merge_requirements(
            std::iter::once(&self.agent)
                .chain(self.subagents.values())
                .flat_map(AgentSpec::tool_requirements),
        )
    }

    /// Published skills the whole package needs (`skills:` entries with a
    /// `version`, the agent's and its subagents'), requirements merged as
    /// tools' are.
    pub fn skill_requirements(&self) -> BTreeMap<PackageName, VersionReq> {
        merge_requirements(
            std::iter::once(&self.agent)
                .chain(self.subagents.values())
                .flat_map(|a| {
                    a.skill_requirements()
                        .into_iter()
                        .map(|(n, r)| (n, Some(r)))
                }),
        )
        .into_iter()
        .map(|(n, r)| (n, r.unwrap_or(VersionReq::STAR)))
        .collect()
    }
}

/// Requirements stated in several files, one per name: the conjunction of
/// every one stated (`None`: unconstrained).
fn merge_requirements(
    stated: impl Iterator<Item = (PackageName, Option<VersionReq>)>,
) -> BTreeMap<PackageName, Option<VersionReq>> {
    let mut merged: BTreeMap<PackageName, Option<VersionReq>> = BTreeMap::new();
    for (name, req) in stated {
        let slot = merged.entry(name).or_default();
        *slot = match (slot.take(), req) {
            (Some(mut a), Some(b)) => {
                for c in b.comparators {
                    if !a.comparators.contains(&c) {
                        a.comparators.push(c);
                    }
                }
                Some(a)
            }
            (a, b) => a.or(b),
        };
    }
    merged
}

fn is_yaml(path: &MemberPath) -> bool {
    let name = path.file_name();
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// Files that are subagents by discovery (see the module docs).
fn discovered_subagents<'a>(members: &'a Members<'_>) -> impl Iterator<Item = &'a MemberPath> {
    members.paths().filter(|p| {
        is_yaml(p)
            && ![AGENT_FILE, PROMPT_FILE, UX_FILE].contains(&p.as_str())
            && !p.as_str().starts_with(SKILLS_DIR)
            && !p.as_str().starts_with(CONTEXT_DIR)
    })
}

/// Validates an agent directory read into memory as a whole.
pub fn validate_agent_tree(tree: &SourceTree) -> Result<AgentPackage, Diagnostics> {
    validate_agent(&Members::from_tree(tree))
}

fn member(path: &str) -> MemberPath {
    MemberPath::new(path).expect("the package's fixed file names are member paths")
}

/// Validates an agent package as a whole.
pub fn validate_agent(members: &Members<'_>) -> Result<AgentPackage, Diagnostics> {
    let mut diags = Diagnostics::new();

    let agent = match members.read(&member(AGENT_FILE), &mut diags) {
        Some(bytes) => parse_agent(bytes)
            .map_err(|d| diags.extend(d.in_file(AGENT_FILE)))
            .ok(),
        None if members.contains(AGENT_FILE) => None,
        None => {
            let mut d = Diagnostics::new();
            d.push("", "the package has no agent.yaml");
            diags.extend(d.in_file(AGENT_FILE));
            None
        }
    };

    match members.read(&member(PROMPT_FILE), &mut diags) {
        // PromptLang rules, not just well-formed YAML: a prompt that would
        // not compile is refused before it is built or published.
        Some(bytes) => match parse_prompt(bytes) {
            Err(d) => diags.extend(d.in_file(PROMPT_FILE)),
            // Its `{{variables}}` are provided: where the plaintext is, so
            // not at a publish of an encrypted prompt.
            Ok(prompt) => {
                if let Some(a) = &agent {
                    let inject = a.context.as_ref().map_or(&[][..], |c| c.inject.as_slice());
                    diags.extend(
                        crate::prompt::check_template_variables(&prompt, inject)
                            .in_file(PROMPT_FILE),
                    );
                }
            }
        },
        // A built container carries the prompt encrypted; the registry
        // cannot read it, only check it is there.
        None if members.contains(ENCRYPTED_PROMPT_FILE) || members.contains(PROMPT_FILE) => {}
        None => {
            let mut d = Diagnostics::new();
            d.push("", "the package has no prompt.yaml");
            diags.extend(d.in_file(PROMPT_FILE));
        }
    }

    // Subagents: discovered files plus crew paths.
    let mut subagent_paths: Vec<MemberPath> = discovered_subagents(members).cloned().collect();
    // Membership by set: a crew of thousands against thousands of files
    // stays linear.
    let mut known: std::collections::BTreeSet<MemberPath> =
        subagent_paths.iter().cloned().collect();
    if let Some(crew) = agent.as_ref().and_then(|a| a.delegate.as_ref()) {
        let mut missing = Diagnostics::new();
        for (i, member) in crew.agents.iter().enumerate() {
            let path = member.member_path();
            match path {
                Some(p) if members.contains(p.as_str()) => {
                    if known.insert(p.clone()) {
                        subagent_paths.push(p);
                    }
                }
                _ => missing.push(
                    join(&index("delegate.agents", i), "path"),
                    format!("{:?} is not a file in the package", member.path),
                ),
            }
        }
        diags.extend(missing.in_file(AGENT_FILE));
    }
    let mut subagents = BTreeMap::new();
    for path in subagent_paths {
        let Some(bytes) = members.read(&path, &mut diags) else {
            continue;
        };
        match parse_subagent(bytes) {
            Ok(spec) => {
                subagents.insert(path, spec);
            }
            Err(d) => diags.extend(d.in_file(path.as_str())),
        }
    }

    // Names are unique across the package: the lockfile keys subagents by
    // name, and delegation routes by it.
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    if let Some(a) = &agent {
        names.insert(a.name.normalized(), AGENT_FILE.to_owned());
    }
    for (path, spec) in &subagents {
        if let Some(first) = names.get(&spec.name.normalized()) {
            let mut d = Diagnostics::new();
            d.push(
                "name",
                format!(
                    "agent name {:?} is already used by {first}",
                    spec.name.as_str()
                ),
            );
            diags.extend(d.in_file(path.as_str()));
        } else {
            names.insert(spec.name.normalized(), path.to_string());
        }
    }

    if let Some(a) = &agent {
        // Child budgets of a static crew fit the parent's (core::constraints).
        diags.extend(crate::constraints::check_crew_budgets(a, &subagents).in_file(AGENT_FILE));
        // And so does each specialist the delegate tool may pick; each
        // problem is in the subagent's own file.
        diags.extend(crate::constraints::check_dynamic_budgets(a, &subagents));
        let mut d = Diagnostics::new();
        for (i, t) in a.tools.iter().enumerate() {
            if let Some(ToolConfig::Delegate(cfg)) = &t.config
                && cfg.discovery == Some(Discovery::Directory)
                && subagents.is_empty()
            {
                d.push(
                    join(&join(&index("tools", i), "config"), "discovery"),
                    format!(
                        "{DELEGATE_TOOL} discovers co-located subagents, but the package has none"
                    ),
                );
            }
        }
        diags.extend(d.in_file(AGENT_FILE));
    }

    let skills = read_skills(members, &mut diags);
    check_skill_refs(agent.as_ref(), &subagents, &skills, &mut diags);

    let ux = members
        .read(&member(UX_FILE), &mut diags)
        .and_then(|bytes| match parse_ux(bytes) {
            Ok(ux) => Some(ux),
            Err(d) => {
                diags.extend(d.in_file(UX_FILE));
                None
            }
        });
    if let (Some(ux), Some(a)) = (&ux, &agent) {
        diags.extend(check_ux(ux, a).in_file(UX_FILE));
    }

    // The lock's shape is part of the package; whether it matches the
    // files and the registry is checked by `lockcheck` where those are known.
    let lock = members
        .read(&member(LOCK_FILE), &mut diags)
        .and_then(|bytes| match Lockfile::from_slice(bytes) {
            Ok(lock) if lock.tools.len() > MAX_LOCKED_TOOLS => {
                let mut d = Diagnostics::new();
                d.push(
                    "tools",
                    format!(
                        "agent.lock pins {} tools; at most {MAX_LOCKED_TOOLS} are allowed",
                        lock.tools.len()
                    ),
                );
                diags.extend(d.in_file(LOCK_FILE));
                None
            }
            Ok(lock) if lock.skills.len() > MAX_LOCKED_SKILLS => {
                let mut d = Diagnostics::new();
                d.push(
                    "skills",
                    format!(
                        "agent.lock pins {} skills; at most {MAX_LOCKED_SKILLS} are allowed",
                        lock.skills.len()
                    ),
                );
                diags.extend(d.in_file(LOCK_FILE));
                None
            }
            Ok(lock) => Some(lock),
            Err(e) => {
                let mut d = Diagnostics::new();
                d.push("", e.to_string());
                diags.extend(d.in_file(LOCK_FILE));
                None
            }
        });

    match agent {
        Some(agent) if diags.is_empty() => Ok(AgentPackage {
            agent,
            subagents,
            skills,
            ux,
            lock,
        }),
        _ => Err(diags),
    }
}

/// Every `skills/<dir>/SKILL.md`; the frontmatter name must match `<dir>`.
fn read_skills(members: &Members<'_>, diags: &mut Diagnostics) -> BTreeMap<PackageName, Skill> {
    let mut skills = BTreeMap::new();
    for path in members.paths() {
        let Some(rest) = path.as_str().strip_prefix(SKILLS_DIR) else {
            continue;
        };
        let Some((dir, file)) = rest.split_once('/') else {
            continue;
        };
        if file != SKILL_FILE {
            continue;
        }
        let Some(bytes) = members.read(path, diags) else {
            continue;
        };
        match parse_skill(bytes) {
            Ok(skill) if skill.name.as_str() != dir => {
                let mut d = Diagnostics::new();
                d.push(
                    "name",
                    format!(
                        "skill name {:?} does not match its directory skills/{dir}",
                        skill.name.as_str()
                    ),
                );
                diags.extend(d.in_file(path.as_str()));
            }
            Ok(skill) => {
                skills.insert(skill.name.clone(), skill);
            }
            Err(d) => diags.extend(d.in_file(path.as_str())),
        }
    }
    skills
}

/// Every referenced skill exists, and its `allowed-tools` are tools the
/// referencing agent declares. A skill no agent references is checked
/// against the top-level agent.
fn check_skill_refs(
    agent: Option<&AgentSpec>,
    subagents: &BTreeMap<MemberPath, AgentSpec>,
    skills: &BTreeMap<PackageName, Skill>,
    diags: &mut Diagnostics,
) {
    let agents: Vec<(&str, &AgentSpec)> = agent
        .map(|a| (AGENT_FILE, a))
        .into_iter()
        .chain(subagents.iter().map(|(p, s)| (p.as_str(), s)))
        .collect();
    let mut referenced: BTreeMap<&PackageName, Vec<(&str, &AgentSpec)>> = BTreeMap::new();
    for (file, spec) in &agents {
        let mut d = Diagnostics::new();
        for (i, s) in spec.skills.iter().enumerate() {
            if let Some(req) = &s.version {
                // One name, two skills: which one the agent gets would be a
                // guess, so neither is taken.
                if skills.contains_key(&s.name) {
                    d.push(
                        join(&index("skills", i), "version"),
                        format!(
                            "skill {:?} is both the published skill {} {req} and the co-located skills/{}/SKILL.md; drop `version` to use the folder, or remove the folder to use the package",
                            s.name.as_str(),
                            s.name,
                            s.name
                        ),
                    );
                }
            } else if skills.contains_key(&s.name) {
                referenced.entry(&s.name).or_default().push((file, spec));
            } else {
                d.push(
                    join(&index("skills", i), "name"),
                    format!(
                        "skill {:?} has no skills/{}/SKILL.md",
                        s.name.as_str(),
                        s.name
                    ),
                );
            }
        }
        diags.extend(d.in_file(file));
    }
    for (name, skill) in skills {
        let users = referenced
            .get(name)
            .cloned()
            .unwrap_or_else(|| agent.map(|a| (AGENT_FILE, a)).into_iter().collect());
        let mut d = Diagnostics::new();
        for (i, tool) in skill.allowed_tools.iter().enumerate() {
            for (file, spec) in &users {
                if !spec.can_call(tool) {
                    d.push(
                        index("allowed-tools", i),
                        format!("{tool:?} is not a tool {file} declares"),
                    );
                }
            }
        }
        diags.extend(d.in_file(&format!("{SKILLS_DIR}{name}/{SKILL_FILE}")));
    }
}

/// ux.yaml's tool hints name tools the agent declares, and its MCP hints
/// name declared servers and (when whitelisted) their tools.
fn check_ux(ux: &UxHints, agent: &AgentSpec) -> Diagnostics {
    let mut d = Diagnostics::new();
    for name in ux.tools.keys() {
        if !agent.can_call(name) {
            d.push(
                join("tools", name),
                format!("{name:?} is not a tool agent.yaml declares"),
            );
        }
    }
    for (server, tools) in &ux.mcp_tools {
        let sp = join("mcp_tools", server);
        let Some(decl) = agent.mcp_servers.get(server) else {
            d.push(
                &sp,
                format!("{server:?} is not an MCP server agent.yaml declares"),
            );
            continue;
        };
        if let Some(whitelist) = &decl.tools {
            for tool in tools.keys() {
                if !whitelist.contains(tool) {
                    d.push(
                        join(&sp, tool),
                        format!("{tool:?} is not in the tools whitelist of MCP server {server:?}"),
                    );
                }
            }
        }
    }
    d
}
