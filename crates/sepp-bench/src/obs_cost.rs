//! What observability costs: the same load (single-job enqueue, then drain, on 50 connections)
//! against a fresh server with everything off, with metrics and the Prometheus endpoint on
//! (scraped once a second by this harness, as Prometheus would), and with tracing on at ratio
//! 1.0 exporting every span to an OTLP receiver in this process; alternating in rounds, so a
//! noisy machine affects every configuration alike. Server CPU is read from `/proc`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use tokio::runtime::Runtime;

use crate::BenchError;
use crate::client::LoadClient;
use crate::compare;
use crate::results::{Scenario, ThroughputRun};
use crate::server::{PersistMode, Program, ServerProcess};

/// One configuration measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Off,
    /// Metrics recorded, the Prometheus endpoint on and scraped every second.
    Metrics,
    /// Tracing on, ratio 1.0, every span exported over OTLP/gRPC.
    Tracing,
}

impl Setting {
    pub const ALL: [Setting; 3] = [Setting::Off, Setting::Metrics, Setting::Tracing];

    pub fn name(self) -> &'static str {
        match self {
            Setting::Off => "off",
            Setting::Metrics => "metrics + prometheus",
            Setting::Tracing => "tracing 1.0 + otlp",
        }
    }
}

/// What to measure.
pub struct Plan {
    pub binary: std::path::PathBuf,
    pub persist_mode: PersistMode,
    pub rounds: usize,
    pub jobs: u64,
}

/// One round of the load against one setting.
pub struct Measured {
    pub setting: Setting,
    pub run: ThroughputRun,
    /// Scrapes of /metrics during the round, or spans received by the OTLP receiver.
    pub observed: u64,
}

/// Counts the spans it receives.
#[derive(Clone, Default)]
struct Receiver(Arc<AtomicU64>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans: usize = request
            .get_ref()
            .resource_spans
            .iter()
            .flat_map(|resource| &resource.scope_spans)
            .map(|scope| scope.spans.len())
            .sum();
        self.0.fetch_add(spans as u64, Ordering::Relaxed);
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

/// Scrapes `GET /metrics` once a second on a thread until stopped.
struct Scraper {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
}

impl Scraper {
    fn start(addr: SocketAddr) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut scrapes = 0;
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(mut stream) = TcpStream::connect(addr) {
                    let _ = write!(stream, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
                    let mut body = Vec::new();
                    if stream.read_to_end(&mut body).is_ok() && body.starts_with(b"HTTP/1.1 200") {
                        scrapes += 1;
                    }
                }
                for _ in 0..10 {
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            scrapes
        });
        Scraper { stop, thread }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

/// Serves an OTLP trace receiver that counts spans on `listener` until the process ends
/// (`sepp-bench otlp-sink`, for measuring tracing under callgrind).
pub async fn sink(listener: tokio::net::TcpListener) -> Result<(), BenchError> {
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(Receiver::default()))
        .serve_with_incoming(incoming)
        .await
        .map_err(|error| BenchError::Unexpected(error.to_string()))
}

fn scenario(jobs: u64) -> Scenario {
    Scenario { name: "single/50".into(), connections: 50, jobs, enqueue_batch: 1, reserve_batch: 1, queue: None }
}

/// Runs the load `plan.rounds` times against each setting, rotating which goes first.
pub fn throughput(plan: &Plan, runtime: &Runtime) -> Result<Vec<Measured>, BenchError> {
    let spans = Receiver::default();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let receiver_addr = listener.local_addr()?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(spans.clone()))
            .serve_with_incoming(incoming),
    );
    let mut measured = Vec::new();
    for round in 0..plan.rounds {
        let mut order = Setting::ALL;
        order.rotate_left(round % Setting::ALL.len());
        for setting in order {
            let extra = match setting {
                Setting::Off => String::new(),
                Setting::Metrics => {
                    "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n".to_owned()
                }
                Setting::Tracing => format!(
                    "[tracing]\nenabled = true\notlp_endpoint = \"http://{receiver_addr}\"\nsample_ratio = 1.0\n"
                ),
            };
            let program = Program::SeppWith { binary: plan.binary.clone(), persist_mode: plan.persist_mode, extra };
            let mut server = ServerProcess::start(&program)?;
            let scraper = match setting {
                Setting::Metrics => {
                    let addr = server
                        .logged_addr("prometheus metrics endpoint listening")
                        .ok_or_else(|| BenchError::Server("no prometheus endpoint line".into()))?;
                    Some(Scraper::start(addr))
                }
                _ => None,
            };
            let spans_before = spans.0.load(Ordering::Relaxed);
            let run = compare::throughput_at(
                runtime,
                server.addr(),
                Some(&server),
                &scenario(plan.jobs),
                round,
                LoadClient::Ours,
            )?;
            server.stop()?;
            let observed = match scraper {
                Some(scraper) => scraper.finish(),
                None => spans.0.load(Ordering::Relaxed) - spans_before,
            };
            eprintln!(
                "round {round} {:<22} enqueue {:>8.0} jobs/s  drain {:>8.0} jobs/s  server cpu {:>6.1} us/job  observed {observed}",
                setting.name(),
                run.enqueue_jobs_per_second(),
                run.drain_jobs_per_second(),
                run.cpu_us_per_job().unwrap_or(0.0),
            );
            measured.push(Measured { setting, run, observed });
        }
    }
    Ok(measured)
}

/// The median of `figure` over the rounds of `setting`.
pub fn median(measured: &[Measured], setting: Setting, figure: impl Fn(&ThroughputRun) -> f64) -> f64 {
    let mut values: Vec<f64> = measured.iter().filter(|m| m.setting == setting).map(|m| figure(&m.run)).collect();
    values.sort_by(f64::total_cmp);
    if values.is_empty() { f64::NAN } else { values[values.len() / 2] }
}
