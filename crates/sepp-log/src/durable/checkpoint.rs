//! The checkpoint thread: writes a snapshot of the state as a checkpoint file off the
//! committer's path, hands back where it put each payload, and deletes the files a finished
//! checkpoint replaced.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use sepp_core::{JobPayload, PayloadData, Record, Snapshot, SnapshotEntry};

use super::CHECKPOINT_MAGIC;
use super::files::{PayloadReader, checkpoint_file, checkpoint_path, close_and_join, sync_dir, write_paced};
use crate::Relocations;
use crate::frame;

/// A checkpoint that is on disk: its base segment, its size, and where it put each payload.
pub(super) struct Completed {
    pub(super) base: u64,
    pub(super) bytes: u64,
    pub(super) relocations: Relocations,
}

/// What the checkpoint thread is asked to do.
pub(super) enum Work {
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
pub(super) struct Checkpointer {
    pub(super) work: mpsc::Sender<Work>,
    /// `None` reports a failed checkpoint.
    pub(super) done: mpsc::Receiver<Option<Completed>>,
    pub(super) in_flight: bool,
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
    pub(super) fn start(dir: PathBuf) -> Checkpointer {
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
pub(super) fn write_checkpoint(
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
pub(super) fn load_payload(entry: &SnapshotEntry, readers: &mut PayloadReader) -> io::Result<Record> {
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
