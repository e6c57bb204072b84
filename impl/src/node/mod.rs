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
//! Protocol choices (Kafka 4.x unless noted):
//! - Vote and pre-vote (KIP-996, Vote v2) are granted and refused per role exactly as Kafka 4.4's
//!   `canGrantVote` (`vote.rs`). Elections differ from Kafka 4.x in these ways, all as the model has them so
//!   that conformance compares the two: a Prospective counts grants only and leaves on its election timeout
//!   (Kafka also leaves as soon as a majority refused); a Prospective without a known leader that times out
//!   waits a new election timeout as Unattached (Kafka stands again at once); a Candidate whose election times
//!   out asks for pre-votes again at once, never backing off (Kafka backs off exponentially after a refused
//!   election). A Vote response of UNSUPPORTED_VERSION makes a Prospective stand at once, as in Kafka (a peer
//!   without Vote v2).
//! - Requests go out at fixed versions (Vote v2, Fetch v18, Begin/EndQuorumEpoch v1) without an
//!   ApiVersions round trip: Kafka 4.x controllers serve them all; Kafka 3.x ones (Vote v0–1, Fetch ≤ 17)
//!   would refuse them.
//! - A restarted replica comes back as Kafka 4.4's `QuorumState.initialize` has it, at its persisted
//!   epoch: Resigned if it was leader (at its first `tick` it sends EndQuorumEpoch, with no preferred
//!   successors, to the other voters of its latest set: Kafka's first `pollResigned`), Candidate if it
//!   voted for itself (at its first `tick` it asks the voters for their votes: the first
//!   `pollCandidate`), Follower of its persisted leader if that leader is a voter of its latest set (it
//!   fetches at once), else Unattached. Differences: where the persisted leader is not in the latest set
//!   Kafka's `UnattachedState` keeps its id (and refuses votes in that epoch) and this node forgets it; a
//!   Candidate that is not in its latest voter set comes back Unattached, where Kafka's `CandidateState`
//!   throws and the controller does not start. Kafka also re-sends a Vote request that failed or timed
//!   out (its `RequestManager` backoff); this node sends each once.
//! - Fetch long-poll as Kafka's leader (`fetch_wait.rs`): a Fetch with no error, no records, no diverging
//!   epoch, `MaxWaitMs` > 0 and the follower's HW (Fetch v18) not behind the leader's is parked until the
//!   log grows past its fetch offset or the HW moves (answered with what the leader has then), or its
//!   `MaxWaitMs` passes (answered with the answer computed on arrival). Followers send `MaxWaitMs` 500 and
//!   `MaxBytes` 8 MiB as Kafka's, and fetch again at once after a successful answer. Differences: a
//!   leader that leaves its role *in any way* answers its parked fetches NOT_LEADER_OR_FOLLOWER at once
//!   (Kafka does so on resigning and on following a new leader; a leader that turns Unattached on a
//!   higher epoch leaves them to expire with their original answer); a second fetch from the same
//!   requester answers its parked one first (Kafka parks both; its muted channel never has two); at most
//!   [`MAX_PARKED_FETCHES`] wait (Kafka has no bound), more are answered at once. The leader learns a
//!   replica's progress only from fetch offsets.
//!   Batches are served byte for byte as the log stores them and a follower stores a replicated batch as
//!   it arrived, as Kafka does (a Kafka leader's timestamps, keys and headers survive a `kraft` leader);
//!   only a batch a follower receives cut (its log was truncated inside that batch, which Kafka's
//!   batch-aligned truncation never does) is re-encoded by the core, with timestamp 0 and value only.
//! - A replica learns a leader's endpoint from BeginQuorumEpoch `LeaderEndpoints` (on its own listener
//!   name) and from Fetch `NodeEndpoints`, as Kafka does; Vote, BeginQuorumEpoch and EndQuorumEpoch
//!   responses' NodeEndpoints are not read (nor sent).
//! - A Fetch response echoes the request's `(epoch, fetch offset, last fetched epoch)` in the tagged field
//!   [`FETCH_ECHO_TAG`] of its partition, so a stale or duplicated response is recognised and ignored.
//!   A response without the tag (a Kafka leader) is matched by sender only: over TCP the shell's
//!   correlation ids already pair it with the one outstanding request.
//! - A diverging-epoch reply that would truncate below the follower's HW is ignored (Kafka treats it as
//!   fatal); it cannot happen in a consistent run.
//! - Observers that know no leader fetch from their bootstrap servers ([`NodeConfig::bootstrap_servers`],
//!   Kafka's `controller.quorum.bootstrap.servers`, peers −2, −3, … as Kafka numbers them) in turn, else
//!   from the voters of their latest set in turn (Kafka picks a ready bootstrap server at random, and
//!   without bootstrap servers configured its bootstrap list is the voters), and follow the leader the
//!   reply names (CurrentLeader and NodeEndpoints), as Kafka does. Unattached *voters* do not fetch
//!   (Kafka 4.4's send a Fetch to a bootstrap server while their election timer runs; the model has no
//!   such fetch). A TLS link to a bootstrap server checks the certificate's trust and host name but not
//!   a node identity (its id is unknown until it answers).
//! - AddRaftVoter makes Kafka's ApiVersions round trip to the new voter (`add_check.rs`, KIP-853): the
//!   same checks in the same order and error codes, the answered `kraft.version` range recorded in the
//!   VotersRecord, one deadline (arrival + request timeout) for the whole request. The catch-up rule is
//!   "fetched up to the leader's end offset at that moment, in this epoch" (Kafka also requires a fetch
//!   within the last hour).
//! - The bootstrap snapshot (`00000000000000000000-0000000000.checkpoint`) is Kafka's: `kraft format` writes
//!   its control records only (no metadata records: a Kafka controller started on such a directory has no
//!   bootstrap `metadata.version` from it and appends the default one when it first leads). A directory
//!   formatted with `--no-initial-controllers` (Kafka's or `kraft format`'s: KRaftVersion 1, no Voters)
//!   starts as [`Bootstrap::NoInitialVoters`]: an observer with an empty voter set until it replicates a
//!   VotersRecord; it needs bootstrap servers, as Kafka does.
//! - Reserved directory ids (Kafka's `DirectoryId.reserved`: high 64 bits 0, low 64 bits as a signed long
//!   below 100): `kraft node` refuses a `meta.properties` holding one, as Kafka's controller does ("Invalid
//!   reserved directory ID ... found in ..."). `kraft format` refuses one at format time (for
//!   `--directory-id` and every `--initial-controllers` entry), where Kafka 4.4.0's storage tool writes it
//!   and only the controller's start fails: no voter with such an id can ever start, so refusing early
//!   loses nothing. Generated ids avoid reserved ids and a leading '-' as Kafka's do.
//! - AddRaftVoter v1 (KIP-1186) as Kafka: `AckWhenCommitted=false` is answered (NONE) once the VotersRecord
//!   is appended and leaves nothing pending; `true` and v0 are answered at the record's commit.
//! - A follower that is a voter sends UpdateRaftVoter when its entry differs (`update_voter.rs`): checked
//!   as it sends a Fetch, once per 3 × fetch timeout, and sent beside that Fetch, where Kafka sends it in
//!   place of one. A new
//!   leader brings its own entry up to date in its start-of-epoch batch (KRaftVersion + Voters after the
//!   LeaderChange, with its listeners and supported range as configured now) when the latest set is the
//!   bootstrap checkpoint's or that entry differs, as Kafka 4.4's `appendStartOfEpochControlRecords`.
//! - A Fetch with a negative replica id (a reader that is no replica) is served and not tracked, as Kafka
//!   serves it; one naming the leader's own id is answered INVALID_REQUEST (Kafka's `updateReplicaState`
//!   throws `IllegalStateException` there).
//! - A replica without an id ([`ANONYMOUS_OBSERVER_ID`], Kafka's `KafkaRaftClient` with an empty local id)
//!   is an observer for good: it fetches with replica id −1, which a Kafka or `kraft` leader serves without
//!   tracking it (no Observers entry, never counted for the HW or check-quorum, never a voter, since a voter
//!   key needs an id ≥ 0). `kraft describe` runs one in memory to compute CommittedVoters.
//! - A leader resigns when its own removal is committed, whether or not the RemoveRaftVoter request is
//!   still pending (Kafka only does so from the pending request's completion).
//! - EndQuorumEpoch is sent once on resignation (and once after a leader's restart), not resent to the
//!   voters that have not acknowledged it (Kafka's `pollResigned` resends until each has). Received, it is
//!   checked as Kafka 4.4's `validateVoterOnlyRequest` (an older epoch FENCED_LEADER_EPOCH, then LeaderId < 0
//!   INVALID_REQUEST), and only a follower of the resigning leader brings its fetch timeout forward, as
//!   Kafka's.
//! - At epoch `i32::MAX` the increment of a new election (or of a removed leader moving on) is refused
//!   with [`StepError::EpochExhausted`] in [`Output::refused`] and the replica keeps its role; Kafka's
//!   `QuorumState.transitionToCandidate` computes `epoch() + 1` and wraps to `i32::MIN`. Higher epochs
//!   are adopted from any peer as in Kafka, so a forged message at `i32::MAX` still ends elections for
//!   good: only authenticated peers (mutual TLS) prevent it.
//! - DescribeCluster for controllers (KIP-919, `describe_cluster.rs`) lists the voters of the latest set and
//!   this node, on their default listener; Kafka lists the controllers registered in its metadata log
//!   (`ControllerRegistrationRecord`), which this node does not have. Either way the active controller is
//!   among them, which is what Kafka's admin client needs.
//! - Snapshots (KIP-630, `snapshot.rs`, `snapshot_fetch.rs`, `snapshot_own.rs`) follow Kafka 4.4's rules
//!   with these differences. A FetchSnapshot answer whose id or Position does not continue the download
//!   (Kafka throws `IllegalStateException` and its raft client stops), whose Size differs from the first
//!   answer's, whose chunk would overrun Size or is longer than the MaxBytes asked for (Kafka checks
//!   neither) is ignored and asked again after the fetch interval; so is an answer that brings no bytes (Kafka asks again at once). The leader serves at
//!   most 8 MiB per chunk whatever MaxBytes says, a MaxBytes ≤ 0 gets an empty chunk, and a request with
//!   no topic or partition INVALID_REQUEST (Kafka's lookup throws there). The shell installs a fetched
//!   snapshot after the core asked for it ([`Effect::CompleteSnapshot`], then
//!   [`Node::snapshot_loaded`]); meanwhile the replica sends no Fetch and its election and fetch timers
//!   wait (Kafka installs within one poll, so no timer fires meanwhile either). Own snapshots: the
//!   byte trigger and `metadata.max.retention.bytes` count the log's batches by their approximate encoded
//!   size, and `metadata.max.retention.ms` measures a snapshot's age from when this node took or
//!   installed it on its own clock (Kafka reads the snapshot's `LastContainedLogTimestamp`, a wall-clock
//!   time the deterministic core does not have); a snapshot found at start-up is as old as the start.
//!   Storage (the shell, `storage/`, `records/snapshot.rs`): (1) our snapshots carry the log's metadata
//!   records as history, not a metadata image: `kraft` does not interpret Kafka's records, and replaying
//!   them yields the image Kafka would build from the log; such a snapshot grows with the records Kafka
//!   writes (NoOps and membership changes add nothing). (2) Data records are packed record by record into
//!   batches of at most 8 MiB; Kafka packs groups of up to 1024 records, so only snapshots above 8 MiB can
//!   differ in batch boundaries. (3) A snapshot whose end falls inside a metadata transaction is not
//!   written (Kafka snapshots a published image, which never ends inside one). (4) SnapshotHeader's
//!   LastContainedLogTimestamp is, as Kafka's, the last contained batch's timestamp, which is 0 for
//!   batches a `kraft` leader writes (the core has no clock); Kafka's time-based retention
//!   (`metadata.max.retention.ms`) therefore finds such snapshots old at once, on Kafka controllers too.
//!   (5) A snapshot that fails its check at start-up stops the node with an error naming it (kept for
//!   inspection); `.checkpoint.part` files are deleted at start-up as Kafka does, so a download cut by a
//!   crash starts again. (6) The log start after a restart is the first segment's base offset, as Kafka's
//!   metadata log (no checkpoint file); segments roll by size only (default 8 MiB,
//!   `internal.metadata.log.segment.bytes`; Kafka: 1 GiB and `metadata.log.segment.ms`, not
//!   implemented). (7) Kafka deletes the bootstrap snapshot once its log start passes 0; `kraft node`
//!   keeps it (it reads it at every start; 0.4 KB).
//! - Metadata (served by the shell for older clients) names this node as the only broker; Kafka controllers
//!   do not serve Metadata at all.

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
mod commit;
mod describe_cluster;
mod fetch;
mod fetch_wait;
mod membership;
mod messages;
mod quorum_epoch;
mod roles;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
mod snapshot;
mod snapshot_fetch;
mod snapshot_own;
mod timers;
mod types;
mod update_voter;
mod view;
mod vote;

