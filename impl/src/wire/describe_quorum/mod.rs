//! DescribeQuorum (API key 55) request and response, versions 0–3.
//!
//! Versions 0–2 are byte-identical to Apache Kafka (checked against `kafka-protocol`); version 3 adds
//! `CommittedVoters` (KIP-1204, see `specs/messages/DescribeQuorumResponse.json`) where apache/kafka#20712
//! puts it: right after `CurrentVoters`, nullable. Every version is flexible: compact strings and arrays,
//! and a tagged-field section closing every struct.
//!
//! Writing rule (Kafka's generated code): a field the target version lacks is dropped when it is ignorable
//! (`ErrorMessage` below v2, the timestamps at v0, `CommittedVoters` below v3) and is an encode error when it
//! is not ignorable and holds a non-default value (`ReplicaDirectoryId` or `Nodes` below v2).
//! Decoding fills absent fields with their defaults: `ErrorMessage` `""`, timestamps −1, nil directory id,
//! empty `Nodes` and `CommittedVoters`. A null `CommittedVoters` (v3 allows it; we never send it) decodes
//! as the empty list: "not known", which is also what the empty list means.

use bytes::{BufMut, Bytes, BytesMut};
pub use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

pub use super::codec::UnknownTaggedFields;
use super::codec::{
    array_header_size, check_room, compact_nullable_string_size, compact_string_size,
    fast_array_header_size, fast_nullable_string_size, fast_string_size, fast_tagged_fields_size,
    put_array_header, put_compact_nullable_string, put_compact_string, put_tagged_fields,
    tagged_fields_size, Reader,
};
use super::error::WireError;

mod kafka;
mod replica;
mod serde_str;
use replica::{
    fast_replicas_size, read_nullable_replicas, read_replicas, replicas_size, write_replicas,
};

pub const API_KEY: i16 = 55;
pub const MIN_VERSION: i16 = 0;
pub const MAX_VERSION: i16 = 3;
/// Every DescribeQuorum version uses request header v2 and response header v1.
pub const REQUEST_HEADER_VERSION: i16 = 2;
pub const RESPONSE_HEADER_VERSION: i16 = 1;

/// The only partition DescribeQuorum describes.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
pub const METADATA_PARTITION: i32 = 0;

fn check_version(message: &'static str, version: i16) -> Result<(), WireError> {
    if (MIN_VERSION..=MAX_VERSION).contains(&version) {
        Ok(())
    } else {
        Err(WireError::UnsupportedVersion {
            message,
            version,
            min: MIN_VERSION,
            max: MAX_VERSION,
        })
    }
}

/// Size of a compact array of `items`, each sized by `size`.
#[inline]
fn array_size<T>(
    field: &'static str,
    items: &[T],
    mut size: impl FnMut(&T) -> Result<usize, WireError>,
) -> Result<usize, WireError> {
    let mut total = array_header_size(field, items.len())?;
    for item in items {
        total += size(item)?;
    }
    Ok(total)
}

/// Decodes a compact array; the count is checked against the remaining input before preallocating.
#[inline]
fn read_array<'a, T>(
    r: &mut Reader<'a>,
    field: &'static str,
    min_element_size: usize,
    mut read: impl FnMut(&mut Reader<'a>) -> Result<T, WireError>,
) -> Result<Vec<T>, WireError> {
    let count = r.array_len(field, min_element_size)?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(read(r)?);
    }
    Ok(items)
}

/// Encodes into a fresh buffer of exactly the right size.
macro_rules! message_api {
    ($ty:ident, $name:literal) => {
        impl $ty {
            /// Exact encoded size at `version`; fails where `encode` would.
            pub fn encoded_size(&self, version: i16) -> Result<usize, WireError> {
                check_version($name, version)?;
                // The fast pass only says "too long or not allowed"; the checked pass says what.
                match self.fast_size(version) {
                    Some(size) => Ok(size),
                    None => self.size(version),
                }
            }

            /// Appends the body at `version`. On error nothing has been written.
            pub fn encode(&self, version: i16, buf: &mut impl BufMut) -> Result<(), WireError> {
                let size = self.encoded_size(version)?;
                check_room(buf, size)?;
                self.write(version, buf);
                Ok(())
            }

            /// The body at `version` in a buffer allocated once at the exact size.
            pub fn to_bytes(&self, version: i16) -> Result<Bytes, WireError> {
                let size = self.encoded_size(version)?;
                let mut buf = BytesMut::with_capacity(size);
                self.write(version, &mut buf);
                Ok(buf.freeze())
            }

            /// Decodes a whole body at `version`; trailing bytes are an error.
            pub fn decode(input: &[u8], version: i16) -> Result<Self, WireError> {
                let mut r = Reader::new(input);
                let value = Self::decode_from(&mut r, version)?;
                r.finish()?;
                Ok(value)
            }

            /// Decodes a whole body at `version`; its strings are slices of `input` (no copy).
            pub fn decode_bytes(input: &Bytes, version: i16) -> Result<Self, WireError> {
                let mut r = Reader::from_bytes(input);
                let value = Self::decode_from(&mut r, version)?;
                r.finish()?;
                Ok(value)
            }

            /// Decodes a body at `version` from the reader, leaving any bytes after it unread.
            pub fn decode_from(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
                check_version($name, version)?;
                Self::read(r, version)
            }
        }
    };
}

