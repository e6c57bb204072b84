//! Building and reading the kafka-protocol structs of the Raft RPCs (one topic, one partition).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    begin_quorum_epoch_request, begin_quorum_epoch_response, end_quorum_epoch_request,
    end_quorum_epoch_response, fetch_request, fetch_response, vote_request, vote_response,
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, BrokerId, EndQuorumEpochRequest,
    EndQuorumEpochResponse, FetchRequest, FetchResponse, TopicName, VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::log::SnapshotId;

/// The metadata log's topic and partition; every other topic/partition is refused.
pub use crate::wire::describe_quorum::METADATA_TOPIC;
pub const METADATA_PARTITION: i32 = 0;

/// Private tagged field of a Fetch response partition: the request's `(epoch i32, fetch offset i64,
/// last fetched epoch i32)`, big-endian. Kafka peers skip unknown tags.
pub const FETCH_ECHO_TAG: i32 = 0x4b52;

pub use crate::wire::error_codes::{self as errors, error_message};

/// Kafka's topic id of `__cluster_metadata` (`Uuid.METADATA_TOPIC_ID`): Fetch v13+ carries the id, not the name.
pub const METADATA_TOPIC_ID: uuid::Uuid = uuid::Uuid::from_u128(1);

pub(crate) fn topic_name() -> TopicName {
    TopicName(StrBytes::from_static_str(METADATA_TOPIC))
}

pub(crate) fn is_metadata_topic(name: &str) -> bool {
    name == METADATA_TOPIC
}

pub(crate) fn cluster_id_mismatch(request: &Option<StrBytes>, local: &str) -> bool {
    request.as_ref().is_some_and(|c| c.as_str() != local)
}

/// A topic entry of a Raft RPC: its name and partitions. One impl per message, so the metadata-partition
/// lookup below is written once.
pub(crate) trait RaftTopic {
    type Partition;
    fn is_metadata(&self) -> bool;
    fn partitions(&self) -> &[Self::Partition];
}

/// A partition entry of a Raft RPC request: its index.
pub(crate) trait RaftPartition {
    fn index(&self) -> i32;
}

macro_rules! raft_topic {
    ($topic:ty, $partition:ty, $name:ident, $partitions:ident) => {
        impl RaftTopic for $topic {
            type Partition = $partition;
            fn is_metadata(&self) -> bool {
                is_metadata_topic(&self.$name.0)
            }
            fn partitions(&self) -> &[$partition] {
                &self.$partitions
            }
        }
    };
}

macro_rules! raft_partition {
    ($partition:ty, $index:ident) => {
        impl RaftPartition for $partition {
            fn index(&self) -> i32 {
                self.$index
            }
        }
    };
}

raft_topic!(
    vote_request::TopicData,
    vote_request::PartitionData,
    topic_name,
    partitions
);
raft_topic!(
    begin_quorum_epoch_request::TopicData,
    begin_quorum_epoch_request::PartitionData,
    topic_name,
    partitions
);
raft_topic!(
    end_quorum_epoch_request::TopicData,
    end_quorum_epoch_request::PartitionData,
    topic_name,
    partitions
);
raft_topic!(
    vote_response::TopicData,
    vote_response::PartitionData,
    topic_name,
    partitions
);
raft_topic!(
    begin_quorum_epoch_response::TopicData,
    begin_quorum_epoch_response::PartitionData,
    topic_name,
    partitions
);
raft_topic!(
    end_quorum_epoch_response::TopicData,
    end_quorum_epoch_response::PartitionData,
    topic_name,
    partitions
);
raft_topic!(
    fetch_response::FetchableTopicResponse,
    fetch_response::PartitionData,
    topic,
    partitions
);
raft_partition!(vote_request::PartitionData, partition_index);
raft_partition!(begin_quorum_epoch_request::PartitionData, partition_index);
raft_partition!(end_quorum_epoch_request::PartitionData, partition_index);
raft_partition!(fetch_request::FetchPartition, partition);

