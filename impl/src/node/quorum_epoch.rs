//! BeginQuorumEpoch and EndQuorumEpoch: a new leader announces itself; a resigning one hands over.

use kafka_protocol::messages::{BeginQuorumEpochRequest, EndQuorumEpochRequest};
use kafka_protocol::protocol::StrBytes;
use rand::Rng;
use uuid::Uuid;

use crate::voter_set::{Endpoint, ReplicaKey};

use super::messages::{self, errors, METADATA_PARTITION};
use super::types::*;
use super::{Node, RoleState};

impl Node {
    pub(super) fn leader_endpoints(&self) -> Vec<(StrBytes, StrBytes, u16)> {
        self.config
            .listeners
            .iter()
            .map(|e| {
                (
                    StrBytes::from_string(e.name.clone()),
                    StrBytes::from_string(e.host.clone()),
                    e.port,
                )
            })
            .collect()
    }

    pub(super) fn begin_request(&self, to: ReplicaKey) -> BeginQuorumEpochRequest {
        use kafka_protocol::messages::begin_quorum_epoch_request::{
            LeaderEndpoint, PartitionData, TopicData,
        };
        use kafka_protocol::messages::BrokerId;
        BeginQuorumEpochRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_voter_id(BrokerId(to.id))
            .with_topics(vec![TopicData::default()
                .with_topic_name(messages::topic_name())
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_voter_directory_id(to.directory_or_nil())
                    .with_leader_id(BrokerId(self.local.id))
                    .with_leader_epoch(self.election.epoch)])])
            .with_leader_endpoints(
                self.leader_endpoints()
                    .into_iter()
                    .map(|(n, h, p)| {
                        LeaderEndpoint::default()
                            .with_name(n)
                            .with_host(h)
                            .with_port(p)
                    })
                    .collect(),
            )
    }

    pub(super) fn end_request(&self, successors: &[i32]) -> EndQuorumEpochRequest {
        use kafka_protocol::messages::end_quorum_epoch_request::{
            LeaderEndpoint, PartitionData, ReplicaInfo, TopicData,
        };
        use kafka_protocol::messages::BrokerId;
        let latest = self.history.latest();
        let candidates = successors
            .iter()
            .map(|id| {
                let dir = latest
                    .voter(*id)
                    .map_or(Uuid::nil(), |n| n.key.directory_or_nil());
                ReplicaInfo::default()
                    .with_candidate_id(BrokerId(*id))
                    .with_candidate_directory_id(dir)
            })
            .collect();
        EndQuorumEpochRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_topics(vec![TopicData::default()
                .with_topic_name(messages::topic_name())
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_leader_id(BrokerId(self.local.id))
                    .with_leader_epoch(self.election.epoch)
                    .with_preferred_successors(successors.to_vec())
                    .with_preferred_candidates(candidates)])])
            .with_leader_endpoints(
                self.leader_endpoints()
                    .into_iter()
                    .map(|(n, h, p)| {
                        LeaderEndpoint::default()
                            .with_name(n)
                            .with_host(h)
                            .with_port(p)
                    })
                    .collect(),
            )
    }

    /// The prelude Begin- and EndQuorumEpoch requests share: the cluster id, then the one metadata
    /// partition. The error is the (top-level, partition) code pair of the reply.
    fn epoch_request_partition<'a, P>(
        &self,
        cluster_id: &Option<StrBytes>,
        partition: Option<&'a P>,
    ) -> Result<&'a P, Codes> {
        if messages::cluster_id_mismatch(cluster_id, &self.config.cluster_id) {
            return Err((errors::INCONSISTENT_CLUSTER_ID, errors::NONE));
        }
        partition.ok_or((errors::INVALID_REQUEST, errors::NONE))
    }

    pub(super) fn on_begin_request(
        &mut self,
        now: Millis,
        from: i32,
        req: BeginQuorumEpochRequest,
        out: &mut Output,
    ) {
        let (top, part) = self
            .begin_epoch(now, &req, out)
            .err()
            .unwrap_or((errors::NONE, errors::NONE));
        let resp = messages::begin_response(
            top,
            part,
            self.known_leader_or_sentinel(),
            self.election.epoch,
        );
        out.replies
            .push((from, Message::BeginQuorumEpochResponse(resp)));
    }

    fn begin_epoch(
        &mut self,
        now: Millis,
        req: &BeginQuorumEpochRequest,
        out: &mut Output,
    ) -> Result<(), Codes> {
        let p = self.epoch_request_partition(&req.cluster_id, messages::begin_partition(req))?;
        let refuse = |code| Err((errors::NONE, code));
        let (leader, epoch) = (p.leader_id.0, p.leader_epoch);
        // Kafka 4.4's `handleBeginQuorumEpochRequest` order: the leader's epoch and id, then the
        // transition, then the voter key, so a replica addressed by another key (a replaced
        // incarnation) still follows the new leader and answers INVALID_VOTER_KEY.
        if epoch < self.election.epoch {
            return refuse(errors::FENCED_LEADER_EPOCH);
        }
        if leader < 0 || leader == self.local.id {
            return refuse(errors::INVALID_REQUEST);
        }
        // Kafka's `Endpoints.fromBeginQuorumEpochRequest`, read on this node's listener name.
        let name = self.config.listeners.first().map(|e| e.name.as_str());
        let announced = req
            .leader_endpoints
            .iter()
            .find(|e| Some(e.name.as_str()) == name)
            .map(|e| (e.host.to_string(), e.port));
        if let Some((host, port)) = announced {
            self.learn_leader_endpoint(epoch, leader, host, port);
        }
        if !self.maybe_transition(now, epoch, leader, out) {
            return refuse(errors::INVALID_REQUEST);
        }
        if !self.is_own_voter_key(req.voter_id.0, p.voter_directory_id) {
            return refuse(errors::INVALID_VOTER_KEY);
        }
        Ok(())
    }

    /// Remembers the endpoint a leader of `epoch` announced (not older than the current epoch), on this
    /// node's listener name.
    pub(super) fn learn_leader_endpoint(
        &mut self,
        epoch: i32,
        leader: i32,
        host: String,
        port: u16,
    ) {
        if leader < 0 || leader == self.local.id || epoch < self.election.epoch || host.is_empty() {
            return;
        }
        let name = self
            .config
            .listeners
            .first()
            .map_or_else(|| "CONTROLLER".to_string(), |e| e.name.clone());
        self.learned_leader = Some((epoch, leader, Endpoint { name, host, port }));
    }

    pub(super) fn on_end_request(
        &mut self,
        now: Millis,
        from: i32,
        req: EndQuorumEpochRequest,
        out: &mut Output,
    ) {
        let (top, part) = self
            .end_epoch(now, &req, out)
            .err()
            .unwrap_or((errors::NONE, errors::NONE));
        let resp = messages::end_response(
            top,
            part,
            self.known_leader_or_sentinel(),
            self.election.epoch,
        );
        out.replies
            .push((from, Message::EndQuorumEpochResponse(resp)));
    }

    fn end_epoch(
        &mut self,
        now: Millis,
        req: &EndQuorumEpochRequest,
        out: &mut Output,
    ) -> Result<(), Codes> {
        let p = self.epoch_request_partition(&req.cluster_id, messages::end_partition(req))?;
        let (leader, epoch) = (p.leader_id.0, p.leader_epoch);
        if epoch < self.election.epoch {
            return Err((errors::NONE, errors::FENCED_LEADER_EPOCH));
        }
        // Kafka's `validateVoterOnlyRequest`: a resigning leader names itself.
        if leader < 0 {
            return Err((errors::NONE, errors::INVALID_REQUEST));
        }
        let successors: Vec<i32> = if p.preferred_candidates.is_empty() {
            p.preferred_successors.clone()
        } else {
            p.preferred_candidates
                .iter()
                .map(|c| c.candidate_id.0)
                .collect()
        };
        self.maybe_transition(now, epoch, leader, out);
        // Only a follower of the resigning leader, voter or observer, brings its fetch timeout forward
        // (Kafka's `handleEndQuorumEpochRequest`: `overrideFetchTimeout`, no is-voter check); an
        // Unattached replica keeps its election timeout. The resigning leader's successors try first, in
        // order; others wait a random backoff.
        if let RoleState::Follower { leader: l, .. } = self.role {
            if epoch == self.election.epoch && l == leader {
                let backoff = match successors.iter().position(|&id| id == self.local.id) {
                    Some(pos) => pos as u64 * (self.config.election_timeout_ms / 4),
                    None => self.rng.gen_range(0..self.config.election_timeout_ms),
                };
                let deadline = now + backoff;
                self.timers.fetch_timeout = Some(
                    self.timers
                        .fetch_timeout
                        .map_or(deadline, |d| d.min(deadline)),
                );
            }
        }
        Ok(())
    }

    /// A Begin- or EndQuorumEpoch response `(leader epoch, leader id)`: only a higher epoch matters.
    pub(super) fn on_epoch_response(
        &mut self,
        now: Millis,
        partition: Option<(i32, i32)>,
        out: &mut Output,
    ) {
        if let Some((epoch, leader)) = partition {
            if epoch > self.election.epoch {
                self.maybe_transition(now, epoch, leader, out);
            }
        }
    }
}

/// The (top-level, partition) error codes of a Begin/EndQuorumEpoch reply.
type Codes = (i16, i16);
