//! Operator actions and listings: peek pages and cursors, admin dead-lettering, requeue and
//! delete of dead letters, close tombstones, purge, bulk actions, the audit log and the totals.
//! Every harness also checks, when dropped, that replay and the snapshot rebuild its state.

mod common;

use common::{Harness, JobBuilder, job, retention};
use sepp_core::validate::NackStrategy;
use sepp_core::{
    AuditDraft, AuditQuery, BulkAction, BulkError, CLOSE_GRACE_MS, DeadLetterCause, JobFilter, JobId, JobKey, JobState,
    PEEK_SCAN_LIMIT, PeekState, Peeked, Primitive, QueueTotals, Record, Rejection,
};

const NOW_MS: i64 = 5_000_000;

fn ids_of(page: &sepp_core::PeekPage) -> Vec<JobId> {
    page.jobs.iter().map(|(_, peeked)| peeked.job().id).collect()
}

fn keys(page: &sepp_core::PeekPage) -> Vec<Option<JobKey>> {
    page.jobs.iter().map(|(key, _)| Some(*key)).collect()
}

fn no_filter() -> JobFilter {
    JobFilter::default()
}

/// A harness with dead-letter retention on and `count` dead letters in `queue`.
fn with_dead_letters(queue: &str, count: usize) -> (Harness, Vec<JobId>) {
    let mut harness = Harness::with_rules(retention(3_600_000));
    let ids = harness.add_all(NOW_MS, (0..count).map(|_| job(queue).max_attempts(1)).collect());
    for delivery in harness.reserve(NOW_MS, &[queue], count as u32, 1_000) {
        harness.nack(NOW_MS + 1, delivery.job.id, 1, NackStrategy::DeadLetter, Some("bad")).unwrap();
    }
    (harness, ids)
}

fn dead_page(harness: &Harness, queue: &str) -> sepp_core::PeekPage {
    harness.state.peek(queue, PeekState::DeadLetter, None, 100, &no_filter()).unwrap()
}

// ---- peek ------------------------------------------------------------------------------------

#[test]
fn ready_pages_follow_reservation_order_and_give_a_cursor_only_when_more_remain() {
    let mut harness = Harness::default();
    let low = harness.add_all(NOW_MS, (0..3).map(|_| job("q")).collect());
    let high = harness.add(NOW_MS, job("q").priority(5));
    let first = harness.state.peek("q", PeekState::Ready, None, 2, &no_filter()).unwrap();
    assert_eq!(ids_of(&first), [high, low[0]]);
    let cursor = first.next_cursor.expect("more remain");
    let second = harness.state.peek("q", PeekState::Ready, Some(&cursor), 2, &no_filter()).unwrap();
    assert_eq!(ids_of(&second), [low[1], low[2]]);
    assert_eq!(second.next_cursor, None, "a full last page of ready jobs has no cursor");
    assert!(!second.truncated);
    let reserved: Vec<JobId> = harness.reserve_ids(NOW_MS, &["q"], 4);
    assert_eq!(reserved, [high, low[0], low[1], low[2]], "the listing is the order reserve takes");
}

#[test]
fn the_limit_is_clamped_to_one_through_a_hundred() {
    let mut harness = Harness::default();
    harness.add_all(NOW_MS, (0..150).map(|_| job("q")).collect());
    let page = |limit| harness.state.peek("q", PeekState::Ready, None, limit, &no_filter()).unwrap().jobs.len();
    assert_eq!(page(0), 1);
    assert_eq!(page(1_000), 100);
}

