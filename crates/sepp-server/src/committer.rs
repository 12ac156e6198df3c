//! The committer: the one thread that owns the queue state.
//!
//! Callers send [`Command`]s over a bounded channel (they wait when it is full). Each cycle the
//! committer drains every waiting command, stamps one `now`, applies them to the core, runs the
//! sweep when something is due, serves parked reserves that can now be served, hands the records
//! of the whole group to the [`Log`] and persists once, and only then answers every caller.
//! It owns no gRPC types and makes no queue decisions of its own: the rules are `sepp-core`'s.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sepp_core::validate::{NackStrategy, ReservePlan};
use sepp_core::{
    AtomicOutcome, DeadLetter, DeadLetterCause, Delivery, Enqueued, Job, JobId, LeaseError, Nacked, NewJob,
    PayloadData, Policy, Record, Rejection, State, SweepReport, TimeMs,
};
use tokio::sync::oneshot;

use sepp_log::Log;

/// Most commands applied in one cycle; bounds reply latency under a flood.
const MAX_GROUP: usize = 4096;

/// Cancelled leases kept for a Consume stream that has not read them yet.
pub const CANCEL_FEED_CAPACITY: usize = 4096;

pub type Reply<T> = oneshot::Sender<T>;

/// A delivered job or drained dead letter, with its payload bytes loaded from wherever the log
/// keeps them.
pub struct Loaded<T> {
    pub value: T,
    pub payload_data: Option<Vec<u8>>,
}

/// A request to the committer, with the channel its answer goes back on.
pub enum Command {
    Enqueue {
        jobs: Vec<(JobId, NewJob)>,
        reply: Reply<Vec<Result<Enqueued, Rejection>>>,
    },
    EnqueueAtomic {
        jobs: Vec<(JobId, NewJob)>,
        reply: Reply<AtomicOutcome>,
    },
    Reserve {
        plan: ReservePlan,
        reply: Reply<Vec<Loaded<Delivery>>>,
    },
    Ack {
        job_id: JobId,
        attempt: u32,
        reply: Reply<Result<Settled<()>, LeaseError>>,
    },
    Nack {
        job_id: JobId,
        attempt: u32,
        strategy: NackStrategy,
        reason: Option<String>,
        reply: Reply<Result<Settled<Nacked>, LeaseError>>,
    },
    Extend {
        job_id: JobId,
        attempt: u32,
        lease_ms: u64,
        reply: Reply<Result<Settled<TimeMs>, LeaseError>>,
    },
    DrainDeadLetters {
        queue: Option<String>,
        max: u32,
        reply: Reply<Vec<Loaded<DeadLetter>>>,
    },
    Cancel {
        job_id: JobId,
        reason: Option<String>,
        reply: Reply<Result<sepp_core::CancelOutcome, sepp_core::CancelError>>,
    },
    UpsertSchedule {
        spec: Box<sepp_core::schedule::ScheduleSpec>,
        reply: Reply<Result<sepp_core::schedule::Schedule, sepp_core::CallError>>,
    },
    DeleteSchedule {
        id: String,
        reply: Reply<bool>,
    },
    ListSchedules {
        reply: Reply<Vec<sepp_core::schedule::Schedule>>,
    },
    /// A hot reload produced a new policy.
    SetPolicy(Arc<Policy>),
    /// A request of the admin API (see `admin::commands`).
    Admin(Box<crate::admin::commands::AdminCommand>),
    /// Shutdown began: answer parked reserves empty and stop parking new ones.
    Shutdown,
    /// The listener stopped serving: finish this cycle, then close the log and stop, even
    /// while handles remain (a connection that never answers the transport's goodbye can hold
    /// one for as long as its peer likes). Later commands fail as after any stop.
    Close,
    /// Cluster mode: this node leads now. The committer serves from `state` (the committed
    /// state, rebuilt by the caller) and makes its cycles durable through `log` (proposals to
    /// the other nodes).
    Lead {
        state: Box<State>,
        log: Box<dyn Log>,
    },
    /// Cluster mode: this node does not lead (any more). See [`Committer::step_down`].
    Follow,
}

/// The outcome of a lease operation, with the job it settled when telemetry asked for it
/// (spans link to the job's producer and metrics label it with its queue).
pub struct Settled<T> {
    pub value: T,
    pub job: Option<Arc<Job>>,
}

