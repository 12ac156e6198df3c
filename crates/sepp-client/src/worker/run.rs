//! The Worker's loop (`run`) and the life of one job (`process`): find the handler, run it as
//! its own task (so a panic is caught and the task can be aborted), keep its lease alive if
//! asked, and settle the job.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;
use tracing::field::Empty;

use super::policy::{self, EARLY_EMPTY_PAUSE};
use super::stream::{self, Driver, Ended, Slots, Via};
use super::{AutoExtend, Handler, HandlerError, Worker};
use crate::client::{LeaseError, RetryDirective, SeppClient};
use crate::otel::{self, WorkerMetrics};
use crate::{Job, JobCtx, ReserveOptions};

/// What the per-job tasks share.
pub(super) struct Shared {
    pub(super) client: SeppClient,
    pub(super) lease_duration: Duration,
    auto_extend: Option<AutoExtend>,
    handlers: HashMap<String, Handler>,
    catch_all: Option<Handler>,
    pub(super) metrics: WorkerMetrics,
}

/// The reserve loop's state: what it asks for, its capacity, and the jobs it spawned.
struct Reserver {
    options: ReserveOptions,
    max_jobs: Option<u32>,
    reserve_error_backoff: Duration,
    token: CancellationToken,
    permits: Arc<Semaphore>,
    tasks: TaskTracker,
    shared: Arc<Shared>,
}

/// Whether the loop goes on.
enum Turn {
    Continue,
    Stop,
}

pub(super) async fn run(worker: Worker) {
    let Worker {
        client,
        options,
        max_jobs,
        max_in_flight,
        reserve_error_backoff,
        auto_extend,
        handlers,
        catch_all,
        shutdown,
        streaming,
    } = worker;
    let max_in_flight = max_in_flight.max(1);
    let worker_id = options.worker_id().unwrap_or_default().to_owned();
    tracing::info!(
        worker_id,
        max_in_flight,
        handlers = handlers.len(),
        catch_all = catch_all.is_some(),
        auto_extend = auto_extend.is_some(),
        queues = ?options.queues(),
        "worker started"
    );
    let shared = Shared {
        client,
        lease_duration: options.lease_duration(),
        auto_extend,
        handlers,
        catch_all,
        metrics: WorkerMetrics::new(),
    };
    let reserver = Reserver {
        options,
        max_jobs,
        reserve_error_backoff,
        token: shutdown.token,
        permits: Arc::new(Semaphore::new(max_in_flight)),
        tasks: TaskTracker::new(),
        shared: Arc::new(shared),
    };
    let offered = if streaming { consume_offered(&reserver.shared.client).await } else { None };
    let streamed = offered.is_some() && {
        let slots = Slots { max_in_flight, permits: reserver.permits.clone(), tasks: reserver.tasks.clone() };
        let driver = Driver::new(
            reserver.shared.clone(),
            reserver.options.clone(),
            reserver.reserve_error_backoff,
            reserver.token.clone(),
            slots,
            offered.unwrap_or(0),
        );
        match driver.run().await {
            Ended::Stop => true,
            Ended::Unsupported => {
                tracing::info!(worker_id, "the server has no Consume stream; reserving with calls");
                false
            }
        }
    };
    if !streamed {
        while let Turn::Continue = reserver.run_once().await {}
    }

    let tasks = &reserver.tasks;
    tracing::info!(worker_id, in_flight = tasks.len(), "worker shutting down; waiting for in-flight jobs to finish");
    tasks.close();
    tasks.wait().await;
    tracing::info!(worker_id, "worker stopped");
}

