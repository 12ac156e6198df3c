//! The process around the queue (docs/configuration.md, docs/operations.md): command line, startup errors, graceful
//! shutdown, restart, and hot reload of the config file.

mod common;

use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;
use tempfile::TempDir;
use tonic::Code;
use tonic::transport::Channel;

use pb::job_rejection::Reason;

const RELOAD_DEADLINE: Duration = Duration::from_secs(15);

async fn server_info(client: &mut QueueServiceClient<Channel>) -> pb::GetServerInfoResponse {
    client.get_server_info(pb::GetServerInfoRequest {}).await.expect("server info").into_inner()
}

// ---- command line --------------------------------------------------------------------------

#[test]
fn version_prints_the_release_it_speaks_for() {
    let dir = TempDir::new().unwrap();
    for flag in ["--version", "-V"] {
        let run = run_to_exit(&[flag], dir.path(), &[]);
        assert!(run.status.success(), "{flag}: {:?}", run.status);
        assert_eq!(run.stdout.trim(), format!("sepp {}", server_version()));
    }
}

#[test]
fn an_explicit_config_path_that_does_not_exist_is_fatal() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("nowhere").join("sepp.toml");
    let missing = missing.to_str().unwrap();
    let run = run_to_exit(&["--config", missing], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "stdout: {}", run.stdout);
    assert!(run.stderr.contains(&format!("config file not found: {missing}")), "stderr: {}", run.stderr);
    // The same through SEPP_CONFIG.
    let run = run_to_exit(&[], dir.path(), &[("SEPP_CONFIG", missing)]);
    assert_eq!(run.status.code(), Some(1), "stdout: {}", run.stdout);
    assert!(run.stderr.contains(&format!("config file not found: {missing}")), "stderr: {}", run.stderr);
}

#[test]
fn an_invalid_config_is_fatal_and_names_the_key() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, render_config(dir.path(), "[limits]\ndefault_priority = 12\n")).unwrap();
    let run = run_to_exit(&["--config", path.to_str().unwrap()], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "stdout: {}", run.stdout);
    assert!(run.stderr.contains("default_priority"), "stderr does not name the key: {}", run.stderr);
    assert!(!run.stdout.contains("queue server listening"));
    if !is_reference() {
        // docs/configuration.md#validation: a sentence saying which key, what is wrong and which file.
        assert!(run.stderr.contains("limits.default_priority"), "stderr: {}", run.stderr);
        assert!(run.stderr.contains("12"), "stderr does not give the value: {}", run.stderr);
        assert!(run.stderr.contains(path.to_str().unwrap()), "stderr does not name the file: {}", run.stderr);
    }
}

#[test]
fn a_config_that_is_not_toml_is_fatal() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, "[server\nlisten_addr = ").unwrap();
    let run = run_to_exit(&["--config", path.to_str().unwrap()], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "stdout: {}", run.stdout);
    assert!(!run.stderr.trim().is_empty());
}

#[test]
fn an_invalid_environment_override_is_fatal() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("sepp.toml");
    std::fs::write(&path, render_config(dir.path(), "")).unwrap();
    let run =
        run_to_exit(&["--config", path.to_str().unwrap()], dir.path(), &[("SEPP_LIMITS__MAX_ENQUEUE_BATCH", "0")]);
    assert_eq!(run.status.code(), Some(1), "stdout: {}", run.stdout);
    assert!(run.stderr.contains("max_enqueue_batch"), "stderr: {}", run.stderr);
}

#[tokio::test]
async fn environment_variables_override_the_file() {
    let server = TestServer::start_with_env(
        "[limits]\nmax_enqueue_batch = 5\n",
        &[("SEPP_LIMITS__MAX_ENQUEUE_BATCH", "7"), ("SEPP_SERVER__STRICT_QUEUES", "true")],
    );
    let info = server_info(&mut server.raw_client().await).await;
    assert_eq!(info.max_enqueue_batch, 7);
    assert!(info.strict_queues);
}

