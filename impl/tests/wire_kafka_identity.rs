//! Versions 0–2 of our DescribeQuorum codec against `kafka-protocol` 0.18 (generated from Apache Kafka's
//! own message definitions): the same bytes for every value, the same decoded values for every byte
//! string, the same writing rule. Version 3 (ours only) and unknown tagged fields round-trip.

mod wire_support;

use bytes::BytesMut;
use kafka_protocol::messages::{
    describe_quorum_request as kreq, describe_quorum_response as kresp,
};
use kafka_protocol::protocol::{Decodable, Encodable};
use kraft::wire::{DescribeQuorumRequest, DescribeQuorumResponse, WireError};
use proptest::prelude::*;
use wire_support::*;

const CASES: u32 = 10_000;

fn kp_encode<T: Encodable>(value: &T, version: i16) -> Option<Vec<u8>> {
    let mut buf = BytesMut::new();
    value.encode(&mut buf, version).ok()?;
    assert_eq!(
        value.compute_size(version).ok(),
        Some(buf.len()),
        "kafka-protocol size"
    );
    Some(buf.to_vec())
}

/// Value, version 0–2, and whether the value was made encodable at that version (3 in 4 cases), so the
/// writing rule's error path and the success path are both exercised at v0 and v1.
fn response_case() -> impl Strategy<Value = (DescribeQuorumResponse, i16)> {
    (arb_response(), 0i16..=2, prop::bool::weighted(0.75))
        .prop_map(|(v, version, fit)| (if fit { conform(v, version) } else { v }, version))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    /// Ours and kafka-protocol agree on every response at v0–2: both fail (the writing rule), or both
    /// produce the same bytes, of the size both predicted; and both decode those bytes to equal values.
    #[test]
    fn response_bytes_match_kafka_protocol((value, version) in response_case()) {
        let ours = value.to_bytes(version);
        let theirs = kp_encode(&kresp::DescribeQuorumResponse::from(&value), version);
        match (&ours, &theirs) {
            (Ok(ours), Some(theirs)) => {
                prop_assert_eq!(ours.as_ref(), theirs.as_slice());
                prop_assert_eq!(value.encoded_size(version), Ok(ours.len()));
                let decoded_by_us = DescribeQuorumResponse::decode(ours, version).unwrap();
                let mut buf = bytes::Bytes::copy_from_slice(theirs);
                let decoded_by_them = kresp::DescribeQuorumResponse::decode(&mut buf, version).unwrap();
                prop_assert!(buf.is_empty());
                prop_assert_eq!(&decoded_by_us, &DescribeQuorumResponse::from(&decoded_by_them));
                prop_assert_eq!(decoded_by_us, project(value, version));
            }
            (Err(WireError::FieldNotAvailable { .. }), None) => {}
            _ => prop_assert!(false, "ours {:?} vs kafka-protocol {:?}", ours, theirs),
        }
    }

    /// Bytes kafka-protocol writes decode with ours to the value it encoded (projected onto the version),
    /// and re-encode byte for byte.
    #[test]
    fn kafka_protocol_bytes_decode_with_ours((value, version) in response_case()) {
        let kp = kresp::DescribeQuorumResponse::from(&value);
        if let Some(theirs) = kp_encode(&kp, version) {
            let decoded = DescribeQuorumResponse::decode(&theirs, version).unwrap();
            prop_assert_eq!(&decoded, &project(value, version));
            let again = decoded.to_bytes(version).unwrap();
            prop_assert_eq!(again.as_ref(), theirs.as_slice());
        }
    }

    /// Requests: identical bytes at v0–2 both ways; the body is the same at every version.
    #[test]
    fn request_bytes_match_kafka_protocol(value in arb_request(), version in 0i16..=2) {
        let ours = value.to_bytes(version).unwrap();
        let theirs = kp_encode(&kreq::DescribeQuorumRequest::from(&value), version).unwrap();
        prop_assert_eq!(ours.as_ref(), theirs.as_slice());
        let mut buf = bytes::Bytes::copy_from_slice(&theirs);
        let decoded_by_them = kreq::DescribeQuorumRequest::decode(&mut buf, version).unwrap();
        prop_assert_eq!(&DescribeQuorumRequest::from(&decoded_by_them), &value);
        prop_assert_eq!(DescribeQuorumRequest::decode(&theirs, version).unwrap(), value.clone());
        prop_assert_eq!(value.to_bytes(3).unwrap(), ours);
    }

    /// Every version, 3 included: decode(encode(x)) is x projected onto the version, so unknown tagged
    /// fields survive at every level; encoded_size is exact; encode appends to what the buffer holds.
    #[test]
    fn responses_round_trip_at_every_version(value in arb_response(), version in 0i16..=3, prefix in 0usize..3) {
        let value = conform(value, version);
        let mut buf = BytesMut::from(&b"xyz"[..prefix]);
        value.encode(version, &mut buf).unwrap();
        prop_assert_eq!(value.encoded_size(version), Ok(buf.len() - prefix));
        let decoded = DescribeQuorumResponse::decode(&buf[prefix..], version).unwrap();
        prop_assert_eq!(&decoded, &project(value.clone(), version));
        if version == 3 {
            prop_assert_eq!(decoded, value);
        }
    }

    /// Corrupted bodies: whenever ours accepts the bytes, kafka-protocol (v0–2) decodes them to the same
    /// value. (Ours may refuse more: varints past 32 bits, strings past 32767 bytes, unordered tags.)
    #[test]
    fn corrupted_bodies_accepted_by_us_agree_with_kafka_protocol(
        (value, version) in response_case(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let Ok(bytes) = value.to_bytes(version) else { return Ok(()) };
        let mut bytes = bytes.to_vec();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        // Only bytes we accepted reach kafka-protocol: it preallocates whatever count the input claims.
        if let Ok(ours) = DescribeQuorumResponse::decode(&bytes, version) {
            let mut buf = bytes::Bytes::copy_from_slice(&bytes);
            let theirs = kresp::DescribeQuorumResponse::decode(&mut buf, version);
            prop_assert!(theirs.is_ok(), "kafka-protocol refused bytes we accepted: {:?}", theirs);
            prop_assert!(buf.is_empty());
            prop_assert_eq!(ours, DescribeQuorumResponse::from(&theirs.unwrap()));
        }
    }
}

/// The writing rule, case by case, next to kafka-protocol's answer.
#[test]
fn writing_rule_matches_kafka_protocol() {
    let mut value = DescribeQuorumResponse::default();
    value.topics.push(kraft::wire::TopicData {
        topic_name: "__cluster_metadata".into(),
        partitions: vec![kraft::wire::PartitionData::default()],
        ..Default::default()
    });
    let base = value.clone();

    // Non-ignorable ReplicaDirectoryId below v2.
    let mut dir = base.clone();
    first_partition(&mut dir)
        .observers
        .push(kraft::wire::ReplicaState {
            replica_directory_id: uuid::Uuid::from_bytes([7; 16]),
            ..Default::default()
        });
    // Non-ignorable Nodes below v2.
    let mut nodes = base.clone();
    nodes.nodes.push(kraft::wire::NodeEndpoints {
        node_id: 1,
        ..Default::default()
    });
    // Ignorable fields: ErrorMessage (null or text) below v2, timestamps at v0, CommittedVoters below v3.
    let mut ignorable = base.clone();
    ignorable.error_message = None;
    first_partition(&mut ignorable).error_message = Some("boom".into());
    first_partition(&mut ignorable)
        .current_voters
        .push(kraft::wire::ReplicaState {
            last_fetch_timestamp: 5,
            last_caught_up_timestamp: 6,
            ..Default::default()
        });
    first_partition(&mut ignorable)
        .committed_voters
        .push(kraft::wire::ReplicaState::sentinel(
            3,
            uuid::Uuid::from_bytes([9; 16]),
        ));

    for version in 0..=2i16 {
        for (name, v, fails) in [
            ("dir", &dir, version < 2),
            ("nodes", &nodes, version < 2),
            ("ignorable", &ignorable, false),
        ] {
            let ours = v.to_bytes(version);
            let theirs = kp_encode(&kresp::DescribeQuorumResponse::from(v), version);
            assert_eq!(ours.is_err(), fails, "{name} v{version}: {ours:?}");
            assert_eq!(theirs.is_none(), fails, "{name} v{version}: kafka-protocol");
            if let (Ok(ours), Some(theirs)) = (ours, theirs) {
                assert_eq!(ours.as_ref(), theirs.as_slice(), "{name} v{version}");
            }
        }
    }
    assert_eq!(
        dir.to_bytes(1),
        Err(WireError::FieldNotAvailable {
            field: "ReplicaState.ReplicaDirectoryId",
            version: 1
        })
    );
    assert_eq!(
        nodes.to_bytes(0),
        Err(WireError::FieldNotAvailable {
            field: "DescribeQuorumResponse.Nodes",
            version: 0
        })
    );
    // Version 3 keeps what v2 drops.
    let v3 = DescribeQuorumResponse::decode(&ignorable.to_bytes(3).unwrap(), 3).unwrap();
    assert_eq!(v3, ignorable);
}

/// kafka-protocol knows nothing beyond v2; neither do we beyond v3.
#[test]
fn version_ranges() {
    let value = DescribeQuorumResponse::default();
    assert!(kp_encode(&kresp::DescribeQuorumResponse::from(&value), 3).is_none());
    assert!(value.to_bytes(3).is_ok());
    assert!(matches!(
        value.to_bytes(4),
        Err(WireError::UnsupportedVersion { version: 4, .. })
    ));
}

fn first_partition(v: &mut DescribeQuorumResponse) -> &mut kraft::wire::PartitionData {
    &mut v.topics[0].partitions[0]
}
