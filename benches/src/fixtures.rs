//! Inputs shared by the benches and the allocation tests, built deterministically.
//!
//! A DescribeQuorum fixture with `n` replicas is one partition led by replica 1 with `n` current voters;
//! at v2+ every voter has a directory id and a `Nodes` entry with one listener, and at v3 the committed
//! voters are the same `n` replicas. Below v2 the directory ids are nil and `Nodes` is empty (those fields
//! do not exist there and are not ignorable); at v0 the timestamps keep their default −1. [`to_kafka`]
//! converts the same message to `kafka-protocol`'s types, so both codecs encode byte-identical bodies
//! (checked in `tests/codec.rs`).

use kraft::history::VoterSetHistory;
use kraft::leader::LeaderState;
use kraft::node::sim;
use kraft::voter_set::VoterSet;
use kraft::wire::describe_quorum::{
    DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData, ReplicaState, TopicData,
    METADATA_TOPIC,
};
use uuid::Uuid;

/// Replica counts of the codec benches.
pub const REPLICA_COUNTS: [usize; 4] = [3, 5, 9, 100];
/// Voter counts of the leader benches.
pub const VOTER_COUNTS: [usize; 4] = [3, 5, 9, 31];
/// A fixed "now" in milliseconds (2023-11-14), so timestamps have realistic widths.
pub const NOW_MS: i64 = 1_700_000_000_000;

fn replica(id: i32, version: i16) -> ReplicaState {
    ReplicaState {
        replica_id: id,
        replica_directory_id: if version >= 2 {
            Uuid::from_u128(0x1111_0000_0000_0000_0000_0000_0000_0000 + id as u128)
        } else {
            Uuid::nil()
        },
        log_end_offset: 1_000_000 - i64::from(id),
        // v0 has no timestamps on the wire: keep their default so the message is the same after a round trip.
        last_fetch_timestamp: if version >= 1 {
            NOW_MS - i64::from(id) * 7
        } else {
            -1
        },
        last_caught_up_timestamp: if version >= 1 {
            NOW_MS - i64::from(id) * 11
        } else {
            -1
        },
        unknown_tagged_fields: Default::default(),
    }
}

/// Our DescribeQuorum response with `n` replicas, valid at `version` (see the module doc).
pub fn describe_response(n: usize, version: i16) -> DescribeQuorumResponse {
    let ids = 1..=n as i32;
    let voters: Vec<ReplicaState> = ids.clone().map(|id| replica(id, version)).collect();
    let nodes = if version >= 2 {
        ids.map(|id| NodeEndpoints {
            node_id: id,
            listeners: vec![Listener {
                name: "CONTROLLER".into(),
                host: format!("controller-{id}.kraft.example").into(),
                port: 9093,
                unknown_tagged_fields: Default::default(),
            }],
            unknown_tagged_fields: Default::default(),
        })
        .collect()
    } else {
        Vec::new()
    };
    let committed = if version >= 3 {
        voters.clone()
    } else {
        Vec::new()
    };
    DescribeQuorumResponse {
        error_code: 0,
        error_message: Some(Default::default()),
        topics: vec![TopicData {
            topic_name: METADATA_TOPIC.into(),
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: 0,
                error_message: Some(Default::default()),
                leader_id: 1,
                leader_epoch: 42,
                high_watermark: 999_990,
                current_voters: voters,
                observers: Vec::new(),
                committed_voters: committed,
                unknown_tagged_fields: Default::default(),
            }],
            unknown_tagged_fields: Default::default(),
        }],
        nodes,
        unknown_tagged_fields: Default::default(),
    }
}

/// The same message in `kafka-protocol`'s types (it has no `CommittedVoters`: compare at v0–2 only).
pub fn to_kafka(r: &DescribeQuorumResponse) -> kafka_protocol::messages::DescribeQuorumResponse {
    r.into()
}

/// Voters `1..=n` as the simulated cluster names them (directory ids, one listener each).
pub fn voters(n: usize) -> VoterSet {
    let ids: Vec<i32> = (1..=n as i32).collect();
    sim::voter_set(&ids)
}

/// A voter-set history of `len` entries: the bootstrap set at −1, then a VotersRecord every 10 offsets
/// that alternates between 3 and 4 voters (as repeated add/remove of voter 4 would write).
pub fn history(len: usize) -> (VoterSetHistory, i64) {
    let three = voters(3);
    let four = voters(4);
    let mut h = VoterSetHistory::with_bootstrap(three.clone());
    let mut last = -1;
    for i in 1..len {
        last = i as i64 * 10;
        let set = if i % 2 == 1 { &four } else { &three };
        h.add_at(last, set.clone())
            .expect("offsets are increasing and ≥ 0");
    }
    (h, last)
}

/// `count` HW values spread over `[0, max_hw]` by a fixed LCG, so lookups do not all hit one path.
pub fn spread_queries(max_hw: i64, count: usize) -> Vec<i64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..count)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 11) % (max_hw.max(0) as u64 + 1)) as i64
        })
        .collect()
}

/// A leader (replica 1, epoch 1, epoch start 0) of `n` voters whose own end offset is far ahead, so every
/// follower fetch moves its progress and, once a majority passed an offset, the HW.
pub fn leader(n: usize) -> (LeaderState, VoterSet) {
    let set = voters(n);
    let mut leader = LeaderState::new(sim::key(1), 1, 0, &set, 0, 2_000);
    leader.update_local_end_offset(i64::MAX / 2, &set);
    (leader, set)
}
