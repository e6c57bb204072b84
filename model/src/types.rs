//! The model's vocabulary: server state, log entries, messages, actions and ghost history.
//!
//! Everything is small and fixed-size (u8 offsets and epochs, bitmask voter sets) so that states hash
//! and clone fast; the JSON form (serde) is what `traces` writes and conformance reads.

use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

pub use crate::auto_join::{AppendAcks, AutoJoinRequest, MAX_ACKS};
pub use crate::voter_set::{VoterSet, MAX_DIRS, NO_DIR};

/// A server id, `0..voters` are the initial voters, `voters..voters+joiners` the joiners.
pub type Id = u8;
/// A voter set as a bitmask over server ids (bit `i` = server `i`).
pub type Mask = u8;

/// Most servers a model may have (ids fit in a [`Mask`] with room to spare).
pub const MAX_SERVERS: usize = 6;
/// Most entries a log (or a fetch response) may hold.
pub const MAX_LOG: usize = 10;

/// The mask with only `id` set.
pub const fn bit(id: Id) -> Mask {
    1 << id
}

/// The ids in `mask`, ascending.
pub fn ids(mask: Mask) -> impl Iterator<Item = Id> {
    (0..8u8).filter(move |i| mask & bit(*i) != 0)
}

/// The Kafka errors the model answers with, by name; their numbers are Kafka's business (the
/// conformance mapping pairs each with the implementation's code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ErrorCode {
    /// NONE.
    None,
    /// NOT_LEADER_OR_FOLLOWER: the receiver is not the leader.
    NotLeaderOrFollower,
    /// REQUEST_TIMED_OUT: a membership precondition is not met yet, or a pending change timed out.
    RequestTimedOut,
    /// UNSUPPORTED_VERSION: add or remove at `kraft.version` 0 (`--start static`, before the upgrade).
    UnsupportedVersion,
    /// FENCED_LEADER_EPOCH: the request's epoch is older than the receiver's.
    FencedLeaderEpoch,
    /// UNKNOWN_LEADER_EPOCH: the request's epoch is newer than the receiver's.
    UnknownLeaderEpoch,
    /// DUPLICATE_VOTER: AddVoter of an id that is already a voter.
    DuplicateVoter,
    /// VOTER_NOT_FOUND: RemoveVoter of a non-voter, or of the last voter.
    VoterNotFound,
    /// INVALID_VOTER_KEY: a Vote or BeginQuorumEpoch names a voter key (id, directory id) that is
    /// not the receiver's.
    InvalidVoterKey,
    /// NOT_CONTROLLER: UpdateFeatures at a replica that is not the active controller.
    NotController,
    /// INVALID_UPDATE_VERSION: UpdateFeatures refused (`kraft.version` upgrade preconditions).
    InvalidUpdateVersion,
}

/// What a log entry (one record) is. Data carries no payload: its identity is (offset, epoch).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Kind {
    /// A client record.
    #[default]
    Data,
    /// `LeaderChangeMessage`, first record of every leader's start-of-epoch batch.
    LeaderChange,
    /// `KRaftVersionRecord` (kraft.version 1), written with the first VotersRecord of a fresh cluster.
    KRaftVersion,
    /// `VotersRecord`: the full voter set with its keys, in force from this offset on (committed or
    /// not).
    Voters(VoterSet),
}

/// One log entry: the epoch of the leader that appended it, and its kind.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Entry {
    /// Leader epoch of the batch holding this record.
    pub epoch: u8,
    /// Record kind.
    pub kind: Kind,
}

/// A bounded log; entry `i` is the record at offset `i`. Slots past `len`, and below the log start, are
/// kept at their default so that derived `Hash`/`Eq` only see the live entries' content.
///
/// The log start offset (Kafka's `logStartOffset`) is 0 until a snapshot replaces the prefix: then
/// the entries below `start` are gone and the snapshot at `start` (its epoch and voter set, the
/// voter set as of offset `start − 1`) is where the log and its voter-set history begin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "LogRepr", try_from = "LogRepr")]
pub struct Log {
    entries: [Entry; MAX_LOG],
    len: u8,
    /// Log start offset: the end offset of the snapshot the log begins with (0 = none).
    start: u8,
    /// Epoch of the snapshot at `start` (its last record's epoch); 0 while `start` is 0.
    base_epoch: u8,
    /// Voter set of the snapshot at `start` (the set at offset `start − 1`); empty while `start` is 0.
    base_voters: VoterSet,
}