/// The single metadata partition of a request, if the request names exactly it (anything else is
/// INVALID_REQUEST, as Kafka answers a request for another partition).
fn metadata_partition<T: RaftTopic>(topics: &[T]) -> Option<&T::Partition>
where
    T::Partition: RaftPartition,
{
    match topics {
        [t] if t.is_metadata() => match t.partitions() {
            [p] if p.index() == METADATA_PARTITION => Some(p),
            _ => None,
        },
        _ => None,
    }
}

/// The first partition of a response (a peer answers the one partition asked about).
fn first_partition<T: RaftTopic>(topics: &[T]) -> Option<&T::Partition> {
    topics.first().and_then(|t| t.partitions().first())
}

pub(crate) fn vote_partition(req: &VoteRequest) -> Option<&vote_request::PartitionData> {
    metadata_partition(&req.topics)
}

pub(crate) fn begin_partition(
    req: &BeginQuorumEpochRequest,
) -> Option<&begin_quorum_epoch_request::PartitionData> {
    metadata_partition(&req.topics)
}

pub(crate) fn end_partition(
    req: &EndQuorumEpochRequest,
) -> Option<&end_quorum_epoch_request::PartitionData> {
    metadata_partition(&req.topics)
}

/// Fetch v13+ names the topic by id, older versions by name: either names the metadata topic.
pub(crate) fn fetch_partition(req: &FetchRequest) -> Option<&fetch_request::FetchPartition> {
    match req.topics.as_slice() {
        [t] if is_metadata_topic(&t.topic.0) || t.topic_id == METADATA_TOPIC_ID => {
            match t.partitions.as_slice() {
                [p] if p.index() == METADATA_PARTITION => Some(p),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The replica id of a Fetch: `replica_state` (v15+), else the old `replica_id` field.
pub(crate) fn fetch_replica_id(req: &FetchRequest) -> i32 {
    if req.replica_state.replica_id.0 >= 0 {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    }
}

pub(crate) fn vote_response_partition(
    resp: &VoteResponse,
) -> Option<&vote_response::PartitionData> {
    first_partition(&resp.topics)
}

pub(crate) fn begin_response_partition(
    resp: &BeginQuorumEpochResponse,
) -> Option<&begin_quorum_epoch_response::PartitionData> {
    first_partition(&resp.topics)
}

pub(crate) fn end_response_partition(
    resp: &EndQuorumEpochResponse,
) -> Option<&end_quorum_epoch_response::PartitionData> {
    first_partition(&resp.topics)
}

pub(crate) fn fetch_response_partition(
    resp: &FetchResponse,
) -> Option<&fetch_response::PartitionData> {
    first_partition(&resp.responses)
}

pub(crate) fn vote_response(
    top_error: i16,
    partition_error: i16,
    leader_id: i32,
    epoch: i32,
    granted: bool,
) -> VoteResponse {
    let partitions = if top_error == 0 {
        vec![vote_response::PartitionData::default()
            .with_partition_index(METADATA_PARTITION)
            .with_error_code(partition_error)
            .with_leader_id(BrokerId(leader_id))
            .with_leader_epoch(epoch)
            .with_vote_granted(granted)]
    } else {
        Vec::new()
    };
    VoteResponse::default()
        .with_error_code(top_error)
        .with_topics(vec![vote_response::TopicData::default()
            .with_topic_name(topic_name())
            .with_partitions(partitions)])
}

pub(crate) fn begin_response(
    top_error: i16,
    partition_error: i16,
    leader_id: i32,
    epoch: i32,
) -> BeginQuorumEpochResponse {
    BeginQuorumEpochResponse::default()
        .with_error_code(top_error)
        .with_topics(vec![begin_quorum_epoch_response::TopicData::default()
            .with_topic_name(topic_name())
            .with_partitions(vec![
                begin_quorum_epoch_response::PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_error_code(partition_error)
                    .with_leader_id(BrokerId(leader_id))
                    .with_leader_epoch(epoch),
            ])])
}

pub(crate) fn end_response(
    top_error: i16,
    partition_error: i16,
    leader_id: i32,
    epoch: i32,
) -> EndQuorumEpochResponse {
    EndQuorumEpochResponse::default()
        .with_error_code(top_error)
        .with_topics(vec![end_quorum_epoch_response::TopicData::default()
            .with_topic_name(topic_name())
            .with_partitions(vec![
                end_quorum_epoch_response::PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_error_code(partition_error)
                    .with_leader_id(BrokerId(leader_id))
                    .with_leader_epoch(epoch),
            ])])
}

/// The identity of a fetch request, echoed in its response under [`FETCH_ECHO_TAG`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FetchEcho {
    pub epoch: i32,
    pub fetch_offset: i64,
    pub last_fetched_epoch: i32,
}

impl FetchEcho {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(16);
        b.put_i32(self.epoch);
        b.put_i64(self.fetch_offset);
        b.put_i32(self.last_fetched_epoch);
        b.freeze()
    }

    /// `None` unless `bytes` is exactly an encoded echo.
    pub fn decode(mut bytes: Bytes) -> Option<FetchEcho> {
        if bytes.len() != 16 {
            return None;
        }
        Some(FetchEcho {
            epoch: bytes.get_i32(),
            fetch_offset: bytes.get_i64(),
            last_fetched_epoch: bytes.get_i32(),
        })
    }
}

/// What a Fetch response partition says, read once.
pub(crate) struct FetchReply {
    pub error: i16,
    pub high_watermark: i64,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub diverging: Option<(i32, i64)>,
    /// `SnapshotId` (Fetch v12+, tagged): fetch this snapshot instead. `Err` holds an id with only one
    /// of its two fields valid, which Kafka's follower logs and drops.
    pub snapshot_id: Option<Result<SnapshotId, (i64, i32)>>,
    pub records: Option<Bytes>,
    pub echo: Option<FetchEcho>,
    /// The leader's endpoint from NodeEndpoints (Fetch v16+), if the response names one for `leader_id`.
    pub leader_endpoint: Option<(String, u16)>,
}

pub(crate) fn read_fetch_response(resp: &FetchResponse) -> Option<FetchReply> {
    let p = fetch_response_partition(resp)?;
    let error = if resp.error_code != 0 {
        resp.error_code
    } else {
        p.error_code
    };
    let diverging = (p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0)
        .then_some((p.diverging_epoch.epoch, p.diverging_epoch.end_offset));
    let (end_offset, epoch) = (p.snapshot_id.end_offset, p.snapshot_id.epoch);
    let snapshot_id = (end_offset >= 0 || epoch >= 0).then_some(if end_offset >= 0 && epoch >= 0 {
        Ok(SnapshotId { end_offset, epoch })
    } else {
        Err((end_offset, epoch))
    });
    let echo = p
        .unknown_tagged_fields
        .get(&FETCH_ECHO_TAG)
        .and_then(|b| FetchEcho::decode(b.clone()));
    let leader_id = p.current_leader.leader_id.0;
    let leader_endpoint = resp
        .node_endpoints
        .iter()
        .find(|e| e.node_id.0 == leader_id && leader_id >= 0)
        .and_then(|e| Some((e.host.to_string(), u16::try_from(e.port).ok()?)));
    Some(FetchReply {
        error,
        high_watermark: p.high_watermark,
        leader_id,
        leader_epoch: p.current_leader.leader_epoch,
        diverging,
        snapshot_id,
        records: p.records.clone().filter(|r| !r.is_empty()),
        echo,
        leader_endpoint,
    })
}

pub(crate) struct FetchResponseParts {
    pub top_error: i16,
    pub error: i16,
    pub high_watermark: i64,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub diverging: Option<(i32, i64)>,
    /// Kafka's `ValidOffsetAndEpoch.snapshot`: the replica must fetch this snapshot.
    pub snapshot_id: Option<SnapshotId>,
    pub records: Option<Bytes>,
    pub echo: Option<FetchEcho>,
    pub log_start_offset: i64,
    /// The leader named in `leader_id` and its endpoint, sent as NodeEndpoints (Fetch v16+, tagged).
    pub leader_endpoint: Option<(i32, crate::voter_set::Endpoint)>,
}

pub(crate) fn fetch_response(parts: FetchResponseParts) -> FetchResponse {
    let mut p = fetch_response::PartitionData::default()
        .with_partition_index(METADATA_PARTITION)
        .with_error_code(parts.error)
        .with_high_watermark(parts.high_watermark)
        .with_log_start_offset(parts.log_start_offset)
        .with_current_leader(
            fetch_response::LeaderIdAndEpoch::default()
                .with_leader_id(BrokerId(parts.leader_id))
                .with_leader_epoch(parts.leader_epoch),
        )
        .with_records(Some(parts.records.unwrap_or_default()));
    if let Some((epoch, end_offset)) = parts.diverging {
        p = p.with_diverging_epoch(
            fetch_response::EpochEndOffset::default()
                .with_epoch(epoch)
                .with_end_offset(end_offset),
        );
    }
    if let Some(id) = parts.snapshot_id {
        p = p.with_snapshot_id(
            fetch_response::SnapshotId::default()
                .with_end_offset(id.end_offset)
                .with_epoch(id.epoch),
        );
    }
    if let Some(echo) = parts.echo {
        p.unknown_tagged_fields
            .insert(FETCH_ECHO_TAG, echo.encode());
    }
    let node_endpoints = parts
        .leader_endpoint
        .into_iter()
        .map(|(id, e)| {
            fetch_response::NodeEndpoint::default()
                .with_node_id(BrokerId(id))
                .with_host(StrBytes::from_string(e.host))
                .with_port(i32::from(e.port))
        })
        .collect();
    FetchResponse::default()
        .with_node_endpoints(node_endpoints)
        .with_error_code(parts.top_error)
        .with_responses(vec![fetch_response::FetchableTopicResponse::default()
            .with_topic(topic_name())
            .with_topic_id(METADATA_TOPIC_ID)
            .with_partitions(vec![p])])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_round_trip_and_rejects_bad_length() {
        let e = FetchEcho {
            epoch: 3,
            fetch_offset: 17,
            last_fetched_epoch: 2,
        };
        assert_eq!(FetchEcho::decode(e.encode()), Some(e));
        assert_eq!(FetchEcho::decode(Bytes::from_static(b"short")), None);
    }

    #[test]
    fn fetch_response_round_trip_through_reader() {
        let echo = FetchEcho {
            epoch: 1,
            fetch_offset: 0,
            last_fetched_epoch: 0,
        };
        let r = fetch_response(FetchResponseParts {
            top_error: 0,
            error: 0,
            high_watermark: -1,
            leader_id: 1,
            leader_epoch: 1,
            diverging: Some((1, 3)),
            snapshot_id: None,
            records: None,
            echo: Some(echo),
            log_start_offset: 0,
            leader_endpoint: Some((
                1,
                crate::voter_set::Endpoint {
                    name: "CONTROLLER".into(),
                    host: "h1".into(),
                    port: 9093,
                },
            )),
        });
        // Kafka's NodeEndpoints: how a replica that knows no voters learns where the leader is.
        assert_eq!(r.node_endpoints.len(), 1);
        assert_eq!(
            (r.node_endpoints[0].node_id.0, r.node_endpoints[0].port),
            (1, 9093)
        );
        let read = read_fetch_response(&r).unwrap();
        assert_eq!(
            (read.diverging, read.echo, read.records),
            (Some((1, 3)), Some(echo), None)
        );
        assert_eq!(error_message(errors::NONE), None);
        assert!(error_message(errors::VOTER_NOT_FOUND).is_some());
    }
}
