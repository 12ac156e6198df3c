//! The admin API's commands to the committer, and how the committer applies them: each is a
//! `sepp_engine::Operation` (sent as `Command::Operation`), run on the state inside a cycle.
//!
//! Mutations (enqueue, dead-letter, requeue, delete, close, purge, bulk actions) are applied
//! through the core like any other command; each one that changes something also appends its
//! audit entry in the same cycle, so the entry is in the same log frame as the change and both
//! are durable before the caller hears back. Reads (pages, lookups, counts, the audit log) are
//! bounded queries answered in the cycle they arrive in, without writing anything.
//!
//! Answers that carry jobs load their payload bytes from the log only after the cycle is
//! persisted, like a reserve's deliveries: see [`Deferred`].

use std::sync::Arc;

use sepp_core::{
    AuditDraft, AuditEntry, AuditPage, AuditQuery, BulkAction, BulkError, BulkStep, CLOSE_GRACE_MS, DeadLetter, Depths,
    Enqueued, Job, JobFilter, JobId, JobKey, JobState, NewJob, PayloadData, PeekPage, PeekState, PurgeStep, Rejection,
    TimeMs, Touched, WrongCursor,
};
use sepp_engine::{Cycle, Deferred, Operation, Reply};
use sepp_log::Log;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::admin::access::Actor;

/// Payloads up to this size are shown in listings; detail views always show them.
pub const LISTING_PAYLOAD_MAX: usize = 4096;

/// A page of a listing with the payload bytes of its small payloads.
pub struct LoadedPage {
    pub page: PeekPage,
    /// One per job of the page: the bytes when the payload is small enough to list.
    pub payloads: Vec<Option<Vec<u8>>>,
}

/// A live job with its whole payload.
pub struct LoadedJob {
    pub job: Arc<Job>,
    pub state: JobState,
    pub payload: Option<Vec<u8>>,
    /// Leased under a lease that was cancelled.
    pub cancelled: bool,
}

/// The schedule as kept, and its audit entry, or why it was refused.
pub type ScheduleAnswer = Result<(Box<sepp_core::schedule::Schedule>, Arc<AuditEntry>), sepp_core::CallError>;

/// What a cancel did, and its audit entry (none for a repeated cancel of a leased job).
pub type CancelAnswer = Result<(sepp_core::CancelOutcome, Option<Arc<AuditEntry>>), sepp_core::CancelError>;

