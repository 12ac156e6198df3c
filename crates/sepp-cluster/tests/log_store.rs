//! The Raft log storage: openraft's own storage test suite, and what survives a reopen (entries,
//! the vote, truncation, purging), which damage recovery cuts and which it refuses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use openraft::storage::RaftLogStorage;
use openraft::testing::{StoreBuilder, Suite};
use openraft::{CommittedLeaderId, EntryPayload, Membership};
use sepp_cluster::{
    COMMITTED_EVERY, Entry, Frame, LogId, LogStore, LogStoreOptions, NodeAddr, OpenError, StateMachine, StorageError,
    TypeConfig, Vote, decode_entry, encode_entry,
};
use sepp_core::{Policy, State, StorageRules};

fn log_id(term: u64, index: u64) -> LogId {
    LogId { leader_id: CommittedLeaderId::new(term, 1), index }
}

fn normal(term: u64, index: u64) -> Entry {
    let bytes = format!("records of cycle {index}").into_bytes();
    Entry { log_id: log_id(term, index), payload: EntryPayload::Normal(Frame(bytes)) }
}

fn membership(term: u64, index: u64) -> Entry {
    let nodes: BTreeMap<u64, NodeAddr> = (1..=3)
        .map(|id| (id, NodeAddr { raft: format!("10.0.0.{id}:7000"), api: format!("10.0.0.{id}:50051") }))
        .collect();
    let configs = vec![BTreeSet::from([1, 2, 3]), BTreeSet::from([1, 2])];
    Entry { log_id: log_id(term, index), payload: EntryPayload::Membership(Membership::new(configs, nodes)) }
}

/// Segments of about 200 bytes, so a few entries already span several files, each written
/// into zeros written 64 bytes at a time ahead of it.
fn small() -> LogStoreOptions {
    LogStoreOptions { segment_bytes: 200, preallocate_bytes: 64, ..LogStoreOptions::default() }
}

/// Where the frames of a segment's bytes end (the zeros after them are unused space).
fn frames_end(bytes: &[u8]) -> usize {
    let mut offset = 8; // "SEPPRAF1"
    while let Some(header) = bytes.get(offset..offset + 4) {
        let len = u32::from_le_bytes(header.try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        offset += 8 + len;
    }
    offset
}

fn open(dir: &Path) -> LogStore {
    LogStore::open(dir, small()).expect("open the Raft log")
}

fn indexes(store: &LogStore) -> Vec<u64> {
    store.entries(..).expect("read").iter().map(|entry| entry.log_id.index).collect()
}

fn segments(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".log"))
        .collect();
    names.sort();
    names
}

fn run<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
}

#[test]
fn entries_of_every_kind_encode_and_decode_to_themselves() {
    let entries = [Entry { log_id: log_id(7, 3), payload: EntryPayload::Blank }, normal(7, 4), membership(8, 5)];
    for entry in entries {
        let mut bytes = Vec::new();
        encode_entry(&entry, &mut bytes);
        assert_eq!(decode_entry(&bytes).expect("decode"), entry);
        // A normal entry's frame runs to the end of what it is given (the segment's frame
        // length, under its checksum, says where that is); anything else cut short is refused.
        let fixed = if matches!(entry.payload, EntryPayload::Normal(_)) { 25 } else { bytes.len() };
        for cut in 0..fixed {
            assert!(decode_entry(&bytes[..cut]).is_err(), "a cut entry decoded: {cut} of {} bytes", bytes.len());
        }
    }
}

#[test]
fn entries_the_vote_and_the_purge_point_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = open(dir.path());
        store
            .append_entries((1..=20).map(|index| if index == 5 { membership(1, 5) } else { normal(1, index) }))
            .unwrap();
        run(store.save_vote(&Vote::new_committed(3, 2))).unwrap();
        run(store.purge(log_id(1, 6))).unwrap();
    }
    assert!(segments(dir.path()).len() > 3, "expected several segments: {:?}", segments(dir.path()));
    let mut store = open(dir.path());
    assert_eq!(indexes(&store), (7..=20).collect::<Vec<_>>());
    assert_eq!(store.entries(12..=12).unwrap(), [normal(1, 12)]);
    assert_eq!(run(store.read_vote()).unwrap(), Some(Vote::new_committed(3, 2)));
    let state = run(store.get_log_state()).unwrap();
    assert_eq!((state.last_purged_log_id, state.last_log_id), (Some(log_id(1, 6)), Some(log_id(1, 20))));
    // The purged segments are gone: none of the remaining ones starts at or before entry 6
    // unless it also holds entries after it.
    assert!(segments(dir.path())[0].as_str() <= "raft-00000000000000000007.log");
}

