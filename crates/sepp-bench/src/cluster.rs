//! Clusters of our server, for the `cluster3` targets of `compare` and for `failover`: `sepp`
//! nodes on loopback, each a [`ServerProcess`] with its own data directory and a `[cluster]`
//! section, made one cluster with `sepp cluster init`.
//!
//! Each node starts on port 0 for its queue service and its cluster listener, and is then
//! pinned to the ports it bound (its program is rewritten with them), so a node killed and
//! started again comes back where its peers expect it. Only the leader serves the queue
//! service: a cluster is ready once one node acknowledged an enqueue (a freshly elected leader
//! answers UNAVAILABLE for a moment).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sepp_server::proto::v1 as pb;
use sepp_server::proto::v1::queue_service_client::QueueServiceClient;
use tonic::transport::{Channel, Endpoint};

use crate::BenchError;
use crate::procfs::ProcessSample;
use crate::server::{PersistMode, Program, Sampled, ServerProcess};

/// The Raft timings of a cluster's nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    /// How often a leader tells the others it is alive, in milliseconds.
    pub heartbeat_interval_ms: u64,
    /// How long a follower waits without a heartbeat before it stands for election, in
    /// milliseconds (each node stands at its own point between 3/4 of this and all of it).
    pub election_timeout_ms: u64,
}

/// The configuration's defaults, what a deployed cluster runs with: the `cluster3` targets of
/// `compare` (whose measurements a spurious election would interrupt) and `failover`.
pub const DEFAULT_TIMINGS: Timings = Timings { heartbeat_interval_ms: 100, election_timeout_ms: 800 };

/// How long a cluster may take to have a leader that serves writes.
pub const SERVING_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one probe call may take before the node counts as not serving.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The metadata key under which a follower names the leader's client address.
const LEADER_METADATA: &str = "sepp-leader";

/// The `[cluster]` section of node `id`, listening for its peers on `listen`.
pub fn cluster_section(id: u64, listen: SocketAddr, timings: Timings, snapshot_after_entries: Option<u64>) -> String {
    let mut section = format!(
        "[cluster]\nnode_id = {id}\nlisten_addr = \"{listen}\"\nheartbeat_interval_ms = {}\nelection_timeout_ms = {}\n",
        timings.heartbeat_interval_ms, timings.election_timeout_ms,
    );
    if let Some(entries) = snapshot_after_entries {
        section.push_str(&format!("snapshot_after_entries = {entries}\n"));
    }
    section
}

/// How to start every node of a cluster.
#[derive(Clone, Debug)]
pub struct NodeSetup {
    /// Our `sepp` binary.
    pub binary: PathBuf,
    /// Of every node (and so of its Raft log).
    pub persist_mode: PersistMode,
    pub timings: Timings,
    /// `cluster.snapshot_after_entries` of every node (the configuration's default when `None`).
    pub snapshot_after_entries: Option<u64>,
}

impl NodeSetup {
    /// The program of node `id`, with its `[cluster]` section listening on `listen`.
    fn program(&self, id: u64, listen: SocketAddr) -> Program {
        Program::SeppWith {
            binary: self.binary.clone(),
            persist_mode: self.persist_mode,
            extra: cluster_section(id, listen, self.timings, self.snapshot_after_entries),
        }
    }
}

/// Running nodes of our server made one cluster. Node `id` is `nodes[id - 1]`.
pub struct Cluster {
    nodes: Vec<ServerProcess>,
    /// Each node's cluster (Raft) address, node 1 first.
    raft: Vec<SocketAddr>,
    binary: PathBuf,
    /// The index of the node that last acknowledged a probe write.
    leader: usize,
}

