//! Cluster mode with real binaries: three `sepp` processes on loopback made one cluster by
//! `sepp cluster init`. Followers send clients to the leader; twenty SIGKILLs of the leader
//! under load lose no acknowledged operation (the single node's crash check, run against the
//! cluster); a node that missed a compacted log, and a node added to the running cluster, catch
//! up from a snapshot; and every node ends with the same state.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{ELECTION_TIMEOUT, FOLLOW_LEADER, TestCluster, sepp, start_node};
use common::crash_load::{self, Ledger, cancel_some, produce, work};
use common::*;
use sepp_client::client::{RetryPolicy, SeppClient};
use sepp_client::{EnqueueRequest, ReserveOptions};
use sepp_server::proto::v1 as pb;
use tonic::Code;

/// A request that says its caller follows the leader itself, so a follower refuses it.
fn following<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(FOLLOW_LEADER, tonic::metadata::MetadataValue::from_static("1"));
    request
}

/// The followers of a cluster answer queue calls of clients that follow the leader themselves
/// (`sepp-follow-leader`) UNAVAILABLE and name the leader's client address; every node answers
/// GetServerInfo with the same membership; `sepp cluster status` tells roles and replication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_name_the_leader_and_every_node_describes_the_cluster() {
    let cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let leader_addr = format!("127.0.0.1:{}", cluster.node(leader).port());
    for follower in (1..=3).filter(|id| *id != leader) {
        let mut client = cluster.node(follower).raw_client().await;
        let job = crash_load::new_job("q", b"to a follower");
        let refused = client.enqueue_batch(following(pb::EnqueueBatchRequest { jobs: vec![job] })).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        let named = refused.metadata().get("sepp-leader").and_then(|value| value.to_str().ok());
        assert_eq!(named, Some(leader_addr.as_str()), "{refused:?}");
        // A reserve, which clients never retry, is refused the same way: nothing ran.
        let request = pb::ReserveRequest { queues: vec!["q".into()], ..Default::default() };
        let refused = client.reserve(following(request)).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        assert!(refused.metadata().get("sepp-leader").is_some());
        // A Consume stream is refused at its opening, the same way.
        let opening = pb::ConsumeRequest {
            open: Some(pb::ConsumeOpen {
                queues: vec!["q".into()],
                lease_duration: Some(prost_types::Duration { seconds: 30, nanos: 0 }),
                worker_id: None,
                credits: 1,
            }),
            ..Default::default()
        };
        let refused = client.consume(following(futures_util::stream::iter([opening]))).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        assert_eq!(
            refused.metadata().get("sepp-leader").and_then(|value| value.to_str().ok()),
            Some(leader_addr.as_str())
        );

        let info = client.get_server_info(pb::GetServerInfoRequest {}).await.expect("any node answers").into_inner();
        let view = info.cluster.expect("a cluster node describes its cluster");
        assert_eq!(view.node_id, follower);
        assert_eq!(view.role, "follower");
        assert_eq!(view.leader_id, Some(leader));
        assert_eq!(view.leader_addr, leader_addr);
        assert_eq!(view.members.len(), 3);
        assert!(view.members.iter().all(|member| member.voter));
    }
    let mut client = cluster.node(leader).raw_client().await;
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    let view = info.cluster.expect("the leader describes its cluster");
    assert_eq!(view.role, "leader");
    assert!(view.members.iter().all(|member| member.replication_lag.is_some()), "{view:?}");

    let out = sepp(&["cluster", "status", "--json", "--node", &cluster.raft[leader as usize - 1]]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status is JSON");
    assert_eq!(status["role"], "leader");
    assert_eq!(status["members"].as_array().map(Vec::len), Some(3));
    let text = sepp(&["cluster", "status", "--node", &cluster.raft[0]]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("leader") && text.contains(&leader_addr), "{text}");

    // init again is refused: the nodes already belong to a cluster.
    let again = sepp(&["cluster", "init", "--node", &cluster.raft[0]]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already belongs to a cluster"), "{stderr}");
    // A sentence, not Raft's debug form of its log ids and votes.
    assert!(!stderr.contains("LogId") && !stderr.contains("leader_id"), "{stderr}");
    assert!(stderr.contains("a cluster is initialized once"), "{stderr}");
}

/// A node killed with SIGKILL and started again says it rejoins its cluster (not that it
/// belongs to none), as after SIGTERM, and follows the leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_started_again_after_a_kill_says_it_rejoins_its_cluster() {
    let mut cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    for kill in [true, false] {
        let node = cluster.node_mut(follower);
        if kill {
            node.sigkill_and_wait();
        } else {
            assert!(node.sigterm_and_wait().success());
        }
        // The log is the new process's.
        node.start_again();
        let node = cluster.node(follower);
        let said = node.wait_for_log("this node belongs to", ELECTION_TIMEOUT).await.expect("a word on its cluster");
        assert!(said.contains("belongs to a cluster and rejoins it"), "after a kill: {kill}: {said}");
        let status = cluster.status(follower, false).await.expect("status");
        assert!(status.initialized, "{status:?}");
    }
}

