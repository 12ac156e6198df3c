//! Enqueue at commit time (docs/protocol.md#enqueue, stage D): resolved values, idempotency keys,
//! the depth cap, and the all-or-nothing semantics of atomic batches.

mod common;

use std::sync::Arc;

use common::{Harness, JobBuilder, declare, job, payload_of, policy_with, retention};
use sepp_core::validate::NackStrategy;
use sepp_core::{Depths, Enqueued, Job, JobId, JobState, Primitive, Record, Rejection, TimeMs, TraceContext};

const NOW_MS: TimeMs = 1_000_000;

/// The job and due time recorded when `job_id` was accepted.
fn accepted(harness: &Harness, job_id: JobId) -> (Arc<Job>, Option<TimeMs>) {
    harness
        .records
        .iter()
        .find_map(|record| match record {
            Record::JobAccepted { job, due_ms } if job.id == job_id => Some((job.clone(), *due_ms)),
            _ => None,
        })
        .expect("job was accepted")
}

fn fresh(job_id: JobId) -> Result<Enqueued, Rejection> {
    Ok(Enqueued { job_id, deduplicated: false })
}

fn deduplicated(job_id: JobId) -> Result<Enqueued, Rejection> {
    Ok(Enqueued { job_id, deduplicated: true })
}

fn queue_full(queue: &str, limit: u64) -> Rejection {
    Rejection::QueueFull { queue: queue.into(), limit }
}

fn depths(ready: u64, scheduled: u64, inflight: u64, dead_letter: u64) -> Depths {
    Depths { ready, scheduled, inflight, dead_letter }
}

// ---- Resolved values ----

#[test]
fn an_accepted_job_keeps_what_was_sent_and_is_stamped_with_now() {
    let mut harness = Harness::default();
    let trace = TraceContext {
        traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        tracestate: Some("congo=t61rcWkgMzE".into()),
    };
    let mut new_job = job("mail")
        .job_type("send")
        .payload(b"{\"to\":\"x\"}", "application/json")
        .priority(7)
        .max_attempts(5)
        .custom("tenant", Primitive::String("acme".into()));
    new_job.trace_context = Some(trace.clone());
    let job_id = harness.add(NOW_MS, new_job);

    let (stored, due_ms) = accepted(&harness, job_id);
    assert_eq!(stored.id, job_id);
    assert_eq!(&*stored.queue, "mail");
    assert_eq!(&*stored.job_type, "send");
    assert_eq!(payload_of(&stored), Some((b"{\"to\":\"x\"}".to_vec(), "application/json".to_string())));
    assert_eq!(stored.priority, 7);
    assert_eq!(stored.max_attempts, 5);
    assert_eq!(stored.enqueued_at_ms, NOW_MS);
    let stored_trace = stored.trace_context.as_ref().expect("trace context kept");
    assert_eq!(stored_trace.traceparent, trace.traceparent);
    assert_eq!(stored_trace.tracestate, trace.tracestate);
    assert_eq!(stored.custom.get("tenant"), Some(&Primitive::String("acme".into())));
    assert_eq!(stored.scheduled_at_ms, None);
    assert_eq!(due_ms, None);
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 1 }));
}

#[test]
fn an_unset_priority_takes_the_queue_default_priority() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        policy.defaults.default_priority = 2;
        declare(policy, "urgent", |limits| limits.default_priority = 8);
    }));
    let urgent = harness.add(NOW_MS, job("urgent"));
    let plain = harness.add(NOW_MS, job("plain"));
    let explicit = harness.add(NOW_MS, job("urgent").priority(0));
    assert_eq!(accepted(&harness, urgent).0.priority, 8);
    assert_eq!(accepted(&harness, plain).0.priority, 2);
    assert_eq!(accepted(&harness, explicit).0.priority, 0);
}

#[test]
fn an_unset_max_attempts_takes_the_queue_default() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        declare(policy, "patient", |limits| limits.default_max_attempts = 9)
    }));
    let patient = harness.add(NOW_MS, job("patient"));
    let plain = harness.add(NOW_MS, job("plain"));
    assert_eq!(accepted(&harness, patient).0.max_attempts, 9);
    assert_eq!(accepted(&harness, plain).0.max_attempts, 3);
}

