//! The replicated log as the core sees it: batches of records with offsets and epochs, behind a trait.
//!
//! `MemoryLog` is the in-memory implementation: the core's view of the log (and the log of tests and
//! conformance); `storage::FileLog` is the durable one, which the shell keeps equal to the view. Both hold
//! Kafka record batches (see `records` for the byte encoding).

use bytes::Bytes;

use crate::time::WallMillis;

pub use crate::batch::{Batch, Record, Replicated, SnapshotId, SnapshotMeta};

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
    #[error("a batch must hold at least one record")]
    EmptyBatch,
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
    /// Appends `records` as one new batch in `epoch`, created at `append_time` (the leader's wall clock);
    /// returns its base offset.
    fn append_as_leader(
        &mut self,
        epoch: i32,
        append_time: WallMillis,
        records: Vec<Record>,
    ) -> Result<i64, LogError>;
    /// Appends batches replicated from the leader; the first must start at `end_offset()`.
    fn append_as_follower(&mut self, batches: Vec<Batch>) -> Result<(), LogError>;
    /// Appends replicated batches, storing each one's bytes unchanged when it has them (Kafka's followers
    /// keep the leader's batches byte for byte: timestamps, keys and headers the core does not model).
    /// The default stores the decoded batches.
    fn append_replicated(&mut self, batches: Vec<Replicated>) -> Result<(), LogError> {
        self.append_as_follower(batches.into_iter().map(|r| r.batch).collect())
    }
    /// Removes every record at offset ≥ `offset`.
    fn truncate_to(&mut self, offset: i64) -> Result<(), LogError>;
    /// Whole batches holding offsets ≥ `from`, until about `max_bytes` of encoded size (at least one batch).
    fn read(&self, from: i64, max_bytes: usize) -> Result<Vec<Batch>, LogError>;
    /// The stored bytes of whole batches holding offsets ≥ `from` (the first may start below `from`, as
    /// Kafka serves a fetch), until about `max_bytes` (at least one batch); empty at the LEO. The default
    /// encodes what `read` returns.
    fn read_bytes(&self, from: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        let batches = self.read(from, max_bytes)?;
        crate::records::encode_batches(&batches).map_err(|e| LogError::Corrupt {
            offset: from,
            reason: e.to_string(),
        })
    }
    /// Kafka's `endOffsetForEpoch`: the largest epoch ≤ `epoch` in the log and the end offset of that epoch
    /// (the base offset of the first batch of a later epoch, or the LEO). If every batch has a larger epoch,
    /// `(epoch, base offset of the first batch)` as Kafka's epoch cache answers. `None` for an empty log.
    fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)>;
    /// Makes every appended batch durable.
    fn flush(&mut self) -> Result<(), LogError>;
    /// Offset below which every record is durable.
    fn flushed_offset(&self) -> i64;
}

/// Kafka's epoch-cache answer over a sequence of batches (shared by the log implementations).
pub fn end_offset_for_epoch_in(
    batches: &[Batch],
    end_offset: i64,
    epoch: i32,
) -> Option<(i32, i64)> {
    let first = batches.first()?;
    // Index of the first batch whose epoch is > `epoch` (batch epochs are non-decreasing).
    let after = batches.partition_point(|b| b.epoch <= epoch);
    if after == 0 {
        return Some((epoch, first.base_offset));
    }
    let found = batches[after - 1].epoch;
    let end = batches.get(after).map_or(end_offset, |b| b.base_offset);
    Some((found, end))
}

/// An in-memory [`RaftLog`]: used by tests, conformance and benchmarks. `flush` is a no-op marker.
/// Equality compares the batches, not the bytes a replicated batch arrived as.
#[derive(Clone, Debug, Default)]
pub struct MemoryLog {
    batches: Vec<Batch>,
    /// Per batch, the bytes it was replicated as (`None`: appended as a leader, or cut).
    raw: Vec<Option<Bytes>>,
    start_offset: i64,
    /// The epoch of the snapshot the log starts at (0 without one): `last_epoch()` of the empty log, as
    /// Kafka's `lastFetchedEpoch` answers after `truncateFullyAndStartAt`.
    start_epoch: i32,
    flushed: i64,
}

impl PartialEq for MemoryLog {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.batches,
            self.start_offset,
            self.start_epoch,
            self.flushed,
        ) == (
            &other.batches,
            other.start_offset,
            other.start_epoch,
            other.flushed,
        )
    }
}

impl Eq for MemoryLog {}

