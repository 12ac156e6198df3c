//! A queue's in-flight limit (`max_in_flight`): reserves lease no more than it allows across all
//! callers, other queues of the same reserve are not held back, freed slots are offered again,
//! and no interleaving of operations ever exceeds it.

mod common;

use std::sync::Arc;

use common::{Harness, Rng, declare, job, policy_with};
use sepp_core::Policy;
use sepp_core::validate::NackStrategy;

const NOW_MS: i64 = 9_000_000;

fn limited(limit: u32) -> Policy {
    policy_with(|policy| declare(policy, "q", |limits| limits.max_in_flight = Some(limit)))
}

#[test]
fn reserves_lease_up_to_the_limit_and_a_freed_slot_is_offered_again() {
    let mut harness = Harness::with_policy(limited(2));
    let ids = harness.add_all(NOW_MS, (0..5).map(|_| job("q")).collect());
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), ids[..2], "two of five, in order");
    assert!(harness.reserve_ids(NOW_MS, &["q"], 5).is_empty(), "a second caller gets none either");
    assert!(!harness.state.has_ready("q"), "at the limit, parked reserves are not offered the queue");
    assert_eq!(harness.state.room_in_flight("q"), 0);

    let generation = harness.state.ready_generation();
    harness.ack(ids[0], 1).unwrap();
    assert!(harness.state.ready_generation() > generation, "parked reserves get another look");
    assert!(harness.state.has_ready("q"));
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), [ids[2]]);

    // A nack that retries and an expired lease free their slots too.
    harness.nack(NOW_MS, ids[1], 1, NackStrategy::Default, None).unwrap();
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), [ids[1]], "the retried job keeps its place");
    harness.sweep(NOW_MS + 60_000);
    assert_eq!(harness.state.room_in_flight("q"), 2, "both leases expired");
}

#[test]
fn other_queues_of_the_same_reserve_are_not_held_back() {
    let mut harness = Harness::with_policy(limited(1));
    let q = harness.add_all(NOW_MS, (0..3).map(|_| job("q")).collect());
    let other = harness.add_all(NOW_MS, (0..3).map(|_| job("other")).collect());
    let got = harness.reserve_ids(NOW_MS, &["q", "other"], 10);
    assert_eq!(got, [q[0], other[0], other[1], other[2]]);
    assert_eq!(harness.state.room_in_flight("other"), usize::MAX, "no limit, no cap");
}

#[test]
fn lowering_the_limit_keeps_leases_held_and_leases_no_more_until_below_it() {
    let mut harness = Harness::with_policy(limited(3));
    let ids = harness.add_all(NOW_MS, (0..5).map(|_| job("q")).collect());
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 3).len(), 3);
    harness.state.set_policy(Arc::new(limited(1)));
    harness.ack(ids[0], 1).unwrap();
    assert!(harness.reserve_ids(NOW_MS, &["q"], 5).is_empty(), "two in flight, limit one");
    harness.ack(ids[1], 1).unwrap();
    harness.ack(ids[2], 1).unwrap();
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), [ids[3]]);
    let generation = harness.state.ready_generation();
    harness.state.set_policy(Arc::new(limited(5)));
    assert!(harness.state.ready_generation() > generation, "a raised limit wakes parked reserves");
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), [ids[4]]);
}

#[test]
fn no_interleaving_of_enqueue_reserve_ack_nack_expiry_cancel_and_limit_changes_exceeds_the_limit() {
    for seed in 1..=40u64 {
        let mut rng = Rng::seeded(seed);
        let mut limit = 1 + rng.below(4) as u32;
        let mut harness = Harness::with_policy(limited(limit));
        let mut now_ms = NOW_MS;
        let mut held: Vec<(sepp_core::JobId, u32)> = Vec::new();
        let mut added = Vec::new();
        for step in 0..400 {
            match rng.below(11) {
                0..=2 => {
                    added.push(harness.add(now_ms, job("q")));
                }
                3..=4 => {
                    let max = 1 + rng.below(6) as u32;
                    let lease_ms = 1_000 + rng.below(5_000) as i64;
                    let before = harness.state.depths("q").inflight;
                    let leased = harness.reserve(now_ms, &["q"], max, lease_ms);
                    let after = before + leased.len() as u64;
                    // Lowering the limit revokes no lease, so a queue can sit above it; then a
                    // reserve takes nothing. Otherwise it never takes the queue past the limit.
                    let allowed = u64::from(limit).max(before);
                    assert!(after <= allowed, "seed {seed} step {step}: {before} + {} > limit {limit}", leased.len());
                    if before >= u64::from(limit) {
                        assert!(leased.is_empty(), "seed {seed} step {step}: leased above the limit");
                    }
                    let ready = harness.state.depths("q").ready;
                    assert!(
                        leased.len() as u64
                            == u64::from(max)
                                .min(u64::from(limit).saturating_sub(before))
                                .min(ready + leased.len() as u64),
                        "seed {seed} step {step}: a reserve left a free slot and a ready job unused"
                    );
                    for delivery in leased {
                        held.push((delivery.job.id, delivery.attempt));
                    }
                }
                5 if !held.is_empty() => {
                    let (job_id, attempt) = held.swap_remove(rng.below(held.len() as u64) as usize);
                    let _ = harness.ack(job_id, attempt);
                }
                6 if !held.is_empty() => {
                    let (job_id, attempt) = held.swap_remove(rng.below(held.len() as u64) as usize);
                    let _ = harness.nack(now_ms, job_id, attempt, NackStrategy::Default, None);
                }
                7 => {
                    now_ms += rng.below(3_000) as i64;
                    harness.sweep(now_ms);
                }
                8 => {
                    limit = 1 + rng.below(4) as u32;
                    harness.state.set_policy(Arc::new(limited(limit)));
                }
                // A cancel: of a held job (it keeps its slot until its worker settles it or the
                // lease ends), or of any job enqueued so far, whatever it is doing by now.
                9 if !held.is_empty() && rng.below(2) == 0 => {
                    let (job_id, _) = held[rng.below(held.len() as u64) as usize];
                    let _ = harness.state.cancel(now_ms, job_id, None, &mut harness.records);
                }
                9 if !added.is_empty() => {
                    let job_id = added[rng.below(added.len() as u64) as usize];
                    let _ = harness.state.cancel(now_ms, job_id, None, &mut harness.records);
                }
                _ => {}
            }
        }
    }
}
