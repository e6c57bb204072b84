//! The KRaft node: a deterministic state machine.
//!
//! Inputs: peer messages (`handle`), client requests (`handle_client`), client appends (`append`) and time
//! (`tick`). Outputs: [`Output`] with effects to persist first and messages to send after.
//!
//! Shell contract:
//! 1. Apply `Output::effects` in order (persist the election state, fsync) **before** sending any message.
//! 2. A response to a peer request handed to `handle` is in the `Output` of that same call, addressed to the
//!    requester; the shell writes it to the requesting connection. Other messages are new requests.
//! 3. Client replies carry the `ClientId` given to `handle_client`; Add/Remove replies may come later, in the
//!    output of a later `handle` or `tick`.
//! 4. Call `tick(now)` at or after [`Node::next_deadline`]; ticking earlier is harmless.
//! 5. Fetch requests carry the replica id in `replica_state` (Fetch v15+) and the directory id (v17):
//!    encode them at v17.
//!
//! Protocol choices (Kafka 3.9 unless noted; see also the crate's closing note in `impl/README.md`):
//! - No pre-vote. A candidate whose election times out starts a new election at epoch + 1 at once
//!   (Kafka backs off first).
//! - A restarted replica is Unattached at its persisted epoch (Resigned if it was leader, Candidate if it
//!   voted for itself), not Follower of the persisted leader as Kafka 3.9 does: the shared contract's choice.
//! - The leader answers a Fetch at once with every record from the fetch offset to its end (no long poll,
//!   no size limit), and learns a replica's progress only from fetch offsets.
//! - A Fetch response echoes the request's `(epoch, fetch offset, last fetched epoch)` in the tagged field
//!   [`FETCH_ECHO_TAG`] of its partition, so a stale or duplicated response is recognised and ignored.
//!   A response without the tag (a Kafka leader) is matched by sender only: over TCP the shell's
//!   correlation ids already pair it with the one outstanding request.
//! - A diverging-epoch reply that would truncate below the follower's HW is ignored (Kafka treats it as
//!   fatal); it cannot happen in a consistent run.
//! - Observers that know no leader fetch from the voters of their latest set in turn, and follow the
//!   leader named in the error reply (Kafka uses `controller.quorum.bootstrap.servers` the same way).
//! - The AddRaftVoter ApiVersions round trip is not done by the core: the new voter's supported
//!   `kraft.version` range is taken as [0, 1]. The catch-up rule is "fetched up to the leader's end offset
//!   at that moment, in this epoch" (Kafka also requires a fetch within the last hour).
//! - Followers do not send UpdateRaftVoter on their own; the leader serves UpdateRaftVoter requests.
//! - A leader resigns when its own removal is committed, whether or not the RemoveRaftVoter request is
//!   still pending (Kafka only does so from the pending request's completion).
//! - EndQuorumEpoch is sent once on resignation, not resent.
//! - DescribeCluster for controllers (KIP-919, `describe_cluster.rs`) lists the voters of the latest set and
//!   this node, on their default listener; Kafka lists the controllers registered in its metadata log
//!   (`ControllerRegistrationRecord`), which this node does not have. Either way the active controller is
//!   among them, which is what Kafka's admin client needs.
//! - Metadata (served by the shell for older clients) names this node as the only broker; Kafka controllers
//!   do not serve Metadata at all.

use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiVersionsRequest, ApiVersionsResponse,
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, DescribeClusterRequest,
    DescribeClusterResponse, EndQuorumEpochRequest, EndQuorumEpochResponse, FetchRequest,
    FetchResponse, RemoveRaftVoterRequest, RemoveRaftVoterResponse, UpdateRaftVoterRequest,
    UpdateRaftVoterResponse, VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use uuid::Uuid;

use crate::history::{committed_voter_set, HistoryError, OffsetHistory, VoterSetHistory};
use crate::leader::LeaderState;
use crate::log::{LogError, RaftLog, Record};
use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};
use crate::wire::describe_quorum::{
    DescribeQuorumRequest, DescribeQuorumResponse, PartitionData, TopicData,
};

mod describe_cluster;
mod messages;
pub mod sim;

pub use messages::{error_message, errors, FETCH_ECHO_TAG, METADATA_PARTITION, METADATA_TOPIC};
/// Milliseconds on the shell's monotonic clock. The core never reads a clock itself.
pub type Millis = u64;

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
    AddRaftVoter(AddRaftVoterRequest),
    RemoveRaftVoter(RemoveRaftVoterRequest),
    UpdateRaftVoter(UpdateRaftVoterRequest),
    /// KIP-919: how Kafka's admin client finds the active controller.
    DescribeCluster {
        version: i16,
        request: DescribeClusterRequest,
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
}

/// Election state that must be durable before the messages that depend on it leave the node
/// (Kafka's `quorum-state` file).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElectionState {
    pub epoch: i32,
    pub voted: Option<ReplicaKey>,
    pub leader_id: Option<i32>,
}

/// Side effects for the shell, applied in order before any message of the same output is sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Write the election state atomically and durably.
    PersistElectionState(ElectionState),
}

/// Everything one input produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub effects: Vec<Effect>,
    /// Messages to peers: (destination node id, message).
    pub messages: Vec<(i32, Message)>,
    pub client_replies: Vec<(ClientId, ClientResponse)>,
}

/// How the node learns its first voter set.
#[derive(Clone, Debug, PartialEq)]
pub enum Bootstrap {
    /// `kraft.version` 0: a configured static set, no VotersRecord; membership changes are refused.
    Static(VoterSet),
    /// `kraft.version` 1: the formatted bootstrap checkpoint, a voter set at offset −1.
    Checkpoint(VoterSet),
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
    /// Election timeout base; the actual timeout is drawn from [base, 2·base) with the seeded RNG.
    pub election_timeout_ms: Millis,
    /// Follower fetch timeout: no successful fetch for this long starts an election (voters only).
    pub fetch_timeout_ms: Millis,
    /// Interval between fetches from the leader.
    pub fetch_interval_ms: Millis,
    /// Leader check-quorum window (Kafka: 1.5 × fetch timeout).
    pub check_quorum_timeout_ms: Millis,
    /// Pending Add/Remove reply deadline (the record stays in the log after it).
    pub request_timeout_ms: Millis,
    /// An observer untracked for this long is dropped from the leader's state.
    pub observer_expiry_ms: Millis,
    /// Seed of the election-timeout RNG: the same seed and inputs give the same run.
    pub seed: u64,
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

/// The role of a replica (Kafka 3.9; "Voted" is Unattached with a vote).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Role {
    Unattached,
    Candidate,
    Follower,
    Leader,
    Resigned,
}

/// A timer of the node; [`Timers`] holds the deadline of each armed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// Unattached voter, Candidate or Resigned: start an election (a Resigned non-voter becomes
    /// Unattached at epoch + 1).
    Election,
    /// Follower: no successful fetch for this long. A voter becomes candidate, an observer Unattached.
    FetchTimeout,
    /// Send the next Fetch (also re-sends a fetch whose response never came).
    Fetch,
    /// Leader: not enough voters fetched in the window: resign.
    CheckQuorum,
    /// Leader: the pending Add/Remove gets REQUEST_TIMED_OUT (the record stays).
    PendingChange,
    /// Leader: resend BeginQuorumEpoch to voters that have not fetched in this epoch.
    BeginQuorumEpoch,
}

/// Deadlines of the armed timers (milliseconds on the node's clock).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Timers {
    pub election: Option<Millis>,
    pub fetch_timeout: Option<Millis>,
    pub fetch: Option<Millis>,
    pub check_quorum: Option<Millis>,
    pub pending_change: Option<Millis>,
    pub begin_quorum_epoch: Option<Millis>,
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
        }
    }

    pub fn earliest(&self) -> Option<Millis> {
        ALL_TIMERS.iter().filter_map(|t| self.get(*t)).min()
    }
}

/// Every timer, in the order `tick` fires due ones.
pub const ALL_TIMERS: [Timer; 6] = [
    Timer::PendingChange,
    Timer::CheckQuorum,
    Timer::BeginQuorumEpoch,
    Timer::Election,
    Timer::FetchTimeout,
    Timer::Fetch,
];

/// Kind of a membership change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ChangeKind {
    Add,
    Remove,
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
    pub error_code: i16,
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

/// Test-only seeded faults for the conformance mutation check (cargo feature `faults`).
#[cfg(feature = "faults")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// The committed voter set is taken from the latest VotersRecord instead of the one below the HW.
    pub committed_from_latest: bool,
    /// A membership change is accepted while another one is pending (the pending-change and the
    /// uncommitted-VotersRecord checks of the gate are skipped).
    pub accept_change_while_pending: bool,
    /// The HW counts a leader that removed itself.
    pub hw_counts_removed_leader: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ActiveFaults {
    committed_from_latest: bool,
    accept_change_while_pending: bool,
    hw_counts_removed_leader: bool,
}

#[derive(Clone, Debug)]
enum RoleState {
    Unattached,
    Candidate {
        voters: VoterSet,
        granted: BTreeSet<i32>,
    },
    Follower {
        leader: i32,
    },
    Leader(Box<LeaderState>),
    Resigned,
}