#[tokio::test]
async fn the_example_config_starts_a_server_with_the_defaults() {
    let dir = TempDir::new().unwrap();
    let run = run_to_exit(&["config", "example"], dir.path(), &[]);
    assert!(run.status.success(), "{:?} {}", run.status, run.stderr);
    let example = run.stdout;
    assert!(example.contains("[server]"));

    let db_path = dir.path().join("example-db");
    let replacements = [
        ("listen_addr = \"0.0.0.0:50051\"", "listen_addr = \"127.0.0.1:0\"".to_string()),
        ("db_path = \"./sepp-data\"", format!("db_path = {:?}", db_path.display().to_string())),
        ("enabled = true", "enabled = false".to_string()),
    ];
    let mut config = example.clone();
    for (from, to) in &replacements {
        assert!(config.contains(from), "the example has no `{from}`:\n{example}");
        config = config.replacen(from, to, 1);
    }
    // The first `enabled = true` must have been the admin switch, the only one on by default.
    let parsed: toml::Table = config.parse().expect("the example is TOML");
    assert_eq!(parsed["admin"]["enabled"].as_bool(), Some(false), "{config}");
    assert_eq!(parsed["server"]["listen_addr"].as_str(), Some("127.0.0.1:0"), "{config}");

    let server = TestServer::start_raw(dir, &config, &[]);
    assert!(server.wait_for_log("queue server listening", Duration::from_secs(1)).await.is_some());
    let mut client = server.raw_client().await;
    let info = server_info(&mut client).await;
    assert_eq!(info.max_payload_bytes, 1_048_576);
    assert_eq!(info.max_enqueue_batch, 256);
    assert_eq!(info.max_lease_duration, Some(ms(300_000)));
    assert!(!info.strict_queues);
    assert!(!info.dead_letter_retention_enabled);
    let queue = unique("example");
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    assert_eq!(reserve_now(&mut client, &[&queue], 30_000).await[0].id, id);
}

// ---- startup and shutdown ------------------------------------------------------------------

