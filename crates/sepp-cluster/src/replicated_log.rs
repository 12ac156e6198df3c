//! The committer's log on a cluster's leader: each cycle's frame is proposed to Raft as one
//! entry, and "durable" means committed, that is on a quorum of nodes, each of which synced it.
//!
//! It is `sepp_log::Log`, so the committer drives it as it drives the local log: `write`
//! proposes the frame, `finish_sync` waits until Raft committed the oldest proposal (or failed
//! to), and only then are that cycle's callers answered. Proposals run while the committer
//! applies its next cycles (`background_sync_pays` is always true: the wait is a round trip to
//! the other nodes), up to [`MAX_IN_FLIGHT`] at once; one task hands them to Raft, so entries
//! are in the log in the order the committer made them.
//!
//! Each frame is also left, with the records it was encoded from, in the state machine's
//! [`LocalFrames`], so that this node applies its own entries from those records and holds each
//! job once.
//!
//! The committer's jobs keep their payloads in memory until their entry is applied; then the
//! state machine has written them to its payload files ([`crate::PayloadStore`]) and offers the
//! jobs, placed, to the committer ([`Log::adopted_jobs`]), which takes them in place of its own;
//! stored payloads are read back from those files. [`Log::reclaim`] tells the files the
//! committer took what was offered and answers nothing read before, so files whose payloads
//! moved may go. Compaction is Raft's (snapshots of the state machine), so the checkpoint calls
//! do nothing. A proposal that fails (this node is no longer the leader, or
//! Raft stopped) is an error that is not final: the committer answers nothing of the cycles
//! not committed, drops its state and follows until it is told to lead again.

use std::collections::VecDeque;
use std::io;

use std::sync::Arc;

use sepp_core::{Job, JobId, Record, StoredPayload};
use sepp_log::{Log, frame};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};

use crate::LocalFrames;
use crate::{Frame, Raft};

/// Proposals a leader's committer may have in flight at once.
pub const MAX_IN_FLIGHT: usize = 8;

type Done = oneshot::Sender<Result<(), String>>;

/// The log of a leader's committer: its frames go to Raft.
pub struct ReplicatedLog {
    proposals: mpsc::UnboundedSender<(Frame, Done)>,
    buffer: Vec<u8>,
    /// The records `buffer` encodes.
    records: Vec<Record>,
    local: LocalFrames,
    placements: Vec<sepp_log::codec::Placement>,
    /// The outcomes of the proposals in flight, oldest first.
    in_flight: VecDeque<oneshot::Receiver<Result<(), String>>>,
    /// The generation of adoption this committer is offered jobs in (0: none; see
    /// `StateMachine::lead_state`).
    adopting: u64,
}

impl ReplicatedLog {
    /// Proposes through `raft`, whose calls run on `runtime`, leaving each frame in `local` (the
    /// node's state machine's; see [`LocalFrames`]), which starts empty.
    /// The committer is offered the machine's placed jobs when its state came from
    /// `StateMachine::lead_state` just before.
    pub fn new(raft: Raft, runtime: Handle, local: LocalFrames) -> ReplicatedLog {
        local.clear();
        let adopting = local.payloads().map_or(0, crate::PayloadStore::adopting);
        let (proposals, mut queued) = mpsc::unbounded_channel::<(Frame, Done)>();
        let waits = runtime.clone();
        // One task submits the proposals, in order; each outcome is awaited on its own.
        runtime.spawn(async move {
            while let Some((frame, done)) = queued.recv().await {
                match raft.client_write_ff(frame).await {
                    Ok(responder) => {
                        waits.spawn(async move {
                            let outcome = match responder.await {
                                Ok(Ok(_)) => Ok(()),
                                Ok(Err(error)) => Err(error.to_string()),
                                Err(_) => Err("Raft dropped the proposal".to_owned()),
                            };
                            let _ = done.send(outcome);
                        });
                    }
                    Err(fatal) => {
                        let _ = done.send(Err(fatal.to_string()));
                    }
                }
            }
        });
        ReplicatedLog {
            proposals,
            buffer: Vec::new(),
            records: Vec::new(),
            local,
            placements: Vec::new(),
            in_flight: VecDeque::new(),
            adopting,
        }
    }
}

impl Drop for ReplicatedLog {
    /// A log that is gone (its node no longer leads) leaves no frame waiting, holding its jobs:
    /// what of them is still applied is decoded, as a follower's entries are.
    fn drop(&mut self) {
        self.local.clear();
        if let Some(payloads) = self.local.payloads() {
            payloads.stop_adopting(self.adopting);
        }
    }
}

impl Log for ReplicatedLog {
    fn append(&mut self, records: &[Record]) -> io::Result<()> {
        frame::encode(records, &mut self.buffer, &mut self.placements);
        self.records.extend_from_slice(records);
        Ok(())
    }

    fn write(&mut self) -> io::Result<Vec<(JobId, StoredPayload)>> {
        while self.in_flight.len() >= MAX_IN_FLIGHT {
            self.finish_sync()?;
        }
        self.placements.clear();
        let records = std::mem::take(&mut self.records);
        if self.buffer.is_empty() {
            return Ok(Vec::new());
        }
        let bytes = std::mem::take(&mut self.buffer);
        self.local.push(bytes.clone(), records);
        let (done, outcome) = oneshot::channel();
        // Should the proposing task be gone, `done` is dropped, and finishing this one fails.
        let _ = self.proposals.send((Frame(bytes), done));
        self.in_flight.push_back(outcome);
        Ok(Vec::new())
    }

    fn sync(&mut self) -> io::Result<()> {
        while !self.in_flight.is_empty() {
            self.finish_sync()?;
        }
        Ok(())
    }

    fn start_sync(&mut self) {}

    fn finish_sync(&mut self) -> io::Result<()> {
        let Some(outcome) = self.in_flight.pop_front() else { return Ok(()) };
        match outcome.blocking_recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(io::Error::other(format!("Raft did not commit the entry: {error}"))),
            Err(_) => Err(io::Error::other("Raft stopped before it committed the entry")),
        }
    }

    fn background_sync_pays(&self) -> bool {
        true
    }

    fn max_in_flight(&self) -> usize {
        MAX_IN_FLIGHT
    }

    fn failure_is_final(&self) -> bool {
        false
    }

    fn read_payload(&mut self, stored: &StoredPayload) -> io::Result<Vec<u8>> {
        match self.local.payloads() {
            Some(payloads) => payloads.read(stored),
            None => Err(io::Error::other("this log has no payload files")),
        }
    }

    fn adopted_jobs(&mut self) -> Vec<Arc<Job>> {
        match self.local.payloads() {
            Some(payloads) if self.adopting != 0 && payloads.adopting() == self.adopting => payloads.take_adopted(),
            _ => Vec::new(),
        }
    }

    fn reclaim_due(&self) -> bool {
        self.local.payloads().is_some_and(crate::PayloadStore::waits_for_committer)
    }

    fn reclaim(&mut self) -> io::Result<()> {
        if let Some(payloads) = self.local.payloads()
            && self.adopting != 0
            && payloads.adopting() == self.adopting
        {
            payloads.confirm();
        }
        Ok(())
    }
}
