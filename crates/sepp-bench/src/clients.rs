//! The client libraries side by side: one server, and each library's benchmark program run in
//! turn through the same phases (`sepp-bench clients`).
//!
//! Every library ships a small program with one interface (`--addr --phase --jobs --concurrency
//! [--batch] [--queue] [--payload-bytes]`, printing one JSON line with the phase's wall time
//! and its own CPU time), so the harness measures them all alike and only the library differs.
//! The Rust program is this binary's `client-bench` subcommand ([`run_rust_phase`]); the others
//! live beside their libraries (`clients/typescript/bench`, `clients/python/bench`). The server's
//! CPU per job is sampled around each phase too.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::BenchError;
use crate::client::{Connection, LoadClient, PAYLOAD_BYTES};
use crate::procfs;
use crate::report::median;
use crate::server::ServerProcess;

/// The phases every client program runs, with their concurrency: single-job enqueues from 16
/// tasks, batches of 64 from 16 tasks, and a Worker draining with 32 jobs in flight; then the
/// shared/50 shape of `sepp-bench peers`: single-job enqueues from 50 tasks and a Worker with 50
/// in flight. Every program shares one client between its tasks.
pub const PHASES: [(&str, usize); 5] =
    [("enqueue-single", 16), ("enqueue-batch", 16), ("drain", 32), ("enqueue-single", 50), ("drain", 50)];

/// A phase's name in the tables and in `--phases`: `enqueue-single/16`.
pub fn phase_label(phase: &str, concurrency: usize) -> String {
    format!("{phase}/{concurrency}")
}
pub const BATCH: u32 = 64;

/// A client library's benchmark program: a name for the tables and the command that runs it
/// (the phase arguments are appended).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientProgram {
    pub name: String,
    pub command: Vec<String>,
}

impl ClientProgram {
    /// `name=command words...`.
    pub fn parse(spec: &str) -> Option<ClientProgram> {
        let (name, command) = spec.split_once('=')?;
        let command: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        (!name.is_empty() && !command.is_empty()).then(|| ClientProgram { name: name.to_string(), command })
    }
}

/// What a client program prints for one phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProgramReport {
    pub client: String,
    pub client_version: String,
    pub phase: String,
    pub jobs: u64,
    pub seconds: f64,
    pub cpu_seconds: f64,
}

/// One phase of one client in one round.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientRun {
    pub client: String,
    pub round: usize,
    /// Tasks or jobs in flight (0 in results written before it was recorded).
    #[serde(default)]
    pub concurrency: usize,
    pub report: ProgramReport,
    /// Server CPU over the whole program run (start-up included, so a little above the phase's).
    pub server_cpu_seconds: Option<f64>,
}

impl ClientRun {
    pub fn jobs_per_second(&self) -> f64 {
        self.report.jobs as f64 / self.report.seconds.max(1e-9)
    }

    pub fn client_cpu_us_per_job(&self) -> f64 {
        self.report.cpu_seconds * 1e6 / self.report.jobs.max(1) as f64
    }

    pub fn server_cpu_us_per_job(&self) -> Option<f64> {
        Some(self.server_cpu_seconds? * 1e6 / self.report.jobs.max(1) as f64)
    }
}

/// Everything `sepp-bench clients` measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ClientResults {
    pub machine: Option<crate::results::Machine>,
    pub server: String,
    pub jobs: u64,
    pub rounds: usize,
    pub clients: Vec<ClientProgram>,
    pub runs: Vec<ClientRun>,
}

