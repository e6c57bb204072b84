//! Named properties (kip-1204 §6 names) and the `sometimes` examples that show the model is not
//! vacuous. Each is a plain `fn(&KraftModel, &State) -> bool`.

use crate::config::ModelConfig;
use crate::spec::{
    check_change, committed_voters, describe_quorum, history_base, is_majority, latest_voters,
    majorities_overlap, membership_changes_from, reported_committed_offset, Refusal,
};
use crate::step::KraftModel;
use crate::types::{
    bit, ids, violation, ChangeOp, Entry, Id, Kind, Mask, Role, Server, State, VoterSet,
};
use stateright::{Expectation, Property};

mod auto_join;
mod snapshots;
pub use auto_join::{
    append_ack_committed_only_past_hw, auto_join_ack_truncated, auto_join_committed,
    truncated_auto_join_never_committed,
};
pub use snapshots::{
    change_committed_across_snapshot, crash_during_install, install_matches_leader,
    log_start_moved, snapshot_installed, snapshot_voters_committed, snapshot_within_high_watermark,
};

/// At most one leader per epoch, ever.
pub fn election_safety(_: &KraftModel, s: &State) -> bool {
    s.history.leaders.iter().all(|m| m.count_ones() <= 1)
}

/// Two logs with an entry of the same epoch at the same offset agree on everything up to it (from
/// the later of their log starts); and epochs never decrease along a log, starting from the epoch
/// of the snapshot it begins with.
pub fn log_matching(_: &KraftModel, s: &State) -> bool {
    let ordered = |l: &crate::types::Log| {
        let mut last = l.base().map_or(0, |b| b.id.epoch);
        l.as_slice().iter().all(|e| {
            let ok = e.epoch >= last;
            last = e.epoch;
            ok
        })
    };
    if !s.servers.iter().all(|v| ordered(&v.log)) {
        return false;
    }
    for (i, a) in s.servers.iter().enumerate() {
        for b in &s.servers[i + 1..] {
            let (a, b) = (&a.log, &b.log);
            let from = a.start().max(b.start());
            let common = a.len().min(b.len());
            if let Some(o) = (from..common)
                .rev()
                .find(|&o| a.get(o).map(|e| e.epoch) == b.get(o).map(|e| e.epoch))
            {
                if (from..=o).any(|x| a.get(x) != b.get(x)) {
                    return false;
                }
            }
        }
    }
    true
}

/// Leaders of the current epoch (helper).
fn leaders(s: &State) -> impl Iterator<Item = (Id, &Server)> {
    s.servers
        .iter()
        .enumerate()
        .filter(|(_, v)| v.role == Role::Leader)
        .map(|(i, v)| (i as Id, v))
}

/// Every leader holds every entry committed by a leader of an earlier epoch (below its log start, in
/// the snapshot it begins with, which `SnapshotVotersCommitted` checks against the committed log).
pub fn leader_completeness(_: &KraftModel, s: &State) -> bool {
    leaders(s).all(|(_, l)| {
        let start = l.log.start() as usize;
        s.history
            .committed
            .iter()
            .enumerate()
            .all(|(o, (e, ce))| *ce >= l.epoch || o < start || l.log.get(o as u8) == Some(*e))
    })
}

/// No two leaders ever committed different entries at one offset, and every replica's log up to its
/// HW is the committed prefix.
pub fn committed_entries_never_lost(_: &KraftModel, s: &State) -> bool {
    let h = &s.history;
    if h.violations & violation::CONFLICTING_COMMIT != 0 {
        return false;
    }
    s.servers.iter().all(|v| match v.hw {
        None => true,
        Some(hw) => {
            let start = v.log.start();
            hw as usize <= h.committed.len()
                && hw <= v.log.len()
                && (start..hw).all(|o| v.log.get(o) == h.committed.get(o as usize).map(|c| c.0))
                && v.log
                    .base()
                    .is_none_or(|b| h.committed[b.id.end as usize - 1].0.epoch == b.id.epoch)
        }
    })
}

