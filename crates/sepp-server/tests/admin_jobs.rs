//! Jobs through the admin API: HTTP enqueue and its rejections, listings of every state with
//! cursors, the scan limit and filters, lookups by id and handle, admin dead-lettering, requeue
//! and delete of dead letters, bulk actions, and the workers view.

mod admin_support;
mod common;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::{Value, json};

async fn shown(admin: &AdminServer, id: &str) -> Value {
    admin.get(&format!("/jobs/{id}"), VIEWER_KEY).await.expect(StatusCode::OK)
}

#[tokio::test]
async fn an_http_enqueue_keeps_every_field_and_a_repeated_idempotency_key_returns_the_first_job() {
    let admin = AdminServer::start("");
    let scheduled_at_ms = now_ms() + 3_600_000;
    let body = json!({
        "job_type": "email",
        "payload": { "encoding": "application/json", "data_text": "{\"to\":\"ana\"}" },
        "priority": 7,
        "max_attempts": 500,
        "scheduled_at_ms": scheduled_at_ms,
        "idempotency_key": "order-17",
        "custom": { "tenant": 42, "ratio": 0.5, "big": 18446744073709551615u64, "vip": true, "name": "ana" },
    });
    let id = admin.enqueue("mail", body.clone()).await;
    let detail = shown(&admin, &id).await;
    assert_eq!((detail["queue"].as_str(), detail["state"].as_str()), (Some("mail"), Some("scheduled")));
    assert_eq!((detail["job_type"].as_str(), detail["priority"].as_u64()), (Some("email"), Some(7)));
    assert_eq!(detail["max_attempts"], 100, "clamped to the ceiling");
    assert_eq!((detail["attempt"].as_u64(), detail["scheduled_at_ms"].as_i64()), (Some(1), Some(scheduled_at_ms)));
    assert_eq!(
        detail["payload"],
        json!({ "encoding": "application/json", "size_bytes": 12, "data_b64": "eyJ0byI6ImFuYSJ9" })
    );
    assert_eq!(detail["custom"]["tenant"], 42);
    assert!(detail["custom"]["tenant"].is_i64(), "an integer stays an integer");
    assert_eq!(detail["custom"]["ratio"], 0.5);
    assert!(detail["custom"]["big"].is_f64(), "a number past i64 becomes a double");
    assert_eq!((detail["custom"]["vip"].as_bool(), detail["custom"]["name"].as_str()), (Some(true), Some("ana")));
    // The same key again: the first job's id, nothing new.
    assert_eq!(admin.enqueue("mail", body).await, id);
    assert_eq!(admin.peek("mail", "scheduled", "").await["jobs"].as_array().unwrap().len(), 1);
    let audit = admin.get("/audit?limit=1", ADMIN_KEY).await.expect(StatusCode::OK);
    let entry = &audit["entries"][0];
    assert_eq!(
        (entry["action"].as_str(), entry["actor"].as_str(), entry["role"].as_str()),
        (Some("job.enqueue"), Some("ops"), Some("operator"))
    );
    assert_eq!(entry["details"], json!({ "queue": "mail", "job_id": id, "job_type": "email" }));
}

