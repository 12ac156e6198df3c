//! The typed configuration: one struct per TOML section, with the built-in defaults (docs/configuration.md#keys).
//!
//! This module owns the *shape* of the file and its defaults. It does not read files or the
//! environment (`load`), check values against each other (`validate`) or build the core's
//! `Policy` (`policy`). Unknown keys are ignored by serde except inside `[admin]`, `[cluster]` and
//! `auth.api_keys[]` / `admin.keys[]` entries; `load` refuses the others (docs/configuration.md#unknown-keys).
//!
//! Types that hold key material have a hand-written `Debug` that never prints the key, and their
//! `Serialize` skips it.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

use sepp_core::PersistMode;
use serde::{Deserialize, Serialize};

/// The whole configuration after defaults, file and environment have been layered.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Config {
    pub server: ServerConfig,
    pub auth: AuthConfig,
    pub limits: LimitsConfig,
    pub storage: StorageConfig,
    pub logging: LoggingConfig,
    pub tracing: TracingConfig,
    pub metrics: MetricsConfig,
    pub admin: AdminConfig,
    pub cluster: ClusterConfig,
    pub queues: Vec<QueueConfig>,
}

/// `[server]`: the gRPC listener and the data directory.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct ServerConfig {
    #[serde(deserialize_with = "listen_addr")]
    pub listen_addr: SocketAddr,
    pub db_path: PathBuf,
    pub tls_cert_path: Option<PathBuf>,
    pub tls_key_path: Option<PathBuf>,
    pub strict_queues: bool,
    /// The most connections the queue listener holds open; more are closed at once.
    pub max_connections: u64,
    /// How long a new connection may take for its TLS handshake and HTTP/2 preface.
    pub handshake_timeout_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen_addr: v4(0, 0, 0, 0, 50051),
            db_path: PathBuf::from("./sepp-data"),
            tls_cert_path: None,
            tls_key_path: None,
            strict_queues: false,
            max_connections: 10_000,
            handshake_timeout_ms: 10_000,
        }
    }
}

/// `[auth]`: the API keys of the gRPC queue service.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct AuthConfig {
    /// Tri-state: `None` allows every caller, `Some(vec![])` rejects every call, otherwise a
    /// caller must present one of these keys.
    pub api_keys: Option<Vec<ApiKey>>,
}

/// One `auth.api_keys` entry. The name is a label for the UI and the audit log; only the key is
/// secret.
#[derive(Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    pub name: String,
    /// Never serialized: a serialized configuration (the admin API's view) carries names only.
    #[serde(skip_serializing)]
    pub key: String,
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey").field("name", &self.name).field("key", &Redacted).finish()
    }
}

/// How a nack's retry delay grows; mapped to `sepp_core::RetryBackoff`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RetryBackoff {
    #[default]
    None,
    Exponential,
}

impl From<RetryBackoff> for sepp_core::RetryBackoff {
    fn from(backoff: RetryBackoff) -> Self {
        match backoff {
            RetryBackoff::None => sepp_core::RetryBackoff::None,
            RetryBackoff::Exponential => sepp_core::RetryBackoff::Exponential,
        }
    }
}

/// `[limits]`: the global limits. Most of them are the defaults of every queue; the rest are
/// server-wide (docs/protocol.md#per-queue-limits says which).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct LimitsConfig {
    pub max_lease_duration_ms: u64,
    pub default_max_attempts: u32,
    pub max_attempts_ceiling: u32,
    pub default_priority: u8,
    pub retry_delay_ms: u64,
    pub retry_backoff: RetryBackoff,
    pub retry_delay_max_ms: u64,
    pub max_reserve_batch: u32,
    pub max_reserve_queues: u32,
    pub max_wait_timeout_ms: u64,
    pub max_enqueue_batch: u32,
    /// `None` is unlimited; `Some(0)` rejects every new job.
    pub max_queue_depth: Option<u64>,
    pub max_payload_bytes: u64,
    /// The gRPC decoder limit; restart-only.
    pub max_message_bytes: u64,
    pub max_custom_entries: u32,
    pub max_custom_total_bytes: u64,
    pub max_custom_key_bytes: u32,
    pub max_queue_name_bytes: u32,
    pub max_job_type_bytes: u32,
    pub max_idempotency_key_bytes: u32,
    pub max_schedule_horizon_ms: u64,
    /// `None` accepts any encoding; `Some(vec![])` rejects every payload.
    pub allowed_encodings: Option<Vec<String>>,
}

