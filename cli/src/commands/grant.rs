//! `grant NAME --to USERNAME [--versions REQ] [--revoke]` and `grant list
//! [NAME]`: a sealed agent's prompt key, wrapped here to the grantee's
//! registered recipients, so the registry only ever holds what it cannot
//! open (docs/prompt-grants.md).

use std::process::ExitCode;

use agentlang_core::{PackageName, Username, grants, names::parse_requirement};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{
    args::{GrantArgs, GrantCommand},
    client::Client,
    env::Env,
    keyfiles,
};

pub fn run(env: &Env, args: GrantArgs) -> Result<ExitCode> {
    if let Some(GrantCommand::List { name }) = args.command {
        return list(env, name.as_deref());
    }
    let (Some(name), Some(to)) = (args.name, args.to) else {
        bail!("name the agent and the account: agentlang grant NAME --to USERNAME");
    };
    let name = PackageName::new(name)?;
    let to = Username::parse(&to).map_err(anyhow::Error::msg)?;
    let client = env.authenticated()?;
    let path = format!(
        "/api/v1/agents/{}/grants/{}",
        name.normalized(),
        to.as_str()
    );
    if args.revoke {
        client.send(client.delete(&path))?;
        env.out
            .emit(&json!({ "agent": name, "revoked": to }), || {
                format!(
                    "{} revoked {to}'s grants of {name}\n  the registry no longer serves them the key; a key they already fetched stays theirs (build the next version with a new prompt key to shut them out of it)",
                    env.out.green("✓"),
                )
            });
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(versions) = &args.versions {
        parse_requirement(versions).with_context(|| format!("--versions {versions:?}"))?;
    }
    let key_path = match args.prompt_key {
        Some(p) => p,
        None => keyfiles::prompt_key_path(&keyfiles::default_signing_key_path()?, &name),
    };
    let key = keyfiles::read_prompt_key(&key_path)?;
    let recipients = recipients_of(&client, &to)?;
    let wrapped = grants::wrap(&recipients, key.to_key_file().as_bytes())?;
    let key_id = key.id();
    let record: Value = client.send_json(client.put(&path).json(&json!({
        "key_id": key_id,
        "versions": args.versions,
        "wrapped": wrapped,
    })))?;
    env.out.emit(&record, || {
        let range = args
            .versions
            .as_deref()
            .map(|v| format!(", versions {v}"))
            .unwrap_or_default();
        format!(
            "{} granted {name} (prompt key {key_id}{range}) to {to}, wrapped to their {} recipient(s)\n  they can now run it: agentlang run {name} --prompt \"…\"",
            env.out.green("✓"),
            recipients.len()
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// The grantee's registered prompt recipients; none is a clear error.
fn recipients_of(client: &Client, to: &Username) -> Result<Vec<grants::Recipient>> {
    let listed: Value = client.send_json(client.get(&format!(
        "/api/v1/accounts/{}/prompt-recipients",
        to.as_str()
    )))?;
    let recipients = listed["recipients"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r["recipient"].as_str())
        .map(grants::Recipient::parse)
        .collect::<Result<Vec<_>, _>>()
        .context("the registry listed a recipient that is not an age X25519 recipient")?;
    if recipients.is_empty() {
        bail!(
            "{to} has registered no prompt recipient yet; ask them to run `agentlang keygen --prompt` and `agentlang keys register --prompt`"
        );
    }
    Ok(recipients)
}

fn list(env: &Env, name: Option<&str>) -> Result<ExitCode> {
    let client = env.authenticated()?;
    let path = match name {
        Some(n) => format!(
            "/api/v1/agents/{}/grants",
            PackageName::new(n)?.normalized()
        ),
        None => "/api/v1/account/grants".to_owned(),
    };
    let record: Value = client.send_json(client.get(&path))?;
    env.out.emit(&record, || {
        let empty = Vec::new();
        let grants = record["grants"].as_array().unwrap_or(&empty);
        if grants.is_empty() {
            return match name {
                Some(n) => format!("no live grants of {n}"),
                None => "no agents are granted to you".to_owned(),
            };
        }
        grants
            .iter()
            .map(|g| {
                let s = |f: &str| g[f].as_str().unwrap_or_default().to_owned();
                let who = if name.is_some() {
                    s("grantee")
                } else {
                    s("agent")
                };
                let range = g["versions"]
                    .as_str()
                    .map(|v| format!(" versions {v}"))
                    .unwrap_or_default();
                format!(
                    "{who}  key {}{range}  since {}",
                    s("key_id"),
                    s("created_at")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}
