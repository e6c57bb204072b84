//! Snapshots (KIP-630), the leader's side: which snapshots this replica holds, when a Fetch is answered
//! with a `SnapshotId` instead of records (Kafka 4.4's `tryCompleteFetchRequest` and
//! `validateOffsetAndEpoch`), and FetchSnapshot served as Kafka's `handleFetchSnapshotRequest`. The core
//! never holds snapshot bytes: its FetchSnapshot response names the chunk (private tag
//! [`SNAPSHOT_CHUNK_TAG`]) and the shell fills it from the file ([`fill_snapshot_chunk`]).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_snapshot_request;
use kafka_protocol::messages::fetch_snapshot_response::{
    LeaderIdAndEpoch, NodeEndpoint, PartitionSnapshot, SnapshotId as WireSnapshotId, TopicSnapshot,
};
use kafka_protocol::messages::{BrokerId, FetchSnapshotRequest, FetchSnapshotResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::log::{RaftLog, SnapshotId, SnapshotMeta};
use crate::voter_set::ReplicaKey;

use super::fetch::MAX_FETCH_BYTES;
use super::messages::{self, errors, METADATA_PARTITION};
use super::types::*;
use super::{Node, RoleState};

/// Private tagged field of a FetchSnapshot response partition as the core emits it: the length of the
/// chunk to send (u64, big-endian). [`fill_snapshot_chunk`] removes it; it never reaches the wire.
pub const SNAPSHOT_CHUNK_TAG: i32 = 0x4b53;

/// The snapshots a replica holds, ascending by id (the bootstrap snapshot (0, 0) first when the replica
/// was formatted with one, as Kafka's log lists it until its log start moves past 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeldSnapshots {
    held: Vec<SnapshotMeta>,
    /// The bootstrap snapshot's entry was made by `Node::with_snapshots`, no file describing it: it has
    /// no LastContainedLogTimestamp yet.
    undated_bootstrap: bool,
}

impl HeldSnapshots {
    pub fn get(&self, id: SnapshotId) -> Option<&SnapshotMeta> {
        self.held.iter().find(|m| m.id == id)
    }

    pub fn latest(&self) -> Option<&SnapshotMeta> {
        self.held.last()
    }

    pub fn earliest(&self) -> Option<&SnapshotMeta> {
        self.held.first()
    }

    pub fn iter(&self) -> impl Iterator<Item = &SnapshotMeta> + '_ {
        self.held.iter()
    }

    /// The bootstrap snapshot's entry, made without its file (see [`Self::date_undescribed_bootstrap`]).
    pub fn insert_undescribed_bootstrap(&mut self, meta: SnapshotMeta) {
        self.insert(meta);
        self.undated_bootstrap = true;
    }

    /// Adds (or replaces) a snapshot, keeping the order.
    pub fn insert(&mut self, meta: SnapshotMeta) {
        if meta.id == SnapshotId::BOOTSTRAP {
            self.undated_bootstrap = false;
        }
        match self.held.binary_search_by_key(&meta.id, |m| m.id) {
            Ok(i) => self.held[i] = meta,
            Err(i) => self.held.insert(i, meta),
        }
    }

    /// Dates the bootstrap snapshot no file described at `wall`: the core takes it to have been formatted
    /// when the node started.
    pub fn date_undescribed_bootstrap(&mut self, wall: crate::time::WallMillis) {
        if std::mem::take(&mut self.undated_bootstrap) {
            for m in self
                .held
                .iter_mut()
                .filter(|m| m.id == SnapshotId::BOOTSTRAP)
            {
                m.last_contained_log_timestamp = wall;
            }
        }
    }

    /// Forgets the snapshots below `id` (Kafka's `forgetSnapshotsBefore`).
    pub fn forget_before(&mut self, id: SnapshotId) {
        self.held.retain(|m| m.id >= id);
    }
}

/// The chunk a FetchSnapshot response of the core asks the shell to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotChunk {
    pub id: SnapshotId,
    pub position: u64,
    pub len: u64,
}

/// The chunk to read for a FetchSnapshot response of the core (`None` for an error response).
pub fn snapshot_chunk(resp: &FetchSnapshotResponse) -> Option<SnapshotChunk> {
    let p = resp.topics.first()?.partitions.first()?;
    let mut len = p.unknown_tagged_fields.get(&SNAPSHOT_CHUNK_TAG)?.clone();
    if len.len() != 8 {
        return None;
    }
    Some(SnapshotChunk {
        id: SnapshotId {
            end_offset: p.snapshot_id.end_offset,
            epoch: p.snapshot_id.epoch,
        },
        position: u64::try_from(p.position).ok()?,
        len: len.get_u64(),
    })
}

