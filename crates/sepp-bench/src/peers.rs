//! sepp side by side with the job queues users would pick instead: BullMQ (Redis), pg-boss
//! (PostgreSQL), RabbitMQ (a quorum queue), NATS JetStream (a work-queue stream) and
//! beanstalkd, each driven by its own client library from a small driver program, with the same
//! phases, payload size, concurrency and (per row, stated) durability as sepp.
//!
//! Every scenario has a shape ([`Shape`]): a connection (or client instance) per producer and
//! per worker, or one client shared by the process's producers and one consumer with N jobs in
//! flight, the way each peer's documentation has an application do it.
//!
//! A driver (`peers/node/driver.js` for BullMQ, pg-boss, RabbitMQ and beanstalkd, `sepp-bench nats-driver`
//! on the async-nats crate for NATS, `sepp-bench sepp-driver` for sepp) runs one phase: it connects, prints `ready`, waits for a line on stdin, runs the phase closed-loop and
//! prints one JSON line ([`DriverReport`]). The harness samples the broker's CPU (every process
//! of it) and the driver's CPU from `/proc` between `ready` and the report, so start-up and
//! connection set-up are not counted.
//!
//! Redis, nats-server and beanstalkd are started by the harness, fresh for every measurement, on
//! a free port with a temporary directory. PostgreSQL and RabbitMQ are the machine's system-wide
//! servers: their CPU is the sum over all of their processes (every PostgreSQL backend, the
//! Erlang VM and its helpers), children that exited included.

use std::io::{BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tempfile::TempDir;

use crate::BenchError;
use crate::procfs;
use crate::server::{PersistMode, Program, ServerProcess};

/// The machine's services the peers use (the developers' guide lists them).
pub const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
pub const POSTGRES_ADDR: &str = "127.0.0.1:5432";
pub const RABBITMQ_URL: &str = "amqp://guest:guest@127.0.0.1:5672";
pub const RABBITMQ_ADDR: &str = "127.0.0.1:5672";

/// One row of the comparison: a queue, its durability setting and the driver that loads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Peer {
    /// Our server in a persist mode.
    Sepp(String),
    /// BullMQ on a Redis the harness starts with `appendonly yes` and this `appendfsync`.
    BullMq { appendfsync: String },
    /// pg-boss on the machine's PostgreSQL (its defaults: fsync and synchronous_commit on).
    PgBoss,
    /// amqplib on the machine's RabbitMQ: a quorum queue, publisher confirms, manual acks.
    RabbitMq,
    /// NATS JetStream on a nats-server the harness starts; `sync_always` sets
    /// `jetstream { sync_interval: always }`, otherwise its default sync interval.
    Nats { sync_always: bool },
    /// jackd on a beanstalkd the harness starts with a binlog and `-f 0` (fsync every write).
    Beanstalkd,
}

impl Peer {
    pub fn name(&self) -> String {
        match self {
            Peer::Sepp(mode) => format!("sepp {mode}"),
            Peer::BullMq { appendfsync } => format!("BullMQ fsync {appendfsync}"),
            Peer::PgBoss => "pg-boss".into(),
            Peer::RabbitMq => "RabbitMQ quorum".into(),
            Peer::Nats { sync_always: true } => "NATS sync always".into(),
            Peer::Nats { sync_always: false } => "NATS default sync".into(),
            Peer::Beanstalkd => "beanstalkd fsync always".into(),
        }
    }

    /// Every target, durable rows first, then the relaxed ones.
    pub fn all() -> Vec<Peer> {
        vec![
            Peer::Sepp("sync_all".into()),
            Peer::BullMq { appendfsync: "always".into() },
            Peer::PgBoss,
            Peer::RabbitMq,
            Peer::Nats { sync_always: true },
            Peer::Beanstalkd,
            Peer::Sepp("buffer".into()),
            Peer::BullMq { appendfsync: "everysec".into() },
            Peer::Nats { sync_always: false },
        ]
    }

