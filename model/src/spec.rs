//! The spec as small pure functions (kip-1204 §1–§3). Actions and properties both call these, so each
//! fact is stated once.

use crate::config::{Bug, HwRule, ModelConfig};
use crate::kraft_version::kraft_version;
use crate::types::{
    bit, ids, ChangeOp, Entry, ErrorCode, Id, Kind, Log, Mask, Role, Server, Snapshot, SnapshotId,
    VoterSet,
};
use serde::{Deserialize, Serialize};

/// Number of voters in `set`.
pub fn size(set: Mask) -> u32 {
    set.count_ones()
}

/// True if `sub` holds a majority of `set` (more than half of its members).
pub fn is_majority(sub: Mask, set: Mask) -> bool {
    2 * size(sub & set) > size(set)
}

/// True if every majority of `a` meets every majority of `b` (real intersection, not "differs by one
/// key"). The largest disjoint pair takes `a`'s majority from `a \ b` first and `b`'s from `b \ a`
/// first; they collide iff what is left needs more than `a ∩ b` holds.
///
/// Takes key sets ([`VoterSet::keys`]): a voter whose disk was replaced is another member.
pub fn majorities_overlap(a: u32, b: u32) -> bool {
    let size = u32::count_ones;
    let need_a = (size(a) / 2 + 1).saturating_sub(size(a & !b));
    let need_b = (size(b) / 2 + 1).saturating_sub(size(b & !a));
    need_a + need_b > size(a & b)
}

/// Offset of the last VotersRecord with offset < `end` (at or above the log start), `None` if there
/// is none (the set then comes from the log's snapshot, or the bootstrap set).
pub fn voters_record_before(log: &Log, end: u8) -> Option<u8> {
    let end = end.min(log.len());
    (log.start()..end)
        .rev()
        .find(|&o| matches!(log.get(o).map(|e| e.kind), Some(Kind::Voters(_))))
}

/// Where the voter-set history begins: the voter set of the snapshot at the log start (Kafka loads
/// it at offset `start − 1`), or the bootstrap set (offset −1) while the log starts at 0.
pub fn history_base(bootstrap: Mask, log: &Log) -> VoterSet {
    log.base().map_or(VoterSet::of(bootstrap), |s| s.voters)
}

/// The voter set in force for an entry at offset `end − 1`: the last VotersRecord with offset < `end`,
/// falling back to the snapshot the log begins with, else the bootstrap set at −1.
pub fn voters_at(bootstrap: Mask, log: &Log, end: u8) -> VoterSet {
    match voters_record_before(log, end).and_then(|o| log.get(o)) {
        Some(Entry {
            kind: Kind::Voters(set),
            ..
        }) => set,
        _ => history_base(bootstrap, log),
    }
}

/// The latest voter set: the last VotersRecord in the log, committed or not.
pub fn latest_voters(bootstrap: Mask, log: &Log) -> VoterSet {
    voters_at(bootstrap, log, log.len())
}

/// Offset of the latest VotersRecord, `None` = the history's base (bootstrap set or snapshot).
pub fn latest_voters_offset(log: &Log) -> Option<u8> {
    voters_record_before(log, log.len())
}

/// THE committed voter set: the voter set at offset HW − 1 (the last VotersRecord below the HW, else
/// the snapshot's set, else the bootstrap set); `None` while the HW is unknown.
pub fn committed_voters(bootstrap: Mask, log: &Log, hw: Option<u8>) -> Option<VoterSet> {
    hw.map(|h| voters_at(bootstrap, log, h))
}

/// Position in the voter-set history of the committed set: offset of its VotersRecord, `start − 1`
/// for a set that comes from the snapshot at the log start (Kafka gives its control records that
/// offset), −1 for the bootstrap set; `None` while the HW is unknown.
pub fn committed_voters_offset(log: &Log, hw: Option<u8>) -> Option<i8> {
    hw.map(|h| voters_record_before(log, h).map_or(log.start() as i8 - 1, |o| o as i8))
}

