//! Finding the file and layering defaults, file and environment into a validated [`Config`].
//!
//! This module owns discovery (docs/configuration.md), the load pipeline and [`ConfigError`]: every error
//! names the file or the environment variable that set the offending key, and none of them
//! echoes file content or key material (the admin API shows these messages too).

use std::path::PathBuf;

use toml::{Table, Value};

use crate::env::{self, EnvOverride};
use crate::keys;
use crate::schema::Config;
use crate::validate::{self, KeyPath, Problem, Seg};

/// Where the configuration file is, and whether someone asked for it by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigSource {
    pub path: PathBuf,
    /// True for `--config` or `SEPP_CONFIG`: then a missing file is an error.
    pub explicit: bool,
}

/// Why a configuration could not be loaded or watched.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file not found: {}", path.display())]
    NotFound { path: PathBuf },
    #[error("could not read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML. `message` says where, without quoting the file.
    #[error("could not parse {origin}: {message}")]
    Parse { origin: String, message: String },
    /// A key has the wrong type or breaks a rule. `origin` is the file and/or environment
    /// variable(s) that set the keys involved.
    #[error("invalid configuration in {origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("could not watch {}: {source}", path.display())]
    Watch {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
}

/// The file to load: the `--config` flag, else `SEPP_CONFIG`, else `./sepp.toml` (which may be
/// missing). `env` looks up one environment variable; an empty `SEPP_CONFIG` counts as unset.
pub fn discover(flag: Option<PathBuf>, env: &dyn Fn(&str) -> Option<String>) -> ConfigSource {
    if let Some(path) = flag {
        return ConfigSource { path, explicit: true };
    }
    match env("SEPP_CONFIG").filter(|value| !value.is_empty()) {
        Some(path) => ConfigSource { path: PathBuf::from(path), explicit: true },
        None => ConfigSource { path: PathBuf::from("./sepp.toml"), explicit: false },
    }
}

/// A configuration that loaded.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
}

/// Everything wrong with a configuration, for `sepp config check`: every unknown key, and the
/// first error of each part of the file (a file that does not parse has just that error).
#[derive(Debug, Default)]
pub struct CheckReport {
    pub errors: Vec<ConfigError>,
}

/// The process environment, without variables whose name or value is not valid UTF-8.
pub fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Loads `source` with the process environment as the override layer.
pub fn load(source: &ConfigSource) -> Result<Loaded, ConfigError> {
    load_with_env(source, &process_env())
}

/// Loads `source` with `env` as the override layer: defaults, then the file, then `env`, then
/// validation. A missing file is an error only when the path was explicit.
pub fn load_with_env(source: &ConfigSource, env: &[(String, String)]) -> Result<Loaded, ConfigError> {
    let Checked { mut report, config } = check_source(source, env);
    match config {
        Some(config) => Ok(Loaded { config }),
        None => Err(report.errors.swap_remove(0)),
    }
}

/// Checks `source` with `env` as the override layer, collecting every warning and error.
pub fn check_with_env(source: &ConfigSource, env: &[(String, String)]) -> CheckReport {
    check_source(source, env).report
}

/// Loads configuration from TOML text (as if it were a file) with `env` as the override layer.
pub fn load_str(toml_text: &str, env: &[(String, String)]) -> Result<Config, ConfigError> {
    load_str_as(toml_text, "<inline config>", env)
}

/// Like [`load_str`], naming the text `file_label` in errors: how the admin API checks a
/// candidate file before writing it.
pub fn load_str_as(toml_text: &str, file_label: &str, env: &[(String, String)]) -> Result<Config, ConfigError> {
    let Checked { mut report, config } = check_text(toml_text, file_label, env);
    config.ok_or_else(|| report.errors.swap_remove(0))
}

/// A check's report, and the configuration when it had no error.
struct Checked {
    report: CheckReport,
    config: Option<Config>,
}

impl Checked {
    fn failed(error: ConfigError) -> Checked {
        Checked { report: CheckReport { errors: vec![error] }, config: None }
    }
}

fn check_source(source: &ConfigSource, env: &[(String, String)]) -> Checked {
    let text = match std::fs::read_to_string(&source.path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if source.explicit {
                return Checked::failed(ConfigError::NotFound { path: source.path.clone() });
            }
            String::new()
        }
        Err(source_error) => {
            return Checked::failed(ConfigError::Read { path: source.path.clone(), source: source_error });
        }
    };
    check_text(&text, &source.path.display().to_string(), env)
}

