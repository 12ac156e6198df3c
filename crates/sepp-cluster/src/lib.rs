//! sepp-cluster: the pieces of a replicated sepp on `openraft`.
//!
//! openraft's two storage halves: the Raft log storage ([`LogStore`]), Raft entries in
//! checksummed segment files with the vote and the purge point beside them, recovered on open
//! the way sepp's own log is (a torn tail of the last segment is cut, damage anywhere else
//! refuses to open); and the state machine ([`StateMachine`]), a `sepp_core::State` that applies
//! the records of committed entries, with the records that rebuild it as its snapshot. Then the
//! network between nodes ([`network`]): openraft's calls over gRPC. A [`Node`] puts them together
//! in a running process, and a leader's committer proposes its cycles through a
//! [`ReplicatedLog`]; the committer's leader and follower modes, the driver that switches them
//! by Raft's leadership, and the startup of a cluster node are the server's
//! (`sepp_server::cluster`). The operator starts a cluster and changes its membership through
//! the [`membership`] service, which `sepp cluster` calls.
//!
//! - `entry`: how one Raft entry (and a membership) is encoded on disk.
//! - `log_store`: the segment files, recovery, and openraft's `RaftLogStorage`.
//! - `machine`: openraft's `RaftStateMachine` over `sepp_core::State`.
//! - `payloads`: the state machine's payload files, which queued jobs point into.
//! - `sealed`: small files written whole (the Raft state, the snapshot).
//! - `network`: the `sepp.cluster.v1.Raft` service and openraft's `RaftNetwork` client.
//! - `membership`: `sepp.cluster.v1.Membership` (init, add, remove, status) and a node's status.
//! - `node`: one node in a process: log, state machine, `Raft`, and its server.
//! - `local`: loopback listeners and memberships for nodes in one process (the tests').
//! - `replicated_log`: `sepp_log::Log` for a leader's committer: cycles proposed as entries.

// No unsafe code here; a panic in the library is a bug with a message (`expect` says what was
// assumed).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod entry;
pub mod local;
mod log_store;
mod machine;
pub mod membership;
pub mod network;
mod node;
mod payloads;
mod replicated_log;
mod sealed;

pub use entry::{DecodeError, decode_entry, encode_entry};
pub use log_store::{COMMITTED_EVERY, LogStore, LogStoreOptions, OpenError};
pub use machine::{
    FreshState, LOCAL_FRAMES_MAX_BYTES, LocalFrames, SNAPSHOT_FRAME_RECORDS, SnapshotReadError, StateMachine,
    decode_snapshot, encode_snapshot, read_snapshot, write_snapshot,
};
pub use node::Node;
pub use payloads::{
    PayloadReader, PayloadStore, READ_WINDOW as PAYLOAD_READ_WINDOW, SEGMENT_BYTES as PAYLOAD_FILE_BYTES,
};
pub use replicated_log::ReplicatedLog;

/// The application data of a normal Raft entry: one committer cycle's records, as the bytes of
/// one `sepp_log` frame (checksummed records).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Frame(#[serde(with = "serde_bytes")] pub Vec<u8>);

/// Where a node of the cluster is: the address the other nodes reach its Raft service at, and
/// the address its clients reach the queue at (what a follower tells a client that must go to
/// the leader).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeAddr {
    pub raft: String,
    pub api: String,
}

openraft::declare_raft_types!(
    /// sepp's Raft types: node ids are `u64`, a node is its two addresses, and an entry carries
    /// a frame of records.
    pub TypeConfig:
        D = Frame,
        R = (),
        NodeId = u64,
        Node = NodeAddr,
        SnapshotData = tokio::fs::File,
);

pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<u64>;
pub type Vote = openraft::Vote<u64>;
pub type StorageError = openraft::StorageError<u64>;

pub type Raft = openraft::Raft<TypeConfig>;
