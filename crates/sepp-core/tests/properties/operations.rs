//! Everything a producer, a worker and an operator can do, at random, with the rules that bound
//! them checked after every step: enqueues (some keyed by tenant, some scheduled), reserves,
//! acks, nacks, extends, cancels, pauses and resumes (of one queue and of every queue, with and
//! without a deadline), recurring schedules, the admin actions (dead-letter, requeue, delete,
//! close, reopen, purge), sweeps, time jumps, and policy changes that switch in-flight, rate and
//! per-key limits on and off.
//!
//! Where `main.rs` compares every outcome with a model of the protocol, this run checks the
//! rules themselves, from what it saw:
//!
//! - a reserve takes nothing from a paused queue, and no more from a queue (or a tenant of a
//!   keyed queue) than its in-flight limit leaves room for;
//! - no span of time sees more leases of a rate-limited queue than its burst plus its rate;
//! - a cancelled job is never delivered again (unless an operator requeues it), and every settle
//!   of its cancelled lease says `Cancelled`;
//! - a closing queue refuses enqueues; a purge removes nothing while the queue has leases;
//! - a schedule fires each slot at most once, as the job named after that slot, and never after
//!   it was deleted;
//! - `check_invariants` holds after every step, and at the end both a replay of the records and
//!   a state rebuilt from a snapshot have the same fingerprint as the live one.
//!
//! `SEPP_CORE_SEED` and `SEPP_CORE_SEEDS` choose the seeds as for `main.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use crate::rng::Rng;
use sepp_core::schedule::{Cadence, CatchUp, FiringOutcome, JobTemplate, Overlap, ScheduleSpec, slot_job_id};
use sepp_core::validate::{NackStrategy, ReserveRequest, plan_reserve};
use sepp_core::{
    ALL_QUEUES, BulkAction, CancelOutcome, JobFilter, JobId, JobState, KeyLimit, KeyLimits, LeaseError, NewJob,
    PeekState, Policy, Primitive, RateLimit, Record, Rejection, State, StorageRules, TimeMs,
};

const QUEUES: [&str; 3] = ["q0", "q1", "q2"];
const TENANTS: [&str; 3] = ["a", "b", "c"];
const START_MS: TimeMs = 1_700_000_000_000;
const STEPS: usize = 400;

/// A policy with limits switched on at random: an in-flight limit on q0, a rate limit on q1, a
/// per-tenant key limit on q2 (each sometimes absent).
fn random_policy(rng: &mut Rng) -> Policy {
    let mut policy = Policy::default();
    policy.server.max_reserve_batch = rng.between(1, 8) as u32;
    let mut limits = policy.defaults.clone();
    limits.max_lease_duration_ms = 10_000;
    limits.default_max_attempts = 3;
    limits.max_schedule_horizon_ms = 1_000_000;
    let mut q0 = limits.clone();
    q0.max_in_flight = rng.percent(80).then(|| rng.between(0, 4) as u32);
    let mut q1 = limits.clone();
    q1.rate_limit = rng.percent(80).then(|| RateLimit {
        limit: rng.between(1, 4) as u32,
        period_ms: rng.pick(&[50, 200, 1_000]),
        burst: rng.between(1, 3) as u32,
    });
    let mut q2 = limits.clone();
    if rng.percent(80) {
        let default = KeyLimits { max_in_flight: Some(rng.between(1, 3) as u32), rate: None };
        let overrides = [("b".to_string(), KeyLimits { max_in_flight: Some(rng.between(0, 2) as u32), rate: None })];
        q2.key_limit = Some(Arc::new(KeyLimit { field: "tenant".into(), default, overrides: overrides.into() }));
    }
    policy.declared.insert("q0".into(), q0);
    policy.declared.insert("q1".into(), q1);
    policy.declared.insert("q2".into(), q2);
    policy
}

/// What the run saw happen, so a generator that stops reaching a path fails the test instead of
/// passing vacuously.
#[derive(Debug, Default)]
struct Seen {
    delivered: usize,
    held_by_in_flight: usize,
    held_by_rate: usize,
    held_by_key: usize,
    skipped_paused: usize,
    lease_cancelled: usize,
    settle_refused_cancelled: usize,
    cancel_removed: usize,
    refused_closing: usize,
    purge_refused: usize,
    purged: usize,
    fired: usize,
    requeued: usize,
    admin_dead_lettered: usize,
}

