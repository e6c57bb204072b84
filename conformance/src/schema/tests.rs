use super::*;
use bytes::BytesMut;
use kafka_protocol::messages::describe_quorum_response as kp;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use proptest::prelude::*;

/// A DescribeQuorumResponse schema in Kafka's format, written for these unit tests (v3 per KIP-1204 as
/// this project decides it), so the interpreter is tested without depending on `specs/`.
pub(crate) const DQ_RESPONSE: &str = r#"
// A comment line, as in Kafka's files.
{
  "apiKey": 55, "type": "response", "name": "DescribeQuorumResponse",
  "validVersions": "0-3", "flexibleVersions": "0+",
  "fields": [
{ "name": "ErrorCode", "type": "int16", "versions": "0+" },
{ "name": "ErrorMessage", "type": "string", "versions": "2+", "nullableVersions": "2+", "ignorable": true },
{ "name": "Topics", "type": "[]TopicData", "versions": "0+", "fields": [
  { "name": "TopicName", "type": "string", "versions": "0+" },
  { "name": "Partitions", "type": "[]PartitionData", "versions": "0+", "fields": [
    { "name": "PartitionIndex", "type": "int32", "versions": "0+" },
    { "name": "ErrorCode", "type": "int16", "versions": "0+" },
    { "name": "ErrorMessage", "type": "string", "versions": "2+", "nullableVersions": "2+", "ignorable": true },
    { "name": "LeaderId", "type": "int32", "versions": "0+" },
    { "name": "LeaderEpoch", "type": "int32", "versions": "0+" },
    { "name": "HighWatermark", "type": "int64", "versions": "0+" },
    { "name": "CurrentVoters", "type": "[]ReplicaState", "versions": "0+" },
    { "name": "CommittedVoters", "type": "[]ReplicaState", "versions": "3+", "nullableVersions": "3+", "ignorable": true },
    { "name": "Observers", "type": "[]ReplicaState", "versions": "0+" }
  ]}
]},
{ "name": "Nodes", "type": "[]Node", "versions": "2+", "fields": [
  { "name": "NodeId", "type": "int32", "versions": "2+" },
  { "name": "Listeners", "type": "[]Listener", "versions": "2+", "fields": [
    { "name": "Name", "type": "string", "versions": "2+" },
    { "name": "Host", "type": "string", "versions": "2+" },
    { "name": "Port", "type": "uint16", "versions": "2+" }
  ]}
]}
  ],
  "commonStructs": [
{ "name": "ReplicaState", "versions": "0+", "fields": [
  { "name": "ReplicaId", "type": "int32", "versions": "0+" },
  { "name": "ReplicaDirectoryId", "type": "uuid", "versions": "2+" },
  { "name": "LogEndOffset", "type": "int64", "versions": "0+" },
  { "name": "LastFetchTimestamp", "type": "int64", "versions": "1+", "ignorable": true, "default": "-1" },
  { "name": "LastCaughtUpTimestamp", "type": "int64", "versions": "1+", "ignorable": true, "default": "-1" }
]}
  ]
}"#;

/// The golden kafka-protocol bytes of `kafka-protocol-facts.md`.
const V2: &str = "00000102135f5f636c75737465725f6d6574616461746102000000000000010000000100000005000000000000006403000000011111111111111111111111111111111100000000000000640000018bcfe568000000018bcfe56800000000000222222222222222222222222222222222000000000000005a0000018bcfe5660c0000018bcfe564180002000000033333333333333333333333333333333300000000000000500000018bcfe567380000018bcfe55c480000000300000001020b434f4e54524f4c4c45520a6c6f63616c686f73742385000000000002020b434f4e54524f4c4c45520a6c6f63616c686f73742386000000";
const V1: &str = "000002135f5f636c75737465725f6d657461646174610200000000000000000001000000050000000000000064030000000100000000000000640000018bcfe568000000018bcfe568000000000002000000000000005a0000018bcfe5660c0000018bcfe5641800020000000300000000000000500000018bcfe567380000018bcfe55c4800000000";
const V0: &str = "000002135f5f636c75737465725f6d657461646174610200000000000000000001000000050000000000000064030000000100000000000000640000000002000000000000005a000200000003000000000000005000000000";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn schema() -> MessageSchema {
    MessageSchema::parse(DQ_RESPONSE).unwrap()
}

