//! The committer over a real durable log with tiny checkpoint thresholds, so that checkpoints,
//! payload relocation and file reclaiming all happen while jobs are being delivered; and over a
//! log whose persist fails, which poisons storage.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sepp_core::validate::ReservePlan;
use sepp_core::{JobId, NewJob, Payload, Policy, Record, Snapshot, State, StorageRules, StoredPayload};
use sepp_engine::{self as committer, Closed, Command, CommitterHandle, CommitterSettings};
use sepp_log::{DurableLog, LogOptions, PersistMode};
use tokio::sync::oneshot;

/// Ten bands of priorities, rising with the index.
fn priority_of(index: usize) -> u32 {
    (index / 40) as u32
}

fn payload_of(index: usize) -> Vec<u8> {
    (0..2_000).map(|byte| ((byte + index * 7) % 251) as u8).collect()
}

async fn ask<T>(committer: &CommitterHandle, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> T {
    let (reply, answer) = oneshot::channel();
    committer.send(command(reply)).await.expect("the committer runs");
    answer.await.expect("the committer answers")
}

/// A committer over a durable log in `dir` whose segments and checkpoint thresholds are so small
/// that a few hundred jobs go through several checkpoints, and which applies a checkpoint's
/// relocations a few per cycle.
fn spawn_with_tiny_checkpoints(dir: &std::path::Path) -> (CommitterHandle, committer::Closed) {
    let state = State::new(Arc::new(Policy::default()), StorageRules::default());
    let options =
        LogOptions { persist_mode: PersistMode::Buffer, segment_bytes: 16 << 10, checkpoint_slack_bytes: 32 << 10 };
    let (log, _) = DurableLog::open(dir, options, |_| unreachable!("a new directory")).expect("open the log");
    // A few relocations per cycle, so that moving a checkpoint's payloads spans many cycles.
    let settings =
        CommitterSettings { command_queue_capacity: 64, relocations_per_cycle: 7, ..CommitterSettings::default() };
    let opened = move || Ok::<_, std::convert::Infallible>((state, Box::new(log) as Box<dyn sepp_log::Log>));
    let Ok(spawned) = committer::spawn(opened, settings);
    spawned
}

fn files_named(dir: &std::path::Path, suffix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read the data directory")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(suffix))
        .collect()
}

fn checkpoints(dir: &std::path::Path) -> usize {
    files_named(dir, ".ckpt").len()
}

/// Every delivered payload comes back byte for byte while checkpoints move payloads into new
/// files and delete the old ones underneath the deliveries. Later jobs get higher priorities, so
/// deliveries take the newest jobs first while a checkpoint moves payloads oldest first: many a
/// delivery reads a payload whose move is not applied yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_read_their_payloads_while_checkpoints_reclaim_the_files_behind_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (committer, closed) = spawn_with_tiny_checkpoints(dir.path());

    const JOBS: usize = 400;
    let mut ids = Vec::new();
    for index in 0..JOBS {
        let job = NewJob {
            queue: "q".into(),
            job_type: "t".into(),
            payload: Some(Payload { data: payload_of(index), encoding: "bin".into() }),
            priority: Some(priority_of(index)),
            ..NewJob::default()
        };
        let id = JobId::new_v4();
        let results = ask(&committer, |reply| Command::Enqueue { jobs: vec![(id, job)], reply }).await;
        assert!(results[0].is_ok());
        ids.push(id);
    }
    // Highest priority first, in acceptance order within a priority.
    let mut order: Vec<usize> = (0..JOBS).collect();
    order.sort_by_key(|&index| (std::cmp::Reverse(priority_of(index)), index));
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 1 };
    for (delivery, index) in order.into_iter().enumerate() {
        let delivered = ask(&committer, |reply| Command::Reserve { plan: plan.clone(), reply }).await;
        assert_eq!(delivered.len(), 1, "job {index} was not delivered");
        assert_eq!(delivered[0].value.job.id, ids[index]);
        assert_eq!(delivered[0].payload_data.as_deref(), Some(&payload_of(index)[..]), "payload of job {index}");
        let attempt = delivered[0].value.attempt;
        let acked = ask(&committer, |reply| Command::Ack { job_id: ids[index], attempt, reply }).await;
        assert_eq!(acked.map(|settled| settled.value), Ok(()));
        // Three quarters of the way (most payloads are acked, so the log is mostly dead and a
        // checkpoint has begun), wait for it to be written, so that its completion lands between
        // deliveries rather than only at the end.
        if delivery == JOBS * 3 / 4 {
            let deadline = Instant::now() + Duration::from_secs(30);
            while checkpoints(dir.path()) == 0 {
                assert!(Instant::now() < deadline, "no checkpoint was written");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    assert!(checkpoints(dir.path()) >= 1, "no checkpoint happened, so nothing was tested");
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// Jobs without large payloads give a checkpoint nothing to move; the files it replaced must go
/// all the same. A checkpoint starts only once the one before it is reclaimed, and it is
/// written while the files it replaces are deleted, so no more than two are ever on disk; a
/// checkpoint that is never reclaimed leaves its predecessors behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_that_move_no_payloads_still_delete_the_files_they_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (committer, closed) = spawn_with_tiny_checkpoints(dir.path());
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 1 };
    let mut seen = std::collections::HashSet::new();
    let mut most_at_once = 0;
    for _ in 0..1_500 {
        let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
        assert!(accepted[0].is_ok());
        let delivered = ask(&committer, |reply| Command::Reserve { plan: plan.clone(), reply }).await;
        let (job_id, attempt) = (delivered[0].value.job.id, delivered[0].value.attempt);
        assert_eq!(
            ask(&committer, |reply| Command::Ack { job_id, attempt, reply }).await.map(|settled| settled.value),
            Ok(())
        );
        let on_disk = files_named(dir.path(), ".ckpt");
        most_at_once = most_at_once.max(on_disk.len());
        seen.extend(on_disk);
    }
    drop(committer);
    closed.wait().await.expect("the committer stops");
    // A checkpoint that is never reclaimed holds back every later one.
    assert!(seen.len() >= 3, "only {} checkpoints happened", seen.len());
    assert!(most_at_once <= 2, "{most_at_once} checkpoints were on disk at once: replaced ones were not deleted");
}

/// A pause is state like any other: after checkpoints have replaced every file that held its
/// record, reopening the directory finds both queues paused, the empty one too, and the pause
/// of one that ends by itself with its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pauses_survive_checkpoints_that_replace_the_files_holding_their_records() {
    /// Pauses `queue` until `until_ms`, as the server's admin API does, and answers when that is
    /// durable.
    struct Pause {
        queue: String,
        until_ms: Option<i64>,
        reply: oneshot::Sender<()>,
    }

    impl committer::Operation for Pause {
        fn apply(self: Box<Self>, cycle: &mut committer::Cycle<'_>) -> Option<committer::Deferred> {
            cycle.state.pause_queue(&self.queue, self.until_ms, cycle.records);
            Some(committer::Deferred::reply(self.reply, ()))
        }
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let (committer, closed) = spawn_with_tiny_checkpoints(dir.path());
    let until_ms = i64::MAX / 2;
    for (queue, until_ms) in [("empty", None), ("timed", Some(until_ms))] {
        let queue = queue.to_owned();
        ask(&committer, |reply| Command::Operation(Box::new(Pause { queue, until_ms, reply }))).await;
    }
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 1 };
    let mut seen = std::collections::HashSet::new();
    while seen.len() < 3 {
        let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
        assert!(accepted[0].is_ok());
        let delivered = ask(&committer, |reply| Command::Reserve { plan: plan.clone(), reply }).await;
        let (job_id, attempt) = (delivered[0].value.job.id, delivered[0].value.attempt);
        assert_eq!(
            ask(&committer, |reply| Command::Ack { job_id, attempt, reply }).await.map(|settled| settled.value),
            Ok(())
        );
        seen.extend(files_named(dir.path(), ".ckpt"));
    }
    drop(committer);
    closed.wait().await.expect("the committer stops");

    let mut state = State::new(Arc::new(Policy::default()), StorageRules::default());
    let options = LogOptions::new(PersistMode::Buffer);
    let (log, _) = DurableLog::open(dir.path(), options, |record| state.apply(record)).expect("reopen the log");
    drop(log);
    assert_eq!(state.pauses(), [("empty".into(), None), ("timed".into(), Some(until_ms))]);
}

