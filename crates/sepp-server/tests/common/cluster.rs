//! Clusters of real `sepp` binaries on loopback: each node a [`TestServer`] with its own data
//! directory, started on port 0 and then pinned to the ports it got (so it comes back on them
//! after a kill), made a cluster with the real `sepp cluster init`.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use sepp_cluster::network::proto::membership_client::MembershipClient;
use sepp_cluster::network::proto::{ClusterStatus, StatusRequest};
use sepp_server::proto::v1 as pb;
use tonic::transport::Channel;

use super::netns::Netns;
use super::{QueueServiceClient, STARTUP_TIMEOUT, TestServer, loopback_port, sepp_command};

/// Raft timings of the nodes: the defaults (heartbeats every 100 ms, elections after 0.6 to 0.8 s
/// without one), which a loaded machine running the whole suite does not mistake for a failure.
const TIMINGS: &str = "";

/// The metadata with which a caller follows the leader itself: a follower refuses its calls
/// (naming the leader) instead of forwarding them.
pub const FOLLOW_LEADER: &str = "sepp-follow-leader";

/// How long a cluster may take to elect a leader that serves.
pub const ELECTION_TIMEOUT: Duration = Duration::from_secs(30);

pub struct TestCluster {
    /// Node `id` is `nodes[id - 1]`.
    pub nodes: Vec<TestServer>,
    /// The cluster address of each node, in the same order.
    pub raft: Vec<String>,
}

/// Starts node `id` with `extra` (a TOML fragment without `[cluster]`) and `cluster_keys`
/// (lines of its `[cluster]` section), pins it to the ports it bound, and returns it with its
/// cluster address.
pub fn start_node(id: u64, extra: &str, cluster_keys: &str) -> (TestServer, String) {
    let fragment =
        format!("{extra}\n[cluster]\nnode_id = {id}\nlisten_addr = \"127.0.0.1:0\"\n{TIMINGS}{cluster_keys}\n");
    let server = TestServer::start(&fragment);
    let line = server
        .stdout()
        .wait_for("cluster node listening", STARTUP_TIMEOUT)
        .unwrap_or_else(|| panic!("node {id} did not log `cluster node listening`\n{}", server.logs()));
    let raft_port = loopback_port(&line).unwrap_or_else(|| panic!("no 127.0.0.1:<port> in {line:?}"));
    pin_ports(server.config_path(), server.port(), raft_port);
    (server, format!("127.0.0.1:{raft_port}"))
}

/// Rewrites a node's config file with the ports it bound in place of 0.
fn pin_ports(path: &Path, api: u16, raft: u16) {
    let text = std::fs::read_to_string(path).expect("read the node's config");
    let mut config: toml::Table = text.parse().expect("the node's config is TOML");
    let mut set = |section: &str, port: u16| {
        let table = config.get_mut(section).and_then(toml::Value::as_table_mut).expect("the section exists");
        table.insert("listen_addr".into(), toml::Value::String(format!("127.0.0.1:{port}")));
    };
    set("server", api);
    set("cluster", raft);
    super::replace_file(path, &toml::to_string(&config).expect("config serializes"));
}

/// Runs `sepp` with `args` (a client command: `cluster ...`) and returns what it printed.
pub fn sepp(args: &[&str]) -> Output {
    sepp_command().args(args).output().expect("run sepp")
}

impl TestCluster {
    /// `count` nodes with `extra` and `cluster_keys` (see [`start_node`]), made one cluster.
    pub fn start(count: u64, extra: &str, cluster_keys: &str) -> TestCluster {
        let (nodes, raft) = (1..=count).map(|id| start_node(id, extra, cluster_keys)).unzip();
        TestCluster::init(nodes, raft)
    }

    /// A cluster of one node in each of `netns`'s namespaces: Raft on the cluster network,
    /// clients on the client network.
    pub fn start_in(netns: &Netns, extra: &str) -> TestCluster {
        let (nodes, raft) = (1..=netns.count())
            .map(|id| {
                let (api, raft) = (netns.api_ip(id), netns.cluster_ip(id));
                let fragment = format!(
                    "{extra}\n[server]\nlisten_addr = \"{api}:50051\"\n\
                     [cluster]\nnode_id = {id}\nlisten_addr = \"{raft}:50052\"\n{TIMINGS}"
                );
                (TestServer::start_in_netns(&netns.name(id), &api, &fragment), format!("{raft}:50052"))
            })
            .unzip();
        TestCluster::init(nodes, raft)
    }

