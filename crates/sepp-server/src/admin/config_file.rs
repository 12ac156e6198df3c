//! Editing the config file for the admin API: etags, environment pins, and changes made to the
//! TOML document itself (`toml_edit`), so comments and layout survive a rewrite.
//!
//! Every edit runs under one lock: read the file, compare its etag (the lowercase hex SHA-256 of
//! its bytes; a missing file is the empty string), change the document, check the whole
//! candidate (file plus environment) like a startup would, write it atomically (a temporary
//! file renamed over it), then wait up to 3 s for the watcher to make the running configuration
//! equal the candidate.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sepp_config::Config;
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, MutexGuard};
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value as TomlValue};

use crate::admin::errors::{AdminError, AdminResult};
use crate::live::LiveConfig;

/// How long an edit waits for the watcher to apply it.
const APPLY_WAIT: Duration = Duration::from_secs(3);
/// The sections a `section.key` change may name.
const SECTIONS: [&str; 8] = ["server", "auth", "limits", "storage", "logging", "tracing", "metrics", "admin"];

/// The config file and its edit lock.
pub struct ConfigFile {
    pub path: PathBuf,
    /// A watcher applies changes of the file (it existed at boot).
    pub watching: bool,
    lock: Mutex<()>,
}

/// The file as read under the lock.
pub struct Current {
    pub text: String,
    pub etag: String,
}

/// What an edit did.
pub struct Written {
    /// The running configuration now equals the file.
    pub applied: bool,
    /// Restart-only fields this edit changed, which now differ from what the server runs with.
    pub requires_restart: Vec<String>,
    pub etag: String,
}

pub fn etag_of(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The process environment, as the config loader sees it.
pub fn environment() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// The config keys that `SEPP_*` variables pin (`section.field`, lowercase).
pub fn env_pinned() -> Vec<String> {
    let mut pinned: Vec<String> = environment().iter().filter_map(|(name, _)| sepp_config::env_key(name)).collect();
    pinned.sort();
    pinned.dedup();
    pinned
}

/// Whether a change to `path` would be overridden by the environment.
pub fn pinned_by(path: &str, pinned: &[String]) -> Option<String> {
    pinned
        .iter()
        .find(|pin| {
            path == pin.as_str() || path.starts_with(&format!("{pin}.")) || pin.starts_with(&format!("{path}."))
        })
        .cloned()
}

pub fn env_pinned_error(path: &str, variable_key: &str) -> AdminError {
    let variable = format!("SEPP_{}", variable_key.replace('.', "__").to_ascii_uppercase());
    AdminError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "env_pinned",
        format!("{path} is set by the environment ({variable}); change it there"),
    )
}

impl ConfigFile {
    pub fn new(path: PathBuf, watching: bool) -> ConfigFile {
        ConfigFile { path, watching, lock: Mutex::new(()) }
    }

