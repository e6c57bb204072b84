//! `kraft describe` output: pure functions from a DescribeQuorum response to text, matching
//! `kafka-metadata-quorum describe --status | --replication`, plus `CommittedVoters:` and the in-flight
//! reconfiguration.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::storage::format_directory_id;
use crate::voter_set::VoterSet;
use crate::wire::describe_quorum::{
    DescribeQuorumResponse, Listener, NodeEndpoints, PartitionData, ReplicaState,
};

/// Labels are left-justified and padded to 24 characters, as Kafka's tool does.
const LABEL_WIDTH: usize = 24;

/// What one DescribeQuorum answer says, with the cluster id from Metadata.
#[derive(Clone, Debug)]
pub struct QuorumDescription {
    pub cluster_id: String,
    /// Version of the DescribeQuorum answer; below 3 there is no committed voter set.
    pub api_version: i16,
    pub partition: PartitionData,
    pub nodes: Vec<NodeEndpoints>,
    /// Set when `CommittedVoters` was computed by this tool from the log (the leader answered below v3).
    pub computed: Option<Computed>,
}

/// How a computed `CommittedVoters` was obtained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Computed {
    /// The voter set at HighWatermark − 1 in the log an observer fetched (replica id −1).
    FromLog,
    /// Not computed, and why (printed in place of the list's origin).
    Unavailable(String),
    /// Not computed because the principal may not fetch the metadata log (the ACL it lacks is named).
    Denied(String),
}

impl QuorumDescription {
    pub fn new(
        cluster_id: String,
        api_version: i16,
        response: DescribeQuorumResponse,
    ) -> Option<Self> {
        let partition = response
            .topics
            .into_iter()
            .next()?
            .partitions
            .into_iter()
            .next()?;
        Some(QuorumDescription {
            cluster_id,
            api_version,
            partition,
            nodes: response.nodes,
            computed: None,
        })
    }

    /// Whether `CommittedVoters` holds the committed voter set: served (v3) or computed from the log.
    pub fn has_committed(&self) -> bool {
        self.api_version >= 3 || self.computed == Some(Computed::FromLog)
    }

    /// Fills `CommittedVoters` with `committed` (the committed voter set at HighWatermark − 1, computed
    /// from the log; `None`: the HW is unknown) as KIP-1204 has the leader fill it: a committed voter
    /// gets its `CurrentVoters` state, else its `Observers` state, else the sentinels; `Nodes` gains the
    /// endpoints of committed voters that are no longer current.
    pub fn set_computed_committed(&mut self, committed: Option<&VoterSet>) {
        let p = &mut self.partition;
        // Below v2 a ReplicaState has no directory id: match by id alone.
        let with_directories = self.api_version >= 2;
        let matches = |r: &ReplicaState, key: &crate::voter_set::ReplicaKey| {
            r.replica_id == key.id
                && (!with_directories || r.replica_directory_id == key.directory_or_nil())
        };
        p.committed_voters = committed
            .into_iter()
            .flat_map(|s| s.nodes())
            .map(|n| {
                p.current_voters
                    .iter()
                    .chain(p.observers.iter())
                    .find(|r| matches(r, &n.key))
                    .cloned()
                    .unwrap_or_else(|| ReplicaState::sentinel(n.key.id, n.key.directory_or_nil()))
            })
            .collect();
        for n in committed.into_iter().flat_map(|s| s.nodes()) {
            if self.api_version >= 2 && !self.nodes.iter().any(|e| e.node_id == n.key.id) {
                self.nodes.push(NodeEndpoints {
                    node_id: n.key.id,
                    listeners: n
                        .listeners
                        .iter()
                        .map(|l| Listener {
                            name: l.name.clone().into(),
                            host: l.host.clone().into(),
                            port: l.port,
                            unknown_tagged_fields: Default::default(),
                        })
                        .collect(),
                    unknown_tagged_fields: Default::default(),
                });
            }
        }
        self.computed = Some(Computed::FromLog);
    }

    /// The `CommittedVotersSource:` value when this tool computed (or could not compute) the list.
    fn committed_source(&self) -> Option<String> {
        match &self.computed {
            None => None,
            Some(Computed::FromLog) => Some(format!(
                "computed by kraft from the metadata log at HighWatermark {} (fetched as an observer with \
                 replica id -1); the leader answered DescribeQuorum v{}, which has no CommittedVoters",
                self.partition.high_watermark, self.api_version
            )),
            Some(Computed::Unavailable(why) | Computed::Denied(why)) => {
                Some(format!("not computed: {why}"))
            }
        }
    }

