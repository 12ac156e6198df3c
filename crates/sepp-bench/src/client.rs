//! The only module that talks the sepp protocol: one [`Connection`] is one client, on its own
//! HTTP/2 channel.
//!
//! The load loops drive a client library the way an application would: the same calls and
//! payloads against every target, so only the server differs. The library is ours,
//! `sepp-client`, or the official sepp-rs 0.1 that users who migrate from 0.1 keep running
//! ([`LoadClient`]); sepp-rs is connected with its defaults, as a new user would.

use std::net::SocketAddr;
use std::time::Duration;

use sepp_client::client::SeppClient;
use sepp_client::{EnqueueRequest, JobCtx, Payload, ReserveOptions};

use crate::BenchError;

/// Size of every job payload the load generator sends.
pub const PAYLOAD_BYTES: usize = 256;

/// Leases outlive any phase, so no job is ever redelivered during a measurement.
const LEASE: Duration = Duration::from_secs(300);

/// With `sepp-bench run --keys N`, every job our client enqueues carries the custom entry
/// `tenant = "t<n mod N>"`, n counting jobs across all connections (0: no custom metadata).
pub static KEYS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static KEYED_JOBS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The next job's tenant under [`KEYS`], if keys are on.
fn next_tenant() -> Option<String> {
    use std::sync::atomic::Ordering::Relaxed;
    let keys = KEYS.load(Relaxed);
    (keys > 0).then(|| format!("t{}", KEYED_JOBS.fetch_add(1, Relaxed) % keys))
}

/// The client library that generates the load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadClient {
    /// Our Rust client, `sepp-client`.
    #[default]
    Ours,
    /// The official sepp-rs 0.1.0 client.
    SeppRs,
    /// Our Rust client with `follow_leader(false)`: pointed at a cluster follower, its calls are
    /// forwarded to the leader (the `cluster3-follower` targets).
    OursForwarded,
}

impl LoadClient {
    pub fn name(self) -> &'static str {
        match self {
            LoadClient::Ours => "sepp-client",
            LoadClient::SeppRs => "sepp-rs",
            LoadClient::OursForwarded => "sepp-client, forwarded",
        }
    }

    pub fn parse(name: &str) -> Option<LoadClient> {
        match name {
            "ours" | "sepp-client" => Some(LoadClient::Ours),
            "sepp-rs" => Some(LoadClient::SeppRs),
            _ => None,
        }
    }
}

/// A job held under a lease: what an ack needs.
#[derive(Clone, Debug)]
pub enum Lease {
    Ours(Box<JobCtx>),
    SeppRs(Box<sepp_rs::JobCtx>),
}

/// One client connection (its own HTTP/2 channel) to a sepp-protocol server.
#[derive(Clone)]
pub enum Connection {
    Ours { client: SeppClient, payload: Payload },
    SeppRs { client: sepp_rs::client::SeppClient, payload: sepp_rs::Payload },
}

fn client_error(error: impl std::fmt::Display) -> BenchError {
    BenchError::Unexpected(format!("client: {error}"))
}

fn payload_bytes() -> Vec<u8> {
    vec![b'x'; PAYLOAD_BYTES]
}

const ENCODING: &str = "application/octet-stream";

impl Connection {
    /// Opens a new channel with `client`; it is connected when this returns.
    pub async fn connect(addr: SocketAddr, client: LoadClient) -> Result<Connection, BenchError> {
        let url = format!("http://{addr}");
        Ok(match client {
            LoadClient::Ours | LoadClient::OursForwarded => Connection::Ours {
                client: SeppClient::builder(url)
                    .max_receive_message_bytes(64 * 1024 * 1024)
                    .follow_leader(client != LoadClient::OursForwarded)
                    .connect()
                    .await
                    .map_err(client_error)?,
                payload: Payload::new(payload_bytes(), ENCODING),
            },
            LoadClient::SeppRs => Connection::SeppRs {
                client: sepp_rs::client::SeppClient::connect(url).await.map_err(client_error)?,
                payload: sepp_rs::Payload::new(payload_bytes(), ENCODING),
            },
        })
    }

    /// Enqueues `count` jobs in one EnqueueBatch call; every one must be accepted.
    pub async fn enqueue(&mut self, queue: &str, count: usize) -> Result<(), BenchError> {
        let accepted = match self {
            Connection::Ours { client, payload } => {
                let jobs = (0..count)
                    .map(|_| {
                        let request = EnqueueRequest::new(queue, "bench").map_err(client_error)?;
                        let request = request.with_payload(payload.clone());
                        Ok(match next_tenant() {
                            Some(tenant) => request.with_custom_entry("tenant", tenant),
                            None => request,
                        })
                    })
                    .collect::<Result<Vec<_>, BenchError>>()?;
                let results = client.enqueue_batch(jobs).await.map_err(client_error)?;
                results.iter().filter(|result| result.is_ok()).count()
            }
            Connection::SeppRs { client, payload } => {
                let jobs = (0..count)
                    .map(|_| {
                        Ok(sepp_rs::EnqueueRequest::new(queue, "bench")
                            .map_err(client_error)?
                            .with_payload(payload.clone()))
                    })
                    .collect::<Result<Vec<_>, BenchError>>()?;
                let results = client.enqueue_batch(jobs).await.map_err(client_error)?;
                results.iter().filter(|result| result.is_ok()).count()
            }
        };
        if accepted != count {
            return Err(BenchError::Unexpected(format!("{accepted} of {count} jobs accepted")));
        }
        Ok(())
    }

    /// Reserves up to `max_jobs` ready jobs without waiting.
    pub async fn reserve(&mut self, queue: &str, max_jobs: u32) -> Result<Vec<Lease>, BenchError> {
        match self {
            Connection::Ours { client, .. } => {
                let options = ReserveOptions::new([queue], LEASE)
                    .map_err(client_error)?
                    .with_wait_timeout(Duration::ZERO)
                    .with_max_jobs(max_jobs);
                let jobs = client.reserve(&options).await.map_err(client_error)?.unwrap_or_default();
                Ok(jobs.into_iter().map(|job| Lease::Ours(Box::new(job.ctx))).collect())
            }
            Connection::SeppRs { client, .. } => {
                let options = sepp_rs::ReserveOptions::new(vec![queue.to_string()], LEASE)
                    .map_err(client_error)?
                    .with_wait_timeout(Duration::ZERO)
                    .with_max_jobs(max_jobs);
                let jobs = client.reserve(&options).await.map_err(client_error)?.unwrap_or_default();
                Ok(jobs.into_iter().map(|job| Lease::SeppRs(Box::new(job.ctx))).collect())
            }
        }
    }

    /// Completes a leased job.
    pub async fn ack(&mut self, lease: &Lease) -> Result<(), BenchError> {
        match (self, lease) {
            (Connection::Ours { client, .. }, Lease::Ours(ctx)) => client.ack(ctx).await.map_err(client_error),
            (Connection::SeppRs { client, .. }, Lease::SeppRs(ctx)) => client.ack(ctx).await.map_err(client_error),
            _ => Err(BenchError::Unexpected("a lease acked through another client library".into())),
        }
    }

    /// Asks for the server's version: the cheapest call that proves the port serves.
    pub async fn server_info(&mut self) -> Result<String, BenchError> {
        match self {
            Connection::Ours { client, .. } => Ok(client.get_server_info().await.map_err(client_error)?.version),
            Connection::SeppRs { client, .. } => Ok(client.get_server_info().await.map_err(client_error)?.version),
        }
    }
}
