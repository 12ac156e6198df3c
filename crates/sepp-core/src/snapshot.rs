//! Snapshots: the records that rebuild a state, as a checkpoint takes them.
//!
//! A snapshot is taken on the committer and written by another thread while the state moves on,
//! so it must not borrow the state; but copying a million jobs' records would cost more memory
//! than the jobs themselves are allowed. So a live job is held as its shared `Arc<Job>` and its
//! state (24 bytes, where a [`Record`] takes 64), every other record as a box, in chunks: the
//! checkpoint writes one frame per chunk, and hands the chunks back to the committer, which lets
//! them go as it takes the payloads' new places (`sepp_log::Relocations`).

use std::sync::Arc;

use crate::record::Record;
use crate::types::{Job, JobState};

/// Entries per chunk: a checkpoint writes one frame per chunk.
pub const SNAPSHOT_CHUNK: usize = 4096;

/// One record of a snapshot, held compactly.
#[derive(Clone, Debug, PartialEq)]
pub enum SnapshotEntry {
    /// A live job: [`Record::JobRestored`].
    Job(Arc<Job>, JobState),
    /// Any other record (dead letters, idempotency keys).
    Other(Box<Record>),
}

impl SnapshotEntry {
    pub fn to_record(&self) -> Record {
        match self {
            SnapshotEntry::Job(job, state) => Record::JobRestored { job: job.clone(), state: *state },
            SnapshotEntry::Other(record) => (**record).clone(),
        }
    }
}

impl From<Record> for SnapshotEntry {
    fn from(record: Record) -> Self {
        match record {
            Record::JobRestored { job, state } => SnapshotEntry::Job(job, state),
            other => SnapshotEntry::Other(Box::new(other)),
        }
    }
}

/// An ordered list of records, in chunks of [`SNAPSHOT_CHUNK`] entries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    chunks: Vec<Vec<SnapshotEntry>>,
    len: usize,
}

impl Snapshot {
    pub fn push(&mut self, entry: SnapshotEntry) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < SNAPSHOT_CHUNK => chunk.push(entry),
            _ => {
                let mut chunk = Vec::with_capacity(SNAPSHOT_CHUNK);
                chunk.push(entry);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records, in order.
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        self.chunks.iter().flatten().map(SnapshotEntry::to_record)
    }

    /// The chunks, in order.
    pub fn into_chunks(self) -> impl Iterator<Item = Vec<SnapshotEntry>> {
        self.chunks.into_iter()
    }
}

impl FromIterator<Record> for Snapshot {
    fn from_iter<I: IntoIterator<Item = Record>>(records: I) -> Self {
        let mut snapshot = Snapshot::default();
        for record in records {
            snapshot.push(record.into());
        }
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Policy;
    use crate::state::{State, StorageRules};
    use crate::types::{JobId, NewJob};

    /// A job as the state accepts it.
    fn accepted_job() -> Arc<Job> {
        let mut state = State::new(Arc::new(Policy::default()), StorageRules::default());
        let mut records = Vec::new();
        let job = NewJob { queue: "q".into(), job_type: "t".into(), ..NewJob::default() };
        assert!(state.enqueue(0, vec![(JobId::new_v4(), job)], &mut records)[0].is_ok());
        match records.remove(0) {
            Record::JobAccepted { job, .. } => job,
            other => panic!("an enqueue records the accepted job first, not {other:?}"),
        }
    }

    #[test]
    fn a_snapshot_gives_back_the_records_it_was_made_of_in_chunks() {
        let job = accepted_job();
        let records: Vec<Record> = (0..SNAPSHOT_CHUNK + 3)
            .map(|index| match index % 3 {
                0 => Record::JobRestored { job: job.clone(), state: JobState::Ready { attempt: 1 } },
                1 => Record::Acked { job_id: JobId::new_v4() },
                _ => Record::JobRestored {
                    job: job.clone(),
                    state: JobState::Inflight { attempt: 2, lease_deadline_ms: 9 },
                },
            })
            .collect();
        let snapshot: Snapshot = records.iter().cloned().collect();
        assert_eq!(snapshot.len(), records.len());
        assert_eq!(snapshot.records().collect::<Vec<_>>(), records);
        let chunks: Vec<_> = snapshot.into_chunks().collect();
        assert_eq!(chunks.iter().map(Vec::len).collect::<Vec<_>>(), [SNAPSHOT_CHUNK, 3]);
        assert!(matches!(chunks[0][0], SnapshotEntry::Job(..)));
        assert!(matches!(chunks[0][1], SnapshotEntry::Other(..)));
    }

    #[test]
    fn a_live_job_entry_takes_a_handle_and_its_state_not_a_whole_record() {
        assert_eq!(std::mem::size_of::<SnapshotEntry>(), 24);
        assert!(std::mem::size_of::<Record>() > std::mem::size_of::<SnapshotEntry>());
    }
}
