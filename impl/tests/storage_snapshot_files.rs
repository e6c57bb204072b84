//! Snapshot files against Apache Kafka 4.4.0: a snapshot a Kafka controller wrote (testdata, made with
//! `metadata.log.max.snapshot.interval.ms=1000`, `metadata.log.max.record.bytes.between.snapshots=1`, one
//! controller formatted `--standalone`) is read, our encoder writes its bytes exactly from the same content,
//! and our data rule applied to that controller's own log segment yields the data records of its snapshot.
//! Damaged files are typed errors naming the file; the `.part` writer checks positions.

use bytes::Bytes;
use kraft::log::Record;
use kraft::records::{
    decode_snapshot, scan_batches, RecordsError, SnapshotEncoder, SnapshotFileKind, SnapshotId,
    SnapshotRecord,
};
use kraft::storage::{
    delete_snapshot, list_snapshots, parse_directory_id, read_snapshot_meta, snapshot_path,
    DataRule, PartialSnapshot, SnapshotError, SnapshotReader, SnapshotWriter,
};
use kraft::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

/// `00000000000000000020-0000000001.checkpoint` of Kafka 4.4.0 controller 1.
const KAFKA_SNAPSHOT: &[u8] =
    include_bytes!("testdata/kafka-4.4.0-00000000000000000020-0000000001.checkpoint");
/// The same controller's first log segment (offsets 0–42), copied after it was stopped.
const KAFKA_SEGMENT: &[u8] =
    include_bytes!("testdata/kafka-4.4.0-metadata-00000000000000000000.log");
const ID: SnapshotId = SnapshotId {
    end_offset: 20,
    epoch: 1,
};

fn kafka_voters() -> VoterSet {
    VoterSet::new([VoterNode {
        key: ReplicaKey::new(1, parse_directory_id("Qrbf7QH4SKG8EZmvlH7R_w").unwrap()),
        listeners: vec![Endpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port: 19391,
        }],
        supported: SupportedVersions { min: 0, max: 1 },
    }])
    .unwrap()
}

fn kafka_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = snapshot_path(dir, ID, SnapshotFileKind::Checkpoint);
    std::fs::write(&path, KAFKA_SNAPSHOT).unwrap();
    path
}

