//! Reserving jobs and settling their leases: reserve, ack, nack, extend.
//!
//! Every lease operation is fenced by attempt: the caller must present the attempt the job is
//! currently in flight under (docs/protocol.md#leases-and-attempts).

use crate::errors::LeaseError;
use crate::record::Record;
use crate::retry::retry_delay_ms;
use crate::state::State;
use crate::totals::Total;
use std::sync::Arc;

use crate::types::{DeadLetterCause, Delivery, Job, JobId, JobState, TimeMs};
use crate::validate::{NackStrategy, ReservePlan};

/// What a nack did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nacked {
    pub dead_lettered: bool,
    /// The delay before the retry (0 = ready now); 0 when dead-lettered.
    pub retry_delay_ms: u64,
}

impl State {
    /// Claims up to `plan.max_jobs` ready jobs, draining the queues in the order listed, each in
    /// priority then acceptance order.
    pub fn reserve(&mut self, now_ms: TimeMs, plan: &ReservePlan, out: &mut Vec<Record>) -> Vec<Delivery> {
        let lease_deadline_ms = now_ms.saturating_add(plan.lease_ms as TimeMs);
        let mut deliveries = Vec::new();
        for queue in &plan.queues {
            if self.is_paused(queue) {
                continue;
            }
            let before = deliveries.len();
            let rate = self.policy.queue(queue).rate_limit;
            let room = match rate {
                None => self.room_in_flight(queue),
                Some(_) => self.room_in_flight(queue).min(self.room_rate(queue, now_ms)),
            };
            let take = (plan.max_jobs as usize).min(before.saturating_add(room));
            if !self.keyed.is_empty() && self.keyed.contains_key(&**queue) {
                let next_token_ms = self.reserve_keyed(queue, now_ms, lease_deadline_ms, take, &mut deliveries, out);
                if let Some(at_ms) = next_token_ms
                    && deliveries.len() < plan.max_jobs as usize
                {
                    let name = self.intern(queue);
                    self.rate_waits.insert((at_ms, name));
                }
            } else {
                while deliveries.len() < take {
                    let Some(job_id) = self.first_ready(queue) else { break };
                    self.record(Record::Leased { job_id, lease_deadline_ms }, out);
                    let live = self.jobs.get(&job_id).expect("just leased");
                    let attempt = live.state.attempt();
                    deliveries.push(Delivery { job: live.job.clone(), attempt, lease_deadline_ms });
                }
            }
            let leased = deliveries.len() - before;
            if let Some(rate) = rate {
                let wanted_more = deliveries.len() < plan.max_jobs as usize;
                self.after_rate_limited_reserve(queue, rate, now_ms, leased, wanted_more, out);
            }
            self.add_total(queue, Total::Reserved, leased as u64);
        }
        deliveries
    }

    /// Completes a leased job: it is deleted. Idempotency keys stay.
    pub fn ack(&mut self, job_id: JobId, attempt: u32, out: &mut Vec<Record>) -> Result<(), LeaseError> {
        let queue = match self.leased(&job_id, attempt) {
            Ok(live) => live.job.queue.clone(),
            Err(error) => return Err(self.refused(job_id, error, out)),
        };
        self.record(Record::Acked { job_id }, out);
        self.add_total(&queue, Total::Acked, 1);
        Ok(())
    }

    /// Gives back a lease nobody used: the job was leased to a reserve whose caller had gone
    /// before the answer could reach it. It is ready again under the same attempt, in its old
    /// place, since no worker ever saw it.
    pub fn release(&mut self, job_id: JobId, attempt: u32, out: &mut Vec<Record>) -> Result<(), LeaseError> {
        if let Err(error) = self.leased(&job_id, attempt) {
            return Err(self.refused(job_id, error, out));
        }
        self.record(Record::Retried { job_id, attempt, due_ms: None }, out);
        Ok(())
    }

    /// Moves a lease deadline to `now + lease_ms`, clamped to the job's queue maximum.
    pub fn extend(
        &mut self,
        now_ms: TimeMs,
        job_id: JobId,
        attempt: u32,
        lease_ms: u64,
        out: &mut Vec<Record>,
    ) -> Result<TimeMs, LeaseError> {
        let live = match self.leased(&job_id, attempt) {
            Ok(live) => live,
            Err(error) => return Err(self.refused(job_id, error, out)),
        };
        let cap_ms = self.policy.queue(&live.job.queue).max_lease_duration_ms;
        let lease_deadline_ms = now_ms.saturating_add(lease_ms.min(cap_ms).max(1) as TimeMs);
        self.record(Record::LeaseExtended { job_id, lease_deadline_ms }, out);
        Ok(lease_deadline_ms)
    }

