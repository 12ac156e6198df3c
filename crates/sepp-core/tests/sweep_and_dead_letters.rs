//! The sweep (docs/protocol.md#timers): scheduled promotion, lease expiry, dedup expiry, dead-letter
//! retention and the per-phase budget; and DrainDeadLetters (docs/protocol.md#draindeadletters).

mod common;

use common::{Harness, JobBuilder, job, payload_of, policy_with, retention};
use sepp_core::validate::NackStrategy;
use sepp_core::{DeadLetterCause, Depths, JobId, JobState, Primitive, Record, StorageRules, TimeMs};

const NOW_MS: TimeMs = 9_000_000;

fn rules(dead_letter_retention_ms: u64, sweep_limit: usize) -> StorageRules {
    StorageRules { dead_letter_retention_ms, sweep_limit }
}

/// Leases `job_id` (the only ready job of `queue`) and dead-letters it at `now_ms` with the
/// dead-letter strategy.
fn dead_letter_now(harness: &mut Harness, queue: &str, job_id: JobId, now_ms: TimeMs) {
    let delivery = harness.reserve_one(now_ms, queue, 1_000);
    assert_eq!(delivery.job.id, job_id);
    let nacked = harness.nack(now_ms, job_id, delivery.attempt, NackStrategy::DeadLetter, None).unwrap();
    assert!(nacked.dead_lettered);
}

// ---- Scheduled promotion ----

#[test]
fn a_scheduled_job_is_promoted_exactly_at_its_due_time_and_not_before() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 1_000));
    let generation = harness.state.ready_generation();
    assert!(harness.sweep(NOW_MS + 999).is_empty());
    assert!(harness.state.is_scheduled(&job_id));
    assert_eq!(harness.state.ready_generation(), generation);

    let report = harness.sweep(NOW_MS + 1_000);
    assert_eq!(report.promoted, vec![job_id]);
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 1 }));
    assert!(harness.state.has_ready("q"));
    assert!(harness.state.ready_generation() > generation);
    assert_eq!(harness.reserve_one(NOW_MS + 1_000, "q", 1_000).attempt, 1);
}

#[test]
fn a_late_sweep_promotes_everything_that_came_due_in_due_order() {
    let mut harness = Harness::default();
    let later = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 300));
    let sooner = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 100));
    let not_yet = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 10_000));
    assert_eq!(harness.sweep(NOW_MS + 5_000).promoted, vec![sooner, later]);
    assert!(harness.state.is_scheduled(&not_yet));
}

#[test]
fn a_promoted_job_keeps_its_place_by_acceptance_order_not_due_time() {
    let mut harness = Harness::default();
    let scheduled_first = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 100));
    let ready_later = harness.add(NOW_MS + 50, job("q"));
    harness.sweep(NOW_MS + 100);
    assert_eq!(harness.reserve_ids(NOW_MS + 100, &["q"], 2), vec![scheduled_first, ready_later]);
}

#[test]
fn a_delayed_retry_is_promoted_with_its_next_attempt() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::Delay { delay_ms: 200 }, None).unwrap();
    assert_eq!(harness.sweep(NOW_MS + 200).promoted, vec![job_id]);
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 2 }));
}

// ---- Lease expiry ----

#[test]
fn an_expired_lease_is_redelivered_with_the_next_attempt_at_its_deadline_and_not_before() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 2_000);
    assert!(harness.sweep(NOW_MS + 1_999).is_empty());
    let generation = harness.state.ready_generation();
    let report = harness.sweep(NOW_MS + 2_000);
    assert_eq!(report.redelivered, vec![job_id]);
    assert!(report.lease_dead_lettered.is_empty());
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 2 }));
    assert!(harness.state.ready_generation() > generation);
    let delivery = harness.reserve_one(NOW_MS + 2_000, "q", 2_000);
    assert_eq!(delivery.attempt, 2);
    assert_eq!(delivery.job.enqueued_at_ms, NOW_MS);
}

#[test]
fn a_redelivered_job_goes_back_to_its_original_place_and_ignores_the_retry_policy() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.retry_delay_ms = 60_000));
    let ids = harness.add_all(NOW_MS, vec![job("q"), job("q")]);
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.sweep(NOW_MS + 1_000);
    assert_eq!(harness.reserve_ids(NOW_MS + 1_000, &["q"], 2), ids);
}

