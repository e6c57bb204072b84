//! The version 3 golden vectors read with a decoder written from the one upstream schema of KIP-1204,
//! apache/kafka#20712 (`DescribeQuorumResponse.json` at version 3): inside `PartitionData`,
//! `CommittedVoters` (`[]ReplicaState`, versions 3+, nullable 3+, ignorable) comes right after
//! `CurrentVoters` and before `Observers`. The decoder shares nothing with the `kraft` codec or the
//! project's schema file: it reads every frame field by field, must consume every byte, and its result
//! must equal the vector's `.json`. Versions 0–2 are Kafka's own and are checked by `wire_vectors`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/vectors")
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Flexible-version primitives of Kafka's protocol guide; any short read panics the test.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        s
    }
    fn int16(&mut self) -> i16 {
        i16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    fn uint16(&mut self) -> u16 {
        u16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    fn int32(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    fn int64(&mut self) -> i64 {
        i64::from_be_bytes(self.take(8).try_into().unwrap())
    }
    fn uuid(&mut self) -> String {
        uuid::Uuid::from_slice(self.take(16)).unwrap().to_string()
    }
    fn unsigned_varint(&mut self) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = self.take(1)[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
            assert!(shift < 35, "varint longer than 5 bytes");
        }
    }
    /// COMPACT_NULLABLE_STRING: length + 1, 0 for null.
    fn nullable_string(&mut self) -> Value {
        match self.unsigned_varint() {
            0 => Value::Null,
            n => json!(std::str::from_utf8(self.take(n as usize - 1)).unwrap()),
        }
    }
    fn string(&mut self) -> Value {
        let s = self.nullable_string();
        assert!(!s.is_null(), "null in a non-nullable string");
        s
    }
    /// COMPACT_ARRAY (count + 1, 0 for null); `None` for null.
    fn nullable_array(&mut self, mut item: impl FnMut(&mut Self) -> Value) -> Option<Value> {
        match self.unsigned_varint() {
            0 => None,
            n => Some(Value::Array((1..n).map(|_| item(self)).collect())),
        }
    }
    fn array(&mut self, item: impl FnMut(&mut Self) -> Value) -> Value {
        self.nullable_array(item)
            .expect("null in a non-nullable array")
    }
    /// A tagged-field section; none of these structs declares tags, so every one must be empty here.
    fn no_tags(&mut self) {
        assert_eq!(self.unsigned_varint(), 0, "unexpected tagged fields");
    }
}

/// `ReplicaState` at version 3: ReplicaId, ReplicaDirectoryId, LogEndOffset, LastFetchTimestamp,
/// LastCaughtUpTimestamp.
fn replica_state(c: &mut Cursor) -> Value {
    let v = json!({
        "replica_id": c.int32(),
        "replica_directory_id": c.uuid(),
        "log_end_offset": c.int64(),
        "last_fetch_timestamp": c.int64(),
        "last_caught_up_timestamp": c.int64(),
    });
    c.no_tags();
    v
}

/// The upstream `PartitionData` at version 3.
fn partition(c: &mut Cursor) -> Value {
    let partition_index = c.int32();
    let error_code = c.int16();
    let error_message = c.nullable_string();
    let leader_id = c.int32();
    let leader_epoch = c.int32();
    let high_watermark = c.int64();
    let current_voters = c.array(replica_state);
    // The field under test: between CurrentVoters and Observers. Null would mean "not known", which the
    // project writes as the empty list; the vectors must never hold null.
    let committed_voters = c
        .nullable_array(replica_state)
        .expect("this project never sends a null CommittedVoters");
    let observers = c.array(replica_state);
    c.no_tags();
    json!({
        "partition_index": partition_index, "error_code": error_code, "error_message": error_message,
        "leader_id": leader_id, "leader_epoch": leader_epoch, "high_watermark": high_watermark,
        "current_voters": current_voters, "observers": observers, "committed_voters": committed_voters,
    })
}

fn response_body(c: &mut Cursor) -> Value {
    let error_code = c.int16();
    let error_message = c.nullable_string();
    let topics = c.array(|c| {
        let t = json!({ "topic_name": c.string(), "partitions": c.array(partition) });
        c.no_tags();
        t
    });
    let nodes = c.array(|c| {
        let node_id = c.int32();
        let listeners = c.array(|c| {
            let l = json!({ "name": c.string(), "host": c.string(), "port": c.uint16() });
            c.no_tags();
            l
        });
        c.no_tags();
        json!({ "node_id": node_id, "listeners": listeners })
    });
    c.no_tags();
    json!({ "error_code": error_code, "error_message": error_message, "topics": topics, "nodes": nodes })
}

/// The request at version 3 (unchanged from version 2 upstream too): Topics[TopicName, Partitions[PartitionIndex]].
fn request_body(c: &mut Cursor) -> Value {
    let topics = c.array(|c| {
        let topic_name = c.string();
        let partitions = c.array(|c| {
            let p = json!({ "partition_index": c.int32() });
            c.no_tags();
            p
        });
        c.no_tags();
        json!({ "topic_name": topic_name, "partitions": partitions })
    });
    c.no_tags();
    json!({ "topics": topics })
}

/// Reads a whole frame (size, header, body); every byte must be consumed.
fn decode_frame(bytes: &[u8], request: bool) -> Value {
    let mut c = Cursor { bytes, at: 0 };
    let size = c.int32();
    assert_eq!(size as usize, bytes.len() - 4, "size prefix");
    let header = if request {
        // Request header v2: api key, api version, correlation id, client id (nullable non-compact), tags.
        let api_key = c.int16();
        let api_version = c.int16();
        let correlation_id = c.int32();
        let n = c.int16();
        let client_id = std::str::from_utf8(c.take(n as usize)).unwrap().to_owned();
        c.no_tags();
        json!({ "api_key": api_key, "api_version": api_version, "correlation_id": correlation_id,
                "client_id": client_id })
    } else {
        // Response header v1: correlation id, tags.
        let correlation_id = c.int32();
        c.no_tags();
        json!({ "correlation_id": correlation_id })
    };
    let body = if request {
        request_body(&mut c)
    } else {
        response_body(&mut c)
    };
    assert_eq!(c.at, bytes.len(), "bytes left over");
    json!({ "header": header, "body": body })
}

/// Drops the keys the vector JSON adds around the frame and any `unknown_tagged_fields` (none here).
fn frame_part(vector: &Value) -> Value {
    json!({ "header": vector["header"], "body": vector["body"] })
}

#[test]
fn v3_vectors_decode_with_the_upstream_layout() {
    let mut checked = 0;
    for entry in std::fs::read_dir(vectors_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let Some(stem) = name.strip_suffix(".frame.hex") else {
            continue;
        };
        let request = stem.starts_with("describe_quorum_request_v3");
        if !request && !stem.starts_with("describe_quorum_response_v3_") {
            continue;
        }
        let frame = unhex(&std::fs::read_to_string(&path).unwrap());
        let decoded = decode_frame(&frame, request);
        let json_path = path.with_file_name(format!("{stem}.json"));
        let vector: Value =
            serde_json::from_str(&std::fs::read_to_string(json_path).unwrap()).unwrap();
        assert_eq!(decoded, frame_part(&vector), "{stem}");
        // The body file is the frame minus size and header.
        let body = unhex(
            &std::fs::read_to_string(path.with_file_name(format!("{stem}.body.hex"))).unwrap(),
        );
        assert!(frame.ends_with(&body), "{stem}: body file");
        checked += 1;
    }
    // One request and five response cases.
    assert_eq!(checked, 6);
}

#[test]
fn the_upstream_decoder_sees_the_reconfiguration_where_upstream_puts_it() {
    let path = vectors_dir().join("describe_quorum_response_v3_reconfiguring.frame.hex");
    let decoded = decode_frame(&unhex(&std::fs::read_to_string(path).unwrap()), false);
    let p = &decoded["body"]["topics"][0]["partitions"][0];
    let ids = |list: &str| -> Vec<i64> {
        p[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["replica_id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids("current_voters"), [1, 2]);
    assert_eq!(ids("committed_voters"), [1, 2, 3]);
    assert_eq!(ids("observers"), [4]);
    // Voter 3's removal is uncommitted and the leader no longer tracks it: the KIP-1204 sentinels.
    let v3 = &p["committed_voters"][2];
    assert_eq!(v3["log_end_offset"], -1);
    assert_eq!(v3["last_fetch_timestamp"], -1);
    assert_eq!(v3["last_caught_up_timestamp"], -1);
}
