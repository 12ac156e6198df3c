//! The replicated state machine: a `sepp_core::State` that applies the records of committed
//! Raft entries, and whose snapshot is the records that rebuild it.
//!
//! A normal entry carries one `sepp_log` frame (one committer cycle's records); applying it
//! applies each record with `State::apply`, as recovery does from the local log, so every node
//! that applies the same entries holds the same state. Each large payload is written to the
//! node's payload files as its job is applied, and the job keeps only its place
//! ([`PayloadStore`]).
//!
//! On the leader, an entry it proposed itself is applied from the records its committer
//! encoded it from ([`LocalFrames`]), not decoded from its bytes: the jobs the committer holds
//! and those of the committed state are then the same allocations, so the leader holds each job
//! it accepted once, as a follower does, instead of once in the committer and a decoded copy here.
//!
//! Snapshot data: frames of at most [`SNAPSHOT_FRAME_RECORDS`] records of `State::snapshot`
//! (which carries the acceptance sequence counter, so a node restored from it numbers the next
//! job as the others do), then an empty frame as the end mark. The snapshot's Raft metadata
//! (last entry, membership) travels beside it, as openraft hands it over.
//!
//! Snapshots live in files, never whole in memory: a snapshot is built by writing its frames to
//! a file as they are encoded, sent to a follower in chunks read from that file (openraft's
//! `snapshot_max_chunk_size`), received into a file chunk by chunk, and installed by reading it
//! back frame by frame. The files in the node's directory:
//!
//! ```text
//! raft-snapshot                      the current snapshot: "SEPPSNP2" | CRC32C of the rest |
//!                                    meta length: u32 | meta (CBOR) | data file name length: u16 |
//!                                    its name | data length: u64 (written to a temporary name,
//!                                    synced, renamed, the directory synced)
//! raft-snapshot-<sequence>.data      the current snapshot's data (synced before `raft-snapshot`
//!                                    names it); others left by a crash are removed on open
//! raft-snapshot-building.data        a snapshot being built
//! raft-snapshot-incoming.data        a snapshot being received
//! raft-snapshot-installing.data      a received snapshot being installed (copied as it is read)
//! ```
//!
//! A snapshot is kept there before openraft hears it exists, since openraft then purges the log
//! behind it; and the machine starts from it when opened again, so a node that restarts has the
//! state its purged log no longer holds. (An older `raft-snapshot`, "SEPPSNP1" with the data
//! inside it, is read too, and rewritten in this form.)

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Seek as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{EntryPayload, StorageIOError, StoredMembership};
use sepp_core::{Job, JobPayload, PayloadData, Record, State};
use sepp_log::frame::{self, Read};

use crate::payloads::{PayloadReader, PayloadStore};

use crate::sealed::{self, ReadError, sync_dir};
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
    /// The last snapshot built or installed, and its data file.
    current: Option<(Meta, PathBuf)>,
    built: u64,
    /// The sequence number of the next data file.
    next_data: u64,
    fresh: FreshState,
    /// Where snapshots are kept.
    dir: PathBuf,
    payloads: PayloadStore,
}

/// The directory of the payload files, in the state machine's.
const PAYLOADS_DIR: &str = "payloads";

/// Applies `record` to `state`, writing the payload of a job it carries to `payloads` and
/// leaving the job its place; a copy the state had to make is offered to a leading committer.
fn apply_placing(state: &mut State, record: Record, payloads: &PayloadStore) -> io::Result<()> {
    let placed = match &record {
        Record::JobAccepted { job, .. } | Record::JobRestored { job, .. } => payloads.place_job(job)?,
        Record::DeadLetterRestored { dead } => payloads.place_job(&dead.job)?,
        _ => None,
    };
    state.apply_owned(record);
    if let Some((job_id, stored)) = placed {
        state.place_payload(job_id, stored);
        if let Some(job) = state.held_job(&job_id) {
            payloads.offer(job);
        }
    }
    Ok(())
}

