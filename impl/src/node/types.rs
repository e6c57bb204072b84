//! The node's public types: its inputs, outputs, configuration, errors, timers and view.

use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse,
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, DescribeClusterRequest,
    DescribeClusterResponse, EndQuorumEpochRequest, EndQuorumEpochResponse, FetchRequest,
    FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, RemoveRaftVoterRequest,
    RemoveRaftVoterResponse, UpdateFeaturesRequest, UpdateFeaturesResponse, UpdateRaftVoterRequest,
    UpdateRaftVoterResponse, VoteRequest, VoteResponse,
};
use uuid::Uuid;

use super::membership::ChangeOutcome;
use crate::history::HistoryError;
use crate::log::{LogError, Replicated, SnapshotId};
use crate::voter_set::{Endpoint, ReplicaKey, VoterSet};
use crate::wire::describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};

pub use crate::time::{Millis, WallMillis};

/// Raft messages between voters and observers: kafka-protocol structs, so the shell only frames bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    VoteRequest(VoteRequest),
    VoteResponse(VoteResponse),
    BeginQuorumEpochRequest(BeginQuorumEpochRequest),
    BeginQuorumEpochResponse(BeginQuorumEpochResponse),
    EndQuorumEpochRequest(EndQuorumEpochRequest),
    EndQuorumEpochResponse(EndQuorumEpochResponse),
    FetchRequest(FetchRequest),
    FetchResponse(FetchResponse),
    /// KIP-630, API 59 (v0–1, sent at v1). The core's response names the chunk to send but carries no
    /// bytes: the shell fills them from the snapshot file ([`fill_snapshot_chunk`](super::fill_snapshot_chunk)).
    FetchSnapshotRequest(FetchSnapshotRequest),
    FetchSnapshotResponse(FetchSnapshotResponse),
    /// The leader asks a voter being added which `kraft.version` range it supports (KIP-853). The shell
    /// decodes one a peer sends as [`ClientRequest::ApiVersions`]; `Node::handle` also answers it.
    ApiVersionsRequest(ApiVersionsRequest),
    ApiVersionsResponse(ApiVersionsResponse),
    /// A follower that is a voter asks the leader to update its own entry (KIP-853, `update_voter.rs`).
    /// The shell decodes one a peer sends as [`ClientRequest::UpdateRaftVoter`]; `Node::handle` also
    /// answers it.
    UpdateRaftVoterRequest(UpdateRaftVoterRequest),
    UpdateRaftVoterResponse(UpdateRaftVoterResponse),
    /// An observer with auto-join asks the leader to add it (KIP-1186, `auto_join.rs`; sent at v1 with
    /// `AckWhenCommitted = false`). The shell decodes one a peer sends as [`ClientRequest::AddRaftVoter`].
    AddRaftVoterRequest(AddRaftVoterRequest),
    AddRaftVoterResponse(AddRaftVoterResponse),
    /// An observer with auto-join asks the leader to remove the voter with its id and another directory
    /// id (`auto_join.rs`). The shell decodes one a peer sends as [`ClientRequest::RemoveRaftVoter`].
    RemoveRaftVoterRequest(RemoveRaftVoterRequest),
    RemoveRaftVoterResponse(RemoveRaftVoterResponse),
}

impl Message {
    /// The API this message belongs to (a request and its response share it).
    pub fn api_key(&self) -> ApiKey {
        match self {
            Message::VoteRequest(_) | Message::VoteResponse(_) => ApiKey::Vote,
            Message::BeginQuorumEpochRequest(_) | Message::BeginQuorumEpochResponse(_) => {
                ApiKey::BeginQuorumEpoch
            }
            Message::EndQuorumEpochRequest(_) | Message::EndQuorumEpochResponse(_) => {
                ApiKey::EndQuorumEpoch
            }
            Message::FetchRequest(_) | Message::FetchResponse(_) => ApiKey::Fetch,
            Message::FetchSnapshotRequest(_) | Message::FetchSnapshotResponse(_) => {
                ApiKey::FetchSnapshot
            }
            Message::ApiVersionsRequest(_) | Message::ApiVersionsResponse(_) => ApiKey::ApiVersions,
            Message::UpdateRaftVoterRequest(_) | Message::UpdateRaftVoterResponse(_) => {
                ApiKey::UpdateRaftVoter
            }
            Message::AddRaftVoterRequest(_) | Message::AddRaftVoterResponse(_) => {
                ApiKey::AddRaftVoter
            }
            Message::RemoveRaftVoterRequest(_) | Message::RemoveRaftVoterResponse(_) => {
                ApiKey::RemoveRaftVoter
            }
        }
    }

