//! The commented example configuration printed by `sepp config example`.
//!
//! This module owns that text. Every active value in it is the built-in default, and every key
//! appears (keys with no default are shown commented out), so the output is both documentation
//! and a valid file that changes nothing. The tests below hold it to that.

const EXAMPLE: &str = r#"# sepp configuration.
#
# Every value below is the built-in default, so this file changes nothing until you edit it.
# Keys without a default are shown commented out. Keys marked "restart" only take effect when
# the server restarts; the others are applied live when this file is saved.
#
# Any key can also be set from the environment as SEPP_<SECTION>__<KEY>, which wins over this
# file, e.g. SEPP_SERVER__LISTEN_ADDR=0.0.0.0:6000 or SEPP_AUTH__API_KEYS='[{name="w",key="k"}]'.

[server]
# Where the gRPC queue service listens (restart).
listen_addr = "0.0.0.0:50051"
# The data directory (restart).
db_path = "./sepp-data"
# PEM certificate and private key for gRPC TLS: set both or neither (restart).
# tls_cert_path = "/etc/sepp/tls/cert.pem"
# tls_key_path = "/etc/sepp/tls/key.pem"
# When true, only the queues declared under [[queues]] below can be used.
strict_queues = false
# The most connections the queue service holds open (more are closed at once; all listeners
# together also stay within the process's descriptor limit minus a reserve for storage), and
# how long a new connection may take for its TLS handshake and HTTP/2 preface (restart).
max_connections = 10000
handshake_timeout_ms = 10000

[auth]
# API keys for the queue service. Leave unset to allow every caller; an empty list `[]` rejects
# every call. Keys are visible ASCII without spaces; names are labels for the UI and audit log.
# api_keys = [
#   { name = "billing-worker", key = "replace-with-a-long-random-key" },
# ]

[limits]
# The longest lease a worker may ask for.
max_lease_duration_ms = 300000
# Attempts a job gets when its producer does not say, and the most it may ask for.
default_max_attempts = 3
max_attempts_ceiling = 100
# Priority of a job whose producer does not say: 0 (lowest) to 9 (highest).
default_priority = 0
# Delay before a nacked job is retried, "none" (fixed) or "exponential" growth, and its cap.
retry_delay_ms = 0
retry_backoff = "none"
retry_delay_max_ms = 3600000
# The most jobs one Reserve call may take, the most queues it may name, and its longest wait.
max_reserve_batch = 256
max_reserve_queues = 32
max_wait_timeout_ms = 300000
# The most jobs one enqueue call may carry.
max_enqueue_batch = 256
# The most jobs a queue may hold; unset means no limit, 0 rejects every new job.
# max_queue_depth = 100000
# The largest job payload, and the largest gRPC message (restart).
max_payload_bytes = 1048576
max_message_bytes = 16777216
# Custom metadata on a job: number of entries, their total size, and the longest key.
max_custom_entries = 64
max_custom_total_bytes = 16384
max_custom_key_bytes = 256
# The longest queue name, job type and idempotency key, in bytes.
max_queue_name_bytes = 512
max_job_type_bytes = 256
max_idempotency_key_bytes = 256
# How far ahead a job may be scheduled (30 days); also caps nack delays.
max_schedule_horizon_ms = 2592000000
# Payload encodings accepted; unset accepts any, an empty list `[]` rejects every payload.
# allowed_encodings = ["application/json", "application/protobuf"]

[storage]
# Everything in this section needs a restart.
# "sync_all" makes every acknowledged write durable; "sync_data" skips metadata syncs;
# "buffer" leaves flushing to the operating system and can lose recent writes on a crash.
persist_mode = "sync_all"
# The longest the committer waits between sweeps, and how much one sweep phase handles.
sweep_interval_ms = 1000
sweep_limit = 10000
# How long an idempotency key is remembered (one day).
dedup_window_ms = 86400000
# How long dead-lettered jobs are kept; 0 deletes them instead (no dead-letter queue).
dead_letter_retention_ms = 0
# Commands that may wait for the committer before callers are made to wait.
command_queue_capacity = 4096
# Tuning keys of the 0.1 storage engine: accepted and checked, not used by this engine.
# cache_size_bytes = 67108864
# max_journaling_size_bytes = 536870912
# max_cached_files = 256
# worker_threads = 4

