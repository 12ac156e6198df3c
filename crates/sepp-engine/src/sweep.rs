//! The time-driven sweep: promotions, expired leases, schedule firings, windows and retention
//! that ended; what it did goes to the log lines and to telemetry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sepp_core::{Job, JobId, Record, SweepReport, TimeMs};

use crate::committer::Committer;
use crate::observe::Swept;

impl Committer {
    pub(crate) fn sweep(&mut self, now_ms: TimeMs) {
        let started = Instant::now();
        let first_record = self.records.len();
        let observing = self.observe.as_ref().is_some_and(|observe| observe.sweeps.is_some());
        let expiring = if observing { self.state.expired_lease_jobs(now_ms) } else { Vec::new() };
        let report = self.state.sweep(now_ms, &mut self.records);
        log_sweep(&report);
        if let Some(sweeps) = self.observe.as_ref().and_then(|observe| observe.sweeps.as_ref())
            && !report.is_empty()
        {
            let _ = sweeps.send(self.swept(&report, first_record, expiring));
        }
        let elapsed = started.elapsed();
        if elapsed >= Duration::from_millis(100) {
            tracing::warn!(target: crate::LOG_TARGET, elapsed_ms = elapsed.as_millis() as u64, "slow sweep");
        }
    }

    /// The jobs a sweep moved, for telemetry.
    pub(crate) fn swept(&self, report: &SweepReport, first_record: usize, expiring: Vec<(Arc<Job>, u32)>) -> Swept {
        let live = |ids: &[JobId]| ids.iter().filter_map(|id| self.state.live_job(id)).collect();
        // Read before the sweep: without retention a dead-lettered job is gone after it. The
        // sweep took the expired leases in this same order, so the leases it dead-lettered, and
        // the cancelled ones it ended, are subsequences of them.
        let mut dead = report.lease_dead_lettered.iter().peekable();
        let mut cancelled = report.cancelled_expired.iter().peekable();
        let mut dead_lettered = Vec::new();
        let mut cancelled_expired = Vec::new();
        for (job, attempt) in expiring {
            if dead.next_if(|id| **id == job.id).is_some() {
                dead_lettered.push((job, attempt));
            } else if cancelled.next_if(|id| **id == job.id).is_some() {
                cancelled_expired.push(job.queue.clone());
            }
        }
        Swept {
            promoted: live(&report.promoted),
            redelivered: live(&report.redelivered),
            dead_lettered,
            dedup_expired: self.records[first_record..]
                .iter()
                .filter_map(|record| match record {
                    Record::DedupExpired { queue, .. } => Some(queue.clone()),
                    _ => None,
                })
                .collect(),
            dead_letters_expired: report.dead_letters_expired,
            cancelled: cancelled_expired,
        }
    }
}

fn log_sweep(report: &SweepReport) {
    for job_id in &report.lease_dead_lettered {
        tracing::warn!(
            target: crate::LOG_TARGET,
            %job_id,
            "job dead-lettered after its lease expired on the final attempt"
        );
    }
    for firing in &report.schedule_firings {
        use sepp_core::schedule::FiringOutcome;
        let schedule = crate::logtext::Bounded(&firing.schedule_id);
        match &firing.outcome {
            FiringOutcome::Fired(job_id) => {
                tracing::debug!(
                    target: crate::LOG_TARGET,
                    %schedule,
                    slot_ms = firing.slot_ms,
                    %job_id,
                    "schedule fired"
                )
            }
            FiringOutcome::SkippedOverlap => tracing::info!(
                target: crate::LOG_TARGET,
                %schedule,
                slot_ms = firing.slot_ms,
                "schedule slot skipped: its previous job is still queued or running"
            ),
            FiringOutcome::SkippedMissed => {
                tracing::info!(
                    target: crate::LOG_TARGET,
                    %schedule,
                    slot_ms = firing.slot_ms,
                    "schedule slot missed; its catch-up policy is none"
                )
            }
            FiringOutcome::Refused(reason) => tracing::warn!(
                target: crate::LOG_TARGET,
                %schedule,
                slot_ms = firing.slot_ms,
                reason = reason.as_str(),
                "schedule slot skipped: the queue refused its job"
            ),
        }
    }
    if report.pauses_ended > 0 {
        tracing::info!(
            target: crate::LOG_TARGET,
            count = report.pauses_ended,
            "queue pause ended; reserves serve the queue again"
        );
    }
    if !report.is_empty() {
        tracing::debug!(
            target: crate::LOG_TARGET,
            promoted = report.promoted.len(),
            redelivered = report.redelivered.len(),
            dedup_expired = report.dedup_expired,
            dead_letters_expired = report.dead_letters_expired,
            "sweep"
        );
    }
}
