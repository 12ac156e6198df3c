//! The running configuration: what hot reload swaps and every request reads.
//!
//! Requests take an `Arc` snapshot once and use it for the whole call, so a reload in the
//! middle of a call never mixes two configurations.

use std::sync::{Arc, RwLock};

use sepp_config::Config;
use sepp_core::Policy;

/// One consistent view of the hot-reloadable configuration.
pub struct Live {
    pub config: Config,
    pub policy: Arc<Policy>,
}

impl Live {
    /// Builds the live view of `config`; dedup windows stay pinned to `boot`.
    pub fn new(config: Config, boot: &Config) -> Live {
        let policy = Arc::new(config.policy(boot));
        Live { config, policy }
    }
}

/// The boot configuration (for restart-only values) and the current live view.
pub struct LiveConfig {
    pub boot: Config,
    current: RwLock<Arc<Live>>,
}

impl LiveConfig {
    pub fn new(boot: Config) -> LiveConfig {
        let live = Arc::new(Live::new(boot.clone(), &boot));
        LiveConfig { boot, current: RwLock::new(live) }
    }

    pub fn get(&self) -> Arc<Live> {
        self.current.read().expect("live config lock").clone()
    }

    pub fn replace(&self, live: Live) -> Arc<Live> {
        let live = Arc::new(live);
        *self.current.write().expect("live config lock") = live.clone();
        live
    }
}
