//! Bad input of every kind gets a typed `WireError` naming the field and the byte offset: never a panic,
//! never a hang, and never an allocation sized by what the input merely claims. A counting allocator
//! checks the last point: no single allocation during a decode exceeds a small multiple of the input.

mod largest_allocation;
mod wire_support;

use std::path::Path;

use bytes::BytesMut;
use kraft::wire::frame::{self, DEFAULT_MAX_FRAME_SIZE};
use kraft::wire::{
    DescribeQuorumRequest, DescribeQuorumResponse, Reader, RequestHeader, ResponseHeader, WireError,
};
use largest_allocation::largest_allocation;
use proptest::prelude::*;
use wire_support::{arb_request, arb_response, conform};

/// Decoded structs are at most ~100 bytes and each claims at least 3 input bytes, so honest decoding
/// needs at most ~32 bytes of memory per input byte in one allocation; a count taken on trust would
/// need gigabytes. The constant covers one unknown tagged field: its BTreeMap leaf node is 408 bytes
/// whatever the input (a 4-byte body `01 01 00 00` holds one).
fn allocation_bound(input_len: usize) -> usize {
    32 * input_len + 512
}

/// The offset a decode error points at, if it has one.
fn offset_of(e: &WireError) -> Option<usize> {
    match e {
        WireError::Truncated { offset, .. }
        | WireError::VarintOverflow { offset, .. }
        | WireError::UnexpectedNull { offset, .. }
        | WireError::NegativeLength { offset, .. }
        | WireError::StringTooLong { offset, .. }
        | WireError::InvalidUtf8 { offset, .. }
        | WireError::CountTooLarge { offset, .. }
        | WireError::TagOrder { offset, .. }
        | WireError::TrailingBytes { offset, .. }
        | WireError::FrameSize { offset, .. } => Some(*offset),
        _ => None,
    }
}

/// Decodes `input` as a request and a response at `version` and checks what any input must satisfy:
/// a typed error pointing inside the input, or a value that re-encodes to bytes decoding to itself;
/// bounded allocation either way.
fn decode_any(
    input: &[u8],
    version: i16,
) -> (
    Result<DescribeQuorumRequest, WireError>,
    Result<DescribeQuorumResponse, WireError>,
) {
    let ((request, response), largest) = largest_allocation(|| {
        (
            DescribeQuorumRequest::decode(input, version),
            DescribeQuorumResponse::decode(input, version),
        )
    });
    assert!(
        largest <= allocation_bound(input.len()),
        "allocated {largest} bytes for {} input bytes",
        input.len()
    );
    for e in request
        .as_ref()
        .err()
        .into_iter()
        .chain(response.as_ref().err())
    {
        if let Some(offset) = offset_of(e) {
            assert!(
                offset <= input.len(),
                "{e} points past the input ({} bytes)",
                input.len()
            );
        }
        assert!(!e.to_string().is_empty());
    }
    if let Ok(r) = &request {
        let again = r.to_bytes(version).unwrap();
        assert_eq!(&DescribeQuorumRequest::decode(&again, version).unwrap(), r);
    }
    if let Ok(r) = &response {
        let again = r.to_bytes(version).unwrap();
        assert_eq!(&DescribeQuorumResponse::decode(&again, version).unwrap(), r);
    }
    (request, response)
}

fn vectors() -> Vec<(String, i16, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs/vectors");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        // The DescribeQuorum vectors (the FetchSnapshot ones are kafka-protocol's to decode).
        if !name.ends_with(".hex") || !name.starts_with("describe_quorum_") {
            continue;
        }
        let version = name
            .split("_v")
            .nth(1)
            .and_then(|s| s[..1].parse().ok())
            .unwrap();
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        let t = text.trim();
        let bytes = (0..t.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap())
            .collect();
        out.push((name, version, bytes));
    }
    assert_eq!(out.len(), 48, "24 vectors, body and frame each");
    out.sort();
    out
}

