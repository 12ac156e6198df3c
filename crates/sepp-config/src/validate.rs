//! The validation rules of docs/configuration.md#keys: ranges, required pairs, uniqueness, and the cross-field rules
//! that every queue's merged limits must pass as well as the globals.
//!
//! This module owns the rules and their wording. It reports the first problem of each part of the
//! file, naming the key(s) involved as paths; `load` turns those paths into "which file or environment variable
//! set this". It never prints key material.

use std::collections::HashMap;

use sepp_core::QueueLimits;

use crate::policy::{global_limits, merged_limits, overrides};
use crate::schema::{AdminConfig, AuthConfig, ClusterConfig, Config, LimitsConfig, QueueConfig, ServerConfig};

/// One step of a key path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A key as a path into the TOML document, e.g. `queues[2].default_priority`.
pub(crate) type KeyPath = Vec<Seg>;

/// What is wrong, and which keys it involves.
#[derive(Debug)]
pub(crate) struct Problem {
    pub keys: Vec<KeyPath>,
    pub message: String,
}

type Check = Result<(), Problem>;

/// A key as shown to the operator, with the path used to find out who set it.
#[derive(Clone, Debug)]
struct Key {
    label: String,
    path: KeyPath,
}

fn key(section: &str, field: &str) -> Key {
    Key { label: format!("{section}.{field}"), path: vec![Seg::Key(section.into()), Seg::Key(field.into())] }
}

fn entry_key(section: &str, list: &str, index: usize, field: &str) -> Key {
    Key {
        label: format!("{section}.{list}[{index}].{field}"),
        path: vec![Seg::Key(section.into()), Seg::Key(list.into()), Seg::Index(index), Seg::Key(field.into())],
    }
}

fn problem(keys: &[&Key], message: String) -> Problem {
    Problem { keys: keys.iter().map(|k| k.path.clone()).collect(), message }
}

fn at_least(k: &Key, value: u64, min: u64) -> Check {
    if value < min {
        return Err(problem(&[k], format!("{} must be at least {min} (got {value})", k.label)));
    }
    Ok(())
}

fn between(k: &Key, value: u64, min: u64, max: u64) -> Check {
    if !(min..=max).contains(&value) {
        return Err(problem(&[k], format!("{} must be between {min} and {max} (got {value})", k.label)));
    }
    Ok(())
}

fn not_above(small: &Key, small_value: u64, big: &Key, big_value: u64) -> Check {
    if small_value > big_value {
        return Err(problem(
            &[small, big],
            format!("{} ({small_value}) must not exceed {} ({big_value})", small.label, big.label),
        ));
    }
    Ok(())
}

fn non_empty(k: &Key, value: &str) -> Check {
    if value.is_empty() {
        return Err(problem(&[k], format!("{} must not be empty", k.label)));
    }
    Ok(())
}

/// Checks the whole configuration: the first problem of each part (each section, each queue
/// entry), so that one look shows everything to fix. Empty when the configuration is valid.
pub(crate) fn problems(config: &Config) -> Vec<Problem> {
    let globals = global_limits(&config.limits, config.storage.dedup_window_ms);
    let mut checks = vec![
        server(&config.server),
        auth(&config.auth),
        server_wide_limits(&config.limits)
            .and_then(|()| queue_limits(&globals, config.limits.max_message_bytes, &|field| global_key(field))),
        storage(config),
        observability(config),
        admin(&config.admin),
        cluster(&config.cluster, &config.server),
    ];
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, queue) in config.queues.iter().enumerate() {
        checks.push(queue_entry(config, &globals, index, queue, &mut seen));
    }
    checks.into_iter().filter_map(Result::err).collect()
}

fn server(server: &ServerConfig) -> Check {
    non_empty(&key("server", "db_path"), &server.db_path.to_string_lossy())?;
    at_least(&key("server", "max_connections"), server.max_connections, 1)?;
    between(&key("server", "handshake_timeout_ms"), server.handshake_timeout_ms, 1, 3_600_000)?;
    tls_pair("server", server.tls_cert_path.as_deref(), server.tls_key_path.as_deref())
}

