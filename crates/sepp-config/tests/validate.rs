//! Validation: every rule of docs/configuration.md#keys rejects its bad values, accepts its boundary values, and
//! names the key to fix.

use sepp_config::load_str;

/// Loads `toml` and returns the error message, failing the test if it loads.
fn rejected(toml: &str) -> String {
    match load_str(toml, &[]) {
        Ok(config) => panic!("expected this config to be rejected:\n{toml}\nloaded: {config:?}"),
        Err(error) => error.to_string(),
    }
}

fn assert_rejected_naming(toml: &str, keys: &[&str]) {
    let message = rejected(toml);
    assert!(message.starts_with("invalid configuration in <inline config>: "), "{message}");
    for key in keys {
        assert!(message.contains(key), "the error for\n{toml}\nshould name {key}: {message}");
    }
}

#[test]
fn every_single_key_range_rule_rejects_its_bad_value() {
    let cases: &[(&str, &str)] = &[
        ("[server]\ndb_path = \"\"", "server.db_path"),
        ("[limits]\nmax_lease_duration_ms = 0", "limits.max_lease_duration_ms"),
        ("[limits]\ndefault_max_attempts = 0", "limits.default_max_attempts"),
        ("[limits]\nmax_attempts_ceiling = 0", "limits.max_attempts_ceiling"),
        ("[limits]\ndefault_priority = 10", "limits.default_priority"),
        ("[limits]\nretry_backoff = \"linear\"", "limits.retry_backoff"),
        ("[limits]\nretry_delay_max_ms = 0", "limits.retry_delay_max_ms"),
        ("[limits]\nmax_reserve_batch = 0", "limits.max_reserve_batch"),
        ("[limits]\nmax_reserve_queues = 0", "limits.max_reserve_queues"),
        ("[limits]\nmax_wait_timeout_ms = 0", "limits.max_wait_timeout_ms"),
        ("[limits]\nmax_enqueue_batch = 0", "limits.max_enqueue_batch"),
        ("[limits]\nmax_payload_bytes = 0", "limits.max_payload_bytes"),
        ("[limits]\nmax_message_bytes = 0", "limits.max_message_bytes"),
        ("[limits]\nmax_custom_entries = 0", "limits.max_custom_entries"),
        ("[limits]\nmax_custom_total_bytes = 0", "limits.max_custom_total_bytes"),
        ("[limits]\nmax_custom_key_bytes = 0", "limits.max_custom_key_bytes"),
        ("[limits]\nmax_queue_name_bytes = 0", "limits.max_queue_name_bytes"),
        ("[limits]\nmax_queue_name_bytes = 65536", "limits.max_queue_name_bytes"),
        ("[limits]\nmax_job_type_bytes = 0", "limits.max_job_type_bytes"),
        ("[limits]\nmax_idempotency_key_bytes = 0", "limits.max_idempotency_key_bytes"),
        ("[limits]\nmax_schedule_horizon_ms = 0", "limits.max_schedule_horizon_ms"),
        ("[limits]\nallowed_encodings = [\"json\", \"\"]", "limits.allowed_encodings"),
        ("[storage]\npersist_mode = \"fsync\"", "storage.persist_mode"),
        ("[storage]\nsweep_interval_ms = 0", "storage.sweep_interval_ms"),
        ("[storage]\nsweep_limit = 0", "storage.sweep_limit"),
        ("[storage]\ndedup_window_ms = 0", "storage.dedup_window_ms"),
        ("[storage]\ndedup_window_ms = -5", "storage.dedup_window_ms"),
        ("[storage]\ncommand_queue_capacity = 0", "storage.command_queue_capacity"),
        ("[storage]\ncache_size_bytes = 0", "storage.cache_size_bytes"),
        ("[storage]\nmax_journaling_size_bytes = 67108863", "storage.max_journaling_size_bytes"),
        ("[storage]\nmax_cached_files = 9", "storage.max_cached_files"),
        ("[storage]\nworker_threads = 0", "storage.worker_threads"),
        ("[logging]\nformat = \"xml\"", "logging.format"),
        ("[tracing]\nsample_ratio = 1.5", "tracing.sample_ratio"),
        ("[tracing]\nsample_ratio = -0.1", "tracing.sample_ratio"),
        ("[tracing]\nsample_ratio = nan", "tracing.sample_ratio"),
        ("[tracing]\nenabled = true\nservice_name = \"\"", "tracing.service_name"),
        ("[tracing]\nenabled = true\notlp_endpoint = \"\"", "tracing.otlp_endpoint"),
        ("[metrics]\nenabled = true\notlp_endpoint = \"\"", "metrics.otlp_endpoint"),
        ("[metrics]\nenabled = true\nexport_interval_ms = 0", "metrics.export_interval_ms"),
        ("[metrics]\nprometheus_listen_addr = \"localhost\"", "metrics.prometheus_listen_addr"),
        ("[server]\nlisten_addr = \"0.0.0.0\"", "server.listen_addr"),
        ("[admin]\nsession_ttl_ms = 59999", "admin.session_ttl_ms"),
        ("[admin]\nsession_ttl_ms = 31536000001", "admin.session_ttl_ms"),
        ("[admin]\nstats_history_ms = 59999", "admin.stats_history_ms"),
        ("[admin]\nstats_history_ms = 21600001", "admin.stats_history_ms"),
        ("[admin]\nstats_history_bytes = 1048575", "admin.stats_history_bytes"),
        ("[admin]\nstats_history_bytes = 1073741825", "admin.stats_history_bytes"),
    ];
    for (toml, key) in cases {
        assert_rejected_naming(toml, &[key]);
    }
}