/// Runs every phase of every program against `server`, `rounds` times, rotating the programs'
/// order each round so that drifts of a shared machine fall on all of them alike.
pub fn run(
    runtime: &tokio::runtime::Runtime,
    server: &ServerProcess,
    programs: &[ClientProgram],
    phases: &[(&str, usize)],
    jobs: u64,
    rounds: usize,
) -> Result<ClientResults, BenchError> {
    let mut results = ClientResults {
        machine: Some(crate::results::Machine::current()),
        jobs,
        rounds,
        clients: programs.to_vec(),
        ..ClientResults::default()
    };
    let mut filler = runtime.block_on(Connection::connect(server.addr(), LoadClient::Ours))?;
    results.server = runtime.block_on(filler.server_info())?;
    for round in 0..rounds {
        let start = round % programs.len().max(1);
        for program in programs[start..].iter().chain(&programs[..start]) {
            for &(phase, concurrency) in phases {
                let queue = format!("clients-{}-{phase}-{concurrency}-{round}", program.name);
                if phase == "drain" {
                    runtime.block_on(fill(&mut filler, &queue, jobs))?;
                }
                let before = server.sample();
                let report = run_program(program, server.addr(), phase, jobs, concurrency, &queue)?;
                let after = server.sample();
                let server_cpu_seconds =
                    before.zip(after).map(|(before, after)| after.cpu_seconds - before.cpu_seconds);
                eprintln!(
                    "round {round} {:<16} {:<18} {:>9.0} jobs/s  client {:>7.1} us/job  server {:>6.1} us/job",
                    program.name,
                    phase_label(phase, concurrency),
                    report.jobs as f64 / report.seconds.max(1e-9),
                    report.cpu_seconds * 1e6 / report.jobs.max(1) as f64,
                    server_cpu_seconds.map_or(f64::NAN, |cpu| cpu * 1e6 / jobs.max(1) as f64),
                );
                results.runs.push(ClientRun {
                    client: program.name.clone(),
                    round,
                    concurrency,
                    report,
                    server_cpu_seconds,
                });
            }
        }
    }
    Ok(results)
}

/// Puts `jobs` jobs into `queue` for a drain phase, 256 a call.
async fn fill(connection: &mut Connection, queue: &str, jobs: u64) -> Result<(), BenchError> {
    let mut left = jobs;
    while left > 0 {
        let count = left.min(256);
        connection.enqueue(queue, count as usize).await?;
        left -= count;
    }
    Ok(())
}

/// Runs one phase of `program` and reads its report line.
fn run_program(
    program: &ClientProgram,
    addr: SocketAddr,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    queue: &str,
) -> Result<ProgramReport, BenchError> {
    let (binary, arguments) = program.command.split_first().expect("a parsed program has a command");
    let output = Command::new(binary)
        .args(arguments)
        .args(["--addr", &addr.to_string(), "--phase", phase, "--jobs", &jobs.to_string()])
        .args(["--concurrency", &concurrency.to_string(), "--batch", &BATCH.to_string(), "--queue", queue])
        .args(["--payload-bytes", &PAYLOAD_BYTES.to_string()])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| BenchError::Unexpected(format!("cannot run {}: {error}", program.command.join(" "))))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(BenchError::Unexpected(format!("{} {phase} failed ({}): {stdout}", program.name, output.status)));
    }
    let line = stdout.lines().rev().find(|line| line.trim_start().starts_with('{')).unwrap_or_default();
    serde_json::from_str(line).map_err(|error| {
        BenchError::Unexpected(format!("{} {phase}: unreadable report {line:?}: {error}", program.name))
    })
}

/// The Rust client's side of the program interface: one `sepp-client` connection shared by
/// `concurrency` tasks (as an application shares one client), or its Worker for the drain.
pub async fn run_rust_phase(
    addr: SocketAddr,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    batch: u32,
    queue: &str,
) -> Result<ProgramReport, BenchError> {
    let client = connect_rust(addr).await?;
    let cpu_before = procfs::sample(std::process::id()).map_or(0.0, |sample| sample.cpu_seconds);
    let started = Instant::now();
    run_shared_phase(&client, phase, jobs, concurrency, batch, queue).await?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = procfs::sample(std::process::id()).map_or(0.0, |sample| sample.cpu_seconds) - cpu_before;
    Ok(ProgramReport {
        client: "sepp-client".into(),
        client_version: env!("CARGO_PKG_VERSION").into(),
        phase: phase.into(),
        jobs,
        seconds,
        cpu_seconds,
    })
}