impl Default for LimitsConfig {
    /// The defaults of docs/configuration.md#limits, taken from the core's limits so they are written down once.
    fn default() -> Self {
        let queue = sepp_core::QueueLimits::default();
        let server = sepp_core::ServerLimits::default();
        LimitsConfig {
            max_lease_duration_ms: queue.max_lease_duration_ms,
            default_max_attempts: queue.default_max_attempts,
            max_attempts_ceiling: queue.max_attempts_ceiling,
            default_priority: queue.default_priority,
            retry_delay_ms: queue.retry_delay_ms,
            retry_backoff: RetryBackoff::None,
            retry_delay_max_ms: queue.retry_delay_max_ms,
            max_reserve_batch: server.max_reserve_batch,
            max_reserve_queues: server.max_reserve_queues,
            max_wait_timeout_ms: server.max_wait_timeout_ms,
            max_enqueue_batch: server.max_enqueue_batch,
            max_queue_depth: queue.max_queue_depth,
            max_payload_bytes: queue.max_payload_bytes,
            max_message_bytes: 16_777_216,
            max_custom_entries: queue.max_custom_entries,
            max_custom_total_bytes: queue.max_custom_total_bytes,
            max_custom_key_bytes: queue.max_custom_key_bytes,
            max_queue_name_bytes: server.max_queue_name_bytes,
            max_job_type_bytes: server.max_job_type_bytes,
            max_idempotency_key_bytes: server.max_idempotency_key_bytes,
            max_schedule_horizon_ms: queue.max_schedule_horizon_ms,
            allowed_encodings: queue.allowed_encodings,
        }
    }
}

/// `storage.persist_mode` as its name.
fn persist_mode_name<S: serde::Serializer>(mode: &PersistMode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(mode.name())
}

/// `storage.persist_mode` by its name.
fn persist_mode<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<PersistMode, D::Error> {
    let name = String::deserialize(deserializer)?;
    PersistMode::parse(&name).ok_or_else(|| {
        let names: Vec<&'static str> = PersistMode::ALL.iter().map(|(name, _)| *name).collect();
        serde::de::Error::unknown_variant(&name, Box::leak(names.into_boxed_slice()))
    })
}

/// `[storage]`: all restart-only.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct StorageConfig {
    #[serde(deserialize_with = "persist_mode", serialize_with = "persist_mode_name")]
    pub persist_mode: PersistMode,
    pub sweep_interval_ms: u64,
    pub sweep_limit: u64,
    pub dedup_window_ms: u64,
    /// 0 disables the dead-letter queue.
    pub dead_letter_retention_ms: u64,
    pub command_queue_capacity: usize,
    /// Engine tuning keys of 0.1: accepted and validated so existing files load, not used by
    /// this storage engine (docs/configuration.md#storage).
    pub cache_size_bytes: Option<u64>,
    pub max_journaling_size_bytes: Option<u64>,
    pub max_cached_files: Option<u64>,
    pub worker_threads: Option<u64>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            persist_mode: PersistMode::SyncAll,
            sweep_interval_ms: 1_000,
            sweep_limit: 10_000,
            dedup_window_ms: sepp_core::QueueLimits::default().dedup_window_ms,
            dead_letter_retention_ms: 0,
            command_queue_capacity: 4_096,
            cache_size_bytes: None,
            max_journaling_size_bytes: None,
            max_cached_files: None,
            worker_threads: None,
        }
    }
}

/// The log line format.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[logging]`: restart-only. `RUST_LOG`, when set, replaces `level` (the server applies it).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct LoggingConfig {
    /// An `EnvFilter` directive.
    pub level: String,
    pub format: LogFormat,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig { level: "info".to_owned(), format: LogFormat::Text }
    }
}

