//! Leader state: replica progress, the high watermark, check-quorum, and DescribeQuorum building.
//!
//! Follows Kafka's `LeaderState`: voter states are rebuilt from the *latest* voter set on every local
//! update; replicas that left the set become observers; the leader counts towards the HW only while it is
//! a voter of the latest set.

use std::collections::{BTreeMap, BTreeSet};

use crate::time::Millis;
use crate::voter_set::{Endpoint, ReplicaKey, VoterSet};
use crate::wire::describe_quorum::{Listener, NodeEndpoints, ReplicaState};

/// What the leader knows about one replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaProgress {
    pub key: ReplicaKey,
    /// The fetch offset of its latest valid Fetch (the leader's LEO for the leader itself).
    pub end_offset: Option<i64>,
    pub last_fetch_ms: Option<Millis>,
    pub last_caught_up_ms: Option<Millis>,
    /// The leader's LEO when this replica last fetched (Kafka's previous-fetch caught-up rule).
    leader_end_offset_at_last_fetch: Option<i64>,
    /// A fetch with fetch offset ≥ the leader's LEO at that moment was seen in this epoch
    /// (the AddRaftVoter catch-up rule of the contract).
    pub has_caught_up: bool,
    pub listeners: Vec<Endpoint>,
}

impl ReplicaProgress {
    fn new(key: ReplicaKey) -> Self {
        ReplicaProgress {
            key,
            end_offset: None,
            last_fetch_ms: None,
            last_caught_up_ms: None,
            leader_end_offset_at_last_fetch: None,
            has_caught_up: false,
            listeners: Vec::new(),
        }
    }

    /// Kafka's `updateFollowerState`: caught-up time first (current or previous LEO rule), then fetch time.
    fn record_fetch(&mut self, now: Millis, fetch_offset: i64, leader_end_offset: i64) {
        if fetch_offset >= leader_end_offset {
            self.last_caught_up_ms = Some(self.last_caught_up_ms.map_or(now, |t| t.max(now)));
            self.has_caught_up = true;
        } else if let (Some(prev_leo), Some(prev_fetch)) =
            (self.leader_end_offset_at_last_fetch, self.last_fetch_ms)
        {
            if prev_leo > 0 && fetch_offset >= prev_leo {
                self.last_caught_up_ms = Some(
                    self.last_caught_up_ms
                        .map_or(prev_fetch, |t| t.max(prev_fetch)),
                );
            }
        }
        self.leader_end_offset_at_last_fetch = Some(leader_end_offset);
        self.last_fetch_ms = Some(self.last_fetch_ms.map_or(now, |t| t.max(now)));
        self.end_offset = Some(fetch_offset);
    }
}

/// The HW candidate of §2: sort voter end offsets descending (unknown last) and take index ⌊n/2⌋, so a
/// majority holds every offset below it. `None` if that entry is unknown or there are no voters.
pub fn high_watermark_candidate(
    voter_end_offsets: impl IntoIterator<Item = Option<i64>>,
) -> Option<i64> {
    let mut offsets: Vec<Option<i64>> = voter_end_offsets.into_iter().collect();
    // `None < Some(_)`, so sorting descending puts unknown offsets last.
    offsets.sort_unstable_by(|a, b| b.cmp(a));
    offsets.get(offsets.len() / 2).copied().flatten()
}

/// Accepts a candidate only above the epoch start offset and above the current HW (never decreases).
pub fn next_high_watermark(
    current: Option<i64>,
    candidate: Option<i64>,
    epoch_start_offset: i64,
) -> Option<i64> {
    match candidate {
        Some(c) if c > epoch_start_offset && current.is_none_or(|h| c > h) => Some(c),
        _ => current,
    }
}

/// Check-quorum: the fetches from distinct voters (other than the leader) needed within one window.
pub fn check_quorum_needed(voter_count: usize, leader_is_voter: bool) -> usize {
    crate::voter_set::majority_size(voter_count) - usize::from(leader_is_voter)
}

