//! Per-key limits (`limit_key` with `key_max_in_flight`, `key_rate_limit` and per-value
//! overrides): each value of the key is held to its own limits, a full key never holds back the
//! jobs of other keys behind it, freed slots and new tokens are offered again, the buckets
//! survive replay and checkpoints (every harness checks both when dropped), and no interleaving
//! of operations and limit changes ever exceeds a limit.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Harness, JobBuilder, Rng, declare, job, policy_with};
use sepp_core::validate::NackStrategy;
use sepp_core::{JobId, KeyLimit, KeyLimits, Policy, Primitive, RateLimit};

const T0: i64 = 7_000_000;

fn keyed(default: KeyLimits, overrides: &[(&str, KeyLimits)]) -> Policy {
    let limit = KeyLimit {
        field: "tenant".into(),
        default,
        overrides: overrides.iter().map(|(value, limits)| ((*value).to_string(), *limits)).collect(),
    };
    policy_with(|policy| declare(policy, "q", |limits| limits.key_limit = Some(Arc::new(limit))))
}

fn in_flight(limit: u32) -> KeyLimits {
    KeyLimits { max_in_flight: Some(limit), rate: None }
}

fn rate(limit: u32, period_ms: u64, burst: u32) -> KeyLimits {
    KeyLimits { max_in_flight: None, rate: Some(RateLimit { limit, period_ms, burst }) }
}

fn of(tenant: &str) -> sepp_core::NewJob {
    job("q").custom("tenant", Primitive::String(tenant.into()))
}

#[test]
fn each_key_leases_up_to_its_limit_and_a_freed_slot_is_offered_again() {
    let mut harness = Harness::with_policy(keyed(in_flight(1), &[]));
    let a = harness.add_all(T0, (0..3).map(|_| of("a")).collect());
    let b = harness.add_all(T0, (0..2).map(|_| of("b")).collect());
    let free = harness.add(T0, job("q"));
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [a[0], b[0], free], "one per key; a job without the key is free");
    assert!(harness.reserve_ids(T0, &["q"], 10).is_empty());
    assert!(!harness.state.has_ready("q"), "every key is full: parked reserves are not offered the queue");
    assert_eq!(harness.state.held_by_key_limit("q"), 3, "a's two and b's one wait on their key");

    let generation = harness.state.ready_generation();
    harness.ack(a[0], 1).unwrap();
    assert!(harness.state.ready_generation() > generation, "the ack wakes parked reserves");
    assert!(harness.state.has_ready("q"));
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [a[1]], "only a has room again");

    // A retried nack and an expired lease free their slots too.
    harness.nack(T0, b[0], 1, NackStrategy::Default, None).unwrap();
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [b[0]], "the retried job keeps its place");
    harness.sweep(T0 + 600_000);
    assert_eq!(
        harness.reserve_ids(T0 + 600_000, &["q"], 10).len(),
        3,
        "the expired leases freed a, b and the free job"
    );
}

#[test]
fn a_key_with_a_long_backlog_does_not_hold_back_the_jobs_behind_it() {
    let mut harness = Harness::with_policy(keyed(in_flight(2), &[]));
    let busy = harness.add_all(T0, (0..1_000).map(|_| of("busy")).collect());
    let quiet = harness.add_all(T0, (0..3).map(|n| of(&format!("quiet-{n}"))).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 2), busy[..2]);
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), quiet, "the 998 waiting behind busy's limit are passed over");
    assert_eq!(harness.state.held_by_key_limit("q"), 998);
}

#[test]
fn the_queue_order_holds_across_keys_and_the_queue_limit_still_applies() {
    let policy = {
        let mut policy = keyed(in_flight(5), &[]);
        policy.declared.get_mut("q").unwrap().max_in_flight = Some(3);
        policy
    };
    let mut harness = Harness::with_policy(policy);
    let low = harness.add(T0, of("a"));
    let high = harness.add(T0, of("b").priority(9));
    let next = harness.add(T0, of("a"));
    let last = harness.add(T0, of("c"));
    assert_eq!(
        harness.reserve_ids(T0, &["q"], 10),
        [high, low, next],
        "priority first, then acceptance; queue limit 3"
    );
    harness.ack(low, 1).unwrap();
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [last]);
}

