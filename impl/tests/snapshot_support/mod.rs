//! What the snapshot tests of the core share: a leader holding a snapshot, a FetchSnapshot request as a
//! replica sends it, and the leader's answer reduced to its error code and chunk length.
#![allow(dead_code)]

use bytes::Bytes;
use kafka_protocol::messages::fetch_snapshot_request::{
    PartitionSnapshot, SnapshotId as WireId, TopicSnapshot,
};
use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kraft::log::SnapshotId;
use kraft::node::{Message, METADATA_TOPIC};
use kraft_sim::{self as sim, Sim};

/// A valid snapshot file (header, KRaftVersion 1, Voters, footer) with `voters` as its voter set.
pub fn snapshot_file(voters: &[i32]) -> Bytes {
    kraft::records::encode_bootstrap_snapshot(&sim::voter_set(voters), 0).unwrap()
}

pub fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str(METADATA_TOPIC))
}

/// Leader 1 (the only voter) with `n` records committed and a snapshot at its HW; observer 2 crashed
/// before it fetched anything.
pub fn leader_with_snapshot(n: usize, seed: u64) -> (Sim, SnapshotId) {
    let mut cluster = Sim::new(1, 1, seed).unwrap();
    cluster.crash(2);
    cluster.elect(1);
    for i in 0..n {
        cluster.append(1, &[format!("r{i}").as_bytes()]).unwrap();
    }
    cluster.replicate(3);
    let id = SnapshotId {
        end_offset: cluster.node(1).high_watermark().unwrap(),
        epoch: cluster.node(1).epoch(),
    };
    assert_eq!(cluster.take_snapshot(1), Some(id), "a snapshot at the HW");
    assert!(cluster.node(1).snapshots().any(|m| m.id == id));
    (cluster, id)
}

/// FetchSnapshot of snapshot `id` from `position`, as replica 2 sends it in leader epoch `epoch`.
pub fn fetch_snapshot(
    epoch: i32,
    id: SnapshotId,
    position: i64,
    max_bytes: i32,
) -> FetchSnapshotRequest {
    FetchSnapshotRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str("sim-cluster")))
        .with_replica_id(BrokerId(2))
        .with_max_bytes(max_bytes)
        .with_topics(vec![TopicSnapshot::default()
            .with_name(topic())
            .with_partitions(vec![PartitionSnapshot::default()
                .with_current_leader_epoch(epoch)
                .with_snapshot_id(
                    WireId::default()
                        .with_end_offset(id.end_offset)
                        .with_epoch(id.epoch),
                )
                .with_position(position)])])
}

/// Leader 1's answer to `req` from `from`: the error code (partition, or top level) and the length of
/// the chunk it asks the shell to send.
pub fn ask(cluster: &mut Sim, from: i32, req: FetchSnapshotRequest) -> (i16, Option<u64>) {
    let now = cluster.clock(1);
    let out = cluster
        .node_mut(1)
        .handle(now, from, Message::FetchSnapshotRequest(req));
    let [(to, Message::FetchSnapshotResponse(resp))] = out.replies.as_slice() else {
        panic!("one FetchSnapshot response: {:?}", out.replies);
    };
    assert_eq!(*to, from);
    let code = match resp.topics.first().and_then(|t| t.partitions.first()) {
        Some(p) if resp.error_code == 0 => p.error_code,
        _ => resp.error_code,
    };
    (code, kraft::node::snapshot_chunk(resp).map(|c| c.len))
}
