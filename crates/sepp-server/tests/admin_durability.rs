//! Admin mutations and their audit entries are durable once acknowledged: after a SIGKILL and a
//! restart the queue state they made and the audit log are there, numbering goes on, and a
//! deletion cut short leaves its close tombstone in force.

mod admin_support;
mod common;

use std::process::Command;
use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::{Value, json};

use pb::job_rejection::Reason;

fn kill9(server: &mut TestServer) {
    let sent = Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().expect("run kill");
    assert!(sent.success(), "kill -KILL failed");
    server.wait_exit(Duration::from_secs(20));
}

fn crash_and_restart(admin: &mut AdminServer) {
    kill9(&mut admin.server);
    admin.server.start_again();
    admin.refresh_url();
}

fn actions(audit: &Value) -> Vec<(u64, String)> {
    audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| (entry["seq"].as_u64().unwrap(), entry["action"].as_str().unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn acknowledged_admin_actions_and_their_audit_entries_survive_sigkill() {
    let mut admin = AdminServer::start("");
    admin.login("root", ADMIN_KEY).await;
    let enqueued = admin
        .enqueue("q", json!({ "job_type": "t", "payload": { "encoding": "text/plain", "data_text": "kept" } }))
        .await;
    let doomed = admin.enqueue("q", json!({ "job_type": "t" })).await;
    let keys = AdminServer::keys(&admin.peek("q", "ready", "").await);
    admin
        .post("/queues/q/jobs:dead-letter", OPERATOR_KEY, json!({ "state": "ready", "keys_b64": keys, "reason": "r" }))
        .await
        .expect(StatusCode::OK);
    let dead = admin.peek("q", "dead_letter", "").await;
    let (requeue, delete): (Vec<String>, Vec<String>) = {
        let jobs = dead["jobs"].as_array().unwrap();
        let key_of =
            |id: &str| jobs.iter().find(|job| job["id"] == id).unwrap()["key_b64"].as_str().unwrap().to_owned();
        (vec![key_of(&enqueued)], vec![key_of(&doomed)])
    };
    admin
        .post("/queues/q/dead-letters:requeue", OPERATOR_KEY, json!({ "keys_b64": requeue }))
        .await
        .expect(StatusCode::OK);
    admin
        .post("/queues/q/dead-letters:delete", OPERATOR_KEY, json!({ "keys_b64": delete }))
        .await
        .expect(StatusCode::OK);
    admin
        .put("/queues/declared", ADMIN_KEY, json!({ "etag": admin.etag().await, "overrides": {} }))
        .await
        .expect(StatusCode::OK);
    let before = admin.get("/audit", ADMIN_KEY).await.expect(StatusCode::OK);

    crash_and_restart(&mut admin);

    let job = admin.get(&format!("/jobs/{enqueued}"), VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!((job["state"].as_str(), job["attempt"].as_u64()), (Some("ready"), Some(1)));
    assert_eq!(job["payload"]["data_b64"], "a2VwdA==");
    admin.get(&format!("/jobs/{doomed}"), VIEWER_KEY).await.expect_error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(admin.peek("q", "dead_letter", "").await["jobs"], json!([]));
    let after = admin.get("/audit", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(after["entries"], before["entries"], "the whole audit log, as it was");
    let expected: Vec<&str> = vec![
        "queue.put",
        "dead_letters.delete",
        "dead_letters.requeue",
        "jobs.dead_letter",
        "job.enqueue",
        "job.enqueue",
        "session.login",
    ];
    assert_eq!(actions(&after).iter().map(|(_, action)| action.as_str()).collect::<Vec<_>>(), expected);
    // Numbering goes on after the restart.
    admin.enqueue("q", json!({ "job_type": "t" })).await;
    let latest = admin.get("/audit?limit=1", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(actions(&latest)[0].0, actions(&after)[0].0 + 1);
}

#[tokio::test]
async fn a_purge_survives_sigkill_and_an_interrupted_one_leaves_the_queue_closing() {
    let fast = WITH_KEYS.replace("[storage]\n", "[storage]\npersist_mode = \"buffer\"\n");
    let mut admin = AdminServer::from(TestServer::start(&fast));
    let mut client = grpc(&admin).await;
    for _ in 0..300 {
        client.enqueue_batch(batch((0..256).map(|_| job("big", "t")).collect())).await.unwrap();
    }
    let etag = admin.etag().await;
    let request =
        admin.http.delete(admin.api("/queues/big?purge=true")).bearer_auth(ADMIN_KEY).header("if-match", etag);
    let purge = tokio::spawn(async move { request.send().await });
    // Kill the server as soon as the tombstone refuses an enqueue, before the purge is done.
    loop {
        let response = client.enqueue_batch(batch(vec![job("big", "t")])).await.unwrap().into_inner();
        if matches!(results(response).remove(0), Err(Reason::QueueClosing(_))) {
            break;
        }
        assert!(!purge.is_finished(), "the purge finished before an enqueue met its tombstone");
    }
    crash_and_restart(&mut admin);
    let _ = purge.await;
    let mut client = grpc(&admin).await;
    let response = client.enqueue_batch(batch(vec![job("big", "t")])).await.unwrap().into_inner();
    assert!(matches!(results(response).remove(0), Err(Reason::QueueClosing(_))), "the tombstone is in the log");
    // A finished purge is durable too: the tombstone stands for 30 s, so purge another queue.
    client.enqueue_batch(batch((0..10).map(|_| job("small", "t")).collect())).await.unwrap();
    let etag = admin.etag().await;
    let answer = admin.delete("/queues/small?purge=true", ADMIN_KEY, Some(&etag)).await.expect(StatusCode::OK);
    assert_eq!(answer["purged"], 10);
    crash_and_restart(&mut admin);
    assert_eq!(admin.peek("small", "ready", "").await["jobs"], json!([]));
    let audit = admin.get("/audit?action_prefix=queue.delete", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(audit["entries"].as_array().unwrap().len(), 1, "the interrupted deletion was never acknowledged");
}