/// A log that keeps nothing. Its syncs fail once `failing` is set, counting the syncs it was
/// asked for after that; its first poll reports `relocations` as a finished checkpoint's; it
/// notes appends, syncs ("persist" for one waited for at once, "start sync" and "finish sync"
/// for one in the background), polls that reported something, and reclaims in `events`; and it
/// sets `closed` when it is dropped.
#[derive(Default)]
struct TestLog {
    failing: Arc<AtomicBool>,
    /// Once set, append panics: a broken invariant on the committer thread.
    panicking: Arc<AtomicBool>,
    /// When armed, the next sync says it started and waits to be let go.
    gate: Arc<Mutex<Option<Gate>>>,
    /// When armed, the next append does the same.
    append_gate: Arc<Mutex<Option<Gate>>>,
    /// Syncs started in the background and not yet finished.
    syncing: usize,
    /// How many may be (0 counts as 1, the trait's default).
    in_flight_limit: usize,
    /// Its failures are a replicated log's: the committer steps down instead of stopping.
    replicated: bool,
    failed_persists: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
    relocations: Vec<(JobId, StoredPayload)>,
    events: Arc<Mutex<Vec<String>>>,
}

impl Drop for TestLog {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

impl TestLog {
    fn note(&self, event: String) {
        self.events.lock().unwrap().push(event);
    }

