//! Recurring schedules: a job template fired on a cron expression (in a time zone) or a fixed
//! interval.
//!
//! Each schedule remembers the time of its next slot. When the sweep finds a slot due it fires
//! at most one job for it and moves the schedule to the first slot after now, in the same cycle
//! and so in the same log frame as the job: a slot can never fire twice, across restarts and
//! clock jumps alike, because the record that fires it also moves the schedule past it. The job's
//! id is derived from the schedule id and the slot, so the job is keyed by both.
//!
//! - **Overlap**: `Skip` fires nothing while the schedule's previous job is still queued or
//!   running; `Allow` always fires.
//! - **Catch-up**: a slot found more than [`MISFIRE_GRACE_MS`] after its time was missed (the
//!   server was down, or the clock jumped). `Latest` fires the latest missed slot once; `Skip`
//!   fires none of them. Either way the schedule then waits for its next slot after now.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use crate::errors::CallError;
use crate::record::Record;
use crate::state::State;
use crate::types::{JobId, NewJob, Payload, Primitive, TimeMs};

/// How late a slot may be found and still count as on time.
pub const MISFIRE_GRACE_MS: TimeMs = 60_000;

/// The shortest interval of an interval schedule.
pub const MIN_INTERVAL_MS: u64 = 1_000;

/// The longest schedule id, in bytes.
pub const MAX_SCHEDULE_ID_BYTES: usize = 128;

/// The most schedules one server keeps.
pub const MAX_SCHEDULES: usize = 100_000;

/// When a schedule fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cadence {
    /// A cron expression (five fields, or six with seconds first) read in an IANA time zone.
    Cron { expression: String, time_zone: String },
    /// Every `interval_ms`, counted from when the schedule was created.
    Every { interval_ms: u64 },
}

/// What a slot does while the schedule's previous job is still queued or running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    Skip,
    Allow,
}

/// What happens to slots that were missed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatchUp {
    /// Fire the latest missed slot once.
    Latest,
    /// Fire none of them.
    Skip,
}

/// The job a schedule fires: the fields of an enqueue that make sense for every firing.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct JobTemplate {
    pub queue: String,
    pub job_type: String,
    pub payload: Option<Payload>,
    pub priority: Option<u32>,
    pub max_attempts: Option<u32>,
    pub custom: BTreeMap<String, Primitive>,
}

impl JobTemplate {
    pub fn new_job(&self) -> NewJob {
        NewJob {
            queue: self.queue.clone(),
            job_type: self.job_type.clone(),
            payload: self.payload.clone(),
            priority: self.priority,
            max_attempts: self.max_attempts,
            custom: self.custom.iter().map(|(key, value)| (key.clone(), Some(value.clone()))).collect(),
            ..NewJob::default()
        }
    }
}

/// A schedule as a caller defines it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleSpec {
    pub id: String,
    pub cadence: Cadence,
    pub template: JobTemplate,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
}

/// A schedule as the queue keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub spec: ScheduleSpec,
    /// When it was created (interval schedules count from here).
    pub anchor_ms: TimeMs,
    /// Its next slot.
    pub next_ms: TimeMs,
    /// Its last slot that was due (fired or not), if any.
    pub last_slot_ms: Option<TimeMs>,
    /// The last job it fired, if any.
    pub last_job: Option<JobId>,
    /// How many jobs it fired.
    pub fired: u64,
}

/// What the sweep did with one due schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Firing {
    pub schedule_id: String,
    pub slot_ms: TimeMs,
    pub outcome: FiringOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FiringOutcome {
    Fired(JobId),
    /// Overlap `Skip`, and its previous job is still queued or running.
    SkippedOverlap,
    /// The slot was missed and the catch-up policy is `Skip`.
    SkippedMissed,
    /// The template no longer passes the queue's rules, or the queue refused it.
    Refused(String),
}

impl Cadence {
    /// Checks the cadence: a valid cron expression and time zone, or an interval of at least
    /// [`MIN_INTERVAL_MS`].
    pub fn validate(&self) -> Result<(), CallError> {
        match self {
            Cadence::Cron { expression, time_zone } => {
                parse_cron(expression)?;
                parse_zone(time_zone)?;
                Ok(())
            }
            Cadence::Every { interval_ms } if *interval_ms < MIN_INTERVAL_MS => {
                Err(CallError::InvalidArgument(format!("interval must be at least {MIN_INTERVAL_MS} ms")))
            }
            Cadence::Every { .. } => Ok(()),
        }
    }

