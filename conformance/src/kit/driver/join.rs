//! The node under test as an auto-joining observer (KIP-1186): its RemoveRaftVoter of a stale key and
//! its AddRaftVoter, sent to the played leader it follows, are checked against the model's
//! `Action::AutoJoin` and answered as the model's leader answers them: a removal once committed (the
//! played voters fetch at once, in the model), an addition once appended (`AckWhenCommitted = false`).
//! The answer is written before the node's next frame is read, so a connection's answers stay in
//! request order, as Kafka's network client needs.

use kafka_protocol::messages::{AddRaftVoterResponse, RemoveRaftVoterResponse};
use kraft::node::{ClientRequest, ClientResponse};
use kraft::server::codec;
use model::types::{Action, AutoJoinRequest, ChangeOp, Id, Reply};

use super::{hex, story, Divergence, Kit, Line, R};
use crate::mapping;

/// An auto-join request of the node the played leader took and has not answered yet.
pub(super) struct PendingJoin {
    conn: u64,
    reply: codec::Reply,
    op: ChangeOp,
    line: Line,
}

/// Rounds of the played voters' fetches a removal needs at most to commit: one brings the record,
/// the next reports it.
const COMMIT_ROUNDS: usize = 3;

impl Kit {
    /// Checks the node's auto-join request `req` to played replica `leader` against the model's
    /// `AutoJoin` of the node, takes that step and answers as the model does.
    pub(super) fn auto_join_from_node(
        &mut self,
        leader: Id,
        conn: u64,
        reply: codec::Reply,
        req: &ClientRequest,
        mut line: Line,
    ) -> R<()> {
        let me = self.nut;
        let (observed, what) = match self.join_request_of(req, reply.api_version) {
            Ok(x) => x,
            Err(e) => return Err(self.fail(line, Divergence::Decode(e))),
        };
        let name = match req {
            ClientRequest::AddRaftVoter { .. } => "AddRaftVoterRequest",
            _ => "RemoveRaftVoterRequest",
        };
        self.report
            .cover(format!("node→kit {name} v{}", reply.api_version));
        line.observed = observed
            .clone()
            .map_or(what.clone(), |r| format!("{what}: {r:?}"));
        let expected = self
            .model
            .may_auto_join(&self.state, me, leader)
            .then(|| {
                self.model
                    .auto_join_request(&self.state.servers[me as usize], me)
            })
            .flatten();
        line.expected = format!("{expected:?}");
        let req = match (expected, observed) {
            (None, _) => {
                let d = Divergence::Unexpected {
                    observed: format!(
                        "{what} to {leader} (the model's node sends no auto-join request now)"
                    ),
                };
                return Err(self.fail(line, d));
            }
            (Some(want), Ok(got)) if want == got => want,
            (Some(want), got) => {
                let d = Divergence::Mismatch {
                    expected: format!("{want:?}"),
                    observed: format!("{got:?}"),
                };
                return Err(self.fail(line, d));
            }
        };
        let a = Action::AutoJoin {
            replica: me,
            leader,
        };
        line.action = format!("node step {}", story(&a));
        self.node_steps += 1;
        let op = match req {
            AutoJoinRequest::RemoveStale { .. } => ChangeOp::Remove(me),
            AutoJoinRequest::Add => ChangeOp::Add(me),
        };
        self.join = Some(PendingJoin {
            conn,
            reply,
            op,
            line,
        });
        self.model_step(a)?;
        // A removal is answered at commit: the played voters of the leader's latest set fetch.
        for _ in 0..COMMIT_ROUNDS {
            if self.join.is_none() {
                return Ok(());
            }
            let latest = model::spec::latest_voters(
                self.model.cfg.bootstrap(),
                &self.state.servers[leader as usize].log,
            );
            let voters: Vec<Id> = model::types::ids(latest.ids())
                .filter(|&r| r != me && r != leader)
                .collect();
            for r in voters {
                self.played_fetch(r, leader)?;
            }
        }
        match self.join.take() {
            None => Ok(()),
            Some(p) => Err(self.fail(
                p.line,
                Divergence::Kit(format!(
                    "the model's leader did not answer {op:?} after {COMMIT_ROUNDS} rounds of fetches"
                )),
            )),
        }
    }

