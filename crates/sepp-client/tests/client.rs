//! Every `SeppClient` call against the real server: connecting (address forms, API keys,
//! failures), enqueue (single, batch, atomic, idempotency, rejections), reserve (order,
//! batches, strict queues), ack, nack (each directive), extend, server info and dead letters.

mod common;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use common::{Server, unique};
use sepp_client::client::{
    CancelError, ClientError, EnqueueError, LeaseError, ReserveError, RetryDirective, RetryPolicy, SeppClient,
};
use sepp_client::{
    AtomicEnqueueError, DeadLetterCause, EnqueueRequest, Job, JobRejection, Payload, Primitive, Priority,
    ReserveOptions, TraceContext,
};

const LEASE: Duration = Duration::from_secs(30);

fn job(queue: &str, job_type: &str) -> EnqueueRequest {
    EnqueueRequest::new(queue, job_type).unwrap()
}

/// Reserve options that answer at once instead of long-polling.
fn now(queues: &[&str]) -> ReserveOptions {
    ReserveOptions::new(queues.iter().copied(), LEASE).unwrap().with_wait_timeout(Duration::ZERO)
}

async fn reserve_one(client: &SeppClient, queue: &str) -> Job {
    let options = ReserveOptions::new([queue], LEASE).unwrap().with_wait_timeout(Duration::from_secs(10));
    let mut jobs = client.reserve(&options).await.unwrap().expect("a job");
    assert_eq!(jobs.len(), 1);
    jobs.remove(0)
}

#[tokio::test]
async fn connects_with_or_without_a_scheme_and_reads_server_info() {
    let server = Server::start();
    for addr in [server.url(), server.host_port()] {
        let client = SeppClient::connect(addr).await.unwrap();
        let info = client.get_server_info().await.unwrap();
        assert!(!info.version.is_empty());
        assert!(info.supported_protocol_versions.iter().any(|version| version == "v1"), "{info:?}");
        assert!(info.server_time > SystemTime::UNIX_EPOCH);
        assert_eq!(info.max_enqueue_batch, 256);
        assert_eq!(info.max_reserve_batch, 256);
        assert_eq!(info.max_lease_duration, Duration::from_secs(300));
        assert_eq!(info.max_schedule_horizon, Duration::from_secs(30 * 24 * 3600));
        assert!(info.dead_letter_retention_enabled);
        assert!(!info.strict_queues);
        assert!(info.features.iter().any(|feature| feature == "cancel"), "{info:?}");
        assert_eq!(info.cluster, None, "a single node is in no cluster");
    }
    let wrapped = SeppClient::from_channel(
        tonic::transport::Endpoint::from_shared(server.url()).unwrap().connect().await.unwrap(),
    );
    assert!(wrapped.get_server_info().await.is_ok());
}

