//! The kit as a client of the node: operator changes (AddRaftVoter, RemoveRaftVoter) and their
//! answers, and DescribeQuorum checked against the model's view.

use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use kraft::node::ClientResponse;
use kraft::server::codec;
use model::types::{Action, ChangeOp, Id, Reply, State};

use super::{hex, story, Divergence, Kit, Line, PendingAdmin, R};
use crate::kit::net::NodeConn;

impl Kit {
    /// An operator change sent to the node; answered when the model's step produces the reply.
    pub fn change(&mut self, op: ChangeOp) -> R<()> {
        let dir =
            crate::mapping::request_dir(&self.state, self.model.cfg.bootstrap(), self.nut, op);
        let Some(req) = crate::mapping::change_request(op, dir) else {
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
            // The kit's graphs have no UpdateRaftVoter steps (the gate replays them in process).
            crate::mapping::ChangeRequest::Update(_) => {
                return Err(Box::new(Divergence::Kit(format!(
                    "{op:?}: the kit does not send UpdateRaftVoter"
                ))))
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
    pub(super) fn operator_reply(&mut self, r: Reply) -> R<()> {
        if r.server != self.nut {
            // A played replica's answer: to the node's auto-join request, else nothing on the wire.
            return self.answer_join(r);
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
                ClientResponse::UpdateRaftVoter(r) => r.error_code,
                _ => -1,
            });
        let code = match code {
            Ok(c) => c,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
        };
        self.report
            .cover(format!("node→kit {:?}Response error {code}", p.key));
        line.observed = format!("{:?}", crate::mapping::error_code(code));
        if code != crate::mapping::kafka_code(r.error) {
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

    /// Polls DescribeQuorum v0 until the node's log shows `n` records of its own (taken as
    /// `ClientAppend` steps of the node when its log end offset shows them), serving the node
    /// between polls; a timeout divergence after the kit's wait.
    pub fn await_node_appends(&mut self, n: u8) -> R<()> {
        let start = Instant::now();
        while self.state.history.data < n {
            if start.elapsed() >= self.wait {
                let d = Divergence::Timeout {
                    waiting_for: format!("{n} records of the node's own"),
                    waited_ms: start.elapsed().as_millis(),
                };
                return Err(self.fail(Line::new("kit", "wait: the node's records".into()), d));
            }
            self.describe(0)?;
            self.serve_for(Duration::from_millis(50))?;
        }
        Ok(())
    }

    /// Asks DescribeQuorum once; `Ok(k)` if the answer is the model's view of the node in `states[k]`
    /// (`states[0]` must be the kit's current state: node-internal appends that explain the answer
    /// are taken in it).
    pub(super) fn describe_against(
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
        // DescribeQuorum cannot tell the two orders apart; appends before the change come first (a
        // Kafka controller writes its bootstrap records once it sees the HW, before an operator's
        // change in the scenarios), right after the exact "after" state.
        if let (Some(a), [_, before]) = (change, states) {
            let mut at = 1;
            for appends in 1..=self.appends_left(before) {
                let first = self.appended(before, appends);
                if let Some(step) = first.and_then(|b| self.model.step(&b, a)) {
                    if step.replies.is_empty() {
                        candidates.insert(at.min(candidates.len()), (0, appends, step.state));
                        at += 1;
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
        let keys: Vec<_> = candidates
            .iter()
            .map(|(_, _, st)| crate::describe::Keys::of(&self.model.cfg, st, self.nut))
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
            match crate::describe::check_content(&value, view.as_ref(), &keys[c], version) {
                Ok(()) => {
                    // Only the first state (the kit's current one) takes appends; another state
                    // with appends (the change not applied yet, the node's records already written)
                    // is reported as that state, and the caller polls on.
                    if appends > 0 && k == 0 {
                        self.state = candidates[c].2.clone();
                        for _ in 0..appends {
                            self.report
                                .transition(self.nut, &Action::ClientAppend(self.nut));
                        }
                        self.report.push(
                            Line::new("node", format!("{appends} node-internal append(s)"))
                                .verdict(
                                    "ok (ClientAppend at the node, shown by DescribeQuorum)".into(),
                                ),
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
    pub(super) fn canonical_nodes(&self, value: &mut crate::schema::StructValue) {
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
