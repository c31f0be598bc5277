//! `keys register | list | revoke`.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::{Value, json};

use super::Env;
use crate::{args::KeysCommand, keyfiles};

pub fn run(env: &Env, cmd: KeysCommand) -> Result<ExitCode> {
    let client = env.authenticated()?;
    match cmd {
        KeysCommand::Register { pubkey } => {
            // Checked here first so a wrong file (the private key, say) is
            // caught before anything leaves the machine.
            let key = keyfiles::read_public_key(&pubkey)?;
            let key_id = key.key_id();
            let record: Value = client.send_json(
                client
                    .post("/api/v1/keys")
                    .json(&json!({ "public_key_pem": key.to_spki_pem() })),
            )?;
            env.out.emit(&record, || {
                format!(
                    "{} registered key {}",
                    env.out.green("✓"),
                    env.out.bold(key_id.as_str())
                )
            });
        }
        KeysCommand::List => {
            let record: Value = client.send_json(client.get("/api/v1/keys"))?;
            env.out.emit(&record, || {
                let empty = Vec::new();
                let keys = record["keys"].as_array().unwrap_or(&empty);
                if keys.is_empty() {
                    return "no keys registered; run `agentlang keys register KEY.pub`".to_owned();
                }
                keys.iter()
                    .map(|k| {
                        let revoked = if k["revoked_at"].is_null() {
                            ""
                        } else {
                            " (revoked)"
                        };
                        format!("{}{revoked}", k["key_id"].as_str().unwrap_or_default())
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        KeysCommand::Revoke { key_id } => {
            client.send(client.delete(&format!("/api/v1/keys/{key_id}")))?;
            env.out.emit(&json!({ "revoked": key_id }), || {
                format!("{} revoked key {key_id}", env.out.green("✓"))
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}
