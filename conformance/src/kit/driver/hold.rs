//! Hold mode of the kit (graph walks, tours): the node's requests held by the played replicas, its
//! fetches parked while the answer is no news, and the wait for the node's eager steps.
//!
//! The rules are free functions over `(request, connection)` lists so that the tour's model-only
//! prediction of a path (`kit::tour::sim`) applies exactly the rules the kit applies on the wire.

use std::time::Duration;

use model::types::{Action, Envelope, Id, Kind, Msg, Role, State};
use model::KraftModel;

use super::{added, Divergence, Kit, Line, R};

/// True if the played replica's answer to the node's request `env` changes a server's state
/// (the answer delivered to the node included).
pub fn is_news(model: &KraftModel, st: &State, nut: Id, env: &Envelope) -> bool {
    let Some(s1) = model.step(st, Action::Deliver(*env)) else {
        return true;
    };
    let answer = added(st, &s1.state, env.dst, nut);
    let s2 = match answer.first() {
        Some(a) => match model.step(&s1.state, Action::Deliver(*a)) {
            Some(s) => s.state,
            None => return true,
        },
        None => s1.state,
    };
    // The node's outstanding fetch (`fetching`) changes with every answer.
    let strip = |x: &State| {
        let mut v = x.servers.clone();
        v[nut as usize].fetching = None;
        v
    };
    strip(&s2) != strip(st)
}

/// The first parked fetch of `held` (requests of the node with their connection, oldest first),
/// first on its connection, whose answer is news now.
pub fn parked_news<C: PartialEq>(
    model: &KraftModel,
    st: &State,
    nut: Id,
    held: &[(Envelope, C)],
) -> Option<usize> {
    held.iter().enumerate().position(|(i, h)| {
        matches!(h.0.msg, Msg::FetchRequest(_))
            && !held[..i].iter().any(|x| x.1 == h.1)
            && is_news(model, st, nut, &h.0)
    })
}

/// A parked fetch ahead of `before` on its connection (answered first when `before` is delivered).
pub fn blocking_fetch<C: PartialEq>(held: &[(Envelope, C)], before: &Envelope) -> Option<usize> {
    let conn = &held.iter().find(|h| h.0 == *before)?.1;
    held.iter()
        .take_while(|h| h.0 != *before)
        .position(|h| h.1 == *conn && matches!(h.0.msg, Msg::FetchRequest(_)))
}

/// The held requests the kit may deliver now: the oldest one that is not a parked fetch on each
/// connection (a Kafka client reads the responses of one connection in order; a parked fetch ahead
/// of it is answered first).
pub fn deliverable<C: PartialEq>(held: &[(Envelope, C)]) -> Vec<Envelope> {
    let mut seen: Vec<&C> = Vec::new();
    let mut out = Vec::new();
    for h in held {
        if matches!(h.0.msg, Msg::FetchRequest(_)) {
            continue;
        }
        if !seen.contains(&&h.1) {
            seen.push(&h.1);
            out.push(h.0);
        }
    }
    out
}

/// The node's own records due now: `Some(n)` when the node, which writes the record `batches` of
/// its own once elected (`--elected-appends`: a Kafka controller's 3 bootstrap records, then its
/// RegisterControllerRecord), is to have written `n` in all once the due batch is complete. The
/// first batch is due once it leads and its HW has passed its epoch's first record (Kafka tells its
/// state machine it leads only then: `KafkaRaftClient.maybeFireLeaderChange`, `nextOffset() >
/// epochStartOffset`); each next one once its HW has passed the batch before (the controller
/// registers itself once it has read the metadata version the bootstrap records set). The model
/// appends one record a step: a batch under way stays due until it is complete.
pub fn appends_due(st: &State, nut: Id, batches: &[u8]) -> Option<u8> {
    let s = &st.servers[nut as usize];
    let written = st.history.data;
    let mut before = 0u8;
    for &b in batches {
        let upto = before.saturating_add(b);
        if written < upto {
            if written > before {
                return Some(upto);
            }
            let log = s.log.as_slice();
            let last = if before == 0 {
                log.iter().position(|e| e.epoch == s.epoch)
            } else {
                log.iter().rposition(|e| e.kind == Kind::Data)
            };
            let passed = matches!((last, s.hw), (Some(o), Some(h)) if usize::from(h) > o);
            return (s.role == Role::Leader && passed).then_some(upto);
        }
        before = upto;
    }
    None
}

/// True when the node's requests that have not reached the kit (`unarrived`) may still be on their
/// way: none, or (`one_in_flight`: the node writes a replica its next request only once the one
/// before it is answered, as Kafka's raft network client does) each queued behind a request to the
/// same replica that the kit holds.
pub fn arrived_enough<C>(
    one_in_flight: bool,
    held: &[(Envelope, C)],
    unarrived: &[Envelope],
) -> bool {
    unarrived
        .iter()
        .all(|u| one_in_flight && held.iter().any(|h| h.0.dst == u.dst))
}

impl Kit {
    fn held_conns(&self) -> Vec<(Envelope, u64)> {
        self.held.iter().map(|h| (h.env, h.conn)).collect()
    }

