//! The nouns of the queue: jobs, payloads, custom values, dead-letter records.
//!
//! These are the core's own types; the gRPC edge converts proto messages into and out of them.
//! A stored [`Job`] is immutable once accepted: everything that changes over its life (attempt,
//! lease, due time) lives in its [`JobState`], so a job can be shared as `Arc<Job>` between the
//! indexes, the records handed to the log, and the replies handed to callers.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Server-assigned job identity: a random UUID v4, rendered lowercase and hyphenated on the wire.
pub type JobId = uuid::Uuid;

/// Milliseconds since the Unix epoch.
pub type TimeMs = i64;

/// Opaque job data with its encoding label (for example `application/json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payload {
    pub data: Vec<u8>,
    pub encoding: String,
}

/// The payload of an accepted job: its encoding label and where its bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPayload {
    pub encoding: Arc<str>,
    pub data: PayloadData,
}

/// Where a job's payload bytes are. The core only carries this; reading stored bytes is the
/// storage layer's business.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PayloadData {
    /// In memory: small payloads always, larger ones until their log write is durable.
    Inline(Box<[u8]>),
    /// In a log file, read back when the job is delivered.
    Stored(StoredPayload),
}

impl PayloadData {
    pub fn len(&self) -> usize {
        match self {
            PayloadData::Inline(bytes) => bytes.len(),
            PayloadData::Stored(stored) => stored.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The place of payload bytes in the log's files: `file` names a segment or checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StoredPayload {
    pub offset: u64,
    pub file: u32,
    pub len: u32,
}

/// A custom metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Primitive {
    String(String),
    Double(f64),
    Int(i64),
    Bool(bool),
}

impl Primitive {
    /// The bytes this value counts for in `max_custom_total_bytes`: string length, 8 for numbers,
    /// 1 for booleans.
    pub fn size_bytes(&self) -> u64 {
        match self {
            Primitive::String(text) => text.len() as u64,
            Primitive::Double(_) | Primitive::Int(_) => 8,
            Primitive::Bool(_) => 1,
        }
    }
}

/// The custom metadata of an accepted job, by key. Boxed, and absent when empty: most jobs carry
/// none, and this keeps a queued job small. Reads go through `Deref` to the map.
#[derive(Clone, Debug, Default, PartialEq)]
#[expect(clippy::box_collection, reason = "the box is the point: 8 bytes in every job instead of the map's 24")]
pub struct Custom(Option<Box<BTreeMap<String, Primitive>>>);

static NO_CUSTOM: BTreeMap<String, Primitive> = BTreeMap::new();

impl Custom {
    /// Inserts or replaces one entry.
    pub fn insert(&mut self, key: String, value: Primitive) -> Option<Primitive> {
        self.0.get_or_insert_default().insert(key, value)
    }
}

impl std::ops::Deref for Custom {
    type Target = BTreeMap<String, Primitive>;

