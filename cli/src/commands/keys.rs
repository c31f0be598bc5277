//! `keys register | proof | list | revoke`.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use agentlang_core::signing::SecretKey;
use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

use crate::{args::KeysCommand, client::Client, env::Env, grants, keyfiles};

/// The private key of a registration: `--key`, else the public key's file
/// without `.pub`, else the default signing key.
fn private_key_path(pubkey: Option<&Path>, key: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(key) = key {
        return Ok(key);
    }
    match pubkey {
        Some(pubkey) => match pubkey.to_str().and_then(|p| p.strip_suffix(".pub")) {
            Some(private) => Ok(PathBuf::from(private)),
            None => bail!(
                "cannot tell where the private half of {} is; name it with --key",
                pubkey.display()
            ),
        },
        None => keyfiles::default_signing_key_path(),
    }
}

/// The account the logged-in token belongs to.
fn username(client: &Client) -> Result<String> {
    let account: Value = client.send_json(client.get("/api/v1/account"))?;
    account["username"]
        .as_str()
        .map(str::to_owned)
        .context("the registry did not say which account the token belongs to")
}

/// The origin of the registry this command talks to, as a key proof names
/// it: `scheme://host[:port]` of its configured URL. The registry refuses a
/// proof naming another origin, so a proof this registry saw cannot
/// register the key on another.
fn origin(env: &Env) -> Result<String> {
    let url = reqwest::Url::parse(&env.ctx.registry)
        .with_context(|| format!("the registry URL {:?} is not a URL", env.ctx.registry))?;
    Ok(url.origin().ascii_serialization())
}

/// The proof of possession: base64 of the key's signature over
/// `agentlang-key-registration:<origin>:<username>:<key id>`.
fn proof(key: &SecretKey, origin: &str, username: &str) -> String {
    let message = format!(
        "agentlang-key-registration:{origin}:{username}:{}",
        key.public_key().key_id()
    );
    base64::engine::general_purpose::STANDARD.encode(key.sign(message.as_bytes()))
}

/// Prints a key's proof for `username` on this registry (the web form's
/// field).
fn emit_proof(env: &Env, key: &SecretKey, username: &str) -> Result<()> {
    let proof = proof(key, &origin(env)?, username);
    env.out.emit(
        &json!({ "key_id": key.public_key().key_id().as_str(), "proof": proof }),
        || proof.clone(),
    );
    Ok(())
}

/// Registers the prompt identity's recipient: the registry encrypts a
/// challenge to it, and the identity's plaintext of it is the proof.
fn register_recipient(env: &Env, client: &Client, identity: Option<PathBuf>) -> Result<()> {
    let path = match identity {
        Some(p) => p,
        None => grants::default_identity_path()?,
    };
    let identity = grants::read_identity(&path)?;
    let recipient = identity.recipient().to_string();
    let challenge: Value = client.send_json(
        client
            .post("/api/v1/account/prompt-recipients/challenge")
            .json(&json!({ "recipient": recipient })),
    )?;
    let sealed = challenge["challenge"]
        .as_str()
        .context("the registry sent no challenge")?;
    let proof = agentlang_core::grants::unwrap(&identity, sealed.as_bytes())
        .context("opening the registry's challenge")?;
    let proof = std::str::from_utf8(&proof).context("the registry's challenge is not text")?;
    let record: Value = client.send_json(
        client
            .post("/api/v1/account/prompt-recipients")
            .json(&json!({ "recipient": recipient, "proof": proof })),
    )?;
    env.out.emit(&record, || {
        format!(
            "{} registered prompt recipient {}\n  owners can now grant you sealed agents: agentlang grant NAME --to YOUR_USERNAME",
            env.out.green("✓"),
            env.out.bold(&recipient)
        )
    });
    Ok(())
}

pub fn run(env: &Env, cmd: KeysCommand) -> Result<ExitCode> {
    if let KeysCommand::Proof {
        username: Some(username),
        key,
    } = &cmd
    {
        // Needs no registry: print and stop.
        let secret = keyfiles::read_secret_key(&private_key_path(None, key.clone())?)?;
        emit_proof(env, &secret, username)?;
        return Ok(ExitCode::SUCCESS);
    }
    // A wrong public key file (the private key, say) is named before
    // anything else is read or sent.
    let public = match &cmd {
        KeysCommand::Register {
            pubkey: Some(path), ..
        } => Some(keyfiles::read_public_key(path)?),
        _ => None,
    };
    let client = env.authenticated()?;
    match cmd {
        KeysCommand::Proof { username: _, key } => {
            let secret = keyfiles::read_secret_key(&private_key_path(None, key)?)?;
            emit_proof(env, &secret, &username(&client)?)?;
        }
        KeysCommand::Register {
            prompt: true,
            identity,
            ..
        } => register_recipient(env, &client, identity)?,
        KeysCommand::Register { pubkey, key, .. } => {
            let private = private_key_path(pubkey.as_deref(), key)?;
            let secret = keyfiles::read_secret_key(&private)?;
            let public = public.unwrap_or_else(|| secret.public_key());
            if public != secret.public_key() {
                bail!(
                    "{} is not the private half of the public key given",
                    private.display()
                );
            }
            let key_id = public.key_id();
            let proof = proof(&secret, &origin(env)?, &username(&client)?);
            let record: Value = client.send_json(client.post("/api/v1/keys").json(&json!({
                "public_key_pem": public.to_spki_pem(),
                "proof": proof,
            })))?;
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
