//! AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853) at the leader.
//!
//! Every precondition lives in one function, [`Node::check_change`], which returns a typed [`Refusal`]
//! (the model's `spec::check_change` has the same shape); its first part, [`Node::check_request`], is what
//! an AddRaftVoter must pass before the leader asks the new voter for its ApiVersions (`add_check.rs`). A
//! refusal becomes a Kafka error code only in [`Refusal::error_code`], when the reply is built.

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse,
    UpdateRaftVoterRequest, UpdateRaftVoterResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::log::{RaftLog, Record};
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

use super::add_check::AddCheck;
use super::messages::{error_message, errors};
use super::types::*;
use super::{Node, RoleState};

/// A membership change as the leader checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeOp {
    /// AddRaftVoter: the new voter with its listeners and the `kraft.version` range its ApiVersions answer
    /// gave (KIP-853: the leader asks the new voter before adding it).
    Add(VoterNode),
    /// RemoveRaftVoter.
    Remove(ReplicaKey),
    /// UpdateRaftVoter at the requester's `CurrentLeaderEpoch`: new listeners and supported range.
    Update { epoch: i32, node: VoterNode },
}

impl ChangeOp {
    fn key(&self) -> ReplicaKey {
        match self {
            ChangeOp::Add(node) | ChangeOp::Update { node, .. } => node.key,
            ChangeOp::Remove(key) => *key,
        }
    }
}

/// Why a membership request is malformed (all INVALID_REQUEST).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum InvalidChange {
    NegativeVoterId,
    NilDirectoryId,
    /// The listeners do not include this node's default listener name.
    NoDefaultListener,
    /// UpdateRaftVoter: a negative or inverted `kraft.version` range.
    BadKraftVersionRange,
    /// UpdateRaftVoter, or the ApiVersions answer of a voter being added: the voter's range excludes the
    /// finalized `kraft.version` (or, from ApiVersions, names no `kraft.version` range at all).
    KraftVersionNotSupported,
}

/// Why the leader refuses a membership change, in the order [`Node::check_change`] checks (kip-1204 §3;
/// the model's `spec::Refusal` names the same rules from `NotLeader` on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Refusal {
    /// The request names another cluster → INCONSISTENT_CLUSTER_ID.
    InconsistentClusterId,
    /// UpdateRaftVoter from an older epoch → FENCED_LEADER_EPOCH.
    FencedLeaderEpoch,
    /// UpdateRaftVoter from a newer epoch → UNKNOWN_LEADER_EPOCH.
    UnknownLeaderEpoch,
    /// Not the leader → NOT_LEADER_OR_FOLLOWER.
    NotLeader,
    /// A malformed request → INVALID_REQUEST.
    Invalid(InvalidChange),
    /// Another add/remove is pending (or an add awaits its new voter's ApiVersions answer) →
    /// REQUEST_TIMED_OUT.
    Pending,
    /// The HW is unknown (no commit in this epoch yet) → REQUEST_TIMED_OUT.
    HighWatermarkUnknown,
    /// Add or remove at `kraft.version` 0 (static voters) → UNSUPPORTED_VERSION.
    UnsupportedVersion,
    /// The last VotersRecord is not below the HW → REQUEST_TIMED_OUT.
    UncommittedVoters,
    /// Add of an id that is already a voter → DUPLICATE_VOTER.
    DuplicateVoter,
    /// Add of a replica that has not fetched up to the leader's end offset in this epoch →
    /// REQUEST_TIMED_OUT.
    NotCaughtUp,
    /// Remove or update of a replica that is not a voter, or remove of the last voter → VOTER_NOT_FOUND.
    VoterNotFound,
}

impl Refusal {
    /// The Kafka error code the reply carries.
    pub fn error_code(self) -> i16 {
        match self {
            Refusal::InconsistentClusterId => errors::INCONSISTENT_CLUSTER_ID,
            Refusal::FencedLeaderEpoch => errors::FENCED_LEADER_EPOCH,
            Refusal::UnknownLeaderEpoch => errors::UNKNOWN_LEADER_EPOCH,
            Refusal::NotLeader => errors::NOT_LEADER_OR_FOLLOWER,
            Refusal::Invalid(_) => errors::INVALID_REQUEST,
            Refusal::Pending
            | Refusal::HighWatermarkUnknown
            | Refusal::UncommittedVoters
            | Refusal::NotCaughtUp => errors::REQUEST_TIMED_OUT,
            Refusal::UnsupportedVersion => errors::UNSUPPORTED_VERSION,
            Refusal::DuplicateVoter => errors::DUPLICATE_VOTER,
            Refusal::VoterNotFound => errors::VOTER_NOT_FOUND,
        }
    }
}

