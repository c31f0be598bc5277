//! `agentlang-registry`: reads the configuration, serves until SIGTERM; or
//! runs an operator's command against the configured storage (`migrate`,
//! `sweep`, `config check`, `admin grant USER`).

use std::{io::IsTerminal, process::ExitCode};

use agentlang_core::Username;
use agentlang_registry::{
    config::{self, Config},
    startup::Application,
};
use app::operations::Storage;
use clap::{Parser, Subcommand};
use tracing_subscriber::{EnvFilter, fmt::format::FmtSpan};

/// jemalloc, not glibc's malloc: the resolver is allocation-bound, and a
/// warm first-time resolve takes clearly less CPU under jemalloc
/// (`deploy/bench/RESULTS.md`, Decisions).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The AgentLang registry. Configured by `AGENTLANG_REGISTRY_*` variables
/// and an optional TOML file (`AGENTLANG_REGISTRY_CONFIG`); see the
/// server README.
#[derive(Debug, Parser)]
#[command(version, about, after_help = config::variables_help())]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the registry (the default).
    Serve,
    /// Apply the database migrations this version needs, then exit.
    Migrate,
    /// Delete unreferenced blobs older than the sweep grace period, then
    /// exit (the server also sweeps on its own timer).
    Sweep,
    /// Check the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Make or unmake admins (who may edit the model catalog).
    Admin {
        #[command(subcommand)]
        action: AdminAction,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Print the effective configuration, secrets redacted; exit non-zero
    /// when it is invalid.
    Check,
}

#[derive(Debug, Subcommand)]
enum AdminAction {
    /// Make an existing account an admin.
    Grant { username: String },
    /// Take an account's admin rights away.
    Revoke { username: String },
}

/// `AGENTLANG_REGISTRY_LOG` (`EnvFilter` syntax), or `info` when unset or
/// invalid. pubgrub logs every step of a resolution at `info`, hundreds of
/// lines for one agent, so it is held to `warn` unless the filter names it
/// (`deploy/bench/RESULTS.md`, Decisions).
fn log_filter(spec: Option<&str>) -> EnvFilter {
    let filter = spec
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    if quiets_pubgrub(spec) {
        filter.add_directive("pubgrub=warn".parse().expect("a valid directive"))
    } else {
        filter
    }
}

/// Whether the filter in force for `spec` holds pubgrub to `warn` (see
/// [`log_filter`]): asked of that filter, not of an invalid one it replaced.
fn quiets_pubgrub(spec: Option<&str>) -> bool {
    !spec.is_some_and(|spec| EnvFilter::try_new(spec).is_ok() && spec.contains("pubgrub"))
}

/// The bridge from the `log` crate (pubgrub, actix) into tracing, after
/// the subscriber is set (it takes the subscriber's maximum level). Where
/// the filter quiets pubgrub, its records are dropped here: it logs nothing
/// above `info`, and its hundreds of records per resolution otherwise cost
/// a dispatch and a filter match each, a measurable share of a warm
/// resolve's instructions (`deploy/bench/RESULTS.md`, Decisions).
fn log_bridge(spec: Option<&str>) -> tracing_log::log_tracer::Builder {
    use tracing_log::AsLog as _;
    let bridge = tracing_log::LogTracer::builder()
        .with_max_level(tracing::level_filters::LevelFilter::current().as_log());
    if quiets_pubgrub(spec) {
        bridge.ignore_crate("pubgrub")
    } else {
        bridge
    }
}

