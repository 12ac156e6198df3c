//! Settling leases: the shared argument checks, Ack, Nack and Extend (docs/protocol.md#ack and after), with
//! attempt fencing and what each settlement does to the job; and the DrainDeadLetters arguments.

mod common;

use common::{Harness, JobBuilder, declare, job, job_id, policy_with, retention};
use sepp_core::retry::retry_delay_ms;
use sepp_core::validate::{
    LeaseTarget, NackRequestRetry, NackStrategy, plan_drain, validate_lease_duration, validate_lease_fields,
    validate_nack_strategy, validate_worker_id,
};
use sepp_core::{CallError, DeadLetterCause, Depths, JobId, JobState, LeaseError, Nacked, RetryBackoff, TimeMs};

const NOW_MS: TimeMs = 5_000_000;

fn invalid_argument(message: &str) -> CallError {
    CallError::InvalidArgument(message.to_string())
}

// ---- Lease fields ----

#[test]
fn a_lowercase_canonical_job_id_names_that_job() {
    let id = job_id(42);
    assert_eq!(validate_lease_fields(&id.to_string(), 1, Some("w")), Ok(LeaseTarget::Job(id)));
}

#[test]
fn an_uppercase_job_id_validates_but_names_no_job() {
    let upper = job_id(0xabcdef).to_string().to_uppercase();
    assert_eq!(validate_lease_fields(&upper, 1, None), Ok(LeaseTarget::NoSuchJob));
    let mixed = "0000000a-0000-4000-8000-00000000000A";
    assert_eq!(validate_lease_fields(mixed, 1, None), Ok(LeaseTarget::NoSuchJob));
}

#[test]
fn a_job_id_that_is_not_a_canonical_uuid_is_rejected() {
    let canonical = job_id(7).to_string();
    let not_canonical = [
        String::new(),
        "not-a-uuid".into(),
        canonical.replace('-', ""),
        format!("{{{canonical}}}"),
        format!("urn:uuid:{canonical}"),
        canonical.replacen('0', "g", 1),
        canonical[..35].to_string(),
        format!("{canonical}0"),
        canonical.replacen('-', "0", 1) + "-",
    ];
    for job_id in not_canonical {
        assert_eq!(
            validate_lease_fields(&job_id, 1, None),
            Err(invalid_argument("job_id must be a UUID")),
            "{job_id:?}"
        );
    }
}

#[test]
fn attempt_zero_is_rejected() {
    assert_eq!(validate_lease_fields(&job_id(1).to_string(), 0, None), Err(invalid_argument("attempt must be >= 1")));
}

#[test]
fn an_empty_worker_id_is_rejected_and_an_absent_one_is_fine() {
    assert_eq!(
        validate_lease_fields(&job_id(1).to_string(), 1, Some("")),
        Err(invalid_argument("worker_id must not be empty"))
    );
    assert_eq!(validate_worker_id(None), Ok(()));
    assert_eq!(validate_worker_id(Some("")), Err(invalid_argument("worker_id must not be empty")));
}

#[test]
fn lease_fields_are_checked_job_id_then_attempt_then_worker_id() {
    assert_eq!(validate_lease_fields("nope", 0, Some("")), Err(invalid_argument("job_id must be a UUID")));
    assert_eq!(
        validate_lease_fields(&job_id(1).to_string(), 0, Some("")),
        Err(invalid_argument("attempt must be >= 1"))
    );
}

#[test]
fn an_extend_lease_duration_is_required_and_positive() {
    assert_eq!(validate_lease_duration(None), Err(invalid_argument("lease_duration is required")));
    assert_eq!(validate_lease_duration(Some(0)), Err(invalid_argument("lease_duration must be greater than 0")));
    assert_eq!(validate_lease_duration(Some(-1)), Err(invalid_argument("lease_duration must be greater than 0")));
    assert_eq!(validate_lease_duration(Some(250)), Ok(250));
}

#[test]
fn a_nack_retry_field_must_set_its_strategy_and_a_non_negative_delay() {
    assert_eq!(validate_nack_strategy(None), Ok(NackStrategy::Default));
    assert_eq!(validate_nack_strategy(Some(None)), Err(invalid_argument("retry strategy is required")));
    assert_eq!(validate_nack_strategy(Some(Some(NackRequestRetry::Default))), Ok(NackStrategy::Default));
    assert_eq!(validate_nack_strategy(Some(Some(NackRequestRetry::DeadLetter))), Ok(NackStrategy::DeadLetter));
    assert_eq!(
        validate_nack_strategy(Some(Some(NackRequestRetry::Delay { delay_ms: -1 }))),
        Err(invalid_argument("retry delay must not be negative"))
    );
    assert_eq!(
        validate_nack_strategy(Some(Some(NackRequestRetry::Delay { delay_ms: 0 }))),
        Ok(NackStrategy::Delay { delay_ms: 0 })
    );
    assert_eq!(
        validate_nack_strategy(Some(Some(NackRequestRetry::Delay { delay_ms: 1_500 }))),
        Ok(NackStrategy::Delay { delay_ms: 1_500 })
    );
}

