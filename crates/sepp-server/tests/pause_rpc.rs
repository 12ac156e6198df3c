//! Pausing queues over gRPC (`PauseQueue`, `ResumeQueue`, `ListPauses`) against the real binary:
//! reserves skip a paused queue while enqueues go on, the pause of every queue, bad input, and a
//! pause that survives SIGKILL.

mod common;

use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;
use tonic::Code;

fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

fn pause(queue: &str) -> pb::PauseQueueRequest {
    pb::PauseQueueRequest { queue: queue.into(), until: None, reason: Some("deploy".into()) }
}

async fn pauses(client: &mut QueueServiceClient<tonic::transport::Channel>) -> Vec<(String, Option<i64>)> {
    let listed = client.list_pauses(pb::ListPausesRequest {}).await.expect("list").into_inner().pauses;
    listed.into_iter().map(|pause| (pause.queue, pause.until.as_ref().map(timestamp_ms))).collect()
}

#[tokio::test]
async fn a_paused_queue_takes_enqueues_and_serves_no_reserve_until_resumed() {
    if is_reference() {
        return; // 0.1 cannot pause over gRPC.
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let answer = client.pause_queue(pause("mail")).await.expect("pause").into_inner();
    assert_eq!(answer.pause.unwrap().queue, "mail");
    let id = enqueue_one(&mut client, job("mail", "send")).await;
    assert!(reserve_now(&mut client, &["mail"], 60_000).await.is_empty(), "a paused queue serves nothing");
    assert_eq!(pauses(&mut client).await, [("mail".to_string(), None)]);

    assert!(client.resume_queue(pb::ResumeQueueRequest { queue: "mail".into() }).await.unwrap().into_inner().resumed);
    assert!(!client.resume_queue(pb::ResumeQueueRequest { queue: "mail".into() }).await.unwrap().into_inner().resumed);
    let served = reserve_now(&mut client, &["mail"], 60_000).await;
    assert_eq!(served.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);

    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert!(info.features.contains(&"pause".to_string()));
}

#[tokio::test]
async fn an_empty_queue_name_pauses_every_queue_and_bad_input_is_invalid() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let until = now_ms() + 3_600_000;
    let request = pb::PauseQueueRequest { queue: String::new(), until: Some(timestamp(until)), reason: None };
    client.pause_queue(request).await.expect("pause every queue");
    enqueue_one(&mut client, job("anything", "t")).await;
    assert!(reserve_now(&mut client, &["anything"], 60_000).await.is_empty());
    assert_eq!(pauses(&mut client).await, [(String::new(), Some(until))]);

    let past = pb::PauseQueueRequest { queue: "q".into(), until: Some(timestamp(now_ms() - 1_000)), reason: None };
    assert_eq!(client.pause_queue(past).await.expect_err("in the past").code(), Code::InvalidArgument);
    let long = pb::PauseQueueRequest { queue: "q".into(), until: None, reason: Some("x".repeat(1025)) };
    assert_eq!(client.pause_queue(long).await.expect_err("too long").code(), Code::InvalidArgument);
    let bad_name = pb::PauseQueueRequest { queue: "a\u{0}b".into(), until: None, reason: None };
    assert_eq!(client.pause_queue(bad_name).await.expect_err("bad name").code(), Code::InvalidArgument);
}

#[tokio::test]
async fn a_pause_survives_sigkill() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start("");
    let mut client = server.raw_client().await;
    client.pause_queue(pause("mail")).await.expect("pause");
    let killed = std::process::Command::new("kill").arg("-KILL").arg(server.pid().to_string()).status().unwrap();
    assert!(killed.success());
    server.wait_exit(Duration::from_secs(20));
    server.start_again();
    let mut client = server.raw_client().await;
    assert_eq!(pauses(&mut client).await, [("mail".to_string(), None)]);
}
