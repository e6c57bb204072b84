//! The model's vocabulary: server state, log entries, messages, actions and ghost history.
//!
//! Everything is small and fixed-size (u8 offsets and epochs, bitmask voter sets) so that states hash
//! and clone fast; the JSON form (serde) is what `traces` writes and conformance reads.

use serde::{Deserialize, Serialize};
use std::hash::Hash;

pub use crate::auto_join::{AppendAcks, AutoJoinRequest, MAX_ACKS};
pub use crate::voter_set::{VoterSet, MAX_DIRS, NO_DIR};

mod action;
mod history;
mod log;
mod message;
mod server;

pub use self::log::{Log, Snapshot, SnapshotId, PACKED_LOG};
pub use action::{Action, ChangeOp, PendingChange, Reply};
pub use history::{event, violation, CommittedLog, History};
pub use message::{Envelope, FetchResponse, Msg};
pub use server::{FetchKey, Role, Server};

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

/// Serde helpers: fields at their default are left out of traces.
fn is_zero(m: &Mask) -> bool {
    *m == 0
}

fn no_voters(v: &VoterSet) -> bool {
    v.is_empty()
}

/// An optional byte packed for hashing (0xFF = none).
fn opt(v: Option<u8>) -> u8 {
    v.map_or(0xFF, |x| x)
}

fn is_zero16(m: &u16) -> bool {
    *m == 0
}

fn is_zero32(m: &u32) -> bool {
    *m == 0
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
