//! `sepp-bench failover`: how long a three-node cluster of our server acknowledges no write
//! when its leader dies, and that it loses no acknowledged job meanwhile.
//!
//! A steady producer load runs against the cluster throughout: a few connections, each with
//! its own channel to every node, enqueueing one job per call at whichever node serves (a
//! refused call moves on to the node a follower names, or to the next one). Then, `kills`
//! times: SIGKILL the leader; the failover is the time from the signal until a write is
//! acknowledged again by any node (a probe asks each surviving node in turn, every few
//! milliseconds); the killed node starts again on its ports and data directory, and the cycle
//! waits until it follows the new leader and has caught up, then lets the load run a while. At
//! the end the producers stop and the leader is drained: every acknowledged job must come out.
//!
//! Besides: workers can consume beside the producers (reserving and acking at whichever node
//! serves; what they ack counts as come out); a backlog can be queued before the load starts
//! (the failover of a full queue); the
//! leader's Raft term is read after each failover and before the next kill, so an election no
//! kill caused (a heartbeat late under load) is counted; and the failover times are checked
//! against a bound (median and max), which the command fails on.

use std::collections::HashSet;
use std::fmt::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sepp_server::proto::v1 as pb;
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

use crate::BenchError;
use crate::cluster::{self, Cluster, DEFAULT_TIMINGS, NodeSetup, Refused};
use crate::report::{median, rate};
use crate::results::Machine;
use crate::server::PersistMode;

/// Nodes of the cluster.
pub const NODES: u64 = 3;

/// How long a producer waits after a refused or failed call before the next one.
const RETRY_PAUSE: Duration = Duration::from_millis(5);

/// How far (in log entries) a restarted node may trail the leader's log to count as back.
const CAUGHT_UP_ENTRIES: u64 = 100;

/// How long a restarted node may take to follow the leader and catch up.
const REJOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the processes idle after the backlog (every node having applied all of it) before
/// their memory is read: what they hold with the backlog queued, not what was in flight while it
/// was applied (the peak says that). The allocator gives freed pages back a moment after they
/// are freed.
const SETTLE: Duration = Duration::from_secs(2);

/// Jobs per Reserve and AckBatch call of the final drain (the default batch limit).
const DRAIN_BATCH: u32 = 256;

/// Jobs a worker reserves per call (and acks in one AckBatch), and their lease: a job whose ack
/// died with the leader is ready again after it, for the final drain.
const WORKER_BATCH: u32 = 64;
const WORKER_LEASE: Duration = Duration::from_secs(2);

/// How long the final drain goes on without finding a job while acknowledged jobs are still
/// unaccounted for (some may be leased still, by a worker whose ack failed).
const DRAIN_PATIENCE: Duration = Duration::from_secs(6);

/// Jobs per EnqueueBatch call of the backlog, and backlog calls in flight at once.
const BACKLOG_BATCH: usize = 256;
const BACKLOG_CALLS: usize = 4;

/// The failover times a run must stay within.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Bound {
    pub median_ms: f64,
    pub max_ms: f64,
}

/// The bound of the default timings: a median of 1.5 s, none over 3 s.
pub const DEFAULT_BOUND: Bound = Bound { median_ms: 1_500.0, max_ms: 3_000.0 };

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Our `sepp` binary.
    pub binary: PathBuf,
    /// Of every node (and so of its Raft log).
    pub persist_mode: PersistMode,
    /// How many times the leader is killed.
    pub kills: usize,
    /// Producer connections, each enqueueing one job per call.
    pub connections: usize,
    /// Worker connections, each reserving and acking jobs as they come.
    pub workers: usize,
    /// Load between a rejoined node and the next kill (and before the first).
    pub load_between: Duration,
    /// Jobs queued before the load starts.
    pub backlog_jobs: u64,
    /// Whether a single node gets the same backlog first, for its memory beside the nodes'.
    pub single_reference: bool,
    /// Whether a follower is replaced as after a lost disk: stopped and removed from the
    /// cluster before the backlog, then started with an empty data directory and added again
    /// after it, to catch up (from the leader's snapshot, once the leader has dropped the log).
    pub catch_up: bool,
    /// `cluster.snapshot_after_entries` of every node (the configuration's default when `None`).
    pub snapshot_after_entries: Option<u64>,
    pub bound: Bound,
}

/// A follower replaced while the backlog was queued: started empty, added, and caught up.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CatchUp {
    /// The follower (node id).
    pub node: u64,
    /// Jobs queued while it was down.
    pub jobs: u64,
    /// From its new start until it was a voter again (`sepp cluster add` returned) following
    /// the leader within [`CAUGHT_UP_ENTRIES`] entries.
    pub seconds: f64,
    /// The line it logged on installing the leader's snapshot; `None` when it caught up from
    /// the log alone.
    pub snapshot_installed: Option<String>,
    /// Its resident memory once caught up, and the peak over its whole run since the start.
    pub rss_bytes: u64,
    pub peak_rss_bytes: u64,
}

/// The memory of the running processes at one point of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MemoryPoint {
    /// When it was taken ("after the backlog", "after kill 1", ...).
    pub when: String,
    /// Jobs acknowledged by then, and not yet acked by a worker.
    pub queued: u64,
    /// One per running process: its name ("node 2, leader", "single node"), resident set and
    /// peak resident set (VmRSS and VmHWM) in bytes.
    pub processes: Vec<(String, u64, u64)>,
}

