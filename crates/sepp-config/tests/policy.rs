//! From configuration to the core's `Policy`, and the restart-only comparison.

use std::path::PathBuf;

use sepp_config::{Config, LogFormat, PersistMode, RESTART_ONLY, load_str};
use sepp_core::{QueueLimits, RetryBackoff};

fn config(toml: &str) -> Config {
    load_str(toml, &[]).unwrap()
}

#[test]
fn undeclared_queues_get_the_globals_and_server_limits_are_carried() {
    let c = config(
        "[server]\nstrict_queues = true\n\
         [limits]\ndefault_priority = 3\nmax_reserve_batch = 7\nmax_wait_timeout_ms = 1234\n\
         max_queue_name_bytes = 99\nmax_queue_depth = 50\nallowed_encodings = [\"json\"]\n\
         [storage]\ndedup_window_ms = 42\n",
    );
    let policy = c.policy(&c);
    assert!(policy.server.strict_queues);
    assert_eq!(policy.server.max_reserve_batch, 7);
    assert_eq!(policy.server.max_wait_timeout_ms, 1234);
    assert_eq!(policy.server.max_queue_name_bytes, 99);
    assert_eq!(policy.defaults.default_priority, 3);
    assert_eq!(policy.defaults.dedup_window_ms, 42);
    assert_eq!(policy.defaults.max_queue_depth, Some(50));
    assert_eq!(policy.defaults.allowed_encodings, Some(vec!["json".to_string()]));
    assert_eq!(policy.defaults.allowed_job_types, None);
    assert!(policy.declared.is_empty());
    assert_eq!(policy.queue("anything"), &policy.defaults);
}

#[test]
fn default_config_gives_the_cores_default_policy() {
    let c = Config::default();
    assert_eq!(c.policy(&c), sepp_core::Policy::default());
}

#[test]
fn queue_overrides_merge_over_globals() {
    let c = config(
        r#"
        [limits]
        default_max_attempts = 4
        retry_backoff = "exponential"
        max_queue_depth = 1000
        allowed_encodings = ["json", "proto"]
        [[queues]]
        name = "emails"
        max_lease_duration_ms = 1
        default_max_attempts = 2
        max_attempts_ceiling = 3
        default_priority = 9
        retry_delay_ms = 5
        retry_backoff = "none"
        retry_delay_max_ms = 6
        max_payload_bytes = 7
        allowed_encodings = ["text"]
        allowed_job_types = ["welcome"]
        max_schedule_horizon_ms = 8
        max_custom_entries = 9
        max_custom_total_bytes = 10
        max_custom_key_bytes = 11
        dedup_window_ms = 12
        max_queue_depth = 13
        max_in_flight = 14
        [[queues]]
        name = "plain"
        "#,
    );
    let policy = c.policy(&c);
    assert_eq!(
        policy.queue("emails"),
        &QueueLimits {
            max_lease_duration_ms: 1,
            default_max_attempts: 2,
            max_attempts_ceiling: 3,
            default_priority: 9,
            retry_delay_ms: 5,
            retry_backoff: RetryBackoff::None,
            retry_delay_max_ms: 6,
            max_payload_bytes: 7,
            allowed_encodings: Some(vec!["text".into()]),
            allowed_job_types: Some(vec!["welcome".into()]),
            max_schedule_horizon_ms: 8,
            max_custom_entries: 9,
            max_custom_total_bytes: 10,
            max_custom_key_bytes: 11,
            dedup_window_ms: 12,
            max_queue_depth: Some(13),
            max_in_flight: Some(14),
            rate_limit: None,
            key_limit: None,
        }
    );
    // A declared queue without overrides has exactly the globals.
    assert!(policy.is_declared("plain"));
    assert_eq!(policy.queue("plain"), &policy.defaults);
    assert_eq!(policy.defaults.default_max_attempts, 4);
    assert_eq!(policy.defaults.retry_backoff, RetryBackoff::Exponential);
}

