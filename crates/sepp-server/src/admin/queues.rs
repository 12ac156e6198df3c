//! Queue endpoints: list and inspect queues, set a queue's overrides (declaring it in the file),
//! and delete a queue, purging it first when asked.
//!
//! A deletion closes the queue first (a tombstone in the log refuses its enqueues; it expires by
//! itself 30 s after its last refresh should this handler die), checks exact depths, purges in
//! chunks of 1,000 refreshing the tombstone each time, removes the `[[queues]]` entry from the
//! file, and finally clears the tombstone together with the audit entry. The tombstone is
//! cleared on every error too.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::IntoResponse;
use sepp_admin_types as api;
use serde_json::{Value, json};

use crate::admin::AdminState;
use crate::admin::access::{Actor, Admin, Viewer};
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::config_api::{if_match, written_json};
use crate::admin::config_file::{self, env_pinned, env_pinned_error, pinned_by, toml_value};
use crate::admin::errors::{AdminError, AdminResult};
use crate::admin::views;

/// A page of `GET /queues` holds this many queues unless `limit` asks for fewer.
pub const LIST_LIMIT: usize = 1_000;

/// `GET /queues[?limit=<n>][&after=<name>]`: the queues with entries, totals or a declaration,
/// by name, after `after` when given, at most `limit` (1..1000, default 1000) of them. The header
/// `Sepp-Queue-Count` says how many there are in all; a full page may be followed by another
/// (`after` = its last name).
pub async fn list(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Query(query): Query<api::QueueListQuery>,
) -> AdminResult<impl IntoResponse> {
    let limit = query.limit.unwrap_or(LIST_LIMIT);
    if !(1..=LIST_LIMIT).contains(&limit) {
        return Err(AdminError::invalid_argument(format!("limit must be between 1 and {LIST_LIMIT}")));
    }
    let live = state.live.get();
    let snapshot = state.stats.snapshot();
    // The snapshot's names and the declared ones without stats, merged in order: no copy of
    // every name per request.
    let declared: BTreeSet<&str> = live
        .config
        .queues
        .iter()
        .map(|queue| queue.name.as_str())
        .filter(|name| !snapshot.queues.contains_key(*name))
        .collect();
    let count = snapshot.queues.len() + declared.len();
    let after = query.after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let mut known = snapshot.queues.range::<str, _>((after, Bound::Unbounded)).map(|(name, _)| &**name).peekable();
    let mut listed = declared.range::<&str, _>((after, Bound::Unbounded)).copied().peekable();
    let mut queues: Vec<api::Queue> = Vec::new();
    while queues.len() < limit {
        let name = match (known.peek(), listed.peek()) {
            (Some(a), Some(b)) if b < a => listed.next(),
            (Some(_), _) => known.next(),
            (None, _) => listed.next(),
        };
        let Some(name) = name else { break };
        let stats = snapshot.queue(name);
        queues.push(views::queue(name, &live.config, live.policy.queue(name), &stats, snapshot.all_paused));
    }
    Ok(([(HeaderName::from_static("sepp-queue-count"), HeaderValue::from(count))], Json(queues)))
}

/// `GET /queues/{name}`: any name (an unknown queue is all zeros).
pub async fn get(State(state): State<AdminState>, Viewer(_): Viewer, Path(name): Path<String>) -> Json<api::Queue> {
    let live = state.live.get();
    let snapshot = state.stats.snapshot();
    Json(views::queue(&name, &live.config, live.policy.queue(&name), &snapshot.queue(&name), snapshot.all_paused))
}

