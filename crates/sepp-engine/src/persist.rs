//! Making cycles durable: the persist pipeline (a frame syncing in the background while the next
//! cycle is applied), checkpoints' relocations, and poisoned storage.

use std::sync::Arc;

use sepp_core::PayloadData;

use crate::command::{Answer, Loaded, Unclaimed};
use crate::committer::Committer;

impl Committer {
    /// Puts back what a gone caller did not take: leases are released (the jobs are ready again
    /// under the same attempt), drained dead letters are kept again, with their payloads as
    /// read for the answer (their old place may belong to files a checkpoint is replacing).
    /// The records go out with the next cycle, which runs at once.
    pub(crate) fn take_back(&mut self, unclaimed: Unclaimed) {
        match unclaimed {
            Unclaimed::Leases(deliveries) => {
                for delivery in deliveries {
                    // The lease is this cycle's own, so it is still current.
                    let _ = self.state.release(delivery.job.id, delivery.attempt, &mut self.records);
                }
            }
            Unclaimed::DeadLetters(dead_letters) => {
                for Loaded { value: mut dead, payload_data } in dead_letters {
                    if let (Some(payload), Some(bytes)) = (&dead.job.payload, payload_data) {
                        let mut job = (*dead.job).clone();
                        job.payload = Some(sepp_core::JobPayload {
                            encoding: payload.encoding.clone(),
                            data: PayloadData::Inline(bytes.into_boxed_slice()),
                        });
                        dead.job = Arc::new(job);
                    }
                    self.state.restore_dead_letter(dead, &mut self.records);
                }
            }
        }
    }

    /// Sends `answers`, and takes back what callers that left did not take (into the next
    /// cycle's records).
    pub(crate) fn answer_all(&mut self, answers: Vec<Answer>) {
        let unclaimed: Vec<Unclaimed> =
            answers.into_iter().filter_map(|answer| answer.send(self.log.as_mut())).collect();
        for unclaimed in unclaimed {
            self.take_back(unclaimed);
        }
    }

    /// Waits for the background syncs of the cycles in flight, oldest first, sending each
    /// cycle's answers as its sync finishes, until at most `keep` cycles are left in flight.
    pub(crate) fn flush_pending(&mut self, keep: usize) -> std::io::Result<()> {
        while self.pending.len() > keep
            && let Some(answers) = self.pending.pop_front()
        {
            self.log.finish_sync()?;
            self.answer_all(answers);
        }
        Ok(())
    }

    /// Whether this cycle's frame may sync in the background while the next cycle is applied:
    /// only when the log says its syncs are slow enough for that to pay, while commands already
    /// wait (an idle server answers at once, with no hand-off to the syncer), not when closing,
    /// and not while a finished checkpoint waits to delete the files it replaced (pending
    /// answers may still read payloads from them).
    pub(crate) fn may_pipeline(&self) -> bool {
        let reclaim_waits = self.relocating.is_empty() && self.log.reclaim_due();
        !self.close && !self.receiver.is_empty() && !reclaim_waits && self.log.background_sync_pays()
    }

    /// Writes and persists the cycle's records, and starts a checkpoint when one is due.
    ///
    /// Pipelined while commands wait: the frame of cycle N syncs in the background while cycle
    /// N+1 is applied and encoded; then, when the log holds no more frames in flight
    /// (`Log::max_in_flight`: one for the local log, several for a replicated one), the oldest
    /// sync is awaited and its callers answered before N+1's frame is written and its sync
    /// started. So the disk's (or the quorum's) time overlaps the committer's own work instead
    /// of adding to it, and no caller hears an answer before every frame up to its own cycle's
    /// is durable.
    pub(crate) fn persist(&mut self) -> std::io::Result<()> {
        if self.records.is_empty() {
            // This cycle's answers may rest on any cycle still in flight.
            return self.flush_pending(0);
        }
        self.log.append(&self.records)?;
        self.records.clear();
        // Room for this cycle's frame among those in flight.
        self.flush_pending(self.log.max_in_flight().max(1) - 1)?;
        let placed = self.log.write()?;
        for (job_id, stored) in placed {
            self.state.place_payload(job_id, stored);
        }
        if self.log.wants_checkpoint(self.state.live_bytes()) {
            self.log.checkpoint(self.state.snapshot())?;
        }
        if self.may_pipeline() {
            self.log.start_sync();
            self.pending.push_back(std::mem::take(&mut self.answers));
            return Ok(());
        }
        self.flush_pending(0)?;
        self.log.sync()
    }

    /// Moves payloads a finished checkpoint relocated, a slice per cycle, then lets the log
    /// delete what it replaced. (A million relocations take the core about 80 ms, which no
    /// cycle's callers should wait for at once.)
    pub(crate) fn maintain_log(&mut self) {
        if self.relocating.is_empty() {
            self.relocating = self.log.poll_checkpoint();
        }
        for (job_id, stored) in self.relocating.by_ref().take(self.relocations_per_cycle) {
            self.state.place_payload(job_id, stored);
        }
        for job in self.log.adopted_jobs() {
            self.state.adopt_job(job);
        }
        // Answers still waiting for their sync may read payloads from the files it deletes.
        if self.relocating.is_empty()
            && self.pending.is_empty()
            && let Err(error) = self.log.reclaim()
        {
            // The old files stay until a later cycle manages; nothing acknowledged is at stake.
            tracing::warn!(
                target: crate::LOG_TARGET,
                %error,
                "deleting log files a checkpoint replaced failed; trying again next cycle"
            );
        }
    }

    /// A write or sync failed: storage is poisoned. Nothing of this cycle is acknowledged (the
    /// answers are dropped, so their callers see INTERNAL), and the loop stops, so every later
    /// command fails the same way. A failed sync is never retried: the kernel may already have
    /// dropped the pages it could not write, and a second sync could report success for them.
    /// The server sees the reason through [`crate::CommitterHandle::poisoned`] and exits with an error.
    pub(crate) fn poisoned(&mut self, error: &std::io::Error) {
        tracing::error!(
            target: crate::LOG_TARGET,
            %error,
            "persisting the log failed; storage is poisoned and the server stops"
        );
        self.answers.clear();
        self.pending.clear();
        self.records.clear();
        self.poison.send_replace(Some(format!("persisting the log failed: {error}")));
    }
}
