//! One replica: its durable and volatile state, and the key of its outstanding fetch.

use super::{
    is_zero, is_zero16, is_zero32, no_voters, opt, ChangeOp, Id, Log, Mask, PendingChange,
    Snapshot, SnapshotId, VoterSet, MAX_SERVERS, PACKED_LOG,
};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// A replica's role. Kafka's "Voted" state is `Unattached` with `voted_for` set.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Role {
    /// No known leader in the current epoch (possibly voted).
    #[default]
    Unattached,
    /// Follows `leader` in the current epoch (voters and observers alike).
    Follower,
    /// Asked for votes in the current epoch.
    Candidate,
    /// KIP-996: asks for pre-votes at the current epoch (epoch, vote and known leader unchanged).
    Prospective,
    /// Leader of the current epoch.
    Leader,
    /// Was leader of the current epoch and stepped down (check-quorum, removal committed, restart).
    Resigned,
}

/// A fetch is identified by its request fields; a response is applied only if it echoes the
/// outstanding request's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FetchKey {
    /// Fetcher's epoch when it sent the request.
    pub epoch: u8,
    /// Fetch offset = the fetcher's LEO.
    pub fetch_offset: u8,
    /// Epoch of the fetcher's last record, 0 for an empty log.
    pub last_fetched_epoch: u8,
    /// `ReplicaDirectoryId`: the fetcher's directory id (its key is (id, this)).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replica_dir: u8,
}

/// One server. Durable: `epoch`, `voted_for`, `log`. Everything else is volatile (lost on restart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Server {
    /// Durable (`meta.properties`): the directory id, 0 for the disk the server was formatted with,
    /// one more after each disk loss. The replica's key is (id, dir).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dir: u8,
    /// Durable: current epoch.
    pub epoch: u8,
    /// Durable: the candidate this replica voted for in `epoch`.
    pub voted_for: Option<Id>,
    /// Durable: the log (offset i = entry i).
    pub log: Log,
    /// Volatile: role in `epoch`.
    pub role: Role,
    /// Volatile: known leader of `epoch` (Follower: whom it fetches from; Leader: itself).
    pub leader: Option<Id>,
    /// Volatile: high watermark (exclusive), `None` = unknown (−1 on the wire).
    pub hw: Option<u8>,
    /// Candidate: ids that granted their vote (itself included).
    pub votes: Mask,
    /// Leader: offset of its start-of-epoch batch (its LeaderChange record).
    pub epoch_start: u8,
    /// Leader: the last fetch offset seen from each replica in this epoch (voters and observers).
    pub end: [Option<u8>; MAX_SERVERS],
    /// Leader: replicas seen fetching at an offset ≥ the leader's LEO in this epoch (AddVoter's
    /// caught-up test).
    pub caught_up: Mask,
    /// Leader: the directory id of the key whose fetches `end[i]` and `caught_up` bit `i` record
    /// (two bits per id; Kafka keys its replica states by (id, directory id)).
    #[serde(default, skip_serializing_if = "is_zero16")]
    pub peer_dirs: u16,
    /// Leader: per id, another key than `peer_dir`'s that caught up in this epoch (three bits per id:
    /// 0 none, else its directory id + 1). Kafka keeps a state per key; the model keeps the
    /// caught-up flag of a second key, which AddVoter reads once that key is the recorded one.
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub other_caught_up: u32,
    /// Leader: the add/remove awaiting commit.
    pub pending: Option<PendingChange>,
    /// Leader at `kraft.version` 0: the volatile voter set, the static voters that reported their key
    /// (its own included); see `crate::kraft_version`.
    #[serde(default, skip_serializing_if = "no_voters")]
    pub volatile_voters: VoterSet,
    /// Follower/observer (async fetch only): the outstanding fetch request.
    pub fetching: Option<FetchKey>,
    /// Follower, pre-vote only: fetched successfully from its leader in this epoch (Kafka's
    /// `FollowerState.hasFetchedFromLeader`); such a follower rejects votes and pre-votes. Always
    /// false without pre-vote, where a follower rejects every vote.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fetched: bool,
    /// Prospective: ids that granted a pre-vote (itself included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pre_votes: Mask,
    /// Durable: the latest snapshot this replica holds (taken itself or installed), if any. The
    /// snapshot at the log start, if older, is the log's [`Log::base`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Snapshot>,
    /// Follower, volatile: the snapshot its leader pointed it to and that it is downloading with
    /// FetchSnapshot (Kafka's `fetchingSnapshot`, a `.checkpoint.part` file that a restart deletes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetching_snapshot: Option<SnapshotId>,
}

