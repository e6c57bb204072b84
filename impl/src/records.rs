//! Log batches ⇄ Kafka record batches (magic v2), the byte format of segments and Fetch responses.
//!
//! Framing, magic and CRC-32C are checked here first so corruption gets a typed error with its byte position;
//! the records inside a batch are then decoded by `kafka_protocol::records`. Control batches hold
//! LeaderChange (type 2), KRaftVersion (type 5) and Voters (type 6) records with Kafka's generated message
//! structs as values; data batches hold `Record::Data` values. No compression.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::leader_change_message::{self, LeaderChangeMessage};
use kafka_protocol::messages::voters_record::{self, KRaftVersionFeature, VotersRecord};
use kafka_protocol::messages::{BrokerId, KRaftVersionRecord};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
};
use uuid::Uuid;

use crate::batch::{Batch, Record};
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

/// Bytes before the batch length field: base offset (8) + length (4).
pub const BATCH_LOG_OVERHEAD: usize = 12;
/// Size of a v2 batch header, records excluded.
pub const BATCH_HEADER_SIZE: usize = 61;
/// Largest batch accepted on decode; bigger length fields are treated as corruption, not allocated.
pub const MAX_BATCH_SIZE: usize = 64 << 20;

const MAGIC_V2: i8 = 2;
const ATTR_COMPRESSION_MASK: i16 = 0x7;
const ATTR_TRANSACTIONAL: i16 = 1 << 4;
const ATTR_CONTROL: i16 = 1 << 5;

/// Control record types used by KRaft (Kafka's `ControlRecordType`).
pub const CONTROL_LEADER_CHANGE: i16 = 2;
pub const CONTROL_KRAFT_VERSION: i16 = 5;
pub const CONTROL_VOTERS: i16 = 6;
/// Version of the control record key schema (`ControlRecordTypeSchema`).
const CONTROL_KEY_VERSION: i16 = 0;
mod snapshot;
pub use snapshot::{
    decode_snapshot, encode_bootstrap_snapshot, encode_bootstrap_snapshot_without_voters,
    encode_control_snapshot, encode_static_bootstrap_snapshot, metadata_record_type, Snapshot,
    SnapshotBatch, SnapshotEncoder, SnapshotFileKind, SnapshotFrame, SnapshotId, SnapshotInfo,
    SnapshotRecord, BOOTSTRAP_SNAPSHOT_FILE, CONTROL_SNAPSHOT_FOOTER, CONTROL_SNAPSHOT_HEADER,
    METADATA_ABORT_TRANSACTION, METADATA_BEGIN_TRANSACTION, METADATA_END_TRANSACTION,
    METADATA_NO_OP,
};

/// Versions Kafka writes the control values in (`ControlRecordUtils.*_CURRENT_VERSION`).
const LEADER_CHANGE_VERSION: i16 = 0;
const KRAFT_VERSION_RECORD_VERSION: i16 = 0;
const VOTERS_RECORD_VERSION: i16 = 0;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordsError {
    #[error(
        "record batch at byte {position} is truncated: needs {needed} bytes, {available} available"
    )]
    Truncated {
        position: usize,
        needed: usize,
        available: usize,
    },
    #[error("record batch at byte {position} has invalid length {length}")]
    BadLength { position: usize, length: i64 },
    #[error("record batch at byte {position} has unsupported magic {magic} (only v2)")]
    BadMagic { position: usize, magic: i8 },
    #[error("record batch at offset {base_offset} fails CRC-32C: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        base_offset: i64,
        stored: u32,
        computed: u32,
    },
    #[error("record batch at offset {base_offset} is compressed ({codec}); compression is not supported")]
    Compressed { base_offset: i64, codec: i16 },
    #[error("record batch at offset {base_offset} is transactional; KRaft logs never are")]
    Transactional { base_offset: i64 },
    #[error("record batch at offset {base_offset}: {reason}")]
    Malformed { base_offset: i64, reason: String },
    #[error("control record at offset {offset} has unknown type {control_type}")]
    UnknownControlType { offset: i64, control_type: i16 },
    #[error("control record at offset {offset} ({what}): {reason}")]
    BadControlRecord {
        offset: i64,
        what: &'static str,
        reason: String,
    },
    #[error("record batch at offset {base_offset}: {field} {value} at byte {position} exceeds the {remaining} byte(s) left")]
    LengthTooLarge {
        base_offset: i64,
        field: &'static str,
        position: usize,
        value: i64,
        remaining: usize,
    },
    #[error("cannot encode batch at offset {base_offset}: {reason}")]
    Encode { base_offset: i64, reason: String },
}

