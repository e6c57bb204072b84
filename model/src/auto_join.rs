//! Auto-join (KIP-1186, Kafka 4.2+ `controller.quorum.auto.join.enable`): the vocabulary the model
//! needs beside [`crate::types`]. The request an observer sends, and the ghost record of the
//! AddRaftVoter requests a leader answered at append (`AckWhenCommitted = false`).

use serde::{Deserialize, Serialize};

/// What an observer with auto-join asks its leader for (Kafka 4.4's `pollFollowerAsObserver`): the
/// stale key of its id first, then itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AutoJoinRequest {
    /// RemoveRaftVoter of the key (own id, `dir`) its latest voter set holds: the same node on an
    /// older disk.
    RemoveStale {
        /// Directory id of the stale key.
        dir: u8,
    },
    /// AddRaftVoter v1 of its own key, `AckWhenCommitted = false`.
    Add,
}

/// Most acknowledgements at append a run records (each is one membership change; the bounds allow
/// fewer).
pub const MAX_ACKS: usize = 4;

/// Ghost: the VotersRecords a leader acknowledged at append, as (offset, epoch): the record's
/// identity (log matching). Fixed-size; reads as a slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Vec<(u8, u8)>", try_from = "Vec<(u8, u8)>")]
pub struct AppendAcks {
    acks: [(u8, u8); MAX_ACKS],
    len: u8,
}

impl AppendAcks {
    /// Records one acknowledgement (ignored past [`MAX_ACKS`], which no bounded run reaches).
    pub fn push(&mut self, offset: u8, epoch: u8) {
        if (self.len as usize) < MAX_ACKS {
            self.acks[self.len as usize] = (offset, epoch);
            self.len += 1;
        }
    }
    /// True if no acknowledgement at append happened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The bytes the state's fingerprint reads: the count, then offset and epoch of each.
    pub fn pack(&self, buf: &mut [u8]) -> usize {
        buf[0] = self.len;
        for (k, (o, e)) in self.iter().enumerate() {
            buf[1 + 2 * k] = *o;
            buf[2 + 2 * k] = *e;
        }
        1 + 2 * self.len as usize
    }
}

impl std::ops::Deref for AppendAcks {
    type Target = [(u8, u8)];
    fn deref(&self) -> &[(u8, u8)] {
        &self.acks[..self.len as usize]
    }
}

impl From<AppendAcks> for Vec<(u8, u8)> {
    fn from(a: AppendAcks) -> Self {
        a.to_vec()
    }
}

impl TryFrom<Vec<(u8, u8)>> for AppendAcks {
    type Error = String;
    fn try_from(v: Vec<(u8, u8)>) -> Result<Self, String> {
        if v.len() > MAX_ACKS {
            return Err(format!(
                "{} acknowledgements at append exceed {MAX_ACKS}",
                v.len()
            ));
        }
        let mut a = AppendAcks::default();
        for (o, e) in v {
            a.push(o, e);
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_round_trip_through_json_and_pack_only_what_they_hold() {
        let mut a = AppendAcks::default();
        let mut buf = [0u8; 1 + 2 * MAX_ACKS];
        assert_eq!(a.pack(&mut buf), 1);
        a.push(5, 1);
        a.push(7, 2);
        assert_eq!(&*a, &[(5, 1), (7, 2)]);
        assert_eq!(a.pack(&mut buf), 5);
        assert_eq!(&buf[..5], &[2, 5, 1, 7, 2]);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<AppendAcks>(&json).unwrap(), a);
        let too_many = serde_json::to_string(&vec![(1u8, 1u8); MAX_ACKS + 1]).unwrap();
        assert!(serde_json::from_str::<AppendAcks>(&too_many).is_err());
    }
}