#[test]
fn max_attempts_above_the_ceiling_is_silently_clamped_to_it() {
    let mut harness =
        Harness::with_policy(policy_with(|policy| declare(policy, "tight", |limits| limits.max_attempts_ceiling = 4)));
    let global = harness.add(NOW_MS, job("plain").max_attempts(500));
    let tight = harness.add(NOW_MS, job("tight").max_attempts(5));
    let under = harness.add(NOW_MS, job("tight").max_attempts(4));
    assert_eq!(accepted(&harness, global).0.max_attempts, 100);
    assert_eq!(accepted(&harness, tight).0.max_attempts, 4);
    assert_eq!(accepted(&harness, under).0.max_attempts, 4);
}

#[test]
fn a_default_max_attempts_above_the_ceiling_is_clamped_too() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        policy.defaults.default_max_attempts = 10;
        policy.defaults.max_attempts_ceiling = 6;
    }));
    let job_id = harness.add(NOW_MS, job("q"));
    assert_eq!(accepted(&harness, job_id).0.max_attempts, 6);
}

#[test]
fn acceptance_order_is_numbered_across_the_whole_server() {
    let mut harness = Harness::default();
    let ids = harness.add_all(NOW_MS, vec![job("a"), job("b"), job("a")]);
    let later = harness.add(NOW_MS, job("c"));
    let seqs: Vec<u64> = ids.iter().chain([&later]).map(|job_id| accepted(&harness, *job_id).0.seq).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "{seqs:?}");
}

#[test]
fn a_scheduled_at_in_the_past_is_ready_at_once_and_keeps_its_scheduled_at() {
    let mut harness = Harness::default();
    let past = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS - 5_000));
    let exactly_now = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS));
    for job_id in [past, exactly_now] {
        assert_eq!(harness.state.job_state(&job_id), Some(JobState::Ready { attempt: 1 }));
        assert_eq!(accepted(&harness, job_id).1, None);
    }
    let deliveries = harness.reserve(NOW_MS, &["q"], 2, 1_000);
    assert_eq!(deliveries[0].job.scheduled_at_ms, Some(NOW_MS - 5_000));
    assert_eq!(deliveries[1].job.scheduled_at_ms, Some(NOW_MS));
}

#[test]
fn a_future_scheduled_at_holds_the_job_until_it_is_due() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 1));
    assert_eq!(harness.state.job_state(&job_id), Some(JobState::Scheduled { attempt: 1, due_ms: NOW_MS + 1 }));
    assert!(harness.state.is_scheduled(&job_id));
    assert_eq!(harness.state.depths("q"), depths(0, 1, 0, 0));
    assert!(harness.reserve(NOW_MS, &["q"], 1, 1_000).is_empty());
    assert!(!harness.state.has_ready("q"));
}

#[test]
fn accepting_a_job_writes_its_record_and_a_key_binding_with_the_window_deadline() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.dedup_window_ms = 500));
    let job_id = harness.add(NOW_MS, job("q").key("order-1"));
    assert_eq!(harness.records.len(), 2);
    assert!(matches!(&harness.records[0], Record::JobAccepted { job, due_ms: None } if job.id == job_id));
    assert_eq!(
        harness.records[1],
        Record::DedupBound { queue: Arc::from("q"), key: "order-1".into(), job_id, deadline_ms: NOW_MS + 500 }
    );
}

// ---- Idempotency keys ----

#[test]
fn a_repeated_idempotency_key_returns_the_original_id_and_writes_nothing() {
    let mut harness = Harness::default();
    let original = harness.add(NOW_MS, job("q").key("k"));
    let before = harness.records.len();
    let again = harness.enqueue(NOW_MS + 10, vec![job("q").key("k").priority(9)]);
    assert_eq!(again, vec![deduplicated(original)]);
    assert!(harness.records_since(before).is_empty());
    assert_eq!(harness.state.depths("q"), depths(1, 0, 0, 0));
}

#[test]
fn idempotency_keys_are_scoped_per_queue() {
    let mut harness = Harness::default();
    let first = harness.add(NOW_MS, job("a").key("k"));
    let second = harness.add(NOW_MS, job("b").key("k"));
    assert_ne!(first, second);
    assert_eq!(harness.enqueue(NOW_MS, vec![job("b").key("k")]), vec![deduplicated(second)]);
}

#[test]
fn duplicate_keys_within_one_batch_dedup_against_the_first_job() {
    let mut harness = Harness::default();
    let results = harness.enqueue(NOW_MS, vec![job("q").key("k"), job("q").key("other"), job("q").key("k")]);
    let first = results[0].clone().unwrap();
    assert!(!first.deduplicated);
    assert!(!results[1].clone().unwrap().deduplicated);
    assert_eq!(results[2], deduplicated(first.job_id));
    assert_eq!(harness.state.depths("q").ready, 2);
}

