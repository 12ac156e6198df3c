//! The durable log: segment files of frames in the data directory, written by the committer
//! once per cycle, reclaimed by checkpoints, and replayed on open.
//!
//! Data directory layout:
//!
//! ```text
//! FORMAT                       "sepp-log 1": refuse to open anything else
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

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use std::collections::HashMap;
use std::os::unix::fs::FileExt;

use sepp_core::{JobId, JobPayload, PayloadData, Record, Snapshot, SnapshotEntry, StoredPayload};

use crate::codec::{Placement, Source};
use crate::frame::{self, Read};
use crate::{Log, Relocations};

const FORMAT: &str = "sepp-log 1\n";
const SEGMENT_MAGIC: &[u8; 8] = b"SEPPLOG1";
const CHECKPOINT_MAGIC: &[u8; 8] = b"SEPPCKP1";

/// How much of a write is made durable before the committer answers (docs/storage.md#group-commit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistMode {
    /// fsync: data and metadata on disk.
    SyncAll,
    /// fdatasync: data on disk, metadata may lag.
    SyncData,
    /// Handed to the OS only: survives a process crash, not a power loss.
    Buffer,
}

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
    #[error("data directory {path} has format {found:?}, which this sepp does not know (it writes {:?}); refusing to open it", FORMAT.trim_end())]
    UnknownFormat { path: PathBuf, found: String },
    #[error(
        "{path} is not empty and has no FORMAT file, so it is not a sepp data directory this version can open (sepp 0.1 data directories are not readable by this version)"
    )]
    NotADataDirectory { path: PathBuf },
    #[error("data directory {path} is in use by another sepp process")]
    Locked { path: PathBuf },
    #[error("{file} is corrupt at byte offset {offset}: {reason}; refusing to open rather than lose acknowledged data")]
    Corrupt { file: PathBuf, offset: u64, reason: &'static str },
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
    segment: File,
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
    readers: PayloadReader,
    /// Declared last so it is dropped last, after the checkpointer has stopped writing.
    _lock: File,
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> OpenError + '_ {
    move |source| OpenError::Io { path: path.to_path_buf(), source }
}

/// File ids in `StoredPayload::file`: a segment's index, or a checkpoint's index with this bit.
const CHECKPOINT_FILE: u32 = 1 << 31;

fn segment_file(index: u64) -> u32 {
    u32::try_from(index).ok().filter(|file| file & CHECKPOINT_FILE == 0).expect("segment index below 2^31")
}

fn checkpoint_file(index: u64) -> u32 {
    segment_file(index) | CHECKPOINT_FILE
}

fn file_path(dir: &Path, file: u32) -> PathBuf {
    let index = u64::from(file & !CHECKPOINT_FILE);
    if file & CHECKPOINT_FILE != 0 { checkpoint_path(dir, index) } else { segment_path(dir, index) }
}

fn segment_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("segment-{index:020}.log"))
}

fn checkpoint_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("checkpoint-{index:020}.ckpt"))
}

