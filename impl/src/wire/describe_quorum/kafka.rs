//! The same DescribeQuorum messages in kafka-protocol's types, both ways. kafka-protocol has no
//! `CommittedVoters` (v3): converting to its types drops them, converting back leaves them empty.
//! Tag numbers are carried over bit for bit (kafka-protocol keys tags by `i32`, this codec by `u32`).

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::{
    describe_quorum_request as kreq, describe_quorum_response as kresp, BrokerId, TopicName,
};

use super::{
    DescribeQuorumRequest, DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData,
    PartitionRequest, ReplicaState, TopicData, TopicRequest, UnknownTaggedFields,
};

fn to_tags(tags: &UnknownTaggedFields) -> BTreeMap<i32, Bytes> {
    tags.iter().map(|(&k, v)| (k as i32, v.clone())).collect()
}

fn from_tags(tags: &BTreeMap<i32, Bytes>) -> UnknownTaggedFields {
    tags.iter().map(|(&k, v)| (k as u32, v.clone())).collect()
}

impl From<&ReplicaState> for kresp::ReplicaState {
    fn from(r: &ReplicaState) -> Self {
        kresp::ReplicaState::default()
            .with_replica_id(BrokerId(r.replica_id))
            .with_replica_directory_id(r.replica_directory_id)
            .with_log_end_offset(r.log_end_offset)
            .with_last_fetch_timestamp(r.last_fetch_timestamp)
            .with_last_caught_up_timestamp(r.last_caught_up_timestamp)
            .with_unknown_tagged_fields(to_tags(&r.unknown_tagged_fields))
    }
}

impl From<&kresp::ReplicaState> for ReplicaState {
    fn from(r: &kresp::ReplicaState) -> Self {
        ReplicaState {
            replica_id: r.replica_id.0,
            replica_directory_id: r.replica_directory_id,
            log_end_offset: r.log_end_offset,
            last_fetch_timestamp: r.last_fetch_timestamp,
            last_caught_up_timestamp: r.last_caught_up_timestamp,
            unknown_tagged_fields: from_tags(&r.unknown_tagged_fields),
        }
    }
}

fn replicas_to<'a>(rs: impl IntoIterator<Item = &'a ReplicaState>) -> Vec<kresp::ReplicaState> {
    rs.into_iter().map(kresp::ReplicaState::from).collect()
}

fn replicas_from(rs: &[kresp::ReplicaState]) -> Vec<ReplicaState> {
    rs.iter().map(ReplicaState::from).collect()
}

impl From<&PartitionData> for kresp::PartitionData {
    fn from(p: &PartitionData) -> Self {
        kresp::PartitionData::default()
            .with_partition_index(p.partition_index)
            .with_error_code(p.error_code)
            .with_error_message(p.error_message.clone())
            .with_leader_id(BrokerId(p.leader_id))
            .with_leader_epoch(p.leader_epoch)
            .with_high_watermark(p.high_watermark)
            .with_current_voters(replicas_to(&p.current_voters))
            .with_observers(replicas_to(&p.observers))
            .with_unknown_tagged_fields(to_tags(&p.unknown_tagged_fields))
    }
}

impl From<&kresp::PartitionData> for PartitionData {
    fn from(p: &kresp::PartitionData) -> Self {
        PartitionData {
            partition_index: p.partition_index,
            error_code: p.error_code,
            error_message: p.error_message.clone(),
            leader_id: p.leader_id.0,
            leader_epoch: p.leader_epoch,
            high_watermark: p.high_watermark,
            current_voters: replicas_from(&p.current_voters),
            observers: replicas_from(&p.observers),
            committed_voters: Vec::new(),
            unknown_tagged_fields: from_tags(&p.unknown_tagged_fields),
        }
    }
}