fn tls_pair(section: &str, cert: Option<&std::path::Path>, tls_key: Option<&std::path::Path>) -> Check {
    let cert_key = key(section, "tls_cert_path");
    let key_key = key(section, "tls_key_path");
    match (cert, tls_key) {
        (Some(_), None) | (None, Some(_)) => {
            let (set, unset) = if cert.is_some() { (&cert_key, &key_key) } else { (&key_key, &cert_key) };
            Err(problem(
                &[set],
                format!(
                    "{} and {} must be set together ({} is set, {} is not)",
                    cert_key.label, key_key.label, set.label, unset.label
                ),
            ))
        }
        (Some(cert), Some(tls_key)) => {
            non_empty(&cert_key, &cert.to_string_lossy())?;
            non_empty(&key_key, &tls_key.to_string_lossy())
        }
        (None, None) => Ok(()),
    }
}

/// Names non-empty and unique, key material non-empty and unique; shared by API and admin keys.
fn key_list<'a>(
    section: &str,
    list: &str,
    entries: impl Iterator<Item = (&'a str, &'a str)>,
    key_check: impl Fn(&Key, &str) -> Check,
) -> Check {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut materials: HashMap<&str, usize> = HashMap::new();
    for (index, (name, material)) in entries.enumerate() {
        let name_key = entry_key(section, list, index, "name");
        let material_key = entry_key(section, list, index, "key");
        non_empty(&name_key, name)?;
        non_empty(&material_key, material)?;
        key_check(&material_key, material)?;
        if let Some(first) = names.insert(name, index) {
            return Err(problem(
                &[&name_key],
                format!(
                    "{} {name:?} is already used by {section}.{list}[{first}]; names must be unique",
                    name_key.label
                ),
            ));
        }
        if let Some(first) = materials.insert(material, index) {
            return Err(problem(
                &[&material_key],
                format!("{} is the same key as {section}.{list}[{first}].key; keys must be unique", material_key.label),
            ));
        }
    }
    Ok(())
}

fn auth(auth: &AuthConfig) -> Check {
    let Some(api_keys) = &auth.api_keys else {
        return Ok(());
    };
    let entries = api_keys.iter().map(|k| (k.name.as_str(), k.key.as_str()));
    key_list("auth", "api_keys", entries, |k, material| {
        if material.bytes().all(|b| (0x21..=0x7E).contains(&b)) {
            return Ok(());
        }
        Err(problem(&[k], format!("{} must contain only visible ASCII characters (0x21 to 0x7E, no spaces)", k.label)))
    })
}

fn server_wide_limits(limits: &LimitsConfig) -> Check {
    let at_least_one = [
        ("max_reserve_batch", u64::from(limits.max_reserve_batch)),
        ("max_reserve_queues", u64::from(limits.max_reserve_queues)),
        ("max_wait_timeout_ms", limits.max_wait_timeout_ms),
        ("max_enqueue_batch", u64::from(limits.max_enqueue_batch)),
        ("max_message_bytes", limits.max_message_bytes),
        ("max_job_type_bytes", u64::from(limits.max_job_type_bytes)),
        ("max_idempotency_key_bytes", u64::from(limits.max_idempotency_key_bytes)),
    ];
    for (field, value) in at_least_one {
        at_least(&key("limits", field), value, 1)?;
    }
    between(&key("limits", "max_queue_name_bytes"), u64::from(limits.max_queue_name_bytes), 1, 65_535)
}

/// The global key of an overridable field.
fn global_key(field: &str) -> Key {
    match field {
        "dedup_window_ms" => key("storage", field),
        _ => key("limits", field),
    }
}

