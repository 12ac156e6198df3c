//! The Worker against the real server: acks, handler errors (retry, permanent), the catch-all,
//! `max_in_flight`, auto-extend and lease loss, graceful shutdown and the worker id. Tests wait
//! for signals sent by handlers; where only the server can tell (a dead letter), they ask it.
//! The delays a Worker asks for (retry after, the backoff after a panic or an unknown job type)
//! are checked on a clock the test moves, in `crates/sepp-server/tests/client_clock.rs`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use common::{Server, eventually, signalled, unique};
use sepp_client::client::SeppClient;
use sepp_client::worker::{HandlerError, ShutdownHandle, Worker};
use sepp_client::{DeadLetterCause, DeadLetterRecord, EnqueueRequest, JobCtx, Payload, ReserveOptions};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

const LEASE: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

fn job(queue: &str, job_type: &str) -> EnqueueRequest {
    EnqueueRequest::new(queue, job_type).unwrap()
}

/// A Worker running on its own task.
struct Running {
    shutdown: ShutdownHandle,
    task: JoinHandle<()>,
}

fn start(worker: Worker) -> Running {
    let shutdown = worker.shutdown_handle();
    Running { shutdown, task: tokio::spawn(worker.run()) }
}

impl Running {
    /// Asks for shutdown and waits for `run` to return (after in-flight jobs are done).
    async fn stop(self) {
        self.shutdown.shutdown();
        tokio::time::timeout(STOP_TIMEOUT, self.task).await.expect("the worker stops").expect("run does not panic");
    }
}

/// A gate handlers wait on until the test opens it.
fn gate() -> (watch::Sender<bool>, watch::Receiver<bool>) {
    watch::channel(false)
}

async fn wait_open(mut gate: watch::Receiver<bool>) {
    let _ = gate.wait_for(|open| *open).await;
}

async fn is_empty(client: &SeppClient, queue: &str) -> bool {
    let options = ReserveOptions::new([queue], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    client.reserve(&options).await.unwrap().is_none()
}

async fn dead_letter(client: &SeppClient, queue: &str) -> DeadLetterRecord {
    eventually("a dead letter", || async { client.drain_dead_letters(Some(queue), 1).await.unwrap().pop() }).await
}

#[tokio::test]
async fn handlers_ack_their_jobs_and_the_catch_all_takes_other_types() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("handlers");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tx_all = tx.clone();
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .handle("greet", move |payload: Option<Payload>, ctx: Arc<JobCtx>| {
            let tx = tx.clone();
            async move {
                tx.send(format!("greet:{}:{}", ctx.job_type, String::from_utf8(payload.unwrap().data).unwrap()))
                    .unwrap();
                Ok(())
            }
        })
        .unwrap()
        .with_catch_all_handler(move |_payload, ctx: Arc<JobCtx>| {
            let tx = tx_all.clone();
            async move {
                tx.send(format!("catch-all:{}", ctx.job_type)).unwrap();
                Ok(())
            }
        });
    let running = start(worker);
    client.enqueue(job(&queue, "greet").with_payload(Payload::new(b"ada".to_vec(), "text/plain"))).await.unwrap();
    client.enqueue(job(&queue, "other")).await.unwrap();
    let mut seen = vec![signalled("a handler", &mut rx).await, signalled("a handler", &mut rx).await];
    seen.sort();
    assert_eq!(seen, ["catch-all:other", "greet:greet:ada"]);
    running.stop().await;
    assert!(is_empty(&client, &queue).await, "both jobs were acked");
    assert!(client.drain_dead_letters(Some(&queue), 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_retry_error_redelivers_the_job_under_the_queue_policy() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("retry");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker =
        Worker::new(client.clone(), [queue.as_str()], LEASE).unwrap().handle("flaky", move |_, ctx: Arc<JobCtx>| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.attempt).unwrap();
                if ctx.attempt == 1 { Err(HandlerError::retry("not yet")) } else { Ok(()) }
            }
        });
    let running = start(worker.unwrap());
    client.enqueue(job(&queue, "flaky")).await.unwrap();
    assert_eq!(signalled("attempt 1", &mut rx).await, 1);
    assert_eq!(signalled("attempt 2", &mut rx).await, 2);
    running.stop().await;
    assert!(is_empty(&client, &queue).await);
}

