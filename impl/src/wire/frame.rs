//! Size-prefixed frames: `int32 size | header | body`, as Kafka sends them over TCP.
//!
//! The one framing of this crate: [`frame_size`] is the rule for a size prefix; [`read_frame`] (async, node
//! and peer links) and [`read_frame_blocking`] (the CLI) read frames from sockets with memory that follows
//! the bytes that arrive; `split_frame`/`take_frame` cut frames off a buffer; [`begin_frame`] and
//! [`finish_frame`] write one; the `*_frame` functions build and parse whole DescribeQuorum frames. Offsets in decode errors count from the first byte of the frame, i.e. the
//! size prefix is byte 0 and the header starts at byte 4.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::codec::{check_room, Reader};
use super::describe_quorum::{
    DescribeQuorumRequest, DescribeQuorumResponse, API_KEY, REQUEST_HEADER_VERSION,
    RESPONSE_HEADER_VERSION,
};
use super::error::WireError;
use super::header::{RequestHeader, ResponseHeader};

/// Kafka's default `socket.request.max.bytes` (100 MiB).
pub const DEFAULT_MAX_FRAME_SIZE: usize = 104_857_600;

/// Bytes of the size prefix.
pub const SIZE_PREFIX: usize = 4;

/// The one rule for a size prefix: 0..=`max` bytes follow. A frame too short for its header is the
/// decoder's typed error, not the framer's (Kafka likewise reads any size from 0 up to its limit).
pub fn frame_size(prefix: [u8; SIZE_PREFIX], max: usize) -> Result<usize, WireError> {
    let size = i32::from_be_bytes(prefix);
    match usize::try_from(size) {
        Ok(size) if size <= max => Ok(size),
        _ => Err(WireError::FrameSize {
            offset: 0,
            size: size.into(),
            max,
        }),
    }
}

/// Reads the size prefix at the front of `input`. `Ok(None)`: fewer than four bytes so far.
fn frame_len(input: &[u8], max: usize) -> Result<Option<usize>, WireError> {
    match input.first_chunk::<SIZE_PREFIX>() {
        None => Ok(None),
        Some(prefix) => frame_size(*prefix, max).map(Some),
    }
}

/// Why a frame could not be read from a stream.
#[derive(Debug, thiserror::Error)]
pub enum FrameReadError {
    #[error("connection closed")]
    Closed,
    #[error(transparent)]
    Size(#[from] WireError),
    #[error("read: {0}")]
    Io(#[from] std::io::Error),
}

/// First capacity of a payload buffer; afterwards it at most doubles, and never beyond the frame.
const FIRST_CHUNK: usize = 8 << 10;

/// Capacity for the next read: memory follows the bytes that arrived (at most twice them, or one
/// chunk), never the size the prefix announces.
fn next_capacity(have: usize, size: usize) -> usize {
    size.min(have.saturating_mul(2).max(FIRST_CHUNK))
}

/// A payload of `size` bytes being read, by the async and the blocking reader alike: each read goes
/// into [`Payload::window`] and is recorded by [`Payload::filled`].
struct Payload {
    buf: Vec<u8>,
    size: usize,
    /// Where the current window starts (the bytes before it have arrived).
    start: usize,
}

impl Payload {
    fn new(size: usize) -> Payload {
        Payload {
            buf: Vec::new(),
            size,
            start: 0,
        }
    }

    /// The zero-filled window to read into next, with room made for it; `None` once the payload is
    /// complete.
    fn window(&mut self) -> Option<&mut [u8]> {
        let start = self.buf.len();
        if start == self.size {
            return None;
        }
        if start == self.buf.capacity() {
            self.buf
                .reserve_exact(next_capacity(start, self.size) - start);
        }
        let end = self.buf.capacity().min(self.size);
        self.buf.resize(end, 0);
        self.start = start;
        Some(&mut self.buf[start..end])
    }

    /// Records that the last read put `n` bytes at the start of the window; 0 is a premature end.
    fn filled(&mut self, n: usize) -> Result<(), FrameReadError> {
        self.buf.truncate(self.start + n);
        if n == 0 {
            return Err(FrameReadError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("frame of {} bytes ends after {}", self.size, self.start),
            )));
        }
        Ok(())
    }

    fn into_bytes(self) -> Bytes {
        Bytes::from(self.buf)
    }
}

/// Reads a payload of `size` bytes from an async stream.
pub async fn read_payload<R>(r: &mut R, size: usize) -> Result<Bytes, FrameReadError>
where
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut p = Payload::new(size);
    while let Some(w) = p.window() {
        let n = r.read(w).await?;
        p.filled(n)?;
    }
    Ok(p.into_bytes())
}

