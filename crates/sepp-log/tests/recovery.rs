//! The durable log on disk: what survives a reopen, which damage recovery truncates (and
//! reports), and which it refuses with the file and offset. Checkpoints are in `checkpoints.rs`.

mod common;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use sepp_core::Record;
use sepp_log::frame;
use sepp_log::{Log, LogOptions, OpenError, PersistMode};

use common::Rng;
use common::disk::*;

const MODES: [PersistMode; 3] = [PersistMode::SyncAll, PersistMode::SyncData, PersistMode::Buffer];

#[test]
fn persisted_records_come_back_in_order_after_a_reopen_in_every_persist_mode() {
    for mode in MODES {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = LogOptions { persist_mode: mode, ..small_segments() };
        let mut rng = Rng::new(1);
        let cycles: Vec<Vec<Record>> = (0..60).map(|_| rng.records(0, 8)).collect();
        {
            let mut opened = open(dir.path(), options).expect("open a fresh directory");
            assert!(opened.records.is_empty());
            write_cycles(&mut opened.log, &cycles);
        }
        let reopened = open(dir.path(), options).expect("reopen");
        assert_eq!(reopened.records, flatten(&cycles), "{mode:?}");
        assert_eq!(reopened.recovery.records, flatten(&cycles).len() as u64);
        assert!(reopened.recovery.segments > 3, "{mode:?}: expected many 4 KiB segments");
        assert_eq!(reopened.recovery.segments, segments(dir.path()).len());
        assert!(reopened.recovery.truncated.is_none());
        assert!(reopened.recovery.checkpoint.is_none());
    }
}

/// The committer's pipeline: each frame's sync runs in the background while the next cycle is
/// appended, and the next write waits for it. Across segment rotations (4 KiB segments), every
/// frame comes back in order, in every persist mode.
#[test]
fn frames_synced_in_the_background_come_back_in_order_after_a_reopen() {
    for mode in MODES {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = LogOptions { persist_mode: mode, ..small_segments() };
        let mut rng = Rng::new(11);
        let cycles: Vec<Vec<Record>> = (0..60).map(|_| rng.records(0, 8)).collect();
        {
            let mut opened = open(dir.path(), options).expect("open a fresh directory");
            for records in &cycles {
                opened.log.append(records).expect("append");
                opened.log.write().expect("write, after the sync in flight finished");
                opened.log.start_sync();
            }
            opened.log.finish_sync().expect("the last sync");
            opened.log.finish_sync().expect("finishing again, with nothing in flight");
        }
        let reopened = open(dir.path(), options).expect("reopen");
        assert_eq!(reopened.records, flatten(&cycles), "{mode:?}");
        assert!(reopened.recovery.segments > 3, "{mode:?}: expected many 4 KiB segments");
        assert!(reopened.recovery.truncated.is_none());
    }
}

#[test]
fn records_appended_but_never_persisted_are_not_recovered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(2);
    let persisted = rng.records(1, 5);
    {
        let mut opened = open_ok(dir.path());
        write_cycles(&mut opened.log, std::slice::from_ref(&persisted));
        opened.log.append(&rng.records(1, 5)).expect("append");
    }
    let reopened = open_ok(dir.path());
    assert_eq!(reopened.records, persisted);
    assert!(reopened.recovery.truncated.is_none());
}

#[test]
fn a_log_keeps_growing_across_many_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(3);
    let mut expected = Vec::new();
    for round in 0..8 {
        let mut opened = open_ok(dir.path());
        assert_eq!(opened.records, expected, "round {round}");
        let cycles: Vec<Vec<Record>> = (0..10).map(|_| rng.records(1, 6)).collect();
        write_cycles(&mut opened.log, &cycles);
        expected.extend(flatten(&cycles));
    }
}

#[test]
fn a_fresh_directory_gets_a_format_file_and_one_segment() {
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = parent.path().join("not").join("yet").join("there");
    let opened = open_ok(&dir);
    assert_eq!(fs::read_to_string(dir.join("FORMAT")).expect("FORMAT"), "sepp-log 2\n");
    assert_eq!(segments(&dir).len(), 1);
    assert_eq!(opened.recovery.records, 0);
}

