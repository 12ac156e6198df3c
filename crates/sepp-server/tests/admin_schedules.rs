//! Recurring schedules through the admin API against the real binary: set, list with the next
//! firing, a job fired on time, delete, roles, bad input, and the audit log.

mod admin_support;
mod common;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn an_operator_sets_lists_and_deletes_a_schedule_and_it_fires() {
    if is_reference() {
        return; // 0.1 has no schedules.
    }
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let body = json!({
        "every_ms": 1000,
        "queue": "reports",
        "job_type": "daily",
        "payload": { "encoding": "application/json", "data_text": "{\"kind\":\"daily\"}" },
        "custom": { "tenant": "acme" },
        "overlap": "allow",
    });
    let set = admin.put("/schedules/daily", OPERATOR_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(set["id"], "daily");
    assert_eq!(set["every_ms"], 1000);
    assert_eq!(set["overlap"], "allow");
    assert_eq!(set["catch_up"], "latest");
    assert!(set["next_fire_at_ms"].as_i64().unwrap() > set["created_at_ms"].as_i64().unwrap());

    let mut request = reserve(&["reports"], 60_000);
    request.wait_timeout = Some(ms(10_000));
    let fired = client.reserve(request).await.unwrap().into_inner().jobs;
    assert_eq!(fired.len(), 1, "the schedule fired within ten seconds");
    assert_eq!(fired[0].payload.as_ref().unwrap().data, b"{\"kind\":\"daily\"}");

    let listed = admin.get("/schedules", VIEWER_KEY).await.expect(StatusCode::OK);
    let schedules = listed["schedules"].as_array().unwrap();
    assert_eq!(schedules.len(), 1);
    assert!(schedules[0]["fired"].as_u64().unwrap() >= 1);
    assert_eq!(schedules[0]["custom"], json!({ "tenant": "acme" }));

    let deleted = admin.delete("/schedules/daily", OPERATOR_KEY, None).await.expect(StatusCode::OK);
    assert_eq!(deleted, json!({ "id": "daily", "deleted": true }));
    let again = admin.delete("/schedules/daily", OPERATOR_KEY, None).await.expect(StatusCode::OK);
    assert_eq!(again["deleted"], false);
    let audit = admin.get("/audit?limit=2", ADMIN_KEY).await.expect(StatusCode::OK);
    let actions: Vec<_> = audit["entries"].as_array().unwrap().iter().map(|entry| entry["action"].clone()).collect();
    assert_eq!(actions, [json!("schedule.delete"), json!("schedule.put")]);
}

#[tokio::test]
async fn viewers_cannot_change_schedules_and_bad_ones_are_explained() {
    if is_reference() {
        return;
    }
    let admin = AdminServer::start("");
    let good = json!({ "cron": { "expression": "0 9 * * MON-FRI", "time_zone": "Europe/Zurich" }, "queue": "q", "job_type": "t" });
    admin.put("/schedules/s", VIEWER_KEY, good.clone()).await.expect_error(StatusCode::FORBIDDEN, "forbidden");
    for (body, needle) in [
        (json!({ "queue": "q", "job_type": "t" }), "exactly one of cron and every_ms"),
        (
            json!({ "every_ms": 1000, "cron": { "expression": "* * * * *" }, "queue": "q", "job_type": "t" }),
            "exactly one",
        ),
        (json!({ "cron": { "expression": "nope" }, "queue": "q", "job_type": "t" }), "cron expression"),
        (json!({ "every_ms": 10, "queue": "q", "job_type": "t" }), "at least 1000 ms"),
        (json!({ "every_ms": 1000, "queue": "q", "job_type": "t", "overlap": "sometimes" }), "overlap"),
        (json!({ "every_ms": 1000, "queue": "q", "job_type": "t", "idempotency_key": "k" }), "idempotency_key"),
    ] {
        let refused = admin
            .put("/schedules/s", OPERATOR_KEY, body)
            .await
            .expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
        assert!(refused["error"].as_str().unwrap_or_default().contains(needle), "{needle}: {refused}");
    }
    let set = admin.put("/schedules/s", OPERATOR_KEY, good).await.expect(StatusCode::OK);
    assert_eq!(set["cron"], json!({ "expression": "0 9 * * MON-FRI", "time_zone": "Europe/Zurich" }));
}