/// A snapshot's id, as in Kafka's `OffsetAndEpoch`: the end offset (exclusive) and the epoch of
/// its last record.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct SnapshotId {
    /// End offset: the snapshot holds offsets `0..end`.
    pub end: u8,
    /// Epoch of the record at `end − 1`.
    pub epoch: u8,
}

/// A snapshot, abstracted to what membership needs: its id and the voter set it carries (Kafka
/// writes `voterSetAtOffset(end − 1)` into its first control batch).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Snapshot {
    /// Its id.
    pub id: SnapshotId,
    /// The VotersRecord it carries.
    pub voters: VoterSet,
}

/// The JSON form of a [`Log`]: a plain list of entries while the log starts at 0 (as traces always
/// had it), an object once a snapshot replaced its prefix.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum LogRepr {
    Plain(Vec<Entry>),
    FromSnapshot {
        start: u8,
        snapshot_epoch: u8,
        snapshot_voters: VoterSet,
        entries: Vec<Entry>,
    },
}

impl Entry {
    /// One byte for the kind: 0 Data, 1 LeaderChange, 2 KRaftVersion, 0x80 | mask for Voters.
    fn kind_byte(&self) -> u8 {
        match self.kind {
            Kind::Data => 0,
            Kind::LeaderChange => 1,
            Kind::KRaftVersion => 2,
            Kind::Voters(m) => 0x80 | m.ids(),
        }
    }
}

/// Hashing is the checker's hot path: feed the hasher one packed byte string per value instead of
/// one call per field.
impl Hash for Log {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut buf = [0u8; PACKED_LOG];
        let n = self.pack(&mut buf);
        h.write(&buf[..n]);
    }
}

/// Most bytes [`Log::pack`] writes.
pub const PACKED_LOG: usize = 2 * MAX_LOG + 5 * MAX_LOG + 6;

impl From<Log> for LogRepr {
    fn from(log: Log) -> Self {
        let entries = log.as_slice().to_vec();
        match log.start {
            0 => LogRepr::Plain(entries),
            start => LogRepr::FromSnapshot {
                start,
                snapshot_epoch: log.base_epoch,
                snapshot_voters: log.base_voters,
                entries,
            },
        }
    }
}

impl TryFrom<Vec<Entry>> for Log {
    type Error = String;
    fn try_from(v: Vec<Entry>) -> Result<Self, String> {
        Log::try_from(LogRepr::Plain(v))
    }
}

impl TryFrom<LogRepr> for Log {
    type Error = String;
    fn try_from(r: LogRepr) -> Result<Self, String> {
        let (start, epoch, voters, v) = match r {
            LogRepr::Plain(v) => (0, 0, VoterSet::default(), v),
            LogRepr::FromSnapshot {
                start,
                snapshot_epoch,
                snapshot_voters,
                entries,
            } => (start, snapshot_epoch, snapshot_voters, entries),
        };
        if start as usize + v.len() > MAX_LOG {
            return Err(format!(
                "log of {} entries from offset {start} exceeds MAX_LOG {MAX_LOG}",
                v.len()
            ));
        }
        let mut log = Log::default();
        log.truncate_fully_and_start_at(start, epoch, voters);
        for e in v {
            log.push(e);
        }
        Ok(log)
    }
}