/// An error and its causes, each said once: some (sqlx's I/O error) repeat
/// their source in their own message, which `{:#}` would print twice.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[actix_web::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let spec = std::env::var("AGENTLANG_REGISTRY_LOG").ok();
    let format = std::env::var("AGENTLANG_REGISTRY_LOG_FORMAT").ok();
    let json = match format.as_deref() {
        None | Some("" | "text") => false,
        Some("json") => true,
        Some(other) => {
            eprintln!(
                "invalid configuration: AGENTLANG_REGISTRY_LOG_FORMAT={other:?} is not text or json"
            );
            return ExitCode::from(2);
        }
    };
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(log_filter(spec.as_deref()))
        // One line per request, with its status and duration, at span close.
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr);
    if json {
        // One JSON object per line, the request's fields at the top level
        // beside the event's, for a log shipper to index.
        let subscriber = subscriber
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the first subscriber");
    } else {
        let subscriber = subscriber
            .with_ansi(std::io::stderr().is_terminal())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the first subscriber");
    }
    log_bridge(spec.as_deref())
        .init()
        .expect("the first `log` logger");

    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            tracing::error!("invalid configuration: {e:#}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Some(Command::Admin { action }) => return admin(&config, action).await,
        Some(Command::Migrate) => return migrate(&config).await,
        Some(Command::Sweep) => return sweep_now(&config).await,
        Some(Command::Config {
            action: ConfigAction::Check,
        }) => {
            for line in config.effective_lines() {
                println!("{line}");
            }
            return ExitCode::SUCCESS;
        }
        Some(Command::Serve) | None => {}
    }
    let app = match Application::build(config).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("cannot start: {}", causes(e.as_ref()));
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

/// Opens (and so migrates) the configured database.
async fn open_storage(config: &Config) -> Result<Storage, ExitCode> {
    Storage::open(
        &config.effective_database_url(),
        config.limits.database_timeout,
    )
    .await
    .map_err(|e| {
        eprintln!("error: cannot open the database: {e}");
        ExitCode::FAILURE
    })
}

/// `migrate`: opening the database applies what is pending.
async fn migrate(config: &Config) -> ExitCode {
    match open_storage(config).await {
        Ok(_) => {
            println!(
                "the database at {} is migrated",
                config.value_of("DATABASE_URL").unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

/// `sweep`: one sweep of unreferenced blobs with the configured grace.
async fn sweep_now(config: &Config) -> ExitCode {
    let storage = match open_storage(config).await {
        Ok(storage) => storage,
        Err(code) => return code,
    };
    match storage
        .sweep(
            &config.effective_storage_url(),
            &config.s3,
            config.limits.storage_timeout,
            config.sweep_grace,
        )
        .await
    {
        Ok(report) => {
            println!(
                "deleted {} unreferenced blob(s); kept {} referenced and {} younger than {} s",
                report.deleted.len(),
                report.referenced,
                report.young,
                config.sweep_grace.as_secs()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: the sweep failed: {e:#}");
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
    let storage = match open_storage(config).await {
        Ok(storage) => storage,
        Err(code) => return code,
    };
    match storage.set_admin(&username, grant).await {
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

#[cfg(test)]
mod tests {
    use tracing::{Level, subscriber::with_default};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::{log_filter, quiets_pubgrub};

    /// What `check` finds enabled under the filter `spec`.
    fn under(spec: Option<&str>, check: impl FnOnce() -> bool) -> bool {
        with_default(tracing_subscriber::registry().with(log_filter(spec)), check)
    }

    #[test]
    fn the_solver_logs_only_warnings_unless_the_filter_names_it() {
        let registry_info = || tracing::enabled!(target: "agentlang_registry", Level::INFO);
        let solver_info = || tracing::enabled!(target: "pubgrub::solver", Level::INFO);
        let solver_warn = || tracing::enabled!(target: "pubgrub::solver", Level::WARN);
        for spec in [None, Some("info"), Some("debug")] {
            assert!(under(spec, registry_info), "{spec:?}");
            assert!(!under(spec, solver_info), "{spec:?}");
            assert!(under(spec, solver_warn), "{spec:?}");
        }
        assert!(under(Some("info,pubgrub=info"), solver_info));
        // An invalid filter gives way to `info`, pubgrub held to warn.
        assert!(!under(Some("pubgrub=loud"), solver_info));
        assert!(under(Some("pubgrub=loud"), registry_info));
    }

    #[test]
    fn the_log_bridge_drops_the_solver_exactly_when_the_filter_quiets_it() {
        for spec in [None, Some("info"), Some("debug"), Some("pubgrub=loud")] {
            assert!(quiets_pubgrub(spec), "{spec:?}");
        }
        assert!(!quiets_pubgrub(Some("info,pubgrub=info")));
    }
}