impl Cluster {
    /// Starts `count` nodes as `setup` says, pins each to its ports, and makes them one cluster
    /// with `sepp cluster init`. Call [`Cluster::wait_for_leader`] before loading it.
    pub fn start(setup: &NodeSetup, count: u64) -> Result<Cluster, BenchError> {
        let any_port: SocketAddr = "127.0.0.1:0".parse().expect("a valid address");
        let (mut nodes, mut raft) = (Vec::new(), Vec::new());
        for id in 1..=count {
            let mut node = ServerProcess::start(&setup.program(id, any_port))?;
            let bound = node.logged_addr("cluster node listening").ok_or_else(|| {
                BenchError::Server(format!("node {id} logged no `cluster node listening` line with its address"))
            })?;
            node.set_program(setup.program(id, bound));
            nodes.push(node);
            raft.push(bound);
        }
        init(&setup.binary, &raft)?;
        Ok(Cluster { nodes, raft, binary: setup.binary.clone(), leader: 0 })
    }

    /// The node with id `index + 1`.
    pub fn node(&self, index: usize) -> &ServerProcess {
        &self.nodes[index]
    }

    pub fn node_mut(&mut self, index: usize) -> &mut ServerProcess {
        &mut self.nodes[index]
    }

    /// Every node's queue service address, node 1 first.
    pub fn api_addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(ServerProcess::addr).collect()
    }

    /// The index of the node that last acknowledged a probe write.
    pub fn leader(&self) -> usize {
        self.leader
    }

    /// The queue service address of the leader.
    pub fn leader_addr(&self) -> SocketAddr {
        self.nodes[self.leader].addr()
    }

    /// The queue service address of a node that is not the leader.
    pub fn follower_addr(&self) -> SocketAddr {
        self.nodes[(self.leader + 1) % self.nodes.len()].addr()
    }

    /// Waits until a running node acknowledges an enqueue of one job to `queue`, asking each
    /// in turn; that node is the leader from now on. Returns the job's id.
    pub async fn wait_for_leader(&mut self, queue: &str) -> Result<String, BenchError> {
        let among: Vec<usize> = (0..self.nodes.len()).filter(|index| self.nodes[*index].is_running()).collect();
        let (leader, job_id) = serving_node(&self.api_addrs(), &among, queue).await?;
        self.leader = leader;
        Ok(job_id)
    }

    /// Runs `sepp cluster remove` (taking node `index + 1` out of the membership) or `sepp
    /// cluster add` (adding the node at `index`'s cluster address back, empty or not) against
    /// the leader's cluster address; returns when the change is made (an added node votes).
    pub fn change_membership(&self, index: usize, add: bool) -> Result<(), BenchError> {
        let mut command = Command::new(&self.binary);
        command.arg("cluster");
        if add {
            command.arg("add").arg(self.raft[index].to_string());
        } else {
            command.arg("remove").arg((index + 1).to_string());
        }
        command.arg("--node").arg(self.raft[self.leader].to_string());
        run_cluster_command(command)
    }

    /// Stops every node with SIGTERM (each, even when one fails); the first failure is returned.
    pub fn stop(&mut self) -> Result<(), BenchError> {
        let mut first_error = None;
        for node in &mut self.nodes {
            if node.is_running()
                && let Err(error) = node.stop()
            {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The cluster's cost is that of every node: CPU is their sum, memory the largest node's (a
/// follower applies every entry too, so it holds as much as the leader), and the data
/// directory the leader's (its Raft log and state).
impl Sampled for Cluster {
    fn sample(&self) -> Option<ProcessSample> {
        let samples = self.nodes.iter().map(ServerProcess::sample).collect::<Option<Vec<_>>>()?;
        Some(combined(&samples))
    }

    fn data_dir_bytes(&self) -> Option<u64> {
        self.nodes[self.leader].data_dir_bytes()
    }

    fn leader_sample(&self) -> Option<ProcessSample> {
        self.nodes[self.leader].sample()
    }
}

/// The samples of several processes as one: CPU summed, memory the largest.
pub fn combined(samples: &[ProcessSample]) -> ProcessSample {
    ProcessSample {
        cpu_seconds: samples.iter().map(|sample| sample.cpu_seconds).sum(),
        rss_bytes: samples.iter().map(|sample| sample.rss_bytes).max().unwrap_or(0),
        peak_rss_bytes: samples.iter().map(|sample| sample.peak_rss_bytes).max().unwrap_or(0),
    }
}

/// Runs `sepp cluster init` on the first node with the others as peers.
fn init(binary: &Path, raft: &[SocketAddr]) -> Result<(), BenchError> {
    let mut command = Command::new(binary);
    command.arg("cluster").arg("init").arg("--node").arg(raft[0].to_string());
    for peer in &raft[1..] {
        command.arg("--peer").arg(peer.to_string());
    }
    run_cluster_command(command)
}

/// Runs a `sepp cluster` command; its error output when it fails.
fn run_cluster_command(mut command: Command) -> Result<(), BenchError> {
    // No configuration of the working directory or the environment: the addresses are given.
    command.current_dir(std::env::temp_dir());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().to_ascii_uppercase().starts_with("SEPP_") {
            command.env_remove(name);
        }
    }
    let output = command.output()?;
    if !output.status.success() {
        return Err(BenchError::Server(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

/// Asks the nodes at `addrs` whose index is in `among`, in turn and again every few
/// milliseconds, to enqueue one job to `queue`, until one acknowledges it: returns its index and
/// the job's id.
pub async fn serving_node(addrs: &[SocketAddr], among: &[usize], queue: &str) -> Result<(usize, String), BenchError> {
    let clients: Vec<QueueServiceClient<Channel>> = addrs.iter().map(|addr| lazy_client(*addr)).collect();
    let started = Instant::now();
    loop {
        for index in among.iter().copied() {
            if let Ok(job_id) = enqueue_one(&clients[index], queue).await {
                return Ok((index, job_id));
            }
        }
        if started.elapsed() > SERVING_TIMEOUT {
            return Err(BenchError::Server(format!("no node acknowledged a write within {SERVING_TIMEOUT:?}")));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A client of the queue service at `addr` whose channel connects on first use (and again
/// after its node died and came back). Call it within a Tokio runtime.
pub fn lazy_client(addr: SocketAddr) -> QueueServiceClient<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .expect("a valid URI")
        .connect_timeout(Duration::from_millis(500))
        .tcp_nodelay(true);
    QueueServiceClient::new(endpoint.connect_lazy())
}

/// Why a write was not acknowledged.
#[derive(Debug)]
pub enum Refused {
    /// A follower refused it and named the leader's client address.
    NotLeader(Option<String>),
    /// Anything else: the node is down, not serving yet, or the call timed out.
    Failed(String),
}

/// A job of the benchmark's payload size for `queue`.
pub fn bench_job(queue: &str) -> pb::EnqueueRequest {
    pb::EnqueueRequest {
        queue: queue.into(),
        job_type: "bench".into(),
        payload: Some(pb::Payload {
            data: vec![b'x'; crate::client::PAYLOAD_BYTES],
            encoding: "application/octet-stream".into(),
        }),
        ..Default::default()
    }
}

/// Enqueues one job with a 256-byte payload to `queue` through `client`, within
/// [`PROBE_TIMEOUT`]; returns its id when the node acknowledged it.
pub async fn enqueue_one(client: &QueueServiceClient<Channel>, queue: &str) -> Result<String, Refused> {
    let request = with_metadata(pb::EnqueueBatchRequest { jobs: vec![bench_job(queue)] });
    let response = client.clone().enqueue_batch(request).await.map_err(refused)?;
    match response.into_inner().results.first().and_then(|result| result.outcome.clone()) {
        Some(pb::job_result::Outcome::Success(success)) => Ok(success.job_id),
        other => Err(Refused::Failed(format!("not accepted: {other:?}"))),
    }
}

/// What a refused call says: UNAVAILABLE naming the leader, or anything else.
fn refused(status: tonic::Status) -> Refused {
    let leader = status.metadata().get(LEADER_METADATA).and_then(|value| value.to_str().ok());
    match (status.code(), leader) {
        (tonic::Code::Unavailable, Some(leader)) => Refused::NotLeader(Some(leader.to_string())),
        _ => Refused::Failed(status.message().to_string()),
    }
}

/// A call of `message` that the node asked serves itself (never forwarded to the leader), given
/// [`PROBE_TIMEOUT`].
fn with_metadata<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(PROBE_TIMEOUT);
    request.metadata_mut().insert("sepp-follow-leader", tonic::metadata::MetadataValue::from_static("1"));
    request
}

/// Reserves up to `max_jobs` ready jobs of `queue` (without waiting) at the node behind
/// `client`, leased for `lease`.
pub async fn reserve(
    client: &QueueServiceClient<Channel>,
    queue: &str,
    max_jobs: u32,
    lease: Duration,
) -> Result<Vec<pb::Job>, Refused> {
    let reserve = pb::ReserveRequest {
        queues: vec![queue.to_string()],
        wait_timeout: None,
        lease_duration: Some(prost_types::Duration { seconds: lease.as_secs() as i64, nanos: 0 }),
        worker_id: None,
        max_jobs: Some(max_jobs),
    };
    Ok(client.clone().reserve(with_metadata(reserve)).await.map_err(refused)?.into_inner().jobs)
}

/// Acks `jobs` in one call at the node behind `client`; returns the ids whose ack succeeded.
pub async fn ack(client: &QueueServiceClient<Channel>, jobs: &[pb::Job]) -> Result<Vec<String>, Refused> {
    let acks = jobs
        .iter()
        .map(|job| pb::AckRequest { job_id: job.id.clone(), attempt: job.attempt, worker_id: None })
        .collect();
    let answer = client.clone().ack_batch(with_metadata(pb::AckBatchRequest { acks })).await.map_err(refused)?;
    Ok(jobs
        .iter()
        .zip(answer.into_inner().results)
        .filter(|(_, result)| matches!(result.outcome, Some(pb::ack_result::Outcome::Success(_))))
        .map(|(job, _)| job.id.clone())
        .collect())
}

/// The cluster as the node behind `client` sees it; `None` when it does not answer (within
/// [`PROBE_TIMEOUT`]) or runs no cluster.
pub async fn cluster_info(client: &QueueServiceClient<Channel>) -> Option<pb::ClusterInfo> {
    let mut request = tonic::Request::new(pb::GetServerInfoRequest {});
    request.set_timeout(PROBE_TIMEOUT);
    client.clone().get_server_info(request).await.ok()?.into_inner().cluster
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_section_names_its_id_listener_and_timings() {
        let timings = Timings { heartbeat_interval_ms: 50, election_timeout_ms: 400 };
        let section = cluster_section(2, "127.0.0.1:4100".parse().unwrap(), timings, None);
        assert!(section.starts_with("[cluster]\nnode_id = 2\nlisten_addr = \"127.0.0.1:4100\"\n"), "{section}");
        assert!(section.contains("heartbeat_interval_ms = 50\nelection_timeout_ms = 400\n"), "{section}");
        assert!(!section.contains("snapshot_after_entries"), "{section}");
        let section = cluster_section(2, "127.0.0.1:4100".parse().unwrap(), timings, Some(1_000));
        assert!(section.ends_with("snapshot_after_entries = 1000\n"), "{section}");
    }

    #[test]
    fn a_cluster_costs_the_sum_of_its_cpu_and_its_largest_memory() {
        let sample = |cpu_seconds, rss_bytes, peak_rss_bytes| ProcessSample { cpu_seconds, rss_bytes, peak_rss_bytes };
        let combined = combined(&[sample(1.0, 10, 30), sample(2.5, 40, 50), sample(0.5, 20, 20)]);
        assert_eq!(combined, sample(4.0, 40, 50));
    }
}