impl MemoryLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log that starts at `offset`, after a snapshot of epoch `epoch` (Kafka's
    /// `truncateFullyAndStartAt`): its LEO is `offset`, its last epoch `epoch` until a batch arrives.
    pub fn starting_at(offset: i64, epoch: i32) -> Self {
        MemoryLog {
            start_offset: offset,
            start_epoch: epoch,
            flushed: offset,
            ..Self::default()
        }
    }

    /// All batches, in order.
    pub fn batches(&self) -> &[Batch] {
        &self.batches
    }

    /// Moves the log start up to `offset` (a snapshot's end, at most the LEO), dropping the batches wholly
    /// below it, as Kafka's `deleteBeforeSnapshot` deletes whole segments (a batch holding `offset` stays
    /// and is served whole). `epoch` is that snapshot's epoch. Returns whether the start moved.
    pub fn advance_start(&mut self, offset: i64, epoch: i32) -> bool {
        if offset <= self.start_offset || offset > self.end_offset() {
            return false;
        }
        let drop = self.batches.partition_point(|b| b.next_offset() <= offset);
        self.batches.drain(..drop);
        self.raw.drain(..drop);
        self.start_offset = offset;
        self.start_epoch = epoch;
        self.flushed = self.flushed.max(offset);
        true
    }

    fn check_append(&self, batch: &Batch) -> Result<(), LogError> {
        if batch.records.is_empty() {
            return Err(LogError::EmptyBatch);
        }
        if batch.base_offset != self.end_offset() {
            return Err(LogError::NonContiguous {
                expected: self.end_offset(),
                got: batch.base_offset,
            });
        }
        if batch.epoch < self.last_epoch() {
            return Err(LogError::EpochRegression {
                last: self.last_epoch(),
                got: batch.epoch,
            });
        }
        Ok(())
    }
}

/// Rough encoded size of a batch, for the `max_bytes` limit of `read`.
pub fn approximate_size(batch: &Batch) -> usize {
    const BATCH_OVERHEAD: usize = 61;
    BATCH_OVERHEAD
        + batch
            .records
            .iter()
            .map(|r| match r {
                Record::Data(b) => 16 + b.len(),
                Record::LeaderChange {
                    voters,
                    granting_voters,
                    ..
                } => 24 + 4 * (voters.len() + granting_voters.len()),
                Record::KRaftVersion(_) => 20,
                Record::Voters(set) => {
                    20 + set
                        .nodes()
                        .map(|n| 40 + n.listeners.len() * 32)
                        .sum::<usize>()
                }
            })
            .sum::<usize>()
}

impl RaftLog for MemoryLog {
    fn start_offset(&self) -> i64 {
        self.start_offset
    }