/// Returns once the queue service's health on node `id` is `expected` (each change of
/// leadership reaches the health service a moment after the committer's own word), watching it
/// with the health service's `Watch` stream; panics at the deadline.
async fn wait_for_queue_health(cluster: &TestCluster, id: u64, expected: i32) {
    use tonic_health::pb::health_client::HealthClient;
    let mut health = HealthClient::new(cluster.node(id).channel().await);
    let request = tonic_health::pb::HealthCheckRequest { service: "sepp.v1.QueueService".into() };
    let mut statuses = health.watch(request).await.expect("health answers").into_inner();
    let mut last = None;
    let watched = tokio::time::timeout(ELECTION_TIMEOUT, async {
        while let Some(answer) = statuses.message().await.expect("the health stream") {
            if answer.status == expected {
                return;
            }
            last = Some(answer.status);
        }
        panic!("the health stream of node {id} ended");
    })
    .await;
    assert!(watched.is_ok(), "node {id}'s queue service stayed {last:?}, not {expected}");
}

/// Raft restores a leader from its own saved vote, so the leader of a cluster whose two other
/// nodes are down, restarted alone, believes it leads with nobody to confirm it. It must not
/// say so: `sepp cluster status` and GetServerInfo call it a candidate, its queue service's
/// health is NOT_SERVING (the leader's was SERVING, a follower's NOT_SERVING), and a queue call
/// is refused UNAVAILABLE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_restarted_without_a_majority_never_says_it_leads() {
    const SERVING: i32 = tonic_health::pb::health_check_response::ServingStatus::Serving as i32;
    const NOT_SERVING: i32 = tonic_health::pb::health_check_response::ServingStatus::NotServing as i32;
    let mut cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    wait_for_queue_health(&cluster, leader, SERVING).await;
    let followers: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    wait_for_queue_health(&cluster, followers[0], NOT_SERVING).await;
    assert_eq!(cluster.status(leader, false).await.expect("status").role, "leader");

    for follower in &followers {
        cluster.node_mut(*follower).sigkill_and_wait();
    }
    let node = cluster.node_mut(leader);
    node.sigkill_and_wait();
    node.start_again();
    // Raft made it leader again from its vote, and nobody confirms it.
    let node = cluster.node(leader);
    node.wait_for_log("no majority confirms it leads", ELECTION_TIMEOUT).await.expect("a word on its leadership");

    let status = cluster.status(leader, false).await.expect("status");
    assert_eq!(status.role, "candidate", "{status:?}");
    let mut client = node.raw_client().await;
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.expect("answers").into_inner();
    assert_eq!(info.cluster.expect("a cluster node").role, "candidate");
    wait_for_queue_health(&cluster, leader, NOT_SERVING).await;
    // Refused whether the caller follows the leader or not: there is none to forward to.
    for follows in [true, false] {
        let job = pb::EnqueueBatchRequest { jobs: vec![crash_load::new_job("q", b"to nobody")] };
        let request = if follows { following(job) } else { tonic::Request::new(job) };
        let refused = client.enqueue_batch(request).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        assert!(refused.message().contains("no majority confirms it leads"), "{refused:?}");
        assert!(refused.message().contains("this node was the last leader it knows of"), "{refused:?}");
        assert!(refused.metadata().get("sepp-leader").is_none(), "{refused:?}");
    }
}

