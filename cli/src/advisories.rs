//! Security advisories of pinned packages (docs/advisories.md): the
//! registry's audit of an agent.lock (`POST /api/v1/audit`), matched back to
//! the pins here with core's own evaluation of OSV ranges, so each finding
//! names its pin. `audit` prints them; `lock` and `install` warn, one line
//! per advisory per affected pin.

use agentlang_core::{
    Kind, PackageName, Version,
    advisories::{Advisory, Severity},
    lockfile::Lockfile,
    protocols::ProtocolSource,
};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{client::Client, env::Env};

/// One advisory affecting one pin.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub id: String,
    pub severity: Severity,
    pub kind: Kind,
    #[serde(serialize_with = "as_str")]
    pub name: PackageName,
    #[serde(serialize_with = "as_display")]
    pub version: Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

fn as_str<S: serde::Serializer>(name: &PackageName, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(name.as_str())
}

fn as_display<S: serde::Serializer>(v: &Version, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

impl Finding {
    /// `high x_AGENTLANG-2026-0001 tool web_fetch@1.2.0: <summary>`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} {} {} {}@{}",
            self.severity, self.id, self.kind, self.name, self.version
        );
        if let Some(summary) = &self.summary {
            line.push_str(": ");
            line.push_str(&crate::client::one_line(summary));
        }
        line
    }
}

/// The audit's answer: the advisories as served, and one finding per
/// advisory per pin it affects.
#[derive(Debug, Clone, Serialize)]
pub struct Audit {
    pub advisories: Vec<Value>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Deserialize)]
struct Answer {
    advisories: Vec<Value>,
}

/// The pins an audit looks at, as the registry does: tools, skills and
/// protocol packages.
fn pins(lock: &Lockfile) -> Vec<(Kind, PackageName, Version)> {
    let tools = lock
        .tools
        .iter()
        .map(|(n, t)| (Kind::Tool, n.clone(), t.version.clone()));
    let skills = lock
        .skills
        .iter()
        .map(|(n, s)| (Kind::Skill, n.clone(), s.version.clone()));
    let protocols = lock.protocols.iter().filter_map(|(n, p)| {
        (p.source == ProtocolSource::Package)
            .then(|| PackageName::new(n.as_str()).ok())
            .flatten()
            .map(|name| (Kind::Protocol, name, p.version.clone()))
    });
    tools.chain(skills).chain(protocols).collect()
}

/// The findings of `advisories` (OSV documents) for `pins`, most severe
/// first, then by id and pin. A document that does not read is skipped
/// with a warning.
pub fn findings(
    env: &Env,
    advisories: &[Value],
    pins: &[(Kind, PackageName, Version)],
) -> Vec<Finding> {
    let mut found = Vec::new();
    for document in advisories {
        let parsed = serde_json::to_vec(document)
            .ok()
            .and_then(|bytes| Advisory::parse(&bytes).ok());
        let Some(advisory) = parsed else {
            warn(
                env,
                "the registry answered an advisory that does not read as OSV; skipped",
            );
            continue;
        };
        for (kind, name, version) in pins {
            if advisory.affects(*kind, name, version) {
                found.push(Finding {
                    id: advisory
                        .id
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    severity: advisory.severity,
                    kind: *kind,
                    name: name.clone(),
                    version: version.clone(),
                    summary: advisory.summary.clone(),
                });
            }
        }
    }
    found.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| a.name.cmp(&b.name))
    });
    found
}

/// `warning: ...` on stderr (shown with `-q` too, as warnings are).
fn warn(env: &Env, line: &str) {
    eprintln!("{} {line}", env.out.yellow("warning:"));
}

/// Audits a lock with the registry.
pub fn audit(env: &Env, client: &Client, lock: &Lockfile) -> Result<Audit> {
    let text = lock.to_yaml().context("writing the lock for the audit")?;
    let answer: Answer = client.send_json(
        client
            .post("/api/v1/audit")
            .header(reqwest::header::CONTENT_TYPE, "application/yaml")
            .body(text),
    )?;
    let findings = findings(env, &answer.advisories, &pins(lock));
    Ok(Audit {
        advisories: answer.advisories,
        findings,
    })
}

/// Warns, one line per advisory per affected pin, of what a lock pins
/// (`lock` and `install`). The audit is advice: when it cannot be had,
/// one warning says so and the command goes on.
pub fn warn_lock(env: &Env, lock: &Lockfile) {
    let result = env.anonymous().and_then(|client| audit(env, &client, lock));
    match result {
        Ok(audit) => {
            for finding in &audit.findings {
                warn(
                    env,
                    &format!(
                        "advisory {} (run `agentlang audit` for details)",
                        finding.line()
                    ),
                );
            }
        }
        Err(e) => warn(
            env,
            &format!("could not audit the pins for advisories: {e:#}"),
        ),
    }
}

/// [`warn_lock`] for an install: the installed agent's lock.
pub fn warn_install(env: &Env, install: &crate::install::LoadedInstall) {
    if let Some(lock) = &install.package.lock {
        warn_lock(env, lock);
    }
}
