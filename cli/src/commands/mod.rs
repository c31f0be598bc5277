//! One module per command; `run` dispatches.

mod account;
mod audit;
mod build;
mod check;
mod diff;
mod events;
mod grant;
mod inspect;
mod install;
mod keygen;
mod keys;
mod lock;
mod log;
mod new;
mod owner;
mod prompt;
mod provenance;
mod publish;
mod publishing;
mod pull;
mod quality;
mod run;
mod search;
mod settings;
mod status;
mod validate;
mod yank;
// Trusted publishing.
mod trust_publishers;
mod trusted_token;
// Staged releases.
mod stage;

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::{
    args::{Cli, Command, ConfigCommand, EventsCommand, LogCommand, PromptCommand},
    config::Settings,
    env::Env,
    output::Output,
    tlog::LogOptions,
};

pub fn run(cli: Cli) -> Result<ExitCode> {
    let out = Output::with_levels(cli.global.json, cli.global.quiet, cli.global.verbose);
    match cli.command {
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics when a write fails,
            // and `| head` closes the pipe early on purpose.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "agentlang", &mut script);
            crate::output::print_bytes(&script);
            return Ok(ExitCode::SUCCESS);
        }
        // Need no registry: work before any configuration exists.
        Command::Keygen {
            output,
            force,
            prompt: true,
        } => return keygen::prompt_identity(&out, output, force),
        Command::Keygen { output, force, .. } => return keygen::run(&out, output, force),
        Command::New { kind, name, path } => return new::run(&out, kind, &name, path),
        Command::Events(EventsCommand::Validate { file, agent }) => {
            return events::validate(&out, &file, agent.as_deref());
        }
        Command::Events(EventsCommand::Replay { file }) => return events::replay(&out, &file),
        Command::Events(EventsCommand::Schema) => return events::schema(),
        // Before the settings are read, so a broken config.toml can be found.
        Command::Config {
            command: Some(ConfigCommand::Path),
        } => return settings::path(),
        _ => {}
    }
    let log_key_given = cli.global.log_key.is_some();
    let ctx = Settings::load(cli.global.registry, cli.global.token)?;
    let min_release_age = match &cli.command {
        Command::Lock {
            min_release_age, ..
        }
        | Command::Install {
            min_release_age, ..
        } => min_release_age.or(ctx.min_release_age),
        _ => ctx.min_release_age,
    };
    let env = Env {
        ctx,
        out,
        min_release_age,
        log: LogOptions {
            key: cli.global.log_key,
            witnesses: cli.global.witnesses,
            required_witnesses: cli.global.require_witnesses,
        },
        otp: cli.global.otp,
    };
    match cli.command {
        Command::Register(c) => account::register(&env, &c),
        Command::Login(c) => account::login(&env, &c),
        Command::Whoami => account::whoami(&env),
        Command::Logout => account::logout(&env),
        // Second factor (TOTP).
        Command::TwoFa(command) => account::two_factor(&env, command),
        Command::Config { command: None } => settings::show(&env, log_key_given),
        Command::Keys(k) => keys::run(&env, k),
        Command::Validate { dir } => validate::run(&env, &dir),
        Command::Audit { dir, severity } => audit::run(&env, &dir, severity.level()),
        Command::Search { query, kind, page } => search::run(&env, &query, kind, page),
        Command::Yank {
            spec,
            kind,
            reason,
            undo,
        } => yank::run(&env, &spec, kind, reason.as_deref(), undo),
        Command::Status {
            spec,
            status,
            kind,
            reason,
            successor,
        } => status::run(
            &env,
            &spec,
            status,
            kind,
            reason.as_deref(),
            successor.as_deref(),
        ),
        Command::Inspect { file, prompt_key } => {
            inspect::inspect(&env, &file, prompt_key.as_deref())
        }
        Command::Verify { path, pubkey } if path.is_dir() => {
            if pubkey.is_some() {
                anyhow::bail!(
                    "--pubkey checks a container file; an install directory records its signers' keys"
                );
            }
            install::verify(&env, &path)
        }
        Command::Verify { path, pubkey } => inspect::verify(&env, &path, pubkey.as_deref()),
        Command::Install {
            spec,
            dir,
            frozen,
            accept_risk,
            host,
            prompt_key,
            ..
        } => install::run(
            &env,
            &spec,
            dir,
            frozen,
            accept_risk,
            host.as_deref(),
            prompt_key.as_deref(),
        ),
        Command::Grant(args) => grant::run(&env, args),
        Command::Owner(args) => owner::run(&env, &args),
        Command::Trust(args) => trust_publishers::run(&env, args.command),
        Command::TrustedToken { jwt_env, audience } => {
            trusted_token::run(&env, jwt_env.as_deref(), audience.as_deref())
        }
        Command::Publishing {
            name,
            kind,
            trusted_only,
            require_2fa,
            require_stage,
        } => publishing::run(
            &env,
            &name,
            kind,
            publishing::Change {
                trusted_only,
                require_2fa,
                require_stage,
            },
        ),
        Command::Check { path, host } => check::run(&env, &path, &host),
        Command::Run(args) => run::run(&env, &args),
        Command::Pull { spec, kind, output } => pull::run(&env, &spec, kind, output),
        Command::Lock {
            dir,
            update,
            accept_risk,
            ..
        } => lock::run(&env, &dir, update, accept_risk),
        Command::Diff {
            from,
            to,
            exit_code,
        } => diff::run(&env, &from, &to, exit_code),
        Command::Build(args) => build::run(&env, &args),
        Command::Quality { dir, review } => quality::run(&env, &dir, review),
        Command::Publish {
            path,
            build,
            stage,
            provenance,
        } => publish::run(&env, &path, &build, stage, provenance.as_deref()),
        Command::Provenance { spec, kind } => provenance::run(&env, &spec, kind),
        // Staged releases.
        Command::Stage(command) => stage::run(&env, command),
        Command::Log(LogCommand::Verify) => log::verify(&env),
        Command::Log(LogCommand::Show { name }) => log::show(&env, name.as_deref()),
        Command::Log(LogCommand::Forget { registry }) => log::forget(&env, registry.as_deref()),
        Command::Prompt(PromptCommand::Compile { file, format }) => {
            prompt::compile(&env, &file, format)
        }
        Command::Keygen { .. }
        | Command::New { .. }
        | Command::Completions { .. }
        | Command::Config {
            command: Some(ConfigCommand::Path),
        }
        | Command::Events(_) => {
            unreachable!("handled above")
        }
    }
}