/// Kafka's `endOffsetForEpoch(epoch)`: the largest epoch ≤ `epoch` in the log and the end offset of
/// that epoch; (0, 0) if the log holds nothing of epoch ≤ `epoch`. Above a snapshot, the snapshot
/// counts as the log's first epoch (`KafkaMetadataLog.endOffsetForEpoch` answers the snapshot id).
pub fn end_offset_for_epoch(log: &Log, epoch: u8) -> (u8, u8) {
    let end = log.start()
        + log
            .as_slice()
            .iter()
            .take_while(|e| e.epoch <= epoch)
            .count() as u8;
    let found = match log.get(end.wrapping_sub(1)) {
        Some(e) => e.epoch,
        None => log.base().map_or(0, |b| b.id.epoch),
    };
    (found, end)
}

/// The fetch validity check at the leader: `Some((epoch, end offset))` = DivergingEpoch.
pub fn diverging(leader_log: &Log, fetch_offset: u8, last_fetched_epoch: u8) -> Option<(u8, u8)> {
    let (epoch, end) = end_offset_for_epoch(leader_log, last_fetched_epoch);
    (epoch != last_fetched_epoch || fetch_offset > end).then_some((epoch, end))
}

/// The snapshot a leader points a fetch to, instead of answering it from its log (Kafka 4.4
/// `tryCompleteFetchRequest` and `ReplicatedLog.validateOffsetAndEpoch`): its latest snapshot when
/// the fetch is at offset 0 and it holds one, or when its log starts at a snapshot and the fetch is
/// below the log start, at the log start with another last fetched epoch than the snapshot's, or
/// with a last fetched epoch older than the snapshot's.
pub fn snapshot_answer(
    latest: Option<Snapshot>,
    log: &Log,
    fetch_offset: u8,
    last_fetched_epoch: u8,
) -> Option<SnapshotId> {
    let latest = latest?.id;
    if fetch_offset == 0 {
        return Some(latest);
    }
    let base = log.base()?.id;
    (fetch_offset < base.end
        || (fetch_offset == base.end && last_fetched_epoch != base.epoch)
        || last_fetched_epoch < base.epoch)
        .then_some(latest)
}

/// Where a follower truncates on DivergingEpoch{epoch, end}: Kafka's
/// `min(end, local end offset for epoch)`, never past its own LEO. (The contract's
/// `min(end, LEO)` agrees except when the follower holds a later epoch than `epoch` below `end`, where
/// it would keep that entry and diverge forever; Kafka's rule is taken.)
pub fn truncation_offset(log: &Log, diverging_epoch: u8, diverging_end: u8) -> u8 {
    let (_, local_end) = end_offset_for_epoch(log, diverging_epoch);
    diverging_end.min(local_end).min(log.len())
}

/// Vote rule: the candidate's log is at least as up to date as ours, epoch compared first.
pub fn log_up_to_date(cand_last_epoch: u8, cand_leo: u8, own: &Log) -> bool {
    (cand_last_epoch, cand_leo) >= (own.last_epoch(), own.len())
}

/// The voters a leader's HW rule counts, per the configured rule.
pub fn hw_voters(cfg: &ModelConfig, s: &Server) -> VoterSet {
    match cfg.hw_rule {
        HwRule::Latest => latest_voters(cfg.bootstrap(), &s.log),
        HwRule::Committed => {
            let end = s.hw.unwrap_or(s.epoch_start);
            voters_at(cfg.bootstrap(), &s.log, end)
        }
    }
}

/// The HW candidate at leader `me` (kip-1204 §2): end offsets of the counted voters (the leader's own
/// is its LEO, counted only if its key is a voter), sorted descending with unknown last; the entry at
/// index ⌊n/2⌋. `None` if that entry is unknown. A voter's offset is the one its key fetched: a
/// fetch of another key with the same id (a replaced disk) is not the voter's.
pub fn hw_candidate(cfg: &ModelConfig, me: Id, s: &Server) -> Option<u8> {
    let mut voters = hw_voters(cfg, s);
    if cfg.has(Bug::HwCountsRemovedLeader) && !voters.has_id(me) {
        voters = voters.with(me, s.dir);
    }
    let mut offsets: Vec<Option<u8>> = ids(voters.ids())
        .map(|v| {
            if v == me {
                voters.is_voter(me, s.dir).then(|| s.log.len())
            } else {
                s.end[v as usize].filter(|_| voters.is_voter(v, s.peer_dir(v)))
            }
        })
        .collect();
    offsets.sort_unstable_by(|a, b| b.cmp(a));
    offsets.get(offsets.len() / 2).copied().flatten()
}

