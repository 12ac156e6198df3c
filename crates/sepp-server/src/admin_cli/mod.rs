//! `sepp admin <verb>`: the admin API from a terminal or a script.
//!
//! Talks to a running server's admin listener (`--url`, default `http://127.0.0.1:9465`) with
//! the key in `SEPP_ADMIN_KEY` (sent as a bearer token), prints tables for people and, with
//! `--json`, the API's own JSON for scripts. Exits 1 when the API refuses a request, with the
//! API's error message on stderr (and its JSON on stdout under `--json`).

mod http;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clap::{Args, Subcommand};
use hyper::Method;
use sepp_admin_types as api;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use http::{Answer, Client};
use output::{cell, rfc3339_ms, table, time_at};

/// Keys sent per request when a command is given more (the API takes at most 100).
const KEYS_PER_REQUEST: usize = 100;

#[derive(Args)]
pub struct AdminArgs {
    /// The admin listener.
    #[arg(long, global = true, env = "SEPP_ADMIN_URL", default_value = "http://127.0.0.1:9465")]
    url: String,
    /// Print the API's JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// A PEM certificate to trust for an https:// URL (for example the admin listener's own).
    #[arg(long, global = true)]
    ca_cert: Option<PathBuf>,
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// List queues with their depths.
    Queues,
    /// List a queue's jobs in one state.
    Peek(PeekArgs),
    /// Show one live job by id, with its payload.
    Job { id: String },
    /// Cancel one job by id: a queued job is dead-lettered now, a leased one when its worker
    /// next extends, acks or nacks it (or its lease runs out); it is never delivered again.
    Cancel {
        id: String,
        /// Why, kept with the dead letter and in the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Enqueue one job.
    Enqueue(EnqueueArgs),
    /// Dead letters: list, requeue or delete them.
    #[command(name = "dead-letters", subcommand)]
    DeadLetters(DeadLetterVerb),
    /// Delete a queue and everything in it (its jobs, dead letters, idempotency keys and its
    /// [[queues]] entry). Refused while any of its jobs is in flight.
    Purge {
        queue: String,
        /// Confirm: nothing is deleted without it.
        #[arg(long)]
        yes: bool,
    },
    /// Read the audit log, newest first.
    Audit(AuditArgs),
    /// List the workers that reserved recently and the jobs they hold.
    Workers,
    /// Pause a queue (or every queue with --all): reserves skip it, enqueues are still accepted
    /// and leases already held go on.
    Pause(PauseArgs),
    /// Resume a paused queue (or lift the pause of every queue with --all).
    Resume {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        queue: Option<String>,
        #[arg(long)]
        all: bool,
    },
    /// List the paused queues.
    Pauses,
    /// Show a queue's effective settings (limits included), or change its [[queues]] entry:
    /// `--set field=value` (the value as JSON, or as text when it is not JSON) and
    /// `--unset field`. Changes apply at once, as a hot reload would.
    Settings {
        queue: String,
        /// `field=value`, for example `key_max_in_flight=2` or
        /// `key_overrides={"acme":{"max_in_flight":8}}`.
        #[arg(long = "set", value_name = "FIELD=VALUE")]
        set: Vec<String>,
        /// A field to remove from the queue's entry (it falls back to the global value).
        #[arg(long = "unset", value_name = "FIELD")]
        unset: Vec<String>,
    },
    /// Recurring schedules: list, set (create or replace) or delete them.
    #[command(subcommand)]
    Schedules(ScheduleVerb),
}

#[derive(Subcommand)]
enum ScheduleVerb {
    /// List the schedules with their next firing.
    List,
    /// Create or replace a schedule.
    Set(Box<ScheduleArgs>),
    /// Delete a schedule (the jobs it fired stay).
    Delete { id: String },
}

#[derive(Args)]
struct ScheduleArgs {
    id: String,
    /// A cron expression: five fields (minute hour day month weekday), or six with seconds.
    #[arg(long, required_unless_present = "every", conflicts_with = "every")]
    cron: Option<String>,
    /// The time zone the cron expression is read in (an IANA name; default UTC).
    #[arg(long = "tz", requires = "cron")]
    time_zone: Option<String>,
    /// Fire every this many seconds instead.
    #[arg(long, value_name = "SECONDS")]
    every: Option<u64>,
    #[arg(long)]
    queue: String,
    #[arg(long = "type")]
    job_type: String,
    /// The payload, as text.
    #[arg(long)]
    data: Option<String>,
    #[arg(long, default_value = "application/json", requires = "data")]
    encoding: String,
    #[arg(long)]
    priority: Option<u32>,
    #[arg(long)]
    max_attempts: Option<u32>,
    /// While its previous job is still queued or running: skip the slot, or fire anyway.
    #[arg(long, value_parser = ["skip", "allow"], default_value = "skip")]
    overlap: String,
    /// After downtime: fire the latest missed slot once, or none.
    #[arg(long, value_parser = ["latest", "none"], default_value = "latest")]
    catch_up: String,
}

#[derive(Args)]
struct PauseArgs {
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    queue: Option<String>,
    /// Every queue, also those that do not exist yet.
    #[arg(long)]
    all: bool,
    /// End the pause by itself after this many seconds.
    #[arg(long = "for", value_name = "SECONDS", conflicts_with = "until_ms")]
    for_secs: Option<u64>,
    /// End the pause by itself at this time, in milliseconds since the Unix epoch.
    #[arg(long)]
    until_ms: Option<i64>,
    /// Why, for the audit log.
    #[arg(long)]
    reason: Option<String>,
}

#[derive(Args)]
struct FilterArgs {
    /// Only jobs of this type.
    #[arg(long)]
    job_type: Option<String>,
    /// Only jobs whose custom metadata has KEY=VALUE (repeatable).
    #[arg(long = "custom", value_name = "KEY=VALUE")]
    custom: Vec<String>,
}

#[derive(Args)]
struct PeekArgs {
    queue: String,
    /// ready, scheduled, inflight or dead_letter.
    #[arg(long, default_value = "ready")]
    state: String,
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Go on from a previous page's next_cursor.
    #[arg(long)]
    cursor: Option<String>,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Args)]
