//! The Consume stream: one call on which a worker grants credits, the server pushes the jobs it
//! leases for it, and the worker's acks, nacks and extends are answered (docs/protocol.md#consume).
//!
//! Each stream is a task of its own. It keeps at most one Reserve parked in the committer, for
//! as many jobs as the worker has credits (so every limit, pause and ordering rule of Reserve
//! holds), hands each settle to the same code as the unary calls, and listens to the
//! committer's feed of cancelled leases for the jobs it pushed. A Reserve parked for a stream
//! that goes away is dropped with it, and what the committer had leased for it comes back to
//! the queue as with any caller that left.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, Stream, StreamExt};
use sepp_core::validate::{self, ReservePlan};
use sepp_core::{JobId, TimeMs};
use tokio::sync::{broadcast, mpsc};
use tonic::{Request, Response, Status, Streaming};
use tracing::Span;

use crate::convert;
use crate::proto::v1 as pb;
use crate::service::QueueApi;
use crate::status::{ApiError, call_status};
use sepp_engine::Loaded;

/// What a Consume call answers with.
pub type ConsumeStream = Pin<Box<dyn Stream<Item = Result<pb::ConsumeResponse, Status>> + Send>>;

/// The most credits a stream may have outstanding (granted and not yet used by a pushed job);
/// more is INVALID_ARGUMENT. `GetServerInfo` reports it as `max_consume_credits`.
pub const MAX_CONSUME_CREDITS: u32 = 10_000;

/// Settles of one stream being committed at once; past it the stream stops reading the
/// worker's messages until some are answered (HTTP/2 flow control then holds the worker back).
const MAX_SETTLES_IN_FLIGHT: usize = 4096;

/// How long a stream's Reserve stays parked before it is asked again (a stream is not bound by
/// `max_wait_timeout`, which bounds one unary call).
const PARK_MS: u64 = 60_000;

/// Messages the stream task may have queued for the transport before it waits.
const OUTBOX: usize = 64;

/// Opens a Consume stream: the first message must open it; the rest runs in a task of its own.
pub async fn open(
    api: &QueueApi,
    request: Request<Streaming<pb::ConsumeRequest>>,
) -> Result<Response<ConsumeStream>, Status> {
    let mut inbound = request.into_inner();
    let first =
        inbound.message().await?.ok_or_else(|| Status::invalid_argument("the stream ended before it was opened"))?;
    let Some(opening) = first.open else {
        return Err(Status::invalid_argument("the first message of a Consume stream must carry `open`"));
    };
    let policy = api.live.get().policy.clone();
    let request = convert::reserve_request(pb::ReserveRequest {
        queues: opening.queues,
        wait_timeout: None,
        lease_duration: opening.lease_duration,
        worker_id: opening.worker_id,
        max_jobs: None,
    });
    let worker_id = request.worker_id.clone();
    let mut plan = validate::plan_reserve(&policy, request).map_err(|error| Status::from(ApiError::from(error)))?;
    plan.wait_ms = PARK_MS;
    let (outbox, answers) = mpsc::channel(OUTBOX);
    let mut session = Session { api: Arc::new(api.clone()), plan, worker_id, credits: 0, held: HashMap::new(), outbox };
    session.grant(opening.credits).map_err(Status::from)?;
    let Taken(settles) = session.take(first.credits, first.settles).map_err(Status::from)?;
    tracing::debug!(queues = session.plan.queues.len(), credits = session.credits, "consume stream opened");
    tokio::spawn(session.run(inbound, settles));
    let answers = futures_util::stream::unfold(answers, |mut answers| async move {
        answers.recv().await.map(|answer| (answer, answers))
    });
    Ok(Response::new(Box::pin(answers)))
}

type Settling = Pin<Box<dyn std::future::Future<Output = pb::ConsumeResult> + Send>>;

/// One open stream.
struct Session {
    api: Arc<QueueApi>,
    /// The Reserve the stream parks, its `max_jobs` set from the credits each time.
    plan: ReservePlan,
    worker_id: Option<String>,
    /// Granted and not yet used by a pushed job.
    credits: u32,
    /// Jobs pushed on this stream and not yet settled here, with their lease deadlines: whose
    /// cancels the stream tells.
    held: HashMap<JobId, TimeMs>,
    outbox: mpsc::Sender<Result<pb::ConsumeResponse, Status>>,
}

/// Settles taken from a message, waiting to be started.
struct Taken(Vec<pb::ConsumeSettle>);

