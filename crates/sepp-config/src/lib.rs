//! Loads, validates and watches the sepp server configuration (docs/configuration.md).
//!
//! The server calls [`discover`] to find the file, [`load`] to turn defaults + file +
//! `SEPP_SECTION__FIELD` environment overrides into a validated [`Config`], [`Config::policy`] to
//! hand the core its limits, and [`watch`] to hear about edits for hot reload, comparing old and
//! new with [`Config::restart_only_changes`]. This crate does no logging setup, serves nothing and
//! never applies a configuration itself.
//!
//! # Layout
//!
//! - `schema`: the typed sections and their defaults (docs/configuration.md#keys).
//! - `keys`: every known key, and the report of unknown ones with a "did you mean".
//! - `load`: discovery, the layering pipeline, and [`ConfigError`].
//! - `env`: the environment-variable convention and value parsing.
//! - `validate`: every rule of docs/configuration.md#keys, including the per-queue merged limits.
//! - `policy`: the merge into `sepp_core::Policy`, boot-pinned dedup windows, restart-only fields.
//! - `hosts`: the syntax of `admin.allowed_hosts` entries and `Host` headers.
//! - `example`: the commented example file (`sepp config example`).
//! - `watch`: the file watcher that triggers hot reloads.

// No unsafe code here; a panic in the library is a bug with a message (`expect` says what was
// assumed).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod env;
mod example;
mod hosts;
mod keys;
mod load;
mod policy;
mod schema;
mod validate;
mod watch;

pub use env::env_key;
pub use example::example;
pub use hosts::HostPort;
pub use keys::{UnknownKey, known_keys, queue_override_fields};
pub use load::{
    CheckReport, ConfigError, ConfigSource, Loaded, check_with_env, discover, load, load_str, load_str_as,
    load_with_env, process_env,
};
pub use policy::RESTART_ONLY;
pub use schema::{
    AdminConfig, AdminKey, AdminRole, ApiKey, AuthConfig, ClusterConfig, ClusterPeer, Config, KeyOverride,
    LimitsConfig, LogFormat, LoggingConfig, MetricsConfig, QueueConfig, RetryBackoff, ServerConfig, StorageConfig,
    TracingConfig,
};
pub use sepp_core::PersistMode;
pub use watch::{ConfigWatcher, watch};
