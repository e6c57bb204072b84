//! Transition tours (`conformance node --tour GRAPH`): every transition of a small kit-drivable graph
//! covered by a set of paths, each driven over TCP against a fresh `kraft node`.
//!
//! The **drivable graph** of a named graph is built in the model alone ([`sim`]): a vertex is the
//! kit's state once the node has settled (the model state, by the model's fingerprint, and the
//! node's requests the played replicas hold, in order); a transition is a choice the kit can force
//! there ([`super::walk::not_choosable`]), followed by the node's eager steps, whose successor stays
//! within the tour's bounds. The only node timer in it is the first election of the fresh node
//! (`first-election` only: the path starts with the node's short election timeout and the kit quiet).
//! A greedy path cover ([`TourGraph::cover`]) then gives paths from the start that together take every
//! transition. On the wire every step's outcome is checked against the model as in any kit run, and
//! its vertex against the prediction: a path whose node took a step of its own clock (a timer that
//! fired anyway) is cut there, and the transitions it did not reach get paths of their own in the
//! next round.

pub mod sim;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use model::types::{Action, Id, Role, State};
use model::{FetchMode, KraftModel, ModelConfig, Start};

use super::driver::{race, Divergence, Kit};
use super::report::Report;
use super::walk::{self, check_config, in_bounds, not_choosable, NEVER};
use super::{KitArgs, NUT};
use crate::schema::MessageSchema;
use crate::sources::graph_config;
use sim::{vertex_key, Sim};

type R<T> = Result<T, Box<Divergence>>;

/// Graphs with a tour.
pub const TOURS: [&str; 2] = ["first-election", "membership"];

/// Vertices a tour graph may have (the bounds below stay far under it).
const MAX_VERTICES: usize = 20_000;

/// The tour bounds of a named graph: its protocol and start, bounds small enough that every
/// transition is driven in about a minute (README, "Transition tours"). `appends`: records the node
/// writes on its own once elected (`--elected-appends`, all batches), for which the log bound grows.
pub fn tour_bounds(name: &str, appends: u8) -> Option<ModelConfig> {
    let g = graph_config(name)?;
    Some(match name {
        "first-election" => ModelConfig {
            max_epoch: 1,
            max_in_flight: 3,
            max_crashes: 1,
            max_log: g.max_log + appends,
            max_data: appends,
            ..g
        },
        _ => ModelConfig {
            max_epoch: 1,
            max_in_flight: 1,
            max_log: 4 + appends,
            max_data: appends,
            ..g
        },
    })
}

/// Per batch of the node's own records: how many it has written by then, and the played replicas
/// that fetch after them, in turn.
pub type Stages = Vec<(u8, Vec<Id>)>;

/// The membership tour's start for a node that writes record `batches` of its own once elected (a
/// Kafka controller's bootstrap metadata, then its registration), and the stages that reach it: the
/// voters' part of the model's elected start (the node's first election, two fetch rounds of the
/// voters), then per batch the node's records (`ClientAppend`) and rounds in which every other
/// server fetches while that changes something (the joiner's discovery included; the model takes no
/// fetch that changes nothing): everyone caught up, as in the elected start. With no batches: the
/// model's elected start (the joiner fetches three times).
pub fn elected_start(bounds: &ModelConfig, batches: &[u8]) -> Result<(State, Stages), String> {
    let model = KraftModel::new(*bounds).map_err(|e| e.to_string())?;
    if batches.is_empty() {
        return Ok((model.initial_state(), Vec::new()));
    }
    let sync = KraftModel::new(ModelConfig {
        fetch: FetchMode::Sync,
        start: Start::Fresh,
        ..*bounds
    })
    .map_err(|e| e.to_string())?;
    let voters = bounds.voters;
    let mut st = sync.fresh_state();
    let step = |st: &State, a: Action| -> Result<State, String> {
        sync.step(st, a)
            .map(|s| s.state)
            .ok_or_else(|| format!("elected start: {a:?} is not enabled"))
    };
    for a in model.election_prefix() {
        if !matches!(a, Action::Fetch { replica, .. } if replica >= voters) {
            st = step(&st, a)?;
        }
    }
    let mut stages = Vec::new();
    for &b in batches {
        for _ in 0..b {
            st = step(&st, Action::ClientAppend(NUT))?;
        }
        let mut fetches = Vec::new();
        for round in 0.. {
            let before = fetches.len();
            for r in 1..bounds.servers() {
                if let Ok(next) = step(
                    &st,
                    Action::Fetch {
                        replica: r,
                        leader: NUT,
                    },
                ) {
                    st = next;
                    fetches.push(r);
                }
            }
            if fetches.len() == before {
                break;
            }
            if round == 8 {
                return Err("elected start: the fetch rounds do not settle".into());
            }
        }
        stages.push((st.history.data, fetches));
    }
    Ok((st, stages))
}