/// The leader's next HW: the candidate if it is past the epoch start and above the old HW (never
/// decreases); otherwise the old HW.
pub fn next_high_watermark(cfg: &ModelConfig, me: Id, s: &Server) -> Option<u8> {
    let Some(c) = hw_candidate(cfg, me, s) else {
        return s.hw;
    };
    let past_start = c > s.epoch_start || cfg.has(Bug::HwAnyEpoch);
    let above_old = !matches!(s.hw, Some(h) if c <= h);
    if past_start && above_old && c > 0 {
        Some(c)
    } else {
        s.hw
    }
}

/// Why a membership change is refused (kip-1204 §3, checked in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Refusal {
    /// Not the leader → NOT_LEADER_OR_FOLLOWER.
    NotLeader,
    /// Another add/remove pending → REQUEST_TIMED_OUT.
    Pending,
    /// HW unknown → REQUEST_TIMED_OUT.
    HighWatermarkUnknown,
    /// Add or remove at kraft.version 0 (`--start static`, before the upgrade) → UNSUPPORTED_VERSION.
    UnsupportedVersion,
    /// Last VotersRecord not committed → REQUEST_TIMED_OUT.
    UncommittedVoters,
    /// Add of a voter → DUPLICATE_VOTER.
    DuplicateVoter,
    /// Add of a replica that never caught up in this epoch → REQUEST_TIMED_OUT.
    NotCaughtUp,
    /// Remove of a non-voter or of the last voter → VOTER_NOT_FOUND.
    VoterNotFound,
}

impl Refusal {
    /// Every refusal.
    pub const ALL: [Refusal; 8] = [
        Refusal::NotLeader,
        Refusal::Pending,
        Refusal::HighWatermarkUnknown,
        Refusal::UnsupportedVersion,
        Refusal::UncommittedVoters,
        Refusal::DuplicateVoter,
        Refusal::NotCaughtUp,
        Refusal::VoterNotFound,
    ];
    /// The error code the leader answers with.
    pub fn error(self) -> ErrorCode {
        match self {
            Refusal::NotLeader => ErrorCode::NotLeaderOrFollower,
            Refusal::Pending
            | Refusal::HighWatermarkUnknown
            | Refusal::UncommittedVoters
            | Refusal::NotCaughtUp => ErrorCode::RequestTimedOut,
            Refusal::UnsupportedVersion => ErrorCode::UnsupportedVersion,
            Refusal::DuplicateVoter => ErrorCode::DuplicateVoter,
            Refusal::VoterNotFound => ErrorCode::VoterNotFound,
        }
    }
}