/// Clients that do not follow the leader themselves (the official sepp-rs 0.1, or ours with
/// `follow_leader(false)`) work against a follower: it forwards their calls to the leader and
/// streams the answers back, and counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_forwards_the_calls_of_clients_that_do_not_follow_the_leader() {
    let prometheus = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n";
    let cluster = TestCluster::start(3, prometheus, "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let queue = unique("forwarded");

    // sepp-rs 0.1: enqueue, reserve, extend and ack, all through the follower.
    let old = cluster.node(follower).sepp_rs_client().await;
    let enqueued = old.enqueue(sepp_rs::EnqueueRequest::new(&queue, "t").unwrap()).await.expect("enqueue");
    let options = sepp_rs::ReserveOptions::new(vec![queue.clone()], Duration::from_secs(30))
        .unwrap()
        .with_wait_timeout(Duration::from_secs(5));
    let jobs = old.reserve(&options).await.expect("reserve").expect("the job");
    assert_eq!(jobs[0].ctx.id.to_string(), enqueued.job_id.to_string());
    old.extend(&jobs[0].ctx, Duration::from_secs(60)).await.expect("extend");
    old.ack(&jobs[0].ctx).await.expect("ack");

    // Ours with follow_leader(false) stays on the follower, whose calls are forwarded.
    let ours = SeppClient::builder(cluster.node(follower).addr()).follow_leader(false).connect().await.unwrap();
    let ack = ours.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).await.expect("enqueue");
    let reserve = ReserveOptions::new([queue.as_str()], Duration::from_secs(30))
        .unwrap()
        .with_wait_timeout(Duration::from_secs(5));
    let job = ours.reserve(&reserve).await.expect("reserve").expect("the job").remove(0);
    assert_eq!(job.ctx.id, ack.job_id);
    ours.ack(&job.ctx).await.expect("ack");
    // A Worker, whose jobs come on a Consume stream, forwarded as a whole.
    let (done, mut handled) = tokio::sync::mpsc::unbounded_channel();
    let worker = sepp_client::worker::Worker::new(ours.clone(), [queue.as_str()], Duration::from_secs(30))
        .unwrap()
        .handle("w", move |_, ctx: std::sync::Arc<sepp_client::JobCtx>| {
            let done = done.clone();
            async move {
                let _ = done.send(ctx.id.clone());
                Ok(())
            }
        })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    let ack = ours.enqueue(EnqueueRequest::new(&queue, "w").unwrap()).await.expect("enqueue");
    let handled = tokio::time::timeout(Duration::from_secs(30), handled.recv()).await.expect("the Worker ran the job");
    assert_eq!(handled, Some(ack.job_id));
    shutdown.shutdown();
    running.await.unwrap();
    // Through its stream: the leader saw no Reserve calls but the two above.
    let leader_metrics = format!("http://127.0.0.1:{}/metrics", cluster.node(leader).prometheus_port());
    let text = reqwest::get(&leader_metrics).await.expect("scrape").text().await.expect("text");
    let reserves: f64 = text
        .lines()
        .filter(|line| line.starts_with("sepp_requests_total{") && line.contains("method=\"Reserve\""))
        .filter_map(|line| line.rsplit_once(' ').and_then(|(_, value)| value.parse::<f64>().ok()))
        .sum();
    assert_eq!(reserves, 2.0, "{text}");

    // The leader holds what was done through the follower: nothing is left.
    let mut leader_client = cluster.node(leader).raw_client().await;
    let mut empty = pb::ReserveRequest { queues: vec![queue.clone()], ..Default::default() };
    empty.lease_duration = Some(prost_types::Duration { seconds: 30, nanos: 0 });
    assert!(leader_client.reserve(empty).await.expect("reserve").into_inner().jobs.is_empty());
    // The follower forwarded them all (4 calls of sepp-rs, at least 3 of ours).
    let url = format!("http://127.0.0.1:{}/metrics", cluster.node(follower).prometheus_port());
    let text = reqwest::get(&url).await.expect("scrape").text().await.expect("text");
    let answered = text
        .lines()
        .find(|line| line.starts_with("sepp_cluster_forwarded_calls_total{") && line.contains("outcome=\"answered\""))
        .and_then(|line| line.rsplit_once(' '))
        .and_then(|(_, value)| value.parse::<f64>().ok());
    assert!(answered.is_some_and(|count| count >= 7.0), "{text}");
    // Every node reports the entry it applied last, and the leader how far each member lags.
    assert!(text.lines().any(|line| line.starts_with("sepp_cluster_applied_index")), "{text}");
    let text = reqwest::get(&leader_metrics).await.expect("scrape").text().await.expect("text");
    let lags = text.lines().filter(|line| line.starts_with("sepp_cluster_replication_lag{")).count();
    assert_eq!(lags, 3, "{text}");
}

