//! The malformed-input matrix of docs/protocol.md for every `sepp.v1.QueueService` RPC, plus
//! GetServerInfo and health, driven with a raw tonic client against the real binary, so
//! requests the official clients refuse to build (priority 10, an unset custom value, an empty
//! traceparent, ...) reach the server. What the RPCs do with valid input is `rpc_semantics.rs`.

mod common;

use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;
use tonic::transport::Channel;

use pb::job_rejection::Reason;

const LEASE_MS: u64 = 30_000;

fn invalid(message: &str) -> Reason {
    Reason::InvalidRequest(pb::InvalidRequest { message: message.into() })
}

fn unset_value() -> pb::PrimitiveValue {
    pb::PrimitiveValue { value: None }
}

/// The server still accepts and delivers work: the last step of every malformed-input test.
async fn assert_still_serves(client: &mut QueueServiceClient<Channel>) {
    // Short, so it fits the small `max_queue_name_bytes` some tests configure.
    let queue = "alive";
    let id = enqueue_one(client, job(queue, "ping")).await;
    let jobs = reserve_now(client, &[queue], LEASE_MS).await;
    assert_eq!(jobs.len(), 1, "the server no longer delivers jobs");
    assert_eq!(jobs[0].id, id);
    client
        .ack(pb::AckRequest { job_id: id, attempt: 1, worker_id: None })
        .await
        .expect("the server no longer acks jobs");
}

/// Enqueues one job and reserves it; returns the delivered job.
async fn leased_job(client: &mut QueueServiceClient<Channel>, queue: &str) -> pb::Job {
    let id = enqueue_one(client, job(queue, "work")).await;
    let mut jobs = reserve_now(client, &[queue], LEASE_MS).await;
    assert_eq!(jobs.len(), 1);
    let job = jobs.remove(0);
    assert_eq!(job.id, id);
    job
}

// ---- GetServerInfo and health --------------------------------------------------------------

#[tokio::test]
async fn server_info_reports_the_default_limits() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let before = now_ms();
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.expect("server info").into_inner();
    let after = now_ms();

    assert_eq!(info.server_version, server_version());
    assert_eq!(info.supported_protocol_versions, vec!["v1".to_string()]);
    let server_time = timestamp_ms(info.server_time.as_ref().expect("server_time is set"));
    assert!(before - 1000 <= server_time && server_time <= after + 1000, "server_time {server_time} not near {before}");
    assert!(!info.restricts_encodings);
    assert!(info.allowed_encodings.is_empty());
    assert_eq!(info.max_payload_bytes, 1_048_576);
    assert_eq!(info.max_custom_entries, 64);
    assert_eq!(info.max_custom_total_bytes, 16_384);
    assert_eq!(info.max_custom_key_bytes, 256);
    assert_eq!(info.max_queue_name_bytes, 512);
    assert_eq!(info.max_job_type_bytes, 256);
    assert_eq!(info.max_idempotency_key_bytes, 256);
    assert_eq!(info.max_schedule_horizon, Some(ms(2_592_000_000)));
    assert_eq!(info.max_enqueue_batch, 256);
    assert_eq!(info.max_reserve_batch, 256);
    assert_eq!(info.max_reserve_queues, 32);
    assert_eq!(info.max_wait_timeout, Some(ms(300_000)));
    assert_eq!(info.max_lease_duration, Some(ms(300_000)));
    assert!(!info.strict_queues);
    assert!(!info.dead_letter_retention_enabled);
}