/// A fetch names the voter `stored` if the ids match and neither side's directory id contradicts the
/// other (Fetch below v17 carries no directory id; static voters have none).
fn same_replica(stored: &ReplicaKey, seen: &ReplicaKey) -> bool {
    stored.matches(seen) || seen.matches(stored)
}

/// The state of a leader in one epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderState {
    pub local: ReplicaKey,
    pub epoch: i32,
    /// Offset of this leader's first batch (its LeaderChange record).
    pub epoch_start_offset: i64,
    high_watermark: Option<i64>,
    local_end_offset: i64,
    voters: BTreeMap<i32, ReplicaProgress>,
    observers: BTreeMap<ReplicaKey, ReplicaProgress>,
    /// Voters (other than the leader) that fetched in the current check-quorum window.
    fetched_voters: BTreeSet<i32>,
    pub check_quorum_deadline: Option<Millis>,
    #[cfg(feature = "faults")]
    /// The node's seeded faults (this state reads `hw_counts_removed_leader`).
    pub(crate) faults: crate::faults::Faults,
}

impl LeaderState {
    pub fn new(
        local: ReplicaKey,
        epoch: i32,
        epoch_start_offset: i64,
        latest: &VoterSet,
        now: Millis,
        check_quorum_ms: Millis,
    ) -> Self {
        let mut state = LeaderState {
            local,
            epoch,
            epoch_start_offset,
            high_watermark: None,
            local_end_offset: epoch_start_offset,
            voters: BTreeMap::new(),
            observers: BTreeMap::new(),
            fetched_voters: BTreeSet::new(),
            check_quorum_deadline: None,
            #[cfg(feature = "faults")]
            faults: Default::default(),
        };
        state.update_voter_set(latest);
        state.reset_check_quorum(now, check_quorum_ms);
        state
    }

    /// The HW, `None` while unknown (no record of this epoch on a majority yet).
    pub fn high_watermark(&self) -> Option<i64> {
        self.high_watermark
    }

    pub fn local_end_offset(&self) -> i64 {
        self.local_end_offset
    }

    pub fn is_local_voter(&self) -> bool {
        self.voters
            .get(&self.local.id)
            .is_some_and(|p| p.key.matches(&self.local))
    }

    pub fn voter_states(&self) -> impl Iterator<Item = &ReplicaProgress> {
        self.voters.values()
    }

    pub fn observer_states(&self) -> impl Iterator<Item = &ReplicaProgress> {
        self.observers.values()
    }

    /// Kafka's `updateVoterAndObserverStates`: voter states follow the latest set; a replica keeps its
    /// progress when it moves between voters and observers.
    pub fn update_voter_set(&mut self, latest: &VoterSet) {
        let mut old_voters = std::mem::take(&mut self.voters);
        for node in latest.nodes() {
            let mut progress = match old_voters.remove(&node.key.id) {
                Some(p) if p.key.matches(&node.key) || node.key.matches(&p.key) => p,
                other => {
                    if let Some(p) = other {
                        self.observers.insert(
                            p.key,
                            ReplicaProgress {
                                listeners: Vec::new(),
                                ..p
                            },
                        );
                    }
                    let found = self
                        .observers
                        .keys()
                        .find(|k| node.key.matches(k) || k.matches(&node.key))
                        .copied();
                    found
                        .and_then(|k| self.observers.remove(&k))
                        .unwrap_or_else(|| ReplicaProgress::new(node.key))
                }
            };
            progress.key = node.key;
            progress.listeners = node.listeners.clone();
            self.voters.insert(node.key.id, progress);
        }
        for (_, p) in old_voters {
            self.observers.insert(
                p.key,
                ReplicaProgress {
                    listeners: Vec::new(),
                    ..p
                },
            );
        }
        let local_end = self.local_end_offset;
        self.local_progress_mut().end_offset = Some(local_end);
        self.fetched_voters.retain(|id| latest.contains_id(*id));
    }

