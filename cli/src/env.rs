//! The environment a command runs in, made once by `commands::run`. It
//! sits below the commands so that the modules they share (`install`,
//! `lock`, `build`, ...) take it too.

use anyhow::Result;

use crate::{client::Client, config::Settings, output::Output, tlog::LogOptions};

/// What every command gets: where to talk to and how to print.
pub struct Env {
    pub ctx: Settings,
    pub out: Output,
    /// How the registry's transparency log is checked.
    pub log: LogOptions,
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
