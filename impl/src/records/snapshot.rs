//! Kafka's snapshot files, as far as the bootstrap snapshot goes.
//!
//! `kafka-storage format --initial-controllers` writes `00000000000000000000-0000000000.checkpoint` in the
//! metadata log directory (snapshot id: end offset 0, epoch 0): a control batch {SnapshotHeader (control
//! type 3), KRaftVersion (5), Voters (6)} at snapshot offsets 0–2, a data batch of bootstrap metadata records
//! (FeatureLevelRecords) and a control batch {SnapshotFooter (4)}. `decode_snapshot` reads any such file with
//! the same bounded batch decoding as the log (CRC, record walk, control values walked by Kafka's schemas
//! before they are decoded) and checks its frame: header first, footer last, nothing else of the control
//! kind but KRaftVersion and Voters. `encode_bootstrap_snapshot` writes the control records of that file
//! (no metadata records: this crate does not write Kafka's metadata).

use bytes::Bytes;
use kafka_protocol::messages::{SnapshotFooterRecord, SnapshotHeaderRecord};
use kafka_protocol::protocol::Decodable;

use super::{
    check_value, control_key, control_type_of, decode_frame, encode_message, from_kafka_record,
    to_kafka_record, write_run, RecordsError,
};
use crate::log::Record;
use crate::voter_set::VoterSet;

/// The bootstrap snapshot's file name (Kafka's `Snapshots.BOOTSTRAP_SNAPSHOT_ID`, end offset 0, epoch 0).
pub const BOOTSTRAP_SNAPSHOT_FILE: &str = "00000000000000000000-0000000000.checkpoint";

pub const CONTROL_SNAPSHOT_HEADER: i16 = 3;
pub const CONTROL_SNAPSHOT_FOOTER: i16 = 4;
/// Versions Kafka writes the header and footer values in.
const SNAPSHOT_HEADER_VERSION: i16 = 0;
const SNAPSHOT_FOOTER_VERSION: i16 = 0;

/// A record of a snapshot file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotRecord {
    /// SnapshotHeaderRecord (control type 3) and its `LastContainedLogTimestamp`.
    Header(i64),
    /// SnapshotFooterRecord (control type 4).
    Footer,
    /// KRaftVersion or Voters.
    Control(Record),
    /// A data record (Kafka's metadata records: opaque here).
    Data(Bytes),
}

/// A batch of a snapshot file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotBatch {
    pub base_offset: i64,
    pub epoch: i32,
    pub records: Vec<SnapshotRecord>,
}

/// What a snapshot file holds, as this crate reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// SnapshotHeader `LastContainedLogTimestamp`.
    pub last_contained_log_timestamp: i64,
    /// The last KRaftVersionRecord, if any.
    pub kraft_version: Option<i16>,
    /// The last VotersRecord, if any.
    pub voters: Option<VoterSet>,
    /// Data records (Kafka's metadata records: opaque here).
    pub data_records: usize,
    /// Every batch, in order.
    pub batches: Vec<SnapshotBatch>,
}

use SnapshotRecord as Item;

fn item(kafka: &kafka_protocol::records::Record, is_control: bool) -> Result<Item, RecordsError> {
    if !is_control {
        return Ok(Item::Data(kafka.value.clone().unwrap_or_default()));
    }
    let offset = kafka.offset;
    let bad = |what: &'static str, reason: String| RecordsError::BadControlRecord {
        offset,
        what,
        reason,
    };
    let mut value = kafka.value.clone().unwrap_or_default();
    match control_type_of(kafka)? {
        CONTROL_SNAPSHOT_HEADER => {
            check_value(
                "SnapshotHeaderRecord",
                SNAPSHOT_HEADER_VERSION,
                &value,
                offset,
            )?;
            let m = SnapshotHeaderRecord::decode(&mut value, SNAPSHOT_HEADER_VERSION)
                .map_err(|e| bad("SnapshotHeaderRecord", e.to_string()))?;
            Ok(Item::Header(m.last_contained_log_timestamp))
        }
        CONTROL_SNAPSHOT_FOOTER => {
            check_value(
                "SnapshotFooterRecord",
                SNAPSHOT_FOOTER_VERSION,
                &value,
                offset,
            )?;
            SnapshotFooterRecord::decode(&mut value, SNAPSHOT_FOOTER_VERSION)
                .map_err(|e| bad("SnapshotFooterRecord", e.to_string()))?;
            Ok(Item::Footer)
        }
        _ => from_kafka_record(kafka, true).map(Item::Control),
    }
}

