//! The load of the crash checks: producers, workers and a canceller that write down what the
//! server acknowledged, in the order they saw it; then a drain, and the checks that nothing
//! acknowledged was lost or undone. The single node's crash loop (durability.rs) and the
//! cluster's leader kills (cluster.rs) run the same load and the same checks.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sepp_server::proto::v1 as pb;
use tonic::Code;
use tonic::transport::Channel;

use super::QueueServiceClient;

/// Put before each payload's text: payloads of more than 32 bytes are kept in files, not memory.
pub const PADDING: &str = "payload-kept-on-disk-rather-than-in-memory/";

pub fn new_job(queue: &str, payload: &[u8]) -> pb::EnqueueRequest {
    pb::EnqueueRequest {
        queue: queue.into(),
        job_type: "work".into(),
        payload: Some(pb::Payload { data: payload.to_vec(), encoding: "application/octet-stream".into() }),
        ..Default::default()
    }
}

pub async fn reserve(
    client: &mut QueueServiceClient<Channel>,
    queue: &str,
    lease_ms: u64,
    wait_ms: u64,
) -> Vec<pb::Job> {
    let request = pb::ReserveRequest {
        queues: vec![queue.into()],
        wait_timeout: Some(duration(wait_ms)),
        lease_duration: Some(duration(lease_ms)),
        worker_id: None,
        max_jobs: Some(16),
    };
    client.reserve(request).await.expect("reserve").into_inner().jobs
}

pub fn duration(ms: u64) -> prost_types::Duration {
    prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 }
}

/// What the clients of the crash loop saw acknowledged, in the order they saw it.
#[derive(Default)]
pub struct Ledger {
    /// Ids whose enqueue was acknowledged, with the payload they carry.
    pub enqueued: HashMap<String, Vec<u8>>,
    /// Every payload a producer tried to enqueue (acknowledged or not).
    pub attempted: HashSet<Vec<u8>>,
    /// (event number, attempt) of every delivery, per id.
    pub deliveries: HashMap<String, Vec<(u64, u32)>>,
    /// The payload each delivered id carried.
    pub delivered_payloads: HashMap<String, Vec<u8>>,
    /// Event number at which each ack was acknowledged.
    pub acked: HashMap<String, u64>,
    /// The event number taken just before the reserve of each delivery, per id.
    pub reserve_starts: HashMap<String, Vec<u64>>,
    /// Ids a cancel was sent for.
    pub cancel_sent: HashSet<String>,
    /// Event number at which each cancel was acknowledged.
    pub cancelled: HashMap<String, u64>,
}

pub const CRASH_LEASE_MS: u64 = 1_500;

pub async fn produce(
    addr: String,
    queue: String,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
) {
    let Ok(channel) = Channel::from_shared(addr).unwrap().connect().await else {
        return;
    };
    let mut client = QueueServiceClient::new(channel);
    while !stop.load(Ordering::Relaxed) {
        // Longer than what stays in memory, so that delivered payloads are read back from files.
        let payload = format!("{PADDING}job-{}", next.fetch_add(1, Ordering::Relaxed)).into_bytes();
        ledger.lock().unwrap().attempted.insert(payload.clone());
        let request = pb::EnqueueBatchRequest { jobs: vec![new_job(&queue, &payload)] };
        match client.enqueue_batch(request).await {
            Ok(response) => {
                if let Some(pb::job_result::Outcome::Success(success)) = &response.get_ref().results[0].outcome {
                    ledger.lock().unwrap().enqueued.insert(success.job_id.clone(), payload);
                }
            }
            Err(_) => return,
        }
    }
}

pub async fn work(
    addr: String,
    queue: String,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
    clock: Arc<AtomicU64>,
) {
    let Ok(channel) = Channel::from_shared(addr).unwrap().connect().await else {
        return;
    };
    let mut client = QueueServiceClient::new(channel);
    while !stop.load(Ordering::Relaxed) {
        let request = pb::ReserveRequest {
            queues: vec![queue.clone()],
            wait_timeout: Some(duration(100)),
            lease_duration: Some(duration(CRASH_LEASE_MS)),
            worker_id: None,
            max_jobs: Some(4),
        };
        let started = clock.fetch_add(1, Ordering::SeqCst);
        let Ok(response) = client.reserve(request).await else {
            return;
        };
        for job in response.into_inner().jobs {
            let event = clock.fetch_add(1, Ordering::SeqCst);
            let payload = job.payload.as_ref().map(|payload| payload.data.clone()).unwrap_or_default();
            {
                let mut ledger = ledger.lock().unwrap();
                ledger.reserve_starts.entry(job.id.clone()).or_default().push(started);
                ledger.deliveries.entry(job.id.clone()).or_default().push((event, job.attempt));
                ledger.delivered_payloads.insert(job.id.clone(), payload);
            }
            // Leave a few jobs unacked so redelivery after a crash is exercised too.
            if job.payload.as_ref().is_some_and(|payload| payload.data.ends_with(b"7")) && job.attempt == 1 {
                continue;
            }
            let ack = pb::AckRequest { job_id: job.id.clone(), attempt: job.attempt, worker_id: None };
            match client.ack(ack).await {
                Ok(_) => {
                    let event = clock.fetch_add(1, Ordering::SeqCst);
                    ledger.lock().unwrap().acked.insert(job.id, event);
                }
                Err(status) if status.code() == Code::NotFound || status.code() == Code::FailedPrecondition => {}
                Err(_) => return,
            }
        }
    }
}

