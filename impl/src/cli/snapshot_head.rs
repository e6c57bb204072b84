//! The head of a snapshot streamed over FetchSnapshot, for the in-memory observer of
//! [`observe`](super::observe): the voter set in force at a snapshot's end is in its leading control batch
//! (SnapshotHeader, KRaftVersion, Voters: Kafka's `RecordsSnapshotWriter` layout), so only the control
//! batches before the first data batch are decoded and checked; every later byte is counted and dropped
//! as it arrives. Memory: one chunk plus at most [`MAX_CONTROL_BATCH_BYTES`] of buffered head.

use bytes::{Bytes, BytesMut};

use crate::log::{Record, SnapshotId, SnapshotMeta};
use crate::records::{RecordsError, SnapshotFrame, SnapshotRecord};
use crate::voter_set::VoterSet;

/// The largest leading control batch accepted (a VotersRecord of a thousand voters is far smaller).
pub const MAX_CONTROL_BATCH_BYTES: usize = 1024 * 1024;

/// Kafka's v2 batch header: the length field ends at byte 12, attributes are bytes 21–22.
const LENGTH_END: usize = 12;
const ATTRIBUTES_END: usize = 23;
const CONTROL_FLAG: u16 = 0x20;

/// Why a snapshot's head was refused.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotHeadError {
    #[error("snapshot {id}: chunk at byte {position}, expected byte {expected}")]
    OutOfOrder {
        id: SnapshotId,
        position: u64,
        expected: u64,
    },
    #[error(
        "snapshot {id}: a control batch of {length} bytes (at most {MAX_CONTROL_BATCH_BYTES} read)"
    )]
    ControlBatchTooLarge { id: SnapshotId, length: i64 },
    #[error("snapshot {id}: {source}")]
    Records {
        id: SnapshotId,
        #[source]
        source: RecordsError,
    },
    #[error("snapshot {id}: ends at byte {size} before its first data batch or footer was read")]
    CutShort { id: SnapshotId, size: u64 },
}

/// The leading control records of one snapshot download.
#[derive(Debug)]
pub struct SnapshotHead {
    id: SnapshotId,
    /// Bytes received so far (every chunk, kept or not).
    received: u64,
    /// Bytes of the head not yet decoded; empty once the head is read.
    pending: BytesMut,
    frame: SnapshotFrame,
    kraft_version: Option<i16>,
    voters: Option<VoterSet>,
    /// SnapshotHeader `LastContainedLogTimestamp`.
    last_contained_log_timestamp: i64,
    /// The first data batch or the footer was reached: nothing more is decoded.
    read: bool,
    failed: Option<SnapshotHeadError>,
}

impl SnapshotHead {
    pub fn new(id: SnapshotId) -> SnapshotHead {
        SnapshotHead {
            id,
            received: 0,
            pending: BytesMut::new(),
            frame: SnapshotFrame::default(),
            kraft_version: None,
            voters: None,
            last_contained_log_timestamp: 0,
            read: false,
            failed: None,
        }
    }

    pub fn id(&self) -> SnapshotId {
        self.id
    }

    /// Takes the chunk at `position`; after an error the rest of the download is only counted.
    pub fn push(&mut self, position: u64, chunk: &[u8]) {
        if self.failed.is_none() && position != self.received {
            self.failed = Some(SnapshotHeadError::OutOfOrder {
                id: self.id,
                position,
                expected: self.received,
            });
        }
        self.received = position.max(self.received) + chunk.len() as u64;
        if self.read || self.failed.is_some() {
            return;
        }
        self.pending.extend_from_slice(chunk);
        if let Err(e) = self.decode() {
            self.failed = Some(e);
        }
        if self.read || self.failed.is_some() {
            self.pending = BytesMut::new();
        }
    }

