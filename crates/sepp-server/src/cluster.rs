//! Cluster mode's glue between Raft and the committer: the committer serves only while this
//! node leads, and each time it starts to lead it starts from the committed state.
//!
//! [`follow_leadership`] watches Raft's metrics and the committer's own word on whether it
//! serves. When this node leads and the committer does not serve (a new term, or the committer
//! stepped down after a failed proposal), it waits until everything committed before is applied
//! (a linearizable read through Raft), copies the state machine's state and hands it to the
//! committer with a [`ReplicatedLog`]. When another node leads, it tells the committer to follow.
//! Time-driven transitions (lease expiry, promotions, schedules) are thereby the leader's alone:
//! only a serving committer sweeps, and its records reach the others as entries.

use sepp_cluster::{Raft, ReplicatedLog, StateMachine};
use tokio::runtime::Handle;

use sepp_engine::{Command, CommitterHandle};

/// The first wait after a leader failed to confirm its leadership; it doubles with each failure
/// in a row, up to [`CONFIRM_RETRY_MAX`].
const CONFIRM_RETRY_MIN: std::time::Duration = std::time::Duration::from_millis(50);
const CONFIRM_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// Drives `committer` by this node's leadership until Raft or the committer stops.
pub async fn follow_leadership(raft: Raft, machine: StateMachine, committer: CommitterHandle) {
    let id = raft.metrics().borrow().id;
    let mut metrics = raft.metrics();
    let mut serving = committer.leading();
    let mut retry = CONFIRM_RETRY_MIN;
    loop {
        let leads = {
            let metrics = metrics.borrow_and_update();
            metrics.state == openraft::ServerState::Leader && metrics.current_leader == Some(id)
        };
        let serves = *serving.borrow_and_update();
        if leads && !serves {
            if raft.ensure_linearizable().await.is_err() {
                // No quorum confirmed the leadership (a node restarted alone believes it still
                // leads). Raft's metrics change many times a second, so retrying on each change
                // would spin (and log thousands of errors a second): wait, longer each time, and
                // say so once.
                if retry == CONFIRM_RETRY_MIN {
                    tracing::warn!(
                        "Raft elected this node, but no majority confirms it leads (are the other nodes down?); not serving until one does"
                    );
                }
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(CONFIRM_RETRY_MAX);
                if metrics.has_changed().is_err() {
                    return; // Raft stopped.
                }
                continue;
            }
            retry = CONFIRM_RETRY_MIN;
            let state = Box::new(machine.lead_state());
            let log = Box::new(ReplicatedLog::new(raft.clone(), Handle::current(), machine.local_frames()));
            if committer.send(Command::Lead { state, log }).await.is_err() {
                return;
            }
            if serving.wait_for(|serves| *serves).await.is_err() {
                return;
            }
            continue;
        }
        if !leads && serves {
            if committer.send(Command::Follow).await.is_err() {
                return;
            }
            if serving.wait_for(|serves| !*serves).await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() { return },
            changed = serving.changed() => if changed.is_err() { return },
        }
    }
}

