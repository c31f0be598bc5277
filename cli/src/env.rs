//! The environment a command runs in, made once by `commands::run`. It
//! sits below the commands so that the modules they share (`install`,
//! `lock`, `build`, ...) take it too.

use anyhow::Result;

use crate::{
    client::Client, config::Settings, output::Output, release_age::MinReleaseAge, tlog::LogOptions,
};

/// What every command gets: where to talk to and how to print.
pub struct Env {
    pub ctx: Settings,
    pub out: Output,
    /// How the registry's transparency log is checked.
    pub log: LogOptions,
    /// `--min-release-age`, else the configured default.
    pub min_release_age: Option<MinReleaseAge>,
    /// Second factor: `--otp` (or `AGENTLANG_OTP`), for the acts that ask.
    pub otp: Option<String>,
}

impl Env {
    /// Unix seconds: versions published later are held back.
    pub fn release_cutoff(&self) -> Option<i64> {
        self.min_release_age.and_then(MinReleaseAge::cutoff)
    }

    /// A client without credentials, for public reads.
    pub fn anonymous(&self) -> Result<Client> {
        Client::new(&self.ctx.registry, None)
    }

    /// A client carrying the token; fails with a hint when there is none.
    pub fn authenticated(&self) -> Result<Client> {
        Client::new(&self.ctx.registry, Some(self.ctx.require_token()?))
    }
}