impl From<&DescribeQuorumResponse> for kresp::DescribeQuorumResponse {
    fn from(v: &DescribeQuorumResponse) -> Self {
        let topics = v
            .topics
            .iter()
            .map(|t| {
                kresp::TopicData::default()
                    .with_topic_name(TopicName(t.topic_name.clone()))
                    .with_partitions(t.partitions.iter().map(Into::into).collect())
                    .with_unknown_tagged_fields(to_tags(&t.unknown_tagged_fields))
            })
            .collect();
        let nodes = v
            .nodes
            .iter()
            .map(|n| {
                let listeners = n
                    .listeners
                    .iter()
                    .map(|l| {
                        kresp::Listener::default()
                            .with_name(l.name.clone())
                            .with_host(l.host.clone())
                            .with_port(l.port)
                            .with_unknown_tagged_fields(to_tags(&l.unknown_tagged_fields))
                    })
                    .collect();
                kresp::Node::default()
                    .with_node_id(BrokerId(n.node_id))
                    .with_listeners(listeners)
                    .with_unknown_tagged_fields(to_tags(&n.unknown_tagged_fields))
            })
            .collect();
        kresp::DescribeQuorumResponse::default()
            .with_error_code(v.error_code)
            .with_error_message(v.error_message.clone())
            .with_topics(topics)
            .with_nodes(nodes)
            .with_unknown_tagged_fields(to_tags(&v.unknown_tagged_fields))
    }
}

impl From<&kresp::DescribeQuorumResponse> for DescribeQuorumResponse {
    fn from(v: &kresp::DescribeQuorumResponse) -> Self {
        DescribeQuorumResponse {
            error_code: v.error_code,
            error_message: v.error_message.clone(),
            topics: v
                .topics
                .iter()
                .map(|t| TopicData {
                    topic_name: t.topic_name.0.clone(),
                    partitions: t.partitions.iter().map(Into::into).collect(),
                    unknown_tagged_fields: from_tags(&t.unknown_tagged_fields),
                })
                .collect(),
            nodes: v
                .nodes
                .iter()
                .map(|n| NodeEndpoints {
                    node_id: n.node_id.0,
                    listeners: n
                        .listeners
                        .iter()
                        .map(|l| Listener {
                            name: l.name.clone(),
                            host: l.host.clone(),
                            port: l.port,
                            unknown_tagged_fields: from_tags(&l.unknown_tagged_fields),
                        })
                        .collect(),
                    unknown_tagged_fields: from_tags(&n.unknown_tagged_fields),
                })
                .collect(),
            unknown_tagged_fields: from_tags(&v.unknown_tagged_fields),
        }
    }
}

impl From<&DescribeQuorumRequest> for kreq::DescribeQuorumRequest {
    fn from(v: &DescribeQuorumRequest) -> Self {
        let topics = v
            .topics
            .iter()
            .map(|t| {
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        kreq::PartitionData::default()
                            .with_partition_index(p.partition_index)
                            .with_unknown_tagged_fields(to_tags(&p.unknown_tagged_fields))
                    })
                    .collect();
                kreq::TopicData::default()
                    .with_topic_name(TopicName(t.topic_name.clone().into()))
                    .with_partitions(partitions)
                    .with_unknown_tagged_fields(to_tags(&t.unknown_tagged_fields))
            })
            .collect();
        kreq::DescribeQuorumRequest::default()
            .with_topics(topics)
            .with_unknown_tagged_fields(to_tags(&v.unknown_tagged_fields))
    }
}

impl From<&kreq::DescribeQuorumRequest> for DescribeQuorumRequest {
    fn from(v: &kreq::DescribeQuorumRequest) -> Self {
        DescribeQuorumRequest {
            topics: v
                .topics
                .iter()
                .map(|t| TopicRequest {
                    topic_name: t.topic_name.0.to_string(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| PartitionRequest {
                            partition_index: p.partition_index,
                            unknown_tagged_fields: from_tags(&p.unknown_tagged_fields),
                        })
                        .collect(),
                    unknown_tagged_fields: from_tags(&t.unknown_tagged_fields),
                })
                .collect(),
            unknown_tagged_fields: from_tags(&v.unknown_tagged_fields),
        }
    }
}
