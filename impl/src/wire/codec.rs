//! Primitive encodings of Kafka's flexible message versions: big-endian integers, unsigned varints, compact
//! strings and arrays, UUIDs and tagged-field sections.
//!
//! Encoding is two passes: a size pass that also enforces every limit and the writing rule, then an
//! infallible write pass straight into the caller's `BufMut`. Decoding reads from a borrowed slice and never
//! allocates more than the input could actually hold; a reader made with [`Reader::from_bytes`] returns
//! strings as [`StrBytes`] slices of the input buffer (no copy, as kafka-protocol does).

use bytes::{BufMut, Bytes};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::error::WireError;
pub use super::tagged::UnknownTaggedFields;

/// Java's limit for string fields (`0x7fff` bytes), enforced on both encode and decode as Kafka does.
pub const MAX_STRING_LEN: usize = i16::MAX as usize;

/// Bytes an unsigned varint takes.
#[inline]
pub(crate) fn varint_size(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

#[inline]
pub(crate) fn put_varint(buf: &mut impl BufMut, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// The compact length prefix `n + 1`, or an error when `n + 1` does not fit in a u32.
#[inline]
fn compact_len(field: &'static str, n: usize) -> Result<u32, WireError> {
    match u32::try_from(n) {
        Ok(n) if n < u32::MAX => Ok(n + 1),
        _ => Err(WireError::TooLong {
            field,
            length: n,
            max: u32::MAX as usize - 1,
        }),
    }
}

/// Size of a compact string, checking Kafka's string limit.
#[inline]
pub(crate) fn compact_string_size(field: &'static str, s: &str) -> Result<usize, WireError> {
    if s.len() > MAX_STRING_LEN {
        return Err(WireError::TooLong {
            field,
            length: s.len(),
            max: MAX_STRING_LEN,
        });
    }
    Ok(varint_size(s.len() as u32 + 1) + s.len())
}

#[inline]
pub(crate) fn compact_nullable_string_size(
    field: &'static str,
    s: Option<&str>,
) -> Result<usize, WireError> {
    match s {
        None => Ok(1),
        Some(s) => compact_string_size(field, s),
    }
}

/// Writes a compact string whose length the size pass has already checked.
#[inline]
pub(crate) fn put_compact_string(buf: &mut impl BufMut, s: &str) {
    put_varint(buf, s.len() as u32 + 1);
    buf.put_slice(s.as_bytes());
}

#[inline]
pub(crate) fn put_compact_nullable_string(buf: &mut impl BufMut, s: Option<&str>) {
    match s {
        None => buf.put_u8(0),
        Some(s) => put_compact_string(buf, s),
    }
}

/// Size of a compact array's length prefix.
#[inline]
pub(crate) fn array_header_size(field: &'static str, len: usize) -> Result<usize, WireError> {
    Ok(varint_size(compact_len(field, len)?))
}

/// Writes a compact array's length prefix (length checked by the size pass).
#[inline]
pub(crate) fn put_array_header(buf: &mut impl BufMut, len: usize) {
    put_varint(buf, len as u32 + 1);
}

/// Size of a tagged-field section holding only unknown fields.
#[inline(always)]
pub(crate) fn tagged_fields_size(
    field: &'static str,
    tags: &UnknownTaggedFields,
) -> Result<usize, WireError> {
    if tags.is_empty() {
        return Ok(1);
    }
    nonempty_tagged_fields_size(field, tags)
}

#[inline(never)]
fn nonempty_tagged_fields_size(
    field: &'static str,
    tags: &UnknownTaggedFields,
) -> Result<usize, WireError> {
    let count = u32::try_from(tags.len()).map_err(|_| WireError::TooLong {
        field,
        length: tags.len(),
        max: u32::MAX as usize,
    })?;
    let mut size = varint_size(count);
    for (&tag, value) in tags.iter() {
        let len = u32::try_from(value.len()).map_err(|_| WireError::TooLong {
            field,
            length: value.len(),
            max: u32::MAX as usize,
        })?;
        size += varint_size(tag) + varint_size(len) + value.len();
    }
    Ok(size)
}

/// Writes a tagged-field section (sizes checked by the size pass), in ascending tag order.
#[inline(always)]
pub(crate) fn put_tagged_fields(buf: &mut impl BufMut, tags: &UnknownTaggedFields) {
    if tags.is_empty() {
        buf.put_u8(0);
    } else {
        put_nonempty_tagged_fields(buf, tags);
    }
}

#[inline(never)]
fn put_nonempty_tagged_fields(buf: &mut impl BufMut, tags: &UnknownTaggedFields) {
    put_varint(buf, tags.len() as u32);
    for (&tag, value) in tags.iter() {
        put_varint(buf, tag);
        put_varint(buf, value.len() as u32);
        buf.put_slice(value);
    }
}

// Size pass fast path: `None` on anything out of bounds, and the checked functions above then name it.

#[inline(always)]
pub(crate) fn fast_string_size(s: &str) -> Option<usize> {
    (s.len() <= MAX_STRING_LEN).then(|| varint_size(s.len() as u32 + 1) + s.len())
}

#[inline(always)]
pub(crate) fn fast_nullable_string_size(s: Option<&str>) -> Option<usize> {
    match s {
        None => Some(1),
        Some(s) => fast_string_size(s),
    }
}

#[inline(always)]
pub(crate) fn fast_array_header_size(len: usize) -> Option<usize> {
    (len < u32::MAX as usize).then(|| varint_size(len as u32 + 1))
}

#[inline(always)]
pub(crate) fn fast_tagged_fields_size(tags: &UnknownTaggedFields) -> Option<usize> {
    if tags.is_empty() {
        Some(1)
    } else {
        nonempty_tagged_fields_size("", tags).ok()
    }
}

/// Fails before anything is written when the output cannot take `needed` more bytes (a full `&mut [u8]`
/// would otherwise make `BufMut` panic).
#[inline]
pub(crate) fn check_room(buf: &impl BufMut, needed: usize) -> Result<(), WireError> {
    let remaining = buf.remaining_mut();
    if remaining < needed {
        return Err(WireError::BufferTooSmall { needed, remaining });
    }
    Ok(())
}

/// A cursor over borrowed input that reports absolute byte offsets in its errors.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
    end: usize,
    /// The buffer `rest` lies in, when strings may borrow from it.
    source: Option<&'a Bytes>,
}

impl<'a> Reader<'a> {
    /// Reads `input`; offsets in errors count from its first byte. Strings are copied.
    pub fn new(input: &'a [u8]) -> Self {
        Self::at_offset(input, 0)
    }

    /// Reads `input`, which starts at byte `offset` of some outer buffer (a frame), so errors point into it.
    pub fn at_offset(input: &'a [u8], offset: usize) -> Self {
        Reader {
            rest: input,
            end: offset.saturating_add(input.len()),
            source: None,
        }
    }

    /// Reads `input`; strings are slices of it ([`Bytes::slice_ref`]: a reference count, no copy).
    pub fn from_bytes(input: &'a Bytes) -> Self {
        Reader {
            rest: input,
            end: input.len(),
            source: Some(input),
        }
    }

    /// Offset of the next unread byte.
    #[inline]
    pub fn position(&self) -> usize {
        self.end - self.rest.len()
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Succeeds only when every byte was consumed.
    pub fn finish(&self) -> Result<(), WireError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(WireError::TrailingBytes {
                offset: self.position(),
                count: self.rest.len(),
            })
        }
    }

    #[cold]
    #[inline(never)]
    fn truncated(&self, field: &'static str, wanted: usize) -> WireError {
        WireError::Truncated {
            field,
            offset: self.position(),
            needed: wanted - self.rest.len(),
        }
    }

    #[inline]
    pub fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.rest.len() {
            return Err(self.truncated(field, n));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    #[inline]
    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], WireError> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(*head)
            }
            None => Err(self.truncated(field, N)),
        }
    }

    /// The next `N` bytes when that many remain and the last is zero, else `None` (consuming nothing): a
    /// run of fixed-width fields closed by an empty tagged-field section, read with one bounds check and
    /// no `Result`; a decoder falls back to field-by-field reads for tags or for the error.
    #[inline]
    pub fn try_array_zero_ended<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let (head, tail) = self.rest.split_first_chunk::<N>()?;
        if head[N - 1] != 0 {
            return None;
        }
        self.rest = tail;
        Some(head)
    }

    #[inline]
    pub fn u8(&mut self, field: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(field)?[0])
    }

    #[inline]
    pub fn i16(&mut self, field: &'static str) -> Result<i16, WireError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    #[inline]
    pub fn u16(&mut self, field: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }

    #[inline]
    pub fn i32(&mut self, field: &'static str) -> Result<i32, WireError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    #[inline]
    pub fn i64(&mut self, field: &'static str) -> Result<i64, WireError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    #[inline]
    pub fn uuid(&mut self, field: &'static str) -> Result<Uuid, WireError> {
        Ok(Uuid::from_bytes(self.array(field)?))
    }

    /// An unsigned varint of at most 5 bytes whose value fits in 32 bits.
    #[inline]
    pub fn varint(&mut self, field: &'static str) -> Result<u32, WireError> {
        // Fast path: one-byte varints (small counts and lengths).
        if let Some((&b, tail)) = self.rest.split_first() {
            if b < 0x80 {
                self.rest = tail;
                return Ok(u32::from(b));
            }
        }
        let start = self.position();
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = match self.rest.split_first() {
                Some((&b, tail)) => {
                    self.rest = tail;
                    b
                }
                None => {
                    return Err(WireError::Truncated {
                        field,
                        offset: self.position(),
                        needed: 1,
                    })
                }
            };
            if i == 4 && b > 0x0f {
                return Err(WireError::VarintOverflow {
                    field,
                    offset: start,
                });
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        // Unreachable: the fifth byte either ends the varint or fails the check above.
        Err(WireError::VarintOverflow {
            field,
            offset: start,
        })
    }

    /// A compact string that may be null. `None` means null.
    #[inline]
    pub fn compact_nullable_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, WireError> {
        Ok(self.compact_nullable_str(field)?.map(str::to_owned))
    }

    /// A compact string that must not be null.
    #[inline]
    pub fn compact_string(&mut self, field: &'static str) -> Result<String, WireError> {
        Ok(self.compact_str(field)?.to_owned())
    }

    /// A compact nullable string as [`StrBytes`]: a slice of the input when the reader was made with
    /// [`Self::from_bytes`], else a copy.
    #[inline]
    pub fn compact_nullable_str_bytes(
        &mut self,
        field: &'static str,
    ) -> Result<Option<StrBytes>, WireError> {
        // Fast path: a borrowing reader, a one-byte length prefix (under 127 bytes, so within
        // MAX_STRING_LEN), all the bytes there and valid UTF-8; anything else (null, a longer prefix,
        // an error to report) goes the general way.
        if let (Some(source), Some((&n, tail))) = (self.source, self.rest.split_first()) {
            let len = usize::from(n.wrapping_sub(1));
            if (1..0x80).contains(&n) && len <= tail.len() {
                let start = self.end - tail.len();
                if let Ok(s) = StrBytes::from_utf8(source.slice(start..start + len)) {
                    self.rest = &tail[len..];
                    return Ok(Some(s));
                }
            }
        }
        self.compact_nullable_str_bytes_general(field)
    }

    #[inline(never)]
    fn compact_nullable_str_bytes_general(
        &mut self,
        field: &'static str,
    ) -> Result<Option<StrBytes>, WireError> {
        let Some((start, raw)) = self.compact_nullable_raw(field)? else {
            return Ok(None);
        };
        let bytes = match self.source {
            // `start` counts from the first byte of `source` (`end` is its length).
            Some(source) => source.slice(start..start + raw.len()),
            None => Bytes::copy_from_slice(raw),
        };
        StrBytes::from_utf8(bytes)
            .map(Some)
            .map_err(|e| WireError::InvalidUtf8 {
                field,
                offset: start + e.valid_up_to(),
            })
    }

    /// A compact string that must not be null, as [`StrBytes`] (see [`Self::compact_nullable_str_bytes`]).
    /// Always inlined: as a call it cost ~30 instructions per string of a v2 DescribeQuorum decode (README,
    /// Performance).
    #[inline(always)]
    pub fn compact_str_bytes(&mut self, field: &'static str) -> Result<StrBytes, WireError> {
        let at = self.position();
        self.compact_nullable_str_bytes(field)?
            .ok_or(WireError::UnexpectedNull { field, offset: at })
    }

    /// A compact string that must not be null, borrowed from the input.
    #[inline]
    fn compact_str(&mut self, field: &'static str) -> Result<&'a str, WireError> {
        let at = self.position();
        self.compact_nullable_str(field)?
            .ok_or(WireError::UnexpectedNull { field, offset: at })
    }

    /// A compact string that may be null, borrowed from the input (length and UTF-8 checked).
    #[inline]
    fn compact_nullable_str(&mut self, field: &'static str) -> Result<Option<&'a str>, WireError> {
        let Some((start, raw)) = self.compact_nullable_raw(field)? else {
            return Ok(None);
        };
        std::str::from_utf8(raw)
            .map(Some)
            .map_err(|e| WireError::InvalidUtf8 {
                field,
                offset: start + e.valid_up_to(),
            })
    }

    /// The bytes of a compact nullable string (length checked, UTF-8 not yet) and their offset.
    #[inline]
    fn compact_nullable_raw(
        &mut self,
        field: &'static str,
    ) -> Result<Option<(usize, &'a [u8])>, WireError> {
        let at = self.position();
        let n = self.varint(field)?;
        if n == 0 {
            return Ok(None);
        }
        let len = (n - 1) as usize;
        if len > MAX_STRING_LEN {
            return Err(WireError::StringTooLong {
                field,
                offset: at,
                length: u64::from(n - 1),
                max: MAX_STRING_LEN,
            });
        }
        let start = self.position();
        Ok(Some((start, self.take(field, len)?)))
    }

    /// The element count of a non-nullable compact array. Rejects counts whose elements (each at least
    /// `min_element_size` bytes) cannot fit in the remaining input, so callers may preallocate the count.
    #[inline]
    pub fn array_len(
        &mut self,
        field: &'static str,
        min_element_size: usize,
    ) -> Result<usize, WireError> {
        let at = self.position();
        let n = self.varint(field)?;
        if n == 0 {
            return Err(WireError::UnexpectedNull { field, offset: at });
        }
        let count = u64::from(n - 1);
        if count.saturating_mul(min_element_size as u64) > self.rest.len() as u64 {
            return Err(WireError::CountTooLarge {
                field,
                offset: at,
                count,
                remaining: self.rest.len(),
            });
        }
        Ok(count as usize)
    }

    /// A tagged-field section of a struct that defines no tagged fields of its own: everything is kept.
    #[inline(always)]
    pub fn tagged_fields(&mut self, field: &'static str) -> Result<UnknownTaggedFields, WireError> {
        // Fast path: almost every section is empty.
        if let Some((&0, tail)) = self.rest.split_first() {
            self.rest = tail;
            return Ok(UnknownTaggedFields::new());
        }
        self.nonempty_tagged_fields(field)
    }

    #[inline(never)]
    fn nonempty_tagged_fields(
        &mut self,
        field: &'static str,
    ) -> Result<UnknownTaggedFields, WireError> {
        let at = self.position();
        let count = self.varint(field)?;
        if count == 0 {
            return Ok(UnknownTaggedFields::new());
        }
        // Each tagged field takes at least two bytes (tag and size).
        if u64::from(count) * 2 > self.rest.len() as u64 {
            return Err(WireError::CountTooLarge {
                field,
                offset: at,
                count: u64::from(count),
                remaining: self.rest.len(),
            });
        }
        // Grown as fields are read, not reserved from the count: a field takes 2 input bytes, an entry 40.
        let mut tags = Vec::new();
        let mut previous: Option<u32> = None;
        for _ in 0..count {
            let tag_at = self.position();
            let tag = self.varint(field)?;
            if let Some(previous) = previous {
                if tag <= previous {
                    return Err(WireError::TagOrder {
                        field,
                        offset: tag_at,
                        tag,
                        previous,
                    });
                }
            }
            previous = Some(tag);
            let size = self.varint(field)? as usize;
            let value = self.take(field, size)?;
            tags.push((tag, Bytes::copy_from_slice(value)));
        }
        Ok(UnknownTaggedFields::from_wire(tags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bytes(v: u32) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn varint_round_trips_at_every_width_boundary() {
        for v in [
            0,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            0x1f_ffff,
            0x20_0000,
            0x0fff_ffff,
            0x1000_0000,
            u32::MAX,
        ] {
            let bytes = varint_bytes(v);
            assert_eq!(bytes.len(), varint_size(v), "size of {v:#x}");
            let mut r = Reader::new(&bytes);
            assert_eq!(r.varint("v").unwrap(), v);
            assert!(r.finish().is_ok());
        }
        assert_eq!(varint_bytes(300), vec![0xac, 0x02]);
    }

    #[test]
    fn varint_rejects_values_beyond_32_bits_and_six_byte_encodings() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x10]);
        assert_eq!(
            r.varint("v"),
            Err(WireError::VarintOverflow {
                field: "v",
                offset: 0
            })
        );
        let mut r = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
        assert_eq!(
            r.varint("v"),
            Err(WireError::VarintOverflow {
                field: "v",
                offset: 0
            })
        );
        let mut r = Reader::new(&[0x80, 0x80]);
        assert_eq!(
            r.varint("v"),
            Err(WireError::Truncated {
                field: "v",
                offset: 2,
                needed: 1
            })
        );
    }

    #[test]
    fn strings_check_null_length_and_utf8() {
        let mut r = Reader::new(&[0x00]);
        assert_eq!(
            r.compact_string("s"),
            Err(WireError::UnexpectedNull {
                field: "s",
                offset: 0
            })
        );
        let mut r = Reader::new(&[0x00]);
        assert_eq!(r.compact_nullable_string("s"), Ok(None));
        let mut r = Reader::new(&[0x03, b'a', 0xff]);
        assert_eq!(
            r.compact_string("s"),
            Err(WireError::InvalidUtf8 {
                field: "s",
                offset: 2
            })
        );
        let mut r = Reader::new(&[0x05, b'a']);
        assert_eq!(
            r.compact_string("s"),
            Err(WireError::Truncated {
                field: "s",
                offset: 1,
                needed: 3
            })
        );
        // Length 0x8000 (varint 0x8001) is one past Java's limit.
        let mut r = Reader::new(&[0x81, 0x80, 0x02]);
        assert!(matches!(
            r.compact_string("s"),
            Err(WireError::StringTooLong { length: 0x8000, .. })
        ));
        let long = "x".repeat(MAX_STRING_LEN + 1);
        assert!(matches!(
            compact_string_size("s", &long),
            Err(WireError::TooLong { .. })
        ));
    }

    #[test]
    fn array_counts_beyond_the_input_are_rejected_before_allocating() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0]);
        assert_eq!(
            r.array_len("a", 1),
            Err(WireError::CountTooLarge {
                field: "a",
                offset: 0,
                count: u64::from(u32::MAX - 1),
                remaining: 2
            })
        );
        let mut r = Reader::new(&[0x03, 0, 0]);
        assert_eq!(r.array_len("a", 1), Ok(2));
    }

    #[test]
    fn tagged_fields_round_trip_and_must_ascend() {
        let mut tags = UnknownTaggedFields::new();
        tags.insert(1, Bytes::from_static(b"\xca\xfe"));
        tags.insert(300, Bytes::new());
        let mut out = Vec::new();
        put_tagged_fields(&mut out, &tags);
        assert_eq!(out.len(), tagged_fields_size("t", &tags).unwrap());
        let mut r = Reader::new(&out);
        assert_eq!(r.tagged_fields("t").unwrap(), tags);

        let mut r = Reader::new(&[0x02, 0x05, 0x00, 0x05, 0x00]);
        assert_eq!(
            r.tagged_fields("t"),
            Err(WireError::TagOrder {
                field: "t",
                offset: 3,
                tag: 5,
                previous: 5
            })
        );
    }

    #[test]
    fn reader_reports_offsets_relative_to_the_outer_buffer() {
        let mut r = Reader::at_offset(&[1, 2], 10);
        assert_eq!(
            r.i32("x"),
            Err(WireError::Truncated {
                field: "x",
                offset: 10,
                needed: 2
            })
        );
        assert_eq!(r.u8("x"), Ok(1));
        assert_eq!(
            r.finish(),
            Err(WireError::TrailingBytes {
                offset: 11,
                count: 1
            })
        );
    }

    #[test]
    fn check_room_refuses_a_full_slice() {
        let mut storage = [0u8; 3];
        let buf: &mut [u8] = &mut storage;
        assert_eq!(
            check_room(&buf, 4),
            Err(WireError::BufferTooSmall {
                needed: 4,
                remaining: 3
            })
        );
        assert!(check_room(&buf, 3).is_ok());
    }
}
