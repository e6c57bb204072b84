//! Shared by the `wire_*` tests: proptest strategies for DescribeQuorum values, conversions to and from
//! `kafka-protocol` (the oracle for versions 0–2), and the projection of a value onto a version.
#![allow(dead_code)]

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::{
    describe_quorum_request as kreq, describe_quorum_response as kresp,
};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kraft::wire::{
    DescribeQuorumRequest, DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData,
    PartitionRequest, ReplicaState, TopicData, TopicRequest, UnknownTaggedFields,
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------------------------
// Strategies

/// Short strings over all of Unicode, sometimes empty.
pub fn arb_string() -> impl Strategy<Value = String> {
    vec(any::<char>(), 0..6).prop_map(String::from_iter)
}

pub fn arb_nullable_string() -> impl Strategy<Value = Option<String>> {
    prop_oneof![1 => Just(None), 1 => Just(Some(String::new())), 2 => arb_string().prop_map(Some)]
}

/// Mostly empty; otherwise a few tags (below 2^31, where kafka-protocol's `i32` keys sort like ours)
/// with small payloads, including multi-byte varint tags.
pub fn arb_tags() -> impl Strategy<Value = UnknownTaggedFields> {
    let tag = prop_oneof![0u32..20, 0u32..=(i32::MAX as u32)];
    let value = vec(any::<u8>(), 0..5).prop_map(Bytes::from);
    prop_oneof![4 => Just(UnknownTaggedFields::new()), 1 => btree_map(tag, value, 1..3).prop_map(UnknownTaggedFields::from)]
}

pub fn arb_uuid() -> impl Strategy<Value = Uuid> {
    prop_oneof![
        Just(Uuid::nil()),
        any::<[u8; 16]>().prop_map(Uuid::from_bytes)
    ]
}

/// Mixes the values that matter (sentinels, small numbers) with arbitrary ones.
pub fn arb_i64() -> impl Strategy<Value = i64> {
    prop_oneof![Just(-1i64), 0i64..1000, any::<i64>()]
}

pub fn arb_replica() -> impl Strategy<Value = ReplicaState> {
    (
        any::<i32>(),
        arb_uuid(),
        arb_i64(),
        arb_i64(),
        arb_i64(),
        arb_tags(),
    )
        .prop_map(
            |(
                replica_id,
                replica_directory_id,
                log_end_offset,
                last_fetch_timestamp,
                last_caught_up_timestamp,
                tags,
            )| {
                ReplicaState {
                    replica_id,
                    replica_directory_id,
                    log_end_offset,
                    last_fetch_timestamp,
                    last_caught_up_timestamp,
                    unknown_tagged_fields: tags,
                }
            },
        )
}

pub fn arb_partition() -> impl Strategy<Value = PartitionData> {
    (
        (
            any::<i32>(),
            any::<i16>(),
            arb_nullable_string(),
            any::<i32>(),
            any::<i32>(),
            arb_i64(),
        ),
        (
            vec(arb_replica(), 0..4),
            vec(arb_replica(), 0..3),
            vec(arb_replica(), 0..4),
            arb_tags(),
        ),
    )
        .prop_map(
            |(
                (
                    partition_index,
                    error_code,
                    error_message,
                    leader_id,
                    leader_epoch,
                    high_watermark,
                ),
                (current_voters, observers, committed_voters, tags),
            )| PartitionData {
                partition_index,
                error_code,
                error_message: error_message.map(Into::into),
                leader_id,
                leader_epoch,
                high_watermark,
                current_voters,
                observers,
                committed_voters,
                unknown_tagged_fields: tags,
            },
        )
}

pub fn arb_listener() -> impl Strategy<Value = Listener> {
    (arb_string(), arb_string(), any::<u16>(), arb_tags()).prop_map(|(name, host, port, tags)| {
        Listener {
            name: name.into(),
            host: host.into(),
            port,
            unknown_tagged_fields: tags,
        }
    })
}

pub fn arb_node() -> impl Strategy<Value = NodeEndpoints> {
    (any::<i32>(), vec(arb_listener(), 0..3), arb_tags()).prop_map(|(node_id, listeners, tags)| {
        NodeEndpoints {
            node_id,
            listeners,
            unknown_tagged_fields: tags,
        }
    })
}

pub fn arb_response() -> impl Strategy<Value = DescribeQuorumResponse> {
    let topic = (arb_string(), vec(arb_partition(), 0..3), arb_tags()).prop_map(
        |(topic_name, partitions, tags)| TopicData {
            topic_name: topic_name.into(),
            partitions,
            unknown_tagged_fields: tags,
        },
    );
    (
        any::<i16>(),
        arb_nullable_string(),
        vec(topic, 0..3),
        vec(arb_node(), 0..3),
        arb_tags(),
    )
        .prop_map(
            |(error_code, error_message, topics, nodes, tags)| DescribeQuorumResponse {
                error_code,
                error_message: error_message.map(Into::into),
                topics,
                nodes,
                unknown_tagged_fields: tags,
            },
        )
}

pub fn arb_request() -> impl Strategy<Value = DescribeQuorumRequest> {
    let partition =
        (any::<i32>(), arb_tags()).prop_map(|(partition_index, tags)| PartitionRequest {
            partition_index,
            unknown_tagged_fields: tags,
        });
    let topic = (arb_string(), vec(partition, 0..4), arb_tags()).prop_map(
        |(topic_name, partitions, tags)| TopicRequest {
            topic_name,
            partitions,
            unknown_tagged_fields: tags,
        },
    );
    (vec(topic, 0..4), arb_tags()).prop_map(|(topics, tags)| DescribeQuorumRequest {
        topics,
        unknown_tagged_fields: tags,
    })
}

/// Clears the non-ignorable fields `version` lacks, so that encoding at `version` succeeds.
pub fn conform(mut value: DescribeQuorumResponse, version: i16) -> DescribeQuorumResponse {
    if version < 2 {
        value.nodes.clear();
        for_each_replica(&mut value, |s| s.replica_directory_id = Uuid::nil());
    }
    value
}

/// What decoding the encoding of `value` at `version` yields: absent fields at their defaults.
pub fn project(mut value: DescribeQuorumResponse, version: i16) -> DescribeQuorumResponse {
    if version < 2 {
        value.error_message = Some(Default::default());
        value.nodes.clear();
    }
    for topic in &mut value.topics {
        for p in &mut topic.partitions {
            if version < 2 {
                p.error_message = Some(Default::default());
            }
            if version < 3 {
                p.committed_voters.clear();
            }
        }
    }
    for_each_replica(&mut value, |s| {
        if version < 2 {
            s.replica_directory_id = Uuid::nil();
        }
        if version < 1 {
            s.last_fetch_timestamp = -1;
            s.last_caught_up_timestamp = -1;
        }
    });
    value
}

pub fn for_each_replica(value: &mut DescribeQuorumResponse, mut f: impl FnMut(&mut ReplicaState)) {
    for topic in &mut value.topics {
        for p in &mut topic.partitions {
            for s in p
                .current_voters
                .iter_mut()
                .chain(&mut p.observers)
                .chain(&mut p.committed_voters)
            {
                f(s);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Conversions to and from kafka-protocol (which has no CommittedVoters: it is dropped)

fn to_kp_tags(tags: &UnknownTaggedFields) -> BTreeMap<i32, Bytes> {
    tags.iter().map(|(&k, v)| (k as i32, v.clone())).collect()
}

fn from_kp_tags(tags: &BTreeMap<i32, Bytes>) -> UnknownTaggedFields {
    tags.iter().map(|(&k, v)| (k as u32, v.clone())).collect()
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn to_kp_replica(r: &ReplicaState) -> kresp::ReplicaState {
    kresp::ReplicaState::default()
        .with_replica_id(BrokerId(r.replica_id))
        .with_replica_directory_id(r.replica_directory_id)
        .with_log_end_offset(r.log_end_offset)
        .with_last_fetch_timestamp(r.last_fetch_timestamp)
        .with_last_caught_up_timestamp(r.last_caught_up_timestamp)
        .with_unknown_tagged_fields(to_kp_tags(&r.unknown_tagged_fields))
}

fn from_kp_replica(r: &kresp::ReplicaState) -> ReplicaState {
    ReplicaState {
        replica_id: r.replica_id.0,
        replica_directory_id: r.replica_directory_id,
        log_end_offset: r.log_end_offset,
        last_fetch_timestamp: r.last_fetch_timestamp,
        last_caught_up_timestamp: r.last_caught_up_timestamp,
        unknown_tagged_fields: from_kp_tags(&r.unknown_tagged_fields),
    }
}

pub fn to_kp_response(v: &DescribeQuorumResponse) -> kresp::DescribeQuorumResponse {
    let topics = v
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    kresp::PartitionData::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(p.error_code)
                        .with_error_message(p.error_message.as_deref().map(s))
                        .with_leader_id(BrokerId(p.leader_id))
                        .with_leader_epoch(p.leader_epoch)
                        .with_high_watermark(p.high_watermark)
                        .with_current_voters(p.current_voters.iter().map(to_kp_replica).collect())
                        .with_observers(p.observers.iter().map(to_kp_replica).collect())
                        .with_unknown_tagged_fields(to_kp_tags(&p.unknown_tagged_fields))
                })
                .collect();
            kresp::TopicData::default()
                .with_topic_name(TopicName(s(&t.topic_name)))
                .with_partitions(partitions)
                .with_unknown_tagged_fields(to_kp_tags(&t.unknown_tagged_fields))
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
                        .with_name(s(&l.name))
                        .with_host(s(&l.host))
                        .with_port(l.port)
                        .with_unknown_tagged_fields(to_kp_tags(&l.unknown_tagged_fields))
                })
                .collect();
            kresp::Node::default()
                .with_node_id(BrokerId(n.node_id))
                .with_listeners(listeners)
                .with_unknown_tagged_fields(to_kp_tags(&n.unknown_tagged_fields))
        })
        .collect();
    kresp::DescribeQuorumResponse::default()
        .with_error_code(v.error_code)
        .with_error_message(v.error_message.as_deref().map(s))
        .with_topics(topics)
        .with_nodes(nodes)
        .with_unknown_tagged_fields(to_kp_tags(&v.unknown_tagged_fields))
}