// ---- Release (a lease whose reserve went unanswered) ----

#[test]
fn a_released_lease_puts_the_job_back_in_its_place_under_the_same_attempt() {
    let mut harness = Harness::default();
    let first = harness.add(NOW_MS, job("q"));
    let second = harness.add(NOW_MS, job("q"));
    let leased = harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(leased.job.id, first);
    assert_eq!(harness.state.release(first, 1, &mut harness.records), Ok(()));
    assert_eq!(harness.state.job_state(&first), Some(JobState::Ready { attempt: 1 }));
    // Back ahead of the job behind it, and delivered as the attempt it was.
    let again = harness.reserve_one(NOW_MS + 1, "q", 1_000);
    assert_eq!((again.job.id, again.attempt), (first, 1));
    assert_eq!(harness.reserve_one(NOW_MS + 1, "q", 1_000).job.id, second);
    assert_eq!(harness.replayed().fingerprint(), harness.state.fingerprint());
}

#[test]
fn only_the_current_lease_can_be_released() {
    let mut harness = Harness::default();
    let id = harness.add(NOW_MS, job("q"));
    assert_eq!(harness.state.release(id, 1, &mut harness.records), Err(LeaseError::NotFound));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(harness.state.release(id, 2, &mut harness.records), Err(LeaseError::AttemptMismatch));
}

// ---- Ack ----

#[test]
fn ack_deletes_the_job_and_its_queue_disappears_when_empty() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(harness.ack(job_id, 1), Ok(()));
    assert_eq!(harness.state.job_state(&job_id), None);
    assert_eq!(harness.state.depths("q"), Depths::default());
    assert!(harness.state.queue_names().is_empty());
}

#[test]
fn ack_of_a_job_that_never_existed_is_not_found() {
    let mut harness = Harness::default();
    assert_eq!(harness.ack(job_id(12345), 1), Err(LeaseError::NotFound));
    assert!(harness.records.is_empty());
}

#[test]
fn ack_of_a_ready_or_scheduled_job_is_not_found() {
    let mut harness = Harness::default();
    let ready = harness.add(NOW_MS, job("q"));
    let scheduled = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 60_000));
    let before = harness.records.len();
    assert_eq!(harness.ack(ready, 1), Err(LeaseError::NotFound));
    assert_eq!(harness.ack(scheduled, 1), Err(LeaseError::NotFound));
    assert!(harness.records_since(before).is_empty());
}

#[test]
fn ack_with_a_lower_or_higher_attempt_is_an_attempt_mismatch() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q").max_attempts(5));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::Default, None).unwrap();
    let delivery = harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(delivery.attempt, 2);
    let before = harness.records.len();
    assert_eq!(harness.ack(job_id, 1), Err(LeaseError::AttemptMismatch));
    assert_eq!(harness.ack(job_id, 3), Err(LeaseError::AttemptMismatch));
    assert!(harness.records_since(before).is_empty());
    assert_eq!(harness.ack(job_id, 2), Ok(()));
}

#[test]
fn a_second_ack_is_not_found() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.ack(job_id, 1).unwrap();
    assert_eq!(harness.ack(job_id, 1), Err(LeaseError::NotFound));
}

#[test]
fn ack_after_the_lease_expired_is_not_found_until_the_job_is_leased_again() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.sweep(NOW_MS + 1_000);
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 2 }));
    assert_eq!(harness.ack(job_id, 1), Err(LeaseError::NotFound));
    harness.reserve_one(NOW_MS + 1_000, "q", 1_000);
    assert_eq!(harness.ack(job_id, 1), Err(LeaseError::AttemptMismatch));
    assert_eq!(harness.ack(job_id, 2), Ok(()));
}

#[test]
fn ack_after_dead_lettering_is_not_found() {
    let mut harness = Harness::with_rules(retention(60_000));
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::DeadLetter, None).unwrap();
    assert_eq!(harness.ack(job_id, 1), Err(LeaseError::NotFound));
}

