//! Tests of the record batch codec.

use super::*;
use proptest::prelude::*;

fn voter(id: i32, dir: u128, port: u16) -> VoterNode {
    VoterNode {
        key: ReplicaKey {
            id,
            directory_id: (dir != 0).then(|| Uuid::from_u128(dir)),
        },
        listeners: vec![Endpoint {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
        }],
        supported: SupportedVersions { min: 0, max: 1 },
    }
}

fn sample() -> Vec<Batch> {
    let set = VoterSet::new(vec![voter(1, 11, 9001), voter(2, 0, 9002)]).unwrap();
    vec![
        Batch {
            base_offset: 0,
            epoch: 1,
            append_time: 0,
            records: vec![Record::KRaftVersion(1), Record::Voters(set)],
        },
        Batch {
            base_offset: 2,
            epoch: 2,
            append_time: 0,
            records: vec![Record::LeaderChange {
                leader_id: 1,
                voters: vec![1, 2],
                granting_voters: vec![1],
            }],
        },
        Batch {
            base_offset: 3,
            epoch: 2,
            append_time: 0,
            records: vec![
                Record::Data(Bytes::from_static(b"a")),
                Record::Data(Bytes::new()),
            ],
        },
    ]
}

#[test]
fn round_trip_and_kafka_layout() {
    let batches = sample();
    let bytes = encode_batches(&batches).unwrap();
    assert_eq!(decode_batches(bytes.clone()).unwrap(), batches);
    // First batch: control attribute set, magic 2, epoch 1, last offset delta 1, two records.
    assert_eq!(bytes[16], 2);
    assert_eq!(i32::from_be_bytes(bytes[12..16].try_into().unwrap()), 1);
    assert_eq!(
        i16::from_be_bytes(bytes[21..23].try_into().unwrap()),
        ATTR_CONTROL
    );
    assert_eq!(i32::from_be_bytes(bytes[23..27].try_into().unwrap()), 1);
    assert_eq!(i32::from_be_bytes(bytes[57..61].try_into().unwrap()), 2);
    // Kafka's decoder reads our control key (version 0, type 5) and producer id −1.
    let mut first = bytes.clone();
    let set = RecordBatchDecoder::decode(&mut first).unwrap();
    assert!(set.records[0].control);
    assert_eq!(set.records[0].producer_id, -1);
    assert_eq!(set.records[0].key.as_deref(), Some(&[0u8, 0, 0, 5][..]));
    assert_eq!(set.records[1].key.as_deref(), Some(&[0u8, 0, 0, 6][..]));
}

#[test]
fn crc_mismatch_is_typed() {
    let mut bytes = encode_batches(&sample()).unwrap().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    match decode_batches(Bytes::from(bytes)) {
        Err(RecordsError::CrcMismatch { base_offset: 3, .. }) => {}
        other => panic!("expected CRC mismatch at offset 3, got {other:?}"),
    }
}

#[test]
fn truncated_tail_keeps_valid_prefix() {
    let bytes = encode_batches(&sample()).unwrap();
    let cut = bytes.slice(..bytes.len() - 5);
    let scan = scan_batches(cut.clone());
    assert_eq!(scan.batches, sample()[..2].to_vec());
    assert!(matches!(scan.error, Some(RecordsError::Truncated { .. })));
    assert!(decode_batches(cut).is_err());
    // A header-only fragment.
    let scan = scan_batches(bytes.slice(..7));
    assert_eq!((scan.valid_bytes, scan.batches.len()), (0, 0));
}

#[test]
fn huge_length_and_count_are_rejected_without_allocation() {
    let mut bytes = encode_batches(&sample()[2..]).unwrap().to_vec();
    bytes[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(
        decode_batches(Bytes::from(bytes)),
        Err(RecordsError::BadLength { .. })
    ));
    let mut bytes = encode_batches(&sample()[2..]).unwrap().to_vec();
    bytes[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        decode_batches(Bytes::from(bytes)),
        Err(RecordsError::Malformed { .. })
    ));
}

fn with_crc(mut bytes: Vec<u8>) -> Bytes {
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}

