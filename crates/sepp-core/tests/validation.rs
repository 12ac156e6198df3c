//! Enqueue validation stages A (structure), B (strict mode) and C (limits) of docs/protocol.md, the
//! batch-size checks of #enqueuebatch there, and the checks of a queue pause.

mod common;

use common::{JobBuilder, declare, job, policy_with};
use sepp_core::validate::{
    MAX_PAUSE_REASON_BYTES, pause_problem, queue_name_problem, validate_batch_size, validate_new_job,
};
use sepp_core::{CallError, NewJob, Payload, Policy, Primitive, Rejection, TraceContext};

const NOW_MS: i64 = 1_700_000_000_000;

fn check(policy: &Policy, job: &NewJob) -> Result<(), Rejection> {
    validate_new_job(policy, job, NOW_MS)
}

fn invalid(message: &str) -> Result<(), Rejection> {
    Err(Rejection::InvalidRequest { message: message.to_string() })
}

fn with_queue(queue: &str) -> NewJob {
    job(queue)
}

// ---- Stage A: structure ----

#[test]
fn a_minimal_job_is_valid() {
    assert_eq!(check(&Policy::default(), &job("emails")), Ok(()));
}

#[test]
fn an_empty_queue_name_is_invalid() {
    assert_eq!(check(&Policy::default(), &with_queue("")), invalid("queue must not be empty"));
}

#[test]
fn a_dot_or_dot_dot_queue_name_is_invalid() {
    let expected = invalid("queue must not be \".\" or \"..\"");
    assert_eq!(check(&Policy::default(), &with_queue(".")), expected);
    assert_eq!(check(&Policy::default(), &with_queue("..")), expected);
}

#[test]
fn dots_elsewhere_in_a_queue_name_are_fine() {
    for name in ["a.b", ".hidden", "...", "v1.2."] {
        assert_eq!(check(&Policy::default(), &with_queue(name)), Ok(()), "{name}");
    }
}

#[test]
fn a_queue_name_with_a_slash_is_invalid() {
    assert_eq!(check(&Policy::default(), &with_queue("a/b")), invalid("queue must not contain '/'"));
}

#[test]
fn a_queue_name_with_a_control_character_is_invalid() {
    for name in ["a\nb", "tab\t", "\u{7f}", "\u{85}next-line"] {
        assert_eq!(
            check(&Policy::default(), &with_queue(name)),
            invalid("queue must not contain control characters"),
            "{name:?}"
        );
    }
}

#[test]
fn queue_name_problems_are_phrased_with_the_given_subject() {
    assert_eq!(queue_name_problem("", "queues item").as_deref(), Some("queues item must not be empty"));
    assert_eq!(queue_name_problem("x/y", "queues item").as_deref(), Some("queues item must not contain '/'"));
    assert_eq!(queue_name_problem("fine.name", "queues item"), None);
}

#[test]
fn an_empty_job_type_is_invalid() {
    assert_eq!(check(&Policy::default(), &job("q").job_type("")), invalid("job_type must not be empty"));
}

#[test]
fn a_present_payload_with_empty_data_is_invalid() {
    assert_eq!(
        check(&Policy::default(), &job("q").payload(b"", "application/json")),
        invalid("payload.data must not be empty")
    );
}

#[test]
fn a_present_payload_with_an_empty_encoding_is_invalid() {
    assert_eq!(check(&Policy::default(), &job("q").payload(b"{}", "")), invalid("payload.encoding must not be empty"));
}

#[test]
fn empty_payload_data_is_reported_before_an_empty_encoding() {
    assert_eq!(check(&Policy::default(), &job("q").payload(b"", "")), invalid("payload.data must not be empty"));
}

#[test]
fn a_present_but_empty_idempotency_key_is_invalid() {
    assert_eq!(check(&Policy::default(), &job("q").key("")), invalid("idempotency_key must not be empty"));
}

#[test]
fn priority_nine_is_valid_and_ten_is_not() {
    assert_eq!(check(&Policy::default(), &job("q").priority(9)), Ok(()));
    assert_eq!(check(&Policy::default(), &job("q").priority(10)), invalid("priority must be <= 9"));
    assert_eq!(check(&Policy::default(), &job("q").priority(u32::MAX)), invalid("priority must be <= 9"));
}

