//! `agentlang-registry`: reads the configuration, serves until SIGTERM.

use std::{io::IsTerminal, process::ExitCode};

use agentlang_registry::{config::Config, startup::Application};
use tracing_subscriber::{EnvFilter, fmt::format::FmtSpan};

#[actix_web::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("AGENTLANG_REGISTRY_LOG")
                .unwrap_or_else(|_| EnvFilter::new("info")),
        )
        // One line per request, with its status and duration, at span close.
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            tracing::error!("invalid configuration: {e:#}");
            return ExitCode::from(2);
        }
    };
    let app = match Application::build(config).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("cannot start: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(
        address = %app.address(),
        public_url = %app.public_url(),
        "listening on http://{}",
        app.address()
    );
    match app.run_until_stopped().await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!("server failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}
