//! Checkpoints: written off the committer's path, they replace the segments before them, are
//! refused when damaged, leave no leftovers after a crash, and keep disk use close to the live
//! data when driven the way the committer drives them.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sepp_core::validate::ReservePlan;
use sepp_core::{JobId, NewJob, Payload, Policy, Record, Snapshot, State, StorageRules, TimeMs};
use sepp_log::frame;
use sepp_log::{DurableLog, Log, LogOptions, OpenError, PersistMode, Recovery};

use common::Rng;
use common::disk::*;

#[test]
fn a_checkpoint_is_written_in_the_background_and_replaces_the_segments_before_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(50);
    let snapshot = rng.records(5000, 5000);
    let after: Vec<Vec<Record>> = (0..30).map(|_| rng.records(1, 6)).collect();
    let checkpoint = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 4);
        checkpoint_then_write(&mut opened.log, dir.path(), snapshot.clone(), &after)
    };
    let base = index_of(&checkpoint);
    assert_eq!(index_of(&segments(dir.path())[0]), base, "the first segment kept is the checkpoint's base");
    let reopened = open_ok(dir.path());
    assert_eq!(reopened.records, [snapshot, flatten(&after)].concat());
    assert_eq!(reopened.recovery.checkpoint, Some(checkpoint));
    assert_eq!(reopened.recovery.segments, segments(dir.path()).len());
}

#[test]
fn wants_checkpoint_needs_disk_use_beyond_the_slack_and_twice_the_live_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = LogOptions { checkpoint_slack_bytes: 20_000, ..small_segments() };
    let mut opened = open(dir.path(), options).expect("open");
    let log = &mut opened.log;
    let mut rng = Rng::new(51);
    assert!(!log.wants_checkpoint(0), "a fresh log is within the slack");
    while log.disk_bytes() <= 20_000 {
        assert!(!log.wants_checkpoint(0));
        write_cycles(log, &[rng.records(5, 10)]);
    }
    assert!(log.wants_checkpoint(0));
    let disk_bytes = log.disk_bytes();
    assert!(!log.wants_checkpoint(disk_bytes / 2), "disk use is not above twice the live data plus the slack");
    assert!(log.wants_checkpoint((disk_bytes - 20_000).saturating_sub(2) / 2));
    assert!(!log.wants_checkpoint(u64::MAX), "huge live data saturates instead of overflowing");

    log.checkpoint(Snapshot::default()).expect("checkpoint");
    assert!(!log.wants_checkpoint(0), "no second checkpoint while one is in flight");
    wait_for_checkpoint(dir.path(), || {
        log.poll_checkpoint();
        log.reclaim().expect("reclaim");
    });
    wait_until("the log counts the reclaimed segments", || {
        write_cycles(log, &[Vec::new()]);
        log.disk_bytes() < 20_000
    });
    assert!(!log.wants_checkpoint(0), "right after a checkpoint, disk use is back within the slack");
}

/// Until the committer has applied a finished checkpoint's relocations and called `reclaim`, the
/// snapshot of a new checkpoint could still name files the finished one replaced, and reclaiming
/// could take the new checkpoint for an old one: so no checkpoint starts in between.
#[test]
fn no_checkpoint_starts_until_the_finished_one_is_reclaimed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = LogOptions { checkpoint_slack_bytes: 20_000, ..small_segments() };
    let mut opened = open(dir.path(), options).expect("open");
    let log = &mut opened.log;
    let mut rng = Rng::new(53);
    fill(log, dir.path(), &mut rng, 4);
    log.checkpoint(rng.records(500, 500).into_iter().collect()).expect("checkpoint");
    let mut relocations = sepp_log::Relocations::default();
    wait_until("the checkpoint reports the payloads it moved", || {
        relocations = log.poll_checkpoint();
        !relocations.is_empty()
    });
    while log.disk_bytes() <= 20_000 {
        write_cycles(log, &[rng.records(5, 10)]);
    }
    assert!(!log.wants_checkpoint(0), "a checkpoint may start before the finished one is reclaimed");
    log.reclaim().expect("reclaim");
    assert!(log.wants_checkpoint(0), "once reclaimed, the next checkpoint may start");
}

