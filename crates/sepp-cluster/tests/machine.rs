//! The replicated state machine: a state that applies the entries of a run holds what the run's
//! own state holds, and a snapshot of it installed on another node reproduces it exactly, the
//! acceptance sequence counter included.

use std::sync::Arc;

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, EntryPayload};
use sepp_cluster::{Entry, Frame, LogId, StateMachine, decode_snapshot, encode_snapshot};
use sepp_core::validate::{NackStrategy, ReservePlan};
use sepp_core::{JobId, NewJob, Payload, PayloadData, Policy, Record, State, StorageRules};

const NOW_MS: i64 = 5_000_000;

fn fresh() -> State {
    State::new(
        Arc::new(Policy::default()),
        StorageRules { dead_letter_retention_ms: 60_000, ..StorageRules::default() },
    )
}

/// A state machine on a directory of its own (kept as long as the machine).
fn machine() -> (StateMachine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (StateMachine::open(dir.path(), Arc::new(fresh)).expect("open"), dir)
}

fn run<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

fn job(queue: &str, index: usize) -> (JobId, NewJob) {
    let payload = Payload { data: vec![index as u8; 40 + index % 100], encoding: "raw".into() };
    let new_job = NewJob {
        queue: queue.into(),
        job_type: "t".into(),
        payload: Some(payload),
        idempotency_key: index.is_multiple_of(3).then(|| format!("key-{index}")),
        priority: Some((index % 4) as u32),
        max_attempts: Some(2),
        ..NewJob::default()
    };
    (JobId::new_v4(), new_job)
}

/// A leader's run: cycles of enqueues, reserves, acks, nacks and sweeps, each cycle's records
/// as one normal entry of term 1.
fn leader_run(leader: &mut State) -> Vec<Entry> {
    leader_cycles(leader).into_iter().map(|(entry, _)| entry).collect()
}

/// [`leader_run`]'s entries, each with the records the leader made and encoded it from.
fn leader_cycles(leader: &mut State) -> Vec<(Entry, Vec<Record>)> {
    let mut entries = Vec::new();
    let mut cycle = |records: Vec<Record>| {
        let mut frame = Vec::new();
        sepp_log::frame::encode(&records, &mut frame, &mut Vec::new());
        let log_id = LogId { leader_id: CommittedLeaderId::new(1, 1), index: entries.len() as u64 + 1 };
        entries.push((Entry { log_id, payload: EntryPayload::Normal(Frame(frame)) }, records));
    };
    for round in 0..20_i64 {
        let now_ms = NOW_MS + round * 1_000;
        let mut records = Vec::new();
        leader.sweep(now_ms, &mut records);
        let jobs =
            (0..10).map(|index| job(if index % 2 == 0 { "a" } else { "b" }, round as usize * 10 + index)).collect();
        leader.enqueue(now_ms, jobs, &mut records);
        let plan = ReservePlan { queues: vec!["a".into(), "b".into()], wait_ms: 0, lease_ms: 1_500, max_jobs: 6 };
        let deliveries = leader.reserve(now_ms, &plan, &mut records);
        for (position, delivery) in deliveries.iter().enumerate() {
            match position % 3 {
                0 => leader.ack(delivery.job.id, delivery.attempt, &mut records).expect("ack"),
                1 => {
                    let strategy = NackStrategy::Default;
                    leader.nack(now_ms, delivery.job.id, delivery.attempt, strategy, None, &mut records).expect("nack");
                }
                _ => {} // left to expire at a later sweep
            }
        }
        cycle(records);
    }
    entries
}

#[test]
fn applying_a_run_s_entries_reproduces_its_state() {
    let mut leader = fresh();
    let entries = leader_run(&mut leader);
    let (mut follower, _dir) = machine();
    run(follower.apply(entries.clone())).expect("apply");
    assert_eq!(follower.state_fingerprint(), leader.fingerprint());
    let (applied, _) = run(follower.applied_state()).unwrap();
    assert_eq!(applied, Some(entries.last().unwrap().log_id));
}

