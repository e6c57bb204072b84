//! Named properties (kip-1204 §6 names) and the `sometimes` examples that show the model is not
//! vacuous. Each is a plain `fn(&KraftModel, &State) -> bool`.

use crate::spec::{
    check_change, committed_voters, describe_quorum, is_majority, latest_voters,
    majorities_overlap, membership_changes_from, reported_committed_offset, size, Refusal,
};
use crate::step::KraftModel;
use crate::types::{bit, ids, violation, ChangeOp, Entry, Id, Kind, Mask, Role, Server, State};
use stateright::{Expectation, Property};

/// At most one leader per epoch, ever.
pub fn election_safety(_: &KraftModel, s: &State) -> bool {
    s.history.leaders.iter().all(|m| m.count_ones() <= 1)
}

/// Two logs with an entry of the same epoch at the same offset agree on everything up to it.
pub fn log_matching(_: &KraftModel, s: &State) -> bool {
    for (i, a) in s.servers.iter().enumerate() {
        for b in &s.servers[i + 1..] {
            let (a, b) = (a.log.as_slice(), b.log.as_slice());
            let common = a.len().min(b.len());
            if let Some(o) = (0..common).rev().find(|&o| a[o].epoch == b[o].epoch) {
                if a[..=o] != b[..=o] {
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

/// Every leader holds every entry committed by a leader of an earlier epoch.
pub fn leader_completeness(_: &KraftModel, s: &State) -> bool {
    leaders(s).all(|(_, l)| {
        s.history
            .committed
            .iter()
            .enumerate()
            .all(|(o, (e, ce))| *ce >= l.epoch || l.log.get(o as u8) == Some(*e))
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
            let hw = hw as usize;
            hw <= h.committed.len()
                && hw <= v.log.len() as usize
                && v.log.as_slice()[..hw]
                    .iter()
                    .zip(h.committed.iter())
                    .all(|(a, (b, _))| a == b)
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
/// voter set (latest alone is wrong right after {1} → {1,2}).
pub fn high_watermark_majority(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    leaders(s).all(|(_, l)| {
        let Some(hw) = l.hw else { return true };
        let latest = latest_voters(bootstrap, &l.log);
        let committed = committed_voters(bootstrap, &l.log, l.hw).unwrap_or(latest);
        (0..hw).all(|o| {
            let entry = l.log.get(o);
            let holders: Mask = s
                .servers
                .iter()
                .enumerate()
                .filter(|(_, v)| entry.is_some() && v.log.get(o) == entry)
                .fold(0, |m, (i, _)| m | bit(i as Id));
            is_majority(holders, latest) || is_majority(holders, committed)
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
        let present =
            offset < 0 || l.log.get(offset as u8).map(|e| e.kind) == Some(Kind::Voters(set));
        let not_older = match reported_committed_offset(&m.cfg, l) {
            Some(o) => o >= offset,
            None => true,
        };
        present && not_older
    })
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
        let mut before = bootstrap;
        let steps_ok = v.log.as_slice().iter().all(|e| match e.kind {
            Kind::Voters(set) => {
                let ok = size(set ^ before) <= 1;
                before = set;
                ok
            }
            _ => true,
        });
        let leader_ok = match (v.role, committed_voters(bootstrap, &v.log, v.hw)) {
            (Role::Leader, Some(c)) => size(c ^ latest_voters(bootstrap, &v.log)) <= 1,
            _ => true,
        };
        steps_ok && leader_ok && membership_changes_from(bootstrap, &v.log, committed_len) <= 1
    })
}

/// Every majority of a leader's committed set meets every majority of its latest set.
pub fn quorum_overlap(m: &KraftModel, s: &State) -> bool {
    let bootstrap = m.cfg.bootstrap();
    leaders(s).all(|(_, l)| match committed_voters(bootstrap, &l.log, l.hw) {
        Some(c) => majorities_overlap(c, latest_voters(bootstrap, &l.log)),
        None => true,
    })
}

/// The committed voter set by the spec: the last VotersRecord among the globally committed entries
/// below `hw`, else the bootstrap set.
fn spec_committed_set(bootstrap: Mask, committed: &[(Entry, u8)], hw: u8) -> Option<Mask> {
    let below = committed.get(..hw as usize)?;
    Some(
        below
            .iter()
            .rev()
            .find_map(|(e, _)| match e.kind {
                Kind::Voters(set) => Some(set),
                _ => None,
            })
            .unwrap_or(bootstrap),
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
        let latest = latest_voters(bootstrap, &l.log);
        let expected_committed = match l.hw {
            None => Some(0),
            Some(hw) => spec_committed_set(bootstrap, &s.history.committed, hw),
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

// ---- sometimes: non-vacuity ----

/// Walks the committed VotersRecords: (entry, set before it).
fn committed_changes(m: &KraftModel, s: &State) -> Vec<(Entry, Mask)> {
    let mut before = m.cfg.bootstrap();
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
        .any(|(e, before)| matches!(e.kind, Kind::Voters(set) if set & !before != 0))
}

/// A RemoveVoter committed.
pub fn removal_committed(m: &KraftModel, s: &State) -> bool {
    committed_changes(m, s)
        .iter()
        .any(|(e, before)| matches!(e.kind, Kind::Voters(set) if before & !set != 0))
}

/// A leader removed itself, the removal committed, and a leader of a later epoch was elected.
pub fn leader_removed_itself_successor_elected(m: &KraftModel, s: &State) -> bool {
    committed_changes(m, s).iter().any(|(e, before)| {
        let Kind::Voters(set) = e.kind else {
            return false;
        };
        let removed = before & !set;
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
            let mut before = bootstrap;
            l.log
                .as_slice()
                .iter()
                .enumerate()
                .any(|(o, e)| match e.kind {
                    Kind::Voters(set) => {
                        let changed = set != before;
                        before = set;
                        changed && e.epoch < l.epoch && o as u8 >= committed_len
                    }
                    _ => false,
                })
        }
    })
}

/// A leader was elected after the initial state's epoch (the first election when starting fresh).
pub fn leader_elected(m: &KraftModel, s: &State) -> bool {
    let first = match m.cfg.start {
        crate::config::Start::Fresh => 1,
        crate::config::Start::Elected => 2,
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
            [ChangeOp::Add(j), ChangeOp::Remove(j)]
                .into_iter()
                .any(|op| check_change(&m.cfg, l, op) == Err(reason))
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

/// Names of the safety (`always`) properties, as in `specs/invariants.md`.
pub const ALWAYS: [&str; 13] = [
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
];

/// A property's condition.
pub type Condition = fn(&KraftModel, &State) -> bool;

/// `sometimes` properties: name and condition (wrapped by [`KraftModel::example_once`]).
pub const SOMETIMES: [(&str, Condition); 14] = [
    ("LeaderElected", leader_elected),
    ("RefusedNotLeader", refused_not_leader),
    (
        "RefusedHighWatermarkUnknown",
        refused_high_watermark_unknown,
    ),
    ("AddCommitted", add_committed),
    ("RemovalCommitted", removal_committed),
    (
        "LeaderRemovedItselfSuccessorElected",
        leader_removed_itself_successor_elected,
    ),
    (
        "UncommittedVotersRecordTruncated",
        uncommitted_voters_record_truncated,
    ),
    (
        "LeaderReportsCommittedNotLatest",
        leader_reports_committed_not_latest,
    ),
    (
        "LeaderChangeDuringUncommittedChange",
        leader_change_during_uncommitted_change,
    ),
    ("RefusedPendingChange", refused_pending),
    ("RefusedUncommittedVoters", refused_uncommitted_voters),
    ("RefusedDuplicateVoter", refused_duplicate_voter),
    ("RefusedNotCaughtUp", refused_not_caught_up),
    ("RefusedVoterNotFound", refused_voter_not_found),
];

/// How many of [`SOMETIMES`] need no membership change (they come first).
const BASIC_SOMETIMES: usize = 3;
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
    o13 = 13
);

/// Every property of the model, `always` first. Membership examples are included only when the
/// bounds allow membership changes.
pub fn all(with_membership_examples: bool) -> Vec<Property<KraftModel>> {
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
    ];
    let n = if with_membership_examples {
        USED_SOMETIMES
    } else {
        BASIC_SOMETIMES
    };
    for (i, wrapped) in ONCE.iter().enumerate().take(n) {
        v.push(Property::sometimes(SOMETIMES[i].0, *wrapped));
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