/// Played replicas whose timers the tours leave out (a bit per id): both, so that the node is the
/// only server that stands. With replica 1's timers the first-election graph has 2,740 states and
/// needs 2,133 paths (one node process each), far beyond a minute.
pub const QUIET_REPLICAS: u8 = 0b110;

const QUIET: &str =
    "a played replica's timer (left out: the node is the only server that stands, which keeps the tour small)";

/// One transition of the drivable graph.
#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub from: usize,
    pub action: Action,
    pub to: usize,
}

/// The drivable graph of a tour.
pub struct TourGraph {
    pub bounds: ModelConfig,
    pub check: KraftModel,
    pub vertices: Vec<Sim>,
    pub keys: Vec<u64>,
    pub edges: Vec<Edge>,
    pub out: Vec<Vec<usize>>,
    /// How the membership start is reached after the node's own records ([`elected_start`]).
    pub start_stages: Stages,
    /// Model transitions enabled at the graph's vertices that the kit cannot drive, by reason.
    pub not_drivable: BTreeMap<&'static str, usize>,
}

/// True for the one node timer a tour drives: the fresh node's first election, as a path's first
/// event.
fn is_first_election(e: &Edge) -> bool {
    e.from == 0 && e.action == Action::ElectionTimeout(NUT)
}

impl TourGraph {
    /// Builds the drivable graph of `name` (breadth first from its start) for a node that writes no
    /// records of its own.
    pub fn build(name: &str) -> Result<TourGraph, String> {
        Self::build_for(name, &[])
    }

    /// Builds the drivable graph of `name` for a node that writes record `batches` of its own once
    /// elected (eager steps of the node, `driver::hold::appends_due`; the membership tour starts
    /// after them, [`elected_start`]).
    pub fn build_for(name: &str, batches: &[u8]) -> Result<TourGraph, String> {
        let total = batches.iter().fold(0u8, |t, b| t.saturating_add(*b));
        let bounds = tour_bounds(name, total).ok_or_else(|| format!("no tour {name:?}"))?;
        // The membership tour starts elected, after the node's records; first-election fresh.
        let (start, stages) =
            elected_start(&bounds, if name == "membership" { batches } else { &[] })?;
        let mut g = Self::build_with(name, bounds, QUIET_REPLICAS, (start, batches.to_vec()))?;
        g.start_stages = stages;
        Ok(g)
    }