#[test]
fn a_queue_encoding_list_replaces_the_global_one_and_depth_falls_back_to_the_global_cap() {
    let c = config(
        "[limits]\nallowed_encodings = [\"json\"]\nmax_queue_depth = 100\n\
         [[queues]]\nname = \"open\"\nallowed_encodings = []\n\
         [[queues]]\nname = \"inherits\"\n",
    );
    let policy = c.policy(&c);
    assert_eq!(policy.queue("open").allowed_encodings, Some(vec![]));
    assert_eq!(policy.queue("open").max_queue_depth, Some(100));
    assert_eq!(policy.queue("inherits").allowed_encodings, Some(vec!["json".to_string()]));
}

#[test]
fn dedup_window_is_pinned_from_boot_config() {
    let boot = config(
        "[storage]\ndedup_window_ms = 5000\n\
         [[queues]]\nname = \"pinned\"\ndedup_window_ms = 1000\n\
         [[queues]]\nname = \"plain\"\n",
    );
    let reloaded = config(
        "[storage]\ndedup_window_ms = 9000\n\
         [[queues]]\nname = \"pinned\"\ndedup_window_ms = 2000\n\
         [[queues]]\nname = \"plain\"\ndedup_window_ms = 2500\n\
         [[queues]]\nname = \"added\"\ndedup_window_ms = 3000\n\
         [[queues]]\nname = \"added_plain\"\n",
    );
    let policy = reloaded.policy(&boot);
    assert_eq!(policy.defaults.dedup_window_ms, 5000);
    assert_eq!(policy.queue("pinned").dedup_window_ms, 1000);
    assert_eq!(policy.queue("plain").dedup_window_ms, 5000);
    assert_eq!(policy.queue("added").dedup_window_ms, 5000);
    assert_eq!(policy.queue("added_plain").dedup_window_ms, 5000);
    // At boot the configuration is its own boot config, so its windows apply.
    let at_boot = reloaded.policy(&reloaded);
    assert_eq!(at_boot.defaults.dedup_window_ms, 9000);
    assert_eq!(at_boot.queue("added").dedup_window_ms, 3000);
    assert_eq!(at_boot.queue("added_plain").dedup_window_ms, 9000);
}

#[test]
fn restart_only_is_the_list_of_spec_4_4() {
    // The 23 of sepp 0.1, `[cluster]`, and the connection bounds of the queue and admin listeners.
    assert_eq!(RESTART_ONLY.len(), 29);
    for name in [
        "server.listen_addr",
        "limits.max_message_bytes",
        "queues[].dedup_window_ms",
        "storage.worker_threads",
        "logging",
        "tracing",
        "metrics",
        "admin.tls_key_path",
        "cluster",
    ] {
        assert!(RESTART_ONLY.contains(&name), "{name}");
    }
}

#[test]
fn each_restart_only_field_is_detected_on_its_own() {
    type Change = fn(&mut Config);
    let changes: &[(&str, Change)] = &[
        ("server.listen_addr", |c| c.server.listen_addr = "127.0.0.1:1".parse().unwrap()),
        ("server.db_path", |c| c.server.db_path = PathBuf::from("/elsewhere")),
        ("server.tls_cert_path", |c| c.server.tls_cert_path = Some("/c".into())),
        ("server.tls_key_path", |c| c.server.tls_key_path = Some("/k".into())),
        ("server.max_connections", |c| c.server.max_connections += 1),
        ("server.handshake_timeout_ms", |c| c.server.handshake_timeout_ms += 1),
        ("limits.max_message_bytes", |c| c.limits.max_message_bytes += 1),
        ("storage.persist_mode", |c| c.storage.persist_mode = PersistMode::Buffer),
        ("storage.sweep_interval_ms", |c| c.storage.sweep_interval_ms += 1),
        ("storage.sweep_limit", |c| c.storage.sweep_limit += 1),
        ("storage.dead_letter_retention_ms", |c| c.storage.dead_letter_retention_ms += 1),
        ("storage.dedup_window_ms", |c| c.storage.dedup_window_ms += 1),
        ("queues[].dedup_window_ms", |c| c.queues[0].dedup_window_ms = Some(7)),
        ("storage.command_queue_capacity", |c| c.storage.command_queue_capacity += 1),
        ("storage.cache_size_bytes", |c| c.storage.cache_size_bytes = Some(1)),
        ("storage.max_journaling_size_bytes", |c| c.storage.max_journaling_size_bytes = Some(1 << 30)),
        ("storage.max_cached_files", |c| c.storage.max_cached_files = Some(20)),
        ("storage.worker_threads", |c| c.storage.worker_threads = Some(2)),
        ("logging", |c| c.logging.format = LogFormat::Json),
        ("tracing", |c| c.tracing.sample_ratio = 0.5),
        ("metrics", |c| c.metrics.prometheus_enabled = true),
        ("admin.enabled", |c| c.admin.enabled = false),
        ("admin.listen_addr", |c| c.admin.listen_addr = "127.0.0.1:1".parse().unwrap()),
        ("admin.tls_cert_path", |c| c.admin.tls_cert_path = Some("/c".into())),
        ("admin.tls_key_path", |c| c.admin.tls_key_path = Some("/k".into())),
        ("admin.max_connections", |c| c.admin.max_connections += 1),
        ("admin.handshake_timeout_ms", |c| c.admin.handshake_timeout_ms += 1),
        ("admin.idle_timeout_ms", |c| c.admin.idle_timeout_ms += 1),
        ("cluster", |c| c.cluster.node_id = Some(1)),
    ];
    assert_eq!(changes.len(), RESTART_ONLY.len());
    let base = config("[[queues]]\nname = \"q\"\n");
    assert!(base.restart_only_changes(&base).is_empty());
    for (name, change) in changes {
        let mut newer = base.clone();
        change(&mut newer);
        assert_eq!(base.restart_only_changes(&newer), vec![name.to_string()]);
    }
}

