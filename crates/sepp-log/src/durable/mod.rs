//! The durable log: segment files of frames in the data directory, written by the committer
//! once per cycle, reclaimed by checkpoints, and replayed on open.
//!
//! Data directory layout:
//!
//! ```text
//! FORMAT                       "sepp-log <version>": this sepp reads versions 1 and 2 and
//!                              writes 2; a directory of a newer version is refused
//! LOCK                         held (flock) while a server has the directory open
//! segment-<index>.log          "SEPPLOG1" then frames; the highest index is appended to, and
//!                              ends in preallocated zeros (a clean end for recovery)
//! segment-<index>.prep         the next segment, zero-filled in the background
//! checkpoint-<index>.ckpt      "SEPPCKP1" then frames of the whole state as of the start of
//!                              segment <index>, then an empty frame as the end mark
//! ```
//!
//! Recovery loads the newest checkpoint, replays the segments from its index on, and truncates
//! a torn or corrupt tail of the last segment (reporting what it dropped). Damage anywhere else
//! (an older segment, a damaged frame with intact frames after it, a checkpoint, a gap in the
//! segment sequence) refuses to open with the file and offset, rather than silently losing
//! acknowledged work.
//!
//! The module's parts: this file holds the log itself (appending, syncing, rotating,
//! checkpoint hand-off); `open` opens a data directory and recovers it; `replay` reads segments
//! and checkpoints back; `preparer` zero-fills the next segment in the background;
//! `checkpoint` writes checkpoints on a thread of their own; `syncer` syncs a written frame in
//! the background while the committer applies the next cycle; `files` names the files and reads
//! payloads back.

mod checkpoint;
mod files;
mod open;
mod preparer;
mod replay;
mod syncer;

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use sepp_core::{JobId, PersistMode, Record, Snapshot, StoredPayload};

use self::checkpoint::{Checkpointer, Work};
use self::files::{PayloadReader, checkpoint_file, checkpoint_path, list, segment_file, segment_path};
use self::preparer::Preparer;
use self::syncer::{Syncer, Unsynced, sync_segment};
use crate::codec::Placement;
use crate::frame;
use crate::{Log, Relocations};

/// The format this sepp writes. It goes up whenever a record tag or an encoding is added: an
/// older sepp must refuse a directory it may not be able to read, rather than meet an unknown
/// record halfway through recovery. Version 2 added the records of pauses, cancellation,
/// schedules, acceptance counters and rate limits (codec tags 18 to 27).
const FORMAT_VERSION: u32 = 2;
/// The oldest format this sepp reads. Every version from it up to [`FORMAT_VERSION`] decodes
/// with today's codec: versions only ever add tags.
const OLDEST_FORMAT_VERSION: u32 = 1;
const SEGMENT_MAGIC: &[u8; 8] = b"SEPPLOG1";
const CHECKPOINT_MAGIC: &[u8; 8] = b"SEPPCKP1";
/// Syncs that take less than this on average are not worth running in the background: on a disk
/// that syncs in 0.1 ms the hand-off and the smaller groups it brings cost more server CPU per job
/// than the overlap saves (docs/benchmarks.md, "Pipelined persistence").
const BACKGROUND_SYNC_MIN_MICROS: u64 = 1_000;

/// Tunables of the log.
#[derive(Clone, Copy, Debug)]
pub struct LogOptions {
    pub persist_mode: PersistMode,
    /// A segment that reaches its size is closed and a new one started. This is the size of
    /// every segment from the fourth on; the first three are smaller (see
    /// [`LogOptions::segment_capacity`]).
    pub segment_bytes: u64,
    /// Disk use below this never triggers a checkpoint.
    pub checkpoint_slack_bytes: u64,
}

impl LogOptions {
    pub fn new(persist_mode: PersistMode) -> Self {
        LogOptions { persist_mode, segment_bytes: 32 << 20, checkpoint_slack_bytes: 16 << 20 }
    }