/// No replica's known HW ever decreases, and a leader never reports a HW below what a leader of an
/// earlier epoch committed.
pub fn high_watermark_monotonic(_: &KraftModel, s: &State) -> bool {
    if s.history.violations & violation::HW_DECREASED != 0 {
        return false;
    }
    leaders(s).all(|(_, l)| {
        let before = s
            .history
            .committed
            .iter()
            .rposition(|(_, ce)| *ce < l.epoch);
        match (l.hw, before) {
            (Some(hw), Some(o)) => hw as usize > o,
            _ => true,
        }
    })
}

/// A leader's known HW is past its epoch start (a majority holds a record of its own epoch).
pub fn high_watermark_in_current_epoch(_: &KraftModel, s: &State) -> bool {
    leaders(s).all(|(_, l)| l.hw.is_none_or_above(l.epoch_start))
}

trait Above {
    fn is_none_or_above(&self, start: u8) -> bool;
}

impl Above for Option<u8> {
    fn is_none_or_above(&self, start: u8) -> bool {
        !matches!(self, Some(h) if *h <= start)
    }
}

/// Every offset below a leader's HW is held by a majority of its latest voter set or of its committed
/// voter set (latest alone is wrong right after {1} → {1,2}), counted by voter key: a voter holds
/// the entry if the server with its id still has that directory id and the entry, or if no server
/// holds the key any more (its disk was replaced: the key can never vote or fetch again, so it
/// stands for the copy it may have had, as a crashed server would).
pub fn high_watermark_majority(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    leaders(s).all(|(_, l)| {
        let Some(hw) = l.hw else { return true };
        let latest = latest_voters(bootstrap, &l.log);
        let committed = committed_voters(bootstrap, &l.log, l.hw).unwrap_or(latest);
        // Below the leader's log start its snapshot stands for the records (`SnapshotVotersCommitted`
        // checks it); a replica whose log starts above an offset holds it in its snapshot.
        (l.log.start()..hw).all(|o| {
            let entry = l.log.get(o);
            let has: Mask = s
                .servers
                .iter()
                .enumerate()
                .filter(|(_, v)| entry.is_some() && (v.log.get(o) == entry || o < v.log.start()))
                .fold(0, |m, (i, _)| m | bit(i as Id));
            // A lost key (its id's server has another directory id now) counts as holding.
            let holds = |set: VoterSet| {
                let lost = ids(set.ids())
                    .filter(|&i| set.dir(i) != Some(s.servers[i as usize].dir))
                    .fold(0, |m, i| m | bit(i));
                entry.is_some() && is_majority(has | lost, set.ids())
            };
            holds(latest) || holds(committed)
        })
    })
}

/// A voter set once reported committed stays in the log of every later-epoch leader at its offset,
/// and such a leader never reports an older one.
pub fn committed_voter_set_durable(m: &KraftModel, s: &State) -> bool {
    let Some((epoch, offset, set)) = s.history.max_reported else {
        return true;
    };
    leaders(s).filter(|(_, l)| l.epoch > epoch).all(|(_, l)| {
        // An offset below the leader's log start lies in its snapshot.
        let present = offset < 0
            || (offset as u8) < l.log.start()
            || l.log.get(offset as u8).map(|e| e.kind) == Some(Kind::Voters(set));
        let not_older = match reported_committed_offset(&m.cfg, l) {
            Some(o) => o >= offset,
            None => true,
        };
        present && not_older
    })
}

/// KIP-853's voter keys: a replica never counts toward a majority under a voter key it does not
/// hold — no vote or pre-vote is granted to a request naming another directory id than the
/// granter's, and no leader records a fetch in the state of a voter key with another directory id
/// than the fetcher's (a transition-level check).
pub fn majority_only_of_held_keys(_: &KraftModel, s: &State) -> bool {
    s.history.violations & violation::KEY_NOT_HELD_COUNTED == 0
}