#[test]
fn a_leader_applies_its_own_entries_from_their_records_and_holds_each_job_once() {
    let mut leader = fresh();
    let cycles = leader_cycles(&mut leader);
    let entries: Vec<Entry> = cycles.iter().map(|(entry, _)| entry.clone()).collect();
    let leave = |machine: &StateMachine, from: usize| {
        for (entry, records) in &cycles[from..] {
            let EntryPayload::Normal(Frame(bytes)) = &entry.payload else { unreachable!() };
            machine.local_frames().push(bytes.clone(), records.clone());
        }
    };

    // Every entry proposed here: applied from the records, the same state as decoding gives.
    // Each job's payload went to the payload files, and the job, placed (a copy, since the
    // committer shares it), was offered to the committer, which takes it in place of its own:
    // the two hold the same allocation again, without the payload's bytes.
    let (mut own, _own_dir) = machine();
    let _ = own.lead_state();
    leave(&own, 0);
    run(own.apply(entries.clone())).expect("apply");
    assert_eq!(own.state_fingerprint(), leader.fingerprint());
    assert_eq!(own.local_frames().taken(), entries.len() as u64);
    let mut committer = leader.clone();
    for job in own.payloads().take_adopted() {
        committer.adopt_job(job);
    }
    own.payloads().confirm();
    let mut live = 0;
    for (_, records) in &cycles {
        for record in records {
            if let Record::JobAccepted { job, .. } = record
                && let Some((held, _)) = own.with_state(|state| state.find_job(&job.id))
            {
                let (committers, _) = committer.find_job(&job.id).expect("the committer holds it too");
                assert!(Arc::ptr_eq(&committers, &held), "job {} is held twice", job.id);
                let payload = held.payload.as_ref().expect("a payload");
                let PayloadData::Stored(stored) = &payload.data else { panic!("job {} holds its payload", job.id) };
                let PayloadData::Inline(bytes) = &job.payload.as_ref().unwrap().data else { unreachable!() };
                assert_eq!(own.payloads().read(stored).unwrap(), bytes.to_vec());
                live += 1;
            }
        }
    }
    assert!(live > 0);

    // A frame of a term that ended (never applied), then every frame but the first, which is
    // decoded as a follower would: the same state, and the stale frame is dropped on the way.
    let (mut mixed, _mixed_dir) = machine();
    mixed.local_frames().push(vec![1, 2, 3], Vec::new());
    leave(&mixed, 1);
    run(mixed.apply(entries)).expect("apply");
    assert_eq!(mixed.state_fingerprint(), leader.fingerprint());
    assert_eq!(mixed.local_frames().taken(), cycles.len() as u64 - 1);
    assert!(mixed.local_frames().is_empty());
}

#[test]
fn a_snapshot_installed_elsewhere_reproduces_the_state_and_numbers_the_next_job_alike() {
    let mut leader = fresh();
    let entries = leader_run(&mut leader);
    let (mut first, _first_dir) = machine();
    run(first.apply(entries)).expect("apply");
    let mut builder = run(first.get_snapshot_builder());
    let snapshot = run(builder.build_snapshot()).expect("build a snapshot");

    let (mut second, _second_dir) = machine();
    run(second.install_snapshot(&snapshot.meta, snapshot.snapshot)).expect("install");
    assert_eq!(second.state_fingerprint(), leader.fingerprint());
    assert_eq!(run(second.applied_state()).unwrap(), run(first.applied_state()).unwrap());

    // The counters came along: the next job accepted gets the same sequence on both.
    let mut restored = fresh();
    let data = encode_snapshot(&leader);
    decode_snapshot(&data, &mut restored).expect("decode");
    let next = job("a", 999);
    let id = next.0;
    leader.enqueue(NOW_MS + 60_000, vec![next.clone()], &mut Vec::new())[0].as_ref().expect("accepted");
    restored.enqueue(NOW_MS + 60_000, vec![next], &mut Vec::new())[0].as_ref().expect("accepted");
    let seq = |state: &State| state.live_job(&id).expect("queued").0.seq;
    assert_eq!(seq(&leader), seq(&restored));
}

