//! Membership requests served by a leader's core, and auto-join (KIP-1186) on the implementation side:
//! the model's `AutoJoin{replica, leader}` is the request the replica's own core sends
//! (`Harness::auto_join_now`; its period is off, `Harness::auto_join_on_command_only`), handed to the
//! leader's core as its shell hands over a peer's request (see `mapping::auto_join`).

use std::sync::Arc;

use kraft::log::RaftLog;
use kraft::node::{ClientId, ClientRequest, Harness, Message};
use model::types::{ChangeOp, ErrorCode, Id};

use super::{Applied, Cluster};
use crate::mapping;

impl Cluster {
    /// The model's `AutoJoin{replica, leader}`: `replica` must send exactly one request, to `leader`,
    /// which serves it ([`Self::serve_change`]). An add the leader answers NONE within the step was
    /// acknowledged at append: its VotersRecord, the leader's last record, joins [`Self::append_acks`].
    pub(super) fn auto_join(
        &mut self,
        replica: Id,
        leader: Id,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let now = self.tick_clock(replica);
        let mut out = Arc::make_mut(&mut self.nodes[replica as usize]).auto_join_now(now);
        let sent = std::mem::take(&mut out.requests);
        self.absorb(replica, out, None, applied)?;
        let (to, msg) = match <[_; 1]>::try_from(sent) {
            Ok([sent]) => sent,
            Err(sent) => {
                return Err(format!(
                    "auto-join at {replica} sent {} requests, the model sends one to {leader}: {sent:?}",
                    sent.len()
                ))
            }
        };
        if to != i32::from(leader) {
            return Err(format!(
                "auto-join at {replica} asked {to}, the model asks {leader}"
            ));
        }
        let req = mapping::auto_join::as_served(&msg)?;
        let op = mapping::auto_join::op_of(&req)?;
        let answered = applied.replies.len();
        self.serve_change(leader, op, req, applied)?;
        let acked = applied.replies[answered..]
            .iter()
            .any(|r| r.server == leader && r.op == op && r.error == ErrorCode::None);
        if matches!(op, ChangeOp::Add(_)) && acked {
            let node = &self.nodes[leader as usize];
            let ack = mapping::auto_join::append_ack(node.log().end_offset() - 1, node.epoch())?;
            self.append_acks.push(ack);
        }
        Ok(())
    }

    /// A membership request (or the kraft.version upgrade's UpdateFeatures) for the model's `op` served
    /// by `server`'s core (`handle_client`, as its shell hands over an admin client's or a peer's
    /// request); its answer, now or at commit, is the model's reply to `op` at `server`. The ApiVersions round trip to a voter being added is answered
    /// within the step (`mapping`).
    pub(super) fn serve_change(
        &mut self,
        server: Id,
        op: ChangeOp,
        req: ClientRequest,
        applied: &mut Applied,
    ) -> Result<(), String> {
        let client = self.next_client;
        self.next_client += 1;
        self.clients.insert(client, (server, op));
        let now = self.tick_clock(server);
        let mut out = Arc::make_mut(&mut self.nodes[server as usize]).handle_client(
            now,
            ClientId(client),
            req,
        );
        let (probes, rest) = out
            .requests
            .into_iter()
            .partition(|(_, m)| matches!(m, Message::ApiVersionsRequest(_)));
        out.requests = rest;
        self.absorb(server, out, None, applied)?;
        for (dst, req) in probes {
            self.answer_api_versions(server, dst, req, applied)?;
        }
        Ok(())
    }

    /// The AddRaftVoter requests of auto-join the leaders acknowledged at append, as the model's
    /// `History::append_acks`: (offset, epoch) of each VotersRecord, in order.
    pub fn append_acks(&self) -> &[(u8, u8)] {
        &self.append_acks
    }
}
