//! Graph replay: every transition of the model's reachable state graph, replayed against the
//! implementation.
//!
//! A depth-first search over the model's states (the same states stateright explores without symmetry
//! reduction: `enabled_actions`, `step`, `within_boundary`), deduplicated by the model's fingerprint (its
//! `Hash`). Each visited model state carries the implementation cluster that realises it (a
//! [`replay::Pair`]; nodes are shared copy-on-write, so a branch copies only the nodes its action
//! touches). Every enabled action of every visited state goes through [`replay::step`], which applies
//! it to a clone of that cluster and compares exactly as the step replay compares: abstract state of
//! every server whose model state or node changed, operator replies, messages in flight, DescribeQuorum
//! v0–3 on the wire and against the model. This module is the search only: which pairs to expand.
//!
//! **Two paths, one model state.** The abstraction forgets implementation-internal state: timer
//! deadlines and clocks, timestamps, harness client ids, the last change reply, and fields that are not
//! in `NodeView` at all (the check-quorum window's voter set, the candidate's granted set, the RNG, the
//! previous-fetch bookkeeping of the caught-up rule). Two paths to one model state can therefore arrive
//! with different implementation states. Each arrival gets an *implementation fingerprint*: every node's
//! `NodeView` without time (timers as armed/not armed; no `sent_at`, deadlines, client ids, last reply),
//! its persisted election state, and the wire bytes of every message in flight. A model state is
//! expanded once per distinct implementation fingerprint, up to `variants` of them (default 1: the first
//! arrival); further arrivals are counted (`capped`) but not expanded. What differs only in fields
//! outside the fingerprint is never told apart, and what is beyond the cap is not replayed from that
//! state; both are reported, never hidden.
//!
//! Depth-first keeps memory to the search stack (a cluster per pending successor), where a breadth-first
//! frontier would hold a cluster for every state of a layer. Two or more workers share the fingerprint
//! table and hand work to each other through a shared queue.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use model::types::Action;
use model::ModelConfig;

use crate::harness::NodeHook;
use crate::replay::{self, Check, Ctx, Divergence, Pair};
use crate::wire::WireChecker;

/// Knobs of a graph replay.
#[derive(Clone)]
pub struct GraphOptions {
    pub config: ModelConfig,
    pub threads: usize,
    /// Implementation states expanded per model state (distinct implementation fingerprints), 1–4.
    pub variants: usize,
    /// Seed of the nodes' election-timeout RNGs.
    pub seed: u64,
    /// Switches on test-only faults in every node (mutation check).
    pub hook: Option<NodeHook>,
    /// Stop the search after this many divergences (all found until then are counted).
    pub max_divergences: usize,
    /// Print progress to stderr every this many seconds (0: never).
    pub progress_secs: u64,
    /// Stop after expanding this many model states (the outcome is then not complete).
    pub max_states: Option<u64>,
}

impl GraphOptions {
    pub fn new(config: ModelConfig) -> GraphOptions {
        GraphOptions {
            config,
            threads: 2,
            variants: 1,
            seed: 0,
            hook: None,
            max_divergences: 3,
            progress_secs: 0,
            max_states: None,
        }
    }
}

/// What a graph replay covered and found.
#[derive(Debug, Default)]
pub struct GraphOutcome {
    /// Transitions replayed (enabled actions of expanded states; a folded `Resign` counts as one).
    pub transitions: u64,
    /// Distinct model states visited (within the boundary), as stateright counts unique states.
    pub states: u64,
    /// (model state, implementation fingerprint) pairs expanded.
    pub expanded: u64,
    /// Model states reached with more than one implementation fingerprint.
    pub multi: u64,
    /// Arrivals with a new implementation fingerprint that were not expanded (the `variants` cap).
    pub capped: u64,
    /// DescribeQuorum responses checked against the model (node × version × compared state).
    pub encodings: u64,
    /// Distinct DescribeQuorum encodings through every decoder.
    pub wire_checked: u64,
    /// Refused membership requests whose reasons were compared.
    pub refusals: u64,
    /// Snapshot downloads replayed (installs, chunks, restarts with a `.checkpoint.part`).
    pub downloads: crate::harness::Downloads,
    /// Divergences found (the search stops at `max_divergences`).
    pub divergences: Vec<Divergence>,
    /// True if the whole graph was explored (no divergence and no `max_states` stopped it).
    pub complete: bool,
    /// Stopped by `max_states` (a measurement run).
    pub truncated: bool,
    pub seconds: f64,
}

