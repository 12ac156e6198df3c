//! [`EnqueueRequest`], the job a producer sends, and [`EnqueueAck`], the server's receipt.

use std::collections::HashMap;
use std::time::SystemTime;

use super::{Payload, Primitive, Priority, TraceContext};

/// One job to enqueue, built fluently. Only the queue and the job type are required; every
/// option left unset stays unset on the wire, so the queue's defaults apply.
///
/// Client-side validation is limited to non-empty queue and job type names (and the priority
/// range, through [`Priority`]); the server checks everything else and answers with a
/// [`JobRejection`](crate::JobRejection).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use sepp_client::{EnqueueRequest, Payload, Priority};
///
/// let request = EnqueueRequest::new("emails", "send_welcome")?
///     .with_payload(Payload::new(br#"{"user":42}"#.to_vec(), "application/json"))
///     .with_priority(Priority::P7)
///     .with_idempotency_key("welcome-42")
///     .with_max_attempts(5)
///     .with_custom_entry("tenant", "acme")
///     .with_scheduled_at(SystemTime::now() + Duration::from_secs(60));
/// assert_eq!(request.queue(), "emails");
/// # Ok::<(), sepp_client::EnqueueRequestBuilderError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EnqueueRequest {
    pub(crate) queue: String,
    pub(crate) job_type: String,
    pub(crate) payload: Option<Payload>,
    pub(crate) idempotency_key: Option<String>,
    pub(crate) priority: Option<Priority>,
    pub(crate) max_attempts: Option<u32>,
    pub(crate) custom: HashMap<String, Primitive>,
    pub(crate) trace_context: Option<TraceContext>,
    pub(crate) scheduled_at: Option<SystemTime>,
}

impl EnqueueRequest {
    /// A job of type `job_type` for `queue`; both must be non-empty.
    pub fn new(queue: impl Into<String>, job_type: impl Into<String>) -> Result<Self, EnqueueRequestBuilderError> {
        let queue = queue.into();
        let job_type = job_type.into();
        if queue.is_empty() {
            return Err(EnqueueRequestBuilderError::EmptyQueue);
        }
        if job_type.is_empty() {
            return Err(EnqueueRequestBuilderError::EmptyJobType);
        }
        Ok(Self {
            queue,
            job_type,
            payload: None,
            idempotency_key: None,
            priority: None,
            max_attempts: None,
            custom: HashMap::new(),
            trace_context: None,
            scheduled_at: None,
        })
    }

    /// Attaches the job's data.
    pub fn with_payload(mut self, payload: Payload) -> Self {
        self.payload = Some(payload);
        self
    }

    /// Deduplicates the job: while the server remembers the key (its dedup window), another
    /// enqueue with the same key returns the first job's id with `deduplicated = true`.
    /// A key also makes every transient failure of the enqueue call safe to retry; an empty
    /// key counts as no key.
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sets the priority (the queue's default otherwise).
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Sets how many deliveries the job gets before it is dead-lettered (the queue's default
    /// otherwise; the server requires at least 1).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// Replaces the whole custom metadata map.
    pub fn with_custom(mut self, custom: HashMap<String, Primitive>) -> Self {
        self.custom = custom;
        self
    }

    /// Adds (or replaces) one custom metadata entry.
    pub fn with_custom_entry(mut self, key: impl Into<String>, value: impl Into<Primitive>) -> Self {
        self.custom.insert(key.into(), value.into());
        self
    }

    /// Sets the job's trace context explicitly; the client then leaves it as it is instead of
    /// stamping the current span's.
    pub fn with_trace_context(mut self, trace_context: TraceContext) -> Self {
        self.trace_context = Some(trace_context);
        self
    }

    /// Delays delivery until `at`; a time in the past means now. A time before the Unix epoch
    /// is not sent at all.
    pub fn with_scheduled_at(mut self, at: SystemTime) -> Self {
        self.scheduled_at = Some(at);
        self
    }

    /// The target queue.
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// The job type, which selects the Worker handler.
    pub fn job_type(&self) -> &str {
        &self.job_type
    }

    /// The payload, if any.
    pub fn payload(&self) -> Option<&Payload> {
        self.payload.as_ref()
    }

    /// The idempotency key, if any.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The priority, if set.
    pub fn priority(&self) -> Option<Priority> {
        self.priority
    }

    /// The maximum number of attempts, if set.
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The custom metadata.
    pub fn custom(&self) -> &HashMap<String, Primitive> {
        &self.custom
    }

    /// The trace context, if set.
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.trace_context.as_ref()
    }

    /// The scheduled delivery time, if set.
    pub fn scheduled_at(&self) -> Option<SystemTime> {
        self.scheduled_at
    }

    /// Whether the request carries a non-empty idempotency key, which makes ambiguous enqueue
    /// failures safe to retry.
    pub(crate) fn has_idempotency_key(&self) -> bool {
        self.idempotency_key.as_deref().is_some_and(|key| !key.is_empty())
    }
}

/// Why an [`EnqueueRequest`] could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnqueueRequestBuilderError {
    /// The queue name was empty.
    #[error("queue name must not be empty")]
    EmptyQueue,
    /// The job type was empty.
    #[error("job type must not be empty")]
    EmptyJobType,
}

/// The server's receipt for one accepted job.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EnqueueAck {
    /// The job's id (a UUID).
    pub job_id: String,
    /// True when the idempotency key matched an earlier job: `job_id` is that job's id and
    /// nothing new was enqueued.
    pub deduplicated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_and_job_type_must_not_be_empty() {
        assert_eq!(EnqueueRequest::new("", "t"), Err(EnqueueRequestBuilderError::EmptyQueue));
        assert_eq!(EnqueueRequest::new("q", ""), Err(EnqueueRequestBuilderError::EmptyJobType));
        assert_eq!(EnqueueRequest::new("", ""), Err(EnqueueRequestBuilderError::EmptyQueue));
        assert!(EnqueueRequest::new("q", "t").is_ok());
    }

    #[test]
    fn a_new_request_leaves_every_option_unset() {
        let request = EnqueueRequest::new("q", "t").unwrap();
        assert_eq!(request.payload(), None);
        assert_eq!(request.idempotency_key(), None);
        assert_eq!(request.priority(), None);
        assert_eq!(request.max_attempts(), None);
        assert!(request.custom().is_empty());
        assert_eq!(request.trace_context(), None);
        assert_eq!(request.scheduled_at(), None);
    }

    #[test]
    fn custom_entries_add_up_and_with_custom_replaces_the_map() {
        let request = EnqueueRequest::new("q", "t").unwrap().with_custom_entry("a", 1).with_custom_entry("b", "x");
        assert_eq!(request.custom().len(), 2);
        let request = request.with_custom(HashMap::from([("c".to_owned(), Primitive::Bool(true))]));
        assert_eq!(request.custom().len(), 1);
        assert_eq!(request.custom()["c"], Primitive::Bool(true));
    }

    #[test]
    fn an_empty_idempotency_key_counts_as_none() {
        let request = EnqueueRequest::new("q", "t").unwrap();
        assert!(!request.has_idempotency_key());
        assert!(!request.clone().with_idempotency_key("").has_idempotency_key());
        assert!(request.with_idempotency_key("k").has_idempotency_key());
    }
}
