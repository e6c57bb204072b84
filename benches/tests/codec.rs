//! Codec properties the benches rely on: both codecs encode the fixtures byte-identically (so the
//! comparison is on the same messages), and our encode allocates nothing beyond the output buffer.

use bytes::BytesMut;
use kafka_protocol::protocol::{Decodable, Encodable};

use benches::alloc::{count, CountingAlloc};
use benches::fixtures::{describe_response, to_kafka, REPLICA_COUNTS};
use kraft::wire::DescribeQuorumResponse;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

#[test]
fn fixtures_encode_identically_in_both_codecs() {
    for version in 0..=2 {
        for n in REPLICA_COUNTS {
            let ours = describe_response(n, version);
            let mut theirs = BytesMut::new();
            to_kafka(&ours).encode(&mut theirs, version).unwrap();
            assert_eq!(ours.to_bytes(version).unwrap(), theirs, "v{version} n={n}");
            let back = kafka_protocol::messages::DescribeQuorumResponse::decode(
                &mut theirs.freeze(),
                version,
            )
            .unwrap();
            assert_eq!(back, to_kafka(&ours), "v{version} n={n}");
        }
    }
}

#[test]
fn v3_fixture_round_trips_and_grows_by_committed_voters() {
    for n in REPLICA_COUNTS {
        let v3 = describe_response(n, 3);
        let body = v3.to_bytes(3).unwrap();
        assert_eq!(DescribeQuorumResponse::decode(&body, 3).unwrap(), v3);
        // Same message minus CommittedVoters at v2: v3 adds one compact array of n ReplicaStates
        // (45 bytes each at v2+) whose length prefix replaces nothing.
        let v2 = describe_response(n, 2).to_bytes(2).unwrap();
        let header = if n < 127 { 1 } else { 2 };
        assert_eq!(body.len(), v2.len() + header + 45 * n, "n={n}");
    }
}

#[test]
fn encode_into_a_sized_buffer_allocates_nothing() {
    for version in 0..=3 {
        for n in REPLICA_COUNTS {
            let msg = describe_response(n, version);
            let size = msg.encoded_size(version).unwrap();
            let mut buf = BytesMut::with_capacity(size);
            let (result, allocs) = count(|| msg.encode(version, &mut buf));
            result.unwrap();
            assert_eq!(buf.len(), size);
            assert_eq!(allocs.count, 0, "v{version} n={n}: {allocs:?}");
        }
    }
}

#[test]
fn to_bytes_allocates_only_the_output_buffer() {
    for version in 0..=3 {
        for n in REPLICA_COUNTS {
            let msg = describe_response(n, version);
            let size = msg.encoded_size(version).unwrap();
            let (bytes, allocs) = count(|| msg.to_bytes(version));
            assert_eq!(bytes.unwrap().len(), size);
            assert_eq!(allocs.count, 1, "v{version} n={n}: {allocs:?}");
            assert_eq!(allocs.bytes, size as u64, "v{version} n={n}: {allocs:?}");
        }
    }
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the tests above against a counter that never counts.
    let (v, allocs) = count(|| vec![0u8; 100]);
    assert_eq!(v.len(), 100);
    assert_eq!(allocs.count, 1);
    assert_eq!(allocs.bytes, 100);
}

/// Decoding from `Bytes` borrows every string from the input, as kafka-protocol does: never more
/// allocations than kafka-protocol's decode of the same body, and the same result as the copying decode.
#[test]
fn borrowing_decode_allocates_no_more_than_kafka_protocol() {
    for version in 0..=2 {
        for n in REPLICA_COUNTS {
            let body = describe_response(n, version).to_bytes(version).unwrap();
            // The first slice of a `Bytes` made from a Vec allocates its shared header once;
            // kafka-protocol pays that in its `clone()`, outside its count.
            let _ = DescribeQuorumResponse::decode_bytes(&body, version);
            let (ours, allocs) = count(|| DescribeQuorumResponse::decode_bytes(&body, version));
            let mut input = body.clone();
            let (theirs, kp_allocs) = count(|| {
                kafka_protocol::messages::DescribeQuorumResponse::decode(&mut input, version)
            });
            theirs.unwrap();
            let ours = ours.unwrap();
            assert!(
                allocs.count <= kp_allocs.count,
                "v{version} n={n}: ours {allocs:?}, kafka-protocol {kp_allocs:?}"
            );
            assert_eq!(
                ours,
                DescribeQuorumResponse::decode(&body, version).unwrap()
            );
        }
    }
}
