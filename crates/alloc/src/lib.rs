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
//! - **The heap is swept rarely.** Every 10,000 allocations that miss its
//!   fast path, mimalloc visits every page of the thread's heap to free the
//!   empty ones: a cost that grows with the heap, 5 % of a 5,000-node run's
//!   time. Sweeping a hundred times less often leaves the peak memory as it
//!   was (the pages are reused by the next allocations of their size).
//!
//! - **Plain allocations take mimalloc's plain path.** Almost every Rust
//!   allocation asks for an alignment that any mimalloc block already has;
//!   those go to `mi_malloc`, and only the others to `mi_malloc_aligned`,
//!   whose extra checks on every call were 3 % of a run's instructions.
//!
//! Measurements for each: `BENCHMARKS.md`, "Scale". Libraries, test
//! binaries and the playground's worker keep their own allocators.

// Calls into mimalloc's C interface: the allocator and its options.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The global allocator: `#[global_allocator] static ALLOCATOR:
/// recon_alloc::Allocator = recon_alloc::Allocator;`.
pub struct Allocator;

/// The alignment every mimalloc block of at least this many bytes has
/// without asking: blocks are whole double words, and those of 16 bytes or
/// more start on 16 (mimalloc's `MI_MAX_ALIGN_SIZE`, which it asserts for
/// every block it hands out). 8 keeps to what holds on 32-bit targets too.
const PLAIN_ALIGN: usize = 8;

