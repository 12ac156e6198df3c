//! The committer over Raft: three cluster nodes in this process (their own Raft logs, state
//! machines and gRPC servers on loopback ports), the leader's committer proposing each cycle as
//! one entry through `sepp_cluster::ReplicatedLog`. Every node then applies what the committer
//! decided, and a caller is answered only once a quorum holds its cycle.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sepp_cluster::{LogStoreOptions, Node, ReplicatedLog};
use sepp_core::validate::ReservePlan;
use sepp_core::{JobId, NewJob, Payload, Policy, State, StorageRules};
use sepp_engine::{Command, CommitterHandle, CommitterSettings};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(30);

fn fresh() -> State {
    State::new(Arc::new(Policy::default()), StorageRules::default())
}

fn config() -> Arc<openraft::Config> {
    Arc::new(sepp_cluster::local::quick_config("test").validate().expect("a valid Raft configuration"))
}

async fn start(id: u64, dir: &Path, listener: TcpListener) -> Node {
    let me = sepp_cluster::local::node_addr(listener.local_addr().expect("a bound listener"));
    Node::start(id, me, dir, config(), Arc::new(fresh), listener, LogStoreOptions::default())
        .await
        .expect("start the node")
}

fn job(index: usize) -> (JobId, NewJob) {
    let payload = Payload { data: vec![index as u8; 100], encoding: "raw".into() };
    (JobId::new_v4(), NewJob { queue: "q".into(), job_type: "t".into(), payload: Some(payload), ..NewJob::default() })
}

