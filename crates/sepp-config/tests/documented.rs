//! `docs/configuration.md` documents every key of the configuration, and says of each what the
//! code does: its default, whether a change applies live or needs a restart, and its
//! environment variable. A key added to the schema without a row in that page fails here, and
//! so does a row for a key that no longer exists.
//!
//! The keys are `sepp_config::known_keys()`; their defaults come from `sepp_config::example()`,
//! which its own tests hold to the schema (every active value is the default, keys without one
//! are commented out).

use std::collections::BTreeMap;
use std::path::PathBuf;

use toml::{Table, Value};

/// A key of the schema as the page names it: `server.listen_addr`, `auth.api_keys[].key`,
/// `queues[].name`.
struct SchemaKey {
    /// The default, for keys outside list entries; `None` when the key is unset by default.
    default: Option<Value>,
    in_entry: bool,
}

/// One row of a key table of the page.
#[derive(Debug)]
struct Row {
    line: usize,
    default: String,
    applies: String,
    env: String,
}

fn page() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("read {}: {error}", path.display()))
}

/// Every key of `sepp_config::known_keys()`, with its default from the example.
fn schema_keys() -> BTreeMap<String, SchemaKey> {
    let defaults: Table = sepp_config::example().parse().expect("the example is TOML");
    sepp_config::known_keys()
        .iter()
        .map(|key| {
            let in_entry = key.contains("[]");
            let default = match key.split_once('.') {
                Some((section, field)) if !in_entry => defaults.get(section).and_then(|s| s.get(field)).cloned(),
                _ => None,
            };
            (key.to_string(), SchemaKey { default, in_entry })
        })
        .collect()
}

/// The rows of the page's key tables: lines `| `key` | default | applies | env | text |`.
fn rows(page: &str) -> BTreeMap<String, Row> {
    let mut rows = BTreeMap::new();
    for (index, line) in page.lines().enumerate() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        let Some(key) = cells.first().and_then(|cell| cell.strip_prefix('`')?.strip_suffix('`')) else { continue };
        if cells.len() != 5 || !key.contains('.') {
            continue;
        }
        let row = Row {
            line: index + 1,
            default: cells[1].to_owned(),
            applies: cells[2].to_owned(),
            env: cells[3].to_owned(),
        };
        assert!(rows.insert(key.to_owned(), row).is_none(), "docs/configuration.md has two rows for {key}");
    }
    rows
}

/// Whether a change of `key` waits for a restart, by the server's own list.
fn restart_only(key: &str) -> bool {
    let list_key = key.split("[]").next().unwrap_or(key);
    let section = key.split(['.', '[']).next().unwrap_or(key);
    sepp_config::RESTART_ONLY.iter().any(|listed| *listed == key || *listed == section)
        || (key != list_key && sepp_config::RESTART_ONLY.contains(&list_key) && !key.starts_with("queues[]"))
}

/// `SEPP_SECTION__KEY`, for a key outside list entries.
fn env_var(key: &str) -> String {
    format!("SEPP_{}", key.replace('.', "__").to_ascii_uppercase())
}

/// The value in the first code span of a cell, read as a TOML value.
fn literal(cell: &str) -> Option<Value> {
    let inner = cell.split('`').nth(1)?;
    let parsed: Table = format!("value = {inner}").parse().ok()?;
    parsed.get("value").cloned()
}

#[test]
fn every_key_of_the_schema_has_a_row() {
    let rows = rows(&page());
    let missing: Vec<String> = schema_keys().into_keys().filter(|key| !rows.contains_key(key)).collect();
    assert!(missing.is_empty(), "docs/configuration.md documents none of {missing:?}");
}

#[test]
fn every_row_is_a_key_of_the_schema() {
    let schema = schema_keys();
    let unknown: Vec<String> = rows(&page())
        .into_iter()
        .filter(|(key, _)| !schema.contains_key(key))
        .map(|(key, row)| format!("{key} (line {})", row.line))
        .collect();
    assert!(unknown.is_empty(), "docs/configuration.md documents keys the schema does not have: {unknown:?}");
}

#[test]
fn each_row_gives_the_real_default_reload_and_environment_variable() {
    let rows = rows(&page());
    let mut wrong = Vec::new();
    for (key, schema) in schema_keys() {
        let Some(row) = rows.get(&key) else { continue };
        let at = format!("{key} (line {})", row.line);
        let applies = if restart_only(&key) { "restart" } else { "live" };
        if row.applies != applies {
            wrong.push(format!("{at}: applies {:?}, the server says {applies}", row.applies));
        }
        if schema.in_entry {
            continue;
        }
        if row.env != format!("`{}`", env_var(&key)) {
            wrong.push(format!("{at}: environment variable {:?}, expected `{}`", row.env, env_var(&key)));
        }
        match &schema.default {
            Some(default) if literal(&row.default).as_ref() != Some(default) => {
                wrong.push(format!("{at}: default {:?}, the example says {default}", row.default));
            }
            None if !row.default.starts_with("unset") => {
                wrong.push(format!("{at}: default {:?}, but the key is unset by default", row.default));
            }
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "docs/configuration.md disagrees with the code:\n{}", wrong.join("\n"));
}
