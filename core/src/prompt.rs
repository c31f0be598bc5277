//! PromptLang (`prompt.yaml`): a role and named sections, compiled to
//! markdown headings or XML-style tags for the target runtime.
//!
//! Trailing newlines: a section's content is stored without its trailing
//! line breaks (a `|` block ends with one, `|+` may keep several, `|-` and
//! quoted strings have none), so every style compiles the same way. The
//! compiled text puts exactly one line break after each section and ends
//! with a single `\n`.
//!
//! Template variables: a section may hold `{{name}}` or `{{name.field}}`,
//! filled in by the runtime. Each must name a value agent.yaml's
//! `context.inject` provides or one of the prompt's own `variables` (which
//! whoever runs the agent supplies); [`check_template_variables`] says so
//! where the plaintext is (validate, build, and a publish of a plaintext
//! prompt: the registry never reads an encrypted one).
//!
//! Content is inserted verbatim, not XML-escaped: the tags frame text for a
//! language model, they do not make an XML document, and escaping would
//! change what the model reads. A section whose content contains its own
//! closing tag is refused instead, since it would end the section early.

use std::{collections::HashMap, fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use yaml_serde::{Mapping, Value};

use crate::{
    agent::{context, variable_roots},
    diagnostics::{Diagnostics, index, join},
    keys::{check_keys, kind_of, suggest},
    rules::Rule,
    yaml::{YamlLimits, parse_value},
};

/// The PromptLang version this module reads.
pub const PROMPT_VERSION: u64 = 2;

const TOP_KEYS: &[&str] = &["version", "role", "variables", "sections"];
/// Most variables one prompt declares.
pub const MAX_VARIABLES: usize = 100;
const SECTION_KEYS: &[&str] = &["name", "content"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("section name is empty")]
    EmptyName,
    #[error("section name is {0} bytes long; at most {MAX_SECTION_NAME_LEN} are allowed")]
    NameTooLong(usize),
    #[error("section name {0:?} must start with a letter or `_`")]
    BadNameStart(String),
    #[error("section name {name:?} may hold only letters, digits, `_`, `.` and `-`, found {bad:?}")]
    BadNameChar { name: String, bad: char },
    #[error("section name {0:?} must not start with `xml` (reserved in XML)")]
    ReservedName(String),
    #[error("unknown role {0:?}; expected system, user or assistant")]
    UnknownRole(String),
    #[error("unknown output format {0:?}; expected markdown or xml")]
    UnknownFormat(String),
}

/// Who speaks the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            other => Err(PromptError::UnknownRole(other.to_owned())),
        }
    }
}

/// A section name that is also a valid XML tag name:
/// `^[A-Za-z_][A-Za-z0-9_.-]*$`, not starting with `xml` in any case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SectionName(String);

/// Longest section name: it becomes a heading or an XML tag.
pub const MAX_SECTION_NAME_LEN: usize = 64;

impl SectionName {
    pub fn new(name: impl Into<String>) -> Result<Self, PromptError> {
        let name = name.into();
        if name.len() > MAX_SECTION_NAME_LEN {
            return Err(PromptError::NameTooLong(name.len()));
        }
        let mut chars = name.chars();
        let first = chars.next().ok_or(PromptError::EmptyName)?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return Err(PromptError::BadNameStart(name));
        }
        if let Some(bad) =
            chars.find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        {
            return Err(PromptError::BadNameChar { name, bad });
        }
        if name.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("xml")) {
            return Err(PromptError::ReservedName(name));
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SectionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SectionName {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl Serialize for SectionName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SectionName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    pub name: SectionName,
    /// Without trailing line breaks; never blank.
    pub content: String,
}

/// A validated prompt.yaml. Section names are unique, and so are
/// variable names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    role: Role,
    /// Template variables the runtime's caller supplies, besides injected
    /// context.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    variables: Vec<String>,
    sections: Vec<Section>,
}

/// What a prompt compiles to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Xml,
}

impl FromStr for Format {
    type Err = PromptError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "markdown" => Ok(Format::Markdown),
            "xml" => Ok(Format::Xml),
            other => Err(PromptError::UnknownFormat(other.to_owned())),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Markdown => "markdown",
            Format::Xml => "xml",
        })
    }
}