#[tokio::test]
async fn startup_logs_the_bound_address_and_the_settings() {
    let server =
        TestServer::start("[server]\nstrict_queues = true\n[[queues]]\nname = \"a\"\n[[queues]]\nname = \"b\"\n");
    let line = server.wait_for_log("queue server listening", Duration::from_secs(1)).await.expect("listening line");
    assert!(line.contains(&format!("127.0.0.1:{}", server.port())));
    assert!(line.contains("declared_queues=2"), "{line}");
    assert!(line.contains("strict_queues=\"enabled\""), "{line}");
    assert!(line.contains("tls=\"disabled\""), "{line}");
    assert!(line.contains("auth=\"disabled\""), "{line}");
    assert!(server.logs().contains("storage opened"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_a_parked_reserve_with_no_jobs_and_exits_cleanly() {
    let mut server = TestServer::start(&watching_parked(""));
    let client = server.raw_client().await;
    let queue = unique("parked");
    let mut request = reserve(&[&queue], 30_000);
    request.wait_timeout = Some(ms(60_000));
    let mut parked_client = client.clone();
    let parked = tokio::spawn(async move { parked_client.reserve(request).await });
    server.wait_parked(1).await;
    assert!(!parked.is_finished(), "the reserve returned before its wait elapsed");

    server.sigterm();
    let answer = tokio::time::timeout(Duration::from_secs(10), parked)
        .await
        .expect("the parked reserve was not answered within 10 s of SIGTERM")
        .expect("reserve task");
    let jobs = answer.expect("a reserve parked at shutdown gets an answer, not an error").into_inner().jobs;
    assert!(jobs.is_empty());

    let status = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(20)));
    assert_eq!(status.code(), Some(0), "exit status {status}");
    let logs = server.logs();
    assert!(logs.contains("shutdown signal received"), "{logs}");
    assert!(logs.contains("queue server stopped"), "{logs}");
    let received = logs.find("shutdown signal received").unwrap();
    let stopped = logs.find("queue server stopped").unwrap();
    assert!(received < stopped, "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_exits_zero_on_sigterm() {
    let mut server = TestServer::start("");
    server_info(&mut server.raw_client().await).await;
    let status = tokio::task::block_in_place(|| server.sigterm_and_wait());
    assert_eq!(status.code(), Some(0));
    let logs = server.logs();
    for line in ["shutdown signal received", "queue server stopped", "committer thread stopped"] {
        assert!(logs.contains(line), "no `{line}` in:\n{logs}");
    }
    assert!(server.stderr().text().trim().is_empty(), "stderr: {}", server.stderr().text());
}

/// The server turns transparent huge pages off for itself (memory.rs says why), whatever the
/// system's setting.
#[cfg(target_os = "linux")]
#[test]
fn the_server_runs_without_transparent_huge_pages() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).expect("read the status");
    let line = status.lines().find(|line| line.starts_with("THP_enabled:")).expect("a THP_enabled line");
    assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_leases_and_dead_letters_survive_a_restart() {
    let mut server = TestServer::start("[storage]\ndead_letter_retention_ms = 600000\n");
    let mut client = server.raw_client().await;
    let queue = unique("durable");
    let mut keyed = with_payload(job(&queue, "keep"), b"payload", "text/plain");
    keyed.idempotency_key = Some("once".into());
    keyed.priority = Some(9);
    let kept = enqueue_one(&mut client, keyed.clone()).await;
    let leased = enqueue_one(&mut client, job(&queue, "leased")).await;
    let dead = enqueue_one(&mut client, job(&queue, "dead")).await;
    // Take `keep` and put it back, so `leased` is the one in flight when the server stops.
    let jobs = reserve_now(&mut client, &[&queue], 60_000).await;
    assert_eq!(jobs[0].id, kept);
    client.nack(pb::NackRequest { job_id: kept.clone(), attempt: 1, ..Default::default() }).await.expect("nack");
    let mut request = reserve(&[&queue], 60_000);
    request.max_jobs = Some(3);
    let jobs = client.reserve(request).await.expect("reserve").into_inner().jobs;
    assert_eq!(jobs.len(), 3);
    client.ack(pb::AckRequest { job_id: kept.clone(), attempt: 2, worker_id: None }).await.expect("ack keep");
    let mut reject = pb::NackRequest { job_id: dead.clone(), attempt: 1, ..Default::default() };
    reject.retry = Some(pb::NackRetry { strategy: Some(pb::nack_retry::Strategy::DeadLetter(())) });
    client.nack(reject).await.expect("dead-letter");
    drop(client);

    tokio::task::block_in_place(|| server.restart());
    let mut client = server.raw_client().await;
    // The lease survived: the job is still in flight under attempt 1 and can be acked.
    client
        .ack(pb::AckRequest { job_id: leased.clone(), attempt: 1, worker_id: None })
        .await
        .expect("the lease survived");
    // The dedup record survived the ack and the restart.
    let again = client.enqueue_batch(batch(vec![keyed])).await.expect("enqueue").into_inner();
    match again.results[0].outcome.as_ref() {
        Some(pb::job_result::Outcome::Success(success)) => {
            assert_eq!((success.job_id.as_str(), success.deduplicated), (kept.as_str(), true));
        }
        other => panic!("expected a dedup hit, got {other:?}"),
    }
    // The dead letter survived.
    let drained = client
        .drain_dead_letters(pb::DrainDeadLettersRequest { queue: Some(queue.clone()), max: Some(10) })
        .await
        .expect("drain")
        .into_inner()
        .records;
    assert_eq!(
        drained.iter().map(|record| record.job.as_ref().unwrap().id.as_str()).collect::<Vec<_>>(),
        vec![dead.as_str()]
    );
    assert!(reserve_now(&mut client, &[&queue], 60_000).await.is_empty());
}

#[tokio::test]
async fn a_lease_that_expired_while_the_server_was_down_is_redelivered() {
    // In this process, on a clock the test moves while the server is down.
    use common::in_process::{InProcessServer, ManualClock};
    let dir = TempDir::new().unwrap();
    let clock = ManualClock::at(1_700_000_000_000);
    let server = InProcessServer::start(dir.path(), "", clock.clone()).await;
    let mut client = server.client().await;
    let queue = unique("expired-at-boot");
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    let jobs = reserve_now(&mut client, &[&queue], 300).await;
    assert_eq!(jobs[0].attempt, 1);
    drop(client);
    server.stop().await;
    clock.advance(300);
    let server = InProcessServer::start(dir.path(), "", clock.clone()).await;
    let mut client = server.client().await;
    let jobs = reserve_now(&mut client, &[&queue], 30_000).await;
    assert_eq!(jobs.len(), 1, "the job was not redelivered after restart");
    assert_eq!((jobs[0].id.as_str(), jobs[0].attempt), (id.as_str(), 2));
    server.stop().await;
}

// ---- hot reload ----------------------------------------------------------------------------

/// Each reload's policy reaches the committer in the order of the reloads, so the last one is
/// what the queue obeys (the depth cap is enforced on the committer, by its policy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committer_obeys_the_last_of_several_reloads() {
    let server = TestServer::start("[limits]\nmax_queue_depth = 0\n");
    server.wait_for_log("watching config file for hot reload", Duration::from_secs(5)).await.expect("watching");
    for depth in [5, 1, 7, 3, 2] {
        let mark = server.log_mark();
        server.write_config(&format!("[limits]\nmax_queue_depth = {depth}\n"));
        server.wait_for_log_since(mark, "configuration reloaded", RELOAD_DEADLINE).await.expect("reloaded");
    }
    let mut client = server.raw_client().await;
    let queue = unique("last-reload");
    let jobs = (0..3).map(|_| job(&queue, "t")).collect();
    let results = results(client.enqueue_batch(batch(jobs)).await.expect("enqueue").into_inner());
    assert!(results[0].is_ok() && results[1].is_ok(), "{results:?}");
    assert_eq!(results[2], Err(Reason::QueueFull(pb::QueueFull { queue, limit: 2 })));
}

