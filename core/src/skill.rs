//! `skills/<name>/SKILL.md`: YAML frontmatter between `---` lines (`name`,
//! `description`, `allowed-tools`) followed by a markdown body.

use serde::Serialize;

use crate::agent::reader::{Extensions, MAX_DESCRIPTION_CHARS, Reader, ShapeError};
use crate::diagnostics::Diagnostics;
use crate::names::PackageName;
use crate::yaml::{YamlLimits, parse_value};

/// The file a skill lives in, inside its directory.
pub const SKILL_FILE: &str = "SKILL.md";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("SKILL.md is not valid UTF-8 (at byte {0})")]
    NotUtf8(usize),
    #[error("SKILL.md must start with a YAML frontmatter block opened by a \"---\" line")]
    NoFrontmatter,
    #[error("the frontmatter opened on line 1 is never closed by a \"---\" line")]
    Unclosed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skill {
    pub name: PackageName,
    pub description: String,
    /// Tools the skill restricts the agent to; empty means no restriction.
    #[serde(rename = "allowed-tools", skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
    /// The markdown after the frontmatter.
    #[serde(skip)]
    pub body: String,
}

/// Splits `---\n<yaml>\n---\n<body>`.
pub(crate) fn split_frontmatter(text: &str) -> Result<(&str, &str), SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(SkillError::NoFrontmatter)?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return Ok((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(SkillError::Unclosed)
}

pub fn parse_skill(bytes: &[u8]) -> Result<Skill, Diagnostics> {
    let mut diags = Diagnostics::new();
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            diags.push("", SkillError::NotUtf8(e.valid_up_to()).to_string());
            return Err(diags);
        }
    };
    let (front, body) = match split_frontmatter(text) {
        Ok(parts) => parts,
        Err(e) => {
            diags.push("", e.to_string());
            return Err(diags);
        }
    };
    let doc = match parse_value(front.as_bytes(), &YamlLimits::default()) {
        Ok(doc) => doc,
        Err(e) => {
            diags.push("", format!("frontmatter: {e}"));
            return Err(diags);
        }
    };
    let mut r = Reader::new();
    let Some(f) = r.fields(&doc, "", &["name", "description", "allowed-tools"]) else {
        return Err(r.finish());
    };
    let name = r.required(&f, "name").and_then(|v| {
        let s = r.string(v, "name")?;
        PackageName::new(s.as_str())
            .map_err(|e| r.error("name", format!("{s:?} is not a valid name: {e}")))
            .ok()
    });
    let description = r.req_text_max(&f, "description", MAX_DESCRIPTION_CHARS);
    let allowed_tools = r.opt_string_list(&f, "allowed-tools");
    // A set, so a long list costs one pass.
    let mut seen = std::collections::HashSet::new();
    for (i, t) in allowed_tools.iter().enumerate() {
        if !seen.insert(t.as_str()) {
            r.error(
                format!("allowed-tools[{i}]"),
                ShapeError::Duplicate(t.clone()),
            );
        }
    }
    let diags = r.finish();
    match (name, description) {
        (Some(name), Some(description)) if diags.is_empty() => Ok(Skill {
            name,
            description,
            allowed_tools,
            extensions: f.extensions,
            body: body.to_owned(),
        }),
        _ => Err(diags),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_skill_parses() {
        let md = "---\nname: test-helper\ndescription: Skill for testing capabilities\nallowed-tools:\n  - sqlite\n  - delegate\n---\n# Test Helper Skill\n";
        let s = parse_skill(md.as_bytes()).unwrap();
        assert_eq!(s.name.as_str(), "test-helper");
        assert_eq!(s.allowed_tools, ["sqlite", "delegate"]);
        assert_eq!(s.body, "# Test Helper Skill\n");
    }

    fn messages(md: &str) -> Vec<String> {
        parse_skill(md.as_bytes())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn broken_skills_say_why() {
        assert_eq!(
            messages("# no frontmatter"),
            [SkillError::NoFrontmatter.to_string()]
        );
        assert_eq!(
            messages("---\nname: a\n"),
            [SkillError::Unclosed.to_string()]
        );
        assert_eq!(
            messages("---\nname: 9a\nallowed_tools: [x]\n---\n"),
            [
                "allowed_tools: unknown key; did you mean \"allowed-tools\"?",
                "name: \"9a\" is not a valid name: name must start with an ASCII letter, found '9'",
                "missing required key \"description\"",
            ]
        );
        assert_eq!(
            messages("---\nname: a\ndescription: d\nallowed-tools: [x, x]\n---\n"),
            ["allowed-tools[1]: \"x\" appears more than once"]
        );
    }
}
