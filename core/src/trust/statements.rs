//! The trust picture in plain language, most dangerous first: one line
//! per thing the agent can do outside itself, for the catalog page and
//! `inspect`.

use std::fmt;

use serde::Serialize;

use super::AgentTrust;
use crate::agent::{Capability, HttpAuth, RiskLevel};

/// "Runs `npx -y @stripe/mcp` on your machine with STRIPE_SECRET_KEY".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Statement {
    pub risk: RiskLevel,
    /// What it is about: `MCP server Stripe`, `sandbox`.
    pub subject: String,
    /// The words before the code, the code (a command, a path, a URL) and
    /// the words after it.
    pub before: String,
    pub code: Option<String>,
    pub after: String,
}

impl Statement {
    fn new(risk: RiskLevel, subject: impl Into<String>, before: impl Into<String>) -> Self {
        Self {
            risk,
            subject: subject.into(),
            before: before.into(),
            code: None,
            after: String::new(),
        }
    }

    fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    fn after(mut self, after: impl Into<String>) -> Self {
        self.after = after.into();
        self
    }
}

/// Plain text, the code in backticks.
impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.before)?;
        if let Some(code) = &self.code {
            write!(f, " `{code}`")?;
        }
        if !self.after.is_empty() {
            write!(f, " {}", self.after)?;
        }
        Ok(())
    }
}

fn by(declared_by: &Option<String>) -> String {
    declared_by
        .as_deref()
        .map(|s| format!(" (subagent {s})"))
        .unwrap_or_default()
}

fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// What injecting a context value means, and how risky it is.
fn context_statement(entry: &str) -> Statement {
    let (risk, words) = match entry {
        "location" => (Capability::Location.risk(), "Receives your location"),
        "user_profile" => (RiskLevel::Medium, "Receives your user profile"),
        "time" => (RiskLevel::Low, "Receives the current time"),
        _ => (RiskLevel::Low, "Receives"),
    };
    let s = Statement::new(risk, format!("context {entry}"), words);
    if words == "Receives" {
        s.code(entry).after("from the host")
    } else {
        s.after("from the host")
    }
}

impl AgentTrust {
    /// Every outward-reaching declaration as a sentence, riskiest first
    /// (ties keep the order: MCP servers, bash tools, HTTP tools, tools,
    /// context, sandbox, crew).
    pub fn statements(&self) -> Vec<Statement> {
        let mut out = Vec::new();
        for s in &self.mcp_servers {
            let env = if s.env.is_empty() {
                String::new()
            } else {
                format!(" with {}", and_list(&s.env))
            };
            out.push(
                Statement::new(
                    Capability::Shell.risk(),
                    format!("MCP server {}{}", s.name, by(&s.declared_by)),
                    "Runs",
                )
                .code(s.command_line())
                .after(format!("on your machine{env}")),
            );
        }
        for t in &self.bash_tools {
            out.push(
                Statement::new(
                    Capability::Shell.risk(),
                    format!("bash tool {}{}", t.name, by(&t.declared_by)),
                    "Runs the shell command",
                )
                .code(&t.command)
                .after("on your machine"),
            );
            for d in &t.dependencies {
                for (os, command) in &d.install {
                    out.push(
                        Statement::new(
                            Capability::Shell.risk(),
                            format!("bash tool {}{}", t.name, by(&t.declared_by)),
                            format!("May install {} with", d.name),
                        )
                        .code(command)
                        .after(format!("on {}", os_name(*os))),
                    );
                }
            }
        }
        for t in &self.http_tools {
            let subject = format!("HTTP tool {}{}", t.name, by(&t.declared_by));
            let method = t.method.as_str();
            let credential = match (t.oauth.as_slice(), t.auth) {
                ([], Some(HttpAuth::Bearer)) => " with a bearer token".to_owned(),
                ([], Some(HttpAuth::Basic)) => " with a user name and password".to_owned(),
                ([], Some(HttpAuth::ApiKey)) => " with an API key".to_owned(),
                ([], _) => String::new(),
                (providers, _) => format!(" with your {} OAuth token", and_list(providers)),
            };
            let risk = if t.oauth.is_empty() {
                Capability::Network.risk()
            } else {
                Capability::Oauth.risk()
            };
            out.push(
                Statement::new(risk, subject, format!("Sends {method} requests to"))
                    .code(&t.endpoint)
                    .after(credential.trim_start().to_owned()),
            );
        }
        for t in &self.tools {
            let risk = t
                .capabilities
                .iter()
                .map(|c| c.risk())
                .max()
                .unwrap_or(RiskLevel::Low);
            let needs: Vec<String> = t.capabilities.iter().map(ToString::to_string).collect();
            let after = if needs.is_empty() {
                "which asks for no capabilities".to_owned()
            } else {
                format!("which asks for {}", and_list(&needs))
            };
            out.push(
                Statement::new(risk, format!("tool {}", t.tool), "Uses the registry tool")
                    .code(t.tool.to_string())
                    .after(after),
            );
        }
        for entry in &self.context {
            out.push(context_statement(entry));
        }
        let c = &self.constraints;
        for path in &c.allowed_paths {
            out.push(
                Statement::new(
                    Capability::Filesystem.risk(),
                    "sandbox",
                    "May read and write files under",
                )
                .code(path),
            );
        }
        for url in &c.allowed_urls {
            out.push(Statement::new(Capability::Network.risk(), "sandbox", "May call").code(url));
        }
        if let Some(crew) = &self.crew {
            for m in &crew.members {
                let task = m
                    .task
                    .as_deref()
                    .map(|t| format!("to {}", t.trim().trim_end_matches('.')))
                    .unwrap_or_default();
                out.push(
                    Statement::new(
                        RiskLevel::Low,
                        "crew",
                        format!("Hands work ({}) to", crew.process),
                    )
                    .code(&m.path)
                    .after(task),
                );
            }
        }
        // Stable: equal risks keep the order above.
        out.sort_by_key(|s| std::cmp::Reverse(s.risk));
        out
    }
}

fn os_name(os: crate::agent::Os) -> &'static str {
    match os {
        crate::agent::Os::Darwin => "macOS",
        crate::agent::Os::Linux => "Linux",
        crate::agent::Os::Windows => "Windows",
    }
}
