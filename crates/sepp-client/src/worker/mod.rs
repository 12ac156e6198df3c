//! The [`Worker`]: runs the reserve → handle → ack/nack loop so application code only writes
//! handlers, with bounded concurrency, optional automatic lease extension, and graceful
//! shutdown through a [`ShutdownHandle`].
//!
//! How a job ends:
//!
//! | handler outcome | what the Worker sends |
//! |---|---|
//! | `Ok(())` | ack |
//! | [`HandlerError::Retry`] | nack, [`RetryDirective::Default`](crate::client::RetryDirective::Default) (the queue's retry policy) |
//! | [`HandlerError::RetryAfter`] | nack, [`RetryDirective::After`](crate::client::RetryDirective::After) the given delay |
//! | [`HandlerError::Permanent`] | nack, [`RetryDirective::DeadLetter`](crate::client::RetryDirective::DeadLetter) |
//! | panic | nack after `min(2^attempt, 60)` s, reason "handler panicked" |
//! | no handler for the job type (and no catch-all) | nack after `min(2^attempt, 60)` s |
//! | lease lost while auto-extending | nothing: the handler is aborted, the job belongs to someone else |
//! | job cancelled, pushed on the Consume stream | nothing: the handler is aborted at once |
//!
//! Where the server offers it, jobs come from one `Consume` stream and acks, nacks and extends
//! go on it (see the crate's [Consume stream](crate#the-consume-stream) section); otherwise,
//! or with [`Worker::with_streaming(false)`](Worker::with_streaming), from reserve calls.
//!
//! A failed ack or nack is logged, never propagated: the job is redelivered when its lease
//! expires (or an earlier retry already settled it).

mod policy;
mod run;
mod stream;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::client::SeppClient;
use crate::{JobCtx, Payload, ReserveOptions, ReserveOptionsError};

type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send>>;
type Handler = Arc<dyn Fn(Option<Payload>, Arc<JobCtx>) -> HandlerFuture + Send + Sync>;

/// How a handler asks for its job to be retried or dead-lettered. Returning `Ok(())` acks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// Retry under the queue's retry policy ([`RetryDirective::Default`](crate::client::RetryDirective::Default)).
    #[error("retry: {0}")]
    Retry(String),
    /// Retry after this delay ([`RetryDirective::After`](crate::client::RetryDirective::After)).
    #[error("retry after {1:?}: {0}")]
    RetryAfter(String, Duration),
    /// Do not retry: dead-letter the job now ([`RetryDirective::DeadLetter`](crate::client::RetryDirective::DeadLetter)).
    #[error("permanent failure: {0}")]
    Permanent(String),
}

impl HandlerError {
    /// Retry under the queue's policy, recording `reason`.
    pub fn retry(reason: impl Into<String>) -> Self {
        Self::Retry(reason.into())
    }

    /// Retry after `delay`, recording `reason`.
    pub fn retry_after(reason: impl Into<String>, delay: Duration) -> Self {
        Self::RetryAfter(reason.into(), delay)
    }

    /// Dead-letter the job, recording `reason`.
    pub fn permanent(reason: impl Into<String>) -> Self {
        Self::Permanent(reason.into())
    }
}

/// Why a [`Worker`] could not be configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerBuilderError {
    /// A handler for this job type is already registered (use
    /// [`Worker::replace_handler`] to swap it).
    #[error("a handler for job type {0:?} is already registered")]
    DuplicateHandler(String),
    /// The queues, lease or worker id are invalid.
    #[error(transparent)]
    ReserveOptions(#[from] ReserveOptionsError),
}

/// Stops a running [`Worker`]: it stops reserving, lets in-flight jobs finish (acked or nacked
/// as usual) and then `run` returns. Cloneable; take it before calling [`Worker::run`].
#[derive(Debug, Clone, Default)]
pub struct ShutdownHandle {
    token: CancellationToken,
}

impl ShutdownHandle {
    /// Asks the Worker to stop. Idempotent.
    pub fn shutdown(&self) {
        self.token.cancel();
    }

