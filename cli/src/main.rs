//! `agentlang`: build, sign, publish and pull AgentLang agents and tools.

mod advisories;
mod args;
mod build;
mod catalogs;
mod client;
mod commands;
mod config;
mod container_file;
mod download;
mod env;
mod grants;
mod hosts;
mod index;
mod install;
mod keyfiles;
mod lock;
mod lockdiff;
mod output;
mod package_check;
mod package_dir;
mod progress;
mod quality;
mod release_age;
mod source;
mod spec;
mod statuses;
mod tlog;
mod trust;
// Second factor (TOTP).
mod two_factor;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        // The error line was printed where the write failed.
        Ok(_) if output::stdout_failed() => ExitCode::FAILURE,
        Ok(code) => code,
        Err(e) => {
            // One line, with the cause chain, never a backtrace.
            eprintln!("error: {}", client::one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
