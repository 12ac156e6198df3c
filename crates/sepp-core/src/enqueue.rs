//! Enqueue at commit time (stage D of SPEC 2.1): close tombstones, idempotency keys, the depth cap,
//! and insertion, for best-effort batches and all-or-nothing atomic batches.
//!
//! Jobs reaching these functions have passed stages A to C (`validate::validate_new_job`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::errors::Rejection;
use crate::record::Record;
use crate::state::State;
use crate::totals::Total;
use crate::types::{Job, JobId, JobPayload, NewJob, PayloadData, TimeMs};

/// The answer to an atomic enqueue: one result per job, or the rejected jobs by index.
pub type AtomicOutcome = Result<Vec<Enqueued>, Vec<(u32, Rejection)>>;

/// A job that was accepted, or deduplicated onto an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enqueued {
    pub job_id: JobId,
    pub deduplicated: bool,
}

impl State {
    /// Best effort: each job is accepted or rejected on its own, in submission order, and later
    /// jobs see earlier ones (their idempotency keys and their depth). `id` is the identity the
    /// job gets if it is inserted.
    pub fn enqueue(
        &mut self,
        now_ms: TimeMs,
        jobs: Vec<(JobId, NewJob)>,
        out: &mut Vec<Record>,
    ) -> Vec<Result<Enqueued, Rejection>> {
        jobs.into_iter()
            .map(|(id, job)| {
                if self.is_closing(&job.queue, now_ms) {
                    return Err(Rejection::QueueClosing { queue: job.queue });
                }
                if let Some(job_id) = self.dedup_hit(&job, now_ms) {
                    return Ok(Enqueued { job_id, deduplicated: true });
                }
                if let Some(limit) = self.policy.queue(&job.queue).max_queue_depth
                    && self.live_depth(&job.queue) >= limit
                {
                    return Err(Rejection::QueueFull { queue: job.queue, limit });
                }
                Ok(self.insert(now_ms, id, job, out))
            })
            .collect()
    }

    /// All or nothing: either every job is accepted (or deduplicated) or nothing is written and
    /// the rejections name the jobs at fault by index.
    pub fn enqueue_atomic(
        &mut self,
        now_ms: TimeMs,
        jobs: Vec<(JobId, NewJob)>,
        out: &mut Vec<Record>,
    ) -> AtomicOutcome {
        let closing: Vec<(u32, Rejection)> = jobs
            .iter()
            .enumerate()
            .filter(|(_, (_, job))| self.is_closing(&job.queue, now_ms))
            .map(|(index, (_, job))| (index as u32, Rejection::QueueClosing { queue: job.queue.clone() }))
            .collect();
        if !closing.is_empty() {
            return Err(closing);
        }
        // Capacity counts every job as new, deduplicated or not (SPEC 2.3).
        let mut per_queue: HashMap<&str, u64> = HashMap::new();
        for (_, job) in &jobs {
            *per_queue.entry(job.queue.as_str()).or_default() += 1;
        }
        let full: HashMap<&str, u64> = per_queue
            .iter()
            .filter_map(|(queue, count)| {
                let limit = self.policy.queue(queue).max_queue_depth?;
                (self.live_depth(queue) + count > limit).then_some((*queue, limit))
            })
            .collect();
        if !full.is_empty() {
            return Err(jobs
                .iter()
                .enumerate()
                .filter_map(|(index, (_, job))| {
                    let limit = *full.get(job.queue.as_str())?;
                    Some((index as u32, Rejection::QueueFull { queue: job.queue.clone(), limit }))
                })
                .collect());
        }
        Ok(jobs
            .into_iter()
            .map(|(id, job)| match self.dedup_hit(&job, now_ms) {
                Some(job_id) => Enqueued { job_id, deduplicated: true },
                None => self.insert(now_ms, id, job, out),
            })
            .collect())
    }

    fn dedup_hit(&self, job: &NewJob, now_ms: TimeMs) -> Option<JobId> {
        let key = job.idempotency_key.as_deref()?;
        self.dedup_lookup(&job.queue, key, now_ms)
    }

    fn insert(&mut self, now_ms: TimeMs, id: JobId, new: NewJob, out: &mut Vec<Record>) -> Enqueued {
        let limits = self.policy.queue(&new.queue);
        let priority = new.priority.map_or(limits.default_priority, |priority| priority as u8);
        let max_attempts = new.max_attempts.unwrap_or(limits.default_max_attempts).min(limits.max_attempts_ceiling);
        let dedup_window_ms = limits.dedup_window_ms;
        let queue = self.intern(&new.queue);
        let job = Job {
            id,
            seq: self.next_seq,
            queue: queue.clone(),
            job_type: self.intern(&new.job_type),
            payload: new.payload.map(|payload| JobPayload {
                encoding: self.intern(&payload.encoding),
                data: PayloadData::Inline(payload.data.into_boxed_slice()),
            }),
            priority,
            trace_context: new.trace_context.map(Box::new),
            enqueued_at_ms: now_ms,
            max_attempts,
            custom: new
                .custom
                .into_iter()
                .map(|(key, value)| (key, value.expect("validated custom values are set")))
                .collect(),
            scheduled_at_ms: new.scheduled_at_ms,
        };
        let due_ms = new.scheduled_at_ms.filter(|scheduled_at_ms| *scheduled_at_ms > now_ms);
        self.record(Record::JobAccepted { job: Arc::new(job), due_ms }, out);
        self.add_total(&queue, Total::Enqueued, 1);
        if let Some(key) = new.idempotency_key {
            let deadline_ms = now_ms.saturating_add(dedup_window_ms as TimeMs);
            self.record(Record::DedupBound { queue, key, job_id: id, deadline_ms }, out);
        }
        Enqueued { job_id: id, deduplicated: false }
    }
}
