//! What each `sepp.v1.QueueService` RPC does with valid input (docs/protocol.md), through a
//! raw tonic client against the real binary: fields, defaults, ordering, long-poll, leases,
//! retries, dead letters, dedup, depth caps and clamping. Rules that turn on a time (a wait's
//! deadline, a schedule, a retry delay, a retention or dedup window) run on a server in this
//! process on a clock the test moves (`common::in_process`).

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::in_process::{InProcessServer, ManualClock};
use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;

use pb::job_rejection::Reason;

const LEASE_MS: u64 = 30_000;

/// How long a test waits for an answer that must come (a bound for a failure, not a timing).
const WAIT: Duration = Duration::from_secs(20);

/// The longest wait a Reserve may ask for by default (`limits.max_wait_timeout_ms`): a reserve
/// that asks for it and is answered within [`WAIT`] was woken, not timed out.
const LONGEST_WAIT_MS: u64 = 300_000;

/// When the in-process servers' clock starts.
const EPOCH_MS: i64 = 1_700_000_000_000;

#[tokio::test]
async fn a_job_travels_enqueue_reserve_extend_ack_with_every_field() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("round-trip");
    let mut request = with_payload(job(&queue, "send-mail"), b"{\"to\":\"a@b\"}", "application/json");
    request.priority = Some(7);
    request.max_attempts = Some(5);
    request.trace_context = Some(pb::TraceContext {
        traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        tracestate: Some("vendor=1".into()),
    });
    request.custom = HashMap::from([
        ("s".to_string(), string_value("text")),
        ("i".to_string(), pb::PrimitiveValue { value: Some(pb::primitive_value::Value::IntValue(-3)) }),
        ("d".to_string(), pb::PrimitiveValue { value: Some(pb::primitive_value::Value::DoubleValue(2.5)) }),
        ("b".to_string(), pb::PrimitiveValue { value: Some(pb::primitive_value::Value::BoolValue(true)) }),
    ]);
    let past = prost_types::Timestamp { seconds: 1_600_000_000, nanos: 0 };
    request.scheduled_at = Some(past);
    let before = now_ms();
    let id = enqueue_one(&mut client, request.clone()).await;
    assert_eq!(id.len(), 36);
    assert_eq!(id, id.to_lowercase(), "job ids are lowercase");
    assert_eq!(uuid::Uuid::parse_str(&id).expect("a UUID").get_version_num(), 4);

    let mut reserve_request = reserve(&[&queue], 10_000);
    reserve_request.worker_id = Some("worker-1".into());
    reserve_request.max_jobs = Some(10);
    let jobs = client.reserve(reserve_request).await.expect("reserve").into_inner().jobs;
    let after = now_ms();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.id, id);
    assert_eq!(job.queue, queue);
    assert_eq!(job.job_type, "send-mail");
    assert_eq!(job.payload, request.payload);
    assert_eq!(job.priority, 7);
    assert_eq!(job.trace_context, request.trace_context, "tracing is off, so the stored context comes back");
    assert_eq!(job.attempt, 1);
    assert_eq!(job.max_attempts, 5);
    assert_eq!(job.custom, request.custom);
    assert_eq!(job.scheduled_at, Some(past), "a past scheduled_at is kept and the job is ready at once");
    let enqueued_at = timestamp_ms(job.enqueued_at.as_ref().expect("enqueued_at"));
    assert!(before - 1000 <= enqueued_at && enqueued_at <= after + 1000);
    let lease = timestamp_ms(job.lease_expires_at.as_ref().expect("lease_expires_at"));
    assert!(lease >= before + 9_000 && lease <= after + 11_000, "lease {lease} not ~10 s after {before}");

    let extended = client.extend(extend(&id, 1, 60_000)).await.expect("extend").into_inner();
    assert_eq!(extended.job_id, id);
    let new_lease = timestamp_ms(extended.lease_expires_at.as_ref().expect("new lease"));
    assert!(new_lease > lease + 40_000, "extend counts from now: {new_lease} vs {lease}");
    // Extending can shorten a lease, too.
    let shortened = client.extend(extend(&id, 1, 5_000)).await.expect("extend").into_inner();
    assert!(timestamp_ms(shortened.lease_expires_at.as_ref().unwrap()) < new_lease);

    let mut ack_request = ack(&id, 1);
    ack_request.worker_id = Some("worker-1".into());
    assert_eq!(client.ack(ack_request).await.expect("ack").into_inner().job_id, id);
    assert_status(client.ack(ack(&id, 1)).await, Code::NotFound, "job not found");
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty(), "an acked job is gone");
}

