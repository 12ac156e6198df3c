//! Side by side in one run: every scenario against every target, alternating, then latency and
//! the large-backlog scenario.
//!
//! Each measurement gets a freshly started server with an empty data directory (a cluster
//! target: a fresh cluster, see [`crate::cluster`]), and the order of the targets rotates from
//! round to round, so slow drifts of a shared, noisy machine fall on every target alike. Ratios
//! are later taken within a round, never across runs.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::BenchError;
use crate::ceiling::CEILING_VERSION;
use crate::client::{Connection, LoadClient};
use crate::cluster::{Cluster, DEFAULT_TIMINGS, NodeSetup};
use crate::phases;
use crate::procfs;
use crate::results::{BacklogRun, LatencyRun, Results, Scenario, ThroughputRun};
use crate::server::{PersistMode, Program, Sampled, ServerProcess};

/// The family name of the three-node cluster targets (`cluster3 sync_all`, ...).
pub const CLUSTER3: &str = "cluster3";
/// The family name of the three-node cluster targets loaded at a follower, which forwards the
/// calls to the leader (`cluster3-follower sync_all`, ...).
pub const CLUSTER3_FOLLOWER: &str = "cluster3-follower";

/// A server to measure and the client library that loads it, by name (`ours sync_all`,
/// `0.1.1 buffer`, `cluster3 sync_all`, `ceiling`; with the sepp-rs client
/// `ours sync_all via sepp-rs`, ...).
#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub program: Program,
    pub client: LoadClient,
    /// `Some(n)`: `n` nodes of the program (a [`Program::Sepp`]) made one cluster, loaded at
    /// its leader; `None`: one server.
    pub cluster_nodes: Option<u64>,
    /// A cluster loaded at a follower instead of the leader.
    pub via_follower: bool,
}

/// What a target's name says of the client that loads it: nothing for ours.
pub fn client_suffix(client: LoadClient) -> String {
    match client {
        LoadClient::Ours => String::new(),
        other => format!(" via {}", other.name()),
    }
}

impl Target {
    pub fn sepp(family: &str, binary: std::path::PathBuf, persist_mode: PersistMode, client: LoadClient) -> Target {
        Target {
            name: format!("{family} {}{}", persist_mode.name(), client_suffix(client)),
            program: Program::Sepp { binary, persist_mode },
            client,
            cluster_nodes: None,
            via_follower: false,
        }
    }

    /// Three nodes of our `binary` in `persist_mode`, made one cluster (`cluster3 sync_all`).
    pub fn cluster3(binary: std::path::PathBuf, persist_mode: PersistMode, client: LoadClient) -> Target {
        Target { cluster_nodes: Some(3), ..Target::sepp(CLUSTER3, binary, persist_mode, client) }
    }

    /// Three nodes of our `binary` in `persist_mode`, made one cluster and loaded at a follower,
    /// which forwards the calls (`cluster3-follower sync_all`); our client is then told not to
    /// follow the leader itself.
    pub fn cluster3_follower(binary: std::path::PathBuf, persist_mode: PersistMode, client: LoadClient) -> Target {
        let client = if client == LoadClient::Ours { LoadClient::OursForwarded } else { client };
        Target {
            cluster_nodes: Some(3),
            via_follower: true,
            ..Target::sepp(CLUSTER3_FOLLOWER, binary, persist_mode, client)
        }
    }

    pub fn ceiling(binary: std::path::PathBuf, client: LoadClient) -> Target {
        Target {
            name: format!("ceiling{}", client_suffix(client)),
            program: Program::Ceiling { binary },
            client,
            cluster_nodes: None,
            via_follower: false,
        }
    }

    fn is_sepp(&self) -> bool {
        matches!(self.program, Program::Sepp { .. })
    }

