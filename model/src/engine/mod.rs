//! A search engine over any state space, distributed over worker threads and processes.
//!
//! A [`Space`] says what a state is, where the search starts, how a state expands and what is
//! checked at a state; [`run`] explores it breadth-first on Timely Dataflow ([`self::timely`]):
//! every state is owned by the worker its fingerprint routes to, which keeps the visited set's
//! shard, the state's parent (fingerprint and action), and evaluates [`Space::check`]. The
//! timestamp is the BFS level, so a finding's path walked back through the owners' parents is a
//! shortest one. The model's check runs on it with `check --engine timely` ([`kraft`]).

mod frontier;
pub mod kraft;
pub mod packed;
mod parents;
mod sent;
pub mod spill;
pub mod timely;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::path::PathBuf;
use std::time::Duration;

pub use self::timely::run;

/// A state space to search.
pub trait Space: Send + Sync + 'static {
    /// A state.
    type State: Clone + Send + 'static;
    /// The label of a step (a path's steps are replayed with [`Space::expand`], so actions never
    /// travel).
    type Action: Clone + Send + Debug + 'static;
    /// Something found at a state: a property violated, an example, a divergence.
    type Finding: Clone + Serialize + DeserializeOwned + Send + Debug + 'static;

    /// A state as the engine keeps it between levels and sends it to its owner: a level's
    /// frontier is held in this form (a compact encoding keeps it small; `State` itself when it
    /// is small already).
    type Stored: Clone + Serialize + DeserializeOwned + Send + 'static;

    /// `s` as kept: the search goes on from the stored state, which may be any state of the same
    /// fingerprint (the symmetry representative, whose fingerprint is cheaper to recompute).
    fn store(&self, s: Self::State) -> Self::Stored;
    /// Back from [`Space::store`]; `Err` for bytes no state has (the search stops with it).
    fn load(&self, s: Self::Stored) -> Result<Self::State, String>;
    /// The initial states (level 0).
    fn roots(&self) -> Vec<Self::State>;
    /// The key of the visited set: a fixed-seed hash, the same in every process (of the symmetry
    /// representative where the space reduces by symmetry). States with equal fingerprints are
    /// one state.
    fn fingerprint(&self, s: &Self::State) -> u64;
    /// The successors of `s` (each with the action that leads there), and anything found while
    /// stepping (reported at `s`). Deterministic, in every process; states of equal fingerprints
    /// have successors of equal fingerprints (an owner keeps a state's parent as the parent's
    /// fingerprint, and a path is replayed from a root by fingerprints).
    fn expand(
        &self,
        s: &Self::State,
        out: &mut Vec<(Self::Action, Self::State)>,
        findings: &mut Vec<Self::Finding>,
    );
    /// Heap bytes of a stored state beyond `size_of::<Stored>()` (a level's memory, against
    /// `--frontier-memory`).
    fn stored_size(&self, _s: &Self::Stored) -> usize {
        0
    }
    /// Evaluated once per unique state, by its owner.
    fn check(&self, s: &Self::State, findings: &mut Vec<Self::Finding>);
    /// A failure gets a shortest path walked back and, with [`Options::stop_at_failure`], ends the
    /// search after its level; anything else is only reported.
    fn is_failure(&self, f: &Self::Finding) -> bool;
}

/// Where the workers run: `workers` threads in each of `processes` processes; this one is number
/// `process`. Timely's `-w -n -p -h`, spelled as model flags.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Cluster {
    /// Worker threads per process (`--engine timely`; default: --threads).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Processes in the cluster (`--engine timely`); each runs the same command with its own
    /// --process.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// This process's index, 0 to --processes − 1 (process 0 prints the result).
    #[arg(long, default_value_t = 0)]
    pub process: usize,
    /// File with one `host:port` per process, in process order (process i listens on line i);
    /// default `localhost:2101+i`.
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// Print timely's connection progress.
    #[arg(long)]
    pub report_connections: bool,
    /// Directory for the frontier beyond --frontier-memory (each worker writes a level's states
    /// there and reads them back while expanding it) and for the states' parents (read only to walk
    /// a violation's path back); files removed after use.
    #[arg(long, requires = "frontier_memory")]
    pub spill_dir: Option<PathBuf>,
    /// Memory for the states waiting for their level, per process, in bytes (suffixes K, M, G:
    /// powers of 1024); beyond it they go to --spill-dir.
    #[arg(long, requires = "spill_dir", value_parser = parse_bytes)]
    pub frontier_memory: Option<u64>,
}

