//! The server's metrics: every instrument of meter `sepp`, recorded by the request handlers and
//! by the observer task (sweep results). The committer records only `sepp.commit.duration`, one
//! sample per persisted cycle (built in `server::run`).
//!
//! Per-queue labels are bounded by [`QueueLabels`]: the first [`MAX_QUEUE_LABELS`] queue names
//! the server meets keep their own label for the life of the process; every later name is
//! counted under [`OVERFLOW_QUEUE`]. A client that creates 100,000 queues therefore makes at
//! most 1,001 series per per-queue instrument (label pair), not 100,000.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::{KeyValue, StringValue, Value};
use sepp_core::{DeadLetterCause, Rejection};
use tokio::sync::watch;

use crate::admin::stats::StatsSnapshot;
use crate::committer::CommitterHandle;

/// How many distinct queue names get their own label.
pub const MAX_QUEUE_LABELS: usize = 1_000;
/// The label of every queue past [`MAX_QUEUE_LABELS`].
pub const OVERFLOW_QUEUE: &str = "_other";
/// The queue label of per-job rejections that name no usable queue.
pub const REJECTED_QUEUE: &str = "_rejected";

/// The bounded set of queue labels.
pub struct QueueLabels {
    cap: usize,
    known: RwLock<HashMap<Box<str>, Value>>,
    overflow: Value,
}

impl QueueLabels {
    pub fn new(cap: usize) -> QueueLabels {
        QueueLabels { cap, known: RwLock::new(HashMap::new()), overflow: Value::from(OVERFLOW_QUEUE) }
    }

    /// The label value of `queue`: its own name while there is room, else [`OVERFLOW_QUEUE`].
    pub fn value(&self, queue: &str) -> Value {
        if let Some(value) = self.known.read().expect("labels lock").get(queue) {
            return value.clone();
        }
        let mut known = self.known.write().expect("labels lock");
        if let Some(value) = known.get(queue) {
            return value.clone();
        }
        if known.len() >= self.cap {
            return self.overflow.clone();
        }
        let value = Value::String(StringValue::from(Arc::<str>::from(queue)));
        known.insert(queue.into(), value.clone());
        value
    }

    /// The label value of a queue only if it already has one of its own (gauges use it, so
    /// that depths alone never take a place among the labels).
    fn known(&self, queue: &str) -> Option<Value> {
        self.known.read().expect("labels lock").get(queue).cloned()
    }