    /// The answer of this request's kind carrying only a top-level `code` (`None` for a response): what a
    /// request that is refused or cannot be sent is answered with.
    pub fn error_answer(&self, code: i16) -> Option<Message> {
        Some(match self {
            Message::VoteRequest(_) => {
                Message::VoteResponse(VoteResponse::default().with_error_code(code))
            }
            Message::BeginQuorumEpochRequest(_) => Message::BeginQuorumEpochResponse(
                BeginQuorumEpochResponse::default().with_error_code(code),
            ),
            Message::EndQuorumEpochRequest(_) => Message::EndQuorumEpochResponse(
                EndQuorumEpochResponse::default().with_error_code(code),
            ),
            Message::FetchRequest(_) => {
                Message::FetchResponse(FetchResponse::default().with_error_code(code))
            }
            Message::FetchSnapshotRequest(_) => Message::FetchSnapshotResponse(
                FetchSnapshotResponse::default().with_error_code(code),
            ),
            Message::ApiVersionsRequest(_) => {
                Message::ApiVersionsResponse(ApiVersionsResponse::default().with_error_code(code))
            }
            Message::UpdateRaftVoterRequest(_) => Message::UpdateRaftVoterResponse(
                UpdateRaftVoterResponse::default().with_error_code(code),
            ),
            Message::AddRaftVoterRequest(_) => {
                Message::AddRaftVoterResponse(AddRaftVoterResponse::default().with_error_code(code))
            }
            Message::RemoveRaftVoterRequest(_) => Message::RemoveRaftVoterResponse(
                RemoveRaftVoterResponse::default().with_error_code(code),
            ),
            _ => return None,
        })
    }

    /// A request (else a response).
    pub fn is_request(&self) -> bool {
        matches!(
            self,
            Message::VoteRequest(_)
                | Message::BeginQuorumEpochRequest(_)
                | Message::EndQuorumEpochRequest(_)
                | Message::FetchRequest(_)
                | Message::FetchSnapshotRequest(_)
                | Message::ApiVersionsRequest(_)
                | Message::UpdateRaftVoterRequest(_)
                | Message::AddRaftVoterRequest(_)
                | Message::RemoveRaftVoterRequest(_)
        )
    }
}

/// Identifies a client request so its reply can be routed back by the shell.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ClientId(pub u64);

