//! Where a cluster node keeps its jobs' payloads: files of its own, so that a queued job holds
//! its place on disk in memory instead of its bytes, as a single node's jobs point into its log.
//!
//! The state machine writes each applied job's payload (larger than
//! `sepp_log::codec::INLINE_PAYLOAD_MAX`) to the end of the current payload file and swaps the
//! bytes in memory for that place (`State::place_payload`). The files hold nothing that is not
//! also in the Raft log or a snapshot: they are not synced, and a node that opens its state
//! machine starts them empty (the snapshot and the entries applied after it write them again).
//! The files, in `<cluster dir>/payloads`:
//!
//! ```text
//! <file id>.payloads    payload bytes, one after another; a new file starts once one holds
//!                       SEGMENT_BYTES
//! ```
//!
//! **Space.** Acked jobs leave their bytes behind. Whenever a file fills, the store counts the
//! bytes each older file still holds for live jobs and dead letters: a file that holds none is
//! deleted, and one whose live bytes are at most half its size has them copied to the end of
//! the current file (its jobs take the new places) and is deleted. So the files hold at most
//! about twice the live payloads, plus two files.
//!
//! **Sharing with the leader's committer.** On the leader, the committer's state shares the jobs
//! of the state machine's (it started as a clone of it, and applies its own entries from the
//! records its committer made). A job that the machine places while the committer holds it too
//! is replaced by a copy in the machine, and the store offers that copy to the committer
//! ([`PayloadStore::take_adopted`], `State::adopt_job`), which takes it in place of its own: the
//! two share the job again, now without its bytes in memory. A file whose jobs moved is deleted
//! only once nothing can still read from it: the committer confirmed it took every moved job
//! ([`PayloadStore::confirm`]), and no snapshot started before the move is still being written.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use sepp_core::{Job, JobId, PayloadData, State, StoredPayload};
use sepp_log::codec::INLINE_PAYLOAD_MAX;

/// Bytes after which a payload file is full and the next one starts.
pub const SEGMENT_BYTES: u64 = 64 << 20;
/// Bytes written to the current file at once, at most (writes are flushed at the end of every
/// batch of applied entries, and whenever this many wait).
const WRITE_BUFFER: usize = 1 << 20;
const SUFFIX: &str = ".payloads";

/// A node's payload files. Clones share them.
#[derive(Clone)]
pub struct PayloadStore {
    inner: Arc<Mutex<Store>>,
}

struct Store {
    dir: PathBuf,
    /// [`SEGMENT_BYTES`], or less in tests.
    file_bytes: u64,
    /// Every open file, by id: the current one, full ones, and deleted ones still readable.
    files: HashMap<u32, Arc<File>>,
    /// The length of each full file.
    full: HashMap<u32, u64>,
    current: u32,
    /// Bytes of the current file, with those still in `pending`.
    current_len: u64,
    /// The current file's last bytes, not yet written.
    pending: Vec<u8>,
    /// Files whose jobs all moved or left, with the epoch in which they did: deleted once no
    /// reader may still hold a place in them.
    retired: Vec<(u32, u64)>,
    /// Advances each time files are retired.
    epoch: u64,
    /// A file filled since the last collection.
    collect_due: bool,
    adoption: Adoption,
    /// The epoch in which the snapshot being written took its records, if one is.
    building: Option<u64>,
}

/// The copies offered to a leading committer.
#[derive(Default)]
struct Adoption {
    /// Which committer (counted from 1) is offered copies; 0 when none.
    generation: u64,
    /// Counts committers that started.
    started: u64,
    offered: Vec<Arc<Job>>,
    /// The epoch when the committer last took what was offered.
    taken: u64,
    /// The epoch up to which the committer holds no place in a retired file.
    confirmed: u64,
}

impl PayloadStore {
    /// Starts the payload files in `dir` empty (anything there is removed).
    pub fn open(dir: &Path) -> io::Result<PayloadStore> {
        PayloadStore::open_with(dir, SEGMENT_BYTES)
    }