/// No replica ever truncates an entry below its own HW, and no known HW ever decreases.
pub fn no_truncation_below_high_watermark(_: &KraftModel, s: &State) -> bool {
    s.history.violations & (violation::TRUNCATION_BELOW_HW | violation::HW_DECREASED) == 0
}

/// A replica's reported committed voter set only moves forward through its voter-set history.
pub fn committed_voter_set_monotonic(_: &KraftModel, s: &State) -> bool {
    s.history.violations & violation::COMMITTED_VOTERS_REGRESSED == 0
}

/// At most one membership change lies beyond the committed set: at a leader with a known HW the
/// committed and latest sets differ by at most one voter; every log holds at most one changing
/// VotersRecord beyond the global commit point; consecutive VotersRecords differ by one voter.
pub fn single_uncommitted_change(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    let committed_len = s.history.committed.len() as u8;
    s.servers.iter().all(|v| {
        let mut before = history_base(bootstrap, &v.log);
        let steps_ok = v.log.as_slice().iter().all(|e| match e.kind {
            Kind::Voters(set) => {
                let ok = set.key_distance(before) <= 1;
                before = set;
                ok
            }
            _ => true,
        });
        let leader_ok = match (v.role, committed_voters(bootstrap, &v.log, v.hw)) {
            (Role::Leader, Some(c)) => c.key_distance(latest_voters(bootstrap, &v.log)) <= 1,
            _ => true,
        };
        steps_ok && leader_ok && membership_changes_from(bootstrap, &v.log, committed_len) <= 1
    })
}

/// Every majority of a leader's committed set meets every majority of its latest set.
pub fn quorum_overlap(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    leaders(s).all(|(_, l)| match committed_voters(bootstrap, &l.log, l.hw) {
        Some(c) => majorities_overlap(c.keys(), latest_voters(bootstrap, &l.log).keys()),
        None => true,
    })
}

/// The committed voter set by the spec: the last VotersRecord among the globally committed entries
/// below `hw`, else the bootstrap set.
fn spec_committed_set(bootstrap: Mask, committed: &[(Entry, u8)], hw: u8) -> Option<VoterSet> {
    let below = committed.get(..hw as usize)?;
    Some(
        below
            .iter()
            .rev()
            .find_map(|(e, _)| match e.kind {
                Kind::Voters(set) => Some(set),
                _ => None,
            })
            .unwrap_or(VoterSet::of(bootstrap)),
    )
}

/// The leader's DescribeQuorum view agrees with the spec: CurrentVoters = latest set, HighWatermark =
/// HW or −1, CommittedVoters = the committed set (empty iff the HW is unknown), and the −1 sentinel
/// exactly for committed voters the leader has no replica state for.
pub fn describe_quorum_consistent(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    leaders(s).all(|(i, l)| {
        let Some(view) = describe_quorum(&m.cfg, i, l) else {
            return false;
        };
        let mask = |rows: &[crate::spec::ReplicaState]| {
            rows.iter().fold(0 as Mask, |m, r| m | bit(r.replica_id))
        };
        let latest = latest_voters(bootstrap, &l.log).ids();
        let expected_committed = match l.hw {
            None => Some(0),
            Some(hw) => spec_committed_set(bootstrap, &s.history.committed, hw).map(VoterSet::ids),
        };
        let sentinels_ok = view.committed_voters.iter().all(|r| {
            let has_state = r.replica_id == i || l.end[r.replica_id as usize].is_some();
            (r.log_end_offset == -1) != has_state
        });
        view.leader_id == i
            && view.leader_epoch == l.epoch
            && view.high_watermark == l.hw.map_or(-1, i64::from)
            && mask(&view.current_voters) == latest
            && Some(mask(&view.committed_voters)) == expected_committed
            && sentinels_ok
    })
}

