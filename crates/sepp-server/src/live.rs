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
    /// Counts the config watcher's reload attempts (including failed and unchanged ones).
    reloads: tokio::sync::watch::Sender<u64>,
}

impl LiveConfig {
    pub fn new(boot: Config) -> LiveConfig {
        let live = Arc::new(Live::new(boot.clone(), &boot));
        LiveConfig { boot, current: RwLock::new(live), reloads: tokio::sync::watch::Sender::new(0) }
    }

    /// Counts one reload attempt of the config watcher, whatever its outcome.
    pub fn reloaded(&self) {
        self.reloads.send_modify(|count| *count += 1);
    }

    /// The reload counter, to wait for the watcher's next attempt.
    pub fn subscribe_reloads(&self) -> tokio::sync::watch::Receiver<u64> {
        self.reloads.subscribe()
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
