//! Kafka's snapshot files (KIP-630): names, frame, and the bytes of every snapshot this crate writes.
//!
//! A snapshot `<end offset %020d>-<epoch %010d>.checkpoint` holds Kafka v2 record batches whose offsets are
//! dense from 0 and whose partition leader epoch is the snapshot's epoch (Kafka's `RecordsSnapshotWriter`):
//! a first control batch {SnapshotHeader (control type 3), and when kraft.version ≥ 1 KRaftVersion (5) and
//! Voters (6), both as of end offset − 1}, data batches of Kafka's metadata records, and a last control batch
//! {SnapshotFooter (4)}. A download in progress is `.checkpoint.part`, a snapshot being deleted
//! `.checkpoint.deleted`. `kafka-storage format` writes the bootstrap snapshot (0, 0) the same way.
//! [`SnapshotFrame`] checks a file's frame batch by batch (CRC, record walk, control values walked by Kafka's
//! schemas before they are decoded; header first, footer last, no other control record but KRaftVersion and
//! Voters), so a whole file is never needed in memory; [`SnapshotEncoder`] writes Kafka's layout.

use bytes::Bytes;
use bytes::BytesMut;
use kafka_protocol::messages::{SnapshotFooterRecord, SnapshotHeaderRecord};
use kafka_protocol::protocol::Decodable;

use super::{
    check_value, control_key, control_type_of, decode_frame, encode_message, from_kafka_record,
    to_kafka_record, write_run, RecordsError,
};
use crate::batch::Record;
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

pub use crate::batch::SnapshotId;

/// Which of Kafka's three snapshot file names (`Snapshots.java`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotFileKind {
    /// `.checkpoint`: complete, immutable.
    Checkpoint,
    /// `.checkpoint.part`: being written or downloaded.
    Partial,
    /// `.checkpoint.deleted`: marked for deletion.
    Deleted,
}

impl SnapshotId {
    /// The file name Kafka gives this snapshot.
    pub fn file_name(&self, kind: SnapshotFileKind) -> String {
        let suffix = match kind {
            SnapshotFileKind::Checkpoint => "",
            SnapshotFileKind::Partial => ".part",
            SnapshotFileKind::Deleted => ".deleted",
        };
        format!(
            "{:020}-{:010}.checkpoint{suffix}",
            self.end_offset, self.epoch
        )
    }

    /// Parses a snapshot file name as Kafka writes it (`Snapshots.filenameFromSnapshotId`: a 20-digit
    /// offset, `-`, a 10-digit epoch, then the suffix); anything else is `None`. Kafka's `Snapshots.parse`
    /// is laxer (fixed-width fields read with `parseLong`, the separator unchecked): see
    /// `KAFKA-DIFFERENCES.md`.
    pub fn parse_file_name(name: &str) -> Option<(SnapshotId, SnapshotFileKind)> {
        let (stem, kind) = if let Some(s) = name.strip_suffix(".checkpoint") {
            (s, SnapshotFileKind::Checkpoint)
        } else if let Some(s) = name.strip_suffix(".checkpoint.part") {
            (s, SnapshotFileKind::Partial)
        } else if let Some(s) = name.strip_suffix(".checkpoint.deleted") {
            (s, SnapshotFileKind::Deleted)
        } else {
            return None;
        };
        let (offset, epoch) = stem.split_once('-')?;
        let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(offset, 20) || !digits(epoch, 10) {
            return None;
        }
        let id = SnapshotId {
            end_offset: offset.parse().ok()?,
            epoch: epoch.parse().ok()?,
        };
        Some((id, kind))
    }
}

/// What a complete, valid snapshot file says about itself (the core's `SnapshotMeta` and more).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub id: SnapshotId,
    /// File size in bytes (FetchSnapshot's `Size`).
    pub size: u64,
    /// The KRaftVersionRecord's version; 0 when the snapshot has none (as Kafka reads it).
    pub kraft_version: i16,
    /// The VotersRecord, if any: the voter set as of `id.end_offset − 1`.
    pub voters: Option<VoterSet>,
    /// SnapshotHeader `LastContainedLogTimestamp` (retention by time reads it).
    pub last_contained_log_timestamp: i64,
    /// How many data records (Kafka's metadata records) it holds.
    pub data_records: u64,
}

