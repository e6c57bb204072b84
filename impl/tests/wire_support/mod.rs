//! Shared by the `wire_*` tests: proptest strategies for DescribeQuorum values and the projection of a
//! value onto a version. Conversions to and from `kafka-protocol` (the oracle for versions 0–2) are
//! `kraft::wire::describe_quorum`'s `From` impls.
#![allow(dead_code)]

pub mod vectors;

use bytes::Bytes;
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
