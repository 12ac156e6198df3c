//! The committer's log on a cluster's leader: each cycle's frame is proposed to Raft as one
//! entry, and "durable" means committed, that is on a quorum of nodes, each of which synced it.
//!
//! It is `sepp_log::Log`, so the committer drives it as it drives the local log: `write`
//! proposes the frame, `finish_sync` waits until Raft committed it (or failed to), and only then
//! are that cycle's callers answered. The proposal runs while the committer applies its next
//! cycle (`background_sync_pays` is always true: the wait is a round trip to the other nodes),
//! with one entry in flight at a time, so entries commit in the order the committer made them.
//!
//! Payloads stay in the committer's memory (the frame carries them to every node; there is no
//! local file to point into), and compaction is Raft's (snapshots of the state machine), so the
//! checkpoint calls do nothing. A proposal that fails (this node is no longer the leader, or
//! Raft stopped) is an error that is not final: the committer answers nothing of the cycles
//! not committed, drops its state and follows until it is told to lead again.

use std::io;

use sepp_core::{JobId, Record, Snapshot, StoredPayload};
use sepp_log::{Log, Relocations, frame};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::{Frame, LogId, Raft};

/// The log of a leader's committer: its frames go to Raft.
pub struct ReplicatedLog {
    raft: Raft,
    runtime: Handle,
    buffer: Vec<u8>,
    placements: Vec<sepp_log::codec::Placement>,
    in_flight: Option<oneshot::Receiver<Result<LogId, String>>>,
}

impl ReplicatedLog {
    /// Proposes through `raft`, whose calls run on `runtime`.
    pub fn new(raft: Raft, runtime: Handle) -> ReplicatedLog {
        ReplicatedLog { raft, runtime, buffer: Vec::new(), placements: Vec::new(), in_flight: None }
    }
}

impl Log for ReplicatedLog {
    fn append(&mut self, records: &[Record]) -> io::Result<()> {
        frame::encode(records, &mut self.buffer, &mut self.placements);
        Ok(())
    }

    fn write(&mut self) -> io::Result<Vec<(JobId, StoredPayload)>> {
        self.finish_sync()?;
        self.placements.clear();
        if self.buffer.is_empty() {
            return Ok(Vec::new());
        }
        let entry = Frame(std::mem::take(&mut self.buffer));
        let raft = self.raft.clone();
        let (done, result) = oneshot::channel();
        self.runtime.spawn(async move {
            let written =
                raft.client_write(entry).await.map(|written| written.log_id).map_err(|error| error.to_string());
            let _ = done.send(written);
        });
        self.in_flight = Some(result);
        Ok(Vec::new())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.finish_sync()
    }

    fn start_sync(&mut self) {}

    fn finish_sync(&mut self) -> io::Result<()> {
        let Some(result) = self.in_flight.take() else { return Ok(()) };
        match result.blocking_recv() {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(io::Error::other(format!("Raft did not commit the entry: {error}"))),
            Err(_) => Err(io::Error::other("Raft stopped before it committed the entry")),
        }
    }

    fn background_sync_pays(&self) -> bool {
        true
    }

    fn failure_is_final(&self) -> bool {
        false
    }

    fn read_payload(&mut self, _stored: &StoredPayload) -> io::Result<Vec<u8>> {
        Err(io::Error::other("a replicated log keeps payloads in memory; none is stored"))
    }

    fn wants_checkpoint(&self, _live_bytes: u64) -> bool {
        false
    }

    fn checkpoint(&mut self, _snapshot: Snapshot) -> io::Result<()> {
        Ok(())
    }

    fn poll_checkpoint(&mut self) -> Relocations {
        Relocations::default()
    }

    fn reclaim_due(&self) -> bool {
        false
    }

    fn reclaim(&mut self) -> io::Result<()> {
        Ok(())
    }
}