    pub async fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().await
    }

    /// The file's text and etag (empty for a missing file).
    pub fn read(&self) -> AdminResult<Current> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(error) => return Err(AdminError::internal(format!("could not read the config file: {error}"))),
        };
        let etag = etag_of(&bytes);
        let text = String::from_utf8(bytes).map_err(|_| AdminError::invalid_config("the config file is not UTF-8"))?;
        Ok(Current { text, etag })
    }

    /// Reads the file and checks that it is still the one the caller saw (`etag`).
    pub fn read_expecting(&self, _lock: &MutexGuard<'_, ()>, etag: &str) -> AdminResult<Current> {
        let current = self.read()?;
        if current.etag != etag {
            return Err(AdminError::etag_mismatch());
        }
        Ok(current)
    }

    fn label(&self) -> String {
        self.path.display().to_string()
    }

    /// Parses the file as a document to edit.
    pub fn document(&self, current: &Current) -> AdminResult<DocumentMut> {
        current.text.parse::<DocumentMut>().map_err(|error| {
            let line = error.span().map(|span| current.text[..span.start].matches('\n').count() + 1);
            let at = line.map(|line| format!(" (line {line})")).unwrap_or_default();
            AdminError::invalid_config(format!("{} is not valid TOML{at}", self.label()))
        })
    }

    /// The configuration `text` would load as (with the environment), or 422 `invalid`.
    pub fn check(&self, text: &str) -> AdminResult<Config> {
        sepp_config::load_str_as(text, &self.label(), &environment())
            .map_err(|error| AdminError::invalid_config(error.to_string()))
    }

    /// Checks and writes `document`, then waits for the watcher to apply it.
    pub async fn write(
        &self,
        _lock: &MutexGuard<'_, ()>,
        document: &DocumentMut,
        live: &LiveConfig,
    ) -> AdminResult<Written> {
        let text = document.to_string();
        let candidate = self.check(&text)?;
        // This edit's restart-only fields: those it changes in the file that then differ from
        // what the server runs with (not those an earlier edit left pending).
        let before = self.read().ok().and_then(|current| self.check(&current.text).ok());
        let pending = live.boot.restart_only_changes(&candidate);
        let requires_restart = match before {
            Some(before) => {
                let changed = before.restart_only_changes(&candidate);
                pending.into_iter().filter(|field| changed.contains(field)).collect()
            }
            None => pending,
        };
        let mut reloads = live.subscribe_reloads();
        write_atomically(&self.path, text.as_bytes())
            .map_err(|error| AdminError::internal(format!("could not write the config file: {error}")))?;
        let applied = self.watching
            && tokio::time::timeout(APPLY_WAIT, async {
                while live.get().config != candidate {
                    if reloads.changed().await.is_err() {
                        return false;
                    }
                }
                true
            })
            .await
            .unwrap_or(false);
        Ok(Written { applied, requires_restart, etag: etag_of(text.as_bytes()) })
    }
}

/// Writes `bytes` to a sibling temporary file, syncs it, and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_else(|| "sepp.toml".into());
    let temporary = path.with_file_name(format!(".{name}.admin-{}.tmp", std::process::id()));
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)
}

/// A JSON value as TOML: a scalar or an array of scalars, and with `tables` (only a queue's
/// `key_overrides` takes one) an object of those, as an inline table.
pub fn toml_value(value: &serde_json::Value, tables: bool) -> AdminResult<TomlValue> {
    let scalar = |value: &serde_json::Value| -> Option<TomlValue> {
        match value {
            serde_json::Value::String(text) => Some(text.as_str().into()),
            serde_json::Value::Bool(flag) => Some((*flag).into()),
            serde_json::Value::Number(number) => match number.as_i64() {
                Some(int) => Some(int.into()),
                None => number.as_f64().map(Into::into),
            },
            _ => None,
        }
    };
    let invalid = || AdminError::invalid_change("value must be a string, number, bool, or array of scalars");
    match value {
        serde_json::Value::Array(items) => {
            let mut array = Array::new();
            for item in items {
                array.push(scalar(item).ok_or_else(invalid)?);
            }
            Ok(TomlValue::Array(array))
        }
        // An object (a table such as a queue's key_overrides) becomes an inline table; null
        // entries are left out.
        serde_json::Value::Object(entries) if tables => {
            let mut table = toml_edit::InlineTable::new();
            for (key, entry) in entries {
                if !entry.is_null() {
                    table.insert(key, toml_value(entry, true)?);
                }
            }
            Ok(TomlValue::InlineTable(table))
        }
        other => scalar(other).ok_or_else(invalid),
    }
}

/// What a change path names.
pub enum ChangePath<'a> {
    /// `section.key`.
    Key { section: &'a str, key: &'a str },
    /// `queues.<name>.<field>`.
    QueueField { queue: &'a str, field: &'a str },
}

/// Refuses changes to the key lists, which the config API never edits.
pub fn refuse_key_lists(path: &str) -> AdminResult<()> {
    if path == "admin.keys" || path.starts_with("admin.keys.") {
        return Err(AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "admin_keys_immutable",
            "admin.keys cannot be changed through the admin API; edit the config file on the server",
        ));
    }
    if path == "auth.api_keys" || path.starts_with("auth.api_keys.") {
        return Err(AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "api_keys_immutable",
            "auth.api_keys can only be changed through the API key endpoints",
        ));
    }
    Ok(())
}

