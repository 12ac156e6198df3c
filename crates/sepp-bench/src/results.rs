//! What a run measured, as written to `results.json` and read back by `sepp-bench report`.
//!
//! Raw measurements only: every median and ratio in the tables is computed from these by
//! `report`, so a results file can be re-rendered without measuring again.

use serde::{Deserialize, Serialize};

/// Everything one `compare` run measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Results {
    pub machine: Machine,
    /// The targets in the order they were configured (the first round runs them in this order).
    pub targets: Vec<String>,
    pub rounds: usize,
    pub throughput: Vec<ThroughputRun>,
    pub latency: Vec<LatencyRun>,
    pub backlog: Vec<BacklogRun>,
    /// Cluster measurements that failed (an election interrupted them) and were repeated on a
    /// fresh cluster: target, measurement and error of each failed attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeated: Vec<String>,
}

/// The machine the run happened on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_bytes: u64,
    pub kernel: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix_s: u64,
}

impl Machine {
    /// Reads the current machine from `/proc`.
    pub fn current() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|line| line.starts_with("model name"))
            .and_then(|line| line.split_once(':'))
            .map(|(_, model)| model.trim().to_string())
            .unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find(|line| line.starts_with("MemTotal:"))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
        let started_unix_s =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
        Machine {
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            cpu_model,
            memory_bytes,
            kernel,
            started_unix_s,
        }
    }
}

/// One load shape: how many connections, how many jobs, and the batch sizes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub connections: usize,
    pub jobs: u64,
    /// Jobs per EnqueueBatch call.
    pub enqueue_batch: u32,
    /// `max_jobs` of each Reserve call (each reserved job is then acked on its own).
    pub reserve_batch: u32,
    /// The queue to load (a declared one, say); `None` picks a name no other run uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

/// One scenario against one target in one round: an enqueue phase, then a drain phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThroughputRun {
    pub scenario: Scenario,
    pub target: String,
    pub round: usize,
    pub enqueue_seconds: f64,
    pub drain_seconds: f64,
    /// Server CPU seconds (user + system) during each phase; absent for address targets.
    pub enqueue_server_cpu_seconds: Option<f64>,
    pub drain_server_cpu_seconds: Option<f64>,
    /// A cluster's leader alone: its CPU seconds over both phases (the figures above are every
    /// node's together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_server_cpu_seconds: Option<f64>,
    /// CPU seconds of the harness itself (the client side) over both phases.
    pub client_cpu_seconds: f64,
    pub peak_rss_bytes: Option<u64>,
    /// Data directory size with every job enqueued and none drained.
    pub data_dir_bytes: Option<u64>,
}

impl ThroughputRun {
    pub fn enqueue_jobs_per_second(&self) -> f64 {
        self.scenario.jobs as f64 / self.enqueue_seconds.max(1e-9)
    }

    pub fn drain_jobs_per_second(&self) -> f64 {
        self.scenario.jobs as f64 / self.drain_seconds.max(1e-9)
    }

    /// Server CPU microseconds per job over enqueue, reserve and ack.
    pub fn cpu_us_per_job(&self) -> Option<f64> {
        Some((self.enqueue_server_cpu_seconds? + self.drain_server_cpu_seconds?) * 1e6 / self.scenario.jobs as f64)
    }

    /// A cluster leader's own CPU microseconds per job over enqueue, reserve and ack.
    pub fn leader_cpu_us_per_job(&self) -> Option<f64> {
        Some(self.leader_server_cpu_seconds? * 1e6 / self.scenario.jobs as f64)
    }
}

/// Sequential round trips on one connection against one target in one round.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LatencyRun {
    pub target: String,
    pub round: usize,
    pub rounds_measured: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// The large-backlog scenario against one target.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BacklogRun {
    pub target: String,
    pub jobs: u64,
    pub enqueue_seconds: f64,
    /// Resident memory with the whole backlog queued, and the peak so far.
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub data_dir_bytes: Option<u64>,
    /// SIGTERM until the process exited.
    pub stop_seconds: f64,
    /// Start of the new process until GetServerInfo succeeded on its port.
    pub restart_seconds: f64,
    pub rss_after_restart_bytes: Option<u64>,
    /// Jobs drained after the restart (all of them unless limited), and how long that took.
    pub drained_jobs: u64,
    pub drain_seconds: f64,
    pub drain_connections: usize,
    pub data_dir_after_drain_bytes: Option<u64>,
    /// Jobs passed through the loaded server before the restart (0: not measured; results
    /// written before this phase existed read back as 0), and how long that took.
    #[serde(default)]
    pub churn_jobs: u64,
    #[serde(default)]
    pub churn_seconds: f64,
    /// The largest resident memory seen while they passed (sampled every 10 ms).
    #[serde(default)]
    pub churn_peak_rss_bytes: Option<u64>,
    /// The slowest enqueue -> reserve -> ack round trip of a probing connection meanwhile.
    #[serde(default)]
    pub churn_slowest_round_trip_seconds: f64,
    #[serde(default)]
    pub data_dir_after_churn_bytes: Option<u64>,
}
