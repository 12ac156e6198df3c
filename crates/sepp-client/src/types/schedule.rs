//! Recurring schedules: [`ScheduleDefinition`] to set one, [`ScheduleInfo`] as the server keeps
//! it. Needs a server that lists the feature `schedules` (0.2 or later).

use std::time::{Duration, SystemTime};

use super::request::EnqueueRequest;

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleCadence {
    /// A cron expression (five fields, or six with seconds first) read in an IANA time zone
    /// (`"UTC"`, `"Europe/Zurich"`, ...).
    Cron {
        /// The expression, for example `0 9 * * MON-FRI`.
        expression: String,
        /// The time zone it is read in.
        time_zone: String,
    },
    /// Every so long (at least a second), counted from when the schedule was set.
    Every(Duration),
}

/// What a slot does while the schedule's previous job is still queued or running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ScheduleOverlap {
    /// Fire nothing for that slot.
    #[default]
    Skip,
    /// Fire anyway.
    Allow,
}

/// What happens to slots missed by more than a minute (downtime, a clock jump).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ScheduleCatchUp {
    /// Fire the latest missed slot once.
    #[default]
    Latest,
    /// Fire none of them.
    None,
}

/// A schedule to create or replace: each slot of `cadence` fires one job made from `job`
/// (which must carry no idempotency key, trace context or schedule time).
#[derive(Debug, Clone)]
pub struct ScheduleDefinition {
    /// 1 to 128 bytes; setting an existing id replaces that schedule.
    pub id: String,
    /// When it fires.
    pub cadence: ScheduleCadence,
    /// The job each slot fires.
    pub job: EnqueueRequest,
    /// What a slot does while the previous job is still queued or running.
    pub overlap: ScheduleOverlap,
    /// What happens to missed slots.
    pub catch_up: ScheduleCatchUp,
}

impl ScheduleDefinition {
    /// A schedule with the default policies (skip overlapping slots, fire the latest missed).
    pub fn new(id: impl Into<String>, cadence: ScheduleCadence, job: EnqueueRequest) -> Self {
        ScheduleDefinition {
            id: id.into(),
            cadence,
            job,
            overlap: ScheduleOverlap::default(),
            catch_up: ScheduleCatchUp::default(),
        }
    }

    /// With another overlap policy.
    pub fn with_overlap(mut self, overlap: ScheduleOverlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// With another catch-up policy.
    pub fn with_catch_up(mut self, catch_up: ScheduleCatchUp) -> Self {
        self.catch_up = catch_up;
        self
    }
}

/// A schedule as the server keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleInfo {
    /// Its id.
    pub id: String,
    /// When it fires.
    pub cadence: ScheduleCadence,
    /// The queue and job type of the jobs it fires.
    pub queue: String,
    /// See `queue`.
    pub job_type: String,
    /// Its overlap policy.
    pub overlap: ScheduleOverlap,
    /// Its catch-up policy.
    pub catch_up: ScheduleCatchUp,
    /// Its next slot; `None` when a cron expression has no later one.
    pub next_fire_at: Option<SystemTime>,
    /// The last slot that was due, fired or skipped.
    pub last_slot_at: Option<SystemTime>,
    /// The last job it fired.
    pub last_job_id: Option<String>,
    /// How many jobs it fired.
    pub fired: u64,
    /// When it was created or last replaced.
    pub created_at: Option<SystemTime>,
}
