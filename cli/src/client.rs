//! The registry's HTTP API as the CLI uses it. Every failure becomes one line:
//! the problem+json `title`/`detail` (and each field error) for an HTTP
//! error, or what could not be reached for a transport error.
//!
//! A registry may be broken or hostile, so nothing it sends is read without
//! bounds: every body is read through [`Limited`], within a byte bound
//! chosen for what it is ([`Bound`]; a download within the size its record
//! announces) and a deadline, and every wait (connecting, the answer's
//! head, each further read) within `AGENTLANG_HTTP_TIMEOUT` ([`Timeouts`]).

use std::{
    fmt,
    io::{self, Read},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, anyhow, bail};
use reqwest::{
    StatusCode,
    blocking::{Client as Http, RequestBuilder, Response},
    header::HeaderMap,
};
use serde::{Deserialize, de::DeserializeOwned};

#[derive(Debug)]
pub struct Client {
    http: Http,
    pub base: String,
    token: Option<String>,
    timeouts: Timeouts,
    /// Downloads only to look inside (trust pictures): asked for with
    /// `?purpose=inspect`, which the registry does not count.
    inspecting: bool,
}

/// The environment variable that sets [`Timeouts::step`], in seconds.
pub const TIMEOUT_VAR: &str = "AGENTLANG_HTTP_TIMEOUT";

/// How long the CLI waits for a registry. `step` bounds every wait:
/// connecting, the head of an answer, each further read of a body (a
/// stalled answer fails after it). A body must also arrive whole within
/// [`Self::total`] of its head (a trickle fails too), a download within
/// that plus its announced size at [`MIN_DOWNLOAD_RATE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub step: Duration,
}

impl Timeouts {
    const DEFAULT_SECS: u64 = 30;
    const MAX_SECS: u64 = 3600;

    /// `AGENTLANG_HTTP_TIMEOUT`, else 30 s.
    pub fn from_env() -> Result<Self> {
        match std::env::var(TIMEOUT_VAR) {
            Ok(text) => Self::parse(&text),
            Err(std::env::VarError::NotPresent) => Ok(Self {
                step: Duration::from_secs(Self::DEFAULT_SECS),
            }),
            Err(std::env::VarError::NotUnicode(_)) => {
                bail!("{TIMEOUT_VAR} is not a number of seconds")
            }
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text.trim().parse::<u64>() {
            Ok(secs @ 1..=Self::MAX_SECS) => Ok(Self {
                step: Duration::from_secs(secs),
            }),
            _ => bail!(
                "{TIMEOUT_VAR} is {text:?}; give a whole number of seconds from 1 to {}",
                Self::MAX_SECS
            ),
        }
    }

    /// How long a body other than a download may take to arrive.
    pub fn total(self) -> Duration {
        self.step * 4
    }

    /// How long a transfer of `bytes` may take: [`Self::total`] plus the
    /// bytes at [`MIN_DOWNLOAD_RATE`].
    pub fn transfer(self, bytes: u64) -> Duration {
        self.total() + Duration::from_secs(bytes / MIN_DOWNLOAD_RATE)
    }
}

/// Bytes a second below which a download or upload is given up on.
pub const MIN_DOWNLOAD_RATE: u64 = 16 * 1024;

/// What a response body is, and the most bytes of it the CLI reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Named in the error when the registry sends more.
    pub what: &'static str,
    pub max: u64,
}

impl Bound {
    /// An API answer in JSON: records, indexes, keys, tokens, catalogs. A
    /// version record carries its container's manifest, parsed specs and
    /// lock, whose kept members the container reader caps at 8 MiB.
    pub const JSON: Self = Self {
        what: "a JSON answer",
        max: 16 * 1024 * 1024,
    };
    /// A problem+json error answer: a title, a detail (a resolution
    /// conflict's explanation is the longest), field errors.
    pub const PROBLEM: Self = Self {
        what: "an error answer",
        max: 64 * 1024,
    };
    /// A page of search results: at most 100 hits of names and one-line
    /// summaries (a page is a few KiB).
    pub const SEARCH: Self = Self {
        what: "search results",
        max: 1024 * 1024,
    };
    /// A resolved lock: at most 256 tools and the models named.
    pub const RESOLUTION: Self = Self {
        what: "a resolution",
        max: 1024 * 1024,
    };
    /// The log's verifier key: `<origin>+<id>+<base64 key>`, one line.
    pub const LOG_KEY: Self = Self {
        what: "its log key",
        max: 4 * 1024,
    };
    /// A checkpoint: three lines and at most 100 signature lines (the
    /// signed-note limit), the log's and its witnesses'.
    pub const CHECKPOINT: Self = Self {
        what: "a log checkpoint",
        max: 64 * 1024,
    };
    /// A hash tile: at most 256 hashes of 32 bytes.
    pub const HASH_TILE: Self = Self {
        what: "a log hash tile",
        max: agentlang_core::tlog::TILE_WIDTH * 32,
    };
    /// An entry bundle: at most 256 entries, each framed by a 2-byte length.
    pub const ENTRY_BUNDLE: Self = Self {
        what: "a log entry bundle",
        max: agentlang_core::tlog::TILE_WIDTH * (2 + u16::MAX as u64),
    };
}

