//! The KRaft node: a deterministic state machine.
//!
//! Inputs: peer messages (`handle`), client requests (`handle_client`), client appends (`append`) and time
//! (`tick`). Outputs: [`Output`] with effects to persist first and
//! messages to send after. The core does no I/O: it reasons about an in-memory view of the log and hands
//! every change of it to the shell as an effect (etcd's way).
//!
//! Shell contract:
//! 1. Apply `Output::effects` in order (election state, log appends, truncations, flushes), off the
//!    thread that drives the core if it likes, and send the messages and client replies of an output only
//!    once the effects of that output and of every earlier one are durable. The core counts its log
//!    end as soon as it appends (a leader toward the HW, a follower in its next Fetch offset), as Kafka
//!    does before its flush: this rule is what keeps unflushed records from being acknowledged. A storage
//!    error must stop the node before anything of that output or a later one is sent.
//! 2. Every peer request handed to `handle` gets one response, in [`Output::replies`] addressed to the
//!    requester (the shell writes it to the requesting connection), in the `Output` of that same call.
//!    Except Fetch: a leader may park one (long poll) and answer it in the output of a later input; the
//!    responses to one requester's requests of one API come out in the order of its requests.
//!    [`Output::requests`] are new requests to peers.
//! 3. Client replies carry the `ClientId` given to `handle_client`; Add/Remove replies may come later, in the
//!    output of a later `handle` or `tick`.
//! 4. Call `tick(now)` at or after [`Node::next_deadline`]; ticking earlier is harmless.
//! 5. `Message::ApiVersionsRequest` (the leader asking a voter being added) goes to the new voter's
//!    listener ([`Node::endpoint_of`] knows it while the add waits), at ApiVersions v4; its answer is
//!    handed to `handle` as from that voter. A request the shell cannot send is answered there with an
//!    ApiVersionsResponse of BROKER_NOT_AVAILABLE (Kafka's network channel does the same); the core
//!    does not resend it.
//! 6. Fetch requests carry the replica id in `replica_state` (Fetch v15+), the directory id (v17) and the
//!    follower's HW (v18, KIP-1166): encode them at v18. Vote requests may be pre-votes: encode at v2.
//!    Fetch responses name the leader's endpoint in NodeEndpoints (v16+; strip it for older requesters).
//!
//! Where the core differs from Kafka, deliberately, and why: `impl/KAFKA-DIFFERENCES.md`.
//!
//! The flow: every input ([`Node::handle`], [`Node::handle_client`], [`Node::append`], [`Node::tick`],
//! and the shell's snapshot answers [`Node::snapshot_taken`], [`Node::snapshot_loaded`]) works on one
//! [`Output`] and ends in `finish` (below), which answers the parked fetches that are due and
//! re-arms the timers. A harness (the simulator, the conformance replay) may also step the node on
//! command through [`Harness`]; a shell needs none of it.
//!
//! Which file holds which rule:
//! - `types.rs`: inputs, [`Output`], [`Effect`], configuration, errors, [`Timers`], the view.
//! - `roles.rs`: role transitions (Kafka's `QuorumState`) and the election state persisted first.
//! - `vote.rs`: (pre-)votes asked and granted; `quorum_epoch.rs`: BeginQuorumEpoch, EndQuorumEpoch.
//! - `timers.rs`: what each deadline does when it fires, and which deadlines are derived.
//! - `fetch.rs`: Fetch on both sides; `fetch_wait.rs`: the leader's long poll (parked fetches).
//! - `commit.rs`: leader appends, the HW, control records read into the voter-set history.
//! - `membership.rs`: Add/Remove/UpdateRaftVoter at the leader, every precondition in one function;
//!   `add_check.rs`: the ApiVersions round trip to a voter being added; `update_voter.rs`: a voter's own
//!   entry brought up to date; `auto_join.rs`: an observer that adds itself (KIP-1186);
//!   `kraft_version.rs`: the `kraft.version` upgrade (UpdateFeatures).
//! - `snapshot.rs`, `snapshot_fetch.rs`, `snapshot_own.rs`: snapshots served, fetched, taken and cleaned.
//! - `admin.rs`, `describe_cluster.rs`: ApiVersions, DescribeQuorum, DescribeCluster.
//! - `messages.rs`: building and reading the RPCs' structs; `view.rs`: accessors.
//! - `harness.rs`: the [`Harness`] hooks.
//! - The leader's replica progress and HW rule: `crate::leader`; voter-set history: `crate::history`.

use std::collections::BTreeSet;