struct EnqueueArgs {
    queue: String,
    /// The job type.
    #[arg(long = "type")]
    job_type: String,
    /// The payload as text.
    #[arg(long, conflicts_with_all = ["data_b64", "file"])]
    data: Option<String>,
    /// The payload as standard base64.
    #[arg(long, conflicts_with = "file")]
    data_b64: Option<String>,
    /// The payload from a file.
    #[arg(long)]
    file: Option<PathBuf>,
    /// The payload's encoding label.
    #[arg(long, default_value = "application/octet-stream")]
    encoding: String,
    #[arg(long)]
    priority: Option<u32>,
    #[arg(long)]
    max_attempts: Option<u32>,
    /// When the job becomes ready, in milliseconds since the Unix epoch.
    #[arg(long)]
    scheduled_at_ms: Option<i64>,
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Custom metadata KEY=VALUE (repeatable); integers, decimals, true and false keep their type.
    #[arg(long = "custom", value_name = "KEY=VALUE")]
    custom: Vec<String>,
}

#[derive(Subcommand)]
enum DeadLetterVerb {
    /// List a queue's dead letters.
    List {
        queue: String,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Put dead letters back as fresh first attempts.
    Requeue(DeadLetterAction),
    /// Delete dead letters.
    Delete(DeadLetterAction),
}

#[derive(Args)]
struct DeadLetterAction {
    queue: String,
    /// Handles (key_b64) from a listing.
    keys: Vec<String>,
    /// Every dead letter of the queue that matches the filter, instead of KEYS.
    #[arg(long, conflicts_with = "keys")]
    all: bool,
    #[command(flatten)]
    filter: FilterArgs,
    /// Recorded in the audit log.
    #[arg(long)]
    reason: Option<String>,
}

#[derive(Args)]
struct AuditArgs {
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Only entries older than this seq.
    #[arg(long)]
    before: Option<u64>,
    #[arg(long)]
    actor: Option<String>,
    #[arg(long)]
    action_prefix: Option<String>,
}

/// Runs one admin command.
pub fn run(args: AdminArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return failed(&format!("cannot start: {error}")),
    };
    let key = std::env::var("SEPP_ADMIN_KEY").ok().filter(|key| !key.is_empty());
    let keyed = key.is_some();
    let client = match Client::new(&args.url, key, args.ca_cert.as_deref()) {
        Ok(client) => client,
        Err(message) => return failed(&message),
    };
    let session = Session { client, json: args.json, keyed };
    match runtime.block_on(session.run(args.verb)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => failed(&error.to_string()),
    }
}

