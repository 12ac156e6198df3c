//! A producer and a worker in one program.
//!
//! Enqueues a few jobs, then runs a Worker until it has handled them all, and shuts it down
//! gracefully. Start a server first (`cargo run -p sepp-server`), then:
//!
//! ```text
//! cargo run -p sepp-client --example quickstart
//! SEPP_ADDR=127.0.0.1:6000 cargo run -p sepp-client --example quickstart
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sepp_client::client::{RetryPolicy, SeppClient};
use sepp_client::worker::{HandlerError, Worker};
use sepp_client::{EnqueueRequest, JobCtx, Payload, Priority};
use tokio::sync::Notify;

const JOBS: usize = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::var("SEPP_ADDR").unwrap_or_else(|_| "127.0.0.1:50051".to_owned());
    let client = SeppClient::builder(addr).retry_policy(RetryPolicy::default().with_max_attempts(3)).connect().await?;
    let info = client.get_server_info().await?;
    println!("connected to sepp {}", info.version);

    // Producer: one call, one result per job. Rejections are values, not errors.
    let queue = format!("quickstart-{}", std::process::id());
    let requests = (0..JOBS).map(|n| {
        EnqueueRequest::new(&queue, "greet")
            .expect("non-empty names")
            .with_payload(Payload::new(format!("visitor {n}").into_bytes(), "text/plain"))
            .with_priority(Priority::P5)
            .with_idempotency_key(format!("{queue}-{n}"))
    });
    for result in client.enqueue_batch(requests).await? {
        match result {
            Ok(ack) => println!("enqueued {} (deduplicated: {})", ack.job_id, ack.deduplicated),
            Err(rejection) => println!("rejected: {rejection}"),
        }
    }

    // Consumer: the Worker reserves, runs the handler, and acks (or nacks on HandlerError).
    let handled = Arc::new(AtomicUsize::new(0));
    let all_done = Arc::new(Notify::new());
    let worker = Worker::new(client, [queue.as_str()], Duration::from_secs(30))?
        .with_wait_timeout(Duration::from_secs(5))
        .handle("greet", {
            let (handled, all_done) = (handled.clone(), all_done.clone());
            move |payload: Option<Payload>, ctx: Arc<JobCtx>| {
                let (handled, all_done) = (handled.clone(), all_done.clone());
                async move {
                    let payload = payload.ok_or_else(|| HandlerError::permanent("greet needs a payload"))?;
                    println!("{ctx}: hello, {}!", String::from_utf8_lossy(&payload.data));
                    if handled.fetch_add(1, Ordering::SeqCst) + 1 == JOBS {
                        all_done.notify_one();
                    }
                    Ok(())
                }
            }
        })?;
    println!("worker {} starting", worker.worker_id());
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    all_done.notified().await;
    shutdown.shutdown();
    running.await?;
    println!("handled {} jobs; worker stopped", handled.load(Ordering::SeqCst));
    Ok(())
}