/// The new voter set if `op` passes every precondition at server `s`, else the first refusal.
/// `dir` is the directory id of the key the request names for an add, update or swap-in (the
/// replica's current one); a removal names the key the latest set holds for the id.
pub fn check_change(
    cfg: &ModelConfig,
    s: &Server,
    op: ChangeOp,
    dir: u8,
) -> Result<VoterSet, Refusal> {
    if s.role != Role::Leader {
        return Err(Refusal::NotLeader);
    }
    let one_at_a_time = !cfg.has(Bug::ConcurrentChanges);
    if one_at_a_time && s.pending.is_some() && !crate::kraft_version::upgrade_pending(s) {
        return Err(Refusal::Pending);
    }
    let bypass_hw = cfg.has(Bug::NoEpochCommit) && s.hw.is_none();
    let hw = match s.hw {
        Some(h) => h,
        None if bypass_hw => s.log.len(),
        None => return Err(Refusal::HighWatermarkUnknown),
    };
    // `--start static`: at kraft.version 0 an add or remove is UNSUPPORTED_VERSION and an update
    // goes to the leader's volatile voter set (`crate::kraft_version`).
    if kraft_version(cfg, &s.log) == 0 {
        return match op {
            ChangeOp::Update(id) => crate::kraft_version::update_volatile(cfg, s, id, dir),
            _ => Err(Refusal::UnsupportedVersion),
        };
    }
    if one_at_a_time && latest_voters_offset(&s.log).is_some_and(|o| o >= hw) {
        return Err(Refusal::UncommittedVoters);
    }
    let set = latest_voters(cfg.bootstrap(), &s.log);
    // Caught up: the leader saw the key itself fetch at its LEO (Kafka keys replica states by
    // (id, directory id)).
    let caught_up = |id: Id| {
        s.caught_up & bit(id) != 0 && s.peer_dir(id) == dir || other_caught_up(s, id) == Some(dir)
    };
    let sole = |id: Id| set.ids() == bit(id);
    match op {
        // Kafka's `VoterSet.addVoter`: refused if the id is a voter, whatever its directory id.
        ChangeOp::Add(id) => {
            // The `auto-join-keeps-stale` bug checks the key, not the id: the add then replaces a
            // stale key of the id in one record.
            let duplicate = if cfg.has(Bug::AutoJoinKeepsStale) {
                set.is_voter(id, dir)
            } else {
                set.has_id(id)
            };
            if duplicate {
                Err(Refusal::DuplicateVoter)
            } else if !caught_up(id) {
                Err(Refusal::NotCaughtUp)
            } else {
                Ok(set.with(id, dir))
            }
        }
        ChangeOp::Remove(id) => {
            if !set.has_id(id) || sole(id) {
                Err(Refusal::VoterNotFound)
            } else {
                Ok(set.without(id))
            }
        }
        // Kafka's UpdateVoterHandler: the voter's key must be in the latest set; the new record
        // keeps the voters.
        ChangeOp::Update(id) => {
            if !set.is_voter(id, dir) {
                Err(Refusal::VoterNotFound)
            } else {
                Ok(set)
            }
        }
        // UpdateFeatures has its own preconditions (`crate::kraft_version::check_upgrade`).
        ChangeOp::KraftVersionUpgrade => Err(Refusal::UnsupportedVersion),
        ChangeOp::Swap { out, add } => {
            if set.has_id(add) {
                Err(Refusal::DuplicateVoter)
            } else if !set.has_id(out) || sole(out) {
                Err(Refusal::VoterNotFound)
            } else if !caught_up(add) {
                Err(Refusal::NotCaughtUp)
            } else {
                Ok(set.without(out).with(add, dir))
            }
        }
    }
}

/// Leader `s`: the directory id of the second key of id `f` that caught up (`Server::other_caught_up`).
pub(crate) fn other_caught_up(s: &Server, f: Id) -> Option<u8> {
    match (s.other_caught_up >> (3 * f)) & 7 {
        0 => None,
        d => Some(d as u8 - 1),
    }
}

pub(crate) fn set_other_caught_up(s: &mut Server, f: Id, dir: Option<u8>) {
    let v = dir.map_or(0, |d| u32::from(d & 3) + 1);
    s.other_caught_up = (s.other_caught_up & !(7 << (3 * f))) | (v << (3 * f));
}

/// A `ReplicaState` row of DescribeQuorum (timestamps are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReplicaState {
    /// Replica id.
    pub replica_id: Id,
    /// `LogEndOffset`, −1 when the leader has no state for it (the sentinel).
    pub log_end_offset: i64,
}

/// The leader's DescribeQuorum v3 partition data, abstracted.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DescribeQuorumView {
    /// `LeaderId`.
    pub leader_id: Id,
    /// `LeaderEpoch`.
    pub leader_epoch: u8,
    /// `HighWatermark`, −1 if unknown.
    pub high_watermark: i64,
    /// `CurrentVoters`: the latest voter set.
    pub current_voters: Vec<ReplicaState>,
    /// `Observers`: non-voters the leader tracks (fetched in this epoch), including itself if removed.
    pub observers: Vec<ReplicaState>,
    /// `CommittedVoters` (KIP-1204): the committed voter set, empty while the HW is unknown.
    pub committed_voters: Vec<ReplicaState>,
}

/// The replica state a leader knows for `id`: its own LEO, or the last fetch offset.
fn known_end(me: Id, s: &Server, id: Id) -> Option<u8> {
    if id == me {
        Some(s.log.len())
    } else {
        s.end[id as usize]
    }
}

/// The set DescribeQuorum reports as committed at server `s` (the bug variant reports the latest).
pub fn reported_committed_voters(cfg: &ModelConfig, s: &Server) -> Option<VoterSet> {
    if cfg.has(Bug::CommittedFromLatest) {
        s.hw.map(|_| latest_voters(cfg.bootstrap(), &s.log))
    } else {
        committed_voters(cfg.bootstrap(), &s.log, s.hw)
    }
}

