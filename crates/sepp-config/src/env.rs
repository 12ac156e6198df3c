//! The environment layer: `SEPP_SECTION__FIELD=value` variables as overrides of the file.
//!
//! This module owns the naming convention (docs/configuration.md) and the value parsing: a value is read as a
//! TOML literal (number, bool, string, array, inline table) and, when it is not one, taken as a
//! plain string. It does not read `std::env` itself; callers pass the variables in, so tests and
//! hot reloads see exactly the environment they are given.

use toml::{Table, Value};

/// The variable that names the config file; it is never an override.
const CONFIG_VAR: &str = "SEPP_CONFIG";
const PREFIX: &str = "SEPP_";

/// One environment variable that overrides a config key.
#[derive(Clone, Debug)]
pub(crate) struct EnvOverride {
    /// The variable as it was spelled, for error messages.
    pub var: String,
    /// The key it sets, lowercase, e.g. `["server", "listen_addr"]`.
    pub path: Vec<String>,
    /// The parsed value.
    pub value: Value,
    /// The value as given, so a literal that turned out to be the wrong type can be retried as
    /// the string it also is (e.g. `SEPP_SERVER__DB_PATH=2024`).
    pub raw: String,
}

impl EnvOverride {
    /// Whether this variable sets `path` or a table that contains it.
    pub fn covers(&self, path: &[&str]) -> bool {
        self.path.len() <= path.len() && self.path.iter().zip(path).all(|(a, b)| a == b)
    }

    /// Turns a scalar value (number, bool, date) into the plain string it was given as. Returns
    /// false for strings, arrays and tables, which were meant as what they are.
    pub fn fall_back_to_string(&mut self) -> bool {
        if self.value.is_str() || self.value.is_array() || self.value.is_table() {
            return false;
        }
        self.value = Value::String(self.raw.clone());
        true
    }
}

/// The config key an environment variable overrides, dotted and lowercase
/// (`SEPP_SERVER__LISTEN_ADDR` -> `server.listen_addr`), or `None` if the variable is not an
/// override (no `SEPP_` prefix, `SEPP_CONFIG`, or an empty segment).
///
/// The admin API uses this to report which keys are pinned by the environment.
pub fn env_key(var: &str) -> Option<String> {
    env_path(var).map(|path| path.join("."))
}

fn env_path(var: &str) -> Option<Vec<String>> {
    let head = var.get(..PREFIX.len())?;
    if !head.eq_ignore_ascii_case(PREFIX) || var.eq_ignore_ascii_case(CONFIG_VAR) {
        return None;
    }
    let path: Vec<String> = var[PREFIX.len()..].split("__").map(str::to_ascii_lowercase).collect();
    if path.iter().any(String::is_empty) {
        return None;
    }
    Some(path)
}

/// Reads a value as a TOML literal, else as a plain string.
fn parse_value(raw: &str) -> Value {
    raw.parse::<Value>().unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// The overrides among `env`, shortest key first so that a more specific variable wins over a
/// whole-section one (`SEPP_AUTH__API_KEYS` over `SEPP_AUTH`).
pub(crate) fn overrides(env: &[(String, String)]) -> Vec<EnvOverride> {
    let mut found: Vec<EnvOverride> = env
        .iter()
        .filter_map(|(var, raw)| {
            Some(EnvOverride { var: var.clone(), path: env_path(var)?, value: parse_value(raw), raw: raw.clone() })
        })
        .collect();
    found.sort_by_key(|o| o.path.len());
    found
}

/// Writes every override into `table`, creating sections as needed. A non-table value in the
/// way is replaced (the override wins; the typed load then reports any mismatch).
pub(crate) fn apply(table: &mut Table, overrides: &[EnvOverride]) {
    for o in overrides {
        let (last, sections) = o.path.split_last().expect("env paths are never empty");
        let mut current = &mut *table;
        for section in sections {
            let entry = current.entry(section.clone()).or_insert_with(|| Value::Table(Table::new()));
            if !entry.is_table() {
                *entry = Value::Table(Table::new());
            }
            current = entry.as_table_mut().expect("just made a table");
        }
        current.insert(last.clone(), o.value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn variable_names_map_to_lowercase_dotted_keys() {
        assert_eq!(env_key("SEPP_SERVER__LISTEN_ADDR").as_deref(), Some("server.listen_addr"));
        assert_eq!(env_key("sepp_limits__max_queue_depth").as_deref(), Some("limits.max_queue_depth"));
        assert_eq!(env_key("Sepp_Auth").as_deref(), Some("auth"));
    }

    #[test]
    fn sepp_config_and_foreign_variables_are_not_overrides() {
        assert_eq!(env_key("SEPP_CONFIG"), None);
        assert_eq!(env_key("sepp_config"), None);
        assert_eq!(env_key("PATH"), None);
        assert_eq!(env_key("SEPPX_SERVER__DB_PATH"), None);
        assert_eq!(env_key("SEPP_"), None);
        assert_eq!(env_key("SEPP_SERVER____DB_PATH"), None);
        assert_eq!(env_key("SE"), None);
    }

    #[test]
    fn values_are_toml_literals_else_plain_strings() {
        assert_eq!(parse_value("42"), Value::Integer(42));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("0.5"), Value::Float(0.5));
        assert_eq!(parse_value("\"quoted\""), Value::String("quoted".into()));
        assert_eq!(parse_value("0.0.0.0:6000"), Value::String("0.0.0.0:6000".into()));
        assert_eq!(parse_value("/tmp/x"), Value::String("/tmp/x".into()));
        assert_eq!(parse_value("info,sepp=debug"), Value::String("info,sepp=debug".into()));
        let keys = parse_value(r#"[{name="x",key="y"}]"#);
        let entry = &keys.as_array().unwrap()[0];
        assert_eq!(entry.get("name").and_then(Value::as_str), Some("x"));
        assert_eq!(entry.get("key").and_then(Value::as_str), Some("y"));
    }

    #[test]
    fn a_value_with_a_second_line_does_not_smuggle_in_other_keys() {
        assert_eq!(parse_value("1\nother = 2"), Value::String("1\nother = 2".into()));
    }

    #[test]
    fn the_more_specific_variable_wins() {
        let mut table = Table::new();
        let env = vars(&[("SEPP_AUTH__API_KEYS", "[]"), ("SEPP_AUTH", r#"{api_keys=[{name="a",key="b"}]}"#)]);
        apply(&mut table, &overrides(&env));
        let keys = table["auth"]["api_keys"].as_array().unwrap();
        assert!(keys.is_empty());
    }

    #[test]
    fn overrides_create_missing_sections_and_replace_file_values() {
        let mut table: Table = toml::from_str("[server]\ndb_path = \"/data\"\n").unwrap();
        let env = vars(&[("SEPP_SERVER__DB_PATH", "/tmp/x"), ("SEPP_LIMITS__DEFAULT_PRIORITY", "5")]);
        apply(&mut table, &overrides(&env));
        assert_eq!(table["server"]["db_path"].as_str(), Some("/tmp/x"));
        assert_eq!(table["limits"]["default_priority"].as_integer(), Some(5));
    }
}
