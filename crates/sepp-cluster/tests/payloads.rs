//! A cluster node's payload files: queued jobs point into them, acked jobs' bytes are reclaimed
//! (files with no live payload deleted, sparse ones moved), and a file stays readable while a
//! leading committer or a snapshot being written may still read from it.

use std::sync::Arc;

use sepp_cluster::PayloadStore;
use sepp_core::validate::ReservePlan;
use sepp_core::{JobId, NewJob, Payload, PayloadData, Policy, Record, State, StorageRules};

const NOW_MS: i64 = 5_000_000;
/// Files this small fill after a few jobs.
const FILE_BYTES: u64 = 4096;
const PAYLOAD_BYTES: usize = 1000;

fn payload_of(index: usize) -> Vec<u8> {
    vec![index as u8; PAYLOAD_BYTES]
}

/// A state holding `count` queued jobs, each payload written to `store` and placed.
fn queued(store: &PayloadStore, count: usize) -> (State, Vec<JobId>) {
    let mut state = State::new(Arc::new(Policy::default()), StorageRules::default());
    let jobs = (0..count)
        .map(|index| {
            let new_job = NewJob {
                queue: "q".into(),
                job_type: "t".into(),
                payload: Some(Payload { data: payload_of(index), encoding: "raw".into() }),
                ..NewJob::default()
            };
            (JobId::new_v4(), new_job)
        })
        .collect();
    let mut records = Vec::new();
    state.enqueue(NOW_MS, jobs, &mut records);
    let mut ids = Vec::new();
    for record in &records {
        if let Record::JobAccepted { job, .. } = record {
            let (job_id, stored) = store.place_job(job).unwrap().expect("a large payload is placed");
            state.place_payload(job_id, stored);
            ids.push(job_id);
        }
    }
    (state, ids)
}

/// Acks the first `count` jobs of the queue (acceptance order).
fn ack_first(state: &mut State, count: usize) {
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: count as u32 };
    let mut records = Vec::new();
    for delivery in state.reserve(NOW_MS, &plan, &mut records) {
        state.ack(delivery.job.id, delivery.attempt, &mut records).unwrap();
    }
}

/// Every live job's payload, read back, is the one it was enqueued with.
fn check_payloads(state: &State, store: &PayloadStore, ids: &[JobId]) -> usize {
    let mut checked = 0;
    for (index, id) in ids.iter().enumerate() {
        if let Some((job, _)) = state.find_job(id) {
            let PayloadData::Stored(stored) = &job.payload.as_ref().unwrap().data else {
                panic!("job {id} holds its payload in memory")
            };
            assert_eq!(store.read(stored).unwrap(), payload_of(index), "job {index}");
            checked += 1;
        }
    }
    checked
}

#[test]
fn acked_jobs_bytes_are_reclaimed_and_live_ones_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = PayloadStore::open_with(dir.path(), FILE_BYTES).unwrap();
    let (mut state, ids) = queued(&store, 40);
    store.flush().unwrap();
    // Four payloads fit a file: ten files.
    assert_eq!(store.files(), 10);
    assert_eq!(check_payloads(&state, &store, &ids), 40);

    // The first half acked: the files holding only their bytes go; none is moved.
    ack_first(&mut state, 20);
    store.collect(&mut state, true).unwrap();
    assert_eq!(store.files(), 5);
    assert_eq!(check_payloads(&state, &store, &ids), 20);

    // Every other job of the rest acked: each full file is half live, and moved into the
    // current one, then the next ones as it fills.
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 20 };
    let mut records = Vec::new();
    for (position, delivery) in state.reserve(NOW_MS, &plan, &mut records).into_iter().enumerate() {
        if position % 2 == 0 {
            state.ack(delivery.job.id, delivery.attempt, &mut records).unwrap();
        }
    }
    let before = store.disk_bytes();
    store.collect(&mut state, true).unwrap();
    assert_eq!(check_payloads(&state, &store, &ids), 10);
    assert!(store.disk_bytes() < before, "{} bytes, {before} before", store.disk_bytes());
    assert!(store.disk_bytes() <= 2 * 10 * PAYLOAD_BYTES as u64 + 2 * FILE_BYTES);

    // Everything acked: only the current file is left.
    let mut records = Vec::new();
    let leased: Vec<_> = ids.iter().filter_map(|id| state.find_job(id)).collect();
    for (job, job_state) in leased {
        state.ack(job.id, job_state.attempt(), &mut records).unwrap();
    }
    store.collect(&mut state, true).unwrap();
    assert_eq!(store.files(), 1);
    let on_disk = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(on_disk, 1, "files left on disk");
}