#[tokio::test]
async fn server_info_reports_the_configured_limits() {
    let server = TestServer::start(
        r#"
        [server]
        strict_queues = true
        [storage]
        dead_letter_retention_ms = 60000
        [limits]
        allowed_encodings = ["application/json", "text/plain"]
        max_payload_bytes = 2048
        max_custom_entries = 7
        max_custom_total_bytes = 999
        max_custom_key_bytes = 33
        max_queue_name_bytes = 40
        max_job_type_bytes = 41
        max_idempotency_key_bytes = 42
        max_schedule_horizon_ms = 3600500
        max_enqueue_batch = 10
        max_reserve_batch = 11
        max_reserve_queues = 12
        max_wait_timeout_ms = 1500
        max_lease_duration_ms = 2500
        "#,
    );
    let mut client = server.raw_client().await;
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.expect("server info").into_inner();

    assert_eq!(info.server_version, server_version());
    assert!(info.restricts_encodings);
    assert_eq!(info.allowed_encodings, vec!["application/json".to_string(), "text/plain".to_string()]);
    assert_eq!(info.max_payload_bytes, 2048);
    assert_eq!(info.max_custom_entries, 7);
    assert_eq!(info.max_custom_total_bytes, 999);
    assert_eq!(info.max_custom_key_bytes, 33);
    assert_eq!(info.max_queue_name_bytes, 40);
    assert_eq!(info.max_job_type_bytes, 41);
    assert_eq!(info.max_idempotency_key_bytes, 42);
    assert_eq!(info.max_schedule_horizon, Some(ms(3_600_500)));
    assert_eq!(info.max_enqueue_batch, 10);
    assert_eq!(info.max_reserve_batch, 11);
    assert_eq!(info.max_reserve_queues, 12);
    assert_eq!(info.max_wait_timeout, Some(ms(1500)));
    assert_eq!(info.max_lease_duration, Some(ms(2500)));
    assert!(info.strict_queues);
    assert!(info.dead_letter_retention_enabled);
}

#[tokio::test]
async fn an_empty_allowed_encodings_list_restricts_every_encoding() {
    let server = TestServer::start("[limits]\nallowed_encodings = []\n");
    let mut client = server.raw_client().await;
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.expect("server info").into_inner();
    assert!(info.restricts_encodings);
    assert!(info.allowed_encodings.is_empty());
}

async fn health_status(channel: Channel, service: &str) -> i32 {
    use tonic_health::pb::health_client::HealthClient;
    let mut health = HealthClient::new(channel);
    let request = tonic_health::pb::HealthCheckRequest { service: service.into() };
    health
        .check(request)
        .await
        .unwrap_or_else(|status| panic!("health check of {service:?}: {status}"))
        .into_inner()
        .status
}

#[tokio::test]
async fn health_reports_serving_for_the_server_and_the_queue_service() {
    let server = TestServer::start("");
    let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
    assert_eq!(health_status(server.channel().await, "").await, serving);
    assert_eq!(health_status(server.channel().await, "sepp.v1.QueueService").await, serving);
}

#[tokio::test]
async fn health_needs_no_api_key_when_keys_are_configured() {
    let server = TestServer::start("[auth]\napi_keys = [{ name = \"ci\", key = \"s3cret\" }]\n");
    // The queue service does want a key ...
    let mut client = server.raw_client().await;
    assert_code(client.get_server_info(pb::GetServerInfoRequest {}).await, Code::Unauthenticated);
    // ... the health service does not.
    let serving = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
    assert_eq!(health_status(server.channel().await, "").await, serving);
    assert_eq!(health_status(server.channel().await, "sepp.v1.QueueService").await, serving);
}

// ---- EnqueueBatch / EnqueueAtomic: whole-call checks --------------------------------------

#[tokio::test]
async fn an_empty_batch_is_invalid_for_both_enqueue_rpcs() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let message = "batch must contain at least one job";
    assert_status(client.enqueue_batch(batch(vec![])).await, Code::InvalidArgument, message);
    assert_status(client.enqueue_atomic(batch(vec![])).await, Code::InvalidArgument, message);
    assert_still_serves(&mut client).await;
}