#[test]
fn max_attempts_zero_is_invalid_and_one_is_valid() {
    assert_eq!(check(&Policy::default(), &job("q").max_attempts(0)), invalid("max_attempts must be >= 1"));
    assert_eq!(check(&Policy::default(), &job("q").max_attempts(1)), Ok(()));
}

#[test]
fn a_trace_context_with_an_empty_traceparent_is_invalid() {
    let mut new_job = job("q");
    new_job.trace_context = Some(TraceContext { traceparent: String::new(), tracestate: Some("vendor=1".into()) });
    assert_eq!(check(&Policy::default(), &new_job), invalid("trace_context.traceparent must not be empty"));
}

#[test]
fn an_empty_custom_key_is_invalid() {
    assert_eq!(
        check(&Policy::default(), &job("q").custom("", Primitive::Bool(true))),
        invalid("custom key must not be empty")
    );
}

#[test]
fn a_custom_entry_without_a_value_is_invalid_and_named() {
    let mut new_job = job("q");
    new_job.custom.insert("tenant".into(), None);
    assert_eq!(check(&Policy::default(), &new_job), invalid("custom[tenant] must set a value"));
}

#[test]
fn custom_entries_are_checked_in_key_order() {
    let mut unset_values = job("q");
    unset_values.custom.insert("zeta".into(), None);
    unset_values.custom.insert("alpha".into(), None);
    assert_eq!(check(&Policy::default(), &unset_values), invalid("custom[alpha] must set a value"));

    // The empty key sorts first, so its problem wins over a later unset value.
    let mut both = job("q");
    both.custom.insert("a".into(), None);
    both.custom.insert(String::new(), Some(Primitive::Int(1)));
    assert_eq!(check(&Policy::default(), &both), invalid("custom key must not be empty"));
}

/// A job that fails every structural check at once.
fn broken_everywhere() -> NewJob {
    let mut new_job = NewJob {
        queue: String::new(),
        job_type: String::new(),
        payload: Some(Payload { data: Vec::new(), encoding: String::new() }),
        idempotency_key: Some(String::new()),
        priority: Some(10),
        max_attempts: Some(0),
        trace_context: Some(TraceContext { traceparent: String::new(), tracestate: None }),
        ..NewJob::default()
    };
    new_job.custom.insert("k".into(), None);
    new_job
}

/// Fixes one problem of a job.
type Repair = fn(&mut NewJob);

#[test]
fn the_first_failing_structural_check_wins_in_table_order() {
    let policy = Policy::default();
    let mut new_job = broken_everywhere();
    let mut seen = Vec::new();
    // Repair each problem in turn; the message must walk A1..A9 in order.
    let repairs: Vec<(&str, Repair)> = vec![
        ("queue must not be empty", |j| j.queue = "q".into()),
        ("job_type must not be empty", |j| j.job_type = "t".into()),
        ("payload.data must not be empty", |j| j.payload.as_mut().unwrap().data = b"x".to_vec()),
        ("payload.encoding must not be empty", |j| j.payload.as_mut().unwrap().encoding = "raw".into()),
        ("idempotency_key must not be empty", |j| j.idempotency_key = Some("key".into())),
        ("priority must be <= 9", |j| j.priority = Some(9)),
        ("max_attempts must be >= 1", |j| j.max_attempts = Some(1)),
        ("trace_context.traceparent must not be empty", |j| {
            j.trace_context.as_mut().unwrap().traceparent = "00-abc-def-01".into()
        }),
        ("custom[k] must set a value", |j| {
            j.custom.insert("k".into(), Some(Primitive::Int(1)));
        }),
    ];
    for (message, repair) in repairs {
        assert_eq!(check(&policy, &new_job), invalid(message));
        seen.push(message);
        repair(&mut new_job);
    }
    assert_eq!(check(&policy, &new_job), Ok(()), "after repairing {seen:?}");
}

// ---- Stage B: strict mode ----

fn strict_policy() -> Policy {
    policy_with(|policy| {
        policy.server.strict_queues = true;
        declare(policy, "declared", |_| {});
    })
}

#[test]
fn strict_mode_rejects_an_undeclared_queue_with_its_name() {
    assert_eq!(check(&strict_policy(), &job("elsewhere")), Err(Rejection::UnknownQueue { queue: "elsewhere".into() }));
}

