//! The backup procedure of docs/operations.md#back-up-and-restore, run as written: stop the
//! server with SIGTERM, copy its data directory with `cp -a`, and start a server on the copy.
//! Every kind of state is in the copy (ready, scheduled and in-flight jobs with their payloads,
//! dead letters, idempotency keys), and the original and the copy then go their own ways.

mod common;

use std::process::Command;

use common::*;
use sepp_server::proto::v1 as pb;
use tempfile::TempDir;

const CONFIG: &str = "[storage]\ndead_letter_retention_ms = 3600000\n";
const LEASE_MS: u64 = 300_000;

/// A payload larger than the ones kept in memory, so the copy must hold it in its files.
fn payload(n: u8) -> Vec<u8> {
    vec![n; 4096]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_of_a_stopped_server_s_data_directory_holds_all_of_its_state() {
    let mut original = TestServer::start(CONFIG);
    let mut client = original.raw_client().await;
    let ready =
        enqueue_one(&mut client, with_payload(job("emails", "ready"), &payload(1), "application/octet-stream")).await;
    let mut keyed = job("emails", "keyed");
    keyed.idempotency_key = Some("order-42".into());
    let keyed_id = enqueue_one(&mut client, keyed.clone()).await;
    let mut later = job("emails", "later");
    later.scheduled_at = Some(prost_types::Timestamp { seconds: now_ms() / 1000 + 3600, nanos: 0 });
    enqueue_one(&mut client, later).await;
    let leased: Vec<pb::Job> = client
        .reserve(pb::ReserveRequest { max_jobs: Some(2), ..reserve(&["emails"], LEASE_MS) })
        .await
        .expect("reserve")
        .into_inner()
        .jobs;
    assert_eq!(leased.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [ready.as_str(), keyed_id.as_str()]);
    // The first stays in flight; the second becomes a dead letter.
    let dead = pb::nack_retry::Strategy::DeadLetter(());
    client.nack(nack(&keyed_id, 1, Some(dead))).await.expect("nack");
    drop(client);

    let status = original.sigterm_and_wait();
    assert!(status.success(), "the server exited with {status} on SIGTERM");
    let copy = TempDir::new().unwrap();
    let copied = Command::new("cp").arg("-a").arg(original.dir().join("db")).arg(copy.path().join("db")).status();
    assert!(copied.expect("run cp").success(), "cp -a failed");

    let restored = TestServer::start_in(copy, CONFIG);
    let line = restored.stdout().wait_for("storage ready", STARTUP_TIMEOUT).expect("storage ready");
    for count in ["ready=0", "scheduled=1", "inflight=1", "dead_letter=1"] {
        assert!(line.contains(count), "{count} is not in {line:?}");
    }
    let mut client = restored.raw_client().await;
    // The in-flight job is still leased under attempt 1, and acks.
    client.ack(ack(&ready, 1)).await.expect("the lease survived the copy");
    // The idempotency key is still bound.
    let again = client.enqueue_batch(batch(vec![keyed])).await.expect("enqueue").into_inner();
    assert_eq!(
        results(again),
        [Ok(pb::EnqueueResponse { job_id: keyed_id.clone(), deduplicated: true })],
        "the idempotency key did not survive the copy"
    );
    // The dead letter is there, payload and reason included.
    let drained = client
        .drain_dead_letters(pb::DrainDeadLettersRequest { queue: None, max: Some(10) })
        .await
        .expect("drain")
        .into_inner()
        .records;
    assert_eq!(drained.len(), 1);
    assert_eq!(drained[0].job.as_ref().map(|job| job.id.as_str()), Some(keyed_id.as_str()));

    // The original, started again, still has its own state: the copy took nothing from it.
    original.start_again();
    let line = original.stdout().wait_for("storage ready", STARTUP_TIMEOUT).expect("storage ready");
    assert!(line.contains("inflight=1") && line.contains("dead_letter=1"), "{line}");
}