/// The rules every set of effective queue limits obeys. `key_of` names the key a field's value
/// came from (a queue's override or the global), so errors point at what to edit.
fn queue_limits(limits: &QueueLimits, max_message_bytes: u64, key_of: &dyn Fn(&str) -> Key) -> Check {
    let at_least_one = [
        ("max_lease_duration_ms", limits.max_lease_duration_ms),
        ("max_attempts_ceiling", u64::from(limits.max_attempts_ceiling)),
        ("default_max_attempts", u64::from(limits.default_max_attempts)),
        ("retry_delay_max_ms", limits.retry_delay_max_ms),
        ("max_payload_bytes", limits.max_payload_bytes),
        ("max_schedule_horizon_ms", limits.max_schedule_horizon_ms),
        ("max_custom_entries", u64::from(limits.max_custom_entries)),
        ("max_custom_total_bytes", limits.max_custom_total_bytes),
        ("max_custom_key_bytes", u64::from(limits.max_custom_key_bytes)),
        ("dedup_window_ms", limits.dedup_window_ms),
    ];
    for (field, value) in at_least_one {
        at_least(&key_of(field), value, 1)?;
    }
    let priority = key_of("default_priority");
    if limits.default_priority > 9 {
        return Err(problem(
            &[&priority],
            format!("{} must be at most 9 (got {})", priority.label, limits.default_priority),
        ));
    }
    not_above(
        &key_of("default_max_attempts"),
        u64::from(limits.default_max_attempts),
        &key_of("max_attempts_ceiling"),
        u64::from(limits.max_attempts_ceiling),
    )?;
    not_above(
        &key_of("retry_delay_ms"),
        limits.retry_delay_ms,
        &key_of("retry_delay_max_ms"),
        limits.retry_delay_max_ms,
    )?;
    not_above(
        &key_of("max_payload_bytes"),
        limits.max_payload_bytes,
        &key("limits", "max_message_bytes"),
        max_message_bytes,
    )?;
    if let Some(encodings) = &limits.allowed_encodings {
        let list = key_of("allowed_encodings");
        if encodings.iter().any(String::is_empty) {
            return Err(problem(&[&list], format!("{} must not contain an empty encoding", list.label)));
        }
    }
    Ok(())
}

fn storage(config: &Config) -> Check {
    let storage = &config.storage;
    at_least(&key("storage", "sweep_interval_ms"), storage.sweep_interval_ms, 1)?;
    at_least(&key("storage", "sweep_limit"), storage.sweep_limit, 1)?;
    at_least(&key("storage", "command_queue_capacity"), storage.command_queue_capacity as u64, 1)?;
    let engine = [
        ("cache_size_bytes", storage.cache_size_bytes, 1),
        ("max_journaling_size_bytes", storage.max_journaling_size_bytes, 64 * 1024 * 1024),
        ("max_cached_files", storage.max_cached_files, 10),
        ("worker_threads", storage.worker_threads, 1),
    ];
    for (field, value, min) in engine {
        if let Some(value) = value {
            at_least(&key("storage", field), value, min)?;
        }
    }
    Ok(())
}

fn observability(config: &Config) -> Check {
    let tracing = &config.tracing;
    if tracing.enabled {
        non_empty(&key("tracing", "otlp_endpoint"), &tracing.otlp_endpoint)?;
        non_empty(&key("tracing", "service_name"), &tracing.service_name)?;
    }
    if !(0.0..=1.0).contains(&tracing.sample_ratio) {
        let k = key("tracing", "sample_ratio");
        return Err(problem(&[&k], format!("{} must be between 0 and 1 (got {})", k.label, tracing.sample_ratio)));
    }
    let metrics = &config.metrics;
    if metrics.enabled {
        non_empty(&key("metrics", "otlp_endpoint"), &metrics.otlp_endpoint)?;
        at_least(&key("metrics", "export_interval_ms"), metrics.export_interval_ms, 1)?;
    }
    at_least(&key("metrics", "prometheus_max_connections"), metrics.prometheus_max_connections, 1)?;
    Ok(())
}

/// A `host:port` other machines can dial: a port, and a host that is not a wildcard.
fn dialable(k: &Key, addr: &str) -> Check {
    let port = addr.rsplit_once(':').and_then(|(host, port)| (!host.is_empty()).then_some(port));
    if port.is_none_or(|port| port.parse::<u16>().is_err()) {
        return Err(problem(&[k], format!("{} must be a host:port address (got {addr:?})", k.label)));
    }
    if let Ok(socket) = addr.parse::<std::net::SocketAddr>()
        && socket.ip().is_unspecified()
    {
        return Err(problem(&[k], format!("{} must name this node's own address, not {addr} (a wildcard)", k.label)));
    }
    Ok(())
}

/// The address the others are told (when not given, the listen address, which must then not
/// be a wildcard).
fn advertised(k: &Key, given: Option<&str>, listen: &Key, listen_addr: std::net::SocketAddr) -> Check {
    match given {
        Some(addr) => dialable(k, addr),
        None if listen_addr.ip().is_unspecified() => Err(problem(
            &[k, listen],
            format!("{} must be set when {} is a wildcard ({listen_addr})", k.label, listen.label),
        )),
        None => Ok(()),
    }
}