/// What a damage to the last segment did: where the dropped tail starts, the file's length
/// after the damage, the records that must survive, and the reason recovery should give.
struct Damage {
    offset: u64,
    damaged_len: u64,
    expected: Vec<Record>,
    reason: Option<&'static str>,
}

/// Writes a log of several segments, damages its last segment, and checks that the reopen drops
/// exactly the damaged tail, reports it, and keeps working afterwards.
fn check_tail_damage(seed: u64, damage: impl FnOnce(&Path, &mut Rng, &[Vec<Record>]) -> Damage) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(seed);
    let cycles = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3)
    };
    let last = segments(dir.path()).pop().expect("a segment");
    let Damage { offset, damaged_len, expected, reason } = damage(&last, &mut rng, &cycles);
    let mut opened = open_ok(dir.path());
    assert_eq!(opened.records, expected, "records before the damaged tail must survive");
    let tail = opened.recovery.truncated.as_ref().expect("the damaged tail is reported");
    assert_eq!(tail.file, last);
    assert_eq!(tail.offset, offset);
    assert_eq!(tail.bytes_dropped, damaged_len - offset);
    assert!(reason.is_none_or(|reason| tail.reason == reason), "{tail:?}");
    assert_eq!(file_len(&last), offset, "the tail is cut off the file");

    let after = rng.records(1, 4);
    write_cycles(&mut opened.log, std::slice::from_ref(&after));
    drop(opened);
    let reopened = open_ok(dir.path());
    assert_eq!(reopened.records, [expected, after].concat(), "writes after the truncation must survive");
    assert!(reopened.recovery.truncated.is_none(), "a truncated log reopens cleanly");
}

#[test]
fn a_last_segment_cut_mid_frame_is_truncated_reported_and_then_appended_to() {
    for (seed, cut) in [(10, "header"), (11, "first body byte"), (12, "middle"), (13, "last byte")] {
        check_tail_damage(seed, |last, _, cycles| {
            let start = *frame_starts(last).last().expect("frames");
            let len = frames_end(last);
            let cut_at = match cut {
                "header" => start + 3,
                "first body byte" => start + frame::HEADER_BYTES as u64 + 1,
                "middle" => start + (len - start) / 2,
                _ => len - 1,
            };
            OpenOptions::new().write(true).open(last).expect("open").set_len(cut_at).expect("cut");
            // The cut frame is the last cycle written: everything before it survives.
            Damage {
                offset: start,
                damaged_len: cut_at,
                expected: flatten(&cycles[..cycles.len() - 1]),
                reason: Some("the last write was cut short"),
            }
        });
    }
}

#[test]
fn garbage_after_the_last_frame_is_truncated_reported_and_then_appended_to() {
    for (seed, kind) in [(20, "random"), (22, "short"), (23, "huge length")] {
        check_tail_damage(seed, |last, rng, cycles| {
            cut_preallocation(last);
            let (garbage, reason) = match kind {
                "random" => (rng.bytes(300), None),
                "short" => (vec![0xab; 3], Some("the last write was cut short")),
                _ => ([u32::MAX.to_le_bytes(), [1, 2, 3, 4]].concat(), Some("frame length out of range")),
            };
            let offset = file_len(last);
            let mut file = OpenOptions::new().append(true).open(last).expect("open");
            file.write_all(&garbage).expect("append garbage");
            Damage { offset, damaged_len: offset + garbage.len() as u64, expected: flatten(cycles), reason }
        });
    }
}

#[test]
fn a_last_segment_torn_inside_its_header_is_started_again() {
    for kept in [0, 3] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut rng = Rng::new(30);
        {
            let mut opened = open_ok(dir.path());
            fill(&mut opened.log, dir.path(), &mut rng, 2);
        }
        let expected = {
            let last = segments(dir.path()).pop().expect("segment");
            fs::remove_file(&last).expect("remove");
            let expected = records_on_disk(dir.path());
            // A crash while a new segment was being created leaves 0..8 bytes of its header.
            fs::write(&last, &b"SEPPLOG1"[..kept]).expect("write");
            expected
        };
        let mut opened = open_ok(dir.path());
        assert_eq!(opened.records, expected);
        let after = rng.records(1, 3);
        write_cycles(&mut opened.log, std::slice::from_ref(&after));
        drop(opened);
        assert_eq!(open_ok(dir.path()).records, [expected, after].concat());
    }
}

