//! The kit's lockstep: one model state, the node under test (`nut`) behind a socket, every other
//! replica played by the kit from the model.
//!
//! - A **kit action** (a played replica's timer, its fetch) is a model step only: no bytes.
//! - A **delivery to the node** (`Deliver(m)`, `m.dst = nut`) is `m` encoded as a Kafka request from
//!   `m.src`; the node's response is decoded, mapped to the model (`crate::mapping`) and must equal the
//!   response message the model's step put in flight, which is then delivered to the played replica.
//! - A **request from the node** (read on a played replica's listener) must be a message the model has
//!   in flight from `nut` to that replica, or one that an enabled internal action of `nut` (its election,
//!   fetch or check-quorum timer, its next fetch) puts in flight: that action is then the node's step.
//!   The played replica handles it in the model and the kit writes the model's response as bytes, then
//!   delivers that response to `nut` in the model. A request identical to one already delivered is a
//!   retransmission (Kafka resends on timeouts): delivered again, as on a duplicating network.
//! - **Operator requests** (AddRaftVoter, RemoveRaftVoter) are model `Change` steps; the response is
//!   read when the model's step produces the operator reply (a change is answered when it commits).
//! - **DescribeQuorum** is asked as a client and checked with `replay::check_content` against
//!   `model::spec::describe_quorum`.
//!
//! Timers: the node's timers fire on their own. The kit only waits for them while it is quiet (the
//! node's timeout is then the only enabled action of the node that sends anything), and scenarios
//! configure the timers they do not wait for far beyond the scenario's length. A timer firing anyway
//! is still checked against the model (it is an enabled internal action), so it shows up as a report
//! line, never as a false divergence; it can only make a scenario's goal time out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kraft::node::{ClientRequest, ClientResponse};
use kraft::server::codec::{self, Incoming};
use model::types::{Action, ChangeOp, Envelope, Id, Msg, Reply, State};
use model::KraftModel;

use super::encode::{self, Endpoints};
use super::net::{Listeners, NodeConn};
use super::report::{Line, Report};
use crate::schema::MessageSchema;

/// A divergence of the node from the model, or a reason the kit could not go on. Never a panic.
#[derive(Debug, thiserror::Error)]
pub enum Divergence {
    #[error("the node sent {observed}; the model allows none of its actions to send it")]
    Unexpected { observed: String },
    #[error("the node answered {observed}; the model expects {expected}")]
    Mismatch { expected: String, observed: String },
    #[error("timed out after {waited_ms} ms waiting for {waiting_for}")]
    Timeout {
        waiting_for: String,
        waited_ms: u128,
    },
    #[error("undecodable bytes from the node: {0}")]
    Decode(String),
    #[error("connection to the node: {0}")]
    Io(String),
    #[error("DescribeQuorum v{version}: {reason}")]
    Describe { version: i16, reason: String },
    #[error("kit: {0}")]
    Kit(String),
}

impl Divergence {
    /// The JSON name of the divergence kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Divergence::Unexpected { .. } => "unexpected",
            Divergence::Mismatch { .. } => "mismatch",
            Divergence::Timeout { .. } => "timeout",
            Divergence::Decode(_) => "decode",
            Divergence::Io(_) => "io",
            Divergence::Describe { .. } => "describe-quorum",
            Divergence::Kit(_) => "kit",
        }
    }
}

type R<T> = Result<T, Box<Divergence>>;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn story(a: &Action) -> String {
    model::story::action(a)
}

/// A request of the node the played replica has not answered yet (hold mode).
struct Held {
    env: Envelope,
    conn: u64,
    reply: codec::Reply,
    message: kraft::node::Message,
}

/// An operator request waiting for its answer.
struct PendingAdmin {
    conn: NodeConn,
    op: ChangeOp,
    key: ApiKey,
    sent: String,
}

