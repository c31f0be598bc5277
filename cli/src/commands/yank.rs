//! `yank` and `yank --undo`.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::{Value, json};

use crate::{args::KindArg, env::Env};

pub fn run(
    env: &Env,
    spec: &str,
    kind: Option<KindArg>,
    reason: Option<&str>,
    undo: bool,
) -> Result<ExitCode> {
    let (name, version) = crate::spec::parse_exact(spec)?;
    let action = if undo { "unyank" } else { "yank" };
    let client = env.authenticated()?;
    let kind = crate::index::which_kind(&client, &name, kind.map(KindArg::kind))?;
    let path = format!("/api/v1/{}/{name}/{version}/{action}", kind.plural());
    let body = json!({ "reason": reason });
    let record: Value = client.send_json(client.post(&path).json(&body))?;
    env.out.emit(&record, || {
        let done = if undo { "unyanked" } else { "yanked" };
        format!("{} {done} {kind} {name}@{version}", env.out.green("✓"))
    });
    Ok(ExitCode::SUCCESS)
}