#[tokio::test]
async fn a_batch_over_max_enqueue_batch_is_invalid_for_both_enqueue_rpcs() {
    let server = TestServer::start("[limits]\nmax_enqueue_batch = 2\n");
    let mut client = server.raw_client().await;
    let queue = unique("batch-cap");
    let three = || batch(vec![job(&queue, "a"), job(&queue, "b"), job(&queue, "c")]);
    let message = "batch exceeds max_enqueue_batch (2)";
    assert_status(client.enqueue_batch(three()).await, Code::InvalidArgument, message);
    assert_status(client.enqueue_atomic(three()).await, Code::InvalidArgument, message);
    // Nothing of the refused batches was written.
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty());
    // Exactly at the cap is fine.
    let two = client.enqueue_batch(batch(vec![job(&queue, "a"), job(&queue, "b")])).await.expect("two jobs");
    assert!(results(two.into_inner()).iter().all(Result::is_ok));
    assert_still_serves(&mut client).await;
}

// ---- Stage A: structural per-job checks ----------------------------------------------------

/// Each malformed job with the exact message docs/protocol.md#job-validation gives it.
fn stage_a_cases(queue: &str) -> Vec<(pb::EnqueueRequest, &'static str)> {
    let mut cases = vec![
        (job("", "t"), "queue must not be empty"),
        (job(".", "t"), "queue must not be \".\" or \"..\""),
        (job("..", "t"), "queue must not be \".\" or \"..\""),
        (job("a/b", "t"), "queue must not contain '/'"),
        (job("bell\u{7}queue", "t"), "queue must not contain control characters"),
        (job("new\nline", "t"), "queue must not contain control characters"),
        (job(queue, ""), "job_type must not be empty"),
        (with_payload(job(queue, "t"), b"", "text/plain"), "payload.data must not be empty"),
        (with_payload(job(queue, "t"), b"x", ""), "payload.encoding must not be empty"),
    ];
    let mut request = job(queue, "t");
    request.idempotency_key = Some(String::new());
    cases.push((request, "idempotency_key must not be empty"));
    let mut request = job(queue, "t");
    request.priority = Some(10);
    cases.push((request, "priority must be <= 9"));
    let mut request = job(queue, "t");
    request.max_attempts = Some(0);
    cases.push((request, "max_attempts must be >= 1"));
    let mut request = job(queue, "t");
    request.trace_context = Some(pb::TraceContext { traceparent: String::new(), tracestate: Some("a=b".into()) });
    cases.push((request, "trace_context.traceparent must not be empty"));
    let mut request = job(queue, "t");
    request.custom.insert(String::new(), string_value("v"));
    cases.push((request, "custom key must not be empty"));
    let mut request = job(queue, "t");
    request.custom.insert("colour".into(), unset_value());
    cases.push((request, "custom[colour] must set a value"));
    // Custom entries are checked in key order: `alpha` before `beta`.
    let mut request = job(queue, "t");
    request.custom.insert("beta".into(), unset_value());
    request.custom.insert("alpha".into(), unset_value());
    cases.push((request, "custom[alpha] must set a value"));
    // The first failing check wins.
    let mut request = job("", "");
    request.priority = Some(10);
    cases.push((request, "queue must not be empty"));
    let mut request = job(queue, "");
    request.priority = Some(42);
    request.max_attempts = Some(0);
    cases.push((request, "job_type must not be empty"));
    let mut request = with_payload(job(queue, "t"), b"", "");
    request.priority = Some(10);
    cases.push((request, "payload.data must not be empty"));
    let mut request = job(queue, "t");
    request.priority = Some(10);
    request.max_attempts = Some(0);
    cases.push((request, "priority must be <= 9"));
    // Structure is checked before limits: a structurally bad job never reports a limit.
    let mut request = job(&"q".repeat(600), "t");
    request.priority = Some(10);
    cases.push((request, "priority must be <= 9"));
    cases
}