#[tokio::test]
async fn enqueue_rejections_carry_their_label_and_bad_bodies_are_refused() {
    let admin = AdminServer::start(
        "[[queues]]\nname = \"small\"\nmax_payload_bytes = 4\n\n[[queues]]\nname = \"full\"\nmax_queue_depth = 0\n",
    );
    let post = |queue: &'static str, body: Value| {
        let admin = &admin;
        async move { admin.post(&format!("/queues/{queue}/jobs"), OPERATOR_KEY, body).await }
    };
    let too_large =
        post("small", json!({ "job_type": "t", "payload": { "encoding": "x", "data_text": "12345" } })).await;
    let body = too_large.expect_error(StatusCode::UNPROCESSABLE_ENTITY, "rejected");
    assert_eq!(body["rejection"]["reason"], "payload_too_large");
    assert_eq!(body["error"], format!("job rejected: {}", body["rejection"]["detail"].as_str().unwrap()));
    let body =
        post("full", json!({ "job_type": "t" })).await.expect_error(StatusCode::UNPROCESSABLE_ENTITY, "rejected");
    assert_eq!(body["rejection"]["reason"], "queue_full");
    let body = post("q", json!({ "job_type": "" })).await.expect_error(StatusCode::UNPROCESSABLE_ENTITY, "rejected");
    assert_eq!(body["rejection"], json!({ "reason": "invalid_request", "detail": "job_type must not be empty" }));
    let body = post("q", json!({ "job_type": "t", "priority": 12 }))
        .await
        .expect_error(StatusCode::UNPROCESSABLE_ENTITY, "rejected");
    assert_eq!(body["rejection"]["detail"], "priority must be <= 9");
    let far = now_ms() + 40 * 86_400_000;
    let body = post("q", json!({ "job_type": "t", "scheduled_at_ms": far }))
        .await
        .expect_error(StatusCode::UNPROCESSABLE_ENTITY, "rejected");
    assert_eq!(body["rejection"]["reason"], "scheduled_too_far");

    let body = post("q", json!({ "job_type": "t", "payload": { "encoding": "x" } }))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(body["error"], "payload requires data_b64 or data_text");
    post("q", json!({ "job_type": "t", "payload": { "encoding": "x", "data_b64": "!!" } }))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    post("q", json!({ "job_type": "t", "custom": { "a": [1] } }))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    // Framework-level refusals are plain text.
    assert_eq!(post("q", json!({ "payload": null })).await.status, StatusCode::UNPROCESSABLE_ENTITY);
    let raw = admin
        .http
        .post(admin.api("/queues/q/jobs"))
        .bearer_auth(OPERATOR_KEY)
        .header("content-type", "application/json")
        .body("{bad")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), StatusCode::BAD_REQUEST);
    let no_type = admin
        .http
        .post(admin.api("/queues/q/jobs"))
        .bearer_auth(OPERATOR_KEY)
        .body(r#"{"job_type":"t"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(no_type.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(admin.peek("q", "ready", "").await["jobs"], json!([]), "nothing was enqueued");
}

