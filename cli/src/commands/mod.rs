//! One module per command; `run` dispatches.

mod account;
mod keys;
mod search;
mod validate;
mod yank;

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::{
    args::{Cli, Command, KindArg},
    client::Client,
    config::Settings,
    output::Output,
};

/// What every command gets: where to talk to and how to print.
pub struct Env {
    pub ctx: Settings,
    pub out: Output,
}

impl Env {
    /// A client without credentials, for public reads.
    pub fn anonymous(&self) -> Result<Client> {
        Client::new(&self.ctx.registry, None)
    }

    /// A client carrying the token; fails with a hint when there is none.
    pub fn authenticated(&self) -> Result<Client> {
        Client::new(&self.ctx.registry, Some(self.ctx.require_token()?))
    }
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    let out = Output::new(cli.global.json);
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "agentlang", &mut std::io::stdout());
        return Ok(ExitCode::SUCCESS);
    }
    let env = Env {
        ctx: Settings::load(cli.global.registry, cli.global.token)?,
        out,
    };
    match cli.command {
        Command::Register(c) => account::register(&env, &c),
        Command::Login(c) => account::login(&env, &c),
        Command::Keys(k) => keys::run(&env, k),
        Command::Validate { dir } => validate::run(&env, &dir),
        Command::Search { query, kind, page } => search::run(&env, &query, kind, page),
        Command::Yank {
            spec,
            kind,
            reason,
            undo,
        } => yank::run(&env, &spec, kind, reason.as_deref(), undo),
        Command::Keygen { .. } | Command::Completions { .. } => unreachable!("handled above"),
    }
}

impl KindArg {
    pub fn plural(self) -> &'static str {
        match self {
            KindArg::Agent => "agents",
            KindArg::Tool => "tools",
        }
    }
}
