//! Fetch long-poll, the leader's side (Kafka's `fetchPurgatory`): a Fetch with nothing to say is parked
//! until the leader's log grows past its fetch offset, the HW moves, the leader leaves its role or epoch,
//! or the request's `MaxWaitMs` passes. Time comes in as input: the deadline is part of
//! [`Node::next_deadline`], and every input ends by answering the parked fetches that are due
//! ([`Node::settle_parked_fetches`]). The core only decides when; the shell writes the response to the
//! connection the request came on (responses to one requester leave in the order of its fetches).

use kafka_protocol::messages::FetchResponse;

use crate::log::RaftLog;
use crate::voter_set::ReplicaKey;

use super::messages::{self, errors};
use super::types::*;
use super::{Node, RoleState};

/// What a follower sends as `MaxWaitMs` (Kafka's `KafkaRaftClient.MAX_FETCH_WAIT_MS`, not configurable
/// there either).
pub const FETCH_MAX_WAIT_MS: Millis = 500;

/// At most this many fetches are parked at once (one per requester: a newer fetch answers the older);
/// beyond it a fetch is answered at once. Bounds the memory hostile requesters can pin.
pub const MAX_PARKED_FETCHES: usize = 1024;

/// The parts of a Fetch request the leader keeps while it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FetchArgs {
    pub replica: ReplicaKey,
    /// `(current leader epoch, fetch offset, last fetched epoch)` as the request had them.
    pub echo: messages::FetchEcho,
    /// The request's `MaxBytes` (0 if negative: still one whole batch).
    pub max_bytes: usize,
    /// KIP-1166: the follower's HW (`i64::MAX` below Fetch v18, so it never ends a wait).
    pub follower_hw: i64,
}

/// A Fetch the leader has not answered yet.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ParkedFetch {
    from: i32,
    args: FetchArgs,
    /// Leader epoch when parked: any other epoch (or role) ends the wait with NOT_LEADER_OR_FOLLOWER.
    epoch: i32,
    /// The HW the parked answer carries: any other HW ends the wait (Kafka completes every parked fetch
    /// when the leader's HW moves).
    high_watermark: i64,
    deadline: Millis,
    /// The answer computed when the fetch came in, sent as is if the wait times out (as Kafka does).
    original: FetchResponse,
}

impl Node {
    /// Parks a fetch that has nothing to say yet (or answers it at once when too many are parked).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn park_fetch(
        &mut self,
        now: Millis,
        from: i32,
        args: FetchArgs,
        max_wait_ms: i32,
        high_watermark: i64,
        original: FetchResponse,
        out: &mut Output,
    ) {
        if self.parked_fetches.len() >= MAX_PARKED_FETCHES {
            out.replies.push((from, Message::FetchResponse(original)));
            return;
        }
        self.parked_fetches.push(ParkedFetch {
            from,
            args,
            epoch: self.election.epoch,
            high_watermark,
            deadline: now.saturating_add(Millis::try_from(max_wait_ms).unwrap_or(0)),
            original,
        });
    }

    /// The earliest `MaxWaitMs` deadline of the parked fetches.
    pub(super) fn parked_fetch_deadline(&self) -> Option<Millis> {
        self.parked_fetches.iter().map(|p| p.deadline).min()
    }

    /// A new fetch from `from` came in: its parked fetches are answered first, in order, with what the
    /// leader has now (the requester has moved on; its connection answers in request order).
    pub(super) fn answer_parked_fetches_of(&mut self, now: Millis, from: i32, out: &mut Output) {
        if !self.parked_fetches.iter().any(|p| p.from == from) {
            return;
        }
        let (mine, others) = std::mem::take(&mut self.parked_fetches)
            .into_iter()
            .partition(|p| p.from == from);
        self.parked_fetches = others;
        for p in mine {
            self.complete_parked(now, p, out);
        }
    }

    /// Ends every wait that is over after an input: the leader left its role or epoch (answered
    /// NOT_LEADER_OR_FOLLOWER, as Kafka's resigning or following leader does), its log grew past the
    /// fetch offset or its HW moved (answered with what it has now), or `MaxWaitMs` passed (the original
    /// answer). Completing one fetch can move the HW, so this repeats until nothing changes.
    pub(super) fn settle_parked_fetches(&mut self, now: Millis, out: &mut Output) {
        while !self.parked_fetches.is_empty() {
            let leading = matches!(self.role, RoleState::Leader(_));
            let epoch = self.election.epoch;
            let end = self.log.end_offset();
            let hw = self.high_watermark().unwrap_or(-1);
            let due = |p: &ParkedFetch| {
                !leading
                    || p.epoch != epoch
                    || end > p.args.echo.fetch_offset
                    || hw != p.high_watermark
                    || now >= p.deadline
            };
            let Some(first) = self.parked_fetches.iter().position(due) else {
                return;
            };
            let p = self.parked_fetches.remove(first);
            self.complete_parked(now, p, out);
        }
    }

    fn complete_parked(&mut self, now: Millis, p: ParkedFetch, out: &mut Output) {
        let leading = matches!(self.role, RoleState::Leader(_));
        let moved = self.log.end_offset() > p.args.echo.fetch_offset
            || self.high_watermark().unwrap_or(-1) != p.high_watermark;
        if !leading || p.epoch != self.election.epoch {
            let mut parts = self.fetch_response_base();
            parts.error = errors::NOT_LEADER_OR_FOLLOWER;
            parts.echo = Some(p.args.echo);
            out.replies.push((
                p.from,
                Message::FetchResponse(messages::fetch_response(parts)),
            ));
        } else if moved {
            let mut parts = self.fetch_response_base();
            parts.echo = Some(p.args.echo);
            let hw_advanced = self.try_complete_fetch(now, &p.args, &mut parts);
            out.replies.push((
                p.from,
                Message::FetchResponse(messages::fetch_response(parts)),
            ));
            if hw_advanced {
                self.on_leader_hw_advanced(now, out);
            }
        } else {
            out.replies
                .push((p.from, Message::FetchResponse(p.original)));
        }
    }
}
