//! Looking at jobs without changing them: handles ([`JobKey`]), filters, pages of a queue's
//! jobs in one state, counts, and lookups by id or handle. The admin API's reads.
//!
//! Every walk is bounded: a page examines at most [`PEEK_SCAN_LIMIT`] index entries, so a page
//! costs the same however many jobs the server holds. Ready jobs and dead letters are walked in
//! the queue's own index; scheduled and in-flight jobs in the server-wide time-ordered index,
//! keeping the queue's entries (which is where the scan limit can stop a page early).

use std::ops::Bound;
use std::sync::Arc;

use crate::jobs::LiveJob;
use crate::state::{State, ready_key};
use crate::types::{DeadLetter, Job, JobId, JobState, Primitive, TimeMs};

/// A page walk examines at most this many index entries.
pub const PEEK_SCAN_LIMIT: usize = 10_000;
/// The largest page.
pub const PEEK_MAX_LIMIT: usize = 100;

/// Which of a queue's jobs to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeekState {
    Ready,
    Scheduled,
    Inflight,
    DeadLetter,
}

/// Where a job is in its state's index: a page cursor and a handle for actions on that job.
/// Its bytes (see [`JobKey::to_bytes`]) are opaque to clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKey {
    Ready { order: u64, job_id: JobId },
    Scheduled { due_ms: TimeMs, seq: u64, job_id: JobId },
    Inflight { lease_deadline_ms: TimeMs, seq: u64, job_id: JobId },
    DeadLetter { failed_at_ms: TimeMs, job_id: JobId },
}

impl JobKey {
    pub fn job_id(&self) -> JobId {
        match *self {
            JobKey::Ready { job_id, .. }
            | JobKey::Scheduled { job_id, .. }
            | JobKey::Inflight { job_id, .. }
            | JobKey::DeadLetter { job_id, .. } => job_id,
        }
    }

    pub fn state(&self) -> PeekState {
        match self {
            JobKey::Ready { .. } => PeekState::Ready,
            JobKey::Scheduled { .. } => PeekState::Scheduled,
            JobKey::Inflight { .. } => PeekState::Inflight,
            JobKey::DeadLetter { .. } => PeekState::DeadLetter,
        }
    }

    /// The key of a live job where it is now.
    pub fn of_live(job: &Job, state: JobState) -> JobKey {
        match state {
            JobState::Ready { .. } => JobKey::Ready { order: ready_key(job), job_id: job.id },
            JobState::Scheduled { due_ms, .. } => JobKey::Scheduled { due_ms, seq: job.seq, job_id: job.id },
            JobState::Inflight { lease_deadline_ms, .. } => {
                JobKey::Inflight { lease_deadline_ms, seq: job.seq, job_id: job.id }
            }
        }
    }

    pub fn of_dead(dead: &DeadLetter) -> JobKey {
        JobKey::DeadLetter { failed_at_ms: dead.failed_at_ms, job_id: dead.job.id }
    }

    /// A tag byte, then the index position (big-endian), then the job id.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(33);
        match *self {
            JobKey::Ready { order, .. } => {
                bytes.push(1);
                bytes.extend_from_slice(&order.to_be_bytes());
            }
            JobKey::Scheduled { due_ms, seq, .. } => {
                bytes.push(2);
                bytes.extend_from_slice(&due_ms.to_be_bytes());
                bytes.extend_from_slice(&seq.to_be_bytes());
            }
            JobKey::Inflight { lease_deadline_ms, seq, .. } => {
                bytes.push(3);
                bytes.extend_from_slice(&lease_deadline_ms.to_be_bytes());
                bytes.extend_from_slice(&seq.to_be_bytes());
            }
            JobKey::DeadLetter { failed_at_ms, .. } => {
                bytes.push(4);
                bytes.extend_from_slice(&failed_at_ms.to_be_bytes());
            }
        }
        bytes.extend_from_slice(self.job_id().as_bytes());
        bytes
    }

    /// The key these bytes encode, or `None` for anything [`JobKey::to_bytes`] cannot produce.
    pub fn from_bytes(bytes: &[u8]) -> Option<JobKey> {
        let (&tag, rest) = bytes.split_first()?;
        let word = |at: usize| -> Option<[u8; 8]> { rest.get(at..at + 8)?.try_into().ok() };
        let id_at = |at: usize| -> Option<JobId> {
            let id: [u8; 16] = rest.get(at..)?.try_into().ok()?;
            Some(JobId::from_bytes(id))
        };
        Some(match tag {
            1 => JobKey::Ready { order: u64::from_be_bytes(word(0)?), job_id: id_at(8)? },
            2 => JobKey::Scheduled {
                due_ms: i64::from_be_bytes(word(0)?),
                seq: u64::from_be_bytes(word(8)?),
                job_id: id_at(16)?,
            },
            3 => JobKey::Inflight {
                lease_deadline_ms: i64::from_be_bytes(word(0)?),
                seq: u64::from_be_bytes(word(8)?),
                job_id: id_at(16)?,
            },
            4 => JobKey::DeadLetter { failed_at_ms: i64::from_be_bytes(word(0)?), job_id: id_at(8)? },
            _ => return None,
        })
    }
}

