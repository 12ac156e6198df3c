//! Three nodes in this process, each with its own Raft log in a temporary directory, its own
//! state machine and its own gRPC server on a loopback port, replicating the records of a core
//! run: every node applies the same state; after the leader stops, the other two elect a new one
//! and go on; the old leader, started again from its directory after the log it missed was
//! compacted, catches up from a snapshot; and so does a fourth node added to the running
//! cluster, first as a learner, then as a voter. A follower that was away while the leader
//! wrote large entries catches up from the log, a bounded number of bytes per call.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openraft::SnapshotPolicy;
use sepp_cluster::{Frame, LogStoreOptions, Node, NodeAddr};
use sepp_core::validate::{NackStrategy, ReservePlan};
use sepp_core::{JobId, NewJob, Payload, Policy, Record, State, StorageRules};
use tokio::net::TcpListener;

/// Long enough for an election on a loaded machine; tests wait on the metrics, not on a clock.
const WAIT: Duration = Duration::from_secs(30);

fn fresh() -> State {
    State::new(
        Arc::new(Policy::default()),
        StorageRules { dead_letter_retention_ms: 60_000, ..StorageRules::default() },
    )
}

fn config() -> Arc<openraft::Config> {
    let config = openraft::Config {
        // Snapshots every 10 entries, and nothing kept behind them, so a node that was away
        // for longer needs a snapshot to catch up.
        snapshot_policy: SnapshotPolicy::LogsSinceLast(10),
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..sepp_cluster::local::quick_config("test")
    };
    Arc::new(config.validate().expect("a valid Raft configuration"))
}

async fn start(id: u64, dir: &Path, listener: TcpListener) -> Node {
    let me = sepp_cluster::local::node_addr(listener.local_addr().expect("a bound listener"));
    Node::start(id, me, dir, config(), Arc::new(fresh), listener, LogStoreOptions::default())
        .await
        .expect("start the node")
}

async fn wait_applied(node: &Node, index: u64) {
    node.raft.wait(Some(WAIT)).applied_index_at_least(Some(index), "applied").await.expect("applied in time");
}

fn job(index: usize) -> (JobId, NewJob) {
    let payload = Payload { data: vec![index as u8; 40 + index % 50], encoding: "raw".into() };
    let queue = if index.is_multiple_of(2) { "a" } else { "b" };
    let new_job = NewJob {
        queue: queue.into(),
        job_type: "t".into(),
        payload: Some(payload),
        max_attempts: Some(2),
        ..NewJob::default()
    };
    (JobId::new_v4(), new_job)
}

/// The leader's side of the run: each cycle applies enqueues, leases, acks and nacks to
/// `leader`, and the cycle's records become one frame.
fn cycle(leader: &mut State, round: usize) -> Frame {
    let now_ms = 5_000_000 + round as i64 * 1_000;
    let mut records: Vec<Record> = Vec::new();
    leader.sweep(now_ms, &mut records);
    leader.enqueue(now_ms, (0..8).map(|index| job(round * 8 + index)).collect(), &mut records);
    let plan = ReservePlan { queues: vec!["a".into(), "b".into()], wait_ms: 0, lease_ms: 1_500, max_jobs: 5 };
    for (position, delivery) in leader.reserve(now_ms, &plan, &mut records).iter().enumerate() {
        match position % 3 {
            0 => leader.ack(delivery.job.id, delivery.attempt, &mut records).expect("ack"),
            1 => {
                let strategy = NackStrategy::Default;
                leader.nack(now_ms, delivery.job.id, delivery.attempt, strategy, None, &mut records).expect("nack");
            }
            _ => {}
        }
    }
    let mut frame = Vec::new();
    sepp_log::frame::encode(&records, &mut frame, &mut Vec::new());
    Frame(frame)
}

async fn leader_of(nodes: &[&Node]) -> u64 {
    let metrics = nodes[0]
        .raft
        .wait(Some(WAIT))
        .metrics(
            |metrics| metrics.current_leader.is_some_and(|leader| nodes.iter().any(|node| node.id == leader)),
            "a leader among the running nodes",
        )
        .await
        .expect("a leader is elected");
    metrics.current_leader.expect("a leader")
}

