//! `new agent|tool|skill NAME`: a package that validates, builds and publishes as
//! it is, its files commented with where the format is described.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use agentlang_core::PackageName;
use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::{args::NewKind, output::Output};

pub fn run(out: &Output, kind: NewKind, name: &str, path: Option<PathBuf>) -> Result<ExitCode> {
    let name = PackageName::new(name).with_context(|| format!("{name:?} cannot name a package"))?;
    if kind == NewKind::Skill {
        let problems = agentlang_core::agentskills::check_name(name.as_str());
        if !problems.is_empty() {
            bail!(
                "{:?} cannot name a skill: {}",
                name.as_str(),
                problems.join("; ")
            );
        }
    }
    let dir = path.unwrap_or_else(|| PathBuf::from(name.as_str()));
    let files = match kind {
        NewKind::Agent => agent_files(&name),
        NewKind::Tool => tool_files(&name),
        NewKind::Skill => skill_files(&name),
    };
    write_new_dir(&dir, &files)?;
    let shown = dir.display();
    let kind_word = match kind {
        NewKind::Agent => "agent",
        NewKind::Tool => "tool",
        NewKind::Skill => "skill",
    };
    let written: Vec<&str> = files.iter().map(|(file, _)| *file).collect();
    out.emit(
        &json!({"kind": kind_word, "name": name.as_str(), "dir": dir, "files": written}),
        || {
            let sealing = match kind {
                NewKind::Agent => format!(
                    "\n  publish seals its prompt: only you, and the accounts you grant it to\n  (agentlang grant {name} --to USERNAME), can run it; `publish --open` ships\n  the prompt in plaintext for anyone to read and run"
                ),
                NewKind::Tool | NewKind::Skill => String::new(),
            };
            format!(
                "{} created {kind_word} {} in {shown} ({})\n  next: agentlang validate {shown}\n        agentlang publish {shown}{sealing}",
                out.green("✓"),
                out.bold(name.as_str()),
                written.join(", "),
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes every file into `dir`, which must not exist or be empty; on any
/// failure nothing of the package is left behind.
fn write_new_dir(dir: &Path, files: &[(&str, String)]) -> Result<()> {
    let existed = dir.exists();
    if existed
        && std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} already exists and is not empty; choose another NAME or --path",
            dir.display()
        );
    }
    let written = (|| -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (file, text) in files {
            let path = dir.join(file);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    })();
    if written.is_err() {
        for (file, _) in files {
            let _ = std::fs::remove_file(dir.join(file));
        }
        if !existed {
            let _ = std::fs::remove_dir(dir);
        }
    }
    written
}

/// `web-search` → `Web Search`.
fn title_of(name: &PackageName) -> String {
    name.as_str()
        .split(['-', '_'])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn agent_files(name: &PackageName) -> Vec<(&'static str, String)> {
    let title = title_of(name);
    vec![
        (
            "agent.yaml",
            format!(
                "# An AgentLang agent. Every section is described in docs/agent-yaml.md,\n\
                 # served by your registry at /docs/agent-yaml.\n\
                 name: {name}\n\
                 version: 0.1.0\n\
                 title: {title}\n\
                 description: {title} answers questions about one subject, briefly and with sources.\n\
                 category: Productivity\n\
                 \n\
                 # The models the agent runs on; `agentlang lock` records what the\n\
                 # registry knows of each in agent.lock.\n\
                 models:\n  \
                   claude-sonnet-4:\n    \
                     provider: anthropic\n\
                 \n\
                 # Registry tools with SemVer requirements (docs/resolution.md), pinned\n\
                 # with their hashes in agent.lock by `agentlang lock`. For example:\n\
                 # tools:\n\
                 #   - name: web_search\n\
                 #     version: ^1.2.0\n"
            ),
        ),
        (
            "prompt.yaml",
            format!(
                "# The agent's prompt in PromptLang (docs/prompt-yaml.md, /docs/prompt-yaml).\n\
                 # `agentlang build` encrypts it in the container (docs/encryption.md).\n\
                 version: 2\n\
                 role: system\n\
                 sections:\n  \
                   - name: task\n    \
                     content: |\n      \
                       You are {title}. Answer the user's questions about your subject.\n      \
                       Say so when you do not know, and name your sources.\n"
            ),
        ),
        (
            "README.md",
            format!(
                "# {title}\n\n{title} answers questions about one subject, briefly and with sources.\n\n\
                 Check, build and publish it:\n\n\
                 ```sh\nagentlang validate .\nagentlang build .\nagentlang publish .\n```\n"
            ),
        ),
    ]
}

/// SKILL.md to the Agent Skills specification: its frontmatter takes no
/// keys of ours, so the version is `metadata.version` (docs/skill-packages.md).
fn skill_files(name: &PackageName) -> Vec<(&'static str, String)> {
    let title = title_of(name);
    vec![(
        "SKILL.md",
        format!(
            "---\n\
             name: {name}\n\
             description: {title} does one task well. Use it when the user asks for {title}.\n\
             metadata:\n  \
               version: 0.1.0\n\
             ---\n\
             # {title}\n\
             \n\
             An Agent Skills folder (agentskills.io; docs/skill-packages.md, served by\n\
             your registry at /docs/skill-packages). Write the steps an agent follows\n\
             here; put scripts under scripts/ and longer material under references/.\n\
             \n\
             1. Read the user's request.\n\
             2. Do the task, step by step.\n"
        ),
    )]
}

fn tool_files(name: &PackageName) -> Vec<(&'static str, String)> {
    let title = title_of(name);
    vec![
        (
            "tool.yaml",
            format!(
                "# An AgentLang tool. Every field is described in docs/tool-yaml.md,\n\
                 # served by your registry at /docs/tool-yaml.\n\
                 name: {name}\n\
                 version: 0.1.0\n\
                 description: {title} looks up one thing over HTTP and returns it.\n\
                 # builtin, mcp, http or bash: how a runtime provides the tool.\n\
                 kind: http\n\
                 readme: README.md\n\
                 # What the tool takes and gives, as JSON Schemas.\n\
                 input_schema:\n  \
                   type: object\n  \
                   properties:\n    \
                     query:\n      \
                       type: string\n      \
                       description: What to look up\n  \
                   required: [query]\n\
                 output_schema:\n  \
                   type: object\n  \
                   properties:\n    \
                     result:\n      \
                       type: string\n\
                 # The capabilities it needs; agents that use it are shown them.\n\
                 permissions:\n  \
                   - network\n\
                 # Other registry tools it needs, with SemVer requirements:\n\
                 # dependencies:\n\
                 #   web_fetch: ^1.0.0\n"
            ),
        ),
        (
            "README.md",
            format!(
                "# {title}\n\n{title} looks up one thing over HTTP and returns it.\n\n\
                 ## Input\n\n- `query`: what to look up.\n\n\
                 Check, build and publish it:\n\n\
                 ```sh\nagentlang validate .\nagentlang build .\nagentlang publish .\n```\n"
            ),
        ),
    ]
}
