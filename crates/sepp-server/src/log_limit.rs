//! No log line can flood: every call site that logs at info, warn or error is rate-limited on its
//! own, so a line a client, a schedule, a peer or a timer can repeat costs at most about one line
//! a second however often it happens.
//!
//! [`FloodGuard`] is a layer of the tracing subscriber (the binary's `init_logging` installs it
//! outermost, behind the log's own filter), so it covers every line that reaches the log, the server's own and those of its
//! libraries (openraft's error lines about an unreachable peer, tonic's, hyper's) alike. Each call
//! site (one `info!`/`warn!`/`error!` in the source) has a [`Budget`]: [`BURST_LINES`] at once,
//! refilled at one line a second. A line beyond it is dropped and counted; the next line the call
//! site may log is followed by one line at the same level, `N similar lines suppressed`, naming
//! the call site. The summary is logged from [`Layer::on_event`], once the line itself went
//! out: an event dispatched while the subscriber is still deciding about another (in
//! `event_enabled`) would reset the per-layer filters' state and lose that line. Debug and trace lines (off by default, asked for to diagnose) are not limited.
//!
//! The limit is a decision with `now` passed in ([`Budget::admit`]), so it is tested without a
//! clock; the layer reads a monotonic clock.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tracing::callsite::Identifier;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Lines one call site may log at once, before it is held to [`LINE_INTERVAL_MS`]: enough for
/// the few lines one event legitimately logs together (several unknown keys in a configuration
/// file, the first rejections of one batch).
pub const BURST_LINES: u64 = 10;
/// Past its burst, a call site logs at most one line per this many milliseconds.
pub const LINE_INTERVAL_MS: u64 = 1_000;
/// The target of the summary lines, which are not limited themselves (there is at most one per
/// line that was let through).
pub const SUMMARY_TARGET: &str = "sepp::log_limit";

/// What [`Budget::admit`] decided about one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Log it, after a summary of the lines of this call site suppressed since the last one
    /// logged (when that is not zero).
    Log { suppressed: u64 },
    /// Drop it; it is counted for the next summary.
    Suppress,
}

/// The rate limit of one call site: a generic cell rate algorithm, whose one number is the time
/// at which the call site's budget is full again.
#[derive(Clone, Copy, Debug, Default)]
pub struct Budget {
    /// When the budget is full again, in the milliseconds of the caller's clock.
    full_at_ms: u64,
    /// Lines dropped since the last one logged.
    suppressed: u64,
}

impl Budget {
    /// Decides about a line at `now_ms` (a monotonic clock in milliseconds).
    pub fn admit(&mut self, now_ms: u64) -> Admit {
        let full_at_ms = self.full_at_ms.max(now_ms);
        if full_at_ms - now_ms > (BURST_LINES - 1) * LINE_INTERVAL_MS {
            self.suppressed += 1;
            return Admit::Suppress;
        }
        self.full_at_ms = full_at_ms + LINE_INTERVAL_MS;
        Admit::Log { suppressed: std::mem::take(&mut self.suppressed) }
    }
}

/// The tracing layer that holds every call site to its [`Budget`].
pub struct FloodGuard {
    start: Instant,
    budgets: Mutex<HashMap<Identifier, Budget>>,
}

impl FloodGuard {
    pub fn new() -> FloodGuard {
        FloodGuard { start: Instant::now(), budgets: Mutex::new(HashMap::new()) }
    }
}

impl Default for FloodGuard {
    fn default() -> Self {
        FloodGuard::new()
    }
}

thread_local! {
    /// A summary owed after the event being dispatched on this thread: how many lines its call
    /// site dropped before it (set by `event_enabled`, logged by `on_event`).
    static OWED: Cell<Option<(u64, &'static Metadata<'static>)>> = const { Cell::new(None) };
}

impl<S: Subscriber> Layer<S> for FloodGuard {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        let metadata = event.metadata();
        if *metadata.level() > Level::INFO || metadata.target() == SUMMARY_TARGET {
            return true;
        }
        let now_ms = self.start.elapsed().as_millis() as u64;
        let admit = {
            let mut budgets = self.budgets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            budgets.entry(metadata.callsite()).or_default().admit(now_ms)
        };
        match admit {
            Admit::Suppress => false,
            Admit::Log { suppressed } => {
                OWED.with(|owed| owed.set((suppressed > 0).then_some((suppressed, metadata))));
                true
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Some((suppressed, metadata)) = OWED.with(Cell::take) else { return };
        if !std::ptr::eq(metadata, event.metadata()) {
            return;
        }
        // The line itself has gone out; the summary's target is let through above, so this
        // cannot recurse further.
        let from = metadata.target();
        let line = metadata.line().unwrap_or(0);
        let file = metadata.file().unwrap_or("?");
        macro_rules! summary {
            ($level:expr) => {
                tracing::event!(target: SUMMARY_TARGET, $level, suppressed, from, at = %format_args!("{file}:{line}"), "{suppressed} similar lines suppressed")
            };
        }
        match *metadata.level() {
            Level::ERROR => summary!(Level::ERROR),
            Level::WARN => summary!(Level::WARN),
            _ => summary!(Level::INFO),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(budget: &mut Budget, now_ms: u64) -> bool {
        matches!(budget.admit(now_ms), Admit::Log { .. })
    }

    #[test]
    fn a_burst_is_logged_then_one_line_a_second() {
        let mut budget = Budget::default();
        for line in 0..BURST_LINES {
            assert_eq!(budget.admit(5_000), Admit::Log { suppressed: 0 }, "line {line} of the burst");
        }
        for _ in 0..1_000 {
            assert_eq!(budget.admit(5_000), Admit::Suppress);
        }
        assert!(!logged(&mut budget, 5_999));
        assert_eq!(budget.admit(6_000), Admit::Log { suppressed: 1_001 });
        assert!(!logged(&mut budget, 6_000));
        assert_eq!(budget.admit(7_000), Admit::Log { suppressed: 1 });
    }

    #[test]
    fn a_steady_flood_logs_about_one_line_a_second_and_counts_the_rest() {
        let mut budget = Budget::default();
        let (mut lines, mut suppressed) = (0, 0);
        // 2,000 lines a second for a minute.
        for tick in 0..120_000u64 {
            match budget.admit(tick / 2) {
                Admit::Log { suppressed: before } => {
                    lines += 1;
                    suppressed += before;
                }
                Admit::Suppress => {}
            }
        }
        assert!(lines <= BURST_LINES + 60, "{lines} lines in a minute");
        assert!(lines >= 60, "{lines} lines in a minute");
        assert_eq!(lines + suppressed + budget.suppressed, 120_000, "every line is logged or counted");
    }

    #[test]
    fn a_quiet_call_site_gets_its_whole_burst_back() {
        let mut budget = Budget::default();
        for _ in 0..3 * BURST_LINES {
            budget.admit(0);
        }
        let later = BURST_LINES * LINE_INTERVAL_MS + 2 * BURST_LINES * LINE_INTERVAL_MS;
        assert_eq!(budget.admit(later), Admit::Log { suppressed: 2 * BURST_LINES });
        for _ in 1..BURST_LINES {
            assert!(logged(&mut budget, later));
        }
        assert!(!logged(&mut budget, later));
    }
}
