//! Prompt quality: a review of an agent's prompt against its own spec, as
//! findings with a rule id, a severity, the file and path, a message and a
//! fix hint.
//!
//! The rules here are deterministic: the same package gives the same
//! report, which is why the registry can store one per published version.
//! An optional model review ([`review`]) adds findings of its own, marked
//! [`Source::Model`].
//!
//! | rule | severity | what |
//! |---|---|---|
//! | `undeclared-tool` | warning | the prompt names a tool no agent of the package declares |
//! | `unused-tool` | warning | the agent declares a tool its prompt never mentions |
//! | `prompt-exceeds-context` | error | the compiled prompt is larger than the smallest declared model's context window |
//! | `prompt-fills-context` | warning | ... or takes more than half of it |
//! | `prompt-exceeds-window` | error | ... or is larger than `context.window.max_tokens` |
//! | `prompt-triggers-compaction` | warning | ... or already crosses the compaction trigger |
//! | `window-exceeds-model` | warning | `context.window.max_tokens` is larger than the smallest model's window |
//! | `empty-section` | warning | a section with (almost) nothing in it, or only a placeholder |
//! | `duplicate-section` | warning | a section with the same text as an earlier one |
//! | `near-duplicate-section` | warning | a section mostly the same as an earlier one |
//! | `capability-not-requested` | warning | the prompt asks for a capability (camera, location, files, shell…) the agent does not request |
//! | `undeclared-capability` | warning | a bash tool, HTTP tool, MCP server or injected context implies a capability (shell, network, oauth, location) no agent of the package requests |
//! | `permission-without-reason` | warning | a high or critical risk capability without a `reason` |
//! | `subagent-without-description` | warning | dynamic delegation routes by description, and a subagent's is missing or too thin |
//! | `delegation-depth` | error | `delegate.max_depth` above `constraints.limits.max_delegation_depth` (default 3) |
//! | `budget-price-mismatch` | warning | a budget price that no declared model has in the registry's catalog |
//! | `template-variable` | error | a prompt `{{variable}}` that neither `context.inject` nor prompt.yaml's `variables` provides (also a validation error) |
//! | `optional-context-variable` | warning | a prompt `{{variable}}` injected from an optional capability (`{{location}}`), so empty on hosts that refuse it |
//! | `unused-variable` | warning | a variable prompt.yaml declares that no section uses |
//!
//! A report keeps at most [`MAX_FINDINGS`] findings (errors first) and
//! counts the rest by severity ([`Omitted`]); each text is clipped to
//! [`MAX_FINDING_TEXT`] characters. So a report, and a page showing one, is
//! small whatever the prompt names: renderers end the list with
//! [`QualityReport::more`] ("and N more findings").
//!
//! Token counts are estimates: four characters a token, rounded up, which
//! is close for English prose and errs large for code. A registry sees only
//! an encrypted prompt's size; the estimate then comes from the plaintext's
//! length (the envelope's size less its fixed overhead), and the rules that
//! read the prompt's text are listed as skipped.

pub mod review;

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::{
    agent::{AgentSpec, ToolConfig},
    capability::{Capability, RiskLevel},
    constraints,
    diagnostics::{index, join},
    host::{self, Requester},
    names::normalize,
    package::{AGENT_FILE, AgentPackage, PROMPT_FILE},
    prompt::{Format, Prompt},
};

/// Characters per token in the estimate.
pub const CHARS_PER_TOKEN: u64 = 4;
/// Sections with fewer words than this count as empty.
const MIN_SECTION_WORDS: usize = 3;
/// Word-shingle similarity from which two sections are near-duplicates.
const NEAR_DUPLICATE_SIMILARITY: f64 = 0.8;
/// Sections shorter than this (in words) are not compared for
/// near-duplication: short texts share shingles by chance.
const MIN_WORDS_TO_COMPARE: usize = 8;
/// Near-duplicate comparison is quadratic in the number of sections; past
/// this many it is skipped (and the report says so).
pub const MAX_SECTIONS_COMPARED: usize = 200;
/// A subagent description with fewer words gives a router little to go on.
const MIN_DESCRIPTION_WORDS: usize = 4;
/// Relative difference from which a budget price contradicts the catalog.
const PRICE_TOLERANCE: f64 = 0.01;
/// Most findings a report keeps; the rest are counted in [`Omitted`].
pub const MAX_FINDINGS: usize = 100;
/// Longest path, message or hint a finding keeps, in characters (they
/// quote the prompt's words, which can be as long as the prompt).
pub const MAX_FINDING_TEXT: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Who found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The deterministic rules of this module.
    Rules,
    /// A language model's review ([`review`]).
    Model,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Dotted path inside the file; empty for the file as a whole.
    #[serde(default)]
    pub path: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub source: Source,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", self.severity.as_str(), self.rule)?;
        if self.source == Source::Model {
            f.write_str(" (model)")?;
        }
        f.write_str(": ")?;
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// A rule that could not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub rule: String,
    pub reason: String,
}

/// What happened to the model review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ModelReview {
    /// No reviewer configured.
    Skipped {
        reason: String,
    },
    Done {
        model: String,
        findings: usize,
    },
    Failed {
        reason: String,
    },
}