/// What the committer hands to telemetry, when it is on: a histogram sample per persisted
/// cycle, and what each sweep did (read back from the state after the sweep, so the sweep
/// itself does no extra work). Spans and labelled counters are built from it off this thread.
pub struct Observe {
    pub commit_duration: Option<opentelemetry::metrics::Histogram<f64>>,
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

/// An answer computed in this cycle, sent once the cycle's records are persisted.
enum Answer {
    Enqueue(Reply<Vec<Result<Enqueued, Rejection>>>, Vec<Result<Enqueued, Rejection>>),
    EnqueueAtomic(Reply<AtomicOutcome>, AtomicOutcome),
    Reserve(Reply<Vec<Loaded<Delivery>>>, Vec<Delivery>),
    Ack(Reply<Result<Settled<()>, LeaseError>>, Result<Settled<()>, LeaseError>),
    Nack(Reply<Result<Settled<Nacked>, LeaseError>>, Result<Settled<Nacked>, LeaseError>),
    Extend(Reply<Result<Settled<TimeMs>, LeaseError>>, Result<Settled<TimeMs>, LeaseError>),
    Drain(Reply<Vec<Loaded<DeadLetter>>>, Vec<DeadLetter>),
    Cancel(
        Reply<Result<sepp_core::CancelOutcome, sepp_core::CancelError>>,
        Result<sepp_core::CancelOutcome, sepp_core::CancelError>,
    ),
    Schedule(
        Reply<Result<sepp_core::schedule::Schedule, sepp_core::CallError>>,
        Result<Box<sepp_core::schedule::Schedule>, sepp_core::CallError>,
    ),
    Deleted(Reply<bool>, bool),
    Schedules(Reply<Vec<sepp_core::schedule::Schedule>>, Vec<sepp_core::schedule::Schedule>),
    Admin(crate::admin::commands::Deferred),
    /// Leased jobs this cycle cancelled, told to the Consume streams once durable.
    LeasesCancelled(tokio::sync::broadcast::Sender<JobId>, Vec<JobId>),
}

/// What a caller that had gone did not take, and the queue must get back: the jobs leased to
/// its reserve, or the dead letters drained for it.
enum Unclaimed {
    Leases(Vec<Delivery>),
    DeadLetters(Vec<Loaded<DeadLetter>>),
}

impl Answer {
    /// Sends the answer, loading the payloads of delivered jobs first. A payload that cannot be
    /// read fails that one call (the caller sees INTERNAL; a leased job is redelivered later).
    /// A caller that went away (a cancelled call) just does not hear the answer; what it would
    /// have taken out of the queue comes back as [`Unclaimed`].
    fn send(self, log: &mut dyn Log) -> Option<Unclaimed> {
        match self {
            Answer::Enqueue(reply, value) => drop(reply.send(value)),
            Answer::EnqueueAtomic(reply, value) => drop(reply.send(value)),
            Answer::Reserve(reply, deliveries) => {
                let loaded = load_all(log, deliveries, |delivery| &delivery.job)?;
                let unclaimed = reply.send(loaded).err()?;
                return Some(Unclaimed::Leases(unclaimed.into_iter().map(|loaded| loaded.value).collect()));
            }
            Answer::Ack(reply, value) => drop(reply.send(value)),
            Answer::Nack(reply, value) => drop(reply.send(value)),
            Answer::Extend(reply, value) => drop(reply.send(value)),
            Answer::Cancel(reply, value) => drop(reply.send(value)),
            Answer::Schedule(reply, value) => drop(reply.send(value.map(|schedule| *schedule))),
            Answer::Deleted(reply, value) => drop(reply.send(value)),
            Answer::Schedules(reply, value) => drop(reply.send(value)),
            Answer::Drain(reply, dead_letters) => {
                let loaded = load_all(log, dead_letters, |dead| &dead.job)?;
                return reply.send(loaded).err().map(Unclaimed::DeadLetters);
            }
            Answer::Admin(deferred) => deferred.send(log),
            Answer::LeasesCancelled(feed, job_ids) => job_ids.into_iter().for_each(|job_id| drop(feed.send(job_id))),
        }
        None
    }
}

/// Loads the payload bytes of every item, or `None` when any of them cannot be read.
fn load_all<T>(log: &mut dyn Log, items: Vec<T>, job: impl Fn(&T) -> &Job) -> Option<Vec<Loaded<T>>> {
    items
        .into_iter()
        .map(|value| {
            let payload_data = match job(&value).payload.as_ref().map(|payload| &payload.data) {
                None => None,
                Some(PayloadData::Inline(bytes)) => Some(bytes.to_vec()),
                Some(PayloadData::Stored(stored)) => match log.read_payload(stored) {
                    Ok(bytes) => Some(bytes),
                    Err(error) => {
                        tracing::error!(%error, job_id = %job(&value).id, "reading a payload back from the log failed");
                        return None;
                    }
                },
            };
            Some(Loaded { value, payload_data })
        })
        .collect()
}

/// A Reserve parked until a job becomes ready in one of its queues or its wait ends.
struct Waiter {
    plan: ReservePlan,
    deadline_ms: TimeMs,
    reply: Reply<Vec<Loaded<Delivery>>>,
}

/// The sending side, cloned into every request handler.
#[derive(Clone)]
pub struct CommitterHandle {
    sender: flume::Sender<Command>,
    /// Why storage is poisoned, once it is.
    poison: tokio::sync::watch::Receiver<Option<String>>,
    /// Whether the committer serves (false while it follows, in cluster mode).
    leading: tokio::sync::watch::Receiver<bool>,
    /// Leased jobs cancelled, each once its cancel is durable (see [`CommitterHandle::cancelled_leases`]).
    cancels: tokio::sync::broadcast::Sender<JobId>,
}

impl CommitterHandle {
    /// Sends a command, waiting while the channel is full. Fails only once the committer stopped.
    pub async fn send(&self, command: Command) -> Result<(), Stopped> {
        self.sender.send_async(command).await.map_err(|_| Stopped)
    }