/// `[tracing]`: OTLP trace export; restart-only.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct TracingConfig {
    pub enabled: bool,
    pub otlp_endpoint: String,
    pub service_name: String,
    pub sample_ratio: f64,
}

impl Default for TracingConfig {
    fn default() -> Self {
        TracingConfig {
            enabled: false,
            otlp_endpoint: "http://localhost:4317".to_owned(),
            service_name: "sepp".to_owned(),
            sample_ratio: 1.0,
        }
    }
}

/// `[metrics]`: OTLP metric push and the Prometheus scrape endpoint; restart-only.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct MetricsConfig {
    pub enabled: bool,
    pub otlp_endpoint: String,
    pub export_interval_ms: u64,
    pub prometheus_enabled: bool,
    #[serde(deserialize_with = "listen_addr")]
    pub prometheus_listen_addr: SocketAddr,
    /// The most connections the Prometheus endpoint holds open; more are closed at once.
    pub prometheus_max_connections: u64,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            enabled: false,
            otlp_endpoint: "http://localhost:4317".to_owned(),
            export_interval_ms: 5_000,
            prometheus_enabled: false,
            prometheus_listen_addr: v4(0, 0, 0, 0, 9464),
            prometheus_max_connections: 64,
        }
    }
}

/// `[admin]`: the admin UI and JSON API. Unknown keys here are an error.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    pub enabled: bool,
    #[serde(deserialize_with = "listen_addr")]
    pub listen_addr: SocketAddr,
    pub tls_cert_path: Option<PathBuf>,
    pub tls_key_path: Option<PathBuf>,
    /// `None` turns admin authentication off (only allowed on a loopback bind).
    pub keys: Option<Vec<AdminKey>>,
    pub session_ttl_ms: u64,
    pub stats_history_ms: u64,
    /// The memory the stats history may take; the least busy queues are folded into one series.
    pub stats_history_bytes: u64,
    /// Names (`host` or `host:port`) besides the listener's own address, `localhost` and the
    /// loopback literals that requests may give as `Host` and `Origin`.
    pub allowed_hosts: Vec<String>,
    /// The most connections the admin listener holds open; more are closed at once.
    pub max_connections: u64,
    /// How long a new connection may take for its TLS handshake, and a request for its headers.
    pub handshake_timeout_ms: u64,
    /// How long a connection may stay without a byte either way before it is closed.
    pub idle_timeout_ms: u64,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            enabled: true,
            listen_addr: v4(127, 0, 0, 1, 9465),
            tls_cert_path: None,
            tls_key_path: None,
            keys: None,
            session_ttl_ms: 43_200_000,
            stats_history_ms: 3_600_000,
            stats_history_bytes: 16 << 20,
            allowed_hosts: Vec::new(),
            max_connections: 1_000,
            handshake_timeout_ms: 10_000,
            idle_timeout_ms: 120_000,
        }
    }
}

/// `[cluster]`: replication on Raft (docs/cluster.md); restart-only. Without `node_id` the
/// server is a single node and nothing else here is used.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// This node's id in the cluster, 1 or more; `None` runs a single node.
    pub node_id: Option<u64>,
    /// Where this node serves the other nodes (Raft and the `sepp cluster` commands).
    #[serde(deserialize_with = "listen_addr")]
    pub listen_addr: SocketAddr,
    /// The address the other nodes reach `listen_addr` at; defaults to `listen_addr`.
    pub advertise_addr: Option<String>,
    /// The address clients reach this node's queue service at, which a follower names to a
    /// client that must go to the leader; defaults to `server.listen_addr`.
    pub api_addr: Option<String>,
    /// The other nodes `sepp cluster init` starts the cluster with.
    pub peers: Vec<ClusterPeer>,
    /// How often the leader tells the others it is alive.
    pub heartbeat_interval_ms: u64,
    /// How long a follower goes without hearing from a leader before it stands for election
    /// (each node at its own point between three quarters of this and all of it).
    pub election_timeout_ms: u64,
    /// A node snapshots its state after this many entries, and drops the log before the snapshot.
    pub snapshot_after_entries: u64,
    /// The most connections the cluster listener holds open; more are closed at once.
    pub max_connections: u64,
    /// Whether a follower forwards the queue calls it cannot serve to the leader (and streams
    /// the answer back) instead of refusing them; calls that carry `sepp-follow-leader` are
    /// refused either way.
    pub forward_calls: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            node_id: None,
            listen_addr: v4(0, 0, 0, 0, 50052),
            advertise_addr: None,
            api_addr: None,
            peers: Vec::new(),
            heartbeat_interval_ms: 100,
            election_timeout_ms: 800,
            snapshot_after_entries: 20_000,
            max_connections: 1_000,
            forward_calls: true,
        }
    }
}

