//! The segment preparer: the next segment is created and zero-filled in the background while
//! the current one fills, so that appends land in preallocated space (fdatasync, not fsync).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::files::{WRITE_BACK_CHUNK_BYTES, close_and_join, segment_path, sync_dir, write_back};
use super::{LogOptions, SEGMENT_MAGIC};

pub(super) fn create_segment(dir: &Path, index: u64) -> io::Result<File> {
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
pub(super) fn install_or_create(dir: &Path, index: u64, prepared: io::Result<()>) -> io::Result<File> {
    if let Err(error) = prepared {
        tracing::warn!(%error, index, "preparing a log segment failed; creating it without preallocation");
        let _ = fs::remove_file(prepared_path(dir, index));
        return create_segment(dir, index);
    }
    install_prepared(dir, index)
}

/// Turns the prepared `segment-<index>.prep` into the segment `index` and opens it.
pub(super) fn install_prepared(dir: &Path, index: u64) -> io::Result<File> {
    let path = segment_path(dir, index);
    fs::rename(prepared_path(dir, index), &path)?;
    sync_dir(dir)?;
    OpenOptions::new().read(true).write(true).open(&path)
}

pub(super) fn prepared_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("segment-{index:020}.prep"))
}

/// Whether preparing a segment writes its zeros back as it goes.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Pace {
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
pub(super) fn prepare_segment(dir: &Path, index: u64, capacity: u64, pace: Pace) -> io::Result<()> {
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

/// Prepares the next segment in the background while the current one fills.
pub(super) struct Preparer {
    requests: mpsc::Sender<u64>,
    /// The index prepared, and whether it worked.
    ready: mpsc::Receiver<(u64, io::Result<()>)>,
    /// An answer of `ready` received by `is_ready` and not yet taken.
    arrived: Option<(u64, io::Result<()>)>,
    thread: Option<JoinHandle<()>>,
}

impl Preparer {
    pub(super) fn start(dir: PathBuf, options: LogOptions) -> Preparer {
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

    pub(super) fn request(&self, index: u64) {
        let _ = self.requests.send(index);
    }

    /// Whether preparing segment `index` succeeded already, without waiting.
    pub(super) fn is_ready(&mut self, index: u64) -> bool {
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
    pub(super) fn take(&mut self, dir: &Path, index: u64) -> io::Result<File> {
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