/// Reads a snapshot file: every batch decoded (any defect is an error), header first, footer last.
pub fn decode_snapshot(bytes: Bytes) -> Result<Snapshot, RecordsError> {
    let malformed = |base_offset: i64, reason: &str| RecordsError::Malformed {
        base_offset,
        reason: format!("snapshot: {reason}"),
    };
    let mut snapshot = Snapshot {
        last_contained_log_timestamp: -1,
        kraft_version: None,
        voters: None,
        data_records: 0,
        batches: Vec::new(),
    };
    let (mut position, mut seen_header, mut seen_footer, mut next_offset) = (0, false, false, 0i64);
    while position < bytes.len() {
        let frame = decode_frame(&bytes, position, item)?;
        if frame.base_offset != next_offset {
            return Err(malformed(frame.base_offset, "offsets are not dense from 0"));
        }
        for (offset, item) in (frame.base_offset..).zip(&frame.records) {
            if seen_footer {
                return Err(malformed(offset, "a record after the footer"));
            }
            match item {
                Item::Header(ts) if !seen_header && offset == 0 => {
                    seen_header = true;
                    snapshot.last_contained_log_timestamp = *ts;
                }
                _ if !seen_header => return Err(malformed(offset, "does not start with a header")),
                Item::Header(_) => return Err(malformed(offset, "a second header")),
                Item::Footer => seen_footer = true,
                Item::Control(Record::KRaftVersion(v)) => snapshot.kraft_version = Some(*v),
                Item::Control(Record::Voters(set)) => snapshot.voters = Some(set.clone()),
                Item::Control(_) => {
                    return Err(malformed(offset, "a control record a snapshot cannot hold"))
                }
                Item::Data(_) => snapshot.data_records += 1,
            }
        }
        next_offset = frame.next_offset;
        position += frame.len;
        snapshot.batches.push(SnapshotBatch {
            base_offset: frame.base_offset,
            epoch: frame.epoch,
            records: frame.records,
        });
    }
    if !seen_footer {
        return Err(malformed(next_offset, "no footer (empty or cut short)"));
    }
    Ok(snapshot)
}

/// The bootstrap snapshot `kraft format` writes: Kafka's frame and control records ({SnapshotHeader,
/// KRaftVersion(1), Voters} at offsets 0–2, {SnapshotFooter} at 3, epoch 0), without metadata records.
pub fn encode_bootstrap_snapshot(
    voters: &VoterSet,
    last_contained_log_timestamp: i64,
) -> Result<Bytes, RecordsError> {
    encode_bootstrap(Some(voters), last_contained_log_timestamp)
}

/// The bootstrap snapshot of `kraft format --no-initial-controllers`, as Kafka's storage tool writes it in
/// that mode without its metadata records: {SnapshotHeader, KRaftVersion(1)} at offsets 0–1 and
/// {SnapshotFooter} at 2 — no voter set.
pub fn encode_bootstrap_snapshot_without_voters(
    last_contained_log_timestamp: i64,
) -> Result<Bytes, RecordsError> {
    encode_bootstrap(None, last_contained_log_timestamp)
}

fn encode_bootstrap(
    voters: Option<&VoterSet>,
    last_contained_log_timestamp: i64,
) -> Result<Bytes, RecordsError> {
    let encode_err = |reason: String| RecordsError::Encode {
        base_offset: 0,
        reason,
    };
    let header = SnapshotHeaderRecord::default()
        .with_version(SNAPSHOT_HEADER_VERSION)
        .with_last_contained_log_timestamp(last_contained_log_timestamp);
    let footer = SnapshotFooterRecord::default().with_version(SNAPSHOT_FOOTER_VERSION);
    // The header and footer take a control record's shape; only key and value differ.
    let control = |offset: i64, delta: i64, control_type: i16, value: Bytes| {
        let mut r = to_kafka_record(&Record::KRaftVersion(1), offset, delta, 0)?;
        r.key = Some(control_key(control_type));
        r.value = Some(value);
        Ok::<_, RecordsError>(r)
    };
    let mut first = vec![
        control(
            0,
            0,
            CONTROL_SNAPSHOT_HEADER,
            encode_message(&header, SNAPSHOT_HEADER_VERSION).map_err(encode_err)?,
        )?,
        to_kafka_record(&Record::KRaftVersion(1), 1, 1, 0)?,
    ];
    if let Some(voters) = voters {
        first.push(to_kafka_record(&Record::Voters(voters.clone()), 2, 2, 0)?);
    }
    let footer_offset = first.len() as i64;
    let last = vec![control(
        footer_offset,
        0,
        CONTROL_SNAPSHOT_FOOTER,
        encode_message(&footer, SNAPSHOT_FOOTER_VERSION).map_err(encode_err)?,
    )?];
    let mut buf = bytes::BytesMut::new();
    write_run(&first, &mut buf, 0)?;
    write_run(&last, &mut buf, footer_offset)?;
    Ok(buf.freeze())
}
