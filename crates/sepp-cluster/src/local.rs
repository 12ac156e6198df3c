//! Nodes of a cluster in one process, on loopback ports: what the tests start.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;

use openraft::BasicNode;
use tokio::net::TcpListener;

/// `count` listeners on free loopback ports, and their addresses.
pub async fn listeners(count: usize) -> io::Result<(Vec<TcpListener>, Vec<SocketAddr>)> {
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..count {
        listeners.push(TcpListener::bind("127.0.0.1:0").await?);
    }
    let addrs = listeners.iter().map(TcpListener::local_addr).collect::<io::Result<_>>()?;
    Ok((listeners, addrs))
}

/// The membership of nodes 1, 2, ... at `addrs`, in that order.
pub fn members(addrs: &[SocketAddr]) -> BTreeMap<u64, BasicNode> {
    addrs.iter().zip(1..).map(|(addr, id)| (id, BasicNode::new(addr))).collect()
}
