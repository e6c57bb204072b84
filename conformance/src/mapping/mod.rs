//! The mapping between the model (`model`) and the implementation (`kraft`), both ways.
//!
//! # Identities
//! Model server `i` is `kraft` node id `i`, directory id [`directory_id`]`(i)` (the model's directory id
//! 0; [`directory_id_at`]`(i, d)` is its directory id `d`, read back by [`model_dir`] from the voter keys
//! of Vote, BeginQuorumEpoch and Fetch requests), one listener
//! `CONTROLLER://node<i>.conformance:<9000+i>`. The cluster id is [`CLUSTER_ID`]. Initial voters are
//! formatted with the bootstrap checkpoint (`Bootstrap::Checkpoint`, `kraft.version` 1) holding the model's
//! bootstrap set; joiners get the same checkpoint (contract §1). With `--start static` every node is
//! configured with the static voters instead ([`upgrade::static_voter_set`]: `kraft.version` 0, keys
//! without a directory id, read as the model's directory id 0).
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
//! - `DiskLoss(i)`: node `i` is rebuilt by `Node::new` from a freshly formatted data directory: the same
//!   node id and bootstrap checkpoint, the next directory id ([`directory_id_at`]`(i, dir + 1)`), an
//!   empty log, no snapshot, the default election state; its first poll fires as after a `Restart`.
//!   Its Vote and Fetch exchanges in flight die with the old process's connections (the model's
//!   `forget_exchanges`). An operator change names the key the model's does ([`request_dir`]: the
//!   replica's current directory id for an add, the leader's latest set's for a removal).
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
//! - `Change{server, Update(j)}` at `kraft.version` 0 (`--start static`): the report voter `j` sends by
//!   itself. `Harness::update_voter_request` of node `j` must be [`change_request`]'s request, to
//!   `server`; it is handed to `server` as any update. The copy a follower sends beside a Fetch once its
//!   period has passed is dropped (the model's step is that report). The answer is not delivered back.
//! - `UpgradeKraftVersion(i)`: UpdateFeatures v2 `kraft.version` = 1, upgrade type UPGRADE
//!   ([`upgrade::upgrade_request`], as `kafka-features.sh upgrade` sends it) through `handle_client` at
//!   node `i`; answered now (a refusal or NONE) or when the HW passes the upgrade's batch. Its answer is
//!   an operator reply; INVALID_UPDATE_VERSION must carry the one reason the model has
//!   ([`upgrade::features_code`]).
//! - `AutoJoin{replica, leader}` (KIP-1186): `Harness::auto_join_now` at `replica` (every node has the
//!   model's `--auto-join` as its `auto_join` and its period off, `Harness::auto_join_on_command_only`, so it
//!   asks only here) must send one request, to `leader`; it is framed and decoded by the shell's codec
//!   ([`auto_join::as_served`]: AddRaftVoter v1 with its `AckWhenCommitted`) and served by the leader's
//!   `handle_client` as an operator's change is (the ApiVersions round trip included). Its answer is the
//!   model's reply to the operation it names ([`auto_join::op_of`]), a refusal's reason the model's
//!   `auto_join_change`'s; an add answered NONE in the step is an acknowledgement at append, compared with
//!   the model's ghost `History::append_acks`. The answer is not handed back to the replica (it only
//!   restarts the period).
//! - Not mapped: the swap bug's `Swap`: the harness refuses it as an input, so a trace with one
//!   diverges, never passes silently.
//! - `Resign(i)` (a leader whose own removal is committed): no input. Kafka resigns at the leader's next
//!   poll, before anything else reaches it; the implementation resigns within the input that committed
//!   the removal, and the model always schedules the due `Resign` right after that step. The two model
//!   steps are one implementation step: the replay compares after the `Resign`.
//!
//! # Implementation state → model state ([`abstract_view`])
//! From `node.view()`: role, epoch, leader, voted-for, the log (offset i = record i, its epoch, its kind;
//! a VotersRecord as the set of its ids), HW, latest and committed voter sets; at a leader, the epoch
//! start offset, every other replica's end offset and caught-up flag, the pending change (an add/remove,
//! or the `kraft.version` upgrade awaiting its commit) and the volatile voter set at `kraft.version` 0; the
//! outstanding fetch; the log start, the snapshots held other than the bootstrap one (end offset, epoch,
//! voter set) and the snapshot being downloaded. Operator replies are compared per step (the model's `Step::replies`), and the
//! messages sent are compared as the multiset of in-flight envelopes after every step.
//!
//! # Where the model is deliberately more abstract
//! - **Timestamps**: the model has no clock. Each node has its own clock that moves 1 ms per input and
//!   jumps to a timer's deadline when the model fires that timer; timers are only fired on the model's
//!   command, never by `tick`. Observer expiry is set beyond any run (the model never expires observers).
//!   DescribeQuorum timestamps are not compared.
//! - **Endpoints**: the model knows none. A VotersRecord or voter set abstracts to its voter keys (ids
//!   and model directory ids, [`voters_of`]), which also checks that every voter carries the one
//!   listener of its id, so nothing is lost silently.
//! - **Replica states of other keys**: a leader keeps a state per replica key (Kafka's
//!   `LeaderState`); the model one per id, for the key it last recorded (`Server::peer_dir`), plus the
//!   caught-up flag of a second key. [`abstract_view`] reads the leader's state of the model's key
//!   for each id; DescribeQuorum rows of other keys are not compared (`describe::Keys`).
//! - **Fetch responses** carry no directory id: in flight (async fetch) a response's echoed key takes
//!   the requester's current directory id (the graphs with disk losses fetch in sync mode).
//! - **Batch framing**: the model has records one-to-one with offsets; batches (and the record bytes
//!   of a Fetch response) abstract to their records.
//! - **Batches of the upgrade**: the model's upgrade is one step; [`upgrade::check_upgrade_batches`]
//!   checks that every KRaftVersion record has its VotersRecord after it in the same batch.
//! - **What the `upgrade` graph leaves out**: the UpdateRaftVoter answer to the reporting voter, a
//!   repeated UpdateFeatures while the first waits (the node answers both at the commit; no model step),
//!   and the upgrade with crashes, disk losses or a joiner (`--preset upgrade` has them, the gate not).
//! - **Acknowledgements the model leaves out**: BeginQuorumEpoch and EndQuorumEpoch *responses* are not
//!   in the model's network; the harness drops them when they are sent. Their only use in Kafka is to let
//!   a stale sender learn a newer epoch, which the model gets through the other messages.
//! - **Candidate votes** (`Server::votes`) are not in `NodeView`: they are compared through their effect
//!   (the step at which the candidate becomes leader).
//! - **Fields of a role the node is not in**: `epoch_start`, `end`, `caught_up`, `pending` only at a
//!   leader (the model resets them on every role change, the implementation drops its leader state).
//!
//! # Files
//! This file: identities, node configuration, error codes. [`membership`]: operator change requests.
//! [`auto_join`]: auto-join's requests as the leader's shell serves them.
//! [`snapshot`]: snapshot settings. [`state`]: the abstract state of a server. [`election`] and [`fetch`]:
//! the Raft messages as model messages. [`messages`]: the wire round trip and the message dispatch.
//! [`upgrade`]: static voters, the volatile set and UpdateFeatures (`--start static`).