#[test]
fn boundary_values_are_accepted() {
    let toml = r#"
        [limits]
        default_priority = 9
        default_max_attempts = 100
        max_attempts_ceiling = 100
        retry_delay_ms = 3600000
        max_payload_bytes = 16777216
        max_queue_name_bytes = 65535
        max_queue_depth = 0
        allowed_encodings = []
        [storage]
        dedup_window_ms = 1
        max_journaling_size_bytes = 67108864
        max_cached_files = 10
        worker_threads = 1
        cache_size_bytes = 1
        [tracing]
        sample_ratio = 0
        service_name = ""
        [metrics]
        export_interval_ms = 0
        [admin]
        session_ttl_ms = 31536000000
        stats_history_ms = 60000
    "#;
    let config = load_str(toml, &[]).expect("boundary values are valid");
    assert_eq!(config.limits.max_queue_depth, Some(0));
    assert_eq!(config.limits.allowed_encodings, Some(vec![]));
}

#[test]
fn cross_field_rules_name_both_keys() {
    assert_rejected_naming(
        "[limits]\ndefault_max_attempts = 11\nmax_attempts_ceiling = 10",
        &["limits.default_max_attempts (11) must not exceed limits.max_attempts_ceiling (10)"],
    );
    assert_rejected_naming(
        "[limits]\nretry_delay_ms = 5001\nretry_delay_max_ms = 5000",
        &["limits.retry_delay_ms", "limits.retry_delay_max_ms"],
    );
    assert_rejected_naming(
        "[limits]\nmax_payload_bytes = 2048\nmax_message_bytes = 1024",
        &["limits.max_payload_bytes", "limits.max_message_bytes"],
    );
}

#[test]
fn tls_cert_and_key_must_be_set_together() {
    assert_rejected_naming("[server]\ntls_cert_path = \"/c.pem\"", &["server.tls_cert_path", "server.tls_key_path"]);
    assert_rejected_naming("[admin]\ntls_key_path = \"/k.pem\"", &["admin.tls_cert_path", "admin.tls_key_path"]);
    assert_rejected_naming(
        "[server]\ntls_cert_path = \"\"\ntls_key_path = \"/k.pem\"",
        &["server.tls_cert_path must not be empty"],
    );
    let both = "[server]\ntls_cert_path = \"/c.pem\"\ntls_key_path = \"/k.pem\"\n";
    assert!(load_str(both, &[]).is_ok());
}

#[test]
fn a_non_loopback_admin_listener_needs_keys_unless_disabled() {
    assert_rejected_naming("[admin]\nlisten_addr = \"0.0.0.0:9465\"", &["admin.listen_addr", "admin.keys"]);
    assert_rejected_naming("[admin]\nlisten_addr = \"10.1.2.3:9465\"", &["admin.keys"]);
    for ok in [
        "[admin]\nlisten_addr = \"0.0.0.0:9465\"\nenabled = false",
        "[admin]\nlisten_addr = \"0.0.0.0:9465\"\nkeys = [{ name = \"a\", key = \"b\" }]",
        "[admin]\nlisten_addr = \"[::1]:9465\"",
        "[admin]\nlisten_addr = \"127.0.0.2:9465\"",
    ] {
        assert!(load_str(ok, &[]).is_ok(), "{ok}");
    }
}

