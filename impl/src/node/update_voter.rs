//! A follower that is a voter brings its own entry of the voter set up to date (KIP-853): when its
//! listeners or supported `kraft.version` range differ from that entry and `kraft.version` ≥ 1, it sends
//! UpdateRaftVoter (API 82) to the leader, as Kafka 4.x's `pollFollowerAsVoter` does. At `kraft.version`
//! 0 (static voters, whose entries have no directory id) it sends it until its leader of this epoch has
//! answered NONE or UNSUPPORTED_VERSION (Kafka 4.4's `hasUpdatedLeader`): the leader keeps the entry in
//! memory for the `kraft.version` upgrade (`kraft_version.rs`). Kafka checks once per update-voter period
//! (Kafka 4.4: one fetch timeout, [`PeriodDue`]) from the moment the replica follows, and sends the
//! request in place of that poll's Fetch; here the check rides on the follower's next Fetch, and both go.

use kafka_protocol::messages::update_raft_voter_request::{KRaftVersionFeature, Listener};
use kafka_protocol::messages::{UpdateRaftVoterRequest, UpdateRaftVoterResponse};
use kafka_protocol::protocol::StrBytes;

use super::messages::errors;
use super::timers::PeriodDue;
use super::types::*;
use super::{Node, RoleState};

impl Node {
    /// Kafka 4.4's `updateVoterPeriodMs`: one fetch timeout before the first attempt, and between attempts.
    pub(super) fn update_voter_set_period(&self) -> Millis {
        self.config.fetch_timeout_ms
    }

    /// Called as a follower sends a Fetch: arms the period when it starts following in an epoch, and once
    /// it has passed sends UpdateRaftVoter if this voter's entry is out of date.
    pub(super) fn maybe_send_update_voter(&mut self, now: Millis, out: &mut Output) {
        let RoleState::Follower { .. } = self.role else {
            self.update_voter_due = None;
            return;
        };
        let epoch = self.election.epoch;
        let period = self.update_voter_set_period();
        if !PeriodDue::passed(&mut self.update_voter_due, epoch, now, period) {
            return;
        }
        self.update_voter_due = Some(PeriodDue::start(epoch, now, period));
        if let Some((leader, req)) = self.update_voter_request_now() {
            tracing::info!(
                node = self.local.id,
                leader,
                epoch,
                kraft_version = self.kraft_version(),
                "own voter entry differs from this node's listeners, directory id or kraft.version range; sending UpdateRaftVoter"
            );
            out.requests
                .push((leader, Message::UpdateRaftVoterRequest(req)));
        }
    }

    /// The UpdateRaftVoter this follower sends its leader at its next check, whatever the period: `None`
    /// if it is no follower or its entry needs no report (the one rule of what it sends).
    pub(super) fn update_voter_request_now(&self) -> Option<(i32, UpdateRaftVoterRequest)> {
        let RoleState::Follower { leader, .. } = self.role else {
            return None;
        };
        let epoch = self.election.epoch;
        let updated_leader = self.update_voter_taken_in == Some(epoch);
        let local = self.local_voter_node();
        let send = if self.kraft_version() >= 1 {
            self.history.latest().voter_node_needs_update(&local)
        } else {
            // Kafka 4.4 `shouldSendUpdateVoteRequest`: only a voter reports itself.
            !updated_leader && self.history.latest().contains_id(self.local.id)
        };
        if !send {
            return None;
        }
        let req = UpdateRaftVoterRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_current_leader_epoch(epoch)
            .with_voter_id(self.local.id)
            .with_voter_directory_id(self.local.directory_or_nil())
            .with_listeners(
                local
                    .listeners
                    .iter()
                    .map(|e| {
                        Listener::default()
                            .with_name(StrBytes::from_string(e.name.clone()))
                            .with_host(StrBytes::from_string(e.host.clone()))
                            .with_port(e.port)
                    })
                    .collect(),
            )
            .with_k_raft_version_feature(
                KRaftVersionFeature::default()
                    .with_min_supported_version(local.supported.min)
                    .with_max_supported_version(local.supported.max),
            );
        Some((leader, req))
    }

    /// UpdateRaftVoter from a peer: served as the client request the shell decodes it as, answered to
    /// the peer.
    pub(super) fn on_peer_update_voter(
        &mut self,
        now: Millis,
        from: i32,
        req: UpdateRaftVoterRequest,
        out: &mut Output,
    ) {
        // A client id no shell hands out: the answer is taken back out of the client replies.
        let id = ClientId(u64::MAX);
        self.on_update_voter(now, id, req, out);
        if let Some(i) = out.client_replies.iter().position(|(c, _)| *c == id) {
            if let (_, ClientResponse::UpdateRaftVoter(resp)) = out.client_replies.remove(i) {
                out.replies
                    .push((from, Message::UpdateRaftVoterResponse(resp)));
            }
        }
    }

    /// The leader's answer: logged when refused (the next period retries while the entry differs). NONE
    /// or UNSUPPORTED_VERSION from this epoch's leader ends the reports at `kraft.version` 0 and counts as
    /// a successful fetch (Kafka's `handleUpdateVoterResponse`).
    pub(super) fn on_update_voter_response(
        &mut self,
        now: Millis,
        from: i32,
        resp: UpdateRaftVoterResponse,
    ) {
        let taken = matches!(resp.error_code, errors::NONE | errors::UNSUPPORTED_VERSION);
        let epoch = self.election.epoch;
        if let (true, RoleState::Follower { leader, .. }, Some(d)) =
            (taken, &self.role, self.update_voter_due)
        {
            if *leader == from && d.epoch() == epoch {
                self.update_voter_taken_in = Some(epoch);
                self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
            }
        }
        if resp.error_code != errors::NONE {
            tracing::info!(
                node = self.local.id,
                leader = from,
                error = resp.error_code,
                message = crate::node::error_message(resp.error_code).unwrap_or(""),
                "UpdateRaftVoter refused"
            );
        }
    }
}