#[tokio::test]
async fn a_permanent_error_dead_letters_the_job_with_its_reason() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("permanent");
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .handle("doomed", |_, _| async { Err(HandlerError::permanent("malformed input")) })
        .unwrap();
    let running = start(worker);
    let ack = client.enqueue(job(&queue, "doomed").with_max_attempts(5)).await.unwrap();
    let record = dead_letter(&client, &queue).await;
    running.stop().await;
    assert_eq!(record.job_id, ack.job_id);
    assert_eq!(record.cause, DeadLetterCause::Rejected);
    assert_eq!(record.final_attempt, 1);
    assert_eq!(record.last_reason.as_deref(), Some("malformed input"));
}

#[tokio::test]
async fn max_in_flight_bounds_the_jobs_a_worker_holds() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("in-flight");
    let (open, closed) = gate();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let running_now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .with_max_in_flight(2)
        .handle("slow", {
            let (running_now, most) = (running_now.clone(), most.clone());
            move |_, ctx: Arc<JobCtx>| {
                let (tx, closed, running_now, most) = (tx.clone(), closed.clone(), running_now.clone(), most.clone());
                async move {
                    let now = running_now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tx.send(ctx.id.clone()).unwrap();
                    wait_open(closed).await;
                    running_now.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                }
            }
        })
        .unwrap();
    client.enqueue_batch((0..5).map(|_| job(&queue, "slow"))).await.unwrap();
    let running = start(worker);
    signalled("first handler", &mut rx).await;
    signalled("second handler", &mut rx).await;
    // Both permits are held, so the worker cannot have leased more than these two: the other
    // three are still there for anyone else.
    let options =
        ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::ZERO).with_max_jobs(10);
    let rest = client.reserve(&options).await.unwrap().unwrap();
    assert_eq!(rest.len(), 3);
    for job in &rest {
        client.ack(&job.ctx).await.unwrap();
    }
    open.send(true).unwrap();
    // Freed permits are used again.
    client.enqueue_batch((0..3).map(|_| job(&queue, "slow"))).await.unwrap();
    for _ in 0..3 {
        signalled("a later handler", &mut rx).await;
    }
    running.stop().await;
    assert_eq!(most.load(Ordering::SeqCst), 2);
    assert!(is_empty(&client, &queue).await);
}

#[tokio::test]
async fn shutdown_stops_reserving_and_drains_in_flight_jobs() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("shutdown");
    let (open, closed) = gate();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let finished = Arc::new(AtomicBool::new(false));
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .with_max_in_flight(1)
        .handle("work", {
            let finished = finished.clone();
            move |_, ctx: Arc<JobCtx>| {
                let (tx, closed, finished) = (tx.clone(), closed.clone(), finished.clone());
                async move {
                    tx.send(ctx.id.clone()).unwrap();
                    wait_open(closed).await;
                    finished.store(true, Ordering::SeqCst);
                    Ok(())
                }
            }
        })
        .unwrap();
    let first = client.enqueue(job(&queue, "work")).await.unwrap();
    let running = start(worker);
    assert_eq!(signalled("the handler", &mut rx).await, first.job_id);

    running.shutdown.shutdown();
    assert!(running.shutdown.is_shutdown());
    // The only permit is held by the running job, so no reserve can run before the worker sees
    // the shutdown: this job stays in the queue.
    let second = client.enqueue(job(&queue, "work")).await.unwrap();
    assert!(!running.task.is_finished(), "run waits for the in-flight job");
    open.send(true).unwrap();
    tokio::time::timeout(STOP_TIMEOUT, running.task).await.unwrap().unwrap();
    assert!(finished.load(Ordering::SeqCst));

    let options =
        ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::ZERO).with_max_jobs(10);
    let left = client.reserve(&options).await.unwrap().unwrap();
    assert_eq!(left.len(), 1, "the drained job was acked; the later one was never reserved");
    assert_eq!((left[0].ctx.id.as_str(), left[0].ctx.attempt), (second.job_id.as_str(), 1));
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn auto_extend_keeps_a_long_job_leased_past_its_first_lease() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("auto-extend");
    let (open, closed) = gate();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let lease = Duration::from_secs(3);
    let worker = Worker::new(client.clone(), [queue.as_str()], lease)
        .unwrap()
        .with_auto_extend()
        .handle("long", move |_, ctx: Arc<JobCtx>| {
            let (tx, closed) = (tx.clone(), closed.clone());
            async move {
                tx.send(ctx.clone()).unwrap();
                wait_open(closed).await;
                Ok(())
            }
        })
        .unwrap();
    let running = start(worker);
    client.enqueue(job(&queue, "long")).await.unwrap();
    let ctx = signalled("the handler", &mut rx).await;
    assert_eq!(ctx.attempt, 1);
    let first_expiry = ctx.lease_expires_at;
    // Wait until the first lease is well past: only extensions can have kept the job ours.
    eventually("the first lease to pass", || async {
        (SystemTime::now() > first_expiry + Duration::from_secs(1) && ctx.lease_expiry() > SystemTime::now())
            .then_some(())
    })
    .await;
    assert!(ctx.lease_expiry() > first_expiry);
    open.send(true).unwrap();
    running.stop().await;
    assert!(rx.try_recv().is_err(), "the job was never redelivered");
    assert!(is_empty(&client, &queue).await, "the job was acked under its extended lease");
    assert!(client.drain_dead_letters(Some(&queue), 10).await.unwrap().is_empty());
}