    /// Parses a name of [`Peer::cli_name`].
    pub fn parse(name: &str) -> Option<Peer> {
        Peer::all().into_iter().find(|peer| peer.cli_name() == name)
    }

    /// The short name on the command line (`--peers sepp-sync_all,bullmq-always,...`).
    pub fn cli_name(&self) -> String {
        match self {
            Peer::Sepp(mode) => format!("sepp-{mode}"),
            Peer::BullMq { appendfsync } => format!("bullmq-{appendfsync}"),
            Peer::PgBoss => "pg-boss".into(),
            Peer::RabbitMq => "rabbitmq".into(),
            Peer::Nats { sync_always: true } => "nats-always".into(),
            Peer::Nats { sync_always: false } => "nats-default".into(),
            Peer::Beanstalkd => "beanstalkd".into(),
        }
    }

    /// Whether a job counts as enqueued only once it is on disk.
    pub fn durable(&self) -> bool {
        match self {
            Peer::Sepp(mode) => mode == "sync_all",
            Peer::BullMq { appendfsync } => appendfsync == "always",
            Peer::PgBoss | Peer::RabbitMq | Peer::Beanstalkd => true,
            Peer::Nats { sync_always } => *sync_always,
        }
    }

    /// What an answered enqueue means for this row.
    pub fn durability(&self) -> &'static str {
        match self {
            Peer::Sepp(mode) if mode == "sync_all" => "on disk: the log is fsynced before the answer",
            Peer::Sepp(_) => "in the page cache: written, not synced (lost on a power cut)",
            Peer::BullMq { appendfsync } if appendfsync == "always" => {
                "on disk: Redis fsyncs the append-only file before it replies"
            }
            Peer::BullMq { .. } => "in memory: the append-only file is fsynced once a second (up to 1 s lost)",
            Peer::PgBoss => "on disk: the commit's WAL record is fsynced (synchronous_commit on)",
            Peer::RabbitMq => "on disk: a quorum queue confirms after its log is fsynced",
            Peer::Nats { sync_always: true } => "on disk: JetStream fsyncs every write (sync_interval always)",
            Peer::Nats { sync_always: false } => "in the page cache: JetStream fsyncs every 2 minutes by default",
            Peer::Beanstalkd => "on disk: beanstalkd (-f 0) fsyncs its binlog after every write before it replies",
        }
    }

    /// Whether the peer has a call that enqueues many jobs at once.
    pub fn has_batches(&self) -> bool {
        !matches!(self, Peer::Nats { .. } | Peer::Beanstalkd)
    }

    /// The address of the machine's server this peer needs, for those the harness does not start.
    fn needs(&self) -> Option<&'static str> {
        match self {
            Peer::PgBoss => Some(POSTGRES_ADDR),
            Peer::RabbitMq => Some(RABBITMQ_ADDR),
            _ => None,
        }
    }
}

/// Where the programs are.
#[derive(Clone, Debug)]
pub struct Tools {
    /// Our `sepp` binary.
    pub sepp: PathBuf,
    /// This binary (its `sepp-driver` subcommand drives sepp, `nats-driver` NATS JetStream).
    pub bench: PathBuf,
    /// `peers/node/driver.js` (with its node_modules installed).
    pub node_driver: PathBuf,
    pub redis_server: PathBuf,
    /// A nats-server of 2.10 or later (sync_interval exists since then), for both NATS rows.
    pub nats_server: Option<PathBuf>,
    /// An older nats-server, for the default-sync row only when no newer one is there.
    pub nats_server_any: Option<PathBuf>,
    /// The beanstalkd binary (Debian's package installs /usr/bin/beanstalkd).
    pub beanstalkd: PathBuf,
}

impl Tools {
    /// The nats-server for a NATS row: sync always needs 2.10 or later.
    fn nats_for(&self, sync_always: bool) -> Option<&PathBuf> {
        if sync_always {
            self.nats_server.as_ref()
        } else {
            self.nats_server.as_ref().or(self.nats_server_any.as_ref())
        }
    }
}