/// Offset (−1 = bootstrap) of the VotersRecord behind [`reported_committed_voters`].
pub fn reported_committed_offset(cfg: &ModelConfig, s: &Server) -> Option<i8> {
    if cfg.has(Bug::CommittedFromLatest) {
        s.hw.map(|_| latest_voters_offset(&s.log).map_or(-1, |o| o as i8))
    } else {
        committed_voters_offset(&s.log, s.hw)
    }
}

/// DescribeQuorum as answered by server `me`, `None` unless it is the leader.
pub fn describe_quorum(cfg: &ModelConfig, me: Id, s: &Server) -> Option<DescribeQuorumView> {
    if s.role != Role::Leader {
        return None;
    }
    let current = latest_voters(cfg.bootstrap(), &s.log).ids();
    let row = |id: Id| ReplicaState {
        replica_id: id,
        log_end_offset: known_end(me, s, id).map_or(-1, i64::from),
    };
    let current_voters: Vec<ReplicaState> = ids(current).map(row).collect();
    let observers: Vec<ReplicaState> = (0..crate::types::MAX_SERVERS as Id)
        .filter(|&id| current & bit(id) == 0 && known_end(me, s, id).is_some())
        .map(row)
        .collect();
    let committed = reported_committed_voters(cfg, s).map_or(0, VoterSet::ids);
    // A committed voter that is neither a current voter nor tracked gets the sentinel via `row`.
    let committed_voters = ids(committed).map(row).collect();
    Some(DescribeQuorumView {
        leader_id: me,
        leader_epoch: s.epoch,
        high_watermark: s.hw.map_or(-1, i64::from),
        current_voters,
        observers,
        committed_voters,
    })
}

