//! The allocator: mimalloc, for every binary that links this crate (the server, its tests, and
//! the benchmark harness, whose gRPC ceiling must run on the same stack as the server). Here it
//! takes about a tenth less server CPU per job than the system allocator (docs/benchmarks.md).

use std::cell::Cell;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns transparent huge pages off for this process; call it first thing in `main`. mimalloc
/// asks for them on its heap, and on this server's heap they cost more than they save: the first
/// touch of any byte of a huge page zeroes all 2 MiB of it, so a fresh server held 39 MB after
/// its first 40,000 jobs instead of 20, and 275 MB instead of 252 with a million queued
/// (docs/benchmarks.md). Like other servers that keep a large heap of small objects (Redis,
/// MongoDB), sepp opts out; the system's setting stays as it is for every other process.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag of this process; the call touches no memory.
    // The variadic arguments are passed at the width the kernel reads (unsigned long), and the
    // unused ones must be zero.
    unsafe {
        let (set, unused): (libc::c_ulong, libc::c_ulong) = (1, 0);
        libc::prctl(libc::PR_SET_THP_DISABLE, set, unused, unused, unused);
    }
}

/// Gives the memory this thread has freed back to the system now. mimalloc returns freed pages
/// as the thread that owns them goes on allocating; a thread that has just dropped a large
/// transient (recovery's read buffers) and then waits would otherwise keep it.
pub fn release_freed() {
    // SAFETY: `mi_collect` has no preconditions: it only gives free memory back.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// How often, at most, a runtime thread gives back what it freed when it goes idle.
const COLLECT_EVERY: Duration = Duration::from_secs(1);

/// A thread whose last sleep lasted this long is idle: a busy one sleeps for microseconds
/// between its tasks, an idle one until its next timer (Raft's heartbeats are 100 ms apart).
const IDLE_SLEEP: Duration = Duration::from_millis(20);

/// One runtime thread's record for [`collect_when_idle`].
#[derive(Default)]
struct Sleeps {
    /// When the thread last went to sleep, until it woke.
    parked_at: Cell<Option<Instant>>,
    /// Whether its last sleep lasted [`IDLE_SLEEP`] or more.
    slept_long: Cell<bool>,
    last_collect: Cell<Option<Instant>>,
}

impl Sleeps {
    /// The thread goes to sleep at `now`: whether it gives back what it freed first (only after
    /// a long sleep, so it is idle, and at most once every [`COLLECT_EVERY`]).
    fn parks(&self, now: Instant) -> bool {
        self.parked_at.set(Some(now));
        let due = self.slept_long.get() && self.last_collect.get().is_none_or(|at| now - at >= COLLECT_EVERY);
        if due {
            self.last_collect.set(Some(now));
        }
        due
    }

    /// The thread wakes at `now`.
    fn wakes(&self, now: Instant) {
        let slept = self.parked_at.take().map_or(Duration::ZERO, |at| now - at);
        self.slept_long.set(slept >= IDLE_SLEEP);
    }
}

thread_local! {
    static SLEEPS: Sleeps = const {
        Sleeps { parked_at: Cell::new(None), slept_long: Cell::new(false), last_collect: Cell::new(None) }
    };
}

/// A Tokio runtime's `on_thread_park` hook: a worker thread that goes to sleep again after a
/// sleep of [`IDLE_SLEEP`] or more (so it is idle, not between two tasks of a busy stretch)
/// gives back the pages it freed (as [`release_freed`] does, without forcing), at most once
/// every [`COLLECT_EVERY`]. mimalloc purges a thread's freed pages only when that thread
/// allocates again, so a thread that applied a burst of work (a follower's Raft threads
/// decoding a backlog's entries, whose payloads go to disk) and then only answers heartbeats
/// would keep that burst's memory: about 20 MB on each node after a backlog of 100,000 256-byte
/// jobs (docs/benchmarks.md). A busy thread allocates, so mimalloc purges for it as it goes.
/// Pair it with [`woke`] as the `on_thread_unpark` hook.
pub fn collect_when_idle() {
    if SLEEPS.with(|sleeps| sleeps.parks(Instant::now())) {
        // SAFETY: `mi_collect` has no preconditions: it only gives free memory back.
        unsafe { libmimalloc_sys::mi_collect(false) }
    }
}

/// A Tokio runtime's `on_thread_unpark` hook, for [`collect_when_idle`]: notes how long the
/// thread slept.
pub fn woke() {
    SLEEPS.with(|sleeps| sleeps.wakes(Instant::now()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_thread_collects_at_most_once_a_second_and_a_busy_one_never() {
        let start = Instant::now();
        let sleeps = Sleeps::default();
        assert!(!sleeps.parks(start), "a thread that never slept yet");
        sleeps.wakes(start + IDLE_SLEEP);
        assert!(sleeps.parks(start + IDLE_SLEEP), "after a long sleep");
        sleeps.wakes(start + IDLE_SLEEP * 2);
        assert!(!sleeps.parks(start + IDLE_SLEEP * 2), "a long sleep, but less than a second after the last");
        let later = start + IDLE_SLEEP + COLLECT_EVERY;
        sleeps.wakes(later);
        assert!(sleeps.parks(later), "a long sleep a second after the last");
        sleeps.wakes(later + IDLE_SLEEP / 2);
        let much_later = later + COLLECT_EVERY * 10;
        assert!(!sleeps.parks(much_later), "a thread between two tasks of a busy stretch");
        sleeps.wakes(much_later + IDLE_SLEEP - Duration::from_nanos(1));
        assert!(!sleeps.parks(much_later + IDLE_SLEEP), "a sleep just short of idle");
    }
}
