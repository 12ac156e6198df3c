//! Transport-level retries ([`RetryPolicy`]) and what a nack asks for ([`RetryDirective`]).
//!
//! Retries are opt-in: the default policy makes one attempt. Only transient codes are retried
//! (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, RESOURCE_EXHAUSTED), reserve and dead-letter drains
//! never are, and an enqueue that carries a job without an idempotency key does not retry the
//! ambiguous codes (DEADLINE_EXCEEDED, ABORTED), after which the jobs may already be written.
//! Following a cluster follower's redirect to the leader is no retry (the follower executed
//! nothing) and happens within one attempt, for every call (see `cluster`).
//!
//! A client that knows it talks to a cluster (a node named the leader, or `get_server_info`
//! answered with `cluster`) rides a failover on top of that: once the policy's attempts are
//! used up, a call that failed with a code its scope retries (never RESOURCE_EXHAUSTED, which is
//! overload, not failover) goes again until the policy's failover window (15 s by default) has
//! passed since the first such failure, every 100 ms at first and at most every second.

use std::future::Future;
use std::time::{Duration, Instant};

use tonic::{Code, Status};

/// What happens to a nacked job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RetryDirective {
    /// Retry under the queue's retry policy (its delay and backoff), or dead-letter the job if
    /// this was its last attempt.
    #[default]
    Default,
    /// Retry after this delay (capped by the server's schedule horizon), or dead-letter the job
    /// if this was its last attempt.
    After(Duration),
    /// Dead-letter the job now, whatever attempts it has left.
    DeadLetter,
}

/// How often, and how patiently, the client retries a failed call.
///
/// The delay before retry *n* is the current backoff times a random factor in `[0.5, 1.0)`
/// (or exactly the backoff without jitter); after each retry the backoff is multiplied by
/// `multiplier`, up to `max_backoff`. Each retry is logged at warn. Re-sending a call to the
/// cluster leader a follower names is not a retry and uses up no attempt.
///
/// ```
/// use std::time::Duration;
/// use sepp_client::client::RetryPolicy;
///
/// let policy = RetryPolicy::default()
///     .with_max_attempts(5)
///     .with_initial_backoff(Duration::from_millis(50))
///     .with_max_backoff(Duration::from_secs(2));
/// assert_eq!(policy.max_attempts(), 5);
/// assert_eq!(RetryPolicy::default().max_attempts(), 1); // no retries unless asked
/// // ... except while a cluster fails over (see `with_failover_window`).
/// assert_eq!(RetryPolicy::default().failover_window(), Duration::from_secs(15));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    multiplier: f64,
    jitter: bool,
    failover_window: Duration,
}

/// The longest backoff between the retries that ride a cluster failover, so that a call reaches
/// the new leader within about a second of its election.
pub(crate) const FAILOVER_MAX_BACKOFF: Duration = Duration::from_secs(1);

impl Default for RetryPolicy {
    /// One attempt (no retries); when attempts are raised: 100 ms initial backoff, 10 s
    /// maximum, multiplier 2, with jitter. In a cluster, a 15 s failover window.
    fn default() -> Self {
        Self {
            max_attempts: 1,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: true,
            failover_window: Duration::from_secs(15),
        }
    }
}

