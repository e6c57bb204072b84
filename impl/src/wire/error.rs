//! The one error type of the wire codec. Every variant names the field (as `Struct.Field`, the names of
//! `specs/messages`) and, when decoding, the byte offset where the bad value starts.

/// What went wrong while encoding, decoding or framing a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{message} version {version} is not supported (valid versions {min}..={max})")]
    UnsupportedVersion {
        message: &'static str,
        version: i16,
        min: i16,
        max: i16,
    },

    #[error("{field}: input ends at byte {offset}, {needed} more byte(s) needed")]
    Truncated {
        field: &'static str,
        offset: usize,
        needed: usize,
    },

    #[error("{field}: unsigned varint at byte {offset} does not fit in 32 bits")]
    VarintOverflow { field: &'static str, offset: usize },

    #[error("{field}: null at byte {offset}, but the field is not nullable")]
    UnexpectedNull { field: &'static str, offset: usize },

    #[error("{field}: negative length {length} at byte {offset}")]
    NegativeLength {
        field: &'static str,
        offset: usize,
        length: i64,
    },

    #[error("{field}: string length {length} at byte {offset} exceeds the limit of {max}")]
    StringTooLong {
        field: &'static str,
        offset: usize,
        length: u64,
        max: usize,
    },

    #[error("{field}: invalid UTF-8 at byte {offset}")]
    InvalidUtf8 { field: &'static str, offset: usize },

    #[error("{field}: {count} element(s) claimed at byte {offset} cannot fit in the {remaining} byte(s) left")]
    CountTooLarge {
        field: &'static str,
        offset: usize,
        count: u64,
        remaining: usize,
    },

    #[error(
        "{field}: length {length} claimed at byte {offset} exceeds the {remaining} byte(s) left"
    )]
    LengthTooLarge {
        field: &'static str,
        offset: usize,
        length: u64,
        remaining: usize,
    },

    #[error(
        "{field}: tag {tag} at byte {offset} follows tag {previous}; tags must strictly ascend"
    )]
    TagOrder {
        field: &'static str,
        offset: usize,
        tag: u32,
        previous: u32,
    },

    #[error("{count} trailing byte(s) after the message, starting at byte {offset}")]
    TrailingBytes { offset: usize, count: usize },

    #[error("{field} does not exist at version {version} and is not ignorable, but holds a non-default value")]
    FieldNotAvailable { field: &'static str, version: i16 },

    #[error("{field}: length {length} is too long to encode (limit {max})")]
    TooLong {
        field: &'static str,
        length: usize,
        max: usize,
    },

    #[error("output buffer has {remaining} byte(s) free, {needed} needed")]
    BufferTooSmall { needed: usize, remaining: usize },

    #[error("frame size {size} at byte {offset} is negative or above the limit of {max} bytes")]
    FrameSize {
        offset: usize,
        size: i64,
        max: usize,
    },

    #[error("header names API key {actual}, expected {expected}")]
    UnexpectedApiKey { expected: i16, actual: i16 },
}
