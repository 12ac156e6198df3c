//! Transport-level retries ([`RetryPolicy`]) and what a nack asks for ([`RetryDirective`]).
//!
//! Retries are opt-in: the default policy makes one attempt. Only transient codes are retried
//! (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, RESOURCE_EXHAUSTED), reserve and dead-letter drains
//! never are, and an enqueue that carries a job without an idempotency key does not retry the
//! ambiguous codes (DEADLINE_EXCEEDED, ABORTED), after which the jobs may already be written.
//! Following a cluster follower's redirect to the leader is no retry (the follower executed
//! nothing) and happens within one attempt, for every call (see `cluster`).

use std::future::Future;
use std::time::Duration;

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
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    multiplier: f64,
    jitter: bool,
}

impl Default for RetryPolicy {
    /// One attempt (no retries); when attempts are raised: 100 ms initial backoff, 10 s
    /// maximum, multiplier 2, with jitter.
    fn default() -> Self {
        Self {
            max_attempts: 1,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: true,
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
}

impl RetryScope {
    pub(crate) fn allows(self, code: Code) -> bool {
        match self {
            Self::Transient => {
                matches!(code, Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::ResourceExhausted)
            }
            Self::KeylessEnqueue => matches!(code, Code::Unavailable | Code::ResourceExhausted),
        }
    }
}

/// Runs `call` under `policy`, returning its last result and the number of attempts made.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    operation: &'static str,
    scope: RetryScope,
    mut call: F,
) -> (Result<T, Status>, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let mut backoff = policy.first_backoff();
    let mut attempt = 1;
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
            result => return (result, attempt),
        }
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
        let calls = AtomicU32::new(0);
        let (result, attempts) = with_retries(policy, "test", scope, || async {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            if call < failures { Err(Status::new(code, "no")) } else { Ok(()) }
        })
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
}