/// Findings past [`MAX_FINDINGS`], counted by severity but not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Omitted {
    #[serde(default)]
    pub errors: usize,
    #[serde(default)]
    pub warnings: usize,
}

impl Omitted {
    pub fn is_empty(&self) -> bool {
        self.errors == 0 && self.warnings == 0
    }

    pub fn total(&self) -> usize {
        self.errors.saturating_add(self.warnings)
    }

    fn add(&mut self, severity: Severity, n: usize) {
        let count = match severity {
            Severity::Error => &mut self.errors,
            Severity::Warning => &mut self.warnings,
        };
        *count = count.saturating_add(n);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QualityReport {
    /// At most [`MAX_FINDINGS`], errors first.
    pub findings: Vec<Finding>,
    /// What the cap left out.
    #[serde(default, skip_serializing_if = "Omitted::is_empty")]
    pub omitted: Omitted,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// The compiled prompt's estimated size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Absent from reports that never asked a model (the registry's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_review: Option<ModelReview>,
}

impl QualityReport {
    /// Findings of one severity, those the cap left out included.
    pub fn count(&self, severity: Severity) -> usize {
        let omitted = match severity {
            Severity::Error => self.omitted.errors,
            Severity::Warning => self.omitted.warnings,
        };
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
            .saturating_add(omitted)
    }

    /// `and N more findings`, when the cap left some out.
    pub fn more(&self) -> Option<String> {
        crate::diagnostics::more_line(self.omitted.total(), "finding", "findings")
    }

    /// The report within its bounds: errors first, at most
    /// [`MAX_FINDINGS`] kept (the rest counted), every text clipped. Every
    /// report this module makes already is; the registry also applies it
    /// to reports stored before the cap.
    pub fn capped(mut self) -> Self {
        // Stable: the order within a severity is kept.
        self.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        if self.findings.len() > MAX_FINDINGS {
            for f in self.findings.drain(MAX_FINDINGS..) {
                self.omitted.add(f.severity, 1);
            }
        }
        for f in &mut self.findings {
            clip_finding(f);
        }
        self
    }

    /// Whether a build may go on: no errors, and no warnings either when
    /// warnings are denied.
    pub fn passes(&self, deny_warnings: bool) -> bool {
        self.count(Severity::Error) == 0 && !(deny_warnings && self.count(Severity::Warning) > 0)
    }

    /// `2 warnings`, `1 error, 3 warnings`, or `no findings`.
    pub fn summary(&self) -> String {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("1 {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        let (errors, warnings) = (self.count(Severity::Error), self.count(Severity::Warning));
        match (errors, warnings) {
            (0, 0) => "no findings".to_owned(),
            (0, w) => plural(w, "warning"),
            (e, 0) => plural(e, "error"),
            (e, w) => format!("{}, {}", plural(e, "error"), plural(w, "warning")),
        }
    }

    /// Adds a model review's findings (already marked) and its status,
    /// within the same cap.
    pub fn merge_model_review(&mut self, review: ModelReview, findings: Vec<Finding>) {
        self.findings.extend(findings);
        self.model_review = Some(review);
        *self = std::mem::take(self).capped();
    }
}

/// What the registry's models catalog says about one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelFacts {
    pub context_window: u64,
    pub input_1m_price: Option<f64>,
    pub output_1m_price: Option<f64>,
}

/// The prompt as the reviewer can see it.
#[derive(Debug, Clone, Copy)]
pub enum PromptText<'a> {
    Plain(&'a Prompt),
    /// Only the plaintext's length is known (an encrypted prompt).
    Encrypted {
        plaintext_bytes: u64,
    },
    Missing,
}

/// Everything one review reads.
#[derive(Debug, Clone, Copy)]
pub struct QualityInput<'a> {
    pub package: &'a AgentPackage,
    pub prompt: PromptText<'a>,
    /// The models catalog (from agent.lock or the registry); `None` when
    /// neither is at hand, and the rules needing it are skipped.
    pub models: Option<&'a BTreeMap<String, ModelFacts>>,
}

/// The rule ids, as reports spell them.
pub mod rules {
    pub const UNDECLARED_TOOL: &str = "undeclared-tool";
    pub const UNUSED_TOOL: &str = "unused-tool";
    pub const PROMPT_EXCEEDS_CONTEXT: &str = "prompt-exceeds-context";
    pub const PROMPT_FILLS_CONTEXT: &str = "prompt-fills-context";
    pub const PROMPT_EXCEEDS_WINDOW: &str = "prompt-exceeds-window";
    pub const PROMPT_TRIGGERS_COMPACTION: &str = "prompt-triggers-compaction";
    pub const WINDOW_EXCEEDS_MODEL: &str = "window-exceeds-model";
    pub const EMPTY_SECTION: &str = "empty-section";
    pub const DUPLICATE_SECTION: &str = "duplicate-section";
    pub const NEAR_DUPLICATE_SECTION: &str = "near-duplicate-section";
    pub const CAPABILITY_NOT_REQUESTED: &str = "capability-not-requested";
    pub const UNDECLARED_CAPABILITY: &str = "undeclared-capability";
    pub const PERMISSION_WITHOUT_REASON: &str = "permission-without-reason";
    pub const SUBAGENT_WITHOUT_DESCRIPTION: &str = "subagent-without-description";
    pub const DELEGATION_DEPTH: &str = "delegation-depth";
    pub const BUDGET_PRICE_MISMATCH: &str = "budget-price-mismatch";
    /// The validation rule's slug ([`crate::rules::Rule::TemplateVariable`]).
    pub const TEMPLATE_VARIABLE: &str = "template-variable";
    pub const OPTIONAL_CONTEXT_VARIABLE: &str = "optional-context-variable";
    pub const UNUSED_VARIABLE: &str = "unused-variable";
    /// A model reviewer's findings.
    pub const MODEL_REVIEW: &str = "model-review";
    /// The reviewer could not be asked or answered nonsense.
    pub const MODEL_REVIEW_FAILED: &str = "model-review-failed";
}

/// The rules that read the prompt's text.
const TEXT_RULES: [&str; 9] = [
    rules::UNDECLARED_TOOL,
    rules::UNUSED_TOOL,
    rules::EMPTY_SECTION,
    rules::DUPLICATE_SECTION,
    rules::NEAR_DUPLICATE_SECTION,
    rules::CAPABILITY_NOT_REQUESTED,
    rules::TEMPLATE_VARIABLE,
    rules::OPTIONAL_CONTEXT_VARIABLE,
    rules::UNUSED_VARIABLE,
];

fn clip_finding(f: &mut Finding) {
    use crate::diagnostics::clip;
    f.path = clip(std::mem::take(&mut f.path), MAX_FINDING_TEXT);
    f.message = clip(std::mem::take(&mut f.message), MAX_FINDING_TEXT);
    f.hint = f.hint.take().map(|h| clip(h, MAX_FINDING_TEXT));
}

struct Out {
    findings: Vec<Finding>,
    /// Findings kept so far per severity, to stop keeping at the cap.
    kept: [usize; 2],
    omitted: Omitted,
    skipped: Vec<Skipped>,
}

impl Out {
    fn add(
        &mut self,
        rule: &str,
        severity: Severity,
        file: &str,
        path: impl Into<String>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        // Up to the cap of each severity, so the errors found after a flood
        // of warnings are still kept; `capped` then cuts to the cap overall.
        let kept = &mut self.kept[usize::from(severity == Severity::Error)];
        if *kept >= MAX_FINDINGS {
            self.omitted.add(severity, 1);
            return;
        }
        *kept += 1;
        self.findings.push(Finding {
            rule: rule.to_owned(),
            severity,
            file: Some(file.to_owned()),
            path: path.into(),
            message: message.into(),
            hint: Some(hint.into()),
            source: Source::Rules,
        });
    }