    /// Builds the drivable graph of `name`'s protocol at `bounds` from `start`, for a node that
    /// writes record batches `appends` of its own once elected; the timers of the played replicas
    /// in `quiet` (a bit per id) are left out.
    pub fn build_with(
        name: &str,
        bounds: ModelConfig,
        quiet: u8,
        (start, appends): (State, Vec<u8>),
    ) -> Result<TourGraph, String> {
        let check = KraftModel::new(check_config(&bounds)).map_err(|e| e.to_string())?;
        let mut g = TourGraph {
            bounds,
            check,
            vertices: Vec::new(),
            keys: Vec::new(),
            edges: Vec::new(),
            out: Vec::new(),
            start_stages: Vec::new(),
            not_drivable: BTreeMap::new(),
        };
        let root = Sim::new(start, appends);
        let mut index: HashMap<u64, usize> = HashMap::new();
        index.insert(root.key(), 0);
        g.keys.push(root.key());
        g.vertices.push(root);
        g.out.push(Vec::new());
        let mut queue = VecDeque::from([0usize]);
        while let Some(v) = queue.pop_front() {
            let sim = g.vertices[v].clone();
            let mut enabled = Vec::new();
            g.check.enabled_actions(&sim.state, &mut enabled);
            let deliverable = sim.deliverable();
            let restarts = bounds.max_crashes > 0;
            for a in enabled {
                let first = v == 0 && a == Action::ElectionTimeout(NUT) && name != "membership";
                if let (false, Some(why)) = (first, not_choosable(NUT, &deliverable, &a, restarts))
                {
                    *g.not_drivable.entry(why).or_default() += 1;
                    continue;
                }
                if let Action::ElectionTimeout(i)
                | Action::FetchTimeout(i)
                | Action::CheckQuorumTimeout(i) = a
                {
                    if quiet & (1 << i) != 0 && i != NUT {
                        *g.not_drivable.entry(QUIET).or_default() += 1;
                        continue;
                    }
                }
                if a == Action::Restart(NUT) && !sim.held.is_empty() {
                    *g.not_drivable
                        .entry(
                            "the node's restart while the kit holds a request of it (the request \
                             dies with the connection; the model would still deliver it)",
                        )
                        .or_default() += 1;
                    continue;
                }
                let mut next = sim.clone();
                let settled = next.perform(&g.check, NUT, a);
                // A model step the checking model refuses is one beyond its bounds (a change when
                // the changes are spent); one it takes and cannot settle would be a kit bug.
                if settled.is_none() && g.check.step(&sim.state, a).is_some() {
                    *g.not_drivable
                        .entry("the node's eager steps do not settle in the model")
                        .or_default() += 1;
                    continue;
                }
                if settled.is_none()
                    || !in_bounds(&g.bounds, &next.state)
                    || next.state.network.len() > g.bounds.max_in_flight as usize
                {
                    *g.not_drivable
                        .entry("its outcome leaves the tour's bounds")
                        .or_default() += 1;
                    continue;
                }
                let key = next.key();
                let to = match index.get(&key) {
                    Some(&t) => t,
                    None => {
                        if g.vertices.len() >= MAX_VERTICES {
                            return Err(format!("tour {name}: more than {MAX_VERTICES} states"));
                        }
                        let t = g.vertices.len();
                        index.insert(key, t);
                        g.keys.push(key);
                        g.vertices.push(next);
                        g.out.push(Vec::new());
                        queue.push_back(t);
                        t
                    }
                };
                g.out[v].push(g.edges.len());
                g.edges.push(Edge {
                    from: v,
                    action: a,
                    to,
                });
            }
        }
        Ok(g)
    }

    /// Edges from `from` to the nearest vertex with a transition still `todo`, then that transition
    /// (preferring one whose target has more to do, so that dead ends come last).
    fn route(&self, from: usize, todo: &[bool], at_start: bool) -> Option<Vec<usize>> {
        let usable = |e: usize| at_start || !is_first_election(&self.edges[e]);
        let mut prev: Vec<Option<usize>> = vec![None; self.vertices.len()];
        let mut seen = vec![false; self.vertices.len()];
        let mut queue = VecDeque::from([from]);
        seen[from] = true;
        while let Some(v) = queue.pop_front() {
            let pending: Vec<usize> = self.out[v]
                .iter()
                .copied()
                .filter(|&e| todo[e] && (v != from || usable(e)))
                .collect();
            if let Some(&last) = pending
                .iter()
                .max_by_key(|&&e| {
                    let t = self.edges[e].to;
                    self.out[t].iter().filter(|&&x| todo[x]).count()
                })
                .or(pending.first())
            {
                let mut path = vec![last];
                let mut at = v;
                while let Some(e) = prev[at] {
                    path.push(e);
                    at = self.edges[e].from;
                }
                path.reverse();
                return Some(path);
            }
            for &e in &self.out[v] {
                let t = self.edges[e].to;
                if !seen[t] && (at_start || !is_first_election(&self.edges[e])) {
                    seen[t] = true;
                    prev[t] = Some(e);
                    queue.push_back(t);
                }
            }
        }
        None
    }

