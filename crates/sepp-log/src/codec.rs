//! The binary encoding of core records: what one record looks like inside a frame.
//!
//! Little-endian fixed-width integers, length-prefixed strings and bytes, one tag byte per
//! record and per optional value. The encoding is internal to the data directory; the format
//! version (the data directory's `FORMAT` file, written and checked in `durable/files.rs`)
//! changes whenever it does. Decoding never panics on any input: every malformed byte sequence
//! is a [`DecodeError`].

use std::collections::BTreeMap;
use std::sync::Arc;

use sepp_core::schedule::{Cadence, CatchUp, JobTemplate, Overlap, Schedule, ScheduleSpec};
use sepp_core::{
    AuditEntry, DeadLetter, DeadLetterCause, Job, JobId, JobPayload, JobState, Payload, PayloadData, Primitive, Record,
    StoredPayload, TimeMs, TraceContext,
};

/// Payloads up to this size stay in memory; larger ones are read back from the log's files.
pub const INLINE_PAYLOAD_MAX: usize = 32;

/// Where the bytes of a large payload landed in an encoding buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub job_id: JobId,
    /// Offset of the payload bytes from the start of the buffer.
    pub offset: usize,
    pub len: u32,
}

/// Where decoded bytes come from: decoding with a `Source` leaves large payloads in place
/// (`PayloadData::Stored`) instead of copying them into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    pub file: u32,
    /// File offset of the first byte handed to the decoder.
    pub offset: u64,
}

