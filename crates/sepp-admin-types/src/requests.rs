//! The request bodies and query strings of the admin API, as the server parses them and
//! `sepp admin` and the UI send them. Where the server checks a value itself to name it in its
//! own error (a bulk action's name, a state), the field is a plain string here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /session`: a key's name and material.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LoginRequest {
    pub name: String,
    pub key: String,
}

/// The query of `GET /overview`: `history=false` leaves the history out.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct OverviewQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub history: Option<bool>,
}

/// The query of `GET /queues`: at most `limit` queues, by name, after `after`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QueueListQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub after: Option<String>,
}

/// `PUT /queues/{name}`: the fields to set (a value) or remove (`null`) in the queue's
/// declaration, against the configuration file's `etag`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QueuePutRequest {
    pub etag: String,
    #[cfg_attr(test, ts(type = "Record<string, ConfigValue>"))]
    pub overrides: serde_json::Map<String, Value>,
}

/// The query of `DELETE /queues/{name}`: `purge=true` also removes the queue's jobs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QueueDeleteQuery {
    #[serde(default)]
    #[cfg_attr(test, ts(type = "boolean | undefined"))]
    pub purge: bool,
}

/// `POST /jobs/{id}/cancel` (the body may be left out).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
}

/// `POST /queues/{name}/jobs:dead-letter`: dead-letters the jobs of `keys_b64` found in `state`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DeadLetterRequest {
    pub state: String,
    pub keys_b64: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
}

/// `POST /queues/{name}/dead-letters:requeue` and `:delete`: the dead letters of `keys_b64`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KeysRequest {
    pub keys_b64: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
}

/// `POST /queues/{name}/jobs:bulk`: `action` on every job in `state` that matches the filter
/// (`job_type`, and `custom` entries compared as strings); with `dry_run`, only counts them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BulkRequest {
    pub state: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub job_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "Record<string, string | number>"))]
    pub custom: Option<serde_json::Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
    #[serde(default)]
    #[cfg_attr(test, ts(type = "boolean | undefined"))]
    pub dry_run: bool,
}

/// `POST /queues/{name}/pause` and `POST /queues:pause`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct PauseRequest {
    /// When the pause ends by itself, in Unix milliseconds; absent: until resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub until_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<String>,
}

/// `PUT /config`: the changes (`null` removes a key), against the file's `etag`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ConfigPutRequest {
    pub etag: String,
    pub changes: Vec<crate::ConfigChange>,
}

/// `POST /auth/keys`: a new admin key, against the file's `etag`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KeyAddRequest {
    pub etag: String,
    pub name: String,
    pub key: String,
}
