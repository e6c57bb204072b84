//! The node's own timer racing the kit's steps.
//!
//! A node that stands on its own runs with a live election timer, and a timer step of the node is
//! invisible until it sends something. Some are silent: a Prospective whose pre-votes are not
//! answered in time becomes Unattached and sends nothing, then stands again with the same pre-votes.
//! Such a step may come, at the node, before steps the kit has already taken in the model (an answer
//! the kit wrote that the node then ignored), so what the node sends next fits no state of the kit's
//! lockstep. A request (or an answer) of the node that its current model state cannot explain, but
//! that one or two election-timer steps of the node from one of the kit's recent states (since its
//! last restart) do, is such a race: it
//! is reported as an `ok` step of the node's timer, and the run is cut there (the state after it is
//! not known) to be run again with a longer election timeout ([`longer_timeout`]). A node whose timer
//! races at every timeout the kit's waits allow is reported (`timer-race`); one whose request no
//! timer explains is a divergence as before.

use model::types::{Action, Envelope, Id, Msg, State};
use model::KraftModel;

use super::{added, is_response, new_messages, story, Divergence, Kit, Line};

/// Model states the kit keeps for the check (its most recent ones).
const KEEP: usize = 64;

/// The next election timeout for a run cut by a timer race: double `election_ms`, as long as the
/// node stands within the kit's wait (`wait_ms`; a node stands within twice its timeout, which Kafka
/// and `kraft` randomise between one and two times it).
pub fn longer_timeout(election_ms: u64, wait_ms: u64) -> Option<u64> {
    let t = election_ms.checked_mul(2)?;
    (t.checked_mul(2)? <= wait_ms).then_some(t)
}

/// True for the divergence that stands for a race of the node's timer (a cut, not a divergence).
pub fn is_timer_race(d: &Divergence) -> bool {
    matches!(d, Divergence::TimerRace(_))
}

/// The node `nut`'s election timer steps (one or two, from `base`) after which `explains` holds, in
/// the model's words. Only the election timer: it is the one the kit runs short (the fetch and
/// check-quorum timers are set beyond the run, so a step of theirs is no race).
fn timers_explaining(
    model: &KraftModel,
    nut: Id,
    base: &State,
    explains: &dyn Fn(&State) -> bool,
) -> Option<String> {
    let t = Action::ElectionTimeout(nut);
    let s1 = model.step(base, t)?;
    if explains(&s1.state) {
        return Some(story(&t));
    }
    let s2 = model.step(&s1.state, t)?;
    explains(&s2.state).then(|| format!("{}, twice", story(&t)))
}

/// How far back in `states` (newest first) the node `nut`'s timer steps put its request `env` in
/// flight, and which steps, if they do.
pub fn request_explained(
    model: &KraftModel,
    nut: Id,
    states: &[&State],
    env: &Envelope,
) -> Option<(usize, String)> {
    states.iter().enumerate().find_map(|(back, base)| {
        let sends = |s: &State| new_messages(base, s).contains(env);
        timers_explaining(model, nut, base, &sends).map(|how| (back, how))
    })
}

impl Kit {
    /// Keeps the current state before a model step (for [`Kit::request_race`]); the node's restart
    /// clears them (a new process: nothing it sends comes from the old one's timer).
    pub(super) fn remember(&mut self) {
        if self.past.len() == KEEP {
            self.past.remove(0);
        }
        self.past.push(self.state.clone());
    }

    /// A request `env` of the node that the current state cannot explain: a timer race when the
    /// node's timer steps from the current state or a recent one put it in flight.
    pub(super) fn request_race(&mut self, env: &Envelope, line: Line) -> Option<Box<Divergence>> {
        let states: Vec<&State> = std::iter::once(&self.state)
            .chain(self.past.iter().rev())
            .collect();
        let (back, how) = request_explained(&self.model, self.nut, &states, env)?;
        Some(self.race(
            line,
            format!("{how}, {back} model step(s) before the kit's state"),
        ))
    }