#[tokio::test]
async fn connecting_to_nothing_fails_with_the_root_cause() {
    let server = Server::start();
    let addr = server.url();
    drop(server);
    match SeppClient::connect(addr.clone()).await {
        Err(ClientError::Connect { addr: failed, reason }) => {
            assert_eq!(failed, addr);
            assert!(!reason.is_empty());
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[cfg(not(feature = "tls"))]
#[tokio::test]
async fn an_https_address_needs_the_tls_feature() {
    let result = SeppClient::connect("https://127.0.0.1:1").await;
    assert!(matches!(result, Err(ClientError::Connect { reason, .. }) if reason.contains("tls")));
}

#[tokio::test]
async fn api_keys_are_sent_on_every_call_and_bad_ones_refused_at_connect() {
    let server = Server::start_with("", "[auth]\napi_keys = [{ name = \"test\", key = \"k3y-for-tests\" }]\n");
    let anonymous = server.client().await;
    assert!(matches!(anonymous.get_server_info().await, Err(ClientError::Unauthenticated(_))));
    let wrong = SeppClient::builder(server.url()).api_key("wrong").connect().await.unwrap();
    assert!(matches!(wrong.get_server_info().await, Err(ClientError::Unauthenticated(_))));

    let client = SeppClient::builder(server.url()).api_key("k3y-for-tests").connect().await.unwrap();
    let queue = unique("auth");
    client.get_server_info().await.unwrap();
    client.enqueue(job(&queue, "t")).await.unwrap();
    let reserved = reserve_one(&client, &queue).await;
    client.extend(&reserved.ctx, LEASE).await.unwrap();
    client.ack(&reserved.ctx).await.unwrap();

    let bad = SeppClient::builder(server.url()).api_key("new\nline").connect().await;
    assert!(matches!(bad, Err(ClientError::InvalidApiKey)));
}

#[tokio::test]
async fn an_enqueued_job_is_reserved_with_every_field_intact() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("fields");
    let trace =
        TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap().with_tracestate("k=v");
    let scheduled = SystemTime::now() - Duration::from_secs(1);
    let request = job(&queue, "email")
        .with_payload(Payload::new(br#"{"to":"ada"}"#.to_vec(), "application/json"))
        .with_priority(Priority::P7)
        .with_max_attempts(5)
        .with_custom_entry("tenant", "acme")
        .with_custom_entry("retries", 3)
        .with_custom_entry("ratio", 0.25)
        .with_custom_entry("vip", true)
        .with_trace_context(trace.clone())
        .with_scheduled_at(scheduled);
    let ack = client.enqueue(request).await.unwrap();
    assert!(!ack.job_id.is_empty());
    assert!(!ack.deduplicated);

    let options = now(&[&queue]).with_worker_id("worker-7").unwrap();
    let jobs = client.reserve(&options).await.unwrap().unwrap();
    let Job { payload, ctx } = jobs.into_iter().next().unwrap();
    assert_eq!(payload, Some(Payload::new(br#"{"to":"ada"}"#.to_vec(), "application/json")));
    assert_eq!(ctx.id, ack.job_id);
    assert_eq!(ctx.queue, queue);
    assert_eq!(ctx.job_type, "email");
    assert_eq!(ctx.priority, Priority::P7);
    assert_eq!((ctx.attempt, ctx.max_attempts), (1, 5));
    assert_eq!(
        ctx.custom,
        HashMap::from([
            ("tenant".to_owned(), Primitive::String("acme".into())),
            ("retries".to_owned(), Primitive::Int(3)),
            ("ratio".to_owned(), Primitive::Double(0.25)),
            ("vip".to_owned(), Primitive::Bool(true)),
        ])
    );
    assert_eq!(ctx.trace_context, Some(trace));
    assert!(ctx.scheduled_at.is_some());
    assert!(ctx.lease_expires_at > SystemTime::now());
    assert_eq!(ctx.worker_id(), Some("worker-7"));
    client.ack(&ctx).await.unwrap();
}

#[tokio::test]
async fn unset_options_take_the_queue_defaults() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("defaults");
    client.enqueue(job(&queue, "t")).await.unwrap();
    let reserved = reserve_one(&client, &queue).await;
    assert_eq!(reserved.payload, None);
    assert_eq!(reserved.ctx.priority, Priority::P0);
    assert_eq!(reserved.ctx.max_attempts, 3);
    assert_eq!(reserved.ctx.trace_context, None);
    assert!(reserved.ctx.custom.is_empty());
}

#[tokio::test]
async fn an_idempotency_key_deduplicates_the_second_enqueue() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("dedup");
    let first = client.enqueue(job(&queue, "t").with_idempotency_key("once")).await.unwrap();
    let second = client.enqueue(job(&queue, "t").with_idempotency_key("once")).await.unwrap();
    assert!(!first.deduplicated);
    assert!(second.deduplicated);
    assert_eq!(first.job_id, second.job_id);
    assert!(client.reserve(&now(&[&queue]).with_max_jobs(10)).await.unwrap().unwrap().len() == 1);
}

#[tokio::test]
async fn a_batch_answers_each_job_and_rejections_are_values() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("batch");
    let too_long = "x".repeat(300);
    let far = SystemTime::now() + Duration::from_secs(40 * 24 * 3600);
    let results = client
        .enqueue_batch([job(&queue, "ok"), job(&queue, &too_long), job(&queue, "later").with_scheduled_at(far)])
        .await
        .unwrap();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok());
    assert_eq!(results[1], Err(JobRejection::JobTypeNameTooLong { limit: 256, actual: 300 }));
    assert!(
        matches!(&results[2], Err(JobRejection::ScheduledTooFar { horizon, .. }) if *horizon == Duration::from_secs(30 * 24 * 3600))
    );
    assert!(matches!(client.enqueue_batch(Vec::new()).await, Err(ClientError::EmptyBatch)));

    let single = client.enqueue(job(&queue, &too_long)).await;
    assert!(matches!(single, Err(EnqueueError::Rejected(JobRejection::JobTypeNameTooLong { .. }))));
}

#[tokio::test]
async fn an_atomic_enqueue_writes_all_or_lists_every_refused_job() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("atomic");
    let acks = client.enqueue_atomic([job(&queue, "a"), job(&queue, "b")]).await.unwrap();
    assert_eq!(acks.len(), 2);
    assert_ne!(acks[0].job_id, acks[1].job_id);
    let reserved = client.reserve(&now(&[&queue]).with_max_jobs(10)).await.unwrap().unwrap();
    assert_eq!(reserved.iter().map(|job| job.ctx.job_type.as_str()).collect::<Vec<_>>(), ["a", "b"]);

    let other = unique("atomic-refused");
    let long = "y".repeat(600);
    let error = client.enqueue_atomic([job(&other, "fine"), job(&other, &long), job(&other, &long)]).await.unwrap_err();
    let AtomicEnqueueError::Validation(errors) = error else { panic!("{error:?}") };
    assert_eq!(errors.iter().map(|error| error.index).collect::<Vec<_>>(), [1, 2]);
    assert!(matches!(errors[0].rejection, JobRejection::JobTypeNameTooLong { limit: 256, actual: 600 }));
    assert!(client.reserve(&now(&[&other])).await.unwrap().is_none(), "nothing may be written");
    assert!(matches!(client.enqueue_atomic([]).await, Err(AtomicEnqueueError::Client(ClientError::EmptyBatch))));
}

#[tokio::test]
async fn reserve_returns_none_when_idle_and_honours_priority_queue_order_and_batch_size() {
    let server = Server::start();
    let client = server.client().await;
    let (first, second) = (unique("first"), unique("second"));
    assert!(client.reserve(&now(&[&first, &second])).await.unwrap().is_none());

    client.enqueue(job(&second, "second-queue")).await.unwrap();
    client.enqueue(job(&first, "low").with_priority(Priority::P1)).await.unwrap();
    client.enqueue(job(&first, "high").with_priority(Priority::P8)).await.unwrap();
    let jobs = client.reserve(&now(&[&first, &second]).with_max_jobs(2)).await.unwrap().unwrap();
    assert_eq!(jobs.iter().map(|job| job.ctx.job_type.as_str()).collect::<Vec<_>>(), ["high", "low"]);
    let jobs = client.reserve(&now(&[&first, &second]).with_max_jobs(5)).await.unwrap().unwrap();
    assert_eq!(jobs.iter().map(|job| job.ctx.job_type.as_str()).collect::<Vec<_>>(), ["second-queue"]);
}

#[tokio::test]
async fn a_long_poll_wakes_up_for_a_job_enqueued_while_it_waits() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("long-poll");
    let options = ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::from_secs(20));
    let waiting = tokio::spawn({
        let client = client.clone();
        async move { client.reserve(&options).await }
    });
    client.enqueue(job(&queue, "late")).await.unwrap();
    let jobs = waiting.await.unwrap().unwrap().unwrap();
    assert_eq!(jobs[0].ctx.job_type, "late");
}

