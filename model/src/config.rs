//! Bounds, knobs and bug variants of the model.

use crate::types::{Mask, MAX_LOG, MAX_SERVERS};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether the implementation (`impl/`) runs pre-vote: traces for conformance use this value, so the
/// model and the node run the same election (the node runs pre-vote).
pub const IMPL_PRE_VOTE: bool = true;

/// Fetch granularity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FetchMode {
    /// Request, leader handling and response are one action. Sound because a replica has at most
    /// one fetch outstanding and its log changes only through that fetch's response: delaying the
    /// request is the same as sending it later, and a delayed response is one the fetcher would
    /// discard (its key no longer matches) or apply exactly as if it came at once.
    Sync,
    /// Request and response are separate messages.
    Async,
}

/// Network semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkKind {
    /// Unordered, no loss, no duplication (a multiset; delivery removes one copy).
    Reliable,
    /// Unordered, messages may be dropped.
    Lossy,
    /// Unordered set; a delivered message stays deliverable (duplication).
    Duplicating,
    /// Lossy and duplicating.
    LossyDuplicating,
}

impl NetworkKind {
    /// Messages may be dropped.
    pub fn lossy(self) -> bool {
        matches!(self, NetworkKind::Lossy | NetworkKind::LossyDuplicating)
    }
    /// Delivered messages stay in flight.
    pub fn duplicating(self) -> bool {
        matches!(
            self,
            NetworkKind::Duplicating | NetworkKind::LossyDuplicating
        )
    }
}

/// Initial state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// Every initial voter at epoch 0 with the bootstrap set at offset −1 and an empty log (the
    /// contract's bootstrap); joiners likewise, as observers.
    Fresh,
    /// The state reached from `Fresh` by the first election of server 0 and two fetch rounds of every
    /// initial voter: leader of epoch 1 with LeaderChange, KRaftVersion, Voters committed (HW 3).
    /// Built by replaying those actions, so it is reachable by construction.
    Elected,
    /// `kraft.version` 0: voters from configuration (`controller.quorum.voters`, the bootstrap set
    /// with no directory id known), no KRaftVersion or VotersRecord; the state reached as for
    /// `Elected`, where server 0's start-of-epoch batch is its LeaderChange alone. The upgrade to
    /// `kraft.version` 1 is modelled (`crate::kraft_version`).
    Static,
}

/// Which voters the leader's HW rule counts (negative controls; `Latest` is KRaft's rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum HwRule {
    /// The latest voter set (KRaft).
    Latest,
    /// The committed voter set only (the set at HW − 1, or before the epoch start while the HW is
    /// unknown).
    Committed,
}

/// Deliberate protocol bugs; each must be caught by a named property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Bug {
    /// No "one change at a time" rule: neither the pending-change check nor the "last VotersRecord
    /// committed" check (the second alone refuses the same requests as the first).
    ConcurrentChanges,
    /// A new leader accepts a change before its HW is known, treating its log as committed (Raft's
    /// single-server membership bug).
    NoEpochCommit,
    /// DescribeQuorum reports the latest voter set as committed.
    CommittedFromLatest,
    /// The HW may advance to an offset of an earlier epoch (no epoch-start rule: Raft's Figure 8).
    HwAnyEpoch,
    /// A leader that removed itself still counts its own LEO toward the HW.
    HwCountsRemovedLeader,
    /// A one-out-one-in VotersRecord on an odd-sized set (passes Kafka's old overlap check).
    SwapVoter,
    /// Votes are granted without the log up-to-date check.
    VoteIgnoresLog,
    /// A prospective candidate raises its epoch when it asks for pre-votes (KIP-996 forbids it:
    /// the pre-vote is sent at the current epoch so that a replica that cannot win disrupts no one).
    PrevoteBumpsEpoch,
    /// A leader never resigns on check-quorum expiry (KIP-996 relies on check-quorum so that a leader
    /// cut off from its quorum steps down by itself).
    NoCheckQuorum,
    /// A replica snapshots at its log end instead of at most its HW (a snapshot of uncommitted
    /// records).
    SnapshotAboveHw,
    /// A snapshot records the latest voter set, not the voter set at its last offset.
    SnapshotLatestVoters,
    /// Installing a snapshot keeps the follower's entries after the snapshot's end offset instead of
    /// truncating the log fully.
    InstallKeepsSuffix,
    /// A replica grants votes and pre-votes whatever directory id the request names (Kafka's
    /// `isValidVoterKey` skipped): a voter that lost its disk votes under its old key.
    VoteIgnoresDirectoryId,
    /// The leader records a fetch in the state of the voter with the fetcher's id whatever its
    /// directory id (Kafka's `ReplicaState.matchesKey` by id only): a replaced replica's fetches
    /// count toward the HW as the old voter's.
    FetchIgnoresDirectoryId,
    /// The `kraft.version` upgrade is appended before every voter reported its key with
    /// UpdateRaftVoter: an unreported voter is written with no directory id (Kafka's static entry),
    /// which matches every directory id of its id.
    UpgradeBeforeDirectoryIds,
    /// Auto-join adds the replica's new key while its id is a voter under a stale key: the observer
    /// skips the RemoveRaftVoter of the stale key, and the leader's AddRaftVoter check refuses an
    /// id only when the exact key is a voter (it replaces the stale key in one VotersRecord).
    AutoJoinKeepsStale,
    /// The leader takes its acknowledgement of an auto-join at append for the commit: it moves its
    /// HW past the VotersRecord it just appended.
    AutoJoinAckCommits,
}

