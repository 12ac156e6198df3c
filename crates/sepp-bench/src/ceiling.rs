//! The gRPC ceiling: a `sepp.v1.QueueService` that does nothing and answers every call at once,
//! on the same tonic stack and server settings as the sepp server.
//!
//! No server built on this stack can beat it on this machine, so every table shows how close a
//! real server comes to what the transport allows. Enqueue accepts every job under one fixed id;
//! Reserve hands out a canned 256-byte job (repeated `max_jobs` times, so batch drains move as
//! many jobs as they do against a real server); Ack, Nack and Extend succeed.

use std::future::Future;
use std::time::Duration;

use prost_types::Timestamp;
use sepp_server::proto::v1 as pb;
use sepp_server::proto::v1::queue_service_server::{QueueService, QueueServiceServer};
use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use crate::client::PAYLOAD_BYTES;

/// The `server_version` the ceiling reports, so the harness knows it never runs empty.
pub const CEILING_VERSION: &str = "ceiling";

const FIXED_JOB_ID: &str = "00000000-0000-4000-8000-000000000000";

/// The do-nothing service.
pub struct Ceiling {
    job: pb::Job,
}

impl Default for Ceiling {
    fn default() -> Self {
        let time = Some(Timestamp { seconds: 1_700_000_000, nanos: 0 });
        let job = pb::Job {
            id: FIXED_JOB_ID.to_string(),
            job_type: "bench".to_string(),
            payload: Some(pb::Payload { data: vec![b'x'; PAYLOAD_BYTES], encoding: "application/octet-stream".into() }),
            priority: 0,
            trace_context: None,
            enqueued_at: time,
            attempt: 1,
            max_attempts: 3,
            lease_expires_at: time,
            custom: Default::default(),
            scheduled_at: None,
            queue: String::new(),
        };
        Ceiling { job }
    }
}

fn accepted() -> pb::EnqueueResponse {
    pb::EnqueueResponse { job_id: FIXED_JOB_ID.to_string(), deduplicated: false }
}

#[tonic::async_trait]
impl QueueService for Ceiling {
    type ConsumeStream = futures_util::stream::Empty<Result<pb::ConsumeResponse, Status>>;

    /// The ceiling measures unary calls only.
    async fn consume(
        &self,
        _request: Request<tonic::Streaming<pb::ConsumeRequest>>,
    ) -> Result<Response<Self::ConsumeStream>, Status> {
        Err(Status::unimplemented("the ceiling server does not stream"))
    }