/// `record` with the payload of the job it carries in memory, read from `payloads` if it is
/// stored (what a snapshot's frames are encoded from).
fn with_payload(record: Record, payloads: &mut PayloadReader) -> io::Result<Record> {
    let mut loaded = |job: &Arc<Job>| -> io::Result<Option<Arc<Job>>> {
        match &job.payload {
            Some(JobPayload { data: PayloadData::Stored(stored), .. }) => {
                let bytes = payloads.read(stored)?;
                Ok(Some(Arc::new(job.with_payload_data(PayloadData::Inline(bytes.into_boxed_slice())))))
            }
            _ => Ok(None),
        }
    };
    Ok(match record {
        Record::JobRestored { job, state } => match loaded(&job)? {
            Some(job) => Record::JobRestored { job, state },
            None => Record::JobRestored { job, state },
        },
        Record::DeadLetterRestored { mut dead } => {
            if let Some(job) = loaded(&dead.job)? {
                dead.job = job;
            }
            Record::DeadLetterRestored { dead }
        }
        other => other,
    })
}

const SNAPSHOT_FILE: &str = "raft-snapshot";
const SNAPSHOT_MAGIC: &[u8; 8] = b"SEPPSNP2";
const SNAPSHOT_MAGIC_INLINE: &[u8; 8] = b"SEPPSNP1";
const DATA_PREFIX: &str = "raft-snapshot-";
const DATA_SUFFIX: &str = ".data";
const BUILDING: &str = "raft-snapshot-building.data";
const INCOMING: &str = "raft-snapshot-incoming.data";
const INSTALLING: &str = "raft-snapshot-installing.data";
/// Buffer of the snapshot files' readers and writers.
const FILE_BUFFER: usize = 1 << 20;

fn data_name(sequence: u64) -> String {
    format!("{DATA_PREFIX}{sequence:020}{DATA_SUFFIX}")
}

/// The sequence number of a data file's `name`, if it is one.
fn data_sequence(name: &str) -> Option<u64> {
    name.strip_prefix(DATA_PREFIX)?.strip_suffix(DATA_SUFFIX)?.parse().ok()
}

/// What `raft-snapshot` holds.
enum Kept {
    /// The meta, the data file's name and length.
    Current(Meta, String, u64),
    /// The older form: the meta and the data itself.
    Inline(Meta, Vec<u8>),
}

/// Makes `data_file` (in `dir`, synced) with `meta` the current snapshot, durably.
fn save_snapshot(dir: &Path, meta: &Meta, data_file: &str, data_len: u64) -> io::Result<()> {
    let mut body = Vec::new();
    let mut meta_bytes = Vec::new();
    ciborium::into_writer(meta, &mut meta_bytes).map_err(io::Error::other)?;
    body.extend_from_slice(&(meta_bytes.len() as u32).to_le_bytes());
    body.extend_from_slice(&meta_bytes);
    body.extend_from_slice(&(data_file.len() as u16).to_le_bytes());
    body.extend_from_slice(data_file.as_bytes());
    body.extend_from_slice(&data_len.to_le_bytes());
    sealed::write(dir, SNAPSHOT_FILE, SNAPSHOT_MAGIC, &body)
}

