//! Replay: the records an operation returns, applied in order to a fresh state, rebuild exactly
//! the state the operations produced, whatever configuration the replaying state has.

mod common;

use std::sync::Arc;

use common::{Harness, JobBuilder, declare, job, policy_with, retention};
use sepp_core::validate::NackStrategy;
use sepp_core::{Policy, Primitive, Record, RetryBackoff, State, StorageRules, TimeMs};

const NOW_MS: TimeMs = 2_000_000;

/// A run that produces every kind of record.
fn busy_harness() -> Harness {
    let policy = policy_with(|policy| {
        policy.defaults.dedup_window_ms = 1_000;
        declare(policy, "retry", |limits| {
            limits.retry_delay_ms = 100;
            limits.retry_backoff = RetryBackoff::Exponential;
        });
    });
    let mut harness = Harness::new(policy, retention(5_000));
    let ids = harness.add_all(
        NOW_MS,
        vec![
            job("a").priority(3).key("k1").custom("n", Primitive::Double(1.5)),
            job("a").payload(b"data", "raw"),
            job("retry").max_attempts(5),
            job("b").scheduled_at(NOW_MS + 50),
            job("b").max_attempts(1),
        ],
    );
    harness.enqueue_atomic(NOW_MS, vec![job("a").key("k1"), job("c").key("k2")]).unwrap();

    harness.reserve(NOW_MS, &["a", "retry", "b"], 10, 500);
    harness.ack(ids[0], 1).unwrap();
    harness.extend(NOW_MS + 10, ids[1], 1, 2_000).unwrap();
    harness.nack(NOW_MS + 10, ids[2], 1, NackStrategy::Default, Some("later")).unwrap();
    harness.sweep(NOW_MS + 500); // b's lease expires on its only attempt; the retry is promoted.
    harness.reserve(NOW_MS + 500, &["retry"], 1, 100);
    harness.nack(NOW_MS + 510, ids[2], 2, NackStrategy::DeadLetter, Some("gave up")).unwrap();
    harness.sweep(NOW_MS + 1_000); // keys expire
    harness.drain(Some("retry"), 1);
    harness
}

