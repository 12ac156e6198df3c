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
