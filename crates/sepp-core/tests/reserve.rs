//! Reserve (docs/protocol.md#reserve): argument checks and their order, clamps, and the claim order (priority,
//! exact FIFO of docs/protocol.md#ordering, queues in listed order).

mod common;

use common::{Harness, JobBuilder, declare, job, job_id, payload_of, policy_with};
use sepp_core::validate::{ReservePlan, ReserveRequest, plan_reserve};
use sepp_core::{CallError, Depths, JobState, Policy, TimeMs};

const NOW_MS: TimeMs = 5_000_000;

fn request(queues: &[&str]) -> ReserveRequest {
    ReserveRequest {
        queues: queues.iter().map(|queue| queue.to_string()).collect(),
        wait_timeout_ms: None,
        lease_duration_ms: Some(30_000),
        worker_id: None,
        max_jobs: None,
    }
}

fn invalid_argument(message: &str) -> CallError {
    CallError::InvalidArgument(message.to_string())
}

fn plan(policy: &Policy, request: ReserveRequest) -> ReservePlan {
    plan_reserve(policy, request).expect("valid reserve")
}

// ---- Reserve: validation ----

#[test]
fn reserve_without_queues_is_rejected() {
    assert_eq!(
        plan_reserve(&Policy::default(), request(&[])),
        Err(invalid_argument("queues must contain at least 1 item"))
    );
}

#[test]
fn reserve_with_an_invalid_queue_name_is_rejected_as_a_queues_item() {
    let cases = [
        ("", "queues item must not be empty"),
        ("..", "queues item must not be \".\" or \"..\""),
        ("a/b", "queues item must not contain '/'"),
        ("a\u{0}", "queues item must not contain control characters"),
    ];
    for (name, message) in cases {
        assert_eq!(
            plan_reserve(&Policy::default(), request(&["fine", name])),
            Err(invalid_argument(message)),
            "{name:?}"
        );
    }
}

#[test]
fn reserve_with_a_negative_wait_is_rejected() {
    let mut negative = request(&["q"]);
    negative.wait_timeout_ms = Some(-1);
    assert_eq!(plan_reserve(&Policy::default(), negative), Err(invalid_argument("wait_timeout must not be negative")));
}

#[test]
fn reserve_requires_a_positive_lease_duration() {
    let mut unset = request(&["q"]);
    unset.lease_duration_ms = None;
    assert_eq!(plan_reserve(&Policy::default(), unset), Err(invalid_argument("lease_duration is required")));
    for lease in [0, -5] {
        let mut not_positive = request(&["q"]);
        not_positive.lease_duration_ms = Some(lease);
        assert_eq!(
            plan_reserve(&Policy::default(), not_positive),
            Err(invalid_argument("lease_duration must be greater than 0"))
        );
    }
}

#[test]
fn reserve_with_an_empty_worker_id_is_rejected() {
    let mut empty = request(&["q"]);
    empty.worker_id = Some(String::new());
    assert_eq!(plan_reserve(&Policy::default(), empty), Err(invalid_argument("worker_id must not be empty")));
    let mut named = request(&["q"]);
    named.worker_id = Some("worker-1".into());
    assert!(plan_reserve(&Policy::default(), named).is_ok());
}

#[test]
fn reserve_with_max_jobs_zero_is_rejected() {
    let mut zero = request(&["q"]);
    zero.max_jobs = Some(0);
    assert_eq!(plan_reserve(&Policy::default(), zero), Err(invalid_argument("max_jobs must be >= 1")));
}

#[test]
fn reserve_over_max_reserve_queues_names_the_limit() {
    let policy = policy_with(|policy| policy.server.max_reserve_queues = 2);
    assert!(plan_reserve(&policy, request(&["a", "b"])).is_ok());
    assert_eq!(
        plan_reserve(&policy, request(&["a", "b", "c"])),
        Err(invalid_argument("reserve exceeds max_reserve_queues (2)"))
    );
}

#[test]
fn reserve_with_a_queue_name_over_the_byte_limit_names_the_queue_and_the_limit() {
    let policy = policy_with(|policy| policy.server.max_queue_name_bytes = 7);
    assert!(plan_reserve(&policy, request(&["seven77"])).is_ok());
    let Err(CallError::InvalidArgument(message)) = plan_reserve(&policy, request(&["ok", "eight888"])) else {
        panic!("expected an invalid argument");
    };
    assert!(message.contains("eight888"), "{message}");
    assert!(message.contains('7'), "{message}");
}

#[test]
fn strict_reserve_of_undeclared_queues_is_a_failed_precondition_naming_them() {
    let policy = policy_with(|policy| {
        policy.server.strict_queues = true;
        declare(policy, "known", |_| {});
    });
    assert!(plan_reserve(&policy, request(&["known"])).is_ok());
    let Err(CallError::FailedPrecondition(message)) = plan_reserve(&policy, request(&["ghost", "known", "phantom"]))
    else {
        panic!("expected a failed precondition");
    };
    assert!(message.contains("ghost") && message.contains("phantom"), "{message}");
    assert!(!message.contains("known"), "{message}");
}