#[test]
fn strict_mode_accepts_a_declared_queue() {
    assert_eq!(check(&strict_policy(), &job("declared")), Ok(()));
}

#[test]
fn without_strict_mode_any_valid_queue_name_is_accepted() {
    let policy = policy_with(|policy| declare(policy, "declared", |_| {}));
    assert_eq!(check(&policy, &job("never-declared")), Ok(()));
}

#[test]
fn structural_problems_win_over_strict_mode() {
    assert_eq!(check(&strict_policy(), &job("elsewhere").priority(10)), invalid("priority must be <= 9"));
}

#[test]
fn strict_mode_wins_over_every_limit() {
    let policy = policy_with(|policy| {
        policy.server.strict_queues = true;
        policy.server.max_queue_name_bytes = 3;
        policy.defaults.max_payload_bytes = 1;
    });
    assert_eq!(
        check(&policy, &job("undeclared").payload(b"too big", "raw")),
        Err(Rejection::UnknownQueue { queue: "undeclared".into() })
    );
}

// ---- Stage C: limits ----

#[test]
fn a_queue_name_over_the_byte_limit_is_rejected_with_limit_and_actual() {
    let policy = policy_with(|policy| policy.server.max_queue_name_bytes = 4);
    assert_eq!(check(&policy, &with_queue("abcd")), Ok(()));
    // "é" is two bytes: five characters' worth of bytes in four characters.
    assert_eq!(check(&policy, &with_queue("abcé")), Err(Rejection::QueueNameTooLong { limit: 4, actual: 5 }));
}

#[test]
fn a_job_type_over_the_byte_limit_is_rejected_with_limit_and_actual() {
    let policy = policy_with(|policy| policy.server.max_job_type_bytes = 5);
    assert_eq!(check(&policy, &job("q").job_type("12345")), Ok(()));
    assert_eq!(
        check(&policy, &job("q").job_type("123456")),
        Err(Rejection::JobTypeNameTooLong { limit: 5, actual: 6 })
    );
}

#[test]
fn a_job_type_outside_the_queue_allow_list_is_rejected_with_the_list() {
    let policy = policy_with(|policy| {
        declare(policy, "mail", |limits| limits.allowed_job_types = Some(vec!["send".into(), "bounce".into()]))
    });
    assert_eq!(check(&policy, &job("mail").job_type("bounce")), Ok(()));
    assert_eq!(
        check(&policy, &job("mail").job_type("Send")),
        Err(Rejection::JobTypeNotAllowed { job_type: "Send".into(), allowed: vec!["send".into(), "bounce".into()] })
    );
    // Other queues have no allow list.
    assert_eq!(check(&policy, &job("other").job_type("anything")), Ok(()));
}

#[test]
fn an_idempotency_key_over_the_byte_limit_is_rejected_with_limit_and_actual() {
    let policy = policy_with(|policy| policy.server.max_idempotency_key_bytes = 3);
    assert_eq!(check(&policy, &job("q").key("abc")), Ok(()));
    assert_eq!(check(&policy, &job("q").key("abcd")), Err(Rejection::IdempotencyKeyTooLong { limit: 3, actual: 4 }));
}

#[test]
fn a_payload_over_the_queue_limit_is_rejected_with_limit_and_actual() {
    let policy = policy_with(|policy| {
        policy.defaults.max_payload_bytes = 100;
        declare(policy, "small", |limits| limits.max_payload_bytes = 4);
    });
    assert_eq!(check(&policy, &job("small").payload(b"1234", "raw")), Ok(()));
    assert_eq!(
        check(&policy, &job("small").payload(b"12345", "raw")),
        Err(Rejection::PayloadTooLarge { limit: 4, actual: 5 })
    );
    assert_eq!(check(&policy, &job("big").payload(b"12345", "raw")), Ok(()));
}

#[test]
fn an_encoding_outside_the_allow_list_is_rejected_by_exact_comparison() {
    let policy = policy_with(|policy| policy.defaults.allowed_encodings = Some(vec!["application/json".into()]));
    assert_eq!(check(&policy, &job("q").payload(b"{}", "application/json")), Ok(()));
    assert_eq!(
        check(&policy, &job("q").payload(b"{}", "application/JSON")),
        Err(Rejection::EncodingNotAllowed {
            encoding: "application/JSON".into(),
            allowed: vec!["application/json".into()]
        })
    );
}

