//! `stage list|approve|reject` and `publish --stage`'s answer: staged
//! releases (docs/staged-releases.md). Approving and rejecting go through
//! the second-factor flow, like every owner decision.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::{Value, json};

use crate::{args::StageCommand, env::Env};

pub fn run(env: &Env, command: StageCommand) -> Result<ExitCode> {
    let client = env.authenticated()?;
    match command {
        StageCommand::List { state } => {
            let mut path = "/api/v1/staged".to_owned();
            if let Some(state) = state {
                path.push_str(&format!("?state={state}"));
            }
            let page: Value = client.send_json(client.get(&path))?;
            env.out.emit(&page, || {
                let rows = page["staged"].as_array().cloned().unwrap_or_default();
                if rows.is_empty() {
                    return "no staged versions".to_owned();
                }
                rows.iter().map(line).collect::<Vec<_>>().join("\n")
            });
        }
        StageCommand::Approve { id } => {
            let path = format!("/api/v1/staged/{id}/approve");
            let record: Value =
                crate::two_factor::send_json(env, &client, || client.post(&path).json(&json!({})))?;
            env.out.emit(&record, || {
                format!(
                    "{} approved: published {} {}@{}",
                    env.out.green("✓"),
                    record["kind"].as_str().unwrap_or_default(),
                    record["name"].as_str().unwrap_or_default(),
                    record["version"].as_str().unwrap_or_default(),
                )
            });
        }
        StageCommand::Reject { id, reason } => {
            let path = format!("/api/v1/staged/{id}/reject");
            let body = json!({ "reason": reason });
            let record: Value =
                crate::two_factor::send_json(env, &client, || client.post(&path).json(&body))?;
            env.out
                .emit(&record, || format!("rejected: {}", line(&record)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `publish --stage`'s answer: the staged record and how to decide it.
pub fn staged(env: &Env, record: &Value) -> Result<ExitCode> {
    env.out.emit(record, || {
        format!(
            "{} staged {}\n  an owner publishes it with: agentlang stage approve {}",
            env.out.green("✓"),
            line(record),
            record["id"].as_str().unwrap_or_default(),
        )
    });
    Ok(ExitCode::SUCCESS)
}

fn line(v: &Value) -> String {
    format!(
        "{}  {} {}@{}  {}  staged by {}",
        v["id"].as_str().unwrap_or_default(),
        v["kind"].as_str().unwrap_or_default(),
        v["name"].as_str().unwrap_or_default(),
        v["version"].as_str().unwrap_or_default(),
        v["state"].as_str().unwrap_or_default(),
        v["staged_by"].as_str().unwrap_or_default(),
    )
}