/// Parses a change path, refusing shapes the API does not edit.
pub fn parse_path(path: &str) -> AdminResult<ChangePath<'_>> {
    refuse_key_lists(path)?;
    if let Some(rest) = path.strip_prefix("queues.")
        && let Some((queue, field)) = rest.rsplit_once('.')
        && !queue.is_empty()
    {
        if !sepp_config::queue_override_fields().contains(&field) {
            return Err(AdminError::invalid_change(format!("unknown queue override field {field:?}")));
        }
        return Ok(ChangePath::QueueField { queue, field });
    }
    match path.split_once('.') {
        Some((section, key)) if SECTIONS.contains(&section) && !key.is_empty() && !key.contains('.') => {
            Ok(ChangePath::Key { section, key })
        }
        _ => Err(AdminError::invalid_change(format!("unsupported config path {path:?}"))),
    }
}

/// Sets `section.key` to `value`, or removes it for `None`.
pub fn set_key(document: &mut DocumentMut, section: &str, key: &str, value: Option<TomlValue>) -> AdminResult<()> {
    let table = match value {
        Some(_) => {
            let item = document.entry(section).or_insert_with(|| Item::Table(Table::new()));
            item.as_table_like_mut()
        }
        None => document.get_mut(section).and_then(Item::as_table_like_mut),
    };
    let Some(table) = table else {
        return match value {
            Some(_) => Err(AdminError::invalid_change(format!("[{section}] in the config file is not a table"))),
            None => Ok(()),
        };
    };
    match value {
        Some(value) => put_value(table, key, value),
        None => {
            table.remove(key);
        }
    }
    Ok(())
}

/// Sets `key` in `table`, keeping the comments and spacing around an existing key and value.
fn put_value(table: &mut dyn toml_edit::TableLike, key: &str, mut value: TomlValue) {
    match table.get_mut(key) {
        Some(Item::Value(existing)) => {
            *value.decor_mut() = existing.decor().clone();
            *existing = value;
        }
        _ => {
            table.insert(key, Item::Value(value));
        }
    }
}

fn queues_mut(document: &mut DocumentMut) -> AdminResult<&mut ArrayOfTables> {
    let item = document.entry("queues").or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
    item.as_array_of_tables_mut().ok_or_else(|| {
        AdminError::invalid_change("the file's queues are not [[queues]] tables, which the admin API edits")
    })
}

fn is_queue(table: &Table, name: &str) -> bool {
    table.get("name").and_then(Item::as_str) == Some(name)
}

/// The `[[queues]]` entry of `queue`, added when it is missing (which declares the queue).
pub fn declare_queue<'a>(document: &'a mut DocumentMut, queue: &str) -> AdminResult<&'a mut Table> {
    let queues = queues_mut(document)?;
    let found = queues.iter().position(|table| is_queue(table, queue));
    let index = match found {
        Some(index) => index,
        None => {
            let mut table = Table::new();
            table.insert("name", toml_edit::value(queue));
            queues.push(table);
            queues.len() - 1
        }
    };
    Ok(queues.get_mut(index).expect("found or pushed"))
}

/// Sets (or with `None` removes) one override of `queue`, declaring it.
pub fn set_queue_field(
    document: &mut DocumentMut,
    queue: &str,
    field: &str,
    value: Option<TomlValue>,
) -> AdminResult<()> {
    let table = declare_queue(document, queue)?;
    match value {
        Some(value) => put_value(table, field, value),
        None => {
            table.remove(field);
        }
    }
    Ok(())
}

/// Removes `queue`'s `[[queues]]` entry; false when it had none.
pub fn remove_queue(document: &mut DocumentMut, queue: &str) -> bool {
    let Some(queues) = document.get_mut("queues").and_then(Item::as_array_of_tables_mut) else { return false };
    let before = queues.len();
    queues.retain(|table| !is_queue(table, queue));
    let removed = queues.len() != before;
    if queues.is_empty() {
        document.remove("queues");
    }
    removed
}