impl Log {
    /// A log holding `entries` (at most [`MAX_LOG`]; extra entries are a caller bug and are dropped).
    pub fn from_slice(entries: &[Entry]) -> Log {
        let mut log = Log::default();
        for e in entries.iter().take(MAX_LOG) {
            log.push(*e);
        }
        log
    }
    /// Log end offset (LEO).
    pub fn len(&self) -> u8 {
        self.len
    }
    /// True if the log holds no entry (at or above its start).
    pub fn is_empty(&self) -> bool {
        self.len == self.start
    }
    /// Log start offset: 0, or the end offset of the snapshot the log begins with.
    pub fn start(&self) -> u8 {
        self.start
    }
    /// The snapshot the log begins with (its id and voter set), `None` while the log starts at 0.
    pub fn base(&self) -> Option<Snapshot> {
        (self.start > 0).then_some(Snapshot {
            id: SnapshotId {
                end: self.start,
                epoch: self.base_epoch,
            },
            voters: self.base_voters,
        })
    }
    /// The entries from the log start to the LEO (entry `k` is at offset `start + k`).
    pub fn as_slice(&self) -> &[Entry] {
        &self.entries[self.start as usize..self.len as usize]
    }
    /// The entries with their offsets, from the log start.
    pub fn iter(&self) -> impl Iterator<Item = (u8, Entry)> + '_ {
        (self.start..self.len).map(|o| (o, self.entries[o as usize]))
    }
    /// The entry at `offset`, if the log holds it (`None` below the log start or at/after the LEO).
    pub fn get(&self, offset: u8) -> Option<Entry> {
        (self.start <= offset && offset < self.len).then(|| self.entries[offset as usize])
    }
    /// Appends one entry; returns false (and changes nothing) when the log is full.
    pub fn push(&mut self, e: Entry) -> bool {
        if (self.len as usize) < MAX_LOG {
            self.entries[self.len as usize] = e;
            self.len += 1;
            true
        } else {
            false
        }
    }
    /// Removes every entry at offset ≥ `end` (never below the log start: the snapshot stays).
    pub fn truncate(&mut self, end: u8) {
        while self.len > end.max(self.start) {
            self.len -= 1;
            self.entries[self.len as usize] = Entry::default();
        }
    }
    /// Kafka's `truncateFullyAndStartAt`: every entry goes, and the log begins with the snapshot
    /// `end`/`epoch`/`voters` (start = LEO = `end`).
    pub fn truncate_fully_and_start_at(&mut self, end: u8, epoch: u8, voters: VoterSet) {
        *self = Log::default();
        self.start = end.min(MAX_LOG as u8);
        self.len = self.start;
        if self.start > 0 {
            self.base_epoch = epoch;
            self.base_voters = voters;
        }
    }
    /// Moves the log start up to the snapshot `snap` (its end at most the LEO): the entries below
    /// it are deleted, the rest stay (Kafka's `deleteBeforeSnapshot`).
    pub fn advance_start(&mut self, snap: Snapshot) {
        let end = snap.id.end.min(self.len);
        if end <= self.start {
            return;
        }
        for e in &mut self.entries[..end as usize] {
            *e = Entry::default();
        }
        self.start = end;
        self.base_epoch = snap.id.epoch;
        self.base_voters = snap.voters;
    }
    /// The entries from `offset` to the end (empty if `offset` ≥ LEO), as a log starting at 0.
    pub fn suffix(&self, offset: u8) -> Log {
        let from = offset.max(self.start) as usize;
        Log::from_slice(self.entries[..self.len as usize].get(from..).unwrap_or(&[]))
    }
    /// Epoch of the last entry; for a log with no entry above its start, the snapshot's epoch (0
    /// without one): Kafka's "last fetched epoch".
    pub fn last_epoch(&self) -> u8 {
        self.as_slice().last().map_or(self.base_epoch, |e| e.epoch)
    }
    /// Writes length, entries and the log start (with its snapshot) as bytes into `buf`; returns
    /// the bytes used.
    pub fn pack(&self, buf: &mut [u8]) -> usize {
        buf[0] = self.len;
        for (i, e) in self.entries[..self.len as usize].iter().enumerate() {
            buf[1 + 2 * i] = e.epoch;
            buf[2 + 2 * i] = e.kind_byte();
        }
        let mut n = 1 + 2 * self.len as usize;
        // Directory ids only where one is not 0, so that logs without a disk loss hash as before;
        // the offset tags each pair.
        for (o, e) in self.entries[..self.len as usize].iter().enumerate() {
            if let Kind::Voters(v) = e.kind {
                if v.dirs() != 0 {
                    let [d0, d1] = v.dirs().to_le_bytes();
                    buf[n..n + 3].copy_from_slice(&[0xC0 | o as u8, d0, d1]);
                    n += 3;
                }
                if v.unknown_dirs() != 0 {
                    buf[n..n + 2].copy_from_slice(&[0xE0 | o as u8, v.unknown_dirs()]);
                    n += 2;
                }
            }
        }
        if self.start == 0 {
            return n;
        }
        let [d0, d1] = self.base_voters.dirs().to_le_bytes();
        buf[n..n + 5].copy_from_slice(&[
            self.start,
            self.base_epoch,
            self.base_voters.ids(),
            d0,
            d1,
        ]);
        n + 5
    }
    /// Mutable access to the live entries (used by symmetry to rewrite voter masks).
    pub fn as_mut_slice(&mut self) -> &mut [Entry] {
        &mut self.entries[self.start as usize..self.len as usize]
    }
    /// Mutable access to the voter set of the snapshot the log begins with (symmetry).
    pub fn base_voters_mut(&mut self) -> &mut VoterSet {
        &mut self.base_voters
    }
}

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