#[test]
fn reserve_checks_run_in_the_documented_order() {
    let policy = policy_with(|policy| {
        policy.server.strict_queues = true;
        policy.server.max_reserve_queues = 1;
        policy.server.max_queue_name_bytes = 1;
    });
    let mut bad = ReserveRequest {
        queues: vec!["a/b".into(), "long-undeclared".into()],
        wait_timeout_ms: Some(-1),
        lease_duration_ms: None,
        worker_id: Some(String::new()),
        max_jobs: Some(0),
    };
    let expect = |bad: &ReserveRequest, message: &str| {
        assert_eq!(plan_reserve(&policy, bad.clone()), Err(invalid_argument(message)));
    };
    expect(&bad, "queues item must not contain '/'");
    bad.queues[0] = "ab".into();
    expect(&bad, "wait_timeout must not be negative");
    bad.wait_timeout_ms = None;
    expect(&bad, "lease_duration is required");
    bad.lease_duration_ms = Some(0);
    expect(&bad, "lease_duration must be greater than 0");
    bad.lease_duration_ms = Some(10);
    expect(&bad, "worker_id must not be empty");
    bad.worker_id = None;
    expect(&bad, "max_jobs must be >= 1");
    bad.max_jobs = None;
    expect(&bad, "reserve exceeds max_reserve_queues (1)");
    bad.queues.pop();
    assert!(
        matches!(plan_reserve(&policy, bad.clone()), Err(CallError::InvalidArgument(message)) if message.contains("ab"))
    );
    bad.queues[0] = "a".into();
    assert!(matches!(plan_reserve(&policy, bad), Err(CallError::FailedPrecondition(_))));
}

// ---- Reserve: clamps ----

#[test]
fn the_lease_is_clamped_to_the_smallest_max_among_the_listed_queues() {
    let policy = policy_with(|policy| {
        policy.defaults.max_lease_duration_ms = 60_000;
        declare(policy, "short", |limits| limits.max_lease_duration_ms = 2_000);
        declare(policy, "medium", |limits| limits.max_lease_duration_ms = 9_000);
    });
    let mut long = request(&["plain", "medium", "short"]);
    long.lease_duration_ms = Some(50_000);
    assert_eq!(plan(&policy, long).lease_ms, 2_000);
    let mut without_short = request(&["plain", "medium"]);
    without_short.lease_duration_ms = Some(50_000);
    assert_eq!(plan(&policy, without_short).lease_ms, 9_000);
    let mut under_every_cap = request(&["plain", "short"]);
    under_every_cap.lease_duration_ms = Some(1_500);
    assert_eq!(plan(&policy, under_every_cap).lease_ms, 1_500);
}

#[test]
fn a_one_millisecond_lease_is_not_already_expired() {
    let mut harness = Harness::default();
    let job_id = harness.add(NOW_MS, job("q"));
    let delivery = harness.reserve_one(NOW_MS, "q", 1);
    assert_eq!(delivery.lease_deadline_ms, NOW_MS + 1);
    assert!(harness.sweep(NOW_MS).is_empty());
    assert_eq!(harness.ack(job_id, 1), Ok(()));
}

#[test]
fn a_lease_cap_below_one_millisecond_still_leases_for_one() {
    let policy = policy_with(|policy| policy.defaults.max_lease_duration_ms = 0);
    assert_eq!(plan(&policy, request(&["q"])).lease_ms, 1);
}

#[test]
fn max_jobs_defaults_to_one_and_is_clamped_to_max_reserve_batch() {
    let policy = policy_with(|policy| policy.server.max_reserve_batch = 4);
    assert_eq!(plan(&policy, request(&["q"])).max_jobs, 1);
    let mut many = request(&["q"]);
    many.max_jobs = Some(1_000);
    assert_eq!(plan(&policy, many).max_jobs, 4);
    let mut few = request(&["q"]);
    few.max_jobs = Some(3);
    assert_eq!(plan(&policy, few).max_jobs, 3);
}

#[test]
fn the_wait_defaults_to_zero_and_is_clamped_to_max_wait_timeout() {
    let policy = policy_with(|policy| policy.server.max_wait_timeout_ms = 20_000);
    assert_eq!(plan(&policy, request(&["q"])).wait_ms, 0);
    let mut long = request(&["q"]);
    long.wait_timeout_ms = Some(90_000);
    assert_eq!(plan(&policy, long).wait_ms, 20_000);
    let mut short = request(&["q"]);
    short.wait_timeout_ms = Some(750);
    assert_eq!(plan(&policy, short).wait_ms, 750);
}

#[test]
fn the_plan_keeps_the_queues_in_listed_order() {
    assert_eq!(
        plan(&Policy::default(), request(&["c", "a", "b"])).queues,
        vec!["c".to_string(), "a".into(), "b".into()]
    );
}

// ---- Reserve: claiming ----

