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
//! - **DescribeQuorum** is asked as a client and checked with `describe::check_content` against
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
use model::types::{Action, ChangeOp, Envelope, Id, Msg, State};
use model::KraftModel;

use super::encode::{self, Endpoints};
use super::net::{Listeners, NodeConn};
use super::report::{Line, Report};
use crate::schema::MessageSchema;

mod client;
pub mod hold;
mod join;
pub mod leader_snapshot;
pub mod race;
mod restart;
pub mod snapshot;

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
    /// The node's own timer fired before steps the kit had taken (`race`): a cut, not a divergence,
    /// unless it races at every timeout the kit's waits allow.
    #[error("the node's timer fired earlier than the kit's lockstep: {0}")]
    TimerRace(String),
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
            Divergence::TimerRace(_) => "timer-race",
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

/// The messages `after` has in flight that `before` has not (a multiset difference).
pub fn new_messages(before: &State, after: &State) -> Vec<Envelope> {
    let mut left = before.network.clone();
    let mut out = Vec::new();
    for e in &after.network {
        if let Some(p) = left.iter().position(|x| x == e) {
            left.remove(p);
        } else {
            out.push(*e);
        }
    }
    out
}

/// The messages a step added to the network from `src` to `dst`.
pub fn added(before: &State, after: &State, src: Id, dst: Id) -> Vec<Envelope> {
    new_messages(before, after)
        .into_iter()
        .filter(|e| e.src == src && e.dst == dst)
        .collect()
}

