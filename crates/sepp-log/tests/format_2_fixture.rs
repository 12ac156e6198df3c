//! The data directory format "sepp-log 2", checked in under `tests/fixtures/format-2`: one
//! segment holding a record of each tag format 2 added (pauses, cancelled leases, schedules,
//! the acceptance counter, rate limits). Every later version must read these records back as
//! they were written. The fixture is never rewritten; a new format gets a fixture of its own.
//!
//! (`write_the_format_2_fixture` made it, with `SEPP_WRITE_FIXTURE=1`; it is kept to show how,
//! not to be run again.)

mod common;

use std::path::{Path, PathBuf};

use sepp_core::{JobId, Record};
use sepp_log::{DurableLog, Log, LogOptions, PersistMode};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-2")
}

/// One record of each tag that format 2 added.
fn records() -> Vec<Record> {
    let job_id = JobId::from_u128(0x5e99_0000_0000_4000_8000_0000_0000_0002);
    vec![
        Record::QueuePaused { queue: "emails".into(), until_ms: Some(1_780_000_060_000) },
        Record::LeaseCancelled { job_id, at_ms: 1_780_000_000_000, reason: Some("operator".into()) },
        Record::ScheduleDeleted { id: "nightly".into() },
        Record::RateAdvanced { queue: "emails".into(), tat_us: 1_780_000_000_000_123 },
        Record::KeyRateAdvanced { queue: "emails".into(), key: "tenant-7".into(), tat_us: 1_780_000_000_000_456 },
        Record::KeyRateForgotten { queue: "emails".into(), key: "tenant-7".into() },
        Record::SequenceRestored { next_seq: 42 },
        Record::QueueResumed { queue: "emails".into() },
    ]
}

#[test]
#[ignore = "made the checked-in fixture once; see the module docs"]
fn write_the_format_2_fixture() {
    if std::env::var_os("SEPP_WRITE_FIXTURE").is_none() {
        return;
    }
    let dir = fixture_dir();
    let _ = std::fs::remove_dir_all(&dir);
    let options = LogOptions { persist_mode: PersistMode::SyncAll, segment_bytes: 64 << 10, checkpoint_slack_bytes: 0 };
    let (mut log, _) = DurableLog::open(&dir, options, |_| unreachable!("a new directory")).expect("open");
    log.append(&records()).expect("append");
    log.persist().expect("persist");
    drop(log);
    for segment in common::disk::segments(&dir) {
        common::disk::cut_preallocation(&segment);
    }
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

#[test]
fn the_second_format_opens_with_every_record_as_written() {
    assert_eq!(std::fs::read_to_string(fixture_dir().join("FORMAT")).unwrap(), "sepp-log 2\n");
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture_dir()).expect("the fixture is checked in") {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
    }
    let mut read = Vec::new();
    let (_log, recovery) =
        DurableLog::open(copy.path(), LogOptions::new(PersistMode::SyncAll), |record| read.push(record.clone()))
            .expect("a later version opens format 2");
    assert!(recovery.truncated.is_none(), "{recovery:?}");
    assert_eq!(read, records());
}