    fn synced(&mut self) -> std::io::Result<()> {
        pass(&self.gate);
        if !self.failing.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.failed_persists.fetch_add(1, Ordering::SeqCst);
        Err(std::io::Error::other("the disk is on fire"))
    }
}

/// Holds the caller at `gate` when it is armed.
fn pass(gate: &Mutex<Option<Gate>>) {
    // Taken out first: the test may arm the gate again while this one holds.
    let armed = gate.lock().unwrap().take();
    if let Some(gate) = armed {
        let _ = gate.entered.send(());
        let _ = gate.proceed.recv();
    }
}

impl sepp_log::Log for TestLog {
    fn append(&mut self, _records: &[Record]) -> std::io::Result<()> {
        assert!(!self.panicking.load(Ordering::SeqCst), "an invariant broke");
        self.note("append".into());
        pass(&self.append_gate);
        Ok(())
    }
    fn write(&mut self) -> std::io::Result<Vec<(JobId, StoredPayload)>> {
        assert!(self.syncing < self.in_flight_limit.max(1), "a frame was written beyond the syncs allowed in flight");
        Ok(Vec::new())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        assert_eq!(self.syncing, 0, "a sync was in flight");
        self.note("persist".into());
        self.synced()
    }
    fn start_sync(&mut self) {
        self.note("start sync".into());
        self.syncing += 1;
    }
    fn finish_sync(&mut self) -> std::io::Result<()> {
        if self.syncing == 0 {
            return Ok(());
        }
        self.syncing -= 1;
        self.note("finish sync".into());
        self.synced()
    }
    fn max_in_flight(&self) -> usize {
        self.in_flight_limit.max(1)
    }
    fn background_sync_pays(&self) -> bool {
        true
    }
    fn failure_is_final(&self) -> bool {
        !self.replicated
    }
    fn read_payload(&mut self, _stored: &StoredPayload) -> std::io::Result<Vec<u8>> {
        unreachable!("payloads stay in memory")
    }
    fn wants_checkpoint(&self, _live_bytes: u64) -> bool {
        false
    }
    fn checkpoint(&mut self, _snapshot: Snapshot) -> std::io::Result<()> {
        unreachable!("never wanted")
    }
    fn poll_checkpoint(&mut self) -> sepp_log::Relocations {
        let relocations = std::mem::take(&mut self.relocations);
        if !relocations.is_empty() {
            self.note(format!("poll {}", relocations.len()));
        }
        sepp_log::Relocations::listed(relocations)
    }
    fn reclaim(&mut self) -> std::io::Result<()> {
        self.note("reclaim".into());
        Ok(())
    }
}

/// Holds one persist: it sends on `entered`, then waits for `proceed`.
struct Gate {
    entered: std::sync::mpsc::Sender<()>,
    proceed: std::sync::mpsc::Receiver<()>,
}

/// Arms `log`'s gate; returns the signal that the gated persist started, and its release.
fn arm(gate: &Arc<Mutex<Option<Gate>>>) -> (std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<()>) {
    let (entered, started) = std::sync::mpsc::channel();
    let (release, proceed) = std::sync::mpsc::channel();
    *gate.lock().unwrap() = Some(Gate { entered, proceed });
    (started, release)
}

/// A committer over `log` and an empty state, applying relocations `relocations_per_cycle` at a
/// time.
fn spawn_over(log: TestLog, relocations_per_cycle: usize) -> (CommitterHandle, committer::Closed) {
    spawn_with_rules(log, relocations_per_cycle, StorageRules::default())
}

fn spawn_with_rules(
    log: TestLog,
    relocations_per_cycle: usize,
    rules: StorageRules,
) -> (CommitterHandle, committer::Closed) {
    let state = State::new(Arc::new(Policy::default()), rules);
    let settings =
        CommitterSettings { command_queue_capacity: 64, relocations_per_cycle, ..CommitterSettings::default() };
    let opened = move || Ok::<_, std::convert::Infallible>((state, Box::new(log) as Box<dyn sepp_log::Log>));
    let Ok(spawned) = committer::spawn(opened, settings);
    spawned
}

fn small_job() -> (JobId, NewJob) {
    (JobId::new_v4(), NewJob { queue: "q".into(), job_type: "t".into(), ..NewJob::default() })
}

/// A failed persist poisons storage: the failed cycle's caller hears no answer (INTERNAL at the
/// API), a parked reserve is answered empty, the handle reports why, the persist is not
/// retried, and the committer takes no further command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_persist_poisons_storage_and_nothing_after_it_is_acknowledged() {
    let log = TestLog::default();
    let (failing, failed_persists) = (log.failing.clone(), log.failed_persists.clone());
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);

    let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
    assert!(accepted[0].is_ok());
    assert_eq!(committer.poison_reason(), None);
    let plan = ReservePlan { queues: vec!["elsewhere".into()], wait_ms: 60_000, lease_ms: 60_000, max_jobs: 1 };
    let (reply, parked) = oneshot::channel();
    committer.send(Command::Reserve { plan, reply }).await.expect("the committer runs");

    failing.store(true, Ordering::SeqCst);
    let (reply, refused) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.expect("the committer runs");
    assert!(refused.await.is_err(), "the enqueue whose persist failed was answered");
    let reason = tokio::time::timeout(Duration::from_secs(10), committer.poisoned()).await.expect("poisoned");
    assert!(reason.contains("the disk is on fire"), "{reason}");
    assert_eq!(committer.poison_reason(), Some(reason));
    let parked = parked.await.expect("the parked reserve is answered");
    assert!(parked.is_empty());

    let stopped = tokio::time::timeout(Duration::from_secs(10), closed.wait()).await;
    assert!(stopped.is_ok_and(|closed| closed.is_ok()), "the committer does not stop by itself");
    let (reply, _) = oneshot::channel();
    assert!(committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.is_err());
    assert_eq!(failed_persists.load(Ordering::SeqCst), 1, "a failed persist is never retried");
}

