//! Recurring schedules: interval and cron slots, the overlap and catch-up policies, clock jumps,
//! restarts, validation, and a randomized run in which no slot ever fires twice. Every harness
//! checks replay and the snapshot when dropped.

mod common;

use std::collections::{HashMap, HashSet};

use common::{Harness, JobBuilder, Rng, job};
use sepp_core::schedule::{
    Cadence, CatchUp, FiringOutcome, JobTemplate, MISFIRE_GRACE_MS, Overlap, ScheduleSpec, slot_job_id,
};
use sepp_core::{CallError, Primitive, State};

/// 2026-01-05 00:00:00 UTC, a Monday.
const T0: i64 = 1_767_571_200_000;
const MINUTE: i64 = 60_000;

fn template(queue: &str) -> JobTemplate {
    JobTemplate {
        queue: queue.into(),
        job_type: "report".into(),
        custom: [("tenant".to_string(), Primitive::String("acme".into()))].into(),
        ..JobTemplate::default()
    }
}

fn every(id: &str, interval_ms: u64, overlap: Overlap, catch_up: CatchUp) -> ScheduleSpec {
    ScheduleSpec { id: id.into(), cadence: Cadence::Every { interval_ms }, template: template("q"), overlap, catch_up }
}

fn cron(id: &str, expression: &str, time_zone: &str) -> ScheduleSpec {
    ScheduleSpec {
        id: id.into(),
        cadence: Cadence::Cron { expression: expression.into(), time_zone: time_zone.into() },
        template: template("q"),
        overlap: Overlap::Allow,
        catch_up: CatchUp::Latest,
    }
}

fn fired(harness: &mut Harness, now_ms: i64) -> Vec<(String, i64, FiringOutcome)> {
    harness.sweep(now_ms).schedule_firings.into_iter().map(|f| (f.schedule_id, f.slot_ms, f.outcome)).collect()
}

#[test]
fn an_interval_schedule_fires_one_job_per_slot_with_an_id_keyed_by_schedule_and_slot() {
    let mut harness = Harness::default();
    let schedule = harness
        .state
        .upsert_schedule(T0, every("tick", 60_000, Overlap::Allow, CatchUp::Latest), &mut harness.records)
        .unwrap();
    assert_eq!(schedule.next_ms, T0 + MINUTE, "the first slot is one interval after creation");
    assert_eq!(harness.state.next_deadline_ms(), Some(T0 + MINUTE), "the committer wakes for it");
    assert!(fired(&mut harness, T0 + MINUTE - 1).is_empty());

    let first = fired(&mut harness, T0 + MINUTE);
    assert_eq!(first, [("tick".to_string(), T0 + MINUTE, FiringOutcome::Fired(slot_job_id("tick", T0 + MINUTE)))]);
    assert!(fired(&mut harness, T0 + MINUTE + 500).is_empty(), "a slot fires once");
    let second = fired(&mut harness, T0 + 2 * MINUTE + 10);
    assert_eq!(second[0].1, T0 + 2 * MINUTE);
    let delivered = harness.reserve(T0 + 3 * MINUTE - 1, &["q"], 10, 30_000);
    assert_eq!(delivered.len(), 2);
    assert_eq!(delivered[0].job.custom.get("tenant"), Some(&Primitive::String("acme".into())), "from the template");
    assert_eq!(harness.state.schedule("tick").unwrap().fired, 2);
}

#[test]
fn a_cron_schedule_fires_at_its_local_time() {
    let mut harness = Harness::default();
    // 09:00 in Zurich is 08:00 UTC in winter.
    let schedule = harness
        .state
        .upsert_schedule(T0, cron("morning", "0 9 * * MON-FRI", "Europe/Zurich"), &mut harness.records)
        .unwrap();
    assert_eq!(schedule.next_ms, T0 + 8 * 60 * MINUTE);
    assert_eq!(fired(&mut harness, T0 + 8 * 60 * MINUTE).len(), 1);
    assert_eq!(harness.state.schedule("morning").unwrap().next_ms, T0 + (24 + 8) * 60 * MINUTE, "the next weekday");
    // Friday's slot is followed by Monday's.
    let friday = T0 + (4 * 24 + 8) * 60 * MINUTE;
    let mut harness2 = Harness::default();
    harness2
        .state
        .upsert_schedule(friday, cron("morning", "0 9 * * MON-FRI", "Europe/Zurich"), &mut harness2.records)
        .unwrap();
    assert_eq!(harness2.state.schedule("morning").unwrap().next_ms, friday + 3 * 24 * 60 * MINUTE);
}