impl Bug {
    /// Every variant.
    pub const ALL: [Bug; 17] = [
        Bug::ConcurrentChanges,
        Bug::NoEpochCommit,
        Bug::CommittedFromLatest,
        Bug::HwAnyEpoch,
        Bug::HwCountsRemovedLeader,
        Bug::SwapVoter,
        Bug::VoteIgnoresLog,
        Bug::PrevoteBumpsEpoch,
        Bug::NoCheckQuorum,
        Bug::SnapshotAboveHw,
        Bug::SnapshotLatestVoters,
        Bug::InstallKeepsSuffix,
        Bug::VoteIgnoresDirectoryId,
        Bug::FetchIgnoresDirectoryId,
        Bug::UpgradeBeforeDirectoryIds,
        Bug::AutoJoinKeepsStale,
        Bug::AutoJoinAckCommits,
    ];
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Bug::ConcurrentChanges => "concurrent-changes",
            Bug::NoEpochCommit => "no-epoch-commit",
            Bug::CommittedFromLatest => "committed-from-latest",
            Bug::HwAnyEpoch => "hw-any-epoch",
            Bug::HwCountsRemovedLeader => "hw-counts-removed-leader",
            Bug::SwapVoter => "swap-voter",
            Bug::VoteIgnoresLog => "vote-ignores-log",
            Bug::PrevoteBumpsEpoch => "prevote-bumps-epoch",
            Bug::NoCheckQuorum => "no-check-quorum",
            Bug::SnapshotAboveHw => "snapshot-above-hw",
            Bug::SnapshotLatestVoters => "snapshot-latest-voters",
            Bug::InstallKeepsSuffix => "install-keeps-suffix",
            Bug::VoteIgnoresDirectoryId => "vote-ignores-directory-id",
            Bug::FetchIgnoresDirectoryId => "fetch-ignores-directory-id",
            Bug::UpgradeBeforeDirectoryIds => "upgrade-before-directory-ids",
            Bug::AutoJoinKeepsStale => "auto-join-keeps-stale",
            Bug::AutoJoinAckCommits => "auto-join-ack-commits",
        }
    }
    /// True if the bug is caught by an `always` property with a finite counterexample; false if it is
    /// caught by a `sometimes` property that finds no example (`no-check-quorum`).
    pub fn has_counterexample(self) -> bool {
        !matches!(self, Bug::NoCheckQuorum)
    }
    /// True if the implementation's election can replay this variant's counterexample (conformance):
    /// `prevote-bumps-epoch` changes the election itself, so its counterexample already differs in the
    /// shared election prefix (step 1) rather than after it, and `no-check-quorum` has no counterexample.
    /// The snapshot variants' counterexamples take snapshot steps, which the replay does not map yet.
    pub fn impl_comparable(self) -> bool {
        self.has_counterexample()
            && !matches!(self, Bug::PrevoteBumpsEpoch)
            && !self.snapshots()
            && !self.upgrade()
    }
    /// True for the variants that break a `kraft.version` upgrade rule (they need `--start static`).
    pub fn upgrade(self) -> bool {
        matches!(self, Bug::UpgradeBeforeDirectoryIds)
    }
    /// True for the variants that break an auto-join rule (they need `auto_join`).
    pub fn auto_join(self) -> bool {
        matches!(self, Bug::AutoJoinKeepsStale | Bug::AutoJoinAckCommits)
    }
    /// True for the variants that break a directory-id rule (they need `max_disk_losses` > 0).
    pub fn disk_losses(self) -> bool {
        matches!(
            self,
            Bug::VoteIgnoresDirectoryId | Bug::FetchIgnoresDirectoryId
        )
    }
    /// True for the variants that break a snapshot rule (they need `max_snapshots` > 0).
    pub fn snapshots(self) -> bool {
        matches!(
            self,
            Bug::SnapshotAboveHw | Bug::SnapshotLatestVoters | Bug::InstallKeepsSuffix
        )
    }
}

