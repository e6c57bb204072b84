//! Running the checker: exhaustive proof (DFS + symmetry), bug hunting (BFS, shortest
//! counterexample), simulation; and the bug variants' counterexamples as action lists.

use crate::config::{Bug, FetchMode, ModelConfig, Start};
use crate::properties::kind_name;
use crate::step::KraftModel;
use crate::types::{Action, State};
use serde::{Deserialize, Serialize};
use stateright::{Checker, Expectation, HasDiscoveries, Model, UniformChooser};
use std::time::{Duration, Instant};

/// Search strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// Depth-first, honours symmetry; the exhaustive proof.
    Dfs,
    /// Breadth-first (no symmetry in stateright 0.31); shortest counterexamples with one thread.
    Bfs,
    /// Seeded random walks.
    Simulation {
        /// Seed of the first thread.
        seed: u64,
    },
}

/// How to run a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOptions {
    /// Strategy.
    pub strategy: Strategy,
    /// Worker threads.
    pub threads: usize,
    /// Symmetry reduction (DFS and simulation only).
    pub symmetry: bool,
    /// Stateright `target_max_depth` (paths of at most depth − 2 actions); `None` = unbounded.
    pub depth: Option<usize>,
    /// Stop after this long (the run is then not exhaustive).
    pub timeout: Option<Duration>,
    /// Stop at the first violation (mandatory to keep the first, shortest counterexample).
    pub stop_at_first_violation: bool,
    /// Print progress to stderr every second.
    pub progress: bool,
    /// Stop after generating about this many states (the run is then not exhaustive). A BFS keeps
    /// every queued state in memory, so long BFS runs need it (`check --harm`).
    pub max_states: Option<usize>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            strategy: Strategy::Dfs,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            symmetry: true,
            depth: None,
            timeout: None,
            stop_at_first_violation: false,
            progress: false,
            max_states: None,
        }
    }
}

/// Verdict of one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// `always`: no violating state found.
    Holds,
    /// `always`: a violating state found.
    Violated,
    /// `sometimes`: an example found.
    ExampleFound,
    /// `sometimes`: no example found.
    NoExample,
}

/// One property's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyResult {
    /// Property name.
    pub name: String,
    /// `always` or `sometimes`.
    pub kind: String,
    /// Verdict.
    pub status: Status,
}

impl PropertyResult {
    /// The verdict on `p`, given whether the search found a state where it fails (`always`) or holds
    /// (`sometimes`): the one rule both engines report by.
    pub fn of<M: stateright::Model>(p: &stateright::Property<M>, found: bool) -> Self {
        PropertyResult {
            name: p.name.to_string(),
            kind: kind_name(&p.expectation).to_string(),
            status: match (&p.expectation, found) {
                (Expectation::Always, true) => Status::Violated,
                (Expectation::Always, false) => Status::Holds,
                (_, true) => Status::ExampleFound,
                (_, false) => Status::NoExample,
            },
        }
    }
}

/// A counterexample (or example) path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counterexample {
    /// The property it violates.
    pub property: String,
    /// The actions from the initial state.
    pub actions: Vec<Action>,
    /// States along the path (initial first), each with the action taken from it.
    pub steps: Vec<(State, Option<Action>)>,
    /// Stateright's action-index path, for the Explorer (`#/steps/...`).
    pub index_path: String,
}

/// The outcome of a check.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckReport {
    /// True if the whole bounded state space was explored.
    pub exhaustive: bool,
    /// Bounds and knobs.
    pub bounds: ModelConfig,
    /// Generated states (including revisits).
    pub states: usize,
    /// Unique states (representatives under symmetry).
    pub unique_states: usize,
    /// Longest path explored, in states.
    pub max_depth: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Every property.
    pub properties: Vec<PropertyResult>,
    /// The first violated `always` property's counterexample.
    pub counterexample: Option<Counterexample>,
}

impl CheckReport {
    /// Every `always` property holds and every `sometimes` property found an example.
    pub fn ok(&self) -> bool {
        self.properties
            .iter()
            .all(|p| matches!(p.status, Status::Holds | Status::ExampleFound))
    }
    /// Names of violated `always` properties.
    pub fn violated(&self) -> Vec<&str> {
        self.properties
            .iter()
            .filter(|p| p.status == Status::Violated)
            .map(|p| p.name.as_str())
            .collect()
    }
    /// Unique states per second.
    pub fn unique_per_second(&self) -> f64 {
        self.unique_states as f64 / self.seconds.max(1e-9)
    }
}

