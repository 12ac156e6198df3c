//! Records: the state changes the queue makes, in the order it makes them.
//!
//! Every change to the queue's data (jobs, leases, dead letters, keys, pauses, schedules,
//! buckets) is expressed as a record and applied through [`crate::State::apply`], live and on
//! replay alike, so replaying the records of a run rebuilds exactly the state that run had. (The
//! per-process totals of `totals`, where payload bytes sit and the policy in force are not
//! records: a replay does not rebuild them.) Records carry results, not requests: a replay with a changed
//! configuration still reproduces the same state.

use std::sync::Arc;

use crate::audit::AuditEntry;
use crate::types::{DeadLetter, DeadLetterCause, Job, JobId, JobState, TimeMs};

#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// A new job was accepted with attempt 1: ready, or scheduled until `due_ms`.
    JobAccepted { job: Arc<Job>, due_ms: Option<TimeMs> },
    /// An idempotency key of a queue now points at `job_id` until `deadline_ms`.
    DedupBound { queue: Arc<str>, key: String, job_id: JobId, deadline_ms: TimeMs },
    /// A ready job was leased to a worker until `lease_deadline_ms`.
    Leased { job_id: JobId, lease_deadline_ms: TimeMs },
    /// A lease got a new deadline.
    LeaseExtended { job_id: JobId, lease_deadline_ms: TimeMs },
    /// A leased job completed and was deleted.
    Acked { job_id: JobId },
    /// A leased job goes back for another attempt: ready now, or scheduled until `due_ms`.
    Retried { job_id: JobId, attempt: u32, due_ms: Option<TimeMs> },
    /// A scheduled job became ready.
    Promoted { job_id: JobId },
    /// A live job died. With `kept` a dead-letter record stays for inspection; without, the job
    /// is simply deleted (dead-letter retention is off).
    DeadLettered {
        job_id: JobId,
        cause: DeadLetterCause,
        failed_at_ms: TimeMs,
        last_reason: Option<String>,
        kept: bool,
    },
    /// A dead-letter record was drained, deleted by an operator, purged, or reached the end of
    /// its retention.
    DeadLetterRemoved { job_id: JobId },
    /// An idempotency key was dropped: its window ended, or its queue was purged.
    DedupExpired { queue: Arc<str>, key: String },
    /// A ready or scheduled job was removed by an operator purging its queue.
    Purged { job_id: JobId },
    /// A dead letter went back to its queue as a new first attempt, ready, enqueued at
    /// `enqueued_at_ms` with acceptance order `seq`.
    DeadLetterRequeued { job_id: JobId, seq: u64, enqueued_at_ms: TimeMs },
    /// A queue is being deleted: its enqueues are refused until `until_ms` (or until
    /// [`Record::QueueReopened`]). A later record for the same queue replaces the deadline.
    QueueClosed { queue: Arc<str>, until_ms: TimeMs },
    /// A queue's close tombstone was cleared (or expired).
    QueueReopened { queue: Arc<str> },
    /// Reserves skip `queue` (every queue when it is empty) until [`Record::QueueResumed`], or
    /// until `until_ms` when given. Enqueues are still accepted and leases already held go on.
    /// A later record for the same queue replaces the deadline.
    QueuePaused { queue: Arc<str>, until_ms: Option<TimeMs> },
    /// A pause was lifted by an operator, or its `until_ms` passed.
    QueueResumed { queue: Arc<str> },
    /// A leased job was cancelled at `at_ms`: its worker's next ack, nack or extend is refused
    /// as cancelled, it is never delivered again, and it is dead-lettered (cause `Cancelled`,
    /// failed at `at_ms`, with `reason`) at that settle or when its lease runs out.
    LeaseCancelled { job_id: JobId, at_ms: TimeMs, reason: Option<String> },
    /// A recurring schedule was created or replaced (also how a checkpoint carries one).
    ScheduleSet { schedule: Box<crate::schedule::Schedule> },
    /// A schedule was deleted.
    ScheduleDeleted { id: String },
    /// A schedule's slot `slot_ms` was due: it fired `job_id` (none when the slot was skipped)
    /// and waits for `next_ms` now. The job, when there is one, is accepted in the same cycle.
    ScheduleFired { id: String, slot_ms: TimeMs, next_ms: TimeMs, job_id: Option<JobId> },
    /// A rate-limited queue leased jobs: its bucket's theoretical arrival time is now `tat_us`
    /// (microseconds since the epoch). In the log so that a restart keeps the limit exact.
    RateAdvanced { queue: Arc<str>, tat_us: i64 },
    /// A queue with a per-key rate limit leased a job of key value `key`: that key's bucket's
    /// theoretical arrival time is now `tat_us`.
    KeyRateAdvanced { queue: Arc<str>, key: Arc<str>, tat_us: i64 },
    /// A key's bucket had been full for a while (see [`crate::KEY_BUCKET_GRACE_MS`]): it
    /// is dropped, which a full bucket is equal to, so keys no longer used take no memory.
    KeyRateForgotten { queue: Arc<str>, key: Arc<str> },
    /// The acceptance sequence continues at `next_seq` (or later): how a checkpoint carries the
    /// counter, so a state rebuilt from one numbers new jobs exactly as the original would.
    SequenceRestored { next_seq: u64 },
    /// An operator action, appended to the audit log.
    Audited { entry: Arc<AuditEntry> },
    /// A live job as a checkpoint saw it (see [`crate::State::snapshot`]).
    JobRestored { job: Arc<Job>, state: JobState },
    /// A dead-letter record as a checkpoint saw it.
    DeadLetterRestored { dead: DeadLetter },
}
