//! Enqueue coalescing against the real server: concurrent enqueues share `EnqueueBatch` calls
//! (counted by the server's own `sepp_requests_total`), every caller gets its own result or
//! rejection, a lone caller's calls go out one by one, coalesced calls over the server's batch
//! limit are resent per caller, and the opt-out sends one call per enqueue.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{Server, calls, unique};
use sepp_client::client::{EnqueueError, LeaseError, SeppClient};
use sepp_client::{EnqueueRequest, JobRejection, ReserveOptions};

const METRICS: &str = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n";

fn job(queue: &str, job_type: &str) -> EnqueueRequest {
    EnqueueRequest::new(queue, job_type).unwrap()
}

/// A server with the Prometheus endpoint on a free port; `tail` adds more sections.
fn server_with_metrics(tail: &str) -> Server {
    Server::start_with("", &format!("{METRICS}\n{tail}"))
}

/// The server's count of successful `EnqueueBatch` calls, read from its Prometheus endpoint.
async fn enqueue_calls(server: &Server) -> u64 {
    calls(server, "EnqueueBatch").await
}

async fn reserve_all(client: &SeppClient, queue: &str, max: u32) -> usize {
    let options = ReserveOptions::new([queue], Duration::from_secs(30))
        .unwrap()
        .with_wait_timeout(Duration::ZERO)
        .with_max_jobs(max);
    client.reserve(&options).await.unwrap().map_or(0, |jobs| jobs.len())
}

#[tokio::test]
async fn concurrent_enqueues_share_calls_and_each_caller_gets_its_own_result() {
    let server = server_with_metrics("");
    let client = server.client().await;
    let queue = unique("coalesced");
    let too_long = "x".repeat(300);
    let callers = 120;
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..callers {
        // Clones share the pipeline, as the client itself would.
        let client = client.clone();
        let job_type = if index % 3 == 0 { too_long.clone() } else { format!("t{index}") };
        let queue = queue.clone();
        tasks.spawn(async move { (index, client.enqueue(job(&queue, &job_type)).await) });
    }
    let mut accepted = HashSet::new();
    while let Some(joined) = tasks.join_next().await {
        let (index, result) = joined.unwrap();
        if index % 3 == 0 {
            assert!(
                matches!(
                    result,
                    Err(EnqueueError::Rejected(JobRejection::JobTypeNameTooLong { limit: 256, actual: 300 }))
                ),
                "caller {index}: {result:?}"
            );
        } else {
            accepted.insert(result.unwrap_or_else(|error| panic!("caller {index}: {error}")).job_id);
        }
    }
    assert_eq!(accepted.len(), 80, "every accepted caller has a job id of its own");
    let calls = enqueue_calls(&server).await;
    assert!(calls >= 1 && calls < callers as u64, "{callers} enqueues took {calls} calls");
    // Mixed batches with an idempotency key travel in their own lane and still answer per job.
    let keyed = client.enqueue_batch([job(&queue, "k").with_idempotency_key("same")]);
    let again = client.enqueue_batch([job(&queue, "k").with_idempotency_key("same")]);
    let (first, second) = tokio::join!(keyed, again);
    let (first, second) = (first.unwrap().remove(0).unwrap(), second.unwrap().remove(0).unwrap());
    assert_eq!(first.job_id, second.job_id);
    assert_eq!(reserve_all(&client, &queue, 200).await, 81);
}

#[tokio::test]
async fn a_lone_caller_sends_each_enqueue_at_once() {
    let server = server_with_metrics("");
    let client = server.client().await;
    let queue = unique("lone");
    for index in 0..5 {
        client.enqueue(job(&queue, &format!("t{index}"))).await.unwrap();
    }
    assert_eq!(enqueue_calls(&server).await, 5);
    assert_eq!(reserve_all(&client, &queue, 10).await, 5);
}

