//! The registry's HTTP API as the CLI uses it. Every failure becomes one line:
//! the problem+json `title`/`detail` (and each field error) for an HTTP
//! error, or what could not be reached for a transport error.

use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use reqwest::{
    StatusCode,
    blocking::{Client as Http, RequestBuilder, Response},
};
use serde::{Deserialize, de::DeserializeOwned};

#[derive(Debug)]
pub struct Client {
    http: Http,
    pub base: String,
    token: Option<String>,
}

/// The RFC 9457 body the registry answers errors with.
#[derive(Debug, Default, Deserialize)]
struct Problem {
    #[serde(default)]
    title: String,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    errors: Vec<FieldError>,
    /// A resolution conflict's structured form (`POST /api/v1/resolve`).
    #[serde(default)]
    conflicts: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct FieldError {
    #[serde(default)]
    field: String,
    message: String,
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> Result<Self> {
        let http = Http::builder()
            .user_agent(concat!("agentlang/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            // Uploads and downloads of large containers may take a while;
            // a stalled connection is caught by the read timeout.
            .timeout(None)
            .build()
            .context("setting up the HTTP client")?;
        Ok(Self {
            http,
            base: base.to_owned(),
            token,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.get(self.url(path)))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.post(self.url(path)))
    }

    pub fn delete(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.delete(self.url(path)))
    }

    fn authorize(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        }
    }

    /// Sends and returns the response if it is a success, else one clear
    /// error line.
    pub fn send(&self, rb: RequestBuilder) -> Result<Response> {
        let resp = rb.send().map_err(|e| self.transport_error(&e))?;
        if resp.status().is_success() {
            Ok(resp)
        } else {
            Err(problem_error(resp))
        }
    }

    pub fn send_json<T: DeserializeOwned>(&self, rb: RequestBuilder) -> Result<T> {
        let resp = self.send(rb)?;
        resp.json().with_context(|| {
            format!(
                "the registry at {} sent a response that is not the expected JSON",
                self.base
            )
        })
    }

    fn transport_error(&self, e: &reqwest::Error) -> anyhow::Error {
        if e.is_connect() {
            anyhow!("cannot reach the registry at {}: is it running?", self.base)
        } else if e.is_timeout() {
            anyhow!("the registry at {} did not answer in time", self.base)
        } else {
            anyhow!("request to {} failed: {e}", self.base)
        }
    }
}

/// An error answer from the registry. `Display` is the one line the CLI
/// prints; callers that can say more (a resolution conflict's full
/// explanation) downcast to it.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: Option<String>,
    /// True when the body carries `conflicts`: the resolver's "no solution".
    pub is_conflict: bool,
    line: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl std::error::Error for ApiError {}

fn problem_error(resp: Response) -> anyhow::Error {
    let status = resp.status();
    // A 401 from the token endpoint is a wrong password, not a missing login.
    let is_login = resp.url().path().ends_with("/api/v1/tokens");
    let body = resp.text().unwrap_or_default();
    let mut error = api_error(status, &body);
    if is_login && status == StatusCode::UNAUTHORIZED {
        error.line = error.line.replace(LOGIN_HINT, "");
    }
    anyhow::Error::new(error)
}

const LOGIN_HINT: &str = " — run `agentlang login` or set AGENTLANG_TOKEN";

/// Builds the one line from a problem+json body (or from the status alone
/// when the body is something else), with a hint where one helps.
pub fn api_error(status: StatusCode, body: &str) -> ApiError {
    let problem: Problem = serde_json::from_str(body).unwrap_or_default();
    let detail = problem.detail.filter(|d| !d.is_empty());
    let mut line = match (problem.title.is_empty(), &detail) {
        (false, Some(detail)) => format!("{}: {detail}", problem.title),
        (false, None) => problem.title.clone(),
        (true, Some(detail)) => detail.clone(),
        (true, None) => fallback_message(status),
    };
    // Field errors the detail does not already spell out.
    let fields: Vec<String> = problem
        .errors
        .iter()
        .map(|e| {
            if e.field.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.field, e.message)
            }
        })
        .filter(|f| !line.contains(f.as_str()))
        .collect();
    if !fields.is_empty() {
        line = format!("{line} ({})", fields.join("; "));
    }
    let hint = match status {
        StatusCode::UNAUTHORIZED => LOGIN_HINT,
        StatusCode::PAYLOAD_TOO_LARGE => {
            " — the registry's upload limit is lower than this container"
        }
        _ => "",
    };
    ApiError {
        status,
        detail,
        is_conflict: problem.conflicts.is_some(),
        line: format!("{} ({}){hint}", one_line(&line), status.as_u16()),
    }
}