    /// The first slot strictly after `after_ms`; `None` when a cron expression has no later
    /// slot (for example 30 February).
    pub fn next_after(&self, anchor_ms: TimeMs, after_ms: TimeMs) -> Option<TimeMs> {
        self.slots()?.next_after(anchor_ms, after_ms)
    }

    /// The cadence ready to compute slots (a cron expression parsed once).
    fn slots(&self) -> Option<Slots> {
        Some(match self {
            Cadence::Every { interval_ms } => Slots::Every((*interval_ms).max(1) as TimeMs),
            Cadence::Cron { expression, time_zone } => {
                Slots::Cron(Box::new(parse_cron(expression).ok()?), parse_zone(time_zone).ok()?)
            }
        })
    }
}

enum Slots {
    Every(TimeMs),
    Cron(Box<croner::Cron>, chrono_tz::Tz),
}

impl Slots {
    fn next_after(&self, anchor_ms: TimeMs, after_ms: TimeMs) -> Option<TimeMs> {
        match self {
            Slots::Every(interval) => {
                if after_ms < anchor_ms {
                    return Some(anchor_ms);
                }
                let steps = (after_ms - anchor_ms) / interval + 1;
                Some(anchor_ms.saturating_add(steps.saturating_mul(*interval)))
            }
            Slots::Cron(cron, zone) => {
                // croner works in whole seconds: start from the second `after_ms` falls in.
                let start = chrono::DateTime::from_timestamp_millis(after_ms.div_euclid(1000) * 1000)?;
                let next = cron.find_next_occurrence(&start.with_timezone(zone), false).ok()?;
                Some(next.timestamp_millis())
            }
        }
    }
}

fn parse_cron(expression: &str) -> Result<croner::Cron, CallError> {
    croner::Cron::from_str(expression)
        .map_err(|error| CallError::InvalidArgument(format!("cron expression {expression:?} is not valid: {error}")))
}

fn parse_zone(time_zone: &str) -> Result<chrono_tz::Tz, CallError> {
    time_zone
        .parse::<chrono_tz::Tz>()
        .map_err(|_| CallError::InvalidArgument(format!("time zone {time_zone:?} is not an IANA time zone name")))
}

/// The id of the job a schedule fires for a slot: the same schedule and slot always give the
/// same id (a version-8 UUID built from two hashes of them).
pub fn slot_job_id(schedule_id: &str, slot_ms: TimeMs) -> JobId {
    let half = |salt: u64| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (salt, schedule_id, slot_ms).hash(&mut hasher);
        hasher.finish()
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&half(0x5e99).to_be_bytes());
    bytes[8..].copy_from_slice(&half(0x5107).to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    JobId::from_bytes(bytes)
}

impl State {
    /// Creates or replaces the schedule `spec.id`. Its next slot is the first after `now_ms`;
    /// a replaced schedule keeps its last job (for the overlap rule) and its count.
    pub fn upsert_schedule(
        &mut self,
        now_ms: TimeMs,
        spec: ScheduleSpec,
        out: &mut Vec<Record>,
    ) -> Result<Schedule, CallError> {
        validate_spec(&spec)?;
        crate::validate::validate_new_job(&self.policy, &spec.template.new_job(), now_ms).map_err(|rejection| {
            CallError::InvalidArgument(format!("the job template is refused: {}", rejection.label()))
        })?;
        let previous = self.schedules.get(spec.id.as_str());
        if previous.is_none() && self.schedules.len() >= MAX_SCHEDULES {
            return Err(CallError::FailedPrecondition(format!("the server keeps at most {MAX_SCHEDULES} schedules")));
        }
        let (last_job, fired, last_slot_ms) =
            previous.map_or((None, 0, None), |previous| (previous.last_job, previous.fired, previous.last_slot_ms));
        let next_ms = spec
            .cadence
            .next_after(now_ms, now_ms)
            .ok_or_else(|| CallError::InvalidArgument("the cron expression has no slot after now".into()))?;
        let schedule = Schedule { spec, anchor_ms: now_ms, next_ms, last_slot_ms, last_job, fired };
        self.record(Record::ScheduleSet { schedule: Box::new(schedule.clone()) }, out);
        Ok(schedule)
    }

