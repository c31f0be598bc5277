//! The models catalog: read by anyone, written by admins.

use actix_web::{HttpResponse, get, put, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use app::{
    models::{self, ModelInput, ModelRecord},
    time::rfc3339,
};

use crate::{auth::Caller, error::ApiError, state::AppState};

#[derive(Debug, Serialize, ToSchema)]
pub struct Model {
    #[schema(example = "claude-sonnet-4")]
    pub name: String,
    #[schema(example = 200000)]
    pub context_window: i64,
    pub supports_tools: bool,
    /// US dollars per million input tokens.
    pub input_price_per_mtok: Option<f64>,
    /// US dollars per million output tokens.
    pub output_price_per_mtok: Option<f64>,
    /// RFC 3339.
    pub updated_at: String,
}

impl From<ModelRecord> for Model {
    fn from(r: ModelRecord) -> Self {
        Self {
            name: r.name,
            context_window: r.context_window,
            supports_tools: r.supports_tools,
            input_price_per_mtok: r.input_price_per_mtok,
            output_price_per_mtok: r.output_price_per_mtok,
            updated_at: rfc3339(r.updated_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    pub models: Vec<Model>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutModelRequest {
    #[schema(example = 200000)]
    pub context_window: Option<i64>,
    pub supports_tools: Option<bool>,
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
}

impl From<PutModelRequest> for ModelInput {
    fn from(req: PutModelRequest) -> Self {
        Self {
            context_window: req.context_window,
            supports_tools: req.supports_tools,
            input_price_per_mtok: req.input_price_per_mtok,
            output_price_per_mtok: req.output_price_per_mtok,
        }
    }
}

/// Lists every model in the catalog.
#[utoipa::path(tag = "models", responses((status = 200, body = ModelList, description = "Every model in the catalog")))]
#[get("/api/v1/models")]
pub async fn list_models(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let models = models::list_models(&state)
        .await?
        .into_iter()
        .map(Model::from)
        .collect();
    Ok(HttpResponse::Ok().json(ModelList { models }))
}

/// One model.
#[utoipa::path(
    tag = "models",
    params(("name" = String, Path, description = "The model's name")),
    responses(
        (status = 200, body = Model, description = "The model"),
        (status = 404, description = "No such model", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/api/v1/models/{name}")]
pub async fn get_model(
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let model = models::get_model(&state, &name).await?;
    Ok(HttpResponse::Ok().json(Model::from(model)))
}

/// Creates or replaces a model (admins only, with a token carrying the
/// `admin` scope).
#[utoipa::path(
    tag = "models",
    params(("name" = String, Path, description = "The model's name")),
    request_body = PutModelRequest,
    security(("bearer" = ["admin"])),
    responses(
        (status = 200, description = "Replaced", body = Model),
        (status = 201, description = "Created", body = Model),
        (status = 401, description = "Missing or invalid token", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin (`admin-required`), or the token lacks the `admin` scope (`missing-scope`)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid fields, every one listed", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[put("/api/v1/models/{name}")]
pub async fn put_model(
    state: web::Data<AppState>,
    auth: Caller,
    name: web::Path<String>,
    body: web::Json<PutModelRequest>,
) -> Result<HttpResponse, ApiError> {
    let (model, created) =
        models::put_model(&state, &auth, &name, body.into_inner().into()).await?;
    let mut response = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(response.json(Model::from(model)))
}