    fn local_progress_mut(&mut self) -> &mut ReplicaProgress {
        let local = self.local;
        if self
            .voters
            .get(&local.id)
            .is_some_and(|p| p.key.matches(&local))
        {
            return self.voters.get_mut(&local.id).expect("checked above");
        }
        self.observers
            .entry(local)
            .or_insert_with(|| ReplicaProgress::new(local))
    }

    /// After a local append (and flush): the leader's own end offset, then the HW.
    /// Returns true if the HW advanced.
    pub fn update_local_end_offset(&mut self, end_offset: i64, latest: &VoterSet) -> bool {
        self.local_end_offset = end_offset;
        self.update_voter_set(latest);
        self.maybe_update_high_watermark()
    }

    /// A valid Fetch from `key`: record its progress. Returns true if the HW advanced.
    pub fn update_replica(&mut self, key: ReplicaKey, now: Millis, fetch_offset: i64) -> bool {
        // A negative id is a reader that is no replica (Kafka's `updateReplicaState` ignores it too).
        if key.id < 0 {
            return false;
        }
        let leader_end = self.local_end_offset;
        let is_voter = self
            .voters
            .get(&key.id)
            .is_some_and(|p| same_replica(&p.key, &key));
        if is_voter {
            if let Some(p) = self.voters.get_mut(&key.id) {
                p.record_fetch(now, fetch_offset, leader_end);
            }
            if key.id != self.local.id {
                self.fetched_voters.insert(key.id);
            }
            self.maybe_update_high_watermark()
        } else {
            self.observers
                .entry(key)
                .or_insert_with(|| ReplicaProgress::new(key))
                .record_fetch(now, fetch_offset, leader_end);
            false
        }
    }

    /// Kafka's `updateCheckQuorumForFollowingVoter` for a request that is no log fetch (FetchSnapshot): a
    /// voter of the set (other than the leader) counts as having fetched in this window.
    pub fn update_check_quorum_for_voter(
        &mut self,
        key: ReplicaKey,
        now: Millis,
        window_ms: Millis,
    ) {
        let is_voter = self
            .voters
            .get(&key.id)
            .is_some_and(|p| same_replica(&p.key, &key));
        if is_voter && key.id != self.local.id {
            self.fetched_voters.insert(key.id);
        }
        self.update_check_quorum(now, window_ms);
    }

    /// Check-quorum: true once enough voters fetched in this window; then the window restarts.
    pub fn update_check_quorum(&mut self, now: Millis, window_ms: Millis) {
        let needed = check_quorum_needed(self.voters.len(), self.is_local_voter());
        if self.fetched_voters.len() >= needed {
            self.reset_check_quorum(now, window_ms);
        }
    }

    fn reset_check_quorum(&mut self, now: Millis, window_ms: Millis) {
        self.fetched_voters.clear();
        // A single-voter set never expires (KAFKA-16144), also when the leader is not that voter.
        self.check_quorum_deadline = (self.voters.len() > 1).then_some(now + window_ms);
    }

    fn maybe_update_high_watermark(&mut self) -> bool {
        let offsets: Vec<Option<i64>> = self.voters.values().map(|p| p.end_offset).collect();
        #[cfg(feature = "faults")]
        let offsets = if self.faults.hw_counts_removed_leader && !self.is_local_voter() {
            let mut o = offsets;
            o.push(Some(self.local_end_offset));
            o
        } else {
            offsets
        };
        let next = next_high_watermark(
            self.high_watermark,
            high_watermark_candidate(offsets),
            self.epoch_start_offset,
        );
        let advanced = next != self.high_watermark;
        self.high_watermark = next;
        advanced
    }

    /// The AddRaftVoter catch-up rule: an observer (exact key) that fetched up to the leader's LEO.
    pub fn is_caught_up(&self, key: &ReplicaKey) -> bool {
        self.observers.get(key).is_some_and(|p| p.has_caught_up)
    }