/// A membership operation, as requested by an operator at some server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ChangeOp {
    /// AddRaftVoter (API 80).
    Add(Id),
    /// RemoveRaftVoter (API 81).
    Remove(Id),
    /// UpdateRaftVoter (API 82) from voter `id` (its endpoints changed): a VotersRecord with the same
    /// voters, the endpoints abstracted away. Answered at once, not at commit (Kafka's
    /// `UpdateVoterHandler`), so it is never a [`PendingChange`].
    Update(Id),
    /// Bug variant `swap-voter` only: one VotersRecord that removes `out` and adds `add`.
    Swap {
        /// Voter removed.
        out: Id,
        /// Voter added.
        add: Id,
    },
    /// UpdateFeatures (API 57) `kraft.version` = 1: the upgrade from static to dynamic voters
    /// (`crate::kraft_version`). Answered NONE once the HW passes its batch.
    KraftVersionUpgrade,
}

/// The leader's pending add/remove: the operation and the offset of its VotersRecord.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PendingChange {
    /// The operation being committed.
    pub op: ChangeOp,
    /// Offset of its VotersRecord; the reply NONE is sent once HW > offset.
    pub offset: u8,
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

fn is_zero(m: &Mask) -> bool {
    *m == 0
}

fn no_voters(v: &VoterSet) -> bool {
    v.is_empty()
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

fn opt(v: Option<u8>) -> u8 {
    v.map_or(0xFF, |x| x)
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

/// The body of a Fetch response, as in Kafka's `FetchResponse` partition data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FetchResponse {
    /// The request this answers (correlation).
    pub request: FetchKey,
    /// Partition error: NONE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER.
    pub error: ErrorCode,
    /// `CurrentLeader.LeaderEpoch`: the responder's epoch.
    pub leader_epoch: u8,
    /// `CurrentLeader.LeaderId`, if the responder knows one.
    pub leader_id: Option<Id>,
    /// `HighWatermark`, `None` = −1.
    pub high_watermark: Option<u8>,
    /// `DivergingEpoch` {epoch, end offset}; when set, `records` is empty.
    pub diverging: Option<(u8, u8)>,
    /// Records from the fetch offset to the leader's LEO (the whole suffix, batched).
    pub records: Log,
    /// `SnapshotId`: the fetch is below the leader's log start (or at 0 while the leader holds a
    /// snapshot); the follower is to FetchSnapshot it. Then `records` is empty and `diverging` unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<SnapshotId>,
}

/// Protocol messages. The sender and receiver are in the [`Envelope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// Vote request from candidate `src`.
    VoteRequest {
        /// Candidate epoch.
        epoch: u8,
        /// `VoterDirectoryId`: the receiver's directory id in the candidate's latest set (the
        /// request is meant for the key (dst, this)).
        #[serde(default, skip_serializing_if = "is_zero")]
        voter_dir: u8,
        /// Epoch of the candidate's last record.
        last_epoch: u8,
        /// Candidate LEO (`LastOffset`).
        last_offset: u8,
    },
    /// KIP-996 pre-vote request (Vote v2 with `PreVote` true) from prospective `src`, at its current
    /// epoch. The answer is an ordinary [`Msg::VoteResponse`] (Kafka's response has no pre-vote flag).
    PreVoteRequest {
        /// The prospective's current epoch (not incremented).
        epoch: u8,
        /// `VoterDirectoryId`, as in [`Msg::VoteRequest`].
        #[serde(default, skip_serializing_if = "is_zero")]
        voter_dir: u8,
        /// Epoch of its last record.
        last_epoch: u8,
        /// Its LEO.
        last_offset: u8,
    },
    /// Vote response.
    VoteResponse {
        /// Responder's epoch after handling the request.
        epoch: u8,
        /// Vote granted.
        granted: bool,
        /// NONE or FENCED_LEADER_EPOCH.
        error: ErrorCode,
        /// `LeaderId`: the leader the responder knows in its epoch (Kafka's `leaderIdOrSentinel`).
        leader: Option<Id>,
    },
    /// New leader `src` of `epoch` announces itself to the other voters.
    BeginQuorumEpoch {
        /// Leader epoch.
        epoch: u8,
        /// `VoterDirectoryId`: the receiver's directory id in the leader's latest set. Kafka checks it
        /// after following the leader and answers INVALID_VOTER_KEY; the answer is not modelled, so
        /// a mismatch changes nothing at the receiver.
        #[serde(default, skip_serializing_if = "is_zero")]
        voter_dir: u8,
    },
    /// Leader `src` of `epoch` resigned.
    EndQuorumEpoch {
        /// Leader epoch.
        epoch: u8,
    },
    /// Fetch request (async mode only; sync mode folds request and response into one action).
    FetchRequest(FetchKey),
    /// Fetch response (async mode only).
    FetchResponse(FetchResponse),
}

