//! `search`: the registry's full-text search, one line a hit.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::Value;

use crate::{args::KindArg, client::Bound, env::Env};

pub fn run(env: &Env, query: &str, kind: Option<KindArg>, page: u32) -> Result<ExitCode> {
    let client = env.anonymous()?;
    let mut params = vec![("q", query.to_owned()), ("page", page.to_string())];
    if let Some(k) = kind {
        params.push(("kind", k.plural().trim_end_matches('s').to_owned()));
    }
    let result: Value = client
        .send(client.get("/api/v1/search").query(&params))?
        .json(Bound::SEARCH)?;
    let empty = Vec::new();
    let hits = result["results"].as_array().unwrap_or(&empty);
    env.out.emit(&result, || {
        if hits.is_empty() {
            return format!("no packages match {query:?}");
        }
        let mut lines = Vec::new();
        for hit in hits {
            let s = |k: &str| hit[k].as_str().unwrap_or_default().to_owned();
            let summary = if s("title").is_empty() {
                s("description")
            } else {
                s("title")
            };
            // A package whose every version is yanked has no version to
            // offer: said so, never as `name@` with nothing after it.
            let at = match s("version") {
                v if v.is_empty() => format!("{} (every version yanked)", env.out.bold(&s("name"))),
                v => format!("{}@{v}", env.out.bold(&s("name"))),
            };
            lines.push(format!(
                "{:<6} {at}  {}",
                s("kind"),
                summary.lines().next().unwrap_or_default()
            ));
        }
        if let Some(total) = result["total"].as_u64() {
            lines.push(format!("{} of {total} shown (page {page})", hits.len()));
        }
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}
