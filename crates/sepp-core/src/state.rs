//! The queue state and its indexes. Every change to the queue goes through [`State::apply`] with
//! a record; the other mutators only say where payload bytes now are (`place_payload`), which
//! rules apply from now on (`set_policy`), or count this process's totals (`count_totals`, see
//! `totals`), and none of them is part of what a replay must rebuild.
//!
//! The operations (enqueue, reserve, lease settlement, sweep, drain) live in their own modules;
//! each decides what happens and then calls `apply` with the records of its decision. Nothing
//! here decides anything: `apply` trusts its record, which is what makes replay exact.

use std::collections::{BTreeMap, BTreeSet};

// foldhash rather than SipHash: the names and ids hashed here on every command are short.
use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use crate::audit::AuditLog;
use crate::jobs::{JobTable, LiveJob, Slot};
use crate::keyed::KeyedQueue;
use crate::limits::Policy;
use crate::record::Record;
use crate::snapshot::{Snapshot, SnapshotEntry};
use crate::totals::TotalsTable;
use crate::types::{DeadLetter, Job, JobId, JobState, PayloadData, StoredPayload, TimeMs};

/// The name a pause of every queue is kept under: no queue can be called this, since queue
/// names are never empty.
pub const ALL_QUEUES: &str = "";

/// How long after a per-key bucket is full again (its key leased nothing for a while) it is
/// dropped: a dropped bucket is full, so this changes no decision, only what memory holds.
pub const KEY_BUCKET_GRACE_MS: TimeMs = 60_000;

/// Settings fixed when the state machine is created (restart-only configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageRules {
    /// 0 disables dead-letter retention: dead jobs are deleted outright.
    pub dead_letter_retention_ms: u64,
    /// Budget of each sweep phase per cycle, and the scan cap of nothing else.
    pub sweep_limit: usize,
}

impl Default for StorageRules {
    fn default() -> Self {
        StorageRules { dead_letter_retention_ms: 0, sweep_limit: 10_000 }
    }
}

/// Ordering key of the ready index: highest priority first, then acceptance order, packed into
/// one `u64` (the priority's complement in the top byte, the sequence number below it).
pub(crate) fn ready_key(job: &Job) -> u64 {
    debug_assert!(job.seq < 1 << 56 && job.priority <= 9);
    (u64::from(9 - job.priority) << 56) | job.seq
}

/// The per-queue indexes and counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct QueueState {
    pub ready: BTreeMap<u64, Slot>,
    pub scheduled: usize,
    pub inflight: usize,
    /// Dead letters of this queue, oldest first.
    pub dead: BTreeSet<(TimeMs, JobId)>,
}

impl QueueState {
    fn is_empty(&self) -> bool {
        self.ready.is_empty() && self.scheduled == 0 && self.inflight == 0 && self.dead.is_empty()
    }

    /// Ready + scheduled + in flight: what `max_queue_depth` counts.
    pub fn live_depth(&self) -> u64 {
        (self.ready.len() + self.scheduled + self.inflight) as u64
    }
}

/// An idempotency key's binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DedupEntry {
    pub job_id: JobId,
    pub deadline_ms: TimeMs,
}

/// Depths of one queue in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Depths {
    pub ready: u64,
    pub scheduled: u64,
    pub inflight: u64,
    pub dead_letter: u64,
}

/// Where a job a `JobAccepted` record carries goes: scheduled until `due_ms`, or ready.
fn accepted_state(due_ms: Option<TimeMs>) -> JobState {
    match due_ms {
        Some(due_ms) => JobState::Scheduled { attempt: 1, due_ms },
        None => JobState::Ready { attempt: 1 },
    }
}

/// Interned queue names, job types and encodings, so a million jobs share a handful of strings.
/// The last few names asked for are compared first: a batch names the same queue, type and
/// encoding job after job, and comparing a short string costs less than hashing it.
#[derive(Clone, Debug, Default)]
struct Names {
    all: HashSet<Arc<str>>,
    recent: [Option<Arc<str>>; 4],
    /// The entry of `recent` the next miss replaces.
    next: usize,
}

impl Names {
    /// Whether `name` is one of the recently interned names itself (the same allocation), which
    /// costs no reference count.
    fn is_recent(&self, name: &Arc<str>) -> bool {
        self.recent.iter().flatten().any(|recent| Arc::ptr_eq(recent, name))
    }

    fn intern(&mut self, name: &str) -> Arc<str> {
        self.intern_or(name, || Arc::from(name))
    }

    /// [`Names::intern`] of a name that comes in an `Arc` of its own (a job's, built by another
    /// state): a name not known yet is kept as that very `Arc`, so the job keeps sharing it.
    fn intern_shared(&mut self, name: &Arc<str>) -> Arc<str> {
        self.intern_or(name, || name.clone())
    }

    fn intern_or(&mut self, name: &str, new: impl FnOnce() -> Arc<str>) -> Arc<str> {
        if let Some(hit) = self.recent.iter().flatten().find(|recent| ***recent == *name) {
            return hit.clone();
        }
        let interned = match self.all.get(name) {
            Some(interned) => interned.clone(),
            None => {
                let interned = new();
                self.all.insert(interned.clone());
                interned
            }
        };
        self.recent[self.next] = Some(interned.clone());
        self.next = (self.next + 1) % self.recent.len();
        interned
    }
}

