//! [`ServerInfo`]: the server's version and limits, from `GetServerInfo`.

use std::time::{Duration, SystemTime};

/// The server's version, protocol versions, clock and limits.
///
/// Limits let a producer check jobs before sending them, and tell a consumer how long a wait
/// or lease may be (the server clamps larger values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The server's version, for example `0.2.0`.
    pub version: String,
    /// The wire protocol versions it speaks, for example `["v1"]`.
    pub supported_protocol_versions: Vec<String>,
    /// The server's clock when it answered.
    pub server_time: SystemTime,
    /// Whether only `allowed_encodings` are accepted for payloads.
    pub restricts_encodings: bool,
    /// The accepted payload encodings, when restricted.
    pub allowed_encodings: Vec<String>,
    /// The largest payload, in bytes.
    pub max_payload_bytes: u64,
    /// The most custom metadata entries on one job.
    pub max_custom_entries: u32,
    /// The largest custom metadata map, in bytes.
    pub max_custom_total_bytes: u64,
    /// The longest custom metadata key, in bytes.
    pub max_custom_key_bytes: u32,
    /// The longest queue name, in bytes.
    pub max_queue_name_bytes: u32,
    /// The longest job type, in bytes.
    pub max_job_type_bytes: u32,
    /// The longest idempotency key, in bytes.
    pub max_idempotency_key_bytes: u32,
    /// How far ahead a job may be scheduled (also caps nack delays).
    pub max_schedule_horizon: Duration,
    /// The most jobs in one enqueue call.
    pub max_enqueue_batch: u32,
    /// The most jobs one reserve (or dead-letter drain) returns.
    pub max_reserve_batch: u32,
    /// The most queues one reserve may name.
    pub max_reserve_queues: u32,
    /// The longest reserve wait.
    pub max_wait_timeout: Duration,
    /// The longest lease.
    pub max_lease_duration: Duration,
    /// Whether only declared queues may be used.
    pub strict_queues: bool,
    /// Whether dead-lettered jobs are kept (and can be drained); when false, a drain is always
    /// empty.
    pub dead_letter_retention_enabled: bool,
    /// What the server offers beyond the 0.1 protocol, by name (`"ack_batch"`, `"cancel"`,
    /// `"schedules"`, `"pause"`, ...); empty on 0.1.
    pub features: Vec<String>,
    /// The most credits a `Consume` stream may have outstanding; 0 from a server without the
    /// feature `consume`.
    pub max_consume_credits: u32,
    /// The answering node's view of its cluster; `None` on a single node (and on 0.1).
    pub cluster: Option<ClusterInfo>,
}

/// A cluster as the answering node sees it (every node answers `GetServerInfo`, leader or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    /// This node's id.
    pub node_id: u64,
    /// `"leader"`, `"follower"`, `"candidate"`, `"learner"` or `"shutdown"`.
    pub role: String,
    /// The Raft term: it grows with every election.
    pub term: u64,
    /// The leader's node id, when a leader is known.
    pub leader_id: Option<u64>,
    /// The leader's client address (`host:port`), when a leader is known; else empty.
    pub leader_addr: String,
    /// The last log entry this node has applied to its state.
    pub last_applied_index: Option<u64>,
    /// The members of the cluster.
    pub members: Vec<ClusterMember>,
}

impl ClusterInfo {
    /// Whether the answering node is the leader.
    pub fn is_leader(&self) -> bool {
        self.role == "leader"
    }
}

/// A member of the cluster, as the answering node knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMember {
    /// Its node id.
    pub id: u64,
    /// Its client address (`host:port`).
    pub addr: String,
    /// A voter counts towards the quorum; a learner only receives entries.
    pub voter: bool,
    /// Known on the leader only: how many entries of the leader's log this member lacks.
    pub replication_lag: Option<u64>,
}

/// Why a `GetServerInfo` answer could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerInfoError {
    /// A required field was unset or empty.
    #[error("missing field {0}")]
    MissingField(&'static str),
    /// The server time was before the Unix epoch or had invalid nanoseconds; carries its seconds.
    #[error("invalid server time: {0}s")]
    InvalidServerTime(i64),
}
