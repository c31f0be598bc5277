//! The models catalog: what agents may name in `models:`, with the facts
//! a lock records of each. Read by anyone, written by admins.

use store::models::ModelSpec;

pub use store::models::{ModelName, ModelRecord};

use crate::{FieldError, Registry, ServiceError, tokens::Authenticated};

/// A model as an admin sends it: every field checked here.
#[derive(Debug, Clone, Default)]
pub struct ModelInput {
    pub context_window: Option<i64>,
    pub supports_tools: Option<bool>,
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
}

impl ModelInput {
    /// Every invalid field, listed together.
    fn check(self) -> Result<ModelSpec, Vec<FieldError>> {
        let mut errors = Vec::new();
        match self.context_window {
            None => errors.push(FieldError::new("context_window", "is required")),
            Some(n) if n <= 0 => {
                errors.push(FieldError::new(
                    "context_window",
                    "must be a positive token count",
                ));
            }
            Some(_) => {}
        }
        if self.supports_tools.is_none() {
            errors.push(FieldError::new("supports_tools", "is required"));
        }
        for (field, price) in [
            ("input_price_per_mtok", self.input_price_per_mtok),
            ("output_price_per_mtok", self.output_price_per_mtok),
        ] {
            if price.is_some_and(|p| !p.is_finite() || p < 0.0) {
                errors.push(FieldError::new(field, "must be a non-negative number"));
            }
        }
        match (self.context_window, self.supports_tools) {
            (Some(context_window), Some(supports_tools)) if errors.is_empty() => Ok(ModelSpec {
                context_window,
                supports_tools,
                input_price_per_mtok: self.input_price_per_mtok,
                output_price_per_mtok: self.output_price_per_mtok,
            }),
            _ => Err(errors),
        }
    }
}

/// Every model in the catalog.
pub async fn list_models(registry: &Registry) -> Result<Vec<ModelRecord>, ServiceError> {
    Ok(registry.db.list_models().await?)
}

/// One model; a name that cannot be a model's is not found, like an
/// unknown one.
pub async fn get_model(registry: &Registry, raw_name: &str) -> Result<ModelRecord, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("model {raw_name:?}"));
    let name = ModelName::parse(raw_name).map_err(|_| not_found())?;
    registry
        .db
        .find_model(&name)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("model {name}")))
}

/// Creates or replaces a model: admins only, with a token carrying the
/// `admin` scope. Returns the model and whether it was created.
pub async fn put_model(
    registry: &Registry,
    auth: &Authenticated,
    raw_name: &str,
    input: ModelInput,
) -> Result<(ModelRecord, bool), ServiceError> {
    auth.require_admin()?;
    let name = ModelName::parse(raw_name)
        .map_err(|m| ServiceError::Validation(vec![FieldError::new("name", m)]))?;
    let spec = input.check().map_err(ServiceError::Validation)?;
    let (model, created) = registry.db.upsert_model(&name, &spec).await?;
    tracing::info!(model = %name, by = %auth.username, created, "model written");
    Ok((model, created))
}
