//! The official Rust client, `sepp-rs` 0.1.0, driving the real binary through its public API:
//! what existing users of that client rely on must keep working.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use common::*;
use sepp_rs::client::{EnqueueError, LeaseError, ReserveError, RetryDirective, SeppClient};
use sepp_rs::worker::{HandlerError, Worker};
use sepp_rs::{
    AtomicEnqueueError, DeadLetterCause, EnqueueRequest, JobRejection, Payload, Primitive, Priority, ReserveOptions,
};
use tokio::sync::mpsc;

const LEASE: Duration = Duration::from_secs(30);

fn request(queue: &str, job_type: &str) -> EnqueueRequest {
    EnqueueRequest::new(queue, job_type).expect("a valid request")
}

fn options(queues: &[&str]) -> ReserveOptions {
    ReserveOptions::new(queues.iter().map(|queue| queue.to_string()).collect::<Vec<_>>(), LEASE)
        .expect("valid options")
        .with_wait_timeout(Duration::ZERO)
}

async fn reserve_one(client: &SeppClient, queue: &str) -> sepp_rs::Job {
    let jobs = client
        .reserve(&options(&[queue]).with_wait_timeout(Duration::from_secs(5)))
        .await
        .expect("reserve")
        .expect("a job within 5 s");
    assert_eq!(jobs.len(), 1);
    jobs.into_iter().next().unwrap()
}

// ---- client calls --------------------------------------------------------------------------

#[tokio::test]
async fn enqueue_reserve_extend_ack_round_trip() {
    let server = TestServer::start("");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-round-trip");
    let scheduled = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    let job_request = request(&queue, "resize")
        .with_payload(Payload::new(b"{\"w\":10}".to_vec(), "application/json"))
        .with_priority(Priority::P7)
        .with_max_attempts(4)
        .with_custom_entry("tenant", "acme")
        .with_custom_entry("size", 3_i64)
        .with_custom_entry("ratio", 0.5)
        .with_custom_entry("urgent", true)
        .with_scheduled_at(scheduled);
    let ack = client.enqueue(job_request).await.expect("enqueue");
    assert!(!ack.deduplicated);

    let options = options(&[&queue])
        .with_wait_timeout(Duration::from_secs(2))
        .with_worker_id("rs-worker")
        .expect("worker id")
        .with_max_jobs(5);
    let before = SystemTime::now();
    let jobs = client.reserve(&options).await.expect("reserve").expect("one job");
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    let ctx = &job.ctx;
    assert_eq!(ctx.id.to_string(), ack.job_id.to_string());
    assert_eq!(ctx.queue, queue);
    assert_eq!(ctx.job_type, "resize");
    assert_eq!(ctx.priority, Priority::P7);
    assert_eq!((ctx.attempt, ctx.max_attempts), (1, 4));
    assert_eq!(ctx.scheduled_at, Some(scheduled));
    assert_eq!(ctx.custom.get("tenant"), Some(&Primitive::String("acme".into())));
    assert_eq!(ctx.custom.get("size"), Some(&Primitive::Int(3)));
    assert_eq!(ctx.custom.get("ratio"), Some(&Primitive::Double(0.5)));
    assert_eq!(ctx.custom.get("urgent"), Some(&Primitive::Bool(true)));
    let payload = job.payload.as_ref().expect("payload");
    assert_eq!((payload.data.as_slice(), payload.encoding.as_str()), (&b"{\"w\":10}"[..], "application/json"));
    assert!(ctx.lease_expires_at > before + Duration::from_secs(20));

    let extended = client.extend(ctx, Duration::from_secs(120)).await.expect("extend");
    assert!(extended > before + Duration::from_secs(100));
    let through_ctx = ctx.extend(Duration::from_secs(90)).await.expect("extend through the job context");
    assert!(through_ctx < extended, "an extension counts from now and may shorten the lease");

    client.ack(ctx).await.expect("ack");
    assert!(matches!(client.ack(ctx).await, Err(LeaseError::JobNotFound)));
    assert!(client.reserve(&options).await.expect("reserve").is_none(), "an empty reserve is None");
}