    /// Paths from the start that together take every transition of `todo` (greedy: each path goes
    /// to the nearest transition still to do until none is reachable or it has `max_len` steps).
    pub fn cover(&self, todo: &[bool], max_len: usize) -> Vec<Vec<usize>> {
        let mut todo = todo.to_vec();
        let mut paths = Vec::new();
        while todo.iter().any(|t| *t) {
            let mut path: Vec<usize> = Vec::new();
            let mut at = 0;
            while path.len() < max_len {
                let Some(r) = self.route(at, &todo, path.is_empty()) else {
                    break;
                };
                for &e in &r {
                    todo[e] = false;
                }
                at = self.edges[r[r.len() - 1]].to;
                path.extend(r);
            }
            if path.is_empty() {
                break;
            }
            paths.push(path);
        }
        paths
    }
}

/// The totals of one tour.
#[derive(Default, Debug)]
pub struct TourOutcome {
    pub vertices: usize,
    /// Drivable transitions (T).
    pub transitions: usize,
    /// Transitions driven on the wire with the predicted vertex before and after.
    pub covered: usize,
    pub paths: usize,
    pub steps: usize,
    /// Paths cut where the node's own clock took a step the path did not predict.
    pub cut: usize,
    /// The election timeout of the last round's nodes that stand first (ms).
    pub election_ms: u64,
    pub not_drivable: BTreeMap<&'static str, usize>,
    pub results: Vec<(String, Result<(), String>)>,
}

/// Rounds of paths: the first covers the graph, later ones what cut paths did not reach (more while
/// the node's timer cut paths and a longer election timeout is left).
const ROUNDS: usize = 3;
/// Steps per path at most (a path is one node process; shorter paths bound the damage of a cut).
const MAX_LEN: usize = 40;

/// How a path ended early.
#[derive(Default)]
struct Cut {
    /// The node's own clock took the path elsewhere (not a divergence: every step was checked).
    cut: bool,
    /// ... by a timer step of the node beyond the one the path starts with.
    by_timer: bool,
}