/// A configuration error (bounds outside what the packed state can hold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Bounds and knobs. The bounds live in action guards (and `max_in_flight`/`max_log` in the
/// boundary), so a search without a depth bound is exhaustive within them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Initial voters (ids `0..voters`), the bootstrap set.
    pub voters: u8,
    /// Joiners (ids after the voters): observers that may be added.
    pub joiners: u8,
    /// Highest epoch a candidate may start.
    pub max_epoch: u8,
    /// Longest log (including start-of-epoch records).
    pub max_log: u8,
    /// Most client (Data) records appended in a run.
    pub max_data: u8,
    /// Most membership changes appended in a run.
    pub max_changes: u8,
    /// Most restarts in a run.
    pub max_crashes: u8,
    /// Most snapshots taken in a run (0 = no snapshot actions: `TakeSnapshot`, `AdvanceLogStart`,
    /// `FetchSnapshot` are never enabled). Absent in older trace files, which had no snapshots.
    #[serde(default)]
    pub max_snapshots: u8,
    /// Most disk losses in a run (0 = no `DiskLoss` action). Absent in older trace files, which had
    /// none.
    #[serde(default)]
    pub max_disk_losses: u8,
    /// Most messages in flight (states beyond are outside the boundary).
    pub max_in_flight: u8,
    /// Fetch granularity.
    pub fetch: FetchMode,
    /// Network semantics.
    pub network: NetworkKind,
    /// Initial state.
    pub start: Start,
    /// HW rule (negative controls).
    pub hw_rule: HwRule,
    /// Enabled bug variant, `None` = the protocol.
    pub bug: Option<Bug>,
    /// Leaders resign on check-quorum expiry.
    pub check_quorum: bool,
    /// KIP-996 pre-vote (Kafka 4.x): a timed-out voter becomes Prospective and asks for pre-votes at
    /// its current epoch; only a pre-vote majority makes it a Candidate. Off = Kafka 3.9's election
    /// (kept for comparison; the implementation runs [`IMPL_PRE_VOTE`]). Absent in older trace
    /// files, which were written without pre-vote.
    #[serde(default)]
    pub pre_vote: bool,
    /// A refused operator request is a self-loop step (so traces show refusals); off for `check`,
    /// where refusals are no transitions (`sometimes` properties still see them as state predicates).
    pub refusal_steps: bool,
    /// Drop messages the receiver is certain to ignore (older epoch, non-matching fetch response, an
    /// answer its current role cannot use) as soon as they are stale, and the requests in flight to a
    /// server that restarts. Not a pure reduction: the restart part restricts the model to what Kafka's
    /// connections allow (`step/network.rs`, the restart in `step/mod.rs`); conformance replays with it off.
    pub gc: bool,
    /// UpdateRaftVoter requests (a voter's endpoints changed) are tried at every server, each one a
    /// membership change within `max_changes`. Absent in older trace files, which had none.
    #[serde(default)]
    pub updates: bool,
    /// Auto-join (KIP-1186) on the replicas that lost a disk and on the joiners: an observer removes
    /// the stale key of its id, then adds itself, acknowledged at append (`src/step/auto_join.rs`).
    #[serde(default)]
    pub auto_join: bool,
    /// Most `Duplicate` steps in a run: a second copy of a message in flight (a retried request,
    /// hence a duplicated answer) on a network that otherwise delivers each copy once. 0 = none;
    /// absent in older trace files. Needs a non-duplicating network (there every message stays).
    #[serde(default)]
    pub max_duplicates: u8,
}

