//! A seeded simulation of the queue core on the durable log, with crashes at random points.
//!
//! Each seed runs random operations on a `sepp_core::State` (enqueues with and without
//! idempotency keys and schedules, reserves, acks, nacks, extends, sweeps, drains, pauses and
//! resumes of queues, and jumps in time), grouped into cycles that are appended and persisted the way the committer does, with
//! checkpoints whenever the log wants one. Now and then the process "crashes": the log is
//! dropped, sometimes after an unacknowledged cycle whose frame is then cut short, sometimes with
//! garbage after the last frame or the temp file of an interrupted checkpoint. Recovery must
//! rebuild exactly the state of the last acknowledged cycle, with every invariant intact.
//!
//! A failure prints its seed; `SEPP_SIM_SEED=<seed>` replays that seed alone, and
//! `SEPP_SIM_SEEDS=<n>` runs more seeds than the default.

mod common;

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use sepp_core::validate::{NackStrategy, ReservePlan, validate_new_job};
use sepp_core::{
    JobId, NewJob, Payload, Policy, Primitive, QueueLimits, Record, RetryBackoff, State, StorageRules, TimeMs,
    TraceContext,
};
use sepp_log::{DurableLog, Log, LogOptions, PersistMode};

use common::disk::{cut_preallocation, frames_end, segments};
use common::{Rng, variant};

const QUEUES: [&str; 3] = ["a", "b", "c"];
const DEFAULT_SEEDS: u64 = 24;
/// The magic at the start of every segment, before its first frame.
const SEGMENT_HEADER_BYTES: u64 = 8;
const CYCLES_PER_SEED: usize = 250;

/// Prints the seed of a failing run while the panic unwinds.
struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("simulation failed with seed {0}; replay it with SEPP_SIM_SEED={0}", self.0);
        }
    }
}

/// How a crash leaves the last segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tail {
    /// As the last acknowledged cycle left it.
    Clean,
    /// An unacknowledged cycle's frame cut at a random byte.
    Torn,
    /// Random bytes after the last acknowledged frame.
    Garbage,
}

struct Sim {
    rng: Rng,
    dir: tempfile::TempDir,
    options: LogOptions,
    policy: Arc<Policy>,
    rules: StorageRules,
    state: State,
    log: Option<DurableLog>,
    now_ms: TimeMs,
    /// Leases handed out, possibly stale by now (a stale one is simply refused).
    leases: Vec<(JobId, u32)>,
    cycle: usize,
    stats: Stats,
}