    /// Commands waiting in the channel (the admin API shows it).
    pub fn queued(&self) -> usize {
        self.sender.len()
    }

    /// Sends a command from a thread outside the runtime, blocking while the channel is full.
    pub fn send_blocking(&self, command: Command) -> Result<(), Stopped> {
        self.sender.send(command).map_err(|_| Stopped)
    }

    /// Resolves, with the reason, once a failed write poisoned storage. Never resolves for a
    /// committer that works, or that stopped without failing.
    pub async fn poisoned(&self) -> String {
        let mut poison = self.poison.clone();
        // The reason is copied out first: the watch's read guard must not live across an await.
        let reason = poison.wait_for(Option::is_some).await.map(|reason| reason.clone().unwrap_or_default());
        match reason {
            Ok(reason) => reason,
            Err(_) => std::future::pending().await,
        }
    }

    /// Why storage is poisoned, if it is.
    pub fn poison_reason(&self) -> Option<String> {
        self.poison.borrow().clone()
    }

    /// Whether the committer serves commands: always on a single node; in cluster mode, from
    /// [`Command::Lead`] until it follows again (told to, or because a proposal failed).
    pub fn leading(&self) -> tokio::sync::watch::Receiver<bool> {
        self.leading.clone()
    }

    /// The ids of leased jobs as they are cancelled (by CancelJob or the admin API), each sent
    /// once the cancel is durable. A receiver more than [`CANCEL_FEED_CAPACITY`] behind misses
    /// the oldest (it hears `Lagged`); the committer looks for cancels only while one listens.
    pub fn cancelled_leases(&self) -> tokio::sync::broadcast::Receiver<JobId> {
        self.cancels.subscribe()
    }
}

/// The committer is gone: storage accepts no more commands.
#[derive(Debug, Clone, Copy)]
pub struct Stopped;

/// Resolves once the committer has stopped and closed its log (its background threads joined,
/// the data directory unlocked). The thread then frees the state's memory, which with a large
/// backlog takes a while (about 0.05 s for a million jobs) and which nobody needs to wait for: a
/// process that exits right after this loses nothing.
pub struct Closed(oneshot::Receiver<()>);

impl Closed {
    /// Waits for the committer to close. Err when its thread panicked instead.
    pub async fn wait(self) -> Result<(), Stopped> {
        self.0.await.map_err(|_| Stopped)
    }
}

/// Settings of the committer loop.
pub struct CommitterSettings {
    pub command_queue_capacity: usize,
    pub sweep_interval_ms: u64,
    /// How many payload places of a finished checkpoint one cycle applies.
    pub relocations_per_cycle: usize,
    /// Where each cycle reads its `now`.
    pub clock: Arc<dyn Clock>,
    /// What telemetry wants handed over; `None` when it is off.
    pub observe: Option<Observe>,
    /// Cluster mode: start as a follower, refusing every command until [`Command::Lead`].
    pub follows: bool,
}

impl CommitterSettings {
    /// A cycle's share of a checkpoint's relocations: about a millisecond of work.
    pub const RELOCATIONS_PER_CYCLE: usize = 16_384;
}

/// Where the server reads the time: once per committer cycle (every decision of the cycle uses
/// that one reading), and for the checks of a request that need it (a schedule's horizon). The
/// server runs on [`SystemClock`]; tests pass a clock they move themselves, so that leases,
/// schedules and dedup windows expire when the test says, not when the machine gets to it.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> TimeMs;
}

/// The wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> TimeMs {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as TimeMs)
    }
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(message), _) => message,
        (None, Some(message)) => message,
        (None, None) => "(no message)",
    }
}