#[test]
fn a_flipped_bit_in_an_older_segment_refuses_to_open_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(40);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 4);
    }
    let old = segments(dir.path())[1].clone();
    let starts = frame_starts(&old);
    let frame_at = starts[starts.len() / 2];
    flip_bit(&old, frame_at + frame::HEADER_BYTES as u64 + 5);
    let damaged = fs::read(&old).expect("read");
    for attempt in 0..2 {
        match open_err(dir.path()) {
            OpenError::Corrupt { file, offset, reason } => {
                assert_eq!(file, old);
                assert_eq!(offset, frame_at);
                assert_eq!(reason, "checksum mismatch");
                let message = OpenError::Corrupt { file, offset, reason }.to_string();
                assert!(message.contains(&old.display().to_string()), "{message}");
                assert!(message.contains(&format!("byte offset {frame_at}")), "{message}");
            }
            other => panic!("attempt {attempt}: expected Corrupt, got {other:?}"),
        }
    }
    assert_eq!(fs::read(&old).expect("read"), damaged, "a refused open must not change the segment");
}

#[test]
fn a_damaged_header_of_an_older_segment_refuses_to_open_at_offset_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(41);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
    }
    let first = segments(dir.path())[0].clone();
    flip_bit(&first, 2);
    match open_err(dir.path()) {
        OpenError::Corrupt { file, offset, .. } => assert_eq!((file, offset), (first, 0)),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn an_older_segment_cut_short_refuses_to_open_instead_of_truncating() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(42);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
    }
    let old = segments(dir.path())[0].clone();
    let last_frame = *frame_starts(&old).last().expect("frames");
    let len = file_len(&old);
    OpenOptions::new().write(true).open(&old).expect("open").set_len(len - 1).expect("cut");
    match open_err(dir.path()) {
        OpenError::Corrupt { file, offset, .. } => {
            assert_eq!((file, offset), (old.clone(), last_frame))
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(file_len(&old), len - 1);
}

#[test]
fn a_missing_middle_segment_refuses_to_open_with_a_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(60);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 5);
    }
    let middle = segments(dir.path())[2].clone();
    fs::remove_file(&middle).expect("remove");
    match open_err(dir.path()) {
        OpenError::Gap { path, missing } => {
            assert_eq!(path, dir.path());
            assert_eq!(missing, index_of(&middle));
        }
        other => panic!("expected Gap, got {other:?}"),
    }
}

#[test]
fn a_missing_first_segment_refuses_to_open_with_a_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(61);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
    }
    let first = segments(dir.path())[0].clone();
    fs::remove_file(&first).expect("remove");
    match open_err(dir.path()) {
        OpenError::Gap { missing, .. } => assert_eq!(missing, index_of(&first)),
        other => panic!("expected Gap, got {other:?}"),
    }
}

#[test]
fn a_missing_checkpoint_base_segment_refuses_to_open_with_a_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(62);
    let checkpoint = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 3);
        let after: Vec<Vec<Record>> = (0..40).map(|_| rng.records(3, 6)).collect();
        checkpoint_then_write(&mut opened.log, dir.path(), rng.records(3, 3), &after)
    };
    assert!(segments(dir.path()).len() >= 2);
    let base = segments(dir.path())[0].clone();
    assert_eq!(index_of(&base), index_of(&checkpoint));
    fs::remove_file(&base).expect("remove");
    match open_err(dir.path()) {
        OpenError::Gap { missing, .. } => assert_eq!(missing, index_of(&checkpoint)),
        other => panic!("expected Gap, got {other:?}"),
    }
}

