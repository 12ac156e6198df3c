//! A queue's rate limit against the real binary: a reserve takes only the tokens there are, a
//! reserve waiting on the queue is served when the next token comes (not answered empty), and a
//! restart does not refill the bucket.

mod common;

use std::time::Duration;

use common::*;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn reserves_take_the_tokens_there_are_and_a_parked_one_is_served_by_the_next() {
    if is_reference() {
        return; // 0.1 has no rate limits.
    }
    let server =
        TestServer::start("[[queues]]\nname = \"api\"\nrate_limit = 2\nrate_period_ms = 1000\nrate_burst = 2\n");
    let mut client = server.raw_client().await;
    for _ in 0..4 {
        enqueue_one(&mut client, job("api", "call")).await;
    }
    let mut request = reserve(&["api"], 60_000);
    request.max_jobs = Some(10);
    assert_eq!(client.reserve(request).await.unwrap().into_inner().jobs.len(), 2, "the burst");
    // Waits for the next token instead of answering empty at once.
    let parked = reserve_waiting(&server, "api", Some(10));
    let served = tokio::time::timeout(WAIT, parked).await.expect("served when a token comes").unwrap();
    assert!(!served.is_empty(), "the parked reserve got a job, not an empty answer");
    assert!(served.len() <= 2);
}

#[tokio::test]
async fn a_restart_does_not_refill_the_bucket() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start("[[queues]]\nname = \"api\"\nrate_limit = 1\nrate_period_ms = 3600000\n");
    let mut client = server.raw_client().await;
    for _ in 0..2 {
        enqueue_one(&mut client, job("api", "call")).await;
    }
    assert_eq!(reserve_now(&mut client, &["api"], 60_000).await.len(), 1);
    let killed = std::process::Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().unwrap();
    assert!(killed.success());
    server.wait_exit(Duration::from_secs(20));
    server.start_again();
    let mut client = server.raw_client().await;
    assert!(reserve_now(&mut client, &["api"], 60_000).await.is_empty(), "one lease an hour, also after a crash");
}