impl RetryPolicy {
    /// The total number of attempts, the first included; values below 1 count as 1.
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// The backoff before the first retry.
    pub fn with_initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// The largest backoff.
    pub fn with_max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// The factor the backoff grows by after each retry; values below 1 (and NaN) count as 1.
    pub fn with_multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = if multiplier >= 1.0 { multiplier } else { 1.0 };
        self
    }

    /// Sleeps exactly the backoff, without the random factor.
    pub fn without_jitter(mut self) -> Self {
        self.jitter = false;
        self
    }

    /// How long a call to a cluster keeps being retried, once the attempts are used up, while
    /// the cluster fails over (default 15 s; `Duration::ZERO` turns it off). It applies only
    /// when the client knows it talks to a cluster (a node named the leader, or
    /// `get_server_info` answered with `cluster`), only to the failures the call may retry
    /// (see the module docs; never RESOURCE_EXHAUSTED), and also to reserve, on UNAVAILABLE.
    /// The backoff starts at the initial backoff and grows to at most 1 s.
    pub fn with_failover_window(mut self, window: Duration) -> Self {
        self.failover_window = window;
        self
    }

    /// How long a call to a cluster keeps being retried while it fails over.
    pub fn failover_window(&self) -> Duration {
        self.failover_window
    }

    /// The total number of attempts.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The backoff before the first retry.
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The largest backoff.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The backoff growth factor.
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// Whether delays are jittered.
    pub fn jitter(&self) -> bool {
        self.jitter
    }

    /// The sleep for a backoff, given a uniform random number in `[0, 1)`.
    pub(crate) fn delay(&self, backoff: Duration, random: f64) -> Duration {
        if self.jitter { backoff.mul_f64(0.5 + 0.5 * random.clamp(0.0, 1.0)) } else { backoff }
    }

    /// The backoff after `backoff`.
    pub(crate) fn next_backoff(&self, backoff: Duration) -> Duration {
        let grown = backoff.as_secs_f64() * self.multiplier;
        if grown >= self.max_backoff.as_secs_f64() { self.max_backoff } else { Duration::from_secs_f64(grown) }
    }

    fn first_backoff(&self) -> Duration {
        self.initial_backoff.min(self.max_backoff)
    }
}

/// Which failures a call may retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryScope {
    /// Every transient code: the call is safe to repeat.
    Transient,
    /// An enqueue with a job that has no idempotency key: only codes that mean the request
    /// was not processed (UNAVAILABLE, RESOURCE_EXHAUSTED).
    KeylessEnqueue,
    /// A reserve: never under the retry policy (it is a long poll), but on UNAVAILABLE while a
    /// cluster fails over.
    Reserve,
}

impl RetryScope {
    pub(crate) fn allows(self, code: Code) -> bool {
        match self {
            Self::Transient => {
                matches!(code, Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::ResourceExhausted)
            }
            Self::KeylessEnqueue => matches!(code, Code::Unavailable | Code::ResourceExhausted),
            Self::Reserve => false,
        }
    }

    /// Whether a failure with `code` is one a cluster's failover causes and the call may ride.
    pub(crate) fn rides_failover(self, code: Code) -> bool {
        match self {
            Self::Reserve => code == Code::Unavailable,
            _ => code != Code::ResourceExhausted && self.allows(code),
        }
    }
}

