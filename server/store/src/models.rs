//! The models catalog: what the resolver writes into a lockfile's `models:`.

use std::fmt;

use super::{Db, now, with_pool};

/// A model name such as `claude-sonnet-4` or `llama3.1:8b`: 1 to 128 ASCII
/// letters, digits, `-`, `_`, `.`, `:`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelName(String);

impl ModelName {
    pub fn parse(s: &str) -> Result<Self, String> {
        let first = s.chars().next().ok_or("must not be empty")?;
        if s.len() > 128 {
            return Err("must be at most 128 characters".to_owned());
        }
        if !first.is_ascii_alphanumeric() {
            return Err("must start with an ASCII letter or digit".to_owned());
        }
        if let Some(bad) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
        {
            return Err(format!(
                "may hold only ASCII letters, digits, '-', '_', '.' and ':', found {bad:?}"
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ModelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ModelRecord {
    pub name: String,
    pub context_window: i64,
    pub supports_tools: bool,
    /// US dollars per million input tokens.
    pub input_price_per_mtok: Option<f64>,
    /// US dollars per million output tokens.
    pub output_price_per_mtok: Option<f64>,
    /// Unix seconds.
    pub updated_at: i64,
}

/// A model's writable attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub context_window: i64,
    pub supports_tools: bool,
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
}

/// Written on first start (and never over an edited row): a few well-known
/// models so a fresh registry resolves common agents.
pub const SEED_MODELS: &[(&str, ModelSpec)] = &[
    (
        "claude-sonnet-4",
        ModelSpec {
            context_window: 200_000,
            supports_tools: true,
            input_price_per_mtok: Some(3.0),
            output_price_per_mtok: Some(15.0),
        },
    ),
    (
        "claude-opus-4",
        ModelSpec {
            context_window: 200_000,
            supports_tools: true,
            input_price_per_mtok: Some(15.0),
            output_price_per_mtok: Some(75.0),
        },
    ),
    (
        "claude-3-5-haiku",
        ModelSpec {
            context_window: 200_000,
            supports_tools: true,
            input_price_per_mtok: Some(0.8),
            output_price_per_mtok: Some(4.0),
        },
    ),
    (
        "gpt-4o",
        ModelSpec {
            context_window: 128_000,
            supports_tools: true,
            input_price_per_mtok: Some(2.5),
            output_price_per_mtok: Some(10.0),
        },
    ),
    (
        "gpt-4o-mini",
        ModelSpec {
            context_window: 128_000,
            supports_tools: true,
            input_price_per_mtok: Some(0.15),
            output_price_per_mtok: Some(0.6),
        },
    ),
];

impl Db {
    pub async fn list_models(&self) -> Result<Vec<ModelRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, ModelRecord>(
                "SELECT name, context_window, supports_tools, input_price_per_mtok,
                        output_price_per_mtok, updated_at
                 FROM models ORDER BY name",
            )
            .fetch_all(pool)
            .await
        })
    }

    pub async fn find_model(&self, name: &ModelName) -> Result<Option<ModelRecord>, sqlx::Error> {
        with_pool!(self, pool => {
            sqlx::query_as::<_, ModelRecord>(
                "SELECT name, context_window, supports_tools, input_price_per_mtok,
                        output_price_per_mtok, updated_at
                 FROM models WHERE name = $1",
            )
            .bind(name.as_str())
            .fetch_optional(pool)
            .await
        })
    }

    /// Creates or replaces a model. Returns the row and whether it is new.
    pub async fn upsert_model(
        &self,
        name: &ModelName,
        spec: &ModelSpec,
    ) -> Result<(ModelRecord, bool), sqlx::Error> {
        let existed = self.find_model(name).await?.is_some();
        let record = with_pool!(self, pool => {
            sqlx::query_as::<_, ModelRecord>(
                "INSERT INTO models (name, context_window, supports_tools, input_price_per_mtok,
                                     output_price_per_mtok, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (name) DO UPDATE SET
                     context_window = excluded.context_window,
                     supports_tools = excluded.supports_tools,
                     input_price_per_mtok = excluded.input_price_per_mtok,
                     output_price_per_mtok = excluded.output_price_per_mtok,
                     updated_at = excluded.updated_at
                 RETURNING name, context_window, supports_tools, input_price_per_mtok,
                           output_price_per_mtok, updated_at",
            )
            .bind(name.as_str())
            .bind(spec.context_window)
            .bind(spec.supports_tools)
            .bind(spec.input_price_per_mtok)
            .bind(spec.output_price_per_mtok)
            .bind(now())
            .fetch_one(pool)
            .await
        })?;
        super::note_local_write();
        Ok((record, !existed))
    }

    /// Inserts [`SEED_MODELS`] that are missing; edited rows are kept.
    pub async fn seed_models(&self) -> Result<(), sqlx::Error> {
        let now = now();
        for (name, spec) in SEED_MODELS {
            with_pool!(self, pool => {
                sqlx::query(
                    "INSERT INTO models (name, context_window, supports_tools, input_price_per_mtok,
                                         output_price_per_mtok, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (name) DO NOTHING",
                )
                .bind(*name)
                .bind(spec.context_window)
                .bind(spec.supports_tools)
                .bind(spec.input_price_per_mtok)
                .bind(spec.output_price_per_mtok)
                .bind(now)
                .execute(pool)
                .await
                .map(drop)
            })?;
        }
        Ok(())
    }
}
