//! DescribeQuorum v0–3 of a replayed node: encoded by our codec and checked by every decoder
//! ([`WireChecker`]), and its content against the model's DescribeQuorum view.

use kraft::wire::describe_quorum as dq;
use model::spec;
use model::types::{Id, State};
use model::KraftModel;

use crate::harness::Cluster;
use crate::mapping;
use crate::schema::{StructValue, Value};
use crate::wire::{partitions, replicas, WireChecker};

/// The DescribeQuorum request every node is asked (Kafka's admin client: `__cluster_metadata`-0).
pub fn describe_request() -> dq::DescribeQuorumRequest {
    dq::DescribeQuorumRequest::for_metadata_partition()
}

/// DescribeQuorum of node `id` at `version`: the wire checks, then the content against the model.
pub(crate) fn check_describe(
    model: &KraftModel,
    cluster: &mut Cluster,
    state: &State,
    id: Id,
    version: i16,
    wire: &mut WireChecker,
) -> Result<(), String> {
    let now = cluster.now(id);
    // `describe_quorum` may expire observers (never, at the mapping's expiry): a node that is shared
    // with the parent cluster is copied first.
    let node = std::sync::Arc::make_mut(&mut cluster.nodes[id as usize]);
    let resp = node.describe_quorum(now, version, &describe_request());
    let s = &state.servers[id as usize];
    let view = spec::describe_quorum(&model.cfg, id, s);
    wire.check_with(&resp, version, &view, |value| {
        check_content(value, view.as_ref(), version)
    })
}

fn int(v: &StructValue, field: &str) -> Result<i64, String> {
    v.int(field).ok_or_else(|| format!("{field} missing"))
}

/// One replica state row: (id, LEO, last fetch, last caught up, directory id).
type Row = (i64, i64, i64, i64, Option<uuid::Uuid>);

/// Rows of a replica list, sorted by id.
fn rows(p: &StructValue, field: &str) -> Result<Vec<Row>, String> {
    let mut out = Vec::new();
    for r in replicas(p, field) {
        let dir = match r.get("ReplicaDirectoryId") {
            Some(Value::Uuid(u)) => Some(*u),
            _ => None,
        };
        out.push((
            int(r, "ReplicaId")?,
            int(r, "LogEndOffset")?,
            int(r, "LastFetchTimestamp")?,
            int(r, "LastCaughtUpTimestamp")?,
            dir,
        ));
    }
    out.sort_by_key(|r| r.0);
    Ok(out)
}

