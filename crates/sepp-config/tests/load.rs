//! Loading: discovery, layering of defaults, file and environment, and the error messages.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use sepp_config::{
    AdminRole, ApiKey, Config, ConfigError, ConfigSource, LogFormat, PersistMode, RetryBackoff, discover, load_str,
    load_with_env,
};

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn error_of(toml: &str) -> String {
    load_str(toml, &[]).expect_err("the config should be rejected").to_string()
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

fn file_with(dir: &Path, text: &str) -> ConfigSource {
    let path = dir.join("sepp.toml");
    std::fs::write(&path, text).unwrap();
    ConfigSource { path, explicit: true }
}

#[test]
fn empty_file_gives_all_defaults() {
    let c = load_str("", &[]).unwrap();
    assert_eq!(c.server.listen_addr, addr("0.0.0.0:50051"));
    assert_eq!(c.server.db_path, PathBuf::from("./sepp-data"));
    assert_eq!(c.server.tls_cert_path, None);
    assert!(!c.server.strict_queues);
    assert_eq!(c.auth.api_keys, None);
    let l = &c.limits;
    assert_eq!((l.max_lease_duration_ms, l.default_max_attempts, l.max_attempts_ceiling), (300_000, 3, 100));
    assert_eq!((l.default_priority, l.retry_delay_ms), (0, 0));
    assert_eq!(l.retry_backoff, RetryBackoff::None);
    assert_eq!(l.retry_delay_max_ms, 3_600_000);
    assert_eq!((l.max_reserve_batch, l.max_reserve_queues, l.max_enqueue_batch), (256, 32, 256));
    assert_eq!(l.max_wait_timeout_ms, 300_000);
    assert_eq!(l.max_queue_depth, None);
    assert_eq!((l.max_payload_bytes, l.max_message_bytes), (1_048_576, 16_777_216));
    assert_eq!((l.max_custom_entries, l.max_custom_total_bytes, l.max_custom_key_bytes), (64, 16_384, 256));
    assert_eq!((l.max_queue_name_bytes, l.max_job_type_bytes, l.max_idempotency_key_bytes), (512, 256, 256));
    assert_eq!(l.max_schedule_horizon_ms, 2_592_000_000);
    assert_eq!(l.allowed_encodings, None);
    let s = &c.storage;
    assert_eq!(s.persist_mode, PersistMode::SyncAll);
    assert_eq!((s.sweep_interval_ms, s.sweep_limit), (1_000, 10_000));
    assert_eq!((s.dedup_window_ms, s.dead_letter_retention_ms), (86_400_000, 0));
    assert_eq!(s.command_queue_capacity, 4_096);
    assert_eq!((s.cache_size_bytes, s.max_journaling_size_bytes), (None, None));
    assert_eq!((s.max_cached_files, s.worker_threads), (None, None));
    assert_eq!(c.logging.level, "info");
    assert_eq!(c.logging.format, LogFormat::Text);
    assert!(!c.tracing.enabled);
    assert_eq!(c.tracing.otlp_endpoint, "http://localhost:4317");
    assert_eq!(c.tracing.service_name, "sepp");
    assert_eq!(c.tracing.sample_ratio, 1.0);
    assert!(!c.metrics.enabled && !c.metrics.prometheus_enabled);
    assert_eq!(c.metrics.otlp_endpoint, "http://localhost:4317");
    assert_eq!(c.metrics.export_interval_ms, 5_000);
    assert_eq!(c.metrics.prometheus_listen_addr, addr("0.0.0.0:9464"));
    assert!(c.admin.enabled);
    assert_eq!(c.admin.listen_addr, addr("127.0.0.1:9465"));
    assert_eq!((&c.admin.tls_cert_path, &c.admin.keys), (&None, &None));
    assert_eq!((c.admin.session_ttl_ms, c.admin.stats_history_ms), (43_200_000, 3_600_000));
    assert_eq!(c.admin.stats_history_bytes, 16 << 20);
    assert!(c.queues.is_empty());
    assert_eq!(c, Config::default());
}

#[test]
fn a_file_with_every_key_of_spec_4_2_set_loads() {
    let text = include_str!("fixtures/every-key.toml");
    let c = load_str(text, &[]).expect("the 0.1-style file loads");
    assert_eq!(c.server.listen_addr, addr("127.0.0.1:6000"));
    assert_eq!(c.server.tls_key_path, Some(PathBuf::from("/etc/sepp/grpc.key")));
    assert!(c.server.strict_queues);
    assert_eq!(c.auth.api_keys.as_ref().unwrap()[1].name, "mailer");
    assert_eq!(c.limits.retry_backoff, RetryBackoff::Exponential);
    assert_eq!(c.limits.max_queue_depth, Some(1_000_000));
    assert_eq!(c.storage.persist_mode, PersistMode::SyncData);
    assert_eq!(c.storage.cache_size_bytes, Some(134_217_728));
    assert_eq!(c.storage.max_journaling_size_bytes, Some(268_435_456));
    assert_eq!(c.storage.max_cached_files, Some(512));
    assert_eq!(c.storage.worker_threads, Some(2));
    assert_eq!(c.logging.format, LogFormat::Json);
    assert_eq!(c.tracing.sample_ratio, 0.25);
    assert_eq!(c.metrics.prometheus_listen_addr, addr("127.0.0.1:9100"));
    let roles: Vec<AdminRole> = c.admin.keys.as_ref().unwrap().iter().map(|k| k.role).collect();
    assert_eq!(roles, [AdminRole::Admin, AdminRole::Operator, AdminRole::Viewer, AdminRole::Admin]);
    assert_eq!(c.queues.len(), 2);
    let emails = &c.queues[0];
    assert_eq!(emails.dedup_window_ms, Some(600_000));
    assert_eq!(emails.max_queue_depth, Some(5_000));
    assert_eq!(emails.retry_backoff, Some(RetryBackoff::None));
    assert_eq!(emails.allowed_job_types.as_deref(), Some(&["welcome".to_string(), "receipt".to_string()][..]));
    assert_eq!(c.queues[1].name, "reports.daily");
    assert_eq!(c.queues[1].default_priority, None);
}

#[test]
fn discovery_prefers_the_flag_then_sepp_config_then_the_working_directory() {
    let with_env = |name: &str| (name == "SEPP_CONFIG").then(|| "/etc/sepp/sepp.toml".to_owned());
    let no_env = |_: &str| None;
    assert_eq!(
        discover(Some(PathBuf::from("/flag.toml")), &with_env),
        ConfigSource { path: PathBuf::from("/flag.toml"), explicit: true }
    );
    assert_eq!(discover(None, &with_env), ConfigSource { path: PathBuf::from("/etc/sepp/sepp.toml"), explicit: true });
    assert_eq!(discover(None, &no_env), ConfigSource { path: PathBuf::from("./sepp.toml"), explicit: false });
}

#[test]
fn an_explicit_path_that_does_not_exist_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sepp.toml");
    let source = ConfigSource { path: path.clone(), explicit: true };
    let error = load_with_env(&source, &[]).unwrap_err();
    assert!(matches!(error, ConfigError::NotFound { .. }), "{error:?}");
    assert_eq!(error.to_string(), format!("config file not found: {}", path.display()));
}