#[test]
fn an_empty_encoding_allow_list_rejects_every_payload_but_not_jobs_without_one() {
    let policy =
        policy_with(|policy| declare(policy, "no-payloads", |limits| limits.allowed_encodings = Some(Vec::new())));
    assert_eq!(
        check(&policy, &job("no-payloads").payload(b"x", "raw")),
        Err(Rejection::EncodingNotAllowed { encoding: "raw".into(), allowed: Vec::new() })
    );
    assert_eq!(check(&policy, &job("no-payloads")), Ok(()));
}

#[test]
fn too_many_custom_entries_are_rejected_with_limit_and_actual() {
    let policy = policy_with(|policy| policy.defaults.max_custom_entries = 2);
    let two = job("q").custom("a", Primitive::Bool(true)).custom("b", Primitive::Bool(false));
    assert_eq!(check(&policy, &two), Ok(()));
    assert_eq!(
        check(&policy, &two.custom("c", Primitive::Int(3))),
        Err(Rejection::CustomEntriesTooMany { limit: 2, actual: 3 })
    );
}

#[test]
fn the_first_custom_key_over_the_byte_limit_is_named_in_key_order() {
    let policy = policy_with(|policy| policy.defaults.max_custom_key_bytes = 3);
    let new_job =
        job("q").custom("zzzzzz", Primitive::Int(1)).custom("bbbb", Primitive::Int(1)).custom("abc", Primitive::Int(1));
    assert_eq!(check(&policy, &new_job), Err(Rejection::CustomKeyTooLong { key: "bbbb".into(), limit: 3, actual: 4 }));
}

#[test]
fn the_custom_total_counts_key_bytes_plus_value_sizes() {
    // key bytes + value: "s"(1)+"hello"(5) + "d"(1)+8 + "i"(1)+8 + "b"(1)+1 = 26
    let custom = |new_job: NewJob| {
        new_job
            .custom("s", Primitive::String("hello".into()))
            .custom("d", Primitive::Double(0.5))
            .custom("i", Primitive::Int(-7))
            .custom("b", Primitive::Bool(true))
    };
    let at_limit = policy_with(|policy| policy.defaults.max_custom_total_bytes = 26);
    assert_eq!(check(&at_limit, &custom(job("q"))), Ok(()));
    let below = policy_with(|policy| policy.defaults.max_custom_total_bytes = 25);
    assert_eq!(check(&below, &custom(job("q"))), Err(Rejection::CustomMapTooLarge { limit: 25, actual: 26 }));
}

#[test]
fn a_custom_string_value_counts_its_bytes_not_its_characters() {
    let policy = policy_with(|policy| policy.defaults.max_custom_total_bytes = 4);
    // "k" (1) + "äb" (3) = 4 bytes: fits; "k" + "äbc" = 5.
    assert_eq!(check(&policy, &job("q").custom("k", Primitive::String("äb".into()))), Ok(()));
    assert_eq!(
        check(&policy, &job("q").custom("k", Primitive::String("äbc".into()))),
        Err(Rejection::CustomMapTooLarge { limit: 4, actual: 5 })
    );
}

#[test]
fn scheduled_at_beyond_the_horizon_is_rejected_with_horizon_and_requested_time() {
    let policy = policy_with(|policy| declare(policy, "soon", |limits| limits.max_schedule_horizon_ms = 1_000));
    assert_eq!(check(&policy, &job("soon").scheduled_at(NOW_MS + 1_000)), Ok(()));
    assert_eq!(
        check(&policy, &job("soon").scheduled_at(NOW_MS + 1_001)),
        Err(Rejection::ScheduledTooFar { horizon_ms: 1_000, actual_ms: NOW_MS + 1_001 })
    );
}

#[test]
fn scheduled_at_in_the_past_or_at_now_passes_validation() {
    for scheduled_at_ms in [NOW_MS, NOW_MS - 1, 0, i64::MIN] {
        assert_eq!(check(&Policy::default(), &job("q").scheduled_at(scheduled_at_ms)), Ok(()), "{scheduled_at_ms}");
    }
}