/// A message in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Envelope {
    /// Sender.
    pub src: Id,
    /// Receiver.
    pub dst: Id,
    /// Content.
    pub msg: Msg,
}

/// Like the other state types: one packed byte string per envelope (every field, so equal envelopes
/// hash equally) instead of one hasher call per field.
impl Hash for Envelope {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut buf = [0u8; 15 + PACKED_LOG];
        buf[0] = self.src;
        buf[1] = self.dst;
        let key = |k: FetchKey| [k.epoch, k.fetch_offset, k.last_fetched_epoch];
        let fixed: [u8; 13] = match self.msg {
            Msg::VoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            } => [
                0,
                epoch,
                last_epoch,
                last_offset,
                voter_dir,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
            ],
            Msg::PreVoteRequest {
                epoch,
                voter_dir,
                last_epoch,
                last_offset,
            } => [
                1,
                epoch,
                last_epoch,
                last_offset,
                voter_dir,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
            ],
            Msg::VoteResponse {
                epoch,
                granted,
                error,
                leader,
            } => [
                2,
                epoch,
                granted as u8,
                error as u8,
                opt(leader),
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
            ],
            Msg::BeginQuorumEpoch { epoch, voter_dir } => {
                [3, epoch, voter_dir, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
            }
            Msg::EndQuorumEpoch { epoch } => [4, epoch, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            Msg::FetchRequest(k) => {
                let [a, b, c] = key(k);
                [5, a, b, c, k.replica_dir, 0, 0, 0, 0, 0, 0, 0, 0]
            }
            Msg::FetchResponse(r) => {
                let [a, b, c] = key(r.request);
                let (d, de, dn) = r.diverging.map_or((0, 0, 0), |(e, o)| (1, e, o));
                let d = d | (r.request.replica_dir << 1);
                [
                    6,
                    a,
                    b,
                    c,
                    r.error as u8,
                    r.leader_epoch,
                    opt(r.leader_id),
                    opt(r.high_watermark),
                    d,
                    de,
                    dn,
                    opt(r.snapshot_id.map(|i| i.end)),
                    opt(r.snapshot_id.map(|i| i.epoch)),
                ]
            }
        };
        buf[2..15].copy_from_slice(&fixed);
        let mut n = 15;
        if let Msg::FetchResponse(r) = &self.msg {
            n += r.records.pack(&mut buf[n..]);
        }
        h.write(&buf[..n]);
    }
}