#[test]
fn a_machine_opened_again_starts_from_the_snapshot_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = fresh();
    let entries = leader_run(&mut leader);
    let last = entries.last().unwrap().log_id;
    {
        let mut first = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open");
        run(first.apply(entries)).expect("apply");
        let mut builder = run(first.get_snapshot_builder());
        run(builder.build_snapshot()).expect("build a snapshot");
    }
    let mut again = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open again");
    assert_eq!(again.state_fingerprint(), leader.fingerprint());
    assert_eq!(run(again.applied_state()).unwrap().0, Some(last));
    let current = run(again.get_current_snapshot()).unwrap().expect("the kept snapshot");
    assert_eq!(current.meta.last_log_id, Some(last));

    // A damaged snapshot file refuses to open rather than start from nothing.
    let path = dir.path().join("raft-snapshot");
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let error = StateMachine::open(dir.path(), Arc::new(fresh)).err().expect("a damaged snapshot was taken");
    assert!(error.to_string().contains("checksum"), "{error}");
}

#[test]
fn damaged_entries_and_snapshots_are_refused() {
    let mut leader = fresh();
    let mut entries = leader_run(&mut leader);
    let last = entries.last_mut().unwrap();
    if let EntryPayload::Normal(frame) = &mut last.payload {
        let middle = frame.0.len() / 2;
        frame.0[middle] ^= 0xff;
    }
    let (mut follower, _dir) = machine();
    let error = run(follower.apply(entries)).expect_err("a damaged entry was applied");
    assert!(error.to_string().contains("checksum"), "{error}");

    let data = encode_snapshot(&leader);
    let mut state = fresh();
    assert!(decode_snapshot(&data[..data.len() - 1], &mut state).is_err(), "a cut snapshot was taken");
}

/// The file names in `dir`, sorted.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

#[test]
fn a_snapshot_is_kept_in_a_data_file_of_its_own_and_the_older_one_goes() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = fresh();
    let entries = leader_run(&mut leader);
    let mut first = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open");
    run(first.apply(entries)).expect("apply");
    let mut builder = run(first.get_snapshot_builder());
    let built = run(builder.build_snapshot()).expect("build a snapshot");
    run(builder.build_snapshot()).expect("build another");
    let names = files(dir.path());
    let data: Vec<&String> = names.iter().filter(|name| name.ends_with(".data")).collect();
    assert_eq!(data.len(), 1, "one data file, the newest: {names:?}");
    assert!(names.contains(&"raft-snapshot".to_string()), "{names:?}");

    // The data handed to openraft is the snapshot data itself, from its first byte.
    let mut sent = Vec::new();
    let mut file = run(built.snapshot.into_std());
    std::io::Seek::rewind(&mut file).unwrap();
    std::io::Read::read_to_end(&mut file, &mut sent).unwrap();
    let mut from_sent = fresh();
    decode_snapshot(&sent, &mut from_sent).expect("the data file is whole snapshot data");
    assert_eq!(from_sent.fingerprint(), leader.fingerprint());

    // Leftovers of a crash (a half-built, a half-received snapshot, an unnamed data file) are
    // removed when the machine opens again.
    drop(first);
    for leftover in
        ["raft-snapshot-building.data", "raft-snapshot-incoming.data", "raft-snapshot-00000000000000000099.data"]
    {
        std::fs::write(dir.path().join(leftover), b"partial").unwrap();
    }
    let again = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open again");
    assert_eq!(again.state_fingerprint(), leader.fingerprint());
    let kept: Vec<String> = files(dir.path()).into_iter().filter(|name| name.ends_with(".data")).collect();
    assert_eq!(kept.iter().collect::<Vec<_>>(), data, "only the current data file is left");

    // A damaged data file refuses to open, naming it.
    let path = dir.path().join(data[0]);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let error = StateMachine::open(dir.path(), Arc::new(fresh)).err().expect("a damaged data file was taken");
    assert!(error.to_string().contains(data[0].as_str()), "{error}");
    // So does a cut one, and a missing one.
    std::fs::write(&path, &bytes[..middle]).unwrap();
    assert!(StateMachine::open(dir.path(), Arc::new(fresh)).is_err(), "a cut data file was taken");
    std::fs::remove_file(&path).unwrap();
    let error = StateMachine::open(dir.path(), Arc::new(fresh)).err().expect("a missing data file was taken");
    assert!(error.to_string().contains(data[0].as_str()), "{error}");
}