/// What `raft-snapshot` in `dir` holds, if there is one.
fn load_snapshot(dir: &Path) -> io::Result<Option<Kept>> {
    let path = dir.join(SNAPSHOT_FILE);
    let damaged = |reason: &str| io::Error::other(format!("{} is damaged: {reason}", path.display()));
    let (magic, body) = match sealed::read_any(&path, &[SNAPSHOT_MAGIC, SNAPSHOT_MAGIC_INLINE]) {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        Err(ReadError::Io(error)) => return Err(error),
        Err(ReadError::Damaged(reason)) => return Err(damaged(reason)),
    };
    let mut rest = body.as_slice();
    let mut take = |len: usize| -> io::Result<&[u8]> {
        if rest.len() < len {
            return Err(damaged("it ends early"));
        }
        let (taken, left) = rest.split_at(len);
        rest = left;
        Ok(taken)
    };
    let meta_len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    let meta: Meta = ciborium::from_reader(take(meta_len)?).map_err(|error| damaged(&error.to_string()))?;
    if magic == SNAPSHOT_MAGIC_INLINE {
        return Ok(Some(Kept::Inline(meta, rest.to_vec())));
    }
    let name_len = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
    let name = String::from_utf8(take(name_len)?.to_vec()).map_err(|_| damaged("a data file name is not UTF-8"))?;
    if data_sequence(&name).is_none() {
        return Err(damaged("it names no snapshot data file"));
    }
    let data_len = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"));
    Ok(Some(Kept::Current(meta, name, data_len)))
}

/// Writes the snapshot data of `state` (whose payloads are in memory) to `out` as its frames are
/// encoded; returns its length.
pub fn write_snapshot(state: &State, out: &mut impl io::Write) -> io::Result<u64> {
    write_records(&state.snapshot(), out, None)
}

/// Writes `snapshot`'s records to `out` as snapshot data, reading stored payloads from
/// `payloads`; returns its length.
fn write_records(
    snapshot: &sepp_core::Snapshot,
    out: &mut impl io::Write,
    payloads: Option<&PayloadStore>,
) -> io::Result<u64> {
    let mut bytes = Vec::new();
    let mut placements = Vec::new();
    let mut written = 0;
    let mut chunk: Vec<Record> = Vec::with_capacity(SNAPSHOT_FRAME_RECORDS);
    let mut records = snapshot.records();
    let mut reader = payloads.map(PayloadStore::reader);
    loop {
        chunk.clear();
        for record in records.by_ref().take(SNAPSHOT_FRAME_RECORDS) {
            chunk.push(match &mut reader {
                Some(reader) => with_payload(record, reader)?,
                None => record,
            });
        }
        // The last frame is the empty end mark.
        let end = chunk.is_empty();
        bytes.clear();
        frame::encode(&chunk, &mut bytes, &mut placements);
        placements.clear();
        out.write_all(&bytes)?;
        written += bytes.len() as u64;
        if end {
            return Ok(written);
        }
    }
}

/// Why snapshot data could not be read.
#[derive(Debug)]
pub enum SnapshotReadError {
    Io(io::Error),
    Damaged(&'static str),
}

impl std::fmt::Display for SnapshotReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotReadError::Io(error) => write!(f, "{error}"),
            SnapshotReadError::Damaged(reason) => f.write_str(reason),
        }
    }
}

/// Applies the snapshot data read from `input` to `state` (an empty one), a frame at a time;
/// returns its length. The data must end with its end mark, and nothing after it.
pub fn read_snapshot(input: &mut impl io::Read, state: &mut State) -> Result<u64, SnapshotReadError> {
    read_snapshot_into(input, state, None)
}