#[tokio::test]
async fn enqueue_batch_rejects_structurally_invalid_jobs_one_by_one() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("stage-a");
    let cases = stage_a_cases(&queue);
    // A valid job first, in the middle and last: results keep the request's order.
    let mut jobs = vec![job(&queue, "good-first")];
    jobs.extend(cases.iter().map(|(request, _)| request.clone()));
    jobs.push(job(&queue, "good-last"));
    let response = client.enqueue_batch(batch(jobs)).await.expect("batch call succeeds").into_inner();
    let results = results(response);
    assert_eq!(results.len(), cases.len() + 2);
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(results[cases.len() + 1].is_ok(), "{:?}", results[cases.len() + 1]);
    for (index, (_, message)) in cases.iter().enumerate() {
        assert_eq!(results[index + 1], Err(invalid(message)), "case {index}: expected {message:?}");
    }
    // Only the two valid jobs were written.
    let mut reserve_all = reserve(&[&queue], LEASE_MS);
    reserve_all.max_jobs = Some(100);
    let jobs = client.reserve(reserve_all).await.expect("reserve").into_inner().jobs;
    let mut types: Vec<_> = jobs.iter().map(|job| job.job_type.as_str()).collect();
    types.sort();
    assert_eq!(types, vec!["good-first", "good-last"]);
    assert_still_serves(&mut client).await;
}

#[tokio::test]
async fn a_rejected_job_is_logged_with_its_own_queue_in_a_batch_naming_several() {
    // The handler keeps each job's queue for this log line while the jobs themselves go to the
    // committer; a batch of A, B, A checks that every job, not just every run, gets its name.
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let (first, second) = (unique("log-a"), unique("log-b"));
    let mut bad_priority = job(&first, "t");
    bad_priority.priority = Some(10);
    let jobs = vec![job(&first, "good"), job(&second, ""), bad_priority];
    let results = results(client.enqueue_batch(batch(jobs.clone())).await.expect("batch").into_inner());
    assert!(results[0].is_ok());
    assert_eq!(results[1], Err(invalid("job_type must not be empty")));
    assert_eq!(results[2], Err(invalid("priority must be <= 9")));
    let wait = std::time::Duration::from_secs(10);
    let line = server.stdout().wait_for("job_type must not be empty", wait).expect("the first rejection is logged");
    assert!(line.contains("enqueue rejected") && line.contains(&second), "{line}");
    let line = server.stdout().wait_for("priority must be <= 9", wait).expect("the second rejection is logged");
    assert!(line.contains("enqueue rejected") && line.contains(&first) && !line.contains(&second), "{line}");
    // The same for EnqueueAtomic, which names the failing jobs by index.
    let mark = server.stdout().len();
    let response = client.enqueue_atomic(batch(jobs)).await.expect("atomic").into_inner();
    assert!(matches!(response.outcome, Some(pb::enqueue_atomic_response::Outcome::Rejection(_))));
    let line = server.stdout().wait_for_since(mark, "enqueue_atomic rejected job", wait).expect("logged");
    assert!(line.contains("index=1") && line.contains(&second), "{line}");
}

#[tokio::test]
async fn enqueue_atomic_lists_every_failing_job_with_its_index_and_writes_nothing() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("atomic-a");
    let cases = stage_a_cases(&queue);
    let mut jobs = vec![job(&queue, "good")];
    jobs.extend(cases.iter().map(|(request, _)| request.clone()));
    let response = client.enqueue_atomic(batch(jobs)).await.expect("atomic call succeeds").into_inner();
    let Some(pb::enqueue_atomic_response::Outcome::Rejection(failure)) = response.outcome else {
        panic!("expected a rejection, got {:?}", response.outcome);
    };
    let expected: Vec<(u32, Reason)> =
        cases.iter().enumerate().map(|(index, (_, message))| (index as u32 + 1, invalid(message))).collect();
    let actual: Vec<(u32, Reason)> = failure
        .errors
        .into_iter()
        .map(|error| (error.index, error.rejection.and_then(|rejection| rejection.reason).expect("a reason")))
        .collect();
    assert_eq!(actual, expected);
    assert!(reserve_now(&mut client, &[&queue], LEASE_MS).await.is_empty(), "an atomic rejection wrote a job");
    assert_still_serves(&mut client).await;
}