/// Why a peer cannot be measured here, or `None` when it can.
pub fn unavailable(peer: &Peer, tools: &Tools) -> Option<String> {
    if let Some(addr) = peer.needs() {
        let addr: SocketAddr = addr.parse().expect("a valid address");
        if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
            return Some(format!("nothing listens on {addr}"));
        }
    }
    match peer {
        Peer::Sepp(_) => None,
        Peer::BullMq { .. } => {
            (!runs(&tools.redis_server, "--version")).then(|| format!("{} does not run", tools.redis_server.display()))
        }
        Peer::Nats { sync_always } => match tools.nats_for(*sync_always) {
            None => Some("no nats-server of 2.10 or later, which sync_interval needs (give --nats-server)".into()),
            Some(path) => (!runs(path, "--version")).then(|| format!("{} does not run", path.display())),
        },
        Peer::Beanstalkd => (!runs(&tools.beanstalkd, "-v"))
            .then(|| format!("{} does not run (apt-get install beanstalkd)", tools.beanstalkd.display())),
        Peer::PgBoss | Peer::RabbitMq => None,
    }
    .or_else(|| {
        // sepp and NATS are driven from this binary; the others need the Node drivers.
        let native = matches!(peer, Peer::Sepp(_) | Peer::Nats { .. });
        (!native && !tools.node_driver.with_file_name("node_modules").is_dir()).then(|| {
            format!(
                "the Node drivers are not installed (npm ci in {})",
                tools.node_driver.parent().expect("the driver is a file in a directory").display()
            )
        })
    })
}