impl Reserver {
    /// One turn: wait for a free slot, reserve up to the free capacity, and spawn a task per
    /// job; or back off after a failed or suspiciously quick empty reserve.
    async fn run_once(&self) -> Turn {
        let permit = tokio::select! {
            biased;
            () = self.token.cancelled() => return Turn::Stop,
            permit = self.permits.clone().acquire_owned() => permit.expect("the Worker never closes its semaphore"),
        };
        let batch = policy::reserve_batch(self.max_jobs, self.permits.available_permits());
        let request = self.options.clone().with_max_jobs(batch);
        let started = Instant::now();
        // If the reserve and the shutdown finish together, the reserve wins: its jobs are
        // already leased to us, so they are handled during the drain.
        let result = tokio::select! {
            biased;
            result = self.shared.client.reserve(&request) => result,
            () = self.token.cancelled() => return Turn::Stop,
        };
        let metrics = &self.shared.metrics;
        match result {
            Err(error) => {
                metrics.reserve_failed();
                let backoff = self.reserve_error_backoff;
                tracing::warn!(%error, backoff_ms = backoff.as_millis() as u64,
                    "reserve error: {error}; backing off for {backoff:?}");
                drop(permit);
                pause(&self.token, backoff).await;
            }
            Ok(None) => {
                metrics.reserve_completed(false);
                drop(permit);
                if policy::is_early_empty(started.elapsed(), request.wait_timeout()) {
                    pause(&self.token, EARLY_EMPTY_PAUSE).await;
                }
            }
            Ok(Some(jobs)) => {
                metrics.reserve_completed(true);
                let mut held = Some(permit);
                for job in jobs {
                    // Later jobs of a batch wait for their own permit (they are ours already).
                    let permit = match held.take() {
                        Some(permit) => permit,
                        None => {
                            self.permits.clone().acquire_owned().await.expect("the Worker never closes its semaphore")
                        }
                    };
                    self.tasks.spawn(process(self.shared.clone(), job, permit, None));
                }
            }
        }
        Turn::Continue
    }
}

/// Whether the server lists the feature `consume`, with its `max_consume_credits` (0 when
/// unknown). When it cannot be asked, the stream is tried anyway (a server without it answers
/// UNIMPLEMENTED).
async fn consume_offered(client: &SeppClient) -> Option<u32> {
    match client.get_server_info().await {
        Ok(info) => info.features.iter().any(|feature| feature == "consume").then_some(info.max_consume_credits),
        Err(error) => {
            tracing::warn!(%error, "could not read the server's features; trying the Consume stream");
            Some(0)
        }
    }
}

/// Sleeps for `duration`, waking early on shutdown.
pub(super) async fn pause(token: &CancellationToken, duration: Duration) {
    tokio::select! {
        () = token.cancelled() => {}
        () = tokio::time::sleep(duration) => {}
    }
}

/// How a handler run ended.
enum Ending {
    Finished(Result<Result<(), HandlerError>, JoinError>),
    LeaseLost,
    /// The server pushed the job's cancellation on the Consume stream.
    Cancelled,
}

/// Runs one job; `via` is its Consume stream, if it came from one (its settles go there, and
/// its cancellation comes from there).
pub(super) async fn process(shared: Arc<Shared>, job: Job, permit: OwnedSemaphorePermit, via: Option<Via>) {
    let Job { payload, ctx } = job;
    shared.metrics.in_flight(1);
    // A root span (`parent: None`): the producer's span is linked, not made the parent, so the
    // consumer's work forms its own trace.
    let span = tracing::info_span!(
        parent: None,
        "sepp.process",
        otel.kind = "consumer",
        otel.status_code = Empty,
        job_id = %ctx.id,
        job_type = %ctx.job_type,
        queue = %ctx.queue,
        attempt = ctx.attempt,
        worker_id = ctx.worker_id(),
    );
    otel::link(&span, ctx.trace_context.as_ref());
    handle(&shared, via.as_ref(), payload, Arc::new(ctx)).instrument(span).await;
    if let Some(via) = &via {
        via.release();
    }
    shared.metrics.in_flight(-1);
    drop(permit);
}

