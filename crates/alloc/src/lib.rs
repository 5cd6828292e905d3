//! The memory allocator of Recon's native binaries that run big scenarios
//! (`recon`, and the `scale` and `soak` benchmarks).
//!
//! - **mimalloc rather than the system allocator.** glibc's malloc slows as
//!   the heap grows, which made the cost per event grow with the cluster.
//! - **Freed memory is kept for the run.** mimalloc gives memory that stays
//!   free for a while back to the operating system, and the kernel zeroes
//!   each page again when it is touched again. A big run frees and
//!   allocates in bursts (a relist, a rollout), so at 5,000 nodes about a
//!   tenth of its time was the kernel zeroing pages it had already zeroed
//!   once. A process that runs one simulation and exits has no use for
//!   giving memory back; its peak memory does not grow (it reuses what it
//!   keeps).
//!
//! Measurements for both: `BENCHMARKS.md`, "Scale". Libraries, test
//! binaries and the playground's worker keep their own allocators.

// One call into mimalloc's C interface, to set one of its options.
#![allow(unsafe_code)]

/// The global allocator: `#[global_allocator] static ALLOCATOR:
/// recon_alloc::Allocator = recon_alloc::Allocator;`.
pub use mimalloc::MiMalloc as Allocator;

/// mimalloc's `mi_option_purge_delay`: how long freed memory waits before it
/// is given back to the operating system, in milliseconds; -1 is never. The
/// binding names no constant for it; its number is its place in
/// `mi_option_e` in `mimalloc.h`, and a test checks that it is the option
/// mimalloc reads from `MIMALLOC_PURGE_DELAY`.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps the memory the process frees for its own reuse: call it first
/// thing in `main`. An explicit `MIMALLOC_PURGE_DELAY` in the environment
/// still wins.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` stores a value in mimalloc's option table;
        // it checks the option number and accepts any value, and may be
        // called at any time from any thread.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) }
    }
}

/// The purge delay mimalloc is using, in milliseconds (-1: never).
pub fn purge_delay_ms() -> i64 {
    // SAFETY: `mi_option_get` reads mimalloc's option table (reading the
    // environment the first time); it checks the option number.
    i64::from(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run again in a child process with `MIMALLOC_PURGE_DELAY` set: the
    /// option this crate sets must be the one mimalloc reads from it.
    #[test]
    fn the_option_set_is_the_one_mimalloc_reads_from_mimalloc_purge_delay() {
        if let Some(expected) = std::env::var_os("RECON_ALLOC_EXPECT") {
            assert_eq!(purge_delay_ms().to_string(), expected.to_string_lossy());
            keep_freed_memory();
            assert_eq!(purge_delay_ms().to_string(), expected.to_string_lossy(), "the environment wins");
            return;
        }
        let status = std::process::Command::new(std::env::current_exe().expect("the test binary's path"))
            .args(["--exact", "tests::the_option_set_is_the_one_mimalloc_reads_from_mimalloc_purge_delay"])
            .env("RECON_ALLOC_EXPECT", "4321")
            .env("MIMALLOC_PURGE_DELAY", "4321")
            .status()
            .expect("the test binary runs again");
        assert!(status.success(), "the child saw another purge delay");
    }

    #[test]
    fn keeping_freed_memory_sets_the_purge_delay_to_never() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return; // the environment wins; the test above checks that
        }
        keep_freed_memory();
        assert_eq!(purge_delay_ms(), -1);
    }
}
