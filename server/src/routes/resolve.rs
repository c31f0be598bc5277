//! `POST /api/v1/resolve`: requirements in, an `agent.lock` out.

use std::collections::BTreeMap;

use actix_web::{
    HttpRequest, HttpResponse,
    http::header::{self, Header as _},
    post, web,
};

use serde::Deserialize;
use utoipa::ToSchema;

use crate::{error::ApiError, rate_limit::Client, state::AppState};
use app::ServiceError;
use app::resolve::{self, RenderKey, ResolveAnswer, ResolveInput};
use app::time::rfc3339;

/// Largest resolve request: an agent.yaml or a JSON request with a lock.
pub const MAX_RESOLVE_BODY: usize = 1024 * 1024;

/// The JSON form of a resolve request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// Tool name to a Cargo-style requirement (`^1.2.0`; a bare `1.2.0`
    /// means `^1.2.0`), or `null` for the newest release. At most 256.
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"web_search": "^1.2.0", "web_fetch": null}))]
    pub tools: BTreeMap<String, Option<String>>,
    /// Skill package name to a requirement (`^0.1`), as agent.yaml's
    /// `skills:` entries with a `version` state them: each becomes a
    /// `skills:` entry of the lock, the newest unyanked version that fits
    /// (or the given lock's pin while it fits). At most 64.
    #[serde(default)]
    #[schema(value_type = Object, example = json!({"pdf-tools": "^0.1"}))]
    pub skills: BTreeMap<String, String>,
    /// Model names to describe in the lock's `models:` from the catalog.
    /// At most 32.
    #[serde(default)]
    #[schema(max_items = 32, example = json!(["claude-sonnet-4"]))]
    pub models: Vec<String>,
    /// An existing agent.lock (as JSON): its tool versions are kept while
    /// they still satisfy the requirements, even when yanked since. Each of
    /// its sections holds at most 1,024 entries.
    #[schema(value_type = Option<Object>)]
    pub lock: Option<serde_json::Value>,
    /// RFC 3339: versions published after this time are not chosen (the
    /// given lock's pins excepted), as uv's `exclude-newer` and pnpm's
    /// `minimumReleaseAge` hold back new releases. The versions it held
    /// back are named in the answer's `AgentLang-Held-Back` header.
    #[schema(example = "2026-11-21T12:00:00Z")]
    pub exclude_newer: Option<String>,
}

/// Most versions `AgentLang-Held-Back` names; `AgentLang-Held-Back-Count`
/// says how many there were.
const MAX_HELD_BACK_LISTED: usize = 32;

fn content_type(req: &HttpRequest) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether to answer in JSON: as `Accept` ranks JSON and YAML, in the
/// request's own form when it leaves the choice open (absent, `*/*`,
/// `application/*`), and 406 when it admits neither. A type given `q=0` is
/// refused even when a wildcard admits it. So a generated client that posts
/// JSON reads JSON, and `curl --data-binary @agent.yaml` reads an
/// agent.lock.
fn answer_in_json(req: &HttpRequest, json_request: bool) -> Result<bool, ApiError> {
    let accept = match header::Accept::parse(req) {
        Ok(accept) if !accept.is_empty() => accept,
        _ => return Ok(json_request),
    };
    let refused = |types: &[(&str, &str)]| {
        accept.iter().any(|q| {
            q.quality == header::Quality::ZERO
                && types.contains(&(q.item.type_().as_str(), q.item.subtype().as_str()))
        })
    };
    let json_ok = !refused(&[("application", "json")]);
    let yaml_ok = !refused(&[
        ("application", "yaml"),
        ("application", "x-yaml"),
        ("text", "yaml"),
    ]);
    let mut ranked = accept.ranked();
    ranked.retain(|mime| {
        !accept
            .iter()
            .any(|q| q.quality == header::Quality::ZERO && &q.item == mime)
    });
    for mime in ranked {
        match (mime.type_().as_str(), mime.subtype().as_str()) {
            ("application", "json") if json_ok => return Ok(true),
            ("application" | "text", "yaml" | "x-yaml") if yaml_ok => return Ok(false),
            ("application" | "*", "*") if json_ok || yaml_ok => {
                return Ok(if json_request { json_ok } else { !yaml_ok });
            }
            _ => {}
        }
    }
    Err(ApiError::NotAcceptable {
        available: "application/yaml, application/json",
    })
}

