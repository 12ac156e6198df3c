//! Job endpoints: listings (peek) with cursors and filters, one job by id, one dead letter by
//! handle, HTTP enqueue, admin dead-lettering, requeue and delete of dead letters, and bulk
//! actions on everything matching a filter (with a dry run that counts).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sepp_admin_types as api;
use sepp_core::{
    BulkAction, BulkError, JobFilter, JobId, JobKey, NewJob, PEEK_SCAN_LIMIT, Payload, PeekState, Peeked, Primitive,
};
use serde_json::Value;

use crate::admin::AdminState;
use crate::admin::access::{Operator, Viewer};
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::errors::{AdminError, AdminResult};
use crate::admin::views;

/// Most handles one action takes.
const MAX_KEYS: usize = 100;

/// The query string as pairs, in order (repeated and dynamic names, like `custom.<key>`, allowed).
type QueryPairs = Query<Vec<(String, String)>>;

fn parse_state(text: &str) -> AdminResult<PeekState> {
    match text {
        "ready" => Ok(PeekState::Ready),
        "scheduled" => Ok(PeekState::Scheduled),
        "inflight" => Ok(PeekState::Inflight),
        "dead_letter" => Ok(PeekState::DeadLetter),
        other => Err(AdminError::invalid_argument(format!(
            "state must be ready|scheduled|inflight|dead_letter, got {other:?}"
        ))),
    }
}

/// A listing's parameters: `state`, `cursor`, `limit`, and the filter (`job_type`,
/// `custom.<key>=<value>`; empty values are ignored).
struct Listing {
    state: PeekState,
    cursor: Option<JobKey>,
    limit: usize,
    filter: JobFilter,
}

/// Why a listing's parameters were refused: an unparsable query string (plain text, as any
/// other), or a bad value (the error envelope).
enum ListingError {
    Query(String),
    Value(AdminError),
}

impl IntoResponse for ListingError {
    fn into_response(self) -> Response {
        match self {
            ListingError::Query(message) => (StatusCode::BAD_REQUEST, message).into_response(),
            ListingError::Value(error) => error.into_response(),
        }
    }
}

fn parse_listing(pairs: &[(String, String)]) -> Result<Listing, ListingError> {
    let mut state = "";
    let mut cursor = None;
    let mut limit = 50;
    let mut filter = JobFilter::default();
    for (name, value) in pairs {
        match name.as_str() {
            "state" => state = value,
            "cursor" if !value.is_empty() => cursor = Some(value.as_str()),
            "limit" => {
                limit = value.parse::<u64>().map_err(|error| {
                    ListingError::Query(format!("Failed to deserialize query string: limit: {error}"))
                })? as usize;
            }
            "job_type" if !value.is_empty() => filter.job_type = Some(value.clone()),
            custom if custom.starts_with("custom.") && custom.len() > "custom.".len() => {
                filter.custom.push((custom["custom.".len()..].to_owned(), value.clone()));
            }
            _ => {}
        }
    }
    let state = parse_state(state).map_err(ListingError::Value)?;
    let cursor = match cursor {
        Some(text) => Some(
            views::decode_key(text, "cursor")
                .and_then(|key| key.ok_or_else(|| AdminError::invalid_argument("cursor is not a job key")))
                .map_err(ListingError::Value)?,
        ),
        None => None,
    };
    Ok(Listing { state, cursor, limit, filter })
}

/// `GET /queues/{name}/jobs?state=&cursor=&limit=[&job_type=][&custom.<key>=<value>]`.
pub async fn peek(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Path(queue): Path<String>,
    Query(pairs): QueryPairs,
) -> Response {
    let listing = match parse_listing(&pairs) {
        Ok(listing) => listing,
        Err(error) => return error.into_response(),
    };
    let Listing { state: peek_state, cursor, limit, filter } = listing;
    let answer =
        ask(&state.committer, |reply| AdminCommand::Peek { queue, state: peek_state, cursor, limit, filter, reply })
            .await;
    let loaded = match answer {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(_)) => return AdminError::invalid_argument("cursor belongs to another state").into_response(),
        Err(error) => return error.into_response(),
    };
    let jobs: Vec<api::Job> = loaded
        .page
        .jobs
        .iter()
        .zip(&loaded.payloads)
        .map(|((_, peeked), data)| match peeked {
            Peeked::Live { job, state } => views::live_job(job, *state, data.as_deref(), false),
            Peeked::Dead(dead) => views::dead_letter(dead, data.as_deref(), false),
        })
        .collect();
    let next_cursor = loaded.page.next_cursor.as_ref().map(views::key_b64);
    Json(api::JobPage { jobs, next_cursor, truncated: loaded.page.truncated }).into_response()
}

