//! What operators do to a queue: dead-letter live jobs, requeue or delete dead letters, close a
//! queue while it is deleted, purge it, and apply an action to every job matching a filter.
//!
//! Like every other operation, each one decides, then records what it decided through
//! `State::record`, so a replay rebuilds the same state. Handles come from the listings
//! ([`JobKey`]); a handle that is malformed, names another queue's job, or names a job that is
//! no longer where it was counts as *missing*, never as an error.

use std::sync::Arc;

use crate::peek::{JobFilter, JobKey, PeekState, WrongCursor};
use crate::record::Record;
use crate::state::State;
use crate::totals::Total;
use crate::types::{DeadLetterCause, Job, JobId, JobState, TimeMs};

/// How long a close tombstone lasts unless it is refreshed or cleared: a deletion whose handler
/// died leaves the queue usable again after this.
pub const CLOSE_GRACE_MS: u64 = 30_000;
/// Entries one purge step removes at most.
pub const PURGE_CHUNK: usize = 1_000;
/// Jobs one bulk step changes at most.
pub const BULK_CHUNK: usize = 1_000;

/// What an action on a list of handles did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Touched {
    /// The jobs it changed, in the order their handles came.
    pub job_ids: Vec<JobId>,
    /// Handles that named nothing this action could change.
    pub missing: usize,
}

impl Touched {
    fn with_capacity(capacity: usize) -> Touched {
        Touched { job_ids: Vec::with_capacity(capacity), missing: 0 }
    }
}

/// What one purge step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeStep {
    /// Jobs, dead letters and idempotency keys removed.
    pub removed: u64,
    /// In-flight jobs of the queue: when not 0, the step removed nothing.
    pub inflight: u64,
    /// Nothing of the queue is left.
    pub done: bool,
}

/// An action applied to every job of a queue in one state that matches a filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BulkAction {
    /// Dead letters back to ready.
    Requeue,
    /// Dead letters deleted.
    Delete,
    /// Ready or scheduled jobs dead-lettered, with this reason.
    DeadLetter { reason: Option<String> },
}

/// What one bulk step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BulkStep {
    pub job_ids: Vec<JobId>,
    /// Where the next step starts, or `None` when the walk reached the end.
    pub next_cursor: Option<JobKey>,
}

/// A bulk action on a state it does not apply to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkError {
    WrongState,
    WrongCursor,
}

impl From<WrongCursor> for BulkError {
    fn from(_: WrongCursor) -> Self {
        BulkError::WrongCursor
    }
}

impl State {
    /// Dead-letters `queue`'s jobs that are in `state` (ready or scheduled) now, with cause
    /// `Admin` and `reason` as their last reason. With retention off they are deleted.
    pub fn dead_letter_jobs(
        &mut self,
        now_ms: TimeMs,
        queue: &str,
        state: PeekState,
        keys: &[Option<JobKey>],
        reason: Option<String>,
        out: &mut Vec<Record>,
    ) -> Touched {
        let mut touched = Touched::with_capacity(keys.len());
        for key in keys {
            let job_id = key.as_ref().map(JobKey::job_id);
            let live = job_id.and_then(|job_id| self.jobs.get(&job_id));
            let in_state = live.is_some_and(|live| {
                *live.job.queue == *queue
                    && matches!(
                        (state, live.state),
                        (PeekState::Ready, JobState::Ready { .. }) | (PeekState::Scheduled, JobState::Scheduled { .. })
                    )
            });
            match job_id {
                Some(job_id) if in_state => {
                    self.dead_letter(now_ms, job_id, DeadLetterCause::Admin, reason.clone(), out);
                    touched.job_ids.push(job_id);
                }
                _ => touched.missing += 1,
            }
        }
        touched
    }

