//! Helpers for looking at and damaging a data directory: open with every record collected,
//! write cycles, list segments and checkpoints, find frame offsets, wait for checkpoints.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::sync::Arc;

use sepp_core::{JobPayload, PayloadData, Record};
use sepp_log::frame::{self, Read};
use sepp_log::{DurableLog, Log, LogOptions, OpenError, PersistMode, Recovery};

use super::Rng;

/// Small segments so a few cycles span many files; no checkpoints unless a test asks.
pub fn small_segments() -> LogOptions {
    LogOptions { persist_mode: PersistMode::SyncData, segment_bytes: 4096, checkpoint_slack_bytes: u64::MAX / 4 }
}

pub struct Opened {
    pub log: DurableLog,
    pub recovery: Recovery,
    pub records: Vec<Record>,
}

pub fn open(dir: &Path, options: LogOptions) -> Result<Opened, OpenError> {
    let mut records = Vec::new();
    let (mut log, recovery) = DurableLog::open(dir, options, |record| records.push(record.clone()))?;
    // Replay leaves large payloads in the files; read them back to compare with what was written.
    let records = records.iter().map(|record| with_payload_loaded(record, &mut log)).collect();
    Ok(Opened { log, recovery, records })
}

/// `record` with a stored payload read back into memory.
pub fn with_payload_loaded(record: &Record, log: &mut DurableLog) -> Record {
    let mut record = record.clone();
    let job = match &mut record {
        Record::JobAccepted { job, .. } | Record::JobRestored { job, .. } => job,
        Record::DeadLetterRestored { dead } => &mut dead.job,
        _ => return record,
    };
    if let Some(JobPayload { data: PayloadData::Stored(stored), .. }) = &job.payload {
        let bytes = log.read_payload(stored).expect("read a stored payload");
        Arc::make_mut(job).payload.as_mut().expect("a payload").data = PayloadData::Inline(bytes.into_boxed_slice());
    }
    record
}

pub fn open_ok(dir: &Path) -> Opened {
    open(dir, small_segments()).unwrap_or_else(|error| panic!("open {}: {error}", dir.display()))
}

pub fn open_err(dir: &Path) -> OpenError {
    match open(dir, small_segments()) {
        Ok(opened) => panic!("opened a directory that should be refused; recovered {:?}", opened.recovery),
        Err(error) => error,
    }
}

/// Appends and persists each cycle: one frame per cycle, as the committer does.
pub fn write_cycles(log: &mut DurableLog, cycles: &[Vec<Record>]) {
    for cycle in cycles {
        log.append(cycle).expect("append");
        log.persist().expect("persist");
    }
}

pub fn files_with(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            let name = path.file_name().expect("name").to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .collect();
    paths.sort();
    paths
}

pub fn segments(dir: &Path) -> Vec<PathBuf> {
    files_with(dir, "segment-", ".log")
}

pub fn checkpoints(dir: &Path) -> Vec<PathBuf> {
    files_with(dir, "checkpoint-", ".ckpt")
}

/// The index in a `segment-<index>.log` or `checkpoint-<index>.ckpt` name.
pub fn index_of(path: &Path) -> u64 {
    let name = path.file_stem().expect("stem").to_string_lossy();
    name.rsplit('-').next().expect("index").parse().expect("numeric index")
}

/// Byte offsets where the frames of a segment or checkpoint file start (after the 8-byte magic).
/// The segment being written may end in preallocated zeros.
pub fn frame_starts(path: &Path) -> Vec<u64> {
    let bytes = fs::read(path).expect("read file");
    let mut starts = Vec::new();
    let mut at = 8;
    while let Read::Frame(_, used) = frame::read(&bytes[at..], None) {
        starts.push(at as u64);
        at += used;
    }
    assert!(bytes[at..].iter().all(|byte| *byte == 0), "{} has bytes that are not frames", path.display());
    starts
}

/// Where the frames of a segment end: its length without the preallocated zeros after them.
pub fn frames_end(path: &Path) -> u64 {
    let bytes = fs::read(path).expect("read file");
    let mut at = 8;
    while let Read::Frame(_, used) = frame::read(&bytes[at..], None) {
        at += used;
    }
    at as u64
}

/// Cuts the preallocated zeros off a segment, so that it ends with its last frame.
pub fn cut_preallocation(path: &Path) {
    let end = frames_end(path);
    fs::OpenOptions::new().write(true).open(path).expect("open").set_len(end).expect("cut");
}

pub fn flip_bit(path: &Path, offset: u64) {
    let mut bytes = fs::read(path).expect("read");
    bytes[offset as usize] ^= 0x10;
    fs::write(path, bytes).expect("write");
}

pub fn file_len(path: &Path) -> u64 {
    fs::metadata(path).expect("metadata").len()
}

/// Polls `done` every millisecond until it holds, failing after ten seconds.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Writes random cycles until there are at least `min_segments` segments and the last one holds
/// at least two frames. Returns every cycle written.
pub fn fill(log: &mut DurableLog, dir: &Path, rng: &mut Rng, min_segments: usize) -> Vec<Vec<Record>> {
    let mut cycles = Vec::new();
    loop {
        let cycle = rng.records(1, 6);
        write_cycles(log, std::slice::from_ref(&cycle));
        cycles.push(cycle);
        let segments = segments(dir);
        if segments.len() >= min_segments && frame_starts(segments.last().expect("a segment")).len() >= 2 {
            return cycles;
        }
    }
}

pub fn flatten(cycles: &[Vec<Record>]) -> Vec<Record> {
    cycles.iter().flatten().cloned().collect()
}

/// Every record in the directory's segments, read directly.
pub fn records_on_disk(dir: &Path) -> Vec<Record> {
    let mut all = Vec::new();
    for segment in segments(dir) {
        let bytes = fs::read(&segment).expect("read");
        let mut at = 8;
        while let Read::Frame(records, used) = frame::read(&bytes[at..], None) {
            all.extend(records);
            at += used;
        }
    }
    all
}

/// Writes cycles, checkpoints `snapshot`, waits for the checkpoint to land, writes `after`.
/// Returns the checkpoint's path.
pub fn checkpoint_then_write(
    log: &mut DurableLog,
    dir: &Path,
    snapshot: Vec<Record>,
    after: &[Vec<Record>],
) -> PathBuf {
    let before = segments(dir).len();
    log.checkpoint(snapshot.into_iter().collect()).expect("checkpoint");
    let checkpoint = wait_for_checkpoint(dir, || {
        log.poll_checkpoint();
        log.reclaim().expect("reclaim");
    });
    assert!(segments(dir).len() < before, "segments older than the checkpoint are deleted");
    write_cycles(log, after);
    checkpoint
}

/// Waits until one checkpoint exists, no temp file is left and no segment is older than it.
/// `maintain` is what the committer does every cycle: take the finished checkpoint's
/// relocations (`Log::poll_checkpoint`) and then `Log::reclaim`.
pub fn wait_for_checkpoint(dir: &Path, mut maintain: impl FnMut()) -> PathBuf {
    wait_until("the checkpoint is written and older segments are reclaimed", || {
        maintain();
        let checkpoints = checkpoints(dir);
        let temps = files_with(dir, "", ".tmp");
        checkpoints.len() == 1
            && temps.is_empty()
            && segments(dir).iter().all(|segment| index_of(segment) >= index_of(&checkpoints[0]))
    });
    checkpoints(dir).pop().expect("checkpoint")
}
