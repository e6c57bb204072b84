//! The metadata log directory with snapshots: our own snapshots (data carried over from the previous one),
//! the log start moving by whole segments, start-up as Kafka's `createLog` (`.part` and `.deleted` files
//! deleted, a crash between a download's rename and the log's truncation finished at start-up), and a
//! damaged snapshot refused with its name.

use bytes::Bytes;
use kraft::log::{RaftLog, Record};
use kraft::records::{SnapshotFileKind, SnapshotId};
use kraft::storage::{snapshot_path, FileLog, MetadataLog, StorageError};

/// The snapshot a Kafka 4.4.0 controller wrote at (20, 1).
const KAFKA_SNAPSHOT: &[u8] =
    include_bytes!("testdata/kafka-4.4.0-00000000000000000020-0000000001.checkpoint");
const KAFKA_ID: SnapshotId = SnapshotId {
    end_offset: 20,
    epoch: 1,
};

/// A metadata record value of type `t` (frame version 1, type, version 0, no tagged fields).
fn metadata(t: u8, n: u8) -> Record {
    Record::Data(Bytes::from(vec![1, t, 0, n]))
}

/// Ten batches of epoch 1, each {ConfigRecord-like (type 4), NoOp}: offsets 0–19.
fn fill(log: &mut FileLog, from: u8, count: u8) {
    for n in from..from + count {
        log.append_as_leader(1, 0, vec![metadata(4, n), metadata(20, n)])
            .unwrap();
    }
    log.flush().unwrap();
}

fn id(end_offset: i64) -> SnapshotId {
    SnapshotId {
        end_offset,
        epoch: 1,
    }
}

#[test]
fn own_snapshots_carry_the_data_forward_and_the_log_start_moves_by_segments() {
    let dir = tempfile::tempdir().unwrap();
    // Segments of about three batches each.
    let mut log = FileLog::open_with_segment_bytes(dir.path(), 200).unwrap();
    fill(&mut log, 0, 10);
    let mut meta = MetadataLog::with_log(dir.path(), log).unwrap();
    let first = meta.take_snapshot(id(10), 0, 1, None, 1_000).unwrap();
    assert_eq!(first.data_records, 5, "the NoOps are left out");
    // Not at a batch boundary: refused, nothing written.
    assert!(meta.take_snapshot(id(11), 0, 1, None, 1_000).is_err());
    assert!(!snapshot_path(dir.path(), id(11), SnapshotFileKind::Partial).exists());
    let second = meta.take_snapshot(id(20), 0, 1, None, 2_000).unwrap();
    assert_eq!(second.data_records, 10);
    let values: Vec<u8> = meta
        .snapshot_data(id(20))
        .unwrap()
        .iter()
        .map(|v| v[3])
        .collect();
    assert_eq!(values, (0..10).collect::<Vec<u8>>());

    let segments_before = meta.log.segment_paths().len();
    meta.move_log_start(10).unwrap();
    assert_eq!(meta.log.start_offset(), 10);
    assert!(meta.log.segment_paths().len() < segments_before);
    assert_eq!(meta.snapshots().len(), 2);
    meta.move_log_start(20).unwrap();
    assert_eq!(
        meta.snapshots().iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![id(20)]
    );
    assert!(!snapshot_path(dir.path(), id(10), SnapshotFileKind::Checkpoint).exists());
    // The log start can only move to a snapshot's end.
    assert!(meta.move_log_start(15).is_err());
    drop(meta);

    // Restart: the log starts at its first segment (at or below 20), the snapshot stays, the suffix reads.
    let meta = MetadataLog::open(dir.path()).unwrap();
    let start = meta.log.start_offset();
    assert!(start <= 20 && start > 0, "start {start}");
    assert_eq!(meta.log.end_offset(), 20);
    assert_eq!(meta.snapshots().len(), 1);
    assert_eq!(meta.log.read(start, 1 << 20).unwrap()[0].base_offset, start);
}