#[tokio::test]
async fn enqueue_atomic_commits_all_jobs_in_order() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("atomic-ok");
    let mut keyed = job(&queue, "keyed");
    keyed.idempotency_key = Some("k1".into());
    let jobs = vec![job(&queue, "one"), keyed.clone(), keyed];
    let response = client.enqueue_atomic(batch(jobs)).await.expect("atomic").into_inner();
    let Some(pb::enqueue_atomic_response::Outcome::Success(success)) = response.outcome else {
        panic!("expected success, got {:?}", response.outcome);
    };
    assert_eq!(success.responses.len(), 3);
    assert!(!success.responses[0].deduplicated);
    assert!(!success.responses[1].deduplicated);
    // The same key twice in one request: the second gets the first one's id.
    assert!(success.responses[2].deduplicated);
    assert_eq!(success.responses[2].job_id, success.responses[1].job_id);
    let mut request = reserve(&[&queue], LEASE_MS);
    request.max_jobs = Some(10);
    assert_eq!(client.reserve(request).await.expect("reserve").into_inner().jobs.len(), 2);
}

// ---- Stage B and C -------------------------------------------------------------------------

#[tokio::test]
async fn enqueue_applies_limits_per_job() {
    let server = TestServer::start(
        r#"
        [limits]
        max_queue_name_bytes = 20
        max_job_type_bytes = 8
        max_idempotency_key_bytes = 4
        max_payload_bytes = 16
        max_custom_entries = 2
        max_custom_key_bytes = 5
        max_custom_total_bytes = 20
        max_schedule_horizon_ms = 60000
        [[queues]]
        name = "declared"
        allowed_job_types = ["ok", "other"]
        allowed_encodings = ["json"]
        "#,
    );
    let mut client = server.raw_client().await;
    let q = "declared";
    let mut cases: Vec<(pb::EnqueueRequest, Reason)> = vec![
        (
            job("a-rather-far-too-long-name", "ok"),
            Reason::QueueNameTooLong(pb::QueueNameTooLong { limit: 20, actual: 26 }),
        ),
        (job(q, "much-too-long"), Reason::JobTypeNameTooLong(pb::JobTypeNameTooLong { limit: 8, actual: 13 })),
        (
            job(q, "nope"),
            Reason::JobTypeNotAllowed(pb::JobTypeNotAllowed {
                job_type: "nope".into(),
                allowed: vec!["ok".into(), "other".into()],
            }),
        ),
        (
            with_payload(job(q, "ok"), &[7; 17], "json"),
            Reason::PayloadTooLarge(pb::PayloadTooLarge { limit: 16, actual: 17 }),
        ),
        (
            with_payload(job(q, "ok"), b"{}", "xml"),
            Reason::EncodingNotAllowed(pb::EncodingNotAllowed { encoding: "xml".into(), allowed: vec!["json".into()] }),
        ),
    ];
    let mut request = job(q, "ok");
    request.idempotency_key = Some("12345".into());
    cases.push((request, Reason::IdempotencyKeyTooLong(pb::IdempotencyKeyTooLong { limit: 4, actual: 5 })));
    let mut request = job(q, "ok");
    for key in ["a", "b", "c"] {
        request.custom.insert(key.into(), string_value("v"));
    }
    cases.push((request, Reason::CustomEntriesTooMany(pb::CustomEntriesTooMany { limit: 2, actual: 3 })));
    let mut request = job(q, "ok");
    request.custom.insert("toolong".into(), string_value("v"));
    cases
        .push((request, Reason::CustomKeyTooLong(pb::CustomKeyTooLong { key: "toolong".into(), limit: 5, actual: 7 })));
    // 1 + 8 (int) + 5 + 10 (string) = 24 > 20.
    let mut request = job(q, "ok");
    request.custom.insert("n".into(), pb::PrimitiveValue { value: Some(pb::primitive_value::Value::IntValue(5)) });
    request.custom.insert("label".into(), string_value("0123456789"));
    cases.push((request, Reason::CustomMapTooLarge(pb::CustomMapTooLarge { limit: 20, actual: 24 })));
    let far = now_ms() + 3_600_000;
    let mut request = job(q, "ok");
    request.scheduled_at = Some(prost_types::Timestamp { seconds: far / 1000, nanos: 0 });
    cases.push((
        request,
        Reason::ScheduledTooFar(pb::ScheduledTooFar {
            horizon: Some(ms(60_000)),
            actual: Some(prost_types::Timestamp { seconds: far / 1000, nanos: 0 }),
        }),
    ));

    let mut jobs: Vec<_> = cases.iter().map(|(request, _)| request.clone()).collect();
    jobs.push(with_payload(job(q, "other"), b"{}", "json"));
    let results = results(client.enqueue_batch(batch(jobs)).await.expect("batch").into_inner());
    for (index, (_, expected)) in cases.iter().enumerate() {
        assert_eq!(&results[index], &Err(expected.clone()), "case {index}");
    }
    assert!(results[cases.len()].is_ok(), "{:?}", results[cases.len()]);
}