/// A request of the admin API to the committer.
pub enum AdminCommand {
    Peek {
        queue: String,
        state: PeekState,
        cursor: Option<JobKey>,
        limit: usize,
        filter: JobFilter,
        reply: Reply<Result<LoadedPage, WrongCursor>>,
    },
    FindJob {
        job_id: JobId,
        reply: Reply<Option<LoadedJob>>,
    },
    FindDeadLetter {
        queue: String,
        key: JobKey,
        reply: Reply<Option<(DeadLetter, Option<Vec<u8>>)>>,
    },
    Count {
        queue: String,
        state: PeekState,
        filter: JobFilter,
        cursor: Option<JobKey>,
        scan_limit: usize,
        reply: Reply<Result<(u64, Option<JobKey>), WrongCursor>>,
    },
    Enqueue {
        job_id: JobId,
        job: NewJob,
        actor: Actor,
        reply: Reply<Result<(Enqueued, Arc<AuditEntry>), Rejection>>,
    },
    /// Cancels one job by id (see `sepp_core::cancel`), audited when it changed something.
    Cancel {
        job_id: JobId,
        reason: Option<String>,
        actor: Actor,
        reply: Reply<CancelAnswer>,
    },
    DeadLetterJobs {
        queue: String,
        state: PeekState,
        keys: Vec<Option<JobKey>>,
        reason: Option<String>,
        actor: Actor,
        reply: Reply<(Touched, Arc<AuditEntry>)>,
    },
    RequeueDeadLetters {
        queue: String,
        keys: Vec<Option<JobKey>>,
        reason: Option<String>,
        actor: Actor,
        reply: Reply<(Touched, Arc<AuditEntry>)>,
    },
    DeleteDeadLetters {
        queue: String,
        keys: Vec<Option<JobKey>>,
        reason: Option<String>,
        actor: Actor,
        reply: Reply<(Touched, Arc<AuditEntry>)>,
    },
    Bulk {
        queue: String,
        state: PeekState,
        filter: JobFilter,
        cursor: Option<JobKey>,
        action: BulkAction,
        actor: Actor,
        reply: Reply<BulkAnswer>,
    },
    /// Sets or refreshes the queue's close tombstone and answers its exact depths.
    CloseQueue {
        queue: String,
        reply: Reply<Depths>,
    },
    /// Refreshes the tombstone and removes one chunk of the queue's entries.
    PurgeStep {
        queue: String,
        reply: Reply<PurgeStep>,
    },
    /// Clears the tombstone; optionally forgets the queue's totals and appends an audit entry.
    ReopenQueue {
        queue: String,
        forget_totals: bool,
        audit: Option<(Actor, &'static str, Value)>,
        reply: Reply<Option<Arc<AuditEntry>>>,
    },
    /// Pauses a queue (every queue for `ALL_QUEUES`) until `until_ms` or until resumed, and
    /// audits it.
    Pause {
        queue: String,
        until_ms: Option<TimeMs>,
        reason: Option<String>,
        actor: Actor,
        reply: Reply<Arc<AuditEntry>>,
    },
    /// Lifts a pause; answers whether there was one, and the audit entry when there was.
    Resume {
        queue: String,
        actor: Actor,
        reply: Reply<Option<Arc<AuditEntry>>>,
    },
    /// Creates or replaces a schedule, audited.
    UpsertSchedule {
        spec: sepp_core::schedule::ScheduleSpec,
        actor: Actor,
        reply: Reply<ScheduleAnswer>,
    },
    /// Deletes a schedule; the audit entry when there was one.
    DeleteSchedule {
        id: String,
        actor: Actor,
        reply: Reply<Option<Arc<AuditEntry>>>,
    },
    /// Every schedule, by id.
    Schedules {
        reply: Reply<Vec<sepp_core::schedule::Schedule>>,
    },
    /// Every pause, by queue name (`ALL_QUEUES` first when every queue is paused).
    Pauses {
        reply: Reply<Vec<(Arc<str>, Option<TimeMs>)>>,
    },
    /// Appends an audit entry for an action that changed no queue state (a login, a config edit).
    Audit {
        actor: Actor,
        action: &'static str,
        details: Value,
        reply: Reply<Arc<AuditEntry>>,
    },
    AuditPage {
        query: AuditQuery,
        reply: Reply<AuditPage>,
    },
    /// For each (job, attempt): its queue and lease deadline when it is in flight under that
    /// attempt.
    Leases {
        jobs: Vec<(JobId, u32)>,
        reply: Reply<Vec<Lease>>,
    },
}

/// A bulk step, and its audit entry when it changed anything.
pub type BulkAnswer = Result<(BulkStep, Option<Arc<AuditEntry>>), BulkError>;

/// A job's queue and lease deadline while it is in flight.
pub type Lease = Option<(Arc<str>, TimeMs)>;

/// Appends audit entries in the cycle an admin command runs in.
trait Audit {
    fn audit(&mut self, actor: &Actor, action: &str, details: Value) -> Arc<AuditEntry>;
}

impl Audit for Cycle<'_> {
    fn audit(&mut self, actor: &Actor, action: &str, details: Value) -> Arc<AuditEntry> {
        let draft = AuditDraft {
            actor: actor.label().to_owned(),
            role: actor.role_name().to_owned(),
            action: action.to_owned(),
            details: details.to_string(),
        };
        self.state.audit(self.now_ms, draft, self.records)
    }
}

/// Details of a pause or resume: `{queue}`, or `{all_queues: true}`.
fn pause_details(queue: &str) -> Value {
    if queue == sepp_core::ALL_QUEUES { json!({ "all_queues": true }) } else { json!({ "queue": queue }) }
}

