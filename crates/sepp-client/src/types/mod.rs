//! The plain data types shared by the producer, consumer and Worker halves: what a job carries,
//! what the server answers, and the validation errors of each. They hold no connection, except
//! [`JobCtx`], whose private lease handle lets a handler extend its own lease.
//!
//! Conversions from and to the wire types live in `crate::convert`, so nothing here knows prost.

mod dead_letter;
mod info;
mod job;
mod payload;
mod rejection;
mod request;
mod schedule;
mod trace;

pub use dead_letter::{DeadLetterCause, DeadLetterRecord};
pub use info::{ClusterInfo, ClusterMember, ServerInfo, ServerInfoError};
pub(crate) use job::Lease;
pub use job::{Job, JobConversionError, JobCtx, ReserveOptions, ReserveOptionsError};
pub use payload::{Payload, Primitive, Priority, PriorityOutOfRange};
pub use rejection::{AtomicEnqueueError, JobRejection, JobValidationError};
pub use request::{EnqueueAck, EnqueueRequest, EnqueueRequestBuilderError};
pub use schedule::{ScheduleCadence, ScheduleCatchUp, ScheduleDefinition, ScheduleInfo, ScheduleOverlap};
pub use trace::{TraceContext, TraceContextError};
