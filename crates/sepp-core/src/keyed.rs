//! Per-key limits: at most N in flight, or N leased per period, for each value of one custom
//! metadata field (docs/configuration.md#per-key-limits).
//!
//! A queue with a key limit keeps its ready jobs a second time, grouped by key value, and a set
//! of the groups' first jobs. Only groups with room in flight have their first job in that set,
//! so a reserve takes the next job in queue order among the keys that may run one, without
//! looking at the jobs a full key holds back: a busy tenant never stands in front of the others.
//! The index is derived from the jobs and the policy; `apply` keeps it, and a policy change
//! rebuilds it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use hashbrown::HashMap;

use crate::jobs::Slot;
use crate::limits::{KeyLimit, RateLimit};
use crate::record::Record;
use crate::state::{State, ready_key};
use crate::types::{Delivery, Job, JobId, JobState, Primitive, TimeMs};

/// A job's key value: `None` for a job without the field, which no key limit holds.
pub(crate) type KeyValue = Option<Arc<str>>;

/// The ready jobs and the in-flight count of one key value.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct KeyGroup {
    pub ready: BTreeMap<u64, Slot>,
    pub inflight: usize,
}

impl KeyGroup {
    /// The group's first ready job, if the group may lease one more under `max_in_flight`.
    fn head(&self, max_in_flight: Option<u32>) -> Option<u64> {
        if max_in_flight.is_some_and(|limit| self.inflight >= limit as usize) {
            return None;
        }
        self.ready.keys().next().copied()
    }
}

/// The per-key index of one queue.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyedQueue {
    pub limit: Arc<KeyLimit>,
    pub groups: HashMap<KeyValue, KeyGroup>,
    /// The first ready job of every group with room in flight, in reservation order.
    pub heads: BTreeSet<(u64, KeyValue)>,
}

impl KeyedQueue {
    pub fn new(limit: Arc<KeyLimit>) -> Self {
        KeyedQueue { limit, groups: HashMap::new(), heads: BTreeSet::new() }
    }

    fn max_in_flight(&self, key: &KeyValue) -> Option<u32> {
        key.as_ref().and_then(|value| self.limit.of(value).max_in_flight)
    }

    /// Changes one group with `change`, keeping its entry in `heads` and dropping it when empty.
    pub fn change(&mut self, key: &KeyValue, change: impl FnOnce(&mut KeyGroup)) {
        let max_in_flight = self.max_in_flight(key);
        let group = self.groups.entry(key.clone()).or_default();
        let before = group.head(max_in_flight);
        change(group);
        let after = group.head(max_in_flight);
        let empty = group.ready.is_empty() && group.inflight == 0;
        if before != after {
            if let Some(head) = before {
                self.heads.remove(&(head, key.clone()));
            }
            if let Some(head) = after {
                self.heads.insert((head, key.clone()));
            }
        }
        if empty {
            self.groups.remove(key);
        }
    }

    /// Ready jobs their key's in-flight limit holds back now.
    pub fn held_back(&self) -> u64 {
        let mut held = 0;
        for (key, group) in &self.groups {
            if group.head(self.max_in_flight(key)).is_none() {
                held += group.ready.len() as u64;
            }
        }
        held
    }
}

/// The key value of `job` under `field`, as text (numbers and booleans as they print).
pub(crate) fn key_text<'a>(job: &'a Job, field: &str) -> Option<std::borrow::Cow<'a, str>> {
    Some(match job.custom.get(field)? {
        Primitive::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
        Primitive::Int(number) => number.to_string().into(),
        Primitive::Double(number) => number.to_string().into(),
        Primitive::Bool(flag) => flag.to_string().into(),
    })
}

/// A borrowed key value, to look a group up without building its name first.
#[derive(Hash)]
struct KeyRef<'a>(Option<&'a str>);

impl hashbrown::Equivalent<KeyValue> for KeyRef<'_> {
    fn equivalent(&self, key: &KeyValue) -> bool {
        self.0 == key.as_deref()
    }
}

/// The key value of `job` in `keyed`: the name its group already has, or a new one. Key values
/// are not interned with the queue names: a queue may see millions of tenants over time, and a
/// key value lives only as long as its group (and its rate bucket).
fn key_of(keyed: &KeyedQueue, job: &Job) -> KeyValue {
    let text = key_text(job, &keyed.limit.field)?;
    match keyed.groups.get_key_value(&KeyRef(Some(&text))) {
        Some((existing, _)) => existing.clone(),
        None => Some(Arc::from(&*text)),
    }
}

impl State {
    /// Keeps the per-key index of a keyed queue when the job in `slot` enters (`entering`) or
    /// leaves its current state.
    pub(crate) fn index_keyed(&mut self, slot: Slot, entering: bool) {
        let live = self.jobs.at(slot);
        let Some(keyed) = self.keyed.get_mut(&*live.job.queue) else { return };
        let state = live.state;
        if matches!(state, JobState::Scheduled { .. }) {
            return;
        }
        let rank = ready_key(&live.job);
        let key = key_of(keyed, &live.job);
        keyed.change(&key, |group| match (state, entering) {
            (JobState::Ready { .. }, true) => {
                group.ready.insert(rank, slot);
            }
            (JobState::Ready { .. }, false) => {
                group.ready.remove(&rank);
            }
            (_, true) => group.inflight += 1,
            (_, false) => group.inflight -= 1,
        });
    }

