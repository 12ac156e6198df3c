//! The allocator: mimalloc, for every binary that links this crate (the server, its tests, and
//! the benchmark harness, whose gRPC ceiling must run on the same stack as the server). Here it
//! takes about a tenth less server CPU per job than the system allocator (docs/benchmarks.md).

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
const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

thread_local! {
    static LAST_COLLECT: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// A Tokio runtime's `on_thread_park` hook: a worker thread that goes idle gives back the pages
/// it freed (as [`release_freed`] does, without forcing), at most once every [`COLLECT_EVERY`].
/// mimalloc purges a thread's freed pages only when that thread allocates again, so a thread
/// that applied a burst of work (a follower's Raft threads decoding a backlog's entries, whose
/// payloads go to disk) and then only answers heartbeats would keep that burst's memory: about
/// 20 MB on each node after a backlog of 100,000 256-byte jobs (docs/benchmarks.md). Threads of
/// a runtime that has timers (Raft's heartbeats, the committer's sweep) park often, so each
/// collects within about a second of its burst ending.
pub fn collect_when_idle() {
    let now = std::time::Instant::now();
    let due = LAST_COLLECT.with(|last| match last.get() {
        Some(at) if now.duration_since(at) < COLLECT_EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        // SAFETY: `mi_collect` has no preconditions: it only gives free memory back.
        unsafe { libmimalloc_sys::mi_collect(false) }
    }
}