/// Every step the model can take. Each maps to one input of the implementation (Fetch in sync mode: a
/// fixed request/response sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Election timer of a non-leader voter (Unattached, Candidate) or of a Resigned replica.
    ElectionTimeout(Id),
    /// Fetch timer of a Follower: a voter becomes Candidate; an observer whose leader is gone becomes
    /// Unattached.
    FetchTimeout(Id),
    /// Check-quorum expiry: the leader resigns.
    CheckQuorumTimeout(Id),
    /// The leader's pending add/remove times out (REQUEST_TIMED_OUT; the record stays).
    ChangeTimeout(Id),
    /// A leader whose own removal is committed resigns (Kafka: `requestResign`, applied at the
    /// leader's next poll, before it serves anything else).
    Resign(Id),
    /// Crash and restart: volatile state lost, durable state kept.
    Restart(Id),
    /// The server's disk is replaced: it restarts with an empty log, epoch 0, no vote and a new
    /// directory id (a freshly formatted replica under the same node id), an observer of the
    /// bootstrap set until an operator makes its new key a voter.
    DiskLoss(Id),
    /// A client append at a server (only a leader accepts).
    ClientAppend(Id),
    /// An operator's AddRaftVoter / RemoveRaftVoter (or the swap bug) sent to `server`.
    Change {
        /// Server receiving the request.
        server: Id,
        /// The operation.
        op: ChangeOp,
    },
    /// `replica` fetches from `leader`. Sync mode: request, leader handling and response at once.
    /// Async mode: sends the FetchRequest.
    Fetch {
        /// Fetcher.
        replica: Id,
        /// Leader it fetches from.
        leader: Id,
    },
    /// Deliver one message.
    Deliver(Envelope),
    /// Lose one message (lossy network only).
    Drop(Envelope),
    /// Replica `i` snapshots its state at its HW (Kafka's `SnapshotGenerator`, on every replica).
    TakeSnapshot(Id),
    /// Replica `i`'s log start moves up to its latest snapshot's end offset (Kafka's
    /// `maybeClean` → `deleteBeforeSnapshot`).
    AdvanceLogStart(Id),
    /// `replica` downloads the snapshot its leader pointed it to (FetchSnapshot, request and answer
    /// in one step, all chunks) and installs it: its log is truncated fully and starts at the
    /// snapshot. Sync fetch only.
    FetchSnapshot {
        /// Fetcher.
        replica: Id,
        /// Leader it fetches from.
        leader: Id,
    },
    /// An operator's UpdateFeatures `kraft.version` = 1 sent to server `i` (`--start static`): the
    /// leader appends KRaftVersion(1) and the VotersRecord in one batch (`crate::kraft_version`).
    UpgradeKraftVersion(Id),
    /// An observer with auto-join (`--auto-join`) sends its leader the request
    /// [`crate::step::KraftModel::auto_join_request`] names, and the leader handles it, in one
    /// step (`src/step/auto_join.rs`).
    AutoJoin {
        /// The observer.
        replica: Id,
        /// The leader it follows.
        leader: Id,
    },
}

/// An answer to an operator request, produced by a step (not part of the state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reply {
    /// Server that answers.
    pub server: Id,
    /// The operation answered.
    pub op: ChangeOp,
    /// Kafka error code.
    pub error: ErrorCode,
}