[logging]
# An EnvFilter directive; RUST_LOG, when set, replaces it (restart).
level = "info"
# "text" or "json" (restart).
format = "text"

[tracing]
# OTLP trace export over gRPC (restart).
enabled = false
otlp_endpoint = "http://localhost:4317"
service_name = "sepp"
# Share of traces kept, from 0 to 1.
sample_ratio = 1.0

[metrics]
# OTLP metric push (restart).
enabled = false
otlp_endpoint = "http://localhost:4317"
export_interval_ms = 5000
# The Prometheus scrape endpoint, GET /metrics (restart).
prometheus_enabled = false
prometheus_listen_addr = "0.0.0.0:9464"
# The most connections the Prometheus endpoint holds open (restart).
prometheus_max_connections = 64

[admin]
# The admin UI and its JSON API (restart).
enabled = true
# Without keys the admin listener must stay on a loopback address (restart).
listen_addr = "127.0.0.1:9465"
# PEM certificate and private key for the admin listener: both or neither (restart).
# tls_cert_path = "/etc/sepp/tls/cert.pem"
# tls_key_path = "/etc/sepp/tls/key.pem"
# Login keys; role is "viewer", "operator" or "admin" (the default). Unset turns login off.
# keys = [
#   { name = "ops", key = "replace-with-a-long-random-key", role = "operator" },
# ]
# How long a login lasts (12 hours), and how much live history the dashboard keeps (1 hour).
session_ttl_ms = 43200000
stats_history_ms = 3600000
# The memory that history may take (16 MiB): past it, the least busy queues share one series.
stats_history_bytes = 16777216
# The names a browser may reach this listener by, besides its own address, localhost and the
# loopback addresses (a Host or Origin not among them is refused: DNS rebinding). A name
# without a port allows any port. List yours when binding 0.0.0.0 or behind a proxy.
allowed_hosts = []
# The most connections the admin listener holds open, how long a new connection may take for
# its TLS handshake and a request for its headers, and how long a connection may stay silent
# both ways before it is closed (restart).
max_connections = 1000
handshake_timeout_ms = 10000
idle_timeout_ms = 120000

[cluster]
# Replication on Raft (docs/cluster.md): this node's id, from 1; unset runs a single node
# and nothing else here is used (restart, like every key of this section).
# node_id = 1
# Where this node serves the other nodes: Raft and the `sepp cluster` commands.
listen_addr = "0.0.0.0:50052"
# The addresses the other nodes and the clients are told to use for this node (default: the
# listen addresses, which then must not be wildcards).
# advertise_addr = "10.0.0.1:50052"
# api_addr = "10.0.0.1:50051"
# The other nodes `sepp cluster init` starts the cluster with.
# peers = [
#   { id = 2, raft_addr = "10.0.0.2:50052", api_addr = "10.0.0.2:50051" },
# ]
# Leader heartbeats, and how long a follower goes without one before it stands for election
# (each node at its own point between three quarters of this and all of it).
heartbeat_interval_ms = 100
election_timeout_ms = 800
# Entries after which a node snapshots its state and drops the log before it.
snapshot_after_entries = 20000
# The most connections the cluster listener holds open (restart).
max_connections = 1000
# A follower forwards the queue calls it cannot serve to the leader, so any client works
# against any node; off, it refuses them naming the leader (sepp-leader).
forward_calls = true

