//! `ReplicaState` on the wire: the fixed-width fast path, the field-by-field fallback, and the replica
//! lists of DescribeQuorum (`CurrentVoters`, `Observers`, `CommittedVoters`).

use bytes::BufMut;
use uuid::Uuid;

use super::super::codec::{
    array_header_size, fast_array_header_size, fast_tagged_fields_size, put_array_header,
    put_tagged_fields, tagged_fields_size, Reader,
};
use super::super::error::WireError;
use super::{ReplicaState, UnknownTaggedFields};

impl ReplicaState {
    /// The KIP-1204 sentinel entry for a committed voter the leader holds no replica state for.
    pub fn sentinel(replica_id: i32, replica_directory_id: Uuid) -> Self {
        ReplicaState {
            replica_id,
            replica_directory_id,
            log_end_offset: -1,
            ..ReplicaState::default()
        }
    }

    /// Fewest bytes one ReplicaState takes at `version` (empty tagged section).
    pub(super) const fn min_size(version: i16) -> usize {
        let mut size = 4 + 8 + 1;
        if version >= 1 {
            size += 16;
        }
        if version >= 2 {
            size += 16;
        }
        size
    }

    /// Writes the fixed-width fields and an empty tag section as one constant-size copy per version
    /// rather than one call per field: replica lists dominate the message.
    #[inline]
    pub(super) fn write(&self, version: i16, buf: &mut impl BufMut) {
        let id = self.replica_id.to_be_bytes();
        let leo = self.log_end_offset.to_be_bytes();
        let fetch = self.last_fetch_timestamp.to_be_bytes();
        let caught_up = self.last_caught_up_timestamp.to_be_bytes();
        // The last byte of each block stays 0: the empty tag section.
        match version {
            0 => {
                let mut b = [0u8; 13];
                b[0..4].copy_from_slice(&id);
                b[4..12].copy_from_slice(&leo);
                self.put_block(&b, buf);
            }
            1 => {
                let mut b = [0u8; 29];
                b[0..4].copy_from_slice(&id);
                b[4..12].copy_from_slice(&leo);
                b[12..20].copy_from_slice(&fetch);
                b[20..28].copy_from_slice(&caught_up);
                self.put_block(&b, buf);
            }
            _ => {
                let mut b = [0u8; 45];
                b[0..4].copy_from_slice(&id);
                b[4..20].copy_from_slice(self.replica_directory_id.as_bytes());
                b[20..28].copy_from_slice(&leo);
                b[28..36].copy_from_slice(&fetch);
                b[36..44].copy_from_slice(&caught_up);
                self.put_block(&b, buf);
            }
        }
    }

    /// Puts a fixed block that ends with an empty tag section, or its fields and then the real section.
    #[inline]
    fn put_block<const N: usize>(&self, block: &[u8; N], buf: &mut impl BufMut) {
        if self.unknown_tagged_fields.is_empty() {
            buf.put_slice(block);
        } else {
            buf.put_slice(&block[..N - 1]);
            put_tagged_fields(buf, &self.unknown_tagged_fields);
        }
    }

    /// Pushes the next replica if its fixed-width fields and an empty tag section are all there (one
    /// bounds check, no `Result`); else consumes nothing and returns false.
    #[inline(always)]
    fn push_fixed(r: &mut Reader<'_>, version: i16, items: &mut Vec<ReplicaState>) -> bool {
        let state = |id, dir, leo, fetch, caught_up| ReplicaState {
            replica_id: id,
            replica_directory_id: dir,
            log_end_offset: leo,
            last_fetch_timestamp: fetch,
            last_caught_up_timestamp: caught_up,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        };
        match version {
            0 => match r.try_array_zero_ended::<13>() {
                Some(b) => items.push(state(be_i32(b, 0), Uuid::nil(), be_i64(b, 4), -1, -1)),
                None => return false,
            },
            1 => match r.try_array_zero_ended::<29>() {
                Some(b) => items.push(state(
                    be_i32(b, 0),
                    Uuid::nil(),
                    be_i64(b, 4),
                    be_i64(b, 12),
                    be_i64(b, 20),
                )),
                None => return false,
            },
            _ => match r.try_array_zero_ended::<45>() {
                Some(b) => items.push(state(
                    be_i32(b, 0),
                    be_uuid(b, 4),
                    be_i64(b, 20),
                    be_i64(b, 28),
                    be_i64(b, 36),
                )),
                None => return false,
            },
        }
        true
    }