use bytes::Bytes;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::history::{OffsetHistory, VoterSetHistory};
use crate::leader::LeaderState;
use crate::log::{MemoryLog, RaftLog, Record};
use crate::voter_set::{Endpoint, ReplicaKey, VoterSet};

mod add_check;
mod admin;
mod auto_join;
mod commit;
mod describe_cluster;
mod fetch;
mod fetch_wait;
mod harness;
mod kraft_version;
mod membership;
mod messages;
mod quorum_epoch;
mod roles;
mod snapshot;
mod snapshot_fetch;
mod snapshot_own;
mod timers;
mod types;
mod update_voter;
mod view;
mod vote;

pub use add_check::api_versions_request;
pub use auto_join::AutoJoin;
pub use describe_cluster::{ENDPOINT_TYPE_BROKER, ENDPOINT_TYPE_CONTROLLER};
pub use fetch::MAX_FETCH_BYTES;
pub use fetch_wait::{FETCH_MAX_WAIT_MS, MAX_PARKED_FETCHES};
pub use harness::Harness;
pub use kraft_version::{
    features_response, FeatureRefusal, UpgradeType, KRAFT_VERSION_FEATURE, MAX_FEATURE_WAITERS,
};
pub use membership::{ChangeOp, ChangeOutcome, InvalidChange, Refusal};
pub use messages::{
    error_message, errors, FetchEcho, FETCH_ECHO_TAG, METADATA_PARTITION, METADATA_TOPIC,
};
pub use snapshot::{fill_snapshot_chunk, snapshot_chunk, SnapshotChunk, SNAPSHOT_CHUNK_TAG};
pub use types::*;

#[cfg(feature = "faults")]
pub use crate::faults::Faults;
pub use crate::log::{SnapshotId, SnapshotMeta};

#[derive(Clone, Debug)]
enum RoleState {
    Unattached,
    /// KIP-996: same epoch, keeps the known leader (and the vote, in `election`).
    Prospective {
        voters: VoterSet,
        granted: BTreeSet<i32>,
        leader: Option<i32>,
    },
    Candidate {
        voters: VoterSet,
        granted: BTreeSet<i32>,
    },
    Follower {
        leader: i32,
        /// A successful Fetch from the leader came in this epoch (Kafka's `hasFetchedFromLeader`):
        /// from then on pre-votes are refused.
        fetched: bool,
    },
    Leader(Box<LeaderState>),
    Resigned,
}

/// A KRaft replica: the deterministic quorum state machine over its in-memory view of the log (the shell
/// keeps the durable copy, see [`Effect`]). `Clone` lets conformance branch one cluster into every
/// successor of a model state.
#[derive(Clone)]
pub struct Node {
    config: NodeConfig,
    local: ReplicaKey,
    log: MemoryLog,
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
    /// Follower: when it next checks its own voter entry (`update_voter.rs`).
    update_voter_due: Option<timers::PeriodDue>,
    /// `kraft.version` 0: the epoch whose leader took this voter's entry (no more reports to it).
    update_voter_taken_in: Option<i32>,
    /// Observer with auto-join: when it next may ask to join (`auto_join.rs`).
    auto_join_due: Option<timers::PeriodDue>,
    /// False once a harness sends auto-join's request only on command (`Harness::auto_join_on_command_only`).
    auto_join_periodic: bool,
    pending: Option<PendingChange>,
    /// Leader: an AddRaftVoter waiting for its new voter's ApiVersions answer (`add_check.rs`).
    add_check: Option<add_check::AddCheck>,
    last_change_reply: Option<ChangeReply>,
    /// Leader: the `kraft.version` upgrade state and the UpdateFeatures requests waiting for its commit
    /// (`kraft_version.rs`).
    upgrade: Option<kraft_version::Upgrade>,
    feature_waiters: Vec<kraft_version::FeatureWaiter>,
    #[cfg(feature = "faults")]
    faults: Faults,
    /// Whether the deadlines armed by `new` (relative to 0) were moved to the shell's clock.
    clock_started: bool,
    /// `(epoch, leader, endpoint)` a leader announced for itself (BeginQuorumEpoch `LeaderEndpoints`,
    /// Fetch `NodeEndpoints`): how a replica reaches a leader missing from its voter sets (Kafka's
    /// `leaderEndpoints`).
    learned_leader: Option<(i32, i32, Endpoint)>,
    /// Leader: fetches waiting for new data, a new HW or their `MaxWaitMs` (Kafka's fetch purgatory).
    parked_fetches: Vec<fetch_wait::ParkedFetch>,
    /// The snapshots this replica holds (`snapshot.rs`).
    snapshots: snapshot::HeldSnapshots,
    /// Follower: the snapshot being fetched (`snapshot_fetch.rs`) and the FetchSnapshot waited on.
    download: Option<snapshot_fetch::Download>,
    sent_snapshot_fetch: Option<snapshot_fetch::SentSnapshotFetch>,
    /// A fetched snapshot the shell is installing: no Fetch, no election or fetch timer until it is done.
    installing: Option<crate::log::SnapshotId>,
    /// An own snapshot the shell is writing (`Effect::TakeSnapshot`).
    taking: Option<crate::log::SnapshotId>,
    /// Own snapshots' clocks (`snapshot_own.rs`).
    own: snapshot_own::OwnSnapshots,
    /// The shell's last wall-clock reading and the monotonic time it was read at
    /// ([`Node::set_wall_clock`]).
    wall_clock: (Millis, WallMillis),
}

