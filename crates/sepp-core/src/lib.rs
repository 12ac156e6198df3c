//! sepp-core: the job queue as a pure state machine.
//!
//! Commands go in with the time they happen at; outcomes and [`Record`]s come out. The core does
//! no I/O, reads no clock, spawns nothing and knows neither gRPC nor the disk, so the same stream
//! of commands gives the same state on every machine, which replay and simulation rely on.
//!
//! # Layout
//!
//! - [`limits`]: the resolved per-queue and server-wide limits ([`Policy`]).
//! - [`types`]: jobs, payloads, dead letters.
//! - [`validate`]: request checks that need no state (enqueue stages A to C, reserve clamps).
//! - [`State`] (in `state`): the indexes and [`State::apply`], the only function that changes the
//!   queue's data (payload placement, the policy and this process's totals are set beside it).
//! - `jobs`: the table of live jobs; `keyed`: the per-key limit groups and their buckets.
//! - `enqueue`, `lease`, `sweep`: the operations, each deciding and then applying records.
//! - [`errors`]: rejections, lease errors and whole-call errors (values, not I/O errors).
//! - [`retry`]: the nack retry policy.
//! - [`record`]: the records an operation produces, which the server writes to its log.
//! - [`peek`]: read-only listings, counts and lookups for the admin API, each one bounded.
//! - [`admin`]: operator actions (dead-letter, requeue, delete, close, purge, bulk actions).
//! - [`audit`]: the bounded audit log of operator actions.
//! - [`cancel`]: cancelling a job by id, whatever it is doing.
//! - [`schedule`]: recurring schedules that fire a job template on a cron expression or interval.
//! - [`snapshot`]: the whole state as records, for checkpoints and cluster snapshots.
//! - [`totals`]: per-queue totals since start, for the dashboard.

// No unsafe code here; a panic in the library is a bug with a message (`expect` says what was
// assumed).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod admin;
pub mod audit;
pub mod cancel;
pub mod errors;
pub mod limits;
pub mod peek;
pub mod record;
pub mod retry;
pub mod schedule;
pub mod snapshot;
pub mod totals;
pub mod types;
pub mod validate;

mod enqueue;
mod jobs;
mod keyed;
mod lease;
mod state;
mod sweep;

pub use admin::{BulkAction, BulkError, BulkStep, CLOSE_GRACE_MS, PurgeStep, Touched};
pub use audit::{AuditDraft, AuditEntry, AuditPage, AuditQuery};
pub use cancel::{CancelError, CancelOutcome};
pub use enqueue::{AtomicOutcome, Enqueued};
pub use errors::{CallError, LeaseError, Rejection};
pub use lease::Nacked;
pub use limits::{KeyLimit, KeyLimits, Policy, QueueLimits, RateLimit, RetryBackoff, ServerLimits};
pub use peek::{JobFilter, JobKey, PEEK_SCAN_LIMIT, PeekPage, PeekState, Peeked, WrongCursor};
pub use record::Record;
pub use snapshot::{SNAPSHOT_CHUNK, Snapshot, SnapshotEntry};
pub use state::{ALL_QUEUES, Depths, KEY_BUCKET_GRACE_MS, State, StorageRules};
pub use sweep::SweepReport;
pub use totals::QueueTotals;
pub use types::*;
