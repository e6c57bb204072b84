//! Record batches (segments, Fetch responses, the bootstrap checkpoint) and the control records in them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = bytes::Bytes::copy_from_slice(data);
    let scan = kraft::records::scan_batches(bytes);
    assert_eq!(scan.lengths.iter().sum::<usize>(), scan.valid_bytes);
    assert!(scan.valid_bytes <= data.len());
});
