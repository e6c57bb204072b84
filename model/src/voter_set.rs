//! Kafka's `VoterSet` with KIP-853's voter keys (id, directory id), packed for the checker.

use crate::types::{bit, ids, Id, Mask};
use serde::{Deserialize, Serialize};

/// A voter set with KIP-853's voter keys: the voters' ids and each voter's directory id. A directory
/// id is an incarnation number: 0 for the disk a server was formatted with, one more per disk loss
/// (two bits per id, so at most three losses per server; `ModelConfig::validate` bounds them).
/// Kafka keys its `VoterSet` by id, so one id appears at most once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VoterSet {
    ids: Mask,
    dirs: u16,
    /// Voters whose directory id is not known (Kafka's key with no directory id, which matches every
    /// directory id of its id). Only the `upgrade-before-directory-ids` bug writes one.
    unknown: Mask,
}

/// Most directory ids a server may have (two bits each in [`VoterSet`]).
pub const MAX_DIRS: u8 = 4;

/// The `VoterDirectoryId` of a request meant for a voter whose directory id is not known (Kafka sends
/// none, and the receiver's `isValidVoterKey` accepts it).
pub const NO_DIR: u8 = 0xFF;

impl VoterSet {
    /// The voters `ids`, each with directory id 0 (the bootstrap set's keys).
    pub const fn of(ids: Mask) -> VoterSet {
        VoterSet {
            ids,
            dirs: 0,
            unknown: 0,
        }
    }
    /// The voters `ids` with the directory ids packed in `dirs` as [`VoterSet::dirs`] returns them and
    /// the voters of `unknown` holding none, as [`VoterSet::unknown_dirs`] returns them (bits of ids not
    /// in `ids` are ignored).
    pub fn from_parts(ids: Mask, dirs: u16, unknown: Mask) -> VoterSet {
        crate::types::ids(ids).fold(VoterSet::of(0), |v, i| {
            if unknown & bit(i) != 0 {
                v.with_unknown_dir(i)
            } else {
                v.with(i, ((dirs >> (2 * i)) & 3) as u8)
            }
        })
    }
    /// The voters' ids.
    pub const fn ids(self) -> Mask {
        self.ids
    }
    /// Number of voters.
    pub const fn len(self) -> u32 {
        self.ids.count_ones()
    }
    /// True if the set has no voter.
    pub const fn is_empty(self) -> bool {
        self.ids == 0
    }
    /// True if some voter has id `id` (whatever its directory id).
    pub const fn has_id(self, id: Id) -> bool {
        self.ids & bit(id) != 0
    }
    /// The directory id of voter `id`, if `id` is a voter.
    pub const fn dir(self, id: Id) -> Option<u8> {
        if self.has_id(id) {
            Some(((self.dirs >> (2 * id)) & 3) as u8)
        } else {
            None
        }
    }
    /// Kafka's `VoterSet.isVoter(ReplicaKey)`: the key (id, dir) is a voter of this set.
    /// A voter with no directory id matches every directory id of its id (Kafka's `isVoter`).
    pub const fn is_voter(self, id: Id, dir: u8) -> bool {
        matches!(self.dir(id), Some(d) if d == dir) || self.unknown & self.ids & bit(id) != 0
    }
    /// The directory id a request meant for voter `id` names: [`NO_DIR`] for a voter with no
    /// directory id, 0 for a non-voter.
    pub const fn request_dir(self, id: Id) -> u8 {
        if self.unknown & self.ids & bit(id) != 0 {
            NO_DIR
        } else {
            match self.dir(id) {
                Some(d) => d,
                None => 0,
            }
        }
    }
    /// The set with voter `id` (added if absent) holding no directory id.
    pub const fn with_unknown_dir(self, id: Id) -> VoterSet {
        let v = self.with(id, 0);
        VoterSet {
            unknown: v.unknown | bit(id),
            ..v
        }
    }
    /// The voters with no directory id.
    pub const fn unknown_dirs(self) -> Mask {
        self.unknown & self.ids
    }
    /// The set with voter (id, dir) added (replacing any key of `id`).
    pub const fn with(self, id: Id, dir: u8) -> VoterSet {
        let cleared = self.without(id);
        VoterSet {
            ids: cleared.ids | bit(id),
            dirs: cleared.dirs | (((dir & 3) as u16) << (2 * id)),
            unknown: cleared.unknown,
        }
    }
    /// The set without voter `id`.
    pub const fn without(self, id: Id) -> VoterSet {
        VoterSet {
            ids: self.ids & !bit(id),
            dirs: self.dirs & !(3 << (2 * id)),
            unknown: self.unknown & !bit(id),
        }
    }
    /// The directory ids, two bits per id (0 while every voter has its first disk).
    pub const fn dirs(self) -> u16 {
        self.dirs
    }
    /// The voter keys as a bitmask, bit `4 * id + dir` per voter (so that majorities of two sets
    /// are compared key by key: a voter whose disk was replaced is another key).
    pub fn keys(self) -> u32 {
        ids(self.ids).fold(0, |m, i| m | 1 << (4 * i + self.dir(i).unwrap_or(0)))
    }
    /// How many keys one set has and the other has not (a replaced directory id counts twice).
    pub fn key_distance(self, other: VoterSet) -> u32 {
        if self.dirs | other.dirs == 0 {
            // The common case (no disk loss): keys are ids.
            (self.ids ^ other.ids).count_ones()
        } else {
            (self.keys() ^ other.keys()).count_ones()
        }
    }
    /// The ids whose key differs between `self` and `other` (added, removed or another directory).
    pub fn changed(self, other: VoterSet) -> Mask {
        ids(self.ids | other.ids)
            .filter(|&i| self.dir(i) != other.dir(i))
            .fold(0, |m, i| m | bit(i))
    }
}