#[test]
fn scheduled_pages_walk_the_server_wide_schedule_and_stop_at_the_scan_limit() {
    let mut harness = Harness::default();
    // Other queues' jobs are due first: more of them than one page may examine.
    let others: Vec<_> =
        (0..PEEK_SCAN_LIMIT + 5).map(|n| job("other").scheduled_at(NOW_MS + 1_000 + n as i64)).collect();
    for chunk in others.chunks(1_000) {
        harness.add_all(NOW_MS, chunk.to_vec());
    }
    let mine = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 900_000));
    let first = harness.state.peek("q", PeekState::Scheduled, None, 10, &no_filter()).unwrap();
    assert!(first.jobs.is_empty() && first.truncated, "the scan limit ends the page early");
    let cursor = first.next_cursor.expect("a truncated page says where to go on");
    assert!(matches!(cursor, JobKey::Scheduled { .. }));
    let second = harness.state.peek("q", PeekState::Scheduled, Some(&cursor), 10, &no_filter()).unwrap();
    assert_eq!(ids_of(&second), [mine]);
    assert!(!second.truncated);
    assert_eq!(second.next_cursor, None);
}

#[test]
fn a_full_page_of_a_time_ordered_state_always_gives_a_cursor() {
    let mut harness = Harness::default();
    let ids = harness.add_all(NOW_MS, (1..=2).map(|n| job("q").scheduled_at(NOW_MS + n * 10)).collect());
    let page = harness.state.peek("q", PeekState::Scheduled, None, 2, &no_filter()).unwrap();
    assert_eq!(ids_of(&page), ids);
    let cursor = page.next_cursor.expect("a full page gives a cursor");
    let after = harness.state.peek("q", PeekState::Scheduled, Some(&cursor), 2, &no_filter()).unwrap();
    assert!(after.jobs.is_empty() && after.next_cursor.is_none(), "possibly followed by an empty page");
}

#[test]
fn in_flight_pages_show_the_current_lease_and_a_cursor_of_another_state_is_refused() {
    let mut harness = Harness::default();
    let id = harness.add(NOW_MS, job("q"));
    harness.reserve(NOW_MS, &["q"], 1, 1_000);
    harness.extend(NOW_MS + 10, id, 1, 5_000).unwrap();
    let page = harness.state.peek("q", PeekState::Inflight, None, 10, &no_filter()).unwrap();
    let [(key, Peeked::Live { state, .. })] = page.jobs.as_slice() else { panic!("{page:?}") };
    assert_eq!(*state, JobState::Inflight { attempt: 1, lease_deadline_ms: NOW_MS + 5_010 });
    assert!(matches!(key, JobKey::Inflight { lease_deadline_ms, .. } if *lease_deadline_ms == NOW_MS + 5_010));
    assert!(harness.state.peek("q", PeekState::Ready, Some(key), 10, &no_filter()).is_err());
}

#[test]
fn filters_keep_jobs_of_one_type_and_custom_value() {
    let mut harness = Harness::default();
    let wanted = harness.add(NOW_MS, job("q").job_type("sms").custom("tenant", Primitive::Int(7)));
    harness.add(NOW_MS, job("q").job_type("sms").custom("tenant", Primitive::Int(8)));
    harness.add(NOW_MS, job("q").job_type("email").custom("tenant", Primitive::Int(7)));
    let filter = JobFilter { job_type: Some("sms".into()), custom: vec![("tenant".into(), "7".into())] };
    let page = harness.state.peek("q", PeekState::Ready, None, 10, &filter).unwrap();
    assert_eq!(ids_of(&page), [wanted]);
    assert_eq!(harness.state.count_matching("q", PeekState::Ready, None, &filter, 100), Ok((1, None)));
    assert_eq!(harness.state.count_matching("q", PeekState::Ready, None, &no_filter(), 1), Ok((3, None)));
}

#[test]
fn a_filtered_count_goes_on_from_its_cursor_when_the_scan_limit_stops_it() {
    let mut harness = Harness::default();
    harness.add_all(NOW_MS, (0..5).map(|n| job("q").custom("n", Primitive::Int(n % 2))).collect());
    let filter = JobFilter { job_type: None, custom: vec![("n".into(), "0".into())] };
    let (first, cursor) = harness.state.count_matching("q", PeekState::Ready, None, &filter, 3).unwrap();
    assert_eq!(first, 2);
    let cursor = cursor.expect("entries remain");
    assert_eq!(harness.state.count_matching("q", PeekState::Ready, Some(&cursor), &filter, 3), Ok((1, None)));
}

