//! Loads, validates and watches the sepp server configuration (SPEC section 4).
//!
//! The server calls [`discover`] to find the file, [`load`] to turn defaults + file +
//! `SEPP_SECTION__FIELD` environment overrides into a validated [`Config`], [`Config::policy`] to
//! hand the core its limits, and [`watch`] to hear about edits for hot reload, comparing old and
//! new with [`Config::restart_only_changes`]. This crate does no logging setup, serves nothing and
//! never applies a configuration itself.
//!
//! # Layout
//!
//! - `schema`: the typed sections and their defaults (SPEC 4.2).
//! - `load`: discovery, the layering pipeline and [`ConfigError`].
//! - `env`: the environment-variable convention and value parsing.
//! - `validate`: every rule of SPEC 4.2, including the per-queue merged limits.
//! - `policy`: the merge into `sepp_core::Policy`, boot-pinned dedup windows, restart-only fields.
//! - `example`: the commented example file (`sepp config example`).
//! - `watch`: the file watcher that triggers hot reloads.

mod env;
mod example;
mod load;
mod policy;
mod schema;
mod validate;
mod watch;

pub use env::env_key;
pub use example::example;
pub use load::{ConfigError, ConfigSource, discover, load, load_str, load_str_as, load_with_env};
pub use policy::RESTART_ONLY;
pub use schema::{
    AdminConfig, AdminKey, AdminRole, ApiKey, AuthConfig, Config, LimitsConfig, LogFormat, LoggingConfig,
    MetricsConfig, PersistMode, QueueConfig, RetryBackoff, ServerConfig, StorageConfig, TracingConfig,
};
pub use watch::{ConfigWatcher, watch};