/// Requests from admin clients and operators (answered through `Output::client_replies`).
#[derive(Clone, Debug, PartialEq)]
pub enum ClientRequest {
    ApiVersions(ApiVersionsRequest),
    DescribeQuorum {
        version: i16,
        request: DescribeQuorumRequest,
    },
    /// AddRaftVoter; `ack_when_committed` is v1's `AckWhenCommitted` (KIP-1186; true below v1): false
    /// answers once the VotersRecord is appended, true once it is committed.
    AddRaftVoter {
        request: AddRaftVoterRequest,
        ack_when_committed: bool,
    },
    RemoveRaftVoter(RemoveRaftVoterRequest),
    UpdateRaftVoter(UpdateRaftVoterRequest),
    /// KIP-919: how Kafka's admin client finds the active controller.
    DescribeCluster {
        version: i16,
        request: DescribeClusterRequest,
    },
    /// UpdateFeatures (API 57) at `version` (0–2): `kraft.version` only (`kraft_version.rs`).
    UpdateFeatures {
        version: i16,
        request: UpdateFeaturesRequest,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ClientResponse {
    ApiVersions(ApiVersionsResponse),
    DescribeQuorum(DescribeQuorumResponse),
    AddRaftVoter(AddRaftVoterResponse),
    RemoveRaftVoter(RemoveRaftVoterResponse),
    UpdateRaftVoter(UpdateRaftVoterResponse),
    DescribeCluster(DescribeClusterResponse),
    UpdateFeatures(UpdateFeaturesResponse),
}

/// Election state that must be durable before the messages that depend on it leave the node
/// (Kafka's `quorum-state` file).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElectionState {
    pub epoch: i32,
    pub voted: Option<ReplicaKey>,
    pub leader_id: Option<i32>,
}

/// Storage work for the shell, in order. The messages and client replies of an output may only be sent
/// once every effect of that output and of every earlier output is durable (persist before send).
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Write the election state atomically and durably.
    PersistElectionState(ElectionState),
    /// Append these batches to the durable log, each as its bytes when given (a replicated batch as it
    /// arrived), else encoded. They continue the durable log exactly as they continue the core's view.
    AppendLog(Vec<Replicated>),
    /// Remove every record at offset ≥ this one from the durable log, durably (Kafka's truncation).
    TruncateLog(i64),
    /// Make every appended batch durable: the log below `up_to`, its end when asked (flushes may share
    /// one `fsync`).
    FlushLog { up_to: i64 },
    /// Follower download (KIP-630): write `bytes` at `position` of snapshot `id`'s `.checkpoint.part`
    /// file; position 0 creates (or empties) it. `position` always equals the bytes written so far.
    WriteSnapshotChunk {
        id: SnapshotId,
        position: u64,
        bytes: bytes::Bytes,
    },
    /// The download of `id` is abandoned (Kafka closes the unfrozen writer): delete its `.part` file.
    AbortSnapshotDownload { id: SnapshotId },
    /// The download of `id` is complete at `size` bytes: make the `.part` durable, validate the whole
    /// file, rename it to `.checkpoint`, truncate the log fully and start it at `id.end_offset`, then
    /// hand the outcome to [`Node::snapshot_loaded`](super::Node::snapshot_loaded) (a refused file is
    /// deleted, not loaded, and the log is left alone).
    CompleteSnapshot { id: SnapshotId, size: u64 },
    /// Write a snapshot of this replica's own log up to `id.end_offset` (≤ its HW, a batch boundary): the
    /// header (its LastContainedLogTimestamp `last_contained_log_timestamp`, the append time of the batch
    /// ending at `id.end_offset`), `kraft_version` and `voters` (as of `id.end_offset − 1`) when
    /// kraft.version ≥ 1, the data records, the footer, every batch stamped `append_time` (the wall clock
    /// now, as Kafka's snapshot writer stamps its batches); then hand the outcome to
    /// [`Node::snapshot_taken`](super::Node::snapshot_taken).
    TakeSnapshot {
        id: SnapshotId,
        last_contained_log_timestamp: WallMillis,
        kraft_version: i16,
        voters: Option<VoterSet>,
        append_time: WallMillis,
    },
    /// Kafka's `deleteBeforeSnapshot`: the log starts at `offset` (a held snapshot's end) from now on;
    /// delete the segments wholly below it and the snapshots that end below it.
    MoveLogStart { offset: i64 },
}

/// Everything one input produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub effects: Vec<Effect>,
    /// Responses to peer requests this node was handed: (requester, response). The core answers every
    /// request once; one requester's requests of one API are answered in the order they came, a Vote,
    /// BeginQuorumEpoch or EndQuorumEpoch in the output of the same input, a Fetch possibly later.
    pub replies: Vec<(i32, Message)>,
    /// New requests to peers: (destination node id, request).
    pub requests: Vec<(i32, Message)>,
    pub client_replies: Vec<(ClientId, ClientResponse)>,
    /// Transitions the core refused (the node kept its state); the shell logs them.
    pub refused: Vec<StepError>,
}

/// A transition the core refuses rather than take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum StepError {
    /// The epoch is `i32::MAX`: no later epoch exists, so this replica cannot start an election (or,
    /// as a removed leader, move past its epoch). Kafka's `epoch() + 1` would wrap to `i32::MIN`; the
    /// bump is refused instead and the replica keeps its role, trying again after another timeout.
    #[error(
        "epoch {epoch} is i32::MAX: no later epoch exists, the increment is refused (never wrapped); \
         no election can succeed in this quorum any more"
    )]
    EpochExhausted { epoch: i32 },
}