    /// Whether shutdown was asked for.
    pub fn is_shutdown(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// When the heartbeat extends a running job's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AutoExtend {
    /// At a third of the remaining granted lease.
    Derived,
    /// At this fixed interval.
    Fixed(Duration),
}

/// Runs handlers for reserved jobs; see the [module documentation](self) for how each outcome
/// settles the job.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use sepp_client::client::SeppClient;
/// use sepp_client::worker::{HandlerError, Worker};
///
/// let client = SeppClient::connect("http://127.0.0.1:50051").await?;
/// let worker = Worker::new(client, ["emails"], Duration::from_secs(30))?
///     .with_max_in_flight(8)
///     .with_auto_extend()
///     .handle("send_welcome", |payload, ctx| async move {
///         let Some(payload) = payload else { return Err(HandlerError::permanent("no payload")) };
///         println!("{ctx}: {} bytes", payload.data.len());
///         Ok(())
///     })?;
/// let shutdown = worker.shutdown_handle();
/// tokio::spawn(async move {
///     let _ = tokio::signal::ctrl_c().await;
///     shutdown.shutdown();
/// });
/// worker.run().await; // returns once in-flight jobs are done
/// # Ok(()) }
/// ```
pub struct Worker {
    client: SeppClient,
    options: ReserveOptions,
    max_jobs: Option<u32>,
    max_in_flight: usize,
    reserve_error_backoff: Duration,
    auto_extend: Option<AutoExtend>,
    handlers: HashMap<String, Handler>,
    catch_all: Option<Handler>,
    shutdown: ShutdownHandle,
    streaming: bool,
}

impl Worker {
    /// Jobs handled at once unless [`with_max_in_flight`](Self::with_max_in_flight) says otherwise.
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;
    /// The pause after a failed reserve unless
    /// [`with_reserve_error_backoff`](Self::with_reserve_error_backoff) says otherwise.
    pub const DEFAULT_RESERVE_ERROR_BACKOFF: Duration = Duration::from_secs(1);

    /// A Worker reserving from `queues` (in that order) with leases of `lease_duration`. It
    /// waits up to 30 s per reserve, handles up to 16 jobs at once, does not extend leases, and
    /// identifies itself as `<host>-<pid>-<8 hex>`.
    pub fn new<I>(client: SeppClient, queues: I, lease_duration: Duration) -> Result<Self, WorkerBuilderError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let options = ReserveOptions::new(queues, lease_duration)?.with_worker_id(default_worker_id())?;
        Ok(Self {
            client,
            options,
            max_jobs: None,
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            reserve_error_backoff: Self::DEFAULT_RESERVE_ERROR_BACKOFF,
            auto_extend: None,
            handlers: HashMap::new(),
            catch_all: None,
            shutdown: ShutdownHandle::default(),
            streaming: true,
        })
    }

    /// How long each reserve waits for a job.
    ///
    /// # Panics
    ///
    /// On a zero wait, which would poll the server in a hot loop.
    pub fn with_wait_timeout(mut self, wait_timeout: Duration) -> Self {
        assert!(!wait_timeout.is_zero(), "the Worker's wait timeout must be greater than zero");
        self.options = self.options.with_wait_timeout(wait_timeout);
        self
    }

    /// The most jobs one reserve asks for; each request is still capped by the free capacity.
    ///
    /// # Panics
    ///
    /// On zero.
    pub fn with_max_jobs(mut self, max_jobs: u32) -> Self {
        assert!(max_jobs > 0, "the Worker's max_jobs must be greater than zero");
        self.max_jobs = Some(max_jobs);
        self
    }

    /// The most jobs handled at once (default 16); values below 1 act as 1.
    pub fn with_max_in_flight(mut self, max_in_flight: usize) -> Self {
        self.max_in_flight = max_in_flight;
        self
    }