/// KIP-996: a pre-vote never raises an epoch. Every epoch a server holds was opened by an election
/// (a candidate, which needs a pre-vote majority first) or by Kafka's bump of a resigned replica, so
/// a replica that cannot win an election cannot push anyone into a new epoch (and so cannot depose
/// a healthy leader). Vacuous without pre-vote, where every timeout opens an epoch.
pub fn epochs_only_from_elections(m: &KraftModel, s: &State) -> bool {
    !m.cfg.pre_vote
        || s.servers
            .iter()
            .all(|v| s.history.opened & (1 << v.epoch) != 0)
}

// ---- sometimes: non-vacuity ----

/// A leader cut off from its quorum (a majority of its other voters already in a later epoch)
/// resigned on check-quorum expiry, by itself. With `no-check-quorum` it never does: it stays leader
/// of its stale epoch, answering DescribeQuorum with a stale HW and voter set, until a message of the
/// later epoch happens to reach it.
///
/// Besides the event bit, it looks one step ahead: a leader's `CheckQuorumTimeout` that sets the
/// event and leads to a state within the in-flight bound is such a reachable step. The event bit
/// alone is not enough, because it is left out of the fingerprint: the state after the resignation
/// may already have been visited by a path without it (the more the search merges equivalent
/// states, the likelier), and then the checker never evaluates it.
pub fn cut_off_leader_resigns(m: &KraftModel, s: &State) -> bool {
    use crate::types::{event::CUT_OFF_LEADER_RESIGNED, Action};
    use stateright::Model;
    s.history.events & CUT_OFF_LEADER_RESIGNED != 0
        || (0..s.servers.len() as Id).any(|i| {
            s.servers[i as usize].role == crate::types::Role::Leader
                && m.step(s, Action::CheckQuorumTimeout(i)).is_some_and(|st| {
                    st.state.history.events & CUT_OFF_LEADER_RESIGNED != 0
                        && m.within_boundary(&st.state)
                })
        })
}

/// A prospective won a pre-vote majority and stood as candidate.
pub fn pre_vote_won(_: &KraftModel, s: &State) -> bool {
    s.history.events & crate::types::event::PRE_VOTE_WON != 0
}

/// A follower that had fetched from its leader refused a pre-vote (KIP-996's protection of a
/// healthy leader).
pub fn pre_vote_refused_by_follower(_: &KraftModel, s: &State) -> bool {
    s.history.events & crate::types::event::PRE_VOTE_REFUSED_BY_FOLLOWER != 0
}

/// The ids whose key `set` has and `before` has not (added, or added with another directory id).
fn added(before: VoterSet, set: VoterSet) -> Mask {
    ids(set.ids())
        .filter(|&i| before.dir(i) != set.dir(i))
        .fold(0, |m, i| m | bit(i))
}

/// Walks the committed VotersRecords: (entry, set before it).
fn committed_changes(m: &KraftModel, s: &State) -> Vec<(Entry, VoterSet)> {
    let mut before = VoterSet::of(m.cfg.bootstrap());
    let mut out = Vec::new();
    for (e, _) in s.history.committed.iter() {
        if let Kind::Voters(set) = e.kind {
            if set != before {
                out.push((*e, before));
            }
            before = set;
        }
    }
    out
}

/// An AddVoter committed.
pub fn add_committed(m: &KraftModel, s: &State) -> bool {
    committed_changes(m, s)
        .iter()
        .any(|(e, before)| matches!(e.kind, Kind::Voters(set) if added(*before, set) != 0))
}

/// An UpdateVoter committed: a VotersRecord with the voters of the one before it, not the one a
/// first leader writes after its KRaftVersion record.
pub fn voter_update_committed(m: &KraftModel, s: &State) -> bool {
    let mut before = VoterSet::of(m.cfg.bootstrap());
    let mut prev = None;
    for (e, _) in s.history.committed.iter() {
        if let Kind::Voters(set) = e.kind {
            if set == before && prev != Some(Kind::KRaftVersion) {
                return true;
            }
            before = set;
        }
        prev = Some(e.kind);
    }
    false
}

