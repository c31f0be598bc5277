//! JSON Schemas of the formats the registry's users exchange among
//! themselves: the event format runtimes emit (`core::events::SCHEMA`).

use actix_web::{HttpResponse, get, http::header};

/// The AgentLang event format (JSON Schema, draft 2020-12).
#[utoipa::path(
    tag = "schemas",
    responses((status = 200, description = "The schema", content_type = "application/schema+json", body = Object))
)]
#[get("/api/v1/schemas/events.json")]
pub async fn get_events_schema() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/schema+json")
        // Changes only with a registry release.
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(agentlang_core::events::SCHEMA)
}
