//! A seeded simulation of a cluster: five nodes on real Raft logs and state machines in
//! temporary directories, talking through a simulated network that delays, drops and cuts
//! messages as the seed says, while nodes crash (stop, losing everything in memory) and come
//! back from their directories, and a client writes through whichever node leads. Time is
//! tokio's paused clock, so elections and timeouts take no real time. At the end the network is
//! healed and every node started: all nodes must apply the same state, holding every job whose
//! write was acknowledged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::SnapshotPolicy;
use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use sepp_cluster::{Frame, LogStore, LogStoreOptions, NodeAddr, Raft, StateMachine, TypeConfig};
use sepp_core::{JobId, NewJob, Policy, State, StorageRules};

const NODES: u64 = 5;
const STEPS: usize = 120;

fn fresh() -> State {
    State::new(Arc::new(Policy::default()), StorageRules::default())
}

/// xorshift64*: the simulation's only source of choices.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound.max(1)
    }
}

/// What the network does: which nodes run, which directed links are cut, how long messages take.
struct Net {
    rafts: BTreeMap<u64, Raft>,
    cut: BTreeSet<(u64, u64)>,
    rng: Rng,
    /// A message is lost with this chance in a hundred.
    loss_percent: u64,
}

#[derive(Clone)]
struct Router {
    from: u64,
    net: Arc<Mutex<Net>>,
}

impl Router {
    /// The target's Raft when the link is up and the message not lost, after its delay.
    async fn deliver(&self, to: u64) -> Result<Raft, Unreachable> {
        let delay_ms = {
            let mut net = self.net.lock().unwrap();
            net.rng.below(20)
        };
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        let mut net = self.net.lock().unwrap();
        let lost = net.rng.below(100) < net.loss_percent;
        let raft = net.rafts.get(&to).cloned();
        match raft {
            Some(raft) if !lost && !net.cut.contains(&(self.from, to)) => Ok(raft),
            _ => Err(Unreachable::new(&std::io::Error::other(format!("{} cannot reach {to}", self.from)))),
        }
    }

    /// Whether the answer from `to` comes back.
    fn returns(&self, to: u64) -> Result<(), Unreachable> {
        let mut net = self.net.lock().unwrap();
        let lost = net.rng.below(100) < net.loss_percent;
        if lost || net.cut.contains(&(to, self.from)) {
            return Err(Unreachable::new(&std::io::Error::other(format!("the answer of {to} was lost"))));
        }
        Ok(())
    }
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, _node: &NodeAddr) -> Peer {
        Peer { router: self.clone(), target }
    }
}

struct Peer {
    router: Router,
    target: u64,
}