    fn end_offset(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.start_offset, Batch::next_offset)
    }

    fn last_epoch(&self) -> i32 {
        self.batches.last().map_or(self.start_epoch, |b| b.epoch)
    }

    fn append_as_leader(
        &mut self,
        epoch: i32,
        append_time: WallMillis,
        records: Vec<Record>,
    ) -> Result<i64, LogError> {
        let batch = Batch {
            base_offset: self.end_offset(),
            epoch,
            append_time,
            records,
        };
        self.check_append(&batch)?;
        let base = batch.base_offset;
        self.batches.push(batch);
        self.raw.push(None);
        Ok(base)
    }

    fn append_as_follower(&mut self, batches: Vec<Batch>) -> Result<(), LogError> {
        let batches = batches
            .into_iter()
            .map(|batch| Replicated { batch, bytes: None })
            .collect();
        self.append_replicated(batches)
    }

    fn append_replicated(&mut self, batches: Vec<Replicated>) -> Result<(), LogError> {
        // Validate the whole sequence first so a bad batch leaves the log unchanged.
        let mut end = self.end_offset();
        let mut last = self.last_epoch();
        for Replicated { batch: b, .. } in &batches {
            if b.records.is_empty() {
                return Err(LogError::EmptyBatch);
            }
            if b.base_offset != end {
                return Err(LogError::NonContiguous {
                    expected: end,
                    got: b.base_offset,
                });
            }
            if b.epoch < last {
                return Err(LogError::EpochRegression { last, got: b.epoch });
            }
            end = b.next_offset();
            last = b.epoch;
        }
        for r in batches {
            self.check_append(&r.batch)?;
            self.batches.push(r.batch);
            self.raw.push(r.bytes);
        }
        Ok(())
    }

    fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        if offset < self.start_offset {
            return Err(LogError::OutOfRange {
                offset,
                start: self.start_offset,
                end: self.end_offset(),
            });
        }
        if offset >= self.end_offset() {
            return Ok(());
        }
        let keep = self.batches.partition_point(|b| b.base_offset < offset);
        self.batches.truncate(keep);
        self.raw.truncate(keep);
        if let Some(last) = self.batches.last_mut() {
            let len = (offset - last.base_offset) as usize;
            if len < last.records.len() {
                last.records.truncate(len);
                // A cut batch is no longer the batch it was replicated as.
                if let Some(raw) = self.raw.last_mut() {
                    *raw = None;
                }
            }
        }
        self.flushed = self.flushed.min(offset);
        Ok(())
    }

    fn read(&self, from: i64, max_bytes: usize) -> Result<Vec<Batch>, LogError> {
        let end = self.end_offset();
        if from < self.start_offset || from > end {
            return Err(LogError::OutOfRange {
                offset: from,
                start: self.start_offset,
                end,
            });
        }
        let first = self.batches.partition_point(|b| b.next_offset() <= from);
        let mut out = Vec::new();
        let mut size = 0;
        for b in &self.batches[first..] {
            let s = approximate_size(b);
            if !out.is_empty() && size + s > max_bytes {
                break;
            }
            size += s;
            out.push(b.clone());
        }
        Ok(out)
    }

    fn read_bytes(&self, from: i64, max_bytes: usize) -> Result<Bytes, LogError> {
        let batches = self.read(from, max_bytes)?;
        let first = self.batches.partition_point(|b| b.next_offset() <= from);
        let mut out = bytes::BytesMut::new();
        for (batch, raw) in batches.iter().zip(&self.raw[first..]) {
            match raw {
                Some(raw) => out.extend_from_slice(raw),
                None => crate::records::encode_batch_into(batch, &mut out).map_err(|e| {
                    LogError::Corrupt {
                        offset: batch.base_offset,
                        reason: e.to_string(),
                    }
                })?,
            }
        }
        Ok(out.freeze())
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        end_offset_for_epoch_in(&self.batches, self.end_offset(), epoch)
    }

    fn flush(&mut self) -> Result<(), LogError> {
        self.flushed = self.end_offset();
        Ok(())
    }

    fn flushed_offset(&self) -> i64 {
        self.flushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn data(n: usize) -> Vec<Record> {
        (0..n)
            .map(|i| Record::Data(Bytes::from(vec![i as u8])))
            .collect()
    }

    #[test]
    fn append_read_truncate() {
        let mut log = MemoryLog::new();
        assert_eq!(log.append_as_leader(1, 0, data(3)).unwrap(), 0);
        assert_eq!(log.append_as_leader(2, 0, data(2)).unwrap(), 3);
        assert_eq!(log.end_offset(), 5);
        assert_eq!(log.last_epoch(), 2);
        assert!(matches!(
            log.append_as_leader(1, 0, data(1)),
            Err(LogError::EpochRegression { last: 2, got: 1 })
        ));
        assert!(matches!(
            log.append_as_leader(3, 0, vec![]),
            Err(LogError::EmptyBatch)
        ));
        assert_eq!(log.read(4, 1).unwrap().len(), 1);
        assert_eq!(log.read(0, usize::MAX).unwrap().len(), 2);
        assert!(log.read(6, 10).is_err());
        log.truncate_to(2).unwrap();
        assert_eq!(log.end_offset(), 2);
        assert_eq!(log.last_epoch(), 1);
        assert!(log.truncate_to(-1).is_err());
    }

    #[test]
    fn follower_append_is_all_or_nothing() {
        let mut log = MemoryLog::new();
        let good = Batch {
            base_offset: 0,
            epoch: 1,
            append_time: 0,
            records: data(2),
        };
        let gap = Batch {
            base_offset: 5,
            epoch: 1,
            append_time: 0,
            records: data(1),
        };
        assert!(matches!(
            log.append_as_follower(vec![good.clone(), gap]),
            Err(LogError::NonContiguous { .. })
        ));
        assert_eq!(log.end_offset(), 0);
        log.append_as_follower(vec![good]).unwrap();
        assert_eq!(log.end_offset(), 2);
    }

    #[test]
    fn end_offset_for_epoch_like_kafka() {
        let mut log = MemoryLog::new();
        assert_eq!(log.end_offset_for_epoch(1), None);
        log.append_as_leader(2, 0, data(3)).unwrap();
        log.append_as_leader(2, 0, data(1)).unwrap();
        log.append_as_leader(4, 0, data(2)).unwrap();
        assert_eq!(log.end_offset_for_epoch(0), Some((0, 0)));
        assert_eq!(log.end_offset_for_epoch(2), Some((2, 4)));
        assert_eq!(log.end_offset_for_epoch(3), Some((2, 4)));
        assert_eq!(log.end_offset_for_epoch(4), Some((4, 6)));
        assert_eq!(log.end_offset_for_epoch(9), Some((4, 6)));
    }

    proptest! {
        /// Truncation at any offset keeps exactly the records below it, in order.
        #[test]
        fn truncate_keeps_prefix(sizes in proptest::collection::vec(1usize..4, 0..6), cut in 0i64..20) {
            let mut log = MemoryLog::new();
            let mut flat = Vec::new();
            for (e, n) in sizes.iter().enumerate() {
                let recs = data(*n);
                flat.extend(recs.iter().cloned().map(|r| (e as i32, r)));
                log.append_as_leader(e as i32, 0, recs).unwrap();
            }
            log.truncate_to(cut).unwrap();
            let kept: Vec<(i32, Record)> = log.read(0, usize::MAX).unwrap().into_iter()
                .flat_map(|b| b.records.into_iter().map(move |r| (b.epoch, r))).collect();
            let expect: Vec<(i32, Record)> = flat.into_iter().take(cut as usize).collect();
            prop_assert_eq!(log.end_offset(), expect.len() as i64);
            prop_assert_eq!(kept, expect);
        }
    }
}