    /// [`PayloadStore::open`] with files of `file_bytes` each.
    pub fn open_with(dir: &Path, file_bytes: u64) -> io::Result<PayloadStore> {
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        fs::create_dir_all(dir)?;
        let mut store = Store {
            dir: dir.to_path_buf(),
            file_bytes,
            files: HashMap::new(),
            full: HashMap::new(),
            current: 0,
            current_len: 0,
            pending: Vec::new(),
            retired: Vec::new(),
            epoch: 0,
            collect_due: false,
            adoption: Adoption::default(),
            building: None,
        };
        store.start_file(0)?;
        Ok(PayloadStore { inner: Arc::new(Mutex::new(store)) })
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes the bytes of `job`'s payload if it has a large one in memory; returns its place
    /// (give it to `State::place_payload` once the job is in the state).
    pub fn place_job(&self, job: &Job) -> io::Result<Option<(JobId, StoredPayload)>> {
        match job.payload.as_ref().map(|payload| &payload.data) {
            Some(PayloadData::Inline(bytes)) if bytes.len() > INLINE_PAYLOAD_MAX => {
                Ok(Some((job.id, self.lock().append(bytes)?)))
            }
            _ => Ok(None),
        }
    }

    /// Writes what waits to be written.
    pub fn flush(&self) -> io::Result<()> {
        self.lock().flush()
    }

    /// The bytes at `stored`.
    pub fn read(&self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
        let file =
            {
                let store = self.lock();
                let written = store.current_len - store.pending.len() as u64;
                if stored.file == store.current && stored.offset >= written {
                    let start = (stored.offset - written) as usize;
                    return match store.pending.get(start..start + stored.len as usize) {
                        Some(bytes) => Ok(bytes.to_vec()),
                        None => Err(io::Error::other(format!("payload {stored:?} is past the end of its file"))),
                    };
                }
                store.files.get(&stored.file).cloned().ok_or_else(|| {
                    io::Error::other(format!("payload file {} is gone (payload {stored:?})", stored.file))
                })?
            };
        let mut bytes = vec![0; stored.len as usize];
        file.read_exact_at(&mut bytes, stored.offset)?;
        Ok(bytes)
    }

    /// A reader for many payloads in a row (a snapshot's): it reads a file a window at a
    /// time, so payloads that lie one after another, as a queue's do, cost one read per window
    /// instead of one each.
    pub fn reader(&self) -> PayloadReader {
        PayloadReader { store: self.clone(), window: Vec::new(), file: 0, start: 0 }
    }

    /// Offers `job`, which the state machine holds (a copy it made, or a job that moved), to the
    /// leading committer, if there is one.
    pub fn offer(&self, job: &Arc<Job>) {
        let mut store = self.lock();
        if store.adoption.generation != 0 {
            store.adoption.offered.push(job.clone());
        }
    }

    /// A committer starts to lead from a copy of the state taken now: offers go to it from now
    /// on. Returns its generation (for [`PayloadStore::stop_adopting`]).
    pub fn start_adopting(&self) -> u64 {
        let mut store = self.lock();
        let epoch = store.epoch;
        let adoption = &mut store.adoption;
        adoption.started += 1;
        adoption.generation = adoption.started;
        adoption.offered.clear();
        adoption.taken = epoch;
        adoption.confirmed = epoch;
        adoption.generation
    }

    /// The committer of `generation` stopped leading: nothing is offered to it any more.
    pub fn stop_adopting(&self, generation: u64) {
        let mut store = self.lock();
        if store.adoption.generation == generation {
            store.adoption = Adoption { started: store.adoption.started, ..Adoption::default() };
            store.release();
        }
    }

    /// The generation of the committer offers go to (0: none).
    pub fn adopting(&self) -> u64 {
        self.lock().adoption.generation
    }

    /// What was offered to the committer since it last took it.
    pub fn take_adopted(&self) -> Vec<Arc<Job>> {
        let mut store = self.lock();
        store.adoption.taken = store.epoch;
        std::mem::take(&mut store.adoption.offered)
    }

    /// The committer took everything offered when it last took it, and answers nothing that
    /// was read before: files retired by then may go.
    pub fn confirm(&self) {
        let mut store = self.lock();
        store.adoption.confirmed = store.adoption.taken;
        store.release();
    }

    /// Whether a retired file waits for the committer's [`PayloadStore::confirm`].
    pub fn waits_for_committer(&self) -> bool {
        let store = self.lock();
        store.adoption.generation != 0 && store.retired.iter().any(|&(_, epoch)| epoch > store.adoption.confirmed)
    }

    /// A snapshot takes its records now: their places stay readable until
    /// [`PayloadStore::end_build`].
    pub fn begin_build(&self) {
        let mut store = self.lock();
        store.building = Some(store.epoch);
    }

    pub fn end_build(&self) {
        let mut store = self.lock();
        store.building = None;
        store.release();
    }

    /// Collects space when a file filled since the last time (or when `now` is set): deletes
    /// the full files that hold no payload of `state`'s, and moves the payloads out of those
    /// that hold at most half their size in live bytes first. `state` is the one every place
    /// of this store belongs to.
    pub fn collect(&self, state: &mut State, now: bool) -> io::Result<()> {
        let mut store = self.lock();
        if !(now || store.collect_due) {
            return Ok(());
        }
        store.collect_due = false;
        store.flush()?;
        let mut live: HashMap<u32, u64> = HashMap::new();
        for (_, stored) in state.stored_payloads() {
            *live.entry(stored.file).or_default() += u64::from(stored.len);
        }
        let retiring: Vec<u32> = store
            .full
            .iter()
            .filter(|(file, len)| live.get(file).is_none_or(|&bytes| bytes * 2 <= **len))
            .map(|(file, _)| *file)
            .collect();
        if retiring.is_empty() {
            return Ok(());
        }
        let moving: Vec<(JobId, StoredPayload)> = state
            .stored_payloads()
            .filter(|(_, stored)| retiring.contains(&stored.file))
            .map(|(job, stored)| (job.id, stored))
            .collect();
        for (job_id, old) in moving {
            let bytes = store.read_written(&old)?;
            let new = store.append(&bytes)?;
            state.place_payload(job_id, new);
            if store.adoption.generation != 0
                && let Some(job) = state.held_job(&job_id)
            {
                store.adoption.offered.push(job.clone());
            }
        }
        store.flush()?;
        store.epoch += 1;
        let epoch = store.epoch;
        for file in retiring {
            store.full.remove(&file);
            store.retired.push((file, epoch));
        }
        store.release();
        Ok(())
    }

    /// Bytes in the files (written or waiting to be), counting retired files not yet deleted.
    pub fn disk_bytes(&self) -> u64 {
        let store = self.lock();
        let retired: u64 =
            store.retired.iter().filter_map(|(file, _)| store.files.get(file)?.metadata().ok()).map(|m| m.len()).sum();
        store.full.values().sum::<u64>() + store.current_len + retired
    }

    /// How many files there are (including retired ones not yet deleted).
    pub fn files(&self) -> usize {
        self.lock().files.len()
    }
}

/// Reads payloads through a window of [`READ_WINDOW`] bytes of a file.
pub struct PayloadReader {
    store: PayloadStore,
    window: Vec<u8>,
    file: u32,
    /// The file offset of the window's first byte.
    start: u64,
}

/// Bytes a [`PayloadReader`] reads at once.
pub const READ_WINDOW: usize = 1 << 20;

impl PayloadReader {
    /// The bytes at `stored`.
    pub fn read(&mut self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
        let len = stored.len as usize;
        let inside = |reader: &PayloadReader| {
            reader.file == stored.file
                && stored.offset >= reader.start
                && stored.offset + stored.len as u64 <= reader.start + reader.window.len() as u64
        };
        if !inside(self) && len <= READ_WINDOW {
            let file = {
                let store = self.store.lock();
                let written = store.current_len - store.pending.len() as u64;
                let found = store.files.get(&stored.file).cloned();
                match found {
                    // Not yet written out, or in the part being written: read it directly.
                    Some(file) if !(stored.file == store.current && stored.offset + len as u64 > written) => {
                        let end = if stored.file == store.current { written } else { u64::MAX };
                        Some((file, end))
                    }
                    _ => None,
                }
            };
            if let Some((file, end)) = file {
                let want = (READ_WINDOW as u64).min(end.saturating_sub(stored.offset)) as usize;
                self.window.resize(want, 0);
                let mut filled = 0;
                while filled < want {
                    match file.read_at(&mut self.window[filled..], stored.offset + filled as u64)? {
                        0 => break,
                        read => filled += read,
                    }
                }
                self.window.truncate(filled);
                self.file = stored.file;
                self.start = stored.offset;
            }
        }
        if inside(self) {
            let at = (stored.offset - self.start) as usize;
            return Ok(self.window[at..at + len].to_vec());
        }
        self.store.read(stored)
    }
}

impl Store {
    fn path(&self, file: u32) -> PathBuf {
        self.dir.join(format!("{file:010}{SUFFIX}"))
    }

