//! Ghost (history) state: what the properties read, never the protocol.

use super::{is_zero, is_zero16, AppendAcks, Entry, Kind, Mask, VoterSet, MAX_ACKS, MAX_LOG};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// Bits of [`History::violations`]: transition-level property failures.
pub mod violation {
    /// A leader advanced its HW over an entry that conflicts with an already committed one.
    pub const CONFLICTING_COMMIT: u16 = 1;
    /// A replica truncated an entry below its own HW.
    pub const TRUNCATION_BELOW_HW: u16 = 2;
    /// A replica's known HW decreased.
    pub const HW_DECREASED: u16 = 4;
    /// A replica's reported committed voter set moved backwards in its history.
    pub const COMMITTED_VOTERS_REGRESSED: u16 = 8;
    /// A replica took a snapshot holding an offset at or above its HW.
    pub const SNAPSHOT_ABOVE_HW: u16 = 16;
    /// After an install, the follower's committed voter set differed from the leader's voter set at
    /// the same offset.
    pub const INSTALL_VOTERS_DIFFER: u16 = 32;
    /// A replica's grant or fetch counted toward a majority under a voter key it does not hold (a
    /// vote or pre-vote granted to a request meant for another directory id, a fetch recorded in
    /// the state of a voter key with another directory id).
    pub const KEY_NOT_HELD_COUNTED: u16 = 64;
}

/// Bits of [`History::events`]: past events some `sometimes` property looks for.
pub mod event {
    /// A replica truncated away a VotersRecord that changed the voter set.
    pub const VOTERS_RECORD_TRUNCATED: u8 = 1;
    /// A leader resigned on check-quorum expiry while a majority of its other voters had moved to a
    /// later epoch (it was cut off from its quorum).
    pub const CUT_OFF_LEADER_RESIGNED: u8 = 2;
    /// A follower that had fetched from its leader refused a pre-vote.
    pub const PRE_VOTE_REFUSED_BY_FOLLOWER: u8 = 4;
    /// A prospective won a pre-vote majority and became candidate.
    pub const PRE_VOTE_WON: u8 = 8;
    /// A follower installed a snapshot from its leader.
    pub const SNAPSHOT_INSTALLED: u8 = 16;
    /// A replica's log start moved up to a snapshot.
    pub const LOG_START_MOVED: u8 = 32;
    /// A replica restarted while downloading a snapshot (the partial download is lost).
    pub const CRASH_DURING_INSTALL: u8 = 64;
}

/// Ghost (history) variables: part of the state, never read by the protocol itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// `leaders[e]`: who became leader in epoch `e` (ElectionSafety wants ≤ 1 bit).
    pub leaders: [Mask; 16],
    /// The longest prefix ever committed by a leader: entry and the epoch of the leader that first
    /// committed it.
    pub committed: CommittedLog,
    /// The committed voter set with the greatest offset ever reported by a leader:
    /// (leader epoch, VotersRecord offset or −1 for the bootstrap set, set).
    pub max_reported: Option<(u8, i8, VoterSet)>,
    /// Membership changes appended so far (bound).
    pub changes: u8,
    /// Data records appended so far (bound).
    pub data: u8,
    /// Restarts so far (bound).
    pub crashes: u8,
    /// Snapshots taken so far (bound).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub snapshots: u8,
    /// Disk losses so far (bound).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub disk_losses: u8,
    /// Transition-level violations ([`violation`] bits).
    pub violations: u16,
    /// Past events ([`event`] bits). Not hashed: they feed only `sometimes` properties, so leaving
    /// them out of the fingerprint can only hide an example (a reported failure), never a violation.
    pub events: u8,
    /// Pre-vote only: bit `e` = epoch `e` was opened by an election (a candidate, which needs a
    /// pre-vote majority) or by Kafka's bump of a resigned replica. In a correct run it is always
    /// `0..=max epoch`, a function of the servers' epochs, so hashing it adds no state.
    #[serde(default, skip_serializing_if = "is_zero16")]
    pub opened: u16,
    /// Auto-join: the VotersRecords acknowledged at append.
    #[serde(default, skip_serializing_if = "AppendAcks::is_empty")]
    pub append_acks: AppendAcks,
    /// Duplicated messages so far (bound, `--duplicates`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicates: u8,
}