/// The whole queue: every live job, every dead letter, every idempotency key, and the indexes
/// that order them.
#[derive(Clone, Debug)]
pub struct State {
    pub(crate) policy: Arc<Policy>,
    pub(crate) rules: StorageRules,
    pub(crate) jobs: JobTable,
    pub(crate) queues: HashMap<Arc<str>, QueueState>,
    names: Names,
    /// Scheduled jobs by due time, then acceptance order.
    pub(crate) scheduled: BTreeMap<(TimeMs, u64), Slot>,
    /// Leases by deadline, then acceptance order.
    pub(crate) leases: BTreeMap<(TimeMs, u64), Slot>,
    pub(crate) dedup: HashMap<Arc<str>, HashMap<String, DedupEntry>>,
    pub(crate) dedup_deadlines: BTreeSet<(TimeMs, Arc<str>, String)>,
    pub(crate) dead_letters: HashMap<JobId, DeadLetter>,
    /// Every dead letter, oldest first (failed_at, then queue, then job id).
    pub(crate) dead_index: BTreeSet<(TimeMs, Arc<str>, JobId)>,
    pub(crate) next_seq: u64,
    /// Bumped whenever a job becomes ready; waiters compare it to know when to look again.
    ready_generation: u64,
    /// Approximate encoded size of every live job and dead letter.
    live_bytes: u64,
    /// Close tombstones: queues being deleted, and until when their enqueues are refused.
    pub(crate) closed: HashMap<Arc<str>, TimeMs>,
    /// Paused queues ([`ALL_QUEUES`] for all of them), each until when, if it ends by itself.
    /// Kept apart from the queue indexes, so a pause outlives its queue's last job.
    pub(crate) paused: HashMap<Arc<str>, Option<TimeMs>>,
    /// Rate-limited queues' buckets: the theoretical arrival time of the next lease, in µs.
    pub(crate) rate_tat: HashMap<Arc<str>, i64>,
    /// When a rate-limited queue that had ready jobs and no token gets its next token: the
    /// committer wakes then, so parked reserves are offered the queue again. Not state: a hint.
    pub(crate) rate_waits: BTreeSet<(TimeMs, Arc<str>)>,
    /// The per-key index of every queue with a key limit (derived: see [`crate::keyed`]).
    pub(crate) keyed: HashMap<Arc<str>, KeyedQueue>,
    /// Per-key rate buckets by queue, then key value: the next lease's arrival time, in µs.
    pub(crate) key_rate_tat: HashMap<Arc<str>, HashMap<Arc<str>, i64>>,
    /// The same buckets by arrival time (derived), so the sweep finds the full ones.
    pub(crate) key_rate_index: BTreeSet<(i64, Arc<str>, Arc<str>)>,
    /// Recurring schedules by id, and their next slots in time order.
    pub(crate) schedules: HashMap<String, crate::schedule::Schedule>,
    pub(crate) schedule_index: BTreeSet<(TimeMs, String)>,
    /// Leased jobs that were cancelled: when, and why (see [`Record::LeaseCancelled`]).
    pub(crate) cancelled: HashMap<JobId, (TimeMs, Option<String>)>,
    pub(crate) audit: AuditLog,
    pub(crate) totals: TotalsTable,
}

impl State {
    pub fn new(policy: Arc<Policy>, rules: StorageRules) -> Self {
        let mut state = State {
            policy,
            rules,
            jobs: JobTable::default(),
            queues: HashMap::new(),
            names: Names::default(),
            scheduled: BTreeMap::new(),
            leases: BTreeMap::new(),
            dedup: HashMap::new(),
            dedup_deadlines: BTreeSet::new(),
            dead_letters: HashMap::new(),
            dead_index: BTreeSet::new(),
            next_seq: 1,
            ready_generation: 0,
            live_bytes: 0,
            closed: HashMap::new(),
            paused: HashMap::new(),
            cancelled: HashMap::new(),
            schedules: HashMap::new(),
            rate_tat: HashMap::new(),
            rate_waits: BTreeSet::new(),
            keyed: HashMap::new(),
            key_rate_tat: HashMap::new(),
            key_rate_index: BTreeSet::new(),
            schedule_index: BTreeSet::new(),
            audit: AuditLog::default(),
            totals: TotalsTable::default(),
        };
        state.rekey(&Policy::default());
        state
    }

    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// Installs a reloaded policy; it applies to every decision from now on.
    pub fn set_policy(&mut self, policy: Arc<Policy>) {
        let previous = std::mem::replace(&mut self.policy, policy);
        self.rekey(&previous);
        // A raised or removed in-flight limit can let parked reserves take waiting jobs.
        self.ready_generation += 1;
    }

    pub fn rules(&self) -> StorageRules {
        self.rules
    }

