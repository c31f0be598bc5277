//! `trusted-token [--jwt-env VAR] [--audience AUD]`: in a CI run, exchange
//! its OpenID Connect ID token at `POST /api/v1/trusted-publishing/tokens`
//! (docs/trusted-publishing.md) and print the publish token, so
//! `AGENTLANG_TOKEN=$(agentlang trusted-token)` needs no stored secret.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::env::Env;

pub fn run(env: &Env, jwt_env: Option<&str>, audience: Option<&str>) -> Result<ExitCode> {
    let client = env.anonymous()?;
    let jwt = match jwt_env {
        Some(var) => std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .with_context(|| format!("the environment variable {var} holds no ID token"))?,
        None => {
            let audience = match audience {
                Some(a) => a.to_owned(),
                None => default_audience(&client.url(""))?,
            };
            github_id_token(&audience)?
        }
    };
    let answer: Value = client.send_json(
        client
            .post("/api/v1/trusted-publishing/tokens")
            .json(&json!({"jwt": jwt.trim()})),
    )?;
    // The token alone on stdout, for `$(...)`; everything with --json.
    env.out.emit(&answer, || {
        answer["token"].as_str().unwrap_or_default().to_owned()
    });
    Ok(ExitCode::SUCCESS)
}

/// The registry's `host[:port]`: the registry's default audience.
fn default_audience(base: &str) -> Result<String> {
    let url = reqwest::Url::parse(base).with_context(|| format!("the registry URL {base:?}"))?;
    let host = url.host_str().context("the registry URL has no host")?;
    Ok(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// GitHub Actions' ID token for `audience`, from the request URL and token
/// a job with `permissions: id-token: write` is given.
fn github_id_token(audience: &str) -> Result<String> {
    let (Ok(url), Ok(token)) = (
        std::env::var("ACTIONS_ID_TOKEN_REQUEST_URL"),
        std::env::var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
    ) else {
        bail!(
            "no ID token: run in GitHub Actions with `permissions: id-token: write`, or pass --jwt-env VAR naming a variable that holds one (GitLab: an `id_tokens` variable)"
        );
    };
    let mut url = reqwest::Url::parse(&url).context("ACTIONS_ID_TOKEN_REQUEST_URL")?;
    url.query_pairs_mut().append_pair("audience", audience);
    let answer: Value = reqwest::blocking::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .and_then(reqwest::blocking::Response::error_for_status)
        .context("asking GitHub Actions for an ID token")?
        .json()
        .context("GitHub Actions' ID token answer")?;
    answer["value"]
        .as_str()
        .map(str::to_owned)
        .context("GitHub Actions answered no ID token")
}