/// Producers, workers and a canceller run against the leader while it is killed with SIGKILL
/// 20 times (and started again, as a follower). Afterwards every acknowledged enqueue that was
/// not cancelled was delivered, nothing was delivered after its ack or cancel was acknowledged,
/// each job's attempts only grew, and the three nodes hold the same state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_leader_kills_under_load_lose_no_acknowledged_operation() {
    const KILLS: u64 = 20;
    let mut cluster = TestCluster::start(3, "[limits]\ndefault_max_attempts = 100\n", "");
    let queue = unique("failover");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let next_payload = Arc::new(AtomicU64::new(0));
    let clock = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut failovers = Vec::new();
    let (mut leader, _, _) = cluster.serving_leader("probe").await;
    for kill in 0..KILLS {
        let stop = Arc::new(AtomicBool::new(false));
        let addr = cluster.node(leader).addr();
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let producer = produce(addr.clone(), queue.clone(), ledger.clone(), stop.clone(), next_payload.clone());
            tasks.push(tokio::spawn(producer));
            let worker = work(addr.clone(), queue.clone(), ledger.clone(), stop.clone(), clock.clone());
            tasks.push(tokio::spawn(worker));
        }
        tasks.push(tokio::spawn(cancel_some(addr.clone(), ledger.clone(), stop.clone(), clock.clone())));
        // Kill after a varying amount of acknowledged work, not after a fixed time.
        let target = ledger.lock().unwrap().enqueued.len() + 10 + (kill as usize * 7) % 30;
        let deadline = Instant::now() + Duration::from_secs(10);
        while ledger.lock().unwrap().enqueued.len() < target && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cluster.node_mut(leader).sigkill_and_wait();
        let killed_at = Instant::now();
        // The two others elect a leader that serves: the failover, until a write is
        // acknowledged again.
        let (next, probe, _) = cluster.serving_leader("probe").await;
        failovers.push(killed_at.elapsed());
        assert_ne!(next, leader);
        assert!(!probe.is_empty());
        stop.store(true, Ordering::Relaxed);
        for task in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
        cluster.node_mut(leader).start_again();
        leader = next;
    }

    let (leader, _, _) = cluster.serving_leader("probe").await;
    crash_load::drain(cluster.node(leader).addr(), &queue, &ledger, &clock).await;
    // Every node applied the same entries into the same state.
    let applied = cluster.status(leader, false).await.expect("leader status").last_applied_index.unwrap();
    let fingerprints = cluster.fingerprints_at(applied).await;
    assert!(fingerprints.windows(2).all(|pair| pair[0].1 == pair[1].1), "the nodes' states differ: {fingerprints:?}");
    let ledger = ledger.lock().unwrap();
    crash_load::check(&ledger, KILLS * 10, Some(KILLS));

    failovers.sort();
    eprintln!(
        "cluster crash loop: {KILLS} leader SIGKILLs, {} acknowledged enqueues, {} acknowledged cancels, \
         {} deliveries, failover (kill to the next acknowledged write) median {:?}, max {:?}, in {:?}",
        ledger.enqueued.len(),
        ledger.cancelled.len(),
        ledger.deliveries.values().map(Vec::len).sum::<usize>(),
        failovers[failovers.len() / 2],
        failovers.last().unwrap(),
        started.elapsed()
    );
}

