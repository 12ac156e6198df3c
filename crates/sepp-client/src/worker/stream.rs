//! The Worker on a `Consume` stream (when the server lists the feature `consume`).
//!
//! One driver task owns the stream. It opens it with the Worker's queues, lease duration and
//! worker id, and grants as many credits as the Worker has free slots (`max_in_flight` minus
//! the jobs it runs). The server pushes leased jobs, each using one credit; each runs as its
//! own task exactly as a reserved job does (`run::process`). A job's ack, nack or extend is
//! sent on the stream as a settle with an id of the driver's: what waits at the same moment
//! goes in one message (at most [`MAX_SETTLES_PER_MESSAGE`]), with one credit for every slot
//! an ack or nack in it frees (a job that ends without a settle returns its credit alone). Each
//! result maps to exactly what the unary call gives (a cancelled job: NOT_FOUND, as
//! [`LeaseError::JobNotFound`]). A job id in `cancelled` stops that job's handler at once.
//!
//! A stream that fails or ends is reopened, after following a cluster's leader when it ended
//! UNAVAILABLE (as calls do), or after the Worker's reserve-error backoff. Settles waiting when
//! it ended, or answered by no result, go again as unary calls under the retry policy. A
//! server that answers UNIMPLEMENTED has no `Consume`: the Worker goes back to reserve calls.
//!
//! On shutdown the driver grants no more credits, lets the running jobs (and any pushed
//! meanwhile) finish and settle, then half-closes the stream.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use prost::Message;
use prost::bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status};

use super::run::{Shared, pause, process};
use crate::client::{ClientError, LeaseError, RetryDirective};
use crate::types::Lease;
use crate::{JobCtx, ReserveOptions, convert, proto as pb};

/// Settles per `ConsumeRequest`; the server's default batch limit is 256.
pub(super) const MAX_SETTLES_PER_MESSAGE: usize = 64;
/// The most credits outstanding on a stream when the server did not say (its default
/// `max_consume_credits`): a Worker with more slots grants the rest as pushed jobs use
/// credits up.
pub(super) const DEFAULT_MAX_OUTSTANDING_CREDITS: usize = 10_000;

/// What a job task sends to the driver.
pub(super) enum Outgoing {
    /// `frees`: the job whose slot this ack or nack frees.
    Settle { op: pb::consume_settle::Op, frees: Option<String>, reply: oneshot::Sender<Result<Outcome, Status>> },
    /// The slot of this job is free, and no settle carried its credit.
    Credit(String),
}

type Outcome = pb::consume_result::Outcome;

/// A job's link to the driver: its settles, and its cancellation.
pub(super) struct Via {
    job_id: String,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    pub(super) cancelled: CancellationToken,
    credited: AtomicBool,
}

impl Via {
    /// Sends `op` on the stream; `None` when no stream answered it (the caller then makes the
    /// unary call).
    async fn send(&self, op: pb::consume_settle::Op, frees_slot: bool) -> Option<Outcome> {
        let (reply, answer) = oneshot::channel();
        let frees = frees_slot.then(|| self.job_id.clone());
        self.outgoing.send(Outgoing::Settle { op, frees, reply }).ok()?;
        if frees_slot {
            self.credited.store(true, Ordering::Relaxed);
        }
        match answer.await {
            Ok(Ok(outcome)) => Some(outcome),
            Ok(Err(status)) => {
                tracing::debug!(code = ?status.code(), message = status.message(), "settle not answered on the stream; sending it as a call");
                None
            }
            Err(_) => None,
        }
    }

    /// Returns the job's credit unless a settle carried it.
    pub(super) fn release(&self) {
        if !self.credited.swap(true, Ordering::Relaxed) {
            let _ = self.outgoing.send(Outgoing::Credit(self.job_id.clone()));
        }
    }
}

fn status_of(error: &pb::CallStatus) -> Status {
    Status::new(Code::from_i32(error.code), error.message.clone())
}

fn malformed() -> LeaseError {
    LeaseError::Client(ClientError::MalformedResponse("a Consume result answered another kind of settle"))
}

pub(super) async fn ack(shared: &Shared, via: Option<&Via>, ctx: &JobCtx) -> Result<(), LeaseError> {
    if let Some(via) = via {
        let op = pb::consume_settle::Op::Ack(pb::AckRequest {
            job_id: ctx.id.clone(),
            attempt: ctx.attempt,
            worker_id: ctx.worker_id().map(str::to_owned),
        });
        match via.send(op, true).await {
            Some(Outcome::Ack(_)) => return Ok(()),
            Some(Outcome::Error(error)) => return Err(LeaseError::from_status(&status_of(&error))),
            Some(_) => return Err(malformed()),
            None => {}
        }
    }
    shared.client.ack(ctx).await
}