impl Server {
    /// Leader: the directory id of the key whose fetches `end[id]` records.
    pub fn peer_dir(&self, id: Id) -> u8 {
        ((self.peer_dirs >> (2 * id)) & 3) as u8
    }
    /// Leader: `end[id]` and `caught_up` bit `id` now record the key (id, dir).
    pub fn set_peer_dir(&mut self, id: Id, dir: u8) {
        self.peer_dirs = (self.peer_dirs & !(3 << (2 * id))) | (((dir & 3) as u16) << (2 * id));
    }
}

impl Hash for Server {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut buf = [0u8; PACKED_LOG + 18 + MAX_SERVERS + 6 + 6 + 4 + 3];
        let mut n = self.log.pack(&mut buf);
        let (op, a, b) = match self.pending.map(|p| p.op) {
            None => (0, 0, 0),
            Some(ChangeOp::Add(j)) => (1, j, 0),
            Some(ChangeOp::Remove(j)) => (2, j, 0),
            Some(ChangeOp::Swap { out, add }) => (3, out, add),
            Some(ChangeOp::Update(j)) => (4, j, 0),
            Some(ChangeOp::KraftVersionUpgrade) => (5, 0, 0),
        };
        let f = self.fetching;
        let fixed = [
            self.epoch,
            opt(self.voted_for),
            self.role as u8,
            opt(self.leader),
            opt(self.hw),
            self.votes,
            self.epoch_start,
            self.caught_up,
            op,
            a,
            b,
            opt(self.pending.map(|p| p.offset)),
            opt(f.map(|k| k.epoch)),
            opt(f.map(|k| k.fetch_offset)),
            opt(f.map(|k| k.last_fetched_epoch)),
            self.fetched as u8,
            self.pre_votes,
        ];
        buf[n..n + fixed.len()].copy_from_slice(&fixed);
        n += fixed.len();
        for e in self.end {
            buf[n] = opt(e);
            n += 1;
        }
        // Snapshot state only when present, so that states without snapshots hash as they always did.
        if self.snapshot.is_some() || self.fetching_snapshot.is_some() {
            let s = self.snapshot.unwrap_or_default();
            let f = self.fetching_snapshot;
            buf[n..n + 6].copy_from_slice(&[
                self.snapshot.is_some() as u8,
                s.id.end,
                s.id.epoch,
                s.voters.ids(),
                opt(f.map(|f| f.end)),
                opt(f.map(|f| f.epoch)),
            ]);
            n += 6;
        }
        // Directory ids only once a disk was lost, so that states without one hash as they did.
        let snap_dirs = self.snapshot.map_or(0, |s| s.voters.dirs());
        if self.dir != 0
            || self.peer_dirs != 0
            || self.other_caught_up != 0
            || snap_dirs != 0
            || f.is_some_and(|k| k.replica_dir != 0)
        {
            let [p0, p1] = self.peer_dirs.to_le_bytes();
            let [s0, s1] = snap_dirs.to_le_bytes();
            let fd = opt(f.map(|k| k.replica_dir));
            buf[n..n + 6].copy_from_slice(&[self.dir, p0, p1, s0, s1, fd]);
            n += 6;
            buf[n..n + 4].copy_from_slice(&self.other_caught_up.to_le_bytes());
            n += 4;
        }
        // The volatile voter set only at `kraft.version` 0 (`--start static`).
        let v = self.volatile_voters;
        if !v.is_empty() {
            let [d0, d1] = v.dirs().to_le_bytes();
            buf[n..n + 3].copy_from_slice(&[v.ids(), d0, d1]);
            n += 3;
        }
        h.write(&buf[..n]);
    }
}