impl GraphOutcome {
    pub fn per_second(&self) -> f64 {
        self.transitions as f64 / self.seconds.max(1e-9)
    }
}

/// The fingerprints are hashes already.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Implementation fingerprints seen at one model state (the first `variants` are expanded).
#[derive(Clone, Copy, Default)]
struct Seen {
    fps: [u64; 4],
    n: u8,
    /// An arrival with another fingerprint was not expanded (the cap).
    capped: bool,
}

const SHARDS: usize = 64;

type Shard = HashMap<u64, Seen, BuildHasherDefault<Identity>>;

/// Model fingerprint → implementation fingerprints, sharded for two or more workers.
struct Table {
    shards: Vec<Mutex<Shard>>,
    variants: usize,
}

/// What the table says about an arrival.
#[derive(Default)]
struct Admit {
    /// Expand it.
    expand: bool,
    /// The model state is new.
    new_state: bool,
    /// The model state now has a second implementation fingerprint.
    multi: bool,
    /// The model state now has an implementation fingerprint that will not be expanded.
    capped: bool,
}

impl Table {
    fn new(variants: usize) -> Table {
        Table {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
            variants: variants.clamp(1, 4),
        }
    }

    fn shard(&self, fp: u64) -> std::sync::MutexGuard<'_, Shard> {
        let s = &self.shards[(fp >> 58) as usize % SHARDS];
        s.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks a model state visited without expanding it (a state whose only transition is a folded
    /// `Resign`). True if it is new.
    fn touch(&self, fp: u64) -> bool {
        let mut s = self.shard(fp);
        if s.contains_key(&fp) {
            return false;
        }
        s.insert(fp, Seen::default());
        true
    }

    fn admit(&self, fp: u64, ifp: u64) -> Admit {
        let mut s = self.shard(fp);
        let seen = s.entry(fp).or_default();
        if seen.fps[..seen.n as usize].contains(&ifp) {
            return Admit::default();
        }
        if (seen.n as usize) < self.variants {
            let a = Admit {
                expand: true,
                new_state: seen.n == 0,
                multi: seen.n == 1,
                capped: false,
            };
            seen.fps[seen.n as usize] = ifp;
            seen.n += 1;
            return a;
        }
        let first = !seen.capped;
        seen.capped = true;
        Admit {
            expand: false,
            new_state: false,
            multi: first && seen.n == 1,
            capped: first,
        }
    }
}

/// The path to a state, shared between the jobs below it.
struct PathNode {
    action: Action,
    parent: Option<Arc<PathNode>>,
}

fn path_of(p: &Option<Arc<PathNode>>, more: &[Action]) -> Vec<Action> {
    let mut out = Vec::new();
    let mut cur = p.as_ref();
    while let Some(n) = cur {
        out.push(n.action);
        cur = n.parent.as_ref();
    }
    out.reverse();
    out.extend_from_slice(more);
    out
}

fn extend(p: &Option<Arc<PathNode>>, actions: &[Action]) -> Option<Arc<PathNode>> {
    let mut cur = p.clone();
    for a in actions {
        cur = Some(Arc::new(PathNode {
            action: *a,
            parent: cur,
        }));
    }
    cur
}

/// A model state to expand, with the implementation that realises it.
struct Job {
    pair: Pair,
    path: Option<Arc<PathNode>>,
}

struct Shared<'a> {
    ctx: &'a Ctx,
    opts: &'a GraphOptions,
    table: Table,
    queue: Mutex<Vec<Job>>,
    wake: Condvar,
    idle: AtomicUsize,
    done: AtomicBool,
    halted: AtomicBool,
    found: AtomicUsize,
    /// Progress: transitions and expansions so far.
    transitions: AtomicU64,
    expanded: AtomicU64,
    /// Stopped by `max_states`.
    truncated: AtomicBool,
}