/// Whether `mi_malloc` already gives `layout`'s alignment: the rule the
/// standard library's own allocator uses for `malloc`.
fn plain(align: usize, size: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

/// Allocates `layout` with mimalloc's `plain` function when its blocks
/// already have the alignment, else with its `aligned` one.
///
/// # Safety
/// As for the two functions: any size and alignment are accepted.
#[inline(always)]
unsafe fn allocate(
    layout: Layout,
    plain_fn: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned_fn: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: forwarded to the caller.
    unsafe {
        if plain(layout.align(), layout.size()) {
            plain_fn(layout.size()).cast()
        } else {
            aligned_fn(layout.size(), layout.align()).cast()
        }
    }
}

// SAFETY: each method forwards to the mimalloc function that allocates,
// frees or resizes with at least the layout's alignment (checked by
// `plain` before the unaligned functions are used), and mimalloc frees any
// of its blocks with `mi_free`, however it was allocated.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions take any size and alignment.
        unsafe { allocate(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe { allocate(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator gave out.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block this allocator gave out with
        // `layout`; the new block keeps its alignment.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

/// One of mimalloc's options, as this crate sets it.
struct Setting {
    /// Its number: its place in `mi_option_e` in `mimalloc.h` (the binding
    /// names no constant for these; a test checks each number against the
    /// environment variable mimalloc reads for it).
    option: mi::mi_option_t,
    /// The environment variable that sets it; when present, it wins.
    env: &'static str,
    /// The value for a process that runs simulations and exits.
    value: std::ffi::c_long,
}

/// `mi_option_purge_delay`: how long freed memory waits before it is given
/// back to the operating system, in milliseconds; -1 is never.
const PURGE_DELAY: Setting = Setting { option: 15, env: "MIMALLOC_PURGE_DELAY", value: -1 };

/// `mi_option_generic_collect`: after how many allocations off the fast
/// path the heap is swept (mimalloc's default 10,000; 1,000,000 is the
/// largest it takes).
const GENERIC_COLLECT: Setting = Setting { option: 34, env: "MIMALLOC_GENERIC_COLLECT", value: 1_000_000 };

const SETTINGS: [Setting; 2] = [PURGE_DELAY, GENERIC_COLLECT];

/// Sets mimalloc for a process that runs big simulations and exits: freed
/// memory kept, the heap swept rarely. Call it first thing in `main`. An
/// option's variable in the environment (`MIMALLOC_PURGE_DELAY`,
/// `MIMALLOC_GENERIC_COLLECT`) still wins.
pub fn tune_for_long_runs() {
    for setting in &SETTINGS {
        if std::env::var_os(setting.env).is_none() {
            // SAFETY: `mi_option_set` stores a value in mimalloc's option
            // table; it checks the option number and accepts any value, and
            // may be called at any time from any thread.
            unsafe { mi::mi_option_set(setting.option, setting.value) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value mimalloc is using for an option.
    // `c_long` is 32 bits on some targets, so the conversion is not useless there.
    #[allow(clippy::useless_conversion)]
    fn current(setting: &Setting) -> i64 {
        // SAFETY: `mi_option_get` reads mimalloc's option table (reading the
        // environment the first time); it checks the option number.
        i64::from(unsafe { mi::mi_option_get(setting.option) })
    }

    /// Run again in a child process with each option's variable set: the
    /// option this crate sets must be the one mimalloc reads from it.
    #[test]
    fn each_option_set_is_the_one_mimalloc_reads_from_its_variable() {
        if let Some(expected) = std::env::var_os("RECON_ALLOC_EXPECT") {
            let expected: i64 = expected.to_string_lossy().parse().expect("a number");
            for setting in &SETTINGS {
                assert_eq!(current(setting), expected, "{}", setting.env);
            }
            tune_for_long_runs();
            for setting in &SETTINGS {
                assert_eq!(current(setting), expected, "the environment wins: {}", setting.env);
            }
            return;
        }
        let mut child = std::process::Command::new(std::env::current_exe().expect("the test binary's path"));
        child.args(["--exact", "tests::each_option_set_is_the_one_mimalloc_reads_from_its_variable"]);
        // A value each option takes as it is (within its clamp).
        child.env("RECON_ALLOC_EXPECT", "4321");
        for setting in &SETTINGS {
            child.env(setting.env, "4321");
        }
        assert!(child.status().expect("the test binary runs again").success(), "the child saw other values");
    }

    /// Every block has its layout's alignment and keeps its bytes through
    /// a resize, on the plain path and the aligned one.
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_bytes_when_resized() {
        let a = Allocator;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 7, 8, 12, 16, 24, 40, 48, 100, 1000, 70_000, 3 << 20] {
                let size = size.max(align);
                let layout = Layout::from_size_align(size, align).expect("a layout");
                // SAFETY: a non-zero size; each block is freed once, with its layout.
                unsafe {
                    let zeroed = a.alloc_zeroed(layout);
                    assert!(!zeroed.is_null());
                    assert_eq!(zeroed as usize % align, 0, "zeroed {size} bytes aligned to {align}");
                    assert!((0..size).all(|i| *zeroed.add(i) == 0));
                    a.dealloc(zeroed, layout);

                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "{size} bytes aligned to {align}");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let (big, small) = (size * 2 + 8, size.div_ceil(2).max(align));
                    let grown = a.realloc(p, layout, big);
                    assert_eq!(grown as usize % align, 0, "{size} → {big} bytes aligned to {align}");
                    assert!((0..size).all(|i| *grown.add(i) == i as u8), "{size} → {big} bytes kept");
                    let big_layout = Layout::from_size_align(big, align).expect("a layout");
                    let shrunk = a.realloc(grown, big_layout, small);
                    assert_eq!(shrunk as usize % align, 0, "{big} → {small} bytes aligned to {align}");
                    assert!((0..small).all(|i| *shrunk.add(i) == i as u8), "{big} → {small} bytes kept");
                    a.dealloc(shrunk, Layout::from_size_align(small, align).expect("a layout"));
                }
            }
        }
    }

    #[test]
    fn tuning_sets_every_option_the_environment_leaves_alone() {
        if SETTINGS.iter().any(|s| std::env::var_os(s.env).is_some()) {
            return; // the environment wins; the test above checks that
        }
        tune_for_long_runs();
        assert_eq!(current(&PURGE_DELAY), -1, "freed memory is never given back");
        assert_eq!(current(&GENERIC_COLLECT), 1_000_000);
    }
}
