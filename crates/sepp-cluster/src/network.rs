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

/// The most bytes of entries one AppendEntries carries (unless its first entry alone is
/// larger). openraft gives every AppendEntries the heartbeat interval (100 ms by default) to be
/// answered, and asks for up to `max_payload_entries` (64, `MAX_PAYLOAD_ENTRIES` in the server) entries at once; an entry is a whole
/// committer cycle, so a follower catching up on large ones could be sent tens of megabytes that
/// it cannot receive, write and sync in time, again and again, and never catch up. Entries past
/// this bound wait for the next call: the follower's success is reported to openraft as a
/// partial success up to the last entry sent, and it sends the rest from there.
pub const MAX_APPEND_BYTES: usize = 1 << 20;

/// How many of `entries`, from the first, fit in `budget` bytes of frames (at least one).
pub fn entries_within(entries: &[crate::Entry], budget: usize) -> usize {
    let mut total = 0usize;
    for (position, entry) in entries.iter().enumerate() {
        total = total.saturating_add(match &entry.payload {
            openraft::EntryPayload::Normal(frame) => frame.0.len(),
            _ => 0,
        });
        if total > budget && position > 0 {
            return position;
        }
    }
    entries.len()
}

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
            // The node could not be reached (connection refused or lost): openraft waits a
            // moment before it tries that node again, and the next call makes a fresh connection.
            Err(status) if status.code() == tonic::Code::Unavailable => {
                self.client = None;
                return Err(RPCError::Unreachable(Unreachable::new(&status)));
            }
            // Anything else, a call that ran out of time above all, is an error openraft retries
            // at once: a follower that was slow to answer one heartbeat must get the next on time
            // (were it reported unreachable, openraft would send it nothing for half a second,
            // longer than its lease of the leader, and it would stand for election).
            Err(status) => return Err(RPCError::Network(NetworkError::new(&status))),
        };
        let result: Result<Resp, RaftError<u64, E>> =
            decode(&body).map_err(|error| RPCError::Network(NetworkError::new(&error)))?;
        result.map_err(|error| RPCError::RemoteError(RemoteError::new(self.target, error)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        mut rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, NodeAddr, RaftError<u64>>> {
        let fit = entries_within(&rpc.entries, MAX_APPEND_BYTES);
        if fit == rpc.entries.len() {
            return self.call(&rpc, Call::AppendEntries, &option).await;
        }
        rpc.entries.truncate(fit);
        let last_sent = rpc.entries.last().map(|entry| entry.log_id);
        match self.call(&rpc, Call::AppendEntries, &option).await? {
            AppendEntriesResponse::Success => Ok(AppendEntriesResponse::PartialSuccess(last_sent)),
            other => Ok(other),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, bytes: usize) -> crate::Entry {
        crate::Entry {
            log_id: openraft::LogId::new(openraft::CommittedLeaderId::new(1, 1), index),
            payload: openraft::EntryPayload::Normal(crate::Frame(vec![0; bytes])),
        }
    }

    #[test]
    fn an_append_carries_the_entries_that_fit_the_budget_and_at_least_one() {
        let entries: Vec<_> = (1..=5).map(|index| entry(index, 400)).collect();
        assert_eq!(entries_within(&entries, 1_000), 2);
        assert_eq!(entries_within(&entries, 2_000), 5);
        assert_eq!(entries_within(&entries, 100), 1, "a first entry larger than the budget goes alone");
        assert_eq!(entries_within(&[], 100), 0);
        let blank = crate::Entry { log_id: entries[0].log_id, payload: openraft::EntryPayload::Blank };
        assert_eq!(entries_within(&[blank.clone(), blank], 0), 2, "entries without a frame cost nothing");
    }
}
