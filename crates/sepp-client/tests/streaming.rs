//! The Worker on a Consume stream against the real server (a build with the feature `consume`):
//! it drains a queue without a single Reserve call (the server's own `sepp_requests_total`),
//! never runs more of a queue's jobs than the queue's `max_in_flight`, stops a handler when the
//! job is cancelled (pushed on the stream, long before the lease would run out), and with
//! `with_streaming(false)` it reserves with calls.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Server, calls, eventually, signalled, unique};
use sepp_client::EnqueueRequest;
use sepp_client::client::SeppClient;
use sepp_client::worker::{ShutdownHandle, Worker};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

const LEASE: Duration = Duration::from_secs(60);
const METRICS: &str = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n";

fn job(queue: &str, job_type: &str) -> EnqueueRequest {
    EnqueueRequest::new(queue, job_type).unwrap()
}

struct Running {
    shutdown: ShutdownHandle,
    task: JoinHandle<()>,
}

fn start(worker: Worker) -> Running {
    let shutdown = worker.shutdown_handle();
    Running { shutdown, task: tokio::spawn(worker.run()) }
}

impl Running {
    async fn stop(self) {
        self.shutdown.shutdown();
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the worker stops")
            .expect("run does not panic");
    }
}

async fn consume_offered(client: &SeppClient) {
    let info = client.get_server_info().await.unwrap();
    assert!(
        info.features.iter().any(|feature| feature == "consume"),
        "SEPP_BIN must be a sepp with Consume: {:?}",
        info.features
    );
}

/// Runs a Worker with `max_in_flight` slots over `jobs` jobs of `queue` until every one is
/// handled and acked; returns the most handlers that ran at once.
async fn drain(client: &SeppClient, queue: &str, jobs: usize, max_in_flight: usize) -> usize {
    client.enqueue_batch((0..jobs).map(|_| job(queue, "t"))).await.unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), [queue], LEASE)
        .unwrap()
        .with_max_in_flight(max_in_flight)
        .handle("t", {
            let (running, most) = (running.clone(), most.clone());
            move |_, _| {
                let (running, most, done_tx) = (running.clone(), most.clone(), done_tx.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Give the others every chance to start meanwhile.
                    for _ in 0..20 {
                        tokio::task::yield_now().await;
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    let _ = done_tx.send(());
                    Ok(())
                }
            }
        })
        .unwrap();
    let worker = start(worker);
    for _ in 0..jobs {
        signalled("a job handled", &mut done).await;
    }
    // Stopping waits for the running jobs' acks.
    worker.stop().await;
    most.load(Ordering::SeqCst)
}

/// Whether every job of `queue` was acked (a reserve call of its own).
async fn assert_empty(client: &SeppClient, queue: &str) {
    let options = sepp_client::ReserveOptions::new([queue], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    assert!(client.reserve(&options).await.unwrap().is_none(), "every job was acked");
}

#[tokio::test]
async fn a_streaming_worker_drains_the_queue_without_reserve_calls_and_within_the_queues_limit() {
    let queue = unique("limited");
    let server = Server::start_with("", &format!("{METRICS}\n[[queues]]\nname = \"{queue}\"\nmax_in_flight = 2\n"));
    let client = server.client().await;
    consume_offered(&client).await;
    let most = drain(&client, &queue, 30, 8).await;
    assert!((1..=2).contains(&most), "{most} handlers ran at once");
    assert_eq!(calls(&server, "Reserve").await, 0, "the worker consumed on the stream");
    assert_eq!(calls(&server, "Ack").await, 0, "acks travelled on the stream");
    assert_empty(&client, &queue).await;
}

#[tokio::test]
async fn a_streaming_worker_grants_no_more_credits_than_its_free_slots() {
    let server = Server::start_with("", METRICS);
    let client = server.client().await;
    consume_offered(&client).await;
    let queue = unique("slots");
    client.enqueue_batch((0..10).map(|_| job(&queue, "t"))).await.unwrap();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (open, gate) = tokio::sync::watch::channel(false);
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .with_max_in_flight(2)
        .handle("t", move |_, _| {
            let (started_tx, mut gate) = (started_tx.clone(), gate.clone());
            async move {
                let _ = started_tx.send(());
                let _ = gate.wait_for(|open| *open).await;
                Ok(())
            }
        })
        .unwrap();
    let worker = start(worker);
    signalled("a first handler", &mut started).await;
    signalled("a second handler", &mut started).await;
    // Two credits: the server leased the worker two jobs, and the other eight are still ready.
    let options = sepp_client::ReserveOptions::new([queue.as_str()], LEASE)
        .unwrap()
        .with_wait_timeout(Duration::ZERO)
        .with_max_jobs(10);
    let rest = client.reserve(&options).await.unwrap().unwrap();
    assert_eq!(rest.len(), 8, "the worker holds exactly its two slots' jobs");
    assert_eq!(calls(&server, "Reserve").await, 1, "only the test's own reserve");
    open.send(true).unwrap();
    worker.stop().await;
}

#[tokio::test]
async fn a_cancel_is_pushed_to_the_running_handler() {
    let server = Server::start();
    let client = server.client().await;
    consume_offered(&client).await;
    let queue = unique("cancel");
    let id = client.enqueue(job(&queue, "slow")).await.unwrap().job_id;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
    /// Signals when the handler's future is dropped (the Worker stopped it).
    struct OnDrop(mpsc::UnboundedSender<()>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    // No auto-extend, a 60 s lease: only the pushed cancel can stop the handler in time.
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .handle("slow", move |_, ctx| {
            let (started_tx, stopped_tx) = (started_tx.clone(), stopped_tx.clone());
            async move {
                let _guard = OnDrop(stopped_tx);
                let _ = started_tx.send(ctx.id.clone());
                std::future::pending::<()>().await;
                Ok(())
            }
        })
        .unwrap();
    let worker = start(worker);
    assert_eq!(signalled("the handler to start", &mut started).await, id);
    assert!(client.cancel(&id, Some("not needed")).await.unwrap(), "the job was leased");
    signalled("the handler to be stopped", &mut stopped).await;
    worker.stop().await;
}

#[tokio::test]
async fn without_streaming_the_worker_reserves_with_calls() {
    let server = Server::start_with("", METRICS);
    let client = server.client().await;
    consume_offered(&client).await;
    let queue = unique("opt-out");
    client.enqueue(job(&queue, "t")).await.unwrap();
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .with_streaming(false)
        .handle("t", move |_, _| {
            let done_tx = done_tx.clone();
            async move {
                let _ = done_tx.send(());
                Ok(())
            }
        })
        .unwrap();
    let worker = start(worker);
    signalled("the job handled", &mut done).await;
    eventually("the ack", || async { (calls(&server, "Ack").await == 1).then_some(()) }).await;
    worker.stop().await;
    assert!(calls(&server, "Reserve").await >= 1);
}
