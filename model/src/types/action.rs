//! The steps the model takes, and the operator requests and replies some of them carry.

use super::{Envelope, ErrorCode, Id};
use serde::{Deserialize, Serialize};

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
    /// A second copy of a message in flight (`--duplicates N`, at most N in a run): a request the
    /// sender retried on a timeout, and so the receiver's duplicated answer. Delivery still removes
    /// one copy at a time (`src/step/network.rs`, `Tx::duplicate`).
    Duplicate(Envelope),
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