/// True for the model's responses (the kit delivers each with its request).
pub fn is_response(m: &Msg) -> bool {
    matches!(m, Msg::VoteResponse { .. } | Msg::FetchResponse(_))
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
    /// The node's requests the model has put in flight that have not reached the kit yet, oldest
    /// first (after `settle_node`: none, or with `one_in_flight` those the node queues).
    unarrived: Vec<Envelope>,
    /// The node writes a replica its next request only once the one before it is answered (Apache
    /// Kafka: one request in flight per connection). A declared capability of the node under test
    /// (`--one-in-flight`): the kit then waits only for the oldest request to each replica.
    pub one_in_flight: bool,
    /// Records the node writes on its own once elected (`--elected-appends`; waited for in
    /// `settle_node` when [`hold::appends_due`]).
    pub elected_appends: Vec<u8>,
    /// True while the model takes an operator's Change step (its replies answer that request).
    in_change: bool,
    /// Connections of the played replicas below this id belong to a killed process of the node.
    dead_below: u64,
    /// The kit's recent model states, oldest first (`race`).
    past: Vec<State>,
    /// Timer steps of the node seen so far.
    pub node_timers: u64,
    /// The node's auto-join request awaiting the played leader's answer (`join`).
    join: Option<join::PendingJoin>,
    /// The node's auto-join requests answered so far, in order (by operation).
    pub join_answers: Vec<ChangeOp>,
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
            unarrived: Vec::new(),
            one_in_flight: false,
            elected_appends: Vec::new(),
            in_change: false,
            dead_below: 0,
            past: Vec::new(),
            node_timers: 0,
            join: None,
            join_answers: Vec::new(),
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
        self.track_sent(&step.state);
        self.remember();
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

    /// Sends `msg` as played replica `src` on its connection to the node and reads the answer, recorded in
    /// `line` (its bytes both ways) and in the coverage.
    fn round_trip(
        &mut self,
        src: Id,
        msg: &kraft::node::Message,
        mut line: Line,
    ) -> R<(kraft::node::Message, Line)> {
        let (key, version) = codec::request_api(msg).unwrap_or((-1, -1));
        let corr = self.next_corr();
        let frame = codec::peer_request_frame(msg, corr, "kraft-kit")
            .map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        line.sent = hex(&frame);
        self.report.cover(format!("kit→node {}", encode::name(msg)));
        let conn = self.conn(src)?;
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
        Ok((resp, line))
    }

    /// Delivers in-flight message `env` (from a played replica) to the node over the wire.
    pub fn deliver_to_node(&mut self, env: Envelope) -> R<()> {
        let line = Line::new("kit", story(&Action::Deliver(env)));
        if env.dst != self.nut || !self.state.network.contains(&env) {
            return Err(self.fail(
                line,
                Divergence::Kit(format!("{env:?} is not in flight to the node")),
            ));
        }
        let hw = self.state.servers[env.src as usize].hw;
        let msg = encode::request(&self.eps, env.src, env.dst, &env.msg, hw)
            .map_err(|e| Box::new(Divergence::Kit(e)))?;
        let (resp, mut line) = self.round_trip(env.src, &msg, line)?;
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
            match added(&base, &step.state, kit.nut, env.src)
                .iter()
                .filter(|e| is_response(&e.msg))
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
        let expected: Vec<Envelope> = added(&before, &self.state, self.nut, env.src)
            .into_iter()
            .filter(|e| is_response(&e.msg))
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
                    if let Some(race) = self.answer_race(&before, &env, &observed, line.clone()) {
                        return Err(race);
                    }
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

    /// Notes the node's requests a model step from the current state to `next` puts in flight.
    fn track_sent(&mut self, next: &State) {
        let nut = self.nut;
        self.unarrived.extend(
            new_messages(&self.state, next)
                .into_iter()
                .filter(|e| e.src == nut && !is_response(&e.msg)),
        );
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
                if !added(&self.state, &step.state, env.src, env.dst).contains(env) {
                    continue;
                }
                self.track_sent(&step.state);
                self.remember();
                self.state = step.state;
                self.report.transition(self.nut, &a);
                if !matches!(a, Action::Resign(_) | Action::Fetch { .. }) {
                    self.node_timers += 1;
                }
                // Timers of the node answer no operator; a reply here would be a kit bug.
                if !step.replies.is_empty() {
                    return None;
                }
                return Some(a);
            }
        }
        None
    }

    /// Decodes one frame the node sent to played replica `replica` on connection `conn`: a peer
    /// request, or one handled here (`None`): a connection handshake (ApiVersions, not in the model),
    /// an auto-join request (`join`).
    fn read_peer(
        &mut self,
        replica: Id,
        conn: u64,
        payload: Result<Bytes, String>,
        line: &mut Line,
    ) -> R<Option<(codec::Reply, i32, kraft::node::Message)>> {
        let payload = match payload {
            Ok(p) => p,
            Err(e) => return Err(self.fail(line.clone(), Divergence::Decode(e))),
        };
        line.received = hex(&payload);
        let (reply, incoming) = match codec::decode_request(payload) {
            Ok(x) => x,
            Err(e) => return Err(self.fail(line.clone(), Divergence::Decode(e.to_string()))),
        };
        match incoming {
            Incoming::Peer { from, message } => Ok(Some((reply, from, message))),
            Incoming::Client(req) if join::is_join_request(&req) => self
                .auto_join_from_node(replica, conn, reply, &req, line.clone())
                .map(|_| None),
            Incoming::Client(ClientRequest::ApiVersions(_)) => {
                // Kafka's network client opens every connection with ApiVersions; not in the model.
                line.action = "ApiVersions (connection handshake, not in the model)".into();
                let resp = ClientResponse::ApiVersions(api_versions());
                let frame = codec::client_response(&reply, &resp);
                let key = "node→kit ApiVersionsRequest".into();
                self.handshake(line.clone(), conn, key, frame).map(|_| None)
            }
            Incoming::Unsupported if reply.api_key == ApiKey::ApiVersions as i16 => {
                // A newer ApiVersions than the kit's codec speaks (Kafka 4.4.0 sends v5): refused
                // with UNSUPPORTED_VERSION and the kit's ranges, as a broker does; the client then
                // retries with a version both speak.
                line.action = format!(
                    "ApiVersions v{} (connection handshake): UNSUPPORTED_VERSION, the client retries lower",
                    reply.api_version
                );
                let key = format!(
                    "node→kit ApiVersionsRequest v{} (unsupported by the kit)",
                    reply.api_version
                );
                let frame = codec::unsupported_response(&reply, api_versions());
                self.handshake(line.clone(), conn, key, frame).map(|_| None)
            }
            other => {
                let d = Divergence::Unexpected {
                    observed: format!("{other:?}"),
                };
                Err(self.fail(line.clone(), d))
            }
        }
    }

    /// Handles one frame the node sent to a played replica.
    fn inbound(&mut self, replica: Id, conn: u64, payload: Result<Bytes, String>) -> R<()> {
        let mut line = Line::new("node", String::new());
        let Some((reply, from, message)) = self.read_peer(replica, conn, payload, &mut line)?
        else {
            return Ok(());
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
        } else if let Some(race) = self.request_race(&env, line.clone()) {
            return Err(race);
        } else {
            let d = Divergence::Unexpected {
                observed: format!("{env:?}"),
            };
            return Err(self.fail(line, d));
        };
        if let Some(p) = self.unarrived.iter().position(|e| *e == env) {
            self.unarrived.remove(p);
        }
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

    /// Writes the kit's answer `frame` to a connection handshake of the node (ApiVersions, not in the
    /// model) on connection `conn`.
    fn handshake(
        &mut self,
        mut line: Line,
        conn: u64,
        cover: String,
        frame: Result<Bytes, codec::CodecError>,
    ) -> R<()> {
        self.report.cover(cover);
        let frame = frame.map_err(|e| Box::new(Divergence::Kit(e.to_string())))?;
        line.sent = hex(&frame);
        self.listeners
            .reply(conn, &frame)
            .map_err(|e| Box::new(Divergence::Io(e)))?;
        self.report.push(line.verdict("ok".into()));
        Ok(())
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
        let answers = added(&before, &self.state, replica, self.nut);
        let answer = answers.iter().find(|e| is_response(&e.msg)).copied();
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

    /// Serves the node's requests until `goal` holds of the model state (`what` names it).
    pub fn until(&mut self, what: &str, goal: impl Fn(&Kit) -> bool) -> R<()> {
        let start = Instant::now();
        let deadline = start + self.wait;
        loop {
            if goal(self) {
                return Ok(());
            }
            match self.listeners.next(deadline) {
                Some(i) if i.conn < self.dead_below => {}
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
            if i.conn >= self.dead_below {
                self.inbound(i.replica, i.conn, i.payload)?;
            }
        }
        Ok(())
    }
}

/// The ApiVersions answer of a played replica: the versions `kraft` serves (the kit speaks them) and
/// the `kraft.version` range a voter supports (a Kafka leader asks a joining voter for it before it
/// adds it).
fn api_versions() -> kafka_protocol::messages::ApiVersionsResponse {
    use kafka_protocol::messages::api_versions_response::SupportedFeatureKey;
    let supported = kraft::voter_set::SupportedVersions::CURRENT;
    kafka_protocol::messages::ApiVersionsResponse::default()
        .with_supported_features(vec![SupportedFeatureKey::default()
            .with_name(kafka_protocol::protocol::StrBytes::from_static_str(
                "kraft.version",
            ))
            .with_min_version(supported.min)
            .with_max_version(supported.max)])
        .with_api_keys(kraft::wire::apis::api_versions())
}