impl SnapshotInfo {
    /// What the core needs of it.
    pub fn meta(&self) -> crate::batch::SnapshotMeta {
        crate::batch::SnapshotMeta {
            id: self.id,
            size: self.size,
            kraft_version: self.kraft_version,
            voters: self.voters.clone(),
            last_contained_log_timestamp: self.last_contained_log_timestamp,
        }
    }
}

/// Checks a snapshot's frame one batch at a time: offsets dense from 0, header first, footer last, no
/// control record but KRaftVersion and Voters in between.
#[derive(Debug, Default)]
pub struct SnapshotFrame {
    next_offset: i64,
    seen_header: bool,
    seen_footer: bool,
    last_contained_log_timestamp: i64,
    kraft_version: Option<i16>,
    voters: Option<VoterSet>,
    data_records: u64,
}

fn malformed(base_offset: i64, reason: &str) -> RecordsError {
    RecordsError::Malformed {
        base_offset,
        reason: format!("snapshot: {reason}"),
    }
}

impl SnapshotFrame {
    /// Decodes and checks the batch at the start of `bytes` (every check of the log's decoder); returns it
    /// and its encoded length.
    /// `position` is the batch's byte position in `bytes`.
    pub fn push(
        &mut self,
        bytes: &Bytes,
        position: usize,
    ) -> Result<(SnapshotBatch, usize), RecordsError> {
        let frame = decode_frame(bytes, position, item)?;
        if frame.base_offset != self.next_offset {
            return Err(malformed(frame.base_offset, "offsets are not dense from 0"));
        }
        for (offset, item) in (frame.base_offset..).zip(&frame.records) {
            if self.seen_footer {
                return Err(malformed(offset, "a record after the footer"));
            }
            match item {
                Item::Header(ts) if !self.seen_header && offset == 0 => {
                    self.seen_header = true;
                    self.last_contained_log_timestamp = *ts;
                }
                _ if !self.seen_header => {
                    return Err(malformed(offset, "does not start with a header"))
                }
                Item::Header(_) => return Err(malformed(offset, "a second header")),
                Item::Footer => self.seen_footer = true,
                Item::Control(Record::KRaftVersion(v)) => self.kraft_version = Some(*v),
                Item::Control(Record::Voters(set)) => self.voters = Some(set.clone()),
                Item::Control(_) => {
                    return Err(malformed(offset, "a control record a snapshot cannot hold"))
                }
                Item::Data(_) => self.data_records += 1,
            }
        }
        self.next_offset = frame.next_offset;
        let batch = SnapshotBatch {
            base_offset: frame.base_offset,
            epoch: frame.epoch,
            records: frame.records,
        };
        Ok((batch, frame.len))
    }

    /// The snapshot's description, once the whole file went through `push`.
    pub fn finish(self, id: SnapshotId, size: u64) -> Result<SnapshotInfo, RecordsError> {
        if !self.seen_footer {
            return Err(malformed(
                self.next_offset,
                "no footer (empty or cut short)",
            ));
        }
        Ok(SnapshotInfo {
            id,
            size,
            kraft_version: self.kraft_version.unwrap_or(0),
            voters: self.voters,
            last_contained_log_timestamp: self.last_contained_log_timestamp,
            data_records: self.data_records,
        })
    }
}

/// Reads a snapshot held in memory: every batch decoded (any defect is an error), header first, footer last.
pub fn decode_snapshot(bytes: Bytes) -> Result<Snapshot, RecordsError> {
    let mut frame = SnapshotFrame::default();
    let mut batches = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
        let (batch, len) = frame.push(&bytes, position)?;
        position += len;
        batches.push(batch);
    }
    let meta = frame.finish(SnapshotId::BOOTSTRAP, bytes.len() as u64)?;
    Ok(Snapshot {
        last_contained_log_timestamp: meta.last_contained_log_timestamp,
        kraft_version: batches
            .iter()
            .flat_map(|b| &b.records)
            .filter_map(|r| match r {
                Item::Control(Record::KRaftVersion(v)) => Some(*v),
                _ => None,
            })
            .last(),
        voters: meta.voters,
        data_records: meta.data_records as usize,
        batches,
    })
}

/// A snapshot holding only its control records at `kraft_version` (with `voters` when given), its header
/// saying `last_contained_log_timestamp`, its batches stamped `append_time`: what a shell that keeps no
/// metadata records writes for the core's `TakeSnapshot` (the simulator, the conformance replay).
pub fn encode_control_snapshot(
    id: SnapshotId,
    last_contained_log_timestamp: i64,
    kraft_version: i16,
    voters: Option<&VoterSet>,
    append_time: i64,
) -> Result<Bytes, RecordsError> {
    SnapshotEncoder::new(
        id,
        last_contained_log_timestamp,
        kraft_version,
        voters,
        append_time,
    )?
    .finish(append_time)
}