fn check_text(text: &str, file_label: &str, env: &[(String, String)]) -> Checked {
    let file: Table = match toml::from_str(text) {
        Ok(file) => file,
        Err(error) => {
            return Checked::failed(ConfigError::Parse {
                origin: file_label.to_owned(),
                message: describe_parse_error(text, &error),
            });
        }
    };
    let mut layers = Layers { file_label: file_label.to_owned(), file, env: env::overrides(env) };
    let mut errors = layers.unknown_keys();
    let config = match layers.deserialize() {
        Ok(config) => config,
        Err(error) => {
            errors.push(error);
            return Checked { report: CheckReport { errors }, config: None };
        }
    };
    errors.extend(validate::problems(&config).into_iter().map(|problem| layers.invalid(problem)));
    let config = errors.is_empty().then_some(config);
    Checked { report: CheckReport { errors }, config }
}

/// The parser's message and position, without the quoted line the default display adds (it
/// could hold a key).
fn describe_parse_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end();
    match error.span() {
        Some(span) => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|b| **b == b'\n').count() + 1;
            let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
            let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
            format!("{message} (line {line}, column {column})")
        }
        None => message.to_owned(),
    }
}

/// The file as parsed and the environment overrides, kept apart so errors can say which one
/// set a key.
struct Layers {
    file_label: String,
    file: Table,
    env: Vec<EnvOverride>,
}

enum Origin<'a> {
    Env(&'a str),
    File,
    Default,
}

impl Layers {
    /// An error for each key the merged document sets that the configuration does not know,
    /// naming the file or variable that set it. A variable without a section (`SEPP_BIN`,
    /// `SEPP_ADMIN_KEY`) is taken to be some other program's setting, not a typo, and is not
    /// reported.
    fn unknown_keys(&self) -> Vec<ConfigError> {
        let mut merged = self.file.clone();
        env::apply(&mut merged, &self.env);
        keys::unknown_keys(&merged)
            .into_iter()
            .filter_map(|unknown| {
                let path = key_path(&unknown.key);
                let origin = match self.origin(&path) {
                    Origin::Env(_) if path.len() == 1 => return None,
                    Origin::Env(var) => format!("environment variable {var}"),
                    Origin::File | Origin::Default => self.file_label.clone(),
                };
                Some(ConfigError::Invalid { origin, message: unknown.to_string() })
            })
            .collect()
    }

    /// The merged document as a `Config`. An environment value that was read as a literal of the
    /// wrong type is retried as the plain string it also is.
    fn deserialize(&mut self) -> Result<Config, ConfigError> {
        loop {
            let mut merged = self.file.clone();
            env::apply(&mut merged, &self.env);
            let error = match serde_path_to_error::deserialize(Value::Table(merged)) {
                Ok(config) => return Ok(config),
                Err(error) => error,
            };
            let (path, message) = describe_type_error(&error);
            let wrong_type = error.inner().message().starts_with("invalid type: ");
            let retried = wrong_type
                && self.env.iter_mut().rev().find(|o| covers(o, &path)).is_some_and(EnvOverride::fall_back_to_string);
            if !retried {
                return Err(self.invalid(Problem { keys: vec![path], message }));
            }
        }
    }

    fn origin(&self, path: &KeyPath) -> Origin<'_> {
        if let Some(o) = self.env.iter().rev().find(|o| covers(o, path)) {
            return Origin::Env(&o.var);
        }
        if lookup(&self.file, path).is_some() { Origin::File } else { Origin::Default }
    }

    fn invalid(&self, problem: Problem) -> ConfigError {
        let mut origins: Vec<String> = Vec::new();
        for path in &problem.keys {
            let origin = match self.origin(path) {
                Origin::Env(var) => format!("environment variable {var}"),
                Origin::File => self.file_label.clone(),
                Origin::Default => continue,
            };
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        if origins.is_empty() {
            origins.push(self.file_label.clone());
        }
        ConfigError::Invalid { origin: origins.join(" and "), message: problem.message }
    }
}