/// A RemoveVoter committed.
pub fn removal_committed(m: &KraftModel, s: &State) -> bool {
    committed_changes(m, s)
        .iter()
        .any(|(e, before)| matches!(e.kind, Kind::Voters(set) if added(set, *before) != 0))
}

/// A leader removed itself, the removal committed, and a leader of a later epoch was elected.
pub fn leader_removed_itself_successor_elected(m: &KraftModel, s: &State) -> bool {
    committed_changes(m, s).iter().any(|(e, before)| {
        let Kind::Voters(set) = e.kind else {
            return false;
        };
        let removed = added(set, *before);
        let leader_of_epoch = s.history.leaders[e.epoch as usize];
        removed != 0
            && removed == leader_of_epoch
            && s.history.leaders[e.epoch as usize + 1..]
                .iter()
                .any(|m| *m != 0)
    })
}

/// A replica truncated away an uncommitted membership-changing VotersRecord.
pub fn uncommitted_voters_record_truncated(_: &KraftModel, s: &State) -> bool {
    s.history.events & crate::types::event::VOTERS_RECORD_TRUNCATED != 0
}

/// A leader reports a committed voter set different from its latest one.
pub fn leader_reports_committed_not_latest(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    leaders(s).any(|(_, l)| {
        committed_voters(bootstrap, &l.log, l.hw)
            .is_some_and(|c| c != latest_voters(bootstrap, &l.log))
    })
}

/// A new leader took over while a membership change from an earlier epoch was still uncommitted.
pub fn leader_change_during_uncommitted_change(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    let committed_len = s.history.committed.len() as u8;
    leaders(s).any(|(_, l)| {
        l.hw.is_none() && {
            let mut before = history_base(bootstrap, &l.log);
            l.log.iter().any(|(o, e)| match e.kind {
                Kind::Voters(set) => {
                    let changed = set != before;
                    before = set;
                    changed && e.epoch < l.epoch && o >= committed_len
                }
                _ => false,
            })
        }
    })
}

/// A replica whose disk was replaced is a voter again under its new key in a committed voter set
/// (the operator removed its stale key and added the new one).
pub fn replaced_voter_rejoined(m: &KraftModel, s: &State) -> bool {
    let committed = spec_committed_set(
        m.cfg.bootstrap(),
        &s.history.committed,
        s.history.committed.len() as u8,
    );
    committed.is_some_and(|c| {
        s.servers
            .iter()
            .enumerate()
            .any(|(i, v)| v.dir != 0 && c.is_voter(i as Id, v.dir))
    })
}

/// A leader was elected after the initial state's epoch (the first election when starting fresh).
pub fn leader_elected(m: &KraftModel, s: &State) -> bool {
    let first = match m.cfg.start {
        crate::config::Start::Fresh => 1,
        crate::config::Start::Elected | crate::config::Start::Static => 2,
    };
    s.history.leaders.iter().skip(first).any(|l| *l != 0)
}

/// True if some server would refuse some operator request with `reason` in this state.
pub fn refusal_possible(m: &KraftModel, s: &State, reason: Refusal) -> bool {
    if reason == Refusal::NotLeader {
        return s.servers.iter().any(|v| v.role != Role::Leader);
    }
    let n = m.cfg.servers();
    leaders(s).any(|(_, l)| {
        (0..n).any(|j| {
            let dir = s.servers[j as usize].dir;
            [ChangeOp::Add(j), ChangeOp::Remove(j)]
                .into_iter()
                .any(|op| check_change(&m.cfg, l, op, dir) == Err(reason))
        })
    })
}

