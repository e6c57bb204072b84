//! Hold mode of the kit (graph walks, tours): the node's requests held by the played replicas, its
//! fetches parked while the answer is no news, and the wait for the node's eager steps.
//!
//! The rules are free functions over `(request, connection)` lists so that the tour's model-only
//! prediction of a path (`kit::tour::sim`) applies exactly the rules the kit applies on the wire.

use std::time::Duration;

use model::types::{Action, Envelope, Id, Msg, State};
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

impl Kit {
    fn held_conns(&self) -> Vec<(Envelope, u64)> {
        self.held.iter().map(|h| (h.env, h.conn)).collect()
    }

    /// The node's held requests, oldest first (the tour's vertex key includes their order).
    pub fn held_envs(&self) -> Vec<Envelope> {
        self.held.iter().map(|h| h.env).collect()
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

    /// True when every message the model has in flight from the node has arrived at the kit.
    pub fn all_arrived(&self) -> bool {
        let mut held: Vec<Envelope> = self.held.iter().map(|h| h.env).collect();
        for e in self.state.network.iter().filter(|e| e.src == self.nut) {
            match held.iter().position(|h| h == e) {
                Some(p) => {
                    held.remove(p);
                }
                None => return false,
            }
        }
        true
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
        // (and the node's next fetch waited for).
        self.serve_for(Duration::ZERO)?;
        if self.parked_news().is_some() {
            return self.settle_node();
        }
        Ok(())
    }
}