#[test]
fn duplicate_keys_within_one_atomic_batch_dedup_against_the_first_job() {
    let mut harness = Harness::default();
    let responses = harness.enqueue_atomic(NOW_MS, vec![job("q").key("k"), job("q").key("k")]).unwrap();
    assert!(!responses[0].deduplicated);
    assert_eq!(responses[1], Enqueued { job_id: responses[0].job_id, deduplicated: true });
    assert_eq!(harness.state.depths("q").ready, 1);
}

#[test]
fn a_dedup_hit_just_before_the_window_ends_still_returns_the_original() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.dedup_window_ms = 100));
    let original = harness.add(NOW_MS, job("q").key("k"));
    assert_eq!(harness.enqueue(NOW_MS + 99, vec![job("q").key("k")]), vec![deduplicated(original)]);
}

#[test]
fn a_dedup_hit_after_the_window_ends_is_a_miss_even_before_the_sweep_runs() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.dedup_window_ms = 100));
    let original = harness.add(NOW_MS, job("q").key("k"));
    // The window ends at NOW_MS + 100; no sweep has removed the binding.
    let results = harness.enqueue(NOW_MS + 100, vec![job("q").key("k")]);
    let replacement = results[0].clone().unwrap();
    assert!(!replacement.deduplicated);
    assert_ne!(replacement.job_id, original);
    // The key now points at the new job, for a fresh window.
    assert_eq!(harness.enqueue(NOW_MS + 150, vec![job("q").key("k")]), vec![deduplicated(replacement.job_id)]);
}

#[test]
fn the_dedup_window_is_pinned_when_the_key_is_bound() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.dedup_window_ms = 1_000));
    let original = harness.add(NOW_MS, job("q").key("k"));
    // A reload with a shorter window does not shorten the existing binding...
    harness.state.set_policy(Arc::new(policy_with(|policy| policy.defaults.dedup_window_ms = 10)));
    assert_eq!(harness.enqueue(NOW_MS + 999, vec![job("q").key("k")]), vec![deduplicated(original)]);
    // ...and the binding still ends where it was pinned.
    assert!(!harness.enqueue(NOW_MS + 1_000, vec![job("q").key("k")])[0].clone().unwrap().deduplicated);
}

#[test]
fn a_dedup_binding_survives_the_ack_of_its_job() {
    let mut harness = Harness::default();
    let original = harness.add(NOW_MS, job("q").key("k"));
    let delivery = harness.reserve_one(NOW_MS, "q", 1_000);
    harness.ack(original, delivery.attempt).unwrap();
    assert_eq!(harness.state.job_state(&original), None);
    assert_eq!(harness.enqueue(NOW_MS + 1, vec![job("q").key("k")]), vec![deduplicated(original)]);
    assert_eq!(harness.state.depths("q"), Depths::default());
}

#[test]
fn a_dedup_binding_survives_the_dead_lettering_of_its_job() {
    let mut harness = Harness::with_rules(retention(60_000));
    let original = harness.add(NOW_MS, job("q").key("k"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, original, 1, NackStrategy::DeadLetter, Some("bad")).unwrap();
    assert_eq!(harness.enqueue(NOW_MS + 1, vec![job("q").key("k")]), vec![deduplicated(original)]);
}

#[test]
fn a_dedup_hit_is_returned_even_when_the_queue_is_full() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(1)));
    let original = harness.add(NOW_MS, job("q").key("k"));
    assert_eq!(
        harness.enqueue(NOW_MS, vec![job("q").key("k"), job("q").key("new")]),
        vec![deduplicated(original), Err(queue_full("q", 1))]
    );
}

#[test]
fn each_queue_uses_its_own_dedup_window() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        policy.defaults.dedup_window_ms = 1_000;
        declare(policy, "brief", |limits| limits.dedup_window_ms = 10);
    }));
    harness.add(NOW_MS, job("brief").key("k"));
    let lasting = harness.add(NOW_MS, job("plain").key("k"));
    assert!(!harness.enqueue(NOW_MS + 10, vec![job("brief").key("k")])[0].clone().unwrap().deduplicated);
    assert_eq!(harness.enqueue(NOW_MS + 10, vec![job("plain").key("k")]), vec![deduplicated(lasting)]);
}

// ---- Depth cap ----