/// Sends a signal when dropped: tells the test that an aborted handler's future was dropped.
struct DropSignal(Option<mpsc::UnboundedSender<&'static str>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send("dropped");
        }
    }
}

#[tokio::test]
async fn losing_the_lease_aborts_the_handler_and_settles_nothing() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("lease-lost");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let completed = Arc::new(AtomicBool::new(false));
    // The heartbeat comes after the lease has expired, so the extension finds the job gone.
    let worker = Worker::new(client.clone(), [queue.as_str()], Duration::from_millis(300))
        .unwrap()
        .with_max_in_flight(1)
        .with_auto_extend_interval(Duration::from_millis(1500))
        .handle("stuck", {
            let completed = completed.clone();
            move |_, _| {
                let (tx, completed) = (tx.clone(), completed.clone());
                async move {
                    let guard = DropSignal(Some(tx.clone()));
                    tx.send("started").unwrap();
                    std::future::pending::<()>().await;
                    drop(guard);
                    completed.store(true, Ordering::SeqCst);
                    Ok(())
                }
            }
        })
        .unwrap();
    let running = start(worker);
    let ack = client.enqueue(job(&queue, "stuck").with_max_attempts(1)).await.unwrap();
    assert_eq!(signalled("the handler to start", &mut rx).await, "started");
    assert_eq!(signalled("the handler to be aborted", &mut rx).await, "dropped");
    running.stop().await;
    assert!(!completed.load(Ordering::SeqCst));
    let record = dead_letter(&client, &queue).await;
    assert_eq!(record.job_id, ack.job_id);
    assert_eq!(record.cause, DeadLetterCause::LeaseExpired, "the worker neither acked nor nacked it");
    assert_eq!(record.last_reason, None);
}

#[tokio::test]
async fn cancelling_a_running_job_aborts_its_handler_at_the_next_heartbeat() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("cancelled");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), [queue.as_str()], Duration::from_secs(30))
        .unwrap()
        .with_max_in_flight(1)
        .with_auto_extend_interval(Duration::from_millis(200))
        .handle("long", move |_, _| {
            let tx = tx.clone();
            async move {
                let guard = DropSignal(Some(tx.clone()));
                tx.send("started").unwrap();
                std::future::pending::<()>().await;
                drop(guard);
                Ok(())
            }
        })
        .unwrap();
    let running = start(worker);
    let ack = client.enqueue(job(&queue, "long")).await.unwrap();
    assert_eq!(signalled("the handler to start", &mut rx).await, "started");
    assert!(client.cancel(&ack.job_id.to_string(), Some("not needed any more")).await.unwrap(), "it was leased");
    assert_eq!(signalled("the handler to be aborted", &mut rx).await, "dropped");
    running.stop().await;
    let record = dead_letter(&client, &queue).await;
    assert_eq!(record.job_id, ack.job_id);
    assert_eq!(record.cause, DeadLetterCause::Cancelled);
    assert_eq!(record.last_reason.as_deref(), Some("not needed any more"));
}

