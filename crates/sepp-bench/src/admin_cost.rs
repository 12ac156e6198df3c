//! What the admin listener costs: the same load (single-job enqueue, then drain, on 50
//! connections) against a fresh server with the admin listener off, and on with five SSE
//! subscribers reading its live stats the whole time, alternating in rounds; then how long one
//! listing call takes over a large backlog, and how much memory the stats history takes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::BenchError;
use crate::client::LoadClient;
use crate::compare;
use crate::phases;
use crate::results::{Scenario, ThroughputRun};
use crate::server::{PersistMode, Program, ServerProcess};

/// SSE subscribers connected while the admin listener is measured.
pub const SUBSCRIBERS: usize = 5;

/// What to measure.
pub struct Plan {
    pub binary: std::path::PathBuf,
    pub persist_mode: PersistMode,
    pub rounds: usize,
    pub jobs: u64,
    /// Ready jobs behind the listing measurement; 0 skips it.
    pub backlog_jobs: u64,
    /// Listing calls timed.
    pub listing_calls: usize,
}

/// One SSE subscriber: a thread that reads `/admin/api/v1/events` until stopped.
struct Subscriber {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
}

impl Subscriber {
    fn connect(admin: SocketAddr) -> Result<Subscriber, BenchError> {
        let mut stream = TcpStream::connect(admin)?;
        write!(stream, "GET /admin/api/v1/events HTTP/1.1\r\nHost: {admin}\r\nAccept: text/event-stream\r\n\r\n")?;
        stream.set_read_timeout(Some(Duration::from_millis(100)))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut received = 0u64;
            let mut buffer = [0u8; 16 << 10];
            while !stopped.load(Ordering::Relaxed) {
                match stream.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(read) => received += read as u64,
                    Err(error)
                        if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break,
                }
            }
            received
        });
        Ok(Subscriber { stop, thread })
    }

    /// Stops reading; returns the bytes received.
    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

/// One round of the load against one configuration.
pub struct Measured {
    pub admin: bool,
    pub run: ThroughputRun,
    /// Bytes the subscribers received (0 with the admin listener off).
    pub sse_bytes: u64,
}

fn scenario(jobs: u64) -> Scenario {
    Scenario { name: "single/50".into(), connections: 50, jobs, enqueue_batch: 1, reserve_batch: 1, queue: None }
}

/// Runs the load `plan.rounds` times against each configuration, alternating which goes first.
pub fn throughput(plan: &Plan, runtime: &Runtime) -> Result<Vec<Measured>, BenchError> {
    let mut measured = Vec::new();
    for round in 0..plan.rounds {
        let order = if round % 2 == 0 { [false, true] } else { [true, false] };
        for admin in order {
            let program = if admin {
                Program::SeppWithAdmin { binary: plan.binary.clone(), persist_mode: plan.persist_mode }
            } else {
                Program::Sepp { binary: plan.binary.clone(), persist_mode: plan.persist_mode }
            };
            let mut server = ServerProcess::start(&program)?;
            let subscribers = match admin {
                true => {
                    let addr =
                        server.admin_addr().ok_or_else(|| BenchError::Server("no admin listener line".into()))?;
                    (0..SUBSCRIBERS).map(|_| Subscriber::connect(addr)).collect::<Result<Vec<_>, _>>()?
                }
                false => Vec::new(),
            };
            let run = compare::throughput_at(
                runtime,
                server.addr(),
                Some(&server),
                &scenario(plan.jobs),
                round,
                LoadClient::Ours,
            )?;
            let sse_bytes = subscribers.into_iter().map(Subscriber::finish).sum();
            server.stop()?;
            eprintln!(
                "round {round} admin {:<3} enqueue {:>8.0} jobs/s  drain {:>8.0} jobs/s  server cpu {:>6.1} us/job  sse {sse_bytes} bytes",
                if admin { "on" } else { "off" },
                run.enqueue_jobs_per_second(),
                run.drain_jobs_per_second(),
                run.cpu_us_per_job().unwrap_or(0.0),
            );
            measured.push(Measured { admin, run, sse_bytes });
        }
    }
    Ok(measured)
}