#[tokio::test]
async fn zero_max_jobs_is_refused_by_the_server() {
    let server = Server::start();
    let client = server.client().await;
    let result = client.reserve(&now(&[&unique("zero")]).with_max_jobs(0)).await;
    assert!(matches!(result, Err(ReserveError::Client(ClientError::InvalidRequest(_)))), "{result:?}");
}

#[tokio::test]
async fn strict_servers_refuse_reserves_from_undeclared_queues() {
    let server = Server::start_with("strict_queues = true", "[[queues]]\nname = \"declared\"\n");
    let client = server.client().await;
    assert!(client.get_server_info().await.unwrap().strict_queues);
    assert!(client.reserve(&now(&["declared"])).await.unwrap().is_none());
    let result = client.reserve(&now(&["declared", "undeclared"])).await;
    assert!(matches!(result, Err(ReserveError::UnknownQueues(_))), "{result:?}");
    let rejected = client.enqueue(job("undeclared", "t")).await;
    assert!(
        matches!(rejected, Err(EnqueueError::Rejected(JobRejection::UnknownQueue { ref queue })) if queue == "undeclared")
    );
}

#[tokio::test]
async fn ack_deletes_the_job_and_a_second_ack_finds_nothing() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("ack");
    client.enqueue(job(&queue, "t")).await.unwrap();
    let reserved = reserve_one(&client, &queue).await;
    client.ack(&reserved.ctx).await.unwrap();
    assert!(matches!(client.ack(&reserved.ctx).await, Err(LeaseError::JobNotFound)));
    assert!(matches!(client.nack(&reserved.ctx, RetryDirective::Default, "").await, Err(LeaseError::JobNotFound)));
    assert!(matches!(client.extend(&reserved.ctx, LEASE).await, Err(LeaseError::JobNotFound)));
    assert!(client.reserve(&now(&[&queue])).await.unwrap().is_none());
}

