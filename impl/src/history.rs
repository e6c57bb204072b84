//! Voter-set history: offset-indexed voter sets, and the committed voter set.
//!
//! Mirrors Kafka's `VoterSetHistory`/`TreeMapLogHistory`: entries come from the bootstrap checkpoint (offset
//! −1) and from VotersRecords in the log; the static set (`kraft.version` 0) is only a fallback.
//! [`committed_voter_set`] is the single definition of the committed voter set used by the node,
//! DescribeQuorum and the tests.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::voter_set::VoterSet;

/// Why a history update was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    #[error("history offset {0} is below −1")]
    OffsetBelowBootstrap(i64),
    #[error("history offset {offset} is not after the last entry at {last}")]
    NotIncreasing { offset: i64, last: i64 },
}

/// An offset-indexed map whose entries must be added at increasing offsets ≥ −1.
///
/// Entries only ever arrive at the end (strictly increasing offsets) and leave from either end, so a sorted
/// pair of vectors beats a tree: the lookup is a binary search over a dense `i64` array (O(log n), no pointer
/// chasing), which keeps `committed_voter_set` cheap even with 10⁵ history entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetHistory<T> {
    offsets: Vec<i64>,
    values: Vec<T>,
}

impl<T> Default for OffsetHistory<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> OffsetHistory<T> {
    pub fn new() -> Self {
        OffsetHistory {
            offsets: Vec::new(),
            values: Vec::new(),
        }
    }

    pub fn add_at(&mut self, offset: i64, value: T) -> Result<(), HistoryError> {
        if offset < -1 {
            return Err(HistoryError::OffsetBelowBootstrap(offset));
        }
        if let Some(&last) = self.offsets.last() {
            if offset <= last {
                return Err(HistoryError::NotIncreasing { offset, last });
            }
        }
        self.offsets.push(offset);
        self.values.push(value);
        Ok(())
    }

    /// Number of entries with offset ≤ `offset`.
    fn count_at_or_before(&self, offset: i64) -> usize {
        self.offsets.partition_point(|&o| o <= offset)
    }

    /// The entry with the largest offset ≤ `offset`.
    pub fn at_or_before(&self, offset: i64) -> Option<(i64, &T)> {
        let i = self.count_at_or_before(offset).checked_sub(1)?;
        Some((self.offsets[i], &self.values[i]))
    }

    pub fn last_entry(&self) -> Option<(i64, &T)> {
        Some((*self.offsets.last()?, self.values.last()?))
    }

    /// Suffix truncation: removes every entry at offset ≥ `end` (a log truncated to `end`).
    pub fn truncate_new_entries(&mut self, end: i64) {
        let keep = self.offsets.partition_point(|&o| o < end);
        self.offsets.truncate(keep);
        self.values.truncate(keep);
    }

    /// Prefix trimming: removes entries ≤ `start` except the largest one, which stays in force.
    pub fn trim_old_entries(&mut self, start: i64) {
        let drop = self.count_at_or_before(start).saturating_sub(1);
        self.offsets.drain(..drop);
        self.values.drain(..drop);
    }

    pub fn iter(&self) -> impl Iterator<Item = (i64, &T)> + '_ {
        self.offsets.iter().copied().zip(self.values.iter())
    }

    pub fn clear(&mut self) {
        self.offsets.clear();
        self.values.clear();
    }
}

/// Index of the history entry that answered the last [`committed_voter_set`] lookup.
///
/// The committed voter set only changes when the HW passes a VotersRecord, so the entry found last time
/// almost always answers the next lookup: it is kept here and checked (two offset comparisons) before any
/// search. It is only a hint: a stale index (after truncation or trimming, or a lookup at another HW) fails
/// the check and the lookup searches as before, so no caller has to keep it up to date. Not part of the
/// history's value (`Clone` copies it, `PartialEq` ignores it). Atomic (relaxed) only so the history stays
/// `Sync`; it costs a plain load/store.
#[derive(Debug, Default)]
struct Hint(AtomicUsize);

impl Hint {
    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, i: usize) {
        self.0.store(i, Ordering::Relaxed)
    }
}

impl Clone for Hint {
    fn clone(&self) -> Self {
        Hint(AtomicUsize::new(self.get()))
    }
}

impl PartialEq for Hint {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Hint {}

/// Voter sets by offset, with the static set (if any) as fallback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoterSetHistory {
    /// The static set (`kraft.version` 0), the bootstrap set, or the empty set of a replica formatted
    /// without initial voters; `latest()` falls back to it.
    base: VoterSet,
    is_static: bool,
    history: OffsetHistory<VoterSet>,
    /// The entry of the last committed lookup (see [`Hint`]).
    committed: Hint,
}

impl VoterSetHistory {
    /// `kraft.version` 0: only the configured static set, no history.
    pub fn with_static(set: VoterSet) -> Self {
        VoterSetHistory {
            base: set,
            is_static: true,
            history: OffsetHistory::new(),
            committed: Hint::default(),
        }
    }