/// [`read_snapshot`], writing the payloads to `payloads` when given.
fn read_snapshot_into(
    input: &mut impl io::Read,
    state: &mut State,
    payloads: Option<&PayloadStore>,
) -> Result<u64, SnapshotReadError> {
    let cut = |error: io::Error| {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            SnapshotReadError::Damaged("the snapshot ends before its end mark")
        } else {
            SnapshotReadError::Io(error)
        }
    };
    let mut bytes = Vec::new();
    let mut total = 0;
    loop {
        let mut header = [0; frame::HEADER_BYTES];
        input.read_exact(&mut header).map_err(cut)?;
        let len = frame::frame_len(&header).map_err(SnapshotReadError::Damaged)?;
        bytes.clear();
        bytes.extend_from_slice(&header);
        bytes.resize(len, 0);
        input.read_exact(&mut bytes[frame::HEADER_BYTES..]).map_err(cut)?;
        total += len as u64;
        match frame::read(&bytes, None) {
            Read::Frame(records, _) if records.is_empty() => {
                let mut after = [0; 1];
                return match input.read(&mut after).map_err(SnapshotReadError::Io)? {
                    0 => Ok(total),
                    _ => Err(SnapshotReadError::Damaged("bytes after the end mark")),
                };
            }
            Read::Frame(records, _) => {
                for record in records {
                    match payloads {
                        Some(payloads) => apply_placing(state, record, payloads).map_err(SnapshotReadError::Io)?,
                        None => state.apply_owned(record),
                    }
                }
            }
            Read::End | Read::Torn => return Err(SnapshotReadError::Damaged("the snapshot ends before its end mark")),
            Read::Corrupt(reason) | Read::Undecodable(reason) => return Err(SnapshotReadError::Damaged(reason)),
        }
    }
}

/// The snapshot data of `state`, in memory.
pub fn encode_snapshot(state: &State) -> Vec<u8> {
    let mut out = Vec::new();
    write_snapshot(state, &mut out).expect("writing into memory does not fail");
    out
}

/// Applies the snapshot data `bytes` to `state` (an empty one).
pub fn decode_snapshot(mut bytes: &[u8], state: &mut State) -> Result<(), &'static str> {
    match read_snapshot(&mut bytes, state) {
        Ok(_) => Ok(()),
        Err(SnapshotReadError::Damaged(reason)) => Err(reason),
        Err(SnapshotReadError::Io(_)) => Err("the snapshot could not be read"),
    }
}

/// A fresh state from `fresh` with the snapshot data in the file at `path` applied, read a frame
/// at a time; the file must hold `expected_len` bytes when that is given.
fn state_from_file(
    path: &Path,
    fresh: &FreshState,
    expected_len: Option<u64>,
    payloads: &PayloadStore,
) -> io::Result<State> {
    let damaged = |reason: String| io::Error::other(format!("{}: {reason}", path.display()));
    let file = File::open(path).map_err(|error| damaged(error.to_string()))?;
    let len = file.metadata().map_err(|error| damaged(error.to_string()))?.len();
    if let Some(expected) = expected_len
        && expected != len
    {
        return Err(damaged(format!("holds {len} bytes where its snapshot has {expected}")));
    }
    let mut state = fresh();
    read_snapshot_into(&mut BufReader::with_capacity(FILE_BUFFER, file), &mut state, Some(payloads))
        .map_err(|error| damaged(error.to_string()))?;
    payloads.flush()?;
    Ok(state)
}

/// The state of the snapshot data in `received` (read from its start), copied as it is read
/// into `copy` (replaced, then synced).
fn install_from(mut received: File, copy: &Path, fresh: &FreshState, payloads: &PayloadStore) -> io::Result<State> {
    received.rewind()?;
    let out = BufWriter::with_capacity(FILE_BUFFER, File::create(copy)?);
    let mut tee = Tee { input: BufReader::with_capacity(FILE_BUFFER, received), copy: out };
    let mut state = fresh();
    read_snapshot_into(&mut tee, &mut state, Some(payloads)).map_err(|error| io::Error::other(error.to_string()))?;
    payloads.flush()?;
    tee.copy.into_inner().map_err(|error| error.into_error())?.sync_all()?;
    Ok(state)
}

/// A reader that writes what it reads to `copy`.
struct Tee<R, W> {
    input: R,
    copy: W,
}

impl<R: io::Read, W: io::Write> io::Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.input.read(buf)?;
        self.copy.write_all(&buf[..read])?;
        Ok(read)
    }
}

/// Writes `snapshot` as snapshot data to `path` (replaced) and syncs it; returns its length.
fn write_snapshot_file(path: &Path, snapshot: &sepp_core::Snapshot, payloads: &PayloadStore) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(FILE_BUFFER, File::create(path)?);
    let len = write_records(snapshot, &mut out, Some(payloads))?;
    out.into_inner().map_err(|error| error.into_error())?.sync_all()?;
    Ok(len)
}

