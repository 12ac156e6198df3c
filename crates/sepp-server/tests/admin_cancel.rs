//! Cancelling a job through the admin API against the real binary: a queued job is removed, a
//! leased one is marked for its worker, repeats and bad input get clear answers, only operators
//! may cancel, and every cancel is audited.

mod admin_support;
mod common;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::json;

#[tokio::test]
async fn a_queued_job_is_removed_and_a_leased_one_is_marked_for_its_worker() {
    if is_reference() {
        return; // 0.1 has no cancel.
    }
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let queued = enqueue_one(&mut client, job("q", "t")).await;
    let answer = admin
        .post(&format!("/jobs/{queued}/cancel"), OPERATOR_KEY, json!({ "reason": "duplicate order" }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(answer, json!({ "job_id": queued, "outcome": "removed" }));
    admin.get(&format!("/jobs/{queued}"), VIEWER_KEY).await.expect_error(StatusCode::NOT_FOUND, "not_found");

    let leased_id = enqueue_one(&mut client, job("q", "t")).await;
    let leased = reserve_now(&mut client, &["q"], 60_000).await.remove(0);
    let path = format!("/jobs/{leased_id}/cancel");
    assert_eq!(admin.post(&path, OPERATOR_KEY, json!({})).await.expect(StatusCode::OK)["outcome"], "lease_cancelled");
    assert_eq!(admin.post(&path, OPERATOR_KEY, json!({})).await.expect(StatusCode::OK)["outcome"], "already_cancelled");
    let ack = pb::AckRequest { job_id: leased.id.clone(), attempt: leased.attempt, worker_id: None };
    let refused = client.ack(ack).await.expect_err("the worker learns it");
    assert_eq!(refused.metadata().get("sepp-cancelled").and_then(|v| v.to_str().ok()), Some("true"));
    admin.post(&path, OPERATOR_KEY, json!({})).await.expect_error(StatusCode::CONFLICT, "already_dead_lettered");

    let audit = admin.get("/audit?limit=2", ADMIN_KEY).await.expect(StatusCode::OK);
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(entries[0]["action"], "job.cancel");
    assert_eq!(entries[0]["details"], json!({ "queue": "q", "job_id": leased_id, "was_leased": true }));
    assert_eq!(
        entries[1]["details"],
        json!({ "queue": "q", "job_id": queued, "was_leased": false, "reason": "duplicate order" })
    );
}

#[tokio::test]
async fn viewers_cannot_cancel_and_bad_ids_are_answered_clearly() {
    if is_reference() {
        return;
    }
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let id = enqueue_one(&mut client, job("q", "t")).await;
    admin
        .post(&format!("/jobs/{id}/cancel"), VIEWER_KEY, json!({}))
        .await
        .expect_error(StatusCode::FORBIDDEN, "forbidden");
    admin
        .post("/jobs/not-a-uuid/cancel", OPERATOR_KEY, json!({}))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    let unknown = "/jobs/0190a6e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b/cancel";
    admin.post(unknown, OPERATOR_KEY, json!({})).await.expect_error(StatusCode::NOT_FOUND, "not_found");
    let long = json!({ "reason": "x".repeat(1025) });
    admin
        .post(&format!("/jobs/{id}/cancel"), OPERATOR_KEY, long)
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(reserve_now(&mut client, &["q"], 60_000).await.len(), 1, "nothing was cancelled");
}