#[tokio::test]
async fn hot_reload_applies_strict_mode_keeps_running_config_on_errors_and_rotates_api_keys() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    assert!(!server_info(&mut client).await.strict_queues);
    server.wait_for_log("watching config file for hot reload", Duration::from_secs(5)).await.expect("watching");

    // 1. Turn strict mode on and declare a queue.
    let strict = "[server]\nstrict_queues = true\n[[queues]]\nname = \"declared\"\n";
    server.write_config(strict);
    eventually("strict_queues to be reloaded", RELOAD_DEADLINE, || {
        let mut client = client.clone();
        async move { server_info(&mut client).await.strict_queues.then_some(()) }
    })
    .await;
    let response = client.enqueue_batch(batch(vec![job("undeclared", "t"), job("declared", "t")])).await;
    let results = response.expect("enqueue").into_inner().results;
    assert_eq!(
        results[0].outcome,
        Some(pb::job_result::Outcome::Rejection(pb::JobRejection {
            reason: Some(Reason::UnknownQueue(pb::UnknownQueue { queue: "undeclared".into() }))
        }))
    );
    assert!(matches!(results[1].outcome, Some(pb::job_result::Outcome::Success(_))));
    assert_code(client.reserve(reserve(&["undeclared"], 30_000)).await, Code::FailedPrecondition);
    assert_eq!(reserve_now(&mut client, &["declared"], 30_000).await.len(), 1);

    // 2. Invalid content: the reload fails and the running configuration stays.
    let mark = server.log_mark();
    server.write_raw_config("this is = = not toml\n");
    server
        .wait_for_log_since(mark, "config reload failed", RELOAD_DEADLINE)
        .await
        .unwrap_or_else(|| panic!("no reload failure logged:\n{}", server.logs()));
    let mark = server.log_mark();
    server.write_config(&format!("{strict}[limits]\ndefault_priority = 12\n"));
    server
        .wait_for_log_since(mark, "config reload failed", RELOAD_DEADLINE)
        .await
        .unwrap_or_else(|| panic!("no reload failure logged for an invalid value:\n{}", server.logs()));
    let info = server_info(&mut client).await;
    assert!(info.strict_queues, "a failed reload changed the running configuration");
    assert_code(client.reserve(reserve(&["undeclared"], 30_000)).await, Code::FailedPrecondition);
    enqueue_one(&mut client, job("declared", "still-serving")).await;

    // 3. API keys apply to the next call.
    server.write_config(&format!("{strict}[auth]\napi_keys = [{{ name = \"new\", key = \"k1\" }}]\n"));
    let status = eventually("the API keys to be reloaded", RELOAD_DEADLINE, || {
        let mut client = client.clone();
        async move { client.get_server_info(pb::GetServerInfoRequest {}).await.err() }
    })
    .await;
    assert_eq!(status.code(), Code::Unauthenticated);
    let mut request = tonic::Request::new(pb::GetServerInfoRequest {});
    request.metadata_mut().insert("authorization", "Bearer k1".parse().unwrap());
    assert!(client.get_server_info(request).await.expect("the new key works").into_inner().strict_queues);

    // 4. Removing the keys opens the server again.
    server.write_config(strict);
    eventually("the API keys to be removed", RELOAD_DEADLINE, || {
        let mut client = client.clone();
        async move { client.get_server_info(pb::GetServerInfoRequest {}).await.ok() }
    })
    .await;
}

