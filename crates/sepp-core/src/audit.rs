//! The audit log: what operators did, newest kept, oldest forgotten.
//!
//! An entry is appended with [`crate::State::audit`], which records [`Record::Audited`] in the
//! same cycle (and so the same log frame) as the change it describes: an acknowledged admin
//! action is durable exactly when its effect is. The log is bounded: it keeps the newest
//! [`AUDIT_RETENTION_ENTRIES`] entries, and fewer when they would take more than
//! [`AUDIT_RETENTION_BYTES`]; the rule depends only on the entries, so a replay keeps the same ones.
//!
//! The core treats an entry's fields as text: `details` is a JSON object the server wrote, which
//! the core never parses.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::record::Record;
use crate::state::State;
use crate::types::TimeMs;

/// At most this many entries are kept.
pub const AUDIT_RETENTION_ENTRIES: usize = 10_000;
/// At most this many bytes of entries (their text) are kept.
pub const AUDIT_RETENTION_BYTES: usize = 8 << 20;
/// A page query examines at most this many entries.
pub const AUDIT_SCAN_LIMIT: usize = 1_000;

/// One operator action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// 1 for the first entry of a data directory, one more for each later one.
    pub seq: u64,
    pub ts_ms: TimeMs,
    /// The admin key's name, or `local` when admin authentication is off.
    pub actor: String,
    pub role: String,
    /// For example `dead_letters.requeue`.
    pub action: String,
    /// A JSON object, as the server wrote it.
    pub details: String,
}

impl AuditEntry {
    /// The bytes this entry counts for in [`AUDIT_RETENTION_BYTES`].
    pub fn size_bytes(&self) -> usize {
        self.actor.len() + self.role.len() + self.action.len() + self.details.len() + 16
    }
}

/// What an audit entry says, before it has a number and a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditDraft {
    pub actor: String,
    pub role: String,
    pub action: String,
    pub details: String,
}

/// Which entries a page query wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only entries with a lower `seq` (exclusive cursor).
    pub before: Option<u64>,
    pub limit: usize,
    /// Exact actor match.
    pub actor: Option<String>,
    /// Prefix match on the action.
    pub action_prefix: Option<String>,
}

/// A page of entries, newest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuditPage {
    pub entries: Vec<Arc<AuditEntry>>,
    /// Set when the page filled or the scan limit stopped it with older entries left: ask again
    /// with `before` = this to go on.
    pub next_before: Option<u64>,
}

/// The kept entries, oldest first, with the next number to hand out.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AuditLog {
    entries: VecDeque<Arc<AuditEntry>>,
    bytes: usize,
    next_seq: u64,
}

impl AuditLog {
    pub fn next_seq(&self) -> u64 {
        self.next_seq.max(1)
    }