/// Details of an action on a list of handles: `{queue, <counted>: n, job_ids, reason?}`.
fn touched_details(queue: &str, counted: &str, touched: &Touched, reason: &Option<String>) -> Value {
    let mut details = json!({
        "queue": queue,
        counted: touched.job_ids.len(),
        "job_ids": touched.job_ids.iter().map(|id| id.hyphenated().to_string()).collect::<Vec<_>>(),
    });
    if let Some(reason) = reason {
        details["reason"] = json!(reason);
    }
    details
}

impl Operation for AdminCommand {
    /// Applies the command in the committer's current cycle.
    fn apply(self: Box<Self>, cycle: &mut Cycle<'_>) -> Option<Deferred> {
        let now_ms = cycle.now_ms;
        Some(match *self {
            AdminCommand::Peek { queue, state, cursor, limit, filter, reply } => {
                match cycle.state.peek(&queue, state, cursor.as_ref(), limit, &filter) {
                    Ok(page) => Deferred::new(move |log| {
                        let payloads = page
                            .jobs
                            .iter()
                            .map(|(_, peeked)| load_payload(log, peeked.job(), LISTING_PAYLOAD_MAX).ok().flatten())
                            .collect();
                        let _ = reply.send(Ok(LoadedPage { page, payloads }));
                    }),
                    Err(wrong) => Deferred::reply(reply, Err(wrong)),
                }
            }
            AdminCommand::FindJob { job_id, reply } => match cycle.state.find_job(&job_id) {
                Some((job, state)) => {
                    let cancelled = cycle.state.is_cancelled(&job_id);
                    Deferred::new(move |log| {
                        if let Ok(payload) = load_payload(log, &job, usize::MAX) {
                            let _ = reply.send(Some(LoadedJob { job, state, payload, cancelled }));
                        }
                    })
                }
                None => Deferred::reply(reply, None),
            },
            AdminCommand::FindDeadLetter { queue, key, reply } => match cycle.state.find_dead_letter(&queue, &key) {
                Some(dead) => {
                    let dead = dead.clone();
                    Deferred::new(move |log| {
                        if let Ok(payload) = load_payload(log, &dead.job, usize::MAX) {
                            let _ = reply.send(Some((dead, payload)));
                        }
                    })
                }
                None => Deferred::reply(reply, None),
            },
            AdminCommand::Count { queue, state, filter, cursor, scan_limit, reply } => {
                Deferred::reply(reply, cycle.state.count_matching(&queue, state, cursor.as_ref(), &filter, scan_limit))
            }
            AdminCommand::Enqueue { job_id, job, actor, reply } => {
                let job_type = job.job_type.clone();
                let queue = job.queue.clone();
                let outcome = cycle.state.enqueue(now_ms, vec![(job_id, job)], cycle.records).remove(0);
                let answer = outcome.map(|enqueued| {
                    let details = json!({
                        "queue": queue,
                        "job_id": enqueued.job_id.hyphenated().to_string(),
                        "job_type": job_type,
                    });
                    (enqueued, cycle.audit(&actor, "job.enqueue", details))
                });
                Deferred::reply(reply, answer)
            }
            AdminCommand::Cancel { job_id, reason, actor, reply } => {
                let queue = cycle.state.live_job(&job_id).map(|(job, _)| job.queue.clone());
                let outcome = cycle.state.cancel(now_ms, job_id, reason.clone(), cycle.records);
                let answer = outcome.map(|outcome| {
                    let entry = (outcome != sepp_core::CancelOutcome::AlreadyCancelled).then(|| {
                        let mut details = json!({
                            "queue": queue.as_deref().unwrap_or_default(),
                            "job_id": job_id.hyphenated().to_string(),
                            "was_leased": outcome != sepp_core::CancelOutcome::Removed,
                        });
                        if let Some(reason) = &reason {
                            details["reason"] = json!(reason);
                        }
                        cycle.audit(&actor, "job.cancel", details)
                    });
                    (outcome, entry)
                });
                Deferred::reply(reply, answer)
            }
            AdminCommand::DeadLetterJobs { queue, state, keys, reason, actor, reply } => {
                let touched = cycle.state.dead_letter_jobs(now_ms, &queue, state, &keys, reason.clone(), cycle.records);
                let entry = cycle.audit(
                    &actor,
                    "jobs.dead_letter",
                    touched_details(&queue, "dead_lettered", &touched, &reason),
                );
                Deferred::reply(reply, (touched, entry))
            }
            AdminCommand::RequeueDeadLetters { queue, keys, reason, actor, reply } => {
                let touched = cycle.state.requeue_dead_letters(now_ms, &queue, &keys, cycle.records);
                let details = touched_details(&queue, "requeued", &touched, &reason);
                let entry = cycle.audit(&actor, "dead_letters.requeue", details);
                Deferred::reply(reply, (touched, entry))
            }
            AdminCommand::DeleteDeadLetters { queue, keys, reason, actor, reply } => {
                let touched = cycle.state.delete_dead_letters(&queue, &keys, cycle.records);
                let entry =
                    cycle.audit(&actor, "dead_letters.delete", touched_details(&queue, "deleted", &touched, &reason));
                Deferred::reply(reply, (touched, entry))
            }
            AdminCommand::Bulk { queue, state, filter, cursor, action, actor, reply } => {
                let scan_limit = sepp_core::PEEK_SCAN_LIMIT;
                let step = cycle.state.bulk_step(
                    now_ms,
                    &queue,
                    state,
                    &filter,
                    cursor.as_ref(),
                    &action,
                    scan_limit,
                    cycle.records,
                );
                let answer = step.map(|step| {
                    let entry =
                        (!step.job_ids.is_empty()).then(|| bulk_audit(cycle, &actor, &queue, &filter, &action, &step));
                    (step, entry)
                });
                Deferred::reply(reply, answer)
            }
            AdminCommand::CloseQueue { queue, reply } => {
                cycle.state.close_queue(now_ms, &queue, CLOSE_GRACE_MS, cycle.records);
                Deferred::reply(reply, cycle.state.depths(&queue))
            }
            AdminCommand::PurgeStep { queue, reply } => {
                cycle.state.close_queue(now_ms, &queue, CLOSE_GRACE_MS, cycle.records);
                Deferred::reply(reply, cycle.state.purge_step(&queue, cycle.records))
            }
            AdminCommand::ReopenQueue { queue, forget_totals, audit, reply } => {
                cycle.state.reopen_queue(&queue, cycle.records);
                if forget_totals {
                    cycle.state.forget_totals(&queue);
                    if let Some(stats) = cycle.stats.as_mut() {
                        stats.forget(&queue);
                    }
                }
                let entry = audit.map(|(actor, action, details)| cycle.audit(&actor, action, details));
                Deferred::reply(reply, entry)
            }
            AdminCommand::Pause { queue, until_ms, reason, actor, reply } => {
                cycle.state.pause_queue(&queue, until_ms, cycle.records);
                if let Some(stats) = cycle.stats.as_mut() {
                    stats.publish_soon();
                }
                let mut details = pause_details(&queue);
                if let Some(until_ms) = until_ms {
                    details["until_ms"] = json!(until_ms);
                }
                if let Some(reason) = reason {
                    details["reason"] = json!(reason);
                }
                Deferred::reply(reply, cycle.audit(&actor, "queue.pause", details))
            }
            AdminCommand::Resume { queue, actor, reply } => {
                let resumed = cycle.state.resume_queue(&queue, cycle.records);
                if let Some(stats) = cycle.stats.as_mut() {
                    stats.publish_soon();
                }
                let entry = resumed.then(|| cycle.audit(&actor, "queue.resume", pause_details(&queue)));
                Deferred::reply(reply, entry)
            }
            AdminCommand::Pauses { reply } => Deferred::reply(reply, cycle.state.pauses()),
            AdminCommand::UpsertSchedule { spec, actor, reply } => {
                let id = spec.id.clone();
                let answer = cycle.state.upsert_schedule(now_ms, spec, cycle.records).map(|schedule| {
                    let entry = cycle.audit(&actor, "schedule.put", json!({ "id": id }));
                    (Box::new(schedule), entry)
                });
                Deferred::reply(reply, answer)
            }
            AdminCommand::DeleteSchedule { id, actor, reply } => {
                let deleted = cycle.state.delete_schedule(&id, cycle.records);
                let entry = deleted.then(|| cycle.audit(&actor, "schedule.delete", json!({ "id": id })));
                Deferred::reply(reply, entry)
            }
            AdminCommand::Schedules { reply } => {
                let mut schedules: Vec<_> = cycle.state.schedules().cloned().collect();
                schedules.sort_by(|a, b| a.spec.id.cmp(&b.spec.id));
                Deferred::reply(reply, schedules)
            }
            AdminCommand::Audit { actor, action, details, reply } => {
                let entry = cycle.audit(&actor, action, details);
                Deferred::reply(reply, entry)
            }
            AdminCommand::AuditPage { query, reply } => Deferred::reply(reply, cycle.state.audit_page(&query)),
            AdminCommand::Leases { jobs, reply } => {
                let leases = jobs
                    .iter()
                    .map(|(job_id, attempt)| match cycle.state.find_job(job_id) {
                        Some((job, JobState::Inflight { attempt: current, lease_deadline_ms }))
                            if current == *attempt =>
                        {
                            Some((job.queue.clone(), lease_deadline_ms))
                        }
                        _ => None,
                    })
                    .collect();
                Deferred::reply(reply, leases)
            }
        })
    }