/// Reads one whole frame from an async stream: its payload (size prefix checked by [`frame_size`]).
/// End of stream before the first byte is [`FrameReadError::Closed`].
pub async fn read_frame<R>(r: &mut R, max: usize) -> Result<Bytes, FrameReadError>
where
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut first = [0u8; 1];
    if r.read(&mut first).await? == 0 {
        return Err(FrameReadError::Closed);
    }
    read_frame_rest(r, first[0], max).await
}

/// The rest of a frame whose first byte was already read (the listener waits for it under the idle
/// timeout, and for the rest under the slow-client timeout).
pub async fn read_frame_rest<R>(r: &mut R, first: u8, max: usize) -> Result<Bytes, FrameReadError>
where
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut prefix = [first, 0, 0, 0];
    r.read_exact(&mut prefix[1..]).await?;
    let size = frame_size(prefix, max)?;
    read_payload(r, size).await
}

/// [`read_frame`] for a blocking stream (the CLI's client).
pub fn read_frame_blocking<R: std::io::Read>(
    r: &mut R,
    max: usize,
) -> Result<Bytes, FrameReadError> {
    let mut prefix = [0u8; SIZE_PREFIX];
    if r.read(&mut prefix[..1])? == 0 {
        return Err(FrameReadError::Closed);
    }
    r.read_exact(&mut prefix[1..])?;
    let mut p = Payload::new(frame_size(prefix, max)?);
    while let Some(w) = p.window() {
        let n = r.read(w)?;
        p.filled(n)?;
    }
    Ok(p.into_bytes())
}

/// Starts a frame whose body is written after it: a size placeholder, filled by [`finish_frame`].
pub fn begin_frame() -> BytesMut {
    let mut buf = BytesMut::with_capacity(64);
    buf.put_i32(0);
    buf
}

