//! Role transitions (Kafka's `QuorumState`): Unattached, Candidate, Follower, Leader, Resigned, and the
//! election state each persists before anything leaves the node.

use std::collections::BTreeSet;

use rand::Rng;

use crate::leader::LeaderState;
use crate::log::{RaftLog, Record};
use crate::voter_set::{SupportedVersions, VoterNode, VoterSet};

use super::membership::ChangeOutcome;
use super::types::*;
use super::{Node, RoleState};

impl Node {
    /// Learns the shell's clock once, at the first input (or [`Harness::start_clock`](super::Harness::start_clock)): the deadlines `new`
    /// armed relative to 0 move by `now`, so a restarted node waits a full timeout instead of firing at
    /// once.
    pub(super) fn adopt_clock(&mut self, now: Millis) {
        if std::mem::replace(&mut self.clock_started, true) {
            return;
        }
        let shift = |d: &mut Option<Millis>| *d = d.map(|d| d.saturating_add(now));
        shift(&mut self.timers.election);
        shift(&mut self.timers.fetch_timeout);
        shift(&mut self.timers.begin_quorum_epoch);
        shift(&mut self.timers.first_poll);
        shift(&mut self.next_fetch_at);
        self.refresh_timers();
        self.start_snapshot_clocks(now);
    }

    pub(super) fn persist(&mut self, election: ElectionState, out: &mut Output) {
        if election != self.election {
            self.election = election;
            // Only the last state of one output matters: nothing is sent before the effects are applied.
            if let Some(Effect::PersistElectionState(last)) = out.effects.last_mut() {
                *last = self.election.clone();
            } else {
                out.effects
                    .push(Effect::PersistElectionState(self.election.clone()));
            }
        }
    }

    pub(super) fn random_election_timeout(&mut self) -> Millis {
        let base = self.config.election_timeout_ms;
        base + self.rng.gen_range(0..base)
    }

    pub(super) fn arm_election_timer(&mut self, now: Millis) {
        let t = self.random_election_timeout();
        self.timers.election = Some(now + t);
    }

    /// Unattached: a voter waits for its election timeout; an observer looks for the leader by fetching.
    pub(super) fn arm_unattached_timers(&mut self, now: Millis) {
        self.timers.fetch_timeout = None;
        if self.is_voter() {
            self.arm_election_timer(now);
            self.next_fetch_at = None;
        } else {
            self.timers.election = None;
            self.next_fetch_at = Some(now);
        }
    }

    /// Leaves the current role: a leader's pending change (or held add) is answered NOT_LEADER_OR_FOLLOWER.
    pub(super) fn leave_role(&mut self, out: &mut Output) {
        if let RoleState::Leader(_) = &self.role {
            if let Some(p) = self.pending.take() {
                let outcome = ChangeOutcome::LeadershipLost;
                self.reply_change(p.client, p.kind, p.key, outcome, out);
            }
            if let Some(c) = self.add_check.take() {
                let outcome = ChangeOutcome::LeadershipLost;
                self.reply_change(c.client, ChangeKind::Add, c.key, outcome, out);
            }
            self.drop_upgrade_state(out);
        }
        // Kafka's transitions pass the old state's HW on: a deposed leader keeps its HW; a resigned one
        // has none (a new leader drops it in `maybe_become_leader`).
        match &self.role {
            RoleState::Leader(l) => self.hw = l.high_watermark(),
            RoleState::Resigned => self.hw = None,
            _ => {}
        }
        self.outstanding_fetch = None;
        // Kafka's new state drops the old one's snapshot writer, deleting the partial file.
        self.abort_download(out);
        self.next_fetch_at = None;
        self.timers = Timers::default();
    }

    pub(super) fn become_unattached(&mut self, now: Millis, epoch: i32, out: &mut Output) {
        self.leave_role(out);
        let election = if epoch > self.election.epoch {
            ElectionState {
                epoch,
                voted: None,
                leader_id: None,
            }
        } else {
            ElectionState {
                leader_id: None,
                ..self.election.clone()
            }
        };
        self.persist(election, out);
        self.role = RoleState::Unattached;
        self.arm_unattached_timers(now);
    }

    pub(super) fn become_follower(
        &mut self,
        now: Millis,
        epoch: i32,
        leader: i32,
        out: &mut Output,
    ) {
        self.leave_role(out);
        let election = if epoch > self.election.epoch {
            ElectionState {
                epoch,
                voted: None,
                leader_id: Some(leader),
            }
        } else {
            ElectionState {
                leader_id: Some(leader),
                ..self.election.clone()
            }
        };
        self.persist(election, out);
        self.role = RoleState::Follower {
            leader,
            fetched: false,
        };
        self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
        self.next_fetch_at = Some(now);
    }