#[test]
fn an_unknown_format_refuses_to_open_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(open_ok(dir.path()));
    fs::write(dir.path().join("FORMAT"), "nonsense 7\n").expect("write FORMAT");
    let error = open_err(dir.path());
    let message = error.to_string();
    match error {
        OpenError::UnknownFormat { path, found } => {
            assert_eq!(path, dir.path());
            assert_eq!(found, "nonsense 7");
        }
        other => panic!("expected UnknownFormat, got {other:?}"),
    }
    assert!(message.contains(&dir.path().display().to_string()), "{message}");
    assert!(message.contains("\"nonsense 7\""), "names the format found: {message}");
    assert!(message.contains("\"sepp-log 2\""), "names the format it writes: {message}");
    assert!(message.contains("refusing to open"), "{message}");
}

#[test]
fn a_directory_of_a_newer_format_is_refused_naming_both_versions_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(43);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 1);
    }
    fs::write(dir.path().join("FORMAT"), "sepp-log 3\n").expect("write FORMAT");
    let last = segments(dir.path()).pop().expect("a segment");
    let before = fs::read(&last).expect("read");
    let error = open_err(dir.path());
    let message = error.to_string();
    assert!(matches!(&error, OpenError::NewerFormat { path, found: 3 } if path == dir.path()), "{error:?}");
    assert!(message.contains(&dir.path().display().to_string()), "{message}");
    assert!(message.contains("\"sepp-log 3\""), "names the format found: {message}");
    assert!(message.contains("\"sepp-log 2\""), "names the newest format it reads: {message}");
    assert!(message.contains("refusing to open"), "{message}");
    assert_eq!(fs::read_to_string(dir.path().join("FORMAT")).expect("read"), "sepp-log 3\n");
    assert_eq!(fs::read(&last).expect("read"), before, "a refused directory is left as it was");
}

#[test]
fn a_checksummed_tail_frame_that_does_not_decode_is_refused_and_never_truncated() {
    // A write cut short never leaves a matching checksum: a whole frame that does not decode is
    // acknowledged data this sepp cannot read (damage the checksum missed, or a newer format),
    // so it is refused like damage anywhere else, even as the very last frame.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(44);
    let cycles = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 1)
    };
    let last = segments(dir.path()).pop().expect("a segment");
    let end = frames_end(&last);
    // One record with a tag no version writes, in a frame whose checksum matches.
    let body = [1u32.to_le_bytes().as_slice(), &[200]].concat();
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    frame.extend_from_slice(&body);
    {
        use std::os::unix::fs::FileExt;
        let file = OpenOptions::new().write(true).open(&last).expect("open");
        file.write_all_at(&frame, end).expect("write the frame");
    }
    let written = fs::read(&last).expect("read");
    for attempt in 0..2 {
        let error = open_err(dir.path());
        let message = error.to_string();
        match error {
            OpenError::Undecodable { file, offset, reason } => {
                assert_eq!((file, offset, reason), (last.clone(), end, "unknown record tag"));
            }
            other => panic!("attempt {attempt}: expected Undecodable, got {other:?}"),
        }
        assert!(message.contains(&last.display().to_string()), "names the file: {message}");
        assert!(message.contains(&format!("byte offset {end}")), "names the offset: {message}");
        assert!(message.contains("refusing to open"), "{message}");
        assert_eq!(fs::read(&last).expect("read"), written, "attempt {attempt}: the segment is left as it was");
    }
    // Taking the unreadable frame away (what an operator could do) gives back every earlier one.
    OpenOptions::new().write(true).open(&last).expect("open").set_len(end).expect("cut");
    assert_eq!(open_ok(dir.path()).records, flatten(&cycles));
}

#[test]
fn a_non_empty_directory_without_a_format_file_is_not_a_data_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    // What a sepp 0.1 (LSM) data directory looks like from here: files, but no FORMAT.
    fs::create_dir(dir.path().join("journals")).expect("mkdir");
    fs::write(dir.path().join("version"), "1").expect("write");
    let error = open_err(dir.path());
    let message = error.to_string();
    assert!(matches!(&error, OpenError::NotADataDirectory { path } if path == dir.path()), "{error:?}");
    assert!(message.contains(&dir.path().display().to_string()) && message.contains("FORMAT"), "{message}");
    assert!(!dir.path().join("FORMAT").exists(), "a refused directory is left as it was");
    assert!(!dir.path().join("LOCK").exists(), "a refused directory is left as it was");
}

