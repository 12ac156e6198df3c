//! `JobTable`: every live job by id, compactly.
//!
//! Jobs live in a slab (`Vec` of slots, with a free list) and a hash table maps ids to slot
//! numbers. The indexes of `state` refer to jobs by slot (`u32`), which keeps a million queued
//! jobs small: a slot is 24 bytes and a table entry 4, where a map from id to job would spend
//! over 40 per job on keys and empty buckets.

use hashbrown::HashTable;

use crate::types::{JobId, JobState};
use std::sync::Arc;

use crate::types::Job;

/// A live job (ready, scheduled or in flight) with where it is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LiveJob {
    pub job: Arc<Job>,
    pub state: JobState,
}

/// A slot number in the table.
pub(crate) type Slot = u32;

#[derive(Debug, Default)]
pub(crate) struct JobTable {
    slots: Vec<Option<LiveJob>>,
    free: Vec<Slot>,
    by_id: HashTable<Slot>,
}

/// A clone keeps the slab's capacity. One sized to its length (what `Vec::clone` makes) would
/// double at its next job, copying every slot: a cluster node that starts to lead clones the
/// committed state, and with a million jobs queued its first enqueue made it hold 24 MB more
/// than the slab it cloned, beside a transient copy of both (docs/benchmarks.md).
impl Clone for JobTable {
    fn clone(&self) -> Self {
        let mut slots = Vec::with_capacity(self.slots.capacity());
        slots.extend(self.slots.iter().cloned());
        JobTable { slots, free: self.free.clone(), by_id: self.by_id.clone() }
    }
}

/// Job ids are random (UUID v4, assigned by the server), so their bytes are already a good hash.
fn hash(id: &JobId) -> u64 {
    let bytes = id.as_bytes();
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
        ^ u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"))
}

impl JobTable {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn slot(&self, id: &JobId) -> Option<Slot> {
        self.by_id
            .find(hash(id), |slot| self.slots[*slot as usize].as_ref().is_some_and(|live| live.job.id == *id))
            .copied()
    }

    pub fn get(&self, id: &JobId) -> Option<&LiveJob> {
        self.slot(id).map(|slot| self.at(slot))
    }

    pub fn get_mut(&mut self, id: &JobId) -> Option<&mut LiveJob> {
        let slot = self.slot(id)?;
        self.slots[slot as usize].as_mut()
    }

    /// The job in an occupied slot.
    pub fn at(&self, slot: Slot) -> &LiveJob {
        self.slots[slot as usize].as_ref().expect("indexes name occupied slots")
    }

    pub fn at_mut(&mut self, slot: Slot) -> &mut LiveJob {
        self.slots[slot as usize].as_mut().expect("indexes name occupied slots")
    }

    /// Adds a job that is not in the table yet and returns its slot.
    pub fn insert(&mut self, live: LiveJob) -> Slot {
        let id = live.job.id;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(live);
                slot
            }
            None => {
                self.slots.push(Some(live));
                Slot::try_from(self.slots.len() - 1).expect("fewer than 2^32 live jobs")
            }
        };
        let slots = &self.slots;
        self.by_id
            .insert_unique(hash(&id), slot, |slot| hash(&slots[*slot as usize].as_ref().expect("occupied").job.id));
        slot
    }

    /// Removes a job, returning it and the slot it had.
    pub fn remove(&mut self, id: &JobId) -> Option<(Slot, LiveJob)> {
        let slots = &self.slots;
        let entry = self
            .by_id
            .find_entry(hash(id), |slot| slots[*slot as usize].as_ref().is_some_and(|live| live.job.id == *id))
            .ok()?;
        let (slot, _) = entry.remove();
        let live = self.slots[slot as usize].take().expect("occupied");
        self.free.push(slot);
        Some((slot, live))
    }

    pub fn values(&self) -> impl Iterator<Item = &LiveJob> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(id: u128) -> LiveJob {
        let job = crate::types::test_job(JobId::from_u128(id), id as u64);
        LiveJob { job: Arc::new(job), state: JobState::Ready { attempt: 1 } }
    }

    #[test]
    fn a_clone_takes_its_next_job_without_growing_its_slab() {
        let mut table = JobTable::default();
        for id in 1..=1000 {
            table.insert(live(id));
        }
        assert!(table.slots.capacity() > table.slots.len(), "the slab grew by doubling");
        let mut clone = table.clone();
        assert_eq!(clone.slots.capacity(), table.slots.capacity());
        clone.insert(live(1001));
        assert_eq!(clone.slots.capacity(), table.slots.capacity());
        assert_eq!(clone.len(), 1001);
        assert_eq!(clone.get(&JobId::from_u128(7)), table.get(&JobId::from_u128(7)));
        assert!(Arc::ptr_eq(&clone.at(0).job, &table.at(0).job), "the jobs are shared");
    }
}
