//! The admin API's error envelope: `{"error": <text>, "code": <code>[, "rejection": {...}]}`
//! with the HTTP status that goes with each code. The one place admin failures become responses.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use sepp_admin_types::{ErrorBody, Rejection as RejectionBody};
use sepp_core::Rejection;

use sepp_engine::Stopped;

/// A failed admin request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// For `rejected`: the rejection's label and what it says.
    pub rejection: Option<(&'static str, String)>,
    /// For `auth_throttled`: the `Retry-After` seconds.
    pub retry_after_s: Option<u64>,
}

pub type AdminResult<T> = Result<T, AdminError>;

impl AdminError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> AdminError {
        AdminError { status, code, message: message.into(), rejection: None, retry_after_s: None }
    }

    pub fn invalid_argument(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    pub fn invalid_change(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::BAD_REQUEST, "invalid_change", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// The request's `Host` is not one of the listener's names.
    pub fn misdirected(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::MISDIRECTED_REQUEST, "misdirected_request", message)
    }

    /// The client made too many failed authentication attempts; it may retry after this long.
    pub fn auth_throttled(retry_after_s: u64) -> AdminError {
        AdminError {
            retry_after_s: Some(retry_after_s),
            ..AdminError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "auth_throttled",
                format!("too many failed authentication attempts from this address; retry after {retry_after_s} s"),
            )
        }
    }

    pub fn not_found(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::CONFLICT, code, message)
    }

    pub fn etag_mismatch() -> AdminError {
        AdminError::new(
            StatusCode::PRECONDITION_FAILED,
            "etag_mismatch",
            "the config file changed since it was read; reload and try again",
        )
    }

    pub fn if_match_required() -> AdminError {
        AdminError::new(
            StatusCode::BAD_REQUEST,
            "if_match_required",
            "this request needs an If-Match header with the config etag",
        )
    }

    pub fn invalid_config(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }

    pub fn internal(message: impl Into<String>) -> AdminError {
        AdminError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// An enqueue the queue refused.
    pub fn rejected(rejection: &Rejection) -> AdminError {
        let detail = describe_rejection(rejection);
        AdminError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "rejected",
            message: format!("job rejected: {detail}"),
            rejection: Some((rejection.label(), detail)),
            retry_after_s: None,
        }
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.message,
            code: self.code.to_owned(),
            rejection: self.rejection.map(|(reason, detail)| RejectionBody { reason: reason.to_owned(), detail }),
            leader_addr: None,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after_s {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(seconds));
        }
        response
    }
}

impl From<Stopped> for AdminError {
    /// The committer is gone (shutting down or poisoned): nothing was committed.
    fn from(_: Stopped) -> AdminError {
        AdminError::internal("storage commit failed")
    }
}

impl From<tokio::sync::oneshot::error::RecvError> for AdminError {
    /// The committer dropped the answer: its cycle was not persisted.
    fn from(_: tokio::sync::oneshot::error::RecvError) -> AdminError {
        AdminError::internal("storage commit failed")
    }
}

/// What a rejection says, in a sentence.
pub fn describe_rejection(rejection: &Rejection) -> String {
    match rejection {
        Rejection::UnknownQueue { queue } => format!("queue {queue:?} is not declared and strict_queues is on"),
        Rejection::PayloadTooLarge { limit, actual } => {
            format!("payload is {actual} bytes, more than the queue's max_payload_bytes ({limit})")
        }
        Rejection::EncodingNotAllowed { encoding, allowed } => {
            format!("encoding {encoding:?} is not one of the queue's allowed_encodings {allowed:?}")
        }
        Rejection::JobTypeNotAllowed { job_type, allowed } => {
            format!("job type {job_type:?} is not one of the queue's allowed_job_types {allowed:?}")
        }
        Rejection::CustomEntriesTooMany { limit, actual } => {
            format!("{actual} custom entries, more than max_custom_entries ({limit})")
        }
        Rejection::CustomMapTooLarge { limit, actual } => {
            format!("custom metadata takes {actual} bytes, more than max_custom_total_bytes ({limit})")
        }
        Rejection::CustomKeyTooLong { key, limit, actual } => {
            format!("custom key {key:?} is {actual} bytes, more than max_custom_key_bytes ({limit})")
        }
        Rejection::QueueNameTooLong { limit, actual } => {
            format!("queue name is {actual} bytes, more than max_queue_name_bytes ({limit})")
        }
        Rejection::JobTypeNameTooLong { limit, actual } => {
            format!("job type is {actual} bytes, more than max_job_type_bytes ({limit})")
        }
        Rejection::IdempotencyKeyTooLong { limit, actual } => {
            format!("idempotency key is {actual} bytes, more than max_idempotency_key_bytes ({limit})")
        }
        Rejection::ScheduledTooFar { horizon_ms, actual_ms } => {
            format!(
                "scheduled_at_ms {actual_ms} is further ahead than the queue's max_schedule_horizon_ms ({horizon_ms})"
            )
        }
        Rejection::InvalidRequest { message } => message.clone(),
        Rejection::QueueFull { queue, limit } => format!("queue {queue:?} is full (max_queue_depth {limit})"),
        Rejection::QueueClosing { queue } => format!("queue {queue:?} is being deleted"),
    }
}
