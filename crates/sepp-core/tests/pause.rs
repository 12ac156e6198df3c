//! Pausing and resuming queues: reserves skip a paused queue, enqueues and held leases go on,
//! a pause can end by itself, and it survives its queue emptying, replay and checkpoints (every
//! harness checks replay and the snapshot when dropped).

mod common;

use common::{Harness, job};
use sepp_core::{ALL_QUEUES, Record};

const NOW_MS: i64 = 7_000_000;

#[test]
fn reserves_skip_a_paused_queue_while_enqueues_and_held_leases_go_on() {
    let mut harness = Harness::default();
    harness.add(NOW_MS, job("q"));
    let held = harness.reserve_one(NOW_MS, "q", 30_000);
    let waiting = harness.add(NOW_MS, job("q"));
    let other = harness.add(NOW_MS, job("other"));
    harness.state.pause_queue("q", None, &mut harness.records);
    assert!(harness.state.is_paused("q") && !harness.state.is_paused("other"));
    assert!(!harness.state.has_ready("q"), "a paused queue offers nothing to parked reserves");

    let later = harness.add(NOW_MS + 1, job("q"));
    assert_eq!(harness.reserve_ids(NOW_MS + 2, &["q", "other"], 10), [other], "only the unpaused queue serves");
    harness.extend(NOW_MS + 3, held.job.id, 1, 30_000).expect("a held lease can still be extended");
    harness.ack(held.job.id, 1).expect("a held lease can still be acked");

    assert!(harness.state.resume_queue("q", &mut harness.records));
    assert!(!harness.state.resume_queue("q", &mut harness.records), "resuming twice finds nothing to lift");
    assert_eq!(harness.reserve_ids(NOW_MS + 4, &["q"], 10), [waiting, later], "resumed in the same order");
}

#[test]
fn pausing_every_queue_stops_all_reserves_and_leaves_named_pauses_in_place() {
    let mut harness = Harness::default();
    let a = harness.add(NOW_MS, job("a"));
    let b = harness.add(NOW_MS, job("b"));
    harness.state.pause_queue("a", None, &mut harness.records);
    harness.state.pause_queue(ALL_QUEUES, None, &mut harness.records);
    assert!(harness.state.is_paused("a") && harness.state.is_paused("b") && harness.state.is_paused("never-seen"));
    assert!(harness.reserve_ids(NOW_MS, &["a", "b"], 10).is_empty());

    assert!(harness.state.resume_queue(ALL_QUEUES, &mut harness.records));
    assert_eq!(harness.reserve_ids(NOW_MS, &["a", "b"], 10), [b], "a's own pause outlives the pause of all");
    harness.state.resume_queue("a", &mut harness.records);
    assert_eq!(harness.reserve_ids(NOW_MS, &["a"], 10), [a]);
    assert!(harness.state.pauses().is_empty());
}

#[test]
fn a_pause_with_an_end_is_lifted_by_the_sweep_at_that_moment() {
    let mut harness = Harness::default();
    let id = harness.add(NOW_MS, job("q"));
    let until_ms = NOW_MS + 60_000;
    harness.state.pause_queue("q", Some(until_ms), &mut harness.records);
    assert_eq!(harness.state.next_deadline_ms(), Some(until_ms), "the committer wakes for the pause's end");

    let report = harness.sweep(until_ms - 1);
    assert_eq!(report.pauses_ended, 0);
    assert!(harness.reserve_ids(until_ms - 1, &["q"], 1).is_empty());

    let generation = harness.state.ready_generation();
    let mark = harness.records.len();
    let report = harness.sweep(until_ms);
    assert_eq!(report.pauses_ended, 1);
    assert!(matches!(harness.records_since(mark), [Record::QueueResumed { queue }] if &**queue == "q"));
    assert!(harness.state.ready_generation() > generation, "parked reserves get another look");
    assert!(harness.state.has_ready("q"));
    assert_eq!(harness.reserve_ids(until_ms, &["q"], 1), [id]);
}

#[test]
fn pausing_again_replaces_the_end_and_an_open_pause_never_ends_by_itself() {
    let mut harness = Harness::default();
    harness.add(NOW_MS, job("q"));
    harness.state.pause_queue("q", Some(NOW_MS + 10), &mut harness.records);
    harness.state.pause_queue("q", None, &mut harness.records);
    assert_eq!(harness.state.pauses(), [("q".into(), None)]);
    assert_eq!(harness.sweep(NOW_MS + 1_000_000).pauses_ended, 0);
    assert!(harness.state.is_paused("q"));
}

#[test]
fn a_pause_outlives_its_queue_emptying_and_holds_for_jobs_enqueued_later() {
    let mut harness = Harness::default();
    harness.state.pause_queue("empty", None, &mut harness.records);
    let id = harness.add(NOW_MS, job("empty"));
    harness.state.pause_queue("busy", None, &mut harness.records);
    // The snapshot and replay checks of the drop see the pause of a queue with no jobs too.
    let replayed = harness.replayed();
    assert!(replayed.is_paused("empty") && replayed.is_paused("busy"));
    assert!(harness.reserve_ids(NOW_MS, &["empty"], 1).is_empty());
    harness.state.resume_queue("empty", &mut harness.records);
    assert_eq!(harness.reserve_ids(NOW_MS, &["empty"], 1), [id]);
}