fn runs(program: &Path, argument: &str) -> bool {
    Command::new(program).arg(argument).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The version a nats-server prints (`nats-server: v2.15.1`), as (major, minor).
pub fn nats_version(output: &str) -> Option<(u32, u32)> {
    let version = output.split_whitespace().find_map(|word| word.strip_prefix('v'))?;
    let mut parts = version.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The first nats-server among `candidates` that runs, of 2.10 or later when `recent`.
pub fn find_nats_server(candidates: &[PathBuf], recent: bool) -> Option<PathBuf> {
    candidates.iter().find_map(|path| {
        let output = Command::new(path).arg("--version").output().ok()?;
        let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        let (major, minor) = nats_version(&printed)?;
        (!recent || major > 2 || (major == 2 && minor >= 10)).then(|| path.clone())
    })
}

/// A running broker for one measurement.
enum Broker {
    /// A server process the harness started (Redis, nats-server), with its directory.
    Own { child: Child, _dir: TempDir, url: String },
    /// A sepp server.
    Sepp(ServerProcess),
    /// The machine's server: every process whose command name is one of these.
    System { names: &'static [&'static str], url: String },
}

/// CPU and memory of a broker at one moment, over all of its processes.
#[derive(Clone, Copy, Debug, Default)]
struct BrokerSample {
    cpu_seconds: f64,
    /// Proportional set size summed over its processes (shared pages split between them).
    memory_bytes: u64,
}

impl Broker {
    fn start(peer: &Peer, tools: &Tools) -> Result<Broker, BenchError> {
        match peer {
            Peer::Sepp(mode) => {
                let persist_mode = PersistMode::parse(mode)
                    .ok_or_else(|| BenchError::Unexpected(format!("unknown persist mode {mode}")))?;
                Ok(Broker::Sepp(ServerProcess::start(&Program::Sepp { binary: tools.sepp.clone(), persist_mode })?))
            }
            Peer::BullMq { appendfsync } => {
                let dir = tempfile::Builder::new().prefix("sepp-bench-redis-").tempdir()?;
                let port = free_port()?;
                let child = Command::new(&tools.redis_server)
                    .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--protected-mode", "no"])
                    .arg("--dir")
                    .arg(dir.path())
                    .args(["--appendonly", "yes", "--appendfsync", appendfsync, "--save", ""])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?;
                wait_for_port(port)?;
                Ok(Broker::Own { child, _dir: dir, url: format!("redis://127.0.0.1:{port}") })
            }
            Peer::Nats { sync_always } => {
                let dir = tempfile::Builder::new().prefix("sepp-bench-nats-").tempdir()?;
                let port = free_port()?;
                let sync = if *sync_always { ", sync_interval: always" } else { "" };
                let config = format!(
                    "listen: 127.0.0.1:{port}\njetstream {{ store_dir: \"{}\"{sync} }}\n",
                    dir.path().join("js").display()
                );
                std::fs::write(dir.path().join("nats.conf"), config)?;
                let binary =
                    tools.nats_for(*sync_always).ok_or_else(|| BenchError::Unexpected("no nats-server".into()))?;
                let child = Command::new(binary)
                    .arg("-c")
                    .arg(dir.path().join("nats.conf"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?;
                wait_for_port(port)?;
                Ok(Broker::Own { child, _dir: dir, url: format!("nats://127.0.0.1:{port}") })
            }
            Peer::Beanstalkd => {
                let dir = tempfile::Builder::new().prefix("sepp-bench-beanstalkd-").tempdir()?;
                let port = free_port()?;
                // -b: the binlog, in this measurement's directory; -f 0: fsync after every write.
                let child = Command::new(&tools.beanstalkd)
                    .args(["-l", "127.0.0.1", "-p", &port.to_string(), "-f", "0", "-b"])
                    .arg(dir.path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?;
                wait_for_port(port)?;
                Ok(Broker::Own { child, _dir: dir, url: format!("beanstalk://127.0.0.1:{port}") })
            }
            Peer::PgBoss => Ok(Broker::System { names: &["postgres"], url: POSTGRES_URL.into() }),
            Peer::RabbitMq => Ok(Broker::System {
                names: &["beam.smp", "erl_child_setup", "epmd", "inet_gethost"],
                url: RABBITMQ_URL.into(),
            }),
        }
    }

    fn url(&self) -> String {
        match self {
            Broker::Own { url, .. } | Broker::System { url, .. } => url.clone(),
            Broker::Sepp(server) => server.addr().to_string(),
        }
    }

    fn pids(&self) -> Vec<u32> {
        match self {
            Broker::Own { child, .. } => vec![child.id()],
            Broker::Sepp(server) => vec![server.pid()],
            Broker::System { names, .. } => procfs::pids_named(names),
        }
    }

    fn sample(&self) -> BrokerSample {
        let mut sample = BrokerSample::default();
        for pid in self.pids() {
            if let Some(process) = procfs::sample_with_children(pid) {
                sample.cpu_seconds += process.cpu_seconds;
                sample.memory_bytes += procfs::pss_bytes(pid).unwrap_or(process.rss_bytes);
            }
        }
        sample
    }

    fn stop(self) -> Result<(), BenchError> {
        match self {
            Broker::Own { mut child, .. } => {
                // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                child.wait()?;
                Ok(())
            }
            Broker::Sepp(mut server) => server.stop().map(drop),
            Broker::System { .. } => Ok(()),
        }
    }
}

fn free_port() -> Result<u16, BenchError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn wait_for_port(port: u16) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if Instant::now() > deadline {
            return Err(BenchError::Server(format!("nothing listened on port {port} within 30 s")));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The line a driver prints after its phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DriverReport {
    pub client: String,
    pub client_version: String,
    pub server_version: String,
    pub phase: String,
    pub jobs: u64,
    pub seconds: f64,
    #[serde(default)]
    pub p50_us: Option<f64>,
    #[serde(default)]
    pub p99_us: Option<f64>,
}

/// One phase against one target in one round.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerRun {
    pub target: String,
    pub scenario: String,
    pub round: usize,
    pub concurrency: usize,
    /// How the producers and workers were connected ([`Shape::name`]).
    #[serde(default = "per_producer_name")]
    pub shape: String,
    pub report: DriverReport,
    /// Broker CPU seconds over the phase, all of its processes.
    pub broker_cpu_seconds: f64,
    /// The driver's CPU seconds over the phase.
    pub driver_cpu_seconds: f64,
    /// The broker's memory at the end of the phase (PSS summed over its processes).
    pub broker_memory_bytes: u64,
}

impl PeerRun {
    pub fn jobs_per_second(&self) -> f64 {
        self.report.jobs as f64 / self.report.seconds.max(1e-9)
    }
}

/// A target of the comparison with what was said about it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeerTarget {
    pub name: String,
    pub peer: Peer,
    pub durable: bool,
    pub durability: String,
}

/// Everything `sepp-bench peers` measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PeerResults {
    pub machine: Option<crate::results::Machine>,
    pub load_average: String,
    pub jobs: u64,
    pub rounds: usize,
    pub targets: Vec<PeerTarget>,
    /// Targets that were asked for but could not run here, with why.
    pub skipped: Vec<(String, String)>,
    /// Measurements that failed (target, scenario, round, the error): the run goes on without
    /// them, and `sepp-bench peers` exits with an error after writing the results.
    #[serde(default)]
    pub failed: Vec<(String, String, usize, String)>,
    pub runs: Vec<PeerRun>,
}

/// How a driver connects its N producers and its N jobs in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shape {
    /// A connection (or client instance) of its own for every producer and every worker.
    PerProducer,
    /// One client for the process, its N producers' calls concurrent on it, and one consumer
    /// with N jobs in flight: what each peer's documentation has an application do (the Node
    /// driver and `nats_driver` say per peer what that is).
    Shared,
}

impl Shape {
    /// The name in the tables and the results.
    pub fn name(self) -> &'static str {
        match self {
            Shape::PerProducer => "connection per producer",
            Shape::Shared => "shared",
        }
    }

    /// The `--shape` argument of the drivers.
    pub fn arg(self) -> &'static str {
        match self {
            Shape::PerProducer => "per-producer",
            Shape::Shared => "shared",
        }
    }

    /// Parses a `--shape` argument.
    pub fn parse(arg: &str) -> Option<Shape> {
        [Shape::PerProducer, Shape::Shared].into_iter().find(|shape| shape.arg() == arg)
    }
}

