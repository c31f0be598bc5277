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

use app::Registry;

use crate::{
    admission,
    config::Config,
    cors, deadlines, error, metrics,
    openapi::ApiDoc,
    rate_limit,
    request_id::{self, RequestSpan},
    routes,
    state::AppState,
};

/// Largest JSON request body of the API's small endpoints.
const JSON_BODY_LIMIT: usize = 64 * 1024;

/// How long a stopping server lets in-flight requests finish.
const SHUTDOWN_GRACE_SECS: u64 = 30;

/// Open files kept out of the connections' share: database connections,
/// spool files, blob files, logs.
const FILES_NOT_FOR_CONNECTIONS: u64 = 512;

/// Connections each worker accepts: the open-files limit (raised to the
/// hard limit first) less what the rest of the process needs, shared by
/// the workers. Past it, a worker stops accepting until one closes (new
/// clients wait in the kernel's queue) instead of failing `accept` and
/// every file the process then tries to open.
fn connections_per_worker(workers: usize) -> usize {
    let files = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(files) => files,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read or raise the open-files limit");
            1024
        }
    };
    let per_worker = files.saturating_sub(FILES_NOT_FOR_CONNECTIONS) / workers.max(1) as u64;
    usize::try_from(per_worker).unwrap_or(usize::MAX).max(64)
}

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
        let registry = Registry::open(config.settings(public_url, workers + 2)).await?;
        let state = web::Data::new(AppState {
            registry: Arc::new(registry),
            config: Arc::new(config),
        });
        let max_upload = state.config.max_upload_bytes;
        let app_state = state.clone();
        let metrics = web::Data::new(state.metrics().clone());
        // The document serialized once and shared: each worker holding
        // utoipa's tree of it (as `SwaggerUi::url` does) cost about 8 MiB
        // apiece, a fifth of an idle registry's heap.
        let openapi_json = web::Bytes::from(
            serde_json::to_vec(&ApiDoc::openapi())
                .context("cannot serialize the OpenAPI document")?,
        );
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
                    SwaggerUi::new("/api/docs/{_:.*}")
                        .config(utoipa_swagger_ui::Config::new(["/api/openapi.json"])),
                )
                .route("/api/openapi.json", {
                    let document = openapi_json.clone();
                    web::get().to(move || {
                        let document = document.clone();
                        async move {
                            HttpResponse::Ok()
                                .content_type("application/json")
                                .body(document)
                        }
                    })
                })
                .route(
                    "/api/docs",
                    web::get().to(|| async {
                        HttpResponse::PermanentRedirect()
                            .insert_header((header::LOCATION, "/api/docs/"))
                            .finish()
                    }),
                )
                .default_service(web::to(crate::openapi::unmatched))
                // Outermost last: request id, then the log span, metrics,
                // problem completion, rate limits, admission, cross-origin
                // reads, and the deadlines.
                .wrap(from_fn(deadlines::bound_request))
                .wrap(cors::cors())
                .wrap(from_fn(cors::mark_public_reads))
                .wrap(from_fn(admission::admit_request))
                .wrap(from_fn(rate_limit::limit_requests))
                .wrap(from_fn(error::problem_details))
                .wrap(from_fn(metrics::record_requests))
                .wrap(TracingLogger::<RequestSpan>::new())
                .wrap(from_fn(request_id::assign_request_id))
                .wrap(from_fn(crate::head::route_head_as_get))
                // On every response, whatever answered it (HSTS over https).
                .wrap(app_state.config.default_headers())
        })
        .shutdown_timeout(SHUTDOWN_GRACE_SECS)
        .max_connections(connections_per_worker(workers))
        .workers(workers);
        let server = server.listen(listener)?.run();
        let background = state.registry.start_background();
        Ok(Self {
            server,
            address,
            state,
            background,
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The registry's public URL (the bound address unless configured).
    pub fn public_url(&self) -> &str {
        self.state.public_url()
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
        self.state.registry.close().await;
        result
    }
}