    /// The size segment `index` is preallocated to, and closed at. A new log starts small and
    /// doubles: segments 1, 2 and 3 get an eighth, a quarter and a half of `segment_bytes`,
    /// every later one all of it. So a little-used data directory stays small (4 MiB rather than
    /// 32 by default), and a new one is ready sooner, while a busy log soon rotates as seldom
    /// as `segment_bytes` allows. Segment numbers only grow, so a log past its third segment
    /// keeps the full size across restarts and checkpoints.
    pub fn segment_capacity(&self, index: u64) -> u64 {
        let halvings = 4u64.saturating_sub(index.max(1));
        self.segment_bytes >> halvings
    }
}

/// Why the data directory could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "data directory {path} has format {found:?}, which this sepp does not know (it reads \"sepp-log {OLDEST_FORMAT_VERSION}\" to \"sepp-log {FORMAT_VERSION}\" and writes \"sepp-log {FORMAT_VERSION}\"); refusing to open it"
    )]
    UnknownFormat { path: PathBuf, found: String },
    #[error(
        "data directory {path} has format \"sepp-log {found}\", newer than this sepp reads (it reads up to \"sepp-log {FORMAT_VERSION}\"); refusing to open it: run the newer sepp that wrote it"
    )]
    NewerFormat { path: PathBuf, found: u32 },
    #[error(
        "{path} is not empty and has no FORMAT file, so it is not a sepp data directory this version can open (sepp 0.1 data directories are not readable by this version)"
    )]
    NotADataDirectory { path: PathBuf },
    #[error("the data directory {path} is a file, not a directory")]
    NotADirectory { path: PathBuf },
    #[error("cannot create the data directory {path}: {file} is a file, not a directory")]
    ParentNotADirectory { path: PathBuf, file: PathBuf },
    #[error("cannot create the data directory {path}: {source}")]
    CannotCreate { path: PathBuf, source: io::Error },
    #[error("the data directory {path} is not writable: {source}")]
    NotWritable { path: PathBuf, source: io::Error },
    #[error("data directory {path} is in use by another sepp process")]
    Locked { path: PathBuf },
    #[error("{file} is corrupt at byte offset {offset}: {reason}; refusing to open rather than lose acknowledged data")]
    Corrupt { file: PathBuf, offset: u64, reason: &'static str },
    #[error(
        "{file} holds a frame at byte offset {offset} whose checksum matches but whose records do not decode ({reason}); it was written whole, so it is not a torn write and is not cut: refusing to open rather than lose acknowledged data (was the directory written by a newer sepp?)"
    )]
    Undecodable { file: PathBuf, offset: u64, reason: &'static str },
    #[error("segment {missing} is missing from {path} (found segments after it); refusing to open")]
    Gap { path: PathBuf, missing: u64 },
}

/// What recovery found.
#[derive(Debug, Default)]
pub struct Recovery {
    pub records: u64,
    pub checkpoint: Option<PathBuf>,
    pub segments: usize,
    /// A torn or corrupt tail that was cut off the last segment.
    pub truncated: Option<TruncatedTail>,
}

#[derive(Debug)]
pub struct TruncatedTail {
    pub file: PathBuf,
    pub offset: u64,
    pub bytes_dropped: u64,
    pub reason: &'static str,
}

/// The durable log of one data directory.
pub struct DurableLog {
    dir: PathBuf,
    options: LogOptions,
    /// Shared with the syncer while it syncs.
    segment: Arc<File>,
    segment_index: u64,
    segment_len: u64,
    /// How far the segment file is allocated (preallocated zeros included).
    segment_capacity: u64,
    buffer: Vec<u8>,
    /// Large payloads in `buffer`, placed in the segment once it is written.
    placements: Vec<Placement>,
    /// Bytes of every segment from the newest completed checkpoint on.
    history: BTreeMap<u64, u64>,
    checkpoint_bytes: u64,
    /// A completed checkpoint whose older files are deleted on the next `reclaim`.
    reclaimable: Option<u64>,
    checkpointer: Checkpointer,
    preparer: Preparer,
    /// Whether the segment after this one was asked of the preparer.
    next_requested: bool,
    /// Written to the current segment and not yet synced (nor being synced).
    unsynced: Option<Unsynced>,
    syncer: Syncer,
    /// A moving average of how long a sync took, in microseconds.
    sync_micros: u64,
    readers: PayloadReader,
    /// Declared last so it is dropped last, after the checkpointer has stopped writing.
    _lock: File,
}

