//! A package directory on disk as the build sees it: which kind it is, and
//! which of its files go into the container. DESIGN.md lists the members:
//! for an agent `agent.yaml`, `prompt.yaml`, `agent.lock`, its co-located
//! subagents, `skills/**`, `ux.yaml` and `context/**`; for a tool
//! `tool.yaml` and its README; for a protocol `protocol.yaml` and
//! `README.md`. Anything else (notes, scripts, test data) is left out and
//! named, so nothing leaks into a published package unseen.

use agentlang_core::{
    Kind, MemberPath, SourceTree,
    package::{AGENT_FILE, AgentPackage, LOCK_FILE, PROMPT_FILE, UX_FILE},
};

use anyhow::{Result, bail};

pub const TOOL_FILE: &str = "tool.yaml";
pub use agentlang_core::protocols::PROTOCOL_FILE;
pub const README_FILE: &str = "README.md";
pub use agentlang_core::skill::SKILL_FILE;

/// An agent directory holds agent.yaml, a tool directory tool.yaml, a
/// protocol directory protocol.yaml, a skill directory SKILL.md; exactly
/// one of them.
pub fn detect_kind(tree: &SourceTree, shown: &str) -> Result<Kind> {
    let found: Vec<(Kind, &str)> = [
        (Kind::Agent, AGENT_FILE),
        (Kind::Tool, TOOL_FILE),
        (Kind::Protocol, PROTOCOL_FILE),
        (Kind::Skill, SKILL_FILE),
    ]
    .into_iter()
    .filter(|(_, file)| tree.contains(file))
    .collect();
    match found.as_slice() {
        [(kind, _)] => Ok(*kind),
        [] => bail!(
            "{shown} holds neither agent.yaml nor tool.yaml (nor protocol.yaml, nor SKILL.md)"
        ),
        many => bail!(
            "{shown} holds both {}; a package is one or the other",
            many.iter()
                .map(|(_, f)| *f)
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    }
}

/// What a protocol container carries: protocol.yaml and README.md.
pub fn protocol_members(tree: &SourceTree) -> (SourceTree, Vec<MemberPath>) {
    split(tree, |path| {
        [PROTOCOL_FILE, README_FILE].contains(&path.as_str())
    })
}

/// Splits a tree into what an agent container carries and what it leaves out.
pub fn agent_members(tree: &SourceTree, pkg: &AgentPackage) -> (SourceTree, Vec<MemberPath>) {
    split(tree, |path| {
        let p = path.as_str();
        [AGENT_FILE, PROMPT_FILE, LOCK_FILE, UX_FILE].contains(&p)
            || p.starts_with("skills/")
            || p.starts_with("context/")
            || pkg.subagents.contains_key(path)
    })
}

/// Splits a tree into what a tool container carries: tool.yaml and its
/// README (the one tool.yaml names, else `README.md` when present).
pub fn tool_members(
    tree: &SourceTree,
    readme: Option<&MemberPath>,
) -> (SourceTree, Vec<MemberPath>) {
    split(tree, |path| {
        let p = path.as_str();
        p == TOOL_FILE
            || match readme {
                Some(r) => r == path,
                None => p == README_FILE,
            }
    })
}

fn split(tree: &SourceTree, keep: impl Fn(&MemberPath) -> bool) -> (SourceTree, Vec<MemberPath>) {
    let mut kept = SourceTree::new();
    let mut left_out = Vec::new();
    for (path, bytes) in tree.iter() {
        if keep(path) {
            kept.insert(path.clone(), bytes.to_vec());
        } else {
            left_out.push(path.clone());
        }
    }
    (kept, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(paths: &[&str]) -> SourceTree {
        paths
            .iter()
            .map(|p| (MemberPath::new(*p).unwrap(), p.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn kind_comes_from_the_definition_file() {
        assert_eq!(
            detect_kind(&tree(&["agent.yaml"]), "d").unwrap(),
            Kind::Agent
        );
        assert_eq!(
            detect_kind(&tree(&["tool.yaml", "README.md"]), "d").unwrap(),
            Kind::Tool
        );
        let both = detect_kind(&tree(&["agent.yaml", "tool.yaml"]), "d").unwrap_err();
        assert!(both.to_string().contains("both"), "{both}");
        let none = detect_kind(&tree(&["notes.md"]), "d").unwrap_err();
        assert!(none.to_string().contains("neither"), "{none}");
        assert_eq!(
            detect_kind(&tree(&["protocol.yaml"]), "d").unwrap(),
            Kind::Protocol
        );
        let both = detect_kind(&tree(&["tool.yaml", "protocol.yaml"]), "d").unwrap_err();
        assert!(
            both.to_string().contains("tool.yaml and protocol.yaml"),
            "{both}"
        );
    }

    #[test]
    fn tool_keeps_tool_yaml_and_its_readme_only() {
        let t = tree(&["tool.yaml", "README.md", "src/main.py", "docs/USAGE.md"]);
        let (kept, out) = tool_members(&t, None);
        assert_eq!(
            kept.paths().map(MemberPath::as_str).collect::<Vec<_>>(),
            ["README.md", "tool.yaml"]
        );
        assert_eq!(
            out.iter().map(MemberPath::as_str).collect::<Vec<_>>(),
            ["docs/USAGE.md", "src/main.py"]
        );

        let named = MemberPath::new("docs/USAGE.md").unwrap();
        let (kept, _) = tool_members(&t, Some(&named));
        assert_eq!(
            kept.paths().map(MemberPath::as_str).collect::<Vec<_>>(),
            ["docs/USAGE.md", "tool.yaml"]
        );
    }
}
