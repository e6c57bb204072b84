//! Auto-join (KIP-1186, Kafka 4.2+, `controller.quorum.auto.join.enable`): a follower that is not a voter
//! adds itself. The rule is Kafka 4.4's `pollFollowerAsObserver`: with auto-join on, `kraft.version` ≥ 1
//! and a directory id, once per update-voter-set period (one fetch timeout, the timer UpdateRaftVoter uses:
//! `timers::PeriodDue`; from the moment the replica
//! follows in an epoch, and again from each attempt and each answer) it sends the leader
//!
//! - RemoveRaftVoter of the voter that has its id but another directory id (the same node on a new
//!   disk), if the latest voter set has one;
//! - else AddRaftVoter v1 for itself, its listeners, `AckWhenCommitted = false` (answered once the
//!   VotersRecord is appended).
//!
//! Kafka sends the request in place of that poll's Fetch; here it rides on the follower's next Fetch,
//! and both go (as UpdateRaftVoter does, `update_voter.rs`). Answers NONE, REQUEST_TIMED_OUT and
//! DUPLICATE_VOTER restart the period; other errors are logged (Kafka's `handleUnexpectedError`) and the
//! next period retries.

use kafka_protocol::messages::add_raft_voter_request::Listener;
use kafka_protocol::messages::{AddRaftVoterRequest, RemoveRaftVoterRequest};
use kafka_protocol::protocol::StrBytes;

use super::messages::errors;
use super::timers::PeriodDue;
use super::types::*;
use super::{Node, RoleState};

/// What an observer with auto-join sends when its period has passed ([`Node::auto_join_request`]).
#[derive(Clone, Debug, PartialEq)]
pub enum AutoJoin {
    /// The voter with this node's id and another directory id goes first.
    RemoveStale(crate::voter_set::ReplicaKey),
    /// This node asks to become a voter.
    Add,
}

impl Node {
    /// What auto-join would send now, regardless of its period: `None` when it is off, this node is a
    /// voter, has no directory id, or `kraft.version` is 0.
    pub fn auto_join_request(&self) -> Option<AutoJoin> {
        if !self.config.auto_join || self.kraft_version() < 1 || self.local.directory_id.is_none() {
            return None;
        }
        let latest = self.history.latest();
        if latest.is_voter(&self.local) {
            return None;
        }
        match latest.voter(self.local.id) {
            Some(stale) => Some(AutoJoin::RemoveStale(stale.key)),
            None => Some(AutoJoin::Add),
        }
    }

    /// Called as a follower sends a Fetch: arms the period when it starts following in an epoch, and once
    /// it has passed sends the auto-join request, if any.
    pub(super) fn maybe_send_auto_join(&mut self, now: Millis, out: &mut Output) {
        let RoleState::Follower { leader, .. } = self.role else {
            self.auto_join_due = None;
            return;
        };
        if !self.config.auto_join || !self.auto_join_periodic {
            return;
        }
        let epoch = self.election.epoch;
        let period = self.update_voter_set_period();
        if !PeriodDue::passed(&mut self.auto_join_due, epoch, now, period) {
            return;
        }
        self.send_auto_join(now, leader, out);
    }

    /// [`Harness::auto_join_now`](super::Harness::auto_join_now): the request the period would send,
    /// sent now to the leader this follower follows.
    pub(super) fn auto_join_on_command(&mut self, now: Millis) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        if let RoleState::Follower { leader, .. } = self.role {
            self.send_auto_join(now, leader, &mut out);
        }
        self.finish(now, &mut out);
        out
    }

    /// Sends [`Node::auto_join_request`] to `leader`, if there is one, and restarts the period.
    fn send_auto_join(&mut self, now: Millis, leader: i32, out: &mut Output) {
        let Some(request) = self.auto_join_request() else {
            return;
        };
        let epoch = self.election.epoch;
        self.restart_auto_join_period(now);
        let cluster_id = Some(StrBytes::from_string(self.config.cluster_id.clone()));
        let message = match request {
            AutoJoin::RemoveStale(stale) => {
                tracing::info!(
                    node = self.local.id,
                    leader,
                    epoch,
                    "auto-join: a voter has this node's id and another directory id; sending RemoveRaftVoter for it"
                );
                Message::RemoveRaftVoterRequest(
                    RemoveRaftVoterRequest::default()
                        .with_cluster_id(cluster_id)
                        .with_voter_id(stale.id)
                        .with_voter_directory_id(stale.directory_or_nil()),
                )
            }
            AutoJoin::Add => {
                tracing::info!(
                    node = self.local.id,
                    leader,
                    epoch,
                    "auto-join: not a voter; sending AddRaftVoter"
                );
                Message::AddRaftVoterRequest(
                    AddRaftVoterRequest::default()
                        .with_cluster_id(cluster_id)
                        .with_timeout_ms(
                            i32::try_from(self.config.request_timeout_ms).unwrap_or(i32::MAX),
                        )
                        .with_voter_id(self.local.id)
                        .with_voter_directory_id(self.local.directory_or_nil())
                        .with_listeners(
                            self.config
                                .listeners
                                .iter()
                                .map(|e| {
                                    Listener::default()
                                        .with_name(StrBytes::from_string(e.name.clone()))
                                        .with_host(StrBytes::from_string(e.host.clone()))
                                        .with_port(e.port)
                                })
                                .collect(),
                        ),
                )
            }
        };
        out.requests.push((leader, message));
    }

    fn restart_auto_join_period(&mut self, now: Millis) {
        let period = self.update_voter_set_period();
        self.auto_join_due = Some(PeriodDue::start(self.election.epoch, now, period));
    }

    /// The leader's answer to an auto-join request (`code`, of `api`): NONE, REQUEST_TIMED_OUT and
    /// DUPLICATE_VOTER restart the period, as Kafka's `handleAddVoterResponse`; anything else is logged.
    pub(super) fn on_auto_join_response(&mut self, now: Millis, from: i32, api: &str, code: i16) {
        if !matches!(self.role, RoleState::Follower { .. }) {
            return;
        }
        if matches!(
            code,
            errors::NONE | errors::REQUEST_TIMED_OUT | errors::DUPLICATE_VOTER
        ) {
            self.restart_auto_join_period(now);
        }
        if code != errors::NONE {
            tracing::info!(
                node = self.local.id,
                leader = from,
                error = code,
                message = crate::node::error_message(code).unwrap_or(""),
                "auto-join: {api} refused"
            );
        }
    }
}
