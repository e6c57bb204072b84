//! The graph replay on the distributed search engine (`model::engine`, Timely Dataflow): the same
//! transitions as [`crate::graph`], explored breadth-first by worker threads in one or more processes.
//!
//! The state that travels is the (model state, cluster) pair, owned by the worker its model
//! fingerprint routes to; every transition goes through [`replay::step`] as in the single-process
//! search. Inside a process a pair moves between workers as it is (timely passes typed records). Between
//! processes it is serialised as its model state and the path of actions from the root pair
//! ([`Travel`]); the receiving process rebuilds the cluster by applying the path's inputs to its own
//! root cluster (the harness is deterministic: the same inputs give the same nodes, network and
//! storage). What a rebuild costs is counted ([`RebuildCost`]).
//!
//! One model state is expanded once (the first arrival of its level, `--variants 1`), so the counts
//! are the single-process search's: transitions, model states, refusal reasons and DescribeQuorum
//! responses checked. Each expanded state reports its counts as a [`Finding::Counts`], summed at the
//! end on process 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use model::engine::packed::Packed;
use model::engine::{self, Space};
use model::types::Action;
use serde::{Deserialize, Serialize};

use crate::graph::{GraphOptions, GraphOutcome};
use crate::harness::Downloads;
use crate::replay::{self, Check, Ctx, Pair};
use crate::wire::WireChecker;

/// A state of the search as it travels: a pair to expand, or a state only passed on the way.
#[derive(Clone, Serialize, Deserialize)]
#[serde(from = "Sent", into = "Sent")]
pub enum Travel {
    /// A pair to expand, and the actions from the root pair to it (folded `Resign`s included).
    Pair { pair: Box<Pair>, path: Vec<Action> },
    /// A pair that crossed processes: rebuilt from its path before it expands.
    Rebuild { path: Vec<Action> },
    /// A state passed within the bounds on the way to a folded `Resign` (its model fingerprint):
    /// visited, never expanded.
    Passed(u64),
}

/// What goes on the wire between processes: a pair as its path, which rebuilds it. The actions' serde
/// form is the trace files' JSON form (fields left out while at their defaults), which bincode cannot
/// read back, so the path travels in its plain form ([`Packed`]).
#[derive(Clone, Serialize, Deserialize)]
pub enum Sent {
    Pair(Packed<Vec<Action>>),
    Passed(u64),
}

impl From<Travel> for Sent {
    fn from(t: Travel) -> Sent {
        match t {
            Travel::Pair { path, .. } | Travel::Rebuild { path } => Sent::Pair(Packed(path)),
            Travel::Passed(fp) => Sent::Passed(fp),
        }
    }
}

impl From<Sent> for Travel {
    fn from(s: Sent) -> Travel {
        match s {
            Sent::Pair(Packed(path)) => Travel::Rebuild { path },
            Sent::Passed(fp) => Travel::Passed(fp),
        }
    }
}

/// What replaying the transitions of one model state counted.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct StateCounts {
    pub transitions: u32,
    pub encodings: u32,
    pub refusals: u32,
    pub wire_checked: u32,
    pub installs: u32,
    pub chunks: u32,
    pub min_chunks: u32,
    pub part_restarts: u32,
}

/// Something found at a state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Finding {
    /// The counts of the state's transitions.
    Counts(StateCounts),
    /// A transition whose two sides differ: the actions from the root pair to it.
    Divergence(Vec<Action>),
}

/// Rebuilds of pairs that crossed processes in this process: how many, and their time in total.
#[derive(Default)]
pub struct RebuildCost {
    pub rebuilds: AtomicU64,
    pub nanos: AtomicU64,
    pub actions: AtomicU64,
}

/// The gate's graph as a search space.
pub struct GateSpace {
    ctx: Ctx,
    root: Option<Pair>,
    /// Wire checkers of the workers (a worker takes one for each expansion).
    checks: Mutex<Vec<Check>>,
    template: WireChecker,
    pub rebuild: RebuildCost,
}