    fn cancels(&self) -> Option<JobId> {
        match self {
            AdminCommand::Cancel { job_id, .. } => Some(*job_id),
            _ => None,
        }
    }
}

fn bulk_audit(
    cycle: &mut Cycle<'_>,
    actor: &Actor,
    queue: &str,
    filter: &JobFilter,
    action: &BulkAction,
    step: &BulkStep,
) -> Arc<AuditEntry> {
    let (name, counted, reason) = match action {
        BulkAction::Requeue => ("dead_letters.requeue", "requeued", None),
        BulkAction::Delete => ("dead_letters.delete", "deleted", None),
        BulkAction::DeadLetter { reason } => ("jobs.dead_letter", "dead_lettered", reason.clone()),
    };
    let touched = Touched { job_ids: step.job_ids.clone(), missing: 0 };
    let mut details = touched_details(queue, counted, &touched, &reason);
    details["bulk"] = json!(true);
    let custom: serde_json::Map<String, Value> =
        filter.custom.iter().map(|(key, value)| (key.clone(), json!(value))).collect();
    details["filter"] = json!({ "job_type": filter.job_type, "custom": custom });
    cycle.audit(actor, name, details)
}

/// The bytes of a job's payload when it has one no larger than `max_bytes`. Err when stored
/// bytes could not be read back (logged here).
fn load_payload(log: &mut dyn Log, job: &Job, max_bytes: usize) -> Result<Option<Vec<u8>>, ()> {
    let Some(payload) = &job.payload else { return Ok(None) };
    if payload.data.len() > max_bytes {
        return Ok(None);
    }
    match &payload.data {
        PayloadData::Inline(bytes) => Ok(Some(bytes.to_vec())),
        PayloadData::Stored(stored) => match log.read_payload(stored) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) => {
                tracing::error!(%error, job_id = %job.id, "reading a payload back from the log failed");
                Err(())
            }
        },
    }
}

/// Sends `command` to the committer with a fresh reply channel and waits for the answer.
pub async fn ask<T>(
    committer: &sepp_engine::CommitterHandle,
    command: impl FnOnce(Reply<T>) -> AdminCommand,
) -> Result<T, crate::admin::errors::AdminError> {
    let (reply, answer) = oneshot::channel();
    committer.send(sepp_engine::Command::Operation(Box::new(command(reply)))).await?;
    Ok(answer.await?)
}