/// Bytes that do not decode as a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed record: {0}")]
pub struct DecodeError(pub &'static str);

mod tag {
    pub const JOB_ACCEPTED: u8 = 1;
    pub const DEDUP_BOUND: u8 = 2;
    pub const LEASED: u8 = 3;
    pub const LEASE_EXTENDED: u8 = 4;
    pub const ACKED: u8 = 5;
    pub const RETRIED: u8 = 6;
    pub const PROMOTED: u8 = 7;
    pub const DEAD_LETTERED: u8 = 8;
    pub const DEAD_LETTER_REMOVED: u8 = 9;
    pub const DEDUP_EXPIRED: u8 = 10;
    pub const JOB_RESTORED: u8 = 11;
    pub const DEAD_LETTER_RESTORED: u8 = 12;
    pub const PURGED: u8 = 13;
    pub const DEAD_LETTER_REQUEUED: u8 = 14;
    pub const QUEUE_CLOSED: u8 = 15;
    pub const QUEUE_REOPENED: u8 = 16;
    pub const AUDITED: u8 = 17;
    pub const QUEUE_PAUSED: u8 = 18;
    pub const QUEUE_RESUMED: u8 = 19;
    pub const LEASE_CANCELLED: u8 = 20;
    pub const SCHEDULE_SET: u8 = 21;
    pub const SCHEDULE_DELETED: u8 = 22;
    pub const SCHEDULE_FIRED: u8 = 23;
    pub const SEQUENCE_RESTORED: u8 = 24;
    pub const RATE_ADVANCED: u8 = 25;
    pub const KEY_RATE_ADVANCED: u8 = 26;
    pub const KEY_RATE_FORGOTTEN: u8 = 27;
}

/// Appends the encoding of `record` to `out`. Every payload must be inline (the checkpoint
/// writer loads stored ones first); large payloads are reported in `placements`.
pub fn encode(record: &Record, out: &mut Vec<u8>, placements: &mut Vec<Placement>) {
    let mut w = Writer { out, placements };
    match record {
        Record::JobAccepted { job, due_ms } => {
            w.u8(tag::JOB_ACCEPTED);
            w.job(job);
            w.opt_i64(*due_ms);
        }
        Record::DedupBound { queue, key, job_id, deadline_ms } => {
            w.u8(tag::DEDUP_BOUND);
            w.str(queue);
            w.str(key);
            w.id(job_id);
            w.i64(*deadline_ms);
        }
        Record::Leased { job_id, lease_deadline_ms } => {
            w.u8(tag::LEASED);
            w.id(job_id);
            w.i64(*lease_deadline_ms);
        }
        Record::LeaseExtended { job_id, lease_deadline_ms } => {
            w.u8(tag::LEASE_EXTENDED);
            w.id(job_id);
            w.i64(*lease_deadline_ms);
        }
        Record::Acked { job_id } => {
            w.u8(tag::ACKED);
            w.id(job_id);
        }
        Record::Retried { job_id, attempt, due_ms } => {
            w.u8(tag::RETRIED);
            w.id(job_id);
            w.u32(*attempt);
            w.opt_i64(*due_ms);
        }
        Record::Promoted { job_id } => {
            w.u8(tag::PROMOTED);
            w.id(job_id);
        }
        Record::DeadLettered { job_id, cause, failed_at_ms, last_reason, kept } => {
            w.u8(tag::DEAD_LETTERED);
            w.id(job_id);
            w.u8(*cause as u8);
            w.i64(*failed_at_ms);
            w.opt_str(last_reason.as_deref());
            w.u8(u8::from(*kept));
        }
        Record::DeadLetterRemoved { job_id } => {
            w.u8(tag::DEAD_LETTER_REMOVED);
            w.id(job_id);
        }
        Record::DedupExpired { queue, key } => {
            w.u8(tag::DEDUP_EXPIRED);
            w.str(queue);
            w.str(key);
        }
        Record::JobRestored { job, state } => {
            w.u8(tag::JOB_RESTORED);
            w.job(job);
            w.job_state(state);
        }
        Record::DeadLetterRestored { dead } => {
            w.u8(tag::DEAD_LETTER_RESTORED);
            w.job(&dead.job);
            w.u8(dead.cause as u8);
            w.i64(dead.failed_at_ms);
            w.u32(dead.final_attempt);
            w.opt_str(dead.last_reason.as_deref());
        }
        Record::Purged { job_id } => {
            w.u8(tag::PURGED);
            w.id(job_id);
        }
        Record::DeadLetterRequeued { job_id, seq, enqueued_at_ms } => {
            w.u8(tag::DEAD_LETTER_REQUEUED);
            w.id(job_id);
            w.u64(*seq);
            w.i64(*enqueued_at_ms);
        }
        Record::QueueClosed { queue, until_ms } => {
            w.u8(tag::QUEUE_CLOSED);
            w.str(queue);
            w.i64(*until_ms);
        }
        Record::QueueReopened { queue } => {
            w.u8(tag::QUEUE_REOPENED);
            w.str(queue);
        }
        Record::QueuePaused { queue, until_ms } => {
            w.u8(tag::QUEUE_PAUSED);
            w.str(queue);
            w.opt_i64(*until_ms);
        }
        Record::QueueResumed { queue } => {
            w.u8(tag::QUEUE_RESUMED);
            w.str(queue);
        }
        Record::LeaseCancelled { job_id, at_ms, reason } => {
            w.u8(tag::LEASE_CANCELLED);
            w.id(job_id);
            w.i64(*at_ms);
            w.opt_str(reason.as_deref());
        }
        Record::ScheduleSet { schedule } => {
            w.u8(tag::SCHEDULE_SET);
            w.schedule(schedule);
        }
        Record::ScheduleDeleted { id } => {
            w.u8(tag::SCHEDULE_DELETED);
            w.str(id);
        }
        Record::RateAdvanced { queue, tat_us } => {
            w.u8(tag::RATE_ADVANCED);
            w.str(queue);
            w.i64(*tat_us);
        }
        Record::KeyRateAdvanced { queue, key, tat_us } => {
            w.u8(tag::KEY_RATE_ADVANCED);
            w.str(queue);
            w.str(key);
            w.i64(*tat_us);
        }
        Record::KeyRateForgotten { queue, key } => {
            w.u8(tag::KEY_RATE_FORGOTTEN);
            w.str(queue);
            w.str(key);
        }
        Record::SequenceRestored { next_seq } => {
            w.u8(tag::SEQUENCE_RESTORED);
            w.u64(*next_seq);
        }
        Record::ScheduleFired { id, slot_ms, next_ms, job_id } => {
            w.u8(tag::SCHEDULE_FIRED);
            w.str(id);
            w.i64(*slot_ms);
            w.i64(*next_ms);
            match job_id {
                Some(job_id) => {
                    w.u8(1);
                    w.id(job_id);
                }
                None => w.u8(0),
            }
        }
        Record::Audited { entry } => {
            w.u8(tag::AUDITED);
            w.u64(entry.seq);
            w.i64(entry.ts_ms);
            w.str(&entry.actor);
            w.str(&entry.role);
            w.str(&entry.action);
            w.str(&entry.details);
        }
    }
}

/// Decodes one record from the front of `bytes`, returning it and the bytes it used. With a
/// `source`, large payloads are returned as `Stored` places in that file instead of copies.
pub fn decode(bytes: &[u8], source: Option<Source>) -> Result<(Record, usize), DecodeError> {
    let mut r = Reader { bytes, at: 0, source };
    let record = match r.u8()? {
        tag::JOB_ACCEPTED => Record::JobAccepted { job: Arc::new(r.job()?), due_ms: r.opt_i64()? },
        tag::DEDUP_BOUND => {
            Record::DedupBound { queue: Arc::from(r.str()?), key: r.str()?, job_id: r.id()?, deadline_ms: r.i64()? }
        }
        tag::LEASED => Record::Leased { job_id: r.id()?, lease_deadline_ms: r.i64()? },
        tag::LEASE_EXTENDED => Record::LeaseExtended { job_id: r.id()?, lease_deadline_ms: r.i64()? },
        tag::ACKED => Record::Acked { job_id: r.id()? },
        tag::RETRIED => Record::Retried { job_id: r.id()?, attempt: r.u32()?, due_ms: r.opt_i64()? },
        tag::PROMOTED => Record::Promoted { job_id: r.id()? },
        tag::DEAD_LETTERED => Record::DeadLettered {
            job_id: r.id()?,
            cause: r.cause()?,
            failed_at_ms: r.i64()?,
            last_reason: r.opt_str()?,
            kept: r.bool()?,
        },
        tag::DEAD_LETTER_REMOVED => Record::DeadLetterRemoved { job_id: r.id()? },
        tag::DEDUP_EXPIRED => Record::DedupExpired { queue: Arc::from(r.str()?), key: r.str()? },
        tag::JOB_RESTORED => Record::JobRestored { job: Arc::new(r.job()?), state: r.job_state()? },
        tag::DEAD_LETTER_RESTORED => Record::DeadLetterRestored {
            dead: DeadLetter {
                job: Arc::new(r.job()?),
                cause: r.cause()?,
                failed_at_ms: r.i64()?,
                final_attempt: r.u32()?,
                last_reason: r.opt_str()?,
            },
        },
        tag::PURGED => Record::Purged { job_id: r.id()? },
        tag::DEAD_LETTER_REQUEUED => {
            Record::DeadLetterRequeued { job_id: r.id()?, seq: r.u64()?, enqueued_at_ms: r.i64()? }
        }
        tag::QUEUE_CLOSED => Record::QueueClosed { queue: Arc::from(r.str()?), until_ms: r.i64()? },
        tag::QUEUE_REOPENED => Record::QueueReopened { queue: Arc::from(r.str()?) },
        tag::QUEUE_PAUSED => Record::QueuePaused { queue: Arc::from(r.str()?), until_ms: r.opt_i64()? },
        tag::QUEUE_RESUMED => Record::QueueResumed { queue: Arc::from(r.str()?) },
        tag::LEASE_CANCELLED => Record::LeaseCancelled { job_id: r.id()?, at_ms: r.i64()?, reason: r.opt_str()? },
        tag::SCHEDULE_SET => Record::ScheduleSet { schedule: Box::new(r.schedule()?) },
        tag::SCHEDULE_DELETED => Record::ScheduleDeleted { id: r.str()? },
        tag::RATE_ADVANCED => Record::RateAdvanced { queue: Arc::from(r.str()?), tat_us: r.i64()? },
        tag::KEY_RATE_ADVANCED => {
            Record::KeyRateAdvanced { queue: Arc::from(r.str()?), key: Arc::from(r.str()?), tat_us: r.i64()? }
        }
        tag::KEY_RATE_FORGOTTEN => Record::KeyRateForgotten { queue: Arc::from(r.str()?), key: Arc::from(r.str()?) },
        tag::SEQUENCE_RESTORED => Record::SequenceRestored { next_seq: r.u64()? },
        tag::SCHEDULE_FIRED => Record::ScheduleFired {
            id: r.str()?,
            slot_ms: r.i64()?,
            next_ms: r.i64()?,
            job_id: if r.flag()? { Some(r.id()?) } else { None },
        },
        tag::AUDITED => Record::Audited {
            entry: Arc::new(AuditEntry {
                seq: r.u64()?,
                ts_ms: r.i64()?,
                actor: r.str()?,
                role: r.str()?,
                action: r.str()?,
                details: r.str()?,
            }),
        },
        _ => return Err(DecodeError("unknown record tag")),
    };
    Ok((record, r.at))
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
    placements: &'a mut Vec<Placement>,
}

impl Writer<'_> {
    fn u8(&mut self, value: u8) {
        self.out.push(value);
    }
    fn u32(&mut self, value: u32) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }
    fn u64(&mut self, value: u64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }
    fn i64(&mut self, value: i64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }
    fn f64(&mut self, value: f64) {
        self.out.extend_from_slice(&value.to_bits().to_le_bytes());
    }
    fn bytes(&mut self, value: &[u8]) {
        self.u32(value.len() as u32);
        self.out.extend_from_slice(value);
    }
    fn str(&mut self, value: &str) {
        self.bytes(value.as_bytes());
    }
    fn id(&mut self, id: &JobId) {
        self.out.extend_from_slice(id.as_bytes());
    }
    fn opt_i64(&mut self, value: Option<i64>) {
        match value {
            Some(value) => {
                self.u8(1);
                self.i64(value);
            }
            None => self.u8(0),
        }
    }
    fn opt_str(&mut self, value: Option<&str>) {
        match value {
            Some(value) => {
                self.u8(1);
                self.str(value);
            }
            None => self.u8(0),
        }
    }
    fn job_state(&mut self, state: &JobState) {
        match *state {
            JobState::Ready { attempt } => {
                self.u8(0);
                self.u32(attempt);
            }
            JobState::Scheduled { attempt, due_ms } => {
                self.u8(1);
                self.u32(attempt);
                self.i64(due_ms);
            }
            JobState::Inflight { attempt, lease_deadline_ms } => {
                self.u8(2);
                self.u32(attempt);
                self.i64(lease_deadline_ms);
            }
        }
    }
    fn job(&mut self, job: &Job) {
        self.id(&job.id);
        self.u64(job.seq);
        self.str(&job.queue);
        self.str(&job.job_type);
        match &job.payload {
            Some(payload) => {
                let PayloadData::Inline(data) = &payload.data else {
                    panic!("stored payloads are loaded before they are encoded");
                };
                self.u8(1);
                self.str(&payload.encoding);
                self.u32(data.len() as u32);
                if data.len() > INLINE_PAYLOAD_MAX {
                    self.placements.push(Placement { job_id: job.id, offset: self.out.len(), len: data.len() as u32 });
                }
                self.out.extend_from_slice(data);
            }
            None => self.u8(0),
        }
        self.u8(job.priority);
        match &job.trace_context {
            Some(context) => {
                self.u8(1);
                self.str(&context.traceparent);
                self.opt_str(context.tracestate.as_deref());
            }
            None => self.u8(0),
        }
        self.i64(job.enqueued_at_ms);
        self.u32(job.max_attempts);
        self.custom(job.custom.iter());
        self.opt_i64(job.scheduled_at_ms);
    }
    fn custom<'a>(&mut self, entries: impl ExactSizeIterator<Item = (&'a String, &'a Primitive)>) {
        self.u32(entries.len() as u32);
        for (key, value) in entries {
            self.str(key);
            match value {
                Primitive::String(text) => {
                    self.u8(0);
                    self.str(text);
                }
                Primitive::Double(number) => {
                    self.u8(1);
                    self.f64(*number);
                }
                Primitive::Int(number) => {
                    self.u8(2);
                    self.i64(*number);
                }
                Primitive::Bool(flag) => {
                    self.u8(3);
                    self.u8(u8::from(*flag));
                }
            }
        }
    }
    fn opt_u32(&mut self, value: Option<u32>) {
        match value {
            Some(value) => {
                self.u8(1);
                self.u32(value);
            }
            None => self.u8(0),
        }
    }
    fn schedule(&mut self, schedule: &Schedule) {
        let spec = &schedule.spec;
        self.str(&spec.id);
        match &spec.cadence {
            Cadence::Cron { expression, time_zone } => {
                self.u8(0);
                self.str(expression);
                self.str(time_zone);
            }
            Cadence::Every { interval_ms } => {
                self.u8(1);
                self.u64(*interval_ms);
            }
        }
        self.u8(match spec.overlap {
            Overlap::Skip => 0,
            Overlap::Allow => 1,
        });
        self.u8(match spec.catch_up {
            CatchUp::Latest => 0,
            CatchUp::Skip => 1,
        });
        let template = &spec.template;
        self.str(&template.queue);
        self.str(&template.job_type);
        match &template.payload {
            Some(payload) => {
                self.u8(1);
                self.str(&payload.encoding);
                self.bytes(&payload.data);
            }
            None => self.u8(0),
        }
        self.opt_u32(template.priority);
        self.opt_u32(template.max_attempts);
        self.custom(template.custom.iter());
        self.i64(schedule.anchor_ms);
        self.i64(schedule.next_ms);
        self.opt_i64(schedule.last_slot_ms);
        match &schedule.last_job {
            Some(job_id) => {
                self.u8(1);
                self.id(job_id);
            }
            None => self.u8(0),
        }
        self.u64(schedule.fired);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    source: Option<Source>,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(len).ok_or(DecodeError("length overflow"))?;
        let slice = self.bytes.get(self.at..end).ok_or(DecodeError("record ends early"))?;
        self.at = end;
        Ok(slice)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError("invalid boolean")),
        }
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<TimeMs, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    fn f64(&mut self) -> Result<f64, DecodeError> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let len = self.u32()? as usize;
        Ok(self.take(len)?.to_vec())
    }
    fn str(&mut self) -> Result<String, DecodeError> {
        String::from_utf8(self.bytes()?).map_err(|_| DecodeError("invalid UTF-8"))
    }
    fn id(&mut self) -> Result<JobId, DecodeError> {
        Ok(JobId::from_bytes(self.array()?))
    }
    fn flag(&mut self) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError("invalid option tag")),
        }
    }
    fn opt_i64(&mut self) -> Result<Option<i64>, DecodeError> {
        Ok(if self.flag()? { Some(self.i64()?) } else { None })
    }
    fn opt_str(&mut self) -> Result<Option<String>, DecodeError> {
        Ok(if self.flag()? { Some(self.str()?) } else { None })
    }
    fn cause(&mut self) -> Result<DeadLetterCause, DecodeError> {
        Ok(match self.u8()? {
            1 => DeadLetterCause::AttemptsExhausted,
            2 => DeadLetterCause::Rejected,
            3 => DeadLetterCause::LeaseExpired,
            4 => DeadLetterCause::Admin,
            5 => DeadLetterCause::Cancelled,
            _ => return Err(DecodeError("unknown dead-letter cause")),
        })
    }
    fn job_state(&mut self) -> Result<JobState, DecodeError> {
        Ok(match self.u8()? {
            0 => JobState::Ready { attempt: self.u32()? },
            1 => JobState::Scheduled { attempt: self.u32()?, due_ms: self.i64()? },
            2 => JobState::Inflight { attempt: self.u32()?, lease_deadline_ms: self.i64()? },
            _ => return Err(DecodeError("unknown job state")),
        })
    }
    fn payload(&mut self) -> Result<JobPayload, DecodeError> {
        let encoding = Arc::from(self.str()?);
        let len = self.u32()?;
        let offset = self.at;
        let bytes = self.take(len as usize)?;
        let data = match self.source {
            Some(source) if bytes.len() > INLINE_PAYLOAD_MAX => {
                PayloadData::Stored(StoredPayload { file: source.file, offset: source.offset + offset as u64, len })
            }
            _ => PayloadData::Inline(bytes.into()),
        };
        Ok(JobPayload { encoding, data })
    }

    fn job(&mut self) -> Result<Job, DecodeError> {
        let id = self.id()?;
        let seq = self.u64()?;
        let queue = Arc::from(self.str()?);
        let job_type = Arc::from(self.str()?);
        let payload = if self.flag()? { Some(self.payload()?) } else { None };
        let priority = self.u8()?;
        if priority > 9 {
            return Err(DecodeError("priority above 9"));
        }
        let trace_context = if self.flag()? {
            Some(Box::new(TraceContext { traceparent: self.str()?, tracestate: self.opt_str()? }))
        } else {
            None
        };
        let enqueued_at_ms = self.i64()?;
        let max_attempts = self.u32()?;
        let custom = self.custom()?;
        let scheduled_at_ms = self.opt_i64()?;
        Ok(Job {
            id,
            seq,
            queue,
            job_type,
            payload,
            priority,
            trace_context,
            enqueued_at_ms,
            max_attempts,
            custom: custom.into(),
            scheduled_at_ms,
        })
    }
    fn custom(&mut self) -> Result<BTreeMap<String, Primitive>, DecodeError> {
        let entries = self.u32()?;
        let mut custom = BTreeMap::new();
        for _ in 0..entries {
            let key = self.str()?;
            let value = match self.u8()? {
                0 => Primitive::String(self.str()?),
                1 => Primitive::Double(self.f64()?),
                2 => Primitive::Int(self.i64()?),
                3 => Primitive::Bool(self.bool()?),
                _ => return Err(DecodeError("unknown custom value type")),
            };
            custom.insert(key, value);
        }
        Ok(custom)
    }
    fn opt_u32(&mut self) -> Result<Option<u32>, DecodeError> {
        Ok(if self.flag()? { Some(self.u32()?) } else { None })
    }
    fn schedule(&mut self) -> Result<Schedule, DecodeError> {
        let id = self.str()?;
        let cadence = match self.u8()? {
            0 => Cadence::Cron { expression: self.str()?, time_zone: self.str()? },
            1 => Cadence::Every { interval_ms: self.u64()? },
            _ => return Err(DecodeError("unknown schedule cadence")),
        };
        let overlap = match self.u8()? {
            0 => Overlap::Skip,
            1 => Overlap::Allow,
            _ => return Err(DecodeError("unknown overlap policy")),
        };
        let catch_up = match self.u8()? {
            0 => CatchUp::Latest,
            1 => CatchUp::Skip,
            _ => return Err(DecodeError("unknown catch-up policy")),
        };
        let queue = self.str()?;
        let job_type = self.str()?;
        let payload = if self.flag()? { Some(Payload { encoding: self.str()?, data: self.bytes()? }) } else { None };
        let template = JobTemplate {
            queue,
            job_type,
            payload,
            priority: self.opt_u32()?,
            max_attempts: self.opt_u32()?,
            custom: self.custom()?,
        };
        Ok(Schedule {
            spec: ScheduleSpec { id, cadence, template, overlap, catch_up },
            anchor_ms: self.i64()?,
            next_ms: self.i64()?,
            last_slot_ms: self.opt_i64()?,
            last_job: if self.flag()? { Some(self.id()?) } else { None },
            fired: self.u64()?,
        })
    }
}