# Declared queues. Each may override the limits above for itself; the rest come from [limits].
# [[queues]]
# name = "emails"
# max_lease_duration_ms = 60000
# default_max_attempts = 5
# max_attempts_ceiling = 10
# default_priority = 5
# retry_delay_ms = 1000
# retry_backoff = "exponential"
# retry_delay_max_ms = 600000
# max_payload_bytes = 65536
# allowed_encodings = ["application/json"]
# allowed_job_types = ["send_welcome", "send_receipt"]
# max_schedule_horizon_ms = 604800000
# max_custom_entries = 16
# max_custom_total_bytes = 4096
# max_custom_key_bytes = 64
# dedup_window_ms = 3600000   # restart; pinned when the server starts
# max_queue_depth = 10000
# max_in_flight = 8         # at most 8 of its jobs in flight at once, across all workers
# rate_limit = 100          # at most 100 leases per rate_period_ms, across all workers
# rate_period_ms = 1000
# rate_burst = 100          # how many may go at once after a quiet spell (default rate_limit)
# limit_key = "tenant"      # the key_* limits hold each value of this custom field apart
# key_max_in_flight = 2     # at most 2 jobs in flight per tenant
# key_rate_limit = 10       # at most 10 leases per key_rate_period_ms per tenant
# key_rate_period_ms = 1000
# key_rate_burst = 10       # per tenant (default key_rate_limit)
# key_overrides = { acme = { max_in_flight = 8, rate_limit = 50 } }   # per-value exceptions
"#;

/// A commented configuration file in which every value is the built-in default.
pub fn example() -> &'static str {
    EXAMPLE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_str;

    /// The lines of `section` in the example, commented-out ones included.
    fn section_lines(section: &str) -> Vec<&'static str> {
        let header = format!("[{section}]");
        let mut lines = EXAMPLE.lines().skip_while(|line| line.trim_start_matches("# ") != header);
        assert!(lines.next().is_some(), "the example has no {header} section");
        lines.take_while(|line| !line.trim_start_matches("# ").starts_with('[')).collect()
    }

    #[test]
    fn example_loads_to_exactly_the_defaults() {
        let example = load_str(example(), &[]).expect("the example is a valid config");
        let defaults = load_str("", &[]).expect("an empty file is a valid config");
        assert_eq!(example, defaults);
    }

    #[test]
    fn example_mentions_every_section_and_key_in_its_section() {
        // Keys of key entries (`auth.api_keys[].key`) show inside their list's example value.
        for known in crate::known_keys() {
            let (section, key) = known.rsplit_once('.').expect("a dotted key");
            let section = section.replace("queues[]", "[queues]");
            if section.contains("[]") {
                continue;
            }
            let lines = section_lines(&section);
            let found = lines.iter().any(|line| {
                let line = line.trim_start_matches("# ").trim_start();
                line.starts_with(&format!("{key} ="))
            });
            assert!(found, "the example's [{section}] does not show {key}");
        }
    }

    #[test]
    fn example_with_every_key_uncommented_is_a_valid_config() {
        // The commented-out lines are meant to be enabled as they stand.
        let uncommented: String = EXAMPLE
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if rest.contains(" = ") || rest.starts_with('[') => rest,
                Some(rest) if rest.starts_with("  {") || rest == "]" => rest,
                _ => line,
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let unknown = crate::keys::unknown_keys(&toml::from_str(&uncommented).unwrap());
        assert!(unknown.is_empty(), "the example sets unknown keys: {unknown:?}");
        let config = load_str(&uncommented, &[]).expect("the uncommented example loads");
        assert_eq!(config.queues.len(), 1);
        assert_eq!(config.auth.api_keys.as_ref().map(Vec::len), Some(1));
        assert_eq!(config.admin.keys.as_ref().map(Vec::len), Some(1));
        assert_eq!(config.storage.worker_threads, Some(4));
        assert_eq!(config.cluster.node_id, Some(1));
        assert_eq!(config.cluster.peers.len(), 1);
    }
}
