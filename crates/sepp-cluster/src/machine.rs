//! The replicated state machine: a `sepp_core::State` that applies the records of committed
//! Raft entries, and whose snapshot is the records that rebuild it.
//!
//! A normal entry carries one `sepp_log` frame (one committer cycle's records); applying it
//! applies each record with `State::apply`, as recovery does from the local log, so every node
//! that applies the same entries holds the same state. Payloads stay in memory here (a frame
//! read without a file keeps them inline).
//!
//! Snapshot data: frames of at most [`SNAPSHOT_FRAME_RECORDS`] records of `State::snapshot`
//! (which carries the acceptance sequence counter, so a node restored from it numbers the next
//! job as the others do), then an empty frame as the end mark. The snapshot's Raft metadata
//! (last entry, membership) travels beside it, as openraft hands it over.
//!
//! A state machine opened on a directory keeps its current snapshot there (`raft-snapshot`:
//! `SEPPSNP1 | CRC32C of the rest | meta length: u32 | meta (CBOR) | data`, written to a
//! temporary name, synced, renamed, the directory synced) before it tells openraft the snapshot
//! exists, since openraft then purges the log behind it; and it starts from that snapshot when
//! opened again, so a node that restarts has the state its purged log no longer holds.

use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{EntryPayload, StorageIOError, StoredMembership};
use sepp_core::{Record, State};
use sepp_log::frame::{self, Read};

use crate::sealed::{self, ReadError};
use crate::{Entry, LogId, NodeAddr, StorageError, TypeConfig};

/// Records per frame of a snapshot.
pub const SNAPSHOT_FRAME_RECORDS: usize = 4096;

type Membership = StoredMembership<u64, NodeAddr>;
type Meta = SnapshotMeta<u64, NodeAddr>;

/// Makes the empty state a snapshot is installed into (the node's policy and rules).
pub type FreshState = Arc<dyn Fn() -> State + Send + Sync>;

struct Machine {
    state: State,
    applied: Option<LogId>,
    membership: Membership,
    /// The last snapshot built or installed, with its data.
    current: Option<(Meta, Vec<u8>)>,
    built: u64,
    fresh: FreshState,
    /// Where the current snapshot is kept, when the machine has a directory.
    dir: Option<PathBuf>,
}

const SNAPSHOT_FILE: &str = "raft-snapshot";
const SNAPSHOT_MAGIC: &[u8; 8] = b"SEPPSNP1";

/// Keeps `meta` and `data` in `dir` as the current snapshot, durably.
fn save_snapshot(dir: &Path, meta: &Meta, data: &[u8]) -> io::Result<()> {
    let mut meta_bytes = Vec::new();
    ciborium::into_writer(meta, &mut meta_bytes).map_err(io::Error::other)?;
    let mut body = Vec::with_capacity(4 + meta_bytes.len() + data.len());
    body.extend_from_slice(&(meta_bytes.len() as u32).to_le_bytes());
    body.extend_from_slice(&meta_bytes);
    body.extend_from_slice(data);
    sealed::write(dir, SNAPSHOT_FILE, SNAPSHOT_MAGIC, &body)
}

/// The snapshot kept in `dir`, if there is one.
fn load_snapshot(dir: &Path) -> io::Result<Option<(Meta, Vec<u8>)>> {
    let path = dir.join(SNAPSHOT_FILE);
    let damaged = |reason: &str| io::Error::other(format!("{} is damaged: {reason}", path.display()));
    let body = match sealed::read(&path, SNAPSHOT_MAGIC) {
        Ok(Some(body)) => body,
        Ok(None) => return Ok(None),
        Err(ReadError::Io(error)) => return Err(error),
        Err(ReadError::Damaged(reason)) => return Err(damaged(reason)),
    };
    let Some(meta_len) = body.first_chunk::<4>().map(|len| u32::from_le_bytes(*len) as usize) else {
        return Err(damaged("it ends early"));
    };
    let Some(meta_bytes) = body.get(4..4 + meta_len) else { return Err(damaged("it ends early")) };
    let meta: Meta = ciborium::from_reader(meta_bytes).map_err(|error| damaged(&error.to_string()))?;
    Ok(Some((meta, body[4 + meta_len..].to_vec())))
}

/// The state machine of one node. Clones share it (openraft's snapshot builder is one).
#[derive(Clone)]
pub struct StateMachine {
    inner: Arc<Mutex<Machine>>,
}

impl StateMachine {
    /// A state machine over an empty state from `fresh`, whose snapshots live in memory only
    /// (a node that restarts with it must still have its whole log).
    pub fn new(fresh: FreshState) -> StateMachine {
        let machine = Machine {
            state: fresh(),
            applied: None,
            membership: Membership::default(),
            current: None,
            built: 0,
            fresh,
            dir: None,
        };
        StateMachine { inner: Arc::new(Mutex::new(machine)) }
    }

    /// A state machine that keeps its snapshots in `dir`, starting from the one there (or from
    /// an empty state from `fresh`).
    pub fn open(dir: &Path, fresh: FreshState) -> io::Result<StateMachine> {
        let machine = StateMachine::new(fresh);
        {
            let mut inner = machine.lock();
            inner.dir = Some(dir.to_path_buf());
            if let Some((meta, data)) = load_snapshot(dir)? {
                let mut state = (inner.fresh)();
                decode_snapshot(&data, &mut state)
                    .map_err(|reason| io::Error::other(format!("{}: {reason}", dir.join(SNAPSHOT_FILE).display())))?;
                inner.state = state;
                inner.applied = meta.last_log_id;
                inner.membership = meta.last_membership.clone();
                inner.current = Some((meta, data));
            }
        }
        Ok(machine)
    }

