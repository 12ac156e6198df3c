//! sepp-bench: measures a sepp-protocol server the way users compare job queues, side by side
//! with the sepp 0.1.1 server and the gRPC ceiling, in one run on one machine.
//!
//! # Layout
//!
//! - [`client`]: the only module that speaks the protocol (one `Connection` per HTTP/2 channel).
//! - [`phases`]: the closed-loop load phases: enqueue, drain, latency.
//! - [`server`]: starting a server binary with a fresh data directory, SIGTERM, restart.
//! - [`procfs`]: server CPU seconds, RSS and data directory size from `/proc` and the disk.
//! - [`ceiling`]: the do-nothing `QueueService` on the same tonic stack.
//! - [`compare`]: every scenario against every target, alternating; latency; the backlog.
//! - [`cluster`]: three nodes of our server made one cluster (the `cluster3` targets).
//! - [`failover`]: a cluster's leader SIGKILLed under load: how long until writes are
//!   acknowledged again, and that no acknowledged job was lost.
//! - [`clients`]: the client libraries (Rust, TypeScript, Python, sepp-py 0.1) side by side on
//!   one server, each through its own benchmark program.
//! - [`results`], [`report`], [`chart`]: the raw results (JSON), the Markdown tables, the SVG.
//! - [`peers`], [`peers_report`]: sepp beside BullMQ, pg-boss, RabbitMQ, NATS JetStream and
//!   beanstalkd, each through its own client from a driver program; their tables and chart.
//! - [`nats_driver`]: the NATS JetStream driver (async-nats), which speaks the drivers' protocol.
//! - [`admin_cost`]: what the admin listener costs (load with it off and on, listing calls).
//! - [`obs_cost`]: what metrics and tracing cost (load with each off and on).
//!
//! The binary (`src/main.rs`) is the command line around these; `benches/core.rs` measures
//! `sepp-core` alone.

// A panic outside the tests is a bug with a message: `expect` says what was assumed.
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod admin_cost;
pub mod ceiling;
pub mod chart;
pub mod client;
pub mod clients;
pub mod cluster;
pub mod compare;
pub mod failover;
pub mod nats_driver;
pub mod obs_cost;
pub mod peers;
pub mod peers_report;
pub mod phases;
pub mod procfs;
pub mod report;
pub mod results;
pub mod server;

/// Why a measurement could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("call failed: {0}")]
    Rpc(Box<tonic::Status>),
    #[error("could not connect: {0}")]
    Transport(tonic::transport::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("server: {0}")]
    Server(String),
    #[error("{0}")]
    Unexpected(String),
}

impl From<tonic::Status> for BenchError {
    fn from(status: tonic::Status) -> Self {
        BenchError::Rpc(Box::new(status))
    }
}
