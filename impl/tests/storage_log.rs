//! FileLog against the in-memory log, recovery from torn and corrupt tails, identity checks.

use std::fs::OpenOptions;
use std::io::Write;

use bytes::Bytes;
use kraft::log::{Batch, MemoryLog, RaftLog, Record};
use kraft::storage::{DataDir, FileLog, MetaProperties, StorageError};
use proptest::prelude::*;
use uuid::Uuid;

fn data(n: usize, tag: u8) -> Vec<Record> {
    (0..n)
        .map(|i| Record::Data(Bytes::from(vec![tag, i as u8])))
        .collect()
}

/// (offset, epoch, record) for every record: batch boundaries may differ (mixed batches are split on disk).
fn flat(log: &dyn RaftLog) -> Vec<(i64, i32, Record)> {
    let batches = log.read(0, usize::MAX).unwrap();
    batches
        .into_iter()
        .flat_map(|b| {
            let epoch = b.epoch;
            (b.base_offset..)
                .zip(b.records)
                .map(move |(o, r)| (o, epoch, r))
        })
        .collect()
}

#[test]
fn append_read_reopen_and_roll_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open_with_segment_bytes(dir.path(), 200).unwrap();
    assert_eq!((log.end_offset(), log.last_epoch()), (0, 0));
    for epoch in 1..=5 {
        log.append_as_leader(epoch, 0, data(3, epoch as u8))
            .unwrap();
    }
    log.append_as_leader(5, 0, vec![Record::KRaftVersion(1)])
        .unwrap();
    assert_eq!(log.flushed_offset(), 0);
    log.flush().unwrap();
    assert_eq!(log.flushed_offset(), 16);
    assert!(log.segment_paths().len() > 1, "small segments must roll");
    let before = flat(&log);
    drop(log);
    let log = FileLog::open_with_segment_bytes(dir.path(), 200).unwrap();
    assert_eq!(flat(&log), before);
    assert_eq!(
        (log.end_offset(), log.last_epoch(), log.flushed_offset()),
        (16, 5, 16)
    );
    assert_eq!(log.end_offset_for_epoch(3), Some((3, 9)));
    assert_eq!(
        log.read(7, 1).unwrap().len(),
        1,
        "at least one batch even when max_bytes is tiny"
    );
    assert!(matches!(
        log.read(17, 100),
        Err(kraft::log::LogError::OutOfRange { .. })
    ));
}

#[test]
fn hand_written_torn_tail_is_truncated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    log.append_as_leader(1, 0, data(2, 1)).unwrap();
    log.append_as_leader(1, 0, data(2, 2)).unwrap();
    log.flush().unwrap();
    let segment = log.segment_paths()[0].clone();
    let good_len = std::fs::metadata(&segment).unwrap().len();
    drop(log);
    // A crash mid-write: the header of a third batch and part of its body.
    let mut file = OpenOptions::new().append(true).open(&segment).unwrap();
    file.write_all(&4i64.to_be_bytes()).unwrap();
    file.write_all(&100i32.to_be_bytes()).unwrap();
    file.write_all(&[0xab; 30]).unwrap();
    drop(file);
    let mut log = FileLog::open(dir.path()).unwrap();
    assert_eq!(log.end_offset(), 4);
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), good_len);
    // The log keeps working after recovery.
    log.append_as_leader(2, 0, data(1, 3)).unwrap();
    log.flush().unwrap();
    drop(log);
    assert_eq!(FileLog::open(dir.path()).unwrap().end_offset(), 5);
}

#[test]
fn corrupt_last_batch_is_dropped_and_earlier_batches_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    log.append_as_leader(1, 0, data(2, 1)).unwrap();
    log.append_as_leader(2, 0, data(3, 2)).unwrap();
    log.flush().unwrap();
    let segment = log.segment_paths()[0].clone();
    drop(log);
    let mut bytes = std::fs::read(&segment).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x40; // inside the CRC-covered body of the second batch
    std::fs::write(&segment, &bytes).unwrap();
    let log = FileLog::open(dir.path()).unwrap();
    assert_eq!((log.end_offset(), log.last_epoch()), (2, 1));
}

#[test]
fn a_log_without_its_first_segment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open_with_segment_bytes(dir.path(), 100).unwrap();
    for epoch in 1..=4 {
        log.append_as_leader(epoch, 0, data(3, 1)).unwrap();
    }
    log.flush().unwrap();
    let first = log.segment_paths()[0].clone();
    drop(log);
    std::fs::remove_file(first).unwrap();
    // The segments alone are a log that starts later (Kafka's log start is its first segment's base);
    // with no snapshot reaching that start, the metadata log is refused.
    let log = FileLog::open_with_segment_bytes(dir.path(), 100).unwrap();
    assert!(log.start_offset() > 0);
    assert!(matches!(
        kraft::storage::MetadataLog::with_log(dir.path(), log),
        Err(StorageError::Corrupt { .. })
    ));
}