#[test]
fn job_lookups_find_live_jobs_and_dead_letters_only_by_their_current_key() {
    let (mut harness, ids) = with_dead_letters("q", 1);
    let live = harness.add(NOW_MS, job("q"));
    assert!(matches!(harness.state.find_job(&live), Some((_, JobState::Ready { attempt: 1 }))));
    assert_eq!(harness.state.find_job(&ids[0]), None, "dead letters are not live jobs");
    let page = dead_page(&harness, "q");
    let key = page.jobs[0].0;
    assert_eq!(harness.state.find_dead_letter("q", &key).map(|dead| dead.job.id), Some(ids[0]));
    assert!(harness.state.find_dead_letter("other", &key).is_none(), "another queue's key");
    let JobKey::DeadLetter { job_id, failed_at_ms } = key else { panic!() };
    let stale = JobKey::DeadLetter { job_id, failed_at_ms: failed_at_ms + 1 };
    assert!(harness.state.find_dead_letter("q", &stale).is_none());
}

// ---- admin dead-letter, requeue, delete -------------------------------------------------------

#[test]
fn admin_dead_letter_takes_ready_and_scheduled_jobs_of_the_queue_only() {
    let mut harness = Harness::with_rules(retention(3_600_000));
    let ready = harness.add(NOW_MS, job("q"));
    let scheduled = harness.add(NOW_MS, job("q").scheduled_at(NOW_MS + 60_000));
    let other = harness.add(NOW_MS, job("other"));
    let ready_page = harness.state.peek("q", PeekState::Ready, None, 10, &no_filter()).unwrap();
    let other_page = harness.state.peek("other", PeekState::Ready, None, 10, &no_filter()).unwrap();
    let mut handles = keys(&ready_page);
    handles.push(None); // malformed
    handles.extend(keys(&other_page));
    let touched = harness.state.dead_letter_jobs(
        NOW_MS + 5,
        "q",
        PeekState::Ready,
        &handles,
        Some("stuck".into()),
        &mut harness.records,
    );
    assert_eq!(touched.job_ids, [ready]);
    assert_eq!(touched.missing, 2);
    let scheduled_page = harness.state.peek("q", PeekState::Scheduled, None, 10, &no_filter()).unwrap();
    let wrong_state = harness.state.dead_letter_jobs(
        NOW_MS + 5,
        "q",
        PeekState::Ready,
        &keys(&scheduled_page),
        None,
        &mut harness.records,
    );
    assert_eq!((wrong_state.job_ids.len(), wrong_state.missing), (0, 1), "a scheduled job asked for as ready");
    let touched = harness.state.dead_letter_jobs(
        NOW_MS + 6,
        "q",
        PeekState::Scheduled,
        &keys(&scheduled_page),
        None,
        &mut harness.records,
    );
    assert_eq!(touched.job_ids, [scheduled]);
    let dead = dead_page(&harness, "q");
    let Peeked::Dead(first) = &dead.jobs[0].1 else { panic!() };
    assert_eq!(
        (first.job.id, first.cause, first.last_reason.as_deref()),
        (ready, DeadLetterCause::Admin, Some("stuck"))
    );
    assert_eq!(first.failed_at_ms, NOW_MS + 5);
    assert!(harness.state.find_job(&other).is_some());
}

#[test]
fn admin_dead_letter_with_retention_off_deletes_the_job() {
    let mut harness = Harness::default();
    harness.add(NOW_MS, job("q"));
    let page = harness.state.peek("q", PeekState::Ready, None, 10, &no_filter()).unwrap();
    let touched =
        harness.state.dead_letter_jobs(NOW_MS, "q", PeekState::Ready, &keys(&page), None, &mut harness.records);
    assert_eq!(touched.job_ids.len(), 1);
    assert_eq!(harness.state.depths("q"), Default::default());
}