#[test]
fn a_truncated_log_stays_truncated_and_grows_again_from_there() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = open(dir.path());
        store.append_entries((1..=20).map(|index| normal(1, index))).unwrap();
        run(store.truncate(log_id(1, 8))).unwrap();
        assert_eq!(indexes(&store), (1..=7).collect::<Vec<_>>());
        store.append_entries((8..=10).map(|index| normal(2, index))).unwrap();
    }
    let store = open(dir.path());
    assert_eq!(indexes(&store), (1..=10).collect::<Vec<_>>());
    assert_eq!(store.entries(8..=8).unwrap(), [normal(2, 8)], "the new leader's entry replaced the old one");
}

#[test]
fn after_a_purge_beyond_the_log_it_continues_after_the_purge_point() {
    // A follower that installs a snapshot newer than its whole log.
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = open(dir.path());
        store.append_entries((1..=3).map(|index| normal(1, index))).unwrap();
        run(store.purge(log_id(4, 50))).unwrap();
        assert!(indexes(&store).is_empty());
        store.append_entries((51..=53).map(|index| normal(4, index))).unwrap();
    }
    let mut store = open(dir.path());
    assert_eq!(indexes(&store), [51, 52, 53]);
    let state = run(store.get_log_state()).unwrap();
    assert_eq!(state.last_log_id, Some(log_id(4, 53)));
}

#[test]
fn appending_at_an_index_the_log_holds_replaces_it_and_everything_after() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.append_entries((1..=12).map(|index| normal(1, index))).unwrap();
        store.append_entries([normal(2, 4)]).unwrap();
        assert_eq!(indexes(&store), [1, 2, 3, 4]);
    }
    let store = open(dir.path());
    assert_eq!(indexes(&store), [1, 2, 3, 4]);
    assert_eq!(store.entries(4..).unwrap(), [normal(2, 4)]);
}

#[test]
fn an_entry_that_skips_ahead_starts_a_segment_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.append_entries([normal(1, 1), normal(1, 2)]).unwrap();
        store.append_entries([normal(1, 9), normal(1, 10)]).unwrap();
    }
    assert_eq!(segments(dir.path()), ["raft-00000000000000000001.log", "raft-00000000000000000009.log"]);
    let store = open(dir.path());
    assert_eq!(indexes(&store), [1, 2, 9, 10]);
    assert_eq!(store.entries(2..=9).unwrap(), [normal(1, 2), normal(1, 9)]);
}

#[test]
fn a_torn_tail_of_the_last_segment_is_cut_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.append_entries((1..=10).map(|index| normal(1, index))).unwrap();
    }
    let last = dir.path().join(segments(dir.path()).last().unwrap());
    let mut bytes = std::fs::read(&last).unwrap();
    let len = frames_end(&bytes);
    assert!(bytes.len() > len, "the appends went into zeros written ahead of them");
    // Half of a frame that never finished, in the zeros after the last one: its length says
    // more than is there.
    bytes.truncate(len);
    bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3, 4, 5]);
    bytes.resize(len + 64, 0);
    std::fs::write(&last, &bytes).unwrap();

    let store = open(dir.path());
    assert_eq!(indexes(&store), (1..=10).collect::<Vec<_>>());
    assert_eq!(std::fs::metadata(&last).unwrap().len(), len as u64, "the torn frame was cut off");
    store.append_entries([normal(1, 11)]).unwrap();
    assert_eq!(indexes(&open_again(dir.path(), store)), (1..=11).collect::<Vec<_>>());
}

#[test]
fn appends_go_into_zeros_written_ahead_and_a_reopened_log_continues_after_its_last_entry() {
    let dir = tempfile::tempdir().unwrap();
    let options = LogStoreOptions { preallocate_bytes: 4096, ..LogStoreOptions::default() };
    let store = LogStore::open(dir.path(), options).unwrap();
    store.append_entries((1..=5).map(|index| normal(1, index))).unwrap();
    let segment = dir.path().join(segments(dir.path()).last().unwrap());
    let bytes = std::fs::read(&segment).unwrap();
    let end = frames_end(&bytes);
    assert!(bytes.len() >= end + 1024 && bytes[end..].iter().all(|byte| *byte == 0), "{} {end}", bytes.len());
    drop(store);

    // Reopened: the zeros are unused space, not a torn tail; they are kept and written into.
    let store = LogStore::open(dir.path(), options).unwrap();
    assert_eq!(indexes(&store), (1..=5).collect::<Vec<_>>());
    assert_eq!(std::fs::read(&segment).unwrap().len(), bytes.len(), "nothing was cut");
    store.append_entries((6..=8).map(|index| normal(1, index))).unwrap();
    assert_eq!(std::fs::read(&segment).unwrap().len(), bytes.len(), "written into the zeros");
    drop(store);
    let store = LogStore::open(dir.path(), options).unwrap();
    assert_eq!(indexes(&store), (1..=8).collect::<Vec<_>>());

    // Past the zeros, the next ones are written ahead again.
    store.append_entries((9..=200).map(|index| normal(1, index))).unwrap();
    let grown = std::fs::read(&segment).unwrap();
    assert!(grown.len() > bytes.len());
    assert_eq!(indexes(&open_again(dir.path(), store)), (1..=200).collect::<Vec<_>>());
}

