//! Observability against the real binary: the Prometheus endpoint's exposition after a known
//! workload, and an OTLP receiver built on the official protocol definitions
//! (`opentelemetry-proto`'s generated gRPC services) that receives the server's spans and
//! metrics. A real Prometheus server scraping the endpoint is `tests/prometheus_scrape.rs`.

mod common;
mod otlp_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{QueueServiceClient, TestServer, loopback_port, unique};
use otlp_support::{Receiver, attr, has_link, hex};
use sepp_server::proto::v1 as pb;
use tonic::transport::Channel;

const WAIT: Duration = Duration::from_secs(30);

/// One sample of the text exposition.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parses the Prometheus text format (enough of it for what the exporter writes).
pub fn parse_exposition(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("sample line has a value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while let Some((key, after)) = rest.split_once("=\"") {
            let end = after.find("\"").expect("closing quote");
            map.insert(key.trim_start_matches(',').to_owned(), after[..end].to_owned());
            rest = &after[end + 1..];
        }
        samples.push(Sample { name: name.to_owned(), labels: map, value });
    }
    samples
}

/// The value of the series `name` whose labels include every pair of `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|sample| {
            sample.name == name
                && labels.iter().all(|(key, value)| sample.labels.get(*key).map(String::as_str) == Some(value))
        })
        .map(|sample| sample.value)
}

fn job(queue: &str, idempotency_key: Option<&str>) -> pb::EnqueueRequest {
    pb::EnqueueRequest {
        queue: queue.into(),
        job_type: "obs.test".into(),
        idempotency_key: idempotency_key.map(str::to_owned),
        ..Default::default()
    }
}

fn lease(ms: u64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 })
}

fn reserve(queue: &str, max_jobs: u32, lease_ms: u64) -> pb::ReserveRequest {
    pb::ReserveRequest {
        queues: vec![queue.into()],
        lease_duration: lease(lease_ms),
        max_jobs: Some(max_jobs),
        worker_id: Some("obs-worker".into()),
        ..Default::default()
    }
}

fn dead_letter_nack(job: &pb::Job) -> pb::NackRequest {
    pb::NackRequest {
        job_id: job.id.clone(),
        attempt: job.attempt,
        reason: Some("broken".into()),
        retry: Some(pb::NackRetry { strategy: Some(pb::nack_retry::Strategy::DeadLetter(())) }),
        ..Default::default()
    }
}

fn ack(job: &pb::Job) -> pb::AckRequest {
    pb::AckRequest { job_id: job.id.clone(), attempt: job.attempt, ..Default::default() }
}

/// What the known workload did, for the assertions.
struct Workload {
    queue: String,
    empty_queue: String,
    expiring_queue: String,
}

/// Enqueues 4 jobs in `queue` (one of them a duplicate) plus one with no queue (rejected),
/// reserves 3, acks 1, dead-letters 2 by nack, drains 1, fails one ack, reserves once from an
/// empty queue, and lets two leases expire in a third queue (a redelivery, then a dead letter).
async fn workload(client: &mut QueueServiceClient<Channel>) -> Workload {
    let queue = unique("obs");
    let empty_queue = unique("obs-empty");
    let expiring_queue = unique("obs-expiring");
    let batch = pb::EnqueueBatchRequest {
        jobs: vec![job(&queue, None), job(&queue, Some("k")), job(&queue, Some("k")), job("", None), job(&queue, None)],
    };
    let results = client.enqueue_batch(batch).await.expect("enqueue").into_inner().results;
    assert!(
        matches!(results[3].outcome, Some(pb::job_result::Outcome::Rejection(_))),
        "the job without a queue is rejected"
    );
    client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![job(&queue, None)] }).await.expect("enqueue");
    let jobs = client.reserve(reserve(&queue, 3, 60_000)).await.expect("reserve").into_inner().jobs;
    assert_eq!(jobs.len(), 3);
    client.ack(ack(&jobs[0])).await.expect("ack");
    let mut stale = ack(&jobs[0]);
    stale.attempt = 7;
    client.ack(stale).await.expect_err("an ack of the wrong attempt fails");
    client.nack(dead_letter_nack(&jobs[1])).await.expect("nack");
    client.nack(dead_letter_nack(&jobs[2])).await.expect("nack");
    let drained = client
        .drain_dead_letters(pb::DrainDeadLettersRequest { queue: Some(queue.clone()), max: Some(1) })
        .await
        .expect("drain")
        .into_inner()
        .records;
    assert_eq!(drained.len(), 1);
    let empty = client.reserve(reserve(&empty_queue, 1, 60_000)).await.expect("reserve").into_inner().jobs;
    assert!(empty.is_empty());
    let mut expiring = job(&expiring_queue, None);
    expiring.max_attempts = Some(2);
    let results = client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![expiring] }).await.expect("enqueue");
    assert!(matches!(results.get_ref().results[0].outcome, Some(pb::job_result::Outcome::Success(_))), "{results:?}");
    for attempt in 1..=2 {
        // Each lease runs out after 1 ms; the sweep redelivers (attempt 1) or dead-letters
        // (attempt 2) the job. The next reserve waits for the redelivery.
        if attempt == 2 {
            let mut wait = reserve(&expiring_queue, 1, 1);
            wait.wait_timeout = lease(20_000);
            let jobs = client.reserve(wait).await.expect("reserve").into_inner().jobs;
            assert_eq!(jobs.first().map(|job| job.attempt), Some(2), "the expired lease was redelivered");
        } else {
            let jobs = client.reserve(reserve(&expiring_queue, 1, 1)).await.expect("reserve").into_inner().jobs;
            assert_eq!(jobs.len(), 1);
        }
    }
    Workload { queue, empty_queue, expiring_queue }
}

