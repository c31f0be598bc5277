//! A skill package's `SKILL.md`, held to the Agent Skills specification
//! (agentskills.io) as its reference validator, `skills-ref`, reads it: the
//! frontmatter keys are `name`, `description`, `license`, `compatibility`,
//! `metadata` and `allowed-tools` and no others; `name` is 1-64 lowercase
//! letters, digits and hyphens, neither starting nor ending with a hyphen
//! nor holding `--`; `description` is 1-1,024 characters; `compatibility`
//! 1-500; `metadata` a map of strings to strings; `allowed-tools` one
//! space-separated string.
//!
//! Two rules are AgentLang's own, because the skill is also a package: the
//! name must be a [`PackageName`] (so it starts with a letter: `9lives` is a
//! valid Agent Skills name and not a package name), and the version lives in
//! `metadata.version`, a SemVer version, the one place the specification
//! leaves for it. Everything `skills-ref` refuses is refused here too; the
//! converse holds but for those two rules and for a few spellings
//! `skills-ref` normalizes (NFKC, surrounding blanks, numbers as strings in
//! `description`), which are refused here rather than guessed at.
//!
//! Co-located skills (`skills/<name>/SKILL.md` inside an agent) keep their
//! own rules, [`crate::skill`]: an `allowed-tools` list naming the agent's
//! tools, checked against them.

use std::collections::BTreeMap;

use serde::Serialize;
use yaml_serde::Value;

use crate::diagnostics::Diagnostics;
use crate::names::{PackageName, Version};
use crate::skill::{SkillError, split_frontmatter};
use crate::yaml::{YamlLimits, parse_value};

/// The frontmatter keys the specification allows, sorted as the refusal
/// lists them.
pub const ALLOWED_KEYS: [&str; 6] = [
    "allowed-tools",
    "compatibility",
    "description",
    "license",
    "metadata",
    "name",
];
/// Longest `name`, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// The `metadata` key that carries a skill package's SemVer version.
pub const VERSION_KEY: &str = "version";

/// A skill package's SKILL.md, as the specification reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillDoc {
    pub name: PackageName,
    pub version: Version,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// Space-separated, as the specification spells it (experimental).
    #[serde(rename = "allowed-tools", skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<String>,
    /// Every `metadata` entry, `version` included.
    pub metadata: BTreeMap<String, String>,
    /// The markdown after the frontmatter.
    #[serde(skip)]
    pub body: String,
}

/// The specification's name rules, every broken one said: lowercase ASCII
/// letters, digits and hyphens, 1-64 characters, no hyphen first or last,
/// no `--`; then AgentLang's (a package name starts with a letter).
pub fn check_name(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.is_empty() {
        return vec!["must be a non-empty string".to_owned()];
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        problems.push(format!(
            "{name:?} is longer than {MAX_NAME_CHARS} characters ({chars})"
        ));
    }
    if name.chars().any(char::is_uppercase) {
        problems.push(format!("{name:?} must be lowercase"));
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("must not start or end with a hyphen".to_owned());
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || c.is_uppercase()))
    {
        problems.push(format!(
            "{name:?} contains {bad:?}: only lowercase letters a-z, digits and hyphens are allowed"
        ));
    }
    if problems.is_empty()
        && let Err(e) = PackageName::new(name)
    {
        problems.push(format!("{name:?} is not a valid package name: {e}"));
    }
    problems
}

/// Parses and checks a skill package's SKILL.md: every problem at once,
/// each at its frontmatter key.
pub fn parse_skill_doc(bytes: &[u8]) -> Result<SkillDoc, Diagnostics> {
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
    let Value::Mapping(map) = doc else {
        diags.push("", "the frontmatter must be a YAML mapping");
        return Err(diags);
    };
    let mut fields: BTreeMap<String, Value> = BTreeMap::new();
    let mut unknown = Vec::new();
    for (k, v) in map {
        let Value::String(k) = k else {
            diags.push("", "frontmatter keys must be strings");
            continue;
        };
        if ALLOWED_KEYS.contains(&k.as_str()) {
            fields.insert(k, v);
        } else {
            unknown.push(k);
        }
    }
    if !unknown.is_empty() {
        unknown.sort();
        diags.push(
            "",
            format!(
                "unexpected frontmatter keys: {}; the Agent Skills specification allows only {}",
                unknown.join(", "),
                ALLOWED_KEYS.join(", ")
            ),
        );
    }

    let mut text_field = |key: &str, required: bool, max: Option<usize>| -> Option<String> {
        match fields.get(key) {
            None if required => {
                diags.push("", format!("missing required key {key:?}"));
                None
            }
            None => None,
            Some(Value::String(s)) if s.trim().is_empty() => {
                diags.push(key, "must be a non-empty string");
                None
            }
            Some(Value::String(s)) => {
                let n = s.chars().count();
                match max {
                    Some(max) if n > max => {
                        diags.push(key, format!("is longer than {max} characters ({n})"));
                        None
                    }
                    _ => Some(s.clone()),
                }
            }
            Some(_) => {
                diags.push(key, "must be a string");
                None
            }
        }
    };
    let name_text = text_field("name", true, None);
    let description = text_field("description", true, Some(MAX_DESCRIPTION_CHARS));
    let license = text_field("license", false, None);
    let compatibility = text_field("compatibility", false, Some(MAX_COMPATIBILITY_CHARS));
    let allowed_tools = text_field("allowed-tools", false, None);

    let name = name_text.and_then(|n| {
        let problems = check_name(&n);
        for p in &problems {
            diags.push("name", p.clone());
        }
        problems
            .is_empty()
            .then(|| PackageName::new(n).ok())
            .flatten()
    });

    let mut metadata = BTreeMap::new();
    match fields.get("metadata") {
        None => {}
        Some(Value::Mapping(m)) => {
            for (k, v) in m {
                let key = scalar_text(k);
                let value = scalar_text(v);
                match (key, value) {
                    (Some(k), Some(v)) => {
                        metadata.insert(k, v);
                    }
                    (Some(k), None) => diags.push(
                        format!("metadata.{k}"),
                        "must be a string (metadata maps strings to strings)",
                    ),
                    (None, _) => diags.push("metadata", "keys must be strings"),
                }
            }
        }
        Some(_) => diags.push("metadata", "must be a mapping of strings to strings"),
    }
    let version = match metadata.get(VERSION_KEY) {
        None => {
            diags.push(
                "metadata",
                "missing \"version\": a skill package's SemVer version lives in metadata.version",
            );
            None
        }
        Some(v) => match Version::parse(v) {
            Ok(version) => Some(version),
            Err(e) => {
                diags.push("metadata.version", e.to_string());
                None
            }
        },
    };

    match (name, description, version) {
        (Some(name), Some(description), Some(version)) if diags.is_empty() => Ok(SkillDoc {
            name,
            version,
            description,
            license,
            compatibility,
            allowed_tools,
            metadata,
            body: body.to_owned(),
        }),
        _ => Err(diags),
    }
}