    fn skip(&mut self, rule: &str, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            rule: rule.to_owned(),
            reason: reason.into(),
        });
    }
}

/// Runs every deterministic rule.
pub fn check(input: &QualityInput<'_>) -> QualityReport {
    let mut out = Out {
        findings: Vec::new(),
        kept: [0; 2],
        omitted: Omitted::default(),
        skipped: Vec::new(),
    };
    let pkg = input.package;
    let agent = &pkg.agent;
    let prompt_tokens = match input.prompt {
        PromptText::Plain(prompt) => {
            let text = prompt.compile(Format::Markdown);
            let mentions = Mentions::of(prompt);
            tool_rules(pkg, prompt, &mentions, &mut out);
            section_rules(prompt, &mut out);
            capability_rule(agent, prompt, &mut out);
            variable_rules(agent, prompt, &mut out);
            Some(estimate_tokens(text.chars().count() as u64))
        }
        PromptText::Encrypted { plaintext_bytes } => {
            for rule in TEXT_RULES {
                out.skip(rule, "the prompt is encrypted; only its size is known");
            }
            Some(estimate_tokens(plaintext_bytes))
        }
        PromptText::Missing => {
            for rule in TEXT_RULES {
                out.skip(rule, "the package has no prompt.yaml");
            }
            None
        }
    };
    size_rules(agent, prompt_tokens, input.models, &mut out);
    permission_rule(agent, &mut out);
    undeclared_capability_rule(pkg, &mut out);
    subagent_rule(pkg, &mut out);
    depth_rule(agent, &mut out);
    price_rule(agent, input.models, &mut out);
    // Errors first, then by file and path, so reports read top-down.
    out.findings.sort_by(|a, b| {
        (b.severity, &a.file, &a.path, &a.rule).cmp(&(a.severity, &b.file, &b.path, &b.rule))
    });
    QualityReport {
        findings: out.findings,
        omitted: out.omitted,
        skipped: out.skipped,
        prompt_tokens,
        model_review: None,
    }
    .capped()
}

/// `ceil(chars / 4)`.
pub fn estimate_tokens(chars: u64) -> u64 {
    chars.div_ceil(CHARS_PER_TOKEN)
}

/// Word tokens of a text: runs of letters, digits, `_` and `-`, trimmed of
/// leading and trailing punctuation; `{{...}}` template placeholders and
/// URL/path chunks are left out.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .filter(|chunk| !(chunk.contains("://") || chunk.contains('/') || chunk.contains('@')))
        .flat_map(|chunk| {
            chunk.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        })
        .map(|w| w.trim_matches(|c: char| c == '-' || c == '_'))
        .filter(|w| !w.is_empty())
}

