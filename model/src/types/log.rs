//! The replica log: entries from the log start (the snapshot it begins with) to the LEO.

use super::{Entry, Kind, VoterSet, MAX_LOG};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// A bounded log; entry `i` is the record at offset `i`. Slots past `len`, and below the log start, are
/// kept at their default so that derived `Hash`/`Eq` only see the live entries' content.
///
/// The log start offset (Kafka's `logStartOffset`) is 0 until a snapshot replaces the prefix: then
/// the entries below `start` are gone and the snapshot at `start` (its epoch and voter set, the
/// voter set as of offset `start − 1`) is where the log and its voter-set history begin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "LogRepr", try_from = "LogRepr")]
pub struct Log {
    entries: [Entry; MAX_LOG],
    len: u8,
    /// Log start offset: the end offset of the snapshot the log begins with (0 = none).
    start: u8,
    /// Epoch of the snapshot at `start` (its last record's epoch); 0 while `start` is 0.
    base_epoch: u8,
    /// Voter set of the snapshot at `start` (the set at offset `start − 1`); empty while `start` is 0.
    base_voters: VoterSet,
}

/// A snapshot's id, as in Kafka's `OffsetAndEpoch`: the end offset (exclusive) and the epoch of
/// its last record.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct SnapshotId {
    /// End offset: the snapshot holds offsets `0..end`.
    pub end: u8,
    /// Epoch of the record at `end − 1`.
    pub epoch: u8,
}

/// A snapshot, abstracted to what membership needs: its id and the voter set it carries (Kafka
/// writes `voterSetAtOffset(end − 1)` into its first control batch).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Snapshot {
    /// Its id.
    pub id: SnapshotId,
    /// The VotersRecord it carries.
    pub voters: VoterSet,
}

/// The JSON form of a [`Log`]: a plain list of entries while the log starts at 0 (as traces always
/// had it), an object once a snapshot replaced its prefix.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum LogRepr {
    Plain(Vec<Entry>),
    FromSnapshot {
        start: u8,
        snapshot_epoch: u8,
        snapshot_voters: VoterSet,
        entries: Vec<Entry>,
    },
}

/// Hashing is the checker's hot path: feed the hasher one packed byte string per value instead of
/// one call per field.
impl Hash for Log {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let mut buf = [0u8; PACKED_LOG];
        let n = self.pack(&mut buf);
        h.write(&buf[..n]);
    }
}

/// Most bytes [`Log::pack`] writes.
pub const PACKED_LOG: usize = 2 * MAX_LOG + 5 * MAX_LOG + 6;

impl From<Log> for LogRepr {
    fn from(log: Log) -> Self {
        let entries = log.as_slice().to_vec();
        match log.start {
            0 => LogRepr::Plain(entries),
            start => LogRepr::FromSnapshot {
                start,
                snapshot_epoch: log.base_epoch,
                snapshot_voters: log.base_voters,
                entries,
            },
        }
    }
}

impl TryFrom<Vec<Entry>> for Log {
    type Error = String;
    fn try_from(v: Vec<Entry>) -> Result<Self, String> {
        Log::try_from(LogRepr::Plain(v))
    }
}

impl TryFrom<LogRepr> for Log {
    type Error = String;
    fn try_from(r: LogRepr) -> Result<Self, String> {
        let (start, epoch, voters, v) = match r {
            LogRepr::Plain(v) => (0, 0, VoterSet::default(), v),
            LogRepr::FromSnapshot {
                start,
                snapshot_epoch,
                snapshot_voters,
                entries,
            } => (start, snapshot_epoch, snapshot_voters, entries),
        };
        if start as usize + v.len() > MAX_LOG {
            return Err(format!(
                "log of {} entries from offset {start} exceeds MAX_LOG {MAX_LOG}",
                v.len()
            ));
        }
        let mut log = Log::default();
        log.truncate_fully_and_start_at(start, epoch, voters);
        for e in v {
            log.push(e);
        }
        Ok(log)
    }
}