/// Encodes batches as consecutive Kafka v2 record batches.
///
/// A `Batch` whose records mix data and control records is written as several Kafka batches (Kafka keeps
/// control records in control batches) with consecutive offsets and the same epoch and append time (the
/// first and max timestamp of each, every record's timestamp delta 0); empty batches write nothing.
pub fn encode_batches(batches: &[Batch]) -> Result<Bytes, RecordsError> {
    let mut buf = BytesMut::new();
    for batch in batches {
        encode_batch_into(batch, &mut buf)?;
    }
    Ok(buf.freeze())
}

/// Encodes one batch, appending to `buf`.
pub fn encode_batch_into(batch: &Batch, buf: &mut BytesMut) -> Result<(), RecordsError> {
    let mut run: Vec<kafka_protocol::records::Record> = Vec::new();
    for (offset, record) in (batch.base_offset..).zip(batch.records.iter()) {
        let control = !matches!(record, Record::Data(_));
        if run.first().is_some_and(|first| first.control != control) {
            write_run(&run, buf, batch.base_offset)?;
            run.clear();
        }
        let run_start = run.first().map_or(offset, |first| first.offset);
        run.push(to_kafka_record(
            record,
            offset,
            offset - run_start,
            batch.epoch,
            batch.append_time,
        )?);
    }
    if !run.is_empty() {
        write_run(&run, buf, batch.base_offset)?;
    }
    Ok(())
}