#[derive(Debug, Default)]
struct Stats {
    records: usize,
    crashes: usize,
    torn: usize,
    /// Torn writes whose segment had filled up, so the crash also undid the rotation after it.
    torn_before_rotation: usize,
    /// Torn writes that went to a freshly prepared segment the log moved to before writing,
    /// because the write would not fit the current one's preallocated space.
    torn_after_early_rotation: usize,
    garbage: usize,
    recovered_from_checkpoint: usize,
    checkpoints: usize,
    /// Records persisted, by variant.
    variants: BTreeMap<&'static str, usize>,
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let mut rng = Rng::new(seed);
        // A simulated crash kills the process, not the machine, so every mode keeps what it
        // wrote; the syncing modes only cost time, and a few seeds are enough for them.
        let persist_mode = match seed % 12 {
            0 => PersistMode::SyncAll,
            6 => PersistMode::SyncData,
            _ => PersistMode::Buffer,
        };
        let options = LogOptions {
            persist_mode,
            segment_bytes: rng.range(4 << 10, 32 << 10),
            checkpoint_slack_bytes: rng.range(1 << 10, 16 << 10),
        };
        let defaults = QueueLimits {
            default_max_attempts: rng.range(1, 3) as u32,
            retry_delay_ms: *rng.pick(&[0, 0, 50, 400]),
            retry_backoff: *rng.pick(&[RetryBackoff::None, RetryBackoff::Exponential]),
            max_lease_duration_ms: 5_000,
            retry_delay_max_ms: 2_000,
            dedup_window_ms: rng.range(500, 20_000),
            ..QueueLimits::default()
        };
        let mut policy = Policy { defaults: defaults.clone(), ..Policy::default() };
        policy.declared.insert("c".into(), QueueLimits { max_queue_depth: Some(12), ..defaults });
        let rules = StorageRules {
            dead_letter_retention_ms: *rng.pick(&[0, 3_000, 60_000]),
            sweep_limit: rng.range(1, 20) as usize,
        };
        let policy = Arc::new(policy);
        let state = State::new(policy.clone(), rules);
        let dir = tempfile::tempdir().expect("tempdir");
        let (log, recovery) =
            DurableLog::open(dir.path(), options, |_| panic!("a fresh log has no records")).expect("open a fresh log");
        assert_eq!(recovery.records, 0);
        Sim {
            rng,
            dir,
            options,
            policy,
            rules,
            state,
            log: Some(log),
            now_ms: 1_700_000_000_000,
            leases: Vec::new(),
            cycle: 0,
            stats: Stats::default(),
        }
    }

    fn log(&mut self) -> &mut DurableLog {
        self.log.as_mut().expect("the log is open")
    }

    fn run(&mut self) {
        for cycle in 0..CYCLES_PER_SEED {
            self.cycle = cycle;
            self.advance_time();
            let records = self.operations(false);
            if !records.is_empty() {
                self.persist(&records);
                self.maybe_checkpoint();
            }
            if cycle % 25 == 0 {
                self.state.check_invariants().unwrap_or_else(|problem| panic!("cycle {cycle}: {problem}"));
            }
            if self.rng.percent(3) {
                self.crash_and_recover();
            }
        }
        self.crash_and_recover();
        assert!(self.stats.records > 0);
    }

    fn advance_time(&mut self) {
        self.now_ms += if self.rng.percent(5) { self.rng.range(1_000, 30_000) } else { self.rng.below(100) } as TimeMs;
    }

    /// One cycle's operations, with the sweep first when something is due (as the committer).
    /// `at_least_one` guarantees a record, for an unacknowledged cycle that must leave a frame.
    fn operations(&mut self, at_least_one: bool) -> Vec<Record> {
        let mut records = Vec::new();
        if self.state.next_deadline_ms().is_some_and(|deadline_ms| deadline_ms <= self.now_ms) {
            self.state.sweep(self.now_ms, &mut records);
        }
        for _ in 0..self.rng.range(0, 6) {
            self.operation(&mut records);
        }
        while at_least_one && records.is_empty() {
            self.enqueue(&mut records);
        }
        records
    }

    fn operation(&mut self, records: &mut Vec<Record>) {
        match self.rng.below(100) {
            0..30 => self.enqueue(records),
            30..35 => self.enqueue_atomic(records),
            35..55 => self.reserve(records),
            55..70 => self.ack(records),
            70..80 => self.nack(records),
            80..87 => self.extend(records),
            87..92 => {
                let queue = self.rng.percent(50).then(|| *self.rng.pick(&QUEUES));
                let max = self.rng.range(1, 5) as u32;
                self.state.drain_dead_letters(queue, max, records);
            }
            92..95 => {
                self.state.sweep(self.now_ms, records);
            }
            95..97 => self.pause_or_resume(records),
            _ => self.now_ms += self.rng.range(100, 5_000) as TimeMs,
        }
    }

    /// Pauses (until resumed, or for a while) or resumes one queue or every queue.
    fn pause_or_resume(&mut self, records: &mut Vec<Record>) {
        let queue = if self.rng.percent(20) { sepp_core::ALL_QUEUES } else { *self.rng.pick(&QUEUES) };
        if self.rng.percent(50) {
            let until_ms = self.rng.percent(50).then(|| self.now_ms + self.rng.range(100, 10_000) as TimeMs);
            self.state.pause_queue(queue, until_ms, records);
        } else {
            self.state.resume_queue(queue, records);
        }
    }

    fn new_job(&mut self) -> (JobId, NewJob) {
        let rng = &mut self.rng;
        let mut custom = BTreeMap::new();
        if rng.percent(30) {
            custom.insert("attempted_by".to_string(), Some(Primitive::String(rng.text())));
            custom.insert("weight".to_string(), Some(Primitive::Double(rng.below(1000) as f64 / 8.0)));
            custom.insert("tenant".to_string(), Some(Primitive::Int(rng.below(50) as i64)));
            custom.insert("urgent".to_string(), Some(Primitive::Bool(rng.percent(50))));
        }
        let payload_bytes = if rng.percent(5) { rng.range(500, 3_000) } else { rng.range(1, 100) } as usize;
        let job = NewJob {
            queue: rng.pick(&QUEUES).to_string(),
            job_type: rng.pick(&["email", "resize", "report"]).to_string(),
            payload: rng
                .percent(80)
                .then(|| Payload { data: rng.bytes(payload_bytes), encoding: "application/octet-stream".into() }),
            idempotency_key: rng.percent(30).then(|| format!("key-{}", rng.below(12))),
            priority: rng.percent(40).then(|| rng.below(10) as u32),
            max_attempts: rng.percent(40).then(|| rng.range(1, 4) as u32),
            trace_context: rng.percent(20).then(|| TraceContext {
                traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
                tracestate: rng.percent(50).then(|| "vendor=value".to_string()),
            }),
            custom,
            scheduled_at_ms: rng.percent(25).then(|| self.now_ms + rng.range(0, 4_000) as TimeMs - 1_000),
        };
        validate_new_job(&self.policy, &job, self.now_ms)
            .unwrap_or_else(|rejection| panic!("the generator made an invalid job {job:?}: {rejection:?}"));
        (self.rng.job_id(), job)
    }

    fn enqueue(&mut self, records: &mut Vec<Record>) {
        let jobs = (0..self.rng.range(1, 4)).map(|_| self.new_job()).collect();
        self.state.enqueue(self.now_ms, jobs, records);
    }

    fn enqueue_atomic(&mut self, records: &mut Vec<Record>) {
        let jobs = (0..self.rng.range(1, 6)).map(|_| self.new_job()).collect();
        let _ = self.state.enqueue_atomic(self.now_ms, jobs, records);
    }

    fn reserve(&mut self, records: &mut Vec<Record>) {
        let queues: Vec<String> =
            QUEUES.iter().filter(|_| self.rng.percent(60)).map(|queue| queue.to_string()).collect();
        if queues.is_empty() {
            return;
        }
        let plan = ReservePlan {
            queues,
            wait_ms: 0,
            lease_ms: self.rng.range(50, 3_000),
            max_jobs: self.rng.range(1, 5) as u32,
        };
        for delivery in self.state.reserve(self.now_ms, &plan, records) {
            self.leases.push((delivery.job.id, delivery.attempt));
        }
    }

    /// A lease handed out earlier (possibly stale), and sometimes a wrong attempt for it.
    fn take_lease(&mut self) -> Option<(JobId, u32)> {
        if self.leases.is_empty() {
            return None;
        }
        let index = self.rng.below(self.leases.len() as u64) as usize;
        let (job_id, attempt) = self.leases.swap_remove(index);
        Some((job_id, if self.rng.percent(5) { attempt + 1 } else { attempt }))
    }

    fn ack(&mut self, records: &mut Vec<Record>) {
        if let Some((job_id, attempt)) = self.take_lease() {
            let _ = self.state.ack(job_id, attempt, records);
        }
    }

    fn nack(&mut self, records: &mut Vec<Record>) {
        let Some((job_id, attempt)) = self.take_lease() else {
            return;
        };
        let strategy = match self.rng.below(3) {
            0 => NackStrategy::Default,
            1 => NackStrategy::Delay { delay_ms: self.rng.below(1_500) },
            _ => NackStrategy::DeadLetter,
        };
        let reason = self.rng.percent(50).then(|| "worker said no".to_string());
        let _ = self.state.nack(self.now_ms, job_id, attempt, strategy, reason, records);
    }

    fn extend(&mut self, records: &mut Vec<Record>) {
        let Some((job_id, attempt)) = self.take_lease() else {
            return;
        };
        let lease_ms = self.rng.range(1, 10_000);
        if self.state.extend(self.now_ms, job_id, attempt, lease_ms, records).is_ok() {
            self.leases.push((job_id, attempt));
        }
    }

    fn persist(&mut self, records: &[Record]) {
        self.stats.records += records.len();
        for record in records {
            *self.stats.variants.entry(variant(record)).or_default() += 1;
        }
        // As the committer: payloads the write placed and payloads a finished checkpoint moved
        // are now read from the log, then the log deletes what the checkpoint replaced.
        let log = self.log.as_mut().expect("the log is open");
        log.append(records).expect("append");
        for (job_id, stored) in log.persist().expect("persist") {
            self.state.place_payload(job_id, stored);
        }
        for (job_id, stored) in log.poll_checkpoint() {
            self.state.place_payload(job_id, stored);
        }
        log.reclaim().expect("reclaim");
    }

    /// What the committer does after each persist.
    fn maybe_checkpoint(&mut self) {
        let live_bytes = self.state.live_bytes();
        if self.log().wants_checkpoint(live_bytes) {
            let snapshot = self.state.snapshot();
            self.log().checkpoint(snapshot).expect("checkpoint");
            self.stats.checkpoints += 1;
        }
    }

    /// Crashes at this point, damages the tail the way a crash may, and recovers.
    fn crash_and_recover(&mut self) {
        self.stats.crashes += 1;
        // Every cycle so far was persisted before this point, so the state now is the state of
        // the last acknowledged cycle: what callers were told.
        let acknowledged = {
            let log = self.log.as_mut().expect("the log is open");
            self.state.fingerprint_with(&mut |stored| log.read_payload(stored).expect("read payload"))
        };
        let tail = *self.rng.pick(&[Tail::Clean, Tail::Torn, Tail::Garbage]);
        let mut torn = None;
        if tail == Tail::Torn {
            // A cycle that is written but never acknowledged: the crash cuts its frame short.
            let acknowledged_segment = segments(self.dir.path()).pop().expect("a segment");
            let acknowledged_len = frames_end(&acknowledged_segment);
            self.advance_time();
            let records = self.operations(true);
            self.persist(&records);
            torn = Some((acknowledged_segment, acknowledged_len));
        }
        drop(self.log.take());

        let mut expected_tail = None;
        if let Some((mut segment, mut acknowledged_len)) = torn {
            // A write that does not fit the current segment's preallocated space goes to the next
            // segment when that one is prepared already: it is the first frame there.
            if let Some(moved_to) = segments(self.dir.path())
                .into_iter()
                .find(|path| *path > segment && frames_end(path) > SEGMENT_HEADER_BYTES)
            {
                self.stats.torn_after_early_rotation += 1;
                (segment, acknowledged_len) = (moved_to, SEGMENT_HEADER_BYTES);
            }
            // The crash came before the rotation that the unacknowledged write may have caused.
            for newer in segments(self.dir.path()).into_iter().filter(|path| *path > segment) {
                fs::remove_file(newer).expect("remove the segment the crash never created");
                self.stats.torn_before_rotation += 1;
            }
            let written_len = frames_end(&segment);
            assert!(written_len > acknowledged_len);
            let cut = self.rng.range(acknowledged_len + 1, written_len - 1);
            OpenOptions::new().write(true).open(&segment).expect("open").set_len(cut).expect("cut");
            expected_tail = Some((segment, acknowledged_len));
            self.stats.torn += 1;
        }
        if tail == Tail::Garbage || (tail == Tail::Torn && self.rng.percent(30)) {
            let segment = segments(self.dir.path()).pop().expect("a segment");
            cut_preallocation(&segment);
            let len = fs::metadata(&segment).expect("metadata").len();
            let garbage_len = self.rng.range(1, 300) as usize;
            let garbage = self.rng.bytes(garbage_len);
            OpenOptions::new().append(true).open(&segment).expect("open").write_all(&garbage).expect("garbage");
            expected_tail.get_or_insert((segment, len));
            self.stats.garbage += 1;
        }
        if self.rng.percent(20) {
            // A checkpoint the crash interrupted before its rename.
            let name = format!("checkpoint-{:020}.tmp", self.rng.range(1, 1_000));
            let junk = self.rng.bytes(200);
            fs::write(self.dir.path().join(name), junk).expect("write temp");
        }
        self.recover(&acknowledged, expected_tail);
    }

    fn recover(&mut self, acknowledged: &str, expected_tail: Option<(PathBuf, u64)>) {
        let mut state = State::new(self.policy.clone(), self.rules);
        let (mut log, recovery) = DurableLog::open(self.dir.path(), self.options, |record| state.apply(record))
            .unwrap_or_else(|error| panic!("cycle {}: reopening failed: {error}", self.cycle));
        state.check_invariants().unwrap_or_else(|problem| panic!("cycle {}: recovered state: {problem}", self.cycle));
        match (&recovery.truncated, &expected_tail) {
            (None, None) => {}
            (Some(tail), Some((segment, offset))) => {
                assert_eq!((&tail.file, tail.offset), (segment, *offset), "cycle {}: truncated tail", self.cycle);
            }
            (found, expected) => panic!("cycle {}: truncated {found:?}, expected {expected:?}", self.cycle),
        }
        let recovered = state.fingerprint_with(&mut |stored| log.read_payload(stored).expect("read payload"));
        // A checkpoint carries the acceptance counter too, so recovery is exact either way.
        assert_eq!(
            recovered, acknowledged,
            "cycle {}: the recovered state differs from the last acknowledged one",
            self.cycle
        );
        if recovery.checkpoint.is_some() {
            self.stats.recovered_from_checkpoint += 1;
        }
        self.state = state;
        self.log = Some(log);
    }
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("SEPP_SIM_SEED") {
        return vec![seed.parse().expect("SEPP_SIM_SEED is a number")];
    }
    let count = std::env::var("SEPP_SIM_SEEDS").map_or(DEFAULT_SEEDS, |count| count.parse().expect("a number"));
    (1..=count).collect()
}