/// The decoded response against the model's DescribeQuorum view (`None`: the node is not the leader).
pub fn check_content(
    value: &StructValue,
    view: Option<&spec::DescribeQuorumView>,
    version: i16,
) -> Result<(), String> {
    let parts = partitions(value);
    let [p] = parts.as_slice() else {
        return Err(format!("{} partitions, expected 1", parts.len()));
    };
    if int(value, "ErrorCode")? != 0 {
        return Err(format!("top-level ErrorCode {}", int(value, "ErrorCode")?));
    }
    let Some(view) = view else {
        // Kafka's non-leader answer: NOT_LEADER_OR_FOLLOWER with 0/0/0 and empty lists.
        let got = (
            int(p, "ErrorCode")?,
            int(p, "LeaderId")?,
            int(p, "LeaderEpoch")?,
            int(p, "HighWatermark")?,
        );
        if got != (6, 0, 0, 0) {
            return Err(format!(
                "non-leader answered (error, leader, epoch, HW) = {got:?}, expected (6, 0, 0, 0)"
            ));
        }
        for f in ["CurrentVoters", "Observers", "CommittedVoters"] {
            if !replicas(p, f).is_empty() {
                return Err(format!("non-leader answered a non-empty {f}"));
            }
        }
        if value.array("Nodes").is_some_and(|n| !n.is_empty()) {
            return Err("non-leader answered a non-empty Nodes".into());
        }
        return Ok(());
    };
    let got = (
        int(p, "ErrorCode")?,
        int(p, "LeaderId")?,
        int(p, "LeaderEpoch")?,
        int(p, "HighWatermark")?,
    );
    let want = (
        0,
        i64::from(view.leader_id),
        i64::from(view.leader_epoch),
        view.high_watermark,
    );
    if got != want {
        return Err(format!(
            "(error, LeaderId, LeaderEpoch, HighWatermark) = {got:?}, model {want:?}"
        ));
    }
    let current = rows(p, "CurrentVoters")?;
    let observers = rows(p, "Observers")?;
    let committed = rows(p, "CommittedVoters")?;
    let model_rows = |v: &[spec::ReplicaState]| {
        let mut r: Vec<(i64, i64)> = v
            .iter()
            .map(|r| (i64::from(r.replica_id), r.log_end_offset))
            .collect();
        r.sort();
        r
    };
    let id_leo = |r: &[Row]| r.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>();
    for (field, got, want) in [
        ("CurrentVoters", &current, model_rows(&view.current_voters)),
        ("Observers", &observers, model_rows(&view.observers)),
    ] {
        if id_leo(got) != want {
            return Err(format!(
                "{field} (id, LogEndOffset) = {:?}, model {want:?}",
                id_leo(got)
            ));
        }
    }
    // The model has no clock, but one timestamp rule needs none: a replica that never fetched in this
    // epoch (LogEndOffset -1) has never fetched or caught up either (Kafka's -1 sentinels), at every version.
    for r in current.iter().chain(&observers) {
        if r.1 == -1 && (r.2, r.3) != (-1, -1) {
            return Err(format!(
                "replica {} has LogEndOffset -1 but timestamps ({}, {}), expected (-1, -1)",
                r.0, r.2, r.3
            ));
        }
    }
    // Directory ids from v2 on: the mapping's identity of each replica.
    for r in current.iter().chain(&observers).chain(&committed) {
        let want = if version >= 2 {
            mapping::directory_id(r.0 as Id)
        } else {
            uuid::Uuid::nil()
        };
        if r.4 != Some(want) {
            return Err(format!(
                "replica {} has directory id {:?} at v{version}, expected {want}",
                r.0, r.4
            ));
        }
    }
    if version >= 3 {
        let want = model_rows(&view.committed_voters);
        if id_leo(&committed) != want {
            return Err(format!(
                "CommittedVoters (id, LogEndOffset) = {:?}, model {want:?}",
                id_leo(&committed)
            ));
        }
        if committed.is_empty() != (view.high_watermark < 0) {
            return Err("CommittedVoters must be empty iff the HW is unknown".into());
        }
        // The same state as in CurrentVoters/Observers where the leader has one, else the sentinels.
        for c in &committed {
            let tracked = current.iter().chain(&observers).find(|r| r.0 == c.0);
            match tracked {
                Some(r) if r != c => {
                    return Err(format!(
                        "CommittedVoters entry {c:?} differs from the leader's replica state {r:?}"
                    ))
                }
                Some(_) => {}
                None if (c.1, c.2, c.3) != (-1, -1, -1) => {
                    return Err(format!(
                        "untracked committed voter {} lacks the sentinels: {c:?}",
                        c.0
                    ))
                }
                None => {}
            }
        }
    }
    if version >= 2 {
        let mut want: Vec<i64> = current.iter().map(|r| r.0).collect();
        if version >= 3 {
            want.extend(committed.iter().map(|r| r.0));
        }
        want.sort();
        want.dedup();
        let mut nodes = Vec::new();
        for n in value.array("Nodes").unwrap_or(&[]) {
            let Value::Struct(n) = n else {
                return Err("Nodes entry is not a struct".into());
            };
            let id = int(n, "NodeId")?;
            let listeners = n.array("Listeners").unwrap_or(&[]);
            let e = mapping::endpoint(id as Id);
            let ok = matches!(listeners, [Value::Struct(l)]
                if l.get("Name") == Some(&Value::String(Some(e.name.clone())))
                && l.get("Host") == Some(&Value::String(Some(e.host.clone())))
                && l.int("Port") == Some(i64::from(e.port)));
            if !ok {
                return Err(format!(
                    "Nodes entry {id} has listeners {listeners:?}, expected {e:?}"
                ));
            }
            nodes.push(id);
        }
        nodes.sort();
        if nodes != want {
            return Err(format!("Nodes = {nodes:?}, expected the voters {want:?}"));
        }
    }
    Ok(())
}