/// A KRaft replica: the deterministic quorum state machine over a [`RaftLog`]. `Clone` (for a cloneable
/// log) lets conformance branch one cluster into every successor of a model state.
#[derive(Clone)]
pub struct Node<L: RaftLog> {
    config: NodeConfig,
    local: ReplicaKey,
    log: L,
    election: ElectionState,
    role: RoleState,
    /// The HW of a non-leader (the leader's lives in its `LeaderState`).
    hw: Option<i64>,
    history: VoterSetHistory,
    kraft_versions: OffsetHistory<i16>,
    base_kraft_version: i16,
    /// Next log offset whose control records have not been read into the histories.
    history_next_offset: i64,
    rng: ChaCha8Rng,
    timers: Timers,
    next_fetch_at: Option<Millis>,
    outstanding_fetch: Option<OutstandingFetch>,
    bootstrap_cursor: usize,
    pending: Option<PendingChange>,
    last_change_reply: Option<ChangeReply>,
    faults: ActiveFaults,
    /// Whether the deadlines armed by `new` (relative to 0) were moved to the shell's clock.
    clock_started: bool,
}

fn invalid(msg: impl Into<String>) -> NodeError {
    NodeError::Config(msg.into())
}

impl<L: RaftLog> Node<L> {
    /// Builds a node from its configuration, its log and its persisted election state, applying the
    /// restart rules: Resigned if it was the leader, Candidate if it voted for itself (and is a voter),
    /// else Unattached at the persisted epoch. Volatile state (HW, leader progress, pending change) is
    /// not recovered.
    pub fn new(config: NodeConfig, log: L, persisted: ElectionState) -> Result<Node<L>, NodeError> {
        if config.node_id < 0 {
            return Err(invalid(format!("node id {} is negative", config.node_id)));
        }
        if config.election_timeout_ms == 0
            || config.fetch_timeout_ms == 0
            || config.check_quorum_timeout_ms == 0
        {
            return Err(invalid(
                "election, fetch and check-quorum timeouts must be positive",
            ));
        }
        if config.request_timeout_ms == 0 {
            return Err(invalid("request timeout must be positive"));
        }
        if persisted.epoch < 0 {
            return Err(NodeError::ElectionState(format!(
                "negative epoch {}",
                persisted.epoch
            )));
        }
        let local = ReplicaKey::new(config.node_id, config.directory_id);
        let (history, base_kraft_version) = match &config.bootstrap {
            Bootstrap::Static(set) => (VoterSetHistory::with_static(set.clone()), 0),
            Bootstrap::Checkpoint(set) => (VoterSetHistory::with_bootstrap(set.clone()), 1),
        };
        let mut kraft_versions = OffsetHistory::new();
        if base_kraft_version > 0 {
            kraft_versions.add_at(-1, base_kraft_version)?;
        }
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        let mut node = Node {
            local,
            log,
            election: persisted.clone(),
            role: RoleState::Unattached,
            hw: None,
            history,
            kraft_versions,
            base_kraft_version,
            history_next_offset: 0,
            rng,
            timers: Timers::default(),
            next_fetch_at: None,
            outstanding_fetch: None,
            bootstrap_cursor: 0,
            pending: None,
            last_change_reply: None,
            faults: ActiveFaults::default(),
            clock_started: false,
            config,
        };
        node.history_next_offset = node.log.start_offset();
        node.load_control_records()?;
        // Restart rules. `now` is unknown here: timers are armed relative to 0 and shifted to the
        // shell's clock by the first input (see `start_clock`).
        let now = 0;
        if persisted.leader_id == Some(local.id) {
            node.role = RoleState::Resigned;
            node.arm_election_timer(now);
        } else if persisted.voted.is_some_and(|v| v.id == local.id) && node.is_voter() {
            let voters = node.history.latest().clone();
            node.role = RoleState::Candidate {
                voters,
                granted: BTreeSet::from([local.id]),
            };
            node.arm_election_timer(now);
        } else {
            node.election.leader_id = None;
            node.role = RoleState::Unattached;
            node.arm_unattached_timers(now);
        }
        node.refresh_timers();
        Ok(node)
    }

    /// Turns on test-only faults (conformance mutation check).
    #[cfg(feature = "faults")]
    pub fn set_faults(&mut self, faults: Faults) {
        self.faults = ActiveFaults {
            committed_from_latest: faults.committed_from_latest,
            accept_change_while_pending: faults.accept_change_while_pending,
            hw_counts_removed_leader: faults.hw_counts_removed_leader,
        };
        if let RoleState::Leader(l) = &mut self.role {
            l.faults.hw_counts_removed_leader = faults.hw_counts_removed_leader;
        }
    }

    // ----- accessors -------------------------------------------------------------------------------

    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    pub fn node_id(&self) -> i32 {
        self.local.id
    }

    pub fn local_key(&self) -> ReplicaKey {
        self.local
    }

    pub fn log(&self) -> &L {
        &self.log
    }

    pub fn role(&self) -> Role {
        match self.role {
            RoleState::Unattached => Role::Unattached,
            RoleState::Candidate { .. } => Role::Candidate,
            RoleState::Follower { .. } => Role::Follower,
            RoleState::Leader(_) => Role::Leader,
            RoleState::Resigned => Role::Resigned,
        }
    }

    pub fn epoch(&self) -> i32 {
        self.election.epoch
    }

    pub fn election_state(&self) -> &ElectionState {
        &self.election
    }

    /// The known leader of the current epoch.
    pub fn leader_id(&self) -> Option<i32> {
        match &self.role {
            RoleState::Leader(_) | RoleState::Resigned => Some(self.local.id),
            RoleState::Follower { leader } => Some(*leader),
            _ => None,
        }
    }

    pub fn high_watermark(&self) -> Option<i64> {
        match &self.role {
            RoleState::Leader(l) => l.high_watermark(),
            _ => self.hw,
        }
    }

    pub fn history(&self) -> &VoterSetHistory {
        &self.history
    }

    pub fn latest_voters(&self) -> &VoterSet {
        self.history.latest()
    }

    /// The committed voter set at this replica (see [`committed_voter_set`]).
    pub fn committed_voters(&self) -> Option<&VoterSet> {
        if self.faults.committed_from_latest {
            return self.high_watermark().map(|_| self.history.latest());
        }
        committed_voter_set(&self.history, self.high_watermark())
    }

    /// The finalized `kraft.version` (latest KRaftVersionRecord, else the bootstrap level).
    pub fn kraft_version(&self) -> i16 {
        self.kraft_versions
            .last_entry()
            .map_or(self.base_kraft_version, |(_, v)| *v)
    }

    pub fn is_voter(&self) -> bool {
        self.history.latest().is_voter(&self.local)
    }

    pub fn timers(&self) -> &Timers {
        &self.timers
    }

