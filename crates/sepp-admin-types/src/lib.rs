//! The JSON answers and request bodies of the sepp admin HTTP API (`docs/admin.md` is the
//! contract): the server builds its answers from these types, `sepp admin` reads them back, and
//! `admin-ui/src/api/types.ts` and the JSON Schema the UI checks answers against,
//! `admin-ui/src/api/schema.json`, are generated from them (see the `types_ts` and `schema_json`
//! tests).
//!
//! Field names are the wire names. An `Option` field marked `skip_serializing_if` is left out
//! when it is `None`; every other `Option` is sent as `null`.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod requests;
#[cfg(test)]
mod schema_json;
#[cfg(test)]
mod types_ts;

pub use requests::*;

/// The role of an admin key (or of everyone when admin authentication is off).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    Operator,
    Admin,
}

/// `GET /session`: who the caller is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Session {
    /// The key's name; null when authentication is off.
    pub name: Option<String>,
    pub role: Role,
    pub auth_enabled: bool,
}

/// `POST /session`: the signed-in key.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct LoginResult {
    pub name: String,
    pub role: Role,
    pub expires_at_ms: i64,
}

/// Counts since boot.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Totals {
    pub enqueued: u64,
    pub reserved: u64,
    pub acked: u64,
    pub nacked: u64,
    pub dead_lettered: u64,
}

/// Per-second rates.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Rates {
    pub enqueued: f64,
    pub acked: f64,
    pub nacked: f64,
    pub dead_lettered: f64,
}

/// How many jobs a queue holds in each state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Depths {
    pub ready: u64,
    pub scheduled: u64,
    pub inflight: u64,
    pub dead_lettered: u64,
}

/// One queue in a stats frame.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QueueFrame {
    #[serde(flatten)]
    pub depths: Depths,
    pub totals: Totals,
    pub rates: Rates,
    /// Ready jobs that wait because their key is at its `key_max_in_flight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub held_by_key_limit: Option<u64>,
    /// Reserves skip the queue (paused by name, or with every queue).
    pub paused: bool,
}

/// Every queue summed: depths, totals since boot and per-second rates.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct FrameTotal {
    #[serde(flatten)]
    pub depths: Depths,
    pub totals: Totals,
    pub rates: Rates,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub held_by_key_limit: Option<u64>,
}

/// The server part of a stats frame.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct FrameServer {
    pub command_queue_len: u64,
}

/// One tick of live statistics: the busiest queues (at most 500) and the sum over every queue.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Frame {
    pub seq: u64,
    pub ts_ms: i64,
    pub server: FrameServer,
    pub queues: BTreeMap<String, QueueFrame>,
    /// How many queues there are; `truncated` when `queues` holds only the busiest of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub queue_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub truncated: Option<bool>,
    /// Older servers leave it out (the frame's queues were all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub total: Option<FrameTotal>,
}

/// One point of a history series: per-second rates at `ts_ms` (a mean over a span of seconds in
/// long series).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct HistorySample {
    pub ts_ms: i64,
    #[serde(flatten)]
    pub rates: Rates,
}

/// The history the overview and `hello` carry: the busiest queues' series (last 5 minutes), the
/// folded queues summed (`other`, same span) and every queue summed (`total`, the whole ring).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct History {
    pub queues: BTreeMap<String, Vec<HistorySample>>,
    pub other: Vec<HistorySample>,
    pub total: Vec<HistorySample>,
}

/// The history ring's size and use.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct HistoryInfo {
    pub budget_bytes: u64,
    pub bytes: u64,
    pub seconds: u64,
    pub queues_tracked: u64,
    pub queues_folded: u64,
}

/// `GET /queues/{name}/history`: the queue's own series, empty when it is folded into `other`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QueueHistory {
    pub name: String,
    pub tracked: bool,
    pub seconds: u64,
    pub samples: Vec<HistorySample>,
}

/// The server facts of `GET /overview`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ServerSummary {
    pub version: String,
    pub started_at_ms: i64,
    pub now_ms: i64,
    pub strict_queues: bool,
    pub dead_letter_retention_ms: u64,
    pub command_queue_len: u64,
}

/// `GET /overview[?history=false]`: `history` is left out with `history=false`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Overview {
    pub server: ServerSummary,
    pub frame: Frame,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub history: Option<History>,
    pub history_info: HistoryInfo,
}

/// The first event of `GET /events` (`hello`): the history and the latest frame.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Hello {
    pub history: History,
    pub history_info: HistoryInfo,
    pub frame: Frame,
}

