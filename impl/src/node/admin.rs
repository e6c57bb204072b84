//! ApiVersions and DescribeQuorum: what an admin client asks any node.

use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::voter_set::SupportedVersions;
use crate::wire::describe_quorum::{
    DescribeQuorumRequest, DescribeQuorumResponse, PartitionData, TopicData,
};

use super::messages::{error_message, errors, METADATA_PARTITION, METADATA_TOPIC};
use super::types::*;
use super::{Node, RoleState};

impl Node {
    /// The APIs this node serves and the `kraft.version` feature (supported [0, 1], finalized = current).
    /// Features are only visible to clients at ApiVersions v3+ (v4 for a feature whose min is 0).
    pub fn api_versions(&self, _req: &ApiVersionsRequest) -> ApiVersionsResponse {
        use kafka_protocol::messages::api_versions_response::{
            FinalizedFeatureKey, SupportedFeatureKey,
        };
        let apis = crate::wire::apis::api_versions();
        let level = self.kraft_version();
        ApiVersionsResponse::default()
            .with_api_keys(apis)
            .with_supported_features(vec![SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str("kraft.version"))
                .with_min_version(SupportedVersions::CURRENT.min)
                .with_max_version(SupportedVersions::CURRENT.max)])
            .with_finalized_features(vec![FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str("kraft.version"))
                .with_min_version_level(level)
                .with_max_version_level(level)])
            .with_finalized_features_epoch(self.high_watermark().unwrap_or(-1))
    }

    /// DescribeQuorum at `version` (0–3) with Kafka's behaviour (KIP-1204 §4–5). Expires stale observers.
    pub fn describe_quorum(
        &mut self,
        now: Millis,
        version: i16,
        req: &DescribeQuorumRequest,
    ) -> DescribeQuorumResponse {
        let version = version.clamp(0, crate::wire::describe_quorum::MAX_VERSION);
        let empty_partition = |index: i32, code: i16| PartitionData {
            partition_index: index,
            error_code: code,
            error_message: Some(StrBytes::from_static_str(error_message(code).unwrap_or(""))),
            leader_id: 0,
            leader_epoch: 0,
            high_watermark: 0,
            current_voters: Vec::new(),
            observers: Vec::new(),
            committed_voters: Vec::new(),
            unknown_tagged_fields: Default::default(),
        };
        let topic = |name: StrBytes, partitions: Vec<PartitionData>| TopicData {
            topic_name: name,
            partitions,
            unknown_tagged_fields: Default::default(),
        };
        let response = |topics: Vec<TopicData>, nodes| DescribeQuorumResponse {
            error_code: errors::NONE,
            error_message: Some(StrBytes::new()),
            topics,
            nodes,
            unknown_tagged_fields: Default::default(),
        };
        let valid = matches!(req.topics.as_slice(), [t] if t.topic_name == METADATA_TOPIC
            && matches!(t.partitions.as_slice(), [p] if p.partition_index == METADATA_PARTITION));
        if !valid {
            let topics = req
                .topics
                .iter()
                .map(|t| {
                    let parts = t
                        .partitions
                        .iter()
                        .map(|p| {
                            empty_partition(p.partition_index, errors::UNKNOWN_TOPIC_OR_PARTITION)
                        })
                        .collect();
                    topic(StrBytes::from_string(t.topic_name.clone()), parts)
                })
                .collect();
            return response(topics, Vec::new());
        }
        let expiry = self.config.observer_expiry_ms;
        let committed = self.committed_voters().cloned();
        let epoch = self.election.epoch;
        let local_id = self.local.id;
        let RoleState::Leader(leader) = &mut self.role else {
            let p = empty_partition(METADATA_PARTITION, errors::NOT_LEADER_OR_FOLLOWER);
            return response(
                vec![topic(StrBytes::from_static_str(METADATA_TOPIC), vec![p])],
                Vec::new(),
            );
        };
        leader.expire_observers(now, expiry);
        let lists = leader.describe(now, version, committed.as_ref());
        let p = PartitionData {
            partition_index: METADATA_PARTITION,
            error_code: errors::NONE,
            error_message: Some(StrBytes::new()),
            leader_id: local_id,
            leader_epoch: epoch,
            high_watermark: leader.high_watermark().unwrap_or(-1),
            current_voters: lists.current_voters,
            observers: lists.observers,
            committed_voters: lists.committed_voters,
            unknown_tagged_fields: Default::default(),
        };
        response(
            vec![topic(StrBytes::from_static_str(METADATA_TOPIC), vec![p])],
            lists.nodes,
        )
    }
}