/// The bootstrap snapshot `kraft format` writes: Kafka's frame and control records ({SnapshotHeader,
/// KRaftVersion(1), Voters} at offsets 0–2, {SnapshotFooter} at 3, epoch 0), without metadata records.
pub fn encode_bootstrap_snapshot(
    voters: &VoterSet,
    last_contained_log_timestamp: i64,
) -> Result<Bytes, RecordsError> {
    let encoder = SnapshotEncoder::new(
        SnapshotId::BOOTSTRAP,
        last_contained_log_timestamp,
        1,
        Some(voters),
        0,
    )?;
    encoder.finish(0)
}

/// The bootstrap snapshot of `kraft format --no-initial-controllers`, as Kafka's storage tool writes it in
/// that mode without its metadata records: {SnapshotHeader, KRaftVersion(1)} at offsets 0–1 and
/// {SnapshotFooter} at 2 — no voter set.
pub fn encode_bootstrap_snapshot_without_voters(
    last_contained_log_timestamp: i64,
) -> Result<Bytes, RecordsError> {
    let encoder = SnapshotEncoder::new(
        SnapshotId::BOOTSTRAP,
        last_contained_log_timestamp,
        1,
        None,
        0,
    )?;
    encoder.finish(0)
}

/// The bootstrap snapshot of `kraft format` with static voters (`controller.quorum.voters`), as Kafka 4.4's
/// storage tool writes it then without its metadata records: {SnapshotHeader} at 0 and {SnapshotFooter} at
/// 1 — no KRaftVersion record (kraft.version 0) and no voter set (the voters are configured).
pub fn encode_static_bootstrap_snapshot(
    last_contained_log_timestamp: i64,
) -> Result<Bytes, RecordsError> {
    SnapshotEncoder::new(
        SnapshotId::BOOTSTRAP,
        last_contained_log_timestamp,
        0,
        None,
        0,
    )?
    .finish(0)
}

/// Writes a snapshot in Kafka's layout (`RecordsSnapshotWriter`): every batch's partition leader epoch is the
/// snapshot's epoch, offsets are dense from 0, every record of a batch carries the batch's append time.
/// Bytes are produced as batches complete ([`take`](Self::take)), so a large snapshot streams to its file.
#[derive(Debug)]
pub struct SnapshotEncoder {
    epoch: i32,
    next_offset: i64,
    out: BytesMut,
}

impl SnapshotEncoder {
    /// Starts a snapshot with its first control batch: SnapshotHeader, then KRaftVersion when
    /// `kraft_version` ≥ 1 and Voters when given (Kafka writes both from kraft.version 1 on).
    pub fn new(
        id: SnapshotId,
        last_contained_log_timestamp: i64,
        kraft_version: i16,
        voters: Option<&VoterSet>,
        append_time: i64,
    ) -> Result<SnapshotEncoder, RecordsError> {
        let mut encoder = SnapshotEncoder {
            epoch: id.epoch,
            next_offset: 0,
            out: BytesMut::new(),
        };
        let header = SnapshotHeaderRecord::default()
            .with_version(SNAPSHOT_HEADER_VERSION)
            .with_last_contained_log_timestamp(last_contained_log_timestamp);
        let header = encode_message(&header, SNAPSHOT_HEADER_VERSION).map_err(encode_err(0))?;
        let mut first = vec![encoder.control(0, CONTROL_SNAPSHOT_HEADER, header, append_time)?];
        if kraft_version >= 1 {
            first.push(encoder.record(&Record::KRaftVersion(kraft_version), 1, append_time)?);
        }
        if let Some(voters) = voters {
            let offset = first.len() as i64;
            first.push(encoder.record(&Record::Voters(voters.clone()), offset, append_time)?);
        }
        encoder.write(&first)?;
        Ok(encoder)
    }

    fn record(
        &self,
        record: &Record,
        delta: i64,
        append_time: i64,
    ) -> Result<kafka_protocol::records::Record, RecordsError> {
        to_kafka_record(
            record,
            self.next_offset + delta,
            delta,
            self.epoch,
            append_time,
        )
    }