/// Timings of one kind of listing call, in milliseconds.
pub struct ListingTimes {
    pub name: String,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

fn summarize(name: &str, mut times: Vec<Duration>) -> ListingTimes {
    times.sort();
    let at = |fraction: f64| times[((times.len() - 1) as f64 * fraction).round() as usize].as_secs_f64() * 1000.0;
    ListingTimes { name: name.to_owned(), p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) }
}

/// One keep-alive HTTP/1.1 connection to the admin listener.
struct Http {
    reader: BufReader<TcpStream>,
    addr: SocketAddr,
}

impl Http {
    fn connect(addr: SocketAddr) -> Result<Http, BenchError> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Http { reader: BufReader::new(stream), addr })
    }

    /// GETs `path` and returns the status and body.
    fn get(&mut self, path: &str) -> Result<(u16, Vec<u8>), BenchError> {
        write!(self.reader.get_mut(), "GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr)?;
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line)?;
        let status = status_line.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok((status, body))
    }

    fn time(&mut self, path: &str, calls: usize) -> Result<Vec<Duration>, BenchError> {
        (0..calls)
            .map(|_| {
                let started = Instant::now();
                let (status, body) = self.get(path)?;
                let elapsed = started.elapsed();
                if status != 200 {
                    return Err(BenchError::Unexpected(format!(
                        "{path}: HTTP {status}: {}",
                        String::from_utf8_lossy(&body)
                    )));
                }
                Ok(elapsed)
            })
            .collect()
    }
}

/// Fills a fresh admin-enabled server with `plan.backlog_jobs` ready jobs and times listing
/// calls (each a query command on the committer) against it.
pub fn listings(plan: &Plan, runtime: &Runtime) -> Result<Vec<ListingTimes>, BenchError> {
    let program = Program::SeppWithAdmin { binary: plan.binary.clone(), persist_mode: PersistMode::Buffer };
    let server = ServerProcess::start(&program)?;
    let admin = server.admin_addr().ok_or_else(|| BenchError::Server("no admin listener line".into()))?;
    let connections = runtime.block_on(phases::connect_all(server.addr(), 8, LoadClient::Ours))?;
    let filled = Instant::now();
    runtime.block_on(phases::enqueue(&connections, "backlog", plan.backlog_jobs, 256))?;
    eprintln!("listing: {} ready jobs enqueued in {:.1} s", plan.backlog_jobs, filled.elapsed().as_secs_f64());
    let mut http = Http::connect(admin)?;
    let calls = plan.listing_calls;
    let mut times = vec![
        summarize("ready, first page of 50", http.time("/admin/api/v1/queues/backlog/jobs?state=ready", calls)?),
        summarize(
            "ready, first page of 100",
            http.time("/admin/api/v1/queues/backlog/jobs?state=ready&limit=100", calls)?,
        ),
        summarize("one job by id (GET /jobs/{id})", {
            let (_, body) = http.get("/admin/api/v1/queues/backlog/jobs?state=ready&limit=1")?;
            let page: serde_json::Value =
                serde_json::from_slice(&body).map_err(|error| BenchError::Unexpected(error.to_string()))?;
            let id = page["jobs"][0]["id"].as_str().unwrap_or_default().to_owned();
            http.time(&format!("/admin/api/v1/jobs/{id}"), calls)?
        }),
    ];
    times.push(summarize(
        "a filter matching nothing (10,000 entries examined)",
        http.time("/admin/api/v1/queues/backlog/jobs?state=ready&job_type=none", calls)?,
    ));
    drop(server);
    Ok(times)
}

/// The heap the stats history takes with `queues` queues and `seconds` samples each (under the
/// default 16 MiB budget, which an hour of 100 queues stays within).
pub fn history_bytes(queues: usize, seconds: usize) -> usize {
    use sepp_server::admin::history::{History, QueueRates};
    let rates: Vec<QueueRates> = (0..queues)
        .map(|n| QueueRates {
            name: Arc::from(format!("queue-{n:03}").as_str()),
            rates: [1234.56, 1234.0, 1.5, 0.25],
            score: 1.0,
        })
        .collect();
    let mut history = History::default();
    for tick in 0..seconds {
        history.push(tick as i64 * 1000, &rates, seconds, 16 << 20);
    }
    history.heap_bytes()
}
