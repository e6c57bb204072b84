//! DescribeQuorum on the wire: one response, three decoders.
//!
//! For a response the implementation built at `version`, [`WireChecker::check`] encodes it with the
//! `kraft` codec and requires that
//! - the typed `kraft` decode, the schema interpreter's decode of `specs/messages` and (v0–2) the
//!   `kafka-protocol` decode all give the same generic value, and that value is what was encoded, as far
//!   as `version` carries it;
//! - the interpreter and (v0–2) `kafka-protocol` re-encode it to the same bytes;
//! - the per-version shape holds: v0 no timestamps, v0–1 no directory ids and no `Nodes`, v0–2 no
//!   `CommittedVoters`.
//!
//! The semantic checks against the model state live in `replay`.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable};
use kraft::wire::describe_quorum as dq;

use crate::schema::build::{self, array, int, TaggedFields};
use crate::schema::{MessageSchema, SchemaError, StructValue, Value};

/// The directory of the project's message schemas.
pub fn default_messages_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/messages")
}

/// The directory of the project's golden vectors.
pub fn default_vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/vectors")
}

/// Why a DescribeQuorum encoding failed a check.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WireFailure {
    #[error("kraft codec failed to encode v{version}: {reason}")]
    Encode { version: i16, reason: String },
    #[error("{decoder} failed to decode the v{version} bytes: {reason}")]
    Decode {
        decoder: &'static str,
        version: i16,
        reason: String,
    },
    #[error("{decoder} disagrees with {other} at v{version}: {fields}")]
    Disagree {
        decoder: &'static str,
        other: &'static str,
        version: i16,
        fields: String,
    },
    #[error("{encoder} re-encodes v{version} to different bytes ({got} vs {want} bytes)")]
    Reencode {
        encoder: &'static str,
        version: i16,
        got: usize,
        want: usize,
    },
    #[error("v{version} shape: {reason}")]
    Shape { version: i16, reason: String },
}

/// Generic value of a typed `kraft` response, in the schema's field names.
pub fn typed_to_value(r: &dq::DescribeQuorumResponse) -> StructValue {
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    strukt(
                        vec![
                            ("PartitionIndex", int(p.partition_index)),
                            ("ErrorCode", int(p.error_code)),
                            (
                                "ErrorMessage",
                                Value::String(p.error_message.as_deref().map(str::to_owned)),
                            ),
                            ("LeaderId", int(p.leader_id)),
                            ("LeaderEpoch", int(p.leader_epoch)),
                            ("HighWatermark", int(p.high_watermark)),
                            (
                                "CurrentVoters",
                                array(p.current_voters.iter().map(typed_replica)),
                            ),
                            (
                                "CommittedVoters",
                                array(p.committed_voters.iter().map(typed_replica)),
                            ),
                            ("Observers", array(p.observers.iter().map(typed_replica))),
                        ],
                        &p.unknown_tagged_fields,
                    )
                })
                .collect::<Vec<_>>();
            strukt(
                vec![
                    ("TopicName", Value::String(Some(t.topic_name.to_string()))),
                    ("Partitions", Value::Array(Some(partitions))),
                ],
                &t.unknown_tagged_fields,
            )
        })
        .collect::<Vec<_>>();
    let nodes = r
        .nodes
        .iter()
        .map(|n| {
            let listeners = n
                .listeners
                .iter()
                .map(|l| {
                    strukt(
                        vec![
                            ("Name", Value::String(Some(l.name.to_string()))),
                            ("Host", Value::String(Some(l.host.to_string()))),
                            ("Port", int(l.port)),
                        ],
                        &l.unknown_tagged_fields,
                    )
                })
                .collect::<Vec<_>>();
            strukt(
                vec![
                    ("NodeId", int(n.node_id)),
                    ("Listeners", Value::Array(Some(listeners))),
                ],
                &n.unknown_tagged_fields,
            )
        })
        .collect::<Vec<_>>();
    build::strukt(
        vec![
            ("ErrorCode", int(r.error_code)),
            (
                "ErrorMessage",
                Value::String(r.error_message.as_deref().map(str::to_owned)),
            ),
            ("Topics", Value::Array(Some(topics))),
            ("Nodes", Value::Array(Some(nodes))),
        ],
        &r.unknown_tagged_fields,
    )
}