#[tokio::test]
async fn unset_fields_take_the_queue_defaults() {
    let server = TestServer::start(
        "[limits]\ndefault_priority = 3\ndefault_max_attempts = 4\n[[queues]]\nname = \"tuned\"\ndefault_priority = 6\nmax_attempts_ceiling = 10\n",
    );
    let mut client = server.raw_client().await;
    let queue = unique("defaults");
    enqueue_one(&mut client, job(&queue, "t")).await;
    let delivered = &reserve_now(&mut client, &[&queue], LEASE_MS).await[0];
    assert_eq!((delivered.priority, delivered.max_attempts), (3, 4));
    assert_eq!(delivered.payload, None);
    assert_eq!(delivered.scheduled_at, None);

    let mut clamped = job("tuned", "t");
    clamped.max_attempts = Some(500);
    enqueue_one(&mut client, clamped).await;
    let delivered = &reserve_now(&mut client, &["tuned"], LEASE_MS).await[0];
    assert_eq!((delivered.priority, delivered.max_attempts), (6, 10), "max_attempts is clamped to the ceiling");
}

#[tokio::test]
async fn reserve_takes_priority_then_fifo_and_walks_queues_in_order() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let first = unique("first");
    let second = unique("second");
    let mut ids = Vec::new();
    for (queue, priority) in [(&second, 0), (&first, 1), (&first, 5), (&first, 1)] {
        let mut request = job(queue, "t");
        request.priority = Some(priority);
        ids.push(enqueue_one(&mut client, request).await);
        if is_reference() {
            // 0.1 orders one enqueue millisecond by random id (docs/operations.md#what-differs):
            // separate milliseconds.
            common::next_millisecond().await;
        }
    }
    let mut request = reserve(&[&first, &second], LEASE_MS);
    request.max_jobs = Some(10);
    let jobs = client.reserve(request).await.expect("reserve").into_inner().jobs;
    let order: Vec<&str> = jobs.iter().map(|job| job.id.as_str()).collect();
    assert_eq!(order, vec![ids[2].as_str(), ids[1].as_str(), ids[3].as_str(), ids[0].as_str()]);
    assert_eq!(jobs[3].queue, second);
}

#[tokio::test]
async fn a_batch_comes_out_in_submission_order() {
    if is_reference() {
        // docs/protocol.md#ordering: 0.1 orders jobs of one enqueue millisecond by random id.
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("batch-fifo");
    let jobs: Vec<_> = (0..20).map(|index| job(&queue, &format!("job-{index:02}"))).collect();
    let response = client.enqueue_batch(batch(jobs)).await.expect("batch").into_inner();
    let ids: Vec<String> = results(response).into_iter().map(|result| result.expect("accepted").job_id).collect();
    let mut request = reserve(&[&queue], LEASE_MS);
    request.max_jobs = Some(50);
    let delivered: Vec<String> =
        client.reserve(request).await.expect("reserve").into_inner().jobs.into_iter().map(|job| job.id).collect();
    assert_eq!(delivered, ids);
}

#[tokio::test]
async fn a_parked_reserve_wakes_when_a_job_arrives() {
    let server = TestServer::start(&watching_parked(""));
    let mut client = server.raw_client().await;
    let queue = unique("long-poll");
    let mut parked_client = client.clone();
    let mut request = reserve(&[&queue], LEASE_MS);
    request.wait_timeout = Some(ms(LONGEST_WAIT_MS));
    let parked = tokio::spawn(async move { parked_client.reserve(request).await });
    server.wait_parked(1).await;
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    let answered = tokio::time::timeout(WAIT, parked).await.expect("the enqueue wakes the parked reserve");
    let jobs = answered.expect("task").expect("reserve").into_inner().jobs;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].id, id);
}

