//! The node's request decoder: any bytes as the payload of a request frame (size prefix stripped), every
//! API key and version. Must return a reply or a typed error; libFuzzer's malloc limit catches any
//! allocation sized by a claimed length.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kraft::server::codec::decode_request(bytes::Bytes::copy_from_slice(data));
});
