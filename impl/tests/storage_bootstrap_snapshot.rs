//! Kafka's bootstrap snapshot (`00000000000000000000-0000000000.checkpoint`): the file Kafka 4.4.0's
//! `kafka-storage format --initial-controllers` wrote (testdata, two voters) is read by `kraft node`'s
//! bootstrap reader, and so is the one of `--no-initial-controllers` (KRaftVersion 1, no voters); the one
//! `kraft format` writes has Kafka's frame, with static voters too (header and footer only); damaged files are
//! typed errors.

use bytes::Bytes;
use kraft::node::Bootstrap;
use kraft::records::{
    decode_snapshot, encode_bootstrap_snapshot, encode_bootstrap_snapshot_without_voters,
    encode_static_bootstrap_snapshot, RecordsError,
};
use kraft::storage::{
    parse_directory_id, read_bootstrap, write_bootstrap, write_bootstrap_snapshot,
    write_static_bootstrap_snapshot, DataDir,
};
use kraft::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};

/// `kafka-storage format --cluster-id MkU3OEVBNTcwNTJENDM2Qk --initial-controllers
/// 1@127.0.0.1:19091:AAAAAAAAAAAAAAAAAAAAAQ,2@127.0.0.1:19092:AAAAAAAAAAAAAAAAAAAAAg` (Kafka 4.4.0).
const KAFKA: &[u8] = include_bytes!("testdata/kafka-4.4.0-bootstrap.checkpoint");

/// `kafka-storage format --cluster-id abc --no-initial-controllers` (node 4, Kafka 4.4.0).
const KAFKA_NO_VOTERS: &[u8] =
    include_bytes!("testdata/kafka-4.4.0-no-initial-controllers.checkpoint");

fn voter(id: i32, dir: &str, port: u16) -> VoterNode {
    VoterNode {
        key: ReplicaKey::new(id, parse_directory_id(dir).unwrap()),
        listeners: vec![Endpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
        }],
        supported: SupportedVersions { min: 0, max: 1 },
    }
}

fn kafka_voters() -> VoterSet {
    VoterSet::new([
        voter(1, "AAAAAAAAAAAAAAAAAAAAAQ", 19091),
        voter(2, "AAAAAAAAAAAAAAAAAAAAAg", 19092),
    ])
    .unwrap()
}

#[test]
fn kafkas_bootstrap_snapshot_is_read() {
    let snapshot = decode_snapshot(Bytes::from_static(KAFKA)).unwrap();
    assert_eq!(snapshot.kraft_version, Some(1));
    assert_eq!(snapshot.voters, Some(kafka_voters()));
    // metadata.version and five other FeatureLevelRecords, skipped.
    assert_eq!(snapshot.data_records, 6);
    assert!(snapshot.last_contained_log_timestamp > 0);

    let dir = tempfile::tempdir().unwrap();
    let data = DataDir::new(dir.path());
    std::fs::create_dir_all(data.log_dir()).unwrap();
    std::fs::write(data.bootstrap_path(), KAFKA).unwrap();
    assert_eq!(data.bootstrap_file(), data.bootstrap_path());
    assert_eq!(
        read_bootstrap(&data.bootstrap_file()).unwrap(),
        Bootstrap::Checkpoint(kafka_voters())
    );
}

#[test]
fn kraft_format_writes_kafkas_frame() {
    let ours = encode_bootstrap_snapshot(&kafka_voters(), 1_764_000_000_000).unwrap();
    let snapshot = decode_snapshot(ours.clone()).unwrap();
    assert_eq!(snapshot.voters, Some(kafka_voters()));
    assert_eq!(snapshot.kraft_version, Some(1));
    assert_eq!(snapshot.data_records, 0);
    assert_eq!(snapshot.last_contained_log_timestamp, 1_764_000_000_000);
    // Kafka's first batch {header, KRaftVersion, Voters} and ours are the same records: same length,
    // same values (the records' timestamps differ: Kafka stamps them, ours are 0).
    let kafka_first = batch_len(KAFKA);
    assert_eq!(batch_len(&ours), kafka_first);
    // The footer batch: base offset 3 in ours (no metadata records), 9 in Kafka's.
    let footer = &ours[batch_len(&ours)..];
    assert_eq!(&footer[0..8], &3i64.to_be_bytes());
    let kafka_footer = &KAFKA[KAFKA.len() - footer.len()..];
    assert_eq!(&kafka_footer[0..8], &9i64.to_be_bytes());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(kraft::storage::BOOTSTRAP_SNAPSHOT_FILE);
    write_bootstrap(&path, &kafka_voters()).unwrap();
    assert_eq!(
        read_bootstrap(&path).unwrap(),
        Bootstrap::Checkpoint(kafka_voters())
    );
}