    /// Approximate encoded size of the live state: what a checkpoint of it would take.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes + self.audit.bytes() as u64
    }

    /// Changes whenever any job becomes ready.
    pub fn ready_generation(&self) -> u64 {
        self.ready_generation
    }

    /// Whether `queue` has a job a reserve can take now: ready, not paused, and under the
    /// queue's in-flight limit.
    pub fn has_ready(&self, queue: &str) -> bool {
        let ready = if self.keyed.is_empty() || !self.keyed.contains_key(queue) {
            self.queues.get(queue).is_some_and(|state| !state.ready.is_empty())
        } else {
            self.keyed_has_ready(queue, None)
        };
        ready && !self.is_paused(queue) && self.room_in_flight(queue) > 0
    }

    /// Whether a reserve at `now_ms` could take a job from `queue`: `has_ready`, and a token of
    /// its rate limit is there.
    pub fn has_ready_at(&self, queue: &str, now_ms: TimeMs) -> bool {
        self.has_ready(queue)
            && self.room_rate(queue, now_ms) > 0
            && (self.keyed.is_empty() || !self.keyed.contains_key(queue) || self.keyed_has_ready(queue, Some(now_ms)))
    }

    /// How many leases `queue`'s rate limit allows at `now_ms` (`usize::MAX` without one).
    pub fn room_rate(&self, queue: &str, now_ms: TimeMs) -> usize {
        match self.policy.queue(queue).rate_limit {
            None => usize::MAX,
            Some(rate) => rate.room(self.rate_tat.get(queue).copied(), now_ms.saturating_mul(1000)),
        }
    }

    /// After a reserve took `leased` jobs from rate-limited `queue` at `now_ms`: the tokens are
    /// spent (a record, so the bucket survives a restart), and when the caller wanted more and
    /// the queue has ready jobs but no token, the committer is told when the next one comes.
    pub(crate) fn after_rate_limited_reserve(
        &mut self,
        queue: &str,
        rate: crate::RateLimit,
        now_ms: TimeMs,
        leased: usize,
        wanted_more: bool,
        out: &mut Vec<Record>,
    ) {
        let now_us = now_ms.saturating_mul(1000);
        let name = self.intern(queue);
        if leased > 0 {
            let tat_us = rate.spent(self.rate_tat.get(queue).copied(), now_us, leased);
            self.record(Record::RateAdvanced { queue: name.clone(), tat_us }, out);
        }
        let tat = self.rate_tat.get(queue).copied();
        if wanted_more
            && self.has_ready(queue)
            && rate.room(tat, now_us) == 0
            && let Some(tat_us) = tat
        {
            let at_ms = (rate.next_token_us(tat_us) + 999).div_euclid(1000);
            self.rate_waits.insert((at_ms, name));
        }
    }

    /// Tokens came back at `now_ms`: parked reserves get another look at those queues.
    pub(crate) fn tokens_returned(&mut self, now_ms: TimeMs) {
        let before = self.rate_waits.len();
        while self.rate_waits.first().is_some_and(|(at_ms, _)| *at_ms <= now_ms) {
            self.rate_waits.pop_first();
        }
        if self.rate_waits.len() != before {
            self.ready_generation += 1;
        }
    }

    /// How many more of `queue`'s jobs may be in flight now (`usize::MAX` without a limit).
    pub fn room_in_flight(&self, queue: &str) -> usize {
        match self.policy.queue(queue).max_in_flight {
            None => usize::MAX,
            Some(limit) => {
                let inflight = self.queues.get(queue).map_or(0, |state| state.inflight);
                (limit as usize).saturating_sub(inflight)
            }
        }
    }

    /// Whether reserves skip `queue`: it is paused, or every queue is.
    pub fn is_paused(&self, queue: &str) -> bool {
        !self.paused.is_empty() && (self.paused.contains_key(queue) || self.paused.contains_key(ALL_QUEUES))
    }

    pub fn depths(&self, queue: &str) -> Depths {
        self.queues.get(queue).map_or_else(Depths::default, |state| Depths {
            ready: state.ready.len() as u64,
            scheduled: state.scheduled as u64,
            inflight: state.inflight as u64,
            dead_letter: state.dead.len() as u64,
        })
    }

    /// Depths summed over every queue.
    pub fn total_depths(&self) -> Depths {
        Depths {
            ready: self.queues.values().map(|queue| queue.ready.len() as u64).sum(),
            scheduled: self.scheduled.len() as u64,
            inflight: self.leases.len() as u64,
            dead_letter: self.dead_letters.len() as u64,
        }
    }

    /// Names of the queues that hold any job or dead letter.
    pub fn queue_names(&self) -> Vec<Arc<str>> {
        self.queues.keys().cloned().collect()
    }

    /// The next time a sweep has work: a due scheduled job, an expired lease, an ended dedup
    /// window, a dead letter past its retention, or an expiring close tombstone.
    pub fn next_deadline_ms(&self) -> Option<TimeMs> {
        let retention = self
            .dead_index
            .first()
            .map(|(failed_at_ms, _, _)| failed_at_ms.saturating_add(self.rules.dead_letter_retention_ms as TimeMs));
        [
            self.scheduled.keys().next().map(|(due_ms, _)| *due_ms),
            self.leases.keys().next().map(|(deadline_ms, _)| *deadline_ms),
            self.dedup_deadlines.first().map(|entry| entry.0),
            retention,
            self.closed.values().min().copied(),
            self.paused.values().flatten().min().copied(),
            self.schedule_index.first().map(|(next_ms, _)| *next_ms),
            self.rate_waits.first().map(|(at_ms, _)| *at_ms),
            self.key_rate_index.first().map(|(tat_us, _, _)| tat_us.div_euclid(1000) + 1 + KEY_BUCKET_GRACE_MS),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    pub(crate) fn intern(&mut self, name: &str) -> Arc<str> {
        self.names.intern(name)
    }

    pub(crate) fn live_depth(&self, queue: &str) -> u64 {
        self.queues.get(queue).map_or(0, QueueState::live_depth)
    }

    pub(crate) fn dedup_lookup(&self, queue: &str, key: &str, now_ms: TimeMs) -> Option<JobId> {
        let entry = self.dedup.get(queue)?.get(key)?;
        (entry.deadline_ms > now_ms).then_some(entry.job_id)
    }

    /// [`State::apply`] of a record the caller is done with, as one just decoded: a job it
    /// carries is then its record's only holder, so making it share the interned names changes
    /// it in place instead of copying it (payload included).
    pub fn apply_owned(&mut self, record: Record) {
        match record {
            Record::JobAccepted { job, due_ms } => self.restore_job(job, accepted_state(due_ms)),
            Record::JobRestored { job, state } => self.restore_job(job, state),
            other => self.apply(&other),
        }
    }

    /// Applies one record. Records are facts: a record that does not fit the state (a job that
    /// is not where the record says) is a broken invariant and panics.
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::JobAccepted { job, due_ms } => self.restore_job(job.clone(), accepted_state(*due_ms)),
            Record::JobRestored { job, state } => self.restore_job(job.clone(), *state),
            Record::DeadLetterRestored { dead } => {
                let mut dead = dead.clone();
                dead.job = self.share_names(dead.job);
                self.put_dead_letter(dead);
            }
            Record::DedupBound { queue, key, job_id, deadline_ms } => {
                let queue = self.intern(queue);
                let previous = self
                    .dedup
                    .entry(queue.clone())
                    .or_default()
                    .insert(key.clone(), DedupEntry { job_id: *job_id, deadline_ms: *deadline_ms });
                if let Some(previous) = previous {
                    self.dedup_deadlines.remove(&(previous.deadline_ms, queue.clone(), key.clone()));
                }
                self.dedup_deadlines.insert((*deadline_ms, queue, key.clone()));
            }
            Record::Leased { job_id, lease_deadline_ms } | Record::LeaseExtended { job_id, lease_deadline_ms } => {
                self.move_job(job_id, |attempt| JobState::Inflight { attempt, lease_deadline_ms: *lease_deadline_ms });
            }
            Record::Acked { job_id } => {
                let live = self.take_live(job_id);
                self.prune_queue(&live.job.queue);
            }
            Record::Retried { job_id, attempt, due_ms } => {
                let state = match due_ms {
                    Some(due_ms) => JobState::Scheduled { attempt: *attempt, due_ms: *due_ms },
                    None => JobState::Ready { attempt: *attempt },
                };
                self.move_job(job_id, |_| state);
            }
            Record::Promoted { job_id } => self.move_job(job_id, |attempt| JobState::Ready { attempt }),
            Record::DeadLettered { job_id, cause, failed_at_ms, last_reason, kept } => {
                let live = self.take_live(job_id);
                if *kept {
                    let dead = DeadLetter {
                        final_attempt: live.state.attempt(),
                        job: live.job,
                        cause: *cause,
                        failed_at_ms: *failed_at_ms,
                        last_reason: last_reason.clone(),
                    };
                    self.put_dead_letter(dead);
                } else {
                    self.prune_queue(&live.job.queue);
                }
            }
            Record::DeadLetterRemoved { job_id } => {
                let dead = self.take_dead_letter(job_id);
                self.prune_queue(&dead.job.queue);
            }
            Record::DeadLetterRequeued { job_id, seq, enqueued_at_ms } => {
                let dead = self.take_dead_letter(job_id);
                let job = Arc::new(State::requeued_job(&dead.job, *seq, *enqueued_at_ms));
                self.next_seq = self.next_seq.max(seq + 1);
                self.put_live(job, JobState::Ready { attempt: 1 });
            }
            Record::Purged { job_id } => {
                let live = self.take_live(job_id);
                self.prune_queue(&live.job.queue);
            }
            Record::QueueClosed { queue, until_ms } => {
                let queue = self.intern(queue);
                self.closed.insert(queue, *until_ms);
            }
            Record::QueueReopened { queue } => {
                self.closed.remove(queue);
            }
            Record::QueuePaused { queue, until_ms } => {
                let queue = self.intern(queue);
                self.paused.insert(queue, *until_ms);
            }
            Record::QueueResumed { queue } => {
                if self.paused.remove(queue).is_some() {
                    // Parked reserves get another look: the queue's ready jobs count again.
                    self.ready_generation += 1;
                }
            }
            Record::LeaseCancelled { job_id, at_ms, reason } => {
                let live = self.jobs.get(job_id).expect("record names a live job");
                assert!(matches!(live.state, JobState::Inflight { .. }), "only a leased job is cancelled in place");
                self.cancelled.insert(*job_id, (*at_ms, reason.clone()));
            }
            Record::ScheduleSet { schedule } => {
                let id = schedule.spec.id.clone();
                self.schedule_index.insert((schedule.next_ms, id.clone()));
                if let Some(previous) = self.schedules.insert(id.clone(), (**schedule).clone())
                    && previous.next_ms != schedule.next_ms
                {
                    self.schedule_index.remove(&(previous.next_ms, id));
                }
            }
            Record::ScheduleDeleted { id } => {
                let schedule = self.schedules.remove(id).expect("record names a schedule");
                self.schedule_index.remove(&(schedule.next_ms, id.clone()));
            }
            Record::ScheduleFired { id, slot_ms, next_ms, job_id } => {
                let schedule = self.schedules.get_mut(id).expect("record names a schedule");
                self.schedule_index.remove(&(schedule.next_ms, id.clone()));
                schedule.next_ms = *next_ms;
                schedule.last_slot_ms = Some(*slot_ms);
                if let Some(job_id) = job_id {
                    schedule.last_job = Some(*job_id);
                    schedule.fired += 1;
                }
                self.schedule_index.insert((*next_ms, id.clone()));
            }
            Record::RateAdvanced { queue, tat_us } => {
                let queue = self.intern(queue);
                self.rate_tat.insert(queue, *tat_us);
            }
            Record::KeyRateAdvanced { queue, key, tat_us } => {
                // The key value is not interned (see `keyed::key_of`): it lives with its bucket.
                let queue = self.intern(queue);
                let key = key.clone();
                let previous = self.key_rate_tat.entry(queue.clone()).or_default().insert(key.clone(), *tat_us);
                if let Some(previous) = previous {
                    self.key_rate_index.remove(&(previous, queue.clone(), key.clone()));
                }
                self.key_rate_index.insert((*tat_us, queue, key));
            }
            Record::KeyRateForgotten { queue, key } => {
                let keys = self.key_rate_tat.get_mut(queue).expect("record names a bucket");
                let tat_us = keys.remove(key).expect("record names a bucket");
                if keys.is_empty() {
                    self.key_rate_tat.remove(queue);
                }
                self.key_rate_index.remove(&(tat_us, queue.clone(), key.clone()));
            }
            Record::SequenceRestored { next_seq } => self.next_seq = self.next_seq.max(*next_seq),
            Record::Audited { entry } => self.audit.push(entry.clone()),
            Record::DedupExpired { queue, key } => {
                if let Some(keys) = self.dedup.get_mut(queue)
                    && let Some(entry) = keys.remove(key)
                {
                    self.dedup_deadlines.remove(&(entry.deadline_ms, queue.clone(), key.clone()));
                    if keys.is_empty() {
                        self.dedup.remove(queue);
                    }
                }
            }
        }
    }

    fn restore_job(&mut self, job: Arc<Job>, state: JobState) {
        let job = self.share_names(job);
        self.next_seq = self.next_seq.max(job.seq + 1);
        self.put_live(job, state);
    }

    /// Replayed jobs arrive with strings of their own; this makes them share the interned ones
    /// (in place when `job` is its only holder, by a copy otherwise).
    fn share_names(&mut self, mut job: Arc<Job>) -> Arc<Job> {
        // A job accepted just now was built from interned names already.
        let names = &self.names;
        if names.is_recent(&job.queue)
            && names.is_recent(&job.job_type)
            && job.payload.as_ref().is_none_or(|payload| names.is_recent(&payload.encoding))
        {
            return job;
        }
        let queue = self.names.intern_shared(&job.queue);
        let job_type = self.names.intern_shared(&job.job_type);
        let encoding = job.payload.as_ref().map(|payload| self.names.intern_shared(&payload.encoding));
        let shared_encoding = match (&encoding, &job.payload) {
            (Some(interned), Some(payload)) => Arc::ptr_eq(interned, &payload.encoding),
            _ => true,
        };
        if Arc::ptr_eq(&queue, &job.queue) && Arc::ptr_eq(&job_type, &job.job_type) && shared_encoding {
            return job;
        }
        let shared = Arc::make_mut(&mut job);
        shared.queue = queue;
        shared.job_type = job_type;
        if let (Some(payload), Some(encoding)) = (&mut shared.payload, encoding) {
            payload.encoding = encoding;
        }
        job
    }

    /// Records where the log put a payload's bytes (after the write that carried them became
    /// durable, or after a checkpoint moved them), so memory no longer holds them. A job that is
    /// gone by now is skipped. This changes no queue state and is not a record: a replay learns
    /// the same places from the files it reads.
    ///
    /// A job that others share too is replaced by a copy (without its payload's bytes), which
    /// is then this state's alone.
    pub fn place_payload(&mut self, job_id: JobId, stored: StoredPayload) {
        let Some(job) = self.job_slot(&job_id) else { return };
        if job.payload.as_ref().is_none_or(|payload| payload.data.len() != stored.len as usize) {
            return;
        }
        match Arc::get_mut(job) {
            Some(only) => only.payload.as_mut().expect("checked above").data = PayloadData::Stored(stored),
            None => *job = Arc::new(job.with_payload_data(PayloadData::Stored(stored))),
        }
    }

    /// Where the state holds the job `job_id`: live, or as a dead letter.
    fn job_slot(&mut self, job_id: &JobId) -> Option<&mut Arc<Job>> {
        match self.jobs.get_mut(job_id) {
            Some(live) => Some(&mut live.job),
            None => self.dead_letters.get_mut(job_id).map(|dead| &mut dead.job),
        }
    }

    /// The job `job_id`, live or dead-lettered, as this state holds it.
    pub fn held_job(&self, job_id: &JobId) -> Option<&Arc<Job>> {
        match self.jobs.get(job_id) {
            Some(live) => Some(&live.job),
            None => self.dead_letters.get(job_id).map(|dead| &dead.job),
        }
    }

    /// Takes `job` in place of the copy of it this state holds (the same job: same id and
    /// acceptance sequence, so the same immutable fields; its payload may be elsewhere), so that
    /// both holders share one allocation. Nothing changes when the state does not hold it; returns
    /// whether it was taken. This is no record: no queue state changes.
    pub fn adopt_job(&mut self, job: Arc<Job>) -> bool {
        let Some(held) = self.job_slot(&job.id) else { return false };
        let same_payload = match (&held.payload, &job.payload) {
            (Some(held), Some(offered)) => held.data.len() == offered.data.len(),
            (None, None) => true,
            _ => false,
        };
        if held.seq != job.seq || !same_payload {
            return false;
        }
        *held = job;
        true
    }

    /// Every payload this state holds in a file, with its job (live jobs and dead letters).
    pub fn stored_payloads(&self) -> impl Iterator<Item = (&Arc<Job>, StoredPayload)> + '_ {
        let stored = |job: &Arc<Job>| match job.payload.as_ref().map(|payload| &payload.data) {
            Some(PayloadData::Stored(stored)) => Some(*stored),
            _ => None,
        };
        let live = self.jobs.values().map(|live| &live.job);
        let dead = self.dead_letters.values().map(|dead| &dead.job);
        live.chain(dead).filter_map(move |job| stored(job).map(|place| (job, place)))
    }

    /// Records that rebuild this exact state from an empty one: what a checkpoint stores.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for live in self.jobs.values() {
            snapshot.push(SnapshotEntry::Job(live.job.clone(), live.state));
        }
        for dead in self.dead_letters.values() {
            snapshot.push(Record::DeadLetterRestored { dead: dead.clone() }.into());
        }
        for (queue, keys) in &self.dedup {
            for (key, entry) in keys {
                snapshot.push(
                    Record::DedupBound {
                        queue: queue.clone(),
                        key: key.clone(),
                        job_id: entry.job_id,
                        deadline_ms: entry.deadline_ms,
                    }
                    .into(),
                );
            }
        }
        for (queue, until_ms) in &self.closed {
            snapshot.push(Record::QueueClosed { queue: queue.clone(), until_ms: *until_ms }.into());
        }
        for (queue, until_ms) in &self.paused {
            snapshot.push(Record::QueuePaused { queue: queue.clone(), until_ms: *until_ms }.into());
        }
        for schedule in self.schedules.values() {
            snapshot.push(Record::ScheduleSet { schedule: Box::new(schedule.clone()) }.into());
        }
        for (queue, tat_us) in &self.rate_tat {
            snapshot.push(Record::RateAdvanced { queue: queue.clone(), tat_us: *tat_us }.into());
        }
        for (queue, keys) in &self.key_rate_tat {
            for (key, tat_us) in keys {
                let record = Record::KeyRateAdvanced { queue: queue.clone(), key: key.clone(), tat_us: *tat_us };
                snapshot.push(record.into());
            }
        }
        snapshot.push(Record::SequenceRestored { next_seq: self.next_seq }.into());
        for (job_id, (at_ms, reason)) in &self.cancelled {
            // After every job: a restore applies it to the leased job it names.
            snapshot.push(Record::LeaseCancelled { job_id: *job_id, at_ms: *at_ms, reason: reason.clone() }.into());
        }
        for entry in self.audit.entries() {
            snapshot.push(Record::Audited { entry: entry.clone() }.into());
        }
        snapshot
    }

    /// Removes a dead letter from its record table and both indexes (its queue stays listed).
    fn take_dead_letter(&mut self, job_id: &JobId) -> DeadLetter {
        let dead = self.dead_letters.remove(job_id).expect("record names a dead letter");
        self.live_bytes -= dead.job.approx_bytes();
        self.dead_index.remove(&(dead.failed_at_ms, dead.job.queue.clone(), *job_id));
        if let Some(queue) = self.queues.get_mut(&dead.job.queue) {
            queue.dead.remove(&(dead.failed_at_ms, *job_id));
        }
        dead
    }

    /// Removes a live job from the table and every index.
    fn take_live(&mut self, job_id: &JobId) -> LiveJob {
        if !self.cancelled.is_empty() {
            self.cancelled.remove(job_id);
        }
        let slot = self.jobs.slot(job_id).expect("record names a live job");
        self.unindex(slot);
        let (_, live) = self.jobs.remove(job_id).expect("record names a live job");
        self.live_bytes -= live.job.approx_bytes();
        live
    }

    /// Adds a new live job to the table and the index of its state.
    fn put_live(&mut self, job: Arc<Job>, state: JobState) {
        self.live_bytes += job.approx_bytes();
        let slot = self.jobs.insert(LiveJob { job, state });
        self.index(slot);
    }

    /// Moves a live job to a new state; `next` gets its current attempt.
    fn move_job(&mut self, job_id: &JobId, next: impl FnOnce(u32) -> JobState) {
        if !self.cancelled.is_empty() {
            self.cancelled.remove(job_id);
        }
        let slot = self.jobs.slot(job_id).expect("record names a live job");
        self.unindex(slot);
        let live = self.jobs.at_mut(slot);
        live.state = next(live.state.attempt());
        self.index(slot);
    }

    fn index(&mut self, slot: Slot) {
        let live = self.jobs.at(slot);
        if !self.queues.contains_key(&*live.job.queue) {
            self.queues.insert(live.job.queue.clone(), QueueState::default());
        }
        let queue = self.queues.get_mut(&*live.job.queue).expect("inserted above");
        match live.state {
            JobState::Ready { .. } => {
                queue.ready.insert(ready_key(&live.job), slot);
                self.ready_generation += 1;
            }
            JobState::Scheduled { due_ms, .. } => {
                queue.scheduled += 1;
                self.scheduled.insert((due_ms, live.job.seq), slot);
            }
            JobState::Inflight { lease_deadline_ms, .. } => {
                queue.inflight += 1;
                self.leases.insert((lease_deadline_ms, live.job.seq), slot);
            }
        }
        if !self.keyed.is_empty() {
            self.index_keyed(slot, true);
        }
    }

    fn unindex(&mut self, slot: Slot) {
        if !self.keyed.is_empty() {
            self.index_keyed(slot, false);
        }
        let live = self.jobs.at(slot);
        let queue = self.queues.get_mut(&live.job.queue).expect("live job has a queue");
        match live.state {
            JobState::Ready { .. } => {
                queue.ready.remove(&ready_key(&live.job));
            }
            JobState::Scheduled { due_ms, .. } => {
                queue.scheduled -= 1;
                self.scheduled.remove(&(due_ms, live.job.seq));
            }
            JobState::Inflight { lease_deadline_ms, .. } => {
                queue.inflight -= 1;
                self.leases.remove(&(lease_deadline_ms, live.job.seq));
                if !queue.ready.is_empty() {
                    // A slot came free in a queue with jobs waiting: if its in-flight limit held
                    // them back, a parked reserve can take one now.
                    self.ready_generation += 1;
                }
            }
        }
    }

    /// The first ready job of a queue in reservation order.
    pub(crate) fn first_ready(&self, queue: &str) -> Option<JobId> {
        let slot = *self.queues.get(queue)?.ready.values().next()?;
        Some(self.jobs.at(slot).job.id)
    }

    /// Up to `limit` scheduled jobs due at `now_ms`, earliest first.
    pub(crate) fn due_scheduled(&self, now_ms: TimeMs, limit: usize) -> Vec<JobId> {
        let due = self.scheduled.iter().take_while(|((due_ms, _), _)| *due_ms <= now_ms).take(limit);
        due.map(|(_, slot)| self.jobs.at(*slot).job.id).collect()
    }

    /// Up to `limit` in-flight jobs whose lease ended at `now_ms`, earliest first.
    pub(crate) fn expired_leases(&self, now_ms: TimeMs, limit: usize) -> Vec<JobId> {
        let expired = self.leases.iter().take_while(|((deadline_ms, _), _)| *deadline_ms <= now_ms).take(limit);
        expired.map(|(_, slot)| self.jobs.at(*slot).job.id).collect()
    }

    fn put_dead_letter(&mut self, dead: DeadLetter) {
        self.live_bytes += dead.job.approx_bytes();
        let queue = dead.job.queue.clone();
        let job_id = dead.job.id;
        self.queues.entry(queue.clone()).or_default().dead.insert((dead.failed_at_ms, job_id));
        self.dead_index.insert((dead.failed_at_ms, queue, job_id));
        self.dead_letters.insert(job_id, dead);
    }

    /// A queue exists while it has entries.
    fn prune_queue(&mut self, queue: &str) {
        if self.queues.get(queue).is_some_and(QueueState::is_empty) {
            self.queues.remove(queue);
        }
    }

    /// Finds the job a lease operation names, fenced by attempt (docs/protocol.md#leases-and-attempts).
    pub(crate) fn leased(&self, job_id: &JobId, attempt: u32) -> Result<&LiveJob, crate::LeaseError> {
        match self.jobs.get(job_id) {
            Some(live) => match live.state {
                JobState::Inflight { attempt: current, .. } if current == attempt => {
                    if !self.cancelled.is_empty() && self.cancelled.contains_key(job_id) {
                        Err(crate::LeaseError::Cancelled)
                    } else {
                        Ok(live)
                    }
                }
                JobState::Inflight { .. } => Err(crate::LeaseError::AttemptMismatch),
                _ => Err(crate::LeaseError::NotFound),
            },
            None => Err(crate::LeaseError::NotFound),
        }
    }

    /// Applies a record and keeps it for the log.
    pub(crate) fn record(&mut self, record: Record, out: &mut Vec<Record>) {
        self.apply(&record);
        out.push(record);
    }
}