/// Parses `<prefix><index><suffix>` file names.
fn file_index(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl DurableLog {
    /// Opens (or creates) the log in `dir`, feeding every recovered record to `apply` in order.
    pub fn open(
        dir: &Path,
        options: LogOptions,
        mut apply: impl FnMut(&Record),
    ) -> Result<(DurableLog, Recovery), OpenError> {
        fs::create_dir_all(dir).map_err(io_error(dir))?;
        check_format(dir)?;
        let lock_path = dir.join("LOCK");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_error(&lock_path))?;
        lock.try_lock().map_err(|_| OpenError::Locked { path: dir.to_path_buf() })?;

        let (segments, checkpoints) = list(dir, true)?;
        let mut recovery = Recovery::default();
        let base = checkpoints.last().copied();
        let mut checkpoint_bytes = 0;
        if let Some(base) = base {
            let path = checkpoint_path(dir, base);
            checkpoint_bytes = fs::metadata(&path).map_err(io_error(&path))?.len();
            recovery.records += read_checkpoint(&path, checkpoint_file(base), &mut apply)?;
            recovery.checkpoint = Some(path);
        }
        let live_segments: Vec<u64> =
            segments.iter().copied().filter(|index| base.is_none_or(|base| *index >= base)).collect();
        if let Some(first) = live_segments.first() {
            // Segments are numbered from 1 and only a checkpoint replaces those before its base,
            // so the first segment is the checkpoint's base, or segment 1 when there is none.
            let first_expected = base.unwrap_or(1);
            if *first != first_expected {
                return Err(OpenError::Gap { path: dir.to_path_buf(), missing: first_expected });
            }
            for (expected, index) in (*first..).zip(&live_segments) {
                if *index != expected {
                    return Err(OpenError::Gap { path: dir.to_path_buf(), missing: expected });
                }
            }
        }
        let mut history = BTreeMap::new();
        for (position, index) in live_segments.iter().enumerate() {
            let path = segment_path(dir, *index);
            let last = position + 1 == live_segments.len();
            let (records, valid_len, tail) = replay_segment(&path, segment_file(*index), last, &mut apply)?;
            recovery.records += records;
            if let Some(tail) = tail {
                let file = OpenOptions::new().write(true).open(&path).map_err(io_error(&path))?;
                file.set_len(valid_len).map_err(io_error(&path))?;
                file.sync_all().map_err(io_error(&path))?;
                tracing::warn!(
                    file = %tail.file.display(),
                    offset = tail.offset,
                    bytes_dropped = tail.bytes_dropped,
                    reason = tail.reason,
                    "dropped a torn or corrupt tail of the log (writes that were never acknowledged)"
                );
                recovery.truncated = Some(tail);
            }
            history.insert(*index, valid_len);
        }
        recovery.segments = live_segments.len();
        // Leftovers of a reclaim that a crash interrupted.
        for index in segments.iter().filter(|index| base.is_some_and(|base| **index < base)) {
            let _ = fs::remove_file(segment_path(dir, *index));
        }
        for index in checkpoints.iter().filter(|index| Some(**index) != base) {
            let _ = fs::remove_file(checkpoint_path(dir, *index));
        }

        let (segment_index, segment, segment_len) = match live_segments.last() {
            Some(index) => {
                let path = segment_path(dir, *index);
                let file = OpenOptions::new().read(true).write(true).open(&path).map_err(io_error(&path))?;
                let mut len = history[index];
                if len < SEGMENT_MAGIC.len() as u64 {
                    file.write_all_at(SEGMENT_MAGIC, 0).map_err(io_error(&path))?;
                    file.sync_all().map_err(io_error(&path))?;
                    len = SEGMENT_MAGIC.len() as u64;
                    history.insert(*index, len);
                }
                (*index, file, len)
            }
            None => {
                // A new log starts in a preallocated segment, as every later one does. Nothing
                // syncs yet, so the zeros need no pacing.
                let index = base.unwrap_or(1);
                let prepared = prepare_segment(dir, index, options.segment_capacity(index), Pace::No);
                let file = install_or_create(dir, index, prepared).map_err(io_error(dir))?;
                history.insert(index, SEGMENT_MAGIC.len() as u64);
                (index, file, SEGMENT_MAGIC.len() as u64)
            }
        };
        let segment_capacity = segment.metadata().map_err(io_error(dir))?.len();
        let preparer = Preparer::start(dir.to_path_buf(), options);
        let mut log = DurableLog {
            dir: dir.to_path_buf(),
            options,
            preparer,
            next_requested: false,
            segment,
            segment_index,
            segment_len,
            segment_capacity,
            buffer: Vec::with_capacity(1 << 20),
            placements: Vec::new(),
            history,
            checkpoint_bytes,
            reclaimable: None,
            checkpointer: Checkpointer::start(dir.to_path_buf()),
            readers: PayloadReader::new(dir.to_path_buf()),
            _lock: lock,
        };
        log.prepare_next_when_due();
        Ok((log, recovery))
    }

    /// Bytes the log occupies on disk: the newest checkpoint and every segment after it.
    pub fn disk_bytes(&self) -> u64 {
        self.checkpoint_bytes + self.history.values().sum::<u64>()
    }

    fn rotate(&mut self) -> io::Result<()> {
        // The closed segment loses its preallocated tail, and is synced even in buffer mode: a
        // segment must be whole before a newer one exists, or a power loss could leave a torn
        // segment in the middle, which recovery refuses.
        self.segment.set_len(self.segment_len)?;
        self.segment.sync_all()?;
        let index = self.segment_index + 1;
        if !self.next_requested {
            self.preparer.request(index);
        }
        self.segment = self.preparer.take(&self.dir, index)?;
        self.segment_capacity = self.segment.metadata()?.len();
        self.segment_index = index;
        self.segment_len = SEGMENT_MAGIC.len() as u64;
        self.history.insert(index, self.segment_len);
        self.next_requested = false;
        self.prepare_next_when_due();
        Ok(())
    }

    /// Writes the buffered frames at `written_at` and syncs them as the persist mode says.
    fn write_and_sync(&self, written_at: u64, end: u64) -> io::Result<()> {
        self.segment.write_all_at(&self.buffer, written_at)?;
        match self.options.persist_mode {
            // Inside preallocated space only the data changes: its size and blocks were synced
            // when the segment was prepared, so fdatasync makes the write exactly as durable as
            // fsync would. A write that grows the file syncs everything.
            PersistMode::SyncAll if end > self.segment_capacity => self.segment.sync_all(),
            PersistMode::SyncAll | PersistMode::SyncData => self.segment.sync_data(),
            PersistMode::Buffer => Ok(()),
        }
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

    fn persist(&mut self) -> io::Result<Vec<(JobId, StoredPayload)>> {
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
        if let Err(error) = self.write_and_sync(written_at, end) {
            // The caller poisons the store and its callers hear INTERNAL. Taking the frame
            // back (best effort: the disk may refuse this too) keeps the next start from
            // finding a cycle that was reported as failed.
            let _ = self.segment.set_len(written_at).and_then(|()| self.segment.sync_all());
            return Err(error);
        }
        self.segment_capacity = self.segment_capacity.max(end);
        self.segment_len += self.buffer.len() as u64;
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

    fn reclaim(&mut self) {
        let Some(base) = self.reclaimable.take() else { return };
        // Only now may the next checkpoint start: before, its snapshot could still name files
        // this one replaced, or this reclaim could take the next checkpoint for an old one.
        self.checkpointer.in_flight = false;
        let Ok((segments, checkpoints)) = list(&self.dir, false) else { return };
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
    }
}

/// Reads payload bytes back from the log's files, keeping each file open once opened.
struct PayloadReader {
    dir: PathBuf,
    files: HashMap<u32, File>,
}

impl PayloadReader {
    fn new(dir: PathBuf) -> PayloadReader {
        PayloadReader { dir, files: HashMap::new() }
    }

    fn read(&mut self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
        let file = match self.files.entry(stored.file) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(File::open(file_path(&self.dir, stored.file))?)
            }
        };
        let mut bytes = vec![0; stored.len as usize];
        file.read_exact_at(&mut bytes, stored.offset)?;
        Ok(bytes)
    }

    fn forget(&mut self, file: u32) {
        self.files.remove(&file);
    }
}

