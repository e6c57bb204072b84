//! Record batches (segments, Fetch responses, the bootstrap checkpoint) and the control records in them.
//! Input: the batches' bytes. Before decoding, every batch frame's CRC-32C is recomputed, as a hostile
//! peer would: otherwise almost every mutation stops at the CRC check and never reaches the record,
//! header and control-record decoders behind it. (The CRC check itself has unit tests in records.rs.)
#![no_main]

use kraft::records::{batch_frame, scan_batches};
use libfuzzer_sys::fuzz_target;

/// Offset of the CRC in a v2 batch, and of the bytes it covers (attributes onwards).
const CRC_AT: usize = 17;
const CRC_FROM: usize = 21;

fn fix_crcs(buf: &mut [u8]) {
    let mut position = 0;
    while let Ok((_, total)) = batch_frame(buf, position) {
        let crc = crc32c::crc32c(&buf[position + CRC_FROM..position + total]);
        buf[position + CRC_AT..position + CRC_FROM].copy_from_slice(&crc.to_be_bytes());
        position += total;
    }
}

fuzz_target!(|data: &[u8]| {
    let mut buf = data.to_vec();
    fix_crcs(&mut buf);
    let len = buf.len();
    let scan = scan_batches(bytes::Bytes::from(buf));
    assert_eq!(scan.lengths.iter().sum::<usize>(), scan.valid_bytes);
    assert!(scan.valid_bytes <= len);
});