#[test]
fn an_expired_lease_on_the_final_attempt_dead_letters_with_lease_expired_and_no_reason() {
    let mut harness = Harness::with_rules(retention(60_000));
    let job_id = harness.add(NOW_MS, job("q").max_attempts(2).custom("k", Primitive::Int(4)));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::Default, Some("first")).unwrap();
    harness.reserve_one(NOW_MS, "q", 1_000);
    let report = harness.sweep(NOW_MS + 1_000);
    assert_eq!(report.lease_dead_lettered, vec![job_id]);
    assert!(report.redelivered.is_empty());
    assert_eq!(harness.state.job_state(&job_id), None);
    assert_eq!(harness.state.depths("q"), Depths { dead_letter: 1, ..Depths::default() });

    let dead = harness.drain(Some("q"), 5);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].job.id, job_id);
    assert_eq!(dead[0].cause, DeadLetterCause::LeaseExpired);
    assert_eq!(dead[0].last_reason, None);
    assert_eq!(dead[0].final_attempt, 2);
    assert_eq!(dead[0].failed_at_ms, NOW_MS + 1_000);
    assert_eq!(dead[0].job.max_attempts, 2);
    assert_eq!(dead[0].job.enqueued_at_ms, NOW_MS);
    assert_eq!(dead[0].job.custom.get("k"), Some(&Primitive::Int(4)));
}

#[test]
fn without_retention_a_final_lease_expiry_deletes_the_job_outright() {
    let mut harness = Harness::with_rules(StorageRules::default());
    let job_id = harness.add(NOW_MS, job("q").max_attempts(1));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(harness.sweep(NOW_MS + 1_000).lease_dead_lettered, vec![job_id]);
    assert!(matches!(
        harness.records.last(),
        Some(Record::DeadLettered { kept: false, cause: DeadLetterCause::LeaseExpired, .. })
    ));
    assert_eq!(harness.state.depths("q"), Depths::default());
    assert_eq!(harness.state.total_depths(), Depths::default());
    assert!(harness.drain(None, 100).is_empty());
    assert!(harness.drain(Some("q"), 100).is_empty());
    assert!(harness.state.queue_names().is_empty());
    assert_eq!(harness.state.next_deadline_ms(), None);
}

// ---- Dedup expiry ----

#[test]
fn the_sweep_removes_a_dedup_binding_when_its_window_ends() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.dedup_window_ms = 300));
    let original = harness.add(NOW_MS, job("q").key("k"));
    assert_eq!(harness.sweep(NOW_MS + 299).dedup_expired, 0);
    let before = harness.records.len();
    assert_eq!(harness.sweep(NOW_MS + 300).dedup_expired, 1);
    assert_eq!(harness.records_since(before), &[Record::DedupExpired { queue: "q".into(), key: "k".into() }]);
    let again = harness.enqueue(NOW_MS + 300, vec![job("q").key("k")]);
    let replacement = again[0].clone().unwrap();
    assert!(!replacement.deduplicated);
    assert_ne!(replacement.job_id, original);
}

#[test]
fn a_rebound_key_survives_the_end_of_its_old_window() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.dedup_window_ms = 300));
    harness.add(NOW_MS, job("q").key("k"));
    // The old binding ended but was never swept; the key is bound again with a new window.
    let rebound = harness.add(NOW_MS + 400, job("q").key("k"));
    let report = harness.sweep(NOW_MS + 400);
    assert_eq!(report.dedup_expired, 0);
    let again = harness.enqueue(NOW_MS + 699, vec![job("q").key("k")]);
    assert_eq!(again[0].clone().unwrap().job_id, rebound);
    assert_eq!(harness.sweep(NOW_MS + 700).dedup_expired, 1);
}

// ---- Dead-letter retention ----

#[test]
fn a_dead_letter_is_removed_once_its_retention_ends_and_not_before() {
    let mut harness = Harness::with_rules(retention(5_000));
    let job_id = harness.add(NOW_MS, job("q"));
    dead_letter_now(&mut harness, "q", job_id, NOW_MS);
    assert_eq!(harness.sweep(NOW_MS + 4_999).dead_letters_expired, 0);
    assert_eq!(harness.state.depths("q").dead_letter, 1);
    assert_eq!(harness.sweep(NOW_MS + 5_000).dead_letters_expired, 1);
    assert_eq!(harness.state.depths("q"), Depths::default());
    assert!(harness.drain(None, 10).is_empty());
    assert!(harness.state.queue_names().is_empty());
}

#[test]
fn without_retention_nothing_is_kept_and_drain_returns_nothing() {
    let mut harness = Harness::with_rules(rules(0, 10_000));
    let job_id = harness.add(NOW_MS, job("q"));
    dead_letter_now(&mut harness, "q", job_id, NOW_MS);
    assert_eq!(harness.state.total_depths().dead_letter, 0);
    assert!(harness.drain(None, 10).is_empty());
    assert_eq!(harness.sweep(NOW_MS + 1).dead_letters_expired, 0);
}

// ---- Budget ----

