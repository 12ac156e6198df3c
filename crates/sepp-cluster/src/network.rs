//! The network between the nodes of a cluster: openraft's three calls (append entries, vote,
//! install a snapshot chunk) as the gRPC service `sepp.cluster.v1.Raft`, each request and result
//! CBOR-encoded whole in one `bytes` field. [`service`] answers them for a local `Raft`;
//! [`Network`] is openraft's client side, one lazily connected channel per peer.

use std::error::Error;
use std::time::Duration;

use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

use crate::{NodeAddr, Raft, TypeConfig};

/// The generated gRPC code of `proto/raft.proto`.
pub mod proto {
    tonic::include_proto!("sepp.cluster.v1");
}

use proto::RaftMessage;
use proto::raft_client::RaftClient;
use proto::raft_server::RaftServer;

/// How long a peer gets to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).expect("encoding into memory does not fail");
    out
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ciborium::de::Error<std::io::Error>> {
    ciborium::from_reader(bytes)
}

fn invalid(error: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("not an openraft message: {error}"))
}

/// Answers the other nodes' calls for `raft`.
pub fn service(raft: Raft) -> RaftServer<Answerer> {
    RaftServer::new(Answerer { raft }).max_decoding_message_size(usize::MAX).max_encoding_message_size(usize::MAX)
}

/// The server side of `sepp.cluster.v1.Raft`.
pub struct Answerer {
    raft: Raft,
}

#[tonic::async_trait]
impl proto::raft_server::Raft for Answerer {
    async fn append_entries(&self, request: Request<RaftMessage>) -> Result<Response<RaftMessage>, Status> {
        let rpc: AppendEntriesRequest<TypeConfig> = decode(&request.into_inner().body).map_err(invalid)?;
        let result = self.raft.append_entries(rpc).await;
        Ok(Response::new(RaftMessage { body: encode(&result) }))
    }

    async fn vote(&self, request: Request<RaftMessage>) -> Result<Response<RaftMessage>, Status> {
        let rpc: VoteRequest<u64> = decode(&request.into_inner().body).map_err(invalid)?;
        let result = self.raft.vote(rpc).await;
        Ok(Response::new(RaftMessage { body: encode(&result) }))
    }

    async fn install_snapshot(&self, request: Request<RaftMessage>) -> Result<Response<RaftMessage>, Status> {
        let rpc: InstallSnapshotRequest<TypeConfig> = decode(&request.into_inner().body).map_err(invalid)?;
        let result = self.raft.install_snapshot(rpc).await;
        Ok(Response::new(RaftMessage { body: encode(&result) }))
    }
}

/// openraft's network: a [`Peer`] for each node it talks to.
#[derive(Clone, Copy, Debug, Default)]
pub struct Network;

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &NodeAddr) -> Peer {
        Peer { target, addr: node.raft.clone(), client: None }
    }
}

/// One other node, reached at `addr`; connected at the first call and again after a failed one.
pub struct Peer {
    target: u64,
    addr: String,
    client: Option<RaftClient<Channel>>,
}

#[derive(Clone, Copy)]
enum Call {
    AppendEntries,
    Vote,
    InstallSnapshot,
}

impl Peer {
    async fn call<Req, Resp, E>(
        &mut self,
        rpc: &Req,
        call: Call,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<u64, NodeAddr, RaftError<u64, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: DeserializeOwned + Error,
    {
        let client = match &mut self.client {
            Some(client) => client,
            None => {
                let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))
                    .map_err(|error| RPCError::Unreachable(Unreachable::new(&error)))?
                    .connect_timeout(CONNECT_TIMEOUT)
                    .tcp_nodelay(true);
                let channel =
                    endpoint.connect().await.map_err(|error| RPCError::Unreachable(Unreachable::new(&error)))?;
                let client = RaftClient::new(channel)
                    .max_decoding_message_size(usize::MAX)
                    .max_encoding_message_size(usize::MAX);
                self.client.insert(client)
            }
        };
        let mut request = Request::new(RaftMessage { body: encode(rpc) });
        request.set_timeout(option.hard_ttl());
        let response = match call {
            Call::AppendEntries => client.append_entries(request).await,
            Call::Vote => client.vote(request).await,
            Call::InstallSnapshot => client.install_snapshot(request).await,
        };
        let body = match response {
            Ok(response) => response.into_inner().body,
            Err(status) => {
                // A fresh connection next time: this one may be to a node that went away.
                self.client = None;
                return Err(RPCError::Unreachable(Unreachable::new(&status)));
            }
        };
        let result: Result<Resp, RaftError<u64, E>> =
            decode(&body).map_err(|error| RPCError::Network(NetworkError::new(&error)))?;
        result.map_err(|error| RPCError::RemoteError(RemoteError::new(self.target, error)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64>>> {
        self.call(&rpc, Call::AppendEntries, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64, InstallSnapshotError>>> {
        self.call(&rpc, Call::InstallSnapshot, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64>>> {
        self.call(&rpc, Call::Vote, &option).await
    }
}
