//! The node over TCP: UNSUPPORTED_VERSION without closing, responses in request order, DescribeQuorum
//! v0–v3 round trips, and bad clients (random bytes, oversized frames, half-open and slow connections)
//! that must not stop the node from serving everyone else.

mod cluster_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use cluster_support::*;
use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
use kafka_protocol::protocol::Decodable;
use kraft::server::client::{describe_frame, Client};
use kraft::server::codec::{request_frame, response_body};
use kraft::wire::describe_quorum::DescribeQuorumRequest;
use kraft::wire::frame::{read_frame_blocking, FrameReadError, DEFAULT_MAX_FRAME_SIZE};
use rand::{Rng, SeedableRng};

const LIMITS: &[&str] = &[
    "--election-timeout-ms",
    "200",
    "--fetch-timeout-ms",
    "1000",
    "--frame-timeout-ms",
    "500",
    "--idle-timeout-ms",
    "1500",
    "--max-frame-bytes",
    "65536",
    "--max-in-flight",
    "4",
];

fn single_node() -> Cluster {
    let c = Cluster::start(1, 0, 3, LIMITS);
    c.wait_for_leader(Duration::from_secs(20));
    c
}

fn read_response(stream: &mut TcpStream) -> Result<Bytes, FrameReadError> {
    read_frame_blocking(stream, DEFAULT_MAX_FRAME_SIZE)
}