/// Writes `rounds` cycles through the leader, returning the index of the last entry.
async fn write(leader: &Node, state: &mut State, rounds: std::ops::Range<usize>) -> u64 {
    let mut last = 0;
    for round in rounds {
        let written = leader.raft.client_write(cycle(state, round)).await.expect("committed");
        last = written.log_id.index;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_agree_survive_the_leader_and_returning_or_joining_nodes_catch_up_from_snapshots() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (listeners, addrs) = sepp_cluster::local::listeners(3).await.unwrap();
    let paths: Vec<PathBuf> = dirs.iter().map(|dir| dir.path().to_path_buf()).collect();
    let mut nodes = Vec::new();
    for (position, listener) in listeners.into_iter().enumerate() {
        nodes.push(start(position as u64 + 1, &paths[position], listener).await);
    }
    nodes[0].raft.initialize(sepp_cluster::local::members(&addrs)).await.expect("initialize the cluster");

    // Every node applies the same records, and holds the leader's state.
    let mut state = fresh();
    let leader = leader_of(&nodes.iter().collect::<Vec<_>>()).await;
    let position = nodes.iter().position(|node| node.id == leader).unwrap();
    let last = write(&nodes[position], &mut state, 0..5).await;
    for node in &nodes {
        wait_applied(node, last).await;
        assert_eq!(node.machine.state_fingerprint(), state.fingerprint(), "node {}", node.id);
    }

    // The leader stops: the other two elect one of themselves and go on.
    let old = nodes.remove(position);
    let old_id = old.id;
    old.stop().await.expect("stop");
    let new_leader = leader_of(&nodes.iter().collect::<Vec<_>>()).await;
    assert_ne!(new_leader, old_id);
    let position = nodes.iter().position(|node| node.id == new_leader).unwrap();
    let last = write(&nodes[position], &mut state, 5..40).await;
    for node in &nodes {
        wait_applied(node, last).await;
        assert_eq!(node.machine.state_fingerprint(), state.fingerprint(), "node {}", node.id);
    }
    // The log it missed was compacted: snapshots were taken and entries purged behind them.
    nodes[position]
        .raft
        .wait(Some(WAIT))
        .metrics(|metrics| metrics.purged.is_some_and(|purged| purged.index > 10), "entries purged")
        .await
        .expect("the leader purges its log behind a snapshot");

    // Started again from its directory, the old leader catches up from a snapshot.
    let listener = TcpListener::bind(addrs[old_id as usize - 1]).await.expect("the old address again");
    let back = start(old_id, &paths[old_id as usize - 1], listener).await;
    wait_applied(&back, last).await;
    assert_eq!(back.machine.state_fingerprint(), state.fingerprint(), "the returning node");
    let snapshot = back.raft.metrics().borrow().snapshot;
    assert!(snapshot.is_some(), "the returning node did not install a snapshot");

    // A fourth node joins the running cluster: a learner first, which catches up from a
    // snapshot, then a voter.
    let dir = tempfile::tempdir().unwrap();
    let (mut listener, addr) = sepp_cluster::local::listeners(1).await.unwrap();
    let joining = start(4, dir.path(), listener.remove(0)).await;
    nodes.push(back);
    let leader = leader_of(&nodes.iter().collect::<Vec<_>>()).await;
    let leader = &nodes.iter().find(|node| node.id == leader).unwrap().raft;
    let node = NodeAddr { raft: addr[0].to_string(), api: addr[0].to_string() };
    leader.add_learner(4, node, true).await.expect("add node 4 as a learner");
    leader.change_membership(BTreeSet::from([1, 2, 3, 4]), false).await.expect("make node 4 a voter");
    let last = write(
        nodes.iter().find(|node| node.raft.metrics().borrow().current_leader == Some(node.id)).unwrap(),
        &mut state,
        40..45,
    )
    .await;
    wait_applied(&joining, last).await;
    assert_eq!(joining.machine.state_fingerprint(), state.fingerprint(), "the joining node");
    assert!(joining.raft.metrics().borrow().snapshot.is_some(), "the joining node did not start from a snapshot");
    let voters: Vec<u64> = joining.raft.metrics().borrow().membership_config.membership().voter_ids().collect();
    assert_eq!(voters, [1, 2, 3, 4]);

    joining.stop().await.expect("stop");
    for node in nodes {
        node.stop().await.expect("stop");
    }
}

/// A frame of one cycle that enqueues `jobs` jobs of `bytes` bytes each.
fn large_cycle(leader: &mut State, round: usize, jobs: usize, bytes: usize) -> Frame {
    let now_ms = 5_000_000 + round as i64 * 1_000;
    let mut records: Vec<Record> = Vec::new();
    let new_jobs = (0..jobs)
        .map(|index| {
            let payload = Payload { data: vec![(round + index) as u8; bytes], encoding: "raw".into() };
            (
                JobId::new_v4(),
                NewJob { queue: "big".into(), job_type: "t".into(), payload: Some(payload), ..NewJob::default() },
            )
        })
        .collect();
    leader.enqueue(now_ms, new_jobs, &mut records);
    let mut frame = Vec::new();
    sepp_log::frame::encode(&records, &mut frame, &mut Vec::new());
    Frame(frame)
}

/// openraft asks for up to 300 entries per AppendEntries and gives each call the heartbeat
/// interval (20 ms here) to be answered. A follower that missed 60 entries of 512 KiB (30 MiB)
/// is not sent them in one call in time, and would be sent them again and again (this test
/// then fails at its 30 s wait); sent at most about 1 MiB per call, it catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_missed_large_entries_catches_up_from_the_log() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (listeners, addrs) = sepp_cluster::local::listeners(3).await.unwrap();
    let paths: Vec<PathBuf> = dirs.iter().map(|dir| dir.path().to_path_buf()).collect();
    // No snapshot in this test: the follower can only catch up from the log.
    let config = Arc::new(
        openraft::Config {
            snapshot_policy: SnapshotPolicy::LogsSinceLast(100_000),
            heartbeat_interval: 20,
            ..sepp_cluster::local::quick_config("test")
        }
        .validate()
        .expect("a valid Raft configuration"),
    );
    let start = |id: u64, listener: TcpListener| {
        let (me, dir, config) = (
            sepp_cluster::local::node_addr(listener.local_addr().unwrap()),
            paths[id as usize - 1].clone(),
            config.clone(),
        );
        async move {
            Node::start(id, me, &dir, config, Arc::new(fresh), listener, LogStoreOptions::default())
                .await
                .expect("start")
        }
    };
    let mut nodes = Vec::new();
    for (position, listener) in listeners.into_iter().enumerate() {
        nodes.push(start(position as u64 + 1, listener).await);
    }
    nodes[0].raft.initialize(sepp_cluster::local::members(&addrs)).await.expect("initialize the cluster");
    let leader = leader_of(&nodes.iter().collect::<Vec<_>>()).await;
    let follower = nodes.iter().position(|node| node.id != leader).unwrap();
    let away = nodes.remove(follower);
    let away_id = away.id;
    away.stop().await.expect("stop");

    let leader = nodes.iter().find(|node| node.id == leader).unwrap();
    let mut state = fresh();
    let mut last = 0;
    for round in 0..60 {
        last = leader
            .raft
            .client_write(large_cycle(&mut state, round, 8, 64 * 1024))
            .await
            .expect("committed")
            .log_id
            .index;
    }

    let listener = TcpListener::bind(addrs[away_id as usize - 1]).await.expect("the old address again");
    let back = start(away_id, listener).await;
    wait_applied(&back, last).await;
    assert_eq!(back.machine.state_fingerprint(), state.fingerprint(), "the returning node");
    assert!(back.raft.metrics().borrow().snapshot.is_none(), "it caught up from the log, not a snapshot");
    back.stop().await.expect("stop");
    for node in nodes {
        node.stop().await.expect("stop");
    }
}