#[test]
fn a_requeued_dead_letter_is_a_fresh_first_attempt_behind_the_ready_jobs() {
    let mut harness = Harness::with_rules(retention(3_600_000));
    let id = harness
        .add(NOW_MS, job("q").max_attempts(2).priority(3).scheduled_at(NOW_MS - 10).custom("k", Primitive::Bool(true)));
    harness.reserve(NOW_MS, &["q"], 1, 1_000);
    harness.nack(NOW_MS, id, 1, NackStrategy::DeadLetter, Some("x")).unwrap();
    let waiting = harness.add(NOW_MS + 1, job("q").priority(3));
    let dead = dead_page(&harness, "q");
    let requeued_at = NOW_MS + 100;
    let touched = harness.state.requeue_dead_letters(requeued_at, "q", &keys(&dead), &mut harness.records);
    assert_eq!((touched.job_ids.as_slice(), touched.missing), ([id].as_slice(), 0));
    let (job, state) = harness.state.find_job(&id).expect("live again");
    assert_eq!(state, JobState::Ready { attempt: 1 });
    assert_eq!((job.enqueued_at_ms, job.scheduled_at_ms), (requeued_at, None));
    assert_eq!((job.priority, job.max_attempts, job.custom.get("k")), (3, 2, Some(&Primitive::Bool(true))));
    assert_eq!(harness.reserve_ids(requeued_at, &["q"], 2), [waiting, id], "behind the job ready before it");
    // The same handle again names nothing.
    let again = harness.state.requeue_dead_letters(requeued_at, "q", &keys(&dead), &mut harness.records);
    assert_eq!((again.job_ids.len(), again.missing), (0, 1));
}

#[test]
fn requeue_bypasses_the_depth_cap_and_a_close_tombstone() {
    let (mut harness, ids) = with_dead_letters("q", 1);
    let mut policy = (**harness.state.policy()).clone();
    policy.defaults.max_queue_depth = Some(0);
    harness.state.set_policy(std::sync::Arc::new(policy));
    harness.state.close_queue(NOW_MS, "q", CLOSE_GRACE_MS, &mut harness.records);
    let dead = dead_page(&harness, "q");
    let touched = harness.state.requeue_dead_letters(NOW_MS + 2, "q", &keys(&dead), &mut harness.records);
    assert_eq!(touched.job_ids, ids);
}

#[test]
fn deleting_dead_letters_counts_the_handles_that_named_nothing() {
    let (mut harness, ids) = with_dead_letters("q", 2);
    let mut handles = keys(&dead_page(&harness, "q"));
    handles.push(handles[0]);
    let touched = harness.state.delete_dead_letters("other", &handles, &mut harness.records);
    assert_eq!((touched.job_ids.len(), touched.missing), (0, 3), "another queue's path");
    let touched = harness.state.delete_dead_letters("q", &handles, &mut harness.records);
    let mut deleted = touched.job_ids.clone();
    deleted.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!((deleted, touched.missing), (expected, 1));
    assert_eq!(harness.state.depths("q"), Default::default());
}

// ---- close tombstones and purge ----------------------------------------------------------------