/// `GET /server-info`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ServerInfo {
    pub version: String,
    pub started_at_ms: i64,
    pub listen_addr: String,
    pub tls: bool,
    pub auth_enforcing: bool,
    pub strict_queues: bool,
    pub db_path: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RetryBackoff {
    None,
    Exponential,
}

/// The per-queue limits a `[[queues]]` entry may set (all optional there); as a queue's
/// `effective` limits, null where there is no limit.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QueueLimits {
    pub max_lease_duration_ms: Option<u64>,
    pub default_max_attempts: Option<u64>,
    pub max_attempts_ceiling: Option<u64>,
    pub default_priority: Option<u64>,
    pub retry_delay_ms: Option<u64>,
    pub retry_backoff: Option<RetryBackoff>,
    pub retry_delay_max_ms: Option<u64>,
    pub max_payload_bytes: Option<u64>,
    pub allowed_encodings: Option<Vec<String>>,
    pub allowed_job_types: Option<Vec<String>>,
    pub max_schedule_horizon_ms: Option<u64>,
    pub max_custom_entries: Option<u64>,
    pub max_custom_total_bytes: Option<u64>,
    pub max_custom_key_bytes: Option<u64>,
    pub dedup_window_ms: Option<u64>,
    pub max_queue_depth: Option<u64>,
    pub max_in_flight: Option<u64>,
    pub rate_limit: Option<u64>,
    pub rate_period_ms: Option<u64>,
    pub rate_burst: Option<u64>,
    pub limit_key: Option<String>,
    pub key_max_in_flight: Option<u64>,
    pub key_rate_limit: Option<u64>,
    pub key_rate_period_ms: Option<u64>,
    pub key_rate_burst: Option<u64>,
    pub key_overrides: Option<BTreeMap<String, KeyOverride>>,
}

/// The limits of one value of a queue's `limit_key` (unset: the queue's `key_*` default).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct KeyOverride {
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub max_in_flight: Option<u64>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub rate_limit: Option<u64>,
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub rate_burst: Option<u64>,
}

/// A queue's pause: `all_queues` when only the pause of every queue holds it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QueuePause {
    /// When the pause ends by itself; null: until resumed.
    pub until_ms: Option<i64>,
    pub all_queues: bool,
}

/// `GET /queues/{name}` and each entry of `GET /queues`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Queue {
    pub name: String,
    pub declared: bool,
    pub depths: Depths,
    /// The queue's `[[queues]]` entry (unset fields null), or null when it is not declared.
    #[cfg_attr(test, ts(type = "(QueueLimits & { name: string }) | null"))]
    #[cfg_attr(test, schemars(with = "Option<QueueOverrides>"))]
    pub overrides: Option<Value>,
    pub effective: QueueLimits,
    /// Null unless reserves skip the queue; `all_queues` when only the pause of every queue holds it.
    pub paused: Option<QueuePause>,
    /// Ready jobs that wait because their key is at its `key_max_in_flight`.
    pub held_by_key_limit: u64,
}

/// What `Queue::overrides` holds, for the schema only: a `[[queues]]` entry, its unset fields null.
/// Its fields are only described, never read.
#[cfg(test)]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct QueueOverrides {
    name: String,
    #[serde(flatten)]
    limits: QueueLimits,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Ready,
    Scheduled,
    Inflight,
    DeadLetter,
}

/// A custom metadata value.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(untagged)]
pub enum CustomValue {
    String(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

/// A job's payload as a listing or detail view shows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Payload {
    pub encoding: String,
    pub size_bytes: u64,
    /// Present in detail views, and in listings for payloads up to 4 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub data_b64: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterCause {
    AttemptsExhausted,
    Rejected,
    LeaseExpired,
    Admin,
    Cancelled,
    Unspecified,
}

/// A live job or a dead letter.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Job {
    pub id: String,
    pub key_b64: String,
    pub job_type: String,
    pub priority: u64,
    pub attempt: u64,
    pub max_attempts: u64,
    pub enqueued_at_ms: i64,
    pub custom: BTreeMap<String, CustomValue>,
    pub payload: Payload,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub scheduled_at_ms: Option<i64>,
    /// When a scheduled job (or a delayed retry) becomes ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub due_at_ms: Option<i64>,
    /// In flight under a lease that was cancelled: its worker learns it at its next extend, ack or nack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub cancelled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub lease_expires_at_ms: Option<i64>,
    /// Set by the job-by-id lookup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub state: Option<JobState>,
    /// Dead letters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub failed_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub cause: Option<DeadLetterCause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub last_reason: Option<String>,
}