#[test]
fn each_sweep_phase_has_its_own_budget_and_the_rest_waits_for_the_next_sweep() {
    let mut harness = Harness::new(policy_with(|policy| policy.defaults.dedup_window_ms = 100), rules(100, 2));
    // Three leases that will expire, and three dead letters to age out.
    let leased = harness.add_all(NOW_MS, vec![job("lease"), job("lease"), job("lease")]);
    harness.reserve(NOW_MS, &["lease"], 3, 500);
    let dead = harness.add_all(NOW_MS, vec![job("dead"), job("dead"), job("dead")]);
    for job_id in &dead {
        dead_letter_now(&mut harness, "dead", *job_id, NOW_MS);
    }
    // Three scheduled jobs and three keys.
    let scheduled = harness.add_all(
        NOW_MS,
        vec![
            job("later").scheduled_at(NOW_MS + 400).key("a"),
            job("later").scheduled_at(NOW_MS + 400).key("b"),
            job("later").scheduled_at(NOW_MS + 400).key("c"),
        ],
    );

    let first = harness.sweep(NOW_MS + 1_000);
    assert_eq!(first.promoted, scheduled[..2].to_vec());
    assert_eq!(first.redelivered.len(), 2);
    assert_eq!(first.dedup_expired, 2);
    assert_eq!(first.dead_letters_expired, 2);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 100), "more work is due at once");

    let second = harness.sweep(NOW_MS + 1_000);
    assert_eq!(second.promoted, vec![scheduled[2]]);
    assert_eq!(second.redelivered.len(), 1);
    assert_eq!(second.dedup_expired, 1);
    assert_eq!(second.dead_letters_expired, 1);
    let mut redelivered: Vec<JobId> = first.redelivered.iter().chain(&second.redelivered).copied().collect();
    redelivered.sort();
    let mut expected = leased.clone();
    expected.sort();
    assert_eq!(redelivered, expected);

    assert!(harness.sweep(NOW_MS + 1_000).is_empty());
}

// ---- next_deadline_ms ----

#[test]
fn an_empty_state_has_no_next_deadline() {
    let harness = Harness::with_rules(retention(1_000));
    assert_eq!(harness.state.next_deadline_ms(), None);
}

#[test]
fn the_next_deadline_is_the_earliest_pending_transition() {
    let mut harness = Harness::new(policy_with(|policy| policy.defaults.dedup_window_ms = 10_000), retention(7_000));
    harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 5_000));
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 5_000));
    harness.add(NOW_MS, job("k").key("key"));
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 5_000));
    harness.reserve_one(NOW_MS, "k", 3_000);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 3_000));
    let dying = harness.add(NOW_MS - 5_000, job("d"));
    dead_letter_now(&mut harness, "d", dying, NOW_MS - 5_000);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 2_000), "retention ends first");

    harness.sweep(NOW_MS + 2_000);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 3_000), "then the lease");
    harness.sweep(NOW_MS + 3_000);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 5_000), "then the scheduled job");
    harness.sweep(NOW_MS + 5_000);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 10_000), "then the key");
    harness.sweep(NOW_MS + 10_000);
    assert_eq!(harness.state.next_deadline_ms(), None);
}

#[test]
fn extending_a_lease_moves_the_next_deadline() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 1_000));
    harness.extend(NOW_MS, job_id, 1, 9_000).unwrap();
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 9_000));
    harness.ack(job_id, 1).unwrap();
    assert_eq!(harness.state.next_deadline_ms(), None);
}

// ---- DrainDeadLetters ----

#[test]
fn drain_returns_the_oldest_dead_letters_first_up_to_max_and_removes_them() {
    let mut harness = Harness::with_rules(retention(1_000_000));
    let mut dead = Vec::new();
    for (offset, queue) in [(30, "b"), (10, "a"), (20, "c"), (40, "a")] {
        let job_id = harness.add(NOW_MS, job(queue));
        dead_letter_now(&mut harness, queue, job_id, NOW_MS + offset);
        dead.push((offset, job_id));
    }
    dead.sort();
    let oldest: Vec<JobId> = dead.iter().map(|(_, job_id)| *job_id).collect();

    let before = harness.records.len();
    let first: Vec<JobId> = harness.drain(None, 3).iter().map(|dead| dead.job.id).collect();
    assert_eq!(first, oldest[..3].to_vec());
    assert_eq!(
        harness.records_since(before),
        &oldest[..3].iter().map(|job_id| Record::DeadLetterRemoved { job_id: *job_id }).collect::<Vec<_>>()[..]
    );
    assert_eq!(harness.state.total_depths().dead_letter, 1);
    let rest: Vec<JobId> = harness.drain(None, 3).iter().map(|dead| dead.job.id).collect();
    assert_eq!(rest, vec![oldest[3]]);
    assert!(harness.drain(None, 3).is_empty());
}

