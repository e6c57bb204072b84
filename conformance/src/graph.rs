//! Graph replay: every transition of the model's reachable state graph, replayed against the
//! implementation.
//!
//! A depth-first search over the model's states (the same states stateright explores without symmetry
//! reduction: `enabled_actions`, `step`, `within_boundary`), deduplicated by the model's fingerprint (its
//! `Hash`). Each visited model state carries the implementation cluster that realises it (`Cluster`,
//! cloned in memory; nodes are shared copy-on-write, so a branch copies only the nodes its action
//! touches). Every enabled action of every visited state is applied to a clone of that cluster and
//! compared exactly as the step replay compares ([`replay::compare`]): abstract state of every server
//! whose model state or node changed, operator replies, messages in flight, DescribeQuorum v0–3 on the
//! wire and against the model.
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
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use kraft::node::{EntryKind, NodeView, ALL_TIMERS};
use model::types::{Action, Id, State, MAX_SERVERS};
use model::{KraftModel, ModelConfig};
use stateright::Model;

use crate::fingerprint::{hasher, model_fingerprint};
use crate::harness::{Cluster, NodeHook};
use crate::refusal;
use crate::replay::{self, After, Counts, Divergence, DivergenceKind, TraceSpec};
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

/// The implementation fingerprint of one node (see the module doc for what it leaves out).
pub fn node_fingerprint(v: &NodeView) -> u64 {
    let mut h = hasher();
    (v.role, v.epoch, v.leader_id, v.voted).hash(&mut h);
    for e in &v.log {
        (e.offset, e.epoch).hash(&mut h);
        match &e.kind {
            EntryKind::Data => 0u8.hash(&mut h),
            EntryKind::LeaderChange => 1u8.hash(&mut h),
            EntryKind::KRaftVersion(k) => (2u8, k).hash(&mut h),
            EntryKind::Voters(s) => (3u8, s).hash(&mut h),
        }
    }
    (
        v.log_end_offset,
        v.last_epoch,
        v.high_watermark,
        v.kraft_version,
    )
        .hash(&mut h);
    (
        &v.latest_voters,
        v.latest_voters_offset,
        &v.committed_voters,
    )
        .hash(&mut h);
    v.is_voter.hash(&mut h);
    v.pending_change
        .as_ref()
        .map(|p| (p.kind, p.key, p.offset))
        .hash(&mut h);
    for t in ALL_TIMERS {
        v.timers.get(t).is_some().hash(&mut h);
    }
    v.outstanding_fetch
        .map(|f| (f.to, f.epoch, f.fetch_offset, f.last_fetched_epoch))
        .hash(&mut h);
    for r in &v.replicas {
        (r.key, r.is_voter, r.end_offset, r.caught_up).hash(&mut h);
    }
    h.finish()
}

/// The implementation fingerprint of a cluster from its nodes' fingerprints.
fn cluster_fingerprint(c: &Cluster, nodes: &[u64]) -> u64 {
    let mut h = hasher();
    nodes.hash(&mut h);
    for i in 0..nodes.len() {
        let p = c.persisted(i as Id);
        (p.epoch, p.voted, p.leader_id).hash(&mut h);
    }
    // The network is a multiset: combine the messages order-independently.
    let mut net = 0u64;
    for m in &c.network {
        let mut e = hasher();
        (m.envelope, m.digest).hash(&mut e);
        net = net.wrapping_add(e.finish());
    }
    net.hash(&mut h);
    h.finish()
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
    state: State,
    cluster: Cluster,
    nodes: [u64; MAX_SERVERS],
    path: Option<Arc<PathNode>>,
}

struct Shared<'a> {
    model: &'a KraftModel,
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
    counts: Counts,
    paths: Vec<Vec<Action>>,
}