pub struct Kit {
    pub model: KraftModel,
    pub state: State,
    pub nut: Id,
    pub eps: Endpoints,
    node: SocketAddr,
    listeners: Listeners,
    conns: HashMap<Id, NodeConn>,
    corr: i32,
    /// Operator requests sent and not answered yet, oldest first.
    admin: Vec<PendingAdmin>,
    delivered: Vec<Envelope>,
    pub wait: Duration,
    pub report: Report,
    describe_schema: MessageSchema,
    /// Internal actions of the node seen so far (its timers and fetches).
    pub node_steps: u64,
    /// Hold the node's requests until [`Kit::deliver_held`] (graph walks) instead of answering at once.
    pub hold: bool,
    held: Vec<Held>,
    /// True while the model takes an operator's Change step (its replies answer that request).
    in_change: bool,
}

impl Kit {
    /// `node`: the node under test's address and the played replicas' listeners.
    pub fn new(
        model: KraftModel,
        nut: Id,
        eps: Endpoints,
        (node, listeners): (SocketAddr, Listeners),
        wait: Duration,
        report: Report,
        describe_schema: MessageSchema,
    ) -> Kit {
        let state = model.initial_state();
        Kit {
            model,
            state,
            nut,
            eps,
            node,
            listeners,
            conns: HashMap::new(),
            corr: 0,
            admin: Vec::new(),
            delivered: Vec::new(),
            wait,
            report,
            describe_schema,
            node_steps: 0,
            hold: false,
            held: Vec::new(),
            in_change: false,
        }
    }

    fn next_corr(&mut self) -> i32 {
        self.corr = self.corr.wrapping_add(1);
        self.corr
    }

    fn fail(&mut self, line: Line, d: Divergence) -> Box<Divergence> {
        self.report
            .push(line.verdict(format!("divergence ({}): {d}", d.kind())));
        Box::new(d)
    }

    /// Applies an action to the model, checking the operator replies it produces.
    fn model_step(&mut self, a: Action) -> R<()> {
        let step = self
            .model
            .step(&self.state, a)
            .ok_or_else(|| Box::new(Divergence::Kit(format!("{} is not enabled", story(&a)))))?;
        self.state = step.state;
        self.report.transition(self.nut, &a);
        for r in step.replies {
            self.operator_reply(r)?;
        }
        Ok(())
    }

    /// A played replica's own step (no bytes).
    pub fn kit(&mut self, a: Action) -> R<()> {
        self.model_step(a)?;
        self.report
            .push(Line::new("kit", story(&a)).verdict("ok".into()));
        Ok(())
    }

    /// The messages `step` added to the network from `src` to `dst`.
    fn added(before: &State, after: &State, src: Id, dst: Id) -> Vec<Envelope> {
        let mut left = before.network.clone();
        let mut out = Vec::new();
        for e in &after.network {
            if let Some(p) = left.iter().position(|x| x == e) {
                left.remove(p);
            } else if e.src == src && e.dst == dst {
                out.push(*e);
            }
        }
        out
    }

    fn conn(&mut self, src: Id) -> R<&mut NodeConn> {
        if !self.conns.contains_key(&src) {
            let c =
                NodeConn::connect(self.node, self.wait).map_err(|e| Box::new(Divergence::Io(e)))?;
            self.conns.insert(src, c);
        }
        self.conns
            .get_mut(&src)
            .ok_or_else(|| Box::new(Divergence::Kit("connection vanished".into())))
    }

