//! Pausing and resuming queues: `POST /queues/{name}/pause` and `/resume` for one queue,
//! `POST /queues:pause` and `/queues:resume` for every queue, `GET /pauses` to list them.
//!
//! A paused queue keeps accepting enqueues and its held leases go on; reserves skip it until it
//! is resumed or its `until_ms` passes. A pause is a record in the log, audited with it, so it
//! survives restarts and checkpoints, also for a queue with no jobs.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};

use sepp_core::validate::pause_problem;
use sepp_core::{ALL_QUEUES, TimeMs};

use crate::admin::AdminState;
use crate::admin::access::{Actor, Operator, Viewer};
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::errors::{AdminError, AdminResult};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    /// When the pause ends by itself, in Unix milliseconds; absent: until resumed.
    #[serde(default)]
    until_ms: Option<TimeMs>,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /queues/{name}/pause`.
pub async fn pause(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<PauseBody>,
) -> AdminResult<Json<Value>> {
    pause_scope(state, actor, queue, body).await
}

/// `POST /queues:pause`: every queue, also those that do not exist yet.
pub async fn pause_all(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Json(body): Json<PauseBody>,
) -> AdminResult<Json<Value>> {
    pause_scope(state, actor, ALL_QUEUES.to_owned(), body).await
}

async fn pause_scope(state: AdminState, actor: Actor, queue: String, body: PauseBody) -> AdminResult<Json<Value>> {
    if let Some(problem) = pause_problem(&queue, body.until_ms, body.reason.as_deref(), state.clock.now_ms()) {
        return Err(AdminError::invalid_argument(problem));
    }
    let (until_ms, reason) = (body.until_ms, body.reason);
    let view = pause_view(&queue, until_ms);
    let entry = ask(&state.committer, |reply| AdminCommand::Pause { queue, until_ms, reason, actor, reply }).await?;
    state.announce(&entry);
    Ok(Json(view))
}

/// `POST /queues/{name}/resume`.
pub async fn resume(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
) -> AdminResult<Json<Value>> {
    resume_scope(state, actor, queue).await
}

/// `POST /queues:resume`: lifts the pause of every queue; queues paused by name stay paused.
pub async fn resume_all(State(state): State<AdminState>, Operator(actor): Operator) -> AdminResult<Json<Value>> {
    resume_scope(state, actor, ALL_QUEUES.to_owned()).await
}

async fn resume_scope(state: AdminState, actor: Actor, queue: String) -> AdminResult<Json<Value>> {
    let mut view = scope_of(&queue);
    let entry = ask(&state.committer, |reply| AdminCommand::Resume { queue, actor, reply }).await?;
    if let Some(entry) = &entry {
        state.announce(entry);
    }
    view["resumed"] = json!(entry.is_some());
    Ok(Json(view))
}

/// `GET /pauses`: `{all_queues: {until_ms} | null, queues: [{queue, until_ms}]}`, exact (asked of
/// the committer, not a snapshot).
pub async fn list(State(state): State<AdminState>, Viewer(_): Viewer) -> AdminResult<Json<Value>> {
    let pauses = ask(&state.committer, |reply| AdminCommand::Pauses { reply }).await?;
    let mut all = Value::Null;
    let mut queues = Vec::new();
    for (queue, until_ms) in pauses {
        if &*queue == ALL_QUEUES {
            all = json!({ "until_ms": until_ms });
        } else {
            queues.push(json!({ "queue": &*queue, "until_ms": until_ms }));
        }
    }
    Ok(Json(json!({ "all_queues": all, "queues": queues })))
}

fn scope_of(queue: &str) -> Value {
    if queue == ALL_QUEUES { json!({ "all_queues": true }) } else { json!({ "queue": queue }) }
}

fn pause_view(queue: &str, until_ms: Option<TimeMs>) -> Value {
    let mut view = scope_of(queue);
    view["paused"] = json!(true);
    view["until_ms"] = json!(until_ms);
    view
}