#[test]
fn a_missing_default_file_gives_defaults_plus_environment() {
    let dir = tempfile::tempdir().unwrap();
    let source = ConfigSource { path: dir.path().join("sepp.toml"), explicit: false };
    let c = load_with_env(&source, &env(&[("SEPP_SERVER__STRICT_QUEUES", "true")])).unwrap().config;
    assert!(c.server.strict_queues);
    assert_eq!(Config { server: Default::default(), ..c }, Config::default());
}

#[test]
fn env_override_wins_over_file() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(
        dir.path(),
        "[server]\nlisten_addr = \"127.0.0.1:1\"\ndb_path = \"/from/file\"\n[limits]\ndefault_priority = 2\n",
    );
    let c = load_with_env(
        &source,
        &env(&[("SEPP_SERVER__LISTEN_ADDR", "0.0.0.0:6000"), ("SEPP_LIMITS__DEFAULT_PRIORITY", "7")]),
    )
    .unwrap()
    .config;
    assert_eq!(c.server.listen_addr, addr("0.0.0.0:6000"));
    assert_eq!(c.limits.default_priority, 7);
    assert_eq!(c.server.db_path, PathBuf::from("/from/file"));
}

#[test]
fn env_values_that_are_not_toml_literals_are_plain_strings() {
    let c = load_str(
        "",
        &env(&[
            ("SEPP_SERVER__DB_PATH", "/tmp/x"),
            ("SEPP_LOGGING__LEVEL", "debug,sepp=trace"),
            ("SEPP_STORAGE__PERSIST_MODE", "buffer"),
        ]),
    )
    .unwrap();
    assert_eq!(c.server.db_path, PathBuf::from("/tmp/x"));
    assert_eq!(c.logging.level, "debug,sepp=trace");
    assert_eq!(c.storage.persist_mode, PersistMode::Buffer);
}

