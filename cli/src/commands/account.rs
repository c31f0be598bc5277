//! `register` and `login`: both end with a token stored for this registry.

use std::{io::BufRead, process::ExitCode};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{args::Credentials, env::Env};

#[derive(Debug, Deserialize, Serialize)]
struct TokenResponse {
    token: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    expires_at: Option<String>,
}

pub fn register(env: &Env, c: &Credentials) -> Result<ExitCode> {
    let password = read_password(c.password_stdin, true)?;
    let client = env.anonymous()?;
    client.send(
        client
            .post("/api/v1/accounts")
            .json(&json!({ "username": c.username, "password": password })),
    )?;
    finish_login(env, c, &password, "registered")
}

pub fn login(env: &Env, c: &Credentials) -> Result<ExitCode> {
    let password = read_password(c.password_stdin, false)?;
    finish_login(env, c, &password, "logged in")
}

fn finish_login(env: &Env, c: &Credentials, password: &str, verb: &str) -> Result<ExitCode> {
    let client = env.anonymous()?;
    let token: TokenResponse = client.send_json(client.post("/api/v1/tokens").json(&json!({
        "username": c.username,
        "password": password,
        "name": token_name(),
        "scopes": c.scopes,
        "expires_in_days": c.expires_in_days,
    })))?;
    let path = env.ctx.store_token(&c.username, &token.token)?;
    env.out.emit(
        &json!({
            "registry": env.ctx.registry,
            "username": c.username,
            "token_id": token.id,
            "expires_at": token.expires_at,
            "credentials": path,
        }),
        || {
            format!(
                "{} {verb} to {} as {}; token stored in {}",
                env.out.green("✓"),
                env.ctx.registry,
                env.out.bold(&c.username),
                path.display()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

fn token_name() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "cli".to_owned());
    // The registry takes names of at most 64 characters.
    format!("agentlang CLI on {host}")
        .chars()
        .take(64)
        .collect()
}

/// From standard input (first line) or an interactive prompt; asked twice
/// when creating an account.
fn read_password(from_stdin: bool, confirm: bool) -> Result<String> {
    let password = if from_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    } else {
        let first = rpassword::prompt_password("Password: ")
            .context("reading the password (use --password-stdin when not on a terminal)")?;
        if confirm {
            let again =
                rpassword::prompt_password("Password again: ").context("reading the password")?;
            if again != first {
                bail!("the passwords do not match");
            }
        }
        first
    };
    if password.is_empty() {
        bail!("the password is empty");
    }
    Ok(password)
}
