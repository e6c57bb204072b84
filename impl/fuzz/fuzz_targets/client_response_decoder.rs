//! The CLI's client: a response payload to ApiVersions, Metadata, DescribeQuorum or Add/Remove/
//! UpdateRaftVoter. Input: api key (int16, mapped onto those), version (int16), then the payload.
#![no_main]

use kafka_protocol::messages::MetadataResponse;
use kafka_protocol::protocol::Decodable;
use libfuzzer_sys::fuzz_target;

mod keyed_input;

const KEYS: [i16; 6] = [3, 18, 55, 80, 81, 82];

fuzz_target!(|data: &[u8]| {
    let Some((key, version, payload)) = keyed_input::split(data, &KEYS) else {
        return;
    };
    if let Ok((_, mut body)) = kraft::server::codec::response_body(payload, key, version) {
        if key == 3 {
            let _ = MetadataResponse::decode(&mut body, version);
        } else {
            let _ = kraft::server::codec::decode_client_response(body, key, version);
        }
    }
});
