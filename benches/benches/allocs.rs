//! Allocation counts of one DescribeQuorum response encode and decode, ours and kafka-protocol's, on the
//! codec benches' messages. Prints a Markdown table; counts are exact (a counting global allocator), not
//! timings, so one call each suffices.

use bytes::BytesMut;
use kafka_protocol::protocol::{Decodable, Encodable};

use benches::alloc::{count, Allocs, CountingAlloc};
use benches::fixtures::{describe_response, to_kafka, REPLICA_COUNTS};
use kraft::wire::DescribeQuorumResponse;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

type KpResponse = kafka_protocol::messages::DescribeQuorumResponse;

fn cell(a: Allocs) -> String {
    format!("{} ({} B)", a.count, a.bytes)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    println!("| version | replicas | body bytes | kraft encode (sized buf) | kraft to_bytes | kafka-protocol encode (sized buf) | kraft decode (borrowing, `decode_bytes`) | kraft decode (copying, `decode`) | kafka-protocol decode |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for version in 0..=3i16 {
        for n in REPLICA_COUNTS {
            let ours = describe_response(n, version);
            let size = ours.encoded_size(version).expect("fixture encodes");
            let mut buf = BytesMut::with_capacity(size);
            let (r, enc) = count(|| ours.encode(version, &mut buf));
            r.expect("encodes");
            let (r, to_bytes) = count(|| ours.to_bytes(version));
            let body = r.expect("encodes");
            // The first slice of a `Bytes` that came from a Vec allocates its shared header once;
            // kafka-protocol pays that in the `clone()` below, outside its count. Pay ours first too.
            let _ = DescribeQuorumResponse::decode_bytes(&body, version);
            let (r, dec) = count(|| DescribeQuorumResponse::decode_bytes(&body, version));
            r.expect("decodes");
            let (r, dec_copy) = count(|| DescribeQuorumResponse::decode(&body, version));
            r.expect("decodes");
            let (kp_enc, kp_dec) = if version <= 2 {
                let theirs = to_kafka(&ours);
                let mut buf = BytesMut::with_capacity(size);
                let (r, enc) = count(|| theirs.encode(&mut buf, version));
                r.expect("encodes");
                let mut input = body.clone();
                let (r, dec) = count(|| KpResponse::decode(&mut input, version));
                r.expect("decodes");
                (cell(enc), cell(dec))
            } else {
                ("—".to_owned(), "—".to_owned())
            };
            println!(
                "| v{version} | {n} | {size} | {} | {} | {kp_enc} | {} | {} | {kp_dec} |",
                cell(enc),
                cell(to_bytes),
                cell(dec),
                cell(dec_copy)
            );
        }
    }
}
