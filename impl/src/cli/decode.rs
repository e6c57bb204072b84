//! `kraft decode`: our decoders on bytes from elsewhere (a Kafka controller's log segment, a captured
//! DescribeQuorum response), printed as JSON, so other tools can compare them with their own reading. The
//! Apache Kafka interop suite (`conformance/kafka`) compares this output with Kafka's classes.

use serde_json::{json, Value};

use super::{DecodeArgs, DecodeKind, Failure, EXIT_PROTOCOL, EXIT_STORAGE};
use crate::log::{Batch, Record};
use crate::storage::format_directory_id;
use crate::wire::describe_quorum::{DescribeQuorumResponse, PartitionData, ReplicaState};

/// Largest input read: a segment of this suite's quorums is a few KiB.
const MAX_INPUT: u64 = 64 << 20;

pub fn decode(args: &DecodeArgs) -> Result<(), Failure> {
    let size = std::fs::metadata(&args.file)
        .map_err(|e| Failure::new(EXIT_STORAGE, format!("{}: {e}", args.file.display())))?
        .len();
    if size > MAX_INPUT {
        return Err(Failure::new(
            EXIT_STORAGE,
            format!(
                "{}: {size} bytes is more than {MAX_INPUT}",
                args.file.display()
            ),
        ));
    }
    let bytes = std::fs::read(&args.file)
        .map_err(|e| Failure::new(EXIT_STORAGE, format!("{}: {e}", args.file.display())))?;
    let value = match args.kind {
        DecodeKind::Records => {
            let batches = crate::records::decode_batches(bytes::Bytes::from(bytes))
                .map_err(|e| Failure::new(EXIT_PROTOCOL, e.to_string()))?;
            Value::Array(batches.iter().map(batch_json).collect())
        }
        DecodeKind::Snapshot => {
            let snapshot = crate::records::decode_snapshot(bytes::Bytes::from(bytes))
                .map_err(|e| Failure::new(EXIT_PROTOCOL, e.to_string()))?;
            Value::Array(snapshot.batches.iter().map(snapshot_batch_json).collect())
        }
        DecodeKind::DescribeQuorumResponse => {
            let version = args.version.ok_or_else(|| {
                Failure::new(super::EXIT_USAGE, "--version is required for a response")
            })?;
            let response = DescribeQuorumResponse::decode(&bytes, version)
                .map_err(|e| Failure::new(EXIT_PROTOCOL, e.to_string()))?;
            describe_quorum_json(&response, version)
        }
    };
    out!("{value}");
    Ok(())
}

/// A snapshot batch in `batch_json`'s shape; the header and footer as `SnapshotHeader` / `SnapshotFooter`.
pub fn snapshot_batch_json(batch: &crate::records::SnapshotBatch) -> Value {
    use crate::records::SnapshotRecord;
    let records: Vec<Value> = batch
        .records
        .iter()
        .map(|r| match r {
            SnapshotRecord::Header(ts) => {
                json!({"type": "SnapshotHeader", "lastContainedLogTimestamp": ts})
            }
            SnapshotRecord::Footer => json!({"type": "SnapshotFooter"}),
            SnapshotRecord::Control(record) => record_json(record),
            SnapshotRecord::Data(value) => json!({"type": "Data", "valueSize": value.len()}),
        })
        .collect();
    let control = batch
        .records
        .iter()
        .any(|r| !matches!(r, SnapshotRecord::Data(_)));
    json!({
        "baseOffset": batch.base_offset,
        "lastOffset": batch.base_offset + batch.records.len() as i64 - 1,
        "partitionLeaderEpoch": batch.epoch,
        "control": control,
        "records": records,
    })
}

/// One batch as `{baseOffset, lastOffset, partitionLeaderEpoch, control, records}`.
pub fn batch_json(batch: &Batch) -> Value {
    let records: Vec<Value> = batch.records.iter().map(record_json).collect();
    let control = batch.records.iter().any(|r| !matches!(r, Record::Data(_)));
    json!({
        "baseOffset": batch.base_offset,
        "lastOffset": batch.next_offset() - 1,
        "partitionLeaderEpoch": batch.epoch,
        "control": control,
        "records": records,
    })
}

fn record_json(r: &Record) -> Value {
    match r {
        Record::Data(value) => json!({"type": "Data", "valueSize": value.len()}),
        Record::LeaderChange {
            leader_id,
            voters,
            granting_voters,
        } => json!({
            "type": "LeaderChange",
            "leaderId": leader_id,
            "voters": voters,
            "grantingVoters": granting_voters,
        }),
        Record::KRaftVersion(v) => json!({"type": "KRaftVersion", "kraftVersion": v}),
        Record::Voters(set) => json!({
            "type": "Voters",
            "voters": set.nodes().map(|n| json!({
                "id": n.key.id,
                "directoryId": format_directory_id(n.key.directory_or_nil()),
                "endpoints": n.listeners.iter()
                    .map(|e| format!("{}://{}:{}", e.name, e.host, e.port))
                    .collect::<Vec<_>>(),
                "kraftVersion": [n.supported.min, n.supported.max],
            })).collect::<Vec<_>>(),
        }),
    }
}

