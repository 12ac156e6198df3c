//! The allocator: mimalloc, for every binary that links this crate (the server, its tests, and
//! the benchmark harness, whose gRPC ceiling must run on the same stack as the server). Here it
//! takes about a tenth less server CPU per job than the system allocator (docs/benchmarks.md).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Gives the memory this thread has freed back to the system now. mimalloc returns freed pages
/// as the thread that owns them goes on allocating; a thread that has just dropped a large
/// transient (recovery's read buffers) and then waits would otherwise keep it.
pub fn release_freed() {
    // SAFETY: `mi_collect` has no preconditions: it only gives free memory back.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
