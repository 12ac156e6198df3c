//! Cluster mode: a committer that leads serves from the committed state and proposes through a
//! replicated log; one that follows holds an empty state and refuses every command.

use sepp_core::{JobId, Record, State};
use sepp_log::Log;

use crate::committer::Committer;

/// The log of a committer that follows (cluster mode, before [`crate::Command::Lead`] and after it
/// steps down): nothing reaches it, since commands are refused before.
pub struct NotLeading;

impl Log for NotLeading {
    fn append(&mut self, _records: &[Record]) -> std::io::Result<()> {
        Err(std::io::Error::other("this node does not lead"))
    }
    fn write(&mut self) -> std::io::Result<Vec<(JobId, sepp_core::StoredPayload)>> {
        Ok(Vec::new())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn start_sync(&mut self) {}
    fn finish_sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn background_sync_pays(&self) -> bool {
        false
    }
    fn failure_is_final(&self) -> bool {
        false
    }
    fn read_payload(&mut self, _stored: &sepp_core::StoredPayload) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::other("this node does not lead"))
    }
}

impl Committer {
    /// Starts serving from `state` (the committed state), proposing through `log`. The state
    /// gets the policy the committer was last given, and counts totals from now on while stats
    /// are published (the state machine's copy never counts them).
    pub(crate) fn lead(&mut self, mut state: State, log: Box<dyn Log>) {
        state.set_policy(self.state.policy().clone());
        if self.counts_totals() {
            state.count_totals();
        }
        self.state = state;
        self.log = log;
        self.following = false;
        self.served_generation = 0;
        self.relocating = sepp_log::Relocations::default();
        tracing::info!(target: crate::LOG_TARGET, "this node leads; serving");
        self.leading.send_replace(true);
    }

    /// Stops serving: nothing of the cycles not yet durable is answered (their callers hear
    /// nothing, as on a failed write), parked reserves are answered empty, and the state, which
    /// may hold what was never committed, is dropped for an empty one. Later commands are
    /// refused until the committer is told to lead again, with the committed state.
    pub(crate) fn step_down(&mut self, why: &str) {
        self.answers.clear();
        self.pending.clear();
        self.records.clear();
        self.answer_waiters_empty();
        let mut empty = State::new(self.state.policy().clone(), self.state.rules());
        if self.counts_totals() {
            empty.count_totals();
        }
        self.state = empty;
        self.log = Box::new(NotLeading);
        self.relocating = sepp_log::Relocations::default();
        if !self.following {
            tracing::warn!(target: crate::LOG_TARGET, why, "this node no longer leads; refusing commands");
        }
        self.following = true;
        self.leading.send_replace(false);
    }

    /// Whether a state the committer serves from must count totals: while a stats sink is
    /// installed (see [`crate::Command::PublishStats`]), or when the state it replaces counted them.
    fn counts_totals(&self) -> bool {
        self.stats.is_some() || self.state.counts_totals()
    }
}