    /// Progress of a replica, voter or observer (exact key for observers).
    pub fn progress(&self, key: &ReplicaKey) -> Option<&ReplicaProgress> {
        match self.voters.get(&key.id) {
            Some(p) if same_replica(&p.key, key) => Some(p),
            _ => self.observers.get(key),
        }
    }

    /// Drops observers (never the leader itself) that did not fetch within `expiry_ms`.
    pub fn expire_observers(&mut self, now: Millis, expiry_ms: Millis) {
        let local = self.local;
        self.observers.retain(|k, p| {
            *k == local
                || p.last_fetch_ms
                    .is_some_and(|t| now.saturating_sub(t) < expiry_ms)
        });
    }

    /// Voter ids (excluding the leader) ordered by end offset descending: the preferred successors.
    pub fn preferred_successors(&self) -> Vec<i32> {
        let mut others: Vec<&ReplicaProgress> = self
            .voters
            .values()
            .filter(|p| p.key.id != self.local.id)
            .collect();
        others.sort_by(|a, b| b.end_offset.cmp(&a.end_offset).then(a.key.cmp(&b.key)));
        others.into_iter().map(|p| p.key.id).collect()
    }

    /// The wire ReplicaState of a progress entry; the leader's own timestamps are `now` (Kafka does so).
    fn replica_state(&self, p: &ReplicaProgress, now: Millis, version: i16) -> ReplicaState {
        let is_local = p.key.id == self.local.id && p.key.matches(&self.local);
        let ts = |t: Option<Millis>| {
            if is_local {
                now as i64
            } else {
                t.map_or(-1, |t| t as i64)
            }
        };
        ReplicaState {
            replica_id: p.key.id,
            replica_directory_id: if version >= 2 {
                p.key.directory_or_nil()
            } else {
                uuid::Uuid::nil()
            },
            log_end_offset: if is_local {
                self.local_end_offset
            } else {
                p.end_offset.unwrap_or(-1)
            },
            last_fetch_timestamp: ts(p.last_fetch_ms),
            last_caught_up_timestamp: ts(p.last_caught_up_ms),
            unknown_tagged_fields: Default::default(),
        }
    }

    /// The leader's DescribeQuorum partition lists and Nodes (KIP-1204 §4–5).
    ///
    /// `committed` is the committed voter set ([`crate::history::committed_voter_set`]); its members get
    /// their voter state, else their observer state, else the sentinels (−1, −1, −1).
    pub fn describe(
        &self,
        now: Millis,
        version: i16,
        committed: Option<&VoterSet>,
    ) -> DescribeLists {
        let current: Vec<ReplicaState> = self
            .voters
            .values()
            .map(|p| self.replica_state(p, now, version))
            .collect();
        let observers: Vec<ReplicaState> = self
            .observers
            .values()
            .map(|p| self.replica_state(p, now, version))
            .collect();
        let mut committed_states = Vec::new();
        if version >= 3 {
            for node in committed.into_iter().flat_map(|s| s.nodes()) {
                let state = match self.progress(&node.key) {
                    Some(p) => self.replica_state(p, now, version),
                    None => ReplicaState {
                        replica_id: node.key.id,
                        replica_directory_id: node.key.directory_or_nil(),
                        log_end_offset: -1,
                        last_fetch_timestamp: -1,
                        last_caught_up_timestamp: -1,
                        unknown_tagged_fields: Default::default(),
                    },
                };
                committed_states.push(state);
            }
        }
        let mut nodes: BTreeMap<i32, Vec<Endpoint>> = BTreeMap::new();
        if version >= 2 {
            for p in self.voters.values() {
                nodes.insert(p.key.id, p.listeners.clone());
            }
            if version >= 3 {
                for node in committed.into_iter().flat_map(|s| s.nodes()) {
                    nodes
                        .entry(node.key.id)
                        .or_insert_with(|| node.listeners.clone());
                }
            }
        }
        let nodes = nodes
            .into_iter()
            .map(|(node_id, listeners)| NodeEndpoints {
                node_id,
                listeners: listeners
                    .into_iter()
                    .map(|e| Listener {
                        name: e.name.into(),
                        host: e.host.into(),
                        port: e.port,
                        unknown_tagged_fields: Default::default(),
                    })
                    .collect(),
                unknown_tagged_fields: Default::default(),
            })
            .collect();
        DescribeLists {
            current_voters: current,
            observers,
            committed_voters: committed_states,
            nodes,
        }
    }
}

