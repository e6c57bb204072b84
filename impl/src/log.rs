//! The replicated log as the core sees it: batches of records with offsets and epochs, behind a trait.
//!
//! `MemoryLog` is the in-memory implementation used by tests and conformance; `storage::FileLog` is the
//! durable one. Both hold Kafka record batches (see `records` for the byte encoding).

use bytes::Bytes;

use crate::voter_set::VoterSet;

/// A record as the core sees it. Control records live in control batches, data records in data batches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A client record (opaque value).
    Data(Bytes),
    /// LeaderChangeMessage, control type 2, written first in every new leader's epoch.
    LeaderChange { leader_id: i32, voters: Vec<i32>, granting_voters: Vec<i32> },
    /// KRaftVersionRecord, control type 5.
    KRaftVersion(i16),
    /// VotersRecord, control type 6: the voter set that takes effect at this offset.
    Voters(VoterSet),
}

/// A batch: consecutive records that share one leader epoch, starting at `base_offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub base_offset: i64,
    pub epoch: i32,
    pub records: Vec<Record>,
}

impl Batch {
    /// The offset after the last record of this batch.
    pub fn next_offset(&self) -> i64 {
        self.base_offset + self.records.len() as i64
    }
}

/// Errors of a log implementation.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("batch at offset {got} does not continue the log at end offset {expected}")]
    NonContiguous { expected: i64, got: i64 },
    #[error("batch epoch {got} is below the log's last epoch {last}")]
    EpochRegression { last: i32, got: i32 },
    #[error("offset {offset} is outside the log [{start}, {end})")]
    OutOfRange { offset: i64, start: i64, end: i64 },
    #[error("corrupt record batch at offset {offset}: {reason}")]
    Corrupt { offset: i64, reason: String },
    #[error("log I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// The log the quorum core reads and appends to.
///
/// Contract: offsets are dense from `start_offset()` to `end_offset()`; batch epochs never decrease;
/// `truncate_to(o)` removes every record at offset ≥ o; appended batches are durable only after `flush`.
pub trait RaftLog {
    /// First offset held (0 unless the prefix was trimmed).
    fn start_offset(&self) -> i64;
    /// The log end offset (LEO): the offset the next record gets.
    fn end_offset(&self) -> i64;
    /// Epoch of the last batch, or 0 for an empty log.
    fn last_epoch(&self) -> i32;
    /// Appends `records` as one new batch in `epoch`; returns its base offset.
    fn append_as_leader(&mut self, epoch: i32, records: Vec<Record>) -> Result<i64, LogError>;
    /// Appends batches replicated from the leader; the first must start at `end_offset()`.
    fn append_as_follower(&mut self, batches: Vec<Batch>) -> Result<(), LogError>;
    /// Removes every record at offset ≥ `offset`.
    fn truncate_to(&mut self, offset: i64) -> Result<(), LogError>;
    /// Whole batches holding offsets ≥ `from`, until about `max_bytes` of encoded size (at least one batch).
    fn read(&self, from: i64, max_bytes: usize) -> Result<Vec<Batch>, LogError>;
    /// Kafka's `endOffsetForEpoch`: the largest epoch ≤ `epoch` in the log and the end offset of that epoch
    /// (the base offset of the first batch of a later epoch, or the LEO). `None` if no such epoch.
    fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)>;
    /// Makes every appended batch durable.
    fn flush(&mut self) -> Result<(), LogError>;
    /// Offset below which every record is durable.
    fn flushed_offset(&self) -> i64;
}