/// Puts the chunk's bytes into a FetchSnapshot response of the core and drops the private tag.
pub fn fill_snapshot_chunk(resp: &mut FetchSnapshotResponse, bytes: Bytes) {
    if let Some(p) = resp
        .topics
        .first_mut()
        .and_then(|t| t.partitions.first_mut())
    {
        p.unknown_tagged_fields.remove(&SNAPSHOT_CHUNK_TAG);
        p.unaligned_records = bytes;
    }
}

fn chunk_tag(len: u64) -> Bytes {
    let mut b = BytesMut::with_capacity(8);
    b.put_u64(len);
    b.freeze()
}

/// A FetchSnapshot response with one partition of the metadata topic (Kafka's
/// `singletonFetchSnapshotResponse`), NodeEndpoints naming the leader when it is known.
fn singleton_response(
    name: TopicName,
    partition: PartitionSnapshot,
    leader: Option<(i32, crate::voter_set::Endpoint)>,
) -> FetchSnapshotResponse {
    let node_endpoints = leader
        .into_iter()
        .map(|(id, e)| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(id))
                .with_host(StrBytes::from_string(e.host))
                .with_port(e.port)
        })
        .collect();
    FetchSnapshotResponse::default()
        .with_topics(vec![TopicSnapshot::default()
            .with_name(name)
            .with_partitions(vec![partition])])
        .with_node_endpoints(node_endpoints)
}

impl Node {
    /// Kafka's `validateLeaderOnlyRequest`: the request's epoch against this replica's, then leadership.
    pub(super) fn leader_only_error(&self, request_epoch: i32) -> Option<i16> {
        let epoch = self.election.epoch;
        if request_epoch < epoch {
            Some(errors::FENCED_LEADER_EPOCH)
        } else if request_epoch > epoch {
            Some(errors::UNKNOWN_LEADER_EPOCH)
        } else if !matches!(self.role, RoleState::Leader(_)) {
            Some(errors::NOT_LEADER_OR_FOLLOWER)
        } else {
            None
        }
    }

    /// The snapshot a fetcher at `(fetch_offset, last_fetched_epoch)` must fetch instead of records, if
    /// any: Kafka 4.4's `tryCompleteFetchRequest` (offset 0 with a snapshot other than the bootstrap one)
    /// and `validateOffsetAndEpoch` (below the log start; at it with another epoch than the earliest
    /// snapshot's; an epoch older than the earliest snapshot's), always naming the latest snapshot.
    pub(super) fn snapshot_for_fetch(
        &self,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    ) -> Option<SnapshotId> {
        let latest = self.snapshots.latest().map(|m| m.id);
        if fetch_offset == 0 && latest.is_some_and(|id| id != SnapshotId::BOOTSTRAP) {
            return latest;
        }
        let start = self.log.start_offset();
        if start == 0 && fetch_offset == 0 {
            return None;
        }
        let earliest = self.snapshots.earliest()?.id;
        let behind = fetch_offset < start
            || (fetch_offset == start && last_fetched_epoch != earliest.epoch)
            || last_fetched_epoch < earliest.epoch;
        if behind {
            // Kafka throws when the log start moved with no snapshot held; a held earliest implies one.
            latest
        } else {
            None
        }
    }