    pub fn len(&self) -> usize {
        self.known.read().expect("labels lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The `queue` and `reason` labels of a per-job rejection.
pub fn rejection_labels(labels: &QueueLabels, queue: &str, rejection: &Rejection) -> [KeyValue; 2] {
    let reason = rejection.label();
    let queue = match reason {
        "unknown_queue" | "queue_name_too_long" | "invalid_request" => Value::from(REJECTED_QUEUE),
        _ => labels.value(queue),
    };
    [KeyValue::new("queue", queue), KeyValue::new("reason", reason)]
}

/// The `cause` label of a dead letter.
pub fn cause_label(cause: DeadLetterCause) -> &'static str {
    match cause {
        DeadLetterCause::AttemptsExhausted => "attempts_exhausted",
        DeadLetterCause::Rejected => "rejected",
        DeadLetterCause::LeaseExpired => "lease_expired",
        DeadLetterCause::Admin => "admin",
    }
}

/// Every instrument.
pub struct Metrics {
    pub labels: QueueLabels,
    requests: Counter<u64>,
    request_duration: Histogram<f64>,
    enqueued: Counter<u64>,
    reserved: Counter<u64>,
    acked: Counter<u64>,
    nacked: Counter<u64>,
    dead_lettered: Counter<u64>,
    deduplicated: Counter<u64>,
    rejected: Counter<u64>,
    reserve_empty: Counter<u64>,
    promotions: Counter<u64>,
    lease_redeliveries: Counter<u64>,
    dedup_expirations: Counter<u64>,
    dead_letters_expired: Counter<u64>,
    dead_letters_drained: Counter<u64>,
}

/// Which depth a queue gauge shows.
#[derive(Clone, Copy)]
enum Depth {
    Ready,
    Scheduled,
    Inflight,
    DeadLettered,
}

impl Metrics {
    /// Builds every instrument on `meter`. The queue gauges read the stats snapshot the
    /// committer publishes anyway; the command-queue gauge reads the channel's length.
    pub fn new(
        meter: &Meter,
        cap: usize,
        snapshots: watch::Receiver<Arc<StatsSnapshot>>,
        committer: CommitterHandle,
    ) -> Arc<Metrics> {
        let counter = |name: &'static str, description: &'static str| {
            meter.u64_counter(name).with_description(description).build()
        };
        let labels = QueueLabels::new(cap);
        let metrics = Arc::new(Metrics {
            labels,
            requests: counter("sepp.requests", "QueueService calls, by method and outcome"),
            request_duration: meter
                .f64_histogram("sepp.request.duration")
                .with_unit("ms")
                .with_description("Handler latency of QueueService calls")
                .build(),
            enqueued: counter("sepp.jobs.enqueued", "New jobs inserted"),
            reserved: counter("sepp.jobs.reserved", "Jobs claimed by workers"),
            acked: counter("sepp.jobs.acked", "Jobs acknowledged"),
            nacked: counter("sepp.jobs.nacked", "Successful nacks"),
            dead_lettered: counter("sepp.jobs.dead_lettered", "Jobs dead-lettered, by cause"),
            deduplicated: counter("sepp.jobs.deduplicated", "Enqueues answered by an existing job (idempotency key)"),
            rejected: counter("sepp.jobs.rejected", "Per-job enqueue rejections, by reason"),
            reserve_empty: counter("sepp.reserve.empty", "Reserve calls that ended empty, per listed queue"),
            promotions: counter("sepp.sweep.promotions", "Scheduled jobs that became ready"),
            lease_redeliveries: counter("sepp.sweep.lease_redeliveries", "Expired leases whose job went back to ready"),
            dedup_expirations: counter("sepp.sweep.dedup_expirations", "Idempotency windows that ended"),
            dead_letters_expired: counter("sepp.dead_letters.expired", "Dead letters removed by retention"),
            dead_letters_drained: counter("sepp.dead_letters.drained", "Dead letters removed by DrainDeadLetters"),
        });
        // The gauges' callbacks stay registered with the provider once built; they hold the
        // metrics (for the labels) weakly.
        let weak = Arc::downgrade(&metrics);
        for (name, depth, description) in [
            ("sepp.queue.ready", Depth::Ready, "Jobs ready to be reserved"),
            ("sepp.queue.scheduled", Depth::Scheduled, "Jobs waiting for their scheduled time"),
            ("sepp.queue.inflight", Depth::Inflight, "Jobs leased to workers"),
            ("sepp.queue.dead_lettered", Depth::DeadLettered, "Dead letters kept"),
        ] {
            let snapshots = snapshots.clone();
            let weak = weak.clone();
            meter
                .u64_observable_gauge(name)
                .with_description(description)
                .with_callback(move |observer| {
                    let Some(metrics) = weak.upgrade() else { return };
                    let snapshot = snapshots.borrow().clone();
                    for (value, label) in depths(&metrics.labels, &snapshot, depth) {
                        observer.observe(value, &[KeyValue::new("queue", label)]);
                    }
                })
                .build();
        }
        meter
            .u64_observable_gauge("sepp.command_queue.depth")
            .with_description("Commands waiting for the committer")
            .with_callback(move |observer| observer.observe(committer.queued() as u64, &[]))
            .build();
        metrics
    }

    fn queue(&self, queue: &str) -> [KeyValue; 1] {
        [KeyValue::new("queue", self.labels.value(queue))]
    }

    pub fn request(&self, method: &'static str, ok: bool, elapsed_ms: f64) {
        let outcome = if ok { "ok" } else { "error" };
        self.requests.add(1, &[KeyValue::new("method", method), KeyValue::new("outcome", outcome)]);
        self.request_duration.record(elapsed_ms, &[KeyValue::new("method", method)]);
    }

    pub fn enqueued(&self, queue: &str, count: u64) {
        self.enqueued.add(count, &self.queue(queue));
    }

    pub fn deduplicated(&self, queue: &str, count: u64) {
        self.deduplicated.add(count, &self.queue(queue));
    }

    pub fn rejected(&self, queue: &str, rejection: &Rejection) {
        self.rejected.add(1, &rejection_labels(&self.labels, queue, rejection));
    }

    pub fn reserved(&self, queue: &str, count: u64) {
        self.reserved.add(count, &self.queue(queue));
    }

    pub fn reserve_empty(&self, queue: &str) {
        self.reserve_empty.add(1, &self.queue(queue));
    }

    pub fn acked(&self, queue: &str) {
        self.acked.add(1, &self.queue(queue));
    }

    pub fn nacked(&self, queue: &str) {
        self.nacked.add(1, &self.queue(queue));
    }

    pub fn dead_lettered(&self, queue: &str, cause: DeadLetterCause, count: u64) {
        let labels = [KeyValue::new("queue", self.labels.value(queue)), KeyValue::new("cause", cause_label(cause))];
        self.dead_lettered.add(count, &labels);
    }

    pub fn promoted(&self, queue: &str, count: u64) {
        self.promotions.add(count, &self.queue(queue));
    }

    pub fn lease_redelivered(&self, queue: &str, count: u64) {
        self.lease_redeliveries.add(count, &self.queue(queue));
    }

    pub fn dedup_expired(&self, queue: &str, count: u64) {
        self.dedup_expirations.add(count, &self.queue(queue));
    }

    pub fn dead_letters_expired(&self, count: u64) {
        self.dead_letters_expired.add(count, &[]);
    }

    pub fn dead_letters_drained(&self, count: u64) {
        self.dead_letters_drained.add(count, &[]);
    }
}

/// One value per labelled queue, with every unlabelled queue summed under the overflow
/// label.
fn depths(labels: &QueueLabels, snapshot: &StatsSnapshot, depth: Depth) -> Vec<(u64, Value)> {
    let mut out = Vec::with_capacity(snapshot.queues.len().min(labels.cap + 1));
    let mut overflow = 0u64;
    let mut any_overflow = false;
    for (name, stats) in &snapshot.queues {
        let depths = stats.depths;
        let value = match depth {
            Depth::Ready => depths.ready,
            Depth::Scheduled => depths.scheduled,
            Depth::Inflight => depths.inflight,
            Depth::DeadLettered => depths.dead_letter,
        };
        match labels.known(name).or_else(|| {
            // A queue that holds jobs earns a label while there is room.
            (depths != sepp_core::Depths::default()).then(|| labels.value(name))
        }) {
            Some(label) if label.as_str() != OVERFLOW_QUEUE => out.push((value, label)),
            // An empty queue that never had a label shows nowhere.
            None => {}
            Some(_) => {
                overflow += value;
                any_overflow = true;
            }
        }
    }
    if any_overflow {
        out.push((overflow, Value::from(OVERFLOW_QUEUE)));
    }
    out
}

/// Counts per queue within one call, so that a batch of one queue costs one counter update.
#[derive(Default)]
pub struct PerQueue<'a> {
    counts: Vec<(&'a str, u64)>,
}

impl<'a> PerQueue<'a> {
    pub fn add(&mut self, queue: &'a str) {
        match self.counts.iter_mut().find(|(name, _)| *name == queue) {
            Some((_, count)) => *count += 1,
            None => self.counts.push((queue, 1)),
        }
    }

    pub fn each(&self, mut record: impl FnMut(&str, u64)) {
        for (queue, count) in &self.counts {
            record(queue, *count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_names_keep_their_label_and_later_ones_share_the_overflow_label() {
        let labels = QueueLabels::new(3);
        assert_eq!(labels.value("a").as_str(), "a");
        assert_eq!(labels.value("b").as_str(), "b");
        assert_eq!(labels.value("a").as_str(), "a", "a known name does not take a second place");
        assert_eq!(labels.value("c").as_str(), "c");
        assert_eq!(labels.value("d").as_str(), OVERFLOW_QUEUE);
        assert_eq!(labels.value("a").as_str(), "a", "known names keep their label after the cap");
        assert_eq!(labels.len(), 3);
    }

    #[test]
    fn a_hundred_thousand_queue_names_make_at_most_cap_plus_one_label_values() {
        let labels = QueueLabels::new(MAX_QUEUE_LABELS);
        let distinct: std::collections::HashSet<String> =
            (0..100_000).map(|n| labels.value(&format!("queue-{n}")).as_str().into_owned()).collect();
        assert_eq!(distinct.len(), MAX_QUEUE_LABELS + 1);
        assert!(distinct.contains(OVERFLOW_QUEUE));
        assert!(distinct.contains("queue-0") && distinct.contains("queue-999") && !distinct.contains("queue-1000"));
    }

    #[test]
    fn rejections_without_a_usable_queue_are_labelled_rejected() {
        let labels = QueueLabels::new(10);
        let unknown = Rejection::UnknownQueue { queue: "nope".into() };
        let [queue, reason] = rejection_labels(&labels, "nope", &unknown);
        assert_eq!((queue.value.as_str(), reason.value.as_str()), ("_rejected".into(), "unknown_queue".into()));
        assert!(labels.is_empty(), "an unknown queue takes no label");
        let full = Rejection::QueueFull { queue: "jobs".into(), limit: 1 };
        let [queue, reason] = rejection_labels(&labels, "jobs", &full);
        assert_eq!((queue.value.as_str(), reason.value.as_str()), ("jobs".into(), "queue_full".into()));
    }

    #[test]
    fn causes_have_their_wire_names() {
        assert_eq!(cause_label(DeadLetterCause::AttemptsExhausted), "attempts_exhausted");
        assert_eq!(cause_label(DeadLetterCause::Rejected), "rejected");
        assert_eq!(cause_label(DeadLetterCause::LeaseExpired), "lease_expired");
        assert_eq!(cause_label(DeadLetterCause::Admin), "admin");
    }

    #[test]
    fn depths_of_queues_past_the_cap_are_summed_under_the_overflow_label() {
        use crate::admin::stats::QueueStats;
        let labels = QueueLabels::new(2);
        let mut snapshot = StatsSnapshot::default();
        for (name, ready) in [("a", 1), ("b", 2), ("c", 4), ("d", 8), ("idle", 0)] {
            let depths = sepp_core::Depths { ready, ..sepp_core::Depths::default() };
            snapshot.queues.insert(Arc::from(name), QueueStats { depths, ..QueueStats::default() });
        }
        let observed: Vec<(u64, String)> = depths(&labels, &snapshot, Depth::Ready)
            .into_iter()
            .map(|(value, label)| (value, label.as_str().into_owned()))
            .collect();
        assert_eq!(
            observed,
            vec![(1, "a".to_owned()), (2, "b".to_owned()), (12, OVERFLOW_QUEUE.to_owned())],
            "c and d share the overflow series; an empty queue takes no label"
        );
        assert_eq!(labels.len(), 2);
    }

    #[test]
    fn per_queue_counts_group_by_name() {
        let mut per_queue = PerQueue::default();
        for queue in ["a", "a", "b", "a"] {
            per_queue.add(queue);
        }
        let mut seen = Vec::new();
        per_queue.each(|queue, count| seen.push((queue.to_owned(), count)));
        assert_eq!(seen, vec![("a".to_owned(), 3), ("b".to_owned(), 1)]);
    }
}
