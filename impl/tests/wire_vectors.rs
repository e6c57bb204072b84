//! Golden wire vectors in `specs/vectors/`: generated from the cases below with `UPDATE_VECTORS=1`,
//! and otherwise checked byte for byte, so they cannot drift from the codec. Each vector's `.json` is its
//! decoded content; bodies of v0–2 are also decoded with `kafka-protocol` and compared with it.

mod wire_support;

use std::collections::BTreeSet;

use bytes::BytesMut;
use kafka_protocol::messages::{
    describe_quorum_request as kreq, describe_quorum_response as kresp,
};
use kafka_protocol::protocol::Decodable;
use kraft::wire::describe_quorum::{API_KEY, MAX_VERSION, METADATA_TOPIC};
use kraft::wire::error_codes::{NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION};
use kraft::wire::frame::{self, DEFAULT_MAX_FRAME_SIZE};
use kraft::wire::{
    DescribeQuorumRequest, DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData,
    ReplicaState, RequestHeader, ResponseHeader, TopicData,
};
use uuid::Uuid;
use wire_support::project;
use wire_support::vectors::{hex, unhex, vectors_dir, VectorFiles};

const CORRELATION_ID: i32 = 7;
const CLIENT_ID: &str = "probe";
/// 2023-11-14T22:13:20Z, the leader's "now" in every case.
const NOW: i64 = 1_700_000_000_000;
const CASES: [&str; 5] = [
    "leader",
    "reconfiguring",
    "hw_unknown",
    "not_leader",
    "unknown_partition",
];

/// A vector's `.json`: what the frame holds, decoded.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Vector<H, B> {
    api_key: i16,
    api_version: i16,
    header_version: i16,
    header: H,
    body: B,
}

fn dir(byte: u8) -> Uuid {
    Uuid::from_bytes([byte; 16])
}

fn replica(id: i32, dir_byte: u8, leo: i64, fetch: i64, caught_up: i64) -> ReplicaState {
    ReplicaState {
        replica_id: id,
        replica_directory_id: dir(dir_byte),
        log_end_offset: leo,
        last_fetch_timestamp: fetch,
        last_caught_up_timestamp: caught_up,
        ..ReplicaState::default()
    }
}

fn node(id: i32, port: u16) -> NodeEndpoints {
    NodeEndpoints {
        node_id: id,
        listeners: vec![Listener {
            name: "CONTROLLER".into(),
            host: "localhost".into(),
            port,
            ..Listener::default()
        }],
        ..NodeEndpoints::default()
    }
}

