//! Replica keys, voter nodes and voter sets (KIP-853), with Kafka's add/remove/update rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

/// A replica's identity: node id plus an optional directory id. `None` is written as the zero UUID.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ReplicaKey {
    pub id: i32,
    pub directory_id: Option<Uuid>,
}

impl ReplicaKey {
    /// Kafka's `ReplicaKey.of`: the zero UUID means "no directory id".
    pub fn new(id: i32, directory_id: Uuid) -> Self {
        let directory_id = if directory_id.is_nil() {
            None
        } else {
            Some(directory_id)
        };
        ReplicaKey { id, directory_id }
    }

    /// A key without a directory id (static voters, old clients).
    pub fn without_directory(id: i32) -> Self {
        ReplicaKey {
            id,
            directory_id: None,
        }
    }

    /// The directory id as written on the wire (zero UUID for `None`).
    pub fn directory_or_nil(&self) -> Uuid {
        self.directory_id.unwrap_or(Uuid::nil())
    }

    /// Kafka's loose match: a stored key without a directory id matches any key with the same id.
    pub fn matches(&self, other: &ReplicaKey) -> bool {
        self.id == other.id
            && (self.directory_id.is_none() || self.directory_id == other.directory_id)
    }
}

impl std::fmt::Display for ReplicaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.directory_id {
            Some(d) => write!(f, "{}:{}", self.id, d),
            None => write!(f, "{}", self.id),
        }
    }
}

/// One listener endpoint of a voter. The first listener of a voter is its default listener.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// Supported `kraft.version` range of a voter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SupportedVersions {
    pub min: i16,
    pub max: i16,
}

impl SupportedVersions {
    /// What this implementation supports: `kraft.version` 0 and 1.
    pub const CURRENT: SupportedVersions = SupportedVersions { min: 0, max: 1 };
    /// What Kafka assumes of a static voter (`controller.quorum.voters`): `kraft.version` 0 only.
    pub const STATIC: SupportedVersions = SupportedVersions { min: 0, max: 0 };

    pub fn contains(&self, level: i16) -> bool {
        self.min <= level && level <= self.max
    }
}

/// A voter: key, listener endpoints, supported `kraft.version` range.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct VoterNode {
    pub key: ReplicaKey,
    pub listeners: Vec<Endpoint>,
    pub supported: SupportedVersions,
}

impl VoterNode {
    /// The default listener (the first one), if any.
    pub fn default_listener(&self) -> Option<&Endpoint> {
        self.listeners.first()
    }
}

/// Why a voter-set operation was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VoterSetError {
    #[error("a voter set cannot be empty")]
    Empty,
    #[error("voter id {0} appears more than once")]
    DuplicateId(i32),
    #[error("voter id {0} is already a voter")]
    AlreadyVoter(i32),
    #[error("replica {0} is not a voter")]
    NotVoter(ReplicaKey),
    #[error("replica {0} is the last voter and cannot be removed")]
    LastVoter(ReplicaKey),
}

/// A non-empty set of voters with unique ids, ordered by id.
///
/// Immutable (every change returns a new set), so the map is shared: cloning a set, a voter-set
/// history or a whole node copies a pointer, not the endpoints' strings (the conformance graph replay
/// clones nodes on every transition).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(from = "VoterMap", into = "VoterMap")]
pub struct VoterSet {
    voters: Arc<BTreeMap<i32, VoterNode>>,
}

/// The serialized form of a [`VoterSet`] (the same as before the map was shared).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename = "VoterSet")]
struct VoterMap {
    voters: BTreeMap<i32, VoterNode>,
}

impl From<VoterMap> for VoterSet {
    fn from(m: VoterMap) -> VoterSet {
        VoterSet {
            voters: Arc::new(m.voters),
        }
    }
}

impl From<VoterSet> for VoterMap {
    fn from(s: VoterSet) -> VoterMap {
        VoterMap {
            voters: Arc::unwrap_or_clone(s.voters),
        }
    }
}

impl VoterSet {
    /// No voters: what a replica formatted with Kafka's `--no-initial-controllers` knows until it
    /// replicates a VotersRecord ([`crate::node::Bootstrap::NoInitialVoters`]). Never decoded from bytes.
    pub fn empty() -> VoterSet {
        VoterSet {
            voters: Arc::new(BTreeMap::new()),
        }
    }

