//! Vote (KIP-595) and pre-vote (KIP-996, Vote v2): asking for and granting (pre-)votes.

use kafka_protocol::messages::{VoteRequest, VoteResponse};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::log::RaftLog;
use crate::voter_set::ReplicaKey;

use super::messages::{self, errors, METADATA_PARTITION};
use super::types::*;
use super::{Node, RoleState};

impl Node {
    /// A Vote request to `to`; a pre-vote (`pre_vote`) carries the current epoch, not a bumped one.
    pub(super) fn vote_request(&self, to: ReplicaKey, pre_vote: bool) -> VoteRequest {
        use kafka_protocol::messages::vote_request::{PartitionData, TopicData};
        use kafka_protocol::messages::BrokerId;
        VoteRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_voter_id(BrokerId(to.id))
            .with_topics(vec![TopicData::default()
                .with_topic_name(messages::topic_name())
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_replica_epoch(self.election.epoch)
                    .with_replica_id(BrokerId(self.local.id))
                    .with_replica_directory_id(self.local.directory_or_nil())
                    .with_voter_directory_id(to.directory_or_nil())
                    .with_last_offset_epoch(self.log.last_epoch())
                    .with_last_offset(self.log.end_offset())
                    .with_pre_vote(pre_vote)])])
    }

    pub(super) fn known_leader_or_sentinel(&self) -> i32 {
        self.leader_id().unwrap_or(-1)
    }

    /// Kafka's `isValidVoterKey` for the voter key a Vote or BeginQuorumEpoch is addressed to: a
    /// negative voter id names no key (v0); otherwise the id is this replica's and the directory id, if
    /// not nil, is this replica's too.
    pub(super) fn is_own_voter_key(&self, voter_id: i32, directory_id: Uuid) -> bool {
        voter_id < 0 || ReplicaKey::new(voter_id, directory_id).matches(&self.local)
    }

    pub(super) fn on_vote_request(
        &mut self,
        now: Millis,
        from: i32,
        req: VoteRequest,
        out: &mut Output,
    ) {
        let reply = |node: &Self, top: i16, part: i16, granted: bool| {
            messages::vote_response(
                top,
                part,
                node.known_leader_or_sentinel(),
                node.election.epoch,
                granted,
            )
        };
        let resp = 'resp: {
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                break 'resp reply(self, errors::INCONSISTENT_CLUSTER_ID, 0, false);
            }
            let Some(p) = messages::vote_partition(&req) else {
                break 'resp reply(self, errors::INVALID_REQUEST, 0, false);
            };
            let candidate = ReplicaKey::new(p.replica_id.0, p.replica_directory_id);
            let (cand_epoch, last_epoch, last_offset) =
                (p.replica_epoch, p.last_offset_epoch, p.last_offset);
            // A candidate has bumped its epoch past its log's; a prospective has not (KIP-996).
            let illegal_epoch = if p.pre_vote {
                last_epoch > cand_epoch
            } else {
                last_epoch >= cand_epoch
            };
            if candidate.id < 0 || last_offset < 0 || last_epoch < 0 || illegal_epoch {
                break 'resp reply(self, 0, errors::INVALID_REQUEST, false);
            }
            if cand_epoch < self.election.epoch {
                break 'resp reply(self, 0, errors::FENCED_LEADER_EPOCH, false);
            }
            if cand_epoch > self.election.epoch {
                self.become_unattached(now, cand_epoch, out);
            }
            if !self.is_own_voter_key(req.voter_id.0, p.voter_directory_id) {
                break 'resp reply(self, 0, errors::INVALID_VOTER_KEY, false);
            }
            let log_ok =
                (last_epoch, last_offset) >= (self.log.last_epoch(), self.log.end_offset());
            if p.pre_vote {
                // Nothing is recorded; the grant is Kafka 4.4's `canGrantVote` per role.
                let granted = log_ok
                    && match self.role {
                        RoleState::Unattached
                        | RoleState::Prospective { .. }
                        | RoleState::Candidate { .. }
                        | RoleState::Resigned => true,
                        RoleState::Follower { fetched, .. } => !fetched,
                        RoleState::Leader(_) => false,
                    };
                break 'resp reply(self, 0, errors::NONE, granted);
            }
            let leader_known = self.leader_id().is_some();
            let granted = match self.role {
                RoleState::Unattached | RoleState::Prospective { .. } => {
                    // Kafka 4.4's `unattachedOrProspectiveCanGrantVote`: a vote already cast is
                    // granted again to the same replica (a vote stored without directory id matches
                    // any), with no other check.
                    match self.election.voted {
                        Some(v) => {
                            v.id == candidate.id
                                && (v.directory_id.is_none()
                                    || v.directory_id == candidate.directory_id)
                        }
                        None if leader_known => false,
                        None => {
                            if log_ok {
                                let election = ElectionState {
                                    voted: Some(candidate),
                                    ..self.election.clone()
                                };
                                self.persist(election, out);
                                if self.is_voter() {
                                    self.arm_election_timer(now);
                                }
                            }
                            log_ok
                        }
                    }
                }
                // Kafka: Follower, Candidate, Leader and Resigned refuse every vote.
                _ => false,
            };
            reply(self, 0, errors::NONE, granted)
        };
        out.replies.push((from, Message::VoteResponse(resp)));
    }

    pub(super) fn on_vote_response(
        &mut self,
        now: Millis,
        from: i32,
        resp: VoteResponse,
        out: &mut Output,
    ) {
        if resp.error_code == errors::UNSUPPORTED_VERSION
            && matches!(self.role, RoleState::Prospective { .. })
        {
            // Kafka: a voter that cannot take a pre-vote (Vote < v2) makes the prospective stand at once.
            self.become_candidate(now, out);
            return;
        }
        if resp.error_code != errors::NONE {
            return;
        }
        let Some(p) = messages::vote_response_partition(&resp) else {
            return;
        };
        if p.leader_epoch > self.election.epoch {
            self.maybe_transition(now, p.leader_epoch, p.leader_id.0, out);
            return;
        }
        if p.leader_epoch != self.election.epoch || p.error_code != errors::NONE {
            return;
        }
        let knows_leader = matches!(
            self.role,
            RoleState::Prospective {
                leader: Some(_),
                ..
            }
        );
        if p.leader_id.0 >= 0 && p.leader_id.0 != self.local.id && !knows_leader {
            self.maybe_transition(now, p.leader_epoch, p.leader_id.0, out);
            return;
        }
        // The response does not say whether it answers a pre-vote: a Prospective counts any grant of its
        // epoch (a Candidate's epoch is past every pre-vote it sent).
        match &mut self.role {
            RoleState::Candidate { voters, granted }
            | RoleState::Prospective {
                voters, granted, ..
            } if p.vote_granted && voters.contains_id(from) => {
                granted.insert(from);
            }
            _ => {}
        }
        self.maybe_become_leader(now, out);
        self.maybe_become_candidate(now, out);
    }
}
