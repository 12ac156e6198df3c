//! `GET /cluster`: the cluster as this node sees it; and the refusal of the data routes on a
//! node that does not serve (a follower), which names the leader instead.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sepp_admin_types::{ClusterDisabled, ClusterInfo, ClusterMember, ClusterNode, ErrorBody};

use crate::admin::AdminState;
use crate::admin::access::Viewer;

/// `GET /cluster`: `{"enabled": false}` on a single node; otherwise this node's id, role, term,
/// whether it serves, the leader, and each member with its addresses and (on the leader) how
/// many entries it lacks.
pub async fn view(State(state): State<AdminState>, Viewer(_): Viewer) -> Json<ClusterInfo> {
    let Some(gate) = &state.cluster else {
        return Json(ClusterInfo::Disabled(ClusterDisabled { enabled: false }));
    };
    let info = gate.info();
    let status = gate.status();
    let members: Vec<ClusterMember> = info
        .members
        .iter()
        .map(|member| {
            let raft = status
                .members
                .iter()
                .filter_map(|known| known.member.as_ref())
                .find(|known| known.id == member.id)
                .map(|known| known.raft_addr.clone());
            ClusterMember {
                id: member.id,
                addr: member.addr.clone(),
                raft_addr: raft,
                voter: member.voter,
                leader: Some(member.id) == info.leader_id,
                replication_lag: member.replication_lag,
            }
        })
        .collect();
    Json(ClusterInfo::Node(ClusterNode {
        enabled: true,
        node_id: info.node_id,
        role: info.role,
        serving: gate.refusal().is_none(),
        term: info.term,
        leader_id: info.leader_id,
        leader_addr: (!info.leader_addr.is_empty()).then_some(info.leader_addr),
        last_applied_index: info.last_applied_index,
        last_log_index: status.last_log_index,
        snapshot_index: status.snapshot_index,
        members,
    }))
}

/// In front of the routes of the queue's data and changes (`routes::router` says which): on a
/// node that does not serve, they answer 503 with code `not_leader` and the leader's client
/// address when one is known.
pub async fn leader_only(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    if let Some(refusal) = state.cluster.as_ref().and_then(|gate| gate.refusal()) {
        let leader = refusal.metadata().get(crate::cluster::LEADER_METADATA).and_then(|value| value.to_str().ok());
        let body = ErrorBody {
            error: refusal.message().to_owned(),
            code: "not_leader".to_owned(),
            rejection: None,
            leader_addr: leader.map(str::to_owned),
        };
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    }
    next.run(request).await
}