fn cluster(cluster: &ClusterConfig, server: &ServerConfig) -> Check {
    at_least(&key("cluster", "heartbeat_interval_ms"), cluster.heartbeat_interval_ms, 1)?;
    let election = key("cluster", "election_timeout_ms");
    if cluster.election_timeout_ms <= cluster.heartbeat_interval_ms {
        let heartbeat = key("cluster", "heartbeat_interval_ms");
        return Err(problem(
            &[&election, &heartbeat],
            format!(
                "{} ({}) must be longer than {} ({})",
                election.label, cluster.election_timeout_ms, heartbeat.label, cluster.heartbeat_interval_ms
            ),
        ));
    }
    at_least(&key("cluster", "snapshot_after_entries"), cluster.snapshot_after_entries, 1)?;
    at_least(&key("cluster", "max_connections"), cluster.max_connections, 1)?;
    let Some(node_id) = cluster.node_id else {
        return Ok(());
    };
    at_least(&key("cluster", "node_id"), node_id, 1)?;
    let listen = key("cluster", "listen_addr");
    advertised(&key("cluster", "advertise_addr"), cluster.advertise_addr.as_deref(), &listen, cluster.listen_addr)?;
    let server_listen = key("server", "listen_addr");
    advertised(&key("cluster", "api_addr"), cluster.api_addr.as_deref(), &server_listen, server.listen_addr)?;
    if cluster.listen_addr == server.listen_addr && server.listen_addr.port() != 0 {
        return Err(problem(
            &[&listen, &server_listen],
            format!("{} must differ from {} ({})", listen.label, server_listen.label, server.listen_addr),
        ));
    }
    let mut ids: HashMap<u64, usize> = HashMap::new();
    for (index, peer) in cluster.peers.iter().enumerate() {
        let id = entry_key("cluster", "peers", index, "id");
        at_least(&id, peer.id, 1)?;
        if peer.id == node_id {
            return Err(problem(
                &[&id],
                format!("{} is this node's own id ({node_id}); list only the others", id.label),
            ));
        }
        if let Some(first) = ids.insert(peer.id, index) {
            return Err(problem(
                &[&id],
                format!("{} {} is already used by cluster.peers[{first}]; ids must be unique", id.label, peer.id),
            ));
        }
        dialable(&entry_key("cluster", "peers", index, "raft_addr"), &peer.raft_addr)?;
        dialable(&entry_key("cluster", "peers", index, "api_addr"), &peer.api_addr)?;
    }
    Ok(())
}

fn admin(admin: &AdminConfig) -> Check {
    tls_pair("admin", admin.tls_cert_path.as_deref(), admin.tls_key_path.as_deref())?;
    if let Some(keys) = &admin.keys {
        let entries = keys.iter().map(|k| (k.name.as_str(), k.key.as_str()));
        key_list("admin", "keys", entries, |_, _| Ok(()))?;
    }
    if admin.enabled && admin.keys.is_none() && !admin.listen_addr.ip().is_loopback() {
        let listen = key("admin", "listen_addr");
        return Err(problem(
            &[&listen],
            format!(
                "{} {} is not a loopback address, so admin.keys must be set \
                 (or bind to 127.0.0.1, or set admin.enabled = false)",
                listen.label, admin.listen_addr
            ),
        ));
    }
    for (index, entry) in admin.allowed_hosts.iter().enumerate() {
        if crate::hosts::HostPort::parse(entry).is_none() {
            let k = Key {
                label: format!("admin.allowed_hosts[{index}]"),
                path: vec![Seg::Key("admin".into()), Seg::Key("allowed_hosts".into()), Seg::Index(index)],
            };
            return Err(problem(
                &[&k],
                format!(
                    "{} must be a host name or address with an optional port, like \"sepp.example.com\", \
                     \"sepp.example.com:9465\" or \"[2001:db8::5]:9465\" (got {:?})",
                    k.label,
                    entry.chars().take(80).collect::<String>()
                ),
            ));
        }
    }
    between(&key("admin", "session_ttl_ms"), admin.session_ttl_ms, 60_000, 31_536_000_000)?;
    between(&key("admin", "stats_history_ms"), admin.stats_history_ms, 60_000, 21_600_000)?;
    between(&key("admin", "stats_history_bytes"), admin.stats_history_bytes, 1 << 20, 1 << 30)?;
    at_least(&key("admin", "max_connections"), admin.max_connections, 1)?;
    between(&key("admin", "handshake_timeout_ms"), admin.handshake_timeout_ms, 1, 3_600_000)?;
    between(&key("admin", "idle_timeout_ms"), admin.idle_timeout_ms, 1, 86_400_000)
}