#[test]
fn overlap_skip_fires_nothing_while_the_previous_job_is_queued_or_running() {
    let mut harness = Harness::default();
    harness
        .state
        .upsert_schedule(T0, every("sync", 60_000, Overlap::Skip, CatchUp::Latest), &mut harness.records)
        .unwrap();
    let first = fired(&mut harness, T0 + MINUTE);
    let FiringOutcome::Fired(job_id) = first[0].2 else { panic!("the first slot fires: {first:?}") };
    assert_eq!(fired(&mut harness, T0 + 2 * MINUTE)[0].2, FiringOutcome::SkippedOverlap, "still queued");
    harness.reserve(T0 + 2 * MINUTE, &["q"], 1, 300_000);
    assert_eq!(fired(&mut harness, T0 + 3 * MINUTE)[0].2, FiringOutcome::SkippedOverlap, "still running");
    harness.ack(job_id, 1).unwrap();
    assert!(matches!(fired(&mut harness, T0 + 4 * MINUTE)[0].2, FiringOutcome::Fired(_)), "done: the next slot fires");
}

#[test]
fn overlap_allow_fires_every_slot() {
    let mut harness = Harness::default();
    harness
        .state
        .upsert_schedule(T0, every("all", 60_000, Overlap::Allow, CatchUp::Latest), &mut harness.records)
        .unwrap();
    for n in 1..=3 {
        assert!(matches!(fired(&mut harness, T0 + n * MINUTE)[0].2, FiringOutcome::Fired(_)));
    }
    assert_eq!(harness.state.depths("q").ready, 3);
}

#[test]
fn after_downtime_catch_up_latest_fires_the_latest_missed_slot_once_and_skip_fires_none() {
    let mut harness = Harness::default();
    let ten = 10 * 60_000;
    harness
        .state
        .upsert_schedule(T0, every("latest", ten, Overlap::Allow, CatchUp::Latest), &mut harness.records)
        .unwrap();
    harness.state.upsert_schedule(T0, every("none", ten, Overlap::Allow, CatchUp::Skip), &mut harness.records).unwrap();
    // Down from T0 to 95 minutes later: nine slots passed, the latest five minutes ago.
    let back = T0 + 95 * MINUTE;
    let mut firings = fired(&mut harness, back);
    firings.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        firings[0],
        ("latest".into(), T0 + 90 * MINUTE, FiringOutcome::Fired(slot_job_id("latest", T0 + 90 * MINUTE)))
    );
    assert_eq!(firings[1].0, "none");
    assert_eq!(firings[1].2, FiringOutcome::SkippedMissed);
    assert_eq!(harness.state.depths("q").ready, 1, "one job, not nine");
    for id in ["latest", "none"] {
        assert_eq!(harness.state.schedule(id).unwrap().next_ms, T0 + 100 * MINUTE, "{id} waits for its next slot");
    }
    // A slot found within the grace is on time even under `Skip`.
    let on_time = fired(&mut harness, T0 + 100 * MINUTE + MISFIRE_GRACE_MS);
    assert!(on_time.iter().all(|(_, _, outcome)| matches!(outcome, FiringOutcome::Fired(_))), "{on_time:?}");
    assert_eq!(on_time.len(), 2);
}

#[test]
fn a_clock_that_jumps_back_or_ahead_never_fires_a_slot_twice() {
    let mut harness = Harness::default();
    harness
        .state
        .upsert_schedule(T0, every("j", 60_000, Overlap::Allow, CatchUp::Latest), &mut harness.records)
        .unwrap();
    assert_eq!(fired(&mut harness, T0 + MINUTE).len(), 1);
    assert!(fired(&mut harness, T0 - 10 * MINUTE).is_empty(), "back in time: nothing is due");
    assert!(fired(&mut harness, T0 + MINUTE).is_empty(), "and the fired slot stays fired");
    let ahead = fired(&mut harness, T0 + 10 * MINUTE);
    assert_eq!(ahead.len(), 1, "ahead: the latest slot, once");
    assert_eq!(ahead[0].1, T0 + 10 * MINUTE);
}

#[test]
fn fired_slots_survive_a_restart_from_the_log_or_a_checkpoint() {
    let mut harness = Harness::default();
    harness
        .state
        .upsert_schedule(T0, every("r", 60_000, Overlap::Allow, CatchUp::Latest), &mut harness.records)
        .unwrap();
    fired(&mut harness, T0 + MINUTE);
    for mut restarted in [harness.replayed(), {
        let mut restored = State::new(std::sync::Arc::new(sepp_core::Policy::default()), harness.state.rules());
        for record in harness.state.snapshot().records() {
            restored.apply(&record);
        }
        restored
    }] {
        let mut out = Vec::new();
        let again = restarted.sweep(T0 + MINUTE + 1, &mut out);
        assert!(again.schedule_firings.is_empty(), "the slot does not fire again after a restart");
        assert_eq!(restarted.schedule("r").unwrap().next_ms, T0 + 2 * MINUTE);
    }
}

