//! Cancelling a job in every state it can be in: ready, scheduled, leased (then acked, nacked,
//! extended, or left to expire), already cancelled, dead, gone. Every harness checks replay and
//! the snapshot when dropped, so the mark on a leased job survives both.

mod common;

use common::{Harness, JobBuilder, job, retention};
use sepp_core::validate::NackStrategy;
use sepp_core::{CancelError, CancelOutcome, DeadLetterCause, LeaseError, Record};

const NOW_MS: i64 = 9_000_000;
const LEASE_MS: i64 = 30_000;

fn kept() -> Harness {
    Harness::with_rules(retention(86_400_000))
}

fn cancel(harness: &mut Harness, now_ms: i64, job_id: sepp_core::JobId) -> Result<CancelOutcome, CancelError> {
    harness.state.cancel(now_ms, job_id, Some("customer asked".into()), &mut harness.records)
}

#[test]
fn a_ready_or_scheduled_job_is_dead_lettered_at_once_as_cancelled() {
    let mut harness = kept();
    let ready = harness.add(NOW_MS, job("q"));
    let scheduled = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 60_000));
    assert_eq!(cancel(&mut harness, NOW_MS + 1, ready), Ok(CancelOutcome::Removed));
    assert_eq!(cancel(&mut harness, NOW_MS + 2, scheduled), Ok(CancelOutcome::Removed));

    assert!(harness.reserve_ids(NOW_MS + 120_000, &["q"], 10).is_empty(), "neither is ever delivered");
    let dead = harness.drain(Some("q"), 10);
    assert_eq!(dead.len(), 2);
    for (record, failed_at_ms) in dead.iter().zip([NOW_MS + 1, NOW_MS + 2]) {
        assert_eq!(record.cause, DeadLetterCause::Cancelled);
        assert_eq!(record.failed_at_ms, failed_at_ms);
        assert_eq!(record.last_reason.as_deref(), Some("customer asked"));
    }
}

#[test]
fn without_retention_a_cancelled_job_is_simply_gone() {
    let mut harness = Harness::default();
    let id = harness.add(NOW_MS, job("q"));
    assert_eq!(cancel(&mut harness, NOW_MS, id), Ok(CancelOutcome::Removed));
    assert!(harness.state.job_state(&id).is_none());
    assert_eq!(cancel(&mut harness, NOW_MS, id), Err(CancelError::NotFound), "nothing is left to cancel");
}

#[test]
fn an_ack_of_a_cancelled_lease_is_refused_and_dead_letters_the_job_as_of_the_cancel() {
    let mut harness = kept();
    let id = harness.add(NOW_MS, job("q"));
    let held = harness.reserve_one(NOW_MS, "q", LEASE_MS);
    assert_eq!(cancel(&mut harness, NOW_MS + 5, id), Ok(CancelOutcome::LeaseCancelled));
    assert!(harness.state.is_cancelled(&id));
    assert!(matches!(harness.records.last(), Some(Record::LeaseCancelled { at_ms, .. }) if *at_ms == NOW_MS + 5));

    assert_eq!(harness.ack(id, held.attempt + 1), Err(LeaseError::AttemptMismatch), "the fence comes first");
    assert!(harness.state.is_cancelled(&id), "a stale attempt changes nothing");
    assert_eq!(harness.ack(id, held.attempt), Err(LeaseError::Cancelled));
    assert_eq!(harness.ack(id, held.attempt), Err(LeaseError::NotFound), "settled as cancelled");

    let dead = harness.drain(Some("q"), 10);
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].cause, dead[0].failed_at_ms, dead[0].final_attempt),
        (DeadLetterCause::Cancelled, NOW_MS + 5, 1)
    );
}

#[test]
fn a_nack_or_an_extend_of_a_cancelled_lease_is_refused_the_same_way() {
    let mut harness = kept();
    let first = harness.add(NOW_MS, job("q"));
    let second = harness.add(NOW_MS, job("q"));
    harness.reserve(NOW_MS, &["q"], 2, LEASE_MS);
    cancel(&mut harness, NOW_MS, first).unwrap();
    cancel(&mut harness, NOW_MS, second).unwrap();
    assert_eq!(harness.nack(NOW_MS + 1, first, 1, NackStrategy::Default, None), Err(LeaseError::Cancelled));
    assert_eq!(harness.extend(NOW_MS + 1, second, 1, 60_000), Err(LeaseError::Cancelled));
    assert!(harness.reserve_ids(NOW_MS + 10 * LEASE_MS, &["q"], 10).is_empty(), "neither comes back");
    assert_eq!(harness.drain(Some("q"), 10).len(), 2);
}

#[test]
fn a_cancelled_lease_that_runs_out_is_dead_lettered_never_redelivered() {
    let mut harness = kept();
    let id = harness.add(NOW_MS, job("q").max_attempts(5));
    harness.reserve_one(NOW_MS, "q", LEASE_MS);
    cancel(&mut harness, NOW_MS + 1, id).unwrap();
    let report = harness.sweep(NOW_MS + LEASE_MS);
    assert_eq!(report.cancelled_expired, vec![id]);
    assert!(report.redelivered.is_empty(), "four attempts were left, and none is used");
    assert!(harness.reserve_ids(NOW_MS + LEASE_MS, &["q"], 10).is_empty());
    assert_eq!(harness.drain(Some("q"), 1)[0].cause, DeadLetterCause::Cancelled);
}

#[test]
fn cancelling_twice_a_dead_letter_or_an_unknown_id_changes_nothing() {
    let mut harness = kept();
    let leased = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", LEASE_MS);
    assert_eq!(cancel(&mut harness, NOW_MS, leased), Ok(CancelOutcome::LeaseCancelled));
    let mark = harness.records.len();
    assert_eq!(cancel(&mut harness, NOW_MS + 1, leased), Ok(CancelOutcome::AlreadyCancelled));
    assert!(harness.records_since(mark).is_empty(), "the first cancel's time and reason stay");

    let dead = harness.add(NOW_MS, job("q"));
    cancel(&mut harness, NOW_MS, dead).unwrap();
    assert_eq!(cancel(&mut harness, NOW_MS, dead), Err(CancelError::DeadLettered));
    let unknown = harness.fresh_id();
    assert_eq!(cancel(&mut harness, NOW_MS, unknown), Err(CancelError::NotFound));
}

#[test]
fn a_cancel_frees_the_in_flight_slot_only_when_the_lease_ends() {
    let mut policy = sepp_core::Policy::default();
    common::declare(&mut policy, "q", |limits| limits.max_in_flight = Some(1));
    let mut harness = Harness::with_policy(policy);
    let first = harness.add(NOW_MS, job("q"));
    let second = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", LEASE_MS);
    cancel(&mut harness, NOW_MS, first).unwrap();
    assert!(harness.reserve_ids(NOW_MS, &["q"], 1).is_empty(), "the worker still holds the job");
    assert_eq!(harness.ack(first, 1), Err(LeaseError::Cancelled));
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 1), [second], "the settle freed the slot");
}

#[test]
fn the_mark_survives_replay_and_a_snapshot_with_the_lease_still_held() {
    let mut harness = kept();
    let id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", LEASE_MS);
    cancel(&mut harness, NOW_MS, id).unwrap();
    let mut restored = sepp_core::State::new(std::sync::Arc::new(sepp_core::Policy::default()), harness.state.rules());
    for record in harness.state.snapshot().records() {
        restored.apply(&record);
    }
    assert!(restored.is_cancelled(&id), "a checkpoint keeps the mark");
    assert!(harness.replayed().is_cancelled(&id), "the log keeps the mark");
}
