//! The exhaustive proof's search: a parallel depth-first search over symmetry representatives that
//! keeps only what a proof needs.
//!
//! Why not Stateright's DFS checker for this run: a profile of `check` (one thread, one change, no crash) put
//! 17 % of the time in its fingerprint `DashMap`, 7 % in looking up every property's name in its
//! discoveries map at every state, and it stores with every pending state the whole path of action
//! indices (depth 600–1,000 here) and fingerprints every generated state twice (the representative
//! and the state itself). Here the visited set is a sharded set of fingerprints, pending states
//! carry their depth only, and a property is evaluated until it has a verdict. What it does not
//! keep is paths: when an `always` property fails, `check::run` asks Stateright's DFS for the
//! counterexample (a failing check pays twice; a passing one, the common case, once).
//!
//! Soundness is the same argument as for any explicit-state DFS with symmetry reduction: a state
//! is pushed (as its representative, which has the same behaviours up to renaming and satisfies
//! the same properties, all of which are stated over sets of ids) when its representative's
//! fingerprint is first inserted, every pushed state is expanded, and the search ends only when
//! every worker's stack and the shared pool are empty. Unique-state counts equal Stateright's (the
//! representative is canonical, so the set of representatives reached does not depend on the
//! order of the search); `tests/protocol.rs` checks that they do, and `symmetry.rs`'s tests that
//! the fingerprint computed without building the representative is the representative's.

use crate::step::KraftModel;
use crate::types::{Id, State, MAX_SERVERS};
use stateright::{Expectation, Model};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// One shard of the visited set: fingerprints in an open-addressing table with linear probing,
/// stored as they are (they are uniform 64-bit hashes already), so that a lookup touches one cache
/// line where a general hash set touches two (control bytes, then the slot). 0 marks a free slot;
/// a fingerprint 0 is stored as 1, which merges two fingerprints like any 64-bit collision does.
#[derive(Default)]
struct Table {
    slots: Vec<u64>,
    len: usize,
}

impl Table {
    /// Inserts `fp`; true if it was not there.
    fn insert(&mut self, fp: u64) -> bool {
        let fp = fp.max(1);
        // At most 3/4 full.
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = fp as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = fp;
                    self.len += 1;
                    return true;
                }
                x if x == fp => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![0; (2 * old.len()).max(1024)];
        self.len = 0;
        for fp in old.into_iter().filter(|&fp| fp != 0) {
            self.insert(fp);
        }
    }
}

/// A shard: its table, and a copy of the table's address and mask that a worker reads without the
/// lock, only to prefetch the slot a fingerprint will probe (see [`Shard::prefetch`]).
#[derive(Default)]
struct Shard {
    table: Mutex<Table>,
    slots: AtomicPtr<u64>,
    mask: AtomicUsize,
}

impl Shard {
    /// Inserts `fp` under the lock; true if it was not there.
    fn insert(&self, fp: u64) -> bool {
        let mut t = self.table.lock().expect("visited shard");
        let cap = t.slots.len();
        let new = t.insert(fp);
        if t.slots.len() != cap {
            self.slots.store(t.slots.as_mut_ptr(), Ordering::Relaxed);
            self.mask.store(t.slots.len() - 1, Ordering::Relaxed);
        }
        new
    }

    /// Asks the CPU to start loading the cache line `fp` will probe first, so that the lookups of
    /// one state's successors overlap their memory latency instead of paying it one after another
    /// (one cache miss per generated state was the largest item of the profile). A prefetch is a
    /// hint: it reads nothing in Rust's sense and never faults, so a stale address (the table grew
    /// since) costs only a wasted load.
    fn prefetch(&self, fp: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let base = self.slots.load(Ordering::Relaxed);
            let i = fp.max(1) as usize & self.mask.load(Ordering::Relaxed);
            let addr = base.wrapping_add(i) as *const i8;
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch dereferences nothing.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = fp;
    }
}

const SHARDS: usize = 256;

/// Limits of a search.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Stop after this long.
    pub timeout: Option<Duration>,
    /// Stop after about this many generated states.
    pub max_states: Option<usize>,
    /// Print a progress line to stderr every second.
    pub progress: bool,
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Generated states (successors within the boundary, the initial states included).
    pub generated: usize,
    /// Unique representatives.
    pub unique: usize,
    /// Deepest state expanded (the initial state has depth 1).
    pub max_depth: usize,
    /// True if a limit stopped the search.
    pub stopped: bool,
    /// Per property (in `model.properties()` order): an `always` violated, or a `sometimes`
    /// exemplified.
    pub discovered: Vec<bool>,
}

struct Shared<'a> {
    model: &'a KraftModel,
    visited: Vec<Shard>,
    pool: Mutex<Vec<Vec<(State, u32)>>>,
    wake: Condvar,
    idle: AtomicUsize,
    threads: usize,
    generated: AtomicUsize,
    max_depth: AtomicUsize,
    stop: AtomicBool,
    discovered: Vec<AtomicBool>,
    limits: Limits,
    started: Instant,
}

