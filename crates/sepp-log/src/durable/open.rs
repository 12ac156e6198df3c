//! Opening a data directory: the format check and lock, recovery from the newest checkpoint
//! and the segments after it, cutting a torn tail, and the segment to append to.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use sepp_core::Record;

use super::checkpoint::Checkpointer;
use super::files::{
    PayloadReader, check_format, checkpoint_file, checkpoint_path, io_error, list, segment_file, segment_path,
    writable_or, write_format,
};
use super::preparer::{Pace, Preparer, install_or_create, prepare_segment};
use super::replay::{read_checkpoint, replay_segment};
use super::syncer::Syncer;
use super::{DurableLog, FORMAT_VERSION, LogOptions, OpenError, Recovery, SEGMENT_MAGIC};

impl DurableLog {
    /// Whether `dir` holds a log's segments or checkpoints (a directory that does not exist,
    /// or cannot be read, holds none).
    pub fn holds_log(dir: &Path) -> bool {
        super::files::list(dir, false)
            .is_ok_and(|(segments, checkpoints)| !segments.is_empty() || !checkpoints.is_empty())
    }

    /// Opens (or creates) the log in `dir`, feeding every recovered record to `apply` in order.
    pub fn open(
        dir: &Path,
        options: LogOptions,
        mut apply: impl FnMut(&Record),
    ) -> Result<(DurableLog, Recovery), OpenError> {
        create_data_directory(dir)?;
        let format_version = check_format(dir)?;
        let lock_path = dir.join("LOCK");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| writable_or(dir, &lock_path, source))?;
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
        // Every file of an older format read back: from here on this sepp may write records
        // that format lacks, so the directory becomes the current format before anything is
        // written, and an older sepp refuses it from now on rather than meet them.
        if format_version < FORMAT_VERSION {
            let format_path = dir.join("FORMAT");
            write_format(dir).map_err(|source| writable_or(dir, &format_path, source))?;
            tracing::info!(
                dir = %dir.display(),
                from = format_version,
                to = FORMAT_VERSION,
                "upgraded the data directory's format"
            );
        }
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
            unsynced: None,
            syncer: Syncer::start(),
            sync_micros: 0,
            segment: Arc::new(segment),
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
}

/// Creates the data directory when it does not exist, naming what is in the way when that fails:
/// a file where the directory should be, a parent that is a file, or the system's reason.
fn create_data_directory(dir: &Path) -> Result<(), OpenError> {
    match fs::metadata(dir) {
        Ok(metadata) if metadata.is_dir() => return Ok(()),
        Ok(_) => return Err(OpenError::NotADirectory { path: dir.to_path_buf() }),
        Err(_) => {}
    }
    fs::create_dir_all(dir).map_err(|source| {
        let blocker = dir.ancestors().skip(1).find(|ancestor| fs::metadata(ancestor).is_ok_and(|m| !m.is_dir()));
        match blocker {
            Some(file) => OpenError::ParentNotADirectory { path: dir.to_path_buf(), file: file.to_path_buf() },
            None => OpenError::CannotCreate { path: dir.to_path_buf(), source },
        }
    })
}