/// `GET /queues/{name}/jobs:count?state=[&job_type=][&custom.<key>=<value>]`: `{count}`.
pub async fn count(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Path(queue): Path<String>,
    Query(pairs): QueryPairs,
) -> Response {
    let listing = match parse_listing(&pairs) {
        Ok(listing) => listing,
        Err(error) => return error.into_response(),
    };
    match count_matching(&state, &queue, listing.state, &listing.filter).await {
        Ok(count) => Json(api::JobCount { count }).into_response(),
        Err(error) => error.into_response(),
    }
}

/// How many of `queue`'s jobs in `peek_state` match `filter`: one bounded command per
/// [`PEEK_SCAN_LIMIT`] entries, so a long count never holds the committer for long.
async fn count_matching(
    state: &AdminState,
    queue: &str,
    peek_state: PeekState,
    filter: &JobFilter,
) -> AdminResult<u64> {
    let mut total = 0;
    let mut cursor = None;
    loop {
        let (queue, filter) = (queue.to_owned(), filter.clone());
        let counted = ask(&state.committer, |reply| AdminCommand::Count {
            queue,
            state: peek_state,
            filter,
            cursor,
            scan_limit: PEEK_SCAN_LIMIT,
            reply,
        })
        .await?
        .map_err(|_| AdminError::internal("a count walked off its own cursor"))?;
        total += counted.0;
        match counted.1 {
            Some(next) => cursor = Some(next),
            None => return Ok(total),
        }
    }
}

/// `GET /jobs/{id}`: a live job with its whole payload, its queue and state.
pub async fn job(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Path(id): Path<String>,
) -> AdminResult<Json<api::Job>> {
    let not_found = || AdminError::not_found("job not found");
    let job_id = JobId::try_parse(&id).map_err(|_| not_found())?;
    let loaded = ask(&state.committer, |reply| AdminCommand::FindJob { job_id, reply }).await?.ok_or_else(not_found)?;
    let mut shown =
        views::live_job(&loaded.job, loaded.state, Some(loaded.payload.as_deref().unwrap_or_default()), true);
    shown.queue = Some(loaded.job.queue.to_string());
    shown.state = Some(views::state_name(loaded.state));
    shown.cancelled = loaded.cancelled.then_some(true);
    Ok(Json(shown))
}

/// The longest reason kept with a cancel, in bytes.
const MAX_CANCEL_REASON_BYTES: usize = 1_024;

/// `POST /jobs/{id}/cancel`: cancels one job, whatever it is doing. A ready or scheduled job is
/// dead-lettered at once (cause `cancelled`); a leased one is marked, and its worker learns it
/// at its next extend, ack or nack. Answers what happened: `removed`, `lease_cancelled` or
/// `already_cancelled`.
pub async fn cancel(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(id): Path<String>,
    body: Option<Json<api::CancelRequest>>,
) -> AdminResult<Json<api::CancelResult>> {
    let job_id = match sepp_core::validate::validate_job_id(&id) {
        Ok(sepp_core::validate::LeaseTarget::Job(job_id)) => job_id,
        Ok(sepp_core::validate::LeaseTarget::NoSuchJob) => return Err(AdminError::not_found("job not found")),
        Err(_) => return Err(AdminError::invalid_argument("job id must be a UUID")),
    };
    let reason = body.and_then(|Json(body)| body.reason);
    if reason.as_ref().is_some_and(|reason| reason.len() > MAX_CANCEL_REASON_BYTES) {
        return Err(AdminError::invalid_argument(format!("reason is longer than {MAX_CANCEL_REASON_BYTES} bytes")));
    }
    let answer = ask(&state.committer, |reply| AdminCommand::Cancel { job_id, reason, actor, reply }).await?;
    let (outcome, entry) = answer.map_err(|error| match error {
        sepp_core::CancelError::NotFound => AdminError::not_found("job not found"),
        sepp_core::CancelError::DeadLettered => {
            AdminError::conflict("already_dead_lettered", "the job is already a dead letter")
        }
    })?;
    if let Some(entry) = &entry {
        state.announce(entry);
    }
    let outcome = match outcome {
        sepp_core::CancelOutcome::Removed => "removed",
        sepp_core::CancelOutcome::LeaseCancelled => "lease_cancelled",
        sepp_core::CancelOutcome::AlreadyCancelled => "already_cancelled",
    };
    Ok(Json(api::CancelResult { job_id: id, outcome: outcome.to_owned() }))
}

