//! What every handler shares: the [`Registry`] whose rules it calls, and
//! the configuration it was started with.

use std::{ops::Deref, sync::Arc};

use app::Registry;

use crate::config::Config;

#[derive(Debug)]
pub struct AppState {
    pub registry: Arc<Registry>,
    pub config: Arc<Config>,
}

impl Deref for AppState {
    type Target = Registry;

    fn deref(&self) -> &Registry {
        &self.registry
    }
}