    /// Puts `queue`'s dead letters back as new first attempts: the same id, payload, custom
    /// metadata, priority and max attempts, enqueued now, behind the jobs ready now, with no
    /// schedule. This bypasses the depth cap, a close tombstone and idempotency keys.
    pub fn requeue_dead_letters(
        &mut self,
        now_ms: TimeMs,
        queue: &str,
        keys: &[Option<JobKey>],
        out: &mut Vec<Record>,
    ) -> Touched {
        let mut touched = Touched::with_capacity(keys.len());
        for key in keys {
            match key.as_ref().filter(|key| self.find_dead_letter(queue, key).is_some()) {
                Some(key) => {
                    let job_id = key.job_id();
                    self.record(Record::DeadLetterRequeued { job_id, seq: self.next_seq, enqueued_at_ms: now_ms }, out);
                    touched.job_ids.push(job_id);
                }
                None => touched.missing += 1,
            }
        }
        touched
    }

    /// Deletes `queue`'s dead letters.
    pub fn delete_dead_letters(&mut self, queue: &str, keys: &[Option<JobKey>], out: &mut Vec<Record>) -> Touched {
        let mut touched = Touched::with_capacity(keys.len());
        for key in keys {
            match key.as_ref().filter(|key| self.find_dead_letter(queue, key).is_some()) {
                Some(key) => {
                    let job_id = key.job_id();
                    self.record(Record::DeadLetterRemoved { job_id }, out);
                    touched.job_ids.push(job_id);
                }
                None => touched.missing += 1,
            }
        }
        touched
    }

    /// Sets (or refreshes) `queue`'s close tombstone until `now_ms + grace_ms`: from now on its
    /// enqueues are refused with `QueueClosing`.
    pub fn close_queue(&mut self, now_ms: TimeMs, queue: &str, grace_ms: u64, out: &mut Vec<Record>) {
        let queue = self.intern(queue);
        let until_ms = now_ms.saturating_add(grace_ms as TimeMs);
        self.record(Record::QueueClosed { queue, until_ms }, out);
    }

    /// Clears `queue`'s close tombstone, if it has one.
    pub fn reopen_queue(&mut self, queue: &str, out: &mut Vec<Record>) {
        if let Some((queue, _)) = self.closed.get_key_value(queue) {
            let queue = queue.clone();
            self.record(Record::QueueReopened { queue }, out);
        }
    }

    /// Pauses `queue` ([`crate::ALL_QUEUES`] for every queue) until `until_ms`, or until resumed:
    /// reserves skip it; enqueues and the leases already held go on. Pausing a paused queue
    /// replaces its deadline.
    pub fn pause_queue(&mut self, queue: &str, until_ms: Option<TimeMs>, out: &mut Vec<Record>) {
        let queue = self.intern(queue);
        self.record(Record::QueuePaused { queue, until_ms }, out);
    }

    /// Lifts `queue`'s pause (the pause of every queue for [`crate::ALL_QUEUES`]); whether there
    /// was one. A queue paused by name stays paused when only the pause of every queue ends.
    pub fn resume_queue(&mut self, queue: &str, out: &mut Vec<Record>) -> bool {
        let Some((queue, _)) = self.paused.get_key_value(queue) else { return false };
        let queue = queue.clone();
        self.record(Record::QueueResumed { queue }, out);
        true
    }

    /// Every pause: the queue ([`crate::ALL_QUEUES`] for all) and until when, by name.
    pub fn pauses(&self) -> Vec<(Arc<str>, Option<TimeMs>)> {
        let mut pauses: Vec<_> = self.paused.iter().map(|(queue, until_ms)| (queue.clone(), *until_ms)).collect();
        pauses.sort();
        pauses
    }

    /// Whether enqueues to `queue` are refused at `now_ms` because it is being deleted.
    pub fn is_closing(&self, queue: &str, now_ms: TimeMs) -> bool {
        !self.closed.is_empty() && self.closed.get(queue).is_some_and(|until_ms| *until_ms > now_ms)
    }