#[tokio::test]
async fn hot_reload_retunes_limits_and_queues() {
    let server = TestServer::start("[limits]\nmax_enqueue_batch = 5\n");
    let mut client = server.raw_client().await;
    server.wait_for_log("watching config file for hot reload", Duration::from_secs(5)).await.expect("watching");
    let queue = unique("retuned");
    server.write_config(&format!(
        "[limits]\nmax_enqueue_batch = 2\n[[queues]]\nname = \"{queue}\"\nmax_payload_bytes = 4\n"
    ));
    eventually("max_enqueue_batch to be reloaded", RELOAD_DEADLINE, || {
        let mut client = client.clone();
        async move { (server_info(&mut client).await.max_enqueue_batch == 2).then_some(()) }
    })
    .await;
    let three = batch(vec![job(&queue, "a"), job(&queue, "b"), job(&queue, "c")]);
    assert_status(client.enqueue_batch(three).await, Code::InvalidArgument, "batch exceeds max_enqueue_batch (2)");
    let response = client.enqueue_batch(batch(vec![with_payload(job(&queue, "a"), b"12345", "raw")])).await;
    assert_eq!(
        response.expect("enqueue").into_inner().results[0].outcome,
        Some(pb::job_result::Outcome::Rejection(pb::JobRejection {
            reason: Some(Reason::PayloadTooLarge(pb::PayloadTooLarge { limit: 4, actual: 5 }))
        }))
    );
}

#[tokio::test]
async fn a_changed_restart_only_field_is_reported_and_not_applied() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    server.wait_for_log("watching config file for hot reload", Duration::from_secs(5)).await.expect("watching");
    let mark = server.log_mark();
    server.write_config("[storage]\ndead_letter_retention_ms = 60000\n[limits]\nmax_reserve_batch = 3\n");
    eventually("max_reserve_batch to be reloaded", RELOAD_DEADLINE, || {
        let mut client = client.clone();
        async move { (server_info(&mut client).await.max_reserve_batch == 3).then_some(()) }
    })
    .await;
    assert!(!server_info(&mut client).await.dead_letter_retention_enabled, "retention is fixed at boot");
    let line = server
        .wait_for_log_since(mark, "dead_letter_retention_ms", Duration::from_secs(5))
        .await
        .unwrap_or_else(|| panic!("the changed restart-only field was not reported:\n{}", server.logs()));
    assert!(line.to_lowercase().contains("restart"), "{line}");
}

/// A peer that opens a connection and then never answers anything (not even the transport's
/// goodbye) cannot keep the server from exiting: after the grace period it closes the
/// connection and stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_connection_does_not_keep_the_server_alive_after_the_grace_period() {
    use std::io::{Read, Write};
    let mut server = TestServer::start("");
    let mut stalled = std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    // The HTTP/2 preface and an empty SETTINGS frame; the server's own SETTINGS frame header
    // proves it took the connection on. Then silence: no ACK, no answer to its goodbye.
    stalled.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").expect("preface");
    let mut header = [0; 9];
    stalled.read_exact(&mut header).expect("the server's SETTINGS");
    assert_eq!(header[3], 4, "the first frame is SETTINGS");
    tokio::task::block_in_place(|| {
        server.sigterm();
        // Well before the transport's keepalive (a ping every 30 s, 10 s to answer) would
        // give up on the peer by itself.
        let status = server.wait_exit(Duration::from_secs(25));
        assert!(status.success(), "{status}\n{}", server.logs());
    });
    assert!(server.logs().contains("committer thread stopped"), "{}", server.logs());
    drop(stalled);
}