#[test]
fn a_moved_file_stays_until_the_committer_took_the_moved_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let store = PayloadStore::open_with(dir.path(), FILE_BYTES).unwrap();
    let (mut state, ids) = queued(&store, 8);
    store.flush().unwrap();
    // A committer leads from a copy of the state: it holds the places as they are.
    let generation = store.start_adopting();
    let mut committer = state.clone();
    // Jobs 0 and 2 acked: the first file is half live and moves.
    let plan = ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 60_000, max_jobs: 3 };
    let mut records = Vec::new();
    for delivery in state.reserve(NOW_MS, &plan, &mut records) {
        if delivery.job.id != ids[1] {
            state.ack(delivery.job.id, delivery.attempt, &mut records).unwrap();
        }
    }
    let (held, _) = committer.find_job(&ids[1]).unwrap();
    let PayloadData::Stored(old) = held.payload.as_ref().unwrap().data.clone() else { unreachable!() };
    store.collect(&mut state, true).unwrap();
    let (moved, _) = state.find_job(&ids[1]).unwrap();
    assert_ne!(moved.payload, held.payload, "job 1 moved");

    // The committer still reads the old place, and the file waits for it.
    assert!(store.waits_for_committer());
    assert_eq!(store.read(&old).unwrap(), payload_of(1));
    let adopted = store.take_adopted();
    assert!(adopted.iter().any(|job| Arc::ptr_eq(job, &moved)), "the moved job is offered");
    for job in adopted {
        committer.adopt_job(job);
    }
    assert!(Arc::ptr_eq(&committer.find_job(&ids[1]).unwrap().0, &moved), "the committer shares the moved job");
    assert!(store.read(&old).is_ok(), "deleted before the committer confirmed");
    store.confirm();
    assert!(!store.waits_for_committer());
    assert!(store.read(&old).is_err(), "the moved file is still there");
    assert_eq!(check_payloads(&state, &store, &ids), 6);

    // A snapshot being written holds its places too.
    store.begin_build();
    ack_first(&mut state, 8);
    let (kept, _) = committer.find_job(&ids[7]).unwrap();
    let PayloadData::Stored(last) = kept.payload.as_ref().unwrap().data.clone() else { unreachable!() };
    store.stop_adopting(generation);
    store.collect(&mut state, true).unwrap();
    assert!(store.read(&last).is_ok(), "deleted under a snapshot being written");
    store.end_build();
    assert!(store.read(&last).is_err(), "the emptied file is still there");
    assert_eq!(check_payloads(&state, &store, &ids), 1);
}

#[test]
fn a_reader_reads_payloads_in_a_row_through_a_window_and_any_other_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = PayloadStore::open_with(dir.path(), 8 << 20).unwrap();
    let (state, ids) = queued(&store, 3000);
    // A payload larger than the window, and one still waiting to be written.
    let large = |byte: u8| sepp_core::Job {
        payload: Some(sepp_core::JobPayload {
            encoding: "raw".into(),
            data: PayloadData::Inline(vec![byte; sepp_cluster::PAYLOAD_READ_WINDOW + 5].into()),
        }),
        ..(*state.find_job(&ids[0]).unwrap().0).clone()
    };
    let (_, beyond) = store.place_job(&large(7)).unwrap().unwrap();
    store.flush().unwrap();
    let (_, waiting) = store.place_job(&large(8)).unwrap().unwrap();
    let places: Vec<_> = ids
        .iter()
        .map(|id| {
            let (job, _) = state.find_job(id).unwrap();
            let PayloadData::Stored(stored) = job.payload.as_ref().unwrap().data.clone() else { unreachable!() };
            stored
        })
        .collect();
    let mut reader = store.reader();
    for (index, stored) in places.iter().enumerate() {
        assert_eq!(reader.read(stored).unwrap(), payload_of(index), "job {index}");
    }
    for (index, stored) in places.iter().enumerate().rev().step_by(7) {
        assert_eq!(reader.read(stored).unwrap(), payload_of(index), "job {index}, backwards");
    }
    assert_eq!(reader.read(&beyond).unwrap(), vec![7; sepp_cluster::PAYLOAD_READ_WINDOW + 5]);
    assert_eq!(reader.read(&waiting).unwrap(), vec![8; sepp_cluster::PAYLOAD_READ_WINDOW + 5]);
    assert_eq!(reader.read(&places[2999]).unwrap(), payload_of(2999));
}
