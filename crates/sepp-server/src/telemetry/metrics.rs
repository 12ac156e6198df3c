//! The server's metrics: every instrument of meter `sepp`, recorded by the request handlers and
//! by the observer task (sweep results). The committer records only `sepp.commit.duration`, one
//! sample per persisted cycle (built in `server::run`).
//!
//! The counters of the hot path (calls, and jobs per queue) are plain atomics, read by
//! observable counters when a reader collects (a scrape, an OTLP push): one atomic add per
//! count instead of an attribute-set lookup in the SDK. Histograms and the rare counters
//! (rejections, dead letters drained or expired) are SDK instruments.
//!
//! Per-queue labels are bounded by [`QueueLabels`]: the first [`MAX_QUEUE_LABELS`] queue names
//! the server meets keep their own label (and counters) for the life of the process; every
//! later name is counted under [`OVERFLOW_QUEUE`]. A client that creates 100,000 queues
//! therefore makes at most 1,001 series per per-queue instrument (label pair), not 100,000.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableCounter};
use opentelemetry::{KeyValue, StringValue, Value};
use sepp_core::{DeadLetterCause, Rejection};
use tokio::sync::watch;

use crate::admin::stats::StatsSnapshot;
use sepp_engine::CommitterHandle;

/// How many distinct queue names get their own label.
pub const MAX_QUEUE_LABELS: usize = 1_000;
/// The label of every queue past [`MAX_QUEUE_LABELS`].
pub const OVERFLOW_QUEUE: &str = "_other";
/// The queue label of per-job rejections that name no usable queue.
pub const REJECTED_QUEUE: &str = "_rejected";

/// The per-queue counters, in the order of [`QUEUE_COUNTERS`].
#[derive(Clone, Copy)]
enum Count {
    Enqueued,
    Deduplicated,
    Reserved,
    Acked,
    Nacked,
    ReserveEmpty,
    Promotions,
    LeaseRedeliveries,
    DedupExpirations,
}

/// Name and description of each per-queue counter.
const QUEUE_COUNTERS: [(Count, &str, &str); 9] = [
    (Count::Enqueued, "sepp.jobs.enqueued", "New jobs inserted"),
    (Count::Deduplicated, "sepp.jobs.deduplicated", "Enqueues answered by an existing job (idempotency key)"),
    (Count::Reserved, "sepp.jobs.reserved", "Jobs claimed by workers"),
    (Count::Acked, "sepp.jobs.acked", "Jobs acknowledged"),
    (Count::Nacked, "sepp.jobs.nacked", "Successful nacks"),
    (Count::ReserveEmpty, "sepp.reserve.empty", "Reserve calls that ended empty, per listed queue"),
    (Count::Promotions, "sepp.sweep.promotions", "Scheduled jobs that became ready"),
    (Count::LeaseRedeliveries, "sepp.sweep.lease_redeliveries", "Expired leases whose job went back to ready"),
    (Count::DedupExpirations, "sepp.sweep.dedup_expirations", "Idempotency windows that ended"),
];

const CAUSES: [DeadLetterCause; 5] = [
    DeadLetterCause::AttemptsExhausted,
    DeadLetterCause::Rejected,
    DeadLetterCause::LeaseExpired,
    DeadLetterCause::Admin,
    DeadLetterCause::Cancelled,
];

/// One queue's label and counters.
pub struct QueueEntry {
    label: Value,
    counts: [AtomicU64; 9],
    dead_lettered: [AtomicU64; CAUSES.len()],
}

impl QueueEntry {
    fn new(label: Value) -> QueueEntry {
        QueueEntry { label, counts: Default::default(), dead_lettered: Default::default() }
    }

    fn add(&self, count: Count, value: u64) {
        self.counts[count as usize].fetch_add(value, Ordering::Relaxed);
    }
}

/// The bounded set of queue labels, each with its counters.
pub struct QueueLabels {
    cap: usize,
    known: RwLock<HashMap<Box<str>, Arc<QueueEntry>>>,
    overflow: Arc<QueueEntry>,
}

impl QueueLabels {
    pub fn new(cap: usize) -> QueueLabels {
        QueueLabels {
            cap,
            known: RwLock::new(HashMap::new()),
            overflow: Arc::new(QueueEntry::new(Value::from(OVERFLOW_QUEUE))),
        }
    }

    /// Runs `f` on the entry of `queue`: its own while there is room, else the overflow's.
    fn with<T>(&self, queue: &str, f: impl FnOnce(&QueueEntry) -> T) -> T {
        if let Some(entry) = self.known.read().expect("labels lock").get(queue) {
            return f(entry);
        }
        let mut known = self.known.write().expect("labels lock");
        if let Some(entry) = known.get(queue) {
            return f(entry);
        }
        if known.len() >= self.cap {
            return f(&self.overflow);
        }
        let entry = Arc::new(QueueEntry::new(Value::String(StringValue::from(Arc::<str>::from(queue)))));
        known.insert(queue.into(), entry.clone());
        f(&entry)
    }