#[test]
fn a_second_open_of_an_open_directory_is_locked_until_the_first_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = open_ok(dir.path());
    let error = open_err(dir.path());
    assert!(matches!(&error, OpenError::Locked { path } if path == dir.path()), "{error:?}");
    assert!(error.to_string().contains("in use by another sepp process"), "{error}");
    drop(first);
    open_ok(dir.path());
}

#[test]
fn a_flipped_bit_in_the_last_segment_before_intact_frames_refuses_rather_than_truncating() {
    // A torn write can only damage the end of the log; damage with whole frames after it is
    // corruption of acknowledged data, which must not be cut away as if it were a torn tail.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(41);
    {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 2);
    }
    let last = segments(dir.path()).pop().expect("a segment");
    let starts = frame_starts(&last);
    assert!(starts.len() >= 2, "the last segment has a frame after the damaged one");
    let frame_at = starts[0];
    flip_bit(&last, frame_at + frame::HEADER_BYTES as u64 + 5);
    let damaged = fs::read(&last).expect("read");
    match open_err(dir.path()) {
        OpenError::Corrupt { file, offset, .. } => {
            assert_eq!((file, offset), (last.clone(), frame_at));
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    assert_eq!(fs::read(&last).expect("read"), damaged, "a refused directory is left untouched");
}

#[test]
fn preallocated_zeros_after_the_last_frame_are_a_clean_end_not_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng::new(24);
    let cycles = {
        let mut opened = open_ok(dir.path());
        fill(&mut opened.log, dir.path(), &mut rng, 2)
    };
    let last = segments(dir.path()).pop().expect("a segment");
    assert!(file_len(&last) > frames_end(&last), "the segment being written is preallocated");
    let mut opened = open_ok(dir.path());
    assert_eq!(opened.records, flatten(&cycles));
    assert!(opened.recovery.truncated.is_none(), "{:?}", opened.recovery.truncated);
    let after = rng.records(1, 4);
    write_cycles(&mut opened.log, std::slice::from_ref(&after));
    drop(opened);
    assert_eq!(open_ok(dir.path()).records, [flatten(&cycles), after].concat());
}

#[test]
fn a_new_directory_starts_in_a_preallocated_segment_and_an_idle_log_prepares_no_second() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = LogOptions { persist_mode: PersistMode::SyncAll, segment_bytes: 1 << 20, ..small_segments() };
    let mut rng = Rng::new(25);
    let cycle = rng.records(1, 3);
    {
        let mut opened = open(dir.path(), options).expect("open a fresh directory");
        let [first] = <[_; 1]>::try_from(segments(dir.path())).expect("one segment");
        assert_eq!(file_len(&first), options.segment_capacity(1), "the first segment is preallocated");
        assert_eq!(options.segment_capacity(1), options.segment_bytes / 8, "and small");
        write_cycles(&mut opened.log, std::slice::from_ref(&cycle));
    }
    assert!(files_with(dir.path(), "segment-", ".prep").is_empty(), "nothing prepared for a log this small");
    assert_eq!(open(dir.path(), options).expect("reopen").records, cycle);
}

#[test]
fn a_prepared_segment_is_the_header_then_zeros_to_its_exact_size() {
    // The zeros are written a chunk at a time; a size that is no multiple of the chunk checks
    // the last, short one, and that the header is written once, at the start. The first segment
    // is prepared at open, the second in the background (written back as it goes).
    let dir = tempfile::tempdir().expect("tempdir");
    let segment_bytes = (1 << 20) + 12_345;
    let options = LogOptions { persist_mode: PersistMode::SyncAll, segment_bytes, ..small_segments() };
    let check = |path: &Path, index: u64, frames_end: u64| {
        let bytes = fs::read(path).expect("read the segment");
        assert_eq!(bytes.len() as u64, options.segment_capacity(index), "{}", path.display());
        assert_eq!(&bytes[..8], b"SEPPLOG1", "the segment header");
        assert!(bytes[frames_end as usize..].iter().all(|byte| *byte == 0), "zeros after the frames");
    };
    let mut opened = open(dir.path(), options).expect("open a fresh directory");
    check(&segments(dir.path())[0], 1, 8);
    let mut rng = Rng::new(27);
    wait_until("the log moved to a second segment", || {
        write_cycles(&mut opened.log, &[rng.records(20, 40)]);
        segments(dir.path()).len() == 2
    });
    let second = &segments(dir.path())[1];
    check(second, 2, frames_end(second));
}