#[test]
fn a_flipped_bit_in_a_checkpoint_refuses_to_open_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(52);
    // More than one checkpoint frame (4096 records each), so the flip lands in the second.
    let snapshot = rng.records(6000, 6000);
    let checkpoint = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
        checkpoint_then_write(&mut opened.log, dir.path(), snapshot, &[rng.records(1, 3)])
    };
    let starts = frame_starts(&checkpoint);
    assert_eq!(starts.len(), 3, "two frames of records and the end mark");
    flip_bit(&checkpoint, starts[1] + 100);
    match open_err(dir.path()) {
        OpenError::Corrupt { file, offset, reason } => {
            assert_eq!((&file, offset, reason), (&checkpoint, starts[1], "checksum mismatch"));
            let message = OpenError::Corrupt { file, offset, reason }.to_string();
            assert!(message.contains(&checkpoint.display().to_string()), "{message}");
            assert!(message.contains(&format!("byte offset {}", starts[1])), "{message}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_checkpoint_without_its_end_mark_or_with_bytes_after_it_refuses_to_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(53);
    let checkpoint = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
        checkpoint_then_write(&mut opened.log, dir.path(), rng.records(10, 10), &[])
    };
    let original = fs::read(&checkpoint).expect("read");
    let end_mark = *frame_starts(&checkpoint).last().expect("frames");
    for (damaged, offset) in [
        (original[..end_mark as usize].to_vec(), end_mark),
        (original[..original.len() - 1].to_vec(), end_mark),
        ([&original[..], b"x"].concat(), original.len() as u64),
    ] {
        fs::write(&checkpoint, damaged).expect("write");
        match open_err(dir.path()) {
            OpenError::Corrupt { file, offset: found, .. } => assert_eq!((file, found), (checkpoint.clone(), offset)),
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }
    fs::write(&checkpoint, original).expect("restore");
    assert_eq!(open_ok(dir.path()).records.len(), 10);
}

#[test]
fn a_leftover_temp_file_of_an_interrupted_checkpoint_is_ignored_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(70);
    let cycles = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3)
    };
    let base = index_of(segments(dir.path()).last().expect("segment"));
    let temp = dir.path().join(format!("checkpoint-{base:020}.tmp"));
    let mut partial = b"SEPPCKP1".to_vec();
    frame::encode(&rng.records(3, 3), &mut partial, &mut Vec::new());
    partial.truncate(partial.len() - 7);
    fs::write(&temp, partial).expect("write temp");
    let reopened = open_ok(dir.path());
    assert_eq!(reopened.records, flatten(&cycles));
    assert!(reopened.recovery.checkpoint.is_none());
    assert!(!temp.exists(), "the temp file is removed");
}

#[test]
fn leftovers_of_an_interrupted_reclaim_are_removed_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(71);
    let snapshot = rng.records(20, 20);
    let after = vec![rng.records(2, 4)];
    let (checkpoint, old_segment, old_checkpoint) = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
        let old_segment = segments(dir.path())[0].clone();
        let saved = fs::read(&old_segment).expect("read");
        let checkpoint = checkpoint_then_write(&mut opened.log, dir.path(), snapshot.clone(), &after);
        // Put back what a crash between the checkpoint's rename and its reclaim would leave:
        // a segment older than the checkpoint, and an older checkpoint.
        fs::write(&old_segment, saved).expect("restore old segment");
        let old_checkpoint = dir.path().join(format!("checkpoint-{:020}.ckpt", index_of(&old_segment)));
        fs::copy(&checkpoint, &old_checkpoint).expect("copy");
        (checkpoint, old_segment, old_checkpoint)
    };
    let reopened = open_ok(dir.path());
    assert_eq!(reopened.recovery.checkpoint, Some(checkpoint.clone()), "the newest checkpoint is used");
    assert_eq!(reopened.records, [snapshot, flatten(&after)].concat());
    assert!(!old_segment.exists(), "a segment older than the checkpoint is removed");
    assert!(!old_checkpoint.exists(), "an older checkpoint is removed");
    assert!(checkpoint.exists());
}