/// Starts the committer thread. The thread first runs `open`, which recovers the state and the
/// log: on this thread, so the memory of the recovered state belongs to the thread that owns and
/// frees it from then on (recovery's own buffers go back to the allocator of a thread that keeps
/// allocating). Returns once `open` is done, with its error if it failed; the thread then serves
/// commands until every handle is dropped, and [`Closed`] tells when it has.
pub fn spawn<E: Send + 'static>(
    open: impl FnOnce() -> Result<(State, Box<dyn Log>), E> + Send + 'static,
    settings: CommitterSettings,
) -> Result<(CommitterHandle, Closed), E> {
    let (sender, receiver) = flume::bounded(settings.command_queue_capacity.max(1));
    let (poison, poison_receiver) = tokio::sync::watch::channel(None);
    let (leading, leading_receiver) = tokio::sync::watch::channel(!settings.follows);
    let (cancels, _) = tokio::sync::broadcast::channel(CANCEL_FEED_CAPACITY);
    let committer_cancels = cancels.clone();
    let poison_on_panic = poison.clone();
    let (opened, open_result) = std::sync::mpsc::sync_channel(1);
    let (closed, closed_receiver) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("sepp-committer".into())
        .spawn(move || {
            let (state, log) = match open() {
                Ok(opened_storage) => {
                    let _ = opened.send(Ok(()));
                    opened_storage
                }
                Err(error) => {
                    let _ = opened.send(Err(error));
                    return;
                }
            };
            let committer = Committer {
                state,
                log,
                receiver,
                sweep_interval: Duration::from_millis(settings.sweep_interval_ms.max(1)),
                waiters: VecDeque::new(),
                closing: false,
                close: false,
                poison,
                records: Vec::new(),
                answers: Vec::new(),
                pending: VecDeque::new(),
                served_generation: 0,
                relocating: sepp_log::Relocations::default(),
                relocations_per_cycle: settings.relocations_per_cycle.max(1),
                stats: None,
                clock: settings.clock,
                observe: settings.observe,
                following: settings.follows,
                leading,
                cancels: committer_cancels,
            };
            // A panic is a broken invariant. It poisons storage like a failed write: callers of
            // the cycle hear INTERNAL, later calls too, and the server stops and says why,
            // rather than serving on with a dead committer.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| committer.run())) {
                Ok(state) => {
                    let _ = closed.send(());
                    drop(state);
                }
                Err(panic) => {
                    let reason = format!("the committer thread panicked: {}", panic_message(&*panic));
                    tracing::error!(%reason, "storage is poisoned and the server stops");
                    poison_on_panic.send_replace(Some(reason));
                    let _ = closed.send(());
                }
            }
        })
        .expect("spawn the committer thread");
    match open_result.recv() {
        Ok(Ok(())) => Ok((
            CommitterHandle { sender, poison: poison_receiver, leading: leading_receiver, cancels },
            Closed(closed_receiver),
        )),
        Ok(Err(error)) => {
            let _ = thread.join();
            Err(error)
        }
        // `open` panicked: so does the caller, with the same payload.
        Err(_) => std::panic::resume_unwind(thread.join().expect_err("the thread ended without an answer")),
    }
}

struct Committer {
    state: State,
    log: Box<dyn Log>,
    receiver: flume::Receiver<Command>,
    sweep_interval: Duration,
    waiters: VecDeque<Waiter>,
    closing: bool,
    /// Asked to stop after the current cycle ([`Command::Close`]).
    close: bool,
    /// Set with the reason when a write or sync failed; the loop stops after that cycle.
    poison: tokio::sync::watch::Sender<Option<String>>,
    records: Vec<Record>,
    answers: Vec<Answer>,
    /// The answers of the cycles whose frames sync in the background (oldest first, at most
    /// `Log::max_in_flight`) while later cycles are applied; each sent once its sync finished.
    pending: VecDeque<Vec<Answer>>,
    /// The ready generation up to which the waiters were already offered jobs.
    served_generation: u64,
    /// Payload places a finished checkpoint moved that are not applied yet.
    relocating: sepp_log::Relocations,
    relocations_per_cycle: usize,
    /// Publishes stats snapshots for the admin API, once it asked for them.
    stats: Option<crate::admin::stats::StatsPublisher>,
    clock: Arc<dyn Clock>,
    observe: Option<Observe>,
    /// Cluster mode, while this node does not lead: the state is empty and every command is
    /// refused.
    following: bool,
    leading: tokio::sync::watch::Sender<bool>,
    /// Where cancelled leases are told to Consume streams.
    cancels: tokio::sync::broadcast::Sender<JobId>,
}

/// The log of a committer that follows (cluster mode, before [`Command::Lead`] and after it
/// steps down): nothing reaches it, since commands are refused before.
pub struct NotLeading;

impl Log for NotLeading {
    fn append(&mut self, _records: &[Record]) -> std::io::Result<()> {
        Err(std::io::Error::other("this node does not lead"))
    }
    fn write(&mut self) -> std::io::Result<Vec<(JobId, sepp_core::StoredPayload)>> {
        Ok(Vec::new())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn start_sync(&mut self) {}
    fn finish_sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn background_sync_pays(&self) -> bool {
        false
    }
    fn failure_is_final(&self) -> bool {
        false
    }
    fn read_payload(&mut self, _stored: &sepp_core::StoredPayload) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other("this node does not lead"))
    }
}

impl Committer {
    /// Serves commands until every handle is gone or storage is poisoned, then closes the log
    /// and hands back the state, for the caller to free once it has said the committer closed.
    fn run(mut self) -> State {
        let mut group = Vec::new();
        loop {
            match self.receiver.recv_deadline(self.next_wake()) {
                Ok(command) => group.push(command),
                Err(flume::RecvTimeoutError::Timeout) => {}
                Err(flume::RecvTimeoutError::Disconnected) => break,
            }
            while group.len() < MAX_GROUP {
                match self.receiver.try_recv() {
                    Ok(command) => group.push(command),
                    Err(_) => break,
                }
            }
            if !self.cycle(&mut group) {
                break;
            }
        }
        // Nothing stays pending (a cycle pipelines only while commands wait), but a caller must
        // never be left without its answer if that changes.
        if let Err(error) = self.flush_pending(0) {
            self.poisoned(&error);
        }
        self.answer_waiters_empty();
        tracing::info!("committer thread stopped; storage is no longer accepting commands");
        drop(self.log);
        self.state
    }