/// How the node learns its first voter set.
#[derive(Clone, Debug, PartialEq)]
pub enum Bootstrap {
    /// `kraft.version` 0: a configured static set, no VotersRecord; membership changes are refused.
    Static(VoterSet),
    /// `kraft.version` 1: the formatted bootstrap checkpoint, a voter set at offset −1.
    Checkpoint(VoterSet),
    /// `kraft.version` 1 without a voter set (Kafka's `kafka-storage format --no-initial-controllers`): an
    /// observer that finds the quorum through [`NodeConfig::bootstrap_servers`] and learns the voters from
    /// the replicated VotersRecord.
    NoInitialVoters,
}

/// Static configuration of a node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    pub cluster_id: String,
    pub node_id: i32,
    pub directory_id: Uuid,
    /// This node's listeners; the first is the default listener (sent in BeginQuorumEpoch, AddRaftVoter).
    pub listeners: Vec<Endpoint>,
    pub bootstrap: Bootstrap,
    /// Kafka's `controller.quorum.bootstrap.servers`: where an observer that knows no leader sends its
    /// Fetch, as peers −2, −3, … (Kafka's ids for them; see [`bootstrap_server_id`]). Empty: the voters of
    /// its latest set instead. Required with [`Bootstrap::NoInitialVoters`].
    pub bootstrap_servers: Vec<Endpoint>,
    /// Election timeout base; the actual timeout is drawn from [base, 2·base) with the seeded RNG.
    pub election_timeout_ms: Millis,
    /// Follower fetch timeout: no successful fetch for this long starts an election (voters only).
    pub fetch_timeout_ms: Millis,
    /// Interval before the next fetch after an error or, when `fetch_max_wait_ms` is 0, after an empty
    /// answer (with a waiting leader the next fetch leaves at once, as Kafka's follower does).
    pub fetch_interval_ms: Millis,
    /// `MaxWaitMs` of this node's Fetch requests: how long the leader may park one that finds nothing new
    /// (Kafka: [`FETCH_MAX_WAIT_MS`](super::FETCH_MAX_WAIT_MS), 500). 0 asks for an answer at once.
    pub fetch_max_wait_ms: Millis,
    /// Leader check-quorum window (Kafka: 1.5 × fetch timeout).
    pub check_quorum_timeout_ms: Millis,
    /// Pending Add/Remove reply deadline (the record stays in the log after it).
    pub request_timeout_ms: Millis,
    /// An observer untracked for this long is dropped from the leader's state.
    pub observer_expiry_ms: Millis,
    /// Seed of the election-timeout RNG: the same seed and inputs give the same run.
    pub seed: u64,
    /// Snapshots (KIP-630): the FetchSnapshot size and this replica's own snapshots and retention.
    pub snapshots: SnapshotConfig,
    /// Kafka's `controller.quorum.auto.join.enable` (KIP-1186): an observer adds itself as a voter
    /// (`auto_join.rs`).
    pub auto_join: bool,
}

/// Snapshot settings, named after Kafka's properties. `Default`: own snapshots off (no trigger, no
/// retention), FetchSnapshot `MaxBytes` as Kafka's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotConfig {
    /// Whether this replica takes snapshots of its own log and moves its log start.
    pub enabled: bool,
    /// `metadata.log.max.record.bytes.between.snapshots` (Kafka: 20 MiB, at least 1): a snapshot once this
    /// many bytes of records were appended below the HW since the last one.
    pub max_record_bytes_between_snapshots: u64,
    /// `metadata.log.max.snapshot.interval.ms` (Kafka: 1 h; 0 turns the time trigger off).
    pub max_snapshot_interval_ms: Millis,
    /// `metadata.max.retention.bytes` (Kafka: 100 MiB; negative: no size limit).
    pub max_retention_bytes: i64,
    /// `metadata.max.retention.ms` (Kafka: 7 days; negative: no time limit).
    pub max_retention_ms: i64,
    /// How often the retention rules are checked (Kafka: every 60 s, hard-coded).
    pub clean_interval_ms: Millis,
    /// `controller.quorum.fetch.snapshot.max.bytes`: the `MaxBytes` of this replica's FetchSnapshot
    /// requests (Kafka: 8 MiB).
    pub fetch_snapshot_max_bytes: i32,
}