/// A panic on the committer thread poisons storage like a failed write, so that the server
/// stops and says why instead of answering INTERNAL forever while its health says SERVING.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_on_the_committer_thread_poisons_storage_with_its_message() {
    let log = TestLog::default();
    let panicking = log.panicking.clone();
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);
    let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
    assert!(accepted[0].is_ok());

    panicking.store(true, Ordering::SeqCst);
    let (reply, refused) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.expect("the committer runs");
    assert!(refused.await.is_err(), "the enqueue of the panicked cycle was answered");
    let reason = tokio::time::timeout(Duration::from_secs(10), committer.poisoned()).await.expect("poisoned");
    assert!(reason.contains("panicked") && reason.contains("an invariant broke"), "{reason}");
    let closed = tokio::time::timeout(Duration::from_secs(10), closed.wait()).await;
    assert!(closed.is_ok_and(|closed| closed.is_ok()), "the server would wait forever for the committer");
    let (reply, _) = oneshot::channel();
    assert!(committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.is_err());
}

/// The server exits as soon as the committer says it closed, without waiting for the state's
/// memory to be freed; so by then the log must be closed (the data directory unlocked, its
/// background threads joined).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committer_says_it_closed_only_after_its_log_is_closed() {
    let log = TestLog::default();
    let log_closed = log.closed.clone();
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);
    let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
    assert!(accepted[0].is_ok());
    assert!(!log_closed.load(Ordering::SeqCst));

    drop(committer);
    let closed = tokio::time::timeout(Duration::from_secs(10), closed.wait()).await;
    assert!(closed.is_ok_and(|closed| closed.is_ok()), "the committer does not close");
    assert!(log_closed.load(Ordering::SeqCst), "the committer said it closed before its log did");
}