fn per_producer_name() -> String {
    Shape::PerProducer.name().into()
}

/// A load shape: enqueue (single or batch) with N producers, then a drain with N in flight.
#[derive(Clone, Debug)]
pub struct PeerScenario {
    pub name: String,
    pub concurrency: usize,
    pub jobs: u64,
    /// Jobs per enqueue call (1: single).
    pub batch: u32,
    pub shape: Shape,
}

/// The scenarios of the comparison for `jobs` jobs: single/8, single/50 and batch64/8 with a
/// connection per producer, and shared/50 (one shared client, 50 concurrent single enqueues,
/// then one consumer with 50 in flight).
pub fn scenarios(jobs: u64) -> Vec<PeerScenario> {
    let scenario = |name: &str, concurrency, jobs, batch, shape| PeerScenario {
        name: name.into(),
        concurrency,
        jobs,
        batch,
        shape,
    };
    vec![
        scenario("single/8", 8, (jobs / 4).max(1), 1, Shape::PerProducer),
        scenario("single/50", 50, jobs, 1, Shape::PerProducer),
        scenario("batch64/8", 8, jobs, 64, Shape::PerProducer),
        scenario("shared/50", 50, jobs, 1, Shape::Shared),
    ]
}

/// What to run.
#[derive(Clone, Debug)]
pub struct PeerPlan {
    pub peers: Vec<Peer>,
    pub scenarios: Vec<PeerScenario>,
    pub rounds: usize,
    /// Sequential round trips of the latency phase, 0 to skip.
    pub latency_rounds: usize,
}

/// A driver process between `ready` and its report.
struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    label: String,
}