#[tokio::test]
async fn reserve_without_wait_returns_at_once_and_a_wait_ends_empty_at_its_deadline() {
    // On a clock the test moves: the wait ends when the clock says, not when the machine does.
    let dir = tempfile::TempDir::new().unwrap();
    let clock = ManualClock::at(EPOCH_MS);
    let server = InProcessServer::start(dir.path(), WATCH_PARKED, clock.clone()).await;
    let mut client = server.client().await;
    let queue = unique("empty");
    // Without a wait the answer comes on a clock that stands still.
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty());
    let mut request = reserve(&[&queue], LEASE_MS);
    request.wait_timeout = Some(ms(300));
    let mut parked_client = client.clone();
    let parked = tokio::spawn(async move { parked_client.reserve(request).await });
    server.wait_parked(1).await;
    clock.advance(299);
    // A later command: the committer has seen the clock at 299 ms into the wait.
    assert!(reserve_now(&mut client, &[&unique("other")], LEASE_MS).await.is_empty());
    assert_eq!(server.reserves_waiting().await, 1, "the wait ended before its deadline");
    assert!(!parked.is_finished(), "the wait ended before its deadline");
    clock.advance(1);
    let answered = tokio::time::timeout(WAIT, parked).await.expect("the wait ends at its deadline");
    assert!(answered.expect("task").expect("reserve").into_inner().jobs.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn an_expired_lease_redelivers_the_job_as_the_next_attempt() {
    let server = TestServer::start("[storage]\nsweep_interval_ms = 50\n");
    let mut client = server.raw_client().await;
    let queue = unique("expiry");
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    let first = reserve_now(&mut client, &[&queue], 200).await;
    assert_eq!(first[0].attempt, 1);
    let mut request = reserve(&[&queue], LEASE_MS);
    request.wait_timeout = Some(ms(5_000));
    let again = client.reserve(request).await.expect("reserve").into_inner().jobs;
    assert_eq!(again.len(), 1, "the job was not redelivered after its lease expired");
    assert_eq!((again[0].id.as_str(), again[0].attempt), (id.as_str(), 2));
    assert_status(client.ack(ack(&id, 1)).await, Code::FailedPrecondition, "attempt mismatch");
    client.ack(ack(&id, 2)).await.expect("ack the second attempt");
}

#[tokio::test]
async fn nack_retries_delays_and_dead_letters_and_drain_returns_the_records() {
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 600000\nsweep_interval_ms = 50\n");
    let mut client = server.raw_client().await;
    let queue = unique("nack");
    use pb::nack_retry::Strategy;

    // Default retry (policy base 0) puts the job straight back as attempt 2.
    let mut request = job(&queue, "t");
    request.max_attempts = Some(3);
    let id = enqueue_one(&mut client, request).await;
    reserve_now(&mut client, &[&queue], LEASE_MS).await;
    let response = client.nack(nack(&id, 1, Some(Strategy::Default(())))).await.expect("nack").into_inner();
    assert_eq!((response.job_id.as_str(), response.dead_lettered), (id.as_str(), false));
    let jobs = reserve_now(&mut client, &[&queue], LEASE_MS).await;
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), (id.as_str(), 2));

    // An explicit delay schedules the retry.
    let response = client.nack(nack(&id, 2, Some(Strategy::Delay(ms(300))))).await.expect("nack").into_inner();
    assert!(!response.dead_lettered);
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty(), "a delayed retry came back at once");
    let mut wait = reserve(&[&queue], LEASE_MS);
    wait.wait_timeout = Some(ms(5_000));
    let jobs = client.reserve(wait).await.expect("reserve").into_inner().jobs;
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), (id.as_str(), 3));

    // The final attempt is exhausted even with an explicit delay.
    let mut last = nack(&id, 3, Some(Strategy::Delay(ms(10))));
    last.reason = Some("gave up".into());
    assert!(client.nack(last).await.expect("nack").into_inner().dead_lettered);

    // A dead_letter strategy rejects on the first attempt.
    let rejected = with_payload(job(&queue, "r"), b"body", "text/plain");
    let rejected_id = enqueue_one(&mut client, rejected).await;
    reserve_now(&mut client, &[&queue], LEASE_MS).await;
    let mut reject = nack(&rejected_id, 1, Some(Strategy::DeadLetter(())));
    reject.reason = Some("bad input".into());
    assert!(client.nack(reject).await.expect("nack").into_inner().dead_lettered);
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty());

    // Drain: oldest first, one per call by default, removed as they are returned.
    let drain = |max: Option<u32>| pb::DrainDeadLettersRequest { queue: Some(queue.clone()), max };
    let first = client.drain_dead_letters(drain(None)).await.expect("drain").into_inner().records;
    assert_eq!(first.len(), 1);
    let record = &first[0];
    let dead = record.job.as_ref().expect("record job");
    assert_eq!((dead.id.as_str(), dead.queue.as_str()), (id.as_str(), queue.as_str()));
    assert_eq!(record.cause, pb::DeadLetterCause::AttemptsExhausted as i32);
    assert_eq!(record.final_attempt, 3);
    assert_eq!(dead.attempt, 3);
    assert_eq!(record.last_reason.as_deref(), Some("gave up"));
    assert_eq!(dead.lease_expires_at.as_ref().map(timestamp_ms), Some(0));
    assert!(record.failed_at.is_some());

    let rest = client.drain_dead_letters(drain(Some(10))).await.expect("drain").into_inner().records;
    assert_eq!(rest.len(), 1);
    let record = &rest[0];
    let dead = record.job.as_ref().expect("record job");
    assert_eq!(dead.id, rejected_id);
    assert_eq!(record.cause, pb::DeadLetterCause::Rejected as i32);
    assert_eq!(record.final_attempt, 1);
    assert_eq!(record.last_reason.as_deref(), Some("bad input"));
    assert_eq!(dead.payload, Some(pb::Payload { data: b"body".to_vec(), encoding: "text/plain".into() }));
    assert!(client.drain_dead_letters(drain(Some(10))).await.expect("drain").into_inner().records.is_empty());
}