#[test]
fn a_download_cut_by_a_crash_is_deleted_at_start_up_and_a_finished_one_truncates_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    fill(&mut log, 0, 3);
    let mut meta = MetadataLog::with_log(dir.path(), log).unwrap();
    assert_eq!(meta.log.end_offset(), 6);
    meta.write_snapshot_chunk(KAFKA_ID, 0, &KAFKA_SNAPSHOT[..300])
        .unwrap();
    // A chunk that does not continue the download is refused.
    assert!(meta
        .write_snapshot_chunk(KAFKA_ID, 200, &KAFKA_SNAPSHOT[200..])
        .is_err());
    drop(meta); // kill -9 here: the .part stays on disk.
    assert!(snapshot_path(dir.path(), KAFKA_ID, SnapshotFileKind::Partial).exists());

    let mut meta = MetadataLog::open(dir.path()).unwrap();
    assert!(!snapshot_path(dir.path(), KAFKA_ID, SnapshotFileKind::Partial).exists());
    assert_eq!(meta.log.end_offset(), 6, "the log is untouched");
    // The download starts again and finishes.
    meta.write_snapshot_chunk(KAFKA_ID, 0, &KAFKA_SNAPSHOT[..300])
        .unwrap();
    meta.write_snapshot_chunk(KAFKA_ID, 300, &KAFKA_SNAPSHOT[300..])
        .unwrap();
    let info = meta
        .complete_download(KAFKA_ID, KAFKA_SNAPSHOT.len() as u64)
        .unwrap();
    assert_eq!(info.kraft_version, 1);
    assert_eq!((meta.log.start_offset(), meta.log.end_offset()), (20, 20));
    drop(meta);
    let meta = MetadataLog::open(dir.path()).unwrap();
    assert_eq!((meta.log.start_offset(), meta.log.end_offset()), (20, 20));
    assert_eq!(meta.start_epoch(), 1);
    assert_eq!(meta.snapshots()[0].id, KAFKA_ID);
}

#[test]
fn a_crash_between_a_downloads_rename_and_the_truncation_is_finished_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    fill(&mut log, 0, 3);
    drop(log);
    std::fs::write(
        snapshot_path(dir.path(), KAFKA_ID, SnapshotFileKind::Checkpoint),
        KAFKA_SNAPSHOT,
    )
    .unwrap();
    // A .deleted leftover goes too.
    let old = id(4);
    std::fs::write(
        snapshot_path(dir.path(), old, SnapshotFileKind::Deleted),
        b"x",
    )
    .unwrap();
    let meta = MetadataLog::open(dir.path()).unwrap();
    assert_eq!((meta.log.start_offset(), meta.log.end_offset()), (20, 20));
    assert!(!snapshot_path(dir.path(), old, SnapshotFileKind::Deleted).exists());
}

#[test]
fn a_damaged_snapshot_stops_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = KAFKA_SNAPSHOT.to_vec();
    bytes[400] ^= 1;
    let path = snapshot_path(dir.path(), KAFKA_ID, SnapshotFileKind::Checkpoint);
    std::fs::write(&path, &bytes).unwrap();
    let err = MetadataLog::open(dir.path()).err().expect("refused");
    assert!(matches!(err, StorageError::Snapshot(_)), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    // The file is kept for inspection; the log was not truncated to it.
    assert!(path.exists());
    assert_eq!(FileLog::open(dir.path()).unwrap().end_offset(), 0);
}

#[test]
fn a_log_start_past_every_snapshot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    log.truncate_fully_and_start_at(30).unwrap();
    drop(log);
    let err = MetadataLog::open(dir.path()).err().expect("refused");
    assert!(matches!(err, StorageError::Corrupt { .. }), "{err}");
}

#[test]
fn a_snapshot_inside_a_metadata_transaction_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    log.append_as_leader(1, 0, vec![metadata(23, 0), metadata(4, 1)])
        .unwrap();
    log.append_as_leader(1, 0, vec![metadata(24, 0)]).unwrap();
    log.append_as_leader(1, 0, vec![metadata(23, 0), metadata(4, 2), metadata(25, 0)])
        .unwrap();
    let mut meta = MetadataLog::with_log(dir.path(), log).unwrap();
    assert!(meta.take_snapshot(id(2), 0, 1, None, 0).is_err());
    // After the commit: record 1 only; the aborted transaction's record 2 is left out.
    let info = meta.take_snapshot(id(6), 0, 1, None, 0).unwrap();
    assert_eq!(info.data_records, 1);
    assert_eq!(meta.snapshot_data(id(6)).unwrap()[0][3], 1);
}

#[test]
fn the_header_says_the_last_contained_log_timestamp_given_and_every_batch_the_append_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open_with_segment_bytes(dir.path(), 200).unwrap();
    fill(&mut log, 0, 10);
    let mut meta = MetadataLog::with_log(dir.path(), log).unwrap();
    let info = meta
        .take_snapshot(id(10), 1_765_000_000_000, 1, None, 1_765_000_123_456)
        .unwrap();
    assert_eq!(info.last_contained_log_timestamp, 1_765_000_000_000);
    let path = snapshot_path(dir.path(), id(10), SnapshotFileKind::Checkpoint);
    let bytes = Bytes::from(std::fs::read(path).unwrap());
    let mut at = 0;
    while at < bytes.len() {
        let (_, len) = kraft::records::batch_frame(&bytes, at).unwrap();
        let first = i64::from_be_bytes(bytes[at + 27..at + 35].try_into().unwrap());
        let max = i64::from_be_bytes(bytes[at + 35..at + 43].try_into().unwrap());
        assert_eq!((first, max), (1_765_000_123_456, 1_765_000_123_456));
        at += len;
    }
}
