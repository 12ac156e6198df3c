//! sepp-log: the durable log of the queue's records.
//!
//! The committer hands each cycle's records to a [`Log`]: [`Log::append`], [`Log::write`] and
//! a sync (which may run while the committer applies its next cycle), and only then answers the
//! callers of that cycle. [`DurableLog`] keeps them
//! in checksummed segment files, writes checkpoints so disk use follows the live data rather than
//! history, and replays everything on open.
//!
//! # Layout
//!
//! - `codec`: the binary encoding of one record.
//! - `frame`: a checksummed group of records (one committer cycle).
//! - `durable`: segments, checkpoints, recovery and reclaiming (files, the preparer and syncer
//!   threads, replay).
//! - [`Relocations`] (in `relocations`): where a finished checkpoint moved payloads to, handed to
//!   the committer a slice per cycle.

// A panic in the library is a bug with a message: `expect` says what was assumed.
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod codec;
pub mod frame;

mod durable;
mod relocations;

use std::io;

use sepp_core::{JobId, Record, Snapshot, StoredPayload};

pub use durable::{DurableLog, LogOptions, OpenError, Recovery, TruncatedTail};
pub use relocations::Relocations;
pub use sepp_core::PersistMode;

/// Where the committer persists records.
///
/// A cycle's records go out as [`Log::append`] then [`Log::write`], and become durable with
/// [`Log::sync`], or with [`Log::start_sync`] and later [`Log::finish_sync`], between which the
/// caller may prepare its next cycles (writing up to [`Log::max_in_flight`] frames; `write`
/// waits for the oldest sync beyond that).
/// After an error from `write` or any sync the caller acknowledges nothing written since the last
/// successful sync; when [`Log::failure_is_final`] (a local disk: fsync failures cannot be
/// retried) it stops acknowledging writes at all.
///
/// A log that keeps no checkpoints (compaction is someone else's, or there is nothing to
/// compact) leaves the checkpoint calls at their defaults, which never want one.
pub trait Log: Send {
    /// Adds the records of one cycle, which become durable together or not at all.
    fn append(&mut self, records: &[Record]) -> io::Result<()>;
    /// Writes everything appended so far, after waiting for the oldest sync in flight when
    /// [`Log::max_in_flight`] are, and returns where the large payloads of those records now are
    /// (for `State::place_payload`). Not durable until a sync finished.
    fn write(&mut self) -> io::Result<Vec<(JobId, StoredPayload)>>;
    /// Makes everything written so far as durable as the persist mode promises, waiting for it.
    fn sync(&mut self) -> io::Result<()>;
    /// Starts making everything written so far durable, in the background.
    fn start_sync(&mut self);
    /// Waits for the oldest sync [`Log::start_sync`] started (at once when none is in flight).
    fn finish_sync(&mut self) -> io::Result<()>;
    /// Whether running syncs in the background is worth its cost: they take long enough that a
    /// cycle would otherwise wait on them for longer than the next cycle takes to apply.
    fn background_sync_pays(&self) -> bool;
    /// Whether a failed write or sync must stop the committer for good (a local disk that
    /// failed: storage is poisoned). A replicated log's failed proposal is not: the node stops
    /// leading and follows.
    fn failure_is_final(&self) -> bool {
        true
    }
    /// How many written frames may wait for their sync at once, each finished by one
    /// [`Log::finish_sync`] in the order written. A local log keeps one: a frame a power loss
    /// tears must be the last one, for recovery to cut it.
    fn max_in_flight(&self) -> usize {
        1
    }
    /// [`Log::write`] then [`Log::sync`].
    fn persist(&mut self) -> io::Result<Vec<(JobId, StoredPayload)>> {
        let placed = self.write()?;
        self.sync()?;
        Ok(placed)
    }
    /// Reads back the bytes of a stored payload.
    fn read_payload(&mut self, stored: &StoredPayload) -> io::Result<Vec<u8>>;
    /// Jobs the committer holds that the log's owner now holds in another allocation (a
    /// replicated log's state machine, which put their payloads in its files): the committer
    /// takes each in place of its own (`State::adopt_job`), so the two share it. None for a
    /// local log.
    fn adopted_jobs(&mut self) -> Vec<std::sync::Arc<sepp_core::Job>> {
        Vec::new()
    }
    /// Whether a checkpoint now would reclaim space, given the live state's approximate size.
    fn wants_checkpoint(&self, _live_bytes: u64) -> bool {
        false
    }
    /// Starts a checkpoint of `snapshot`, the records that rebuild the current state.
    fn checkpoint(&mut self, _snapshot: Snapshot) -> io::Result<()> {
        Ok(())
    }
    /// When a checkpoint finished: the new places of the payloads it moved (apply them with
    /// `State::place_payload`, then call [`Log::reclaim`]). Empty otherwise, and also when the
    /// checkpoint moved nothing, which must be reclaimed all the same.
    fn poll_checkpoint(&mut self) -> Relocations {
        Relocations::default()
    }
    /// Whether a finished checkpoint waits for [`Log::reclaim`].
    fn reclaim_due(&self) -> bool {
        false
    }
    /// Deletes the files a finished checkpoint replaced (nothing when no checkpoint finished).
    /// Call after applying all its relocations; no checkpoint starts before this succeeded. An
    /// error leaves the finished checkpoint to be reclaimed by a later call.
    fn reclaim(&mut self) -> io::Result<()> {
        Ok(())
    }
}