#[test]
fn a_closing_queue_refuses_enqueues_before_dedup_until_reopened_or_expired() {
    let mut harness = Harness::default();
    harness.add(NOW_MS, job("q").key("k"));
    harness.state.close_queue(NOW_MS, "q", 1_000, &mut harness.records);
    let refused = harness.enqueue(NOW_MS + 1, vec![job("q").key("k"), job("other")]);
    assert_eq!(refused[0], Err(Rejection::QueueClosing { queue: "q".into() }), "even a dedup hit");
    assert!(refused[1].is_ok());
    let atomic = harness.enqueue_atomic(NOW_MS + 1, vec![job("other"), job("q")]);
    assert_eq!(atomic, Err(vec![(1, Rejection::QueueClosing { queue: "q".into() })]));
    assert_eq!(harness.state.next_deadline_ms(), Some(NOW_MS + 1_000));
    let report = harness.sweep(NOW_MS + 1_000);
    assert_eq!(report.tombstones_expired, 1);
    assert!(harness.enqueue(NOW_MS + 1_001, vec![job("q")])[0].is_ok());
    harness.state.close_queue(NOW_MS + 2_000, "q", 1_000, &mut harness.records);
    harness.state.reopen_queue("q", &mut harness.records);
    assert!(!harness.state.is_closing("q", NOW_MS + 2_001));
}

#[test]
fn a_purge_refuses_while_jobs_are_in_flight() {
    let mut harness = Harness::default();
    harness.add_all(NOW_MS, vec![job("q"), job("q")]);
    harness.reserve(NOW_MS, &["q"], 1, 1_000);
    let before = harness.records.len();
    let step = harness.state.purge_step("q", &mut harness.records);
    assert_eq!((step.removed, step.inflight, step.done), (0, 1, false));
    assert_eq!(harness.records.len(), before, "nothing was removed");
}

#[test]
fn a_purge_removes_everything_of_the_queue_in_chunks() {
    let (mut harness, _) = with_dead_letters("q", 3);
    for chunk in 0..2 {
        let jobs = (0..700).map(|n| if n % 2 == 0 { job("q") } else { job("q").scheduled_at(NOW_MS + 60_000) });
        harness.add_all(NOW_MS + chunk, jobs.collect());
    }
    harness.add(NOW_MS, job("q").key("once"));
    let keep = harness.add(NOW_MS, job("other").scheduled_at(NOW_MS + 1));
    let mut removed = 0;
    let mut steps = 0;
    loop {
        let step = harness.state.purge_step("q", &mut harness.records);
        assert!(step.removed <= 1_000);
        removed += step.removed;
        steps += 1;
        if step.done {
            break;
        }
    }
    // 1,400 jobs + 1 keyed job + its key + 3 dead letters.
    assert_eq!((removed, steps), (1_405, 2));
    assert_eq!(harness.state.depths("q"), Default::default());
    assert!(harness.enqueue(NOW_MS + 2, vec![job("q").key("once")])[0].as_ref().is_ok_and(|e| !e.deduplicated));
    assert!(harness.state.find_job(&keep).is_some());
    assert!(harness.records.iter().any(|record| matches!(record, Record::Purged { .. })));
}

// ---- bulk actions ------------------------------------------------------------------------------