async fn ask<T>(committer: &CommitterHandle, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> T {
    let (reply, answer) = oneshot::channel();
    committer.send(command(reply)).await.expect("the committer runs");
    answer.await.expect("the committer answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_s_committer_replicates_its_cycles_and_answers_only_once_a_quorum_has_them() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (listeners, addrs) = sepp_cluster::local::listeners(3).await.unwrap();
    let mut nodes = BTreeMap::new();
    for (position, listener) in listeners.into_iter().enumerate() {
        let id = position as u64 + 1;
        nodes.insert(id, start(id, dirs[position].path(), listener).await);
    }
    nodes[&1].raft.initialize(sepp_cluster::local::members(&addrs)).await.expect("initialize the cluster");
    let metrics = nodes[&1]
        .raft
        .wait(Some(WAIT))
        .metrics(|metrics| metrics.current_leader.is_some(), "a leader")
        .await
        .expect("a leader is elected");
    let leader_id = metrics.current_leader.unwrap();
    let leader = nodes[&leader_id].raft.clone();

    let runtime = tokio::runtime::Handle::current();
    let local = nodes[&leader_id].machine.local_frames();
    let log = ReplicatedLog::new(leader.clone(), runtime.clone(), local.clone());
    let settings = CommitterSettings { command_queue_capacity: 64, ..CommitterSettings::default() };
    let opened = move || Ok::<_, std::convert::Infallible>((fresh(), Box::new(log) as Box<dyn sepp_log::Log>));
    let Ok((committer, closed)) = sepp_engine::spawn(opened, settings);

    // Many callers at once, so that cycles are pipelined: each answer comes only after its
    // cycle's entry is committed.
    let mut calls = tokio::task::JoinSet::new();
    for index in 0..200 {
        let committer = committer.clone();
        calls.spawn(async move { ask(&committer, |reply| Command::Enqueue { jobs: vec![job(index)], reply }).await });
    }
    let mut accepted = Vec::new();
    while let Some(answer) = calls.join_next().await {
        accepted.push(answer.unwrap()[0].as_ref().expect("accepted").job_id);
    }
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 50 };
    let leased = ask(&committer, |reply| Command::Reserve { plan, reply }).await;
    assert_eq!(leased.len(), 50);
    for delivery in &leased[..25] {
        let (job_id, attempt) = (delivery.value.job.id, delivery.value.attempt);
        ask(&committer, |reply| Command::Ack { job_id, attempt, reply }).await.expect("ack");
    }

    // Every node applies the same state: 175 jobs left, 25 of them leased.
    let last = leader.metrics().borrow().last_log_index.expect("entries");
    for node in nodes.values() {
        node.raft.wait(Some(WAIT)).applied_index_at_least(Some(last), "applied").await.expect("applied");
    }
    // The leader applied its own entries from the records its committer encoded them from (the
    // followers decoded theirs), and the states are the same.
    assert!(local.taken() > 0, "the leader decoded its own entries");
    assert!(local.is_empty(), "{} frames left unapplied", local.len());
    let fingerprint = nodes[&leader_id].machine.state_fingerprint();
    for node in nodes.values() {
        assert_eq!(node.machine.state_fingerprint(), fingerprint, "node {}", node.id);
        let acked: Vec<JobId> = leased[..25].iter().map(|delivery| delivery.value.job.id).collect();
        node.machine.with_state(|state| {
            for id in &accepted {
                assert_eq!(state.live_job(id).is_some(), !acked.contains(id), "node {}: job {id}", node.id);
            }
        });
    }

    // Without a quorum the leader keeps the entry in its own log but answers nobody; once a
    // follower is back, the caller hears.
    let followers: Vec<u64> = nodes.keys().copied().filter(|id| *id != leader_id).collect();
    let mut paths = BTreeMap::new();
    for id in &followers {
        let node = nodes.remove(id).unwrap();
        node.stop().await.expect("stop a follower");
        paths.insert(*id, dirs[*id as usize - 1].path().to_path_buf());
    }
    let before = leader.metrics().borrow().last_log_index.expect("entries");
    let (reply, mut answer) = oneshot::channel();
    committer.send(Command::Enqueue { jobs: vec![job(999)], reply }).await.expect("the committer runs");
    leader
        .wait(Some(WAIT))
        .metrics(|metrics| metrics.last_log_index > Some(before), "the entry in the leader's log")
        .await
        .expect("the leader appends the entry");
    assert!(answer.try_recv().is_err(), "answered without a quorum");
    let back = followers[0];
    let listener = TcpListener::bind(addrs[back as usize - 1]).await.expect("the follower's address again");
    nodes.insert(back, start(back, &paths[&back], listener).await);
    let accepted = tokio::time::timeout(WAIT, answer).await.expect("answered").expect("an answer");
    assert!(accepted[0].is_ok());

    drop(committer);
    closed.wait().await.expect("the committer stops");
    // A log that is gone (its node deposed) leaves no frame waiting, holding its jobs.
    let gone = ReplicatedLog::new(leader.clone(), runtime, local.clone());
    local.push(vec![1, 2, 3], Vec::new());
    drop(gone);
    assert!(local.is_empty(), "a dropped log left {} frames waiting", local.len());
    for node in nodes.into_values() {
        node.stop().await.expect("stop");
    }
}

/// One node as the server will run it: Raft, a committer that starts as a follower, and the
/// driver that lets it serve while the node leads.
struct Member {
    node: Node,
    committer: CommitterHandle,
    closed: sepp_engine::Closed,
    driver: tokio::task::JoinHandle<()>,
}

fn follower_settings() -> CommitterSettings {
    CommitterSettings { command_queue_capacity: 64, follows: true, ..CommitterSettings::default() }
}

async fn member(id: u64, dir: &Path, listener: TcpListener) -> Member {
    let node = start(id, dir, listener).await;
    let opened =
        || Ok::<_, std::convert::Infallible>((fresh(), Box::new(sepp_engine::NotLeading) as Box<dyn sepp_log::Log>));
    let Ok((committer, closed)) = sepp_engine::spawn(opened, follower_settings());
    let driver = tokio::spawn(sepp_server::cluster::follow_leadership(
        node.raft.clone(),
        node.machine.clone(),
        committer.clone(),
    ));
    Member { node, committer, closed, driver }
}

impl Member {
    /// Stops it as a crash would leave it: Raft and its server gone, the committer with them.
    async fn stop(self) {
        tokio::time::timeout(WAIT, self.node.stop()).await.expect("the node stops in time").expect("stop the node");
        tokio::time::timeout(WAIT, self.driver).await.expect("the driver ends with Raft").expect("the driver");
        drop(self.committer);
        tokio::time::timeout(WAIT, self.closed.wait()).await.expect("the committer stops").expect("closed");
    }
}

/// The committer of the member that serves now, once one does.
async fn serving(members: &BTreeMap<u64, Member>) -> CommitterHandle {
    loop {
        for member in members.values() {
            if *member.committer.leading().borrow() {
                return member.committer.clone();
            }
        }
        let mut changes: Vec<_> = members.values().map(|member| member.committer.leading()).collect();
        let waits = changes.iter_mut().map(|leading| Box::pin(leading.changed()));
        tokio::time::timeout(WAIT, futures_select(waits.collect())).await.expect("a member serves in time");
    }
}

/// Resolves when any of `futures` does.
async fn futures_select<F: std::future::Future + Unpin>(mut futures: Vec<F>) {
    std::future::poll_fn(|cx| {
        for future in &mut futures {
            if std::pin::Pin::new(future).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Enqueues `count` jobs through whichever member serves, retrying a call that got no answer
/// (the member stepped down under it); returns the acknowledged ids.
async fn enqueue_through_the_leader(members: &BTreeMap<u64, Member>, first: usize, count: usize) -> Vec<JobId> {
    let mut acknowledged = Vec::new();
    let mut index = first;
    while acknowledged.len() < count {
        let committer = serving(members).await;
        let job = job(index);
        let id = job.0;
        let (reply, answer) = oneshot::channel();
        if committer.send(Command::Enqueue { jobs: vec![job], reply }).await.is_ok()
            && let Ok(outcome) = answer.await
        {
            outcome[0].as_ref().expect("accepted");
            acknowledged.push(id);
        }
        index += 1;
    }
    acknowledged
}

/// Three members in temporary directories on loopback ports, their cluster initialized.
async fn three_members() -> (Vec<tempfile::TempDir>, Vec<std::net::SocketAddr>, BTreeMap<u64, Member>) {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (listeners, addrs) = sepp_cluster::local::listeners(3).await.unwrap();
    let mut members = BTreeMap::new();
    for (position, listener) in listeners.into_iter().enumerate() {
        let id = position as u64 + 1;
        members.insert(id, member(id, dirs[position].path(), listener).await);
    }
    members[&1].node.raft.initialize(sepp_cluster::local::members(&addrs)).await.expect("initialize the cluster");
    (dirs, addrs, members)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_leader_stops_another_member_serves_from_the_committed_state() {
    let (dirs, addrs, mut members) = three_members().await;
    let mut acknowledged = enqueue_through_the_leader(&members, 0, 50).await;
    let first_leader = members.values().find(|member| *member.committer.leading().borrow()).expect("a leader").node.id;
    // A follower's committer refuses: its caller hears nothing.
    let follower = members.values().find(|member| member.node.id != first_leader).unwrap();
    let (reply, answer) = oneshot::channel();
    follower.committer.send(Command::Enqueue { jobs: vec![job(10_000)], reply }).await.expect("runs");
    assert!(answer.await.is_err(), "a follower's committer answered");
    members.remove(&first_leader).unwrap().stop().await;
    acknowledged.extend(enqueue_through_the_leader(&members, 100, 50).await);
    let second_leader = members.values().find(|member| *member.committer.leading().borrow()).unwrap().node.id;
    assert_ne!(second_leader, first_leader);

    // The new leader serves what the old one acknowledged: every job, once, as attempt 1.
    let committer = serving(&members).await;
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 1000 };
    let leased = ask(&committer, |reply| Command::Reserve { plan, reply }).await;
    let mut ids: Vec<JobId> = leased.iter().map(|delivery| delivery.value.job.id).collect();
    ids.sort();
    let mut expected = acknowledged.clone();
    expected.sort();
    assert_eq!(ids, expected, "the jobs the new leader holds are the acknowledged ones");
    assert!(leased.iter().all(|delivery| delivery.value.attempt == 1));
    drop(committer);

    // The old leader comes back as a follower and catches up.
    let back = first_leader as usize - 1;
    let listener = TcpListener::bind(addrs[back]).await.expect("the old address again");
    members.insert(first_leader, member(first_leader, dirs[back].path(), listener).await);
    let last = members[&second_leader].node.raft.metrics().borrow().last_log_index.expect("entries");
    let fingerprint = members[&second_leader].node.machine.state_fingerprint();
    for member in members.values() {
        member.node.raft.wait(Some(WAIT)).applied_index_at_least(Some(last), "applied").await.expect("applied");
        assert_eq!(member.node.machine.state_fingerprint(), fingerprint, "node {}", member.node.id);
    }
    for member in members.into_values() {
        member.stop().await;
    }
}

/// Leases, idempotency keys and lease expiry keep their meaning across a failover: a lease the
/// old leader gave is acked on the new one, an idempotency key bound on the old leader still
/// deduplicates, and a lease that runs out after the failover expires on the new leader (its
/// sweep), which delivers the job again as attempt 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_idempotency_keys_keep_their_meaning_across_a_failover() {
    let (_dirs, _addrs, mut members) = three_members().await;

    let old = serving(&members).await;
    let (kept, kept_job) = job(1);
    let (expiring, mut expiring_job) = job(2);
    expiring_job.queue = "short".into();
    let (keyed, mut keyed_job) = job(3);
    keyed_job.idempotency_key = Some("order-17".into());
    let jobs = vec![(kept, kept_job), (expiring, expiring_job), (keyed, keyed_job.clone())];
    let accepted = ask(&old, |reply| Command::Enqueue { jobs, reply }).await;
    assert!(accepted.iter().all(Result::is_ok));
    let long = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 600_000, max_jobs: 1 };
    let leased = ask(&old, |reply| Command::Reserve { plan: long, reply }).await;
    assert_eq!((leased[0].value.job.id, leased[0].value.attempt), (kept, 1));
    let short = ReservePlan { queues: vec!["short".into()], wait_ms: 0, lease_ms: 1_000, max_jobs: 1 };
    let leased_short = ask(&old, |reply| Command::Reserve { plan: short, reply }).await;
    assert_eq!((leased_short[0].value.job.id, leased_short[0].value.attempt), (expiring, 1));

    let first_leader = members.values().find(|member| *member.committer.leading().borrow()).unwrap().node.id;
    drop(old);
    members.remove(&first_leader).unwrap().stop().await;
    let new = serving(&members).await;

    let acked = ask(&new, |reply| Command::Ack { job_id: kept, attempt: 1, reply }).await;
    assert!(acked.is_ok(), "the old leader's lease was not honoured: {:?}", acked.err());
    let again = ask(&new, |reply| Command::Enqueue { jobs: vec![(JobId::new_v4(), keyed_job)], reply }).await;
    let again = again[0].as_ref().expect("accepted");
    assert!(again.deduplicated && again.job_id == keyed, "the idempotency key was forgotten: {again:?}");
    // Parked until the short lease runs out on the new leader.
    let wait = ReservePlan { queues: vec!["short".into()], wait_ms: 30_000, lease_ms: 60_000, max_jobs: 1 };
    let redelivered = ask(&new, |reply| Command::Reserve { plan: wait, reply }).await;
    assert_eq!(redelivered.len(), 1, "the expired lease was not swept on the new leader");
    assert_eq!((redelivered[0].value.job.id, redelivered[0].value.attempt), (expiring, 2));

    drop(new);
    for member in members.into_values() {
        member.stop().await;
    }
}