/// A finished checkpoint's relocations are applied a slice per cycle, so that no cycle's callers
/// wait for a million of them, and the files it replaced are reclaimed only after the last slice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relocations_are_applied_a_slice_per_cycle_and_reclaimed_after_the_last() {
    let relocations: Vec<_> =
        (0..50).map(|offset| (JobId::new_v4(), StoredPayload { offset, file: 1, len: 100 })).collect();
    let mut log = TestLog::default();
    log.relocations = relocations;
    let events = log.events.clone();
    let (committer, closed) = spawn_over(log, 7);
    for _ in 0..12 {
        let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
        assert!(accepted[0].is_ok());
    }
    drop(committer);
    closed.wait().await.expect("the committer stops");

    let events = events.lock().unwrap().clone();
    let polled = events.iter().position(|event| event == "poll 50").expect("the relocations were taken");
    let reclaimed = polled + events[polled..].iter().position(|event| event == "reclaim").expect("reclaimed");
    let cycles = events[polled..reclaimed].iter().filter(|event| *event == "persist").count();
    // Cycle 1 takes the relocations after its persist; 50 at 7 a cycle end in cycle 8.
    assert_eq!(cycles, 7, "{events:?}");
}

/// A reserve whose caller is gone by the time its cycle is persisted does not strand the jobs
/// it took: the leases are given back, and the next reserve gets the job as attempt 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_leased_to_a_reserve_whose_caller_left_are_ready_again_at_once() {
    let log = TestLog::default();
    let gate = log.gate.clone();
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);
    let job = small_job();
    let id = job.0;
    ask(&committer, |reply| Command::Enqueue { jobs: vec![job], reply }).await;
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 600_000, max_jobs: 1 };

    let (started, release) = arm(&gate);
    let (reply, answer) = oneshot::channel();
    committer.send(Command::Reserve { plan: plan.clone(), reply }).await.expect("the committer runs");
    tokio::task::spawn_blocking(move || started.recv()).await.unwrap().expect("the lease is being persisted");
    drop(answer); // the caller cancels while its lease is on its way to the disk
    release.send(()).unwrap();

    let again = ask(&committer, |reply| Command::Reserve { plan, reply }).await;
    assert_eq!(again.len(), 1, "the job stayed leased to a caller that was gone");
    assert_eq!((again[0].value.job.id, again[0].value.attempt), (id, 1));
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// Dead letters drained for a caller that is gone before the answer are kept again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_drained_for_a_caller_that_left_are_kept_again() {
    let log = TestLog::default();
    let gate = log.gate.clone();
    let rules = StorageRules { dead_letter_retention_ms: 600_000, ..StorageRules::default() };
    let (committer, closed) = spawn_with_rules(log, CommitterSettings::RELOCATIONS_PER_CYCLE, rules);
    let job = small_job();
    let id = job.0;
    ask(&committer, |reply| Command::Enqueue { jobs: vec![job], reply }).await;
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 600_000, max_jobs: 1 };
    ask(&committer, |reply| Command::Reserve { plan, reply }).await;
    let strategy = sepp_core::validate::NackStrategy::DeadLetter;
    let nacked = ask(&committer, |reply| Command::Nack { job_id: id, attempt: 1, strategy, reason: None, reply }).await;
    assert!(nacked.expect("nack").value.dead_lettered);

    let (started, release) = arm(&gate);
    let (reply, answer) = oneshot::channel();
    committer.send(Command::DrainDeadLetters { queue: None, max: 10, reply }).await.expect("the committer runs");
    tokio::task::spawn_blocking(move || started.recv()).await.unwrap().expect("the drain is being persisted");
    drop(answer);
    release.send(()).unwrap();

    let kept = ask(&committer, |reply| Command::DrainDeadLetters { queue: None, max: 10, reply }).await;
    assert_eq!(kept.len(), 1, "a drain whose caller left lost the dead letter");
    assert_eq!(kept[0].value.job.id, id);
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// Starts an enqueue that is held in its cycle's append, and queues a second one behind it, so
/// that the first cycle ends with a command waiting: its frame syncs in the background while the
/// second cycle is applied. Returns both answers once the background sync is held at the gate.
async fn two_enqueues_with_the_first_syncing_behind_the_second(
    committer: &CommitterHandle,
    append_gate: &Arc<Mutex<Option<Gate>>>,
    sync_gate: &Arc<Mutex<Option<Gate>>>,
) -> (Answered, Answered, std::sync::mpsc::Sender<()>) {
    let (in_append, leave_append) = arm(append_gate);
    let (first, first_answer) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply: first }).await.expect("the committer runs");
    tokio::task::spawn_blocking(move || in_append.recv()).await.unwrap().expect("the first cycle appends");
    let (second, second_answer) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply: second }).await.expect("the committer runs");
    let (in_sync, leave_sync) = arm(sync_gate);
    leave_append.send(()).unwrap();
    tokio::task::spawn_blocking(move || in_sync.recv()).await.unwrap().expect("the first frame is synced");
    (first_answer, second_answer, leave_sync)
}

