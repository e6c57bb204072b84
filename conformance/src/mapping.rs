//! The mapping between the model (`model`) and the implementation (`kraft`), both ways.
//!
//! # Identities
//! Model server `i` is `kraft` node id `i`, directory id [`directory_id`]`(i)` (the model's directory id
//! 0; [`directory_id_at`]`(i, d)` is its directory id `d`, read back by [`model_dir`] from the voter keys
//! of Vote, BeginQuorumEpoch and Fetch requests), one listener
//! `CONTROLLER://node<i>.conformance:<9000+i>`. The cluster id is [`CLUSTER_ID`]. Initial voters are
//! formatted with the bootstrap checkpoint (`Bootstrap::Checkpoint`, `kraft.version` 1) holding the model's
//! bootstrap set; joiners get the same checkpoint (contract §1).
//!
//! # Model actions → implementation inputs (see `harness`)
//! - `Deliver(m)`: the in-flight `kraft` message whose abstraction is `m` is handed to `dst.handle(now,
//!   src, msg)`. Messages travel as the kafka-protocol structs the implementation emitted, encoded and
//!   decoded at the version the shell uses ([`wire_version`]), so what crosses is what a socket carries.
//!   On a duplicating network the message stays in flight; `Drop(m)` removes it. A delivered request
//!   must be answered in that same output (`Output::replies`), once, to its sender; no other input may
//!   produce a reply.
//! - `Fetch{replica, leader}` (sync mode): `Harness::fetch_from(now, leader)` (the model names the target,
//!   as an observer's bootstrap choice would); the implementation must send exactly one FetchRequest, to
//!   `leader`; it is delivered at once, and the FetchResponse the leader
//!   returns is delivered back at once. Async mode: the request goes into the network like any message.
//! - `ElectionTimeout`, `FetchTimeout`, `CheckQuorumTimeout`, `ChangeTimeout`: the node's clock is advanced
//!   to that timer's deadline and exactly that timer fires (`Harness::fire`); the timer must be armed.
//! - `Restart(i)`: node `i` is rebuilt by `Node::new` from its durable log (its `AppendLog` and
//!   `TruncateLog` effects applied in order, which must rebuild the node's own log after every input) and
//!   the last election state it asked the shell to persist (`Effect::PersistElectionState`); nothing else
//!   survives. Messages in flight stay. A node that comes back Candidate or Resigned fires its
//!   `FirstPoll` timer (due at once; the shell's first `tick`) in the same step: its Vote requests, or
//!   its EndQuorumEpoch requests to the other voters, are part of the model's `Restart`.
//! - `DiskLoss(i)` is not mapped yet: the replay refuses it (no graph or walk of the gate has one).
//! - Every `Effect::FlushLog` completes at once; it must cover the node's whole log (`up_to` = its end).
//! - `Change{server, op}`: an AddRaftVoter/RemoveRaftVoter request for `op`'s replica key (its directory
//!   id, its default listener) through `handle_client`. The model's `Swap` (bug variant) has no request.
//!   An add that passes the arrival checks makes the leader send ApiVersions to the new voter (KIP-853;
//!   the model has no such step): within the same `Change` step the harness hands that request (through
//!   the wire, [`wire_version`]) to the new voter's `Node::api_versions` and its answer back to the
//!   leader's `handle`, so the model's one `Change` step is the request, the round trip and the reply. The
//!   round trip's error paths (no answer, an error answer, a range without the finalized `kraft.version`)
//!   are outside the model and tested in `impl` only. An ApiVersions message anywhere else is an error.
//! - `TakeSnapshot(i)`: `Harness::take_snapshot_now` (own snapshots on, every trigger off:
//!   [`snapshot_config`]); the harness writes the file in memory (`SnapshotEncoder`, control records only)
//!   and answers `Node::snapshot_taken`. `AdvanceLogStart(i)`: `Harness::clean_now` with a retention limit of
//!   0 bytes (the log start moves to the latest snapshot, `Effect::MoveLogStart`).
//! - `FetchSnapshot{replica, leader}`: the whole download, as FetchSnapshot round trips of at most
//!   [`SNAPSHOT_CHUNK_BYTES`]: `Harness::fetch_from` must send one FetchSnapshotRequest to `leader` naming the
//!   snapshot being downloaded at the position written so far; it is delivered at once, the leader's
//!   FetchSnapshotResponse gets its chunk from the leader's file (`fill_snapshot_chunk`) and is delivered
//!   back at once, the chunk goes to the replica's `.checkpoint.part`; until the last chunk the abstract
//!   state of both nodes must stay the one before the step. The shell installs the complete download
//!   (`Effect::CompleteSnapshot`: file parsed, log truncated fully, `Node::snapshot_loaded`) in the same
//!   step. Every message crosses the wire codec. A `Restart` rebuilds the node with
//!   `Node::with_snapshots` from the files `kraft::storage::kept_at_start` keeps; a follower that
//!   downloads first takes one chunk from a leader that serves it, so it restarts with a
//!   `.checkpoint.part` on disk (the model's `CrashDuringInstall`).
//! - `ClientAppend(i)`: `Node::append` of one Data record.
//! - `Resign(i)` (a leader whose own removal is committed): no input. Kafka resigns at the leader's next
//!   poll, before anything else reaches it; the implementation resigns within the input that committed
//!   the removal, and the model always schedules the due `Resign` right after that step. The two model
//!   steps are one implementation step: the replay compares after the `Resign`.
//!
//! # Implementation state → model state ([`abstract_view`])
//! From `node.view()`: role, epoch, leader, voted-for, the log (offset i = record i, its epoch, its kind;
//! a VotersRecord as the set of its ids), HW, latest and committed voter sets; at a leader, the epoch
//! start offset, every other replica's end offset and caught-up flag, and the pending change; the
//! outstanding fetch; the log start, the snapshots held other than the bootstrap one (end offset, epoch,
//! voter set) and the snapshot being downloaded. Operator replies are compared per step (the model's `Step::replies`), and the
//! messages sent are compared as the multiset of in-flight envelopes after every step.
//!
//! # Where the model is deliberately more abstract
//! - **Timestamps**: the model has no clock. Each node has its own clock that moves 1 ms per input and
//!   jumps to a timer's deadline when the model fires that timer; timers are only fired on the model's
//!   command, never by `tick`. Observer expiry is set beyond any run (the model never expires observers).
//!   DescribeQuorum timestamps are not compared.
//! - **Endpoints and directory ids**: the model knows ids only. A VotersRecord or voter set abstracts to
//!   its ids; [`abstract_view`] also checks that every voter carries the directory id and listener of its
//!   id, so nothing is lost silently.
//! - **Batch framing**: the model has records one-to-one with offsets; batches (and the record bytes
//!   of a Fetch response) abstract to their records.
//! - **Acknowledgements the model leaves out**: BeginQuorumEpoch and EndQuorumEpoch *responses* are not
//!   in the model's network; the harness drops them when they are sent. Their only use in Kafka is to let
//!   a stale sender learn a newer epoch, which the model gets through the other messages.
//! - **Candidate votes** (`Server::votes`) are not in `NodeView`: they are compared through their effect
//!   (the step at which the candidate becomes leader).
//! - **Fields of a role the node is not in**: `epoch_start`, `end`, `caught_up`, `pending` only at a
//!   leader (the model resets them on every role change, the implementation drops its leader state).

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::{
    AddRaftVoterRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest,
    FetchResponse, RemoveRaftVoterRequest, UpdateRaftVoterRequest, VoteRequest, VoteResponse,
};
use kafka_protocol::protocol::StrBytes;
use kraft::node::{
    errors, Bootstrap, EntryKind, FetchEcho, Message, Node, NodeConfig, NodeView, Role as KRole,
    SnapshotConfig, SnapshotId as KSnapshotId, FETCH_ECHO_TAG,
};
use kraft::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};
use model::types::{
    bit, ids, ChangeOp, Entry, ErrorCode, FetchKey, Id, Kind, Log, Mask, Msg, PendingChange, Role,
};
use uuid::Uuid;