fn write_run(
    run: &[kafka_protocol::records::Record],
    buf: &mut BytesMut,
    base_offset: i64,
) -> Result<(), RecordsError> {
    let options = RecordEncodeOptions {
        version: MAGIC_V2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(buf, run.iter(), &options).map_err(|e| RecordsError::Encode {
        base_offset,
        reason: e.to_string(),
    })
}

fn to_kafka_record(
    record: &Record,
    offset: i64,
    offset_delta: i64,
    epoch: i32,
    timestamp: i64,
) -> Result<kafka_protocol::records::Record, RecordsError> {
    let encode_err = |reason: String| RecordsError::Encode {
        base_offset: offset,
        reason,
    };
    let (control, key, value) = match record {
        Record::Data(value) => (false, None, value.clone()),
        Record::LeaderChange {
            leader_id,
            voters,
            granting_voters,
        } => {
            let to_voters = |ids: &[i32]| {
                ids.iter()
                    .map(|id| leader_change_message::Voter::default().with_voter_id(*id))
                    .collect::<Vec<_>>()
            };
            let message = LeaderChangeMessage::default()
                .with_version(LEADER_CHANGE_VERSION)
                .with_leader_id(BrokerId(*leader_id))
                .with_voters(to_voters(voters))
                .with_granting_voters(to_voters(granting_voters));
            let value = encode_message(&message, LEADER_CHANGE_VERSION).map_err(encode_err)?;
            (true, Some(control_key(CONTROL_LEADER_CHANGE)), value)
        }
        Record::KRaftVersion(version) => {
            let message = KRaftVersionRecord::default()
                .with_version(KRAFT_VERSION_RECORD_VERSION)
                .with_k_raft_version(*version);
            let value =
                encode_message(&message, KRAFT_VERSION_RECORD_VERSION).map_err(encode_err)?;
            (true, Some(control_key(CONTROL_KRAFT_VERSION)), value)
        }
        Record::Voters(set) => {
            let value =
                encode_message(&voters_record(set), VOTERS_RECORD_VERSION).map_err(encode_err)?;
            (true, Some(control_key(CONTROL_VOTERS)), value)
        }
    };
    Ok(kafka_protocol::records::Record {
        transactional: false,
        control,
        delete_horizon: false,
        partition_leader_epoch: epoch,
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        timestamp_type: TimestampType::Creation,
        offset,
        // The encoder groups records whose `offset − sequence` agree and writes the batch's base sequence
        // as the first record's; this yields one batch with base sequence −1 (no idempotent producer).
        sequence: NO_SEQUENCE.wrapping_add(offset_delta as i32),
        timestamp,
        key,
        value: Some(value),
        headers: Default::default(),
    })
}

/// `kafka_protocol` reports `anyhow` errors; they are carried as their message.
fn encode_message<M: Encodable>(message: &M, version: i16) -> Result<Bytes, String> {
    let mut buf = BytesMut::new();
    message
        .encode(&mut buf, version)
        .map_err(|e| e.to_string())?;
    Ok(buf.freeze())
}

fn control_key(control_type: i16) -> Bytes {
    let mut key = BytesMut::with_capacity(4);
    key.put_i16(CONTROL_KEY_VERSION);
    key.put_i16(control_type);
    key.freeze()
}

/// The VotersRecord for a voter set (a missing directory id is written as the nil UUID).
pub fn voters_record(set: &VoterSet) -> VotersRecord {
    let voters = set
        .nodes()
        .map(|voter| {
            voters_record::Voter::default()
                .with_voter_id(BrokerId(voter.key.id))
                .with_voter_directory_id(voter.key.directory_id.unwrap_or(Uuid::nil()))
                .with_endpoints(
                    voter
                        .listeners
                        .iter()
                        .map(|l| {
                            voters_record::Endpoint::default()
                                .with_name(StrBytes::from_string(l.name.clone()))
                                .with_host(StrBytes::from_string(l.host.clone()))
                                .with_port(l.port)
                        })
                        .collect(),
                )
                .with_k_raft_version_feature(
                    KRaftVersionFeature::default()
                        .with_min_supported_version(voter.supported.min)
                        .with_max_supported_version(voter.supported.max),
                )
        })
        .collect();
    VotersRecord::default()
        .with_version(VOTERS_RECORD_VERSION)
        .with_voters(voters)
}

/// The voter set of a VotersRecord; `Err` names what is wrong (empty, duplicate ids, bad key).
pub fn voter_set_from_record(record: &VotersRecord) -> Result<VoterSet, String> {
    let voters = record
        .voters
        .iter()
        .map(|v| VoterNode {
            key: ReplicaKey {
                id: v.voter_id.0,
                directory_id: (!v.voter_directory_id.is_nil()).then_some(v.voter_directory_id),
            },
            listeners: v
                .endpoints
                .iter()
                .map(|e| Endpoint {
                    name: e.name.to_string(),
                    host: e.host.to_string(),
                    port: e.port,
                })
                .collect(),
            supported: SupportedVersions {
                min: v.k_raft_version_feature.min_supported_version,
                max: v.k_raft_version_feature.max_supported_version,
            },
        })
        .collect::<Vec<_>>();
    VoterSet::new(voters).map_err(|e| e.to_string())
}

/// Decodes every batch of `bytes`; any defect, including a truncated last batch, is an error.
pub fn decode_batches(bytes: Bytes) -> Result<Vec<Batch>, RecordsError> {
    let scan = scan_batches(bytes);
    match scan.error {
        Some(error) => Err(error),
        None => Ok(scan.batches),
    }
}

/// Decodes every batch of `bytes` as `decode_batches` does, each with its own bytes (one Kafka record
/// batch): a follower stores those unchanged.
pub fn decode_batches_with_bytes(bytes: Bytes) -> Result<Vec<(Batch, Bytes)>, RecordsError> {
    let scan = scan_batches(bytes.clone());
    if let Some(error) = scan.error {
        return Err(error);
    }
    let mut at = 0;
    Ok(scan
        .batches
        .into_iter()
        .zip(scan.lengths)
        .map(|(batch, len)| {
            let raw = bytes.slice(at..at + len);
            at += len;
            (batch, raw)
        })
        .collect())
}

/// Result of decoding as many whole, valid batches as possible from the front of a buffer.
#[derive(Debug)]
pub struct Scan {
    pub batches: Vec<Batch>,
    /// Encoded byte length of each batch in `batches`.
    pub lengths: Vec<usize>,
    /// Byte length of the valid prefix (the end of the last good batch).
    pub valid_bytes: usize,
    /// Why decoding stopped before the end of the buffer, if it did.
    pub error: Option<RecordsError>,
}

/// Decodes the valid prefix of `bytes` and reports where and why it stops (used by log recovery).
pub fn scan_batches(bytes: Bytes) -> Scan {
    let mut scan = Scan {
        batches: Vec::new(),
        lengths: Vec::new(),
        valid_bytes: 0,
        error: None,
    };
    while scan.valid_bytes < bytes.len() {
        match decode_one(&bytes, scan.valid_bytes) {
            Ok((batch, len)) => {
                scan.batches.push(batch);
                scan.lengths.push(len);
                scan.valid_bytes += len;
            }
            Err(error) => {
                scan.error = Some(error);
                break;
            }
        }
    }
    scan
}

/// Reads the frame of the batch at `position`: (base offset, total length including the 12-byte prefix).
pub fn batch_frame(bytes: &[u8], position: usize) -> Result<(i64, usize), RecordsError> {
    let available = bytes.len() - position;
    if available < BATCH_LOG_OVERHEAD {
        return Err(RecordsError::Truncated {
            position,
            needed: BATCH_LOG_OVERHEAD,
            available,
        });
    }
    let header = &bytes[position..];
    let base_offset = i64::from_be_bytes(header[0..8].try_into().unwrap_or_default());
    let length = i32::from_be_bytes(header[8..12].try_into().unwrap_or_default());
    if length < (BATCH_HEADER_SIZE - BATCH_LOG_OVERHEAD) as i32 || length as usize > MAX_BATCH_SIZE
    {
        return Err(RecordsError::BadLength {
            position,
            length: length.into(),
        });
    }
    let total = BATCH_LOG_OVERHEAD + length as usize;
    if available < total {
        return Err(RecordsError::Truncated {
            position,
            needed: total,
            available,
        });
    }
    Ok((base_offset, total))
}

fn decode_one(bytes: &Bytes, position: usize) -> Result<(Batch, usize), RecordsError> {
    let frame = decode_frame(bytes, position, from_kafka_record)?;
    Ok((
        Batch {
            base_offset: frame.base_offset,
            epoch: frame.epoch,
            append_time: frame.max_timestamp,
            records: frame.records,
        },
        frame.len,
    ))
}

/// One Kafka record batch, its records converted by the caller.
pub(crate) struct Frame<T> {
    pub base_offset: i64,
    pub epoch: i32,
    /// The batch header's MaxTimestamp.
    pub max_timestamp: i64,
    pub records: Vec<T>,
    /// Offset after the last record.
    pub next_offset: i64,
    /// Encoded length, including the 12-byte log prefix.
    pub len: usize,
}

/// Decodes the batch at `position` with every check (frame, magic, CRC, attributes, record walk, dense
/// offsets), converting each record with `convert(record, is_control)`.
pub(crate) fn decode_frame<T>(
    bytes: &Bytes,
    position: usize,
    convert: impl Fn(&kafka_protocol::records::Record, bool) -> Result<T, RecordsError>,
) -> Result<Frame<T>, RecordsError> {
    let (base_offset, total) = batch_frame(bytes, position)?;
    let raw = &bytes[position..position + total];
    let epoch = i32::from_be_bytes([raw[12], raw[13], raw[14], raw[15]]);
    let magic = raw[16] as i8;
    if magic != MAGIC_V2 {
        return Err(RecordsError::BadMagic { position, magic });
    }
    let stored = u32::from_be_bytes([raw[17], raw[18], raw[19], raw[20]]);
    let computed = crc32c::crc32c(&raw[21..]);
    if stored != computed {
        return Err(RecordsError::CrcMismatch {
            base_offset,
            stored,
            computed,
        });
    }
    let attributes = i16::from_be_bytes([raw[21], raw[22]]);
    if attributes & ATTR_COMPRESSION_MASK != 0 {
        return Err(RecordsError::Compressed {
            base_offset,
            codec: attributes & ATTR_COMPRESSION_MASK,
        });
    }
    if attributes & ATTR_TRANSACTIONAL != 0 {
        return Err(RecordsError::Transactional { base_offset });
    }
    let is_control = attributes & ATTR_CONTROL != 0;
    let last_offset_delta = i32::from_be_bytes([raw[23], raw[24], raw[25], raw[26]]);
    let max_timestamp = i64::from_be_bytes(raw[35..43].try_into().unwrap_or_default());
    let record_count = i32::from_be_bytes([raw[57], raw[58], raw[59], raw[60]]);
    // Each record takes at least 7 bytes; a larger count is corrupt and must not drive an allocation.
    if record_count < 0 || record_count as usize > (total - BATCH_HEADER_SIZE) / 7 + 1 {
        return Err(RecordsError::Malformed {
            base_offset,
            reason: format!("record count {record_count} does not fit the batch"),
        });
    }
    // kafka-protocol reserves for a record's header count on trust: walk the records first.
    check_records(raw, base_offset, position, record_count as usize)?;
    let mut slice = bytes.slice(position..position + total);
    let set = RecordBatchDecoder::decode(&mut slice).map_err(|e| RecordsError::Malformed {
        base_offset,
        reason: e.to_string(),
    })?;
    let mut records = Vec::with_capacity(set.records.len());
    for (index, kafka) in set.records.iter().enumerate() {
        // Offsets inside a batch are dense in KRaft logs (no compaction).
        if kafka.offset != base_offset + index as i64 {
            return Err(RecordsError::Malformed {
                base_offset,
                reason: format!(
                    "record {index} has offset {}, expected {}",
                    kafka.offset,
                    base_offset + index as i64
                ),
            });
        }
        records.push(convert(kafka, is_control)?);
    }
    if records.is_empty() || last_offset_delta != records.len() as i32 - 1 {
        return Err(RecordsError::Malformed {
            base_offset,
            reason: format!(
                "last offset delta {last_offset_delta} with {} records",
                records.len()
            ),
        });
    }
    Ok(Frame {
        base_offset,
        epoch,
        max_timestamp,
        next_offset: base_offset + records.len() as i64,
        records,
        len: total,
    })
}

/// A cursor over one batch that reads Kafka's zigzag varints and names what does not fit.
struct RecordCursor<'a> {
    raw: &'a [u8],
    at: usize,
    /// Byte of `raw[0]` in the decoded buffer, for error positions.
    origin: usize,
    base_offset: i64,
}