fn data_values(bytes: &[u8]) -> Vec<Bytes> {
    decode_snapshot(Bytes::copy_from_slice(bytes))
        .unwrap()
        .batches
        .iter()
        .flat_map(|b| &b.records)
        .filter_map(|r| match r {
            SnapshotRecord::Data(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn kafkas_snapshot_is_read_with_its_id_size_version_and_voters() {
    let dir = tempfile::tempdir().unwrap();
    let meta = read_snapshot_meta(&kafka_file(dir.path())).unwrap();
    assert_eq!(meta.id, ID);
    assert_eq!(meta.size, KAFKA_SNAPSHOT.len() as u64);
    assert_eq!(meta.kraft_version, 1);
    assert_eq!(meta.voters, Some(kafka_voters()));
    // Six FeatureLevelRecords, RegisterControllerRecord, ConfigRecord (DumpLogSegments prints the same).
    assert_eq!(meta.data_records, 8);
    assert_eq!(meta.last_contained_log_timestamp, 1_796_466_954_552);
    assert_eq!(
        list_snapshots(dir.path()).unwrap(),
        vec![(ID, SnapshotFileKind::Checkpoint)]
    );
}

/// Every batch's base timestamp (bytes 27–34 of a v2 batch).
fn batch_times(bytes: &[u8]) -> Vec<i64> {
    let mut at = 0;
    let mut times = Vec::new();
    while at < bytes.len() {
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize + 12;
        times.push(i64::from_be_bytes(
            bytes[at + 27..at + 35].try_into().unwrap(),
        ));
        at += len;
    }
    times
}

#[test]
fn our_encoder_writes_kafkas_bytes_for_the_same_content() {
    let snapshot = decode_snapshot(Bytes::from_static(KAFKA_SNAPSHOT)).unwrap();
    let times = batch_times(KAFKA_SNAPSHOT);
    assert_eq!(times.len(), 3, "header batch, one data batch, footer batch");
    let mut encoder = SnapshotEncoder::new(
        ID,
        snapshot.last_contained_log_timestamp,
        snapshot.kraft_version.unwrap(),
        snapshot.voters.as_ref(),
        times[0],
    )
    .unwrap();
    encoder
        .data_batch(&data_values(KAFKA_SNAPSHOT), times[1])
        .unwrap();
    let mut ours = encoder.take().to_vec();
    ours.extend_from_slice(&encoder.finish(times[2]).unwrap());
    assert_eq!(ours, KAFKA_SNAPSHOT);
}

#[test]
fn our_writer_stamps_one_time_and_kafkas_reader_layout_holds() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = SnapshotWriter::create(
        dir.path(),
        ID,
        1_796_466_954_552,
        1,
        Some(&kafka_voters()),
        1_796_466_954_581,
    )
    .unwrap();
    for value in data_values(KAFKA_SNAPSHOT) {
        writer.feed(value).unwrap();
    }
    let meta = writer.finish().unwrap();
    assert_eq!(meta.data_records, 8);
    let ours = std::fs::read(snapshot_path(dir.path(), ID, SnapshotFileKind::Checkpoint)).unwrap();
    // Same bytes as Kafka's except the header batch's timestamps (Kafka stamped it 1 ms earlier).
    assert_eq!(ours.len(), KAFKA_SNAPSHOT.len());
    assert_eq!(&ours[166..], &KAFKA_SNAPSHOT[166..]);
    assert!(!snapshot_path(dir.path(), ID, SnapshotFileKind::Partial).exists());
}

/// The data rule (log records below the end offset, minus NoOp and transaction markers) on the Kafka
/// controller's own log gives the records its snapshot at offset 20 holds (Kafka writes them in its
/// image's order, so they are compared as sets).
#[test]
fn the_data_rule_on_kafkas_log_gives_kafkas_snapshot_records() {
    let scan = scan_batches(Bytes::from_static(KAFKA_SEGMENT));
    assert!(scan.error.is_none(), "{:?}", scan.error);
    let mut rule = DataRule::default();
    let mut ours = Vec::new();
    for batch in &scan.batches {
        for (offset, record) in (batch.base_offset..).zip(&batch.records) {
            if let (true, Record::Data(value)) = (offset < ID.end_offset, record) {
                ours.extend(rule.feed(value.clone()));
            }
        }
    }
    assert!(!rule.in_transaction());
    let mut kafka = data_values(KAFKA_SNAPSHOT);
    ours.sort();
    kafka.sort();
    assert_eq!(ours, kafka);
}

#[test]
fn a_snapshot_ending_inside_a_transaction_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = SnapshotWriter::create(dir.path(), ID, 0, 1, None, 0).unwrap();
    writer.feed(Bytes::from_static(&[1, 23, 0, 0])).unwrap(); // BeginTransactionRecord
    writer.feed(Bytes::from_static(&[1, 12, 0, 0])).unwrap();
    let err = writer.finish().unwrap_err();
    assert!(matches!(err, SnapshotError::Unwritable { .. }), "{err}");
    assert!(list_snapshots(dir.path()).unwrap().is_empty());
}

#[test]
fn every_cut_and_every_flipped_byte_is_a_typed_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot_path(dir.path(), ID, SnapshotFileKind::Checkpoint);
    for cut in 0..KAFKA_SNAPSHOT.len() {
        std::fs::write(&path, &KAFKA_SNAPSHOT[..cut]).unwrap();
        let err = read_snapshot_meta(&path).unwrap_err();
        assert!(
            matches!(err, SnapshotError::Corrupt { .. }),
            "cut {cut}: {err}"
        );
        assert!(err
            .to_string()
            .contains(&ID.file_name(SnapshotFileKind::Checkpoint)));
    }
    // A batch's partition leader epoch (bytes 12–15) is outside its CRC, in Kafka's format as in ours.
    let mut batch_starts = vec![0usize];
    let mut at = 0;
    while at < KAFKA_SNAPSHOT.len() {
        at += i32::from_be_bytes(KAFKA_SNAPSHOT[at + 8..at + 12].try_into().unwrap()) as usize + 12;
        batch_starts.push(at);
    }
    let unchecked = |at: usize| batch_starts.iter().any(|s| (s + 12..s + 16).contains(&at));
    for at in (0..KAFKA_SNAPSHOT.len()).filter(|at| !unchecked(*at)) {
        let mut bytes = KAFKA_SNAPSHOT.to_vec();
        bytes[at] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_snapshot_meta(&path).is_err(), "flip at {at}");
    }
    // A snapshot followed by anything: a record after the footer, or a torn batch.
    let mut doubled = KAFKA_SNAPSHOT.to_vec();
    doubled.extend_from_slice(KAFKA_SNAPSHOT);
    std::fs::write(&path, &doubled).unwrap();
    assert!(read_snapshot_meta(&path).is_err());
    // A log segment is not a snapshot (no header).
    std::fs::write(&path, KAFKA_SEGMENT).unwrap();
    assert!(read_snapshot_meta(&path).is_err());
    let bad_name = dir.path().join("snapshot.checkpoint");
    std::fs::write(&bad_name, KAFKA_SNAPSHOT).unwrap();
    assert!(matches!(
        read_snapshot_meta(&bad_name),
        Err(SnapshotError::BadName { .. })
    ));
}