#[test]
fn the_committed_entry_survives_a_reopen_a_few_entries_behind_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    assert_eq!(run(store.read_committed()).unwrap(), None);
    run(store.save_committed(Some(log_id(1, 10)))).unwrap();
    assert_eq!(run(store.read_committed()).unwrap(), Some(log_id(1, 10)));
    // Written again only once COMMITTED_EVERY more entries are committed.
    run(store.save_committed(Some(log_id(1, 10 + COMMITTED_EVERY - 1)))).unwrap();
    assert_eq!(run(store.read_committed()).unwrap(), Some(log_id(1, 10 + COMMITTED_EVERY - 1)));
    let mut store = open_again(dir.path(), store);
    assert_eq!(run(store.read_committed()).unwrap(), Some(log_id(1, 10)));
    run(store.save_committed(Some(log_id(2, 10 + COMMITTED_EVERY)))).unwrap();
    let mut store = open_again(dir.path(), store);
    assert_eq!(run(store.read_committed()).unwrap(), Some(log_id(2, 10 + COMMITTED_EVERY)));

    // A damaged file names nothing: the node learns what is committed from the leader.
    drop(store);
    let path = dir.path().join("raft-committed");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let mut store = open(dir.path());
    assert_eq!(run(store.read_committed()).unwrap(), None);
    std::fs::write(&path, &bytes[..30]).unwrap();
    let mut store = open_again(dir.path(), store);
    assert_eq!(run(store.read_committed()).unwrap(), None);
}

fn open_again(dir: &Path, store: LogStore) -> LogStore {
    drop(store);
    open(dir)
}

#[test]
fn damage_before_the_last_segment_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.append_entries((1..=20).map(|index| normal(1, index))).unwrap();
    }
    let first = dir.path().join(&segments(dir.path())[0]);
    let mut bytes = std::fs::read(&first).unwrap();
    let middle = bytes.len() - 3;
    bytes[middle] ^= 0xff;
    std::fs::write(&first, &bytes).unwrap();

    match LogStore::open(dir.path(), small()) {
        Err(OpenError::Corrupt { path, reason, .. }) => {
            assert_eq!(path, first);
            assert!(reason.contains("checksum"), "{reason}");
        }
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(_) => panic!("a damaged segment before the last one was accepted"),
    }
}

#[test]
fn a_checksummed_tail_frame_that_does_not_decode_is_refused_and_never_cut() {
    // A write cut short never leaves a matching checksum: a whole frame that does not decode is
    // an entry this node may have acknowledged, refused even as the very last frame.
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.append_entries((1..=10).map(|index| normal(1, index))).unwrap();
    }
    let last = dir.path().join(segments(dir.path()).last().unwrap());
    // Entry 11 with a payload kind no version writes, in a frame whose checksum matches, where
    // the next frame goes (in the zeros written ahead).
    let mut body = Vec::new();
    for field in [11u64, 1, 1] {
        body.extend_from_slice(&field.to_le_bytes());
    }
    body.push(9);
    let mut bytes = std::fs::read(&last).unwrap();
    let end = frames_end(&bytes) as u64;
    bytes.truncate(end as usize);
    bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    std::fs::write(&last, &bytes).unwrap();

    for attempt in 0..2 {
        match LogStore::open(dir.path(), small()) {
            Err(error @ OpenError::Corrupt { .. }) => {
                let message = error.to_string();
                let OpenError::Corrupt { path, offset, reason } = error else { unreachable!() };
                assert_eq!((path, offset), (last.clone(), end));
                assert!(reason.contains("checksum matches") && reason.contains("not a torn write"), "{reason}");
                assert!(message.contains(&format!("{} is corrupt at byte offset {end}", last.display())), "{message}");
            }
            Err(other) => panic!("attempt {attempt}: expected corruption, got {other}"),
            Ok(_) => panic!("attempt {attempt}: an undecodable entry was cut off as a torn tail"),
        }
        assert_eq!(std::fs::read(&last).unwrap(), bytes, "attempt {attempt}: the segment is left as it was");
    }
}

#[test]
fn the_log_passes_openraft_s_storage_suite() {
    Suite::test_all(Builder).expect("openraft's storage suite");
}

/// The suite's stores: a fresh Raft log in a temporary directory (kept alive as the guard), and
/// the state machine over an empty `sepp_core::State`.
struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LogStore::open(dir.path(), LogStoreOptions::default()).expect("open");
        let fresh = || State::new(Arc::new(Policy::default()), StorageRules::default());
        let machine = StateMachine::open(dir.path(), Arc::new(fresh)).expect("open");
        Ok((dir, store, machine))
    }
}