/// The timers that wait while a fetched snapshot is installed (Kafka installs it within one poll, so
/// nothing fires meanwhile).
fn waits_for_install(t: Timer) -> bool {
    matches!(t, Timer::Election | Timer::FetchTimeout | Timer::Fetch)
}

fn invalid(msg: impl Into<String>) -> NodeError {
    NodeError::Config(msg.into())
}

impl Node {
    /// Builds a node from its configuration, its log (what storage holds: all durable) and its persisted
    /// election state, applying the
    /// restart rules: Resigned if it was the leader, Candidate if it voted for itself (and is a voter),
    /// Follower of the persisted leader if the latest voter set has it, else Unattached at the persisted
    /// epoch. Volatile state (HW, leader progress, pending change) is not recovered.
    pub fn new(
        config: NodeConfig,
        log: MemoryLog,
        persisted: ElectionState,
    ) -> Result<Node, NodeError> {
        Self::with_snapshots(config, log, persisted, Vec::new())
    }

    /// [`Node::new`] for a replica that holds snapshots besides the bootstrap one (any order; the bootstrap
    /// one's file may be among them, read while the log starts at 0): `log` is
    /// the log suffix, from its log start offset; it must hold the latest snapshot's end offset (a log
    /// that ends below it is truncated fully by the shell first, as Kafka does at start-up). The
    /// voter-set and kraft.version histories start at the latest snapshot (its entries at its end − 1)
    /// and continue with the log's control records from its end on.
    pub fn with_snapshots(
        config: NodeConfig,
        log: MemoryLog,
        persisted: ElectionState,
        snapshots: Vec<crate::log::SnapshotMeta>,
    ) -> Result<Node, NodeError> {
        if config.node_id < ANONYMOUS_OBSERVER_ID {
            return Err(invalid(format!("node id {} is negative", config.node_id)));
        }
        if config.node_id == ANONYMOUS_OBSERVER_ID && config.bootstrap != Bootstrap::NoInitialVoters
        {
            return Err(invalid(
                "a replica without an id (-1) is an observer: it starts with no initial voters",
            ));
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
            Bootstrap::NoInitialVoters => (VoterSetHistory::without_voters(), 1),
        };
        if config.bootstrap == Bootstrap::NoInitialVoters && config.bootstrap_servers.is_empty() {
            // Kafka: "Missing kraft bootstrap servers. Must specify a value for
            // controller.quorum.bootstrap.servers."
            return Err(invalid(
                "no initial voters and no bootstrap servers: the quorum cannot be found",
            ));
        }
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
            update_voter_due: None,
            update_voter_taken_in: None,
            auto_join_due: None,
            auto_join_periodic: true,
            pending: None,
            add_check: None,
            last_change_reply: None,
            upgrade: None,
            feature_waiters: Vec::new(),
            #[cfg(feature = "faults")]
            faults: Faults::default(),
            clock_started: false,
            learned_leader: None,
            parked_fetches: Vec::new(),
            snapshots: Default::default(),
            download: None,
            sent_snapshot_fetch: None,
            installing: None,
            taking: None,
            own: Default::default(),
            wall_clock: (0, 0),
            config,
        };
        let bootstrap_held = node.log.start_offset() == 0
            && matches!(
                node.config.bootstrap,
                Bootstrap::Checkpoint(_) | Bootstrap::NoInitialVoters
            );
        if bootstrap_held {
            // The formatted bootstrap snapshot, as Kafka's log lists it. `snapshots` may hold what its
            // file says (its size, its LastContainedLogTimestamp: when it was formatted); else it is
            // dated when the node starts (`start_snapshot_clocks`).
            node.snapshots
                .insert_undescribed_bootstrap(crate::log::SnapshotMeta {
                    id: crate::log::SnapshotId::BOOTSTRAP,
                    size: 0,
                    kraft_version: base_kraft_version,
                    voters: node.history.at_or_before(-1).map(|(_, s)| s.clone()),
                    last_contained_log_timestamp: 0,
                });
        }
        node.history_next_offset = node.log.start_offset();
        // Kafka's start-up (`maybeLoadSnapshot`): the latest snapshot's control records, then the log
        // from its end offset on.
        for meta in snapshots {
            if meta.id != crate::log::SnapshotId::BOOTSTRAP || bootstrap_held {
                node.snapshots.insert(meta);
            }
        }
        if let Some(latest) = node
            .snapshots
            .latest()
            .filter(|m| m.id != crate::log::SnapshotId::BOOTSTRAP)
            .cloned()
        {
            let (start, end) = (node.log.start_offset(), node.log.end_offset());
            if latest.id.end_offset < start || latest.id.end_offset > end {
                return Err(invalid(format!(
                    "the log [{start}, {end}) does not hold the end of the latest snapshot {}",
                    latest.id
                )));
            }
            node.load_snapshot_histories(&latest)?;
            node.history_next_offset = latest.id.end_offset;
        }
        node.load_control_records()?;
        // Restart rules. `now` is unknown here: timers are armed relative to 0 and shifted to the
        // shell's clock by the first input (see `adopt_clock`).
        let now = 0;
        if persisted.leader_id == Some(local.id) {
            node.role = RoleState::Resigned;
            node.arm_election_timer(now);
            // Its EndQuorumEpoch requests go out at the first `tick` (Kafka: the first `pollResigned`).
            node.timers.first_poll = Some(now);
        } else if persisted.voted.is_some_and(|v| {
            // Kafka's `ElectionState.isVotedCandidate`: a vote stored without directory id matches.
            v.id == local.id && (v.directory_id.is_none() || v.directory_id == local.directory_id)
        }) && node.is_voter()
        {
            let voters = node.history.latest().clone();
            node.role = RoleState::Candidate {
                voters,
                granted: BTreeSet::from([local.id]),
            };
            node.election.leader_id = None;
            node.arm_election_timer(now);
            // Its Vote requests go out at the first `tick` (Kafka: the first `pollCandidate`).
            node.timers.first_poll = Some(now);
        } else if let Some(leader) = persisted
            .leader_id
            .filter(|&l| l != local.id && node.history.latest().voter(l).is_some())
        {
            // Kafka's `QuorumState.initialize`: the stored leader is followed again when the latest
            // voter set has its endpoints; it has not been fetched from yet and no HW is known.
            node.role = RoleState::Follower {
                leader,
                fetched: false,
            };
            node.timers.fetch_timeout = Some(now + node.config.fetch_timeout_ms);
            node.next_fetch_at = Some(now);
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
        self.faults = faults;
        if let RoleState::Leader(l) = &mut self.role {
            l.faults = faults;
        }
    }
}