    /// The earliest armed deadline: the shell should `tick` then.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.timers.earliest()
    }

    pub fn pending_change(&self) -> Option<&PendingChange> {
        self.pending.as_ref()
    }

    pub fn leader_state(&self) -> Option<&LeaderState> {
        match &self.role {
            RoleState::Leader(l) => Some(l),
            _ => None,
        }
    }

    /// The observable state as plain data. Reads the whole log: meant for tests and conformance.
    pub fn view(&self) -> NodeView {
        let mut log = Vec::new();
        if let Ok(batches) = self.log.read(self.log.start_offset(), usize::MAX) {
            for b in batches {
                for (i, r) in b.records.iter().enumerate() {
                    let kind = match r {
                        Record::Data(_) => EntryKind::Data,
                        Record::LeaderChange { .. } => EntryKind::LeaderChange,
                        Record::KRaftVersion(v) => EntryKind::KRaftVersion(*v),
                        Record::Voters(s) => EntryKind::Voters(s.clone()),
                    };
                    log.push(LogEntryView {
                        offset: b.base_offset + i as i64,
                        epoch: b.epoch,
                        kind,
                    });
                }
            }
        }
        let replicas = match &self.role {
            RoleState::Leader(l) => l
                .voter_states()
                .map(|p| (p, true))
                .chain(l.observer_states().map(|p| (p, false)))
                .map(|(p, is_voter)| ReplicaView {
                    key: p.key,
                    is_voter,
                    end_offset: p.end_offset,
                    caught_up: p.has_caught_up,
                })
                .collect(),
            _ => Vec::new(),
        };
        NodeView {
            node_id: self.local.id,
            role: self.role(),
            epoch: self.election.epoch,
            leader_id: self.leader_id(),
            voted: self.election.voted,
            log,
            log_end_offset: self.log.end_offset(),
            last_epoch: self.log.last_epoch(),
            high_watermark: self.high_watermark(),
            kraft_version: self.kraft_version(),
            latest_voters: self.history.latest().clone(),
            latest_voters_offset: self.history.latest_entry().map(|(o, _)| o),
            committed_voters: self.committed_voters().cloned(),
            is_voter: self.is_voter(),
            pending_change: self.pending.clone(),
            last_change_reply: self.last_change_reply.clone(),
            timers: self.timers.clone(),
            outstanding_fetch: self.outstanding_fetch,
            replicas,
        }
    }

    // ----- inputs ---------------------------------------------------------------------------------

    /// A message from peer `from`. Requests are answered in the returned output.
    pub fn handle(&mut self, now: Millis, from: i32, msg: Message) -> Output {
        self.start_clock(now);
        let mut out = Output::default();
        match msg {
            Message::VoteRequest(r) => self.on_vote_request(now, from, r, &mut out),
            Message::VoteResponse(r) => self.on_vote_response(now, from, r, &mut out),
            Message::BeginQuorumEpochRequest(r) => self.on_begin_request(now, from, r, &mut out),
            Message::BeginQuorumEpochResponse(r) => self.on_begin_response(now, r, &mut out),
            Message::EndQuorumEpochRequest(r) => self.on_end_request(now, from, r, &mut out),
            Message::EndQuorumEpochResponse(r) => self.on_end_response(now, r, &mut out),
            Message::FetchRequest(r) => self.on_fetch_request(now, from, r, &mut out),
            Message::FetchResponse(r) => self.on_fetch_response(now, from, r, &mut out),
        }
        self.refresh_timers();
        out
    }

    /// A request from an admin client or operator.
    pub fn handle_client(&mut self, now: Millis, id: ClientId, req: ClientRequest) -> Output {
        self.start_clock(now);
        let mut out = Output::default();
        match req {
            ClientRequest::ApiVersions(r) => {
                let resp = self.api_versions(&r);
                out.client_replies
                    .push((id, ClientResponse::ApiVersions(resp)));
            }
            ClientRequest::DescribeQuorum { version, request } => {
                let resp = self.describe_quorum(now, version, &request);
                out.client_replies
                    .push((id, ClientResponse::DescribeQuorum(resp)));
            }
            ClientRequest::AddRaftVoter(r) => self.on_add_voter(now, id, r, &mut out),
            ClientRequest::RemoveRaftVoter(r) => self.on_remove_voter(now, id, r, &mut out),
            ClientRequest::UpdateRaftVoter(r) => self.on_update_voter(now, id, r, &mut out),
            ClientRequest::DescribeCluster { version, request } => {
                let resp = self.describe_cluster(version, &request);
                out.client_replies
                    .push((id, ClientResponse::DescribeCluster(resp)));
            }
        }
        self.refresh_timers();
        out
    }

    /// Client append (leader only): one batch of Data records. Returns its base offset.
    pub fn append(&mut self, now: Millis, data: Vec<Bytes>) -> Result<(i64, Output), AppendError> {
        if data.is_empty() {
            return Err(AppendError::Empty);
        }
        if !matches!(self.role, RoleState::Leader(_)) {
            return Err(AppendError::NotLeader {
                leader: self.leader_id(),
                epoch: self.election.epoch,
            });
        }
        let mut out = Output::default();
        let offset =
            self.leader_append(now, data.into_iter().map(Record::Data).collect(), &mut out)?;
        self.refresh_timers();
        Ok((offset, out))
    }

    /// Fires every timer whose deadline is ≤ `now`.
    pub fn tick(&mut self, now: Millis) -> Output {
        self.start_clock(now);
        let mut out = Output::default();
        for t in ALL_TIMERS {
            if self.timers.get(t).is_some_and(|d| d <= now) {
                self.fire_timer(now, t, &mut out);
                self.refresh_timers();
            }
        }
        out
    }

    /// Fires one armed timer now, whatever its deadline (a harness hook to follow a model's timeout
    /// action exactly). Does nothing if the timer is not armed.
    pub fn fire(&mut self, now: Millis, timer: Timer) -> Output {
        self.start_clock(now);
        let mut out = Output::default();
        if self.timers.get(timer).is_some() {
            self.fire_timer(now, timer, &mut out);
        }
        self.refresh_timers();
        out
    }

    // ----- state transitions ----------------------------------------------------------------------

    /// Tells the node the shell's clock once, right after `new`: the deadlines `new` armed relative to 0
    /// move by `now`, so a restarted node waits a full timeout instead of firing at once. Without this call
    /// the first input (`handle`, `handle_client`, `tick`, `fire`) does it with its own `now`.
    pub fn start_clock(&mut self, now: Millis) {
        if std::mem::replace(&mut self.clock_started, true) {
            return;
        }
        let shift = |d: &mut Option<Millis>| *d = d.map(|d| d.saturating_add(now));
        shift(&mut self.timers.election);
        shift(&mut self.timers.fetch_timeout);
        shift(&mut self.timers.begin_quorum_epoch);
        shift(&mut self.next_fetch_at);
        self.refresh_timers();
    }

    fn persist(&mut self, election: ElectionState, out: &mut Output) {
        if election != self.election {
            self.election = election;
            // Only the last state of one output matters: nothing is sent before the effects are applied.
            if let Some(Effect::PersistElectionState(last)) = out.effects.last_mut() {
                *last = self.election.clone();
            } else {
                out.effects
                    .push(Effect::PersistElectionState(self.election.clone()));
            }
        }
    }

    fn random_election_timeout(&mut self) -> Millis {
        let base = self.config.election_timeout_ms;
        base + self.rng.gen_range(0..base)
    }

    fn arm_election_timer(&mut self, now: Millis) {
        let t = self.random_election_timeout();
        self.timers.election = Some(now + t);
    }

    /// Unattached: a voter waits for its election timeout; an observer looks for the leader by fetching.
    fn arm_unattached_timers(&mut self, now: Millis) {
        self.timers.fetch_timeout = None;
        if self.is_voter() {
            self.arm_election_timer(now);
            self.next_fetch_at = None;
        } else {
            self.timers.election = None;
            self.next_fetch_at = Some(now);
        }
    }

    /// Leaves the current role: a leader's pending change is answered NOT_LEADER_OR_FOLLOWER.
    fn leave_role(&mut self, out: &mut Output) {
        if let RoleState::Leader(_) = &self.role {
            if let Some(p) = self.pending.take() {
                self.reply_change(p.client, p.kind, p.key, errors::NOT_LEADER_OR_FOLLOWER, out);
            }
        }
        // Kafka's transitions pass the old state's HW on: a deposed leader keeps its HW; a resigned one
        // has none (a new leader drops it in `maybe_become_leader`).
        match &self.role {
            RoleState::Leader(l) => self.hw = l.high_watermark(),
            RoleState::Resigned => self.hw = None,
            _ => {}
        }
        self.outstanding_fetch = None;
        self.next_fetch_at = None;
        self.timers = Timers::default();
    }

    fn become_unattached(&mut self, now: Millis, epoch: i32, out: &mut Output) {
        self.leave_role(out);
        let election = if epoch > self.election.epoch {
            ElectionState {
                epoch,
                voted: None,
                leader_id: None,
            }
        } else {
            ElectionState {
                leader_id: None,
                ..self.election.clone()
            }
        };
        self.persist(election, out);
        self.role = RoleState::Unattached;
        self.arm_unattached_timers(now);
    }

    fn become_follower(&mut self, now: Millis, epoch: i32, leader: i32, out: &mut Output) {
        self.leave_role(out);
        let election = if epoch > self.election.epoch {
            ElectionState {
                epoch,
                voted: None,
                leader_id: Some(leader),
            }
        } else {
            ElectionState {
                leader_id: Some(leader),
                ..self.election.clone()
            }
        };
        self.persist(election, out);
        self.role = RoleState::Follower { leader };
        self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
        self.next_fetch_at = Some(now);
    }

    fn become_candidate(&mut self, now: Millis, out: &mut Output) {
        if !self.is_voter() {
            return;
        }
        self.leave_role(out);
        let epoch = self.election.epoch + 1;
        self.persist(
            ElectionState {
                epoch,
                voted: Some(self.local),
                leader_id: None,
            },
            out,
        );
        let voters = self.history.latest().clone();
        let granted = BTreeSet::from([self.local.id]);
        self.role = RoleState::Candidate {
            voters: voters.clone(),
            granted,
        };
        self.arm_election_timer(now);
        for target in voters.nodes().filter(|n| n.key.id != self.local.id) {
            let req = self.vote_request(target.key);
            out.messages
                .push((target.key.id, Message::VoteRequest(req)));
        }
        self.maybe_become_leader(now, out);
    }

    fn maybe_become_leader(&mut self, now: Millis, out: &mut Output) {
        let granting = match &self.role {
            RoleState::Candidate { voters, granted } if granted.len() >= voters.majority_size() => {
                granted.iter().copied().collect::<Vec<_>>()
            }
            _ => return,
        };
        self.leave_role(out);
        self.hw = None;
        let latest = self.history.latest().clone();
        let mut leader = LeaderState::new(
            self.local,
            self.election.epoch,
            self.log.end_offset(),
            &latest,
            now,
            self.config.check_quorum_timeout_ms,
        );
        leader.faults.hw_counts_removed_leader = self.faults.hw_counts_removed_leader;
        self.role = RoleState::Leader(Box::new(leader));
        self.persist(
            ElectionState {
                leader_id: Some(self.local.id),
                ..self.election.clone()
            },
            out,
        );
        self.timers.begin_quorum_epoch = Some(now + self.config.fetch_timeout_ms / 2);
        // Start-of-epoch batch (contract 2 / Kafka `appendStartOfEpochControlRecords`).
        let mut records = vec![Record::LeaderChange {
            leader_id: self.local.id,
            voters: latest.ids().collect(),
            granting_voters: granting,
        }];
        let kraft = self.kraft_version();
        if kraft >= 1 && self.history.latest_entry().is_some_and(|(o, _)| o == -1) {
            records.push(Record::KRaftVersion(kraft));
            records.push(Record::Voters(latest.clone()));
        }
        if let Err(e) = self.leader_append(now, records, out) {
            tracing::error!(node = self.local.id, error = %e, "start-of-epoch append failed; resigning");
            self.become_resigned(now, out);
            return;
        }
        for node in latest.nodes().filter(|n| n.key.id != self.local.id) {
            let req = self.begin_request(node.key);
            out.messages
                .push((node.key.id, Message::BeginQuorumEpochRequest(req)));
        }
    }

    fn become_resigned(&mut self, now: Millis, out: &mut Output) {
        let successors = match &self.role {
            RoleState::Leader(l) => l.preferred_successors(),
            _ => return,
        };
        self.leave_role(out);
        self.hw = None;
        self.role = RoleState::Resigned;
        self.arm_election_timer(now);
        let latest = self.history.latest().clone();
        for node in latest.nodes().filter(|n| n.key.id != self.local.id) {
            let req = self.end_request(&successors);
            out.messages
                .push((node.key.id, Message::EndQuorumEpochRequest(req)));
        }
    }

    /// A peer names `leader_id` (−1: unknown) as leader of `epoch`. Moves to a higher epoch, or follows a
    /// newly learned leader of the current epoch. Returns whether this node now follows `leader_id` in
    /// `epoch`.
    fn maybe_transition(
        &mut self,
        now: Millis,
        epoch: i32,
        leader_id: i32,
        out: &mut Output,
    ) -> bool {
        let own = self.election.epoch;
        if epoch < own {
            return false;
        }
        if leader_id == self.local.id {
            // Only this node can know that it leads; a peer claiming so for an epoch we have not led
            // is inconsistent and ignored.
            return false;
        }
        if epoch > own {
            if leader_id >= 0 {
                self.become_follower(now, epoch, leader_id, out);
                return true;
            }
            self.become_unattached(now, epoch, out);
            return false;
        }
        match self.role {
            RoleState::Follower { leader } => leader == leader_id,
            RoleState::Unattached | RoleState::Candidate { .. } if leader_id >= 0 => {
                self.become_follower(now, epoch, leader_id, out);
                true
            }
            _ => false,
        }
    }

    // ----- timers ---------------------------------------------------------------------------------

    fn refresh_timers(&mut self) {
        self.timers.fetch = match self.outstanding_fetch {
            Some(f) => Some(f.sent_at + self.config.request_timeout_ms),
            None => self.next_fetch_at,
        };
        match &self.role {
            RoleState::Leader(l) => {
                self.timers.check_quorum = l.check_quorum_deadline;
                self.timers.pending_change = self.pending.as_ref().map(|p| p.deadline);
            }
            _ => {
                self.timers.check_quorum = None;
                self.timers.pending_change = None;
                self.timers.begin_quorum_epoch = None;
            }
        }
    }

    fn fire_timer(&mut self, now: Millis, timer: Timer, out: &mut Output) {
        match timer {
            Timer::PendingChange => {
                if let Some(p) = self.pending.take() {
                    // The record stays in the log: it may still commit, and it blocks the next change
                    // until it does.
                    self.reply_change(p.client, p.kind, p.key, errors::REQUEST_TIMED_OUT, out);
                }
            }
            Timer::CheckQuorum => {
                if matches!(self.role, RoleState::Leader(_)) {
                    tracing::info!(
                        node = self.local.id,
                        epoch = self.election.epoch,
                        "check-quorum expired; resigning"
                    );
                    self.become_resigned(now, out);
                }
            }
            Timer::BeginQuorumEpoch => {
                let targets: Vec<ReplicaKey> = match &self.role {
                    RoleState::Leader(l) => {
                        let stale = self.config.fetch_timeout_ms;
                        l.voter_states()
                            .filter(|p| p.key.id != self.local.id)
                            .filter(|p| {
                                p.last_fetch_ms
                                    .is_none_or(|t| now.saturating_sub(t) >= stale)
                            })
                            .map(|p| p.key)
                            .collect()
                    }
                    _ => return,
                };
                for key in targets {
                    let req = self.begin_request(key);
                    out.messages
                        .push((key.id, Message::BeginQuorumEpochRequest(req)));
                }
                self.timers.begin_quorum_epoch =
                    Some(now + (self.config.fetch_timeout_ms / 2).max(1));
            }
            Timer::Election => match self.role {
                RoleState::Unattached | RoleState::Candidate { .. } => {
                    if self.is_voter() {
                        self.become_candidate(now, out);
                    } else {
                        let epoch = self.election.epoch;
                        self.become_unattached(now, epoch, out);
                    }
                }
                RoleState::Resigned => {
                    if self.is_voter() {
                        self.become_candidate(now, out);
                    } else {
                        // A removed leader moves on so that Fetch responses stop naming it.
                        let epoch = self.election.epoch + 1;
                        self.become_unattached(now, epoch, out);
                    }
                }
                _ => self.timers.election = None,
            },
            Timer::FetchTimeout => {
                if let RoleState::Follower { .. } = self.role {
                    if self.is_voter() {
                        self.become_candidate(now, out);
                    } else {
                        let epoch = self.election.epoch;
                        self.become_unattached(now, epoch, out);
                    }
                }
            }
            Timer::Fetch => {
                // An outstanding fetch past its deadline is taken as lost.
                self.outstanding_fetch = None;
                self.send_fetch(now, out);
            }
        }
    }

    // ----- log and histories ----------------------------------------------------------------------

    /// Reads control records appended since the last call into the voter-set and kraft.version histories.
    fn load_control_records(&mut self) -> Result<(), LogError> {
        let end = self.log.end_offset();
        if self.history_next_offset >= end {
            self.history_next_offset = end;
            return Ok(());
        }
        let from = self.history_next_offset.max(self.log.start_offset());
        for batch in self.log.read(from, usize::MAX)? {
            for (i, record) in batch.records.iter().enumerate() {
                let offset = batch.base_offset + i as i64;
                if offset < from {
                    continue;
                }
                let corrupt = |e: HistoryError| LogError::Corrupt {
                    offset,
                    reason: e.to_string(),
                };
                match record {
                    Record::Voters(set) => {
                        self.history.add_at(offset, set.clone()).map_err(corrupt)?
                    }
                    Record::KRaftVersion(v) => {
                        self.kraft_versions.add_at(offset, *v).map_err(corrupt)?
                    }
                    _ => {}
                }
            }
        }
        self.history_next_offset = end;
        Ok(())
    }

    fn truncate_log(&mut self, offset: i64) -> Result<(), LogError> {
        self.log.truncate_to(offset)?;
        self.history.truncate_new_entries(offset);
        self.kraft_versions.truncate_new_entries(offset.max(0));
        self.history_next_offset = self.history_next_offset.min(self.log.end_offset());
        Ok(())
    }

    /// Appends one batch in the leader's epoch, flushes it, and updates the HW.
    fn leader_append(
        &mut self,
        now: Millis,
        records: Vec<Record>,
        out: &mut Output,
    ) -> Result<i64, LogError> {
        let epoch = self.election.epoch;
        let offset = self.log.append_as_leader(epoch, records)?;
        self.log.flush()?;
        self.load_control_records()?;
        self.after_leader_log_change(now, out);
        Ok(offset)
    }

    fn after_leader_log_change(&mut self, now: Millis, out: &mut Output) {
        let end = self.log.end_offset();
        let latest = self.history.latest().clone();
        let advanced = match &mut self.role {
            RoleState::Leader(l) => {
                let advanced = l.update_local_end_offset(end, &latest);
                l.update_check_quorum(now, self.config.check_quorum_timeout_ms);
                advanced
            }
            _ => return,
        };
        if advanced {
            self.on_leader_hw_advanced(now, out);
        }
    }

    /// The HW moved: complete the pending change once the HW passes its record; resign once this
    /// leader's own removal is committed.
    fn on_leader_hw_advanced(&mut self, now: Millis, out: &mut Output) {
        let Some(hw) = self.high_watermark() else {
            return;
        };
        if let Some(p) = self.pending.as_ref().filter(|p| hw > p.offset).cloned() {
            self.pending = None;
            self.reply_change(p.client, p.kind, p.key, errors::NONE, out);
        }
        let removal_committed = self.history.latest_entry().is_some_and(|(o, _)| o < hw);
        if !self.is_voter() && removal_committed {
            tracing::info!(node = self.local.id, "own removal committed; resigning");
            self.become_resigned(now, out);
        }
    }

    // ----- Vote -----------------------------------------------------------------------------------

    fn vote_request(&self, to: ReplicaKey) -> VoteRequest {
        use kafka_protocol::messages::vote_request::{PartitionData, TopicData};
        use kafka_protocol::messages::BrokerId;
        VoteRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_voter_id(BrokerId(to.id))
            .with_topics(vec![TopicData::default()
                .with_topic_name(messages::topic_name())
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_replica_epoch(self.election.epoch)
                    .with_replica_id(BrokerId(self.local.id))
                    .with_replica_directory_id(self.local.directory_or_nil())
                    .with_voter_directory_id(to.directory_or_nil())
                    .with_last_offset_epoch(self.log.last_epoch())
                    .with_last_offset(self.log.end_offset())])])
    }

    fn known_leader_or_sentinel(&self) -> i32 {
        self.leader_id().unwrap_or(-1)
    }

    fn on_vote_request(&mut self, now: Millis, from: i32, req: VoteRequest, out: &mut Output) {
        let reply = |node: &Self, top: i16, part: i16, granted: bool| {
            messages::vote_response(
                top,
                part,
                node.known_leader_or_sentinel(),
                node.election.epoch,
                granted,
            )
        };
        let resp = 'resp: {
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                break 'resp reply(self, errors::INCONSISTENT_CLUSTER_ID, 0, false);
            }
            let Some(p) = messages::vote_partition(&req) else {
                break 'resp reply(self, errors::INVALID_REQUEST, 0, false);
            };
            let candidate = ReplicaKey::new(p.replica_id.0, p.replica_directory_id);
            let (cand_epoch, last_epoch, last_offset) =
                (p.replica_epoch, p.last_offset_epoch, p.last_offset);
            if candidate.id < 0 || last_offset < 0 || last_epoch < 0 || last_epoch >= cand_epoch {
                break 'resp reply(self, 0, errors::INVALID_REQUEST, false);
            }
            if cand_epoch < self.election.epoch {
                break 'resp reply(self, 0, errors::FENCED_LEADER_EPOCH, false);
            }
            let voter_key = ReplicaKey::new(req.voter_id.0, p.voter_directory_id);
            if cand_epoch > self.election.epoch {
                self.become_unattached(now, cand_epoch, out);
            }
            if (req.voter_id.0 >= 0 && voter_key.id != self.local.id)
                || voter_key
                    .directory_id
                    .is_some_and(|d| Some(d) != self.local.directory_id)
            {
                break 'resp reply(self, 0, errors::INVALID_VOTER_KEY, false);
            }
            let granted = match self.role {
                RoleState::Unattached => match self.election.voted {
                    Some(v) => v.id == candidate.id && v.directory_id == candidate.directory_id,
                    None => {
                        let log_ok = (last_epoch, last_offset)
                            >= (self.log.last_epoch(), self.log.end_offset());
                        if log_ok {
                            let election = ElectionState {
                                voted: Some(candidate),
                                ..self.election.clone()
                            };
                            self.persist(election, out);
                            if self.is_voter() {
                                self.arm_election_timer(now);
                            }
                        }
                        log_ok
                    }
                },
                _ => false,
            };
            let _ = from;
            reply(self, 0, errors::NONE, granted)
        };
        out.messages.push((from, Message::VoteResponse(resp)));
    }

    fn on_vote_response(&mut self, now: Millis, from: i32, resp: VoteResponse, out: &mut Output) {
        if resp.error_code != errors::NONE {
            return;
        }
        let Some(p) = messages::vote_response_partition(&resp) else {
            return;
        };
        if p.leader_epoch > self.election.epoch {
            self.maybe_transition(now, p.leader_epoch, p.leader_id.0, out);
            return;
        }
        if p.leader_epoch != self.election.epoch || p.error_code != errors::NONE {
            return;
        }
        if p.leader_id.0 >= 0 && p.leader_id.0 != self.local.id {
            self.maybe_transition(now, p.leader_epoch, p.leader_id.0, out);
            return;
        }
        if let RoleState::Candidate { voters, granted } = &mut self.role {
            if p.vote_granted && voters.contains_id(from) {
                granted.insert(from);
            }
        }
        self.maybe_become_leader(now, out);
    }

    // ----- BeginQuorumEpoch / EndQuorumEpoch ------------------------------------------------------

    fn leader_endpoints(&self) -> Vec<(StrBytes, StrBytes, u16)> {
        self.config
            .listeners
            .iter()
            .map(|e| {
                (
                    StrBytes::from_string(e.name.clone()),
                    StrBytes::from_string(e.host.clone()),
                    e.port,
                )
            })
            .collect()
    }

    fn begin_request(&self, to: ReplicaKey) -> BeginQuorumEpochRequest {
        use kafka_protocol::messages::begin_quorum_epoch_request::{
            LeaderEndpoint, PartitionData, TopicData,
        };
        use kafka_protocol::messages::BrokerId;
        BeginQuorumEpochRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_voter_id(BrokerId(to.id))
            .with_topics(vec![TopicData::default()
                .with_topic_name(messages::topic_name())
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_voter_directory_id(to.directory_or_nil())
                    .with_leader_id(BrokerId(self.local.id))
                    .with_leader_epoch(self.election.epoch)])])
            .with_leader_endpoints(
                self.leader_endpoints()
                    .into_iter()
                    .map(|(n, h, p)| {
                        LeaderEndpoint::default()
                            .with_name(n)
                            .with_host(h)
                            .with_port(p)
                    })
                    .collect(),
            )
    }

    fn end_request(&self, successors: &[i32]) -> EndQuorumEpochRequest {
        use kafka_protocol::messages::end_quorum_epoch_request::{
            LeaderEndpoint, PartitionData, ReplicaInfo, TopicData,
        };
        use kafka_protocol::messages::BrokerId;
        let latest = self.history.latest();
        let candidates = successors
            .iter()
            .map(|id| {
                let dir = latest
                    .voter(*id)
                    .map_or(Uuid::nil(), |n| n.key.directory_or_nil());
                ReplicaInfo::default()
                    .with_candidate_id(BrokerId(*id))
                    .with_candidate_directory_id(dir)
            })
            .collect();
        EndQuorumEpochRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_topics(vec![TopicData::default()
                .with_topic_name(messages::topic_name())
                .with_partitions(vec![PartitionData::default()
                    .with_partition_index(METADATA_PARTITION)
                    .with_leader_id(BrokerId(self.local.id))
                    .with_leader_epoch(self.election.epoch)
                    .with_preferred_successors(successors.to_vec())
                    .with_preferred_candidates(candidates)])])
            .with_leader_endpoints(
                self.leader_endpoints()
                    .into_iter()
                    .map(|(n, h, p)| {
                        LeaderEndpoint::default()
                            .with_name(n)
                            .with_host(h)
                            .with_port(p)
                    })
                    .collect(),
            )
    }

    fn on_begin_request(
        &mut self,
        now: Millis,
        from: i32,
        req: BeginQuorumEpochRequest,
        out: &mut Output,
    ) {
        let resp = 'resp: {
            let reply = |node: &Self, top: i16, part: i16| {
                messages::begin_response(
                    top,
                    part,
                    node.known_leader_or_sentinel(),
                    node.election.epoch,
                )
            };
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                break 'resp reply(self, errors::INCONSISTENT_CLUSTER_ID, 0);
            }
            let Some(p) = messages::begin_partition(&req) else {
                break 'resp reply(self, errors::INVALID_REQUEST, 0);
            };
            let (leader, epoch) = (p.leader_id.0, p.leader_epoch);
            if (req.voter_id.0 >= 0 && req.voter_id.0 != self.local.id)
                || (!p.voter_directory_id.is_nil()
                    && Some(p.voter_directory_id) != self.local.directory_id)
            {
                break 'resp reply(self, 0, errors::INVALID_VOTER_KEY);
            }
            if epoch < self.election.epoch {
                break 'resp reply(self, 0, errors::FENCED_LEADER_EPOCH);
            }
            if leader < 0 || leader == self.local.id {
                break 'resp reply(self, 0, errors::INVALID_REQUEST);
            }
            if !self.maybe_transition(now, epoch, leader, out) {
                break 'resp reply(self, 0, errors::INVALID_REQUEST);
            }
            reply(self, 0, errors::NONE)
        };
        out.messages
            .push((from, Message::BeginQuorumEpochResponse(resp)));
    }

    fn on_begin_response(&mut self, now: Millis, resp: BeginQuorumEpochResponse, out: &mut Output) {
        if let Some(p) = messages::begin_response_partition(&resp) {
            if p.leader_epoch > self.election.epoch {
                self.maybe_transition(now, p.leader_epoch, p.leader_id.0, out);
            }
        }
    }

    fn on_end_request(
        &mut self,
        now: Millis,
        from: i32,
        req: EndQuorumEpochRequest,
        out: &mut Output,
    ) {
        let resp = 'resp: {
            let reply = |node: &Self, top: i16, part: i16| {
                messages::end_response(
                    top,
                    part,
                    node.known_leader_or_sentinel(),
                    node.election.epoch,
                )
            };
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                break 'resp reply(self, errors::INCONSISTENT_CLUSTER_ID, 0);
            }
            let Some(p) = messages::end_partition(&req) else {
                break 'resp reply(self, errors::INVALID_REQUEST, 0);
            };
            let (leader, epoch) = (p.leader_id.0, p.leader_epoch);
            if epoch < self.election.epoch {
                break 'resp reply(self, 0, errors::FENCED_LEADER_EPOCH);
            }
            let successors: Vec<i32> = if p.preferred_candidates.is_empty() {
                p.preferred_successors.clone()
            } else {
                p.preferred_candidates
                    .iter()
                    .map(|c| c.candidate_id.0)
                    .collect()
            };
            self.maybe_transition(now, epoch, leader, out);
            if epoch == self.election.epoch && self.is_voter() {
                // The resigning leader's successors try first, in order; others wait a random backoff.
                let backoff = match successors.iter().position(|&id| id == self.local.id) {
                    Some(pos) => pos as u64 * (self.config.election_timeout_ms / 4),
                    None => self.rng.gen_range(0..self.config.election_timeout_ms),
                };
                let deadline = now + backoff;
                match self.role {
                    RoleState::Follower { leader: l } if l == leader => {
                        self.timers.fetch_timeout = Some(
                            self.timers
                                .fetch_timeout
                                .map_or(deadline, |d| d.min(deadline)),
                        );
                    }
                    RoleState::Unattached => {
                        self.timers.election =
                            Some(self.timers.election.map_or(deadline, |d| d.min(deadline)));
                    }
                    _ => {}
                }
            }
            reply(self, 0, errors::NONE)
        };
        out.messages
            .push((from, Message::EndQuorumEpochResponse(resp)));
    }

    fn on_end_response(&mut self, now: Millis, resp: EndQuorumEpochResponse, out: &mut Output) {
        if let Some(p) = messages::end_response_partition(&resp) {
            if p.leader_epoch > self.election.epoch {
                self.maybe_transition(now, p.leader_epoch, p.leader_id.0, out);
            }
        }
    }

    // ----- Fetch ----------------------------------------------------------------------------------

    fn send_fetch(&mut self, now: Millis, out: &mut Output) {
        self.send_fetch_to(now, None, out)
    }

    /// Sends a Fetch now, to `to` if given: the leader for a follower; for an observer that knows no
    /// leader, the bootstrap voter to ask (Kafka picks one at random; a harness picks it here).
    /// A follower asked to fetch from anyone but its leader does nothing.
    pub fn fetch_from(&mut self, now: Millis, to: i32) -> Output {
        self.start_clock(now);
        let mut out = Output::default();
        let allowed = match self.role {
            RoleState::Follower { leader } => leader == to,
            RoleState::Unattached => !self.is_voter() && to != self.local.id,
            _ => false,
        };
        if allowed {
            self.outstanding_fetch = None;
            self.send_fetch_to(now, Some(to), &mut out);
        }
        self.refresh_timers();
        out
    }

    fn send_fetch_to(&mut self, now: Millis, target: Option<i32>, out: &mut Output) {
        use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
        use kafka_protocol::messages::BrokerId;
        let to = match self.role {
            RoleState::Follower { leader } => leader,
            RoleState::Unattached if !self.is_voter() && target.is_some() => {
                target.unwrap_or_default()
            }
            RoleState::Unattached if !self.is_voter() => {
                let others: Vec<i32> = self
                    .history
                    .latest()
                    .ids()
                    .filter(|&id| id != self.local.id)
                    .collect();
                if others.is_empty() {
                    self.next_fetch_at = None;
                    return;
                }
                others[self.bootstrap_cursor % others.len()]
            }
            _ => {
                self.next_fetch_at = None;
                return;
            }
        };
        let fetch = OutstandingFetch {
            to,
            epoch: self.election.epoch,
            fetch_offset: self.log.end_offset(),
            last_fetched_epoch: self.log.last_epoch(),
            sent_at: now,
        };
        let req = FetchRequest::default()
            .with_cluster_id(Some(StrBytes::from_string(self.config.cluster_id.clone())))
            .with_replica_state(ReplicaState::default().with_replica_id(BrokerId(self.local.id)))
            .with_max_wait_ms(0)
            .with_topics(vec![FetchTopic::default()
                .with_topic(messages::topic_name())
                .with_topic_id(messages::METADATA_TOPIC_ID)
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(METADATA_PARTITION)
                    .with_current_leader_epoch(fetch.epoch)
                    .with_fetch_offset(fetch.fetch_offset)
                    .with_last_fetched_epoch(fetch.last_fetched_epoch)
                    .with_log_start_offset(self.log.start_offset())
                    .with_replica_directory_id(self.local.directory_or_nil())])]);
        self.outstanding_fetch = Some(fetch);
        self.next_fetch_at = None;
        out.messages.push((to, Message::FetchRequest(req)));
    }

    /// Kafka's `validateOffsetAndEpoch`: `None` if the fetcher's log matches at `(fetch_offset,
    /// last_fetched_epoch)`, else the diverging `(epoch, end offset)` to truncate to.
    pub fn diverging_epoch(
        &self,
        fetch_offset: i64,
        last_fetched_epoch: i32,
    ) -> Option<(i32, i64)> {
        let (epoch, end) = self.end_offset_for_epoch(last_fetched_epoch);
        (epoch != last_fetched_epoch || fetch_offset > end).then_some((epoch, end))
    }

    /// `endOffsetForEpoch` with one answer for "nothing of epoch ≤ `epoch` here": `(0, log start)`.
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let start = self.log.start_offset();
        match self.log.end_offset_for_epoch(epoch) {
            // The log's "every batch is later" answer ends at its start: no record of epoch ≤ `epoch`.
            Some((_, end)) if end <= start => (0, start),
            Some(found) => found,
            None => (0, start),
        }
    }

    /// Where a follower truncates on DivergingEpoch{epoch, end} (Kafka's `truncateToEndOffset`): the
    /// smaller of `end` and its own end offset for `epoch`, never past its LEO.
    pub fn truncation_offset(&self, diverging_epoch: i32, diverging_end: i64) -> i64 {
        let (_, local_end) = self.end_offset_for_epoch(diverging_epoch);
        diverging_end.min(local_end).min(self.log.end_offset())
    }

    fn on_fetch_request(&mut self, now: Millis, from: i32, req: FetchRequest, out: &mut Output) {
        use messages::FetchResponseParts;
        let leader_or_sentinel = self.known_leader_or_sentinel();
        let epoch = self.election.epoch;
        let mut parts = FetchResponseParts {
            top_error: 0,
            error: 0,
            high_watermark: -1,
            leader_id: leader_or_sentinel,
            leader_epoch: epoch,
            diverging: None,
            records: None,
            echo: None,
            log_start_offset: self.log.start_offset(),
        };
        let mut hw_advanced = false;
        'build: {
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                parts.top_error = errors::INCONSISTENT_CLUSTER_ID;
                break 'build;
            }
            let Some(p) = messages::fetch_partition(&req) else {
                parts.top_error = errors::INVALID_REQUEST;
                break 'build;
            };
            parts.echo = Some(messages::FetchEcho {
                epoch: p.current_leader_epoch,
                fetch_offset: p.fetch_offset,
                last_fetched_epoch: p.last_fetched_epoch,
            });
            let replica = ReplicaKey::new(messages::fetch_replica_id(&req), p.replica_directory_id);
            if p.fetch_offset < 0
                || p.last_fetched_epoch < 0
                || replica.id < 0
                || replica.id == self.local.id
            {
                parts.error = errors::INVALID_REQUEST;
                break 'build;
            }
            if p.current_leader_epoch < epoch {
                parts.error = errors::FENCED_LEADER_EPOCH;
                break 'build;
            }
            if p.current_leader_epoch > epoch {
                parts.error = errors::UNKNOWN_LEADER_EPOCH;
                break 'build;
            }
            if !matches!(self.role, RoleState::Leader(_)) {
                parts.error = errors::NOT_LEADER_OR_FOLLOWER;
                break 'build;
            }
            if let Some(diverging) = self.diverging_epoch(p.fetch_offset, p.last_fetched_epoch) {
                parts.diverging = Some(diverging);
                parts.high_watermark = self.high_watermark().unwrap_or(-1);
                break 'build;
            }
            if p.fetch_offset > self.log.end_offset() {
                parts.error = errors::INVALID_REQUEST;
                break 'build;
            }
            if let RoleState::Leader(l) = &mut self.role {
                hw_advanced = l.update_replica(replica, now, p.fetch_offset);
                l.update_check_quorum(now, self.config.check_quorum_timeout_ms);
            }
            parts.high_watermark = self.high_watermark().unwrap_or(-1);
            match self.read_suffix(p.fetch_offset) {
                Ok(records) => parts.records = records,
                Err(e) => {
                    tracing::error!(node = self.local.id, error = %e, "cannot read the log for a fetch");
                    parts.error = -1; // UNKNOWN_SERVER_ERROR
                }
            }
        }
        out.messages.push((
            from,
            Message::FetchResponse(messages::fetch_response(parts)),
        ));
        if hw_advanced {
            self.on_leader_hw_advanced(now, out);
        }
    }

    /// Every record from `from` to the LEO, as Kafka record batches (a batch straddling `from` is cut).
    fn read_suffix(&self, from: i64) -> Result<Option<Bytes>, String> {
        if from >= self.log.end_offset() {
            return Ok(None);
        }
        let mut batches = self.log.read(from, usize::MAX).map_err(|e| e.to_string())?;
        if let Some(first) = batches.first_mut() {
            if first.base_offset < from {
                let skip = (from - first.base_offset) as usize;
                first.records.drain(..skip.min(first.records.len()));
                first.base_offset = from;
            }
        }
        batches.retain(|b| !b.records.is_empty());
        crate::records::encode_batches(&batches)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    fn on_fetch_response(&mut self, now: Millis, from: i32, resp: FetchResponse, out: &mut Output) {
        let Some(reply) = messages::read_fetch_response(&resp) else {
            return;
        };
        let Some(sent) = self.outstanding_fetch else {
            return;
        };
        let matches = from == sent.to
            && reply.echo.is_none_or(|e| {
                (e.epoch, e.fetch_offset, e.last_fetched_epoch)
                    == (sent.epoch, sent.fetch_offset, sent.last_fetched_epoch)
            });
        if !matches {
            return;
        }
        self.outstanding_fetch = None;
        if reply.error != errors::NONE {
            let before = (self.role(), self.election.epoch, self.leader_id());
            let follows = self.maybe_transition(now, reply.leader_epoch, reply.leader_id, out);
            if !follows {
                // Ask the next voter of the latest set (observers looking for the leader).
                self.bootstrap_cursor = self.bootstrap_cursor.wrapping_add(1);
            }
            let changed = before != (self.role(), self.election.epoch, self.leader_id());
            let fetching = matches!(self.role, RoleState::Follower { .. })
                || (self.role() == Role::Unattached && !self.is_voter());
            if fetching && !changed {
                // Same leader (or none) as before: retry after the fetch interval, not in a hot loop.
                self.next_fetch_at = Some(now + self.config.fetch_interval_ms);
            }
            return;
        }
        // A successful reply comes from the leader of the request's epoch.
        if !self.maybe_transition(now, reply.leader_epoch, from, out)
            || reply.leader_epoch != sent.epoch
        {
            return;
        }
        let mut progressed = false;
        if let Some((epoch, end_offset)) = reply.diverging {
            // Kafka applies no HW from a diverging reply: truncate, then fetch again.
            let target = self.truncation_offset(epoch, end_offset);
            if self.hw.is_some_and(|hw| target < hw) {
                tracing::error!(node = self.local.id, target, hw = ?self.hw, "diverging epoch below the HW ignored");
            } else if let Err(e) = self.truncate_log(target) {
                tracing::error!(node = self.local.id, error = %e, "truncation failed");
            } else {
                progressed = true;
            }
        } else {
            if let Some(bytes) = reply.records {
                match self.append_fetched(bytes) {
                    Ok(appended) => progressed = appended,
                    Err(e) => {
                        tracing::warn!(node = self.local.id, error = %e, "fetched records refused")
                    }
                }
            }
            if reply.high_watermark >= 0 {
                let candidate = reply.high_watermark.min(self.log.end_offset());
                if self.hw.is_none_or(|hw| candidate > hw) {
                    self.hw = Some(candidate);
                }
            }
        }
        self.timers.fetch_timeout = Some(now + self.config.fetch_timeout_ms);
        self.next_fetch_at = Some(if progressed {
            now
        } else {
            now + self.config.fetch_interval_ms
        });
    }

    /// Appends fetched batches after the local LEO (records below it are skipped). Returns whether
    /// anything was appended.
    fn append_fetched(&mut self, bytes: Bytes) -> Result<bool, String> {
        let batches = crate::records::decode_batches(bytes).map_err(|e| e.to_string())?;
        let end = self.log.end_offset();
        let mut fresh = Vec::new();
        for mut b in batches {
            if b.next_offset() <= end {
                continue;
            }
            if b.base_offset < end {
                let skip = (end - b.base_offset) as usize;
                b.records.drain(..skip);
                b.base_offset = end;
            }
            fresh.push(b);
        }
        if fresh.is_empty() {
            return Ok(false);
        }
        self.log
            .append_as_follower(fresh)
            .map_err(|e| e.to_string())?;
        self.log.flush().map_err(|e| e.to_string())?;
        self.load_control_records().map_err(|e| e.to_string())?;
        Ok(true)
    }

    // ----- membership changes ---------------------------------------------------------------------

    fn reply_change(
        &mut self,
        client: ClientId,
        kind: ChangeKind,
        key: ReplicaKey,
        code: i16,
        out: &mut Output,
    ) {
        self.last_change_reply = Some(ChangeReply {
            client,
            kind,
            key,
            error_code: code,
        });
        let msg = error_message(code).map(StrBytes::from_static_str);
        let resp = match kind {
            ChangeKind::Add => ClientResponse::AddRaftVoter(
                AddRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_error_message(msg),
            ),
            ChangeKind::Remove => ClientResponse::RemoveRaftVoter(
                RemoveRaftVoterResponse::default()
                    .with_error_code(code)
                    .with_error_message(msg),
            ),
        };
        out.client_replies.push((client, resp));
    }

    /// §3 steps 1 (cluster id, leadership).
    fn check_leader_entry(&self, cluster_id: &Option<StrBytes>) -> Result<(), i16> {
        if messages::cluster_id_mismatch(cluster_id, &self.config.cluster_id) {
            return Err(errors::INCONSISTENT_CLUSTER_ID);
        }
        if !matches!(self.role, RoleState::Leader(_)) {
            return Err(errors::NOT_LEADER_OR_FOLLOWER);
        }
        Ok(())
    }

    /// §3 steps 2–5: no pending change, HW known, `kraft.version` ≥ 1, last VotersRecord committed.
    fn check_change_gate(&self) -> Result<i64, i16> {
        if self.faults.accept_change_while_pending {
            // Seeded fault: skip the one-change-at-a-time rules (pending change, uncommitted record).
            return membership_gate(false, self.high_watermark(), self.kraft_version(), Some(-1));
        }
        membership_gate(
            self.pending.is_some(),
            self.high_watermark(),
            self.kraft_version(),
            self.history.latest_entry().map(|(o, _)| o),
        )
    }

    fn has_default_listener(&self, names: impl IntoIterator<Item = String>) -> bool {
        match self.config.listeners.first() {
            Some(default) => names.into_iter().any(|n| n == default.name),
            None => true,
        }
    }

    fn on_add_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: AddRaftVoterRequest,
        out: &mut Output,
    ) {
        let key = ReplicaKey::new(req.voter_id, req.voter_directory_id);
        let result = (|| {
            self.check_leader_entry(&req.cluster_id)?;
            if req.voter_id < 0 || req.voter_directory_id.is_nil() {
                return Err(errors::INVALID_REQUEST);
            }
            if !self.has_default_listener(req.listeners.iter().map(|l| l.name.to_string())) {
                return Err(errors::INVALID_REQUEST);
            }
            self.check_change_gate()?;
            let latest = self.history.latest();
            if latest.contains_id(key.id) {
                return Err(errors::DUPLICATE_VOTER);
            }
            let caught_up = self.leader_state().is_some_and(|l| l.is_caught_up(&key));
            if !caught_up {
                return Err(errors::REQUEST_TIMED_OUT);
            }
            let node = VoterNode {
                key,
                listeners: req
                    .listeners
                    .iter()
                    .map(|l| Endpoint {
                        name: l.name.to_string(),
                        host: l.host.to_string(),
                        port: l.port,
                    })
                    .collect(),
                supported: SupportedVersions::CURRENT,
            };
            latest.add_voter(node).map_err(|_| errors::DUPLICATE_VOTER)
        })();
        match result {
            Err(code) => self.reply_change(client, ChangeKind::Add, key, code, out),
            Ok(set) => self.append_change(now, client, ChangeKind::Add, key, set, out),
        }
    }

    fn on_remove_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: RemoveRaftVoterRequest,
        out: &mut Output,
    ) {
        let key = ReplicaKey::new(req.voter_id, req.voter_directory_id);
        let result = (|| {
            self.check_leader_entry(&req.cluster_id)?;
            if req.voter_id < 0 || req.voter_directory_id.is_nil() {
                return Err(errors::INVALID_REQUEST);
            }
            self.check_change_gate()?;
            self.history
                .latest()
                .remove_voter(&key)
                .map_err(|_| errors::VOTER_NOT_FOUND)
        })();
        match result {
            Err(code) => self.reply_change(client, ChangeKind::Remove, key, code, out),
            Ok(set) => self.append_change(now, client, ChangeKind::Remove, key, set, out),
        }
    }

    /// Appends the VotersRecord of an accepted Add/Remove; the reply waits for the HW to pass it.
    fn append_change(
        &mut self,
        now: Millis,
        client: ClientId,
        kind: ChangeKind,
        key: ReplicaKey,
        set: VoterSet,
        out: &mut Output,
    ) {
        let offset = self.log.end_offset();
        let deadline = now + self.config.request_timeout_ms;
        let previous = self.pending.replace(PendingChange {
            client,
            kind,
            key,
            offset,
            deadline,
        });
        if let Some(p) = previous {
            // Only reachable with the `accept_change_while_pending` fault: the old request is dropped.
            self.reply_change(p.client, p.kind, p.key, errors::REQUEST_TIMED_OUT, out);
        }
        if let Err(e) = self.leader_append(now, vec![Record::Voters(set)], out) {
            tracing::error!(node = self.local.id, error = %e, "VotersRecord append failed");
            if let Some(p) = self.pending.take() {
                self.reply_change(p.client, p.kind, p.key, -1, out);
            }
        }
    }

    fn on_update_voter(
        &mut self,
        now: Millis,
        client: ClientId,
        req: UpdateRaftVoterRequest,
        out: &mut Output,
    ) {
        use kafka_protocol::messages::update_raft_voter_response::CurrentLeader;
        use kafka_protocol::messages::BrokerId;
        let result = (|| {
            if messages::cluster_id_mismatch(&req.cluster_id, &self.config.cluster_id) {
                return Err(errors::INCONSISTENT_CLUSTER_ID);
            }
            if req.current_leader_epoch < self.election.epoch {
                return Err(errors::FENCED_LEADER_EPOCH);
            }
            if req.current_leader_epoch > self.election.epoch {
                return Err(errors::UNKNOWN_LEADER_EPOCH);
            }
            self.check_leader_entry(&None)?;
            if req.voter_id < 0 || req.voter_directory_id.is_nil() {
                return Err(errors::INVALID_REQUEST);
            }
            if !self.has_default_listener(req.listeners.iter().map(|l| l.name.to_string())) {
                return Err(errors::INVALID_REQUEST);
            }
            let f = &req.k_raft_version_feature;
            if f.min_supported_version < 0
                || f.max_supported_version < 0
                || f.max_supported_version < f.min_supported_version
            {
                return Err(errors::INVALID_REQUEST);
            }
            self.check_change_gate()?;
            let supported = SupportedVersions {
                min: f.min_supported_version,
                max: f.max_supported_version,
            };
            if !supported.contains(self.kraft_version()) {
                return Err(errors::INVALID_REQUEST);
            }
            let node = VoterNode {
                key: ReplicaKey::new(req.voter_id, req.voter_directory_id),
                listeners: req
                    .listeners
                    .iter()
                    .map(|l| Endpoint {
                        name: l.name.to_string(),
                        host: l.host.to_string(),
                        port: l.port,
                    })
                    .collect(),
                supported,
            };
            self.history
                .latest()
                .update_voter(node)
                .map_err(|_| errors::VOTER_NOT_FOUND)
        })();
        let code = match result {
            Err(code) => code,
            Ok(set) => match self.leader_append(now, vec![Record::Voters(set)], out) {
                Ok(_) => errors::NONE,
                Err(e) => {
                    tracing::error!(node = self.local.id, error = %e, "VotersRecord append failed");
                    -1
                }
            },
        };
        let (host, port) = self
            .config
            .listeners
            .first()
            .map_or((String::new(), -1), |e| (e.host.clone(), e.port as i32));
        let leader = CurrentLeader::default()
            .with_leader_id(BrokerId(self.known_leader_or_sentinel()))
            .with_leader_epoch(self.election.epoch)
            .with_host(StrBytes::from_string(host))
            .with_port(port);
        let resp = UpdateRaftVoterResponse::default()
            .with_error_code(code)
            .with_current_leader(leader);
        out.client_replies
            .push((client, ClientResponse::UpdateRaftVoter(resp)));
    }

    // ----- ApiVersions and DescribeQuorum ---------------------------------------------------------

    /// The APIs this node serves and the `kraft.version` feature (supported [0, 1], finalized = current).
    /// Features are only visible to clients at ApiVersions v3+ (v4 for a feature whose min is 0).
    pub fn api_versions(&self, _req: &ApiVersionsRequest) -> ApiVersionsResponse {
        use kafka_protocol::messages::api_versions_response::{
            ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
        };
        let apis = SUPPORTED_APIS
            .iter()
            .map(|&(key, min, max)| {
                ApiVersion::default()
                    .with_api_key(key)
                    .with_min_version(min)
                    .with_max_version(max)
            })
            .collect();
        let level = self.kraft_version();
        ApiVersionsResponse::default()
            .with_api_keys(apis)
            .with_supported_features(vec![SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str("kraft.version"))
                .with_min_version(SupportedVersions::CURRENT.min)
                .with_max_version(SupportedVersions::CURRENT.max)])
            .with_finalized_features(vec![FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str("kraft.version"))
                .with_min_version_level(level)
                .with_max_version_level(level)])
            .with_finalized_features_epoch(self.high_watermark().unwrap_or(-1))
    }

    /// DescribeQuorum at `version` (0–3) with Kafka's behaviour (KIP-1204 §4–5). Expires stale observers.
    pub fn describe_quorum(
        &mut self,
        now: Millis,
        version: i16,
        req: &DescribeQuorumRequest,
    ) -> DescribeQuorumResponse {
        let version = version.clamp(0, crate::wire::describe_quorum::MAX_VERSION);
        let empty_partition = |index: i32, code: i16| PartitionData {
            partition_index: index,
            error_code: code,
            error_message: Some(error_message(code).unwrap_or("").to_string()),
            leader_id: 0,
            leader_epoch: 0,
            high_watermark: 0,
            current_voters: Vec::new(),
            observers: Vec::new(),
            committed_voters: Vec::new(),
            unknown_tagged_fields: Default::default(),
        };
        let topic = |name: String, partitions: Vec<PartitionData>| TopicData {
            topic_name: name,
            partitions,
            unknown_tagged_fields: Default::default(),
        };
        let response = |topics: Vec<TopicData>, nodes| DescribeQuorumResponse {
            error_code: errors::NONE,
            error_message: Some(String::new()),
            topics,
            nodes,
            unknown_tagged_fields: Default::default(),
        };
        let valid = matches!(req.topics.as_slice(), [t] if t.topic_name == METADATA_TOPIC
            && matches!(t.partitions.as_slice(), [p] if p.partition_index == METADATA_PARTITION));
        if !valid {
            let topics = req
                .topics
                .iter()
                .map(|t| {
                    let parts = t
                        .partitions
                        .iter()
                        .map(|p| {
                            empty_partition(p.partition_index, errors::UNKNOWN_TOPIC_OR_PARTITION)
                        })
                        .collect();
                    topic(t.topic_name.clone(), parts)
                })
                .collect();
            return response(topics, Vec::new());
        }
        let expiry = self.config.observer_expiry_ms;
        let committed = self.committed_voters().cloned();
        let epoch = self.election.epoch;
        let local_id = self.local.id;
        let RoleState::Leader(leader) = &mut self.role else {
            let p = empty_partition(METADATA_PARTITION, errors::NOT_LEADER_OR_FOLLOWER);
            return response(vec![topic(METADATA_TOPIC.to_string(), vec![p])], Vec::new());
        };
        leader.expire_observers(now, expiry);
        let lists = leader.describe(now, version, committed.as_ref());
        let p = PartitionData {
            partition_index: METADATA_PARTITION,
            error_code: errors::NONE,
            error_message: Some(String::new()),
            leader_id: local_id,
            leader_epoch: epoch,
            high_watermark: leader.high_watermark().unwrap_or(-1),
            current_voters: lists.current_voters,
            observers: lists.observers,
            committed_voters: lists.committed_voters,
            unknown_tagged_fields: Default::default(),
        };
        response(
            vec![topic(METADATA_TOPIC.to_string(), vec![p])],
            lists.nodes,
        )
    }
}