/// `PUT /queues/{name}`: `{etag, overrides: {field: value|null}}` declares the queue in the file
/// (even with no overrides) and sets or removes the given fields.
pub async fn put(
    State(state): State<AdminState>,
    Admin(actor): Admin,
    Path(name): Path<String>,
    Json(body): Json<api::QueuePutRequest>,
) -> AdminResult<Json<api::WriteResult>> {
    if let Some(problem) = sepp_core::validate::queue_name_problem(&name, "queue") {
        return Err(AdminError::invalid_argument(problem));
    }
    let lock = state.config.lock().await;
    let current = state.config.read_expecting(&lock, &body.etag)?;
    if let Some(unknown) =
        body.overrides.keys().find(|field| !sepp_config::queue_override_fields().contains(&field.as_str()))
    {
        return Err(AdminError::invalid_change(format!("unknown queue override field {unknown:?}")));
    }
    if let Some(pin) = pinned_by(&format!("queues.{name}"), &env_pinned()) {
        return Err(env_pinned_error("queues", &pin));
    }
    let mut document = state.config.document(&current)?;
    config_file::declare_queue(&mut document, &name)?;
    for (field, value) in &body.overrides {
        let value = if value.is_null() { None } else { Some(toml_value(value, field == "key_overrides")?) };
        config_file::set_queue_field(&mut document, &name, field, value)?;
    }
    let written = state.config.write(&lock, &document, &state.live).await?;
    drop(lock);
    let fields: Vec<&String> = body.overrides.keys().collect();
    state.audit(&actor, "queue.put", json!({ "queue": name, "overrides": fields })).await?;
    Ok(Json(written_json(&written)))
}

/// `DELETE /queues/{name}[?purge=true]` (with `If-Match`): `{purged, etag}`.
pub async fn delete(
    State(state): State<AdminState>,
    Admin(actor): Admin,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(query): Query<api::QueueDeleteQuery>,
) -> AdminResult<Json<api::QueueDeleted>> {
    let etag = if_match(&headers)?;
    let lock = state.config.lock().await;
    let current = state.config.read_expecting(&lock, &etag)?;
    let closed = close_and_empty(&state, &name, query.purge).await;
    let outcome = match closed {
        Ok(purged) => remove_declaration(&state, &lock, &name, &current).await.map(|etag| (purged, etag)),
        Err(error) => Err(error),
    };
    drop(lock);
    let audit = outcome
        .as_ref()
        .ok()
        .map(|(purged, _)| (actor.clone(), "queue.delete", json!({ "queue": name, "purged": purged })));
    let reopened = reopen(&state, &name, outcome.is_ok(), audit).await;
    let (purged, etag) = outcome?;
    if let Some(entry) = reopened? {
        state.announce(&entry);
    }
    Ok(Json(api::QueueDeleted { purged, etag }))
}

/// Closes the queue and empties it (with `purge`) or checks it is empty; returns what was purged.
async fn close_and_empty(state: &AdminState, name: &str, purge: bool) -> AdminResult<u64> {
    let queue = name.to_owned();
    let depths = ask(&state.committer, |reply| AdminCommand::CloseQueue { queue, reply }).await?;
    let in_flight = || AdminError::conflict("inflight", "queue has jobs in flight; wait for them to finish");
    if depths.inflight > 0 {
        return Err(in_flight());
    }
    let holds_jobs = depths.ready + depths.scheduled + depths.dead_letter > 0;
    if !purge && holds_jobs {
        return Err(AdminError::conflict("not_empty", "queue holds jobs; pass purge=true to delete them"));
    }
    if !purge {
        return Ok(0);
    }
    let mut purged = 0;
    loop {
        let queue = name.to_owned();
        let step = ask(&state.committer, |reply| AdminCommand::PurgeStep { queue, reply }).await?;
        if step.inflight > 0 {
            return Err(in_flight());
        }
        purged += step.removed;
        if step.done {
            return Ok(purged);
        }
    }
}

/// Removes the queue's `[[queues]]` entry from the file, when it has one; returns the etag.
async fn remove_declaration(
    state: &AdminState,
    lock: &tokio::sync::MutexGuard<'_, ()>,
    name: &str,
    current: &config_file::Current,
) -> AdminResult<String> {
    let mut document = state.config.document(current)?;
    if !config_file::remove_queue(&mut document, name) {
        return Ok(current.etag.clone());
    }
    Ok(state.config.write(lock, &document, &state.live).await?.etag)
}

/// Clears the tombstone; after a deletion that went through, forgets the queue's totals and
/// appends the audit entry in the same cycle.
async fn reopen(
    state: &AdminState,
    name: &str,
    deleted: bool,
    audit: Option<(Actor, &'static str, Value)>,
) -> AdminResult<Option<Arc<sepp_core::AuditEntry>>> {
    let queue = name.to_owned();
    ask(&state.committer, |reply| AdminCommand::ReopenQueue { queue, forget_totals: deleted, audit, reply }).await
}