impl GateSpace {
    /// The space of `opts`' graph; `Err` with the root's divergence if the initial state does not replay.
    pub fn new(
        opts: &GraphOptions,
        wire: &WireChecker,
    ) -> Result<Result<GateSpace, Box<replay::Divergence>>, String> {
        let ropts = replay::Options {
            seed: opts.seed,
            hook: opts.hook.clone(),
        };
        let ctx = Ctx::new(opts.config, ropts)?;
        let template = Check::new(wire).wire;
        let mut w0 = Check::new(wire).wire;
        let root = match ctx.root(&mut w0) {
            Ok(r) => r,
            Err(d) => return Ok(Err(d)),
        };
        Ok(Ok(GateSpace {
            ctx,
            root,
            checks: Mutex::new(Vec::new()),
            template,
            rebuild: RebuildCost::default(),
        }))
    }

    /// A pair that crossed processes: the root pair with the path's model steps and implementation
    /// inputs applied.
    pub fn rebuilt(&self, path: &[Action]) -> Result<Pair, String> {
        let started = Instant::now();
        let root = self.root.as_ref().ok_or("no root pair")?;
        let (mut state, mut cluster) = (root.state.clone(), root.cluster.clone());
        for a in path {
            state = self
                .ctx
                .model
                .step(&state, *a)
                .ok_or_else(|| format!("the model refuses {a:?} on the path"))?
                .state;
            cluster.apply(a, self.ctx.model.cfg.fetch)?;
        }
        let pair = Pair::new(state, cluster);
        let r = &self.rebuild;
        r.rebuilds.fetch_add(1, Ordering::Relaxed);
        r.actions.fetch_add(path.len() as u64, Ordering::Relaxed);
        r.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(pair)
    }

    fn expand_pair(
        &self,
        pair: &Pair,
        path: &[Action],
        out: &mut Vec<(Action, Travel)>,
        findings: &mut Vec<Finding>,
    ) {
        let mut check = self
            .checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_else(|| Check::new(&self.template));
        let wire_before = check.wire.checked;
        check.counts = replay::Counts::default();
        let mut transitions = 0u64;
        let mut actions = Vec::new();
        self.ctx.actions(pair, &mut actions);
        for &a in &actions {
            match replay::step(&self.ctx, pair, a, &mut check) {
                Ok(None) => {}
                Ok(Some(next)) => {
                    transitions += next.taken.len() as u64;
                    for fp in next.passed {
                        out.push((a, Travel::Passed(fp)));
                    }
                    if next.within {
                        let mut p = Vec::with_capacity(path.len() + next.taken.len());
                        p.extend_from_slice(path);
                        p.extend_from_slice(&next.taken);
                        out.push((
                            a,
                            Travel::Pair {
                                pair: Box::new(next.pair),
                                path: p,
                            },
                        ));
                    }
                }
                Err(d) => {
                    transitions += d.taken.len() as u64;
                    let mut p = path.to_vec();
                    p.extend_from_slice(&d.taken);
                    findings.push(Finding::Divergence(p));
                }
            }
        }
        let c = &check.counts;
        findings.push(Finding::Counts(StateCounts {
            transitions: transitions as u32,
            encodings: c.encodings as u32,
            refusals: c.refusals as u32,
            wire_checked: (check.wire.checked - wire_before) as u32,
            installs: c.downloads.installs as u32,
            chunks: c.downloads.chunks as u32,
            min_chunks: c.downloads.min_chunks as u32,
            part_restarts: c.downloads.part_restarts as u32,
        }));
        self.checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(check);
    }
}

impl Space for GateSpace {
    type State = Travel;
    type Action = Action;
    type Finding = Finding;
    /// A pair moves between a process's workers as it is; [`Travel`]'s serde form is its path.
    type Stored = Travel;

    fn store(&self, s: Travel) -> Travel {
        s
    }

    fn load(&self, s: Travel) -> Result<Travel, String> {
        Ok(s)
    }

    fn roots(&self) -> Vec<Travel> {
        self.root
            .iter()
            .map(|p| Travel::Pair {
                pair: Box::new(p.clone()),
                path: Vec::new(),
            })
            .collect()
    }

    fn fingerprint(&self, s: &Travel) -> u64 {
        match s {
            Travel::Pair { pair, .. } => pair.model_fingerprint(),
            Travel::Rebuild { path } => self.rebuilt(path).map_or(0, |p| p.model_fingerprint()),
            Travel::Passed(fp) => *fp,
        }
    }