/// The JSON form of a [`VoterSet`]: the id mask while every directory id is 0 (as traces always had
/// it), else the mask with the directory ids.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum VoterSetRepr {
    Ids(Mask),
    Keyed {
        ids: Mask,
        dirs: u16,
        #[serde(default, skip_serializing_if = "is_zero")]
        unknown: Mask,
    },
}

fn is_zero(m: &Mask) -> bool {
    *m == 0
}

impl Serialize for VoterSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.dirs, self.unknown_dirs()) {
            (0, 0) => VoterSetRepr::Ids(self.ids),
            (dirs, unknown) => VoterSetRepr::Keyed {
                ids: self.ids,
                dirs,
                unknown,
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for VoterSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match VoterSetRepr::deserialize(d)? {
            VoterSetRepr::Ids(ids) => VoterSet::of(ids),
            VoterSetRepr::Keyed { ids, dirs, unknown } => VoterSet::from_parts(ids, dirs, unknown),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_directory_id() {
        let v = VoterSet::of(0b111).without(1).with(1, 2);
        assert_eq!(
            (v.ids(), v.dir(1), v.dir(0), v.dir(3)),
            (0b111, Some(2), Some(0), None)
        );
        assert!(v.is_voter(1, 2) && !v.is_voter(1, 0) && !v.is_voter(3, 0));
        // One key per id: another directory id replaces the old key.
        assert_eq!(v.with(1, 1).dir(1), Some(1));
        assert_eq!(v.keys().count_ones(), 3);
        assert_ne!(v.keys(), VoterSet::of(0b111).keys());
        assert_eq!(v.changed(VoterSet::of(0b111)), bit(1));
        assert_eq!(v.key_distance(VoterSet::of(0b111)), 2);
        assert_eq!(VoterSet::of(0b111).key_distance(VoterSet::of(0b1011)), 2);
    }

    #[test]
    fn json_is_the_mask_until_a_directory_id_is_not_zero() {
        let plain = VoterSet::of(0b101);
        assert_eq!(serde_json::to_string(&plain).unwrap(), "5");
        let keyed = plain.with(1, 3);
        let json = serde_json::to_string(&keyed).unwrap();
        assert_eq!(json, r#"{"ids":7,"dirs":12}"#);
        assert_eq!(serde_json::from_str::<VoterSet>(&json).unwrap(), keyed);
        assert_eq!(serde_json::from_str::<VoterSet>("5").unwrap(), plain);
        let unknown = plain.with_unknown_dir(1);
        let json = serde_json::to_string(&unknown).unwrap();
        assert_eq!(json, r#"{"ids":7,"dirs":0,"unknown":2}"#);
        assert_eq!(serde_json::from_str::<VoterSet>(&json).unwrap(), unknown);
    }

    #[test]
    fn a_voter_with_no_directory_id_matches_every_directory_id() {
        let v = VoterSet::of(0b101).with_unknown_dir(1);
        assert!(v.is_voter(1, 0) && v.is_voter(1, 3) && !v.is_voter(3, 0));
        assert_eq!((v.request_dir(1), v.request_dir(0)), (NO_DIR, 0));
        assert_eq!(v.unknown_dirs(), bit(1));
        // Learning the key ends the wildcard; removing the voter forgets it.
        assert!(!v.with(1, 2).is_voter(1, 0) && v.with(1, 2).is_voter(1, 2));
        assert_eq!(v.without(1).unknown_dirs(), 0);
    }
}
