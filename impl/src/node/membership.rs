//! AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853) at the leader.

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse,
    UpdateRaftVoterRequest, UpdateRaftVoterResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::log::{RaftLog, Record};
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

use super::messages::{self, error_message, errors};
use super::types::*;
use super::{Node, RoleState};

impl<L: RaftLog> Node<L> {
    pub(super) fn reply_change(
        &mut self,
        client: ClientId,
        kind: ChangeKind,
        key: ReplicaKey,
        code: i16,
        out: &mut Output,
    ) {
        self.last_change_reply = Some(ChangeReply {
            client,
            kind,
            key,
            error_code: code,
        });
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
        };
        out.client_replies.push((client, resp));
    }

    /// §3 steps 1 (cluster id, leadership).
    pub(super) fn check_leader_entry(&self, cluster_id: &Option<StrBytes>) -> Result<(), i16> {
        if messages::cluster_id_mismatch(cluster_id, &self.config.cluster_id) {
            return Err(errors::INCONSISTENT_CLUSTER_ID);
        }
        if !matches!(self.role, RoleState::Leader(_)) {
            return Err(errors::NOT_LEADER_OR_FOLLOWER);
        }
        Ok(())
    }

    /// §3 steps 2–5: no pending change, HW known, `kraft.version` ≥ 1, last VotersRecord committed.
    pub(super) fn check_change_gate(&self) -> Result<i64, i16> {
        if self.faults.accept_change_while_pending {
            // Seeded fault: skip the one-change-at-a-time rules (pending change, uncommitted record).
            return membership_gate(false, self.high_watermark(), self.kraft_version(), Some(-1));
        }
        membership_gate(
            self.pending.is_some(),
            self.high_watermark(),
            self.kraft_version(),
            self.history.latest_entry().map(|(o, _)| o),
        )
    }

    pub(super) fn has_default_listener(&self, names: impl IntoIterator<Item = String>) -> bool {
        match self.config.listeners.first() {
            Some(default) => names.into_iter().any(|n| n == default.name),
            None => true,
        }
    }

    pub(super) fn on_add_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: AddRaftVoterRequest,
        out: &mut Output,
    ) {
        let key = ReplicaKey::new(req.voter_id, req.voter_directory_id);
        let result = (|| {
            self.check_leader_entry(&req.cluster_id)?;
            if req.voter_id < 0 || req.voter_directory_id.is_nil() {
                return Err(errors::INVALID_REQUEST);
            }
            if !self.has_default_listener(req.listeners.iter().map(|l| l.name.to_string())) {
                return Err(errors::INVALID_REQUEST);
            }
            self.check_change_gate()?;
            let latest = self.history.latest();
            if latest.contains_id(key.id) {
                return Err(errors::DUPLICATE_VOTER);
            }
            let caught_up = self.leader_state().is_some_and(|l| l.is_caught_up(&key));
            if !caught_up {
                return Err(errors::REQUEST_TIMED_OUT);
            }
            let node = VoterNode {
                key,
                listeners: req
                    .listeners
                    .iter()
                    .map(|l| Endpoint {
                        name: l.name.to_string(),
                        host: l.host.to_string(),
                        port: l.port,
                    })
                    .collect(),
                supported: SupportedVersions::CURRENT,
            };
            latest.add_voter(node).map_err(|_| errors::DUPLICATE_VOTER)
        })();
        match result {
            Err(code) => self.reply_change(client, ChangeKind::Add, key, code, out),
            Ok(set) => self.append_change(now, client, ChangeKind::Add, key, set, out),
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
        let result = (|| {
            self.check_leader_entry(&req.cluster_id)?;
            if req.voter_id < 0 || req.voter_directory_id.is_nil() {
                return Err(errors::INVALID_REQUEST);
            }
            self.check_change_gate()?;
            self.history
                .latest()
                .remove_voter(&key)
                .map_err(|_| errors::VOTER_NOT_FOUND)
        })();
        match result {
            Err(code) => self.reply_change(client, ChangeKind::Remove, key, code, out),
            Ok(set) => self.append_change(now, client, ChangeKind::Remove, key, set, out),
        }
    }

    /// Appends the VotersRecord of an accepted Add/Remove; the reply waits for the HW to pass it.
    pub(super) fn append_change(
        &mut self,
        now: Millis,
        client: ClientId,
        kind: ChangeKind,
        key: ReplicaKey,
        set: VoterSet,
        out: &mut Output,
    ) {
        let offset = self.log.end_offset();
        let deadline = now + self.config.request_timeout_ms;
        let previous = self.pending.replace(PendingChange {
            client,
            kind,
            key,
            offset,
            deadline,
        });
        if let Some(p) = previous {
            // Only reachable with the `accept_change_while_pending` fault: the old request is dropped.
            self.reply_change(p.client, p.kind, p.key, errors::REQUEST_TIMED_OUT, out);
        }
        if let Err(e) = self.leader_append(now, vec![Record::Voters(set)], out) {
            tracing::error!(node = self.local.id, error = %e, "VotersRecord append failed");
            if let Some(p) = self.pending.take() {
                self.reply_change(p.client, p.kind, p.key, -1, out);
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
        use kafka_protocol::messages::update_raft_voter_response::CurrentLeader;
        use kafka_protocol::messages::BrokerId;
        let result = (|| {
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                return Err(errors::INCONSISTENT_CLUSTER_ID);
            }
            if req.current_leader_epoch < self.election.epoch {
                return Err(errors::FENCED_LEADER_EPOCH);
            }
            if req.current_leader_epoch > self.election.epoch {
                return Err(errors::UNKNOWN_LEADER_EPOCH);
            }
            self.check_leader_entry(&None)?;
            if req.voter_id < 0 || req.voter_directory_id.is_nil() {
                return Err(errors::INVALID_REQUEST);
            }
            if !self.has_default_listener(req.listeners.iter().map(|l| l.name.to_string())) {
                return Err(errors::INVALID_REQUEST);
            }
            let f = &req.k_raft_version_feature;
            if f.min_supported_version < 0
                || f.max_supported_version < 0
                || f.max_supported_version < f.min_supported_version
            {
                return Err(errors::INVALID_REQUEST);
            }
            self.check_change_gate()?;
            let supported = SupportedVersions {
                min: f.min_supported_version,
                max: f.max_supported_version,
            };
            if !supported.contains(self.kraft_version()) {
                return Err(errors::INVALID_REQUEST);
            }
            let node = VoterNode {
                key: ReplicaKey::new(req.voter_id, req.voter_directory_id),
                listeners: req
                    .listeners
                    .iter()
                    .map(|l| Endpoint {
                        name: l.name.to_string(),
                        host: l.host.to_string(),
                        port: l.port,
                    })
                    .collect(),
                supported,
            };
            self.history
                .latest()
                .update_voter(node)
                .map_err(|_| errors::VOTER_NOT_FOUND)
        })();
        let code = match result {
            Err(code) => code,
            Ok(set) => match self.leader_append(now, vec![Record::Voters(set)], out) {
                Ok(_) => errors::NONE,
                Err(e) => {
                    tracing::error!(node = self.local.id, error = %e, "VotersRecord append failed");
                    -1
                }
            },
        };
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
        let resp = UpdateRaftVoterResponse::default()
            .with_error_code(code)
            .with_current_leader(leader);
        out.client_replies
            .push((client, ClientResponse::UpdateRaftVoter(resp)));
    }
}

/// The membership-change gate at the leader (§3 steps 2–5, in this order): another change pending →
/// REQUEST_TIMED_OUT; HW unknown → REQUEST_TIMED_OUT; `kraft.version` < 1 → UNSUPPORTED_VERSION; the last
/// VotersRecord not below the HW (or none, static voters) → REQUEST_TIMED_OUT. Returns the HW.
pub fn membership_gate(
    change_pending: bool,
    high_watermark: Option<i64>,
    kraft_version: i16,
    last_voters_offset: Option<i64>,
) -> Result<i64, i16> {
    if change_pending {
        return Err(errors::REQUEST_TIMED_OUT);
    }
    let Some(hw) = high_watermark else {
        return Err(errors::REQUEST_TIMED_OUT);
    };
    if kraft_version < 1 {
        return Err(errors::UNSUPPORTED_VERSION);
    }
    match last_voters_offset {
        Some(o) if o < hw => Ok(hw),
        _ => Err(errors::REQUEST_TIMED_OUT),
    }
}