#[test]
fn a_download_checks_positions_and_completes_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let mut part = PartialSnapshot::create(dir.path(), ID).unwrap();
    part.append(0, &KAFKA_SNAPSHOT[..100]).unwrap();
    assert!(matches!(
        part.append(50, &KAFKA_SNAPSHOT[50..200]),
        Err(SnapshotError::Position {
            position: 50,
            written: 100,
            ..
        })
    ));
    assert_eq!(
        list_snapshots(dir.path()).unwrap(),
        vec![(ID, SnapshotFileKind::Partial)]
    );
    part.append(100, &KAFKA_SNAPSHOT[100..]).unwrap();
    let meta = part.complete().unwrap();
    assert_eq!(meta.voters, Some(kafka_voters()));
    assert_eq!(
        list_snapshots(dir.path()).unwrap(),
        vec![(ID, SnapshotFileKind::Checkpoint)]
    );

    // Served in chunks as FetchSnapshot reads it.
    let reader = SnapshotReader::open(dir.path(), ID).unwrap();
    assert_eq!(reader.size(), KAFKA_SNAPSHOT.len() as u64);
    let mut served = Vec::new();
    while (served.len() as u64) < reader.size() {
        served.extend_from_slice(&reader.chunk(served.len() as u64, 100).unwrap());
    }
    assert_eq!(served, KAFKA_SNAPSHOT);
    assert!(matches!(
        reader.chunk(reader.size(), 100),
        Err(SnapshotError::OutOfRange { .. })
    ));
    drop(reader);
    delete_snapshot(dir.path(), ID).unwrap();
    assert!(list_snapshots(dir.path()).unwrap().is_empty());

    // A download cut short is refused on completion, and its .part is gone.
    let other = SnapshotId {
        end_offset: 21,
        epoch: 1,
    };
    let mut part = PartialSnapshot::create(dir.path(), other).unwrap();
    part.append(0, &KAFKA_SNAPSHOT[..700]).unwrap();
    let err = part.complete().unwrap_err();
    assert!(
        err.to_string()
            .contains(&other.file_name(SnapshotFileKind::Partial)),
        "{err}"
    );
    assert!(list_snapshots(dir.path()).unwrap().is_empty());
}