impl Seen {
    fn add(&mut self, other: &Seen) {
        self.delivered += other.delivered;
        self.held_by_in_flight += other.held_by_in_flight;
        self.held_by_rate += other.held_by_rate;
        self.held_by_key += other.held_by_key;
        self.skipped_paused += other.skipped_paused;
        self.lease_cancelled += other.lease_cancelled;
        self.settle_refused_cancelled += other.settle_refused_cancelled;
        self.cancel_removed += other.cancel_removed;
        self.refused_closing += other.refused_closing;
        self.purge_refused += other.purge_refused;
        self.purged += other.purged;
        self.fired += other.fired;
        self.requeued += other.requeued;
        self.admin_dead_lettered += other.admin_dead_lettered;
    }

    fn assert_everything_happened(&self) {
        let text = format!("{self:?}");
        assert!(!text.contains(": 0,") && !text.contains(": 0 }"), "never exercised: {text}");
    }
}

struct Operations {
    rng: Rng,
    state: State,
    records: Vec<Record>,
    policies: [Arc<Policy>; 2],
    first_policy: Arc<Policy>,
    rules: StorageRules,
    now_ms: TimeMs,
    /// Each job's queue and tenant, from its enqueue.
    jobs: HashMap<JobId, (String, Option<String>)>,
    /// Leases handed out and not yet settled (by us or by a sweep): attempt.
    leases: BTreeMap<JobId, u32>,
    /// Jobs cancelled and not requeued since: never to be delivered.
    cancelled: BTreeSet<JobId>,
    /// Pauses as we made them: queue (or every queue) and until when.
    pauses: BTreeMap<String, Option<TimeMs>>,
    /// Lease times of each rate-limited queue under the current policy.
    rate_leases: HashMap<String, Vec<TimeMs>>,
    /// Slots fired, and schedules deleted (and not upserted since).
    slots: BTreeSet<(String, TimeMs)>,
    deleted_schedules: BTreeSet<String>,
    trace: Vec<String>,
    seen: Seen,
}