#[test]
fn an_override_replaces_the_default_for_its_value_only() {
    let mut harness = Harness::with_policy(keyed(in_flight(1), &[("big", in_flight(3))]));
    let big = harness.add_all(T0, (0..5).map(|_| of("big")).collect());
    let small = harness.add_all(T0, (0..5).map(|_| of("small")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 20), [big[0], big[1], big[2], small[0]]);
}

#[test]
fn numbers_and_booleans_are_keys_by_their_text() {
    let mut harness = Harness::with_policy(keyed(in_flight(1), &[("42", in_flight(2))]));
    let answers = harness.add_all(T0, (0..3).map(|_| job("q").custom("tenant", Primitive::Int(42))).collect());
    let flags = harness.add_all(T0, (0..2).map(|_| job("q").custom("tenant", Primitive::Bool(true))).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [answers[0], answers[1], flags[0]]);
}

#[test]
fn each_key_has_its_own_bucket_and_a_starved_reserve_learns_when_the_next_token_comes() {
    let mut harness = Harness::with_policy(keyed(rate(1, 1_000, 1), &[("fast", rate(3, 1_000, 3))]));
    let a = harness.add_all(T0, (0..3).map(|_| of("a")).collect());
    let fast = harness.add_all(T0, (0..5).map(|_| of("fast")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [a[0], fast[0], fast[1], fast[2]]);
    assert!(harness.reserve_ids(T0 + 10, &["q"], 10).is_empty(), "no key has a token");
    assert!(!harness.state.has_ready_at("q", T0 + 10), "parked reserves are not offered the queue");
    assert_eq!(harness.state.next_deadline_ms(), Some(T0 + 334), "fast's next token, the first to come");
    let generation = harness.state.ready_generation();
    harness.sweep(T0 + 334);
    assert!(harness.state.ready_generation() > generation, "the token wakes parked reserves");
    assert_eq!(harness.reserve_ids(T0 + 334, &["q"], 10), [fast[3]]);
    assert_eq!(harness.reserve_ids(T0 + 1_000, &["q"], 10), [a[1], fast[4]]);
}

#[test]
fn a_restart_does_not_refill_a_keys_bucket() {
    let mut harness = Harness::with_policy(keyed(rate(1, 60_000, 1), &[]));
    harness.add_all(T0, (0..2).map(|_| of("a")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 5).len(), 1);
    let plan = sepp_core::validate::ReservePlan { queues: vec!["q".into()], max_jobs: 5, lease_ms: 30_000, wait_ms: 0 };
    let mut replayed = harness.replayed();
    assert!(replayed.reserve(T0 + 1_000, &plan, &mut Vec::new()).is_empty(), "replay keeps the spent token spent");
    let mut restored = sepp_core::State::new(harness.state.policy().clone(), harness.state.rules());
    for record in harness.state.snapshot().records() {
        restored.apply(&record);
    }
    assert!(restored.reserve(T0 + 1_000, &plan, &mut Vec::new()).is_empty(), "so does a checkpoint");
    assert_eq!(restored.reserve(T0 + 60_000, &plan, &mut Vec::new()).len(), 1);
}

#[test]
fn a_key_idle_for_the_grace_period_is_forgotten_and_its_bucket_is_full_again() {
    use sepp_core::KEY_BUCKET_GRACE_MS;
    let mut harness = Harness::with_policy(keyed(rate(1, 1_000, 2), &[]));
    let a = harness.add_all(T0, (0..4).map(|_| of("a")).collect());
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), a[..2], "the burst of two");
    for id in &a[..2] {
        harness.ack(*id, 1).unwrap();
    }
    harness.sweep(T0 + 2_000); // past the wake-up for the next token
    // The bucket is full again at T0 + 2 s; the committer is woken to drop it a grace period later.
    let forget_at = T0 + 2_000 + 1 + KEY_BUCKET_GRACE_MS;
    assert_eq!(harness.state.next_deadline_ms(), Some(forget_at));
    assert_eq!(harness.sweep(forget_at - 1).key_buckets_forgotten, 0, "not yet");
    let from = harness.records.len();
    assert_eq!(harness.sweep(forget_at).key_buckets_forgotten, 1);
    assert!(matches!(harness.records_since(from), [.., sepp_core::Record::KeyRateForgotten { .. }]));
    // Forgetting changed nothing a reserve decides: a full bucket, the burst again.
    assert_eq!(harness.reserve_ids(forget_at, &["q"], 10).len(), 2);
}