#[test]
fn recovery_after_a_crash_at_any_point_rebuilds_the_last_acknowledged_state() {
    let mut totals = Stats::default();
    for seed in seeds() {
        let _report = SeedReport(seed);
        let mut sim = Sim::new(seed);
        sim.run();
        let stats = sim.stats;
        totals.records += stats.records;
        totals.crashes += stats.crashes;
        totals.torn += stats.torn;
        totals.torn_before_rotation += stats.torn_before_rotation;
        totals.torn_after_early_rotation += stats.torn_after_early_rotation;
        totals.garbage += stats.garbage;
        totals.recovered_from_checkpoint += stats.recovered_from_checkpoint;
        totals.checkpoints += stats.checkpoints;
        for (name, count) in stats.variants {
            *totals.variants.entry(name).or_default() += count;
        }
    }
    eprintln!("simulation totals: {totals:?}");
    // The mix must reach every path it claims to test.
    if std::env::var("SEPP_SIM_SEED").is_err() {
        let torn_at_rotation = totals.torn_before_rotation + totals.torn_after_early_rotation;
        assert!(totals.torn > 20 && totals.garbage > 20 && torn_at_rotation > 0, "{totals:?}");
        assert!(totals.checkpoints > 10 && totals.recovered_from_checkpoint > 10, "{totals:?}");
        // Every record an operation can produce (the restore records come from checkpoints).
        assert_eq!(totals.variants.len(), 12, "{totals:?}");
    }
}