#[test]
fn parses_versions() {
    assert_eq!(
        Versions::parse("0+").unwrap(),
        Versions {
            min: 0,
            max: i16::MAX
        }
    );
    assert_eq!(Versions::parse("1-3").unwrap(), Versions { min: 1, max: 3 });
    assert_eq!(Versions::parse("2").unwrap(), Versions { min: 2, max: 2 });
    assert!(!Versions::parse("none").unwrap().contains(0));
    assert!(Versions::parse("3-1").is_err());
    assert!(Versions::parse("x+").is_err());
}

#[test]
fn golden_bytes_decode_and_reencode_for_v0_to_v2() {
    let s = schema();
    for (v, h) in [(0, V0), (1, V1), (2, V2)] {
        let bytes = hex(h);
        let value = s.decode(&bytes, v).unwrap();
        assert_eq!(s.encode(&value, v).unwrap(), bytes, "v{v}");
        let topics = value.array("Topics").unwrap();
        let Value::Struct(t) = &topics[0] else {
            panic!("topic is not a struct")
        };
        assert_eq!(
            t.get("TopicName"),
            Some(&Value::String(Some("__cluster_metadata".into())))
        );
        let Value::Struct(p) = &t.array("Partitions").unwrap()[0] else {
            panic!("partition")
        };
        assert_eq!(p.int("LeaderId"), Some(1));
        assert_eq!(p.int("LeaderEpoch"), Some(5));
        assert_eq!(p.int("HighWatermark"), Some(100));
        assert_eq!(p.array("CurrentVoters").unwrap().len(), 2);
        let Value::Struct(r) = &p.array("Observers").unwrap()[0] else {
            panic!("observer")
        };
        let ts = if v == 0 { -1 } else { 0x18bcfe56738 };
        assert_eq!(r.int("LastFetchTimestamp"), Some(ts), "v{v}");
        let nodes = value.array("Nodes").unwrap().len();
        assert_eq!(nodes, if v == 2 { 2 } else { 0 });
        // ErrorMessage: Kafka's "" at v2, the default "" below it.
        assert_eq!(
            value.get("ErrorMessage"),
            Some(&Value::String(Some(String::new())))
        );
    }
}

#[test]
fn v2_value_is_refused_at_v1_but_ignorable_fields_drop() {
    let s = schema();
    let value = s.decode(&hex(V2), 2).unwrap();
    assert!(matches!(
        s.encode(&value, 1),
        Err(SchemaError::NotIgnorable { .. })
    ));
    let v1 = s.decode(&hex(V1), 1).unwrap();
    // v1 value (timestamps set) written at v0 drops the ignorable timestamps.
    assert_eq!(s.encode(&v1, 0).unwrap(), hex(V0));
}

#[test]
fn errors_are_typed() {
    let s = schema();
    let bytes = hex(V2);
    assert!(matches!(
        s.decode(&bytes, 4),
        Err(SchemaError::UnsupportedVersion { .. })
    ));
    for cut in [0, 1, 5, 40, bytes.len() - 1] {
        assert!(
            matches!(
                s.decode(&bytes[..cut], 2),
                Err(SchemaError::Truncated { .. })
            ),
            "cut {cut}"
        );
    }
    let mut long = bytes.clone();
    long.push(0);
    assert_eq!(s.decode(&long, 2), Err(SchemaError::Trailing { len: 1 }));
    assert!(matches!(
        MessageSchema::parse("{"),
        Err(SchemaError::Json(_))
    ));
    assert!(matches!(
        MessageSchema::parse(
            r#"{"name":"X","validVersions":"0","fields":[{"name":"A","type":"wat","versions":"0+"}]}"#
        ),
        Err(SchemaError::Malformed { .. })
    ));
    assert!(matches!(
        MessageSchema::parse(
            r#"{"name":"X","validVersions":"0","fields":[{"name":"A","type":"int8","versions":"0+","default":"300"}]}"#
        ),
        Err(SchemaError::Malformed { .. })
    ));
}

#[test]
fn tagged_fields_known_and_unknown() {
    let s = MessageSchema::parse(
        r#"{"name":"T","validVersions":"0-1","flexibleVersions":"1+","fields":[
            {"name":"A","type":"int32","versions":"0+"},
            {"name":"B","type":"string","versions":"1+","taggedVersions":"1+","tag":3,"nullableVersions":"1+","default":"null"}]}"#,
    )
    .unwrap();
    // A=7, tags: {3: "hi"}, {9: ca fe}.
    let bytes = [0, 0, 0, 7, 2, 3, 3, 3, b'h', b'i', 9, 2, 0xca, 0xfe];
    let v = s.decode(&bytes, 1).unwrap();
    assert_eq!(v.get("B"), Some(&Value::String(Some("hi".into()))));
    assert_eq!(v.unknown_tagged.get(&9), Some(&vec![0xca, 0xfe]));
    assert_eq!(s.encode(&v, 1).unwrap(), bytes);
    // Non-flexible v0: no tag section; B absent → its null default.
    let v0 = s.decode(&[0, 0, 0, 7], 0).unwrap();
    assert_eq!(v0.get("B"), Some(&Value::String(None)));
    // Tags out of order are refused.
    assert!(matches!(
        s.decode(&[0, 0, 0, 7, 2, 9, 0, 3, 0], 1),
        Err(SchemaError::Invalid { .. })
    ));
}