#[test]
fn ack_leaves_other_jobs_alone() {
    let mut harness = Harness::default();
    let ids = harness.add_all(NOW_MS, vec![job("q"), job("q"), job("q")]);
    harness.reserve(NOW_MS, &["q"], 2, 1_000);
    harness.ack(ids[0], 1).unwrap();
    assert_eq!(harness.state.depths("q"), Depths { ready: 1, inflight: 1, ..Depths::default() });
}

// ---- Nack ----

#[test]
fn nack_with_the_default_policy_and_no_retry_delay_makes_the_job_ready_with_the_next_attempt() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    let generation = harness.state.ready_generation();
    assert_eq!(
        harness.nack(NOW_MS + 5, job_id, 1, NackStrategy::Default, Some("flaky")),
        Ok(Nacked { dead_lettered: false, retry_delay_ms: 0 })
    );
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 2 }));
    assert!(harness.state.ready_generation() > generation);
    assert_eq!(harness.reserve_one(NOW_MS + 5, "q", 1_000).attempt, 2);
}

#[test]
fn nack_with_the_default_policy_schedules_the_retry_after_the_queue_retry_delay() {
    let policy = policy_with(|policy| {
        declare(policy, "q", |limits| {
            limits.retry_delay_ms = 1_000;
            limits.retry_backoff = RetryBackoff::Exponential;
        })
    });
    let mut harness = Harness::with_policy(policy.clone());
    let job_id = harness.add(NOW_MS, job("q").max_attempts(5));
    for attempt in 1..=3 {
        let now_ms = NOW_MS + i64::from(attempt) * 100_000;
        harness.sweep(now_ms);
        let delivery = harness.reserve_one(now_ms, "q", 1_000);
        assert_eq!(delivery.attempt, attempt);
        let expected_delay_ms = retry_delay_ms(policy.queue("q"), &job_id, attempt);
        let grown_ms = 1_000 << (attempt - 1);
        assert!((grown_ms - grown_ms / 4..=grown_ms).contains(&expected_delay_ms), "{expected_delay_ms}");
        assert_eq!(
            harness.nack(now_ms, job_id, attempt, NackStrategy::Default, None),
            Ok(Nacked { dead_lettered: false, retry_delay_ms: expected_delay_ms })
        );
        assert_eq!(
            harness.state.job_state(&job_id),
            Some(JobState::Scheduled { attempt: attempt + 1, due_ms: now_ms + expected_delay_ms as TimeMs })
        );
    }
}

#[test]
fn nack_with_an_explicit_delay_uses_it_exactly_without_jitter() {
    let policy = policy_with(|policy| policy.defaults.retry_delay_ms = 50);
    let mut harness = Harness::with_policy(policy);
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(
        harness.nack(NOW_MS, job_id, 1, NackStrategy::Delay { delay_ms: 1_234 }, None),
        Ok(Nacked { dead_lettered: false, retry_delay_ms: 1_234 })
    );
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Scheduled { attempt: 2, due_ms: NOW_MS + 1_234 }));
}

#[test]
fn nack_with_an_explicit_delay_is_clamped_to_the_schedule_horizon() {
    let policy = policy_with(|policy| declare(policy, "q", |limits| limits.max_schedule_horizon_ms = 10_000));
    let mut harness = Harness::with_policy(policy);
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(
        harness.nack(NOW_MS, job_id, 1, NackStrategy::Delay { delay_ms: u64::MAX }, None),
        Ok(Nacked { dead_lettered: false, retry_delay_ms: 10_000 })
    );
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Scheduled { attempt: 2, due_ms: NOW_MS + 10_000 }));
}

#[test]
fn nack_with_an_explicit_zero_delay_makes_the_job_ready_now() {
    let policy = policy_with(|policy| policy.defaults.retry_delay_ms = 60_000);
    let mut harness = Harness::with_policy(policy);
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::Delay { delay_ms: 0 }, None).unwrap();
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 2 }));
}

#[test]
fn a_delayed_retry_is_not_reservable_until_the_sweep_promotes_it() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::Delay { delay_ms: 500 }, None).unwrap();
    assert!(harness.reserve(NOW_MS + 499, &["q"], 1, 1_000).is_empty());
    harness.sweep(NOW_MS + 499);
    assert!(harness.reserve(NOW_MS + 499, &["q"], 1, 1_000).is_empty());
    assert_eq!(harness.sweep(NOW_MS + 500).promoted, vec![job_id]);
    assert_eq!(harness.reserve_one(NOW_MS + 500, "q", 1_000).attempt, 2);
}

