//! The abstract state of one server, from either side (see the module doc of `mapping`).

use std::collections::BTreeMap;

use kraft::node::{EntryKind, Node, NodeView, Role as KRole, SnapshotId as KSnapshotId};
use model::types::{bit, Entry, FetchKey, Id, Kind, Mask, PendingChange, Role, VoterSet};

use model::types::ChangeOp;

use super::upgrade::voters_in_force;
use super::{id_of, key_dir, replica_key_at, small, voters_of};

fn kind_of(kind: &EntryKind) -> Result<Kind, String> {
    Ok(match kind {
        EntryKind::Data => Kind::Data,
        EntryKind::LeaderChange => Kind::LeaderChange,
        EntryKind::KRaftVersion(1) => Kind::KRaftVersion,
        EntryKind::KRaftVersion(v) => {
            return Err(format!("KRaftVersionRecord level {v}, the model writes 1"))
        }
        EntryKind::Voters(set) => Kind::Voters(voters_of(set)?),
    })
}

pub(super) fn record_kind(r: &kraft::log::Record) -> Result<Kind, String> {
    Ok(match r {
        kraft::log::Record::Data(_) => Kind::Data,
        kraft::log::Record::LeaderChange { .. } => Kind::LeaderChange,
        kraft::log::Record::KRaftVersion(1) => Kind::KRaftVersion,
        kraft::log::Record::KRaftVersion(v) => return Err(format!("KRaftVersionRecord level {v}")),
        kraft::log::Record::Voters(set) => Kind::Voters(voters_of(set)?),
    })
}

fn role_of(r: KRole) -> Role {
    match r {
        KRole::Unattached => Role::Unattached,
        KRole::Prospective => Role::Prospective,
        KRole::Candidate => Role::Candidate,
        KRole::Follower => Role::Follower,
        KRole::Leader => Role::Leader,
        KRole::Resigned => Role::Resigned,
    }
}

/// The comparable projection of one server: what both sides expose (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Abstract {
    /// The model directory id of the server's disk (one more after each disk loss).
    pub dir: u8,
    pub role: Role,
    pub epoch: u8,
    pub leader: Option<Id>,
    pub voted_for: Option<Id>,
    pub log: Vec<Entry>,
    pub hw: Option<u8>,
    pub latest_voters: VoterSet,
    pub committed_voters: Option<VoterSet>,
    /// Leader only.
    pub epoch_start: Option<u8>,
    /// Leader only: other replicas' end offsets (`None` = unknown), by id: the progress of the key
    /// the model records for the id (`Server::peer_dir`); the leader's states of other keys of that
    /// id are ones the model forgets.
    pub end: BTreeMap<Id, Option<u8>>,
    /// Leader only: other replicas that caught up in this epoch.
    pub caught_up: Mask,
    /// Leader only: an add/remove, or the `kraft.version` upgrade, awaiting its commit.
    pub pending: Option<PendingChange>,
    /// Leader at `kraft.version` 0 only: the volatile voter set (`mapping::upgrade`).
    pub volatile_voters: VoterSet,
    pub fetching: Option<FetchKey>,
    /// Log start offset (0 until a snapshot replaces the prefix).
    pub log_start: u8,
    /// The snapshots held other than the bootstrap one, ascending: (end offset, epoch, voter set).
    pub snapshots: Vec<(u8, u8, VoterSet)>,
    /// Follower: the snapshot being downloaded (end offset, epoch).
    pub fetching_snapshot: Option<(u8, u8)>,
}

