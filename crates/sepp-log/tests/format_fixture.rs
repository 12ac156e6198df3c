//! The data directory format as it was first released ("sepp-log 1"), checked in under
//! `tests/fixtures/format-1`: a checkpoint and the segment after it, holding jobs in every
//! state. Every later version must open it and find the same queue. The fixture is never
//! rewritten; a new on-disk format gets a fixture of its own, next to this one.
//!
//! (`write_the_format_1_fixture` made it, with `SEPP_WRITE_FIXTURE=1`; it is kept to show how,
//! not to be run again.)

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sepp_core::validate::{NackStrategy, ReservePlan};
use sepp_core::{JobId, NewJob, Payload, PayloadData, Policy, Primitive, Record, State, StorageRules};
use sepp_log::{DurableLog, Log, LogOptions, PersistMode};

/// The time of the fixture's first cycle; later cycles are minutes after it.
const T0: i64 = 1_780_000_000_000;
const DAY_MS: i64 = 86_400_000;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-1")
}

fn id(n: u128) -> JobId {
    JobId::from_u128(0x5e99_0000_0000_4000_8000_0000_0000_0000 | n)
}

fn rules() -> StorageRules {
    StorageRules { dead_letter_retention_ms: 30 * DAY_MS as u64, ..StorageRules::default() }
}

/// 100 bytes: more than the log keeps inline, so it is stored in a file and read back.
fn big_payload() -> Vec<u8> {
    (0..100u8).collect()
}

fn new_job(queue: &str, job_type: &str) -> NewJob {
    NewJob { queue: queue.into(), job_type: job_type.into(), ..NewJob::default() }
}

fn plan(queue: &str, lease_ms: u64) -> ReservePlan {
    ReservePlan { queues: vec![queue.into()], wait_ms: 0, lease_ms, max_jobs: 1 }
}

/// Persists one cycle's records and moves stored payloads where the log put them.
fn persist(state: &mut State, log: &mut DurableLog, records: &mut Vec<Record>) {
    log.append(records).expect("append");
    for (job_id, stored) in log.persist().expect("persist") {
        state.place_payload(job_id, stored);
    }
    records.clear();
}

#[test]
#[ignore = "made the checked-in fixture once; see the module docs"]
fn write_the_format_1_fixture() {
    if std::env::var_os("SEPP_WRITE_FIXTURE").is_none() {
        return;
    }
    let dir = fixture_dir();
    let _ = std::fs::remove_dir_all(&dir);
    let options = LogOptions { persist_mode: PersistMode::SyncAll, segment_bytes: 64 << 10, checkpoint_slack_bytes: 0 };
    let (mut log, _) = DurableLog::open(&dir, options, |_| unreachable!("a new directory")).expect("open");
    let mut state = State::new(Arc::new(Policy::default()), rules());
    let mut records = Vec::new();

    // Cycle 1: jobs of every shape.
    let mut emails = Vec::new();
    let mut stored = new_job("emails", "send_welcome");
    stored.payload = Some(Payload { data: big_payload(), encoding: "application/octet-stream".into() });
    emails.push((id(1), stored));
    let mut small = new_job("emails", "send_welcome");
    small.payload = Some(Payload { data: br#"{"user":42}"#.to_vec(), encoding: "application/json".into() });
    small.custom = BTreeMap::from([
        ("tenant".into(), Some(Primitive::String("acme".into()))),
        ("n".into(), Some(Primitive::Int(3))),
    ]);
    emails.push((id(2), small));
    let mut keyed = new_job("emails", "digest");
    keyed.idempotency_key = Some("digest-2026-06-01".into());
    emails.push((id(3), keyed));
    let mut scheduled = new_job("emails", "reminder");
    scheduled.scheduled_at_ms = Some(T0 + DAY_MS);
    emails.push((id(4), scheduled));
    emails.push((id(5), new_job("emails", "to_dead_letter")));
    let mut urgent = new_job("reports", "render");
    urgent.priority = Some(7);
    emails.push((id(6), urgent));
    emails.push((id(7), new_job("reports", "render")));
    state.enqueue(T0, emails, &mut records);
    persist(&mut state, &mut log, &mut records);

    // Cycle 2: a long lease, a dead letter, a retry.
    let leased = state.reserve(T0 + 60_000, &plan("reports", DAY_MS as u64), &mut records);
    assert_eq!(leased[0].job.id, id(6));
    persist(&mut state, &mut log, &mut records);
    let mut four = plan("emails", 60_000);
    four.max_jobs = 4;
    let delivered = state.reserve(T0 + 120_000, &four, &mut records);
    let ids: Vec<JobId> = delivered.iter().map(|delivery| delivery.job.id).collect();
    assert_eq!(ids, [id(1), id(2), id(3), id(5)]);
    state.ack(id(2), 1, &mut records).unwrap();
    state.ack(id(3), 1, &mut records).unwrap();
    let reason = Some("smtp 550".to_string());
    state.nack(T0 + 120_000, id(5), 1, NackStrategy::DeadLetter, reason.clone(), &mut records).unwrap();
    state.nack(T0 + 120_000, id(1), 1, NackStrategy::Default, reason, &mut records).unwrap();
    persist(&mut state, &mut log, &mut records);

    // The checkpoint, then a cycle in the segment after it.
    log.checkpoint(state.snapshot()).expect("checkpoint");
    common::disk::wait_for_checkpoint(&dir, || {
        for (job_id, stored) in log.poll_checkpoint() {
            state.place_payload(job_id, stored);
        }
        log.reclaim().expect("reclaim");
    });
    let mut late = new_job("reports", "render");
    late.payload = Some(Payload { data: big_payload(), encoding: "application/octet-stream".into() });
    state.enqueue(T0 + 180_000, vec![(id(8), late)], &mut records);
    persist(&mut state, &mut log, &mut records);
    drop(log);
    // The last segment's preallocated zeros carry nothing; the fixture is kept small without them.
    for segment in common::disk::segments(&dir) {
        common::disk::cut_preallocation(&segment);
    }
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

/// Opens a copy of the fixture (opening writes a lock and may trim) into a fresh state.
fn open_fixture() -> (tempfile::TempDir, DurableLog, State) {
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture_dir()).expect("the fixture is checked in") {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
    }
    let mut state = State::new(Arc::new(Policy::default()), rules());
    let (log, recovery) =
        DurableLog::open(copy.path(), LogOptions::new(PersistMode::SyncAll), |record| state.apply(record))
            .expect("a later version opens the first format");
    assert!(recovery.checkpoint.is_some() && recovery.segments >= 1, "{recovery:?}");
    assert!(recovery.truncated.is_none(), "{recovery:?}");
    (copy, log, state)
}

#[test]
fn opening_the_first_format_upgrades_its_format_file_only_after_reading_it_whole() {
    assert_eq!(std::fs::read_to_string(fixture_dir().join("FORMAT")).unwrap(), "sepp-log 1\n");
    let (dir, log, _state) = open_fixture();
    drop(log);
    assert_eq!(std::fs::read_to_string(dir.path().join("FORMAT")).unwrap(), "sepp-log 2\n");

    // A format-1 directory this sepp cannot read whole keeps its format, so the sepp that wrote
    // it still opens it.
    let damaged = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture_dir()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), damaged.path().join(entry.file_name())).unwrap();
    }
    let checkpoint = common::disk::checkpoints(damaged.path()).pop().expect("the fixture's checkpoint");
    common::disk::flip_bit(&checkpoint, 20);
    DurableLog::open(damaged.path(), LogOptions::new(PersistMode::SyncAll), |_| {})
        .err()
        .expect("a damaged checkpoint is refused");
    assert_eq!(std::fs::read_to_string(damaged.path().join("FORMAT")).unwrap(), "sepp-log 1\n");
}

