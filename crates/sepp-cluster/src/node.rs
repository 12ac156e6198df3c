//! One node of a cluster in a running process: its Raft log and state machine in a directory,
//! its `Raft`, and the `sepp.cluster.v1.Raft` service on a listener for the other nodes.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::network::{Network, service};
use crate::{FreshState, LogStore, LogStoreOptions, Raft, StateMachine};

/// A started node.
pub struct Node {
    pub id: u64,
    pub raft: Raft,
    pub machine: StateMachine,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
}

impl Node {
    /// Starts node `id` on the Raft log and snapshot in `dir` (created when missing), serving
    /// the other nodes on `listener`.
    pub async fn start(
        id: u64,
        dir: &Path,
        config: Arc<openraft::Config>,
        fresh: FreshState,
        listener: TcpListener,
    ) -> io::Result<Node> {
        let store = LogStore::open(dir, LogStoreOptions::default()).map_err(io::Error::other)?;
        let machine = StateMachine::open(dir, fresh)?;
        let raft = Raft::new(id, config, Network, store, machine.clone()).await.map_err(io::Error::other)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let serving = tonic::transport::Server::builder()
            .add_service(service(raft.clone()))
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            });
        Ok(Node { id, raft, machine, stop, server: tokio::spawn(serving) })
    }

    /// Stops Raft and the server; the directory keeps what the node made durable.
    pub async fn stop(self) -> io::Result<()> {
        self.raft.shutdown().await.map_err(io::Error::other)?;
        let _ = self.stop.send(());
        self.server.await.map_err(io::Error::other)?.map_err(io::Error::other)
    }
}