/// A scalar as text: `skills-ref` reads every scalar as a string, so a
/// metadata value written `1.0` or `true` is the text it spells.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(front: &str) -> String {
        format!("---\n{front}---\n# Body\n")
    }

    const OK: &str = "name: pdf-tools\ndescription: Extract text from PDFs. Use for PDFs.\nmetadata:\n  version: 1.2.0\n";

    fn messages(front: &str) -> Vec<String> {
        parse_skill_doc(doc(front).as_bytes())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_spec_skill_with_every_key_parses() {
        let md = doc(&format!(
            "{OK}  author: example-org\nlicense: Apache-2.0\ncompatibility: Requires git\nallowed-tools: Bash(git:*) Read\n"
        ));
        let s = parse_skill_doc(md.as_bytes()).unwrap();
        assert_eq!(s.name.as_str(), "pdf-tools");
        assert_eq!(s.version.to_string(), "1.2.0");
        assert_eq!(s.allowed_tools.as_deref(), Some("Bash(git:*) Read"));
        assert_eq!(s.metadata["author"], "example-org");
        assert_eq!(s.body, "# Body\n");
    }

    #[test]
    fn keys_outside_the_spec_are_refused_with_the_allowed_list() {
        assert_eq!(
            messages(&format!("{OK}version: 1.0.0\nx-team: a\n")),
            [
                "unexpected frontmatter keys: version, x-team; the Agent Skills specification allows only allowed-tools, compatibility, description, license, metadata, name"
            ]
        );
    }

    #[test]
    fn name_rules_follow_the_spec() {
        for (name, want) in [
            ("PDF-tools", "\"PDF-tools\" must be lowercase"),
            ("-pdf", "must not start or end with a hyphen"),
            ("pdf-", "must not start or end with a hyphen"),
            ("pdf--tools", "must not contain consecutive hyphens"),
            ("pdf_tools", "\"pdf_tools\" contains '_'"),
            ("café", "\"café\" contains 'é'"),
            ("9lives", "\"9lives\" is not a valid package name"),
        ] {
            let m = messages(&format!(
                "name: {name}\ndescription: d\nmetadata:\n  version: 1.0.0\n"
            ));
            assert!(m.iter().any(|m| m.contains(want)), "{name}: {m:?}");
        }
        let long = "a".repeat(65);
        let m = messages(&format!(
            "name: {long}\ndescription: d\nmetadata:\n  version: 1.0.0\n"
        ));
        assert!(m[0].contains("longer than 64 characters (65)"), "{m:?}");
        let max = "a".repeat(64);
        parse_skill_doc(
            doc(&format!(
                "name: {max}\ndescription: d\nmetadata:\n  version: 1.0.0\n"
            ))
            .as_bytes(),
        )
        .unwrap();
    }

    #[test]
    fn description_and_compatibility_lengths_count_characters() {
        let ok = "é".repeat(1024);
        parse_skill_doc(
            doc(&format!(
                "name: a\ndescription: {ok}\nmetadata:\n  version: 1.0.0\n"
            ))
            .as_bytes(),
        )
        .unwrap();
        let m = messages(&format!(
            "name: a\ndescription: {}\ncompatibility: {}\nmetadata:\n  version: 1.0.0\n",
            "d".repeat(1025),
            "c".repeat(501)
        ));
        assert_eq!(
            m,
            [
                "description: is longer than 1024 characters (1025)",
                "compatibility: is longer than 500 characters (501)"
            ]
        );
        assert_eq!(
            messages("name: a\ndescription: \" \"\nmetadata:\n  version: 1.0.0\n"),
            ["description: must be a non-empty string"]
        );
    }

    #[test]
    fn required_keys_types_and_the_version() {
        assert_eq!(
            messages("license: MIT\n"),
            [
                "missing required key \"name\"",
                "missing required key \"description\"",
                "metadata: missing \"version\": a skill package's SemVer version lives in metadata.version"
            ]
        );
        let m = messages(
            "name: a\ndescription: d\nallowed-tools:\n  - Read\nmetadata:\n  version: \"1.0\"\n  nested: {a: b}\n",
        );
        assert_eq!(
            m,
            [
                "allowed-tools: must be a string",
                "metadata.nested: must be a string (metadata maps strings to strings)",
                "metadata.version: \"1.0\" is not a valid SemVer 2.0 version: unexpected end of input while parsing minor version number"
            ]
        );
        assert_eq!(
            messages("- a\n"),
            ["the frontmatter must be a YAML mapping"]
        );
    }
}