impl Default for ModelConfig {
    /// The bounds the tests and conformance start from, with Kafka 4.x elections (pre-vote and
    /// check-quorum on): one change, no crash. `check` runs `check::default_bounds` (two changes
    /// and a crash on top).
    fn default() -> Self {
        ModelConfig {
            voters: 3,
            joiners: 1,
            max_epoch: 2,
            max_log: 5,
            max_data: 0,
            max_changes: 1,
            max_crashes: 0,
            max_snapshots: 0,
            max_disk_losses: 0,
            max_in_flight: 4,
            fetch: FetchMode::Sync,
            network: NetworkKind::Reliable,
            start: Start::Elected,
            hw_rule: HwRule::Latest,
            bug: None,
            check_quorum: true,
            pre_vote: true,
            refusal_steps: false,
            gc: true,
            updates: false,
            auto_join: false,
            max_duplicates: 0,
        }
    }
}

impl ModelConfig {
    /// Total servers.
    pub fn servers(&self) -> u8 {
        self.voters + self.joiners
    }
    /// The bootstrap voter set (offset −1): the initial voters.
    pub fn bootstrap(&self) -> Mask {
        ((1u16 << self.voters) - 1) as Mask
    }
    /// True if `bug` is enabled.
    pub fn has(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }
    /// Rejects bounds the packed state cannot hold.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.voters == 0 {
            return Err(ConfigError("--voters must be at least 1".into()));
        }
        if self.servers() as usize > MAX_SERVERS {
            return Err(ConfigError(format!(
                "voters + joiners = {} exceeds {MAX_SERVERS}",
                self.servers()
            )));
        }
        if self.max_log as usize > MAX_LOG {
            return Err(ConfigError(format!(
                "--max-log {} exceeds {MAX_LOG}",
                self.max_log
            )));
        }
        if self.max_epoch as usize >= 16 {
            return Err(ConfigError(format!(
                "--max-epoch {} exceeds 15",
                self.max_epoch
            )));
        }
        if self.max_disk_losses >= crate::types::MAX_DIRS {
            return Err(ConfigError(format!(
                "--disk-losses {} exceeds {} (directory ids are two bits per server)",
                self.max_disk_losses,
                crate::types::MAX_DIRS - 1
            )));
        }
        if self.max_snapshots > 0 && self.fetch == FetchMode::Async {
            return Err(ConfigError(
                "snapshots (--max-snapshots > 0) need --fetch sync: FetchSnapshot is modelled as one step".into(),
            ));
        }
        if self.start == Start::Elected && (self.max_epoch < 1 || self.max_log < 3) {
            return Err(ConfigError(
                "start=elected needs --max-epoch ≥ 1 and --max-log ≥ 3".into(),
            ));
        }
        if self.start == Start::Static && (self.max_epoch < 1 || self.max_log < 1) {
            return Err(ConfigError(
                "start=static needs --max-epoch ≥ 1 and --max-log ≥ 1".into(),
            ));
        }
        if self.start == Start::Static && self.max_snapshots > 0 {
            return Err(ConfigError(
                "start=static: snapshots at kraft.version 0 are not modelled (--max-snapshots 0)"
                    .into(),
            ));
        }
        if self.max_duplicates > 0 && self.network.duplicating() {
            return Err(ConfigError(
                "--duplicates needs a network that delivers each copy once (reliable or lossy)"
                    .into(),
            ));
        }
        if self.bug.is_some_and(Bug::upgrade) && self.start != Start::Static {
            return Err(ConfigError(
                "an upgrade bug variant needs --start static".into(),
            ));
        }
        Ok(())
    }
}

impl fmt::Display for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "voters={} joiners={} max_epoch={} max_log={} max_data={} max_changes={} crashes={} \
             snapshots={} max_in_flight={} fetch={:?} network={:?} start={:?} hw_rule={:?} check_quorum={} pre_vote={} bug={}",
            self.voters,
            self.joiners,
            self.max_epoch,
            self.max_log,
            self.max_data,
            self.max_changes,
            self.max_crashes,
            self.max_snapshots,
            self.max_in_flight,
            self.fetch,
            self.network,
            self.start,
            self.hw_rule,
            self.check_quorum,
            self.pre_vote,
            self.bug.map_or("none", Bug::name)
        )?;
        if self.updates {
            f.write_str(" updates=true")?;
        }
        if self.auto_join {
            f.write_str(" auto_join=true")?;
        }
        if self.max_disk_losses > 0 {
            write!(f, " disk_losses={}", self.max_disk_losses)?;
        }
        if self.max_duplicates > 0 {
            write!(f, " duplicates={}", self.max_duplicates)?;
        }
        Ok(())
    }
}