#[tokio::test]
async fn without_retention_dead_letters_are_dropped_and_drain_is_empty() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("no-retention");
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    reserve_now(&mut client, &[&queue], LEASE_MS).await;
    assert!(
        client
            .nack(nack(&id, 1, Some(pb::nack_retry::Strategy::DeadLetter(()))))
            .await
            .expect("nack")
            .into_inner()
            .dead_lettered
    );
    let drained = client
        .drain_dead_letters(pb::DrainDeadLettersRequest { queue: None, max: Some(100) })
        .await
        .expect("drain")
        .into_inner();
    assert!(drained.records.is_empty());
}

#[tokio::test]
async fn an_idempotency_key_deduplicates_within_its_queue() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("dedup");
    let other = unique("dedup-other");
    let keyed = |queue: &str| {
        let mut request = job(queue, "t");
        request.idempotency_key = Some("order-42".into());
        request
    };
    let first = results(client.enqueue_batch(batch(vec![keyed(&queue)])).await.expect("enqueue").into_inner());
    let first = first[0].clone().expect("accepted");
    assert!(!first.deduplicated);
    let again =
        results(client.enqueue_batch(batch(vec![keyed(&queue), keyed(&other)])).await.expect("enqueue").into_inner());
    let again_same = again[0].clone().expect("accepted");
    assert_eq!((again_same.job_id.as_str(), again_same.deduplicated), (first.job_id.as_str(), true));
    let elsewhere = again[1].clone().expect("accepted");
    assert!(!elsewhere.deduplicated, "dedup is scoped per queue");
    assert_ne!(elsewhere.job_id, first.job_id);
}

#[tokio::test]
async fn a_full_queue_rejects_new_jobs() {
    let server = TestServer::start("[[queues]]\nname = \"capped\"\nmax_queue_depth = 2\n");
    let mut client = server.raw_client().await;
    let response = client
        .enqueue_batch(batch(vec![job("capped", "a"), job("capped", "b"), job("capped", "c")]))
        .await
        .expect("enqueue")
        .into_inner();
    let results = results(response);
    assert!(results[0].is_ok() && results[1].is_ok());
    assert_eq!(results[2], Err(Reason::QueueFull(pb::QueueFull { queue: "capped".into(), limit: 2 })));

    let response = client.enqueue_atomic(batch(vec![job("capped", "d")])).await.expect("atomic").into_inner();
    let Some(pb::enqueue_atomic_response::Outcome::Rejection(failure)) = response.outcome else {
        panic!("expected a rejection, got {:?}", response.outcome);
    };
    assert_eq!(failure.errors.len(), 1);
    assert_eq!(failure.errors[0].index, 0);
    assert_eq!(
        failure.errors[0].rejection.as_ref().and_then(|rejection| rejection.reason.clone()),
        Some(Reason::QueueFull(pb::QueueFull { queue: "capped".into(), limit: 2 }))
    );
}