fn check_format(dir: &Path) -> Result<(), OpenError> {
    let format_path = dir.join("FORMAT");
    match fs::read_to_string(&format_path) {
        Ok(found) if found == FORMAT => Ok(()),
        Ok(found) => Err(OpenError::UnknownFormat { path: dir.to_path_buf(), found: found.trim_end().to_string() }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let mut entries = fs::read_dir(dir).map_err(io_error(dir))?;
            if entries.next().is_some() {
                return Err(OpenError::NotADataDirectory { path: dir.to_path_buf() });
            }
            let tmp = dir.join("FORMAT.tmp");
            let write = || -> io::Result<()> {
                let mut file = File::create(&tmp)?;
                file.write_all(FORMAT.as_bytes())?;
                file.sync_all()?;
                fs::rename(&tmp, &format_path)?;
                sync_dir(dir)
            };
            write().map_err(io_error(&format_path))
        }
        Err(source) => Err(OpenError::Io { path: format_path, source }),
    }
}

/// Segment and checkpoint indexes in the directory, ascending. With `remove_leftovers` (on
/// open, when nothing else writes here) it also removes unfinished temporary files.
fn list(dir: &Path, remove_leftovers: bool) -> Result<(Vec<u64>, Vec<u64>), OpenError> {
    let mut segments = Vec::new();
    let mut checkpoints = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(index) = file_index(&name, "segment-", ".log") {
            segments.push(index);
        } else if let Some(index) = file_index(&name, "checkpoint-", ".ckpt") {
            checkpoints.push(index);
        } else if remove_leftovers && (name.ends_with(".tmp") || name.ends_with(".prep")) {
            let _ = fs::remove_file(entry.path());
        }
    }
    segments.sort_unstable();
    checkpoints.sort_unstable();
    Ok((segments, checkpoints))
}