impl Driver {
    /// Starts the driver for `peer` on `phase` and waits for its `ready` line.
    #[allow(clippy::too_many_arguments)]
    fn start(
        peer: &Peer,
        tools: &Tools,
        url: &str,
        phase: &str,
        jobs: u64,
        concurrency: usize,
        batch: u32,
        shape: Shape,
        queue: &str,
    ) -> Result<Driver, BenchError> {
        let mut command = match peer {
            Peer::Sepp(_) => {
                let mut command = Command::new(&tools.bench);
                command.arg("sepp-driver");
                command
            }
            Peer::Nats { .. } => {
                let mut command = Command::new(&tools.bench);
                command.arg("nats-driver");
                command
            }
            other => {
                let mut command = Command::new("node");
                let name = match other {
                    Peer::BullMq { .. } => "bullmq",
                    Peer::PgBoss => "pg-boss",
                    Peer::RabbitMq => "rabbitmq",
                    Peer::Beanstalkd => "beanstalkd",
                    _ => "nats",
                };
                command.arg(&tools.node_driver).args(["--peer", name]);
                command
            }
        };
        command
            .args(["--url", url, "--phase", phase, "--jobs", &jobs.to_string()])
            .args(["--concurrency", &concurrency.to_string(), "--batch", &batch.to_string(), "--queue", queue])
            .args(["--payload-bytes", "256", "--shape", shape.arg()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let label = format!("{} {phase}", peer.name());
        let mut child = command
            .spawn()
            .map_err(|error| BenchError::Unexpected(format!("cannot start the {label} driver: {error}")))?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line)? == 0 {
                let status = child.wait()?;
                return Err(BenchError::Unexpected(format!("the {label} driver exited ({status}) before ready")));
            }
            if line.trim() == "ready" {
                break;
            }
        }
        Ok(Driver { child, stdin, stdout, label })
    }

    /// Lets the phase run; returns its report once printed.
    fn go(&mut self) -> Result<DriverReport, BenchError> {
        let mut stdin = self.stdin.take().expect("go once");
        stdin.write_all(b"go\n")?;
        drop(stdin);
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                let status = self.child.wait()?;
                return Err(BenchError::Unexpected(format!(
                    "the {} driver exited ({status}) without a report",
                    self.label
                )));
            }
            if line.trim_start().starts_with('{') {
                return serde_json::from_str(line.trim()).map_err(|error| {
                    BenchError::Unexpected(format!("{}: unreadable report {line:?}: {error}", self.label))
                });
            }
        }
    }

    /// Waits for the driver to finish (it checks that nothing is left after a drain).
    fn finish(mut self) -> Result<(), BenchError> {
        let status = self.child.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(BenchError::Unexpected(format!("the {} driver failed after its phase ({status})", self.label)))
        }
    }
}

/// Runs one phase and samples the broker and the driver around it.
#[allow(clippy::too_many_arguments)]
fn phase(
    broker: &Broker,
    peer: &Peer,
    tools: &Tools,
    phase: &str,
    jobs: u64,
    concurrency: usize,
    batch: u32,
    shape: Shape,
    queue: &str,
) -> Result<(DriverReport, f64, f64, u64), BenchError> {
    let mut driver = Driver::start(peer, tools, &broker.url(), phase, jobs, concurrency, batch, shape, queue)?;
    let driver_pid = driver.child.id();
    let broker_before = broker.sample();
    let driver_before = procfs::sample(driver_pid).map_or(0.0, |sample| sample.cpu_seconds);
    let report = driver.go()?;
    let driver_after = procfs::sample(driver_pid).map_or(0.0, |sample| sample.cpu_seconds);
    let broker_after = broker.sample();
    driver.finish()?;
    Ok((
        report,
        broker_after.cpu_seconds - broker_before.cpu_seconds,
        driver_after - driver_before,
        broker_after.memory_bytes,
    ))
}

/// A queue name no other measurement uses.
fn queue_name(peer: &Peer, scenario: &str, round: usize) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos());
    format!("bench-{}-{}-{round}-{nanos}", peer.cli_name(), scenario.replace('/', "-"))
}