/// Runs the tour of `name` against fresh `kraft node` processes (`bin`). A node that stands first
/// starts with `--election-ms`; after a round in which its timer cut a path the next round's is
/// doubled (`race::longer_timeout`), so that a slow machine takes more rounds, never a divergence.
pub fn run(
    args: &KitArgs,
    name: &str,
    bin: &super::Launcher,
    work: &Path,
    schema: &MessageSchema,
    report: &mut Report,
) -> Result<TourOutcome, String> {
    let g = TourGraph::build_for(name, &args.elected_appends)?;
    let mut out = TourOutcome {
        vertices: g.vertices.len(),
        transitions: g.edges.len(),
        not_drivable: g.not_drivable.clone(),
        ..TourOutcome::default()
    };
    let mut done = vec![false; g.edges.len()];
    let mut election = args.election_ms;
    let mut round = 0;
    loop {
        let todo: Vec<bool> = done.iter().map(|d| !d).collect();
        let paths = g.cover(&todo, MAX_LEN);
        if paths.is_empty() {
            break;
        }
        let longer = race::longer_timeout(election, args.wait_ms);
        let mut timer_cut = false;
        for (p, path) in paths.iter().enumerate() {
            let label = format!("tour {name} round {round} path {p} ({} steps)", path.len());
            report.trace = label.clone();
            let stands = name == "membership" || is_first_election(&g.edges[path[0]]);
            // A node that writes records of its own (a Kafka controller's metadata) is checked with
            // room for them; the graph does not predict them (a path they change is cut).
            let check = KraftModel::new(ModelConfig {
                max_data: args.node_appends,
                ..g.check.cfg
            })
            .map_err(|e| e.to_string())?;
            let dir = work.join(format!("tour-{name}-{round}-{p}"));
            let (mut kit, mut node) = walk::fresh_kit(
                args,
                bin,
                dir,
                if stands { election } else { NEVER },
                check,
                std::mem::take(report),
                schema,
            )?;
            let mut cut = Cut::default();
            let r = drive(
                &mut kit,
                &mut node,
                &g,
                (name, args.describe_max),
                path,
                &mut done,
                (&mut cut, &mut out.steps),
            );
            // A race of the node's timer cuts the path while a longer timeout is left.
            let r = match r {
                Err(d) if race::is_timer_race(&d) && longer.is_some() => {
                    cut = Cut {
                        cut: true,
                        by_timer: true,
                    };
                    Ok(())
                }
                r => r,
            };
            *report = std::mem::take(&mut kit.report);
            drop(kit);
            let dir = node.dir.clone();
            drop(node);
            if r.is_ok() {
                let _ = std::fs::remove_dir_all(&dir);
            }
            out.cut += usize::from(cut.cut);
            timer_cut |= cut.by_timer;
            out.paths += 1;
            out.results.push((label, r.map_err(|d| d.to_string())));
        }
        if out.results.iter().any(|r| r.1.is_err()) {
            break;
        }
        round += 1;
        match longer {
            Some(t) if timer_cut => election = t,
            _ if round >= ROUNDS => break,
            _ => {}
        }
    }
    out.covered = done.iter().filter(|d| **d).count();
    out.election_ms = election;
    Ok(out)
}

/// Drives one path; marks the transitions taken as predicted in `done`. `cut`: the node's own clock
/// took the path elsewhere (not a divergence: every step was checked against the model).
fn drive(
    kit: &mut Kit,
    node: &mut super::NodeProcess,
    g: &TourGraph,
    (name, dq): (&str, i16),
    path: &[usize],
    done: &mut [bool],
    (cut, steps): (&mut Cut, &mut usize),
) -> R<()> {
    let me = NUT as usize;
    if name == "membership" {
        let start = g.vertices[0].state.clone();
        walk::reach_elected_start(kit, start, &g.start_stages)?;
    }
    kit.hold = true;
    // The node's timer steps the path expects: its first election, if any.
    let mut timers = kit.node_timers;
    for &e in path {
        let edge = g.edges[e];
        if vertex_key(&kit.state, &kit.held_envs()) != g.keys[edge.from] {
            cut.cut = true;
            cut.by_timer = kit.node_timers > timers;
            break;
        }
        if is_first_election(&edge) {
            kit.until("the node's election timeout", |k| {
                k.state.servers[me].role != Role::Unattached
            })?;
            timers = kit.node_timers;
        } else if edge.action == Action::Restart(NUT) {
            // Started again with timers that never fire (a restarted leader comes back resigned).
            kit.restart_node(node, (NEVER, NEVER))?;
        } else {
            walk::perform(kit, edge.action)?;
        }
        kit.settle_node()?;
        kit.describe(dq)?;
        *steps += 1;
        if vertex_key(&kit.state, &kit.held_envs()) == g.keys[edge.to] {
            done[e] = true;
        } else {
            cut.cut = true;
            cut.by_timer = kit.node_timers > timers;
            break;
        }
    }
    for v in 0..=dq {
        kit.describe(v)?;
    }
    Ok(())
}