/// `GET /queues/{name}/dead-letters/{key_b64}`: one dead letter with its whole payload.
pub async fn dead_letter(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Path((queue, key)): Path<(String, String)>,
) -> AdminResult<Json<api::Job>> {
    let not_found = || AdminError::not_found("dead-letter record not found");
    let key = views::decode_key(&key, "key")?.ok_or_else(not_found)?;
    let (dead, data) = ask(&state.committer, |reply| AdminCommand::FindDeadLetter { queue, key, reply })
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(views::dead_letter(&dead, Some(data.as_deref().unwrap_or_default()), true)))
}

pub(crate) fn new_job(queue: String, body: api::EnqueueRequest) -> AdminResult<NewJob> {
    let payload = match body.payload {
        None => None,
        Some(payload) => {
            let data = match (payload.data_b64, payload.data_text) {
                (Some(b64), _) => STANDARD
                    .decode(b64)
                    .map_err(|_| AdminError::invalid_argument("payload.data_b64 is not valid base64"))?,
                (None, Some(text)) => text.into_bytes(),
                (None, None) => return Err(AdminError::invalid_argument("payload requires data_b64 or data_text")),
            };
            Some(Payload { data, encoding: payload.encoding })
        }
    };
    let mut custom = BTreeMap::new();
    for (key, value) in body.custom.unwrap_or_default() {
        let primitive = match value {
            Value::String(text) => Primitive::String(text),
            Value::Bool(flag) => Primitive::Bool(flag),
            Value::Number(number) => match number.as_i64() {
                Some(int) => Primitive::Int(int),
                None => Primitive::Double(number.as_f64().unwrap_or(f64::NAN)),
            },
            _ => {
                return Err(AdminError::invalid_argument(format!("custom[{key:?}] must be a string, number, or bool")));
            }
        };
        custom.insert(key, Some(primitive));
    }
    Ok(NewJob {
        queue,
        job_type: body.job_type,
        payload,
        idempotency_key: body.idempotency_key,
        priority: body.priority,
        max_attempts: body.max_attempts,
        trace_context: None,
        custom,
        scheduled_at_ms: body.scheduled_at_ms,
    })
}

/// `POST /queues/{name}/jobs`: enqueues one job through the same checks as gRPC.
pub async fn enqueue(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<api::EnqueueRequest>,
) -> AdminResult<Json<api::Enqueued>> {
    let job = new_job(queue, body)?;
    let live = state.live.get();
    sepp_core::validate::validate_new_job(&live.policy, &job, state.clock.now_ms())
        .map_err(|rejection| AdminError::rejected(&rejection))?;
    let job_id = JobId::new_v4();
    let outcome = ask(&state.committer, |reply| AdminCommand::Enqueue { job_id, job, actor, reply }).await?;
    let (enqueued, entry) = outcome.map_err(|rejection| AdminError::rejected(&rejection))?;
    state.announce(&entry);
    Ok(Json(api::Enqueued { job_id: enqueued.job_id.hyphenated().to_string() }))
}

fn decode_keys(keys: &[String]) -> AdminResult<Vec<Option<JobKey>>> {
    if keys.len() > MAX_KEYS {
        return Err(AdminError::invalid_argument(format!(
            "keys_b64 holds {} keys; at most {MAX_KEYS} are allowed",
            keys.len()
        )));
    }
    keys.iter().map(|key| views::decode_key(key, "keys_b64")).collect()
}

/// `POST /queues/{name}/jobs:dead-letter`: dead-letters ready or scheduled jobs by handle.
pub async fn dead_letter_jobs(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<api::DeadLetterRequest>,
) -> AdminResult<Json<api::DeadLetteredResult>> {
    let peek_state = match body.state.as_str() {
        "ready" => PeekState::Ready,
        "scheduled" => PeekState::Scheduled,
        other => return Err(AdminError::invalid_argument(format!("state must be ready or scheduled, got {other:?}"))),
    };
    let keys = decode_keys(&body.keys_b64)?;
    let reason = body.reason;
    let name = queue.clone();
    let (touched, entry) = ask(&state.committer, |reply| AdminCommand::DeadLetterJobs {
        queue,
        state: peek_state,
        keys,
        reason,
        actor,
        reply,
    })
    .await?;
    state.announce(&entry);
    if let Some(metrics) = &state.metrics {
        metrics.dead_lettered(&name, sepp_core::DeadLetterCause::Admin, touched.job_ids.len() as u64);
    }
    Ok(Json(api::DeadLetteredResult { dead_lettered: touched.job_ids.len() as u64, missing: touched.missing as u64 }))
}

