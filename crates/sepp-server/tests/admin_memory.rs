//! The admin API costs memory bounded by its configuration, not by how many queues clients make:
//! with 50,000 one-job queues the history stays within `admin.stats_history_bytes`, and the
//! overview, the SSE `hello` and each `stats` frame stay small.

mod admin_support;
mod common;

use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::Value;

const QUEUES: usize = 50_000;
/// The default budget.
const BUDGET: u64 = 16 << 20;
/// What the process may grow by beyond the budget while the history fills (allocator slack,
/// answers being built).
const SLACK: u64 = 10 << 20;
const ANSWER_MAX: usize = 1 << 20;
const WAIT: Duration = Duration::from_secs(60);

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).expect("a VmRSS line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB");
    kib * 1024
}

/// An SSE stream, read event by event.
struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
    /// How far `buffer` is known to hold no event end.
    scanned: usize,
}

impl Events {
    async fn open(admin: &AdminServer) -> Events {
        let response = admin.http.get(admin.api("/events")).bearer_auth(VIEWER_KEY).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Events { response, buffer: Vec::new(), scanned: 0 }
    }

    /// The next event: its name and the size and JSON of its data.
    async fn next(&mut self) -> (String, usize, Value) {
        loop {
            let from = self.scanned.saturating_sub(1);
            if let Some(end) = self.buffer[from..].windows(2).position(|pair| pair == b"\n\n").map(|at| from + at) {
                self.scanned = 0;
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let block = String::from_utf8(block).expect("UTF-8 events");
                let name = block.lines().find_map(|line| line.strip_prefix("event:")).map(str::trim);
                let data: String = block.lines().filter_map(|line| line.strip_prefix("data:")).collect();
                if let Some(name) = name {
                    let json = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
                    return (name.to_owned(), data.len(), json);
                }
                continue;
            }
            self.scanned = self.buffer.len();
            let chunk = tokio::time::timeout(WAIT, self.response.chunk()).await.expect("an event in time");
            self.buffer.extend_from_slice(&chunk.expect("the stream goes on").expect("the stream goes on"));
        }
    }

    /// Reads `stats` frames until one with `seq` at least `seq`; answers it and the largest size.
    async fn until_seq(&mut self, seq: u64) -> (Value, usize) {
        let mut largest = 0;
        loop {
            let (name, size, frame) = self.next().await;
            if name != "stats" {
                continue;
            }
            largest = largest.max(size);
            if frame["seq"].as_u64().unwrap_or(0) >= seq {
                return (frame, largest);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_queues_keep_the_history_in_its_budget_and_the_answers_small() {
    // A one-minute ring fills within the test; the budget is the default.
    let config = WITH_KEYS.replace("[admin]\n", "[admin]\nstats_history_ms = 60000\n");
    let admin = AdminServer::from(TestServer::start(&config));
    let mut grpc = grpc(&admin).await;
    let names: Vec<String> = (0..QUEUES).map(|n| format!("tenant-{n:05}")).collect();
    for chunk in names.chunks(256) {
        let jobs = chunk.iter().map(|name| job(name, "one")).collect();
        let response = grpc.enqueue_batch(batch(jobs)).await.expect("a batch").into_inner();
        let accepted = |result: &pb::JobResult| matches!(result.outcome, Some(pb::job_result::Outcome::Success(_)));
        assert!(response.results.iter().all(accepted), "every job accepted");
    }

    // Once a frame has seen every queue, the per-queue state outside the history is in place.
    let mut events = Events::open(&admin).await;
    let (hello_name, hello_size, hello) = events.next().await;
    assert_eq!(hello_name, "hello");
    let first = hello["frame"]["seq"].as_u64().expect("a frame in hello");
    let (frame, _) = events.until_seq(first + 2).await;
    let baseline = rss_bytes(admin.server.pid());
    let seq = frame["seq"].as_u64().unwrap();

    // A minute and more of ticks fills every ring the budget allows.
    let (frame, largest_frame) = events.until_seq(seq + 62).await;
    let response = admin.http.get(admin.api("/overview")).bearer_auth(VIEWER_KEY).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.bytes().await.unwrap();
    let mut second = Events::open(&admin).await;
    let (name, size, second_hello) = second.next().await;
    assert_eq!(name, "hello");
    let grown = rss_bytes(admin.server.pid()).saturating_sub(baseline);
    eprintln!(
        "RSS {} MiB at the baseline, grew by {} KiB; answers: overview {} B, hello {hello_size} B and {size} B, \
         largest stats frame {largest_frame} B",
        baseline >> 20,
        grown >> 10,
        body.len()
    );

    assert!(body.len() <= ANSWER_MAX, "an overview of {} bytes", body.len());
    assert!(size <= ANSWER_MAX && hello_size <= ANSWER_MAX, "hello of {size} and {hello_size} bytes");
    assert!(largest_frame <= ANSWER_MAX, "a stats frame of {largest_frame} bytes");
    assert!(grown <= BUDGET + SLACK, "RSS grew by {} MiB over a budget of {} MiB", grown >> 20, BUDGET >> 20);

    assert_eq!(frame["queue_count"], QUEUES, "every queue counted");
    assert_eq!(frame["truncated"], true);
    assert_eq!(frame["queues"].as_object().unwrap().len(), 500);
    assert_eq!(frame["total"]["ready"], QUEUES, "the total counts every queue");
    let overview: Value = serde_json::from_slice(&body).unwrap();
    let info = &overview["history_info"];
    assert_eq!(info["budget_bytes"], BUDGET);
    let bytes = info["bytes"].as_u64().unwrap();
    assert!((BUDGET / 10 * 9..=BUDGET).contains(&bytes), "the history filled its budget while RSS was watched: {info}");
    let tracked = info["queues_tracked"].as_u64().unwrap();
    assert!(tracked > 1_000, "{info}");
    assert_eq!(info["queues_folded"].as_u64().unwrap(), QUEUES as u64 - tracked, "{info}");
    let history = &overview["history"];
    assert!(history["queues"].as_object().unwrap().len() <= 10, "the busiest ten at most");
    assert!(history["other"].as_array().is_some_and(|other| !other.is_empty()), "the folded queues' series");
    assert_eq!(history["total"].as_array().unwrap().len(), 60, "a minute of the total");
    assert!(second_hello["history"]["other"].is_array(), "{}", second_hello["history"]);
    assert_eq!(second_hello["history_info"]["queues_folded"], info["queues_folded"]);

    // A queue's own series, tracked or not, and a bounded list of queues.
    let tracked_queue = history["queues"].as_object().unwrap().keys().next().cloned();
    if let Some(name) = tracked_queue {
        let own = admin.get(&format!("/queues/{name}/history"), VIEWER_KEY).await.expect(StatusCode::OK);
        assert_eq!(own["tracked"], true);
        assert!(!own["samples"].as_array().unwrap().is_empty());
    }
    let page = admin.http.get(admin.api("/queues?limit=100")).bearer_auth(VIEWER_KEY).send().await.unwrap();
    assert_eq!(page.headers()["sepp-queue-count"], QUEUES.to_string().as_str());
    let page: Value = page.json().await.unwrap();
    assert_eq!(page.as_array().unwrap().len(), 100);
    let all = admin.get("/queues", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(all.as_array().unwrap().len(), 1_000, "a page holds 1,000 queues at most");
}