#[test]
fn higher_priority_jobs_are_reserved_first() {
    let mut harness = Harness::default();
    let low = harness.add(NOW_MS, job("q").priority(1));
    let high = harness.add(NOW_MS + 1, job("q").priority(9));
    let middle = harness.add(NOW_MS + 2, job("q").priority(5));
    let default = harness.add(NOW_MS + 3, job("q"));
    assert_eq!(harness.reserve_ids(NOW_MS + 3, &["q"], 10), vec![high, middle, low, default]);
}

#[test]
fn ready_jobs_are_fifo_within_a_priority_even_within_one_batch() {
    let mut harness = Harness::default();
    // The harness hands out decreasing ids: id order is the reverse of submission order.
    let submitted = harness.add_all(NOW_MS, (0..20).map(|_| job("q").priority(3)).collect());
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 20), submitted);
}

#[test]
fn fifo_follows_acceptance_order_not_job_id_order() {
    let mut harness = Harness::default();
    let ids = [job_id(1), job_id(900), job_id(5)];
    let mut records = Vec::new();
    harness.state.enqueue(NOW_MS, ids.iter().map(|id| (*id, job("q"))).collect(), &mut records);
    harness.records.extend(records);
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 3), ids.to_vec());
}

#[test]
fn fifo_holds_across_batches_and_priorities_mixed() {
    let mut harness = Harness::default();
    let first = harness.add_all(NOW_MS, vec![job("q").priority(2), job("q").priority(7), job("q").priority(2)]);
    let second = harness.add_all(NOW_MS, vec![job("q").priority(7), job("q").priority(2)]);
    assert_eq!(harness.reserve_ids(NOW_MS, &["q"], 5), vec![first[1], second[0], first[0], first[2], second[1]]);
}

#[test]
fn queues_are_drained_in_listed_order() {
    let mut harness = Harness::default();
    let a = harness.add_all(NOW_MS, vec![job("a"), job("a")]);
    let b = harness.add_all(NOW_MS, vec![job("b").priority(9), job("b")]);
    let c = harness.add_all(NOW_MS, vec![job("c"), job("c")]);
    // Listed order wins over priority: b's priority-9 job waits until c and a are empty.
    assert_eq!(harness.reserve_ids(NOW_MS, &["c", "a", "b"], 5), vec![c[0], c[1], a[0], a[1], b[0]]);
    assert_eq!(harness.reserve_ids(NOW_MS, &["c", "a", "b"], 5), vec![b[1]]);
}

#[test]
fn a_reserve_stops_at_max_jobs_even_when_earlier_queues_have_more() {
    let mut harness = Harness::default();
    let a = harness.add_all(NOW_MS, vec![job("a"), job("a"), job("a")]);
    harness.add(NOW_MS, job("b"));
    assert_eq!(harness.reserve_ids(NOW_MS, &["a", "b"], 2), vec![a[0], a[1]]);
    assert_eq!(harness.state.depths("b").ready, 1);
}

#[test]
fn reserving_from_empty_or_unknown_queues_returns_nothing_and_writes_nothing() {
    let mut harness = Harness::default();
    harness.add(NOW_MS, job("elsewhere"));
    let before = harness.records.len();
    assert!(harness.reserve(NOW_MS, &["nothing", "here"], 10, 1_000).is_empty());
    assert!(harness.records_since(before).is_empty());
}

#[test]
fn a_delivery_carries_the_job_its_attempt_and_the_lease_deadline() {
    let policy = policy_with(|policy| declare(policy, "q", |limits| limits.max_lease_duration_ms = 4_000));
    let mut harness = Harness::with_policy(policy);
    let job_id = harness.add(NOW_MS - 100, job("q").priority(4).payload(b"data", "raw"));
    let delivery = harness.reserve_one(NOW_MS, "q", 10_000);
    assert_eq!(delivery.job.id, job_id);
    assert_eq!(&*delivery.job.queue, "q");
    assert_eq!(delivery.job.enqueued_at_ms, NOW_MS - 100);
    assert_eq!(delivery.job.priority, 4);
    assert_eq!(payload_of(&delivery.job), Some((b"data".to_vec(), "raw".to_string())));
    assert_eq!(delivery.attempt, 1);
    assert_eq!(delivery.lease_deadline_ms, NOW_MS + 4_000);
    assert_eq!(
        harness.state.job_state(&job_id),
        Some(JobState::Inflight { attempt: 1, lease_deadline_ms: NOW_MS + 4_000 })
    );
    assert_eq!(harness.state.depths("q"), Depths { inflight: 1, ..Depths::default() });
}

#[test]
fn every_job_of_one_reserve_shares_the_lease_deadline() {
    let mut harness = Harness::default();
    harness.add_all(NOW_MS, vec![job("a"), job("b")]);
    let deliveries = harness.reserve(NOW_MS, &["a", "b"], 2, 7_000);
    let deadlines: Vec<TimeMs> = deliveries.iter().map(|delivery| delivery.lease_deadline_ms).collect();
    assert_eq!(deadlines, vec![NOW_MS + 7_000, NOW_MS + 7_000]);
}