/// The set of membership-changing VotersRecords in `log` at offsets ≥ `from` (a record that repeats
/// the set before it, such as a start-of-epoch record, changes nothing).
pub fn membership_changes_from(bootstrap: Mask, log: &Log, from: u8) -> usize {
    let mut before = history_base(bootstrap, log);
    let mut n = 0;
    for (o, e) in log.iter() {
        if let Kind::Voters(set) = e.kind {
            if set != before && o >= from {
                n += 1;
            }
            before = set;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(epoch: u8, kind: Kind) -> Entry {
        Entry { epoch, kind }
    }

    #[test]
    fn majority_and_overlap() {
        assert!(is_majority(0b011, 0b111));
        assert!(!is_majority(0b001, 0b111));
        assert!(!is_majority(0b0011, 0b1111));
        assert!(majorities_overlap(0b0111, 0b1111));
        assert!(majorities_overlap(0b0111, 0b0011));
        // Swap one voter of an odd set: {0,1,2} vs {0,1,3}: {2,x} and {3,y} can't both avoid... {0,2}
        // and {1,3} are disjoint majorities.
        assert!(!majorities_overlap(0b0111, 0b1011));
        assert!(majorities_overlap(0b0001, 0b0011));
    }

    #[test]
    fn committed_voters_is_voter_set_below_hw() {
        let log = Log::from_slice(&[
            e(1, Kind::LeaderChange),
            e(1, Kind::KRaftVersion),
            e(1, Kind::Voters(VoterSet::of(0b111))),
            e(1, Kind::Voters(VoterSet::of(0b1111))),
        ]);
        assert_eq!(committed_voters(0b111, &log, None), None);
        assert_eq!(
            committed_voters(0b111, &log, Some(2)),
            Some(VoterSet::of(0b111))
        );
        assert_eq!(committed_voters_offset(&log, Some(2)), Some(-1));
        assert_eq!(committed_voters_offset(&log, Some(3)), Some(2));
        assert_eq!(
            committed_voters(0b111, &log, Some(4)),
            Some(VoterSet::of(0b1111))
        );
        assert_eq!(latest_voters(0b111, &log), VoterSet::of(0b1111));
        assert_eq!(membership_changes_from(0b111, &log, 0), 1);
    }

    #[test]
    fn end_offset_for_epoch_and_divergence() {
        let log = Log::from_slice(&[e(1, Kind::LeaderChange), e(1, Kind::Data), e(3, Kind::Data)]);
        assert_eq!(end_offset_for_epoch(&log, 0), (0, 0));
        assert_eq!(end_offset_for_epoch(&log, 2), (1, 2));
        assert_eq!(end_offset_for_epoch(&log, 3), (3, 3));
        assert_eq!(diverging(&log, 0, 0), None);
        assert_eq!(diverging(&log, 2, 1), None);
        assert_eq!(diverging(&log, 3, 2), Some((1, 2)));
        assert_eq!(diverging(&log, 4, 3), Some((3, 3)));
        let follower = Log::from_slice(&[e(1, Kind::LeaderChange), e(3, Kind::Data)]);
        // Kafka's rule drops the epoch-3 entry that the contract's min(end, LEO) would keep.
        assert_eq!(truncation_offset(&follower, 2, 3), 1);
    }

    /// Brute force: some majority of `a` and some majority of `b` are disjoint.
    fn disjoint_majorities_exist(a: Mask, b: Mask) -> bool {
        let is_majority = |q: Mask, s: Mask| is_majority(q, s);
        (0..=a)
            .filter(|q| q & !a == 0 && is_majority(*q, a))
            .any(|q1| (0..=b).any(|q2| q2 & !b == 0 && is_majority(q2, b) && q1 & q2 == 0))
    }

    fn entry_strategy() -> impl proptest::strategy::Strategy<Value = Entry> {
        use proptest::prelude::*;
        (1u8..4, prop_oneof![Just(None), (1u8..16).prop_map(Some)]).prop_map(|(epoch, v)| Entry {
            epoch,
            kind: v.map_or(Kind::Data, |m| Kind::Voters(VoterSet::of(m))),
        })
    }

    proptest::proptest! {
        #[test]
        fn overlap_formula_matches_brute_force(a in 1u8..64, b in 1u8..64) {
            proptest::prop_assert_eq!(majorities_overlap(a.into(), b.into()), !disjoint_majorities_exist(a, b));
        }

        #[test]
        fn one_change_always_overlaps(a in 1u8..64, id in 0u8..6) {
            let b = a ^ bit(id);
            proptest::prop_assume!(b != 0);
            proptest::prop_assert!(majorities_overlap(a.into(), b.into()));
        }

        #[test]
        fn committed_voters_is_the_last_voters_record_below_hw(
            entries in proptest::collection::vec(entry_strategy(), 0..crate::types::MAX_LOG),
            hw in 0u8..12,
        ) {
            let mut entries = entries;
            entries.sort_by_key(|e| e.epoch);
            let log = Log::from_slice(&entries);
            let naive = entries
                .iter()
                .take(hw as usize)
                .rev()
                .find_map(|e| match e.kind {
                    Kind::Voters(m) => Some(m),
                    _ => None,
                })
                .unwrap_or(VoterSet::of(0b111));
            proptest::prop_assert_eq!(committed_voters(0b111, &log, Some(hw)), Some(naive));
            proptest::prop_assert_eq!(committed_voters(0b111, &log, None), None);
            let (e, end) = end_offset_for_epoch(&log, 2);
            proptest::prop_assert!(entries[..end as usize].iter().all(|x| x.epoch <= 2));
            proptest::prop_assert!(!matches!(entries.get(end as usize), Some(x) if x.epoch <= 2));
            proptest::prop_assert!(e <= 2);
        }
    }

    #[test]
    fn hw_rule_is_kth_largest_past_epoch_start() {
        let cfg = ModelConfig::default();
        let mut s = Server {
            role: Role::Leader,
            epoch: 2,
            log: Log::from_slice(&[
                e(1, Kind::LeaderChange),
                e(1, Kind::Data),
                e(2, Kind::LeaderChange),
            ]),
            epoch_start: 2,
            ..Server::default()
        };
        s.end[1] = Some(2);
        assert_eq!(hw_candidate(&cfg, 0, &s), Some(2));
        assert_eq!(
            next_high_watermark(&cfg, 0, &s),
            None,
            "not past the epoch start"
        );
        s.end[2] = Some(3);
        assert_eq!(next_high_watermark(&cfg, 0, &s), Some(3));
    }
}