#[tokio::test]
async fn the_worker_id_is_sent_with_the_lease() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("worker-id");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let default = Worker::new(client.clone(), [queue.as_str()], LEASE).unwrap();
    let generated = default.worker_id().to_owned();
    assert!(generated.contains(&format!("-{}-", std::process::id())), "{generated}");
    let worker = default
        .with_worker_id("mailer-7")
        .unwrap()
        .handle("t", move |_, ctx: Arc<JobCtx>| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.worker_id().map(str::to_owned)).unwrap();
                Ok(())
            }
        })
        .unwrap();
    assert_eq!(worker.worker_id(), "mailer-7");
    let running = start(worker);
    client.enqueue(job(&queue, "t")).await.unwrap();
    assert_eq!(signalled("the handler", &mut rx).await.as_deref(), Some("mailer-7"));
    running.stop().await;
}

/// Per-key limits (server config `limit_key`, `key_max_in_flight`, `key_overrides`) hold each
/// tenant to its own number of running handlers, and the jobs of other tenants queued behind a
/// full tenant's still run: acme's four jobs come first, yet solo's and other's start while two
/// of acme's wait.
#[tokio::test]
async fn per_key_limits_hold_each_tenant_and_let_the_others_past() {
    let queue = unique("tenants");
    let server = Server::start_with(
        "",
        &format!(
            "[[queues]]\nname = {queue:?}\nlimit_key = \"tenant\"\nkey_max_in_flight = 1\n\
             key_overrides = {{ acme = {{ max_in_flight = 2 }} }}\n"
        ),
    );
    let client = server.client().await;
    let (open, closed) = gate();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let running = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<String, (usize, usize)>::new()));
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .with_max_in_flight(8)
        .handle("hook", {
            let running = running.clone();
            move |_, ctx: Arc<JobCtx>| {
                let (tx, closed, running) = (tx.clone(), closed.clone(), running.clone());
                async move {
                    let Some(sepp_client::Primitive::String(tenant)) = ctx.custom.get("tenant").cloned() else {
                        panic!("no tenant")
                    };
                    {
                        let mut running = running.lock().unwrap();
                        let (now, most) = running.entry(tenant.clone()).or_default();
                        *now += 1;
                        *most = (*most).max(*now);
                    }
                    tx.send(tenant.clone()).unwrap();
                    wait_open(closed).await;
                    running.lock().unwrap().get_mut(&tenant).unwrap().0 -= 1;
                    Ok(())
                }
            }
        })
        .unwrap();
    let tenants = ["acme", "acme", "acme", "acme", "solo", "other", "solo", "other", "solo", "other"];
    let jobs = tenants.iter().map(|tenant| job(&queue, "hook").with_custom_entry("tenant", *tenant));
    client.enqueue_batch(jobs).await.unwrap();
    let handle = start(worker);
    let mut started: Vec<String> = Vec::new();
    for _ in 0..4 {
        started.push(signalled("a handler within its tenant's limit", &mut rx).await);
    }
    started.sort();
    assert_eq!(started, ["acme", "acme", "other", "solo"], "two of acme, one each of the others");
    // Every slot is taken: the six left are held by their tenant's limit, for anyone.
    assert!(is_empty(&client, &queue).await, "a reserve of its own gets none of them");
    open.send(true).unwrap();
    for _ in 0..6 {
        signalled("a later handler", &mut rx).await;
    }
    handle.stop().await;
    let most: std::collections::HashMap<String, usize> =
        running.lock().unwrap().iter().map(|(tenant, (_, most))| (tenant.clone(), *most)).collect();
    assert_eq!(most, [("acme".to_string(), 2), ("solo".to_string(), 1), ("other".to_string(), 1)].into());
    assert!(is_empty(&client, &queue).await);
}
