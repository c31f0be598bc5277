//! The quality review of an agent directory: the prompt rules of
//! `core::quality`, plus a model's review when `AGENTLANG_REVIEW_URL`
//! names a chat-completions endpoint (`AGENTLANG_REVIEW_KEY` its bearer
//! key, `AGENTLANG_REVIEW_MODEL` the model). `quality DIR` and
//! `build --quality` both run it.
//!
//! The models catalog the size and price rules need comes from agent.lock
//! when it describes every declared model, else from the registry; without
//! either those rules are skipped, and the report says so.

use std::{io::Read, time::Duration};

use agentlang_core::{
    SourceTree,
    package::{AgentPackage, PROMPT_FILE},
    prompt::{Format, parse_prompt},
    quality::{self, ModelReview, PromptText, QualityInput, QualityReport, review},
};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::json;

use crate::{catalogs, env::Env, lock, output::Output};

/// Largest reviewer answer read.
const MAX_REVIEW_BYTES: u64 = 1024 * 1024;
/// How long a reviewer may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(120);

/// The full review of a validated agent directory.
pub fn review_package(env: &Env, tree: &SourceTree, pkg: &AgentPackage) -> Result<QualityReport> {
    let prompt = tree
        .get(PROMPT_FILE)
        .map(parse_prompt)
        .transpose()
        .map_err(|d| anyhow!("prompt.yaml is not valid: {d}"))?;
    let models = models_for(env, tree, pkg);
    let mut report = quality::check(&QualityInput {
        package: pkg,
        prompt: prompt
            .as_ref()
            .map_or(PromptText::Missing, PromptText::Plain),
        models: models.as_ref(),
    });
    match (Reviewer::from_env()?, &prompt) {
        (None, _) => report.merge_model_review(
            ModelReview::Skipped {
                reason: "AGENTLANG_REVIEW_URL is not set".to_owned(),
            },
            Vec::new(),
        ),
        (Some(_), None) => report.merge_model_review(
            ModelReview::Skipped {
                reason: "the package has no prompt.yaml".to_owned(),
            },
            Vec::new(),
        ),
        (Some(reviewer), Some(prompt)) => match reviewer.review(pkg, prompt) {
            Ok(findings) => report.merge_model_review(
                ModelReview::Done {
                    model: reviewer.model,
                    findings: findings.len(),
                },
                findings,
            ),
            Err(e) => {
                let reason = crate::client::one_line(&format!("{e:#}"));
                report.merge_model_review(
                    ModelReview::Failed {
                        reason: reason.clone(),
                    },
                    vec![review::failure_finding(&reason)],
                );
            }
        },
    }
    Ok(report)
}

/// The lock's models when it covers every declared one, else the
/// registry's catalog, else none.
fn models_for(
    env: &Env,
    tree: &SourceTree,
    pkg: &AgentPackage,
) -> Option<std::collections::BTreeMap<String, quality::ModelFacts>> {
    if let Ok(Some(lock)) = lock::read_existing(tree) {
        let models = catalogs::models_from_lock(&lock);
        if pkg.agent.model_names().all(|m| models.contains_key(m)) {
            return Some(models);
        }
    }
    if pkg.agent.models.is_empty() && pkg.agent.constraints.is_none() {
        return Some(Default::default());
    }
    env.anonymous()
        .ok()
        .and_then(|client| catalogs::fetch_models(&client).ok())
}

/// Prints the report; returns whether it passes.
pub fn print_report(
    out: &Output,
    shown: &str,
    report: &QualityReport,
    deny_warnings: bool,
) -> bool {
    let passed = report.passes(deny_warnings);
    if out.json {
        out.emit(
            &json!({
                "dir": shown,
                "passed": passed,
                "summary": report.summary(),
                "report": report,
            }),
            String::new,
        );
        return passed;
    }
    for f in &report.findings {
        let line = f.to_string();
        let painted = match f.severity {
            quality::Severity::Error => out.red(&line),
            quality::Severity::Warning => out.yellow(&line),
        };
        eprintln!("{painted}");
        if let Some(hint) = &f.hint {
            eprintln!("  hint: {hint}");
        }
    }
    if let Some(more) = report.more() {
        eprintln!("{more}, not listed");
    }
    for s in &report.skipped {
        eprintln!("skipped: {} ({})", s.rule, s.reason);
    }
    match &report.model_review {
        Some(ModelReview::Skipped { reason }) => eprintln!("model review: skipped ({reason})"),
        Some(ModelReview::Done { model, findings }) => {
            eprintln!("model review: {model}, {findings} finding(s), marked (model)");
        }
        Some(ModelReview::Failed { reason }) => {
            eprintln!(
                "{}",
                out.yellow(&format!("model review: failed ({reason})"))
            );
        }
        None => {}
    }
    let tokens = report
        .prompt_tokens
        .map(|t| format!(", prompt about {t} tokens"))
        .unwrap_or_default();
    let mark = if passed {
        out.green("✓")
    } else {
        out.red("✗")
    };
    let denied = if !passed && deny_warnings && report.count(quality::Severity::Error) == 0 {
        " (--deny warnings)"
    } else {
        ""
    };
    crate::output::print_line(&format!(
        "{mark} quality of {shown}: {}{tokens}{denied}",
        report.summary()
    ));
    passed
}

/// A chat-completions endpoint from the environment.
#[derive(Debug)]
struct Reviewer {
    url: String,
    key: Option<String>,
    model: String,
}

impl Reviewer {
    fn from_env() -> Result<Option<Self>> {
        let Some(base) = std::env::var("AGENTLANG_REVIEW_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
        else {
            return Ok(None);
        };
        let base = base.trim().trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("AGENTLANG_REVIEW_URL={base:?} is not an http(s) URL");
        }
        let url = if base.ends_with("/chat/completions") {
            base
        } else {
            format!("{base}/chat/completions")
        };
        Ok(Some(Self {
            url,
            key: std::env::var("AGENTLANG_REVIEW_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
            model: std::env::var("AGENTLANG_REVIEW_MODEL")
                .ok()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| review::DEFAULT_MODEL.to_owned()),
        }))
    }

    fn review(
        &self,
        pkg: &AgentPackage,
        prompt: &agentlang_core::prompt::Prompt,
    ) -> Result<Vec<quality::Finding>> {
        let body = review::request_body(&self.model, pkg, &prompt.compile(Format::Markdown));
        let http = reqwest::blocking::Client::builder()
            .user_agent(concat!("agentlang/", env!("CARGO_PKG_VERSION")))
            .timeout(REVIEW_TIMEOUT)
            .build()
            .context("setting up the HTTP client")?;
        let mut request = http.post(&self.url).json(&body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .with_context(|| format!("asking the reviewer at {}", self.url))?;
        let status = response.status();
        let mut bytes = Vec::new();
        response
            .take(MAX_REVIEW_BYTES + 1)
            .read_to_end(&mut bytes)
            .context("reading the reviewer's answer")?;
        if bytes.len() as u64 > MAX_REVIEW_BYTES {
            bail!("the reviewer's answer is larger than {MAX_REVIEW_BYTES} bytes");
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let text: String = text.chars().take(200).collect();
            bail!("the reviewer answered {status}: {text}");
        }
        Ok(review::parse_response(&bytes, prompt)?)
    }
}
