//! The plain data of the log: records, batches, replicated batches and snapshot ids. A leaf: the log
//! (`log`) holds them and `records` encodes them, and neither needs the other for these types.

use bytes::Bytes;

use crate::time::WallMillis;
use crate::voter_set::VoterSet;

/// A record as the core sees it. Control records live in control batches, data records in data batches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A client record (opaque value).
    Data(Bytes),
    /// LeaderChangeMessage, control type 2, written first in every new leader's epoch.
    LeaderChange {
        leader_id: i32,
        voters: Vec<i32>,
        granting_voters: Vec<i32>,
    },
    /// KRaftVersionRecord, control type 5.
    KRaftVersion(i16),
    /// VotersRecord, control type 6: the voter set that takes effect at this offset.
    Voters(VoterSet),
}

/// A batch: consecutive records that share one leader epoch, starting at `base_offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub base_offset: i64,
    pub epoch: i32,
    /// CreateTime: the leader's wall clock when it appended the batch, written as the batch's first and
    /// max timestamp with every record's timestamp delta 0, as Kafka's `BatchBuilder` writes its
    /// `appendTime`. Decoded, the batch's MaxTimestamp (Kafka's `Batch.appendTimestamp()`).
    pub append_time: WallMillis,
    pub records: Vec<Record>,
}

impl Batch {
    /// The offset after the last record of this batch.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + self.records.len() as i64
    }
}

/// A batch replicated from the leader, with the bytes it arrived as: one Kafka record batch exactly as the
/// leader stored it, or `None` when the batch was cut (records below the follower's LEO dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replicated {
    pub batch: Batch,
    pub bytes: Option<Bytes>,
}

/// A snapshot's id: the offset after its last contained record and that record's epoch (Kafka's
/// `OffsetAndEpoch` of a snapshot, its file name `%020d-%010d.checkpoint`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct SnapshotId {
    pub end_offset: i64,
    pub epoch: i32,
}

impl SnapshotId {
    /// The bootstrap snapshot written at format time (`00000000000000000000-0000000000.checkpoint`): never
    /// replicated, never a reason to point a replica to a snapshot.
    pub const BOOTSTRAP: SnapshotId = SnapshotId {
        end_offset: 0,
        epoch: 0,
    };
}

impl std::fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(end offset {}, epoch {})", self.end_offset, self.epoch)
    }
}

/// What a stored snapshot is, as far as the core needs it: its id, its size in bytes and what its
/// control records say (kraft.version and the voter set, both as of offset `end_offset − 1`; `voters` is
/// `None` when it has no VotersRecord, as at kraft.version 0).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotMeta {
    pub id: SnapshotId,
    pub size: u64,
    pub kraft_version: i16,
    pub voters: Option<VoterSet>,
    /// SnapshotHeader `LastContainedLogTimestamp`: the append time of the last batch it contains
    /// (retention by `metadata.max.retention.ms` measures the snapshot's age from it, as Kafka does).
    pub last_contained_log_timestamp: WallMillis,
}