/// Rewrites `auth.api_keys` as one inline table per line, or removes it for `None`.
pub fn set_api_keys(document: &mut DocumentMut, keys: Option<&[sepp_config::ApiKey]>) -> AdminResult<()> {
    let Some(keys) = keys else {
        return set_key(document, "auth", "api_keys", None);
    };
    let mut array = Array::new();
    for key in keys {
        let mut entry = InlineTable::new();
        entry.insert("name", key.name.as_str().into());
        entry.insert("key", key.key.as_str().into());
        let mut value = TomlValue::InlineTable(entry);
        value.decor_mut().set_prefix("\n    ");
        array.push_formatted(value);
    }
    array.set_trailing_comma(!keys.is_empty());
    array.set_trailing(if keys.is_empty() { "" } else { "\n" });
    set_key(document, "auth", "api_keys", Some(TomlValue::Array(array)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(text: &str, edit: impl FnOnce(&mut DocumentMut)) -> String {
        let mut document: DocumentMut = text.parse().unwrap();
        edit(&mut document);
        document.to_string()
    }

    #[test]
    fn a_key_is_set_in_place_and_comments_stay() {
        let text = "# my server\n[limits]\n# the cap\ndefault_priority = 1 # low\n";
        let out = edited(text, |doc| set_key(doc, "limits", "default_priority", Some(5.into())).unwrap());
        assert_eq!(out, "# my server\n[limits]\n# the cap\ndefault_priority = 5 # low\n");
        let out = edited(&out, |doc| set_key(doc, "storage", "sweep_limit", Some(7.into())).unwrap());
        assert!(out.contains("[storage]\nsweep_limit = 7"), "{out}");
        let out = edited(&out, |doc| set_key(doc, "limits", "default_priority", None).unwrap());
        assert!(!out.contains("default_priority"), "{out}");
    }

    #[test]
    fn queue_fields_upsert_the_queue_entry_and_removing_it_drops_the_table() {
        let out = edited("[server]\nstrict_queues = true\n", |doc| {
            set_queue_field(doc, "emails", "max_queue_depth", Some(5.into())).unwrap();
            set_queue_field(doc, "emails", "retry_backoff", Some("exponential".into())).unwrap();
            declare_queue(doc, "sms").unwrap();
        });
        let config = sepp_config::load_str(&out, &[]).unwrap();
        assert_eq!(config.queues.len(), 2);
        assert_eq!(config.queues[0].max_queue_depth, Some(5));
        let out = edited(&out, |doc| {
            assert!(remove_queue(doc, "emails"));
            assert!(!remove_queue(doc, "nowhere"));
            assert!(remove_queue(doc, "sms"));
        });
        assert!(!out.contains("[[queues]]"), "{out}");
    }

    #[test]
    fn api_keys_are_written_one_per_line() {
        let keys = vec![
            sepp_config::ApiKey { name: "a".into(), key: "ka".into() },
            sepp_config::ApiKey { name: "b".into(), key: "kb".into() },
        ];
        let out = edited("", |doc| set_api_keys(doc, Some(&keys)).unwrap());
        assert_eq!(out.lines().filter(|line| line.contains("name =")).count(), 2, "{out}");
        let config = sepp_config::load_str(&out, &[]).unwrap();
        assert_eq!(config.auth.api_keys.unwrap().len(), 2);
        let out = edited(&out, |doc| set_api_keys(doc, Some(&[])).unwrap());
        assert_eq!(sepp_config::load_str(&out, &[]).unwrap().auth.api_keys, Some(vec![]));
    }

    #[test]
    fn paths_name_a_section_key_or_a_queue_field_and_key_lists_are_refused() {
        assert!(matches!(parse_path("limits.default_priority"), Ok(ChangePath::Key { section: "limits", .. })));
        assert!(matches!(parse_path("queues.a.b.max_queue_depth"), Ok(ChangePath::QueueField { queue: "a.b", .. })));
        let code = |path| parse_path(path).err().map(|error| error.code);
        assert_eq!(code("admin.keys"), Some("admin_keys_immutable"));
        assert_eq!(code("auth.api_keys.0.key"), Some("api_keys_immutable"));
        assert_eq!(code("limits"), Some("invalid_change"));
        assert_eq!(code("bogus.key"), Some("invalid_change"));
        assert_eq!(code("queues.a.bogus"), Some("invalid_change"));
    }

    #[test]
    fn a_pin_covers_its_key_and_everything_under_it() {
        let pinned = vec!["limits.max_payload_bytes".to_string(), "queues".to_string()];
        assert!(pinned_by("limits.max_payload_bytes", &pinned).is_some());
        assert!(pinned_by("queues.a.max_queue_depth", &pinned).is_some());
        assert!(pinned_by("limits.max_payload", &pinned).is_none());
        assert_eq!(etag_of(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
