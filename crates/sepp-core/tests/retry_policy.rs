//! The nack retry policy (docs/protocol.md#retry-policy): base, backoff, caps and deterministic jitter.

mod common;

use std::collections::HashSet;

use common::job_id;
use sepp_core::retry::retry_delay_ms;
use sepp_core::{QueueLimits, RetryBackoff};

fn limits(retry_delay_ms: u64, retry_backoff: RetryBackoff) -> QueueLimits {
    QueueLimits { retry_delay_ms, retry_backoff, ..QueueLimits::default() }
}

/// The jitter window of docs/protocol.md#retry-policy: up to a quarter of the capped delay is subtracted.
fn assert_jittered(delay_ms: u64, capped_ms: u64) {
    assert!(
        delay_ms <= capped_ms && delay_ms >= capped_ms - capped_ms / 4,
        "{delay_ms} is outside [{}, {capped_ms}]",
        capped_ms - capped_ms / 4
    );
}

#[test]
fn a_zero_base_delay_retries_immediately_under_either_backoff() {
    for backoff in [RetryBackoff::None, RetryBackoff::Exponential] {
        for attempt in [1, 2, 10, 64, u32::MAX] {
            assert_eq!(retry_delay_ms(&limits(0, backoff), &job_id(1), attempt), 0);
        }
    }
}

#[test]
fn without_backoff_every_retry_waits_about_the_base_delay() {
    let policy = limits(10_000, RetryBackoff::None);
    for attempt in 1..=20 {
        assert_jittered(retry_delay_ms(&policy, &job_id(3), attempt), 10_000);
    }
}

#[test]
fn exponential_backoff_doubles_the_delay_with_each_attempt() {
    let policy = limits(1_000, RetryBackoff::Exponential);
    for attempt in 1..=10u32 {
        let grown_ms = 1_000u64 << (attempt - 1);
        for n in 0..20 {
            assert_jittered(retry_delay_ms(&policy, &job_id(n), attempt), grown_ms);
        }
    }
}

#[test]
fn exponential_backoff_grows_strictly_while_under_the_cap() {
    // With up to 25 % jitter, 2x growth still outruns the previous attempt's maximum.
    let policy = limits(400, RetryBackoff::Exponential);
    let delays: Vec<u64> = (1..=8).map(|attempt| retry_delay_ms(&policy, &job_id(9), attempt)).collect();
    assert!(delays.windows(2).all(|pair| pair[0] < pair[1]), "{delays:?}");
}

#[test]
fn the_grown_delay_is_capped_by_retry_delay_max() {
    let policy = QueueLimits { retry_delay_max_ms: 5_000, ..limits(1_000, RetryBackoff::Exponential) };
    // 1000, 2000, 4000, then 8000 -> 5000 and stays there.
    for attempt in 4..=40 {
        assert_jittered(retry_delay_ms(&policy, &job_id(4), attempt), 5_000);
    }
}

#[test]
fn the_grown_delay_is_capped_by_the_schedule_horizon() {
    let policy = QueueLimits {
        max_schedule_horizon_ms: 3_000,
        retry_delay_max_ms: 1_000_000,
        ..limits(1_000, RetryBackoff::Exponential)
    };
    assert_jittered(retry_delay_ms(&policy, &job_id(5), 1), 1_000);
    for attempt in 3..=10 {
        assert_jittered(retry_delay_ms(&policy, &job_id(5), attempt), 3_000);
    }
    let flat = QueueLimits { max_schedule_horizon_ms: 700, ..limits(10_000, RetryBackoff::None) };
    assert_jittered(retry_delay_ms(&flat, &job_id(5), 1), 700);
}

#[test]
fn huge_attempt_numbers_saturate_instead_of_overflowing() {
    let policy = QueueLimits {
        retry_delay_max_ms: u64::MAX,
        max_schedule_horizon_ms: u64::MAX,
        ..limits(u64::MAX / 2, RetryBackoff::Exponential)
    };
    for attempt in [2, 63, 64, 65, 1_000, u32::MAX] {
        assert_jittered(retry_delay_ms(&policy, &job_id(6), attempt), u64::MAX);
    }
    let capped = limits(1, RetryBackoff::Exponential);
    assert_jittered(retry_delay_ms(&capped, &job_id(6), u32::MAX), 3_600_000);
}

#[test]
fn delays_too_small_to_jitter_are_exact() {
    // capped / 4 == 0 leaves no room to subtract anything.
    for base_ms in 1..=3 {
        for n in 0..50 {
            assert_eq!(retry_delay_ms(&limits(base_ms, RetryBackoff::None), &job_id(n), 1), base_ms);
        }
    }
}

#[test]
fn jitter_stays_within_a_quarter_of_the_capped_delay_across_many_jobs() {
    let policy = limits(1_000, RetryBackoff::None);
    for n in 0..2_000 {
        assert_jittered(retry_delay_ms(&policy, &job_id(n), 1 + n % 7), 1_000);
    }
}

#[test]
fn the_delay_is_the_same_for_the_same_job_and_attempt() {
    let policy = limits(60_000, RetryBackoff::Exponential);
    for n in 0..100 {
        for attempt in 1..5 {
            assert_eq!(
                retry_delay_ms(&policy, &job_id(n), attempt),
                retry_delay_ms(&policy.clone(), &job_id(n), attempt)
            );
        }
    }
}

#[test]
fn the_delay_varies_across_jobs() {
    let policy = limits(60_000, RetryBackoff::None);
    let distinct: HashSet<u64> = (0..100).map(|n| retry_delay_ms(&policy, &job_id(n), 1)).collect();
    assert!(distinct.len() >= 50, "only {} distinct delays over 100 jobs", distinct.len());
    // The jitter uses the whole window, not just a corner of it.
    let (low, high) = (distinct.iter().min().unwrap(), distinct.iter().max().unwrap());
    assert!(*low < 50_000 && *high > 55_000, "delays span only [{low}, {high}]");
}

#[test]
fn the_delay_varies_across_attempts_of_one_job() {
    let policy = limits(60_000, RetryBackoff::None);
    let distinct: HashSet<u64> = (1..=20).map(|attempt| retry_delay_ms(&policy, &job_id(8), attempt)).collect();
    assert!(distinct.len() >= 10, "only {} distinct delays over 20 attempts", distinct.len());
}