impl Operations {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed ^ 0x0bad_5eed);
        let policies = [Arc::new(random_policy(&mut rng)), Arc::new(random_policy(&mut rng))];
        let rules = StorageRules { dead_letter_retention_ms: rng.pick(&[0, 500, 1_000_000]), sweep_limit: 10_000 };
        Operations {
            rng,
            state: State::new(policies[0].clone(), rules),
            records: Vec::new(),
            first_policy: policies[0].clone(),
            policies,
            rules,
            now_ms: START_MS,
            jobs: HashMap::new(),
            leases: BTreeMap::new(),
            cancelled: BTreeSet::new(),
            pauses: BTreeMap::new(),
            rate_leases: HashMap::new(),
            slots: BTreeSet::new(),
            deleted_schedules: BTreeSet::new(),
            trace: Vec::new(),
            seen: Seen::default(),
        }
    }

    fn note(&mut self, what: String) {
        self.trace.push(format!("t={} {what}", self.now_ms - START_MS));
    }

    fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            match self.rng.below(100) {
                0..=21 => self.enqueue(),
                22..=39 => self.reserve(),
                40..=47 => self.settle(),
                48..=53 => self.cancel(),
                54..=58 => self.pause_or_resume(),
                59..=62 => self.schedule(),
                63..=68 => self.admin(),
                69..=80 => self.sweep(),
                81..=95 => self.advance_time(),
                _ => self.change_policy(),
            }
            if let Err(problem) = self.state.check_invariants() {
                panic!("invariant broken: {problem}");
            }
            let mut pauses: Vec<(String, Option<TimeMs>)> =
                self.state.pauses().into_iter().map(|(queue, until_ms)| (queue.to_string(), until_ms)).collect();
            pauses.sort();
            let expected: Vec<(String, Option<TimeMs>)> =
                self.pauses.iter().map(|(queue, until_ms)| (queue.clone(), *until_ms)).collect();
            assert_eq!(pauses, expected, "pauses");
        }
        self.check_rebuilds();
    }

    fn tenant_of(job: &NewJob) -> Option<String> {
        match job.custom.get("tenant") {
            Some(Some(Primitive::String(tenant))) => Some(tenant.clone()),
            _ => None,
        }
    }

    fn enqueue(&mut self) {
        let mut jobs = Vec::new();
        for _ in 0..self.rng.between(1, 3) {
            let mut new =
                NewJob { queue: self.rng.pick(&QUEUES).to_string(), job_type: "work".into(), ..NewJob::default() };
            if self.rng.percent(70) {
                let tenant = self.rng.pick(&TENANTS).to_string();
                new.custom.insert("tenant".into(), Some(Primitive::String(tenant)));
            }
            if self.rng.percent(15) {
                new.scheduled_at_ms = Some(self.now_ms + self.rng.between(1, 300));
            }
            jobs.push((self.rng.job_id(), new));
        }
        self.note(format!("enqueue {:?}", jobs.iter().map(|(id, job)| (id, &job.queue)).collect::<Vec<_>>()));
        let closing: Vec<bool> = jobs.iter().map(|(_, job)| self.state.is_closing(&job.queue, self.now_ms)).collect();
        let outcomes = self.state.enqueue(self.now_ms, jobs.clone(), &mut self.records);
        for (((job_id, job), outcome), closing) in jobs.into_iter().zip(outcomes).zip(closing) {
            if closing {
                assert!(matches!(outcome, Err(Rejection::QueueClosing { .. })), "a closing queue took {job_id}");
                self.seen.refused_closing += 1;
            } else if outcome.is_ok() {
                let tenant = Self::tenant_of(&job);
                self.jobs.insert(job_id, (job.queue, tenant));
            }
        }
    }

    fn paused(&self, queue: &str) -> bool {
        self.pauses.contains_key(queue) || self.pauses.contains_key(ALL_QUEUES)
    }

    fn in_flight(&self, queue: &str, tenant: Option<&str>) -> usize {
        self.leases
            .keys()
            .filter(|job_id| {
                let (job_queue, job_tenant) = &self.jobs[*job_id];
                job_queue == queue && tenant.is_none_or(|tenant| job_tenant.as_deref() == Some(tenant))
            })
            .count()
    }

    fn reserve(&mut self) {
        let mut queues: Vec<String> = QUEUES.iter().map(|queue| queue.to_string()).collect();
        for i in (1..queues.len()).rev() {
            queues.swap(i, self.rng.below(i as u64 + 1) as usize);
        }
        queues.truncate(self.rng.between(1, 3) as usize);
        let policy = self.state.policy().clone();
        let request = ReserveRequest {
            queues: queues.clone(),
            wait_timeout_ms: None,
            lease_duration_ms: Some(self.rng.pick(&[5, 100, 5_000])),
            worker_id: None,
            max_jobs: Some(self.rng.between(1, 8) as u32),
        };
        let plan = plan_reserve(&policy, request).expect("valid reserve");
        self.note(format!("reserve {:?} max {}", plan.queues, plan.max_jobs));
        let had_ready: Vec<bool> = queues.iter().map(|queue| self.state.depths(queue).ready > 0).collect();
        let in_flight_before: HashMap<(String, Option<String>), usize> = QUEUES
            .iter()
            .flat_map(|queue| {
                TENANTS.iter().map(|tenant| Some(tenant.to_string())).chain([None]).map(move |tenant| (queue, tenant))
            })
            .map(|(queue, tenant)| ((queue.to_string(), tenant.clone()), self.in_flight(queue, tenant.as_deref())))
            .collect();

        let deliveries = self.state.reserve(self.now_ms, &plan, &mut self.records);
        let mut taken: HashMap<(String, Option<String>), usize> = HashMap::new();
        for delivery in &deliveries {
            let job_id = delivery.job.id;
            assert!(!self.cancelled.contains(&job_id), "cancelled job {job_id} delivered");
            assert!(!self.paused(&delivery.job.queue), "job {job_id} delivered from paused {}", delivery.job.queue);
            assert!(!self.leases.contains_key(&job_id), "job {job_id} delivered under two leases");
            self.leases.insert(job_id, delivery.attempt);
            let (queue, tenant) = self.jobs[&job_id].clone();
            *taken.entry((queue.clone(), None)).or_default() += 1;
            if let Some(tenant) = tenant {
                *taken.entry((queue, Some(tenant))).or_default() += 1;
            }
        }
        self.seen.delivered += deliveries.len();
        let full = deliveries.len() >= plan.max_jobs as usize;
        for (queue, had_ready) in queues.iter().zip(had_ready) {
            let limits = policy.queue(queue);
            let count = |tenant: Option<&str>| taken.get(&(queue.clone(), tenant.map(str::to_string))).copied();
            let taken_here = count(None).unwrap_or(0);
            if self.paused(queue) && had_ready && !full {
                self.seen.skipped_paused += 1;
            }
            if let Some(limit) = limits.max_in_flight {
                let before = in_flight_before[&(queue.clone(), None)];
                let room = (limit as usize).saturating_sub(before);
                assert!(taken_here <= room, "{queue}: {taken_here} leased with {before} in flight, limit {limit}");
                if had_ready && !full && room == 0 && !self.paused(queue) {
                    self.seen.held_by_in_flight += 1;
                }
            }
            if let Some(key_limit) = &limits.key_limit {
                for tenant in TENANTS {
                    let limit = key_limit.of(tenant).max_in_flight.expect("every tenant has an in-flight limit");
                    let before = in_flight_before[&(queue.clone(), Some(tenant.to_string()))];
                    let taken_by_tenant = count(Some(tenant)).unwrap_or(0);
                    let room = (limit as usize).saturating_sub(before);
                    assert!(
                        taken_by_tenant <= room,
                        "{queue} tenant {tenant}: {taken_by_tenant} leased with {before} in flight, limit {limit}"
                    );
                    if room == 0 && had_ready && !self.paused(queue) {
                        self.seen.held_by_key += 1;
                    }
                }
            }
            if let Some(rate) = limits.rate_limit {
                if had_ready && !full && taken_here == 0 && !self.paused(queue) {
                    self.seen.held_by_rate += 1;
                }
                let times = self.rate_leases.entry(queue.clone()).or_default();
                times.extend(std::iter::repeat_n(self.now_ms, taken_here));
                let interval_us = rate.interval_us();
                let now_ms = self.now_ms;
                for (i, start) in times.iter().enumerate() {
                    let leases = (times.len() - i) as u64;
                    let allowed = u64::from(rate.burst) + ((now_ms - start) * 1000 / interval_us) as u64;
                    assert!(leases <= allowed, "{queue}: {leases} leases since t={start}, rate {rate:?}");
                }
            }
        }
    }

    fn settle(&mut self) {
        let Some((&job_id, &attempt)) =
            self.leases.iter().nth(self.rng.below(self.leases.len().max(1) as u64) as usize)
        else {
            return;
        };
        let what = self.rng.below(3);
        self.note(format!("settle {job_id} attempt {attempt} by {what}"));
        let outcome = match what {
            0 => self.state.ack(job_id, attempt, &mut self.records),
            1 => {
                let strategy = self.rng.pick(&[NackStrategy::Default, NackStrategy::DeadLetter]);
                self.state.nack(self.now_ms, job_id, attempt, strategy, None, &mut self.records).map(|_| ())
            }
            _ => self.state.extend(self.now_ms, job_id, attempt, 1_000, &mut self.records).map(|_| ()),
        };
        let lease_is_live = matches!(self.state.job_state(&job_id), Some(JobState::Inflight { .. }));
        if self.cancelled.contains(&job_id) {
            assert_eq!(outcome, Err(LeaseError::Cancelled), "settling the cancelled lease of {job_id}");
            self.seen.settle_refused_cancelled += 1;
            self.leases.remove(&job_id);
            return;
        }
        // Only live leases are tracked, so settling one always works.
        assert_eq!(outcome, Ok(()), "settling the live lease of {job_id}");
        // An extend keeps the lease; an ack or a nack ends it.
        assert_eq!(lease_is_live, what == 2, "lease of {job_id} after settling by {what}");
        if what != 2 {
            self.leases.remove(&job_id);
        }
    }

    fn cancel(&mut self) {
        let known: Vec<JobId> = self.jobs.keys().copied().collect();
        if known.is_empty() {
            return;
        }
        let job_id = known[self.rng.below(known.len() as u64) as usize];
        self.note(format!("cancel {job_id}"));
        match self.state.cancel(self.now_ms, job_id, None, &mut self.records) {
            Ok(CancelOutcome::Removed) => {
                self.seen.cancel_removed += 1;
                assert_eq!(self.state.job_state(&job_id), None, "a removed job is no longer live");
                self.cancelled.insert(job_id);
            }
            Ok(CancelOutcome::LeaseCancelled) => {
                self.seen.lease_cancelled += 1;
                assert!(self.state.is_cancelled(&job_id));
                self.cancelled.insert(job_id);
            }
            Ok(CancelOutcome::AlreadyCancelled) => assert!(self.cancelled.contains(&job_id)),
            Err(_) => assert_eq!(self.state.job_state(&job_id), None),
        }
    }

    fn pause_or_resume(&mut self) {
        let queue = if self.rng.percent(20) { ALL_QUEUES.to_string() } else { self.rng.pick(&QUEUES).to_string() };
        if self.rng.percent(55) {
            let until_ms = self.rng.percent(50).then(|| self.now_ms + self.rng.between(1, 500));
            self.note(format!("pause {queue} until {until_ms:?}"));
            self.state.pause_queue(&queue, until_ms, &mut self.records);
            self.pauses.insert(queue, until_ms);
        } else {
            self.note(format!("resume {queue}"));
            let was = self.state.resume_queue(&queue, &mut self.records);
            assert_eq!(was, self.pauses.remove(&queue).is_some(), "resume of {queue}");
        }
    }

    fn schedule(&mut self) {
        let id = format!("s{}", self.rng.below(3));
        if self.rng.percent(70) {
            let spec = ScheduleSpec {
                id: id.clone(),
                cadence: Cadence::Every { interval_ms: self.rng.pick(&[1_000, 2_000, 5_000]) },
                template: JobTemplate {
                    queue: self.rng.pick(&QUEUES).to_string(),
                    job_type: "tick".into(),
                    custom: [("tenant".to_string(), Primitive::String(self.rng.pick(&TENANTS).to_string()))].into(),
                    ..JobTemplate::default()
                },
                overlap: self.rng.pick(&[Overlap::Skip, Overlap::Allow]),
                catch_up: self.rng.pick(&[CatchUp::Latest, CatchUp::Skip]),
            };
            self.note(format!("upsert schedule {id}"));
            self.state.upsert_schedule(self.now_ms, spec, &mut self.records).expect("a valid schedule");
            self.deleted_schedules.remove(&id);
        } else {
            self.note(format!("delete schedule {id}"));
            self.state.delete_schedule(&id, &mut self.records);
            self.deleted_schedules.insert(id);
        }
    }

    fn admin(&mut self) {
        let queue = self.rng.pick(&QUEUES);
        let filter = JobFilter::default();
        let mut records = std::mem::take(&mut self.records);
        match self.rng.below(6) {
            0..=3 => {
                // A bulk action over the whole queue: dead-letter (ready or scheduled jobs),
                // requeue or delete (dead letters).
                let (state, action) = match self.rng.below(4) {
                    0 | 1 => (
                        self.rng.pick(&[PeekState::Ready, PeekState::Scheduled]),
                        BulkAction::DeadLetter { reason: Some("operator".into()) },
                    ),
                    2 => (PeekState::DeadLetter, BulkAction::Requeue),
                    _ => (PeekState::DeadLetter, BulkAction::Delete),
                };
                self.note(format!("admin {action:?} {queue} {state:?}"));
                let step =
                    self.state.bulk_step(self.now_ms, queue, state, &filter, None, &action, 10_000, &mut records);
                let job_ids = step.expect("each action applies to the state it is given").job_ids;
                match action {
                    BulkAction::DeadLetter { .. } => self.seen.admin_dead_lettered += job_ids.len(),
                    BulkAction::Requeue => {
                        for job_id in job_ids {
                            // A requeued job is a fresh job again, cancelled or not before.
                            self.cancelled.remove(&job_id);
                            self.seen.requeued += 1;
                        }
                    }
                    BulkAction::Delete => {}
                }
            }
            4 => {
                if self.state.is_closing(queue, self.now_ms) {
                    self.note(format!("admin reopen {queue}"));
                    self.state.reopen_queue(queue, &mut records);
                } else {
                    self.note(format!("admin close {queue}"));
                    self.state.close_queue(self.now_ms, queue, self.rng.pick(&[10, 1_000]), &mut records);
                }
            }
            _ => {
                self.note(format!("admin purge {queue}"));
                let leased = self.in_flight(queue, None);
                let step = self.state.purge_step(queue, &mut records);
                if leased > 0 {
                    assert_eq!(
                        (step.removed, step.inflight),
                        (0, leased as u64),
                        "a purge with leases removes nothing"
                    );
                    self.seen.purge_refused += 1;
                } else {
                    let depths = self.state.depths(queue);
                    if step.done {
                        assert_eq!((depths.ready, depths.scheduled, depths.dead_letter), (0, 0, 0));
                    }
                    self.seen.purged += usize::from(step.removed > 0);
                }
            }
        }
        self.records = records;
    }

    fn sweep(&mut self) {
        self.note("sweep".into());
        let report = self.state.sweep(self.now_ms, &mut self.records);
        for job_id in report.redelivered.iter().chain(&report.lease_dead_lettered) {
            assert!(!self.cancelled.contains(job_id), "the expired lease of cancelled {job_id} was not finished");
            self.leases.remove(job_id);
        }
        for job_id in &report.cancelled_expired {
            assert!(self.cancelled.contains(job_id), "{job_id} finished as cancelled but was never cancelled");
            self.leases.remove(job_id);
        }
        self.pauses.retain(|_, until_ms| until_ms.is_none_or(|until_ms| until_ms > self.now_ms));
        for firing in report.schedule_firings {
            assert!(!self.deleted_schedules.contains(&firing.schedule_id), "deleted {} fired", firing.schedule_id);
            if let FiringOutcome::Fired(job_id) = firing.outcome {
                assert_eq!(job_id, slot_job_id(&firing.schedule_id, firing.slot_ms), "a slot's job is named after it");
                assert!(
                    self.slots.insert((firing.schedule_id.clone(), firing.slot_ms)),
                    "{} fired slot {} twice",
                    firing.schedule_id,
                    firing.slot_ms
                );
                let job = self.state.live_job(&job_id).expect("a fired job is live").0;
                let tenant = match job.custom.get("tenant") {
                    Some(Primitive::String(tenant)) => Some(tenant.to_string()),
                    _ => None,
                };
                self.jobs.insert(job_id, (job.queue.to_string(), tenant));
                self.seen.fired += 1;
            }
        }
    }

    fn advance_time(&mut self) {
        let jump_ms = match self.rng.below(10) {
            0..=5 => self.rng.between(0, 20),
            6..=8 => self.rng.between(0, 600),
            _ => self.rng.between(0, 12_000),
        };
        self.now_ms += jump_ms;
        self.note(format!("advance {jump_ms} ms"));
    }

    fn change_policy(&mut self) {
        let policy = self.policies[self.rng.below(2) as usize].clone();
        self.note("change policy".into());
        self.state.set_policy(policy);
        // Leases taken under another rate limit do not count against the new one.
        self.rate_leases.clear();
    }

    fn check_rebuilds(&self) {
        let mut replayed = State::new(self.first_policy.clone(), self.rules);
        for record in &self.records {
            replayed.apply(record);
        }
        assert_eq!(replayed.check_invariants(), Ok(()));
        assert_eq!(replayed.fingerprint(), self.state.fingerprint(), "replay");
        let mut restored = State::new(self.first_policy.clone(), self.rules);
        for record in self.state.snapshot().records() {
            restored.apply(&record);
        }
        assert_eq!(restored.check_invariants(), Ok(()));
        assert_eq!(restored.fingerprint(), self.state.fingerprint(), "snapshot");
    }
}

#[test]
fn no_mix_of_operations_breaks_a_limit_a_pause_a_cancel_or_a_schedule() {
    let seeds = crate::seeds();
    let mut seen = Seen::default();
    for &seed in &seeds {
        let mut run = Operations::new(seed);
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run.run(STEPS))) {
            let steps = run.trace.len();
            eprintln!("operations failed for seed {seed} after {steps} noted steps; the last ones:");
            for line in &run.trace[steps.saturating_sub(16)..] {
                eprintln!("  {line}");
            }
            eprintln!("rerun with SEPP_CORE_SEED={seed}");
            resume_unwind(panic);
        }
        seen.add(&run.seen);
    }
    eprintln!("seen over {} seeds: {seen:?}", seeds.len());
    if seeds.len() as u64 >= crate::DEFAULT_SEEDS {
        seen.assert_everything_happened();
    }
}