pub(super) async fn nack(
    shared: &Shared,
    via: Option<&Via>,
    ctx: &JobCtx,
    retry: RetryDirective,
    reason: String,
) -> Result<bool, LeaseError> {
    if let Some(via) = via {
        let strategy = match retry {
            RetryDirective::Default => pb::nack_retry::Strategy::Default(()),
            RetryDirective::After(delay) => pb::nack_retry::Strategy::Delay(convert::duration(delay)),
            RetryDirective::DeadLetter => pb::nack_retry::Strategy::DeadLetter(()),
        };
        let op = pb::consume_settle::Op::Nack(pb::NackRequest {
            job_id: ctx.id.clone(),
            attempt: ctx.attempt,
            reason: (!reason.is_empty()).then(|| reason.clone()),
            retry: Some(pb::NackRetry { strategy: Some(strategy) }),
            worker_id: ctx.worker_id().map(str::to_owned),
        });
        match via.send(op, true).await {
            Some(Outcome::Nack(response)) => return Ok(response.dead_lettered),
            Some(Outcome::Error(error)) => return Err(LeaseError::from_status(&status_of(&error))),
            Some(_) => return Err(malformed()),
            None => {}
        }
    }
    shared.client.nack(ctx, retry, reason).await
}

pub(super) async fn extend(shared: &Shared, via: Option<&Via>, ctx: &JobCtx) -> Result<SystemTime, LeaseError> {
    if let Some(via) = via {
        let op = pb::consume_settle::Op::Extend(pb::ExtendRequest {
            job_id: ctx.id.clone(),
            attempt: ctx.attempt,
            lease_duration: Some(convert::duration(shared.lease_duration)),
            worker_id: ctx.worker_id().map(str::to_owned),
        });
        match via.send(op, false).await {
            Some(Outcome::Extend(response)) => return Ok(crate::client::extended(ctx, &response)?),
            Some(Outcome::Error(error)) => return Err(LeaseError::from_status(&status_of(&error))),
            Some(_) => return Err(malformed()),
            None => {}
        }
    }
    shared.client.extend(ctx, shared.lease_duration).await
}

/// How the streaming Worker ended.
pub(super) enum Ended {
    /// Shut down.
    Stop,
    /// The server has no `Consume`: go on with reserve calls.
    Unsupported,
}

/// How one stream ended.
enum StreamEnd {
    Stop,
    Unsupported,
    /// Reopen: at once (`None`, a leader was followed) or after the backoff (why).
    Reopen(Option<Status>),
}

/// The Worker's slots: how many, their permits, and the tasks that hold them.
pub(super) struct Slots {
    pub(super) max_in_flight: usize,
    pub(super) permits: Arc<tokio::sync::Semaphore>,
    pub(super) tasks: tokio_util::task::TaskTracker,
}

/// The driver's state that outlives one stream.
pub(super) struct Driver {
    pub(super) shared: Arc<Shared>,
    pub(super) options: ReserveOptions,
    pub(super) max_in_flight: usize,
    pub(super) backoff: std::time::Duration,
    pub(super) token: CancellationToken,
    pub(super) permits: Arc<tokio::sync::Semaphore>,
    pub(super) tasks: tokio_util::task::TaskTracker,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    incoming: mpsc::UnboundedReceiver<Outgoing>,
    /// Jobs pushed whose slot is not free yet.
    busy: usize,
    /// Free slots not granted on the current stream yet (beyond `max_outstanding`).
    owed: usize,
    /// The server's `max_consume_credits`.
    max_outstanding: usize,
    /// Credits granted on the current stream and not used by a pushed job yet.
    outstanding: usize,
    /// Jobs pushed whose slot is not free yet, by id: their cancellation (at most the credits
    /// granted, so at most `max_in_flight`).
    running: HashMap<String, CancellationToken>,
    shutting_down: bool,
}

impl Driver {
    pub(super) fn new(
        shared: Arc<Shared>,
        options: ReserveOptions,
        backoff: std::time::Duration,
        token: CancellationToken,
        slots: Slots,
        max_consume_credits: u32,
    ) -> Self {
        let Slots { max_in_flight, permits, tasks } = slots;
        let (outgoing, incoming) = mpsc::unbounded_channel();
        Self {
            shared,
            options,
            max_in_flight,
            backoff,
            token,
            permits,
            tasks,
            outgoing,
            incoming,
            busy: 0,
            owed: 0,
            max_outstanding: match max_consume_credits {
                0 => DEFAULT_MAX_OUTSTANDING_CREDITS,
                limit => limit as usize,
            },
            outstanding: 0,
            running: HashMap::new(),
            shutting_down: false,
        }
    }