    /// KIP-996: a voter whose election or fetch timed out asks the voters of its latest set for pre-votes
    /// in its current epoch (nothing persisted: epoch, vote and leader stay). A majority of grants makes
    /// it Candidate; its election timeout sends it back to the leader it knew, else Unattached.
    pub(super) fn become_prospective(&mut self, now: Millis, out: &mut Output) {
        if !self.is_voter() {
            return;
        }
        if self.election.epoch == i32::MAX {
            // No Candidate epoch exists after this one: refuse now rather than after a pre-vote round
            // (`become_candidate`'s refusal: the role stays, the timer that fired is re-armed).
            self.become_candidate(now, out);
            return;
        }
        let leader = match self.role {
            RoleState::Follower { leader, .. } => Some(leader),
            _ => None,
        };
        self.leave_role(out);
        let voters = self.history.latest().clone();
        self.role = RoleState::Prospective {
            voters: voters.clone(),
            granted: BTreeSet::from([self.local.id]),
            leader,
        };
        self.arm_election_timer(now);
        for target in voters.nodes().filter(|n| n.key.id != self.local.id) {
            let req = self.vote_request(target.key, true);
            out.requests
                .push((target.key.id, Message::VoteRequest(req)));
        }
        self.maybe_become_candidate(now, out);
    }

    /// A Prospective with pre-votes from a majority of its voters stands as Candidate.
    pub(super) fn maybe_become_candidate(&mut self, now: Millis, out: &mut Output) {
        if let RoleState::Prospective {
            voters, granted, ..
        } = &self.role
        {
            if granted.len() >= voters.majority_size() {
                self.become_candidate(now, out);
            }
        }
    }

    /// The pre-vote round is lost (election timeout): follow the leader known before, else Unattached in
    /// the same epoch (Kafka's `prospectiveTransitionAfterElectionLoss`).
    pub(super) fn prospective_lost(&mut self, now: Millis, out: &mut Output) {
        let RoleState::Prospective { leader, .. } = self.role else {
            return;
        };
        let epoch = self.election.epoch;
        match leader {
            Some(l) => self.become_follower(now, epoch, l, out),
            None => self.become_unattached(now, epoch, out),
        }
    }