/// Halts the graph when its worker thread panics: the other workers would otherwise wait forever for
/// the dead one to go idle. The flag is set under the queue lock, as waiters check it under that lock.
struct HaltOnPanic<'s, 'a>(&'s Shared<'a>);

impl Drop for HaltOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _q = self.0.queue.lock().unwrap_or_else(|p| p.into_inner());
            self.0.halted.store(true, Ordering::SeqCst);
            self.0.wake.notify_all();
        }
    }
}

#[derive(Default)]
struct Tally {
    transitions: u64,
    states: u64,
    expanded: u64,
    multi: u64,
    capped: u64,
    paths: Vec<Vec<Action>>,
}

/// Replays every transition of the model's graph at `opts.config`. `wire` is copied per worker.
pub fn run(opts: &GraphOptions, wire: &WireChecker) -> Result<GraphOutcome, String> {
    let started = Instant::now();
    let ropts = replay::Options {
        seed: opts.seed,
        hook: opts.hook.clone(),
    };
    let ctx = Ctx::new(opts.config, ropts)?;
    let mut w0 = Check::new(wire).wire;
    let root = match ctx.root(&mut w0) {
        Ok(p) => p,
        Err(d) => {
            return Ok(GraphOutcome {
                divergences: vec![*d],
                seconds: started.elapsed().as_secs_f64(),
                ..GraphOutcome::default()
            })
        }
    };
    let table = Table::new(opts.variants);
    let mut out = GraphOutcome::default();
    let mut queue = Vec::new();
    if let Some(pair) = root {
        table.admit(pair.model_fingerprint(), pair.impl_fingerprint());
        out.states = 1;
        queue.push(Job { pair, path: None });
    }
    let shared = Shared {
        ctx: &ctx,
        opts,
        table,
        queue: Mutex::new(queue),
        wake: Condvar::new(),
        idle: AtomicUsize::new(0),
        done: AtomicBool::new(false),
        halted: AtomicBool::new(false),
        found: AtomicUsize::new(0),
        transitions: AtomicU64::new(0),
        expanded: AtomicU64::new(0),
        truncated: AtomicBool::new(false),
    };
    let threads = opts.threads.max(1);
    let tallies: Vec<(Tally, Check)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let shared = &shared;
                s.spawn(move || {
                    let _halt = HaltOnPanic(shared);
                    let mut check = Check::new(wire);
                    let t = worker(shared, threads, &mut check);
                    (t, check)
                })
            })
            .collect();
        if opts.progress_secs > 0 {
            let every = std::time::Duration::from_secs(opts.progress_secs);
            let mut next = every;
            while !shared.done.load(Ordering::Relaxed) && !shared.halted.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if started.elapsed() >= next {
                    next += every;
                    let t = shared.transitions.load(Ordering::Relaxed);
                    // Divergences are confirmed and printed when the search ends: the count here
                    // is what a run stopped early can say.
                    eprintln!(
                        "  graph: {:.0} s, {} expanded, {t} transitions ({:.0}/s), {} divergences found",
                        started.elapsed().as_secs_f64(),
                        shared.expanded.load(Ordering::Relaxed),
                        t as f64 / started.elapsed().as_secs_f64(),
                        shared.found.load(Ordering::Relaxed)
                    );
                }
            }
        }
        handles
            .into_iter()
            // A worker's panic (the implementation's, e.g. an overflow under debug assertions) is the
            // run's: swallowing it would count the graph as complete without that worker's states.
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    out.wire_checked = w0.checked;
    let mut paths = Vec::new();
    for (t, check) in tallies {
        out.transitions += t.transitions;
        out.states += t.states;
        out.expanded += t.expanded;
        out.multi += t.multi;
        out.capped += t.capped;
        out.encodings += check.counts.encodings;
        out.refusals += check.counts.refusals;
        out.downloads.add(&check.counts.downloads);
        out.wire_checked += check.wire.checked;
        paths.extend(t.paths);
    }
    out.truncated = shared.truncated.load(Ordering::Relaxed);
    out.complete = !shared.halted.load(Ordering::Relaxed) && !out.truncated;
    // Each divergent path again through the step replay: the same report as any trace, and a check
    // that the graph's incremental comparison found a real difference.
    paths.sort_by_key(|p| p.len());
    for (k, actions) in paths.into_iter().take(opts.max_divergences).enumerate() {
        let label = format!("graph path #{k} ({} actions)", actions.len());
        out.divergences.push(ctx.confirm(label, actions, &mut w0));
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

fn next_job(shared: &Shared, threads: usize, local: &mut Vec<Job>) -> Option<Job> {
    if shared.halted.load(Ordering::Relaxed) {
        return None;
    }
    if let Some(j) = local.pop() {
        return Some(j);
    }
    // `idle` changes only under the queue lock, so "everyone idle and the queue empty" is exact.
    let mut q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if shared.halted.load(Ordering::Relaxed) || shared.done.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(j) = q.pop() {
            return Some(j);
        }
        if shared.idle.fetch_add(1, Ordering::SeqCst) + 1 == threads {
            shared.done.store(true, Ordering::SeqCst);
            shared.wake.notify_all();
            return None;
        }
        q = shared.wake.wait(q).unwrap_or_else(|p| p.into_inner());
        shared.idle.fetch_sub(1, Ordering::SeqCst);
    }
}

