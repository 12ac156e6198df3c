//! The committer over a real durable log with tiny checkpoint thresholds, so that checkpoints,
//! payload relocation and file reclaiming all happen while jobs are being delivered; and over a
//! log whose persist fails, which poisons storage.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sepp_core::validate::ReservePlan;
use sepp_core::{JobId, NewJob, Payload, Policy, Record, Snapshot, State, StorageRules, StoredPayload};
use sepp_log::{DurableLog, LogOptions, PersistMode};
use sepp_server::committer::{self, Command, CommitterHandle, CommitterSettings};
use tokio::sync::oneshot;

fn payload_of(index: usize) -> Vec<u8> {
    (0..2_000).map(|byte| ((byte + index * 7) % 251) as u8).collect()
}

async fn ask<T>(committer: &CommitterHandle, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> T {
    let (reply, answer) = oneshot::channel();
    committer.send(command(reply)).await.expect("the committer runs");
    answer.await.expect("the committer answers")
}

fn checkpoints(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read the data directory")
        .filter(|entry| entry.as_ref().unwrap().file_name().to_string_lossy().ends_with(".ckpt"))
        .count()
}

/// Every delivered payload comes back byte for byte while checkpoints move payloads into new
/// files and delete the old ones underneath the deliveries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_read_their_payloads_while_checkpoints_reclaim_the_files_behind_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = State::new(Arc::new(Policy::default()), StorageRules::default());
    let options =
        LogOptions { persist_mode: PersistMode::Buffer, segment_bytes: 16 << 10, checkpoint_slack_bytes: 32 << 10 };
    let (log, _) = DurableLog::open(dir.path(), options, |_| unreachable!("a new directory")).expect("open the log");
    let settings = CommitterSettings { command_queue_capacity: 64, sweep_interval_ms: 1000 };
    let opened = move || Ok::<_, std::convert::Infallible>((state, Box::new(log) as Box<dyn sepp_log::Log>));
    let Ok((committer, closed)) = committer::spawn(opened, settings);

    const JOBS: usize = 400;
    let mut ids = Vec::new();
    for index in 0..JOBS {
        let job = NewJob {
            queue: "q".into(),
            job_type: "t".into(),
            payload: Some(Payload { data: payload_of(index), encoding: "bin".into() }),
            ..NewJob::default()
        };
        let id = JobId::new_v4();
        let results = ask(&committer, |reply| Command::Enqueue { jobs: vec![(id, job)], reply }).await;
        assert!(results[0].is_ok());
        ids.push(id);
    }
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 1 };
    let started = Instant::now();
    for (index, id) in ids.iter().enumerate() {
        let delivered = ask(&committer, |reply| Command::Reserve { plan: plan.clone(), reply }).await;
        assert_eq!(delivered.len(), 1, "job {index} was not delivered");
        assert_eq!(delivered[0].value.job.id, *id);
        assert_eq!(delivered[0].payload_data.as_deref(), Some(&payload_of(index)[..]), "payload of job {index}");
        let attempt = delivered[0].value.attempt;
        let acked = ask(&committer, |reply| Command::Ack { job_id: *id, attempt, reply }).await;
        assert_eq!(acked, Ok(()));
        // Give the checkpoint thread a moment now and then, so completions land between
        // deliveries rather than only at the end.
        if index % 40 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(checkpoints(dir.path()) >= 1, "no checkpoint happened, so nothing was tested");
    assert!(started.elapsed() < Duration::from_secs(60));
    drop(committer);
    closed.wait().await.expect("the committer stops");
}

/// A log that keeps nothing and whose persist fails once `failing` is set, counting the
/// persists it was asked for after that. It sets `closed` when it is dropped.
#[derive(Default)]
struct FailingLog {
    failing: Arc<AtomicBool>,
    failed_persists: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
}

impl Drop for FailingLog {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

impl sepp_log::Log for FailingLog {
    fn append(&mut self, _records: &[Record]) -> std::io::Result<()> {
        Ok(())
    }
    fn persist(&mut self) -> std::io::Result<Vec<(JobId, StoredPayload)>> {
        if !self.failing.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        self.failed_persists.fetch_add(1, Ordering::SeqCst);
        Err(std::io::Error::other("the disk is on fire"))
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
    fn poll_checkpoint(&mut self) -> Vec<(JobId, StoredPayload)> {
        Vec::new()
    }
    fn reclaim(&mut self) {}
}

/// A committer over `log` and an empty state.
fn spawn_over(log: FailingLog) -> (CommitterHandle, committer::Closed) {
    let state = State::new(Arc::new(Policy::default()), StorageRules::default());
    let settings = CommitterSettings { command_queue_capacity: 64, sweep_interval_ms: 1000 };
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
    let failing = Arc::new(AtomicBool::new(false));
    let failed_persists = Arc::new(AtomicUsize::new(0));
    let log = FailingLog { failing: failing.clone(), failed_persists: failed_persists.clone(), closed: Arc::default() };
    let (committer, closed) = spawn_over(log);

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

/// The server exits as soon as the committer says it closed, without waiting for the state's
/// memory to be freed; so by then the log must be closed (the data directory unlocked, its
/// background threads joined).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committer_says_it_closed_only_after_its_log_is_closed() {
    let log = FailingLog::default();
    let log_closed = log.closed.clone();
    let (committer, closed) = spawn_over(log);
    let accepted = ask(&committer, |reply| Command::Enqueue { jobs: vec![small_job()], reply }).await;
    assert!(accepted[0].is_ok());
    assert!(!log_closed.load(Ordering::SeqCst));

    drop(committer);
    let closed = tokio::time::timeout(Duration::from_secs(10), closed.wait()).await;
    assert!(closed.is_ok_and(|closed| closed.is_ok()), "the committer does not close");
    assert!(log_closed.load(Ordering::SeqCst), "the committer said it closed before its log did");
}