async fn handle(shared: &Shared, via: Option<&Via>, payload: Option<crate::Payload>, ctx: Arc<JobCtx>) {
    let Some(handler) = shared.handlers.get(&ctx.job_type).or(shared.catch_all.as_ref()) else {
        let retry = policy::failure_backoff(ctx.attempt);
        tracing::warn!(job_type = %ctx.job_type, ?retry, "no handler registered for job_type {}; nacking", ctx.job_type);
        settle_nack(shared, via, &ctx, retry, "no handler registered for job_type".to_owned()).await;
        return;
    };
    let task = tokio::spawn(handler(payload, ctx.clone()).in_current_span());
    let never = CancellationToken::new();
    let cancelled = via.map_or(&never, |via| &via.cancelled);
    let ending = match shared.auto_extend {
        None => {
            let mut task = task;
            tokio::select! {
                biased;
                result = &mut task => Ending::Finished(result),
                () = cancelled.cancelled() => { abort(task).await; Ending::Cancelled }
            }
        }
        Some(auto_extend) => supervise(shared, via, &ctx, task, auto_extend, cancelled).await,
    };
    match ending {
        Ending::Cancelled => {
            tracing::Span::current().record("otel.status_code", "error");
            tracing::warn!(job = %ctx, "job cancelled; handler stopped (the job is neither acked nor nacked)");
        }
        Ending::LeaseLost => {
            tracing::Span::current().record("otel.status_code", "error");
            tracing::error!(job = %ctx, "lease lost; handler aborted (the job is neither acked nor nacked)");
        }
        Ending::Finished(Ok(Ok(()))) => match stream::ack(shared, via, &ctx).await {
            Ok(()) => shared.metrics.processed(),
            Err(error) => log_settle_failure("ack", &ctx, &error),
        },
        Ending::Finished(Ok(Err(error))) => {
            tracing::Span::current().record("otel.status_code", "error");
            tracing::warn!(job = %ctx, %error, "handler failed");
            let (retry, reason) = policy::handler_verdict(error);
            settle_nack(shared, via, &ctx, retry, reason).await;
        }
        Ending::Finished(Err(join_error)) if join_error.is_panic() => {
            tracing::Span::current().record("otel.status_code", "error");
            let message = panic_message(join_error.into_panic());
            tracing::error!(job = %ctx, panic = %message, "handler panicked");
            settle_nack(shared, via, &ctx, policy::failure_backoff(ctx.attempt), "handler panicked".to_owned()).await;
        }
        Ending::Finished(Err(_cancelled)) => {
            // Only the runtime shutting down cancels a handler task we did not abort.
            tracing::warn!(job = %ctx, "handler task cancelled; the job will be redelivered when its lease expires");
        }
    }
}

/// Waits for the handler while extending its lease; aborts the handler when the lease is lost.
async fn supervise(
    shared: &Shared,
    via: Option<&Via>,
    ctx: &JobCtx,
    mut task: JoinHandle<Result<(), HandlerError>>,
    auto_extend: AutoExtend,
    cancelled: &CancellationToken,
) -> Ending {
    let fixed = match auto_extend {
        AutoExtend::Derived => None,
        AutoExtend::Fixed(interval) => Some(interval),
    };
    loop {
        let interval = policy::heartbeat_interval(fixed, ctx.lease_expiry(), SystemTime::now());
        tokio::select! {
            biased;
            result = &mut task => return Ending::Finished(result),
            () = cancelled.cancelled() => {
                abort(task).await;
                return Ending::Cancelled;
            }
            () = tokio::time::sleep(interval) => {}
        }
        match stream::extend(shared, via, ctx).await {
            Ok(expiry) => tracing::debug!(job_id = %ctx.id, ?expiry, "lease extended"),
            Err(LeaseError::JobNotFound | LeaseError::AttemptMismatch) => return abort(task).await,
            Err(error) if SystemTime::now() >= ctx.lease_expiry() => {
                tracing::warn!(job_id = %ctx.id, %error, "could not extend the lease before it expired");
                return abort(task).await;
            }
            Err(error) => {
                tracing::warn!(job_id = %ctx.id, %error, "could not extend the lease; lease still valid, will retry");
            }
        }
    }
}

/// Aborts the handler and waits until its future is dropped.
async fn abort(task: JoinHandle<Result<(), HandlerError>>) -> Ending {
    task.abort();
    let _ = task.await;
    Ending::LeaseLost
}

async fn settle_nack(shared: &Shared, via: Option<&Via>, ctx: &JobCtx, retry: RetryDirective, reason: String) {
    match stream::nack(shared, via, ctx, retry, reason).await {
        Ok(dead_lettered) => shared.metrics.nacked(dead_lettered),
        Err(error) => log_settle_failure("nack", ctx, &error),
    }
}

fn log_settle_failure(operation: &str, ctx: &JobCtx, error: &LeaseError) {
    tracing::error!(
        job = %ctx,
        %error,
        "{operation} failed: the job will be redelivered when its lease expires (or an earlier retry already settled it)"
    );
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_owned(),
            Err(_) => "non-string panic payload".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_from_strings_and_strs() {
        assert_eq!(panic_message(Box::new("static")), "static");
        assert_eq!(panic_message(Box::new(String::from("owned"))), "owned");
        assert_eq!(panic_message(Box::new(7)), "non-string panic payload");
    }
}