/// What a leader of this project sends for `case` at `version`: built for the version asked for, as the
/// writing rule requires (no directory ids or Nodes below v2; Nodes cover committed voters only at v3).
fn response(case: &str, version: i16) -> DescribeQuorumResponse {
    let metadata = |partition: PartitionData| TopicData {
        topic_name: METADATA_TOPIC.into(),
        partitions: vec![partition],
        ..TopicData::default()
    };
    let leader = |leader_id,
                  leader_epoch,
                  high_watermark,
                  current: Vec<ReplicaState>,
                  observers,
                  committed| {
        PartitionData {
            leader_id,
            leader_epoch,
            high_watermark,
            current_voters: current,
            observers,
            committed_voters: committed,
            ..PartitionData::default()
        }
    };
    let mut out = DescribeQuorumResponse::default();
    // (partition, ids of the current voters, ids of the committed voters)
    let (partition, current_ids, committed_ids): (PartitionData, &[i32], &[i32]) = match case {
        // Leader 1 of epoch 5, no change in flight: committed = current. Same numbers as the
        // kafka-protocol reference vector of v2.
        "leader" => {
            let voters = vec![
                replica(1, 0x11, 100, NOW, NOW),
                replica(2, 0x22, 90, NOW - 500, NOW - 1000),
            ];
            let observers = vec![replica(3, 0x33, 80, NOW - 200, NOW - 3000)];
            (
                leader(1, 5, 100, voters.clone(), observers, voters),
                &[1, 2],
                &[1, 2],
            )
        }
        // Removal of voter 3 appended, not committed: committed {1,2,3}, current {1,2}. Voter 3 stopped
        // fetching and expired from Observers, so its committed entry carries the sentinels.
        "reconfiguring" => {
            let voters = vec![
                replica(1, 0x11, 125, NOW, NOW),
                replica(2, 0x22, 121, NOW - 100, NOW - 100),
            ];
            let observers = vec![replica(4, 0x44, 119, NOW - 50, NOW - 400)];
            let mut committed = voters.clone();
            committed.push(ReplicaState::sentinel(3, dir(0x33)));
            (
                leader(1, 5, 120, voters, observers, committed),
                &[1, 2],
                &[1, 2, 3],
            )
        }
        // Leader 2 just won epoch 6: HW unknown (−1), nothing known about the followers, no committed set.
        "hw_unknown" => {
            let voters = vec![
                replica(1, 0x11, -1, -1, -1),
                replica(2, 0x22, 130, NOW, NOW),
                replica(3, 0x33, -1, -1, -1),
            ];
            (
                leader(2, 6, -1, voters, Vec::new(), Vec::new()),
                &[1, 2, 3],
                &[],
            )
        }
        // A follower answers: Kafka sends 0 for leader id, epoch and HW, and empty lists.
        "not_leader" => {
            let partition = PartitionData {
                error_code: NOT_LEADER_OR_FOLLOWER,
                error_message: Some("For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.".into()),
                ..PartitionData::default()
            };
            (partition, &[], &[])
        }
        // The request asked for partition 1: echoed with UNKNOWN_TOPIC_OR_PARTITION.
        "unknown_partition" => {
            let partition = PartitionData {
                partition_index: 1,
                error_code: UNKNOWN_TOPIC_OR_PARTITION,
                error_message: Some("This server does not host this topic-partition.".into()),
                ..PartitionData::default()
            };
            (partition, &[], &[])
        }
        other => panic!("unknown case {other}"),
    };
    let mut partition = partition;
    if version >= 2 {
        let mut ids: BTreeSet<i32> = current_ids.iter().copied().collect();
        if version >= 3 {
            ids.extend(committed_ids);
        }
        out.nodes = ids
            .into_iter()
            .map(|id| node(id, 9092 + id as u16))
            .collect();
    } else {
        for s in partition
            .current_voters
            .iter_mut()
            .chain(&mut partition.observers)
            .chain(&mut partition.committed_voters)
        {
            s.replica_directory_id = Uuid::nil();
        }
    }
    out.topics.push(metadata(partition));
    out
}

fn json<T: serde::Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap();
    s.push('\n');
    s
}

/// One test, so that reading never races with regeneration: write or compare, then read everything back.
#[test]
fn vectors_match_the_codec_and_decode_to_their_json() {
    generate_or_compare();
    every_vector_on_disk_decodes_to_its_json();
}

fn generate_or_compare() {
    let mut files = VectorFiles::default();

    for version in 0..=MAX_VERSION {
        // Request.
        let header = RequestHeader {
            api_key: API_KEY,
            api_version: version,
            correlation_id: CORRELATION_ID,
            client_id: Some(CLIENT_ID.into()),
            ..RequestHeader::default()
        };
        let body = DescribeQuorumRequest::for_metadata_partition();
        let body_bytes = body.to_bytes(version).unwrap();
        let mut frame_bytes = BytesMut::new();
        frame::encode_request_frame(&header, &body, &mut frame_bytes).unwrap();
        let stem = format!("describe_quorum_request_v{version}");
        let vector = Vector {
            api_key: API_KEY,
            api_version: version,
            header_version: 2,
            header,
            body,
        };
        files.emit(&stem, &frame_bytes, &body_bytes, &json(&vector));

        // Responses.
        for case in CASES {
            let value = response(case, version);
            let body_bytes = value.to_bytes(version).unwrap();
            let mut frame_bytes = BytesMut::new();
            frame::encode_response_frame(
                &ResponseHeader::new(CORRELATION_ID),
                &value,
                version,
                &mut frame_bytes,
            )
            .unwrap();
            let decoded = project(value, version);
            let stem = format!("describe_quorum_response_v{version}_{case}");
            let vector = Vector {
                api_key: API_KEY,
                api_version: version,
                header_version: 1,
                header: ResponseHeader::new(CORRELATION_ID),
                body: decoded,
            };
            files.emit(&stem, &frame_bytes, &body_bytes, &json(&vector));
        }
    }

    // Everything on disk but the README and the FetchSnapshot vectors (`wire_vectors_fetch_snapshot.rs`)
    // is generated here.
    files.finish(|name| name != "README.md" && !name.starts_with("fetch_snapshot_"));
}

