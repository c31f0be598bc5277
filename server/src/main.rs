//! `agentlang-registry`: reads the configuration, serves until SIGTERM; or
//! runs an operator's command (`admin grant USER`) against the configured
//! database.

use std::{io::IsTerminal, process::ExitCode};

use agentlang_registry::{
    common::names::Username, config::Config, db::Db, service::accounts, startup::Application,
};
use clap::{Parser, Subcommand};
use tracing_subscriber::{EnvFilter, fmt::format::FmtSpan};

/// The AgentLang registry. Configured by `AGENTLANG_REGISTRY_*` variables
/// and an optional TOML file (`AGENTLANG_REGISTRY_CONFIG`); see the
/// server README.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the registry (the default).
    Serve,
    /// Make or unmake admins (who may edit the model catalog).
    Admin {
        #[command(subcommand)]
        action: AdminAction,
    },
}

#[derive(Debug, Subcommand)]
enum AdminAction {
    /// Make an existing account an admin.
    Grant { username: String },
    /// Take an account's admin rights away.
    Revoke { username: String },
}

#[actix_web::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
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
    if let Some(Command::Admin { action }) = cli.command {
        return admin(&config, action).await;
    }
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

/// `admin grant|revoke USER`: one change to the configured database.
async fn admin(config: &Config, action: AdminAction) -> ExitCode {
    let (name, grant) = match &action {
        AdminAction::Grant { username } => (username, true),
        AdminAction::Revoke { username } => (username, false),
    };
    let username = match Username::parse(name) {
        Ok(username) => username,
        Err(m) => {
            eprintln!("error: {name:?} is not a username: {m}");
            return ExitCode::from(2);
        }
    };
    let db = match Db::connect(
        &config.effective_database_url(),
        config.limits.database_timeout,
    )
    .await
    {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: cannot open the database: {e}");
            return ExitCode::FAILURE;
        }
    };
    match accounts::set_admin(&db, &username, grant).await {
        Ok(account) if grant => {
            println!("{} is now an admin", account.username);
            ExitCode::SUCCESS
        }
        Ok(account) => {
            println!("{} is no longer an admin", account.username);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
