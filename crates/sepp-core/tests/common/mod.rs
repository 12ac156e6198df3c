//! Small builders shared by the sepp-core integration tests.
//!
//! [`Harness`] wraps a [`State`] and keeps every record it produced. When a harness is dropped at
//! the end of a passing test it checks the state's invariants and that replaying its records into
//! a fresh state rebuilds the same state, so every scenario test doubles as a replay test.
//!
//! Job ids handed out by a harness *decrease* with each job, so id order is the reverse of
//! submission order: a FIFO that silently fell back to id order would fail.

#![allow(dead_code)]

use std::sync::Arc;

use sepp_core::validate::{NackStrategy, ReserveRequest, plan_reserve};
use sepp_core::{
    DeadLetter, Delivery, Enqueued, Job, JobId, LeaseError, Nacked, NewJob, Payload, Policy, Primitive, QueueLimits,
    Record, Rejection, State, StorageRules, SweepReport, TimeMs,
};

/// A job id built from `n`, shaped like a random v4 UUID. Ids compare in the order of `n`.
pub fn job_id(n: u32) -> JobId {
    let mut bytes = [0u8; 16];
    bytes[0..4].copy_from_slice(&n.to_be_bytes());
    bytes[6] = 0x40;
    bytes[8] = 0x80;
    JobId::from_bytes(bytes)
}

/// The payload of an accepted job as (data, encoding). The one place to adapt if the way a
/// stored job holds its payload changes.
pub fn payload_of(job: &Job) -> Option<(Vec<u8>, String)> {
    job.payload.as_ref().map(|payload| match &payload.data {
        sepp_core::PayloadData::Inline(bytes) => (bytes.to_vec(), payload.encoding.to_string()),
        sepp_core::PayloadData::Stored(stored) => panic!("the core never stores payloads itself: {stored:?}"),
    })
}

/// A minimal valid job for `queue`.
pub fn job(queue: &str) -> NewJob {
    NewJob { queue: queue.to_string(), job_type: "email".to_string(), ..NewJob::default() }
}

/// Chainable setters for [`NewJob`].
pub trait JobBuilder: Sized {
    fn priority(self, priority: u32) -> Self;
    fn max_attempts(self, max_attempts: u32) -> Self;
    fn key(self, key: &str) -> Self;
    fn scheduled_at(self, scheduled_at_ms: TimeMs) -> Self;
    fn payload(self, data: &[u8], encoding: &str) -> Self;
    fn custom(self, key: &str, value: Primitive) -> Self;
    fn job_type(self, job_type: &str) -> Self;
}

impl JobBuilder for NewJob {
    fn priority(mut self, priority: u32) -> Self {
        self.priority = Some(priority);
        self
    }
    fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }
    fn key(mut self, key: &str) -> Self {
        self.idempotency_key = Some(key.to_string());
        self
    }
    fn scheduled_at(mut self, scheduled_at_ms: TimeMs) -> Self {
        self.scheduled_at_ms = Some(scheduled_at_ms);
        self
    }
    fn payload(mut self, data: &[u8], encoding: &str) -> Self {
        self.payload = Some(Payload { data: data.to_vec(), encoding: encoding.to_string() });
        self
    }
    fn custom(mut self, key: &str, value: Primitive) -> Self {
        self.custom.insert(key.to_string(), Some(value));
        self
    }
    fn job_type(mut self, job_type: &str) -> Self {
        self.job_type = job_type.to_string();
        self
    }
}

/// The default policy, changed by `change`.
pub fn policy_with(change: impl FnOnce(&mut Policy)) -> Policy {
    let mut policy = Policy::default();
    change(&mut policy);
    policy
}

/// Declares `queue` with the global limits changed by `change`.
pub fn declare(policy: &mut Policy, queue: &str, change: impl FnOnce(&mut QueueLimits)) {
    let mut limits = policy.defaults.clone();
    change(&mut limits);
    policy.declared.insert(queue.to_string(), limits);
}

/// Storage rules with dead-letter retention on.
pub fn retention(dead_letter_retention_ms: u64) -> StorageRules {
    StorageRules { dead_letter_retention_ms, ..StorageRules::default() }
}

/// A state plus every record it produced, with the lease operations as one-liners.
pub struct Harness {
    pub state: State,
    pub records: Vec<Record>,
    initial_policy: Arc<Policy>,
    next_id: u32,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new(Policy::default(), StorageRules::default())
    }
}

impl Harness {
    pub fn new(policy: Policy, rules: StorageRules) -> Self {
        let policy = Arc::new(policy);
        Harness {
            state: State::new(policy.clone(), rules),
            records: Vec::new(),
            initial_policy: policy,
            next_id: u32::MAX,
        }
    }

    pub fn with_policy(policy: Policy) -> Self {
        Harness::new(policy, StorageRules::default())
    }

    pub fn with_rules(rules: StorageRules) -> Self {
        Harness::new(Policy::default(), rules)
    }

    /// A fresh id, lower than every id handed out before.
    pub fn fresh_id(&mut self) -> JobId {
        self.next_id -= 1;
        job_id(self.next_id)
    }