#[test]
fn dead_letters_failing_in_the_same_millisecond_drain_by_queue_name() {
    let mut harness = Harness::with_rules(retention(1_000_000));
    let in_b = harness.add(NOW_MS, job("b"));
    let in_a = harness.add(NOW_MS, job("a"));
    dead_letter_now(&mut harness, "b", in_b, NOW_MS);
    dead_letter_now(&mut harness, "a", in_a, NOW_MS);
    let drained: Vec<JobId> = harness.drain(None, 2).iter().map(|dead| dead.job.id).collect();
    assert_eq!(drained, vec![in_a, in_b]);
}

#[test]
fn a_queue_filtered_drain_returns_only_that_queue_oldest_first() {
    let mut harness = Harness::with_rules(retention(1_000_000));
    let mut mine = Vec::new();
    for offset in 0..6 {
        let queue = if offset % 2 == 0 { "mine" } else { "other" };
        let job_id = harness.add(NOW_MS, job(queue));
        dead_letter_now(&mut harness, queue, job_id, NOW_MS + offset);
        if queue == "mine" {
            mine.push(job_id);
        }
    }
    let drained: Vec<JobId> = harness.drain(Some("mine"), 2).iter().map(|dead| dead.job.id).collect();
    assert_eq!(drained, mine[..2].to_vec());
    assert_eq!(harness.state.depths("other").dead_letter, 3);
    assert_eq!(harness.state.depths("mine").dead_letter, 1);
    assert!(harness.drain(Some("nobody"), 5).is_empty());
}

#[test]
fn a_queue_filtered_drain_does_not_under_return_when_other_queues_hold_older_records() {
    // A sweep limit of 1 would make a scan-capped drain return nothing (as in sepp 0.1); this server
    // makes the filtered drain still find the queue's own records.
    let mut harness = Harness::with_rules(rules(1_000_000, 1));
    let older: Vec<JobId> = harness.add_all(NOW_MS, (0..50).map(|_| job("noisy")).collect());
    let deliveries = harness.reserve(NOW_MS, &["noisy"], 50, 1_000);
    assert_eq!(deliveries.len(), 50);
    for job_id in &older {
        harness.nack(NOW_MS, *job_id, 1, NackStrategy::DeadLetter, None).unwrap();
    }
    let quiet: Vec<JobId> = harness.add_all(NOW_MS, (0..3).map(|_| job("quiet")).collect());
    for job_id in &quiet {
        dead_letter_now(&mut harness, "quiet", *job_id, NOW_MS + 100);
    }
    let drained: Vec<JobId> = harness.drain(Some("quiet"), 2).iter().map(|dead| dead.job.id).collect();
    assert_eq!(drained.len(), 2);
    let mut expected = quiet.clone();
    expected.sort();
    assert_eq!(drained, expected[..2].to_vec(), "same failed_at: job id order");
    assert_eq!(harness.state.depths("noisy").dead_letter, 50);
}

#[test]
fn a_drained_dead_letter_carries_the_job_snapshot() {
    let mut harness = Harness::with_rules(retention(1_000_000));
    let job_id = harness
        .add(NOW_MS, job("q").job_type("resize").payload(b"img", "image/png").priority(6).scheduled_at(NOW_MS - 1));
    let delivery = harness.reserve_one(NOW_MS + 5, "q", 1_000);
    harness.nack(NOW_MS + 6, job_id, delivery.attempt, NackStrategy::DeadLetter, Some("corrupt")).unwrap();
    let dead = harness.drain(None, 1).remove(0);
    assert_eq!(dead.job.id, job_id);
    assert_eq!(&*dead.job.queue, "q");
    assert_eq!(&*dead.job.job_type, "resize");
    assert_eq!(payload_of(&dead.job), Some((b"img".to_vec(), "image/png".to_string())));
    assert_eq!(dead.job.priority, 6);
    assert_eq!(dead.job.enqueued_at_ms, NOW_MS);
    assert_eq!(dead.job.scheduled_at_ms, Some(NOW_MS - 1));
    assert_eq!(dead.failed_at_ms, NOW_MS + 6);
    assert_eq!(dead.last_reason.as_deref(), Some("corrupt"));
}

#[test]
fn a_drained_queue_disappears_once_it_holds_nothing() {
    let mut harness = Harness::with_rules(retention(1_000_000));
    let job_id = harness.add(NOW_MS, job("q"));
    dead_letter_now(&mut harness, "q", job_id, NOW_MS);
    assert_eq!(harness.state.queue_names().len(), 1);
    harness.drain(Some("q"), 1);
    assert!(harness.state.queue_names().is_empty());
}