/// Cluster id of every conformance node.
pub const CLUSTER_ID: &str = "conformance-cluster";
/// The listener name every node uses as its default.
pub const LISTENER: &str = "CONTROLLER";
/// Observer expiry beyond any run: the model never forgets a replica's progress within an epoch.
pub const NEVER: u64 = u64::MAX / 4;

/// The directory ids the mapping hands out: a fixed prefix, the model's directory id (incarnation)
/// in bits 32..40, the server id + 1 in the low bits.
const DIRECTORY_PREFIX: u128 = 0x6b72_6166_7400_0000_0000_0000_0000_0000;

/// Directory id of model server `i` with its first disk (never nil).
pub fn directory_id(i: Id) -> Uuid {
    directory_id_at(i, 0)
}

/// Directory id of model server `i` at model directory id `dir` (after `dir` disk losses).
pub fn directory_id_at(i: Id, dir: u8) -> Uuid {
    Uuid::from_u128(DIRECTORY_PREFIX | (u128::from(dir) << 32) | (u128::from(i) + 1))
}

/// The model directory id of `u`, which must be one the mapping gave server `i`.
pub fn model_dir(u: Uuid, i: Id, what: &str) -> Result<u8, String> {
    let dir = ((u.as_u128() >> 32) & 0xFF) as u8;
    if directory_id_at(i, dir) == u {
        Ok(dir)
    } else {
        Err(format!("{what} {u} is not a directory id of server {i}"))
    }
}

/// The ids of a model voter set. The gate's runs keep every directory id at 0 (the mapping's
/// [`directory_id`]), which [`mask_of`] checks on the implementation's side.
pub fn model_ids(v: model::types::VoterSet) -> Mask {
    v.ids()
}