    /// Whether the Worker consumes on a `Consume` stream when the server offers one (on by
    /// default; see the crate's [Workers](crate#the-consume-stream) section). Off, it always
    /// reserves with calls.
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// The pause after a failed reserve (default 1 s), and before a failed Consume stream is
    /// reopened.
    pub fn with_reserve_error_backoff(mut self, backoff: Duration) -> Self {
        self.reserve_error_backoff = backoff;
        self
    }

    /// Replaces the generated worker id; it must be non-empty.
    pub fn with_worker_id(mut self, worker_id: impl Into<String>) -> Result<Self, WorkerBuilderError> {
        self.options = self.options.with_worker_id(worker_id)?;
        Ok(self)
    }

    /// Extends the lease of every running job at a third of its remaining granted lease, by the
    /// requested lease duration. If an extension shows the lease was lost, the handler is
    /// aborted and the job is neither acked nor nacked. A handler that hangs keeps its lease
    /// forever: bound your handlers (for example with `tokio::time::timeout`).
    pub fn with_auto_extend(mut self) -> Self {
        self.auto_extend = Some(AutoExtend::Derived);
        self
    }

    /// Like [`with_auto_extend`](Self::with_auto_extend), with a fixed interval (at least 1 ms).
    pub fn with_auto_extend_interval(mut self, interval: Duration) -> Self {
        self.auto_extend = Some(AutoExtend::Fixed(interval.max(Duration::from_millis(1))));
        self
    }

    /// Registers the handler for `job_type`; fails if one is already registered.
    pub fn handle<F, Fut>(mut self, job_type: impl Into<String>, handler: F) -> Result<Self, WorkerBuilderError>
    where
        F: Fn(Option<Payload>, Arc<JobCtx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let job_type = job_type.into();
        if self.handlers.contains_key(&job_type) {
            return Err(WorkerBuilderError::DuplicateHandler(job_type));
        }
        self.handlers.insert(job_type, boxed(handler));
        Ok(self)
    }

    /// Registers the handler for `job_type`, replacing any earlier one.
    pub fn replace_handler<F, Fut>(mut self, job_type: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Option<Payload>, Arc<JobCtx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        self.handlers.insert(job_type.into(), boxed(handler));
        self
    }

    /// Removes the handler for `job_type`, if any.
    pub fn remove_handler(mut self, job_type: &str) -> Self {
        self.handlers.remove(job_type);
        self
    }

    /// Handles every job type that has no handler of its own (replacing an earlier catch-all).
    pub fn with_catch_all_handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Option<Payload>, Arc<JobCtx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        self.catch_all = Some(boxed(handler));
        self
    }

    /// A handle to stop the Worker once it runs.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// The id the Worker sends with its reserves and lease operations.
    pub fn worker_id(&self) -> &str {
        self.options.worker_id().unwrap_or_default()
    }

    /// Runs until shutdown is asked for through a [`ShutdownHandle`], then waits for every
    /// in-flight job to finish and returns. Errors are logged and retried, never returned.
    pub async fn run(self) {
        run::run(self).await;
    }
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut job_types: Vec<&String> = self.handlers.keys().collect();
        job_types.sort();
        f.debug_struct("Worker")
            .field("worker_id", &self.worker_id())
            .field("options", &self.options)
            .field("max_jobs", &self.max_jobs)
            .field("max_in_flight", &self.max_in_flight)
            .field("reserve_error_backoff", &self.reserve_error_backoff)
            .field("auto_extend", &self.auto_extend)
            .field("handlers", &job_types)
            .field("catch_all", &self.catch_all.is_some())
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
}

fn boxed<F, Fut>(handler: F) -> Handler
where
    F: Fn(Option<Payload>, Arc<JobCtx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    Arc::new(move |payload, ctx| Box::pin(handler(payload, ctx)))
}