/// The state machine of one node. Clones share it (openraft's snapshot builder is one).
#[derive(Clone)]
pub struct StateMachine {
    inner: Arc<Mutex<Machine>>,
    local: LocalFrames,
}

/// At most this many bytes of frames wait in [`LocalFrames`]; beyond it the oldest are dropped
/// (their entries, if ever applied, are then decoded, as a follower's are).
pub const LOCAL_FRAMES_MAX_BYTES: usize = 64 << 20;

/// The frames this node's committer proposed while it led, each with the records it was encoded
/// from, until the state machine applies their entries: an entry whose bytes are those of a
/// waiting frame is applied from that frame's records (equal bytes decode to equal records, so
/// the state is the same either way), which share their jobs with the committer's state. It is
/// emptied when a committer starts to lead and when its log is dropped (the node deposed). Clones
/// share the queue.
#[derive(Clone, Default)]
pub struct LocalFrames {
    inner: Arc<Mutex<LocalQueue>>,
    /// The machine's payload files (none for frames not made for a machine's).
    payloads: Option<PayloadStore>,
}

#[derive(Default)]
struct LocalQueue {
    frames: VecDeque<(Vec<u8>, Vec<Record>)>,
    bytes: usize,
    /// Frames taken so far.
    taken: u64,
}

impl LocalFrames {
    fn lock(&self) -> MutexGuard<'_, LocalQueue> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A frame proposed now, and the records it encodes, in proposal order.
    pub fn push(&self, bytes: Vec<u8>, records: Vec<Record>) {
        let mut queue = self.lock();
        queue.bytes += bytes.len();
        queue.frames.push_back((bytes, records));
        while queue.bytes > LOCAL_FRAMES_MAX_BYTES
            && let Some((dropped, _)) = queue.frames.pop_front()
        {
            queue.bytes -= dropped.len();
        }
    }

    /// The records of the waiting frame whose bytes are `bytes`, if any. Entries are applied in
    /// the order they were proposed, so the frames before it will never be applied (proposals
    /// of a term that ended): they are dropped too.
    pub fn take(&self, bytes: &[u8]) -> Option<Vec<Record>> {
        let mut queue = self.lock();
        let position = queue.frames.iter().position(|(frame, _)| frame.as_slice() == bytes)?;
        let mut taken = None;
        for _ in 0..=position {
            if let Some((frame, records)) = queue.frames.pop_front() {
                queue.bytes -= frame.len();
                taken = Some(records);
            }
        }
        queue.taken += 1;
        taken
    }

    /// Drops every waiting frame (a new term's committer starts).
    pub fn clear(&self) {
        let mut queue = self.lock();
        queue.frames.clear();
        queue.bytes = 0;
    }

    /// How many entries were applied from a waiting frame's records so far.
    pub fn taken(&self) -> u64 {
        self.lock().taken
    }

    /// The payload files of the state machine these frames are for.
    pub fn payloads(&self) -> Option<&PayloadStore> {
        self.payloads.as_ref()
    }

