//! A node's peer link: a response payload to the Raft RPC it sent. Input: api key (int16), version
//! (int16), then the payload; the key is mapped onto the four RPCs a node sends.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod keyed_input;

const KEYS: [i16; 4] = [1, 52, 53, 54];

fuzz_target!(|data: &[u8]| {
    let Some((key, version, payload)) = keyed_input::split(data, &KEYS) else {
        return;
    };
    if let Ok((_, body)) = kraft::server::codec::response_body(payload, key, version) {
        let _ = kraft::server::codec::decode_peer_response(body, key, version);
    }
});