message_api!(DescribeQuorumRequest, "DescribeQuorumRequest");
message_api!(DescribeQuorumResponse, "DescribeQuorumResponse");

// ---------------------------------------------------------------------------------------------------------
// Request

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DescribeQuorumRequest {
    pub topics: Vec<TopicRequest>,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicRequest {
    pub topic_name: String,
    pub partitions: Vec<PartitionRequest>,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionRequest {
    pub partition_index: i32,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl DescribeQuorumRequest {
    /// The request every client sends: `__cluster_metadata` partition 0.
    pub fn for_metadata_partition() -> Self {
        DescribeQuorumRequest {
            topics: vec![TopicRequest {
                topic_name: METADATA_TOPIC.to_owned(),
                partitions: vec![PartitionRequest {
                    partition_index: METADATA_PARTITION,
                    unknown_tagged_fields: UnknownTaggedFields::new(),
                }],
                unknown_tagged_fields: UnknownTaggedFields::new(),
            }],
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }

    fn fast_size(&self, version: i16) -> Option<usize> {
        self.size(version).ok()
    }

    fn size(&self, _version: i16) -> Result<usize, WireError> {
        Ok(array_size(
            "DescribeQuorumRequest.Topics",
            &self.topics,
            TopicRequest::size,
        )? + tagged_fields_size(
            "DescribeQuorumRequest._tagged_fields",
            &self.unknown_tagged_fields,
        )?)
    }

    fn write(&self, _version: i16, buf: &mut impl BufMut) {
        put_array_header(buf, self.topics.len());
        for topic in &self.topics {
            topic.write(buf);
        }
        put_tagged_fields(buf, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, _version: i16) -> Result<Self, WireError> {
        Ok(DescribeQuorumRequest {
            topics: read_array(
                r,
                "DescribeQuorumRequest.Topics",
                TopicRequest::MIN_SIZE,
                TopicRequest::read,
            )?,
            unknown_tagged_fields: r.tagged_fields("DescribeQuorumRequest._tagged_fields")?,
        })
    }
}

impl TopicRequest {
    const MIN_SIZE: usize = 3;

    fn size(&self) -> Result<usize, WireError> {
        Ok(compact_string_size(
            "DescribeQuorumRequest.TopicData.TopicName",
            &self.topic_name,
        )? + array_size(
            "DescribeQuorumRequest.TopicData.Partitions",
            &self.partitions,
            |p| p.size(),
        )? + tagged_fields_size(
            "DescribeQuorumRequest.TopicData._tagged_fields",
            &self.unknown_tagged_fields,
        )?)
    }

    fn write(&self, buf: &mut impl BufMut) {
        put_compact_string(buf, &self.topic_name);
        put_array_header(buf, self.partitions.len());
        for partition in &self.partitions {
            buf.put_i32(partition.partition_index);
            put_tagged_fields(buf, &partition.unknown_tagged_fields);
        }
        put_tagged_fields(buf, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(TopicRequest {
            topic_name: r.compact_string("DescribeQuorumRequest.TopicData.TopicName")?,
            partitions: read_array(r, "DescribeQuorumRequest.TopicData.Partitions", 5, |r| {
                Ok(PartitionRequest {
                    partition_index: r.i32("DescribeQuorumRequest.PartitionData.PartitionIndex")?,
                    unknown_tagged_fields: r
                        .tagged_fields("DescribeQuorumRequest.PartitionData._tagged_fields")?,
                })
            })?,
            unknown_tagged_fields: r
                .tagged_fields("DescribeQuorumRequest.TopicData._tagged_fields")?,
        })
    }
}

impl PartitionRequest {
    fn size(&self) -> Result<usize, WireError> {
        Ok(4 + tagged_fields_size(
            "DescribeQuorumRequest.PartitionData._tagged_fields",
            &self.unknown_tagged_fields,
        )?)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Response

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DescribeQuorumResponse {
    pub error_code: i16,
    /// v2+, ignorable; Kafka sends `Some("")`.
    #[serde(default, with = "serde_str::option")]
    pub error_message: Option<StrBytes>,
    pub topics: Vec<TopicData>,
    /// v2+, not ignorable: voters only (v3: current ∪ committed voters).
    pub nodes: Vec<NodeEndpoints>,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicData {
    #[serde(with = "serde_str")]
    pub topic_name: StrBytes,
    pub partitions: Vec<PartitionData>,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionData {
    pub partition_index: i32,
    pub error_code: i16,
    /// v2+, ignorable; Kafka sends `Some("")`.
    #[serde(default, with = "serde_str::option")]
    pub error_message: Option<StrBytes>,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub current_voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
    /// v3+, ignorable, nullable (KIP-1204): the voter set at HW − 1; empty while the HW is unknown.
    /// On the wire it sits between `current_voters` and `observers`; the field order here is kept so
    /// the JSON of the older vectors does not move.
    pub committed_voters: Vec<ReplicaState>,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
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
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeEndpoints {
    pub node_id: i32,
    pub listeners: Vec<Listener>,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listener {
    #[serde(with = "serde_str")]
    pub name: StrBytes,
    #[serde(with = "serde_str")]
    pub host: StrBytes,
    pub port: u16,
    #[serde(default, skip_serializing_if = "UnknownTaggedFields::is_empty")]
    pub unknown_tagged_fields: UnknownTaggedFields,
}

/// Kafka's schema defaults: the error messages default to `""`, not null.
impl Default for DescribeQuorumResponse {
    fn default() -> Self {
        DescribeQuorumResponse {
            error_code: 0,
            error_message: Some(StrBytes::new()),
            topics: Vec::new(),
            nodes: Vec::new(),
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

/// Kafka's schema defaults (LeaderId has no declared default, so 0 like Java).
impl Default for PartitionData {
    fn default() -> Self {
        PartitionData {
            partition_index: 0,
            error_code: 0,
            error_message: Some(StrBytes::new()),
            leader_id: 0,
            leader_epoch: 0,
            high_watermark: 0,
            current_voters: Vec::new(),
            observers: Vec::new(),
            committed_voters: Vec::new(),
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

/// Kafka's schema defaults: timestamps −1, nil directory id.
impl Default for ReplicaState {
    fn default() -> Self {
        ReplicaState {
            replica_id: 0,
            replica_directory_id: Uuid::nil(),
            log_end_offset: 0,
            last_fetch_timestamp: -1,
            last_caught_up_timestamp: -1,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

impl DescribeQuorumResponse {
    fn size(&self, version: i16) -> Result<usize, WireError> {
        let mut size = 2;
        if version >= 2 {
            size += compact_nullable_string_size(
                "DescribeQuorumResponse.ErrorMessage",
                self.error_message.as_deref(),
            )?;
        }
        size += array_size("DescribeQuorumResponse.Topics", &self.topics, |t| {
            t.size(version)
        })?;
        if version >= 2 {
            size += array_size(
                "DescribeQuorumResponse.Nodes",
                &self.nodes,
                NodeEndpoints::size,
            )?;
        } else if !self.nodes.is_empty() {
            return Err(WireError::FieldNotAvailable {
                field: "DescribeQuorumResponse.Nodes",
                version,
            });
        }
        Ok(size
            + tagged_fields_size(
                "DescribeQuorumResponse._tagged_fields",
                &self.unknown_tagged_fields,
            )?)
    }

    fn write(&self, version: i16, buf: &mut impl BufMut) {
        buf.put_i16(self.error_code);
        if version >= 2 {
            put_compact_nullable_string(buf, self.error_message.as_deref());
        }
        put_array_header(buf, self.topics.len());
        for topic in &self.topics {
            topic.write(version, buf);
        }
        if version >= 2 {
            put_array_header(buf, self.nodes.len());
            for node in &self.nodes {
                node.write(buf);
            }
        }
        put_tagged_fields(buf, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
        let error_code = r.i16("DescribeQuorumResponse.ErrorCode")?;
        let error_message = if version >= 2 {
            r.compact_nullable_str_bytes("DescribeQuorumResponse.ErrorMessage")?
        } else {
            Some(StrBytes::new())
        };
        let topics = read_array(
            r,
            "DescribeQuorumResponse.Topics",
            TopicData::MIN_SIZE,
            |r| TopicData::read(r, version),
        )?;
        let nodes = if version >= 2 {
            read_array(
                r,
                "DescribeQuorumResponse.Nodes",
                NodeEndpoints::MIN_SIZE,
                NodeEndpoints::read,
            )?
        } else {
            Vec::new()
        };
        Ok(DescribeQuorumResponse {
            error_code,
            error_message,
            topics,
            nodes,
            unknown_tagged_fields: r.tagged_fields("DescribeQuorumResponse._tagged_fields")?,
        })
    }
}

/// The size pass without error plumbing: `None` whenever the checked pass (`size`) would fail.
impl DescribeQuorumResponse {
    fn fast_size(&self, version: i16) -> Option<usize> {
        let mut size = 2 + fast_tagged_fields_size(&self.unknown_tagged_fields)?;
        if version >= 2 {
            size += fast_nullable_string_size(self.error_message.as_deref())?;
            size += fast_array_header_size(self.nodes.len())?;
            for node in &self.nodes {
                size += 4 + fast_array_header_size(node.listeners.len())?;
                size += fast_tagged_fields_size(&node.unknown_tagged_fields)?;
                for l in &node.listeners {
                    size += fast_string_size(&l.name)? + fast_string_size(&l.host)? + 2;
                    size += fast_tagged_fields_size(&l.unknown_tagged_fields)?;
                }
            }
        } else if !self.nodes.is_empty() {
            return None;
        }
        size += fast_array_header_size(self.topics.len())?;
        for topic in &self.topics {
            size += fast_string_size(&topic.topic_name)?;
            size += fast_array_header_size(topic.partitions.len())?;
            size += fast_tagged_fields_size(&topic.unknown_tagged_fields)?;
            for p in &topic.partitions {
                size += 4 + 2 + 4 + 4 + 8 + fast_tagged_fields_size(&p.unknown_tagged_fields)?;
                if version >= 2 {
                    size += fast_nullable_string_size(p.error_message.as_deref())?;
                }
                size += fast_replicas_size(&p.current_voters, version)?;
                size += fast_replicas_size(&p.observers, version)?;
                if version >= 3 {
                    size += fast_replicas_size(&p.committed_voters, version)?;
                }
            }
        }
        Some(size)
    }
}

impl TopicData {
    const MIN_SIZE: usize = 3;

    fn size(&self, version: i16) -> Result<usize, WireError> {
        Ok(
            compact_string_size("TopicData.TopicName", &self.topic_name)?
                + array_size("TopicData.Partitions", &self.partitions, |p| {
                    p.size(version)
                })?
                + tagged_fields_size("TopicData._tagged_fields", &self.unknown_tagged_fields)?,
        )
    }

    fn write(&self, version: i16, buf: &mut impl BufMut) {
        put_compact_string(buf, &self.topic_name);
        put_array_header(buf, self.partitions.len());
        for partition in &self.partitions {
            partition.write(version, buf);
        }
        put_tagged_fields(buf, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
        Ok(TopicData {
            topic_name: r.compact_str_bytes("TopicData.TopicName")?,
            partitions: read_array(
                r,
                "TopicData.Partitions",
                PartitionData::min_size(version),
                |r| PartitionData::read(r, version),
            )?,
            unknown_tagged_fields: r.tagged_fields("TopicData._tagged_fields")?,
        })
    }
}

impl PartitionData {
    const fn min_size(version: i16) -> usize {
        let mut size = 4 + 2 + 4 + 4 + 8 + 1 + 1 + 1;
        if version >= 2 {
            size += 1;
        }
        if version >= 3 {
            size += 1;
        }
        size
    }

    fn size(&self, version: i16) -> Result<usize, WireError> {
        let mut size = 4 + 2 + 4 + 4 + 8;
        if version >= 2 {
            size += compact_nullable_string_size(
                "PartitionData.ErrorMessage",
                self.error_message.as_deref(),
            )?;
        }
        size += replicas_size("PartitionData.CurrentVoters", &self.current_voters, version)?;
        if version >= 3 {
            size += replicas_size(
                "PartitionData.CommittedVoters",
                &self.committed_voters,
                version,
            )?;
        }
        size += replicas_size("PartitionData.Observers", &self.observers, version)?;
        Ok(size + tagged_fields_size("PartitionData._tagged_fields", &self.unknown_tagged_fields)?)
    }

    fn write(&self, version: i16, buf: &mut impl BufMut) {
        // Runs of fixed-width fields go out as one block each.
        let mut head = [0u8; 6];
        head[..4].copy_from_slice(&self.partition_index.to_be_bytes());
        head[4..].copy_from_slice(&self.error_code.to_be_bytes());
        buf.put_slice(&head);
        if version >= 2 {
            put_compact_nullable_string(buf, self.error_message.as_deref());
        }
        let mut leader = [0u8; 16];
        leader[..4].copy_from_slice(&self.leader_id.to_be_bytes());
        leader[4..8].copy_from_slice(&self.leader_epoch.to_be_bytes());
        leader[8..].copy_from_slice(&self.high_watermark.to_be_bytes());
        buf.put_slice(&leader);
        write_replicas(&self.current_voters, version, buf);
        if version >= 3 {
            write_replicas(&self.committed_voters, version, buf);
        }
        write_replicas(&self.observers, version, buf);
        put_tagged_fields(buf, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
        let partition_index = r.i32("PartitionData.PartitionIndex")?;
        let error_code = r.i16("PartitionData.ErrorCode")?;
        let error_message = if version >= 2 {
            r.compact_nullable_str_bytes("PartitionData.ErrorMessage")?
        } else {
            Some(StrBytes::new())
        };
        let leader_id = r.i32("PartitionData.LeaderId")?;
        let leader_epoch = r.i32("PartitionData.LeaderEpoch")?;
        let high_watermark = r.i64("PartitionData.HighWatermark")?;
        let current_voters = read_replicas(r, "PartitionData.CurrentVoters", version)?;
        let committed_voters = if version >= 3 {
            read_nullable_replicas(r, "PartitionData.CommittedVoters", version)?
        } else {
            Vec::new()
        };
        let observers = read_replicas(r, "PartitionData.Observers", version)?;
        Ok(PartitionData {
            partition_index,
            error_code,
            error_message,
            leader_id,
            leader_epoch,
            high_watermark,
            current_voters,
            observers,
            committed_voters,
            unknown_tagged_fields: r.tagged_fields("PartitionData._tagged_fields")?,
        })
    }
}

impl NodeEndpoints {
    const MIN_SIZE: usize = 4 + 1 + 1;

    fn size(&self) -> Result<usize, WireError> {
        Ok(
            4 + array_size("Node.Listeners", &self.listeners, Listener::size)?
                + tagged_fields_size("Node._tagged_fields", &self.unknown_tagged_fields)?,
        )
    }

    fn write(&self, buf: &mut impl BufMut) {
        if self.listeners.len() < 0x7f {
            // Node id and a one-byte listener count in one block.
            let mut head = [0u8; 5];
            head[..4].copy_from_slice(&self.node_id.to_be_bytes());
            head[4] = self.listeners.len() as u8 + 1;
            buf.put_slice(&head);
        } else {
            buf.put_i32(self.node_id);
            put_array_header(buf, self.listeners.len());
        }
        for listener in &self.listeners {
            put_compact_string(buf, &listener.name);
            put_compact_string(buf, &listener.host);
            if listener.unknown_tagged_fields.is_empty() {
                let mut tail = [0u8; 3];
                tail[..2].copy_from_slice(&listener.port.to_be_bytes());
                buf.put_slice(&tail);
            } else {
                buf.put_u16(listener.port);
                put_tagged_fields(buf, &listener.unknown_tagged_fields);
            }
        }
        put_tagged_fields(buf, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(NodeEndpoints {
            node_id: r.i32("Node.NodeId")?,
            listeners: read_array(r, "Node.Listeners", Listener::MIN_SIZE, Listener::read)?,
            unknown_tagged_fields: r.tagged_fields("Node._tagged_fields")?,
        })
    }
}

impl Listener {
    const MIN_SIZE: usize = 1 + 1 + 2 + 1;

    fn size(&self) -> Result<usize, WireError> {
        Ok(compact_string_size("Listener.Name", &self.name)?
            + compact_string_size("Listener.Host", &self.host)?
            + 2
            + tagged_fields_size("Listener._tagged_fields", &self.unknown_tagged_fields)?)
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(Listener {
            name: r.compact_str_bytes("Listener.Name")?,
            host: r.compact_str_bytes("Listener.Host")?,
            port: r.u16("Listener.Port")?,
            unknown_tagged_fields: r.tagged_fields("Listener._tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const T: i64 = 1_700_000_000_000;

    fn replica(id: i32, dir: u8, leo: i64, fetch: i64, caught_up: i64) -> ReplicaState {
        ReplicaState {
            replica_id: id,
            replica_directory_id: Uuid::from_bytes([dir; 16]),
            log_end_offset: leo,
            last_fetch_timestamp: fetch,
            last_caught_up_timestamp: caught_up,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }

    fn node(id: i32, port: u16) -> NodeEndpoints {
        NodeEndpoints {
            node_id: id,
            listeners: vec![Listener {
                name: "CONTROLLER".into(),
                host: "localhost".into(),
                port,
                ..Listener::default()
            }],
            ..NodeEndpoints::default()
        }
    }

    /// The scenario of the reference golden vectors (leader 1, epoch 5, HW 100).
    fn scenario() -> DescribeQuorumResponse {
        DescribeQuorumResponse {
            topics: vec![TopicData {
                topic_name: METADATA_TOPIC.into(),
                partitions: vec![PartitionData {
                    leader_id: 1,
                    leader_epoch: 5,
                    high_watermark: 100,
                    current_voters: vec![
                        replica(1, 0x11, 100, T, T),
                        replica(2, 0x22, 90, T - 500, T - 1000),
                    ],
                    observers: vec![replica(3, 0x33, 80, T - 200, T - 3000)],
                    ..PartitionData::default()
                }],
                ..TopicData::default()
            }],
            nodes: vec![node(1, 9093), node(2, 9094)],
            ..DescribeQuorumResponse::default()
        }
    }

    /// What a leader sends below v2: no directory ids, no nodes.
    fn scenario_below_v2() -> DescribeQuorumResponse {
        let mut r = scenario();
        r.nodes.clear();
        let p = &mut r.topics[0].partitions[0];
        for s in p.current_voters.iter_mut().chain(p.observers.iter_mut()) {
            s.replica_directory_id = Uuid::nil();
        }
        r
    }

    const V2: &str = "00000102135f5f636c75737465725f6d6574616461746102000000000000010000000100000005000000000000006403000000011111111111111111111111111111111100000000000000640000018bcfe568000000018bcfe56800000000000222222222222222222222222222222222000000000000005a0000018bcfe5660c0000018bcfe564180002000000033333333333333333333333333333333300000000000000500000018bcfe567380000018bcfe55c480000000300000001020b434f4e54524f4c4c45520a6c6f63616c686f73742385000000000002020b434f4e54524f4c4c45520a6c6f63616c686f73742386000000";
    const V1: &str = "000002135f5f636c75737465725f6d657461646174610200000000000000000001000000050000000000000064030000000100000000000000640000018bcfe568000000018bcfe568000000000002000000000000005a0000018bcfe5660c0000018bcfe5641800020000000300000000000000500000018bcfe567380000018bcfe55c4800000000";
    const V0: &str = "000002135f5f636c75737465725f6d657461646174610200000000000000000001000000050000000000000064030000000100000000000000640000000002000000000000005a000200000003000000000000005000000000";

    #[test]
    fn matches_the_reference_bytes_of_kafka_at_v0_v1_v2() {
        let cases = [
            (2, scenario(), V2),
            (1, scenario_below_v2(), V1),
            (0, scenario_below_v2(), V0),
        ];
        for (version, value, expected) in cases {
            let bytes = value.to_bytes(version).unwrap();
            assert_eq!(bytes.as_ref(), hex(expected).as_slice(), "v{version}");
            assert_eq!(value.encoded_size(version).unwrap(), bytes.len());
            let decoded = DescribeQuorumResponse::decode(&bytes, version).unwrap();
            if version == 0 {
                // v0 carries no timestamps: they decode to their default, −1.
                let p = &decoded.topics[0].partitions[0];
                assert!(p
                    .current_voters
                    .iter()
                    .all(|s| s.last_fetch_timestamp == -1));
            } else {
                assert_eq!(decoded, value, "v{version}");
            }
        }
    }

    #[test]
    fn v3_writes_committed_voters_right_after_current_voters() {
        let mut value = scenario();
        let committed = vec![
            replica(1, 0x11, 100, T, T),
            ReplicaState::sentinel(4, Uuid::from_bytes([0x44; 16])),
        ];
        value.topics[0].partitions[0].committed_voters = committed.clone();
        let v3 = value.to_bytes(3).unwrap();
        let v2 = value.to_bytes(2).unwrap();
        // The v2 body drops the ignorable field; v3 inserts one array right after CurrentVoters
        // (apache/kafka#20712's position), which ends at the same offset in both versions.
        let array = 1 + 2 * ReplicaState::min_size(3);
        assert_eq!(v3.len(), v2.len() + array);
        // Header, topic and partition fields (47 bytes), then CurrentVoters: 1 + 2 × 45 bytes.
        let current_end = 47 + 1 + 2 * ReplicaState::min_size(2);
        assert_eq!(v3[..current_end], v2[..current_end]);
        assert_eq!(v3[current_end], 3, "CommittedVoters count 2, compact");
        assert_eq!(v3[current_end + array..], v2[current_end..]);
        assert_eq!(DescribeQuorumResponse::decode(&v3, 3).unwrap(), value);
        let mut without = value.clone();
        without.topics[0].partitions[0].committed_voters.clear();
        assert_eq!(DescribeQuorumResponse::decode(&v2, 2).unwrap(), without);
        assert_eq!(v2.as_ref(), hex(V2).as_slice());
    }

    #[test]
    fn null_committed_voters_decode_as_not_known() {
        let value = scenario();
        let v3 = value.to_bytes(3).unwrap().to_vec();
        let current_end = 47 + 1 + 2 * ReplicaState::min_size(2);
        // We send the empty list (count byte 1); the same bytes with the null marker 0 decode the same.
        assert_eq!(v3[current_end], 1);
        let mut null = v3.clone();
        null[current_end] = 0;
        assert_eq!(DescribeQuorumResponse::decode(&null, 3).unwrap(), value);
        assert_eq!(DescribeQuorumResponse::decode(&v3, 3).unwrap(), value);
    }

    #[test]
    fn non_ignorable_fields_below_their_version_fail_and_write_nothing() {
        let mut out = Vec::new();
        // Fields are checked in wire order: the directory ids inside Topics come before Nodes.
        let mut with_nodes = scenario_below_v2();
        with_nodes.nodes = scenario().nodes;
        assert_eq!(
            with_nodes.encode(1, &mut out),
            Err(WireError::FieldNotAvailable {
                field: "DescribeQuorumResponse.Nodes",
                version: 1
            })
        );
        let mut no_nodes = scenario();
        no_nodes.nodes.clear();
        assert_eq!(
            no_nodes.encode(0, &mut out),
            Err(WireError::FieldNotAvailable {
                field: "ReplicaState.ReplicaDirectoryId",
                version: 0
            })
        );
        assert!(out.is_empty());
        // Ignorable fields are dropped silently: a null error message is fine at v1.
        let mut null_message = scenario_below_v2();
        null_message.error_message = None;
        assert!(null_message.encode(1, &mut out).is_ok());
    }

    #[test]
    fn unknown_versions_are_refused_both_ways() {
        let err = WireError::UnsupportedVersion {
            message: "DescribeQuorumResponse",
            version: 4,
            min: 0,
            max: 3,
        };
        assert_eq!(scenario().encoded_size(4), Err(err.clone()));
        assert_eq!(DescribeQuorumResponse::decode(&hex(V2), 4), Err(err));
        assert!(matches!(
            DescribeQuorumRequest::decode(&[1, 0], -1),
            Err(WireError::UnsupportedVersion { version: -1, .. })
        ));
    }

    #[test]
    fn request_matches_the_reference_body() {
        // From the reference request frame: everything after the 17-byte size + header v2.
        let body = hex("02135f5f636c75737465725f6d657461646174610200000000000000");
        for version in MIN_VERSION..=MAX_VERSION {
            let request = DescribeQuorumRequest::for_metadata_partition();
            assert_eq!(request.to_bytes(version).unwrap().as_ref(), body.as_slice());
            assert_eq!(
                DescribeQuorumRequest::decode(&body, version).unwrap(),
                request
            );
        }
    }
}
