//! Golden FetchSnapshot (API key 59) vectors in `specs/vectors/`, v0 and v1: generated from the cases
//! below with `UPDATE_VECTORS=1`, otherwise checked byte for byte. The messages go through the node's
//! own framing (`server::codec`), so each vector is what a `kraft` node puts on the wire; reading them
//! back, the body and the frame decode with kafka-protocol (the node's decoder) to the `.json`, and the
//! schema walker of `specs/messages` takes every byte of the body.

mod wire_support;

use std::path::Path;

use bytes::Bytes;
use kafka_protocol::messages::fetch_snapshot_request::{
    PartitionSnapshot as ReqPartition, SnapshotId as ReqSnapshotId, TopicSnapshot as ReqTopic,
};
use kafka_protocol::messages::fetch_snapshot_response::{
    LeaderIdAndEpoch, NodeEndpoint, PartitionSnapshot, SnapshotId, TopicSnapshot,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchSnapshotRequest, FetchSnapshotResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kraft::node::{errors, Message};
use kraft::server::codec::{self, Incoming, Reply};
use serde_json::{json, Value};
use uuid::Uuid;
use wire_support::vectors::{hex, unhex, vectors_dir, VectorFiles};

const CORRELATION_ID: i32 = 7;
const CLIENT_ID: &str = "probe";
const API_KEY: i16 = ApiKey::FetchSnapshot as i16;
const VERSIONS: [i16; 2] = [0, 1];
const CASES: [&str; 3] = ["chunk", "snapshot_not_found", "fenced_leader_epoch"];
/// A Kafka cluster id (22 characters of URL-safe base64, as `kafka-storage random-uuid` prints).
const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";
/// The snapshot of the fixture Kafka 4.4.0 wrote: end offset 20, epoch 1, 754 bytes.
const FIXTURE: &str = "kafka-4.4.0-00000000000000000020-0000000001.checkpoint";
/// Request header v2 with client id "probe": key, version, correlation id, client id, no tags.
const REQUEST_HEADER_LEN: usize = 2 + 2 + 4 + 2 + CLIENT_ID.len() + 1;
/// Response header v1: correlation id, no tags.
const RESPONSE_HEADER_LEN: usize = 4 + 1;

fn fixture() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/testdata")
            .join(FIXTURE),
    )
    .unwrap()
}

fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str("__cluster_metadata"))
}

/// What follower 4 (directory 0x44…) sends to leader 1 in epoch 5 for the second 64-byte chunk of
/// snapshot (20, 1): the request `Node::send_fetch_snapshot` builds (MaxBytes 8 MiB, Kafka's
/// `controller.quorum.fetch.snapshot.max.bytes` default).
fn request() -> FetchSnapshotRequest {
    FetchSnapshotRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str(CLUSTER_ID)))
        .with_replica_id(BrokerId(4))
        .with_max_bytes(8 * 1024 * 1024)
        .with_topics(vec![ReqTopic::default()
            .with_name(topic())
            .with_partitions(vec![ReqPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(5)
                .with_snapshot_id(ReqSnapshotId::default().with_end_offset(20).with_epoch(1))
                .with_position(64)
                .with_replica_directory_id(Uuid::from_bytes([0x44; 16]))])])
}

/// What leader 1 of epoch 5 answers, as `Node::fetch_snapshot_response` builds it and the shell fills
/// the chunk: CurrentLeader always, NodeEndpoints naming the leader (dropped below v1 by the codec).
fn response(case: &str) -> FetchSnapshotResponse {
    let base = PartitionSnapshot::default()
        .with_index(0)
        .with_current_leader(
            LeaderIdAndEpoch::default()
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(5),
        );
    let partition = match case {
        // Bytes 64..128 of the snapshot, size 754.
        "chunk" => base
            .with_snapshot_id(SnapshotId::default().with_end_offset(20).with_epoch(1))
            .with_size(fixture().len() as i64)
            .with_position(64)
            .with_unaligned_records(Bytes::from(fixture()[64..128].to_vec())),
        "snapshot_not_found" => base.with_error_code(errors::SNAPSHOT_NOT_FOUND),
        // The request named epoch 4: the leader of epoch 5 fences it.
        "fenced_leader_epoch" => base.with_error_code(errors::FENCED_LEADER_EPOCH),
        other => panic!("unknown case {other}"),
    };
    FetchSnapshotResponse::default()
        .with_topics(vec![TopicSnapshot::default()
            .with_name(topic())
            .with_partitions(vec![partition])])
        .with_node_endpoints(vec![NodeEndpoint::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("localhost"))
            .with_port(9093)])
}

fn tags_empty(tags: &std::collections::BTreeMap<i32, Bytes>) {
    assert!(tags.is_empty(), "no unknown tagged fields expected");
}

