//! How much memory the worker's program holds, so a run too big for a tab
//! stops with a message instead of killing the worker.
//!
//! A wasm32 program addresses at most 4 GiB, and when the allocator cannot
//! grow its memory any further Rust aborts: in a Web Worker that is an
//! `unreachable` trap, the worker dies, and all the page can say is that
//! it failed. The worker therefore counts the bytes it has allocated and
//! not freed (the WebAssembly memory's size is no measure: it never
//! shrinks, so after one large run it stays large) and
//! [`crate::runner`] stops a run while there is still room to say why.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated and not yet freed.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting what it hands out.
pub struct Counting;

// The one unsafe block of the worker: a `GlobalAlloc` must be `unsafe impl`.
// It forwards every call unchanged to the system allocator and only keeps a
// count beside it.
#[allow(unsafe_code, reason = "a global allocator is an unsafe trait; this one only forwards and counts")]
// SAFETY: every method forwards to `System` with the caller's arguments, so
// `System`'s guarantees hold; the count is never used to allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, which is `System`'s.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` and `layout` came from this allocator, which is `System`'s.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        moved
    }
}

/// Bytes the program holds now (what it allocated and has not freed).
pub fn live_bytes() -> u64 {
    LIVE.load(Ordering::Relaxed) as u64
}