    pub(super) async fn run(mut self) -> Ended {
        let mut first = true;
        loop {
            let end = self.stream(first).await;
            first = false;
            // Settles that waited for a stream go as calls.
            self.fail_waiting();
            match end {
                StreamEnd::Stop => return Ended::Stop,
                StreamEnd::Unsupported => return Ended::Unsupported,
                StreamEnd::Reopen(None) => {}
                StreamEnd::Reopen(Some(status)) => {
                    if self.shutting_down || self.token.is_cancelled() {
                        return Ended::Stop;
                    }
                    self.shared.metrics.reserve_failed();
                    let error = crate::client::ReserveError::from_status(&status);
                    let backoff = self.backoff;
                    tracing::warn!(%error, backoff_ms = backoff.as_millis() as u64,
                        "reserve error on the Consume stream: {error}; backing off for {backoff:?}");
                    pause(&self.token, backoff).await;
                }
            }
            if self.token.is_cancelled() {
                return Ended::Stop;
            }
        }
    }

    fn fail_waiting(&mut self) {
        while let Ok(outgoing) = self.incoming.try_recv() {
            match outgoing {
                Outgoing::Settle { frees, reply, .. } => {
                    if frees.is_some() {
                        self.busy = self.busy.saturating_sub(1);
                    }
                    let _ = reply.send(Err(Status::unavailable("no Consume stream is open")));
                }
                Outgoing::Credit(_) => self.busy = self.busy.saturating_sub(1),
            }
        }
    }

    async fn stream(&mut self, first: bool) -> StreamEnd {
        self.owed = self.max_in_flight.saturating_sub(self.busy);
        self.outstanding = 0;
        let credits = self.grant();
        let open = pb::ConsumeRequest {
            open: Some(pb::ConsumeOpen {
                queues: self.options.queues().to_vec(),
                lease_duration: Some(convert::duration(self.options.lease_duration())),
                worker_id: self.options.worker_id().map(str::to_owned),
                credits,
            }),
            credits: 0,
            settles: Vec::new(),
        };
        let client = self.shared.client.clone();
        let opened = tokio::select! {
            biased;
            () = self.token.cancelled() => return StreamEnd::Stop,
            opened = client.open_consume(open) => opened,
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(status) if status.code() == Code::Unimplemented => return StreamEnd::Unsupported,
            Err(status) => return StreamEnd::Reopen(Some(status)),
        };
        if first {
            tracing::info!(credits, "worker consuming on a Consume stream");
        }
        let mut pending: HashMap<u64, oneshot::Sender<Result<Outcome, Status>>> = HashMap::new();
        let mut next_id: u64 = 0;
        let mut sender = Some(stream.sender.clone());
        drop(stream.sender);
        self.running.clear();
        let end = loop {
            if (self.shutting_down || self.token.is_cancelled()) && self.busy == 0 && pending.is_empty() {
                // Everything is settled: half-close; the server ends the stream OK.
                sender = None;
            }
            tokio::select! {
                biased;
                () = self.token.cancelled(), if !self.shutting_down => {
                    self.shutting_down = true;
                    tracing::info!(in_flight = self.busy, "worker shutting down; no more credits, finishing the jobs it holds");
                }
                message = stream.inbound.message() => match message {
                    Ok(Some(response)) => {
                        self.received(response, &mut pending);
                        // Slots beyond the outstanding cap are granted as credits get used.
                        if let Some(sender) = &sender {
                            let credits = self.grant();
                            if credits > 0 {
                                let message = pb::ConsumeRequest { credits, ..Default::default() };
                                let _ = sender.send(Bytes::from(message.encode_to_vec()));
                            }
                        }
                    }
                    Ok(None) if sender.is_none() => break StreamEnd::Stop,
                    Ok(None) => break StreamEnd::Reopen(Some(Status::unavailable("the server ended the Consume stream"))),
                    Err(status) => {
                        if status.code() == Code::Unimplemented {
                            break StreamEnd::Unsupported;
                        }
                        for (_, reply) in pending.drain() {
                            let _ = reply.send(Err(status.clone()));
                        }
                        if status.code() == Code::Unavailable
                            && client.consume_unavailable(&stream.node, &status)
                        {
                            tracing::info!(message = status.message(), "the Consume stream ended UNAVAILABLE; reopening at the leader");
                            break StreamEnd::Reopen(None);
                        }
                        break StreamEnd::Reopen(Some(status));
                    }
                },
                Some(outgoing) = self.incoming.recv(), if sender.is_some() => {
                    let message = self.gather(outgoing, &mut pending, &mut next_id);
                    if let Some(sender) = &sender {
                        let _ = sender.send(Bytes::from(message.encode_to_vec()));
                    }
                }
            }
        };
        // Results that never came: the settles go as calls.
        for (_, reply) in pending.drain() {
            let _ = reply.send(Err(Status::unavailable("the Consume stream ended before answering")));
        }
        end
    }