#[test]
fn nack_with_the_dead_letter_strategy_dead_letters_as_rejected_with_the_reason() {
    let mut harness = Harness::with_rules(retention(60_000));
    let job_id = harness.add(NOW_MS, job("q").max_attempts(10));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(
        harness.nack(NOW_MS + 7, job_id, 1, NackStrategy::DeadLetter, Some("poison")),
        Ok(Nacked { dead_lettered: true, retry_delay_ms: 0 })
    );
    assert_eq!(harness.state.job_state(&job_id), None);
    let dead = harness.drain(Some("q"), 10);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].job.id, job_id);
    assert_eq!(dead[0].cause, DeadLetterCause::Rejected);
    assert_eq!(dead[0].last_reason.as_deref(), Some("poison"));
    assert_eq!(dead[0].failed_at_ms, NOW_MS + 7);
    assert_eq!(dead[0].final_attempt, 1);
}

#[test]
fn nack_on_the_final_attempt_dead_letters_with_attempts_exhausted_even_with_an_explicit_delay() {
    let mut harness = Harness::with_rules(retention(60_000));
    let job_id = harness.add(NOW_MS, job("q").max_attempts(2));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::Default, None).unwrap();
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(
        harness.nack(NOW_MS + 1, job_id, 2, NackStrategy::Delay { delay_ms: 5_000 }, Some("again")),
        Ok(Nacked { dead_lettered: true, retry_delay_ms: 0 })
    );
    let dead = harness.drain(None, 10);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].cause, DeadLetterCause::AttemptsExhausted);
    assert_eq!(dead[0].final_attempt, 2);
    assert_eq!(dead[0].last_reason.as_deref(), Some("again"));
}

#[test]
fn the_dead_letter_strategy_on_the_final_attempt_counts_as_rejected() {
    let mut harness = Harness::with_rules(retention(60_000));
    let job_id = harness.add(NOW_MS, job("q").max_attempts(1));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::DeadLetter, Some("no")).unwrap();
    assert_eq!(harness.drain(None, 1)[0].cause, DeadLetterCause::Rejected);
}

#[test]
fn nack_of_a_single_attempt_job_dead_letters_it_at_once() {
    let mut harness = Harness::with_rules(retention(60_000));
    let job_id = harness.add(NOW_MS, job("q").max_attempts(1));
    harness.reserve_one(NOW_MS, "q", 1_000);
    let nacked = harness.nack(NOW_MS, job_id, 1, NackStrategy::Default, None).unwrap();
    assert!(nacked.dead_lettered);
    assert_eq!(harness.drain(None, 1)[0].cause, DeadLetterCause::AttemptsExhausted);
}

#[test]
fn nack_without_retention_deletes_the_dead_job_outright() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q").max_attempts(1));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert!(harness.nack(NOW_MS, job_id, 1, NackStrategy::Default, None).unwrap().dead_lettered);
    assert_eq!(harness.state.depths("q"), Depths::default());
    assert!(harness.drain(None, 10).is_empty());
    assert!(harness.state.queue_names().is_empty());
}

#[test]
fn nack_is_fenced_like_ack() {
    let mut harness = Harness::default();
    let leased = harness.add(NOW_MS, job("q"));
    assert_eq!(harness.nack(NOW_MS, leased, 1, NackStrategy::Default, None), Err(LeaseError::NotFound));
    harness.reserve_one(NOW_MS, "q", 1_000);
    let before = harness.records.len();
    assert_eq!(harness.nack(NOW_MS, leased, 2, NackStrategy::DeadLetter, None), Err(LeaseError::AttemptMismatch));
    assert!(harness.records_since(before).is_empty());
    assert_eq!(harness.nack(NOW_MS, job_id(7), 1, NackStrategy::Default, None), Err(LeaseError::NotFound));
}

#[test]
fn retried_jobs_keep_their_original_position_in_their_priority_band() {
    let mut harness = Harness::default();
    let ids = harness.add_all(NOW_MS, vec![job("q"), job("q"), job("q")]);
    let first = harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(first.job.id, ids[0]);
    let later = harness.add(NOW_MS + 10, job("q"));
    harness.nack(NOW_MS + 10, ids[0], 1, NackStrategy::Default, None).unwrap();
    assert_eq!(harness.reserve_ids(NOW_MS + 10, &["q"], 4), vec![ids[0], ids[1], ids[2], later]);
}