/// What the prompt mentions, computed once.
struct Mentions {
    /// Every word, normalized.
    words: HashSet<String>,
    /// The lowercased text with whitespace collapsed, for phrases.
    flat: String,
}

impl Mentions {
    fn of(prompt: &Prompt) -> Self {
        let mut words_seen = HashSet::new();
        let mut flat = String::new();
        for s in prompt.sections() {
            let content = strip_placeholders(&s.content);
            for w in words(&content) {
                words_seen.insert(normalize(w));
            }
            flat.push(' ');
            flat.push_str(&content.to_lowercase());
            flat.push(' ');
        }
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        Self {
            words: words_seen,
            flat: format!(" {flat} "),
        }
    }

    /// `web_search` matches the word `web_search` (or `web-search`) and the
    /// phrase "web search".
    fn mentions_tool(&self, name: &str) -> bool {
        let n = normalize(name);
        self.words.contains(&n) || contains_phrase(&self.flat, &n.replace('_', " "))
    }
}

/// `text` without `{{...}}` placeholders (runtime template variables).
fn strip_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        match rest[start..].find("}}") {
            Some(end) => rest = &rest[start + end + 2..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `phrase` occurs in `flat` (lowercase, single-spaced) with word
/// boundaries on both sides.
fn contains_phrase(flat: &str, phrase: &str) -> bool {
    let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
    let mut from = 0;
    while let Some(at) = flat[from..].find(phrase) {
        let start = from + at;
        let end = start + phrase.len();
        if boundary(flat[..start].chars().next_back()) && boundary(flat[end..].chars().next()) {
            return true;
        }
        from = start + phrase.len().max(1);
        while !flat.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// Words of the prompt that look like tool names: snake_case identifiers
/// (`user_memory`), code-style calls (`search(`), and the first word of a
/// "name - what it does" line in a section about tools. With the path of
/// the first section naming each.
fn tool_like_words(prompt: &Prompt) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |word: &str, path: &str, found: &mut Vec<(String, String)>| {
        if seen.insert(normalize(word)) {
            found.push((word.to_owned(), path.to_owned()));
        }
    };
    for (i, s) in prompt.sections().iter().enumerate() {
        let path = join(&index("sections", i), "content");
        let content = strip_placeholders(&s.content);
        for w in words(&content) {
            let snake = w.contains('_')
                && w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if snake {
                add(w, &path, &mut found);
            }
        }
        // `name(`: a call in code style.
        for chunk in content.split_whitespace() {
            if let Some((head, _)) = chunk.split_once('(') {
                let head = head.trim_start_matches(['`', '*', '"', '\'']);
                if is_identifier(head) && head.len() > 1 {
                    add(head, &path, &mut found);
                }
            }
        }
        if s.name.as_str().to_ascii_lowercase().contains("tool") {
            for line in content.lines() {
                let line = line
                    .trim_start()
                    .trim_start_matches(['-', '*', '•'])
                    .trim_start();
                let head = line
                    .split_once(" - ")
                    .or_else(|| line.split_once(" – "))
                    .or_else(|| line.split_once(" — "))
                    .or_else(|| line.split_once(": "))
                    .map(|(h, _)| h.trim().trim_matches('`'));
                if let Some(head) = head.filter(|h| is_identifier(h)) {
                    add(head, &path, &mut found);
                }
            }
        }
    }
    found
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Names a prompt may use that are not tools: agents, skills, sections,
/// capabilities, injected context, components and their render tools, MCP
/// servers and models.
fn non_tool_names(pkg: &AgentPackage, prompt: &Prompt) -> HashSet<String> {
    let mut names = HashSet::new();
    let specs = std::iter::once(&pkg.agent).chain(pkg.subagents.values());
    for spec in specs {
        names.insert(spec.name.normalized());
        for c in spec.ui_components.keys() {
            names.insert(normalize(c));
            names.insert(normalize(&format!("render_{c}")));
        }
        for s in spec.mcp_servers.keys() {
            names.insert(normalize(s));
        }
        for m in spec.models.keys() {
            names.insert(normalize(m));
        }
        if let Some(ctx) = &spec.context {
            for i in &ctx.inject {
                names.insert(normalize(i));
            }
            if let Some(c) = &ctx.compaction {
                for p in &c.preserve {
                    names.insert(normalize(p));
                }
            }
        }
        for s in &spec.skills {
            names.insert(s.name.normalized());
        }
    }
    for path in pkg.subagents.keys() {
        let file = path.file_name();
        names.insert(normalize(
            file.strip_suffix(".yaml")
                .or_else(|| file.strip_suffix(".yml"))
                .unwrap_or(file),
        ));
    }
    for s in pkg.skills.keys() {
        names.insert(s.normalized());
    }
    for s in prompt.sections() {
        names.insert(normalize(s.name.as_str()));
    }
    for c in Capability::NAMES {
        names.insert(normalize(c));
    }
    names
}

/// Where each tool the agent can call is declared, in agent.yaml.
fn declared_tools(spec: &AgentSpec) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = spec
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.to_string(), join(&index("tools", i), "name")))
        .collect();
    for (server, s) in &spec.mcp_servers {
        let tp = join(&join("mcp_servers", server), "tools");
        for (i, t) in s.tools.iter().flatten().enumerate() {
            out.push((t.clone(), index(&tp, i)));
        }
    }
    for name in spec.http_tools.keys() {
        out.push((name.clone(), join("http_tools", name)));
    }
    for name in spec.bash_tools.keys() {
        out.push((name.clone(), join("bash_tools", name)));
    }
    out
}

fn tool_rules(pkg: &AgentPackage, prompt: &Prompt, mentions: &Mentions, out: &mut Out) {
    let specs: Vec<&AgentSpec> = std::iter::once(&pkg.agent)
        .chain(pkg.subagents.values())
        .collect();
    let known: HashSet<String> = specs
        .iter()
        .flat_map(|s| s.declared_tools().map(normalize).collect::<Vec<_>>())
        .collect();
    let open_mcp = specs.iter().any(|s| s.has_open_mcp_server());
    let not_tools = non_tool_names(pkg, prompt);
    for (word, path) in tool_like_words(prompt) {
        let n = normalize(&word);
        if known.contains(&n) || not_tools.contains(&n) {
            continue;
        }
        let (message, hint) = if open_mcp {
            (
                format!(
                    "the prompt names {word:?}, which no agent of the package declares (an MCP server without a tools whitelist might provide it)"
                ),
                format!(
                    "whitelist {word} under its MCP server's tools, declare it under tools:, or reword the prompt"
                ),
            )
        } else {
            (
                format!("the prompt names {word:?}, which no agent of the package declares"),
                format!(
                    "declare {word} under tools: (or http_tools / bash_tools), or remove it from the prompt"
                ),
            )
        };
        out.add(
            rules::UNDECLARED_TOOL,
            Severity::Warning,
            PROMPT_FILE,
            path,
            message,
            hint,
        );
    }
    for (name, path) in declared_tools(&pkg.agent) {
        if !mentions.mentions_tool(&name) {
            out.add(
                rules::UNUSED_TOOL,
                Severity::Warning,
                AGENT_FILE,
                path,
                format!("{name:?} is declared, but the prompt never mentions it"),
                format!("tell the model when to use {name} (a line in a tools section), or drop the declaration"),
            );
        }
    }
}

fn section_rules(prompt: &Prompt, out: &mut Out) {
    const PLACEHOLDERS: [&str; 6] = ["todo", "tbd", "fixme", "lorem ipsum", "...", "…"];
    let sections = prompt.sections();
    let normalized: Vec<String> = sections
        .iter()
        .map(|s| {
            s.content
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect();
    for (i, s) in sections.iter().enumerate() {
        let path = index("sections", i);
        let word_count = words(&s.content).count();
        let text = &normalized[i];
        let placeholder = PLACEHOLDERS.iter().any(|p| {
            text == p || text.starts_with(&format!("{p} ")) || text.starts_with(&format!("{p}:"))
        });
        if word_count < MIN_SECTION_WORDS || placeholder {
            out.add(
                rules::EMPTY_SECTION,
                Severity::Warning,
                PROMPT_FILE,
                join(&path, "content"),
                format!(
                    "section {:?} says next to nothing ({word_count} words{})",
                    s.name.as_str(),
                    if placeholder { ", a placeholder" } else { "" }
                ),
                "write what the model should know here, or remove the section",
            );
        }
        if let Some(first) = normalized[..i].iter().position(|t| t == text) {
            out.add(
                rules::DUPLICATE_SECTION,
                Severity::Warning,
                PROMPT_FILE,
                join(&path, "content"),
                format!(
                    "section {:?} repeats section {:?} (sections[{first}]) word for word",
                    s.name.as_str(),
                    sections[first].name.as_str()
                ),
                "keep one of the two",
            );
        }
    }
    if sections.len() > MAX_SECTIONS_COMPARED {
        out.skip(
            rules::NEAR_DUPLICATE_SECTION,
            format!(
                "the prompt has {} sections; near-duplicates are looked for in at most {MAX_SECTIONS_COMPARED}",
                sections.len()
            ),
        );
        return;
    }
    let shingles: Vec<Option<Vec<u64>>> = normalized.iter().map(|t| shingle_set(t)).collect();
    for i in 0..sections.len() {
        let Some(a) = &shingles[i] else { continue };
        for j in 0..i {
            let Some(b) = &shingles[j] else { continue };
            if normalized[i] == normalized[j] {
                continue;
            }
            let similarity = jaccard(a, b);
            if similarity >= NEAR_DUPLICATE_SIMILARITY {
                out.add(
                    rules::NEAR_DUPLICATE_SECTION,
                    Severity::Warning,
                    PROMPT_FILE,
                    join(&index("sections", i), "content"),
                    format!(
                        "section {:?} is {:.0}% the same as section {:?} (sections[{j}])",
                        sections[i].name.as_str(),
                        similarity * 100.0,
                        sections[j].name.as_str()
                    ),
                    "merge the two sections, or make each say something of its own",
                );
                break;
            }
        }
    }
}

/// The sorted, deduplicated hashes of a text's 3-word shingles (words
/// without their punctuation); `None` for texts too short to compare.
fn shingle_set(text: &str) -> Option<Vec<u64>> {
    use std::hash::{Hash, Hasher};
    let ws: Vec<&str> = words(text).collect();
    if ws.len() < MIN_WORDS_TO_COMPARE {
        return None;
    }
    let mut set: Vec<u64> = ws
        .windows(3)
        .map(|w| {
            // A fixed hasher: the same text gives the same set everywhere.
            let mut h = std::hash::DefaultHasher::new();
            w.hash(&mut h);
            h.finish()
        })
        .collect();
    set.sort_unstable();
    set.dedup();
    Some(set)
}

/// |A ∩ B| / |A ∪ B| of two sorted sets, in one merge pass.
fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        0.0
    } else {
        common as f64 / union as f64
    }
}

/// Phrases that ask for a capability. Network and storage are left out:
/// nearly every agent talks about searching and saving.
const CAPABILITY_PHRASES: &[(Capability, &[&str])] = &[
    (
        Capability::Camera,
        &[
            "camera",
            "webcam",
            "take a photo",
            "take a picture",
            "photograph the",
        ],
    ),
    (
        Capability::Microphone,
        &[
            "microphone",
            "voice command",
            "voice commands",
            "record audio",
            "listen to the user",
            "audio input",
        ],
    ),
    (
        Capability::ScreenCapture,
        &[
            "screenshot",
            "screenshots",
            "screen capture",
            "screen recording",
            "capture the screen",
        ],
    ),
    (
        Capability::Location,
        &[
            "user's location",
            "users location",
            "current location",
            "gps",
            "geolocation",
            "where the user is",
        ],
    ),
    (
        Capability::Filesystem,
        &[
            "filesystem",
            "file system",
            "local file",
            "local files",
            "local disk",
            "files on disk",
            "save to disk",
            "read files from",
        ],
    ),
    (
        Capability::Shell,
        &[
            "shell",
            "terminal",
            "command line",
            "run commands",
            "execute commands",
            "run the command",
        ],
    ),
    (Capability::Clipboard, &["clipboard"]),
    (
        Capability::Notifications,
        &[
            "send a notification",
            "send notifications",
            "push notification",
            "push notifications",
            "notify the user",
        ],
    ),
    (
        Capability::Background,
        &[
            "in the background",
            "while the user is away",
            "every hour",
            "every day",
            "periodically",
        ],
    ),
    (
        Capability::Keychain,
        &["keychain", "saved passwords", "credential store"],
    ),
    (
        Capability::Wallet,
        &["wallet", "send funds", "make a payment"],
    ),
    (
        Capability::Signing,
        &[
            "digital signature",
            "sign the transaction",
            "sign documents",
        ],
    ),
];

/// The prompt's template variables: each provided (the validation rule,
/// explained), those a host may leave empty, and declared ones never used.
fn variable_rules(agent: &AgentSpec, prompt: &Prompt, out: &mut Out) {
    let inject = agent
        .context
        .as_ref()
        .map_or(&[][..], |c| c.inject.as_slice());
    for d in crate::prompt::check_template_variables(prompt, inject) {
        out.add(
            rules::TEMPLATE_VARIABLE,
            Severity::Error,
            PROMPT_FILE,
            d.path,
            d.message,
            "the runtime fills in only what agent.yaml's context.inject lists and what prompt.yaml's variables declare (supplied by whoever runs the agent): inject it, declare it, or remove it",
        );
    }
    let required = |c: Capability| {
        agent
            .permissions
            .as_ref()
            .is_some_and(|p| p.required.contains(&c))
    };
    let mut warned = HashSet::new();
    let mut used = HashSet::new();
    for (path, root) in prompt.template_variables() {
        used.insert(root.to_owned());
        let Some(cap) = crate::agent::context::injected(root).and_then(|i| i.needs) else {
            continue;
        };
        if inject.iter().any(|i| i == root) && !required(cap) && warned.insert(root.to_owned()) {
            out.add(
                rules::OPTIONAL_CONTEXT_VARIABLE,
                Severity::Warning,
                PROMPT_FILE,
                path,
                format!(
                    "{{{{{root}}}}} is empty on a host that does not grant {cap}, which this agent asks for only optionally"
                ),
                format!(
                    "tell the model what to do when {root} is unknown, or list {cap} under permissions.required"
                ),
            );
        }
    }
    for (i, v) in prompt.variables().iter().enumerate() {
        if !used.contains(v) {
            out.add(
                rules::UNUSED_VARIABLE,
                Severity::Warning,
                PROMPT_FILE,
                index("variables", i),
                format!("variable {v} is declared but no section uses {{{{{v}}}}}"),
                format!("use {{{{{v}}}}} in a section or remove it from variables"),
            );
        }
    }
}

fn capability_rule(agent: &AgentSpec, prompt: &Prompt, out: &mut Out) {
    let requested: Vec<Capability> = agent
        .permissions
        .as_ref()
        .map(|p| p.requested().collect())
        .unwrap_or_default();
    let flat: Vec<String> = prompt
        .sections()
        .iter()
        .map(|s| {
            let t = strip_placeholders(&s.content).to_lowercase();
            format!(" {} ", t.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect();
    for (capability, phrases) in CAPABILITY_PHRASES {
        if requested.contains(capability) {
            continue;
        }
        // Scoped bash tools are how an agent runs commands without a shell.
        if *capability == Capability::Shell && !agent.bash_tools.is_empty() {
            continue;
        }
        let hit = flat.iter().enumerate().find_map(|(i, text)| {
            phrases
                .iter()
                .find(|p| contains_phrase(text, p))
                .map(|p| (i, *p))
        });
        if let Some((i, phrase)) = hit {
            out.add(
                rules::CAPABILITY_NOT_REQUESTED,
                Severity::Warning,
                PROMPT_FILE,
                join(&index("sections", i), "content"),
                format!(
                    "the prompt mentions {phrase:?}, which needs the {capability} capability ({} risk), but the agent does not request it",
                    capability.risk()
                ),
                format!(
                    "add {capability} to permissions.optional (with a reason), or take the request out of the prompt"
                ),
            );
        }
    }
}

fn size_rules(
    agent: &AgentSpec,
    tokens: Option<u64>,
    models: Option<&BTreeMap<String, ModelFacts>>,
    out: &mut Out,
) {
    let window = agent.context.as_ref().and_then(|c| c.window.as_ref());
    let max_tokens = window.and_then(|w| w.max_tokens);
    let smallest = models.and_then(|catalog| {
        agent
            .model_names()
            .filter_map(|m| catalog.get(m).map(|f| (m, f.context_window)))
            .min_by_key(|(_, w)| *w)
    });
    if models.is_none() && !agent.models.is_empty() {
        for rule in [
            rules::PROMPT_EXCEEDS_CONTEXT,
            rules::PROMPT_FILLS_CONTEXT,
            rules::WINDOW_EXCEEDS_MODEL,
        ] {
            out.skip(
                rule,
                "no models catalog at hand (no agent.lock and no registry)",
            );
        }
    }
    if let (Some(max), Some((model, model_window))) = (max_tokens, smallest)
        && max > model_window
    {
        out.add(
            rules::WINDOW_EXCEEDS_MODEL,
            Severity::Warning,
            AGENT_FILE,
            "context.window.max_tokens",
            format!("{max} tokens is more than {model} can hold ({model_window})"),
            format!("lower context.window.max_tokens to at most {model_window}"),
        );
    }
    let Some(tokens) = tokens else { return };
    if let Some((model, model_window)) = smallest {
        if tokens > model_window {
            out.add(
                rules::PROMPT_EXCEEDS_CONTEXT,
                Severity::Error,
                PROMPT_FILE,
                "",
                format!("the compiled prompt is about {tokens} tokens, more than {model}'s context window of {model_window}"),
                "shorten the prompt, or declare models with larger windows",
            );
        } else if tokens * 2 > model_window {
            out.add(
                rules::PROMPT_FILLS_CONTEXT,
                Severity::Warning,
                PROMPT_FILE,
                "",
                format!("the compiled prompt is about {tokens} tokens, more than half of {model}'s context window of {model_window}"),
                "shorten the prompt, so the conversation has room",
            );
        }
    }
    if let Some(max) = max_tokens {
        if tokens > max {
            out.add(
                rules::PROMPT_EXCEEDS_WINDOW,
                Severity::Error,
                PROMPT_FILE,
                "",
                format!("the compiled prompt is about {tokens} tokens, more than context.window.max_tokens ({max})"),
                "shorten the prompt, or raise context.window.max_tokens",
            );
        } else if let Some(trigger) = agent
            .context
            .as_ref()
            .and_then(|c| c.compaction.as_ref())
            .and_then(|c| c.trigger)
        {
            let at = (max as f64 * trigger).floor() as u64;
            if tokens >= at {
                out.add(
                    rules::PROMPT_TRIGGERS_COMPACTION,
                    Severity::Warning,
                    PROMPT_FILE,
                    "",
                    format!("the compiled prompt is about {tokens} tokens; compaction starts at {at} ({trigger} of {max}), so it would compact from the first turn"),
                    "shorten the prompt, or raise the window or the trigger",
                );
            }
        }
    }
}

fn permission_rule(agent: &AgentSpec, out: &mut Out) {
    let Some(permissions) = &agent.permissions else {
        return;
    };
    let lists = [
        ("required", &permissions.required),
        ("optional", &permissions.optional),
    ];
    for (list, caps) in lists {
        for (i, capability) in caps.iter().enumerate() {
            if capability.risk() < RiskLevel::High {
                continue;
            }
            let reason = permissions
                .config
                .get(capability)
                .and_then(|c| c.reason.as_deref())
                .is_some_and(|r| !r.trim().is_empty());
            if !reason {
                out.add(
                    rules::PERMISSION_WITHOUT_REASON,
                    Severity::Warning,
                    AGENT_FILE,
                    index(&join("permissions", list), i),
                    format!(
                        "{capability} is a {} risk capability and has no reason",
                        capability.risk()
                    ),
                    format!("add permissions.{capability}.reason saying why the agent needs it; hosts show it when they ask the user"),
                );
            }
        }
    }
}

/// Capabilities a declaration implies ([`host::implied`]) that no agent of
/// the package requests: the host grants them unasked, so the listing a
/// user approves would be incomplete. One finding per agent file and
/// capability, at its first source.
fn undeclared_capability_rule(pkg: &AgentPackage, out: &mut Out) {
    let declared: HashSet<Capability> = std::iter::once(&pkg.agent)
        .chain(pkg.subagents.values())
        .filter_map(|spec| spec.permissions.as_ref())
        .flat_map(|p| p.required.iter().chain(&p.optional).copied())
        .collect();
    let specs = std::iter::once((AGENT_FILE, &pkg.agent)).chain(
        pkg.subagents
            .iter()
            .map(|(path, spec)| (path.as_str(), spec)),
    );
    for (file, spec) in specs {
        let mut sources: BTreeMap<Capability, Vec<Requester>> = BTreeMap::new();
        for (capability, _, who) in host::implied(spec) {
            if !declared.contains(&capability) {
                sources.entry(capability).or_default().push(who);
            }
        }
        for (capability, who) in sources {
            let path = match &who[0] {
                Requester::BashTool(n) => join("bash_tools", n),
                Requester::HttpTool(n) => join("http_tools", n),
                Requester::McpServer(n) => join("mcp_servers", n),
                _ => "context.inject".to_owned(),
            };
            let named: Vec<String> = who.iter().map(ToString::to_string).collect();
            out.add(
                rules::UNDECLARED_CAPABILITY,
                Severity::Warning,
                file,
                path,
                format!(
                    "{} needs the {capability} capability ({} risk), which no agent requests",
                    named.join(", "),
                    capability.risk()
                ),
                format!("add {capability} to permissions.required (or optional) with a reason, so hosts and users see it"),
            );
        }
    }
}

fn dynamic_delegation(spec: &AgentSpec) -> bool {
    spec.tools.iter().any(|t| {
        t.is_delegate()
            && match &t.config {
                Some(ToolConfig::Delegate(c)) => c
                    .mode
                    .is_none_or(|m| m == crate::agent::DelegateMode::Dynamic),
                _ => true,
            }
    })
}

fn subagent_rule(pkg: &AgentPackage, out: &mut Out) {
    if !dynamic_delegation(&pkg.agent) {
        return;
    }
    for (path, spec) in &pkg.subagents {
        let words = spec
            .description
            .as_deref()
            .map_or(0, |d| d.split_whitespace().count());
        if words < MIN_DESCRIPTION_WORDS {
            out.add(
                rules::SUBAGENT_WITHOUT_DESCRIPTION,
                Severity::Warning,
                path.as_str(),
                "description",
                format!(
                    "{} has {} description, and dynamic delegation picks specialists by their description",
                    spec.name,
                    if words == 0 { "no".to_owned() } else { format!("a {words}-word") }
                ),
                "describe what this specialist is good at, in a sentence or two",
            );
        }
    }
}

fn depth_rule(agent: &AgentSpec, out: &mut Out) {
    let limits = constraints::effective(agent);
    for (i, t) in agent.tools.iter().enumerate() {
        if let Some(ToolConfig::Delegate(cfg)) = &t.config
            && let Some(depth) = cfg.max_depth
            && depth > limits.max_delegation_depth
        {
            out.add(
                rules::DELEGATION_DEPTH,
                Severity::Error,
                AGENT_FILE,
                join(&join(&index("tools", i), "config"), "max_depth"),
                format!(
                    "delegate.max_depth {depth} is above constraints.limits.max_delegation_depth ({}{})",
                    limits.max_delegation_depth,
                    if limits.max_delegation_depth_is_default { ", the default" } else { "" }
                ),
                "lower max_depth, or raise constraints.limits.max_delegation_depth",
            );
        }
    }
}

fn price_rule(agent: &AgentSpec, models: Option<&BTreeMap<String, ModelFacts>>, out: &mut Out) {
    let Some(budget) = agent.constraints.as_ref().and_then(|c| c.budget.as_ref()) else {
        return;
    };
    let Some(catalog) = models else {
        if budget.input_1m_price.is_some() || budget.output_1m_price.is_some() {
            out.skip(
                rules::BUDGET_PRICE_MISMATCH,
                "no models catalog at hand (no agent.lock and no registry)",
            );
        }
        return;
    };
    let known: Vec<(&str, &ModelFacts)> = agent
        .model_names()
        .filter_map(|m| catalog.get(m).map(|f| (m, f)))
        .collect();
    let prices = [
        (
            "input_1m_price",
            budget.input_1m_price,
            known
                .iter()
                .filter_map(|(m, f)| f.input_1m_price.map(|p| (*m, p)))
                .collect::<Vec<_>>(),
        ),
        (
            "output_1m_price",
            budget.output_1m_price,
            known
                .iter()
                .filter_map(|(m, f)| f.output_1m_price.map(|p| (*m, p)))
                .collect::<Vec<_>>(),
        ),
    ];
    for (field, declared, catalog_prices) in prices {
        let Some(declared) = declared else { continue };
        if catalog_prices.is_empty() {
            continue;
        }
        let agrees = catalog_prices
            .iter()
            .any(|(_, p)| (declared - p).abs() <= PRICE_TOLERANCE * p.abs().max(f64::MIN_POSITIVE));
        if !agrees {
            let listed: Vec<String> = catalog_prices
                .iter()
                .map(|(m, p)| format!("{m} ${p:.2}"))
                .collect();
            out.add(
                rules::BUDGET_PRICE_MISMATCH,
                Severity::Warning,
                AGENT_FILE,
                join("constraints.budget", field),
                format!(
                    "${declared:.2} per 1M tokens matches none of the declared models in the registry's catalog ({})",
                    listed.join(", ")
                ),
                "use the catalog's price of the model the budget is for, or the budget will be tracked in the wrong dollars",
            );
        }
    }
}
