//! The client's errors and the one place that maps gRPC status codes onto them.

use tonic::{Code, Status};

use crate::{JobConversionError, JobRejection, ServerInfoError};

/// A failed call, or a response the client could not make sense of.
///
/// Status codes map as follows: `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED` and `CANCELLED`
/// are [`Transport`](Self::Transport); `UNAUTHENTICATED` and `PERMISSION_DENIED` are
/// [`Unauthenticated`](Self::Unauthenticated); `RESOURCE_EXHAUSTED` is
/// [`Overloaded`](Self::Overloaded); `INVALID_ARGUMENT` is
/// [`InvalidRequest`](Self::InvalidRequest); `INTERNAL`, `DATA_LOSS` and `UNKNOWN` are
/// [`ServerInternal`](Self::ServerInternal); anything else is
/// [`UnexpectedStatus`](Self::UnexpectedStatus).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection could not be established; `reason` is the root cause.
    #[error("could not connect to {addr}: {reason}")]
    Connect {
        /// The address as given.
        addr: String,
        /// The root cause.
        reason: String,
    },
    /// The API key cannot be sent as a header value (it must be visible ASCII).
    #[error("the API key is not a valid header value")]
    InvalidApiKey,
    /// The call failed in transit or timed out (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED,
    /// CANCELLED).
    #[error("transport error: {0}")]
    Transport(String),
    /// The server refused the credentials (UNAUTHENTICATED, PERMISSION_DENIED).
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The server is overloaded (RESOURCE_EXHAUSTED).
    #[error("server overloaded: {0}")]
    Overloaded(String),
    /// The server refused the request as malformed (INVALID_ARGUMENT).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The server failed (INTERNAL, DATA_LOSS, UNKNOWN).
    #[error("server internal error: {0}")]
    ServerInternal(String),
    /// Any other status code.
    #[error("unexpected status {code:?}: {message}")]
    UnexpectedStatus {
        /// The gRPC code.
        code: Code,
        /// The server's message.
        message: String,
    },
    /// An enqueue call was given no job; nothing was sent.
    #[error("an enqueue batch needs at least one job")]
    EmptyBatch,
    /// The server answered a batch with a different number of results than jobs sent.
    #[error("batch result count mismatch: sent {expected} jobs, got {got} results")]
    BatchResultCountMismatch {
        /// Jobs sent.
        expected: usize,
        /// Results received.
        got: usize,
    },
    /// The response broke the protocol; the text says how.
    #[error("malformed response: {0}")]
    MalformedResponse(&'static str),
    /// A job in the response could not be decoded.
    #[error("malformed job: {0}")]
    MalformedJob(#[from] JobConversionError),
    /// The server info could not be decoded.
    #[error("malformed server info: {0}")]
    MalformedServerInfo(#[from] ServerInfoError),
}

impl ClientError {
    /// Maps a gRPC status to the client's error (see the type's documentation).
    pub fn from_status(status: &Status) -> Self {
        let message = status.message().to_owned();
        match status.code() {
            Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::Cancelled => Self::Transport(message),
            Code::Unauthenticated | Code::PermissionDenied => Self::Unauthenticated(message),
            Code::ResourceExhausted => Self::Overloaded(message),
            Code::InvalidArgument => Self::InvalidRequest(message),
            Code::Internal | Code::DataLoss | Code::Unknown => Self::ServerInternal(message),
            code => Self::UnexpectedStatus { code, message },
        }
    }
}

impl From<Status> for ClientError {
    fn from(status: Status) -> Self {
        Self::from_status(&status)
    }
}

/// Why [`SeppClient::enqueue`](super::SeppClient::enqueue) did not enqueue its job.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EnqueueError {
    /// The server refused the job.
    #[error("job rejected: {0}")]
    Rejected(JobRejection),
    /// The call failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Why an ack, nack or extend failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LeaseError {
    /// The job is no longer in flight: already settled, or its lease expired (NOT_FOUND). After
    /// a retried call this can also mean an earlier attempt succeeded and only its answer was
    /// lost.
    #[error("job not found (already settled, or its lease expired)")]
    JobNotFound,
    /// The job was redelivered: this attempt's lease is no longer the current one
    /// (FAILED_PRECONDITION).
    #[error("attempt mismatch (the job was redelivered to another attempt)")]
    AttemptMismatch,
    /// The call failed otherwise.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl LeaseError {
    pub(crate) fn from_status(status: &Status) -> Self {
        match status.code() {
            Code::NotFound => Self::JobNotFound,
            Code::FailedPrecondition => Self::AttemptMismatch,
            _ => Self::Client(ClientError::from_status(status)),
        }
    }
}

/// Why a cancel failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CancelError {
    /// No job has this id: it completed, or never existed (NOT_FOUND).
    #[error("job not found (it completed, or never existed)")]
    JobNotFound,
    /// The job is already a dead letter (FAILED_PRECONDITION).
    #[error("the job is already dead-lettered")]
    AlreadyDeadLettered,
    /// The call failed otherwise (a server without `CancelJob` answers UNIMPLEMENTED, which
    /// arrives here as [`ClientError::UnexpectedStatus`]).
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl CancelError {
    pub(crate) fn from_status(status: &Status) -> Self {
        match status.code() {
            Code::NotFound => Self::JobNotFound,
            Code::FailedPrecondition => Self::AlreadyDeadLettered,
            _ => Self::Client(ClientError::from_status(status)),
        }
    }
}

/// Why a reserve failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReserveError {
    /// The server runs with strict queues and a named queue is not declared
    /// (FAILED_PRECONDITION); carries the server's message.
    #[error("unknown queues: {0}")]
    UnknownQueues(String),
    /// The call failed otherwise.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl ReserveError {
    pub(crate) fn from_status(status: &Status) -> Self {
        match status.code() {
            Code::FailedPrecondition => Self::UnknownQueues(status.message().to_owned()),
            _ => Self::Client(ClientError::from_status(status)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_map_onto_client_errors() {
        let map = |code| ClientError::from_status(&Status::new(code, "m"));
        for code in [Code::Unavailable, Code::DeadlineExceeded, Code::Aborted, Code::Cancelled] {
            assert!(matches!(map(code), ClientError::Transport(m) if m == "m"), "{code:?}");
        }
        for code in [Code::Unauthenticated, Code::PermissionDenied] {
            assert!(matches!(map(code), ClientError::Unauthenticated(_)), "{code:?}");
        }
        assert!(matches!(map(Code::ResourceExhausted), ClientError::Overloaded(_)));
        assert!(matches!(map(Code::InvalidArgument), ClientError::InvalidRequest(_)));
        for code in [Code::Internal, Code::DataLoss, Code::Unknown] {
            assert!(matches!(map(code), ClientError::ServerInternal(_)), "{code:?}");
        }
        for code in [Code::NotFound, Code::FailedPrecondition, Code::AlreadyExists, Code::Unimplemented] {
            assert!(matches!(map(code), ClientError::UnexpectedStatus { code: c, .. } if c == code), "{code:?}");
        }
    }

    #[test]
    fn lease_calls_map_not_found_and_failed_precondition() {
        assert!(matches!(LeaseError::from_status(&Status::not_found("x")), LeaseError::JobNotFound));
        assert!(matches!(LeaseError::from_status(&Status::failed_precondition("x")), LeaseError::AttemptMismatch));
        assert!(matches!(
            LeaseError::from_status(&Status::unavailable("x")),
            LeaseError::Client(ClientError::Transport(_))
        ));
    }

    #[test]
    fn reserve_maps_failed_precondition_to_unknown_queues() {
        assert!(matches!(
            ReserveError::from_status(&Status::failed_precondition("queue nope")),
            ReserveError::UnknownQueues(m) if m == "queue nope"
        ));
        assert!(matches!(
            ReserveError::from_status(&Status::not_found("x")),
            ReserveError::Client(ClientError::UnexpectedStatus { code: Code::NotFound, .. })
        ));
    }
}