#[tokio::test]
async fn enqueue_batch_reports_every_rejection_kind_per_job() {
    let queue = unique("rs-main");
    let capped = unique("rs-capped");
    let server = TestServer::start(&format!(
        r#"
        [limits]
        max_queue_name_bytes = 40
        max_job_type_bytes = 10
        max_idempotency_key_bytes = 8
        max_custom_entries = 2
        max_custom_key_bytes = 6
        max_custom_total_bytes = 30
        max_schedule_horizon_ms = 60000
        [[queues]]
        name = "{queue}"
        allowed_job_types = ["ok", "small"]
        allowed_encodings = ["json"]
        max_payload_bytes = 8
        [[queues]]
        name = "{capped}"
        max_queue_depth = 1
        "#
    ));
    let client = server.sepp_rs_client().await;
    let far = SystemTime::now() + Duration::from_secs(3600);
    let long_queue = "q".repeat(41);
    let jobs = vec![
        request(&queue, "ok"),
        request(&queue, "ok").with_payload(Payload::new(vec![1; 9], "json")),
        request(&queue, "ok").with_payload(Payload::new(b"{}".to_vec(), "xml")),
        request(&queue, "nope"),
        request(&queue, "ok").with_custom_entry("a", 1_i64).with_custom_entry("b", 2_i64).with_custom_entry("c", 3_i64),
        request(&queue, "ok").with_custom_entry("toolong", "v"),
        request(&queue, "ok").with_custom_entry("k", "0123456789012345678901234567890"),
        request(&long_queue, "ok"),
        request(&queue, "much-too-long"),
        request(&queue, "ok").with_idempotency_key("123456789"),
        request(&queue, "ok").with_scheduled_at(far),
        request(&queue, "ok").with_payload(Payload::new(Vec::new(), "json")),
        request(&capped, "first"),
        request(&capped, "second"),
    ];
    let results = client.enqueue_batch(jobs).await.expect("batch");
    assert_eq!(results.len(), 14);
    assert!(results[0].is_ok(), "{:?}", results[0]);
    let rejection = |index: usize| results[index].as_ref().expect_err("a rejection").clone();
    assert!(matches!(rejection(1), JobRejection::PayloadTooLarge { limit: 8, actual: 9 }), "{:?}", rejection(1));
    match rejection(2) {
        JobRejection::EncodingNotAllowed { encoding, allowed } => {
            assert_eq!((encoding.as_str(), allowed), ("xml", vec!["json".to_string()]));
        }
        other => panic!("{other:?}"),
    }
    match rejection(3) {
        JobRejection::JobTypeNotAllowed { job_type, allowed } => {
            assert_eq!((job_type.as_str(), allowed), ("nope", vec!["ok".to_string(), "small".to_string()]));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(rejection(4), JobRejection::CustomEntriesTooMany { limit: 2, actual: 3 }), "{:?}", rejection(4));
    match rejection(5) {
        JobRejection::CustomKeyTooLong { key, limit, actual } => {
            assert_eq!((key.as_str(), limit, actual), ("toolong", 6, 7))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(rejection(6), JobRejection::CustomMapTooLarge { limit: 30, actual: 32 }), "{:?}", rejection(6));
    assert!(matches!(rejection(7), JobRejection::QueueNameTooLong { limit: 40, actual: 41 }), "{:?}", rejection(7));
    assert!(matches!(rejection(8), JobRejection::JobTypeNameTooLong { limit: 10, actual: 13 }), "{:?}", rejection(8));
    assert!(matches!(rejection(9), JobRejection::IdempotencyKeyTooLong { limit: 8, actual: 9 }), "{:?}", rejection(9));
    match rejection(10) {
        JobRejection::ScheduledTooFar { horizon, actual } => {
            assert_eq!(horizon, Duration::from_secs(60));
            let delta = actual.duration_since(far).unwrap_or_else(|error| error.duration());
            assert!(delta < Duration::from_millis(1), "actual {actual:?} vs requested {far:?}");
        }
        other => panic!("{other:?}"),
    }
    match rejection(11) {
        JobRejection::InvalidRequest { message } => {
            assert_eq!(message, "payload.data must not be empty")
        }
        other => panic!("{other:?}"),
    }
    assert!(results[12].is_ok(), "{:?}", results[12]);
    match rejection(13) {
        JobRejection::QueueFull { queue, limit } => {
            assert_eq!((queue.as_str(), limit), (capped.as_str(), 1))
        }
        other => panic!("{other:?}"),
    }
    // Rejections render readably.
    assert!(!rejection(13).to_string().is_empty());

    // The single-job call surfaces a rejection as an error.
    match client.enqueue(request(&queue, "nope")).await {
        Err(EnqueueError::Rejected(JobRejection::JobTypeNotAllowed { .. })) => {}
        other => panic!("expected a rejected enqueue, got {other:?}"),
    }
}

#[tokio::test]
async fn enqueue_atomic_reports_indices_or_commits_everything() {
    let queue = unique("rs-atomic");
    let server = TestServer::start(&format!("[[queues]]\nname = \"{queue}\"\nallowed_job_types = [\"ok\"]\n"));
    let client = server.sepp_rs_client().await;
    let bad = vec![request(&queue, "ok"), request(&queue, "bad"), request(&queue, "ok"), request(&queue, "worse")];
    match client.enqueue_atomic(bad).await {
        Err(AtomicEnqueueError::Validation(errors)) => {
            let indices: Vec<u32> = errors.iter().map(|error| error.index).collect();
            assert_eq!(indices, vec![1, 3]);
            assert!(errors.iter().all(|error| matches!(error.rejection, JobRejection::JobTypeNotAllowed { .. })));
        }
        other => panic!("expected a validation failure, got {other:?}"),
    }
    assert!(client.reserve(&options(&[&queue])).await.expect("reserve").is_none(), "nothing was written");

    let keyed = request(&queue, "ok").with_idempotency_key("same");
    let acks = client.enqueue_atomic(vec![request(&queue, "ok"), keyed.clone(), keyed]).await.expect("atomic success");
    assert_eq!(acks.len(), 3);
    assert!(!acks[0].deduplicated && !acks[1].deduplicated && acks[2].deduplicated);
    assert_eq!(acks[1].job_id, acks[2].job_id);
    let jobs = client.reserve(&options(&[&queue]).with_max_jobs(10)).await.expect("reserve").expect("jobs");
    assert_eq!(jobs.len(), 2);
}

#[tokio::test]
async fn nack_follows_each_retry_directive() {
    let server = TestServer::start("[storage]\nsweep_interval_ms = 50\n");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-nack");
    client.enqueue(request(&queue, "t").with_max_attempts(5)).await.expect("enqueue");

    let first = reserve_one(&client, &queue).await;
    assert_eq!(first.ctx.attempt, 1);
    assert!(!client.nack(&first.ctx, RetryDirective::Default, "try again").await.expect("nack default"));
    let second = reserve_one(&client, &queue).await;
    assert_eq!((second.ctx.id.as_str(), second.ctx.attempt), (first.ctx.id.as_str(), 2));

    assert!(
        !client.nack(&second.ctx, RetryDirective::After(Duration::from_millis(300)), "").await.expect("nack after")
    );
    assert!(client.reserve(&options(&[&queue])).await.expect("reserve").is_none(), "a delayed retry came back at once");
    // When the delay has passed (rpc_semantics.rs holds the server to the millisecond).
    let third = reserve_one(&client, &queue).await;
    assert_eq!(third.ctx.attempt, 3);

    assert!(client.nack(&third.ctx, RetryDirective::DeadLetter, "poison").await.expect("nack dead letter"));
    assert!(client.reserve(&options(&[&queue])).await.expect("reserve").is_none());
    assert!(matches!(client.nack(&third.ctx, RetryDirective::Default, "").await, Err(LeaseError::JobNotFound)));

    // The final attempt dead-letters whatever the directive.
    client.enqueue(request(&queue, "once").with_max_attempts(1)).await.expect("enqueue");
    let only = reserve_one(&client, &queue).await;
    assert!(client.nack(&only.ctx, RetryDirective::Default, "").await.expect("nack"));
}

#[tokio::test]
async fn lease_errors_distinguish_a_missing_job_from_a_stale_attempt() {
    let server = TestServer::start("[storage]\nsweep_interval_ms = 50\n");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-lease");
    client.enqueue(request(&queue, "t")).await.expect("enqueue");
    let short = ReserveOptions::new(vec![queue.clone()], Duration::from_millis(200)).expect("options");
    let stale = client.reserve(&short.with_wait_timeout(Duration::ZERO)).await.expect("reserve").expect("a job");
    let stale = &stale[0];
    // The lease runs out; the job comes back as attempt 2.
    let current = reserve_one(&client, &queue).await;
    assert_eq!((current.ctx.id.as_str(), current.ctx.attempt), (stale.ctx.id.as_str(), 2));
    assert!(matches!(client.ack(&stale.ctx).await, Err(LeaseError::AttemptMismatch)));
    assert!(matches!(client.extend(&stale.ctx, LEASE).await, Err(LeaseError::AttemptMismatch)));
    assert!(matches!(client.nack(&stale.ctx, RetryDirective::Default, "").await, Err(LeaseError::AttemptMismatch)));
    client.ack(&current.ctx).await.expect("ack the current attempt");
    assert!(matches!(client.ack(&current.ctx).await, Err(LeaseError::JobNotFound)));
    assert!(matches!(client.extend(&current.ctx, LEASE).await, Err(LeaseError::JobNotFound)));
}

#[tokio::test]
async fn dead_letters_drain_and_replay_through_to_enqueue_request() {
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 600000\n");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-drain");
    let other = unique("rs-drain-other");
    let original = request(&queue, "import")
        .with_payload(Payload::new(b"row".to_vec(), "text/csv"))
        .with_priority(Priority::P4)
        .with_max_attempts(2)
        .with_custom_entry("batch", 12_i64)
        .with_idempotency_key("import-12");
    let ack = client.enqueue(original).await.expect("enqueue");
    client.enqueue(request(&other, "x")).await.expect("enqueue elsewhere");
    let job = reserve_one(&client, &queue).await;
    assert!(client.nack(&job.ctx, RetryDirective::DeadLetter, "malformed row").await.expect("nack"));
    let job = reserve_one(&client, &other).await;
    assert!(client.nack(&job.ctx, RetryDirective::DeadLetter, "").await.expect("nack"));

    assert!(client.drain_dead_letters(Some(&queue), 0).await.expect("max 0").is_empty());
    let records = client.drain_dead_letters(Some(&queue), 10).await.expect("drain");
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record.queue, queue);
    assert_eq!(record.job_id.to_string(), ack.job_id.to_string());
    assert_eq!(record.job_type, "import");
    assert_eq!(record.priority, Priority::P4);
    assert_eq!(record.max_attempts, 2);
    assert_eq!(record.cause, DeadLetterCause::Rejected);
    assert_eq!(record.final_attempt, 1);
    assert_eq!(record.last_reason.as_deref(), Some("malformed row"));
    assert_eq!(record.custom.get("batch"), Some(&Primitive::Int(12)));
    let payload = record.payload.as_ref().expect("payload");
    assert_eq!((payload.data.as_slice(), payload.encoding.as_str()), (&b"row"[..], "text/csv"));
    assert!(record.failed_at <= SystemTime::now() + Duration::from_secs(1));

    // Replay: no idempotency key, so the dedup record of the original does not swallow it.
    let replayed = client.enqueue(record.to_enqueue_request()).await.expect("replay");
    assert!(!replayed.deduplicated);
    assert_ne!(replayed.job_id.to_string(), ack.job_id.to_string());
    let again = reserve_one(&client, &queue).await;
    assert_eq!(again.ctx.job_type, "import");
    assert_eq!((again.ctx.attempt, again.ctx.max_attempts, again.ctx.priority), (1, 2, Priority::P4));
    assert_eq!(again.ctx.custom.get("batch"), Some(&Primitive::Int(12)));
    assert_eq!(again.payload.as_ref().map(|payload| payload.data.clone()), Some(b"row".to_vec()));

    // Drained records are gone; the other queue's record is still there.
    assert!(client.drain_dead_letters(Some(&queue), 10).await.expect("drain").is_empty());
    let rest = client.drain_dead_letters(None, 10).await.expect("drain all");
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].queue, other);
}