    async fn enqueue_batch(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueBatchResponse>, Status> {
        let results = request
            .get_ref()
            .jobs
            .iter()
            .map(|_| pb::JobResult { outcome: Some(pb::job_result::Outcome::Success(accepted())) })
            .collect();
        Ok(Response::new(pb::EnqueueBatchResponse { results }))
    }

    async fn enqueue_atomic(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueAtomicResponse>, Status> {
        let responses = request.get_ref().jobs.iter().map(|_| accepted()).collect();
        let outcome = pb::enqueue_atomic_response::Outcome::Success(pb::EnqueueAtomicSuccess { responses });
        Ok(Response::new(pb::EnqueueAtomicResponse { outcome: Some(outcome) }))
    }

    async fn reserve(&self, request: Request<pb::ReserveRequest>) -> Result<Response<pb::ReserveResponse>, Status> {
        let request = request.into_inner();
        let count = request.max_jobs.unwrap_or(1).clamp(1, 256) as usize;
        let mut job = self.job.clone();
        job.queue = request.queues.into_iter().next().unwrap_or_default();
        Ok(Response::new(pb::ReserveResponse { jobs: vec![job; count] }))
    }

    async fn ack(&self, request: Request<pb::AckRequest>) -> Result<Response<pb::AckResponse>, Status> {
        Ok(Response::new(pb::AckResponse { job_id: request.into_inner().job_id }))
    }

    async fn ack_batch(&self, request: Request<pb::AckBatchRequest>) -> Result<Response<pb::AckBatchResponse>, Status> {
        let results = request
            .into_inner()
            .acks
            .into_iter()
            .map(|ack| pb::AckResult {
                outcome: Some(pb::ack_result::Outcome::Success(pb::AckResponse { job_id: ack.job_id })),
            })
            .collect();
        Ok(Response::new(pb::AckBatchResponse { results }))
    }

    async fn upsert_schedule(
        &self,
        _: Request<pb::UpsertScheduleRequest>,
    ) -> Result<Response<pb::ScheduleInfo>, Status> {
        Err(Status::unimplemented("the ceiling keeps no schedules"))
    }

    async fn delete_schedule(
        &self,
        _: Request<pb::DeleteScheduleRequest>,
    ) -> Result<Response<pb::DeleteScheduleResponse>, Status> {
        Ok(Response::new(pb::DeleteScheduleResponse { deleted: false }))
    }

    async fn list_schedules(
        &self,
        _: Request<pb::ListSchedulesRequest>,
    ) -> Result<Response<pb::ListSchedulesResponse>, Status> {
        Ok(Response::new(pb::ListSchedulesResponse { schedules: Vec::new() }))
    }

    async fn pause_queue(&self, _: Request<pb::PauseQueueRequest>) -> Result<Response<pb::PauseQueueResponse>, Status> {
        Err(Status::unimplemented("the ceiling pauses nothing"))
    }

    async fn resume_queue(
        &self,
        _: Request<pb::ResumeQueueRequest>,
    ) -> Result<Response<pb::ResumeQueueResponse>, Status> {
        Ok(Response::new(pb::ResumeQueueResponse { resumed: false }))
    }

    async fn list_pauses(&self, _: Request<pb::ListPausesRequest>) -> Result<Response<pb::ListPausesResponse>, Status> {
        Ok(Response::new(pb::ListPausesResponse { pauses: Vec::new() }))
    }

    async fn cancel_job(
        &self,
        request: Request<pb::CancelJobRequest>,
    ) -> Result<Response<pb::CancelJobResponse>, Status> {
        Ok(Response::new(pb::CancelJobResponse { job_id: request.into_inner().job_id, was_leased: false }))
    }

    async fn nack(&self, request: Request<pb::NackRequest>) -> Result<Response<pb::NackResponse>, Status> {
        Ok(Response::new(pb::NackResponse { job_id: request.into_inner().job_id, dead_lettered: false }))
    }

    async fn extend(&self, request: Request<pb::ExtendRequest>) -> Result<Response<pb::ExtendResponse>, Status> {
        let job_id = request.into_inner().job_id;
        Ok(Response::new(pb::ExtendResponse { job_id, lease_expires_at: self.job.lease_expires_at }))
    }

    async fn drain_dead_letters(
        &self,
        _request: Request<pb::DrainDeadLettersRequest>,
    ) -> Result<Response<pb::DrainDeadLettersResponse>, Status> {
        Ok(Response::new(pb::DrainDeadLettersResponse { records: Vec::new() }))
    }

    async fn get_server_info(
        &self,
        _request: Request<pb::GetServerInfoRequest>,
    ) -> Result<Response<pb::GetServerInfoResponse>, Status> {
        Ok(Response::new(pb::GetServerInfoResponse {
            server_version: CEILING_VERSION.to_string(),
            supported_protocol_versions: vec!["v1".to_string()],
            server_time: self.job.enqueued_at,
            max_enqueue_batch: 256,
            max_reserve_batch: 256,
            ..Default::default()
        }))
    }
}

/// Serves the ceiling on `listener` until `shutdown` resolves, with the transport settings of
/// the sepp server (HTTP/2 keepalive, TCP_NODELAY, the health service beside the queue service).
///
/// `Server::tcp_nodelay` only applies to sockets that tonic accepts itself, so an already-bound
/// listener goes through `TcpIncoming` to get TCP_NODELAY on every accepted connection; without
/// it, small responses wait on delayed ACKs (about 40 ms per round trip on Linux).
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<QueueServiceServer<Ceiling>>().await;
    let service = QueueServiceServer::new(Ceiling::default())
        .max_decoding_message_size(16 * 1024 * 1024)
        .max_encoding_message_size(usize::MAX);
    Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .tcp_nodelay(true)
        .add_service(health_service)
        .add_service(service)
        .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), shutdown)
        .await
}