impl Default for SnapshotConfig {
    fn default() -> Self {
        SnapshotConfig {
            enabled: false,
            max_record_bytes_between_snapshots: 20 * 1024 * 1024,
            max_snapshot_interval_ms: 60 * 60 * 1000,
            max_retention_bytes: 100 * 1024 * 1024,
            max_retention_ms: 7 * 24 * 60 * 60 * 1000,
            clean_interval_ms: 60_000,
            fetch_snapshot_max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// The node id of a replica without an id (Kafka's empty `OptionalInt` local id): an observer that sends
/// Fetch with replica id −1, which leaders serve without tracking. Only with [`Bootstrap::NoInitialVoters`].
pub const ANONYMOUS_OBSERVER_ID: i32 = -1;

/// The peer id of `bootstrap_servers[index]`: −2 − index, as Kafka numbers them (`KafkaRaftClient`).
pub fn bootstrap_server_id(index: usize) -> i32 {
    -2 - i32::try_from(index).unwrap_or(i32::MAX - 2)
}

/// The index in `bootstrap_servers` of peer id `id`, if it names one.
pub fn bootstrap_server_index(id: i32) -> Option<usize> {
    usize::try_from(-2i64 - i64::from(id)).ok()
}

/// Errors of [`Node::new`].
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("invalid node configuration: {0}")]
    Config(String),
    #[error("log error while loading the node: {0}")]
    Log(#[from] LogError),
    #[error("control records in the log are inconsistent: {0}")]
    History(#[from] HistoryError),
    #[error("persisted election state is inconsistent: {0}")]
    ElectionState(String),
}

/// Errors of [`Node::append`].
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("not the leader (leader {leader:?}, epoch {epoch})")]
    NotLeader { leader: Option<i32>, epoch: i32 },
    #[error("nothing to append")]
    Empty,
    #[error("log error: {0}")]
    Log(#[from] LogError),
}

/// The role of a replica (Kafka 4.x; "Voted" is Unattached with a vote).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Role {
    Unattached,
    /// KIP-996: asking for pre-votes in the current epoch before standing as Candidate.
    Prospective,
    Candidate,
    Follower,
    Leader,
    Resigned,
}

/// A timer of the node; [`Timers`] holds the deadline of each armed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Unattached voter or Candidate: become Prospective (ask for pre-votes). Prospective: the pre-vote
    /// round is lost (back to the known leader, else Unattached). Resigned: Unattached at epoch + 1.
    Election,
    /// Follower: no successful fetch for this long. A voter becomes Prospective, an observer Unattached.
    FetchTimeout,
    /// Send the next Fetch (also re-sends a fetch whose response never came).
    Fetch,
    /// Leader: not enough voters fetched in the window: resign.
    CheckQuorum,
    /// Leader: the pending Add/Remove (or an add still waiting for its new voter's ApiVersions answer)
    /// gets REQUEST_TIMED_OUT (a record already appended stays).
    PendingChange,
    /// Leader: resend BeginQuorumEpoch to voters that have not fetched in this epoch.
    BeginQuorumEpoch,
    /// A replica restarted as Candidate (its stored vote for itself) or Resigned (its stored leader id
    /// its own): the requests of its role's first poll, Kafka's first `pollCandidate` (Vote requests to
    /// every voter that has not granted) or `pollResigned` (EndQuorumEpoch to every other voter of the
    /// latest set). Armed by [`Node::new`] to fire at once.
    FirstPoll,
}

/// Deadlines of the armed timers (milliseconds on the node's clock).
///
/// Two kinds. *Stored* deadlines are set by the transition that arms them and cleared when they fire or
/// the role ends: `election`, `fetch_timeout`, `begin_quorum_epoch`, `first_poll`. *Derived* deadlines
/// are recomputed at the end of every input (`refresh_timers` in `timers.rs`) from the state they
/// belong to, so they cannot go stale: `fetch` (the outstanding Fetch's or FetchSnapshot's send time +
/// the request timeout, else the next fetch time), `check_quorum` (the leader's check-quorum deadline),
/// `pending_change` (the pending change's or the add check's deadline); off the leader role the last two
/// and `begin_quorum_epoch` are cleared. [`Node::next_deadline`](super::Node::next_deadline) adds the
/// deadlines kept outside this struct: parked fetches' `MaxWaitMs` and the own-snapshot cleaner.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Timers {
    pub election: Option<Millis>,
    pub fetch_timeout: Option<Millis>,
    pub fetch: Option<Millis>,
    pub check_quorum: Option<Millis>,
    pub pending_change: Option<Millis>,
    pub begin_quorum_epoch: Option<Millis>,
    #[serde(default)]
    pub first_poll: Option<Millis>,
}

