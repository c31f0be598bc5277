//! Builds the application from a [`Config`]: opens storage, migrates, binds
//! the listener (port 0 picks a free port) and returns the server with the
//! address it got.

use std::{net::SocketAddr, sync::Arc};

use actix_web::{
    App, HttpResponse, HttpServer, dev::Server, http::header, middleware::from_fn, web,
};
use anyhow::Context;
use tracing_actix_web::TracingLogger;
use utoipa::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

use crate::{
    blobs::Blobs,
    common::{files::create_private_dir, secrets},
    config::Config,
    db::Db,
    deadlines, error,
    identity::RegistryIdentity,
    metrics::{self, Metrics},
    openapi::ApiDoc,
    rate_limit::{self, RateLimits},
    request_id::{self, RequestSpan},
    routes,
    service::{
        accounts::apply_configured_admins,
        cache,
        credentials::{PasswordWork, decoy_hash},
        keys::PublishingKeys,
        packages::{self, DownloadCounter},
        publish::{self, UploadSlots},
        publish_queue::PublishQueue,
        resolve::IndexCache,
        sweep,
        tlog::{self, TransparencyLog},
        tokens::TokenKeys,
    },
    state::AppState,
};

/// Largest JSON request body of the API's small endpoints.
const JSON_BODY_LIMIT: usize = 64 * 1024;

/// How long a stopping server lets in-flight requests finish.
const SHUTDOWN_GRACE_SECS: u64 = 30;

