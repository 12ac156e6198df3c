//! The Worker's decisions as small pure functions of their inputs (the attempt, the clock, the
//! capacity), so they are tested without a server or a runtime.

use std::time::{Duration, SystemTime};

use super::HandlerError;
use crate::client::RetryDirective;

/// The longest backoff for a job no handler took or whose handler panicked.
const MAX_FAILURE_BACKOFF: Duration = Duration::from_secs(60);
/// The shortest heartbeat interval.
const MIN_HEARTBEAT: Duration = Duration::from_millis(1);
/// A reserve that comes back empty sooner than this (or half its wait) suggests the server is
/// not long-polling (for example, it is shutting down)...
const EARLY_EMPTY_THRESHOLD: Duration = Duration::from_millis(100);
/// ...so the Worker pauses this long before polling again instead of hot-looping.
pub(crate) const EARLY_EMPTY_PAUSE: Duration = Duration::from_millis(250);

/// The retry for a job that failed without a verdict from its handler (no handler, or a panic):
/// after `min(2^attempt, 60)` seconds, so a broken job cannot hot-loop through its attempts.
pub(crate) fn failure_backoff(attempt: u32) -> RetryDirective {
    let seconds = 2u64.checked_pow(attempt).unwrap_or(u64::MAX);
    RetryDirective::After(Duration::from_secs(seconds).min(MAX_FAILURE_BACKOFF))
}

/// The nack for a handler's verdict: its directive and reason.
pub(crate) fn handler_verdict(error: HandlerError) -> (RetryDirective, String) {
    match error {
        HandlerError::Retry(reason) => (RetryDirective::Default, reason),
        HandlerError::RetryAfter(reason, delay) => (RetryDirective::After(delay), reason),
        HandlerError::Permanent(reason) => (RetryDirective::DeadLetter, reason),
    }
}

/// How long to wait before the next lease extension: the fixed interval if one was set, else a
/// third of what is left of the known lease, never less than a millisecond.
pub(crate) fn heartbeat_interval(fixed: Option<Duration>, known_expiry: SystemTime, now: SystemTime) -> Duration {
    let interval = match fixed {
        Some(interval) => interval,
        None => known_expiry.duration_since(now).unwrap_or(Duration::ZERO) / 3,
    };
    interval.max(MIN_HEARTBEAT)
}

/// How many jobs to ask for: the user's batch size (if any) capped by the free capacity, where
/// the free capacity is the permit already held plus the permits still available.
pub(crate) fn reserve_batch(max_jobs: Option<u32>, available_permits: usize) -> u32 {
    let capacity = u32::try_from(available_permits.saturating_add(1)).unwrap_or(u32::MAX);
    max_jobs.map_or(capacity, |max_jobs| max_jobs.min(capacity))
}

/// Whether an empty reserve came back suspiciously early for its wait.
pub(crate) fn is_early_empty(elapsed: Duration, wait_timeout: Duration) -> bool {
    elapsed < EARLY_EMPTY_THRESHOLD.min(wait_timeout / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_exponentially_up_to_a_minute() {
        let after = |attempt| match failure_backoff(attempt) {
            RetryDirective::After(delay) => delay.as_secs(),
            other => panic!("{other:?}"),
        };
        assert_eq!([after(0), after(1), after(2), after(3), after(5)], [1, 2, 4, 8, 32]);
        assert_eq!(after(6), 60);
        assert_eq!(after(64), 60);
        assert_eq!(after(u32::MAX), 60);
    }

    #[test]
    fn handler_errors_map_onto_nack_directives() {
        assert_eq!(handler_verdict(HandlerError::retry("r")), (RetryDirective::Default, "r".to_owned()));
        assert_eq!(
            handler_verdict(HandlerError::retry_after("later", Duration::from_secs(5))),
            (RetryDirective::After(Duration::from_secs(5)), "later".to_owned())
        );
        assert_eq!(handler_verdict(HandlerError::permanent("bad")), (RetryDirective::DeadLetter, "bad".to_owned()));
    }

    #[test]
    fn the_heartbeat_runs_at_a_third_of_the_remaining_lease() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(heartbeat_interval(None, now + Duration::from_secs(30), now), Duration::from_secs(10));
        assert_eq!(heartbeat_interval(None, now + Duration::from_millis(3), now), Duration::from_millis(1));
        assert_eq!(heartbeat_interval(None, now - Duration::from_secs(1), now), Duration::from_millis(1));
        assert_eq!(heartbeat_interval(Some(Duration::from_secs(7)), now, now), Duration::from_secs(7));
        assert_eq!(heartbeat_interval(Some(Duration::ZERO), now, now), Duration::from_millis(1));
    }

    #[test]
    fn the_batch_size_is_capped_by_free_capacity() {
        assert_eq!(reserve_batch(None, 15), 16);
        assert_eq!(reserve_batch(None, 0), 1);
        assert_eq!(reserve_batch(Some(4), 15), 4);
        assert_eq!(reserve_batch(Some(40), 3), 4);
        assert_eq!(reserve_batch(None, usize::MAX), u32::MAX);
    }

    #[test]
    fn an_empty_reserve_is_early_under_100_ms_or_half_the_wait() {
        let ms = Duration::from_millis;
        assert!(is_early_empty(ms(5), Duration::from_secs(30)));
        assert!(!is_early_empty(ms(100), Duration::from_secs(30)));
        assert!(is_early_empty(ms(20), ms(60)));
        assert!(!is_early_empty(ms(30), ms(60)));
        assert!(!is_early_empty(ms(0), Duration::ZERO));
    }
}
