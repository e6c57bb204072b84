//! Accessors and the plain-data view of a node (tests, conformance, benches).

use crate::history::{committed_voter_set, VoterSetHistory};
use crate::leader::LeaderState;
use crate::log::{MemoryLog, RaftLog, Record};
use crate::voter_set::{Endpoint, ReplicaKey, VoterSet};

use super::types::*;
use super::{Node, RoleState};

impl Node {
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    pub fn node_id(&self) -> i32 {
        self.local.id
    }

    pub fn local_key(&self) -> ReplicaKey {
        self.local
    }

    pub fn log(&self) -> &MemoryLog {
        &self.log
    }

    pub fn role(&self) -> Role {
        match self.role {
            RoleState::Unattached => Role::Unattached,
            RoleState::Prospective { .. } => Role::Prospective,
            RoleState::Candidate { .. } => Role::Candidate,
            RoleState::Follower { .. } => Role::Follower,
            RoleState::Leader(_) => Role::Leader,
            RoleState::Resigned => Role::Resigned,
        }
    }

    pub fn epoch(&self) -> i32 {
        self.election.epoch
    }

    pub fn election_state(&self) -> &ElectionState {
        &self.election
    }

    /// The known leader of the current epoch.
    pub fn leader_id(&self) -> Option<i32> {
        match &self.role {
            RoleState::Leader(_) | RoleState::Resigned => Some(self.local.id),
            RoleState::Follower { leader, .. } => Some(*leader),
            RoleState::Prospective { leader, .. } => *leader,
            _ => None,
        }
    }

    /// The known leader and its endpoint on this node's listener: this node's own first listener when it
    /// leads; else what the leader announced (BeginQuorumEpoch, Fetch `NodeEndpoints`) for this epoch; else
    /// its default listener in the latest voter set, or in any set of the history.
    pub fn leader_endpoint(&self) -> Option<(i32, Endpoint)> {
        let leader = self.leader_id()?;
        if leader == self.local.id {
            return self.config.listeners.first().map(|e| (leader, e.clone()));
        }
        if let Some((epoch, id, e)) = &self.learned_leader {
            if (*epoch, *id) == (self.election.epoch, leader) {
                return Some((leader, e.clone()));
            }
        }
        self.known_endpoint(leader).map(|e| (leader, e))
    }

    /// The default listener of `id` in the latest voter set, else in the newest set of the history that
    /// has it.
    pub fn known_endpoint(&self, id: i32) -> Option<Endpoint> {
        if let Some(e) = self
            .history
            .latest()
            .voter(id)
            .and_then(|v| v.default_listener())
        {
            return Some(e.clone());
        }
        let mut found = None;
        for (_, set) in self.history.entries() {
            if let Some(e) = set.voter(id).and_then(|v| v.default_listener()) {
                found = Some(e.clone());
            }
        }
        found
    }

    /// Where to send a request for `id`: bootstrap server −2 − i for ids ≤ −2 ([`bootstrap_server_id`]);
    /// the leader's announced endpoint if `id` is the known leader; else [`Self::known_endpoint`].
    pub fn endpoint_of(&self, id: i32) -> Option<Endpoint> {
        if let Some(i) = bootstrap_server_index(id) {
            return self.config.bootstrap_servers.get(i).cloned();
        }
        if let Some(e) = self.add_check_endpoint(id) {
            return Some(e);
        }
        match self.leader_endpoint() {
            Some((leader, e)) if leader == id => Some(e),
            _ => self.known_endpoint(id),
        }
    }

    pub fn high_watermark(&self) -> Option<i64> {
        match &self.role {
            RoleState::Leader(l) => l.high_watermark(),
            _ => self.hw,
        }
    }

    pub fn history(&self) -> &VoterSetHistory {
        &self.history
    }

    pub fn latest_voters(&self) -> &VoterSet {
        self.history.latest()
    }

