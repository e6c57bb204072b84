//! The kit and the node predicted in the model alone: what the kit's state is after each choice once
//! the node has taken its eager steps, by the rules the kit applies on the wire (`driver::hold`). The
//! tour's graph is built from these predictions; on the wire every step is checked against them.

use std::hash::{Hash, Hasher};

use model::types::{Action, Envelope, Id, State};
use model::KraftModel;

use crate::kit::driver::hold::{appends_due, blocking_fetch, deliverable, parked_news};
use crate::kit::driver::{is_response as response, new_messages};

/// One vertex of the tour graph: the model state and the node's requests the played replicas hold
/// (oldest first; the node keeps one connection per replica, so a connection is its destination).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sim {
    pub state: State,
    pub held: Vec<Envelope>,
    /// Batches of records the node writes on its own once elected ([`appends_due`]; not part of the
    /// key).
    pub appends: Vec<u8>,
}

/// The key of a vertex: the model's fingerprint of the state and the held requests in order on each
/// connection (a stable sort by destination keeps the order within one connection).
pub fn vertex_key(state: &State, held: &[Envelope]) -> u64 {
    let mut by_conn = held.to_vec();
    by_conn.sort_by_key(|e| e.dst);
    let mut h = std::hash::DefaultHasher::new();
    crate::fingerprint::model_fingerprint(state).hash(&mut h);
    by_conn.hash(&mut h);
    h.finish()
}

impl Sim {
    pub fn new(state: State, appends: Vec<u8>) -> Sim {
        Sim {
            state,
            held: Vec::new(),
            appends,
        }
    }

    pub fn key(&self) -> u64 {
        vertex_key(&self.state, &self.held)
    }

    fn conns(&self) -> Vec<(Envelope, Id)> {
        self.held.iter().map(|e| (*e, e.dst)).collect()
    }

    /// The node's held requests the kit may deliver now.
    pub fn deliverable(&self) -> Vec<Envelope> {
        deliverable(&self.conns())
    }

    /// The model step `a`; the node's new requests are held, everything added is returned.
    fn step(&mut self, m: &KraftModel, nut: Id, a: Action) -> Option<Vec<Envelope>> {
        let next = m.step(&self.state, a)?.state;
        let new = new_messages(&self.state, &next);
        self.state = next;
        self.held.extend(
            new.iter()
                .filter(|e| e.src == nut && !response(&e.msg))
                .copied(),
        );
        Some(new)
    }

    /// `env` delivered to the node, and the node's answer delivered back (`Kit::deliver_to_node`).
    fn deliver_to_node(&mut self, m: &KraftModel, nut: Id, env: Envelope) -> Option<()> {
        let new = self.step(m, nut, Action::Deliver(env))?;
        let answers: Vec<Envelope> = new
            .into_iter()
            .filter(|e| e.src == nut && e.dst == env.src && response(&e.msg))
            .collect();
        match answers.as_slice() {
            [] => Some(()),
            [one] => self.step(m, nut, Action::Deliver(*one)).map(|_| ()),
            _ => None,
        }
    }

    /// The node's held request at `pos` handled by its played replica, whose answer is delivered
    /// to the node (`Kit::answer`).
    fn answer(&mut self, m: &KraftModel, nut: Id, pos: usize) -> Option<()> {
        let env = self.held.remove(pos);
        let new = self.step(m, nut, Action::Deliver(env))?;
        match new
            .into_iter()
            .find(|e| e.src == env.dst && e.dst == nut && response(&e.msg))
        {
            Some(a) => self.step(m, nut, Action::Deliver(a)).map(|_| ()),
            None => Some(()),
        }
    }

    /// The node's eager steps and the parked fetches whose answer is news, until none is left
    /// (`Kit::settle_node`). `None` if the model cannot follow (a kit bug, never the node's).
    pub fn settle(&mut self, m: &KraftModel, nut: Id) -> Option<()> {
        for _ in 0..64 {
            if let Some(pos) = parked_news(m, &self.state, nut, &self.conns()) {
                self.answer(m, nut, pos)?;
                continue;
            }
            if appends_due(&self.state, nut, &self.appends).is_some() {
                self.step(m, nut, Action::ClientAppend(nut))?;
                continue;
            }
            if m.step(&self.state, Action::Resign(nut)).is_some() {
                self.step(m, nut, Action::Resign(nut))?;
                continue;
            }
            let fetch = (0..m.cfg.servers())
                .map(|l| Action::Fetch {
                    replica: nut,
                    leader: l,
                })
                .find(|a| m.step(&self.state, *a).is_some());
            match fetch {
                Some(a) => {
                    self.step(m, nut, a)?;
                }
                None => return Some(()),
            }
        }
        None
    }

    /// The kit's choice `a` (`walk::perform`), then the node settles.
    pub fn perform(&mut self, m: &KraftModel, nut: Id, a: Action) -> Option<()> {
        match a {
            Action::Fetch { replica, leader } if replica != nut => {
                let new = self.step(m, nut, a)?;
                let req = *new.iter().find(|e| e.src == replica)?;
                if leader == nut {
                    self.deliver_to_node(m, nut, req)?;
                } else {
                    let new = self.step(m, nut, Action::Deliver(req))?;
                    if let Some(resp) = new.into_iter().find(|e| e.src == leader) {
                        self.step(m, nut, Action::Deliver(resp))?;
                    }
                }
            }
            Action::Deliver(e) if e.src == nut => {
                loop {
                    let conns = self.conns();
                    let first = blocking_fetch(&conns, &e)
                        .or_else(|| parked_news(m, &self.state, nut, &conns));
                    let Some(p) = first else { break };
                    self.answer(m, nut, p)?;
                }
                let pos = self.held.iter().position(|h| *h == e)?;
                self.answer(m, nut, pos)?;
            }
            Action::Deliver(e) if e.dst == nut => self.deliver_to_node(m, nut, e)?,
            other => {
                self.step(m, nut, other)?;
            }
        }
        self.settle(m, nut)
    }
}