    /// When the loop must wake even without commands: the next sweep deadline, the next waiter
    /// deadline, or the sweep interval, whichever is first.
    fn next_wake(&self) -> Instant {
        if !self.records.is_empty() || !self.pending.is_empty() {
            // Records of work done after the last persist (leases taken back) go out now, and
            // answers waiting for a sync are not left waiting for the next command.
            return Instant::now();
        }
        let now = self.clock.now_ms();
        let deadlines = self
            .state
            .next_deadline_ms()
            .into_iter()
            .chain(self.waiters.iter().map(|waiter| waiter.deadline_ms))
            .chain(self.stats.as_ref().map(crate::admin::stats::StatsPublisher::wake_ms));
        let wait = deadlines
            .min()
            .map_or(self.sweep_interval, |deadline_ms| {
                Duration::from_millis(deadline_ms.saturating_sub(now).max(0) as u64)
            })
            .min(self.sweep_interval);
        Instant::now() + wait
    }

    /// One cycle over `group`. False when the committer must stop: storage is poisoned, or it
    /// was asked to close.
    fn cycle(&mut self, group: &mut Vec<Command>) -> bool {
        let now_ms = self.clock.now_ms();
        let timed = self.observe.as_ref().and_then(|observe| observe.commit_duration.as_ref()).map(|_| Instant::now());
        if self.state.next_deadline_ms().is_some_and(|deadline_ms| deadline_ms <= now_ms) {
            self.sweep(now_ms);
        }
        for command in group.drain(..) {
            self.apply(now_ms, command);
        }
        self.serve_waiters(now_ms);
        self.tell_cancelled_leases();
        if let Err(error) = self.persist() {
            if self.log.failure_is_final() {
                self.poisoned(&error);
                return false;
            }
            self.step_down(&format!("a proposal failed: {error}"));
            return !self.close;
        }
        if let (Some(started), Some(histogram)) =
            (timed, self.observe.as_ref().and_then(|observe| observe.commit_duration.as_ref()))
        {
            histogram.record(started.elapsed().as_secs_f64() * 1000.0, &[]);
        }
        // This cycle's answers (none when they wait for a background sync).
        let answers = std::mem::take(&mut self.answers);
        self.answer_all(answers);
        // Only now: answers hold jobs as they were when applied, whose payloads may sit in the
        // very files a finished checkpoint is about to let the log delete.
        self.maintain_log();
        if let Some(stats) = &mut self.stats {
            stats.after_cycle(now_ms, &mut self.state);
        }
        !self.close
    }

    /// Queues, as an answer of this cycle, the leased jobs it cancelled, when a Consume stream
    /// listens.
    fn tell_cancelled_leases(&mut self) {
        if self.cancels.receiver_count() == 0 {
            return;
        }
        let job_ids: Vec<JobId> = self
            .records
            .iter()
            .filter_map(|record| match record {
                Record::LeaseCancelled { job_id, .. } => Some(*job_id),
                _ => None,
            })
            .collect();
        if !job_ids.is_empty() {
            self.answers.push(Answer::LeasesCancelled(self.cancels.clone(), job_ids));
        }
    }