#[test]
fn file_names_are_kafkas() {
    assert_eq!(
        ID.file_name(SnapshotFileKind::Checkpoint),
        "00000000000000000020-0000000001.checkpoint"
    );
    for kind in [
        SnapshotFileKind::Checkpoint,
        SnapshotFileKind::Partial,
        SnapshotFileKind::Deleted,
    ] {
        assert_eq!(
            SnapshotId::parse_file_name(&ID.file_name(kind)),
            Some((ID, kind))
        );
    }
    for bad in [
        "20-1.checkpoint",
        "00000000000000000020-0000000001.log",
        "0000000000000000002x-0000000001.checkpoint",
        "00000000000000000020_0000000001.checkpoint",
        // Each field at its width, the other one a digit short or signed (both would parse as numbers).
        "0000000000000000020-0000000001.checkpoint",
        "00000000000000000020-000000001.checkpoint",
        "+0000000000000000020-0000000001.checkpoint",
        "00000000000000000020-+000000001.checkpoint",
    ] {
        assert_eq!(SnapshotId::parse_file_name(bad), None, "{bad}");
    }
}

/// A file cut inside a batch: the error names the batch's position, the bytes its length asks for (the
/// 12-byte offset and length prefix, when the cut is inside it) and the bytes the file still holds from
/// there.
#[test]
fn a_cut_batch_names_the_bytes_it_needs_and_the_bytes_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot_path(dir.path(), ID, SnapshotFileKind::Checkpoint);
    let mut start = 0;
    while start < KAFKA_SNAPSHOT.len() {
        let len = i32::from_be_bytes(KAFKA_SNAPSHOT[start + 8..start + 12].try_into().unwrap());
        let end = start + 12 + len as usize;
        for cut in [
            start + 1,
            start + 8,
            start + 11,
            start + 12,
            start + 13,
            end - 1,
        ] {
            std::fs::write(&path, &KAFKA_SNAPSHOT[..cut]).unwrap();
            match read_snapshot_meta(&path).unwrap_err() {
                SnapshotError::Corrupt {
                    position,
                    source:
                        RecordsError::Truncated {
                            position: at,
                            needed,
                            available,
                        },
                    ..
                } => {
                    assert_eq!((position, at), (start as u64, start), "cut {cut}");
                    let asked = if cut - start < 12 { 12 } else { end - start };
                    assert_eq!((needed, available), (asked, cut - start), "cut {cut}");
                }
                other => panic!("cut {cut}: {other}"),
            }
        }
        start = end;
    }
}

/// Data records go into batches of at most 8 MiB of values (Kafka's `maxBatchSizeBytes`), each batch
/// closed before the record that would take it past the bound: five 3 MiB records make batches of 2, 2, 1,
/// three 4 MiB records 2, 1.
#[test]
fn data_batches_are_cut_at_eight_mib() {
    let batches = |record_bytes: usize, records: usize| -> Vec<usize> {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = SnapshotWriter::create(dir.path(), ID, 0, 1, None, 0).unwrap();
        let mut value = vec![0u8; record_bytes];
        value[..2].copy_from_slice(&[1, 12]);
        for _ in 0..records {
            writer.feed(Bytes::from(value.clone())).unwrap();
        }
        writer.finish().unwrap();
        let path = snapshot_path(dir.path(), ID, SnapshotFileKind::Checkpoint);
        let snapshot = decode_snapshot(Bytes::from(std::fs::read(&path).unwrap())).unwrap();
        snapshot
            .batches
            .iter()
            .map(|b| {
                b.records
                    .iter()
                    .filter(|r| matches!(r, SnapshotRecord::Data(_)))
                    .count()
            })
            .filter(|n| *n > 0)
            .collect()
    };
    assert_eq!(batches(3 << 20, 5), [2, 2, 1]);
    // Exactly 8 MiB of values still fit in one batch.
    assert_eq!(batches(4 << 20, 3), [2, 1]);
}