    /// One line for `add-voter` / `remove-voter`: leader, epoch, HW, CurrentVoters and CommittedVoters as
    /// `describe --status` has them (served, or computed from the log and marked so); where the committed
    /// set is unknown the line says why instead of listing one.
    pub fn summary(&self) -> String {
        let ids = |v: &[ReplicaState]| {
            v.iter()
                .map(|r| r.replica_id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let p = &self.partition;
        let committed = match &self.computed {
            // KIP-1204: no committed voter set while the HW is unknown (served or computed, it is empty).
            _ if p.high_watermark < 0 => {
                "CommittedVotersSource: not computed: the HighWatermark is not known yet".to_string()
            }
            _ if self.api_version >= 3 => format!("CommittedVoters [{}]", ids(&p.committed_voters)),
            Some(Computed::FromLog) => format!(
                "CommittedVoters [{}] (computed from the metadata log at HighWatermark {})",
                ids(&p.committed_voters),
                p.high_watermark
            ),
            Some(Computed::Unavailable(why) | Computed::Denied(why)) => {
                format!("CommittedVotersSource: not computed: {why}")
            }
            None => format!(
                "CommittedVotersSource: not computed: the leader answered DescribeQuorum v{}, which has \
                 no CommittedVoters",
                self.api_version
            ),
        };
        format!(
            "leader {} epoch {} HW {}, CurrentVoters [{}], {committed}",
            p.leader_id,
            p.leader_epoch,
            p.high_watermark,
            ids(&p.current_voters),
        )
    }

    fn endpoints(&self, id: i32) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.node_id == id)
            .flat_map(|n| n.listeners.iter())
            .map(|l| {
                let host = if l.host.contains(':') {
                    format!("[{}]", l.host)
                } else {
                    l.host.to_string()
                };
                format!("{}://{}:{}", l.name, host, l.port)
            })
            .collect()
    }

    /// The leader's replica state: among the voters, or among the observers while it has removed itself.
    fn leader(&self) -> Option<&ReplicaState> {
        let p = &self.partition;
        p.current_voters
            .iter()
            .chain(p.observers.iter())
            .find(|r| r.replica_id == p.leader_id)
    }

    /// Kafka's `MaxFollowerLag`: leader LEO − the smallest voter LEO; −1 without a leader state.
    pub fn max_follower_lag(&self) -> i64 {
        let (Some(leader), Some(laggard)) = (self.leader(), self.laggard()) else {
            return -1;
        };
        leader.log_end_offset - laggard.log_end_offset
    }

    /// Kafka's `MaxFollowerLagTimeMs`: 0 when the laggard is the leader, else the difference of the
    /// caught-up timestamps when both are known, else −1.
    pub fn max_follower_lag_time_ms(&self) -> i64 {
        let (Some(leader), Some(laggard)) = (self.leader(), self.laggard()) else {
            return -1;
        };
        if leader.replica_id == laggard.replica_id {
            0
        } else if leader.last_caught_up_timestamp >= 0 && laggard.last_caught_up_timestamp >= 0 {
            leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
        } else {
            -1
        }
    }

    /// The voter with the smallest LEO (first in list order on ties, as `Stream.min`).
    fn laggard(&self) -> Option<&ReplicaState> {
        let mut min: Option<&ReplicaState> = None;
        for r in &self.partition.current_voters {
            if min.is_none_or(|m| r.log_end_offset < m.log_end_offset) {
                min = Some(r);
            }
        }
        min
    }

    /// Voters being added (in current, not committed) and removed (committed, not current); both empty
    /// when no change is in flight or the committed set is unknown.
    pub fn reconfiguration(&self) -> (Vec<&ReplicaState>, Vec<&ReplicaState>) {
        let p = &self.partition;
        if !self.has_committed() || p.committed_voters.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let key = |r: &ReplicaState| (r.replica_id, r.replica_directory_id);
        let committed: Vec<_> = p.committed_voters.iter().map(key).collect();
        let current: Vec<_> = p.current_voters.iter().map(key).collect();
        let adding = p
            .current_voters
            .iter()
            .filter(|r| !committed.contains(&key(r)))
            .collect();
        let removing = p
            .committed_voters
            .iter()
            .filter(|r| !current.contains(&key(r)))
            .collect();
        (adding, removing)
    }