/// Whether the override `o` set `path` itself or a table or list that contains it.
fn covers(o: &EnvOverride, path: &KeyPath) -> bool {
    let mut names = Vec::new();
    for seg in path {
        match seg {
            Seg::Key(name) => names.push(name.as_str()),
            Seg::Index(_) => break,
        }
        if names.len() == o.path.len() {
            break;
        }
    }
    o.covers(&names)
}

/// The value at `path` in `table`, if there is one.
fn lookup<'a>(table: &'a Table, path: &KeyPath) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let Seg::Key(first) = first else { return None };
    let mut value = table.get(first)?;
    for seg in rest {
        value = match seg {
            Seg::Key(name) => value.as_table()?.get(name)?,
            Seg::Index(index) => value.as_array()?.get(*index)?,
        };
    }
    Some(value)
}

/// Turns a typed-load error into a key path and a sentence.
fn describe_type_error(error: &serde_path_to_error::Error<toml::de::Error>) -> (KeyPath, String) {
    let mut path: KeyPath = Vec::new();
    for segment in error.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => path.push(Seg::Index(*index)),
            serde_path_to_error::Segment::Map { key } => path.push(Seg::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => path.push(Seg::Key(variant.clone())),
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    let message = error.inner().message().trim_end();
    if let Some(field) = backticked_after(message, "unknown field ") {
        push_field(&mut path, field);
        let expected = message.split_once(", ").map_or("", |(_, rest)| rest);
        return (path.clone(), format!("{} is not a known key ({expected})", label(&path)));
    }
    if let Some(field) = backticked_after(message, "missing field ") {
        push_field(&mut path, field);
        return (path.clone(), format!("{} is required", label(&path)));
    }
    let holds_keys = matches!(
        path.get(..2),
        Some([Seg::Key(a), Seg::Key(b)]) if (a == "auth" && b == "api_keys") || (a == "admin" && b == "keys")
    );
    let message = if holds_keys { redact_value(message) } else { message.to_owned() };
    let message = in_plain_words(&message);
    if path.is_empty() {
        return (path, message);
    }
    (path.clone(), format!("{}: {message}", label(&path)))
}

/// Serde's type names in the words of a TOML file.
fn in_plain_words(message: &str) -> String {
    let Some(at) = message.rfind("expected ") else {
        return message.to_owned();
    };
    let (head, expected) = message.split_at(at + "expected ".len());
    let plain = match expected {
        "u8" => "an integer from 0 to 255",
        "u32" => "an integer from 0 to 4294967295",
        "u64" | "usize" => "a non-negative integer",
        "f64" => "a number",
        "a boolean" => "true or false",
        struct_name if struct_name.starts_with("struct ") => "a table",
        other => other,
    };
    format!("{head}{plain}")
}

/// Hides the offending value a serde message quotes, keeping what kind of value it was.
fn redact_value(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some(at) = rest.rfind(", expected ")
        {
            let kind = rest[..at].split(' ').next().unwrap_or("");
            return format!("{prefix}{kind}{}", &rest[at..]);
        }
    }
    if let Some(value) = backticked_after(message, "unknown variant ") {
        return message.replacen(&format!("`{value}`"), "`<redacted>`", 1);
    }
    message.to_owned()
}

/// Ends `path` with `field` unless the path already reached it.
fn push_field(path: &mut KeyPath, field: &str) {
    if path.last() != Some(&Seg::Key(field.to_owned())) {
        path.push(Seg::Key(field.to_owned()));
    }
}

/// `name` in ``<prefix>`name`...``.
fn backticked_after<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = message.strip_prefix(prefix)?.strip_prefix('`')?;
    rest.split_once('`').map(|(name, _)| name)
}

/// `limits.default_priority`, `auth.api_keys[0].key`.
fn label(path: &KeyPath) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(name) if out.is_empty() => out.push_str(name),
            Seg::Key(name) => {
                out.push('.');
                out.push_str(name);
            }
            Seg::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// `queues[2].name` as a path: `queues`, 2, `name`.
fn key_path(label: &str) -> KeyPath {
    let mut path = Vec::new();
    for part in label.split('.') {
        match part.split_once('[') {
            Some((name, index)) => {
                path.push(Seg::Key(name.to_owned()));
                path.push(Seg::Index(index.trim_end_matches(']').parse().unwrap_or(0)));
            }
            None => path.push(Seg::Key(part.to_owned())),
        }
    }
    path
}