impl RecordCursor<'_> {
    fn too_large(&self, field: &'static str, at: usize, value: i64, end: usize) -> RecordsError {
        RecordsError::LengthTooLarge {
            base_offset: self.base_offset,
            field,
            position: self.origin + at,
            value,
            remaining: end.saturating_sub(self.at),
        }
    }

    /// A zigzag varint of at most `max_bytes` bytes, within `end`.
    fn varint(
        &mut self,
        field: &'static str,
        end: usize,
        max_bytes: usize,
    ) -> Result<i64, RecordsError> {
        let start = self.at;
        let mut raw: u64 = 0;
        for i in 0..max_bytes {
            let Some(&b) = self.raw[..end].get(self.at) else {
                return Err(RecordsError::Malformed {
                    base_offset: self.base_offset,
                    reason: format!("{field} at byte {} is truncated", self.origin + start),
                });
            };
            self.at += 1;
            raw |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
            }
        }
        Err(RecordsError::Malformed {
            base_offset: self.base_offset,
            reason: format!(
                "{field} at byte {} is longer than {max_bytes} bytes",
                self.origin + start
            ),
        })
    }

    /// A length (−1 = null when `nullable`) that must fit before `end`; skips what it covers.
    fn skip_sized(
        &mut self,
        field: &'static str,
        end: usize,
        nullable: bool,
    ) -> Result<usize, RecordsError> {
        let at = self.at;
        let n = self.varint(field, end, 5)?;
        if n == -1 && nullable {
            return Ok(0);
        }
        if n < 0 || n as u64 > (end - self.at) as u64 {
            return Err(self.too_large(field, at, n, end));
        }
        self.at += n as usize;
        Ok(n as usize)
    }
}