    /// The model's auto-join request the node's `req` (at `version`) is, or why it is none, and its
    /// name for the report.
    fn join_request_of(
        &self,
        req: &ClientRequest,
        version: i16,
    ) -> Result<(Result<AutoJoinRequest, String>, String), String> {
        let me = self.nut;
        let cluster = Some(self.eps.cluster_id.as_str());
        Ok(match req {
            ClientRequest::RemoveRaftVoter(r) => {
                let what = format!(
                    "RemoveRaftVoterRequest v{version} (id {}, directory {})",
                    r.voter_id, r.voter_directory_id
                );
                let got = if r.cluster_id.as_deref() != cluster {
                    Err(format!("cluster id {:?}", r.cluster_id))
                } else if r.voter_id != i32::from(me) {
                    Err(format!("voter id {} is not the node's", r.voter_id))
                } else {
                    mapping::model_dir(r.voter_directory_id, me, "voter directory id")
                        .map(|dir| AutoJoinRequest::RemoveStale { dir })
                };
                (got, what)
            }
            ClientRequest::AddRaftVoter {
                request: r,
                ack_when_committed,
            } => {
                let listeners: Vec<String> = r
                    .listeners
                    .iter()
                    .map(|l| format!("{}://{}:{}", l.name, l.host, l.port))
                    .collect();
                let what = format!(
                    "AddRaftVoterRequest v{version} (id {}, directory {}, listeners {listeners:?}, \
                     AckWhenCommitted {ack_when_committed})",
                    r.voter_id, r.voter_directory_id
                );
                let s = &self.state.servers[me as usize];
                let own = self.eps.endpoint(me);
                let endpoint = format!("{}://{}:{}", own.name, own.host, own.port);
                let got = if r.cluster_id.as_deref() != cluster {
                    Err(format!("cluster id {:?}", r.cluster_id))
                } else if version != 1 || *ack_when_committed {
                    Err("not v1 with AckWhenCommitted = false (KIP-1186)".into())
                } else if r.voter_id != i32::from(me)
                    || r.voter_directory_id != mapping::directory_id_at(me, s.dir)
                {
                    Err("a key other than the node's own".into())
                } else if listeners != [endpoint.clone()] {
                    Err(format!("listeners other than its own {endpoint}"))
                } else {
                    Ok(AutoJoinRequest::Add)
                };
                (got, what)
            }
            other => return Err(format!("{other:?} is no auto-join request")),
        })
    }

    /// Played replica `r` fetches from played leader `leader`: request and answer in the model only.
    pub fn played_fetch(&mut self, r: Id, leader: Id) -> R<()> {
        self.kit(Action::Fetch { replica: r, leader })?;
        self.settle_played()
    }

    /// Delivers, in the model only, every message one played replica has in flight to another, until
    /// none is left (those to the node stay in flight).
    pub fn settle_played(&mut self) -> R<()> {
        let nut = self.nut;
        for _ in 0..64 {
            let next = self
                .state
                .network
                .iter()
                .find(|e| e.src != nut && e.dst != nut)
                .copied();
            let Some(env) = next else {
                return Ok(());
            };
            self.kit(Action::Deliver(env))?;
        }
        Err(Box::new(Divergence::Kit(
            "settle: more than 64 messages between played replicas".into(),
        )))
    }

    /// The model's leader answered an operator request (`r.server` a played replica): if it answers the
    /// node's auto-join request, the answer goes to the node (a played replica's own operator: nothing).
    pub(super) fn answer_join(&mut self, r: Reply) -> R<()> {
        let Some(p) = self.join.take_if(|p| p.op == r.op) else {
            return Ok(());
        };
        let mut line = p.line;
        let code = mapping::kafka_code(r.error);
        let (resp, name) = match r.op {
            ChangeOp::Add(_) => (
                ClientResponse::AddRaftVoter(AddRaftVoterResponse::default().with_error_code(code)),
                "AddRaftVoterResponse",
            ),
            _ => (
                ClientResponse::RemoveRaftVoter(
                    RemoveRaftVoterResponse::default().with_error_code(code),
                ),
                "RemoveRaftVoterResponse",
            ),
        };
        let frame = match codec::client_response(&p.reply, &resp) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(line, Divergence::Kit(e.to_string()))),
        };
        line.sent = hex(&frame);
        if let Err(e) = self.listeners.reply(p.conn, &frame) {
            return Err(self.fail(line, Divergence::Io(e)));
        }
        self.report.cover(format!("kit→node {name} error {code}"));
        self.join_answers.push(r.op);
        self.report
            .push(line.verdict(format!("ok (answered {:?})", r.error)));
        Ok(())
    }
}

/// True for the requests an auto-joining node sends its leader.
pub(super) fn is_join_request(req: &ClientRequest) -> bool {
    matches!(
        req,
        ClientRequest::AddRaftVoter { .. } | ClientRequest::RemoveRaftVoter(_)
    )
}