/// Runs the plan: every scenario against every available target, rotating their order from
/// round to round, then the latency phase. Progress goes to stderr.
pub fn run(plan: &PeerPlan, tools: &Tools) -> Result<PeerResults, BenchError> {
    let mut results = PeerResults {
        machine: Some(crate::results::Machine::current()),
        load_average: load_average(),
        jobs: plan.scenarios.iter().map(|scenario| scenario.jobs).max().unwrap_or(0),
        rounds: plan.rounds,
        ..PeerResults::default()
    };
    let mut peers = Vec::new();
    for peer in &plan.peers {
        match unavailable(peer, tools) {
            Some(why) => {
                eprintln!("skipping {}: {why}", peer.name());
                results.skipped.push((peer.name(), why));
            }
            None => {
                results.targets.push(PeerTarget {
                    name: peer.name(),
                    peer: peer.clone(),
                    durable: peer.durable(),
                    durability: peer.durability().into(),
                });
                peers.push(peer.clone());
            }
        }
    }
    for scenario in &plan.scenarios {
        for round in 0..plan.rounds {
            let start = round % peers.len().max(1);
            for peer in peers[start..].iter().chain(&peers[..start]) {
                if scenario.batch > 1 && !peer.has_batches() {
                    continue;
                }
                let broker = Broker::start(peer, tools)?;
                let queue = queue_name(peer, &scenario.name, round);
                let enqueue_phase = if scenario.batch > 1 { "enqueue-batch" } else { "enqueue-single" };
                let mut line = format!("{:<10} round {round} {:<23}", scenario.name, peer.name());
                let mut measured = Vec::new();
                for phase_name in [enqueue_phase, "drain"] {
                    let outcome = phase(
                        &broker,
                        peer,
                        tools,
                        phase_name,
                        scenario.jobs,
                        scenario.concurrency,
                        scenario.batch,
                        scenario.shape,
                        &queue,
                    );
                    let (report, broker_cpu, driver_cpu, memory) = match outcome {
                        Ok(outcome) => outcome,
                        Err(error) => {
                            // Both phases of a round count or neither: a failed phase drops the
                            // round's row for this target.
                            eprintln!("{line}  FAILED in {phase_name}: {error}");
                            results.failed.push((peer.name(), scenario.name.clone(), round, error.to_string()));
                            measured.clear();
                            break;
                        }
                    };
                    let run = PeerRun {
                        target: peer.name(),
                        scenario: scenario.name.clone(),
                        round,
                        concurrency: scenario.concurrency,
                        shape: scenario.shape.name().into(),
                        report,
                        broker_cpu_seconds: broker_cpu,
                        driver_cpu_seconds: driver_cpu,
                        broker_memory_bytes: memory,
                    };
                    line += &format!(
                        "  {} {:>7.0}/s broker {:>6.1} driver {:>6.1} us/job",
                        if phase_name == "drain" { "drain" } else { "enqueue" },
                        run.jobs_per_second(),
                        broker_cpu * 1e6 / scenario.jobs as f64,
                        driver_cpu * 1e6 / scenario.jobs as f64,
                    );
                    measured.push(run);
                }
                if !measured.is_empty() {
                    eprintln!("{line}");
                    results.runs.append(&mut measured);
                }
                broker.stop()?;
            }
        }
    }
    if plan.latency_rounds > 0 {
        for round in 0..plan.rounds {
            let start = round % peers.len().max(1);
            for peer in peers[start..].iter().chain(&peers[..start]) {
                let broker = Broker::start(peer, tools)?;
                let queue = queue_name(peer, "latency", round);
                let outcome = phase(
                    &broker,
                    peer,
                    tools,
                    "latency",
                    plan.latency_rounds as u64,
                    1,
                    1,
                    Shape::PerProducer,
                    &queue,
                );
                let (report, broker_cpu, driver_cpu, memory) = match outcome {
                    Ok(outcome) => outcome,
                    Err(error) => {
                        eprintln!("latency    round {round} {:<23}  FAILED: {error}", peer.name());
                        results.failed.push((peer.name(), "latency".into(), round, error.to_string()));
                        broker.stop()?;
                        continue;
                    }
                };
                eprintln!(
                    "latency    round {round} {:<23}  p50 {:>8.0} us  p99 {:>8.0} us",
                    peer.name(),
                    report.p50_us.unwrap_or(f64::NAN),
                    report.p99_us.unwrap_or(f64::NAN)
                );
                results.runs.push(PeerRun {
                    target: peer.name(),
                    scenario: "latency".into(),
                    round,
                    concurrency: 1,
                    shape: Shape::PerProducer.name().into(),
                    report,
                    broker_cpu_seconds: broker_cpu,
                    driver_cpu_seconds: driver_cpu,
                    broker_memory_bytes: memory,
                });
                broker.stop()?;
            }
        }
    }
    results.load_average = format!("{} at the start, {} at the end", results.load_average, load_average());
    Ok(results)
}