#[test]
fn the_first_format_opens_with_every_job_where_it_was() {
    let (_dir, mut log, mut state) = open_fixture();
    state.check_invariants().expect("a consistent state");
    let depths = |queue: &str| {
        let depths = state.depths(queue);
        (depths.ready, depths.scheduled, depths.inflight, depths.dead_letter)
    };
    // emails: 1 retried (ready), 4 scheduled, 5 dead-lettered; 2 and 3 acked. reports: 7 and 8
    // ready, 6 leased.
    assert_eq!(depths("emails"), (1, 1, 0, 1));
    assert_eq!(depths("reports"), (2, 0, 1, 0));

    let mut records = Vec::new();
    // The lease taken before the checkpoint is still held, by attempt 1.
    state.ack(id(6), 1, &mut records).expect("the leased job is in flight under attempt 1");
    // Priority and acceptance order survive: 7 before 8.
    let next = state.reserve(T0 + 240_000, &plan("reports", 60_000), &mut records);
    assert_eq!(next[0].job.id, id(7));
    let last = state.reserve(T0 + 240_000, &plan("reports", 60_000), &mut records);
    assert_eq!(last[0].job.id, id(8));
    let Some(PayloadData::Stored(stored)) = last[0].job.payload.as_ref().map(|payload| &payload.data) else {
        panic!("the late job's payload is in the log");
    };
    assert_eq!(log.read_payload(stored).expect("read back"), big_payload());
    // The retried job comes back as attempt 2 with its payload, read from the checkpoint.
    let retried = state.reserve(T0 + 240_000, &plan("emails", 60_000), &mut records);
    assert_eq!((retried[0].job.id, retried[0].attempt), (id(1), 2));
    let Some(PayloadData::Stored(stored)) = retried[0].job.payload.as_ref().map(|payload| &payload.data) else {
        panic!("the retried job's payload is in the checkpoint");
    };
    assert_eq!(log.read_payload(stored).expect("read back"), big_payload());
    state.ack(id(1), 2, &mut records).expect("ack the retry");
    // The idempotency key still deduplicates to the acked job.
    let mut again = new_job("emails", "digest");
    again.idempotency_key = Some("digest-2026-06-01".into());
    let hit = state.enqueue(T0 + 240_000, vec![(JobId::new_v4(), again)], &mut records);
    assert_eq!(hit[0].as_ref().map(|enqueued| (enqueued.job_id, enqueued.deduplicated)), Ok((id(3), true)));
    // The dead letter keeps its cause and reason; the scheduled job comes due on time.
    let dead = state.drain_dead_letters(Some("emails"), 10, &mut records);
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].job.id, dead[0].last_reason.as_deref()), (id(5), Some("smtp 550")));
    state.sweep(T0 + DAY_MS, &mut records);
    let due = state.reserve(T0 + DAY_MS, &plan("emails", 60_000), &mut records);
    assert_eq!((due[0].job.id, due[0].job.job_type.as_ref()), (id(4), "reminder"));
}
