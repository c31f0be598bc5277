//! `register` and `login`: both end with a token stored for this registry;
//! `whoami` asks the registry whose it is, `logout` gives it up.

use std::{io::BufRead, process::ExitCode};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{
    args::{Credentials, LoginArgs, TwoFaCommand},
    client::Client,
    config::{Entry, Source},
    env::Env,
};

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

pub fn login(env: &Env, args: &LoginArgs) -> Result<ExitCode> {
    let c = &args.credentials;
    if !args.force
        && let Some(entry) = reusable(env, &c.username)?
    {
        let path = env.ctx.credentials_path();
        env.out.emit(
            &json!({
                "registry": env.ctx.registry,
                "username": entry.username,
                "token_id": entry.id,
                "expires_at": entry.expires_at,
                "credentials": path,
                "reused": true,
            }),
            || {
                format!(
                    "{} already logged in to {} as {}: kept the token in {} (--force for a new one)",
                    env.out.green("✓"),
                    env.ctx.registry,
                    env.out.bold(&entry.username),
                    path.display()
                )
            },
        );
        return Ok(ExitCode::SUCCESS);
    }
    let replaced = env.ctx.stored()?;
    let password = read_password(c.password_stdin, false)?;
    let code = finish_login(env, c, &password, "logged in")?;
    // The token this one replaced is no use to anyone now: give it up, so
    // logins do not leave live tokens behind. It may have expired or been
    // revoked already, and the new one is stored whatever happens here.
    if let Some(old) = replaced.filter(|old| old.id.is_some()) {
        let client = Client::new(&env.ctx.registry, Some(old.token))?;
        let id = old.id.unwrap_or_default();
        let _ = client.send(client.delete(&format!("/api/v1/tokens/{id}")));
    }
    Ok(code)
}

/// The stored token of `username` on this registry, when the registry still
/// takes it as theirs and it has at least a week left: a login that mints
/// a new token each time leaves live tokens behind.
fn reusable(env: &Env, username: &str) -> Result<Option<Entry>> {
    let Some(entry) = env.ctx.stored()? else {
        return Ok(None);
    };
    if !same_user(&entry.username, username) {
        return Ok(None);
    }
    let week = time::OffsetDateTime::now_utc() + time::Duration::days(7);
    let expiring = entry.expires_at.as_deref().is_none_or(|t| {
        time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .map_or(true, |at| at < week)
    });
    if expiring {
        return Ok(None);
    }
    let client = Client::new(&env.ctx.registry, Some(entry.token.clone()))?;
    match account(&client) {
        Ok(a) if same_user(&a.username, username) => Ok(Some(entry)),
        Ok(_) => Ok(None),
        Err(e) => match e.downcast_ref::<crate::client::ApiError>() {
            // Revoked, expired or unknown here: mint a new one.
            Some(api) if api.status.as_u16() == 401 => Ok(None),
            _ => Err(e),
        },
    }
}