impl Session {
    /// Adds credits, within [`MAX_CONSUME_CREDITS`].
    fn grant(&mut self, credits: u32) -> Result<(), ApiError> {
        match self.credits.checked_add(credits) {
            Some(total) if total <= MAX_CONSUME_CREDITS => {
                self.credits = total;
                Ok(())
            }
            _ => Err(Status::invalid_argument(format!(
                "a Consume stream may have at most {MAX_CONSUME_CREDITS} credits outstanding (max_consume_credits)"
            ))
            .into()),
        }
    }

    /// Checks a message's credits and settles (the settles are started by the loop).
    fn take(&mut self, credits: u32, settles: Vec<pb::ConsumeSettle>) -> Result<Taken, ApiError> {
        let max = self.api.live.get().policy.server.max_enqueue_batch;
        if settles.len() as u64 > u64::from(max) {
            return Err(Status::invalid_argument(format!(
                "a Consume message carries at most max_enqueue_batch ({max}) settles"
            ))
            .into());
        }
        self.grant(credits)?;
        Ok(Taken(settles))
    }

    /// Starts committing a settle; resolves to its answer.
    fn settle(&self, settle: pb::ConsumeSettle) -> Settling {
        use pb::consume_result::Outcome;
        use pb::consume_settle::Op;
        let api = self.api.clone();
        Box::pin(async move {
            let span = Span::none();
            let outcome = match settle.op {
                Some(Op::Ack(ack)) => {
                    api.ack_item(&ack).await.map(|_| Outcome::Ack(pb::AckResponse { job_id: ack.job_id }))
                }
                Some(Op::Nack(nack)) => api.nack_item(&nack, &span).await.map(Outcome::Nack),
                Some(Op::Extend(extend)) => api.extend_item(&extend, &span).await.map(Outcome::Extend),
                None => Err(Status::invalid_argument("a settle must carry ack, nack or extend").into()),
            };
            let outcome = match crate::service::logged("Consume", outcome) {
                Ok(outcome) => outcome,
                Err(status) => Outcome::Error(call_status(&status)),
            };
            pb::ConsumeResult { id: settle.id, outcome: Some(outcome) }
        })
    }

    /// Parks a Reserve for as many jobs as the credits allow.
    async fn reserve(api: Arc<QueueApi>, plan: ReservePlan) -> Result<Vec<Loaded<sepp_core::Delivery>>, ApiError> {
        api.reserve_plan(plan).await
    }

    /// Sends a message to the worker; false once it is gone.
    async fn send(&self, message: Result<pb::ConsumeResponse, Status>) -> bool {
        self.outbox.send(message).await.is_ok()
    }

    /// Forgets held jobs whose leases have run out, when the map has grown past what the
    /// credits explain (a worker that never settles).
    fn prune(&mut self) {
        if self.held.len() > 2 * MAX_CONSUME_CREDITS as usize {
            let now_ms = self.api.clock.now_ms();
            self.held.retain(|_, deadline_ms| *deadline_ms > now_ms);
        }
    }

    /// The status that ends the stream once the node stops serving: the cluster's refusal
    /// (UNAVAILABLE, naming the leader when known), or a shutdown.
    fn not_serving(&self) -> Status {
        self.api
            .cluster
            .as_ref()
            .and_then(|gate| gate.refusal())
            .unwrap_or_else(|| Status::unavailable("the server is shutting down"))
    }