    /// Makes `nodes` one cluster with `sepp cluster init`.
    fn init(nodes: Vec<TestServer>, raft: Vec<String>) -> TestCluster {
        let mut args = vec!["cluster", "init", "--node", raft[0].as_str()];
        for peer in &raft[1..] {
            args.extend(["--peer", peer.as_str()]);
        }
        let init = sepp(&args);
        assert!(init.status.success(), "sepp cluster init failed: {}", String::from_utf8_lossy(&init.stderr));
        TestCluster { nodes, raft }
    }

    pub fn node(&self, id: u64) -> &TestServer {
        &self.nodes[id as usize - 1]
    }

    pub fn node_mut(&mut self, id: u64) -> &mut TestServer {
        &mut self.nodes[id as usize - 1]
    }

    /// The ids of the nodes whose process runs.
    pub fn running(&self) -> Vec<u64> {
        (1..=self.nodes.len() as u64).filter(|id| self.node(*id).is_running()).collect()
    }

    /// Node `id`'s own view of the cluster (with its state's fingerprint when asked).
    pub async fn status(&self, id: u64, fingerprint: bool) -> Result<ClusterStatus, String> {
        let addr = format!("http://{}", self.raft[id as usize - 1]);
        let channel = Channel::from_shared(addr).unwrap().connect().await.map_err(|error| error.to_string())?;
        let status = MembershipClient::new(channel).status(StatusRequest { fingerprint }).await;
        status.map(tonic::Response::into_inner).map_err(|status| status.to_string())
    }

    /// Waits until a running node serves writes: an enqueue of one job to `queue` is
    /// acknowledged. Returns that node, the job's id, and how long it took.
    pub async fn serving_leader(&self, queue: &str) -> (u64, String, Duration) {
        self.serving_leader_among(&self.running(), queue).await
    }

    /// Like [`TestCluster::serving_leader`], asking only the nodes `among`.
    pub async fn serving_leader_among(&self, among: &[u64], queue: &str) -> (u64, String, Duration) {
        let started = Instant::now();
        loop {
            for id in among.iter().copied() {
                if let Some(job_id) = self.try_enqueue(id, queue).await {
                    return (id, job_id, started.elapsed());
                }
            }
            assert!(started.elapsed() < ELECTION_TIMEOUT, "no node served writes within {ELECTION_TIMEOUT:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Enqueues one job to `queue` on node `id`; its id when the node acknowledged it.
    pub async fn try_enqueue(&self, id: u64, queue: &str) -> Option<String> {
        let channel = Channel::from_shared(self.node(id).addr()).unwrap().connect().await.ok()?;
        let mut client = QueueServiceClient::new(channel);
        let job = super::crash_load::new_job(queue, b"probe");
        let mut request = tonic::Request::new(pb::EnqueueBatchRequest { jobs: vec![job] });
        request.set_timeout(Duration::from_secs(2));
        // Served here, not forwarded by a follower to the leader.
        request.metadata_mut().insert(FOLLOW_LEADER, tonic::metadata::MetadataValue::from_static("1"));
        let response = client.enqueue_batch(request).await.ok()?.into_inner();
        match &response.results.first()?.outcome {
            Some(pb::job_result::Outcome::Success(success)) => Some(success.job_id.clone()),
            _ => None,
        }
    }

    /// Waits until every running node has applied at least `index`, and returns their state
    /// fingerprints by node, taken at the same applied entry.
    pub async fn fingerprints_at(&self, index: u64) -> Vec<(u64, u64)> {
        self.fingerprints_among(&self.running(), index).await
    }

    /// Like [`TestCluster::fingerprints_at`], of the nodes `among`.
    pub async fn fingerprints_among(&self, among: &[u64], index: u64) -> Vec<(u64, u64)> {
        let started = Instant::now();
        loop {
            let mut found = Vec::new();
            for id in among.iter().copied() {
                if let Ok(status) = self.status(id, true).await
                    && status.fingerprint_index.is_some_and(|applied| applied >= index)
                {
                    found.push((id, status.fingerprint_index, status.fingerprint.unwrap_or_default()));
                }
            }
            let same_index = found.windows(2).all(|pair| pair[0].1 == pair[1].1);
            if found.len() == among.len() && same_index {
                return found.into_iter().map(|(id, _, fingerprint)| (id, fingerprint)).collect();
            }
            assert!(started.elapsed() < ELECTION_TIMEOUT, "the nodes did not all apply entry {index}: {found:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
