//! The optional model review: the compiled prompt and a summary of the
//! agent's spec go to a model behind the widely used chat-completions JSON
//! API (`POST {base}/chat/completions`), with a fixed rubric that asks for
//! findings as JSON. The answer's findings join the report marked
//! [`Source::Model`], rule [`rules::MODEL_REVIEW`].
//!
//! This module builds the request body and reads the response body; the
//! CLI does the HTTP (this crate does no IO). A model's verdict is never
//! more than a warning: a language model's judgement should not fail a
//! build on its own, though `--deny warnings` makes it.

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::{Finding, Severity, Source, rules};
use crate::{
    diagnostics::index,
    package::{AgentPackage, PROMPT_FILE},
    prompt::Prompt,
};

/// Most findings taken from one answer.
pub const MAX_MODEL_FINDINGS: usize = 50;
/// Longest message or hint kept from the model, in characters.
pub const MAX_MODEL_TEXT: usize = 500;
/// The model asked when none is configured.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// The fixed instructions the reviewer works to.
pub const RUBRIC: &str = "You review the system prompt of an AI agent against the agent's declared spec. \
Look for: instructions that contradict each other; tools the prompt relies on that the spec does not declare; \
declared tools the prompt never explains; capabilities (camera, location, files, shell, payments) the prompt asks for \
that the spec's permissions do not request; vague or missing guidance on when to stop, what to do on errors, and how \
to treat untrusted content (prompt injection); sections that repeat each other. Report only real problems. \
Answer with one JSON object and nothing else: \
{\"findings\": [{\"severity\": \"warning\" or \"error\", \"section\": \"<section name or empty>\", \
\"message\": \"<what is wrong, one sentence>\", \"hint\": \"<how to fix it, one sentence>\"}]}. \
An empty list means the prompt is fine.";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("the reviewer's answer is not chat-completions JSON: {0}")]
    NotJson(String),
    #[error("the reviewer's answer has no choices[0].message.content")]
    NoContent,
    #[error("the reviewer's message is not the JSON the rubric asks for: {0}")]
    BadFindings(String),
}

/// What the reviewer is told about the agent besides the prompt.
#[derive(Debug, Serialize)]
struct SpecSummary<'a> {
    name: &'a str,
    description: Option<&'a str>,
    tools: Vec<&'a str>,
    permissions: Vec<String>,
    subagents: Vec<&'a str>,
    skills: Vec<&'a str>,
}

fn summary(pkg: &AgentPackage) -> SpecSummary<'_> {
    SpecSummary {
        name: pkg.agent.name.as_str(),
        description: pkg.agent.description.as_deref(),
        tools: pkg.agent.declared_tools().collect(),
        permissions: pkg
            .agent
            .permissions
            .as_ref()
            .map(|p| p.requested().map(|c| c.to_string()).collect())
            .unwrap_or_default(),
        subagents: pkg.subagents.values().map(|s| s.name.as_str()).collect(),
        skills: pkg.skills.keys().map(|s| s.as_str()).collect(),
    }
}

/// The request body: the rubric as the system message; the spec summary
/// and the compiled prompt as the user message. Temperature 0 and a JSON
/// answer, so reviews vary as little as a model allows.
pub fn request_body(model: &str, pkg: &AgentPackage, compiled_prompt: &str) -> Json {
    let spec = serde_json::to_string_pretty(&summary(pkg)).unwrap_or_default();
    json!({
        "model": model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": RUBRIC},
            {"role": "user", "content": format!(
                "The agent's spec:\n{spec}\n\nThe compiled prompt (markdown):\n<<<PROMPT\n{compiled_prompt}\nPROMPT>>>"
            )},
        ],
    })
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_MODEL_TEXT) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// A message content as JSON: bare, or inside a ```json fence.
fn content_json(content: &str) -> Result<Json, ReviewError> {
    let trimmed = content.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(unfenced.trim()).map_err(|e| ReviewError::BadFindings(e.to_string()))
}

/// Reads a chat-completions response body into findings. A section the
/// model names is mapped to its path in prompt.yaml when it exists.
pub fn parse_response(body: &[u8], prompt: &Prompt) -> Result<Vec<Finding>, ReviewError> {
    let response: Json =
        serde_json::from_slice(body).map_err(|e| ReviewError::NotJson(e.to_string()))?;
    let content = response
        .pointer("/choices/0/message/content")
        .and_then(Json::as_str)
        .ok_or(ReviewError::NoContent)?;
    let answer = content_json(content)?;
    let items = answer
        .get("findings")
        .and_then(Json::as_array)
        .ok_or_else(|| ReviewError::BadFindings("no `findings` list".into()))?;
    let mut findings = Vec::new();
    for item in items.iter().take(MAX_MODEL_FINDINGS) {
        let Some(message) = item
            .get("message")
            .and_then(Json::as_str)
            .filter(|m| !m.trim().is_empty())
        else {
            continue;
        };
        let section = item.get("section").and_then(Json::as_str).unwrap_or("");
        let path = prompt
            .sections()
            .iter()
            .position(|s| s.name.as_str() == section)
            .map(|i| index("sections", i))
            .unwrap_or_default();
        findings.push(Finding {
            rule: rules::MODEL_REVIEW.to_owned(),
            // Never more than a warning (see the module docs).
            severity: Severity::Warning,
            file: Some(PROMPT_FILE.to_owned()),
            path,
            message: clip(message.trim()),
            hint: item
                .get("hint")
                .and_then(Json::as_str)
                .filter(|h| !h.trim().is_empty())
                .map(|h| clip(h.trim())),
            source: Source::Model,
        });
    }
    Ok(findings)
}

/// The finding that stands for a review that failed, so `--deny warnings`
/// does not pass a build whose reviewer never answered.
pub fn failure_finding(reason: &str) -> Finding {
    Finding {
        rule: rules::MODEL_REVIEW_FAILED.to_owned(),
        severity: Severity::Warning,
        file: None,
        path: String::new(),
        message: format!("the model review failed: {}", clip(reason)),
        hint: Some("check AGENTLANG_REVIEW_URL and AGENTLANG_REVIEW_KEY, or unset them to skip the model review".to_owned()),
        source: Source::Model,
    }
}