/// Which jobs a listing or bulk action keeps: all of them, or those of one job type and/or
/// with given custom metadata values (compared as text: `3`, `1.5`, `true`, or the string).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    pub job_type: Option<String>,
    pub custom: Vec<(String, String)>,
}

impl JobFilter {
    pub fn is_empty(&self) -> bool {
        self.job_type.is_none() && self.custom.is_empty()
    }

    pub fn matches(&self, job: &Job) -> bool {
        self.job_type.as_deref().is_none_or(|job_type| *job.job_type == *job_type)
            && self.custom.iter().all(|(key, value)| job.custom.get(key).is_some_and(|found| text_of(found) == *value))
    }
}

/// A custom value as the text a filter compares with.
pub fn text_of(value: &Primitive) -> String {
    match value {
        Primitive::String(text) => text.clone(),
        Primitive::Int(number) => number.to_string(),
        Primitive::Double(number) => number.to_string(),
        Primitive::Bool(flag) => flag.to_string(),
    }
}

/// A job as a listing shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Peeked {
    Live { job: Arc<Job>, state: JobState },
    Dead(DeadLetter),
}

impl Peeked {
    pub fn job(&self) -> &Arc<Job> {
        match self {
            Peeked::Live { job, .. } => job,
            Peeked::Dead(dead) => &dead.job,
        }
    }
}

/// One page of a listing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeekPage {
    pub jobs: Vec<(JobKey, Peeked)>,
    /// Where the next page starts (exclusive), when there may be one.
    pub next_cursor: Option<JobKey>,
    /// The scan limit stopped this page early: ask again from `next_cursor`.
    pub truncated: bool,
}

/// A cursor of another state than the one listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongCursor;

/// One entry of an index walk.
pub(crate) enum Walked<'a> {
    Live(&'a LiveJob),
    Dead(&'a DeadLetter),
}

impl Walked<'_> {
    fn job(&self) -> &Arc<Job> {
        match self {
            Walked::Live(live) => &live.job,
            Walked::Dead(dead) => &dead.job,
        }
    }

    fn peeked(&self) -> Peeked {
        match self {
            Walked::Live(live) => Peeked::Live { job: live.job.clone(), state: live.state },
            Walked::Dead(dead) => Peeked::Dead((*dead).clone()),
        }
    }
}

/// How a bounded walk ended.
pub(crate) struct WalkEnd {
    /// The last entry examined, if any.
    pub last: Option<JobKey>,
    /// The walk reached the end of the index.
    pub exhausted: bool,
    /// The scan limit stopped the walk.
    pub capped: bool,
}

