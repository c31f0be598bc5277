//! A whole agent directory: agent.yaml, its co-located subagents, skills,
//! ux.yaml and prompt.yaml, validated together so cross-file references
//! (crew paths, skill names, skill tool lists, ux tool names) are checked
//! too. Every diagnostic carries the file it is in.
//!
//! Subagent discovery: every `*.yaml` / `*.yml` file in the package except
//! the known files at the root (agent.yaml, prompt.yaml, ux.yaml) and
//! anything under `skills/` or `context/` (bundled resources), plus every
//! path a static crew names. This covers both layouts the spec shows:
//! specialists beside agent.yaml and under `specialists/`.

use std::collections::BTreeMap;

use semver::VersionReq;
use serde::Serialize;

use crate::agent::{AgentSpec, DELEGATE_TOOL, Discovery, ToolConfig, parse_agent, parse_subagent};
use crate::diagnostics::{Diagnostics, index, join};
use crate::names::PackageName;
use crate::prompt::parse_prompt;
use crate::skill::{SKILL_FILE, Skill, parse_skill};
use crate::tree::{MemberPath, SourceTree};
use crate::ux::{UxHints, parse_ux};

pub const AGENT_FILE: &str = "agent.yaml";
pub const PROMPT_FILE: &str = "prompt.yaml";
pub const ENCRYPTED_PROMPT_FILE: &str = "prompt.yaml.enc";
pub const UX_FILE: &str = "ux.yaml";
pub const LOCK_FILE: &str = "agent.lock";
const SKILLS_DIR: &str = "skills/";
const CONTEXT_DIR: &str = "context/";

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
}

impl AgentPackage {
    /// Registry tools the whole package needs (agent and subagents), each
    /// with the conjunction of every requirement stated for it: `^1.2.0` in
    /// one file and `<1.5.0` in another resolve as `^1.2.0, <1.5.0`. `None`
    /// when no file constrains the version.
    pub fn tool_requirements(&self) -> BTreeMap<PackageName, Option<VersionReq>> {
        let mut merged: BTreeMap<PackageName, Option<VersionReq>> = BTreeMap::new();
        let specs = std::iter::once(&self.agent).chain(self.subagents.values());
        for (name, req) in specs.flat_map(AgentSpec::tool_requirements) {
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
}

fn is_yaml(path: &MemberPath) -> bool {
    let name = path.file_name();
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// Files that are subagents by discovery (see the module docs).
fn discovered_subagents(tree: &SourceTree) -> impl Iterator<Item = &MemberPath> {
    tree.paths().filter(|p| {
        is_yaml(p)
            && ![AGENT_FILE, PROMPT_FILE, UX_FILE].contains(&p.as_str())
            && !p.as_str().starts_with(SKILLS_DIR)
            && !p.as_str().starts_with(CONTEXT_DIR)
    })
}

/// Validates an agent directory as a whole.
pub fn validate_agent_tree(tree: &SourceTree) -> Result<AgentPackage, Diagnostics> {
    let mut diags = Diagnostics::new();

    let agent = match tree.get(AGENT_FILE) {
        Some(bytes) => parse_agent(bytes)
            .map_err(|d| diags.extend(d.in_file(AGENT_FILE)))
            .ok(),
        None => {
            let mut d = Diagnostics::new();
            d.push("", "the package has no agent.yaml");
            diags.extend(d.in_file(AGENT_FILE));
            None
        }
    };

    match tree.get(PROMPT_FILE) {
        // PromptLang rules, not just well-formed YAML: a prompt that would
        // not compile is refused before it is built or published.
        Some(bytes) => {
            if let Err(d) = parse_prompt(bytes) {
                diags.extend(d.in_file(PROMPT_FILE));
            }
        }
        // A built container carries the prompt encrypted; the registry
        // cannot read it, only check it is there.
        None if tree.contains(ENCRYPTED_PROMPT_FILE) => {}
        None => {
            let mut d = Diagnostics::new();
            d.push("", "the package has no prompt.yaml");
            diags.extend(d.in_file(PROMPT_FILE));
        }
    }

    // Subagents: discovered files plus crew paths.
    let mut subagent_paths: Vec<MemberPath> = discovered_subagents(tree).cloned().collect();
    if let Some(crew) = agent.as_ref().and_then(|a| a.delegate.as_ref()) {
        let mut missing = Diagnostics::new();
        for (i, member) in crew.agents.iter().enumerate() {
            let path = member.member_path();
            match path {
                Some(p) if tree.contains(p.as_str()) => {
                    if !subagent_paths.contains(&p) {
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
        let bytes = tree.get(path.as_str()).unwrap_or_default();
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

    let skills = read_skills(tree, &mut diags);
    check_skill_refs(agent.as_ref(), &subagents, &skills, &mut diags);

    let ux = tree.get(UX_FILE).and_then(|bytes| match parse_ux(bytes) {
        Ok(ux) => Some(ux),
        Err(d) => {
            diags.extend(d.in_file(UX_FILE));
            None
        }
    });
    if let (Some(ux), Some(a)) = (&ux, &agent) {
        diags.extend(check_ux(ux, a).in_file(UX_FILE));
    }

    match agent {
        Some(agent) if diags.is_empty() => Ok(AgentPackage {
            agent,
            subagents,
            skills,
            ux,
        }),
        _ => Err(diags),
    }
}

/// Every `skills/<dir>/SKILL.md`; the frontmatter name must match `<dir>`.
fn read_skills(tree: &SourceTree, diags: &mut Diagnostics) -> BTreeMap<PackageName, Skill> {
    let mut skills = BTreeMap::new();
    for (path, bytes) in tree.iter() {
        let Some(rest) = path.as_str().strip_prefix(SKILLS_DIR) else {
            continue;
        };
        let Some((dir, file)) = rest.split_once('/') else {
            continue;
        };
        if file != SKILL_FILE {
            continue;
        }
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
            if skills.contains_key(&s.name) {
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
