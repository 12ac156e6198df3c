//! The Rust client (`crates/sepp-client`) and its Worker against a real server run in this
//! process on a clock the test moves: the delays a nack or a Worker asks for are read from the
//! server's own view of the job (its `due_at_ms` on the admin API), exactly, and the retry is
//! delivered once the test moves the clock past it. Nothing here waits for real time to pass.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::in_process::{InProcessServer, ManualClock};
use common::unique;
use sepp_admin_types::{Job, JobState};
use sepp_client::client::{RetryDirective, SeppClient};
use sepp_client::worker::{HandlerError, Worker};
use sepp_client::{DeadLetterCause, EnqueueRequest, JobCtx, ReserveOptions};
use tokio::sync::mpsc;

const EPOCH_MS: i64 = 1_700_000_000_000;
const LEASE: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_secs(30);
/// The admin API on, and dead letters kept (for a day).
const CONFIG: &str =
    "[admin]\nenabled = true\nlisten_addr = \"127.0.0.1:0\"\n[storage]\ndead_letter_retention_ms = 86400000\n";

/// A server on a stopped clock with [`CONFIG`], and a client of it.
async fn start(dir: &std::path::Path) -> (InProcessServer, Arc<ManualClock>, SeppClient) {
    let clock = ManualClock::at(EPOCH_MS);
    let server = InProcessServer::start(dir, CONFIG, clock.clone()).await;
    let client = SeppClient::connect(server.addr()).await.expect("connect");
    (server, clock, client)
}

/// The job as the admin API shows it, once `ready` holds.
async fn job_when(server: &InProcessServer, id: &str, ready: impl Fn(&Job) -> bool) -> Job {
    let url = format!("{}/admin/api/v1/jobs/{id}", server.admin_url());
    let http = reqwest::Client::new();
    common::eventually("the job in the expected state", WAIT, || async {
        let job: Job = http.get(&url).send().await.ok()?.json().await.ok()?;
        ready(&job).then_some(job)
    })
    .await
}

/// Moves the clock and has the committer run a cycle at the new time (any command does), so a
/// retry due by then is ready for the Worker's waiting reserve.
async fn advance(clock: &ManualClock, client: &SeppClient, ms: i64) {
    clock.advance(ms);
    let nudge = ReserveOptions::new([unique("nudge")], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    assert!(client.reserve(&nudge).await.expect("a reserve").is_none());
}

async fn signalled<T>(what: &str, receiver: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(WAIT, receiver.recv()).await.unwrap_or_else(|_| panic!("{what}")).expect(what)
}

/// Each attempt the handler saw, as (attempt, the server's clock when it ran).
type Attempts = mpsc::UnboundedReceiver<(u32, i64)>;

fn worker_recording(
    client: &SeppClient,
    queue: &str,
    job_type: &str,
    clock: Arc<ManualClock>,
    fail_first: impl Fn() -> Result<(), HandlerError> + Send + Sync + Clone + 'static,
) -> (Worker, Attempts) {
    use sepp_engine::Clock;
    let (tx, rx) = mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), [queue], LEASE).unwrap().handle(job_type, move |_, ctx: Arc<JobCtx>| {
        let (tx, clock, fail_first) = (tx.clone(), clock.clone(), fail_first.clone());
        async move {
            tx.send((ctx.attempt, clock.now_ms())).unwrap();
            if ctx.attempt == 1 { fail_first() } else { Ok(()) }
        }
    });
    (worker.unwrap(), rx)
}

/// A Worker whose handler fails the first attempt with `fail`: the retry is due exactly
/// `delay_ms` after it ran, and the second attempt runs once the clock gets there.
async fn first_attempt_fails_and_the_retry_is_due_after(
    fail: impl Fn() -> Result<(), HandlerError> + Send + Sync + Clone + 'static,
    delay_ms: i64,
) {
    let dir = tempfile::tempdir().unwrap();
    let (server, clock, client) = start(dir.path()).await;
    let queue = unique("retry");
    let (worker, mut attempts) = worker_recording(&client, &queue, "flaky", clock.clone(), fail);
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    let id = client.enqueue(EnqueueRequest::new(&queue, "flaky").unwrap()).await.unwrap().job_id;
    assert_eq!(signalled("attempt 1", &mut attempts).await, (1, EPOCH_MS));
    let retry = job_when(&server, &id, |job| job.state == Some(JobState::Scheduled)).await;
    assert_eq!(retry.due_at_ms, Some(EPOCH_MS + delay_ms), "{retry:?}");
    advance(&clock, &client, delay_ms).await;
    assert_eq!(signalled("attempt 2", &mut attempts).await, (2, EPOCH_MS + delay_ms));
    shutdown.shutdown();
    running.await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_schedules_the_redelivery_at_exactly_that_delay() {
    let busy = || Err(HandlerError::retry_after("busy", Duration::from_millis(1_500)));
    first_attempt_fails_and_the_retry_is_due_after(busy, 1_500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_is_retried_after_two_to_the_attempt_seconds() {
    // min(2^1, 60) s after the first attempt.
    first_attempt_fails_and_the_retry_is_due_after(|| panic!("the first attempt panics"), 2_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_type_without_handler_backs_off_then_dead_letters() {
    let dir = tempfile::tempdir().unwrap();
    let (server, clock, client) = start(dir.path()).await;
    let queue = unique("unhandled");
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE).unwrap().handle("known", |_, _| async { Ok(()) });
    let worker = worker.unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    let request = EnqueueRequest::new(&queue, "mystery").unwrap().with_max_attempts(2);
    let id = client.enqueue(request).await.unwrap().job_id;
    let retry = job_when(&server, &id, |job| job.state == Some(JobState::Scheduled)).await;
    assert_eq!(retry.due_at_ms, Some(EPOCH_MS + 2_000), "min(2^1, 60) s: {retry:?}");
    advance(&clock, &client, 2_000).await;
    let record = common::eventually("a dead letter", WAIT, || async {
        client.drain_dead_letters(Some(queue.as_str()), 1).await.unwrap().pop()
    })
    .await;
    assert_eq!(record.cause, DeadLetterCause::AttemptsExhausted);
    assert_eq!(record.final_attempt, 2);
    assert_eq!(record.last_reason.as_deref(), Some("no handler registered for job_type"));
    assert_eq!(record.failed_at, std::time::UNIX_EPOCH + Duration::from_millis((EPOCH_MS + 2_000) as u64));
    shutdown.shutdown();
    running.await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_nack_holds_the_job_back_until_the_delay_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (server, clock, client) = start(dir.path()).await;
    let queue = unique("nack-after");
    let id = client.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).await.unwrap().job_id;
    let now = ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    let first = client.reserve(&now).await.unwrap().expect("the job").remove(0);
    let delay = Duration::from_secs(2);
    assert!(!client.nack(&first.ctx, RetryDirective::After(delay), "later").await.unwrap());
    let retry = job_when(&server, &id, |job| job.state == Some(JobState::Scheduled)).await;
    assert_eq!(retry.due_at_ms, Some(EPOCH_MS + 2_000), "{retry:?}");
    clock.advance(1_999);
    assert!(client.reserve(&now).await.unwrap().is_none(), "the job was ready before its delay passed");
    clock.advance(1);
    let second = client.reserve(&now).await.unwrap().expect("the job, once its delay passed").remove(0);
    assert_eq!((second.ctx.id, second.ctx.attempt), (id, 2));
    server.stop().await;
}