    /// The label value of `queue`: its own name while there is room, else [`OVERFLOW_QUEUE`].
    pub fn value(&self, queue: &str) -> Value {
        self.with(queue, |entry| entry.label.clone())
    }

    /// The label value of a queue only if it already has one of its own (gauges use it, so
    /// that depths alone never take a place among the labels).
    fn known(&self, queue: &str) -> Option<Value> {
        self.known.read().expect("labels lock").get(queue).map(|entry| entry.label.clone())
    }

    /// Every entry with a label of its own, then the overflow entry.
    fn entries(&self) -> Vec<Arc<QueueEntry>> {
        let known = self.known.read().expect("labels lock");
        known.values().cloned().chain(std::iter::once(self.overflow.clone())).collect()
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
        DeadLetterCause::Cancelled => "cancelled",
    }
}

/// The QueueService methods that are counted, in the order of their counters.
pub const METHODS: [&str; 15] = [
    "EnqueueBatch",
    "EnqueueAtomic",
    "Reserve",
    "Ack",
    "Nack",
    "Extend",
    "DrainDeadLetters",
    "AckBatch",
    "CancelJob",
    "UpsertSchedule",
    "DeleteSchedule",
    "ListSchedules",
    "PauseQueue",
    "ResumeQueue",
    "ListPauses",
];

fn method_index(method: &str) -> Option<usize> {
    METHODS.iter().position(|known| *known == method)
}