    fn sweep(&mut self, now_ms: TimeMs) {
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
            tracing::warn!(elapsed_ms = elapsed.as_millis() as u64, "slow sweep");
        }
    }

    /// The jobs a sweep moved, for telemetry.
    fn swept(&self, report: &SweepReport, first_record: usize, expiring: Vec<(Arc<Job>, u32)>) -> Swept {
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

    /// The job a lease operation is about to settle, when telemetry wants it.
    fn settled_job(&self, job_id: &JobId) -> Option<Arc<Job>> {
        if !self.observe.as_ref().is_some_and(|observe| observe.settled_jobs) {
            return None;
        }
        self.state.live_job(job_id).map(|(job, _)| job)
    }

    fn apply(&mut self, now_ms: TimeMs, command: Command) {
        let command = match command {
            Command::Lead { state, log } => {
                self.lead(*state, log);
                return;
            }
            Command::Follow => {
                self.step_down("another node leads");
                return;
            }
            // A follower refuses what needs the state: its caller hears no answer.
            Command::SetPolicy(_) | Command::Shutdown | Command::Close => command,
            // The stats publisher is the committer's own, kept across leading and following.
            Command::Admin(admin) if matches!(*admin, crate::admin::commands::AdminCommand::PublishStats(_)) => {
                Command::Admin(admin)
            }
            _ if self.following => return,
            command => command,
        };
        let first_record = self.records.len();
        let cancelling = self.cancelling(&command);
        let records = &mut self.records;
        let answer = match command {
            Command::Enqueue { jobs, reply } => Answer::Enqueue(reply, self.state.enqueue(now_ms, jobs, records)),
            Command::EnqueueAtomic { jobs, reply } => {
                Answer::EnqueueAtomic(reply, self.state.enqueue_atomic(now_ms, jobs, records))
            }
            Command::Reserve { plan, reply } => {
                let jobs = self.state.reserve(now_ms, &plan, records);
                if jobs.is_empty() && plan.wait_ms > 0 && !self.closing {
                    let deadline_ms = now_ms.saturating_add(plan.wait_ms as TimeMs);
                    // An operator at debug level sees each reserve that starts to wait.
                    tracing::debug!(queues = plan.queues.len(), wait_ms = plan.wait_ms, "reserve parked");
                    self.waiters.push_back(Waiter { plan, deadline_ms, reply });
                    return;
                }
                Answer::Reserve(reply, jobs)
            }
            Command::Ack { job_id, attempt, reply } => {
                let job = self.settled_job(&job_id);
                let records = &mut self.records;
                Answer::Ack(reply, self.state.ack(job_id, attempt, records).map(|value| Settled { value, job }))
            }
            Command::Nack { job_id, attempt, strategy, reason, reply } => {
                let job = self.settled_job(&job_id);
                let records = &mut self.records;
                let outcome = self.state.nack(now_ms, job_id, attempt, strategy, reason, records);
                Answer::Nack(reply, outcome.map(|value| Settled { value, job }))
            }
            Command::Extend { job_id, attempt, lease_ms, reply } => {
                let job = self.settled_job(&job_id);
                let records = &mut self.records;
                let outcome = self.state.extend(now_ms, job_id, attempt, lease_ms, records);
                Answer::Extend(reply, outcome.map(|value| Settled { value, job }))
            }
            Command::UpsertSchedule { spec, reply } => {
                Answer::Schedule(reply, self.state.upsert_schedule(now_ms, *spec, records).map(Box::new))
            }
            Command::DeleteSchedule { id, reply } => Answer::Deleted(reply, self.state.delete_schedule(&id, records)),
            Command::ListSchedules { reply } => {
                let mut schedules: Vec<_> = self.state.schedules().cloned().collect();
                schedules.sort_by(|a, b| a.spec.id.cmp(&b.spec.id));
                Answer::Schedules(reply, schedules)
            }
            Command::Cancel { job_id, reason, reply } => {
                Answer::Cancel(reply, self.state.cancel(now_ms, job_id, reason, records))
            }
            Command::DrainDeadLetters { queue, max, reply } => {
                Answer::Drain(reply, self.state.drain_dead_letters(queue.as_deref(), max, records))
            }
            Command::SetPolicy(policy) => {
                self.state.set_policy(policy);
                return;
            }
            Command::Admin(command) => {
                let mut cycle = crate::admin::commands::AdminCycle {
                    state: &mut self.state,
                    records,
                    now_ms,
                    stats: &mut self.stats,
                };
                match command.apply(&mut cycle) {
                    Some(deferred) => Answer::Admin(deferred),
                    None => return,
                }
            }
            Command::Shutdown => {
                self.closing = true;
                self.answer_waiters_empty();
                return;
            }
            Command::Close => {
                self.closing = true;
                self.close = true;
                self.answer_waiters_empty();
                return;
            }
            Command::Lead { .. } | Command::Follow => unreachable!("taken above"),
        };
        if let Some((job_id, queue)) = cancelling {
            self.observe_cancelled(first_record, job_id, queue);
        }
        self.answers.push(answer);
    }

    /// The job a command may dead-letter as cancelled (a cancel, or a lease operation on a
    /// cancelled lease), with its queue, when telemetry counts sweeps.
    fn cancelling(&self, command: &Command) -> Option<(JobId, Arc<str>)> {
        use crate::admin::commands::AdminCommand;
        self.observe.as_ref()?.sweeps.as_ref()?;
        let job_id = match command {
            Command::Cancel { job_id, .. }
            | Command::Ack { job_id, .. }
            | Command::Nack { job_id, .. }
            | Command::Extend { job_id, .. } => *job_id,
            Command::Admin(admin) => match admin.as_ref() {
                AdminCommand::Cancel { job_id, .. } => *job_id,
                _ => return None,
            },
            _ => return None,
        };
        self.state.live_job(&job_id).map(|(job, _)| (job_id, job.queue.clone()))
    }

    /// Hands telemetry the cancellation of `job_id` when the records from `first_record` on
    /// dead-letter it as cancelled.
    fn observe_cancelled(&self, first_record: usize, job_id: JobId, queue: Arc<str>) {
        let cancelled = self.records[first_record..].iter().any(|record| {
            matches!(record, Record::DeadLettered { job_id: id, cause: DeadLetterCause::Cancelled, .. } if *id == job_id)
        });
        if let Some(sweeps) = self.observe.as_ref().and_then(|observe| observe.sweeps.as_ref())
            && cancelled
        {
            let _ = sweeps.send(Swept { cancelled: vec![queue], ..Swept::default() });
        }
    }

    /// Offers newly ready jobs to parked reserves in arrival order, and answers those whose wait
    /// ended (or whose caller left) with nothing.
    fn serve_waiters(&mut self, now_ms: TimeMs) {
        if self.waiters.is_empty() {
            return;
        }
        let generation = self.state.ready_generation();
        let offer = generation != self.served_generation;
        self.served_generation = generation;
        let mut still_waiting = VecDeque::with_capacity(self.waiters.len());
        for waiter in self.waiters.drain(..) {
            if waiter.reply.is_closed() {
                continue;
            }
            if offer && waiter.plan.queues.iter().any(|queue| self.state.has_ready_at(queue, now_ms)) {
                let jobs = self.state.reserve(now_ms, &waiter.plan, &mut self.records);
                self.answers.push(Answer::Reserve(waiter.reply, jobs));
            } else if waiter.deadline_ms <= now_ms {
                self.answers.push(Answer::Reserve(waiter.reply, Vec::new()));
            } else {
                still_waiting.push_back(waiter);
            }
        }
        self.waiters = still_waiting;
    }

    /// Puts back what a gone caller did not take: leases are released (the jobs are ready again
    /// under the same attempt), drained dead letters are kept again, with their payloads as
    /// read for the answer (their old place may belong to files a checkpoint is replacing).
    /// The records go out with the next cycle, which runs at once.
    fn take_back(&mut self, unclaimed: Unclaimed) {
        match unclaimed {
            Unclaimed::Leases(deliveries) => {
                for delivery in deliveries {
                    // The lease is this cycle's own, so it is still current.
                    let _ = self.state.release(delivery.job.id, delivery.attempt, &mut self.records);
                }
            }
            Unclaimed::DeadLetters(dead_letters) => {
                for Loaded { value: mut dead, payload_data } in dead_letters {
                    if let (Some(payload), Some(bytes)) = (&dead.job.payload, payload_data) {
                        let mut job = (*dead.job).clone();
                        job.payload = Some(sepp_core::JobPayload {
                            encoding: payload.encoding.clone(),
                            data: PayloadData::Inline(bytes.into_boxed_slice()),
                        });
                        dead.job = Arc::new(job);
                    }
                    self.state.restore_dead_letter(dead, &mut self.records);
                }
            }
        }
    }

    /// Sends `answers`, and takes back what callers that left did not take (into the next
    /// cycle's records).
    fn answer_all(&mut self, answers: Vec<Answer>) {
        let unclaimed: Vec<Unclaimed> =
            answers.into_iter().filter_map(|answer| answer.send(self.log.as_mut())).collect();
        for unclaimed in unclaimed {
            self.take_back(unclaimed);
        }
    }

    /// Waits for the background syncs of the cycles in flight, oldest first, sending each
    /// cycle's answers as its sync finishes, until at most `keep` cycles are left in flight.
    fn flush_pending(&mut self, keep: usize) -> std::io::Result<()> {
        while self.pending.len() > keep
            && let Some(answers) = self.pending.pop_front()
        {
            self.log.finish_sync()?;
            self.answer_all(answers);
        }
        Ok(())
    }

    /// Whether this cycle's frame may sync in the background while the next cycle is applied:
    /// only when the log says its syncs are slow enough for that to pay, while commands already
    /// wait (an idle server answers at once, with no hand-off to the syncer), not when closing,
    /// and not while a finished checkpoint waits to delete the files it replaced (pending
    /// answers may still read payloads from them).
    fn may_pipeline(&self) -> bool {
        let reclaim_waits = self.relocating.is_empty() && self.log.reclaim_due();
        !self.close && !self.receiver.is_empty() && !reclaim_waits && self.log.background_sync_pays()
    }

    /// Starts serving from `state` (the committed state), proposing through `log`. The state
    /// gets the policy the committer was last given, and counts totals from now on if the one it
    /// replaces did (the state machine's copy never counts them).
    fn lead(&mut self, mut state: State, log: Box<dyn Log>) {
        state.set_policy(self.state.policy().clone());
        if self.state.counts_totals() {
            state.count_totals();
        }
        self.state = state;
        self.log = log;
        self.following = false;
        self.served_generation = 0;
        self.relocating = sepp_log::Relocations::default();
        tracing::info!("this node leads; serving");
        self.leading.send_replace(true);
    }

    /// Stops serving: nothing of the cycles not yet durable is answered (their callers hear
    /// nothing, as on a failed write), parked reserves are answered empty, and the state, which
    /// may hold what was never committed, is dropped for an empty one. Later commands are
    /// refused until the committer is told to lead again, with the committed state.
    fn step_down(&mut self, why: &str) {
        self.answers.clear();
        self.pending.clear();
        self.records.clear();
        self.answer_waiters_empty();
        let mut empty = State::new(self.state.policy().clone(), self.state.rules());
        if self.state.counts_totals() {
            empty.count_totals();
        }
        self.state = empty;
        self.log = Box::new(NotLeading);
        self.relocating = sepp_log::Relocations::default();
        if !self.following {
            tracing::warn!(why, "this node no longer leads; refusing commands");
        }
        self.following = true;
        self.leading.send_replace(false);
    }

    fn answer_waiters_empty(&mut self) {
        for waiter in self.waiters.drain(..) {
            let _ = waiter.reply.send(Vec::new());
        }
    }

    /// Writes and persists the cycle's records, and starts a checkpoint when one is due.
    ///
    /// Pipelined while commands wait: the frame of cycle N syncs in the background while cycle
    /// N+1 is applied and encoded; then, when the log holds no more frames in flight
    /// (`Log::max_in_flight`: one for the local log, several for a replicated one), the oldest
    /// sync is awaited and its callers answered before N+1's frame is written and its sync
    /// started. So the disk's (or the quorum's) time overlaps the committer's own work instead
    /// of adding to it, and no caller hears an answer before every frame up to its own cycle's
    /// is durable.
    fn persist(&mut self) -> std::io::Result<()> {
        if self.records.is_empty() {
            // This cycle's answers may rest on any cycle still in flight.
            return self.flush_pending(0);
        }
        self.log.append(&self.records)?;
        self.records.clear();
        // Room for this cycle's frame among those in flight.
        self.flush_pending(self.log.max_in_flight().max(1) - 1)?;
        let placed = self.log.write()?;
        for (job_id, stored) in placed {
            self.state.place_payload(job_id, stored);
        }
        if self.log.wants_checkpoint(self.state.live_bytes()) {
            self.log.checkpoint(self.state.snapshot())?;
        }
        if self.may_pipeline() {
            self.log.start_sync();
            self.pending.push_back(std::mem::take(&mut self.answers));
            return Ok(());
        }
        self.flush_pending(0)?;
        self.log.sync()
    }

    /// Moves payloads a finished checkpoint relocated, a slice per cycle, then lets the log
    /// delete what it replaced. (A million relocations take the core about 80 ms, which no
    /// cycle's callers should wait for at once.)
    fn maintain_log(&mut self) {
        if self.relocating.is_empty() {
            self.relocating = self.log.poll_checkpoint();
        }
        for (job_id, stored) in self.relocating.by_ref().take(self.relocations_per_cycle) {
            self.state.place_payload(job_id, stored);
        }
        // Answers still waiting for their sync may read payloads from the files it deletes.
        if self.relocating.is_empty()
            && self.pending.is_empty()
            && let Err(error) = self.log.reclaim()
        {
            // The old files stay until a later cycle manages; nothing acknowledged is at stake.
            tracing::warn!(%error, "deleting log files a checkpoint replaced failed; trying again next cycle");
        }
    }

    /// A write or sync failed: storage is poisoned. Nothing of this cycle is acknowledged (the
    /// answers are dropped, so their callers see INTERNAL), and the loop stops, so every later
    /// command fails the same way. A failed sync is never retried: the kernel may already have
    /// dropped the pages it could not write, and a second sync could report success for them.
    /// The server sees the reason through [`CommitterHandle::poisoned`] and exits with an error.
    fn poisoned(&mut self, error: &std::io::Error) {
        tracing::error!(%error, "persisting the log failed; storage is poisoned and the server stops");
        self.answers.clear();
        self.pending.clear();
        self.records.clear();
        self.poison.send_replace(Some(format!("persisting the log failed: {error}")));
    }
}