fn failed(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

/// `?a=1&b=2` with each value percent-encoded.
fn query(pairs: &[(String, String)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    let joined: Vec<String> = pairs.iter().map(|(name, value)| format!("{}={}", encode(name), encode(value))).collect();
    if joined.is_empty() { String::new() } else { format!("?{}", joined.join("&")) }
}

/// A path segment, percent-encoded.
fn segment(text: &str) -> String {
    query(&[(String::new(), text.to_owned())]).trim_start_matches("?=").to_owned()
}

fn split_pair(text: &str) -> Result<(String, String), CliError> {
    text.split_once('=')
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .ok_or_else(|| usage(format!("{text:?} is not KEY=VALUE")))
}

fn filter_pairs(filter: &FilterArgs) -> Result<Vec<(String, String)>, CliError> {
    let mut pairs = Vec::new();
    if let Some(job_type) = &filter.job_type {
        pairs.push(("job_type".to_owned(), job_type.clone()));
    }
    for custom in &filter.custom {
        let (key, value) = split_pair(custom)?;
        pairs.push((format!("custom.{key}"), value));
    }
    Ok(pairs)
}

struct Session {
    client: Client,
    json: bool,
    /// Whether `SEPP_ADMIN_KEY` gave a key.
    keyed: bool,
}

/// Why a command failed; its text is what `sepp admin` prints after `error: `.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line asks for something the command cannot do.
    #[error("{0}")]
    Usage(String),
    /// A local file could not be read.
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    /// No answer: the connection, TLS or the HTTP exchange failed.
    #[error("{0}")]
    Transport(String),
    /// The API refused the request: its message, its code (` (code)` or empty), the status and a
    /// hint about the key.
    #[error("{message}{code} [HTTP {status}]{hint}")]
    Refused { message: String, code: String, status: u16, hint: &'static str },
    /// The API answered with JSON of another shape than this version knows.
    #[error("unexpected answer from {path}: {error}")]
    Malformed { path: String, error: serde_json::Error },
}

impl From<String> for CliError {
    /// The HTTP client's failures.
    fn from(message: String) -> CliError {
        CliError::Transport(message)
    }
}

fn usage(message: impl Into<String>) -> CliError {
    CliError::Usage(message.into())
}

/// A value as the API writes it (an enum as its wire name), as a table cell.
fn wire<T: Serialize>(value: &T) -> String {
    cell(&serde_json::to_value(value).unwrap_or(Value::Null))
}

/// An optional number as a table cell: `-` when absent.
fn number<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}

impl Session {
    /// Sends a request; a refusal becomes the error (its JSON printed first under `--json`).
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Value, CliError> {
        let Answer { status, body, text } = self.client.send(method, path, body, if_match).await?;
        if status.is_success() {
            return Ok(body);
        }
        if self.json && !body.is_null() {
            println!("{body}");
        }
        let message = body["error"].as_str().map(str::to_owned).unwrap_or_else(|| text.trim().to_owned());
        let code = body["code"].as_str().map(|code| format!(" ({code})")).unwrap_or_default();
        let hint = match (status.as_u16(), self.keyed) {
            (401, false) => "; set SEPP_ADMIN_KEY to one of the server's admin.keys",
            (401, true) => "; the key in SEPP_ADMIN_KEY is not one of the server's admin.keys",
            _ => "",
        };
        Err(CliError::Refused { message, code, status: status.as_u16(), hint })
    }

    /// Sends a request and reads its answer as `T`.
    async fn fetch<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<T, CliError> {
        typed(path, self.call(method, path, body, if_match).await?)
    }

    /// The one path of every command that shows an answer: sends the request, prints the API's
    /// JSON under `--json`, else reads the answer as `T` and hands it to `show`.
    async fn show<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<&str>,
        show: impl FnOnce(T) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let raw = self.call(method, path, body, if_match).await?;
        self.print_or(path, raw, show)
    }

    /// Prints `raw` under `--json`, else reads it as `T` and hands it to `show`.
    fn print_or<T: DeserializeOwned>(
        &self,
        path: &str,
        raw: Value,
        show: impl FnOnce(T) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        if self.json {
            self.print_json(&raw);
            return Ok(());
        }
        show(typed(path, raw)?)
    }

    fn print_json(&self, value: &Value) {
        println!("{}", serde_json::to_string_pretty(value).expect("JSON prints"));
    }

    async fn run(&self, verb: Verb) -> Result<(), CliError> {
        match verb {
            Verb::Queues => self.queues().await,
            Verb::Peek(args) => {
                let mut pairs = vec![("state".to_owned(), args.state), ("limit".to_owned(), args.limit.to_string())];
                pairs.extend(args.cursor.map(|cursor| ("cursor".to_owned(), cursor)));
                pairs.extend(filter_pairs(&args.filter)?);
                self.peek(&args.queue, &pairs).await
            }
            Verb::Job { id } => self.job(&id).await,
            Verb::Enqueue(args) => self.enqueue(args).await,
            Verb::DeadLetters(DeadLetterVerb::List { queue, limit, cursor, filter }) => {
                let mut pairs =
                    vec![("state".to_owned(), "dead_letter".to_owned()), ("limit".to_owned(), limit.to_string())];
                pairs.extend(cursor.map(|cursor| ("cursor".to_owned(), cursor)));
                pairs.extend(filter_pairs(&filter)?);
                self.peek(&queue, &pairs).await
            }
            Verb::DeadLetters(DeadLetterVerb::Requeue(action)) => {
                self.dead_letter_action(action, "requeue", "requeued").await
            }
            Verb::DeadLetters(DeadLetterVerb::Delete(action)) => {
                self.dead_letter_action(action, "delete", "deleted").await
            }
            Verb::Purge { queue, yes } => self.purge(&queue, yes).await,
            Verb::Audit(args) => self.audit(args).await,
            Verb::Workers => self.workers().await,
            Verb::Cancel { id, reason } => self.cancel(&id, reason).await,
            Verb::Pause(args) => self.pause(args).await,
            Verb::Resume { queue, all } => self.resume(queue.filter(|_| !all)).await,
            Verb::Pauses => self.pauses().await,
            Verb::Settings { queue, set, unset } => self.settings(&queue, &set, &unset).await,
            Verb::Schedules(ScheduleVerb::List) => self.schedules().await,
            Verb::Schedules(ScheduleVerb::Set(args)) => self.set_schedule(*args).await,
            Verb::Schedules(ScheduleVerb::Delete { id }) => self.delete_schedule(&id).await,
        }
    }

    /// Every queue, a page of 1,000 at a time.
    async fn queues(&self) -> Result<(), CliError> {
        let mut all: Vec<Value> = Vec::new();
        loop {
            let after = all.last().and_then(|last| last["name"].as_str());
            let pairs: Vec<(String, String)> =
                after.map(|name| ("after".into(), name.to_owned())).into_iter().collect();
            let page = self.call(Method::GET, &format!("/queues{}", query(&pairs)), None, None).await?;
            let page = match page {
                Value::Array(page) => page,
                _ => Vec::new(),
            };
            let full = page.len() >= crate::admin::queues::LIST_LIMIT;
            all.extend(page);
            if !full {
                break;
            }
        }
        self.print_or("/queues", Value::Array(all), |queues: Vec<api::Queue>| {
            let rows: Vec<Vec<String>> = queues
                .iter()
                .map(|queue| {
                    let depths = &queue.depths;
                    vec![
                        queue.name.clone(),
                        depths.ready.to_string(),
                        depths.scheduled.to_string(),
                        depths.inflight.to_string(),
                        depths.dead_lettered.to_string(),
                        if queue.declared { "yes".into() } else { "no".into() },
                    ]
                })
                .collect();
            table(&["QUEUE", "READY", "SCHEDULED", "INFLIGHT", "DEAD", "DECLARED"], &rows);
            Ok(())
        })
    }

    async fn peek(&self, queue: &str, pairs: &[(String, String)]) -> Result<(), CliError> {
        let path = format!("/queues/{}/jobs{}", segment(queue), query(pairs));
        self.show(Method::GET, &path, None, None, |page: api::JobPage| {
            let rows: Vec<Vec<String>> = page
                .jobs
                .iter()
                .map(|job| {
                    let when = job.failed_at_ms.or(job.due_at_ms).or(job.lease_expires_at_ms);
                    vec![
                        job.id.clone(),
                        job.job_type.clone(),
                        job.priority.to_string(),
                        format!("{}/{}", job.attempt, job.max_attempts),
                        time_at(job.enqueued_at_ms),
                        when.map(time_at).unwrap_or_else(|| "-".into()),
                        job.cause.as_ref().map(wire).unwrap_or_else(|| "-".into()),
                        job.key_b64.clone(),
                    ]
                })
                .collect();
            table(&["ID", "TYPE", "PRIO", "ATTEMPT", "ENQUEUED", "DUE/LEASE/FAILED", "CAUSE", "KEY"], &rows);
            if let Some(cursor) = &page.next_cursor {
                let truncated = if page.truncated { " (the scan limit ended this page early)" } else { "" };
                println!("more: --cursor {cursor}{truncated}");
            }
            Ok(())
        })
        .await
    }

    async fn job(&self, id: &str) -> Result<(), CliError> {
        self.show(Method::GET, &format!("/jobs/{}", segment(id)), None, None, |job: api::Job| {
            let fields = [
                ("id", job.id.clone()),
                ("queue", job.queue.clone().unwrap_or_else(|| "-".into())),
                ("state", job.state.as_ref().map(wire).unwrap_or_else(|| "-".into())),
                ("job_type", job.job_type.clone()),
                ("priority", job.priority.to_string()),
                ("attempt", job.attempt.to_string()),
                ("max_attempts", job.max_attempts.to_string()),
            ];
            for (field, value) in fields {
                println!("{field:<20} {value}");
            }
            let times = [
                ("enqueued_at_ms", Some(job.enqueued_at_ms)),
                ("scheduled_at_ms", job.scheduled_at_ms),
                ("due_at_ms", job.due_at_ms),
                ("lease_expires_at_ms", job.lease_expires_at_ms),
            ];
            for (field, value) in times {
                if let Some(value) = value {
                    println!("{field:<20} {}", time_at(value));
                }
            }
            let custom = serde_json::to_string(&job.custom).expect("JSON prints");
            println!("{:<20} {custom}", "custom");
            let payload = &job.payload;
            println!("{:<20} {} ({} bytes)", "payload encoding", payload.encoding, payload.size_bytes);
            if let Some(b64) = &payload.data_b64
                && let Ok(data) = STANDARD.decode(b64)
            {
                match String::from_utf8(data) {
                    Ok(text) => println!("{:<20} {text}", "payload"),
                    Err(_) => println!("{:<20} {b64} (base64)", "payload"),
                }
            }
            Ok(())
        })
        .await
    }

    async fn enqueue(&self, args: EnqueueArgs) -> Result<(), CliError> {
        let data_b64 = match (&args.data, &args.data_b64, &args.file) {
            (Some(text), _, _) => Some(STANDARD.encode(text)),
            (_, Some(b64), _) => Some(b64.clone()),
            (_, _, Some(path)) => Some(STANDARD.encode(
                std::fs::read(path).map_err(|error| CliError::Read { path: path.display().to_string(), error })?,
            )),
            _ => None,
        };
        let mut custom = serde_json::Map::new();
        for entry in &args.custom {
            let (key, value) = split_pair(entry)?;
            let typed = match value.as_str() {
                "true" => api::CustomValue::Bool(true),
                "false" => api::CustomValue::Bool(false),
                text => text
                    .parse::<i64>()
                    .map(api::CustomValue::Int)
                    .or_else(|_| text.parse::<f64>().map(api::CustomValue::Double))
                    .unwrap_or_else(|_| api::CustomValue::String(text.to_owned())),
            };
            custom.insert(key, serde_json::to_value(typed).unwrap_or_default());
        }
        let request = api::EnqueueRequest {
            job_type: args.job_type,
            payload: data_b64.map(|data_b64| api::PayloadInput {
                encoding: args.encoding,
                data_b64: Some(data_b64),
                data_text: None,
            }),
            priority: args.priority,
            max_attempts: args.max_attempts,
            scheduled_at_ms: args.scheduled_at_ms,
            idempotency_key: args.idempotency_key,
            custom: (!custom.is_empty()).then_some(custom),
        };
        let body = request_body(&request);
        let path = format!("/queues/{}/jobs", segment(&args.queue));
        self.show(Method::POST, &path, Some(&body), None, |answer: api::Enqueued| {
            println!("{}", answer.job_id);
            Ok(())
        })
        .await
    }

    async fn dead_letter_action(&self, action: DeadLetterAction, verb: &str, counted: &str) -> Result<(), CliError> {
        let queue = segment(&action.queue);
        if action.all {
            let mut custom = Map::new();
            for entry in &action.filter.custom {
                let (key, value) = split_pair(entry)?;
                custom.insert(key, Value::from(value));
            }
            let body = request_body(&api::BulkRequest {
                state: "dead_letter".to_owned(),
                action: verb.to_owned(),
                job_type: action.filter.job_type.clone(),
                custom: Some(custom),
                reason: action.reason.clone(),
                dry_run: false,
            });
            let path = format!("/queues/{queue}/jobs:bulk");
            return self
                .show(Method::POST, &path, Some(&body), None, |answer: api::BulkAffected| {
                    println!("{counted} {}", answer.affected);
                    Ok(())
                })
                .await;
        }
        if action.keys.is_empty() {
            return Err(usage("name the dead letters' keys, or pass --all"));
        }
        let (mut done, mut missing) = (0, 0);
        for keys in action.keys.chunks(KEYS_PER_REQUEST) {
            let body = request_body(&api::KeysRequest { keys_b64: keys.to_vec(), reason: action.reason.clone() });
            let path = format!("/queues/{queue}/dead-letters:{verb}");
            let (touched, not_found) = if verb == "requeue" {
                let answer: api::RequeuedResult = self.fetch(Method::POST, &path, Some(&body), None).await?;
                (answer.requeued, answer.missing)
            } else {
                let answer: api::DeletedResult = self.fetch(Method::POST, &path, Some(&body), None).await?;
                (answer.deleted, answer.missing)
            };
            done += touched;
            missing += not_found;
        }
        if self.json {
            self.print_json(&json!({ counted: done, "missing": missing }));
        } else {
            println!("{counted} {done}, missing {missing}");
        }
        Ok(())
    }

    async fn cancel(&self, id: &str, reason: Option<String>) -> Result<(), CliError> {
        let body = request_body(&api::CancelRequest { reason });
        let path = format!("/jobs/{}/cancel", segment(id));
        self.show(Method::POST, &path, Some(&body), None, |answer: api::CancelResult| {
            match answer.outcome.as_str() {
                "removed" => println!("cancelled job {id}: it was queued and is now a dead letter"),
                "lease_cancelled" => {
                    println!("cancelled job {id}: it is running; its worker learns it at its next extend, ack or nack")
                }
                _ => println!("job {id} was already cancelled while running"),
            }
            Ok(())
        })
        .await
    }

    async fn pause(&self, args: PauseArgs) -> Result<(), CliError> {
        let until_ms = match (args.until_ms, args.for_secs) {
            (Some(until_ms), _) => Some(until_ms),
            (None, Some(seconds)) => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                Some(now.as_millis() as i64 + (seconds as i64).saturating_mul(1000))
            }
            (None, None) => None,
        };
        let body = request_body(&api::PauseRequest { until_ms, reason: args.reason });
        let path = match args.queue.filter(|_| !args.all) {
            Some(queue) => format!("/queues/{}/pause", segment(&queue)),
            None => "/queues:pause".to_owned(),
        };
        self.show(Method::POST, &path, Some(&body), None, |answer: api::PauseResult| {
            let scope = pause_scope(answer.queue.as_deref());
            match answer.until_ms {
                Some(until_ms) => println!("paused {scope} until {}", rfc3339_ms(until_ms)),
                None => println!("paused {scope} until resumed"),
            }
            Ok(())
        })
        .await
    }

    async fn resume(&self, queue: Option<String>) -> Result<(), CliError> {
        let path = match &queue {
            Some(queue) => format!("/queues/{}/resume", segment(queue)),
            None => "/queues:resume".to_owned(),
        };
        // A resume takes no body; an empty object is accepted.
        self.show(Method::POST, &path, Some(&json!({})), None, |answer: api::ResumeResult| {
            let scope = pause_scope(answer.queue.as_deref());
            if answer.resumed {
                println!("resumed {scope}");
            } else {
                println!("{scope} was not paused");
            }
            Ok(())
        })
        .await
    }

    async fn schedules(&self) -> Result<(), CliError> {
        self.show(Method::GET, "/schedules", None, None, |answer: api::ScheduleList| {
            let rows: Vec<Vec<String>> = answer
                .schedules
                .iter()
                .map(|schedule| {
                    let cadence = match (schedule.every_ms, &schedule.cron) {
                        (Some(ms), _) => format!("every {} s", ms as f64 / 1000.0),
                        (None, Some(cron)) => format!("{} ({})", cron.expression, cron.time_zone),
                        (None, None) => "- (-)".to_owned(),
                    };
                    vec![
                        schedule.id.clone(),
                        cadence,
                        schedule.queue.clone(),
                        schedule.job_type.clone(),
                        number(schedule.next_fire_at_ms),
                        schedule.fired.to_string(),
                    ]
                })
                .collect();
            if rows.is_empty() {
                println!("no schedules");
            } else {
                table(&["ID", "WHEN", "QUEUE", "TYPE", "NEXT_MS", "FIRED"], &rows);
            }
            Ok(())
        })
        .await
    }

    async fn set_schedule(&self, args: ScheduleArgs) -> Result<(), CliError> {
        let (cron, every_ms) = match (args.cron, args.every) {
            (Some(expression), _) => (Some(api::CronInput { expression, time_zone: args.time_zone }), None),
            (None, Some(seconds)) => (None, Some(seconds.saturating_mul(1000))),
            (None, None) => return Err(usage("give --cron or --every")),
        };
        let payload =
            args.data.map(|data| api::PayloadInput { encoding: args.encoding, data_b64: None, data_text: Some(data) });
        let body = request_body(&api::ScheduleBody {
            cron,
            every_ms,
            queue: args.queue,
            overlap: Some(args.overlap),
            catch_up: Some(args.catch_up),
            job: api::EnqueueRequest {
                job_type: args.job_type,
                payload,
                priority: args.priority,
                max_attempts: args.max_attempts,
                scheduled_at_ms: None,
                idempotency_key: None,
                custom: None,
            },
        });
        let path = format!("/schedules/{}", segment(&args.id));
        self.show(Method::PUT, &path, Some(&body), None, |answer: api::ScheduleInfo| {
            let next = answer.next_fire_at_ms.map_or_else(|| "-".to_owned(), rfc3339_ms);
            println!("schedule {} set; it fires next at {next}", args.id);
            Ok(())
        })
        .await
    }

    async fn delete_schedule(&self, id: &str) -> Result<(), CliError> {
        self.show(Method::DELETE, &format!("/schedules/{}", segment(id)), None, None, |answer: api::ScheduleDeleted| {
            if answer.deleted {
                println!("schedule {id} deleted");
            } else {
                println!("no schedule {id}");
            }
            Ok(())
        })
        .await
    }

    async fn pauses(&self) -> Result<(), CliError> {
        self.show(Method::GET, "/pauses", None, None, |answer: api::PauseList| {
            let until = |until_ms: Option<i64>| until_ms.map_or_else(|| "until resumed".to_owned(), rfc3339_ms);
            let mut rows = Vec::new();
            if let Some(all) = &answer.all_queues {
                rows.push(vec!["(every queue)".to_owned(), until(all.until_ms)]);
            }
            for pause in &answer.queues {
                rows.push(vec![pause.queue.clone(), until(pause.until_ms)]);
            }
            if rows.is_empty() {
                println!("no queue is paused");
            } else {
                table(&["QUEUE", "UNTIL"], &rows);
            }
            Ok(())
        })
        .await
    }

    async fn settings(&self, queue: &str, set: &[String], unset: &[String]) -> Result<(), CliError> {
        let path = format!("/queues/{}", segment(queue));
        if !set.is_empty() || !unset.is_empty() {
            let mut overrides = serde_json::Map::new();
            for pair in set {
                let (field, value) =
                    pair.split_once('=').ok_or_else(|| usage(format!("--set {pair:?} is not field=value")))?;
                let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
                overrides.insert(field.to_owned(), value);
            }
            for field in unset {
                overrides.insert(field.clone(), Value::Null);
            }
            let config: api::ConfigView = self.fetch(Method::GET, "/config", None, None).await?;
            let body = request_body(&api::QueuePutRequest { etag: config.etag, overrides });
            self.call(Method::PUT, &path, Some(&body), None).await?;
        }
        self.show(Method::GET, &path, None, None, |shown: api::Queue| {
            // The effective limits as a JSON object, to list every field by name.
            let effective = serde_json::to_value(&shown.effective).expect("limits serialize");
            let entry = shown.overrides.unwrap_or(Value::Null);
            let rows: Vec<Vec<String>> = effective
                .as_object()
                .into_iter()
                .flatten()
                .map(|(field, value)| {
                    let source = if entry.get(field).is_some_and(|set| !set.is_null()) { "queue" } else { "default" };
                    let value = if value.is_null() { "unset".to_owned() } else { value.to_string() };
                    vec![field.clone(), value, source.to_owned()]
                })
                .collect();
            table(&["FIELD", "VALUE", "FROM"], &rows);
            if shown.held_by_key_limit > 0 {
                println!("{} ready jobs wait on their key's in-flight limit", shown.held_by_key_limit);
            }
            Ok(())
        })
        .await
    }

    async fn purge(&self, queue: &str, yes: bool) -> Result<(), CliError> {
        if !yes {
            return Err(usage(format!(
                "purging deletes every job of {queue:?} and its declaration; pass --yes to confirm"
            )));
        }
        let config: api::ConfigView = self.fetch(Method::GET, "/config", None, None).await?;
        let path = format!("/queues/{}?purge=true", segment(queue));
        self.show(Method::DELETE, &path, None, Some(&config.etag), |answer: api::QueueDeleted| {
            println!("purged {}", answer.purged);
            Ok(())
        })
        .await
    }

    async fn audit(&self, args: AuditArgs) -> Result<(), CliError> {
        let mut pairs = vec![("limit".to_owned(), args.limit.to_string())];
        pairs.extend(args.before.map(|before| ("before".to_owned(), before.to_string())));
        pairs.extend(args.actor.map(|actor| ("actor".to_owned(), actor)));
        pairs.extend(args.action_prefix.map(|prefix| ("action_prefix".to_owned(), prefix)));
        self.show(Method::GET, &format!("/audit{}", query(&pairs)), None, None, |page: api::AuditPage| {
            let rows: Vec<Vec<String>> = page
                .entries
                .iter()
                .map(|entry| {
                    vec![
                        entry.seq.to_string(),
                        time_at(entry.ts_ms),
                        format!("{} ({})", entry.actor, entry.role),
                        entry.action.clone(),
                        entry.details.to_string(),
                    ]
                })
                .collect();
            table(&["SEQ", "TIME", "ACTOR", "ACTION", "DETAILS"], &rows);
            if let Some(before) = page.next_before {
                println!("more: --before {before}");
            }
            Ok(())
        })
        .await
    }

    async fn workers(&self) -> Result<(), CliError> {
        self.show(Method::GET, "/workers", None, None, |answer: api::WorkerList| {
            let rows: Vec<Vec<String>> = answer
                .workers
                .iter()
                .map(|worker| {
                    let held: Vec<String> =
                        worker.held.iter().map(|(queue, count)| format!("{queue}={count}")).collect();
                    vec![
                        worker.worker_id.clone(),
                        time_at(worker.last_seen_ms),
                        worker.held_total.to_string(),
                        if held.is_empty() { "-".into() } else { held.join(" ") },
                    ]
                })
                .collect();
            table(&["WORKER", "LAST SEEN", "HELD", "BY QUEUE"], &rows);
            Ok(())
        })
        .await
    }
}

/// Reads an answer of `path` as `T`.
fn typed<T: DeserializeOwned>(path: &str, raw: Value) -> Result<T, CliError> {
    serde_json::from_value(raw).map_err(|error| CliError::Malformed { path: path.to_owned(), error })
}

/// "queue q" or "every queue", from a pause or resume answer's `queue`.
fn pause_scope(queue: Option<&str>) -> String {
    match queue {
        Some(queue) => format!("queue {queue:?}"),
        None => "every queue".to_owned(),
    }
}

/// The JSON of a request body (every request type serializes).
fn request_body(request: &impl serde::Serialize) -> Value {
    serde_json::to_value(request).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_and_segments_are_percent_encoded() {
        let pairs = vec![("custom.tenant".to_owned(), "a b&c".to_owned()), ("state".to_owned(), "ready".to_owned())];
        assert_eq!(query(&pairs), "?custom.tenant=a%20b%26c&state=ready");
        assert_eq!(query(&[]), "");
        assert_eq!(segment("emails/eu"), "emails%2Feu");
    }
}
