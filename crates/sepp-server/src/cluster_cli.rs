//! `sepp cluster <verb>`: start a cluster, change its membership, and see its status.
//!
//! Talks to a node's cluster listener (`sepp.cluster.v1.Membership`): by default this
//! configuration's own node (`cluster.advertise_addr`), or `--node HOST:PORT`. A membership
//! change asked of a follower is sent again, once, to the leader it names. Prints a table for
//! people and, with `--json`, an object for scripts; exits 1 with the reason on stderr when the
//! node refuses.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use sepp_cluster::membership::LEADER_RAFT_METADATA;
use sepp_cluster::network::proto::membership_client::MembershipClient;
use sepp_cluster::network::proto::{
    AddNodeRequest, ClusterStatus, InitializeRequest, Member, RemoveNodeRequest, StatusRequest,
};
use serde_json::json;
use tonic::transport::Endpoint;

#[derive(Args)]
pub struct ClusterArgs {
    /// The node to ask, HOST:PORT of its cluster listener (default: this configuration's
    /// cluster.advertise_addr).
    #[arg(long, global = true)]
    node: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// Start a cluster of the node asked and its peers: those given with --peer, else the
    /// configuration's cluster.peers. Run it once, on one node, after every node of the first
    /// membership has started.
    Init {
        /// A peer's cluster address (HOST:PORT); its id and client address are asked of it.
        #[arg(long = "peer")]
        peers: Vec<String>,
    },
    /// Add the node whose cluster address is RAFT_ADDR (it must be running, with a node id no
    /// member has): it catches up as a learner, then votes.
    Add {
        /// The new node's cluster address, HOST:PORT; its id and client address are asked of it.
        raft_addr: String,
    },
    /// Remove a node from the cluster.
    Remove {
        /// The node's cluster.node_id.
        id: u64,
    },
    /// This node's view of the cluster: roles, term, and how far each member has replicated.
    Status {
        /// Also a hash of the node's whole state (a pass over every job): nodes that applied
        /// the same entries show the same one.
        #[arg(long)]
        fingerprint: bool,
    },
}

/// Runs one `sepp cluster` command against the node the arguments (or `config`) name;
/// `config` is the configuration, or why it did not load.
pub fn run(args: ClusterArgs, config: Result<sepp_config::Config, String>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&error.to_string()),
    };
    let config = match config {
        Ok(config) => Some(config),
        // Another node's address is all a command needs, but `init` reads the members here.
        Err(_) if args.node.is_some() && !matches!(&args.verb, Verb::Init { peers } if peers.is_empty()) => None,
        Err(error) => return fail(&error),
    };
    match runtime.block_on(execute(&args, config.as_ref())) {
        Ok(status) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&status_json(&status)).expect("JSON of plain values"));
            } else {
                print!("{}", status_text(&status));
            }
            ExitCode::SUCCESS
        }
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

async fn execute(args: &ClusterArgs, config: Option<&sepp_config::Config>) -> Result<ClusterStatus, String> {
    let node = match (&args.node, config) {
        (Some(node), _) => node.clone(),
        (None, Some(config)) => config.cluster.advertised(),
        (None, None) => return Err("no node to ask: give --node HOST:PORT or a configuration".into()),
    };
    match &args.verb {
        Verb::Init { peers } => {
            let mut client = connect(&node).await?;
            let own = identity(&mut client, &node).await?;
            let mut members = vec![own];
            if peers.is_empty() {
                let config = config.ok_or("no peers: give --peer HOST:PORT, or a configuration with cluster.peers")?;
                members.extend(config.cluster.peers.iter().map(|peer| Member {
                    id: peer.id,
                    raft_addr: peer.raft_addr.clone(),
                    api_addr: peer.api_addr.clone(),
                }));
            }
            for peer in peers {
                members.push(identity(&mut connect(peer).await?, peer).await?);
            }
            answer(client.initialize(InitializeRequest { members }).await)
        }
        Verb::Status { fingerprint } => {
            answer(connect(&node).await?.status(StatusRequest { fingerprint: *fingerprint }).await)
        }
        Verb::Add { raft_addr } => {
            let member = identity(&mut connect(raft_addr).await?, raft_addr).await?;
            membership_change(&node, Change::Add(member)).await
        }
        Verb::Remove { id } => membership_change(&node, Change::Remove(*id)).await,
    }
}

/// The id and addresses of the node at `addr`, as it reports them.
async fn identity(client: &mut MembershipClient<tonic::transport::Channel>, addr: &str) -> Result<Member, String> {
    let status = answer(client.status(StatusRequest { fingerprint: false }).await)?;
    status.this_node.ok_or_else(|| format!("the node at {addr} did not say who it is"))
}