    /// One replica as Kafka 4.4's `kafka-metadata-quorum` prints it: no `directoryId` key for the zero
    /// id (a static voter before the kraft.version upgrade, an old client).
    fn item(&self, r: &ReplicaState) -> String {
        let mut fields = vec![format!("\"id\": {}", r.replica_id)];
        if !r.replica_directory_id.is_nil() {
            fields.push(format!(
                "\"directoryId\": \"{}\"",
                format_directory_id(r.replica_directory_id)
            ));
        }
        let endpoints = self.endpoints(r.replica_id);
        if !endpoints.is_empty() {
            let list: Vec<String> = endpoints.iter().map(|e| format!("\"{e}\"")).collect();
            fields.push(format!("\"endpoints\": [{}]", list.join(", ")));
        }
        format!("{{{}}}", fields.join(", "))
    }

    fn list(&self, replicas: &[ReplicaState]) -> String {
        format!(
            "[{}]",
            replicas
                .iter()
                .map(|r| self.item(r))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// `describe --status`: Kafka's eight lines with `CommittedVoters:` after `CurrentVoters:` and, while a
    /// change is in flight, a `Reconfiguration:` line after it.
    pub fn status_text(&self) -> String {
        let p = &self.partition;
        let mut lines = vec![
            line("ClusterId:", &self.cluster_id),
            line("LeaderId:", &p.leader_id.to_string()),
            line("LeaderEpoch:", &p.leader_epoch.to_string()),
            line("HighWatermark:", &p.high_watermark.to_string()),
            line("MaxFollowerLag:", &self.max_follower_lag().to_string()),
            line(
                "MaxFollowerLagTimeMs:",
                &self.max_follower_lag_time_ms().to_string(),
            ),
            line("CurrentVoters:", &self.list(&p.current_voters)),
            line(
                "CommittedVoters:",
                &self.list(if self.has_committed() {
                    &p.committed_voters
                } else {
                    &[]
                }),
            ),
        ];
        if let Some(source) = self.committed_source() {
            lines.push(line("CommittedVotersSource:", &source));
        }
        let (adding, removing) = self.reconfiguration();
        if !adding.is_empty() || !removing.is_empty() {
            let mut parts = Vec::new();
            parts.extend(adding.iter().map(|r| format!("adding {}", self.item(r))));
            parts.extend(
                removing
                    .iter()
                    .map(|r| format!("removing {}", self.item(r))),
            );
            lines.push(line("Reconfiguration:", &parts.join(", ")));
        }
        lines.push(line("CurrentObservers:", &self.list(&p.observers)));
        lines.join("\n") + "\n"
    }

    /// `describe --replication`: Kafka's table (every cell padded to its column and followed by a TAB).
    pub fn replication_text(&self) -> String {
        self.replication_table(|ts, _| Ok(ts.to_string()))
            .unwrap_or_default()
    }

    /// `describe --replication --human-readable`: timestamps as `N ms ago` relative to `now_ms` (wall
    /// clock, ms since the epoch), and Kafka's error for a timestamp that is not in (epoch, now].
    pub fn replication_text_human(&self, now_ms: i64) -> Result<String, String> {
        self.replication_table(|ts, what| relative_time(ts, what, now_ms))
    }

    fn replication_table(
        &self,
        timestamp: impl Fn(i64, &str) -> Result<String, String>,
    ) -> Result<String, String> {
        let p = &self.partition;
        let leader_leo = self.leader().map(|l| l.log_end_offset);
        let row = |r: &ReplicaState, status: &str| -> Result<Vec<String>, String> {
            // Kafka's QuorumInfo turns −1 into an absent timestamp, printed as "-1" in both modes.
            let ts = |t: i64, what: &str| {
                if t < 0 {
                    Ok("-1".to_string())
                } else {
                    timestamp(t, what)
                }
            };
            Ok(vec![
                r.replica_id.to_string(),
                format_directory_id(r.replica_directory_id),
                r.log_end_offset.to_string(),
                leader_leo
                    .map_or(-1, |leo| leo - r.log_end_offset)
                    .to_string(),
                ts(r.last_fetch_timestamp, "last fetch")?,
                ts(r.last_caught_up_timestamp, "last caught up")?,
                status.to_string(),
            ])
        };
        let mut rows = Vec::new();
        if let Some(leader) = self.leader() {
            rows.push(row(leader, "Leader")?);
        }
        let is_leader = |r: &ReplicaState| r.replica_id == p.leader_id;
        for r in p.current_voters.iter().filter(|r| !is_leader(r)) {
            rows.push(row(r, "Follower")?);
        }
        for r in p.observers.iter().filter(|r| !is_leader(r)) {
            rows.push(row(r, "Observer")?);
        }
        let header: Vec<String> = [
            "NodeId",
            "DirectoryId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Ok(pretty_table(&header, &rows))
    }

    /// The same content as JSON (one object, for scripts and tests).
    pub fn to_json(&self) -> Value {
        let p = &self.partition;
        let replica = |r: &ReplicaState| {
            json!({
                "id": r.replica_id,
                "directoryId": (!r.replica_directory_id.is_nil()).then(|| format_directory_id(r.replica_directory_id)),
                "logEndOffset": r.log_end_offset,
                "lastFetchTimestamp": r.last_fetch_timestamp,
                "lastCaughtUpTimestamp": r.last_caught_up_timestamp,
                "endpoints": self.endpoints(r.replica_id),
            })
        };
        let (adding, removing) = self.reconfiguration();
        let reconfiguration = if adding.is_empty() && removing.is_empty() {
            Value::Null
        } else {
            json!({
                "adding": adding.iter().map(|r| replica(r)).collect::<Vec<_>>(),
                "removing": removing.iter().map(|r| replica(r)).collect::<Vec<_>>(),
            })
        };
        let committed: Vec<Value> = if self.has_committed() {
            p.committed_voters.iter().map(replica).collect()
        } else {
            Vec::new()
        };
        json!({
            "clusterId": self.cluster_id,
            "apiVersion": self.api_version,
            "leaderId": p.leader_id,
            "leaderEpoch": p.leader_epoch,
            "highWatermark": p.high_watermark,
            "maxFollowerLag": self.max_follower_lag(),
            "maxFollowerLagTimeMs": self.max_follower_lag_time_ms(),
            "currentVoters": p.current_voters.iter().map(replica).collect::<Vec<_>>(),
            "committedVoters": committed,
            // "served" (DescribeQuorum v3), "computed" (from the log by this tool) or null (neither).
            "committedVotersSource": match (&self.computed, self.api_version >= 3) {
                (Some(Computed::FromLog), _) => json!("computed"),
                (_, true) => json!("served"),
                _ => Value::Null,
            },
            "committedVotersNote": self.committed_source(),
            "currentObservers": p.observers.iter().map(replica).collect::<Vec<_>>(),
            "reconfiguration": reconfiguration,
        })
    }
}

/// Kafka's `MetadataQuorumCommand.relativeTimeMs`: `N ms ago`, or its error for a timestamp not in
/// (epoch, now].
fn relative_time(timestamp: i64, what: &str, now_ms: i64) -> Result<String, String> {
    if timestamp <= 0 || timestamp > now_ms {
        return Err(format!(
            "Error while computing relative time, possible drift in system clock.\nCurrent timestamp is {now_ms}, {what} timestamp is {timestamp}"
        ));
    }
    Ok(format!("{} ms ago", now_ms - timestamp))
}

fn line(label: &str, value: &str) -> String {
    format!("{label:<LABEL_WIDTH$}{value}")
}

/// Kafka's `ToolsUtils.prettyPrintTable`.
pub fn pretty_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(|r| r.as_slice())) {
        for (cell, w) in row.iter().zip(&widths) {
            out.push_str(&format!("{cell:<w$}\t"));
        }
        out.push('\n');
    }
    out
}

/// Replica ids by list, for tests and tools: (current, committed, observers).
pub fn id_lists(description: &QuorumDescription) -> BTreeMap<&'static str, Vec<i32>> {
    let ids = |v: &[ReplicaState]| v.iter().map(|r| r.replica_id).collect::<Vec<_>>();
    let p = &description.partition;
    BTreeMap::from([
        ("current", ids(&p.current_voters)),
        ("committed", ids(&p.committed_voters)),
        ("observers", ids(&p.observers)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::describe_quorum::TopicData;
    use uuid::Uuid;

    fn replica(id: i32, dir: u128, leo: i64, caught_up: i64) -> ReplicaState {
        ReplicaState {
            replica_id: id,
            replica_directory_id: Uuid::from_u128(dir),
            log_end_offset: leo,
            last_fetch_timestamp: caught_up,
            last_caught_up_timestamp: caught_up,
            unknown_tagged_fields: Default::default(),
        }
    }

    fn node(id: i32, port: u16) -> NodeEndpoints {
        NodeEndpoints {
            node_id: id,
            listeners: vec![Listener {
                name: "CONTROLLER".into(),
                host: "localhost".into(),
                port,
                unknown_tagged_fields: Default::default(),
            }],
            unknown_tagged_fields: Default::default(),
        }
    }

    fn description(
        voters: Vec<ReplicaState>,
        committed: Vec<ReplicaState>,
        observers: Vec<ReplicaState>,
    ) -> QuorumDescription {
        let partition = PartitionData {
            partition_index: 0,
            error_code: 0,
            error_message: Some(Default::default()),
            leader_id: 1,
            leader_epoch: 5,
            high_watermark: 100,
            current_voters: voters,
            observers,
            committed_voters: committed,
            unknown_tagged_fields: Default::default(),
        };
        let response = DescribeQuorumResponse {
            error_code: 0,
            error_message: Some(Default::default()),
            topics: vec![TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![partition],
                unknown_tagged_fields: Default::default(),
            }],
            nodes: vec![node(1, 9093), node(2, 9094), node(4, 9096)],
            unknown_tagged_fields: Default::default(),
        };
        QuorumDescription::new("cid".into(), 3, response).unwrap()
    }

    #[test]
    fn status_matches_kafka_layout_with_committed_voters() {
        let v1 = replica(1, 0x2000_0000_0000_0000_0000_0000_0000_0000, 100, 1000);
        let v2 = replica(2, 0, 90, 400);
        let d = description(
            vec![v1.clone(), v2.clone()],
            vec![v1, v2],
            vec![replica(3, 7, 80, 300)],
        );
        let text = d.status_text();
        let expected = "ClusterId:              cid\n\
LeaderId:               1\n\
LeaderEpoch:            5\n\
HighWatermark:          100\n\
MaxFollowerLag:         10\n\
MaxFollowerLagTimeMs:   600\n\
CurrentVoters:          [{\"id\": 1, \"directoryId\": \"IAAAAAAAAAAAAAAAAAAAAA\", \"endpoints\": [\"CONTROLLER://localhost:9093\"]}, {\"id\": 2, \"endpoints\": [\"CONTROLLER://localhost:9094\"]}]\n\
CommittedVoters:        [{\"id\": 1, \"directoryId\": \"IAAAAAAAAAAAAAAAAAAAAA\", \"endpoints\": [\"CONTROLLER://localhost:9093\"]}, {\"id\": 2, \"endpoints\": [\"CONTROLLER://localhost:9094\"]}]\n\
CurrentObservers:       [{\"id\": 3, \"directoryId\": \"AAAAAAAAAAAAAAAAAAAABw\"}]\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn reconfiguration_line_names_the_added_voter() {
        let (v1, v2, v4) = (
            replica(1, 1, 100, 1000),
            replica(2, 2, 100, 1000),
            replica(4, 4, 99, 900),
        );
        let d = description(vec![v1.clone(), v2.clone(), v4], vec![v1, v2], vec![]);
        let text = d.status_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[7].starts_with("CommittedVoters:        [{\"id\": 1"));
        assert_eq!(lines[8], "Reconfiguration:        adding {\"id\": 4, \"directoryId\": \"AAAAAAAAAAAAAAAAAAAABA\", \"endpoints\": [\"CONTROLLER://localhost:9096\"]}");
        assert!(lines[9].starts_with("CurrentObservers:"));
        assert_eq!(d.to_json()["reconfiguration"]["adding"][0]["id"], 4);
    }

    #[test]
    fn leader_that_removed_itself_does_not_break_describe() {
        // Leader 1 removed itself: it is only an observer until the removal commits.
        let (v1, v2, v3) = (
            replica(1, 1, 50, 1000),
            replica(2, 2, 48, 990),
            replica(3, 3, 50, 1000),
        );
        let d = description(
            vec![v2.clone(), v3.clone()],
            vec![v1.clone(), v2, v3],
            vec![v1],
        );
        assert_eq!(d.max_follower_lag(), 2);
        assert_eq!(d.max_follower_lag_time_ms(), 10);
        assert!(d
            .status_text()
            .contains("Reconfiguration:        removing {\"id\": 1"));
        let table = d.replication_text();
        let rows: Vec<&str> = table.lines().collect();
        assert!(
            rows[1].starts_with("1 ") && rows[1].trim_end().ends_with("Leader"),
            "{table}"
        );
        assert_eq!(rows.len(), 4, "leader row once, two followers: {table}");
    }

    #[test]
    fn replication_table_pads_and_tabs_every_cell() {
        let d = description(
            vec![replica(1, 0, 100, 5), replica(2, 0, 90, 4)],
            vec![],
            vec![],
        );
        let table = d.replication_text();
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(rows[0], "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t");
        assert_eq!(rows[1], "1     \tAAAAAAAAAAAAAAAAAAAAAA\t100         \t0  \t5                 \t5                    \tLeader  \t");
        assert_eq!(rows[2], "2     \tAAAAAAAAAAAAAAAAAAAAAA\t90          \t10 \t4                 \t4                    \tFollower\t");
    }

    #[test]
    fn human_readable_timestamps_are_relative_like_kafka() {
        let mut lagging = replica(2, 0, 90, 4_000);
        lagging.last_caught_up_timestamp = -1;
        let d = description(vec![replica(1, 0, 100, 5_000), lagging], vec![], vec![]);
        let table = d.replication_text_human(5_250).unwrap();
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(rows[1], "1     \tAAAAAAAAAAAAAAAAAAAAAA\t100         \t0  \t250 ms ago        \t250 ms ago           \tLeader  \t");
        assert_eq!(rows[2], "2     \tAAAAAAAAAAAAAAAAAAAAAA\t90          \t10 \t1250 ms ago       \t-1                   \tFollower\t");
        let err = d.replication_text_human(4_500).unwrap_err();
        assert!(err.contains("possible drift in system clock"), "{err}");
        assert!(
            err.ends_with("Current timestamp is 4500, last fetch timestamp is 5000"),
            "{err}"
        );
    }

    #[test]
    fn summary_reports_committed_voters_as_describe_does_or_says_why_not() {
        let (v1, v2) = (replica(1, 1, 100, 1000), replica(2, 2, 100, 1000));
        let served = description(vec![v1.clone(), v2.clone()], vec![v1.clone()], vec![]);
        assert_eq!(
            served.summary(),
            "leader 1 epoch 5 HW 100, CurrentVoters [1, 2], CommittedVoters [1]"
        );
        let mut v2_answer = served.clone();
        v2_answer.api_version = 2;
        v2_answer.partition.committed_voters.clear();
        let not_asked = v2_answer.summary();
        assert!(
            not_asked.ends_with("CurrentVoters [1, 2], CommittedVotersSource: not computed: the leader answered DescribeQuorum v2, which has no CommittedVoters"),
            "{not_asked}"
        );
        let mut computed = v2_answer.clone();
        let set = VoterSet::new([
            crate::voter_set::tests::node(1),
            crate::voter_set::tests::node(2),
        ])
        .unwrap();
        computed.set_computed_committed(Some(&set));
        assert_eq!(
            computed.summary(),
            "leader 1 epoch 5 HW 100, CurrentVoters [1, 2], CommittedVoters [1, 2] (computed from the metadata log at HighWatermark 100)"
        );
        let mut failed = v2_answer.clone();
        failed.computed = Some(Computed::Unavailable("no route".into()));
        assert!(failed
            .summary()
            .ends_with("CurrentVoters [1, 2], CommittedVotersSource: not computed: no route"));
        let mut unknown_hw = computed.clone();
        unknown_hw.partition.high_watermark = -1;
        unknown_hw.set_computed_committed(None);
        assert!(unknown_hw
            .summary()
            .ends_with("CommittedVotersSource: not computed: the HighWatermark is not known yet"));
    }

    #[test]
    fn below_v3_or_unknown_hw_prints_empty_committed_list() {
        let v1 = replica(1, 1, 100, 1000);
        let mut d = description(vec![v1.clone()], vec![v1], vec![]);
        d.api_version = 2;
        assert!(d.status_text().contains("CommittedVoters:        []\n"));
        assert!(!d.status_text().contains("Reconfiguration:"));
        let d = description(vec![replica(1, 1, 100, 1000)], vec![], vec![]);
        assert!(d.status_text().contains("CommittedVoters:        []\n"));
    }
}