fn typed_replica(s: &dq::ReplicaState) -> Value {
    strukt(
        vec![
            ("ReplicaId", int(s.replica_id)),
            ("ReplicaDirectoryId", Value::Uuid(s.replica_directory_id)),
            ("LogEndOffset", int(s.log_end_offset)),
            ("LastFetchTimestamp", int(s.last_fetch_timestamp)),
            ("LastCaughtUpTimestamp", int(s.last_caught_up_timestamp)),
        ],
        &s.unknown_tagged_fields,
    )
}

/// Generic value of a `kafka-protocol` response (v0–2: it has no `CommittedVoters`, which reads as the
/// schema default, an empty list), through `kraft`'s conversion from kafka-protocol's types.
pub fn kp_to_value(r: &kafka_protocol::messages::DescribeQuorumResponse) -> StructValue {
    typed_to_value(&dq::DescribeQuorumResponse::from(r))
}

/// A struct value (see [`build::strukt`]).
fn strukt(fields: Vec<(&str, Value)>, tags: &impl TaggedFields) -> Value {
    Value::Struct(build::strukt(fields, tags))
}

/// Differences between two values, as `path: left ≠ right`, comparing struct fields by name (a field
/// missing on one side compares as missing).
pub fn diff(a: &StructValue, b: &StructValue) -> Vec<String> {
    let mut out = Vec::new();
    diff_struct(a, b, "", &mut out);
    out
}