    /// Decodes every whole control batch buffered; stops at the first data batch.
    fn decode(&mut self) -> Result<(), SnapshotHeadError> {
        let id = self.id;
        while self.pending.len() >= LENGTH_END && !self.read {
            let length = i32::from_be_bytes([
                self.pending[8],
                self.pending[9],
                self.pending[10],
                self.pending[11],
            ]) as i64;
            let total = LENGTH_END as i64 + length;
            if length <= 0 || total > MAX_CONTROL_BATCH_BYTES as i64 {
                return Err(SnapshotHeadError::ControlBatchTooLarge { id, length });
            }
            if self.pending.len() < ATTRIBUTES_END {
                return Ok(());
            }
            let attributes = u16::from_be_bytes([self.pending[21], self.pending[22]]);
            if attributes & CONTROL_FLAG == 0 {
                self.read = true;
                return Ok(());
            }
            if (self.pending.len() as i64) < total {
                return Ok(());
            }
            let batch: Bytes = self.pending.split_to(total as usize).freeze();
            let (decoded, _) = self
                .frame
                .push(&batch, 0)
                .map_err(|source| SnapshotHeadError::Records { id, source })?;
            for record in decoded.records {
                match record {
                    SnapshotRecord::Control(Record::KRaftVersion(v)) => {
                        self.kraft_version = Some(v)
                    }
                    SnapshotRecord::Control(Record::Voters(set)) => self.voters = Some(set),
                    SnapshotRecord::Header(ts) => self.last_contained_log_timestamp = ts,
                    SnapshotRecord::Footer => self.read = true,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// What the core needs once the download reached `size` bytes: the control records of the head.
    pub fn finish(self, size: u64) -> Result<SnapshotMeta, SnapshotHeadError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if !self.read || self.received != size {
            return Err(SnapshotHeadError::CutShort {
                id: self.id,
                size: self.received,
            });
        }
        Ok(SnapshotMeta {
            id: self.id,
            size,
            kraft_version: self.kraft_version.unwrap_or(0),
            voters: self.voters,
            last_contained_log_timestamp: self.last_contained_log_timestamp,
        })
    }

    /// Bytes buffered now (for the memory bound's tests).
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::SnapshotEncoder;
    use crate::voter_set::{Endpoint, ReplicaKey, SupportedVersions, VoterNode};

    fn voters() -> VoterSet {
        VoterSet::new((1..=3).map(|id| VoterNode {
            key: ReplicaKey {
                id,
                directory_id: Some(uuid::Uuid::from_u128(id as u128)),
            },
            listeners: vec![Endpoint {
                name: "CONTROLLER".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
            }],
            supported: SupportedVersions { min: 0, max: 1 },
        }))
        .unwrap()
    }

    fn snapshot(data_batches: usize) -> Bytes {
        let id = SnapshotId {
            end_offset: 100,
            epoch: 2,
        };
        let mut enc = SnapshotEncoder::new(id, 7, 1, Some(&voters()), 7).unwrap();
        for n in 0..data_batches {
            enc.data_batch(&[Bytes::from(vec![n as u8; 4096])], 7)
                .unwrap();
        }
        enc.finish(7).unwrap()
    }

    fn id() -> SnapshotId {
        SnapshotId {
            end_offset: 100,
            epoch: 2,
        }
    }

    #[test]
    fn reads_the_control_records_in_any_chunking_and_drops_the_data() {
        let bytes = snapshot(50);
        for chunk in [1, 7, 100, 4096, bytes.len()] {
            let mut head = SnapshotHead::new(id());
            let mut most = 0;
            for (n, part) in bytes.chunks(chunk).enumerate() {
                head.push((n * chunk) as u64, part);
                most = most.max(head.buffered());
            }
            assert!(
                most <= 4096 + chunk,
                "buffered {most} with chunks of {chunk}"
            );
            let meta = head.finish(bytes.len() as u64).unwrap();
            assert_eq!((meta.kraft_version, meta.voters), (1, Some(voters())));
        }
    }

    #[test]
    fn refuses_gaps_damage_oversized_batches_and_short_downloads() {
        let bytes = snapshot(1);
        let mut head = SnapshotHead::new(id());
        head.push(0, &bytes[..10]);
        head.push(20, &bytes[20..]);
        assert!(matches!(
            head.finish(bytes.len() as u64),
            Err(SnapshotHeadError::OutOfOrder { .. })
        ));

        let mut damaged = bytes.to_vec();
        damaged[70] ^= 0xff;
        let mut head = SnapshotHead::new(id());
        head.push(0, &damaged);
        assert!(matches!(
            head.finish(bytes.len() as u64),
            Err(SnapshotHeadError::Records { .. })
        ));

        let mut huge = bytes.to_vec();
        huge[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        let mut head = SnapshotHead::new(id());
        head.push(0, &huge);
        assert_eq!(head.buffered(), 0);
        assert!(matches!(
            head.finish(bytes.len() as u64),
            Err(SnapshotHeadError::ControlBatchTooLarge { .. })
        ));

        let mut head = SnapshotHead::new(id());
        head.push(0, &bytes[..40]);
        assert!(matches!(
            head.finish(40),
            Err(SnapshotHeadError::CutShort { .. })
        ));
    }
}