    /// Deletes a schedule; answers whether there was one. Jobs it fired stay.
    pub fn delete_schedule(&mut self, id: &str, out: &mut Vec<Record>) -> bool {
        if !self.schedules.contains_key(id) {
            return false;
        }
        self.record(Record::ScheduleDeleted { id: id.to_owned() }, out);
        true
    }

    /// Every schedule, by id.
    pub fn schedules(&self) -> impl Iterator<Item = &Schedule> {
        self.schedules.values()
    }

    pub fn schedule(&self, id: &str) -> Option<&Schedule> {
        self.schedules.get(id)
    }

    /// The schedules due at `now_ms`, soonest first, at most `limit`.
    pub(crate) fn due_schedules(&self, now_ms: TimeMs, limit: usize) -> Vec<String> {
        self.schedule_index
            .iter()
            .take_while(|(next_ms, _)| *next_ms <= now_ms)
            .take(limit)
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Fires (or skips) the due slot of schedule `id` and moves it past now.
    pub(crate) fn fire_schedule(&mut self, now_ms: TimeMs, id: &str, out: &mut Vec<Record>) -> Firing {
        let schedule = self.schedules.get(id).expect("a due schedule exists").clone();
        // The latest slot at or before now, and the first one after it.
        let mut slot_ms = schedule.next_ms;
        let mut next_ms = None;
        if let Some(slots) = schedule.spec.cadence.slots() {
            if let Slots::Every(interval) = slots {
                if now_ms >= slot_ms {
                    slot_ms += (now_ms - slot_ms) / interval * interval;
                }
                next_ms = Some(slot_ms.saturating_add(interval));
            } else {
                next_ms = slots.next_after(schedule.anchor_ms, slot_ms);
                let mut steps = 0;
                while let Some(next) = next_ms.filter(|next| *next <= now_ms) {
                    slot_ms = next;
                    next_ms = slots.next_after(schedule.anchor_ms, next);
                    steps += 1;
                    if steps >= 10_000 {
                        // Years of per-minute slots missed: go straight to the first after now.
                        next_ms = slots.next_after(schedule.anchor_ms, now_ms);
                        break;
                    }
                }
            }
        }
        let missed = now_ms - slot_ms > MISFIRE_GRACE_MS;
        let previous_running = schedule.last_job.is_some_and(|job_id| self.jobs.get(&job_id).is_some());
        let outcome = if missed && schedule.spec.catch_up == CatchUp::Skip {
            FiringOutcome::SkippedMissed
        } else if previous_running && schedule.spec.overlap == Overlap::Skip {
            FiringOutcome::SkippedOverlap
        } else {
            self.fire_template(now_ms, &schedule, slot_ms, out)
        };
        let job_id = match &outcome {
            FiringOutcome::Fired(job_id) => Some(*job_id),
            _ => None,
        };
        // A cron expression without a later slot leaves the schedule parked far in the future.
        let next_ms = next_ms.unwrap_or(TimeMs::MAX);
        self.record(Record::ScheduleFired { id: id.to_owned(), slot_ms, next_ms, job_id }, out);
        Firing { schedule_id: id.to_owned(), slot_ms, outcome }
    }

    fn fire_template(
        &mut self,
        now_ms: TimeMs,
        schedule: &Schedule,
        slot_ms: TimeMs,
        out: &mut Vec<Record>,
    ) -> FiringOutcome {
        let job = schedule.spec.template.new_job();
        if let Err(rejection) = crate::validate::validate_new_job(&self.policy, &job, now_ms) {
            return FiringOutcome::Refused(rejection.label().to_owned());
        }
        let job_id = slot_job_id(&schedule.spec.id, slot_ms);
        if self.jobs.get(&job_id).is_some() {
            return FiringOutcome::Fired(job_id);
        }
        match self.enqueue(now_ms, vec![(job_id, job)], out).remove(0) {
            Ok(enqueued) => FiringOutcome::Fired(enqueued.job_id),
            Err(rejection) => FiringOutcome::Refused(rejection.label().to_owned()),
        }
    }
}

fn validate_spec(spec: &ScheduleSpec) -> Result<(), CallError> {
    if spec.id.is_empty() || spec.id.len() > MAX_SCHEDULE_ID_BYTES {
        return Err(CallError::InvalidArgument(format!("schedule id must be 1 to {MAX_SCHEDULE_ID_BYTES} bytes")));
    }
    if spec.id.chars().any(char::is_control) {
        return Err(CallError::InvalidArgument("schedule id must not contain control characters".into()));
    }
    spec.cadence.validate()
}