pub fn from_kp_response(v: &kresp::DescribeQuorumResponse) -> DescribeQuorumResponse {
    DescribeQuorumResponse {
        error_code: v.error_code,
        error_message: v.error_message.clone(),
        topics: v
            .topics
            .iter()
            .map(|t| TopicData {
                topic_name: t.topic_name.0.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition_index,
                        error_code: p.error_code,
                        error_message: p.error_message.clone(),
                        leader_id: p.leader_id.0,
                        leader_epoch: p.leader_epoch,
                        high_watermark: p.high_watermark,
                        current_voters: p.current_voters.iter().map(from_kp_replica).collect(),
                        observers: p.observers.iter().map(from_kp_replica).collect(),
                        committed_voters: Vec::new(),
                        unknown_tagged_fields: from_kp_tags(&p.unknown_tagged_fields),
                    })
                    .collect(),
                unknown_tagged_fields: from_kp_tags(&t.unknown_tagged_fields),
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
                        unknown_tagged_fields: from_kp_tags(&l.unknown_tagged_fields),
                    })
                    .collect(),
                unknown_tagged_fields: from_kp_tags(&n.unknown_tagged_fields),
            })
            .collect(),
        unknown_tagged_fields: from_kp_tags(&v.unknown_tagged_fields),
    }
}

pub fn to_kp_request(v: &DescribeQuorumRequest) -> kreq::DescribeQuorumRequest {
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
                        .with_unknown_tagged_fields(to_kp_tags(&p.unknown_tagged_fields))
                })
                .collect();
            kreq::TopicData::default()
                .with_topic_name(TopicName(s(&t.topic_name)))
                .with_partitions(partitions)
                .with_unknown_tagged_fields(to_kp_tags(&t.unknown_tagged_fields))
        })
        .collect();
    kreq::DescribeQuorumRequest::default()
        .with_topics(topics)
        .with_unknown_tagged_fields(to_kp_tags(&v.unknown_tagged_fields))
}

pub fn from_kp_request(v: &kreq::DescribeQuorumRequest) -> DescribeQuorumRequest {
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
                        unknown_tagged_fields: from_kp_tags(&p.unknown_tagged_fields),
                    })
                    .collect(),
                unknown_tagged_fields: from_kp_tags(&t.unknown_tagged_fields),
            })
            .collect(),
        unknown_tagged_fields: from_kp_tags(&v.unknown_tagged_fields),
    }
}