/// How an Add/Remove request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ChangeOutcome {
    /// The VotersRecord is below the HW → NONE.
    Committed,
    /// AddRaftVoter v1 with `AckWhenCommitted=false`: the VotersRecord is appended → NONE (KIP-1186).
    Appended,
    /// UpdateRaftVoter at `kraft.version` 0: the leader's volatile voter set holds the entry → NONE.
    Stored,
    /// Refused before anything was appended.
    Refused(Refusal),
    /// The request deadline passed first (a record already appended stays in the log) → REQUEST_TIMED_OUT.
    TimedOut,
    /// AddRaftVoter: the new voter's ApiVersions answer was an error (the shell answers one for a request
    /// it could not send) → REQUEST_TIMED_OUT, as Kafka's `AddVoterHandler`.
    ApiVersionsFailed,
    /// The leader lost its leadership first → NOT_LEADER_OR_FOLLOWER.
    LeadershipLost,
    /// The log refused the append → UNKNOWN_SERVER_ERROR.
    AppendFailed,
}

impl ChangeOutcome {
    /// The Kafka error code the reply carries.
    pub fn error_code(self) -> i16 {
        match self {
            ChangeOutcome::Committed | ChangeOutcome::Appended | ChangeOutcome::Stored => {
                errors::NONE
            }
            ChangeOutcome::Refused(r) => r.error_code(),
            ChangeOutcome::TimedOut | ChangeOutcome::ApiVersionsFailed => errors::REQUEST_TIMED_OUT,
            ChangeOutcome::LeadershipLost => errors::NOT_LEADER_OR_FOLLOWER,
            ChangeOutcome::AppendFailed => errors::UNKNOWN_SERVER_ERROR,
        }
    }
}

fn endpoints<'a>(names: impl Iterator<Item = (&'a StrBytes, &'a StrBytes, u16)>) -> Vec<Endpoint> {
    names
        .map(|(name, host, port)| Endpoint {
            name: name.to_string(),
            host: host.to_string(),
            port,
        })
        .collect()
}

impl Node {
    /// Every precondition of a membership change, in Kafka's order; on success, the new voter set. For an
    /// add, the checks after [`Node::check_request`] are the ones Kafka makes once the new voter's
    /// ApiVersions answer is in (`node.supported` is that answer's range).
    pub(super) fn check_change(
        &self,
        cluster_id: Option<&str>,
        op: &ChangeOp,
    ) -> Result<VoterSet, Refusal> {
        self.check_request(cluster_id, op)?;
        let RoleState::Leader(leader) = &self.role else {
            return Err(Refusal::NotLeader);
        };
        let latest = self.history.latest();
        match op {
            ChangeOp::Add(node) => {
                if !node.supported.contains(self.kraft_version()) {
                    return Err(Refusal::Invalid(InvalidChange::KraftVersionNotSupported));
                }
                if !leader.is_caught_up(&node.key) {
                    return Err(Refusal::NotCaughtUp);
                }
                latest
                    .add_voter(node.clone())
                    .map_err(|_| Refusal::DuplicateVoter)
            }
            ChangeOp::Remove(key) => latest.remove_voter(key).map_err(|_| Refusal::VoterNotFound),
            ChangeOp::Update { node, .. } if self.kraft_version() < 1 => {
                // Kafka 4.4 `UpdateVoterHandler` at `kraft.version` 0: the leader's volatile set, gone
                // once an upgrade is appended (REQUEST_TIMED_OUT until the record is read back).
                let Some(voters) = self.volatile_voters() else {
                    return Err(Refusal::UncommittedVoters);
                };
                if !node.supported.contains(0) {
                    return Err(Refusal::Invalid(InvalidChange::KraftVersionNotSupported));
                }
                voters
                    .update_voter_ignoring_directory(node.clone())
                    .map_err(|_| Refusal::VoterNotFound)
            }
            ChangeOp::Update { node, .. } => {
                if !node.supported.contains(self.kraft_version()) {
                    return Err(Refusal::Invalid(InvalidChange::KraftVersionNotSupported));
                }
                latest
                    .update_voter(node.clone())
                    .map_err(|_| Refusal::VoterNotFound)
            }
        }
    }

