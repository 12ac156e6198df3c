//! The committer: the one thread that owns the queue state.
//!
//! Callers send [`Command`]s over a bounded channel (they wait when it is full). Each cycle the
//! committer drains every waiting command, stamps one `now`, applies them to the core, runs the
//! sweep when something is due, serves parked reserves that can now be served, hands the records
//! of the whole group to the [`Log`](sepp_log::Log) and persists once, and only then answers every
//! caller. It owns no wire types and makes no queue decisions of its own: the rules are
//! `sepp-core`'s, the durable log is `sepp-log`'s.
//!
//! What its user adds goes through narrow seams it defines: an [`Operation`] runs on the state
//! inside a cycle (the server's admin API is made of them), a [`StatsSink`] is handed the state
//! after every cycle, and [`Observe`] says what telemetry wants handed over.
//!
//! # Layout
//!
//! - [`command`]: the [`Command`]s, the [`Operation`] seam with its [`Cycle`], and the answers
//!   sent once a cycle is durable.
//! - [`handle`]: [`CommitterHandle`], the sending side, and [`Closed`].
//! - `committer`: [`spawn`], the loop and one cycle (apply, parked reserves, cancelled leases).
//! - `persist`: the persist pipeline, checkpoints' relocations, poisoned storage.
//! - [`leadership`]: cluster mode: leading from the committed state, stepping down, following.
//! - `sweep`: the time-driven sweep and what it hands to telemetry and the log.
//! - [`observe`]: the [`StatsSink`] and [`Observe`] seams and what a sweep did ([`Swept`]).
//! - [`clock`]: where each cycle reads its `now`.
//! - [`logtext`]: client-supplied strings cut to a bounded length for log lines.
//!
//! # Fixed limits
//!
//! The engine's own bounds are the constants below ([`MAX_GROUP`], [`CANCEL_FEED_CAPACITY`],
//! the debug builds' invariant checks), and [`logtext`]'s two. Everything an operator tunes
//! (queue depth, batch sizes, the sweep) comes in through the core's `Policy` and
//! [`CommitterSettings`].

// No unsafe code here; a panic in the library is a bug with a message (`expect` says what was
// assumed).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod clock;
pub mod command;
mod committer;
pub mod handle;
pub mod leadership;
pub mod logtext;
pub mod observe;
mod persist;
mod sweep;

pub use clock::{Clock, SystemClock};
pub use command::{Command, Cycle, Deferred, Loaded, Operation, Reply, Settled};
pub use committer::{CommitterSettings, spawn};
pub use handle::{Closed, CommitterHandle, Stopped};
pub use leadership::NotLeading;
pub use observe::{Observe, StatsSink, Swept};

/// The target of the committer's log lines: the module it had in the server, which operators'
/// filters name (`logging.level = "info,sepp_server::committer=debug"`).
pub(crate) const LOG_TARGET: &str = "sepp_server::committer";

/// Most commands applied in one cycle; bounds reply latency under a flood.
pub const MAX_GROUP: usize = 4096;

/// Cancelled leases kept for a Consume stream that has not read them yet.
pub const CANCEL_FEED_CAPACITY: usize = 4096;

/// Debug builds check the state's invariants after every cycle while it holds at most this
/// many jobs (a check walks the whole state)...
pub const CHECK_EVERY_CYCLE_UP_TO: u64 = 10_000;
/// ...and after every this many cycles beyond.
pub const CHECK_EVERY_NTH_CYCLE: u64 = 256;