#[tokio::test]
async fn server_info_decodes_every_field() {
    let server = TestServer::start("[limits]\nmax_reserve_batch = 17\nallowed_encodings = [\"json\"]\n");
    let client = server.sepp_rs_client().await;
    let info = client.get_server_info().await.expect("server info");
    assert_eq!(info.version, server_version());
    assert_eq!(info.supported_protocol_versions, vec!["v1".to_string()]);
    let skew = info.server_time.duration_since(SystemTime::now()).unwrap_or_else(|error| error.duration());
    assert!(skew < Duration::from_secs(5));
    assert!(info.restricts_encodings);
    assert_eq!(info.allowed_encodings, vec!["json".to_string()]);
    assert_eq!(info.max_reserve_batch, 17);
    assert_eq!(info.max_payload_bytes, 1_048_576);
    assert_eq!(info.max_schedule_horizon, Duration::from_secs(2_592_000));
    assert_eq!(info.max_wait_timeout, Duration::from_secs(300));
    assert_eq!(info.max_lease_duration, Duration::from_secs(300));
    assert!(!info.strict_queues);
    assert!(!info.dead_letter_retention_enabled);
}

#[tokio::test]
async fn strict_mode_surfaces_unknown_queues() {
    let declared = unique("rs-declared");
    let server = TestServer::start(&format!("[server]\nstrict_queues = true\n[[queues]]\nname = \"{declared}\"\n"));
    let client = server.sepp_rs_client().await;
    let stranger = unique("rs-stranger");
    match client.reserve(&options(&[&declared, &stranger])).await {
        Err(ReserveError::UnknownQueues(message)) => {
            assert!(message.contains(&stranger), "{message}")
        }
        other => panic!("expected UnknownQueues, got {other:?}"),
    }
    match client.enqueue(request(&stranger, "t")).await {
        Err(EnqueueError::Rejected(JobRejection::UnknownQueue { queue })) => {
            assert_eq!(queue, stranger)
        }
        other => panic!("expected an UnknownQueue rejection, got {other:?}"),
    }
    client.enqueue(request(&declared, "t")).await.expect("a declared queue works");
    assert!(client.reserve(&options(&[&declared])).await.expect("reserve").is_some());
}

