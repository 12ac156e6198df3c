//! Dead letters: [`DeadLetterRecord`], drained from the server, and its [`DeadLetterCause`].

use std::collections::HashMap;
use std::time::SystemTime;

use super::{EnqueueRequest, Payload, Primitive, Priority, TraceContext};

/// Why a job was dead-lettered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeadLetterCause {
    /// Not given, or a cause this client version does not know.
    Unspecified,
    /// The job failed on its last allowed attempt.
    AttemptsExhausted,
    /// A worker nacked it with [`RetryDirective::DeadLetter`](crate::client::RetryDirective::DeadLetter).
    Rejected,
    /// Its lease expired on its last allowed attempt.
    LeaseExpired,
    /// An administrator moved it.
    Admin,
    /// It was cancelled by id ([`SeppClient::cancel`](crate::client::SeppClient::cancel) or the
    /// admin API). Servers older than 0.2 never report it.
    Cancelled,
}

/// A dead-lettered job, as drained (and so removed) from the server.
///
/// [`to_enqueue_request`](Self::to_enqueue_request) turns it back into a request to replay it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetterRecord {
    /// The queue the job was in.
    pub queue: String,
    /// The job id.
    pub job_id: String,
    /// The job type.
    pub job_type: String,
    /// The payload, if any.
    pub payload: Option<Payload>,
    /// The priority.
    pub priority: Priority,
    /// The attempts the job was allowed.
    pub max_attempts: u32,
    /// The custom metadata.
    pub custom: HashMap<String, Primitive>,
    /// The producer's trace context, if it sent a valid one.
    pub trace_context: Option<TraceContext>,
    /// When the job was enqueued.
    pub enqueued_at: SystemTime,
    /// When the job was scheduled for, if it was.
    pub scheduled_at: Option<SystemTime>,
    /// Why it was dead-lettered.
    pub cause: DeadLetterCause,
    /// When it was dead-lettered.
    pub failed_at: SystemTime,
    /// The attempt that failed last.
    pub final_attempt: u32,
    /// The last nack reason, if any.
    pub last_reason: Option<String>,
}

impl DeadLetterRecord {
    /// A fresh request that replays this job on the same queue: it copies the job type,
    /// payload, priority, max attempts, custom metadata and trace context, and deliberately
    /// sets no idempotency key (the original key would deduplicate the replay away) and no
    /// scheduled time (the replay runs at once).
    pub fn to_enqueue_request(&self) -> EnqueueRequest {
        EnqueueRequest {
            queue: self.queue.clone(),
            job_type: self.job_type.clone(),
            payload: self.payload.clone(),
            idempotency_key: None,
            priority: Some(self.priority),
            max_attempts: Some(self.max_attempts),
            custom: self.custom.clone(),
            trace_context: self.trace_context.clone(),
            scheduled_at: None,
        }
    }
}

impl From<DeadLetterRecord> for EnqueueRequest {
    fn from(record: DeadLetterRecord) -> Self {
        record.to_enqueue_request()
    }
}

impl From<&DeadLetterRecord> for EnqueueRequest {
    fn from(record: &DeadLetterRecord) -> Self {
        record.to_enqueue_request()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record() -> DeadLetterRecord {
        DeadLetterRecord {
            queue: "q".into(),
            job_id: "id".into(),
            job_type: "t".into(),
            payload: Some(Payload::new(b"x".to_vec(), "text/plain")),
            priority: Priority::P3,
            max_attempts: 4,
            custom: HashMap::from([("k".to_owned(), Primitive::Int(1))]),
            trace_context: Some(TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap()),
            enqueued_at: SystemTime::UNIX_EPOCH + Duration::from_secs(10),
            scheduled_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(20)),
            cause: DeadLetterCause::Rejected,
            failed_at: SystemTime::UNIX_EPOCH + Duration::from_secs(30),
            final_attempt: 2,
            last_reason: Some("bad".into()),
        }
    }

    #[test]
    fn a_replay_copies_the_job_but_not_its_key_or_schedule() {
        let record = record();
        let request = record.to_enqueue_request();
        assert_eq!(request.queue(), "q");
        assert_eq!(request.job_type(), "t");
        assert_eq!(request.payload(), record.payload.as_ref());
        assert_eq!(request.priority(), Some(Priority::P3));
        assert_eq!(request.max_attempts(), Some(4));
        assert_eq!(request.custom(), &record.custom);
        assert_eq!(request.trace_context(), record.trace_context.as_ref());
        assert_eq!(request.idempotency_key(), None);
        assert_eq!(request.scheduled_at(), None);
        assert_eq!(EnqueueRequest::from(&record), request);
        assert_eq!(EnqueueRequest::from(record), request);
    }
}
