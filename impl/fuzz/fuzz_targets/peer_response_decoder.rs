//! A node's peer link: a response payload to the Raft RPC it sent. Input: api key (int16), version
//! (int16), then the payload; the key is mapped onto the four RPCs a node sends.
#![no_main]

use libfuzzer_sys::fuzz_target;

const KEYS: [i16; 4] = [1, 52, 53, 54];

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
    if let Ok((_, body)) = kraft::server::codec::response_body(payload, key, version) {
        let _ = kraft::server::codec::decode_peer_response(body, key, version);
    }
});