#[tokio::test]
async fn a_default_nack_redelivers_and_the_old_attempt_can_no_longer_settle() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("nack-default");
    client.enqueue(job(&queue, "t")).await.unwrap();
    let first = reserve_one(&client, &queue).await;
    assert!(!client.nack(&first.ctx, RetryDirective::Default, "try again").await.unwrap());
    let second = reserve_one(&client, &queue).await;
    assert_eq!(second.ctx.id, first.ctx.id);
    assert_eq!(second.ctx.attempt, 2);
    assert!(matches!(client.ack(&first.ctx).await, Err(LeaseError::AttemptMismatch)));
    assert!(matches!(client.extend(&first.ctx, LEASE).await, Err(LeaseError::AttemptMismatch)));
    client.ack(&second.ctx).await.unwrap();
}

#[tokio::test]
async fn a_dead_letter_nack_can_be_drained_and_replayed() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("dead");
    let trace = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let request = job(&queue, "t")
        .with_payload(Payload::new(b"data".to_vec(), "text/plain"))
        .with_priority(Priority::P4)
        .with_max_attempts(4)
        .with_idempotency_key("dead-key")
        .with_custom_entry("k", "v")
        .with_trace_context(trace.clone());
    let ack = client.enqueue(request).await.unwrap();
    let reserved = reserve_one(&client, &queue).await;
    assert!(client.nack(&reserved.ctx, RetryDirective::DeadLetter, "broken beyond repair").await.unwrap());

    assert!(client.drain_dead_letters(Some(&queue), 0).await.unwrap().is_empty(), "max 0 drains nothing");
    assert!(client.drain_dead_letters(Some("another-queue"), 10).await.unwrap().is_empty());
    let records = client.drain_dead_letters(Some(&queue), 10).await.unwrap();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(
        (record.job_id.as_str(), record.queue.as_str(), record.job_type.as_str()),
        (ack.job_id.as_str(), queue.as_str(), "t")
    );
    assert_eq!(record.cause, DeadLetterCause::Rejected);
    assert_eq!(record.final_attempt, 1);
    assert_eq!(record.last_reason.as_deref(), Some("broken beyond repair"));
    assert_eq!(record.payload, Some(Payload::new(b"data".to_vec(), "text/plain")));
    assert_eq!((record.priority, record.max_attempts), (Priority::P4, 4));
    assert_eq!(record.trace_context, Some(trace));
    assert!(record.failed_at >= record.enqueued_at);
    assert!(client.drain_dead_letters(Some(&queue), 10).await.unwrap().is_empty(), "draining removes");

    let replay = client.enqueue(record.to_enqueue_request()).await.unwrap();
    assert!(!replay.deduplicated, "a replay carries no idempotency key");
    let again = reserve_one(&client, &queue).await;
    assert_eq!(again.ctx.id, replay.job_id);
    assert_eq!(again.ctx.attempt, 1);
    assert_eq!(again.ctx.custom["k"], Primitive::String("v".into()));
}