#[test]
fn an_env_literal_of_the_wrong_type_is_taken_as_its_string() {
    let c = load_str("", &env(&[("SEPP_SERVER__DB_PATH", "2024"), ("SEPP_TRACING__SERVICE_NAME", "true")])).unwrap();
    assert_eq!(c.server.db_path, PathBuf::from("2024"));
    assert_eq!(c.tracing.service_name, "true");
}

#[test]
fn env_arrays_and_inline_tables_set_lists() {
    let c = load_str(
        "",
        &env(&[
            ("SEPP_AUTH__API_KEYS", r#"[{name="x",key="y"}]"#),
            ("SEPP_LIMITS__ALLOWED_ENCODINGS", r#"["json", "proto"]"#),
            ("sepp_limits__max_queue_depth", "10"),
        ]),
    )
    .unwrap();
    assert_eq!(c.auth.api_keys, Some(vec![ApiKey { name: "x".into(), key: "y".into() }]));
    assert_eq!(c.limits.allowed_encodings, Some(vec!["json".to_string(), "proto".to_string()]));
    assert_eq!(c.limits.max_queue_depth, Some(10));
}

#[test]
fn sepp_config_and_unrelated_variables_are_not_overrides() {
    let c = load_str(
        "",
        &env(&[("SEPP_CONFIG", "/etc/sepp/sepp.toml"), ("PATH", "/usr/bin"), ("SEPP_NOT_A_SECTION", "1")]),
    )
    .unwrap();
    assert_eq!(c, Config::default());
}

#[test]
fn an_invalid_env_value_is_reported_against_the_variable() {
    let error = load_str("", &env(&[("SEPP_LIMITS__DEFAULT_PRIORITY", "12")])).unwrap_err().to_string();
    assert_eq!(
        error,
        "invalid configuration in environment variable SEPP_LIMITS__DEFAULT_PRIORITY: \
         limits.default_priority must be at most 9 (got 12)"
    );
    let error = load_str("", &env(&[("SEPP_ADMIN__LISTEN_ADDR", "nowhere")])).unwrap_err().to_string();
    assert!(error.contains("environment variable SEPP_ADMIN__LISTEN_ADDR"), "{error}");
    assert!(error.contains("admin.listen_addr"), "{error}");
}

#[test]
fn a_rule_broken_between_file_and_environment_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(dir.path(), "[limits]\ndefault_max_attempts = 50\n");
    let error = load_with_env(&source, &env(&[("SEPP_LIMITS__MAX_ATTEMPTS_CEILING", "10")])).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "invalid configuration in {} and environment variable SEPP_LIMITS__MAX_ATTEMPTS_CEILING: \
             limits.default_max_attempts (50) must not exceed limits.max_attempts_ceiling (10)",
            source.path.display()
        )
    );
}

#[test]
fn default_priority_above_9_is_rejected_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(dir.path(), "[limits]\ndefault_priority = 12\n");
    let error = load_with_env(&source, &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "invalid configuration in {}: limits.default_priority must be at most 9 (got 12)",
            source.path.display()
        )
    );
}

