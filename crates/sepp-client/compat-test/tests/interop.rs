//! Behaviour compared with the published sepp-rs 0.1 client on the same server: jobs written by
//! one are read identically by the other, both render a job context the same way, and both map
//! the same failures to the same errors. (Only the 0.1 crate's public API is used.)

extern crate sepp_rs as sepp_client;

#[path = "../../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::{Server, unique};

const LEASE: Duration = Duration::from_secs(30);
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[tokio::test]
async fn jobs_cross_between_the_0_1_client_and_ours_unchanged() {
    let server = Server::start();
    let old = sepp_rs_01::client::SeppClient::connect(server.url()).await.unwrap();
    let new = sepp_rs::client::SeppClient::connect(server.url()).await.unwrap();
    let queue = unique("interop");

    // 0.1 writes, we read.
    let request = sepp_rs_01::EnqueueRequest::new(queue.as_str(), "from-old")
        .unwrap()
        .with_payload(sepp_rs_01::Payload::new(b"old".to_vec(), "text/plain"))
        .with_priority(sepp_rs_01::Priority::P6)
        .with_max_attempts(4)
        .with_custom_entry("n", 7)
        .with_trace_context(sepp_rs_01::TraceContext::new(TRACEPARENT).unwrap().with_tracestate("a=b"));
    let old_ack = old.enqueue(request).await.unwrap();
    let options = sepp_rs::ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    let job = new.reserve(&options).await.unwrap().unwrap().remove(0);
    assert_eq!(job.ctx.id, old_ack.job_id);
    assert_eq!(job.payload, Some(sepp_rs::Payload::new(b"old".to_vec(), "text/plain")));
    assert_eq!((job.ctx.priority.get(), job.ctx.max_attempts), (6, 4));
    assert_eq!(job.ctx.custom["n"], sepp_rs::Primitive::Int(7));
    let trace = job.ctx.trace_context.clone().unwrap();
    assert_eq!((trace.traceparent(), trace.tracestate()), (TRACEPARENT, Some("a=b")));
    new.ack(&job.ctx).await.unwrap();

    // We write, 0.1 reads; both render the context the same way.
    let request = sepp_rs::EnqueueRequest::new(queue.as_str(), "from-new")
        .unwrap()
        .with_payload(sepp_rs::Payload::new(b"new".to_vec(), "text/plain"))
        .with_priority(sepp_rs::Priority::P2)
        .with_custom_entry("flag", true);
    let new_ack = new.enqueue(request).await.unwrap();
    let old_options =
        sepp_rs_01::ReserveOptions::new(vec![queue.clone()], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    let old_job = old.reserve(&old_options).await.unwrap().unwrap().remove(0);
    assert_eq!(old_job.ctx.id, new_ack.job_id);
    assert_eq!(old_job.payload.as_ref().map(|payload| payload.data.clone()), Some(b"new".to_vec()));
    assert_eq!(old_job.ctx.custom["flag"], sepp_rs_01::Primitive::Bool(true));
    let ours = format!("{}", job.ctx).replace(&job.ctx.id, "ID").replace("from-old", "TYPE");
    let theirs = format!("{}", old_job.ctx).replace(&old_job.ctx.id, "ID").replace("from-new", "TYPE");
    assert_eq!(
        ours.replace("attempt: 1/4, priority: 6", "A"),
        theirs.replace("attempt: 1/3, priority: 2", "A"),
        "the same Display shape"
    );

    // The same failure, the same error: a second ack finds nothing.
    old.ack(&old_job.ctx).await.unwrap();
    assert!(matches!(old.ack(&old_job.ctx).await, Err(sepp_rs_01::client::LeaseError::JobNotFound)));
    assert!(matches!(new.ack(&job.ctx).await, Err(sepp_rs::client::LeaseError::JobNotFound)));
}

#[tokio::test]
async fn both_clients_read_the_same_server_info_and_refuse_the_same_requests() {
    let server = Server::start();
    let old = sepp_rs_01::client::SeppClient::connect(server.url()).await.unwrap();
    let new = sepp_rs::client::SeppClient::connect(server.url()).await.unwrap();
    let (old_info, new_info) = (old.get_server_info().await.unwrap(), new.get_server_info().await.unwrap());
    assert_eq!(old_info.version, new_info.version);
    assert_eq!(old_info.supported_protocol_versions, new_info.supported_protocol_versions);
    assert_eq!(
        (old_info.max_enqueue_batch, old_info.max_reserve_batch, old_info.max_payload_bytes),
        (new_info.max_enqueue_batch, new_info.max_reserve_batch, new_info.max_payload_bytes)
    );
    assert_eq!(old_info.max_lease_duration, new_info.max_lease_duration);

    let queue = unique("refused");
    let long = "z".repeat(300);
    let old_result = old.enqueue_batch([sepp_rs_01::EnqueueRequest::new(queue.as_str(), long.as_str()).unwrap()]).await;
    let new_result = new.enqueue_batch([sepp_rs::EnqueueRequest::new(queue.as_str(), long.as_str()).unwrap()]).await;
    assert!(matches!(
        old_result.unwrap()[0],
        Err(sepp_rs_01::JobRejection::JobTypeNameTooLong { limit: 256, actual: 300 })
    ));
    assert!(matches!(
        new_result.unwrap()[0],
        Err(sepp_rs::JobRejection::JobTypeNameTooLong { limit: 256, actual: 300 })
    ));
    assert!(matches!(old.enqueue_batch(Vec::new()).await, Err(sepp_rs_01::client::ClientError::EmptyBatch)));
    assert!(matches!(new.enqueue_batch(Vec::new()).await, Err(sepp_rs::client::ClientError::EmptyBatch)));
}