    /// Builds `queue`'s per-key index again from its jobs (after its key limit changed), or
    /// drops it when the queue has no key limit now.
    pub(crate) fn rebuild_keyed(&mut self, queue: &str) {
        self.keyed.remove(queue);
        let Some(limit) = self.policy.queue(queue).key_limit.clone() else { return };
        let name = self.intern(queue);
        self.keyed.insert(name, KeyedQueue::new(limit));
        let mut slots: Vec<Slot> =
            self.queues.get(queue).map_or_else(Vec::new, |state| state.ready.values().copied().collect());
        slots.extend(self.leases.values().copied().filter(|slot| *self.jobs.at(*slot).job.queue == *queue));
        for slot in slots {
            self.index_keyed(slot, true);
        }
    }

    /// Installs the per-key indexes a new policy asks for, rebuilding those whose limits changed.
    pub(crate) fn rekey(&mut self, previous: &crate::Policy) {
        let declared = self.policy.declared.keys().chain(previous.declared.keys());
        let changed: BTreeSet<String> = declared
            .filter(|name| previous.queue(name).key_limit != self.policy.queue(name).key_limit)
            .cloned()
            .collect();
        for name in changed {
            self.rebuild_keyed(&name);
        }
    }

    /// Whether a keyed queue has a job some key may lease now (in flight and, at `now_ms`, by
    /// rate; without `now_ms` the rate is not looked at).
    pub(crate) fn keyed_has_ready(&self, queue: &str, now_ms: Option<TimeMs>) -> bool {
        let Some(keyed) = self.keyed.get(queue) else { return false };
        let Some(now_ms) = now_ms else { return !keyed.heads.is_empty() };
        keyed.heads.iter().any(|(_, key)| self.key_rate_room(queue, keyed, key, now_ms))
    }

    fn key_rate(keyed: &KeyedQueue, key: &KeyValue) -> Option<RateLimit> {
        key.as_ref().and_then(|value| keyed.limit.of(value).rate)
    }

    fn key_tat(&self, queue: &str, value: &str) -> Option<i64> {
        self.key_rate_tat.get(queue).and_then(|keys| keys.get(value)).copied()
    }

    fn key_rate_room(&self, queue: &str, keyed: &KeyedQueue, key: &KeyValue, now_ms: TimeMs) -> bool {
        match (Self::key_rate(keyed, key), key) {
            (Some(rate), Some(value)) => rate.room(self.key_tat(queue, value), now_ms.saturating_mul(1000)) > 0,
            _ => true,
        }
    }

    /// Ready jobs of `queue` that their key's in-flight limit holds back now.
    pub fn held_by_key_limit(&self, queue: &str) -> u64 {
        self.keyed.get(queue).map_or(0, KeyedQueue::held_back)
    }

    /// Leases jobs of a keyed queue until `deliveries` holds `take`, in queue order among the
    /// keys with room; keys out of tokens are passed over. Returns when the first key passed
    /// over gets its next token, for the committer to look again then.
    pub(crate) fn reserve_keyed(
        &mut self,
        queue: &str,
        now_ms: TimeMs,
        lease_deadline_ms: TimeMs,
        take: usize,
        deliveries: &mut Vec<Delivery>,
        out: &mut Vec<Record>,
    ) -> Option<TimeMs> {
        let now_us = now_ms.saturating_mul(1000);
        let mut passed: Option<(u64, KeyValue)> = None;
        let mut next_token_ms: Option<TimeMs> = None;
        while deliveries.len() < take {
            let Some(keyed) = self.keyed.get(queue) else { break };
            let next = match &passed {
                None => keyed.heads.first(),
                Some(after) => keyed.heads.range((Bound::Excluded(after), Bound::Unbounded)).next(),
            };
            let Some((rank, key)) = next.cloned() else { break };
            let slot = keyed.groups.get(&key).and_then(|group| group.ready.get(&rank)).copied().expect("a head");
            if let (Some(rate), Some(value)) = (Self::key_rate(keyed, &key), &key) {
                let tat = self.key_tat(queue, value);
                if rate.room(tat, now_us) == 0 {
                    let at_ms = (rate.next_token_us(tat.unwrap_or(now_us)) + 999).div_euclid(1000);
                    next_token_ms = Some(next_token_ms.map_or(at_ms, |earliest| earliest.min(at_ms)));
                    passed = Some((rank, key));
                    continue;
                }
                let tat_us = rate.spent(tat, now_us, 1);
                let queue = self.intern(queue);
                self.record(Record::KeyRateAdvanced { queue, key: value.clone(), tat_us }, out);
            }
            let job_id: JobId = self.jobs.at(slot).job.id;
            self.record(Record::Leased { job_id, lease_deadline_ms }, out);
            let live = self.jobs.get(&job_id).expect("just leased");
            deliveries.push(Delivery { job: live.job.clone(), attempt: live.state.attempt(), lease_deadline_ms });
        }
        next_token_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A borrowed key value finds its group (so a group's name is reused, not allocated again),
    /// also the group of jobs without the field.
    #[test]
    fn a_borrowed_key_value_finds_its_group() {
        let mut keyed = KeyedQueue::new(Arc::new(KeyLimit::default()));
        let acme: KeyValue = Some(Arc::from("acme"));
        keyed.groups.insert(acme.clone(), KeyGroup::default());
        keyed.groups.insert(None, KeyGroup::default());
        let (found, _) = keyed.groups.get_key_value(&KeyRef(Some("acme"))).expect("acme's group");
        assert!(Arc::ptr_eq(found.as_ref().unwrap(), acme.as_ref().unwrap()));
        assert!(keyed.groups.get_key_value(&KeyRef(None)).is_some());
        assert!(keyed.groups.get_key_value(&KeyRef(Some("other"))).is_none());
    }
}