#[tokio::test]
async fn exhausting_the_attempts_dead_letters_the_job() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("exhausted");
    client.enqueue(job(&queue, "t").with_max_attempts(1)).await.unwrap();
    let reserved = reserve_one(&client, &queue).await;
    assert!(client.nack(&reserved.ctx, RetryDirective::Default, "").await.unwrap());
    let records = client.drain_dead_letters(None, 10).await.unwrap();
    let record = records.iter().find(|record| record.queue == queue).unwrap();
    assert_eq!(record.cause, DeadLetterCause::AttemptsExhausted);
    assert_eq!(record.last_reason, None, "an empty reason is not sent");
}

#[tokio::test]
async fn extend_moves_the_deadline_and_the_context_remembers_it() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("extend");
    client.enqueue(job(&queue, "t")).await.unwrap();
    let options =
        ReserveOptions::new([queue.as_str()], Duration::from_secs(5)).unwrap().with_wait_timeout(Duration::ZERO);
    let reserved = client.reserve(&options).await.unwrap().unwrap().remove(0);
    let granted = reserved.ctx.lease_expires_at;
    let extended = reserved.ctx.extend(Duration::from_secs(120)).await.unwrap();
    assert!(extended > granted + Duration::from_secs(60));
    assert_eq!(reserved.ctx.lease_expiry(), extended);
    let clamped = client.extend(&reserved.ctx, Duration::from_secs(3600)).await.unwrap();
    assert!(clamped <= SystemTime::now() + Duration::from_secs(301), "clamped to max_lease_duration");
}

#[tokio::test]
async fn a_response_over_the_receive_limit_fails_on_the_client() {
    let server = Server::start();
    let client = server.client().await;
    let small = SeppClient::builder(server.url()).max_receive_message_bytes(1024).connect().await.unwrap();
    let queue = unique("big");
    client
        .enqueue(job(&queue, "t").with_payload(Payload::new(vec![7u8; 4096], "application/octet-stream")))
        .await
        .unwrap();
    assert!(small.reserve(&now(&[&queue])).await.is_err());
    // A large enough limit reads the same kind of job.
    client
        .enqueue(job(&queue, "t").with_payload(Payload::new(vec![7u8; 4096], "application/octet-stream")))
        .await
        .unwrap();
    let large = SeppClient::builder(server.url()).max_receive_message_bytes(1 << 20).connect().await.unwrap();
    assert!(large.reserve(&now(&[&queue])).await.unwrap().is_some());
}

#[tokio::test]
async fn a_retry_policy_does_not_change_successful_calls_and_is_shared_by_clones() {
    let server = Server::start();
    let policy = RetryPolicy::default().with_max_attempts(3).with_initial_backoff(Duration::from_millis(10));
    let client = SeppClient::builder(server.url())
        .retry_policy(policy.clone())
        .rpc_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    let clone = client.clone();
    assert_eq!(clone.retry_policy(), &policy);
    assert_eq!(clone.rpc_timeout(), Duration::from_secs(5));
    let queue = unique("policy");
    clone.enqueue(job(&queue, "t")).await.unwrap();
    let reserved = reserve_one(&client, &queue).await;
    clone.ack(&reserved.ctx).await.unwrap();
}

#[tokio::test]
async fn calls_to_a_stopped_server_end_in_a_transport_error_after_the_retries() {
    let server = Server::start();
    let policy = RetryPolicy::default().with_max_attempts(3).with_initial_backoff(Duration::from_millis(5));
    let client = SeppClient::builder(server.url()).retry_policy(policy).connect().await.unwrap();
    drop(server);
    // The first call may see the old connection break (UNKNOWN, not retried); once the channel
    // reconnects, every attempt is UNAVAILABLE, retried, and reported as a transport error.
    let _ = client.get_server_info().await;
    let result = client.get_server_info().await;
    assert!(matches!(result, Err(ClientError::Transport(_))), "{result:?}");
}

#[tokio::test]
async fn a_reserve_waits_past_the_rpc_timeout_because_its_deadline_is_the_wait_plus_slack() {
    let server = Server::start();
    let client = SeppClient::builder(server.url()).rpc_timeout(Duration::from_millis(200)).connect().await.unwrap();
    let queue = unique("idle");
    let options = ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::from_secs(1));
    // The server answers when the second has passed: a call cut at the 200 ms rpc timeout would
    // fail with a deadline error instead.
    assert!(client.reserve(&options).await.unwrap().is_none(), "an idle long poll ends empty, not in a deadline error");
}

