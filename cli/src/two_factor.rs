//! A second factor (docs/two-factor.md): the one place the CLI gets a
//! TOTP code for an act that asks for one, and `agentlang 2fa
//! enable|confirm|disable|status`.
//!
//! A code comes from `--otp CODE` (or `AGENTLANG_OTP`); without one, an act
//! the registry refuses with `two-factor-code-required` is asked again
//! after a prompt on a terminal, and fails with a hint elsewhere.

use std::{
    io::{BufRead, IsTerminal, Write},
    process::ExitCode,
};

use anyhow::{Context, Result, bail};
use reqwest::blocking::RequestBuilder;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{
    client::{Answer, ApiError, Client},
    env::Env,
};

/// The header the registry reads a code from.
pub const OTP_HEADER: &str = "AgentLang-OTP";
/// The problem type that asks for a code.
pub const CODE_REQUIRED: &str = "two-factor-code-required";

/// Whether `err` is the registry asking for a code.
pub fn asks_for_code(err: &anyhow::Error) -> bool {
    err.downcast_ref::<ApiError>()
        .is_some_and(|api| api.slug.as_deref() == Some(CODE_REQUIRED))
}

/// A code from the terminal, when there is one to ask on.
pub fn prompt_code() -> Result<Option<String>> {
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    eprint!("Second-factor code (authenticator app, or a recovery code): ");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the code")?;
    let code = line.trim().to_owned();
    Ok((!code.is_empty()).then_some(code))
}

/// Sends the request `make` builds, with the code given (`--otp`,
/// `AGENTLANG_OTP`); asked for one and none given, asks on the terminal and
/// sends it again.
pub fn send(env: &Env, client: &Client, make: impl Fn() -> RequestBuilder) -> Result<Answer> {
    let with = |code: Option<&str>| match code {
        Some(code) => make().header(OTP_HEADER, code),
        None => make(),
    };
    match client.send(with(env.otp.as_deref())) {
        Err(e) if env.otp.is_none() && asks_for_code(&e) => match prompt_code()? {
            Some(code) => client.send(with(Some(&code))),
            None => Err(e.context(
                "the account has a second factor: give a code with --otp CODE or AGENTLANG_OTP",
            )),
        },
        other => other,
    }
}

/// [`send`], reading a JSON answer.
pub fn send_json<T: DeserializeOwned>(
    env: &Env,
    client: &Client,
    make: impl Fn() -> RequestBuilder,
) -> Result<T> {
    send(env, client, make)?.json(crate::client::Bound::JSON)
}

const PATH: &str = "/api/v1/account/2fa";

/// `2fa status`: whether the account has a second factor.
pub fn status(env: &Env) -> Result<ExitCode> {
    let client = env.authenticated()?;
    let answer: Value = client.send_json(client.get(PATH))?;
    env.out.emit(&answer, || {
        if answer["enrolled"] == true {
            format!(
                "second factor: {} ({} recovery codes left)",
                env.out.green("enabled"),
                answer["recovery_codes_left"]
            )
        } else if answer["pending"] == true {
            "second factor: pending (confirm it with `agentlang 2fa confirm CODE`)".to_owned()
        } else {
            "second factor: not enabled (`agentlang 2fa enable`)".to_owned()
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// `2fa enable`: the password again, then the secret for an authenticator
/// app; with a code (given, or asked on a terminal) it is confirmed and the
/// recovery codes are shown, once.
pub fn enable(env: &Env, password: &str) -> Result<ExitCode> {
    let client = env.authenticated()?;
    let enrolment: Value =
        client.send_json(client.post(PATH).json(&json!({ "password": password })))?;
    let secret = enrolment["secret"].as_str().unwrap_or_default();
    let uri = enrolment["otpauth_uri"].as_str().unwrap_or_default();
    let code = match env.otp.clone() {
        Some(code) => Some(code),
        None if std::io::stdin().is_terminal() && !env.out.json => {
            eprintln!(
                "Add this secret to your authenticator app:\n  secret: {secret}\n  URI:    {uri}"
            );
            prompt_code()?
        }
        None => None,
    };
    let Some(code) = code else {
        env.out.emit(
            &json!({ "secret": secret, "otpauth_uri": uri, "confirmed": false }),
            || {
                format!(
                    "Add this secret to your authenticator app, then run `agentlang 2fa confirm CODE`:\n  secret: {secret}\n  URI:    {uri}"
                )
            },
        );
        return Ok(ExitCode::SUCCESS);
    };
    let codes = confirm_code(&client, &code)?;
    show_recovery(env, Some((secret, uri)), &codes);
    Ok(ExitCode::SUCCESS)
}

/// `2fa confirm CODE`: confirms a pending enrolment.
pub fn confirm(env: &Env, code: &str) -> Result<ExitCode> {
    let client = env.authenticated()?;
    let codes = confirm_code(&client, code)?;
    show_recovery(env, None, &codes);
    Ok(ExitCode::SUCCESS)
}

fn confirm_code(client: &Client, code: &str) -> Result<Vec<String>> {
    let answer: Value = client.send_json(
        client
            .post(&format!("{PATH}/confirm"))
            .json(&json!({ "code": code })),
    )?;
    Ok(serde_json::from_value(answer["recovery_codes"].clone()).unwrap_or_default())
}

fn show_recovery(env: &Env, enrolment: Option<(&str, &str)>, codes: &[String]) {
    let mut shown = json!({ "confirmed": true, "recovery_codes": codes });
    if let Some((secret, uri)) = enrolment {
        shown["secret"] = json!(secret);
        shown["otpauth_uri"] = json!(uri);
    }
    env.out.emit(&shown, || {
        format!(
            "{} second factor enabled. Recovery codes (each works once; shown only now, keep them safe):\n  {}",
            env.out.green("✓"),
            codes.join("\n  ")
        )
    });
}

/// `2fa disable`: with a code (given, or asked on a terminal).
pub fn disable(env: &Env) -> Result<ExitCode> {
    let client = env.authenticated()?;
    let code = match env.otp.clone() {
        Some(code) => code,
        None => match prompt_code()? {
            Some(code) => code,
            None => bail!("disabling the second factor needs a code: --otp CODE or AGENTLANG_OTP"),
        },
    };
    client.send(client.delete(PATH).header(OTP_HEADER, code))?;
    env.out.emit(&json!({ "enabled": false }), || {
        format!("{} second factor disabled", env.out.green("✓"))
    });
    Ok(ExitCode::SUCCESS)
}