impl Hash for History {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut buf = [0u8; 16 + 3 * MAX_LOG + 1 + 12 + 5 * (MAX_LOG + 1) + 1 + 2 * MAX_ACKS + 2];
        buf[..16].copy_from_slice(&self.leaders);
        let mut n = 16;
        buf[n] = self.committed.len;
        n += 1;
        for (e, ce) in self.committed.iter() {
            buf[n..n + 3].copy_from_slice(&[e.epoch, e.kind_byte(), *ce]);
            n += 3;
        }
        let (me, mo, ms) = self
            .max_reported
            .map_or((0xFF, 0x7F, 0), |(e, o, m)| (e, o as u8, m.ids()));
        let [v0, v1] = self.violations.to_le_bytes();
        let [o0, o1] = self.opened.to_le_bytes();
        let tail = [
            me,
            mo,
            ms,
            self.changes,
            self.data,
            self.crashes,
            v0,
            v1,
            o0,
            o1,
            self.snapshots,
            self.disk_losses,
        ];
        buf[n..n + tail.len()].copy_from_slice(&tail);
        n += tail.len();
        // Directory ids only where one is not 0 (states without a disk loss hash as they did).
        let reported = self.max_reported.map(|(_, _, m)| m);
        let sets = self.committed.iter().map(|(e, _)| e.kind);
        for (o, kind) in sets
            .chain([reported.map_or(Kind::Data, Kind::Voters)])
            .enumerate()
        {
            n = super::log::put_voter_dirs(buf.as_mut_slice(), n, o as u8, kind);
        }
        // Only once an auto-join was acknowledged (states without one hash as they did).
        if !self.append_acks.is_empty() {
            n += self.append_acks.pack(&mut buf[n..]);
        }
        // Only once a message was duplicated (states without one hash as they did).
        if self.duplicates != 0 {
            buf[n..n + 2].copy_from_slice(&[0xD0, self.duplicates]);
            n += 2;
        }
        h.write(&buf[..n]);
    }
}

/// The globally committed prefix: entries with the epoch of the leader that first committed them.
/// Fixed-size (no allocation per state); reads as a slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Vec<(Entry, u8)>", try_from = "Vec<(Entry, u8)>")]
pub struct CommittedLog {
    entries: [(Entry, u8); MAX_LOG],
    len: u8,
}

impl CommittedLog {
    /// Appends one committed entry (ignored past [`MAX_LOG`], which no bounded run reaches).
    pub fn push(&mut self, e: (Entry, u8)) {
        if (self.len as usize) < MAX_LOG {
            self.entries[self.len as usize] = e;
            self.len += 1;
        }
    }
}

impl std::ops::Deref for CommittedLog {
    type Target = [(Entry, u8)];
    fn deref(&self) -> &[(Entry, u8)] {
        &self.entries[..self.len as usize]
    }
}

impl std::ops::DerefMut for CommittedLog {
    fn deref_mut(&mut self) -> &mut [(Entry, u8)] {
        &mut self.entries[..self.len as usize]
    }
}

impl From<CommittedLog> for Vec<(Entry, u8)> {
    fn from(c: CommittedLog) -> Self {
        c.to_vec()
    }
}

impl TryFrom<Vec<(Entry, u8)>> for CommittedLog {
    type Error = String;
    fn try_from(v: Vec<(Entry, u8)>) -> Result<Self, String> {
        if v.len() > MAX_LOG {
            return Err(format!(
                "committed prefix of {} entries exceeds {MAX_LOG}",
                v.len()
            ));
        }
        let mut c = CommittedLog::default();
        for e in v {
            c.push(e);
        }
        Ok(c)
    }
}