fn finish_login(env: &Env, c: &Credentials, password: &str, verb: &str) -> Result<ExitCode> {
    let client = env.anonymous()?;
    let mint = |otp: Option<&str>| -> Result<TokenResponse> {
        client.send_json(client.post("/api/v1/tokens").json(&json!({
            "username": c.username,
            "password": password,
            "name": token_name(),
            "scopes": c.scopes,
            "expires_in_days": c.expires_in_days,
            "otp": otp,
        })))
    };
    // Second factor: the code given, else asked on a terminal when the
    // registry asks for one.
    let token = match mint(env.otp.as_deref()) {
        Err(e) if env.otp.is_none() && crate::two_factor::asks_for_code(&e) => {
            match crate::two_factor::prompt_code()? {
                Some(code) => mint(Some(&code))?,
                None => {
                    return Err(e.context(
                        "the account has a second factor: give a code with --otp CODE or AGENTLANG_OTP",
                    ));
                }
            }
        }
        other => other?,
    };
    let path = env.ctx.store_token(Entry {
        token: token.token,
        username: c.username.clone(),
        id: token.id.clone(),
        expires_at: token.expires_at.clone(),
    })?;
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

/// `GET /api/v1/account`: whose token this is.
#[derive(Debug, Deserialize, Serialize)]
struct Account {
    username: String,
    #[serde(default)]
    is_admin: bool,
}

fn account(client: &Client) -> Result<Account> {
    client.send_json(client.get("/api/v1/account"))
}

pub fn whoami(env: &Env) -> Result<ExitCode> {
    let Some((token, source)) = env.ctx.token_and_source()? else {
        bail!(
            "not logged in to {}: run `agentlang login` or set AGENTLANG_TOKEN",
            env.ctx.registry
        );
    };
    let client = Client::new(&env.ctx.registry, Some(token))?;
    let account = account(&client)?;
    let stored = env.ctx.stored()?.filter(|_| source == Source::File);
    let expires_at = stored.and_then(|e| e.expires_at);
    let from = source.describe("--token", "AGENTLANG_TOKEN", &env.ctx.credentials_path());
    env.out.emit(
        &json!({
            "registry": env.ctx.registry,
            "username": account.username,
            "is_admin": account.is_admin,
            "token_source": source,
            "expires_at": expires_at,
        }),
        || {
            let admin = if account.is_admin { " (admin)" } else { "" };
            let expiry = expires_at
                .as_deref()
                .map(|t| format!(", expires {t}"))
                .unwrap_or_default();
            format!(
                "{}{admin} on {}\ntoken from {from}{expiry}",
                env.out.bold(&account.username),
                env.ctx.registry
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

pub fn logout(env: &Env) -> Result<ExitCode> {
    let Some(entry) = env.ctx.stored()? else {
        env.out.emit(
            &json!({ "registry": env.ctx.registry, "forgotten": false, "revoked": false }),
            || {
                format!(
                    "no token stored for {} in {}; nothing to do",
                    env.ctx.registry,
                    env.ctx.credentials_path().display()
                )
            },
        );
        return Ok(ExitCode::SUCCESS);
    };
    // Revoke first, with the token itself (the registry lets a token give
    // itself up whatever its scopes), then forget it here whatever the
    // registry said: a logout that leaves the token on disk is no logout.
    let revoked = match &entry.id {
        Some(id) => {
            let client = Client::new(&env.ctx.registry, Some(entry.token.clone()))?;
            match client.send(client.delete(&format!("/api/v1/tokens/{id}"))) {
                Ok(_) => Ok(()),
                Err(e) => match e.downcast_ref::<crate::client::ApiError>() {
                    // Already revoked or expired: nothing left to give up.
                    Some(api) if api.status.as_u16() == 401 => Ok(()),
                    _ => Err(e),
                },
            }
        }
        None => Err(anyhow::anyhow!(
            "it was stored without its id (by an older agentlang)"
        )),
    };
    env.ctx.forget_token()?;
    let path = env.ctx.credentials_path();
    if let Err(e) = &revoked {
        let until = entry
            .expires_at
            .as_deref()
            .map(|t| format!(" until {t}"))
            .unwrap_or_default();
        eprintln!(
            "warning: the token was not revoked on the registry ({}); it stays valid{until}: revoke it on {}/account",
            crate::client::one_line(&format!("{e:#}")),
            env.ctx.registry
        );
    }
    env.out.emit(
        &json!({
            "registry": env.ctx.registry,
            "username": entry.username,
            "forgotten": true,
            "revoked": revoked.is_ok(),
            "credentials": path,
        }),
        || {
            let revoked = if revoked.is_ok() {
                "revoked its token and removed it"
            } else {
                "removed its token"
            };
            format!(
                "{} logged out of {} ({}): {revoked} from {}",
                env.out.green("✓"),
                env.ctx.registry,
                entry.username,
                path.display()
            )
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// Usernames compare as the registry compares them (case, `-`/`_` folded).
fn same_user(a: &str, b: &str) -> bool {
    agentlang_core::names::normalize(a) == agentlang_core::names::normalize(b)
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
/// Second factor: `agentlang 2fa ...` (the password is read here, as for
/// `login`).
pub fn two_factor(env: &Env, command: TwoFaCommand) -> Result<ExitCode> {
    match command {
        TwoFaCommand::Enable { password_stdin } => {
            let password = read_password(password_stdin, false)?;
            crate::two_factor::enable(env, &password)
        }
        TwoFaCommand::Confirm { code } => crate::two_factor::confirm(env, &code),
        TwoFaCommand::Disable => crate::two_factor::disable(env),
        TwoFaCommand::Status => crate::two_factor::status(env),
    }
}

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
