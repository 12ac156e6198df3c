//! Operating a cluster: the `sepp.cluster.v1.Membership` service (start a cluster, add and
//! remove nodes, report status) on a node's Raft listener, and [`status`], one node's view of
//! the cluster from Raft's metrics.
//!
//! Membership changes go through openraft's joint consensus: a node is added as a learner,
//! which receives the log (or a snapshot, when the entries it needs were dropped) until it has
//! caught up, and only then becomes a voter; a removed node leaves the membership at once.

use std::collections::{BTreeMap, BTreeSet};

use openraft::error::{ClientWriteError, ForwardToLeader, InitializeError, RaftError};
use openraft::{ChangeMembers, RaftMetrics, ServerState};
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};

use crate::network::proto::membership_server::{Membership, MembershipServer};
use crate::network::proto::{
    AddNodeRequest, ClusterStatus, InitializeRequest, Member, MemberStatus, RemoveNodeRequest, StatusRequest,
};
use crate::{NodeAddr, Raft, StateMachine};

/// The metadata entry that names the leader's Raft address to a caller that asked a follower
/// for a membership change.
pub const LEADER_RAFT_METADATA: &str = "sepp-leader-raft";

/// This node's view of the cluster, from Raft's metrics; `me` is how the others reach it.
pub fn status(metrics: &RaftMetrics<u64, NodeAddr>, me: &NodeAddr) -> ClusterStatus {
    let membership = metrics.membership_config.membership();
    let voters: BTreeSet<u64> = membership.voter_ids().collect();
    let matched = metrics.replication.as_ref();
    let members = membership
        .nodes()
        .map(|(id, node)| MemberStatus {
            member: Some(member(*id, node)),
            voter: voters.contains(id),
            matched_index: if *id == metrics.id && metrics.state == ServerState::Leader {
                metrics.last_log_index
            } else {
                matched.and_then(|matched| matched.get(id).copied().flatten()).map(|log_id| log_id.index)
            },
        })
        .collect();
    ClusterStatus {
        node_id: metrics.id,
        role: role_of(metrics).into(),
        term: metrics.current_term,
        leader_id: metrics.current_leader,
        last_log_index: metrics.last_log_index,
        last_applied_index: metrics.last_applied.map(|log_id| log_id.index),
        snapshot_index: metrics.snapshot.map(|log_id| log_id.index),
        members,
        initialized: membership.nodes().next().is_some(),
        this_node: Some(member(metrics.id, me)),
        fingerprint: None,
        fingerprint_index: None,
    }
}

/// This node's role as `sepp cluster status` and the APIs name it: `leader` only for a leader a
/// majority has acknowledged. Raft restores a leader's state from its own saved vote, so a node
/// restarted while the others are down believes it leads with nobody to confirm it; it commits
/// nothing and serves nothing, and is reported as a `candidate` (it waits for a majority) until
/// a majority answers it.
pub fn role_of(metrics: &RaftMetrics<u64, NodeAddr>) -> &'static str {
    match metrics.state {
        ServerState::Leader if metrics.millis_since_quorum_ack.is_none() => "candidate",
        state => role(state),
    }
}

/// A Raft role as `sepp cluster status` and the APIs name it.
pub fn role(state: ServerState) -> &'static str {
    match state {
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shutdown",
    }
}

fn member(id: u64, node: &NodeAddr) -> Member {
    Member { id, raft_addr: node.raft.clone(), api_addr: node.api.clone() }
}

/// Answers the membership calls for `raft`, the node at `me` with the state machine `machine`.
pub fn membership_service(raft: Raft, me: NodeAddr, machine: StateMachine) -> MembershipServer<Operator> {
    MembershipServer::new(Operator { raft, me, machine })
}

/// The server side of `sepp.cluster.v1.Membership`.
pub struct Operator {
    raft: Raft,
    me: NodeAddr,
    machine: StateMachine,
}

impl Operator {
    fn status(&self) -> ClusterStatus {
        status(&self.raft.metrics().borrow(), &self.me)
    }

    /// The status after a change committed, once this node's metrics show it.
    async fn status_after(&self, index: u64) -> ClusterStatus {
        let mut metrics = self.raft.metrics();
        let _ = metrics.wait_for(|metrics| metrics.last_applied.is_some_and(|applied| applied.index >= index)).await;
        self.status()
    }
}

fn member_of(member: Option<Member>) -> Result<(u64, NodeAddr), Status> {
    let member = member.ok_or_else(|| Status::invalid_argument("member is required"))?;
    if member.id == 0 {
        return Err(Status::invalid_argument("a node id is 1 or more"));
    }
    if member.raft_addr.is_empty() || member.api_addr.is_empty() {
        return Err(Status::invalid_argument("a member needs its raft_addr and its api_addr"));
    }
    Ok((member.id, NodeAddr { raft: member.raft_addr, api: member.api_addr }))
}