/// Runs `call` under `policy`, returning its last result and the number of attempts made.
/// `in_cluster` tells, at each failure, whether the client knows it talks to a cluster.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    operation: &'static str,
    scope: RetryScope,
    in_cluster: impl Fn() -> bool,
    mut call: F,
) -> (Result<T, Status>, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let mut backoff = policy.first_backoff();
    let mut attempt = 1;
    let mut failover = Failover::new(policy);
    loop {
        match call().await {
            Err(status) if attempt < policy.max_attempts && scope.allows(status.code()) => {
                let delay = policy.delay(backoff, fastrand::f64());
                tracing::warn!(
                    operation,
                    attempt,
                    code = ?status.code(),
                    message = status.message(),
                    delay_ms = delay.as_millis() as u64,
                    "retrying sepp call after a transient failure"
                );
                tokio::time::sleep(delay).await;
                backoff = policy.next_backoff(backoff);
                attempt += 1;
            }
            Err(status) if scope.rides_failover(status.code()) && in_cluster() => {
                let Some(delay) = failover.next_delay(policy) else { return (Err(status), attempt) };
                tracing::warn!(
                    operation,
                    attempt,
                    code = ?status.code(),
                    message = status.message(),
                    delay_ms = delay.as_millis() as u64,
                    "retrying sepp call while the cluster fails over"
                );
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            result => return (result, attempt),
        }
    }
}

/// The retries of one call that ride a cluster failover: since when, and the next backoff.
struct Failover {
    since: Option<Instant>,
    backoff: Duration,
}

impl Failover {
    fn new(policy: &RetryPolicy) -> Self {
        Self { since: None, backoff: policy.initial_backoff.min(FAILOVER_MAX_BACKOFF) }
    }

    /// The sleep before the next retry, or `None` once the window has passed (the sleep ends
    /// at the window's end at the latest).
    fn next_delay(&mut self, policy: &RetryPolicy) -> Option<Duration> {
        let since = *self.since.get_or_insert_with(Instant::now);
        let left = policy.failover_window.checked_sub(since.elapsed()).filter(|left| !left.is_zero())?;
        let delay = policy.delay(self.backoff, fastrand::f64()).min(left);
        let grown = self.backoff.as_secs_f64() * policy.multiplier;
        self.backoff = Duration::from_secs_f64(grown.min(FAILOVER_MAX_BACKOFF.as_secs_f64()));
        Some(delay)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[test]
    fn the_default_policy_makes_one_attempt() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.max_attempts(), 1);
        assert_eq!(policy.initial_backoff(), Duration::from_millis(100));
        assert_eq!(policy.max_backoff(), Duration::from_secs(10));
        assert_eq!(policy.multiplier(), 2.0);
        assert!(policy.jitter());
    }

    #[test]
    fn attempts_and_multiplier_are_clamped() {
        assert_eq!(RetryPolicy::default().with_max_attempts(0).max_attempts(), 1);
        assert_eq!(RetryPolicy::default().with_multiplier(0.5).multiplier(), 1.0);
        assert_eq!(RetryPolicy::default().with_multiplier(f64::NAN).multiplier(), 1.0);
        assert_eq!(RetryPolicy::default().with_multiplier(3.0).multiplier(), 3.0);
    }

    #[test]
    fn jitter_scales_the_backoff_into_half_to_one() {
        let policy = RetryPolicy::default();
        let backoff = Duration::from_millis(1000);
        assert_eq!(policy.delay(backoff, 0.0), Duration::from_millis(500));
        assert_eq!(policy.delay(backoff, 0.5), Duration::from_millis(750));
        assert!(policy.delay(backoff, 0.999_999) < backoff);
        for _ in 0..1000 {
            let delay = policy.delay(backoff, fastrand::f64());
            assert!(delay >= Duration::from_millis(500) && delay < backoff, "{delay:?}");
        }
        assert_eq!(policy.without_jitter().delay(backoff, 0.3), backoff);
    }

    #[test]
    fn backoff_grows_by_the_multiplier_up_to_the_maximum() {
        let policy = RetryPolicy::default().with_max_backoff(Duration::from_millis(500));
        let mut backoff = policy.first_backoff();
        let mut seen = vec![];
        for _ in 0..5 {
            seen.push(backoff.as_millis());
            backoff = policy.next_backoff(backoff);
        }
        assert_eq!(seen, [100, 200, 400, 500, 500]);
        let capped = RetryPolicy::default().with_initial_backoff(Duration::from_secs(60));
        assert_eq!(capped.first_backoff(), Duration::from_secs(10));
    }

    #[test]
    fn only_transient_codes_are_retried_and_keyless_enqueues_skip_ambiguous_ones() {
        for code in [Code::Unavailable, Code::DeadlineExceeded, Code::Aborted, Code::ResourceExhausted] {
            assert!(RetryScope::Transient.allows(code), "{code:?}");
        }
        for code in [Code::InvalidArgument, Code::Unauthenticated, Code::Internal, Code::Cancelled, Code::NotFound] {
            assert!(!RetryScope::Transient.allows(code), "{code:?}");
            assert!(!RetryScope::KeylessEnqueue.allows(code), "{code:?}");
        }
        assert!(RetryScope::KeylessEnqueue.allows(Code::Unavailable));
        assert!(RetryScope::KeylessEnqueue.allows(Code::ResourceExhausted));
        assert!(!RetryScope::KeylessEnqueue.allows(Code::DeadlineExceeded));
        assert!(!RetryScope::KeylessEnqueue.allows(Code::Aborted));
    }

    async fn failing_then_ok(policy: &RetryPolicy, scope: RetryScope, failures: u32, code: Code) -> (bool, u32) {
        calls_until_ok(policy, scope, false, failures, code).await
    }

    /// A call that fails `failures` times with `code`, then succeeds, under `policy`, by a client
    /// that knows (or not) it talks to a cluster: whether it succeeded, and after how many attempts.
    async fn calls_until_ok(
        policy: &RetryPolicy,
        scope: RetryScope,
        cluster: bool,
        failures: u32,
        code: Code,
    ) -> (bool, u32) {
        let calls = AtomicU32::new(0);
        let (result, attempts) = with_retries(
            policy,
            "test",
            scope,
            || cluster,
            || async {
                let call = calls.fetch_add(1, Ordering::SeqCst);
                if call < failures { Err(Status::new(code, "no")) } else { Ok(()) }
            },
        )
        .await;
        assert_eq!(attempts, calls.load(Ordering::SeqCst));
        (result.is_ok(), attempts)
    }

    #[tokio::test]
    async fn retries_transient_failures_up_to_max_attempts() {
        let policy = RetryPolicy::default().with_max_attempts(3).with_initial_backoff(Duration::from_millis(1));
        assert_eq!(failing_then_ok(&policy, RetryScope::Transient, 2, Code::Unavailable).await, (true, 3));
        assert_eq!(failing_then_ok(&policy, RetryScope::Transient, 3, Code::Unavailable).await, (false, 3));
    }

    #[tokio::test]
    async fn does_not_retry_permanent_failures_or_by_default() {
        let policy = RetryPolicy::default().with_max_attempts(3).with_initial_backoff(Duration::from_millis(1));
        assert_eq!(failing_then_ok(&policy, RetryScope::Transient, 1, Code::InvalidArgument).await, (false, 1));
        assert_eq!(failing_then_ok(&policy, RetryScope::KeylessEnqueue, 1, Code::DeadlineExceeded).await, (false, 1));
        let default = RetryPolicy::default();
        assert_eq!(failing_then_ok(&default, RetryScope::Transient, 1, Code::Unavailable).await, (false, 1));
    }

    async fn in_cluster(policy: &RetryPolicy, scope: RetryScope, failures: u32, code: Code) -> (bool, u32) {
        calls_until_ok(policy, scope, true, failures, code).await
    }

    #[tokio::test]
    async fn in_a_cluster_the_default_policy_rides_a_failover() {
        let fast = RetryPolicy::default().with_initial_backoff(Duration::from_millis(1));
        assert_eq!(in_cluster(&fast, RetryScope::Transient, 5, Code::Unavailable).await, (true, 6));
        assert_eq!(in_cluster(&fast, RetryScope::Transient, 2, Code::Aborted).await, (true, 3));
        assert_eq!(in_cluster(&fast, RetryScope::KeylessEnqueue, 3, Code::Unavailable).await, (true, 4));
        assert_eq!(in_cluster(&fast, RetryScope::Reserve, 3, Code::Unavailable).await, (true, 4));
        // After the policy's own attempts, the failover retries follow.
        let three = fast.clone().with_max_attempts(3);
        assert_eq!(in_cluster(&three, RetryScope::Transient, 5, Code::Unavailable).await, (true, 6));
    }

    #[tokio::test]
    async fn a_failover_is_ridden_only_for_what_the_call_may_retry_and_within_the_window() {
        let fast = RetryPolicy::default().with_initial_backoff(Duration::from_millis(1));
        // Overload is no failover; ambiguous codes stay unretried for keyless enqueues; a
        // reserve rides only UNAVAILABLE; permanent codes never.
        assert_eq!(in_cluster(&fast, RetryScope::Transient, 1, Code::ResourceExhausted).await, (false, 1));
        assert_eq!(in_cluster(&fast, RetryScope::KeylessEnqueue, 1, Code::DeadlineExceeded).await, (false, 1));
        assert_eq!(in_cluster(&fast, RetryScope::Reserve, 1, Code::DeadlineExceeded).await, (false, 1));
        assert_eq!(in_cluster(&fast, RetryScope::Transient, 1, Code::InvalidArgument).await, (false, 1));
        // A zero window turns it off; a short one ends the retries of a call that keeps failing.
        let off = fast.clone().with_failover_window(Duration::ZERO);
        assert_eq!(in_cluster(&off, RetryScope::Transient, 1, Code::Unavailable).await, (false, 1));
        let short = fast.with_failover_window(Duration::from_millis(30));
        let (ok, attempts) = in_cluster(&short, RetryScope::Transient, u32::MAX, Code::Unavailable).await;
        assert!(!ok && attempts > 1, "{attempts}");
    }

    #[test]
    fn failover_backoff_grows_to_a_second() {
        let policy = RetryPolicy::default().without_jitter();
        let mut failover = Failover::new(&policy);
        let delays: Vec<u128> = (0..6).map(|_| failover.next_delay(&policy).unwrap().as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
    }
}