    /// `kraft.version` 1: the bootstrap checkpoint's set at offset −1.
    pub fn with_bootstrap(set: VoterSet) -> Self {
        let history = OffsetHistory {
            offsets: vec![-1],
            values: vec![set.clone()],
        };
        VoterSetHistory {
            base: set,
            is_static: false,
            history,
            committed: Hint::default(),
        }
    }

    /// `kraft.version` 1 without a bootstrap voter set (Kafka's `--no-initial-controllers`): no entry
    /// until a VotersRecord is replicated; `latest()` is the empty set until then.
    pub fn without_voters() -> Self {
        VoterSetHistory {
            base: VoterSet::empty(),
            is_static: false,
            history: OffsetHistory::new(),
            committed: Hint::default(),
        }
    }

    /// Records the voter set of a VotersRecord at `offset`.
    ///
    /// No overlap check here (Kafka removed it in KAFKA-17973, and its check was weaker than its doc):
    /// single-change safety comes from the leader's preconditions; the invariant checks test overlap.
    pub fn add_at(&mut self, offset: i64, set: VoterSet) -> Result<(), HistoryError> {
        self.history.add_at(offset, set)
    }

    /// The history entry at or before `offset` (never the static set).
    pub fn at_or_before(&self, offset: i64) -> Option<(i64, &VoterSet)> {
        self.history.at_or_before(offset)
    }

    /// The history entry at or before `offset`, falling back to the static set.
    pub fn value_at_or_before(&self, offset: i64) -> Option<&VoterSet> {
        self.history
            .at_or_before(offset)
            .map(|(_, s)| s)
            .or(self.static_set())
    }

    /// The latest voter set: last history entry, else the static set. It takes effect when appended.
    pub fn latest(&self) -> &VoterSet {
        self.history
            .last_entry()
            .map(|(_, s)| s)
            .unwrap_or(&self.base)
    }

    /// Offset and set of the last history entry (None with only a static set).
    pub fn latest_entry(&self) -> Option<(i64, &VoterSet)> {
        self.history.last_entry()
    }

    pub fn static_set(&self) -> Option<&VoterSet> {
        self.is_static.then_some(&self.base)
    }

    /// Kafka's snapshot load (`KRaftControlRecordStateMachine.maybeLoadSnapshot`): the history is cleared
    /// and holds the snapshot's voter set, if it has one, at `offset` (the snapshot's end offset − 1).
    /// The static set stays the fallback.
    pub fn load_snapshot(
        &mut self,
        offset: i64,
        set: Option<VoterSet>,
    ) -> Result<(), HistoryError> {
        self.history.clear();
        match set {
            Some(set) => self.history.add_at(offset, set),
            None => Ok(()),
        }
    }

    /// Suffix truncation after divergence. The bootstrap entry at −1 is never removed.
    pub fn truncate_new_entries(&mut self, end: i64) {
        self.history.truncate_new_entries(end.max(0));
    }

    /// Prefix trimming after a snapshot, keeping the entry in force at `start`.
    pub fn trim_old_entries(&mut self, start: i64) {
        self.history.trim_old_entries(start);
    }

    pub fn entries(&self) -> impl Iterator<Item = (i64, &VoterSet)> + '_ {
        self.history.iter()
    }

    /// [`Self::value_at_or_before`], answered from the kept entry of the previous call when it still
    /// covers `offset` (or the next entry does, after the HW passed one VotersRecord), else by search.
    fn value_at_or_before_kept(&self, offset: i64) -> Option<&VoterSet> {
        let offsets = &self.history.offsets;
        let covers = |i: usize| {
            offsets.get(i).is_some_and(|&o| o <= offset)
                && offsets.get(i + 1).is_none_or(|&next| offset < next)
        };
        let kept = self.committed.get();
        let i = if covers(kept) {
            kept
        } else if covers(kept + 1) {
            kept + 1
        } else {
            match self.history.count_at_or_before(offset).checked_sub(1) {
                Some(i) => i,
                None => return self.static_set(),
            }
        };
        self.committed.set(i);
        Some(&self.history.values[i])
    }
}

