//! `/replay`: a visitor uploads an events file and gets the session back as
//! a timeline (`core::events::timeline`), drawn on the server.
//!
//! The upload faces the open internet, so: the body is counted as it
//! arrives and refused past [`MAX_REPLAY_BYTES`] (at once when
//! `Content-Length` says so), at most [`MAX_FIELDS`] form fields are read,
//! the log may hold at most [`MAX_REPLAY_EVENTS`] events, each upload counts
//! against the caller's address in the `expensive` rate bucket (with
//! resolution and search), and parsing, checking, laying out
//! and rendering run on a blocking thread, all linear in the events; the
//! problems shown are capped where they are found (`core::diagnostics`),
//! so a file of bad lines costs a counter past the first ones. Nothing
//! is stored. The form needs no CSRF token: it changes nothing, and its
//! answer goes only to whoever sent it.

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, http::StatusCode, http::header, web};
use agentlang_core::events::{self, Limits, timeline::Timeline};
use agentlang_web::{
    Template,
    model::Chrome,
    pages::{ReplayLimits, ReplayPage},
};
use futures_util::TryStreamExt;

use super::{CatalogError, HTML, html, session::MaybeSession};
use crate::state::AppState;
use app::rate_limits::Bucket;

/// Largest events file the viewer accepts.
pub const MAX_REPLAY_BYTES: usize = 1024 * 1024;
/// Most events one replay lays out.
pub const MAX_REPLAY_EVENTS: usize = 5_000;
/// Multipart overhead allowed beyond the file (boundaries, headers).
const FORM_OVERHEAD_BYTES: usize = 16 * 1024;
/// Fields read from one form before the rest is refused.
const MAX_FIELDS: usize = 4;

const LIMITS: ReplayLimits = ReplayLimits {
    max_bytes: MAX_REPLAY_BYTES,
    max_events: MAX_REPLAY_EVENTS,
};

fn empty_page(chrome: Chrome) -> ReplayPage {
    ReplayPage {
        chrome,
        limits: LIMITS,
        file_name: None,
        errors: Vec::new(),
        timeline: None,
    }
}

fn refused(chrome: Chrome, status: StatusCode, why: String) -> Result<HttpResponse, CatalogError> {
    let mut page = empty_page(chrome);
    page.errors.push(why);
    super::html_status(status, &page)
}

/// `GET /replay`: the upload form.
pub async fn replay_form(session: MaybeSession) -> Result<HttpResponse, CatalogError> {
    html(&empty_page(session.chrome()))
}

/// The uploaded file: its name and bytes, or why it was refused.
enum Upload {
    File(Option<String>, Vec<u8>),
    Refused(StatusCode, String),
}

async fn read_upload(mut form: Multipart) -> Result<Upload, CatalogError> {
    let too_large = || {
        Upload::Refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the file is larger than {MAX_REPLAY_BYTES} bytes"),
        )
    };
    let mut fields = 0;
    let mut total = 0usize;
    while let Some(mut field) = form
        .try_next()
        .await
        .map_err(|e| CatalogError::BadRequest(e.to_string()))?
    {
        fields += 1;
        if fields > MAX_FIELDS {
            return Ok(Upload::Refused(
                StatusCode::BAD_REQUEST,
                format!("the form has more than {MAX_FIELDS} fields"),
            ));
        }
        let is_file = field.name() == Some("events");
        let file_name = field
            .content_disposition()
            .and_then(|d| d.get_filename())
            .map(|n| n.chars().take(200).collect::<String>());
        let mut bytes = Vec::new();
        while let Some(chunk) = field
            .try_next()
            .await
            .map_err(|e| CatalogError::BadRequest(e.to_string()))?
        {
            total += chunk.len();
            if total > MAX_REPLAY_BYTES + FORM_OVERHEAD_BYTES {
                return Ok(too_large());
            }
            if is_file {
                if bytes.len() + chunk.len() > MAX_REPLAY_BYTES {
                    return Ok(too_large());
                }
                bytes.extend_from_slice(&chunk);
            }
        }
        if is_file {
            return Ok(Upload::File(file_name, bytes));
        }
    }
    Ok(Upload::Refused(
        StatusCode::BAD_REQUEST,
        "choose an events file to replay".to_owned(),
    ))
}

/// `POST /replay` (multipart, field `events`): the timeline.
pub async fn replay(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: MaybeSession,
    form: Multipart,
) -> Result<HttpResponse, CatalogError> {
    let chrome = session.chrome();
    let client = crate::rate_limit::client_addr(state.rate_limits(), &req);
    if state
        .rate_limits()
        .check(Bucket::Expensive, client.as_str())
        .is_err()
    {
        return refused(
            chrome,
            StatusCode::TOO_MANY_REQUESTS,
            "too many replays from your address; wait a minute and try again".to_owned(),
        );
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_REPLAY_BYTES + FORM_OVERHEAD_BYTES) {
        return refused(
            chrome,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the file is larger than {MAX_REPLAY_BYTES} bytes"),
        );
    }
    let (file_name, bytes) = match read_upload(form).await? {
        Upload::File(name, bytes) => (name, bytes),
        Upload::Refused(status, why) => return refused(chrome, status, why),
    };
    let (status, body) = web::block(move || render(chrome, file_name, &bytes))
        .await
        .map_err(CatalogError::internal)?
        .map_err(CatalogError::internal)?;
    Ok(HttpResponse::build(status).content_type(HTML).body(body))
}

/// Parse, check, lay out and render: the CPU part, on a blocking thread.
fn render(
    chrome: Chrome,
    file_name: Option<String>,
    bytes: &[u8],
) -> Result<(StatusCode, String), askama::Error> {
    let limits = Limits {
        max_bytes: MAX_REPLAY_BYTES,
        max_events: MAX_REPLAY_EVENTS,
    };
    let mut page = ReplayPage {
        chrome,
        limits: LIMITS,
        file_name,
        errors: Vec::new(),
        timeline: None,
    };
    let status = match events::parse(bytes, &limits) {
        Ok(log) => {
            let problems = events::check(&log, None);
            page.timeline = Some(Timeline::new(&log, &problems));
            StatusCode::OK
        }
        Err(problems) => {
            // Capped where they are found (`Diagnostics`), with the "and N
            // more" line: the first problems are enough to fix a file by.
            page.errors = problems.lines().collect();
            StatusCode::UNPROCESSABLE_ENTITY
        }
    };
    Ok((status, page.render()?))
}
