//! The committer loop: [`spawn`] starts the thread; each cycle drains the waiting commands,
//! applies them with one reading of the clock, serves parked reserves, persists (see `persist`)
//! and only then answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sepp_core::validate::ReservePlan;
use sepp_core::{DeadLetterCause, Delivery, Job, JobId, Record, State, TimeMs};
use sepp_log::Log;
use tokio::sync::oneshot;

use crate::clock::Clock;
use crate::command::{Answer, Command, Cycle, Loaded, Reply, Settled};
use crate::handle::{Closed, CommitterHandle};
use crate::observe::{Observe, StatsSink, Swept};
use crate::{CANCEL_FEED_CAPACITY, CHECK_EVERY_CYCLE_UP_TO, CHECK_EVERY_NTH_CYCLE, MAX_GROUP};

/// A Reserve parked until a job becomes ready in one of its queues or its wait ends.
pub(crate) struct Waiter {
    plan: ReservePlan,
    deadline_ms: TimeMs,
    reply: Reply<Vec<Loaded<Delivery>>>,
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

/// A serving committer on the system clock without telemetry: a queue of 4,096 commands, a
/// sweep every second, [`CommitterSettings::RELOCATIONS_PER_CYCLE`] (the configuration's
/// defaults). The server sets every field from its configuration.
impl Default for CommitterSettings {
    fn default() -> Self {
        CommitterSettings {
            command_queue_capacity: 4_096,
            sweep_interval_ms: 1_000,
            relocations_per_cycle: Self::RELOCATIONS_PER_CYCLE,
            clock: Arc::new(crate::SystemClock),
            observe: None,
            follows: false,
        }
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
                cycles: 0,
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
                    tracing::error!(target: crate::LOG_TARGET, %reason, "storage is poisoned and the server stops");
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

pub(crate) struct Committer {
    pub(crate) state: State,
    pub(crate) log: Box<dyn Log>,
    pub(crate) receiver: flume::Receiver<Command>,
    pub(crate) sweep_interval: Duration,
    pub(crate) waiters: VecDeque<Waiter>,
    pub(crate) closing: bool,
    /// Asked to stop after the current cycle ([`Command::Close`]).
    pub(crate) close: bool,
    /// Set with the reason when a write or sync failed; the loop stops after that cycle.
    pub(crate) poison: tokio::sync::watch::Sender<Option<String>>,
    pub(crate) records: Vec<Record>,
    pub(crate) answers: Vec<Answer>,
    /// The answers of the cycles whose frames sync in the background (oldest first, at most
    /// `Log::max_in_flight`) while later cycles are applied; each sent once its sync finished.
    pub(crate) pending: VecDeque<Vec<Answer>>,
    /// The ready generation up to which the waiters were already offered jobs.
    pub(crate) served_generation: u64,
    /// Payload places a finished checkpoint moved that are not applied yet.
    pub(crate) relocating: sepp_log::Relocations,
    pub(crate) relocations_per_cycle: usize,
    /// Gets the state after every cycle, once [`Command::PublishStats`] installed it.
    pub(crate) stats: Option<Box<dyn StatsSink>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) observe: Option<Observe>,
    /// Cluster mode, while this node does not lead: the state is empty and every command is
    /// refused.
    pub(crate) following: bool,
    pub(crate) leading: tokio::sync::watch::Sender<bool>,
    /// Where cancelled leases are told to Consume streams.
    pub(crate) cancels: tokio::sync::broadcast::Sender<JobId>,
    /// Cycles run, for the debug builds' invariant checks.
    pub(crate) cycles: u64,
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
        tracing::info!(target: crate::LOG_TARGET, "committer thread stopped; storage is no longer accepting commands");
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
            .chain(self.stats.as_ref().map(|stats| stats.wake_ms()));
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
        if let (Some(started), Some(commit_duration)) =
            (timed, self.observe.as_ref().and_then(|observe| observe.commit_duration.as_ref()))
        {
            commit_duration(started.elapsed().as_secs_f64() * 1000.0);
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
        self.cycles = self.cycles.wrapping_add(1);
        if cfg!(debug_assertions) {
            self.check_invariants();
        }
        !self.close
    }

    /// Debug builds check the state's invariants after each cycle while it holds at most
    /// [`CHECK_EVERY_CYCLE_UP_TO`] jobs, and after every [`CHECK_EVERY_NTH_CYCLE`]th beyond. A broken one panics, which poisons storage: the server
    /// stops and says why.
    fn check_invariants(&self) {
        let depths = self.state.total_depths();
        let jobs = depths.ready + depths.scheduled + depths.inflight + depths.dead_letter;
        if jobs > CHECK_EVERY_CYCLE_UP_TO && !self.cycles.is_multiple_of(CHECK_EVERY_NTH_CYCLE) {
            return;
        }
        if let Err(problem) = self.state.check_invariants() {
            panic!("the queue state broke an invariant after cycle {}: {problem}", self.cycles);
        }
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
            // The stats sink is the committer's own, kept across leading and following.
            Command::PublishStats(sink) => {
                self.publish_stats(sink);
                return;
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
                    tracing::debug!(
                        target: crate::LOG_TARGET,
                        queues = plan.queues.len(),
                        wait_ms = plan.wait_ms,
                        "reserve parked"
                    );
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
            Command::Operation(operation) => {
                let mut cycle = Cycle { state: &mut self.state, records, now_ms, stats: &mut self.stats };
                match operation.apply(&mut cycle) {
                    Some(deferred) => Answer::Deferred(deferred),
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
            Command::Lead { .. } | Command::Follow | Command::PublishStats(_) => unreachable!("taken above"),
        };
        if let Some((job_id, queue)) = cancelling {
            self.observe_cancelled(first_record, job_id, queue);
        }
        self.answers.push(answer);
    }

    /// The job a command may dead-letter as cancelled (a cancel, or a lease operation on a
    /// cancelled lease), with its queue, when telemetry counts sweeps.
    fn cancelling(&self, command: &Command) -> Option<(JobId, Arc<str>)> {
        self.observe.as_ref()?.sweeps.as_ref()?;
        let job_id = match command {
            Command::Cancel { job_id, .. }
            | Command::Ack { job_id, .. }
            | Command::Nack { job_id, .. }
            | Command::Extend { job_id, .. } => *job_id,
            Command::Operation(operation) => operation.cancels()?,
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

    /// Installs `sink`, and counts totals from now on (see [`Command::PublishStats`]).
    fn publish_stats(&mut self, sink: Box<dyn StatsSink>) {
        self.state.count_totals();
        self.stats = Some(sink);
    }

    pub(crate) fn answer_waiters_empty(&mut self) {
        for waiter in self.waiters.drain(..) {
            let _ = waiter.reply.send(Vec::new());
        }
    }
}
