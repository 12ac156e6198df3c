//! `CancelJob` against the real binary: every state a job can be cancelled in, what its worker
//! hears (the 0.1 client sepp-rs included), and that a cancel is durable across a crash.

mod common;

use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;

const LEASE_MS: u64 = 60_000;
const RETAIN: &str = "[storage]\ndead_letter_retention_ms = 86400000\n";

fn cancel(job_id: &str) -> pb::CancelJobRequest {
    pb::CancelJobRequest { job_id: job_id.into(), reason: Some("customer asked".into()) }
}

async fn drained(client: &mut QueueServiceClient<tonic::transport::Channel>, queue: &str) -> Vec<pb::DeadLetterRecord> {
    let request = pb::DrainDeadLettersRequest { queue: Some(queue.into()), max: Some(100) };
    client.drain_dead_letters(request).await.expect("drain").into_inner().records
}

#[tokio::test]
async fn a_queued_job_is_dead_lettered_as_cancelled_and_never_delivered() {
    if is_reference() {
        return; // 0.1 has no CancelJob.
    }
    let server = TestServer::start(RETAIN);
    let mut client = server.raw_client().await;
    let id = enqueue_one(&mut client, job("mail", "send")).await;
    let answer = client.cancel_job(cancel(&id)).await.expect("cancel").into_inner();
    assert_eq!((answer.job_id.as_str(), answer.was_leased), (id.as_str(), false));
    assert!(reserve_now(&mut client, &["mail"], LEASE_MS).await.is_empty());
    let dead = drained(&mut client, "mail").await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].cause, pb::DeadLetterCause::Cancelled as i32);
    assert_eq!(dead[0].last_reason.as_deref(), Some("customer asked"));
    let again = client.cancel_job(cancel(&id)).await.expect_err("gone after the drain");
    assert_eq!(again.code(), Code::NotFound);
}

#[tokio::test]
async fn a_leased_job_is_refused_to_its_worker_with_the_cancelled_trailer() {
    if is_reference() {
        return;
    }
    let server = TestServer::start(RETAIN);
    let mut client = server.raw_client().await;
    let id = enqueue_one(&mut client, job("mail", "send")).await;
    let leased = reserve_now(&mut client, &["mail"], LEASE_MS).await.remove(0);
    assert!(client.cancel_job(cancel(&id)).await.unwrap().into_inner().was_leased);
    assert!(client.cancel_job(cancel(&id)).await.unwrap().into_inner().was_leased, "a repeat is accepted");

    let extend = pb::ExtendRequest {
        job_id: id.clone(),
        attempt: leased.attempt,
        lease_duration: Some(ms(LEASE_MS)),
        worker_id: None,
    };
    let refused = client.extend(extend).await.expect_err("the heartbeat learns it");
    assert_eq!(refused.code(), Code::NotFound, "a 0.1 worker sees a lost lease");
    assert_eq!(refused.message(), "job was cancelled");
    assert_eq!(refused.metadata().get("sepp-cancelled").and_then(|v| v.to_str().ok()), Some("true"));
    let late = client.ack(ack_of(&leased)).await.expect_err("settled as cancelled by the extend");
    assert_eq!(late.code(), Code::NotFound);
    assert!(late.metadata().get("sepp-cancelled").is_none(), "now it is simply gone");
    assert_eq!(drained(&mut client, "mail").await[0].cause, pb::DeadLetterCause::Cancelled as i32);
}

/// Without dead-letter retention a cancelled job is deleted, so a second cancel finds nothing:
/// `NOT_FOUND`, as for an acked job (with retention, `FAILED_PRECONDITION`: a dead letter).
#[tokio::test]
async fn a_second_cancel_without_retention_answers_not_found() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("[storage]\ndead_letter_retention_ms = 0\n");
    let mut client = server.raw_client().await;
    let id = enqueue_one(&mut client, job("mail", "send")).await;
    client.cancel_job(cancel(&id)).await.expect("cancel");
    let again = client.cancel_job(cancel(&id)).await.expect_err("a second cancel");
    assert_eq!((again.code(), again.message()), (Code::NotFound, "job not found"));
}