/// The one listener of model server `i`.
pub fn endpoint(i: Id) -> Endpoint {
    Endpoint {
        name: LISTENER.to_string(),
        host: format!("node{i}.conformance"),
        port: 9000 + u16::from(i),
    }
}

/// True if `e` is [`endpoint`]`(i)`, without building it (the graph replay checks every voter set).
fn is_endpoint(e: &Endpoint, i: Id) -> bool {
    static TABLE: std::sync::OnceLock<Vec<Endpoint>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| (0..=Id::MAX).map(endpoint).collect());
    *e == table[usize::from(i)]
}

/// The replica key of model server `i`.
pub fn replica_key(i: Id) -> ReplicaKey {
    ReplicaKey::new(i32::from(i), directory_id(i))
}

/// The voter node of model server `i`, as a bootstrap checkpoint or an AddRaftVoter writes it.
pub fn voter_node(i: Id) -> VoterNode {
    VoterNode {
        key: replica_key(i),
        listeners: vec![endpoint(i)],
        supported: SupportedVersions::CURRENT,
    }
}

/// The voter set of a mask.
pub fn voter_set(mask: Mask) -> Result<VoterSet, String> {
    VoterSet::new(ids(mask).map(voter_node)).map_err(|e| format!("voter set {mask:#b}: {e}"))
}

/// Timer settings of every node. Only their deadlines matter (timers fire on the model's command).
pub const ELECTION_TIMEOUT_MS: u64 = 1000;
pub const FETCH_TIMEOUT_MS: u64 = 2000;
pub const FETCH_INTERVAL_MS: u64 = 50;
pub const CHECK_QUORUM_TIMEOUT_MS: u64 = 3000;
pub const REQUEST_TIMEOUT_MS: u64 = 2000;

/// Configuration of model server `i` in a cluster with bootstrap set `bootstrap`.
pub fn node_config(i: Id, bootstrap: Mask, seed: u64) -> Result<NodeConfig, String> {
    Ok(NodeConfig {
        cluster_id: CLUSTER_ID.to_string(),
        node_id: i32::from(i),
        directory_id: directory_id(i),
        listeners: vec![endpoint(i)],
        bootstrap: Bootstrap::Checkpoint(voter_set(bootstrap)?),
        bootstrap_servers: Vec::new(),
        election_timeout_ms: ELECTION_TIMEOUT_MS,
        fetch_timeout_ms: FETCH_TIMEOUT_MS,
        fetch_interval_ms: FETCH_INTERVAL_MS,
        fetch_max_wait_ms: 0,
        check_quorum_timeout_ms: CHECK_QUORUM_TIMEOUT_MS,
        request_timeout_ms: REQUEST_TIMEOUT_MS,
        observer_expiry_ms: NEVER,
        seed: seed ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        snapshots: snapshot_config(),
        auto_join: false,
    })
}

/// Own snapshots on, every trigger off: a node takes a snapshot only when the model's `TakeSnapshot`
/// asks (`Harness::take_snapshot_now`), and moves its log start only when `AdvanceLogStart` asks
/// (`Harness::clean_now`, with a retention limit of 0 bytes, so the start moves up to the latest snapshot).
/// A FetchSnapshot answer carries at most [`SNAPSHOT_CHUNK_BYTES`]: every download takes several chunks.
pub fn snapshot_config() -> SnapshotConfig {
    SnapshotConfig {
        enabled: true,
        max_record_bytes_between_snapshots: u64::MAX,
        max_snapshot_interval_ms: 0,
        max_retention_bytes: 0,
        max_retention_ms: -1,
        clean_interval_ms: NEVER,
        fetch_snapshot_max_bytes: SNAPSHOT_CHUNK_BYTES,
    }
}

/// The replayed nodes' FetchSnapshot `MaxBytes`: below half the smallest snapshot file the replay writes
/// (its control records alone), so a download takes at least two chunks.
pub const SNAPSHOT_CHUNK_BYTES: i32 = 64;

/// The request for an operator change, as the admin client sends it.
pub enum ChangeRequest {
    Add(AddRaftVoterRequest),
    Remove(RemoveRaftVoterRequest),
    /// As the voter sends it, with `CurrentLeaderEpoch` still 0: the sender sets the receiver's
    /// epoch (the model's update is never fenced).
    Update(UpdateRaftVoterRequest),
}