#[tokio::test]
async fn ready_pages_follow_reservation_order_with_cursors_and_clamped_limits() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let mut ids = Vec::new();
    for chunk in 0..2 {
        let jobs = (0..75).map(|n| job("q", &format!("t{}", chunk * 75 + n))).collect();
        ids.extend(
            results(client.enqueue_batch(batch(jobs)).await.unwrap().into_inner())
                .into_iter()
                .map(|r| r.unwrap().job_id),
        );
    }
    let urgent = enqueue_one(&mut client, pb::EnqueueRequest { priority: Some(9), ..job("q", "urgent") }).await;
    let first = admin.peek("q", "ready", "&limit=1000").await;
    let page: Vec<&str> = first["jobs"].as_array().unwrap().iter().map(|job| job["id"].as_str().unwrap()).collect();
    assert_eq!(page.len(), 100, "the limit is clamped to 100");
    assert_eq!(page[0], urgent);
    assert_eq!(page[1..], ids[..99].iter().map(String::as_str).collect::<Vec<_>>()[..]);
    assert_eq!(first["truncated"], false);
    let cursor = first["next_cursor"].as_str().expect("more remain").to_owned();
    let second = admin.peek("q", "ready", &format!("&limit=100&cursor={}", urlencode(&cursor))).await;
    let rest: Vec<&str> = second["jobs"].as_array().unwrap().iter().map(|job| job["id"].as_str().unwrap()).collect();
    assert_eq!(rest, ids[99..].iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(second["next_cursor"], Value::Null, "a last page of ready jobs has no cursor");
    assert_eq!(admin.peek("q", "ready", "&limit=0").await["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(admin.peek("q", "ready", "").await["jobs"].as_array().unwrap().len(), 50, "the default limit");
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn bad_listing_parameters_are_refused() {
    let admin = AdminServer::start("");
    let body = admin
        .get("/queues/q/jobs?state=bogus", VIEWER_KEY)
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(body["error"], "state must be ready|scheduled|inflight|dead_letter, got \"bogus\"");
    admin.get("/queues/q/jobs", VIEWER_KEY).await.expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    admin
        .get("/queues/q/jobs?state=ready&cursor=!!", VIEWER_KEY)
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    let plain = admin.get("/queues/q/jobs?state=ready&limit=abc", VIEWER_KEY).await;
    assert_eq!(plain.status, StatusCode::BAD_REQUEST);
    assert!(plain.body.is_string(), "an unparsable query string gets a plain-text answer");
    // A dead-letter handle is not a ready cursor.
    let mut client = grpc(&admin).await;
    enqueue_one(&mut client, job("q", "t")).await;
    let keys = AdminServer::keys(&admin.peek("q", "ready", "").await);
    admin
        .get(&format!("/queues/q/jobs?state=scheduled&cursor={}", urlencode(&keys[0])), VIEWER_KEY)
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
}

#[tokio::test]
async fn scheduled_pages_stop_at_the_scan_limit_and_tell_where_to_go_on() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let due = now_ms() + 3_600_000;
    let at = |offset: i64| Some(prost_types::Timestamp { seconds: (due + offset) / 1000, nanos: 0 });
    for chunk in 0..40 {
        let jobs =
            (0..256).map(|n| pb::EnqueueRequest { scheduled_at: at(chunk * 256 + n), ..job("other", "t") }).collect();
        client.enqueue_batch(batch(jobs)).await.unwrap();
    }
    let mine = enqueue_one(&mut client, pb::EnqueueRequest { scheduled_at: at(20_000_000), ..job("q", "t") }).await;
    let first = admin.peek("q", "scheduled", "&limit=10").await;
    assert_eq!((first["jobs"].as_array().unwrap().len(), first["truncated"].as_bool()), (0, Some(true)));
    let cursor = first["next_cursor"].as_str().expect("a truncated page gives a cursor").to_owned();
    let second = admin.peek("q", "scheduled", &format!("&limit=10&cursor={}", urlencode(&cursor))).await;
    assert_eq!(second["jobs"][0]["id"], mine.as_str());
    assert!(second["jobs"][0]["due_at_ms"].is_i64());
    assert_eq!((second["truncated"].as_bool(), second["next_cursor"].clone()), (Some(false), Value::Null));
    // A full page of a time-ordered state always gives a cursor, maybe to an empty page.
    let full = admin.peek("other", "scheduled", "&limit=2").await;
    assert!(full["next_cursor"].is_string());
}

#[tokio::test]
async fn in_flight_jobs_show_their_current_lease_and_payloads_are_listed_up_to_4_kib() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let big = enqueue_one(&mut client, with_payload(job("q", "big"), &vec![7u8; 5000], "raw")).await;
    let bare = enqueue_one(&mut client, job("q", "bare")).await;
    let listed = admin.peek("q", "ready", "").await;
    assert_eq!(listed["jobs"][0]["payload"], json!({ "encoding": "raw", "size_bytes": 5000 }), "no bytes past 4 KiB");
    assert_eq!(listed["jobs"][1]["payload"], json!({ "encoding": "", "size_bytes": 0 }));
    assert_eq!(shown(&admin, &big).await["payload"]["data_b64"].as_str().unwrap().len(), 6668, "the detail has them");
    assert_eq!(shown(&admin, &bare).await["payload"], json!({ "encoding": "", "size_bytes": 0, "data_b64": "" }));

    let delivered = reserve_now(&mut client, &["q"], 60_000).await;
    let extended = client.extend(extend(&delivered[0].id, 1, 120_000)).await.unwrap().into_inner();
    let page = admin.peek("q", "inflight", "").await;
    let jobs = page["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "an extended lease is listed once");
    assert_eq!(jobs[0]["lease_expires_at_ms"], timestamp_ms(&extended.lease_expires_at.unwrap()));
    assert_eq!(shown(&admin, &big).await["state"], "inflight");
}

#[tokio::test]
async fn job_lookups_find_live_jobs_only() {
    let admin = AdminServer::start("");
    for id in ["not-a-uuid", "3ac15610-3abe-4807-bec3-3c8fdc08d418"] {
        let body = admin.get(&format!("/jobs/{id}"), VIEWER_KEY).await.expect_error(StatusCode::NOT_FOUND, "not_found");
        assert_eq!(body["error"], "job not found");
    }
    let id = admin.enqueue("q", json!({ "job_type": "t" })).await;
    let keys = AdminServer::keys(&admin.peek("q", "ready", "").await);
    admin
        .post("/queues/q/jobs:dead-letter", OPERATOR_KEY, json!({ "state": "ready", "keys_b64": keys }))
        .await
        .expect(StatusCode::OK);
    admin.get(&format!("/jobs/{id}"), VIEWER_KEY).await.expect_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn admin_dead_lettering_takes_ready_and_scheduled_jobs_by_handle() {
    let admin = AdminServer::start("");
    let ready = admin
        .enqueue("q", json!({ "job_type": "t", "payload": { "encoding": "text/plain", "data_text": "hi" } }))
        .await;
    let scheduled = admin.enqueue("q", json!({ "job_type": "t", "scheduled_at_ms": now_ms() + 600_000 })).await;
    admin.enqueue("other", json!({ "job_type": "t" })).await;
    let mut keys = AdminServer::keys(&admin.peek("q", "ready", "").await);
    keys.push("AAAA".into()); // base64, but no handle
    keys.extend(AdminServer::keys(&admin.peek("other", "ready", "").await));
    let body = json!({ "state": "ready", "keys_b64": keys, "reason": "stuck" });
    let answer = admin.post("/queues/q/jobs:dead-letter", OPERATOR_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(answer, json!({ "dead_lettered": 1, "missing": 2 }));
    let scheduled_keys = AdminServer::keys(&admin.peek("q", "scheduled", "").await);
    let answer = admin
        .post("/queues/q/jobs:dead-letter", OPERATOR_KEY, json!({ "state": "scheduled", "keys_b64": scheduled_keys }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(answer, json!({ "dead_lettered": 1, "missing": 0 }));

    let dead = admin.peek("q", "dead_letter", "").await;
    let jobs = dead["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        (jobs[0]["id"].as_str(), jobs[0]["cause"].as_str(), jobs[0]["last_reason"].as_str()),
        (Some(ready.as_str()), Some("admin"), Some("stuck"))
    );
    assert!(jobs[0]["failed_at_ms"].is_i64());
    assert_eq!((jobs[1]["id"].as_str(), jobs[1].get("last_reason")), (Some(scheduled.as_str()), None));
    let key = jobs[0]["key_b64"].as_str().unwrap();
    let record =
        admin.get(&format!("/queues/q/dead-letters/{}", urlencode(key)), VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(record["payload"]["data_b64"], "aGk=");
    let body = admin
        .get(&format!("/queues/other/dead-letters/{}", urlencode(key)), VIEWER_KEY)
        .await
        .expect_error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(body["error"], "dead-letter record not found");
    admin.get("/queues/q/dead-letters/!!", VIEWER_KEY).await.expect_error(StatusCode::BAD_REQUEST, "invalid_argument");

    let audit = admin.get("/audit?action_prefix=jobs.", ADMIN_KEY).await.expect(StatusCode::OK);
    let details = &audit["entries"][1]["details"];
    assert_eq!(*details, json!({ "queue": "q", "dead_lettered": 1, "job_ids": [ready], "reason": "stuck" }));
}

#[tokio::test]
async fn dead_letter_actions_refuse_other_states_bad_base64_and_more_than_a_hundred_keys() {
    let admin = AdminServer::start("");
    let body = admin
        .post("/queues/q/jobs:dead-letter", OPERATOR_KEY, json!({ "state": "inflight", "keys_b64": [] }))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    assert_eq!(body["error"], "state must be ready or scheduled, got \"inflight\"");
    for path in ["/queues/q/jobs:dead-letter", "/queues/q/dead-letters:requeue", "/queues/q/dead-letters:delete"] {
        let many: Vec<String> = (0..101).map(|_| "AAAA".to_string()).collect();
        let bad = admin.post(path, OPERATOR_KEY, json!({ "state": "ready", "keys_b64": ["!!"] })).await;
        assert_eq!(
            bad.expect_error(StatusCode::BAD_REQUEST, "invalid_argument")["error"],
            "keys_b64 is not valid base64"
        );
        admin
            .post(path, OPERATOR_KEY, json!({ "state": "ready", "keys_b64": many }))
            .await
            .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    }
}

#[tokio::test]
async fn a_requeued_dead_letter_comes_back_as_a_first_attempt_and_a_deleted_one_is_gone() {
    let admin = AdminServer::start("[[queues]]\nname = \"q\"\nmax_queue_depth = 1\n");
    let mut client = grpc(&admin).await;
    let first = enqueue_one(&mut client, pb::EnqueueRequest { max_attempts: Some(3), ..job("q", "t") }).await;
    reserve_now(&mut client, &["q"], 60_000).await;
    let retry = Some(pb::nack_retry::Strategy::DeadLetter(()));
    client.nack(nack(&first, 1, retry)).await.unwrap();
    let second = enqueue_one(&mut client, job("q", "t")).await;
    let dead = admin.peek("q", "dead_letter", "").await;
    assert_eq!(dead["jobs"][0]["cause"], "rejected");
    let keys = AdminServer::keys(&dead);
    // The queue is at its cap: a requeue goes past it.
    let answer = admin
        .post("/queues/q/dead-letters:requeue", OPERATOR_KEY, json!({ "keys_b64": keys, "reason": "fixed" }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(answer, json!({ "requeued": 1, "missing": 0 }));
    let detail = shown(&admin, &first).await;
    assert_eq!(
        (detail["state"].as_str(), detail["attempt"].as_u64(), detail["max_attempts"].as_u64()),
        (Some("ready"), Some(1), Some(3))
    );
    let order: Vec<String> = reserve_now(&mut client, &["q"], 60_000).await.into_iter().map(|job| job.id).collect();
    assert_eq!(order, std::slice::from_ref(&second), "behind the job ready before it");
    let again = admin
        .post("/queues/q/dead-letters:requeue", OPERATOR_KEY, json!({ "keys_b64": keys }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(again, json!({ "requeued": 0, "missing": 1 }), "a used handle names nothing");

    client.nack(nack(&second, 1, retry)).await.unwrap();
    let keys = AdminServer::keys(&admin.peek("q", "dead_letter", "").await);
    let answer = admin
        .post("/queues/q/dead-letters:delete", OPERATOR_KEY, json!({ "keys_b64": keys }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(answer, json!({ "deleted": 1, "missing": 0 }));
    assert_eq!(admin.peek("q", "dead_letter", "").await["jobs"], json!([]));
    let audit = admin.get("/audit?action_prefix=dead_letters", ADMIN_KEY).await.expect(StatusCode::OK);
    let actions: Vec<&str> =
        audit["entries"].as_array().unwrap().iter().map(|entry| entry["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["dead_letters.delete", "dead_letters.requeue", "dead_letters.requeue"]);
    assert_eq!(
        audit["entries"][2]["details"],
        json!({ "queue": "q", "requeued": 1, "job_ids": [first], "reason": "fixed" })
    );
}

#[tokio::test]
async fn filters_narrow_listings_counts_and_bulk_actions() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let tagged = |job_type: &str, tenant: &str| pb::EnqueueRequest {
        custom: [("tenant".to_string(), string_value(tenant))].into_iter().collect(),
        max_attempts: Some(1),
        ..job("q", job_type)
    };
    let jobs: Vec<_> = (0..30)
        .map(|n| tagged(if n % 3 == 0 { "sms" } else { "email" }, if n % 2 == 0 { "acme" } else { "other" }))
        .collect();
    client.enqueue_batch(batch(jobs)).await.unwrap();
    let listed = admin.peek("q", "ready", "&job_type=sms&custom.tenant=acme").await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 5);
    assert!(
        listed["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|job| job["job_type"] == "sms" && job["custom"]["tenant"] == "acme")
    );
    let count =
        admin.get("/queues/q/jobs:count?state=ready&custom.tenant=acme", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(count, json!({ "count": 15 }));

    let preview = json!({ "state": "ready", "action": "dead_letter", "job_type": "email", "custom": { "tenant": "other" }, "dry_run": true });
    assert_eq!(
        admin.post("/queues/q/jobs:bulk", OPERATOR_KEY, preview.clone()).await.expect(StatusCode::OK),
        json!({ "matched": 10 })
    );
    let mut act = preview;
    act["dry_run"] = json!(false);
    act["reason"] = json!("cleanup");
    assert_eq!(
        admin.post("/queues/q/jobs:bulk", OPERATOR_KEY, act).await.expect(StatusCode::OK),
        json!({ "affected": 10 })
    );
    let dead = admin.peek("q", "dead_letter", "&limit=100").await;
    assert_eq!(dead["jobs"].as_array().unwrap().len(), 10);
    let requeue = json!({ "state": "dead_letter", "action": "requeue", "custom": { "tenant": "other" } });
    assert_eq!(
        admin.post("/queues/q/jobs:bulk", OPERATOR_KEY, requeue).await.expect(StatusCode::OK),
        json!({ "affected": 10 })
    );
    assert_eq!(
        admin.get("/queues/q/jobs:count?state=ready", VIEWER_KEY).await.expect(StatusCode::OK),
        json!({ "count": 30 })
    );
    let wrong = json!({ "state": "ready", "action": "requeue" });
    admin
        .post("/queues/q/jobs:bulk", OPERATOR_KEY, wrong)
        .await
        .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    let audit = admin.get("/audit?limit=1", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(audit["entries"][0]["details"]["bulk"], true);
    assert_eq!(audit["entries"][0]["details"]["requeued"], 10);
}

#[tokio::test]
async fn the_workers_view_shows_who_holds_which_jobs() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    for queue in ["a", "a", "b"] {
        enqueue_one(&mut client, job(queue, "t")).await;
    }
    let mut request = reserve(&["a", "b"], 60_000);
    request.worker_id = Some("worker-1".into());
    request.max_jobs = Some(3);
    let held = client.reserve(request).await.unwrap().into_inner().jobs;
    assert_eq!(held.len(), 3);
    let mut idle = reserve(&["none"], 60_000);
    idle.worker_id = Some("worker-2".into());
    client.reserve(idle).await.unwrap();

    let workers = admin.get("/workers", VIEWER_KEY).await.expect(StatusCode::OK);
    let list = workers["workers"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    let one = list.iter().find(|worker| worker["worker_id"] == "worker-1").unwrap();
    assert_eq!(one["held"], json!({ "a": 2, "b": 1 }));
    assert_eq!(
        (one["held_total"].as_u64(), one["jobs_delivered"].as_u64(), one["reserves"].as_u64()),
        (Some(3), Some(3), Some(1))
    );
    assert!(one["last_seen_ms"].as_i64().unwrap() <= now_ms());
    let two = list.iter().find(|worker| worker["worker_id"] == "worker-2").unwrap();
    assert_eq!((two["held"].clone(), two["next_lease_expires_at_ms"].clone()), (json!({}), Value::Null));

    client.ack(ack(&held[0].id, 1)).await.unwrap();
    let workers = admin.get("/workers", VIEWER_KEY).await.expect(StatusCode::OK);
    let one =
        workers["workers"].as_array().unwrap().iter().find(|worker| worker["worker_id"] == "worker-1").unwrap().clone();
    assert_eq!(one["held_total"], 2, "an acked job is no longer held");
}

#[tokio::test]
async fn operator_dead_letters_count_in_the_dead_lettered_metric_with_cause_admin() {
    let admin = AdminServer::start("[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n");
    for _ in 0..3 {
        admin.enqueue("q", json!({ "job_type": "email" })).await;
    }
    let act = json!({ "state": "ready", "action": "dead_letter", "reason": "cleanup" });
    assert_eq!(
        admin.post("/queues/q/jobs:bulk", OPERATOR_KEY, act).await.expect(StatusCode::OK),
        json!({ "affected": 3 })
    );
    let line = admin.server.stdout().wait_for("prometheus metrics endpoint listening", STARTUP_TIMEOUT).unwrap();
    let port = loopback_port(&line).unwrap();
    let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.unwrap().text().await.unwrap();
    let series = text
        .lines()
        .find(|line| line.starts_with("sepp_jobs_dead_lettered_total{") && line.contains("cause=\"admin\""))
        .unwrap_or_else(|| panic!("no admin dead letters in\n{text}"));
    assert!(series.contains("queue=\"q\"") && series.ends_with(" 3"), "{series}");
}