#[test]
fn a_far_future_scheduled_at_does_not_overflow_the_horizon_check() {
    assert_eq!(
        check(&Policy::default(), &job("q").scheduled_at(i64::MAX)),
        Err(Rejection::ScheduledTooFar { horizon_ms: 2_592_000_000, actual_ms: i64::MAX })
    );
}

/// A policy and a job that together fail every limit check at once.
fn over_every_limit() -> (Policy, NewJob) {
    let policy = policy_with(|policy| {
        policy.server.max_queue_name_bytes = 1;
        policy.server.max_job_type_bytes = 1;
        policy.server.max_idempotency_key_bytes = 1;
        declare(policy, "qq", |limits| {
            limits.allowed_job_types = Some(vec!["tt".into()]);
            limits.max_payload_bytes = 1;
            limits.allowed_encodings = Some(vec!["ok".into()]);
            limits.max_custom_entries = 1;
            limits.max_custom_key_bytes = 1;
            limits.max_custom_total_bytes = 1;
            limits.max_schedule_horizon_ms = 10;
        });
    });
    let new_job = job("qq")
        .job_type("tt")
        .key("kk")
        .payload(b"pp", "bad")
        .custom("kk", Primitive::Int(1))
        .custom("ll", Primitive::Int(1))
        .scheduled_at(NOW_MS + 11);
    (policy, new_job)
}

#[test]
fn the_first_failing_limit_check_wins_in_table_order() {
    let (mut policy, mut new_job) = over_every_limit();
    fn limits(policy: &mut Policy) -> &mut sepp_core::QueueLimits {
        policy.declared.get_mut("qq").unwrap()
    }

    assert_eq!(check(&policy, &new_job), Err(Rejection::QueueNameTooLong { limit: 1, actual: 2 }));
    policy.server.max_queue_name_bytes = 2;
    assert_eq!(check(&policy, &new_job), Err(Rejection::JobTypeNameTooLong { limit: 1, actual: 2 }));
    policy.server.max_job_type_bytes = 2;
    new_job.job_type = "tX".into();
    assert_eq!(
        check(&policy, &new_job),
        Err(Rejection::JobTypeNotAllowed { job_type: "tX".into(), allowed: vec!["tt".into()] })
    );
    new_job.job_type = "tt".into();
    assert_eq!(check(&policy, &new_job), Err(Rejection::IdempotencyKeyTooLong { limit: 1, actual: 2 }));
    policy.server.max_idempotency_key_bytes = 2;
    assert_eq!(check(&policy, &new_job), Err(Rejection::PayloadTooLarge { limit: 1, actual: 2 }));
    limits(&mut policy).max_payload_bytes = 2;
    assert_eq!(
        check(&policy, &new_job),
        Err(Rejection::EncodingNotAllowed { encoding: "bad".into(), allowed: vec!["ok".into()] })
    );
    new_job.payload.as_mut().unwrap().encoding = "ok".into();
    assert_eq!(check(&policy, &new_job), Err(Rejection::CustomEntriesTooMany { limit: 1, actual: 2 }));
    limits(&mut policy).max_custom_entries = 2;
    assert_eq!(check(&policy, &new_job), Err(Rejection::CustomKeyTooLong { key: "kk".into(), limit: 1, actual: 2 }));
    limits(&mut policy).max_custom_key_bytes = 2;
    assert_eq!(check(&policy, &new_job), Err(Rejection::CustomMapTooLarge { limit: 1, actual: 20 }));
    limits(&mut policy).max_custom_total_bytes = 20;
    assert_eq!(check(&policy, &new_job), Err(Rejection::ScheduledTooFar { horizon_ms: 10, actual_ms: NOW_MS + 11 }));
    limits(&mut policy).max_schedule_horizon_ms = 11;
    assert_eq!(check(&policy, &new_job), Ok(()));
}

#[test]
fn structural_problems_win_over_limits() {
    let (policy, mut new_job) = over_every_limit();
    new_job.max_attempts = Some(0);
    assert_eq!(check(&policy, &new_job), invalid("max_attempts must be >= 1"));
}