/// What a failover run measured, as written to `failover.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FailoverResults {
    pub machine: Machine,
    pub persist_mode: String,
    pub nodes: u64,
    pub heartbeat_interval_ms: u64,
    pub election_timeout_ms: u64,
    pub producer_connections: usize,
    #[serde(default)]
    pub worker_connections: usize,
    pub load_between_seconds: f64,
    /// Jobs queued before the load started (and drained at the end with the rest).
    #[serde(default)]
    pub backlog_jobs: u64,
    /// One entry per SIGKILL of the leader, in order.
    pub kills: Vec<Kill>,
    /// Elections no kill caused: the rise of the leader's term over each stretch of load (from
    /// the first leader, or a failover, to the next kill or the end), summed.
    #[serde(default)]
    pub unplanned_elections: u64,
    /// The bound the failover times were checked against.
    #[serde(default)]
    pub bound: Option<Bound>,
    /// The nodes' memory after the backlog and at the end of each cycle, and a single node's
    /// with the same backlog when asked for.
    #[serde(default)]
    pub memory: Vec<MemoryPoint>,
    /// The follower that caught up after the backlog, when the plan asked for one.
    #[serde(default)]
    pub catch_up: Option<CatchUp>,
    /// Enqueues a node acknowledged over the run, the producers' and the probes'.
    pub acknowledged: u64,
    /// Enqueue calls refused or failed (by a follower, a dead node, a leader not serving yet);
    /// each producer moved on and sent a new job.
    pub failed_calls: u64,
    /// Distinct jobs the workers acked during the run.
    #[serde(default)]
    pub consumed: u64,
    /// Distinct jobs drained (reserved and acked) from the leader at the end.
    pub drained: u64,
    /// Acknowledged jobs neither the workers nor the drain found, whose ack call failed (the
    /// node died before it answered): the ack may have been committed.
    #[serde(default)]
    pub maybe_acked: u64,
    /// Acknowledged jobs neither the workers nor the drain found otherwise: 0 when nothing
    /// acknowledged was lost.
    pub missing: u64,
    /// Consumed or drained jobs that were never acknowledged: calls that failed (the leader died before it
    /// answered) but whose job had been committed.
    pub unacknowledged_stored: u64,
}

/// One SIGKILL of the leader.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Kill {
    /// The node killed (its `cluster.node_id`).
    pub killed_node: u64,
    /// The node that acknowledged the first write after the kill.
    pub new_leader: u64,
    /// The new leader's Raft term (0 when it did not say).
    pub term: u64,
    /// From the SIGKILL until a surviving node said it leads (GetServerInfo, polled every few
    /// milliseconds); `None` when no poll saw it before the write was acknowledged.
    pub elected_seconds: Option<f64>,
    /// From the SIGKILL until a write was acknowledged again.
    pub failover_seconds: f64,
    /// From the killed node's new start until it followed the new leader, caught up.
    pub rejoin_seconds: f64,
    /// Enqueues acknowledged over the run when the leader was killed.
    pub acknowledged_at_kill: u64,
    /// The same at the end of this cycle (before the next kill, or the drain).
    pub acknowledged_after: u64,
    /// The leader's term before the next kill (or the drain): above `term` when an election no
    /// kill caused happened meanwhile.
    #[serde(default)]
    pub term_after: u64,
}

impl FailoverResults {
    /// The failover times in seconds: median, p90 (nearest rank) and max; `None` without kills.
    pub fn failover_summary(&self) -> Option<(f64, f64, f64)> {
        summary(self.kills.iter().map(|kill| kill.failover_seconds).collect())
    }

    /// The same of the times until a new leader was seen, over the kills where one was.
    pub fn elected_summary(&self) -> Option<(f64, f64, f64)> {
        summary(self.kills.iter().filter_map(|kill| kill.elected_seconds).collect())
    }