impl Node {
    /// The shell's wall clock (milliseconds since the Unix epoch) read at monotonic time `now`: until the
    /// next call the core takes the wall time at `t` to be `wall + (t − now)`. It stamps the batches this
    /// node appends as leader (their CreateTime) and ages snapshots for `metadata.max.retention.ms`. A shell
    /// calls it with each input (a wall clock may be set back or forward); a deterministic harness once,
    /// with a virtual wall clock. Without a call the wall clock is the monotonic one.
    pub fn set_wall_clock(&mut self, now: Millis, wall: WallMillis) {
        self.wall_clock = (now, wall);
    }

    /// The wall time at monotonic time `now` (see [`Node::set_wall_clock`]).
    pub(super) fn wall_time(&self, now: Millis) -> WallMillis {
        let (read_at, wall) = self.wall_clock;
        let since = i64::try_from(now.abs_diff(read_at)).unwrap_or(i64::MAX);
        if now >= read_at {
            wall.saturating_add(since)
        } else {
            wall.saturating_sub(since)
        }
    }

    /// A message from peer `from`. Requests are answered in the returned output.
    pub fn handle(&mut self, now: Millis, from: i32, msg: Message) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        match msg {
            Message::VoteRequest(r) => self.on_vote_request(now, from, r, &mut out),
            Message::VoteResponse(r) => self.on_vote_response(now, from, r, &mut out),
            Message::BeginQuorumEpochRequest(r) => self.on_begin_request(now, from, r, &mut out),
            Message::BeginQuorumEpochResponse(r) => {
                let p = messages::begin_response_partition(&r);
                self.on_epoch_response(now, p.map(|p| (p.leader_epoch, p.leader_id.0)), &mut out)
            }
            Message::EndQuorumEpochRequest(r) => self.on_end_request(now, from, r, &mut out),
            Message::EndQuorumEpochResponse(r) => {
                let p = messages::end_response_partition(&r);
                self.on_epoch_response(now, p.map(|p| (p.leader_epoch, p.leader_id.0)), &mut out)
            }
            Message::FetchRequest(r) => self.on_fetch_request(now, from, r, &mut out),
            Message::FetchResponse(r) => self.on_fetch_response(now, from, r, &mut out),
            Message::FetchSnapshotRequest(r) => {
                self.on_fetch_snapshot_request(now, from, r, &mut out)
            }
            Message::FetchSnapshotResponse(r) => {
                self.on_fetch_snapshot_response(now, from, r, &mut out)
            }
            Message::ApiVersionsRequest(r) => {
                let resp = self.api_versions(&r);
                out.replies.push((from, Message::ApiVersionsResponse(resp)));
            }
            Message::ApiVersionsResponse(r) => {
                self.on_api_versions_response(now, from, r, &mut out)
            }
            Message::UpdateRaftVoterRequest(r) => self.on_peer_update_voter(now, from, r, &mut out),
            Message::UpdateRaftVoterResponse(r) => self.on_update_voter_response(now, from, r),
            Message::AddRaftVoterResponse(r) => {
                self.on_auto_join_response(now, from, "AddRaftVoter", r.error_code)
            }
            Message::RemoveRaftVoterResponse(r) => {
                self.on_auto_join_response(now, from, "RemoveRaftVoter", r.error_code)
            }
            // A peer's AddRaftVoter / RemoveRaftVoter reaches the core as the client request the shell
            // decodes it as (its answer goes back on that connection); as a peer message it is ignored.
            Message::AddRaftVoterRequest(_) | Message::RemoveRaftVoterRequest(_) => {
                tracing::debug!(from, "ignoring a membership request sent as a peer message");
            }
        }
        self.finish(now, &mut out);
        out
    }

    /// A request from an admin client or operator.
    pub fn handle_client(&mut self, now: Millis, id: ClientId, req: ClientRequest) -> Output {
        self.adopt_clock(now);
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
            ClientRequest::AddRaftVoter {
                request,
                ack_when_committed,
            } => self.on_add_voter(now, id, request, ack_when_committed, &mut out),
            ClientRequest::RemoveRaftVoter(r) => self.on_remove_voter(now, id, r, &mut out),
            ClientRequest::UpdateRaftVoter(r) => self.on_update_voter(now, id, r, &mut out),
            ClientRequest::DescribeCluster { version, request } => {
                let resp = self.describe_cluster(version, &request);
                out.client_replies
                    .push((id, ClientResponse::DescribeCluster(resp)));
            }
            ClientRequest::UpdateFeatures { version, request } => {
                self.on_update_features(now, id, version, request, &mut out)
            }
        }
        self.finish(now, &mut out);
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
        self.finish(now, &mut out);
        Ok((offset, out))
    }

    /// Fires every timer whose deadline is ≤ `now`.
    pub fn tick(&mut self, now: Millis) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        for t in ALL_TIMERS {
            if self.installing.is_some() && waits_for_install(t) {
                continue;
            }
            if self.timers.get(t).is_some_and(|d| d <= now) {
                self.fire_timer(now, t, &mut out);
                self.refresh_timers();
            }
        }
        self.maybe_clean(now, &mut out);
        self.finish(now, &mut out);
        out
    }

    /// [`Harness::fire`].
    pub(super) fn fire_on_command(&mut self, now: Millis, timer: Timer) -> Output {
        self.adopt_clock(now);
        let mut out = Output::default();
        if self.timers.get(timer).is_some()
            && !(self.installing.is_some() && waits_for_install(timer))
        {
            self.fire_timer(now, timer, &mut out);
        }
        self.finish(now, &mut out);
        out
    }

    /// The end of every input: answers the parked fetches that are due, then re-arms the timers.
    pub(super) fn finish(&mut self, now: Millis, out: &mut Output) {
        self.settle_parked_fetches(now, out);
        self.refresh_timers();
    }
}
