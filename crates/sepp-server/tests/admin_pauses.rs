//! Pausing and resuming queues through the admin API against the real binary: reserves skip a
//! paused queue (parked ones are served when it resumes), enqueues go on, the roles and bad
//! input are checked, a pause with an end lifts itself, and pauses survive SIGKILL.

mod admin_support;
mod common;

use std::process::Command;
use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn parking_server() -> AdminServer {
    AdminServer::from(TestServer::start(&watching_parked(WITH_KEYS)))
}

#[tokio::test]
async fn a_paused_queue_takes_enqueues_serves_no_reserve_and_wakes_parked_ones_on_resume() {
    let admin = parking_server();
    let mut client = grpc(&admin).await;
    let paused =
        admin.post("/queues/q/pause", OPERATOR_KEY, json!({ "reason": "deploy" })).await.expect(StatusCode::OK);
    assert_eq!(paused, json!({ "queue": "q", "paused": true, "until_ms": null }));
    let job_id = enqueue_one(&mut client, job("q", "t")).await;
    let other = enqueue_one(&mut client, job("other", "t")).await;
    assert!(reserve_now(&mut client, &["q"], 60_000).await.is_empty(), "a paused queue serves nothing");
    let served = reserve_now(&mut client, &["q", "other"], 60_000).await;
    assert_eq!(served.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [other.as_str()]);

    let listed = admin.get("/pauses", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(listed, json!({ "all_queues": null, "queues": [{ "queue": "q", "until_ms": null }] }));
    let shown = eventually("the queue view shows the pause", WAIT, || async {
        let queue = admin.get("/queues/q", VIEWER_KEY).await.expect(StatusCode::OK);
        (!queue["paused"].is_null()).then_some(queue)
    })
    .await;
    assert_eq!(shown["paused"], json!({ "until_ms": null, "all_queues": false }));

    let waiting = reserve_waiting(&admin.server, "q", None);
    admin.server.wait_parked(1).await;
    let resumed = admin.post("/queues/q/resume", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    assert_eq!(resumed, json!({ "queue": "q", "resumed": true }));
    let jobs = tokio::time::timeout(WAIT, waiting).await.expect("the parked reserve is answered").unwrap();
    assert_eq!(jobs.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [job_id.as_str()]);

    let again = admin.post("/queues/q/resume", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    assert_eq!(again["resumed"], false, "nothing left to resume");
    let audit = admin.get("/audit?limit=2", ADMIN_KEY).await.expect(StatusCode::OK);
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(entries[0]["action"], "queue.resume");
    assert_eq!(entries[1]["action"], "queue.pause");
    assert_eq!(entries[1]["details"], json!({ "queue": "q", "reason": "deploy" }));
}

#[tokio::test]
async fn pausing_every_queue_holds_them_all_and_keeps_named_pauses() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    admin.post("/queues/a/pause", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    let all = admin.post("/queues:pause", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    assert_eq!(all, json!({ "all_queues": true, "paused": true, "until_ms": null }));
    enqueue_one(&mut client, job("a", "t")).await;
    let b = enqueue_one(&mut client, job("b", "t")).await;
    assert!(reserve_now(&mut client, &["a", "b"], 60_000).await.is_empty());
    let listed = admin.get("/pauses", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(listed["all_queues"], json!({ "until_ms": null }));
    let b_view = eventually("b shows the pause of every queue", WAIT, || async {
        let queues = admin.get("/queues", VIEWER_KEY).await.expect(StatusCode::OK);
        let b = queues.as_array().unwrap().iter().find(|queue| queue["name"] == "b").cloned();
        b.filter(|b| !b["paused"].is_null())
    })
    .await;
    assert_eq!(b_view["paused"], json!({ "until_ms": null, "all_queues": true }));

    admin.post("/queues:resume", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    let served = reserve_now(&mut client, &["a", "b"], 60_000).await;
    assert_eq!(served.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [b.as_str()], "a is still paused");
}

#[tokio::test]
async fn pausing_needs_an_operator_a_valid_name_a_future_end_and_known_fields() {
    let admin = AdminServer::start("");
    admin.post("/queues/q/pause", VIEWER_KEY, json!({})).await.expect_error(StatusCode::FORBIDDEN, "forbidden");
    admin.post("/queues:resume", VIEWER_KEY, json!({})).await.expect_error(StatusCode::FORBIDDEN, "forbidden");
    admin
        .post("/queues/bad%01name/pause", OPERATOR_KEY, json!({}))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    let past = admin
        .post("/queues/q/pause", OPERATOR_KEY, json!({ "until_ms": now_ms() - 1 }))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    assert!(past["error"].as_str().unwrap().contains("not in the future"), "{past}");
    // An unknown field is refused by the JSON extractor, in plain text, like every malformed body.
    let unknown = admin.post("/queues/q/pause", OPERATOR_KEY, json!({ "for_ms": 10 })).await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    let listed = admin.get("/pauses", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(listed["queues"], json!([]), "nothing refused was paused");
}

#[tokio::test]
async fn a_pause_with_an_end_lifts_itself_and_serves_the_parked_reserve() {
    let admin = parking_server();
    let mut client = grpc(&admin).await;
    let until_ms = now_ms() + 1_000;
    admin.post("/queues/q/pause", OPERATOR_KEY, json!({ "until_ms": until_ms })).await.expect(StatusCode::OK);
    let job_id = enqueue_one(&mut client, job("q", "t")).await;
    let waiting = reserve_waiting(&admin.server, "q", None);
    let jobs = tokio::time::timeout(WAIT, waiting).await.expect("the parked reserve is answered").unwrap();
    assert_eq!(jobs.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [job_id.as_str()]);
    assert!(now_ms() >= until_ms, "served before the pause ended");
    admin.server.wait_for_log("queue pause ended", WAIT).await.expect("the end is logged");
    let listed = admin.get("/pauses", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(listed["queues"], json!([]));
}

#[tokio::test]
async fn pauses_survive_sigkill_also_for_a_queue_with_no_jobs() {
    let mut admin = AdminServer::start("");
    admin.post("/queues/empty/pause", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    admin.post("/queues/full/pause", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    let mut client = grpc(&admin).await;
    enqueue_one(&mut client, job("full", "t")).await;

    let sent = Command::new("kill").arg("-KILL").arg(admin.server.pid().to_string()).status().expect("run kill");
    assert!(sent.success());
    admin.server.wait_exit(WAIT);
    admin.server.start_again();
    admin.refresh_url();

    let listed = admin.get("/pauses", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(
        listed["queues"],
        json!([{ "queue": "empty", "until_ms": null }, { "queue": "full", "until_ms": null }])
    );
    let mut client = grpc(&admin).await;
    assert!(reserve_now(&mut client, &["full"], 60_000).await.is_empty(), "still paused after the restart");
    admin.post("/queues/full/resume", OPERATOR_KEY, json!({})).await.expect(StatusCode::OK);
    assert_eq!(reserve_now(&mut client, &["full"], 60_000).await.len(), 1);
}
