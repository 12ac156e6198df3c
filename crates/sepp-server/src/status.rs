//! Where the outcomes of the core and the committer become gRPC statuses: lease, cancel and call
//! errors, a stopped committer, a dropped answer. Checks the edge makes itself build their status
//! in place: an argument of the request (`service.rs`, `consume.rs`), a refused API key
//! (`auth.rs`), a follower's refusal (`cluster.rs`).

use sepp_core::{CallError, LeaseError};
use tonic::Status;

use sepp_engine::Stopped;

/// A failed call on its way to becoming a gRPC status.
#[derive(Debug)]
pub struct ApiError(pub Status);

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        error.0
    }
}

impl From<Status> for ApiError {
    fn from(status: Status) -> ApiError {
        ApiError(status)
    }
}

impl From<CallError> for ApiError {
    fn from(error: CallError) -> ApiError {
        ApiError(match error {
            CallError::InvalidArgument(message) => Status::invalid_argument(message),
            CallError::FailedPrecondition(message) => Status::failed_precondition(message),
        })
    }
}

impl From<LeaseError> for ApiError {
    fn from(error: LeaseError) -> ApiError {
        ApiError(match error {
            LeaseError::NotFound => Status::not_found("job not found"),
            LeaseError::AttemptMismatch => Status::failed_precondition("attempt mismatch"),
            LeaseError::Cancelled => cancelled_status(),
        })
    }
}

/// The trailer that tells a cancelled lease from a lost one.
pub const CANCELLED_TRAILER: &str = "sepp-cancelled";

/// What a worker hears when the job it holds was cancelled: NOT_FOUND, as for a lost lease,
/// so 0.1 clients stop the job as they would then, plus a trailer that says why.
pub fn cancelled_status() -> Status {
    let mut metadata = tonic::metadata::MetadataMap::new();
    metadata.insert(CANCELLED_TRAILER, tonic::metadata::MetadataValue::from_static("true"));
    Status::with_metadata(tonic::Code::NotFound, "job was cancelled", metadata)
}

impl From<sepp_core::CancelError> for ApiError {
    fn from(error: sepp_core::CancelError) -> ApiError {
        ApiError(match error {
            sepp_core::CancelError::NotFound => Status::not_found("job not found"),
            sepp_core::CancelError::DeadLettered => Status::failed_precondition("job is already dead-lettered"),
        })
    }
}

impl From<Stopped> for ApiError {
    /// The committer is gone (shutting down or poisoned): nothing was committed.
    fn from(_: Stopped) -> ApiError {
        ApiError(Status::internal("storage commit failed"))
    }
}

impl From<tokio::sync::oneshot::error::RecvError> for ApiError {
    /// The committer dropped the answer: its cycle was not persisted (storage is poisoned), or a
    /// delivered job's payload could not be read back (its lease then runs out and the job is
    /// delivered again).
    fn from(_: tokio::sync::oneshot::error::RecvError) -> ApiError {
        ApiError(Status::internal("storage commit failed"))
    }
}

/// Whether a status is a server fault (logged as an error) rather than a rejection.
pub fn is_server_fault(status: &Status) -> bool {
    matches!(status.code(), tonic::Code::Internal | tonic::Code::Unknown | tonic::Code::DataLoss)
}

/// One item's status inside a batch or stream answer: its code, its message, and whether it
/// carries the cancelled trailer.
pub fn call_status(status: &Status) -> crate::proto::v1::CallStatus {
    crate::proto::v1::CallStatus {
        code: status.code() as i32,
        message: status.message().to_owned(),
        cancelled: status.metadata().get(CANCELLED_TRAILER).is_some(),
    }
}
