//! Pausing and resuming queues: `POST /queues/{name}/pause` and `/resume` for one queue,
//! `POST /queues:pause` and `/queues:resume` for every queue, `GET /pauses` to list them.
//!
//! A paused queue keeps accepting enqueues and its held leases go on; reserves skip it until it
//! is resumed or its `until_ms` passes. A pause is a record in the log, audited with it, so it
//! survives restarts and checkpoints, also for a queue with no jobs.

use axum::Json;
use axum::extract::{Path, State};
use sepp_admin_types as api;
use sepp_admin_types::{AllQueuesPause, NamedPause, PauseList, PauseResult, ResumeResult};

use sepp_core::validate::pause_problem;
use sepp_core::{ALL_QUEUES, TimeMs};

use crate::admin::AdminState;
use crate::admin::access::{Actor, Operator, Viewer};
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::errors::{AdminError, AdminResult};

/// `POST /queues/{name}/pause`.
pub async fn pause(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<api::PauseRequest>,
) -> AdminResult<Json<PauseResult>> {
    pause_scope(state, actor, queue, body).await
}

/// `POST /queues:pause`: every queue, also those that do not exist yet.
pub async fn pause_all(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Json(body): Json<api::PauseRequest>,
) -> AdminResult<Json<PauseResult>> {
    pause_scope(state, actor, ALL_QUEUES.to_owned(), body).await
}

async fn pause_scope(
    state: AdminState,
    actor: Actor,
    queue: String,
    body: api::PauseRequest,
) -> AdminResult<Json<PauseResult>> {
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
) -> AdminResult<Json<ResumeResult>> {
    resume_scope(state, actor, queue).await
}

/// `POST /queues:resume`: lifts the pause of every queue; queues paused by name stay paused.
pub async fn resume_all(State(state): State<AdminState>, Operator(actor): Operator) -> AdminResult<Json<ResumeResult>> {
    resume_scope(state, actor, ALL_QUEUES.to_owned()).await
}

async fn resume_scope(state: AdminState, actor: Actor, queue: String) -> AdminResult<Json<ResumeResult>> {
    let (scope_queue, all_queues) = scope_of(&queue);
    let entry = ask(&state.committer, |reply| AdminCommand::Resume { queue, actor, reply }).await?;
    if let Some(entry) = &entry {
        state.announce(entry);
    }
    Ok(Json(ResumeResult { queue: scope_queue, all_queues, resumed: entry.is_some() }))
}

/// `GET /pauses`: `{all_queues: {until_ms} | null, queues: [{queue, until_ms}]}`, exact (asked of
/// the committer, not a snapshot).
pub async fn list(State(state): State<AdminState>, Viewer(_): Viewer) -> AdminResult<Json<PauseList>> {
    let pauses = ask(&state.committer, |reply| AdminCommand::Pauses { reply }).await?;
    let mut all = None;
    let mut queues = Vec::new();
    for (queue, until_ms) in pauses {
        if &*queue == ALL_QUEUES {
            all = Some(AllQueuesPause { until_ms });
        } else {
            queues.push(NamedPause { queue: queue.to_string(), until_ms });
        }
    }
    Ok(Json(PauseList { all_queues: all, queues }))
}

/// The scope of an answer: `(queue, None)` for one queue, `(None, Some(true))` for every queue.
fn scope_of(queue: &str) -> (Option<String>, Option<bool>) {
    if queue == ALL_QUEUES { (None, Some(true)) } else { (Some(queue.to_owned()), None) }
}

fn pause_view(queue: &str, until_ms: Option<TimeMs>) -> PauseResult {
    let (queue, all_queues) = scope_of(queue);
    PauseResult { queue, all_queues, paused: true, until_ms }
}