macro_rules! refused {
    ($name:ident, $reason:expr) => {
        /// A change can be refused for this precondition (a reachable state where it applies).
        pub fn $name(m: &KraftModel, s: &State) -> bool {
            refusal_possible(m, s, $reason)
        }
    };
}
refused!(refused_not_leader, Refusal::NotLeader);
refused!(refused_pending, Refusal::Pending);
refused!(
    refused_high_watermark_unknown,
    Refusal::HighWatermarkUnknown
);
refused!(refused_uncommitted_voters, Refusal::UncommittedVoters);
refused!(refused_duplicate_voter, Refusal::DuplicateVoter);
refused!(refused_not_caught_up, Refusal::NotCaughtUp);
refused!(refused_voter_not_found, Refusal::VoterNotFound);
refused!(refused_unsupported_version, Refusal::UnsupportedVersion);

// The `kraft.version` upgrade's properties, stated in `crate::kraft_version`.
fn static_voters_before_upgrade(m: &KraftModel, s: &State) -> bool {
    crate::kraft_version::static_voters_before_upgrade(&m.cfg, s)
}
fn upgrade_keeps_voters(m: &KraftModel, s: &State) -> bool {
    crate::kraft_version::upgrade_keeps_voters(&m.cfg, s)
}
fn upgrade_voters_keyed(m: &KraftModel, s: &State) -> bool {
    crate::kraft_version::upgrade_voters_keyed(&m.cfg, s)
}
fn upgrade_committed(m: &KraftModel, s: &State) -> bool {
    crate::kraft_version::upgrade_committed(&m.cfg, s)
}

/// Names of the safety (`always`) properties, as in `specs/invariants.md`.
pub const ALWAYS: [&str; 23] = [
    "ElectionSafety",
    "LogMatching",
    "LeaderCompleteness",
    "CommittedEntriesNeverLost",
    "HighWatermarkMonotonic",
    "HighWatermarkInCurrentEpoch",
    "HighWatermarkMajority",
    "CommittedVoterSetDurable",
    "NoTruncationBelowHighWatermark",
    "CommittedVoterSetMonotonic",
    "SingleUncommittedChange",
    "QuorumOverlap",
    "DescribeQuorumConsistent",
    "EpochsOnlyFromElections",
    "SnapshotWithinHighWatermark",
    "SnapshotVotersCommitted",
    "InstallMatchesLeader",
    "MajorityOnlyOfHeldKeys",
    "StaticVotersBeforeUpgrade",
    "UpgradeKeepsVoters",
    "UpgradeVotersKeyed",
    "AppendAckCommittedOnlyPastHighWatermark",
    "TruncatedAutoJoinNeverCommitted",
];

/// The user-visible safety failures a bug variant's harm search looks for (model/README.md): two
/// leaders in one epoch, a committed entry lost, a committed voter set rolled back.
pub const HARM: [&str; 3] = [
    "ElectionSafety",
    "CommittedEntriesNeverLost",
    "CommittedVoterSetDurable",
];

/// What a `sometimes` property needs from the bounds to be reachable at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Always reachable.
    Nothing,
    /// Membership changes (`max_changes` > 0).
    Membership,
    /// Pre-vote on.
    PreVote,
    /// Check-quorum on.
    CheckQuorum,
    /// Snapshots (`max_snapshots` > 0).
    Snapshots,
    /// Snapshots and a crash.
    SnapshotsAndCrash,
    /// Snapshots and membership changes.
    SnapshotsAndMembership,
    /// UpdateRaftVoter requests and membership changes.
    Updates,
    /// A disk loss and two membership changes (remove the stale key, add the new one).
    DiskLossAndRejoin,
    /// `--start static`: the `kraft.version` upgrade.
    Upgrade,
    /// Auto-join and membership changes.
    AutoJoin,
    /// Auto-join, a joiner (whose add a new leader can truncate) and membership changes.
    AutoJoinJoiner,
}

/// A property's condition.
pub type Condition = fn(&KraftModel, &State) -> bool;