    fn is_sync_all(&self) -> bool {
        matches!(self.program, Program::Sepp { persist_mode: PersistMode::SyncAll, .. })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    pub targets: Vec<Target>,
    pub scenarios: Vec<Scenario>,
    pub rounds: usize,
    /// Round trips of the latency phase (after a short warm-up); 0 skips it.
    pub latency_rounds: usize,
    /// Jobs of the large-backlog scenario; 0 skips it.
    pub backlog_jobs: u64,
    /// Jobs drained after the backlog restart (at most `backlog_jobs`).
    pub backlog_drain_jobs: u64,
    /// Jobs passed through the loaded backlog before the restart; 0 skips that phase.
    pub backlog_churn_jobs: u64,
}

/// The standard scenarios for `jobs` jobs: the single-job connection sweep (1, 8, 50, 256) and
/// the batch variants on 8 connections (16, 64, 256 jobs per enqueue and per reserve). Fewer
/// connections get fewer jobs: under `sync_all` they wait on one fsync per call.
pub fn standard_scenarios(jobs: u64) -> Vec<Scenario> {
    let scenario = |name: &str, connections: usize, jobs: u64, batch: u32| Scenario {
        name: name.to_string(),
        connections,
        jobs: jobs.max(1),
        enqueue_batch: batch,
        reserve_batch: batch,
        queue: None,
    };
    vec![
        scenario("single/1", 1, jobs / 10, 1),
        scenario("single/8", 8, jobs / 4, 1),
        scenario("single/50", 50, jobs, 1),
        scenario("single/256", 256, jobs, 1),
        // Batch enqueues are so fast that fewer jobs would be over before the servers warm up.
        scenario("batch16/8", 8, jobs * 2, 16),
        scenario("batch64/8", 8, jobs * 2, 64),
        scenario("batch256/8", 8, jobs * 2, 256),
    ]
}

/// Runs the whole plan, printing progress to stderr.
pub fn run(plan: &Plan, runtime: &Runtime) -> Result<Results, BenchError> {
    let mut results = Results {
        machine: crate::results::Machine::current(),
        targets: plan.targets.iter().map(|target| target.name.clone()).collect(),
        rounds: plan.rounds,
        ..Results::default()
    };
    for scenario in &plan.scenarios {
        for round in 0..plan.rounds {
            for target in rotated(&plan.targets, round) {
                let what = format!("{} round {round}", scenario.name);
                let run =
                    attempts(target, &what, &mut results.repeated, || throughput(runtime, target, scenario, round))?;
                eprintln!(
                    "{:<11} round {round} {:<15} enqueue {:>9.0} jobs/s  drain {:>9.0} jobs/s  cpu {:>7.1} us/job",
                    scenario.name,
                    target.name,
                    run.enqueue_jobs_per_second(),
                    run.drain_jobs_per_second(),
                    run.cpu_us_per_job().unwrap_or(f64::NAN),
                );
                results.throughput.push(run);
            }
        }
    }
    if plan.latency_rounds > 0 {
        for round in 0..plan.rounds {
            for target in rotated(&plan.targets, round) {
                let what = format!("latency round {round}");
                let measure = || latency(runtime, target, plan.latency_rounds, round);
                let run = attempts(target, &what, &mut results.repeated, measure)?;
                eprintln!(
                    "latency     round {round} {:<15} p50 {:>8.0} us  p99 {:>8.0} us  p999 {:>8.0} us",
                    target.name, run.p50_us, run.p99_us, run.p999_us
                );
                results.latency.push(run);
            }
        }
    }
    if plan.backlog_jobs > 0 {
        // The backlog measures the server's memory and restart, which no client changes. It
        // skips the cluster targets: it restarts one server (`failover` restarts cluster nodes).
        let single = |target: &&Target| target.cluster_nodes.is_none();
        for target in plan
            .targets
            .iter()
            .filter(single)
            .filter(|target| target.is_sync_all() && target.client == LoadClient::Ours)
        {
            let run = backlog(runtime, target, plan.backlog_jobs, plan.backlog_churn_jobs, plan.backlog_drain_jobs)?;
            eprintln!(
                "backlog     {:<15} rss {:>5} MB  disk {:>5} MB  restart {:>6.2} s  drain {:>8.0} jobs/s",
                target.name,
                run.rss_bytes.unwrap_or(0) / 1_000_000,
                run.data_dir_bytes.unwrap_or(0) / 1_000_000,
                run.restart_seconds,
                run.drained_jobs as f64 / run.drain_seconds.max(1e-9),
            );
            results.backlog.push(run);
        }
    }
    Ok(results)
}

/// How many times a cluster target's measurement is attempted: an election in the middle of
/// one (a follower that missed heartbeats on a busy machine) fails its calls, and it is then
/// repeated on a fresh cluster. A single server gets one attempt.
const CLUSTER_ATTEMPTS: usize = 3;

/// Runs `measure` (the measurement `what` of `target`) until it succeeds, at most
/// [`CLUSTER_ATTEMPTS`] times for a cluster target; each failure repeated is noted in
/// `repeated`.
fn attempts<T>(
    target: &Target,
    what: &str,
    repeated: &mut Vec<String>,
    mut measure: impl FnMut() -> Result<T, BenchError>,
) -> Result<T, BenchError> {
    let allowed = if target.cluster_nodes.is_some() { CLUSTER_ATTEMPTS } else { 1 };
    let mut attempt = 1;
    loop {
        match measure() {
            Err(error) if attempt < allowed => {
                let note = format!("{}, {what}: {error}", target.name);
                eprintln!("repeating on a fresh cluster: {note}");
                repeated.push(note);
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// The targets in round-robin order, starting at a different one each round.
fn rotated(targets: &[Target], round: usize) -> impl Iterator<Item = &Target> {
    let start = if targets.is_empty() { 0 } else { round % targets.len() };
    targets[start..].iter().chain(&targets[..start])
}

/// A queue name that no other measurement uses, even against a long-running server.
fn queue_name(label: &str, round: usize) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos());
    format!("bench-{}-{round}-{nanos}", label.replace('/', "-"))
}

fn client_cpu_seconds() -> f64 {
    procfs::sample(std::process::id()).map_or(0.0, |sample| sample.cpu_seconds)
}

/// Starts a fresh server (or cluster) for `target` and runs `scenario` on it: enqueue, then
/// drain.
pub fn throughput(
    runtime: &Runtime,
    target: &Target,
    scenario: &Scenario,
    round: usize,
) -> Result<ThroughputRun, BenchError> {
    if let Some(nodes) = target.cluster_nodes {
        return cluster_throughput(runtime, target, nodes, scenario, round);
    }
    let mut server = ServerProcess::start(&target.program)?;
    let mut run = throughput_at(runtime, server.addr(), Some(&server), scenario, round, target.client)?;
    run.target = target.name.clone();
    server.stop()?;
    Ok(run)
}

/// Starts a fresh cluster of `nodes` for `target` and runs `scenario` at its leader, sampling
/// every node (see [`Cluster`]'s [`Sampled`]: CPU summed over the nodes, the largest node's peak
/// RSS, the leader's data directory).
fn cluster_throughput(
    runtime: &Runtime,
    target: &Target,
    nodes: u64,
    scenario: &Scenario,
    round: usize,
) -> Result<ThroughputRun, BenchError> {
    let mut cluster = start_cluster(runtime, target, nodes)?;
    let addr = if target.via_follower { cluster.follower_addr() } else { cluster.leader_addr() };
    let mut run = throughput_of(runtime, addr, Some(&cluster as &dyn Sampled), scenario, round, target.client)?;
    run.target = target.name.clone();
    cluster.stop()?;
    Ok(run)
}

/// Starts the cluster of a cluster target and waits until its leader serves.
fn start_cluster(runtime: &Runtime, target: &Target, nodes: u64) -> Result<Cluster, BenchError> {
    let Program::Sepp { binary, persist_mode } = &target.program else {
        return Err(BenchError::Unexpected(format!("{}: only sepp servers run as a cluster", target.name)));
    };
    let setup = NodeSetup {
        binary: binary.clone(),
        persist_mode: *persist_mode,
        timings: DEFAULT_TIMINGS,
        snapshot_after_entries: None,
    };
    let mut cluster = Cluster::start(&setup, nodes)?;
    runtime.block_on(cluster.wait_for_leader(&queue_name("leader-probe", 0)))?;
    Ok(cluster)
}

/// Runs `scenario` against a server at `addr`, sampling `server` when the harness started it.
pub fn throughput_at(
    runtime: &Runtime,
    addr: SocketAddr,
    server: Option<&ServerProcess>,
    scenario: &Scenario,
    round: usize,
    client: LoadClient,
) -> Result<ThroughputRun, BenchError> {
    throughput_of(runtime, addr, server.map(|server| server as &dyn Sampled), scenario, round, client)
}

/// Runs `scenario` against a server at `addr`, sampling `server` (one process or a cluster)
/// when the harness started it.
fn throughput_of(
    runtime: &Runtime,
    addr: SocketAddr,
    server: Option<&dyn Sampled>,
    scenario: &Scenario,
    round: usize,
    client: LoadClient,
) -> Result<ThroughputRun, BenchError> {
    let queue = scenario.queue.clone().unwrap_or_else(|| queue_name(&scenario.name, round));
    let connections = runtime.block_on(phases::connect_all(addr, scenario.connections, client))?;
    let version = runtime.block_on(connections[0].clone().server_info())?;
    let sample = || server.and_then(Sampled::sample);
    let leader_sample = || server.and_then(Sampled::leader_sample);
    let client_before = client_cpu_seconds();
    let leader_before = leader_sample();
    let before = sample();
    let enqueued = runtime.block_on(phases::enqueue(&connections, &queue, scenario.jobs, scenario.enqueue_batch))?;
    let between = sample();
    let data_dir_bytes = server.and_then(Sampled::data_dir_bytes);
    let drained = runtime.block_on(phases::drain(&connections, &queue, scenario.jobs, scenario.reserve_batch))?;
    let after = sample();
    let leader_after = leader_sample();
    let client_cpu_seconds = client_cpu_seconds() - client_before;
    // The ceiling never runs out of jobs; every real server must be empty now.
    if version != CEILING_VERSION {
        runtime.block_on(phases::expect_empty(&connections[0], &queue))?;
    }
    let cpu = |from: Option<procfs::ProcessSample>, to: Option<procfs::ProcessSample>| {
        Some(to?.cpu_seconds - from?.cpu_seconds)
    };
    Ok(ThroughputRun {
        scenario: scenario.clone(),
        target: addr.to_string(),
        round,
        enqueue_seconds: enqueued.elapsed.as_secs_f64(),
        drain_seconds: drained.elapsed.as_secs_f64(),
        enqueue_server_cpu_seconds: cpu(before, between),
        drain_server_cpu_seconds: cpu(between, after),
        leader_server_cpu_seconds: cpu(leader_before, leader_after),
        client_cpu_seconds,
        peak_rss_bytes: after.map(|sample| sample.peak_rss_bytes),
        data_dir_bytes,
    })
}

/// Starts a fresh server (or cluster, loaded at its leader) for `target` and measures
/// sequential round trips on one connection.
pub fn latency(runtime: &Runtime, target: &Target, rounds: usize, round: usize) -> Result<LatencyRun, BenchError> {
    if let Some(nodes) = target.cluster_nodes {
        let mut cluster = start_cluster(runtime, target, nodes)?;
        let addr = if target.via_follower { cluster.follower_addr() } else { cluster.leader_addr() };
        let mut run = latency_at(runtime, addr, rounds, round, target.client)?;
        run.target = target.name.clone();
        cluster.stop()?;
        return Ok(run);
    }
    let mut server = ServerProcess::start(&target.program)?;
    let mut run = latency_at(runtime, server.addr(), rounds, round, target.client)?;
    run.target = target.name.clone();
    server.stop()?;
    Ok(run)
}

/// Measures `rounds` enqueue -> reserve -> ack round trips against `addr`, after a warm-up.
pub fn latency_at(
    runtime: &Runtime,
    addr: SocketAddr,
    rounds: usize,
    round: usize,
    client: LoadClient,
) -> Result<LatencyRun, BenchError> {
    let queue = queue_name("latency", round);
    let connection = runtime.block_on(Connection::connect(addr, client))?;
    runtime.block_on(phases::latency(&connection, &queue, 20.min(rounds)))?;
    let summary = runtime.block_on(phases::latency(&connection, &queue, rounds))?;
    Ok(LatencyRun {
        target: addr.to_string(),
        round,
        rounds_measured: summary.rounds,
        p50_us: summary.p50_us,
        p99_us: summary.p99_us,
        p999_us: summary.p999_us,
        max_us: summary.max_us,
    })
}

/// Connections and batch size that fill the backlog quickly.
const BACKLOG_FILL_CONNECTIONS: usize = 8;
const BACKLOG_FILL_BATCH: u32 = 256;
/// The drain after the restart is the single/50 worker pattern: reserve(1), then ack.
const BACKLOG_DRAIN_CONNECTIONS: usize = 50;

/// Fills a fresh server with `jobs` jobs, measures memory and disk, passes `churn_jobs` more
/// through it while it holds them, restarts it with SIGTERM, times how long until its port
/// serves again, then drains `drain_jobs` of the backlog.
pub fn backlog(
    runtime: &Runtime,
    target: &Target,
    jobs: u64,
    churn_jobs: u64,
    drain_jobs: u64,
) -> Result<BacklogRun, BenchError> {
    assert!(target.is_sepp(), "the backlog scenario needs a sepp server");
    let mut server = ServerProcess::start(&target.program)?;
    let queue = queue_name("backlog", 0);
    let connections = runtime.block_on(phases::connect_all(server.addr(), BACKLOG_FILL_CONNECTIONS, target.client))?;
    let filled = runtime.block_on(phases::enqueue(&connections, &queue, jobs, BACKLOG_FILL_BATCH))?;
    // Let background work that follows a burst (flushes, compactions) settle before sampling.
    std::thread::sleep(Duration::from_secs(1));
    let loaded = server.sample();
    let data_dir_bytes = server.data_dir_bytes();
    let churned =
        (churn_jobs > 0).then(|| churn(runtime, &server, &connections, churn_jobs, target.client)).transpose()?;
    drop(connections);
    let data_dir_after_churn_bytes = churned.as_ref().and_then(|_| server.data_dir_bytes());
    let stop_started = std::time::Instant::now();
    let restart_seconds = server
        .restart(|addr| {
            runtime.block_on(async {
                let attempt = async { Connection::connect(addr, target.client).await?.server_info().await };
                matches!(tokio::time::timeout(Duration::from_secs(1), attempt).await, Ok(Ok(_)))
            })
        })?
        .as_secs_f64();
    let stop_seconds = (stop_started.elapsed().as_secs_f64() - restart_seconds).max(0.0);
    let restarted = server.sample();
    let drain_jobs = drain_jobs.min(jobs);
    let connections = runtime.block_on(phases::connect_all(server.addr(), BACKLOG_DRAIN_CONNECTIONS, target.client))?;
    let drained = runtime.block_on(phases::drain(&connections, &queue, drain_jobs, 1))?;
    if drain_jobs == jobs {
        runtime.block_on(phases::expect_empty(&connections[0], &queue))?;
    }
    drop(connections);
    std::thread::sleep(Duration::from_secs(1));
    let data_dir_after_drain_bytes = server.data_dir_bytes();
    server.stop()?;
    Ok(BacklogRun {
        target: target.name.clone(),
        jobs,
        enqueue_seconds: filled.elapsed.as_secs_f64(),
        rss_bytes: loaded.map(|sample| sample.rss_bytes),
        peak_rss_bytes: loaded.map(|sample| sample.peak_rss_bytes),
        data_dir_bytes,
        stop_seconds,
        restart_seconds,
        rss_after_restart_bytes: restarted.map(|sample| sample.rss_bytes),
        drained_jobs: drain_jobs,
        drain_seconds: drained.elapsed.as_secs_f64(),
        drain_connections: BACKLOG_DRAIN_CONNECTIONS,
        data_dir_after_drain_bytes,
        churn_jobs: churned.as_ref().map_or(0, |churned| churned.churn.timing.jobs),
        churn_seconds: churned.as_ref().map_or(0.0, |churned| churned.churn.timing.elapsed.as_secs_f64()),
        churn_peak_rss_bytes: churned.as_ref().and_then(|churned| churned.peak_rss_bytes),
        churn_slowest_round_trip_seconds: churned
            .as_ref()
            .map_or(0.0, |churned| churned.churn.slowest_round_trip.as_secs_f64()),
        data_dir_after_churn_bytes,
    })
}

/// The churn phase and the memory it took.
struct Churned {
    churn: phases::Churn,
    peak_rss_bytes: Option<u64>,
}

/// How often the churn phase samples the server's resident memory.
const CHURN_RSS_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// Passes `jobs` jobs through the loaded server (see [`phases::churn`]) while a thread samples
/// its resident memory: what a server holding a large backlog needs while work keeps flowing,
/// checkpoints and compactions included.
fn churn(
    runtime: &Runtime,
    server: &ServerProcess,
    connections: &[Connection],
    jobs: u64,
    client: LoadClient,
) -> Result<Churned, BenchError> {
    let probe = runtime.block_on(Connection::connect(server.addr(), client))?;
    let pid = server.pid();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut peak = None;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(sample) = procfs::sample(pid) {
                    peak = peak.max(Some(sample.rss_bytes));
                }
                std::thread::sleep(CHURN_RSS_SAMPLE_INTERVAL);
            }
            peak
        })
    };
    let churn = runtime.block_on(phases::churn(
        connections,
        &probe,
        &queue_name("churn", 0),
        &queue_name("probe", 0),
        jobs,
        BACKLOG_FILL_BATCH,
    ));
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak_rss_bytes = sampler.join().map_err(|_| BenchError::Unexpected("the memory sampler panicked".into()))?;
    Ok(Churned { churn: churn?, peak_rss_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(names: &[&str]) -> Vec<Target> {
        names
            .iter()
            .map(|name| Target {
                name: name.to_string(),
                program: Program::Ceiling { binary: "x".into() },
                client: LoadClient::Ours,
                cluster_nodes: None,
                via_follower: false,
            })
            .collect()
    }

    #[test]
    fn only_a_cluster_measurement_is_repeated_and_each_repeat_is_noted() {
        let mut single = targets(&["one"]).remove(0);
        let failing = |failures: usize| {
            let mut calls = 0;
            move || {
                calls += 1;
                if calls <= failures { Err(BenchError::Unexpected(format!("failure {calls}"))) } else { Ok(calls) }
            }
        };
        let mut repeated = Vec::new();
        assert!(attempts(&single, "x", &mut repeated, failing(1)).is_err());
        assert!(repeated.is_empty());
        single.cluster_nodes = Some(3);
        assert_eq!(attempts(&single, "single/50 round 2", &mut repeated, failing(2)).unwrap(), 3);
        assert_eq!(repeated, ["one, single/50 round 2: failure 1", "one, single/50 round 2: failure 2"]);
        assert!(attempts(&single, "x", &mut repeated, failing(3)).is_err());
    }

    #[test]
    fn each_round_starts_with_the_next_target() {
        let targets = targets(&["a", "b", "c"]);
        let order = |round| rotated(&targets, round).map(|target| target.name.as_str()).collect::<Vec<_>>();
        assert_eq!(order(0), ["a", "b", "c"]);
        assert_eq!(order(1), ["b", "c", "a"]);
        assert_eq!(order(3), ["a", "b", "c"]);
    }

    #[test]
    fn the_standard_scenarios_cover_the_sweep_and_the_batch_variants() {
        let scenarios = standard_scenarios(20_000);
        let connections: Vec<usize> =
            scenarios.iter().filter(|s| s.enqueue_batch == 1).map(|s| s.connections).collect();
        assert_eq!(connections, [1, 8, 50, 256]);
        let batches: Vec<u32> = scenarios.iter().filter(|s| s.enqueue_batch > 1).map(|s| s.reserve_batch).collect();
        assert_eq!(batches, [16, 64, 256]);
        assert!(scenarios.iter().all(|s| s.jobs >= 1));
    }
}