impl Prompt {
    pub fn role(&self) -> Role {
        self.role
    }

    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The declared `variables`, in order.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// Every `{{variable}}` of the sections by its root name, with the
    /// path of the section content holding it (`sections[2].content`).
    pub fn template_variables(&self) -> impl Iterator<Item = (String, &str)> {
        self.sections.iter().enumerate().flat_map(|(i, s)| {
            variable_roots(&s.content)
                .into_iter()
                .map(move |(_, root)| (join(&index("sections", i), "content"), root))
        })
    }

    /// Markdown: `## name`, the content, a blank line between sections.
    /// XML: `<name>`, the content, `</name>`, each on its own lines, one
    /// section after the other.
    pub fn compile(&self, format: Format) -> String {
        let rendered: Vec<String> = self
            .sections
            .iter()
            .map(|s| match format {
                Format::Markdown => format!("## {}\n{}\n", s.name, s.content),
                Format::Xml => format!("<{0}>\n{1}\n</{0}>\n", s.name, s.content),
            })
            .collect();
        match format {
            Format::Markdown => rendered.join("\n"),
            Format::Xml => rendered.concat(),
        }
    }
}

/// Parses and validates prompt.yaml with the default YAML limits.
pub fn parse_prompt(bytes: &[u8]) -> Result<Prompt, Diagnostics> {
    parse_prompt_with(bytes, &YamlLimits::default())
}

/// Parses and validates prompt.yaml, reporting every problem with its path.
pub fn parse_prompt_with(bytes: &[u8], limits: &YamlLimits) -> Result<Prompt, Diagnostics> {
    let value = parse_value(bytes, limits)?;
    let mut diags = Diagnostics::new();
    let Value::Mapping(top) = &value else {
        diags.push(
            "",
            format!("prompt.yaml must be a mapping, found {}", kind_of(&value)),
        );
        return Err(diags);
    };
    check_keys(top, TOP_KEYS, "", &mut diags);

    match top.get("version") {
        None => diags.push("version", "missing required key"),
        Some(v) if v.as_u64() == Some(PROMPT_VERSION) => {}
        Some(v) => diags.push(
            "version",
            format!("must be the number {PROMPT_VERSION}, found {}", describe(v)),
        ),
    }

    let role = match top.get("role") {
        None => {
            diags.push("role", "missing required key");
            None
        }
        Some(Value::String(s)) => s
            .parse::<Role>()
            .map_err(|e| diags.push("role", e.to_string()))
            .ok(),
        Some(v) => {
            diags.push("role", format!("expected a string, found {}", kind_of(v)));
            None
        }
    };

    let variables = match top.get("variables") {
        None => Vec::new(),
        Some(v) => parse_variables(v, &mut diags),
    };

    let sections = match top.get("sections") {
        None => {
            diags.push("sections", "missing required key");
            None
        }
        Some(Value::Sequence(items)) if items.is_empty() => {
            diags.push("sections", "must list at least one section");
            None
        }
        Some(Value::Sequence(items)) => Some(parse_sections(items, &mut diags)),
        Some(v) => {
            diags.push(
                "sections",
                format!("expected a sequence, found {}", kind_of(v)),
            );
            None
        }
    };

    match (role, sections) {
        (Some(role), Some(sections)) if diags.is_empty() => Ok(Prompt {
            role,
            variables,
            sections,
        }),
        _ => Err(diags),
    }
}

/// `variables: [name, ...]`: identifiers, unique, none of them a value
/// `context.inject` provides (that one is injected, not supplied).
fn parse_variables(v: &Value, diags: &mut Diagnostics) -> Vec<String> {
    let Value::Sequence(items) = v else {
        diags.push(
            "variables",
            format!("expected a sequence of names, found {}", kind_of(v)),
        );
        return Vec::new();
    };
    if items.len() > MAX_VARIABLES {
        diags.push(
            "variables",
            format!(
                "declares {} variables; at most {MAX_VARIABLES} are allowed",
                items.len()
            ),
        );
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = index("variables", i);
        let Value::String(name) = item else {
            diags.push(&path, format!("expected a name, found {}", kind_of(item)));
            continue;
        };
        let mut chars = name.chars();
        let ident = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.len() <= MAX_SECTION_NAME_LEN;
        if !ident {
            diags.push(
                &path,
                format!(
                    "{name:?} is not a variable name (letters, digits and `_`, starting with a letter or `_`, at most {MAX_SECTION_NAME_LEN})"
                ),
            );
        } else if context::injected(name).is_some() {
            diags.push(
                &path,
                format!(
                    "{name} is injected context, not a variable: list it under agent.yaml's context.inject instead"
                ),
            );
        } else if out.contains(name) {
            diags.push(&path, format!("variable {name:?} is declared twice"));
        } else {
            out.push(name.clone());
        }
    }
    out
}

