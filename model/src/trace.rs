//! Paths as data: enumeration up to a depth, seeded random walks, and JSON Lines traces
//! (`specs/traces.md`) that conformance replays.

use crate::config::ModelConfig;
use crate::step::KraftModel;
use crate::types::{Action, Reply, State};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Schema tag written in every trace line.
pub const SCHEMA: &str = "kraft-model-trace/1";

/// One step of a trace: the action, the operator replies it produced, the state after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// The action taken.
    pub action: Action,
    /// Operator replies produced by the action.
    pub replies: Vec<Reply>,
    /// The abstract state after the action.
    pub state: State,
}

/// One trace (one JSON line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The model configuration the trace was generated with.
    pub config: ModelConfig,
    /// The initial state.
    pub init: State,
    /// Every action with the state after it.
    pub steps: Vec<TraceStep>,
}

/// Why a trace could not be built or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceError {
    /// Action `index` is not enabled (or changes nothing) in the state before it.
    NotEnabled {
        /// Position in the action list.
        index: usize,
        /// The action.
        action: Action,
    },
    /// The recorded state after step `index` differs from the model's.
    StateMismatch {
        /// Position in the trace.
        index: usize,
    },
    /// Bad configuration.
    Config(String),
    /// Bad JSON or wrong schema.
    Format(String),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::NotEnabled { index, action } => {
                write!(f, "step {index}: action {action:?} is not enabled")
            }
            TraceError::StateMismatch { index } => {
                write!(f, "step {index}: recorded state differs")
            }
            TraceError::Config(e) => write!(f, "bad config: {e}"),
            TraceError::Format(e) => write!(f, "bad trace: {e}"),
        }
    }
}

impl std::error::Error for TraceError {}

/// Replays `actions` from the model's initial state into a trace.
pub fn replay(model: &KraftModel, actions: &[Action]) -> Result<Trace, TraceError> {
    let init = model.initial_state();
    let mut cur = init.clone();
    let mut steps = Vec::with_capacity(actions.len());
    for (index, &action) in actions.iter().enumerate() {
        let step = model
            .step(&cur, action)
            .ok_or(TraceError::NotEnabled { index, action })?;
        cur = step.state.clone();
        steps.push(TraceStep {
            action,
            replies: step.replies,
            state: step.state,
        });
    }
    Ok(Trace {
        schema: SCHEMA.to_string(),
        config: model.cfg,
        init,
        steps,
    })
}

/// Checks a trace against the model: same initial state, every action enabled, same states.
pub fn verify(trace: &Trace) -> Result<(), TraceError> {
    if trace.schema != SCHEMA {
        return Err(TraceError::Format(format!(
            "schema {:?}, expected {SCHEMA:?}",
            trace.schema
        )));
    }
    let model = KraftModel::new(trace.config).map_err(|e| TraceError::Config(e.to_string()))?;
    let actions: Vec<Action> = trace.steps.iter().map(|s| s.action).collect();
    let again = replay(&model, &actions)?;
    if again.init != trace.init {
        return Err(TraceError::StateMismatch { index: 0 });
    }
    for (index, (a, b)) in again.steps.iter().zip(&trace.steps).enumerate() {
        if a != b {
            return Err(TraceError::StateMismatch { index });
        }
    }
    Ok(())
}

/// One JSON line.
pub fn to_json_line(trace: &Trace) -> String {
    serde_json::to_string(trace).expect("model types serialize")
}

/// Parses one JSON line.
pub fn from_json_line(line: &str) -> Result<Trace, TraceError> {
    let t: Trace = serde_json::from_str(line).map_err(|e| TraceError::Format(e.to_string()))?;
    if t.schema != SCHEMA {
        return Err(TraceError::Format(format!(
            "schema {:?}, expected {SCHEMA:?}",
            t.schema
        )));
    }
    Ok(t)
}

/// Calls `f` on every maximal path of at most `depth` actions from the initial state: paths of
/// exactly `depth` actions, and shorter ones that end where no action is enabled (or the next state
/// leaves the boundary). No symmetry, no state deduplication: every interleaving appears.
pub fn for_each_path(model: &KraftModel, depth: usize, f: &mut dyn FnMut(&[Action])) {
    fn go(
        m: &KraftModel,
        s: &State,
        depth: usize,
        path: &mut Vec<Action>,
        f: &mut dyn FnMut(&[Action]),
    ) {
        if path.len() == depth {
            f(path);
            return;
        }
        let mut actions = Vec::new();
        m.enabled_actions(s, &mut actions);
        let mut any = false;
        for a in actions {
            let Some(step) = m.step(s, a) else { continue };
            if step.state.network.len() > m.cfg.max_in_flight as usize {
                continue;
            }
            any = true;
            path.push(a);
            go(m, &step.state, depth, path, f);
            path.pop();
        }
        if !any {
            f(path);
        }
    }
    let init = model.initial_state();
    go(model, &init, depth, &mut Vec::new(), f);
}

/// Every maximal path of at most `depth` actions (see [`for_each_path`]). Grows exponentially: keep
/// `depth` small.
pub fn all_paths(model: &KraftModel, depth: usize) -> Vec<Vec<Action>> {
    let mut out = Vec::new();
    for_each_path(model, depth, &mut |p| out.push(p.to_vec()));
    out
}

/// SplitMix64: a tiny seeded generator, the same on every platform.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// A seeded random walk of at most `depth` actions (stops early where nothing is enabled).
pub fn random_walk(model: &KraftModel, rng: &mut SplitMix64, depth: usize) -> Vec<Action> {
    let mut s = model.initial_state();
    let mut path = Vec::new();
    let mut actions = Vec::new();
    while path.len() < depth {
        actions.clear();
        model.enabled_actions(&s, &mut actions);
        let next: Vec<_> = actions
            .iter()
            .filter_map(|&a| model.step(&s, a).map(|st| (a, st.state)))
            .filter(|(_, st)| st.network.len() <= model.cfg.max_in_flight as usize)
            .collect();
        if next.is_empty() {
            break;
        }
        let (a, st) = next[rng.below(next.len())].clone();
        path.push(a);
        s = st;
    }
    path
}

/// A configuration suited to traces: refusals are visible steps, stale messages are delivered (not
/// garbage-collected) and check-quorum expiry is on, so a replay exercises the implementation's
/// handling of all three. Pre-vote follows the implementation ([`crate::config::IMPL_PRE_VOTE`]):
/// conformance replays these traces against it.
pub fn trace_config(cfg: ModelConfig) -> ModelConfig {
    ModelConfig {
        refusal_steps: true,
        gc: false,
        check_quorum: true,
        pre_vote: crate::config::IMPL_PRE_VOTE,
        ..cfg
    }
}
