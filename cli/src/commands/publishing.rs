//! `publishing NAME [--trusted-only on|off] [--require-2fa on|off]
//! [--require-stage on|off]`: a package's publishing policy
//! (docs/publishing-policy.md), read with `GET` and changed with `PATCH
//! .../publishing`.

use std::process::ExitCode;

use agentlang_core::PackageName;
use anyhow::Result;
use serde_json::{Value, json};

use crate::{args::KindArg, env::Env};

/// The switches given; `None` keeps the registry's.
#[derive(Debug, Clone, Copy)]
pub struct Change {
    pub trusted_only: Option<bool>,
    pub require_2fa: Option<bool>,
    pub require_stage: Option<bool>,
}

impl Change {
    fn is_empty(&self) -> bool {
        self.trusted_only.is_none() && self.require_2fa.is_none() && self.require_stage.is_none()
    }
}

pub fn run(env: &Env, name: &str, kind: Option<KindArg>, change: Change) -> Result<ExitCode> {
    let name = PackageName::new(name).map_err(|e| anyhow::anyhow!("{name:?}: {e}"))?;
    let path_of =
        |kind: agentlang_core::Kind| format!("/api/v1/{}/{name}/publishing", kind.plural());
    let answer: Value = if change.is_empty() {
        let client = env.anonymous()?;
        let kind = crate::index::which_kind(&client, &name, kind.map(KindArg::kind))?;
        client.send_json(client.get(&path_of(kind)))?
    } else {
        let client = env.authenticated()?;
        let kind = crate::index::which_kind(&client, &name, kind.map(KindArg::kind))?;
        let body = json!({
            "trusted_publishing_only": change.trusted_only,
            "two_factor_required": change.require_2fa,
            "staging_required": change.require_stage,
        });
        // Absent switches are kept: send only the ones given.
        let body: serde_json::Map<String, Value> = body
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        crate::two_factor::send_json(env, &client, || client.patch(&path_of(kind)).json(&body))?
    };
    env.out.emit(&answer, || {
        let switch = |field: &str| {
            if answer.get(field).and_then(Value::as_bool) == Some(true) {
                "on"
            } else {
                "off"
            }
        };
        format!(
            "{} {}\n  trusted publishing only: {}\n  second factor required:  {}\n  staging required:        {}",
            answer["kind"].as_str().unwrap_or_default(),
            answer["name"].as_str().unwrap_or_default(),
            switch("trusted_publishing_only"),
            switch("two_factor_required"),
            switch("staging_required"),
        )
    });
    Ok(ExitCode::SUCCESS)
}