/// Every `{{variable}}` of `prompt` names a value `inject` (agent.yaml's
/// `context.inject`) provides or one of the prompt's `variables`
/// ([`Rule::TemplateVariable`], at the section's content).
pub fn check_template_variables(prompt: &Prompt, inject: &[String]) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let injected: Vec<&str> = inject
        .iter()
        .map(String::as_str)
        .filter(|i| context::injected(i).is_some())
        .collect();
    // The names a typo may be of: what is provided, and what could be. A
    // name longer than any of them is no typo of one, and comparing it
    // would cost its length times theirs.
    let mut known: Vec<&str> = prompt.variables.iter().map(String::as_str).collect();
    known.extend(context::INJECT_NAMES);
    for (path, root) in prompt.template_variables() {
        if injected.contains(&root) || prompt.variables.iter().any(|v| v == root) {
            continue;
        }
        // Past the cap a problem is only counted: skip building its text.
        if diags.is_full() {
            diags.push_rule(Rule::TemplateVariable, path, String::new());
            continue;
        }
        let message = if context::injected(root).is_some() {
            format!(
                "{{{{{root}}}}} is injected context, but agent.yaml's context.inject does not list {root}"
            )
        } else if let Some(near) = (root.len() <= MAX_SECTION_NAME_LEN)
            .then(|| suggest(root, &known))
            .flatten()
        {
            format!(
                "{{{{{root}}}}} is neither injected context nor a declared variable; did you mean {near:?}?"
            )
        } else {
            format!(
                "{{{{{root}}}}} is neither injected context (context.inject) nor a declared variable (prompt.yaml's variables)"
            )
        };
        diags.push_rule(Rule::TemplateVariable, path, message);
    }
    diags
}

fn parse_sections(items: &[Value], diags: &mut Diagnostics) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::with_capacity(items.len());
    // (name, path of its first use) for the duplicate message.
    // A map, not a list: a prompt may hold tens of thousands of sections.
    let mut seen: HashMap<String, String> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = index("sections", i);
        let Value::Mapping(map) = item else {
            diags.push(
                &path,
                format!(
                    "expected a mapping with `name` and `content`, found {}",
                    kind_of(item)
                ),
            );
            continue;
        };
        if let Some(section) = parse_section(map, &path, &mut seen, diags) {
            sections.push(section);
        }
    }
    sections
}

fn parse_section(
    map: &Mapping,
    path: &str,
    seen: &mut HashMap<String, String>,
    diags: &mut Diagnostics,
) -> Option<Section> {
    check_keys(map, SECTION_KEYS, path, diags);
    let name_path = join(path, "name");
    let name = match map.get("name") {
        None => {
            diags.push(&name_path, "missing required key");
            None
        }
        Some(Value::String(s)) => match SectionName::new(s.as_str()) {
            Ok(name) => {
                if let Some(first) = seen.get(s.as_str()) {
                    diags.push(
                        &name_path,
                        format!("duplicate section name {s:?} (first used at {first})"),
                    );
                } else {
                    seen.insert(s.clone(), name_path.clone());
                }
                Some(name)
            }
            Err(e) => {
                diags.push(&name_path, e.to_string());
                None
            }
        },
        Some(v) => {
            diags.push(
                &name_path,
                format!("expected a string, found {}", kind_of(v)),
            );
            None
        }
    };

    let content_path = join(path, "content");
    let content = match map.get("content") {
        None => {
            diags.push(&content_path, "missing required key");
            None
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            diags.push(&content_path, "must not be empty");
            None
        }
        Some(Value::String(s)) => Some(s.trim_end_matches(['\n', '\r']).to_owned()),
        Some(v) => {
            diags.push(
                &content_path,
                format!("expected a string, found {}", kind_of(v)),
            );
            None
        }
    };

    let (name, content) = (name?, content?);
    let closing = format!("</{name}>");
    if content.contains(&closing) {
        diags.push(
            &content_path,
            format!("contains `{closing}`, which would end the section early in XML output"),
        );
        return None;
    }
    Some(Section { name, content })
}

