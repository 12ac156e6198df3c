//! A queue's rate limit (`rate_limit` leases per `rate_period_ms`, `rate_burst` at once): leases
//! are granted at the rate and never faster in any window, the committer is told when the next
//! token comes so parked reserves are served then, and the bucket survives replay and
//! checkpoints (every harness checks both when dropped), so a restart does not refill it.

mod common;

use std::sync::Arc;

use common::{Harness, Rng, declare, job, policy_with};
use sepp_core::{Policy, RateLimit};

const T0: i64 = 5_000_000;

fn limited(limit: u32, period_ms: u64, burst: u32) -> Policy {
    policy_with(|policy| declare(policy, "q", |limits| limits.rate_limit = Some(RateLimit { limit, period_ms, burst })))
}

#[test]
fn a_burst_goes_at_once_then_leases_come_at_the_rate() {
    let mut harness = Harness::with_policy(limited(2, 1_000, 2));
    harness.add_all(T0, (0..10).map(|_| job("q")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 5).len(), 2, "the burst");
    assert_eq!(harness.state.room_rate("q", T0 + 499), 0);
    assert!(harness.reserve_ids(T0 + 499, &["q"], 5).is_empty(), "no token yet");
    assert_eq!(harness.reserve_ids(T0 + 500, &["q"], 5).len(), 1, "one token every 500 ms");
    assert_eq!(harness.reserve_ids(T0 + 1_000, &["q"], 5).len(), 1);
    assert_eq!(harness.reserve_ids(T0 + 5_000, &["q"], 5).len(), 2, "a quiet spell refills up to the burst only");
}

#[test]
fn other_queues_of_the_same_reserve_are_not_held_back() {
    let mut harness = Harness::with_policy(limited(1, 60_000, 1));
    harness.add_all(T0, (0..3).map(|_| job("q")).collect());
    let free = harness.add_all(T0, (0..3).map(|_| job("free")).collect());
    let taken = harness.reserve_ids(T0, &["q", "free"], 10);
    assert_eq!(taken.len(), 4, "one from the limited queue, then all of the other");
    assert_eq!(&taken[1..], free.as_slice());
}

#[test]
fn a_starved_reserve_tells_the_committer_when_the_next_token_comes() {
    let mut harness = Harness::with_policy(limited(1, 1_000, 1));
    harness.add_all(T0, (0..3).map(|_| job("q")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 1).len(), 1);
    assert!(harness.reserve_ids(T0 + 10, &["q"], 1).is_empty());
    assert!(!harness.state.has_ready_at("q", T0 + 10), "parked reserves are not offered the queue");
    assert_eq!(harness.state.next_deadline_ms(), Some(T0 + 1_000), "the committer wakes for the token");
    let generation = harness.state.ready_generation();
    harness.sweep(T0 + 1_000);
    assert!(harness.state.ready_generation() > generation, "parked reserves get another look");
    assert!(harness.state.has_ready_at("q", T0 + 1_000));
    assert_eq!(harness.reserve_ids(T0 + 1_000, &["q"], 1).len(), 1);
}

#[test]
fn a_restart_does_not_refill_the_bucket() {
    let mut harness = Harness::with_policy(limited(1, 60_000, 1));
    harness.add_all(T0, (0..2).map(|_| job("q")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 1).len(), 1);
    let mut replayed = harness.replayed();
    replayed.set_policy(Arc::new(limited(1, 60_000, 1)));
    assert_eq!(replayed.room_rate("q", T0 + 1), 0, "replay keeps the spent token spent");
    let mut restored = sepp_core::State::new(Arc::new(limited(1, 60_000, 1)), harness.state.rules());
    for record in harness.state.snapshot().records() {
        restored.apply(&record);
    }
    assert_eq!(restored.room_rate("q", T0 + 1), 0, "so does a checkpoint");
    assert_eq!(restored.room_rate("q", T0 + 60_000), 1);
}

#[test]
fn a_changed_limit_applies_at_once() {
    let mut harness = Harness::with_policy(limited(1, 60_000, 1));
    harness.add_all(T0, (0..5).map(|_| job("q")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 5).len(), 1);
    harness.state.set_policy(Arc::new(Policy::default()));
    assert_eq!(harness.reserve_ids(T0 + 1, &["q"], 5).len(), 4, "no limit any more");
}

#[test]
fn no_window_ever_sees_more_than_the_burst_plus_the_rate() {
    for seed in 1..=30u64 {
        let mut rng = Rng::seeded(seed);
        let (limit, period_ms, burst) = (1 + rng.below(5) as u32, 100 + rng.below(2_000), 1 + rng.below(6) as u32);
        let mut harness = Harness::with_policy(limited(limit, period_ms, burst));
        let mut now_ms = T0;
        let mut leased_at = Vec::new();
        for _ in 0..300 {
            match rng.below(4) {
                0 => {
                    harness.add_all(now_ms, (0..1 + rng.below(5)).map(|_| job("q")).collect());
                }
                1 | 2 => {
                    for delivery in harness.reserve(now_ms, &["q"], 1 + rng.below(8) as u32, 60_000) {
                        leased_at.push(now_ms);
                        harness.ack(delivery.job.id, delivery.attempt).unwrap();
                    }
                }
                _ => {
                    now_ms += rng.below(period_ms) as i64;
                    harness.sweep(now_ms);
                }
            }
        }
        let interval_us = RateLimit { limit, period_ms, burst }.interval_us();
        for (i, start) in leased_at.iter().enumerate() {
            for (j, end) in leased_at.iter().enumerate().skip(i) {
                let span_us = (end - start) * 1000;
                let allowed = u64::from(burst) + (span_us / interval_us) as u64;
                let leases = (j - i + 1) as u64;
                assert!(
                    leases <= allowed,
                    "seed {seed}: {leases} leases within {} ms (limit {limit}/{period_ms} ms, burst {burst})",
                    end - start
                );
            }
        }
    }
}