/// Bits of [`History::violations`]: transition-level property failures.
pub mod violation {
    /// A leader advanced its HW over an entry that conflicts with an already committed one.
    pub const CONFLICTING_COMMIT: u16 = 1;
    /// A replica truncated an entry below its own HW.
    pub const TRUNCATION_BELOW_HW: u16 = 2;
    /// A replica's known HW decreased.
    pub const HW_DECREASED: u16 = 4;
    /// A replica's reported committed voter set moved backwards in its history.
    pub const COMMITTED_VOTERS_REGRESSED: u16 = 8;
    /// A replica took a snapshot holding an offset at or above its HW.
    pub const SNAPSHOT_ABOVE_HW: u16 = 16;
    /// After an install, the follower's committed voter set differed from the leader's voter set at
    /// the same offset.
    pub const INSTALL_VOTERS_DIFFER: u16 = 32;
    /// A replica's grant or fetch counted toward a majority under a voter key it does not hold (a
    /// vote or pre-vote granted to a request meant for another directory id, a fetch recorded in
    /// the state of a voter key with another directory id).
    pub const KEY_NOT_HELD_COUNTED: u16 = 64;
}

/// Bits of [`History::events`]: past events some `sometimes` property looks for.
pub mod event {
    /// A replica truncated away a VotersRecord that changed the voter set.
    pub const VOTERS_RECORD_TRUNCATED: u8 = 1;
    /// A leader resigned on check-quorum expiry while a majority of its other voters had moved to a
    /// later epoch (it was cut off from its quorum).
    pub const CUT_OFF_LEADER_RESIGNED: u8 = 2;
    /// A follower that had fetched from its leader refused a pre-vote.
    pub const PRE_VOTE_REFUSED_BY_FOLLOWER: u8 = 4;
    /// A prospective won a pre-vote majority and became candidate.
    pub const PRE_VOTE_WON: u8 = 8;
    /// A follower installed a snapshot from its leader.
    pub const SNAPSHOT_INSTALLED: u8 = 16;
    /// A replica's log start moved up to a snapshot.
    pub const LOG_START_MOVED: u8 = 32;
    /// A replica restarted while downloading a snapshot (the partial download is lost).
    pub const CRASH_DURING_INSTALL: u8 = 64;
}

/// Ghost (history) variables: part of the state, never read by the protocol itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// `leaders[e]`: who became leader in epoch `e` (ElectionSafety wants ≤ 1 bit).
    pub leaders: [Mask; 16],
    /// The longest prefix ever committed by a leader: entry and the epoch of the leader that first
    /// committed it.
    pub committed: CommittedLog,
    /// The committed voter set with the greatest offset ever reported by a leader:
    /// (leader epoch, VotersRecord offset or −1 for the bootstrap set, set).
    pub max_reported: Option<(u8, i8, VoterSet)>,
    /// Membership changes appended so far (bound).
    pub changes: u8,
    /// Data records appended so far (bound).
    pub data: u8,
    /// Restarts so far (bound).
    pub crashes: u8,
    /// Snapshots taken so far (bound).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub snapshots: u8,
    /// Disk losses so far (bound).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub disk_losses: u8,
    /// Transition-level violations ([`violation`] bits).
    pub violations: u16,
    /// Past events ([`event`] bits). Not hashed: they feed only `sometimes` properties, so leaving
    /// them out of the fingerprint can only hide an example (a reported failure), never a violation.
    pub events: u8,
    /// Pre-vote only: bit `e` = epoch `e` was opened by an election (a candidate, which needs a
    /// pre-vote majority) or by Kafka's bump of a resigned replica. In a correct run it is always
    /// `0..=max epoch`, a function of the servers' epochs, so hashing it adds no state.
    #[serde(default, skip_serializing_if = "is_zero16")]
    pub opened: u16,
    /// Auto-join: the VotersRecords acknowledged at append.
    #[serde(default, skip_serializing_if = "AppendAcks::is_empty")]
    pub append_acks: AppendAcks,
}

fn is_zero16(m: &u16) -> bool {
    *m == 0
}

fn is_zero32(m: &u32) -> bool {
    *m == 0
}