    /// The shell's answer to [`Effect::TakeSnapshot`]: the snapshot is stored (`Ok`, with its size and
    /// what its control records say) and may be served from now on, or writing it failed (`Err`). Only
    /// the snapshot asked for is taken on, and not once an install replaced the log it was taken of;
    /// anything else is logged. Its id was checked against the HW when it was asked for, as
    /// Kafka's `createSnapshot` checks it, not when it is frozen: a committed offset stays committed, so a
    /// leader change that leaves the HW unknown meanwhile does not lose the snapshot.
    pub fn snapshot_taken(
        &mut self,
        now: Millis,
        id: SnapshotId,
        result: Result<SnapshotMeta, String>,
    ) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        let asked = self.taking == Some(id);
        if asked {
            self.taking = None;
        }
        match result {
            Ok(meta) => {
                if asked && meta.id == id {
                    tracing::info!(node = self.local.id, %id, size = meta.size, "snapshot taken");
                    self.snapshots.insert(meta);
                } else {
                    tracing::error!(node = self.local.id, %id, reported = %meta.id, asked, "snapshot not asked for ignored");
                }
            }
            Err(reason) => {
                tracing::error!(node = self.local.id, %id, %reason, "snapshot could not be written")
            }
        }
        self.finish(now, &mut out);
        out
    }

    /// The snapshots this replica holds, oldest first.
    pub fn snapshots(&self) -> impl Iterator<Item = &SnapshotMeta> + '_ {
        self.snapshots.iter()
    }

    /// FetchSnapshot from a replica: answered at once, as Kafka's `handleFetchSnapshotRequest`.
    pub(super) fn on_fetch_snapshot_request(
        &mut self,
        now: Millis,
        from: i32,
        req: FetchSnapshotRequest,
        out: &mut Output,
    ) {
        let resp = self.answer_fetch_snapshot(now, &req);
        out.replies
            .push((from, Message::FetchSnapshotResponse(resp)));
    }

    fn answer_fetch_snapshot(
        &mut self,
        now: Millis,
        req: &FetchSnapshotRequest,
    ) -> FetchSnapshotResponse {
        if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
            return FetchSnapshotResponse::default()
                .with_error_code(errors::INCONSISTENT_CLUSTER_ID);
        }
        let invalid = FetchSnapshotResponse::default().with_error_code(errors::INVALID_REQUEST);
        // Kafka's check, as written (`topics().size() != 1 && partitions().size() != 1`); an empty
        // request, where Kafka's lookup throws, is refused the same way.
        let Some(first_topic) = req.topics.first() else {
            return invalid;
        };
        let Some(first_partition) = first_topic.partitions.first() else {
            return invalid;
        };
        if req.topics.len() != 1 && first_topic.partitions.len() != 1 {
            return invalid;
        }
        let leader_id = self.known_leader_or_sentinel();
        let leader_endpoint = self.leader_endpoint().filter(|(id, _)| *id >= 0);
        // Kafka's `FetchSnapshotRequest.forTopicPartition`: any entry naming the metadata partition.
        let found = req
            .topics
            .iter()
            .filter(|t| messages::is_metadata_topic(&t.name.0))
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition == METADATA_PARTITION);
        let Some(p) = found else {
            let partition = PartitionSnapshot::default()
                .with_index(first_partition.partition)
                .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
            return singleton_response(first_topic.name.clone(), partition, leader_endpoint);
        };
        let base = PartitionSnapshot::default()
            .with_index(METADATA_PARTITION)
            .with_current_leader(
                LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(leader_id))
                    .with_leader_epoch(self.election.epoch),
            );
        let error = |code: i16| {
            singleton_response(
                messages::topic_name(),
                base.clone().with_error_code(code),
                leader_endpoint.clone(),
            )
        };
        if let Some(code) = self.leader_only_error(p.current_leader_epoch) {
            return error(code);
        }
        let id = SnapshotId {
            end_offset: p.snapshot_id.end_offset,
            epoch: p.snapshot_id.epoch,
        };
        // The bootstrap snapshot is never replicated: the first leader puts its content in the log.
        let size = match self.snapshots.get(id) {
            Some(meta) if id != SnapshotId::BOOTSTRAP => meta.size,
            _ => return error(errors::SNAPSHOT_NOT_FOUND),
        };
        let position = match u64::try_from(p.position) {
            Ok(position) if position < size => position,
            _ => return error(errors::POSITION_OUT_OF_RANGE),
        };
        // MaxBytes (Kafka: `min(maxBytes, size)` from the position, the file ends the slice) and this
        // node's own bound on a response.
        let max = u64::try_from(req.max_bytes).unwrap_or(0);
        let len = max.min(size - position).min(MAX_FETCH_BYTES as u64);
        let replica = ReplicaKey::new(req.replica_id.0, p.replica_directory_id);
        if let RoleState::Leader(l) = &mut self.role {
            l.update_check_quorum_for_voter(replica, now, self.config.check_quorum_timeout_ms);
        }
        let mut partition = base
            .with_snapshot_id(
                WireSnapshotId::default()
                    .with_end_offset(id.end_offset)
                    .with_epoch(id.epoch),
            )
            .with_size(size as i64)
            .with_position(p.position);
        partition
            .unknown_tagged_fields
            .insert(SNAPSHOT_CHUNK_TAG, chunk_tag(len));
        singleton_response(messages::topic_name(), partition, leader_endpoint)
    }
}

/// The one partition of a FetchSnapshot request this replica sends.
pub(crate) fn fetch_snapshot_partition(
    epoch: i32,
    id: SnapshotId,
    position: u64,
    directory_id: uuid::Uuid,
) -> fetch_snapshot_request::PartitionSnapshot {
    fetch_snapshot_request::PartitionSnapshot::default()
        .with_partition(METADATA_PARTITION)
        .with_current_leader_epoch(epoch)
        .with_snapshot_id(
            fetch_snapshot_request::SnapshotId::default()
                .with_end_offset(id.end_offset)
                .with_epoch(id.epoch),
        )
        .with_position(i64::try_from(position).unwrap_or(i64::MAX))
        .with_replica_directory_id(directory_id)
}