/// One `sepp-client` client for a phase of [`run_shared_phase`].
pub async fn connect_rust(addr: SocketAddr) -> Result<sepp_client::client::SeppClient, BenchError> {
    sepp_client::client::SeppClient::builder(format!("http://{addr}"))
        .connect()
        .await
        .map_err(|error| BenchError::Unexpected(format!("connect: {error}")))
}

/// One phase through one shared `sepp-client` client, through its public calls only:
/// enqueue-single is `concurrency` tasks each awaiting `SeppClient::enqueue` of one job at a
/// time (whatever the client does with concurrent calls, coalescing included, shows here),
/// enqueue-batch the same with `enqueue_batch` of `batch` jobs, and drain the crate's Worker with
/// `concurrency` jobs in flight until `jobs` jobs were handled and acknowledged.
pub async fn run_shared_phase(
    client: &sepp_client::client::SeppClient,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    batch: u32,
    queue: &str,
) -> Result<(), BenchError> {
    let payload = sepp_client::Payload::new(vec![b'x'; PAYLOAD_BYTES], "application/octet-stream");
    match phase {
        "enqueue-single" | "enqueue-batch" => {
            let per_call = if phase == "enqueue-single" { 1 } else { u64::from(batch.max(1)) };
            let tickets = Arc::new(AtomicU64::new(0));
            let tasks: Vec<_> = (0..concurrency.max(1))
                .map(|_| {
                    let (client, payload, tickets, queue) =
                        (client.clone(), payload.clone(), tickets.clone(), queue.to_string());
                    tokio::spawn(async move {
                        loop {
                            let first = tickets.fetch_add(per_call, Ordering::Relaxed);
                            if first >= jobs {
                                return Ok::<_, BenchError>(());
                            }
                            let count = per_call.min(jobs - first);
                            if per_call == 1 {
                                let request = sepp_client::EnqueueRequest::new(&queue, "bench")
                                    .map_err(|error| BenchError::Unexpected(error.to_string()))?
                                    .with_payload(payload.clone());
                                client
                                    .enqueue(request)
                                    .await
                                    .map_err(|error| BenchError::Unexpected(format!("enqueue: {error}")))?;
                                continue;
                            }
                            let requests = (0..count)
                                .map(|_| {
                                    sepp_client::EnqueueRequest::new(&queue, "bench")
                                        .map(|request| request.with_payload(payload.clone()))
                                })
                                .collect::<Result<Vec<_>, _>>()
                                .map_err(|error| BenchError::Unexpected(error.to_string()))?;
                            let results = client
                                .enqueue_batch(requests)
                                .await
                                .map_err(|error| BenchError::Unexpected(format!("enqueue: {error}")))?;
                            if results.iter().any(Result::is_err) {
                                return Err(BenchError::Unexpected("a job was rejected".into()));
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.map_err(|error| BenchError::Unexpected(error.to_string()))??;
            }
        }
        "drain" => {
            let handled = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(std::sync::OnceLock::<sepp_client::worker::ShutdownHandle>::new());
            let (counter, stopper) = (handled.clone(), stop.clone());
            let worker = sepp_client::worker::Worker::new(client.clone(), [queue.to_string()], Duration::from_secs(60))
                .map_err(|error| BenchError::Unexpected(error.to_string()))?
                .with_max_in_flight(concurrency.max(1))
                // SEPP_BENCH_WORKER_STREAMING=0 keeps the Worker on Reserve and Ack calls, to
                // compare it with the Consume stream it uses by default.
                .with_streaming(std::env::var("SEPP_BENCH_WORKER_STREAMING").as_deref() != Ok("0"))
                .handle("bench", move |_payload, _ctx| {
                    // The last job stops the Worker, which then finishes (acks) what it holds.
                    if counter.fetch_add(1, Ordering::Relaxed) + 1 == jobs
                        && let Some(stop) = stopper.get()
                    {
                        stop.shutdown();
                    }
                    async { Ok(()) }
                })
                .map_err(|error| BenchError::Unexpected(error.to_string()))?;
            let _ = stop.set(worker.shutdown_handle());
            worker.run().await;
            if handled.load(Ordering::Relaxed) < jobs {
                return Err(BenchError::Unexpected("the worker stopped before every job was handled".into()));
            }
        }
        other => return Err(BenchError::Unexpected(format!("unknown phase {other}"))),
    }
    Ok(())
}

/// The tables of a clients run: per phase, each client's median jobs/s, its CPU per job and the
/// server's, and the ratio of each client's rate to the first client's of each language group
/// that has a baseline (`python` against `sepp-py-0.1.0`).
pub fn markdown(results: &ClientResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Client libraries ({} jobs per phase, {} round(s), server {})\n",
        results.jobs, results.rounds, results.server
    );
    let _ = writeln!(out, "| phase | client | version | jobs/s | client CPU µs/job | server CPU µs/job |");
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|");
    let mut phases: Vec<(String, usize)> = Vec::new();
    for run in &results.runs {
        if !phases.contains(&(run.report.phase.clone(), run.concurrency)) {
            phases.push((run.report.phase.clone(), run.concurrency));
        }
    }
    for (phase, concurrency) in &phases {
        for program in &results.clients {
            let runs: Vec<&ClientRun> = results
                .runs
                .iter()
                .filter(|run| {
                    run.client == program.name && &run.report.phase == phase && run.concurrency == *concurrency
                })
                .collect();
            let Some(first) = runs.first() else { continue };
            let rate = median(runs.iter().map(|run| run.jobs_per_second()).collect());
            let client_cpu = median(runs.iter().map(|run| run.client_cpu_us_per_job()).collect());
            let server_cpu = median(runs.iter().filter_map(|run| run.server_cpu_us_per_job()).collect());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                if *concurrency == 0 { phase.clone() } else { phase_label(phase, *concurrency) },
                program.name,
                first.report.client_version,
                crate::report::rate(rate),
                client_cpu.map_or("-".into(), |value| format!("{value:.1}")),
                server_cpu.map_or("-".into(), |value| format!("{value:.1}")),
            );
        }
    }
    out.push('\n');
    out
}

/// Median over rounds of `numerator`'s rate divided by `denominator`'s, within each round, in
/// the phase at `concurrency`.
pub fn ratio(
    results: &ClientResults,
    phase: &str,
    concurrency: usize,
    numerator: &str,
    denominator: &str,
) -> Option<f64> {
    let rate = |client: &str, round: usize| {
        results
            .runs
            .iter()
            .find(|run| {
                run.client == client
                    && run.round == round
                    && run.report.phase == phase
                    && run.concurrency == concurrency
            })
            .map(ClientRun::jobs_per_second)
    };
    median((0..results.rounds).filter_map(|round| Some(rate(numerator, round)? / rate(denominator, round)?)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_spec_is_a_name_and_a_command() {
        let program = ClientProgram::parse("typescript=node clients/typescript/build/bench.js").unwrap();
        assert_eq!(program.name, "typescript");
        assert_eq!(program.command, ["node", "clients/typescript/build/bench.js"]);
        assert!(ClientProgram::parse("no-command=").is_none());
        assert!(ClientProgram::parse("=node x").is_none());
    }

    #[test]
    fn a_report_line_is_the_documented_json() {
        let line = r#"{"client":"sepp-js","client_version":"0.2.0","phase":"drain","jobs":20000,"seconds":1.5,"cpu_seconds":0.75}"#;
        let report: ProgramReport = serde_json::from_str(line).unwrap();
        let run = ClientRun { client: "ts".into(), round: 0, concurrency: 32, report, server_cpu_seconds: Some(1.0) };
        assert_eq!(run.jobs_per_second().round(), 13_333.0);
        assert_eq!(run.client_cpu_us_per_job(), 37.5);
        assert_eq!(run.server_cpu_us_per_job(), Some(50.0));
    }
}