#[derive(Clone)]
enum Change {
    Add(Member),
    Remove(u64),
}

/// Asks `node` for a membership change; a follower names the leader, which is asked instead.
async fn membership_change(node: &str, change: Change) -> Result<ClusterStatus, String> {
    match send_change(node, change.clone()).await {
        Err(status) if status.metadata().get(LEADER_RAFT_METADATA).is_some() => {
            let leader = status.metadata().get(LEADER_RAFT_METADATA).and_then(|value| value.to_str().ok());
            answer(send_change(leader.unwrap_or_default(), change).await)
        }
        other => answer(other),
    }
}

async fn send_change(node: &str, change: Change) -> Result<tonic::Response<ClusterStatus>, tonic::Status> {
    let mut client = connect(node).await.map_err(tonic::Status::unavailable)?;
    match change {
        Change::Add(member) => client.add_node(AddNodeRequest { member: Some(member) }).await,
        Change::Remove(id) => client.remove_node(RemoveNodeRequest { id }).await,
    }
}

fn answer(result: Result<tonic::Response<ClusterStatus>, tonic::Status>) -> Result<ClusterStatus, String> {
    result.map(tonic::Response::into_inner).map_err(|status| status.message().to_owned())
}

async fn connect(node: &str) -> Result<MembershipClient<tonic::transport::Channel>, String> {
    let endpoint = Endpoint::from_shared(format!("http://{node}"))
        .map_err(|error| format!("{node} is not a node address: {error}"))?
        .connect_timeout(Duration::from_secs(5));
    let channel = endpoint.connect().await.map_err(|error| format!("could not reach the node at {node}: {error}"))?;
    Ok(MembershipClient::new(channel))
}

fn status_json(status: &ClusterStatus) -> serde_json::Value {
    let members: Vec<_> = status
        .members
        .iter()
        .map(|member| {
            let address = member.member.clone().unwrap_or_default();
            json!({
                "id": address.id,
                "raft_addr": address.raft_addr,
                "api_addr": address.api_addr,
                "voter": member.voter,
                "matched_index": member.matched_index,
            })
        })
        .collect();
    json!({
        "node_id": status.node_id,
        "initialized": status.initialized,
        "role": status.role,
        "term": status.term,
        "leader_id": status.leader_id,
        "last_log_index": status.last_log_index,
        "last_applied_index": status.last_applied_index,
        "snapshot_index": status.snapshot_index,
        "fingerprint": status.fingerprint.map(|fingerprint| format!("{fingerprint:016x}")),
        "fingerprint_index": status.fingerprint_index,
        "members": members,
        "this_node": status.this_node.as_ref().map(|member| json!({
            "id": member.id,
            "raft_addr": member.raft_addr,
            "api_addr": member.api_addr,
        })),
    })
}

fn status_text(status: &ClusterStatus) -> String {
    let index = |index: Option<u64>| index.map_or_else(|| "-".to_owned(), |index| index.to_string());
    if !status.initialized {
        return format!(
            "node {} belongs to no cluster yet (run `sepp cluster init` on one node, or add it)\n",
            status.node_id
        );
    }
    let leader = status.leader_id.map_or_else(|| "none (an election is running)".to_owned(), |id| id.to_string());
    let mut out = format!(
        "node {}: {} in term {}, leader {leader}\nlog to {}, applied to {}, snapshot to {}\n\n",
        status.node_id,
        status.role,
        status.term,
        index(status.last_log_index),
        index(status.last_applied_index),
        index(status.snapshot_index),
    );
    if let Some(fingerprint) = status.fingerprint {
        out.push_str(&format!(
            "state fingerprint {fingerprint:016x} as of entry {}\n\n",
            index(status.fingerprint_index)
        ));
    }
    out.push_str(&format!("{:<6} {:<8} {:<24} {:<24} {:>9} {:>6}\n", "ID", "ROLE", "RAFT", "API", "MATCHED", "LAG"));
    for member in &status.members {
        let address = member.member.clone().unwrap_or_default();
        let role = if Some(address.id) == status.leader_id {
            "leader"
        } else if member.voter {
            "voter"
        } else {
            "learner"
        };
        let lag = match (status.last_log_index, member.matched_index) {
            (Some(last), Some(matched)) => last.saturating_sub(matched).to_string(),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "{:<6} {:<8} {:<24} {:<24} {:>9} {:>6}\n",
            address.id,
            role,
            address.raft_addr,
            address.api_addr,
            index(member.matched_index),
            lag
        ));
    }
    out
}
