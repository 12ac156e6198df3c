//! What callers ask of the committer ([`Command`]), what it answers once a cycle is durable, and
//! the [`Operation`] seam through which the engine's user runs its own work on the state.

use std::sync::Arc;

use sepp_core::validate::{NackStrategy, ReservePlan};
use sepp_core::{
    AtomicOutcome, DeadLetter, Delivery, Enqueued, Job, JobId, LeaseError, Nacked, NewJob, PayloadData, Policy, Record,
    Rejection, State, TimeMs,
};
use sepp_log::Log;
use tokio::sync::oneshot;

use crate::observe::StatsSink;

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
    /// Work of the engine's user, run on the state in this cycle (see [`Operation`]).
    Operation(Box<dyn Operation>),
    /// Count per-queue totals from now on, and hand the state to `sink` after every cycle. The
    /// sink is the committer's own from then on, kept across leading and following, and every
    /// state it serves from counts totals (also the committed state a cluster leader leads from).
    PublishStats(Box<dyn StatsSink>),
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
    /// Cluster mode: this node does not lead (any more): the committer drops its state and
    /// refuses commands until it leads again.
    Follow,
}

/// The outcome of a lease operation, with the job it settled when telemetry asked for it
/// (spans link to the job's producer and metrics label it with its queue).
pub struct Settled<T> {
    pub value: T,
    pub job: Option<Arc<Job>>,
}

/// Work the engine's user runs on the state inside a cycle, like a built-in command: its records
/// join the cycle's, and its answer ([`Deferred`]) is sent once they are durable. A follower
/// refuses it like any command that needs the state (its caller hears no answer).
pub trait Operation: Send + 'static {
    /// Applies the operation in the current cycle. `None` when there is nothing to answer.
    fn apply(self: Box<Self>, cycle: &mut Cycle<'_>) -> Option<Deferred>;

    /// The job the operation may dead-letter as cancelled, so that telemetry hears when it
    /// does (see [`crate::Swept::cancelled`]).
    fn cancels(&self) -> Option<JobId> {
        None
    }
}

/// What the committer lends an [`Operation`] for one cycle.
pub struct Cycle<'a> {
    pub state: &'a mut State,
    /// The cycle's records so far; an operation appends its own.
    pub records: &'a mut Vec<Record>,
    /// The cycle's one reading of the clock.
    pub now_ms: TimeMs,
    /// The stats sink, once [`Command::PublishStats`] installed one.
    pub stats: &'a mut Option<Box<dyn StatsSink>>,
}

type SendWithLog = Box<dyn FnOnce(&mut dyn Log) + Send>;

/// An answer to send once the cycle is persisted, loading payloads from the log first when it
/// needs them.
pub struct Deferred(SendWithLog);

impl Deferred {
    /// An answer that `send` delivers, reading what it needs from the log.
    pub fn new(send: impl FnOnce(&mut dyn Log) + Send + 'static) -> Deferred {
        Deferred(Box::new(send))
    }

    /// An answer that needs nothing from the log.
    pub fn reply<T: Send + 'static>(reply: Reply<T>, value: T) -> Deferred {
        Deferred::new(move |_| {
            let _ = reply.send(value);
        })
    }

    pub fn send(self, log: &mut dyn Log) {
        (self.0)(log)
    }
}

/// An answer computed in this cycle, sent once the cycle's records are persisted.
pub(crate) enum Answer {
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
    Deferred(Deferred),
    /// Leased jobs this cycle cancelled, told to the Consume streams once durable.
    LeasesCancelled(tokio::sync::broadcast::Sender<JobId>, Vec<JobId>),
}

/// What a caller that had gone did not take, and the queue must get back: the jobs leased to
/// its reserve, or the dead letters drained for it.
pub(crate) enum Unclaimed {
    Leases(Vec<Delivery>),
    DeadLetters(Vec<Loaded<DeadLetter>>),
}

impl Answer {
    /// Sends the answer, loading the payloads of delivered jobs first. A payload that cannot be
    /// read fails that one call (the caller sees INTERNAL; a leased job is redelivered later).
    /// A caller that went away (a cancelled call) just does not hear the answer; what it would
    /// have taken out of the queue comes back as [`Unclaimed`].
    pub(crate) fn send(self, log: &mut dyn Log) -> Option<Unclaimed> {
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
            Answer::Deferred(deferred) => deferred.send(log),
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
                        tracing::error!(
                            target: crate::LOG_TARGET,
                            %error,
                            job_id = %job(&value).id,
                            "reading a payload back from the log failed"
                        );
                        return None;
                    }
                },
            };
            Some(Loaded { value, payload_data })
        })
        .collect()
}