/// Why `name` is not a valid queue name (docs/protocol.md#queue-names), if it is not. Length is a separate check.
pub(crate) fn queue_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("must not be empty")
    } else if name == "." || name == ".." {
        Some("must not be \".\" or \"..\"")
    } else if name.contains('/') {
        Some("must not contain '/'")
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    }
}

fn queue_key(index: usize, queue: &QueueConfig, field: &str) -> Key {
    let label = if queue_name_problem(&queue.name).is_none() {
        format!("queues.{}.{field}", queue.name)
    } else {
        format!("queues[{index}].{field}")
    };
    Key { label, path: vec![Seg::Key("queues".into()), Seg::Index(index), Seg::Key(field.into())] }
}

/// One `[[queues]]` entry: its name (valid, short enough, not declared before, as `seen`
/// records) and its merged limits.
fn queue_entry<'a>(
    config: &Config,
    globals: &QueueLimits,
    index: usize,
    queue: &'a QueueConfig,
    seen: &mut HashMap<&'a str, usize>,
) -> Check {
    let name_key = Key {
        label: format!("queues[{index}].name"),
        path: vec![Seg::Key("queues".into()), Seg::Index(index), Seg::Key("name".into())],
    };
    if let Some(why) = queue_name_problem(&queue.name) {
        return Err(problem(
            &[&name_key],
            format!("{} {:?} is not a valid queue name: it {why}", name_key.label, queue.name),
        ));
    }
    let max_name_bytes = config.limits.max_queue_name_bytes;
    if queue.name.len() > max_name_bytes as usize {
        let limit = key("limits", "max_queue_name_bytes");
        return Err(problem(
            &[&name_key, &limit],
            format!(
                "{} is {} bytes long, more than {} ({max_name_bytes})",
                name_key.label,
                queue.name.len(),
                limit.label
            ),
        ));
    }
    if let Some(first) = seen.insert(&queue.name, index) {
        return Err(problem(
            &[&name_key],
            format!(
                "{} {:?} is already declared by queues[{first}]; queue names must be unique",
                name_key.label, queue.name
            ),
        ));
    }
    if let Some(types) = &queue.allowed_job_types {
        let k = queue_key(index, queue, "allowed_job_types");
        if types.is_empty() {
            return Err(problem(
                &[&k],
                format!("{} must list at least one job type (leave it out to accept any)", k.label),
            ));
        }
        if types.iter().any(String::is_empty) {
            return Err(problem(&[&k], format!("{} must not contain an empty job type", k.label)));
        }
    }
    if queue.max_in_flight == Some(0) {
        let k = queue_key(index, queue, "max_in_flight");
        return Err(problem(
            &[&k],
            format!("{} must be at least 1 (leave it out for no limit; to stop a queue, pause it)", k.label),
        ));
    }
    for (field, zero) in [
        ("rate_limit", queue.rate_limit == Some(0)),
        ("rate_period_ms", queue.rate_period_ms == Some(0)),
        ("rate_burst", queue.rate_burst == Some(0)),
    ] {
        if zero {
            let k = queue_key(index, queue, field);
            return Err(problem(&[&k], format!("{} must be at least 1", k.label)));
        }
    }
    if queue.rate_limit.is_none() {
        for (field, set) in
            [("rate_period_ms", queue.rate_period_ms.is_some()), ("rate_burst", queue.rate_burst.is_some())]
        {
            if set {
                let k = queue_key(index, queue, field);
                return Err(problem(&[&k], format!("{} needs rate_limit in the same queue", k.label)));
            }
        }
    }
    key_limit_problem(index, queue)?;
    let merged = merged_limits(globals, queue);
    let key_of = |field: &str| {
        if overrides(queue, field) { queue_key(index, queue, field) } else { global_key(field) }
    };
    match queue_limits(&merged, config.limits.max_message_bytes, &key_of) {
        // A problem of the globals alone is the globals' (reported for `[limits]`), not this
        // queue's: the queue only inherits it.
        Err(problem)
            if problem
                .keys
                .iter()
                .all(|path| !matches!(path.first(), Some(Seg::Key(section)) if section == "queues")) =>
        {
            Ok(())
        }
        result => result,
    }
}

