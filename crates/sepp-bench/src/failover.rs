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

/// Jobs per Reserve and AckBatch call of the final drain (the default batch limit).
const DRAIN_BATCH: u32 = 256;

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
    /// Load between a rejoined node and the next kill (and before the first).
    pub load_between: Duration,
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
    pub load_between_seconds: f64,
    /// One entry per SIGKILL of the leader, in order.
    pub kills: Vec<Kill>,
    /// Enqueues a node acknowledged over the run, the producers' and the probes'.
    pub acknowledged: u64,
    /// Enqueue calls refused or failed (by a follower, a dead node, a leader not serving yet);
    /// each producer moved on and sent a new job.
    pub failed_calls: u64,
    /// Distinct jobs drained (reserved and acked) from the leader at the end.
    pub drained: u64,
    /// Acknowledged jobs the drain did not find: 0 when nothing acknowledged was lost.
    pub missing: u64,
    /// Drained jobs that were never acknowledged: calls that failed (the leader died before it
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
    failed: AtomicU64,
}

impl Ledger {
    fn acknowledge(&self, job_id: String) {
        self.acknowledged.lock().expect("ledger lock").insert(job_id);
    }

    fn count(&self) -> u64 {
        self.acknowledged.lock().expect("ledger lock").len() as u64
    }
}

/// Runs the plan, printing each kill to stderr.
pub fn run(plan: &Plan, runtime: &Runtime) -> Result<FailoverResults, BenchError> {
    let machine = Machine::current();
    let setup = NodeSetup { binary: plan.binary.clone(), persist_mode: plan.persist_mode, timings: DEFAULT_TIMINGS };
    let mut cluster = Cluster::start(&setup, NODES)?;
    let queue = format!("failover-{}", std::process::id());
    let ledger = Arc::new(Ledger::default());
    ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(&queue))?);
    let stop = Arc::new(AtomicBool::new(false));
    let addrs: Arc<[SocketAddr]> = cluster.api_addrs().into();
    let producers: Vec<_> = (0..plan.connections.max(1))
        .map(|_| runtime.spawn(produce(addrs.clone(), queue.clone(), ledger.clone(), stop.clone(), cluster.leader())))
        .collect();
    std::thread::sleep(plan.load_between);
    let mut kills = Vec::new();
    for number in 1..=plan.kills {
        let kill = kill_leader(runtime, &mut cluster, &queue, &ledger, plan.load_between)?;
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
    stop.store(true, Ordering::Relaxed);
    for producer in producers {
        runtime.block_on(producer).map_err(|error| BenchError::Unexpected(format!("producer failed: {error}")))?;
    }
    ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(&queue))?);
    let drained = runtime.block_on(drain(cluster.leader_addr(), &queue))?;
    cluster.stop()?;
    let acknowledged = ledger.acknowledged.lock().expect("ledger lock");
    let missing = acknowledged.difference(&drained).count() as u64;
    Ok(FailoverResults {
        machine,
        persist_mode: plan.persist_mode.name().to_string(),
        nodes: NODES,
        heartbeat_interval_ms: DEFAULT_TIMINGS.heartbeat_interval_ms,
        election_timeout_ms: DEFAULT_TIMINGS.election_timeout_ms,
        producer_connections: plan.connections.max(1),
        load_between_seconds: plan.load_between.as_secs_f64(),
        kills,
        acknowledged: acknowledged.len() as u64,
        failed_calls: ledger.failed.load(Ordering::Relaxed),
        drained: drained.len() as u64,
        missing,
        unacknowledged_stored: drained.difference(&acknowledged).count() as u64,
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
    // Leadership may have moved since the last cycle: kill the node serving now.
    ledger.acknowledge(runtime.block_on(cluster.wait_for_leader(queue))?);
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
    Ok(Kill {
        killed_node: killed as u64 + 1,
        new_leader: leader as u64 + 1,
        term: term.map_or(0, |info| info.term),
        elected_seconds: elected.map(|elected| elected.as_secs_f64()),
        failover_seconds: failover.as_secs_f64(),
        rejoin_seconds: rejoin.as_secs_f64(),
        acknowledged_at_kill,
        acknowledged_after: ledger.count(),
    })
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
    let started = Instant::now();
    loop {
        let following = cluster::cluster_info(&node)
            .await
            .is_some_and(|info| info.role == "follower" && info.leader_id == Some(leader_id));
        let caught_up = cluster::cluster_info(&leader).await.is_some_and(|info| {
            info.members
                .iter()
                .any(|member| member.id == id && member.replication_lag.is_some_and(|lag| lag <= CAUGHT_UP_ENTRIES))
        });
        if following && caught_up {
            return Ok(());
        }
        if started.elapsed() > REJOIN_TIMEOUT {
            return Err(BenchError::Server(format!("node {id} did not follow the leader within {REJOIN_TIMEOUT:?}")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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
/// reserve finds none; returns the distinct ids drained.
async fn drain(addr: SocketAddr, queue: &str) -> Result<HashSet<String>, BenchError> {
    let mut client = cluster::lazy_client(addr);
    let mut drained = HashSet::new();
    loop {
        let request = pb::ReserveRequest {
            queues: vec![queue.to_string()],
            wait_timeout: None,
            lease_duration: Some(prost_types::Duration { seconds: 300, nanos: 0 }),
            worker_id: None,
            max_jobs: Some(DRAIN_BATCH),
        };
        let jobs = client.reserve(request).await?.into_inner().jobs;
        if jobs.is_empty() {
            return Ok(drained);
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
        "Machine: {} CPUs ({}), Linux {}. Load: {} connections enqueueing one job per call at whichever node \
         serves; {:.1} s of load before the first kill and after each rejoin. Raft heartbeat {} ms, election \
         timeout {} ms (each node picks between it and twice it). Elected: from the SIGKILL until a surviving node \
         says it leads (GetServerInfo). Failover: from the SIGKILL until a write is acknowledged again by any \
         node. Rejoin: from the killed node's new start (same ports and data \
         directory) until it follows the leader within {CAUGHT_UP_ENTRIES} entries.\n",
        machine.cpus,
        machine.cpu_model,
        machine.kernel,
        results.producer_connections,
        results.load_between_seconds,
        results.heartbeat_interval_ms,
        results.election_timeout_ms,
    );
    kills_table(&mut out, results);
    summary_table(&mut out, results);
    let _ = writeln!(
        out,
        "Acknowledged enqueues: {} (producers and probes; {} calls refused or failed, each followed by a new job). \
         Drained from the leader at the end: {}. Acknowledged but not drained: **{}**. Stored without an \
         acknowledgement (the call failed, the job was committed): {}.",
        rate(Some(results.acknowledged as f64)),
        rate(Some(results.failed_calls as f64)),
        rate(Some(results.drained as f64)),
        results.missing,
        results.unacknowledged_stored,
    );
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
        assert!(out.contains("Acknowledged but not drained: **0**"), "{out}");
        assert!(out.contains("Drained from the leader at the end: 12,347"), "{out}");
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