#[test]
fn api_key_names_and_keys_are_non_empty_unique_and_keys_visible_ascii() {
    let cases: &[(&str, &str)] = &[
        (r#"[{ name = "", key = "k" }]"#, "auth.api_keys[0].name must not be empty"),
        (r#"[{ name = "a", key = "" }]"#, "auth.api_keys[0].key must not be empty"),
        (r#"[{ name = "a", key = "k1" }, { name = "a", key = "k2" }]"#, "auth.api_keys[1].name"),
        (
            r#"[{ name = "a", key = "dupkey" }, { name = "b", key = "dupkey" }]"#,
            "auth.api_keys[1].key is the same key as auth.api_keys[0].key",
        ),
        (r#"[{ name = "a", key = "has space" }]"#, "auth.api_keys[0].key"),
        (r#"[{ name = "a", key = "tab\tkey" }]"#, "auth.api_keys[0].key"),
        (r#"[{ name = "a", key = "clé" }]"#, "auth.api_keys[0].key"),
    ];
    for (list, key) in cases {
        let message = rejected(&format!("[auth]\napi_keys = {list}\n"));
        assert!(message.contains(key), "{list}: {message}");
        for material in ["dupkey", "has space", "clé", "tab\tkey"] {
            assert!(!message.contains(material), "{message}");
        }
    }
    let visible = r#"[{ name = "a", key = "!~azAZ09-_.=+/" }]"#;
    assert!(load_str(&format!("[auth]\napi_keys = {visible}\n"), &[]).is_ok());
}

#[test]
fn admin_key_names_and_keys_are_non_empty_and_unique() {
    let cases: &[(&str, &str)] = &[
        (r#"[{ name = "", key = "k" }]"#, "admin.keys[0].name"),
        (r#"[{ name = "a", key = "" }]"#, "admin.keys[0].key"),
        (r#"[{ name = "a", key = "k1" }, { name = "a", key = "k2" }]"#, "admin.keys[1].name"),
        (r#"[{ name = "a", key = "k" }, { name = "b", key = "k", role = "viewer" }]"#, "admin.keys[1].key"),
    ];
    for (list, key) in cases {
        let message = rejected(&format!("[admin]\nkeys = {list}\n"));
        assert!(message.contains(key), "{list}: {message}");
    }
    // Admin keys are compared as given; the visible-ASCII rule is the API keys' only.
    assert!(load_str("[admin]\nkeys = [{ name = \"a\", key = \"pass phrase\" }]\n", &[]).is_ok());
}

#[test]
fn admin_allowed_hosts_are_host_names_with_an_optional_port() {
    let config = load_str(
        "[admin]\nallowed_hosts = [\"sepp.example.com\", \"proxy.example.com:8443\", \"[2001:db8::5]:9465\"]\n",
        &[],
    )
    .expect("valid names");
    assert_eq!(config.admin.allowed_hosts.len(), 3);
    for (index, bad) in ["https://sepp.example.com", "sepp.example.com/", "::1", "host:99999", ""].iter().enumerate() {
        let list = format!("[\"localhost\", \"{bad}\"]");
        let message = rejected(&format!("[admin]\nallowed_hosts = {list}\n"));
        assert!(message.contains("admin.allowed_hosts[1]"), "case {index} {bad:?}: {message}");
    }
}

#[test]
fn queue_names_must_be_valid_unique_and_short_enough() {
    let cases: &[(&str, &str)] = &[
        ("[[queues]]\nname = \"\"", "queues[0].name"),
        ("[[queues]]\nname = \".\"", "queues[0].name"),
        ("[[queues]]\nname = \"..\"", "queues[0].name"),
        ("[[queues]]\nname = \"a/b\"", "queues[0].name"),
        ("[[queues]]\nname = \"bell\\u0007\"", "queues[0].name"),
        ("[[queues]]\ndefault_priority = 1", "queues[0].name is required"),
        ("[[queues]]\nname = \"a\"\n[[queues]]\nname = \"a\"", "queues[1].name \"a\" is already declared by queues[0]"),
        (
            "[limits]\nmax_queue_name_bytes = 3\n[[queues]]\nname = \"abcd\"",
            "queues[0].name is 4 bytes long, more than limits.max_queue_name_bytes (3)",
        ),
    ];
    for (toml, expected) in cases {
        assert_rejected_naming(toml, &[expected]);
    }
    let fine = "[limits]\nmax_queue_name_bytes = 4\n[[queues]]\nname = \"a..b\"\n";
    assert!(load_str(fine, &[]).is_ok());
}

#[test]
fn allowed_job_types_is_a_non_empty_list_of_non_empty_strings() {
    assert_rejected_naming("[[queues]]\nname = \"q\"\nallowed_job_types = []", &["queues.q.allowed_job_types"]);
    assert_rejected_naming(
        "[[queues]]\nname = \"q\"\nallowed_job_types = [\"a\", \"\"]",
        &["queues.q.allowed_job_types"],
    );
    assert!(load_str("[[queues]]\nname = \"q\"\nallowed_job_types = [\"a\"]\n", &[]).is_ok());
}

#[test]
fn each_queues_merged_limits_pass_the_global_rules() {
    // A queue override against a global value: both keys are named.
    assert_rejected_naming(
        "[[queues]]\nname = \"emails\"\ndefault_max_attempts = 101",
        &["queues.emails.default_max_attempts (101) must not exceed limits.max_attempts_ceiling (100)"],
    );
    // A global value against a queue override.
    assert_rejected_naming(
        "[limits]\ndefault_max_attempts = 5\n[[queues]]\nname = \"emails\"\nmax_attempts_ceiling = 4",
        &["limits.default_max_attempts (5) must not exceed queues.emails.max_attempts_ceiling (4)"],
    );
    let cases: &[(&str, &str)] = &[
        ("default_priority = 10", "queues.q.default_priority must be at most 9"),
        ("retry_delay_ms = 3600001", "queues.q.retry_delay_ms"),
        ("retry_delay_max_ms = 0", "queues.q.retry_delay_max_ms"),
        ("max_payload_bytes = 16777217", "queues.q.max_payload_bytes"),
        ("max_lease_duration_ms = 0", "queues.q.max_lease_duration_ms"),
        ("max_schedule_horizon_ms = 0", "queues.q.max_schedule_horizon_ms"),
        ("max_custom_entries = 0", "queues.q.max_custom_entries"),
        ("max_custom_total_bytes = 0", "queues.q.max_custom_total_bytes"),
        ("max_custom_key_bytes = 0", "queues.q.max_custom_key_bytes"),
        ("dedup_window_ms = 0", "queues.q.dedup_window_ms"),
        ("allowed_encodings = [\"\"]", "queues.q.allowed_encodings"),
        ("retry_backoff = \"linear\"", "queues[0].retry_backoff"),
    ];
    for (override_line, expected) in cases {
        assert_rejected_naming(&format!("[[queues]]\nname = \"q\"\n{override_line}\n"), &[expected]);
    }
    // The same values are fine when the queue's other limits make room for them.
    let roomy = "[[queues]]\nname = \"q\"\nretry_delay_ms = 3600001\nretry_delay_max_ms = 7200000\n\
                 default_max_attempts = 150\nmax_attempts_ceiling = 200\n";
    assert!(load_str(roomy, &[]).is_ok());
}

#[test]
fn per_key_limits_need_a_limit_key_and_values_of_at_least_one() {
    let queue = |body: &str| format!("[[queues]]\nname = \"emails\"\n{body}");
    let cases: &[(&str, &str)] = &[
        ("key_max_in_flight = 2", "queues.emails.key_max_in_flight needs limit_key"),
        ("key_overrides = { acme = { max_in_flight = 1 } }", "queues.emails.key_overrides needs limit_key"),
        ("limit_key = \"\"\nkey_max_in_flight = 1", "queues.emails.limit_key must name"),
        ("limit_key = \"tenant\"", "needs key_max_in_flight, key_rate_limit or key_overrides"),
        ("limit_key = \"tenant\"\nkey_max_in_flight = 0", "queues.emails.key_max_in_flight must be at least 1"),
        ("limit_key = \"tenant\"\nkey_rate_limit = 0", "queues.emails.key_rate_limit must be at least 1"),
        ("limit_key = \"tenant\"\nkey_max_in_flight = 1\nkey_rate_burst = 3", "key_rate_burst needs key_rate_limit"),
        (
            "limit_key = \"tenant\"\nkey_max_in_flight = 1\nkey_rate_period_ms = 3",
            "key_rate_period_ms needs key_rate_limit",
        ),
        (
            "limit_key = \"t\"\nkey_overrides = { acme = { max_in_flight = 0 } }",
            "\"acme\".max_in_flight must be at least 1",
        ),
        ("limit_key = \"t\"\nkey_overrides = { acme = { rate_burst = 2 } }", "\"acme\".rate_burst needs rate_limit"),
        ("limit_key = \"t\"\nkey_overrides = { acme = {} }", "\"acme\" sets no limit"),
    ];
    for (body, wanted) in cases {
        let message = rejected(&queue(body));
        assert!(message.contains(wanted), "{body}: {message}");
    }
    let message = rejected(&queue("limit_key = \"t\"\nkey_overrides = { acme = { max_in_fligh = 2 } }"));
    assert!(message.contains("max_in_fligh"), "an unknown override field is refused: {message}");
    for body in [
        "limit_key = \"tenant\"\nkey_max_in_flight = 1",
        "limit_key = \"tenant\"\nkey_rate_limit = 1\nkey_rate_burst = 1\nkey_rate_period_ms = 1",
        "limit_key = \"t\"\nkey_rate_period_ms = 5\nkey_overrides = { acme = { rate_limit = 1, rate_burst = 1 } }",
    ] {
        load_str(&queue(body), &[]).unwrap_or_else(|error| panic!("{body}: {error}"));
    }
}

#[test]
fn a_cluster_node_needs_addresses_others_can_dial_and_distinct_peers() {
    let node =
        "[server]\nlisten_addr = \"127.0.0.1:50051\"\n[cluster]\nnode_id = 1\nlisten_addr = \"127.0.0.1:50052\"\n";
    let cases: &[(&str, &[&str])] = &[
        ("[cluster]\nnode_id = 0", &["cluster.node_id"]),
        ("[cluster]\nnode_id = 1", &["cluster.advertise_addr", "cluster.listen_addr"]),
        ("[cluster]\nnode_id = 1\nadvertise_addr = \"10.0.0.1:50052\"", &["cluster.api_addr", "server.listen_addr"]),
        ("[cluster]\nheartbeat_interval_ms = 0", &["cluster.heartbeat_interval_ms"]),
        ("[cluster]\nelection_timeout_ms = 100", &["cluster.election_timeout_ms", "cluster.heartbeat_interval_ms"]),
        ("[cluster]\nsnapshot_after_entries = 0", &["cluster.snapshot_after_entries"]),
        ("[cluster]\nnode_ld = 1", &["node_ld"]),
    ];
    for (toml, keys) in cases {
        assert_rejected_naming(toml, keys);
    }
    let with = |extra: &str| format!("{node}{extra}");
    let bad: &[(&str, &[&str])] = &[
        ("advertise_addr = \"0.0.0.0:50052\"", &["cluster.advertise_addr", "wildcard"]),
        ("advertise_addr = \"no-port\"", &["cluster.advertise_addr", "host:port"]),
        ("api_addr = \":50051\"", &["cluster.api_addr", "host:port"]),
        ("peers = [{ id = 1, raft_addr = \"b:1\", api_addr = \"b:2\" }]", &["cluster.peers[0].id", "own id"]),
        (
            "peers = [{ id = 2, raft_addr = \"b:1\", api_addr = \"b:2\" }, { id = 2, raft_addr = \"c:1\", api_addr = \"c:2\" }]",
            &["cluster.peers[1].id", "unique"],
        ),
        ("peers = [{ id = 2, raft_addr = \"b\", api_addr = \"b:2\" }]", &["cluster.peers[0].raft_addr"]),
        ("peers = [{ id = 2, raft_addr = \"b:1\" }]", &["api_addr"]),
    ];
    for (extra, keys) in bad {
        assert_rejected_naming(&with(extra), keys);
    }
    let same_port =
        "[server]\nlisten_addr = \"127.0.0.1:50051\"\n[cluster]\nnode_id = 1\nlisten_addr = \"127.0.0.1:50051\"";
    assert_rejected_naming(same_port, &["cluster.listen_addr", "server.listen_addr"]);

    let good = with("peers = [{ id = 2, raft_addr = \"node-b:50052\", api_addr = \"node-b:50051\" }]");
    let config = load_str(&good, &[]).expect("a valid cluster node");
    assert_eq!(config.cluster.node_id, Some(1));
    assert_eq!(config.cluster.advertised(), "127.0.0.1:50052");
    assert_eq!(config.cluster.advertised_api(&config.server), "127.0.0.1:50051");
    assert_eq!(config.cluster.peers[0].raft_addr, "node-b:50052");
    // Without node_id nothing else of the section matters: wildcards are fine.
    load_str("[cluster]\nlisten_addr = \"0.0.0.0:50052\"", &[]).expect("a single node");
}