// ---- Reserve validation (docs/protocol.md#reserve, rows 1-9) --------------------------------

#[tokio::test]
async fn reserve_validates_its_arguments_in_order() {
    let server = TestServer::start("[limits]\nmax_reserve_queues = 2\nmax_queue_name_bytes = 16\n");
    let mut client = server.raw_client().await;
    let ok = unique("r");
    let ok = &ok[..ok.len().min(16)];
    let request = |queues: &[&str]| reserve(queues, LEASE_MS);
    let bad = Code::InvalidArgument;

    // Row 1 (and it comes before the lease check).
    assert_status(client.reserve(request(&[])).await, bad, "queues must contain at least 1 item");
    let mut no_queues_no_lease = request(&[]);
    no_queues_no_lease.lease_duration = None;
    assert_status(client.reserve(no_queues_no_lease).await, bad, "queues must contain at least 1 item");
    // Row 2.
    assert_status(client.reserve(request(&[ok, ""])).await, bad, "queues item must not be empty");
    assert_status(client.reserve(request(&["."])).await, bad, "queues item must not be \".\" or \"..\"");
    assert_status(client.reserve(request(&[".."])).await, bad, "queues item must not be \".\" or \"..\"");
    assert_status(client.reserve(request(&["a/b"])).await, bad, "queues item must not contain '/'");
    assert_status(client.reserve(request(&["a\tb"])).await, bad, "queues item must not contain control characters");
    // Row 3.
    let mut negative_wait = request(&[ok]);
    negative_wait.wait_timeout = Some(prost_types::Duration { seconds: -1, nanos: 0 });
    assert_status(client.reserve(negative_wait).await, bad, "wait_timeout must not be negative");
    // Row 4.
    let mut no_lease = request(&[ok]);
    no_lease.lease_duration = None;
    assert_status(client.reserve(no_lease).await, bad, "lease_duration is required");
    let mut zero_lease = request(&[ok]);
    zero_lease.lease_duration = Some(ms(0));
    assert_status(client.reserve(zero_lease).await, bad, "lease_duration must be greater than 0");
    let mut negative_lease = request(&[ok]);
    negative_lease.lease_duration = Some(prost_types::Duration { seconds: -5, nanos: 0 });
    assert_status(client.reserve(negative_lease).await, bad, "lease_duration must be greater than 0");
    // Row 5.
    let mut empty_worker = request(&[ok]);
    empty_worker.worker_id = Some(String::new());
    assert_status(client.reserve(empty_worker).await, bad, "worker_id must not be empty");
    // Row 6.
    let mut zero_jobs = request(&[ok]);
    zero_jobs.max_jobs = Some(0);
    assert_status(client.reserve(zero_jobs).await, bad, "max_jobs must be >= 1");
    // Row 7.
    assert_status(client.reserve(request(&["a", "b", "c"])).await, bad, "reserve exceeds max_reserve_queues (2)");
    // Row 8: the message names the queue and the limit; its wording is not part of the contract.
    let long = "x".repeat(17);
    let status = assert_code(client.reserve(request(&[ok, &long])).await, bad);
    assert!(status.message().contains(&long), "message {:?} does not name the queue", status.message());
    // Exactly at the limit is fine.
    let sixteen = "y".repeat(16);
    assert!(
        client.reserve(request(&[&sixteen])).await.expect("a 16-byte name is allowed").into_inner().jobs.is_empty()
    );

    assert_still_serves(&mut client).await;
}