#[tokio::test]
async fn reserve_and_extend_clamp_to_the_configured_maxima() {
    let server = TestServer::start(
        "[limits]\nmax_lease_duration_ms = 5000\nmax_reserve_batch = 2\nmax_wait_timeout_ms = 300\n\
         [[queues]]\nname = \"brief\"\nmax_lease_duration_ms = 1000\n",
    );
    let mut client = server.raw_client().await;
    let queue = unique("clamped");
    for index in 0..3 {
        enqueue_one(&mut client, job(&queue, &format!("t{index}"))).await;
    }
    // max_jobs is clamped to max_reserve_batch, the lease to max_lease_duration.
    let mut request = reserve(&[&queue], 600_000);
    request.max_jobs = Some(100);
    let before = now_ms();
    let jobs = client.reserve(request).await.expect("reserve").into_inner().jobs;
    let after = now_ms();
    assert_eq!(jobs.len(), 2);
    let lease = timestamp_ms(jobs[0].lease_expires_at.as_ref().unwrap());
    assert!(lease >= before + 4_000 && lease <= after + 5_000, "lease {lease} not clamped to 5 s");
    // Extend clamps to the job's queue maximum as well.
    let extended = client.extend(extend(&jobs[0].id, 1, 600_000)).await.expect("extend").into_inner();
    assert!(timestamp_ms(extended.lease_expires_at.as_ref().unwrap()) <= now_ms() + 5_000);

    // The smallest maximum among the listed queues wins.
    enqueue_one(&mut client, job("brief", "t")).await;
    let before = now_ms();
    let jobs = reserve_now(&mut client, &["brief", &queue], 600_000).await;
    let lease = timestamp_ms(jobs[0].lease_expires_at.as_ref().unwrap());
    assert!(lease <= now_ms() + 1_000 && lease >= before + 500, "lease {lease} not clamped to 1 s");

    // The wait is clamped to max_wait_timeout: the hour asked for would outlast the test's wait.
    let mut request = reserve(&[&unique("nothing")], 1_000);
    request.wait_timeout = Some(ms(3_600_000));
    let answered = tokio::time::timeout(WAIT, client.reserve(request)).await.expect("the wait is cut to 300 ms");
    assert!(answered.expect("reserve").into_inner().jobs.is_empty());
}

#[tokio::test]
async fn a_scheduled_job_becomes_ready_at_its_time() {
    let dir = tempfile::TempDir::new().unwrap();
    let clock = ManualClock::at(EPOCH_MS);
    let server = InProcessServer::start(dir.path(), "", clock.clone()).await;
    let mut client = server.client().await;
    let queue = unique("scheduled");
    let due = EPOCH_MS + 400;
    let mut request = job(&queue, "later");
    request.scheduled_at =
        Some(prost_types::Timestamp { seconds: due / 1000, nanos: ((due % 1000) * 1_000_000) as i32 });
    let id = enqueue_one(&mut client, request).await;
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty(), "a future job was ready at once");
    clock.advance(399);
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty(), "delivered before its time");
    clock.advance(1);
    let jobs = reserve_now(&mut client, &[&queue], LEASE_MS).await;
    assert_eq!(jobs.len(), 1, "not delivered at its time");
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), (id.as_str(), 1));
    assert_eq!(jobs[0].scheduled_at.as_ref().map(timestamp_ms), Some(due));
    server.stop().await;
}

#[tokio::test]
async fn a_default_nack_follows_the_queue_retry_policy_with_jitter() {
    let dir = tempfile::TempDir::new().unwrap();
    let clock = ManualClock::at(EPOCH_MS);
    let server = InProcessServer::start(dir.path(), "[limits]\nretry_delay_ms = 400\n", clock.clone()).await;
    let mut client = server.client().await;
    let queue = unique("retry-policy");
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    reserve_now(&mut client, &[&queue], LEASE_MS).await;
    assert!(!client.nack(nack(&id, 1, None)).await.expect("nack").into_inner().dead_lettered);
    // 400 ms less up to 25 % jitter: not before 300 ms, at the latest at 400 ms.
    clock.advance(299);
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty(), "retried before 300 ms");
    clock.advance(101);
    let jobs = reserve_now(&mut client, &[&queue], LEASE_MS).await;
    assert_eq!(jobs.len(), 1, "not retried by 400 ms");
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), (id.as_str(), 2));
    server.stop().await;
}

