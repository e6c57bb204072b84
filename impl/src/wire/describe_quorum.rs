//! DescribeQuorum (API key 55) request and response, versions 0–3.
//!
//! Versions 0–2 are byte-identical to Apache Kafka (checked against `kafka-protocol`); version 3 adds
//! `CommittedVoters` (KIP-1204, see `specs/messages/DescribeQuorumResponse.json`).

use std::collections::BTreeMap;

use bytes::Bytes;
use uuid::Uuid;

/// Tagged fields this codec does not know, kept verbatim (sorted by tag) so they survive a round trip.
pub type UnknownTaggedFields = BTreeMap<u32, Bytes>;

pub const API_KEY: i16 = 55;
pub const MIN_VERSION: i16 = 0;
pub const MAX_VERSION: i16 = 3;

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DescribeQuorumRequest {
    pub topics: Vec<TopicRequest>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicRequest {
    pub topic_name: String,
    pub partitions: Vec<PartitionRequest>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionRequest {
    pub partition_index: i32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DescribeQuorumResponse {
    pub error_code: i16,
    /// v2+, ignorable; Kafka sends `Some("")`.
    pub error_message: Option<String>,
    pub topics: Vec<TopicData>,
    /// v2+, not ignorable: voters only (v3: current ∪ committed voters).
    pub nodes: Vec<NodeEndpoints>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicData {
    pub topic_name: String,
    pub partitions: Vec<PartitionData>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionData {
    pub partition_index: i32,
    pub error_code: i16,
    /// v2+, ignorable; Kafka sends `Some("")`.
    pub error_message: Option<String>,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub current_voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
    /// v3+, ignorable (KIP-1204): the voter set at HW − 1; empty while the HW is unknown.
    pub committed_voters: Vec<ReplicaState>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplicaState {
    pub replica_id: i32,
    /// v2+, not ignorable; nil when absent.
    pub replica_directory_id: Uuid,
    pub log_end_offset: i64,
    /// v1+, ignorable, default −1.
    pub last_fetch_timestamp: i64,
    /// v1+, ignorable, default −1.
    pub last_caught_up_timestamp: i64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeEndpoints {
    pub node_id: i32,
    pub listeners: Vec<Listener>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listener {
    pub name: String,
    pub host: String,
    pub port: u16,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}