impl DurableLog {
    /// Bytes the log occupies on disk: the newest checkpoint and every segment after it.
    pub fn disk_bytes(&self) -> u64 {
        self.checkpoint_bytes + self.history.values().sum::<u64>()
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.finish_sync()?;
        // The closed segment loses its preallocated tail, and is synced even in buffer mode: a
        // segment must be whole before a newer one exists, or a power loss could leave a torn
        // segment in the middle, which recovery refuses.
        self.segment.set_len(self.segment_len)?;
        self.segment.sync_all()?;
        self.unsynced = None;
        let index = self.segment_index + 1;
        if !self.next_requested {
            self.preparer.request(index);
        }
        self.segment = Arc::new(self.preparer.take(&self.dir, index)?);
        self.segment_capacity = self.segment.metadata()?.len();
        self.segment_index = index;
        self.segment_len = SEGMENT_MAGIC.len() as u64;
        self.history.insert(index, self.segment_len);
        self.next_requested = false;
        self.prepare_next_when_due();
        Ok(())
    }

    /// Cuts what a failed write or sync covered off the segment (best effort: the disk may
    /// refuse this too), so that the next start does not find a cycle that was reported as
    /// failed. The caller poisons the store and its callers hear INTERNAL.
    fn take_back(&self, from: u64) {
        let _ = self.segment.set_len(from).and_then(|()| self.segment.sync_all());
    }

    fn note_sync(&mut self, took: std::time::Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sync_micros = (self.sync_micros.saturating_mul(7).saturating_add(micros)) / 8;
    }

    /// Asks for the next segment once this one is a quarter full, or at once when this one is
    /// not preallocated: an idle log keeps one segment on disk, a busy one finds the next ready.
    fn prepare_next_when_due(&mut self) {
        let quarter_full = self.segment_len >= self.options.segment_capacity(self.segment_index) / 4;
        if !self.next_requested && (quarter_full || self.segment_capacity <= self.segment_len) {
            self.preparer.request(self.segment_index + 1);
            self.next_requested = true;
        }
    }
}

impl Log for DurableLog {
    fn append(&mut self, records: &[Record]) -> io::Result<()> {
        frame::encode(records, &mut self.buffer, &mut self.placements);
        Ok(())
    }

    fn write(&mut self) -> io::Result<Vec<(JobId, StoredPayload)>> {
        // Nothing is written while a sync is in flight: a frame a power loss tears is then
        // always the last one, which recovery cuts, rather than one followed by intact frames,
        // which it refuses.
        self.finish_sync()?;
        if self.buffer.is_empty() {
            return Ok(Vec::new());
        }
        // A write beyond the segment's allocated space grows the file, and then needs a full
        // fsync (size and blocks) rather than fdatasync: go to the prepared segment first when
        // it is ready. This also leaves a segment without preallocated space (one whose torn
        // tail recovery cut, or one created after preparing failed) at its first write.
        if self.segment_len + self.buffer.len() as u64 > self.segment_capacity
            && self.preparer.is_ready(self.segment_index + 1)
        {
            self.rotate()?;
        }
        let written_at = self.segment_len;
        let end = written_at + self.buffer.len() as u64;
        if let Err(error) = self.segment.write_all_at(&self.buffer, written_at) {
            self.take_back(self.unsynced.map_or(written_at, |unsynced| unsynced.from));
            return Err(error);
        }
        let grew = end > self.segment_capacity;
        self.unsynced = Some(match self.unsynced {
            Some(unsynced) => Unsynced { from: unsynced.from, grew: unsynced.grew || grew },
            None => Unsynced { from: written_at, grew },
        });
        self.segment_capacity = self.segment_capacity.max(end);
        self.segment_len = end;
        *self.history.entry(self.segment_index).or_default() = self.segment_len;
        self.prepare_next_when_due();
        self.buffer.clear();
        if self.buffer.capacity() > 8 << 20 {
            self.buffer.shrink_to(1 << 20);
        }
        let file = segment_file(self.segment_index);
        let placed = self
            .placements
            .drain(..)
            .map(|placement| {
                let offset = written_at + placement.offset as u64;
                (placement.job_id, StoredPayload { file, offset, len: placement.len })
            })
            .collect();
        if self.segment_len >= self.options.segment_capacity(self.segment_index) {
            self.rotate()?;
        }
        Ok(placed)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.finish_sync()?;
        let Some(unsynced) = self.unsynced.take() else { return Ok(()) };
        let started = std::time::Instant::now();
        sync_segment(&self.segment, self.options.persist_mode, unsynced.grew).inspect_err(|_| {
            self.take_back(unsynced.from);
        })?;
        if self.options.persist_mode != PersistMode::Buffer {
            self.note_sync(started.elapsed());
        }
        Ok(())
    }