/// A failed membership change as a status: a follower names the leader.
fn write_failed(error: RaftError<u64, ClientWriteError<u64, NodeAddr>>) -> Status {
    match error {
        RaftError::APIError(ClientWriteError::ForwardToLeader(ForwardToLeader { leader_node, leader_id })) => {
            let mut status = Status::failed_precondition(match leader_id {
                Some(id) => format!("this node does not lead; node {id} does"),
                None => "this node does not lead, and no leader is known yet (an election is running)".into(),
            });
            if let Some(value) = leader_node.and_then(|node| MetadataValue::try_from(node.raft).ok()) {
                status.metadata_mut().insert(LEADER_RAFT_METADATA, value);
            }
            status
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(error)) => {
            Status::failed_precondition(error.to_string())
        }
        RaftError::Fatal(fatal) => Status::unavailable(format!("Raft stopped: {fatal}")),
    }
}

#[tonic::async_trait]
impl Membership for Operator {
    async fn initialize(&self, request: Request<InitializeRequest>) -> Result<Response<ClusterStatus>, Status> {
        let mut members = BTreeMap::new();
        for member in request.into_inner().members {
            let (id, node) = member_of(Some(member))?;
            if members.insert(id, node).is_some() {
                return Err(Status::invalid_argument(format!("node id {id} is listed twice")));
            }
        }
        let own = self.raft.metrics().borrow().id;
        if members.is_empty() {
            members.insert(own, self.me.clone());
        }
        if !members.contains_key(&own) {
            return Err(Status::invalid_argument(format!("the members must include this node ({own})")));
        }
        match self.raft.initialize(members).await {
            Ok(()) => {
                tracing::info!("cluster initialized");
                Ok(Response::new(self.status()))
            }
            Err(RaftError::APIError(InitializeError::NotAllowed(not_allowed))) => {
                let term = not_allowed.vote.leader_id().term;
                let index =
                    not_allowed.last_log_id.map_or_else(|| "none".to_owned(), |log_id| log_id.index.to_string());
                Err(Status::failed_precondition(format!(
                    "this node already belongs to a cluster (term {term}, last log entry {index}): a cluster is \
                     initialized once, on a node with no cluster data; `sepp cluster status` shows it, and \
                     `sepp cluster add` adds a node to it"
                )))
            }
            Err(RaftError::APIError(InitializeError::NotInMembers(_))) => {
                Err(Status::invalid_argument(format!("the members must include this node ({own})")))
            }
            Err(RaftError::Fatal(fatal)) => Err(Status::unavailable(format!("Raft stopped: {fatal}"))),
        }
    }

    async fn add_node(&self, request: Request<AddNodeRequest>) -> Result<Response<ClusterStatus>, Status> {
        let (id, node) = member_of(request.into_inner().member)?;
        let known = self.raft.metrics().borrow().membership_config.membership().get_node(&id).cloned();
        if known.as_ref().is_some_and(|known| *known != node) {
            return Err(Status::failed_precondition(format!(
                "node {id} is already a member at other addresses; remove it first"
            )));
        }
        tracing::info!(id, raft = %node.raft, api = %node.api, "adding a node: as a learner until it catches up");
        self.raft.add_learner(id, node, true).await.map_err(write_failed)?;
        let written = self.raft.change_membership(ChangeMembers::AddVoterIds([id].into()), false).await;
        let written = written.map_err(write_failed)?;
        tracing::info!(id, "node added as a voter");
        Ok(Response::new(self.status_after(written.log_id.index).await))
    }

    async fn remove_node(&self, request: Request<RemoveNodeRequest>) -> Result<Response<ClusterStatus>, Status> {
        let id = request.into_inner().id;
        let voter = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            let membership = metrics.membership_config.membership();
            if membership.get_node(&id).is_none() {
                return Err(Status::not_found(format!("node {id} is not a member")));
            }
            membership.voter_ids().any(|voter| voter == id)
        };
        let change =
            if voter { ChangeMembers::RemoveVoters([id].into()) } else { ChangeMembers::RemoveNodes([id].into()) };
        let written = self.raft.change_membership(change, false).await.map_err(write_failed)?;
        tracing::info!(id, "node removed");
        Ok(Response::new(self.status_after(written.log_id.index).await))
    }

    async fn status(&self, request: Request<StatusRequest>) -> Result<Response<ClusterStatus>, Status> {
        let mut status = self.status();
        if request.into_inner().fingerprint {
            let machine = self.machine.clone();
            let (index, fingerprint) = tokio::task::spawn_blocking(move || machine.fingerprint())
                .await
                .map_err(|error| error.to_string())
                .and_then(|taken| taken.map_err(|error| error.to_string()))
                .map_err(|error| Status::internal(format!("fingerprinting the state failed: {error}")))?;
            status.fingerprint = Some(fingerprint);
            status.fingerprint_index = index;
        }
        Ok(Response::new(status))
    }
}