    /// Why the run is outside its bound: a median or a max over it, or an election no kill
    /// caused; `None` when within (or without a bound).
    pub fn outside_bound(&self) -> Option<String> {
        let bound = self.bound?;
        let mut why = Vec::new();
        if let Some((median, _, max)) = self.failover_summary() {
            if median * 1e3 > bound.median_ms {
                why.push(format!("median failover {:.0} ms over {:.0} ms", median * 1e3, bound.median_ms));
            }
            if max * 1e3 > bound.max_ms {
                why.push(format!("a failover of {:.0} ms over {:.0} ms", max * 1e3, bound.max_ms));
            }
        }
        if self.unplanned_elections > 0 {
            why.push(format!("{} election(s) no kill caused", self.unplanned_elections));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// The median, p90 (nearest rank) and max of `values`; `None` when there are none.
fn summary(mut values: Vec<f64>) -> Option<(f64, f64, f64)> {
    values.sort_by(f64::total_cmp);
    let max = *values.last()?;
    Some((median(values.clone())?, crate::phases::percentile(&values, 0.90), max))
}

/// The acknowledged jobs' ids and the calls that failed, shared by producers and probes.
#[derive(Default)]
struct Ledger {
    acknowledged: Mutex<HashSet<String>>,
    /// The jobs workers acked.
    consumed: Mutex<HashSet<String>>,
    /// The jobs of ack calls that failed: each may or may not have been acked.
    ack_unknown: Mutex<HashSet<String>>,
    failed: AtomicU64,
}

impl Ledger {
    fn acknowledge(&self, job_id: String) {
        self.acknowledged.lock().expect("ledger lock").insert(job_id);
    }

    fn consume(&self, job_ids: impl IntoIterator<Item = String>) {
        self.consumed.lock().expect("ledger lock").extend(job_ids);
    }

    /// The acknowledged jobs no worker acked.
    fn unconsumed(&self) -> HashSet<String> {
        let consumed = self.consumed.lock().expect("ledger lock");
        self.acknowledged.lock().expect("ledger lock").iter().filter(|job| !consumed.contains(*job)).cloned().collect()
    }

    /// How many acknowledged jobs no worker acked (without copying them).
    fn unconsumed_count(&self) -> u64 {
        let consumed = self.consumed.lock().expect("ledger lock");
        self.acknowledged.lock().expect("ledger lock").iter().filter(|job| !consumed.contains(*job)).count() as u64
    }

    fn count(&self) -> u64 {
        self.acknowledged.lock().expect("ledger lock").len() as u64
    }
}

/// Runs the plan, printing each kill to stderr.
pub fn run(plan: &Plan, runtime: &Runtime) -> Result<FailoverResults, BenchError> {
    let machine = Machine::current();
    let mut memory = Vec::new();
    if plan.single_reference && plan.backlog_jobs > 0 {
        memory.push(single_node_memory(plan, runtime)?);
    }
    let setup = NodeSetup {
        binary: plan.binary.clone(),
        persist_mode: plan.persist_mode,
        timings: DEFAULT_TIMINGS,
        snapshot_after_entries: plan.snapshot_after_entries,
    };
    let mut cluster = Cluster::start(&setup, NODES)?;
    let queue = format!("failover-{}", std::process::id());
    let ledger = Arc::new(Ledger::default());
    ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(&queue))?);
    let lagging = (cluster.leader() + 1) % NODES as usize;
    if plan.catch_up {
        cluster.node_mut(lagging).stop()?;
        cluster.change_membership(lagging, false)?;
        cluster.node_mut(lagging).clear_data_dir()?;
    }
    if plan.backlog_jobs > 0 {
        let started = Instant::now();
        runtime.block_on(backlog(cluster.leader_addr(), &queue, plan.backlog_jobs, &ledger))?;
        eprintln!("backlog: {} jobs queued in {:.1} s", plan.backlog_jobs, started.elapsed().as_secs_f64());
        memory.push(settled_memory(runtime, &mut cluster, "after the backlog", &ledger)?);
    }
    let catch_up = if plan.catch_up { Some(catch_up(runtime, &mut cluster, lagging, &ledger)?) } else { None };
    if catch_up.is_some() {
        memory.push(nodes_memory(&mut cluster, "after the follower caught up", &ledger));
    }
    let mut term = leader_term(runtime, &cluster);
    let mut unplanned_elections = 0;
    let stop = Arc::new(AtomicBool::new(false));
    let addrs: Arc<[SocketAddr]> = cluster.api_addrs().into();
    let producers: Vec<_> = (0..plan.connections.max(1))
        .map(|_| runtime.spawn(produce(addrs.clone(), queue.clone(), ledger.clone(), stop.clone(), cluster.leader())))
        .collect();
    let workers: Vec<_> = (0..plan.workers)
        .map(|_| runtime.spawn(consume(addrs.clone(), queue.clone(), ledger.clone(), stop.clone(), cluster.leader())))
        .collect();
    std::thread::sleep(plan.load_between);
    let mut kills = Vec::new();
    for number in 1..=plan.kills {
        ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(&queue))?);
        unplanned_elections += leader_term(runtime, &cluster).saturating_sub(term);
        let kill = kill_leader(runtime, &mut cluster, &queue, &ledger, plan.load_between)?;
        term = kill.term;
        memory.push(nodes_memory(&mut cluster, &format!("after kill {number}, rejoined"), &ledger));
        eprintln!(
            "kill {number:>2}: node {} -> node {} (term {}), failover {:>6.1} ms, rejoin {:.2} s, acknowledged {} -> {}",
            kill.killed_node,
            kill.new_leader,
            kill.term,
            kill.failover_seconds * 1e3,
            kill.rejoin_seconds,
            kill.acknowledged_at_kill,
            kill.acknowledged_after
        );
        kills.push(kill);
    }
    ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(&queue))?);
    unplanned_elections += leader_term(runtime, &cluster).saturating_sub(term);
    memory.push(nodes_memory(&mut cluster, "at the end of the load", &ledger));
    stop.store(true, Ordering::Relaxed);
    for task in producers.into_iter().chain(workers) {
        runtime
            .block_on(task)
            .map_err(|error| BenchError::Unexpected(format!("a producer or worker failed: {error}")))?;
    }
    ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(&queue))?);
    if plan.kills > 0 {
        memory.push(settled_memory(runtime, &mut cluster, "after the load, idle", &ledger)?);
    }
    let drained = runtime.block_on(drain(cluster.leader_addr(), &queue, ledger.unconsumed()))?;
    cluster.stop()?;
    let acknowledged = ledger.acknowledged.lock().expect("ledger lock");
    let consumed = ledger.consumed.lock().expect("ledger lock");
    let ack_unknown = ledger.ack_unknown.lock().expect("ledger lock");
    let came_out: HashSet<&String> = consumed.iter().chain(&drained).collect();
    let not_out: Vec<&String> = acknowledged.iter().filter(|job| !came_out.contains(job)).collect();
    let missing = not_out.iter().filter(|job| !ack_unknown.contains(**job)).count() as u64;
    Ok(FailoverResults {
        machine,
        persist_mode: plan.persist_mode.name().to_string(),
        nodes: NODES,
        heartbeat_interval_ms: DEFAULT_TIMINGS.heartbeat_interval_ms,
        election_timeout_ms: DEFAULT_TIMINGS.election_timeout_ms,
        producer_connections: plan.connections.max(1),
        worker_connections: plan.workers,
        load_between_seconds: plan.load_between.as_secs_f64(),
        backlog_jobs: plan.backlog_jobs,
        kills,
        unplanned_elections,
        bound: Some(plan.bound),
        memory,
        catch_up,
        acknowledged: acknowledged.len() as u64,
        failed_calls: ledger.failed.load(Ordering::Relaxed),
        consumed: consumed.len() as u64,
        drained: drained.len() as u64,
        maybe_acked: (not_out.len() as u64) - missing,
        missing,
        unacknowledged_stored: came_out.iter().filter(|job| !acknowledged.contains(**job)).count() as u64,
    })
}