/// The per-key limits of one `[[queues]]` entry: named by `limit_key`, each at least 1, and
/// nothing set that has no effect.
fn key_limit_problem(index: usize, queue: &QueueConfig) -> Check {
    let k = |field: &str| queue_key(index, queue, field);
    let overrides = queue.key_overrides.as_ref();
    let Some(field) = &queue.limit_key else {
        for (field, set) in [
            ("key_max_in_flight", queue.key_max_in_flight.is_some()),
            ("key_rate_limit", queue.key_rate_limit.is_some()),
            ("key_rate_period_ms", queue.key_rate_period_ms.is_some()),
            ("key_rate_burst", queue.key_rate_burst.is_some()),
            ("key_overrides", overrides.is_some()),
        ] {
            if set {
                let k = k(field);
                return Err(problem(&[&k], format!("{} needs limit_key in the same queue", k.label)));
            }
        }
        return Ok(());
    };
    if field.is_empty() {
        let k = k("limit_key");
        return Err(problem(&[&k], format!("{} must name a custom metadata key", k.label)));
    }
    let any_override_rate = overrides.into_iter().flatten().any(|(_, custom)| custom.rate_limit.is_some());
    if queue.key_max_in_flight.is_none() && queue.key_rate_limit.is_none() && overrides.is_none_or(|o| o.is_empty()) {
        let k = k("limit_key");
        return Err(problem(
            &[&k],
            format!("{} needs key_max_in_flight, key_rate_limit or key_overrides in the same queue", k.label),
        ));
    }
    for (field, zero) in [
        ("key_max_in_flight", queue.key_max_in_flight == Some(0)),
        ("key_rate_limit", queue.key_rate_limit == Some(0)),
        ("key_rate_period_ms", queue.key_rate_period_ms == Some(0)),
        ("key_rate_burst", queue.key_rate_burst == Some(0)),
    ] {
        if zero {
            let k = k(field);
            return Err(problem(&[&k], format!("{} must be at least 1 (leave it out for no limit)", k.label)));
        }
    }
    if queue.key_rate_burst.is_some() && queue.key_rate_limit.is_none() {
        let k = k("key_rate_burst");
        return Err(problem(&[&k], format!("{} needs key_rate_limit in the same queue", k.label)));
    }
    if queue.key_rate_period_ms.is_some() && queue.key_rate_limit.is_none() && !any_override_rate {
        let k = k("key_rate_period_ms");
        return Err(problem(&[&k], format!("{} needs key_rate_limit (or an override's rate_limit)", k.label)));
    }
    for (value, custom) in overrides.into_iter().flatten() {
        let k = k("key_overrides");
        let at = format!("{}.{value:?}", k.label);
        for (name, zero) in [
            ("max_in_flight", custom.max_in_flight == Some(0)),
            ("rate_limit", custom.rate_limit == Some(0)),
            ("rate_burst", custom.rate_burst == Some(0)),
        ] {
            if zero {
                return Err(problem(&[&k], format!("{at}.{name} must be at least 1")));
            }
        }
        if custom.rate_burst.is_some() && custom.rate_limit.is_none() {
            return Err(problem(&[&k], format!("{at}.rate_burst needs rate_limit in the same override")));
        }
        if custom.max_in_flight.is_none() && custom.rate_limit.is_none() {
            return Err(problem(&[&k], format!("{at} sets no limit (max_in_flight or rate_limit)")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_follow_the_shared_validity_rule() {
        for good in ["emails", "a.b", "...", "x..y", "ünïcödé", "with space"] {
            assert_eq!(queue_name_problem(good), None, "{good}");
        }
        for bad in ["", ".", "..", "a/b", "/", "tab\there", "nl\n", "del\u{7f}", "c1\u{85}"] {
            assert!(queue_name_problem(bad).is_some(), "{bad:?}");
        }
    }
}