    /// Builds a set; refuses an empty list and duplicate ids.
    pub fn new(nodes: impl IntoIterator<Item = VoterNode>) -> Result<VoterSet, VoterSetError> {
        let mut voters = BTreeMap::new();
        for node in nodes {
            let id = node.key.id;
            if voters.insert(id, node).is_some() {
                return Err(VoterSetError::DuplicateId(id));
            }
        }
        if voters.is_empty() {
            return Err(VoterSetError::Empty);
        }
        Ok(VoterSet {
            voters: Arc::new(voters),
        })
    }

    /// Kafka's `addVoter`: refused if the id is already present (whatever its directory id).
    pub fn add_voter(&self, node: VoterNode) -> Result<VoterSet, VoterSetError> {
        if self.voters.contains_key(&node.key.id) {
            return Err(VoterSetError::AlreadyVoter(node.key.id));
        }
        let mut voters = BTreeMap::clone(&self.voters);
        voters.insert(node.key.id, node);
        Ok(VoterSet {
            voters: Arc::new(voters),
        })
    }

    /// Kafka's `removeVoter`: the stored key must equal `key` exactly, and the set must keep one voter.
    pub fn remove_voter(&self, key: &ReplicaKey) -> Result<VoterSet, VoterSetError> {
        match self.voters.get(&key.id) {
            Some(node) if node.key == *key => {}
            _ => return Err(VoterSetError::NotVoter(*key)),
        }
        if self.voters.len() == 1 {
            return Err(VoterSetError::LastVoter(*key));
        }
        let mut voters = BTreeMap::clone(&self.voters);
        voters.remove(&key.id);
        Ok(VoterSet {
            voters: Arc::new(voters),
        })
    }

    /// Kafka's `updateVoter`: replaces the whole node (key included) if the stored key loosely matches.
    pub fn update_voter(&self, node: VoterNode) -> Result<VoterSet, VoterSetError> {
        if !self.is_voter(&node.key) {
            return Err(VoterSetError::NotVoter(node.key));
        }
        let mut voters = BTreeMap::clone(&self.voters);
        voters.insert(node.key.id, node);
        Ok(VoterSet {
            voters: Arc::new(voters),
        })
    }

    /// Kafka's `updateVoterIgnoringDirectoryId` (`kraft.version` 0, whose static entries carry no
    /// directory id): the entry with `node`'s id becomes `node`, directory id included.
    pub fn update_voter_ignoring_directory(
        &self,
        node: VoterNode,
    ) -> Result<VoterSet, VoterSetError> {
        if !self.contains_id(node.key.id) {
            return Err(VoterSetError::NotVoter(node.key));
        }
        let mut voters = BTreeMap::clone(&self.voters);
        voters.insert(node.key.id, node);
        Ok(VoterSet {
            voters: Arc::new(voters),
        })
    }

    /// Kafka's `supportsVersion`: every voter's range contains `level`.
    pub fn supports_version(&self, level: i16) -> bool {
        self.nodes().all(|n| n.supported.contains(level))
    }

    /// Every voter's directory id is known.
    pub fn directories_known(&self) -> bool {
        self.keys().all(|k| k.directory_id.is_some())
    }

    /// Kafka's `voterNodeNeedsUpdate`: the id is a voter, loosely matches, and the node differs.
    pub fn voter_node_needs_update(&self, node: &VoterNode) -> bool {
        self.voters
            .get(&node.key.id)
            .is_some_and(|stored| stored.key.matches(&node.key) && stored != node)
    }

    /// Loose membership (Kafka's `isVoter`).
    pub fn is_voter(&self, key: &ReplicaKey) -> bool {
        self.voters.get(&key.id).is_some_and(|n| n.key.matches(key))
    }

    pub fn contains_id(&self, id: i32) -> bool {
        self.voters.contains_key(&id)
    }

    pub fn voter(&self, id: i32) -> Option<&VoterNode> {
        self.voters.get(&id)
    }