/// Waits for a checker, printing progress to stderr every second if asked.
fn wait<C: Checker<KraftModel>>(checker: C, progress: bool, started: Instant) -> C {
    if progress {
        let mut next = Duration::from_secs(1);
        while !checker.is_done() {
            std::thread::sleep(Duration::from_millis(50));
            if started.elapsed() < next {
                continue;
            }
            next += Duration::from_secs(1);
            let secs = started.elapsed().as_secs_f64();
            let unique = checker.unique_state_count();
            eprintln!(
                "  ... {secs:.0} s: states {}, unique {unique} ({:.0}/s), depth {}",
                checker.state_count(),
                unique as f64 / secs.max(1e-9),
                checker.max_depth()
            );
        }
    }
    checker.join()
}

/// Runs a check of `model` with `opts`. An exhaustive DFS with symmetry (the proof) runs on
/// [`crate::dfs`]; everything else, and the counterexample of a failed proof, on Stateright.
pub fn run(model: KraftModel, opts: CheckOptions) -> CheckReport {
    if opts.strategy == Strategy::Dfs
        && opts.symmetry
        && opts.depth.is_none()
        && !opts.stop_at_first_violation
    {
        return run_proof(model, opts);
    }
    let shortest = opts.strategy == Strategy::Bfs
        && opts.threads == 1
        && opts.stop_at_first_violation
        && opts.depth.is_none();
    let mut report = run_stateright(model.clone(), opts);
    if shortest {
        report.counterexample = report.counterexample.map(|c| shortest_of(&model, opts, c));
    }
    report
}

/// A shortest counterexample, given one of `c.actions.len()` steps: Stateright's BFS keeps the
/// last violating state of the block it stopped in, which may lie one or more levels deeper than
/// the first, so depth-bounded searches try every shorter length in turn (each one is exhaustive
/// up to its depth, and a BFS reaches every state at its least depth).
fn shortest_of(model: &KraftModel, opts: CheckOptions, c: Counterexample) -> Counterexample {
    for steps in 1..c.actions.len() {
        let bounded = CheckOptions {
            depth: Some(steps + 2),
            progress: false,
            ..opts
        };
        if let Some(short) = run_stateright(model.clone(), bounded).counterexample {
            return short;
        }
    }
    c
}

/// The proof on [`crate::dfs::search`]; if an `always` property fails, Stateright's DFS (stopping at
/// the first violation) finds the counterexample path.
fn run_proof(model: KraftModel, opts: CheckOptions) -> CheckReport {
    let started = Instant::now();
    let limits = crate::dfs::Limits {
        timeout: opts.timeout,
        max_states: opts.max_states,
        progress: opts.progress,
    };
    let out = crate::dfs::search(&model, opts.threads, limits);
    let seconds = started.elapsed().as_secs_f64();
    let properties: Vec<PropertyResult> = model
        .properties()
        .iter()
        .zip(&out.discovered)
        .map(|(p, &found)| PropertyResult::of(p, found))
        .collect();
    let counterexample = if properties.iter().any(|p| p.status == Status::Violated) {
        let again = CheckOptions {
            stop_at_first_violation: true,
            progress: false,
            ..opts
        };
        run_stateright(model.clone(), again).counterexample
    } else {
        None
    };
    CheckReport {
        exhaustive: !out.stopped,
        bounds: model.cfg,
        states: out.generated,
        unique_states: out.unique,
        max_depth: out.max_depth,
        seconds,
        properties,
        counterexample,
    }
}