#[test]
fn a_changed_key_limit_applies_at_once_to_the_jobs_already_there() {
    let mut harness = Harness::with_policy(Policy::default());
    let a = harness.add_all(T0, (0..4).map(|_| of("a")).collect());
    let b = harness.add(T0, of("b"));
    assert_eq!(harness.reserve_ids(T0, &["q"], 2), a[..2], "no limit yet");
    harness.state.set_policy(Arc::new(keyed(in_flight(2), &[])));
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [b], "a's two leases count against the new limit");
    let generation = harness.state.ready_generation();
    harness.state.set_policy(Arc::new(keyed(in_flight(3), &[])));
    assert!(harness.state.ready_generation() > generation, "a raised limit wakes parked reserves");
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [a[2]]);
    harness.state.set_policy(Arc::new(Policy::default()));
    assert_eq!(harness.reserve_ids(T0, &["q"], 10), [a[3]], "no limit again");
    harness.state.check_invariants().unwrap();
}

/// The limits a test policy gives `tenant`.
fn limits_of(policy: &Policy, tenant: &str) -> KeyLimits {
    policy.queue("q").key_limit.as_ref().map_or_else(KeyLimits::default, |key| key.of(tenant))
}

#[test]
fn no_interleaving_of_operations_and_limit_changes_exceeds_a_key_limit_or_starves_a_key() {
    let tenants = ["a", "b", "c", "d"];
    for seed in 1..=40u64 {
        let mut rng = Rng::seeded(seed);
        let random_policy = |rng: &mut Rng| {
            let default = KeyLimits {
                max_in_flight: Some(1 + rng.below(3) as u32),
                rate: (rng.below(2) == 0).then(|| RateLimit {
                    limit: 1 + rng.below(3) as u32,
                    period_ms: 1_000,
                    burst: 1 + rng.below(3) as u32,
                }),
            };
            keyed(default, &[("a", in_flight(1 + rng.below(4) as u32))])
        };
        let mut policy = random_policy(&mut rng);
        let mut harness = Harness::with_policy(policy.clone());
        let mut now_ms = T0;
        let mut held: Vec<(JobId, u32)> = Vec::new();
        let mut added: Vec<JobId> = Vec::new();
        for step in 0..500 {
            match rng.below(12) {
                0..=2 => {
                    let tenant = tenants[rng.below(4) as usize];
                    let new = if rng.below(8) == 0 { job("q") } else { of(tenant) };
                    added.push(harness.add(now_ms, new.priority(rng.below(3) as u32)));
                }
                3..=4 => {
                    let before = count_by_tenant(&harness, &added, true);
                    let max = 1 + rng.below(6) as u32;
                    let leased = harness.reserve(now_ms, &["q"], max, 1_000 + rng.below(5_000) as i64);
                    let after = count_by_tenant(&harness, &added, true);
                    for (tenant, count) in &after {
                        let limit = limits_of(&policy, tenant).max_in_flight.map_or(usize::MAX, |limit| limit as usize);
                        let was = before.get(tenant).copied().unwrap_or(0);
                        // Lowering a limit revokes no lease: a key can sit above it, and then
                        // leases nothing more.
                        assert!(*count <= limit.max(was), "seed {seed} step {step}: {tenant} has {count} > {limit}");
                        if was >= limit {
                            assert_eq!(*count, was, "seed {seed} step {step}: {tenant} leased above its limit");
                        }
                    }
                    held.extend(leased.iter().map(|delivery| (delivery.job.id, delivery.attempt)));
                    if leased.len() < max as usize {
                        // The reserve stopped short: no key with room in flight (and no rate
                        // to wait for) has a ready job left behind. No key starves another.
                        for (tenant, ready) in count_by_tenant(&harness, &added, false) {
                            let limits = limits_of(&policy, &tenant);
                            let in_flight = after.get(&tenant).copied().unwrap_or(0);
                            let room = limits.max_in_flight.is_none_or(|limit| in_flight < limit as usize);
                            assert!(
                                ready == 0 || !room || limits.rate.is_some(),
                                "seed {seed} step {step}: {tenant} had room and {ready} ready jobs left behind"
                            );
                        }
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
                    now_ms += rng.below(1_500) as i64;
                    harness.sweep(now_ms);
                }
                8 => {
                    policy = random_policy(&mut rng);
                    harness.state.set_policy(Arc::new(policy.clone()));
                }
                9 if !added.is_empty() => {
                    let job_id = added[rng.below(added.len() as u64) as usize];
                    let _ = harness.state.cancel(now_ms, job_id, None, &mut harness.records);
                }
                _ => {}
            }
            if step % 50 == 0 {
                harness.state.check_invariants().unwrap_or_else(|problem| panic!("seed {seed} step {step}: {problem}"));
            }
        }
    }
}

/// Jobs among `ids` per tenant that are in flight (or ready, without `in_flight`).
fn count_by_tenant(harness: &Harness, ids: &[JobId], in_flight: bool) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for id in ids {
        let Some((job, state)) = harness.state.find_job(id) else { continue };
        let counted = match state {
            sepp_core::JobState::Inflight { .. } => in_flight,
            sepp_core::JobState::Ready { .. } => !in_flight,
            sepp_core::JobState::Scheduled { .. } => false,
        };
        if counted && let Some(Primitive::String(tenant)) = job.custom.get("tenant") {
            *counts.entry(tenant.clone()).or_default() += 1;
        }
    }
    counts
}