/// One cycle: confirms the leader with a write, SIGKILLs it, times until a surviving node
/// acknowledges a write, starts the killed node again and waits until it is back, then lets the
/// load run for `load_between`.
fn kill_leader(
    runtime: &Runtime,
    cluster: &mut Cluster,
    queue: &str,
    ledger: &Ledger,
    load_between: Duration,
) -> Result<Kill, BenchError> {
    // The caller found the node serving now (leadership may have moved since the last cycle).
    let killed = cluster.leader();
    let acknowledged_at_kill = ledger.count();
    let survivors: Vec<SocketAddr> = cluster
        .api_addrs()
        .into_iter()
        .enumerate()
        .filter(|(index, _)| *index != killed)
        .map(|(_, addr)| addr)
        .collect();
    let signalled = cluster.node_mut(killed).kill()?;
    let elected = runtime.spawn(first_leader_seen(survivors));
    let probe = runtime.block_on(cluster.wait_for_leader(queue))?;
    let failover = signalled.elapsed();
    ledger.acknowledge(probe);
    elected.abort();
    let elected = runtime.block_on(elected).ok().map(|seen| seen.duration_since(signalled));
    let leader = cluster.leader();
    let leader_addr = cluster.leader_addr();
    let term = runtime.block_on(async { cluster::cluster_info(&cluster::lazy_client(leader_addr)).await });
    let restarted = Instant::now();
    cluster.node_mut(killed).start_again()?;
    runtime.block_on(wait_until_back(cluster, killed))?;
    let rejoin = restarted.elapsed();
    std::thread::sleep(load_between);
    let term_after = leader_term(runtime, cluster);
    Ok(Kill {
        killed_node: killed as u64 + 1,
        new_leader: leader as u64 + 1,
        term: term.map_or(0, |info| info.term),
        elected_seconds: elected.map(|elected| elected.as_secs_f64()),
        failover_seconds: failover.as_secs_f64(),
        rejoin_seconds: rejoin.as_secs_f64(),
        acknowledged_at_kill,
        acknowledged_after: ledger.count(),
        term_after,
    })
}

/// Starts the removed follower `index` again, empty, adds it to the cluster and waits until it
/// has caught up (see [`wait_until_back`]); its memory then, and whether it installed a
/// snapshot to get there.
fn catch_up(runtime: &Runtime, cluster: &mut Cluster, index: usize, ledger: &Ledger) -> Result<CatchUp, BenchError> {
    let started = Instant::now();
    cluster.node_mut(index).start_again()?;
    cluster.change_membership(index, true)?;
    runtime.block_on(wait_until_back(cluster, index))?;
    let seconds = started.elapsed().as_secs_f64();
    let node = cluster.node(index);
    let sample = crate::procfs::sample(node.pid())
        .ok_or_else(|| BenchError::Server("the follower's memory could not be read".into()))?;
    let caught_up = CatchUp {
        node: index as u64 + 1,
        jobs: ledger.unconsumed_count(),
        seconds,
        snapshot_installed: node.logged("installed a snapshot from the leader"),
        rss_bytes: sample.rss_bytes,
        peak_rss_bytes: sample.peak_rss_bytes,
    };
    eprintln!(
        "catch-up: node {} back in {:.1} s, {} (resident {:.0} MB, peak {:.0} MB)",
        caught_up.node,
        seconds,
        if caught_up.snapshot_installed.is_some() { "from a snapshot" } else { "from the log" },
        caught_up.rss_bytes as f64 / 1e6,
        caught_up.peak_rss_bytes as f64 / 1e6
    );
    Ok(caught_up)
}

/// Each running node's memory now.
fn nodes_memory(cluster: &mut Cluster, when: &str, ledger: &Ledger) -> MemoryPoint {
    let leader = cluster.leader();
    let processes = (0..NODES as usize)
        .filter_map(|index| {
            let node = cluster.node_mut(index);
            if !node.is_running() {
                return None;
            }
            let sample = crate::procfs::sample(node.pid())?;
            let role = if index == leader { ", leader" } else { "" };
            Some((format!("node {}{role}", index + 1), sample.rss_bytes, sample.peak_rss_bytes))
        })
        .collect();
    MemoryPoint { when: when.to_string(), queued: ledger.unconsumed_count(), processes }
}