fn decode_body(name: &str, input: &[u8], version: i16) -> Result<(), WireError> {
    if name.starts_with("describe_quorum_request") {
        DescribeQuorumRequest::decode(input, version).map(drop)
    } else {
        DescribeQuorumResponse::decode(input, version).map(drop)
    }
}

fn decode_frame_payload(name: &str, payload: &[u8], version: i16) -> Result<(), WireError> {
    if name.starts_with("describe_quorum_request") {
        frame::decode_request_frame(payload).map(drop)
    } else {
        frame::decode_response_frame(payload, version).map(drop)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Exhaustive over the golden vectors

/// Every strict prefix of every vector fails as truncated (or as a count the rest cannot hold), at an
/// offset within the prefix; a truncated frame is "not complete yet", and its payload fails to decode.
#[test]
fn every_truncation_of_every_vector_is_a_typed_error() {
    let mut cuts = 0;
    for (name, version, bytes) in vectors() {
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            if name.ends_with(".body.hex") {
                let err = decode_body(&name, cut, version).unwrap_err();
                assert!(
                    matches!(err, WireError::Truncated { offset, .. } | WireError::CountTooLarge { offset, .. } if offset <= len),
                    "{name}[..{len}]: {err:?}"
                );
            } else {
                assert_eq!(
                    frame::split_frame(cut, DEFAULT_MAX_FRAME_SIZE),
                    Ok(None),
                    "{name}[..{len}]"
                );
                if len >= 4 {
                    let err = decode_frame_payload(&name, &cut[4..], version).unwrap_err();
                    assert!(
                        matches!(
                            err,
                            WireError::Truncated { .. } | WireError::CountTooLarge { .. }
                        ),
                        "{name}[..{len}]: {err:?}"
                    );
                    assert!(offset_of(&err).unwrap() <= len, "{name}[..{len}]: {err:?}");
                }
            }
            cuts += 1;
        }
    }
    // 24 vectors, body and frame, each cut at every length: several thousand inputs.
    assert!(cuts > 5_000, "{cuts} truncations");
}

/// Appending any bytes to a body is `TrailingBytes` at the body's end.
#[test]
fn trailing_garbage_after_every_vector_is_refused() {
    for (name, version, bytes) in vectors() {
        if !name.ends_with(".body.hex") {
            continue;
        }
        for extra in [&[0u8][..], &[0xff, 0xff], b"garbage"] {
            let mut input = bytes.clone();
            input.extend_from_slice(extra);
            assert_eq!(
                decode_body(&name, &input, version),
                Err(WireError::TrailingBytes {
                    offset: bytes.len(),
                    count: extra.len()
                }),
                "{name}"
            );
        }
    }
}

/// A maximal varint (`ff ff ff ff 0f`, 2^32 − 1) spliced over each byte of each body claims a huge
/// count or length wherever a length prefix sits; a zero there claims null (compact length −1).
/// Neither may panic or allocate by the claim.
#[test]
fn huge_and_null_lengths_at_every_position() {
    let mut refused_counts = 0;
    let mut refused_strings = 0;
    let mut refused_nulls = 0;
    for (name, version, bytes) in vectors() {
        if !name.ends_with(".body.hex") {
            continue;
        }
        for i in 0..bytes.len() {
            for splice in [
                &[0xff, 0xff, 0xff, 0xff, 0x0f][..],
                &[0x00],
                &[0xff, 0xff, 0xff, 0xff, 0xff],
            ] {
                let mut input = bytes[..i].to_vec();
                input.extend_from_slice(splice);
                input.extend_from_slice(&bytes[i + 1..]);
                let (request, response) = decode_any(&input, version);
                let ours = if name.starts_with("describe_quorum_request") {
                    request.map(drop)
                } else {
                    response.map(drop)
                };
                match ours {
                    Err(WireError::CountTooLarge { count, .. })
                        if count >= u64::from(u32::MAX - 1) =>
                    {
                        refused_counts += 1
                    }
                    Err(WireError::StringTooLong { length, .. })
                        if length >= u64::from(u32::MAX - 1) =>
                    {
                        refused_strings += 1
                    }
                    Err(WireError::UnexpectedNull { .. }) => refused_nulls += 1,
                    _ => {}
                }
            }
        }
    }
    // Every vector has several arrays and strings, so each kind must have been hit many times.
    assert!(
        refused_counts > 100 && refused_strings > 50 && refused_nulls > 100,
        "{refused_counts} {refused_strings} {refused_nulls}"
    );
}

/// Invalid UTF-8 in every string of every vector is refused where the bad byte is.
#[test]
fn invalid_utf8_in_every_string_is_refused_at_its_offset() {
    let mut hits = 0;
    for (name, version, bytes) in vectors() {
        if !name.ends_with(".body.hex") {
            continue;
        }
        // Each ASCII letter inside a string: replace it with a lone continuation byte.
        for i in 0..bytes.len() {
            if !bytes[i].is_ascii_alphabetic() {
                continue;
            }
            let mut input = bytes.clone();
            input[i] = 0x80;
            if let Err(WireError::InvalidUtf8 { offset, .. }) = decode_body(&name, &input, version)
            {
                assert_eq!(offset, i, "{name} byte {i}");
                hits += 1;
            }
        }
    }
    assert!(hits > 500, "{hits} invalid strings refused");
}

#[test]
fn unknown_versions_are_refused_everywhere() {
    let body = DescribeQuorumResponse::default();
    for version in [i16::MIN, -1, 4, 5, i16::MAX] {
        let unsupported = |e: &WireError| matches!(e, WireError::UnsupportedVersion { version: v, .. } if *v == version);
        assert!(unsupported(
            &body.encode(version, &mut Vec::new()).unwrap_err()
        ));
        assert!(unsupported(
            &DescribeQuorumResponse::decode(&[0, 0, 1, 1, 0], version).unwrap_err()
        ));
        assert!(unsupported(
            &DescribeQuorumRequest::decode(&[1, 0], version).unwrap_err()
        ));
        assert!(unsupported(
            &DescribeQuorumRequest::default()
                .encoded_size(version)
                .unwrap_err()
        ));
        // A request frame announcing the version: refused after the header, at the body.
        let header = RequestHeader {
            api_key: 55,
            api_version: version,
            correlation_id: 1,
            ..Default::default()
        };
        let mut payload = Vec::new();
        header.encode(2, &mut payload).unwrap();
        payload.extend_from_slice(&[1, 0]);
        assert!(unsupported(
            &frame::decode_request_frame(&payload).unwrap_err()
        ));
    }
    for header_version in [-1, 0, 3] {
        assert!(RequestHeader::default()
            .encoded_size(header_version)
            .is_err());
        assert!(RequestHeader::decode_from(&mut Reader::new(&[0; 16]), header_version).is_err());
    }
    for header_version in [-1, 2] {
        assert!(ResponseHeader::default()
            .encoded_size(header_version)
            .is_err());
        assert!(ResponseHeader::decode_from(&mut Reader::new(&[0; 16]), header_version).is_err());
    }
}

#[test]
fn bad_headers_and_frame_sizes() {
    // client_id length −2: negative and not the null marker.
    let mut r = Reader::new(&[0, 55, 0, 3, 0, 0, 0, 1, 0xff, 0xfe, 0]);
    assert_eq!(
        RequestHeader::decode_from(&mut r, 2),
        Err(WireError::NegativeLength {
            field: "RequestHeader.ClientId",
            offset: 8,
            length: -2
        })
    );
    // client_id claiming 32767 bytes with 2 left.
    let mut r = Reader::new(&[0, 55, 0, 3, 0, 0, 0, 1, 0x7f, 0xff, b'a', 0]);
    assert_eq!(
        RequestHeader::decode_from(&mut r, 2),
        Err(WireError::Truncated {
            field: "RequestHeader.ClientId",
            offset: 10,
            needed: 32765
        })
    );
    // Another API's frame.
    assert_eq!(
        frame::decode_request_frame(&[0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0]),
        Err(WireError::UnexpectedApiKey {
            expected: 55,
            actual: 18
        })
    );
    // Frame sizes: negative, above the limit, i32::MAX.
    for size in [-1i32, i32::MIN, 1025, i32::MAX] {
        let input = size.to_be_bytes();
        assert_eq!(
            frame::split_frame(&input, 1024),
            Err(WireError::FrameSize {
                offset: 0,
                size: size.into(),
                max: 1024
            })
        );
        let mut buf = BytesMut::from(&input[..]);
        assert!(frame::take_frame(&mut buf, 1024).is_err());
        assert!(buf.capacity() < 4096, "no reservation for a refused frame");
    }
}

#[test]
fn encoding_into_a_full_buffer_is_an_error_not_a_panic() {
    let value = DescribeQuorumRequest::for_metadata_partition();
    let mut storage = [0u8; 10];
    let mut out: &mut [u8] = &mut storage;
    assert_eq!(
        value.encode(0, &mut out),
        Err(WireError::BufferTooSmall {
            needed: 28,
            remaining: 10
        })
    );
    assert_eq!(storage, [0u8; 10], "nothing written");
}

// ---------------------------------------------------------------------------------------------------------
// Properties (10,000 cases each)

fn valid_body() -> impl Strategy<Value = (Vec<u8>, i16, bool)> {
    let response = (arb_response(), 0i16..=3).prop_map(|(v, version)| {
        (
            conform(v, version).to_bytes(version).unwrap().to_vec(),
            version,
            false,
        )
    });
    let request = (arb_request(), 0i16..=3)
        .prop_map(|(v, version)| (v.to_bytes(version).unwrap().to_vec(), version, true));
    prop_oneof![3 => response, 1 => request]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary bytes at any version, valid or not: typed error or a value that round-trips.
    #[test]
    fn random_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..256), version in -1i16..=4) {
        let _ = decode_any(&input, version);
    }

    /// Arbitrary bytes behind a valid varint-heavy prefix (so that decoding gets deep): same contract.
    #[test]
    fn random_tails_never_panic((body, version, _) in valid_body(), cut in any::<prop::sample::Index>(), tail in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut input = body[..cut.index(body.len() + 1)].to_vec();
        input.extend_from_slice(&tail);
        let _ = decode_any(&input, version);
    }

    /// Every strict prefix of a valid body is refused as truncated.
    #[test]
    fn truncated_bodies_are_refused((body, version, is_request) in valid_body(), cut in any::<prop::sample::Index>()) {
        let len = cut.index(body.len());
        let err = if is_request {
            DescribeQuorumRequest::decode(&body[..len], version).map(drop).unwrap_err()
        } else {
            DescribeQuorumResponse::decode(&body[..len], version).map(drop).unwrap_err()
        };
        prop_assert!(matches!(err, WireError::Truncated { .. } | WireError::CountTooLarge { .. }), "{:?}", err);
        prop_assert!(offset_of(&err).unwrap() <= len);
    }

    /// Trailing bytes after a valid body are refused at the body's end.
    #[test]
    fn trailing_bytes_are_refused((body, version, is_request) in valid_body(), extra in prop::collection::vec(any::<u8>(), 1..8)) {
        let mut input = body.clone();
        input.extend_from_slice(&extra);
        let err = if is_request {
            DescribeQuorumRequest::decode(&input, version).map(drop).unwrap_err()
        } else {
            DescribeQuorumResponse::decode(&input, version).map(drop).unwrap_err()
        };
        prop_assert_eq!(err, WireError::TrailingBytes { offset: body.len(), count: extra.len() });
    }

    /// A few corrupted bytes in a valid body: typed error or a consistent value.
    #[test]
    fn corrupted_bodies_never_panic((body, version, _) in valid_body(), edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut input = body;
        if input.is_empty() { return Ok(()) }
        for (at, b) in edits {
            let i = at.index(input.len());
            input[i] = b;
        }
        let _ = decode_any(&input, version);
    }
}