/// With snapshots every 20 entries: a follower stopped while 300 jobs are enqueued finds the
/// entries it missed dropped, and catches up from the leader's snapshot; so does a fourth
/// node added to the running cluster (`sepp cluster add`), which then votes. A removed node
/// leaves the membership. Every node ends with the same state, and the catching-up nodes
/// serve every job once they lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_follower_and_a_new_node_catch_up_from_snapshots() {
    const KEYS: &str = "snapshot_after_entries = 20\n";
    let mut cluster = TestCluster::start(3, "", KEYS);
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let away = (1..=3).find(|id| *id != leader).unwrap();
    cluster.node_mut(away).sigterm_and_wait();

    let mut client = cluster.node(leader).raw_client().await;
    let mut enqueued = HashMap::new();
    for n in 0..300 {
        let payload = format!("{}job-{n}", crash_load::PADDING);
        let job = crash_load::new_job("catch-up", payload.as_bytes());
        let response = client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![job] }).await.unwrap();
        let Some(pb::job_result::Outcome::Success(success)) = &response.get_ref().results[0].outcome else {
            panic!("enqueue {n} failed: {response:?}");
        };
        enqueued.insert(success.job_id.clone(), payload);
    }
    let status = cluster.status(leader, false).await.unwrap();
    assert!(status.snapshot_index.is_some(), "the leader took no snapshot: {status:?}");

    // (A started process's output is new: waiting from its first line.)
    cluster.node_mut(away).start_again();
    let installed = cluster.node(away).wait_for_log("installed a snapshot from the leader", ELECTION_TIMEOUT);
    assert!(installed.await.is_some(), "the returning node did not install a snapshot\n{}", cluster.node(away).logs());

    // A fourth node joins through the real CLI, asked of a follower (which names the leader).
    let (fourth, fourth_raft) = start_node(4, "", KEYS);
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let added = sepp(&["cluster", "add", &fourth_raft, "--json", "--node", &cluster.raft[follower as usize - 1]]);
    assert!(added.status.success(), "sepp cluster add failed: {}", String::from_utf8_lossy(&added.stderr));
    let status: serde_json::Value = serde_json::from_slice(&added.stdout).unwrap();
    let members = status["members"].as_array().unwrap();
    assert_eq!(members.len(), 4);
    assert!(members.iter().all(|member| member["voter"] == true), "{status}");
    let joined = fourth.wait_for_log("installed a snapshot from the leader", ELECTION_TIMEOUT).await;
    assert!(joined.is_some(), "the new node did not install a snapshot\n{}", fourth.logs());
    cluster.nodes.push(fourth);
    cluster.raft.push(fourth_raft);

    let applied = cluster.status(leader, false).await.unwrap().last_applied_index.unwrap();
    let fingerprints = cluster.fingerprints_at(applied).await;
    assert_eq!(fingerprints.len(), 4);
    assert!(fingerprints.windows(2).all(|pair| pair[0].1 == pair[1].1), "the nodes' states differ: {fingerprints:?}");

    // The old leader leaves the membership; the others elect one of themselves, and it serves
    // every job once (so the returning node's or the new node's state serves if it leads).
    let removed = sepp(&["cluster", "remove", &leader.to_string(), "--json", "--node", &cluster.raft[3]]);
    assert!(removed.status.success(), "sepp cluster remove failed: {}", String::from_utf8_lossy(&removed.stderr));
    let status: serde_json::Value = serde_json::from_slice(&removed.stdout).unwrap();
    assert_eq!(status["members"].as_array().map(Vec::len), Some(3), "{status}");
    cluster.node_mut(leader).sigterm_and_wait();
    let (next, _, _) = cluster.serving_leader("probe").await;
    assert_ne!(next, leader);
    let mut client = cluster.node(next).raw_client().await;
    let mut served = HashMap::new();
    loop {
        let jobs = crash_load::reserve(&mut client, "catch-up", 60_000, 0).await;
        if jobs.is_empty() {
            break;
        }
        for job in jobs {
            let payload = String::from_utf8(job.payload.unwrap().data).unwrap();
            assert!(served.insert(job.id, payload).is_none(), "a job was served twice");
        }
    }
    assert_eq!(served, enqueued);
}

/// Acknowledged enqueues of `count` jobs to `queue` on node `id`, by payload.
async fn enqueue_acknowledged(cluster: &TestCluster, id: u64, queue: &str, prefix: &str, count: usize) -> Vec<String> {
    let mut client = QueueServiceClient::new(cluster.node(id).channel().await);
    let mut payloads = Vec::new();
    for n in 0..count {
        let payload = format!("{}{prefix}-{n}", crash_load::PADDING);
        let job = crash_load::new_job(queue, payload.as_bytes());
        let response = client.enqueue_batch(pb::EnqueueBatchRequest { jobs: vec![job] }).await.expect("enqueue");
        assert!(matches!(response.get_ref().results[0].outcome, Some(pb::job_result::Outcome::Success(_))));
        payloads.push(payload);
    }
    payloads
}