fn fallback_message(status: StatusCode) -> String {
    status
        .canonical_reason()
        .unwrap_or("the registry refused the request")
        .to_owned()
}

/// Errors are printed on one line; the registry's explanations (a resolution
/// conflict, say) may span several, which we keep readable with `; `.
pub fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// `GET /api/v1/keys/{key_id}` as the CLI needs it.
#[derive(Debug, Deserialize)]
struct KeyRecord {
    public_key_pem: String,
    #[serde(default)]
    revoked_at: Option<String>,
}

/// A signer's key as the registry knows it.
#[derive(Debug)]
pub struct RegistryKey {
    pub key: agentlang_core::signing::PublicKey,
    pub revoked_at: Option<String>,
}

impl Client {
    /// Fetches a signer's public key and checks that it is the key the id
    /// names, so a confused (or hostile) registry cannot substitute another.
    pub fn public_key(&self, key_id: &agentlang_core::signing::KeyId) -> Result<RegistryKey> {
        let record: KeyRecord = self
            .send_json(self.get(&format!("/api/v1/keys/{key_id}")))
            .with_context(|| format!("fetching signing key {key_id} from the registry"))?;
        let key = agentlang_core::signing::PublicKey::from_spki_pem(&record.public_key_pem)
            .with_context(|| format!("the registry's key {key_id} is not an Ed25519 public key"))?;
        if &key.key_id() != key_id {
            anyhow::bail!(
                "the registry answered key {} when asked for {key_id}",
                key.key_id()
            );
        }
        Ok(RegistryKey {
            key,
            revoked_at: record.revoked_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_title_detail_and_fields_make_one_line() {
        let body = r#"{"title":"Invalid package","detail":"the upload was refused","errors":[{"field":"tools[0].version","message":"not a requirement"},{"field":"","message":"no prompt"}]}"#;
        let e = api_error(StatusCode::UNPROCESSABLE_ENTITY, body);
        assert_eq!(
            e.to_string(),
            "Invalid package: the upload was refused (tools[0].version: not a requirement; no prompt) (422)"
        );
        assert_eq!(e.detail.as_deref(), Some("the upload was refused"));
    }

    #[test]
    fn multi_line_detail_is_joined_and_401_carries_a_hint() {
        let body = r#"{"title":"Unauthorized","detail":"token expired\n  at 2025-01-01"}"#;
        let e = api_error(StatusCode::UNAUTHORIZED, body);
        assert_eq!(
            e.to_string(),
            "Unauthorized: token expired; at 2025-01-01 (401) — run `agentlang login` or set AGENTLANG_TOKEN"
        );
    }

    #[test]
    fn field_errors_the_detail_already_names_are_not_repeated() {
        let body = r#"{"title":"The request failed validation","detail":"password: must be at least 8 bytes","errors":[{"field":"password","message":"must be at least 8 bytes"},{"field":"username","message":"taken"}]}"#;
        let e = api_error(StatusCode::UNPROCESSABLE_ENTITY, body);
        assert_eq!(
            e.to_string(),
            "The request failed validation: password: must be at least 8 bytes (username: taken) (422)"
        );
    }

    #[test]
    fn a_body_that_is_not_a_problem_falls_back_to_the_status() {
        let e = api_error(StatusCode::CONFLICT, "<html>oops</html>");
        assert_eq!(e.to_string(), "Conflict (409)");
        assert_eq!(e.detail, None);
    }

    #[test]
    fn one_line_drops_blank_lines() {
        assert_eq!(one_line("a\n\n  b  \nc"), "a; b; c");
    }
}
