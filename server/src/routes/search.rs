//! Full-text search over packages.

use actix_web::{HttpResponse, get, web};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::{error::ApiError, state::AppState};
use app::search::{self, SearchPage, SearchQuery};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Words to find in names, titles, keywords and descriptions: each a
    /// whole word, the last also as a prefix (a word still being typed).
    /// Taken literally: no search operators. Empty lists every package by
    /// name.
    pub q: Option<String>,
    /// `agent`, `tool` or `protocol`.
    pub kind: Option<String>,
    /// An agent category, compared case-insensitively.
    pub category: Option<String>,
    /// 1-based; default 1.
    pub page: Option<u32>,
    /// 1 to 100; default 20.
    pub per_page: Option<u32>,
}

/// Searches packages, best match first.
#[utoipa::path(
    tag = "search",
    params(SearchParams),
    responses(
        (status = 200, body = SearchPage, description = "One page of ranked results"),
        (status = 422, description = "Invalid parameters, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/search")]
pub async fn search_packages(
    state: web::Data<AppState>,
    params: web::Query<SearchParams>,
) -> Result<HttpResponse, ApiError> {
    let query = SearchQuery::parse(
        params.q.as_deref(),
        params.kind.as_deref(),
        params.category.as_deref(),
        params.page,
        params.per_page,
    )?;
    let answer = search::search_answer(&state, &query).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(answer.body))
}