/// A bound, not yet running registry.
pub struct Application {
    server: Server,
    address: SocketAddr,
    state: web::Data<AppState>,
    /// The periodic blob sweep and download-count flush, stopped with the
    /// server.
    background: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Opens storage (creating it on first start), runs migrations, seeds
    /// the models catalog and binds the listener.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        // Config built in code (not from the environment) is checked too.
        if let Some(secret) = &config.jwt_secret {
            secrets::check_secret_strength(secret)
                .map_err(|m| anyhow::anyhow!("the JWT secret is refused: {m}"))?;
        }
        // The data folder holds the database, the identity key and the
        // upload spool: private to the registry's user.
        create_private_dir(&config.data_dir)
            .with_context(|| format!("cannot create {}", config.data_dir.display()))?;
        let listener = std::net::TcpListener::bind(&config.bind)
            .with_context(|| format!("cannot listen on {}", config.bind))?;
        let address = listener.local_addr()?;
        let public_url = config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));

        // actix's own default. Each worker queries on its own runtime, as do
        // the main thread (start-up, the periodic jobs) and the publish
        // queue's thread: the database splits its connections between them.
        let workers = config.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
        });
        let db = Db::connect(
            &config.effective_database_url(),
            config.limits.database_timeout,
            workers + 2,
        )
        .await?;
        db.seed_models()
            .await
            .context("cannot seed the models catalog")?;
        let blobs = Blobs::open(
            &config.effective_storage_url(),
            &config.s3,
            config.limits.storage_timeout,
        )?
        .with_hot_cache(config.blob_cache_mib.saturating_mul(1024 * 1024));
        // Uploads cut off by a crash of this process left their spool files.
        let removed = publish::clean_spool(&config.data_dir).with_context(|| {
            format!(
                "cannot clean the upload spool in {}",
                config.data_dir.join(publish::SPOOL_DIR).display()
            )
        })?;
        if removed > 0 {
            tracing::info!(removed, "removed the spool files of interrupted uploads");
        }
        // The decoy hash costs one argon2 run: pay it now, not on a worker
        // during the first sign-in.
        tokio::task::spawn_blocking(|| decoy_hash().len())
            .await
            .context("cannot prepare the password decoy")?;

        let secret = match &config.jwt_secret {
            Some(secret) => secret.clone(),
            // Kept in the database: every replica of it signs alike, and no
            // file holds it.
            None => {
                let fresh = secrets::random_hex().context("no randomness for a secret")?;
                db.server_secret("jwt", &fresh)
                    .await
                    .context("cannot read or store the token signing secret")?
            }
        };
        let secret = secret.into_bytes();
        let tokens = TokenKeys::new(&secret, &public_url);
        tokens
            .self_test()
            .context("the token signer failed its self-test")?;

        let identity = RegistryIdentity::load(&config.identity, &config.data_dir)
            .context("cannot load the registry's agent identity")?;

        let tlog = TransparencyLog::open(&db, &config.log, &public_url)
            .await
            .context("cannot open the transparency log")?;
        tlog.prepare(&db)
            .await
            .context("cannot bring the transparency log up to date")?;

        let freshness_window = config.freshness_window;
        let state = web::Data::new(AppState {
            rate_limits: RateLimits::new(&config.rate_limits),
            passwords: PasswordWork::per_core(),
            uploads: UploadSlots::new(
                config.limits.max_concurrent_uploads,
                config.limits.max_concurrent_uploads_per_account,
            ),
            downloads: DownloadCounter::default(),
            publish_queue: PublishQueue::start(db.clone())
                .context("cannot start the publish queue's thread")?,
            publishing_keys: PublishingKeys::default(),
            metrics: Metrics::new()?,
            config: Arc::new(config),
            db,
            blobs,
            tokens,
            public_url,
            identity: Arc::new(identity),
            index_cache: Arc::new(IndexCache::with_freshness_window(freshness_window)),
            rendered: cache::rendered_cache(),
            download_targets: packages::download_targets(),
            tlog: Arc::new(tlog),
        });
        apply_configured_admins(&state)
            .await
            .map_err(|e| anyhow::anyhow!("cannot apply AGENTLANG_REGISTRY_ADMINS: {e}"))?;
        let max_upload = state.config.max_upload_bytes;
        let app_state = state.clone();
        let metrics = web::Data::new(state.metrics.clone());
        let openapi = ApiDoc::openapi();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .app_data(metrics.clone())
                .app_data(
                    web::JsonConfig::default()
                        .limit(JSON_BODY_LIMIT)
                        .error_handler(error::json_error),
                )
                .app_data(web::PathConfig::default().error_handler(error::path_error))
                .app_data(web::QueryConfig::default().error_handler(error::query_error))
                .app_data(web::PayloadConfig::new(max_upload))
                // First: the catalog takes every path but the API's.
                .configure(crate::catalog::configure)
                .configure(routes::configure)
                .service(
                    SwaggerUi::new("/api/docs/{_:.*}").url("/api/openapi.json", openapi.clone()),
                )
                .route(
                    "/api/docs",
                    web::get().to(|| async {
                        HttpResponse::PermanentRedirect()
                            .insert_header((header::LOCATION, "/api/docs/"))
                            .finish()
                    }),
                )
                .default_service(web::to(routes::unmatched))
                // Outermost last: request id, then the log span, metrics,
                // problem completion, rate limits, and the deadlines.
                .wrap(from_fn(deadlines::bound_request))
                .wrap(from_fn(rate_limit::limit_requests))
                .wrap(from_fn(error::problem_details))
                .wrap(from_fn(metrics::record_requests))
                .wrap(TracingLogger::<RequestSpan>::new())
                .wrap(from_fn(request_id::assign_request_id))
                .wrap(from_fn(crate::head::route_head_as_get))
        })
        .shutdown_timeout(SHUTDOWN_GRACE_SECS)
        .workers(workers);
        let server = server.listen(listener)?.run();
        let interval = state.config.sweep_interval;
        let sweeper = (!interval.is_zero())
            .then(|| actix_web::rt::spawn(sweep::sweep_periodically(state.clone(), interval)));
        let download_flusher =
            actix_web::rt::spawn(packages::flush_downloads_periodically(state.clone()));
        let extras_backfill = actix_web::rt::spawn(packages::backfill_extras(state.clone()));
        let sequencer = actix_web::rt::spawn(tlog::sequence_periodically(state.clone()));
        let log_audit = actix_web::rt::spawn(tlog::audit_at_start(state.clone()));
        Ok(Self {
            server,
            address,
            state,
            background: sweeper
                .into_iter()
                .chain([download_flusher, extras_backfill, sequencer, log_audit])
                .collect(),
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The registry's public URL (the bound address unless configured).
    pub fn public_url(&self) -> &str {
        &self.state.public_url
    }

    /// The shared state, for tests and maintenance tasks.
    pub fn state(&self) -> web::Data<AppState> {
        self.state.clone()
    }

    /// A handle to stop the server gracefully.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// Serves until stopped (SIGTERM or SIGINT, or [`Application::handle`]);
    /// in-flight requests get [`SHUTDOWN_GRACE_SECS`] to finish.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        for task in self.background {
            task.abort();
        }
        if let Err(e) = self.state.downloads.flush(&self.state.db).await {
            tracing::warn!(error = %e, "download counts not written at shutdown");
        }
        self.state.db.close().await;
        result
    }
}