fn batch_len(bytes: &[u8]) -> usize {
    12 + i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize
}

#[test]
fn damaged_snapshots_are_typed_errors() {
    // Every prefix: the footer is missing or a batch is cut.
    for cut in 0..KAFKA.len() {
        assert!(decode_snapshot(Bytes::copy_from_slice(&KAFKA[..cut])).is_err());
    }
    // Every single bit flip is detected (CRC, frame) or harmless.
    for i in 0..KAFKA.len() {
        for bit in 0..8 {
            let mut b = KAFKA.to_vec();
            b[i] ^= 1 << bit;
            let _ = decode_snapshot(Bytes::from(b));
        }
    }
    // Without the header batch: the data batch comes first.
    let first = batch_len(KAFKA);
    match decode_snapshot(Bytes::copy_from_slice(&KAFKA[first..])) {
        Err(RecordsError::Malformed { reason, .. }) => {
            assert!(
                reason.contains("offsets") || reason.contains("header"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // A log batch (LeaderChange) is not a snapshot.
    let log = kraft::records::encode_batches(&[kraft::log::Batch {
        base_offset: 0,
        epoch: 1,
        append_time: 0,
        records: vec![kraft::log::Record::LeaderChange {
            leader_id: 1,
            voters: vec![1],
            granting_voters: vec![1],
        }],
    }])
    .unwrap();
    assert!(decode_snapshot(log).is_err());
}

#[test]
fn no_initial_controllers_snapshots_kafkas_and_ours() {
    // Kafka's: {header, KRaftVersion(1)}, six FeatureLevelRecords, footer; no voter set.
    let snapshot = decode_snapshot(Bytes::from_static(KAFKA_NO_VOTERS)).unwrap();
    assert_eq!(snapshot.kraft_version, Some(1));
    assert_eq!(snapshot.voters, None);
    assert_eq!(snapshot.data_records, 6);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(kraft::storage::BOOTSTRAP_SNAPSHOT_FILE);
    std::fs::write(&path, KAFKA_NO_VOTERS).unwrap();
    assert_eq!(read_bootstrap(&path).unwrap(), Bootstrap::NoInitialVoters);

    // Ours: the same first batch, byte for byte but the records' timestamps (Kafka stamps them), then the
    // footer at offset 2 (Kafka's is at 8, after its metadata records).
    let ours = encode_bootstrap_snapshot_without_voters(1_764_000_000_000).unwrap();
    let snapshot = decode_snapshot(ours.clone()).unwrap();
    assert_eq!(
        (
            snapshot.kraft_version,
            snapshot.voters,
            snapshot.data_records
        ),
        (Some(1), None, 0)
    );
    assert_eq!(batch_len(&ours), batch_len(KAFKA_NO_VOTERS));
    let footer = &ours[batch_len(&ours)..];
    assert_eq!(&footer[0..8], &2i64.to_be_bytes());
    let kafka_footer = &KAFKA_NO_VOTERS[KAFKA_NO_VOTERS.len() - footer.len()..];
    assert_eq!(&kafka_footer[0..8], &8i64.to_be_bytes());
    write_bootstrap_snapshot(&path, None).unwrap();
    assert_eq!(read_bootstrap(&path).unwrap(), Bootstrap::NoInitialVoters);
}

/// The bootstrap snapshot of a static quorum (`controller.quorum.voters`, kraft.version 0), as Kafka 4.4's
/// storage tool writes it without its metadata records: {SnapshotHeader} at 0, {SnapshotFooter} at 1, no
/// KRaftVersion record and no voter set; read back, the voters come from the configuration.
#[test]
fn static_voters_snapshot_has_only_its_header_and_footer() {
    let ours = encode_static_bootstrap_snapshot(1_764_000_000_000).unwrap();
    let snapshot = decode_snapshot(ours.clone()).unwrap();
    assert_eq!(
        (
            snapshot.kraft_version,
            snapshot.voters,
            snapshot.data_records
        ),
        (None, None, 0)
    );
    assert_eq!(snapshot.last_contained_log_timestamp, 1_764_000_000_000);
    let footer = &ours[batch_len(&ours)..];
    assert_eq!(batch_len(footer), footer.len(), "two batches");
    assert_eq!(&footer[0..8], &1i64.to_be_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(kraft::storage::BOOTSTRAP_SNAPSHOT_FILE);
    write_static_bootstrap_snapshot(&path).unwrap();
    assert_eq!(
        read_bootstrap(&path).unwrap(),
        Bootstrap::Static(VoterSet::empty())
    );
}