impl Log {
    /// A log holding `entries` (at most [`MAX_LOG`]; extra entries are a caller bug and are dropped).
    pub fn from_slice(entries: &[Entry]) -> Log {
        let mut log = Log::default();
        for e in entries.iter().take(MAX_LOG) {
            log.push(*e);
        }
        log
    }
    /// Log end offset (LEO).
    pub fn len(&self) -> u8 {
        self.len
    }
    /// True if the log holds no entry (at or above its start).
    pub fn is_empty(&self) -> bool {
        self.len == self.start
    }
    /// Log start offset: 0, or the end offset of the snapshot the log begins with.
    pub fn start(&self) -> u8 {
        self.start
    }
    /// The snapshot the log begins with (its id and voter set), `None` while the log starts at 0.
    pub fn base(&self) -> Option<Snapshot> {
        (self.start > 0).then_some(Snapshot {
            id: SnapshotId {
                end: self.start,
                epoch: self.base_epoch,
            },
            voters: self.base_voters,
        })
    }
    /// The entries from the log start to the LEO (entry `k` is at offset `start + k`).
    pub fn as_slice(&self) -> &[Entry] {
        &self.entries[self.start as usize..self.len as usize]
    }
    /// The entries with their offsets, from the log start.
    pub fn iter(&self) -> impl Iterator<Item = (u8, Entry)> + '_ {
        (self.start..self.len).map(|o| (o, self.entries[o as usize]))
    }
    /// The entry at `offset`, if the log holds it (`None` below the log start or at/after the LEO).
    pub fn get(&self, offset: u8) -> Option<Entry> {
        (self.start <= offset && offset < self.len).then(|| self.entries[offset as usize])
    }
    /// Appends one entry; returns false (and changes nothing) when the log is full.
    pub fn push(&mut self, e: Entry) -> bool {
        if (self.len as usize) < MAX_LOG {
            self.entries[self.len as usize] = e;
            self.len += 1;
            true
        } else {
            false
        }
    }
    /// Removes every entry at offset ≥ `end` (never below the log start: the snapshot stays).
    pub fn truncate(&mut self, end: u8) {
        while self.len > end.max(self.start) {
            self.len -= 1;
            self.entries[self.len as usize] = Entry::default();
        }
    }
    /// Kafka's `truncateFullyAndStartAt`: every entry goes, and the log begins with the snapshot
    /// `end`/`epoch`/`voters` (start = LEO = `end`).
    pub fn truncate_fully_and_start_at(&mut self, end: u8, epoch: u8, voters: VoterSet) {
        *self = Log::default();
        self.start = end.min(MAX_LOG as u8);
        self.len = self.start;
        if self.start > 0 {
            self.base_epoch = epoch;
            self.base_voters = voters;
        }
    }
    /// Moves the log start up to the snapshot `snap` (its end at most the LEO): the entries below
    /// it are deleted, the rest stay (Kafka's `deleteBeforeSnapshot`).
    pub fn advance_start(&mut self, snap: Snapshot) {
        let end = snap.id.end.min(self.len);
        if end <= self.start {
            return;
        }
        for e in &mut self.entries[..end as usize] {
            *e = Entry::default();
        }
        self.start = end;
        self.base_epoch = snap.id.epoch;
        self.base_voters = snap.voters;
    }
    /// The entries from `offset` to the end (empty if `offset` ≥ LEO), as a log starting at 0.
    pub fn suffix(&self, offset: u8) -> Log {
        let from = offset.max(self.start) as usize;
        Log::from_slice(self.entries[..self.len as usize].get(from..).unwrap_or(&[]))
    }
    /// Epoch of the last entry; for a log with no entry above its start, the snapshot's epoch (0
    /// without one): Kafka's "last fetched epoch".
    pub fn last_epoch(&self) -> u8 {
        self.as_slice().last().map_or(self.base_epoch, |e| e.epoch)
    }
    /// Writes length, entries and the log start (with its snapshot) as bytes into `buf`; returns
    /// the bytes used.
    pub fn pack(&self, buf: &mut [u8]) -> usize {
        buf[0] = self.len;
        for (i, e) in self.entries[..self.len as usize].iter().enumerate() {
            buf[1 + 2 * i] = e.epoch;
            buf[2 + 2 * i] = e.kind_byte();
        }
        let mut n = 1 + 2 * self.len as usize;
        // Directory ids only where one is not 0, so that logs without a disk loss hash as before;
        // the offset tags each pair.
        for (o, e) in self.entries[..self.len as usize].iter().enumerate() {
            n = put_voter_dirs(buf, n, o as u8, e.kind);
        }
        if self.start == 0 {
            return n;
        }
        let [d0, d1] = self.base_voters.dirs().to_le_bytes();
        buf[n..n + 5].copy_from_slice(&[
            self.start,
            self.base_epoch,
            self.base_voters.ids(),
            d0,
            d1,
        ]);
        n + 5
    }
    /// Mutable access to the live entries (used by symmetry to rewrite voter masks).
    pub fn as_mut_slice(&mut self) -> &mut [Entry] {
        &mut self.entries[self.start as usize..self.len as usize]
    }
    /// Mutable access to the voter set of the snapshot the log begins with (symmetry).
    pub fn base_voters_mut(&mut self) -> &mut VoterSet {
        &mut self.base_voters
    }
}

/// Writes the directory ids of a voter set at `buf[n..]`, tagged with its position `o` (< 32), only
/// where they are not 0, so that states without a disk loss or a static voter hash as they did;
/// returns the new end. One encoding for the log's and the ghost history's voter sets.
pub(crate) fn put_voter_dirs(buf: &mut [u8], mut n: usize, o: u8, kind: Kind) -> usize {
    if let Kind::Voters(v) = kind {
        if v.dirs() != 0 {
            let [d0, d1] = v.dirs().to_le_bytes();
            buf[n..n + 3].copy_from_slice(&[0xC0 | o, d0, d1]);
            n += 3;
        }
        if v.unknown_dirs() != 0 {
            buf[n..n + 2].copy_from_slice(&[0xE0 | o, v.unknown_dirs()]);
            n += 2;
        }
    }
    n
}