    /// A control record of the header's or footer's kind: a control record's shape, its own key and value.
    fn control(
        &self,
        delta: i64,
        control_type: i16,
        value: Bytes,
        append_time: i64,
    ) -> Result<kafka_protocol::records::Record, RecordsError> {
        let mut r = self.record(&Record::KRaftVersion(1), delta, append_time)?;
        r.key = Some(control_key(control_type));
        r.value = Some(value);
        Ok(r)
    }

    fn write(&mut self, run: &[kafka_protocol::records::Record]) -> Result<(), RecordsError> {
        write_run(run, &mut self.out, self.next_offset)?;
        self.next_offset += run.len() as i64;
        Ok(())
    }

    /// Appends one data batch holding `values` (Kafka's metadata records, unchanged), stamped `append_time`.
    pub fn data_batch(&mut self, values: &[Bytes], append_time: i64) -> Result<(), RecordsError> {
        if values.is_empty() {
            return Ok(());
        }
        let mut run = Vec::with_capacity(values.len());
        for (delta, value) in (0..).zip(values) {
            run.push(self.record(&Record::Data(value.clone()), delta, append_time)?);
        }
        self.write(&run)
    }

    /// The bytes of the batches completed since the last call.
    pub fn take(&mut self) -> Bytes {
        self.out.split().freeze()
    }

    /// Ends the snapshot with its SnapshotFooter batch; returns the bytes not taken yet.
    pub fn finish(mut self, append_time: i64) -> Result<Bytes, RecordsError> {
        let footer = SnapshotFooterRecord::default().with_version(SNAPSHOT_FOOTER_VERSION);
        let footer = encode_message(&footer, SNAPSHOT_FOOTER_VERSION)
            .map_err(encode_err(self.next_offset))?;
        let last = vec![self.control(0, CONTROL_SNAPSHOT_FOOTER, footer, append_time)?];
        self.write(&last)?;
        Ok(self.out.freeze())
    }
}

fn encode_err(base_offset: i64) -> impl Fn(String) -> RecordsError {
    move |reason| RecordsError::Encode {
        base_offset,
        reason,
    }
}

/// Kafka's metadata record types this crate has to recognise (`common/metadata/*.json` apiKey).
pub const METADATA_NO_OP: u8 = 20;
pub const METADATA_BEGIN_TRANSACTION: u8 = 23;
pub const METADATA_END_TRANSACTION: u8 = 24;
pub const METADATA_ABORT_TRANSACTION: u8 = 25;

/// The type of a metadata record value (`MetadataRecordSerde`: frame version 1 as an unsigned varint, then
/// the api key as an unsigned varint); `None` when the value is not framed so or the type is ≥ 128.
pub fn metadata_record_type(value: &[u8]) -> Option<u8> {
    match value {
        [1, t, ..] if *t < 0x80 => Some(*t),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: SnapshotId = SnapshotId {
        end_offset: 5,
        epoch: 2,
    };

    fn reason(bytes: Bytes) -> String {
        match decode_snapshot(bytes) {
            Err(RecordsError::Malformed { reason, .. }) => reason,
            other => panic!("expected a malformed snapshot, got {other:?}"),
        }
    }

    #[test]
    fn a_snapshot_has_exactly_one_header_and_it_comes_first() {
        // One header at offset 0, then the footer: a valid (empty) snapshot.
        let fine = SnapshotEncoder::new(ID, 7, 0, None, 9).unwrap();
        assert!(decode_snapshot(fine.finish(9).unwrap()).is_ok());

        // A second header batch after the first.
        let mut twice = SnapshotEncoder::new(ID, 7, 0, None, 9).unwrap();
        let header = SnapshotHeaderRecord::default().with_last_contained_log_timestamp(7);
        let header = encode_message(&header, SNAPSHOT_HEADER_VERSION).unwrap();
        let second = twice
            .control(0, CONTROL_SNAPSHOT_HEADER, header, 9)
            .unwrap();
        twice.write(&[second]).unwrap();
        let r = reason(twice.finish(9).unwrap());
        assert!(r.contains("a second header"), "{r}");

        // Offset 0 holds a KRaftVersion record, not the header.
        let mut headless = SnapshotEncoder {
            epoch: ID.epoch,
            next_offset: 0,
            out: BytesMut::new(),
        };
        let first = headless.record(&Record::KRaftVersion(1), 0, 9).unwrap();
        headless.write(&[first]).unwrap();
        let r = reason(headless.finish(9).unwrap());
        assert!(r.contains("does not start with a header"), "{r}");
    }
}