impl ClusterConfig {
    /// The Raft address the other nodes are told to use for this one.
    pub fn advertised(&self) -> String {
        self.advertise_addr.clone().unwrap_or_else(|| self.listen_addr.to_string())
    }

    /// The queue address clients are told to use for this node.
    pub fn advertised_api(&self, server: &ServerConfig) -> String {
        self.api_addr.clone().unwrap_or_else(|| server.listen_addr.to_string())
    }
}

/// One `cluster.peers` entry: another node of the initial cluster.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterPeer {
    pub id: u64,
    /// Its `cluster.advertise_addr`.
    pub raft_addr: String,
    /// Its `cluster.api_addr`.
    pub api_addr: String,
}

/// What an admin key may do, from least to most.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum AdminRole {
    Viewer,
    Operator,
    #[default]
    Admin,
}

/// One `admin.keys` entry.
#[derive(Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AdminKey {
    pub name: String,
    /// Never serialized, like [`ApiKey::key`].
    #[serde(skip_serializing)]
    pub key: String,
    #[serde(default)]
    pub role: AdminRole,
}

impl fmt::Debug for AdminKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminKey").field("name", &self.name).field("key", &Redacted).field("role", &self.role).finish()
    }
}

/// One `[[queues]]` entry: a declared queue and its overrides of the global limits.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct QueueConfig {
    pub name: String,
    #[serde(default)]
    pub max_lease_duration_ms: Option<u64>,
    #[serde(default)]
    pub default_max_attempts: Option<u32>,
    #[serde(default)]
    pub max_attempts_ceiling: Option<u32>,
    #[serde(default)]
    pub default_priority: Option<u8>,
    #[serde(default)]
    pub retry_delay_ms: Option<u64>,
    #[serde(default)]
    pub retry_backoff: Option<RetryBackoff>,
    #[serde(default)]
    pub retry_delay_max_ms: Option<u64>,
    #[serde(default)]
    pub max_payload_bytes: Option<u64>,
    /// Replaces the global list when set.
    #[serde(default)]
    pub allowed_encodings: Option<Vec<String>>,
    /// Per-queue only; `None` accepts any job type.
    #[serde(default)]
    pub allowed_job_types: Option<Vec<String>>,
    #[serde(default)]
    pub max_schedule_horizon_ms: Option<u64>,
    #[serde(default)]
    pub max_custom_entries: Option<u32>,
    #[serde(default)]
    pub max_custom_total_bytes: Option<u64>,
    #[serde(default)]
    pub max_custom_key_bytes: Option<u32>,
    /// Restart-only, and pinned from the boot configuration.
    #[serde(default)]
    pub dedup_window_ms: Option<u64>,
    /// Replaces the global cap when set; a queue cannot remove a global cap.
    #[serde(default)]
    pub max_queue_depth: Option<u64>,
    /// Per-queue only: at most this many of the queue's jobs in flight at once.
    #[serde(default)]
    pub max_in_flight: Option<u32>,
    /// Per-queue only: at most this many leases per `rate_period_ms`.
    #[serde(default)]
    pub rate_limit: Option<u32>,
    /// The period of `rate_limit` (default 1000).
    #[serde(default)]
    pub rate_period_ms: Option<u64>,
    /// How many leases may go at once after a quiet spell (default `rate_limit`).
    #[serde(default)]
    pub rate_burst: Option<u32>,
    /// Per-queue only: the custom metadata key whose values the `key_*` limits hold apart.
    #[serde(default)]
    pub limit_key: Option<String>,
    /// At most this many jobs in flight per value of `limit_key`.
    #[serde(default)]
    pub key_max_in_flight: Option<u32>,
    /// At most this many leases per `key_rate_period_ms` per value of `limit_key`.
    #[serde(default)]
    pub key_rate_limit: Option<u32>,
    /// The period of the per-key rate limits (default 1000).
    #[serde(default)]
    pub key_rate_period_ms: Option<u64>,
    /// The per-key burst (default the key's rate limit).
    #[serde(default)]
    pub key_rate_burst: Option<u32>,
    /// Per-value overrides of the per-key limits, by value of `limit_key`.
    #[serde(default)]
    pub key_overrides: Option<BTreeMap<String, KeyOverride>>,
}