#[test]
fn no_window_ever_sees_more_than_a_keys_burst_plus_its_rate() {
    let tenants = ["a", "b", "c"];
    for seed in 1..=30u64 {
        let mut rng = Rng::seeded(seed);
        let (limit, period_ms, burst) = (1 + rng.below(4) as u32, 100 + rng.below(2_000), 1 + rng.below(5) as u32);
        let mut harness = Harness::with_policy(keyed(rate(limit, period_ms, burst), &[]));
        let mut now_ms = T0;
        let mut leased_at: HashMap<String, Vec<i64>> = HashMap::new();
        for _ in 0..300 {
            match rng.below(4) {
                0 => {
                    let tenant = tenants[rng.below(3) as usize];
                    harness.add_all(now_ms, (0..1 + rng.below(5)).map(|_| of(tenant)).collect());
                }
                1 | 2 => {
                    for delivery in harness.reserve(now_ms, &["q"], 1 + rng.below(8) as u32, 60_000) {
                        let Some(Primitive::String(tenant)) = delivery.job.custom.get("tenant") else { panic!() };
                        leased_at.entry(tenant.clone()).or_default().push(now_ms);
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
        for (tenant, times) in &leased_at {
            for (i, start) in times.iter().enumerate() {
                for (j, end) in times.iter().enumerate().skip(i) {
                    let allowed = u64::from(burst) + ((end - start) * 1000 / interval_us) as u64;
                    let leases = (j - i + 1) as u64;
                    assert!(leases <= allowed, "seed {seed}: {tenant} leased {leases} within {} ms", end - start);
                }
            }
        }
    }
}
