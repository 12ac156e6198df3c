//! Every key the configuration knows, and the report of the keys a file or the environment sets
//! that it does not know.
//!
//! The loader refuses unknown keys (a typo such as `listen_adr` would otherwise leave the
//! server on a default): [`unknown_keys`] lists each one with the closest known key as a
//! suggestion. Keys inside `[admin]`, `[cluster]` and key entries are not reported here: there
//! an unknown key is an error of the typed load, as in 0.1.

use toml::Value;

/// The sections and their keys. `[[queues]]`, `auth.api_keys` and `admin.keys` are arrays of
/// tables: their entries' keys are listed as `queues[].name`, `auth.api_keys[].key`, ...
const SECTIONS: &[(&str, &[&str])] = &[
    (
        "server",
        &[
            "listen_addr",
            "db_path",
            "tls_cert_path",
            "tls_key_path",
            "strict_queues",
            "max_connections",
            "handshake_timeout_ms",
        ],
    ),
    ("auth", &["api_keys"]),
    (
        "limits",
        &[
            "max_lease_duration_ms",
            "default_max_attempts",
            "max_attempts_ceiling",
            "default_priority",
            "retry_delay_ms",
            "retry_backoff",
            "retry_delay_max_ms",
            "max_reserve_batch",
            "max_reserve_queues",
            "max_wait_timeout_ms",
            "max_enqueue_batch",
            "max_queue_depth",
            "max_payload_bytes",
            "max_message_bytes",
            "max_custom_entries",
            "max_custom_total_bytes",
            "max_custom_key_bytes",
            "max_queue_name_bytes",
            "max_job_type_bytes",
            "max_idempotency_key_bytes",
            "max_schedule_horizon_ms",
            "allowed_encodings",
        ],
    ),
    (
        "storage",
        &[
            "persist_mode",
            "sweep_interval_ms",
            "sweep_limit",
            "dedup_window_ms",
            "dead_letter_retention_ms",
            "command_queue_capacity",
            "cache_size_bytes",
            "max_journaling_size_bytes",
            "max_cached_files",
            "worker_threads",
        ],
    ),
    ("logging", &["level", "format"]),
    ("tracing", &["enabled", "otlp_endpoint", "service_name", "sample_ratio"]),
    (
        "metrics",
        &[
            "enabled",
            "otlp_endpoint",
            "export_interval_ms",
            "prometheus_enabled",
            "prometheus_listen_addr",
            "prometheus_max_connections",
        ],
    ),
    (
        "admin",
        &[
            "enabled",
            "listen_addr",
            "tls_cert_path",
            "tls_key_path",
            "keys",
            "session_ttl_ms",
            "stats_history_ms",
            "stats_history_bytes",
            "allowed_hosts",
            "max_connections",
            "handshake_timeout_ms",
            "idle_timeout_ms",
        ],
    ),
    (
        "cluster",
        &[
            "node_id",
            "listen_addr",
            "advertise_addr",
            "api_addr",
            "peers",
            "heartbeat_interval_ms",
            "election_timeout_ms",
            "snapshot_after_entries",
            "max_connections",
            "forward_calls",
        ],
    ),
    (
        "queues[]",
        &[
            "name",
            "max_lease_duration_ms",
            "default_max_attempts",
            "max_attempts_ceiling",
            "default_priority",
            "retry_delay_ms",
            "retry_backoff",
            "retry_delay_max_ms",
            "max_payload_bytes",
            "allowed_encodings",
            "allowed_job_types",
            "max_schedule_horizon_ms",
            "max_custom_entries",
            "max_custom_total_bytes",
            "max_custom_key_bytes",
            "dedup_window_ms",
            "max_queue_depth",
            "max_in_flight",
            "rate_limit",
            "rate_period_ms",
            "rate_burst",
            "limit_key",
            "key_max_in_flight",
            "key_rate_limit",
            "key_rate_period_ms",
            "key_rate_burst",
            "key_overrides",
        ],
    ),
];

/// The per-queue fields of a `[[queues]]` entry (every key but `name`), in the file's order: what
/// the admin API lets an operator set on a queue.
pub fn queue_override_fields() -> &'static [&'static str] {
    let (_, keys) = SECTIONS.iter().find(|(section, _)| *section == "queues[]").expect("queues[] is listed");
    debug_assert_eq!(keys[0], "name");
    &keys[1..]
}

/// The keys of the entries of the arrays of tables that hold key material.
const ENTRY_KEYS: &[(&str, &[&str])] = &[
    ("auth.api_keys[]", &["name", "key"]),
    ("admin.keys[]", &["name", "key", "role"]),
    ("cluster.peers[]", &["id", "raft_addr", "api_addr"]),
];

/// Every key of the configuration, dotted: `server.listen_addr`, `queues[].name`,
/// `auth.api_keys[].key`. Sections themselves are not listed.
pub fn known_keys() -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        SECTIONS
            .iter()
            .chain(ENTRY_KEYS)
            .flat_map(|(section, keys)| keys.iter().map(move |key| &*format!("{section}.{key}").leak()))
            .collect()
    })
}