#[test]
fn a_segment_without_preallocated_space_is_left_as_soon_as_a_prepared_one_is_ready() {
    // A last segment cut at its last frame (as recovery leaves a torn tail) would grow, and need
    // a full fsync, with every write: the log moves on to a prepared segment at the first write
    // after one is ready, long before the cut segment is full.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = LogOptions { persist_mode: PersistMode::SyncAll, segment_bytes: 1 << 20, ..small_segments() };
    let mut rng = Rng::new(26);
    let mut cycles = vec![rng.records(1, 3)];
    {
        let mut opened = open(dir.path(), options).expect("open a fresh directory");
        write_cycles(&mut opened.log, &cycles);
    }
    cut_preallocation(&segments(dir.path())[0]);
    {
        let mut opened = open(dir.path(), options).expect("reopen");
        wait_until("the log moved to a second segment", || {
            let cycle = rng.records(1, 3);
            write_cycles(&mut opened.log, std::slice::from_ref(&cycle));
            cycles.push(cycle);
            segments(dir.path()).len() == 2
        });
        let [first, second] = <[_; 2]>::try_from(segments(dir.path())).expect("two segments");
        assert!(file_len(&first) < options.segment_capacity(1) / 2, "the cut segment was left long before it was full");
        assert_eq!(file_len(&first), frames_end(&first), "the left segment keeps no tail");
        assert_eq!(file_len(&second), options.segment_capacity(2), "the second segment is preallocated");
        let more = rng.records(1, 3);
        write_cycles(&mut opened.log, std::slice::from_ref(&more));
        cycles.push(more);
        assert_eq!(segments(dir.path()).len(), 2, "a preallocated segment is written until it is full");
    }
    assert_eq!(open(dir.path(), options).expect("reopen").records, flatten(&cycles));
}

#[test]
fn segments_start_at_an_eighth_of_the_size_and_double_up_to_it() {
    let options = LogOptions { segment_bytes: 32 << 20, ..small_segments() };
    let sizes: Vec<u64> = (0..=6).map(|index| options.segment_capacity(index) >> 20).collect();
    assert_eq!(sizes, [4, 4, 8, 16, 32, 32, 32]);
}

#[test]
fn each_segment_is_closed_at_its_own_size() {
    // Segments 1 to 3 are smaller than the rest. The log moves on when the current one is full
    // (or when the next frame would not fit and the next segment is ready), so a closed
    // segment is its size give or take one cycle's frame.
    let dir = tempfile::tempdir().expect("tempdir");
    let options = LogOptions { persist_mode: PersistMode::Buffer, segment_bytes: 256 << 10, ..small_segments() };
    let mut rng = Rng::new(28);
    let mut cycles = Vec::new();
    {
        let mut opened = open(dir.path(), options).expect("open a fresh directory");
        while segments(dir.path()).len() < 6 {
            let cycle = rng.records(1, 4);
            write_cycles(&mut opened.log, std::slice::from_ref(&cycle));
            cycles.push(cycle);
        }
    }
    let all = segments(dir.path());
    for (position, path) in all[..all.len() - 1].iter().enumerate() {
        let capacity = options.segment_capacity(position as u64 + 1);
        let len = file_len(path);
        let margin = 16 << 10;
        assert!(
            len + margin > capacity && len < capacity + margin,
            "segment {} is {len} bytes, its size {capacity}",
            position + 1
        );
    }
    assert_eq!(open(dir.path(), options).expect("reopen").records, flatten(&cycles));
}