/// The problem+json body the registry answers errors with (RFC 9457).
#[derive(Debug, Default, Deserialize)]
struct Problem {
    #[serde(default)]
    title: String,
    #[serde(default)]
    detail: Option<String>,
    /// The problem type's URI (its last segment is the slug).
    #[serde(default, rename = "type")]
    type_uri: String,
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
        let timeouts = Timeouts::from_env()?;
        let http = Http::builder()
            .user_agent(concat!("agentlang/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(timeouts.step)
            // The blocking client waits at most this for an answer's head
            // and for each read of its body: a stall fails, however long a
            // download is. Bodies also have deadlines (`Limited`).
            .timeout(timeouts.step)
            .build()
            .context("setting up the HTTP client")?;
        Ok(Self {
            http,
            base: base.to_owned(),
            token,
            timeouts,
            inspecting: false,
        })
    }

    /// This client's downloads are for looking inside, not for use: the
    /// registry does not count them as downloads.
    pub fn inspecting(self) -> Self {
        Self {
            inspecting: true,
            ..self
        }
    }

    pub fn is_inspecting(&self) -> bool {
        self.inspecting
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.get(self.url(path)))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.post(self.url(path)))
    }

    pub fn put(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.put(self.url(path)))
    }

    pub fn delete(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.delete(self.url(path)))
    }

    pub fn patch(&self, path: &str) -> RequestBuilder {
        self.authorize(self.http.patch(self.url(path)))
    }

    fn authorize(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        }
    }

    /// Sends and returns the answer if it is a success, else one clear
    /// error line (from an error body read within [`Bound::PROBLEM`]).
    pub fn send(&self, rb: RequestBuilder) -> Result<Answer> {
        let req = rb.build().map_err(|e| self.transport_error(&e))?;
        let verbose = crate::output::verbose().then(|| {
            let shown = format!("{} {}", req.method(), req.url());
            eprintln!("> {shown}");
            shown
        });
        let resp = self
            .http
            .execute(req)
            .map_err(|e| self.transport_error(&e))?;
        if let Some(shown) = verbose {
            eprintln!("< {} {shown}", resp.status().as_u16());
        }
        let answer = Answer {
            resp,
            base: self.base.clone(),
            timeouts: self.timeouts,
            received: Instant::now(),
        };
        if answer.status().is_success() {
            Ok(answer)
        } else {
            Err(answer.into_problem())
        }
    }

    /// A JSON answer, read within [`Bound::JSON`].
    pub fn send_json<T: DeserializeOwned>(&self, rb: RequestBuilder) -> Result<T> {
        self.send(rb)?.json(Bound::JSON)
    }

    fn transport_error(&self, e: &reqwest::Error) -> anyhow::Error {
        if e.is_connect() {
            anyhow!("cannot reach the registry at {}: is it running?", self.base)
        } else if e.is_timeout() {
            anyhow!(
                "the registry at {} did not answer within {} s ({TIMEOUT_VAR})",
                self.base,
                self.timeouts.step.as_secs()
            )
        } else {
            anyhow!("request to {} failed: {e}", self.base)
        }
    }
}

/// A registry's answer whose head has arrived. Its body can be read only
/// through [`Limited`], within a bound.
pub struct Answer {
    resp: Response,
    base: String,
    timeouts: Timeouts,
    received: Instant,
}

impl Answer {
    pub fn status(&self) -> StatusCode {
        self.resp.status()
    }

    pub fn headers(&self) -> &HeaderMap {
        self.resp.headers()
    }

    /// The body as a reader that stops at `max` bytes, and within `within`
    /// of the head's arrival; `what` names the body in its errors. A
    /// `Content-Length` above `max` is refused before reading.
    pub fn limited(self, what: String, max: u64, within: Duration) -> Result<Limited<Response>> {
        let limited = Limited {
            what,
            max,
            left: max,
            base: self.base,
            timeouts: self.timeouts,
            deadline: self.received + within,
            within,
            inner: self.resp,
        };
        match limited.inner.content_length() {
            Some(announced) if announced > max => Err(anyhow!(limited.too_large())),
            _ => Ok(limited),
        }
    }

    /// The whole body, within `bound` and [`Timeouts::total`].
    pub fn bytes(self, bound: Bound) -> Result<Vec<u8>> {
        let within = self.timeouts.total();
        let mut body = self.limited(bound.what.to_owned(), bound.max, within)?;
        let mut bytes = Vec::new();
        body.read_to_end(&mut bytes).map_err(anyhow::Error::new)?;
        Ok(bytes)
    }

    /// The whole body as UTF-8 text, within `bound`.
    pub fn text(self, bound: Bound) -> Result<String> {
        let base = self.base.clone();
        String::from_utf8(self.bytes(bound)?).map_err(|_| {
            anyhow!(
                "the registry at {base} sent {} that is not UTF-8",
                bound.what
            )
        })
    }