type Answered = oneshot::Receiver<Vec<Result<sepp_core::Enqueued, sepp_core::Rejection>>>;

/// Sends an enqueue of one job; returns where its answer will come.
async fn sent_enqueue(committer: &CommitterHandle) -> Answered {
    let (reply, answer) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.expect("the committer runs");
    answer
}

/// While commands wait, a cycle's frame syncs in the background as the next cycle is applied,
/// and the cycle's callers hear nothing before that sync finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_cycle_is_applied_while_the_last_frame_syncs_and_waits_for_it() {
    let log = TestLog::default();
    let (gate, append_gate, events) = (log.gate.clone(), log.append_gate.clone(), log.events.clone());
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);

    let (mut first, second, leave_sync) =
        two_enqueues_with_the_first_syncing_behind_the_second(&committer, &append_gate, &gate).await;
    assert_eq!(*events.lock().unwrap(), ["append", "start sync", "append", "finish sync"]);
    assert!(first.try_recv().is_err(), "the first enqueue was answered before its frame was durable");
    leave_sync.send(()).unwrap();

    assert!(first.await.expect("the first enqueue is answered")[0].is_ok());
    assert!(second.await.expect("the second enqueue is answered")[0].is_ok());
    assert_eq!(events.lock().unwrap()[4], "persist", "the second frame, with nothing waiting, syncs at once");
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// A background sync that fails poisons storage like any failed persist: neither its cycle's
/// callers nor those of the cycle applied meanwhile are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_background_sync_answers_neither_its_cycle_nor_the_next() {
    let log = TestLog::default();
    let (gate, append_gate, failing) = (log.gate.clone(), log.append_gate.clone(), log.failing.clone());
    let failed_persists = log.failed_persists.clone();
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);

    let (first, second, leave_sync) =
        two_enqueues_with_the_first_syncing_behind_the_second(&committer, &append_gate, &gate).await;
    failing.store(true, Ordering::SeqCst);
    leave_sync.send(()).unwrap();

    assert!(first.await.is_err(), "the enqueue whose sync failed was answered");
    assert!(second.await.is_err(), "an enqueue written after a failed sync was answered");
    let reason = tokio::time::timeout(Duration::from_secs(10), committer.poisoned()).await.expect("poisoned");
    assert!(reason.contains("the disk is on fire"), "{reason}");
    closed.wait().await.expect("the committer stops");
    assert_eq!(failed_persists.load(Ordering::SeqCst), 1, "a failed sync is never retried");
}