/// A key that was set but that the configuration does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownKey {
    /// As it was written, with entry indexes: `server.listen_adr`, `queues[2].max_dept`.
    pub key: String,
    /// The closest known key, spelled like `key` (same entry index), if one is close enough.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is not a known key", self.key)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, "; did you mean {suggestion}?")?;
        }
        Ok(())
    }
}

/// The unknown keys of a parsed document, in document order (TOML tables are sorted by key).
pub(crate) fn unknown_keys(document: &toml::Table) -> Vec<UnknownKey> {
    let mut found = Vec::new();
    for (name, value) in document {
        match SECTIONS.iter().find(|(section, _)| section.trim_end_matches("[]") == name) {
            None => found.push(unknown(name.clone(), "", name, &section_names())),
            Some((section, keys)) if section.ends_with("[]") => {
                for (index, entry) in value.as_array().into_iter().flatten().enumerate() {
                    let prefix = format!("{name}[{index}].");
                    check_table(entry, &prefix, keys, &mut found);
                }
            }
            Some((_, keys)) => check_table(value, &format!("{name}."), keys, &mut found),
        }
    }
    found
}

/// Reports the keys of `value` (when it is a table) that are not among `keys`. `[admin]` and
/// `[cluster]` are checked by the typed load instead, which refuses their unknown keys.
fn check_table(value: &Value, prefix: &str, keys: &[&str], found: &mut Vec<UnknownKey>) {
    if prefix == "admin." || prefix == "cluster." {
        return;
    }
    for name in value.as_table().into_iter().flat_map(|table| table.keys()) {
        if !keys.contains(&name.as_str()) {
            found.push(unknown(format!("{prefix}{name}"), prefix, name, keys));
        }
    }
}

fn section_names() -> Vec<&'static str> {
    SECTIONS.iter().map(|(section, _)| section.trim_end_matches("[]")).collect()
}

fn unknown(key: String, prefix: &str, name: &str, candidates: &[&str]) -> UnknownKey {
    let suggestion = closest(name, candidates).map(|close| format!("{prefix}{close}"));
    UnknownKey { key, suggestion }
}

/// The candidate nearest to `name`, if it is near enough to be a likely typo: at most a third
/// of the name's characters differ (and at least one edit is always allowed), or one is the
/// other with a prefix or suffix dropped (`persist_mod` / `persist_mode`).
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    let allowed = (name.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(&name, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= allowed || is_affix(&name, candidate))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn is_affix(name: &str, candidate: &str) -> bool {
    name.len() >= 4 && (candidate.starts_with(name) || candidate.ends_with(name) || name.starts_with(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown_in(text: &str) -> Vec<String> {
        unknown_keys(&toml::from_str(text).unwrap()).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_queue_override_fields_are_the_entry_keys_but_its_name() {
        let fields = queue_override_fields();
        assert_eq!(fields.len(), 26);
        assert!(!fields.contains(&"name"));
        assert!(fields.iter().all(|field| known_keys().contains(&&*format!("queues[].{field}"))));
        assert!(fields.contains(&"max_in_flight") && fields.contains(&"max_queue_depth"));
    }

    #[test]
    fn a_typo_in_a_section_names_the_nearest_key() {
        assert_eq!(
            unknown_in("[server]\nlisten_adr = \"127.0.0.1:6001\"\n"),
            ["server.listen_adr is not a known key; did you mean server.listen_addr?"]
        );
        assert_eq!(
            unknown_in("[storage]\npersist_mod = \"buffer\"\n"),
            ["storage.persist_mod is not a known key; did you mean storage.persist_mode?"]
        );
    }

    #[test]
    fn a_typo_in_a_section_name_names_the_nearest_section() {
        assert_eq!(unknown_in("[servr]\nlisten_addr = \"x\"\n"), ["servr is not a known key; did you mean server?"]);
    }

    #[test]
    fn queue_entries_are_checked_with_their_index() {
        assert_eq!(
            unknown_in("[[queues]]\nname = \"a\"\n[[queues]]\nname = \"b\"\nmax_queue_dept = 3\n"),
            ["queues[1].max_queue_dept is not a known key; did you mean queues[1].max_queue_depth?"]
        );
    }

    #[test]
    fn a_key_like_no_other_gets_no_suggestion() {
        assert_eq!(unknown_in("[limits]\nflux_capacitor = 1\n"), ["limits.flux_capacitor is not a known key"]);
    }

    #[test]
    fn known_keys_and_admin_keys_are_not_reported() {
        assert!(unknown_in("[server]\nstrict_queues = true\n[admin]\nwhatever = 1\n").is_empty());
    }

    #[test]
    fn known_keys_are_dotted_with_entry_markers() {
        let keys = known_keys();
        for key in ["server.listen_addr", "queues[].name", "auth.api_keys[].key", "admin.keys[].role"] {
            assert!(keys.contains(&key), "{key}");
        }
    }
}
