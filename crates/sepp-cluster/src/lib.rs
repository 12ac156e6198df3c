//! sepp-cluster: the pieces of a replicated sepp on `openraft`.
//!
//! So far this is the Raft log storage ([`LogStore`]): Raft entries in checksummed segment
//! files of the data directory, with the vote, the committed id and the purge point beside them,
//! recovered on open the way sepp's own log is (a torn tail of the last segment is cut, damage
//! anywhere else refuses to open). The server does not use it yet: cluster mode, the state
//! machine over `sepp_core::State` and the network between nodes come next.
//!
//! - `entry`: how one Raft entry (and a membership) is encoded.
//! - `log_store`: the segment files, recovery, and openraft's `RaftLogStorage`.

mod entry;
mod log_store;

use std::io::Cursor;

pub use entry::{DecodeError, decode_entry, encode_entry};
pub use log_store::{LogStore, LogStoreOptions, OpenError};

/// The application data of a normal Raft entry: one committer cycle's records, as the bytes of
/// one `sepp_log` frame (checksummed records).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame(pub Vec<u8>);

openraft::declare_raft_types!(
    /// sepp's Raft types: node ids are `u64`, a node is its address, and an entry carries a
    /// frame of records.
    pub TypeConfig:
        D = Frame,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        SnapshotData = Cursor<Vec<u8>>,
);

pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<u64>;
pub type Vote = openraft::Vote<u64>;
pub type StorageError = openraft::StorageError<u64>;