    /// Fails a leased job: dead-letters it (by request, or on its final attempt) or schedules the
    /// next attempt.
    pub fn nack(
        &mut self,
        now_ms: TimeMs,
        job_id: JobId,
        attempt: u32,
        strategy: NackStrategy,
        reason: Option<String>,
        out: &mut Vec<Record>,
    ) -> Result<Nacked, LeaseError> {
        let live = match self.leased(&job_id, attempt) {
            Ok(live) => live,
            Err(error) => return Err(self.refused(job_id, error, out)),
        };
        let queue = live.job.queue.clone();
        let cause = if strategy == NackStrategy::DeadLetter {
            Some(DeadLetterCause::Rejected)
        } else if attempt >= live.job.max_attempts {
            Some(DeadLetterCause::AttemptsExhausted)
        } else {
            None
        };
        self.add_total(&queue, Total::Nacked, 1);
        if let Some(cause) = cause {
            self.dead_letter(now_ms, job_id, cause, reason, out);
            return Ok(Nacked { dead_lettered: true, retry_delay_ms: 0 });
        }
        let limits = self.policy.queue(&queue);
        let delay_ms = match strategy {
            NackStrategy::Delay { delay_ms } => delay_ms.min(limits.max_schedule_horizon_ms),
            _ => retry_delay_ms(limits, &job_id, attempt),
        };
        let due_ms = (delay_ms > 0).then(|| now_ms.saturating_add(delay_ms as TimeMs));
        self.record(Record::Retried { job_id, attempt: attempt + 1, due_ms }, out);
        Ok(Nacked { dead_lettered: false, retry_delay_ms: delay_ms })
    }

    /// A lease operation failed its fence with `error`. A lease that was cancelled meets its
    /// end here: the job is dead-lettered as cancelled, and the operation refused.
    fn refused(&mut self, job_id: JobId, error: LeaseError, out: &mut Vec<Record>) -> LeaseError {
        if error == LeaseError::Cancelled {
            self.finish_cancelled(job_id, out);
        }
        error
    }

    /// Dead-letters a cancelled lease's job, as of when it was cancelled.
    pub(crate) fn finish_cancelled(&mut self, job_id: JobId, out: &mut Vec<Record>) {
        let (at_ms, reason) = self.cancelled.get(&job_id).cloned().expect("the job's lease was cancelled");
        self.dead_letter(at_ms, job_id, DeadLetterCause::Cancelled, reason, out);
    }

    /// Takes a live job out of the queue as dead. With retention on, a dead-letter record keeps it.
    pub(crate) fn dead_letter(
        &mut self,
        now_ms: TimeMs,
        job_id: JobId,
        cause: DeadLetterCause,
        last_reason: Option<String>,
        out: &mut Vec<Record>,
    ) {
        let kept = self.rules.dead_letter_retention_ms > 0;
        self.count_dead_letter(&job_id);
        self.record(Record::DeadLettered { job_id, cause, failed_at_ms: now_ms, last_reason, kept }, out);
    }

    /// The state of a live job, if it is live.
    /// A live job (ready, scheduled or leased) and its current attempt, for observability: the
    /// server hands it to the code that builds spans and metrics.
    pub fn live_job(&self, job_id: &JobId) -> Option<(Arc<Job>, u32)> {
        self.jobs.get(job_id).map(|live| (live.job.clone(), live.state.attempt()))
    }

    /// The jobs whose leases have run out at `now_ms` (at most the sweep limit, as the sweep
    /// takes them), with their attempt: read before a sweep, since one that is dead-lettered
    /// without retention is gone after it.
    pub fn expired_lease_jobs(&self, now_ms: TimeMs) -> Vec<(Arc<Job>, u32)> {
        self.expired_leases(now_ms, self.rules.sweep_limit.max(1))
            .into_iter()
            .filter_map(|job_id| self.live_job(&job_id))
            .collect()
    }

    pub fn job_state(&self, job_id: &JobId) -> Option<JobState> {
        self.jobs.get(job_id).map(|live| live.state)
    }
}