    async fn run(mut self, mut inbound: Streaming<pb::ConsumeRequest>, first: Vec<pb::ConsumeSettle>) {
        let mut settling: FuturesUnordered<Settling> = first.into_iter().map(|settle| self.settle(settle)).collect();
        let mut reserving: Option<Pin<Box<dyn std::future::Future<Output = _> + Send>>> = None;
        let mut cancels: broadcast::Receiver<JobId> = self.api.committer.cancelled_leases();
        let mut stopping = self.api.stopping.clone();
        let mut leading = self.api.committer.leading();
        let mut reading = true;
        let end: Option<Status> = loop {
            if reserving.is_none() && self.credits > 0 && reading {
                let mut plan = self.plan.clone();
                plan.max_jobs = self.credits.min(plan_cap(&self.api));
                reserving = Some(Box::pin(Session::reserve(self.api.clone(), plan)));
            }
            if !reading && settling.is_empty() {
                break None;
            }
            tokio::select! {
                biased;
                // Either watch also ends the stream when its sender is gone (the server stopped).
                () = async { drop(stopping.wait_for(|stopping| *stopping).await) } => break Some(self.not_serving()),
                () = async { drop(leading.wait_for(|leading| !*leading).await) } => break Some(self.not_serving()),
                Some(result) = settling.next(), if !settling.is_empty() => {
                    let mut results = vec![result];
                    while let Some(Some(result)) = settling.next().now_or_never() {
                        results.push(result);
                    }
                    self.settled(&results);
                    if !self.send(Ok(pb::ConsumeResponse { results, ..Default::default() })).await {
                        break None;
                    }
                }
                cancelled = cancels.recv() => {
                    let mut ids = Vec::new();
                    let mut next = cancelled;
                    loop {
                        match next {
                            Ok(job_id) => {
                                if self.held.contains_key(&job_id) {
                                    ids.push(job_id.hyphenated().to_string());
                                }
                            }
                            Err(broadcast::error::RecvError::Lagged(missed)) => {
                                tracing::warn!(missed, "a Consume stream missed cancelled leases; their workers learn at their next settle");
                            }
                            Err(broadcast::error::RecvError::Closed) => break,
                        }
                        match cancels.try_recv() {
                            Ok(job_id) => next = Ok(job_id),
                            Err(broadcast::error::TryRecvError::Lagged(missed)) => next = Err(broadcast::error::RecvError::Lagged(missed)),
                            Err(_) => break,
                        }
                    }
                    if !ids.is_empty() && !self.send(Ok(pb::ConsumeResponse { cancelled: ids, ..Default::default() })).await {
                        break None;
                    }
                }
                delivered = async { reserving.as_mut().expect("armed").await }, if reserving.is_some() => {
                    reserving = None;
                    match delivered {
                        Ok(deliveries) => {
                            if deliveries.is_empty() {
                                continue;
                            }
                            self.api.delivered(self.worker_id.as_deref(), &deliveries);
                            self.credits -= (deliveries.len() as u32).min(self.credits);
                            self.prune();
                            for loaded in &deliveries {
                                self.held.insert(loaded.value.job.id, loaded.value.lease_deadline_ms);
                            }
                            let jobs = deliveries.into_iter().map(convert::delivery).collect();
                            if !self.send(Ok(pb::ConsumeResponse { jobs, ..Default::default() })).await {
                                break None;
                            }
                        }
                        // In cluster mode a leader that stepped down names the new one.
                        Err(error) => {
                            let refusal = self.api.cluster.as_ref().and_then(|gate| gate.refusal());
                            break Some(refusal.unwrap_or_else(|| Status::from(error)));
                        }
                    }
                }
                message = inbound.message(), if reading && settling.len() < MAX_SETTLES_IN_FLIGHT => {
                    match message {
                        Ok(Some(message)) => {
                            if message.open.is_some() {
                                break Some(Status::invalid_argument("only the first message of a Consume stream carries `open`"));
                            }
                            match self.take(message.credits, message.settles) {
                                Ok(Taken(settles)) => settles.into_iter().for_each(|settle| settling.push(self.settle(settle))),
                                Err(error) => break Some(error.into()),
                            }
                        }
                        // The worker is done: answer what it sent, then end. A Reserve still
                        // parked is dropped, and what it would have leased stays queued.
                        Ok(None) => {
                            reading = false;
                            reserving = None;
                        }
                        Err(_) => break None,
                    }
                }
            }
        };
        // Settles already handed to the committer are answered before the stream ends.
        let mut results = Vec::new();
        while let Some(result) = settling.next().await {
            results.push(result);
        }
        if !results.is_empty() {
            self.settled(&results);
            self.send(Ok(pb::ConsumeResponse { results, ..Default::default() })).await;
        }
        if let Some(status) = end {
            tracing::debug!(code = ?status.code(), message = %status.message(), "consume stream ended");
            self.send(Err(status)).await;
        }
    }

    /// Forgets the jobs whose acks and nacks succeeded (an extend keeps the job held, with its
    /// new deadline).
    fn settled(&mut self, results: &[pb::ConsumeResult]) {
        use pb::consume_result::Outcome;
        for result in results {
            match &result.outcome {
                Some(Outcome::Ack(pb::AckResponse { job_id }))
                | Some(Outcome::Nack(pb::NackResponse { job_id, .. })) => {
                    if let Ok(job_id) = job_id.parse::<JobId>() {
                        self.held.remove(&job_id);
                    }
                }
                Some(Outcome::Extend(pb::ExtendResponse { job_id, lease_expires_at })) => {
                    if let (Ok(job_id), Some(at)) = (job_id.parse::<JobId>(), lease_expires_at)
                        && let Some(deadline_ms) = self.held.get_mut(&job_id)
                    {
                        *deadline_ms = at.seconds.saturating_mul(1000).saturating_add(i64::from(at.nanos / 1_000_000));
                    }
                }
                _ => {}
            }
        }
    }
}

/// The most jobs one parked Reserve may ask for.
fn plan_cap(api: &QueueApi) -> u32 {
    api.live.get().policy.server.max_reserve_batch.max(1)
}