/// The decoded content in the schema's field names (snake_case), every field at every version (a field
/// the version does not carry at its default, as a decoder yields it); bytes as lowercase hex.
fn request_json(r: &FetchSnapshotRequest) -> Value {
    tags_empty(&r.unknown_tagged_fields);
    let topics: Vec<Value> = r
        .topics
        .iter()
        .map(|t| {
            tags_empty(&t.unknown_tagged_fields);
            let partitions: Vec<Value> = t
                .partitions
                .iter()
                .map(|p| {
                    tags_empty(&p.unknown_tagged_fields);
                    json!({
                        "partition": p.partition,
                        "current_leader_epoch": p.current_leader_epoch,
                        "snapshot_id": {
                            "end_offset": p.snapshot_id.end_offset,
                            "epoch": p.snapshot_id.epoch,
                        },
                        "position": p.position,
                        "replica_directory_id": p.replica_directory_id.hyphenated().to_string(),
                    })
                })
                .collect();
            json!({ "name": t.name.0.as_str(), "partitions": partitions })
        })
        .collect();
    json!({
        "cluster_id": r.cluster_id.as_ref().map(|c| c.as_str()),
        "replica_id": r.replica_id.0,
        "max_bytes": r.max_bytes,
        "topics": topics,
    })
}

fn response_json(r: &FetchSnapshotResponse) -> Value {
    tags_empty(&r.unknown_tagged_fields);
    let topics: Vec<Value> = r
        .topics
        .iter()
        .map(|t| {
            tags_empty(&t.unknown_tagged_fields);
            let partitions: Vec<Value> = t
                .partitions
                .iter()
                .map(|p| {
                    tags_empty(&p.unknown_tagged_fields);
                    json!({
                        "index": p.index,
                        "error_code": p.error_code,
                        "snapshot_id": {
                            "end_offset": p.snapshot_id.end_offset,
                            "epoch": p.snapshot_id.epoch,
                        },
                        "current_leader": {
                            "leader_id": p.current_leader.leader_id.0,
                            "leader_epoch": p.current_leader.leader_epoch,
                        },
                        "size": p.size,
                        "position": p.position,
                        "unaligned_records": hex(&p.unaligned_records).trim(),
                    })
                })
                .collect();
            json!({ "name": t.name.0.as_str(), "partitions": partitions })
        })
        .collect();
    let nodes: Vec<Value> = r
        .node_endpoints
        .iter()
        .map(|n| json!({ "node_id": n.node_id.0, "host": n.host.as_str(), "port": n.port }))
        .collect();
    json!({
        "throttle_time_ms": r.throttle_time_ms,
        "error_code": r.error_code,
        "topics": topics,
        "node_endpoints": nodes,
    })
}

fn vector(version: i16, header: Value, body: Value) -> String {
    let header_version = if header.get("api_key").is_some() {
        2
    } else {
        1
    };
    let mut s = serde_json::to_string_pretty(&json!({
        "api_key": API_KEY,
        "api_version": version,
        "header_version": header_version,
        "header": header,
        "body": body,
    }))
    .unwrap();
    s.push('\n');
    s
}

fn request_header(version: i16) -> Value {
    json!({ "api_key": API_KEY, "api_version": version, "correlation_id": CORRELATION_ID, "client_id": CLIENT_ID })
}

fn response_header() -> Value {
    json!({ "correlation_id": CORRELATION_ID })
}

fn reply(version: i16) -> Reply {
    Reply {
        correlation_id: CORRELATION_ID,
        api_key: API_KEY,
        api_version: version,
    }
}

/// The request frame and body as the node sends them at `version`.
fn request_bytes(version: i16) -> (Vec<u8>, Vec<u8>) {
    let message = Message::FetchSnapshotRequest(request());
    let frame = codec::peer_request_frame_at(&message, version, CORRELATION_ID, CLIENT_ID).unwrap();
    let body = frame[4 + REQUEST_HEADER_LEN..].to_vec();
    (frame.to_vec(), body)
}

/// The response frame and body as the node sends them at `version`.
fn response_bytes(case: &str, version: i16) -> (Vec<u8>, Vec<u8>) {
    let message = Message::FetchSnapshotResponse(response(case));
    let frame = codec::peer_response(&reply(version), &message).unwrap();
    let body = frame[4 + RESPONSE_HEADER_LEN..].to_vec();
    (frame.to_vec(), body)
}

/// One test, so that reading never races with regeneration.
#[test]
fn fetch_snapshot_vectors_match_the_codec_and_decode_to_their_json() {
    generate_or_compare();
    every_vector_on_disk_decodes_to_its_json();
}

fn generate_or_compare() {
    let mut files = VectorFiles::default();
    for version in VERSIONS {
        let (frame, body) = request_bytes(version);
        let decoded =
            FetchSnapshotRequest::decode(&mut Bytes::from(body.clone()), version).unwrap();
        files.emit(
            &format!("fetch_snapshot_request_v{version}"),
            &frame,
            &body,
            &vector(version, request_header(version), request_json(&decoded)),
        );
        for case in CASES {
            let (frame, body) = response_bytes(case, version);
            let decoded =
                FetchSnapshotResponse::decode(&mut Bytes::from(body.clone()), version).unwrap();
            files.emit(
                &format!("fetch_snapshot_response_v{version}_{case}"),
                &frame,
                &body,
                &vector(version, response_header(), response_json(&decoded)),
            );
        }
    }
    // No stale FetchSnapshot vector on disk.
    files.finish(|name| name.starts_with("fetch_snapshot_"));
}

