//! `check --engine timely`: the model as a [`Space`], and its outcome as a [`CheckReport`].
//!
//! The space is the one `dfs.rs` proves: the same successors (within the boundary), the same
//! fingerprint (the symmetry representative's, [`crate::symmetry::canonical`]), the same properties
//! evaluated once per unique state until each has a verdict. So verdicts and unique-state counts
//! are the DFS's. A state is kept as its representative, as the DFS keeps it (its orbit has the
//! same behaviours, and a representative's successors are often representatives, whose
//! fingerprint needs no renaming); the walked-back path is replayed from the initial state by
//! fingerprints, so it is a real run, printed as the same story as any counterexample.
//!
//! The engine keeps and sends a state as its plain form's bytes ([`super::packed`], about 100
//! bytes where the state takes about 1 KB in memory): timely encodes records with bincode, which
//! cannot read back the state's serde form (the JSON trace form, fields left out at their
//! defaults, an untagged log).

use super::packed::{self, Bytes};
use super::{Cluster, EngineError, Options, Outcome, Space};
use crate::check::{CheckOptions, CheckReport, Counterexample, PropertyResult};
use crate::step::KraftModel;
use crate::types::{Action, State};
use serde::{Deserialize, Serialize};
use stateright::{Expectation, Model, Property};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The model's state space.
pub struct KraftSpace {
    model: KraftModel,
    props: Vec<Property<KraftModel>>,
    symmetry: bool,
    /// Per property: a verdict found in this process (evaluation stops there, as in `dfs.rs`).
    discovered: Vec<AtomicBool>,
}

/// A property with a verdict: an `always` violated or a `sometimes` exemplified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Index in `model.properties()`.
    pub property: u16,
    /// An `always` property (violated) rather than a `sometimes` one (exemplified).
    pub always: bool,
}

impl KraftSpace {
    /// The space of `model`, reduced by symmetry if `symmetry`.
    pub fn new(model: KraftModel, symmetry: bool) -> Self {
        let props = model.properties();
        let discovered = props.iter().map(|_| AtomicBool::new(false)).collect();
        KraftSpace {
            model,
            props,
            symmetry,
            discovered,
        }
    }
}

impl Space for KraftSpace {
    type State = State;
    type Stored = Bytes;
    type Action = Action;
    type Finding = Finding;

    fn store(&self, s: State) -> Bytes {
        if !self.symmetry {
            return packed::encode(&s);
        }
        let (perm, _) = crate::symmetry::canonical(&s);
        packed::encode(&crate::symmetry::renamed(&s, &perm).unwrap_or(s))
    }

    fn load(&self, s: Bytes) -> Result<State, String> {
        packed::decode(&s.0)
    }

    fn stored_size(&self, s: &Bytes) -> usize {
        s.0.len()
    }

    fn roots(&self) -> Vec<State> {
        self.model
            .init_states()
            .into_iter()
            .filter(|s| self.model.within_boundary(s))
            .collect()
    }

    fn fingerprint(&self, s: &State) -> u64 {
        if self.symmetry {
            crate::symmetry::canonical(s).1
        } else {
            crate::fingerprint::fingerprint(s)
        }
    }

    fn expand(&self, s: &State, out: &mut Vec<(Action, State)>, _: &mut Vec<Finding>) {
        let mut actions = Vec::new();
        self.model.actions(s, &mut actions);
        for a in actions {
            if let Some(next) = self.model.next_state(s, a) {
                if self.model.within_boundary(&next) {
                    out.push((a, next));
                }
            }
        }
    }

    fn check(&self, s: &State, findings: &mut Vec<Finding>) {
        for (i, (p, d)) in self.props.iter().zip(&self.discovered).enumerate() {
            if d.load(Ordering::Relaxed) {
                continue;
            }
            let holds = (p.condition)(&self.model, s);
            let always = p.expectation == Expectation::Always;
            if holds != always {
                d.store(true, Ordering::Relaxed);
                findings.push(Finding {
                    property: i as u16,
                    always,
                });
            }
        }
    }

    fn is_failure(&self, f: &Finding) -> bool {
        f.always
    }
}

/// Checks `model` on the engine: a BFS with symmetry unless `opts.symmetry` is off, stopping after
/// the first level with a violation if `opts.stop_at_first_violation`. The report on process 0,
/// `None` on the others.
pub fn run(
    model: KraftModel,
    opts: &CheckOptions,
    cluster: &Cluster,
) -> Result<Option<CheckReport>, EngineError> {
    let space = Arc::new(KraftSpace::new(model.clone(), opts.symmetry));
    let engine = Options {
        cluster: cluster.clone(),
        default_workers: opts.threads,
        stop_at_failure: opts.stop_at_first_violation,
        max_states: opts.max_states.map(|n| n as u64),
        timeout: opts.timeout,
        progress: opts.progress,
    };
    Ok(super::run(space.clone(), engine)?.map(|o| report(&model, &space, o)))
}

fn report(model: &KraftModel, space: &KraftSpace, o: Outcome<KraftSpace>) -> CheckReport {
    let properties = space
        .props
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let found = o.findings.iter().any(|f| f.finding.property as usize == i);
            PropertyResult::of(p, found)
        })
        .collect();
    let counterexample = o.failure.as_ref().and_then(|(found, trace)| {
        let (root, path) = trace.replay(space)?;
        let p = &space.props[found.finding.property as usize];
        let actions: Vec<Action> = path.into_iter().map(|(a, _)| a).collect();
        replay(model, p, root, &actions)
    });
    CheckReport {
        exhaustive: !o.stopped,
        bounds: model.cfg,
        states: o.generated as usize,
        unique_states: o.unique as usize,
        max_depth: o.levels as usize,
        seconds: o.seconds,
        properties,
        counterexample,
    }
}

/// The counterexample of `p` along `actions` from `root`, cut at its first violating state.
fn replay(
    model: &KraftModel,
    p: &Property<KraftModel>,
    root: State,
    actions: &[Action],
) -> Option<Counterexample> {
    let mut steps = vec![(root.clone(), None)];
    for &a in actions {
        let next = model.next_state(&steps.last()?.0, a)?;
        steps.last_mut()?.1 = Some(a);
        steps.push((next, None));
    }
    let k = steps.iter().position(|(s, _)| !(p.condition)(model, s))?;
    steps.truncate(k + 1);
    steps[k].1 = None;
    let actions: Vec<Action> = steps.iter().filter_map(|(_, a)| *a).collect();
    let index_path = stateright::Path::from_actions(model, root, &actions)
        .map_or_else(String::new, |path| path.encode(model));
    Some(Counterexample {
        property: p.name.to_string(),
        actions,
        steps,
        index_path,
    })
}
