//! `AckBatch`, the call this server adds to the 0.1 protocol: every item is answered as its own
//! `Ack` would be, the successes are durable when the call returns, and the call's own limits.

mod common;

use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;

const LEASE_MS: u64 = 60_000;

fn outcome(result: &pb::AckResult) -> Result<&str, (Code, &str)> {
    match result.outcome.as_ref().expect("every result has an outcome") {
        pb::ack_result::Outcome::Success(success) => Ok(&success.job_id),
        pb::ack_result::Outcome::Error(status) => Err((Code::from_i32(status.code), &status.message)),
    }
}

#[tokio::test]
async fn server_info_lists_ack_batch_among_its_features() {
    if is_reference() {
        return; // 0.1 has no AckBatch.
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert_eq!(
        info.features,
        ["ack_batch", "cancel", "schedules", "pause", "in_flight_limits", "rate_limits", "key_limits", "consume"]
            .map(String::from)
    );
}

#[tokio::test]
async fn each_item_is_answered_as_its_own_ack_would_be() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    for _ in 0..3 {
        enqueue_one(&mut client, job("mail", "send")).await;
    }
    let mut request = reserve(&["mail"], LEASE_MS);
    request.max_jobs = Some(3);
    let jobs = client.reserve(request).await.unwrap().into_inner().jobs;
    assert_eq!(jobs.len(), 3);

    let stale = pb::AckRequest { attempt: jobs[1].attempt + 1, ..ack_of(&jobs[1]) };
    let unknown = pb::AckRequest { job_id: "0190a6e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b".into(), attempt: 1, worker_id: None };
    let malformed = pb::AckRequest { job_id: "not-a-uuid".into(), attempt: 1, worker_id: None };
    let acks = vec![ack_of(&jobs[0]), stale, unknown, malformed, ack_of(&jobs[2])];
    let results = client.ack_batch(pb::AckBatchRequest { acks: acks.clone() }).await.unwrap().into_inner().results;

    assert_eq!(results.len(), 5, "one result per item, in order");
    assert_eq!(outcome(&results[0]), Ok(jobs[0].id.as_str()));
    assert_eq!(outcome(&results[4]), Ok(jobs[2].id.as_str()));
    // The same three acks sent alone fail with exactly the statuses the batch reported.
    for (index, item) in [(1, &acks[1]), (2, &acks[2]), (3, &acks[3])] {
        let alone = client.ack(item.clone()).await.expect_err("fails alone too");
        assert_eq!(outcome(&results[index]), Err((alone.code(), alone.message())), "item {index}");
    }
    assert_eq!(outcome(&results[1]).unwrap_err().0, Code::FailedPrecondition);
    assert_eq!(outcome(&results[2]).unwrap_err().0, Code::NotFound);
    assert_eq!(outcome(&results[3]).unwrap_err().0, Code::InvalidArgument);

    // The job whose item failed is still leased; the acked ones are gone.
    client.ack(ack_of(&jobs[1])).await.expect("the stale item left its job in flight");
    let again = client.ack(ack_of(&jobs[0])).await.expect_err("an acked job is gone");
    assert_eq!(again.code(), Code::NotFound);
}

#[tokio::test]
async fn acked_items_stay_acked_after_a_crash() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start("");
    let mut client = server.raw_client().await;
    for _ in 0..4 {
        enqueue_one(&mut client, job("mail", "send")).await;
    }
    let mut request = reserve(&["mail"], LEASE_MS);
    request.max_jobs = Some(4);
    let jobs = client.reserve(request).await.unwrap().into_inner().jobs;
    assert_eq!(jobs.len(), 4);
    let acks = jobs[..3].iter().map(ack_of).collect();
    let results = client.ack_batch(pb::AckBatchRequest { acks }).await.unwrap().into_inner().results;
    assert!(results.iter().all(|result| outcome(result).is_ok()));

    // SIGKILL: nothing gets flushed on the way out.
    let killed = std::process::Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().unwrap();
    assert!(killed.success());
    server.wait_exit(std::time::Duration::from_secs(20));
    server.start_again();
    let mut client = server.raw_client().await;
    // Only the unacked job is left: its lease survived the restart.
    client.ack(ack_of(&jobs[3])).await.expect("the fourth job is still leased");
    for job in &jobs[..3] {
        assert_eq!(client.ack(ack_of(job)).await.expect_err("acked before the kill").code(), Code::NotFound);
    }
}

#[tokio::test]
async fn an_empty_or_oversized_ack_batch_is_invalid() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("[limits]\nmax_enqueue_batch = 2\n");
    let mut client = server.raw_client().await;
    let empty = client.ack_batch(pb::AckBatchRequest { acks: vec![] }).await.expect_err("empty");
    assert_eq!(empty.code(), Code::InvalidArgument);
    assert!(empty.message().contains("at least one"), "{}", empty.message());

    let item = pb::AckRequest { job_id: "0190a6e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b".into(), attempt: 1, worker_id: None };
    let oversized =
        client.ack_batch(pb::AckBatchRequest { acks: vec![item; 3] }).await.expect_err("three over a limit of two");
    assert_eq!(oversized.code(), Code::InvalidArgument);
    assert!(oversized.message().contains("max_enqueue_batch (2)"), "{}", oversized.message());
}

#[tokio::test]
async fn the_item_of_a_cancelled_job_says_it_was_cancelled() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let cancelled_id = enqueue_one(&mut client, job("mail", "send")).await;
    enqueue_one(&mut client, job("mail", "send")).await;
    let mut request = reserve(&["mail"], LEASE_MS);
    request.max_jobs = Some(2);
    let jobs = client.reserve(request).await.unwrap().into_inner().jobs;
    client.cancel_job(pb::CancelJobRequest { job_id: cancelled_id.clone(), reason: None }).await.expect("cancelled");
    let results = client
        .ack_batch(pb::AckBatchRequest { acks: jobs.iter().map(ack_of).collect() })
        .await
        .unwrap()
        .into_inner()
        .results;
    for (job, result) in jobs.iter().zip(&results) {
        match &result.outcome {
            Some(pb::ack_result::Outcome::Error(status)) => {
                assert_eq!(job.id, cancelled_id);
                assert_eq!(status.code, Code::NotFound as i32);
                assert!(status.cancelled, "the item carries what the trailer says alone: {status:?}");
            }
            Some(pb::ack_result::Outcome::Success(_)) => assert_ne!(job.id, cancelled_id),
            None => panic!("an item without an outcome"),
        }
    }
}