fn create_segment(dir: &Path, index: u64) -> io::Result<File> {
    let path = segment_path(dir, index);
    let file = OpenOptions::new().create_new(true).read(true).write(true).open(&path)?;
    file.write_all_at(SEGMENT_MAGIC, 0)?;
    file.sync_all()?;
    sync_dir(dir)?;
    Ok(file)
}

/// The segment `index` from its preparation: the prepared file, or, when preparing failed (a
/// nearly full disk, a file size limit), a segment created without preallocation. The log works
/// the same in it, only each sync that grows the file costs more.
fn install_or_create(dir: &Path, index: u64, prepared: io::Result<()>) -> io::Result<File> {
    if let Err(error) = prepared {
        tracing::warn!(%error, index, "preparing a log segment failed; creating it without preallocation");
        let _ = fs::remove_file(prepared_path(dir, index));
        return create_segment(dir, index);
    }
    install_prepared(dir, index)
}

/// Turns the prepared `segment-<index>.prep` into the segment `index` and opens it.
fn install_prepared(dir: &Path, index: u64) -> io::Result<File> {
    let path = segment_path(dir, index);
    fs::rename(prepared_path(dir, index), &path)?;
    sync_dir(dir)?;
    OpenOptions::new().read(true).write(true).open(&path)
}

fn prepared_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("segment-{index:020}.prep"))
}

/// Bytes the segment preparer and the checkpoint writer write, and write back, at a time.
const WRITE_BACK_CHUNK_BYTES: usize = 128 << 10;

/// Whether preparing a segment writes its zeros back as it goes.
#[derive(Clone, Copy, PartialEq)]
enum Pace {
    /// At the start of a new log: nothing else is writing.
    No,
    /// In the background, while the log syncs.
    WriteBack,
}

/// Writes `segment-<index>.prep`: the header and then zeros up to `capacity`, synced. Appending
/// into space that is already written costs a sync far less than growing the file: only the
/// data has to reach the disk, not the new size and block allocation with it.
///
/// With `Pace::WriteBack` the zeros go to the disk a chunk at a time, each written back before
/// the next is written. Left to the kernel, the whole segment would sit dirty in the page cache
/// and then be written back in one burst, and every sync of the log meanwhile would wait behind
/// it.
fn prepare_segment(dir: &Path, index: u64, capacity: u64, pace: Pace) -> io::Result<()> {
    let file = File::create(prepared_path(dir, index))?;
    // However small the capacity, the header is written whole.
    let capacity = capacity.max(SEGMENT_MAGIC.len() as u64);
    let mut chunk = vec![0; WRITE_BACK_CHUNK_BYTES];
    chunk[..SEGMENT_MAGIC.len()].copy_from_slice(SEGMENT_MAGIC);
    let mut written = 0;
    while written < capacity {
        let len = (capacity - written).min(chunk.len() as u64) as usize;
        file.write_all_at(&chunk[..len], written)?;
        if written == 0 {
            chunk[..SEGMENT_MAGIC.len()].fill(0);
        }
        if pace == Pace::WriteBack {
            write_back(&file, written, len);
        }
        written += len as u64;
    }
    file.sync_all()
}

/// Writes `bytes` at `offset` a chunk at a time, each written back before the next: a checkpoint
/// of a large backlog is hundreds of megabytes, which left dirty in the page cache would reach
/// the disk in one burst at its final sync, and every sync of the log would wait behind it.
fn write_paced(file: &File, offset: u64, bytes: &[u8]) -> io::Result<()> {
    let mut at = offset;
    for chunk in bytes.chunks(WRITE_BACK_CHUNK_BYTES) {
        file.write_all_at(chunk, at)?;
        write_back(file, at, chunk.len());
        at += chunk.len() as u64;
    }
    Ok(())
}

/// Writes a range of a file back to the disk and waits for it, without syncing anything else
/// (no metadata, no disk cache flush). Only paces the writer: durability comes from a sync.
#[cfg(target_os = "linux")]
fn write_back(file: &File, offset: u64, len: usize) {
    use std::os::fd::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: the descriptor is open for the whole call; the call reads and writes no memory.
    // A failure only loses the pacing, so it is ignored.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, flags) };
}