#[test]
fn record_lengths_and_header_counts_must_fit_the_batch() {
    let data = Batch {
        base_offset: 5,
        epoch: 1,
        append_time: 0,
        records: vec![Record::Data(Bytes::from_static(b"x"))],
    };
    let good = encode_batches(std::slice::from_ref(&data))
        .unwrap()
        .to_vec();
    // The record ends with its header count (0); claim 63 headers in no bytes.
    let mut bytes = good.clone();
    *bytes.last_mut().unwrap() = 0x7e;
    let last = bytes.len() - 1;
    assert_eq!(
        decode_batches(with_crc(bytes)),
        Err(RecordsError::LengthTooLarge {
            base_offset: 5,
            field: "header count",
            position: last,
            value: 63,
            remaining: 0,
        })
    );
    // A record length (first byte after the header) far beyond the batch.
    let mut bytes = good.clone();
    bytes[BATCH_HEADER_SIZE] = 0x7e;
    assert!(matches!(
        decode_batches(with_crc(bytes)),
        Err(RecordsError::LengthTooLarge {
            field: "record length",
            position: BATCH_HEADER_SIZE,
            ..
        })
    ));
}

#[test]
fn control_values_are_walked_before_decoding() {
    // VotersRecord v0: version (int16) then Voters, a compact array claiming 2^32 - 2 voters.
    let value = [0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f];
    match check_value("VotersRecord", 0, &value, 9) {
        Err(RecordsError::BadControlRecord {
            offset: 9,
            what: "VotersRecord",
            reason,
        }) => {
            assert!(reason.contains("VotersRecord.Voters"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let value = [0, 0, 0, 0xff, 0xff, 0xff, 0x0f];
    assert!(check_value("LeaderChangeMessage", 0, &value, 9).is_err());
}

/// The `records_decoder` fuzz target's out-of-memory input (CRC recomputed): a LeaderChangeMessage
/// whose `Version` field says 1, valid at version 0, which kafka-protocol reads at version 1.
#[test]
fn control_value_is_walked_at_its_embedded_version() {
    let mut batch = b"\0\0\0\0\0\0\0\x02\0\0\0^\0\0\0\x02\x02\x136\xa8\x9b\0 \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\x01X\0\0\0\x08\0\0\0\x02D\0\x01\x02g$\x12\x02\0 @\0\0\x01\0\0\0\0\0\0\0\0\0\0\x0a\0\0\0\0\xff\xff\xff\x09\xff\xff\0\0\0\0\0\0\0\0".to_vec();
    batch.truncate(12 + 0x5e);
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    match decode_batches(Bytes::from(batch)) {
        Err(RecordsError::BadControlRecord {
            what: "LeaderChangeMessage",
            reason,
            ..
        }) => assert!(reason.contains("LeaderChangeMessage."), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn mixed_batch_is_split_into_control_and_data_batches() {
    let mixed = Batch {
        base_offset: 10,
        epoch: 4,
        append_time: 0,
        records: vec![
            Record::Data(Bytes::from_static(b"x")),
            Record::KRaftVersion(1),
            Record::KRaftVersion(0),
        ],
    };
    let bytes = encode_batches(&[mixed]).unwrap();
    // Both Kafka batches carry base sequence −1 (no idempotent producer).
    let second = batch_frame(&bytes, 0).unwrap().1;
    for start in [0, second] {
        assert_eq!(&bytes[start + 53..start + 57], &(-1i32).to_be_bytes());
    }
    let decoded = decode_batches(bytes).unwrap();
    assert_eq!(
        decoded,
        vec![
            Batch {
                base_offset: 10,
                epoch: 4,
                append_time: 0,
                records: vec![Record::Data(Bytes::from_static(b"x"))]
            },
            Batch {
                base_offset: 11,
                epoch: 4,
                append_time: 0,
                records: vec![Record::KRaftVersion(1), Record::KRaftVersion(0)]
            },
        ]
    );
}

#[test]
fn unknown_control_type_and_empty_voters_are_errors() {
    let mut buf = BytesMut::new();
    let record = kafka_protocol::records::Record {
        transactional: false,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: 1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: Some(control_key(99)),
        value: Some(Bytes::new()),
        headers: Default::default(),
    };
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, [&record], &options).unwrap();
    assert!(matches!(
        decode_batches(buf.freeze()),
        Err(RecordsError::UnknownControlType {
            offset: 0,
            control_type: 99
        })
    ));
    let empty = encode_message(&VotersRecord::default(), 0).unwrap();
    let record = kafka_protocol::records::Record {
        key: Some(control_key(CONTROL_VOTERS)),
        value: Some(empty),
        ..record
    };
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, [&record], &options).unwrap();
    assert!(matches!(
        decode_batches(buf.freeze()),
        Err(RecordsError::BadControlRecord { .. })
    ));
}

fn arb_record() -> impl Strategy<Value = Record> {
    let data =
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(|v| Record::Data(Bytes::from(v)));
    let ids = proptest::collection::vec(0i32..10, 0..4);
    let leader = (0i32..10, ids.clone(), ids).prop_map(|(leader_id, voters, granting_voters)| {
        Record::LeaderChange {
            leader_id,
            voters,
            granting_voters,
        }
    });
    let voters = proptest::collection::btree_map(
        0i32..50,
        (any::<u128>(), any::<u16>(), "[a-z.]{0,12}"),
        1..5,
    )
    .prop_map(|m| {
        let nodes = m.into_iter().map(|(id, (dir, port, host))| {
            let mut v = voter(id, dir, port);
            v.listeners[0].host = host;
            v
        });
        Record::Voters(VoterSet::new(nodes).unwrap())
    });
    prop_oneof![
        data,
        leader,
        any::<i16>().prop_map(Record::KRaftVersion),
        voters
    ]
}

/// Homogeneous batches (all data or all control), as the log writes them.
fn arb_batches() -> impl Strategy<Value = Vec<Batch>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(arb_record(), 1..5),
            0i32..3,
            any::<bool>(),
        ),
        0..6,
    )
    .prop_map(|specs| {
        let (mut offset, mut epoch) = (0i64, 0i32);
        let mut out = Vec::new();
        for (records, bump, data) in specs {
            let records: Vec<Record> = records
                .into_iter()
                .filter(|r| matches!(r, Record::Data(_)) == data)
                .collect();
            if records.is_empty() {
                continue;
            }
            epoch += bump;
            out.push(Batch {
                base_offset: offset,
                epoch,
                append_time: 0,
                records,
            });
            offset = out.last().map(Batch::next_offset).unwrap_or(offset);
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn prop_round_trip(batches in arb_batches()) {
        let bytes = encode_batches(&batches).unwrap();
        prop_assert_eq!(decode_batches(bytes).unwrap(), batches);
    }

    #[test]
    fn prop_any_single_bit_flip_is_detected_or_harmless(batches in arb_batches(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let bytes = encode_batches(&batches).unwrap();
        prop_assume!(!bytes.is_empty());
        let mut flipped = bytes.to_vec();
        let i = pos.index(flipped.len());
        flipped[i] ^= 1 << bit;
        // Never panics; a flip inside a batch body is caught by the CRC (or the framing checks).
        match decode_batches(Bytes::from(flipped)) {
            Err(_) => {}
            // Flips in base offset or epoch are outside the CRC (as in Kafka) and decode to other values.
            Ok(decoded) => prop_assert!(decoded != batches),
        }
    }

    #[test]
    fn prop_random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = scan_batches(Bytes::from(bytes));
    }
}

#[test]
fn metadata_record_type_reads_the_frame_version_1_header_only() {
    // Frame version 1, api key 23 (BeginTransactionRecord), then the record's own version.
    assert_eq!(metadata_record_type(&[1, 23, 0]), Some(23));
    assert_eq!(metadata_record_type(&[1, 0x7f]), Some(0x7f));
    // A type of 128 or more takes two varint bytes: not a type this reader knows.
    assert_eq!(metadata_record_type(&[1, 0x80, 0x01]), None);
    assert_eq!(metadata_record_type(&[0, 23]), None);
    assert_eq!(metadata_record_type(&[1]), None);
    assert_eq!(metadata_record_type(&[]), None);
}
