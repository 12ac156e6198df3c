//! Where a finished checkpoint put the payloads it copied: the committer applies these with
//! `State::place_payload` before the files the payloads came from are deleted.
//!
//! A checkpoint of a large backlog moves a payload for almost every job, so the list is kept
//! small: the checkpoint hands back its own snapshot with one offset per entry (8 bytes, where a
//! `(JobId, StoredPayload)` takes 32), and each entry is dropped as its place is taken, on the
//! thread that allocated it.

use std::collections::VecDeque;

use sepp_core::{JobId, Record, SnapshotEntry, StoredPayload};

/// An offset for an entry whose payload did not move.
const NOT_MOVED: u64 = u64::MAX;

/// One chunk of a snapshot, with the new offset of each entry's payload.
struct Chunk {
    entries: std::vec::IntoIter<SnapshotEntry>,
    offsets: std::vec::IntoIter<u64>,
}

/// The new places of a checkpoint's payloads, in snapshot order.
#[derive(Default)]
pub struct Relocations {
    file: u32,
    chunks: VecDeque<Chunk>,
    listed: std::vec::IntoIter<(JobId, StoredPayload)>,
    remaining: usize,
}

impl Relocations {
    /// Relocations given as a list (for logs that keep no snapshot).
    pub fn listed(relocations: Vec<(JobId, StoredPayload)>) -> Relocations {
        Relocations { remaining: relocations.len(), listed: relocations.into_iter(), ..Relocations::default() }
    }

    /// The payloads of a snapshot as written into `file`, its chunks added one by one.
    pub(crate) fn into_file(file: u32) -> Relocations {
        Relocations { file, ..Relocations::default() }
    }

    /// Adds a written chunk: `placed` holds, in entry order, the entries whose payload moved
    /// and where to (as the checkpoint's encoder reported them).
    pub(crate) fn push_chunk(&mut self, entries: Vec<SnapshotEntry>, placed: impl IntoIterator<Item = (JobId, u64)>) {
        let mut offsets = vec![NOT_MOVED; entries.len()];
        let mut at = 0;
        for (job_id, offset) in placed {
            while at < entries.len() && entry_job_id(&entries[at]) != Some(job_id) {
                at += 1;
            }
            let Some(slot) = offsets.get_mut(at) else {
                debug_assert!(false, "a placement names no entry of its chunk");
                break;
            };
            *slot = offset;
            self.remaining += 1;
            at += 1;
        }
        self.chunks.push_back(Chunk { entries: entries.into_iter(), offsets: offsets.into_iter() });
    }

    /// How many relocations are left.
    pub fn len(&self) -> usize {
        self.remaining
    }

    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }
}

impl Iterator for Relocations {
    type Item = (JobId, StoredPayload);

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(listed) = self.listed.next() {
            self.remaining -= 1;
            return Some(listed);
        }
        loop {
            let chunk = self.chunks.front_mut()?;
            let Some(entry) = chunk.entries.next() else {
                self.chunks.pop_front();
                continue;
            };
            let offset = chunk.offsets.next().unwrap_or(NOT_MOVED);
            if offset == NOT_MOVED {
                continue;
            }
            let job = entry_job(&entry).expect("a moved payload belongs to a job");
            let (job_id, len) = (job.id, job.payload.as_ref().map_or(0, |payload| payload.data.len() as u32));
            // The entry goes before its place is taken, so the job it shares is no longer
            // shared when the state updates it.
            drop(entry);
            self.remaining -= 1;
            return Some((job_id, StoredPayload { offset, file: self.file, len }));
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Relocations {}

/// The job whose payload an entry's record carries, if any.
fn entry_job(entry: &SnapshotEntry) -> Option<&sepp_core::Job> {
    match entry {
        SnapshotEntry::Job(job, _) => Some(job),
        SnapshotEntry::Other(record) => match &**record {
            Record::JobAccepted { job, .. } | Record::JobRestored { job, .. } => Some(job),
            Record::DeadLetterRestored { dead } => Some(&dead.job),
            _ => None,
        },
    }
}

fn entry_job_id(entry: &SnapshotEntry) -> Option<JobId> {
    entry_job(entry).map(|job| job.id)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sepp_core::{Job, JobPayload, JobState, PayloadData};

    use super::*;

    fn job(payload_len: usize) -> Arc<Job> {
        Arc::new(Job {
            id: JobId::new_v4(),
            seq: 1,
            queue: "q".into(),
            job_type: "t".into(),
            payload: Some(JobPayload {
                encoding: "bin".into(),
                data: PayloadData::Inline(vec![7; payload_len].into_boxed_slice()),
            }),
            priority: 0,
            trace_context: None,
            enqueued_at_ms: 0,
            max_attempts: 3,
            custom: Default::default(),
            scheduled_at_ms: None,
        })
    }

    #[test]
    fn each_placement_goes_to_its_own_entry_and_the_entry_is_let_go_first() {
        let (moved, small, accepted) = (job(100), job(8), job(50));
        let ready = JobState::Ready { attempt: 1 };
        let entries = vec![
            SnapshotEntry::Job(moved.clone(), ready),
            Record::DedupExpired { queue: "q".into(), key: "k".into() }.into(),
            SnapshotEntry::Job(small.clone(), ready),
            Record::JobAccepted { job: accepted.clone(), due_ms: None }.into(),
        ];
        let mut relocations = Relocations::into_file(9);
        relocations.push_chunk(entries, [(moved.id, 1_000), (accepted.id, 2_000)]);
        relocations.push_chunk(Vec::new(), []);
        assert_eq!(relocations.len(), 2);

        assert_eq!(relocations.next(), Some((moved.id, StoredPayload { offset: 1_000, file: 9, len: 100 })));
        assert_eq!(Arc::strong_count(&moved), 1, "the snapshot still shares the job whose place was taken");
        assert_eq!(relocations.len(), 1);
        assert_eq!(relocations.next(), Some((accepted.id, StoredPayload { offset: 2_000, file: 9, len: 50 })));
        assert_eq!(relocations.next(), None);
        assert!(relocations.is_empty());
        assert_eq!(Arc::strong_count(&small), 1, "entries without a move are let go too");
    }

    #[test]
    fn a_listed_relocation_comes_back_as_given() {
        let given = (JobId::new_v4(), StoredPayload { offset: 5, file: 1, len: 40 });
        let mut relocations = Relocations::listed(vec![given]);
        assert_eq!(relocations.len(), 1);
        assert_eq!(relocations.next(), Some(given));
        assert_eq!(relocations.next(), None);
    }
}
