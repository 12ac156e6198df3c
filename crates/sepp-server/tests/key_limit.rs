//! Per-key limits against the real binary: reserves from several connections hold each key to
//! its limit while other keys' jobs go out, a reserve parked behind a key's limit is served by the
//! ack that frees its slot, the admin API sets the limits (per-value overrides included) and
//! counts the jobs they hold back, and a restart does not refill a key's bucket.

mod admin_support;
mod common;

use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);
const KEYED: &str = "[[queues]]\nname = \"hooks\"\nlimit_key = \"tenant\"\nkey_max_in_flight = 1\n";

fn of(tenant: &str) -> pb::EnqueueRequest {
    let mut request = job("hooks", "deliver");
    let value = pb::PrimitiveValue { value: Some(pb::primitive_value::Value::StringValue(tenant.into())) };
    request.custom.insert("tenant".into(), value);
    request
}

fn tenant_of(job: &pb::Job) -> String {
    match job.custom.get("tenant").and_then(|value| value.value.clone()) {
        Some(pb::primitive_value::Value::StringValue(tenant)) => tenant,
        other => panic!("no tenant: {other:?}"),
    }
}

#[tokio::test]
async fn each_key_holds_its_limit_across_connections_and_an_ack_serves_the_parked_reserve() {
    if is_reference() {
        return; // 0.1 has no per-key limits.
    }
    let server = TestServer::start(&watching_parked(KEYED));
    let mut producer = server.raw_client().await;
    for tenant in ["busy", "busy", "busy", "quiet"] {
        enqueue_one(&mut producer, of(tenant)).await;
    }
    let mut first = server.raw_client().await;
    let mut second = server.raw_client().await;
    let mut request = reserve(&["hooks"], 60_000);
    request.max_jobs = Some(10);
    let held = first.reserve(request.clone()).await.unwrap().into_inner().jobs;
    let tenants: Vec<String> = held.iter().map(tenant_of).collect();
    assert_eq!(tenants, ["busy", "quiet"], "busy's two others wait; quiet's job behind them goes out");
    assert!(second.reserve(request).await.unwrap().into_inner().jobs.is_empty(), "no key has room left");

    let parked = reserve_waiting(&server, "hooks", Some(10));
    server.wait_parked(1).await;
    first.ack(ack_of(&held[0])).await.expect("ack");
    let served = tokio::time::timeout(WAIT, parked).await.expect("the parked reserve is served").unwrap();
    assert_eq!(served.iter().map(tenant_of).collect::<Vec<_>>(), ["busy"], "the ack freed busy's slot");
}

#[tokio::test]
async fn the_admin_api_sets_per_value_overrides_and_counts_the_jobs_a_key_holds_back() {
    if is_reference() {
        return;
    }
    let admin = AdminServer::start(KEYED);
    let mut client = grpc(&admin).await;
    for tenant in ["acme", "acme", "acme", "other", "other"] {
        enqueue_one(&mut client, of(tenant)).await;
    }
    let mut request = reserve(&["hooks"], 60_000);
    request.max_jobs = Some(10);
    assert_eq!(client.reserve(request.clone()).await.unwrap().into_inner().jobs.len(), 2, "one per tenant");
    let held = eventually("the queue view counts the held-back jobs", WAIT, || async {
        let queue = admin.get("/queues/hooks", VIEWER_KEY).await.expect(StatusCode::OK);
        (queue["held_by_key_limit"] == 3).then_some(queue)
    })
    .await;
    assert_eq!(held["effective"]["limit_key"], "tenant");
    assert_eq!(held["effective"]["key_max_in_flight"], 1);

    let overrides = json!({ "key_overrides": { "acme": { "max_in_flight": 3 } } });
    let body = json!({ "etag": admin.etag().await, "overrides": overrides });
    let written = admin.put("/queues/hooks", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(written["applied"], true);
    let file = std::fs::read_to_string(admin.server.config_path()).unwrap();
    assert!(file.contains("key_overrides = { acme = { max_in_flight = 3 } }"), "{file}");
    let queue = admin.get("/queues/hooks", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(
        queue["effective"]["key_overrides"],
        json!({ "acme": { "max_in_flight": 3, "rate_limit": null, "rate_burst": null } })
    );
    let more = client.reserve(request).await.unwrap().into_inner().jobs;
    assert_eq!(more.iter().map(tenant_of).collect::<Vec<_>>(), ["acme", "acme"], "acme may run three now");

    let bad =
        json!({ "etag": admin.etag().await, "overrides": { "key_overrides": { "acme": { "max_in_flight": 0 } } } });
    let refused = admin.put("/queues/hooks", ADMIN_KEY, bad).await;
    let error = refused.expect_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid");
    assert!(error["error"].as_str().unwrap().contains("max_in_flight must be at least 1"), "{error}");
}

#[tokio::test]
async fn a_restart_does_not_refill_a_keys_bucket() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start(
        "[[queues]]\nname = \"hooks\"\nlimit_key = \"tenant\"\nkey_rate_limit = 1\nkey_rate_period_ms = 3600000\n",
    );
    let mut client = server.raw_client().await;
    for tenant in ["a", "a", "b"] {
        enqueue_one(&mut client, of(tenant)).await;
    }
    let mut request = reserve(&["hooks"], 60_000);
    request.max_jobs = Some(10);
    assert_eq!(client.reserve(request.clone()).await.unwrap().into_inner().jobs.len(), 2, "one token per tenant");
    let killed = std::process::Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().unwrap();
    assert!(killed.success());
    server.wait_exit(Duration::from_secs(20));
    server.start_again();
    let mut client = server.raw_client().await;
    assert!(client.reserve(request).await.unwrap().into_inner().jobs.is_empty(), "a's bucket is still spent");
}