#[test]
fn a_bulk_requeue_takes_every_matching_dead_letter_in_steps() {
    let mut harness = Harness::with_rules(retention(3_600_000));
    let count = sepp_core::admin::BULK_CHUNK + 10;
    let jobs: Vec<_> =
        (0..count).map(|n| job("q").max_attempts(1).job_type(if n % 2 == 0 { "a" } else { "b" })).collect();
    for chunk in jobs.chunks(200) {
        harness.add_all(NOW_MS, chunk.to_vec());
    }
    while !harness.reserve(NOW_MS, &["q"], 256, 1_000).is_empty() {}
    harness.sweep(NOW_MS + 1_000); // every lease expires on its only attempt
    assert_eq!(harness.state.depths("q").dead_letter, count as u64);
    let filter = JobFilter { job_type: Some("a".into()), custom: Vec::new() };
    let mut cursor = None;
    let mut requeued = 0;
    loop {
        let step = harness
            .state
            .bulk_step(
                NOW_MS + 2_000,
                "q",
                PeekState::DeadLetter,
                &filter,
                cursor.as_ref(),
                &BulkAction::Requeue,
                PEEK_SCAN_LIMIT,
                &mut harness.records,
            )
            .unwrap();
        requeued += step.job_ids.len();
        match step.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(requeued, count.div_ceil(2));
    assert_eq!(harness.state.depths("q").ready, requeued as u64);
    assert_eq!(harness.state.depths("q").dead_letter, (count - requeued) as u64);
    let wrong = harness.state.bulk_step(
        NOW_MS,
        "q",
        PeekState::Ready,
        &filter,
        None,
        &BulkAction::Delete,
        10,
        &mut harness.records,
    );
    assert_eq!(wrong, Err(BulkError::WrongState));
}

#[test]
fn a_bulk_dead_letter_of_ready_jobs_keeps_the_reason() {
    let mut harness = Harness::with_rules(retention(3_600_000));
    harness.add_all(NOW_MS, (0..3).map(|_| job("q")).collect());
    let action = BulkAction::DeadLetter { reason: Some("cleanup".into()) };
    let step = harness
        .state
        .bulk_step(NOW_MS, "q", PeekState::Ready, &no_filter(), None, &action, 100, &mut harness.records)
        .unwrap();
    assert_eq!((step.job_ids.len(), step.next_cursor), (3, None));
    let dead = dead_page(&harness, "q");
    assert!(
        dead.jobs
            .iter()
            .all(|(_, peeked)| matches!(peeked, Peeked::Dead(d) if d.last_reason.as_deref() == Some("cleanup")))
    );
}

// ---- audit and totals ---------------------------------------------------------------------------

fn draft(actor: &str, action: &str) -> AuditDraft {
    AuditDraft { actor: actor.into(), role: "admin".into(), action: action.into(), details: "{}".into() }
}

#[test]
fn audit_entries_are_numbered_from_one_and_kept_through_replay_and_snapshots() {
    let mut harness = Harness::default();
    let first = harness.state.audit(NOW_MS, draft("ana", "queue.put"), &mut harness.records);
    let second = harness.state.audit(NOW_MS + 1, draft("local", "job.enqueue"), &mut harness.records);
    assert_eq!((first.seq, second.seq, second.ts_ms), (1, 2, NOW_MS + 1));
    let page = harness.state.audit_page(&AuditQuery { limit: 10, ..AuditQuery::default() });
    assert_eq!(page.entries.iter().map(|entry| entry.seq).collect::<Vec<_>>(), [2, 1]);
    let replayed = harness.replayed();
    let third_after_replay = replayed.audit_page(&AuditQuery { limit: 1, ..AuditQuery::default() });
    assert_eq!(third_after_replay.entries[0].action, "job.enqueue");
}

#[test]
fn totals_count_only_once_turned_on_and_never_on_replay() {
    let mut harness = Harness::with_rules(retention(3_600_000));
    harness.add(NOW_MS, job("before"));
    harness.state.count_totals();
    let ids = harness.add_all(NOW_MS, vec![job("q").key("k"), job("q").max_attempts(1), job("q")]);
    assert!(harness.enqueue(NOW_MS, vec![job("q").key("k")])[0].as_ref().unwrap().deduplicated);
    harness.reserve(NOW_MS, &["q"], 3, 1_000);
    harness.ack(ids[0], 1).unwrap();
    harness.nack(NOW_MS, ids[1], 1, NackStrategy::Default, None).unwrap(); // final attempt: dead-lettered
    harness.nack(NOW_MS, ids[2], 1, NackStrategy::Default, None).unwrap(); // retried
    let totals: Vec<_> = harness.state.totals().map(|(queue, totals)| (queue.to_string(), *totals)).collect();
    let expected = QueueTotals { enqueued: 3, reserved: 3, acked: 1, nacked: 2, dead_lettered: 1 };
    assert_eq!(totals, [("q".to_string(), expected)]);
    assert_eq!(harness.replayed().totals().count(), 0);
    harness.state.forget_totals("q");
    assert_eq!(harness.state.totals().count(), 0);
}