    /// The node's requests the played replicas hold, then those it still queues for them (with
    /// `one_in_flight`), oldest first per replica (the tour's vertex key includes their order).
    pub fn held_envs(&self) -> Vec<Envelope> {
        let mut v: Vec<Envelope> = self.held.iter().map(|h| h.env).collect();
        v.extend(&self.unarrived);
        v
    }

    pub(super) fn is_news(&self, env: &Envelope) -> bool {
        is_news(&self.model, &self.state, self.nut, env)
    }

    /// The first parked fetch, first on its connection, whose answer is news now.
    pub(super) fn parked_news(&self) -> Option<usize> {
        parked_news(&self.model, &self.state, self.nut, &self.held_conns())
    }

    /// The node's parked fetches (hold mode), to leave out of the walk's view of the state.
    pub fn parked(&self) -> Vec<Envelope> {
        self.held
            .iter()
            .filter(|h| matches!(h.env.msg, Msg::FetchRequest(_)))
            .map(|h| h.env)
            .collect()
    }

    /// Answers the parked fetches whose answer is news now (or that block `before` on its
    /// connection).
    pub(super) fn answer_parked(&mut self, before: Option<Envelope>) -> R<()> {
        loop {
            let held = self.held_conns();
            let block = before.and_then(|b| blocking_fetch(&held, &b));
            let news = self.parked_news();
            let Some(pos) = block.or(news) else {
                return Ok(());
            };
            let h = self.held.remove(pos);
            self.answer(h, Line::new("kit", "answer parked fetch".into()))?;
        }
    }

    /// The held requests of the node the walk may deliver now ([`deliverable`]).
    pub fn deliverable_held(&self) -> Vec<Envelope> {
        deliverable(&self.held_conns())
    }

    /// Delivers a held request of the node (the oldest on its connection): the played replica
    /// handles it and answers.
    pub fn deliver_held(&mut self, env: Envelope) -> R<()> {
        if !self.held.iter().any(|h| h.env == env) {
            return Err(Box::new(Divergence::Kit(format!("{env:?} is not held"))));
        }
        self.answer_parked(Some(env))?;
        let Some(pos) = self.held.iter().position(|h| h.env == env) else {
            return Err(Box::new(Divergence::Kit(format!("{env:?} is not held"))));
        };
        let h = self.held.remove(pos);
        let line = Line::new("kit", "deliver held request".into());
        self.answer(h, line)
    }

    /// True when every message the model has in flight from the node has arrived at the kit, or
    /// (`one_in_flight`) waits in the node behind a held request to the same replica.
    pub fn all_arrived(&self) -> bool {
        arrived_enough(self.one_in_flight, &self.held_conns(), &self.unarrived)
    }

    /// Serves the node until every message the model has it send has arrived and its eager internal
    /// actions (its next fetch, a due resignation) have been seen: the node is then idle in the model
    /// except for its timers.
    pub fn settle_node(&mut self) -> R<()> {
        let me = self.nut;
        let n = self.model.cfg.servers();
        self.answer_parked(None)?;
        self.until(
            "the node's messages and eager steps (fetch, resignation)",
            |k| {
                k.all_arrived()
                    && k.model.step(&k.state, Action::Resign(me)).is_none()
                    && (0..n).all(|l| {
                        k.model
                            .step(
                                &k.state,
                                Action::Fetch {
                                    replica: me,
                                    leader: l,
                                },
                            )
                            .is_none()
                    })
            },
        )?;
        // Whatever else already arrived is checked too; a parked fetch that is news now is answered
        // (and the node's next fetch waited for). The node's own records, when due, are waited for
        // (DescribeQuorum shows them).
        self.serve_for(Duration::ZERO)?;
        if let Some(n) = appends_due(&self.state, me, &self.elected_appends) {
            self.await_node_appends(n)?;
            return self.settle_node();
        }
        if self.parked_news().is_some() {
            return self.settle_node();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(dst: Id, msg: Msg) -> Envelope {
        Envelope { src: 0, dst, msg }
    }

    /// The candidate's VoteRequest to replica 2 behind the held PreVoteRequest to 2 may wait in a
    /// node that keeps one request in flight per connection, never in one that pipelines; a request
    /// to a replica with nothing held must arrive either way.
    #[test]
    fn only_a_request_behind_a_held_one_may_wait() {
        let pre = Msg::PreVoteRequest {
            epoch: 0,
            voter_dir: 0,
            last_epoch: 0,
            last_offset: 0,
        };
        let vote = Msg::VoteRequest {
            epoch: 1,
            voter_dir: 0,
            last_epoch: 0,
            last_offset: 0,
        };
        let held = [(env(2, pre), 7u64)];
        let behind = [env(2, vote)];
        assert!(arrived_enough(true, &held, &behind));
        assert!(!arrived_enough(false, &held, &behind));
        let alone = [env(2, vote), env(1, vote)];
        assert!(!arrived_enough(true, &held, &alone));
        assert!(arrived_enough(false, &held, &[]));
        assert!(arrived_enough(true, &[] as &[(Envelope, u64)], &[]));
    }
}