/// Reads every FetchSnapshot vector back from disk, independently of the cases above.
fn every_vector_on_disk_decodes_to_its_json() {
    let mut checked = 0;
    for entry in std::fs::read_dir(vectors_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if !stem.starts_with("fetch_snapshot_") {
            continue;
        }
        let read = |ext: &str| {
            std::fs::read_to_string(vectors_dir().join(format!("{stem}.{ext}"))).unwrap()
        };
        let on_disk: Value = serde_json::from_str(&read("json")).unwrap();
        let version = on_disk["api_version"].as_i64().unwrap() as i16;
        let body = unhex(&read("body.hex"));
        let frame = unhex(&read("frame.hex"));
        assert_eq!(
            i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize,
            frame.len() - 4,
            "{stem}: one frame"
        );
        assert!(
            frame.ends_with(&body),
            "{stem}: the frame ends with the body"
        );
        let is_request = stem.starts_with("fetch_snapshot_request_");
        // The bounds walker of the embedded schemas takes exactly the body.
        let schema = kraft::wire::schema::schema_for(API_KEY, !is_request).unwrap();
        assert_eq!(
            kraft::wire::schema::walk(schema, version, &body, 0).unwrap(),
            body.len(),
            "{stem}: schema walk"
        );
        let payload = Bytes::from(frame[4..].to_vec());
        if is_request {
            let theirs = FetchSnapshotRequest::decode(&mut Bytes::from(body), version).unwrap();
            let (reply, incoming) = codec::decode_request(payload).unwrap();
            assert_eq!(reply, self::reply(version), "{stem}");
            let Incoming::Peer {
                from: 4,
                message: Message::FetchSnapshotRequest(ours),
            } = incoming
            else {
                panic!("{stem}: not a FetchSnapshot request from node 4: {incoming:?}");
            };
            assert_eq!(request_json(&theirs), on_disk["body"], "{stem}: body");
            assert_eq!(request_json(&ours), on_disk["body"], "{stem}: frame");
            assert_eq!(on_disk["header"], request_header(version), "{stem}: header");
        } else {
            let theirs = FetchSnapshotResponse::decode(&mut Bytes::from(body), version).unwrap();
            let (correlation_id, rest) = codec::response_body(payload, API_KEY, version).unwrap();
            assert_eq!(correlation_id, CORRELATION_ID, "{stem}");
            let Message::FetchSnapshotResponse(ours) =
                codec::decode_peer_response(rest, API_KEY, version).unwrap()
            else {
                panic!("{stem}: not a FetchSnapshot response");
            };
            assert_eq!(response_json(&theirs), on_disk["body"], "{stem}: body");
            assert_eq!(response_json(&ours), on_disk["body"], "{stem}: frame");
            assert_eq!(on_disk["header"], response_header(), "{stem}: header");
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        VERSIONS.len() * (1 + CASES.len()),
        "one vector per version for the request and each case"
    );
}

/// The tagged fields each version carries, read from the bytes: v0 drops the directory id and the
/// NodeEndpoints; both keep ClusterId (tag 0 of the request) and CurrentLeader (tag 0 of a partition).
#[test]
fn tagged_fields_per_version() {
    let v0 = FetchSnapshotRequest::decode(&mut Bytes::from(request_bytes(0).1), 0).unwrap();
    let v1 = FetchSnapshotRequest::decode(&mut Bytes::from(request_bytes(1).1), 1).unwrap();
    assert_eq!(v0.cluster_id.as_deref(), Some(CLUSTER_ID));
    assert_eq!(v1.cluster_id.as_deref(), Some(CLUSTER_ID));
    assert!(v0.topics[0].partitions[0].replica_directory_id.is_nil());
    assert_eq!(
        v1.topics[0].partitions[0].replica_directory_id,
        Uuid::from_bytes([0x44; 16])
    );
    for case in CASES {
        let r0 =
            FetchSnapshotResponse::decode(&mut Bytes::from(response_bytes(case, 0).1), 0).unwrap();
        let r1 =
            FetchSnapshotResponse::decode(&mut Bytes::from(response_bytes(case, 1).1), 1).unwrap();
        assert!(r0.node_endpoints.is_empty(), "{case}");
        assert_eq!(r1.node_endpoints.len(), 1, "{case}");
        for r in [&r0, &r1] {
            assert_eq!(
                r.topics[0].partitions[0].current_leader.leader_id.0, 1,
                "{case}"
            );
            assert_eq!(
                r.topics[0].partitions[0].current_leader.leader_epoch, 5,
                "{case}"
            );
        }
    }
}