fn diff_struct(a: &StructValue, b: &StructValue, path: &str, out: &mut Vec<String>) {
    let mut names: Vec<&str> = a.fields.iter().map(|(n, _)| n.as_str()).collect();
    for (n, _) in &b.fields {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    for n in names {
        let p = if path.is_empty() {
            n.to_string()
        } else {
            format!("{path}.{n}")
        };
        match (a.get(n), b.get(n)) {
            (Some(x), Some(y)) => diff_value(x, y, &p, out),
            (x, y) => out.push(format!("{p}: {x:?} ≠ {y:?}")),
        }
    }
    if a.unknown_tagged != b.unknown_tagged {
        out.push(format!(
            "{path}.<unknown tags>: {:?} ≠ {:?}",
            a.unknown_tagged, b.unknown_tagged
        ));
    }
}

fn diff_value(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Struct(x), Value::Struct(y)) => diff_struct(x, y, path, out),
        (Value::Array(Some(x)), Value::Array(Some(y))) if x.len() == y.len() => {
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                diff_value(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: {} ≠ {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::Array(Some(items)) => format!("[{} items]", items.len()),
        other => format!("{other:?}"),
    }
}

/// The schemas the checker needs, loaded from `specs/messages`.
pub struct WireChecker {
    pub response: MessageSchema,
    pub request: Option<MessageSchema>,
    /// FetchSnapshot's request and response schemas, for its golden vectors.
    pub fetch_snapshot: Option<(MessageSchema, MessageSchema)>,
    /// Distinct encodings that went through every decoder.
    pub checked: u64,
    /// Encodings seen again (byte-identical to one already checked at the same version).
    pub reused: u64,
    cache: std::collections::HashMap<(i16, Bytes), StructValue>,
    /// Digests of (version, bytes, content key) that passed [`WireChecker::check_with`].
    passed: std::collections::HashSet<u64>,
}

/// Bound of the cache of checked encodings (it is cleared when full).
const CACHE_LIMIT: usize = 20_000;

impl WireChecker {
    /// Loads `DescribeQuorumResponse.json` (required), `DescribeQuorumRequest.json` and
    /// `FetchSnapshot{Request,Response}.json` (optional).
    pub fn load(dir: &Path) -> Result<WireChecker, SchemaError> {
        let response = MessageSchema::from_file(&dir.join("DescribeQuorumResponse.json"))?;
        let req_path = dir.join("DescribeQuorumRequest.json");
        let request = if req_path.exists() {
            Some(MessageSchema::from_file(&req_path)?)
        } else {
            None
        };
        let (fs_req, fs_resp) = (
            dir.join("FetchSnapshotRequest.json"),
            dir.join("FetchSnapshotResponse.json"),
        );
        let fetch_snapshot = if fs_req.exists() && fs_resp.exists() {
            Some((
                MessageSchema::from_file(&fs_req)?,
                MessageSchema::from_file(&fs_resp)?,
            ))
        } else {
            None
        };
        let mut checker = WireChecker::new(response, request);
        checker.fetch_snapshot = fetch_snapshot;
        Ok(checker)
    }

    pub fn new(response: MessageSchema, request: Option<MessageSchema>) -> WireChecker {
        WireChecker {
            response,
            request,
            fetch_snapshot: None,
            checked: 0,
            reused: 0,
            cache: Default::default(),
            passed: Default::default(),
        }
    }

    /// [`WireChecker::check_cached`], then `content` on the decoded value. A (version, bytes, `key`)
    /// that passed before passes again without decoding: `content` must be a function of the value and
    /// `key` alone. Remembered by a 64-bit digest, as the model checker remembers states.
    pub fn check_with<K: std::hash::Hash>(
        &mut self,
        r: &dq::DescribeQuorumResponse,
        version: i16,
        key: &K,
        content: impl FnOnce(&StructValue) -> Result<(), String>,
    ) -> Result<(), String> {
        use std::hash::{Hash, Hasher};
        let bytes = r.to_bytes(version).map_err(|e| {
            WireFailure::Encode {
                version,
                reason: e.to_string(),
            }
            .to_string()
        })?;
        let mut h = crate::fingerprint::hasher();
        (version, &bytes[..], key).hash(&mut h);
        let digest = h.finish();
        if self.passed.contains(&digest) {
            self.reused += 1;
            return Ok(());
        }
        if let Some(v) = self.cache.get(&(version, bytes.clone())) {
            content(v)?;
        } else {
            let v = self.check(r, version).map_err(|e| e.to_string())?;
            content(&v)?;
            if self.cache.len() >= CACHE_LIMIT {
                self.cache.clear();
            }
            self.cache.insert((version, bytes), v);
        }
        if self.passed.len() >= 8 * CACHE_LIMIT {
            self.passed.clear();
        }
        self.passed.insert(digest);
        Ok(())
    }

    /// [`WireChecker::check`], skipping the decoders for bytes already checked at this version (the
    /// same state seen again, as in the election prefix every trace shares).
    pub fn check_cached(
        &mut self,
        r: &dq::DescribeQuorumResponse,
        version: i16,
    ) -> Result<StructValue, WireFailure> {
        let bytes = r.to_bytes(version).map_err(|e| WireFailure::Encode {
            version,
            reason: e.to_string(),
        })?;
        if let Some(v) = self.cache.get(&(version, bytes.clone())) {
            self.reused += 1;
            return Ok(v.clone());
        }
        let v = self.check(r, version)?;
        if self.cache.len() >= CACHE_LIMIT {
            self.cache.clear();
        }
        self.cache.insert((version, bytes), v.clone());
        Ok(v)
    }

    /// Encodes `r` at `version` and checks it with every decoder. Returns the interpreter's value.
    pub fn check(
        &mut self,
        r: &dq::DescribeQuorumResponse,
        version: i16,
    ) -> Result<StructValue, WireFailure> {
        self.checked += 1;
        let bytes = r.to_bytes(version).map_err(|e| WireFailure::Encode {
            version,
            reason: e.to_string(),
        })?;
        let typed = dq::DescribeQuorumResponse::decode(&bytes, version).map_err(|e| {
            WireFailure::Decode {
                decoder: "kraft codec",
                version,
                reason: e.to_string(),
            }
        })?;
        let typed_value = typed_to_value(&typed);
        let value = self
            .response
            .decode(&bytes, version)
            .map_err(|e| WireFailure::Decode {
                decoder: "schema interpreter",
                version,
                reason: e.to_string(),
            })?;
        if value != typed_value {
            disagree(
                "schema interpreter",
                "kraft codec",
                version,
                diff(&value, &typed_value),
            )?;
        }
        // The interpreter encodes what the implementation built to the same bytes as the kraft codec
        // (so nothing was dropped or added on the way), and re-encodes its own decode identically.
        // When the two values are equal one encoding checks both.
        let built = typed_to_value(r);
        let encodings: &[(&str, &StructValue)] = if built == value {
            &[("the response as built", &value)]
        } else {
            &[
                ("the response as built", &built),
                ("its own decode", &value),
            ]
        };
        for &(what, v) in encodings {
            let again = self
                .response
                .encode(v, version)
                .map_err(|e| WireFailure::Decode {
                    decoder: "schema interpreter (encode)",
                    version,
                    reason: format!("{what}: {e}"),
                })?;
            if again[..] != bytes[..] {
                return Err(WireFailure::Reencode {
                    encoder: if what == "its own decode" {
                        "schema interpreter (decode → encode)"
                    } else {
                        "schema interpreter"
                    },
                    version,
                    got: again.len(),
                    want: bytes.len(),
                });
            }
        }
        if version <= 2 {
            let kpv: kafka_protocol::messages::DescribeQuorumResponse = kp_round_trip(
                &bytes,
                version,
                ("kafka-protocol", "kafka-protocol (encode)"),
            )?;
            let kp_value = kp_to_value(&kpv);
            if kp_value != value {
                disagree(
                    "kafka-protocol",
                    "schema interpreter",
                    version,
                    diff(&kp_value, &value),
                )?;
            }
        }
        check_shape(&value, version)?;
        Ok(value)
    }

    /// Checks a request body at `version` with the interpreter and kafka-protocol (v0–2).
    pub fn check_request(
        &mut self,
        r: &dq::DescribeQuorumRequest,
        version: i16,
    ) -> Result<(), WireFailure> {
        let bytes = r.to_bytes(version).map_err(|e| WireFailure::Encode {
            version,
            reason: e.to_string(),
        })?;
        if let Some(schema) = &self.request {
            let value = schema
                .decode(&bytes, version)
                .map_err(|e| WireFailure::Decode {
                    decoder: "schema interpreter (request)",
                    version,
                    reason: e.to_string(),
                })?;
            let again = schema
                .encode(&value, version)
                .map_err(|e| WireFailure::Decode {
                    decoder: "schema interpreter (request encode)",
                    version,
                    reason: e.to_string(),
                })?;
            if again[..] != bytes[..] {
                return Err(WireFailure::Reencode {
                    encoder: "schema interpreter (request)",
                    version,
                    got: again.len(),
                    want: bytes.len(),
                });
            }
        }
        if version <= 2 {
            kp_round_trip::<kafka_protocol::messages::DescribeQuorumRequest>(
                &bytes,
                version,
                (
                    "kafka-protocol (request)",
                    "kafka-protocol (request encode)",
                ),
            )?;
        }
        Ok(())
    }
}

/// Decodes `bytes` with kafka-protocol and requires that it re-encodes them exactly; `names` are the
/// decoder's and the encoder's names in failures.
pub(crate) fn kp_round_trip<T: Decodable + Encodable>(
    bytes: &Bytes,
    version: i16,
    names: (&'static str, &'static str),
) -> Result<T, WireFailure> {
    let value = T::decode(&mut bytes.clone(), version).map_err(|e| WireFailure::Decode {
        decoder: names.0,
        version,
        reason: e.to_string(),
    })?;
    let mut buf = BytesMut::new();
    value
        .encode(&mut buf, version)
        .map_err(|e| WireFailure::Decode {
            decoder: names.1,
            version,
            reason: e.to_string(),
        })?;
    if buf[..] != bytes[..] {
        return Err(WireFailure::Reencode {
            encoder: names.0,
            version,
            got: buf.len(),
            want: bytes.len(),
        });
    }
    Ok(value)
}

fn disagree(
    decoder: &'static str,
    other: &'static str,
    version: i16,
    fields: Vec<String>,
) -> Result<(), WireFailure> {
    if fields.is_empty() {
        Ok(())
    } else {
        Err(WireFailure::Disagree {
            decoder,
            other,
            version,
            fields: fields.join("; "),
        })
    }
}

/// The partitions of a decoded response.
pub fn partitions(v: &StructValue) -> Vec<&StructValue> {
    v.array("Topics")
        .unwrap_or(&[])
        .iter()
        .filter_map(|t| match t {
            Value::Struct(t) => t.array("Partitions"),
            _ => None,
        })
        .flatten()
        .filter_map(|p| match p {
            Value::Struct(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// Replica states of a list field of a partition.
pub fn replicas<'a>(p: &'a StructValue, field: &str) -> Vec<&'a StructValue> {
    p.array(field)
        .unwrap_or(&[])
        .iter()
        .filter_map(|r| match r {
            Value::Struct(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// What each version may carry: v0 no timestamps; v0–1 no directory ids, no `Nodes`;
/// v0–2 no `CommittedVoters`.
pub fn check_shape(v: &StructValue, version: i16) -> Result<(), WireFailure> {
    let shape = |reason: String| Err(WireFailure::Shape { version, reason });
    if version < 2 && v.array("Nodes").is_some_and(|n| !n.is_empty()) {
        return shape("Nodes present below v2".into());
    }
    for p in partitions(v) {
        if version < 3 && !replicas(p, "CommittedVoters").is_empty() {
            return shape("CommittedVoters present below v3".into());
        }
        for list in ["CurrentVoters", "Observers", "CommittedVoters"] {
            for r in replicas(p, list) {
                if version < 1
                    && (r.int("LastFetchTimestamp") != Some(-1)
                        || r.int("LastCaughtUpTimestamp") != Some(-1))
                {
                    return shape(format!("{list} carries timestamps at v0"));
                }
                if version < 2
                    && r.get("ReplicaDirectoryId") != Some(&Value::Uuid(uuid::Uuid::nil()))
                {
                    return shape(format!("{list} carries a directory id below v2"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn fixture_checker() -> WireChecker {
        WireChecker::new(
            MessageSchema::parse(crate::schema::tests::DQ_RESPONSE).unwrap(),
            None,
        )
    }

    fn sample() -> dq::DescribeQuorumResponse {
        let rs = |id: i32, leo: i64, ts: i64| dq::ReplicaState {
            replica_id: id,
            replica_directory_id: uuid::Uuid::from_u128(id as u128 * 0x1111),
            log_end_offset: leo,
            last_fetch_timestamp: ts,
            last_caught_up_timestamp: ts - 1,
            unknown_tagged_fields: Default::default(),
        };
        dq::DescribeQuorumResponse {
            topics: vec![dq::TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![dq::PartitionData {
                    leader_id: 1,
                    leader_epoch: 3,
                    high_watermark: 7,
                    current_voters: vec![rs(1, 9, 100), rs(2, 7, 90)],
                    observers: vec![rs(3, 2, 80)],
                    committed_voters: vec![
                        rs(1, 9, 100),
                        dq::ReplicaState::sentinel(4, uuid::Uuid::from_u128(4)),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            nodes: vec![dq::NodeEndpoints {
                node_id: 1,
                listeners: vec![dq::Listener {
                    name: "CONTROLLER".into(),
                    host: "h".into(),
                    port: 9093,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// What the implementation must do before writing an older version (Kafka's RaftUtil rule).
    fn downgrade(mut r: dq::DescribeQuorumResponse, version: i16) -> dq::DescribeQuorumResponse {
        for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            if version < 3 {
                p.committed_voters.clear();
            }
            if version < 2 {
                for s in p.current_voters.iter_mut().chain(p.observers.iter_mut()) {
                    s.replica_directory_id = uuid::Uuid::nil();
                }
            }
        }
        if version < 2 {
            r.nodes.clear();
        }
        r
    }

    #[test]
    fn every_version_passes_all_decoders() {
        let mut c = fixture_checker();
        for v in 0..=3 {
            let value = c.check(&downgrade(sample(), v), v).unwrap();
            let p = partitions(&value)[0];
            assert_eq!(
                replicas(p, "CommittedVoters").len(),
                if v == 3 { 2 } else { 0 }
            );
        }
        assert_eq!(c.checked, 4);
    }

    #[test]
    fn detects_a_field_lost_by_the_schema() {
        // A schema that forgot CommittedVoters reads v3 bytes short: the check must fail, not pass.
        let broken = crate::schema::tests::DQ_RESPONSE.replace(
            r#"{ "name": "CommittedVoters", "type": "[]ReplicaState", "versions": "3+", "nullableVersions": "3+", "ignorable": true }"#,
            r#"{ "name": "CommittedVoters", "type": "[]ReplicaState", "versions": "4+", "nullableVersions": "4+", "ignorable": true }"#,
        );
        let mut c = WireChecker::new(MessageSchema::parse(&broken).unwrap(), None);
        assert!(c.check(&sample(), 3).is_err());
    }

    #[test]
    fn shape_rules_catch_misplaced_fields() {
        let mut c = fixture_checker();
        let value = c.check(&sample(), 3).unwrap();
        assert!(
            check_shape(&value, 2).is_err(),
            "CommittedVoters at v2 must be refused"
        );
        assert!(check_shape(&value, 1).is_err());
    }
}