    /// One message: `first` and whatever else waits (settles up to the cap), with the credits
    /// of the slots freed.
    fn gather(
        &mut self,
        first: Outgoing,
        pending: &mut HashMap<u64, oneshot::Sender<Result<Outcome, Status>>>,
        next_id: &mut u64,
    ) -> pb::ConsumeRequest {
        let mut message = pb::ConsumeRequest::default();
        let mut freed = 0u32;
        let mut next = Some(first);
        while let Some(outgoing) = next.take() {
            match outgoing {
                Outgoing::Settle { op, frees, reply } => {
                    *next_id += 1;
                    pending.insert(*next_id, reply);
                    message.settles.push(pb::ConsumeSettle { id: *next_id, op: Some(op) });
                    if let Some(job_id) = frees {
                        self.running.remove(&job_id);
                        freed += 1;
                    }
                }
                Outgoing::Credit(job_id) => {
                    self.running.remove(&job_id);
                    freed += 1;
                }
            }
            if message.settles.len() < MAX_SETTLES_PER_MESSAGE {
                next = self.incoming.try_recv().ok();
            }
        }
        self.busy = self.busy.saturating_sub(freed as usize);
        self.owed += freed as usize;
        message.credits = self.grant();
        message
    }

    /// Takes what may be granted now of the owed credits: none while shutting down, and never
    /// more than the server's `max_consume_credits` outstanding.
    fn grant(&mut self) -> u32 {
        if self.shutting_down || self.token.is_cancelled() {
            return 0;
        }
        let credits = self.owed.min(self.max_outstanding.saturating_sub(self.outstanding));
        self.owed -= credits;
        self.outstanding += credits;
        u32::try_from(credits).unwrap_or(u32::MAX)
    }

    fn received(
        &mut self,
        response: pb::ConsumeResponse,
        pending: &mut HashMap<u64, oneshot::Sender<Result<Outcome, Status>>>,
    ) {
        for result in response.results {
            if let Some(reply) = pending.remove(&result.id) {
                let outcome = result.outcome.ok_or_else(|| Status::internal("a Consume result without an outcome"));
                let _ = reply.send(outcome);
            }
        }
        for id in response.cancelled {
            if let Some(cancelled) = self.running.remove(&id) {
                tracing::info!(job_id = %id, "job cancelled; stopping its handler");
                cancelled.cancel();
            }
        }
        if !response.jobs.is_empty() {
            self.shared.metrics.reserve_completed(true);
        }
        let worker_id = self.options.worker_id().map(str::to_owned);
        self.outstanding = self.outstanding.saturating_sub(response.jobs.len());
        for job in response.jobs {
            let id = job.id.clone();
            let converted =
                convert::job(job, |expiry| Lease::new(self.shared.client.clone(), worker_id.clone(), expiry));
            let job = match converted {
                Ok(job) => job,
                Err(error) => {
                    // Its credit is spent and the lease runs out on its own; the slot is free.
                    tracing::warn!(job_id = %id, %error, "skipping malformed job pushed on the Consume stream");
                    let _ = self.outgoing.send(Outgoing::Credit(id));
                    self.busy += 1;
                    continue;
                }
            };
            self.busy += 1;
            let cancelled = CancellationToken::new();
            self.running.insert(id.clone(), cancelled.clone());
            let via = Via { job_id: id, outgoing: self.outgoing.clone(), cancelled, credited: AtomicBool::new(false) };
            let shared = self.shared.clone();
            let permits = self.permits.clone();
            self.tasks.spawn(async move {
                // Credits never exceed the free slots; this waits only for a task that has
                // sent its last settle to end.
                let permit = permits.acquire_owned().await.expect("the Worker never closes its semaphore");
                process(shared, job, permit, Some(via)).await;
            });
        }
    }
}