impl State {
    /// Index entries of `state` after `cursor`, in index order, with the queue they belong to
    /// (entries of other queues are included: they count against a scan limit).
    pub(crate) fn walk<'a>(
        &'a self,
        queue: &str,
        state: PeekState,
        cursor: Option<&JobKey>,
    ) -> Result<Box<dyn Iterator<Item = (JobKey, Walked<'a>)> + 'a>, WrongCursor> {
        if cursor.is_some_and(|cursor| cursor.state() != state) {
            return Err(WrongCursor);
        }
        let queue_state = self.queues.get(queue);
        let live = move |slot: &u32| Walked::Live(self.jobs.at(*slot));
        Ok(match (state, cursor) {
            (PeekState::Ready, cursor) => {
                let Some(queue_state) = queue_state else { return Ok(Box::new(std::iter::empty())) };
                let from = cursor.map_or(Bound::Unbounded, |key| match key {
                    JobKey::Ready { order, .. } => Bound::Excluded(*order),
                    _ => unreachable!("checked above"),
                });
                Box::new(queue_state.ready.range((from, Bound::Unbounded)).map(move |(order, slot)| {
                    let walked = live(slot);
                    (JobKey::Ready { order: *order, job_id: walked.job().id }, walked)
                }))
            }
            (PeekState::Scheduled, cursor) => {
                let from = cursor.map_or(Bound::Unbounded, |key| match key {
                    JobKey::Scheduled { due_ms, seq, .. } => Bound::Excluded((*due_ms, *seq)),
                    _ => unreachable!("checked above"),
                });
                Box::new(self.scheduled.range((from, Bound::Unbounded)).map(move |(&(due_ms, seq), slot)| {
                    let walked = live(slot);
                    (JobKey::Scheduled { due_ms, seq, job_id: walked.job().id }, walked)
                }))
            }
            (PeekState::Inflight, cursor) => {
                let from = cursor.map_or(Bound::Unbounded, |key| match key {
                    JobKey::Inflight { lease_deadline_ms, seq, .. } => Bound::Excluded((*lease_deadline_ms, *seq)),
                    _ => unreachable!("checked above"),
                });
                Box::new(self.leases.range((from, Bound::Unbounded)).map(move |(&(lease_deadline_ms, seq), slot)| {
                    let walked = live(slot);
                    (JobKey::Inflight { lease_deadline_ms, seq, job_id: walked.job().id }, walked)
                }))
            }
            (PeekState::DeadLetter, cursor) => {
                let Some(queue_state) = queue_state else { return Ok(Box::new(std::iter::empty())) };
                let from = cursor.map_or(Bound::Unbounded, |key| match key {
                    JobKey::DeadLetter { failed_at_ms, job_id } => Bound::Excluded((*failed_at_ms, *job_id)),
                    _ => unreachable!("checked above"),
                });
                Box::new(queue_state.dead.range((from, Bound::Unbounded)).map(|&(failed_at_ms, job_id)| {
                    let dead = &self.dead_letters[&job_id];
                    (JobKey::DeadLetter { failed_at_ms, job_id }, Walked::Dead(dead))
                }))
            }
        })
    }

    /// Walks at most `scan_limit` entries after `cursor`, calling `visit` with each entry of
    /// `queue` that passes `filter`, until `visit` returns false.
    pub(crate) fn walk_matching<'a>(
        &'a self,
        queue: &str,
        state: PeekState,
        cursor: Option<&JobKey>,
        filter: &JobFilter,
        scan_limit: usize,
        mut visit: impl FnMut(JobKey, &Walked<'a>) -> bool,
    ) -> Result<WalkEnd, WrongCursor> {
        let mut entries = self.walk(queue, state, cursor)?.peekable();
        let mut end = WalkEnd { last: None, exhausted: false, capped: false };
        let mut examined = 0;
        loop {
            if entries.peek().is_none() {
                end.exhausted = true;
                return Ok(end);
            }
            if examined == scan_limit {
                end.capped = true;
                return Ok(end);
            }
            let (key, walked) = entries.next().expect("peeked");
            examined += 1;
            end.last = Some(key);
            let job = walked.job();
            if *job.queue == *queue && filter.matches(job) && !visit(key, &walked) {
                end.exhausted = entries.peek().is_none();
                return Ok(end);
            }
        }
    }

    /// A page of `queue`'s jobs in `state` after `cursor` (exclusive), at most `limit` (clamped
    /// to 1..=100) of them. Ready jobs come in reservation order, the others in time order
    /// (due time, lease deadline, failure time).
    pub fn peek(
        &self,
        queue: &str,
        state: PeekState,
        cursor: Option<&JobKey>,
        limit: usize,
        filter: &JobFilter,
    ) -> Result<PeekPage, WrongCursor> {
        let limit = limit.clamp(1, PEEK_MAX_LIMIT);
        let mut jobs = Vec::with_capacity(limit);
        let end = self.walk_matching(queue, state, cursor, filter, PEEK_SCAN_LIMIT, |key, walked| {
            jobs.push((key, walked.peeked()));
            jobs.len() < limit
        })?;
        let full = jobs.len() == limit;
        let next_cursor = if end.capped {
            end.last
        } else if full && (state != PeekState::Ready || !end.exhausted) {
            // A full page of a time-ordered state always gives a cursor; a ready page only
            // when there is more to see.
            jobs.last().map(|(key, _)| *key)
        } else {
            None
        };
        Ok(PeekPage { jobs, next_cursor, truncated: end.capped })
    }

    /// How many of `queue`'s jobs in `state` pass `filter`. Without a filter this is the depth;
    /// with one, at most `scan_limit` entries after `cursor` are examined, and the cursor to go
    /// on from comes back while entries remain.
    pub fn count_matching(
        &self,
        queue: &str,
        state: PeekState,
        cursor: Option<&JobKey>,
        filter: &JobFilter,
        scan_limit: usize,
    ) -> Result<(u64, Option<JobKey>), WrongCursor> {
        if filter.is_empty() && cursor.is_none() {
            let depths = self.depths(queue);
            let depth = match state {
                PeekState::Ready => depths.ready,
                PeekState::Scheduled => depths.scheduled,
                PeekState::Inflight => depths.inflight,
                PeekState::DeadLetter => depths.dead_letter,
            };
            return Ok((depth, None));
        }
        let mut count = 0;
        let end = self.walk_matching(queue, state, cursor, filter, scan_limit, |_, _| {
            count += 1;
            true
        })?;
        Ok((count, if end.exhausted { None } else { end.last }))
    }

    /// A live job (ready, scheduled or in flight) by id.
    pub fn find_job(&self, job_id: &JobId) -> Option<(Arc<Job>, JobState)> {
        self.jobs.get(job_id).map(|live| (live.job.clone(), live.state))
    }

    /// The dead letter a key names, if it is `queue`'s and still there as the key says.
    pub fn find_dead_letter(&self, queue: &str, key: &JobKey) -> Option<&DeadLetter> {
        let JobKey::DeadLetter { failed_at_ms, job_id } = key else { return None };
        self.dead_letters.get(job_id).filter(|dead| *dead.job.queue == *queue && dead.failed_at_ms == *failed_at_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_survives_its_bytes_and_nothing_else_decodes() {
        let job_id = JobId::from_bytes([7; 16]);
        let keys = [
            JobKey::Ready { order: 42, job_id },
            JobKey::Scheduled { due_ms: -5, seq: 9, job_id },
            JobKey::Inflight { lease_deadline_ms: 1_000, seq: 3, job_id },
            JobKey::DeadLetter { failed_at_ms: 77, job_id },
        ];
        for key in keys {
            let bytes = key.to_bytes();
            assert_eq!(JobKey::from_bytes(&bytes), Some(key));
            assert_eq!(JobKey::from_bytes(&bytes[..bytes.len() - 1]), None, "a short key");
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(JobKey::from_bytes(&longer), None, "a long key");
        }
        assert_eq!(JobKey::from_bytes(&[]), None);
        assert_eq!(JobKey::from_bytes(&[9; 25]), None, "an unknown tag");
    }

    #[test]
    fn a_filter_compares_custom_values_as_text() {
        let mut job = Job { job_type: Arc::from("email"), ..crate::types::test_job(JobId::nil(), 1) };
        job.custom.insert("tenant".into(), Primitive::Int(42));
        job.custom.insert("vip".into(), Primitive::Bool(true));
        job.custom.insert("name".into(), Primitive::String("ana".into()));
        let filter = |job_type: Option<&str>, custom: &[(&str, &str)]| JobFilter {
            job_type: job_type.map(str::to_string),
            custom: custom.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect(),
        };
        assert!(filter(None, &[]).matches(&job));
        assert!(filter(Some("email"), &[("tenant", "42"), ("vip", "true"), ("name", "ana")]).matches(&job));
        assert!(!filter(Some("sms"), &[]).matches(&job));
        assert!(!filter(None, &[("tenant", "43")]).matches(&job));
        assert!(!filter(None, &[("missing", "")]).matches(&job));
    }
}