    pub fn ids(&self) -> impl Iterator<Item = i32> + '_ {
        self.voters.keys().copied()
    }

    pub fn keys(&self) -> impl Iterator<Item = ReplicaKey> + '_ {
        self.voters.values().map(|n| n.key)
    }

    pub fn nodes(&self) -> impl Iterator<Item = &VoterNode> + '_ {
        self.voters.values()
    }

    pub fn len(&self) -> usize {
        self.voters.len()
    }

    /// True only for [`VoterSet::empty`] (`new` refuses an empty set).
    pub fn is_empty(&self) -> bool {
        self.voters.is_empty()
    }

    /// Number of voters that form a majority.
    pub fn majority_size(&self) -> usize {
        majority_size(self.voters.len())
    }

    /// Whether every majority of `self` intersects every majority of `other` (by full replica key).
    ///
    /// This is the real intersection property, not Kafka's "differs by at most one key each way"
    /// approximation, which accepts a one-out-one-in swap of an odd-sized set.
    pub fn has_overlapping_majority(&self, other: &VoterSet) -> bool {
        let a: std::collections::BTreeSet<ReplicaKey> = self.keys().collect();
        let b: std::collections::BTreeSet<ReplicaKey> = other.keys().collect();
        quorums_overlap(&a, &b)
    }
}

/// ⌊n/2⌋ + 1.
pub fn majority_size(n: usize) -> usize {
    n / 2 + 1
}