/// `op` as a request; `None` for the swap bug, which has no Kafka request.
pub fn change_request(op: ChangeOp) -> Option<ChangeRequest> {
    use kafka_protocol::messages::add_raft_voter_request::Listener;
    let cluster = Some(StrBytes::from_static_str(CLUSTER_ID));
    match op {
        ChangeOp::Add(j) => {
            let e = endpoint(j);
            let listener = Listener::default()
                .with_name(StrBytes::from_string(e.name))
                .with_host(StrBytes::from_string(e.host))
                .with_port(e.port);
            Some(ChangeRequest::Add(
                AddRaftVoterRequest::default()
                    .with_cluster_id(cluster)
                    .with_timeout_ms(REQUEST_TIMEOUT_MS as i32)
                    .with_voter_id(i32::from(j))
                    .with_voter_directory_id(directory_id(j))
                    .with_listeners(vec![listener]),
            ))
        }
        ChangeOp::Remove(j) => Some(ChangeRequest::Remove(
            RemoveRaftVoterRequest::default()
                .with_cluster_id(cluster)
                .with_voter_id(i32::from(j))
                .with_voter_directory_id(directory_id(j)),
        )),
        ChangeOp::Update(j) => {
            use kafka_protocol::messages::update_raft_voter_request::{
                KRaftVersionFeature, Listener,
            };
            let e = endpoint(j);
            let listener = Listener::default()
                .with_name(StrBytes::from_string(e.name))
                .with_host(StrBytes::from_string(e.host))
                .with_port(e.port);
            let v = SupportedVersions::CURRENT;
            Some(ChangeRequest::Update(
                UpdateRaftVoterRequest::default()
                    .with_cluster_id(cluster)
                    .with_voter_id(i32::from(j))
                    .with_voter_directory_id(directory_id(j))
                    .with_listeners(vec![listener])
                    .with_k_raft_version_feature(
                        KRaftVersionFeature::default()
                            .with_min_supported_version(v.min)
                            .with_max_supported_version(v.max),
                    ),
            ))
        }
        ChangeOp::Swap { .. } => None,
    }
}

/// The model's error codes and Kafka's: the one correspondence between them.
const ERROR_CODES: [(ErrorCode, i16); 8] = [
    (ErrorCode::None, errors::NONE),
    (
        ErrorCode::NotLeaderOrFollower,
        errors::NOT_LEADER_OR_FOLLOWER,
    ),
    (ErrorCode::RequestTimedOut, errors::REQUEST_TIMED_OUT),
    (ErrorCode::UnsupportedVersion, errors::UNSUPPORTED_VERSION),
    (ErrorCode::FencedLeaderEpoch, errors::FENCED_LEADER_EPOCH),
    (ErrorCode::UnknownLeaderEpoch, errors::UNKNOWN_LEADER_EPOCH),
    (ErrorCode::DuplicateVoter, errors::DUPLICATE_VOTER),
    (ErrorCode::VoterNotFound, errors::VOTER_NOT_FOUND),
];

/// Kafka error code → the model's, `None` for a code the model does not know.
pub fn error_code(code: i16) -> Option<ErrorCode> {
    ERROR_CODES
        .iter()
        .find(|(_, k)| *k == code)
        .map(|(m, _)| *m)
}

/// The model's error code → Kafka's.
pub fn kafka_code(e: ErrorCode) -> i16 {
    ERROR_CODES
        .iter()
        .find(|(m, _)| *m == e)
        .map_or(errors::UNKNOWN_SERVER_ERROR, |(_, k)| *k)
}

fn small<T: TryInto<u8> + Copy + std::fmt::Debug>(v: T, what: &str) -> Result<u8, String> {
    v.try_into()
        .map_err(|_| format!("{what} {v:?} does not fit the model"))
}

fn id_of(v: i32, what: &str) -> Result<Id, String> {
    small(v, what)
}

/// The ids of a voter set, checking every voter's identity against the mapping.
pub fn mask_of(set: &VoterSet) -> Result<Mask, String> {
    let mut m: Mask = 0;
    for n in set.nodes() {
        let i = id_of(n.key.id, "voter id")?;
        if n.key != replica_key(i) {
            return Err(format!(
                "voter {} has key {:?}, expected {:?}",
                i,
                n.key,
                replica_key(i)
            ));
        }
        if !matches!(n.listeners.as_slice(), [e] if is_endpoint(e, i)) {
            return Err(format!(
                "voter {i} has listeners {:?}, expected {:?}",
                n.listeners,
                vec![endpoint(i)]
            ));
        }
        m |= bit(i);
    }
    Ok(m)
}

fn kind_of(kind: &EntryKind) -> Result<Kind, String> {
    Ok(match kind {
        EntryKind::Data => Kind::Data,
        EntryKind::LeaderChange => Kind::LeaderChange,
        EntryKind::KRaftVersion(1) => Kind::KRaftVersion,
        EntryKind::KRaftVersion(v) => {
            return Err(format!("KRaftVersionRecord level {v}, the model writes 1"))
        }
        EntryKind::Voters(set) => Kind::Voters(model::types::VoterSet::of(mask_of(set)?)),
    })
}