/// The limits of one value of a queue's `limit_key`, over the queue's `key_*` defaults.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct KeyOverride {
    #[serde(default)]
    pub max_in_flight: Option<u32>,
    #[serde(default)]
    pub rate_limit: Option<u32>,
    #[serde(default)]
    pub rate_burst: Option<u32>,
}

/// Stands in for key material in `Debug` output.
struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A listen address: an IP address and port (`127.0.0.1:50051`, `[::1]:50051`), or a host name
/// and port (`localhost:50051`) resolved once, when the configuration loads, to its first IPv4
/// address (else its first address).
fn listen_addr<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<SocketAddr, D::Error> {
    use serde::de::Error;
    let text = String::deserialize(deserializer)?;
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let Some((host, port)) = text.rsplit_once(':').filter(|(host, _)| !host.is_empty()) else {
        return Err(D::Error::custom(format!(
            "`{text}` is not an address and port: give an IP address and port such as 127.0.0.1:50051, or a host name and port such as localhost:50051"
        )));
    };
    let Ok(port) = port.parse::<u16>() else {
        return Err(D::Error::custom(format!("`{text}` does not end in a port number (0 to 65535)")));
    };
    let resolved = std::net::ToSocketAddrs::to_socket_addrs(&(host, port));
    let addrs: Vec<SocketAddr> = match resolved {
        Ok(addrs) => addrs.collect(),
        Err(error) => {
            return Err(D::Error::custom(format!(
                "the host name `{host}` could not be resolved ({error}): give an IP address such as 127.0.0.1:{port}"
            )));
        }
    };
    addrs.iter().find(|addr| addr.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| {
        D::Error::custom(format!(
            "the host name `{host}` resolved to no address: give an IP address such as 127.0.0.1:{port}"
        ))
    })
}

fn v4(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_with_keys() -> Config {
        Config {
            auth: AuthConfig { api_keys: Some(vec![ApiKey { name: "worker".into(), key: "s3cret-api".into() }]) },
            admin: AdminConfig {
                keys: Some(vec![AdminKey {
                    name: "ops".into(),
                    key: "s3cret-admin".into(),
                    role: AdminRole::Operator,
                }]),
                ..AdminConfig::default()
            },
            ..Config::default()
        }
    }

    #[test]
    fn debug_of_api_and_admin_keys_never_prints_the_key() {
        let config = config_with_keys();
        let printed = format!("{config:?} {config:#?}");
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(printed.contains("worker") && printed.contains("ops"));
        assert!(printed.contains("<redacted>"));
    }

    #[test]
    fn a_serialized_config_names_keys_without_their_material() {
        let serialized = toml::to_string(&config_with_keys()).expect("serializes");
        assert!(!serialized.contains("s3cret"), "{serialized}");
        assert!(serialized.contains("worker") && serialized.contains("ops") && serialized.contains("operator"));
    }

    #[test]
    fn core_retry_backoff_mapping_keeps_the_meaning() {
        assert_eq!(sepp_core::RetryBackoff::from(RetryBackoff::None), sepp_core::RetryBackoff::None);
        assert_eq!(sepp_core::RetryBackoff::from(RetryBackoff::Exponential), sepp_core::RetryBackoff::Exponential);
    }
}