/// A check on Stateright's checkers (any strategy; `run` uses it for everything but the proof).
pub fn run_stateright(model: KraftModel, opts: CheckOptions) -> CheckReport {
    let bounds = model.cfg;
    let properties = model.properties();
    let started = Instant::now();
    let mut builder = model.checker().threads(opts.threads.max(1));
    if opts.symmetry && !matches!(opts.strategy, Strategy::Bfs) {
        builder = builder.symmetry();
    }
    if let Some(d) = opts.depth {
        builder = builder.target_max_depth(d);
    }
    if let Some(t) = opts.timeout {
        builder = builder.timeout(t);
    }
    if opts.stop_at_first_violation {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    if let Some(n) = opts.max_states {
        builder = builder.target_state_count(n);
    }
    let p = opts.progress;
    let checker = match opts.strategy {
        Strategy::Dfs => {
            Box::new(wait(builder.spawn_dfs(), p, started)) as Box<dyn Checker<KraftModel>>
        }
        Strategy::Bfs => Box::new(wait(builder.spawn_bfs(), p, started)),
        Strategy::Simulation { seed } => Box::new(wait(
            builder.spawn_simulation(seed, UniformChooser),
            p,
            started,
        )),
    };
    let seconds = started.elapsed().as_secs_f64();
    let discoveries = checker.discoveries();
    let model = checker.model();
    let mut results = Vec::new();
    let mut counterexample: Option<Counterexample> = None;
    for p in &properties {
        let found = discoveries.get(p.name);
        let status = match (&p.expectation, found.is_some()) {
            (Expectation::Always, true) => Status::Violated,
            (Expectation::Always, false) => Status::Holds,
            (_, true) => Status::ExampleFound,
            (_, false) => Status::NoExample,
        };
        if status == Status::Violated {
            let path = found.cloned().expect("violated implies a discovery");
            // Stateright keeps the last violating state it met in a block; cut the path at the
            // first state that violates the property.
            let mut steps = path.into_vec();
            if let Some(k) = steps.iter().position(|(st, _)| !(p.condition)(model, st)) {
                steps.truncate(k + 1);
                steps[k].1 = None;
            }
            // The shortest cut path wins (the first in property order among equals): a block may
            // hold a longer violation of an earlier property.
            if counterexample
                .as_ref()
                .is_none_or(|c| steps.len() < c.steps.len())
            {
                let actions: Vec<Action> = steps.iter().filter_map(|(_, a)| *a).collect();
                let index_path =
                    match stateright::Path::from_actions(model, steps[0].0.clone(), &actions) {
                        Some(p) => p.encode(model),
                        None => String::new(),
                    };
                counterexample = Some(Counterexample {
                    property: p.name.to_string(),
                    actions,
                    steps,
                    index_path,
                });
            }
        }
        results.push(PropertyResult {
            name: p.name.to_string(),
            kind: kind_name(&p.expectation).to_string(),
            status,
        });
    }
    let stopped_early = opts.stop_at_first_violation && counterexample.is_some();
    let timed_out = opts.timeout.is_some_and(|t| started.elapsed() >= t);
    let capped = opts.max_states.is_some_and(|n| checker.state_count() >= n);
    let exhaustive = !matches!(opts.strategy, Strategy::Simulation { .. })
        && opts.depth.is_none()
        && !timed_out
        && !capped
        && !stopped_early;
    CheckReport {
        exhaustive,
        bounds,
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        seconds,
        properties: results,
        counterexample,
    }
}

/// Bounds at which each bug variant is caught quickly (all within the default `check` reach: three
/// initial voters, at most one joiner).
pub fn bug_bounds(bug: Bug, fetch: FetchMode) -> ModelConfig {
    let base = ModelConfig {
        bug: Some(bug),
        fetch,
        max_crashes: 0,
        check_quorum: true,
        ..ModelConfig::default()
    };
    match bug {
        Bug::ConcurrentChanges => ModelConfig {
            max_changes: 2,
            max_log: 6,
            ..base
        },
        Bug::NoEpochCommit => ModelConfig {
            max_changes: 2,
            max_epoch: 3,
            max_log: 6,
            ..base
        },
        Bug::CommittedFromLatest => ModelConfig {
            max_changes: 1,
            max_log: 5,
            ..base
        },
        Bug::HwAnyEpoch => ModelConfig {
            joiners: 0,
            max_changes: 0,
            max_data: 1,
            max_epoch: 3,
            max_log: 6,
            ..base
        },
        Bug::HwCountsRemovedLeader => ModelConfig {
            joiners: 0,
            max_changes: 1,
            max_data: 1,
            max_log: 6,
            ..base
        },
        Bug::SwapVoter => ModelConfig {
            max_changes: 1,
            max_log: 5,
            ..base
        },
        Bug::VoteIgnoresLog => ModelConfig {
            joiners: 0,
            max_changes: 0,
            max_data: 1,
            max_epoch: 3,
            max_log: 6,
            ..base
        },
        Bug::SnapshotAboveHw | Bug::SnapshotLatestVoters => ModelConfig {
            bug: Some(bug),
            fetch,
            max_snapshots: 1,
            ..snapshot_bounds()
        },
        // The follower must hold more records of an old epoch than the snapshot's end offset: a
        // deposed leader's uncommitted records.
        Bug::InstallKeepsSuffix => ModelConfig {
            joiners: 0,
            max_changes: 0,
            max_data: 2,
            max_snapshots: 1,
            max_crashes: 0,
            max_log: 6,
            ..base
        },
        // A voter loses its disk after the leader committed a record with it; the old key's grant
        // (vote bug) or fetch (fetch bug) is one step away.
        Bug::VoteIgnoresDirectoryId | Bug::FetchIgnoresDirectoryId => ModelConfig {
            joiners: 0,
            max_changes: 0,
            max_data: 1,
            max_disk_losses: 1,
            max_log: 5,
            ..base
        },
        // The upgrade's bounds without the crash: the leader upgrades before a voter reported.
        Bug::UpgradeBeforeDirectoryIds => ModelConfig {
            bug: Some(bug),
            fetch,
            max_crashes: 0,
            ..upgrade_bounds()
        },
        // The replaced voter auto-joins: its stale key is replaced in one record.
        Bug::AutoJoinKeepsStale => ModelConfig {
            bug: Some(bug),
            fetch,
            max_duplicates: 0,
            ..auto_join_bounds()
        },
        // The joiner auto-joins; voters 1 and 2 elect a leader without its record.
        Bug::AutoJoinAckCommits => ModelConfig {
            max_disk_losses: 0,
            max_changes: 1,
            max_data: 0,
            max_log: 5,
            auto_join: true,
            ..base
        },
        // A second election (epoch 2) is all either needs.
        Bug::PrevoteBumpsEpoch | Bug::NoCheckQuorum => ModelConfig {
            joiners: 0,
            max_changes: 0,
            max_epoch: 2,
            max_log: 4,
            max_in_flight: 4,
            ..base
        },
    }
}

/// Shortest counterexample of `cfg` (BFS, one thread, stop at the first violation), if any.
pub fn find_counterexample(cfg: ModelConfig) -> Option<Counterexample> {
    let model = KraftModel::new(cfg).ok()?;
    let opts = CheckOptions {
        strategy: Strategy::Bfs,
        threads: 1,
        symmetry: false,
        depth: None,
        timeout: Some(Duration::from_secs(120)),
        stop_at_first_violation: true,
        progress: false,
        max_states: None,
    };
    run(model, opts).counterexample
}

/// A harm search (`check --bug NAME --harm`): the shortest path of `cfg` to a user-visible safety
/// failure ([`crate::properties::HARM`]: two leaders in one epoch, a committed entry lost, a committed
/// voter set rolled back), ignoring the structural properties; BFS, one thread, at most `max_states`
/// generated states. The report says whether the search was exhaustive when nothing is found.
pub fn harm_search(cfg: ModelConfig, max_states: usize) -> Option<CheckReport> {
    let mut model = KraftModel::new(cfg).ok()?;
    model.only = Some(&crate::properties::HARM);
    let opts = CheckOptions {
        strategy: Strategy::Bfs,
        threads: 1,
        symmetry: false,
        depth: None,
        timeout: None,
        stop_at_first_violation: true,
        progress: false,
        max_states: Some(max_states),
    };
    Some(run(model, opts))
}

/// The counterexample of a bug variant at its [`bug_bounds`], as an action list from the initial
/// state (`Start::Elected` unless `fresh`).
pub fn bug_counterexample(bug: Bug, fetch: FetchMode) -> Option<Counterexample> {
    find_counterexample(bug_bounds(bug, fetch))
}

/// [`bug_bounds`] with the implementation's election ([`crate::config::IMPL_PRE_VOTE`]), for
/// conformance, which replays the counterexample against the implementation; `None` for the variants
/// it cannot replay ([`Bug::impl_comparable`]).
pub fn impl_bug_bounds(bug: Bug, fetch: FetchMode) -> Option<ModelConfig> {
    bug.impl_comparable().then(|| ModelConfig {
        pre_vote: crate::config::IMPL_PRE_VOTE,
        ..bug_bounds(bug, fetch)
    })
}

/// The counterexample of a bug variant at its [`impl_bug_bounds`].
pub fn impl_bug_counterexample(bug: Bug, fetch: FetchMode) -> Option<Counterexample> {
    find_counterexample(impl_bug_bounds(bug, fetch)?)
}

/// `check`'s default bounds: [`ModelConfig::default`] (3 voters + 1 joiner, epoch ≤ 2, log ≤ 5,
/// 4 in flight, pre-vote and check-quorum on, which the tests and conformance share) with two
/// membership changes and one crash-restart (model/README.md, "Measured", has the time and why epoch 3
/// is not the default).
pub fn default_bounds() -> ModelConfig {
    ModelConfig {
        max_changes: 2,
        max_crashes: 1,
        ..ModelConfig::default()
    }
}

/// `check --preset deep`: the default bounds at epoch 3 (model/README.md, "Measured").
pub fn deep_bounds() -> ModelConfig {
    ModelConfig {
        max_epoch: 3,
        ..default_bounds()
    }
}

/// `check --preset snapshots`: one snapshot, log-start moves and installs with one membership change
/// and no crash (model/README.md, "Snapshots"); with a crash it does not fit in a minute.
pub fn snapshot_bounds() -> ModelConfig {
    ModelConfig {
        max_snapshots: 1,
        max_changes: 1,
        max_crashes: 0,
        max_log: 5,
        ..ModelConfig::default()
    }
}

/// `check --preset updates`: UpdateRaftVoter requests beside AddVoter and RemoveVoter, one change and
/// a crash (model/README.md, "UpdateRaftVoter"); with two changes it does not fit in a minute.
pub fn update_bounds() -> ModelConfig {
    ModelConfig {
        updates: true,
        max_changes: 1,
        ..default_bounds()
    }
}

/// `check --preset disk-loss`: one disk loss and the two changes that bring the replaced voter
/// back under its new key (remove the stale key, add the new one), no crash, no joiner (model/README.md,
/// "Disk loss").
pub fn disk_loss_bounds() -> ModelConfig {
    ModelConfig {
        joiners: 0,
        max_disk_losses: 1,
        max_changes: 2,
        max_crashes: 0,
        max_data: 1,
        max_log: 6,
        ..ModelConfig::default()
    }
}

/// `check --preset upgrade`: `kraft.version` 0 (static voters) with UpdateRaftVoter, the upgrade to
/// 1, then a record and a disk loss (the replaced voter's key is no voter any more), a crash (a
/// leader's volatile set is lost with it), no joiner (model/README.md, "The kraft.version upgrade").
pub fn upgrade_bounds() -> ModelConfig {
    ModelConfig {
        start: Start::Static,
        joiners: 0,
        max_disk_losses: 1,
        max_changes: 0,
        max_crashes: 1,
        max_data: 1,
        max_log: 5,
        ..ModelConfig::default()
    }
}

/// `check --preset auto-join`: KIP-1186 auto-join on the joiner and on a replica that lost its disk
/// (one disk loss; two changes: the stale key's removal and the new key's add, or the joiner's add
/// beside operator changes), no crash, one retried request (model/README.md, "Auto-join").
pub fn auto_join_bounds() -> ModelConfig {
    ModelConfig {
        auto_join: true,
        max_duplicates: 1,
        ..disk_loss_bounds()
    }
}

/// The first-election check: a fresh cluster, small bounds, so the start that `check` skips is
/// covered too.
pub fn first_election_bounds() -> ModelConfig {
    ModelConfig {
        start: Start::Fresh,
        joiners: 0,
        max_epoch: 2,
        max_log: 4,
        max_changes: 0,
        max_crashes: 0,
        max_in_flight: 4,
        ..ModelConfig::default()
    }
}
