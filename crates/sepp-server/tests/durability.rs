//! Durability of the real binary: every kind of state survives a graceful stop (SIGTERM) and a
//! crash (SIGKILL), and a crash loop under load loses no acknowledged operation (docs/storage.md#recovery).

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::crash_load::{self, CRASH_LEASE_MS, Ledger, cancel_some, duration, new_job, produce, reserve, work};
use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;
use tonic::transport::Channel;

#[derive(Clone, Copy, Debug)]
enum Stop {
    /// SIGTERM: the graceful path.
    Term,
    /// SIGKILL: the process dies wherever it is.
    Kill,
}

/// Stops the server with `stop` and starts it again on the same data directory.
fn bounce(server: &mut TestServer, stop: Stop) {
    match stop {
        Stop::Term => server.restart(),
        Stop::Kill => {
            kill9(server);
            server.start_again();
        }
    }
}

fn kill9(server: &mut TestServer) {
    server.sigkill_and_wait();
}

/// Enqueues one job and returns its id (panics on any rejection).
async fn enqueue(client: &mut QueueServiceClient<Channel>, job: pb::EnqueueRequest) -> pb::EnqueueResponse {
    let response = client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![job] }).await.expect("enqueue");
    match response.into_inner().results.remove(0).outcome.expect("an outcome") {
        pb::job_result::Outcome::Success(success) => success,
        pb::job_result::Outcome::Rejection(rejection) => panic!("rejected: {rejection:?}"),
    }
}

fn timestamp_in(ms: u64) -> prost_types::Timestamp {
    let at = std::time::SystemTime::now() + Duration::from_millis(ms);
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap();
    prost_types::Timestamp { seconds: since.as_secs() as i64, nanos: since.subsec_nanos() as i32 }
}