    /// The checks of a membership request on arrival: for an add, everything Kafka checks before it
    /// sends ApiVersions to the new voter (an add's `supported` range is not read here).
    pub(super) fn check_request(
        &self,
        cluster_id: Option<&str>,
        op: &ChangeOp,
    ) -> Result<(), Refusal> {
        if cluster_id.is_some_and(|c| c != self.config.cluster_id) {
            return Err(Refusal::InconsistentClusterId);
        }
        if let ChangeOp::Update { epoch, .. } = op {
            if *epoch < self.election.epoch {
                return Err(Refusal::FencedLeaderEpoch);
            }
            if *epoch > self.election.epoch {
                return Err(Refusal::UnknownLeaderEpoch);
            }
        }
        if !matches!(self.role, RoleState::Leader(_)) {
            return Err(Refusal::NotLeader);
        }
        let key = op.key();
        if key.id < 0 {
            return Err(Refusal::Invalid(InvalidChange::NegativeVoterId));
        }
        if key.directory_id.is_none() {
            return Err(Refusal::Invalid(InvalidChange::NilDirectoryId));
        }
        if let ChangeOp::Add(node) | ChangeOp::Update { node, .. } = op {
            if let Some(default) = self.config.listeners.first() {
                if !node.listeners.iter().any(|l| l.name == default.name) {
                    return Err(Refusal::Invalid(InvalidChange::NoDefaultListener));
                }
            }
        }
        if let ChangeOp::Update { node, .. } = op {
            let s = node.supported;
            if s.min < 0 || s.max < 0 || s.max < s.min {
                return Err(Refusal::Invalid(InvalidChange::BadKraftVersionRange));
            }
        }
        self.check_one_change_at_a_time(matches!(op, ChangeOp::Update { .. }))?;
        if matches!(op, ChangeOp::Add(_)) && self.history.latest().contains_id(key.id) {
            return Err(Refusal::DuplicateVoter);
        }
        Ok(())
    }

    /// §3 steps 2–5, in this order: no pending change, HW known, `kraft.version` ≥ 1, last VotersRecord
    /// committed. An update at `kraft.version` 0 goes to the leader's volatile set instead of the last
    /// two (Kafka 4.4; see [`Node::check_change`]).
    fn check_one_change_at_a_time(&self, update: bool) -> Result<(), Refusal> {
        #[cfg(feature = "faults")]
        let skip = self.faults.accept_change_while_pending;
        #[cfg(not(feature = "faults"))]
        let skip = false;
        if (self.pending.is_some() || self.add_check.is_some()) && !skip {
            return Err(Refusal::Pending);
        }
        let Some(hw) = self.high_watermark() else {
            return Err(Refusal::HighWatermarkUnknown);
        };
        if self.kraft_version() < 1 {
            return if update {
                Ok(())
            } else {
                Err(Refusal::UnsupportedVersion)
            };
        }
        if skip {
            // Seeded fault: the uncommitted-record rule is skipped too.
            return Ok(());
        }
        match self.history.latest_entry().map(|(o, _)| o) {
            Some(o) if o < hw => Ok(()),
            _ => Err(Refusal::UncommittedVoters),
        }
    }

    pub(super) fn reply_change(
        &mut self,
        client: ClientId,
        kind: ChangeKind,
        key: ReplicaKey,
        outcome: ChangeOutcome,
        out: &mut Output,
    ) {
        self.last_change_reply = Some(ChangeReply {
            client,
            kind,
            key,
            outcome,
        });
        let code = outcome.error_code();
        let msg = error_message(code).map(StrBytes::from_static_str);
        let resp = match kind {
            ChangeKind::Add => ClientResponse::AddRaftVoter(
                AddRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_error_message(msg),
            ),
            ChangeKind::Remove => ClientResponse::RemoveRaftVoter(
                RemoveRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_error_message(msg),
            ),
            ChangeKind::Update => {
                use kafka_protocol::messages::update_raft_voter_response::CurrentLeader;
                use kafka_protocol::messages::BrokerId;
                let (host, port) = self
                    .config
                    .listeners
                    .first()
                    .map_or((String::new(), -1), |e| (e.host.clone(), e.port as i32));
                let leader = CurrentLeader::default()
                    .with_leader_id(BrokerId(self.known_leader_or_sentinel()))
                    .with_leader_epoch(self.election.epoch)
                    .with_host(StrBytes::from_string(host))
                    .with_port(port);
                ClientResponse::UpdateRaftVoter(
                    UpdateRaftVoterResponse::default()
                        .with_error_code(code)
                        .with_current_leader(leader),
                )
            }
        };
        out.client_replies.push((client, resp));
    }