/// `POST /queues/{name}/dead-letters:requeue`.
pub async fn requeue(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<api::KeysRequest>,
) -> AdminResult<Json<api::RequeuedResult>> {
    let keys = decode_keys(&body.keys_b64)?;
    let reason = body.reason;
    let (touched, entry) =
        ask(&state.committer, |reply| AdminCommand::RequeueDeadLetters { queue, keys, reason, actor, reply }).await?;
    state.announce(&entry);
    Ok(Json(api::RequeuedResult { requeued: touched.job_ids.len() as u64, missing: touched.missing as u64 }))
}

/// `POST /queues/{name}/dead-letters:delete`.
pub async fn delete(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<api::KeysRequest>,
) -> AdminResult<Json<api::DeletedResult>> {
    let keys = decode_keys(&body.keys_b64)?;
    let reason = body.reason;
    let (touched, entry) =
        ask(&state.committer, |reply| AdminCommand::DeleteDeadLetters { queue, keys, reason, actor, reply }).await?;
    state.announce(&entry);
    Ok(Json(api::DeletedResult { deleted: touched.job_ids.len() as u64, missing: touched.missing as u64 }))
}

fn bulk_filter(job_type: Option<String>, custom: Option<serde_json::Map<String, Value>>) -> AdminResult<JobFilter> {
    let custom = custom
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(text) => Ok((key, text)),
            Value::Number(number) => Ok((key, number.to_string())),
            Value::Bool(flag) => Ok((key, flag.to_string())),
            _ => Err(AdminError::invalid_argument(format!("custom[{key:?}] must be a string, number, or bool"))),
        })
        .collect::<AdminResult<_>>()?;
    Ok(JobFilter { job_type: job_type.filter(|job_type| !job_type.is_empty()), custom })
}

/// `POST /queues/{name}/jobs:bulk`: `{state, action: requeue|delete|dead_letter, job_type?,
/// custom?, reason?, dry_run?}` applies the action to every matching job (`{affected}`), or
/// with `dry_run` only counts them (`{matched}`).
pub async fn bulk(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(queue): Path<String>,
    Json(body): Json<api::BulkRequest>,
) -> AdminResult<Json<api::BulkAnswer>> {
    let peek_state = parse_state(&body.state)?;
    let action = match body.action.as_str() {
        "requeue" => BulkAction::Requeue,
        "delete" => BulkAction::Delete,
        "dead_letter" => BulkAction::DeadLetter { reason: body.reason.clone() },
        other => {
            return Err(AdminError::invalid_argument(format!(
                "action must be requeue|delete|dead_letter, got {other:?}"
            )));
        }
    };
    let applies = match action {
        BulkAction::Requeue | BulkAction::Delete => peek_state == PeekState::DeadLetter,
        BulkAction::DeadLetter { .. } => matches!(peek_state, PeekState::Ready | PeekState::Scheduled),
    };
    if !applies {
        return Err(AdminError::invalid_argument(format!(
            "action {} does not apply to state {}",
            body.action, body.state
        )));
    }
    let filter = bulk_filter(body.job_type, body.custom)?;
    if body.dry_run {
        let matched = count_matching(&state, &queue, peek_state, &filter).await?;
        return Ok(Json(api::BulkAnswer::Matched(api::BulkMatched { matched })));
    }
    let mut affected = 0;
    let mut cursor = None;
    loop {
        let (name, filter, step_action, actor) = (queue.clone(), filter.clone(), action.clone(), actor.clone());
        let answer = ask(&state.committer, |reply| AdminCommand::Bulk {
            queue: name,
            state: peek_state,
            filter,
            cursor,
            action: step_action,
            actor,
            reply,
        })
        .await?;
        let (step, entry) = answer.map_err(|error| match error {
            BulkError::WrongState => AdminError::invalid_argument("the action does not apply to this state"),
            BulkError::WrongCursor => AdminError::internal("a bulk action walked off its own cursor"),
        })?;
        if let Some(entry) = entry {
            state.announce(&entry);
        }
        affected += step.job_ids.len();
        if let (Some(metrics), BulkAction::DeadLetter { .. }) = (&state.metrics, &action) {
            metrics.dead_lettered(&queue, sepp_core::DeadLetterCause::Admin, step.job_ids.len() as u64);
        }
        match step.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(Json(api::BulkAnswer::Affected(api::BulkAffected { affected: affected as u64 }))),
        }
    }
}