#[test]
fn a_queue_at_its_depth_cap_rejects_new_jobs_with_queue_full_and_the_limit() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        declare(policy, "capped", |limits| limits.max_queue_depth = Some(2))
    }));
    harness.add_all(NOW_MS, vec![job("capped"), job("capped")]);
    let before = harness.records.len();
    assert_eq!(harness.enqueue(NOW_MS, vec![job("capped")]), vec![Err(queue_full("capped", 2))]);
    assert!(harness.records_since(before).is_empty());
    // Other queues are not capped.
    harness.add(NOW_MS, job("free"));
}

#[test]
fn max_queue_depth_zero_rejects_every_new_job() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(0)));
    assert_eq!(harness.enqueue(NOW_MS, vec![job("q")]), vec![Err(queue_full("q", 0))]);
    assert_eq!(harness.enqueue_atomic(NOW_MS, vec![job("q")]), Err(vec![(0, queue_full("q", 0))]));
    assert!(harness.records.is_empty());
}

#[test]
fn jobs_admitted_earlier_in_the_same_batch_count_toward_the_depth_cap() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(2)));
    let results = harness.enqueue(NOW_MS, vec![job("q"), job("other"), job("q"), job("q"), job("other")]);
    assert!(results[0].is_ok() && results[1].is_ok() && results[2].is_ok() && results[4].is_ok());
    assert_eq!(results[3], Err(queue_full("q", 2)));
    assert_eq!(harness.state.depths("q").ready, 2);
    assert_eq!(harness.state.depths("other").ready, 2);
}

#[test]
fn scheduled_and_in_flight_jobs_count_toward_the_depth_cap() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(2)));
    harness.add(NOW_MS, job("q"));
    harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 1_000));
    harness.reserve_one(NOW_MS, "q", 1_000);
    assert_eq!(harness.state.depths("q"), depths(0, 1, 1, 0));
    assert_eq!(harness.enqueue(NOW_MS, vec![job("q")]), vec![Err(queue_full("q", 2))]);
}

#[test]
fn dead_letters_do_not_count_toward_the_depth_cap() {
    let mut harness = Harness::new(policy_with(|policy| policy.defaults.max_queue_depth = Some(1)), retention(60_000));
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::DeadLetter, None).unwrap();
    assert_eq!(harness.state.depths("q"), depths(0, 0, 0, 1));
    harness.add(NOW_MS, job("q"));
    assert_eq!(harness.state.depths("q"), depths(1, 0, 0, 1));
}

#[test]
fn a_lowered_depth_cap_applies_from_the_next_enqueue() {
    let mut harness = Harness::default();
    harness.add_all(NOW_MS, vec![job("q"), job("q")]);
    harness.state.set_policy(Arc::new(policy_with(|policy| policy.defaults.max_queue_depth = Some(1))));
    assert_eq!(harness.enqueue(NOW_MS, vec![job("q")]), vec![Err(queue_full("q", 1))]);
}

// ---- Batches ----

#[test]
fn a_batch_returns_one_result_per_job_in_submission_order() {
    let mut harness =
        Harness::with_policy(policy_with(|policy| declare(policy, "one", |limits| limits.max_queue_depth = Some(1))));
    let results = harness.enqueue(NOW_MS, vec![job("one"), job("one"), job("two"), job("one").key("x")]);
    assert_eq!(results.len(), 4);
    let first = results[0].clone().unwrap().job_id;
    let third = results[2].clone().unwrap().job_id;
    assert_eq!(results[0], fresh(first));
    assert_eq!(results[1], Err(queue_full("one", 1)));
    assert_eq!(results[2], fresh(third));
    assert_eq!(results[3], Err(queue_full("one", 1)));
}

#[test]
fn a_rejected_job_does_not_bind_its_idempotency_key() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(0)));
    assert_eq!(harness.enqueue(NOW_MS, vec![job("q").key("k")]), vec![Err(queue_full("q", 0))]);
    harness.state.set_policy(Arc::new(policy_with(|policy| policy.defaults.max_queue_depth = None)));
    let results = harness.enqueue(NOW_MS, vec![job("q").key("k")]);
    assert!(!results[0].clone().unwrap().deduplicated);
}

// ---- Atomic batches ----