/// `GET /queues/{name}/jobs`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct JobPage {
    pub jobs: Vec<Job>,
    pub next_cursor: Option<String>,
    pub truncated: bool,
}

/// `GET /queues/{name}/jobs:count`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct JobCount {
    pub count: u64,
}

/// A payload as `POST /queues/{name}/jobs` takes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PayloadInput {
    pub encoding: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub data_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub data_text: Option<String>,
}

/// What `POST /queues/{name}/jobs` takes. `custom` holds strings, numbers and bools
/// ([`CustomValue`]); any other JSON value is refused, naming its key.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct EnqueueRequest {
    pub job_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub payload: Option<PayloadInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub priority: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub max_attempts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub scheduled_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "Record<string, CustomValue>"))]
    pub custom: Option<serde_json::Map<String, Value>>,
}

/// `POST /queues/{name}/jobs`: the new job's id.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Enqueued {
    pub job_id: String,
}

/// `POST /jobs/{id}:cancel`: `outcome` is `removed`, `cancelled_in_flight` or `already_cancelled`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct CancelResult {
    pub job_id: String,
    pub outcome: String,
}

/// `POST /queues/{name}/jobs:dead-letter`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DeadLetteredResult {
    pub dead_lettered: u64,
    pub missing: u64,
}

/// `POST /queues/{name}/dead-letters:requeue`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct RequeuedResult {
    pub requeued: u64,
    pub missing: u64,
}

/// `POST /queues/{name}/dead-letters:delete`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct DeletedResult {
    pub deleted: u64,
    pub missing: u64,
}

/// `POST /queues/{name}/jobs:bulk` with `dry_run`: how many jobs match.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct BulkMatched {
    pub matched: u64,
}

/// `POST /queues/{name}/jobs:bulk`: how many jobs the action touched.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct BulkAffected {
    pub affected: u64,
}

/// `POST /queues/{name}/jobs:bulk`: `{matched}` with `dry_run`, else `{affected}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(untagged)]
pub enum BulkAnswer {
    Matched(BulkMatched),
    Affected(BulkAffected),
}

/// `DELETE /queues/{name}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct QueueDeleted {
    pub purged: u64,
    pub etag: String,
}

/// An audit log entry; `details` depend on the action.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct AuditEntry {
    pub seq: u64,
    pub ts_ms: i64,
    pub actor: String,
    #[cfg_attr(test, ts(type = "Role"))]
    #[cfg_attr(test, schemars(with = "Role"))]
    pub role: String,
    pub action: String,
    #[cfg_attr(test, ts(type = "Record<string, unknown>"))]
    #[cfg_attr(test, schemars(with = "BTreeMap<String, Value>"))]
    pub details: Value,
}

/// `GET /audit`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub next_before: Option<u64>,
}

/// The query of `GET /audit`: entries before the sequence number `before`, at most `limit`
/// (1..100, default 50), of one actor, with actions starting with `action_prefix`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct AuditQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub before: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub action_prefix: Option<String>,
}

/// `GET /config`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ConfigView {
    #[cfg_attr(test, ts(type = "Record<string, unknown>"))]
    #[cfg_attr(test, schemars(with = "BTreeMap<String, Value>"))]
    pub effective: Value,
    pub etag: String,
    pub env_pinned: Vec<String>,
    pub restart_only: Vec<String>,
    pub pending_restart: Vec<String>,
}

/// One change of `PUT /config`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ConfigChange {
    pub path: String,
    #[cfg_attr(test, ts(type = "ConfigValue"))]
    pub value: Value,
}

/// What a change of the configuration file answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WriteResult {
    pub applied: bool,
    pub requires_restart: Vec<String>,
    pub etag: String,
}

/// Why the core refused a job.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Rejection {
    pub reason: String,
    pub detail: String,
}

/// The body of every error answer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ErrorBody {
    pub error: String,
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub rejection: Option<Rejection>,
    /// On a node that does not serve (code `not_leader`): the leader's client address, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub leader_addr: Option<String>,
}

/// A worker id that reserved jobs recently, and what it holds now.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WorkerInfo {
    pub worker_id: String,
    pub last_seen_ms: i64,
    /// Reserve calls seen from it.
    pub reserves: u64,
    pub jobs_delivered: u64,
    /// Jobs it holds (in flight) now, per queue.
    pub held: BTreeMap<String, u64>,
    pub held_total: u64,
    /// The soonest lease among the jobs it holds, if any.
    pub next_lease_expires_at_ms: Option<i64>,
}