#[tokio::test]
async fn cancel_removes_a_queued_job_and_refuses_a_leased_one_to_its_worker() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("cancel");
    let queued = client.enqueue(job(&queue, "t")).await.unwrap();
    assert!(!client.cancel(&queued.job_id.to_string(), None).await.unwrap(), "it was not leased");
    assert!(client.reserve(&now(&[&queue])).await.unwrap().is_none(), "a cancelled job is never delivered");

    client.enqueue(job(&queue, "t")).await.unwrap();
    let leased = reserve_one(&client, &queue).await;
    assert!(client.cancel(&leased.ctx.id, Some("changed my mind")).await.unwrap());
    assert!(matches!(client.ack(&leased.ctx).await, Err(LeaseError::JobNotFound)), "as a lost lease");
    let records = client.drain_dead_letters(Some(&queue), 10).await.unwrap();
    let causes: Vec<_> = records.iter().map(|record| (record.cause, record.last_reason.clone())).collect();
    assert_eq!(
        causes,
        [(DeadLetterCause::Cancelled, None), (DeadLetterCause::Cancelled, Some("changed my mind".to_string()))]
    );

    assert!(matches!(client.cancel(&leased.ctx.id, None).await, Err(CancelError::JobNotFound)), "drained");
    assert!(matches!(
        client.cancel("not-a-uuid", None).await,
        Err(CancelError::Client(ClientError::InvalidRequest(_)))
    ));
}

#[tokio::test]
async fn a_schedule_is_set_fires_its_job_is_listed_and_deleted() {
    use sepp_client::{ScheduleCadence, ScheduleCatchUp, ScheduleDefinition, ScheduleOverlap};
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("scheduled");
    let definition =
        ScheduleDefinition::new("tick", ScheduleCadence::Every(Duration::from_secs(1)), job(&queue, "tick"))
            .with_overlap(ScheduleOverlap::Allow)
            .with_catch_up(ScheduleCatchUp::None);
    let info = client.upsert_schedule(definition).await.unwrap();
    assert_eq!((info.id.as_str(), info.queue.as_str(), info.job_type.as_str()), ("tick", queue.as_str(), "tick"));
    assert_eq!((info.overlap, info.catch_up), (ScheduleOverlap::Allow, ScheduleCatchUp::None));
    assert!(info.next_fire_at.unwrap() > SystemTime::now() - Duration::from_secs(1));

    let fired = reserve_one(&client, &queue).await;
    assert_eq!(fired.ctx.job_type, "tick");
    let listed = client.list_schedules().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].fired >= 1);
    assert_eq!(listed[0].cadence, ScheduleCadence::Every(Duration::from_secs(1)));

    let zurich = ScheduleCadence::Cron { expression: "0 9 * * *".into(), time_zone: "Europe/Zurich".into() };
    let bad = ScheduleCadence::Cron { expression: "0 9 * * *".into(), time_zone: "Mars/Olympus".into() };
    assert!(matches!(
        client.upsert_schedule(ScheduleDefinition::new("bad", bad, job(&queue, "t"))).await,
        Err(ClientError::InvalidRequest(message)) if message.contains("time zone")
    ));
    client.upsert_schedule(ScheduleDefinition::new("morning", zurich, job(&queue, "t"))).await.unwrap();
    assert!(client.delete_schedule("tick").await.unwrap());
    assert!(!client.delete_schedule("tick").await.unwrap());
    let left: Vec<_> = client.list_schedules().await.unwrap().into_iter().map(|info| info.id).collect();
    assert_eq!(left, ["morning"]);
}

#[tokio::test]
async fn a_paused_queue_serves_no_reserve_until_resumed() {
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("paused");
    client.pause_queue(&queue, None, Some("deploy")).await.unwrap();
    client.enqueue(job(&queue, "t")).await.unwrap();
    assert!(client.reserve(&now(&[&queue])).await.unwrap().is_none(), "a paused queue serves nothing");
    assert_eq!(client.list_pauses().await.unwrap(), [(queue.clone(), None)]);
    assert!(client.resume_queue(&queue).await.unwrap());
    assert!(!client.resume_queue(&queue).await.unwrap());
    assert!(client.reserve(&now(&[&queue])).await.unwrap().is_some());
}