    /// An answer `observed` of the node to the kit's `env` (delivered at model state `base`) that
    /// differs from the model's: a timer race when the node's timer steps just before it make the
    /// model answer so.
    pub(super) fn answer_race(
        &mut self,
        base: &State,
        env: &Envelope,
        observed: &Msg,
        line: Line,
    ) -> Option<Box<Divergence>> {
        let nut = self.nut;
        let answers = |s: &State| {
            self.model.step(s, Action::Deliver(*env)).is_some_and(|n| {
                added(s, &n.state, nut, env.src)
                    .iter()
                    .any(|e| is_response(&e.msg) && e.msg == *observed)
            })
        };
        let how = timers_explaining(&self.model, nut, base, &answers)?;
        Some(self.race(line, format!("{how}, before this request")))
    }

    fn race(&mut self, line: Line, how: String) -> Box<Divergence> {
        let d = Divergence::TimerRace(how);
        self.report
            .push(line.verdict(format!("ok (cut here: {d})")));
        Box::new(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_doubles_while_the_node_stands_within_the_wait() {
        assert_eq!(longer_timeout(300, 30_000), Some(600));
        assert_eq!(longer_timeout(7_500, 30_000), Some(15_000));
        assert_eq!(longer_timeout(15_000, 30_000), None);
        assert_eq!(longer_timeout(u64::MAX, u64::MAX), None);
    }

    /// The race as a run at load 18–20 showed it: the node stood and the kit answered its pre-vote, but
    /// the node's timer had already fired (Prospective to Unattached, silent) and fired again: its
    /// second PreVoteRequest fits no state after the answer, only timer steps from before it.
    #[test]
    fn a_pre_vote_after_silent_timer_steps_is_explained_by_an_earlier_state() {
        use model::types::Role;
        let model = KraftModel::new(crate::kit::model_config(0)).expect("model");
        let step = |s: &State, a: Action| model.step(s, a).expect("enabled").state;
        let fresh = model.initial_state();
        let stood = step(&fresh, Action::ElectionTimeout(0));
        let pre = *stood
            .network
            .iter()
            .find(|e| e.dst == 1)
            .expect("pre-vote to 1");
        let delivered = step(&stood, Action::Deliver(pre));
        let grant = *delivered
            .network
            .iter()
            .find(|e| e.dst == 0)
            .expect("grant");
        let candidate = step(&delivered, Action::Deliver(grant));
        assert_eq!(candidate.servers[0].role, Role::Candidate);
        // Not from the candidate's state (its own timer steps make other requests)...
        assert_eq!(request_explained(&model, 0, &[&candidate], &pre), None);
        // ...but from the state before the answer: election timeout twice.
        let states = [&candidate, &delivered, &stood];
        let (back, how) = request_explained(&model, 0, &states, &pre).expect("explained");
        assert_eq!(back, 1, "{how}");
        assert!(how.contains("twice"), "{how}");
        // A request no timer sends is not: a VoteRequest of an epoch the node never reaches.
        let mut odd = pre;
        odd.msg = Msg::VoteRequest {
            epoch: 3,
            voter_dir: 0,
            last_epoch: 0,
            last_offset: 0,
        };
        assert_eq!(request_explained(&model, 0, &states, &odd), None);
    }

    /// A leader's EndQuorumEpoch (what a restarted Kafka leader sends, finding 8) is no race: the
    /// model sends it on a check-quorum resignation, a timer the kit sets beyond the run.
    #[test]
    fn only_the_election_timer_races() {
        use model::types::Role;
        let model = KraftModel::new(crate::kit::model_config(0)).expect("model");
        let mut st = model
            .step(&model.initial_state(), Action::ElectionTimeout(0))
            .expect("stands")
            .state;
        for _ in 0..32 {
            if st.servers[0].role == Role::Leader {
                break;
            }
            let e = st.network[0];
            st = model.step(&st, Action::Deliver(e)).expect("delivers").state;
        }
        assert_eq!(st.servers[0].role, Role::Leader);
        let resigned = model
            .step(&st, Action::CheckQuorumTimeout(0))
            .expect("check-quorum expiry")
            .state;
        let end = *new_messages(&st, &resigned)
            .iter()
            .find(|e| matches!(e.msg, Msg::EndQuorumEpoch { .. }))
            .expect("EndQuorumEpoch sent");
        assert_eq!(request_explained(&model, 0, &[&st], &end), None);
    }
}