/// `sometimes` properties: name, condition (wrapped by [`KraftModel::example_once`]) and what the
/// bounds must allow for an example to exist.
pub const SOMETIMES: [(&str, Condition, Needs); 27] = [
    ("LeaderElected", leader_elected, Needs::Nothing),
    ("RefusedNotLeader", refused_not_leader, Needs::Nothing),
    (
        "RefusedHighWatermarkUnknown",
        refused_high_watermark_unknown,
        Needs::Nothing,
    ),
    ("PreVoteWon", pre_vote_won, Needs::PreVote),
    (
        "PreVoteRefusedByFollower",
        pre_vote_refused_by_follower,
        Needs::PreVote,
    ),
    (
        "CutOffLeaderResigns",
        cut_off_leader_resigns,
        Needs::CheckQuorum,
    ),
    ("AddCommitted", add_committed, Needs::Membership),
    ("RemovalCommitted", removal_committed, Needs::Membership),
    (
        "LeaderRemovedItselfSuccessorElected",
        leader_removed_itself_successor_elected,
        Needs::Membership,
    ),
    (
        "UncommittedVotersRecordTruncated",
        uncommitted_voters_record_truncated,
        Needs::Membership,
    ),
    (
        "LeaderReportsCommittedNotLatest",
        leader_reports_committed_not_latest,
        Needs::Membership,
    ),
    (
        "LeaderChangeDuringUncommittedChange",
        leader_change_during_uncommitted_change,
        Needs::Membership,
    ),
    ("RefusedPendingChange", refused_pending, Needs::Membership),
    (
        "RefusedUncommittedVoters",
        refused_uncommitted_voters,
        Needs::Membership,
    ),
    (
        "RefusedDuplicateVoter",
        refused_duplicate_voter,
        Needs::Membership,
    ),
    (
        "RefusedNotCaughtUp",
        refused_not_caught_up,
        Needs::Membership,
    ),
    (
        "RefusedVoterNotFound",
        refused_voter_not_found,
        Needs::Membership,
    ),
    ("SnapshotInstalled", snapshot_installed, Needs::Snapshots),
    ("LogStartMoved", log_start_moved, Needs::Snapshots),
    (
        "CrashDuringInstall",
        crash_during_install,
        Needs::SnapshotsAndCrash,
    ),
    (
        "ChangeCommittedAcrossSnapshot",
        change_committed_across_snapshot,
        Needs::SnapshotsAndMembership,
    ),
    (
        "VoterUpdateCommitted",
        voter_update_committed,
        Needs::Updates,
    ),
    (
        "ReplacedVoterRejoined",
        replaced_voter_rejoined,
        Needs::DiskLossAndRejoin,
    ),
    ("UpgradeCommitted", upgrade_committed, Needs::Upgrade),
    (
        "RefusedUnsupportedVersion",
        refused_unsupported_version,
        Needs::Upgrade,
    ),
    ("AutoJoinCommitted", auto_join_committed, Needs::AutoJoin),
    (
        "AutoJoinAckTruncated",
        auto_join_ack_truncated,
        Needs::AutoJoinJoiner,
    ),
];

const USED_SOMETIMES: usize = SOMETIMES.len();

macro_rules! once {
    ($($w:ident = $i:expr),*) => {
        $(fn $w(m: &KraftModel, s: &State) -> bool {
            m.example_once($i, SOMETIMES[$i].1, s)
        })*
        const ONCE: [fn(&KraftModel, &State) -> bool; USED_SOMETIMES] = [$($w),*];
    };
}
once!(
    o0 = 0,
    o1 = 1,
    o2 = 2,
    o3 = 3,
    o4 = 4,
    o5 = 5,
    o6 = 6,
    o7 = 7,
    o8 = 8,
    o9 = 9,
    o10 = 10,
    o11 = 11,
    o12 = 12,
    o13 = 13,
    o14 = 14,
    o15 = 15,
    o16 = 16,
    o17 = 17,
    o18 = 18,
    o19 = 19,
    o20 = 20,
    o21 = 21,
    o22 = 22,
    o23 = 23,
    o24 = 24,
    o25 = 25,
    o26 = 26
);