/// `GET /workers`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct WorkerList {
    pub workers: Vec<WorkerInfo>,
}

/// A cron cadence.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Cron {
    pub expression: String,
    pub time_zone: String,
}

/// The payload of a schedule's job.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PayloadSize {
    pub encoding: String,
    pub size_bytes: u64,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    Skip,
    Allow,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    Latest,
    None,
}

/// A recurring schedule as the admin API shows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ScheduleInfo {
    pub id: String,
    pub cron: Option<Cron>,
    pub every_ms: Option<u64>,
    pub queue: String,
    pub job_type: String,
    pub payload: Option<PayloadSize>,
    pub priority: Option<u64>,
    pub max_attempts: Option<u64>,
    pub custom: BTreeMap<String, CustomValue>,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    /// Null when a cron expression has no later slot.
    pub next_fire_at_ms: Option<i64>,
    pub last_slot_at_ms: Option<i64>,
    pub last_job_id: Option<String>,
    pub fired: u64,
    pub created_at_ms: i64,
}

/// `GET /schedules`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ScheduleList {
    pub schedules: Vec<ScheduleInfo>,
}

/// `DELETE /schedules/{id}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ScheduleDeleted {
    pub id: String,
    pub deleted: bool,
}

/// A cron cadence as `PUT /schedules/{id}` takes it (`time_zone` defaults to UTC).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct CronInput {
    pub expression: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub time_zone: Option<String>,
}

/// What `PUT /schedules/{id}` takes: a cadence (`cron` or `every_ms`), the job's queue and
/// fields (as `POST /queues/{name}/jobs` takes them), and the two policies (strings, which the
/// server checks and names in its error; the TypeScript types narrow them).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ScheduleBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub cron: Option<CronInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub every_ms: Option<u64>,
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "Overlap"))]
    pub overlap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "CatchUp"))]
    pub catch_up: Option<String>,
    #[serde(flatten)]
    pub job: EnqueueRequest,
}

/// `POST /queues/{name}/pause` and `POST /queues:pause`: the scope is `queue`, or `all_queues`
/// (true) for every queue.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PauseResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub all_queues: Option<bool>,
    pub paused: bool,
    pub until_ms: Option<i64>,
}

/// `POST /queues/{name}/resume` and `POST /queues:resume`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ResumeResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub all_queues: Option<bool>,
    pub resumed: bool,
}

/// The pause of every queue in `GET /pauses`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct AllQueuesPause {
    pub until_ms: Option<i64>,
}

/// One queue's own pause in `GET /pauses`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct NamedPause {
    pub queue: String,
    pub until_ms: Option<i64>,
}

/// `GET /pauses`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct PauseList {
    pub all_queues: Option<AllQueuesPause>,
    pub queues: Vec<NamedPause>,
}

/// One member of the cluster as the node asked sees it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ClusterMember {
    pub id: u64,
    /// Its client (gRPC) address.
    pub addr: String,
    /// Its cluster (Raft) address; null when this node does not know it.
    pub raft_addr: Option<String>,
    /// A voter, else a learner (catching up before it votes).
    pub voter: bool,
    pub leader: bool,
    /// Log entries the member lacks; known on the leader only (null elsewhere).
    pub replication_lag: Option<u64>,
}

/// `GET /cluster` on a node in cluster mode (`enabled` is always true).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ClusterNode {
    #[cfg_attr(test, ts(type = "true"))]
    #[cfg_attr(test, schemars(extend("const" = true)))]
    pub enabled: bool,
    pub node_id: u64,
    /// `leader`, `follower`, `candidate`, `learner`, ... as the node reports it.
    pub role: String,
    /// Whether this node's queue serves (the leader, once it is ready).
    pub serving: bool,
    pub term: u64,
    pub leader_id: Option<u64>,
    /// The leader's client (gRPC) address; its admin address is not known here.
    pub leader_addr: Option<String>,
    pub last_applied_index: Option<u64>,
    pub last_log_index: Option<u64>,
    pub snapshot_index: Option<u64>,
    pub members: Vec<ClusterMember>,
}

/// `GET /cluster` on a single node: `{enabled: false}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ClusterDisabled {
    #[cfg_attr(test, ts(type = "false"))]
    #[cfg_attr(test, schemars(extend("const" = false)))]
    pub enabled: bool,
}

/// `GET /cluster`: `{enabled: false}` on a single node.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(untagged)]
pub enum ClusterInfo {
    Disabled(ClusterDisabled),
    Node(ClusterNode),
}
