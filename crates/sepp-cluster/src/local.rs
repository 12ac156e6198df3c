//! Nodes of a cluster in one process, on loopback ports: what the tests start.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::NodeAddr;

/// `count` listeners on free loopback ports, and their addresses.
pub async fn listeners(count: usize) -> io::Result<(Vec<TcpListener>, Vec<SocketAddr>)> {
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..count {
        listeners.push(TcpListener::bind("127.0.0.1:0").await?);
    }
    let addrs = listeners.iter().map(TcpListener::local_addr).collect::<io::Result<_>>()?;
    Ok((listeners, addrs))
}

/// The membership of nodes 1, 2, ... whose Raft services are at `addrs`, in that order.
pub fn members(addrs: &[SocketAddr]) -> BTreeMap<u64, NodeAddr> {
    addrs.iter().zip(1..).map(|(addr, id)| (id, node_addr(*addr))).collect()
}

/// A node in one process whose Raft service is at `addr`. Such nodes serve no clients: the
/// API address is the Raft address.
pub fn node_addr(addr: SocketAddr) -> NodeAddr {
    NodeAddr { raft: addr.to_string(), api: addr.to_string() }
}

/// Raft settings for nodes on one machine: heartbeats every 50 ms, elections after 300 to
/// 600 ms without one.
pub fn quick_config(cluster_name: &str) -> openraft::Config {
    openraft::Config {
        cluster_name: cluster_name.into(),
        heartbeat_interval: 50,
        election_timeout_min: 300,
        election_timeout_max: 600,
        ..openraft::Config::default()
    }
}