impl Shared<'_> {
    /// The shard holding `fp` (not by the low bits, which index the shard's table).
    fn shard(&self, fp: u64) -> &Shard {
        &self.visited[(fp >> 40) as usize % SHARDS]
    }

    /// Inserts the fingerprint of `s`'s representative; if it is new, returns the representative
    /// (which the search goes on from: it has the same behaviours up to renaming, and successors
    /// of a representative are often representatives already, whose fingerprint needs no
    /// renaming).
    fn insert(&self, s: State) -> Option<State> {
        let (perm, fp) = crate::symmetry::canonical(&s);
        self.insert_canonical(s, perm, fp)
    }

    /// [`Shared::insert`] with the representative's renaming and fingerprint already computed.
    fn insert_canonical(&self, s: State, perm: [Id; MAX_SERVERS], fp: u64) -> Option<State> {
        if !self.shard(fp).insert(fp) {
            return None;
        }
        Some(crate::symmetry::renamed(&s, &perm).unwrap_or(s))
    }

    fn unique(&self) -> usize {
        self.visited
            .iter()
            .map(|v| v.table.lock().expect("visited shard").len)
            .sum()
    }

    /// Evaluates every property without a verdict yet on `s`.
    fn evaluate(&self, props: &[stateright::Property<KraftModel>], s: &State) {
        for (p, d) in props.iter().zip(&self.discovered) {
            if d.load(Ordering::Relaxed) {
                continue;
            }
            let holds = (p.condition)(self.model, s);
            let found = match p.expectation {
                Expectation::Always => !holds,
                _ => holds,
            };
            if found {
                d.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Takes work from the pool, waiting while other workers may still add some; `None` when the
    /// search is over.
    fn take(&self) -> Option<Vec<(State, u32)>> {
        let mut pool = self.pool.lock().expect("pool");
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(batch) = pool.pop() {
                return Some(batch);
            }
            let idle = self.idle.fetch_add(1, Ordering::SeqCst) + 1;
            if idle == self.threads {
                // Everyone is idle and the pool is empty: done.
                self.stop.store(true, Ordering::SeqCst);
                self.wake.notify_all();
                return None;
            }
            pool = self.wake.wait(pool).expect("pool");
            self.idle.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn worker(&self) {
        let props = self.model.properties();
        let mut actions = Vec::new();
        let mut successors = Vec::new();
        let mut stack: Vec<(State, u32)> = Vec::new();
        let mut max_depth = 0u32;
        let mut since_check = 0u32;
        loop {
            let Some((s, depth)) = stack.pop() else {
                match self.take() {
                    Some(batch) => {
                        stack = batch;
                        continue;
                    }
                    None => break,
                }
            };
            max_depth = max_depth.max(depth);
            self.evaluate(&props, &s);
            actions.clear();
            self.model.actions(&s, &mut actions);
            // Every successor's fingerprint first (prefetching its slot), then the lookups.
            for a in actions.drain(..) {
                let Some(next) = self.model.next_state(&s, a) else {
                    continue;
                };
                if !self.model.within_boundary(&next) {
                    continue;
                }
                let (perm, fp) = crate::symmetry::canonical(&next);
                self.shard(fp).prefetch(fp);
                successors.push((next, perm, fp));
            }
            self.generated
                .fetch_add(successors.len(), Ordering::Relaxed);
            for (next, perm, fp) in successors.drain(..) {
                if let Some(rep) = self.insert_canonical(next, perm, fp) {
                    stack.push((rep, depth + 1));
                }
            }
            // Share half of the stack's oldest states when someone waits for work.
            if stack.len() > 16 && self.idle.load(Ordering::Relaxed) > 0 {
                let half: Vec<_> = stack.drain(..stack.len() / 2).collect();
                self.pool.lock().expect("pool").push(half);
                self.wake.notify_one();
            }
            since_check += 1;
            if since_check >= 1024 {
                since_check = 0;
                self.max_depth
                    .fetch_max(max_depth as usize, Ordering::Relaxed);
                if self.limit_reached() {
                    self.stop.store(true, Ordering::SeqCst);
                    self.wake.notify_all();
                }
                if self.stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
        self.max_depth
            .fetch_max(max_depth as usize, Ordering::Relaxed);
    }

    fn limit_reached(&self) -> bool {
        let l = &self.limits;
        l.timeout.is_some_and(|t| self.started.elapsed() >= t)
            || l.max_states
                .is_some_and(|n| self.generated.load(Ordering::Relaxed) >= n)
    }
}

/// Explores every state of `model` reachable within its boundary (or until a limit), with
/// `threads` workers and symmetry reduction.
pub fn search(model: &KraftModel, threads: usize, limits: Limits) -> Outcome {
    let threads = threads.max(1);
    let nprops = model.properties().len();
    let shared = Shared {
        model,
        visited: (0..SHARDS).map(|_| Shard::default()).collect(),
        pool: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        idle: AtomicUsize::new(0),
        threads,
        generated: AtomicUsize::new(0),
        max_depth: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        discovered: (0..nprops).map(|_| AtomicBool::new(false)).collect(),
        limits,
        started: Instant::now(),
    };
    let init: Vec<(State, u32)> = model
        .init_states()
        .into_iter()
        .filter(|s| model.within_boundary(s))
        .filter_map(|s| shared.insert(s))
        .map(|s| (s, 1))
        .collect();
    shared.generated.store(init.len(), Ordering::Relaxed);
    shared.pool.lock().expect("pool").push(init);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| shared.worker());
        }
        if limits.progress {
            let mut next = Duration::from_secs(1);
            while !shared.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let secs = shared.started.elapsed();
                if secs < next {
                    continue;
                }
                next += Duration::from_secs(1);
                let unique = shared.unique();
                eprintln!(
                    "  ... {:.0} s: states {}, unique {unique} ({:.0}/s), depth {}",
                    secs.as_secs_f64(),
                    shared.generated.load(Ordering::Relaxed),
                    unique as f64 / secs.as_secs_f64().max(1e-9),
                    shared.max_depth.load(Ordering::Relaxed)
                );
            }
        }
    });
    let stopped = shared.limit_reached();
    Outcome {
        generated: shared.generated.load(Ordering::Relaxed),
        unique: shared.unique(),
        max_depth: shared.max_depth.load(Ordering::Relaxed),
        stopped,
        discovered: shared
            .discovered
            .iter()
            .map(|d| d.load(Ordering::Relaxed))
            .collect(),
    }
}