fn connect(c: &Cluster) -> TcpStream {
    let s = TcpStream::connect(c.addr(1)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// True once the server has closed `stream` (EOF or reset), waiting at most `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // an error response before closing is allowed
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn healthy(c: &Cluster) {
    let mut client = Client::connect(&c.addr(1), Duration::from_secs(2)).unwrap();
    let r = client.describe_quorum(3).unwrap();
    assert_eq!(r.topics[0].partitions[0].leader_id, 1);
}

#[test]
fn unsupported_api_key_and_version_get_unsupported_version_and_the_connection_stays_open() {
    let c = single_node();
    let mut s = connect(&c);
    for (key, version) in [(999i16, 0i16), (55, 4), (1, 3)] {
        let mut frame = BytesMut::new();
        frame.put_i32(10);
        frame.put_i16(key);
        frame.put_i16(version);
        frame.put_i32(77);
        frame.put_i16(-1); // null client id
        s.write_all(&frame).unwrap();
        let payload = read_response(&mut s).unwrap();
        // Response header v0 (correlation id) and an ApiVersions v0 body: error 35 first.
        assert_eq!(&payload[0..4], &77i32.to_be_bytes(), "key {key} v{version}");
        assert_eq!(&payload[4..6], &35i16.to_be_bytes(), "key {key} v{version}");
    }
    // Same connection, a real request afterwards.
    s.write_all(&describe_frame(3, 78, &DescribeQuorumRequest::for_metadata_partition()).unwrap())
        .unwrap();
    let payload = read_response(&mut s).unwrap();
    let (corr, body) = response_body(payload, 55, 3).unwrap();
    assert_eq!(corr, 78);
    let r = kraft::wire::describe_quorum::DescribeQuorumResponse::decode(&body, 3).unwrap();
    assert_eq!(r.topics[0].partitions[0].leader_id, 1);
}

#[test]
fn pipelined_requests_are_answered_in_request_order() {
    let c = single_node();
    let mut s = connect(&c);
    let mut all = BytesMut::new();
    let mut expected = Vec::new();
    for corr in 1..=24 {
        let frame = match corr % 3 {
            0 => describe_frame(
                (corr % 4) as i16,
                corr,
                &DescribeQuorumRequest::for_metadata_partition(),
            )
            .unwrap(),
            1 => request_frame(18, 3, corr, "t", &ApiVersionsRequest::default()).unwrap(),
            _ => request_frame(3, 12, corr, "t", &MetadataRequest::default()).unwrap(),
        };
        all.extend_from_slice(&frame);
        expected.push(corr);
    }
    // All at once: more than the in-flight cap (4), so the server must also apply back-pressure.
    s.write_all(&all).unwrap();
    let got: Vec<i32> = (0..24)
        .map(|_| {
            let payload = read_response(&mut s).unwrap();
            i32::from_be_bytes(payload[0..4].try_into().unwrap())
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn describe_quorum_v0_to_v3_round_trip_over_tcp() {
    let c = single_node();
    let mut client = Client::connect(&c.addr(1), Duration::from_secs(2)).unwrap();
    let versions = client.api_versions(3).unwrap();
    let dq = versions.api_keys.iter().find(|k| k.api_key == 55).unwrap();
    assert_eq!((dq.min_version, dq.max_version), (0, 3));
    assert!(
        versions.api_keys.iter().any(|k| k.api_key == 3),
        "Metadata is advertised"
    );
    for v in 0..=3i16 {
        let r = client.describe_quorum(v).unwrap();
        let p = &r.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.leader_id, p.current_voters.len()),
            (0, 1, 1),
            "v{v}"
        );
        assert_eq!(
            p.committed_voters.len(),
            usize::from(v >= 3),
            "v{v}: CommittedVoters only at v3"
        );
        assert_eq!(r.nodes.is_empty(), v < 2, "v{v}: Nodes from v2");
        // Versions 0–2 are byte-compatible with Kafka: kafka-protocol decodes the same answer.
        if v <= 2 {
            let mut s = connect(&c);
            s.write_all(
                &describe_frame(v, 9, &DescribeQuorumRequest::for_metadata_partition()).unwrap(),
            )
            .unwrap();
            let (_, mut body) = response_body(read_response(&mut s).unwrap(), 55, v).unwrap();
            let k = kafka_protocol::messages::DescribeQuorumResponse::decode(&mut body, v).unwrap();
            let kp = &k.topics[0].partitions[0];
            assert_eq!(
                (kp.leader_id.0, kp.high_watermark),
                (p.leader_id, p.high_watermark),
                "v{v}"
            );
            assert_eq!(kp.current_voters.len(), 1);
        }
    }
    let md = client.metadata(12).unwrap();
    assert_eq!(md.cluster_id.as_deref(), Some("itest"));
    assert_eq!(md.brokers.len(), 1);
    assert!(md.topics.is_empty());
}

#[test]
fn bad_clients_do_not_stop_the_node() {
    let c = single_node();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);

    // Half-open: connects and says nothing; closed by the idle timeout, meanwhile others are served.
    let mut half_open = connect(&c);

    // Random bytes: whatever the size prefix says, the node answers or closes, and keeps serving.
    for _ in 0..20 {
        let mut s = connect(&c);
        let junk: Vec<u8> = (0..rng.gen_range(1..200)).map(|_| rng.gen()).collect();
        let _ = s.write_all(&junk);
        let _ = s.shutdown(std::net::Shutdown::Write);
        assert!(
            closed_within(&mut s, Duration::from_secs(3)),
            "junk connection must be closed"
        );
        healthy(&c);
    }

    // Oversized: a 1 GiB size prefix is refused at once, before any allocation.
    let mut s = connect(&c);
    s.write_all(&(1i32 << 30).to_be_bytes()).unwrap();
    assert!(
        closed_within(&mut s, Duration::from_secs(2)),
        "oversized frame must close the connection"
    );
    // Too short to hold a header.
    let mut s = connect(&c);
    s.write_all(&3i32.to_be_bytes()).unwrap();
    s.write_all(&[0, 0, 0]).unwrap();
    assert!(
        closed_within(&mut s, Duration::from_secs(2)),
        "short frame must close the connection"
    );
    healthy(&c);

    // Slow: half a frame, then silence; closed after the 500 ms frame timeout.
    let mut s = connect(&c);
    s.write_all(&100i32.to_be_bytes()).unwrap();
    s.write_all(&[0u8; 10]).unwrap();
    let started = Instant::now();
    assert!(
        closed_within(&mut s, Duration::from_secs(3)),
        "slow client must be dropped"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "not before the frame timeout"
    );
    healthy(&c);

    // Malformed body of a supported request: closed; others unaffected.
    let mut s = connect(&c);
    let mut frame = BytesMut::new();
    frame.put_i32(12);
    frame.put_i16(52); // Vote v1
    frame.put_i16(1);
    frame.put_i32(5);
    frame.put_i16(-1);
    frame.put_u8(0); // header tags
    frame.put_u8(0xff); // a truncated body
    s.write_all(&frame).unwrap();
    assert!(
        closed_within(&mut s, Duration::from_secs(2)),
        "malformed request must close the connection"
    );
    healthy(&c);

    assert!(
        closed_within(&mut half_open, Duration::from_secs(4)),
        "idle connection closed by the idle timeout"
    );
    healthy(&c);
}