#[tokio::test]
async fn coalesced_calls_over_the_servers_batch_limit_are_resent_per_caller() {
    let server = server_with_metrics("[limits]\nmax_enqueue_batch = 3\n");
    let client = server.client().await;
    let queue = unique("limit");
    let mut tasks = tokio::task::JoinSet::new();
    for caller in 0..40 {
        let client = client.clone();
        let batch = vec![job(&queue, &format!("a{caller}")), job(&queue, &format!("b{caller}"))];
        tasks.spawn(async move { client.enqueue_batch(batch).await });
    }
    while let Some(joined) = tasks.join_next().await {
        let results = joined.unwrap().unwrap();
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }
    assert_eq!(reserve_all(&client, &queue, 100).await, 80);
}

#[tokio::test]
async fn without_coalescing_every_enqueue_is_its_own_call() {
    let server = server_with_metrics("");
    let client = SeppClient::builder(server.url()).coalesce_enqueues(false).connect().await.unwrap();
    let queue = unique("opt-out");
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..30 {
        let client = client.clone();
        let queue = queue.clone();
        tasks.spawn(async move { client.enqueue(job(&queue, &format!("t{index}"))).await.unwrap().job_id });
    }
    let mut ids = HashSet::new();
    while let Some(joined) = tasks.join_next().await {
        ids.insert(joined.unwrap());
    }
    assert_eq!(ids.len(), 30);
    assert_eq!(enqueue_calls(&server).await, 30);
}

async fn reserve_jobs(client: &SeppClient, queue: &str, count: u32) -> Vec<sepp_client::Job> {
    let options = ReserveOptions::new([queue], Duration::from_secs(30))
        .unwrap()
        .with_wait_timeout(Duration::ZERO)
        .with_max_jobs(count);
    let jobs = client.reserve(&options).await.unwrap().unwrap();
    assert_eq!(jobs.len(), count as usize);
    jobs
}

#[tokio::test]
async fn concurrent_acks_share_ack_batch_calls_and_each_gets_its_own_answer() {
    let server = server_with_metrics("");
    let client = server.client().await;
    let queue = unique("acks");
    client.enqueue_batch((0..40).map(|index| job(&queue, &format!("t{index}")))).await.unwrap();
    let jobs = reserve_jobs(&client, &queue, 40).await;
    // A lone ack is a plain Ack, at once.
    client.ack(&jobs[0].ctx).await.unwrap();
    assert_eq!(calls(&server, "Ack").await, 1);
    let mut tasks = tokio::task::JoinSet::new();
    for (index, job) in jobs.into_iter().enumerate() {
        let client = client.clone();
        tasks.spawn(async move { (index, client.ack(&job.ctx).await) });
    }
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap() {
            // Acked already: what its own Ack would have said.
            (0, result) => assert!(matches!(result, Err(LeaseError::JobNotFound)), "{result:?}"),
            (index, result) => assert!(result.is_ok(), "ack {index}: {result:?}"),
        }
    }
    let batches = calls(&server, "AckBatch").await;
    let singles = calls(&server, "Ack").await;
    assert!(batches >= 1, "no AckBatch call");
    assert!(batches + singles < 41, "41 acks took {batches} AckBatch and {singles} Ack calls");
    assert_eq!(reserve_all(&client, &queue, 50).await, 0, "every job was acked");
}

#[tokio::test]
async fn without_ack_coalescing_every_ack_is_its_own_call() {
    let server = server_with_metrics("");
    let client = SeppClient::builder(server.url()).coalesce_acks(false).connect().await.unwrap();
    let queue = unique("acks-opt-out");
    client.enqueue_batch((0..10).map(|index| job(&queue, &format!("t{index}")))).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for job in reserve_jobs(&client, &queue, 10).await {
        let client = client.clone();
        tasks.spawn(async move { client.ack(&job.ctx).await });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap().unwrap();
    }
    assert_eq!(calls(&server, "Ack").await, 10);
    assert_eq!(calls(&server, "AckBatch").await, 0);
}