    /// The whole body as JSON, within `bound`.
    pub fn json<T: DeserializeOwned>(self, bound: Bound) -> Result<T> {
        let base = self.base.clone();
        let bytes = self.bytes(bound)?;
        serde_json::from_slice(&bytes).with_context(|| {
            format!("the registry at {base} sent a response that is not the expected JSON")
        })
    }

    /// An error answer as one line: its problem+json body read within
    /// [`Bound::PROBLEM`], or what went wrong reading it.
    fn into_problem(self) -> anyhow::Error {
        let status = self.status();
        // A 401 from the token endpoint is a wrong password, not a missing login.
        let is_login = self.resp.url().path().ends_with("/api/v1/tokens");
        let what = format!("{} ({})", Bound::PROBLEM.what, status.as_u16());
        let within = self.timeouts.total();
        let body = self
            .limited(what, Bound::PROBLEM.max, within)
            .and_then(|mut body| {
                let mut bytes = Vec::new();
                body.read_to_end(&mut bytes).map_err(anyhow::Error::new)?;
                Ok(bytes)
            });
        let body = match body {
            Ok(bytes) => bytes,
            Err(e) => return e,
        };
        let mut error = api_error(status, &String::from_utf8_lossy(&body));
        if is_login && status == StatusCode::UNAUTHORIZED {
            error.line = error.line.replace(LOGIN_HINT, "");
        }
        anyhow::Error::new(error)
    }
}

/// A response body read within a byte bound and a deadline; each read also
/// waits at most [`Timeouts::step`] (the client's timeout). What goes wrong
/// is one line naming the body.
pub struct Limited<R> {
    inner: R,
    what: String,
    max: u64,
    left: u64,
    base: String,
    timeouts: Timeouts,
    deadline: Instant,
    within: Duration,
}

/// Why a body could not be read: the line that says so.
#[derive(Debug)]
struct BodyError(String);

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BodyError {}

impl<R> Limited<R> {
    fn too_large(&self) -> BodyError {
        BodyError(format!(
            "the registry at {} sent more than {} bytes of {}",
            self.base, self.max, self.what
        ))
    }

    fn failed(&self, e: &io::Error) -> io::Error {
        let timed_out = e.kind() == io::ErrorKind::TimedOut
            || e.get_ref()
                .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
                .is_some_and(reqwest::Error::is_timeout);
        let line = if timed_out {
            format!(
                "the registry at {} stopped sending {} for {} s ({TIMEOUT_VAR})",
                self.base,
                self.what,
                self.timeouts.step.as_secs()
            )
        } else {
            format!("the registry at {} broke off {}: {e}", self.base, self.what)
        };
        io::Error::other(BodyError(line))
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() >= self.deadline {
            return Err(io::Error::other(BodyError(format!(
                "the registry at {} took more than {} s to send {} ({TIMEOUT_VAR})",
                self.base,
                self.within.as_secs(),
                self.what
            ))));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the bound: one more byte is one too many.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe) {
                Ok(0) => Ok(0),
                Ok(_) => Err(io::Error::other(self.too_large())),
                Err(e) => Err(self.failed(&e)),
            };
        }
        let room = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        match self.inner.read(&mut buf[..room]) {
            Ok(n) => {
                self.left -= n as u64;
                Ok(n)
            }
            Err(e) => Err(self.failed(&e)),
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
    /// The problem type's slug (`two-factor-code-required`), when the body
    /// is a problem document.
    pub slug: Option<String>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl std::error::Error for ApiError {}

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
        slug: problem
            .type_uri
            .rsplit('/')
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
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

    fn limited(body: &[u8], max: u64) -> Limited<&[u8]> {
        let within = Duration::from_secs(60);
        Limited {
            inner: body,
            what: "a test body".into(),
            max,
            left: max,
            base: "http://registry.test".into(),
            timeouts: Timeouts {
                step: Duration::from_secs(1),
            },
            deadline: Instant::now() + within,
            within,
        }
    }

    #[test]
    fn a_body_at_its_bound_is_read_and_one_byte_more_is_refused() {
        let mut out = Vec::new();
        limited(b"abcd", 4).read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcd");
        let e = limited(b"abcde", 4)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the registry at http://registry.test sent more than 4 bytes of a test body"
        );
    }

    #[test]
    fn a_body_past_its_deadline_is_refused() {
        let mut body = limited(b"abcd", 4);
        body.deadline = Instant::now();
        body.within = Duration::from_secs(8);
        let e = body.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the registry at http://registry.test took more than 8 s to send a test body (AGENTLANG_HTTP_TIMEOUT)"
        );
    }

    #[test]
    fn the_timeout_variable_takes_whole_seconds() {
        let t = Timeouts::parse(" 2 ").unwrap();
        assert_eq!(t.step, Duration::from_secs(2));
        assert_eq!(t.total(), Duration::from_secs(8));
        assert_eq!(
            t.transfer(160 * 1024),
            Duration::from_secs(18),
            "16 KiB/s on top"
        );
        for bad in ["0", "-1", "1.5", "soon", "3601", ""] {
            assert!(Timeouts::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn one_line_drops_blank_lines() {
        assert_eq!(one_line("a\n\n  b  \nc"), "a; b; c");
    }
}