#[test]
fn a_checkpoint_in_flight_is_finished_before_a_dropped_log_lets_go_of_the_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(72);
    // Large enough that writing it takes far longer than dropping the log.
    let snapshot: Vec<Record> = (0..200_000).map(|_| Record::Acked { job_id: rng.job_id() }).collect();
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
        opened.log.checkpoint(snapshot.iter().cloned().collect()).expect("checkpoint");
    }
    assert_eq!(checkpoints(dir.path()).len(), 1, "the checkpoint was finished, not abandoned mid-write");
    assert!(files_with(dir.path(), "", ".tmp").is_empty());
    let reopened = open_ok(dir.path());
    assert_eq!(reopened.records, snapshot);
}

// ---- State-driven checks: what the committer does, with a real sepp-core state. ----

const START_MS: TimeMs = 1_700_000_000_000;

fn new_state() -> State {
    State::new(Arc::new(Policy::default()), StorageRules::default())
}

fn new_job(queue: &str, payload_bytes: usize) -> NewJob {
    NewJob {
        queue: queue.into(),
        job_type: "work".into(),
        payload: (payload_bytes > 0)
            .then(|| Payload { data: vec![7; payload_bytes], encoding: "application/octet-stream".into() }),
        ..NewJob::default()
    }
}

fn plan(queue: &str, max_jobs: u32) -> ReservePlan {
    ReservePlan { queues: vec![queue.into()], wait_ms: 0, lease_ms: 60_000, max_jobs }
}

/// A state and its log driven the way the committer drives them: each cycle's records are
/// appended and persisted, then a checkpoint is started if the log wants one.
struct Node {
    state: State,
    log: DurableLog,
    next_id: u128,
    checkpoints_started: usize,
    /// Bytes of every frame appended: the history disk use would follow without checkpoints.
    bytes_written: usize,
}

impl Node {
    fn open(dir: &Path, options: LogOptions) -> (Node, Recovery) {
        let mut state = new_state();
        let (log, recovery) = DurableLog::open(dir, options, |record| state.apply(record)).expect("open");
        state.check_invariants().expect("recovered state is consistent");
        (Node { state, log, next_id: 1, checkpoints_started: 0, bytes_written: 0 }, recovery)
    }

    fn cycle(&mut self, operation: impl FnOnce(&mut State, &mut Vec<Record>)) {
        let mut records = Vec::new();
        operation(&mut self.state, &mut records);
        if records.is_empty() {
            return;
        }
        let mut frame_bytes = Vec::new();
        frame::encode(&records, &mut frame_bytes, &mut Vec::new());
        self.bytes_written += frame_bytes.len();
        self.log.append(&records).expect("append");
        for (job_id, stored) in self.log.persist().expect("persist") {
            self.state.place_payload(job_id, stored);
        }
        self.maintain();
        if self.log.wants_checkpoint(self.state.live_bytes()) {
            self.log.checkpoint(self.state.snapshot()).expect("checkpoint");
            self.checkpoints_started += 1;
        }
    }

    /// The state with every stored payload read back, so where bytes live does not matter.
    fn fingerprint(&mut self) -> String {
        let log = &mut self.log;
        self.state.fingerprint_with(&mut |stored| log.read_payload(stored).expect("read a stored payload"))
    }

    /// What the committer does every cycle: move payloads a finished checkpoint relocated,
    /// then let the log delete what the checkpoint replaced.
    fn maintain(&mut self) {
        for (job_id, stored) in self.log.poll_checkpoint() {
            self.state.place_payload(job_id, stored);
        }
        self.log.reclaim().expect("reclaim");
    }

    fn enqueue(&mut self, now_ms: TimeMs, count: usize, payload_bytes: usize) {
        let jobs: Vec<(JobId, NewJob)> = (0..count)
            .map(|_| {
                self.next_id += 1;
                (JobId::from_u128(self.next_id << 64 | 0x4000_8000), new_job("work", payload_bytes))
            })
            .collect();
        self.cycle(|state, records| {
            let outcomes = state.enqueue(now_ms, jobs, records);
            assert!(outcomes.iter().all(Result::is_ok));
        });
    }