#[tokio::test]
async fn reserve_in_strict_mode_refuses_undeclared_queues() {
    let server = TestServer::start("[server]\nstrict_queues = true\n[[queues]]\nname = \"known\"\n");
    let mut client = server.raw_client().await;
    let status = assert_code(client.reserve(reserve(&["known", "stranger"], LEASE_MS)).await, Code::FailedPrecondition);
    assert!(status.message().contains("stranger"), "message {:?} does not list the queue", status.message());
    assert!(!status.message().contains("known,"), "message {:?} lists a declared queue", status.message());
    // Validation rows 1-8 still come first.
    let mut no_lease = reserve(&["stranger"], LEASE_MS);
    no_lease.lease_duration = None;
    assert_status(client.reserve(no_lease).await, Code::InvalidArgument, "lease_duration is required");
    // Enqueue: strict mode (stage B) comes before the limits (stage C).
    let long = "z".repeat(600);
    let response = client
        .enqueue_batch(batch(vec![job("stranger", "t"), job(&long, "t"), job("known", "t")]))
        .await
        .expect("enqueue")
        .into_inner();
    let results = results(response);
    assert_eq!(results[0], Err(Reason::UnknownQueue(pb::UnknownQueue { queue: "stranger".into() })));
    assert_eq!(results[1], Err(Reason::UnknownQueue(pb::UnknownQueue { queue: long.clone() })));
    let id = results[2].clone().expect("a declared queue accepts jobs").job_id;
    // The declared queue works.
    let jobs = reserve_now(&mut client, &["known"], LEASE_MS).await;
    assert_eq!(jobs.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), vec![id.as_str()]);
}

// ---- Ack / Nack / Extend validation --------------------------------------------------------

#[tokio::test]
async fn lease_operations_validate_their_arguments() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let queue = unique("lease-validation");
    let leased = leased_job(&mut client, &queue).await;
    let id = leased.id.as_str();
    let bad = Code::InvalidArgument;

    for malformed in ["", "not-a-uuid", "0123456789abcdef0123456789abcdef", &format!("{id}0"), &id[1..]] {
        let message = "job_id must be a UUID";
        assert_status(client.ack(ack(malformed, 1)).await, bad, message);
        assert_status(client.nack(nack(malformed, 1, None)).await, bad, message);
        assert_status(client.extend(extend(malformed, 1, 1000)).await, bad, message);
    }
    assert_status(client.ack(ack(id, 0)).await, bad, "attempt must be >= 1");
    assert_status(client.nack(nack(id, 0, None)).await, bad, "attempt must be >= 1");
    assert_status(client.extend(extend(id, 0, 1000)).await, bad, "attempt must be >= 1");

    let mut empty_worker = ack(id, 1);
    empty_worker.worker_id = Some(String::new());
    assert_status(client.ack(empty_worker).await, bad, "worker_id must not be empty");
    let mut empty_worker = nack(id, 1, None);
    empty_worker.worker_id = Some(String::new());
    assert_status(client.nack(empty_worker).await, bad, "worker_id must not be empty");
    let mut empty_worker = extend(id, 1, 1000);
    empty_worker.worker_id = Some(String::new());
    assert_status(client.extend(empty_worker).await, bad, "worker_id must not be empty");

    let mut unset_strategy = nack(id, 1, None);
    unset_strategy.retry = Some(pb::NackRetry { strategy: None });
    assert_status(client.nack(unset_strategy).await, bad, "retry strategy is required");
    let negative = pb::nack_retry::Strategy::Delay(prost_types::Duration { seconds: -1, nanos: 0 });
    assert_status(client.nack(nack(id, 1, Some(negative))).await, bad, "retry delay must not be negative");

    let mut no_lease = extend(id, 1, 1000);
    no_lease.lease_duration = None;
    assert_status(client.extend(no_lease).await, bad, "lease_duration is required");
    assert_status(client.extend(extend(id, 1, 0)).await, bad, "lease_duration must be greater than 0");
    let mut negative_lease = extend(id, 1, 1000);
    negative_lease.lease_duration = Some(prost_types::Duration { seconds: -1, nanos: 0 });
    assert_status(client.extend(negative_lease).await, bad, "lease_duration must be greater than 0");

    // The canonical shape is checked case-insensitively but looked up by exact bytes.
    let upper = id.to_uppercase();
    assert_status(client.ack(ack(&upper, 1)).await, Code::NotFound, "job not found");
    assert_status(client.nack(nack(&upper, 1, None)).await, Code::NotFound, "job not found");
    assert_status(client.extend(extend(&upper, 1, 1000)).await, Code::NotFound, "job not found");
    // A well-formed id nobody has.
    let stranger = "00000000-0000-4000-8000-000000000000";
    assert_status(client.ack(ack(stranger, 1)).await, Code::NotFound, "job not found");
    assert_status(client.nack(nack(stranger, 1, None)).await, Code::NotFound, "job not found");
    assert_status(client.extend(extend(stranger, 1, 1000)).await, Code::NotFound, "job not found");
    // The in-flight job under another attempt, lower or higher.
    assert_status(client.ack(ack(id, 2)).await, Code::FailedPrecondition, "attempt mismatch");
    assert_status(client.nack(nack(id, 7, None)).await, Code::FailedPrecondition, "attempt mismatch");
    assert_status(client.extend(extend(id, 2, 1000)).await, Code::FailedPrecondition, "attempt mismatch");

    // None of that disturbed the lease: the job is still in flight under attempt 1.
    client.ack(ack(id, 1)).await.expect("the original lease still holds");
    assert_status(client.ack(ack(id, 1)).await, Code::NotFound, "job not found");
    assert_still_serves(&mut client).await;
}