#[test]
fn a_retried_job_still_yields_to_higher_priority_jobs() {
    let mut harness = Harness::default();
    let low = harness.add(NOW_MS, job("q").priority(1));
    harness.reserve_one(NOW_MS, "q", 1_000);
    let high = harness.add(NOW_MS + 1, job("q").priority(8));
    harness.nack(NOW_MS + 1, low, 1, NackStrategy::Default, None).unwrap();
    assert_eq!(harness.reserve_ids(NOW_MS + 1, &["q"], 2), vec![high, low]);
}

// ---- Extend ----

#[test]
fn extend_sets_the_deadline_from_now_not_from_the_old_deadline() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 10_000);
    assert_eq!(harness.extend(NOW_MS + 4_000, job_id, 1, 10_000), Ok(NOW_MS + 14_000));
    assert_eq!(
        harness.state.job_state(&job_id),
        Some(JobState::Inflight { attempt: 1, lease_deadline_ms: NOW_MS + 14_000 })
    );
    // The old deadline passes without expiring the lease.
    assert!(harness.sweep(NOW_MS + 10_000).is_empty());
    assert_eq!(harness.ack(job_id, 1), Ok(()));
}

#[test]
fn extend_can_shorten_a_lease() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 60_000);
    assert_eq!(harness.extend(NOW_MS + 1, job_id, 1, 100), Ok(NOW_MS + 101));
    assert_eq!(harness.sweep(NOW_MS + 101).redelivered, vec![job_id]);
}

#[test]
fn extend_is_clamped_to_the_max_lease_of_the_jobs_own_queue() {
    let policy = policy_with(|policy| {
        policy.defaults.max_lease_duration_ms = 100_000;
        declare(policy, "short", |limits| limits.max_lease_duration_ms = 3_000);
    });
    let mut harness = Harness::with_policy(policy);
    let short = harness.add(NOW_MS, job("short"));
    let plain = harness.add(NOW_MS, job("plain"));
    harness.reserve_one(NOW_MS, "short", 1_000);
    harness.reserve_one(NOW_MS, "plain", 1_000);
    assert_eq!(harness.extend(NOW_MS, short, 1, 50_000), Ok(NOW_MS + 3_000));
    assert_eq!(harness.extend(NOW_MS, plain, 1, 50_000), Ok(NOW_MS + 50_000));
    assert_eq!(harness.extend(NOW_MS, plain, 1, 500_000), Ok(NOW_MS + 100_000));
}

#[test]
fn extend_of_zero_milliseconds_still_leases_for_one() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(harness.extend(NOW_MS, job_id, 1, 0), Ok(NOW_MS + 1));
}

#[test]
fn extend_keeps_the_attempt() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.sweep(NOW_MS + 1_000);
    harness.reserve_one(NOW_MS + 1_000, "q", 1_000);
    harness.extend(NOW_MS + 1_500, job_id, 2, 1_000).unwrap();
    assert_eq!(harness.state.job_state(&job_id).unwrap().attempt(), 2);
    assert_eq!(harness.ack(job_id, 2), Ok(()));
}

#[test]
fn extend_is_fenced_like_ack() {
    let mut harness = Harness::default();
    let leased = harness.add(NOW_MS, job("q"));
    assert_eq!(harness.extend(NOW_MS, leased, 1, 1_000), Err(LeaseError::NotFound));
    harness.reserve_one(NOW_MS, "q", 1_000);
    let before = harness.records.len();
    assert_eq!(harness.extend(NOW_MS, leased, 2, 1_000), Err(LeaseError::AttemptMismatch));
    assert!(harness.records_since(before).is_empty());
    harness.sweep(NOW_MS + 1_000);
    assert_eq!(harness.extend(NOW_MS + 1_000, leased, 1, 1_000), Err(LeaseError::NotFound));
    let unknown: JobId = job_id(99);
    assert_eq!(harness.extend(NOW_MS, unknown, 1, 1_000), Err(LeaseError::NotFound));
}

// ---- Drain arguments ----

#[test]
fn drain_arguments_are_checked_and_max_is_clamped() {
    let policy = policy_with(|policy| policy.server.max_reserve_batch = 5);
    assert_eq!(plan_drain(&policy, Some(""), Some(1)), Err(invalid_argument("queue must not be empty")));
    assert_eq!(plan_drain(&policy, None, Some(0)), Err(invalid_argument("max must be >= 1")));
    assert_eq!(plan_drain(&policy, None, None), Ok(1));
    assert_eq!(plan_drain(&policy, Some("q"), Some(3)), Ok(3));
    assert_eq!(plan_drain(&policy, None, Some(500)), Ok(5));
    // Only emptiness is checked on the queue name.
    assert_eq!(plan_drain(&policy, Some("a/b"), Some(1)), Ok(1));
}
