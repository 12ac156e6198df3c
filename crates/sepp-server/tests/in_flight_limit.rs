//! A queue's `max_in_flight` against the real binary: reserves from several connections never
//! hold more than the limit, a reserve parked behind the limit is served by the ack that frees
//! a slot, and a hot reload that raises the limit serves parked reserves at once.

mod common;

use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;

const WAIT: Duration = Duration::from_secs(20);
const LIMITED: &str = "[[queues]]\nname = \"db\"\nmax_in_flight = 2\n";

#[tokio::test]
async fn reserves_across_connections_hold_at_most_the_limit_and_an_ack_serves_the_parked_one() {
    if is_reference() {
        return; // 0.1 has no in-flight limit.
    }
    let server = TestServer::start(&watching_parked(LIMITED));
    let mut producer = server.raw_client().await;
    for _ in 0..5 {
        enqueue_one(&mut producer, job("db", "t")).await;
    }
    let mut first = server.raw_client().await;
    let mut second = server.raw_client().await;
    let mut request = reserve(&["db"], 60_000);
    request.max_jobs = Some(10);
    let held = first.reserve(request.clone()).await.unwrap().into_inner().jobs;
    assert_eq!(held.len(), 2, "ten asked, two allowed");
    assert!(second.reserve(request).await.unwrap().into_inner().jobs.is_empty(), "no slot left for another worker");

    let parked = reserve_waiting(&server, "db", Some(10));
    server.wait_parked(1).await;
    let ack = pb::AckRequest { job_id: held[0].id.clone(), attempt: held[0].attempt, worker_id: None };
    first.ack(ack).await.expect("ack");
    let served = tokio::time::timeout(WAIT, parked).await.expect("the parked reserve is served").unwrap();
    assert_eq!(served.len(), 1, "the ack freed one slot");
}

#[tokio::test]
async fn raising_the_limit_by_hot_reload_serves_the_parked_reserve() {
    if is_reference() {
        return;
    }
    let server = TestServer::start(&watching_parked(LIMITED));
    server.wait_for_log("watching config file for hot reload", WAIT).await.expect("watching");
    let mut client = server.raw_client().await;
    for _ in 0..4 {
        enqueue_one(&mut client, job("db", "t")).await;
    }
    let mut request = reserve(&["db"], 60_000);
    request.max_jobs = Some(10);
    assert_eq!(client.reserve(request).await.unwrap().into_inner().jobs.len(), 2);
    let parked = reserve_waiting(&server, "db", Some(10));
    server.wait_parked(1).await;
    server.write_config("[[queues]]\nname = \"db\"\nmax_in_flight = 3\n");
    let served = tokio::time::timeout(WAIT, parked).await.expect("the parked reserve is served").unwrap();
    assert_eq!(served.len(), 1, "one more slot");
}

#[test]
fn a_limit_of_zero_is_refused_at_startup_with_the_key_named() {
    if is_reference() {
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let config = dir.path().join("sepp.toml");
    std::fs::write(&config, "[[queues]]\nname = \"db\"\nmax_in_flight = 0\n").unwrap();
    let run = run_to_exit(&["config", "check", "--config", &config.display().to_string()], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("queues.db.max_in_flight must be at least 1"), "{}", run.stdout);
}