#[test]
fn corruption_found_by_read_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    log.append_as_leader(1, 0, data(2, 1)).unwrap();
    log.flush().unwrap();
    let segment = log.segment_paths()[0].clone();
    let mut bytes = std::fs::read(&segment).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&segment, &bytes).unwrap();
    assert!(matches!(
        log.read(0, 1000),
        Err(kraft::log::LogError::Corrupt { offset: 0, .. })
    ));
}

#[test]
fn truncate_inside_a_batch_keeps_its_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path()).unwrap();
    log.append_as_leader(1, 0, data(4, 1)).unwrap();
    log.append_as_leader(2, 0, data(4, 2)).unwrap();
    log.truncate_to(6).unwrap();
    assert_eq!((log.end_offset(), log.last_epoch()), (6, 2));
    log.truncate_to(2).unwrap();
    assert_eq!((log.end_offset(), log.last_epoch()), (2, 1));
    drop(log);
    let log = FileLog::open(dir.path()).unwrap();
    assert_eq!(
        flat(&log),
        vec![(0, 1, data(1, 1)[0].clone()), (1, 1, data(2, 1)[1].clone())]
    );
}

#[test]
fn data_dir_identity_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = DataDir::new(dir.path());
    assert!(matches!(
        data_dir.open(None, None),
        Err(StorageError::NotFormatted(_))
    ));
    let meta = MetaProperties {
        cluster_id: "abc".into(),
        node_id: 2,
        directory_id: Uuid::from_u128(777),
    };
    meta.write(&data_dir.meta_path()).unwrap();
    assert_eq!(data_dir.open(Some(2), Some("abc")).unwrap(), meta);
    let err = data_dir.open(Some(3), None).unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Foreign {
                field: "node id",
                ..
            }
        ),
        "{err}"
    );
    let err = data_dir.open(None, Some("other")).unwrap_err();
    assert!(
        err.to_string().contains("cluster id abc, not other"),
        "{err}"
    );
    std::fs::write(data_dir.meta_path(), "version=1\nnode.id=x\n").unwrap();
    assert!(matches!(
        data_dir.open(None, None),
        Err(StorageError::Corrupt { .. })
    ));
}

#[derive(Clone, Debug)]
enum Op {
    Append { bump: i32, records: Vec<Record> },
    Follower { bump: i32, sizes: Vec<usize> },
    Truncate(i64),
    Flush,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let record = prop_oneof![
        3 => any::<u8>().prop_map(|b| Record::Data(Bytes::from(vec![b; 3]))),
        1 => (0i16..2).prop_map(Record::KRaftVersion),
    ];
    prop_oneof![
        4 => (0i32..2, proptest::collection::vec(record, 1..4)).prop_map(|(bump, records)| Op::Append { bump, records }),
        2 => (0i32..2, proptest::collection::vec(1usize..4, 1..3)).prop_map(|(bump, sizes)| Op::Follower { bump, sizes }),
        2 => (0i64..30).prop_map(Op::Truncate),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// FileLog behaves as MemoryLog for every sequence of appends, truncations, flushes and reopens.
    #[test]
    fn file_log_matches_memory_log(ops in proptest::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let mut file = FileLog::open_with_segment_bytes(dir.path(), 150).unwrap();
        let mut memory = MemoryLog::new();
        let mut epoch = 1;
        for op in ops {
            match op {
                Op::Append { bump, records } => {
                    epoch += bump;
                    let a = file.append_as_leader(epoch, 0, records.clone()).unwrap();
                    let b = memory.append_as_leader(epoch, 0, records).unwrap();
                    prop_assert_eq!(a, b);
                }
                Op::Follower { bump, sizes } => {
                    epoch += bump;
                    let mut base = memory.end_offset();
                    let batches: Vec<Batch> = sizes.iter().map(|n| {
                        let b = Batch { base_offset: base, epoch, append_time: 0, records: data(*n, base as u8) };
                        base += *n as i64;
                        b
                    }).collect();
                    file.append_as_follower(batches.clone()).unwrap();
                    memory.append_as_follower(batches).unwrap();
                }
                Op::Truncate(offset) => {
                    file.truncate_to(offset).unwrap();
                    memory.truncate_to(offset).unwrap();
                }
                Op::Flush => {
                    file.flush().unwrap();
                    memory.flush().unwrap();
                    prop_assert_eq!(file.flushed_offset(), memory.flushed_offset());
                }
                Op::Reopen => {
                    file.flush().unwrap();
                    drop(file);
                    file = FileLog::open_with_segment_bytes(dir.path(), 150).unwrap();
                }
            }
            prop_assert_eq!(file.end_offset(), memory.end_offset());
            prop_assert_eq!(file.last_epoch(), memory.last_epoch());
            prop_assert_eq!(flat(&file), flat(&memory));
            for e in 0..=epoch + 1 {
                prop_assert_eq!(file.end_offset_for_epoch(e), memory.end_offset_for_epoch(e), "epoch {}", e);
            }
        }
    }
}