// ---- the worker ----------------------------------------------------------------------------

/// Runs `worker` on its own task; returns the task.
fn spawn_worker(worker: Worker) -> tokio::task::JoinHandle<()> {
    tokio::spawn(worker.run())
}

/// Waits (bounded) for `run` to return after a shutdown.
async fn join_worker(task: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the worker's run did not return within 20 s of shutdown")
        .expect("the worker task panicked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_handlers_and_acks_their_jobs() {
    let server = TestServer::start("");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-worker");
    for index in 0..5_i64 {
        client.enqueue(request(&queue, "square").with_custom_entry("n", index)).await.expect("enqueue");
    }
    client.enqueue(request(&queue, "other").with_payload(Payload::new(b"x".to_vec(), "raw"))).await.expect("enqueue");
    let (done, mut finished) = mpsc::unbounded_channel::<String>();
    let square_done = done.clone();
    let worker = Worker::new(client.clone(), vec![queue.clone()], LEASE)
        .expect("worker")
        .with_wait_timeout(Duration::from_secs(1))
        .handle("square", move |_payload, ctx| {
            let done = square_done.clone();
            async move {
                let _ = done.send(format!("square {:?}", ctx.custom.get("n")));
                Ok(())
            }
        })
        .expect("register square")
        .with_catch_all_handler(move |payload, ctx| {
            let done = done.clone();
            async move {
                let _ = done.send(format!("catch-all {} {:?}", ctx.job_type, payload.map(|payload| payload.data)));
                Ok(())
            }
        });
    let shutdown = worker.shutdown_handle();
    let task = spawn_worker(worker);
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let next = tokio::time::timeout(Duration::from_secs(10), finished.recv()).await;
        seen.push(next.expect("the worker stalled").expect("channel open"));
    }
    shutdown.shutdown();
    assert!(shutdown.is_shutdown());
    join_worker(task).await;
    seen.sort();
    assert_eq!(seen[0], "catch-all other Some([120])");
    assert_eq!(seen[1..].len(), 5);
    // Every job was acked: nothing is left, not even in flight.
    let left = client.reserve(&options(&[&queue])).await.expect("reserve");
    assert!(left.is_none(), "jobs were left: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_errors_retry_later_or_dead_letter() {
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 600000\nsweep_interval_ms = 50\n");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-handler-errors");
    client.enqueue(request(&queue, "flaky").with_max_attempts(5)).await.expect("enqueue");
    client.enqueue(request(&queue, "doomed").with_max_attempts(5)).await.expect("enqueue");
    let (events, mut received) = mpsc::unbounded_channel::<(String, u32)>();
    let flaky_events = events.clone();
    let worker = Worker::new(client.clone(), vec![queue.clone()], LEASE)
        .expect("worker")
        .with_wait_timeout(Duration::from_secs(1))
        .handle("flaky", move |_payload, ctx| {
            let events = flaky_events.clone();
            async move {
                let _ = events.send(("flaky".into(), ctx.attempt));
                if ctx.attempt == 1 {
                    Err(HandlerError::retry_after("not yet", Duration::from_millis(400)))
                } else {
                    Ok(())
                }
            }
        })
        .expect("register flaky")
        .handle("doomed", move |_payload, ctx| {
            let events = events.clone();
            async move {
                let _ = events.send(("doomed".into(), ctx.attempt));
                Err(HandlerError::permanent("cannot ever work"))
            }
        })
        .expect("register doomed");
    let shutdown = worker.shutdown_handle();
    let task = spawn_worker(worker);
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let next = tokio::time::timeout(Duration::from_secs(10), received.recv()).await;
        seen.push(next.expect("the worker stalled").expect("channel open"));
    }
    shutdown.shutdown();
    join_worker(task).await;

    // The retry came back (that the server holds a nack's delay, rpc_semantics.rs shows).
    let flaky: Vec<_> = seen.iter().filter(|(kind, _)| kind == "flaky").collect();
    assert_eq!(flaky.iter().map(|(_, attempt)| *attempt).collect::<Vec<_>>(), vec![1, 2]);
    let doomed: Vec<_> = seen.iter().filter(|(kind, _)| kind == "doomed").collect();
    assert_eq!(doomed.len(), 1, "a permanent error is not retried");

    let records = client.drain_dead_letters(Some(&queue), 10).await.expect("drain");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].job_type, "doomed");
    assert_eq!(records[0].cause, DeadLetterCause::Rejected);
    assert!(records[0].last_reason.as_deref().is_some_and(|reason| reason.contains("cannot ever work")));
    assert!(client.reserve(&options(&[&queue])).await.expect("reserve").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_is_nacked_for_a_later_retry() {
    let server = TestServer::start(&watching_parked("[storage]\nsweep_interval_ms = 50\n"));
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-panic");
    let ack = client.enqueue(request(&queue, "explode")).await.expect("enqueue");
    let (events, mut received) = mpsc::unbounded_channel::<u32>();
    let worker = Worker::new(client.clone(), vec![queue.clone()], LEASE)
        .expect("worker")
        .with_wait_timeout(Duration::from_secs(1))
        .handle("explode", move |_payload, ctx| {
            let events = events.clone();
            async move {
                let _ = events.send(ctx.attempt);
                if ctx.attempt == 1 {
                    panic!("handler blew up on purpose");
                }
                Ok(())
            }
        })
        .expect("register");
    let shutdown = worker.shutdown_handle();
    let task = spawn_worker(worker);
    let first = tokio::time::timeout(Duration::from_secs(10), received.recv()).await.expect("handler ran");
    assert_eq!(first, Some(1));
    // The panic is nacked with a backoff (2^1 s), then the job comes back as attempt 2.
    let second = tokio::time::timeout(Duration::from_secs(10), received.recv()).await.expect("redelivered");
    assert_eq!(second, Some(2));
    if !is_reference() {
        // By a nack, not by the end of its lease.
        let port = server.prometheus_port();
        assert_eq!(scrape_metric(port, "sepp_jobs_nacked_total", &[("queue", &queue)]).await, Some(1.0));
        let expired = scrape_metric(port, "sepp_sweep_lease_redeliveries_total", &[("queue", &queue)]).await;
        assert_eq!(expired.unwrap_or(0.0), 0.0, "redelivered by lease expiry");
    }
    shutdown.shutdown();
    join_worker(task).await;
    assert!(client.reserve(&options(&[&queue])).await.expect("reserve").is_none(), "attempt 2 was acked");
    let _ = ack;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_extend_keeps_a_slow_job_past_a_short_lease() {
    let server = TestServer::start("[storage]\nsweep_interval_ms = 20\n");
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-auto-extend");
    client.enqueue(request(&queue, "slow")).await.expect("enqueue");
    let calls = Arc::new(AtomicU32::new(0));
    let handler_calls = calls.clone();
    let (done, mut finished) = mpsc::unbounded_channel::<u32>();
    let worker = Worker::new(client.clone(), vec![queue.clone()], Duration::from_millis(500))
        .expect("worker")
        .with_wait_timeout(Duration::from_secs(1))
        .with_auto_extend()
        .handle("slow", move |_payload, ctx| {
            let calls = handler_calls.clone();
            let done = done.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                // The work itself: three times the lease.
                tokio::time::sleep(Duration::from_millis(1500)).await;
                let _ = done.send(ctx.attempt);
                Ok(())
            }
        })
        .expect("register");
    let shutdown = worker.shutdown_handle();
    let task = spawn_worker(worker);
    let attempt = tokio::time::timeout(Duration::from_secs(10), finished.recv()).await.expect("handler finished");
    assert_eq!(attempt, Some(1));
    shutdown.shutdown();
    join_worker(task).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the lease expired and the job was redelivered");
    // The ack landed: nothing comes back, even after a lease's worth of time.
    let wait = options(&[&queue]).with_wait_timeout(Duration::from_millis(1_000));
    assert!(client.reserve(&wait).await.expect("reserve").is_none(), "the job was not acked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_in_flight_jobs_then_run_returns() {
    let server = TestServer::start(WATCH_PARKED);
    let client = server.sepp_rs_client().await;
    let queue = unique("rs-shutdown");
    client.enqueue(request(&queue, "hold")).await.expect("enqueue");
    let (started, mut started_rx) = mpsc::unbounded_channel::<()>();
    let release = Arc::new(tokio::sync::Notify::new());
    let handler_release = release.clone();
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handler_finished = finished.clone();
    let worker = Worker::new(client.clone(), vec![queue.clone()], LEASE)
        .expect("worker")
        .with_wait_timeout(Duration::from_secs(30))
        .handle("hold", move |_payload, _ctx| {
            let started = started.clone();
            let release = handler_release.clone();
            let finished = handler_finished.clone();
            async move {
                let _ = started.send(());
                release.notified().await;
                finished.store(true, Ordering::SeqCst);
                Ok(())
            }
        })
        .expect("register");
    let shutdown = worker.shutdown_handle();
    let task = spawn_worker(worker);
    tokio::time::timeout(Duration::from_secs(10), started_rx.recv()).await.expect("the handler started");

    shutdown.shutdown();
    release.notify_one();
    join_worker(task).await;
    // `run` returned only once the handler had finished (and its job was acked).
    assert!(finished.load(Ordering::SeqCst), "run returned before its in-flight job finished");
    assert!(client.reserve(&options(&[&queue])).await.expect("reserve").is_none(), "the drained job was acked");

    // A worker with nothing to do stops promptly, its long-poll cancelled.
    let idle = Worker::new(client.clone(), vec![queue.clone()], LEASE)
        .expect("worker")
        .with_wait_timeout(Duration::from_secs(30))
        .with_catch_all_handler(|_payload, _ctx| async { Ok(()) });
    let idle_shutdown = idle.shutdown_handle();
    let idle_task = spawn_worker(idle);
    // Its long poll (30 s, past `join_worker`'s bound) is parked before the shutdown.
    server.wait_parked(1).await;
    idle_shutdown.shutdown();
    join_worker(idle_task).await;
    let _ = HashMap::<String, Primitive>::new();
}