#[tokio::test]
async fn an_atomic_batch_that_overflows_a_queue_lists_every_job_aimed_at_it() {
    let server = TestServer::start("[[queues]]\nname = \"small\"\nmax_queue_depth = 2\n");
    let mut client = server.raw_client().await;
    let elsewhere = unique("elsewhere");
    let jobs = vec![job("small", "a"), job(&elsewhere, "b"), job("small", "c"), job("small", "d")];
    let response = client.enqueue_atomic(batch(jobs)).await.expect("atomic").into_inner();
    let Some(pb::enqueue_atomic_response::Outcome::Rejection(failure)) = response.outcome else {
        panic!("expected a rejection, got {:?}", response.outcome);
    };
    let full = Reason::QueueFull(pb::QueueFull { queue: "small".into(), limit: 2 });
    let listed: Vec<(u32, Option<Reason>)> = failure
        .errors
        .into_iter()
        .map(|error| (error.index, error.rejection.and_then(|rejection| rejection.reason)))
        .collect();
    assert_eq!(listed, vec![(0, Some(full.clone())), (2, Some(full.clone())), (3, Some(full))]);
    // Nothing was committed, not even the job for the other queue.
    assert!(reserve_now(&mut client, &[&elsewhere, "small"], LEASE_MS).await.is_empty());
}

#[tokio::test]
async fn a_lease_running_out_on_the_final_attempt_dead_letters_the_job() {
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 600000\nsweep_interval_ms = 20\n");
    let mut client = server.raw_client().await;
    let queue = unique("lease-exhausted");
    let mut request = job(&queue, "t");
    request.max_attempts = Some(1);
    let id = enqueue_one(&mut client, request).await;
    assert_eq!(reserve_now(&mut client, &[&queue], 100).await.len(), 1);
    let drain = || pb::DrainDeadLettersRequest { queue: Some(queue.clone()), max: Some(10) };
    let records = eventually("the lease-expired dead letter", Duration::from_secs(5), || {
        let mut client = client.clone();
        let request = drain();
        async move {
            let records = client.drain_dead_letters(request).await.expect("drain").into_inner().records;
            (!records.is_empty()).then_some(records)
        }
    })
    .await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].job.as_ref().unwrap().id, id);
    assert_eq!(records[0].cause, pb::DeadLetterCause::LeaseExpired as i32);
    assert_eq!(records[0].final_attempt, 1);
    assert_eq!(records[0].last_reason, None);
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty());
}

#[tokio::test]
async fn dead_letters_are_swept_after_their_retention() {
    let dir = tempfile::TempDir::new().unwrap();
    let clock = ManualClock::at(EPOCH_MS);
    let server = InProcessServer::start(dir.path(), "[storage]\ndead_letter_retention_ms = 300\n", clock.clone()).await;
    let mut client = server.client().await;
    let queue = unique("retention");
    for _ in 0..2 {
        let id = enqueue_one(&mut client, job(&queue, "t")).await;
        reserve_now(&mut client, &[&queue], LEASE_MS).await;
        let dead_letter = nack(&id, 1, Some(pb::nack_retry::Strategy::DeadLetter(())));
        assert!(client.nack(dead_letter).await.expect("nack").into_inner().dead_lettered);
    }
    let drain = || pb::DrainDeadLettersRequest { queue: Some(queue.clone()), max: Some(1) };
    // Within the retention a record is kept (draining one of the two proves it) ...
    let kept = client.drain_dead_letters(drain()).await.expect("drain").into_inner().records;
    assert_eq!(kept.len(), 1, "a dead letter was not kept");
    // ... and once it has passed, the other one is gone.
    clock.advance(300);
    let left = client.drain_dead_letters(drain()).await.expect("drain").into_inner().records;
    assert!(left.is_empty(), "a dead letter outlived its 300 ms retention: {left:?}");
    server.stop().await;
}

#[tokio::test]
async fn an_idempotency_key_expires_with_its_window() {
    let dir = tempfile::TempDir::new().unwrap();
    let clock = ManualClock::at(EPOCH_MS);
    let server = InProcessServer::start(dir.path(), "[storage]\ndedup_window_ms = 300\n", clock.clone()).await;
    let mut client = server.client().await;
    let queue = unique("dedup-window");
    let keyed = || {
        let mut request = job(&queue, "t");
        request.idempotency_key = Some("once".into());
        batch(vec![request])
    };
    let first = results(client.enqueue_batch(keyed()).await.expect("enqueue").into_inner());
    let first = first[0].clone().expect("accepted");
    clock.advance(299);
    let again = results(client.enqueue_batch(keyed()).await.expect("enqueue").into_inner());
    let again = again[0].clone().expect("accepted");
    assert!(again.deduplicated, "a hit inside the window");
    assert_eq!(again.job_id, first.job_id);
    clock.advance(1);
    let fresh = results(client.enqueue_batch(keyed()).await.expect("enqueue").into_inner());
    let fresh = fresh[0].clone().expect("accepted");
    assert!(!fresh.deduplicated, "the window did not end at 300 ms");
    assert_ne!(fresh.job_id, first.job_id);
    server.stop().await;
}