impl State {
    /// Checks every structural invariant: each job is in exactly one state and in exactly the
    /// index of that state, per-queue counts match the indexes, dead letters are indexed twice,
    /// and dedup deadlines mirror the dedup map. Returns the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        let buckets: usize = self.key_rate_tat.values().map(HashMap::len).sum();
        if buckets != self.key_rate_index.len()
            || self
                .key_rate_index
                .iter()
                .any(|(tat_us, queue, key)| self.key_rate_tat.get(queue).and_then(|keys| keys.get(key)) != Some(tat_us))
        {
            return Err("the per-key bucket index does not match the buckets".into());
        }
        for (queue, keyed) in &self.keyed {
            let mut rebuilt = self.clone();
            rebuilt.rebuild_keyed(queue);
            if rebuilt.keyed.get(queue) != Some(keyed) {
                return Err(format!("the per-key index of {queue} does not match its jobs"));
            }
        }
        for (name, limits) in &self.policy.declared {
            if limits.key_limit.is_some() != self.keyed.contains_key(name.as_str()) {
                return Err(format!("queue {name} has a per-key index without a key limit, or the reverse"));
            }
        }
        if self.schedule_index.len() != self.schedules.len()
            || self
                .schedules
                .iter()
                .any(|(id, schedule)| !self.schedule_index.contains(&(schedule.next_ms, id.clone())))
        {
            return Err("the schedule index does not match the schedules".into());
        }
        for job_id in self.cancelled.keys() {
            if !matches!(self.jobs.get(job_id).map(|live| live.state), Some(JobState::Inflight { .. })) {
                return Err(format!("cancelled job {job_id} is not leased"));
            }
        }
        let mut ready = 0;
        let mut scheduled = 0;
        let mut inflight = 0;
        for live in self.jobs.values() {
            let job_id = &live.job.id;
            let slot = self.jobs.slot(job_id).ok_or(format!("job {job_id} cannot be found by its id"))?;
            let queue = self.queues.get(&live.job.queue).ok_or(format!("job {job_id} has no queue entry"))?;
            let in_ready = queue.ready.get(&ready_key(&live.job)) == Some(&slot);
            let in_scheduled = matches!(live.state, JobState::Scheduled { due_ms, .. }
                if self.scheduled.get(&(due_ms, live.job.seq)) == Some(&slot));
            let in_leases = matches!(live.state, JobState::Inflight { lease_deadline_ms, .. }
                if self.leases.get(&(lease_deadline_ms, live.job.seq)) == Some(&slot));
            let indexed = match live.state {
                JobState::Ready { .. } => {
                    ready += 1;
                    in_ready && !in_scheduled && !in_leases
                }
                JobState::Scheduled { .. } => {
                    scheduled += 1;
                    in_scheduled && !in_ready
                }
                JobState::Inflight { .. } => {
                    inflight += 1;
                    in_leases && !in_ready
                }
            };
            if !indexed {
                return Err(format!("job {job_id} in state {:?} is not indexed exactly there", live.state));
            }
            if live.state.attempt() == 0 {
                return Err(format!("job {job_id} has attempt 0"));
            }
            if self.dead_letters.contains_key(job_id) {
                return Err(format!("job {job_id} is both live and dead"));
            }
        }
        if self.jobs.len() != ready + scheduled + inflight {
            return Err("the id table and the slots disagree".into());
        }
        let ready_indexed: usize = self.queues.values().map(|queue| queue.ready.len()).sum();
        let scheduled_counted: usize = self.queues.values().map(|queue| queue.scheduled).sum();
        let inflight_counted: usize = self.queues.values().map(|queue| queue.inflight).sum();
        if ready_indexed != ready || scheduled_counted != scheduled || self.scheduled.len() != scheduled {
            return Err(format!(
                "ready/scheduled counts disagree: {ready_indexed}/{ready}, {scheduled_counted}/{}/{scheduled}",
                self.scheduled.len()
            ));
        }
        if inflight_counted != inflight || self.leases.len() != inflight {
            return Err(format!("in-flight counts disagree: {inflight_counted}/{}/{inflight}", self.leases.len()));
        }
        let dead_per_queue: usize = self.queues.values().map(|queue| queue.dead.len()).sum();
        if dead_per_queue != self.dead_letters.len() || self.dead_index.len() != self.dead_letters.len() {
            return Err("dead-letter indexes disagree with the records".into());
        }
        for (failed_at_ms, queue, job_id) in &self.dead_index {
            let dead = self.dead_letters.get(job_id).ok_or("dead index names a missing record")?;
            if dead.failed_at_ms != *failed_at_ms || dead.job.queue != *queue {
                return Err(format!("dead letter {job_id} is indexed under the wrong key"));
            }
        }
        if self.queues.values().any(QueueState::is_empty) {
            return Err("an empty queue is still listed".into());
        }
        let dedup_entries: usize = self.dedup.values().map(HashMap::len).sum();
        if dedup_entries != self.dedup_deadlines.len() {
            return Err("dedup deadlines disagree with the dedup map".into());
        }
        for (deadline_ms, queue, key) in &self.dedup_deadlines {
            let entry = self.dedup.get(queue).and_then(|keys| keys.get(key));
            if entry.map(|entry| entry.deadline_ms) != Some(*deadline_ms) {
                return Err(format!("dedup deadline of {queue}/{key} does not match its entry"));
            }
        }
        Ok(())
    }

    /// A comparable summary of the whole state, for tests that check replay rebuilds it exactly.
    /// Every payload must be in memory; see [`State::fingerprint_with`] for stored ones.
    pub fn fingerprint(&self) -> String {
        self.fingerprint_with(&mut |stored| panic!("payload {stored:?} is stored; use fingerprint_with"))
    }

    /// Like [`State::fingerprint`], reading stored payloads with `load`, so a state whose
    /// payloads are in the log compares equal to one that holds the same bytes in memory.
    pub fn fingerprint_with(&self, load: &mut dyn FnMut(&StoredPayload) -> Vec<u8>) -> String {
        let mut loaded = |job: &Arc<Job>| -> Job {
            let mut job = (**job).clone();
            if let Some(payload) = &mut job.payload
                && let PayloadData::Stored(stored) = &payload.data
            {
                payload.data = PayloadData::Inline(load(stored).into_boxed_slice());
            }
            job
        };
        let mut jobs: Vec<String> =
            self.jobs.values().map(|live| format!("{:?} {:?}", loaded(&live.job), live.state)).collect();
        jobs.sort();
        let mut dead: Vec<String> = self
            .dead_letters
            .values()
            .map(|dead| format!("{:?}", DeadLetter { job: Arc::new(loaded(&dead.job)), ..dead.clone() }))
            .collect();
        dead.sort();
        let mut dedup: Vec<String> = self
            .dedup
            .iter()
            .flat_map(|(queue, keys)| keys.iter().map(move |(key, entry)| format!("{queue}/{key} {entry:?}")))
            .collect();
        dedup.sort();
        let mut closed: Vec<String> =
            self.closed.iter().map(|(queue, until_ms)| format!("{queue} {until_ms}")).collect();
        closed.extend(self.paused.iter().map(|(queue, until_ms)| format!("paused {queue:?} {until_ms:?}")));
        closed.extend(self.cancelled.iter().map(|(job_id, cancel)| format!("cancelled {job_id} {cancel:?}")));
        closed.extend(self.schedules.values().map(|schedule| format!("schedule {schedule:?}")));
        closed.extend(self.rate_tat.iter().map(|(queue, tat_us)| format!("rate {queue:?} {tat_us}")));
        for (queue, keys) in &self.key_rate_tat {
            closed.extend(keys.iter().map(|(key, tat_us)| format!("key rate {queue:?} {key:?} {tat_us}")));
        }
        closed.sort();
        let audit: Vec<String> = self.audit.entries().map(|entry| format!("{entry:?}")).collect();
        format!("{jobs:?}\n{dead:?}\n{dedup:?}\n{closed:?}\n{audit:?}\nnext_seq={}", self.next_seq)
    }

    /// A hash of what [`State::fingerprint`] compares, taken one item at a time without
    /// building it: memory stays at one item's text however large the state. Each item's hash is
    /// added (wrapping), so their order does not matter; equal states have equal digests, and a
    /// state that differs in any item almost surely has another. Payloads count as they are held
    /// (a stored one by its place in the log). What cluster nodes compare
    /// (`sepp cluster status --fingerprint`).
    pub fn digest(&self) -> u64 {
        self.digest_jobs(&mut |job| write_job(job, None))
    }

    /// Like [`State::digest`], counting each stored payload by its bytes, read with `load` (one
    /// at a time), so states that hold the same payloads in different places have equal digests.
    pub fn digest_with(&self, load: &mut dyn FnMut(&StoredPayload) -> Vec<u8>) -> u64 {
        self.digest_jobs(&mut |job| write_job(job, Some(&mut *load)))
    }

    fn digest_jobs(&self, job_text: &mut dyn FnMut(&Arc<Job>) -> String) -> u64 {
        use std::fmt::Write as _;
        use std::hash::{Hash, Hasher};
        let mut total = 0u64;
        let mut line = String::new();
        let mut add = |kind: u8, line: &mut String| {
            let mut hasher = std::hash::DefaultHasher::new();
            kind.hash(&mut hasher);
            line.hash(&mut hasher);
            total = total.wrapping_add(hasher.finish());
            line.clear();
        };
        for live in self.jobs.values() {
            let _ = write!(line, "{} {:?}", job_text(&live.job), live.state);
            add(0, &mut line);
        }
        for dead in self.dead_letters.values() {
            let DeadLetter { job, cause, failed_at_ms, final_attempt, last_reason } = dead;
            let _ = write!(line, "{} {cause:?} {failed_at_ms} {final_attempt} {last_reason:?}", job_text(job));
            add(1, &mut line);
        }
        for (queue, keys) in &self.dedup {
            for (key, entry) in keys {
                let _ = write!(line, "{queue}/{key} {entry:?}");
                add(2, &mut line);
            }
        }
        for (queue, until_ms) in &self.closed {
            let _ = write!(line, "{queue} {until_ms}");
            add(3, &mut line);
        }
        for (queue, until_ms) in &self.paused {
            let _ = write!(line, "paused {queue:?} {until_ms:?}");
            add(3, &mut line);
        }
        for (job_id, cancel) in &self.cancelled {
            let _ = write!(line, "cancelled {job_id} {cancel:?}");
            add(3, &mut line);
        }
        for schedule in self.schedules.values() {
            let _ = write!(line, "schedule {schedule:?}");
            add(3, &mut line);
        }
        for (queue, tat_us) in &self.rate_tat {
            let _ = write!(line, "rate {queue:?} {tat_us}");
            add(3, &mut line);
        }
        for (queue, keys) in &self.key_rate_tat {
            for (key, tat_us) in keys {
                let _ = write!(line, "key rate {queue:?} {key:?} {tat_us}");
                add(3, &mut line);
            }
        }
        // The audit log is ordered: its position counts.
        for (position, entry) in self.audit.entries().enumerate() {
            let _ = write!(line, "{position} {entry:?}");
            add(4, &mut line);
        }
        let _ = write!(line, "next_seq={}", self.next_seq);
        add(5, &mut line);
        total
    }
}