    /// How many frames wait.
    pub fn len(&self) -> usize {
        self.lock().frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl StateMachine {
    /// A state machine that keeps its snapshots in `dir`, starting from the one there (or from
    /// an empty state from `fresh`). Data files a crash left behind are removed.
    pub fn open(dir: &Path, fresh: FreshState) -> io::Result<StateMachine> {
        let mut machine = Machine {
            state: fresh(),
            applied: None,
            membership: Membership::default(),
            current: None,
            built: 0,
            next_data: 0,
            fresh,
            dir: dir.to_path_buf(),
            payloads: PayloadStore::open(&dir.join(PAYLOADS_DIR))?,
        };
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        machine.next_data = names.iter().filter_map(|name| data_sequence(name)).max().map_or(0, |last| last + 1);
        let kept = match load_snapshot(dir)? {
            None => None,
            Some(Kept::Current(meta, name, len)) => {
                let path = dir.join(&name);
                machine.state = state_from_file(&path, &machine.fresh, Some(len), &machine.payloads)?;
                Some((meta, name))
            }
            Some(Kept::Inline(meta, data)) => {
                // The older form: rewritten with its data in a file of its own.
                let mut state = (machine.fresh)();
                read_snapshot_into(&mut data.as_slice(), &mut state, Some(&machine.payloads))
                    .map_err(|error| io::Error::other(format!("{}: {error}", dir.join(SNAPSHOT_FILE).display())))?;
                machine.payloads.flush()?;
                let name = data_name(machine.next_data);
                machine.next_data += 1;
                let written = dir.join(BUILDING);
                fs::write(&written, &data)?;
                File::open(&written)?.sync_all()?;
                fs::rename(&written, dir.join(&name))?;
                sync_dir(dir)?;
                save_snapshot(dir, &meta, &name, data.len() as u64)?;
                machine.state = state;
                Some((meta, name))
            }
        };
        for name in &names {
            let kept_name = kept.as_ref().map(|(_, kept)| kept.as_str());
            let scratch = [BUILDING, INCOMING, INSTALLING].contains(&name.as_str());
            if (data_sequence(name).is_some() || scratch) && Some(name.as_str()) != kept_name {
                let _ = fs::remove_file(dir.join(name));
            }
        }
        if let Some((meta, name)) = kept {
            machine.applied = meta.last_log_id;
            machine.membership = meta.last_membership.clone();
            machine.current = Some((meta, dir.join(name)));
        }
        let local = LocalFrames { payloads: Some(machine.payloads.clone()), ..LocalFrames::default() };
        Ok(StateMachine { inner: Arc::new(Mutex::new(machine)), local })
    }

    /// Whether the state machine started from a snapshot.
    pub fn holds_snapshot(&self) -> bool {
        self.lock().current.is_some()
    }

    fn lock(&self) -> MutexGuard<'_, Machine> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A copy of the state as it is now: what every entry applied so far made of it (for a
    /// committer that starts to lead and must not share this one). A clone, which shares the
    /// jobs themselves (they are copied when either side changes one) and costs a fraction of
    /// encoding the state as a snapshot and decoding it again.
    pub fn committed_state(&self) -> State {
        self.lock().state.clone()
    }

    /// [`StateMachine::committed_state`] for a committer that starts to lead now: from this
    /// moment the jobs the machine copies or moves are offered to it ([`PayloadStore`]), and it
    /// takes them through the [`crate::ReplicatedLog`] made next, so the two go on sharing them.
    pub fn lead_state(&self) -> State {
        let machine = self.lock();
        machine.payloads.start_adopting();
        machine.state.clone()
    }

    /// The node's payload files.
    pub fn payloads(&self) -> PayloadStore {
        self.lock().payloads.clone()
    }

    /// [`State::fingerprint`] of the state as it is now, with stored payloads read back (what
    /// tests compare with a state that holds its payloads in memory).
    pub fn state_fingerprint(&self) -> String {
        let machine = self.lock();
        let payloads = &machine.payloads;
        machine.state.fingerprint_with(&mut |stored| payloads.read(stored).expect("read a stored payload"))
    }

    /// Where this node's committer, while it leads, leaves the frames it proposes (see
    /// [`LocalFrames`]).
    pub fn local_frames(&self) -> LocalFrames {
        self.local.clone()
    }

    /// The last entry applied, and a hash of the whole state as it made it (the same on every
    /// node that applied the same entries): what `sepp cluster status --fingerprint` compares.
    /// Taken item by item ([`State::digest_with`]), without a copy or a text of the state;
    /// stored payloads count by their bytes, read back one at a time (their places differ from
    /// node to node).
    pub fn fingerprint(&self) -> io::Result<(Option<u64>, u64)> {
        let machine = self.lock();
        let mut payloads = machine.payloads.reader();
        let mut failed = None;
        let digest = machine.state.digest_with(&mut |stored| {
            payloads.read(stored).unwrap_or_else(|error| {
                failed.get_or_insert(error);
                Vec::new()
            })
        });
        match failed {
            Some(error) => Err(error),
            None => Ok((machine.applied.map(|applied| applied.index), digest)),
        }
    }

    /// Runs `read` on the state as it is now.
    pub fn with_state<T>(&self, read: impl FnOnce(&State) -> T) -> T {
        read(&self.lock().state)
    }

    /// Makes the synced data file `written` (in the directory) the snapshot of `meta`: renamed
    /// to the next data file, named in `raft-snapshot`, and the older data files removed. A
    /// snapshot older than the current one (a build that a follower's install overtook) is
    /// dropped instead; returns whether it was kept, and its data file.
    fn keep(&self, meta: &Meta, written: &Path, len: u64) -> io::Result<Option<PathBuf>> {
        let mut machine = self.lock();
        if let Some((current, _)) = &machine.current
            && current.last_log_id > meta.last_log_id
        {
            let _ = fs::remove_file(written);
            return Ok(None);
        }
        let name = data_name(machine.next_data);
        machine.next_data += 1;
        let path = machine.dir.join(&name);
        fs::rename(written, &path)?;
        sync_dir(&machine.dir)?;
        save_snapshot(&machine.dir, meta, &name, len)?;
        if let Some((_, previous)) = machine.current.replace((meta.clone(), path.clone())) {
            // A follower may still be reading it: its open file stays readable.
            let _ = fs::remove_file(previous);
        }
        Ok(Some(path))
    }
}

fn corrupt_entry(log_id: LogId, reason: &'static str) -> StorageError {
    let error = std::io::Error::other(format!("entry {log_id}: {reason}"));
    StorageIOError::apply(log_id, &error).into()
}

fn snapshot_write_error(meta: &Meta, error: &io::Error) -> StorageError {
    StorageError::from(StorageIOError::write_snapshot(Some(meta.signature()), error))
}

fn snapshot_read_error(meta: &Meta, error: &io::Error) -> StorageError {
    StorageError::from(StorageIOError::read_snapshot(Some(meta.signature()), error))
}

async fn open_data(meta: &Meta, path: &Path) -> Result<Box<tokio::fs::File>, StorageError> {
    let file = tokio::fs::File::open(path).await.map_err(|error| snapshot_read_error(meta, &error))?;
    Ok(Box::new(file))
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    /// Takes the state's snapshot records under the lock (the jobs are shared, not copied), then
    /// writes them to a file without it, so entries go on being applied meanwhile.
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let (meta, records, written, payloads) = {
            let mut machine = self.lock();
            machine.built += 1;
            let last = machine.applied.map_or_else(|| "none".to_owned(), |applied| applied.to_string());
            let meta = Meta {
                last_log_id: machine.applied,
                last_membership: machine.membership.clone(),
                snapshot_id: format!("{last}-{}", machine.built),
            };
            // The places of the records' payloads stay readable until it is written.
            machine.payloads.begin_build();
            (meta, machine.state.snapshot(), machine.dir.join(BUILDING), machine.payloads.clone())
        };
        let (write_meta, write_path, reader) = (meta.clone(), written.clone(), payloads.clone());
        let len = tokio::task::spawn_blocking(move || write_snapshot_file(&write_path, &records, &reader))
            .await
            .map_err(io::Error::other)
            .and_then(|written| written);
        payloads.end_build();
        let len = len.map_err(|error| snapshot_write_error(&write_meta, &error))?;
        let kept = self.keep(&meta, &written, len).map_err(|error| snapshot_write_error(&meta, &error))?;
        // An install overtook this build: the newer snapshot, with its own meta, is the answer.
        let (meta, path) = match kept {
            Some(path) => (meta, path),
            None => self.lock().current.clone().expect("a newer snapshot is current"),
        };
        let snapshot = open_data(&meta, &path).await?;
        Ok(Snapshot { meta, snapshot })
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
        let mut guard = self.lock();
        let machine = &mut *guard;
        let payloads = &machine.payloads;
        let mut replies = Vec::new();
        for entry in entries {
            let placing = |log_id: LogId, state: &mut State, records: Vec<Record>| {
                for record in records {
                    apply_placing(state, record, payloads)
                        .map_err(|error| Box::new(StorageError::from(StorageIOError::apply(log_id, &error))))?;
                }
                Ok::<_, Box<StorageError>>(())
            };
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(frame) if let Some(records) = self.local.take(&frame.0) => {
                    placing(entry.log_id, &mut machine.state, records).map_err(|error| *error)?;
                }
                EntryPayload::Normal(frame) => match frame::read(&frame.0, None) {
                    Read::Frame(records, len) if len == frame.0.len() => {
                        placing(entry.log_id, &mut machine.state, records).map_err(|error| *error)?;
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
        let collected = payloads.flush().and_then(|()| payloads.collect(&mut machine.state, false));
        if let (Err(error), Some(applied)) = (collected, machine.applied) {
            return Err(StorageIOError::apply(applied, &error).into());
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    /// A snapshot from the leader is received into a file, chunk by chunk.
    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        let path = self.lock().dir.join(INCOMING);
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .await
            .map_err(|error| StorageError::from(StorageIOError::write_snapshot(None, &error)))?;
        Ok(Box::new(file))
    }

    /// Reads the received file back a frame at a time into a fresh state (off the runtime's
    /// threads), copying it as it goes into the file kept as the current snapshot, and takes the
    /// state.
    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Box<tokio::fs::File>) -> Result<(), StorageError> {
        let mut file = *snapshot;
        tokio::io::AsyncWriteExt::flush(&mut file).await.map_err(|error| snapshot_write_error(meta, &error))?;
        let file = file.into_std().await;
        let (dir, fresh, payloads) = {
            let machine = self.lock();
            (machine.dir.clone(), machine.fresh.clone(), machine.payloads.clone())
        };
        let path = dir.join(INSTALLING);
        let copy_path = path.clone();
        let state = tokio::task::spawn_blocking(move || install_from(file, &copy_path, &fresh, &payloads))
            .await
            .map_err(io::Error::other)
            .and_then(|read| read)
            .map_err(|error| {
                let error = io::Error::other(format!("snapshot {}: {error}", meta.snapshot_id));
                snapshot_read_error(meta, &error)
            })?;
        let _ = fs::remove_file(dir.join(INCOMING));
        let len = fs::metadata(&path).map_err(|error| snapshot_read_error(meta, &error))?.len();
        self.keep(meta, &path, len).map_err(|error| snapshot_write_error(meta, &error))?;
        tracing::info!(
            snapshot = %meta.snapshot_id,
            last_index = meta.last_log_id.map(|log_id| log_id.index),
            bytes = len,
            "installed a snapshot from the leader"
        );
        let mut guard = self.lock();
        let machine = &mut *guard;
        machine.state = state;
        machine.applied = meta.last_log_id;
        machine.membership = meta.last_membership.clone();
        // The payloads of the state it replaced are no one's now.
        machine.payloads.collect(&mut machine.state, true).map_err(|error| snapshot_write_error(meta, &error))?;
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let current = self.lock().current.clone();
        match current {
            None => Ok(None),
            Some((meta, path)) => {
                let snapshot = open_data(&meta, &path).await?;
                Ok(Some(Snapshot { meta, snapshot }))
            }
        }
    }
}