    pub fn entries(&self) -> impl Iterator<Item = &Arc<AuditEntry>> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The bytes of the kept entries (see [`AuditEntry::size_bytes`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Appends an entry, forgetting the oldest ones past the retention.
    pub fn push(&mut self, entry: Arc<AuditEntry>) {
        self.next_seq = self.next_seq.max(entry.seq + 1);
        self.bytes += entry.size_bytes();
        self.entries.push_back(entry);
        while self.entries.len() > AUDIT_RETENTION_ENTRIES
            || (self.bytes > AUDIT_RETENTION_BYTES && self.entries.len() > 1)
        {
            let oldest = self.entries.pop_front().expect("more than one entry");
            self.bytes -= oldest.size_bytes();
        }
    }

    /// Newest first, from below `query.before`, keeping the entries that match, examining at most
    /// [`AUDIT_SCAN_LIMIT`] of them.
    pub fn page(&self, query: &AuditQuery) -> AuditPage {
        let limit = query.limit.clamp(1, 100);
        let below = match query.before {
            Some(before) => self.entries.partition_point(|entry| entry.seq < before),
            None => self.entries.len(),
        };
        let mut page = AuditPage::default();
        let mut examined = 0;
        let mut index = below;
        while index > 0 && page.entries.len() < limit {
            if examined == AUDIT_SCAN_LIMIT {
                page.next_before = Some(self.entries[index].seq);
                return page;
            }
            index -= 1;
            examined += 1;
            let entry = &self.entries[index];
            let actor_matches = query.actor.as_deref().is_none_or(|actor| entry.actor == actor);
            let action_matches = query.action_prefix.as_deref().is_none_or(|prefix| entry.action.starts_with(prefix));
            if actor_matches && action_matches {
                page.entries.push(entry.clone());
            }
        }
        if page.entries.len() == limit {
            page.next_before = page.entries.last().map(|entry| entry.seq);
        }
        page
    }
}

impl State {
    /// Appends an audit entry stamped `now_ms` and returns it.
    pub fn audit(&mut self, now_ms: TimeMs, draft: AuditDraft, out: &mut Vec<Record>) -> Arc<AuditEntry> {
        let entry = Arc::new(AuditEntry {
            seq: self.audit.next_seq(),
            ts_ms: now_ms,
            actor: draft.actor,
            role: draft.role,
            action: draft.action,
            details: draft.details,
        });
        self.record(Record::Audited { entry: entry.clone() }, out);
        entry
    }

    /// A page of the audit log (see [`AuditQuery`]).
    pub fn audit_page(&self, query: &AuditQuery) -> AuditPage {
        self.audit.page(query)
    }

    /// How many audit entries are kept.
    pub fn audit_len(&self) -> usize {
        self.audit.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, actor: &str, action: &str, details_bytes: usize) -> Arc<AuditEntry> {
        Arc::new(AuditEntry {
            seq,
            ts_ms: seq as TimeMs,
            actor: actor.into(),
            role: "admin".into(),
            action: action.into(),
            details: "x".repeat(details_bytes),
        })
    }

    fn log_of(count: u64) -> AuditLog {
        let mut log = AuditLog::default();
        for seq in 1..=count {
            let actor = if seq % 2 == 0 { "ana" } else { "bob" };
            let action = if seq % 3 == 0 { "queue.delete" } else { "job.enqueue" };
            log.push(entry(seq, actor, action, 2));
        }
        log
    }

    fn seqs(page: &AuditPage) -> Vec<u64> {
        page.entries.iter().map(|entry| entry.seq).collect()
    }

    #[test]
    fn numbers_start_at_one_and_follow_the_highest_entry_seen() {
        let mut log = AuditLog::default();
        assert_eq!(log.next_seq(), 1);
        log.push(entry(7, "a", "b", 0));
        assert_eq!(log.next_seq(), 8);
    }

    #[test]
    fn only_the_newest_entries_are_kept() {
        let log = log_of(AUDIT_RETENTION_ENTRIES as u64 + 5);
        assert_eq!(log.len(), AUDIT_RETENTION_ENTRIES);
        assert_eq!(log.entries().next().unwrap().seq, 6);
        assert_eq!(log.next_seq(), AUDIT_RETENTION_ENTRIES as u64 + 6);
    }

    #[test]
    fn large_entries_are_forgotten_by_size_as_well() {
        let mut log = AuditLog::default();
        let big = AUDIT_RETENTION_BYTES / 4;
        for seq in 1..=6 {
            log.push(entry(seq, "a", "b", big));
        }
        assert!(log.len() < 4, "kept {}", log.len());
        assert_eq!(log.entries().last().unwrap().seq, 6);
        // One entry larger than the whole budget is still kept (the newest always is).
        log.push(entry(7, "a", "b", AUDIT_RETENTION_BYTES * 2));
        assert_eq!(seqs(&log.page(&AuditQuery { limit: 10, ..AuditQuery::default() })), [7]);
    }

    #[test]
    fn pages_go_newest_first_and_a_full_page_gives_a_cursor() {
        let log = log_of(5);
        let first = log.page(&AuditQuery { limit: 2, ..AuditQuery::default() });
        assert_eq!(seqs(&first), [5, 4]);
        assert_eq!(first.next_before, Some(4));
        let second = log.page(&AuditQuery { limit: 2, before: first.next_before, ..AuditQuery::default() });
        assert_eq!(seqs(&second), [3, 2]);
        let last = log.page(&AuditQuery { limit: 2, before: Some(2), ..AuditQuery::default() });
        assert_eq!(seqs(&last), [1]);
        assert_eq!(last.next_before, None, "a short page at the end has no cursor");
    }

    #[test]
    fn filters_match_the_actor_exactly_and_the_action_by_prefix() {
        let log = log_of(12);
        let page = log.page(&AuditQuery {
            limit: 100,
            actor: Some("ana".into()),
            action_prefix: Some("queue.".into()),
            ..AuditQuery::default()
        });
        assert_eq!(seqs(&page), [12, 6]);
        assert_eq!(page.next_before, None);
        let none = log.page(&AuditQuery { limit: 100, actor: Some("an".into()), ..AuditQuery::default() });
        assert!(none.entries.is_empty());
    }

    #[test]
    fn a_scan_stops_after_the_scan_limit_with_a_cursor_to_go_on() {
        let log = log_of(AUDIT_SCAN_LIMIT as u64 + 10);
        let query = AuditQuery { limit: 100, actor: Some("nobody".into()), ..AuditQuery::default() };
        let page = log.page(&query);
        assert!(page.entries.is_empty());
        assert_eq!(page.next_before, Some(11), "the oldest entry examined");
        let rest = log.page(&AuditQuery { before: page.next_before, ..query });
        assert_eq!(rest.next_before, None, "the rest fits in one scan");
    }
}
