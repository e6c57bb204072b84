//! Hold mode of the kit (graph walks): the node's requests held by the played replicas, its fetches
//! parked while the answer is no news, and the wait for the node's eager steps.

use std::time::Duration;

use model::types::{Action, Envelope, Msg, State};

use super::{Divergence, Kit, Line, R};

impl Kit {
    /// True if the played replica's answer to the node's request `env` changes a server's state
    /// (the answer delivered to the node included).
    pub(super) fn is_news(&self, env: &Envelope) -> bool {
        let Some(s1) = self.model.step(&self.state, Action::Deliver(*env)) else {
            return true;
        };
        let answer = Self::added(&self.state, &s1.state, env.dst, self.nut);
        let s2 = match answer.first() {
            Some(a) => match self.model.step(&s1.state, Action::Deliver(*a)) {
                Some(s) => s.state,
                None => return true,
            },
            None => s1.state,
        };
        // The node's outstanding fetch (`fetching`) changes with every answer.
        let strip = |st: &State| {
            let mut v = st.servers.clone();
            v[self.nut as usize].fetching = None;
            v
        };
        strip(&s2) != strip(&self.state)
    }

    /// The first parked fetch, first on its connection, whose answer is news now.
    pub(super) fn parked_news(&self) -> Option<usize> {
        self.held.iter().enumerate().position(|(i, h)| {
            matches!(h.env.msg, Msg::FetchRequest(_))
                && !self.held[..i].iter().any(|x| x.conn == h.conn)
                && self.is_news(&h.env)
        })
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
            let block = before.and_then(|b| {
                let conn = self.held.iter().find(|h| h.env == b)?.conn;
                self.held
                    .iter()
                    .take_while(|h| h.env != b)
                    .position(|h| h.conn == conn && matches!(h.env.msg, Msg::FetchRequest(_)))
            });
            let news = self.parked_news();
            let Some(pos) = block.or(news) else {
                return Ok(());
            };
            let h = self.held.remove(pos);
            self.answer(h, Line::new("kit", "answer parked fetch".into()))?;
        }
    }

    /// The held requests of the node the walk may deliver now: the oldest on each connection (a
    /// Kafka client reads the responses of one connection in order).
    pub fn deliverable_held(&self) -> Vec<Envelope> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for h in &self.held {
            if matches!(h.env.msg, Msg::FetchRequest(_)) {
                // Parked: answered first when a later request on its connection is delivered.
                continue;
            }
            if !seen.contains(&h.conn) {
                seen.push(h.conn);
                out.push(h.env);
            }
        }
        out
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