    fn start_file(&mut self, file: u32) -> io::Result<()> {
        let opened = fs::OpenOptions::new().read(true).write(true).create_new(true).open(self.path(file))?;
        self.files.insert(file, Arc::new(opened));
        self.current = file;
        self.current_len = 0;
        Ok(())
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<StoredPayload> {
        if self.current_len > 0 && self.current_len + bytes.len() as u64 > self.file_bytes {
            self.flush()?;
            self.full.insert(self.current, self.current_len);
            self.start_file(self.current.wrapping_add(1))?;
            self.collect_due = true;
        }
        let stored = StoredPayload { offset: self.current_len, file: self.current, len: bytes.len() as u32 };
        self.pending.extend_from_slice(bytes);
        self.current_len += bytes.len() as u64;
        if self.pending.len() >= WRITE_BUFFER {
            self.flush()?;
        }
        Ok(stored)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = self.files.get(&self.current).expect("the current file is open");
        (&**file).write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }

    /// The bytes at `stored`, in a file written out.
    fn read_written(&self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
        let file = self
            .files
            .get(&stored.file)
            .ok_or_else(|| io::Error::other(format!("payload file {} is gone", stored.file)))?;
        let mut bytes = vec![0; stored.len as usize];
        file.read_exact_at(&mut bytes, stored.offset)?;
        Ok(bytes)
    }

    /// Deletes the retired files no reader may still hold a place in.
    fn release(&mut self) {
        let adoption = &self.adoption;
        let building = self.building;
        let (free, kept): (Vec<_>, Vec<_>) = self.retired.iter().partition(|&&(_, epoch)| {
            (adoption.generation == 0 || epoch <= adoption.confirmed) && building.is_none_or(|since| epoch <= since)
        });
        self.retired = kept;
        for (file, _) in free {
            self.files.remove(&file);
            if let Err(error) = fs::remove_file(self.path(file)) {
                tracing::warn!(%error, file, "could not delete a payload file no job uses");
            }
        }
    }
}