/// The 1, 5 and 15 minute load averages.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_name_parses_back() {
        for peer in Peer::all() {
            assert_eq!(Peer::parse(&peer.cli_name()), Some(peer.clone()));
        }
        assert_eq!(Peer::parse("kafka"), None);
        for shape in [Shape::PerProducer, Shape::Shared] {
            assert_eq!(Shape::parse(shape.arg()), Some(shape));
        }
        assert_eq!(Shape::parse("pooled"), None);
    }

    #[test]
    fn shared_50_is_one_client_with_50_single_enqueues() {
        let shared = scenarios(20_000).into_iter().find(|scenario| scenario.name == "shared/50").unwrap();
        assert_eq!((shared.concurrency, shared.jobs, shared.batch, shared.shape), (50, 20_000, 1, Shape::Shared));
        let single = scenarios(20_000).into_iter().find(|scenario| scenario.name == "single/50").unwrap();
        assert_eq!(single.shape, Shape::PerProducer);
    }

    #[test]
    fn runs_of_older_results_read_as_connection_per_producer() {
        let line = r#"{"target":"pg-boss","scenario":"single/50","round":0,"concurrency":50,"report":{"client":"pg-boss","client_version":"10.4.2","server_version":"postgresql 15","phase":"drain","jobs":10,"seconds":1.0},"broker_cpu_seconds":0.1,"driver_cpu_seconds":0.1,"broker_memory_bytes":1}"#;
        let run: PeerRun = serde_json::from_str(line).unwrap();
        assert_eq!(run.shape, "connection per producer");
    }

    #[test]
    fn nats_versions_are_read_from_the_version_line() {
        assert_eq!(nats_version("nats-server: v2.15.1\n"), Some((2, 15)));
        assert_eq!(nats_version("nats-server: v2.9.10"), Some((2, 9)));
        assert_eq!(nats_version("garbage"), None);
    }

    #[test]
    fn relaxed_rows_are_not_called_durable() {
        let relaxed: Vec<String> = Peer::all().iter().filter(|peer| !peer.durable()).map(Peer::name).collect();
        assert_eq!(relaxed, ["sepp buffer", "BullMQ fsync everysec", "NATS default sync"]);
    }

    #[test]
    fn a_driver_report_line_is_the_documented_json() {
        let line = r#"{"client":"bullmq","client_version":"6.7.0","server_version":"redis 7.0.15","phase":"latency","jobs":200,"seconds":2.0,"p50_us":11436.4,"p99_us":18065.6}"#;
        let report: DriverReport = serde_json::from_str(line).unwrap();
        assert_eq!(report.p50_us, Some(11436.4));
        let line = r#"{"client":"nats","client_version":"2.29.3","server_version":"nats-server 2.15.1","phase":"drain","jobs":10,"seconds":1.0,"p50_us":null,"p99_us":null}"#;
        let report: DriverReport = serde_json::from_str(line).unwrap();
        assert_eq!(report.p99_us, None);
    }
}