#[test]
fn an_atomic_batch_that_fits_returns_one_response_per_job_in_order() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(2)));
    let existing = harness.add(NOW_MS, job("b").key("k"));
    let ids: Vec<JobId> = (0..3).map(|_| harness.fresh_id()).collect();
    let jobs = vec![(ids[0], job("a")), (ids[1], job("b").key("k")), (ids[2], job("a"))];
    let mut records = Vec::new();
    let responses = harness.state.enqueue_atomic(NOW_MS, jobs, &mut records).unwrap();
    harness.records.extend(records);
    assert_eq!(
        responses,
        vec![
            Enqueued { job_id: ids[0], deduplicated: false },
            Enqueued { job_id: existing, deduplicated: true },
            Enqueued { job_id: ids[2], deduplicated: false },
        ]
    );
    assert_eq!(harness.state.depths("a").ready, 2);
    assert_eq!(harness.state.depths("b").ready, 1);
}

#[test]
fn an_atomic_batch_over_capacity_lists_every_job_aimed_at_the_full_queue_and_writes_nothing() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        declare(policy, "small", |limits| limits.max_queue_depth = Some(3));
        declare(policy, "tiny", |limits| limits.max_queue_depth = Some(1));
    }));
    harness.add(NOW_MS, job("small"));
    harness.add(NOW_MS, job("other"));
    let before_records = harness.records.len();
    let before_fingerprint = harness.state.fingerprint();

    let result = harness.enqueue_atomic(
        NOW_MS,
        vec![job("other"), job("small"), job("tiny"), job("small"), job("small"), job("other").key("k")],
    );
    // small: 1 live + 3 in the batch > 3. tiny: 0 + 1 fits. other: uncapped.
    assert_eq!(
        result,
        Err(vec![(1, queue_full("small", 3)), (3, queue_full("small", 3)), (4, queue_full("small", 3)),])
    );
    assert!(harness.records_since(before_records).is_empty());
    assert_eq!(harness.state.fingerprint(), before_fingerprint);
    assert_eq!(harness.state.depths("small"), depths(1, 0, 0, 0));
    assert_eq!(harness.state.depths("other"), depths(1, 0, 0, 0));
    assert_eq!(harness.state.depths("tiny"), Depths::default());
    // Nothing was bound either: the key is still free.
    assert!(!harness.enqueue(NOW_MS, vec![job("other").key("k")])[0].clone().unwrap().deduplicated);
}

#[test]
fn an_atomic_batch_lists_the_jobs_of_every_full_queue() {
    let mut harness = Harness::with_policy(policy_with(|policy| {
        declare(policy, "a", |limits| limits.max_queue_depth = Some(1));
        declare(policy, "b", |limits| limits.max_queue_depth = Some(0));
    }));
    assert_eq!(
        harness.enqueue_atomic(NOW_MS, vec![job("a"), job("b"), job("a")]),
        Err(vec![(0, queue_full("a", 1)), (1, queue_full("b", 0)), (2, queue_full("a", 1)),])
    );
}

#[test]
fn an_atomic_batch_exactly_at_capacity_is_accepted() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(3)));
    harness.add(NOW_MS, job("q"));
    let responses = harness.enqueue_atomic(NOW_MS, vec![job("q"), job("q")]).unwrap();
    assert_eq!(responses.len(), 2);
    assert_eq!(harness.state.depths("q").ready, 3);
}

#[test]
fn atomic_capacity_counts_dedup_hits_as_new_jobs() {
    let mut harness = Harness::with_policy(policy_with(|policy| policy.defaults.max_queue_depth = Some(2)));
    harness.add(NOW_MS, job("q").key("k"));
    // Both jobs would be dedup hits, but capacity conservatively counts them: 1 + 2 > 2.
    assert_eq!(
        harness.enqueue_atomic(NOW_MS, vec![job("q").key("k"), job("q").key("k")]),
        Err(vec![(0, queue_full("q", 2)), (1, queue_full("q", 2))])
    );
}

#[test]
fn atomic_dead_letters_do_not_count_toward_capacity() {
    let mut harness = Harness::new(policy_with(|policy| policy.defaults.max_queue_depth = Some(1)), retention(60_000));
    let job_id = harness.add(NOW_MS, job("q"));
    harness.reserve_one(NOW_MS, "q", 1_000);
    harness.nack(NOW_MS, job_id, 1, NackStrategy::DeadLetter, None).unwrap();
    assert_eq!(harness.enqueue_atomic(NOW_MS, vec![job("q")]).unwrap().len(), 1);
}

#[test]
fn an_atomic_batch_is_accepted_in_submission_order() {
    let mut harness = Harness::default();
    let responses = harness.enqueue_atomic(NOW_MS, (0..5).map(|_| job("q")).collect()).unwrap();
    let submitted: Vec<JobId> = responses.iter().map(|response| response.job_id).collect();
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), submitted);
}
