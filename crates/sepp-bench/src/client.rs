//! The only module that talks the sepp protocol: one [`Connection`] is one `SeppClient`, on its
//! own HTTP/2 channel.
//!
//! The load loops use our Rust client, `sepp-client`, the way an application would: the same
//! client, calls and payloads against every target, so only the server differs.

use std::net::SocketAddr;
use std::time::Duration;

use sepp_client::client::SeppClient;
use sepp_client::{EnqueueRequest, JobCtx, Payload, ReserveOptions};

use crate::BenchError;

/// Size of every job payload the load generator sends.
pub const PAYLOAD_BYTES: usize = 256;

/// Leases outlive any phase, so no job is ever redelivered during a measurement.
const LEASE: Duration = Duration::from_secs(300);

/// A job held under a lease: what an ack needs.
#[derive(Clone, Debug)]
pub struct Lease {
    ctx: JobCtx,
}

/// One client connection (its own HTTP/2 channel) to a sepp-protocol server.
#[derive(Clone)]
pub struct Connection {
    client: SeppClient,
    payload: Payload,
}

fn client_error(error: impl std::fmt::Display) -> BenchError {
    BenchError::Unexpected(format!("client: {error}"))
}

impl Connection {
    /// Opens a new channel; it is connected when this returns.
    pub async fn connect(addr: SocketAddr) -> Result<Connection, BenchError> {
        let client = SeppClient::builder(format!("http://{addr}"))
            .max_receive_message_bytes(64 * 1024 * 1024)
            .connect()
            .await
            .map_err(client_error)?;
        Ok(Connection { client, payload: Payload::new(vec![b'x'; PAYLOAD_BYTES], "application/octet-stream") })
    }

    /// Enqueues `count` jobs in one EnqueueBatch call; every one must be accepted.
    pub async fn enqueue(&mut self, queue: &str, count: usize) -> Result<(), BenchError> {
        let jobs = (0..count)
            .map(|_| Ok(EnqueueRequest::new(queue, "bench").map_err(client_error)?.with_payload(self.payload.clone())))
            .collect::<Result<Vec<_>, BenchError>>()?;
        let results = self.client.enqueue_batch(jobs).await.map_err(client_error)?;
        let accepted = results.iter().filter(|result| result.is_ok()).count();
        if accepted != count {
            return Err(BenchError::Unexpected(format!("{accepted} of {count} jobs accepted")));
        }
        Ok(())
    }

    /// Reserves up to `max_jobs` ready jobs without waiting.
    pub async fn reserve(&mut self, queue: &str, max_jobs: u32) -> Result<Vec<Lease>, BenchError> {
        let options = ReserveOptions::new([queue], LEASE)
            .map_err(client_error)?
            .with_wait_timeout(Duration::ZERO)
            .with_max_jobs(max_jobs);
        let jobs = self.client.reserve(&options).await.map_err(client_error)?.unwrap_or_default();
        Ok(jobs.into_iter().map(|job| Lease { ctx: job.ctx }).collect())
    }

    /// Completes a leased job.
    pub async fn ack(&mut self, lease: &Lease) -> Result<(), BenchError> {
        self.client.ack(&lease.ctx).await.map_err(client_error)
    }

    /// Asks for the server's version: the cheapest call that proves the port serves.
    pub async fn server_info(&mut self) -> Result<String, BenchError> {
        Ok(self.client.get_server_info().await.map_err(client_error)?.version)
    }
}