pub use add_check::api_versions_request;
pub use fetch::MAX_FETCH_BYTES;
pub use fetch_wait::{FETCH_MAX_WAIT_MS, MAX_PARKED_FETCHES};
pub use membership::{ChangeOp, ChangeOutcome, InvalidChange, Refusal};
pub use messages::{
    error_message, errors, FetchEcho, FETCH_ECHO_TAG, METADATA_PARTITION, METADATA_TOPIC,
};
pub use snapshot::{fill_snapshot_chunk, snapshot_chunk, SnapshotChunk, SNAPSHOT_CHUNK_TAG};
pub use types::*;

pub use crate::log::{SnapshotId, SnapshotMeta};

/// Test-only seeded faults; the field and every branch reading it exist only with the `faults` feature.
#[cfg(feature = "faults")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ActiveFaults {
    committed_from_latest: bool,
    accept_change_while_pending: bool,
    hw_counts_removed_leader: bool,
}

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
    update_voter_due: Option<update_voter::UpdateVoterDue>,
    pending: Option<PendingChange>,
    /// Leader: an AddRaftVoter waiting for its new voter's ApiVersions answer (`add_check.rs`).
    add_check: Option<add_check::AddCheck>,
    last_change_reply: Option<ChangeReply>,
    #[cfg(feature = "faults")]
    faults: ActiveFaults,
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

    /// [`Node::new`] for a replica that holds snapshots besides the bootstrap one (any order): `log` is
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
            pending: None,
            add_check: None,
            last_change_reply: None,
            #[cfg(feature = "faults")]
            faults: ActiveFaults::default(),
            clock_started: false,
            learned_leader: None,
            parked_fetches: Vec::new(),
            snapshots: Default::default(),
            download: None,
            sent_snapshot_fetch: None,
            installing: None,
            taking: None,
            own: Default::default(),
            config,
        };
        let bootstrap_held = node.log.start_offset() == 0
            && matches!(
                node.config.bootstrap,
                Bootstrap::Checkpoint(_) | Bootstrap::NoInitialVoters
            );
        if bootstrap_held {
            // The formatted bootstrap snapshot, as Kafka's log lists it.
            node.snapshots.insert(crate::log::SnapshotMeta {
                id: crate::log::SnapshotId::BOOTSTRAP,
                size: 0,
                kraft_version: base_kraft_version,
                voters: node.history.at_or_before(-1).map(|(_, s)| s.clone()),
            });
        }
        node.history_next_offset = node.log.start_offset();
        // Kafka's start-up (`maybeLoadSnapshot`): the latest snapshot's control records, then the log
        // from its end offset on.
        for meta in snapshots {
            node.snapshots.insert(meta);
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
        // shell's clock by the first input (see `start_clock`).
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
        self.faults = ActiveFaults {
            committed_from_latest: faults.committed_from_latest,
            accept_change_while_pending: faults.accept_change_while_pending,
            hw_counts_removed_leader: faults.hw_counts_removed_leader,
        };
        if let RoleState::Leader(l) = &mut self.role {
            l.faults.hw_counts_removed_leader = faults.hw_counts_removed_leader;
        }
    }
}

impl Node {
    /// A message from peer `from`. Requests are answered in the returned output.
    pub fn handle(&mut self, now: Millis, from: i32, msg: Message) -> Output {
        self.start_clock(now);
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
            Message::UpdateRaftVoterResponse(r) => self.on_update_voter_response(from, r),
        }
        self.finish(now, &mut out);
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
        self.start_clock(now);
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

    /// Fires one armed timer now, whatever its deadline (a harness hook to follow a model's timeout
    /// action exactly). Does nothing if the timer is not armed.
    pub fn fire(&mut self, now: Millis, timer: Timer) -> Output {
        self.start_clock(now);
        let mut out = Output::default();
        if self.timers.get(timer).is_some()
            && !(self.installing.is_some() && waits_for_install(timer))
        {
            self.fire_timer(now, timer, &mut out);
        }
        self.finish(now, &mut out);
        out
    }
}
