//! The files of a data directory: their names and ids, the FORMAT check, listing, reading
//! payloads back, and writing paced by write-back.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use sepp_core::StoredPayload;

use super::{FORMAT_VERSION, OLDEST_FORMAT_VERSION, OpenError};

pub(super) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> OpenError + '_ {
    move |source| OpenError::Io { path: path.to_path_buf(), source }
}

/// File ids in `StoredPayload::file`: a segment's index, or a checkpoint's index with this bit.
pub(super) const CHECKPOINT_FILE: u32 = 1 << 31;

pub(super) fn segment_file(index: u64) -> u32 {
    u32::try_from(index).ok().filter(|file| file & CHECKPOINT_FILE == 0).expect("segment index below 2^31")
}

pub(super) fn checkpoint_file(index: u64) -> u32 {
    segment_file(index) | CHECKPOINT_FILE
}

pub(super) fn file_path(dir: &Path, file: u32) -> PathBuf {
    let index = u64::from(file & !CHECKPOINT_FILE);
    if file & CHECKPOINT_FILE != 0 { checkpoint_path(dir, index) } else { segment_path(dir, index) }
}

pub(super) fn segment_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("segment-{index:020}.log"))
}

pub(super) fn checkpoint_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("checkpoint-{index:020}.ckpt"))
}

/// Parses `<prefix><index><suffix>` file names.
pub(super) fn file_index(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok()
}

pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Reads payload bytes back from the log's files, keeping each file open once opened.
pub(super) struct PayloadReader {
    dir: PathBuf,
    pub(super) files: HashMap<u32, File>,
}

impl PayloadReader {
    pub(super) fn new(dir: PathBuf) -> PayloadReader {
        PayloadReader { dir, files: HashMap::new() }
    }

    pub(super) fn read(&mut self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
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

    pub(super) fn forget(&mut self, file: u32) {
        self.files.remove(&file);
    }
}

/// The format version of the data directory: the one in its `FORMAT` file, or, for an empty
/// directory, [`FORMAT_VERSION`] (which it writes). Refuses a directory of an unknown or newer
/// format, and a non-empty one without a `FORMAT` file, leaving it as it was.
pub(super) fn check_format(dir: &Path) -> Result<u32, OpenError> {
    let format_path = dir.join("FORMAT");
    match fs::read_to_string(&format_path) {
        Ok(found) => {
            let version = found.strip_suffix('\n').and_then(|line| line.strip_prefix("sepp-log "));
            match version.map(str::parse::<u32>) {
                Some(Ok(version)) if version > FORMAT_VERSION => {
                    Err(OpenError::NewerFormat { path: dir.to_path_buf(), found: version })
                }
                Some(Ok(version)) if version >= OLDEST_FORMAT_VERSION => Ok(version),
                _ => Err(OpenError::UnknownFormat { path: dir.to_path_buf(), found: found.trim_end().to_string() }),
            }
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let mut entries = fs::read_dir(dir).map_err(io_error(dir))?;
            if entries.next().is_some() {
                return Err(OpenError::NotADataDirectory { path: dir.to_path_buf() });
            }
            write_format(dir).map_err(|source| writable_or(dir, &format_path, source))?;
            Ok(FORMAT_VERSION)
        }
        Err(source) => Err(OpenError::Io { path: format_path, source }),
    }
}

/// Writes `FORMAT` with [`FORMAT_VERSION`], atomically: a temporary file, synced, renamed over
/// it, and the directory synced.
pub(super) fn write_format(dir: &Path) -> io::Result<()> {
    let tmp = dir.join("FORMAT.tmp");
    let mut file = File::create(&tmp)?;
    file.write_all(format!("sepp-log {FORMAT_VERSION}\n").as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, dir.join("FORMAT"))?;
    sync_dir(dir)
}

/// Segment and checkpoint indexes in the directory, ascending. With `remove_leftovers` (on
/// open, when nothing else writes here) it also removes unfinished temporary files.
pub(super) fn list(dir: &Path, remove_leftovers: bool) -> Result<(Vec<u64>, Vec<u64>), OpenError> {
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

/// Bytes the segment preparer and the checkpoint writer write, and write back, at a time.
pub(super) const WRITE_BACK_CHUNK_BYTES: usize = 128 << 10;

/// Writes `bytes` at `offset` a chunk at a time, each written back before the next: a checkpoint
/// of a large backlog is hundreds of megabytes, which left dirty in the page cache would reach
/// the disk in one burst at its final sync, and every sync of the log would wait behind it.
pub(super) fn write_paced(file: &File, offset: u64, bytes: &[u8]) -> io::Result<()> {
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
pub(super) fn write_back(file: &File, offset: u64, len: usize) {
    use std::os::fd::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: the descriptor is open for the whole call; the call reads and writes no memory.
    // A failure only loses the pacing, so it is ignored.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, flags) };
}

#[cfg(not(target_os = "linux"))]
pub(super) fn write_back(_file: &File, _offset: u64, _len: usize) {}

/// Stops a background thread that serves `requests`: closes the channel (its loop then ends once
/// the work in hand is done) and waits for the thread.
pub(super) fn close_and_join<T>(requests: &mut mpsc::Sender<T>, thread: &mut Option<JoinHandle<()>>) {
    let (closed, _) = mpsc::channel();
    drop(std::mem::replace(requests, closed));
    if let Some(thread) = thread.take() {
        let _ = thread.join();
    }
}

/// The error of a first write into the data directory: "not writable" when the system refused
/// permission (or the file system is read-only), else the plain I/O error on `file`.
pub(super) fn writable_or(dir: &Path, file: &Path, source: std::io::Error) -> OpenError {
    let refused =
        matches!(source.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem);
    if refused { OpenError::NotWritable { path: dir.to_path_buf(), source } } else { io_error(file)(source) }
}
