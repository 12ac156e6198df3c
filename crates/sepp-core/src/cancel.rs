//! Cancelling a job by id, whatever it is doing.
//!
//! A ready or scheduled job is dead-lettered at once with cause [`DeadLetterCause::Cancelled`]
//! (kept as a dead letter while retention is on, deleted otherwise). A leased job cannot be
//! taken from its worker, so its lease is marked ([`Record::LeaseCancelled`]): the worker's
//! next ack, nack or extend is refused with [`crate::LeaseError::Cancelled`] and dead-letters
//! the job, and if the worker never comes back the job is dead-lettered when its lease runs
//! out. Either way it is never delivered again. Old clients see the refusal as a lost lease.

use crate::record::Record;
use crate::state::State;
use crate::types::{DeadLetterCause, JobId, JobState, TimeMs};

/// What a cancel did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was ready or scheduled: it is dead-lettered now.
    Removed,
    /// The job was leased: its lease is marked cancelled.
    LeaseCancelled,
    /// The job's lease was already marked cancelled: nothing changed.
    AlreadyCancelled,
}

/// Why a cancel changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelError {
    /// No live job and no dead letter has this id (it completed, or never existed).
    NotFound,
    /// The job is already a dead letter.
    DeadLettered,
}

impl State {
    /// Cancels `job_id` at `now_ms` (see the module).
    pub fn cancel(
        &mut self,
        now_ms: TimeMs,
        job_id: JobId,
        reason: Option<String>,
        out: &mut Vec<Record>,
    ) -> Result<CancelOutcome, CancelError> {
        match self.jobs.get(&job_id).map(|live| live.state) {
            Some(JobState::Ready { .. } | JobState::Scheduled { .. }) => {
                self.dead_letter(now_ms, job_id, DeadLetterCause::Cancelled, reason, out);
                Ok(CancelOutcome::Removed)
            }
            Some(JobState::Inflight { .. }) if self.cancelled.contains_key(&job_id) => {
                Ok(CancelOutcome::AlreadyCancelled)
            }
            Some(JobState::Inflight { .. }) => {
                self.record(Record::LeaseCancelled { job_id, at_ms: now_ms, reason }, out);
                Ok(CancelOutcome::LeaseCancelled)
            }
            None if self.dead_letters.contains_key(&job_id) => Err(CancelError::DeadLettered),
            None => Err(CancelError::NotFound),
        }
    }

    /// Whether `job_id` is leased under a cancelled lease.
    pub fn is_cancelled(&self, job_id: &JobId) -> bool {
        self.cancelled.contains_key(job_id)
    }
}