/// A committer of cluster mode that starts out following, with an empty state and no log.
fn spawn_follower() -> (CommitterHandle, Closed) {
    let settings = CommitterSettings { command_queue_capacity: 64, follows: true, ..CommitterSettings::default() };
    let opened = || {
        let state = State::new(Arc::new(Policy::default()), StorageRules::default());
        Ok::<_, std::convert::Infallible>((state, Box::new(committer::NotLeading) as Box<dyn sepp_log::Log>))
    };
    let Ok(spawned) = committer::spawn(opened, settings);
    spawned
}

/// Cluster mode: a committer that follows refuses every command (its callers hear nothing);
/// told to lead, it serves from the state it was given; a proposal that fails makes it step
/// down (nothing of that cycle answered, its parked reserves answered empty) without poisoning
/// storage, and it refuses again until it leads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_following_committer_refuses_serves_once_it_leads_and_steps_down_when_a_proposal_fails() {
    let (committer, closed) = spawn_follower();
    let mut leading = committer.leading();
    assert!(!*leading.borrow());
    let (reply, refused) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.expect("the committer runs");
    assert!(refused.await.is_err(), "a following committer answered");

    // It leads from a state that already holds a job.
    let mut state = State::new(Arc::new(Policy::default()), StorageRules::default());
    let (kept, job) = small_job();
    state.enqueue(0, vec![(kept, job)], &mut Vec::new());
    let mut log = TestLog::default();
    log.replicated = true;
    let failing = log.failing.clone();
    committer.send(Command::Lead { state: Box::new(state), log: Box::new(log) }).await.expect("runs");
    leading.wait_for(|leads| *leads).await.expect("it leads");
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 10 };
    let leased = ask(&committer, |reply| Command::Reserve { plan: plan.clone(), reply }).await;
    assert_eq!(leased.iter().map(|delivery| delivery.value.job.id).collect::<Vec<_>>(), [kept]);

    let parked_plan = ReservePlan { queues: vec!["elsewhere".into()], wait_ms: 60_000, ..plan };
    let (reply, parked) = oneshot::channel();
    committer.send(Command::Reserve { plan: parked_plan, reply }).await.expect("runs");
    failing.store(true, Ordering::SeqCst);
    let (reply, unanswered) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.expect("runs");
    assert!(unanswered.await.is_err(), "a cycle whose proposal failed was answered");
    assert!(parked.await.expect("the parked reserve is answered").is_empty());
    leading.wait_for(|leads| !*leads).await.expect("it steps down");
    assert_eq!(committer.poison_reason(), None, "a failed proposal poisoned storage");
    let (reply, refused) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![small_job()], reply }).await.expect("it still runs");
    assert!(refused.await.is_err(), "a committer that stepped down answered");
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// A log that allows two frames in flight (as a replicated one allows several) gets the next
/// cycle's frame while the previous one still syncs, and the answers still go out in cycle
/// order, each after its own sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_frames_allowed_in_flight_the_second_is_written_before_the_first_is_durable() {
    let mut log = TestLog::default();
    log.in_flight_limit = 2;
    let (append_gate, events) = (log.append_gate.clone(), log.events.clone());
    let (committer, closed) = spawn_over(log, CommitterSettings::RELOCATIONS_PER_CYCLE);

    // Each of the first two cycles is held in its append until the next command waits behind
    // it, so both end with a command waiting and sync in the background.
    let (in_first, leave_first) = arm(&append_gate);
    let first = sent_enqueue(&committer).await;
    tokio::task::spawn_blocking(move || in_first.recv()).await.unwrap().expect("the first cycle appends");
    let second = sent_enqueue(&committer).await;
    let (in_second, leave_second) = arm(&append_gate);
    leave_first.send(()).unwrap();
    tokio::task::spawn_blocking(move || in_second.recv()).await.unwrap().expect("the second cycle appends");
    let third = sent_enqueue(&committer).await;
    leave_second.send(()).unwrap();
    for answer in [first, second, third] {
        let answered = tokio::time::timeout(Duration::from_secs(10), answer).await;
        let answered = answered.unwrap_or_else(|_| panic!("no answer; events {:?}", events.lock().unwrap()));
        assert!(answered.expect("answered")[0].is_ok());
    }
    let events = events.lock().unwrap().clone();
    let order: Vec<&str> = events.iter().map(String::as_str).filter(|event| *event != "reclaim").collect();
    assert_eq!(
        order,
        ["append", "start sync", "append", "start sync", "append", "finish sync", "finish sync", "persist"]
    );
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// Hands the enqueued total of queue `q` to the test after every cycle.
struct TotalsSink(tokio::sync::mpsc::UnboundedSender<u64>);