/// Each node in its own network namespace. The leader, cut off from the other two, stops
/// acknowledging writes; the two elect a leader and serve; after the link comes back every
/// node converges to one state, which holds every acknowledged write and none of the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_minority_stops_acknowledging_and_the_majority_serves() {
    let netns = match common::netns::Netns::create(3) {
        Ok(netns) => netns,
        Err(why) => {
            eprintln!("skipped: network namespaces are not available here ({why})");
            return;
        }
    };
    let cluster = TestCluster::start_in(&netns, "");
    let (old, _, _) = cluster.serving_leader("probe").await;
    let mut acknowledged = enqueue_acknowledged(&cluster, old, "split", "before", 20).await;

    netns.cut(old);
    // The minority acknowledges nothing: each write waits for a quorum it cannot reach.
    let mut minority = QueueServiceClient::new(cluster.node(old).channel().await);
    let mut unacknowledged = Vec::new();
    for n in 0..3 {
        let payload = format!("{}minority-{n}", crash_load::PADDING);
        let job = crash_load::new_job("split", payload.as_bytes());
        let mut request = tonic::Request::new(pb::EnqueueBatchRequest { jobs: vec![job] });
        request.set_timeout(Duration::from_secs(2));
        let refused = minority.enqueue_batch(request).await;
        assert!(refused.is_err(), "the cut-off leader acknowledged a write: {refused:?}");
        unacknowledged.push(payload);
    }
    let majority: Vec<u64> = (1..=3).filter(|id| *id != old).collect();
    let (new, _, _) = cluster.serving_leader_among(&majority, "probe").await;
    acknowledged.extend(enqueue_acknowledged(&cluster, new, "split", "during", 20).await);
    assert!(cluster.try_enqueue(old, "probe").await.is_none(), "the minority acknowledged a write");

    netns.heal(old);
    let applied = cluster.status(new, false).await.unwrap().last_applied_index.unwrap();
    let fingerprints = cluster.fingerprints_at(applied).await;
    assert_eq!(fingerprints.len(), 3);
    assert!(fingerprints.windows(2).all(|pair| pair[0].1 == pair[1].1), "the nodes' states differ: {fingerprints:?}");
    // The old leader follows now, and names the new one.
    let info = cluster.node(old).raw_client().await.get_server_info(pb::GetServerInfoRequest {}).await.unwrap();
    let view = info.into_inner().cluster.unwrap();
    assert_eq!((view.role.as_str(), view.leader_id), ("follower", Some(new)));

    let mut client = cluster.node(new).raw_client().await;
    let mut served = Vec::new();
    loop {
        let jobs = crash_load::reserve(&mut client, "split", 60_000, 0).await;
        if jobs.is_empty() {
            break;
        }
        served.extend(jobs.into_iter().map(|job| String::from_utf8(job.payload.unwrap().data).unwrap()));
    }
    served.sort();
    acknowledged.sort();
    assert_eq!(served, acknowledged, "the jobs after healing are not exactly the acknowledged ones");
    assert!(unacknowledged.iter().all(|payload| !served.contains(payload)));
}

/// Our Rust client, given a follower's address, follows the leader; when the leader is killed,
/// its retry policy takes it back through the address it was given to the new leader, where the
/// job it enqueued before the kill is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_follows_the_leader_through_a_failover() {
    let mut cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let seed = (1..=3).find(|id| *id != leader).unwrap();
    let policy = RetryPolicy::default()
        .with_max_attempts(50)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_millis(200));
    let client = SeppClient::builder(cluster.node(seed).addr()).retry_policy(policy).connect().await.unwrap();
    let before =
        client.enqueue(EnqueueRequest::new("follow", "before").unwrap()).await.expect("enqueue via the leader");

    cluster.node_mut(leader).sigkill_and_wait();
    let after = client.enqueue(EnqueueRequest::new("follow", "after").unwrap()).await.expect("enqueue after failover");

    let options = ReserveOptions::new(["follow"], Duration::from_secs(30)).unwrap().with_max_jobs(10);
    let jobs = client.reserve(&options).await.expect("reserve on the new leader").unwrap_or_default();
    let mut ids: Vec<String> = jobs.iter().map(|job| job.ctx.id.clone()).collect();
    ids.sort();
    let mut expected = vec![before.job_id, after.job_id];
    expected.sort();
    assert_eq!(ids, expected);
    for job in &jobs {
        client.ack(&job.ctx).await.expect("ack on the new leader");
    }
}