    /// Delivers in-flight message `env` (from a played replica) to the node over the wire.
    pub fn deliver_to_node(&mut self, env: Envelope) -> R<()> {
        let mut line = Line::new("kit", story(&Action::Deliver(env)));
        if env.dst != self.nut || !self.state.network.contains(&env) {
            return Err(self.fail(
                line,
                Divergence::Kit(format!("{env:?} is not in flight to the node")),
            ));
        }
        let hw = self.state.servers[env.src as usize].hw;
        let msg = encode::request(&self.eps, env.src, env.dst, &env.msg, hw)
            .map_err(|e| Box::new(Divergence::Kit(e)))?;
        let (key, version) = codec::request_api(&msg).unwrap_or((-1, -1));
        let corr = self.next_corr();
        let frame = codec::peer_request_frame(&msg, corr, "kraft-kit")
            .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        line.sent = hex(&frame);
        self.report
            .cover(format!("kit→node {}", encode::name(&msg)));
        let conn = self.conn(env.src)?;
        let got = conn.send(&frame).and_then(|_| conn.recv());
        let payload = match got {
            Ok(p) => p,
            Err(e) => return Err(self.fail(line, Divergence::Io(e))),
        };
        line.received = hex(&payload);
        let decoded = codec::response_body(payload, key, version)
            .map_err(|e| e.to_string())
            .and_then(|(c, body)| {
                if c != corr {
                    return Err(format!("correlation id {c}, expected {corr}"));
                }
                codec::decode_peer_response(body, key, version).map_err(|e| e.to_string())
            });
        let resp = match decoded {
            Ok(r) => r,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
        };
        self.report.cover(format!(
            "node→kit {} error {}",
            encode::name(&resp),
            encode::error_code(&resp)
        ));
        let sent_key = match env.msg {
            Msg::FetchRequest(k) => Some(k),
            _ => None,
        };
        // Kafka's controller writes its own metadata records: node-internal appends (`ClientAppend` at
        // the node, allowed up to `max_data`; never for `kraft`). When the answer does not match the
        // model's, the fewest appends that explain it are taken first.
        let observed = encode::abstract_message(&self.eps, &resp, self.nut, sent_key).ok();
        let answer_after = |kit: &Kit, k: usize| -> Option<Msg> {
            let base = kit.appended(&kit.state, k)?;
            let step = kit.model.step(&base, Action::Deliver(env))?;
            match Self::added(&base, &step.state, kit.nut, env.src)
                .iter()
                .filter(|e| matches!(e.msg, Msg::VoteResponse { .. } | Msg::FetchResponse(_)))
                .collect::<Vec<_>>()
                .as_slice()
            {
                [one] => Some(one.msg),
                _ => None,
            }
        };
        if observed.is_some() && answer_after(self, 0) != observed {
            let left = self.appends_left(&self.state);
            if let Some(k) = (1..=left).find(|&k| answer_after(self, k) == observed) {
                self.take_appends(k)?;
                line.action = format!("after {k} node-internal append(s): {}", line.action);
            }
        }
        let before = self.state.clone();
        self.model_step(Action::Deliver(env))?;
        let expected: Vec<Envelope> = Self::added(&before, &self.state, self.nut, env.src)
            .into_iter()
            .filter(|e| matches!(e.msg, Msg::VoteResponse { .. } | Msg::FetchResponse(_)))
            .collect();
        match expected.as_slice() {
            [] => {
                line.expected = "no response in the model (acknowledgement left out)".into();
                line.observed = format!(
                    "{} error {}",
                    encode::name(&resp),
                    encode::error_code(&resp)
                );
                self.report.push(line.verdict("ok".into()));
            }
            [want] => {
                line.expected = format!("{:?}", want.msg);
                let observed = match encode::abstract_message(&self.eps, &resp, self.nut, sent_key)
                {
                    Ok(m) => m,
                    Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
                };
                line.observed = format!("{observed:?}");
                if observed != want.msg {
                    let d = Divergence::Mismatch {
                        expected: line.expected.clone(),
                        observed: line.observed.clone(),
                    };
                    return Err(self.fail(line, d));
                }
                self.report.push(line.verdict("ok".into()));
                let want = *want;
                self.model_step(Action::Deliver(want))?;
            }
            more => {
                return Err(self.fail(
                    line,
                    Divergence::Kit(format!("the model answers with {} messages", more.len())),
                ))
            }
        }
        Ok(())
    }

    /// How many more node-internal appends the model allows from `st` (`ClientAppend` at the node,
    /// bounded by `max_data`; 0 for `kraft`, which writes no records of its own).
    fn appends_left(&self, st: &State) -> usize {
        usize::from(self.model.cfg.max_data.saturating_sub(st.history.data))
    }

    /// `st` after `k` node-internal appends, `None` if the model does not allow them.
    fn appended(&self, st: &State, k: usize) -> Option<State> {
        let mut s = st.clone();
        for _ in 0..k {
            s = self.model.step(&s, Action::ClientAppend(self.nut))?.state;
        }
        Some(s)
    }

    /// Takes `k` node-internal appends in the model (seen through a response that shows them).
    fn take_appends(&mut self, k: usize) -> R<()> {
        for _ in 0..k {
            self.model_step(Action::ClientAppend(self.nut))?;
        }
        self.report.push(
            Line::new("node", format!("{k} node-internal append(s)"))
                .verdict("ok (ClientAppend at the node, shown by its answer)".into()),
        );
        Ok(())
    }

