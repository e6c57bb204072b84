//! A global allocator that counts allocations per thread, so a test can assert how many allocations one
//! call makes without other test threads disturbing the count.
//!
//! Install it in a test or bench binary with
//! `#[global_allocator] static A: benches::alloc::CountingAlloc = benches::alloc::CountingAlloc;`
//! and measure with [`count`]. In a binary without it, [`count`] reports zero allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts `alloc`/`realloc` calls and requested bytes on the calling thread, then defers to [`System`].
pub struct CountingAlloc;

thread_local! {
    // `const` initialisation and no destructor: touching these never allocates, so the allocator cannot
    // recurse into itself.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn record(bytes: usize) {
    // `try_with`: during thread teardown the slots may be gone; such allocations are simply not counted.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|c| c.set(c.get() + bytes as u64));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting has no effect
// on the returned memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

/// Allocations made on this thread by one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Allocs {
    /// `alloc`, `alloc_zeroed` and `realloc` calls.
    pub count: u64,
    /// Bytes requested by those calls.
    pub bytes: u64,
}

fn snapshot() -> Allocs {
    Allocs {
        count: ALLOCS.with(Cell::get),
        bytes: BYTES.with(Cell::get),
    }
}

/// Runs `f` and returns its result with the allocations it made on this thread.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Allocs) {
    let before = snapshot();
    let result = f();
    let after = snapshot();
    (
        result,
        Allocs {
            count: after.count - before.count,
            bytes: after.bytes - before.bytes,
        },
    )
}
