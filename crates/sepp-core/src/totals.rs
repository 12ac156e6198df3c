//! Per-queue totals since start: how many jobs each queue took in, handed out, completed, failed
//! and lost to the dead-letter queue. They feed the admin dashboard's rates.
//!
//! Totals are counted only once [`crate::State::count_totals`] turned them on (the committer does
//! while stats are published: when the server's admin listener or metrics run), at the
//! operations themselves where the queue is at hand, and never on replay: they describe this run
//! of the process, not the data. They are not records.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::state::State;

/// What one queue did since totals were turned on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueTotals {
    /// New jobs inserted (deduplicated enqueues do not count).
    pub enqueued: u64,
    /// Deliveries to workers.
    pub reserved: u64,
    pub acked: u64,
    /// Every successful nack, whatever became of the job.
    pub nacked: u64,
    /// Jobs dead-lettered, for any cause.
    pub dead_lettered: u64,
}

/// Which total an operation adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Total {
    Enqueued,
    Reserved,
    Acked,
    Nacked,
    DeadLettered,
}

/// The totals of every queue that did anything, when counting is on.
#[derive(Clone, Debug, Default)]
pub(crate) struct TotalsTable {
    counting: bool,
    by_queue: HashMap<Arc<str>, QueueTotals>,
}

impl TotalsTable {
    pub fn is_counting(&self) -> bool {
        self.counting
    }

    pub fn add(&mut self, queue: &str, total: Total, count: u64) {
        if !self.counting || count == 0 {
            return;
        }
        let totals = match self.by_queue.get_mut(queue) {
            Some(totals) => totals,
            None => self.by_queue.entry(Arc::from(queue)).or_default(),
        };
        let field = match total {
            Total::Enqueued => &mut totals.enqueued,
            Total::Reserved => &mut totals.reserved,
            Total::Acked => &mut totals.acked,
            Total::Nacked => &mut totals.nacked,
            Total::DeadLettered => &mut totals.dead_lettered,
        };
        *field += count;
    }
}

impl State {
    /// Starts counting [`QueueTotals`] from now on.
    pub fn count_totals(&mut self) {
        self.totals.counting = true;
    }

    /// Whether [`State::count_totals`] turned counting on.
    pub fn counts_totals(&self) -> bool {
        self.totals.counting
    }

    /// The totals of every queue that did anything since counting started (and was not
    /// forgotten since).
    pub fn totals(&self) -> impl Iterator<Item = (&Arc<str>, &QueueTotals)> {
        self.totals.by_queue.iter()
    }

    /// Drops the totals of `queue` (after a purge, so it leaves the dashboard at once).
    pub fn forget_totals(&mut self, queue: &str) {
        self.totals.by_queue.remove(queue);
    }

    pub(crate) fn add_total(&mut self, queue: &str, total: Total, count: u64) {
        self.totals.add(queue, total, count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_counted_until_counting_is_turned_on() {
        let mut table = TotalsTable::default();
        table.add("q", Total::Acked, 1);
        assert!(table.by_queue.is_empty());
        table.counting = true;
        table.add("q", Total::Acked, 2);
        table.add("q", Total::Enqueued, 3);
        table.add("other", Total::Reserved, 0);
        assert_eq!(table.by_queue.len(), 1, "a zero count creates no entry");
        assert_eq!(table.by_queue["q"], QueueTotals { acked: 2, enqueued: 3, ..QueueTotals::default() });
    }
}