impl Peer {
    // openraft's own error type, as its network trait returns it.
    #[allow(clippy::result_large_err)]
    fn answer<T, E: std::error::Error>(
        &self,
        result: Result<T, RaftError<u64, E>>,
    ) -> Result<T, RPCError<u64, NodeAddr, RaftError<u64, E>>> {
        self.router.returns(self.target).map_err(RPCError::Unreachable)?;
        result.map_err(|error| RPCError::RemoteError(RemoteError::new(self.target, error)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64>>> {
        let raft = self.router.deliver(self.target).await.map_err(RPCError::Unreachable)?;
        let result = raft.append_entries(rpc).await;
        self.answer(result)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64, InstallSnapshotError>>> {
        let raft = self.router.deliver(self.target).await.map_err(RPCError::Unreachable)?;
        let result = raft.install_snapshot(rpc).await;
        self.answer(result)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64>>> {
        let raft = self.router.deliver(self.target).await.map_err(RPCError::Unreachable)?;
        let result = raft.vote(rpc).await;
        self.answer(result)
    }
}

fn config() -> Arc<openraft::Config> {
    let config = openraft::Config {
        snapshot_policy: SnapshotPolicy::LogsSinceLast(15),
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..sepp_cluster::local::quick_config("simulation")
    };
    Arc::new(config.validate().expect("a valid Raft configuration"))
}

struct Cluster {
    net: Arc<Mutex<Net>>,
    dirs: Vec<PathBuf>,
    machines: BTreeMap<u64, StateMachine>,
}

impl Cluster {
    async fn start(&mut self, id: u64) {
        let dir = &self.dirs[id as usize - 1];
        let store = LogStore::open(dir, LogStoreOptions::default()).expect("open the Raft log");
        let machine = StateMachine::open(dir, Arc::new(fresh)).expect("open the state machine");
        let router = Router { from: id, net: self.net.clone() };
        let raft = Raft::new(id, config(), router, store, machine.clone()).await.expect("start Raft");
        self.net.lock().unwrap().rafts.insert(id, raft);
        self.machines.insert(id, machine);
    }

    /// Stops `id` as a crash would: whatever it held in memory is gone, its directory stays.
    async fn crash(&mut self, id: u64) {
        let raft = self.net.lock().unwrap().rafts.remove(&id);
        if let Some(raft) = raft {
            raft.shutdown().await.expect("stop Raft");
        }
        self.machines.remove(&id);
    }

    fn running(&self) -> Vec<u64> {
        self.net.lock().unwrap().rafts.keys().copied().collect()
    }

    fn raft(&self, id: u64) -> Option<Raft> {
        self.net.lock().unwrap().rafts.get(&id).cloned()
    }

    /// The node that a running node says leads, when it runs too.
    fn leader(&self) -> Option<Raft> {
        let rafts: Vec<Raft> = self.net.lock().unwrap().rafts.values().cloned().collect();
        rafts.iter().find_map(|raft| raft.metrics().borrow().current_leader).and_then(|leader| self.raft(leader))
    }
}

fn enqueue_frame(generator: &mut State, id: JobId) -> Frame {
    let job = NewJob { queue: "q".into(), job_type: "t".into(), ..NewJob::default() };
    let mut records = Vec::new();
    generator.enqueue(0, vec![(id, job)], &mut records);
    let mut frame = Vec::new();
    sepp_log::frame::encode(&records, &mut frame, &mut Vec::new());
    Frame(frame)
}

/// Runs the simulation of `seed`; returns how many writes were acknowledged.
async fn simulate(seed: u64, root: &Path) -> usize {
    let net = Arc::new(Mutex::new(Net {
        rafts: BTreeMap::new(),
        cut: BTreeSet::new(),
        rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
        loss_percent: 5,
    }));
    let dirs: Vec<PathBuf> = (1..=NODES).map(|id| root.join(format!("node-{id}"))).collect();
    let mut cluster = Cluster { net: net.clone(), dirs, machines: BTreeMap::new() };
    for id in 1..=NODES {
        cluster.start(id).await;
    }
    let members: BTreeMap<u64, NodeAddr> =
        (1..=NODES).map(|id| (id, NodeAddr { raft: format!("node-{id}"), api: format!("node-{id}") })).collect();
    cluster.raft(1).unwrap().initialize(members).await.expect("initialize");

    let mut choose = Rng(seed | 1);
    let mut generator = fresh();
    let mut acknowledged = Vec::new();
    let mut attempted = BTreeSet::new();
    let mut faults = Vec::new();
    for _ in 0..STEPS {
        match choose.below(20) {
            0..=11 => {
                let Some(leader) = cluster.leader() else { continue };
                let id = JobId::from_u64_pair(seed, attempted.len() as u64);
                attempted.insert(id);
                let written = tokio::time::timeout(
                    Duration::from_secs(3),
                    leader.client_write(enqueue_frame(&mut generator, id)),
                )
                .await;
                if let Ok(Ok(_)) = written {
                    acknowledged.push(id);
                }
            }
            12 | 13 => {
                let running = cluster.running();
                if running.len() > 1 {
                    let id = running[choose.below(running.len() as u64) as usize];
                    faults.push(format!("crash {id}"));
                    cluster.crash(id).await;
                }
            }
            14 | 15 => {
                let stopped: Vec<u64> = (1..=NODES).filter(|id| !cluster.running().contains(id)).collect();
                if !stopped.is_empty() {
                    let id = stopped[choose.below(stopped.len() as u64) as usize];
                    faults.push(format!("restart {id}"));
                    cluster.start(id).await;
                }
            }
            16 | 17 => {
                // Cut one node off from every other, both ways.
                let id = choose.below(NODES) + 1;
                faults.push(format!("isolate {id}"));
                let mut net = net.lock().unwrap();
                for other in (1..=NODES).filter(|other| *other != id) {
                    net.cut.insert((id, other));
                    net.cut.insert((other, id));
                }
            }
            _ => {
                faults.push("heal".into());
                net.lock().unwrap().cut.clear();
            }
        }
        tokio::time::sleep(Duration::from_millis(choose.below(300))).await;
    }

    // Heal everything, start every node, and let one last acknowledged write settle.
    net.lock().unwrap().cut.clear();
    net.lock().unwrap().loss_percent = 0;
    for id in 1..=NODES {
        if !cluster.running().contains(&id) {
            cluster.start(id).await;
        }
    }
    let last = loop {
        if let Some(leader) = cluster.leader() {
            let id = JobId::from_u64_pair(seed, u64::MAX);
            if let Ok(Ok(written)) =
                tokio::time::timeout(Duration::from_secs(3), leader.client_write(enqueue_frame(&mut generator, id)))
                    .await
            {
                acknowledged.push(id);
                break written.log_id.index;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for id in 1..=NODES {
        let raft = cluster.raft(id).unwrap();
        raft.wait(Some(Duration::from_secs(60)))
            .applied_index_at_least(Some(last), "applied the last write")
            .await
            .unwrap_or_else(|error| panic!("seed {seed}: node {id} did not catch up ({error}); faults: {faults:?}"));
    }

    let fingerprints: BTreeMap<u64, String> =
        cluster.machines.iter().map(|(id, machine)| (*id, machine.state_fingerprint())).collect();
    let first = fingerprints.values().next().unwrap();
    assert!(
        fingerprints.values().all(|fingerprint| fingerprint == first),
        "seed {seed}: the nodes' states differ; faults: {faults:?}"
    );
    for (node, machine) in &cluster.machines {
        let lost: Vec<&JobId> =
            acknowledged.iter().filter(|id| machine.with_state(|state| state.live_job(id).is_none())).collect();
        assert!(lost.is_empty(), "seed {seed}: node {node} lost acknowledged jobs {lost:?}; faults: {faults:?}");
    }
    let snapshots =
        cluster.machines.keys().filter(|id| cluster.raft(**id).unwrap().metrics().borrow().snapshot.is_some()).count();
    eprintln!(
        "seed {seed}: {} of {} writes acknowledged, {} faults ({} crashes), {snapshots} nodes with a snapshot",
        acknowledged.len(),
        attempted.len(),
        faults.len(),
        faults.iter().filter(|fault| fault.starts_with("crash")).count()
    );
    for id in 1..=NODES {
        cluster.crash(id).await;
    }
    acknowledged.len()
}

#[test]
fn a_cluster_under_crashes_partitions_loss_and_delays_agrees_and_keeps_every_acknowledged_write() {
    let seeds: Vec<u64> = match std::env::var("SEPP_SIMULATION_SEEDS") {
        Ok(seeds) => seeds.split(',').map(|seed| seed.trim().parse().expect("a seed")).collect(),
        Err(_) => (1..=8).collect(),
    };
    let mut acknowledged = 0;
    for seed in &seeds {
        let root = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        acknowledged += runtime.block_on(simulate(*seed, root.path()));
    }
    // Faults may stall a single seed for long stretches, but not every seed: the cluster must
    // make progress on the whole.
    assert!(acknowledged >= seeds.len() * STEPS / 10, "only {acknowledged} writes went through");
}