#[test]
fn a_run_produces_every_kind_of_record() {
    let harness = busy_harness();
    let mut kinds: Vec<&str> = harness
        .records
        .iter()
        .map(|record| match record {
            Record::JobAccepted { .. } => "accepted",
            Record::DedupBound { .. } => "dedup-bound",
            Record::Leased { .. } => "leased",
            Record::LeaseExtended { .. } => "extended",
            Record::Acked { .. } => "acked",
            Record::Retried { .. } => "retried",
            Record::Promoted { .. } => "promoted",
            Record::DeadLettered { .. } => "dead-lettered",
            Record::DeadLetterRemoved { .. } => "dead-letter-removed",
            Record::DedupExpired { .. } => "dedup-expired",
            _ => "other",
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    let expected = [
        "accepted",
        "acked",
        "dead-letter-removed",
        "dead-lettered",
        "dedup-bound",
        "dedup-expired",
        "extended",
        "leased",
        "promoted",
        "retried",
    ];
    assert_eq!(kinds, expected);
}

#[test]
fn replaying_every_record_into_a_fresh_state_rebuilds_the_same_state() {
    let harness = busy_harness();
    let replayed = harness.replayed();
    assert_eq!(replayed.fingerprint(), harness.state.fingerprint());
    assert_eq!(replayed.check_invariants(), Ok(()));
    for queue in ["a", "b", "c", "retry"] {
        assert_eq!(replayed.depths(queue), harness.state.depths(queue), "{queue}");
    }
    assert_eq!(replayed.total_depths(), harness.state.total_depths());
    assert_eq!(replayed.next_deadline_ms(), harness.state.next_deadline_ms());
}

#[test]
fn every_prefix_of_the_records_replays_to_the_state_at_that_point() {
    let policy = Arc::new(Policy::default());
    let rules = retention(10_000);
    let mut live = State::new(policy.clone(), rules);
    let mut replayed = State::new(policy, rules);
    let mut records = Vec::new();
    let mut applied = 0;
    let mut check = |live: &State, records: &[Record]| {
        for record in &records[applied..] {
            replayed.apply(record);
        }
        applied = records.len();
        assert_eq!(replayed.fingerprint(), live.fingerprint(), "after {applied} records");
    };

    let ids: Vec<_> = (1..=3).map(common::job_id).collect();
    live.enqueue(NOW_MS, ids.iter().map(|id| (*id, job("q").max_attempts(2))).collect(), &mut records);
    check(&live, &records);
    let plan = sepp_core::validate::ReservePlan { queues: vec!["q".into()], wait_ms: 0, lease_ms: 100, max_jobs: 3 };
    live.reserve(NOW_MS, &plan, &mut records);
    check(&live, &records);
    live.nack(NOW_MS, ids[0], 1, NackStrategy::Delay { delay_ms: 10 }, None, &mut records).unwrap();
    check(&live, &records);
    live.ack(ids[1], 1, &mut records).unwrap();
    check(&live, &records);
    live.sweep(NOW_MS + 100, &mut records);
    check(&live, &records);
    live.reserve(NOW_MS + 100, &plan, &mut records);
    check(&live, &records);
    live.sweep(NOW_MS + 200, &mut records);
    check(&live, &records);
    live.drain_dead_letters(None, 5, &mut records);
    check(&live, &records);
    assert_eq!(live.check_invariants(), Ok(()));
}

#[test]
fn replay_with_a_different_configuration_still_rebuilds_the_same_state() {
    let harness = busy_harness();
    let other_policy = policy_with(|policy| {
        policy.defaults.default_priority = 9;
        policy.defaults.max_attempts_ceiling = 1;
        policy.defaults.dedup_window_ms = 1;
        policy.defaults.max_queue_depth = Some(0);
    });
    let mut replayed = State::new(Arc::new(other_policy), StorageRules::default());
    for record in &harness.records {
        replayed.apply(record);
    }
    assert_eq!(replayed.fingerprint(), harness.state.fingerprint());
}

#[test]
fn a_replayed_state_continues_acceptance_order_where_the_run_left_off() {
    let mut harness = Harness::default();
    harness.add_all(NOW_MS, vec![job("q"), job("q")]);
    let mut replayed = harness.replayed();
    let next_id = harness.fresh_id();
    let mut live_records = Vec::new();
    let mut replay_records = Vec::new();
    harness.state.enqueue(NOW_MS, vec![(next_id, job("q"))], &mut live_records);
    replayed.enqueue(NOW_MS, vec![(next_id, job("q"))], &mut replay_records);
    assert_eq!(live_records, replay_records);
    let Record::JobAccepted { job, .. } = &live_records[0] else {
        panic!("expected an accepted job");
    };
    assert_eq!(job.seq, 3);
    harness.records.extend(live_records);
}

#[test]
fn a_replayed_state_continues_to_behave_like_the_original() {
    let mut harness = busy_harness();
    let mut replayed = harness.replayed();
    let mut replay_records = Vec::new();
    let now_ms = NOW_MS + 2_000;
    let live = harness.reserve(now_ms, &["a", "b", "c", "retry"], 10, 1_000);
    let plan = sepp_core::validate::ReservePlan {
        queues: vec!["a".into(), "b".into(), "c".into(), "retry".into()],
        wait_ms: 0,
        lease_ms: 1_000,
        max_jobs: 10,
    };
    let again = replayed.reserve(now_ms, &plan, &mut replay_records);
    assert!(!live.is_empty());
    assert_eq!(live, again);
    assert_eq!(replayed.fingerprint(), harness.state.fingerprint());
    assert_eq!(replayed.sweep(now_ms + 10_000, &mut replay_records), harness.sweep(now_ms + 10_000));
    assert_eq!(replayed.fingerprint(), harness.state.fingerprint());
}