fn record_kind(r: &kraft::log::Record) -> Result<Kind, String> {
    Ok(match r {
        kraft::log::Record::Data(_) => Kind::Data,
        kraft::log::Record::LeaderChange { .. } => Kind::LeaderChange,
        kraft::log::Record::KRaftVersion(1) => Kind::KRaftVersion,
        kraft::log::Record::KRaftVersion(v) => return Err(format!("KRaftVersionRecord level {v}")),
        kraft::log::Record::Voters(set) => Kind::Voters(model::types::VoterSet::of(mask_of(set)?)),
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
    pub role: Role,
    pub epoch: u8,
    pub leader: Option<Id>,
    pub voted_for: Option<Id>,
    pub log: Vec<Entry>,
    pub hw: Option<u8>,
    pub latest_voters: Mask,
    pub committed_voters: Option<Mask>,
    /// Leader only.
    pub epoch_start: Option<u8>,
    /// Leader only: other replicas' end offsets (`None` = unknown), by id.
    pub end: BTreeMap<Id, Option<u8>>,
    /// Leader only: other replicas that caught up in this epoch.
    pub caught_up: Mask,
    /// Leader only.
    pub pending: Option<PendingChange>,
    pub fetching: Option<FetchKey>,
    /// Log start offset (0 until a snapshot replaces the prefix).
    pub log_start: u8,
    /// The snapshots held other than the bootstrap one, ascending: (end offset, epoch, voter set).
    pub snapshots: Vec<(u8, u8, Mask)>,
    /// Follower: the snapshot being downloaded (end offset, epoch).
    pub fetching_snapshot: Option<(u8, u8)>,
}

impl Abstract {
    /// Field-by-field rendering, for side-by-side reports.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        use model::story::{entries, set};
        let log = entries(&self.log);
        let snapshots = self
            .snapshots
            .iter()
            .map(|(e, p, v)| format!("({e},{p}){}", set(*v)))
            .collect::<Vec<_>>()
            .join(" ");
        let end = self
            .end
            .iter()
            .filter_map(|(i, o)| o.map(|o| format!("{i}:{o}")))
            .collect::<Vec<_>>()
            .join(",");
        vec![
            ("role", format!("{:?}", self.role)),
            ("epoch", self.epoch.to_string()),
            ("leader", format!("{:?}", self.leader)),
            ("voted_for", format!("{:?}", self.voted_for)),
            ("log", format!("[{log}]")),
            ("hw", self.hw.map_or("unknown".into(), |h| h.to_string())),
            ("latest_voters", set(self.latest_voters)),
            (
                "committed_voters",
                self.committed_voters.map_or("none".into(), set),
            ),
            ("epoch_start", format!("{:?}", self.epoch_start)),
            ("end_offsets", format!("{{{end}}}")),
            ("caught_up", set(self.caught_up)),
            ("pending", format!("{:?}", self.pending)),
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
    committed: Option<Mask>,
    servers: usize,
) -> Abstract {
    let leading = s.role == Role::Leader;
    Abstract {
        role: s.role,
        epoch: s.epoch,
        leader: s.leader,
        voted_for: s.voted_for,
        log: s.log.as_slice().to_vec(),
        hw: s.hw,
        latest_voters: model_ids(model::spec::latest_voters(bootstrap, &s.log)),
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
        fetching: s.fetching,
        log_start: s.log.start(),
        snapshots: {
            let mut v: Vec<(u8, u8, Mask)> = [s.log.base(), s.snapshot]
                .into_iter()
                .flatten()
                .map(|p| (p.id.end, p.id.epoch, model_ids(p.voters)))
                .collect();
            v.sort();
            v.dedup();
            v
        },
        fetching_snapshot: s.fetching_snapshot.map(|i| (i.end, i.epoch)),
    }
}

/// The implementation side of the projection. `leader_state` gives the epoch start offset.
pub fn abstract_view(
    me: Id,
    node: &Node,
    v: &NodeView,
    epoch_start: Option<i64>,
    servers: usize,
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
    let mut end = BTreeMap::new();
    let mut caught_up: Mask = 0;
    if leading {
        for j in (0..servers as Id).filter(|&j| j != me) {
            end.insert(j, None);
        }
        for r in &v.replicas {
            let j = id_of(r.key.id, "replica id")?;
            if j == me {
                continue;
            }
            if r.key != replica_key(j) {
                return Err(format!("leader tracks replica {j} under key {:?}", r.key));
            }
            let o = r
                .end_offset
                .map(|o| small(o, "replica end offset"))
                .transpose()?;
            if end.insert(j, o).is_none() {
                return Err(format!("leader tracks unknown replica {j}"));
            }
            if r.caught_up {
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
        _ => None,
    };
    let fetching = match &v.outstanding_fetch {
        Some(f) => Some(FetchKey {
            epoch: small(f.epoch, "fetch epoch")?,
            fetch_offset: small(f.fetch_offset, "fetch offset")?,
            last_fetched_epoch: small(f.last_fetched_epoch, "last fetched epoch")?,
            replica_dir: 0,
        }),
        None => None,
    };
    Ok(Abstract {
        role,
        epoch: small(v.epoch, "epoch")?,
        leader: v.leader_id.map(|l| id_of(l, "leader id")).transpose()?,
        voted_for: v.voted.map(|k| id_of(k.id, "voted-for id")).transpose()?,
        log,
        hw: v.high_watermark.map(|h| small(h, "HW")).transpose()?,
        latest_voters: mask_of(&v.latest_voters)?,
        committed_voters: v.committed_voters.as_ref().map(mask_of).transpose()?,
        epoch_start: if leading {
            Some(small(epoch_start.unwrap_or(-1), "epoch start offset")?)
        } else {
            None
        },
        end,
        caught_up,
        pending,
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
                    mask_of(voters)?,
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

/// The kafka-protocol version the shell writes each Raft RPC at (the served maxima of the node's one
/// API table, `kraft::wire::apis`).
pub fn wire_version(msg: &Message) -> i16 {
    use kafka_protocol::messages::ApiKey;
    use kraft::wire::apis::max_version;
    match msg {
        Message::VoteRequest(_) | Message::VoteResponse(_) => max_version(ApiKey::Vote),
        Message::BeginQuorumEpochRequest(_) | Message::BeginQuorumEpochResponse(_) => {
            max_version(ApiKey::BeginQuorumEpoch)
        }
        Message::EndQuorumEpochRequest(_) | Message::EndQuorumEpochResponse(_) => {
            max_version(ApiKey::EndQuorumEpoch)
        }
        Message::FetchRequest(_) | Message::FetchResponse(_) => max_version(ApiKey::Fetch),
        Message::FetchSnapshotRequest(_) | Message::FetchSnapshotResponse(_) => {
            max_version(ApiKey::FetchSnapshot)
        }
        Message::ApiVersionsRequest(_) | Message::ApiVersionsResponse(_) => {
            max_version(ApiKey::ApiVersions)
        }
        Message::UpdateRaftVoterRequest(_) | Message::UpdateRaftVoterResponse(_) => {
            max_version(ApiKey::UpdateRaftVoter)
        }
        // kafka-protocol knows AddRaftVoter v0 only; v1 adds one request field (`wire::add_raft_voter`).
        Message::AddRaftVoterRequest(_) | Message::AddRaftVoterResponse(_) => 0,
        Message::RemoveRaftVoterRequest(_) | Message::RemoveRaftVoterResponse(_) => {
            max_version(ApiKey::RemoveRaftVoter)
        }
    }
}

/// Encodes and decodes `msg` with kafka-protocol at [`wire_version`]: what a socket would carry.
pub fn through_wire(msg: &Message) -> Result<Message, String> {
    through_wire_digest(msg).map(|(m, _)| m)
}

/// [`through_wire`], and a digest of the bytes (the graph replay's fingerprint of a message).
pub fn through_wire_digest(msg: &Message) -> Result<(Message, u64), String> {
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable};
    use std::hash::{Hash, Hasher};
    let mut digest = crate::fingerprint::hasher();
    let mut rt = |m: &dyn Fn(&mut BytesMut) -> Result<(), String>| -> Result<bytes::Bytes, String> {
        let mut buf = BytesMut::with_capacity(256);
        m(&mut buf)?;
        buf.hash(&mut digest);
        Ok(buf.freeze())
    };
    fn back<T: Decodable>(mut bytes: bytes::Bytes, v: i16, name: &str) -> Result<T, String> {
        let back =
            T::decode(&mut bytes, v).map_err(|e| format!("{name} v{v} does not decode: {e}"))?;
        if !bytes.is_empty() {
            return Err(format!(
                "{name} v{v}: {} bytes left after decoding",
                bytes.len()
            ));
        }
        Ok(back)
    }
    fn enc<T: Encodable>(m: &T, v: i16, name: &str, buf: &mut BytesMut) -> Result<(), String> {
        m.encode(buf, v)
            .map_err(|e| format!("{name} v{v} does not encode: {e}"))
    }
    let v = wire_version(msg);
    macro_rules! rt {
        ($variant:ident, $m:expr) => {{
            let name = stringify!($variant);
            let bytes = rt(&|b: &mut BytesMut| enc($m, v, name, b))?;
            Message::$variant(back(bytes, v, name)?)
        }};
    }
    let out = match msg {
        Message::VoteRequest(m) => rt!(VoteRequest, m),
        Message::VoteResponse(m) => rt!(VoteResponse, m),
        Message::BeginQuorumEpochRequest(m) => rt!(BeginQuorumEpochRequest, m),
        Message::BeginQuorumEpochResponse(m) => rt!(BeginQuorumEpochResponse, m),
        Message::EndQuorumEpochRequest(m) => rt!(EndQuorumEpochRequest, m),
        Message::EndQuorumEpochResponse(m) => rt!(EndQuorumEpochResponse, m),
        Message::FetchRequest(m) => rt!(FetchRequest, m),
        Message::FetchResponse(m) => rt!(FetchResponse, m),
        Message::FetchSnapshotRequest(m) => rt!(FetchSnapshotRequest, m),
        Message::FetchSnapshotResponse(m) => rt!(FetchSnapshotResponse, m),
        Message::ApiVersionsRequest(m) => rt!(ApiVersionsRequest, m),
        Message::ApiVersionsResponse(m) => rt!(ApiVersionsResponse, m),
        Message::UpdateRaftVoterRequest(m) => rt!(UpdateRaftVoterRequest, m),
        Message::UpdateRaftVoterResponse(m) => rt!(UpdateRaftVoterResponse, m),
        Message::AddRaftVoterRequest(m) => rt!(AddRaftVoterRequest, m),
        Message::AddRaftVoterResponse(m) => rt!(AddRaftVoterResponse, m),
        Message::RemoveRaftVoterRequest(m) => rt!(RemoveRaftVoterRequest, m),
        Message::RemoveRaftVoterResponse(m) => rt!(RemoveRaftVoterResponse, m),
    };
    Ok((out, digest.finish()))
}

/// True for messages the model leaves out (see the module doc).
pub fn left_out(msg: &Message) -> bool {
    matches!(
        msg,
        Message::BeginQuorumEpochResponse(_) | Message::EndQuorumEpochResponse(_)
    )
}

fn code(top: i16, partition: Option<i16>) -> Result<ErrorCode, String> {
    let c = if top != 0 {
        top
    } else {
        partition.unwrap_or(0)
    };
    error_code(c).ok_or_else(|| format!("error code {c} has no model counterpart"))
}

fn vote_request(m: &VoteRequest) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("VoteRequest without a partition")?;
    let epoch = small(p.replica_epoch, "VoteRequest epoch")?;
    let last_epoch = small(p.last_offset_epoch, "VoteRequest last epoch")?;
    let last_offset = small(p.last_offset, "VoteRequest last offset")?;
    let voter = id_of(m.voter_id.0, "VoteRequest voter id")?;
    let voter_dir = model_dir(
        p.voter_directory_id,
        voter,
        "VoteRequest voter directory id",
    )?;
    Ok(if p.pre_vote {
        Msg::PreVoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        }
    } else {
        Msg::VoteRequest {
            epoch,
            voter_dir,
            last_epoch,
            last_offset,
        }
    })
}

fn vote_response(m: &VoteResponse) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("VoteResponse without a partition")?;
    Ok(Msg::VoteResponse {
        epoch: small(p.leader_epoch, "VoteResponse epoch")?,
        granted: p.vote_granted,
        error: code(m.error_code, Some(p.error_code))?,
        leader: if p.leader_id.0 < 0 {
            None
        } else {
            Some(id_of(p.leader_id.0, "VoteResponse leader id")?)
        },
    })
}

fn begin(m: &BeginQuorumEpochRequest, src: Id) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("BeginQuorumEpoch without a partition")?;
    if p.leader_id.0 != i32::from(src) {
        return Err(format!(
            "BeginQuorumEpoch from {src} names leader {}",
            p.leader_id.0
        ));
    }
    Ok(Msg::BeginQuorumEpoch {
        epoch: small(p.leader_epoch, "BeginQuorumEpoch epoch")?,
        voter_dir: model_dir(
            p.voter_directory_id,
            id_of(m.voter_id.0, "BeginQuorumEpoch voter id")?,
            "BeginQuorumEpoch voter directory id",
        )?,
    })
}

fn end(m: &EndQuorumEpochRequest, src: Id) -> Result<Msg, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("EndQuorumEpoch without a partition")?;
    if p.leader_id.0 != i32::from(src) {
        return Err(format!(
            "EndQuorumEpoch from {src} names leader {}",
            p.leader_id.0
        ));
    }
    Ok(Msg::EndQuorumEpoch {
        epoch: small(p.leader_epoch, "EndQuorumEpoch epoch")?,
    })
}

fn fetch_request(m: &FetchRequest, src: Id) -> Result<FetchKey, String> {
    let p = m
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("FetchRequest without a partition")?;
    Ok(FetchKey {
        epoch: small(p.current_leader_epoch, "Fetch epoch")?,
        fetch_offset: small(p.fetch_offset, "fetch offset")?,
        last_fetched_epoch: small(p.last_fetched_epoch, "last fetched epoch")?,
        replica_dir: model_dir(p.replica_directory_id, src, "Fetch replica directory id")?,
    })
}

/// The records of a Fetch response from offset `from` on, as model entries. The leader serves whole
/// stored batches, as Kafka does, so the first may start below the fetch offset; the model's reply
/// starts at it.
pub fn records_of(bytes: Option<&Bytes>, from: i64) -> Result<Log, String> {
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return Ok(Log::default());
    };
    let batches = kraft::records::decode_batches(bytes.clone())
        .map_err(|e| format!("fetched records: {e}"))?;
    let mut entries = Vec::new();
    for b in &batches {
        for (offset, r) in (b.base_offset..).zip(&b.records) {
            if offset < from {
                continue;
            }
            entries.push(Entry {
                epoch: small(b.epoch, "batch epoch")?,
                kind: record_kind(r)?,
            });
        }
    }
    if entries.len() > model::types::MAX_LOG {
        return Err(format!(
            "{} fetched records exceed the model's log",
            entries.len()
        ));
    }
    Ok(Log::from_slice(&entries))
}

fn fetch_response(m: &FetchResponse) -> Result<model::types::FetchResponse, String> {
    let p = m
        .responses
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("FetchResponse without a partition")?;
    let echo = p
        .unknown_tagged_fields
        .get(&FETCH_ECHO_TAG)
        .ok_or("FetchResponse without the request echo")?;
    let echo = FetchEcho::decode(echo.clone())
        .ok_or_else(|| format!("FetchResponse echo of {} bytes", echo.len()))?;
    let request = FetchKey {
        epoch: small(echo.epoch, "echoed epoch")?,
        fetch_offset: small(echo.fetch_offset, "echoed fetch offset")?,
        last_fetched_epoch: small(echo.last_fetched_epoch, "echoed last fetched epoch")?,
        replica_dir: 0,
    };
    let d = &p.diverging_epoch;
    let diverging = if d.epoch >= 0 && d.end_offset >= 0 {
        Some((
            small(d.epoch, "diverging epoch")?,
            small(d.end_offset, "diverging end offset")?,
        ))
    } else {
        None
    };
    let leader = p.current_leader.leader_id.0;
    Ok(model::types::FetchResponse {
        request,
        error: code(m.error_code, Some(p.error_code))?,
        leader_epoch: small(p.current_leader.leader_epoch, "Fetch leader epoch")?,
        leader_id: if leader < 0 {
            None
        } else {
            Some(id_of(leader, "Fetch leader id")?)
        },
        high_watermark: if p.high_watermark < 0 {
            None
        } else {
            Some(small(p.high_watermark, "Fetch HW")?)
        },
        diverging,
        records: records_of(p.records.as_ref(), echo.fetch_offset)?,
        snapshot_id: if p.snapshot_id.end_offset >= 0 && p.snapshot_id.epoch >= 0 {
            Some(model::types::SnapshotId {
                end: small(p.snapshot_id.end_offset, "snapshot end offset")?,
                epoch: small(p.snapshot_id.epoch, "snapshot epoch")?,
            })
        } else {
            None
        },
    })
}

/// The model message of an implementation message from `src`.
pub fn abstract_message(msg: &Message, src: Id) -> Result<Msg, String> {
    match msg {
        Message::VoteRequest(m) => vote_request(m),
        Message::VoteResponse(m) => vote_response(m),
        Message::BeginQuorumEpochRequest(m) => begin(m, src),
        Message::EndQuorumEpochRequest(m) => end(m, src),
        Message::FetchRequest(m) => fetch_request(m, src).map(Msg::FetchRequest),
        Message::FetchResponse(m) => fetch_response(m).map(Msg::FetchResponse),
        Message::BeginQuorumEpochResponse(_) | Message::EndQuorumEpochResponse(_) => {
            Err("BeginQuorumEpoch/EndQuorumEpoch responses are not in the model".into())
        }
        Message::FetchSnapshotRequest(_) | Message::FetchSnapshotResponse(_) => {
            Err("FetchSnapshot is exchanged within the model's `FetchSnapshot` step, never left in flight".into())
        }
        Message::ApiVersionsRequest(_) | Message::ApiVersionsResponse(_) => {
            Err("the ApiVersions round trip of an add is not in the model (the harness answers it within the `Change` step)".into())
        }
        Message::UpdateRaftVoterRequest(_) | Message::UpdateRaftVoterResponse(_) => {
            Err("a follower's UpdateRaftVoter is not in the model (the harness's nodes keep the endpoints of their voter entries)".into())
        }
        Message::AddRaftVoterRequest(_)
        | Message::AddRaftVoterResponse(_)
        | Message::RemoveRaftVoterRequest(_)
        | Message::RemoveRaftVoterResponse(_) => {
            Err("auto-join is not in the model (the harness's nodes run without it)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_distinct_and_round_trip() {
        let set = voter_set(0b1011).unwrap();
        assert_eq!(mask_of(&set).unwrap(), 0b1011);
        assert_ne!(directory_id(0), directory_id(1));
        assert!(!directory_id(0).is_nil());
        // A voter with a foreign directory id is refused, not silently abstracted.
        let wrong = VoterSet::new([VoterNode {
            key: ReplicaKey::new(0, Uuid::from_u128(7)),
            ..voter_node(0)
        }])
        .unwrap();
        assert!(mask_of(&wrong).is_err());
    }

    #[test]
    fn every_model_error_code_maps_back() {
        for c in [
            ErrorCode::None,
            ErrorCode::NotLeaderOrFollower,
            ErrorCode::RequestTimedOut,
            ErrorCode::UnsupportedVersion,
            ErrorCode::FencedLeaderEpoch,
            ErrorCode::UnknownLeaderEpoch,
            ErrorCode::DuplicateVoter,
            ErrorCode::VoterNotFound,
        ] {
            assert_eq!(error_code(kafka_code(c)), Some(c));
        }
        assert_eq!(error_code(42), None);
    }
}