fn log_sweep(report: &SweepReport) {
    for job_id in &report.lease_dead_lettered {
        tracing::warn!(%job_id, "job dead-lettered after its lease expired on the final attempt");
    }
    for firing in &report.schedule_firings {
        use sepp_core::schedule::FiringOutcome;
        let schedule = crate::logtext::Bounded(&firing.schedule_id);
        match &firing.outcome {
            FiringOutcome::Fired(job_id) => {
                tracing::debug!(%schedule, slot_ms = firing.slot_ms, %job_id, "schedule fired")
            }
            FiringOutcome::SkippedOverlap => tracing::info!(
                %schedule,
                slot_ms = firing.slot_ms,
                "schedule slot skipped: its previous job is still queued or running"
            ),
            FiringOutcome::SkippedMissed => {
                tracing::info!(%schedule, slot_ms = firing.slot_ms, "schedule slot missed; its catch-up policy is none")
            }
            FiringOutcome::Refused(reason) => tracing::warn!(
                %schedule,
                slot_ms = firing.slot_ms,
                reason = reason.as_str(),
                "schedule slot skipped: the queue refused its job"
            ),
        }
    }
    if report.pauses_ended > 0 {
        tracing::info!(count = report.pauses_ended, "queue pause ended; reserves serve the queue again");
    }
    if !report.is_empty() {
        tracing::debug!(
            promoted = report.promoted.len(),
            redelivered = report.redelivered.len(),
            dedup_expired = report.dedup_expired,
            dead_letters_expired = report.dead_letters_expired,
            "sweep"
        );
    }
}