/// A single node of the same binary and persist mode given the plan's backlog: its memory.
fn single_node_memory(plan: &Plan, runtime: &Runtime) -> Result<MemoryPoint, BenchError> {
    let program = crate::server::Program::Sepp { binary: plan.binary.clone(), persist_mode: plan.persist_mode };
    let mut server = crate::server::ServerProcess::start(&program)?;
    let ledger = Ledger::default();
    let started = Instant::now();
    runtime.block_on(backlog(server.addr(), "failover-single", plan.backlog_jobs, &ledger))?;
    eprintln!("single node: {} jobs queued in {:.1} s", plan.backlog_jobs, started.elapsed().as_secs_f64());
    std::thread::sleep(SETTLE);
    let sample = crate::procfs::sample(server.pid())
        .ok_or_else(|| BenchError::Server("the single node's memory could not be read".into()))?;
    server.stop()?;
    Ok(MemoryPoint {
        when: "a single node, after the backlog".into(),
        queued: ledger.count(),
        processes: vec![("single node".into(), sample.rss_bytes, sample.peak_rss_bytes)],
    })
}

/// The Raft term of the node last found serving (0 when it did not say).
fn leader_term(runtime: &Runtime, cluster: &Cluster) -> u64 {
    let addr = cluster.leader_addr();
    runtime.block_on(async { cluster::cluster_info(&cluster::lazy_client(addr)).await }).map_or(0, |info| info.term)
}

/// Queues `jobs` jobs at `addr`, [`BACKLOG_BATCH`] per call, [`BACKLOG_CALLS`] calls at once,
/// into the ledger.
async fn backlog(addr: SocketAddr, queue: &str, jobs: u64, ledger: &Ledger) -> Result<(), BenchError> {
    use futures_util::StreamExt;
    let client = cluster::lazy_client(addr);
    let batches = (0..jobs).step_by(BACKLOG_BATCH).map(|first| (jobs - first).min(BACKLOG_BATCH as u64) as usize);
    let mut calls = futures_util::stream::iter(batches)
        .map(|size| {
            let mut client = client.clone();
            let jobs = (0..size).map(|_| cluster::bench_job(queue)).collect();
            async move { client.enqueue_batch(pb::EnqueueBatchRequest { jobs }).await }
        })
        .buffer_unordered(BACKLOG_CALLS);
    while let Some(answer) = calls.next().await {
        for result in answer?.into_inner().results {
            match result.outcome {
                Some(pb::job_result::Outcome::Success(success)) => ledger.acknowledge(success.job_id),
                other => return Err(BenchError::Unexpected(format!("a backlog job was not accepted: {other:?}"))),
            }
        }
    }
    Ok(())
}