/// `<host>-<pid>-<8 hex>`: the host from `HOSTNAME`, else `COMPUTERNAME`, else the OS.
fn default_worker_id() -> String {
    let host = ["HOSTNAME", "COMPUTERNAME"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned());
    let host = if host.is_empty() { "unknown-host".to_owned() } else { host };
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &suffix[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> SeppClient {
        SeppClient::from_channel(tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy())
    }

    async fn noop(_: Option<Payload>, _: Arc<JobCtx>) -> Result<(), HandlerError> {
        Ok(())
    }

    #[test]
    fn the_default_worker_id_is_host_pid_and_eight_hex_digits() {
        let id = default_worker_id();
        let parts: Vec<&str> = id.rsplitn(3, '-').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert_eq!(parts[0].len(), 8);
        assert!(parts[0].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(parts[1], std::process::id().to_string());
        assert!(!parts[2].is_empty());
        assert_ne!(default_worker_id(), id);
    }

    #[tokio::test]
    async fn a_new_worker_has_the_documented_defaults() {
        let worker = Worker::new(client(), ["q"], Duration::from_secs(30)).unwrap();
        assert_eq!(worker.max_in_flight, 16);
        assert_eq!(worker.reserve_error_backoff, Duration::from_secs(1));
        assert_eq!(worker.auto_extend, None);
        assert_eq!(worker.max_jobs, None);
        assert_eq!(worker.options.wait_timeout(), Duration::from_secs(30));
        assert_eq!(worker.options.worker_id(), Some(worker.worker_id()));
        assert!(!worker.shutdown_handle().is_shutdown());
    }

    #[tokio::test]
    async fn invalid_options_are_refused() {
        let none: [&str; 0] = [];
        assert_eq!(
            Worker::new(client(), none, Duration::from_secs(1)).unwrap_err(),
            WorkerBuilderError::ReserveOptions(ReserveOptionsError::EmptyQueues)
        );
        let worker = Worker::new(client(), ["q"], Duration::from_secs(1)).unwrap();
        assert_eq!(
            worker.with_worker_id("").unwrap_err(),
            WorkerBuilderError::ReserveOptions(ReserveOptionsError::EmptyWorkerId)
        );
    }

    #[tokio::test]
    #[should_panic(expected = "wait timeout must be greater than zero")]
    async fn a_zero_wait_panics() {
        let _ = Worker::new(client(), ["q"], Duration::from_secs(1)).unwrap().with_wait_timeout(Duration::ZERO);
    }

    #[tokio::test]
    #[should_panic(expected = "max_jobs must be greater than zero")]
    async fn zero_max_jobs_panics() {
        let _ = Worker::new(client(), ["q"], Duration::from_secs(1)).unwrap().with_max_jobs(0);
    }

    #[tokio::test]
    async fn handlers_register_once_and_can_be_replaced_or_removed() {
        let worker = Worker::new(client(), ["q"], Duration::from_secs(1)).unwrap().handle("a", noop).unwrap();
        let duplicate =
            Worker::new(client(), ["q"], Duration::from_secs(1)).unwrap().handle("a", noop).unwrap().handle("a", noop);
        assert_eq!(duplicate.unwrap_err(), WorkerBuilderError::DuplicateHandler("a".into()));
        let worker = worker.replace_handler("a", noop).replace_handler("b", noop);
        assert_eq!(worker.handlers.len(), 2);
        let worker = worker.remove_handler("a").with_catch_all_handler(noop);
        assert_eq!(worker.handlers.keys().collect::<Vec<_>>(), ["b"]);
        assert!(worker.catch_all.is_some());
    }

    #[tokio::test]
    async fn auto_extend_options_are_recorded_with_a_floor() {
        let worker = Worker::new(client(), ["q"], Duration::from_secs(1)).unwrap();
        let worker = worker.with_auto_extend();
        assert_eq!(worker.auto_extend, Some(AutoExtend::Derived));
        let worker = worker.with_auto_extend_interval(Duration::ZERO);
        assert_eq!(worker.auto_extend, Some(AutoExtend::Fixed(Duration::from_millis(1))));
    }

    #[test]
    fn shutdown_is_shared_by_clones_and_idempotent() {
        let handle = ShutdownHandle::default();
        let clone = handle.clone();
        clone.shutdown();
        clone.shutdown();
        assert!(handle.is_shutdown());
    }
}