/// Replays every transition of the model's graph at `opts.config`. `wire` is copied per worker.
pub fn run(opts: &GraphOptions, wire: &WireChecker) -> Result<GraphOutcome, String> {
    let started = Instant::now();
    let cfg = opts.config;
    let model = KraftModel::new(cfg).map_err(|e| e.to_string())?;
    // The initial state (the election prefix of `Start::Elected` included) through the step replay.
    let init = model.initial_state();
    let spec = TraceSpec {
        label: "graph initial state".into(),
        reproduce: String::new(),
        config: cfg,
        actions: Vec::new(),
        recorded: None,
    };
    let ropts = replay::Options {
        seed: opts.seed,
        hook: opts.hook.clone(),
    };
    let mut w0 = WireChecker::new(wire.response.clone(), wire.request.clone());
    let cluster = match replay::replay_to_end(&spec, &mut w0, &ropts) {
        Ok(c) => c,
        Err(d) => {
            return Ok(GraphOutcome {
                divergences: vec![*d],
                seconds: started.elapsed().as_secs_f64(),
                ..GraphOutcome::default()
            })
        }
    };
    let mut nodes = [0u64; MAX_SERVERS];
    for (i, n) in cluster.nodes.iter().enumerate() {
        nodes[i] = node_fingerprint(&n.view());
    }
    let table = Table::new(opts.variants);
    let ifp = cluster_fingerprint(&cluster, &nodes[..cluster.nodes.len()]);
    let mut out = GraphOutcome::default();
    let mut queue = Vec::new();
    if model.within_boundary(&init) {
        table.admit(model_fingerprint(&init), ifp);
        out.states = 1;
        queue.push(Job {
            state: init,
            cluster,
            nodes,
            path: None,
        });
    }
    let shared = Shared {
        model: &model,
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
    let tallies: Vec<(Tally, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let shared = &shared;
                s.spawn(move || {
                    let _halt = HaltOnPanic(shared);
                    let mut w = WireChecker::new(wire.response.clone(), wire.request.clone());
                    let t = worker(shared, threads, &mut w);
                    (t, w.checked)
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
                    eprintln!(
                        "  graph: {:.0} s, {} expanded, {t} transitions ({:.0}/s)",
                        started.elapsed().as_secs_f64(),
                        shared.expanded.load(Ordering::Relaxed),
                        t as f64 / started.elapsed().as_secs_f64()
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
    for (t, checked) in tallies {
        out.transitions += t.transitions;
        out.states += t.states;
        out.expanded += t.expanded;
        out.multi += t.multi;
        out.capped += t.capped;
        out.encodings += t.counts.encodings;
        out.refusals += t.counts.refusals;
        out.downloads.add(&t.counts.downloads);
        out.wire_checked += checked;
        paths.extend(t.paths);
    }
    out.truncated = shared.truncated.load(Ordering::Relaxed);
    out.complete = !shared.halted.load(Ordering::Relaxed) && !out.truncated;
    // Each divergent path again through the step replay: the same report as any trace, and a check
    // that the graph's incremental comparison found a real difference.
    paths.sort_by_key(|p| p.len());
    for (k, actions) in paths.into_iter().take(opts.max_divergences).enumerate() {
        let spec = TraceSpec {
            label: format!("graph path #{k} ({} actions)", actions.len()),
            reproduce: String::new(),
            config: cfg,
            actions,
            recorded: None,
        };
        match replay::replay(&spec, &mut w0, &ropts) {
            Err(d) => out.divergences.push(*d),
            Ok(_) => out.divergences.push(Divergence {
                label: spec.label,
                reproduce: String::new(),
                step: spec.actions.len(),
                prefix_len: 0,
                action: spec.actions.last().copied(),
                kind: DivergenceKind::Input(
                    "the graph replay diverged here but the step replay of the same path does not"
                        .into(),
                ),
                model_state: None,
            }),
        }
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

fn worker(shared: &Shared, threads: usize, wire: &mut WireChecker) -> Tally {
    let mut tally = Tally::default();
    let mut local: Vec<Job> = Vec::new();
    let mut actions = Vec::new();
    while let Some(job) = next_job(shared, threads, &mut local) {
        expand(shared, &job, wire, &mut tally, &mut local, &mut actions);
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
    wire: &mut WireChecker,
    tally: &mut Tally,
    local: &mut Vec<Job>,
    actions: &mut Vec<Action>,
) {
    let model = shared.model;
    let n = job.state.servers.len();
    tally.expanded += 1;
    let done = shared.expanded.fetch_add(1, Ordering::Relaxed) + 1;
    if shared.opts.max_states.is_some_and(|m| done >= m) {
        shared.truncated.store(true, Ordering::SeqCst);
        shared.halted.store(true, Ordering::SeqCst);
        shared.wake.notify_all();
    }
    let before = tally.transitions;
    actions.clear();
    model.enabled_actions(&job.state, actions);
    for &a in actions.iter() {
        let Some(step) = model.step(&job.state, a) else {
            continue; // not a transition (stateright skips it too)
        };
        tally.transitions += 1;
        let mut taken = vec![a];
        let mut cluster = job.cluster.clone();
        let diverged = |tally: &mut Tally, taken: &[Action]| {
            tally.paths.push(path_of(&job.path, taken));
            let found = shared.found.fetch_add(1, Ordering::SeqCst) + 1;
            if found >= shared.opts.max_divergences.max(1) {
                shared.halted.store(true, Ordering::SeqCst);
                shared.wake.notify_all();
            }
        };
        let applied = match cluster.apply(&a, model.cfg.fetch) {
            Ok(x) => x,
            Err(_) => {
                diverged(tally, &taken);
                continue;
            }
        };
        tally.counts.downloads.add(&applied.downloads);
        let mut refused = Vec::new();
        refusal::of_model_step(&model.cfg, &job.state, &a, &step.replies, &mut refused);
        let (mut state, mut replies) = (step.state, step.replies);
        // A due Resign is part of the implementation's input that made it due (see `mapping`): the
        // intermediate model state is visited, and the comparison is after the Resign.
        while let Some(i) = (0..n as Id).find(|&i| model.resign_due(&state.servers[i as usize], i))
        {
            if model.within_boundary(&state) && shared.table.touch(model_fingerprint(&state)) {
                tally.states += 1;
            }
            let Some(r) = model.step(&state, Action::Resign(i)) else {
                break;
            };
            tally.transitions += 1;
            taken.push(Action::Resign(i));
            state = r.state;
            replies.extend(r.replies);
        }
        let mut nodes = job.nodes;
        let mut after = After {
            cluster: &mut cluster,
            state: &state,
            model_replies: &replies,
            impl_replies: &applied.replies,
            model_refusals: &refused,
            impl_refusals: &applied.refusals,
        };
        let r = replay::compare(
            model,
            &mut after,
            Some((&job.cluster, &job.state)),
            wire,
            &mut tally.counts,
            &mut |id, v| nodes[id as usize] = node_fingerprint(v),
        );
        if r.is_err() {
            diverged(tally, &taken);
            continue;
        }
        if !model.within_boundary(&state) {
            continue; // replayed and compared, but outside the bounds: not expanded
        }
        let ifp = cluster_fingerprint(&cluster, &nodes[..n]);
        let admit = shared.table.admit(model_fingerprint(&state), ifp);
        tally.states += u64::from(admit.new_state);
        tally.multi += u64::from(admit.multi);
        tally.capped += u64::from(admit.capped);
        if admit.expand {
            local.push(Job {
                state,
                cluster,
                nodes,
                path: extend(&job.path, &taken),
            });
        }
    }
    shared
        .transitions
        .fetch_add(tally.transitions - before, Ordering::Relaxed);
}