/// A short rendering of a scalar for messages; collections by their type.
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("the string {s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => kind_of(other).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_names_follow_xml_rules() {
        for ok in ["mindset", "who_you_are", "_x", "a.b-c", "xm", "x_ml"] {
            assert!(SectionName::new(ok).is_ok(), "{ok}");
        }
        assert_eq!(SectionName::new(""), Err(PromptError::EmptyName));
        assert_eq!(
            SectionName::new("1st"),
            Err(PromptError::BadNameStart("1st".into()))
        );
        assert_eq!(
            SectionName::new("-x"),
            Err(PromptError::BadNameStart("-x".into()))
        );
        assert_eq!(
            SectionName::new("a b"),
            Err(PromptError::BadNameChar {
                name: "a b".into(),
                bad: ' '
            })
        );
        assert_eq!(
            SectionName::new("XmLdata"),
            Err(PromptError::ReservedName("XmLdata".into()))
        );
        assert_eq!(
            SectionName::new("héllo"),
            Err(PromptError::BadNameChar {
                name: "héllo".into(),
                bad: 'é'
            })
        );
    }

    #[test]
    fn section_name_deserialize_validates() {
        assert!(serde_json::from_str::<SectionName>("\"xml_stuff\"").is_err());
        assert!(serde_json::from_str::<SectionName>("\"ok\"").is_ok());
    }

    #[test]
    fn variables_are_names_declared_once_and_not_injected_context() {
        let prompt = |vars: &str| {
            parse_prompt(
                format!("version: 2\nrole: system\nvariables: {vars}\nsections:\n  - name: a\n    content: Hi {{{{tone}}}}.\n")
                    .as_bytes(),
            )
        };
        assert_eq!(prompt("[tone]").unwrap().variables(), ["tone"]);
        let d = prompt("[tone, tone, location, 2x, [a]]").unwrap_err();
        assert_eq!(
            d.lines().collect::<Vec<_>>(),
            [
                "variables[1]: variable \"tone\" is declared twice",
                "variables[2]: location is injected context, not a variable: list it under agent.yaml's context.inject instead",
                "variables[3]: \"2x\" is not a variable name (letters, digits and `_`, starting with a letter or `_`, at most 64)",
                "variables[4]: expected a name, found a sequence",
            ]
        );
        assert!(prompt("tone").is_err());
    }

    #[test]
    fn undeclared_variables_are_each_reported_with_a_suggestion() {
        let p = parse_prompt(
            b"version: 2\nrole: system\nvariables: [tone]\nsections:\n  - name: a\n    content: '{{tone}} {{tnoe}} {{time}} {{location.city}}'\n  - name: b\n    content: '{{x}}'\n",
        )
        .unwrap();
        let d = check_template_variables(&p, &["location".to_owned(), "nonsense".to_owned()]);
        assert_eq!(
            d.lines().collect::<Vec<_>>(),
            [
                "sections[0].content: {{tnoe}} is neither injected context nor a declared variable; did you mean \"tone\"? [template-variable]",
                "sections[0].content: {{time}} is injected context, but agent.yaml's context.inject does not list time [template-variable]",
                "sections[1].content: {{x}} is neither injected context (context.inject) nor a declared variable (prompt.yaml's variables) [template-variable]",
            ]
        );
        // Past the cap, problems are counted.
        let many = format!(
            "version: 2\nrole: system\nsections:\n  - name: a\n    content: '{}'\n",
            "{{y}} ".repeat(500)
        );
        let d = check_template_variables(&parse_prompt(many.as_bytes()).unwrap(), &[]);
        assert_eq!(d.len(), 500);
    }

    #[test]
    fn format_parses() {
        assert_eq!("markdown".parse::<Format>(), Ok(Format::Markdown));
        assert_eq!("xml".parse::<Format>(), Ok(Format::Xml));
        assert_eq!(
            "html".parse::<Format>(),
            Err(PromptError::UnknownFormat("html".into()))
        );
    }
}