impl Hash for History {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut buf = [0u8; 16 + 3 * MAX_LOG + 1 + 12 + 5 * (MAX_LOG + 1) + 1 + 2 * MAX_ACKS];
        buf[..16].copy_from_slice(&self.leaders);
        let mut n = 16;
        buf[n] = self.committed.len;
        n += 1;
        for (e, ce) in self.committed.iter() {
            buf[n..n + 3].copy_from_slice(&[e.epoch, e.kind_byte(), *ce]);
            n += 3;
        }
        let (me, mo, ms) = self
            .max_reported
            .map_or((0xFF, 0x7F, 0), |(e, o, m)| (e, o as u8, m.ids()));
        let [v0, v1] = self.violations.to_le_bytes();
        let [o0, o1] = self.opened.to_le_bytes();
        let tail = [
            me,
            mo,
            ms,
            self.changes,
            self.data,
            self.crashes,
            v0,
            v1,
            o0,
            o1,
            self.snapshots,
            self.disk_losses,
        ];
        buf[n..n + tail.len()].copy_from_slice(&tail);
        n += tail.len();
        // Directory ids only where one is not 0 (states without a disk loss hash as they did).
        let reported = self.max_reported.map(|(_, _, m)| m);
        let sets = self.committed.iter().map(|(e, _)| e.kind);
        for (o, kind) in sets
            .chain([reported.map_or(Kind::Data, Kind::Voters)])
            .enumerate()
        {
            if let Kind::Voters(v) = kind {
                if v.dirs() != 0 {
                    let [d0, d1] = v.dirs().to_le_bytes();
                    buf[n..n + 3].copy_from_slice(&[0xC0 | o as u8, d0, d1]);
                    n += 3;
                }
                if v.unknown_dirs() != 0 {
                    buf[n..n + 2].copy_from_slice(&[0xE0 | o as u8, v.unknown_dirs()]);
                    n += 2;
                }
            }
        }
        // Only once an auto-join was acknowledged (states without one hash as they did).
        if !self.append_acks.is_empty() {
            n += self.append_acks.pack(&mut buf[n..]);
        }
        h.write(&buf[..n]);
    }
}

/// The globally committed prefix: entries with the epoch of the leader that first committed them.
/// Fixed-size (no allocation per state); reads as a slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Vec<(Entry, u8)>", try_from = "Vec<(Entry, u8)>")]
pub struct CommittedLog {
    entries: [(Entry, u8); MAX_LOG],
    len: u8,
}

impl CommittedLog {
    /// Appends one committed entry (ignored past [`MAX_LOG`], which no bounded run reaches).
    pub fn push(&mut self, e: (Entry, u8)) {
        if (self.len as usize) < MAX_LOG {
            self.entries[self.len as usize] = e;
            self.len += 1;
        }
    }
}

impl std::ops::Deref for CommittedLog {
    type Target = [(Entry, u8)];
    fn deref(&self) -> &[(Entry, u8)] {
        &self.entries[..self.len as usize]
    }
}

impl std::ops::DerefMut for CommittedLog {
    fn deref_mut(&mut self) -> &mut [(Entry, u8)] {
        &mut self.entries[..self.len as usize]
    }
}

impl From<CommittedLog> for Vec<(Entry, u8)> {
    fn from(c: CommittedLog) -> Self {
        c.to_vec()
    }
}

impl TryFrom<Vec<(Entry, u8)>> for CommittedLog {
    type Error = String;
    fn try_from(v: Vec<(Entry, u8)>) -> Result<Self, String> {
        if v.len() > MAX_LOG {
            return Err(format!(
                "committed prefix of {} entries exceeds {MAX_LOG}",
                v.len()
            ));
        }
        let mut c = CommittedLog::default();
        for e in v {
            c.push(e);
        }
        Ok(c)
    }
}

/// The whole model state: servers, the network (a sorted multiset of envelopes) and history.
/// `Debug` (implemented in `story.rs`) prints it the way the counterexample story does (the Explorer
/// shows states with `{:#?}`).
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct State {
    /// The bootstrap voter set (offset −1); constant, kept here so symmetry knows which ids may be
    /// permuted with which.
    pub bootstrap: Mask,
    /// Server `i` is `servers[i]`.
    pub servers: Vec<Server>,
    /// Messages in flight, sorted (a multiset; a set on a duplicating network).
    pub network: Vec<Envelope>,
    /// Ghost variables for the properties.
    pub history: History,
}