fn replica() -> impl Strategy<Value = kp::ReplicaState> {
    (
        any::<i32>(),
        any::<u128>(),
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
    )
        .prop_map(|(id, d, leo, f, c)| {
            kp::ReplicaState::default()
                .with_replica_id(id.into())
                .with_replica_directory_id(uuid::Uuid::from_u128(d))
                .with_log_end_offset(leo)
                .with_last_fetch_timestamp(f)
                .with_last_caught_up_timestamp(c)
        })
}

fn response() -> impl Strategy<Value = kafka_protocol::messages::DescribeQuorumResponse> {
    let listener = ("[a-z]{0,6}", "[a-z.]{0,9}", any::<u16>()).prop_map(|(n, h, p)| {
        kp::Listener::default()
            .with_name(StrBytes::from_string(n))
            .with_host(StrBytes::from_string(h))
            .with_port(p)
    });
    let node = (any::<i32>(), prop::collection::vec(listener, 0..3)).prop_map(|(id, ls)| {
        kp::Node::default()
            .with_node_id(id.into())
            .with_listeners(ls)
    });
    let partition = (
        any::<i32>(),
        any::<i16>(),
        proptest::option::of("[ -~]{0,8}"),
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        prop::collection::vec(replica(), 0..4),
        prop::collection::vec(replica(), 0..3),
    )
        .prop_map(|(i, e, m, l, ep, hw, cv, ob)| {
            kp::PartitionData::default()
                .with_partition_index(i)
                .with_error_code(e)
                .with_error_message(m.map(StrBytes::from_string))
                .with_leader_id(l.into())
                .with_leader_epoch(ep)
                .with_high_watermark(hw)
                .with_current_voters(cv)
                .with_observers(ob)
        });
    let topic = ("[a-z_]{0,20}", prop::collection::vec(partition, 0..3)).prop_map(|(n, ps)| {
        kp::TopicData::default()
            .with_topic_name(StrBytes::from_string(n).into())
            .with_partitions(ps)
    });
    (
        any::<i16>(),
        proptest::option::of("[ -~]{0,8}"),
        prop::collection::vec(topic, 0..3),
        prop::collection::vec(node, 0..3),
    )
        .prop_map(|(e, m, ts, ns)| {
            kafka_protocol::messages::DescribeQuorumResponse::default()
                .with_error_code(e)
                .with_error_message(m.map(StrBytes::from_string))
                .with_topics(ts)
                .with_nodes(ns)
        })
}

/// Clears what does not exist at `version` the way Kafka's RaftUtil does before writing.
fn for_version(
    mut r: kafka_protocol::messages::DescribeQuorumResponse,
    version: i16,
) -> kafka_protocol::messages::DescribeQuorumResponse {
    if version < 2 {
        r.nodes.clear();
        for t in &mut r.topics {
            for p in &mut t.partitions {
                for s in p.current_voters.iter_mut().chain(p.observers.iter_mut()) {
                    s.replica_directory_id = uuid::Uuid::nil();
                }
            }
        }
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// kafka-protocol bytes decode with the interpreter and re-encode to the same bytes, and
    /// kafka-protocol reads the interpreter's own encoding back to the same value.
    #[test]
    fn interpreter_matches_kafka_protocol(r in response(), version in 0i16..=2) {
        let s = schema();
        let r = for_version(r, version);
        let mut buf = BytesMut::new();
        r.encode(&mut buf, version).unwrap();
        let value = s.decode(&buf, version).unwrap();
        prop_assert_eq!(&s.encode(&value, version).unwrap()[..], &buf[..]);
        let back = kafka_protocol::messages::DescribeQuorumResponse::decode(&mut buf.clone().freeze(), version).unwrap();
        let mut again = BytesMut::new();
        back.encode(&mut again, version).unwrap();
        prop_assert_eq!(&again[..], &buf[..]);
        prop_assert_eq!(value.array("Topics").map(|t| t.len()), Some(r.topics.len()));
    }

    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), version in 0i16..=3) {
        let _ = schema().decode(&bytes, version);
    }
}