pub mod auto_join;
mod election;
mod fetch;
mod membership;
mod messages;
mod snapshot;
mod state;
pub mod upgrade;

pub use fetch::records_of;
pub use membership::{change_request, request_dir, ChangeRequest};
pub use messages::{abstract_message, left_out, through_wire, through_wire_digest, wire_version};
pub use snapshot::{snapshot_config, SNAPSHOT_CHUNK_BYTES};
pub use state::{abstract_model, abstract_view, Abstract};

use kraft::node::{errors, Bootstrap, NodeConfig};
use kraft::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode, VoterSet};
use model::types::{ids, ErrorCode, Id, Mask};
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

/// The ids of a model voter set (the directory ids left out).
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

/// The replica key of model server `i` with its first disk.
pub fn replica_key(i: Id) -> ReplicaKey {
    replica_key_at(i, 0)
}

/// The replica key of model server `i` at model directory id `dir`.
pub fn replica_key_at(i: Id, dir: u8) -> ReplicaKey {
    ReplicaKey::new(i32::from(i), directory_id_at(i, dir))
}

/// The model directory id of replica key `k` of server `i` (a key without a directory id is none of
/// the mapping's).
pub fn key_dir(k: &ReplicaKey, i: Id, what: &str) -> Result<u8, String> {
    model_dir(k.directory_or_nil(), i, what)
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

/// Configuration of model server `i` at model directory id `dir` (its disk after `dir` disk losses,
/// formatted like the first) in a cluster with bootstrap set `bootstrap`; `auto_join`: the model's
/// `--auto-join` (the harness switches the node's period off: it asks only on the model's `AutoJoin`).
pub fn node_config(
    i: Id,
    dir: u8,
    bootstrap: Mask,
    seed: u64,
    auto_join: bool,
) -> Result<NodeConfig, String> {
    Ok(NodeConfig {
        cluster_id: CLUSTER_ID.to_string(),
        node_id: i32::from(i),
        directory_id: directory_id_at(i, dir),
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
        auto_join,
    })
}

/// The model's error codes and Kafka's: the one correspondence between them.
const ERROR_CODES: [(ErrorCode, i16); 11] = [
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
    (ErrorCode::NotController, errors::NOT_CONTROLLER),
    (
        ErrorCode::InvalidUpdateVersion,
        errors::INVALID_UPDATE_VERSION,
    ),
    (ErrorCode::InvalidVoterKey, errors::INVALID_VOTER_KEY),
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

/// The ids of a voter set, checking every voter's identity against the mapping ([`voters_of`]).
pub fn mask_of(set: &VoterSet) -> Result<Mask, String> {
    voters_of(set).map(model::types::VoterSet::ids)
}

/// A voter set as the model's (its voter keys), checking every voter's identity against the mapping:
/// a directory id the mapping gave its id, and its one listener.
pub fn voters_of(set: &VoterSet) -> Result<model::types::VoterSet, String> {
    let mut v = model::types::VoterSet::of(0);
    for n in set.nodes() {
        let i = id_of(n.key.id, "voter id")?;
        let dir = key_dir(&n.key, i, "voter directory id")?;
        if dir >= model::voter_set::MAX_DIRS {
            return Err(format!("voter {i} has model directory id {dir}"));
        }
        if !matches!(n.listeners.as_slice(), [e] if is_endpoint(e, i)) {
            return Err(format!(
                "voter {i} has listeners {:?}, expected {:?}",
                n.listeners,
                vec![endpoint(i)]
            ));
        }
        v = v.with(i, dir);
    }
    Ok(v)
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
        // A voter under a later directory id of its id is that key of the model.
        let replaced = VoterSet::new([VoterNode {
            key: replica_key_at(1, 2),
            listeners: vec![endpoint(1)],
            ..voter_node(1)
        }])
        .unwrap();
        assert_eq!(
            voters_of(&replaced).unwrap(),
            model::types::VoterSet::of(0).with(1, 2)
        );
        assert!(voters_of(
            &VoterSet::new([VoterNode {
                key: replica_key_at(2, 1),
                ..voter_node(1)
            }])
            .unwrap()
        )
        .is_err());
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
            ErrorCode::InvalidVoterKey,
        ] {
            assert_eq!(error_code(kafka_code(c)), Some(c));
        }
        assert_eq!(error_code(42), None);
    }
}
