//! Recurring schedules through the admin API: `GET /schedules`, `PUT /schedules/{id}` to create
//! or replace one, `DELETE /schedules/{id}`. The same schedules as the gRPC calls
//! `UpsertSchedule`, `DeleteSchedule` and `ListSchedules`; changes are audited
//! (`schedule.put`, `schedule.delete`).

use axum::Json;
use axum::extract::{Path, State};
use sepp_admin_types as api;

use sepp_core::TimeMs;
use sepp_core::schedule::{Cadence, CatchUp, JobTemplate, Overlap, Schedule, ScheduleSpec};

use crate::admin::AdminState;
use crate::admin::access::{Operator, Viewer};
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::errors::{AdminError, AdminResult};
use crate::admin::jobs::new_job;
use crate::admin::views;

/// `GET /schedules`: every schedule, by id, with its next firing.
pub async fn list(State(state): State<AdminState>, Viewer(_): Viewer) -> AdminResult<Json<api::ScheduleList>> {
    let schedules = ask(&state.committer, |reply| AdminCommand::Schedules { reply }).await?;
    Ok(Json(api::ScheduleList { schedules: schedules.iter().map(schedule_view).collect() }))
}

/// `PUT /schedules/{id}`: creates or replaces the schedule.
pub async fn put(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(id): Path<String>,
    Json(body): Json<api::ScheduleBody>,
) -> AdminResult<Json<api::ScheduleInfo>> {
    let spec = spec(id, body)?;
    let answer = ask(&state.committer, |reply| AdminCommand::UpsertSchedule { spec, actor, reply }).await?;
    let (schedule, entry) = answer.map_err(|error| match error {
        sepp_core::CallError::InvalidArgument(message) => AdminError::invalid_argument(message),
        sepp_core::CallError::FailedPrecondition(message) => AdminError::conflict("too_many_schedules", message),
    })?;
    state.announce(&entry);
    Ok(Json(schedule_view(&schedule)))
}

/// `DELETE /schedules/{id}`: `{id, deleted}`; the jobs it fired stay.
pub async fn delete(
    State(state): State<AdminState>,
    Operator(actor): Operator,
    Path(id): Path<String>,
) -> AdminResult<Json<api::ScheduleDeleted>> {
    let deleted = ask(&state.committer, |reply| AdminCommand::DeleteSchedule { id: id.clone(), actor, reply }).await?;
    if let Some(entry) = &deleted {
        state.announce(entry);
    }
    Ok(Json(api::ScheduleDeleted { id, deleted: deleted.is_some() }))
}

fn spec(id: String, body: api::ScheduleBody) -> AdminResult<ScheduleSpec> {
    let cadence = match (body.cron, body.every_ms) {
        (Some(cron), None) => Cadence::Cron {
            expression: cron.expression,
            time_zone: cron.time_zone.filter(|zone| !zone.is_empty()).unwrap_or_else(|| "UTC".into()),
        },
        (None, Some(interval_ms)) => Cadence::Every { interval_ms },
        _ => return Err(AdminError::invalid_argument("a schedule needs exactly one of cron and every_ms")),
    };
    let overlap = match body.overlap.as_deref() {
        None | Some("skip") => Overlap::Skip,
        Some("allow") => Overlap::Allow,
        Some(other) => {
            return Err(AdminError::invalid_argument(format!("overlap must be skip or allow, got {other:?}")));
        }
    };
    let catch_up = match body.catch_up.as_deref() {
        None | Some("latest") => CatchUp::Latest,
        Some("none") => CatchUp::Skip,
        Some(other) => {
            return Err(AdminError::invalid_argument(format!("catch_up must be latest or none, got {other:?}")));
        }
    };
    let job = new_job(body.queue, body.job)?;
    if job.idempotency_key.is_some() || job.scheduled_at_ms.is_some() {
        return Err(AdminError::invalid_argument("a schedule's job takes no idempotency_key and no scheduled_at_ms"));
    }
    let template = JobTemplate {
        queue: job.queue,
        job_type: job.job_type,
        payload: job.payload,
        priority: job.priority,
        max_attempts: job.max_attempts,
        custom: job.custom.into_iter().filter_map(|(key, value)| Some((key, value?))).collect(),
    };
    Ok(ScheduleSpec { id, cadence, template, overlap, catch_up })
}

fn millis(ms: TimeMs) -> Option<TimeMs> {
    (ms != TimeMs::MAX).then_some(ms)
}

/// `{id, cron: {expression, time_zone} | null, every_ms | null, queue, job_type, payload:
/// {encoding, size_bytes} | null, priority, max_attempts, custom, overlap, catch_up,
/// next_fire_at_ms, last_slot_at_ms, last_job_id, fired, created_at_ms}`.
pub fn schedule_view(schedule: &Schedule) -> api::ScheduleInfo {
    let spec = &schedule.spec;
    let template = &spec.template;
    let (cron, every_ms) = match &spec.cadence {
        Cadence::Cron { expression, time_zone } => {
            (Some(api::Cron { expression: expression.clone(), time_zone: time_zone.clone() }), None)
        }
        Cadence::Every { interval_ms } => (None, Some(*interval_ms)),
    };
    api::ScheduleInfo {
        id: spec.id.clone(),
        cron,
        every_ms,
        queue: template.queue.to_string(),
        job_type: template.job_type.to_string(),
        payload: template.payload.as_ref().map(|payload| api::PayloadSize {
            encoding: payload.encoding.to_string(),
            size_bytes: payload.data.len() as u64,
        }),
        priority: template.priority.map(u64::from),
        max_attempts: template.max_attempts.map(u64::from),
        custom: views::custom_map_json(template.custom.iter()),
        overlap: match spec.overlap {
            Overlap::Skip => api::Overlap::Skip,
            Overlap::Allow => api::Overlap::Allow,
        },
        catch_up: match spec.catch_up {
            CatchUp::Latest => api::CatchUp::Latest,
            CatchUp::Skip => api::CatchUp::None,
        },
        next_fire_at_ms: millis(schedule.next_ms),
        last_slot_at_ms: schedule.last_slot_ms,
        last_job_id: schedule.last_job.map(|job_id| job_id.hyphenated().to_string()),
        fired: schedule.fired,
        created_at_ms: schedule.anchor_ms,
    }
}