/// Walks the `count` records of a batch (`raw` from its first byte): every record length, key, value,
/// header count and header must fit in what remains, before anything is decoded.
fn check_records(
    raw: &[u8],
    base_offset: i64,
    origin: usize,
    count: usize,
) -> Result<(), RecordsError> {
    let mut c = RecordCursor {
        raw,
        at: BATCH_HEADER_SIZE,
        origin,
        base_offset,
    };
    let end = raw.len();
    for _ in 0..count {
        let at = c.at;
        let len = c.varint("record length", end, 5)?;
        if len < 0 || len as u64 > (end - c.at) as u64 {
            return Err(c.too_large("record length", at, len, end));
        }
        let record_end = c.at + len as usize;
        // attributes (int8), timestamp delta (varlong), offset delta (varint)
        if c.at >= record_end {
            return Err(c.too_large("record attributes", c.at, 1, record_end));
        }
        c.at += 1;
        c.varint("timestamp delta", record_end, 10)?;
        c.varint("offset delta", record_end, 5)?;
        c.skip_sized("record key", record_end, true)?;
        c.skip_sized("record value", record_end, true)?;
        let at = c.at;
        let headers = c.varint("header count", record_end, 5)?;
        // Each header takes at least two bytes (two lengths).
        if headers < 0 || (headers as u64).saturating_mul(2) > (record_end - c.at) as u64 {
            return Err(c.too_large("header count", at, headers, record_end));
        }
        for _ in 0..headers {
            c.skip_sized("header key", record_end, false)?;
            c.skip_sized("header value", record_end, true)?;
        }
        c.at = record_end;
    }
    Ok(())
}