#[test]
fn a_snapshot_received_in_chunks_is_installed_from_its_file() {
    use tokio::io::{AsyncSeekExt, AsyncWriteExt};
    let mut leader = fresh();
    let entries = leader_run(&mut leader);
    let (mut first, _first_dir) = machine();
    run(first.apply(entries)).expect("apply");
    let mut builder = run(first.get_snapshot_builder());
    let built = run(builder.build_snapshot()).expect("build a snapshot");
    let data = encode_snapshot(&leader);

    // As openraft receives one: chunks written at their offsets, out of order.
    let (mut second, second_dir) = machine();
    let mut receiving = run(second.begin_receiving_snapshot()).expect("begin");
    let chunk = data.len() / 3 + 1;
    let chunks: Vec<(usize, &[u8])> = data.chunks(chunk).enumerate().map(|(at, bytes)| (at * chunk, bytes)).collect();
    for (offset, bytes) in chunks.iter().rev() {
        run(async {
            receiving.seek(std::io::SeekFrom::Start(*offset as u64)).await.unwrap();
            receiving.write_all(bytes).await.unwrap();
        });
    }
    run(second.install_snapshot(&built.meta, receiving)).expect("install");
    assert_eq!(second.state_fingerprint(), leader.fingerprint());
    let names = files(second_dir.path());
    assert!(!names.iter().any(|name| name.contains("incoming") || name.contains("installing")), "{names:?}");
    let current = run(second.get_current_snapshot()).unwrap().expect("the installed snapshot");
    assert_eq!(current.meta, built.meta);

    // A received snapshot cut short is refused, and the state stays as it was.
    let (mut third, _third_dir) = machine();
    let mut receiving = run(third.begin_receiving_snapshot()).expect("begin");
    run(receiving.write_all(&data[..data.len() - 1])).unwrap();
    let error = run(third.install_snapshot(&built.meta, receiving)).expect_err("a cut snapshot was installed");
    assert!(error.to_string().contains("end mark"), "{error}");
    assert_eq!(third.state_fingerprint(), fresh().fingerprint());
}

#[test]
fn an_older_snapshot_with_its_data_inside_is_read_and_rewritten_with_a_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = fresh();
    let entries = leader_run(&mut leader);
    let last = entries.last().unwrap().log_id;
    let meta = openraft::SnapshotMeta::<u64, sepp_cluster::NodeAddr> {
        last_log_id: Some(last),
        last_membership: openraft::StoredMembership::default(),
        snapshot_id: "older".into(),
    };
    let mut meta_bytes = Vec::new();
    ciborium::into_writer(&meta, &mut meta_bytes).unwrap();
    let mut body = (meta_bytes.len() as u32).to_le_bytes().to_vec();
    body.extend_from_slice(&meta_bytes);
    body.extend_from_slice(&encode_snapshot(&leader));
    let mut file = b"SEPPSNP1".to_vec();
    file.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    file.extend_from_slice(&body);
    std::fs::write(dir.path().join("raft-snapshot"), file).unwrap();

    let mut opened = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open");
    assert_eq!(opened.state_fingerprint(), leader.fingerprint());
    assert_eq!(run(opened.applied_state()).unwrap().0, Some(last));
    assert!(files(dir.path()).iter().any(|name| name.ends_with(".data")), "rewritten with a data file");
    drop(opened);
    let again = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open the rewritten one");
    assert_eq!(again.state_fingerprint(), leader.fingerprint());
}
