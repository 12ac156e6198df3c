//! The observer task: turns what each sweep did (handed over by the committer as [`Swept`])
//! into counters and `sepp.promote` / `sepp.redeliver` / `sepp.dead_letter` spans, on a tokio
//! task rather than on the committer.

use sepp_core::DeadLetterCause;
use tokio::sync::mpsc;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::telemetry::Telemetry;
use crate::telemetry::metrics::PerQueue;
use crate::telemetry::spans;
use sepp_engine::Swept;

/// Consumes sweeps until the committer drops its sender.
pub async fn run(telemetry: Telemetry, mut sweeps: mpsc::UnboundedReceiver<Swept>) {
    while let Some(swept) = sweeps.recv().await {
        record(&telemetry, &swept);
    }
}

/// Counts and traces one sweep.
pub fn record(telemetry: &Telemetry, swept: &Swept) {
    if let Some(metrics) = &telemetry.metrics {
        let mut promoted = PerQueue::default();
        swept.promoted.iter().for_each(|(job, _)| promoted.add(&job.queue));
        promoted.each(|queue, count| metrics.promoted(queue, count));
        let mut redelivered = PerQueue::default();
        swept.redelivered.iter().for_each(|(job, _)| redelivered.add(&job.queue));
        redelivered.each(|queue, count| metrics.lease_redelivered(queue, count));
        let mut dead = PerQueue::default();
        swept.dead_lettered.iter().for_each(|(job, _)| dead.add(&job.queue));
        dead.each(|queue, count| metrics.dead_lettered(queue, DeadLetterCause::LeaseExpired, count));
        let mut cancelled = PerQueue::default();
        swept.cancelled.iter().for_each(|queue| cancelled.add(queue));
        cancelled.each(|queue, count| metrics.dead_lettered(queue, DeadLetterCause::Cancelled, count));
        let mut dedup = PerQueue::default();
        swept.dedup_expired.iter().for_each(|queue| dedup.add(queue));
        dedup.each(|queue, count| metrics.dedup_expired(queue, count));
        if swept.dead_letters_expired > 0 {
            metrics.dead_letters_expired(swept.dead_letters_expired as u64);
        }
    }
    if telemetry.tracing {
        for (job, attempt) in &swept.promoted {
            let span = spans::sweep("sepp.promote", job, *attempt);
            span.set_attribute("job_type", opentelemetry::StringValue::from(job.job_type.clone()));
            span.set_attribute("priority", i64::from(job.priority));
            if let Some(at_ms) = job.scheduled_at_ms {
                span.set_attribute("scheduled_at", at_ms);
            }
        }
        for (job, attempt) in &swept.redelivered {
            let span = spans::sweep("sepp.redeliver", job, *attempt);
            span.set_attribute("max_attempts", i64::from(job.max_attempts));
            span.set_attribute("reason", "lease_expired");
        }
        for (job, attempt) in &swept.dead_lettered {
            let span = spans::sweep("sepp.dead_letter", job, *attempt);
            span.set_attribute("max_attempts", i64::from(job.max_attempts));
            span.set_attribute("cause", "lease_expired");
        }
    }
}