async fn queued_and_scheduled_jobs_with_payloads_survive(stop: Stop) {
    let mut server = TestServer::start("");
    let queue = unique("durable");
    let big: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let mut client = server.raw_client().await;
    let ready = enqueue(&mut client, new_job(&queue, &big)).await;
    let mut later = new_job(&queue, b"small");
    later.scheduled_at = Some(timestamp_in(700));
    later.priority = Some(5);
    let scheduled = enqueue(&mut client, later).await;
    drop(client);

    bounce(&mut server, stop);

    let mut client = server.raw_client().await;
    let first = reserve(&mut client, &queue, 30_000, 0).await;
    assert_eq!(first.len(), 1, "only the ready job is ready");
    assert_eq!(first[0].id, ready.job_id);
    assert_eq!(first[0].payload.as_ref().unwrap().data, big);
    assert_eq!(first[0].attempt, 1);
    let second = reserve(&mut client, &queue, 30_000, 5_000).await;
    assert_eq!(second.len(), 1, "the scheduled job is delivered once due");
    assert_eq!(second[0].id, scheduled.job_id);
    assert_eq!(second[0].priority, 5);
    assert_eq!(second[0].payload.as_ref().unwrap().data, b"small");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_and_scheduled_jobs_with_payloads_survive_sigterm() {
    queued_and_scheduled_jobs_with_payloads_survive(Stop::Term).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_and_scheduled_jobs_with_payloads_survive_sigkill() {
    queued_and_scheduled_jobs_with_payloads_survive(Stop::Kill).await;
}

/// A lease that ran out while the server was down is redelivered as the next attempt, and on
/// the job's final attempt it is dead-lettered as `LEASE_EXPIRED` instead.
async fn leases_that_expire_while_down_are_redelivered_or_dead_lettered(stop: Stop) {
    let mut server = TestServer::start("[storage]\ndead_letter_retention_ms = 3600000\n");
    let queue = unique("leases");
    let mut client = server.raw_client().await;
    let mut retried = new_job(&queue, b"retried");
    retried.max_attempts = Some(2);
    let retried = enqueue(&mut client, retried).await;
    let mut last = new_job(&queue, b"last");
    last.max_attempts = Some(1);
    let last = enqueue(&mut client, last).await;
    let leased = reserve(&mut client, &queue, 300, 0).await;
    assert_eq!(leased.len(), 2);
    drop(client);

    bounce(&mut server, stop);

    let mut client = server.raw_client().await;
    let again = reserve(&mut client, &queue, 30_000, 5_000).await;
    assert_eq!(again.len(), 1, "only the job with attempts left comes back: {again:?}");
    assert_eq!(again[0].id, retried.job_id);
    assert_eq!(again[0].attempt, 2);
    let drained = client
        .drain_dead_letters(pb::DrainDeadLettersRequest { queue: Some(queue.clone()), max: Some(10) })
        .await
        .expect("drain")
        .into_inner()
        .records;
    assert_eq!(drained.len(), 1);
    assert_eq!(drained[0].job.as_ref().unwrap().id, last.job_id);
    assert_eq!(drained[0].cause, pb::DeadLetterCause::LeaseExpired as i32);
    assert_eq!(drained[0].final_attempt, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_that_expire_while_down_are_redelivered_or_dead_lettered_after_sigterm() {
    leases_that_expire_while_down_are_redelivered_or_dead_lettered(Stop::Term).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_that_expire_while_down_are_redelivered_or_dead_lettered_after_sigkill() {
    leases_that_expire_while_down_are_redelivered_or_dead_lettered(Stop::Kill).await;
}

/// A lease still running after the restart keeps its deadline and its attempt: the holder can
/// ack it, and a stale attempt is fenced.
async fn live_leases_keep_their_attempt(stop: Stop) {
    let mut server = TestServer::start("");
    let queue = unique("held");
    let mut client = server.raw_client().await;
    let id = enqueue(&mut client, new_job(&queue, b"held")).await.job_id;
    let leased = reserve(&mut client, &queue, 60_000, 0).await;
    assert_eq!(leased.len(), 1);
    drop(client);

    bounce(&mut server, stop);

    let mut client = server.raw_client().await;
    assert!(reserve(&mut client, &queue, 60_000, 0).await.is_empty(), "a held lease is not redelivered");
    let stale = client.ack(pb::AckRequest { job_id: id.clone(), attempt: 2, worker_id: None }).await;
    assert_eq!(stale.unwrap_err().code(), Code::FailedPrecondition);
    client.ack(pb::AckRequest { job_id: id.clone(), attempt: 1, worker_id: None }).await.expect("the holder acks");
    let again = client.ack(pb::AckRequest { job_id: id, attempt: 1, worker_id: None }).await;
    assert_eq!(again.unwrap_err().code(), Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_leases_keep_their_attempt_after_sigterm() {
    live_leases_keep_their_attempt(Stop::Term).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_leases_keep_their_attempt_after_sigkill() {
    live_leases_keep_their_attempt(Stop::Kill).await;
}

/// Idempotency keys keep the window they were given at insert: a configuration that shortens
/// the window, applied by the restart, does not shorten a key's
/// (docs/protocol.md#idempotency-keys), and acked jobs still deduplicate. (That a later, longer window does not lengthen it either is timed with
/// the clock the test moves: `dedup_windows_stay_pinned_when_the_configuration_lengthens_them`.)
async fn dedup_records_keep_their_pinned_deadline(stop: Stop) {
    let mut server = TestServer::start("[storage]\ndedup_window_ms = 86400000\n");
    let queue = unique("dedup");
    let mut client = server.raw_client().await;
    let mut keyed = new_job(&queue, b"once");
    keyed.idempotency_key = Some("k".into());
    let first = enqueue(&mut client, keyed.clone()).await;
    let jobs = reserve(&mut client, &queue, 30_000, 0).await;
    client.ack(pb::AckRequest { job_id: jobs[0].id.clone(), attempt: 1, worker_id: None }).await.expect("ack");
    drop(client);

    server.write_config("[storage]\ndedup_window_ms = 1\n");
    bounce(&mut server, stop);

    let mut client = server.raw_client().await;
    let hit = enqueue(&mut client, keyed.clone()).await;
    assert_eq!((hit.job_id.as_str(), hit.deduplicated), (first.job_id.as_str(), true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_records_keep_their_pinned_deadline_after_sigterm() {
    dedup_records_keep_their_pinned_deadline(Stop::Term).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_records_keep_their_pinned_deadline_after_sigkill() {
    dedup_records_keep_their_pinned_deadline(Stop::Kill).await;
}

async fn dead_letters_survive_with_their_records(stop: Stop) {
    let mut server = TestServer::start("[storage]\ndead_letter_retention_ms = 3600000\n");
    let queue = unique("dead");
    let big = vec![9u8; 3000];
    let mut client = server.raw_client().await;
    let id = enqueue(&mut client, new_job(&queue, &big)).await.job_id;
    reserve(&mut client, &queue, 30_000, 0).await;
    let nack = pb::NackRequest {
        job_id: id.clone(),
        attempt: 1,
        reason: Some("broken input".into()),
        retry: Some(pb::NackRetry { strategy: Some(pb::nack_retry::Strategy::DeadLetter(())) }),
        worker_id: None,
    };
    assert!(client.nack(nack).await.expect("nack").into_inner().dead_lettered);
    drop(client);

    bounce(&mut server, stop);

    let mut client = server.raw_client().await;
    let drained = client
        .drain_dead_letters(pb::DrainDeadLettersRequest { queue: Some(queue), max: Some(10) })
        .await
        .expect("drain")
        .into_inner()
        .records;
    assert_eq!(drained.len(), 1);
    let record = &drained[0];
    assert_eq!(record.job.as_ref().unwrap().id, id);
    assert_eq!(record.job.as_ref().unwrap().payload.as_ref().unwrap().data, big);
    assert_eq!(record.cause, pb::DeadLetterCause::Rejected as i32);
    assert_eq!(record.last_reason.as_deref(), Some("broken input"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_survive_with_their_records_after_sigterm() {
    dead_letters_survive_with_their_records(Stop::Term).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_survive_with_their_records_after_sigkill() {
    dead_letters_survive_with_their_records(Stop::Kill).await;
}

/// A write the file system refuses (here: past the process's file size limit, as a full disk
/// would) poisons storage. The call whose cycle failed gets INTERNAL, the server says why and
/// exits with status 1 instead of being killed by SIGXFSZ, and the next start has exactly the
/// jobs that were acknowledged: the log took the failed frame back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_poisons_storage_and_the_server_exits_saying_why() {
    if is_reference() {
        // sepp 0.1 aborts on a persist failure (docs/operations.md#what-differs).
        return;
    }
    let mut server = TestServer::start_with_file_size_limit("", 1 << 20);
    assert!(
        server.logs().contains("creating it without preallocation"),
        "a 32 MiB first segment cannot be preallocated under a 1 MiB limit, and the server starts anyway\n{}",
        server.logs()
    );
    let mut client = server.raw_client().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    let watch = tonic_health::pb::HealthCheckRequest { service: "sepp.v1.QueueService".into() };
    let mut statuses = health.watch(watch).await.expect("watch health").into_inner();
    let serving = statuses.message().await.expect("a status").expect("a status").status;
    assert_eq!(serving, tonic_health::pb::health_check_response::ServingStatus::Serving as i32);
    let queue = unique("poisoned");
    let mut acknowledged = HashSet::new();
    let failure = loop {
        let jobs = (0..16).map(|_| new_job(&queue, &[7; 4096])).collect();
        match client.enqueue_batch(pb::EnqueueBatchRequest { jobs }).await {
            Ok(response) => {
                for result in response.into_inner().results {
                    match result.outcome.expect("an outcome") {
                        pb::job_result::Outcome::Success(success) => acknowledged.insert(success.job_id),
                        pb::job_result::Outcome::Rejection(rejection) => panic!("rejected: {rejection:?}"),
                    };
                }
            }
            Err(status) => break status,
        }
        assert!(acknowledged.len() < 1_000, "4 MB of payloads went into a log limited to 1 MiB");
    };
    assert_eq!(failure.code(), Code::Internal, "{failure:?}");
    assert!(!acknowledged.is_empty(), "the first write already failed");
    // Load balancers hear it before the process is gone.
    let stopped = statuses.message().await.expect("a status").expect("a status").status;
    assert_eq!(stopped, tonic_health::pb::health_check_response::ServingStatus::NotServing as i32);
    drop(statuses);

    let status = server.wait_exit(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "the server exits with status 1, not by a signal: {status}");
    assert!(server.logs().contains("storage is poisoned"), "{}", server.logs());
    let stderr = server.stderr().text();
    assert!(stderr.contains("storage is poisoned") && stderr.contains("File too large"), "{stderr}");

    server.lift_file_size_limit();
    server.start_again();
    assert!(
        !server.logs().contains("dropped a torn or corrupt tail"),
        "the failed frame was taken back, so the start finds no torn tail\n{}",
        server.logs()
    );
    let mut client = server.raw_client().await;
    let mut recovered = HashSet::new();
    loop {
        let jobs = reserve(&mut client, &queue, 60_000, 0).await;
        if jobs.is_empty() {
            break;
        }
        recovered.extend(jobs.into_iter().map(|job| job.id));
    }
    assert_eq!(recovered, acknowledged, "after the restart the queue holds exactly the acknowledged jobs");
}

/// Starts a server, has it write a few frames, and stops it: a data directory to damage.
async fn stopped_server_with_jobs() -> TestServer {
    let mut server = TestServer::start("");
    let mut client = server.raw_client().await;
    for _ in 0..3 {
        enqueue(&mut client, new_job("kept", b"payload bytes of a job")).await;
    }
    let status = server.sigterm_and_wait();
    assert!(status.success(), "{status}");
    server
}

/// Runs the binary on the stopped server's directory and config, expecting it to refuse.
fn refused_start(server: &TestServer) -> String {
    let config = server.config_path().display().to_string();
    let finished = run_to_exit(&["--config", &config], server.dir(), &[]);
    assert_eq!(finished.status.code(), Some(1), "{}\n{}", finished.stdout, finished.stderr);
    assert!(!finished.stdout.contains("queue server listening"), "{}", finished.stdout);
    finished.stderr
}

/// A flipped bit inside an acknowledged frame (with whole frames after it) is corruption, not a
/// torn tail: the binary refuses to start, naming the file and the frame's offset, and leaves
/// the file as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_bit_in_the_log_stops_the_binary_naming_the_file_and_offset() {
    let server = stopped_server_with_jobs().await;
    let segment = server.dir().join("db").join(format!("segment-{:020}.log", 1));
    let mut bytes = std::fs::read(&segment).expect("the first segment");
    // After the 8-byte segment header and the first frame's 8-byte header: its body.
    bytes[8 + 8 + 5] ^= 0x10;
    std::fs::write(&segment, &bytes).expect("damage the segment");
    let stderr = refused_start(&server);
    assert!(stderr.contains("could not open storage"), "{stderr}");
    assert!(stderr.contains(&format!("{} is corrupt at byte offset 8", segment.display())), "{stderr}");
    assert!(std::fs::read(&segment).expect("read") == bytes, "a refused directory is left untouched");
}

/// A data directory of a newer format than this build reads is refused with both formats named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_data_format_stops_the_binary_with_a_clear_message() {
    let server = stopped_server_with_jobs().await;
    std::fs::write(server.dir().join("db").join("FORMAT"), "sepp-log 9\n").expect("write FORMAT");
    let stderr = refused_start(&server);
    assert!(stderr.contains("has format \"sepp-log 9\", newer than this sepp reads"), "{stderr}");
    assert!(stderr.contains("it reads up to \"sepp-log 2\"") && stderr.contains("refusing to open"), "{stderr}");
}

/// The last frame of the log, whole (its checksum matches) but holding a record this build
/// cannot decode, is not a torn write: the binary refuses to start with a sentence naming the
/// file and the frame's offset, and leaves the segment as it was (nothing acknowledged is cut).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_tail_frame_that_does_not_decode_stops_the_binary_and_is_not_cut() {
    let server = stopped_server_with_jobs().await;
    let segment = server.dir().join("db").join(format!("segment-{:020}.log", 1));
    let mut bytes = std::fs::read(&segment).expect("the first segment");
    // Frames follow the 8-byte segment header; the preallocated rest is zeros (length 0).
    let mut end = 8;
    while let Some(len) = bytes.get(end..end + 4).map(|len| u32::from_le_bytes(len.try_into().unwrap()) as usize)
        && len > 0
    {
        end += 8 + len;
    }
    let body = [1u32.to_le_bytes().as_slice(), &[200]].concat();
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    frame.extend_from_slice(&body);
    bytes[end..end + frame.len()].copy_from_slice(&frame);
    std::fs::write(&segment, &bytes).expect("write the frame");
    let stderr = refused_start(&server);
    assert!(stderr.contains("could not open storage"), "{stderr}");
    let sentence = format!("{} holds a frame at byte offset {end} whose checksum matches", segment.display());
    assert!(stderr.contains(&sentence), "{stderr}");
    assert!(stderr.contains("not a torn write") && stderr.contains("refusing to open"), "{stderr}");
    assert!(std::fs::read(&segment).expect("read") == bytes, "a refused directory is left untouched");
}

/// Lets the load in `tasks` work until `progress` has grown by `more` (at most 5 s), then crashes
/// the server wherever it is (SIGKILL), stops the tasks and starts the server again: a crash
/// after a varying amount of acknowledged work rather than after a fixed time.
async fn crash_after(
    server: &mut TestServer,
    progress: impl Fn() -> usize,
    more: usize,
    stop: &AtomicBool,
    tasks: Vec<tokio::task::JoinHandle<()>>,
) {
    let target = progress() + more;
    let deadline = Instant::now() + Duration::from_secs(5);
    while progress() < target && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    kill9(server);
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
    server.start_again();
}

/// Producers, workers and a canceller run while the server is killed with SIGKILL and
/// restarted 20 times. Afterwards every acknowledged enqueue that was not cancelled was
/// delivered, no job is delivered after its ack or its cancel was acknowledged, and each job's
/// attempts only ever grow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loop_under_load_loses_no_acknowledged_operation() {
    const CYCLES: u64 = 20;
    let mut server = TestServer::start("[limits]\ndefault_max_attempts = 100\n");
    let queue = unique("crash");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let next_payload = Arc::new(AtomicU64::new(0));
    let clock = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    for cycle in 0..CYCLES {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..3 {
            tasks.push(tokio::spawn(produce(
                server.addr(),
                queue.clone(),
                ledger.clone(),
                stop.clone(),
                next_payload.clone(),
            )));
            tasks.push(tokio::spawn(work(server.addr(), queue.clone(), ledger.clone(), stop.clone(), clock.clone())));
        }
        tasks.push(tokio::spawn(cancel_some(server.addr(), ledger.clone(), stop.clone(), clock.clone())));
        let more = 10 + (cycle as usize * 7) % 30;
        crash_after(&mut server, || ledger.lock().unwrap().enqueued.len(), more, &stop, tasks).await;
    }

    crash_load::drain(server.addr(), &queue, &ledger, &clock).await;

    let ledger = ledger.lock().unwrap();
    crash_load::check(&ledger, CYCLES * 10, (!is_reference()).then_some(CYCLES));
    eprintln!(
        "crash loop: {CYCLES} SIGKILLs, {} acknowledged enqueues, {} acknowledged cancels, {} deliveries, {:?}",
        ledger.enqueued.len(),
        ledger.cancelled.len(),
        ledger.deliveries.values().map(Vec::len).sum::<usize>(),
        started.elapsed()
    );
}

/// What the workers of the second crash loop saw: every delivery with the interval its lease
/// surely covered, and the acks.
#[derive(Default)]
struct LimitLedger {
    enqueued: HashMap<String, String>,
    /// (queue, tenant, lease start ms, end ms, attempt) of every delivery, in delivery order.
    /// The start is the server's (lease expiry minus the lease); the end is when the worker sent
    /// its ack, less 2 ms, or the lease expiry: never later than the slot really came free.
    leases: Vec<(String, Option<String>, i64, i64, u32, String)>,
    acked: HashMap<String, u64>,
    delivered_after_ack: Vec<String>,
    /// Deliveries from the paused queue.
    from_paused: usize,
}

const LIMITED: &str = "[limits]\ndefault_max_attempts = 100\n\
    [[queues]]\nname = \"limited\"\nmax_in_flight = 6\nlimit_key = \"tenant\"\nkey_max_in_flight = 2\n\
    key_rate_limit = 40\nkey_rate_period_ms = 1000\nkey_rate_burst = 4\n";
const TENANT_BURST: u64 = 4;
const TENANT_INTERVAL_MS: i64 = 25;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn with_tenant(mut job: pb::EnqueueRequest, tenant: &str) -> pb::EnqueueRequest {
    let value = pb::PrimitiveValue { value: Some(pb::primitive_value::Value::StringValue(tenant.into())) };
    job.custom.insert("tenant".into(), value);
    job
}

async fn produce_limited(addr: String, ledger: Arc<Mutex<LimitLedger>>, stop: Arc<AtomicBool>, next: Arc<AtomicU64>) {
    let Ok(channel) = Channel::from_shared(addr).unwrap().connect().await else {
        return;
    };
    let mut client = QueueServiceClient::new(channel);
    while !stop.load(Ordering::Relaxed) {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let queue = if n.is_multiple_of(5) { "held" } else { "limited" };
        let job = with_tenant(new_job(queue, format!("job-{n}").as_bytes()), &format!("t{}", n % 3));
        match client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![job] }).await {
            Ok(response) => {
                if let Some(pb::job_result::Outcome::Success(success)) = &response.get_ref().results[0].outcome {
                    ledger.lock().unwrap().enqueued.insert(success.job_id.clone(), queue.into());
                }
            }
            Err(_) => return,
        }
    }
}

async fn work_limited(addr: String, ledger: Arc<Mutex<LimitLedger>>, stop: Arc<AtomicBool>, clock: Arc<AtomicU64>) {
    let Ok(channel) = Channel::from_shared(addr).unwrap().connect().await else {
        return;
    };
    let mut client = QueueServiceClient::new(channel);
    while !stop.load(Ordering::Relaxed) {
        let request = pb::ReserveRequest {
            queues: vec!["limited".into(), "held".into(), "ticks".into()],
            wait_timeout: Some(duration(100)),
            lease_duration: Some(duration(CRASH_LEASE_MS)),
            worker_id: None,
            max_jobs: Some(4),
        };
        let Ok(response) = client.reserve(request).await else {
            return;
        };
        for job in response.into_inner().jobs {
            let expires = job.lease_expires_at.as_ref().expect("a lease");
            let expires_ms = expires.seconds * 1000 + i64::from(expires.nanos) / 1_000_000;
            let tenant = match job.custom.get("tenant").and_then(|value| value.value.clone()) {
                Some(pb::primitive_value::Value::StringValue(tenant)) => Some(tenant),
                _ => None,
            };
            let index = {
                let mut ledger = ledger.lock().unwrap();
                if ledger.acked.contains_key(&job.id) {
                    ledger.delivered_after_ack.push(job.id.clone());
                }
                if job.queue == "held" {
                    ledger.from_paused += 1;
                }
                let start = expires_ms - CRASH_LEASE_MS as i64;
                ledger.leases.push((job.queue.clone(), tenant, start, expires_ms, job.attempt, job.id.clone()));
                ledger.leases.len() - 1
            };
            // Hold the job a little, so leases overlap and a limit that did not hold would show.
            tokio::time::sleep(Duration::from_millis(5)).await;
            let sent_ms = now_ms();
            let ack = pb::AckRequest { job_id: job.id.clone(), attempt: job.attempt, worker_id: None };
            let acked = client.ack(ack).await;
            let event = clock.fetch_add(1, Ordering::SeqCst);
            let mut ledger = ledger.lock().unwrap();
            let lease = &mut ledger.leases[index];
            lease.3 = lease.3.min(sent_ms - 2);
            match acked {
                Ok(_) => {
                    ledger.acked.insert(job.id, event);
                }
                Err(status) if status.code() == Code::NotFound || status.code() == Code::FailedPrecondition => {}
                Err(_) => return,
            }
        }
    }
}

/// The durable-log crash loop again, with the newer state in play: a queue with an in-flight
/// limit, a per-key in-flight limit and a per-key rate limit, a paused queue, and a schedule that
/// fires every second, while the server is killed with SIGKILL and restarted 12 times. Afterwards
/// no limit was ever exceeded (also across restarts), the paused queue delivered nothing until it
/// was resumed, no job (a schedule's slot included) was delivered after its ack was
/// acknowledged, and every acknowledged enqueue was delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loop_keeps_limits_pauses_and_schedules() {
    if is_reference() {
        return; // 0.1 has none of them.
    }
    const CYCLES: u64 = 12;
    let mut server = TestServer::start(LIMITED);
    let mut client = server.raw_client().await;
    client.pause_queue(pb::PauseQueueRequest { queue: "held".into(), until: None, reason: None }).await.expect("pause");
    let schedule = pb::ScheduleDefinition {
        id: "tick".into(),
        cadence: Some(pb::schedule_definition::Cadence::Every(duration(1_000))),
        job: Some(new_job("ticks", b"tick")),
        overlap: pb::ScheduleOverlap::Allow as i32,
        catch_up: pb::ScheduleCatchUp::Latest as i32,
    };
    client.upsert_schedule(pb::UpsertScheduleRequest { schedule: Some(schedule) }).await.expect("schedule");
    let ledger = Arc::new(Mutex::new(LimitLedger::default()));
    let next = Arc::new(AtomicU64::new(0));
    let clock = Arc::new(AtomicU64::new(0));
    for cycle in 0..CYCLES {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..2 {
            tasks.push(tokio::spawn(produce_limited(server.addr(), ledger.clone(), stop.clone(), next.clone())));
        }
        for _ in 0..4 {
            tasks.push(tokio::spawn(work_limited(server.addr(), ledger.clone(), stop.clone(), clock.clone())));
        }
        let more = 20 + (cycle as usize * 11) % 40;
        crash_after(&mut server, || ledger.lock().unwrap().leases.len(), more, &stop, tasks).await;
    }
    assert_eq!(ledger.lock().unwrap().from_paused, 0, "the paused queue delivered a job before it was resumed");

    let mut client = server.raw_client().await;
    let resumed = client.resume_queue(pb::ResumeQueueRequest { queue: "held".into() }).await.expect("resume");
    assert!(resumed.into_inner().resumed, "the pause outlived every crash");
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|_| tokio::spawn(work_limited(server.addr(), ledger.clone(), stop.clone(), clock.clone())))
        .collect();
    let delivered_all = || {
        let ledger = ledger.lock().unwrap();
        let delivered: HashSet<&String> = ledger.leases.iter().map(|lease| &lease.5).collect();
        ledger.enqueued.keys().all(|id| delivered.contains(id))
    };
    crash_load::run_until(delivered_all, &stop, workers).await;

    let ledger = ledger.lock().unwrap();
    let delivered: HashSet<&String> = ledger.leases.iter().map(|lease| &lease.5).collect();
    for (id, queue) in &ledger.enqueued {
        assert!(delivered.contains(id), "acknowledged enqueue {id} to {queue} was never delivered");
    }
    assert!(ledger.delivered_after_ack.is_empty(), "delivered after their ack: {:?}", ledger.delivered_after_ack);
    let ticks = ledger.leases.iter().filter(|lease| lease.0 == "ticks").count();
    assert!(ticks >= 2, "the schedule fired {ticks} times");

    // Limits: at the start of every lease, count the leases that surely covered that moment.
    let limited: Vec<_> = ledger.leases.iter().filter(|lease| lease.0 == "limited").collect();
    assert!(limited.len() as u64 >= CYCLES * 10, "too little work happened: {}", limited.len());
    for lease in &limited {
        let covering = |same_tenant: bool| {
            limited
                .iter()
                .filter(|other| (!same_tenant || other.1 == lease.1) && other.2 <= lease.2 && lease.2 < other.3)
                .count()
        };
        assert!(covering(true) <= 2, "tenant {:?} had {} in flight at {}", lease.1, covering(true), lease.2);
        assert!(covering(false) <= 6, "the queue had {} in flight at {}", covering(false), lease.2);
    }
    let mut by_tenant: HashMap<&Option<String>, Vec<i64>> = HashMap::new();
    for lease in &limited {
        by_tenant.entry(&lease.1).or_default().push(lease.2);
    }
    for (tenant, starts) in &mut by_tenant {
        starts.sort();
        for (i, first) in starts.iter().enumerate() {
            for (j, last) in starts.iter().enumerate().skip(i) {
                // Lease starts are whole milliseconds: a span may be 1 ms longer than it reads.
                let allowed = TENANT_BURST + ((last - first + 1) / TENANT_INTERVAL_MS) as u64;
                let leases = (j - i + 1) as u64;
                assert!(leases <= allowed, "{tenant:?} leased {leases} within {} ms", last - first);
            }
        }
    }
    eprintln!(
        "limits crash loop: {CYCLES} SIGKILLs, {} acknowledged enqueues, {} deliveries ({ticks} schedule firings)",
        ledger.enqueued.len(),
        ledger.leases.len()
    );
}

/// A key keeps the deadline of the window it was given at insert across a restart whose
/// configuration lengthens the window: it expires exactly then, on the clock the test moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_windows_stay_pinned_when_the_configuration_lengthens_them() {
    use common::in_process::{InProcessServer, ManualClock};
    let dir = tempfile::TempDir::new().unwrap();
    let clock = ManualClock::at(1_700_000_000_000);
    let server = InProcessServer::start(dir.path(), "[storage]\ndedup_window_ms = 1500\n", clock.clone()).await;
    let mut keyed = new_job("dedup", b"once");
    keyed.idempotency_key = Some("k".into());
    let first = enqueue(&mut server.client().await, keyed.clone()).await;
    server.stop().await;

    let server = InProcessServer::start(dir.path(), "[storage]\ndedup_window_ms = 86400000\n", clock.clone()).await;
    let mut client = server.client().await;
    clock.advance(1499);
    let hit = enqueue(&mut client, keyed.clone()).await;
    assert_eq!((hit.job_id.as_str(), hit.deduplicated), (first.job_id.as_str(), true), "expired early");
    clock.advance(1);
    let miss = enqueue(&mut client, keyed).await;
    assert!(!miss.deduplicated, "the new configuration lengthened a window pinned at insert");
    assert_ne!(miss.job_id, first.job_id);
    drop(client);
    server.stop().await;
}

/// A data directory belongs to one mode: a cluster node refuses a single node's log, and a
/// single node refuses a directory a cluster node used; neither touches what it finds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_of_the_other_mode_is_refused() {
    let server = stopped_server_with_jobs().await;
    server.write_config("[cluster]\nnode_id = 1\nlisten_addr = \"127.0.0.1:0\"\n");
    let stderr = refused_start(&server);
    assert!(stderr.contains("holds a single node's data"), "{stderr}");
    assert!(!server.dir().join("db").join("cluster").exists());

    server.write_config("");
    std::fs::create_dir(server.dir().join("db").join("cluster")).expect("a cluster directory");
    let stderr = refused_start(&server);
    assert!(stderr.contains("holds a cluster node's data"), "{stderr}");
}
