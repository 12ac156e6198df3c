//! The only module that talks the sepp protocol: one [`Connection`] is one HTTP/2 channel.
//!
//! It uses the generated tonic client of `sepp_server::proto::v1` directly, because our own
//! client crate (`sepp-client`) has not landed yet. Every phase goes through the handful of
//! calls below, so switching to that crate later touches this file only.

use std::net::SocketAddr;
use std::time::Duration;

use prost_types::Duration as ProtoDuration;
use sepp_server::proto::v1 as pb;
use tonic::transport::{Channel, Endpoint};

use crate::BenchError;

/// Size of every job payload the load generator sends.
pub const PAYLOAD_BYTES: usize = 256;

/// Leases outlive any phase, so no job is ever redelivered during a measurement.
const LEASE_SECONDS: i64 = 300;

/// A job held under a lease: what an ack needs.
#[derive(Clone, Debug)]
pub struct Lease {
    pub job_id: String,
    pub attempt: u32,
}

/// One client connection (its own HTTP/2 channel) to a sepp-protocol server.
#[derive(Clone)]
pub struct Connection {
    client: pb::queue_service_client::QueueServiceClient<Channel>,
    payload: Vec<u8>,
}

impl Connection {
    /// Opens a new channel; it is connected when this returns.
    pub async fn connect(addr: SocketAddr) -> Result<Connection, BenchError> {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(BenchError::Transport)?
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .map_err(BenchError::Transport)?;
        let client = pb::queue_service_client::QueueServiceClient::new(channel)
            .max_decoding_message_size(64 * 1024 * 1024)
            .max_encoding_message_size(64 * 1024 * 1024);
        Ok(Connection { client, payload: vec![b'x'; PAYLOAD_BYTES] })
    }

    /// Enqueues `count` jobs in one EnqueueBatch call; every one must be accepted.
    pub async fn enqueue(&mut self, queue: &str, count: usize) -> Result<(), BenchError> {
        let jobs = (0..count).map(|_| self.new_job(queue)).collect();
        let response = self.client.enqueue_batch(pb::EnqueueBatchRequest { jobs }).await?.into_inner();
        let accepted = response
            .results
            .iter()
            .filter(|result| matches!(result.outcome, Some(pb::job_result::Outcome::Success(_))))
            .count();
        if accepted != count {
            return Err(BenchError::Unexpected(format!("{accepted} of {count} jobs accepted")));
        }
        Ok(())
    }

    /// Reserves up to `max_jobs` ready jobs without waiting.
    pub async fn reserve(&mut self, queue: &str, max_jobs: u32) -> Result<Vec<Lease>, BenchError> {
        let request = pb::ReserveRequest {
            queues: vec![queue.to_string()],
            wait_timeout: None,
            lease_duration: Some(ProtoDuration { seconds: LEASE_SECONDS, nanos: 0 }),
            worker_id: None,
            max_jobs: Some(max_jobs),
        };
        let response = self.client.reserve(request).await?.into_inner();
        Ok(response.jobs.into_iter().map(|job| Lease { job_id: job.id, attempt: job.attempt }).collect())
    }

    /// Completes a leased job.
    pub async fn ack(&mut self, lease: &Lease) -> Result<(), BenchError> {
        let request = pb::AckRequest { job_id: lease.job_id.clone(), attempt: lease.attempt, worker_id: None };
        self.client.ack(request).await?;
        Ok(())
    }

    /// Asks for the server's version: the cheapest call that proves the port serves.
    pub async fn server_info(&mut self) -> Result<String, BenchError> {
        let info = self.client.get_server_info(pb::GetServerInfoRequest {}).await?.into_inner();
        Ok(info.server_version)
    }

    fn new_job(&self, queue: &str) -> pb::EnqueueRequest {
        pb::EnqueueRequest {
            queue: queue.to_string(),
            job_type: "bench".to_string(),
            payload: Some(pb::Payload { data: self.payload.clone(), encoding: "application/octet-stream".to_string() }),
            ..Default::default()
        }
    }
}