/// Whether every majority of `a` meets every majority of `b`.
///
/// Two disjoint majorities exist iff the shared members can be split so each side reaches its majority:
/// `max(0, maj(a) − |a∖b|) + max(0, maj(b) − |b∖a|) ≤ |a∩b|`.
pub fn quorums_overlap<T: Ord>(
    a: &std::collections::BTreeSet<T>,
    b: &std::collections::BTreeSet<T>,
) -> bool {
    let shared = a.intersection(b).count();
    let only_a = a.len() - shared;
    let only_b = b.len() - shared;
    let need_a = majority_size(a.len()).saturating_sub(only_a);
    let need_b = majority_size(b.len()).saturating_sub(only_b);
    need_a + need_b > shared
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub fn node(id: i32) -> VoterNode {
        VoterNode {
            key: ReplicaKey::new(id, Uuid::from_u128(id as u128 + 1)),
            listeners: vec![Endpoint {
                name: "CONTROLLER".into(),
                host: "localhost".into(),
                port: 9000 + id as u16,
            }],
            supported: SupportedVersions::CURRENT,
        }
    }

    fn set(ids: &[i32]) -> VoterSet {
        VoterSet::new(ids.iter().map(|&i| node(i))).unwrap()
    }

    #[test]
    fn update_ignoring_directory_fills_a_static_entry() {
        let static_node = |id: i32| VoterNode {
            key: ReplicaKey::without_directory(id),
            supported: SupportedVersions::STATIC,
            ..node(id)
        };
        let s = VoterSet::new([static_node(1), static_node(2)]).unwrap();
        assert!(!s.supports_version(1));
        assert!(!s.directories_known());
        let s = s.update_voter_ignoring_directory(node(1)).unwrap();
        let s = s.update_voter_ignoring_directory(node(2)).unwrap();
        assert!(s.supports_version(1) && s.directories_known());
        assert_eq!(s, set(&[1, 2]));
        // Another directory id of the same id replaces the entry too; an unknown id is refused.
        let other = VoterNode {
            key: ReplicaKey::new(1, Uuid::from_u128(99)),
            ..node(1)
        };
        assert!(s.update_voter_ignoring_directory(other).is_ok());
        assert!(s.update_voter_ignoring_directory(node(3)).is_err());
    }

    #[test]
    fn new_refuses_empty_and_duplicates() {
        assert_eq!(VoterSet::new([]), Err(VoterSetError::Empty));
        assert_eq!(
            VoterSet::new([node(1), node(1)]),
            Err(VoterSetError::DuplicateId(1))
        );
    }

    #[test]
    fn add_refuses_same_id_with_other_directory() {
        let s = set(&[1, 2]);
        let mut other = node(2);
        other.key.directory_id = Some(Uuid::from_u128(99));
        assert_eq!(s.add_voter(other), Err(VoterSetError::AlreadyVoter(2)));
        assert_eq!(
            s.add_voter(node(3)).unwrap().ids().collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn remove_needs_exact_key_and_keeps_one_voter() {
        let s = set(&[1, 2]);
        let loose = ReplicaKey::without_directory(2);
        assert_eq!(s.remove_voter(&loose), Err(VoterSetError::NotVoter(loose)));
        let one = s.remove_voter(&node(2).key).unwrap();
        assert_eq!(
            one.remove_voter(&node(1).key),
            Err(VoterSetError::LastVoter(node(1).key))
        );
        assert_eq!(
            s.remove_voter(&node(7).key),
            Err(VoterSetError::NotVoter(node(7).key))
        );
    }

    #[test]
    fn update_uses_loose_match() {
        let mut static_node = node(1);
        static_node.key.directory_id = None;
        let s = VoterSet::new([static_node]).unwrap();
        assert!(s.voter_node_needs_update(&node(1)));
        let updated = s.update_voter(node(1)).unwrap();
        assert_eq!(updated.voter(1), Some(&node(1)));
        assert!(!updated.voter_node_needs_update(&node(1)));
        assert!(updated.update_voter(node(2)).is_err());
    }

    #[test]
    fn loose_matching() {
        let none = ReplicaKey::without_directory(1);
        let some = node(1).key;
        assert!(none.matches(&some));
        assert!(!some.matches(&none));
        assert!(some.matches(&some));
        assert_eq!(ReplicaKey::new(1, Uuid::nil()), none);
    }

    #[test]
    fn overlap_rejects_odd_swap_accepts_single_changes() {
        assert!(set(&[1, 2, 3]).has_overlapping_majority(&set(&[1, 2, 3, 4])));
        assert!(set(&[1, 2, 3]).has_overlapping_majority(&set(&[1, 2])));
        assert!(!set(&[1, 2, 3]).has_overlapping_majority(&set(&[1, 2, 4])));
        assert!(set(&[1, 2, 3, 4]).has_overlapping_majority(&set(&[1, 2, 3, 5])));
        assert!(!set(&[1, 2, 3, 4, 5]).has_overlapping_majority(&set(&[1, 2, 3, 4, 5, 6, 7])));
        assert!(set(&[1]).has_overlapping_majority(&set(&[1, 2])));
    }

    /// Brute force over all subsets: the closed form agrees with the definition.
    fn overlap_brute(a: &[u8], b: &[u8]) -> bool {
        let subsets = |s: &[u8]| -> Vec<Vec<u8>> {
            (0u32..(1 << s.len()))
                .map(|m| {
                    s.iter()
                        .enumerate()
                        .filter(|(i, _)| m & (1 << i) != 0)
                        .map(|(_, &x)| x)
                        .collect()
                })
                .filter(|v: &Vec<u8>| v.len() >= majority_size(s.len()))
                .collect()
        };
        let (ma, mb) = (subsets(a), subsets(b));
        ma.iter()
            .all(|x| mb.iter().all(|y| x.iter().any(|e| y.contains(e))))
    }

    proptest! {
        #[test]
        fn overlap_matches_brute_force(a in proptest::collection::btree_set(0u8..8, 1..6),
                                       b in proptest::collection::btree_set(0u8..8, 1..6)) {
            let av: Vec<u8> = a.iter().copied().collect();
            let bv: Vec<u8> = b.iter().copied().collect();
            prop_assert_eq!(quorums_overlap(&a, &b), overlap_brute(&av, &bv));
        }

        #[test]
        fn single_add_or_remove_always_overlaps(ids in proptest::collection::btree_set(0i32..20, 1..7), extra in 20i32..30) {
            let s = VoterSet::new(ids.iter().map(|&i| node(i))).unwrap();
            prop_assert!(s.has_overlapping_majority(&s.add_voter(node(extra)).unwrap()));
            let first = ids.iter().next().copied().unwrap();
            if let Ok(smaller) = s.remove_voter(&node(first).key) {
                prop_assert!(s.has_overlapping_majority(&smaller));
            }
        }
    }
}
