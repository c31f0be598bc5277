//! `trust add|list|remove NAME`: the CI identities a package trusts to
//! publish it (docs/trusted-publishing.md), through
//! `/api/v1/{kind}/{name}/trusted-publishers`.

use std::process::ExitCode;

use agentlang_core::PackageName;
use anyhow::Result;
use serde_json::{Value, json};

use crate::{
    args::{KindArg, TrustCommand},
    env::Env,
};

pub fn run(env: &Env, command: TrustCommand) -> Result<ExitCode> {
    let client = env.authenticated()?;
    let path_of = |name: &str, kind: Option<KindArg>| -> Result<String> {
        let name = PackageName::new(name).map_err(|e| anyhow::anyhow!("{name:?}: {e}"))?;
        let kind = crate::index::which_kind(&client, &name, kind.map(KindArg::kind))?;
        Ok(format!(
            "/api/v1/{}/{name}/trusted-publishers",
            kind.plural()
        ))
    };
    match command {
        TrustCommand::Add {
            name,
            kind,
            issuer,
            repository,
            workflow,
            environment,
        } => {
            let body = json!({
                "issuer": issuer, "repository": repository, "workflow": workflow,
                "environment": environment,
            });
            let path = path_of(&name, kind)?;
            let answer: Value =
                crate::two_factor::send_json(env, &client, || client.post(&path).json(&body))?;
            env.out.emit(&answer, || {
                format!(
                    "trusted publisher {} added: {}",
                    answer["id"],
                    describe(&answer)
                )
            });
        }
        TrustCommand::List { name, kind } => {
            let answer: Value = client.send_json(client.get(&path_of(&name, kind)?))?;
            env.out.emit(&answer, || listing(&answer));
        }
        TrustCommand::Remove { name, id, kind } => {
            let path = format!("{}/{id}", path_of(&name, kind)?);
            crate::two_factor::send(env, &client, || client.delete(&path))?;
            let answer = json!({"removed": id});
            env.out.emit(&answer, || {
                format!("trusted publisher {id} removed; its live tokens are revoked")
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `issuer repository workflow [environment]` on one line.
fn describe(publisher: &Value) -> String {
    let text = |field: &str| publisher[field].as_str().unwrap_or_default().to_owned();
    let mut line = format!(
        "{} {} {}",
        text("issuer"),
        text("repository"),
        text("workflow")
    );
    if let Some(environment) = publisher["environment"].as_str() {
        line.push_str(&format!(" (environment {environment})"));
    }
    line
}

fn listing(answer: &Value) -> String {
    let mut out = format!(
        "{} {}\n",
        answer["kind"].as_str().unwrap_or_default(),
        answer["name"].as_str().unwrap_or_default()
    );
    let publishers = answer["publishers"].as_array().cloned().unwrap_or_default();
    if publishers.is_empty() {
        out.push_str("  no trusted publishers\n");
    }
    for publisher in &publishers {
        out.push_str(&format!("  {}  {}\n", publisher["id"], describe(publisher)));
    }
    let tokens = answer["tokens"].as_array().cloned().unwrap_or_default();
    if !tokens.is_empty() {
        out.push_str("tokens minted (newest first):\n");
    }
    for token in &tokens {
        let identity = &token["identity"];
        let state = if token["revoked_at"].is_null() {
            ""
        } else {
            " (revoked)"
        };
        out.push_str(&format!(
            "  {} via {}: {} {} run {} at {}{state}\n",
            token["token_id"].as_str().unwrap_or_default(),
            token["trusted_publisher_id"],
            identity["repository"].as_str().unwrap_or_default(),
            identity["ref"].as_str().unwrap_or_default(),
            identity["run_id"].as_str().unwrap_or_default(),
            token["created_at"],
        ));
    }
    out.trim_end().to_owned()
}
