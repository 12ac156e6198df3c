//! Live stats over SSE: `hello`, `stats` once a second, `config` after reloads, `audit` for
//! admin subscribers only, `lagged` for one that fell behind; streams end when their session is
//! signed out and when the server stops, in the order of a graceful shutdown.

mod admin_support;
mod common;

use std::time::Duration;

use admin_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

const EVENT_WAIT: Duration = Duration::from_secs(15);

/// Reads server-sent events from a response.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn open(admin: &AdminServer, key: &str) -> Events {
        Events::from(admin.http.get(admin.api("/events")).bearer_auth(key).send().await.unwrap())
    }

    fn from(response: reqwest::Response) -> Events {
        assert_eq!(response.status(), StatusCode::OK);
        Events { response, buffer: String::new() }
    }

    /// The next event as (name, data), or `None` once the stream ended.
    async fn next(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = Vec::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some((name, data.join("\n")));
            }
            let chunk =
                tokio::time::timeout(EVENT_WAIT, self.response.chunk()).await.expect("an event in time").ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Reads until an event named `name`, returning it with every event before it.
    async fn until(&mut self, name: &str) -> (Value, Vec<(String, String)>) {
        let mut before = Vec::new();
        loop {
            let (event, data) = self.next().await.unwrap_or_else(|| panic!("the stream ended before a {name} event"));
            if event == name {
                return (serde_json::from_str(&data).unwrap_or(Value::String(data)), before);
            }
            before.push((event, data));
        }
    }
}

#[tokio::test]
async fn a_stream_says_hello_with_history_then_sends_stats_each_second() {
    let admin = AdminServer::start("");
    let response = admin.http.get(admin.api("/events")).bearer_auth(VIEWER_KEY).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let mut events = Events::from(response);
    let (name, hello) = events.next().await.unwrap();
    assert_eq!(name, "hello");
    let hello: Value = serde_json::from_str(&hello).unwrap();
    assert!(hello["history"]["total"].is_array() && hello["frame"].is_object(), "{hello}");
    assert!(hello["history_info"]["budget_bytes"].is_u64(), "{hello}");
    admin.enqueue("live", json!({ "job_type": "t" })).await;
    let frame = loop {
        let (frame, _) = events.until("stats").await;
        if frame["queues"]["live"]["ready"] == 1 {
            break frame;
        }
    };
    assert_eq!(frame["queues"]["live"]["totals"]["enqueued"], 1);
    assert!(frame["server"]["command_queue_len"].is_u64());
    let (next, _) = events.until("stats").await;
    assert_eq!(next["seq"].as_u64().unwrap(), frame["seq"].as_u64().unwrap() + 1);
}

#[tokio::test]
async fn audit_events_reach_admin_subscribers_only() {
    let admin = AdminServer::start("");
    let mut root = Events::open(&admin, ADMIN_KEY).await;
    let mut watcher = Events::open(&admin, VIEWER_KEY).await;
    root.until("hello").await;
    watcher.until("hello").await;
    let job_id = admin.enqueue("q", json!({ "job_type": "t" })).await;
    let (entry, _) = root.until("audit").await;
    assert_eq!((entry["action"].as_str(), entry["actor"].as_str()), (Some("job.enqueue"), Some("ops")));
    assert_eq!(entry["details"]["job_id"], job_id.as_str());
    assert!(entry["seq"].as_u64().unwrap() >= 1);
    // Events go out in one order: the viewer sees the stats that followed the audit entry
    // without having seen the entry.
    let (after, _) = root.until("stats").await;
    loop {
        let (frame, skipped) = watcher.until("stats").await;
        assert!(skipped.iter().all(|(name, _)| name != "audit"), "a viewer got {skipped:?}");
        if frame["seq"].as_u64() >= after["seq"].as_u64() {
            break;
        }
    }
}

#[tokio::test]
async fn each_reload_attempt_sends_the_reload_counter() {
    let admin = AdminServer::start("");
    let mut events = Events::open(&admin, VIEWER_KEY).await;
    events.until("hello").await;
    admin.server.write_config(&format!("{WITH_KEYS}\n[limits]\ndefault_priority = 3\n"));
    let (first, _) = events.until("config").await;
    assert_eq!(first, 1);
    admin.server.write_config(&format!("{WITH_KEYS}\n[limits]\ndefault_priority = 12\n")); // invalid: still counted
    let (second, _) = events.until("config").await;
    assert_eq!(second, 2);
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_is_told_how_many_events_it_missed() {
    let admin = AdminServer::start("");
    let mut events = Events::open(&admin, ADMIN_KEY).await;
    events.until("hello").await;
    // Large audit entries fill the connection's buffers while this test does not read.
    let reason = "x".repeat(512 * 1024);
    for _ in 0..20 {
        let body = json!({ "keys_b64": [], "reason": reason });
        admin.post("/queues/q/dead-letters:delete", OPERATOR_KEY, body).await.expect(StatusCode::OK);
    }
    for _ in 0..40 {
        admin
            .post("/queues/q/dead-letters:delete", OPERATOR_KEY, json!({ "keys_b64": [] }))
            .await
            .expect(StatusCode::OK);
    }
    let (missed, _) = events.until("lagged").await;
    assert!(missed.as_u64().unwrap() > 0, "{missed}");
    assert!(!admin.server.logs().contains(&reason), "log lines hold at most a bounded part of a reason");
}

#[tokio::test]
async fn a_stream_ends_when_its_session_is_signed_out() {
    let admin = AdminServer::start("");
    let cookie = admin.login("watch", VIEWER_KEY).await;
    let response = admin.http.get(admin.api("/events")).header("cookie", &cookie).send().await.unwrap();
    let mut events = Events::from(response);
    events.until("hello").await;
    let logout = admin.http.delete(admin.api("/session")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(logout.status(), StatusCode::NO_CONTENT);
    while let Some((name, _)) = events.next().await {
        assert_ne!(name, "stats", "a signed-out session got another frame");
    }
}

#[tokio::test]
async fn shutdown_ends_the_streams_and_stops_in_order() {
    let mut admin = AdminServer::start("");
    let mut events = Events::open(&admin, VIEWER_KEY).await;
    events.until("hello").await;
    admin.server.sigterm();
    while events.next().await.is_some() {}
    let status = admin.server.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{status}");
    let logs = admin.server.logs();
    let at = |needle: &str| logs.find(needle).unwrap_or_else(|| panic!("no {needle:?} in\n{logs}"));
    assert!(at("shutdown signal received") < at("queue server stopped"));
    assert!(at("queue server stopped") < at("committer thread stopped"));
}