impl Abstract {
    /// Field-by-field rendering, for side-by-side reports.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        use model::story::{entries, set, voters};
        let log = entries(&self.log);
        let snapshots = self
            .snapshots
            .iter()
            .map(|(e, p, v)| format!("({e},{p}){}", voters(*v)))
            .collect::<Vec<_>>()
            .join(" ");
        let end = self
            .end
            .iter()
            .filter_map(|(i, o)| o.map(|o| format!("{i}:{o}")))
            .collect::<Vec<_>>()
            .join(",");
        vec![
            ("dir", self.dir.to_string()),
            ("role", format!("{:?}", self.role)),
            ("epoch", self.epoch.to_string()),
            ("leader", format!("{:?}", self.leader)),
            ("voted_for", format!("{:?}", self.voted_for)),
            ("log", format!("[{log}]")),
            ("hw", self.hw.map_or("unknown".into(), |h| h.to_string())),
            ("latest_voters", voters(self.latest_voters)),
            (
                "committed_voters",
                self.committed_voters.map_or("none".into(), voters),
            ),
            ("epoch_start", format!("{:?}", self.epoch_start)),
            ("end_offsets", format!("{{{end}}}")),
            ("caught_up", set(self.caught_up)),
            ("pending", format!("{:?}", self.pending)),
            ("volatile_voters", voters(self.volatile_voters)),
            ("fetching", format!("{:?}", self.fetching)),
            ("log_start", self.log_start.to_string()),
            ("snapshots", format!("[{snapshots}]")),
            ("fetching_snapshot", format!("{:?}", self.fetching_snapshot)),
        ]
    }
}

/// The model side of the projection. `committed` is what the model reports as committed (a bug variant
/// may report another set than the spec function).
pub fn abstract_model(
    me: Id,
    s: &model::types::Server,
    bootstrap: Mask,
    committed: Option<VoterSet>,
    servers: usize,
) -> Abstract {
    let leading = s.role == Role::Leader;
    Abstract {
        dir: s.dir,
        role: s.role,
        epoch: s.epoch,
        leader: s.leader,
        voted_for: s.voted_for,
        log: s.log.as_slice().to_vec(),
        hw: s.hw,
        latest_voters: model::spec::latest_voters(bootstrap, &s.log),
        committed_voters: committed,
        epoch_start: leading.then_some(s.epoch_start),
        end: if leading {
            (0..servers as Id)
                .filter(|&j| j != me)
                .map(|j| (j, s.end[j as usize]))
                .collect()
        } else {
            BTreeMap::new()
        },
        caught_up: if leading { s.caught_up & !bit(me) } else { 0 },
        pending: if leading { s.pending } else { None },
        volatile_voters: if leading {
            s.volatile_voters
        } else {
            VoterSet::default()
        },
        fetching: s.fetching,
        log_start: s.log.start(),
        snapshots: {
            let mut v: Vec<(u8, u8, VoterSet)> = [s.log.base(), s.snapshot]
                .into_iter()
                .flatten()
                .map(|p| (p.id.end, p.id.epoch, p.voters))
                .collect();
            v.sort();
            v.dedup();
            v
        },
        fetching_snapshot: s.fetching_snapshot.map(|i| (i.end, i.epoch)),
    }
}