#[test]
fn restart_only_changes_lists_changed_fields() {
    let running =
        config("[server]\nlisten_addr = \"0.0.0.0:50051\"\n[[queues]]\nname = \"a\"\ndedup_window_ms = 100\n");
    let edited = config(
        "[server]\nlisten_addr = \"0.0.0.0:6000\"\nstrict_queues = true\n\
         [auth]\napi_keys = []\n[limits]\ndefault_priority = 5\n\
         [logging]\nlevel = \"debug\"\n[admin]\nsession_ttl_ms = 60000\n\
         [[queues]]\nname = \"a\"\ndedup_window_ms = 200\n[[queues]]\nname = \"new\"\n",
    );
    assert_eq!(running.restart_only_changes(&edited), ["server.listen_addr", "queues[].dedup_window_ms", "logging"]);
}

#[test]
fn hot_changes_are_not_restart_only() {
    let running = config("");
    let edited = config(
        "[server]\nstrict_queues = true\n[auth]\napi_keys = [{ name = \"w\", key = \"k\" }]\n\
         [limits]\ndefault_priority = 5\nmax_queue_depth = 3\n\
         [admin]\nkeys = [{ name = \"a\", key = \"b\" }]\nstats_history_ms = 60000\n\
         [[queues]]\nname = \"added_without_a_window\"\n",
    );
    assert!(running.restart_only_changes(&edited).is_empty());
}

#[test]
fn per_key_limits_resolve_overrides_over_the_key_defaults() {
    let c = config(
        r#"
        [[queues]]
        name = "emails"
        limit_key = "tenant"
        key_max_in_flight = 2
        key_rate_limit = 10
        key_rate_period_ms = 500
        [queues.key_overrides]
        acme = { max_in_flight = 8 }
        slow = { rate_limit = 1, rate_burst = 3 }
        [[queues]]
        name = "plain"
        "#,
    );
    let policy = c.policy(&c);
    let key = policy.queue("emails").key_limit.clone().expect("a key limit");
    assert_eq!(key.field, "tenant");
    let rate = |limit, burst| Some(sepp_core::RateLimit { limit, period_ms: 500, burst });
    assert_eq!(key.of("other"), sepp_core::KeyLimits { max_in_flight: Some(2), rate: rate(10, 10) });
    assert_eq!(key.of("acme"), sepp_core::KeyLimits { max_in_flight: Some(8), rate: rate(10, 10) });
    assert_eq!(key.of("slow"), sepp_core::KeyLimits { max_in_flight: Some(2), rate: rate(1, 3) });
    assert!(policy.queue("plain").key_limit.is_none());
}
