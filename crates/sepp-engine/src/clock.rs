//! Where the committer reads the time.

use std::time::{SystemTime, UNIX_EPOCH};

use sepp_core::TimeMs;

/// Where the server reads the time: once per committer cycle (every decision of the cycle uses
/// that one reading), and for the checks of a request that need it (a schedule's horizon). The
/// server runs on [`SystemClock`]; tests pass a clock they move themselves, so that leases,
/// schedules and dedup windows expire when the test says, not when the machine gets to it.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> TimeMs;
}

/// The wall clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> TimeMs {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as TimeMs)
    }
}