    fn background_sync_pays(&self) -> bool {
        self.options.persist_mode != PersistMode::Buffer && self.sync_micros >= BACKGROUND_SYNC_MIN_MICROS
    }

    fn start_sync(&mut self) {
        if self.options.persist_mode == PersistMode::Buffer {
            self.unsynced = None;
            return;
        }
        // A second start without a write in between has nothing new to sync.
        if let Some(unsynced) = self.unsynced.take() {
            self.syncer.begin(Arc::clone(&self.segment), self.options.persist_mode, unsynced);
        }
    }

    /// Waits for the sync in flight, if any, taking back what it covered when it failed.
    fn finish_sync(&mut self) -> io::Result<()> {
        match self.syncer.finish() {
            Ok(took) => {
                if let Some(took) = took {
                    self.note_sync(took);
                }
                Ok(())
            }
            Err((error, unsynced)) => {
                self.take_back(unsynced.from);
                Err(error)
            }
        }
    }

    fn read_payload(&mut self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
        self.readers.read(stored)
    }

    fn wants_checkpoint(&self, live_bytes: u64) -> bool {
        let disk = self.disk_bytes();
        !self.checkpointer.in_flight
            && disk > self.options.checkpoint_slack_bytes
            && disk > live_bytes.saturating_mul(2).saturating_add(self.options.checkpoint_slack_bytes)
    }

    fn checkpoint(&mut self, snapshot: Snapshot) -> io::Result<()> {
        self.rotate()?;
        self.checkpointer.in_flight = true;
        let _ = self.checkpointer.work.send(Work::Write(self.segment_index, snapshot));
        Ok(())
    }

    fn reclaim_due(&self) -> bool {
        self.reclaimable.is_some()
    }

    fn poll_checkpoint(&mut self) -> Relocations {
        let Ok(done) = self.checkpointer.done.try_recv() else { return Relocations::default() };
        let Some(done) = done else {
            self.checkpointer.in_flight = false;
            return Relocations::default();
        };
        self.history.retain(|index, _| *index >= done.base);
        self.checkpoint_bytes = done.bytes;
        self.reclaimable = Some(done.base);
        done.relocations
    }

    fn reclaim(&mut self) -> io::Result<()> {
        let Some(base) = self.reclaimable else { return Ok(()) };
        let (segments, checkpoints) = list(&self.dir, false).map_err(|error| io::Error::other(error.to_string()))?;
        self.reclaimable = None;
        // Only now may the next checkpoint start: before, its snapshot could still name files
        // this one replaced, or this reclaim could take the next checkpoint for an old one.
        self.checkpointer.in_flight = false;
        let mut replaced = Vec::new();
        for index in segments.into_iter().filter(|index| *index < base) {
            self.readers.forget(segment_file(index));
            replaced.push(segment_path(&self.dir, index));
        }
        for index in checkpoints.into_iter().filter(|index| *index != base) {
            self.readers.forget(checkpoint_file(index));
            replaced.push(checkpoint_path(&self.dir, index));
        }
        let _ = self.checkpointer.work.send(Work::Delete(replaced));
        tracing::info!(base, bytes = self.disk_bytes(), "checkpoint complete; older log files reclaimed");
        Ok(())
    }
}