#[test]
fn limits_come_from_the_target_queue_declaration_else_the_globals() {
    let policy = policy_with(|policy| {
        policy.defaults.max_custom_entries = 1;
        declare(policy, "roomy", |limits| limits.max_custom_entries = 5);
    });
    let two_entries = |queue: &str| job(queue).custom("a", Primitive::Int(1)).custom("b", Primitive::Int(2));
    assert_eq!(check(&policy, &two_entries("roomy")), Ok(()));
    assert_eq!(check(&policy, &two_entries("plain")), Err(Rejection::CustomEntriesTooMany { limit: 1, actual: 2 }));
}

// ---- Batch size ----

#[test]
fn an_empty_batch_is_an_invalid_argument() {
    assert_eq!(
        validate_batch_size(&Policy::default(), 0),
        Err(CallError::InvalidArgument("batch must contain at least one job".into()))
    );
}

#[test]
fn a_batch_over_max_enqueue_batch_names_the_limit() {
    let policy = policy_with(|policy| policy.server.max_enqueue_batch = 3);
    assert_eq!(validate_batch_size(&policy, 3), Ok(()));
    assert_eq!(
        validate_batch_size(&policy, 4),
        Err(CallError::InvalidArgument("batch exceeds max_enqueue_batch (3)".into()))
    );
    assert_eq!(validate_batch_size(&policy, 1), Ok(()));
}

// ---- Labels ----

#[test]
fn every_rejection_has_the_label_of_spec_7_3() {
    let cases = [
        (Rejection::UnknownQueue { queue: "q".into() }, "unknown_queue"),
        (Rejection::PayloadTooLarge { limit: 1, actual: 2 }, "payload_too_large"),
        (Rejection::EncodingNotAllowed { encoding: "e".into(), allowed: Vec::new() }, "encoding_not_allowed"),
        (Rejection::JobTypeNotAllowed { job_type: "t".into(), allowed: Vec::new() }, "job_type_not_allowed"),
        (Rejection::CustomEntriesTooMany { limit: 1, actual: 2 }, "custom_entries_too_many"),
        (Rejection::CustomMapTooLarge { limit: 1, actual: 2 }, "custom_map_too_large"),
        (Rejection::CustomKeyTooLong { key: "k".into(), limit: 1, actual: 2 }, "custom_key_too_long"),
        (Rejection::QueueNameTooLong { limit: 1, actual: 2 }, "queue_name_too_long"),
        (Rejection::JobTypeNameTooLong { limit: 1, actual: 2 }, "job_type_name_too_long"),
        (Rejection::IdempotencyKeyTooLong { limit: 1, actual: 2 }, "idempotency_key_too_long"),
        (Rejection::ScheduledTooFar { horizon_ms: 1, actual_ms: 2 }, "scheduled_too_far"),
        (Rejection::InvalidRequest { message: "m".into() }, "invalid_request"),
        (Rejection::QueueFull { queue: "q".into(), limit: 0 }, "queue_full"),
        (Rejection::QueueClosing { queue: "q".into() }, "queue_closing"),
    ];
    for (rejection, label) in cases {
        assert_eq!(rejection.label(), label, "{rejection:?}");
    }
}

/// A pause names a valid queue (or every queue), ends in the future if it ends, and keeps a
/// bounded reason; the first problem is the one reported.
#[test]
fn a_pause_needs_a_valid_queue_a_future_end_and_a_bounded_reason() {
    assert_eq!(pause_problem("q", None, None, NOW_MS), None);
    assert_eq!(pause_problem(sepp_core::ALL_QUEUES, Some(NOW_MS + 1), Some("deploy"), NOW_MS), None);
    assert_eq!(pause_problem("..", None, None, NOW_MS), Some("queue must not be \".\" or \"..\"".to_owned()));
    assert_eq!(
        pause_problem("q", Some(NOW_MS), None, NOW_MS),
        Some(format!("the pause's end {NOW_MS} is not in the future (the server's time is {NOW_MS})"))
    );
    let long = "x".repeat(MAX_PAUSE_REASON_BYTES + 1);
    assert_eq!(pause_problem("q", None, Some(&long), NOW_MS), Some("reason is longer than 1024 bytes".to_owned()));
    assert_eq!(pause_problem("q", None, Some(&long[1..]), NOW_MS), None);
    assert_eq!(pause_problem("a/b", Some(0), Some(&long), NOW_MS), Some("queue must not contain '/'".to_owned()));
}