#[tokio::test]
async fn drain_dead_letters_validates_its_arguments() {
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 60000\n");
    let mut client = server.raw_client().await;
    let drain =
        |queue: Option<&str>, max: Option<u32>| pb::DrainDeadLettersRequest { queue: queue.map(Into::into), max };
    assert_status(
        client.drain_dead_letters(drain(Some(""), Some(5))).await,
        Code::InvalidArgument,
        "queue must not be empty",
    );
    assert_status(client.drain_dead_letters(drain(None, Some(0))).await, Code::InvalidArgument, "max must be >= 1");
    assert_status(
        client.drain_dead_letters(drain(Some("q"), Some(0))).await,
        Code::InvalidArgument,
        "max must be >= 1",
    );
    // Only emptiness is checked for the queue filter; nothing is there.
    let response = client.drain_dead_letters(drain(Some("a/b"), None)).await.expect("drain").into_inner();
    assert!(response.records.is_empty());
    assert_still_serves(&mut client).await;
}

#[tokio::test]
async fn oversized_messages_are_out_of_range_and_the_server_keeps_serving() {
    let server = TestServer::start("[limits]\nmax_message_bytes = 4096\nmax_payload_bytes = 1024\n");
    let mut client = server.raw_client().await;
    let queue = unique("oversized");
    let big = with_payload(job(&queue, "t"), &vec![b'x'; 8192], "bytes");
    let status = assert_code(client.enqueue_batch(batch(vec![big.clone()])).await, Code::OutOfRange);
    assert!(status.message().contains("decoded message length too large"), "message {:?}", status.message());
    let status = assert_code(client.enqueue_atomic(batch(vec![big])).await, Code::OutOfRange);
    assert!(status.message().contains("decoded message length too large"), "message {:?}", status.message());
    // Below the message cap but above the payload cap is a per-job rejection instead.
    let response = client.enqueue_batch(batch(vec![with_payload(job(&queue, "t"), &[1; 2000], "bytes")])).await;
    assert_eq!(
        results(response.expect("batch").into_inner()),
        vec![Err(Reason::PayloadTooLarge(pb::PayloadTooLarge { limit: 1024, actual: 2000 }))]
    );
    assert_still_serves(&mut client).await;
}