    /// Reserves up to `count` jobs in one cycle and acks them in the next.
    fn reserve_and_ack(&mut self, now_ms: TimeMs, count: u32) -> usize {
        let mut deliveries = Vec::new();
        self.cycle(|state, records| deliveries = state.reserve(now_ms, &plan("work", count), records));
        self.cycle(|state, records| {
            for delivery in &deliveries {
                state.ack(delivery.job.id, delivery.attempt, records).expect("ack");
            }
        });
        deliveries.len()
    }
}

#[test]
fn a_state_rebuilt_from_a_checkpoint_and_later_segments_matches_the_live_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = LogOptions { checkpoint_slack_bytes: 16 << 10, ..small_segments() };
    let (mut node, _) = Node::open(dir.path(), options);
    let mut now_ms = START_MS;
    while node.checkpoints_started == 0 {
        now_ms += 10;
        node.enqueue(now_ms, 20, 64);
        node.reserve_and_ack(now_ms, 15);
    }
    wait_for_checkpoint(dir.path(), || node.maintain());
    for _ in 0..10 {
        now_ms += 10;
        node.enqueue(now_ms, 5, 64);
        node.reserve_and_ack(now_ms, 2);
    }
    // A checkpoint holds the live jobs only, and a state rebuilt from one continues the
    // acceptance sequence after its highest live job; with the newest job still ready, that is
    // exactly where the live state is.
    assert!(node.state.total_depths().ready > 0);
    let expected = node.fingerprint();
    drop(node);
    let (mut reopened, recovery) = Node::open(dir.path(), options);
    assert!(recovery.checkpoint.is_some(), "recovery starts from the checkpoint");
    assert_eq!(reopened.fingerprint(), expected);
}

#[test]
fn disk_use_follows_the_live_data_not_the_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options =
        LogOptions { persist_mode: PersistMode::Buffer, segment_bytes: 64 << 10, checkpoint_slack_bytes: 256 << 10 };
    let (mut node, _) = Node::open(dir.path(), options);
    let mut now_ms = START_MS;
    for _ in 0..200 {
        now_ms += 1;
        node.enqueue(now_ms, 100, 32);
    }
    assert_eq!(node.state.total_depths().ready, 20_000);
    let mut acked = 0;
    let mut settled = 0;
    while acked < 20_000 {
        now_ms += 1;
        acked += node.reserve_and_ack(now_ms, 100);
        // The committer does not wait for checkpoints; waiting here stands for a checkpoint
        // thread that keeps up, which makes the number of checkpoints independent of timing.
        if node.checkpoints_started > settled {
            settled = node.checkpoints_started;
            wait_for_checkpoint(dir.path(), || node.maintain());
        }
    }
    assert!(node.checkpoints_started >= 2, "only {} checkpoints were started", node.checkpoints_started);
    // The last checkpoint may still be in flight: wait until the directory settles.
    wait_for_checkpoint(dir.path(), || node.maintain());
    let files: Vec<PathBuf> =
        fs::read_dir(dir.path()).expect("read dir").map(|entry| entry.expect("entry").path()).collect();
    let total: u64 = files.iter().map(|path| file_len(path)).sum();
    let written = node.bytes_written;
    assert!(written > 3 << 20, "the history is large: {written} bytes");
    // What is left: FORMAT, LOCK, a checkpoint of (almost) nothing, and the segments written
    // since, which stay within the slack plus the segment being filled.
    assert!(files.len() <= 8, "{} files left: {files:?}", files.len());
    assert!(total < (256 + 64 + 64) << 10, "{total} bytes on disk after writing {written} and deleting it all");
    drop(node);
    let (reopened, _) = Node::open(dir.path(), options);
    assert_eq!(reopened.state.total_depths(), sepp_core::Depths::default());
    // Nothing is live after every job was acked; only the acceptance counter carries over.
    let left: Vec<_> = reopened.state.snapshot().records().collect();
    assert!(
        matches!(left.as_slice(), [sepp_core::Record::SequenceRestored { next_seq }] if *next_seq > 20_000),
        "{left:?}"
    );
}
