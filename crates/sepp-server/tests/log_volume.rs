//! No log line can flood, against the real binary: a line that schedules, clients or peers can
//! repeat as often as they like is logged about once a second, with a summary
//! `N similar lines suppressed` counting the rest (docs/operations.md, "Log volume"). Each test
//! waits for the summary (the signal that the limit held a flood back), then checks how much
//! was logged against how much was suppressed.

mod common;

use std::time::Duration;

use common::cluster::TestCluster;
use common::*;
use sepp_server::proto::v1 as pb;

const WAIT: Duration = Duration::from_secs(60);

/// The lines of `logs` containing `needle`, and the lines suppressed in the summaries of the
/// call sites in `source` (a file name, as the summaries' `at` field gives it).
fn logged_and_suppressed(logs: &str, needle: &str, source: &str) -> (usize, u64) {
    let logged = logs.lines().filter(|line| line.contains(needle)).count();
    let suppressed = logs
        .lines()
        .filter(|line| line.contains("similar lines suppressed") && line.contains(source))
        .map(|line| {
            let before = line.split(" similar lines suppressed").next().unwrap_or_default();
            before.rsplit(' ').next().and_then(|count| count.parse::<u64>().ok()).unwrap_or(0)
        })
        .sum();
    (logged, suppressed)
}

/// Waits until the summaries of the call sites in `source` counted at least `at_least`
/// suppressed lines; returns the lines containing `needle` logged by then, and that count.
async fn wait_suppressed(server: &TestServer, needle: &str, source: &str, at_least: u64) -> (usize, u64) {
    eventually(&format!("{at_least} suppressed lines from {source}"), WAIT, || async {
        let counted = logged_and_suppressed(&server.logs(), needle, source);
        (counted.1 >= at_least).then_some(counted)
    })
    .await
}

fn skip_every_second(id: &str, queue: &str) -> pb::UpsertScheduleRequest {
    pb::UpsertScheduleRequest {
        schedule: Some(pb::ScheduleDefinition {
            id: id.into(),
            cadence: Some(pb::schedule_definition::Cadence::Every(ms(1_000))),
            job: Some(job(queue, "tick")),
            overlap: pb::ScheduleOverlap::Skip as i32,
            catch_up: pb::ScheduleCatchUp::Latest as i32,
        }),
    }
}

/// 300 one-second schedules whose previous job is still queued skip a slot each, every second:
/// 300 `schedule slot skipped` lines a second without a limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_one_second_schedules_whose_job_is_still_queued_log_a_bounded_number_of_skips() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    for n in 0..300 {
        client.upsert_schedule(skip_every_second(&format!("tick-{n}"), "blocked")).await.expect("upsert");
    }
    let (logged, suppressed) = wait_suppressed(&server, "schedule slot skipped", "sweep.rs", 1_500).await;
    assert!(logged * 20 < suppressed as usize, "{logged} skip lines logged, {suppressed} suppressed");
    let bytes = server.stdout().bytes();
    assert!(bytes < 64 << 10, "{bytes} bytes of log for {suppressed} suppressed lines\n{}", server.logs());
}

/// A client that sends batches with an invalid job gets each rejection logged only until the
/// call site's budget is spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_repeating_rejected_enqueues_logs_a_bounded_number_of_rejections() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let mut calls = 0;
    let (logged, suppressed) = loop {
        let jobs = (0..50).map(|_| job("rejected", "")).collect();
        client.enqueue_batch(batch(jobs)).await.expect("a batch call");
        calls += 1;
        let counted = logged_and_suppressed(&server.logs(), "enqueue rejected", "service.rs");
        if counted.1 >= 2_000 {
            break counted;
        }
        assert!(calls < 20_000, "no summary after {calls} calls\n{}", server.logs());
    };
    assert!(logged * 20 < suppressed as usize, "{logged} rejection lines logged, {suppressed} suppressed");
}

/// Seconds since the start of the month of a log line's timestamp
/// (`2026-12-04T14:43:16.367476Z ...`).
fn seconds_of(line: &str) -> f64 {
    let stamp = line.split_whitespace().next().unwrap_or_default();
    let (date, time) = stamp.split_once('T').unwrap_or_else(|| panic!("no timestamp in {line:?}"));
    let day: f64 = date.rsplit('-').next().and_then(|day| day.parse().ok()).expect("a day");
    let mut parts = time.trim_end_matches('Z').split(':').map(|part| part.parse::<f64>().expect("a number"));
    let (hours, minutes, seconds) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    ((day * 24.0 + hours) * 60.0 + minutes) * 60.0 + seconds
}

/// Waits until `node` logged `count` lines containing `needle` (a line of one call site), then
/// checks by the lines' own timestamps that the call site kept to its budget: the burst, then
/// about a line a second.
async fn assert_held_to_a_line_a_second(node: &TestServer, needle: &str, count: usize) {
    let lines = eventually(&format!("{count} lines of {needle:?}"), WAIT * 2, || async {
        let logs = node.logs();
        let lines: Vec<String> = logs.lines().filter(|line| line.contains(needle)).map(str::to_owned).collect();
        (lines.len() >= count).then_some(lines)
    })
    .await;
    let span = seconds_of(lines.last().unwrap()) - seconds_of(&lines[0]);
    let allowed = sepp_server::log_limit::BURST_LINES as f64 + span + 2.0;
    assert!(
        lines.len() as f64 <= allowed,
        "{} lines of {needle:?} in {span:.1} s of log\n{}",
        lines.len(),
        lines[..lines.len().min(40)].join("\n")
    );
}

/// In a three-node cluster with a follower down, the leader's replication to it fails again and
/// again (openraft's own `RPCError ... Unreachable` error line); that line is held to the limit.
#[ignore = "openraft logs these lines only while every call site is enabled (the flood guard used to force that, at 1.6x the CPU per job); with the log filter in front they do not appear to wait on. The guard applies to them by call site all the same"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_with_a_follower_down_logs_its_errors_about_it_at_most_about_once_a_second() {
    let mut cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let away = (1..=3).find(|id| *id != leader).unwrap();
    cluster.node_mut(away).sigterm_and_wait();
    assert_held_to_a_line_a_second(cluster.node(leader), "RPCError err=Unreachable", 25).await;
}

/// A node of a three-node cluster restarted alone cannot confirm the leadership it restarts
/// with: it neither spins retrying (about 25,000 error lines a second, 58 MB in ten seconds,
/// before) nor logs each failure.
#[ignore = "openraft logs these lines only while every call site is enabled (the flood guard used to force that, at 1.6x the CPU per job); with the log filter in front they do not appear to wait on. The guard applies to them by call site all the same"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_alone_logs_its_failures_to_confirm_leadership_at_most_about_once_a_second() {
    let mut cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    for id in 1..=3 {
        cluster.node_mut(id).sigterm_and_wait();
    }
    cluster.node_mut(leader).start_again();
    let node = cluster.node(leader);
    assert_held_to_a_line_a_second(node, "timeout while confirming leadership", 25).await;
    let bytes = node.stdout().bytes();
    assert!(bytes < 256 << 10, "{bytes} bytes of log");
}