    /// The node's internal actions that could have sent `env`: applied to the model if one did.
    fn node_action_sending(&mut self, env: &Envelope) -> Option<Action> {
        let n = self.model.cfg.servers();
        let me = self.nut;
        let mut cands = vec![
            Action::ElectionTimeout(me),
            Action::FetchTimeout(me),
            Action::CheckQuorumTimeout(me),
            Action::Resign(me),
        ];
        cands.extend((0..n).map(|l| Action::Fetch {
            replica: me,
            leader: l,
        }));
        for a in cands {
            if let Some(step) = self.model.step(&self.state, a) {
                if !Self::added(&self.state, &step.state, env.src, env.dst).contains(env) {
                    continue;
                }
                self.state = step.state;
                self.report.transition(self.nut, &a);
                // Timers of the node answer no operator; a reply here would be a kit bug.
                if !step.replies.is_empty() {
                    return None;
                }
                return Some(a);
            }
        }
        None
    }

    /// Handles one frame the node sent to a played replica.
    fn inbound(&mut self, replica: Id, conn: u64, payload: Result<Bytes, String>) -> R<()> {
        let mut line = Line::new("node", String::new());
        let payload = match payload {
            Ok(p) => p,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
        };
        line.received = hex(&payload);
        let (reply, incoming) = match codec::decode_request(payload) {
            Ok(x) => x,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e.to_string()))),
        };
        let (from, message) = match incoming {
            Incoming::Peer { from, message } => (from, message),
            Incoming::Client(ClientRequest::ApiVersions(_)) => {
                // Kafka's network client opens every connection with ApiVersions; not in the model.
                line.action = "ApiVersions (connection handshake, not in the model)".into();
                self.report.cover("node→kit ApiVersionsRequest".into());
                let resp = ClientResponse::ApiVersions(api_versions());
                let frame = codec::client_response(&reply, &resp)
                    .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
                line.sent = hex(&frame);
                self.listeners
                    .reply(conn, &frame)
                    .map_err(|e| Box::new(Divergence::Io(e)))?;
                self.report.push(line.verdict("ok".into()));
                return Ok(());
            }
            Incoming::Unsupported if reply.api_key == ApiKey::ApiVersions as i16 => {
                // A newer ApiVersions than the kit's codec speaks (Kafka 4.4.0 sends v5): refused
                // with UNSUPPORTED_VERSION and the kit's ranges, as a broker does; the client then
                // retries with a version both speak.
                line.action = format!(
                    "ApiVersions v{} (connection handshake): UNSUPPORTED_VERSION, the client retries lower",
                    reply.api_version
                );
                self.report.cover(format!(
                    "node→kit ApiVersionsRequest v{} (unsupported by the kit)",
                    reply.api_version
                ));
                let frame = codec::unsupported_response(&reply, api_versions())
                    .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
                line.sent = hex(&frame);
                self.listeners
                    .reply(conn, &frame)
                    .map_err(|e| Box::new(Divergence::Io(e)))?;
                self.report.push(line.verdict("ok".into()));
                return Ok(());
            }
            other => {
                let d = Divergence::Unexpected {
                    observed: format!("{other:?}"),
                };
                return Err(self.fail(line, d));
            }
        };
        self.report
            .cover(format!("node→kit {}", encode::name(&message)));
        let msg = match encode::abstract_message(&self.eps, &message, self.nut, None) {
            Ok(m) => m,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
        };
        let env = Envelope {
            src: self.nut,
            dst: replica,
            msg,
        };
        line.observed = format!("{env:?}");
        if from != i32::from(self.nut) {
            let d = Divergence::Unexpected {
                observed: format!("{env:?} naming sender {from}"),
            };
            return Err(self.fail(line, d));
        }
        let in_flight = self.state.network.iter().filter(|e| **e == env).count()
            > self.held.iter().filter(|h| h.env == env).count();
        let how = if in_flight {
            "in flight".to_string()
        } else if let Some(a) = self.node_action_sending(&env) {
            self.node_steps += 1;
            format!("node step {}", story(&a))
        } else if self.delivered.contains(&env) {
            let p = self.state.network.partition_point(|e| e < &env);
            self.state.network.insert(p, env);
            "retransmission of a delivered request".to_string()
        } else {
            let d = Divergence::Unexpected {
                observed: format!("{env:?}"),
            };
            return Err(self.fail(line, d));
        };
        let held = Held {
            env,
            conn,
            reply,
            message,
        };
        // Hold mode (graph walks): a request waits for the walk (`deliver_held`), in order per
        // connection. The node's fetch is answered at once if the answer is news (records, HW, an
        // error: the played leader's state or the node's changes), else parked, as a Kafka leader
        // parks a fetch it has nothing for (long poll); `settle_node` answers it once it is news.
        let fetch = matches!(env.msg, Msg::FetchRequest(_));
        let behind = self.held.iter().any(|h| h.conn == conn);
        if self.hold && (!fetch || behind || !self.is_news(&env)) {
            let what = if fetch { "parked (no news)" } else { "held" };
            line.action = format!("{how}; {what} by the played replica");
            self.report.push(line.verdict("ok".into()));
            self.held.push(held);
            return Ok(());
        }
        line.action = how;
        self.answer(held, line)
    }

    /// The played replica handles the node's request `h` in the model and writes the model's answer
    /// (the answer is delivered to the node with it).
    fn answer(&mut self, h: Held, mut line: Line) -> R<()> {
        let Held {
            env,
            conn,
            reply,
            message,
        } = h;
        let replica = env.dst;
        line.action = format!("{}; {}", line.action, story(&Action::Deliver(env)));
        let before = self.state.clone();
        self.model_step(Action::Deliver(env))?;
        self.delivered.push(env);
        let answers = Self::added(&before, &self.state, replica, self.nut);
        let answer = answers
            .iter()
            .find(|e| matches!(e.msg, Msg::VoteResponse { .. } | Msg::FetchResponse(_)))
            .copied();
        let s = &self.state.servers[replica as usize];
        let resp = encode::response(
            &self.eps,
            replica,
            &message,
            answer.as_ref().map(|e| &e.msg),
            (s.epoch, s.leader),
        )
        .map_err(|e| Box::new(Divergence::Kit(e)))?;
        let frame = codec::peer_response(&reply, &resp)
            .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        line.sent = hex(&frame);
        line.expected = format!("{answer:?}");
        self.listeners
            .reply(conn, &frame)
            .map_err(|e| Box::new(Divergence::Io(e)))?;
        self.report.cover(format!(
            "kit→node {} error {}",
            encode::name(&resp),
            encode::error_code(&resp)
        ));
        self.report.push(line.verdict("ok".into()));
        if let Some(a) = answer {
            // The node reads the answer the kit just wrote.
            self.model_step(Action::Deliver(a))?;
        }
        Ok(())
    }

    /// True if the played replica's answer to the node's request `env` changes a server's state
    /// (the answer delivered to the node included).
    fn is_news(&self, env: &Envelope) -> bool {
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
    fn parked_news(&self) -> Option<usize> {
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
    fn answer_parked(&mut self, before: Option<Envelope>) -> R<()> {
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
        self.until("the node's messages and eager steps (fetch, resignation)", |k| {
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
        })?;
        // Whatever else already arrived is checked too; a parked fetch that is news now is answered
        // (and the node's next fetch waited for).
        self.serve_for(Duration::ZERO)?;
        if self.parked_news().is_some() {
            return self.settle_node();
        }
        Ok(())
    }

    /// Serves the node's requests until `goal` holds of the model state (`what` names it).
    pub fn until(&mut self, what: &str, goal: impl Fn(&Kit) -> bool) -> R<()> {
        let start = Instant::now();
        let deadline = start + self.wait;
        loop {
            if goal(self) {
                return Ok(());
            }
            match self.listeners.next(deadline) {
                Some(i) => self.inbound(i.replica, i.conn, i.payload)?,
                None => {
                    let d = Divergence::Timeout {
                        waiting_for: what.to_string(),
                        waited_ms: start.elapsed().as_millis(),
                    };
                    return Err(self.fail(Line::new("kit", format!("wait: {what}")), d));
                }
            }
        }
    }

    /// True when no message from the node is in flight (everything the model says it sent arrived).
    pub fn node_quiet(&self) -> bool {
        self.state.network.iter().all(|e| e.src != self.nut)
    }

    /// Serves whatever the node sends for `d` (a settle period; the node's requests are still checked).
    pub fn serve_for(&mut self, d: Duration) -> R<()> {
        let deadline = Instant::now() + d;
        while let Some(i) = self.listeners.next(deadline) {
            self.inbound(i.replica, i.conn, i.payload)?;
        }
        Ok(())
    }

    /// An operator change sent to the node; answered when the model's step produces the reply.
    pub fn change(&mut self, op: ChangeOp) -> R<()> {
        let Some(req) = crate::mapping::change_request(op) else {
            return Err(Box::new(Divergence::Kit(format!("{op:?} has no request"))));
        };
        let corr = self.next_corr();
        let (key, frame) = match &req {
            crate::mapping::ChangeRequest::Add(r) => {
                let mut r = r.clone();
                r.cluster_id = self.eps.cluster();
                // The mapping's listener names the mapping's host; the node gets the kit's real one.
                if let (ChangeOp::Add(j), Some(l)) = (op, r.listeners.first_mut()) {
                    let e = self.eps.endpoint(j);
                    l.host = kafka_protocol::protocol::StrBytes::from_string(e.host);
                    l.port = e.port;
                }
                let k = ApiKey::AddRaftVoter;
                (k, codec::request_frame(k as i16, 0, corr, "kraft-kit", &r))
            }
            crate::mapping::ChangeRequest::Remove(r) => {
                let mut r = r.clone();
                r.cluster_id = self.eps.cluster();
                let k = ApiKey::RemoveRaftVoter;
                (k, codec::request_frame(k as i16, 0, corr, "kraft-kit", &r))
            }
        };
        let frame = frame.map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        let mut conn =
            NodeConn::connect(self.node, self.wait).map_err(|e| Box::new(Divergence::Io(e)))?;
        conn.send(&frame).map_err(|e| Box::new(Divergence::Io(e)))?;
        self.report.cover(format!("kit→node {key:?}Request"));
        self.admin.push(PendingAdmin {
            conn,
            op,
            key,
            sent: hex(&frame),
        });
        let a = Action::Change {
            server: self.nut,
            op,
        };
        self.report.push(
            Line::new("kit", story(&a))
                .with_sent(hex(&frame))
                .verdict("ok (answer awaited)".into()),
        );
        let before = self.state.clone();
        self.in_change = true;
        let stepped = self.model_step(a);
        self.in_change = false;
        stepped?;
        // The request is in flight until the node handles it, and other connections race with it:
        // DescribeQuorum may show the state before or after; the kit goes on once it shows after.
        let after = self.state.clone();
        let deadline = Instant::now() + self.wait;
        loop {
            match self.describe_against(0, &[&after, &before], Some(a))? {
                (line, Ok(0)) => {
                    self.report
                        .push(line.verdict("ok (the node applied the change)".into()));
                    return Ok(());
                }
                (line, Ok(_)) if Instant::now() < deadline => {
                    drop(line);
                    // Serve the node meanwhile (a Kafka leader asks the joining voter's ApiVersions).
                    self.serve_for(Duration::from_millis(5))?;
                }
                (line, Ok(_)) => {
                    let d = Divergence::Timeout {
                        waiting_for: format!("the node to apply {}", story(&a)),
                        waited_ms: self.wait.as_millis(),
                    };
                    return Err(self.fail(line, d));
                }
                (line, Err(reason)) => {
                    return Err(self.fail(line, Divergence::Describe { version: 0, reason }))
                }
            }
        }
    }

    /// The model produced an operator reply: the node's answer must be there, with the same code.
    fn operator_reply(&mut self, r: Reply) -> R<()> {
        if r.server != self.nut {
            // A played replica's operator: nothing on the wire.
            return Ok(());
        }
        let mut line = Line::new("node", format!("operator reply to {:?}", r.op));
        line.expected = format!("{:?}", r.error);
        // A reply within the Change step itself (a refusal) answers the request just sent; a later
        // one (the commit) the oldest request still waiting for it.
        let found = if self.in_change {
            self.admin.iter().rposition(|p| p.op == r.op)
        } else {
            self.admin.iter().position(|p| p.op == r.op)
        };
        let Some(mut p) = found.map(|i| self.admin.remove(i)) else {
            return Err(self.fail(
                line,
                Divergence::Kit(format!("model reply {r:?} with no request")),
            ));
        };
        line.sent = std::mem::take(&mut p.sent);
        if p.op != r.op || r.server != self.nut {
            return Err(self.fail(
                line,
                Divergence::Kit(format!("model reply {r:?} for another request")),
            ));
        }
        let payload = match p.conn.recv() {
            Ok(b) => b,
            Err(e) => {
                let d = Divergence::Timeout {
                    waiting_for: format!("the {:?} response ({e})", p.key),
                    waited_ms: p.conn.timeout.as_millis(),
                };
                return Err(self.fail(line, d));
            }
        };
        line.received = hex(&payload);
        let code = codec::response_body(payload, p.key as i16, 0)
            .map_err(|e| e.to_string())
            .and_then(|(_, b)| {
                codec::decode_client_response(b, p.key as i16, 0).map_err(|e| e.to_string())
            })
            .map(|resp| match resp {
                ClientResponse::AddRaftVoter(r) => r.error_code,
                ClientResponse::RemoveRaftVoter(r) => r.error_code,
                _ => -1,
            });
        let code = match code {
            Ok(c) => c,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
        };
        self.report
            .cover(format!("node→kit {:?}Response error {code}", p.key));
        line.observed = format!("{:?}", crate::mapping::error_code(code));
        if code != r.error.code() {
            let d = Divergence::Mismatch {
                expected: line.expected.clone(),
                observed: format!("error code {code}"),
            };
            return Err(self.fail(line, d));
        }
        self.report.push(line.verdict("ok".into()));
        Ok(())
    }

    /// DescribeQuorum at `version`, checked against the model's view of the node.
    pub fn describe(&mut self, version: i16) -> R<()> {
        let state = self.state.clone();
        match self.describe_against(version, &[&state], None)? {
            (line, Ok(_)) => {
                self.report.push(line.verdict("ok".into()));
                Ok(())
            }
            (line, Err(reason)) => Err(self.fail(line, Divergence::Describe { version, reason })),
        }
    }

    /// Asks DescribeQuorum once; `Ok(k)` if the answer is the model's view of the node in `states[k]`
    /// (`states[0]` must be the kit's current state: node-internal appends that explain the answer
    /// are taken in it).
    fn describe_against(
        &mut self,
        version: i16,
        states: &[&State],
        change: Option<Action>,
    ) -> R<(Line, Result<usize, String>)> {
        let mut line = Line::new("kit", format!("DescribeQuorum v{version}"));
        let corr = self.next_corr();
        let frame = kraft::server::client::describe_frame(
            version,
            corr,
            &kraft::wire::describe_quorum::DescribeQuorumRequest::for_metadata_partition(),
        )
        .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        line.sent = hex(&frame);
        let mut conn =
            NodeConn::connect(self.node, self.wait).map_err(|e| Box::new(Divergence::Io(e)))?;
        let payload = match conn.send(&frame).and_then(|_| conn.recv()) {
            Ok(p) => p,
            Err(e) => return Err(self.fail(line, Divergence::Io(e))),
        };
        line.received = hex(&payload);
        // Each state, and (Kafka) each after node-internal appends the model still allows.
        // With an operator change (`change`: states = [after, before]), appends may also have come
        // before the change reached the node.
        let mut candidates: Vec<(usize, usize, State)> = Vec::new();
        for (k, st) in states.iter().enumerate() {
            for appends in 0..=self.appends_left(st) {
                if let Some(s) = self.appended(st, appends) {
                    candidates.push((k, appends, s));
                }
            }
        }
        if let (Some(a), [_, before]) = (change, states) {
            for appends in 1..=self.appends_left(before) {
                let first = self.appended(before, appends);
                if let Some(step) = first.and_then(|b| self.model.step(&b, a)) {
                    if step.replies.is_empty() {
                        candidates.push((0, appends, step.state));
                    }
                }
            }
        }
        let views: Vec<_> = candidates
            .iter()
            .map(|(_, _, st)| {
                model::spec::describe_quorum(
                    &self.model.cfg,
                    self.nut,
                    &st.servers[self.nut as usize],
                )
            })
            .collect();
        line.expected = views
            .iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(" or ");
        let value = codec::response_body(payload, ApiKey::DescribeQuorum as i16, version)
            .map_err(|e| e.to_string())
            .and_then(|(_, body)| {
                self.describe_schema
                    .decode(&body, version)
                    .map_err(|e| e.to_string())
            });
        let mut value = match value {
            Ok(v) => v,
            Err(e) => return Ok((line, Err(e))),
        };
        self.canonical_nodes(&mut value);
        let mut why = Vec::new();
        for (c, view) in views.iter().enumerate() {
            let (k, appends) = (candidates[c].0, candidates[c].1);
            match crate::replay::check_content(&value, view.as_ref(), version) {
                Ok(()) => {
                    if appends > 0 {
                        // Only the first state (the kit's current one) can take appends.
                        if k != 0 {
                            continue;
                        }
                        self.state = candidates[c].2.clone();
                        for _ in 0..appends {
                            self.report.transition(self.nut, &Action::ClientAppend(self.nut));
                        }
                        self.report.push(
                            Line::new("node", format!("{appends} node-internal append(s)"))
                                .verdict("ok (ClientAppend at the node, shown by DescribeQuorum)".into()),
                        );
                    }
                    self.report.cover(format!(
                        "node→kit DescribeQuorumResponse v{version} {}",
                        if view.is_some() {
                            "leader"
                        } else {
                            "non-leader"
                        }
                    ));
                    line.observed = format!("as the model's state {k}");
                    return Ok((line, Ok(k)));
                }
                Err(e) => why.push(e),
            }
        }
        Ok((line, Err(why.join("; or: "))))
    }

    /// Rewrites the `Nodes` listeners of a DescribeQuorum value from the kit's endpoints to the
    /// mapping's (see `encode`).
    fn canonical_nodes(&self, value: &mut crate::schema::StructValue) {
        use crate::schema::Value;
        for (name, v) in &mut value.fields {
            let (true, Value::Array(Some(nodes))) = (name == "Nodes", v) else {
                continue;
            };
            for n in nodes {
                let Value::Struct(n) = n else { continue };
                let Some(id) = n.int("NodeId").and_then(|i| Id::try_from(i).ok()) else {
                    continue;
                };
                if id as usize >= self.eps.ports.len() {
                    continue;
                }
                let real = self.eps.endpoint(id);
                let canon = crate::mapping::endpoint(id);
                for (f, lv) in &mut n.fields {
                    let (true, Value::Array(Some(ls))) = (f == "Listeners", lv) else {
                        continue;
                    };
                    for l in ls {
                        let Value::Struct(l) = l else { continue };
                        let is_real = l.get("Host")
                            == Some(&Value::String(Some(real.host.clone())))
                            && l.int("Port") == Some(i64::from(real.port));
                        if !is_real {
                            continue;
                        }
                        for (lf, x) in &mut l.fields {
                            match lf.as_str() {
                                "Host" => *x = Value::String(Some(canon.host.clone())),
                                "Port" => *x = Value::Int(i64::from(canon.port)),
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The ApiVersions answer of a played replica: the versions `kraft` serves (the kit speaks them) and
/// the `kraft.version` range a voter supports (a Kafka leader asks a joining voter for it before it
/// adds it).
fn api_versions() -> kafka_protocol::messages::ApiVersionsResponse {
    use kafka_protocol::messages::api_versions_response::{ApiVersion, SupportedFeatureKey};
    let supported = kraft::voter_set::SupportedVersions::CURRENT;
    kafka_protocol::messages::ApiVersionsResponse::default()
        .with_supported_features(vec![SupportedFeatureKey::default()
            .with_name(kafka_protocol::protocol::StrBytes::from_static_str("kraft.version"))
            .with_min_version(supported.min)
            .with_max_version(supported.max)])
        .with_api_keys(
        kraft::wire::apis::SERVED_APIS
            .iter()
            .map(|a| {
                ApiVersion::default()
                    .with_api_key(a.key as i16)
                    .with_min_version(a.min)
                    .with_max_version(a.max)
            })
            .collect(),
    )
}
