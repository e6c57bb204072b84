//! The CLI's client: a response payload to ApiVersions, Metadata, DescribeQuorum or Add/Remove/
//! UpdateRaftVoter. Input: api key (int16, mapped onto those), version (int16), then the payload.
#![no_main]

use kafka_protocol::messages::MetadataResponse;
use kafka_protocol::protocol::Decodable;
use libfuzzer_sys::fuzz_target;

const KEYS: [i16; 6] = [3, 18, 55, 80, 81, 82];

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    // A served key as is (the seeds), anything else onto one of them.
    let raw = i16::from_be_bytes([data[0], data[1]]);
    let key = if KEYS.contains(&raw) {
        raw
    } else {
        KEYS[usize::from(raw.unsigned_abs()) % KEYS.len()]
    };
    let version = i16::from_be_bytes([data[2], data[3]]);
    let payload = bytes::Bytes::copy_from_slice(&data[4..]);
    if let Ok((_, mut body)) = kraft::server::codec::response_body(payload, key, version) {
        if key == 3 {
            let _ = MetadataResponse::decode(&mut body, version);
        } else {
            let _ = kraft::server::codec::decode_client_response(body, key, version);
        }
    }
});