/// Reads the bytes of a stored payload.
type LoadPayload<'a> = dyn FnMut(&StoredPayload) -> Vec<u8> + 'a;

/// The text a digest counts for `job`: its fields, with a stored payload as its place, or as
/// its bytes when `load` reads them.
fn write_job(job: &Arc<Job>, load: Option<&mut LoadPayload<'_>>) -> String {
    match (job.payload.as_ref().map(|payload| &payload.data), load) {
        (Some(PayloadData::Stored(stored)), Some(load)) => {
            format!("{:?}", job.with_payload_data(PayloadData::Inline(load(stored).into_boxed_slice())))
        }
        _ => format!("{job:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_states_have_equal_digests_and_a_change_shows() {
        let build = |acked: bool| {
            let mut state = State::new(Arc::new(crate::Policy::default()), StorageRules::default());
            let mut records = Vec::new();
            let jobs = (0..3u128)
                .map(|n| {
                    let payload = crate::Payload { data: vec![n as u8; 16], encoding: "raw".into() };
                    let new_job = crate::NewJob {
                        queue: "q".into(),
                        job_type: "t".into(),
                        payload: Some(payload),
                        ..crate::NewJob::default()
                    };
                    (JobId::from_u128(n + 1), new_job)
                })
                .collect();
            state.enqueue(1_000, jobs, &mut records);
            let plan =
                crate::validate::ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 1_000, max_jobs: 1 };
            let delivery = state.reserve(1_000, &plan, &mut records).remove(0);
            if acked {
                state.ack(delivery.job.id, delivery.attempt, &mut records).unwrap();
            }
            state
        };
        let (one, same, acked) = (build(false), build(false), build(true));
        assert_eq!(one.fingerprint(), same.fingerprint());
        assert_eq!(one.digest(), same.digest());
        assert_ne!(one.digest(), acked.digest());
    }

    #[test]
    fn a_name_is_interned_once_whether_it_is_recent_or_not() {
        let mut names = Names::default();
        let first = names.intern("emails");
        assert!(Arc::ptr_eq(&first, &names.intern("emails")), "a recent name");
        // More names than the recent ones hold push "emails" out of them.
        let others: Vec<Arc<str>> = (0..10).map(|n| names.intern(&format!("queue-{n}"))).collect();
        assert!(Arc::ptr_eq(&first, &names.intern("emails")), "a name no longer recent");
        for (n, other) in others.iter().enumerate() {
            assert_eq!(&**other, format!("queue-{n}"));
            assert!(Arc::ptr_eq(other, &names.intern(&format!("queue-{n}"))));
        }
        assert_eq!(names.all.len(), 11);
    }

    /// An accepted job is built from interned names and kept as it is; a job that arrives with
    /// strings of its own (replay, a checkpoint) is copied onto the interned ones.
    #[test]
    fn live_jobs_share_the_interned_names() {
        let mut state = State::new(Arc::new(crate::Policy::default()), StorageRules::default());
        let new_job = || crate::NewJob {
            queue: "emails".into(),
            job_type: "send".into(),
            payload: Some(crate::Payload { data: vec![1; 64], encoding: "json".into() }),
            ..crate::NewJob::default()
        };
        let mut records = Vec::new();
        let accepted = state.enqueue(1_000, vec![(JobId::new_v4(), new_job())], &mut records)[0].clone().unwrap();
        let Some(Record::JobAccepted { job: recorded, .. }) = records.first() else { panic!("{records:?}") };
        let live = state.jobs.get(&accepted.job_id).expect("live").job.clone();
        assert!(Arc::ptr_eq(&live, recorded), "the accepted job itself is indexed, not a copy");

        let mut own = (**recorded).clone();
        own.id = JobId::new_v4();
        own.seq += 1;
        own.queue = Arc::from("emails");
        own.job_type = Arc::from("send");
        own.payload.as_mut().expect("a payload").encoding = Arc::from("json");
        let own = Arc::new(own);
        state.apply(&Record::JobRestored { job: own.clone(), state: JobState::Ready { attempt: 1 } });
        let restored = &state.jobs.get(&own.id).expect("restored").job;
        assert!(!Arc::ptr_eq(restored, &own), "copied onto the interned names");
        assert!(Arc::ptr_eq(&restored.queue, &live.queue));
        assert!(Arc::ptr_eq(&restored.job_type, &live.job_type));
        let encoding = |job: &Job| job.payload.as_ref().expect("a payload").encoding.clone();
        assert!(Arc::ptr_eq(&encoding(restored), &encoding(&live)));
        assert_eq!(state.names.all.len(), 3);

        // Applied as its only holder (a record just decoded), such a job is changed in place.
        let mut decoded = (**recorded).clone();
        decoded.id = JobId::new_v4();
        decoded.seq += 2;
        decoded.queue = Arc::from("emails");
        decoded.job_type = Arc::from("send");
        let decoded = Arc::new(decoded);
        let (id, allocation) = (decoded.id, Arc::as_ptr(&decoded));
        state.apply_owned(Record::JobAccepted { job: decoded, due_ms: None });
        let held = &state.jobs.get(&id).expect("accepted").job;
        assert_eq!(Arc::as_ptr(held), allocation, "not copied");
        assert!(Arc::ptr_eq(&held.queue, &live.queue));
        assert!(Arc::ptr_eq(&held.job_type, &live.job_type));

        // A name not known yet is kept as the job's own allocation.
        let mut other = (**recorded).clone();
        other.id = JobId::new_v4();
        other.seq += 3;
        other.queue = Arc::from("reports");
        let other = Arc::new(other);
        state.apply(&Record::JobAccepted { job: other.clone(), due_ms: None });
        assert!(Arc::ptr_eq(&state.jobs.get(&other.id).expect("accepted").job, &other), "shared, not copied");
        assert_eq!(state.names.all.len(), 4);
    }
}
