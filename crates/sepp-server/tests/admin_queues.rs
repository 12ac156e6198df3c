//! Queues through the admin API: listing, overrides (declaring a queue in the file), and
//! deletion with its etag, guards, close tombstone and purge.

mod admin_support;
mod common;

use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::{Value, json};

use pb::job_rejection::Reason;

fn names(queues: &Value) -> Vec<String> {
    queues.as_array().unwrap().iter().map(|queue| queue["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn queues_are_listed_by_name_with_depths_overrides_and_effective_limits() {
    let admin = AdminServer::start("[[queues]]\nname = \"zeta\"\nmax_payload_bytes = 100\n");
    let mut client = grpc(&admin).await;
    enqueue_one(&mut client, job("alpha", "t")).await;
    let queues = eventually("alpha is listed", Duration::from_secs(10), || async {
        let queues = admin.get("/queues", VIEWER_KEY).await.expect(StatusCode::OK);
        (names(&queues) == ["alpha", "zeta"]).then_some(queues)
    })
    .await;
    let alpha = &queues[0];
    assert_eq!(alpha["depths"], json!({ "ready": 1, "scheduled": 0, "inflight": 0, "dead_lettered": 0 }));
    assert_eq!((alpha["declared"].as_bool(), alpha["overrides"].clone()), (Some(false), Value::Null));
    let zeta = &queues[1];
    assert_eq!(zeta["declared"], true);
    assert_eq!(zeta["overrides"].as_object().unwrap().len(), 27, "the name and all 26 fields");
    assert_eq!(
        (zeta["overrides"]["max_payload_bytes"].as_u64(), zeta["overrides"]["max_queue_depth"].clone()),
        (Some(100), Value::Null)
    );
    assert_eq!(zeta["effective"].as_object().unwrap().len(), 26);
    assert_eq!(zeta["effective"]["max_payload_bytes"], 100);
    assert_eq!(zeta["effective"]["retry_backoff"], "none");
    let unknown = admin.get("/queues/nowhere", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!((unknown["name"].as_str(), unknown["declared"].as_bool()), (Some("nowhere"), Some(false)));

    // Pages: at most `limit`, after a name; the header counts them all.
    let first = admin.http.get(admin.api("/queues?limit=1")).bearer_auth(VIEWER_KEY).send().await.unwrap();
    assert_eq!(first.headers()["sepp-queue-count"], "2");
    assert_eq!(names(&first.json().await.unwrap()), ["alpha"]);
    let next = admin.get("/queues?limit=1&after=alpha", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(names(&next), ["zeta"]);
    let past = admin.get("/queues?after=zeta", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(past, json!([]));
    for limit in ["0", "1001", "x"] {
        let refused = admin.get(&format!("/queues?limit={limit}"), VIEWER_KEY).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "limit={limit}: {}", refused.body);
    }
    assert_eq!(unknown["depths"]["ready"], 0);
}

/// A queue change names only its own restart-only fields, not those an earlier change left
/// pending (as 0.1.1 answers).
#[tokio::test]
async fn a_queue_change_requires_a_restart_for_its_own_fields_only() {
    let admin = AdminServer::start("");
    let etag = admin.etag().await;
    let body = json!({ "etag": etag, "changes": [{ "path": "storage.dedup_window_ms", "value": 60_000 }] });
    let written = admin.put("/config", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(written["requires_restart"], json!(["storage.dedup_window_ms"]));
    let body = json!({ "etag": written["etag"], "overrides": { "dedup_window_ms": 5_000 } });
    let written = admin.put("/queues/windowed", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(written["requires_restart"], json!(["queues[].dedup_window_ms"]));
    let body = json!({ "etag": written["etag"], "overrides": { "max_queue_depth": 7 } });
    let written = admin.put("/queues/windowed", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(written["requires_restart"], json!([]));
    // Both stay pending until a restart.
    let view = admin.get("/config", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(view["pending_restart"], json!(["storage.dedup_window_ms", "queues[].dedup_window_ms"]));
}

#[tokio::test]
async fn putting_a_queue_declares_it_in_the_file_keeping_comments_and_applies_it() {
    let admin = AdminServer::start("");
    let original = std::fs::read_to_string(admin.server.config_path()).unwrap();
    admin.server.write_raw_config(&format!("# production settings\n{original}"));
    let etag = eventually("the watcher saw the comment", Duration::from_secs(15), || async {
        let etag = admin.etag().await;
        std::fs::read_to_string(admin.server.config_path()).unwrap().starts_with("# production").then_some(etag)
    })
    .await;
    let body = json!({ "etag": etag, "overrides": { "max_queue_depth": 1, "retry_backoff": "exponential" } });
    let written = admin.put("/queues/capped", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!((written["applied"].as_bool(), written["requires_restart"].clone()), (Some(true), json!([])));
    let file = std::fs::read_to_string(admin.server.config_path()).unwrap();
    assert!(file.starts_with("# production settings"), "{file}");
    assert!(file.contains("[[queues]]") && file.contains("name = \"capped\""), "{file}");
    assert_ne!(written["etag"].as_str().unwrap(), etag);
    let queue = admin.get("/queues/capped", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!((queue["declared"].as_bool(), queue["effective"]["max_queue_depth"].as_u64()), (Some(true), Some(1)));
    // Applied: the cap holds now.
    admin.enqueue("capped", json!({ "job_type": "t" })).await;
    let refused = admin.post("/queues/capped/jobs", OPERATOR_KEY, json!({ "job_type": "t" })).await;
    assert_eq!(refused.expect_error(StatusCode::UNPROCESSABLE_ENTITY, "rejected")["rejection"]["reason"], "queue_full");
    // null removes a field; {} still declares.
    let body = json!({ "etag": written["etag"], "overrides": { "max_queue_depth": null } });
    let written = admin.put("/queues/capped", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(
        admin.get("/queues/capped", VIEWER_KEY).await.expect(StatusCode::OK)["effective"]["max_queue_depth"],
        Value::Null
    );
    admin
        .put("/queues/other", ADMIN_KEY, json!({ "etag": written["etag"], "overrides": {} }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(admin.get("/queues/other", VIEWER_KEY).await.expect(StatusCode::OK)["declared"], true);
    let audit = admin.get("/audit?action_prefix=queue.", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(
        audit["entries"][2]["details"],
        json!({ "queue": "capped", "overrides": ["max_queue_depth", "retry_backoff"] })
    );
}

#[tokio::test]
async fn a_queue_put_needs_the_current_etag_and_known_fields() {
    let admin = AdminServer::start("");
    let stale = admin.put("/queues/q", ADMIN_KEY, json!({ "etag": "0000", "overrides": {} })).await;
    stale.expect_error(StatusCode::PRECONDITION_FAILED, "etag_mismatch");
    let etag = admin.etag().await;
    let unknown = admin.put("/queues/q", ADMIN_KEY, json!({ "etag": etag, "overrides": { "bogus": 1 } })).await;
    assert_eq!(
        unknown.expect_error(StatusCode::BAD_REQUEST, "invalid_change")["error"],
        "unknown queue override field \"bogus\""
    );
    let invalid =
        admin.put("/queues/q", ADMIN_KEY, json!({ "etag": etag, "overrides": { "default_priority": 12 } })).await;
    invalid.expect_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid");
    assert_eq!(admin.etag().await, etag, "nothing was written");
}

#[tokio::test]
async fn deleting_a_queue_needs_if_match_and_refuses_queues_with_jobs_unless_purged() {
    let admin = AdminServer::start("[[queues]]\nname = \"q\"\n");
    let mut client = grpc(&admin).await;
    admin.delete("/queues/q", ADMIN_KEY, None).await.expect_error(StatusCode::BAD_REQUEST, "if_match_required");
    admin
        .delete("/queues/q", ADMIN_KEY, Some("stale"))
        .await
        .expect_error(StatusCode::PRECONDITION_FAILED, "etag_mismatch");
    let etag = admin.etag().await;
    enqueue_one(&mut client, job("q", "t")).await;
    admin.delete("/queues/q", ADMIN_KEY, Some(&etag)).await.expect_error(StatusCode::CONFLICT, "not_empty");
    let leased = reserve_now(&mut client, &["q"], 60_000).await;
    admin.delete("/queues/q?purge=true", ADMIN_KEY, Some(&etag)).await.expect_error(StatusCode::CONFLICT, "inflight");
    // The tombstone is cleared after a refusal: the queue takes jobs again.
    enqueue_one(&mut client, job("q", "t")).await;
    client.ack(ack(&leased[0].id, 1)).await.unwrap();
    assert!(std::fs::read_to_string(admin.server.config_path()).unwrap().contains("name = \"q\""));
}

#[tokio::test]
async fn a_purge_removes_jobs_dead_letters_and_keys_then_the_declaration_and_audits_it() {
    let admin = AdminServer::start("[[queues]]\nname = \"q\"\n");
    let mut client = grpc(&admin).await;
    for key in ["a", "b"] {
        enqueue_one(&mut client, pb::EnqueueRequest { idempotency_key: Some(key.into()), ..job("q", "t") }).await;
    }
    enqueue_one(
        &mut client,
        pb::EnqueueRequest {
            scheduled_at: Some(prost_types::Timestamp { seconds: now_ms() / 1000 + 600, nanos: 0 }),
            ..job("q", "t")
        },
    )
    .await;
    let leased = reserve_now(&mut client, &["q"], 60_000).await;
    client.nack(nack(&leased[0].id, 1, Some(pb::nack_retry::Strategy::DeadLetter(())))).await.unwrap();
    // Left: one ready, one scheduled, one dead letter, two idempotency keys.
    let etag = admin.etag().await;
    let answer = admin.delete("/queues/q?purge=true", ADMIN_KEY, Some(&etag)).await.expect(StatusCode::OK);
    assert_eq!(answer["purged"], 5);
    assert_ne!(answer["etag"].as_str().unwrap(), etag, "the declaration left the file");
    assert!(!std::fs::read_to_string(admin.server.config_path()).unwrap().contains("name = \"q\""));
    assert_eq!(answer["etag"], admin.etag().await);
    let queues = eventually("q leaves the listing", Duration::from_secs(10), || async {
        let queues = admin.get("/queues", VIEWER_KEY).await.expect(StatusCode::OK);
        (!names(&queues).contains(&"q".to_string())).then_some(queues)
    })
    .await;
    assert_eq!(queues, json!([]));
    // Its idempotency keys went too.
    let again =
        enqueue_one(&mut client, pb::EnqueueRequest { idempotency_key: Some("a".into()), ..job("q", "t") }).await;
    assert!(!again.is_empty());
    let audit = admin.get("/audit?action_prefix=queue.delete", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(audit["entries"][0]["details"], json!({ "queue": "q", "purged": 5 }));
}

#[tokio::test]
async fn enqueues_to_a_queue_being_purged_are_refused_as_closing() {
    let fast = WITH_KEYS.replace("[storage]\n", "[storage]\npersist_mode = \"buffer\"\n");
    let admin = AdminServer::from(TestServer::start(&fast));
    let mut client = grpc(&admin).await;
    for _ in 0..300 {
        client.enqueue_batch(batch((0..256).map(|_| job("big", "t")).collect())).await.unwrap();
    }
    let etag = admin.etag().await;
    let purge = {
        let request =
            admin.http.delete(admin.api("/queues/big?purge=true")).bearer_auth(ADMIN_KEY).header("if-match", etag);
        tokio::spawn(async move { reply(request.send().await.unwrap()).await })
    };
    let mut refused = 0;
    while !purge.is_finished() {
        let response = client.enqueue_batch(batch(vec![job("big", "t")])).await.unwrap().into_inner();
        if matches!(results(response).remove(0), Err(Reason::QueueClosing(_))) {
            refused += 1;
        }
    }
    let answer = purge.await.unwrap().expect(StatusCode::OK);
    assert!(answer["purged"].as_u64().unwrap() >= 300 * 256);
    assert!(refused > 0, "no enqueue met the tombstone during the purge");
    // Cleared once the deletion is done.
    let response = client.enqueue_batch(batch(vec![job("big", "t")])).await.unwrap().into_inner();
    assert!(results(response)[0].is_ok());
}