#[tokio::test]
async fn a_nack_delay_is_clamped_to_the_schedule_horizon() {
    let server = TestServer::start(
        "[storage]\nsweep_interval_ms = 20\n[[queues]]\nname = \"near\"\nmax_schedule_horizon_ms = 300\n",
    );
    let mut client = server.raw_client().await;
    let id = enqueue_one(&mut client, job("near", "t")).await;
    reserve_now(&mut client, &["near"], LEASE_MS).await;
    let an_hour = pb::nack_retry::Strategy::Delay(ms(3_600_000));
    assert!(!client.nack(nack(&id, 1, Some(an_hour))).await.expect("nack").into_inner().dead_lettered);
    let mut wait = reserve(&["near"], LEASE_MS);
    wait.wait_timeout = Some(ms(5_000));
    let jobs = client.reserve(wait).await.expect("reserve").into_inner().jobs;
    assert_eq!(jobs.len(), 1, "an hour-long nack delay was not clamped to the 300 ms horizon");
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), (id.as_str(), 2));
}

#[tokio::test]
async fn an_empty_encoding_list_refuses_payloads_but_not_jobs_without_one() {
    let server = TestServer::start("[[queues]]\nname = \"bare\"\nallowed_encodings = []\n");
    let mut client = server.raw_client().await;
    let response = client
        .enqueue_batch(batch(vec![with_payload(job("bare", "t"), b"x", "raw"), job("bare", "t")]))
        .await
        .expect("enqueue")
        .into_inner();
    let results = results(response);
    assert_eq!(
        results[0],
        Err(Reason::EncodingNotAllowed(pb::EncodingNotAllowed { encoding: "raw".into(), allowed: vec![] }))
    );
    assert!(results[1].is_ok());
}

#[tokio::test]
async fn a_reserve_parked_on_several_queues_wakes_for_any_of_them() {
    let server = TestServer::start(&watching_parked(""));
    let mut client = server.raw_client().await;
    let first = unique("first");
    let second = unique("second");
    let mut request = reserve(&[&first, &second], LEASE_MS);
    request.wait_timeout = Some(ms(LONGEST_WAIT_MS));
    let mut parked_client = client.clone();
    let parked = tokio::spawn(async move { parked_client.reserve(request).await });
    server.wait_parked(1).await;
    let id = enqueue_one(&mut client, job(&second, "t")).await;
    let answered = tokio::time::timeout(WAIT, parked).await.expect("the enqueue wakes the parked reserve");
    let jobs = answered.expect("task").expect("reserve").into_inner().jobs;
    assert_eq!((jobs[0].id.as_str(), jobs[0].queue.as_str()), (id.as_str(), second.as_str()));
}

#[tokio::test]
async fn a_filtered_drain_finds_its_queue_beyond_the_sweep_limit() {
    if is_reference() {
        // docs/protocol.md#draindeadletters: 0.1 scans only `sweep_limit` records, so this drain under-returns.
        return;
    }
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 600000\nsweep_limit = 2\n");
    let mut client = server.raw_client().await;
    let crowded = unique("crowded");
    let wanted = unique("wanted");
    let mut ids = Vec::new();
    for queue in [&crowded, &crowded, &crowded, &wanted] {
        let id = enqueue_one(&mut client, job(queue, "t")).await;
        reserve_now(&mut client, &[queue], LEASE_MS).await;
        let dead_letter = nack(&id, 1, Some(pb::nack_retry::Strategy::DeadLetter(())));
        assert!(client.nack(dead_letter).await.expect("nack").into_inner().dead_lettered);
        ids.push(id);
    }
    let request = pb::DrainDeadLettersRequest { queue: Some(wanted.clone()), max: Some(5) };
    let records = client.drain_dead_letters(request).await.expect("drain").into_inner().records;
    let drained: Vec<&str> = records.iter().map(|record| record.job.as_ref().unwrap().id.as_str()).collect();
    assert_eq!(drained, vec![ids[3].as_str()]);
}