/// APIs served by a KRaft node: (api key, min version, max version).
pub const SUPPORTED_APIS: [(i16, i16, i16); 10] = [
    (1, 15, 17), // Fetch (replica id in ReplicaState from v15, directory id from v17)
    (18, 0, 4),  // ApiVersions
    (52, 0, 1),  // Vote (no pre-vote)
    (53, 0, 1),  // BeginQuorumEpoch
    (54, 0, 1),  // EndQuorumEpoch
    (55, 0, 3),  // DescribeQuorum (v3: CommittedVoters, KIP-1204)
    (60, 0, 2),  // DescribeCluster (controllers, KIP-919)
    (80, 0, 0),  // AddRaftVoter
    (81, 0, 0),  // RemoveRaftVoter
    (82, 0, 0),  // UpdateRaftVoter
];

/// The membership-change gate at the leader (§3 steps 2–5, in this order): another change pending →
/// REQUEST_TIMED_OUT; HW unknown → REQUEST_TIMED_OUT; `kraft.version` < 1 → UNSUPPORTED_VERSION; the last
/// VotersRecord not below the HW (or none, static voters) → REQUEST_TIMED_OUT. Returns the HW.
pub fn membership_gate(
    change_pending: bool,
    high_watermark: Option<i64>,
    kraft_version: i16,
    last_voters_offset: Option<i64>,
) -> Result<i64, i16> {
    if change_pending {
        return Err(errors::REQUEST_TIMED_OUT);
    }
    let Some(hw) = high_watermark else {
        return Err(errors::REQUEST_TIMED_OUT);
    };
    if kraft_version < 1 {
        return Err(errors::UNSUPPORTED_VERSION);
    }
    match last_voters_offset {
        Some(o) if o < hw => Ok(hw),
        _ => Err(errors::REQUEST_TIMED_OUT),
    }
}