    pub fn enqueue(&mut self, now_ms: TimeMs, jobs: Vec<NewJob>) -> Vec<Result<Enqueued, Rejection>> {
        let jobs = jobs.into_iter().map(|job| (self.fresh_id(), job)).collect();
        self.state.enqueue(now_ms, jobs, &mut self.records)
    }

    pub fn enqueue_atomic(
        &mut self,
        now_ms: TimeMs,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<Enqueued>, Vec<(u32, Rejection)>> {
        let jobs = jobs.into_iter().map(|job| (self.fresh_id(), job)).collect();
        self.state.enqueue_atomic(now_ms, jobs, &mut self.records)
    }

    /// Enqueues one job and returns its id, asserting it was newly accepted.
    pub fn add(&mut self, now_ms: TimeMs, job: NewJob) -> JobId {
        let result = self.enqueue(now_ms, vec![job]).remove(0);
        let enqueued = result.expect("job accepted");
        assert!(!enqueued.deduplicated, "job unexpectedly deduplicated");
        enqueued.job_id
    }

    /// Enqueues several jobs in one batch, asserting every one was newly accepted.
    pub fn add_all(&mut self, now_ms: TimeMs, jobs: Vec<NewJob>) -> Vec<JobId> {
        self.enqueue(now_ms, jobs)
            .into_iter()
            .map(|result| {
                let enqueued = result.expect("job accepted");
                assert!(!enqueued.deduplicated, "job unexpectedly deduplicated");
                enqueued.job_id
            })
            .collect()
    }

    /// Reserves through `plan_reserve`, as the server does.
    pub fn reserve(&mut self, now_ms: TimeMs, queues: &[&str], max_jobs: u32, lease_ms: i64) -> Vec<Delivery> {
        let request = ReserveRequest {
            queues: queues.iter().map(|queue| queue.to_string()).collect(),
            wait_timeout_ms: None,
            lease_duration_ms: Some(lease_ms),
            worker_id: None,
            max_jobs: Some(max_jobs),
        };
        let plan = plan_reserve(self.state.policy(), request).expect("valid reserve");
        self.state.reserve(now_ms, &plan, &mut self.records)
    }

    /// Reserves from `queue` and asserts exactly one job came back.
    pub fn reserve_one(&mut self, now_ms: TimeMs, queue: &str, lease_ms: i64) -> Delivery {
        let mut deliveries = self.reserve(now_ms, &[queue], 1, lease_ms);
        assert_eq!(deliveries.len(), 1, "expected one delivery from {queue}");
        deliveries.remove(0)
    }

    /// The ids a reserve returned, in order.
    pub fn reserve_ids(&mut self, now_ms: TimeMs, queues: &[&str], max_jobs: u32) -> Vec<JobId> {
        self.reserve(now_ms, queues, max_jobs, 30_000).into_iter().map(|delivery| delivery.job.id).collect()
    }

    pub fn ack(&mut self, job_id: JobId, attempt: u32) -> Result<(), LeaseError> {
        self.state.ack(job_id, attempt, &mut self.records)
    }

    pub fn nack(
        &mut self,
        now_ms: TimeMs,
        job_id: JobId,
        attempt: u32,
        strategy: NackStrategy,
        reason: Option<&str>,
    ) -> Result<Nacked, LeaseError> {
        let reason = reason.map(str::to_string);
        self.state.nack(now_ms, job_id, attempt, strategy, reason, &mut self.records)
    }

    pub fn extend(&mut self, now_ms: TimeMs, job_id: JobId, attempt: u32, lease_ms: u64) -> Result<TimeMs, LeaseError> {
        self.state.extend(now_ms, job_id, attempt, lease_ms, &mut self.records)
    }

    pub fn sweep(&mut self, now_ms: TimeMs) -> SweepReport {
        self.state.sweep(now_ms, &mut self.records)
    }

    pub fn drain(&mut self, queue: Option<&str>, max: u32) -> Vec<DeadLetter> {
        self.state.drain_dead_letters(queue, max, &mut self.records)
    }

    /// The records produced since `from` (an earlier `records.len()`).
    pub fn records_since(&self, from: usize) -> &[Record] {
        &self.records[from..]
    }

    /// A fresh state, with the policy this harness started with, that has applied every record.
    pub fn replayed(&self) -> State {
        let mut replayed = State::new(self.initial_policy.clone(), self.state.rules());
        for record in &self.records {
            replayed.apply(record);
        }
        replayed
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Err(problem) = self.state.check_invariants() {
            panic!("invariant broken at the end of the test: {problem}");
        }
        let replayed = self.replayed();
        assert_eq!(
            replayed.fingerprint(),
            self.state.fingerprint(),
            "replaying the test's records did not rebuild its state"
        );
        let mut restored = State::new(self.initial_policy.clone(), self.state.rules());
        for record in self.state.snapshot().records() {
            restored.apply(&record);
        }
        // Counters included: a state rebuilt from its snapshot numbers new jobs the same way.
        assert_eq!(restored.fingerprint(), self.state.fingerprint(), "the state's snapshot did not rebuild it");
    }
}

/// A small deterministic generator for randomized tests, so a failing seed can be repeated.
pub struct Rng(pub u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