#[test]
fn a_deleted_schedule_fires_no_more_and_a_replaced_one_restarts_its_slots() {
    let mut harness = Harness::default();
    harness
        .state
        .upsert_schedule(T0, every("d", 60_000, Overlap::Skip, CatchUp::Latest), &mut harness.records)
        .unwrap();
    fired(&mut harness, T0 + MINUTE);
    let replaced = harness
        .state
        .upsert_schedule(T0 + 90_000, every("d", 10 * 60_000, Overlap::Skip, CatchUp::Latest), &mut harness.records)
        .unwrap();
    assert_eq!(replaced.next_ms, T0 + 90_000 + 10 * MINUTE);
    assert_eq!((replaced.fired, replaced.last_job.is_some()), (1, true), "it keeps its history");
    assert!(harness.state.delete_schedule("d", &mut harness.records));
    assert!(!harness.state.delete_schedule("d", &mut harness.records));
    assert!(fired(&mut harness, T0 + 60 * MINUTE).is_empty());
    assert_eq!(harness.state.next_deadline_ms(), None);
}

#[test]
fn bad_schedules_are_refused_with_a_reason() {
    let mut harness = Harness::default();
    let mut refuse = |spec: ScheduleSpec| match harness.state.upsert_schedule(T0, spec, &mut harness.records) {
        Err(CallError::InvalidArgument(message)) => message,
        other => panic!("not refused: {other:?}"),
    };
    assert!(refuse(cron("c", "61 * * * *", "UTC")).contains("cron expression"));
    assert!(refuse(cron("c", "0 9 * * *", "Mars/Olympus")).contains("time zone"));
    assert!(refuse(every("c", 999, Overlap::Allow, CatchUp::Latest)).contains("at least 1000 ms"));
    assert!(refuse(every("", 60_000, Overlap::Allow, CatchUp::Latest)).contains("schedule id"));
    assert!(refuse(every(&"x".repeat(129), 60_000, Overlap::Allow, CatchUp::Latest)).contains("schedule id"));
    let mut no_type = every("c", 60_000, Overlap::Allow, CatchUp::Latest);
    no_type.template.job_type.clear();
    assert!(refuse(no_type).contains("template"));
    assert!(harness.state.schedules().next().is_none());
}

#[test]
fn a_slot_the_queue_refuses_is_skipped_and_the_schedule_goes_on() {
    let mut policy = sepp_core::Policy::default();
    common::declare(&mut policy, "q", |limits| limits.max_queue_depth = Some(1));
    let mut harness = Harness::with_policy(policy);
    harness.add(T0, job("q").priority(1));
    harness
        .state
        .upsert_schedule(T0, every("full", 60_000, Overlap::Allow, CatchUp::Latest), &mut harness.records)
        .unwrap();
    let refused = fired(&mut harness, T0 + MINUTE);
    assert!(matches!(&refused[0].2, FiringOutcome::Refused(reason) if reason == "queue_full"), "{refused:?}");
    assert_eq!(harness.state.schedule("full").unwrap().next_ms, T0 + 2 * MINUTE);
}

#[test]
fn under_random_sweeps_clock_jumps_restarts_and_replacements_no_slot_fires_twice() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut harness = Harness::default();
        let mut now = T0;
        let specs = [
            every("a", 60_000, Overlap::Allow, CatchUp::Latest),
            every("b", 7_000, Overlap::Allow, CatchUp::Skip),
            every("c", 3_600_000, Overlap::Skip, CatchUp::Latest),
            cron("d", "*/5 * * * *", "America/New_York"),
            cron("e", "30 2 * * *", "Europe/Berlin"),
        ];
        for spec in &specs {
            harness.state.upsert_schedule(now, spec.clone(), &mut harness.records).unwrap();
        }
        let mut seen: HashMap<(String, i64), u32> = HashMap::new();
        let mut ids = HashSet::new();
        for _ in 0..300 {
            match rng.below(10) {
                // Mostly forward, sometimes far ahead or back.
                0 => now -= rng.below(3 * 3_600_000) as i64,
                1 => now += rng.below(3 * 86_400_000) as i64,
                _ => now += rng.below(120_000) as i64,
            }
            if rng.below(25) == 0 {
                // A restart: the state rebuilt from its records.
                harness.state = harness.replayed();
            }
            if rng.below(40) == 0 {
                let spec = specs[rng.below(specs.len() as u64) as usize].clone();
                harness.state.upsert_schedule(now, spec, &mut harness.records).unwrap();
            }
            for (id, slot, outcome) in fired(&mut harness, now) {
                *seen.entry((id.clone(), slot)).or_default() += 1;
                if let FiringOutcome::Fired(job_id) = outcome {
                    assert!(ids.insert(job_id), "seed {seed}: job {job_id} fired twice");
                    assert_eq!(job_id, slot_job_id(&id, slot));
                }
            }
            if rng.below(3) == 0 {
                for delivery in harness.reserve(now, &["q"], 5, 60_000) {
                    harness.ack(delivery.job.id, delivery.attempt).unwrap();
                }
            }
        }
        let twice: Vec<_> = seen.iter().filter(|(_, count)| **count > 1).collect();
        assert!(twice.is_empty(), "seed {seed}: slots seen more than once: {twice:?}");
        assert!(!ids.is_empty(), "seed {seed}: nothing fired at all");
    }
}