/// Every instrument.
pub struct Metrics {
    pub labels: QueueLabels,
    /// Calls per method, `[ok, error]`.
    requests: [[AtomicU64; 2]; METHODS.len()],
    request_duration: Histogram<f64>,
    rejected: Counter<u64>,
    dead_letters_expired: Counter<u64>,
    dead_letters_drained: Counter<u64>,
    auth_failures: Counter<u64>,
    auth_throttled: Counter<u64>,
    _observed: Vec<ObservableCounter<u64>>,
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
        let metrics = Arc::new_cyclic(|weak: &std::sync::Weak<Metrics>| {
            let mut observed = Vec::new();
            let requests = weak.clone();
            observed.push(
                meter
                    .u64_observable_counter("sepp.requests")
                    .with_description("QueueService calls, by method and outcome")
                    .with_callback(move |observer| {
                        let Some(metrics) = requests.upgrade() else { return };
                        for (method, counts) in METHODS.iter().zip(&metrics.requests) {
                            for (outcome, count) in ["ok", "error"].iter().zip(counts) {
                                let count = count.load(Ordering::Relaxed);
                                if count > 0 {
                                    let labels = [KeyValue::new("method", *method), KeyValue::new("outcome", *outcome)];
                                    observer.observe(count, &labels);
                                }
                            }
                        }
                    })
                    .build(),
            );
            for (count, name, description) in QUEUE_COUNTERS {
                let weak = weak.clone();
                observed.push(
                    meter
                        .u64_observable_counter(name)
                        .with_description(description)
                        .with_callback(move |observer| {
                            let Some(metrics) = weak.upgrade() else { return };
                            for entry in metrics.labels.entries() {
                                let value = entry.counts[count as usize].load(Ordering::Relaxed);
                                if value > 0 {
                                    observer.observe(value, &[KeyValue::new("queue", entry.label.clone())]);
                                }
                            }
                        })
                        .build(),
                );
            }
            let dead = weak.clone();
            observed.push(
                meter
                    .u64_observable_counter("sepp.jobs.dead_lettered")
                    .with_description("Jobs dead-lettered, by cause")
                    .with_callback(move |observer| {
                        let Some(metrics) = dead.upgrade() else { return };
                        for entry in metrics.labels.entries() {
                            for (cause, value) in CAUSES.iter().zip(&entry.dead_lettered) {
                                let value = value.load(Ordering::Relaxed);
                                if value > 0 {
                                    let labels = [
                                        KeyValue::new("queue", entry.label.clone()),
                                        KeyValue::new("cause", cause_label(*cause)),
                                    ];
                                    observer.observe(value, &labels);
                                }
                            }
                        }
                    })
                    .build(),
            );
            Metrics {
                labels: QueueLabels::new(cap),
                requests: Default::default(),
                request_duration: meter
                    .f64_histogram("sepp.request.duration")
                    .with_unit("ms")
                    .with_description("Handler latency of QueueService calls")
                    .build(),
                rejected: counter("sepp.jobs.rejected", "Per-job enqueue rejections, by reason"),
                dead_letters_expired: counter("sepp.dead_letters.expired", "Dead letters removed by retention"),
                dead_letters_drained: counter("sepp.dead_letters.drained", "Dead letters removed by DrainDeadLetters"),
                auth_failures: counter(
                    "sepp.auth.failures",
                    "Failed authentication attempts (a wrong key or login), by listener",
                ),
                auth_throttled: counter(
                    "sepp.auth.throttled",
                    "Authentication attempts delayed or refused by the per-client throttle, by listener and action",
                ),
                _observed: observed,
            }
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
        connection_instruments(meter);
        forwarding_instruments(meter);
        metrics
    }

    fn count(&self, queue: &str, count: Count, value: u64) {
        self.labels.with(queue, |entry| entry.add(count, value));
    }

    pub fn request(&self, method: &'static str, ok: bool, elapsed_ms: f64) {
        if let Some(index) = method_index(method) {
            self.requests[index][usize::from(!ok)].fetch_add(1, Ordering::Relaxed);
        }
        self.request_duration.record(elapsed_ms, &[KeyValue::new("method", method)]);
    }

    pub fn enqueued(&self, queue: &str, count: u64) {
        self.count(queue, Count::Enqueued, count);
    }

    pub fn deduplicated(&self, queue: &str, count: u64) {
        self.count(queue, Count::Deduplicated, count);
    }

    pub fn rejected(&self, queue: &str, rejection: &Rejection) {
        self.rejected.add(1, &rejection_labels(&self.labels, queue, rejection));
    }

    pub fn reserved(&self, queue: &str, count: u64) {
        self.count(queue, Count::Reserved, count);
    }

    pub fn reserve_empty(&self, queue: &str) {
        self.count(queue, Count::ReserveEmpty, 1);
    }

    pub fn acked(&self, queue: &str) {
        self.count(queue, Count::Acked, 1);
    }

    pub fn nacked(&self, queue: &str) {
        self.count(queue, Count::Nacked, 1);
    }

    pub fn dead_lettered(&self, queue: &str, cause: DeadLetterCause, count: u64) {
        let index = CAUSES.iter().position(|known| *known == cause).expect("every cause is listed");
        self.labels.with(queue, |entry| entry.dead_lettered[index].fetch_add(count, Ordering::Relaxed));
    }

    pub fn promoted(&self, queue: &str, count: u64) {
        self.count(queue, Count::Promotions, count);
    }

    pub fn lease_redelivered(&self, queue: &str, count: u64) {
        self.count(queue, Count::LeaseRedeliveries, count);
    }

    pub fn dedup_expired(&self, queue: &str, count: u64) {
        self.count(queue, Count::DedupExpirations, count);
    }

    pub fn dead_letters_expired(&self, count: u64) {
        self.dead_letters_expired.add(count, &[]);
    }

    pub fn dead_letters_drained(&self, count: u64) {
        self.dead_letters_drained.add(count, &[]);
    }

    /// A failed authentication attempt on `listener` (`admin` or `grpc`).
    pub fn auth_failure(&self, listener: &'static str) {
        self.auth_failures.add(1, &[KeyValue::new("listener", listener)]);
    }

    /// An attempt the throttle answered late (`delayed`) or refused (`refused`).
    pub fn auth_throttled(&self, listener: &'static str, action: &'static str) {
        self.auth_throttled.add(1, &[KeyValue::new("listener", listener), KeyValue::new("action", action)]);
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

/// `sepp.connections.open` and `sepp.connections.refused`, per listener, from `net`'s counts.
fn connection_instruments(meter: &Meter) {
    use crate::net::{Listener, Refusal, counts_of};
    meter
        .u64_observable_gauge("sepp.connections.open")
        .with_description("Connections open, per listener")
        .with_callback(|observer| {
            for listener in Listener::ALL {
                observer.observe(counts_of(listener).open(), &[KeyValue::new("listener", listener.name())]);
            }
        })
        .build();
    meter
        .u64_observable_counter("sepp.connections.refused")
        .with_description(
            "Connections closed before they were served: past the listener's maximum, past the descriptor budget, or a missed handshake deadline",
        )
        .with_callback(|observer| {
            for listener in Listener::ALL {
                for refusal in Refusal::ALL {
                    observer.observe(
                        counts_of(listener).refused(refusal),
                        &[KeyValue::new("listener", listener.name()), KeyValue::new("reason", refusal.name())],
                    );
                }
            }
        })
        .build();
}

/// `sepp.cluster.forwarded_calls`: the calls this node forwarded to the leader, by outcome.
fn forwarding_instruments(meter: &Meter) {
    use std::sync::atomic::Ordering::Relaxed;
    meter
        .u64_observable_counter("sepp.cluster.forwarded_calls")
        .with_description(
            "Queue calls a follower forwarded to the leader: answered by it (whatever the status), or unreachable",
        )
        .with_callback(|observer| {
            let answered = crate::cluster::FORWARDED_ANSWERED.load(Relaxed);
            observer.observe(answered, &[KeyValue::new("outcome", "answered")]);
            let unreachable = crate::cluster::FORWARDED_UNREACHABLE.load(Relaxed);
            observer.observe(unreachable, &[KeyValue::new("outcome", "unreachable")]);
        })
        .build();
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