/// The leader-built parts of a DescribeQuorum response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescribeLists {
    pub current_voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
    pub committed_voters: Vec<ReplicaState>,
    pub nodes: Vec<NodeEndpoints>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voter_set::tests::node;
    use crate::voter_set::VoterNode;
    use proptest::prelude::*;

    fn set(ids: &[i32]) -> VoterSet {
        VoterSet::new(ids.iter().map(|&i| node(i))).unwrap()
    }

    #[test]
    fn candidate_index_is_half() {
        assert_eq!(high_watermark_candidate([Some(5)]), Some(5));
        assert_eq!(high_watermark_candidate([Some(5), Some(3)]), Some(3));
        assert_eq!(high_watermark_candidate([Some(5), Some(3), None]), Some(3));
        assert_eq!(high_watermark_candidate([Some(5), None, None]), None);
        assert_eq!(
            high_watermark_candidate([Some(9), Some(1), Some(4), Some(7)]),
            Some(4)
        );
        assert_eq!(high_watermark_candidate([]), None);
    }

    #[test]
    fn hw_needs_current_epoch_and_never_decreases() {
        assert_eq!(next_high_watermark(None, Some(3), 3), None);
        assert_eq!(next_high_watermark(None, Some(4), 3), Some(4));
        assert_eq!(next_high_watermark(Some(6), Some(4), 3), Some(6));
        assert_eq!(next_high_watermark(Some(6), None, 3), Some(6));
    }

    #[test]
    fn removed_leader_does_not_count() {
        let voters = set(&[1, 2, 3]);
        let mut l = LeaderState::new(node(1).key, 1, 0, &voters, 0, 100);
        l.update_local_end_offset(3, &voters);
        assert!(l.update_replica(node(2).key, 1, 3));
        assert_eq!(l.high_watermark(), Some(3));
        // Leader 1 removes itself: only 2 and 3 count now.
        let without = voters.remove_voter(&node(1).key).unwrap();
        assert!(!l.update_local_end_offset(4, &without));
        assert!(!l.is_local_voter());
        assert!(!l.update_replica(node(2).key, 2, 4));
        assert_eq!(l.high_watermark(), Some(3));
        assert!(l.update_replica(node(3).key, 3, 4));
        assert_eq!(l.high_watermark(), Some(4));
        assert!(l.observer_states().any(|p| p.key == node(1).key));
    }

    #[test]
    fn new_voter_progress_carries_over_and_hw_does_not_decrease() {
        let one = set(&[1]);
        let mut l = LeaderState::new(node(1).key, 1, 0, &one, 0, 100);
        l.update_local_end_offset(3, &one);
        assert_eq!(l.high_watermark(), Some(3));
        l.update_replica(node(2).key, 5, 0);
        assert!(!l.is_caught_up(&node(2).key));
        l.update_replica(node(2).key, 6, 3);
        assert!(l.is_caught_up(&node(2).key));
        let two = set(&[1, 2]);
        l.update_local_end_offset(4, &two);
        assert_eq!(l.high_watermark(), Some(3));
        assert_eq!(l.progress(&node(2).key).unwrap().end_offset, Some(3));
    }

    #[test]
    fn check_quorum_single_voter_never_expires() {
        let l = LeaderState::new(node(1).key, 1, 0, &set(&[1]), 0, 100);
        assert_eq!(l.check_quorum_deadline, None);
        let mut l = LeaderState::new(node(1).key, 1, 0, &set(&[1, 2, 3]), 0, 100);
        assert_eq!(l.check_quorum_deadline, Some(100));
        l.update_replica(node(2).key, 50, 0);
        l.update_check_quorum(50, 100);
        assert_eq!(l.check_quorum_deadline, Some(150));
        assert_eq!(check_quorum_needed(3, false), 2);
    }

    #[test]
    fn describe_sentinels_for_untracked_committed_voter() {
        let voters = set(&[1, 2]);
        let mut l = LeaderState::new(node(1).key, 1, 0, &voters, 0, 100);
        l.update_local_end_offset(3, &voters);
        let committed = set(&[1, 2, 7]);
        let d = l.describe(42, 3, Some(&committed));
        let seven = d
            .committed_voters
            .iter()
            .find(|r| r.replica_id == 7)
            .unwrap();
        assert_eq!(
            (
                seven.log_end_offset,
                seven.last_fetch_timestamp,
                seven.last_caught_up_timestamp
            ),
            (-1, -1, -1)
        );
        assert_eq!(seven.replica_directory_id, node(7).key.directory_or_nil());
        let me = d.current_voters.iter().find(|r| r.replica_id == 1).unwrap();
        assert_eq!((me.log_end_offset, me.last_fetch_timestamp), (3, 42));
        assert_eq!(
            d.nodes.iter().map(|n| n.node_id).collect::<Vec<_>>(),
            vec![1, 2, 7]
        );
        assert!(l
            .describe(42, 2, Some(&committed))
            .committed_voters
            .is_empty());
        assert!(l.describe(42, 1, None).nodes.is_empty());
    }

    /// Another incarnation of a replica (same id, other directory id) is a different replica: the
    /// leader's own row and a voter's progress are not reported for it.
    #[test]
    fn describe_keeps_replicas_apart_by_directory_id() {
        let voters = set(&[1, 2]);
        let mut l = LeaderState::new(node(1).key, 1, 0, &voters, 0, 100);
        l.update_local_end_offset(3, &voters);
        l.update_replica(node(2).key, 7, 2);
        // An observer with the leader's id but another directory id fetched at offset 0, time 5.
        let other_1 = ReplicaKey::new(1, uuid::Uuid::from_u128(99));
        assert!(!l.update_replica(other_1, 5, 0));
        // The committed set names voter 2 with another directory id: it is not the tracked voter 2.
        let other_2 = ReplicaKey::new(2, uuid::Uuid::from_u128(98));
        let committed = VoterSet::new([
            node(1),
            VoterNode {
                key: other_2,
                ..node(2)
            },
        ])
        .unwrap();
        assert!(l.progress(&other_2).is_none());
        let d = l.describe(42, 3, Some(&committed));
        let row = |rows: &[ReplicaState], key: ReplicaKey| {
            let r = rows
                .iter()
                .find(|r| {
                    r.replica_id == key.id && r.replica_directory_id == key.directory_or_nil()
                })
                .unwrap_or_else(|| panic!("no row for {key}: {rows:?}"));
            (
                r.log_end_offset,
                r.last_fetch_timestamp,
                r.last_caught_up_timestamp,
            )
        };
        assert_eq!(row(&d.observers, other_1), (0, 5, -1));
        assert_eq!(row(&d.current_voters, node(1).key), (3, 42, 42));
        assert_eq!(row(&d.current_voters, node(2).key).0, 2);
        assert_eq!(row(&d.committed_voters, other_2), (-1, -1, -1));
    }

    proptest! {
        /// The candidate is reached by a majority, and no larger value is.
        #[test]
        fn candidate_is_majority_max(offs in proptest::collection::vec(proptest::option::of(0i64..20), 1..7)) {
            let c = high_watermark_candidate(offs.clone());
            let maj = crate::voter_set::majority_size(offs.len());
            let reaching = |x: i64| offs.iter().filter(|o| o.is_some_and(|o| o >= x)).count();
            match c {
                Some(c) => {
                    prop_assert!(reaching(c) >= maj);
                    prop_assert!(reaching(c + 1) < maj);
                }
                None => prop_assert!(offs.iter().filter(|o| o.is_some()).count() < maj),
            }
        }
    }
}