/// The admin API of every node describes the cluster; a follower refuses the data routes with
/// 503 `not_leader` and names the leader, while the leader serves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_shows_the_cluster_and_a_follower_names_the_leader() {
    let cluster = TestCluster::start(3, "[admin]\nenabled = true\nlisten_addr = \"127.0.0.1:0\"\n", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let http = reqwest::Client::new();
    let get = |id: u64, path: &str| {
        let url = format!("{}/admin/api/v1{path}", cluster.node(id).admin_url());
        let request = http.get(url);
        async move {
            let response = request.send().await.expect("admin API answers");
            let status = response.status();
            (status, response.json::<serde_json::Value>().await.expect("JSON"))
        }
    };
    let (status, view) = get(leader, "/cluster").await;
    assert_eq!(status, 200);
    assert_eq!(
        (view["enabled"].as_bool(), view["role"].as_str(), view["serving"].as_bool()),
        (Some(true), Some("leader"), Some(true))
    );
    assert_eq!(view["members"].as_array().map(Vec::len), Some(3));
    assert!(view["members"].as_array().unwrap().iter().all(|member| member["replication_lag"].is_u64()), "{view}");
    let (status, _) = get(leader, "/queues").await;
    assert_eq!(status, 200);

    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let (status, view) = get(follower, "/cluster").await;
    assert_eq!(status, 200);
    assert_eq!((view["role"].as_str(), view["serving"].as_bool()), (Some("follower"), Some(false)));
    assert_eq!(view["leader_id"].as_u64(), Some(leader));
    let leader_addr = format!("127.0.0.1:{}", cluster.node(leader).port());
    let (status, refused) = get(follower, "/queues").await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["code"], "not_leader");
    assert_eq!(refused["leader_addr"].as_str(), Some(leader_addr.as_str()));
    let (status, _) = get(follower, "/server-info").await;
    assert_eq!(status, 200);
}

/// A leader counts its queues' totals for the dashboard while stats are published: the committed
/// state it leads from, which never counts them itself, counts from the moment it leads (they
/// used to read zero).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_dashboard_counts_its_queues_totals() {
    let cluster = TestCluster::start(3, "[admin]\nenabled = true\nlisten_addr = \"127.0.0.1:0\"\n", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    for _ in 0..5 {
        assert!(cluster.try_enqueue(leader, "counted").await.is_some(), "the leader acknowledges");
    }
    let mut client = cluster.node(leader).raw_client().await;
    let mut acked = 0;
    while acked < 3 {
        for job in crash_load::reserve(&mut client, "counted", 60_000, 0).await.into_iter().take(3 - acked) {
            let ack = pb::AckRequest { job_id: job.id, attempt: job.attempt, worker_id: None };
            client.ack(ack).await.expect("the leader acks");
            acked += 1;
        }
    }
    let url = format!("{}/admin/api/v1/overview?history=false", cluster.node(leader).admin_url());
    let http = reqwest::Client::new();
    // The stats snapshot is published every 250 ms: wait for the one that holds the enqueues
    // and acks.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let overview: serde_json::Value =
            http.get(&url).send().await.expect("admin API answers").json().await.expect("JSON");
        let totals = &overview["frame"]["queues"]["counted"]["totals"];
        if (totals["enqueued"].as_u64(), totals["acked"].as_u64()) == (Some(5), Some(3)) {
            break;
        }
        assert!(Instant::now() < deadline, "the leader's totals never counted the enqueues and acks: {overview}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// With admin keys, a follower's admin UI can be signed in to: the login, which cannot join the
/// cluster's audit log there (only the leader writes it), is logged on the node instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_in_to_a_followers_admin_api_works() {
    let admin = "[admin]\nenabled = true\nlisten_addr = \"127.0.0.1:0\"\n\
                 keys = [{ name = \"ana\", key = \"ana-admin-key-7f3a\" }]\n";
    let cluster = TestCluster::start(3, admin, "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    let login = reqwest::Client::new()
        .post(format!("{}/admin/api/v1/session", cluster.node(follower).admin_url()))
        .json(&serde_json::json!({ "name": "ana", "key": "ana-admin-key-7f3a" }))
        .send()
        .await
        .expect("the follower answers");
    assert_eq!(login.status(), 200, "{:?}", login.text().await);
    let logged = cluster.node(follower).wait_for_log("not in the cluster's audit log", ELECTION_TIMEOUT).await;
    assert!(logged.is_some_and(|line| line.contains("session.login")), "{}", cluster.node(follower).logs());
}
