//! One node of a cluster in a running process: its Raft log and state machine in a directory,
//! its `Raft`, and on a listener the `sepp.cluster.v1.Raft` service for the other nodes and the
//! `sepp.cluster.v1.Membership` service for the operator.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::membership::membership_service;
use crate::network::{Network, service};
use crate::{FreshState, LogStore, LogStoreOptions, NodeAddr, Raft, StateMachine};

/// A started node.
pub struct Node {
    pub id: u64,
    pub raft: Raft,
    pub machine: StateMachine,
    /// Whether the directory held a Raft log or a snapshot when the node started: the node
    /// belonged to a cluster before, and rejoins it. (Raft's metrics say so only once Raft has
    /// started, a moment later.)
    pub restored: bool,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
}

impl Node {
    /// Starts node `id`, which the others reach at `me`, on the Raft log and snapshot in `dir`
    /// (created when missing), serving the other nodes on `listener`.
    pub async fn start(
        id: u64,
        me: NodeAddr,
        dir: &Path,
        config: Arc<openraft::Config>,
        fresh: FreshState,
        listener: TcpListener,
        options: LogStoreOptions,
    ) -> io::Result<Node> {
        // Accepted sockets get TCP_NODELAY (the builder's setting covers only listeners it binds
        // itself): without it a follower's small answer can wait out a delayed ACK.
        let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        Node::start_on(id, me, dir, config, fresh, incoming, options).await
    }

    /// [`Node::start`], serving the connections `incoming` yields (the server's accept path,
    /// with its limits) instead of a listener's.
    pub async fn start_on<I, IO, IE>(
        id: u64,
        me: NodeAddr,
        dir: &Path,
        config: Arc<openraft::Config>,
        fresh: FreshState,
        incoming: I,
        options: LogStoreOptions,
    ) -> io::Result<Node>
    where
        I: futures_util::Stream<Item = Result<IO, IE>> + Send + 'static,
        IO: tonic::transport::server::Connected + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        IE: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
    {
        let store = LogStore::open(dir, options).map_err(io::Error::other)?;
        let machine = StateMachine::open(dir, fresh)?;
        let restored = store.holds_entries() || machine.holds_snapshot();
        let raft = Raft::new(id, config, Network, store, machine.clone()).await.map_err(io::Error::other)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tonic::transport::Server::builder()
            .add_service(service(raft.clone()))
            .add_service(membership_service(raft.clone(), me, machine.clone()))
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            });
        Ok(Node { id, raft, machine, restored, stop, server: tokio::spawn(serving) })
    }

    /// Stops Raft and the server; the directory keeps what the node made durable.
    pub async fn stop(self) -> io::Result<()> {
        self.raft.shutdown().await.map_err(io::Error::other)?;
        let _ = self.stop.send(());
        self.server.await.map_err(io::Error::other)?.map_err(io::Error::other)
    }
}