    /// The committed voter set at this replica (see [`committed_voter_set`]).
    pub fn committed_voters(&self) -> Option<&VoterSet> {
        #[cfg(feature = "faults")]
        if self.faults.committed_from_latest {
            return self.high_watermark().map(|_| self.history.latest());
        }
        committed_voter_set(&self.history, self.high_watermark())
    }

    /// The finalized `kraft.version` (latest KRaftVersionRecord, else the bootstrap level).
    pub fn kraft_version(&self) -> i16 {
        self.kraft_versions
            .last_entry()
            .map_or(self.base_kraft_version, |(_, v)| *v)
    }

    pub fn is_voter(&self) -> bool {
        self.history.latest().is_voter(&self.local)
    }

    pub fn timers(&self) -> &Timers {
        &self.timers
    }

    /// The earliest armed deadline (a timer's or a parked fetch's `MaxWaitMs`): the shell should `tick`
    /// then.
    pub fn next_deadline(&self) -> Option<Millis> {
        let timers = if self.installing.is_some() {
            [
                Timer::PendingChange,
                Timer::CheckQuorum,
                Timer::BeginQuorumEpoch,
                Timer::FirstPoll,
            ]
            .iter()
            .filter_map(|t| self.timers.get(*t))
            .min()
        } else {
            self.timers.earliest()
        };
        [timers, self.parked_fetch_deadline(), self.clean_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn pending_change(&self) -> Option<&PendingChange> {
        self.pending.as_ref()
    }

    /// The last Add/Remove reply this node built, with its typed outcome (the reply on the wire carries
    /// only the code; conformance compares the refusal reason).
    pub fn last_change_reply(&self) -> Option<&ChangeReply> {
        self.last_change_reply.as_ref()
    }

    pub fn leader_state(&self) -> Option<&LeaderState> {
        match &self.role {
            RoleState::Leader(l) => Some(l),
            _ => None,
        }
    }

    /// The observable state as plain data. Reads the whole log: meant for tests and conformance.
    pub fn view(&self) -> NodeView {
        let mut log = Vec::new();
        if let Ok(batches) = self.log.read(self.log.start_offset(), usize::MAX) {
            for b in batches {
                for (i, r) in b.records.iter().enumerate() {
                    let kind = match r {
                        Record::Data(_) => EntryKind::Data,
                        Record::LeaderChange { .. } => EntryKind::LeaderChange,
                        Record::KRaftVersion(v) => EntryKind::KRaftVersion(*v),
                        Record::Voters(s) => EntryKind::Voters(s.clone()),
                    };
                    log.push(LogEntryView {
                        offset: b.base_offset + i as i64,
                        epoch: b.epoch,
                        kind,
                    });
                }
            }
        }
        let replicas = match &self.role {
            RoleState::Leader(l) => l
                .voter_states()
                .map(|p| (p, true))
                .chain(l.observer_states().map(|p| (p, false)))
                .map(|(p, is_voter)| ReplicaView {
                    key: p.key,
                    is_voter,
                    end_offset: p.end_offset,
                    caught_up: p.has_caught_up,
                })
                .collect(),
            _ => Vec::new(),
        };
        NodeView {
            node_id: self.local.id,
            role: self.role(),
            epoch: self.election.epoch,
            leader_id: self.leader_id(),
            voted: self.election.voted,
            log,
            log_end_offset: self.log.end_offset(),
            last_epoch: self.log.last_epoch(),
            high_watermark: self.high_watermark(),
            kraft_version: self.kraft_version(),
            latest_voters: self.history.latest().clone(),
            latest_voters_offset: self.history.latest_entry().map(|(o, _)| o),
            committed_voters: self.committed_voters().cloned(),
            is_voter: self.is_voter(),
            pending_change: self.pending.clone(),
            last_change_reply: self.last_change_reply.clone(),
            timers: self.timers.clone(),
            outstanding_fetch: self.outstanding_fetch,
            replicas,
        }
    }
}
