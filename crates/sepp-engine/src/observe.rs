//! What the committer hands to those who watch it: stats consumers ([`StatsSink`]) and
//! telemetry ([`Observe`], [`Swept`]).

use std::sync::Arc;

use sepp_core::{Job, State, TimeMs};

/// Gets the state after every cycle, to publish what it likes of it (the server builds its stats
/// snapshots here). Installed by [`crate::Command::PublishStats`], which also turns on counting
/// per-queue totals; runs on the committer thread, so it must be quick.
pub trait StatsSink: Send {
    /// When the committer must wake, even without commands, to call [`StatsSink::after_cycle`].
    fn wake_ms(&self) -> TimeMs;

    /// Called at the end of every cycle, with the cycle's `now`. The sink may drop totals it
    /// decided nobody needs (`State::forget_totals`).
    fn after_cycle(&mut self, now_ms: TimeMs, state: &mut State);

    /// Something the published stats show changed (a pause): publish at the end of this cycle,
    /// whenever the last publication was.
    fn publish_soon(&mut self);

    /// `queue`'s totals were dropped: forget what was known of them.
    fn forget(&mut self, queue: &str);
}

/// What the committer hands to telemetry, when it is on: each persisted cycle's duration, and
/// what each sweep did (read back from the state after the sweep, so the sweep itself does no
/// extra work). Spans and labelled counters are built from the sweeps off this thread.
pub struct Observe {
    /// Called on the committer thread with each persisted cycle's duration in milliseconds
    /// (apply, write and persist); the server records it in a histogram.
    pub commit_duration: Option<Box<dyn Fn(f64) + Send>>,
    pub sweeps: Option<tokio::sync::mpsc::UnboundedSender<Swept>>,
    /// Whether ack, nack and extend answers carry their job.
    pub settled_jobs: bool,
}

/// What one sweep did, per job.
#[derive(Default)]
pub struct Swept {
    /// Scheduled jobs that became ready, with their attempt.
    pub promoted: Vec<(Arc<Job>, u32)>,
    /// Expired leases whose job is ready again, with the new attempt.
    pub redelivered: Vec<(Arc<Job>, u32)>,
    /// Expired leases on a final attempt, with that attempt.
    pub dead_lettered: Vec<(Arc<Job>, u32)>,
    /// The queue of each idempotency window that ended.
    pub dedup_expired: Vec<Arc<str>>,
    pub dead_letters_expired: usize,
    /// The queue of each job dead-lettered as cancelled: by a cancel, by its worker's next
    /// call on the cancelled lease, or when that lease ran out.
    pub cancelled: Vec<Arc<str>>,
}
