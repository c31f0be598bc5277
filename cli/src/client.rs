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
        resp.json()
            .with_context(|| format!("the registry at {} sent a response that is not the expected JSON", self.base))
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

fn problem_error(resp: Response) -> anyhow::Error {
    let status = resp.status();
    let body = resp.text().unwrap_or_default();
    let problem: Problem = serde_json::from_str(&body).unwrap_or_default();
    let mut line = match (problem.title.is_empty(), problem.detail) {
        (false, Some(detail)) if !detail.is_empty() => format!("{}: {detail}", problem.title),
        (false, _) => problem.title,
        (true, Some(detail)) => detail,
        (true, None) => fallback_message(status),
    };
    if !problem.errors.is_empty() {
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
            .collect();
        line = format!("{line} ({})", fields.join("; "));
    }
    anyhow!("{} ({})", one_line(&line), status.as_u16())
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
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