/// Polls GetServerInfo on the nodes at `addrs` until one says it leads; returns when that was
/// seen.
async fn first_leader_seen(addrs: Vec<SocketAddr>) -> Instant {
    let clients: Vec<_> = addrs.into_iter().map(cluster::lazy_client).collect();
    loop {
        for client in &clients {
            if cluster::cluster_info(client).await.is_some_and(|info| info.role == "leader") {
                return Instant::now();
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Waits until node `index` follows the cluster's leader and the leader counts it within
/// [`CAUGHT_UP_ENTRIES`] of its log.
async fn wait_until_back(cluster: &Cluster, index: usize) -> Result<(), BenchError> {
    let node = cluster::lazy_client(cluster.node(index).addr());
    let leader = cluster::lazy_client(cluster.leader_addr());
    let (id, leader_id) = (index as u64 + 1, cluster.leader() as u64 + 1);
    poll_until(&format!("node {id} did not follow the leader"), || async {
        let following = cluster::cluster_info(&node)
            .await
            .is_some_and(|info| info.role == "follower" && info.leader_id == Some(leader_id));
        following
            && cluster::cluster_info(&leader).await.is_some_and(|info| {
                info.members
                    .iter()
                    .any(|member| member.id == id && member.replication_lag.is_some_and(|lag| lag <= CAUGHT_UP_ENTRIES))
            })
    })
    .await
}

/// Checks `done` every 10 ms until it holds; fails saying `failure` after [`REJOIN_TIMEOUT`].
async fn poll_until<F, Fut>(failure: &str, mut done: F) -> Result<(), BenchError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !done().await {
        if started.elapsed() > REJOIN_TIMEOUT {
            return Err(BenchError::Server(format!("{failure} within {REJOIN_TIMEOUT:?}")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// The running nodes' memory once every one has the leader's whole log and [`SETTLE`] later.
fn settled_memory(
    runtime: &Runtime,
    cluster: &mut Cluster,
    when: &str,
    ledger: &Ledger,
) -> Result<MemoryPoint, BenchError> {
    let running: Vec<u64> = (0..NODES as usize)
        .filter(|&index| cluster.node_mut(index).is_running())
        .map(|index| index as u64 + 1)
        .collect();
    runtime.block_on(wait_until_replicated(cluster, &running))?;
    std::thread::sleep(SETTLE);
    Ok(nodes_memory(cluster, when, ledger))
}

/// Waits until the leader counts each of the nodes `running` (by id) as having its whole log.
async fn wait_until_replicated(cluster: &Cluster, running: &[u64]) -> Result<(), BenchError> {
    let leader = cluster::lazy_client(cluster.leader_addr());
    poll_until("the nodes did not catch up with the leader", || async {
        cluster::cluster_info(&leader).await.is_some_and(|info| {
            running.iter().all(|id| {
                info.members.iter().any(|member| member.id == *id && member.replication_lag.is_none_or(|lag| lag == 0))
            })
        })
    })
    .await
}

/// One producer: enqueues one job per call to `queue` at node `first`, and after a refused or
/// failed call at the node a follower named, or the next one, until `stop`.
async fn produce(addrs: Arc<[SocketAddr]>, queue: String, ledger: Arc<Ledger>, stop: Arc<AtomicBool>, first: usize) {
    let clients: Vec<_> = addrs.iter().map(|addr| cluster::lazy_client(*addr)).collect();
    let mut at = first;
    while !stop.load(Ordering::Relaxed) {
        match cluster::enqueue_one(&clients[at], &queue).await {
            Ok(job_id) => ledger.acknowledge(job_id),
            Err(refused) => {
                ledger.failed.fetch_add(1, Ordering::Relaxed);
                at = next_node(&addrs, at, &refused);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
}

/// One worker: reserves up to [`WORKER_BATCH`] jobs of `queue` at node `first` (without
/// waiting when there are none) and acks them in one call, moving on like a producer after a
/// refused or failed call, until `stop`. Jobs whose ack succeeded go to the ledger.
async fn consume(addrs: Arc<[SocketAddr]>, queue: String, ledger: Arc<Ledger>, stop: Arc<AtomicBool>, first: usize) {
    let clients: Vec<_> = addrs.iter().map(|addr| cluster::lazy_client(*addr)).collect();
    let mut at = first;
    while !stop.load(Ordering::Relaxed) {
        let refused = match cluster::reserve(&clients[at], &queue, WORKER_BATCH, WORKER_LEASE).await {
            Ok(jobs) if jobs.is_empty() => None,
            Ok(jobs) => {
                let ids: Vec<String> = jobs.iter().map(|job| job.id.clone()).collect();
                match cluster::ack(&clients[at], &jobs).await {
                    Ok(acked) => {
                        ledger.consume(acked);
                        continue;
                    }
                    Err(refused) => {
                        ledger.ack_unknown.lock().expect("ledger lock").extend(ids);
                        Some(refused)
                    }
                }
            }
            Err(refused) => Some(refused),
        };
        if let Some(refused) = refused {
            at = next_node(&addrs, at, &refused);
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// Where a producer sends its next call after `refused` at node `at`: the leader a follower
/// named, when it is one of `addrs`, else the next node.
fn next_node(addrs: &[SocketAddr], at: usize, refused: &Refused) -> usize {
    let named = match refused {
        Refused::NotLeader(Some(leader)) => addrs.iter().position(|addr| addr.to_string() == *leader),
        _ => None,
    };
    named.unwrap_or((at + 1) % addrs.len())
}

/// Reserves and acks every ready job of `queue` at `addr`, [`DRAIN_BATCH`] per call, until a
/// reserve finds none and every job of `expected` was drained, or none came for
/// [`DRAIN_PATIENCE`]; returns the distinct ids drained.
async fn drain(addr: SocketAddr, queue: &str, mut expected: HashSet<String>) -> Result<HashSet<String>, BenchError> {
    let mut client = cluster::lazy_client(addr);
    let mut drained = HashSet::new();
    let mut last_found = Instant::now();
    loop {
        let waiting = !expected.is_empty() && last_found.elapsed() < DRAIN_PATIENCE;
        let request = pb::ReserveRequest {
            queues: vec![queue.to_string()],
            wait_timeout: waiting.then_some(prost_types::Duration { seconds: 1, nanos: 0 }),
            lease_duration: Some(prost_types::Duration { seconds: 300, nanos: 0 }),
            worker_id: None,
            max_jobs: Some(DRAIN_BATCH),
        };
        let jobs = client.reserve(request).await?.into_inner().jobs;
        if jobs.is_empty() {
            if waiting {
                continue;
            }
            return Ok(drained);
        }
        last_found = Instant::now();
        for job in &jobs {
            expected.remove(&job.id);
        }
        let acks = jobs
            .iter()
            .map(|job| pb::AckRequest { job_id: job.id.clone(), attempt: job.attempt, worker_id: None })
            .collect();
        let acked = client.ack_batch(pb::AckBatchRequest { acks }).await?.into_inner();
        let succeeded =
            acked.results.iter().filter(|result| matches!(result.outcome, Some(pb::ack_result::Outcome::Success(_))));
        if succeeded.count() != jobs.len() {
            return Err(BenchError::Unexpected(format!("an ack of the drain failed: {acked:?}")));
        }
        drained.extend(jobs.into_iter().map(|job| job.id));
    }
}

/// The Markdown of `failover.md`: the setup, one row per kill, the failover times' median, p90
/// and max, and what the drain found.
pub fn markdown(results: &FailoverResults) -> String {
    let mut out = String::new();
    let machine = &results.machine;
    let _ = writeln!(
        out,
        "### Failover: {} nodes, `{}`, the leader SIGKILLed {} times under load\n",
        results.nodes,
        results.persist_mode,
        results.kills.len()
    );
    let _ = writeln!(
        out,
        "Machine: {} CPUs ({}), Linux {}. Load: {} connections enqueueing one job per call and {} reserving \
         and acking up to {WORKER_BATCH} at once, at whichever node serves; {:.1} s of load before the first kill and after each rejoin; {} jobs queued before the load (memory \
         \"after the backlog\" and \"after the load, idle\" read once every node has the leader's whole log and {} s later). \
         Raft heartbeat {} ms, election timeout {} ms (a follower stands after 3/4 to all of it without a \
         heartbeat). Elected: from the SIGKILL until a surviving node \
         says it leads (GetServerInfo). Failover: from the SIGKILL until a write is acknowledged again by any \
         node. Rejoin: from the killed node's new start (same ports and data \
         directory) until it follows the leader within {CAUGHT_UP_ENTRIES} entries.\n",
        machine.cpus,
        machine.cpu_model,
        machine.kernel,
        results.producer_connections,
        results.worker_connections,
        results.load_between_seconds,
        rate(Some(results.backlog_jobs as f64)),
        SETTLE.as_secs(),
        results.heartbeat_interval_ms,
        results.election_timeout_ms,
    );
    if let Some(catch_up) = &results.catch_up {
        let _ = writeln!(
            out,
            "**Catch-up.** Node {} was replaced as after a lost disk: stopped and removed from the cluster \
             (`sepp cluster remove`) before the {} jobs were queued, then started with an empty data directory \
             and added again (`sepp cluster add`). It was a voter following the leader within \
             {CAUGHT_UP_ENTRIES} entries {:.1} s after its start, {}. Its memory then: {:.0} MB resident, \
             {:.0} MB at its peak.\n",
            catch_up.node,
            rate(Some(catch_up.jobs as f64)),
            catch_up.seconds,
            catch_up.snapshot_installed.as_ref().map_or_else(
                || "from the log alone (no snapshot installed)".to_string(),
                |_| "having installed the leader's snapshot".to_string()
            ),
            catch_up.rss_bytes as f64 / 1e6,
            catch_up.peak_rss_bytes as f64 / 1e6,
        );
    }
    kills_table(&mut out, results);
    summary_table(&mut out, results);
    let _ = writeln!(
        out,
        "Acknowledged enqueues: {} (producers and probes; {} calls refused or failed, each followed by a new job). \
         Acked by the workers: {}. Drained from the leader at the end: {}. Acknowledged, not come out, their \
         ack's outcome unknown (the call failed): {}. Acknowledged but neither acked nor drained otherwise: **{}**. Stored without an acknowledgement (the call failed, the job was committed): {}.",
        rate(Some(results.acknowledged as f64)),
        rate(Some(results.failed_calls as f64)),
        rate(Some(results.consumed as f64)),
        rate(Some(results.drained as f64)),
        results.maybe_acked,
        results.missing,
        results.unacknowledged_stored,
    );
    if !results.memory.is_empty() {
        let _ = writeln!(out, "\n| memory, MB: resident (peak) | jobs queued | processes |\n|---|---:|---|");
        for point in &results.memory {
            let processes: Vec<String> = point
                .processes
                .iter()
                .map(|(name, rss, peak)| format!("{name}: {:.0} ({:.0})", *rss as f64 / 1e6, *peak as f64 / 1e6))
                .collect();
            let _ =
                writeln!(out, "| {} | {} | {} |", point.when, rate(Some(point.queued as f64)), processes.join("; "));
        }
    }
    let _ = writeln!(out, "\nElections no kill caused: **{}**.", results.unplanned_elections);
    if let Some(bound) = results.bound {
        let verdict =
            results.outside_bound().map_or_else(|| "**within**".to_string(), |why| format!("**outside**: {why}"));
        let _ = writeln!(
            out,
            "\nBound: failover median at most {:.0} ms, every one at most {:.0} ms, no election no kill caused: {verdict}.",
            bound.median_ms, bound.max_ms
        );
    }
    out
}

fn kills_table(out: &mut String, results: &FailoverResults) {
    let _ = writeln!(
        out,
        "| kill | killed node | new leader | term | elected, ms | failover, ms | rejoin, s | acknowledged at the kill | at the cycle's end |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (number, kill) in results.kills.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.0} | {:.2} | {} | {} |",
            number + 1,
            kill.killed_node,
            kill.new_leader,
            kill.term,
            kill.elected_seconds.map_or_else(|| "-".into(), |seconds| format!("{:.0}", seconds * 1e3)),
            kill.failover_seconds * 1e3,
            kill.rejoin_seconds,
            rate(Some(kill.acknowledged_at_kill as f64)),
            rate(Some(kill.acknowledged_after as f64)),
        );
    }
    out.push('\n');
}

fn summary_table(out: &mut String, results: &FailoverResults) {
    let kills = results.kills.len();
    let rows = [("failover", results.failover_summary()), ("elected", results.elected_summary())];
    let _ = writeln!(out, "| {kills} kills, ms | median | p90 | max |");
    let _ = writeln!(out, "|---|---:|---:|---:|");
    for (name, summary) in rows {
        if let Some((median, p90, max)) = summary {
            let _ = writeln!(out, "| {name} | {:.0} | {:.0} | {:.0} |", median * 1e3, p90 * 1e3, max * 1e3);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kill(failover_seconds: f64) -> Kill {
        Kill {
            killed_node: 1,
            new_leader: 2,
            term: 3,
            elected_seconds: Some(failover_seconds / 2.0),
            failover_seconds,
            rejoin_seconds: 0.5,
            acknowledged_at_kill: 1_000,
            acknowledged_after: 2_500,
            term_after: 3,
        }
    }

    #[test]
    fn the_summary_is_the_median_the_nearest_rank_p90_and_the_max() {
        let mut results = FailoverResults::default();
        assert_eq!(results.failover_summary(), None);
        results.kills = (1..=10).rev().map(|tenth| kill(f64::from(tenth) / 10.0)).collect();
        let (median, p90, max) = results.failover_summary().unwrap();
        assert!((median - 0.55).abs() < 1e-9, "{median}");
        assert!((p90 - 0.9).abs() < 1e-9, "{p90}");
        assert!((max - 1.0).abs() < 1e-9, "{max}");
    }

    #[test]
    fn the_markdown_has_a_row_per_kill_the_summary_and_the_drain() {
        let results = FailoverResults {
            persist_mode: "sync_all".into(),
            nodes: 3,
            kills: vec![kill(0.6), kill(0.8)],
            acknowledged: 12_345,
            drained: 12_347,
            unacknowledged_stored: 2,
            ..FailoverResults::default()
        };
        let out = markdown(&results);
        assert!(out.contains("### Failover: 3 nodes, `sync_all`, the leader SIGKILLed 2 times under load"), "{out}");
        assert!(out.contains("| 2 | 1 | 2 | 3 | 400 | 800 | 0.50 | 1,000 | 2,500 |"), "{out}");
        assert!(out.contains("| 2 kills, ms | median | p90 | max |\n|---|---:|---:|---:|\n| failover | 700 | 800 | 800 |\n| elected | 350 | 400 | 400 |\n"), "{out}");
        assert!(out.contains("Acknowledged but neither acked nor drained otherwise: **0**"), "{out}");
        assert!(out.contains("Drained from the leader at the end: 12,347"), "{out}");
    }

    #[test]
    fn the_markdown_says_how_the_follower_caught_up() {
        let caught_up = CatchUp {
            node: 2,
            jobs: 1_000_000,
            seconds: 12.34,
            snapshot_installed: Some("installed a snapshot from the leader".into()),
            rss_bytes: 300_000_000,
            peak_rss_bytes: 420_000_000,
        };
        let results = FailoverResults { catch_up: Some(caught_up.clone()), ..FailoverResults::default() };
        let out = markdown(&results);
        assert!(out.contains("Node 2 was replaced as after a lost disk"), "{out}");
        assert!(out.contains("before the 1,000,000 jobs were queued"), "{out}");
        assert!(out.contains("12.3 s after its start, having installed the leader's snapshot"), "{out}");
        assert!(out.contains("300 MB resident, 420 MB at its peak"), "{out}");
        let from_log = FailoverResults { catch_up: Some(CatchUp { snapshot_installed: None, ..caught_up }), ..results };
        assert!(markdown(&from_log).contains("from the log alone (no snapshot installed)"));
        assert!(!markdown(&FailoverResults::default()).contains("Catch-up"));
    }

    #[test]
    fn a_run_is_outside_its_bound_when_its_median_or_max_is_over_or_an_election_was_unplanned() {
        let bound = Bound { median_ms: 1_000.0, max_ms: 2_000.0 };
        let within = FailoverResults {
            kills: vec![kill(0.8), kill(0.9), kill(1.9)],
            bound: Some(bound),
            ..FailoverResults::default()
        };
        assert_eq!(within.outside_bound(), None);
        assert!(markdown(&within).contains("no election no kill caused: **within**."), "{}", markdown(&within));
        let slow = FailoverResults { kills: vec![kill(1.2), kill(1.1), kill(0.5)], ..within.clone() };
        assert_eq!(slow.outside_bound().as_deref(), Some("median failover 1100 ms over 1000 ms"));
        let stuck = FailoverResults { kills: vec![kill(0.5), kill(0.6), kill(2.5)], ..within.clone() };
        assert_eq!(stuck.outside_bound().as_deref(), Some("a failover of 2500 ms over 2000 ms"));
        let spurious = FailoverResults { unplanned_elections: 1, ..within.clone() };
        assert_eq!(spurious.outside_bound().as_deref(), Some("1 election(s) no kill caused"));
        assert_eq!(FailoverResults { bound: None, ..slow }.outside_bound(), None);
    }

    #[test]
    fn a_refused_call_moves_to_the_named_leader_or_the_next_node() {
        let addrs: Vec<SocketAddr> = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"].map(|a| a.parse().unwrap()).into();
        assert_eq!(next_node(&addrs, 0, &Refused::NotLeader(Some("127.0.0.1:3".into()))), 2);
        assert_eq!(next_node(&addrs, 2, &Refused::NotLeader(None)), 0);
        assert_eq!(next_node(&addrs, 1, &Refused::NotLeader(Some("10.0.0.1:9".into()))), 2);
        assert_eq!(next_node(&addrs, 1, &Refused::Failed("down".into())), 2);
    }
}