/// Cancels every acknowledged job whose payload ends in 3, queued or leased, whichever it is by
/// then; remembers when each cancel was acknowledged.
pub async fn cancel_some(addr: String, ledger: Arc<Mutex<Ledger>>, stop: Arc<AtomicBool>, clock: Arc<AtomicU64>) {
    let Ok(channel) = Channel::from_shared(addr).unwrap().connect().await else {
        return;
    };
    let mut client = QueueServiceClient::new(channel);
    while !stop.load(Ordering::Relaxed) {
        let next = {
            let mut ledger = ledger.lock().unwrap();
            let pick = ledger
                .enqueued
                .iter()
                .find(|(id, payload)| payload.ends_with(b"3") && !ledger.cancel_sent.contains(*id))
                .map(|(id, _)| id.clone());
            if let Some(id) = &pick {
                ledger.cancel_sent.insert(id.clone());
            }
            pick
        };
        let Some(job_id) = next else {
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        };
        match client.cancel_job(pb::CancelJobRequest { job_id: job_id.clone(), reason: None }).await {
            Ok(_) => {
                let event = clock.fetch_add(1, Ordering::SeqCst);
                ledger.lock().unwrap().cancelled.insert(job_id, event);
            }
            Err(status) if status.code() == Code::NotFound => {} // acked before the cancel came
            Err(_) => return,
        }
    }
}

/// Lets `tasks` run until `done` holds (at most a minute), then stops them through `stop` and
/// waits for them to end.
pub async fn run_until(done: impl Fn() -> bool, stop: &AtomicBool, tasks: Vec<tokio::task::JoinHandle<()>>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
}

/// Workers run at `addr` until every acknowledged enqueue was delivered at least once (at most
/// a minute); then whatever is still leased comes back when its lease ends, until the queue
/// runs dry.
pub async fn drain(addr: String, queue: &str, ledger: &Arc<Mutex<Ledger>>, clock: &Arc<AtomicU64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|_| tokio::spawn(work(addr.clone(), queue.to_owned(), ledger.clone(), stop.clone(), clock.clone())))
        .collect();
    let delivered_all = || {
        let ledger = ledger.lock().unwrap();
        ledger.enqueued.keys().all(|id| ledger.deliveries.contains_key(id) || ledger.cancel_sent.contains(id))
    };
    run_until(delivered_all, &stop, workers).await;
    // Whatever is still leased comes back when its lease ends; then the queue runs dry.
    let mut client =
        QueueServiceClient::new(Channel::from_shared(addr).unwrap().connect().await.expect("connect for the drain"));
    loop {
        let started = clock.fetch_add(1, Ordering::SeqCst);
        let jobs = reserve(&mut client, queue, 30_000, CRASH_LEASE_MS + 1_000).await;
        if jobs.is_empty() {
            break;
        }
        for job in jobs {
            let event = clock.fetch_add(1, Ordering::SeqCst);
            let payload = job.payload.map(|payload| payload.data).unwrap_or_default();
            {
                let mut ledger = ledger.lock().unwrap();
                ledger.reserve_starts.entry(job.id.clone()).or_default().push(started);
                ledger.deliveries.entry(job.id.clone()).or_default().push((event, job.attempt));
                ledger.delivered_payloads.insert(job.id.clone(), payload);
            }
            let ack = pb::AckRequest { job_id: job.id, attempt: job.attempt, worker_id: None };
            client.ack(ack).await.expect("ack after the crash loop");
        }
    }
}

/// Every acknowledged enqueue that was not cancelled was delivered, with its payload; no job
/// was delivered after its ack or its cancel was acknowledged; each job's attempts only grew.
/// At least `min_enqueued` enqueues (and `min_cancels` cancels) were acknowledged.
pub fn check(ledger: &Ledger, min_enqueued: u64, min_cancels: Option<u64>) {
    assert!(ledger.enqueued.len() as u64 >= min_enqueued, "too little work happened: {}", ledger.enqueued.len());
    // An ack whose answer the crash swallowed may have completed a job without the worker
    // knowing, so "delivered" (not "acked") is what an acknowledged enqueue promises.
    // A cancel that failed in a crash may still have been applied: only a job nobody tried to
    // cancel must have been delivered.
    for (id, payload) in &ledger.enqueued {
        assert!(
            ledger.deliveries.contains_key(id) || ledger.cancel_sent.contains(id),
            "acknowledged enqueue {id} ({payload:?}) was never delivered"
        );
    }
    if let Some(min_cancels) = min_cancels {
        assert!(ledger.cancelled.len() as u64 >= min_cancels, "too few cancels happened: {}", ledger.cancelled.len());
    }
    for (id, cancelled_at) in &ledger.cancelled {
        let starts = ledger.reserve_starts.get(id).map(Vec::as_slice).unwrap_or_default();
        let after: Vec<_> = starts.iter().filter(|started| *started > cancelled_at).collect();
        assert!(after.is_empty(), "{id} was delivered by a reserve sent after its cancel was acknowledged");
    }
    for (id, deliveries) in &ledger.deliveries {
        let payload = &ledger.delivered_payloads[id];
        assert!(ledger.attempted.contains(payload), "delivered {id} with {payload:?}, which nobody enqueued");
        if let Some(enqueued) = ledger.enqueued.get(id) {
            assert_eq!(enqueued, payload, "{id} came back with another payload");
        }
        for pair in deliveries.windows(2) {
            assert!(pair[0].1 < pair[1].1, "attempts of {id} did not grow: {deliveries:?}");
        }
        assert!(deliveries[0].1 >= 1);
        if let Some(acked_at) = ledger.acked.get(id) {
            let after: Vec<_> = deliveries.iter().filter(|(event, _)| event > acked_at).collect();
            assert!(after.is_empty(), "{id} was delivered again after its ack was acknowledged: {after:?}");
        }
    }
}