/// THE committed voter set: the voter set at offset `hw − 1` (the latest VotersRecord below the HW),
/// falling back to the bootstrap entry at −1 or the static set; `None` while the HW is unknown.
///
/// Every reader (the node, DescribeQuorum's `CommittedVoters`, the tests, conformance) calls this.
pub fn committed_voter_set(
    history: &VoterSetHistory,
    high_watermark: Option<i64>,
) -> Option<&VoterSet> {
    let hw = high_watermark?;
    history.value_at_or_before_kept(hw - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voter_set::tests::node;
    use proptest::prelude::*;

    fn set(ids: &[i32]) -> VoterSet {
        VoterSet::new(ids.iter().map(|&i| node(i))).unwrap()
    }

    #[test]
    fn committed_follows_hw_with_bootstrap_fallback() {
        let mut h = VoterSetHistory::with_bootstrap(set(&[1]));
        h.add_at(2, set(&[1])).unwrap();
        h.add_at(5, set(&[1, 2])).unwrap();
        assert_eq!(committed_voter_set(&h, None), None);
        assert_eq!(committed_voter_set(&h, Some(0)), Some(&set(&[1])));
        assert_eq!(committed_voter_set(&h, Some(5)), Some(&set(&[1])));
        assert_eq!(committed_voter_set(&h, Some(6)), Some(&set(&[1, 2])));
        assert_eq!(h.latest(), &set(&[1, 2]));
    }

    #[test]
    fn static_fallback_only_when_no_history() {
        let h = VoterSetHistory::with_static(set(&[1, 2, 3]));
        assert_eq!(h.at_or_before(10), None);
        assert_eq!(committed_voter_set(&h, Some(10)), Some(&set(&[1, 2, 3])));
        assert_eq!(h.latest(), &set(&[1, 2, 3]));
        assert_eq!(h.latest_entry(), None);
    }

    #[test]
    fn add_at_requires_increasing_offsets() {
        let mut h = VoterSetHistory::with_bootstrap(set(&[1]));
        assert_eq!(
            h.add_at(-1, set(&[2])),
            Err(HistoryError::NotIncreasing {
                offset: -1,
                last: -1
            })
        );
        h.add_at(3, set(&[1, 2])).unwrap();
        assert_eq!(
            h.add_at(3, set(&[1])),
            Err(HistoryError::NotIncreasing { offset: 3, last: 3 })
        );
        let mut o = OffsetHistory::new();
        assert_eq!(o.add_at(-2, 0), Err(HistoryError::OffsetBelowBootstrap(-2)));
    }

    #[test]
    fn truncation_rolls_back_latest_but_keeps_bootstrap() {
        let mut h = VoterSetHistory::with_bootstrap(set(&[1, 2, 3]));
        h.add_at(2, set(&[1, 2, 3])).unwrap();
        h.add_at(7, set(&[1, 2, 3, 4])).unwrap();
        h.truncate_new_entries(7);
        assert_eq!(h.latest_entry(), Some((2, &set(&[1, 2, 3]))));
        h.truncate_new_entries(0);
        assert_eq!(h.latest_entry(), Some((-1, &set(&[1, 2, 3]))));
        h.truncate_new_entries(-5);
        assert_eq!(h.latest_entry(), Some((-1, &set(&[1, 2, 3]))));
    }

    #[test]
    fn trimming_keeps_entry_in_force() {
        let mut h = VoterSetHistory::with_bootstrap(set(&[1]));
        h.add_at(2, set(&[1, 2])).unwrap();
        h.add_at(9, set(&[1, 2, 3])).unwrap();
        h.trim_old_entries(5);
        assert_eq!(h.entries().map(|(o, _)| o).collect::<Vec<_>>(), vec![2, 9]);
        assert_eq!(h.value_at_or_before(5), Some(&set(&[1, 2])));
    }

    proptest! {
        /// The history agrees with a naive list scan for every query and truncation.
        #[test]
        fn history_matches_naive_scan(offsets in proptest::collection::btree_set(0i64..50, 0..8),
                                      q in -1i64..60, cut in -1i64..60) {
            let mut h = VoterSetHistory::with_bootstrap(set(&[1]));
            let mut naive: Vec<(i64, VoterSet)> = vec![(-1, set(&[1]))];
            for (i, &o) in offsets.iter().enumerate() {
                let s = set(&[1, 2 + i as i32]);
                h.add_at(o, s.clone()).unwrap();
                naive.push((o, s));
            }
            let scan = |n: &Vec<(i64, VoterSet)>, at: i64| n.iter().rev().find(|(o, _)| *o <= at).map(|(_, s)| s.clone());
            prop_assert_eq!(h.value_at_or_before(q).cloned(), scan(&naive, q));
            h.truncate_new_entries(cut);
            naive.retain(|(o, _)| *o < cut.max(0));
            prop_assert_eq!(h.value_at_or_before(q).cloned(), scan(&naive, q));
            prop_assert_eq!(Some(h.latest().clone()), naive.last().map(|(_, s)| s.clone()));
        }

        /// The kept entry never changes an answer: for any mix of lookups (rising or not), truncations
        /// and trims, `committed_voter_set` equals the plain search at HW − 1.
        #[test]
        fn kept_committed_entry_matches_search(offsets in proptest::collection::btree_set(0i64..50, 0..8),
                                               ops in proptest::collection::vec((0u8..8, -1i64..60), 0..40),
                                               static_set in any::<bool>()) {
            let mut h = if static_set {
                VoterSetHistory::with_static(set(&[1]))
            } else {
                VoterSetHistory::with_bootstrap(set(&[1]))
            };
            if !static_set {
                for (i, &o) in offsets.iter().enumerate() {
                    h.add_at(o, set(&[1, 2 + i as i32])).unwrap();
                }
            }
            for (op, x) in ops {
                match op {
                    0 => h.truncate_new_entries(x),
                    1 => h.trim_old_entries(x),
                    _ => {
                        let search = h.value_at_or_before(x - 1).cloned();
                        prop_assert_eq!(committed_voter_set(&h, Some(x)).cloned(), search);
                    }
                }
            }
        }
    }
}