#[test]
fn a_syntax_error_names_the_file_and_line_without_quoting_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(dir.path(), "[auth]\napi_keys = [{ name = \"a\", key = \"s3cret }]\n");
    let error = load_with_env(&source, &[]).unwrap_err();
    assert!(matches!(error, ConfigError::Parse { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.starts_with(&format!("could not parse {}: ", source.path.display())), "{text}");
    assert!(text.contains("line 2"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}

#[test]
fn a_value_of_the_wrong_type_names_the_key() {
    let error = error_of("[limits]\nmax_enqueue_batch = \"many\"\n");
    assert!(error.starts_with("invalid configuration in <inline config>: limits.max_enqueue_batch: "), "{error}");
    let error = error_of("[storage]\npersist_mode = \"sometimes\"\n");
    assert!(error.contains("storage.persist_mode"), "{error}");
    let error = error_of("[[queues]]\nname = \"a\"\ndefault_priority = -1\n");
    assert!(error.contains("queues[0].default_priority"), "{error}");
}

#[test]
fn a_malformed_key_entry_does_not_echo_the_key() {
    for toml in [
        "[auth]\napi_keys = \"s3cret\"\n",
        "[auth]\napi_keys = [\"s3cret\"]\n",
        "[admin]\nkeys = [{ name = \"a\", key = \"s3cret\", role = \"s3cret\" }]\n",
    ] {
        let error = error_of(toml);
        assert!(!error.contains("s3cret"), "{error}");
        assert!(error.contains("api_keys") || error.contains("admin.keys"), "{error}");
    }
}

#[test]
fn unknown_key_in_admin_is_rejected() {
    let error = error_of("[admin]\nenabeld = false\n");
    assert!(error.starts_with("invalid configuration in <inline config>: admin.enabeld is not a known key"), "{error}");
}

#[test]
fn unknown_key_in_a_key_entry_is_rejected() {
    let error = error_of("[auth]\napi_keys = [{ name = \"a\", key = \"b\", role = \"admin\" }]\n");
    assert!(error.contains("auth.api_keys[0].role is not a known key"), "{error}");
    let error = error_of("[admin]\nkeys = [{ name = \"a\", key = \"b\", scope = \"all\" }]\n");
    assert!(error.contains("admin.keys[0].scope is not a known key"), "{error}");
}

#[test]
fn an_unknown_key_in_any_section_is_an_error() {
    for (text, key) in [
        ("top = 1\n", "top"),
        ("[server]\nthreads = 4\n", "server.threads"),
        ("[auth]\nmode = \"x\"\n", "auth.mode"),
        ("[limits]\nfoo = 1\n", "limits.foo"),
        ("[storage]\nengine = \"fjall\"\n", "storage.engine"),
        ("[logging]\ncolor = true\n", "logging.color"),
        ("[tracing]\nx = 1\n", "tracing.x"),
        ("[metrics]\ny = 2\n", "metrics.y"),
        ("[future]\nz = 3\n", "future"),
        ("[[queues]]\nname = \"a\"\nweight = 3\n", "queues[0].weight"),
    ] {
        let error = error_of(text);
        assert!(error.contains(&format!("{key} is not a known key")), "{text}: {error}");
    }
}

#[test]
fn api_keys_tristate() {
    assert_eq!(load_str("", &[]).unwrap().auth.api_keys, None);
    assert_eq!(load_str("[auth]\napi_keys = []\n", &[]).unwrap().auth.api_keys, Some(vec![]));
    let listed = load_str("[auth]\napi_keys = [{ name = \"w\", key = \"k1\" }]\n", &[]).unwrap().auth.api_keys;
    assert_eq!(listed, Some(vec![ApiKey { name: "w".into(), key: "k1".into() }]));
}

#[test]
fn admin_key_role_defaults_to_admin_and_must_be_known() {
    let c = load_str("[admin]\nkeys = [{ name = \"a\", key = \"b\" }]\n", &[]).unwrap();
    assert_eq!(c.admin.keys.unwrap()[0].role, AdminRole::Admin);
    let error = error_of("[admin]\nkeys = [{ name = \"a\", key = \"b\", role = \"root\" }]\n");
    assert!(error.contains("admin.keys[0].role"), "{error}");
}

#[test]
fn an_env_list_with_a_bad_entry_is_reported_not_taken_as_a_string() {
    let error = load_str("", &env(&[("SEPP_AUTH__API_KEYS", r#"[{name="a"}]"#)])).unwrap_err().to_string();
    assert_eq!(
        error,
        "invalid configuration in environment variable SEPP_AUTH__API_KEYS: \
         auth.api_keys[0].key is required"
    );
}

#[test]
fn type_errors_use_the_words_of_a_toml_file() {
    let error = error_of("[[queues]]\nname = \"a\"\ndefault_priority = 300\n");
    assert!(
        error.ends_with("queues[0].default_priority: invalid value: integer `300`, expected an integer from 0 to 255"),
        "{error}"
    );
    let error = error_of("server = 5\n");
    assert!(error.ends_with("server: invalid type: integer `5`, expected a table"), "{error}");
}

#[test]
fn unknown_keys_are_errors_naming_the_file_and_the_nearest_key() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(dir.path(), "[server]\nlisten_adr = \"127.0.0.1:6001\"\n[servr]\nstrict_queues = true\n");
    let file = source.path.display().to_string();
    let error = load_with_env(&source, &[]).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "invalid configuration in {file}: server.listen_adr is not a known key; did you mean server.listen_addr?"
        )
    );
    let errors: Vec<String> =
        sepp_config::check_with_env(&source, &[]).errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            format!(
                "invalid configuration in {file}: server.listen_adr is not a known key; did you mean server.listen_addr?"
            ),
            format!("invalid configuration in {file}: servr is not a known key; did you mean server?"),
        ]
    );
}

#[test]
fn an_unknown_key_from_the_environment_names_its_variable() {
    let dir = tempfile::tempdir().unwrap();
    let source = ConfigSource { path: dir.path().join("sepp.toml"), explicit: false };
    let error = load_with_env(
        &source,
        &env(&[("SEPP_STORAGE__PERSIST_MOD", "buffer"), ("SEPP_BIN", "/usr/bin/sepp"), ("SEPP_ADMIN_KEY", "k")]),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "invalid configuration in environment variable SEPP_STORAGE__PERSIST_MOD: storage.persist_mod is not a known key; did you mean storage.persist_mode?"
    );
    // Variables without a section are other programs' settings.
    assert!(load_with_env(&source, &env(&[("SEPP_BIN", "/usr/bin/sepp"), ("SEPP_ADMIN_KEY", "k")])).is_ok());
}

#[test]
fn a_host_name_in_a_listen_address_is_resolved_at_load() {
    let config = sepp_config::load_str("[server]\nlisten_addr = \"localhost:6001\"\n", &[]).unwrap();
    assert!(config.server.listen_addr.ip().is_loopback(), "{}", config.server.listen_addr);
    assert_eq!(config.server.listen_addr.port(), 6001);
    let error = sepp_config::load_str("[admin]\nlisten_addr = \"localhost\"\n", &[]).unwrap_err().to_string();
    assert!(error.contains("admin.listen_addr") && error.contains("give an IP address and port"), "{error}");
}

#[test]
fn a_check_reports_every_unknown_key_and_the_first_error_of_each_part() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(
        dir.path(),
        "[limits]\ndefault_priority = 12\nmax_reserve_bach = 3\n[storage]\nsweep_limit = 0\n[[queues]]\nname = \"a/b\"\n",
    );
    let report = sepp_config::check_with_env(&source, &[]);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].contains("did you mean limits.max_reserve_batch?"), "{errors:?}");
    assert!(errors[1].contains("limits.default_priority"), "{errors:?}");
    assert!(errors[2].contains("storage.sweep_limit"), "{errors:?}");
    assert!(errors[3].contains("queues[0].name"), "{errors:?}");
}

#[test]
fn a_check_of_a_file_that_does_not_parse_has_that_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(dir.path(), "[server\n");
    let report = sepp_config::check_with_env(&source, &[]);
    assert_eq!(report.errors.len(), 1);
    assert!(matches!(report.errors[0], ConfigError::Parse { .. }), "{:?}", report.errors);
}

#[test]
fn a_bad_global_limit_is_reported_once_however_many_queues_inherit_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_with(
        dir.path(),
        "[limits]\nretry_delay_ms = 10\nretry_delay_max_ms = 5\n[[queues]]\nname = \"a\"\n[[queues]]\nname = \"b\"\nretry_delay_ms = 9\n",
    );
    let errors: Vec<String> =
        sepp_config::check_with_env(&source, &[]).errors.iter().map(ToString::to_string).collect();
    // The globals' problem once, and queue b's own (its override is above the inherited cap).
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("limits.retry_delay_ms") && !errors[0].contains("queues"), "{errors:?}");
    assert!(errors[1].contains("queues.b.retry_delay_ms"), "{errors:?}");
}
