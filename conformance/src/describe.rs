//! DescribeQuorum v0–3 of a replayed node: encoded by our codec and checked by every decoder
//! ([`WireChecker`]), and its content against the model's DescribeQuorum view.

use kraft::wire::describe_quorum as dq;
use model::spec;
use model::types::{bit, Id, Mask, Server, State, VoterSet, MAX_SERVERS};
use model::{KraftModel, ModelConfig};

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
    let keys = Keys::of(&model.cfg, state, id);
    wire.check_with(&resp, version, &view, |value| {
        check_content(value, view.as_ref(), &keys, version)
    })
}

/// The voter keys behind a model DescribeQuorum view, which names replicas by id: the directory id
/// of each current and committed voter, and of the key whose progress the leader records for each id
/// (`Server::peer_dir`). A leader also tracks other keys of an id (a replaced disk's old and new
/// key, one a voter and one an observer); the model forgets those, so their rows are not compared.
#[derive(Clone, Copy, Debug)]
pub struct Keys {
    pub latest: VoterSet,
    pub committed: Option<VoterSet>,
    pub peer: [u8; MAX_SERVERS],
    /// Ids that have had more than one disk: below v2 (no directory ids) their observer rows cannot
    /// be told apart, and are not compared.
    pub replaced: Mask,
    /// The latest and the committed set are the static voters (`--start static`, no VotersRecord in
    /// the log or below the HW): their rows carry no directory id (Kafka's static `ReplicaKey`).
    pub latest_static: bool,
    pub committed_static: bool,
}

impl Keys {
    /// The keys at server `me` of `state`.
    pub fn of(cfg: &ModelConfig, state: &State, me: Id) -> Keys {
        let s: &Server = &state.servers[usize::from(me)];
        let mut peer = [0; MAX_SERVERS];
        for (j, d) in peer.iter_mut().enumerate() {
            *d = s.peer_dir(j as Id);
        }
        let replaced = (0..state.servers.len())
            .filter(|&j| state.servers[j].dir > 0)
            .fold(0, |m, j| m | bit(j as Id));
        let static_below = |end: usize| {
            cfg.start == model::Start::Static
                && !s.log.as_slice()[..end.min(s.log.as_slice().len())]
                    .iter()
                    .any(|e| matches!(e.kind, model::types::Kind::Voters(_)))
        };
        Keys {
            latest_static: static_below(usize::MAX),
            committed_static: static_below(usize::from(s.hw.unwrap_or(0))),
            latest: spec::latest_voters(cfg.bootstrap(), &s.log),
            committed: spec::reported_committed_voters(cfg, s),
            peer,
            replaced,
        }
    }
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
    keys: &Keys,
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
    let all_observers = rows(p, "Observers")?;
    let committed = rows(p, "CommittedVoters")?;
    let dir_at = |r: &Row, d: u8, static_set: bool| {
        if version >= 2 && !static_set {
            mapping::directory_id_at(r.0 as Id, d)
        } else {
            uuid::Uuid::nil()
        }
    };
    // Directory ids from v2 on: the mapping's identity of each replica, a voter's its set's key.
    for (field, rows, set, static_set) in [
        (
            "CurrentVoters",
            &current,
            Some(keys.latest),
            keys.latest_static,
        ),
        (
            "CommittedVoters",
            &committed,
            keys.committed,
            keys.committed_static,
        ),
        ("Observers", &all_observers, None, false),
    ] {
        for r in rows {
            let id = Id::try_from(r.0).map_err(|_| format!("{field} replica id {}", r.0))?;
            let ok = match (set.and_then(|s| s.dir(id)), r.4) {
                // A static committed voter that is a current voter under its reported key has
                // that voter's row (kip-1204.md §5: the same ReplicaState as in CurrentVoters).
                (Some(_), got) if static_set && !keys.latest_static && keys.latest.has_id(id) => {
                    got == keys.latest.dir(id).map(|d| dir_at(r, d, false))
                }
                (Some(d), got) => got == Some(dir_at(r, d, static_set)),
                (None, _) if set.is_some() => false,
                (None, Some(u)) if version >= 2 => mapping::model_dir(u, id, field).is_ok(),
                (None, got) => got == Some(uuid::Uuid::nil()),
            };
            if !ok {
                return Err(format!(
                    "{field} replica {id} has directory id {:?} at v{version}, not its key's",
                    r.4
                ));
            }
        }
    }
    // The observer rows the model's view has: not of a current voter's id, and of the key the
    // leader records for the id; below v2 (no directory ids) none of an id with several disks.
    let compared =
        |id: Id| !keys.latest.has_id(id) && (version >= 2 || keys.replaced & bit(id) == 0);
    let observers: Vec<Row> = all_observers
        .iter()
        .filter(|r| {
            let id = r.0 as Id;
            compared(id)
                && (version < 2 || r.4 == Some(dir_at(r, keys.peer[usize::from(id)], false)))
        })
        .copied()
        .collect();
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
        (
            "Observers",
            &observers,
            model_rows(&view.observers)
                .into_iter()
                .filter(|r| compared(r.0 as Id))
                .collect(),
        ),
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
    if version >= 3 {
        // A committed voter whose key is not the one the leader's model records for its id: the
        // model forgot that key's state (its row is the sentinel); the LogEndOffset is not compared.
        let forgotten = |id: i64| {
            let id = id as Id;
            id != view.leader_id
                && keys.committed.and_then(|c| c.dir(id)) != Some(keys.peer[usize::from(id)])
        };
        let blind = |rows: Vec<(i64, i64)>| -> Vec<(i64, i64)> {
            rows.into_iter()
                .map(|(id, leo)| (id, if forgotten(id) { i64::MIN } else { leo }))
                .collect()
        };
        let want = blind(model_rows(&view.committed_voters));
        if blind(id_leo(&committed)) != want {
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
            let tracked = current
                .iter()
                .chain(&all_observers)
                .find(|r| (r.0, r.4) == (c.0, c.4));
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
