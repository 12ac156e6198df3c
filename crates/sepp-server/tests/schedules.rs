//! Recurring schedules over gRPC against the real binary: a schedule fires its job template,
//! bad definitions are refused, schedules survive a crash with every slot fired once, and
//! deleting one stops it.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;

fn every_second(id: &str, queue: &str) -> pb::ScheduleDefinition {
    let mut job = job(queue, "tick");
    job.custom.insert(
        "tenant".into(),
        pb::PrimitiveValue { value: Some(pb::primitive_value::Value::StringValue("acme".into())) },
    );
    pb::ScheduleDefinition {
        id: id.into(),
        cadence: Some(pb::schedule_definition::Cadence::Every(ms(1_000))),
        job: Some(job),
        overlap: pb::ScheduleOverlap::Allow as i32,
        catch_up: pb::ScheduleCatchUp::Latest as i32,
    }
}

fn upsert(definition: pb::ScheduleDefinition) -> pb::UpsertScheduleRequest {
    pb::UpsertScheduleRequest { schedule: Some(definition) }
}

/// Waits (a long poll, no sleep) for the next job the schedule fires.
async fn next_fired(client: &mut QueueServiceClient<tonic::transport::Channel>, queue: &str) -> pb::Job {
    let mut request = reserve(&[queue], 60_000);
    request.wait_timeout = Some(ms(10_000));
    let mut jobs = client.reserve(request).await.expect("reserve").into_inner().jobs;
    assert_eq!(jobs.len(), 1, "a job within ten seconds");
    jobs.remove(0)
}

async fn list(client: &mut QueueServiceClient<tonic::transport::Channel>) -> Vec<pb::ScheduleInfo> {
    client.list_schedules(pb::ListSchedulesRequest {}).await.expect("list").into_inner().schedules
}

#[tokio::test]
async fn a_schedule_fires_its_template_and_lists_what_it_did() {
    if is_reference() {
        return; // 0.1 has no schedules.
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let before = now_ms();
    let info = client.upsert_schedule(upsert(every_second("tick", "ticks"))).await.expect("upsert").into_inner();
    let next = timestamp_ms(info.next_fire_at.as_ref().expect("a next slot"));
    assert!(next > before && next <= now_ms() + 1_000, "the first slot is a second after creation: {next}");

    let job = next_fired(&mut client, "ticks").await;
    assert_eq!(job.job_type, "tick");
    assert!(job.custom.contains_key("tenant"), "the template's custom metadata");
    client.ack(ack_of(&job)).await.expect("ack");

    let listed = list(&mut client).await;
    assert_eq!(listed.len(), 1);
    let shown = &listed[0];
    assert_eq!(shown.definition.as_ref().unwrap().id, "tick");
    assert!(shown.fired >= 1);
    assert!(shown.last_slot_at.is_some());
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert!(info.features.contains(&"schedules".to_string()));
}

#[tokio::test]
async fn bad_definitions_are_refused_as_invalid() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let cron = |expression: &str, time_zone: &str| {
        let mut definition = every_second("c", "q");
        definition.cadence = Some(pb::schedule_definition::Cadence::Cron(pb::CronCadence {
            expression: expression.into(),
            time_zone: time_zone.into(),
        }));
        definition
    };
    let mut keyed = every_second("k", "q");
    keyed.job.as_mut().unwrap().idempotency_key = Some("once".into());
    let mut fast = every_second("f", "q");
    fast.cadence = Some(pb::schedule_definition::Cadence::Every(ms(500)));
    let mut no_cadence = every_second("n", "q");
    no_cadence.cadence = None;
    for (definition, needle) in [
        (cron("61 * * * *", ""), "cron expression"),
        (cron("0 9 * * *", "Mars/Olympus"), "time zone"),
        (keyed, "idempotency_key"),
        (fast, "at least 1000 ms"),
        (no_cadence, "cadence"),
        (every_second("", "q"), "schedule id"),
    ] {
        let refused = client.upsert_schedule(upsert(definition)).await.expect_err("refused");
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert!(refused.message().contains(needle), "{needle}: {}", refused.message());
    }
    assert!(client.upsert_schedule(upsert(cron("0 9 * * MON-FRI", "Europe/Zurich"))).await.is_ok(), "a good one");
    assert_eq!(list(&mut client).await.len(), 1);
}

#[tokio::test]
async fn a_schedule_survives_a_crash_and_fires_each_slot_once() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start("");
    let mut client = server.raw_client().await;
    client.upsert_schedule(upsert(every_second("tick", "ticks"))).await.expect("upsert");
    let mut seen = HashSet::new();
    for _ in 0..2 {
        let job = next_fired(&mut client, "ticks").await;
        assert!(seen.insert(job.id.clone()), "a slot fired twice: {}", job.id);
        client.ack(ack_of(&job)).await.expect("ack");
    }
    let killed = std::process::Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().unwrap();
    assert!(killed.success());
    server.wait_exit(Duration::from_secs(20));
    server.start_again();

    let mut client = server.raw_client().await;
    for _ in 0..2 {
        let job = next_fired(&mut client, "ticks").await;
        assert!(seen.insert(job.id.clone()), "a slot fired twice across the crash: {}", job.id);
        client.ack(ack_of(&job)).await.expect("ack");
    }
    let listed = list(&mut client).await;
    assert_eq!(listed.len(), 1, "the schedule came back");
    assert!(listed[0].fired >= 4, "its count came back too: {}", listed[0].fired);
}

#[tokio::test]
async fn a_deleted_schedule_stops_firing() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    client.upsert_schedule(upsert(every_second("tick", "ticks"))).await.expect("upsert");
    let job = next_fired(&mut client, "ticks").await;
    let deleted = client.delete_schedule(pb::DeleteScheduleRequest { id: "tick".into() }).await.unwrap().into_inner();
    assert!(deleted.deleted);
    let again = client.delete_schedule(pb::DeleteScheduleRequest { id: "tick".into() }).await.unwrap().into_inner();
    assert!(!again.deleted, "nothing left to delete");
    assert!(list(&mut client).await.is_empty());
    client.ack(ack_of(&job)).await.expect("the job it fired stays");
}
