//! Helpers shared by the sepp-log integration tests: a tiny seeded PRNG (splitmix64) that also
//! builds records with every kind of field, and (in `disk`) helpers for data directories.

#![allow(dead_code)]

pub mod disk;

use std::collections::BTreeMap;
use std::sync::Arc;

use sepp_core::{
    DeadLetter, DeadLetterCause, Job, JobId, JobPayload, JobState, PayloadData, Primitive, Record, TimeMs, TraceContext,
};

/// A payload held in memory, as the committer hands it to the log.
pub fn inline_payload(data: Vec<u8>, encoding: &str) -> JobPayload {
    JobPayload { encoding: encoding.into(), data: PayloadData::Inline(data.into_boxed_slice()) }
}

/// splitmix64: small, fast and good enough to drive property tests from a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "below(0)");
        self.next_u64() % bound
    }

    /// A number in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn job_id(&mut self) -> JobId {
        JobId::from_u64_pair(self.next_u64(), self.next_u64())
    }

    /// A short string, sometimes empty, sometimes with multi-byte characters.
    pub fn text(&mut self) -> String {
        let pieces = ["", "a", "queue", "é", "日本", "🦀", "-", " ", "x.y"];
        (0..self.below(4)).map(|_| *self.pick(&pieces)).collect()
    }

    pub fn time_ms(&mut self) -> TimeMs {
        match self.below(4) {
            0 => self.next_u64() as i64,
            1 => -(self.below(1_000_000) as i64),
            _ => 1_700_000_000_000 + self.below(1 << 40) as i64,
        }
    }

    fn opt_time_ms(&mut self) -> Option<TimeMs> {
        self.percent(50).then(|| self.time_ms())
    }

    fn opt_text(&mut self) -> Option<String> {
        self.percent(50).then(|| self.text())
    }

    pub fn cause(&mut self) -> DeadLetterCause {
        *self.pick(&[
            DeadLetterCause::AttemptsExhausted,
            DeadLetterCause::Rejected,
            DeadLetterCause::LeaseExpired,
            DeadLetterCause::Admin,
        ])
    }

    pub fn job_state(&mut self) -> JobState {
        let attempt = self.range(1, 100) as u32;
        match self.below(3) {
            0 => JobState::Ready { attempt },
            1 => JobState::Scheduled { attempt, due_ms: self.time_ms() },
            _ => JobState::Inflight { attempt, lease_deadline_ms: self.time_ms() },
        }
    }

    /// A job with random fields. Custom doubles are never NaN, so records compare equal.
    pub fn job(&mut self) -> Arc<Job> {
        let mut custom = BTreeMap::new();
        for _ in 0..self.below(4) {
            let value = match self.below(4) {
                0 => Primitive::String(self.text()),
                1 => Primitive::Double(self.below(1 << 20) as f64 / 7.0 - 1000.0),
                2 => Primitive::Int(self.next_u64() as i64),
                _ => Primitive::Bool(self.percent(50)),
            };
            custom.insert(format!("k{}{}", self.below(10), self.text()), value);
        }
        let payload_len = self.below(64) as usize;
        Arc::new(Job {
            id: self.job_id(),
            seq: self.next_u64() >> self.below(64),
            queue: Arc::from(self.text()),
            job_type: Arc::from(self.text()),
            payload: self.percent(70).then(|| {
                let data = self.bytes(payload_len);
                inline_payload(data, &self.text())
            }),
            priority: self.below(10) as u8,
            trace_context: self
                .percent(50)
                .then(|| Box::new(TraceContext { traceparent: self.text(), tracestate: self.opt_text() })),
            enqueued_at_ms: self.time_ms(),
            max_attempts: self.next_u64() as u32,
            custom: custom.into(),
            scheduled_at_ms: self.opt_time_ms(),
        })
    }

    /// A record of any variant with random fields.
    pub fn record(&mut self) -> Record {
        match self.below(12) {
            0 => Record::JobAccepted { job: self.job(), due_ms: self.opt_time_ms() },
            1 => Record::DedupBound {
                queue: Arc::from(self.text()),
                key: self.text(),
                job_id: self.job_id(),
                deadline_ms: self.time_ms(),
            },
            2 => Record::Leased { job_id: self.job_id(), lease_deadline_ms: self.time_ms() },
            3 => Record::LeaseExtended { job_id: self.job_id(), lease_deadline_ms: self.time_ms() },
            4 => Record::Acked { job_id: self.job_id() },
            5 => Record::Retried { job_id: self.job_id(), attempt: self.next_u64() as u32, due_ms: self.opt_time_ms() },
            6 => Record::Promoted { job_id: self.job_id() },
            7 => Record::DeadLettered {
                job_id: self.job_id(),
                cause: self.cause(),
                failed_at_ms: self.time_ms(),
                last_reason: self.opt_text(),
                kept: self.percent(50),
            },
            8 => Record::DeadLetterRemoved { job_id: self.job_id() },
            9 => Record::DedupExpired { queue: Arc::from(self.text()), key: self.text() },
            10 => Record::JobRestored { job: self.job(), state: self.job_state() },
            _ => Record::DeadLetterRestored {
                dead: DeadLetter {
                    job: self.job(),
                    cause: self.cause(),
                    failed_at_ms: self.time_ms(),
                    final_attempt: self.next_u64() as u32,
                    last_reason: self.opt_text(),
                },
            },
        }
    }

    /// Between `low` and `high` random records.
    pub fn records(&mut self, low: u64, high: u64) -> Vec<Record> {
        (0..self.range(low, high)).map(|_| self.record()).collect()
    }
}

/// The name of a record's variant (an exhaustive match, so a new variant must be named here).
pub fn variant(record: &Record) -> &'static str {
    match record {
        Record::JobAccepted { .. } => "JobAccepted",
        Record::DedupBound { .. } => "DedupBound",
        Record::Leased { .. } => "Leased",
        Record::LeaseExtended { .. } => "LeaseExtended",
        Record::Acked { .. } => "Acked",
        Record::Retried { .. } => "Retried",
        Record::Promoted { .. } => "Promoted",
        Record::DeadLettered { .. } => "DeadLettered",
        Record::DeadLetterRemoved { .. } => "DeadLetterRemoved",
        Record::DedupExpired { .. } => "DedupExpired",
        Record::JobRestored { .. } => "JobRestored",
        Record::DeadLetterRestored { .. } => "DeadLetterRestored",
        Record::Purged { .. } => "Purged",
        Record::DeadLetterRequeued { .. } => "DeadLetterRequeued",
        Record::QueueClosed { .. } => "QueueClosed",
        Record::QueueReopened { .. } => "QueueReopened",
        Record::Audited { .. } => "Audited",
        Record::QueuePaused { .. } => "QueuePaused",
        Record::QueueResumed { .. } => "QueueResumed",
        Record::LeaseCancelled { .. } => "LeaseCancelled",
        Record::ScheduleSet { .. } => "ScheduleSet",
        Record::ScheduleDeleted { .. } => "ScheduleDeleted",
        Record::ScheduleFired { .. } => "ScheduleFired",
        Record::SequenceRestored { .. } => "SequenceRestored",
        Record::RateAdvanced { .. } => "RateAdvanced",
        Record::KeyRateAdvanced { .. } => "KeyRateAdvanced",
        Record::KeyRateForgotten { .. } => "KeyRateForgotten",
    }
}