#[cfg(not(target_os = "linux"))]
fn write_back(_file: &File, _offset: u64, _len: usize) {}

/// Prepares the next segment in the background while the current one fills.
struct Preparer {
    requests: mpsc::Sender<u64>,
    /// The index prepared, and whether it worked.
    ready: mpsc::Receiver<(u64, io::Result<()>)>,
    /// An answer of `ready` received by `is_ready` and not yet taken.
    arrived: Option<(u64, io::Result<()>)>,
    thread: Option<JoinHandle<()>>,
}

impl Preparer {
    fn start(dir: PathBuf, options: LogOptions) -> Preparer {
        let (requests, request_receiver) = mpsc::channel::<u64>();
        let (ready_sender, ready) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("sepp-segment-prep".into())
            .spawn(move || {
                for index in request_receiver {
                    let result = prepare_segment(&dir, index, options.segment_capacity(index), Pace::WriteBack);
                    if ready_sender.send((index, result)).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the segment preparer");
        Preparer { requests, ready, arrived: None, thread: Some(thread) }
    }

    fn request(&self, index: u64) {
        let _ = self.requests.send(index);
    }

    /// Whether preparing segment `index` succeeded already, without waiting.
    fn is_ready(&mut self, index: u64) -> bool {
        while self.arrived.as_ref().is_none_or(|(ready, _)| *ready < index) {
            match self.ready.try_recv() {
                Ok(answer) => self.arrived = Some(answer),
                Err(_) => return false,
            }
        }
        self.arrived.as_ref().is_some_and(|(ready, result)| *ready == index && result.is_ok())
    }

    /// The segment `index`, prepared in the background (waiting for it if need be), or created
    /// here when preparing failed.
    fn take(&mut self, dir: &Path, index: u64) -> io::Result<File> {
        let prepared = loop {
            let answer = match self.arrived.take() {
                Some(answer) => Ok(answer),
                None => self.ready.recv(),
            };
            match answer {
                Ok((ready, result)) if ready == index => break result,
                Ok(_) => continue,
                Err(_) => break Err(io::Error::other("the segment preparer stopped")),
            }
        };
        install_or_create(dir, index, prepared)
    }
}

impl Drop for Preparer {
    fn drop(&mut self) {
        close_and_join(&mut self.requests, &mut self.thread);
    }
}

/// Stops a background thread that serves `requests`: closes the channel (its loop then ends once
/// the work in hand is done) and waits for the thread.
fn close_and_join<T>(requests: &mut mpsc::Sender<T>, thread: &mut Option<JoinHandle<()>>) {
    let (closed, _) = mpsc::channel();
    drop(std::mem::replace(requests, closed));
    if let Some(thread) = thread.take() {
        let _ = thread.join();
    }
}

/// Replays one segment. Returns the records applied, the length of its valid prefix, and the
/// tail that was cut (only ever in the last segment).
fn replay_segment(
    path: &Path,
    file: u32,
    last: bool,
    apply: &mut impl FnMut(&Record),
) -> Result<(u64, u64, Option<TruncatedTail>), OpenError> {
    let bytes = fs::read(path).map_err(io_error(path))?;
    let corrupt =
        |offset: usize, reason| OpenError::Corrupt { file: path.to_path_buf(), offset: offset as u64, reason };
    if bytes.len() < SEGMENT_MAGIC.len() {
        return if last && SEGMENT_MAGIC.starts_with(&bytes) {
            Ok((0, 0, None))
        } else {
            Err(corrupt(0, "segment header is missing"))
        };
    }
    if &bytes[..SEGMENT_MAGIC.len()] != SEGMENT_MAGIC {
        return Err(corrupt(0, "not a sepp log segment"));
    }
    let mut at = SEGMENT_MAGIC.len();
    let mut records = 0;
    loop {
        let problem = match frame::read(&bytes[at..], Some(Source { file, offset: at as u64 })) {
            Read::Frame(frame_records, used) => {
                for record in &frame_records {
                    apply(record);
                }
                records += frame_records.len() as u64;
                at += used;
                continue;
            }
            Read::End => return Ok((records, at as u64, None)),
            // The preallocated, never written rest of the segment being filled: a clean end.
            _ if last && bytes[at..].iter().all(|byte| *byte == 0) => return Ok((records, at as u64, None)),
            Read::Torn => "the last write was cut short",
            Read::Corrupt(reason) => reason,
        };
        // A write cut short can only damage the end. Damage followed by an intact frame is
        // corruption of acknowledged data, not a torn tail, and is refused like any other.
        if !last || intact_frame_follows(&bytes, at) {
            return Err(corrupt(at, problem));
        }
        let tail = TruncatedTail {
            file: path.to_path_buf(),
            offset: at as u64,
            bytes_dropped: (bytes.len() - at) as u64,
            reason: problem,
        };
        return Ok((records, at as u64, Some(tail)));
    }
}

/// Whether a valid frame starts right after the (damaged) frame at `at`, judging by its length
/// field.
fn intact_frame_follows(bytes: &[u8], at: usize) -> bool {
    let Some(Ok(len)) = bytes[at..].first_chunk().map(frame::frame_len) else { return false };
    let next = at + len;
    next < bytes.len() && matches!(frame::read(&bytes[next..], None), Read::Frame(..))
}

fn read_checkpoint(path: &Path, file: u32, apply: &mut impl FnMut(&Record)) -> Result<u64, OpenError> {
    // A checkpoint holds every live payload, so it is read a frame at a time rather than whole:
    // restarting with a large backlog must not need memory for all of it at once.
    let reader = File::open(path).map_err(io_error(path))?;
    let len = reader.metadata().map_err(io_error(path))?.len();
    let mut reader = io::BufReader::with_capacity(1 << 20, reader);
    let corrupt = |offset: u64, reason| OpenError::Corrupt { file: path.to_path_buf(), offset, reason };
    let mut magic = [0; CHECKPOINT_MAGIC.len()];
    if len < magic.len() as u64 || reader.read_exact(&mut magic).is_err() || &magic != CHECKPOINT_MAGIC {
        return Err(corrupt(0, "not a sepp checkpoint"));
    }
    let mut at = CHECKPOINT_MAGIC.len() as u64;
    let mut records = 0;
    let mut frame_bytes = Vec::new();
    loop {
        let remaining = len - at;
        if remaining < frame::HEADER_BYTES as u64 {
            return Err(corrupt(at, "checkpoint ends before its end mark"));
        }
        let mut header = [0; frame::HEADER_BYTES];
        reader.read_exact(&mut header).map_err(io_error(path))?;
        let frame_len = frame::frame_len(&header).map_err(|reason| corrupt(at, reason))?;
        if remaining < frame_len as u64 {
            return Err(corrupt(at, "checkpoint ends before its end mark"));
        }
        frame_bytes.clear();
        frame_bytes.extend_from_slice(&header);
        frame_bytes.resize(frame_len, 0);
        reader.read_exact(&mut frame_bytes[frame::HEADER_BYTES..]).map_err(io_error(path))?;
        match frame::read(&frame_bytes, Some(Source { file, offset: at })) {
            Read::Frame(frame_records, used) => {
                at += used as u64;
                if frame_records.is_empty() {
                    return if at == len { Ok(records) } else { Err(corrupt(at, "bytes after the end mark")) };
                }
                for record in &frame_records {
                    apply(record);
                }
                records += frame_records.len() as u64;
            }
            Read::End | Read::Torn => return Err(corrupt(at, "checkpoint ends before its end mark")),
            Read::Corrupt(reason) => return Err(corrupt(at, reason)),
        }
    }
}

/// A checkpoint that is on disk: its base segment, its size, and where it put each payload.
struct Completed {
    base: u64,
    bytes: u64,
    relocations: Relocations,
}

/// What the checkpoint thread is asked to do.
enum Work {
    /// Write a checkpoint of the snapshot, based at this segment.
    Write(u64, Snapshot),
    /// Delete files a finished checkpoint replaced. Freeing the blocks of a gigabyte of segments
    /// took the file system about 200 ms here, which the committer must not wait for.
    Delete(Vec<PathBuf>),
}

/// The thread that writes checkpoints off the committer's path. It reads stored payloads from
/// the files they are in and writes them into the checkpoint; the committer then moves the
/// payloads' places to the checkpoint (`poll_checkpoint`) before the old files go (`reclaim`),
/// which this thread deletes too.
struct Checkpointer {
    work: mpsc::Sender<Work>,
    /// `None` reports a failed checkpoint.
    done: mpsc::Receiver<Option<Completed>>,
    in_flight: bool,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Checkpointer {
    /// Lets a checkpoint in flight finish (and deletions asked for happen) and waits for the
    /// thread, so that the directory lock (a later field of [`DurableLog`]) is released only
    /// once nothing writes here any more.
    fn drop(&mut self) {
        close_and_join(&mut self.work, &mut self.thread);
    }
}

impl Checkpointer {
    fn start(dir: PathBuf) -> Checkpointer {
        let (work, work_receiver) = mpsc::channel::<Work>();
        let (done_sender, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("sepp-checkpoint".into())
            .spawn(move || {
                let mut readers = PayloadReader::new(dir.clone());
                for work in work_receiver {
                    let (base, snapshot) = match work {
                        Work::Write(base, snapshot) => (base, snapshot),
                        Work::Delete(paths) => {
                            for path in paths {
                                let _ = fs::remove_file(path);
                            }
                            continue;
                        }
                    };
                    let result = write_checkpoint(&dir, base, snapshot, &mut readers);
                    readers.files.clear();
                    let outcome = match result {
                        Ok((bytes, relocations)) => Some(Completed { base, bytes, relocations }),
                        Err(error) => {
                            tracing::error!(%error, base, "writing a checkpoint failed; the log keeps its segments");
                            None
                        }
                    };
                    if done_sender.send(outcome).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the checkpoint thread");
        Checkpointer { work, done, in_flight: false, thread: Some(thread) }
    }
}

/// Writes the snapshot as `checkpoint-<base>.ckpt`, atomically (temp file, fsync, rename), one
/// frame per chunk of the snapshot. Returns its size and the new place of every large payload
/// (which keeps the snapshot's chunks: they name the jobs).
fn write_checkpoint(
    dir: &Path,
    base: u64,
    snapshot: Snapshot,
    readers: &mut PayloadReader,
) -> io::Result<(u64, Relocations)> {
    let tmp = dir.join(format!("checkpoint-{base:020}.tmp"));
    let file = File::create(&tmp)?;
    file.write_all_at(CHECKPOINT_MAGIC, 0)?;
    let mut bytes = CHECKPOINT_MAGIC.len() as u64;
    let mut buffer = Vec::with_capacity(1 << 20);
    let mut placements = Vec::new();
    let mut relocations = Relocations::into_file(checkpoint_file(base));
    for chunk in snapshot.into_chunks().chain(std::iter::once(Vec::new())) {
        let loaded = chunk.iter().map(|entry| load_payload(entry, readers)).collect::<io::Result<Vec<_>>>()?;
        buffer.clear();
        frame::encode(&loaded, &mut buffer, &mut placements);
        drop(loaded);
        let start = bytes;
        relocations.push_chunk(
            chunk,
            placements.drain(..).map(|placement| (placement.job_id, start + placement.offset as u64)),
        );
        write_paced(&file, bytes, &buffer)?;
        bytes += buffer.len() as u64;
    }
    file.sync_all()?;
    fs::rename(&tmp, checkpoint_path(dir, base))?;
    sync_dir(dir)?;
    Ok((bytes, relocations))
}

/// The entry's record with its payload bytes in memory, read from the log if they are stored.
fn load_payload(entry: &SnapshotEntry, readers: &mut PayloadReader) -> io::Result<Record> {
    let record = entry.to_record();
    let job = match &record {
        Record::JobRestored { job, .. } => job,
        Record::DeadLetterRestored { dead } => &dead.job,
        _ => return Ok(record),
    };
    let Some(JobPayload { encoding, data: PayloadData::Stored(stored) }) = &job.payload else {
        return Ok(record);
    };
    let mut loaded = (**job).clone();
    loaded.payload =
        Some(JobPayload { encoding: encoding.clone(), data: PayloadData::Inline(readers.read(stored)?.into()) });
    let loaded = std::sync::Arc::new(loaded);
    Ok(match record {
        Record::JobRestored { state, .. } => Record::JobRestored { job: loaded, state },
        Record::DeadLetterRestored { dead } => {
            Record::DeadLetterRestored { dead: sepp_core::DeadLetter { job: loaded, ..dead } }
        }
        _ => unreachable!("matched above"),
    })
}
