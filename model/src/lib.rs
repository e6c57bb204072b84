//! Stateright model of KRaft dynamic membership and the committed voter set (KIP-853, KIP-1204).
//!
//! A plain [`stateright::Model`] with an explicit network: servers ([`types::Server`]), messages in
//! flight ([`types::Envelope`]) and ghost history ([`types::History`]) form the [`types::State`];
//! [`types::Action`] is both the model's step vocabulary and the trace vocabulary that conformance
//! replays against the implementation. The spec facts (committed voter set, HW rule, majorities,
//! membership preconditions) are small pure functions in [`spec`]; properties (kip-1204 §6 names) are
//! in [`properties`]. This crate never imports the implementation.

pub mod auto_join;
pub mod check;
pub mod config;
pub mod dfs;
pub mod diagram;
pub mod engine;
pub mod fingerprint;
pub mod kraft_version;
pub mod properties;
pub mod spec;
pub mod step;
pub mod story;
pub mod symmetry;
pub mod trace;
pub mod types;
pub mod voter_set;

pub use config::{Bug, FetchMode, HwRule, ModelConfig, NetworkKind, Start};
pub use step::{KraftModel, Step};
pub use types::{
    Action, ChangeOp, Entry, Envelope, ErrorCode, Kind, Msg, Reply, Role, Server, State, VoterSet,
};

use stateright::{Model, Property};

impl Model for KraftModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.enabled_actions(state, actions);
    }

    fn next_state(&self, state: &State, action: Action) -> Option<State> {
        self.step(state, action).map(|s| s.state)
    }

    fn format_action(&self, action: &Action) -> String {
        story::action(action)
    }

    fn format_step(&self, last: &State, action: Action) -> Option<String> {
        let step = self.step(last, action)?;
        let mut out = String::new();
        for r in &step.replies {
            out.push_str(&format!("reply: {}\n", story::reply(r)));
        }
        out.push_str(&story::state(&self.cfg, &step.state));
        Some(out)
    }

    fn as_svg(&self, path: stateright::Path<State, Action>) -> Option<String> {
        Some(diagram::svg(&path.into_vec()))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let all = properties::all(&self.cfg);
        match self.only {
            None => all,
            Some(names) => all
                .into_iter()
                .filter(|p| names.contains(&p.name))
                .collect(),
        }
    }

    fn within_boundary(&self, state: &State) -> bool {
        state.network.len() <= self.cfg.max_in_flight as usize
    }
}