/// The implementation side of the projection. `leader_state` gives the epoch start offset; `peer_dir`
/// is the model's [`model::types::Server::peer_dir`] at this server: the key of each id whose
/// progress the leader's abstraction reads.
pub fn abstract_view(
    me: Id,
    node: &Node,
    v: &NodeView,
    epoch_start: Option<i64>,
    servers: usize,
    peer_dir: &dyn Fn(Id) -> u8,
) -> Result<Abstract, String> {
    use kraft::log::RaftLog;
    let role = role_of(v.role);
    let leading = role == Role::Leader;
    let start = node.log().start_offset();
    let mut log = Vec::with_capacity(v.log.len());
    for (i, e) in v.log.iter().enumerate() {
        if e.offset != start + i as i64 {
            return Err(format!("log record {i} has offset {}", e.offset));
        }
        log.push(Entry {
            epoch: small(e.epoch, "record epoch")?,
            kind: kind_of(&e.kind)?,
        });
    }
    if v.log_end_offset != start + log.len() as i64 {
        return Err(format!(
            "LEO {} but {} records",
            v.log_end_offset,
            log.len()
        ));
    }
    super::upgrade::check_upgrade_batches(node)?;
    let dir = key_dir(&node.local_key(), me, "own directory id")?;
    let mut end = BTreeMap::new();
    let mut caught_up: Mask = 0;
    if let (true, Some(l)) = (leading, node.leader_state()) {
        // Every tracked key is one of the mapping's.
        for r in &v.replicas {
            let j = id_of(r.key.id, "replica id")?;
            // A static voter's state is keyed without a directory id (its voter set's key).
            if r.key.directory_id.is_some() {
                key_dir(&r.key, j, "replica directory id")?;
            }
            if usize::from(j) >= servers {
                return Err(format!("leader tracks unknown replica {j}"));
            }
        }
        for j in (0..servers as Id).filter(|&j| j != me) {
            let p = l.progress(&replica_key_at(j, peer_dir(j)));
            let o = p
                .and_then(|p| p.end_offset)
                .map(|o| small(o, "replica end offset"))
                .transpose()?;
            end.insert(j, o);
            if p.is_some_and(|p| p.has_caught_up) {
                caught_up |= bit(j);
            }
        }
    }
    let pending = match (&v.pending_change, leading) {
        (Some(p), true) => {
            let j = id_of(p.key.id, "pending change key")?;
            let op = match p.kind {
                kraft::node::ChangeKind::Add => ChangeOp::Add(j),
                kraft::node::ChangeKind::Remove => ChangeOp::Remove(j),
                kraft::node::ChangeKind::Update => {
                    return Err(format!("an UpdateRaftVoter of {j} is pending"))
                }
            };
            Some(PendingChange {
                op,
                offset: small(p.offset, "pending change offset")?,
            })
        }
        (None, true) => super::upgrade::pending_upgrade(node)?,
        _ => None,
    };
    let fetching = match &v.outstanding_fetch {
        Some(f) => Some(FetchKey {
            epoch: small(f.epoch, "fetch epoch")?,
            fetch_offset: small(f.fetch_offset, "fetch offset")?,
            last_fetched_epoch: small(f.last_fetched_epoch, "last fetched epoch")?,
            replica_dir: dir,
        }),
        None => None,
    };
    Ok(Abstract {
        dir,
        role,
        epoch: small(v.epoch, "epoch")?,
        leader: v.leader_id.map(|l| id_of(l, "leader id")).transpose()?,
        voted_for: v.voted.map(|k| id_of(k.id, "voted-for id")).transpose()?,
        log,
        hw: v.high_watermark.map(|h| small(h, "HW")).transpose()?,
        latest_voters: voters_in_force(&v.latest_voters)?,
        committed_voters: v
            .committed_voters
            .as_ref()
            .map(voters_in_force)
            .transpose()?,
        epoch_start: if leading {
            Some(small(epoch_start.unwrap_or(-1), "epoch start offset")?)
        } else {
            None
        },
        end,
        caught_up,
        pending,
        volatile_voters: if leading {
            super::upgrade::volatile_of(node)?
        } else {
            VoterSet::default()
        },
        fetching,
        log_start: small(start, "log start")?,
        snapshots: node
            .snapshots()
            .filter(|m| m.id != KSnapshotId::BOOTSTRAP)
            .map(|m| {
                let voters = m
                    .voters
                    .as_ref()
                    .ok_or_else(|| format!("snapshot {} without a voter set", m.id))?;
                Ok((
                    small(m.id.end_offset, "snapshot end offset")?,
                    small(m.id.epoch, "snapshot epoch")?,
                    voters_of(voters)?,
                ))
            })
            .collect::<Result<_, String>>()?,
        fetching_snapshot: match node.snapshot_download() {
            Some((id, _)) => Some((
                small(id.end_offset, "downloaded snapshot end offset")?,
                small(id.epoch, "downloaded snapshot epoch")?,
            )),
            None => None,
        },
    })
}
