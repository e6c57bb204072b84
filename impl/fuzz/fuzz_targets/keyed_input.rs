//! The input layout of the response-decoder targets: api key (int16), version (int16), then the payload.
//! A key among `keys` is kept as is (the seeds); any other is mapped onto one of them, so every input
//! exercises a decoder.

pub fn split(data: &[u8], keys: &[i16]) -> Option<(i16, i16, bytes::Bytes)> {
    if data.len() < 4 || keys.is_empty() {
        return None;
    }
    let raw = i16::from_be_bytes([data[0], data[1]]);
    let key = if keys.contains(&raw) {
        raw
    } else {
        keys[usize::from(raw.unsigned_abs()) % keys.len()]
    };
    let version = i16::from_be_bytes([data[2], data[3]]);
    Some((key, version, bytes::Bytes::copy_from_slice(&data[4..])))
}