    fn deref(&self) -> &Self::Target {
        self.0.as_deref().unwrap_or(&NO_CUSTOM)
    }
}

impl From<BTreeMap<String, Primitive>> for Custom {
    fn from(map: BTreeMap<String, Primitive>) -> Self {
        Custom((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl FromIterator<(String, Primitive)> for Custom {
    fn from_iter<I: IntoIterator<Item = (String, Primitive)>>(entries: I) -> Self {
        Custom::from(entries.into_iter().collect::<BTreeMap<_, _>>())
    }
}

impl<'a> IntoIterator for &'a Custom {
    type Item = (&'a String, &'a Primitive);
    type IntoIter = std::collections::btree_map::Iter<'a, String, Primitive>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// W3C trace context stored with a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// An enqueue request as it arrives, before validation. `custom` keeps key order, and a value of
/// `None` is an entry whose oneof was not set (which validation rejects).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewJob {
    pub queue: String,
    pub job_type: String,
    pub payload: Option<Payload>,
    pub idempotency_key: Option<String>,
    pub priority: Option<u32>,
    pub max_attempts: Option<u32>,
    pub trace_context: Option<TraceContext>,
    pub custom: BTreeMap<String, Option<Primitive>>,
    pub scheduled_at_ms: Option<TimeMs>,
}

/// A job accepted by the queue. Immutable after acceptance.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: JobId,
    /// Acceptance order across the whole server: FIFO within a priority follows it (docs/protocol.md#ordering).
    pub seq: u64,
    pub queue: Arc<str>,
    pub job_type: Arc<str>,
    pub payload: Option<JobPayload>,
    pub priority: u8,
    /// Boxed: most jobs carry none, and a queued job should stay small.
    pub trace_context: Option<Box<TraceContext>>,
    pub enqueued_at_ms: TimeMs,
    pub max_attempts: u32,
    pub custom: Custom,
    pub scheduled_at_ms: Option<TimeMs>,
}

impl Job {
    /// Roughly what this job takes when encoded: enough to compare live data with log history.
    pub fn approx_bytes(&self) -> u64 {
        let payload = self.payload.as_ref().map_or(0, |payload| payload.data.len() + payload.encoding.len());
        let trace = self
            .trace_context
            .as_ref()
            .map_or(0, |context| context.traceparent.len() + context.tracestate.as_ref().map_or(0, String::len));
        let custom: u64 = self.custom.iter().map(|(key, value)| key.len() as u64 + value.size_bytes() + 5).sum();
        (payload + trace + self.queue.len() + self.job_type.len()) as u64 + custom + 80
    }

    /// This job with its payload's bytes at `data` instead, built without copying the bytes it
    /// held (a job with no payload is returned as it is).
    pub fn with_payload_data(&self, data: PayloadData) -> Job {
        Job {
            id: self.id,
            seq: self.seq,
            queue: self.queue.clone(),
            job_type: self.job_type.clone(),
            payload: self.payload.as_ref().map(|payload| JobPayload { encoding: payload.encoding.clone(), data }),
            priority: self.priority,
            trace_context: self.trace_context.clone(),
            enqueued_at_ms: self.enqueued_at_ms,
            max_attempts: self.max_attempts,
            custom: self.custom.clone(),
            scheduled_at_ms: self.scheduled_at_ms,
        }
    }
}

/// Where a live job is, with the attempt that its next (or current) delivery carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Ready { attempt: u32 },
    Scheduled { attempt: u32, due_ms: TimeMs },
    Inflight { attempt: u32, lease_deadline_ms: TimeMs },
}

impl JobState {
    pub fn attempt(&self) -> u32 {
        match *self {
            JobState::Ready { attempt } | JobState::Scheduled { attempt, .. } | JobState::Inflight { attempt, .. } => {
                attempt
            }
        }
    }
}

/// A job handed to a worker under a lease.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    pub job: Arc<Job>,
    pub attempt: u32,
    pub lease_deadline_ms: TimeMs,
}

/// Why a job was dead-lettered (wire values of `DeadLetterCause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeadLetterCause {
    /// Nacked on its final attempt.
    AttemptsExhausted = 1,
    /// Nacked with the dead-letter strategy.
    Rejected = 2,
    /// Its lease ran out on the final attempt.
    LeaseExpired = 3,
    /// Dead-lettered by an operator.
    Admin = 4,
    /// Cancelled by id before it completed.
    Cancelled = 5,
}

/// A dead job kept for inspection while dead-letter retention is on.
#[derive(Clone, Debug, PartialEq)]
pub struct DeadLetter {
    pub job: Arc<Job>,
    pub cause: DeadLetterCause,
    pub failed_at_ms: TimeMs,
    pub final_attempt: u32,
    pub last_reason: Option<String>,
}

/// How much of a cycle's writes is made durable before its callers are answered. The log obeys
/// it; the configuration (`storage.persist_mode`) names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PersistMode {
    /// fsync: data and metadata on disk.
    #[default]
    SyncAll,
    /// fdatasync: data on disk, metadata may lag.
    SyncData,
    /// Handed to the operating system only: survives a crash of the process, not of the machine.
    Buffer,
}

impl PersistMode {
    /// Every mode, by its configuration name.
    pub const ALL: [(&'static str, PersistMode); 3] =
        [("sync_all", PersistMode::SyncAll), ("sync_data", PersistMode::SyncData), ("buffer", PersistMode::Buffer)];

    /// The name the configuration uses: `sync_all`, `sync_data`, `buffer`.
    pub fn name(self) -> &'static str {
        PersistMode::ALL.iter().find(|(_, mode)| *mode == self).map_or("sync_all", |(name, _)| name)
    }

    /// The mode of a configuration name.
    pub fn parse(name: &str) -> Option<PersistMode> {
        PersistMode::ALL.iter().find(|(known, _)| *known == name).map(|(_, mode)| *mode)
    }
}

/// A job of type `t` in queue `q`, with no payload, for the crate's unit tests.
#[cfg(test)]
pub(crate) fn test_job(id: JobId, seq: u64) -> Job {
    Job {
        id,
        seq,
        queue: Arc::from("q"),
        job_type: Arc::from("t"),
        payload: None,
        priority: 0,
        trace_context: None,
        enqueued_at_ms: 0,
        max_attempts: 1,
        custom: Custom::default(),
        scheduled_at_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_job_fits_the_160_byte_allocation_class_with_its_arc_counts() {
        // A million queued jobs must stay within the memory budget (docs/benchmarks.md): one
        // more field here moves every job up an allocation class.
        assert!(std::mem::size_of::<Job>() + 16 <= 160, "Job is {} bytes", std::mem::size_of::<Job>());
    }

    #[test]
    fn persist_modes_round_trip_through_their_names() {
        for (name, mode) in PersistMode::ALL {
            assert_eq!((mode.name(), PersistMode::parse(name)), (name, Some(mode)));
        }
        assert_eq!(PersistMode::parse("fsync"), None);
    }

    #[test]
    fn custom_metadata_allocates_only_when_it_has_entries() {
        let empty = Custom::from(BTreeMap::new());
        assert_eq!(empty, Custom::default());
        assert!(empty.is_empty() && empty.get("k").is_none());
        let mut custom: Custom =
            [("b".to_string(), Primitive::Int(2)), ("a".to_string(), Primitive::Bool(true))].into_iter().collect();
        assert_eq!(custom.insert("c".into(), Primitive::Double(0.5)), None);
        let keys: Vec<&str> = (&custom).into_iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"], "entries keep key order");
        assert_eq!(custom.get("b"), Some(&Primitive::Int(2)));
    }
}