/// Resolves tool and skill requirements into an `agent.lock` with tool
/// and skill hashes and model metadata from the models catalog.
///
/// The body is an agent.yaml (`application/yaml`) or a JSON request. The
/// answer is the same lock in either form, chosen by `Accept`: YAML (the
/// file as written to disk) for `Accept: application/yaml`, JSON for
/// `Accept: application/json`, the request's own form when `Accept` is
/// absent or leaves the choice open (`*/*`), and 406 for an `Accept` that
/// admits neither. Yanked
/// versions are never chosen, except a version the given lock pins.
///
/// A `tools` name that some tool declares in `provides:` is an interface:
/// the lock's `interfaces` records the provider picked for it (the given
/// lock's choice while it still provides it and fits, else the first
/// provider by normalized name with an unyanked providing version that
/// satisfies the requirement), pinned in `tools` like any tool.
#[utoipa::path(
    tag = "resolve",
    request_body(content(
        (ResolveRequest = "application/json"),
        (String = "application/yaml"),
    )),
    responses(
        (status = 200, description = "An agent.lock", content(
            (agentlang_core::lockfile::Lockfile = "application/yaml"),
            (agentlang_core::lockfile::Lockfile = "application/json"),
        ), headers(
            ("AgentLang-Held-Back" = String, description = "With `exclude_newer`: the unyanked versions it kept from being chosen, `name@version;published=<RFC 3339>`, comma-separated, at most 32"),
            ("AgentLang-Held-Back-Count" = u64, description = "With `exclude_newer`: how many versions it held back"),
        )),
        (status = 406, description = "`Accept` admits neither YAML nor JSON (`not-acceptable`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "Larger than 1 MiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither YAML nor JSON", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid input, an unknown tool, skill or model, or a skill no published version of which satisfies its requirement (`validation-failed`), an interface no unyanked version of any provider satisfies (`interface-unprovided`, at `tools.<name>`), requirements that cannot be met (`unsatisfiable`: the explanation in `detail`, the clashing requirements in `conflicts`), or requirements too intricate for the solver's bound on work (`resolve-too-complex`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Resolution took too long (`resolve-timeout`)", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/api/v1/resolve")]
pub async fn resolve_lock(
    req: HttpRequest,
    state: web::Data<AppState>,
    Client(client): Client,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let content_type = match content_type(&req).as_str() {
        "application/yaml" | "application/x-yaml" | "text/yaml" => "application/yaml",
        "application/json" => "application/json",
        _ => {
            return Err(ApiError::UnsupportedMediaType {
                expected: "application/yaml (an agent.yaml) or application/json",
            });
        }
    };
    let key = RenderKey {
        content_type,
        json_answer: answer_in_json(&req, content_type == "application/json")?,
        body: super::read_body(&req, payload, MAX_RESOLVE_BODY).await?,
    };
    let json_answer = key.json_answer;
    let answer = resolve::resolve_answer(&state, &client, key, |body| {
        if content_type == "application/json" {
            let request: ResolveRequest = serde_json::from_slice(body)
                .map_err(|e| ServiceError::Malformed(format!("invalid JSON body: {e}")))?;
            ResolveInput::from_request(
                request.tools,
                request.skills,
                request.models,
                request.lock,
                request.exclude_newer,
            )
        } else {
            ResolveInput::from_agent_yaml(body)
        }
    })
    .await?;
    Ok(respond(json_answer, answer))
}

fn respond(json: bool, answer: ResolveAnswer) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    response.insert_header((header::VARY, "Accept"));
    if !answer.held_back.is_empty() {
        let listed: Vec<String> = answer
            .held_back
            .iter()
            .take(MAX_HELD_BACK_LISTED)
            .map(|h| {
                format!(
                    "{}@{};published={}",
                    h.name,
                    h.version,
                    rfc3339(h.published_at)
                )
            })
            .collect();
        response.insert_header(("AgentLang-Held-Back", listed.join(", ")));
        response.insert_header(("AgentLang-Held-Back-Count", answer.held_back.len()));
    }
    response
        .content_type(if json {
            "application/json"
        } else {
            "application/yaml"
        })
        .body(answer.body)
}