    fn expand(&self, s: &Travel, out: &mut Vec<(Action, Travel)>, findings: &mut Vec<Finding>) {
        match s {
            Travel::Pair { pair, path } => self.expand_pair(pair, path, out, findings),
            Travel::Rebuild { path } => match self.rebuilt(path) {
                Ok(pair) => self.expand_pair(&pair, path, out, findings),
                // A path that replayed once and not again: the harness is not deterministic.
                Err(_) => findings.push(Finding::Divergence(path.clone())),
            },
            Travel::Passed(_) => {}
        }
    }

    fn check(&self, _: &Travel, _: &mut Vec<Finding>) {}

    fn is_failure(&self, f: &Finding) -> bool {
        matches!(f, Finding::Divergence(_))
    }
}

/// What a run on the engine adds to the graph outcome: where it ran and what crossing cost.
#[derive(Debug, Default)]
pub struct EngineNote {
    pub workers: usize,
    pub processes: usize,
    pub peak_rss: Vec<u64>,
    /// Pairs rebuilt in this process, the actions applied, and the time it took.
    pub rebuilds: u64,
    pub rebuild_actions: u64,
    pub rebuild_seconds: f64,
}

/// Replays every transition of `opts`' graph on the engine. `None` on processes other than 0 (the
/// outcome is process 0's).
pub fn run(
    opts: &GraphOptions,
    cluster: &engine::Cluster,
    wire: &WireChecker,
) -> Result<Option<(GraphOutcome, EngineNote)>, String> {
    let started = Instant::now();
    let space = match GateSpace::new(opts, wire)? {
        Ok(s) => Arc::new(s),
        Err(d) => {
            let out = GraphOutcome {
                divergences: vec![*d],
                seconds: started.elapsed().as_secs_f64(),
                ..GraphOutcome::default()
            };
            return Ok(Some((out, EngineNote::default())));
        }
    };
    let eopts = engine::Options {
        cluster: cluster.clone(),
        default_workers: opts.threads.max(1),
        stop_at_failure: true,
        max_states: opts.max_states,
        timeout: None,
        progress: opts.progress_secs > 0,
    };
    let outcome = engine::run(space.clone(), eopts).map_err(|e| e.to_string())?;
    let r = &space.rebuild;
    let mut note = EngineNote {
        rebuilds: r.rebuilds.load(Ordering::Relaxed),
        rebuild_actions: r.actions.load(Ordering::Relaxed),
        rebuild_seconds: r.nanos.load(Ordering::Relaxed) as f64 / 1e9,
        ..EngineNote::default()
    };
    let Some(o) = outcome else {
        return Ok(None);
    };
    note.workers = o.workers;
    note.processes = o.processes;
    note.peak_rss = o.peak_rss.clone();
    let mut out = GraphOutcome {
        states: o.unique,
        ..GraphOutcome::default()
    };
    let mut downloads = Downloads::default();
    let mut paths = Vec::new();
    for f in &o.findings {
        match &f.finding {
            Finding::Counts(c) => {
                out.expanded += 1;
                out.transitions += u64::from(c.transitions);
                out.encodings += u64::from(c.encodings);
                out.refusals += u64::from(c.refusals);
                out.wire_checked += u64::from(c.wire_checked);
                downloads.add(&Downloads {
                    installs: u64::from(c.installs),
                    chunks: u64::from(c.chunks),
                    min_chunks: u64::from(c.min_chunks),
                    part_restarts: u64::from(c.part_restarts),
                });
            }
            Finding::Divergence(p) => paths.push(p.clone()),
        }
    }
    // `Passed` states are counted as states, not expanded.
    out.downloads = downloads;
    out.truncated = o.stopped && paths.is_empty();
    out.complete = !o.stopped && paths.is_empty();
    paths.sort_by_key(|p| p.len());
    paths.dedup();
    let mut w0 = Check::new(wire).wire;
    for (k, actions) in paths.into_iter().take(opts.max_divergences).enumerate() {
        let label = format!("graph path #{k} ({} actions)", actions.len());
        out.divergences
            .push(space.ctx.confirm(label, actions, &mut w0));
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(Some((out, note)))
}
