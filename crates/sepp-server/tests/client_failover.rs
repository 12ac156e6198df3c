//! Our Rust client against a real three-node cluster with its default settings: `get_server_info`
//! describes the cluster as each node sees it, and calls ride a failover without the
//! application seeing it.

mod common;

use std::time::Duration;

use common::cluster::TestCluster;
use sepp_client::client::SeppClient;
use sepp_client::{EnqueueRequest, ReserveOptions};

/// Given the leader's own address (so no node ever redirects it), a client with the default
/// retry policy learns from `get_server_info` that it talks to a cluster; when that leader is
/// killed, its next enqueue (of a job without an idempotency key) and reserve reach the new
/// leader with no error, and the job enqueued before the kill is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_with_its_defaults_rides_a_leader_kill() {
    let mut cluster = TestCluster::start(3, "", "");
    let (leader, _, _) = cluster.serving_leader("probe").await;
    let follower = (1..=3).find(|id| *id != leader).unwrap();

    let single = SeppClient::connect(cluster.node(follower).addr()).await.unwrap();
    let seen = single.get_server_info().await.unwrap().cluster.expect("a node of a cluster says so");
    assert_eq!((seen.node_id, seen.role.as_str()), (follower, "follower"));
    assert_eq!(seen.leader_id, Some(leader));
    assert_eq!(seen.members.len(), 3, "{seen:?}");

    let client = SeppClient::connect(cluster.node(leader).addr()).await.unwrap();
    let info = client.get_server_info().await.unwrap().cluster.expect("the leader describes the cluster");
    assert!(info.is_leader(), "{info:?}");
    assert_eq!(info.node_id, leader);
    let before = client.enqueue(EnqueueRequest::new("ride", "before").unwrap()).await.expect("enqueue on the leader");

    cluster.node_mut(leader).sigkill_and_wait();
    let after =
        client.enqueue(EnqueueRequest::new("ride", "after").unwrap()).await.expect("enqueue through the failover");

    let options = ReserveOptions::new(["ride"], Duration::from_secs(30)).unwrap().with_max_jobs(10);
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