/// Keeps `last` at the client address of the node Raft last named leader, until Raft stops.
async fn remember_leaders(
    mut metrics: tokio::sync::watch::Receiver<openraft::RaftMetrics<u64, sepp_cluster::NodeAddr>>,
    last: std::sync::Arc<std::sync::Mutex<Option<String>>>,
) {
    loop {
        let leader = {
            let metrics = metrics.borrow_and_update();
            metrics.current_leader.and_then(|leader| {
                metrics.membership_config.membership().get_node(&leader).map(|node| node.api.clone())
            })
        };
        if let (Some(api), Ok(mut last)) = (leader, last.lock()) {
            *last = Some(api);
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

/// The metadata entry with which a follower names the leader's client address
/// (`host:port`) to a client it refuses.
pub const LEADER_METADATA: &str = "sepp-leader";

/// The request metadata with which a client says it follows [`LEADER_METADATA`] itself: a
/// follower refuses its calls (naming the leader) instead of forwarding them. sepp's own
/// clients send it, so they talk to the leader directly, one hop fewer.
pub const FOLLOW_LEADER_METADATA: &str = "sepp-follow-leader";

/// The metadata a follower adds to a call it forwards (its node id): a node that does not serve
/// refuses such a call instead of forwarding it again.
pub const FORWARDED_METADATA: &str = "sepp-forwarded-by";

/// What the queue service asks of cluster mode before it serves a call: whether this node's
/// committer serves, and where the leader is when it does not.
pub struct ClusterGate {
    id: u64,
    me: sepp_cluster::NodeAddr,
    serving: tokio::sync::watch::Receiver<bool>,
    metrics: tokio::sync::watch::Receiver<openraft::RaftMetrics<u64, sepp_cluster::NodeAddr>>,
    /// The client address of the last node this one saw lead (itself included), kept while
    /// there is no leader, for the refusals to name.
    last_leader: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

impl ClusterGate {
    /// Must be called within a Tokio runtime: a task follows Raft's metrics to remember the
    /// last leader, until Raft stops.
    pub fn new(raft: &Raft, me: sepp_cluster::NodeAddr, committer: &CommitterHandle) -> ClusterGate {
        let metrics = raft.metrics();
        let id = metrics.borrow().id;
        let last_leader = std::sync::Arc::new(std::sync::Mutex::new(None));
        tokio::spawn(remember_leaders(raft.metrics(), last_leader.clone()));
        ClusterGate { id, me, serving: committer.leading(), metrics, last_leader }
    }

    /// `None` while this node serves; otherwise the status a call gets instead: UNAVAILABLE,
    /// naming the leader's client address (in the message and as [`LEADER_METADATA`]) when
    /// another node leads, and the last known leader's in the message when none does. Nothing
    /// of the call ran.
    pub fn refusal(&self) -> Option<tonic::Status> {
        if *self.serving.borrow() {
            return None;
        }
        let metrics = self.metrics.borrow();
        let leader = metrics.current_leader.filter(|leader| *leader != self.id);
        let address = leader.and_then(|leader| metrics.membership_config.membership().get_node(&leader).cloned());
        if let Some(node) = address {
            let mut status = tonic::Status::unavailable(format!(
                "this node is not the cluster's leader; the leader is at {}",
                node.api
            ));
            if let Ok(value) = tonic::metadata::MetadataValue::try_from(node.api.as_str()) {
                status.metadata_mut().insert(LEADER_METADATA, value);
            }
            return Some(status);
        }
        let last = match self.last_leader.lock().map(|last| last.clone()) {
            Ok(Some(api)) if api == self.me.api => "; this node was the last leader it knows of".to_owned(),
            Ok(Some(api)) => format!("; the last known leader was at {api}"),
            _ => String::new(),
        };
        let message = if metrics.current_leader == Some(self.id) {
            if metrics.millis_since_quorum_ack.is_none() {
                format!("Raft elected this node, but no majority confirms it leads (are the other nodes down?){last}")
            } else {
                "this node was just elected the cluster's leader and is not serving yet".to_owned()
            }
        } else {
            format!("the cluster has no leader at the moment (an election is running){last}")
        };
        Some(tonic::Status::unavailable(message))
    }

    /// The status of a call whose answer the committer dropped because this node stopped
    /// leading while the call's records were being committed: they may or may not have been.
    pub fn lost_leadership() -> tonic::Status {
        tonic::Status::aborted(
            "this node stopped leading the cluster while the call was committing; its outcome is unknown",
        )
    }

    /// This node's view of the cluster, as `GetServerInfo` tells it.
    pub fn info(&self) -> crate::proto::v1::ClusterInfo {
        let status = self.status();
        let last = status.last_log_index;
        let members: Vec<crate::proto::v1::ClusterMember> = status
            .members
            .iter()
            .map(|member| {
                let address = member.member.clone().unwrap_or_default();
                let lag = match (status.role.as_str(), last, member.matched_index) {
                    ("leader", Some(last), Some(matched)) => Some(last.saturating_sub(matched)),
                    ("leader", Some(last), None) => Some(last),
                    _ => None,
                };
                crate::proto::v1::ClusterMember {
                    id: address.id,
                    addr: address.api_addr,
                    voter: member.voter,
                    replication_lag: lag,
                }
            })
            .collect();
        let leader_addr = status
            .leader_id
            .and_then(|leader| members.iter().find(|member| member.id == leader))
            .map(|leader| leader.addr.clone())
            .unwrap_or_default();
        crate::proto::v1::ClusterInfo {
            node_id: status.node_id,
            role: status.role,
            term: status.term,
            leader_id: status.leader_id,
            leader_addr,
            last_applied_index: status.last_applied_index,
            members,
        }
    }

    /// This node's view of the cluster.
    pub fn status(&self) -> sepp_cluster::network::proto::ClusterStatus {
        sepp_cluster::membership::status(&self.metrics.borrow(), &self.me)
    }
}

/// The queue service behind the [`ClusterGate`]: while this node does not serve, every call but
/// `GetServerInfo` is forwarded to the leader (when [`Forwarding`] is on and the call allows it)
/// or refused. Without a gate (a single node) calls pass straight through.
#[derive(Clone)]
pub struct LeaderOnly<S> {
    inner: S,
    gate: Option<std::sync::Arc<ClusterGate>>,
    forwarding: Option<std::sync::Arc<Forwarding>>,
}

impl<S> LeaderOnly<S> {
    pub fn new(
        inner: S,
        gate: Option<std::sync::Arc<ClusterGate>>,
        forwarding: Option<std::sync::Arc<Forwarding>>,
    ) -> LeaderOnly<S> {
        LeaderOnly { inner, gate, forwarding }
    }
}

/// Answered by any node, leader or not.
const ANY_NODE: &str = "/sepp.v1.QueueService/GetServerInfo";

type HttpRequest = tonic::codegen::http::Request<tonic::body::Body>;
type HttpResponse = tonic::codegen::http::Response<tonic::body::Body>;
type Forwarded =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<HttpResponse, std::convert::Infallible>> + Send>>;

impl<S> tonic::codegen::Service<HttpRequest> for LeaderOnly<S>
where
    S: tonic::codegen::Service<HttpRequest, Response = HttpResponse, Error = std::convert::Infallible>,
{
    type Response = HttpResponse;
    type Error = std::convert::Infallible;
    /// A refusal is ready at once and a forwarded call is boxed; a call that passes is the
    /// service's own future, unboxed, so a single node's calls cost what they did before
    /// cluster mode.
    type Future = futures_util::future::Either<
        futures_util::future::Either<std::future::Ready<Result<HttpResponse, std::convert::Infallible>>, Forwarded>,
        S::Future,
    >;

    fn poll_ready(&mut self, context: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: HttpRequest) -> Self::Future {
        use futures_util::future::Either::{Left, Right};
        let refusal = match &self.gate {
            Some(gate) if request.uri().path() != ANY_NODE => gate.refusal(),
            _ => None,
        };
        let Some(refusal) = refusal else {
            return Right(self.inner.call(request));
        };
        let headers = request.headers();
        let leader = refusal.metadata().get(LEADER_METADATA).and_then(|value| value.to_str().ok());
        if let (Some(forwarding), Some(leader)) = (&self.forwarding, leader)
            && !headers.contains_key(FOLLOW_LEADER_METADATA)
            && !headers.contains_key(FORWARDED_METADATA)
        {
            return Left(Right(Box::pin(forwarding.clone().forward(leader.to_owned(), request, refusal))));
        }
        Left(Left(std::future::ready(Ok(refusal.into_http()))))
    }
}

/// How many calls this node forwarded to the leader: answered by it (whatever the status), or
/// not (the leader could not be reached), for `sepp.cluster.forwarded_calls`.
pub static FORWARDED_ANSWERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
pub static FORWARDED_UNREACHABLE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How long a follower waits to connect to the leader it forwards a call to.
const FORWARD_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A follower's connection to the leader, for the calls it forwards (`cluster.forward_calls`):
/// one HTTP/2 connection to the current leader's client address, replaced when another node
/// leads. A call goes through as it came (its metadata, deadline and API key included, plus
/// [`FORWARDED_METADATA`]) and its answer streams back unchanged; the leader checks the key and
/// the limits. The body is never buffered here: HTTP/2 flow control bounds what a forwarded call
/// holds in this node's memory.
pub struct Forwarding {
    id: u64,
    leader: std::sync::Mutex<Option<(String, tonic::transport::Channel)>>,
}

impl Forwarding {
    pub fn new(id: u64) -> Forwarding {
        Forwarding { id, leader: std::sync::Mutex::new(None) }
    }

    /// The connection to `leader` (`host:port`), made (lazily) the first time it is named.
    fn channel_to(&self, leader: &str) -> Result<tonic::transport::Channel, tonic::transport::Error> {
        let mut cached = self.leader.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((address, channel)) = cached.as_ref()
            && address == leader
        {
            return Ok(channel.clone());
        }
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{leader}"))?
            .connect_timeout(FORWARD_CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .connect_lazy();
        *cached = Some((leader.to_owned(), channel.clone()));
        Ok(channel)
    }

    /// Sends `request` to `leader` and answers with what it answers; when the leader cannot be
    /// reached, with `refusal` (which names it) and why forwarding failed.
    async fn forward(
        self: std::sync::Arc<Self>,
        leader: String,
        mut request: HttpRequest,
        refusal: tonic::Status,
    ) -> Result<HttpResponse, std::convert::Infallible> {
        use std::sync::atomic::Ordering::Relaxed;
        request.headers_mut().insert(FORWARDED_METADATA, tonic::codegen::http::HeaderValue::from(self.id));
        let answer = match self.channel_to(&leader) {
            Ok(mut channel) => {
                match std::future::poll_fn(|context| tonic::codegen::Service::poll_ready(&mut channel, context)).await {
                    Ok(()) => tonic::codegen::Service::call(&mut channel, request).await,
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        };
        match answer {
            Ok(response) => {
                FORWARDED_ANSWERED.fetch_add(1, Relaxed);
                Ok(response)
            }
            Err(error) => {
                FORWARDED_UNREACHABLE.fetch_add(1, Relaxed);
                let mut status = tonic::Status::unavailable(format!(
                    "{}; forwarding the call to it failed: {error}",
                    refusal.message()
                ));
                *status.metadata_mut() = refusal.metadata().clone();
                Ok(status.into_http())
            }
        }
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for LeaderOnly<S> {
    const NAME: &'static str = S::NAME;
}

/// A running cluster node: Raft, its services for the other nodes and the operator, and the
/// driver that lets the committer serve while this node leads.
pub struct ClusterNode {
    node: sepp_cluster::Node,
    driver: tokio::task::JoinHandle<()>,
    pub gate: std::sync::Arc<ClusterGate>,
    /// Last, so it stops after the node.
    _runtime: RaftRuntime,
}

/// Worker threads of the runtime Raft runs on.
const RAFT_WORKER_THREADS: usize = 2;

/// The Tokio runtime of a node's Raft: its core, its log's writes, the cluster listener and the
/// connections to the other nodes. Kept apart from the runtime that serves clients and runs the
/// committer, so that heartbeats and votes are sent, received and answered on time however busy
/// that one is: a heartbeat that waits behind client calls looks like a dead leader.
struct RaftRuntime(Option<tokio::runtime::Runtime>);

impl RaftRuntime {
    fn start() -> std::io::Result<RaftRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RAFT_WORKER_THREADS)
            .thread_name("sepp-raft")
            .on_thread_park(crate::memory::collect_when_idle)
            .on_thread_unpark(crate::memory::woke)
            .enable_all()
            .build()?;
        Ok(RaftRuntime(Some(runtime)))
    }

    fn handle(&self) -> &Handle {
        self.0.as_ref().expect("the runtime runs until dropped").handle()
    }
}

impl Drop for RaftRuntime {
    fn drop(&mut self) {
        // Without blocking: a node may be dropped within the other runtime.
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why a cluster node could not start.
#[derive(Debug, thiserror::Error)]
pub enum ClusterStartError {
    #[error("could not bind cluster.listen_addr {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("could not start the runtime Raft runs on: {0}")]
    Runtime(std::io::Error),
    #[error("invalid [cluster] settings for Raft: {0}")]
    Settings(String),
    #[error("could not open the cluster's data in {path}: {source}")]
    Open { path: std::path::PathBuf, source: std::io::Error },
    #[error(
        "{path} holds a single node's data, which cluster mode does not use; start a cluster node on an empty server.db_path"
    )]
    SingleNodeData { path: std::path::PathBuf },
}

/// The directory in `db_path` a cluster node keeps its Raft log and snapshot in.
pub fn data_dir(db_path: &std::path::Path) -> std::path::PathBuf {
    db_path.join("cluster")
}

/// How long a connection to the cluster listener may take to send the HTTP/2 preface.
const CLUSTER_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// openraft's `election_timeout_min` and `election_timeout_max` for `election_timeout_ms`, so
/// that a follower stands for election after 3/4 of `election_timeout_ms` to all of it without
/// a heartbeat.
///
/// A follower that has heard a leader does not stand until `election_timeout_max` (openraft's
/// leader lease, during which it also refuses to vote for anyone else) plus its own random
/// timeout (between min and max, drawn once at start) have passed since the last heartbeat. So
/// max is half of `election_timeout_ms` and min a quarter: the first follower to stand waits
/// 3/4 to 1x of it, and the other's lease is over by then, so the first round of voting elects
/// it. (min stays above the heartbeat interval, as openraft requires.)
pub fn election_timeouts(election_timeout_ms: u64, heartbeat_interval_ms: u64) -> (u64, u64) {
    let min = (election_timeout_ms / 4).max(heartbeat_interval_ms + 1);
    let max = (election_timeout_ms / 2).max(min + 1);
    (min, max)
}

/// Entries one AppendEntries reads from the leader's log, at most.
pub const MAX_PAYLOAD_ENTRIES: u64 = 64;

/// openraft's settings from `[cluster]`.
pub fn raft_config(cluster: &sepp_config::ClusterConfig) -> Result<openraft::Config, ClusterStartError> {
    let (min, max) = election_timeouts(cluster.election_timeout_ms, cluster.heartbeat_interval_ms);
    let config = openraft::Config {
        cluster_name: "sepp".into(),
        heartbeat_interval: cluster.heartbeat_interval_ms,
        election_timeout_min: min,
        election_timeout_max: max,
        // A snapshot of a large queue goes in chunks; each gets this long.
        install_snapshot_timeout: 10_000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(cluster.snapshot_after_entries),
        max_in_snapshot_log_to_keep: cluster.snapshot_after_entries.min(1_000),
        // Entries the leader reads from its log for one AppendEntries. The call carries at most
        // `sepp_cluster::network::MAX_APPEND_BYTES` of them and leaves the rest for the next, so
        // reading openraft's default of 300 entries of a large cycle each (tens of megabytes)
        // would be read again and again, and held in memory meanwhile.
        max_payload_entries: MAX_PAYLOAD_ENTRIES,
        ..openraft::Config::default()
    };
    config.validate().map_err(|error| ClusterStartError::Settings(error.to_string()))
}

impl ClusterNode {
    /// Starts node `[cluster] node_id` on `<db_path>/cluster`, serving the other nodes on
    /// `cluster.listen_addr`, and the driver that hands `committer` the state while it leads.
    /// `api` is where the queue service listens (its port, when the configuration says 0).
    pub async fn start(
        boot: &sepp_config::Config,
        api: std::net::SocketAddr,
        fresh: sepp_cluster::FreshState,
        committer: CommitterHandle,
    ) -> Result<ClusterNode, ClusterStartError> {
        let cluster = &boot.cluster;
        let id = cluster.node_id.expect("cluster mode has a node id");
        let db_path = &boot.server.db_path;
        if sepp_log::DurableLog::holds_log(db_path) {
            return Err(ClusterStartError::SingleNodeData { path: db_path.clone() });
        }
        let dir = data_dir(db_path);
        let config = std::sync::Arc::new(raft_config(cluster)?);
        let addr = cluster.listen_addr;
        let options = sepp_cluster::LogStoreOptions {
            sync: boot.storage.persist_mode != sepp_config::PersistMode::Buffer,
            ..sepp_cluster::LogStoreOptions::default()
        };
        // A port of 0 in the configuration is the port bound (tests run nodes that way).
        let advertised = |given: Option<&String>, configured: std::net::SocketAddr, bound: std::net::SocketAddr| {
            given.cloned().unwrap_or_else(|| if configured.port() == 0 { bound } else { configured }.to_string())
        };
        let api = advertised(cluster.api_addr.as_ref(), boot.server.listen_addr, api);
        let (advertise_addr, max_connections) = (cluster.advertise_addr.clone(), cluster.max_connections);
        let runtime = RaftRuntime::start().map_err(ClusterStartError::Runtime)?;
        // Raft, its listener and its connections to the other nodes run on their own runtime.
        let starting = {
            let dir = dir.clone();
            runtime.handle().spawn(async move {
                let listener =
                    crate::net::bind(addr).await.map_err(|source| ClusterStartError::Bind { addr, source })?;
                let bound = listener.local_addr().map_err(|source| ClusterStartError::Bind { addr, source })?;
                let acceptor = crate::net::Acceptor::new(listener, crate::net::Listener::Cluster, max_connections);
                let incoming = crate::net::grpc_incoming(acceptor, None, CLUSTER_HANDSHAKE_TIMEOUT);
                let me = sepp_cluster::NodeAddr { raft: advertised(advertise_addr.as_ref(), addr, bound), api };
                let node = sepp_cluster::Node::start_on(id, me.clone(), &dir, config, fresh, incoming, options)
                    .await
                    .map_err(|source| ClusterStartError::Open { path: dir.clone(), source })?;
                Ok::<_, ClusterStartError>((node, me, bound))
            })
        };
        let (node, me, bound) =
            starting.await.map_err(|error| ClusterStartError::Runtime(std::io::Error::other(error)))??;
        let gate = std::sync::Arc::new(ClusterGate::new(&node.raft, me.clone(), &committer));
        let initialized = node.restored || gate.status().initialized;
        tracing::info!(
            node_id = id,
            addr = %bound,
            advertise_addr = %me.raft,
            api_addr = %me.api,
            initialized,
            "cluster node listening"
        );
        if initialized {
            tracing::info!("this node belongs to a cluster and rejoins it");
        } else {
            tracing::info!(
                "this node belongs to no cluster yet: run `sepp cluster init` on one node, or add it to a running cluster"
            );
        }
        let driver = tokio::spawn(follow_leadership(node.raft.clone(), node.machine.clone(), committer));
        Ok(ClusterNode { node, driver, gate, _runtime: runtime })
    }

    /// Stops Raft and the cluster listener; what the node made durable stays in its directory.
    pub async fn stop(self) {
        self.driver.abort();
        if let Err(error) = self.node.stop().await {
            tracing::warn!(%error, "the cluster node did not stop cleanly");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::election_timeouts;

    /// A follower stands `max` (the lease) plus its own timeout (min..max) after the last
    /// heartbeat; the other follower votes once its lease (`max`) is over.
    fn stands_after(election_timeout_ms: u64, heartbeat_interval_ms: u64) -> (u64, u64, u64) {
        let (min, max) = election_timeouts(election_timeout_ms, heartbeat_interval_ms);
        assert!(heartbeat_interval_ms < min && min < max, "openraft wants heartbeat < min < max: {min} {max}");
        (max + min, max + max, max)
    }

    #[test]
    fn a_follower_stands_after_three_quarters_to_all_of_the_election_timeout() {
        assert_eq!(stands_after(1_000, 100), (750, 1_000, 500));
        assert_eq!(stands_after(400, 50), (300, 400, 200));
    }

    #[test]
    fn the_first_to_stand_finds_the_others_lease_over() {
        for (timeout, heartbeat) in [(1_000, 100), (400, 50), (101, 100), (2, 1), (300, 100), (60_000, 100)] {
            let (earliest, _, lease) = stands_after(timeout, heartbeat);
            assert!(earliest > lease, "{timeout}/{heartbeat}: stands at {earliest}, lease {lease}");
        }
    }

    #[test]
    fn a_timeout_close_to_the_heartbeat_keeps_openraft_valid() {
        let cluster = sepp_config::ClusterConfig {
            election_timeout_ms: 150,
            heartbeat_interval_ms: 100,
            ..sepp_config::ClusterConfig::default()
        };
        let config = super::raft_config(&cluster).expect("valid");
        assert_eq!((config.election_timeout_min, config.election_timeout_max), (101, 102));
    }
}