/// `123`, `64K`, `512M`, `2G` (powers of 1024) as bytes.
fn parse_bytes(s: &str) -> Result<u64, String> {
    let (digits, unit) = match s.trim().char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s.trim()[..i], c.to_ascii_uppercase()),
        _ => (s.trim(), 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        _ => return Err(format!("{s:?}: a byte count with an optional K, M, G or T")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|e| format!("{s:?}: a byte count with an optional K, M, G or T: {e}"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// A cluster the engine cannot start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError(pub String);

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EngineError {}

impl Cluster {
    /// One process with `workers` threads.
    pub fn local(workers: usize) -> Self {
        Cluster {
            workers: Some(workers),
            processes: 1,
            ..Cluster::default()
        }
    }

    /// Timely's configuration (built here: timely's own argument parser rejects the model's
    /// flags).
    pub fn config(&self, default_workers: usize) -> Result<::timely::Config, EngineError> {
        let threads = self.workers.unwrap_or(default_workers).max(1);
        if self.processes == 0 || self.process >= self.processes {
            return Err(EngineError(format!(
                "--process {} is not below --processes {}",
                self.process, self.processes
            )));
        }
        let communication = if self.processes == 1 {
            if threads == 1 {
                ::timely::CommunicationConfig::Thread
            } else {
                ::timely::CommunicationConfig::Process(threads)
            }
        } else {
            let addresses = match &self.hostfile {
                None => (0..self.processes)
                    .map(|i| format!("localhost:{}", 2101 + i))
                    .collect(),
                Some(path) => read_hostfile(path, self.processes)?,
            };
            ::timely::CommunicationConfig::Cluster {
                threads,
                process: self.process,
                addresses,
                report: self.report_connections,
                zerocopy: false,
            }
        };
        Ok(::timely::Config {
            communication,
            worker: ::timely::WorkerConfig::default(),
        })
    }
}

/// The first `n` non-empty lines of a hostfile.
fn read_hostfile(path: &std::path::Path, n: usize) -> Result<Vec<String>, EngineError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError(format!("cannot read hostfile {}: {e}", path.display())))?;
    let hosts: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .take(n)
        .map(String::from)
        .collect();
    if hosts.len() < n {
        return Err(EngineError(format!(
            "hostfile {} names {} processes, --processes is {n}",
            path.display(),
            hosts.len()
        )));
    }
    Ok(hosts)
}

/// How to search.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Where the workers run.
    pub cluster: Cluster,
    /// Worker threads per process when the cluster does not say.
    pub default_workers: usize,
    /// End the search after the first level with a failure (its path is then a shortest one).
    pub stop_at_failure: bool,
    /// Stop after about this many generated states (checked at each level's end).
    pub max_states: Option<u64>,
    /// Stop after this long (checked at each level's end).
    pub timeout: Option<Duration>,
    /// Print a line per level on stderr (process 0).
    pub progress: bool,
}

/// A finding, where it was found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Found<F> {
    /// The level (0 = a root) of the state it was found at.
    pub level: u32,
    /// That state's fingerprint.
    pub fingerprint: u64,
    /// What was found.
    pub finding: F,
}

/// A replayed path: the root, then each step's action and the state it leads to.
pub type Path<S> = (
    <S as Space>::State,
    Vec<(<S as Space>::Action, <S as Space>::State)>,
);

/// A path from a root to a state: the root's fingerprint and the fingerprint of each state after
/// it (the owners kept states of those fingerprints, not necessarily the states this path
/// reaches: a symmetry representative in place of a state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Fingerprint of the root the path starts at.
    pub root: u64,
    /// Fingerprints of the states reached, first to last.
    pub steps: Vec<u64>,
}

impl Trace {
    /// The path's root, and each step's action and the state it leads to (at each step the first
    /// successor with the step's fingerprint); `None` if the space does not replay it (no root or
    /// no successor has the fingerprint).
    pub fn replay<S: Space>(&self, space: &S) -> Option<Path<S>> {
        let root = space
            .roots()
            .into_iter()
            .find(|r| space.fingerprint(r) == self.root)?;
        let mut path: Vec<(S::Action, S::State)> = Vec::new();
        let mut succ = Vec::new();
        for &fp in &self.steps {
            succ.clear();
            let at = path.last().map_or(&root, |(_, s)| s);
            space.expand(at, &mut succ, &mut Vec::new());
            let i = succ.iter().position(|(_, n)| space.fingerprint(n) == fp)?;
            path.push(succ.swap_remove(i));
        }
        Some((root, path))
    }
}

/// A failure and a shortest path to it.
pub type Failure<S> = (Found<<S as Space>::Finding>, Trace);

/// What a search found (on process 0).
#[derive(Clone, Debug)]
pub struct Outcome<S: Space> {
    /// Generated states: successors (each counted at the state expanded), the roots included.
    pub generated: u64,
    /// Unique states (by fingerprint).
    pub unique: u64,
    /// Levels with a new state (the roots' level counts: the deepest state is at `levels − 1`).
    pub levels: u32,
    /// True if a limit or a failure ended the search before it was exhaustive.
    pub stopped: bool,
    /// States written to spill files and read back (a state can be spilled more than once:
    /// duplicates are dropped only when its level is expanded).
    pub spilled: u64,
    /// Every finding, in level order (a space may report a finding once per worker or process).
    pub findings: Vec<Found<S::Finding>>,
    /// The first failure of the shallowest level with one, and a shortest path to it.
    pub failure: Option<Failure<S>>,
    /// Peak resident memory of each process, in bytes (`VmHWM`), indexed by process.
    pub peak_rss: Vec<u64>,
    /// Wall-clock seconds (cluster start-up included).
    pub seconds: f64,
    /// Worker threads per process and processes.
    pub workers: usize,
    /// Processes.
    pub processes: usize,
}

/// `VmRSS` and `VmHWM` of this process, in bytes (0 where `/proc` is missing).
pub fn memory() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests;