    /// Field by field: a replica with unknown tagged fields, or cut short (the error names the field).
    #[cold]
    pub(super) fn read_by_field(r: &mut Reader<'_>, version: i16) -> Result<Self, WireError> {
        let replica_id = r.i32("ReplicaState.ReplicaId")?;
        let replica_directory_id = if version >= 2 {
            r.uuid("ReplicaState.ReplicaDirectoryId")?
        } else {
            Uuid::nil()
        };
        let log_end_offset = r.i64("ReplicaState.LogEndOffset")?;
        let (last_fetch_timestamp, last_caught_up_timestamp) = if version >= 1 {
            (
                r.i64("ReplicaState.LastFetchTimestamp")?,
                r.i64("ReplicaState.LastCaughtUpTimestamp")?,
            )
        } else {
            (-1, -1)
        };
        Ok(ReplicaState {
            replica_id,
            replica_directory_id,
            log_end_offset,
            last_fetch_timestamp,
            last_caught_up_timestamp,
            unknown_tagged_fields: r.tagged_fields("ReplicaState._tagged_fields")?,
        })
    }
}

// Big-endian fields at constant offsets of a fixed-size block (offsets are in bounds by construction).
#[inline]
fn be_i32<const N: usize>(b: &[u8; N], at: usize) -> i32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(x)
}

#[inline]
fn be_i64<const N: usize>(b: &[u8; N], at: usize) -> i64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(x)
}

#[inline]
fn be_uuid<const N: usize>(b: &[u8; N], at: usize) -> Uuid {
    let mut x = [0u8; 16];
    x.copy_from_slice(&b[at..at + 16]);
    Uuid::from_bytes(x)
}

/// A replica list's size: a constant per replica at this version, plus any unknown tagged fields.
pub(super) fn replicas_size(
    field: &'static str,
    replicas: &[ReplicaState],
    version: i16,
) -> Result<usize, WireError> {
    let mut size = array_header_size(field, replicas.len())?
        + replicas.len() * ReplicaState::min_size(version);
    for replica in replicas {
        if version < 2 && !replica.replica_directory_id.is_nil() {
            return Err(WireError::FieldNotAvailable {
                field: "ReplicaState.ReplicaDirectoryId",
                version,
            });
        }
        if !replica.unknown_tagged_fields.is_empty() {
            size += tagged_fields_size(
                "ReplicaState._tagged_fields",
                &replica.unknown_tagged_fields,
            )? - 1;
        }
    }
    Ok(size)
}

#[inline]
pub(super) fn write_replicas(replicas: &[ReplicaState], version: i16, buf: &mut impl BufMut) {
    put_array_header(buf, replicas.len());
    for replica in replicas {
        replica.write(version, buf);
    }
}

/// Reads a replica list. Each replica whose tag section is empty (all we write, and Kafka too) is built
/// straight into the list from one fixed-size block; the others go field by field. The profile of
/// `dq_decode_v0/kraft/3` (README, Performance) spent half of `read_replicas` on moving each
/// `Result<ReplicaState, _>` through the stack (store-forwarding stalls) before this path.
pub(super) fn read_replicas(
    r: &mut Reader<'_>,
    field: &'static str,
    version: i16,
) -> Result<Vec<ReplicaState>, WireError> {
    let count = r.array_len(field, ReplicaState::min_size(version))?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        if !ReplicaState::push_fixed(r, version, &mut items) {
            items.push(ReplicaState::read_by_field(r, version)?);
        }
    }
    Ok(items)
}

/// A nullable replica list: null (count varint 0) reads as the empty list, which means the same.
pub(super) fn read_nullable_replicas(
    r: &mut Reader<'_>,
    field: &'static str,
    version: i16,
) -> Result<Vec<ReplicaState>, WireError> {
    let mut peek = r.clone();
    if peek.varint(field)? == 0 {
        *r = peek;
        return Ok(Vec::new());
    }
    read_replicas(r, field, version)
}

#[inline(always)]
pub(super) fn fast_replicas_size(replicas: &[ReplicaState], version: i16) -> Option<usize> {
    let mut size =
        fast_array_header_size(replicas.len())? + replicas.len() * ReplicaState::min_size(version);
    for replica in replicas {
        if version < 2 && !replica.replica_directory_id.is_nil() {
            return None;
        }
        if !replica.unknown_tagged_fields.is_empty() {
            size += fast_tagged_fields_size(&replica.unknown_tagged_fields)? - 1;
        }
    }
    Some(size)
}