    /// Removes up to [`PURGE_CHUNK`] of `queue`'s entries: ready jobs, scheduled jobs, dead
    /// letters and idempotency keys, in that order. Refuses (removing nothing) while any of its
    /// jobs is in flight. Scheduled jobs are found by walking the server-wide schedule from its
    /// start, so a step costs as much as the scheduled jobs of other queues due before this
    /// queue's (a million of them take the walk about 10 ms).
    pub fn purge_step(&mut self, queue: &str, out: &mut Vec<Record>) -> PurgeStep {
        let depths = self.depths(queue);
        if depths.inflight > 0 {
            return PurgeStep { removed: 0, inflight: depths.inflight, done: false };
        }
        let mut budget = PURGE_CHUNK;
        let mut purged: Vec<JobId> = Vec::new();
        if let Some(state) = self.queues.get(queue) {
            purged.extend(state.ready.values().take(budget).map(|slot| self.jobs.at(*slot).job.id));
        }
        budget -= purged.len();
        if budget > 0 && depths.scheduled > 0 {
            let scheduled = self.scheduled.values().map(|slot| &self.jobs.at(*slot).job);
            purged.extend(scheduled.filter(|job| *job.queue == *queue).take(budget).map(|job| job.id));
            budget = PURGE_CHUNK - purged.len();
        }
        let mut removed = purged.len() as u64;
        for job_id in purged {
            self.record(Record::Purged { job_id }, out);
        }
        if budget > 0
            && let Some(state) = self.queues.get(queue)
        {
            let dead: Vec<JobId> = state.dead.iter().take(budget).map(|(_, job_id)| *job_id).collect();
            budget -= dead.len();
            removed += dead.len() as u64;
            for job_id in dead {
                self.record(Record::DeadLetterRemoved { job_id }, out);
            }
        }
        if budget > 0
            && let Some((queue, keys)) = self.dedup.get_key_value(queue)
        {
            let queue = queue.clone();
            let keys: Vec<String> = keys.keys().take(budget).cloned().collect();
            removed += keys.len() as u64;
            for key in keys {
                self.record(Record::DedupExpired { queue: queue.clone(), key }, out);
            }
        }
        let done = !self.queues.contains_key(queue) && !self.dedup.contains_key(queue);
        PurgeStep { removed, inflight: 0, done }
    }

    /// Applies `action` to up to [`BULK_CHUNK`] of `queue`'s jobs in `state` that match `filter`,
    /// examining at most `scan_limit` entries after `cursor`.
    #[expect(clippy::too_many_arguments, reason = "one bulk step is all of these")]
    pub fn bulk_step(
        &mut self,
        now_ms: TimeMs,
        queue: &str,
        state: PeekState,
        filter: &JobFilter,
        cursor: Option<&JobKey>,
        action: &BulkAction,
        scan_limit: usize,
        out: &mut Vec<Record>,
    ) -> Result<BulkStep, BulkError> {
        let applies = match action {
            BulkAction::Requeue | BulkAction::Delete => state == PeekState::DeadLetter,
            BulkAction::DeadLetter { .. } => matches!(state, PeekState::Ready | PeekState::Scheduled),
        };
        if !applies {
            return Err(BulkError::WrongState);
        }
        let mut keys = Vec::new();
        let end = self.walk_matching(queue, state, cursor, filter, scan_limit, |key, _| {
            keys.push(Some(key));
            keys.len() < BULK_CHUNK
        })?;
        let touched = match action {
            BulkAction::Requeue => self.requeue_dead_letters(now_ms, queue, &keys, out),
            BulkAction::Delete => self.delete_dead_letters(queue, &keys, out),
            BulkAction::DeadLetter { reason } => {
                self.dead_letter_jobs(now_ms, queue, state, &keys, reason.clone(), out)
            }
        };
        let next_cursor = if end.exhausted { None } else { end.last };
        Ok(BulkStep { job_ids: touched.job_ids, next_cursor })
    }

    /// The job a requeued dead letter becomes: a fresh first attempt enqueued at `now_ms`, in
    /// acceptance order `seq`, with no schedule.
    pub(crate) fn requeued_job(dead_job: &Job, seq: u64, enqueued_at_ms: TimeMs) -> Job {
        Job { seq, enqueued_at_ms, scheduled_at_ms: None, ..dead_job.clone() }
    }

    /// Counts a dead-lettering in its queue's totals.
    pub(crate) fn count_dead_letter(&mut self, job_id: &JobId) {
        if !self.totals.is_counting() {
            return;
        }
        if let Some(queue) = self.jobs.get(job_id).map(|live| live.job.queue.clone()) {
            self.add_total(&queue, Total::DeadLettered, 1);
        }
    }
}
