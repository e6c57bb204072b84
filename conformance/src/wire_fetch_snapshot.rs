//! FetchSnapshot (API key 59) read by `kafka-protocol`, the decoder the `kraft` node uses for it, as a
//! generic value in the schema's field names, so that the golden vectors compare it with the schema
//! interpreter field by field.

use crate::schema::build::{int, string, structs, strukt};
use crate::schema::{StructValue, Value};
use crate::wire::kp_round_trip;
use bytes::Bytes;
use kafka_protocol::messages::{FetchSnapshotRequest, FetchSnapshotResponse};

/// The API key of FetchSnapshot.
pub const API_KEY: i16 = 59;

/// A request's generic value.
pub fn request_value(r: &FetchSnapshotRequest) -> StructValue {
    let topics = r.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            let id = strukt(
                vec![
                    ("EndOffset", int(p.snapshot_id.end_offset)),
                    ("Epoch", int(p.snapshot_id.epoch)),
                ],
                &p.snapshot_id.unknown_tagged_fields,
            );
            strukt(
                vec![
                    ("Partition", int(p.partition)),
                    ("CurrentLeaderEpoch", int(p.current_leader_epoch)),
                    ("SnapshotId", Value::Struct(id)),
                    ("Position", int(p.position)),
                    ("ReplicaDirectoryId", Value::Uuid(p.replica_directory_id)),
                ],
                &p.unknown_tagged_fields,
            )
        });
        strukt(
            vec![
                ("Name", string(&t.name.0)),
                ("Partitions", structs(partitions)),
            ],
            &t.unknown_tagged_fields,
        )
    });
    strukt(
        vec![
            (
                "ClusterId",
                Value::String(r.cluster_id.as_ref().map(|c| c.to_string())),
            ),
            ("ReplicaId", int(r.replica_id.0)),
            ("MaxBytes", int(r.max_bytes)),
            ("Topics", structs(topics)),
        ],
        &r.unknown_tagged_fields,
    )
}

/// A response's generic value.
pub fn response_value(r: &FetchSnapshotResponse) -> StructValue {
    let topics = r.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            let id = strukt(
                vec![
                    ("EndOffset", int(p.snapshot_id.end_offset)),
                    ("Epoch", int(p.snapshot_id.epoch)),
                ],
                &p.snapshot_id.unknown_tagged_fields,
            );
            let leader = strukt(
                vec![
                    ("LeaderId", int(p.current_leader.leader_id.0)),
                    ("LeaderEpoch", int(p.current_leader.leader_epoch)),
                ],
                &p.current_leader.unknown_tagged_fields,
            );
            strukt(
                vec![
                    ("Index", int(p.index)),
                    ("ErrorCode", int(p.error_code)),
                    ("SnapshotId", Value::Struct(id)),
                    ("CurrentLeader", Value::Struct(leader)),
                    ("Size", int(p.size)),
                    ("Position", int(p.position)),
                    (
                        "UnalignedRecords",
                        Value::Bytes(Some(p.unaligned_records.to_vec())),
                    ),
                ],
                &p.unknown_tagged_fields,
            )
        });
        strukt(
            vec![
                ("Name", string(&t.name.0)),
                ("Partitions", structs(partitions)),
            ],
            &t.unknown_tagged_fields,
        )
    });
    let nodes = r.node_endpoints.iter().map(|n| {
        strukt(
            vec![
                ("NodeId", int(n.node_id.0)),
                ("Host", string(&n.host)),
                ("Port", int(n.port)),
            ],
            &n.unknown_tagged_fields,
        )
    });
    strukt(
        vec![
            ("ThrottleTimeMs", int(r.throttle_time_ms)),
            ("ErrorCode", int(r.error_code)),
            ("Topics", structs(topics)),
            ("NodeEndpoints", structs(nodes)),
        ],
        &r.unknown_tagged_fields,
    )
}

/// Decodes a FetchSnapshot body with kafka-protocol, requires that it re-encodes to the same bytes
/// (`wire::kp_round_trip`, which also refuses trailing bytes: they are not re-encoded), and returns its
/// generic value.
pub fn kp_value(body: &[u8], version: i16, request: bool) -> Result<StructValue, String> {
    let bytes = Bytes::copy_from_slice(body);
    let names = ("kafka-protocol", "kafka-protocol (encode)");
    if request {
        let r: FetchSnapshotRequest =
            kp_round_trip(&bytes, version, names).map_err(|e| e.to_string())?;
        Ok(request_value(&r))
    } else {
        let r: FetchSnapshotResponse =
            kp_round_trip(&bytes, version, names).map_err(|e| e.to_string())?;
        Ok(response_value(&r))
    }
}