fn worker(shared: &Shared, threads: usize, check: &mut Check) -> Tally {
    let mut tally = Tally::default();
    let mut local: Vec<Job> = Vec::new();
    let mut actions = Vec::new();
    while let Some(job) = next_job(shared, threads, &mut local) {
        expand(shared, &job, check, &mut tally, &mut local, &mut actions);
        // Hand the shallowest half of the stack (the most work below it) to idle workers.
        if shared.idle.load(Ordering::Relaxed) > 0 && local.len() > 1 {
            let mut q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            let k = local.len() / 2;
            q.extend(local.drain(..k));
            shared.wake.notify_all();
        }
    }
    tally
}

/// Replays every enabled action of `job`'s state; pushes the successors to expand onto `local`.
fn expand(
    shared: &Shared,
    job: &Job,
    check: &mut Check,
    tally: &mut Tally,
    local: &mut Vec<Job>,
    actions: &mut Vec<Action>,
) {
    tally.expanded += 1;
    let done = shared.expanded.fetch_add(1, Ordering::Relaxed) + 1;
    if shared.opts.max_states.is_some_and(|m| done >= m) {
        shared.truncated.store(true, Ordering::SeqCst);
        shared.halted.store(true, Ordering::SeqCst);
        shared.wake.notify_all();
    }
    let before = tally.transitions;
    shared.ctx.actions(&job.pair, actions);
    for &a in actions.iter() {
        let next = match replay::step(shared.ctx, &job.pair, a, check) {
            Ok(Some(next)) => next,
            Ok(None) => continue,
            Err(d) => {
                tally.transitions += d.taken.len() as u64;
                tally.paths.push(path_of(&job.path, &d.taken));
                let found = shared.found.fetch_add(1, Ordering::SeqCst) + 1;
                if found >= shared.opts.max_divergences.max(1) {
                    shared.halted.store(true, Ordering::SeqCst);
                    shared.wake.notify_all();
                }
                continue;
            }
        };
        tally.transitions += next.taken.len() as u64;
        for fp in &next.passed {
            tally.states += u64::from(shared.table.touch(*fp));
        }
        if !next.within {
            continue; // replayed and compared, but outside the bounds: not expanded
        }
        let admit = shared
            .table
            .admit(next.pair.model_fingerprint(), next.pair.impl_fingerprint());
        tally.states += u64::from(admit.new_state);
        tally.multi += u64::from(admit.multi);
        tally.capped += u64::from(admit.capped);
        if admit.expand {
            local.push(Job {
                path: extend(&job.path, &next.taken),
                pair: next.pair,
            });
        }
    }
    shared
        .transitions
        .fetch_add(tally.transitions - before, Ordering::Relaxed);
}