#[tokio::test]
async fn bad_ids_dead_letters_and_long_reasons_are_refused() {
    if is_reference() {
        return;
    }
    let server = TestServer::start(RETAIN);
    let mut client = server.raw_client().await;
    let malformed = client.cancel_job(cancel("not-a-uuid")).await.expect_err("malformed");
    assert_eq!(malformed.code(), Code::InvalidArgument);
    let unknown = client.cancel_job(cancel("0190a6e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b")).await.expect_err("unknown");
    assert_eq!(unknown.code(), Code::NotFound);

    let id = enqueue_one(&mut client, job("mail", "send")).await;
    let long = pb::CancelJobRequest { job_id: id.clone(), reason: Some("x".repeat(1025)) };
    assert_eq!(client.cancel_job(long).await.expect_err("too long").code(), Code::InvalidArgument);
    let leased = reserve_now(&mut client, &["mail"], LEASE_MS).await.remove(0);
    let nack = pb::NackRequest {
        job_id: id.clone(),
        attempt: leased.attempt,
        reason: None,
        retry: Some(pb::NackRetry { strategy: Some(pb::nack_retry::Strategy::DeadLetter(())) }),
        worker_id: None,
    };
    client.nack(nack).await.expect("dead-letter it");
    let dead = client.cancel_job(cancel(&id)).await.expect_err("already dead");
    assert_eq!(dead.code(), Code::FailedPrecondition);

    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert!(info.features.contains(&"cancel".to_string()));
}

#[tokio::test]
async fn the_official_0_1_client_sees_a_cancelled_lease_as_a_lost_one() {
    if is_reference() {
        return;
    }
    let server = TestServer::start(RETAIN);
    let mut raw = server.raw_client().await;
    let official = server.sepp_rs_client().await;
    let id = enqueue_one(&mut raw, job("mail", "send")).await;
    let options = sepp_rs::ReserveOptions::new(vec!["mail".to_string()], Duration::from_secs(60))
        .expect("valid options")
        .with_wait_timeout(Duration::from_secs(5));
    let jobs = official.reserve(&options).await.expect("reserve").expect("a job");
    raw.cancel_job(cancel(&id)).await.expect("cancel");
    let error = official.ack(&jobs[0].ctx).await.expect_err("refused");
    assert!(matches!(error, sepp_rs::client::LeaseError::JobNotFound), "{error:?}");
    // A cause it does not know reaches it as Unspecified, not as an error.
    let records = official.drain_dead_letters(Some("mail"), 10).await.expect("drain");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].cause, sepp_rs::DeadLetterCause::Unspecified);
}

#[tokio::test]
async fn a_cancel_is_durable_across_a_crash() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start(RETAIN);
    let mut client = server.raw_client().await;
    let queued = enqueue_one(&mut client, job("mail", "send")).await;
    let held = enqueue_one(&mut client, job("mail", "send")).await;
    let mut request = reserve(&["mail"], LEASE_MS);
    request.max_jobs = Some(2);
    let leased = client.reserve(request).await.unwrap().into_inner().jobs;
    let held_job = leased.iter().find(|job| job.id == held).expect("the second job is leased").clone();
    // Put the first one back to queued: nack it for a later retry, then cancel both.
    let nack = pb::NackRequest {
        job_id: queued.clone(),
        attempt: 1,
        reason: None,
        retry: Some(pb::NackRetry { strategy: Some(pb::nack_retry::Strategy::Delay(ms(60_000))) }),
        worker_id: None,
    };
    client.nack(nack).await.expect("nack");
    client.cancel_job(cancel(&queued)).await.expect("cancel the scheduled job");
    client.cancel_job(cancel(&held)).await.expect("cancel the leased job");

    let killed = std::process::Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().unwrap();
    assert!(killed.success());
    server.wait_exit(Duration::from_secs(20));
    server.start_again();
    let mut client = server.raw_client().await;
    let refused = client.ack(ack_of(&held_job)).await.expect_err("still cancelled after the crash");
    assert_eq!(refused.metadata().get("sepp-cancelled").and_then(|v| v.to_str().ok()), Some("true"));
    let causes: Vec<i32> = drained(&mut client, "mail").await.iter().map(|record| record.cause).collect();
    assert_eq!(causes, vec![pb::DeadLetterCause::Cancelled as i32; 2]);
}