/// Fills in the size prefix of a frame begun with [`begin_frame`].
pub fn finish_frame(mut buf: BytesMut) -> Result<Bytes, WireError> {
    let payload = buf.len().saturating_sub(SIZE_PREFIX);
    let size = size_of_payload(payload)?;
    buf[..SIZE_PREFIX].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

fn size_of_payload(payload: usize) -> Result<i32, WireError> {
    i32::try_from(payload).map_err(|_| WireError::TooLong {
        field: "frame size",
        length: payload,
        max: i32::MAX as usize,
    })
}

/// Splits the first complete frame off `input`: `Ok(Some((payload, consumed)))`, where `payload` excludes
/// the size prefix and `consumed` includes it; `Ok(None)` when more bytes are needed. A negative size or one
/// above `max` is an error, so a peer cannot make us wait for (or buffer) gigabytes.
pub fn split_frame(input: &[u8], max: usize) -> Result<Option<(&[u8], usize)>, WireError> {
    let Some(size) = frame_len(input, max)? else {
        return Ok(None);
    };
    match input.get(SIZE_PREFIX..SIZE_PREFIX + size) {
        Some(payload) => Ok(Some((payload, SIZE_PREFIX + size))),
        None => Ok(None),
    }
}

/// Like [`split_frame`] for a stream buffer: removes the frame from `buf` and returns its payload.
pub fn take_frame(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, WireError> {
    let Some(size) = frame_len(buf, max)? else {
        return Ok(None);
    };
    if buf.len() < SIZE_PREFIX + size {
        // No reservation for the announced size: memory follows the bytes that actually arrive.
        return Ok(None);
    }
    buf.advance(SIZE_PREFIX);
    Ok(Some(buf.split_to(size).freeze()))
}

fn put_size_prefix(buf: &mut impl BufMut, payload: usize) -> Result<(), WireError> {
    let size = size_of_payload(payload)?;
    check_room(buf, SIZE_PREFIX + payload)?;
    buf.put_i32(size);
    Ok(())
}

/// Writes a whole DescribeQuorum request frame; the body version is `header.api_version`.
/// On error nothing has been written.
pub fn encode_request_frame(
    header: &RequestHeader,
    body: &DescribeQuorumRequest,
    buf: &mut impl BufMut,
) -> Result<(), WireError> {
    if header.api_key != API_KEY {
        return Err(WireError::UnexpectedApiKey {
            expected: API_KEY,
            actual: header.api_key,
        });
    }
    let header_size = header.encoded_size(REQUEST_HEADER_VERSION)?;
    let body_size = body.encoded_size(header.api_version)?;
    put_size_prefix(buf, header_size + body_size)?;
    header.encode(REQUEST_HEADER_VERSION, buf)?;
    body.encode(header.api_version, buf)
}

/// Parses the payload of a DescribeQuorum request frame (what [`split_frame`] returns).
pub fn decode_request_frame(
    payload: &[u8],
) -> Result<(RequestHeader, DescribeQuorumRequest), WireError> {
    let (api_key, _) = RequestHeader::peek_api(payload)?;
    if api_key != API_KEY {
        return Err(WireError::UnexpectedApiKey {
            expected: API_KEY,
            actual: api_key,
        });
    }
    let mut r = Reader::at_offset(payload, SIZE_PREFIX);
    let header = RequestHeader::decode_from(&mut r, REQUEST_HEADER_VERSION)?;
    let body = DescribeQuorumRequest::decode_from(&mut r, header.api_version)?;
    r.finish()?;
    Ok((header, body))
}

/// Writes a whole DescribeQuorum response frame with the body at `version`.
/// On error nothing has been written.
pub fn encode_response_frame(
    header: &ResponseHeader,
    body: &DescribeQuorumResponse,
    version: i16,
    buf: &mut impl BufMut,
) -> Result<(), WireError> {
    let header_size = header.encoded_size(RESPONSE_HEADER_VERSION)?;
    let body_size = body.encoded_size(version)?;
    put_size_prefix(buf, header_size + body_size)?;
    header.encode(RESPONSE_HEADER_VERSION, buf)?;
    body.encode(version, buf)
}

/// Parses the payload of a DescribeQuorum response frame; the caller knows `version` from its request.
pub fn decode_response_frame(
    payload: &[u8],
    version: i16,
) -> Result<(ResponseHeader, DescribeQuorumResponse), WireError> {
    let mut r = Reader::at_offset(payload, SIZE_PREFIX);
    let header = ResponseHeader::decode_from(&mut r, RESPONSE_HEADER_VERSION)?;
    let body = DescribeQuorumResponse::decode_from(&mut r, version)?;
    r.finish()?;
    Ok((header, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_frame_waits_for_the_whole_frame_and_bounds_its_size() {
        assert_eq!(split_frame(&[0, 0, 0], 10), Ok(None));
        assert_eq!(split_frame(&[0, 0, 0, 2, 9], 10), Ok(None));
        assert_eq!(
            split_frame(&[0, 0, 0, 2, 9, 8, 7], 10),
            Ok(Some((&[9u8, 8][..], 6)))
        );
        assert_eq!(
            split_frame(&[0xff, 0xff, 0xff, 0xff], 10),
            Err(WireError::FrameSize {
                offset: 0,
                size: -1,
                max: 10
            })
        );
        assert_eq!(
            split_frame(&[0, 0, 0, 11], 10),
            Err(WireError::FrameSize {
                offset: 0,
                size: 11,
                max: 10
            })
        );
    }

    #[test]
    fn take_frame_removes_exactly_one_frame() {
        let mut buf = BytesMut::from(&[0, 0, 0, 1, 5, 0, 0, 0][..]);
        assert_eq!(take_frame(&mut buf, 10), Ok(Some(Bytes::from_static(&[5]))));
        assert_eq!(&buf[..], &[0, 0, 0]);
        assert_eq!(take_frame(&mut buf, 10), Ok(None));
        // A frame announcing 1 MiB reserves nothing while its bytes have not arrived.
        let mut buf = BytesMut::from(&[0, 0x10, 0, 0, 1][..]);
        assert_eq!(take_frame(&mut buf, DEFAULT_MAX_FRAME_SIZE), Ok(None));
        assert!(buf.capacity() < 1024);
    }

    #[test]
    fn request_frame_round_trips_and_rejects_other_apis() {
        let header = RequestHeader {
            api_key: API_KEY,
            api_version: 3,
            correlation_id: 7,
            client_id: Some("probe".into()),
            ..RequestHeader::default()
        };
        let body = DescribeQuorumRequest::for_metadata_partition();
        let mut buf = BytesMut::new();
        encode_request_frame(&header, &body, &mut buf).unwrap();
        let (payload, used) = split_frame(&buf, DEFAULT_MAX_FRAME_SIZE).unwrap().unwrap();
        assert_eq!(used, buf.len());
        assert_eq!(
            decode_request_frame(payload).unwrap(),
            (header.clone(), body.clone())
        );

        let other = RequestHeader {
            api_key: 18,
            ..header
        };
        assert_eq!(
            encode_request_frame(&other, &body, &mut BytesMut::new()),
            Err(WireError::UnexpectedApiKey {
                expected: API_KEY,
                actual: 18
            })
        );
    }

    #[test]
    fn response_frame_errors_point_into_the_frame() {
        let mut buf = BytesMut::new();
        encode_response_frame(
            &ResponseHeader::new(7),
            &DescribeQuorumResponse::default(),
            2,
            &mut buf,
        )
        .unwrap();
        let (payload, _) = split_frame(&buf, DEFAULT_MAX_FRAME_SIZE).unwrap().unwrap();
        let (header, body) = decode_response_frame(payload, 2).unwrap();
        assert_eq!(
            (header.correlation_id, body),
            (7, DescribeQuorumResponse::default())
        );
        // Cut the body after its error code: the next field starts at frame byte 4 + 5 + 2.
        assert_eq!(
            decode_response_frame(&payload[..7], 2),
            Err(WireError::Truncated {
                field: "DescribeQuorumResponse.ErrorMessage",
                offset: 11,
                needed: 1
            })
        );
    }
}