async fn scrape(url: &str) -> String {
    reqwest::get(url).await.expect("scrape").text().await.expect("body")
}

/// Scrapes until `ready` holds for the samples (gauges follow the committer's snapshots, and
/// sweeps land when their deadline passes), or fails after [`WAIT`] with the last scrape.
async fn scrape_until(url: &str, ready: impl Fn(&[Sample]) -> bool) -> Vec<Sample> {
    let deadline = Instant::now() + WAIT;
    loop {
        let text = scrape(url).await;
        let samples = parse_exposition(&text);
        if ready(&samples) {
            return samples;
        }
        assert!(Instant::now() < deadline, "the scrape never showed what was expected:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn prometheus_port(server: &TestServer) -> u16 {
    let line = server.stdout().wait_for("prometheus metrics endpoint listening", WAIT).expect("the endpoint's line");
    loopback_port(&line).unwrap_or_else(|| panic!("no port in {line:?}"))
}

const PROMETHEUS_ON: &str = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n\n[storage]\ndead_letter_retention_ms = 3600000\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_exposes_every_family_with_the_names_labels_and_values_of_a_known_workload() {
    let server = TestServer::start(PROMETHEUS_ON);
    let url = format!("http://127.0.0.1:{}/metrics", prometheus_port(&server));
    let mut client = server.raw_client().await;
    let Workload { queue, empty_queue, expiring_queue } = workload(&mut client).await;
    let q = queue.as_str();
    let samples = scrape_until(&url, |samples| {
        value(samples, "sepp_jobs_dead_lettered_total", &[("queue", &expiring_queue), ("cause", "lease_expired")])
            == Some(1.0)
            && value(samples, "sepp_queue_dead_lettered", &[("queue", q)]) == Some(1.0)
            && value(samples, "sepp_queue_ready", &[("queue", q)]) == Some(1.0)
    })
    .await;
    let expect = |name: &str, labels: &[(&str, &str)], expected: f64| {
        assert_eq!(value(&samples, name, labels), Some(expected), "{name}{labels:?}");
    };
    expect("sepp_requests_total", &[("method", "EnqueueBatch"), ("outcome", "ok")], 3.0);
    expect("sepp_requests_total", &[("method", "Ack"), ("outcome", "ok")], 1.0);
    expect("sepp_requests_total", &[("method", "Ack"), ("outcome", "error")], 1.0);
    expect("sepp_requests_total", &[("method", "Nack"), ("outcome", "ok")], 2.0);
    expect("sepp_requests_total", &[("method", "DrainDeadLetters"), ("outcome", "ok")], 1.0);
    expect("sepp_requests_total", &[("method", "Reserve"), ("outcome", "ok")], 4.0);
    expect("sepp_request_duration_milliseconds_count", &[("method", "Reserve")], 4.0);
    expect("sepp_request_duration_milliseconds_bucket", &[("method", "Reserve"), ("le", "+Inf")], 4.0);
    assert!(
        value(&samples, "sepp_request_duration_milliseconds_bucket", &[("method", "Ack"), ("le", "10000")]).is_some()
    );
    expect("sepp_jobs_enqueued_total", &[("queue", q)], 4.0);
    expect("sepp_jobs_deduplicated_total", &[("queue", q)], 1.0);
    expect("sepp_jobs_rejected_total", &[("queue", "_rejected"), ("reason", "invalid_request")], 1.0);
    expect("sepp_jobs_reserved_total", &[("queue", q)], 3.0);
    expect("sepp_jobs_acked_total", &[("queue", q)], 1.0);
    expect("sepp_jobs_nacked_total", &[("queue", q)], 2.0);
    expect("sepp_jobs_dead_lettered_total", &[("queue", q), ("cause", "rejected")], 2.0);
    expect("sepp_dead_letters_drained_total", &[], 1.0);
    expect("sepp_reserve_empty_total", &[("queue", &empty_queue)], 1.0);
    expect("sepp_sweep_lease_redeliveries_total", &[("queue", &expiring_queue)], 1.0);
    expect("sepp_jobs_reserved_total", &[("queue", &expiring_queue)], 2.0);
    expect("sepp_queue_inflight", &[("queue", q)], 0.0);
    expect("sepp_queue_scheduled", &[("queue", q)], 0.0);
    expect("sepp_command_queue_depth", &[], 0.0);
    expect("sepp_reserve_waiting", &[], 0.0);
    assert!(value(&samples, "sepp_commit_duration_milliseconds_count", &[]).is_some_and(|count| count >= 1.0));
    assert!(value(&samples, "target_info", &[("service_name", "sepp")]).is_some(), "target_info names the service");
    for sample in samples.iter().filter(|sample| sample.name.starts_with("sepp_")) {
        assert_eq!(sample.labels.get("otel_scope_name").map(String::as_str), Some("sepp"), "{sample:?}");
    }
    server.stdout().wait_for("prometheus metrics endpoint listening", WAIT).expect("logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_serves_metrics_on_any_method_and_points_elsewhere_to_it() {
    let server = TestServer::start(PROMETHEUS_ON);
    let base = format!("http://127.0.0.1:{}", prometheus_port(&server));
    let http = reqwest::Client::new();
    let posted = http.post(format!("{base}/metrics")).send().await.expect("post");
    assert_eq!(posted.status(), 200);
    assert!(posted.text().await.unwrap().contains("sepp_command_queue_depth"));
    for path in ["/", "/metricsx", "/admin"] {
        let response = http.get(format!("{base}{path}")).send().await.expect("get");
        assert_eq!(response.status(), 404, "{path}");
        assert_eq!(response.text().await.unwrap(), "try /metrics\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_metrics_off_there_is_no_endpoint_and_no_line() {
    let server = TestServer::start("");
    server.raw_client().await.get_server_info(pb::GetServerInfoRequest {}).await.expect("info");
    assert!(!server.logs().contains("prometheus metrics endpoint listening"));
}

// ---- OTLP: spans and metrics pushed to a receiver --------------------------------------------

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PRODUCER_SPAN: &str = "00f067aa0ba902b7";

fn traced<T>(message: T, traceparent: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert("traceparent", traceparent.parse().expect("ascii"));
    request
}

fn otlp_config(receiver: &Receiver, ratio: f64) -> String {
    format!(
        "[tracing]\nenabled = true\notlp_endpoint = \"{endpoint}\"\nsample_ratio = {ratio:?}\n\n\
         [metrics]\nenabled = true\notlp_endpoint = \"{endpoint}\"\nexport_interval_ms = 200\n",
        endpoint = receiver.endpoint()
    )
}

/// The batch span processor exports every 100 ms instead of every 5 s.
const FAST_EXPORT: &[(&str, &str)] = &[("OTEL_BSP_SCHEDULE_DELAY", "100")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_job_is_traced_from_a_parented_enqueue_through_reserve_and_ack_with_links_to_its_producer() {
    let receiver = Receiver::start().await;
    let server = TestServer::start_with_env(&otlp_config(&receiver, 1.0), FAST_EXPORT);
    server.stdout().wait_for("OTLP tracing enabled", WAIT).expect("the tracing line");
    let mut client = server.raw_client().await;
    let queue = unique("traced");
    let producer = format!("00-{TRACE_ID}-{PRODUCER_SPAN}-01");
    let mut request = job(&queue, None);
    request.trace_context = Some(pb::TraceContext { traceparent: producer.clone(), tracestate: None });
    let enqueued =
        client.enqueue_batch(traced(pb::EnqueueBatchRequest { jobs: vec![request] }, &producer)).await.unwrap();
    let Some(pb::job_result::Outcome::Success(success)) = &enqueued.get_ref().results[0].outcome else {
        panic!("not enqueued")
    };
    let job_id = success.job_id.clone();
    let jobs = client.reserve(reserve(&queue, 1, 60_000)).await.unwrap().into_inner().jobs;
    assert_eq!(jobs[0].id, job_id);
    client.ack(ack(&jobs[0])).await.unwrap();

    let spans = receiver.wait_for_spans(|spans| spans.iter().any(|span| span.name == "sepp.ack"), WAIT).await;
    let named = |name: &str| spans.iter().find(|span| span.name == name).unwrap_or_else(|| panic!("no {name} span"));
    let enqueue = named("sepp.enqueue");
    assert_eq!(hex(&enqueue.trace_id), TRACE_ID, "the enqueue joins the caller's trace");
    assert_eq!(hex(&enqueue.parent_span_id), PRODUCER_SPAN, "the caller's span parents it");
    assert_eq!(enqueue.kind, 2, "server kind");
    assert_eq!(attr(enqueue, "messaging.system").as_deref(), Some("sepp"));
    assert_eq!(attr(enqueue, "messaging.operation.type").as_deref(), Some("send"));
    assert_eq!(attr(enqueue, "messaging.destination.name").as_deref(), Some(queue.as_str()));
    assert_eq!(attr(enqueue, "accepted").as_deref(), Some("1"));
    assert_eq!(attr(enqueue, "batch_size").as_deref(), Some("1"));
    assert!(attr(enqueue, "job_ids").is_some_and(|ids| ids.contains(&job_id)));

    let reserve_span = named("sepp.reserve");
    assert_ne!(hex(&reserve_span.trace_id), TRACE_ID, "a reserve without traceparent is a trace of its own");
    assert_eq!(attr(reserve_span, "messaging.operation.type").as_deref(), Some("receive"));
    assert_eq!(attr(reserve_span, "job_count").as_deref(), Some("1"));
    assert_eq!(attr(reserve_span, "worker_id").as_deref(), Some("obs-worker"));
    let deliver = named("sepp.deliver");
    assert_eq!(deliver.trace_id, reserve_span.trace_id);
    assert_eq!(deliver.parent_span_id, reserve_span.span_id, "deliver is a child of its reserve");
    assert_eq!(attr(deliver, "messaging.message.id").as_deref(), Some(job_id.as_str()));
    assert!(has_link(deliver, TRACE_ID, PRODUCER_SPAN), "deliver links to the producer");

    let ack_span = named("sepp.ack");
    assert_eq!(attr(ack_span, "messaging.operation.type").as_deref(), Some("settle"));
    assert_eq!(attr(ack_span, "queue").as_deref(), Some(queue.as_str()));
    assert_eq!(attr(ack_span, "job_id").as_deref(), Some(job_id.as_str()));
    assert!(has_link(ack_span, TRACE_ID, PRODUCER_SPAN), "ack links to the producer");
    let resource = receiver.span_resource_attr("service.name").await;
    assert_eq!(resource.as_deref(), Some("sepp"));

    // Metrics arrive over OTLP too, with the workload's values.
    let enqueued = receiver.wait_for_sum("sepp.jobs.enqueued", &[("queue", &queue)], 1, WAIT).await;
    assert_eq!(enqueued, 1);
    assert_eq!(receiver.wait_for_sum("sepp.jobs.acked", &[("queue", &queue)], 1, WAIT).await, 1);
    assert_eq!(receiver.wait_for_sum("sepp.requests", &[("method", "Reserve"), ("outcome", "ok")], 1, WAIT).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sampler_follows_a_parent_and_otherwise_the_ratio() {
    let receiver = Receiver::start().await;
    let server = TestServer::start_with_env(&otlp_config(&receiver, 0.0), FAST_EXPORT);
    let mut client = server.raw_client().await;
    // Ratio 0: roots and children of unsampled parents are dropped...
    for _ in 0..20 {
        client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap();
    }
    let unsampled = format!("00-{TRACE_ID}-{PRODUCER_SPAN}-00");
    client.get_server_info(traced(pb::GetServerInfoRequest {}, &unsampled)).await.unwrap();
    // ...children of sampled parents are kept.
    let sampled_trace = "0af7651916cd43dd8448eb211c80319c";
    let sampled = format!("00-{sampled_trace}-b7ad6b7169203331-01");
    client.get_server_info(traced(pb::GetServerInfoRequest {}, &sampled)).await.unwrap();
    let spans =
        receiver.wait_for_spans(|spans| spans.iter().any(|span| hex(&span.trace_id) == sampled_trace), WAIT).await;
    assert_eq!(spans.len(), 1, "only the sampled parent's child is exported: {spans:?}");
    assert_eq!(spans[0].name, "sepp.get_server_info");

    // Ratio 1: every root is kept.
    let receiver = Receiver::start().await;
    let server = TestServer::start_with_env(&otlp_config(&receiver, 1.0), FAST_EXPORT);
    let mut client = server.raw_client().await;
    for _ in 0..20 {
        client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap();
    }
    let spans = receiver.wait_for_spans(|spans| spans.len() >= 20, WAIT).await;
    assert_eq!(spans.len(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_inside_a_traced_call_carry_its_trace_id_in_json_and_text() {
    for format in ["json", "text"] {
        let receiver = Receiver::start().await;
        let config = format!("{}\n[logging]\nformat = \"{format}\"\n", otlp_config(&receiver, 1.0));
        let server = TestServer::start_with_env(&config, FAST_EXPORT);
        let mut client = server.raw_client().await;
        let producer = format!("00-{TRACE_ID}-{PRODUCER_SPAN}-01");
        // A job without a queue is rejected, and the rejection is logged inside the call's span.
        client.enqueue_batch(traced(pb::EnqueueBatchRequest { jobs: vec![job("", None)] }, &producer)).await.unwrap();
        let line = server.wait_for_log("enqueue rejected", WAIT).await.expect("the rejection line");
        assert!(line.contains(TRACE_ID), "{format}: {line}");
        assert!(line.contains("span_id"), "{format}: {line}");
    }
}

// ---- A real Prometheus server scrapes the endpoint -------------------------------------------

/// The Prometheus binary: `$SEPP_PROMETHEUS_BIN`, else Debian's `/usr/bin/prometheus`, which
/// `tests/observability/run.sh` installs before running this test.
fn prometheus_bin() -> std::path::PathBuf {
    std::env::var_os("SEPP_PROMETHEUS_BIN").map_or_else(|| "/usr/bin/prometheus".into(), Into::into)
}

/// A Prometheus child process with its own data directory, killed on drop.
struct Prometheus {
    child: std::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (`127.0.0.1:<port>`) every second, and waits until it
    /// says it is ready.
    async fn start(target: &str) -> Prometheus {
        let bin = prometheus_bin();
        assert!(bin.exists(), "no Prometheus at {}: run tests/observability/run.sh, which installs it", bin.display());
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: sepp\n    static_configs:\n      - targets: [\"{target}\"]\n"
            ),
        )
        .expect("write prometheus.yml");
        // A free port for its web listener (Prometheus does not report a port 0 it was given).
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new(&bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", bin.display()));
        let prometheus = Prometheus { child, base: format!("http://127.0.0.1:{port}"), _dir: dir };
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = reqwest::get(format!("{}/-/ready", prometheus.base)).await;
            if ready.is_ok_and(|response| response.status() == 200) {
                return prometheus;
            }
            assert!(Instant::now() < deadline, "Prometheus never became ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The instant vector of `query`: each series' labels and value.
    async fn query(&self, query: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let url = format!("{}/api/v1/query", self.base);
        let body: serde_json::Value =
            reqwest::Client::new().get(url).query(&[("query", query)]).send().await.unwrap().json().await.unwrap();
        assert_eq!(body["status"], "success", "{query}: {body}");
        body["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(key, value)| (key.clone(), value.as_str().unwrap().to_owned()))
                    .collect();
                (labels, series["value"][1].as_str().unwrap().parse().unwrap())
            })
            .collect()
    }

    /// Queries until the single series of `query` has `expected`, which a scrape after the
    /// workload brings.
    async fn wait_for(&self, query: &str, expected: f64) -> BTreeMap<String, String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let result = self.query(query).await;
            if let [(labels, value)] = result.as_slice()
                && *value == expected
            {
                return labels.clone();
            }
            assert!(Instant::now() < deadline, "{query} never became {expected}: {result:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Prometheus server: tests/observability/run.sh installs Debian's and runs this"]
async fn a_real_prometheus_scrapes_every_family_with_its_labels_and_values() {
    let server = TestServer::start(PROMETHEUS_ON);
    let target = format!("127.0.0.1:{}", prometheus_port(&server));
    let prometheus = Prometheus::start(&target).await;
    let mut client = server.raw_client().await;
    let Workload { queue, empty_queue, expiring_queue } = workload(&mut client).await;
    let q = queue.as_str();
    // The last family to settle first: the lease-expiry dead letter and the gauges.
    prometheus
        .wait_for(&format!("sepp_jobs_dead_lettered_total{{queue=\"{expiring_queue}\",cause=\"lease_expired\"}}"), 1.0)
        .await;
    prometheus.wait_for(&format!("sepp_queue_ready{{queue=\"{q}\"}}"), 1.0).await;
    let checks: Vec<(String, f64)> = vec![
        ("sepp_requests_total{method=\"EnqueueBatch\",outcome=\"ok\"}".into(), 3.0),
        ("sepp_requests_total{method=\"Ack\",outcome=\"error\"}".into(), 1.0),
        ("sepp_request_duration_milliseconds_count{method=\"Reserve\"}".into(), 4.0),
        ("sepp_request_duration_milliseconds_bucket{method=\"Reserve\",le=\"+Inf\"}".into(), 4.0),
        (format!("sepp_jobs_enqueued_total{{queue=\"{q}\"}}"), 4.0),
        (format!("sepp_jobs_deduplicated_total{{queue=\"{q}\"}}"), 1.0),
        ("sepp_jobs_rejected_total{queue=\"_rejected\",reason=\"invalid_request\"}".into(), 1.0),
        (format!("sepp_jobs_reserved_total{{queue=\"{q}\"}}"), 3.0),
        (format!("sepp_jobs_acked_total{{queue=\"{q}\"}}"), 1.0),
        (format!("sepp_jobs_nacked_total{{queue=\"{q}\"}}"), 2.0),
        (format!("sepp_jobs_dead_lettered_total{{queue=\"{q}\",cause=\"rejected\"}}"), 2.0),
        ("sepp_dead_letters_drained_total".into(), 1.0),
        (format!("sepp_reserve_empty_total{{queue=\"{empty_queue}\"}}"), 1.0),
        (format!("sepp_sweep_lease_redeliveries_total{{queue=\"{expiring_queue}\"}}"), 1.0),
        (format!("sepp_queue_dead_lettered{{queue=\"{q}\"}}"), 1.0),
        (format!("sepp_queue_inflight{{queue=\"{q}\"}}"), 0.0),
        (format!("sepp_queue_scheduled{{queue=\"{q}\"}}"), 0.0),
        ("sepp_command_queue_depth".into(), 0.0),
    ];
    for (query, expected) in checks {
        let labels = prometheus.wait_for(&query, expected).await;
        assert_eq!(labels.get("otel_scope_name").map(String::as_str), Some("sepp"), "{query}: {labels:?}");
        assert_eq!(labels.get("job").map(String::as_str), Some("sepp"), "scraped by the sepp job");
    }
    let commits = prometheus.query("sepp_commit_duration_milliseconds_count").await;
    assert!(commits.first().is_some_and(|(_, count)| *count >= 1.0), "{commits:?}");
    let target_info = prometheus.query("target_info").await;
    assert!(
        target_info.iter().any(|(labels, _)| labels.get("service_name").map(String::as_str) == Some("sepp")),
        "{target_info:?}"
    );
    // The dashboard's queries work on this data (docs/grafana/sepp.json).
    // A rate needs two scrapes of a series; wait for the second.
    let p99 = "histogram_quantile(0.99, sum by (le, method) (rate(sepp_request_duration_milliseconds_bucket[1m])))";
    let deadline = Instant::now() + WAIT;
    while prometheus.query(p99).await.is_empty() {
        assert!(Instant::now() < deadline, "the latency percentiles query never returned series");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_a_thousand_queue_names_the_rest_share_one_label_and_the_totals_stay_exact() {
    let server = TestServer::start(PROMETHEUS_ON);
    let url = format!("http://127.0.0.1:{}/metrics", prometheus_port(&server));
    let mut client = server.raw_client().await;
    let prefix = unique("many");
    let names: Vec<String> = (0..1_200).map(|n| format!("{prefix}-{n}")).collect();
    for chunk in names.chunks(200) {
        let jobs = chunk.iter().map(|name| job(name, None)).collect();
        client.enqueue_batch(pb::EnqueueBatchRequest { jobs }).await.expect("enqueue");
    }
    let samples =
        scrape_until(&url, |samples| value(samples, "sepp_queue_ready", &[("queue", "_other")]) == Some(200.0)).await;
    let enqueued: Vec<&Sample> = samples.iter().filter(|sample| sample.name == "sepp_jobs_enqueued_total").collect();
    assert_eq!(enqueued.len(), 1_001, "1,000 queues of their own and `_other`");
    assert_eq!(enqueued.iter().map(|sample| sample.value).sum::<f64>(), 1_200.0, "no job is lost from the totals");
    assert_eq!(value(&samples, "sepp_jobs_enqueued_total", &[("queue", "_other")]), Some(200.0));
    let ready = samples.iter().filter(|sample| sample.name == "sepp_queue_ready").count();
    assert_eq!(ready, 1_001);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nack_and_sweep_spans_link_to_the_producer() {
    let receiver = Receiver::start().await;
    let server = TestServer::start_with_env(&otlp_config(&receiver, 1.0), FAST_EXPORT);
    let mut client = server.raw_client().await;
    let queue = unique("swept");
    let producer = format!("00-{TRACE_ID}-{PRODUCER_SPAN}-01");
    let mut request = job(&queue, None);
    request.trace_context = Some(pb::TraceContext { traceparent: producer.clone(), tracestate: None });
    request.max_attempts = Some(3);
    client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![request] }).await.unwrap();
    // Attempt 1 is nacked for a retry after 1 ms: the sweep promotes it.
    let first = client.reserve(reserve(&queue, 1, 60_000)).await.unwrap().into_inner().jobs.remove(0);
    let retry = pb::NackRequest {
        job_id: first.id.clone(),
        attempt: 1,
        retry: Some(pb::NackRetry {
            strategy: Some(pb::nack_retry::Strategy::Delay(prost_types::Duration { seconds: 0, nanos: 1_000_000 })),
        }),
        ..Default::default()
    };
    client.nack(retry).await.unwrap();
    // Attempt 2's lease runs out after 1 ms: the sweep redelivers it; attempt 3's too: the
    // sweep dead-letters it.
    for attempt in 2..=3 {
        let mut wait = reserve(&queue, 1, 1);
        wait.wait_timeout = lease(20_000);
        let jobs = client.reserve(wait).await.unwrap().into_inner().jobs;
        assert_eq!(jobs.first().map(|job| job.attempt), Some(attempt));
    }
    let spans = receiver.wait_for_spans(|spans| spans.iter().any(|span| span.name == "sepp.dead_letter"), WAIT).await;
    for name in ["sepp.nack", "sepp.promote", "sepp.redeliver", "sepp.dead_letter"] {
        let span = spans.iter().find(|span| span.name == name).unwrap_or_else(|| panic!("no {name} span: {spans:#?}"));
        assert!(has_link(span, TRACE_ID, PRODUCER_SPAN), "{name} links to the producer");
        assert_eq!(attr(span, "messaging.message.id").as_deref(), Some(first.id.as_str()), "{name}");
        assert_eq!(attr(span, "queue").as_deref(), Some(queue.as_str()), "{name}");
    }
    let nack = spans.iter().find(|span| span.name == "sepp.nack").unwrap();
    assert_eq!(attr(nack, "retry").as_deref(), Some("delay"));
    assert_eq!(attr(nack, "dead_lettered").as_deref(), Some("false"));
    let dead = spans.iter().find(|span| span.name == "sepp.dead_letter").unwrap();
    assert_eq!(attr(dead, "cause").as_deref(), Some("lease_expired"));
    assert_eq!(attr(dead, "attempt").as_deref(), Some("3"));
    let redeliver = spans.iter().find(|span| span.name == "sepp.redeliver").unwrap();
    assert_eq!(attr(redeliver, "reason").as_deref(), Some("lease_expired"));
    // Dead-letter retention is off here: the job is gone after the sweep, and still counted.
    let labels = [("queue", queue.as_str()), ("cause", "lease_expired")];
    assert_eq!(receiver.wait_for_sum("sepp.jobs.dead_lettered", &labels, 1, WAIT).await, 1);
    assert_eq!(receiver.wait_for_sum("sepp.sweep.promotions", &[("queue", &queue)], 1, WAIT).await, 1);
    assert_eq!(receiver.wait_for_sum("sepp.sweep.lease_redeliveries", &[("queue", &queue)], 1, WAIT).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_idempotency_windows_and_dead_letters_are_counted() {
    let config = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n\n\
                  [storage]\ndedup_window_ms = 1\ndead_letter_retention_ms = 1\n";
    let server = TestServer::start(config);
    let url = format!("http://127.0.0.1:{}/metrics", prometheus_port(&server));
    let mut client = server.raw_client().await;
    let queue = unique("expiring-keys");
    client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![job(&queue, Some("key"))] }).await.unwrap();
    let jobs = client.reserve(reserve(&queue, 1, 60_000)).await.unwrap().into_inner().jobs;
    client.nack(dead_letter_nack(&jobs[0])).await.unwrap();
    let samples = scrape_until(&url, |samples| {
        value(samples, "sepp_sweep_dedup_expirations_total", &[("queue", &queue)]) == Some(1.0)
            && value(samples, "sepp_dead_letters_expired_total", &[]) == Some(1.0)
    })
    .await;
    assert_eq!(
        value(&samples, "sepp_jobs_dead_lettered_total", &[("queue", &queue), ("cause", "rejected")]),
        Some(1.0)
    );
}

/// A cancelled job is counted as a dead letter with cause `cancelled`, however it ends: at the
/// cancel (it was queued), at its worker's next call (it was leased), or when the cancelled
/// lease runs out. (Before, the counter of that cause did not exist and counting one stopped
/// the telemetry task.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_jobs_are_counted_as_dead_letters_with_their_own_cause() {
    let server = TestServer::start(PROMETHEUS_ON);
    let url = format!("http://127.0.0.1:{}/metrics", prometheus_port(&server));
    let mut client = server.raw_client().await;
    let queue = unique("cancelled");
    let cancel = |job_id: &str| pb::CancelJobRequest { job_id: job_id.to_owned(), reason: None };
    let enqueue = pb::EnqueueBatchRequest { jobs: vec![job(&queue, None), job(&queue, None)] };
    client.enqueue_batch(enqueue).await.expect("enqueue");
    // Leased for a minute: cancelled, then its worker acks.
    let held = client.reserve(reserve(&queue, 1, 60_000)).await.expect("reserve").into_inner().jobs;
    // Leased for a millisecond: cancelled as its lease runs out (before or after).
    let lapsing = client.reserve(reserve(&queue, 1, 1)).await.expect("reserve").into_inner().jobs;
    assert_eq!((held.len(), lapsing.len()), (1, 1));
    let enqueue = pb::EnqueueBatchRequest { jobs: vec![job(&queue, None)] };
    let results = client.enqueue_batch(enqueue).await.expect("enqueue").into_inner().results;
    let Some(pb::job_result::Outcome::Success(queued)) = &results[0].outcome else { panic!("{results:?}") };
    let queued = [queued.job_id.clone()];
    client.cancel_job(cancel(&queued[0])).await.expect("cancel a queued job");
    client.cancel_job(cancel(&held[0].id)).await.expect("cancel a leased job");
    client.cancel_job(cancel(&lapsing[0].id)).await.expect("cancel a leased job");
    client.ack(ack(&held[0])).await.expect_err("the ack of a cancelled lease is refused");
    scrape_until(&url, |samples| {
        value(samples, "sepp_jobs_dead_lettered_total", &[("queue", &queue), ("cause", "cancelled")]) == Some(3.0)
            && value(samples, "sepp_queue_dead_lettered", &[("queue", &queue)]) == Some(3.0)
    })
    .await;
}