impl committer::StatsSink for TotalsSink {
    fn wake_ms(&self) -> sepp_core::TimeMs {
        sepp_core::TimeMs::MAX
    }
    fn after_cycle(&mut self, _now_ms: sepp_core::TimeMs, state: &mut State) {
        let enqueued = state.totals().find(|(queue, _)| &***queue == "q").map_or(0, |(_, totals)| totals.enqueued);
        let _ = self.0.send(enqueued);
    }
    fn publish_soon(&mut self) {}
    fn forget(&mut self, _queue: &str) {}
}

/// Waits until the sink reports `expected` enqueued jobs.
async fn sink_reports(totals: &mut tokio::sync::mpsc::UnboundedReceiver<u64>, expected: u64) {
    let reported = async {
        while let Some(enqueued) = totals.recv().await {
            if enqueued == expected {
                return;
            }
        }
        panic!("the committer stopped");
    };
    tokio::time::timeout(Duration::from_secs(10), reported)
        .await
        .unwrap_or_else(|_| panic!("the stats sink never saw {expected} enqueued"));
}

/// Cluster mode: stats published to a follower go on while it leads, and the committed state it
/// leads from (which never counts totals itself) counts them, also after stepping down and
/// leading again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_counts_totals_while_stats_are_published() {
    let (committer, closed) = spawn_follower();
    let (sink, mut totals) = tokio::sync::mpsc::unbounded_channel();
    committer.send(Command::PublishStats(Box::new(TotalsSink(sink)))).await.expect("the committer runs");
    let mut leading = committer.leading();
    // Each term enqueues one more job than the last, so no report of an earlier term's state
    // passes for this one's.
    for term in 1..=2 {
        let committed = State::new(Arc::new(Policy::default()), StorageRules::default());
        assert!(!committed.counts_totals());
        let mut log = TestLog::default();
        log.replicated = true;
        committer.send(Command::Lead { state: Box::new(committed), log: Box::new(log) }).await.expect("runs");
        leading.wait_for(|leads| *leads).await.expect("it leads");
        let jobs = (0..term).map(|_| small_job()).collect();
        let accepted = ask(&committer, |reply| Command::Enqueue { jobs, reply }).await;
        assert!(accepted.iter().all(Result::is_ok));
        sink_reports(&mut totals, term).await;
        committer.send(Command::Follow).await.expect("runs");
        leading.wait_for(|leads| !*leads).await.expect("it follows");
    }
    drop(committer);
    closed.wait().await.expect("the committer stops");
}
