//! Time-driven transitions (docs/protocol.md#timers) and dead-letter draining (#draindeadletters there). Expired close
//! tombstones go first, with no budget (there are at most a few).
//!
//! The committer calls [`State::sweep`] whenever [`State::next_deadline_ms`] has passed. Each
//! phase has its own budget (`sweep_limit`) so one backlog cannot starve another; whatever is
//! left is picked up by the next sweep, which is due at once.

use crate::record::Record;
use crate::state::State;
use crate::types::{DeadLetter, DeadLetterCause, JobId, JobState, TimeMs};

/// What one sweep did, for logs and metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Scheduled jobs (first runs and delayed retries) that became ready.
    pub promoted: Vec<JobId>,
    /// Expired leases whose job went back to ready for another attempt.
    pub redelivered: Vec<JobId>,
    /// Expired leases on a final attempt: dead-lettered with cause `LeaseExpired`.
    pub lease_dead_lettered: Vec<JobId>,
    /// Expired leases of cancelled jobs: dead-lettered with cause `Cancelled`, never retried.
    pub cancelled_expired: Vec<JobId>,
    pub dedup_expired: usize,
    pub dead_letters_expired: usize,
    /// Close tombstones that ran out (their deletion never finished).
    pub tombstones_expired: usize,
    /// Pauses that reached their `until`.
    pub pauses_ended: usize,
    /// The schedules that were due, and what each did.
    pub schedule_firings: Vec<crate::schedule::Firing>,
    /// Per-key rate buckets dropped after being full for [`crate::KEY_BUCKET_GRACE_MS`].
    pub key_buckets_forgotten: usize,
}

impl SweepReport {
    pub fn is_empty(&self) -> bool {
        *self == SweepReport::default()
    }
}

impl State {
    /// Applies every transition due at `now_ms`, each phase up to the sweep limit.
    pub fn sweep(&mut self, now_ms: TimeMs, out: &mut Vec<Record>) -> SweepReport {
        let limit = self.rules.sweep_limit.max(1);
        let mut report = SweepReport::default();

        let reopened: Vec<_> =
            self.closed.iter().filter(|(_, until_ms)| **until_ms <= now_ms).map(|(queue, _)| queue.clone()).collect();
        report.tombstones_expired = reopened.len();
        for queue in reopened {
            self.record(Record::QueueReopened { queue }, out);
        }
        let resumed: Vec<_> = self
            .paused
            .iter()
            .filter(|(_, until_ms)| until_ms.is_some_and(|until_ms| until_ms <= now_ms))
            .map(|(queue, _)| queue.clone())
            .collect();
        report.pauses_ended = resumed.len();
        for queue in resumed {
            self.record(Record::QueueResumed { queue }, out);
        }

        for job_id in self.due_scheduled(now_ms, limit) {
            self.record(Record::Promoted { job_id }, out);
            report.promoted.push(job_id);
        }

        self.tokens_returned(now_ms);

        for id in self.due_schedules(now_ms, limit) {
            let firing = self.fire_schedule(now_ms, &id, out);
            report.schedule_firings.push(firing);
        }

        for job_id in self.expired_leases(now_ms, limit) {
            let live = self.jobs.get(&job_id).expect("lease index names a live job");
            let attempt = live.state.attempt();
            if self.cancelled.contains_key(&job_id) {
                self.finish_cancelled(job_id, out);
                report.cancelled_expired.push(job_id);
            } else if attempt >= live.job.max_attempts {
                self.dead_letter(now_ms, job_id, DeadLetterCause::LeaseExpired, None, out);
                report.lease_dead_lettered.push(job_id);
            } else {
                self.record(Record::Retried { job_id, attempt: attempt + 1, due_ms: None }, out);
                report.redelivered.push(job_id);
            }
        }

        let ended: Vec<_> = self
            .dedup_deadlines
            .iter()
            .take_while(|(deadline_ms, _, _)| *deadline_ms <= now_ms)
            .take(limit)
            .map(|(_, queue, key)| (queue.clone(), key.clone()))
            .collect();
        report.dedup_expired = ended.len();
        for (queue, key) in ended {
            self.record(Record::DedupExpired { queue, key }, out);
        }

        let retention_ms = self.rules.dead_letter_retention_ms as TimeMs;
        let aged: Vec<JobId> = self
            .dead_index
            .iter()
            .take_while(|(failed_at_ms, _, _)| failed_at_ms.saturating_add(retention_ms) <= now_ms)
            .take(limit)
            .map(|(_, _, job_id)| *job_id)
            .collect();
        report.dead_letters_expired = aged.len();
        for job_id in aged {
            self.record(Record::DeadLetterRemoved { job_id }, out);
        }

        // A bucket whose arrival time is past is full; one full for the grace period is dropped.
        let full_before_us = now_ms.saturating_sub(crate::state::KEY_BUCKET_GRACE_MS).saturating_mul(1000);
        let idle: Vec<_> = self
            .key_rate_index
            .iter()
            .take_while(|(tat_us, _, _)| *tat_us < full_before_us)
            .take(limit)
            .map(|(_, queue, key)| (queue.clone(), key.clone()))
            .collect();
        report.key_buckets_forgotten = idle.len();
        for (queue, key) in idle {
            self.record(Record::KeyRateForgotten { queue, key }, out);
        }
        report
    }

    /// Removes and returns up to `max` of the oldest dead letters, of one queue or of all.
    /// A queue filter walks that queue's own index, so it never under-returns (docs/protocol.md#draindeadletters).
    pub fn drain_dead_letters(&mut self, queue: Option<&str>, max: u32, out: &mut Vec<Record>) -> Vec<DeadLetter> {
        let taken: Vec<JobId> = match queue {
            Some(queue) => self.queues.get(queue).map_or_else(Vec::new, |state| {
                state.dead.iter().take(max as usize).map(|(_, job_id)| *job_id).collect()
            }),
            None => self.dead_index.iter().take(max as usize).map(|(_, _, job_id)| *job_id).collect(),
        };
        taken
            .into_iter()
            .map(|job_id| {
                let dead = self.dead_letters[&job_id].clone();
                self.record(Record::DeadLetterRemoved { job_id }, out);
                dead
            })
            .collect()
    }

    /// Keeps a dead letter again that a drain took for a caller who never received it. Nothing
    /// happens when a dead letter with its id is already kept.
    pub fn restore_dead_letter(&mut self, dead: DeadLetter, out: &mut Vec<Record>) {
        if !self.dead_letters.contains_key(&dead.job.id) && self.jobs.get(&dead.job.id).is_none() {
            self.record(Record::DeadLetterRestored { dead }, out);
        }
    }

    /// Whether `job_id` is scheduled (not yet due).
    pub fn is_scheduled(&self, job_id: &JobId) -> bool {
        matches!(self.job_state(job_id), Some(JobState::Scheduled { .. }))
    }
}