/// Walks a control record value by its Kafka schema before kafka-protocol decodes it.
///
/// LeaderChangeMessage, VotersRecord and KRaftVersionRecord begin with an int16 `Version` field, and
/// kafka-protocol 0.18 decodes everything after it at *that* version (its generated `decode` shadows the
/// version argument with the field), where Kafka's Java classes use the version they were asked for. So
/// the walk runs at the embedded version too, or a value whose `Version` says 1 could pass a version-0
/// walk and then be read with directory ids, misaligned, into a count taken on trust (found by the
/// `records_decoder` fuzz target). An embedded version outside the schema's range is refused by the walk.
/// Values this crate and Kafka write carry the version they are written at, so nothing valid changes.
fn check_value(
    name: &'static str,
    version: i16,
    value: &[u8],
    offset: i64,
) -> Result<(), RecordsError> {
    let bad = |reason: String| RecordsError::BadControlRecord {
        offset,
        what: name,
        reason,
    };
    let schema =
        crate::wire::schema::schema(name).ok_or_else(|| bad("schema not embedded".into()))?;
    let version = match value {
        [a, b, ..] => i16::from_be_bytes([*a, *b]),
        _ => version,
    };
    crate::wire::schema::walk(schema, version, value, 0)
        .map(|_| ())
        .map_err(|e| bad(e.to_string()))
}

/// The type in a control record's key (version int16, type int16).
fn control_type_of(kafka: &kafka_protocol::records::Record) -> Result<i16, RecordsError> {
    let key = kafka.key.as_deref().unwrap_or_default();
    if key.len() < 4 {
        return Err(RecordsError::BadControlRecord {
            offset: kafka.offset,
            what: "key",
            reason: format!("control key has {} bytes, needs 4", key.len()),
        });
    }
    Ok(i16::from_be_bytes([key[2], key[3]]))
}

fn from_kafka_record(
    kafka: &kafka_protocol::records::Record,
    is_control: bool,
) -> Result<Record, RecordsError> {
    let offset = kafka.offset;
    if !is_control {
        return Ok(Record::Data(kafka.value.clone().unwrap_or_default()));
    }
    let control_type = control_type_of(kafka)?;
    let mut value = kafka.value.clone().unwrap_or_default();
    let bad = |what: &'static str, reason: String| RecordsError::BadControlRecord {
        offset,
        what,
        reason,
    };
    match control_type {
        CONTROL_LEADER_CHANGE => {
            check_value("LeaderChangeMessage", LEADER_CHANGE_VERSION, &value, offset)?;
            let m = LeaderChangeMessage::decode(&mut value, LEADER_CHANGE_VERSION)
                .map_err(|e| bad("LeaderChangeMessage", e.to_string()))?;
            Ok(Record::LeaderChange {
                leader_id: m.leader_id.0,
                voters: m.voters.iter().map(|v| v.voter_id).collect(),
                granting_voters: m.granting_voters.iter().map(|v| v.voter_id).collect(),
            })
        }
        CONTROL_KRAFT_VERSION => {
            check_value(
                "KRaftVersionRecord",
                KRAFT_VERSION_RECORD_VERSION,
                &value,
                offset,
            )?;
            let m = KRaftVersionRecord::decode(&mut value, KRAFT_VERSION_RECORD_VERSION)
                .map_err(|e| bad("KRaftVersionRecord", e.to_string()))?;
            Ok(Record::KRaftVersion(m.k_raft_version))
        }
        CONTROL_VOTERS => {
            check_value("VotersRecord", VOTERS_RECORD_VERSION, &value, offset)?;
            let m = VotersRecord::decode(&mut value, VOTERS_RECORD_VERSION)
                .map_err(|e| bad("VotersRecord", e.to_string()))?;
            let set =
                voter_set_from_record(&m).map_err(|reason| RecordsError::BadControlRecord {
                    offset,
                    what: "VotersRecord",
                    reason,
                })?;
            Ok(Record::Voters(set))
        }
        other => Err(RecordsError::UnknownControlType {
            offset,
            control_type: other,
        }),
    }
}

#[cfg(test)]
mod tests;