    pub(super) fn on_add_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: AddRaftVoterRequest,
        ack_when_committed: bool,
        out: &mut Output,
    ) {
        let node = VoterNode {
            key: ReplicaKey::new(req.voter_id, req.voter_directory_id),
            listeners: endpoints(req.listeners.iter().map(|l| (&l.name, &l.host, l.port))),
            // Not read by `check_request`; the range comes from the new voter's ApiVersions answer.
            supported: SupportedVersions::CURRENT,
        };
        let key = node.key;
        let cluster_id = req.cluster_id.as_ref().map(|c| c.as_str());
        match self.check_request(cluster_id, &ChangeOp::Add(node.clone())) {
            Err(r) => {
                self.reply_change(client, ChangeKind::Add, key, ChangeOutcome::Refused(r), out)
            }
            Ok(()) => {
                let check = AddCheck {
                    client,
                    key,
                    listeners: node.listeners,
                    ack_when_committed,
                    deadline: now + self.config.request_timeout_ms,
                };
                self.start_add_check(check, out);
            }
        }
    }

    pub(super) fn on_remove_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: RemoveRaftVoterRequest,
        out: &mut Output,
    ) {
        let key = ReplicaKey::new(req.voter_id, req.voter_directory_id);
        let cluster_id = req.cluster_id.as_ref().map(|c| c.as_str());
        match self.check_change(cluster_id, &ChangeOp::Remove(key)) {
            Err(r) => {
                let outcome = ChangeOutcome::Refused(r);
                self.reply_change(client, ChangeKind::Remove, key, outcome, out)
            }
            Ok(set) => {
                let deadline = now + self.config.request_timeout_ms;
                self.append_change(now, client, ChangeKind::Remove, key, set, deadline, out)
            }
        }
    }

    /// Appends the VotersRecord of an accepted Add/Remove; the reply waits for the HW to pass it, or for
    /// `deadline` (Kafka's: the request's arrival plus the request timeout).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn append_change(
        &mut self,
        now: Millis,
        client: ClientId,
        kind: ChangeKind,
        key: ReplicaKey,
        set: VoterSet,
        deadline: Millis,
        out: &mut Output,
    ) {
        let offset = self.log.end_offset();
        let previous = self.pending.replace(PendingChange {
            client,
            kind,
            key,
            offset,
            deadline,
        });
        if let Some(p) = previous {
            // Only reachable with the `accept_change_while_pending` fault: the old request is dropped.
            self.reply_change(p.client, p.kind, p.key, ChangeOutcome::TimedOut, out);
        }
        if let Err(e) = self.leader_append(now, vec![Record::Voters(set)], out) {
            tracing::error!(node = self.local.id, error = %e, "VotersRecord append failed");
            if let Some(p) = self.pending.take() {
                self.reply_change(p.client, p.kind, p.key, ChangeOutcome::AppendFailed, out);
            }
        }
    }

    pub(super) fn on_update_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: UpdateRaftVoterRequest,
        out: &mut Output,
    ) {
        let f = &req.k_raft_version_feature;
        let op = ChangeOp::Update {
            epoch: req.current_leader_epoch,
            node: VoterNode {
                key: ReplicaKey::new(req.voter_id, req.voter_directory_id),
                listeners: endpoints(req.listeners.iter().map(|l| (&l.name, &l.host, l.port))),
                supported: SupportedVersions {
                    min: f.min_supported_version,
                    max: f.max_supported_version,
                },
            },
        };
        let cluster_id = req.cluster_id.as_ref().map(|c| c.as_str());
        let key = op.key();
        // Kafka's UpdateVoterHandler answers once the record is appended, not at commit; at
        // `kraft.version` 0 once the volatile set holds the entry.
        let outcome = match self.check_change(cluster_id, &op) {
            Err(r) => ChangeOutcome::Refused(r),
            Ok(set) if self.kraft_version() < 1 => {
                self.store_volatile_voters(set);
                // Kafka 4.4: the update is evidence that the voter follows this leader.
                let window = self.config.check_quorum_timeout_ms;
                if let RoleState::Leader(l) = &mut self.role {
                    l.update_check_quorum_for_voter(key, now, window);
                }
                ChangeOutcome::Stored
            }
            Ok(set) => match self.leader_append(now, vec![Record::Voters(set)], out) {
                Ok(_) => ChangeOutcome::Appended,
                Err(e) => {
                    tracing::error!(node = self.local.id, error = %e, "VotersRecord append failed");
                    ChangeOutcome::AppendFailed
                }
            },
        };
        self.reply_change(client, ChangeKind::Update, key, outcome, out);
    }
}
