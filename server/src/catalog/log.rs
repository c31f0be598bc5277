//! `/log`: the transparency log's latest checkpoint and its entries, each
//! linked to the version or key it concerns.

use actix_web::{HttpResponse, web};
use agentlang_web::pages::{LogEntryRow, LogPage};
use serde::Deserialize;
use serde_json::Value;

use super::{CatalogError, html, session::MaybeSession};
use crate::state::AppState;

/// Entries per page.
const WINDOW: u64 = 50;

#[derive(Debug, Deserialize)]
pub struct LogQuery {
    /// An entry to show, with those around it.
    at: Option<u64>,
}

/// `GET /log[?at=N]`.
pub async fn show_log(
    state: web::Data<AppState>,
    session: MaybeSession,
    query: web::Query<LogQuery>,
) -> Result<HttpResponse, CatalogError> {
    let window = app::tlog::window(&state, query.at, WINDOW).await?;
    let (checkpoint, entries, size) = (window.checkpoint, window.entries, window.size);
    let newest = entries.first().map(|(i, _)| *i);
    let oldest = entries.last().map(|(i, _)| *i);
    html(&LogPage {
        chrome: session.chrome(),
        origin: window.origin,
        size,
        root: checkpoint
            .as_ref()
            .map(|c| hex::encode(c.root))
            .unwrap_or_default(),
        note: checkpoint
            .as_ref()
            .map(|c| String::from_utf8_lossy(&c.note).into_owned())
            .unwrap_or_default(),
        key: window.verifier_key,
        witnesses: window.cosigners,
        entries: entries.into_iter().map(|(i, e)| row(i, &e)).collect(),
        at: query.at.filter(|at| *at < size),
        newer: newest
            .filter(|n| n + 1 < size)
            .map(|n| (n + WINDOW / 2 + 1).min(size - 1)),
        older: oldest
            .filter(|o| *o > 0)
            .map(|o| o.saturating_sub(WINDOW / 2 + 1)),
    })
}

fn row(index: u64, e: &Value) -> LogEntryRow {
    let s = |k: &str| e[k].as_str().map(str::to_owned);
    let op = s("op").unwrap_or_default();
    // Every kind has pages at its plural; an entry of no known kind links
    // nowhere.
    let plural = s("kind")
        .and_then(|k| k.parse::<agentlang_core::Kind>().ok())
        .map(agentlang_core::Kind::plural);
    let (subject, href) = match (op.as_str(), s("name"), s("version")) {
        ("genesis", _, _) => (s("origin").unwrap_or_default(), None),
        ("key_add" | "key_revoke", _, _) => {
            let key = s("signer").unwrap_or_default();
            (format!("key {key}"), Some(format!("/keys/{key}")))
        }
        (_, Some(name), Some(version)) => (
            format!("{} {name}@{version}", s("kind").unwrap_or_default()),
            plural.map(|p| format!("/{p}/{name}/{version}")),
        ),
        (_, Some(name), None) => (
            format!("{} {name}", s("kind").unwrap_or_default()),
            plural.map(|p| format!("/{p}/{name}")),
        ),
        _ => (String::new(), None),
    };
    LogEntryRow {
        index,
        time: s("time").unwrap_or_default(),
        op,
        subject,
        href,
        account: s("account"),
        reason: s("reason"),
        sha256: s("sha256"),
    }
}