    /// Whether the state machine started from a snapshot.
    pub fn holds_snapshot(&self) -> bool {
        self.lock().current.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, Machine> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A copy of the state as it is now: what every entry applied so far made of it, rebuilt
    /// from its snapshot records into a state from `fresh` (for a committer that starts to
    /// lead and must not share this one).
    pub fn committed_state(&self) -> State {
        let machine = self.lock();
        let data = encode_snapshot(&machine.state);
        let mut state = (machine.fresh)();
        decode_snapshot(&data, &mut state).expect("a snapshot just encoded decodes");
        state
    }

    /// The last entry applied, and a hash of the whole state as it made it (the same on every
    /// node that applied the same entries): what `sepp cluster status --fingerprint` compares.
    /// Taken item by item ([`State::digest`]), without a copy or a text of the state.
    pub fn fingerprint(&self) -> (Option<u64>, u64) {
        let machine = self.lock();
        (machine.applied.map(|applied| applied.index), machine.state.digest())
    }

    /// Runs `read` on the state as it is now.
    pub fn with_state<T>(&self, read: impl FnOnce(&State) -> T) -> T {
        read(&self.lock().state)
    }
}

/// The snapshot data of `state`.
pub fn encode_snapshot(state: &State) -> Vec<u8> {
    let records: Vec<Record> = state.snapshot().records().collect();
    let mut out = Vec::new();
    let mut placements = Vec::new();
    for chunk in records.chunks(SNAPSHOT_FRAME_RECORDS) {
        frame::encode(chunk, &mut out, &mut placements);
    }
    frame::encode(&[], &mut out, &mut placements);
    out
}

/// Applies the snapshot data `bytes` to `state` (an empty one).
pub fn decode_snapshot(bytes: &[u8], state: &mut State) -> Result<(), &'static str> {
    let mut offset = 0;
    loop {
        match frame::read(&bytes[offset..], None) {
            Read::Frame(records, len) if records.is_empty() => {
                return if offset + len == bytes.len() { Ok(()) } else { Err("bytes after the end mark") };
            }
            Read::Frame(records, len) => {
                for record in &records {
                    state.apply(record);
                }
                offset += len;
            }
            Read::End | Read::Torn => return Err("the snapshot ends before its end mark"),
            Read::Corrupt(reason) | Read::Undecodable(reason) => return Err(reason),
        }
    }
}

fn corrupt_entry(log_id: LogId, reason: &'static str) -> StorageError {
    let error = std::io::Error::other(format!("entry {log_id}: {reason}"));
    StorageIOError::apply(log_id, &error).into()
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let mut machine = self.lock();
        let data = encode_snapshot(&machine.state);
        machine.built += 1;
        let last = machine.applied.map_or_else(|| "none".to_owned(), |applied| applied.to_string());
        let meta = Meta {
            last_log_id: machine.applied,
            last_membership: machine.membership.clone(),
            snapshot_id: format!("{last}-{}", machine.built),
        };
        if let Some(dir) = &machine.dir {
            save_snapshot(dir, &meta, &data)
                .map_err(|error| StorageError::from(StorageIOError::write_snapshot(Some(meta.signature()), &error)))?;
        }
        machine.current = Some((meta.clone(), data.clone()));
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), StorageError> {
        let machine = self.lock();
        Ok((machine.applied, machine.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut machine = self.lock();
        let mut replies = Vec::new();
        for entry in entries {
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(frame) => match frame::read(&frame.0, None) {
                    Read::Frame(records, len) if len == frame.0.len() => {
                        for record in &records {
                            machine.state.apply(record);
                        }
                    }
                    Read::Frame(..) => return Err(corrupt_entry(entry.log_id, "bytes after its frame")),
                    Read::End | Read::Torn => return Err(corrupt_entry(entry.log_id, "its frame is cut short")),
                    Read::Corrupt(reason) | Read::Undecodable(reason) => {
                        return Err(corrupt_entry(entry.log_id, reason));
                    }
                },
                EntryPayload::Membership(membership) => {
                    machine.membership = StoredMembership::new(Some(entry.log_id), membership);
                }
            }
            machine.applied = Some(entry.log_id);
            replies.push(());
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Box<Cursor<Vec<u8>>>) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let mut machine = self.lock();
        let mut state = (machine.fresh)();
        decode_snapshot(&data, &mut state).map_err(|reason| {
            let error = std::io::Error::other(format!("snapshot {}: {reason}", meta.snapshot_id));
            StorageError::from(StorageIOError::read_snapshot(Some(meta.signature()), &error))
        })?;
        if let Some(dir) = &machine.dir {
            save_snapshot(dir, meta, &data)
                .map_err(|error| StorageError::from(StorageIOError::write_snapshot(Some(meta.signature()), &error)))?;
        }
        tracing::info!(
            snapshot = %meta.snapshot_id,
            last_index = meta.last_log_id.map(|log_id| log_id.index),
            bytes = data.len(),
            "installed a snapshot from the leader"
        );
        machine.state = state;
        machine.applied = meta.last_log_id;
        machine.membership = meta.last_membership.clone();
        machine.current = Some((meta.clone(), data));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let machine = self.lock();
        Ok(machine
            .current
            .as_ref()
            .map(|(meta, data)| Snapshot { meta: meta.clone(), snapshot: Box::new(Cursor::new(data.clone())) }))
    }
}
