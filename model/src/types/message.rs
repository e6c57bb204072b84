//! Protocol messages and the envelopes that carry them through the network.

use super::{is_zero, opt, ErrorCode, FetchKey, Id, Log, SnapshotId, PACKED_LOG};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

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
