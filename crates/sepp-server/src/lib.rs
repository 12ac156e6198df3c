//! The sepp server: the gRPC edge and everything that wires it and the committer to the
//! configuration. The queue rules themselves live in `sepp-core`; the committer, the thread that
//! owns the state, is the `sepp-engine` crate.
//!
//! # Layout
//!
//! - [`server`]: `run(config, listener, reload, clock, shutdown)`, which assembles everything.
//! - [`service`]: one handler per `sepp.v1.QueueService` RPC; [`consume`]: the Consume stream.
//! - [`convert`]: proto <-> core conversions; [`status`]: outcomes -> gRPC statuses.
//! - [`cluster`]: cluster mode: the node [`server`] starts beside the committer, which serves
//!   only while its node leads, and the gate that sends clients of a follower to the leader;
//!   [`cluster_cli`]: `sepp cluster <verb>`, a client of a node's membership service.
//! - [`auth`]: API-key checks; [`throttle`]: the per-client throttle of failed authentication
//!   both listeners share; [`live`]: the hot-reloadable configuration.
//! - [`admin`]: the admin listener (JSON API, SSE live stats, the embedded web UI);
//!   [`admin_cli`]: `sepp admin <verb>`, a client of that API.
//! - [`net`]: the accept path of every listener: `SO_REUSEADDR` binds, connection limits, the
//!   descriptor budget, handshake deadlines.
//! - [`logtext`]: client-supplied strings cut to a bounded length for log lines (the engine's,
//!   re-exported); [`log_limit`]: the flood guard, which holds every log call site to about a
//!   line a second.
//! - [`telemetry`]: OpenTelemetry traces and metrics, the Prometheus endpoint.
//! - [`memory`]: the allocator (mimalloc) of every binary that links this crate.
//!
//! The durable log the committer persists to is the `sepp-log` crate. The server hands the
//! committer its own work through the engine's seams: the admin API's commands are
//! `sepp_engine::Operation`s, its stats publisher a `sepp_engine::StatsSink`, and telemetry's
//! commit-duration histogram is fed through `sepp_engine::Observe`.

// A panic outside the tests is a bug with a message: `expect` says what was assumed.
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod admin;
pub mod admin_cli;
pub mod auth;
pub mod cluster;
pub mod cluster_cli;
pub mod consume;
pub mod convert;
pub mod live;
pub mod log_limit;
pub use sepp_engine::logtext;
pub mod memory;
pub mod net;
pub mod server;
pub mod service;
pub mod status;
pub mod telemetry;
pub mod throttle;

/// The generated wire types and service stubs of `proto/sepp/v1/queue.proto`.
pub mod proto {
    pub mod v1 {
        tonic::include_proto!("sepp.v1");
    }

    /// The encoded file descriptors of the contract, served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sepp_descriptor.bin"));
}