/// Every property of the model, `always` first. A `sometimes` property is included only when the
/// configuration can reach it (membership changes, pre-vote, check-quorum). `check_quorum` also
/// counts as on under `no-check-quorum`, whose catch is exactly that missing example.
pub fn all(cfg: &ModelConfig) -> Vec<Property<KraftModel>> {
    let mut v = vec![
        Property::always("ElectionSafety", election_safety),
        Property::always("LogMatching", log_matching),
        Property::always("LeaderCompleteness", leader_completeness),
        Property::always("CommittedEntriesNeverLost", committed_entries_never_lost),
        Property::always("HighWatermarkMonotonic", high_watermark_monotonic),
        Property::always(
            "HighWatermarkInCurrentEpoch",
            high_watermark_in_current_epoch,
        ),
        Property::always("HighWatermarkMajority", high_watermark_majority),
        Property::always("CommittedVoterSetDurable", committed_voter_set_durable),
        Property::always(
            "NoTruncationBelowHighWatermark",
            no_truncation_below_high_watermark,
        ),
        Property::always("CommittedVoterSetMonotonic", committed_voter_set_monotonic),
        Property::always("SingleUncommittedChange", single_uncommitted_change),
        Property::always("QuorumOverlap", quorum_overlap),
        Property::always("DescribeQuorumConsistent", describe_quorum_consistent),
        Property::always("EpochsOnlyFromElections", epochs_only_from_elections),
        Property::always(
            "SnapshotWithinHighWatermark",
            snapshot_within_high_watermark,
        ),
        Property::always("SnapshotVotersCommitted", snapshot_voters_committed),
        Property::always("InstallMatchesLeader", install_matches_leader),
        Property::always("MajorityOnlyOfHeldKeys", majority_only_of_held_keys),
        Property::always("StaticVotersBeforeUpgrade", static_voters_before_upgrade),
        Property::always("UpgradeKeepsVoters", upgrade_keeps_voters),
        Property::always("UpgradeVotersKeyed", upgrade_voters_keyed),
        Property::always(
            "AppendAckCommittedOnlyPastHighWatermark",
            append_ack_committed_only_past_hw,
        ),
        Property::always(
            "TruncatedAutoJoinNeverCommitted",
            truncated_auto_join_never_committed,
        ),
    ];
    for (i, wrapped) in ONCE.iter().enumerate() {
        let reachable = match SOMETIMES[i].2 {
            Needs::Nothing => true,
            Needs::Membership => cfg.max_changes > 0,
            Needs::PreVote => cfg.pre_vote,
            Needs::CheckQuorum => cfg.check_quorum && cfg.voters > 1,
            Needs::Snapshots => cfg.max_snapshots > 0,
            Needs::SnapshotsAndCrash => cfg.max_snapshots > 0 && cfg.max_crashes > 0,
            Needs::SnapshotsAndMembership => cfg.max_snapshots > 0 && cfg.max_changes > 0,
            Needs::Updates => cfg.updates && cfg.max_changes > 0,
            Needs::DiskLossAndRejoin => cfg.max_disk_losses > 0 && cfg.max_changes > 1,
            Needs::Upgrade => cfg.start == crate::config::Start::Static,
            Needs::AutoJoin => cfg.auto_join && cfg.max_changes > 0,
            Needs::AutoJoinJoiner => cfg.auto_join && cfg.joiners > 0 && cfg.max_changes > 0,
        };
        if reachable {
            v.push(Property::sometimes(SOMETIMES[i].0, *wrapped));
        }
    }
    v
}

/// The ids of a mask as a list (for printing).
pub fn id_list(mask: Mask) -> Vec<Id> {
    ids(mask).collect()
}

/// Expectation kind as printed by the CLI.
pub fn kind_name(e: &Expectation) -> &'static str {
    match e {
        Expectation::Always => "always",
        Expectation::Sometimes => "sometimes",
        Expectation::Eventually => "eventually",
    }
}