    pub(super) fn become_candidate(&mut self, now: Millis, out: &mut Output) {
        if !self.is_voter() {
            return;
        }
        let epoch = match self.next_epoch(out) {
            Some(epoch) => epoch,
            None => {
                // Keep the role; the timer that fired is re-armed so the refusal repeats at its pace.
                match self.role {
                    RoleState::Follower { .. } => {
                        self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms)
                    }
                    _ => self.arm_election_timer(now),
                }
                return;
            }
        };
        self.leave_role(out);
        self.persist(
            ElectionState {
                epoch,
                voted: Some(self.local),
                leader_id: None,
            },
            out,
        );
        self.role = RoleState::Candidate {
            voters: self.history.latest().clone(),
            granted: BTreeSet::from([self.local.id]),
        };
        self.arm_election_timer(now);
        self.request_votes(out);
        self.maybe_become_leader(now, out);
    }

    /// A Candidate asks every voter of its candidacy that has not granted it for its vote.
    pub(super) fn request_votes(&self, out: &mut Output) {
        let RoleState::Candidate { voters, granted } = &self.role else {
            return;
        };
        for node in voters.nodes().filter(|n| !granted.contains(&n.key.id)) {
            let req = self.vote_request(node.key, false);
            out.requests.push((node.key.id, Message::VoteRequest(req)));
        }
    }

    /// The epoch after this one, or `None` (reported in `out.refused`) at `i32::MAX`.
    pub(super) fn next_epoch(&self, out: &mut Output) -> Option<i32> {
        let next = self.election.epoch.checked_add(1);
        if next.is_none() {
            let e = StepError::EpochExhausted {
                epoch: self.election.epoch,
            };
            out.refused.push(e);
        }
        next
    }

    pub(super) fn maybe_become_leader(&mut self, now: Millis, out: &mut Output) {
        let granting = match &self.role {
            RoleState::Candidate { voters, granted } if granted.len() >= voters.majority_size() => {
                granted.iter().copied().collect::<Vec<_>>()
            }
            _ => return,
        };
        self.leave_role(out);
        self.hw = None;
        let latest = self.history.latest().clone();
        let leader = LeaderState::new(
            self.local,
            self.election.epoch,
            self.log.end_offset(),
            &latest,
            now,
            self.config.check_quorum_timeout_ms,
        );
        #[cfg(feature = "faults")]
        let leader = {
            let mut leader = leader;
            leader.faults = self.faults;
            leader
        };
        self.role = RoleState::Leader(Box::new(leader));
        self.start_upgrade_state();
        self.persist(
            ElectionState {
                leader_id: Some(self.local.id),
                ..self.election.clone()
            },
            out,
        );
        self.timers.begin_quorum_epoch = Some(now + self.config.fetch_timeout_ms / 2);
        // Start-of-epoch batch (contract 2 / Kafka `appendStartOfEpochControlRecords`).
        let mut records = vec![Record::LeaderChange {
            leader_id: self.local.id,
            voters: latest.ids().collect(),
            granting_voters: granting,
        }];
        let kraft = self.kraft_version();
        if kraft >= 1 {
            if let Some(voters) = self.start_of_epoch_voters(&latest) {
                records.push(Record::KRaftVersion(kraft));
                records.push(Record::Voters(voters));
            }
        }
        if let Err(e) = self.leader_append(now, records, out) {
            tracing::error!(node = self.local.id, error = %e, "start-of-epoch append failed; resigning");
            self.become_resigned(now, out);
            return;
        }
        for node in latest.nodes().filter(|n| n.key.id != self.local.id) {
            let req = self.begin_request(node.key);
            out.requests
                .push((node.key.id, Message::BeginQuorumEpochRequest(req)));
        }
    }

    /// The VotersRecord of the start-of-epoch batch, if one is due (Kafka `appendStartOfEpochControlRecords`
    /// at `kraft.version` 1): when the latest set is still the bootstrap checkpoint's (offset −1), or when
    /// this leader's own entry is out of date (other listeners or supported range, e.g. after a restart on
    /// a new port). Either way the record is the set with this node's entry as it is now, so a leader's
    /// endpoints reach the log without UpdateRaftVoter.
    fn start_of_epoch_voters(&self, latest: &VoterSet) -> Option<VoterSet> {
        let local = VoterNode {
            key: self.local,
            listeners: self.config.listeners.clone(),
            supported: SupportedVersions::CURRENT,
        };
        let bootstrap = self.history.latest_entry().is_some_and(|(o, _)| o == -1);
        if !bootstrap && !latest.voter_node_needs_update(&local) {
            return None;
        }
        match latest.update_voter(local) {
            Ok(updated) => Some(updated),
            // Only a voter of the latest set is elected; keep the set rather than stop the node.
            Err(e) => {
                tracing::error!(node = self.local.id, error = %e, "leader is not in its latest voter set");
                bootstrap.then(|| latest.clone())
            }
        }
    }

    pub(super) fn become_resigned(&mut self, now: Millis, out: &mut Output) {
        let successors = match &self.role {
            RoleState::Leader(l) => l.preferred_successors(),
            _ => return,
        };
        self.leave_role(out);
        self.hw = None;
        self.role = RoleState::Resigned;
        self.arm_election_timer(now);
        self.send_end_quorum_epoch(&successors, out);
    }

    /// EndQuorumEpoch naming `successors` (Kafka's `PreferredSuccessors` / `PreferredCandidates`) to every
    /// other voter of the latest set: a resigning leader's, and a restarted one's first poll.
    pub(super) fn send_end_quorum_epoch(&self, successors: &[i32], out: &mut Output) {
        let latest = self.history.latest();
        for node in latest.nodes().filter(|n| n.key.id != self.local.id) {
            let req = self.end_request(successors);
            out.requests
                .push((node.key.id, Message::EndQuorumEpochRequest(req)));
        }
    }

    /// A peer names `leader_id` (−1: unknown) as leader of `epoch`. Moves to a higher epoch, or follows a
    /// newly learned leader of the current epoch. Returns whether this node now follows `leader_id` in
    /// `epoch`.
    pub(super) fn maybe_transition(
        &mut self,
        now: Millis,
        epoch: i32,
        leader_id: i32,
        out: &mut Output,
    ) -> bool {
        let own = self.election.epoch;
        if epoch < own {
            return false;
        }
        if leader_id >= 0 && leader_id == self.local.id {
            // Only this node can know that it leads; a peer claiming so for an epoch we have not led
            // is inconsistent and ignored.
            return false;
        }
        if epoch > own {
            if leader_id >= 0 {
                self.become_follower(now, epoch, leader_id, out);
                return true;
            }
            self.become_unattached(now, epoch, out);
            return false;
        }
        match self.role {
            RoleState::Follower { leader, .. } => leader == leader_id,
            RoleState::Prospective {
                leader: Some(known),
                ..
            } => known == leader_id,
            RoleState::Unattached | RoleState::Candidate { .. } | RoleState::Prospective { .. }
                if leader_id >= 0 =>
            {
                self.become_follower(now, epoch, leader_id, out);
                true
            }
            _ => false,
        }
    }
}