/// Reads every vector back from disk, independently of the cases above: the body and the frame decode to
/// the `.json`; bodies of v0–2 decode to the same with kafka-protocol.
fn every_vector_on_disk_decodes_to_its_json() {
    let mut checked = 0;
    for entry in std::fs::read_dir(vectors_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if !stem.starts_with("describe_quorum_") {
            continue;
        }
        let read = |ext: &str| {
            std::fs::read_to_string(vectors_dir().join(format!("{stem}.{ext}"))).unwrap()
        };
        let body = unhex(&read("body.hex"));
        let frame_bytes = unhex(&read("frame.hex"));
        let (payload, used) = frame::split_frame(&frame_bytes, DEFAULT_MAX_FRAME_SIZE)
            .unwrap()
            .unwrap();
        assert_eq!(used, frame_bytes.len(), "{stem}: one frame");
        assert!(
            frame_bytes.ends_with(&body),
            "{stem}: the frame ends with the body"
        );
        if stem.starts_with("describe_quorum_request_") {
            let v: Vector<RequestHeader, DescribeQuorumRequest> =
                serde_json::from_str(&read("json")).unwrap();
            assert_eq!(
                DescribeQuorumRequest::decode(&body, v.api_version).unwrap(),
                v.body,
                "{stem}"
            );
            assert_eq!(
                frame::decode_request_frame(payload).unwrap(),
                (v.header, v.body.clone()),
                "{stem}"
            );
            if v.api_version <= 2 {
                let theirs = kreq::DescribeQuorumRequest::decode(
                    &mut bytes::Bytes::from(body),
                    v.api_version,
                )
                .unwrap();
                assert_eq!(
                    DescribeQuorumRequest::from(&theirs),
                    v.body,
                    "{stem}: kafka-protocol"
                );
            }
        } else {
            let v: Vector<ResponseHeader, DescribeQuorumResponse> =
                serde_json::from_str(&read("json")).unwrap();
            assert_eq!(
                DescribeQuorumResponse::decode(&body, v.api_version).unwrap(),
                v.body,
                "{stem}"
            );
            assert_eq!(
                frame::decode_response_frame(payload, v.api_version).unwrap(),
                (v.header, v.body.clone()),
                "{stem}"
            );
            if v.api_version <= 2 {
                let theirs = kresp::DescribeQuorumResponse::decode(
                    &mut bytes::Bytes::from(body),
                    v.api_version,
                )
                .unwrap();
                assert_eq!(
                    DescribeQuorumResponse::from(&theirs),
                    v.body,
                    "{stem}: kafka-protocol"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        (1 + CASES.len()) * 4,
        "one vector per version for the request and each case"
    );
}

/// The v2 `leader` vector is the reference frame of `kafka-protocol` 0.18 (see the shared reference notes).
#[test]
fn leader_v2_frame_is_the_kafka_protocol_reference() {
    let reference = "000000fd0000000700".to_owned() + "00000102135f5f636c75737465725f6d6574616461746102000000000000010000000100000005000000000000006403000000011111111111111111111111111111111100000000000000640000018bcfe568000000018bcfe56800000000000222222222222222222222222222222222000000000000005a0000018bcfe5660c0000018bcfe564180002000000033333333333333333333333333333333300000000000000500000018bcfe567380000018bcfe55c480000000300000001020b434f4e54524f4c4c45520a6c6f63616c686f73742385000000000002020b434f4e54524f4c4c45520a6c6f63616c686f73742386000000";
    let mut frame_bytes = BytesMut::new();
    frame::encode_response_frame(
        &ResponseHeader::new(CORRELATION_ID),
        &response("leader", 2),
        2,
        &mut frame_bytes,
    )
    .unwrap();
    assert_eq!(hex(&frame_bytes).trim(), reference);

    let request_reference = "0000002c0037000200000007000570726f62650002135f5f636c75737465725f6d657461646174610200000000000000";
    let header = RequestHeader {
        api_key: API_KEY,
        api_version: 2,
        correlation_id: CORRELATION_ID,
        client_id: Some(CLIENT_ID.into()),
        ..RequestHeader::default()
    };
    let mut frame_bytes = BytesMut::new();
    frame::encode_request_frame(
        &header,
        &DescribeQuorumRequest::for_metadata_partition(),
        &mut frame_bytes,
    )
    .unwrap();
    assert_eq!(hex(&frame_bytes).trim(), request_reference);
}