/// A DescribeQuorum response in the shape of Kafka's generated `DescribeQuorumResponseDataJsonConverter`
/// at `version`: the fields of that version only, camelCase names, directory ids in Kafka's base64 form.
pub fn describe_quorum_json(r: &DescribeQuorumResponse, version: i16) -> Value {
    let replica = |s: &ReplicaState| {
        let mut o = serde_json::Map::new();
        o.insert("replicaId".into(), json!(s.replica_id));
        if version >= 2 {
            o.insert(
                "replicaDirectoryId".into(),
                json!(format_directory_id(s.replica_directory_id)),
            );
        }
        o.insert("logEndOffset".into(), json!(s.log_end_offset));
        if version >= 1 {
            o.insert("lastFetchTimestamp".into(), json!(s.last_fetch_timestamp));
            o.insert(
                "lastCaughtUpTimestamp".into(),
                json!(s.last_caught_up_timestamp),
            );
        }
        Value::Object(o)
    };
    let partition = |p: &PartitionData| {
        let mut o = serde_json::Map::new();
        o.insert("partitionIndex".into(), json!(p.partition_index));
        o.insert("errorCode".into(), json!(p.error_code));
        if version >= 2 {
            o.insert("errorMessage".into(), json!(p.error_message.as_deref()));
        }
        o.insert("leaderId".into(), json!(p.leader_id));
        o.insert("leaderEpoch".into(), json!(p.leader_epoch));
        o.insert("highWatermark".into(), json!(p.high_watermark));
        o.insert(
            "currentVoters".into(),
            p.current_voters.iter().map(replica).collect(),
        );
        if version >= 3 {
            o.insert(
                "committedVoters".into(),
                p.committed_voters.iter().map(replica).collect(),
            );
        }
        o.insert(
            "observers".into(),
            p.observers.iter().map(replica).collect(),
        );
        Value::Object(o)
    };
    let mut o = serde_json::Map::new();
    o.insert("errorCode".into(), json!(r.error_code));
    if version >= 2 {
        o.insert("errorMessage".into(), json!(r.error_message.as_deref()));
    }
    o.insert(
        "topics".into(),
        r.topics
            .iter()
            .map(|t| {
                json!({
                    "topicName": t.topic_name.as_str(),
                    "partitions": t.partitions.iter().map(partition).collect::<Vec<_>>(),
                })
            })
            .collect(),
    );
    if version >= 2 {
        o.insert(
            "nodes".into(),
            r.nodes
                .iter()
                .map(|n| {
                    json!({
                        "nodeId": n.node_id,
                        "listeners": n.listeners.iter().map(|l| json!({
                            "name": l.name.as_str(), "host": l.host.as_str(), "port": l.port,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        );
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voter_set::{ReplicaKey, SupportedVersions, VoterNode, VoterSet};

    #[test]
    fn batch_json_names_control_records_like_the_interop_suite() {
        let batch = Batch {
            base_offset: 7,
            epoch: 2,
            append_time: 0,
            records: vec![
                Record::LeaderChange {
                    leader_id: 1,
                    voters: vec![1, 2, 3],
                    granting_voters: vec![1, 2],
                },
                Record::KRaftVersion(1),
                Record::Voters(
                    VoterSet::new([1, 2].map(|id| VoterNode {
                        key: ReplicaKey::new(id, uuid::Uuid::from_u128(0x1000 + id as u128)),
                        listeners: vec![crate::voter_set::Endpoint {
                            name: "CONTROLLER".into(),
                            host: "localhost".into(),
                            port: 9000 + id as u16,
                        }],
                        supported: SupportedVersions::CURRENT,
                    }))
                    .unwrap(),
                ),
            ],
        };
        let j = batch_json(&batch);
        assert_eq!(j["lastOffset"], 9);
        assert_eq!(j["control"], true);
        assert_eq!(j["records"][0]["grantingVoters"], json!([1, 2]));
        assert_eq!(j["records"][1]["kraftVersion"], 1);
        assert_eq!(j["records"][2]["voters"][1]["id"], 2);
        assert_eq!(j["records"][2]["voters"][0]["kraftVersion"], json!([0, 1]));
        let data = Batch {
            base_offset: 0,
            epoch: 1,
            append_time: 0,
            records: vec![Record::Data(bytes::Bytes::from_static(b"abc"))],
        };
        assert_eq!(batch_json(&data)["records"][0]["valueSize"], 3);
        assert_eq!(batch_json(&data)["control"], false);
    }
}