impl Timers {
    pub fn get(&self, t: Timer) -> Option<Millis> {
        match t {
            Timer::Election => self.election,
            Timer::FetchTimeout => self.fetch_timeout,
            Timer::Fetch => self.fetch,
            Timer::CheckQuorum => self.check_quorum,
            Timer::PendingChange => self.pending_change,
            Timer::BeginQuorumEpoch => self.begin_quorum_epoch,
            Timer::FirstPoll => self.first_poll,
        }
    }

    pub fn earliest(&self) -> Option<Millis> {
        ALL_TIMERS.iter().filter_map(|t| self.get(*t)).min()
    }
}

/// Every timer, in the order `tick` fires due ones.
pub const ALL_TIMERS: [Timer; 7] = [
    Timer::PendingChange,
    Timer::CheckQuorum,
    Timer::BeginQuorumEpoch,
    Timer::FirstPoll,
    Timer::Election,
    Timer::FetchTimeout,
    Timer::Fetch,
];

/// Kind of a membership change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ChangeKind {
    Add,
    Remove,
    /// UpdateRaftVoter: answered once appended, never pending.
    Update,
}

/// An Add/Remove waiting for the HW to pass its VotersRecord.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingChange {
    pub client: ClientId,
    pub kind: ChangeKind,
    pub key: ReplicaKey,
    /// Offset of the appended VotersRecord.
    pub offset: i64,
    pub deadline: Millis,
}

/// The last reply given to an Add/Remove request (immediate refusal or completion).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangeReply {
    pub client: ClientId,
    pub kind: ChangeKind,
    pub key: ReplicaKey,
    pub outcome: ChangeOutcome,
}

impl ChangeReply {
    /// The Kafka error code of the reply.
    pub fn error_code(&self) -> i16 {
        self.outcome.error_code()
    }
}

/// One log record as the view shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EntryKind {
    Data,
    LeaderChange,
    KRaftVersion(i16),
    Voters(VoterSet),
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogEntryView {
    pub offset: i64,
    pub epoch: i32,
    pub kind: EntryKind,
}

/// The fetch a follower is waiting on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutstandingFetch {
    pub to: i32,
    pub epoch: i32,
    pub fetch_offset: i64,
    pub last_fetched_epoch: i32,
    pub sent_at: Millis,
}

/// The leader's knowledge of one replica, as the view shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReplicaView {
    pub key: ReplicaKey,
    pub is_voter: bool,
    pub end_offset: Option<i64>,
    pub caught_up: bool,
}

/// Observable state of a node as plain data (tests, conformance, benches).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeView {
    pub node_id: i32,
    pub role: Role,
    pub epoch: i32,
    pub leader_id: Option<i32>,
    pub voted: Option<ReplicaKey>,
    pub log: Vec<LogEntryView>,
    pub log_end_offset: i64,
    pub last_epoch: i32,
    /// `None` while unknown (a new leader before its first commit, a restarted or resigned replica).
    pub high_watermark: Option<i64>,
    pub kraft_version: i16,
    pub latest_voters: VoterSet,
    /// Offset of the latest VotersRecord (−1: bootstrap checkpoint; `None`: static voters).
    pub latest_voters_offset: Option<i64>,
    /// [`committed_voter_set`] at this replica's HW.
    pub committed_voters: Option<VoterSet>,
    pub is_voter: bool,
    pub pending_change: Option<PendingChange>,
    pub last_change_reply: Option<ChangeReply>,
    pub timers: Timers,
    pub outstanding_fetch: Option<OutstandingFetch>,
    /// Leader only: progress of every tracked replica.
    pub replicas: Vec<ReplicaView>,
}
